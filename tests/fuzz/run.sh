#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Run the fuzz targets (build them first: make fuzz), one at a time, and
# print TAP: for each target, one line for replaying its regression inputs
# (tests/fuzz/regress/TARGET/, every crash found so far) and one line for
# a bounded run from its seed corpus (tests/fuzz/corpus/TARGET/).  A crash,
# a leak, a timeout or a broken invariant fails the line; the input is
# kept in build/fuzz/artifacts/TARGET/ to become a regression input.
#
#   tests/fuzz/run.sh [--seconds N] [--target NAME]...
#     --seconds N   fuzz each target for N seconds (default 20)
#     --target NAME only this target (repeatable); default all three
# The corpus each run grows is kept in build/fuzz/corpus/TARGET/, so runs
# build on each other; the seeds in the tree are never written.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
seconds=20
targets=()
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--target) targets+=("$2"); shift 2 ;;
	*) echo "usage: $0 [--seconds N] [--target NAME]..." >&2; exit 2 ;;
	esac
done
[ ${#targets[@]} = 0 ] && targets=(fuzz_packet fuzz_tcp fuzz_ioctl)

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

for t in "${targets[@]}"; do
	bin=build/fuzz/$t
	if [ ! -x "$bin" ]; then
		notok "$t: $bin not built (make fuzz)"
		continue
	fi
	art=build/fuzz/artifacts/$t
	work=build/fuzz/corpus/$t
	log=build/fuzz/$t.log
	mkdir -p "$art" "$work"

	# Every input that once crashed, run once each.
	reg=(tests/fuzz/regress/$t/*)
	if [ -e "${reg[0]}" ]; then
		if "$bin" -runs=1 "${reg[@]}" >"$log.regress" 2>&1; then
			ok "$t: ${#reg[@]} regression inputs replayed"
		else
			notok "$t: a regression input fails again (see $log.regress)"
			grep -E 'ERROR|invariant|SUMMARY' "$log.regress" | head -n 5 | sed 's/^/# /'
		fi
	else
		ok "$t: no regression inputs"
	fi

	# Bounded fuzzing from the seeds (and whatever earlier runs found).
	if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$t" \
		>"$log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
		cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
		ok "$t: ${execs:-?} executions in ${seconds} s, ${cov:-cov: ?}, no crash or leak"
	else
		notok "$t: crashed (log $log; input in $art/)"
		grep -E 'ERROR|invariant|SUMMARY|Test unit written' "$log" | head -n 8 | sed 's/^/# /'
	fi
done
echo "1..$n"
[ "$failed" = 0 ]
