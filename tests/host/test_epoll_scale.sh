#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# epoll's cost does not grow with the sockets in the set (issue 23): a
# plain epoll server under `sluice run` echoes a 64-byte ping-pong on one
# connection while N others sit idle in its set (tests/bench/epoll_idle).
# The latency and the CPU time per round trip with 3000 idle connections
# must stay near those with none (before the readiness journal: 6x the
# latency, 6x the CPU).
#
#   +--------- network namespace made here (lo DOWN) ---------+
#   | sluice run epoll_idle N: server + forked client, a stack |
#   +----------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/bench/epoll_idle
st=ts-epsc-$$
trap 'rm -rf /dev/shm/sluice-$st-* /dev/shm/sluicefd-$st-*' EXIT

run() { timeout 120 unshare -n "$sluice" run --stack "$st-$1" -- "$prog" "$1" 4000; }
r0=$(run 0)
rn=$(run 3000)
echo "# $r0"
echo "# $rn"
lat() { sed -n 's/.*one-way \([0-9.]*\) us.*/\1/p' <<<"$1"; }
cpu() { sed -n 's/.* cpu \([0-9.]*\) us.*/\1/p' <<<"$1"; }
check "N 0 ran" test -n "$(lat "$r0")"
check "N 3000 ran" test -n "$(lat "$rn")"
check "latency with 3000 idle in the set at most 2x that with none, plus 1 us" \
	awk -v a="$(lat "$r0")" -v b="$(lat "$rn")" 'BEGIN { exit !(b <= 2 * a + 1) }'
check "CPU per round trip with 3000 idle at most 2x that with none, plus 3 us" \
	awk -v a="$(cpu "$r0")" -v b="$(cpu "$rn")" 'BEGIN { exit !(b <= 2 * a + 3) }'
done_testing
