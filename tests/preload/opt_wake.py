# SPDX-License-Identifier: BSD-2-Clause
# opt_wake.py poll|epoll|epollet: a TCP socket holds 10 bytes under an
# SO_RCVLOWAT of 100, so it is not readable; one thread sleeps on it (poll,
# or an epoll set, level- or edge-triggered) while another, 0.3 s later,
# lowers the mark to 1.  Linux wakes the sleeper at the setsockopt
# (tcp_set_rcvlowat() calls tcp_data_ready()): print "late_ms N", how long
# after the setsockopt the sleeper returned, and "events K", what it got
# (and "before K": what a look before the change found, 0).
import select, socket, sys, threading, time

mode = sys.argv[1]
lst = socket.socket()
lst.bind(("127.0.0.1", 0))
lst.listen(1)
c = socket.create_connection(lst.getsockname())
a, _ = lst.accept()
a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 100)
a.setblocking(False)
c.sendall(b"x" * 10)
time.sleep(0.1)
if mode == "poll":
    p = select.poll()
    p.register(a, select.POLLIN)
    look = p.poll
else:
    ep = select.epoll()
    ep.register(a, select.EPOLLIN | (select.EPOLLET if mode == "epollet" else 0))
    look = lambda ms: ep.poll(ms / 1000.0)
print("before", len(look(50)))
at = []


def lower():
    time.sleep(0.3)
    at.append(time.monotonic())
    a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)


t = threading.Thread(target=lower)
t.start()
got = look(3000)
end = time.monotonic()
t.join()
print("events", len(got))
print("late_ms", int((end - at[0]) * 1000) if at else -1)
