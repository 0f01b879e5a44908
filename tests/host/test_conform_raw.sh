#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# System calls on sockets of the stack that bypass the library's
# wrappers (issue 24, item 7), two ways (tests/preload/rawcalls.c):
# - made with the system call instruction (raw_*): no library sees them,
#   so the fd's placeholder (a directory, lib/preload/fdtable.c) answers.
#   Every one must fail with an error, no byte behind the fd read or
#   written, and the connection must carry bytes both ways afterwards;
# - made through libc's syscall(3) (sc_*), as gVisor's
#   SetSocketRecvBufForceAboveMax makes setsockopt: the preload
#   interposes syscall() (lib/preload/syscall.c), so each answer must be
#   the kernel's, line for line.
#
#   +------ a network namespace made for each run (lo up) ------+
#   |  rawcalls on the kernel        (what the calls would do)  |
#   |  sluice run rawcalls           (raw_: errors; sc_: same)  |
#   +------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/rawcalls
tmp=$(mktemp -d)
st=tcr-$$
trap 'rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st" "$tmp"' EXIT

if ! command -v unshare >/dev/null || ! unshare -n true 2>/dev/null; then
	skip "raw system calls on stack sockets" "no network namespaces here"
	done_testing
	exit
fi
in_netns() {
	timeout 60 unshare -n bash -c 'ip link set lo up; exec "$@"' sh "$@" </dev/null
}

in_netns "$prog" >"$tmp/kernel.out" 2>&1
check "rawcalls on the kernel exits 0" [ $? = 0 ]
in_netns "$sluice" run --stack "$st" -- "$prog" >"$tmp/sluice.out" 2>&1
check "rawcalls under sluice run exits 0" [ $? = 0 ]
check "the kernel run used kernel sockets" grep -qx '# backend: kernel' "$tmp/kernel.out"
check "the sluice run used Sluice sockets" grep -qx '# backend: sluice' "$tmp/sluice.out"
check "rawcalls under sluice run runs to the end" grep -qx '# done' "$tmp/sluice.out"
sed 's/^/# kernel: /' "$tmp/kernel.out"
n=0
while IFS= read -r line; do
	name=${line%%:*}
	n=$((n + 1))
	# What a directory's description answers: never a byte moved.
	case ${line#*: } in
	"-1 ENOTSOCK" | "-1 EISDIR" | "-1 EBADF" | "-1 ENOTTY" | "-1 ENODEV")
		ok "$line" ;;
	*) fail "$name: '${line#*: }', not an error of the placeholder's" ;;
	esac
done < <(grep '^raw_' "$tmp/sluice.out")
check "20 raw calls tried ($n)" [ "$n" = 20 ]
n=0
while IFS= read -r line; do
	name=${line%%:*}
	n=$((n + 1))
	k=$(grep -m1 "^$name: " "$tmp/kernel.out")
	if [ "$line" = "$k" ]; then
		ok "through syscall(3), as the kernel: $line"
	else
		fail "through syscall(3): '$line', the kernel '$k'"
	fi
done < <(grep '^sc_' "$tmp/sluice.out")
check "20 calls through syscall(3) tried ($n)" [ "$n" = 20 ]
for want in "after_send: 4" "after_recv: 4 ping" "after_back: 4" "after_recv_back: 4 pong"; do
	check "then the connection: $want" grep -qx "$want" "$tmp/sluice.out"
done
done_testing
