#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The Sluice demo on an embedded default that needs no InfiniBand hardware.
# It installs what is missing, builds, and then shows:
#  1. a Sluice stack on a TAP device inside a network namespace made for the
#     demo, with the Linux kernel as its peer: the kernel pings it and talks
#     TCP to its echo server, latency beside a kernel echo server;
#  2. two processes sharing one Sluice stack, beside two processes on the
#     kernel's loopback: TCP ping-pong latency and bulk throughput;
#  3. the kernel module in Debian's kernel under QEMU: loaded, queried
#     through /dev/sluice, sysfs and debugfs, holding a stack that the
#     sluice tool and sysfs show, and unloaded.
# Every step is bounded in time; the namespace is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
bash tests/vm/deps.sh
make -s -j2 all

bench=$top/build/tests/bench/bench
peer=$top/build/tests/interop/peer
sluice=$top/build/tools/sluice
ns=sl-demo-$$
stack=demo-$$

cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null
	[ -n "${kec:-}" ] && kill "$kec" 2>/dev/null
	wait 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -f "/dev/shm/sluice-$stack"
}
trap cleanup EXIT

echo "== 1. A Sluice stack on a TAP device, the Linux kernel as its peer"
cat <<'PIC'
   netns sl-demo (made for the demo, removed after)
   +-----------------------------------------------------------+
   |  Linux kernel 10.203.0.1 --- TAP sl0 --- Sluice 10.203.0.2 |
   |  ping, TCP client                     ICMP, TCP echo :7    |
   +-----------------------------------------------------------+
PIC
if ip netns add "$ns" 2>/dev/null; then
	in_ns() { ip netns exec "$ns" "$@"; }
	in_ns ip link set lo up
	in_ns ip tuntap add dev sl0 mode tap multi_queue
	in_ns ip addr add 10.203.0.1/24 dev sl0
	in_ns ip link set sl0 up
	out=$(mktemp)
	in_ns timeout 60 "$peer" serve "$stack" 10.203.0.2/24 sl0 30 >"$out" 2>&1 &
	srv=$!
	for _ in $(seq 50); do grep -qx ready "$out" && break; sleep 0.1; done
	in_ns timeout 20 busybox ping -c 3 -W 3 10.203.0.2 | sed 's/^/   /'
	in_ns timeout 30 "$bench" kecho 7007 25 >"$out.k" 2>&1 &
	kec=$!
	for _ in $(seq 50); do grep -qx ready "$out.k" && break; sleep 0.1; done
	read -r s_mean s_best < <(in_ns timeout 30 "$bench" rtt 10.203.0.2 7 2000)
	read -r k_mean k_best < <(in_ns timeout 30 "$bench" rtt 127.0.0.1 7007 2000)
	printf '   kernel TCP client, 64-byte ping-pong, 2000 rounds, one-way latency (mean / best):\n'
	printf '     to the Sluice echo server over TAP     %6s / %6s us\n' "$s_mean" "$s_best"
	printf '     to a kernel echo server over loopback  %6s / %6s us\n' "$k_mean" "$k_best"
	echo "   (the TAP path crosses the kernel's TAP driver twice per round trip;"
	echo "    step 2 compares the stacks themselves)"
	echo "   sluice dump $stack:"
	"$sluice" dump "$stack" | sed 's/^/     /'
	kill "$srv" "$kec" 2>/dev/null || true
	wait 2>/dev/null || true
	srv= kec=
else
	echo "   (skipped: network namespaces are not available here)"
fi

echo
echo "== 2. Two processes on one Sluice stack, beside two processes on the kernel's loopback"
"$bench" pingpong 20000 | sed 's/^/   /'
"$bench" bulk 256 | sed 's/^/   /'

echo
echo "== 3. The kernel module in Debian's kernel, under QEMU"
bash tests/vm/run.sh --demo 2>&1 | sed 's/^/   /'
