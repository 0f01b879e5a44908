#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Soak: a forking TCP echo server on a Sluice stack and client processes
# opening, transferring (every byte compared) and closing connections for
# a bounded time; at the end no socket slot or buffer may be left and no
# connection stuck (build/tests/interop/soak does the work and checks).
#
#   tests/soak.sh [SECONDS [CLIENTS [SEED]]]    default 120 s, 4 clients
#   make soak [SOAK_SECONDS=600]
# Prints TAP (one result, the figures as comments); exit 0 if it passed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-120}
clients=${2:-4}
seed=${3:-$(date +%s)}
bin=$top/build/tests/interop/soak
[ -x "$bin" ] || make -s -C "$top" -j2 build/tests/interop/soak >&2 || exit 1
# The program bounds itself; the timeout is the backstop for a hang.
out=$(timeout -s KILL $((secs + 120)) "$bin" "$secs" "$clients" "$seed" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
if [ $rc = 0 ] && [ "$(echo "$out" | tail -n 1)" = ok ]; then
	echo "ok 1 - soak ${secs} s, $clients clients, seed $seed: $(echo "$out" | grep '^connections' | cut -d';' -f1)"
else
	echo "not ok 1 - soak ${secs} s, $clients clients, seed $seed (exit $rc)"
fi
echo "1..1"
[ $rc = 0 ]
