# SPDX-License-Identifier: BSD-2-Clause
# OS-backed listeners (lib/preload/twin.c) under sluice run: what the
# program sees of the kernel twin, and forked servers.  Kernel clients are
# AF_INET6 sockets to ::ffff:127.0.0.1 (they stay in the kernel); AF_INET
# ones are the stack's.
#   os_listen.py fds      the twin is the library's: close() EBADF, a
#                         dup2() onto its number keeps it listening;
#                         shutdown(SHUT_RD) and close() of the listener
#                         stop it (a listen() again starts it again), and
#                         a close frees the port for the kernel
#   os_listen.py daemon   listen, fork, the parent exits; the child (with
#                         no watcher inherited) serves 3 connections; the
#                         port is printed first
#   os_listen.py prefork  4 children in blocking accept(); 20 kernel and
#                         20 stack clients from the parent
import errno
import os
import socket
import sys

V6 = socket.AF_INET6
MAPPED = "::ffff:127.0.0.1"


def twin_fd(port):
    """The fd of this process that is the kernel socket listening on port."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            p = line.split()
            if int(p[1].split(":")[1], 16) == port and p[3] == "0A":
                inodes.add(p[9])
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return int(fd)
    return None


def kernel_client(port, msg):
    c = socket.socket(V6)
    c.settimeout(10)
    try:
        c.connect((MAPPED, port))
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    c.sendall(msg)
    return c


def fds():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    port = s.getsockname()[1]
    t = twin_fd(port)
    print("twin found", t is not None and t != s.fileno())
    try:
        os.close(t)
        print("close twin 0")
    except OSError as e:
        print("close twin", errno.errorcode[e.errno])
    r, w = os.pipe()
    os.dup2(r, t)
    print("dup2 onto twin: number now the pipe", os.read(t, 0) == b"")
    t2 = twin_fd(port)
    print("twin moved", t2 is not None and t2 != t)
    c = kernel_client(port, b"x")
    a, peer = s.accept()
    print("kernel client accepted after dup2", a.recv(1) == b"x", peer[0])
    a.close()
    c.close()
    print("getsockname", s.getsockname() == ("127.0.0.1", port))
    # Options set on the listener after listen() reach what the twin
    # accepts, as a Linux child inherits them.
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 4321)
    c = kernel_client(port, b"o")
    a, _ = s.accept()
    print("kernel connection inherits TCP_USER_TIMEOUT",
          a.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT))
    a.close()
    c.close()
    s.shutdown(socket.SHUT_RD)
    print("after shutdown(SHUT_RD): kernel client", kernel_client(port, b"y"))
    # Listening again (Linux: a port the kernel chose was let go by the
    # shutdown; the stack kept it, and the twin takes it back).
    s.listen(8)
    c = kernel_client(port, b"z")
    a, _ = s.accept()
    print("listening again: kernel client accepted", a.recv(1) == b"z",
          s.getsockname()[1] == port)
    a.close()
    c.close()
    s.shutdown(socket.SHUT_RD)
    s.close()
    print("after close: kernel client", kernel_client(port, b"y"))
    print("after close: twin left", twin_fd(port))
    # The connection it accepted from the kernel waits in TIME-WAIT (the
    # server closed first): a kernel bind needs SO_REUSEADDR, as on Linux.
    print("after close: kernel bind with SO_REUSEADDR", kernel_bind(port, True))
    # A listener that never had a kernel connection: its port is free.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    port = s.getsockname()[1]
    print("listening: kernel bind", kernel_bind(port, False))
    s.close()
    print("closed: kernel bind", kernel_bind(port, False))


def kernel_bind(port, reuse):
    k = socket.socket(V6)
    if reuse:
        k.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        k.bind((MAPPED, port))
        return "0"
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        k.close()


def daemon():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    print(s.getsockname()[1], flush=True)
    if os.fork():
        os._exit(0)
    sys.stdout.close()
    for _ in range(3):
        a, _ = s.accept()
        a.sendall(a.recv(100).upper())
        a.close()


def prefork():
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(64)
    port = lst.getsockname()[1]
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            while True:
                a, _ = lst.accept()
                data = a.recv(100)
                a.sendall(b"%d:" % os.getpid() + data)
                a.close()
        kids.append(pid)
    lst.close()
    good = {"kernel": 0, "stack": 0}
    who = set()
    for i in range(40):
        side = "kernel" if i % 2 else "stack"
        msg = b"q%d" % i
        if side == "kernel":
            c = kernel_client(port, msg)
        else:
            c = socket.create_connection(("127.0.0.1", port), timeout=10)
            c.sendall(msg)
        ans = c.recv(100).decode()
        c.close()
        pid, _, body = ans.partition(":")
        if body == msg.decode():
            good[side] += 1
            who.add(pid)
    for pid in kids:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print("answers kernel %d stack %d children %d" % (good["kernel"], good["stack"], len(who)))


{"fds": fds, "daemon": daemon, "prefork": prefork}[sys.argv[1]]()
