#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The socket cache's gain (issue 23 item 3; lib/preload/README.md, "Socket
# cache"): tests/bench/conn_churn, N connections from K client processes
# to one server, on the kernel's loopback, under `sluice run` with the
# cache (SLUICE_SOCKET_CACHE=1) and without it (=0), alternating, ROUNDS
# times; server on CPU 1, clients on CPU 0, as programs.sh pins them.  A
# benchmark, not a test: one line a run, connections a second and CPU
# time a connection (user + system of both ends, the server's from
# /proc/PID/stat, the clients' from /usr/bin/time), then the means and
# each Sluice mode's ratio to the kernel's of the same round.
#
# With -b TREE, a fourth mode, "before": the cache on, under another
# built tree's `sluice run` (TREE/build/tools/sluice and its library: a
# change beside the tree before it, in the same rounds).
#
#   bash tests/bench/churn_cache.sh [-r ROUNDS] [-n N] [-k K] [-b TREE]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
S=$top/build/tools/sluice P=$top/build/tests/bench/conn_churn
rounds=3 n=20000 k=1 before=
while getopts r:n:k:b: o; do
	case $o in
	b) before=$OPTARG ;;
	r) rounds=$OPTARG ;;
	n) n=$OPTARG ;;
	k) k=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-n N] [-k K] [-b TREE]" >&2; exit 2 ;;
	esac
done
[ -x "$P" ] && [ -x /usr/bin/time ] || { echo "build first (make), and /usr/bin/time" >&2; exit 2; }
tmp=$(mktemp -d)
st=bench-cc-$$
trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" /dev/shm/sluice-$st-* /dev/shm/sluicefd-$st-*' EXIT
tck=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }
# one MODE ROUND -> "MODE conn/s cpu-us"
one() {
	local mode=$1 p=$((24300 + RANDOM % 500)) pre=() srv t0 t1 out
	case $mode in
	cache|nocache) pre=("$S" run --stack "$st-$2-$mode" --profile throughput --) ;;
	before) pre=("$before/build/tools/sluice" run --stack "$st-$2-$mode" --profile throughput --) ;;
	esac
	SLUICE_SOCKET_CACHE=$([ "$mode" = nocache ] && echo 0 || echo 1) \
		taskset -c 1 "${pre[@]}" "$P" server "$p" $((n * 10)) >"$tmp/srv" 2>&1 &
	for _ in $(seq 200); do grep -q ready "$tmp/srv" && break; sleep 0.05; done
	srv=$(pgrep -f "conn_churn server $p " | head -n 1)
	t0=$(ticks "$srv")
	out=$( { SLUICE_SOCKET_CACHE=$([ "$mode" = nocache ] && echo 0 || echo 1) \
		/usr/bin/time -f "cpu %U %S" taskset -c 0 "${pre[@]}" "$P" client "$p" "$n" "$k"; } 2>&1)
	t1=$(ticks "$srv")
	kill %1 2>/dev/null
	wait 2>/dev/null
	awk -v m="$mode" -v s=$((t1 - t0)) -v tck="$tck" -v n="$n" '
		/^connections / { r = $6 } /^cpu / { c = $2 + $3 }
		END { printf "%s %s %.1f\n", m, r, (c + s / tck) * 1e6 / n }' <<<"$out"
}
echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg);" \
	"$n connections from $k client processes, $rounds rounds"
for r in $(seq "$rounds"); do
	for m in kernel cache nocache ${before:+before}; do one "$m" "$r"; done
done | tee "$tmp/out"
awk '$1 == "kernel" { kr = $2; kc = $3; K[1] += $2; K[2] += $3; nk++ }
	$1 != "kernel" { R[$1] += $2 / kr; C[$1] += $3 / kc; X[$1] += $2; Y[$1] += $3; nm[$1]++ }
	END {
		printf "# kernel: %.0f conn/s, %.1f us CPU a connection\n", K[1] / nk, K[2] / nk
		for (m in nm)
			printf "# %s: %.0f conn/s, %.1f us CPU; to the kernel of its round: %.2f, CPU %.2f\n",
				m, X[m] / nm[m], Y[m] / nm[m], R[m] / nm[m], C[m] / nm[m]
	}' "$tmp/out"
