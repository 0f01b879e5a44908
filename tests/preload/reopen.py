# SPDX-License-Identifier: BSD-2-Clause
"""A socket opened again by its /proc or /dev name: ENXIO on Linux (a
socket has no open()), never a wait.  One line a path, the same on the
kernel and under sluice run (tests/host/test_conform_raw.sh)."""
import errno
import os
import socket

def try_open(name, path):
    try:
        fd = os.open(path, os.O_RDONLY)
        print(name, "opened")
        os.close(fd)
    except OSError as e:
        print(name, errno.errorcode[e.errno])

for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    k = "tcp" if kind == socket.SOCK_STREAM else "udp"
    try_open(k + "_proc_self", "/proc/self/fd/%d" % s.fileno())
    try_open(k + "_dev_fd", "/dev/fd/%d" % s.fileno())
    try_open(k + "_proc_pid", "/proc/%d/fd/%d" % (os.getpid(), s.fileno()))
    os.dup2(s.fileno(), 0)
    try_open(k + "_dev_stdin", "/dev/stdin")
    s.close()
with open("/proc/self/status") as f:
    print("other_proc_file", "read" if f.read() else "empty")
