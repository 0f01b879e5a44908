#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The sluice command on the host, where the module is not loaded.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice

out=$("$sluice" version)
check "sluice version prints the library version" [ "$out" = "sluice 0.1.0 (ABI 1)" ]

"$sluice" >/dev/null 2>&1
check "no command is a usage error (exit 2)" [ $? = 2 ]
err=$("$sluice" frobnicate 2>&1 >/dev/null)
rc=$?
check "an unknown command exits 2" [ $rc = 2 ]
check "an unknown command is named in the error" grep -q "unknown command 'frobnicate'" <<<"$err"
"$sluice" help | grep -q '^  info'
check "help lists the info command" [ $? = 0 ]

if [ -e /dev/sluice ]; then
	skip "info without the module says it is not loaded" "/dev/sluice exists here"
else
	err=$("$sluice" info 2>&1 >/dev/null)
	rc=$?
	check "info without the module exits 1" [ $rc = 1 ]
	check "info without the module says it is not loaded" \
		grep -q 'the sluice module is not loaded' <<<"$err"
fi
done_testing
