# SPDX-License-Identifier: BSD-2-Clause
# A client killed by SIGKILL holding a connection: the server sees the end
# of the stream (on the kernel: at once; on Sluice: when the stack's sweep
# finds the socket nobody holds), within 5 s.
import os
import signal
import socket
import time

lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(1)
pid = os.fork()
if pid == 0:
    c = socket.create_connection(lst.getsockname())
    c.sendall(b"x")
    time.sleep(60)
    os._exit(0)
a, _ = lst.accept()
a.settimeout(5)
print("got", a.recv(1).decode())
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
t0 = time.monotonic()
try:
    print("eof", a.recv(1) == b"", time.monotonic() - t0 < 5)
except socket.timeout:
    print("eof timeout")
