#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A writer waiting on a full send buffer wakes when another thread raises
# SO_SNDBUF (tests/preload/sndbuf_wake.c; gVisor's
# SendUnblocksOnSendBufferIncrease): a blocking send() and an epoll_wait()
# for EPOLLOUT, on the kernel and under `sluice run`, each in a network
# namespace of its own.
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/sndbuf_wake
st=sbw-$$
trap 'rm -rf /dev/shm/sluice-"$st"-* /dev/shm/sluicefd-"$st"-*' EXIT
need_netns "a loopback connection"
netns_secs=30

for mode in send epoll; do
	k=$(in_netns "$prog" $mode 2>&1)
	check "$mode, on the kernel: woken by the option ($k)" test "$k" = "woken within 1 s"
	s=$(in_netns env SLUICE_STACK=$st-$mode "$top/build/tools/sluice" run -- "$prog" $mode 2>&1)
	check "$mode, under sluice run: the same ($s)" test "$s" = "$k"
done
done_testing
