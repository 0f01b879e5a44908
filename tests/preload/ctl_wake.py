# SPDX-License-Identifier: BSD-2-Clause
# ctl_wake.py [mixed]: one thread sleeps (no timeout) in epoll_wait on a set
# holding one UDP socket (and with "mixed" a pipe's read end too); another
# thread, 0.3 s later, adds a second UDP socket that already holds a
# datagram.  Linux wakes the sleeper at the add (the fd is ready): print
# "late_ms N", how long after the add the sleeper returned, and what it got.
import os, select, socket, sys, threading, time

mixed = len(sys.argv) > 1 and sys.argv[1] == "mixed"
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a.bind(("127.0.0.1", 0))
ep = select.epoll()
ep.register(a, select.EPOLLIN)
if mixed:
    rd, wr = os.pipe()
    ep.register(rd, select.EPOLLIN)
added = []


def adder():
    time.sleep(0.3)
    b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    b.bind(("127.0.0.1", 0))
    o = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    o.sendto(b"x", b.getsockname())
    time.sleep(0.05)  # the datagram is in; nothing changes after the add
    added.append((b, o))
    t = time.monotonic()
    ep.register(b, select.EPOLLIN)
    added.append(t)


th = threading.Thread(target=adder)
th.start()
ev = ep.poll(5)
woke = time.monotonic()
th.join()
b = added[0][0]
print("events %s" % ("b" if [fd for fd, _ in ev] == [b.fileno()] else repr(ev)))
print("late_ms %d" % max(0, int((woke - added[1]) * 1000)))
