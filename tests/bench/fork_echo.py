# SPDX-License-Identifier: BSD-2-Clause
"""A forking server as a new user writes one: socketserver's
ForkingTCPServer on 127.0.0.1:PORT, a child a connection, which reads one
byte and writes it back (conn_churn's client is its client).  Prints
"ready" once listening; runs until killed.

    python3 tests/bench/fork_echo.py PORT

Beside the kernel, in the same run (tests/bench/README.md):

    sluice run -- python3 tests/bench/fork_echo.py 7101 &
    sluice run -- build/tests/bench/conn_churn client 7101 1000 1
    python3 tests/bench/fork_echo.py 7102 &
    build/tests/bench/conn_churn client 7102 1000 1

each pair's per_s, and the server's CPU from /proc/PID/stat (utime,
stime, cutime, cstime: its reaped children) over the connections.
"""
import socketserver
import sys


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        b = self.request.recv(1)
        if b:
            self.request.sendall(b)


class Server(socketserver.ForkingTCPServer):
    allow_reuse_address = True
    request_queue_size = 128
    max_children = 64


with Server(("127.0.0.1", int(sys.argv[1])), Echo) as srv:
    print("ready", flush=True)
    srv.serve_forever()
