#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A server that closes and exits at once sends its FIN once, as the
# kernel's does: the peer's ACK of it must not be lost with the exiting
# process's queue of the TAP device while the stack's helper comes up
# (lib/api/helper.c, sl_helper_ensure()).  It was: the FIN went again at
# the RTO, 200 ms on, though the kernel client had ACKed it (seen in the
# lossy bench's captures).  A kernel client sends 100,000 bytes, the
# server reads them, answers 1,000 and closes (active: at once; passive:
# after the client's FIN) and exits; tcpdump on the bridge counts the
# server's FINs, first a kernel server, then one under sluice run.
#
#   netns sl-fin-PID-k-MODE         netns sl-fin-PID-m-MODE (MODE: active, passive)
#   +--------------------+          +-------------------------------------+
#   | kernel client      |  veth    |  bridge br0: 10.206.0.4 (kernel     |
#   | 10.206.0.2 on k0 <-+----------+-> m0          server), tcpdump      |
#   +--------------------+          |     TAP t0 (multi-queue): Sluice    |
#                                   |     server 10.206.0.3 (sluice run)  |
#                                   +-------------------------------------+
#
# All traffic stays inside the namespaces; every wait is bounded.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
[ -x "$py" ] || py=python3

need_netns "FIN once"
command -v tcpdump >/dev/null || { skip "FIN once" "needs tcpdump"; done_testing; exit; }

P=sl-fin-$$
stack=t-fin-$$
tmp=$(mktemp -d)
cleanup() {
	for n in k-active m-active k-passive m-passive; do
		ip netns pids "$P-$n" 2>/dev/null | xargs -r kill 2>/dev/null
	done
	wait 2>/dev/null
	for n in k-active m-active k-passive m-passive; do
		ip netns del "$P-$n" 2>/dev/null
	done
	rm -rf "$tmp" /dev/shm/sluice-$stack* /dev/shm/sluicefd-$stack*
}
trap cleanup EXIT

# net MODE: the two namespaces of one mode's runs, $P-k-MODE and
# $P-m-MODE (fresh for each: the helper of a Sluice server whose
# connection sits in TIME-WAIT holds its TAP queue for a while).
net() {
	local k=$P-k-$1 m=$P-m-$1

	ip netns add "$k"
	ip netns add "$m"
	ip -n "$k" link set lo up
	ip -n "$m" link set lo up
	ip link add k0 netns "$k" type veth peer name m0 netns "$m"
	ip -n "$m" tuntap add dev t0 mode tap multi_queue
	ip -n "$m" link add br0 type bridge
	ip -n "$m" link set m0 master br0
	ip -n "$m" link set t0 master br0
	for d in m0 t0 br0; do ip -n "$m" link set "$d" up; done
	ip -n "$m" addr add 10.206.0.4/24 dev br0
	ip -n "$k" addr add 10.206.0.2/24 dev k0
	ip -n "$k" link set k0 up
}

cat >"$tmp/srv.py" <<'PY'
import socket, sys
addr, mode = sys.argv[1], sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, 5001))
s.listen(1)
s.settimeout(10)
c, _ = s.accept()
c.settimeout(10)
got = 0
while got < 100000:
    d = c.recv(65536)
    if not d:
        break
    got += len(d)
c.sendall(b"x" * 1000)
if mode == "passive":
    while c.recv(100):
        pass
c.close()
PY
cat >"$tmp/cli.py" <<'PY'
import socket, sys, time
addr, mode = sys.argv[1], sys.argv[2]
for i in range(50):
    try:
        c = socket.create_connection((addr, 5001), timeout=1)
        break
    except OSError:
        time.sleep(0.1)
c.settimeout(5)
c.sendall(b"y" * 100000)
got = 0
while got < 1000:
    d = c.recv(2000)
    if not d:
        break
    got += len(d)
if mode == "passive":
    c.shutdown(socket.SHUT_WR)
while c.recv(100):
    pass
time.sleep(1)      # the server's FIN again, if it comes, comes by now
c.close()
print(got)
PY

# fins WHO MODE: the FINs the server sent in one exchange.
fins() {
	local who=$1 mode=$2 addr=10.206.0.4 cap=$tmp/$1-$2.pcap td srv got
	local k=$P-k-$2 m=$P-m-$2
	[ "$who" = sluice ] && addr=10.206.0.3
	ip netns exec "$m" timeout 15 tcpdump -i br0 -n -U -w "$cap" \
		"tcp and src host $addr and src port 5001" 2>/dev/null &
	td=$!
	sleep 1
	if [ "$who" = sluice ]; then
		ip netns exec "$m" timeout 12 "$sluice" run --stack "$stack-$mode" --tap t0 \
			--addr 10.206.0.3/24 -- "$py" "$tmp/srv.py" "$addr" "$mode" &
	else
		ip netns exec "$m" timeout 12 "$py" "$tmp/srv.py" "$addr" "$mode" &
	fi
	srv=$!
	got=$(ip netns exec "$k" timeout 12 "$py" "$tmp/cli.py" "$addr" "$mode" 2>/dev/null)
	wait "$srv" 2>/dev/null
	sleep 0.5
	kill "$td" 2>/dev/null
	wait "$td" 2>/dev/null
	[ "$got" = 1000 ] || { echo "# $who $mode: the client got '${got}' of 1000 bytes" >&2; echo -1; return; }
	tcpdump -n -r "$cap" 2>/dev/null | grep -c 'Flags \[F'
}

for mode in active passive; do
	net "$mode"
	k=$(fins kernel "$mode")
	s=$(fins sluice "$mode")
	echo "# $mode close: the kernel server sent $k FIN(s), the Sluice server $s"
	check "$mode close: the kernel's server sends one FIN ($k)" [ "$k" = 1 ]
	check "$mode close, exit at once: Sluice's server sends its FIN once, as the kernel's ($s)" \
		[ "$s" = "$k" ]
done
done_testing
