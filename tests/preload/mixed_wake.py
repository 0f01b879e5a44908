# SPDX-License-Identifier: BSD-2-Clause
# mixed_wake.py poll|epoll: sleep (no timeout) in poll(2) or an epoll set
# holding a listening TCP socket and a pipe's read end, while another
# process, 0.3 s later, first connects to the listener, then (the next
# round) writes to the pipe.  Print how late each wake-up was, in ms:
# "late_ms SOCKET PIPE" (the kernel: ~0).  A mixed sleeper that misses the
# other process's change sleeps until its bound (a second on an idle
# stack, run/bell.c) and shows up here.
import os, select, socket, sys, time

mode = sys.argv[1]
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(4)
rd, wr = os.pipe()
trd, twr = os.pipe()  # the other process's times
if mode == "epoll":
    p = select.epoll()
    p.register(lst, select.EPOLLIN)
    p.register(rd, select.EPOLLIN)
    wait = lambda: p.poll(-1)
else:
    p = select.poll()
    p.register(lst, select.POLLIN)
    p.register(rd, select.POLLIN)
    wait = lambda: p.poll(-1)
pid = os.fork()
if pid == 0:
    time.sleep(0.3)
    c = socket.create_connection(lst.getsockname())
    os.write(twr, b"%.6f\n" % time.monotonic())
    time.sleep(0.3)
    os.write(twr, b"%.6f\n" % time.monotonic())
    os.write(wr, b"x")
    time.sleep(0.2)
    os._exit(0)
late = []
for what in ("socket", "pipe"):
    wait()
    woke = time.monotonic()
    t = float(os.read(trd, 64).split(b"\n")[0])
    late.append(max(0.0, (woke - t) * 1000))
    if what == "socket":
        a, _ = lst.accept()
os.waitpid(pid, 0)
print("late_ms %.1f %.1f" % tuple(late), flush=True)
