# SPDX-License-Identifier: BSD-2-Clause
# chan_wake.py poll|epoll [mixed]: sleep (no timeout) on two UDP sockets while
# another process sends 200 datagrams, 1 ms apart, to a third socket of
# the same process, then one to the second socket.  Print "ctxsw N": the
# voluntary context switches of the wait, that is how often the sleeper
# was woken.  The kernel wakes a sleeper for its own sockets only (~1);
# a sleeper woken by every change in the stack shows ~200.  The set is
# made after the fork, as a thread's own set is.  With "mixed" the set
# also holds a pipe's read end (a kernel fd: the waiter then sleeps in the
# kernel with its bell, run/bell.c).
import os, select, socket, sys, time

mode = sys.argv[1]
mixed = len(sys.argv) > 2 and sys.argv[2] == "mixed"
rd, wr = os.pipe()
socks = []
for _ in range(3):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
a, b, c = socks


def vol():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                return int(line.split()[1])


pid = os.fork()
if pid == 0:
    o = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    time.sleep(0.2)
    for _ in range(200):
        o.sendto(b"x", c.getsockname())
        time.sleep(0.001)
    o.sendto(b"y", b.getsockname())
    os._exit(0)
if mode == "epoll":
    p = select.epoll()
    p.register(a, select.EPOLLIN)
    p.register(b, select.EPOLLIN)
    if mixed:
        p.register(rd, select.EPOLLIN)
else:
    p = select.poll()
    p.register(a, select.POLLIN)
    p.register(b, select.POLLIN)
    if mixed:
        p.register(rd, select.POLLIN)
v0 = vol()
ev = p.poll(-1)
v1 = vol()
os.waitpid(pid, 0)
got = b.recv(8)
print("ready %d %s" % (len(ev), got.decode()))
print("ctxsw %d" % (v1 - v0))
