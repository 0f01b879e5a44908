# SPDX-License-Identifier: BSD-2-Clause
# A connected socket passed to another process with SCM_RIGHTS (over an
# AF_UNIX socketpair, which stays in the kernel): the receiver sends on it,
# the sender closes its own copy first.
import os
import socket

u1, u2 = socket.socketpair()
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(1)
c = socket.create_connection(lst.getsockname(), timeout=10)
a, _ = lst.accept()
pid = os.fork()
if pid == 0:
    msg, fds, _, _ = socket.recv_fds(u2, 10, 1)
    s = socket.socket(fileno=fds[0])
    s.sendall(b"via-scm-" + msg)
    s.close()
    os._exit(0)
socket.send_fds(u1, [b"rights"], [a.fileno()])
a.close()
os.waitpid(pid, 0)
got = b""
while True:
    d = c.recv(100)
    if not d:
        break
    got += d
print(got.decode(), "eof")
