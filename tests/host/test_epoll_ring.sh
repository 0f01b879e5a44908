#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# An epoll set's look costs O(its own sockets' changes), not O(every
# change in the stack) (issue 23 item 2): tests/preload/epoll_ring.py
# looks 200 times at an idle set of 4 sockets while a forked child churns
# 32 connections of its own (no epoll); the readiness entries the set
# read (counter epoll_entries) and its full looks (epoll_full_look) must
# stay at 0, where the stack's journal made it read every change of the
# child's (thousands, and full looks once it fell 1,024 behind).  The
# same script on the kernel, in the same run: what each set reports (its
# own data, a socket in two sets, edge-triggered, one-shot, a set shared
# by fork) must be the same lines under sluice run.
#
#   +---- network namespace made here (lo up for the kernel) ----+
#   | python3 epoll_ring.py              (the kernel's loopback) |
#   | sluice run python3 epoll_ring.py   (a stack in /dev/shm)   |
#   +------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
stack_test ts-ering
st=ts-ering-1-$$
script=$top/tests/preload/epoll_ring.py

k=$(timeout 120 unshare -n sh -c 'ip link set lo up && exec "$0" "$1"' "$py" "$script" 2>&1)
s=$(SLUICE_NO_HELPER=1 timeout 120 unshare -n "$sluice" run --stack "$st" -- \
	"$py" "$script" "$sluice" "$st" 2>&1)
sed 's/^/# kernel: /' <<<"$k"
sed 's/^/# sluice: /' <<<"$s"
check "the kernel ran it" grep -q '^fork_child ' <<<"$k"
check "sluice run ran it" grep -q '^fork_child ' <<<"$s"
check "the child churned 20 rounds or more (kernel)" grep -q '^churn_rounds_enough yes' <<<"$k"
check "the child churned 20 rounds or more (sluice)" grep -q '^churn_rounds_enough yes' <<<"$s"
check_as_kernel "$(grep -v '^ring_' <<<"$k")" "$s"
ent=$(sed -n 's/^ring_entries //p' <<<"$s")
full=$(sed -n 's/^ring_full_looks //p' <<<"$s")
check "the idle set read no readiness entry while another process churned (read $ent)" \
	test "${ent:--1}" = 0
check "the idle set made no full look meanwhile (made $full)" test "${full:--1}" = 0
done_testing
