# SPDX-License-Identifier: BSD-2-Clause
"""Adding ready sockets to an epoll set costs O(1) each (issue 23 item 6):
N connected sockets (both ends in this process), each writable, are
added to one set with EPOLLOUT; prints the CPU time the adds took and whether
one wait reports all N.  On the kernel and under `sluice run` (where
epoll_ctl once looked at every ready item of the set at every add past
256 of them: O(N^2)).  Bounded: N connections, one 2 s wait."""
import select
import socket
import sys
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
ep = select.epoll()	# first: a set above fd 4095 holds kernel fds only
lsn = socket.socket()
lsn.bind(("127.0.0.1", 0))
lsn.listen(n)
cli, srv = [], []
for _ in range(n):
    cli.append(socket.create_connection(lsn.getsockname(), timeout=5))
    srv.append(lsn.accept()[0])
t0 = time.process_time()	# CPU: the wall clock moves with the load
for c in cli:
    ep.register(c.fileno(), select.EPOLLOUT)
t1 = time.process_time()
evs = ep.poll(2.0, n + 16)
print("info_add_cpu_secs %.4f" % (t1 - t0))
print("all_reported", "yes" if len(evs) == n else "no %d" % len(evs))
