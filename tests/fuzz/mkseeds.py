#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

Run from the tree's top: python3 tests/fuzz/mkseeds.py.  The seeds are
committed; this script says how each was made.  The input formats are
described at the head of each target's .c file.
"""
import os
import struct

US, PEER, OTHER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]), bytes([10, 0, 0, 3])
MAC_US, MAC_PEER = bytes([2, 0, 0, 0, 0, 1]), bytes([2, 0, 0, 0, 0, 2])
TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip(proto, payload, src=PEER, dst=US, ttl=64):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0x4000, ttl, proto, 0,
                    src, dst)
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload


def l4_csum(proto, seg, src=PEER, dst=US):
    return csum(src + dst + struct.pack("!BBH", 0, proto, len(seg)) + seg)


def tcp(sport, dport, flags, seq=0, ack=0, win=65535, opts=b"", data=b"", src=PEER):
    while len(opts) % 4:
        opts += b"\x01"
    off = (20 + len(opts)) // 4
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4, flags, win, 0, 0)
    seg += opts + data
    c = l4_csum(6, seg, src)
    return ip(6, seg[:16] + struct.pack("!H", c) + seg[18:], src=src)


def udp(sport, dport, data):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    c = l4_csum(17, seg) or 0xFFFF
    return ip(17, seg[:6] + struct.pack("!H", c) + seg[8:])


def icmp_echo(ident, seq, data):
    m = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + data
    return ip(1, m[:2] + struct.pack("!H", csum(m)) + m[4:])


def eth(payload, etype=0x0800, dst=MAC_US, src=MAC_PEER):
    return dst + src + struct.pack("!H", etype) + payload


def arp(op, sha, spa, tha, tpa):
    return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, sha, spa, tha, tpa)


MSS = b"\x02\x04\x05\xb4"
WS7 = b"\x01\x03\x03\x07"
SACKOK = b"\x01\x01\x04\x02"


def ts(val, ecr=0):
    return b"\x01\x01\x08\x0a" + struct.pack("!II", val, ecr)


def sack(*blocks):
    return b"\x01\x01\x05" + bytes([2 + 8 * len(blocks)]) + b"".join(
        struct.pack("!II", a, b) for a, b in blocks)


SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08


# ---- fuzz_packet: records kind | len16 | bytes ----
def rec(kind, frame):
    return struct.pack("!BH", kind, len(frame)) + frame


def tick(ms):
    return struct.pack("!BH", 3, ms)


RAW, IPOIB = 1, 2
FIX_IP, FIX_L4, REL = 4, 8, 16

packet = {
    "eth_syn_options": rec(0, eth(tcp(5100, 80, SYN, 1000, 0, 65535,
                                      MSS + SACKOK + ts(1) + WS7))),
    "ip_ack_sack_rel": rec(RAW | FIX_L4 | REL,
                           tcp(5000, 80, ACK, 0, 1448, 1024,
                               ts(6000, 0) + sack((2000, 2500))) ),
    "eth_icmp_echo": rec(0, eth(icmp_echo(0x1234, 1, b"ping" * 8))),
    "eth_udp_53_and_closed_port": rec(0, eth(udp(4000, 53, b"question"))) +
    rec(0, eth(udp(4000, 54, b"nobody"))),
    "eth_arp_request_reply": rec(0, eth(arp(1, bytes([2, 0, 0, 0, 0, 3]), OTHER, bytes(6), US),
                                        0x0806, dst=b"\xff" * 6)) +
    rec(0, eth(arp(2, bytes([2, 0, 0, 0, 0, 3]), OTHER, MAC_US, US), 0x0806)),
    "ipoib_data_then_fin": rec(IPOIB | FIX_L4 | REL,
                               b"\x08\x00\x00\x00" + tcp(5001, 80, ACK | PSH, 0, 0, 2048,
                                                         data=b"x" * 300)) +
    tick(200) +
    rec(IPOIB | FIX_L4 | REL, b"\x08\x00\x00\x00" + tcp(5001, 80, ACK | FIN, 300, 2000, 2048)),
    "tick_then_rst": tick(1000) + rec(RAW | FIX_L4 | REL, tcp(5002, 80, RST, 0, 0, 0)),
    "ack_completes_embryo": rec(RAW | FIX_L4 | REL, tcp(5003, 80, ACK, 0, 1, 1024, ts(6000, 0))),
    "fin_to_fin_wait_2": rec(RAW | FIX_L4 | REL, tcp(6002, 40002, ACK | FIN, 0, 0, 8192)),
    "dupacks_with_sack": b"".join(
        rec(RAW | FIX_L4 | REL, tcp(5000, 80, ACK, 0, 0, 1024,
                                    ts(6000 + i, 0) + sack((1448, 1448 + 1448 * (i + 1))))
            ) for i in range(3)) + tick(5),
    "icmp_unreach_quoting_tcp": rec(RAW | FIX_L4 | REL,
                                    ip(1, struct.pack("!BBHI", 3, 4, 0, 1400) +
                                       ip(6, b"", src=US, dst=PEER)[:20] +
                                       struct.pack("!HHI", 80, 5001, 0))),
    "syn_to_time_wait": rec(RAW, tcp(6001, 40001, SYN, 5000000, 0, 8192, MSS)),
    "synack_to_syn_sent": rec(RAW | FIX_L4 | REL, tcp(6000, 40000, SYN | ACK, 77, 1, 8192,
                                                      MSS + SACKOK)),
    "ip_options_and_fragment": rec(RAW | FIX_IP, bytes([0x46]) + ip(17, b"")[1:20] +
                                   b"\x01\x01\x01\x00" + struct.pack("!HHHH", 1, 53, 8, 0)) +
    rec(RAW | FIX_IP, ip(17, struct.pack("!HHHH", 1, 53, 16, 0) + b"frag")[:6] + b"\x20\x00" +
        ip(17, struct.pack("!HHHH", 1, 53, 16, 0) + b"frag")[8:]),
}


# ---- fuzz_tcp: variant byte, then ops ----
def seg(flags, mode, sd, ad, win, plen, extra=b""):
    return bytes([0, flags, mode]) + struct.pack("!hhH", sd, ad, win) + extra + \
        struct.pack("!H", plen)


def op_tick(ms):
    return bytes([1]) + struct.pack("!H", ms)


def op_send(n):
    return bytes([2]) + struct.pack("!H", n)


def op_recv(n, peek=0):
    return bytes([3, peek]) + struct.pack("!H", n)


def op_ack(win, plen8):
    return bytes([7]) + struct.pack("!HB", win, plen8)


TSOPT = 0x40  # structured options; the next byte says which

tcp_seeds = {
    "v1_data_both_ways_close": bytes([1]) + op_ack(65535, 100) + op_recv(500) + op_send(5000) +
    op_ack(65535, 0) + bytes([5]) + op_ack(65535, 0) + seg(ACK | FIN, TSOPT, 0, 0, 65535, 0,
                                                           bytes([1])) + op_tick(61000),
    "v0_rto_and_dupacks": bytes([0]) + op_send(4000) + op_tick(300) + op_tick(1200) +
    seg(ACK, 0, 0, 0, 65535, 0) * 4 + op_ack(65535, 0),
    "v2_sack_blocks": bytes([2]) + op_send(8000) +
    seg(ACK, TSOPT, 0, 0, 16384, 0, bytes([1 | (2 << 1)]) + struct.pack("!HHHH", 1448, 1448,
                                                                         4344, 1448)) +
    op_tick(5) + op_ack(16384, 0),
    "v3_zero_window_persist": bytes([3]) + op_send(3000) + op_ack(0, 0) + op_tick(3000) +
    op_tick(6000) + op_ack(4096, 0) + op_tick(100),
    "v1_new_syn_accept": bytes([1]) + seg(SYN, 0x20 | 0x40, 1, 0, 65535, 0, bytes([1 | 8 | 16,
                                                                                  5, 0xb4, 7])) +
    seg(ACK, 0x20 | 0x40 | 0x04, 1, 1, 65535, 0, bytes([1])) + bytes([8]) + op_tick(100),
    "v0_icmp_needfrag_maxseg": bytes([0]) + op_send(2000) + bytes([9, 4]) +
    struct.pack("!Hh", 576, 0) + bytes([6, 1]) + struct.pack("!i", 536) + op_send(2000) +
    op_tick(400),
    "v0_shutdown_peer_fin": bytes([0]) + bytes([4, 1]) + op_ack(65535, 10) +
    seg(ACK | FIN, 0, 80, 0, 65535, 0) + op_recv(100) + op_tick(60000) + bytes([5]),
    "v4_synack_with_options": bytes([4]) + seg(SYN | ACK, TSOPT, 0, 1, 65535, 0,
                                              bytes([1 | 8 | 16, 5, 0xb4, 7])) +
    op_send(3000) + op_ack(65535, 0) + bytes([5]) + op_tick(2000),
    "v4_syn_sent_timeout": bytes([4]) + op_tick(1000) + op_tick(3000) + op_tick(60000) +
    op_tick(60000),
    "v5_ack_accept_data": bytes([5]) + seg(ACK, TSOPT, 1, 1, 65535, 0, bytes([1])) +
    bytes([8]) + op_ack(65535, 50) + op_recv(400) + op_send(100) + bytes([4, 1]),
    "v2_rst_in_window_and_challenge": bytes([2]) + seg(RST, 0, 100, 0, 0, 0) +
    seg(RST, 0, 0, 0, 0, 0) + seg(SYN, 0, 0, 0, 0, 0),
}


# ---- fuzz_ioctl: mode, uarg selector, user bytes ----
def create(name=b"stack0", size=1 << 20, max_sockets=16, sock_size=1024, hash_buckets=16,
           n_bufs=64, buf_size=2048, mtu=1500):
    hdr = 18880  # sizeof(struct sluice_region), a multiple of 64
    sock_off = hdr
    hash_off = sock_off + max_sockets * sock_size
    wheel_off = hash_off + 8 * hash_buckets
    bufmeta_off = wheel_off + 4096
    bufdata_off = (bufmeta_off + 24 * n_bufs + 4095) & ~4095
    need = bufdata_off + n_bufs * buf_size
    size = max(size, (need + 4095) & ~4095)
    return struct.pack("<II32sIIQIIIIIIQQQQQiI", 128, 0, name, 0, 0, size, max_sockets,
                       sock_size, hash_buckets, n_bufs, buf_size, mtu, sock_off, hash_off,
                       wheel_off, bufmeta_off, bufdata_off, -1, 0)


ioctl = {
    "raw_create_valid": bytes([2, 1]) + create(),
    "raw_create_overlap": bytes([2, 1]) + create()[:88] + struct.pack("<Q", 18880 + 64) +
    create()[96:],
    "counts_layout": bytes([4 | 2, 0]) + bytes([15, 0, 15, 4, 63, 0, 0xff, 7, 180, 6, 0, 0, 0]),
    "counts_nudged": bytes([4 | 1, 3]) + bytes([1, 0, 0, 0, 1, 0, 0, 1, 0, 4, 0x40, 0, 1]),
    "version_struct": bytes([0, 0]) + struct.pack("<IIII", 56, 0, 0, 0) + bytes(40),
    "wake_grown": bytes([0, 3]) + struct.pack("<IIII", 24, 0, 0, 0) + bytes(8),
    "wake_grown_nonzero_tail": bytes([0, 3]) + struct.pack("<IIII", 24, 0, 0, 0) + b"\0" * 7 + b"x",
    "name_dots": bytes([0, 2]) + b"..hidden\0",
    "name_max": bytes([0, 2]) + b"a" * 31 + b"\0",
}


def write(target, seeds):
    d = os.path.join(TOP, target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


write("fuzz_packet", packet)
write("fuzz_tcp", tcp_seeds)
write("fuzz_ioctl", ioctl)
