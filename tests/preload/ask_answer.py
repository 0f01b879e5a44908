# SPDX-License-Identifier: BSD-2-Clause
# ask_answer.py [ROUNDS]: request and reply over one TCP connection between
# two processes, each end looking for the other's answer right after its
# own send, before it sleeps in poll(), as libpq's PQconsumeInput() after
# a query and a PostgreSQL backend's read after its reply do (the client
# with MSG_DONTWAIT, the server on an O_NONBLOCK socket).  Prints
# "rounds N ok" when every reply matched its request.  Under sluice run
# the stack's rx_backoff counter then tells how many of those looks paused
# as a spinner's would (tests/host/test_preload.sh).
import os, select, socket, sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 500
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.bind(("127.0.0.1", 0))
ls.listen(1)
addr = ls.getsockname()


def after_send(s, flags):
    """The look right after a send: nothing there yet, as a rule."""
    try:
        return s.recv(64, flags)
    except BlockingIOError:
        return b""


pid = os.fork()
if pid == 0:
    c, _ = ls.accept()
    c.setblocking(False)
    p = select.poll()
    p.register(c, select.POLLIN)
    q = b""
    while True:
        if not q:
            p.poll()
            q = c.recv(64)
            if not q:
                os._exit(0)
        c.send(b"re:" + q)
        # Usually nothing; the client's next request if it was quick.
        q = after_send(c, 0)
ls.close()
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.connect(addr)
p = select.poll()
p.register(s, select.POLLIN)
ok = 0
for i in range(rounds):
    q = b"q%d" % i
    s.send(q)
    a = after_send(s, socket.MSG_DONTWAIT)
    while len(a) < len(q) + 3:
        p.poll()
        got = s.recv(64)
        if not got:
            break
        a += got
    ok += a == b"re:" + q
s.close()
_, st = os.waitpid(pid, 0)
print("rounds %d %s" % (ok, "ok" if ok == rounds and st == 0 else "bad"))
