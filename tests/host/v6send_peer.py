#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# The kernel peer of tests/preload/v6send.c (tests/host/test_ipv6_send.sh):
#   v6send_peer.py DEV PEER PEER2 ME PORT SECONDS
# On PEER: UDP PORT (taken, so nothing is unreachable), UDP PORT + 1 (prints each datagram's size), TCP PORT + 2
# (on both addresses; prints each connection's byte count), UDP PORT + 3
# (a trigger).  On DEV
# an AF_PACKET capture of IPv6 from ME prints what the sender's packets
# carry: traffic class, hop limit, sizes, fragment headers.  It answers
#   - the first unfragmented UDP datagram to PORT + 1 larger than 1280
#     bytes with a Packet Too Big (MTU 1280) quoting it;
#   - a datagram to PORT + 3 with a Packet Too Big (MTU 1280) quoting a
#     1500-byte TCP segment at the sequence number after the last TCP
#     data it saw (so between SND.UNA and SND.NXT once all is acked).
# A datagram to PORT + 5 (from the program's PORT + 4) is answered by
# 3000 bytes from a UDP socket (in fragments: the link's MTU is 1500), then
# crafted fragments (crafted() says which), the payload a pattern the
# program checks.
# Every line is printed when it happens; exits after SECONDS, or soon
# after "bye" to PORT + 3.
import select
import socket
import struct
import sys
import time

dev, peer, peer2, me, port, secs = (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
                                    int(sys.argv[5]), float(sys.argv[6]))
P = socket.inet_pton(socket.AF_INET6, peer)
P2 = socket.inet_pton(socket.AF_INET6, peer2)
M = socket.inet_pton(socket.AF_INET6, me)


def out(*w):
    print(*w, flush=True)


cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x86dd))
cap.bind((dev, 0))
u0 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u0.bind((peer, port))
u1 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u1.bind((peer, port + 1))
u3 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u3.bind((peer, port + 3))
lt = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
lt.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lt.bind(("::", port + 2))
lt.listen(4)
raw = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
raw.bind((peer, 0))
u5 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u5.bind((peer, port + 5))
hdrinc = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def pattern(n):
    return bytes(i % 251 for i in range(n))


def udp6(sport, dport, payload):
    n = 8 + len(payload)
    c = csum(P + M + struct.pack("!I3xB", n, 17) + struct.pack("!HHHH", sport, dport, n, 0) +
             payload) or 0xffff
    return struct.pack("!HHHH", sport, dport, n, c) + payload


def frags(dg, ident, cuts):
    # cuts: (start, end, more); the IPv6 header written here (IPPROTO_RAW).
    for a, b, m in cuts:
        body = struct.pack("!BBHI", 17, 0, a | m, ident) + dg[a:b]
        hdrinc.sendto(struct.pack("!IHBB", 6 << 28, len(body), 44, 64) + P + M + body, (me, 0))


def crafted(dport):
    # Overlapping (the second starts 8 bytes inside the first): dropped.
    dg = udp6(port + 5, dport, pattern(200))
    frags(dg, 0x5101, [(0, 128, 1), (120, len(dg), 0)])
    # Whole in two.
    dg = udp6(port + 5, dport, pattern(100))
    frags(dg, 0x5102, [(0, 56, 1), (56, len(dg), 0)])
    # A length not a multiple of 8 with more to come: parameter problem.
    dg = udp6(port + 5, dport, pattern(100))
    frags(dg, 0x5103, [(0, 13, 1)])
    # A duplicate first fragment: dropped alone, the datagram whole.
    dg = udp6(port + 5, dport, pattern(60))
    frags(dg, 0x5104, [(0, 40, 1), (0, 40, 1), (40, len(dg), 0)])
out("ready")

conns = {}
ptb_udp_done = False
tcp_next = None
after_ptb = False
tcp_max_after = 0


def ptb(quote):
    msg = struct.pack("!BBHI", 2, 0, 0, 1280) + quote[:1232]
    raw.sendto(msg, (me, 0))


end = time.time() + secs
while time.time() < end:
    rd = [cap, u0, u1, u3, u5, lt] + list(conns)
    r, _, _ = select.select(rd, [], [], 0.1)
    for s in r:
        if s is u0:
            u0.recv(65536)
        elif s is u5:
            _, w = u5.recvfrom(100)
            u5.sendto(pattern(3000), w)
            time.sleep(0.1)
            crafted(w[1])
        elif s is u1:
            d = u1.recv(65536)
            out("udp got", len(d))
        elif s is u3:
            if u3.recv(100) == b"bye":
                end = min(end, time.time() + 0.3)
            elif tcp_next is not None:
                # A 1500-byte segment at tcp_next: IPv6 header, TCP header.
                ip = struct.pack("!IHBB", 6 << 28, 1460, 6, 64) + M + tcp_dst
                th = struct.pack("!HHIIBBHHH", tcp_sport, port + 2, tcp_next, 0, 5 << 4, 0x10,
                                 1000, 0, 0)
                ptb(ip + th + b"\0" * 100)
                after_ptb = True
                out("ptb sent for tcp")
        elif s is lt:
            c, _ = lt.accept()
            conns[c] = 0
        elif s in conns:
            d = s.recv(65536)
            if d:
                conns[s] += len(d)
            else:
                out("tcp got", conns.pop(s))
                s.close()
        else:
            f = cap.recv(70000)
            ip = f[14:]
            if len(ip) < 48 or ip[8:24] != M or ip[24:40] not in (P, P2):
                continue
            w = struct.unpack("!I", ip[:4])[0]
            tc, hl, nxt, plen = (w >> 20) & 0xff, ip[7], ip[6], struct.unpack("!H", ip[4:6])[0]
            hdr = "tclass=0x%02x hlim=%d" % (tc, hl)
            if nxt == 17:
                dport = struct.unpack("!H", ip[42:44])[0]
                if dport == port:
                    out("cap udp", plen, hdr)
                elif dport == port + 1:
                    out("cap udp+1", plen, hdr)
                    if plen > 1240 and not ptb_udp_done:
                        ptb_udp_done = True
                        ptb(ip)
                        out("ptb sent for udp")
            elif nxt == 58 and 1 <= ip[40] <= 4:
                out("cap icmp6 type=%d code=%d data=%d" % (ip[40], ip[41],
                                                           struct.unpack("!I", ip[44:48])[0]), hdr)
            elif nxt == 44:
                fo = struct.unpack("!H", ip[42:44])[0]
                out("cap frag nxt=%d off=%d m=%d plen=%d" % (ip[40], fo & ~7, fo & 1, plen), hdr)
            elif nxt == 6:
                sport, dport, seq = struct.unpack("!HHI", ip[40:48])
                doff = (ip[52] >> 4) * 4
                flags = ip[53]
                pay = plen - doff
                if dport != port + 2:
                    continue
                if flags & 0x02:
                    out("cap tcp-syn", hdr)
                if pay > 0:
                    tcp_sport = sport
                    tcp_dst = ip[24:40]
                    tcp_next = (seq + pay) & 0xffffffff
                    if after_ptb:
                        tcp_max_after = max(tcp_max_after, plen + 40)
for c in conns:
    out("tcp got", conns[c])
out("tcp largest packet after ptb:", "1280 or less" if tcp_max_after <= 1280 else tcp_max_after)
