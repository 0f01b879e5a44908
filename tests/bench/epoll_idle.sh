#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# epoll with N idle connections in the set (issue 23): the one-way latency
# of a 64-byte ping-pong on one connection, and the CPU time per round
# trip, on the kernel and under `sluice run`, side by side in one run.
#
#   tests/bench/epoll_idle.sh [ROUNDS [N...]]   (default 20000; 0 1000 3000)
# Traffic stays on 127.0.0.1 (the kernel's loopback; the stack's own).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=$top/build/tests/bench/epoll_idle
sluice=$top/build/tools/sluice
rounds=${1:-20000}
shift 2>/dev/null
ns=${*:-0 1000 3000}
printf '%-8s %-8s %s\n' N path result
for n in $ns; do
	printf '%-8s %-8s %s\n' "$n" kernel "$("$prog" "$n" "$rounds")"
	printf '%-8s %-8s %s\n' "$n" sluice "$("$sluice" run --stack "bep-$$-$n" -- "$prog" "$n" "$rounds")"
	rm -rf "/dev/shm/sluice-bep-$$-$n" "/dev/shm/sluicefd-bep-$$-$n"
done
