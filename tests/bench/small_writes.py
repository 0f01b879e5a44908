#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Small writes against delayed ACKs (issue 19): Nagle on one end meets
the other end's ACK policy.  A forked echo server and a client, one
process each, over 127.0.0.1; run it on the kernel and under
`sluice run` and compare.  Patterns:

  wwr    write-write-read on one connection: two small writes, then
         wait for the reply (the server answers once it has both).  The
         second write is held by Nagle until the first is ACKed: the
         classic stall, which Linux has too.
  alt    32 connections in 16 pairs; a 1-byte send on one of a pair,
         which the server reads and sends back on the other, where the
         client reads it; the next pair, round after round.  Each
         connection carries data one way only: its ACKs ride on nothing.
  rr     request/response on one connection: 1-byte send, 1-byte recv.

Prints one line a pattern: NAME rounds total_ms rps p50_ms p99_ms max_ms
stalls (rounds of 20 ms or more) late (rounds of 90 ms or more: more
than twice a delayed ACK's 40 ms, as a timer that waited for a sleeper's
100 ms makes them).  Bounded: each pattern stops
after its round count or its time limit, whichever first.

usage: small_writes.py [PATTERN ...] [-r ROUNDS] [-t SECONDS]
"""
import os
import select
import socket
import sys
import time

NCONN = 32
STALL_MS = 20.0
LATE_MS = 90.0


def server(lsock, nconn, need, cross):
    """Echo: each connection's input goes back in pieces of need bytes
    (the wwr server waits for both writes), on the same connection, or
    with cross on its pair's (the 2p-th and 2p+1-th accepted)."""
    conns = []
    for _ in range(nconn):
        c, _ = lsock.accept()
        conns.append(c)
    lsock.close()
    buf = {c.fileno(): b"" for c in conns}
    byfd = {c.fileno(): c for c in conns}
    p = select.poll()
    for c in conns:
        p.register(c, select.POLLIN)
    live = len(conns)
    while live:
        for fd, _ in p.poll():
            c = byfd[fd]
            d = c.recv(4096)
            if not d:
                p.unregister(fd)
                c.close()
                live -= 1
                continue
            buf[fd] += d
            out = conns[conns.index(c) ^ 1] if cross else c
            while len(buf[fd]) >= need:
                out.sendall(buf[fd][:need])
                buf[fd] = buf[fd][need:]
    os._exit(0)


def recv_n(c, n):
    got = b""
    while len(got) < n:
        d = c.recv(n - len(got))
        if not d:
            raise SystemExit("peer closed")
        got += d
    return got


def setup(nconn, need, cross=False):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    pid = os.fork()
    if pid == 0:
        server(ls, nconn, need, cross)
    ls_addr = ls.getsockname()
    cs = []
    for _ in range(nconn):
        c = socket.socket()
        c.connect(ls_addr)
        cs.append(c)
    ls.close()
    return pid, cs


def finish(pid, cs):
    for c in cs:
        c.close()
    os.waitpid(pid, 0)


def run(pattern, rounds, limit_s):
    if pattern == "wwr":
        pid, cs = setup(1, 16)
        c = cs[0]
        step = lambda k: (c.send(b"a" * 8), c.send(b"b" * 8), recv_n(c, 16))
    elif pattern == "rr":
        pid, cs = setup(1, 1)
        c = cs[0]
        step = lambda k: (c.send(b"x"), recv_n(c, 1))
    elif pattern == "alt":
        pid, cs = setup(NCONN, 1, True)

        def step(k):
            p = 2 * (k % (NCONN // 2))
            cs[p].send(b"x")
            recv_n(cs[p + 1], 1)
    else:
        raise SystemExit("unknown pattern " + pattern)
    lat = []
    t0 = time.monotonic()
    for k in range(rounds):
        a = time.monotonic()
        step(k)
        lat.append((time.monotonic() - a) * 1000.0)
        if time.monotonic() - t0 > limit_s:
            break
    total = (time.monotonic() - t0) * 1000.0
    finish(pid, cs)
    s = sorted(lat)
    n = len(s)
    print("%s %d %.1f %.0f %.3f %.3f %.1f %d %d" % (
        pattern, n, total, n / (total / 1000.0), s[n // 2],
        s[min(n - 1, (n * 99) // 100)], s[-1],
        sum(1 for x in lat if x >= STALL_MS),
        sum(1 for x in lat if x >= LATE_MS)), flush=True)


def main():
    args = sys.argv[1:]
    rounds, limit = {"wwr": 20, "alt": 960, "rr": 2000}, 4.0
    pats = []
    i = 0
    while i < len(args):
        if args[i] == "-r":
            r = int(args[i + 1])
            rounds = {k: r for k in rounds}
            i += 2
        elif args[i] == "-t":
            limit = float(args[i + 1])
            i += 2
        else:
            pats.append(args[i])
            i += 1
    for p in pats or ["wwr", "alt", "rr"]:
        run(p, rounds[p], limit)


if __name__ == "__main__":
    main()
