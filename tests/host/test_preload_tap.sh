#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Unmodified programs under `sluice run` over a TAP link, the host kernel
# as the peer, inside a network namespace this test creates (and deletes):
#
#   netns sl-ptap-PID
#   +------------------------------------------------------------------+
#   |  kernel stack                 |  TAP pt0  |  stack tp-c-PID       |
#   |  10.203.0.1/24 on pt0    <----+-----------+-- curl (sluice run)   |
#   |  python3 http.server (kernel) |           |  10.203.0.2           |
#   |                               |           |                       |
#   |  10.204.0.1/24 on pt1    -----+-----------+-> http.server         |
#   |  curl (kernel)                |  TAP pt1  |  (sluice run)         |
#   |                               |           |  stack tp-s-PID,      |
#   |                               |           |  10.204.0.2           |
#   |                               |           |                       |
#   |  10.206.0.1/24 on pt2    <----+-----------+-- owner, its forked   |
#   |  UDP and TCP echo (kernel)    |  TAP pt2  |  child, and another   |
#   |                               |           |  process attached by  |
#   |                               |           |  name: stack tp-m-PID |
#   +------------------------------------------------------------------+
#
# The last part: every process of a TAP stack sends at once, not only the
# one that opened the device (issue 21 item 6, issue 24 item 9): a UDP and
# a TCP ping-pong from each, medians within 2x of the owner's (plus 0.1 ms
# for a busy machine's scheduling).  Before, the process attached by name
# had no link (UDP: ENETUNREACH; TCP: its segments left only when the
# owner's retransmission timer fired).
#
# All traffic stays inside the namespace; every program is bounded by
# timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3

ns=sl-ptap-$$
cst=tp-c-$$
sst=tp-s-$$
mst=tp-m-$$
netns_test "preload over TAP" "$ns" -- "$cst" "$sst" "$mst"
for i in 0 1 2; do
	in_ns ip tuntap add dev "pt$i" mode tap multi_queue
	in_ns ip addr add "10.20$((3 + i + i / 2)).0.1/24" dev "pt$i"
	in_ns ip link set "pt$i" up
done
mkdir -p "$tmp/www"
echo "served by $$" >"$tmp/www/index.txt"
head -c 300000 /dev/urandom >"$tmp/www/big.bin"

# Sluice client, kernel server.
in_ns timeout 60 "$py" -m http.server --bind 10.203.0.1 18090 --directory "$tmp/www" \
	>"$tmp/ksrv.log" 2>&1 &
for _ in $(seq 50); do in_ns ss -ltn 2>/dev/null | grep -q ':18090 ' && break; sleep 0.1; done
out=$(in_ns timeout 20 "$sluice" run --stack "$cst" --tap pt0 --addr 10.203.0.2/24 -- \
	curl -sS --max-time 10 http://10.203.0.1:18090/index.txt 2>&1)
check "curl under sluice run fetches from a kernel server over TAP" [ "$out" = "served by $$" ]
in_ns timeout 30 "$sluice" run --stack "$cst" --tap pt0 --addr 10.203.0.2/24 -- \
	curl -sS --max-time 20 -o "$tmp/big.got" http://10.203.0.1:18090/big.bin
check "a 300 kB download over TAP is byte-exact" cmp -s "$tmp/www/big.bin" "$tmp/big.got"
ao=$(counter "$cst" tcp_active_open)
check "the client's connections were the stack's (tcp_active_open ${ao:-?})" [ "${ao:-0}" = 2 ]
lt=$(counter "$cst" link_tx)
check "frames went out on the TAP link (link_tx ${lt:-?})" [ "${lt:-0}" -gt 10 ]

# Sluice server, kernel client.
in_ns timeout 60 "$sluice" run --stack "$sst" --tap pt1 --addr 10.204.0.2/24 -- \
	"$py" -m http.server --bind 0.0.0.0 18091 --directory "$tmp/www" >"$tmp/ssrv.log" 2>&1 &
for _ in $(seq 50); do "$sluice" fds "$sst" | grep -q python3 && break; sleep 0.1; done
out=$(in_ns timeout 20 curl -sS --max-time 10 http://10.204.0.2:18091/index.txt 2>&1)
check "a kernel curl fetches from http.server under sluice run over TAP" [ "$out" = "served by $$" ]
in_ns timeout 30 curl -sS --max-time 20 -o "$tmp/big2.got" http://10.204.0.2:18091/big.bin
check "a 300 kB upload from Sluice over TAP is byte-exact" cmp -s "$tmp/www/big.bin" "$tmp/big2.got"
po=$(counter "$sst" tcp_passive_open)
check "the server's connections were the stack's (tcp_passive_open ${po:-?})" [ "${po:-0}" = 2 ]
# Every process of a TAP stack sends: the owner, its forked child, and a
# process attached by name (no --tap: the stack's region names the device).
in_ns timeout 60 "$py" -c '
import socket, threading
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("10.206.0.1", 18092)); t.listen(8)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("10.206.0.1", 18093))
def udp():
    while True:
        d, a = u.recvfrom(2000); u.sendto(d, a)
def echo(c):
    while True:
        d = c.recv(4000)
        if not d:
            break
        c.sendall(d)
    c.close()
threading.Thread(target=udp, daemon=True).start()
print("ready", flush=True)
while True:
    threading.Thread(target=echo, args=(t.accept()[0],), daemon=True).start()' \
	>"$tmp/echo.out" 2>&1 &
epid=$!
for _ in $(seq 50); do grep -q ready "$tmp/echo.out" && break; sleep 0.1; done
cat >"$tmp/pp.py" <<'EOF'
import os, socket, statistics, sys, time
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(2)
    u.connect(("10.206.0.1", 18093))
    ts = []
    for i in range(300):
        t = time.perf_counter()
        u.send(b"u%d" % i)
        assert u.recv(100) == b"u%d" % i
        ts.append(time.perf_counter() - t)
    return ts
def tcp():
    c = socket.create_connection(("10.206.0.1", 18092), timeout=2)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    ts = []
    for i in range(300):
        t = time.perf_counter()
        c.sendall(b"t%03d" % i)
        d = b""
        while len(d) < 4:
            d += c.recv(4 - len(d))
        assert d == b"t%03d" % i
        ts.append(time.perf_counter() - t)
    c.close()
    return ts
def pingpong(who):
    for name, f in (("udp", udp), ("tcp", tcp)):
        try:
            ts = f()
            print("%s %s %.0f" % (who, name, statistics.median(ts[50:]) * 1e6), flush=True)
        except Exception as e:
            print("%s %s failed: %r" % (who, name, e), flush=True)
who = sys.argv[1]
pingpong(who)
if who == "owner":
    if os.fork() == 0:
        pingpong("child")
        os._exit(0)
    os.wait()
    print("ready", flush=True)
    # Stay the owner, alive, while the other process runs.
    for _ in range(200):
        if os.path.exists(sys.argv[2]):
            break
        time.sleep(0.1)
EOF
in_ns timeout 60 "$sluice" run --stack "$mst" --tap pt2 --addr 10.206.0.2/24 -- \
	"$py" "$tmp/pp.py" owner "$tmp/other.done" >"$tmp/owner.out" 2>&1 &
opid=$!
for _ in $(seq 300); do grep -q ready "$tmp/owner.out" && break; sleep 0.1; done
in_ns timeout 30 "$sluice" run --stack "$mst" -- "$py" "$tmp/pp.py" other >"$tmp/other.out" 2>&1
touch "$tmp/other.done"
wait "$opid"
kill "$epid" 2>/dev/null
cat "$tmp/owner.out" "$tmp/other.out" | sed 's/^/# /'
# med WHO PROTO: WHO's median round trip, us.
med() {
	awk -v w="$1" -v p="$2" '$1 == w && $2 == p && $3 ~ /^[0-9]+$/ { print $3 }' \
		"$tmp/owner.out" "$tmp/other.out"
}
# within2 WHO PROTO: WHO's median is within 2x (+100 us) of the owner's.
within2() {
	local o m
	o=$(med owner "$2")
	m=$(med "$1" "$2")
	[ -n "$o" ] && [ -n "$m" ] && awk -v o="$o" -v m="$m" 'BEGIN { exit !(m <= 2 * o + 100) }'
}
# Outside the namespace the stack's TAP device does not exist: a process
# attached there runs without a link and makes no device of that name.
if ! ip link show pt2 >/dev/null 2>&1; then
	out=$(timeout 20 "$sluice" run --stack "$mst" -- "$py" -c '
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
print("bound")' 2>"$tmp/absent.err")
	made=$(ip link show pt2 2>/dev/null | head -n 1)
	[ -n "$made" ] && ip link del pt2
	check "where its TAP device is absent, a process attaches without making one ($out)" \
		test -z "$made" -a "$out" = bound
	check "... and is told why it cannot send on it" grep -q 'pt2: No such device' "$tmp/absent.err"
fi
check "the owner's UDP and TCP ping-pong over TAP ($(med owner udp) us, $(med owner tcp) us)" \
	test -n "$(med owner tcp)"
for w in child other; do
	for p in udp tcp; do
		check "$w: $p ping-pong over TAP, median $(med "$w" "$p") us within 2x of the owner's" \
			within2 "$w" "$p"
	done
done
done_testing
