# SPDX-License-Identifier: BSD-2-Clause
# death_sleep.py server DIR N | victim DIR N:
# every process sleeps outside the socket calls while the victim dies.
# The server listens on 127.0.0.1, writes DIR/port, accepts N connections,
# reads a byte from each, writes DIR/waiting and sleeps in read() of a
# pipe nobody writes.  The victim forks a child that sleeps (before any
# socket, so the child holds none), connects N times, writes a byte on
# each, writes its pid to DIR/victim, and sleeps in read() of the FIFO
# DIR/go: a byte "k" makes it wait in waitpid() for the child (to be
# killed there), "x" os._exit(0), "e" sys.exit(0).  server DIR N unread:
# the server also writes a byte on each connection, which the victim never
# reads (the kernel resets such a connection at the victim's death).
import os, socket, sys, time

role, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

if role == "victim":
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    port = int(open(os.path.join(d, "port")).read())
    cs = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    for c in cs:
        c.sendall(b"x")
    open(os.path.join(d, "victim.tmp"), "w").write(str(os.getpid()))
    os.rename(os.path.join(d, "victim.tmp"), os.path.join(d, "victim"))
    fd = os.open(os.path.join(d, "go"), os.O_RDONLY)
    what = os.read(fd, 1)
    if what == b"x":
        os._exit(0)
    if what == b"e":
        sys.exit(0)
    os.waitpid(child, 0)
    sys.exit(0)

lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(64)
open(os.path.join(d, "port.tmp"), "w").write(str(lst.getsockname()[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
conns = []
for _ in range(n):
    a, _ = lst.accept()
    a.recv(1)
    if sys.argv[4:] == ["unread"]:
        a.sendall(b"y")
    conns.append(a)
rd, wr = os.pipe()
open(os.path.join(d, "waiting"), "w").close()
os.read(rd, 1)
