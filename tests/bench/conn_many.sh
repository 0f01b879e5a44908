#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Many connections held at once (issue 23, item 5): TOTAL established
# connections, both ends in one stack, opened by PROCS processes
# (tests/bench/conn_many.c), on the kernel and under `sluice run`, side by
# side: the time to open them, an idle worker's CPU a second, and memory
# a connection.  Each process holds TOTAL / PROCS * 2 + 5 fds: keep that
# under `ulimit -n`.
#
# Then the ping-pong beside them: tests/bench/epoll_idle (64 bytes over
# one connection, two processes, epoll) on the same side, once before the
# workers start (N = 0) and once while they hold their TOTAL connections
# idle (in the same stack, for Sluice): one-way latency and CPU a round
# trip, and the ratio of the two.  PP_ROUNDS round trips each (default
# 20000; 0: no ping-pong).
#
#   tests/bench/conn_many.sh [TOTAL [PROCS [IDLE_S]]]   (default 100000 12 3)
# Traffic stays on 127.0.0.0/8 (the kernel's loopback; the stack's own).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=$top/build/tests/bench/conn_many
pp=$top/build/tests/bench/epoll_idle
sluice=$top/build/tools/sluice
total=${1:-100000}
procs=${2:-12}
idle=${3:-3}
rounds=${PP_ROUNDS:-20000}
st=bcm-$$
tmp=$(mktemp -d)
trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"' EXIT

# one_way LINE: the one-way latency in epoll_idle's line, or "-".
one_way() { awk '{ for (i = 1; i < NF; i++) if ($i == "one-way") { print $(i + 1); f = 1 } } END { if (!f) print "-" }' <<<"$1"; }

# side LABEL CMD...: conn_many (and the ping-pongs) with CMD as prefix.
side() {
	local label=$1 base loaded i
	shift
	if [ "$rounds" = 0 ]; then
		printf '%-7s %s\n' "$label" "$("$@" "$prog" "$total" "$procs" "$idle" 2>/dev/null)"
		return
	fi
	base=$("$@" "$pp" 0 "$rounds" 2>&1)
	rm -f "$tmp/ready"
	CONN_MANY_READY=$tmp/ready "$@" "$prog" "$total" "$procs" "$idle" >"$tmp/cm.out" 2>/dev/null &
	for i in $(seq 1200); do
		[ -e "$tmp/ready" ] && break
		kill -0 $! 2>/dev/null || break
		sleep 0.1
	done
	loaded="(the workers did not get their connections open)"
	[ -e "$tmp/ready" ] && loaded=$("$@" "$pp" 0 "$rounds" 2>&1)
	wait
	printf '%-7s %s\n' "$label" "$(cat "$tmp/cm.out")"
	printf '%-7s pingpong alone:      %s\n' "$label" "$base"
	printf '%-7s pingpong beside %s: %s\n' "$label" "$total" "$loaded"
	awk -v a="$(one_way "$base")" -v b="$(one_way "$loaded")" -v l="$label" \
		'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%-7s one-way beside/alone: %.2f\n", l, b / a }'
}
side kernel env
side sluice "$sluice" run --stack "$st" --
