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
#
# The order (tests/README.md, "How a run is scheduled"): after the build,
# the VM part (vm, then vm_deb) starts in the background and the suites
# that time nothing run beside it, one after another; once both are done,
# the suites that time something run with nothing else of the run beside
# them.  SLUICE_SERIAL=1 runs everything one after another, as before.
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

# Host suites that time nothing and may run beside the VM part: their
# checks are answers compared with the kernel's or with fixed values, and
# their waits only bound a hang.  Every other host suite times something
# (a latency, a rate, a wake-up, an idle process's calls, a stopped
# holder, an ICMP rate limit) and runs with nothing of this run beside it;
# a new suite does too until it is named here.  (soak: 20 s of load whose
# only bound is a connection's 20 s, tests/interop/soak.c CONN_S.)
beside_host=" ambient_caps badptr checkpatch conform_autobind conform_errq conform_raw
	death_cost deb dkms dlopen doctor exec_keep fdnum fuzz gvisor handoff_tool install
	ipv6_ll ipv6_peers ipv6_send json_metrics kernel_peer layers man mem_back neigh_queue
	orphan_helper os_listen reclaim sandbox setuid soak sockcache tap_interop
	tap_user tcpdump tool tree v6_dual"
beside_host=" ${beside_host//[$'\n\t']/ } "
# beside NAME: may suite NAME run beside the VM part?  A unit test may
# unless its source reads a clock or sleeps (its own bounds then are real
# time); a host suite if it is named above.
beside() {
	local b=${1#*/}
	case $1 in
	unit/* | asan/*)
		[ -f "tests/unit/$b.c" ] &&
			! grep -qE 'clock_gettime|CLOCK_MONOTONIC|CLOCK_REALTIME|gettimeofday|usleep|nanosleep|[^a-z_]sleep\(|alarm\(' \
				"tests/unit/$b.c" ;;
	host/*) [[ $beside_host == *" ${b#test_} "* ]] ;;
	*) return 1 ;;
	esac
}

# exec_suite NAME COMMAND...: run it, keep its TAP, stderr, exit status
# and wall time (ms) in $res.  report_suite NAME: show its TAP and count
# its results.  A suite that exits non-zero without a failing result
# counts as one failure, and so does one that reports no result at all.
# run_suite NAME COMMAND...: both, now.
times=() fails=()
exec_suite() {
	local name=$1 out t
	shift
	out="$res/${name//\//_}"
	t=${EPOCHREALTIME/./}
	"$@" >"$out.tap" 2>"$out.err"
	echo $? >"$out.rc"
	echo $(( (${EPOCHREALTIME/./} - t) / 1000 )) >"$out.ms"
}
report_suite() {
	local name=$1 rc p f s out t
	out="$res/${name//\//_}"
	rc=$(cat "$out.rc") t=$(cat "$out.ms")
	rm -f "$out.rc" "$out.ms"
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
run_suite() {
	wanted "$1" || return 0
	echo "# ---- $1"
	exec_suite "$@"
	report_suite "$1"
}

# Every suite of the run in order, NAME and COMMAND a line (the names
# have no spaces; the commands are words).
all_suites() {
	local t
	for t in build/tests/unit/test_*; do
		case $t in *.o|*.d) continue ;; esac
		echo "unit/${t##*/} $t"
	done
	# The same unit tests under ASan and UBSan (make sanitize).
	for t in build/asan/tests/unit/test_*; do
		case $t in *.o|*.d) continue ;; esac
		echo "asan/${t##*/} $t"
	done
	for t in tests/host/test_*.sh; do
		echo "host/$(basename "$t" .sh) bash $t"
	done
}

# The VM part: QEMU guests under TCG, whose timings mean nothing, so it
# may run beside the host suites that time nothing.  In the background,
# its results reported when it is done.
vm_pid=
vm_part() {
	wanted vm && exec_suite vm bash tests/vm/run.sh
	# The Debian packages on a fresh Debian guest (tests/vm/deb.sh).
	wanted vm_deb && exec_suite vm_deb bash tests/vm/deb.sh
	echo $((SECONDS - t0)) >"$res/vm_part.end"
}
report_vm_part() {
	local n
	wait "$vm_pid"
	vm_pid=
	echo "# the VM part ended at $(cat "$res/vm_part.end") s of the run"
	rm -f "$res/vm_part.end"
	for n in vm vm_deb; do
		wanted $n || continue
		echo "# ---- $n (in the background)"
		report_suite $n
	done
}
# tree PID: PID and every process under it, from one listing.
tree() {
	ps -eo pid=,ppid= | awk -v r="$1" '{ pp[$1] = $2 }
		END { t[1] = r; n = 1
		      for (i = 1; i <= n; i++) for (p in pp) if (pp[p] == t[i]) t[++n] = p
		      for (i = 1; i <= n; i++) print t[i] }'
}
# A run cut short takes its VM part with it (twice: what a dying make or
# shell started meanwhile).
stop_vm_part() {
	[[ $vm_pid =~ ^[0-9]+$ ]] && [ "$vm_pid" -gt 1 ] || return 0
	for _ in 1 2; do
		kill -0 "$vm_pid" 2>/dev/null || break
		# shellcheck disable=SC2046
		kill $(tree "$vm_pid") 2>/dev/null
		sleep 1
	done
}
trap 'stop_vm_part; exit 130' INT TERM

if make -s -j2 all sanitize >"$res/build.log" 2>&1; then
	mapfile -t suites < <(all_suites)
	if [ "${SLUICE_SERIAL:-0}" = 1 ]; then
		for l in "${suites[@]}"; do
			# shellcheck disable=SC2086 # the command's words
			run_suite $l
		done
		[ $host_only = 1 ] || run_suite vm bash tests/vm/run.sh
		[ $host_only = 1 ] || run_suite vm_deb bash tests/vm/deb.sh
	else
		if [ $host_only = 0 ] && { wanted vm || wanted vm_deb; }; then
			vm_part &
			vm_pid=$!
			echo "# ---- the VM part (vm, vm_deb) started in the background"
		fi
		# Beside it, the suites that time nothing, at the lowest
		# priority: the guests run unit tests with wake-up bounds of a
		# few ms (lib_on_module's test_shared, 5 ms), which host suites
		# at the guests' priority made late (8.9 ms, VM part 864 s
		# against 595 s alone); the two guests leave about half a core.
		for l in "${suites[@]}"; do
			# shellcheck disable=SC2086
			beside "${l%% *}" && run_suite ${l%% *} nice -n 19 ${l#* }
		done
		echo "# the suites that time nothing ended at $((SECONDS - t0)) s of the run"
		[ -z "$vm_pid" ] || report_vm_part
		# Then, alone, the suites that time something.
		for l in "${suites[@]}"; do
			# shellcheck disable=SC2086
			beside "${l%% *}" || run_suite $l
		done
		echo "# the suites that time something ended at $((SECONDS - t0)) s of the run"
	fi
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
