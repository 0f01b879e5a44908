#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# packetdrill's TCP scripts (tests/conformance/packetdrill.list) on a
# Sluice stack in packetdrill's process, on a virtual clock
# (tests/conformance/pd_plugin.c), by tests/conformance/packetdrill.sh
# --side sluice: about ten seconds. One TAP line a script: those in
# tests/conformance/packetdrill.pass must pass (window scale relaxed), the
# others are skips that say how they fail. The kernel's side, and the
# figures, are `make packetdrill PACKETDRILL=...` (README.md there).
# Needs a packetdrill checkout: PACKETDRILL, else ../packetdrill beside
# this tree; without one, or when packetdrill or the plugin does not build,
# or without root for the namespaces, the suite is one skip.
set -u
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pd=${PACKETDRILL:-$(cd "$top/.." && pwd)/packetdrill}
pass=$top/tests/conformance/packetdrill.pass
if [ ! -f "$pd/gtests/net/packetdrill/packetdrill.h" ]; then
	skip "packetdrill scripts" "no packetdrill checkout at $pd (set PACKETDRILL)"
	done_testing
	exit
fi
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
	skip "packetdrill scripts" "needs root for network namespaces"
	done_testing
	exit
fi
if ! (cd "$top" && nice -n 19 make -s -j1 packetdrill-build PACKETDRILL="$pd") \
	>"$tmp/build.log" 2>&1; then
	sed 's/^/# /' "$tmp/build.log" | tail -n 20
	skip "packetdrill scripts" "packetdrill or the plugin does not build (make packetdrill-build)"
	done_testing
	exit
fi

bash "$top/tests/conformance/packetdrill.sh" --packetdrill "$pd" --side sluice \
	--results "$tmp/results.txt" --outdir "$tmp/out" >"$tmp/run.log" 2>&1
sed 's/^/# /' "$tmp/run.log"
listed=$(grep -vc '^#' "$top/tests/conformance/packetdrill.list")
got=$(wc -l <"$tmp/results.txt")
check "all $listed listed scripts ran ($got)" [ "$got" = "$listed" ]
while read -r path _ _ ss sr; do
	if grep -qx "$path" "$pass"; then
		if [ "$sr" = pass ]; then
			ok "$path"
		else
			fail "$path: sluice $ss, relaxed $sr"
			log=$tmp/out/${path//\//_}.sluice.log
			[ ! -f "${log%.log}.relaxed.log" ] || log=${log%.log}.relaxed.log
			grep -v '^$' "$log" | head -n 8 | sed 's/^/#   /'
		fi
	elif [ "$sr" = pass ]; then
		ok "$path (passes now: add it to packetdrill.pass)"
	else
		why=$(grep -h 'error' "$tmp/out/${path//\//_}".sluice*.log | tail -n 1 | cut -c1-150)
		skip "$path" "a deviation (README.md): ${why:-$sr}"
	fi
done <"$tmp/results.txt"
done_testing
