#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Memory given back (issue 23, item 5): 20,000 established connections,
# both ends in one /dev/shm stack (40,000 sockets, tests/bench/conn_many,
# 4 processes), each with 1,000 bytes its receiver does not read (20,000
# packet buffers), held, then closed as their processes exit.  The region's
# committed pages (the file's blocks: what tmpfs holds for it) must come
# back to within a tenth of what the connections added, as the kernel
# frees its sockets' slabs (its Slab figures beside, same run: read them
# as figures, the machine's other work moves them).  Before, a slot's and
# a buffer's pages stayed committed once used: after the 40,000 sockets
# closed the region held its peak (86 MiB here, of which 6 before).  The stack gives them back once a
# second after a load has gone (proto/sock.c sl_sock_trim(), core/buf.c
# sl_buf_trim()); a short ping-pong (tests/bench/epoll_idle) runs the
# stack between the looks, as any program on it would.
#
#   +------ network namespace made here (lo up for the kernel run) ------+
#   | conn_many 20000 4 1: 4 workers, each connects to itself, sends     |
#   | 1,000 bytes a connection, idles, exits; then epoll_idle 0 2000     |
#   | every half second, up to 12 s                                      |
#   +--------------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/bench/conn_many
pp=$top/build/tests/bench/epoll_idle
st=ts-mem-$$
tmp=$(mktemp -d)
trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" /dev/shm/sluice-$st /dev/shm/sluicefd-$st' EXIT

slab() { sed -n 's/^Slab: *\([0-9]*\) kB/\1/p' /proc/meminfo; }
region_kib() { echo $(( $(stat -c %b "/dev/shm/sluice-$st" 2>/dev/null || echo 0) / 2 )); }
# held CMD...: run conn_many 20000 4 1 (1,000 bytes unread on each) under CMD; when its connections
# are open, call measure; wait for it to end; its status.
held() {
	rm -f "$tmp/ready"
	CONN_MANY_FILL=1000 CONN_MANY_READY=$tmp/ready timeout 120 "$@" "$prog" 20000 4 1 >"$tmp/out" 2>&1 &
	local pid=$! i
	for i in $(seq 1200); do
		[ -e "$tmp/ready" ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	measure
	wait $pid
}

# The kernel, in a namespace of its own.
measure() { k1=$(slab); }
k0=$(slab)
held unshare -n sh -c 'ip link set lo up && exec "$0" "$@"'
krc=$?
sleep 1
k2=$(slab)
echo "# kernel: $(cat "$tmp/out")"
echo "# kernel Slab: $k0 kB before, $k1 at 20000 connections, $k2 a second after they closed"

# Sluice: the stack made first, so that its creation is 'before'.
timeout 30 "$sluice" run --stack "$st" -- "$pp" 0 100 >/dev/null 2>&1
s0=$(region_kib)
measure() { s1=$(region_kib); }
held unshare -n "$sluice" run --stack "$st" --
src=$?
echo "# sluice: $(cat "$tmp/out")"
want=$(( s0 + (s1 - s0) / 10 ))
end=$((SECONDS + 12))
while s2=$(region_kib); [ "$s2" -gt "$want" ] && [ $SECONDS -lt $end ]; do
	timeout 30 "$sluice" run --stack "$st" -- "$pp" 0 2000 >/dev/null 2>&1
	sleep 0.5
done
echo "# sluice region: $s0 KiB before, $s1 at 20000 connections, $s2 after they closed ($((SECONDS - end + 12)) s)"
check "the kernel held and closed 20000 connections (exit $krc)" test "$krc" = 0
check "Sluice held and closed 20000 connections in one stack (exit $src)" test "$src" = 0
check "the connections and their data committed region memory ($((s1 - s0)) KiB)" test $((s1 - s0)) -gt 60000
check "the region gave back all but a tenth of it after they closed: $s2 KiB, at most $want (the kernel's Slab $k0 -> $k1 -> $k2 kB)" \
	test "$s2" -le "$want"
done_testing
