#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Datagrams sent to a neighbour not yet resolved wait for it, as many as
# net.ipv4.neigh.default.unres_qlen_bytes takes, and all go when it
# answers (Linux's __neigh_event_send(), neigh_update()): the same burst
# from the same program, on the kernel and under `sluice run`, to a kernel
# peer nobody has asked for yet, must arrive whole both ways.  Before, a
# Sluice neighbour held one packet: of a burst of ten, one arrived.
#
#   netns sl-nq-PID (receiver, kernel)         netns sl-nq2-PID (kernel sender)
#   10.207.0.1/24 on TAP nq0 <-- sluice run     10.213.0.2/24 on veth nqb
#   10.213.0.1/24 on veth nqa <-------------------------------+
#
# (The bound itself, and the order, are in unit/test_arp: a namespace
# other than the first has no neigh/default sysctls to set.)  Every
# program is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
[ -x "$py" ] || py=python3

ns=sl-nq-$$
ns2=sl-nq2-$$
st=t-nq-$$
netns_test "neighbour queue" "$ns" "$ns2" -- "$st"
N=10
in_ns ip tuntap add dev nq0 mode tap
in_ns ip addr add 10.207.0.1/24 dev nq0
in_ns ip link set nq0 up
in_ns ip link add nqa type veth peer name nqb
in_ns ip link set nqb netns "$ns2"
in_ns ip addr add 10.213.0.1/24 dev nqa
in_ns ip link set nqa up
ip netns exec "$ns2" ip addr add 10.213.0.2/24 dev nqb
ip netns exec "$ns2" ip link set nqb up

# recv PORT: count the datagrams that come to PORT (until 2 s of quiet),
# in the background ($rpid); the count is the last line of $tmp/recv.PORT
recv() {
	in_ns timeout 30 "$py" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
s.settimeout(2)
n = 0
try:
    while True:
        s.recv(2048)
        n += 1
except socket.timeout:
    pass
print(n, flush=True)
' "$1" >"$tmp/recv.$1" 2>&1 &
	rpid=$!
	for _ in $(seq 100); do grep -qx ready "$tmp/recv.$1" && return; sleep 0.1; done
}
# The sender: N datagrams at once to DST:PORT, then a second alive.
send='
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[3])):
    s.sendto(b"datagram %d" % i, (sys.argv[1], int(sys.argv[2])))
time.sleep(1)
'

# Linux's default (212992 bytes): the burst arrives whole both ways.
recv 17001
ip netns exec "$ns2" timeout 20 "$py" -c "$send" 10.213.0.1 17001 "$N"
wait "$rpid"; k=$(tail -n 1 "$tmp/recv.17001")
recv 17002
in_ns timeout 20 "$sluice" run --stack "$st" --tap nq0 --addr 10.207.0.2/24 -- \
	"$py" -c "$send" 10.207.0.1 17002 "$N"
wait "$rpid"; s=$(tail -n 1 "$tmp/recv.17002")
check "kernel: a burst of $N to an unresolved peer, $k arrive" [ "$k" = "$N" ]
check "sluice run: the same burst, $s arrive (as the kernel)" [ "$s" = "$k" ]
d=$(counter "$st" arp_hold_dropped)
check "none dropped while waiting (arp_hold_dropped ${d:-0})" [ -z "$d" ]

done_testing
