#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# A benchmark, not a test (issue 19 item 6; `make bench-lossy`, which runs
# it in the VM with tests/vm/run.sh --bench lossy): bulk TCP goodput over a
# lossy path, Sluice beside the kernel in the same run.  iperf3 (Debian's,
# unmodified) sends for BENCH_SECS seconds over a veth whose two ends both
# have netem "delay 5ms loss X%" (a 10 ms round trip, X% loss each way) for
# X in BENCH_LOSS (0, 0.1, 1, 5: 0 shows what the emulated CPUs allow); the
# goodput is what iperf3's receiving side counted.
#
#   send:    iperf3 -c from the VM's root namespace, the kernel's TCP or a
#            Sluice stack on the veth (sluice run --ifname, kring), to a
#            kernel iperf3 -s in the peer namespace
#   receive: a kernel iperf3 -c in the peer namespace to an iperf3 -s in the
#            root namespace, the kernel's or one under sluice run
#
# BENCH_OFFLOAD=off turns TSO, GSO and GRO off on both veth ends and
# sets their gso_max_segs to 1, so the kernel sends one segment a packet
# as Sluice does and netem's X% falls on segments for both: with them on,
# netem drops a kernel GSO packet of many segments as one packet
# (netem_enqueue() segments only to corrupt), and the kernel's senders
# see fewer loss events than X% of their segments.  GSO off alone is not
# enough: Linux's TCP builds GSO packets whatever the device says
# (sk_setup_caps() adds NETIF_F_GSO for TCP), split after the qdisc, so
# netem still dropped the kernel's segments in packets of several (its
# drops against its segments, printed by BENCH_VERBOSE); a socket's GSO packet is at most the
# device's gso_max_segs segments.  BENCH_VERBOSE=1 prints each run's
# sender state each second (the kernel's ss -tin, or the stack's `sluice
# dump` socket lines), and the sender's netem: segments sent, packets
# dropped (a GSO packet counts once).
#
# Kernel and Sluice runs alternate, BENCH_ROUNDS times each.  QEMU (TCG)
# emulates the CPUs, so these are the protocols' figures at a modest rate,
# not the machine's: what loss recovery makes of a lossy 10 ms path.
# kmods: veth sch_netem inet_diag tcp_diag
PATH=/opt/sluice/bin:$PATH
NETNS_NS=slb-peer NETNS_DEV=slb0 NETNS_PEER=slb1 NETNS_S=10.81.0.1 NETNS_K=10.81.0.2
. /opt/sluice/bin/netns.sh
ST=lb
SECS=${BENCH_SECS:-8}
LOSS=${BENCH_LOSS:-0 0.1 1 5}
ROUNDS=${BENCH_ROUNDS:-2}
OFFLOAD=${BENCH_OFFLOAD:-on}
GSO_SEGS=${BENCH_GSO_SEGS:-1}	# with offloads off; 0 leaves the device's
VERBOSE=${BENCH_VERBOSE:-0}
cleanup() {
	for p in $ssrv $ksrv $kpsrv; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	netns_down
}
trap cleanup EXIT

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
command -v iperf3 >/dev/null || { echo "no iperf3 in the VM"; exit 1; }
netns_up || { echo "the veth pair and the peer namespace did not come up"; exit 1; }
if [ "$OFFLOAD" = off ]; then
	ethtool -K "$NETNS_DEV" tso off gso off gro off >/dev/null 2>&1 &&
		in_ns ethtool -K "$NETNS_PEER" tso off gso off gro off >/dev/null 2>&1 ||
		{ echo "ethtool could not turn offloads off"; exit 1; }
	[ "$GSO_SEGS" = 0 ] ||
		{ $IP link set "$NETNS_DEV" gso_max_segs "$GSO_SEGS" &&
			in_ns $IP link set "$NETNS_PEER" gso_max_segs "$GSO_SEGS"; } ||
		{ echo "ip could not set gso_max_segs $GSO_SEGS"; exit 1; }
fi
i=0
while [ $i -lt 100 ] && ! dmesg | grep -q 'crng init done'; do sleep 0.2; i=$((i + 1)); done

# Servers: the kernel's in the peer namespace (5202) and in the root
# namespace (5203); one under sluice run (5201), which holds the stack.
in_ns iperf3 -s -p 5202 >/tmp/kp-srv.log 2>&1 &
kpsrv=$!
iperf3 -s -4 -p 5203 >/tmp/k-srv.log 2>&1 &
ksrv=$!
sluice run --stack $ST --ifname "$NETNS_DEV" -- iperf3 -s -4 -p 5201 >/tmp/s-srv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 150 ] && ! sluice fds $ST 2>/dev/null | grep -q iperf3; do sleep 0.2; i=$((i + 1)); done
sluice fds $ST 2>/dev/null | grep -q iperf3 || { echo "iperf3 -s under sluice run did not start"; exit 1; }
sleep 1

# goodput COMMAND...: the receiver's Mbit/s of one iperf3 client run ("-"
# if it failed); COMMAND ends with iperf3's own arguments.
goodput() {
	timeout $((SECS + 60)) "$@" -t "$SECS" -f m 2>&1 |
		awk '/receiver/ { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") v = $(i - 1) }
			END { print (v == "" ? "-" : v) }'
}
# busiest: of ss -tin's connections, the info line of the one that sent
# the most (iperf3's control connection is the other).
busiest() {
	tr -s ' \t' ' ' | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^bytes_sent:/) {
			v = substr($i, 12) + 0; if (v >= m) { m = v; l = $0 } } } END { print l }'
}
# sample WHO DIR: the sender's state each second of a run (BENCH_VERBOSE),
# on stderr: the stack's socket lines, or the kernel sender's ss -tin.
sample() {
	i=1
	while [ $i -lt "$SECS" ]; do
		sleep 1
		if [ "$1" = sluice ] && [ "$2" = send ]; then
			# The data connection: of the established ones, the
			# one with the most sent (iperf3's control is another).
			sluice dump $ST 2>/dev/null | grep -A3 ESTABLISHED | grep -E 'snd una|srtt' |
				tr -s ' ' | paste -d' ' - - | sort -t' ' -k4,4n | tail -1 |
				sed "s/^/#   t=$i /" >&2
		elif [ "$2" = send ]; then
			ss -tin state established '( dport = 5202 )' 2>/dev/null | busiest |
				sed "s/^/#   t=$i /" >&2
		else
			in_ns ss -tin state established '( dport = 5203 or dport = 5201 )' 2>/dev/null |
				busiest | sed "s/^/#   t=$i /" >&2
		fi
		i=$((i + 1))
	done
}
# kctr: the root namespace's kernel TCP counters of loss recovery (the
# kernel sender's of the send rows: Sluice's TCP is not the kernel's),
# one line of NAME=VALUE.
kctr() {
	cat /proc/net/snmp /proc/net/netstat | awk '
		$1 == "Tcp:" || $1 == "TcpExt:" { if (!($1 in h)) { h[$1] = 1; for (i = 2; i <= NF; i++) n[$1, i] = $i; next }
			for (i = 2; i <= NF; i++) if (n[$1, i] ~ /^(RetransSegs|TCPTimeouts|TCPLossProbes|TCPLossProbeRecovery|TCPSackRecovery|TCPDSACKRecv|TCPDSACKUndo|TCPFullUndo|TCPPartialUndo|TCPLossUndo|TCPSpuriousRTOs|TCPSACKReorder|TCPSackRecoveryFail|TCPLostRetransmit)$/)
				printf "%s=%s ", n[$1, i], $i }
		END { print "" }'
}
# sctr: the stack's counters of the same (sluice dump), NAME=VALUE.
sctr() {
	sluice dump $ST 2>/dev/null | awk '$1 ~ /^tcp_(retransmit|rto|fast_retransmit|rack_lost|rack_reo_timeout|rack_reord|tlp|dsack_rx|full_undo|partial_undo|dsack_undo|loss_undo|spurious_rto)/ {
		printf "%s=%s ", $1, $2 } END { print "" }'
}
# cdelta: two lines of NAME=VALUE, before and after: what moved.
cdelta() {
	awk 'NR == 1 { for (i = 1; i <= NF; i++) { split($i, a, "="); b[a[1]] = a[2] } next }
		{ for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[2] - b[a[1]]) printf " %s %d", a[1], a[2] - b[a[1]] } }'
}
# qstat DIR: "packets bytes drops" of the netem at the sender's end.
qstat() {
	if [ "$1" = send ]; then
		$TC -s qdisc show dev "$NETNS_DEV"
	else
		in_ns $TC -s qdisc show dev "$NETNS_PEER"
	fi | sed -n 's/^ *Sent \([0-9]*\) bytes \([0-9]*\) pkt (dropped \([0-9]*\).*/\2 \1 \3/p' | head -n 1
}
# one WHO DIR COMMAND...: goodput(), with the sender's state (BENCH_VERBOSE).
one() {
	who=$1 d=$2
	shift 2
	if [ "$VERBOSE" = 1 ]; then
		echo "## $who $d loss $x%" >&2
		q0=$(qstat "$d")
		sample "$who" "$d" &
		sp=$!
		goodput "$@"
		wait $sp
		# (netem counts a GSO packet it sends as its segments, one
		# it drops as one.)
		echo "$q0 $(qstat "$d")" | awk '{ p = $4 - $1; printf "#   netem at the sender: %d segments sent, %d packets dropped: %.3f%% of the segments\n",
			p, $6 - $3, p ? 100 * ($6 - $3) / p : 0 }' >&2
	else
		goodput "$@"
	fi
}
SRUN="sluice run --stack $ST --ifname $NETNS_DEV --"
PEER="$IP netns exec $NETNS_NS"

echo "# bulk TCP goodput, Mbit/s at the receiver, iperf3 -t $SECS; netem on both veth ends:"
echo "# delay 5ms loss X% (10 ms round trip); kernel $(uname -r); $ROUNDS rounds, kernel and Sluice alternating; offloads $OFFLOAD" \
	"(gso_max_segs $($IP -d link show "$NETNS_DEV" | sed -n 's/.*gso_max_segs \([0-9]*\).*/\1/p'))"
printf '%-6s %-8s %-22s %-22s %s\n' loss dir kernel sluice "sluice/kernel (medians)"
for x in $LOSS; do
	# (0: the path's own rate, for what the emulated CPUs allow.)
	netem_on delay 5ms loss "$x%" || { echo "netem refused loss $x%"; exit 1; }
	for dir in send receive; do
		ks="" ss=""
		r=0
		[ "$VERBOSE" = 1 ] && [ $dir = send ] && { kc0=$(kctr); sc0=$(sctr); }
		while [ $r -lt "$ROUNDS" ]; do
			if [ $dir = send ]; then
				k=$(one kernel send iperf3 -c "$NETNS_K" -p 5202)
				s=$(one sluice send $SRUN iperf3 -c "$NETNS_K" -p 5202)
			else
				k=$(one kernel receive $PEER iperf3 -c "$NETNS_S" -p 5203)
				s=$(one sluice receive $PEER iperf3 -c "$NETNS_S" -p 5201)
			fi
			ks="$ks $k" ss="$ss $s"
			r=$((r + 1))
		done
		# The median of each side's rounds, and their ratio.
		ratio=$(printf '%s\n%s\n' "$ks" "$ss" | awk -f /opt/sluice/bin/median_ratio.awk)
		printf '%-6s %-8s %-22s %-22s %s\n' "$x%" $dir "$ks" "$ss" "$ratio"
		# The senders' recovery counters over this row's runs.
		if [ "$VERBOSE" = 1 ] && [ $dir = send ]; then
			echo "# $x% send, the kernel's TcpExt:$(printf '%s\n%s\n' "$kc0" "$(kctr)" | cdelta)"
			echo "# $x% send, Sluice's:$(printf '%s\n%s\n' "$sc0" "$(sctr)" | cdelta)"
		fi
	done
	netem_off
done
sluice dump $ST 2>/dev/null | grep -E '^  tcp_(retransmit|fast_retransmit|rto|rack|tlp|sack|ooo|ecn|dsack|spurious|[a-z]*_undo)' |
	sed 's/^/# Sluice counters, all runs: /'
exit 0
