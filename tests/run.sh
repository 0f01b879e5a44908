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
#   tests/run.sh                 everything
#   tests/run.sh --host          host suites only (no VM)
#   tests/run.sh --only SUITE    only the suites named (repeatable): a
#                                suite's name as printed ("unit/test_tcp",
#                                "host/test_layers", "vm", "vm_deb"), or a shell
#                                pattern ("unit/*", "asan/test_tcp*")
#   tests/run.sh --list          the suites' names, nothing run
# Each suite's wall time follows its results; the slowest come last.
# SLUICE_NO_DEPS=1 skips the package check.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
host_only=0 list=0
only=()
while [ $# -gt 0 ]; do
	case $1 in
	--host) host_only=1 ;;
	--list) list=1 ;;
	--only)
		[ $# -ge 2 ] || { echo "usage: tests/run.sh [--host] [--list] [--only SUITE]..." >&2; exit 2; }
		only+=("$2")
		shift
		;;
	*) echo "usage: tests/run.sh [--host] [--list] [--only SUITE]..." >&2; exit 2 ;;
	esac
	shift
done

# wanted NAME: is suite NAME to run (no --only, or a pattern matches it)?
wanted() {
	local p
	[ ${#only[@]} = 0 ] && return 0
	for p in "${only[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $p ]] && return 0
	done
	return 1
}

# Every suite's name, from the sources (what the runs below run).
suite_names() {
	local t
	for t in tests/unit/test_*.c; do t=${t##*/}; echo "unit/${t%.c}"; done
	for t in tests/unit/test_*.c; do t=${t##*/}; echo "asan/${t%.c}"; done
	for t in tests/host/test_*.sh; do echo "host/$(basename "$t" .sh)"; done
	[ $host_only = 1 ] || printf '%s\n' vm vm_deb
}
if [ $list = 1 ]; then
	suite_names
	exit 0
fi
# A name in --only that matches no suite fails now, not after the build.
for p in "${only[@]}"; do
	m=0
	while read -r n; do
		# shellcheck disable=SC2053
		[[ $n == $p ]] && { m=1; break; }
	done < <(suite_names)
	if [ $m = 0 ]; then
		echo "not ok - no suite matches --only $p (tests/run.sh --list names them)"
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
done

t0=$SECONDS
if [ "${SLUICE_NO_DEPS:-0}" != 1 ]; then
	bash tests/vm/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
fi

res=build/test-results
# A run of some suites keeps the other suites' results from before.
[ ${#only[@]} -gt 0 ] || rm -rf "$res"
mkdir -p "$res"

passed=0 failed=0 skipped=0

# run_suite NAME COMMAND...: run it, show its TAP, count its results.  A
# suite that exits non-zero without a failing result counts as one failure,
# and so does one that reports no result at all.
times=() fails=()
run_suite() {
	local name=$1 rc p f s out t
	shift
	wanted "$name" || return 0
	out="$res/${name//\//_}"
	echo "# ---- $name"
	t=${EPOCHREALTIME/./}
	"$@" >"$out.tap" 2>"$out.err"
	rc=$?
	t=$(( (${EPOCHREALTIME/./} - t) / 1000 ))
	times+=("$(printf '%d.%03d' $((t / 1000)) $((t % 1000))) $name")
	sed "s|^|[$name] |" "$out.tap"
	p=$(grep -E '^ok ' "$out.tap" | grep -vc '# SKIP')
	s=$(grep -cE '^ok .*# SKIP' "$out.tap")
	f=$(grep -cE '^not ok ' "$out.tap")
	if { [ "$rc" != 0 ] && [ "$f" = 0 ]; } || [ $((p + f + s)) = 0 ]; then
		echo "[$name] not ok - suite exited $rc without a failing result"
		sed "s|^|[$name] # |" "$out.err" | tail -n 20
		f=$((f + 1))
	fi
	# Named again at the end, where a log cut to its tail still shows it.
	[ "$f" = 0 ] || fails+=("$name: $(grep -m1 -E '^not ok ' "$out.tap" || echo "exit status $rc")")
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	echo "# ---- $name: ${times[-1]%% *} s"
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
	# The Debian packages on a fresh Debian guest (tests/vm/deb.sh).
	[ $host_only = 1 ] || run_suite vm_deb bash tests/vm/deb.sh
else
	sed 's/^/# /' "$res/build.log" | tail -n 40
	echo "not ok - make all"
	failed=$((failed + 1))
fi

if [ ${#times[@]} -gt 0 ]; then
	echo "# slowest suites (s):"
	printf '%s\n' "${times[@]}" | sort -g | tail -n 8 | sed 's/^/#   /'
fi
for f in "${fails[@]}"; do
	echo "# failed: $f"
done
echo "# wall time $((SECONDS - t0)) s; TAP in $res/"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
