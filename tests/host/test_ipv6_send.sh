#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# IPv6 sends as Linux sends them (issue 20): traffic class and hop limit,
# ICMPv6 errors into the error queue, Packet Too Big, fragments sent and
# reassembled.  One
# program (tests/preload/v6send.c) runs on the kernel and under sluice
# run on a TAP stack, the same kernel peer opposite (v6send_peer.py),
# which captures what each sends on its device and answers with ICMPv6:
#
#   netns sl-v6s-PID (the peer)                        netns sl-v6sk-PID
#   kernel fd00:30::1, ::3 on TAP sl0 <--> Sluice fd00:30::2 (sluice run v6send)
#   kernel fd00:31::1, ::3 on veth v0 <-------------> kernel fd00:31::2 (v6send)
#
# net.ipv6.conf.default.hop_limit is 77 in both namespaces before their
# devices exist, so a packet with no hop limit set shows where each takes
# its default.  The program's two outputs must be the same, and so must
# the peer's two captures (addresses written ME and PEER); a few lines are
# also checked against what Linux is known to do.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/v6send
peerpy=$top/tests/host/v6send_peer.py
py=/usr/bin/python3
[ -x "$py" ] || py=python3

ns=sl-v6s-$$ kns=sl-v6sk-$$ stack=v6s-$$
S=fd00:30::2 K=fd00:31::2
netns_test "IPv6 sends on TAP" "$ns" "$kns" -- "$stack"
for n in "$ns" "$kns"; do
	ip netns exec "$n" sh -c 'echo 77 >/proc/sys/net/ipv6/conf/default/hop_limit'
done
in_ns ip tuntap add dev sl0 mode tap multi_queue
in_ns ip addr add 10.204.0.1/24 dev sl0
in_ns ip -6 addr add fd00:30::1/64 dev sl0 nodad
in_ns ip -6 addr add fd00:30::3/64 dev sl0 nodad
in_ns ip link set sl0 up
ip link add name v0 netns "$ns" type veth peer name v1 netns "$kns"
in_ns ip -6 addr add fd00:31::1/64 dev v0 nodad
in_ns ip -6 addr add fd00:31::3/64 dev v0 nodad
ip netns exec "$kns" ip -6 addr add "$K/64" dev v1 nodad
in_ns ip link set v0 up
ip netns exec "$kns" ip link set v1 up

# One run: the peer on DEV for PEER, the program as ME.
run() { # tag dev peer peer2 me port cmd...
	local tag=$1 dev=$2 peer=$3 peer2=$4 me=$5 port=$6
	shift 6
	in_ns timeout 30 "$py" "$peerpy" "$dev" "$peer" "$peer2" "$me" "$port" 20 \
		>"$tmp/$tag.peer" 2>&1 &
	local pp=$!
	for _ in $(seq 100); do grep -q ready "$tmp/$tag.peer" && break; sleep 0.05; done
	# Each side's neighbour resolved first (as any earlier traffic does):
	# the kernel's and the stack's, from both sources.  (The stack holds
	# one packet for a neighbour it is resolving, Linux up to unres_qlen:
	# without this the first datagrams differ.)
	in_ns timeout 10 busybox ping6 -c 1 -W 2 -I "$peer" "$me" >/dev/null 2>&1
	in_ns timeout 10 busybox ping6 -c 1 -W 2 -I "$peer2" "$me" >/dev/null 2>&1
	"$@" "$prog" "$me" "$peer" "$peer2" "$port" >"$tmp/$tag.out" 2>&1
	wait "$pp"
}
# The stack's holder: a program under sluice run with a socket in the
# stack, so that the stack is up and answers Neighbour Discovery before
# the program runs (as the kernel is before its own run).
cat >"$tmp/holder.py" <<'PY'
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.204.0.2", 9999))
print("ready", flush=True)
time.sleep(25)
PY
in_ns timeout 30 "$sluice" run --stack "$stack" --tap sl0 --addr 10.204.0.2/24 --addr6 "$S/64" \
	-- "$py" "$tmp/holder.py" >"$tmp/holder.out" 2>&1 &
for _ in $(seq 100); do grep -qx ready "$tmp/holder.out" && break; sleep 0.1; done
check "the stack's holder is up on sl0" grep -qx ready "$tmp/holder.out"
run k v0 fd00:31::1 fd00:31::3 "$K" 7300 ip netns exec "$kns" timeout 30
run s sl0 fd00:30::1 fd00:30::3 "$S" 7300 in_ns timeout 30 "$sluice" run --stack "$stack" --tap sl0 \
	--addr 10.204.0.2/24 --addr6 "$S/64" --
sed 's/^/# stack: /' "$tmp/s.out"
sed 's/^/# peer of the stack: /' "$tmp/s.peer"

same() { # what file-suffix grep-pattern
	sf=$2 sp=$3
	check "$1 as the kernel's" eval \
		'test -n "$(grep -E "$sp" "$tmp/s.$sf")" && diff <(grep -E "$sp" "$tmp/k.$sf") <(grep -E "$sp" "$tmp/s.$sf") >&2'
}
has() { # what tag file-suffix line
	check "$1" grep -qxF -- "$4" "$tmp/$2.$3"
}

# 1. Traffic class and hop limit.
same "IPV6_TCLASS, IPV6_UNICAST_HOPS, IPV6_MULTICAST_HOPS answers" out '^tclass .*(= [-0-9]+$|set)'
same "each datagram's and the SYN's traffic class and hop limit on the wire" peer '^cap (udp|tcp-syn) '
has "... a datagram with none set: hop limit 77 (conf.default.hop_limit), class 0" s peer \
	"cap udp 108 tclass=0x00 hlim=77"
has "... IPV6_TCLASS 0x2b and IPV6_UNICAST_HOPS 9" s peer "cap udp 109 tclass=0x2b hlim=9"
has "... control messages IPV6_TCLASS 0x48, IPV6_HOPLIMIT 3" s peer "cap udp 110 tclass=0x48 hlim=3"
has "... the SYN: IPV6_TCLASS 0xb8, IPV6_UNICAST_HOPS 5" s peer "cap tcp-syn tclass=0xb8 hlim=5"
same "sends and their answers (a bad IPV6_HOPLIMIT: EINVAL)" out '^tclass (d[0-9]|tcp)'
same "a connected socket's default hop limit (its route's)" out '^tclass connected'

# 2. ICMPv6 errors to the socket.
same "a port unreachable in the error queue (IPV6_RECVERR, SO_EE_ORIGIN_ICMP6)" out '^errq '
has "... origin 3, type 1 code 4, the peer the offender" s out \
	"errq errq ee = errno Connection refused origin 3 type 1 code 4 info 0 offender PEER family 10"

# 3. Packet Too Big and fragments.
same "Packet Too Big: EMSGSIZE queued; IPV6_MTU; fragments; IPV6_DONTFRAG and PMTUDISC_DO" out '^ptb (send|so_error|errq|set|mtu)'
has "... IPV6_MTU of the connected socket: 1280" s out "ptb mtu = 1280"
has "... EMSGSIZE from the peer's Packet Too Big, ee_info 1280" s out \
	"ptb errq ee = errno Message too long origin 3 type 2 code 0 info 1280 offender PEER family 10"
has "... the local error of a datagram past it (origin 1, ee_info 1280)" s out \
	"ptb errq ee = errno Message too long origin 1 type 0 code 0 info 1280 offender - family 0"
same "fragments on the wire (offsets, sizes, M bit, class, hop limit)" peer '^cap frag'
has "... the first 1232 bytes of the datagram (1280 with its headers)" s peer \
	"cap frag nxt=17 off=0 m=1 plen=1240 tclass=0x00 hlim=77"
same "the peer reassembled each datagram (sizes received)" peer '^udp got'
same "TCP: the MSS and IPV6_MTU after a Packet Too Big" out '^ptb tcp'
has "... IPV6_MTU 1280" s out "ptb tcp mtu after = 1280"
has "... the connection's segments after it fit 1280 bytes" s peer "tcp largest packet after ptb: 1280 or less"
same "TCP bytes the peer received" peer '^tcp got'
# 4. Reassembly.
same "datagrams in fragments received: sizes, bytes, what was dropped" out '^reasm '
has "... 3000 bytes in the kernel's fragments, whole" s out "reasm got 3000 bytes, the pattern"
check "... overlapping fragments dropped whole, a duplicate alone (RFC 5722)" \
	eval 'test "$(grep -c "^reasm got" "$tmp/s.out")" = 3 && ! grep -q "got 200" "$tmp/s.out"'
same "a fragment of a bad length: a parameter problem at the payload length" peer '^cap icmp6 type=4'
has "... code 0, pointer 4" s peer "cap icmp6 type=4 code=0 data=4 tclass=0x00 hlim=77"
check "counted: icmp6_err_rx $(counter "$stack" icmp6_err_rx), ip6_frag_tx $(counter "$stack" ip6_frag_tx)" \
	test "$(counter "$stack" icmp6_err_rx)" -ge 3 -a "$(counter "$stack" ip6_frag_tx)" -ge 2
[ "$tap_failed" = 0 ] || { "$sluice" dump "$stack" | grep -E "nd_|ip6_|link_tx|udp_tx|icmp6" | sed "s/^/# dump: /"; sed 's/^/# kernel: /' "$tmp/k.out"; sed 's/^/# peer of the kernel: /' "$tmp/k.peer"; }

done_testing
