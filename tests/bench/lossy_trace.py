#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""
lossy_trace.py PCAP...: what a bulk TCP sender did, read off the wire at
the sender's side of tests/bench/lossy_host.sh's relay (PCAP=DIR there
keeps one capture a run), so the kernel and Sluice are measured alike.

For the flow that carried the most payload, one line: goodput, segments
sent (new, sent again), ACKs per data segment, the flight over time
(highest sequence sent less the last ACK seen, and the same less what was
SACKed above it: the pipe as the sender saw it), the RTT of segments
never sent again, how long after the last ACK's arrival each data
segment left (an ACK-clocked sender answers in microseconds), quiet spells of 100 ms or more with data outstanding
(RTOs), and the flight at the end of each recovery (the first ACK past
the highest sequence sent when a retransmission began).  With -s, the
flight every 100 ms too.

Standard library only (run with /usr/bin/python3 or any python3).
"""
import struct
import sys


def packets(path):
    with open(path, "rb") as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            return
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            e = "<"
        else:
            e = ">"
            magic = struct.unpack(">I", hdr[:4])[0]
        nano = magic == 0xA1B23C4D
        link = struct.unpack(e + "I", hdr[20:24])[0]
        while True:
            ph = f.read(16)
            if len(ph) < 16:
                return
            sec, frac, incl, _orig = struct.unpack(e + "IIII", ph)
            data = f.read(incl)
            t = sec + frac / (1e9 if nano else 1e6)
            off = 14 if link == 1 else 16 if link == 113 else 0
            if link == 1 and data[12:14] != b"\x08\x00":
                continue
            if link == 113 and data[14:16] != b"\x08\x00":
                continue
            ip = data[off:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            ihl = (ip[0] & 15) * 4
            tot = struct.unpack(">H", ip[2:4])[0]
            src, dst = ip[12:16], ip[16:20]
            tcp = ip[ihl:]
            if len(tcp) < 20:
                continue
            sp, dp, seq, ack = struct.unpack(">HHII", tcp[:12])
            doff = (tcp[12] >> 4) * 4
            flags = tcp[13]
            plen = tot - ihl - doff
            sacks = []
            tsecr = None
            o = 20
            while o < min(doff, len(tcp)):
                k = tcp[o]
                if k == 0:
                    break
                if k == 1:
                    o += 1
                    continue
                if o + 1 >= len(tcp):
                    break
                ln = tcp[o + 1]
                if ln < 2:
                    break
                if k == 5:
                    for b in range(o + 2, o + ln - 7, 8):
                        if b + 8 <= len(tcp):
                            sacks.append(struct.unpack(">II", tcp[b:b + 8]))
                o += ln
            yield t, (src, sp), (dst, dp), seq, ack, flags, plen, sacks


def sd(a, b):
    """a - b in sequence space."""
    return (a - b + 2**31) % 2**32 - 2**31


def analyse(path, series):
    pk = list(packets(path))
    load = {}
    for p in pk:
        if p[6] > 0:
            load[(p[1], p[2])] = load.get((p[1], p[2]), 0) + p[6]
    if not load:
        return "%s: no TCP data" % path
    snd, rcv = max(load, key=load.get)
    first_t = last_t = None
    hi = None            # highest end sent
    una = None           # last cumulative ACK seen
    una0 = None
    sacked = []          # merged SACKed ranges above una
    new = rex = acks = dup_acks = 0
    sent_at = {}         # end seq -> send time (first sends)
    rtts = []
    fl_area = pipe_area = 0.0
    last_ev = None
    cur_fl = cur_pipe = 0
    last_send = None
    quiet = []
    rec_high = None      # highest sent when a recovery began
    rec_ends = []
    ser = []
    next_s = None
    last_ack_t = None
    lags = []            # a data segment's send less the last ACK's arrival
    for t, a, b, seq, ack, flags, plen, sk in pk:
        if (a, b) == (snd, rcv) and plen > 0:
            end = (seq + plen) % 2**32
            if first_t is None:
                first_t = t
            if last_send is not None and una is not None and sd(hi, una) > 0 and \
                    t - last_send >= 0.1:
                quiet.append(t - last_send)
            last_send = t
            if last_ack_t is not None:
                lags.append(t - last_ack_t)
            if hi is None or sd(end, hi) > 0:
                if hi is not None and sd(seq, hi) >= 0 or hi is None:
                    new += 1
                    sent_at[end] = t
                else:
                    rex += 1
                hi = end
            else:
                rex += 1
                sent_at.pop(end, None)
                if rec_high is None:
                    rec_high = hi
        elif (a, b) == (rcv, snd) and flags & 0x10:
            if plen == 0:
                acks += 1
            last_ack_t = t
            if una is not None and ack == una and plen == 0:
                dup_acks += 1
            if una is None:
                una0 = ack
            if una is None or sd(ack, una) > 0:
                if una is not None:
                    for e in [e for e in sent_at if sd(e, ack) <= 0]:
                        if e == ack:
                            rtts.append(t - sent_at[e])
                        del sent_at[e]
                una = ack
                if rec_high is not None and sd(una, rec_high) >= 0:
                    rec_ends.append(sd(hi, una) if hi is not None else 0)
                    rec_high = None
            for s, e in sk:
                if sd(e, una) > 0 and sd(e, s) > 0:
                    sacked.append((s, e))
            m = []
            for s, e in sorted(((s if sd(s, una) > 0 else una, e) for s, e in sacked
                                if sd(e, una) > 0), key=lambda r: sd(r[0], una)):
                if m and sd(s, m[-1][1]) <= 0:
                    if sd(e, m[-1][1]) > 0:
                        m[-1] = (m[-1][0], e)
                else:
                    m.append((s, e))
            sacked = m
        else:
            continue
        if last_ev is not None and first_t is not None:
            fl_area += cur_fl * (t - last_ev)
            pipe_area += cur_pipe * (t - last_ev)
        last_ev = t
        last_t = t
        if hi is not None and una is not None:
            cur_fl = max(sd(hi, una), 0)
            cur_pipe = max(cur_fl - sum(sd(e, s) for s, e in sacked), 0)
        if series:
            if next_s is None and first_t is not None:
                next_s = first_t
            while next_s is not None and t >= next_s:
                ser.append("%.1f:%d" % (next_s - first_t, cur_fl // 1448))
                next_s += 0.1
    if first_t is None or una is None:
        return "%s: no data flow" % path
    dur = last_t - first_t
    good = sd(una, una0) * 8 / dur / 1e6 if dur > 0 else 0
    rtts.sort()
    med = rtts[len(rtts) // 2] * 1000 if rtts else 0
    lags.sort()
    lag50 = lags[len(lags) // 2] * 1e6 if lags else 0
    lag90 = lags[len(lags) * 9 // 10] * 1e6 if lags else 0
    out = ("%s: %.1f s %.2f Mbit/s; data %d new %d again (%.2f%%); ACKs %d (%.2f a data "
           "segment, %d duplicate); flight %.1f segs, pipe %.1f; RTT median %.1f ms "
           "(%d samples); a send after the last ACK: median %.0f us, 90%% %.0f us; quiet >=100ms %d "
           "(%.2f s); recoveries ended %d, flight then %.1f segs" %
           (path, dur, good, new, rex, 100.0 * rex / max(new, 1), acks,
            acks / max(new + rex, 1), dup_acks, fl_area / dur / 1448 if dur else 0,
            pipe_area / dur / 1448 if dur else 0, med, len(rtts), lag50, lag90, len(quiet), sum(quiet),
            len(rec_ends), sum(rec_ends) / 1448 / max(len(rec_ends), 1)))
    if series:
        out += "\n  flight (segs) every 0.1 s: " + " ".join(ser)
    return out


def main():
    args = sys.argv[1:]
    series = "-s" in args
    args = [a for a in args if a != "-s"]
    if not args:
        print(__doc__.strip())
        return 2
    for p in args:
        print(analyse(p, series))
    return 0


if __name__ == "__main__":
    sys.exit(main())
