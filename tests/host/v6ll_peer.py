# SPDX-License-Identifier: BSD-2-Clause
"""The kernel peer of tests/preload/v6ll.c (tests/host/test_ipv6_ll.sh).

v6ll_peer.py DEV ME PORT SECONDS: echoes TCP on PORT and UDP on PORT + 1,
each reply "tcp|udp from WHO: DATA" (WHO: ME%DEV if the sender is ME on
DEV's index, else the address and scope as seen); a datagram "back P" to
PORT + 2 makes it connect to the sender's TCP port P (sending "hi from
peer") and send a datagram "dgram from peer" to its UDP port P.  Stops
after SECONDS.
"""
import socket
import sys
import threading
import time

dev, me, port, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
ifx = socket.if_nametoindex(dev)


def who(a):
    if a[0].split('%')[0] == me and a[3] == ifx:
        return "ME%DEV"
    return "%s scope %d" % (a[0], a[3])


def tcp_conn(c, a):
    c.settimeout(5)
    try:
        d = c.recv(100)
        c.sendall(b"tcp from " + who(a).encode() + b": " + d)
    except OSError:
        pass
    c.close()


def tcp_loop(l):
    while True:
        c, a = l.accept()
        threading.Thread(target=tcp_conn, args=(c, a), daemon=True).start()


def udp_loop(u):
    while True:
        d, a = u.recvfrom(2000)
        u.sendto(b"udp from " + who(a).encode() + b": " + d, a)


def ctl_loop(u):
    while True:
        d, a = u.recvfrom(2000)
        p = int(d.split()[1])
        dst = (a[0], p, 0, a[3])
        try:
            c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
            c.settimeout(5)
            c.connect(dst)
            c.sendall(b"hi from peer")
            time.sleep(0.2)
            c.close()
        except OSError as e:
            print("back connect", e, flush=True)
        s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s.sendto(b"dgram from peer", dst)
        s.close()


l = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("::", port))
l.listen(16)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.bind(("::", port + 1))
c = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
c.bind(("::", port + 2))
for f, a in ((tcp_loop, l), (udp_loop, u), (ctl_loop, c)):
    threading.Thread(target=f, args=(a,), daemon=True).start()
print("ready", flush=True)
time.sleep(secs)
