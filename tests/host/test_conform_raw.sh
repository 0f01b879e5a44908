#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# System calls on sockets of the stack that bypass the library's
# wrappers (issue 24, item 7), two ways (tests/preload/rawcalls.c):
# - made with the system call instruction (raw_*): no library sees them,
#   so the fd's placeholder (an AF_UNIX socket of its own, never
#   connected, lib/preload/fdtable.c) answers. Each, beside the kernel's
#   answer on its TCP or UDP socket in the same state: the kernel's
#   answer, or an error; never a read of 0 (the peer's close), never a
#   byte moved, fstat a socket, a read with bytes waiting an error that
#   leaves them to the stack; and the connection must carry bytes both
#   ways afterwards;
# - made through libc's syscall(3) (sc_*), as gVisor's
#   SetSocketRecvBufForceAboveMax makes setsockopt: the preload
#   interposes syscall() (lib/preload/syscall.c), so each answer must be
#   the kernel's, line for line.
#
# - the socket's fd used as a file (walk_*: openat through it, mkdirat,
#   fchdir, getdents64 or fdopendir, fsync, fdatasync, statx, a reopen of
#   /proc/self/fd/N), raw and through libc: each as the kernel answers on
#   a socket (ENOTDIR, EINVAL, ENXIO); and the stack's files (records,
#   placeholders' names) the same, byte for byte, before and after. Then
#   again as nobody.
#
#   +------ a network namespace made for each run (lo up) ------+
#   |  rawcalls on the kernel        (what the calls would do)  |
#   |  sluice run rawcalls           (raw_: errors or the       |
#   |                                 kernel's; sc_, walk_: the |
#   |                                 kernel's)                 |
#   |  the same as nobody            (walk_: the kernel's)      |
#   +------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/rawcalls
tmp=$(mktemp -d)
st=tcr-$$
trap 'rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st" "/dev/shm/sluice-$st-n" \
	"/dev/shm/sluicefd-$st-n" "/dev/shm/sluice-$st-r" "/dev/shm/sluicefd-$st-r" "$tmp"' EXIT

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
	k=$(grep -m1 "^$name: " "$tmp/kernel.out")
	# The kernel's answer, or an error of the placeholder's; what else
	# may succeed there touches the placeholder alone (its own options,
	# its own name, its own shutdown, its own listen: no byte of the
	# socket or of any file).
	case $name:${line#*: } in
	*:"${k#*: }")
		ok "$line (as the kernel)" ;;
	raw_read_left:"4 (bytes)")
		ok "$line (the raw read took none: the stack still has them; the kernel: ${k#*: })" ;;
	raw_read_left:*)
		fail "$name: '${line#*: }': the bytes a raw read met are not the stack's any more" ;;
	*:"-1 E"*)
		ok "$line (the kernel: ${k#*: })" ;;
	raw_shutdown:"0 -" | raw_listen:"0 -")
		ok "$line (the placeholder's own; the kernel: ${k#*: })" ;;
	*) fail "$name: '${line#*: }', neither the kernel's '${k#*: }' nor an error" ;;
	esac
done < <(grep '^raw_' "$tmp/sluice.out")
check "23 raw calls tried ($n)" [ "$n" = 23 ]
check "raw fstat says socket, as the kernel" grep -qx 'raw_fstat: 0 - sock' "$tmp/sluice.out"
check "raw read with bytes waiting: an error, not 0 (the peer's close) nor a wait" \
	grep -qx 'raw_read_waiting: -1 E[A-Z]*' "$tmp/sluice.out"

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
# The fd as a file: the kernel's line, every one (the placeholder is a socket).
walk_lines() { # FILE ME: checks of each walk_ line of FILE (run as ME)
	local n=0 line name k
	while IFS= read -r line; do
		name=${line%%:*}
		n=$((n + 1))
		k=$(grep -m1 "^$name: " "$tmp/kernel.out")
		case $2:$name:${line#*: } in
		*:*:"${k#*: }")
			ok "$2, $line (as the kernel)" ;;
		*) fail "$2, $name: '${line#*: }', the kernel '${k#*: }'" ;;
		esac
	done < <(grep '^walk_' "$1")
	check "$2: 22 uses of the fd as a file tried ($n)" [ "$n" = 22 ]
	check "$2: the stack's files unchanged by them" grep -qx 'stack_files: unchanged' "$1"
}
walk_lines "$tmp/sluice.out" "$(id -un)"
for want in "after_send: 4" "after_recv: 4 ping" "after_back: 4" "after_recv_back: 4 pong"; do
	check "then the connection: $want" grep -qx "$want" "$tmp/sluice.out"
done
# As nobody (a stack of its own): the same.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$prog"; then
	in_netns setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$sluice" run --stack "$st-n" -- "$prog" >"$tmp/nobody.out" 2>&1
	check "as nobody: rawcalls under sluice run runs to the end" grep -qx '# done' "$tmp/nobody.out"
	walk_lines "$tmp/nobody.out" nobody
else
	skip "the fd as a file, as nobody" "not root, no setpriv, or the build not readable by nobody"
fi
# The fd opened again by its /proc and /dev names (tests/preload/reopen.py):
# Linux says ENXIO (a FIFO placeholder, layouts 31-32, waited for ever for
# a writer: a program given a socket as stdin, `cat /dev/stdin`), so each
# run is bounded and must print the kernel's lines.
k=$(in_netns timeout 20 python3 "$top/tests/preload/reopen.py" 2>&1)
s=$(in_netns timeout 20 "$sluice" run --stack "$st-r" -- python3 "$top/tests/preload/reopen.py" 2>&1)
printf '# kernel:\n%s\n# sluice:\n%s\n' "$k" "$s" | sed 's/^/# /'
check "reopen: the kernel's run answers (ENXIO)" grep -qx "tcp_proc_self ENXIO" <<<"$k"
check_as_kernel "$k" "$s"
done_testing
