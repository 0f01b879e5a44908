#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: long transfers both ways between a Sluice stack on a
# veth device (kring) and the Linux kernel in a network namespace, through
# netem on both veth ends with loss, reordering, duplication, corruption
# and delay all on; byte-exact, with figures (bytes, time, Sluice's
# retransmissions and refused segments from `sluice dump`, netem's drops).
# Topology: tests/vm/netns.sh.  Prints TAP; every program is bounded.
PATH=/opt/sluice/bin:$PATH
. /opt/sluice/bin/netns.sh
STACK=lossy
BYTES=${LOSSY_BYTES:-4194304}
NETEM="delay 5ms reorder 10% 50% loss 1% duplicate 1% corrupt 0.5%"
SUITE="lossy links"
. /opt/sluice/bin/tap.sh
ctr() { # ctr NAME: a counter of the stack's last dump
	v=$(sed -n "s/^  $1 *\([0-9]*\) .*/\1/p" /tmp/lossy-dump.out | head -n 1)
	echo "${v:-0}"
}
cleanup() {
	for p in $srv $ksrv; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	netns_down
}
trap cleanup EXIT

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
# KRING 0x2, FILTER 0x4, IFINFO 0x8
[ $(( 0x${feat:-0} & 0xe )) = $((0xe)) ] || skip_all "module features 0x$feat lack kring, filters or ifinfo"
[ -x "$IP" ] && [ -x "$TC" ] || skip_all "no iproute2 ip and tc"
check "veth pair and peer namespace up" netns_up
netem_on $NETEM || skip_all "no netem (sch_netem)"
echo "# netem on both ends: $NETEM"

out=/tmp/lossy-serve.out
kring_peer serve $STACK "$NETNS_DEV" 200 >$out 2>&1 &
srv=$!
check "Sluice echo server on $NETNS_DEV (kring)" wait_ready $out
kout=/tmp/lossy-kserve.out
in_ns kpeer serve 7 200 >$kout 2>&1 &
ksrv=$!
check "kernel echo server in the peer namespace" wait_ready $kout

# transfer DESCRIPTION WANT COMMAND...: the command's last line is WANT;
# prints the time it took.
transfer() {
	d=$1 want=$2
	shift 2
	t0=$(uptime_ms)
	got=$("$@" 2>&1 | tail -n 1)
	ms=$(( $(uptime_ms) - t0 ))
	if [ "$got" = "$want" ]; then
		tap ok "$d ($ms ms)"
	else
		tap fail "$d ($ms ms)"
		echo "#   got '$got', want '$want'"
	fi
}
transfer "kernel client -> Sluice echo: $BYTES bytes each way byte-exact through netem" \
	"ok 1 x $BYTES" in_ns timeout 120 kpeer tcp-echo "$NETNS_S" 7 "$BYTES"
transfer "Sluice client -> kernel echo: $BYTES bytes each way byte-exact through netem" \
	"ok $BYTES bytes, eof 0" timeout 120 kring_peer tcp-client $STACK "$NETNS_K" 7 "$BYTES"

netem_stats | sed 's/^/# netem /'
sluice dump $STACK >/tmp/lossy-dump.out 2>&1
echo "# Sluice: tcp_retransmit $(ctr tcp_retransmit), tcp_fast_retransmit" \
	"$(ctr tcp_fast_retransmit), tcp_rto $(ctr tcp_rto), tcp_ooo $(ctr tcp_ooo)," \
	"tcp_rx_bad $(ctr tcp_rx_bad) (corrupt segments refused), ip_rx_bad_csum" \
	"$(ctr ip_rx_bad_csum), tcp_rx $(ctr tcp_rx), tcp_tx $(ctr tcp_tx)"
check "Sluice repaired losses by retransmitting (tcp_retransmit $(ctr tcp_retransmit))" \
	[ "$(ctr tcp_retransmit)" -gt 0 ]
check "out-of-order segments were queued, not dropped (tcp_ooo $(ctr tcp_ooo))" \
	[ "$(ctr tcp_ooo)" -gt 0 ]
bad=$(( $(ctr tcp_rx_bad) + $(ctr ip_rx_bad_csum) ))
check "corrupted packets were caught by checksums, not delivered ($bad refused)" [ "$bad" -gt 0 ]
krexmt=$(in_ns awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i; h = 1 } else print $c }' /proc/net/snmp)
echo "# the kernel peer retransmitted ${krexmt:-?} segments (RetransSegs)"
netem_off
cleanup
trap - EXIT
echo "1..$n"
exit $fail
