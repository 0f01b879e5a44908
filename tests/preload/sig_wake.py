# SPDX-License-Identifier: BSD-2-Clause
# sig_wake.py recv|poll|epoll: block on a TCP connection (both ends ours, no
# data ever comes) in recv(), poll() or an epoll set, with a SIGALRM due in
# 0.3 s whose handler raises; print how late the handler ran, in ms.  A
# wait that sleeps through a signal shows up here (the kernel: ~0).
import select, signal, socket, sys, time

mode = sys.argv[1]
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(1)
c = socket.create_connection(lst.getsockname())
a, _ = lst.accept()
due = [0.0]
late = []


class Alarm(Exception):
    pass


def handler(sig, frame):
    late.append((time.monotonic() - due[0]) * 1000)
    raise Alarm()


signal.signal(signal.SIGALRM, handler)
for _ in range(5):
    due[0] = time.monotonic() + 0.3
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        if mode == "recv":
            a.recv(1)
        elif mode == "poll":
            p = select.poll()
            p.register(a, select.POLLIN)
            p.poll(-1)
        else:
            p = select.epoll()
            p.register(a, select.EPOLLIN)
            p.poll(-1)
    except Alarm:
        pass
print("late_ms %.1f" % max(late), flush=True)
