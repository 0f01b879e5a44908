#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A program waiting on several sockets of a TAP stack (select, poll: a
# wait on a few wait channels, run/wait.c sl_wait_sleep_v()) takes
# a frame in when it comes, as a wait on one socket does.  Before, such a
# sleep was on the channels' futex words alone: nothing read the TAP queue
# until the process's queue server's 50 ms nap ended or the stack's next
# timer, so every answer waited up to 50 ms (iperf3, in select() on its
# control and data sockets, sent a flight per wait: issue 19 item 6,
# tests/bench/lossy_host.sh).
#   - A ping-pong of 100 bytes with a kernel echo server over the TAP
#     device that answers 1 ms late (so the client sleeps each round: an
#     answer there before the client's first look would hide the wait),
#     200 rounds, the client in select() (then poll()) on the
#     connection and a second, idle socket, spinning off
#     (SLUICE_SPIN_US=0: a spin that catches the answer hides the sleep):
#     median round trip under 6 ms (the kernel, the same client in the
#     same namespace: about 1.1 ms).
# Every program is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

if [ "$(id -u)" != 0 ]; then
	skip "waits on several sockets of a TAP stack" "needs root"
	done_testing
	exit 0
fi
ns=sl-twait-$$
st=tw-$$
netns_test "waits on several sockets of a TAP stack" "$ns" -- "$st"
in_ns ip tuntap add dev tw0 mode tap multi_queue
in_ns sysctl -qw net.ipv6.conf.tw0.disable_ipv6=1
in_ns ip addr add 10.213.0.1/24 dev tw0
in_ns ip link set tw0 up
in_ns timeout 120 "$py" -c '
import socket, threading, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 18098))
s.listen(16)
def echo(c):
    while True:
        d = c.recv(65536)
        if not d:
            return
        time.sleep(0.001)
        c.sendall(d)
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=echo, args=(c,), daemon=True).start()' >"$tmp/echo.log" 2>&1 &
for _ in $(seq 50); do in_ns ss -ltn 2>/dev/null | grep -q ':18098 ' && break; sleep 0.1; done

# The client: MODE select or poll; prints the median and the slowest
# round trip in microseconds.
cat >"$tmp/client.py" <<'PY'
import select, socket, sys, time
addr, mode = sys.argv[1], sys.argv[2]
c = socket.create_connection((addr, 18098), timeout=5)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
c.setblocking(False)
idle = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
idle.bind(("0.0.0.0", 0))
if mode == "poll":
    pl = select.poll()
    pl.register(c.fileno(), select.POLLIN)
    pl.register(idle.fileno(), select.POLLIN)
msg = b"x" * 100
rt = []
for i in range(200):
    t = time.monotonic()
    c.send(msg)
    got = 0
    while got < len(msg):
        if mode == "poll":
            pl.poll(2000)
        else:
            select.select([c, idle], [], [], 2)
        try:
            got += len(c.recv(4096))
        except BlockingIOError:
            pass
    rt.append(time.monotonic() - t)
rt.sort()
print("median %d worst %d" % (rt[len(rt) // 2] * 1e6, rt[-1] * 1e6))
PY

for mode in select poll; do
	out=$(in_ns timeout 60 env SLUICE_NO_HELPER=1 SLUICE_SPIN_US=0 "$top/build/tools/sluice" run --stack "$st" \
		--tap tw0 --addr 10.213.0.2/24 -- "$py" "$tmp/client.py" 10.213.0.1 $mode 2>&1)
	kout=$(in_ns timeout 60 "$py" "$tmp/client.py" 10.213.0.1 $mode 2>&1)
	m=$(sed -n 's/^median \([0-9]*\) .*/\1/p' <<<"$out")
	km=$(sed -n 's/^median \([0-9]*\) .*/\1/p' <<<"$kout")
	echo "# $mode: Sluice ${out//$'\n'/ | } us; the kernel $kout us"
	check "$mode on two sockets of a TAP stack: a round trip's median under 6 ms (${m:-?} us; the kernel ${km:-?} us)" \
		test "${m:-999999}" -lt 6000
	check "the kernel, the same client: under 6 ms too (${km:-?} us)" test "${km:-999999}" -lt 6000
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
done
done_testing
