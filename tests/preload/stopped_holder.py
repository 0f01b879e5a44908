# SPDX-License-Identifier: BSD-2-Clause
# Under sluice run: timeouts while another process holds the stack lock
# stopped (tests/host/test_stopped_holder.sh).  Makes its sockets, writes
# READY_FILE, waits for GO_FILE (the holder is stopped by then), and prints
# how long each timed call took, in seconds.
import os, select, socket, struct, sys, time

ready, go = sys.argv[1], sys.argv[2]
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a.bind(("127.0.0.1", 18090))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
b.bind(("127.0.0.1", 18091))
b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 300000))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.bind(("127.0.0.1", 18092))
c.settimeout(0.25)
open(ready, "w").close()
for _ in range(500):
    if os.path.exists(go):
        break
    time.sleep(0.01)

t = time.monotonic()
p = select.poll()
p.register(a, select.POLLIN)
ev = p.poll(200)
print("poll %.3f %d" % (time.monotonic() - t, len(ev)), flush=True)

t = time.monotonic()
try:
    b.recv(16)
    r = "data"
except OSError as e:
    r = "errno%d" % e.errno
print("rcvtimeo %.3f %s" % (time.monotonic() - t, r), flush=True)

t = time.monotonic()
try:
    c.recv(16)
    r = "data"
except socket.timeout:
    r = "timeout"
print("settimeout %.3f %s" % (time.monotonic() - t, r), flush=True)

a.setblocking(False)
t = time.monotonic()
try:
    a.recv(16)
    r = "data"
except BlockingIOError:
    r = "eagain"
print("nonblock %.3f %s" % (time.monotonic() - t, r), flush=True)
