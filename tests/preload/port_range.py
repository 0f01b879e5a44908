# SPDX-License-Identifier: BSD-2-Clause
# port_range.py PORT LO HI RESERVED: listen on 127.0.0.1:PORT, then connect
# to it and keep every connection open until connect() fails; print
# "connections N error E in_range R reserved_used U" (R: every local port
# within LO..HI, U: one was RESERVED).  Run on the kernel and under
# `sluice run` with net.ipv4.ip_local_port_range LO HI and
# ip_local_reserved_ports RESERVED: the two must print the same line.
import errno, socket, sys

port, lo, hi, reserved = (int(a) for a in sys.argv[1:5])
lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind(("127.0.0.1", port))
lst.listen(4096)
held, err = [], "none"
in_range, used = True, False
while len(held) < 70000:
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        c.connect(("127.0.0.1", port))
    except OSError as e:
        err = errno.errorcode.get(e.errno, str(e.errno))
        break
    p = c.getsockname()[1]
    in_range &= lo <= p <= hi
    used |= p == reserved
    held.append(c)
print("connections %d error %s in_range %s reserved_used %s" % (len(held), err, in_range, used))
