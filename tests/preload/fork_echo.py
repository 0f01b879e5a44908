# SPDX-License-Identifier: BSD-2-Clause
# A forking echo server (socketserver.ForkingTCPServer): each connection is
# answered by a child process, which prefixes its pid.
#   fork_echo.py PORT READY_FILE
import os
import socketserver
import sys


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline()
        self.wfile.write(b"%d " % os.getpid() + line)


class Server(socketserver.ForkingTCPServer):
    allow_reuse_address = True


srv = Server(("127.0.0.1", int(sys.argv[1])), Handler)
with open(sys.argv[2], "w") as f:
    f.write("%d\n" % os.getpid())
srv.serve_forever(poll_interval=0.1)
