#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A server with 1,000 IPv6 clients, each from an address of its own
# (issue 20): a [::] TCP server in a Sluice stack on a TAP link, and the
# same server on the kernel beside it, each reached by the same kernel
# client program from 1,000 addresses of the peer's prefix, all
# connections held open, then one echo on each.  In namespaces this test
# creates (and deletes):
#
#   netns sl-v6p-PID                                   netns sl-v6pk-PID
#   kernel fd00:40::1, ::1:0-::1:3e7 on TAP sl0 <--> Sluice fd00:40::2
#   kernel fd00:41::1, ::1:0-::1:3e7 on veth v0 <--> kernel fd00:41::2 (v1)
#
# The stack names each IPv6 peer by a handle (lib/proto/README.md, "IPv6
# sockets"); a stack once had 256 of them, so the 257th client was
# answered as at a closed port (ip6_rx_peers_full): ECONNREFUSED where
# the kernel takes it.  And each on-link client is a neighbour: a table
# of 64 made 1,000 clients' answers wait on solicitations that pushed
# each other out (nd_unres_drop, retransmission timeouts).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
[ -x "$py" ] || py=python3
N=${V6_PEERS:-1000}

ns=sl-v6p-$$ kns=sl-v6pk-$$ stack=v6p-$$
S=fd00:40::2 K=fd00:41::2
netns_test "many IPv6 peers" "$ns" "$kns" -- "$stack"
counter() { "$sluice" dump "$stack" 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'; }

in_ns ip tuntap add dev sl0 mode tap multi_queue
in_ns ip -6 addr add fd00:40::1/64 dev sl0 nodad
in_ns ip link set sl0 up
ip link add name v0 netns "$ns" type veth peer name v1 netns "$kns"
in_ns ip -6 addr add fd00:41::1/64 dev v0 nodad
ip netns exec "$kns" ip -6 addr add "$K/64" dev v1 nodad
in_ns ip link set v0 up
ip netns exec "$kns" ip link set v1 up
# The clients' addresses, N on each link.
for i in $(seq 0 $((N - 1))); do
	printf 'addr add fd00:40::1:%x/64 dev sl0 nodad\naddr add fd00:41::1:%x/64 dev v0 nodad\n' "$i" "$i"
done >"$tmp/addrs"
in_ns ip -6 -batch "$tmp/addrs"

# The server: a [::] listener in one epoll loop, echoing what each
# connection sends; says how many it accepted from how many addresses.
cat >"$tmp/server.py" <<'PY'
import selectors, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
L = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
L.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
L.bind(("::", port))
L.listen(n)
sel = selectors.DefaultSelector()
sel.register(L, selectors.EVENT_READ)
print("ready", flush=True)
peers, conns, echoed, end = set(), 0, 0, time.time() + 90
while echoed < n and time.time() < end:
    for key, _ in sel.select(0.5):
        if key.fileobj is L:
            c, a = L.accept()
            peers.add(a[0])
            conns += 1
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
            continue
        try:
            d = key.fileobj.recv(100)
        except BlockingIOError:
            continue
        if d:
            key.fileobj.send(d)
            echoed += 1
        else:
            sel.unregister(key.fileobj)
            key.fileobj.close()
print("accepted %d from %d addresses, echoed %d" % (conns, len(peers), echoed), flush=True)
time.sleep(float(sys.argv[3]))
PY
# The client: N connections, each bound to an address of its own, all
# held, then an echo on each.
cat >"$tmp/client.py" <<'PY'
import socket, sys, time
prefix, t, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
socks, refused, failed, ok, end = [], 0, 0, 0, time.time() + 90
for i in range(n):
    if time.time() > end:
        failed += 1
        continue
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind(("%s%x" % (prefix, i), 0))
    try:
        s.connect((t, port))
        socks.append((i, s))
    except ConnectionRefusedError:
        refused += 1
        s.close()
    except OSError:
        failed += 1
        s.close()
for i, s in socks:
    s.sendall(b"%d." % i)
for i, s in socks:
    try:
        ok += s.recv(100) == b"%d." % i
    except OSError:
        pass
print("connected %d, refused %d, failed %d, echoed %d" % (len(socks), refused, failed, ok))
PY

waitfor() { for _ in $(seq 150); do grep -q "$1" "$2" && return 0; sleep 0.1; done; return 1; }
# The stack's server: the stack's only program, on the TAP device.
in_ns timeout 120 "$sluice" run --stack "$stack" --tap sl0 --addr 10.204.0.2/24 \
	--addr6 "$S/64" -- "$py" "$tmp/server.py" 7000 "$N" 3 >"$tmp/ss.out" 2>&1 &
waitfor ready "$tmp/ss.out"
t0=$(date +%s.%N)
in_ns timeout 120 "$py" "$tmp/client.py" fd00:40::1: "$S" 7000 "$N" >"$tmp/sc.out" 2>&1
t1=$(date +%s.%N)
waitfor accepted "$tmp/ss.out"
full=$(counter ip6_rx_peers_full) po=$(counter tcp_passive_open)
nddrop=$(counter nd_unres_drop) nstx=$(counter nd_ns_tx) rto=$(counter tcp_rto)
wait
# The kernel's server, the same client.
ip netns exec "$kns" timeout 120 "$py" "$tmp/server.py" 7000 "$N" 0 >"$tmp/ks.out" 2>&1 &
waitfor ready "$tmp/ks.out"
t2=$(date +%s.%N)
in_ns timeout 120 "$py" "$tmp/client.py" fd00:41::1: "$K" 7000 "$N" >"$tmp/kc.out" 2>&1
t3=$(date +%s.%N)
wait
echo "# stack: $(tail -1 "$tmp/sc.out"); $(grep accepted "$tmp/ss.out") ($(echo "$t1 - $t0" | bc) s)"
echo "# kernel: $(tail -1 "$tmp/kc.out"); $(grep accepted "$tmp/ks.out") ($(echo "$t3 - $t2" | bc) s)"
want="connected $N, refused 0, failed 0, echoed $N"
check "the kernel's server: $want" test "$(tail -1 "$tmp/kc.out")" = "$want"
check "the stack's server: the client's line as the kernel's" \
	test "$(tail -1 "$tmp/sc.out")" = "$(tail -1 "$tmp/kc.out")"
check "... the server's: accepted $N from $N addresses, echoed $N, as the kernel's" eval \
	'test "$(grep accepted "$tmp/ss.out")" = "$(grep accepted "$tmp/ks.out")" &&
	 grep -q "accepted $N from $N addresses, echoed $N" "$tmp/ss.out"'
check "... no packet dropped waiting for a neighbour (nd_unres_drop ${nddrop:-0}; nd_ns_tx ${nstx:-0}, tcp_rto ${rto:-0})" \
	test -z "$nddrop"
check "... every connection the stack's (tcp_passive_open ${po:-0}), none refused for want of a handle (ip6_rx_peers_full ${full:-0})" \
	test "${po:-0}" = "$N" -a -z "$full"
done_testing
