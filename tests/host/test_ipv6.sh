#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# IPv6 on a TAP link: a Sluice stack with an IPv6 address beside the
# kernel, both answering the same kernel peer, in namespaces this test
# creates (and deletes):
#
#   netns sl-v6-PID                                  netns sl-v6k-PID
#   kernel fd00:20::1, ::3 on TAP sl0 <--> Sluice fd00:20::2 (sluice run)
#   kernel fd00:21::1 on veth v0    <-------------> kernel fd00:21::2 (v1)
#
# Each probe runs against both targets and the answers are compared:
# ping6 (Neighbour Discovery first: the kernel's neighbour table must
# hold the stack's link address), UDP and TCP to a closed port (port
# unreachable, RST: refused), a peer the stack has to resolve itself
# (its own solicitation); AF_INET6 TCP and UDP sockets on the stack's
# address as server and as client, the kernel the peer.  Last, with
# SLUICE_INET6=0 the stack takes no IPv6 address and ping6 goes
# unanswered: the behaviour before IPv6.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
[ -x "$py" ] || py=python3

ns=sl-v6-$$ kns=sl-v6k-$$ stack=v6-$$
S=fd00:20::2 K=fd00:21::2
netns_test "IPv6 on TAP" "$ns" "$kns" -- "$stack"
counter() { "$sluice" dump "$stack" 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'; }

in_ns ip tuntap add dev sl0 mode tap multi_queue
in_ns ip addr add 10.203.0.1/24 dev sl0
in_ns ip -6 addr add fd00:20::1/64 dev sl0 nodad
in_ns ip -6 addr add fd00:20::3/64 dev sl0 nodad
in_ns ip link set sl0 up
ip link add name v0 netns "$ns" type veth peer name v1 netns "$kns"
in_ns ip -6 addr add fd00:21::1/64 dev v0 nodad
ip netns exec "$kns" ip -6 addr add "$K/64" dev v1 nodad
in_ns ip link set v0 up
ip netns exec "$kns" ip link set v1 up

# The stack's holder: a program under sluice run with an IPv4 socket in
# the stack, so that the stack has a process taking its frames.
cat >"$tmp/holder.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.203.0.2", 9999))
print("ready", flush=True)
s.settimeout(1)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    try:
        s.recvfrom(100)
    except socket.timeout:
        pass
PY
# A kernel client's probe of a closed port: what the program sees.
cat >"$tmp/probe.py" <<'PY'
import socket, sys
kind, t = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM if kind == "udp" else socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect((t, 9))
    if kind == "udp":
        s.send(b"x")
        s.recv(10)
    print("answered")
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
PY
holder() { # seconds, extra env
	in_ns env "$@" timeout 60 "$sluice" run --stack "$stack" --tap sl0 \
		--addr 10.203.0.2/24 --addr6 "$S/64" -- "$py" "$tmp/holder.py" 30 \
		>"$tmp/holder.out" 2>&1 &
	for _ in $(seq 100); do grep -qx ready "$tmp/holder.out" && return 0; sleep 0.1; done
	return 1
}

check "the stack's holder is up on sl0" holder SLUICE_INET6=1

# ping6 from the kernel: Neighbour Discovery, then echo.
pings() { in_ns timeout 20 busybox ping6 -c 3 -i 0.3 -W 2 "$@" 2>&1 | grep -c "bytes from"; }
ps=$(pings "$S") pk=$(pings "$K")
check "ping6 to the stack: 3 of 3 (kernel: $pk)" test "$ps" = 3 -a "$pk" = 3
hl() { in_ns timeout 10 busybox ping6 -c 1 -W 2 "$1" 2>&1 | sed -n 's/.*ttl=\([0-9]*\).*/\1/p'; }
hs=$(hl "$S") hk=$(hl "$K")
check "echo replies' hop limit as the kernel's ($hs, kernel $hk)" test -n "$hs" -a "$hs" = "$hk"
neigh=$(in_ns ip -6 neigh show "$S" dev sl0)
mac=$(in_ns cat /sys/class/net/sl0/address)
check "the kernel's neighbour table has the stack (NA answered NS): $neigh" \
	eval 'echo "$neigh" | grep -Eq "lladdr ([0-9a-f]{2}:){5}[0-9a-f]{2} (REACHABLE|STALE|DELAY|PROBE)"'
check "... with a link address not the TAP device's own ($mac)" eval '! echo "$neigh" | grep -q "$mac"'
check "NS received, NA sent by the stack" test "$(counter nd_ns_rx)" -ge 1 -a "$(counter nd_na_tx)" -ge 1
check "echo requests answered: 4 (counted)" test "$(counter icmp6_echo_replied)" = 4

# sluice tcpdump names IPv6 packets (the capture hook sees them too).
# Echo only (ICMPv6 types 128, 129): the reply may wait for Neighbour
# Discovery, whose packets come first on the link, as on the kernel's.
in_ns timeout 15 "$sluice" tcpdump "$stack" -c 2 \
	"icmp6 and ip6 host fd00:20::1 and ip6[40] >= 128 and ip6[40] <= 129" >"$tmp/dump.out" 2>&1 &
dump=$!
sleep 1
in_ns timeout 10 busybox ping6 -c 1 -W 2 -I fd00:20::1 "$S" >/dev/null 2>&1
wait "$dump" 2>/dev/null
check "sluice tcpdump: the echo request and reply, as IP6 lines" eval \
	'grep -q "In  IP6 fd00:20::1 > $S: ICMP6, echo request" "$tmp/dump.out" &&
	 grep -q "Out IP6 $S > fd00:20::1: ICMP6, echo reply" "$tmp/dump.out"'
[ "$tap_failed" = 0 ] || sed 's/^/# /' "$tmp/dump.out"

# Closed ports, as Linux answers them.
for kind in udp tcp; do
	as=$(in_ns timeout 10 "$py" "$tmp/probe.py" "$kind" "$S")
	ak=$(in_ns timeout 10 "$py" "$tmp/probe.py" "$kind" "$K")
	check "$kind to a closed port: $as (kernel: $ak)" test "$as" = refused -a "$ak" = refused
done
check "counted: udp6_rx_noport 1, tcp6_rx_noport 1" \
	test "$(counter udp6_rx_noport)" = 1 -a "$(counter tcp6_rx_noport)" = 1

# A source the target does not know, the kernel's entry for the target
# made permanent (so it never solicits it, teaching it the source): the
# target solicits the source itself, the first reply waiting for the
# answer (Linux's unres_qlen; the stack keeps the newest packet).
smac=$(echo "$neigh" | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')
kmac=$(ip netns exec "$kns" cat /sys/class/net/v1/address)
in_ns ip -6 neigh replace "$S" lladdr "$smac" dev sl0 nud permanent
in_ns ip -6 neigh replace "$K" lladdr "$kmac" dev v0 nud permanent
in_ns ip -6 addr add fd00:20::4/64 dev sl0 nodad
in_ns ip -6 addr add fd00:21::4/64 dev v0 nodad
ps=$(pings -I fd00:20::4 "$S") pk=$(pings -I fd00:21::4 "$K")
check "ping6 from an address the target must resolve: $ps of 3 (kernel: $pk of 3)" \
	test "$ps" = 3 -a "$pk" = 3
nd_drop=$(counter nd_unres_drop)
check "... the stack sent NS and took the NA (nd_ns_tx $(counter nd_ns_tx), nd_na_rx $(counter nd_na_rx))" \
	test "$(counter nd_ns_tx)" -ge 1 -a "$(counter nd_na_rx)" -ge 1
check "... no reply dropped while resolving (nd_unres_drop ${nd_drop:-0})" \
	test -z "$nd_drop"
# The answers' IPv6 headers, as the kernel's: traffic class (a RST's and
# an echo reply's reflect the request's, less ECN for the RST; an error's
# is 0), a flow label (auto_flowlabels), hop limit; seen on the wire.
cat >"$tmp/hdrs.py" <<'PY'
import socket, struct, sys, time
dev, src, t = sys.argv[1], sys.argv[2], sys.argv[3]
cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86dd))
cap.bind((dev, 0))
cap.settimeout(0.2)
me = socket.inet_pton(socket.AF_INET6, src)
def show(tag, nh, typ=None):
    end = time.time() + 3
    while time.time() < end:
        try:
            f = cap.recv(4000)
        except socket.timeout:
            continue
        ip = f[14:]
        if len(ip) < 41 or ip[24:40] != me or ip[6] != nh or (typ is not None and ip[40] != typ):
            continue
        w = struct.unpack("!I", ip[:4])[0]
        print("%s tclass=0x%02x flow=%s hlim=%d" % (tag, (w >> 20) & 0xff,
              "set" if w & 0xfffff else "0", ip[7]))
        return
    print(tag, "none")
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0x2b)
s.bind((src, 0))
s.settimeout(2)
try:
    s.connect((t, 9))
except OSError:
    pass
show("rst", 6)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0x2b)
u.bind((src, 0))
u.sendto(b"x", (t, 9))
show("unreachable", 58, 1)
e = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
e.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0xb8)
e.bind((src, 0))
e.sendto(struct.pack("!BBHHH", 128, 0, 0, 77, 1) + b"hdrs", (t, 0))
show("echo-reply", 58, 129)
PY
hs=$(in_ns timeout 20 "$py" "$tmp/hdrs.py" sl0 fd00:20::1 "$S" | tr '\n' ' ')
hk=$(in_ns timeout 20 "$py" "$tmp/hdrs.py" v0 fd00:21::1 "$K" | tr '\n' ' ')
check "answers' headers as the kernel's: $hs(kernel: $hk)" \
	test -n "$hs" -a "$hs" = "$hk" -a -z "$(echo "$hs" | grep none)"

# ICMPv6 errors rate-limited as Linux limits them: 50 datagrams at once
# to a closed port from a fresh source (resolved first by a ping), the
# port unreachables counted by a raw socket for 1 s.
cat >"$tmp/flood.py" <<'PY'
import socket, sys, time
src, t = sys.argv[1], sys.argv[2]
raw = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
raw.settimeout(0.1)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.bind((src, 0))
for _ in range(50):
    u.sendto(b"x", (t, 9))
n, end = 0, time.time() + 1
dst = socket.inet_pton(socket.AF_INET6, t)
while time.time() < end:
    try:
        m, a = raw.recvfrom(2000)
    except socket.timeout:
        continue
    # type 1 code 4, quoting our datagram to t (its destination at 8 + 24)
    n += m[0] == 1 and m[1] == 4 and m[32:48] == dst
print(n)
PY
in_ns ip -6 addr add fd00:20::5/64 dev sl0 nodad
in_ns ip -6 addr add fd00:21::5/64 dev v0 nodad
pings -I fd00:20::5 "$S" >/dev/null
pings -I fd00:21::5 "$K" >/dev/null
es=$(in_ns timeout 10 "$py" "$tmp/flood.py" fd00:20::5 "$S")
ek=$(in_ns timeout 10 "$py" "$tmp/flood.py" fd00:21::5 "$K")
check "50 datagrams to a closed port: $es port unreachables (kernel: $ek)" \
	test -n "$es" -a "$es" = "$ek"
check "... the rest not sent, counted (icmp6_ratelimit $(counter icmp6_ratelimit))" \
	test "$(counter icmp6_ratelimit)" = "$((50 - ${es:-0}))"

# AF_INET6 sockets on the stack's IPv6 address, the kernel the peer: one
# program (v6tap.py) as the server, then as the client, once on the
# stack (sluice run on sl0) and once on the kernel (veth in sl-v6k), the
# same kernel program opposite.  Each prints what its calls return
# (addresses in full: port, flowinfo, scope id), the target written T and
# the peer P, ephemeral ports E: the two runs' lines must be the same.
cat >"$tmp/v6tap.py" <<'PY'
import socket, sys
role, me, peer, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
N = 199940
def a(t):
    h = {me: "T", peer: "P"}.get(t[0], t[0])
    return "(%s,%s,%d,%d)" % (h, "E" if t[1] >= 32768 else t[1], t[2], t[3])
def out(*w):
    print(*w, flush=True)
if role == "server":
    L = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    L.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    L.bind(("::", port)); L.listen(4)
    U = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    U.bind((me, port))
    out("ready", a(L.getsockname()), a(U.getsockname()))
    L.settimeout(10); U.settimeout(10)
    c, w = L.accept()
    c.settimeout(10)
    out("accept", a(w), a(c.getsockname()), a(c.getpeername()))
    n = 0
    while n < N:
        d = c.recv(65536)
        if not d:
            break
        n += len(d)
        c.sendall(d)
    out("echoed", n)
    d, w = U.recvfrom(2000)
    out("udp from", a(w), len(d))
    U.sendto(d[::-1], w)
    c.close()
else:
    c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    c.settimeout(10)
    c.bind((me, 0))
    c.connect((peer, port))
    out("connect", a(c.getsockname()), a(c.getpeername()))
    msg = (bytes(range(256)) * 800)[:N]
    c.sendall(msg)
    got = b""
    while len(got) < len(msg):
        got += c.recv(65536)
    out("echo", len(got), got == msg)
    u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    u.settimeout(10)
    u.bind((me, 0))
    u.sendto(b"datagram-1", (peer, port))
    d, w = u.recvfrom(2000)
    out("udp reply", d, a(w), a(u.getsockname()))
    u.connect((peer, port))
    u.send(b"again")
    out("udp connected", a(u.getpeername()))
PY
run_stack() { in_ns timeout 30 "$sluice" run --stack "$stack" --tap sl0 --addr 10.203.0.2/24 \
		--addr6 "$S/64" -- "$py" "$tmp/v6tap.py" "$@"; }
in_k() { ip netns exec "$kns" timeout 30 "$py" "$tmp/v6tap.py" "$@"; }
in_ns_py() { in_ns timeout 30 "$py" "$tmp/v6tap.py" "$@"; }
po=$(counter tcp_passive_open) ao=$(counter tcp_active_open)
# The stack as the server, a kernel client on sl0; the kernel as the
# server, the same client on v0.
run_stack server "$S" fd00:20::1 7000 >"$tmp/ss.out" 2>&1 &
for _ in $(seq 100); do grep -q ready "$tmp/ss.out" && break; sleep 0.1; done
in_ns_py client fd00:20::1 "$S" 7000 >"$tmp/sc.out" 2>&1
wait $!
in_k server "$K" fd00:21::1 7000 >"$tmp/ks.out" 2>&1 &
for _ in $(seq 100); do grep -q ready "$tmp/ks.out" && break; sleep 0.1; done
in_ns_py client fd00:21::1 "$K" 7000 >"$tmp/kc.out" 2>&1
wait $!
sed 's/^/# stack server: /' "$tmp/ss.out"; sed 's/^/# its client: /' "$tmp/sc.out"
check "an IPv6 server in the stack, a kernel client: the server's calls as on the kernel" \
	eval 'test "$(cat "$tmp/ss.out")" = "$(cat "$tmp/ks.out")" && grep -q "^udp from" "$tmp/ss.out"'
check "... the client's calls (echo of 199,940 bytes, a datagram each way) as the kernel's" \
	eval 'test "$(cat "$tmp/sc.out")" = "$(cat "$tmp/kc.out")" && grep -q "^udp connected" "$tmp/sc.out"'
check "... the connection was the stack's (tcp_passive_open +1)" \
	test "$(counter tcp_passive_open)" = "$((${po:-0} + 1))"
# The stack as the client of a kernel server on sl0; the kernel as the
# client (in sl-v6k) of the same server on v0.
in_ns_py server fd00:20::1 "$S" 7001 >"$tmp/ss2.out" 2>&1 &
for _ in $(seq 100); do grep -q ready "$tmp/ss2.out" && break; sleep 0.1; done
run_stack client "$S" fd00:20::1 7001 >"$tmp/sc2.out" 2>&1
wait $!
in_ns_py server fd00:21::1 "$K" 7001 >"$tmp/ks2.out" 2>&1 &
for _ in $(seq 100); do grep -q ready "$tmp/ks2.out" && break; sleep 0.1; done
in_k client "$K" fd00:21::1 7001 >"$tmp/kc2.out" 2>&1
wait $!
sed 's/^/# stack client: /' "$tmp/sc2.out"; sed 's/^/# its server: /' "$tmp/ss2.out"
check "an IPv6 client in the stack, a kernel server: the client's calls as on the kernel" \
	eval 'test "$(cat "$tmp/sc2.out")" = "$(cat "$tmp/kc2.out")" && grep -q "^udp connected" "$tmp/sc2.out"'
check "... the server's calls as the kernel's" \
	eval 'test "$(cat "$tmp/ss2.out")" = "$(cat "$tmp/ks2.out")" && grep -q "^udp from" "$tmp/ss2.out"'
check "... the connection was the stack's (tcp_active_open +1)" \
	test "$(counter tcp_active_open)" = "$((${ao:-0} + 1))"
[ "$tap_failed" = 0 ] || "$sluice" dump "$stack" | grep -E 'udp|ip6|tcp6' | sed 's/^/# /'

# SLUICE_INET6=0: the stack has no IPv6 address (as before IPv6).
ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
wait 2>/dev/null
rm -rf "/dev/shm/sluice-$stack" "/dev/shm/sluicefd-$stack"
in_ns ip -6 neigh flush dev sl0
check "the holder is up again with SLUICE_INET6=0" holder SLUICE_INET6=0
ps=$(pings "$S")
check "SLUICE_INET6=0: ping6 to the stack unanswered ($ps)" test "$ps" = 0

done_testing
