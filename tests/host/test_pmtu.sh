#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Path MTU discovery, black-hole detection, IPv4 reassembly and the ICMP
# rate limit, a Sluice stack and the kernel side by side over the same
# smaller-MTU hop, in namespaces this test creates (and deletes):
#
#   Sluice 10.230.1.2 ==TAP pm0== R1 ==veth 1280== R2 ==veth== K 10.230.4.2
#   Sluice 10.230.5.2 ==TAP pm1==/                  (kernel peer)
#   kernel 10.230.2.2 ==veth=====/
#   (KS: the kernel beside Sluice; the second stack serves phase 2)
#
# R1 and R2 are Linux routers; the 1280-byte hop sits between them, every
# other link is 1500.  Phase 1: the routers send ICMP fragmentation
# needed (RFC 1191).  Phase 2: they send none (a policy route throws
# their ICMP away): a black hole, which Linux survives with
# tcp_mtu_probing=1 (set in K and KS) and Sluice by the same rule.
# Every transfer is 100,000 bytes echoed back: data both ways.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
peer=$(dirname "$0")/pmtu_peer.py

need_netns "path MTU"

r1=sl-pm-r1-$$ r2=sl-pm-r2-$$ k=sl-pm-k-$$ ks=sl-pm-ks-$$
st1=pm1-$$ st2=pm2-$$
S=10.230.1.2 S2=10.230.5.2 KS=10.230.2.2 K=10.230.4.2
tmp=$(mktemp -d)
cleanup() {
	# Everything this test started runs in its namespaces (stack helpers too).
	for n in "$r1" "$r2" "$k" "$ks"; do ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null; done
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	for n in "$r1" "$r2" "$k" "$ks"; do ip netns del "$n" 2>/dev/null; done
	for st in "$st1" "$st2"; do rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"; done
	rm -rf "$tmp"
}
trap cleanup EXIT
nsx() { local n=$1; shift; ip netns exec "$n" "$@"; }
counter() { "$sluice" dump "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }'; }
# A program under sluice run on stack st1 (TAP pm0, $S) or st2 (TAP pm1,
# $S2), in R1 where the TAP devices are: each stack its own device, or
# the kernel would hand one stack's frames to the other's queue.
srun() {
	local st=$1 dev=pm0 a=$S gw=10.230.1.1; shift
	[ "$st" = "$st2" ] && dev=pm1 a=$S2 gw=10.230.5.1
	nsx "$r1" timeout 250 "$sluice" run --stack "$st" --tap "$dev" --addr "$a/24" \
		--gateway "$gw" -- "$py" "$peer" "$@"
}
wait_ready() { for _ in $(seq 100); do grep -qx ready "$1" && return 0; sleep 0.1; done; return 1; }

for n in "$r1" "$r2" "$k" "$ks"; do
	ip netns add "$n"
	nsx "$n" ip link set dev lo up
done
link() { # ns1 dev1 addr1 ns2 dev2 addr2 mtu
	ip link add name "$2" netns "$1" type veth peer name "$5" netns "$4"
	nsx "$1" ip link set dev "$2" mtu "$7" up
	nsx "$4" ip link set dev "$5" mtu "$7" up
	nsx "$1" ip addr add "$3/24" dev "$2"
	nsx "$4" ip addr add "$6/24" dev "$5"
}
link "$r1" r1ks 10.230.2.1 "$ks" ks0 "$KS" 1500
link "$r1" r1r2 10.230.3.1 "$r2" r2r1 10.230.3.2 1280
link "$r2" r2k 10.230.4.1 "$k" k0 "$K" 1500
for i in 0 1; do
	nsx "$r1" ip tuntap add dev "pm$i" mode tap multi_queue
	nsx "$r1" ip link set dev "pm$i" up
done
nsx "$r1" ip addr add 10.230.1.1/24 dev pm0
nsx "$r1" ip addr add 10.230.5.1/24 dev pm1
for n in "$r1" "$r2"; do nsx "$n" sysctl -qw net.ipv4.ip_forward=1; done
nsx "$r1" ip route add 10.230.4.0/24 via 10.230.3.2
nsx "$r2" ip route add 10.230.0.0/16 via 10.230.3.1
nsx "$k" ip route add default via 10.230.4.1
nsx "$ks" ip route add default via 10.230.2.1
for n in "$k" "$ks"; do nsx "$n" sysctl -qw net.ipv4.tcp_mtu_probing=1; done

nsx "$k" timeout 200 "$py" "$peer" tserve 0.0.0.0 9000 200 >"$tmp/k.srv" 2>&1 &
nsx "$ks" timeout 200 "$py" "$peer" tserve 0.0.0.0 9000 200 >"$tmp/ks.srv" 2>&1 &
srun "$st1" tserve "$S" 9000 200 >"$tmp/s1.srv" 2>&1 &
wait_ready "$tmp/k.srv" && wait_ready "$tmp/ks.srv" && wait_ready "$tmp/s1.srv"
check "echo servers up: kernel K, kernel KS, Sluice" grep -qx ready "$tmp/s1.srv"

# One transfer: "ok 100000 mtu M" when all came back.
xfer_ok() { case "$1" in "ok 100000 mtu "*) return 0 ;; esac; return 1; }

# ---- Phase 1: ICMP fragmentation needed gets through (RFC 1191) ----
a=$(srun "$st1" tclient "$K" 9000 100000 30 2>&1 | tail -1)
b=$(nsx "$k" timeout 40 "$py" "$peer" tclient "$S" 9000 100000 30 2>&1 | tail -1)
c=$(nsx "$ks" timeout 40 "$py" "$peer" tclient "$K" 9000 100000 30 2>&1 | tail -1)
d=$(nsx "$k" timeout 40 "$py" "$peer" tclient "$KS" 9000 100000 30 2>&1 | tail -1)
echo "# PMTUD: Sluice->K: $a; K->Sluice: $b; kernel KS->K: $c; K->KS: $d"
check "PMTUD: kernel KS -> K over the 1280 hop, both ways ($c)" xfer_ok "$c"
check "PMTUD: kernel K -> KS, both ways ($d)" xfer_ok "$d"
check "PMTUD: Sluice client -> kernel K, both ways ($a)" xfer_ok "$a"
check "PMTUD: kernel K client -> Sluice, both ways ($b)" xfer_ok "$b"
check "PMTUD: Sluice's IP_MTU to K is 1280, as the kernel's ($a / $c)" \
	test "${a##* }" = 1280 -a "${c##* }" = 1280
pl=$(counter "$st1" pmtu_learnt) mr=$(counter "$st1" tcp_mtu_reduced)
check "PMTUD: Sluice learnt the path MTU (pmtu_learnt ${pl:-0}, tcp_mtu_reduced ${mr:-0})" \
	test "${pl:-0}" -ge 1 -a "${mr:-0}" -ge 1

# ---- Phase 3 (before the black hole, while ICMP passes): UDP ----
nsx "$k" timeout 30 "$py" "$peer" userve 0.0.0.0 9001 25 >"$tmp/k.usrv" 2>&1 &
nsx "$ks" timeout 30 "$py" "$peer" userve 0.0.0.0 9001 25 >"$tmp/ks.usrv" 2>&1 &
srun "$st1" userve "$S" 9001 25 >"$tmp/s1.usrv" 2>&1 &
wait_ready "$tmp/k.usrv" && wait_ready "$tmp/ks.usrv" && wait_ready "$tmp/s1.usrv"
u1=$(nsx "$k" timeout 20 "$py" "$peer" uclient "$S" 9001 8000 2>&1 | tail -1)
u2=$(nsx "$k" timeout 20 "$py" "$peer" uclient "$KS" 9001 8000 2>&1 | tail -1)
u3=$(srun "$st1" uclient "$K" 9001 8000 2>&1 | tail -1)
check "UDP: 8,000 bytes from K in fragments, echoed whole by Sluice ($u1) and by KS ($u2)" \
	test "$u1" = ok -a "$u2" = ok
check "UDP: 8,000 bytes from Sluice to K's echo, whole both ways ($u3)" test "$u3" = ok
ro=$(counter "$st1" ip_reasm_ok) fo=$(counter "$st1" ip_frag_ok)
check "UDP: Sluice reassembled and fragmented (ip_reasm_ok ${ro:-0}, ip_frag_ok ${fo:-0})" \
	test "${ro:-0}" -ge 2 -a "${fo:-0}" -ge 2

# Crafted fragments from R1's kernel to Sluice and to KS: the same verdict.
srun "$st1" urecv "$S" 9002 4 >"$tmp/s1.frag" 2>&1 &
p1=$!
nsx "$ks" timeout 10 "$py" "$peer" urecv "$KS" 9002 4 >"$tmp/ks.frag" 2>&1 &
p2=$!
wait_ready "$tmp/s1.frag" && wait_ready "$tmp/ks.frag"
nsx "$r1" timeout 10 "$py" "$peer" frags 10.230.1.1 "$S" 9002 >/dev/null
nsx "$r1" timeout 10 "$py" "$peer" frags 10.230.2.1 "$KS" 9002 >/dev/null
wait "$p1" "$p2"
fs=$(tail -1 "$tmp/s1.frag") fk=$(tail -1 "$tmp/ks.frag")
echo "# crafted fragments: Sluice got '$fs', the kernel '$fk'"
check "fragments: the kernel keeps clean and duplicate, drops overlapping ($fk)" \
	test "$fk" = "clean:2000 dup:2000"
check "fragments: Sluice the same ($fs)" test "$fs" = "$fk"
ov=$(counter "$st1" ip_reasm_overlap) du=$(counter "$st1" ip_reasm_dup)
check "fragments: counted (ip_reasm_overlap ${ov:-0}, ip_reasm_dup ${du:-0})" \
	test "${ov:-0}" = 1 -a "${du:-0}" = 1

# ICMP port unreachable for a flood of 300 datagrams from K.
fl_s=$(nsx "$k" timeout 10 "$py" "$peer" flood "$S" 300 2 2>&1 | tail -1)
fl_k=$(nsx "$k" timeout 10 "$py" "$peer" flood "$KS" 300 2 2>&1 | tail -1)
echo "# ICMP flood of 300: Sluice answered $fl_s, the kernel $fl_k"
check "ICMP rate limit: Sluice sends no more than the kernel ($fl_s <= $fl_k) and some" \
	test "${fl_s:-999}" -le "${fl_k:-0}" -a "${fl_s:-0}" -ge 1
rl=$(counter "$st1" icmp_ratelimit_host)
check "ICMP rate limit: counted (icmp_ratelimit_host ${rl:-0})" test "${rl:-0}" -ge 200

# ---- Phase 2: a black hole: the routers' ICMP goes nowhere ----
for n in "$r1" "$r2"; do
	nsx "$n" ip rule add ipproto icmp lookup 100 pref 100
	nsx "$n" ip route add blackhole default table 100
done
for n in "$k" "$ks"; do nsx "$n" ip route flush cache; done
srun "$st2" tserve "$S2" 9003 100 >"$tmp/s2.srv" 2>&1 &
wait_ready "$tmp/s2.srv"
# Each transfer's seconds, for the comparison (the kernel's beside).
secs() { local t0=$EPOCHREALTIME out; out=$("$@" 2>&1 | tail -1)
	printf '%s (%s s)' "$out" "$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')"; }
# The four at once: each waits out its own retransmission timers (the
# CPU idle), on sockets of its own (the servers take connections in
# threads); one after another they took 44 s of this test's 60.
secs srun "$st2" tclient "$K" 9000 100000 40 >"$tmp/bh.a" &
bh=$!
secs nsx "$k" timeout 50 "$py" "$peer" tclient "$S2" 9003 100000 40 >"$tmp/bh.b" &
bh="$bh $!"
secs nsx "$ks" timeout 50 "$py" "$peer" tclient "$K" 9000 100000 40 >"$tmp/bh.c" &
bh="$bh $!"
secs nsx "$k" timeout 50 "$py" "$peer" tclient "$KS" 9000 100000 40 >"$tmp/bh.d" &
# shellcheck disable=SC2086 # the pids
wait $bh $!
a=$(cat "$tmp/bh.a") b=$(cat "$tmp/bh.b") c=$(cat "$tmp/bh.c") d=$(cat "$tmp/bh.d")
echo "# black hole: Sluice->K: $a; K->Sluice: $b; KS->K: $c; K->KS: $d"
check "black hole: kernel KS -> K completes with tcp_mtu_probing=1 ($c)" xfer_ok "$c"
check "black hole: kernel K -> KS completes ($d)" xfer_ok "$d"
check "black hole: Sluice client -> kernel K completes ($a)" xfer_ok "$a"
check "black hole: kernel K client -> Sluice completes ($b)" xfer_ok "$b"
bh=$(counter "$st2" tcp_mtup_blackhole) pl=$(counter "$st2" pmtu_learnt)
check "black hole: found without ICMP (tcp_mtup_blackhole ${bh:-0}, pmtu_learnt ${pl:-0})" \
	test "${bh:-0}" -ge 1 -a "${pl:-0}" = 0
done_testing
