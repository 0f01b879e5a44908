#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Sluice against the Linux kernel's own stack, over a TAP device inside a
# network namespace this test creates (and deletes):
#
#   netns sl-tap-PID
#   +-------------------------------------------------------------+
#   |  kernel stack              |  TAP sl0  |   Sluice stack      |
#   |  10.201.0.1/24 on sl0  <---+-----------+--> 10.201.0.2       |
#   |  ping, python3, busybox nc |           |   tests/interop/peer|
#   |  10.202.0.1/24 on sl1  <---+  TAP sl1  +--> 10.202.0.2       |
#   |  (kernel servers)          |           |   (Sluice clients)  |
#   +-------------------------------------------------------------+
#
# All traffic stays inside the namespace; every program runs for a bounded
# time.
set -u
. "$(dirname "$0")/lib.sh"
peer=$top/build/tests/interop/peer
py=/usr/bin/python3
[ -x "$py" ] || py=python3

ns=sl-tap-$$
stack=t-tap-$$
netns_test "TAP interop" "$ns" -- "$stack" "$stack-c"
K=10.201.0.1
S=10.201.0.2
K2=10.202.0.1
C=10.202.0.2
cleanup_extra() { [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null; }

in_ns ip tuntap add dev sl0 mode tap multi_queue
in_ns ip addr add "$K/24" dev sl0
in_ns ip link set sl0 up
in_ns ip tuntap add dev sl1 mode tap
in_ns ip addr add "$K2/24" dev sl1
in_ns ip link set sl1 up

out=$(mktemp)
in_ns timeout 60 "$peer" serve "$stack" "$S/24" sl0 40 >"$out" 2>&1 &
srv=$!
for _ in $(seq 50); do grep -qx ready "$out" && break; sleep 0.1; done
check "Sluice server is up on the TAP device" grep -qx ready "$out"

# ping from the kernel, answered by Sluice's ICMP
if in_ns timeout 20 busybox ping -c 3 -W 3 "$S" >"$out.ping" 2>&1; then
	ok "kernel ping to Sluice: 3 replies"
else
	fail "kernel ping to Sluice"; sed 's/^/# /' "$out.ping"
fi

# UDP: a kernel client, Sluice echoes
udp=$(in_ns timeout 20 "$py" - "$S" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
good = 0
for i in range(50):
    msg = b"kernel datagram %d " % i + bytes(range(256)) * (i % 5)
    s.sendto(msg, (sys.argv[1], 7))
    try:
        data, addr = s.recvfrom(4096)
        good += data == msg and addr == (sys.argv[1], 7)
    except socket.timeout:
        pass
print(good)
PY
)
check "UDP: kernel client, Sluice echo: 50/50 (got ${udp:-none})" [ "${udp:-0}" = 50 ]

# TCP: kernel clients, Sluice echo server (large transfer, concurrency)
tcp=$(in_ns timeout 60 "$py" - "$S" <<'PY'
import hashlib, os, socket, sys, threading
res = []
def one(n, size):
    data = os.urandom(size)
    s = socket.create_connection((sys.argv[1], 7), timeout=20)
    got = bytearray()
    def rd():
        while True:
            b = s.recv(65536)
            if not b:
                break
            got.extend(b)
    t = threading.Thread(target=rd)
    t.start()
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    t.join(30)
    s.close()
    res.append(hashlib.sha256(got).digest() == hashlib.sha256(data).digest())
try:
    one(0, 4 << 20)
    ts = [threading.Thread(target=one, args=(i, 64 << 10)) for i in range(20)]
    [t.start() for t in ts]
    [t.join(40) for t in ts]
except Exception as e:
    print("error", e)
print(sum(res), len(res))
PY
)
check "TCP: kernel client, Sluice echo: 4 MiB and 20 concurrent (got ${tcp:-none})" [ "$tcp" = "21 21" ]

# TCP: Sluice client, kernel echo server (python), both directions
in_ns timeout 50 "$py" - "$K2" <<'PY' >"$out.ksrv" 2>&1 &
import socket, sys, threading
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], 8007))
l.listen(16)
l.settimeout(45)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((sys.argv[1], 8007))
def udp_echo():
    while True:
        d, a = u.recvfrom(65536)
        u.sendto(d, a)
threading.Thread(target=udp_echo, daemon=True).start()
def serve(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.close()
print("listening", flush=True)
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,)).start()
PY
ksrv=$!
for _ in $(seq 50); do grep -q listening "$out.ksrv" && break; sleep 0.1; done
if in_ns timeout 60 "$peer" tcp-client "$stack-c" "$C/24" sl1 "$K2" 8007 $((2 << 20)) >"$out.cli" 2>&1; then
	ok "TCP: Sluice client, kernel echo server: 2 MiB both ways, clean EOF"
else
	fail "TCP: Sluice client, kernel echo server"; sed 's/^/# /' "$out.cli"
fi
res=$(in_ns timeout 20 "$peer" connect "$stack-c" "$C/24" sl1 "$K2" 8999 2>&1)
check "TCP: Sluice connect to a closed kernel port is ECONNREFUSED (got $res)" [ "$res" = ECONNREFUSED ]
udp=$(in_ns timeout 30 "$peer" udp-client "$stack-c" "$C/24" sl1 "$K2" 8007 20 2>&1)
check "UDP: Sluice client, kernel echo server: 20/20 (got $udp)" [ "$udp" = "20/20 echoed" ]
kill "$ksrv" 2>/dev/null

# Half-close from the kernel: data after our FIN still arrives.
hc=$(in_ns timeout 20 "$py" - "$S" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], 7), timeout=10)
s.sendall(b"half-close test")
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(100)
    if not b:
        break
    got += b
print(got.decode())
PY
)
check "TCP: half-close from the kernel, echo still arrives (got $hc)" [ "$hc" = "half-close test" ]

# RST: a kernel client that aborts (SO_LINGER 0) leaves the server working.
rst=$(in_ns timeout 20 "$py" - "$S" <<'PY'
import socket, struct, sys
s = socket.create_connection((sys.argv[1], 9), timeout=10)
s.sendall(b"x" * 1000)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
t = socket.create_connection((sys.argv[1], 7), timeout=10)
t.sendall(b"after-reset")
print(t.recv(100).decode())
PY
)
check "TCP: server survives a reset, next connection works (got $rst)" [ "$rst" = after-reset ]

kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
srv=
done_testing
