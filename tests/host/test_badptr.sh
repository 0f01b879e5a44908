#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Bad pointers, lengths and counts as the kernel answers them (issue 24
# item 6): tests/preload/badptr makes each socket call with a null,
# unmapped, PROT_NONE, read-only or partly mapped pointer, a negative or
# huge length, an absurd count (sendto, send, recv and their buffers,
# connect, bind, accept and the names, get/setsockopt, sendmsg, recvmsg,
# sendmmsg, recvmmsg, readv, writev, poll, ppoll, select, epoll_wait,
# epoll_ctl, fstat, ioctl; a bad iovec between good ones, a read-only
# msghdr, poll/select/epoll arrays that cannot be written on the stack's
# sockets, pipes and both, idle and ready, timed; the file calls and
# record locks on a socket; option lengths 0 and negative), one case a
# child with fresh sockets, and
# prints a line a case: the result or the errno's name, for some what a
# good receive finds next (a TCP receive that faulted keeps its bytes, a
# datagram is dropped).  Run on the kernel and under `sluice run`, each
# in a network namespace of its own; every case's line must be the same,
# with no case killed.  Last, in the same stack after all cases (faults
# inside the stack's copies under its lock among them), a connection
# carries 100,000 bytes: "healthy 100000 same".
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/badptr
st=tbp-$$
trap 'rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"' EXIT
need_netns "loopback connections"
netns_secs=120

k=$(in_netns "$prog")
echo "$k" | sed 's/^/# kernel: /'
check "on the kernel: every case ran (none killed), the connection after them healthy" \
	test -z "$(grep -E 'killed-by|exit-' <<<"$k")" -a \
	"$(grep -c . <<<"$k")" -gt 140 -a "$(tail -n 1 <<<"$k")" = "healthy 100000 same"
s=$(in_netns env SLUICE_STACK=$st "$top/build/tools/sluice" run -- "$prog")
echo "$s" | sed 's/^/# sluice: /'
check "under sluice run: no case killed (a SIGSEGV in the library)" \
	test -z "$(grep -E 'killed-by|exit-' <<<"$s")"
check_as_kernel "$k" "$s"
done_testing
