# SPDX-License-Identifier: BSD-2-Clause
# idle_conns.py N READY_FILE SECONDS [poll|epoll]: connect N TCP connections
# to our own listener on 127.0.0.1, then sit idle in poll(2) (or an epoll
# set holding the listener) with a 100 ms timeout for SECONDS
# (tests/host/test_idle_syscalls.sh counts the system calls meanwhile).
import select, socket, sys, time

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
if mode == "epoll":
    p = select.epoll()
    p.register(lst, select.EPOLLIN)
    wait = lambda: p.poll(0.1)
else:
    p = select.poll()
    p.register(lst, select.POLLIN)
    wait = lambda: p.poll(100)
open(ready, "w").close()
end = time.monotonic() + secs
while time.monotonic() < end:
    wait()
print("done", flush=True)
