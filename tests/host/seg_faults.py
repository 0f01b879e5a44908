#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
#
# Page faults in one segment of a shared library, from a `perf script
# --show-mmap-events -F pid,addr` listing: a child's mean and the
# parent's per child (the parent: the pid with the most faults; a forked
# child maps the library where its parent did).  Used by
# test_fork_faults.sh (the writable segment) and test_fork_cost.sh (the
# text).  Prints "CHILD PARENT", or "- -" when the listing has neither.
#
#   seg_faults.py LISTING LIBRARY SEG_OFFSET SEG_SIZE   (hex, from readelf)
import re
import sys

path, lib, start, size = sys.argv[1], sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4], 16)
base, faults = {}, []
for line in open(path):
    if "MMAP" in line:
        m = re.search(r"\s(\d+)/\d+:\s+\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) ", line)
        if m and line.rstrip().endswith(lib) and int(m.group(3), 16) == 0:
            base.setdefault(int(m.group(1)), int(m.group(2), 16))
        continue
    f = line.split()
    if len(f) == 2 and f[0].isdigit():
        faults.append((int(f[0]), int(f[1], 16)))
pids = {}
for pid, a in faults:
    pids[pid] = pids.get(pid, 0) + 1
if not pids or not base:
    print("- -")
    sys.exit()
parent = max(pids, key=pids.get)
b = base.get(parent, next(iter(base.values())))
lo, hi = b + start, b + start + size
kids = [p for p in pids if p != parent]


def ours(p):
    return sum(1 for q, a in faults if q == p and lo <= a < hi)


print("%.2f %.2f" % (sum(ours(p) for p in kids) / max(len(kids), 1),
                     ours(parent) / max(len(kids), 1)))
