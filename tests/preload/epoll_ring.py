#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""An epoll set sees its own sockets, and only they cost its looks
(issue 23 item 2), run by tests/host/test_epoll_ring.sh on the kernel and
under `sluice run`, which compares the lines.

    epoll_ring.py [SLUICE STACK]

With SLUICE and STACK (under `sluice run`), it also reads the stack's
counters epoll_entries (readiness entries the sets read) and
epoll_full_look around a phase where a forked child churns 32 connections
of its own (blocking send/recv, no epoll; 20 rounds or more, each 32
round trips) while this process looks at an idle set of 4 sockets 200
times: its set's ready ring names none of them,
where the stack's journal named every change of the child's.  Prints
"name value" lines; the counter lines start with "ring_".
"""
import os
import re
import select
import socket
import subprocess
import sys
import time

L = socket.socket()
L.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
L.bind(("127.0.0.1", 0))
L.listen(64)


def pair():
    c = socket.create_connection(L.getsockname())
    s, _ = L.accept()
    return c, s


def counters():
    """The two counters from `sluice dump --json` (zeros included there);
    a library without them gives None."""
    if len(sys.argv) < 3:
        return {}
    out = subprocess.run([sys.argv[1], "dump", "--json", sys.argv[2]], capture_output=True,
                         text=True, timeout=30).stdout
    d = {}
    for k in ("epoll_entries", "epoll_full_look"):
        m = re.search('"%s":([0-9]+)' % k, out)
        d[k] = int(m.group(1)) if m else None
    return d


def delta(c0, c1, k):
    return "missing" if c0[k] is None or c1[k] is None else str(c1[k] - c0[k])


def names(evs, fdname):
    return " ".join(sorted("%s:%s" % (fdname[fd], "IN" if ev & select.EPOLLIN else hex(ev))
                           for fd, ev in evs)) or "-"


pairs = [pair() for _ in range(4)]
cl = [p[0] for p in pairs]
sv = [p[1] for p in pairs]
fdname = {s.fileno(): "s%d" % i for i, s in enumerate(sv)}

# A set of four idle sockets; looked at once so that its first (full)
# look is behind it.
w = select.epoll()
for s in sv:
    w.register(s.fileno(), select.EPOLLIN)
print("idle_first", names(w.poll(0.05), fdname))

# The churn: a child with 32 connections of its own, each round trip a
# few readiness changes in the stack, none of them this set's; from
# before the first look to after the last (told to stop).
rd, wr = os.pipe()
go_r, go_w = os.pipe()
stop_r, stop_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(rd)
    mine = [pair() for _ in range(32)]
    os.write(wr, b"r")
    os.read(go_r, 1)
    rounds, t0 = 0, time.monotonic()
    while time.monotonic() < t0 + 20:
        for c, s in mine:
            c.send(b"x")
        for c, s in mine:
            s.recv(1)
        rounds += 1
        if rounds == 1:
            os.write(wr, b"1")
        if select.select([stop_r], [], [], 0)[0]:
            break
    os.write(wr, rounds.to_bytes(4, "little") +
             int((time.monotonic() - t0) * 1000).to_bytes(4, "little"))
    os._exit(0)
os.close(wr)
os.read(rd, 1)
c0 = counters()
os.write(go_w, b"g")
os.read(rd, 1)
looks, seen = 0, set()
deadline = time.monotonic() + 30
while looks < 200 and time.monotonic() < deadline:
    for fd, ev in w.poll(0.002):
        seen.add(fdname[fd])
    looks += 1
os.write(stop_w, b"s")
got = os.read(rd, 8)
rounds = int.from_bytes(got[:4], "little")
churn_ms = int.from_bytes(got[4:], "little")
os.waitpid(pid, 0)
c1 = counters()
print("churn_looks", looks)
print("churn_seen", " ".join(sorted(seen)) or "-")
print("churn_rounds_enough", "yes" if rounds >= 20 else "no %d" % rounds)
if c0:
    print("ring_churn_ms %d (%d rounds)" % (churn_ms, rounds), file=sys.stderr)
    print("ring_entries", delta(c0, c1, "epoll_entries"))
    print("ring_full_looks", delta(c0, c1, "epoll_full_look"))

# Its own sockets still wake it: data on s2 alone.
cl[2].send(b"a")
print("own_data", names(w.poll(2.0), fdname))
sv[2].recv(1)
print("own_drained", names(w.poll(0.05), fdname))

# A socket in two sets (s1 in a and b): both report it; s3 only in b.
a = select.epoll()
b = select.epoll()
a.register(sv[0].fileno(), select.EPOLLIN)
a.register(sv[1].fileno(), select.EPOLLIN)
b.register(sv[1].fileno(), select.EPOLLIN)
b.register(sv[3].fileno(), select.EPOLLIN)
print("two_idle", names(a.poll(0.02), fdname), names(b.poll(0.02), fdname))
cl[1].send(b"b")
print("two_shared", names(a.poll(2.0), fdname), names(b.poll(2.0), fdname))
sv[1].recv(1)
cl[3].send(b"c")
print("two_own", names(b.poll(2.0), fdname), names(a.poll(0.05), fdname))
sv[3].recv(1)

# Edge-triggered and one-shot in a set of their own.
e = select.epoll()
e.register(sv[0].fileno(), select.EPOLLIN | select.EPOLLET)
e.register(sv[2].fileno(), select.EPOLLIN | select.EPOLLONESHOT)
cl[0].send(b"d")
cl[2].send(b"e")
print("et_first", names(e.poll(2.0), fdname))
print("et_again", names(e.poll(0.05), fdname))
cl[0].send(b"f")
cl[2].send(b"g")
print("et_more", names(e.poll(2.0), fdname))
e.modify(sv[2].fileno(), select.EPOLLIN | select.EPOLLONESHOT)
print("oneshot_mod", names(e.poll(2.0), fdname))
sv[0].recv(2)
sv[2].recv(2)

# A set shared by fork: the child's copy sees a change made after it.
pid = os.fork()
if pid == 0:
    r = names(w.poll(5.0), fdname)
    os.write(go_w, (r + "\n").encode())
    os._exit(0)
time.sleep(0.1)
cl[3].send(b"h")
os.waitpid(pid, 0)
print("fork_child", os.read(go_r, 100).decode().strip())
sv[3].recv(1)
