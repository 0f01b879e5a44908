# SPDX-License-Identifier: BSD-2-Clause
# TAP helpers for the host test scripts: source it, call ok/fail/check,
# end with done_testing.
tap_n=0
tap_failed=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
fail() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
# check DESCRIPTION COMMAND...: ok if the command succeeds
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
done_testing() { echo "1..$tap_n"; [ "$tap_failed" = 0 ]; }
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# need_netns WHAT: where network namespaces cannot be made, skip WHAT and
# end the script (one skip, a clean exit).
need_netns() {
	if ! ip netns add "sl-probe-$$" 2>/dev/null; then
		skip "$1" "cannot create network namespaces here"
		done_testing
		exit 0
	fi
	ip netns del "sl-probe-$$"
}
# netns_test WHAT NS... [-- STACK...]: a test that runs in network
# namespaces of its own.  Where none can be made, skips WHAT and ends.
# Makes the namespaces (lo up) and a folder $tmp; at exit runs
# cleanup_extra if the script defines it, kills every process in the
# namespaces (a background job is only in_ns()'s subshell) and the
# script's jobs, deletes the namespaces, the stacks' files in /dev/shm
# and $tmp.  in_ns runs a command in the first namespace.
netns_test() {
	local n s
	need_netns "$1"
	shift
	sl_ns=() sl_stacks=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sl_ns+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	sl_stacks=("$@")
	tmp=$(mktemp -d)
	trap netns_cleanup EXIT
	for s in "${sl_stacks[@]}"; do rm -rf "/dev/shm/sluice-$s" "/dev/shm/sluicefd-$s"; done
	for n in "${sl_ns[@]}"; do
		ip netns add "$n"
		ip netns exec "$n" ip link set lo up
	done
}
netns_cleanup() {
	local n s
	if declare -F cleanup_extra >/dev/null; then cleanup_extra; fi
	for n in "${sl_ns[@]}"; do ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null; done
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	for n in "${sl_ns[@]}"; do ip netns del "$n" 2>/dev/null; done
	for s in "${sl_stacks[@]}"; do rm -rf "/dev/shm/sluice-$s" "/dev/shm/sluicefd-$s"; done
	rm -rf "$tmp"
}
in_ns() { ip netns exec "${sl_ns[0]}" "$@"; }
# in_netns CMD...: CMD in a network namespace of its own with lo up and
# stdin from /dev/null, bounded by netns_secs seconds (60 unless the test
# sets it).  Tests that need another kind define their own after this.
in_netns() { timeout "${netns_secs:-60}" unshare -n bash -c 'ip link set lo up; exec "$@"' sh "$@" </dev/null; }
# check_as_kernel K S: for each case of the kernel's output K (a line
# per case, its name first), one check that Sluice's output S has the same
# line.
check_as_kernel() {
	local c
	for c in $(awk '{ print $1 }' <<<"$1"); do
		check "under sluice run: $c as on the kernel" \
			test "$(grep "^$c " <<<"$2")" = "$(grep "^$c " <<<"$1")"
	done
}
# stack_test PREFIX: a test of stacks named PREFIX-...-PID (this
# script's pid last).  Sets sluice (the tool), py (Debian's python3, with
# its modules) and tmp; at exit kills the script's jobs and removes $tmp
# and those stacks' files in /dev/shm.
stack_test() {
	sluice=$top/build/tools/sluice
	py=/usr/bin/python3
	tmp=$(mktemp -d)
	sl_prefix=$1
	trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf /dev/shm/sluice-$sl_prefix-*-$$ /dev/shm/sluicefd-$sl_prefix-*-$$ "$tmp"' EXIT
}
# unshare_test WHAT PROG STACK: a test whose body runs in a network
# namespace of its own (unshare -n).  Where none can be made, skips WHAT
# and ends.  Sets sluice (the tool), prog (build/tests/preload/PROG), st
# (STACK) and tmp; at exit kills the script's jobs and removes $tmp and
# the stack's files in /dev/shm.
unshare_test() {
	sluice=$top/build/tools/sluice
	prog=$top/build/tests/preload/$2
	st=$3
	tmp=$(mktemp -d)
	trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" /dev/shm/sluice-$st* /dev/shm/sluicefd-$st*' EXIT
	if ! unshare -n true 2>/dev/null; then
		skip "$1" "no network namespaces here"
		done_testing
		exit 0
	fi
}
# counter STACK NAME: a counter of the stack, as `sluice dump` gives it
# (empty when zero: dump leaves zeros out)
counter() { "$top/build/tools/sluice" dump "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }'; }
