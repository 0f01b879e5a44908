# SPDX-License-Identifier: BSD-2-Clause
# A pre-forking server: one listener, four children each accepting in a
# loop (blocking accept in every child); 40 clients from the parent.  Prints
# how many answers came back and from how many of the children.
import os
import socket
import sys

lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind(("127.0.0.1", 0))
lst.listen(64)
port = lst.getsockname()[1]
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        while True:
            a, _ = lst.accept()
            data = a.recv(100)
            a.sendall(b"%d:" % os.getpid() + data)
            a.close()
    kids.append(pid)
lst.close()
answers = []
for i in range(40):
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(b"q%d" % i)
    answers.append(c.recv(100).decode())
    c.close()
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
good = sum(1 for i, a in enumerate(answers) if a.endswith(":q%d" % i))
served_by = len({a.split(":")[0] for a in answers} & {str(k) for k in kids})
print("answers", good, "children", served_by)
sys.stdout.flush()
