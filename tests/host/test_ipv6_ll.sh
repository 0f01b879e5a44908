#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Link-local IPv6 (issue 20): the stack's fe80:: address, made from its
# link address as the kernel makes a new device's (EUI-64) after
# Duplicate Address Detection, and sin6_scope_id as Linux reads and
# writes it, the scope of a TAP stack being its TAP device's ifindex.
# One program (tests/preload/v6ll.c) runs on the kernel over a veth and
# under sluice run on a TAP stack, a kernel peer opposite each
# (v6ll_peer.py), over fe80:: addresses only:
#
#   netns sl-v6l-PID (the peers)                        netns sl-v6lk-PID
#   kernel fe80::(sl0) on TAP sl0 <---> Sluice fe80::(its MAC) (sluice run v6ll)
#   kernel fe80::(v0) on veth v0 <----------------> kernel fe80::(v1) (v6ll)
#
# The program's two outputs must be the same (addresses written ME and
# PEER, scope ids IF when they are the program's interface's index).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/v6ll
peerpy=$top/tests/host/v6ll_peer.py
py=/usr/bin/python3
[ -x "$py" ] || py=python3

ns=sl-v6l-$$ kns=sl-v6lk-$$ stack=v6l-$$
netns_test "IPv6 link-local on TAP" "$ns" "$kns" -- "$stack"
in_ns ip tuntap add dev sl0 mode tap multi_queue
in_ns ip addr add 10.205.0.1/24 dev sl0
in_ns ip -6 addr add fd00:40::1/64 dev sl0 nodad
in_ns ip link set sl0 up
ip link add name v0 netns "$ns" type veth peer name v1 netns "$kns"
in_ns ip link set v0 up
ip netns exec "$kns" ip link set v1 up
# The kernel's own link-local addresses, once out of DAD (sl0's once the
# stack has the TAP device open: until then it has no carrier).
lladdr() { # netns dev
	ip netns exec "$1" ip -6 -o addr show dev "$2" scope link | grep -v tentative |
		awk '{ sub("/.*", "", $4); print $4 }'
}

# The stack's holder: up before the program, as the kernel's devices are.
cat >"$tmp/holder.py" <<'PY'
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.205.0.2", 9999))
print("ready", flush=True)
time.sleep(40)
PY
run_s() { in_ns timeout 50 "$sluice" run --stack "$stack" --tap sl0 --addr 10.205.0.2/24 --addr6 fd00:40::2/64 -- "$@"; }
run_s "$py" "$tmp/holder.py" >"$tmp/holder.out" 2>&1 &
for _ in $(seq 100); do grep -qx ready "$tmp/holder.out" && break; sleep 0.1; done
check "the stack's holder is up on sl0" grep -qx ready "$tmp/holder.out"
for _ in $(seq 100); do
	[ -n "$(lladdr "$ns" sl0)" ] && [ -n "$(lladdr "$ns" v0)" ] && [ -n "$(lladdr "$kns" v1)" ] && break
	sleep 0.1
done
tap_ll=$(lladdr "$ns" sl0) v0_ll=$(lladdr "$ns" v0) v1_ll=$(lladdr "$kns" v1)
check "the kernel's link-local addresses ($tap_ll, $v0_ll, $v1_ll)" \
	test -n "$tap_ll" -a -n "$v0_ll" -a -n "$v1_ll"

# 1. The address: EUI-64 of the stack's MAC, tentative, then valid.
dump_ll() { "$sluice" dump "$stack" | sed -n 's/.*link-local \([^/]*\)\/64 \([a-z]*\), scope \([0-9]*\).*/\1 \2 \3/p'; }
first=$(dump_ll)
for _ in $(seq 50); do case $(dump_ll) in *" valid "*) break ;; esac; sleep 0.1; done
read -r s_ll s_state s_scope <<<"$(dump_ll)"
mac=$("$sluice" dump "$stack" | sed -n '1s/.*mac \([0-9a-f:]*\).*/\1/p')
eui=$("$py" -c '
import ipaddress, sys
m = bytes.fromhex(sys.argv[1].replace(":", ""))
b = bytes([0xfe, 0x80] + [0] * 6 + [m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
print(ipaddress.IPv6Address(b))' "$mac")
echo "# stack: mac $mac, link-local $s_ll ($s_state, scope $s_scope; first seen: ${first:-none})"
check "the stack's link-local address is modified EUI-64 of its MAC ($eui)" test "$s_ll" = "$eui"
check "... valid after DAD" test "$s_state" = valid
check "... its scope is sl0's ifindex ($(in_ns cat /sys/class/net/sl0/ifindex))" \
	test "$s_scope" = "$(in_ns cat /sys/class/net/sl0/ifindex)"
check "... one DAD solicitation sent (nd_dad_tx $(counter "$stack" nd_dad_tx))" \
	test "$(counter "$stack" nd_dad_tx)" = 1
check "the kernel on sl0 pings it (fe80:: scope sl0)" \
	in_ns timeout 10 busybox ping6 -c 2 -W 2 -I sl0 "$s_ll"
check "... and learnt its link address by ND" eval \
	"in_ns ip -6 neigh show dev sl0 | grep -qi '^$s_ll lladdr $mac'"

# 2. The same program on each side.
run() { # tag dev me peer port cmd...
	local tag=$1 dev=$2 me=$3 peer=$4 port=$5
	shift 5
	in_ns timeout 45 "$py" "$peerpy" "$dev" "$me" "$port" 40 >"$tmp/$tag.peer" 2>&1 &
	local pp=$!
	for _ in $(seq 100); do grep -q ready "$tmp/$tag.peer" && break; sleep 0.05; done
	"$@" "$prog" "$me" "$peer" "$PROGDEV" "$port" >"$tmp/$tag.out" 2>&1
	kill "$pp" 2>/dev/null
	wait "$pp" 2>/dev/null
}
PROGDEV=v1 run k v0 "$v1_ll" "$v0_ll" 7400 ip netns exec "$kns" timeout 45
PROGDEV=sl0 run s sl0 "$s_ll" "$tap_ll" 7420 run_s
sed 's/^/# stack: /' "$tmp/s.out"

same() { # what grep-pattern
	local sp=$2
	check "$1 as the kernel's" eval \
		'test -n "$(grep -E "$sp" "$tmp/s.out")" && diff <(grep -E "$sp" "$tmp/k.out") <(grep -E "$sp" "$tmp/s.out") >&2'
}
has() { check "$1" grep -qxF -- "$2" "$tmp/s.out"; }
check "the program ran to its end on both" eval 'grep -qx done "$tmp/k.out" && grep -qx done "$tmp/s.out"'
same "bind: each scope's answer, and the name of one bound on IF" '^bind '
has "... no scope: EINVAL" "bind tcp scope 0 = Invalid argument"
has "... a scope no device has: ENODEV" "bind udp scope 99999 = No such device"
has "... the name: ME with its scope" "bind tcp getsockname = ME scope IF"
same "connect: each scope's answer, both names and a round trip" '^connect '
has "... TCP with no scope: EINVAL" "connect tcp scope 0 = Invalid argument"
has "... TCP to IF: the peer sees ME on its device" "connect tcp reply = tcp from ME%DEV: hello"
has "... UDP's peer name has the scope" "connect udp getpeername = PEER scope IF"
same "sendto: each scope's answer, the reply and its sender" '^sendto '
has "... with no scope: sent (the one interface with link-local routes)" "sendto scope 0 = ok"
has "... the reply's sender has the scope" "sendto reply = udp from ME%DEV: dgram, from PEER scope IF"
same "a socket on ME%IF: connect and sendto with no scope and lo's" '^bound '
has "... connect to lo's scope: EINVAL" "bound connect scope 1 = Invalid argument"
has "... sendto lo's scope: ENETUNREACH" "bound sendto scope 1 = Network is unreachable"
same "IPV6_PKTINFO received and sent" '^pktinfo '
has "... ipi6_ifindex the interface's" "pktinfo pktinfo = ME scope 0 ifindex IF"
has "... sent from ME on lo: EINVAL" "pktinfo send ME on lo = Invalid argument"
same "accepted from the peer: the names, its data, a datagram and its pktinfo" '^accept '
has "... the peer as accept() gives it" "accept any accept = PEER scope IF"
has "... a datagram from it" "accept me recvmsg = dgram from peer, from PEER scope IF"
check "the whole outputs are the same" diff "$tmp/k.out" "$tmp/s.out"
# In the stack, not the kernel: the kernel has no ME to send from (the
# peer's "from ME%DEV" above), and the stack counted what it carried.
check "the stack carried it: tcp6 and udp6 in, IPv6 out (tcp_rx $(counter "$stack" tcp_rx), udp_rx $(counter "$stack" udp_rx), ip6_tx $(counter "$stack" ip6_tx))" \
	test "$(counter "$stack" tcp_rx)" -ge 6 -a "$(counter "$stack" udp_rx)" -ge 8 -a "$(counter "$stack" ip6_tx)" -ge 20
check "no DAD failure (nd_dad_failed ${nd_fail:=$(counter "$stack" nd_dad_failed)})" test -z "$nd_fail"
[ "$tap_failed" = 0 ] || { sed "s/^/# peer of the kernel: /" "$tmp/k.peer"; sed 's/^/# kernel: /' "$tmp/k.out"; sed 's/^/# peer of the stack: /' "$tmp/s.peer"; "$sluice" dump "$stack" | grep -E "ipv6|nd_|ip6_|tcp6|udp6" | sed 's/^/# dump: /'; }

done_testing
