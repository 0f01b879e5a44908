# SPDX-License-Identifier: BSD-2-Clause
#
# The programs of test_pmtu.sh, run by the kernel's stack or under
# `sluice run`: echo servers and clients, crafted fragments, an ICMP
# count.  Every mode ends by itself within its time.
import hashlib
import os
import socket
import struct
import sys
import threading
import time


def tserve(host, port, secs):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, int(port)))
    ls.listen(8)
    ls.settimeout(float(secs))
    print("ready", flush=True)

    def one(c):
        c.settimeout(60)
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                c.sendall(b)
        except OSError:
            pass
        c.close()
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            c, _ = ls.accept()
        except OSError:
            break
        threading.Thread(target=one, args=(c,), daemon=True).start()


def tclient(host, port, n, secs):
    """Send n bytes, read the echo; 'ok N' if all came back unchanged,
    and the path MTU the socket saw (IP_MTU)."""
    data = os.urandom(int(n))
    s = socket.create_connection((host, int(port)), timeout=float(secs))
    got = bytearray()

    def rd():
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got.extend(b)
        except OSError:
            pass
    t = threading.Thread(target=rd)
    t.start()
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        print("error", e)
    t.join(float(secs))
    try:
        mtu = s.getsockopt(socket.IPPROTO_IP, 14)  # IP_MTU
    except OSError as e:
        mtu = "error %d" % e.errno
    s.close()
    ok = hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    print(("ok %d" % len(got)) if ok else ("bad %d" % len(got)), "mtu", mtu)


def userve(host, port, secs):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((host, int(port)))
    u.settimeout(float(secs))
    print("ready", flush=True)
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            d, a = u.recvfrom(65536)
        except OSError:
            break
        u.sendto(d, a)


def uclient(host, port, n):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(3)
    data = os.urandom(int(n))
    for _ in range(3):
        u.sendto(data, (host, int(port)))
        try:
            d, _ = u.recvfrom(65536)
        except OSError:
            continue
        print("ok" if d == data else "bad %d" % len(d))
        return
    print("none")


def urecv(host, port, secs):
    """Print the tag (payload before the first '.') of each datagram."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((host, int(port)))
    u.settimeout(0.5)
    print("ready", flush=True)
    got = []
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            d, _ = u.recvfrom(65536)
        except OSError:
            continue
        got.append(d.split(b".")[0].decode() + ":%d" % len(d))
    print(" ".join(got) if got else "nothing", flush=True)


def ip_hdr(src, dst, ident, off8, mf, plen):
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + plen, ident,
                       (0x2000 if mf else 0) | off8, 64, 17, 0,
                       socket.inet_aton(src), socket.inet_aton(dst))


def frags(src, dst, port):
    """Three UDP datagrams of 2,000 payload bytes in two fragments each,
    checksum 0: 'clean' (as a host fragments), 'overlap' (the second
    overlaps the first by 8 bytes: RFC 5722, Linux drops the whole),
    'dup' (the first fragment twice: dropped alone, the datagram lives)."""
    r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    base = os.getpid() & 0x3fff

    def dgram(tag):
        pay = (tag + ".").encode() + b"x" * (2000 - len(tag) - 1)
        return struct.pack("!HHHH", 40000, int(port), 8 + len(pay), 0) + pay
    cases = [("clean", [(0, 1208, True), (1208, 800, False)]),
             ("overlap", [(0, 1208, True), (1200, 808, False)]),
             ("dup", [(0, 1208, True), (0, 1208, True), (1208, 800, False)])]
    for i, (tag, parts) in enumerate(cases):
        d = dgram(tag)
        for off, ln, mf in parts:
            chunk = d[off:off + ln]
            pkt = ip_hdr(src, dst, base + i, off // 8, mf, len(chunk)) + chunk
            r.sendto(pkt, (dst, 0))
            time.sleep(0.05)
        time.sleep(0.2)
    print("sent")


def flood(dst, n, secs):
    """n datagrams to a closed port of dst as fast as they go; the ICMP
    port unreachables dst sends back in secs, counted."""
    ic = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ic.settimeout(0.2)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(int(n)):
        u.sendto(b"flood %d" % i, (dst, 9))
    count = 0
    end = time.time() + float(secs)
    while time.time() < end:
        try:
            p, a = ic.recvfrom(2048)
        except OSError:
            continue
        hl = (p[0] & 15) * 4
        if a[0] == dst and p[hl] == 3 and p[hl + 1] == 3:
            count += 1
    print(count)


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
