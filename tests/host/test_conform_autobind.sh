#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bind() to port 0 with SO_REUSEADDR never picks a port in use
# (tests/preload/autobind.c), on the kernel and under `sluice run` with
# the stack choosing its ports itself (SLUICE_KERNEL_LISTEN=0: no kernel
# twin to choose for it, as on a module stack), each in a network
# namespace of its own.
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/autobind
st=tab-$$
trap 'rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"' EXIT
need_netns "bind to port 0"

k=$(in_netns "$prog" 2>&1)
check "on the kernel: every socket a port of its own, then EADDRINUSE ($k)" \
	test "$k" = "bound 20 distinct 20 then EADDRINUSE"
s=$(in_netns env SLUICE_KERNEL_LISTEN=0 SLUICE_STACK=$st "$top/build/tools/sluice" run -- "$prog" 2>&1)
check "under sluice run, the stack's own picks: the same ($s)" test "$s" = "$k"
s=$(in_netns env SLUICE_STACK=$st-t "$top/build/tools/sluice" run -- "$prog" 2>&1)
rm -rf "/dev/shm/sluice-$st-t" "/dev/shm/sluicefd-$st-t"
check "under sluice run, with kernel twins: the same ($s)" test "$s" = "$k"
done_testing
