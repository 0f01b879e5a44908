#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Small writes against delayed ACKs (issue 19), timed beside the kernel in
# the same run (tests/bench/small_writes.py, each side in a network
# namespace of its own, about 5 s): write-write-read stalls on Nagle and
# the delayed ACK as often as on the kernel (not less: Nagle is kept);
# 960 1-byte sends on 16 one-way connection pairs take at most twice the
# kernel's time (+100 ms) with no more 20 ms stalls than it has, + 2 (the
# ACK a read sends, Linux's tcp_cleanup_rbuf()); request/response on one
# connection stalls no more than on the kernel.  Then write-write-read
# alone for 240 rounds on each (about 11 s): its delayed ACK leaves at
# 40 ms, as the kernel's, and a round takes 90 ms or more no more often
# than on the kernel, + 2 (two processes, one connection: the server's
# delayed-ACK timer is run by whichever of them keeps the stack's timers,
# lib/README.md "Waiting"; when each of the two took the other for its
# keeper, 1-7 rounds in 120 took 100.2-125 ms, most of them 100.2-100.4:
# the other sleeper's 100 ms; a loaded machine makes a few rounds of
# 60-95 ms on both).
set -u
. "$(dirname "$0")/lib.sh"
stack_test sw
need_netns "small writes beside the kernel"
bench=$top/tests/bench/small_writes.py

k=$(in_netns "$py" "$bench" -t 4 2>&1)
s=$(in_netns env SLUICE_STACK=sw-run-$$ "$sluice" run -- "$py" "$bench" -t 4 2>&1)
echo "# pattern rounds total_ms rps p50_ms p99_ms max_ms stalls late"
sed 's/^/# kernel: /' <<<"$k"
sed 's/^/# sluice: /' <<<"$s"
# field PATTERN N OUTPUT: the Nth figure of the pattern's line
field() { awk -v p="$1" -v n="$2" '$1 == p { print $n }' <<<"$3"; }
for p in wwr alt rr; do
	check "$p: both ran every round" \
		test "$(field $p 2 "$k")" -gt 0 -a "$(field $p 2 "$s")" = "$(field $p 2 "$k")"
done
ks=$(field wwr 8 "$k") ss=$(field wwr 8 "$s")
check "wwr: Nagle's stalls as on the kernel ($ss, kernel $ks, within 2)" \
	test "$ss" -le $((ks + 2)) -a "$ss" -ge $((ks - 2))
kt=$(field alt 3 "$k") st=$(field alt 3 "$s")
check "alt: at most twice the kernel's time + 100 ms ($st ms, kernel $kt ms)" \
	awk -v s="$st" -v k="$kt" 'BEGIN { exit !(s <= 2 * k + 100) }'
ks=$(field alt 8 "$k") ss=$(field alt 8 "$s")
check "alt: stalls no more than the kernel's + 2 ($ss, kernel $ks)" test "$ss" -le $((ks + 2))
ks=$(field rr 8 "$k") ss=$(field rr 8 "$s")
check "rr: stalls no more than the kernel's + 1 ($ss, kernel $ks)" test "$ss" -le $((ks + 1))
k=$(in_netns "$py" "$bench" wwr -r 240 -t 20 2>&1)
s=$(in_netns env SLUICE_STACK=sw-late-$$ "$sluice" run -- "$py" "$bench" wwr -r 240 -t 20 2>&1)
sed 's/^/# kernel: /' <<<"$k"
sed 's/^/# sluice: /' <<<"$s"
check "wwr x240: both ran every round" \
	test "$(field wwr 2 "$k")" = 240 -a "$(field wwr 2 "$s")" = 240
kl=$(field wwr 9 "$k") sl=$(field wwr 9 "$s")
check "wwr x240: rounds of 90 ms or more no more than the kernel's + 2 ($sl, kernel $kl; longest $(field wwr 7 "$s") ms, kernel $(field wwr 7 "$k"))" \
	test "$sl" -le $((kl + 2))
done_testing
