#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# O_ASYNC on a TAP stack: the datagram comes from the kernel over the
# TAP device while the program's only thread sleeps in sigsuspend(), so
# the frame is read and the bell rung by whoever the stack has then (the
# process's TAP queue server, lib/link/README.md), never by the owner's
# own call.  The same program on the kernel in the same namespace, the
# datagram sent to the kernel's address; the lines must be the same.
#
#   netns sl-stap-PID
#   +---------------------------------------------------------+
#   |  kernel 10.209.0.1/24 on st0  --UDP-->  TAP st0  -->    |
#   |  (and, for the kernel's run, to itself)   stack          |
#   |                                           sg-PID,        |
#   |                                           10.209.0.2     |
#   |                                           tests/preload/ |
#   |                                           sigio wait_udp |
#   +---------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/sigio
sluice=$top/build/tools/sluice
ns=sl-stap-$$
st=sg-$$
port=18611
netns_test "O_ASYNC over TAP" "$ns" -- "$st"
in_ns ip tuntap add dev st0 mode tap multi_queue
in_ns ip addr add 10.209.0.1/24 dev st0
in_ns ip link set st0 up

# run OUT DEST CMD...: CMD in the namespace; once it says ready, one
# datagram to DEST:port from the kernel.
run() {
	local out=$1 dest=$2
	shift 2
	in_ns timeout 20 "$@" >"$out" 2>&1 &
	local p=$!
	for _ in $(seq 100); do grep -q '^ready' "$out" && break; sleep 0.1; done
	sleep 0.3
	in_ns bash -c "echo x >/dev/udp/$dest/$port"
	wait $p
}
run "$tmp/k" 10.209.0.1 "$prog" wait_udp $port
run "$tmp/s" 10.209.0.2 "$sluice" run --stack "$st" --tap st0 --addr 10.209.0.2/24 -- \
	"$prog" wait_udp $port
k=$(grep -v '^ready' "$tmp/k")
s=$(grep -v '^ready' "$tmp/s")
printf '# kernel: %s\n# sluice: %s\n' "$k" "$s"
check "on the kernel: the owner asleep gets its signal ($k)" grep -q '^wait_udp sig=' <<<"$k"
check_as_kernel "$k" "$s"
done_testing
