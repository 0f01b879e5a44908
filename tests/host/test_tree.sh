#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Project-wide rules: the fixed top-level layout, an SPDX line in every
# source file, and one version number everywhere it is written.
set -u
. "$(dirname "$0")/lib.sh"
cd "$top"

for p in kernel lib include tools tests; do
	check "top level has $p/" [ -d "$p" ]
done
for p in Kbuild Makefile dkms.conf README.md include/uapi/sluice.h; do
	check "top level has $p" [ -f "$p" ]
done

missing=$(git ls-files -- '*.c' '*.h' '*.sh' '*.map' Kbuild Makefile dkms.conf .ci/run tests/vm/suites |
	while read -r f; do head -n 3 "$f" | grep -q 'SPDX-License-Identifier:' || echo "$f"; done)
check "every source file has an SPDX line${missing:+ (missing: $missing)}" [ -z "$missing" ]
uapi=$(head -n 1 include/uapi/sluice.h)
check "uapi header is GPL-2.0-only WITH Linux-syscall-note OR BSD-2-Clause" \
	[ "$uapi" = "/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR BSD-2-Clause */" ]
bad=$(grep -L 'SPDX-License-Identifier: GPL-2.0-only' kernel/*.c kernel/*.h)
check "kernel files are GPL-2.0-only${bad:+ (not: $bad)}" [ -z "$bad" ]

v_make=$(sed -n 's/^VERSION := //p' Makefile)
v_kmod=$(sed -n 's/^#define SLUICE_MODULE_VERSION[[:space:]]*"\(.*\)"/\1/p' kernel/sluice.h)
v_lib=$(sed -n 's/^#define SLUICE_LIB_VERSION "\(.*\)"/\1/p' include/sluice/sluice.h)
v_dkms=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
same=$(printf '%s\n' "$v_make" "$v_kmod" "$v_lib" "$v_dkms" | sort -u)
check "one version everywhere (Makefile $v_make, module $v_kmod, library $v_lib, dkms $v_dkms)" \
	[ "$same" = "${v_make:-unset}" ]

readme_test=$(grep -c '^bash tests/run.sh$' README.md)
check "README shows the test command" [ "$readme_test" -ge 1 ]
check ".ci/run runs the README's test command" grep -qx 'exec bash tests/run.sh' .ci/run

# libsluice.so exports only the sluice_ API.
exports=$(nm -D --defined-only build/libsluice.so | awk '{print $3}' | grep -v '^SLUICE_' | grep -v '^sluice_' || true)
check "libsluice.so exports only sluice_* symbols${exports:+ (also: $exports)}" [ -z "$exports" ]
done_testing
