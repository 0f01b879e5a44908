#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Every test of Sluice: installs what is missing (tests/vm/deps.sh), builds,
# runs the host suites (unit tests, the same under ASan/UBSan, tool, tree
# rules, checkpatch, dkms, TAP interop with the kernel),
# then the VM suite on every installed kernel series.  Each suite prints
# TAP; this script shows it, keeps it in build/test-results/, and ends with
#   N passed, N failed, N skipped
# Exit status 0 only when nothing failed.
#
#   tests/run.sh            everything
#   tests/run.sh --host     host suites only (no VM)
# SLUICE_NO_DEPS=1 skips the package check.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
host_only=0
[ "${1:-}" = --host ] && host_only=1

t0=$SECONDS
if [ "${SLUICE_NO_DEPS:-0}" != 1 ]; then
	bash tests/vm/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
fi

res=build/test-results
rm -rf "$res"
mkdir -p "$res"

passed=0 failed=0 skipped=0

# run_suite NAME COMMAND...: run it, show its TAP, count its results.  A
# suite that exits non-zero without a failing result counts as one failure,
# and so does one that reports no result at all.
run_suite() {
	local name=$1 rc p f s out
	shift
	out="$res/${name//\//_}"
	echo "# ---- $name"
	"$@" >"$out.tap" 2>"$out.err"
	rc=$?
	sed "s|^|[$name] |" "$out.tap"
	p=$(grep -E '^ok ' "$out.tap" | grep -vc '# SKIP')
	s=$(grep -cE '^ok .*# SKIP' "$out.tap")
	f=$(grep -cE '^not ok ' "$out.tap")
	if { [ "$rc" != 0 ] && [ "$f" = 0 ]; } || [ $((p + f + s)) = 0 ]; then
		echo "[$name] not ok - suite exited $rc without a failing result"
		sed "s|^|[$name] # |" "$out.err" | tail -n 20
		f=$((f + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

if make -s -j2 all sanitize >"$res/build.log" 2>&1; then
	for t in build/tests/unit/test_*; do
		case $t in *.o|*.d) continue ;; esac
		run_suite "unit/${t##*/}" "$t"
	done
	# The same unit tests under ASan and UBSan (make sanitize).
	for t in build/asan/tests/unit/test_*; do
		case $t in *.o|*.d) continue ;; esac
		run_suite "asan/${t##*/}" "$t"
	done
	for t in tests/host/test_*.sh; do
		run_suite "host/$(basename "$t" .sh)" bash "$t"
	done
	[ $host_only = 1 ] || run_suite vm bash tests/vm/run.sh
else
	sed 's/^/# /' "$res/build.log" | tail -n 40
	echo "not ok - make all"
	failed=$((failed + 1))
fi

echo "# wall time $((SECONDS - t0)) s; TAP in $res/"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
