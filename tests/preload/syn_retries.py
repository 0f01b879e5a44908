# SPDX-License-Identifier: BSD-2-Clause
# syn_retries.py: a listener with backlog 0 holding one connection nobody
# accepts, and a blocking connect() to it; print how it ended and when.
# With net.ipv4.tcp_syn_retries 2 Linux gives up after 1 + 2 + 4 s.
import socket, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
a = socket.create_connection(l.getsockname())
c = socket.socket(); t0 = time.time()
try:
    c.connect(l.getsockname()); r = "connected"
except OSError as e:
    r = e.strerror
print("%s after %.1f" % (r, time.time() - t0))
