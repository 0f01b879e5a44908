#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Unmodified programs under `sluice run` over a TAP link, the host kernel
# as the peer, inside a network namespace this test creates (and deletes):
#
#   netns sl-ptap-PID
#   +------------------------------------------------------------------+
#   |  kernel stack                 |  TAP pt0  |  stack tp-c-PID       |
#   |  10.203.0.1/24 on pt0    <----+-----------+-- curl (sluice run)   |
#   |  python3 http.server (kernel) |           |  10.203.0.2           |
#   |                               |           |                       |
#   |  10.204.0.1/24 on pt1    -----+-----------+-> http.server         |
#   |  curl (kernel)                |  TAP pt1  |  (sluice run)         |
#   |                               |           |  stack tp-s-PID,      |
#   |                               |           |  10.204.0.2           |
#   +------------------------------------------------------------------+
#
# All traffic stays inside the namespace; every program is bounded by
# timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3

if ! ip netns add "sl-probe-$$" 2>/dev/null; then
	skip "preload over TAP" "cannot create network namespaces here"
	done_testing
	exit
fi
ip netns del "sl-probe-$$"

ns=sl-ptap-$$
cst=tp-c-$$
sst=tp-s-$$
tmp=$(mktemp -d)
cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "/dev/shm/sluice-$cst" "/dev/shm/sluicefd-$cst" \
		"/dev/shm/sluice-$sst" "/dev/shm/sluicefd-$sst"
	rm -rf "$tmp"
}
trap cleanup EXIT
in_ns() { ip netns exec "$ns" "$@"; }
counter() { "$sluice" dump "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }'; }

rm -rf "/dev/shm/sluice-$cst" "/dev/shm/sluicefd-$cst" "/dev/shm/sluice-$sst" "/dev/shm/sluicefd-$sst"
ip netns add "$ns"
in_ns ip link set lo up
for i in 0 1; do
	in_ns ip tuntap add dev "pt$i" mode tap multi_queue
	in_ns ip addr add "10.20$((3 + i)).0.1/24" dev "pt$i"
	in_ns ip link set "pt$i" up
done
mkdir -p "$tmp/www"
echo "served by $$" >"$tmp/www/index.txt"
head -c 300000 /dev/urandom >"$tmp/www/big.bin"

# Sluice client, kernel server.
in_ns timeout 60 "$py" -m http.server --bind 10.203.0.1 18090 --directory "$tmp/www" \
	>"$tmp/ksrv.log" 2>&1 &
for _ in $(seq 50); do in_ns ss -ltn 2>/dev/null | grep -q ':18090 ' && break; sleep 0.1; done
out=$(in_ns timeout 20 "$sluice" run --stack "$cst" --tap pt0 --addr 10.203.0.2/24 -- \
	curl -sS --max-time 10 http://10.203.0.1:18090/index.txt 2>&1)
check "curl under sluice run fetches from a kernel server over TAP" [ "$out" = "served by $$" ]
in_ns timeout 30 "$sluice" run --stack "$cst" --tap pt0 --addr 10.203.0.2/24 -- \
	curl -sS --max-time 20 -o "$tmp/big.got" http://10.203.0.1:18090/big.bin
check "a 300 kB download over TAP is byte-exact" cmp -s "$tmp/www/big.bin" "$tmp/big.got"
ao=$(counter "$cst" tcp_active_open)
check "the client's connections were the stack's (tcp_active_open ${ao:-?})" [ "${ao:-0}" = 2 ]
lt=$(counter "$cst" link_tx)
check "frames went out on the TAP link (link_tx ${lt:-?})" [ "${lt:-0}" -gt 10 ]

# Sluice server, kernel client.
in_ns timeout 60 "$sluice" run --stack "$sst" --tap pt1 --addr 10.204.0.2/24 -- \
	"$py" -m http.server --bind 0.0.0.0 18091 --directory "$tmp/www" >"$tmp/ssrv.log" 2>&1 &
for _ in $(seq 50); do "$sluice" fds "$sst" | grep -q python3 && break; sleep 0.1; done
out=$(in_ns timeout 20 curl -sS --max-time 10 http://10.204.0.2:18091/index.txt 2>&1)
check "a kernel curl fetches from http.server under sluice run over TAP" [ "$out" = "served by $$" ]
in_ns timeout 30 curl -sS --max-time 20 -o "$tmp/big2.got" http://10.204.0.2:18091/big.bin
check "a 300 kB upload from Sluice over TAP is byte-exact" cmp -s "$tmp/www/big.bin" "$tmp/big2.got"
po=$(counter "$sst" tcp_passive_open)
check "the server's connections were the stack's (tcp_passive_open ${po:-?})" [ "${po:-0}" = 2 ]
done_testing
