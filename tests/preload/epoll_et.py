# SPDX-License-Identifier: BSD-2-Clause
# An edge-triggered epoll echo server (non-blocking, reads until EAGAIN) in
# a child process, and 50 concurrent connections from the parent, each
# sending 20 messages and reading every echo back.
import os
import select
import socket
import sys

N, M = 50, 20
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(128)
lst.setblocking(False)
port = lst.getsockname()[1]
pid = os.fork()
if pid == 0:
    ep = select.epoll()
    ep.register(lst.fileno(), select.EPOLLIN | select.EPOLLET)
    conns = {}
    while True:
        for fd, ev in ep.poll(1.0):
            if fd == lst.fileno():
                while True:
                    try:
                        a, _ = lst.accept()
                    except BlockingIOError:
                        break
                    a.setblocking(False)
                    conns[a.fileno()] = a
                    ep.register(a.fileno(), select.EPOLLIN | select.EPOLLET)
                continue
            a = conns[fd]
            while True:
                try:
                    d = a.recv(4096)
                except BlockingIOError:
                    break
                if not d:
                    ep.unregister(fd)
                    a.close()
                    del conns[fd]
                    break
                a.sendall(d)
cs = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(N)]
ok = 0
for r in range(M):
    for i, c in enumerate(cs):
        c.sendall(b"%04d-%04d;" % (i, r))
    for i, c in enumerate(cs):
        want = b"%04d-%04d;" % (i, r)
        got = b""
        while len(got) < len(want):
            got += c.recv(len(want) - len(got))
        ok += got == want
for c in cs:
    c.close()
os.kill(pid, 9)
os.waitpid(pid, 0)
print("echoes", ok, "of", N * M)
sys.stdout.flush()
