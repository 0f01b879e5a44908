# SPDX-License-Identifier: BSD-2-Clause
# A listening socket survives exec: the parent listens, marks the socket
# inheritable and execs itself; the new program takes the fd over, connects
# to it and accepts (both under the same library, or both on the kernel).
#   exec_inherit.py            (parent)
#   exec_inherit.py child FD   (after exec)
import os
import socket
import sys

if len(sys.argv) == 1:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    s.set_inheritable(True)
    os.execv(sys.executable, [sys.executable, sys.argv[0], "child", str(s.fileno())])

fd = int(sys.argv[2])
lst = socket.socket(fileno=fd)
port = lst.getsockname()[1]
c = socket.create_connection(("127.0.0.1", port), timeout=5)
a, _ = lst.accept()
a.sendall(b"inherited")
print(c.recv(100).decode(), port != 0)
