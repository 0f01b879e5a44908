# SPDX-License-Identifier: BSD-2-Clause
# idle_conns.py N READY_FILE SECONDS [poll|epoll|mixed-poll|mixed-epoll]:
# connect N TCP connections to our own listener on 127.0.0.1, then sit idle
# in poll(2) (or an epoll set) holding the listener (and, mixed, a pipe's
# read end: a kernel fd beside the Sluice one) with a 100 ms timeout for
# SECONDS (tests/host/test_idle_syscalls.sh counts the system calls
# meanwhile).
import os, select, socket, sys, time

n, ready, secs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
mode = sys.argv[4] if len(sys.argv) > 4 else "poll"
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(1024)
conns = []
for _ in range(n):
    c = socket.create_connection(lst.getsockname())
    a, _ = lst.accept()
    conns.append((c, a))
print("open", len(conns), flush=True)
rd, wr = os.pipe()
if mode.endswith("epoll"):
    p = select.epoll()
    p.register(lst, select.EPOLLIN)
    if mode.startswith("mixed"):
        p.register(rd, select.EPOLLIN)
    wait = lambda: p.poll(0.1)
else:
    p = select.poll()
    p.register(lst, select.POLLIN)
    if mode.startswith("mixed"):
        p.register(rd, select.POLLIN)
    wait = lambda: p.poll(100)
open(ready, "w").close()
end = time.monotonic() + secs
while time.monotonic() < end:
    wait()
print("done", flush=True)
