#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Listeners, datagram sockets and fresh sockets kept across an exec of a
# program that does not run under Sluice (issue 15; lib/preload/README.md,
# "At exec"), beside the kernel.
#
#   +------------- network namespace made here (lo up) ---------------+
#   |  exec_keep run METHOD: a listener (O_NONBLOCK), a listener on    |
#   |  [::], a bound UDP socket, a fresh TCP socket, a close-on-exec   |
#   |  listener; a client process forked first; then METHOD (execve,   |
#   |  fexecve, execveat with a directory fd) of itself without        |
#   |  LD_PRELOAD.  The new program prints what each fd is and serves  |
#   |  the client (a stack client under sluice run) and itself.        |
#   |  posix_spawn, posix_spawnp: the same, spawned (glibc's vfork'd   |
#   |  child), with a file action that dup2()s the close-on-exec      |
#   |  listener; the parent says what its fds are after, closes those  |
#   |  it gave, and serves a connection on the close-on-exec listener. |
#   |  vfork: the same with vfork() and execve() (no file action).     |
#   +------------------------------------------------------------------+
#
# 1. Each METHOD on the kernel, then under sluice run: the same lines
#    (family, type, listening, port kept, O_NONBLOCK, FD_CLOEXEC; every
#    socket served), and under Sluice the four sockets were the stack's
#    until the exec (each "handed to the kernel before exec"); spawned,
#    the six fds the child gets were put there by the parent (each
#    "handed to the kernel in the spawned"), whose own fds stay the
#    stack's; after vfork(), the child put them there itself before its
#    execve(), the parent's memory unchanged.
# 2. SLUICE_EXEC_HANDOFF=0: the old behaviour, kept as an option (the new
#    program finds no socket at the listener's fd), exec'd or spawned.
# 3. SLUICE_KERNEL_LISTEN=0 (no twins): the listener cannot be moved; the
#    library says so on stderr, naming the fd.
set -u
. "$(dirname "$0")/lib.sh"
unshare_test "sockets kept across exec" exec_keep tek-$$

cat >"$tmp/run.sh" <<'EOS'
set -u
ip link set lo up
sluice=$1 prog=$2 st=$3 tmp=$4
. "$5"
R=(env SLUICE_NO_HELPER=1 "$sluice" run --stack "$st" --)
same() { diff "$1" "$2" >/dev/null; }
for m in execve fexecve execveat posix_spawn posix_spawnp vfork; do
	timeout 30 "$prog" run $m >"$tmp/k-$m" 2>&1
	echo "# kernel, $m: rc $?"
	sed 's/^/#   /' "$tmp/k-$m"
	timeout 30 env SLUICE_DEBUG=1 "${R[@]}" "$prog" run $m >"$tmp/s-$m" 2>"$tmp/e-$m"
	echo "# sluice run, $m: rc $?"
	sed 's/^/#   /' "$tmp/s-$m"
	check "$m, kernel: every socket found and served" grep -q '^after: every socket served$' "$tmp/k-$m"
	check "$m, sluice run: the same lines as the kernel's" same "$tmp/k-$m" "$tmp/s-$m"
	case $m in
	posix_spawn*)
		n=$(grep -c 'handed to the kernel in the spawned' "$tmp/e-$m")
		check "$m, sluice run: the parent put a kernel socket at the six fds the child gets ($n)" \
			test "$n" = 6 ;;
	vfork)
		n=$(grep -c 'handed to the kernel before exec of .* in a vfork() child' "$tmp/e-$m")
		check "$m, sluice run: the child put a kernel socket at its five fds before its execve ($n)" \
			test "$n" = 5 ;;
	*)
		# The listener's dup moves with the listener (become_kernel()
		# takes every fd of a socket and says so for the dup).
		n=$(grep -c -e 'handed to the kernel before exec' \
			-e 'a dup of fd [0-9]*, to the kernel with it' "$tmp/e-$m")
		check "$m, sluice run: the five fds were the stack's until the exec ($n handed over)" \
			test "$n" = 5 ;;
	esac
done

timeout 30 env SLUICE_EXEC_HANDOFF=0 "${R[@]}" "$prog" run execve >"$tmp/off" 2>&1
sed 's/^/#   /' "$tmp/off"
check "SLUICE_EXEC_HANDOFF=0: as before, the new program finds none of its sockets at the listener's fd (the placeholder, an AF_UNIX socket that listens to nothing)" \
	grep -q '^listener: \(no socket\|AF_UNIX SOCK_STREAM, listening 0\)' "$tmp/off"
timeout 30 env SLUICE_EXEC_HANDOFF=0 "${R[@]}" "$prog" run posix_spawn >"$tmp/off" 2>&1
sed 's/^/#   /' "$tmp/off"
check "SLUICE_EXEC_HANDOFF=0, posix_spawn: as before, the spawned program finds none of its sockets there" \
	grep -q '^listener: \(no socket\|AF_UNIX SOCK_STREAM, listening 0\)' "$tmp/off"

timeout 30 env SLUICE_KERNEL_LISTEN=0 "${R[@]}" "$prog" run execve >"$tmp/notw" 2>&1
sed 's/^/#   /' "$tmp/notw"
check "no twins (SLUICE_KERNEL_LISTEN=0): the library says the listener stays the stack's, naming the fd" \
	grep -q "fd [0-9]* stays the stack's listener across the exec of .*: it has no kernel twin" "$tmp/notw"
done_testing
EOS
unshare -n bash "$tmp/run.sh" "$sluice" "$prog" "$st" "$tmp" "$top/tests/host/lib.sh"
