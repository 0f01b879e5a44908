#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The error queue (IP_RECVERR, IPV6_RECVERR, recvmsg(MSG_ERRQUEUE)) and
# SO_TIMESTAMP on a stream, beside the kernel (issue 24).
#
#   +---------- a network namespace made for each run (lo up) ----------+
#   |  errq on the kernel                                 -> kernel.out  |
#   |  sluice run errq: datagrams to a closed port leave   -> twin.out   |
#   |    through each socket's kernel twin, the kernel's ICMP error      |
#   |    comes back to the twin (lib/preload/twin.c)                     |
#   |  SLUICE_KERNEL_LISTEN=0 sluice run errq: no twins: the   -> own.out |
#   |    stack answers itself with ICMP port unreachable and queues the  |
#   |    error on its own socket (lib/proto/errq.c)                      |
#   +---------------------------------------------------------------------+
#
# tests/preload/errq.c prints one line a check (poll, epoll, SO_ERROR,
# each error's bytes, flags, address, control messages, sock_extended_err
# and offender); every line of both Sluice runs must be the kernel's.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/errq
tmp=$(mktemp -d)
st=tce-$$

cleanup() {
	rm -rf "/dev/shm/sluice-$st-"* "/dev/shm/sluicefd-$st-"* "$tmp"
}
trap cleanup EXIT

if ! command -v unshare >/dev/null || ! unshare -n true 2>/dev/null; then
	skip "error queue beside the kernel" "no network namespaces here"
	done_testing
	exit
fi

in_netns() {
	timeout 60 unshare -n bash -c 'ip link set lo up; exec "$@"' sh "$@" </dev/null
}

in_netns "$prog" >"$tmp/kernel.out" 2>"$tmp/kernel.err"
check "errq on the kernel exits 0" [ $? = 0 ]
in_netns "$sluice" run --stack "$st-twin" -- "$prog" >"$tmp/twin.out" 2>"$tmp/twin.err"
check "errq under sluice run exits 0" [ $? = 0 ]
in_netns env SLUICE_KERNEL_LISTEN=0 "$sluice" run --stack "$st-own" -- "$prog" \
	>"$tmp/own.out" 2>"$tmp/own.err"
check "errq under sluice run without twins exits 0" [ $? = 0 ]
check "the kernel run used kernel sockets" grep -q '^# backend: kernel' "$tmp/kernel.out"
check "the sluice runs used Sluice sockets" \
	test "$(grep -c '^# backend: sluice' "$tmp/twin.out" "$tmp/own.out" | grep -c ':1$')" = 2
for f in kernel twin own; do
	check "errq ($f) runs to the end" grep -q '^# done' "$tmp/$f.out"
done

# One TAP line a check and run, line by line in the kernel's order.
for run in twin own; do
	mapfile -t K < <(grep -v '^#' "$tmp/kernel.out")
	mapfile -t S < <(grep -v '^#' "$tmp/$run.out")
	check "$run: as many lines as the kernel's (${#S[@]}, ${#K[@]})" [ ${#S[@]} = ${#K[@]} ]
	for i in "${!K[@]}"; do
		if [ "${K[i]}" = "${S[i]:-}" ]; then
			ok "$run: ${K[i]}"
		else
			fail "$run: line $((i + 1)): kernel '${K[i]}', sluice '${S[i]:-}'"
		fi
	done
done
n=$(grep -vc '^#' "$tmp/kernel.out")
check "at least 150 checks compared a run ($n)" [ "$n" -ge 150 ]

# Without twins the errors were the stack's own: it sent the port
# unreachables and took them in.
c() { "$sluice" dump "$st-own" 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'; }
tx=$(c icmp_unreach_tx) rx=$(c icmp_unreach_rx)
check "the stack answered with port unreachable (${tx:-0}) and took it in (${rx:-0})" \
	test "${tx:-0}" -ge 15 -a "${rx:-0}" = "${tx:-0}"
done_testing
