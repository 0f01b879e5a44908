# SPDX-License-Identifier: BSD-2-Clause
# A connection whose fd a child process came to hold outlives the
# parent's close(), as on Linux: the child writes a line on it after
# 0.3 s, and the peer sees the end of the stream only when the child
# exits.  One way a child comes to hold it each: posix_spawn() with a dup2
# file action, system() (a background shell), subprocess (vfork, exec),
# fork() and exec, fork() alone.  Under Sluice each socket starts private
# to its process (lib/preload/fdtable.c) and must be made shared first.
import os
import socket
import subprocess
import sys
import time


def pair():
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(4)
    c = socket.create_connection(lst.getsockname(), timeout=10)
    a, _ = lst.accept()
    a.settimeout(10)
    lst.close()
    return c, a


def line(name, fd):
    # Python, not sh: dash takes only fds 0-9 in ">&N", and the library's
    # own descriptors may push a socket's number past them.
    return "%s -c 'import os, time; time.sleep(0.3); os.write(%d, b\"%s\\n\")'" % (
        sys.executable, fd, name)


def spawn(fd):
    return os.posix_spawn("/bin/sh", ["sh", "-c", line("posix_spawn", 3)], os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, fd, 3)])


def system(fd):
    os.set_inheritable(fd, True)
    os.system("(%s) &" % line("system", fd))
    return None


def popen(fd):
    return subprocess.Popen(["sh", "-c", line("subprocess", fd)], pass_fds=(fd,))


def fork_exec(fd):
    os.set_inheritable(fd, True)
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/sh", ["sh", "-c", line("fork-exec", fd)])
    return pid


def fork_only(fd):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.3)
        os.write(fd, b"fork\n")
        os._exit(0)
    return pid


for start in (spawn, system, popen, fork_exec, fork_only):
    c, a = pair()
    t0 = time.monotonic()
    child = start(c.fileno())
    c.close()
    data = b""
    while True:
        d = a.recv(100)
        if not d:
            break
        data += d
    late = time.monotonic() - t0 >= 0.25
    if isinstance(child, subprocess.Popen):
        child.wait()
    elif child:
        os.waitpid(child, 0)
    print(start.__name__, data.decode().strip() or "-", "eof-after-child" if late else "eof-early")
    a.close()
sys.stdout.flush()
