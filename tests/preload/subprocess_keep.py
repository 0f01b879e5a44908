# SPDX-License-Identifier: BSD-2-Clause
# Sockets stay usable after subprocess (vfork + close_range in the child).
import socket, subprocess
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
for i in range(3):
    subprocess.run(["/bin/true"], close_fds=True, check=True)
c.sendall(b"after-subprocess"); print(a.recv(100).decode())
