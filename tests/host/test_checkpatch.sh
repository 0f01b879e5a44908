#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Kernel code (the module and the test VM's fakeib.ko) and the uapi header
# are checkpatch-clean (--strict), using checkpatch.pl from Debian's
# linux-source-6.1.
set -u
. "$(dirname "$0")/lib.sh"
cp=${CHECKPATCH:-/usr/src/linux-source-6.1/scripts/checkpatch.pl}
cd "$top"
if [ ! -x "$cp" ]; then
	fail "checkpatch.pl found at $cp (run tests/vm/deps.sh)"
	done_testing
	exit
fi
for f in kernel/*.c kernel/*.h include/uapi/sluice.h tests/vm/fakeib/*.c; do
	out=$("$cp" --no-tree --strict --terse --show-types -f "$f" 2>&1)
	if [ $? = 0 ]; then ok "checkpatch: $f"; else fail "checkpatch: $f"; echo "$out" | sed 's/^/# /'; fi
done
done_testing
