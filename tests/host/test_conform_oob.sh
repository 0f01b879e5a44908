#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Urgent data (send/recv MSG_OOB, SO_OOBINLINE, SIOCATMARK, FIONREAD at
# the mark, POLLPRI, EPOLLPRI, select's exception set, SIGURG to the
# owner; issue 24 item 5),
# tests/preload/oob.c: a receiver prints a line a case, and every run must
# print the kernel's lines.
#  1. both ends on the kernel's loopback (the reference), and both ends in
#     one Sluice stack under `sluice run` (loopback inside the stack);
#  2. over TAP, the kernel's TCP as the peer each way, so the URG flag
#     and pointer Sluice sends are what Linux reads, and the other way:
#
#   netns sl-oob-PID
#   +-----------------------------------------------------------------+
#   |  kernel stack                |  TAP ob0  |  stack to-r-PID       |
#   |  10.231.0.1/24, oob send ----+-----------+-> oob recv (sluice    |
#   |                              |           |   run), 10.231.0.2    |
#   |                              |           |                       |
#   |  10.232.0.1/24, oob recv <---+-----------+-- oob send (sluice    |
#   |                              |  TAP ob1  |   run), stack to-s-PID|
#   |                              |           |   10.232.0.2          |
#   +-----------------------------------------------------------------+
#
# All traffic stays inside the namespace; every program is bounded by
# timeout(1) (and its own alarm(60)).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/oob
ns=sl-oob-$$
lst=to-l-$$
rst=to-r-$$
sst=to-s-$$
netns_test "urgent data" "$ns" -- "$lst" "$rst" "$sst"
shown() { grep -v '^#' <<<"$1"; }

k=$(in_ns timeout 90 "$prog" local 2>&1)
echo "$k" | sed 's/^/# kernel: /'
check "on the kernel: every step came in time, 52 cases" \
	test -z "$(grep '^# step' <<<"$k")" -a "$(shown "$k" | wc -l)" = 52
k=$(shown "$k")
check "on the kernel: the urgent byte is out of band, POLLPRI, select's exception set" \
	test -n "$(grep -x 'basic_oob 1 c msg_oob1' <<<"$k")" -a \
	-n "$(grep -x 'basic_poll in1 pri1' <<<"$k")" -a \
	-n "$(grep -x 'basic_select read1 except1' <<<"$k")"
check "on the kernel: SIGURG (SI_KERNEL) to the owner, process, group or thread, none without one" \
	test -n "$(grep -x 'sigurg_pid n1 code SI_KERNEL' <<<"$k")" -a \
	-n "$(grep -x 'sigurg_pgrp n1 code SI_KERNEL' <<<"$k")" -a \
	-n "$(grep -x 'sigurg_tid n1 code SI_KERNEL' <<<"$k")" -a \
	-n "$(grep -x 'sigurg_async n1 code SI_KERNEL sigio 1' <<<"$k")" -a \
	-n "$(grep -x 'sigurg_no_owner n0 code -' <<<"$k")" -a \
	-n "$(grep -x 'sigurg_owner_gone n0 code -' <<<"$k")"

s=$(in_ns timeout 90 env SLUICE_STACK="$lst" "$sluice" run -- "$prog" local 2>&1)
echo "$s" | sed 's/^/# sluice: /'
check_as_kernel "$k" "$s"

in_ns ip tuntap add dev ob0 mode tap
in_ns ip addr add 10.231.0.1/24 dev ob0
in_ns ip link set ob0 up
in_ns ip tuntap add dev ob1 mode tap
in_ns ip addr add 10.232.0.1/24 dev ob1
in_ns ip link set ob1 up

: >"$tmp/r.out"; : >"$tmp/kr.out"
# A Sluice receiver, the kernel sending.
in_ns timeout 90 "$sluice" run --stack "$rst" --tap ob0 --addr 10.231.0.2/24 -- \
	"$prog" recv 18100 >"$tmp/r.out" 2>&1 &
for _ in $(seq 100); do grep -q '^# ready' "$tmp/r.out" && break; sleep 0.1; done
in_ns timeout 90 "$prog" send 10.231.0.2 18100 >"$tmp/ks.out" 2>&1
wait $!
s=$(cat "$tmp/r.out" "$tmp/ks.out")
echo "$s" | sed 's/^/# sluice receiver, kernel sender: /'
while read -r c _; do
	check "Sluice receiving from the kernel over TAP: $c as on the kernel" \
		test "$(grep "^$c " <<<"$s")" = "$(grep "^$c " <<<"$k")"
done <<<"$k"
ao=$(counter "$rst" tcp_passive_open)
check "the receiver's connection was the stack's (tcp_passive_open ${ao:-?})" [ "${ao:-0}" = 1 ]

# The kernel receiving, a Sluice sender.
in_ns timeout 90 "$prog" recv 18101 >"$tmp/kr.out" 2>&1 &
for _ in $(seq 100); do grep -q '^# ready' "$tmp/kr.out" && break; sleep 0.1; done
in_ns timeout 90 "$sluice" run --stack "$sst" --tap ob1 --addr 10.232.0.2/24 -- \
	"$prog" send 10.232.0.1 18101 >"$tmp/s.out" 2>&1
wait $!
s=$(cat "$tmp/kr.out" "$tmp/s.out")
echo "$s" | sed 's/^/# kernel receiver, sluice sender: /'
while read -r c _; do
	check "the kernel receiving from Sluice over TAP: $c as on the kernel" \
		test "$(grep "^$c " <<<"$s")" = "$(grep "^$c " <<<"$k")"
done <<<"$k"
ao=$(counter "$sst" tcp_active_open)
check "the sender's connection was the stack's (tcp_active_open ${ao:-?})" [ "${ao:-0}" = 1 ]
done_testing
