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
