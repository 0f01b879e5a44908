#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The TAP device's queue (issue 19 item 6; lib/link/README.md, "The TAP
# queue's length").  The tun driver keeps what the kernel sends a queue in
# a ring of the device's txqueuelen (500 in Linux 6.1's tun.c, 1000 on
# 6.18) and drops the rest (tx_dropped), where the kernel's own receive
# path takes a frame in as it comes.  A stack that opens the device raises
# its queue to 4096 frames.
#   - A burst of 2,500 UDP datagrams from the kernel to a TAP stack whose
#     process is stopped (SIGSTOP: no thread reads its queue): none dropped
#     at the device, all 2,500 reach the stack's UDP input when it runs
#     again; the same burst to a stopped kernel receiver over a veth: all
#     2,500 reach its UDP input.
#   - The same with SLUICE_TAP_QLEN=0 (the device left as made): the
#     device drops what its queue does not hold (what every TAP stack lost
#     before).
#   - A user without CAP_NET_ADMIN on a device made for it: the queue stays
#     as it was, and the stack counts it (tap_qlen_short).
# Deterministic: the receivers are stopped for the whole burst.  All
# traffic stays in namespaces of the test's; every program is bounded by
# timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

if [ "$(id -u)" != 0 ]; then
	skip "the TAP queue's length" "needs root"
	done_testing
	exit 0
fi
ns=sl-tq-$$
st=tq-$$
N=2500
netns_test "the TAP queue's length" "$ns" "$ns-k" -- "$st" "$st-0" "$st-u"
in_k() { ip netns exec "$ns-k" "$@"; }
sluice() { in_ns timeout 30 env SLUICE_NO_HELPER=1 "$top/build/tools/sluice" "$@"; }
sluice0() { in_ns timeout 30 env SLUICE_TAP_QLEN=0 SLUICE_NO_HELPER=1 "$top/build/tools/sluice" "$@"; }
for d in tq0 tq1; do
	in_ns ip tuntap add dev $d mode tap multi_queue
	# No IPv6 of the kernel's own on it: the frames that come are the test's.
	in_ns sysctl -qw net.ipv6.conf.$d.disable_ipv6=1
done
in_ns ip addr add 10.213.0.1/24 dev tq0
in_ns ip addr add 10.214.0.1/24 dev tq1
in_ns ip link set tq0 up
in_ns ip link set tq1 up
ip link add tk0 netns "$ns" type veth peer name tk1 netns "$ns-k"
in_ns ip addr add 10.215.0.1/24 dev tk0
in_k ip addr add 10.215.0.2/24 dev tk1
in_ns ip link set tk0 up
in_k ip link set tk1 up
in_k ip link set lo up

# The receiver: binds, takes a first datagram (the neighbour resolved),
# then waits for "end".
cat >"$tmp/rx.py" <<'PY'
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 18099))
print("up", os.getpid(), flush=True)
s.settimeout(20)
n = 0
while True:
    d = s.recv(2048)
    if d == b"end":
        break
    n += 1
print("got", n, flush=True)
PY
# send ADDR COUNT [PAYLOAD]: COUNT datagrams of 64 bytes from the kernel.
cat >"$tmp/tx.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
p = sys.argv[3].encode() if len(sys.argv) > 3 else b"x" * 64
for _ in range(int(sys.argv[2])):
    s.sendto(p, (sys.argv[1], 18099))
PY
txdrop() { in_ns cat /sys/class/net/$1/statistics/tx_dropped; }
qlen() { in_ns cat /sys/class/net/$1/tx_queue_len; }
stopped() { for _ in $(seq 100); do grep -q '^State:.*T' /proc/$1/status 2>/dev/null && return 0; sleep 0.05; done; return 1; }
# The kernel receiver's UDP input: InDatagrams + InErrors (a full receive
# buffer's drops among them).
udp_in() { in_k awk '$1 == "Udp:" { if (!h) { h = 1; next } print $2 + $4 }' /proc/net/snmp; }

# burst LOG ADDR RUN...: starts the receiver (RUN... then rx.py), sends one
# datagram, stops it, sends N, prints the device's tx_dropped moved (for a
# TAP device DEV) then lets it go and ends it.
burst() {
	local log=$1 addr=$2 dev=$3 pid d0 d1 u0
	shift 3
	"$@" "$py" "$tmp/rx.py" >"$log" 2>&1 &
	for _ in $(seq 100); do grep -q '^up' "$log" && break; sleep 0.05; done
	pid=$(awk '/^up/ { print $2 }' "$log")
	# Until the first datagram is in (ARP answered): a few, 50 ms apart.
	for _ in $(seq 20); do
		in_ns "$py" "$tmp/tx.py" "$addr" 1
		sleep 0.05
		[ -n "$dev" ] && [ "$(counter "$stk" udp_rx)" -ge 1 ] 2>/dev/null && break
		[ -z "$dev" ] && [ "$(udp_in)" -ge 1 ] 2>/dev/null && break
	done
	kill -STOP "$pid" 2>/dev/null
	stopped "$pid" || echo "# receiver $pid not stopped" >&2
	[ -n "$dev" ] && d0=$(txdrop "$dev") && u0=$(counter "$stk" udp_rx)
	[ -z "$dev" ] && u0=$(udp_in)
	in_ns "$py" "$tmp/tx.py" "$addr" $N
	sleep 0.2
	[ -n "$dev" ] && d1=$(txdrop "$dev") && echo "drops $((d1 - d0))" >>"$tmp/burst.out"
	kill -CONT "$pid" 2>/dev/null
	sleep 0.5
	in_ns "$py" "$tmp/tx.py" "$addr" 1 end
	for _ in $(seq 100); do grep -q '^got' "$log" && break; sleep 0.05; done
	if [ -n "$dev" ]; then
		echo "udp $(($(counter "$stk" udp_rx) - u0 - 1))" >>"$tmp/burst.out"
	else
		echo "udp $(($(udp_in) - u0 - 1))" >>"$tmp/burst.out"
	fi
	wait
}
field() { awk -v k="$1" '$1 == k { v = $2 } END { print v }' "$tmp/burst.out"; }

# 1. A TAP stack, the queue raised.
q0=$(qlen tq0)
stk=$st
: >"$tmp/burst.out"
burst "$tmp/rx1.log" 10.213.0.2 tq0 sluice run --stack "$st" --tap tq0 --addr 10.213.0.2/24 --
q1=$(qlen tq0) dr=$(field drops) ud=$(field udp)
echo "# stack: txqueuelen $q0 -> $q1, $N sent to the stopped receiver: ${dr:-?} dropped at the device, ${ud:-?} into the stack's UDP; $(sed -n 's/^got/received by the program/p' "$tmp/rx1.log")"
check "the stack raised its TAP queue to 4096 frames (was $q0, now $q1)" test "$q0" -lt 4096 -a "$q1" = 4096
check "none of $N datagrams to a stopped stack dropped at the device (${dr:-?})" test "${dr:-1}" = 0
check "all $N reached the stack's UDP input when it ran again (${ud:-?})" test "${ud:-0}" = $N

# The kernel, the same burst to a receiver it holds stopped.
: >"$tmp/burst.out"
burst "$tmp/rxk.log" 10.215.0.2 "" in_k timeout 30
ku=$(field udp)
echo "# kernel: $N sent to the stopped receiver: ${ku:-?} into its UDP; $(sed -n 's/^got/received by the program/p' "$tmp/rxk.log")"
check "the kernel took all $N into its UDP input too (${ku:-?})" test "${ku:-0}" = $N

# 2. The queue left as it was: what a stack lost before.
stk=$st-0
: >"$tmp/burst.out"
burst "$tmp/rx0.log" 10.214.0.2 tq1 sluice0 run --stack "$st-0" --tap tq1 --addr 10.214.0.2/24 --
q=$(qlen tq1) dr=$(field drops) ud=$(field udp)
echo "# SLUICE_TAP_QLEN=0: txqueuelen $q, ${dr:-?} dropped at the device, ${ud:-?} into the stack's UDP"
# (The queue may hold a frame or two of the kernel's from before the burst.)
check "with SLUICE_TAP_QLEN=0 the queue stays at $q0 ($q) and the device drops about $((N - q0)) (${dr:-?})" \
	test "$q" = "$q0" -a "${dr:-0}" -ge $((N - q0)) -a "${dr:-0}" -le $((N - q0 + 8))

# 3. A user without CAP_NET_ADMIN: the queue stays, and is counted.
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	chmod 755 "$tmp"
	mkdir "$tmp/tools"
	cp "$top/build/tools/sluice" "$tmp/tools/"
	cp "$top/build/libsluice-preload.so" "$tmp/"
	chmod -R a+rX "$tmp"
	in_ns ip tuntap add dev tq2 mode tap multi_queue user "$(id -u nobody)"
	in_ns ip link set tq2 up
	out=$(in_ns timeout 20 setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
		env SLUICE_NO_HELPER=1 "$tmp/tools/sluice" run --stack "$st-u" --tap tq2 \
		--addr 10.216.0.2/24 -- "$py" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 0))
print("ran")' 2>&1)
	short=$(counter "$st-u" tap_qlen_short)
	check "a user without CAP_NET_ADMIN runs on the device ($out)" test "$out" = ran
	check "its queue stays at $q0 ($(qlen tq2)) and the stack counts it (tap_qlen_short ${short:-0})" \
		test "$(qlen tq2)" = "$q0" -a "${short:-0}" = 1
else
	skip "a user without CAP_NET_ADMIN" "needs setpriv and user nobody"
fi
done_testing
