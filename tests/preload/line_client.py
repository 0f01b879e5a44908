# SPDX-License-Identifier: BSD-2-Clause
# Send one line to 127.0.0.1:PORT, print the line that comes back.
#   line_client.py PORT TEXT
import socket
import sys

with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as s:
    s.sendall(sys.argv[2].encode() + b"\n")
    f = s.makefile("rb")
    sys.stdout.write(f.readline().decode())
