#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Many connections at once (issue 23, item 5): 20,000 established
# connections, both ends in one stack (40,000 sockets, past the 8,192 slots
# a stack used to have), opened by 4 processes (tests/bench/conn_many), the
# kernel beside it.  Before: the 8,193rd socket had no slot and connect()
# timed out; and with more slots, opening them took 30 s (every socket's
# placeholder lock was on one inode, whose lock list the kernel walks at
# each lock; since layout 33 no placeholder takes a lock: fdtable.c).  The region's memory is committed as
# slots are first used (sock.c, sl_sock_alloc()), not for all 262,144.
#
#   +------ network namespace made here (lo up for the kernel run) ------+
#   | conn_many 20000 4 2: 4 workers, each connects to itself and idles  |
#   +--------------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/bench/conn_many
st=ts-many-$$
trap 'rm -rf /dev/shm/sluice-$st /dev/shm/sluicefd-$st' EXIT

field() { sed -n "s/\(^\|.* \)$1 \([0-9.-]*\).*/\2/p" <<<"$2"; }
k=$(timeout 120 unshare -n sh -c 'ip link set lo up && exec "$0" 20000 4 2' "$prog" 2>&1)
krc=$?
s=$(timeout 120 unshare -n "$sluice" run --stack "$st" -- "$prog" 20000 4 2 2>&1)
src=$?
echo "# kernel: $k"
echo "# sluice: $s"
check "the kernel holds 20000 connections (exit $krc)" test "$krc" = 0
check "Sluice holds 20000 connections in one stack (exit $src)" test "$src" = 0
check "Sluice: every one counted" test "$(field conns "$s")" = 20000
check "Sluice opened them in under 5 s ($(field setup "$s") s; the kernel $(field setup "$k") s)" \
	awk -v t="$(field setup "$s")" 'BEGIN { exit !(t != "" && t < 5) }'
# Committed region memory a socket slot used: 960 bytes a slot, plus the
# hash and TIME-WAIT tables (4 MiB) and the buffers touched, shared by
# 40,000 sockets.  All 262,144 slots touched would be 6,600 bytes a socket.
peak=$("$sluice" dump "$st" | sed -n 's/.*at most so far: sockets \([0-9]*\).*/\1/p')
blocks=$(stat -c %b "/dev/shm/sluice-$st")
per=$(( blocks * 512 / (peak > 0 ? peak : 1) ))
check "region committed as used: $per bytes a socket for $peak sockets (at most 1536)" \
	test "$peak" -ge 40000 -a "$per" -le 1536
check "idle workers' mean CPU stays under 2 ms a second ($(field idle_cpu_avg "$s") us/s; the kernel $(field idle_cpu_avg "$k"))" \
	awk -v c="$(field idle_cpu_avg "$s")" 'BEGIN { exit !(c != "" && c < 2000) }'
done_testing
