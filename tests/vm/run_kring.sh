#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: unmodified programs under `sluice run --ifname slr0`,
# on a Sluice stack that runs through the module's rings (kring) on a
# veth, against the Linux kernel's own stack in a network namespace this
# script creates and deletes.  Prints TAP.
#
#   VM root namespace                             netns slr-peer
#   +--------------------------------------+      +-------------------------+
#   | kernel: 10.79.0.1/24 on slr0         |      |                         |
#   |   (ARP, ping; no TCP of its own:     | veth | slr1 10.79.0.2/24       |
#   |   its /proc/net/snmp must not move)  +======+ Linux kernel stack:     |
#   | Sluice stack "rk" on slr0 (kring):   |      |   busybox httpd :8080   |
#   |   sluice run -- iperf3 -s :5201      |      |   iperf3 -s :5202       |
#   |   sluice run -- curl, iperf3 -c,     |      |   iperf3 -c, kpeer      |
#   |     fork_srv :7007 (forked children) |      |     (clients)           |
#   +--------------------------------------+      +-------------------------+
#
# The iperf3 server under sluice run holds the stack (a module's stack goes
# with its last process) for the whole script, so its counters can be read
# before and after each step.  Every program runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
NETNS_NS=slr-peer NETNS_DEV=slr0 NETNS_PEER=slr1 NETNS_S=10.79.0.1 NETNS_K=10.79.0.2
. /opt/sluice/bin/netns.sh
NS=$NETNS_NS
S=$NETNS_S
K=$NETNS_K
ST=rk
SUITE="sluice run on kring"
. /opt/sluice/bin/tap.sh
# Under sluice run on the stack, or in the peer namespace; bounded.
srun() { timeout 120 sluice run --stack $ST --ifname slr0 -- "$@"; }
in_ns_t() { timeout 120 $IP netns exec "$NS" "$@"; }
cleanup() {
	for p in $srv $khttp $kips $lhttp; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	netns_down
	$IP link del slr2 2>/dev/null
}
trap cleanup EXIT

# kctr NAME: a kring counter of the stack; sctr NAME: a stack counter.
kctr() { sluice dump $ST 2>/dev/null | sed -n "s/^  $1 *\([0-9]*\) .*/\1/p" | head -n 1; }
# The root namespace's kernel TCP counters: ActiveOpens PassiveOpens InSegs OutSegs.
ktcp() {
	awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next }
		print $c["ActiveOpens"], $c["PassiveOpens"], $c["InSegs"], $c["OutSegs"] }' \
		/proc/net/snmp
}

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
[ $(( 0x${feat:-0} & 0xe )) = $((0xe)) ] || skip_all "module features 0x$feat lack kring, filters or ifinfo"
for b in curl iperf3; do
	command -v $b >/dev/null || skip_all "no $b in the VM"
done

check "the peer namespace pings the device address (kernel)" netns_up

# The kernel's HTTP server, and the file it serves (not a multiple of
# any segment size).
# Made without /dev/urandom: under TCG, a read racing the kernel's
# patching of its crng-ready static branch has oopsed on int3 (iperf3
# reads it later, so wait, bounded, for the crng first).
i=0
while [ $i -lt 100 ] && ! dmesg | grep -q 'crng init done'; do sleep 0.2; i=$((i + 1)); done
mkdir -p /tmp/www
awk 'BEGIN { for (i = 0; i < 153100; i++) printf "%09d\n", (i * 7919 + 13) % 1000003 }' \
	>/tmp/www/blob
in_ns busybox httpd -f -p 8080 -h /tmp/www &
khttp=$!
in_ns iperf3 -s -p 5202 >/tmp/kips.log 2>&1 &
kips=$!

# The Sluice server, which also holds the stack.
sluice run --stack $ST --ifname slr0 -- iperf3 -s -4 -p 5201 >/tmp/sips.log 2>&1 &
srv=$!
i=0
while [ $i -lt 150 ] && ! sluice fds $ST 2>/dev/null | grep -q iperf3; do sleep 0.2; i=$((i + 1)); done
sluice fds $ST >/tmp/fds.out 2>&1
check "iperf3 -s under sluice run --ifname slr0: its socket is on stack $ST (sluice fds)" \
	grep -qE " iperf3$" /tmp/fds.out
sed 's/^/# fds: /' /tmp/fds.out
sluice dump $ST >/tmp/rk-dump.out 2>&1
ifi=$(cat /sys/class/net/slr0/ifindex)
check "the stack is on slr0 (ifindex $ifi) through the module's rings" \
	grep -q "^kring: ifindex $ifi, device up" /tmp/rk-dump.out
grep -E '^(stack|kring)' /tmp/rk-dump.out | sed 's/^/# dump: /'

tcp0=$(ktcp)
rx0=$(kctr rx_packets) tx0=$(kctr tx_packets) rxb0=$(kctr rx_bytes) txb0=$(kctr tx_bytes)
echo "# kernel TCP (active passive in out) before: $tcp0; kring rx $rx0 tx $tx0"

# curl (Sluice) from busybox httpd (kernel).
rm -f /tmp/got
timeout 120 sluice run --stack $ST --ifname slr0 -- \
	curl -sS --max-time 100 -o /tmp/got "http://$K:8080/blob" 2>/tmp/curl.err
rc=$?
check "curl under sluice run fetches 1531000 bytes from a kernel httpd (rc $rc)" [ $rc = 0 ]
check "... byte for byte" cmp -s /tmp/got /tmp/www/blob
[ -s /tmp/curl.err ] && sed 's/^/# curl: /' /tmp/curl.err
rxb=$(kctr rx_bytes)
check "... and the reply came in through the rings (rx_bytes +$((rxb - rxb0)))" \
	[ $((rxb - rxb0)) -ge 1531000 ]

# iperf3 -s (Sluice) and a kernel client, both directions.
ips() { # ips DESCRIPTION IPERF3-ARGS...: run a client, check it moved the bytes
	d=$1
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc = 0 ] && echo "$out" | grep -q receiver; then
		tap ok "$d"
	else
		tap fail "$d (rc $rc)"
		echo "$out" | tail -n 5 | sed 's/^/#   /'
	fi
	echo "$out" | grep -E 'sender|receiver' | sed 's/^/# /'
	# What the receiving side counted, in bytes (99%: iperf3 rounds).
	rbytes=$(echo "$out" | awk '/receiver/ { for (i = 2; i <= NF; i++) {
		m = 0
		if ($i == "KBytes") m = 1024
		if ($i == "MBytes") m = 1048576
		if ($i == "GBytes") m = 1073741824
		if (m) { printf "%d\n", $(i - 1) * m * 0.99; exit } } }')
	rbytes=${rbytes:-0}
}
# iperf3 -n counts what the sender wrote: the receiver stops reading when
# the test ends, with the rest still in flight or in the sender's socket
# buffer, so a Sluice receiver is held to what it reported (at least 1 MiB).
rxb0=$(kctr rx_bytes) txb0=$(kctr tx_bytes)
ips "kernel iperf3 client -> iperf3 -s under sluice run: 4 MiB" \
	in_ns_t iperf3 -c "$S" -p 5201 -n 4M -f m
rxb=$(kctr rx_bytes)
check "... what it received came in through the rings (rx_bytes +$((rxb - rxb0)), iperf3 $rbytes)" \
	[ $((rxb - rxb0)) -ge $rbytes -a $rbytes -ge 1048576 ]
ips "kernel iperf3 client -R <- iperf3 -s under sluice run: 4 MiB" \
	in_ns_t iperf3 -c "$S" -p 5201 -n 4M -f m -R
txb=$(kctr tx_bytes)
# The same holds this way round: the kernel client stops reading when the
# test ends, so what it reported receiving is what must have gone out.
check "... what the kernel received went out through the rings (tx_bytes +$((txb - txb0)), iperf3 $rbytes)" \
	[ $((txb - txb0)) -ge $rbytes -a $rbytes -ge 1048576 ]

# iperf3 -c (Sluice) against the kernel's iperf3 -s, both directions.
txb0=$(kctr tx_bytes) rxb0=$(kctr rx_bytes)
ips "iperf3 -c under sluice run -> kernel iperf3 -s: 4 MiB" \
	srun iperf3 -c "$K" -p 5202 -n 4M -f m
# iperf3 -c exits with data still unsent: the stack's helper (or the
# server, which runs the stack too) sends the rest.
i=0
while [ $i -lt 150 ] && [ $(($(kctr tx_bytes) - txb0)) -lt 4194304 ]; do
	sleep 0.2
	i=$((i + 1))
done
txb=$(kctr tx_bytes)
check "... the 4 MiB went out through the rings (tx_bytes +$((txb - txb0)))" \
	[ $((txb - txb0)) -ge 4194304 ]
ips "iperf3 -c -R under sluice run <- kernel iperf3 -s: 4 MiB" \
	srun iperf3 -c "$K" -p 5202 -n 4M -f m -R
rxb=$(kctr rx_bytes)
check "... what it received came in through the rings (rx_bytes +$((rxb - rxb0)), iperf3 $rbytes)" \
	[ $((rxb - rxb0)) -ge $rbytes -a $rbytes -ge 1048576 ]

# A forking server: each child echoes on the link it inherited (the
# parent's ring mapping and stack fd), linking nothing itself.
fout=/tmp/fork_srv.out
timeout 200 sluice run --stack $ST --ifname slr0 -- fork_srv 7007 8 180 >$fout 2>&1 &
fsrv=$!
i=0
while [ $i -lt 100 ] && ! grep -qx ready $fout; do sleep 0.2; i=$((i + 1)); done
out=$(in_ns_t kpeer tcp-echo "$S" 7007 131072 8 2>&1 | tail -n 1)
check "8 kernel connections -> a forking server under sluice run: 128 KiB each echoed ($out)" \
	[ "$out" = "ok 8 x 131072" ]
wait $fsrv
rc=$?
check "... every forked child echoed and exited 0 (rc $rc)" \
	sh -c "[ $rc = 0 ] && grep -qx 'children 8, failed 0' $fout"
sed 's/^/# fork_srv: /' $fout

# A program that names the stack without --ifname links its rings too.
rxb0=$(kctr rx_bytes)
rm -f /tmp/got
timeout 120 sluice run --stack $ST -- curl -sS --max-time 100 -o /tmp/got "http://$K:8080/blob"
rxb=$(kctr rx_bytes)
check "curl under sluice run --stack $ST (no --ifname): byte for byte, through the rings (+$((rxb - rxb0)))" \
	sh -c "cmp -s /tmp/got /tmp/www/blob && [ $((rxb - rxb0)) -ge 1531000 ]"

# None of it was the root namespace's kernel TCP.
tcp1=$(ktcp)
rx1=$(kctr rx_packets) tx1=$(kctr tx_packets)
echo "# kernel TCP (active passive in out) after: $tcp1; kring rx $rx1 tx $tx1;" \
	"dropped: rx ring full $(kctr rx_drop_ring), no fill buffer $(kctr rx_drop_fill)"
check "the kernel's TCP on the Sluice side opened nothing and saw no segment ($tcp0 -> $tcp1)" \
	[ "$tcp0" = "$tcp1" ]
check "the rings carried it (rx_packets +$((rx1 - rx0)), tx_packets +$((tx1 - tx0)))" \
	[ $((rx1 - rx0)) -gt 1000 -a $((tx1 - tx0)) -gt 1000 ]
sluice dump $ST >/tmp/rk-dump.out 2>&1
sed -n '/^counters:/,/^sockets:/p' /tmp/rk-dump.out | grep -v ' 0 ' | sed 's/^/# /'
for c in bad_index bad_buf bad_desc rx_drop_size; do
	v=$(sed -n "s/^  $c *\([0-9]*\) .*/\1/p" /tmp/rk-dump.out | head -n 1)
	check "kring counter $c is 0 ($v)" [ "$v" = 0 ]
done
# A program not under sluice run on the stack's side still uses the kernel.
check "a kernel curl (not under sluice run) still reaches the kernel httpd" \
	sh -c "timeout 60 curl -sS --max-time 50 -o /tmp/got2 http://$K:8080/blob && cmp -s /tmp/got2 /tmp/www/blob"
tcp2=$(ktcp)
check "... and that one did go through the kernel's TCP ($tcp1 -> $tcp2)" [ "$tcp1" != "$tcp2" ]

# 127.0.0.0/8 on a device stack is the kernel's by default (tools/README.md: as
# Onload's): a kernel server on 127.0.0.1 is reached through the kernel;
# with SLUICE_LOOPBACK=1 the stack's own loopback, where no stack socket
# listens: the connect goes to the kernel's listener, as Linux's would
# (kernel peers, lib/preload/README.md; it was refused before them).
$IP link set lo up
busybox httpd -f -p 127.0.0.1:8081 -h /tmp/www &
lhttp=$!
sleep 0.5
tcp1=$(ktcp)
rxb0=$(kctr rx_bytes)
rm -f /tmp/got
timeout 120 sluice run --stack $ST -- curl -sS --max-time 100 -o /tmp/got http://127.0.0.1:8081/blob
rc=$?
tcp2=$(ktcp)
rxb=$(kctr rx_bytes)
check "curl under sluice run on the device stack reaches a kernel server on 127.0.0.1 (rc $rc)" \
	sh -c "[ $rc = 0 ] && cmp -s /tmp/got /tmp/www/blob"
check "... through the kernel's TCP ($tcp1 -> $tcp2), not the rings (+$((rxb - rxb0)))" \
	[ "$tcp1" != "$tcp2" -a $((rxb - rxb0)) -lt 1531000 ]
tcp1=$(ktcp)
SLUICE_LOOPBACK=1 timeout 60 sluice run --stack $ST -- \
	curl -sS --max-time 30 -o /dev/null http://127.0.0.1:8081/blob 2>/dev/null
rc=$?
tcp2=$(ktcp)
check "with SLUICE_LOOPBACK=1 127.0.0.1 is the stack's; no stack listener there: the kernel's gets it (curl rc $rc; $tcp1 -> $tcp2)" \
	[ $rc = 0 -a "$tcp1" != "$tcp2" ]
kill $lhttp 2>/dev/null
wait $lhttp 2>/dev/null
lhttp=

# The stack is not on the device asked for: the library refuses it and
# the program's sockets stay in the kernel (which still reaches the peer).
$IP link add slr2 type veth peer name slr3
tcp1=$(ktcp)
rxb0=$(kctr rx_bytes)
rm -f /tmp/got
timeout 120 sluice run --stack $ST --ifname slr2 -- \
	curl -sS --max-time 100 -o /tmp/got "http://$K:8080/blob" 2>/tmp/curl.err
rc=$?
tcp2=$(ktcp)
rxb=$(kctr rx_bytes)
sed 's/^/# curl: /' /tmp/curl.err
check "stack $ST named with another device (slr2): refused, said so on stderr" \
	grep -q "is not on slr2" /tmp/curl.err
check "... and curl's socket stayed in the kernel: it still fetched the file (rc $rc)" \
	sh -c "[ $rc = 0 ] && cmp -s /tmp/got /tmp/www/blob"
check "... through the kernel's TCP ($tcp1 -> $tcp2), not the rings (+$((rxb - rxb0)))" \
	[ "$tcp1" != "$tcp2" -a $((rxb - rxb0)) -lt 1531000 ]

# A device stack is memory the module pins, charged to RLIMIT_MEMLOCK
# unless the process has CAP_IPC_LOCK (kernel/stack.c): past the limit
# without it, sluice run exits 1 naming the limit and the ways out
# (issue 21 item 3).  Root without CAP_IPC_LOCK: dropped from the
# bounding set, so the exec'd tool does not have it.
$IP addr add 10.79.9.1/24 dev slr2
$IP link set slr2 up
out=$(/opt/sluice/util-linux/setpriv --bounding-set=-ipc_lock sh -c \
	'ulimit -l 64 && exec timeout 60 sluice run --stack rkm --ifname slr2 -- true' 2>&1)
rc=$?
echo "$out" | sed 's/^/# memlock: /'
check "past RLIMIT_MEMLOCK without CAP_IPC_LOCK, sluice run exits 1 naming the limit (exit $rc)" \
	sh -c '[ "$1" = 1 ] && printf "%s\n" "$2" |
		grep -q "Cannot allocate memory: .*RLIMIT_MEMLOCK (64 KiB here"' _ "$rc" "$out"
check "... and the three ways out (the memlock limit, a smaller stack, cap_ipc_lock+p)" \
	sh -c 'printf "%s\n" "$1" | grep -q "memlock in limits.conf.*SLUICE_MAX_SOCKETS.*cap_ipc_lock+p"' \
	_ "$out"
$IP link del slr2

kill $srv 2>/dev/null
wait $srv 2>/dev/null
srv=
# Connections the programs left hold the stack in its helper process
# until they are done: the orphaned ones (iperf3's unsent data) until
# sent, then their TIME-WAIT entries for 2 MSL (60 s).  The helper going
# by itself after TIME-WAIT is kring.sh's check; here the orphans must
# be done (no socket left, only TIME-WAIT entries), then the helper is
# ended so as not to wait the 60 s a second time.
hp=$(sluice dump $ST 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
echo "# helper: ${hp:-none}"
# (Alive: not gone and not a zombie, which /init may never reap.)
alive() { [ -n "$1" ] && [ -r /proc/$1/stat ] && ! grep -q ') Z' /proc/$1/stat; }
# Live TCP sockets in the dump (TIME-WAIT entries have no slot: "-").
live_tcp() {
	sluice dump $ST 2>/dev/null | sed -n '/^sockets:/,$p' | awk '$2 == "tcp" && $1 != "-"' | wc -l
}
i=0
while [ $i -lt 300 ] && alive "$hp" && [ "$(live_tcp)" != 0 ]; do sleep 0.2; i=$((i + 1)); done
left=$(live_tcp)
check "the stack's helper (${hp:-none}) finished the orphaned connections (sockets left: $left)" \
	[ "$left" = 0 ]
if alive "$hp"; then
	sluice dump $ST 2>/dev/null | grep -E 'time-wait:' | sed 's/^ */# /'
	kill "$hp" 2>/dev/null
fi
i=0
while [ $i -lt 50 ] && alive "$hp"; do sleep 0.2; i=$((i + 1)); done
check "... and went when ended (${hp:-none})" sh -c "! { [ -n '$hp' ] && [ -r /proc/$hp/stat ] && ! grep -q ') Z' /proc/$hp/stat; }"
i=0
while [ $i -lt 50 ] && [ -d /sys/class/misc/sluice/stacks/$ST ]; do sleep 0.2; i=$((i + 1)); done
check "the stack went with its last program" [ ! -d /sys/class/misc/sluice/stacks/$ST ]
ls /sys/class/misc/sluice/stacks/ | sed 's/^/# stacks left: /'

cleanup
trap - EXIT
echo "1..$n"
exit $fail
