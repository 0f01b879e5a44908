#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A subset of gVisor's socket syscall tests (tests/conformance/subset.txt:
# cases the kernel and Sluice both pass, spread over the binaries) run on
# the kernel and under `sluice run` by tests/conformance/gvisor.sh, so that
# what passes today keeps passing.  One TAP line a case: ok when Sluice
# passes, not ok when it does not, a skip when the kernel does not pass it
# either.  The binaries, the first found of: GVISOR_BIN (a directory of
# them, built elsewhere: no checkout needed), build/conformance (made by
# `make conformance-build` before), or a build now from a gVisor checkout
# (GVISOR, else ../gvisor beside this tree; tests/conformance/README.md
# says how to get one).  With none of them, when they do not build, or
# without root for the network namespaces, the suite is one skip.  The
# whole conformance run is `make conformance GVISOR=...`, not part of
# this suite.
set -u
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gv=${GVISOR:-$(cd "$top/.." && pwd)/gvisor}
subset=$top/tests/conformance/subset.txt
# Every binary the subset names is in directory $1.
has_bins() {
	local b

	[ -n "$1" ] && [ -d "$1" ] || return 1
	for b in $(grep -v '^#' "$subset" | awk '{ print $1 }' | sort -u); do
		[ -x "$1/$b" ] || return 1
	done
}
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
	skip "gVisor socket tests" "needs root for network namespaces"
	done_testing
	exit
fi
if [ -n "${GVISOR_BIN:-}" ]; then
	bindir=$GVISOR_BIN
	if ! has_bins "$bindir"; then
		skip "gVisor socket tests" "GVISOR_BIN=$bindir lacks binaries the subset names"
		done_testing
		exit
	fi
elif has_bins "$top/build/conformance"; then
	bindir=$top/build/conformance
elif [ ! -f "$gv/test/syscalls/linux/BUILD" ]; then
	skip "gVisor socket tests" "no binaries (GVISOR_BIN, build/conformance) and no gVisor checkout at $gv (set GVISOR)"
	done_testing
	exit
elif ! (cd "$top" && nice -n 19 make -s -j1 lib tools conformance-build GVISOR="$gv") \
	>"$tmp/build.log" 2>&1; then
	sed 's/^/# /' "$tmp/build.log" | tail -n 20
	skip "gVisor socket tests" "the binaries do not build (make conformance-build)"
	done_testing
	exit
else
	bindir=$top/build/conformance
fi
echo "# binaries: $bindir"

bash "$top/tests/conformance/gvisor.sh" --bindir "$bindir" --subset "$subset" \
	--results "$tmp/results.txt" --outdir "$tmp/out" >"$tmp/run.log" 2>&1
sed 's/^/# /' "$tmp/run.log"
listed=$(grep -vc '^#' "$subset")
got=$(wc -l <"$tmp/results.txt")
check "all $listed listed cases ran ($got)" [ "$got" = "$listed" ]
while read -r b c k s; do
	if [ "$s" = pass ]; then
		ok "$b $c"
	elif [ "$k" != pass ]; then
		skip "$b $c" "the kernel does not pass it either ($k)"
	else
		fail "$b $c: kernel pass, sluice $s"
		f=$tmp/out/$b/${c//\//_}.txt
		[ ! -f "$f" ] || tail -n 30 "$f" | sed 's/^/#   /'
	fi
done <"$tmp/results.txt"
done_testing
