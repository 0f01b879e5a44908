#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# EPOLLEXCLUSIVE without the module (issue 23 items 2 and 7):
# tests/preload/epoll_excl.c, on the kernel and under `sluice run`, the
# same expectations.  Four forked workers, each with its own epoll set on
# one shared listener, take 200 connections made one at a time: with the
# flag one worker wakes a connection (voluntary context switches of all
# four, at most 1.5 a connection), without it every one (at least 3); all
# answered, and a burst of 32 at once answered too (no wake-up lost);
# then one worker is killed asleep and 20 more connections are all
# answered by the others (info_after_kill_slowest_ms, the slowest of
# them: at load 13-20 the kernel 0.1-22 ms, Sluice 0.2-63; a dead bell
# taken for rung, so that the next connection waits for a sleeper's time
# bound, gave 21-41 in two runs: a figure, not a check).
# mixed and mixedplain: the same with a socketpair end and an eventfd in
# each worker's set beside the listener (nginx's workers: the channel to
# the master, an eventfd), so each set sleeps in the kernel with its bell;
# each worker's eventfd is written once and its channel stops it, both
# read from its set (kernel_fds_seen).
# And epoll_ctl's errno cases for the flag (EINVAL for EPOLL_CTL_MOD with
# it or of an item added with it, and with EPOLLONESHOT, EPOLLRDHUP or
# EPOLLPRI) as the kernel's.  Counts of wake-ups are noisy on a loaded
# machine: a case that misses is run once more.
#
#   +---- network namespace made here (lo up for the kernel) ----+
#   | epoll_excl excl|plain              (the kernel's loopback) |
#   | sluice run epoll_excl excl|plain   (a stack in /dev/shm)   |
#   +------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
stack_test ts-excl
prog=$top/build/tests/preload/epoll_excl

run_k() {
	timeout 120 unshare -n sh -c 'ip link set lo up && exec "$0" "$1"' "$prog" "$1" 2>&1
}
run_s() {
	SLUICE_NO_HELPER=1 timeout 120 unshare -n "$sluice" run --stack "ts-excl-$1-$2-$$" -- \
		"$prog" "$1" 2>&1
}
for mode in excl plain mixed mixedplain; do
	want=one_woken_a_conn
	case $mode in *plain) want=every_worker_woken ;; esac
	k=$(run_k $mode)
	grep -q "^$want yes" <<<"$k" || k=$(run_k $mode)
	s=$(run_s $mode 1)
	grep -q "^$want yes" <<<"$s" || s=$(run_s $mode 2)
	sed "s/^/# kernel $mode: /" <<<"$k"
	sed "s/^/# sluice $mode: /" <<<"$s"
	check "$mode: the kernel ran it" grep -q "^$want " <<<"$k"
	check "$mode: sluice run ran it" grep -q "^$want " <<<"$s"
	check "$mode: the kernel's wake-ups as expected" grep -q "^$want yes" <<<"$k"
	check_as_kernel "$(grep -v '^info_' <<<"$k")" "$s"
done
done_testing
