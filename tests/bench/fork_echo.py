# SPDX-License-Identifier: BSD-2-Clause
"""A forking server as a new user writes one: socketserver's
ForkingTCPServer on 127.0.0.1:PORT, a child a connection, which reads one
byte and writes it back (conn_churn's client is its client).  Prints
"ready" once listening; runs until killed.

    python3 tests/bench/fork_echo.py PORT
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
