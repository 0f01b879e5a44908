#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Many connections held at once (issue 23, items 5 and 6): for each N of
# TOTALS, N established connections, both ends in one stack, opened by
# PROCS processes (tests/bench/conn_many.c), on the kernel and under
# `sluice run`, side by side: the time to open them, an idle worker's CPU
# a second, and memory a connection.  Each process holds N / PROCS * 2 + 5
# fds: keep that under `ulimit -n` (20,000 here: 12 processes for
# 100,000).
#
# Then the ping-pong beside them: tests/bench/epoll_idle (64 bytes over
# one more connection, two processes, epoll) on the same side, once
# before any worker starts (N = 0) and once while the workers hold their
# N connections idle (in the same stack, for Sluice): one-way latency
# (the mean and the median round trip's half), CPU a round trip of both
# processes, and the ratio of the medians to N = 0's.  PP_ROUNDS round
# trips a run (default 20000; 0: no ping-pong), PP_RUNS runs (default 3;
# each figure the median of the runs': a loaded machine moves one run's
# mean several times over).  The N connections are in
# the workers' epoll sets, not the ping-pong's: one process's fds stop at
# the hard RLIMIT_NOFILE (epoll_idle.sh puts them in the ping-pong's own
# set, up to that limit).
#
# And memory given back: the kernel's Slab (/proc/meminfo) and the Sluice
# region's committed pages (the /dev/shm file's blocks) before the
# workers start, with the N connections open, and after they closed
# (their processes exited; a ping-pong of 2,000 round trips runs the
# stack every half second, up to MEM_WAIT_S, default 6, until the region
# is back within a tenth of what the connections added).
#
#   tests/bench/conn_many.sh [TOTALS [PROCS [IDLE_S]]]   (default 100000 12 3)
# TOTALS: one N or several, comma-separated (1000,10000,100000).
# Traffic stays on 127.0.0.0/8 (the kernel's loopback; the stack's own).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=$top/build/tests/bench/conn_many
pp=$top/build/tests/bench/epoll_idle
sluice=$top/build/tools/sluice
totals=${1:-100000}
procs=${2:-12}
idle=${3:-3}
rounds=${PP_ROUNDS:-20000}
runs=${PP_RUNS:-3}
mem_wait=${MEM_WAIT_S:-6}
st=bcm-$$
tmp=$(mktemp -d)
trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"' EXIT

# field NAME LINE: the word after NAME in epoll_idle's line, or "-".
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); f = 1 } } END { if (!f) print "-" }' <<<"$2"; }
slab() { sed -n 's/^Slab: *\([0-9]*\) kB/\1/p' /proc/meminfo; }
region() { echo $(( $(stat -c %b "/dev/shm/sluice-$st" 2>/dev/null || echo 0) / 2 )); }

# pingpong CMD...: epoll_idle 0 ROUNDS under CMD, PP_RUNS times: one
# line with the median of the runs' one-way, median and cpu figures.
pingpong() {
	local i out=""
	for i in $(seq "$runs"); do out+=$("$@" "$pp" 0 "$rounds" 2>&1)$'\n'; done
	awk '{ for (i = 1; i < NF; i++) if ($i == "one-way" || $i == "median" || $i == "cpu") v[$i, ++n[$i]] = $(i + 1) }
	     function med(k,   m, j, l, a, x) {
		m = n[k]
		for (j = 1; j <= m; j++) {
			x = v[k, j] + 0
			for (l = j; l > 1 && a[l - 1] > x; l--) a[l] = a[l - 1]
			a[l] = x
		}
		return m ? a[int((m + 1) / 2)] : "-"
	     }
	     END { printf "one-way %s us cpu %s us/round-trip median %s us\n", med("one-way"), med("cpu"), med("median") }' <<<"$out"
}

# side LABEL MEM CMD...: conn_many (and the ping-pongs) with CMD as
# prefix, MEM the command that prints the memory figure in KiB.
side() {
	local label=$1 mem=$2 base="" loaded n i m0 m1 m2 want end
	shift 2
	if [ "$rounds" != 0 ]; then
		base=$(pingpong "$@")
		printf '%-7s N %-7s pingpong one-way %s us, median %s us, cpu %s us a round trip\n' "$label" 0 \
			"$(field one-way "$base")" "$(field median "$base")" "$(field cpu "$base")"
	fi
	for n in ${totals//,/ }; do
		m0=$($mem)
		m1=-
		rm -f "$tmp/ready"
		CONN_MANY_READY=$tmp/ready "$@" "$prog" "$n" "$procs" "$idle" >"$tmp/cm.out" 2>"$tmp/cm.err" &
		for i in $(seq 1200); do
			[ -e "$tmp/ready" ] && break
			kill -0 $! 2>/dev/null || break
			sleep 0.1
		done
		loaded="(the workers did not get their connections open)"
		if [ -e "$tmp/ready" ]; then
			m1=$($mem)
			[ "$rounds" != 0 ] && loaded=$(pingpong "$@")
		fi
		wait
		printf '%-7s N %-7s %s\n' "$label" "$n" "$(cat "$tmp/cm.out")"
		printf '%-7s N %-7s idle workers: %s\n' "$label" "$n" "$(cat "$tmp/cm.err")"
		if [ "$rounds" != 0 ]; then
			printf '%-7s N %-7s pingpong one-way %s us, median %s us, cpu %s us a round trip\n' "$label" "$n" \
				"$(field one-way "$loaded")" "$(field median "$loaded")" "$(field cpu "$loaded")"
			awk -v a="$(field median "$base")" -v b="$(field median "$loaded")" \
			    -v c="$(field cpu "$base")" -v d="$(field cpu "$loaded")" -v l="$label" -v n="$n" \
				'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%-7s N %-7s beside/alone: median %.2f, cpu %.2f\n", l, n, b / a, d / c }'
		fi
		# After: the region back within a tenth of what they added, or
		# MEM_WAIT_S; the kernel's slab a second after.
		want=$(( m0 + (${m1/-/$m0} - m0) / 10 ))
		end=$((SECONDS + mem_wait))
		while m2=$($mem); [ "$m2" -gt "$want" ] && [ $SECONDS -lt $end ]; do
			[ "$label" = sluice ] && "$@" "$pp" 0 2000 >/dev/null 2>&1
			sleep 0.5
		done
		printf '%-7s N %-7s memory (%s): %s KiB before, %s with them open, %s after they closed\n' \
			"$label" "$n" "$mem" "$m0" "$m1" "$m2"
	done
}
side kernel slab env
side sluice region "$sluice" run --stack "$st" --
