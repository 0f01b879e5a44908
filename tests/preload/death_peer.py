# SPDX-License-Identifier: BSD-2-Clause
# death_peer.py server MODE DIR N | victim DIR N:
# the server listens on 127.0.0.1 (under sluice run the listener has a
# kernel twin), writes DIR/port, accepts N connections and waits, with no
# timeout (MODE:MS: in a loop of waits of MS ms each), in MODE: poll or epoll on the listener and the connections,
# mixed-poll or mixed-epoll with a pipe's read end beside them (a kernel
# fd), or accept (a blocking accept() on the listener alone).  The victim
# connects N times, writes DIR/victim and sleeps until killed.  Once a
# connection reads EOF or a reset the server writes DIR/seen: "EOF|RST
# SECONDS" (the time of day).
import errno, os, select, socket, sys, time

role, args = sys.argv[1], sys.argv[2:]

if role == "victim":
    d, n = args[0], int(args[1])
    port = int(open(os.path.join(d, "port")).read())
    cs = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
    for c in cs:
        c.sendall(b"x")
    open(os.path.join(d, "victim"), "w").write(str(os.getpid()))
    while True:
        time.sleep(60)

mode, d, n = args[0], args[1], int(args[2])
mode, _, tmo = mode.partition(":")
tmo = int(tmo) if tmo else -1
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.bind(("127.0.0.1", 0))
lst.listen(64)
open(os.path.join(d, "port.tmp"), "w").write(str(lst.getsockname()[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
conns = []
for _ in range(n):
    a, _ = lst.accept()
    a.recv(1)
    conns.append(a)
rd, wr = os.pipe()
open(os.path.join(d, "waiting"), "w").close()


def seen(fd):
    c = next(x for x in conns if x.fileno() == fd)
    try:
        what = "EOF" if c.recv(1) == b"" else "DATA"
    except ConnectionResetError:
        what = "RST"
    except OSError as e:
        what = errno.errorcode.get(e.errno, str(e.errno))
    # written whole, then renamed: the harness polls for the file and reads
    # it at once (an empty file seen between open and write read as none)
    open(os.path.join(d, "seen.tmp"), "w").write("%s %.6f\n" % (what, time.time()))
    os.rename(os.path.join(d, "seen.tmp"), os.path.join(d, "seen"))


fds = [c.fileno() for c in conns]
if mode == "accept":
    lst.accept()    # nobody connects: only the caller's kill ends it
elif mode.endswith("epoll"):
    p = select.epoll()
    p.register(lst, select.EPOLLIN)
    for f in fds:
        p.register(f, select.EPOLLIN)
    if mode.startswith("mixed"):
        p.register(rd, select.EPOLLIN)
    while True:
        ev = [f for f, _ in p.poll(tmo / 1000 if tmo >= 0 else -1) if f in fds]
        if ev:
            seen(ev[0])
            break
else:
    p = select.poll()
    p.register(lst, select.POLLIN)
    for f in fds:
        p.register(f, select.POLLIN)
    if mode.startswith("mixed"):
        p.register(rd, select.POLLIN)
    while True:
        ev = [f for f, _ in p.poll(tmo) if f in fds]
        if ev:
            seen(ev[0])
            break
time.sleep(30)
