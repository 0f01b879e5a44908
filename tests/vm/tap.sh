# SPDX-License-Identifier: BSD-2-Clause
#
# Sourced by the VM suites (tests/vm/*.sh): TAP output and small waits.
# Set SUITE (what skip_all names) before sourcing.
n=0
fail=0
tap() { # tap ok|fail DESCRIPTION
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
}
check() { # check DESCRIPTION COMMAND...
	d=$1
	shift
	if "$@"; then tap ok "$d"; else tap fail "$d"; fi
}
# expect WANT DESCRIPTION COMMAND...: the command prints WANT (last line).
expect() {
	want=$1 d=$2
	shift 2
	got=$("$@" 2>&1 | tail -n 1)
	if [ "$got" = "$want" ]; then tap ok "$d"; else tap fail "$d"; echo "#   got '$got', want '$want'"; fi
}
skip_all() {
	tap ok "${SUITE:-suite} # SKIP $1"
	echo "1..$n"
	exit 0
}
# wait_ready FILE [TENTHS]: until FILE holds a line "ready", TENTHS of a
# second at most (100).
wait_ready() {
	i=0
	while [ $i -lt "${2:-100}" ] && ! grep -qx ready "$1" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -qx ready "$1"
}
