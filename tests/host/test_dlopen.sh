#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The preload library loaded with dlopen() and its calls looked up with
# dlsym() (issue 24, items 3 and 8): tests/preload/dlopen_prog makes TCP
# and UDP sockets, connects, sends and receives (sendmmsg/recvmmsg too),
# all through the dlsym()ed calls, and checks that errno survives every
# call that succeeds.  Before the library bound its own calls to itself,
# sendmmsg and recvmmsg reached libc's sendmsg/recvmsg and failed ENOTSOCK.
#
#   +--- network namespace made here (lo DOWN) ---+
#   | dlopen_prog: the stack's 127/8 only           |
#   +-----------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/dlopen_prog
st=ts-dl-$$
trap 'rm -rf /dev/shm/sluice-$st /dev/shm/sluicefd-$st' EXIT

if ! unshare -n true 2>/dev/null; then
	skip "dlopen" "no network namespaces here"
	done_testing
	exit
fi
out=$(SLUICE_STACK=$st timeout 30 unshare -n "$prog" "$top/build/libsluice-preload.so" 2>&1)
rc=$?
echo "$out" | grep -v '^ok \|^not ok ' | sed 's/^/# /'
while read -r line; do
	case $line in
	"ok "*) ok "${line#ok }" ;;
	"not ok "*) fail "${line#not ok }" ;;
	esac
done <<<"$out"
check "dlopen_prog exits 0 ($rc)" [ "$rc" = 0 ]
check "every check ran (12)" [ "$(grep -c '^ok \|^not ok ' <<<"$out")" = 12 ]
done_testing
