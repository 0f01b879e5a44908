#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The number a close() frees is the next open()'s, socket()'s or accept()'s,
# as on the kernel (issue 24; issue 23 item 3): tests/preload/fdnum.c closes
# sockets (alone, dup()ed, shared with a forked child, the first or the
# last close) and looks at the number the next open(), socket() or
# accept() takes.  The library's own fds (the probe a shared socket's
# close opens, process records, bells, twins) live above the program's
# numbers (lib/os/os.c, sl_sys_fd_high()).  Run on the kernel and under
# `sluice run`, each in a network namespace of its own; the lines must be
# the same.
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/fdnum
st=tfn-$$
trap 'rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"' EXIT
need_netns "loopback connections"

k=$(in_netns "$prog")
echo "$k" | sed 's/^/# kernel: /'
kt=$(sed -n 's/^forktable //p' <<<"$k")
k=$(grep -v '^forktable ' <<<"$k")
check "on the kernel: every case takes the number just freed" \
	test -n "$k" -a -z "$(grep -v ' same$' <<<"$k")" -a "$(wc -l <<<"$k")" = 11
s=$(in_netns env SLUICE_STACK=$st "$top/build/tools/sluice" run -- "$prog")
echo "$s" | sed 's/^/# sluice: /'
check_as_kernel "$k" "$s"
# The library's fds sit at 192-255 (lib/preload/README.md): a fork copies
# a table of 256 entries at most where the kernel's run copies fewer, not
# the 1,024 fds near 960 made it (3-4 us more a fork).
st_=$(sed -n 's/^forktable //p' <<<"$s")
check "under sluice run: a fork copies an fd table of at most 256 entries, or the kernel's (${st_:-?}, kernel ${kt:-?})" \
	test -n "$st_" -a -n "$kt" -a "${st_:-0}" -le "$(( kt > 256 ? kt : 256 ))"
done_testing
