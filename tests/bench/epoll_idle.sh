#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# epoll with N idle connections in the set (issue 23): the one-way latency
# of a 64-byte ping-pong on one connection, and the CPU time per round
# trip, on the kernel and under `sluice run`, side by side in one run.
#
#   tests/bench/epoll_idle.sh [ROUNDS [N...]]   (default 20000; 0 1000 3000)
# An N written bN (b1000) puts the N connections in another process's
# epoll set of the same stack, all busy (a client sends 64 bytes on each
# in turn): the CPU is still the ping-pong pair's alone, what the other
# set's changes cost its looks (epoll_idle.c, "busy").
# Traffic stays on 127.0.0.1 (the kernel's loopback; the stack's own).
# Each process holds N + 2 fds: epoll_idle raises its RLIMIT_NOFILE to
# N + 256, which needs a hard limit that high (or CAP_SYS_RESOURCE);
# where it cannot, that N prints why and nothing else.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=$top/build/tests/bench/epoll_idle
sluice=$top/build/tools/sluice
rounds=${1:-20000}
shift 2>/dev/null
ns=${*:-0 1000 3000}
printf '%-8s %-8s %s\n' N path result
for n in $ns; do
	set -- "${n#b}" "$rounds"
	[ "$n" != "${n#b}" ] && set -- "$@" busy
	printf '%-8s %-8s %s\n' "$n" kernel "$("$prog" "$@" 2>&1)"
	printf '%-8s %-8s %s\n' "$n" sluice "$("$sluice" run --stack "bep-$$-$n" -- "$prog" "$@" 2>&1)"
	rm -rf "/dev/shm/sluice-bep-$$-$n" "/dev/shm/sluicefd-bep-$$-$n"
done
