# SPDX-License-Identifier: BSD-2-Clause
# Under sluice run: timeouts while another process holds the stack lock
# stopped (tests/host/test_stopped_holder.sh).  Makes its sockets, writes
# READY_FILE, waits for GO_FILE (the holder is stopped by then), and prints
# how long each timed call took, in seconds.
#
# With a third argument "storm": instead, writes READY_FILE, then makes
# timed calls for about 3 s while another process holding and letting go
# of the lock is stopped and continued over and over; prints the worst
# overshoot of each kind, in seconds.
#
# With "journal": a socket of an epoll set becomes readable before the
# holder stops; the set looks (epoll_wait, 0) while it is stopped, writes
# GO_FILE.looked, and waits up to 3 s once more (the holder is continued
# meanwhile): prints what each look reported.
import os, select, socket, struct, sys, time

ready, go = sys.argv[1], sys.argv[2]
storm = len(sys.argv) > 3 and sys.argv[3] == "storm"
journal = len(sys.argv) > 3 and sys.argv[3] == "journal"
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a.bind(("127.0.0.1", 18090))
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
b.bind(("127.0.0.1", 18091))
b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 300000))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
c.bind(("127.0.0.1", 18092))
c.settimeout(0.25)
# TCP with a full send buffer, for SO_SNDTIMEO: nobody reads the far end.
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
# As servers do: the storm run binds the port again while the first run's
# connections close (curl's among them: listen(1) queues two, as Linux).
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 18093))
l.listen(1)
d = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
d.connect(("127.0.0.1", 18093))
acc, _ = l.accept()
d.setblocking(False)
try:
    while True:
        d.send(b"x" * 65536)
except BlockingIOError:
    pass
d.setblocking(True)
d.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 0, 200000))
# For the control calls: a fresh TCP socket and a non-blocking one.
f = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
g = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
g.setblocking(False)
if storm:
    open(ready, "w").close()
    ep = select.epoll()
    ep.register(a.fileno(), select.EPOLLIN)
    b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 30000))
    worst = {"poll": 0.0, "epoll": 0.0, "select": 0.0, "rcvtimeo": 0.0}
    n = 0
    end = time.monotonic() + 3
    while time.monotonic() < end:
        p = select.poll(); p.register(a, select.POLLIN)
        t = time.monotonic(); p.poll(20)
        worst["poll"] = max(worst["poll"], time.monotonic() - t - 0.020)
        t = time.monotonic(); ep.poll(0.020)
        worst["epoll"] = max(worst["epoll"], time.monotonic() - t - 0.020)
        t = time.monotonic(); select.select([a], [], [], 0.020)
        worst["select"] = max(worst["select"], time.monotonic() - t - 0.020)
        t = time.monotonic()
        try:
            b.recv(16)
        except OSError:
            pass
        worst["rcvtimeo"] = max(worst["rcvtimeo"], time.monotonic() - t - 0.030)
        n += 1
    for k, v in worst.items():
        print("storm %s %.4f %d" % (k, v, n), flush=True)
    sys.exit(0)
if journal:
    # epoll's readiness journal (issue 24): a datagram arrives and the
    # journal names the socket before the holder stops; the set's first
    # look after that cannot be made.  Once the holder goes on, the set
    # must still report the socket, though the journal did not move.
    ep = select.epoll()
    ep.register(a.fileno(), select.EPOLLIN)
    first = len(ep.poll(0))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"j", ("127.0.0.1", 18090))
    p = select.poll()
    p.register(a, select.POLLIN)
    before = len(p.poll(1000))
    open(ready, "w").close()
    for _ in range(500):
        if os.path.exists(go):
            break
        time.sleep(0.01)
    during = len(ep.poll(0))
    open(go + ".looked", "w").close()
    t = time.monotonic()
    after = len(ep.poll(3.0))
    print("journal first %d before %d during %d after %d in %.3f" %
          (first, before, during, after, time.monotonic() - t), flush=True)
    sys.exit(0)
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

ep = select.epoll()
ep.register(a.fileno(), select.EPOLLIN)
t = time.monotonic()
ev = ep.poll(0.150)
print("epoll %.3f %d" % (time.monotonic() - t, len(ev)), flush=True)

t = time.monotonic()
r, _, _ = select.select([a], [], [], 0.150)
print("select %.3f %d" % (time.monotonic() - t, len(r)), flush=True)

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

t = time.monotonic()
try:
    d.send(b"y" * 65536)
    r = "sent"
except OSError as ex:
    r = "errno%d" % ex.errno
print("sndtimeo %.3f %s" % (time.monotonic() - t, r), flush=True)

a.setblocking(False)
t = time.monotonic()
try:
    a.recv(16)
    r = "data"
except BlockingIOError:
    r = "eagain"
print("nonblock %.3f %s" % (time.monotonic() - t, r), flush=True)

# A new connection's start needs no lock: socket(), its options and a
# non-blocking connect (queued for the next holder, as a SYN) return at once.
t = time.monotonic()
h = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
h.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
h.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
h.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 60)
nd = h.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
hn = "%s:%d" % h.getsockname()
h.setblocking(False)
rc = h.connect_ex(("127.0.0.1", 18093))
print("fresh %.3f %d %d %s" % (time.monotonic() - t, rc, nd, hn), flush=True)

# Reads of a socket the holder is not changing are answered at once.
t = time.monotonic()
r = "%s:%d %s:%d" % (d.getsockname() + d.getpeername())
print("names %.3f %s" % (time.monotonic() - t, r), flush=True)

# Control calls never answer EAGAIN because the lock's holder is stopped
# (Linux never does, and programs take it for their own error): they wait
# for the lock, which the test gives back after a while.
t = time.monotonic()
for name, call in (
        ("setsockopt", lambda: f.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)),
        ("getsockopt", lambda: f.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)),
        ("bind", lambda: f.bind(("127.0.0.1", 18094))),
        ("listen", lambda: f.listen(4)),
        ("connect", lambda: g.connect(("127.0.0.1", 18094))),
        ("shutdown", lambda: f.shutdown(socket.SHUT_WR))):
    try:
        call()
        r = "ok"
    except BlockingIOError as e:
        r = "ok" if name == "connect" and e.errno == 115 else "errno%d" % e.errno
    except OSError as e:
        r = "errno%d" % e.errno
    print("control %s %s" % (name, r), flush=True)
print("control waited %.3f" % (time.monotonic() - t), flush=True)

# The queued connect was made by the next holder: it completes and carries data.
_, w, _ = select.select([], [h], [], 5)
err = h.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
h.setblocking(True)
# (curl's queued connection, closed meanwhile, may come first.)
for _ in range(4):
    m, peer = l.accept()
    if peer[1] == h.getsockname()[1]:
        break
h.sendall(b"queued")
print("queued %s %d %s" % ("writable" if w else "not-writable", err, m.recv(16).decode()), flush=True)
