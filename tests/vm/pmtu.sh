#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: path MTU and fragments on the module path (issue 19 item
# 2, issue 20 item 2).  A router's link to the far host is narrower than
# the stack's device (1400 bytes for IPv4, then 1280 for IPv6), and the far
# host advertises the MSS of a 1500-byte path (advmss), so a full segment
# of the stack's is refused at the router: "fragmentation needed" (DF) or
# a Packet Too Big comes back, which the module now gives the stack
# (kernel/errfrag.c) and the stack believes as on any link.  Before, the
# error went to the VM kernel, which has no socket for the connection,
# and only the stack's black-hole detection (RTOs) got the data through.
# Then the far kernel sends 5,000-byte datagrams, which it fragments: the
# fragments reach the stack, which reassembles them (they were the
# kernel's), and its echo goes back in fragments (IPv6: cut again at
# 1280 after the router's Packet Too Big).  Every step runs on the VM's
# kernel beside it, to the same peers.  tests/preload/v6echo both ways.
# Prints TAP.
#
#   VM root namespace              netns slp-mid (router)        netns slp-far
#   +-------------------------+   +-------------------------+   +-----------------------+
#   | slv0 10.79.30.1/24      |   | slv1 10.79.30.2/24      |   | slp1 10.79.31.2-4/24  |
#   |  fd00:79:30::1/64       +===+  fd00:79:30::2/64       |   |  fd00:79:31::2-4/64   |
#   |  MTU 1500               |   | forwarding on           |   |  MTU 1400, then 1280  |
#   | routes to 10.79.31/24,  |   | slp0 10.79.31.1/24      +===+ routes to the VM via  |
#   |  fd00:79:31::/64 via    |   |  fd00:79:31::1/64       |   |  the router, advmss   |
#   |  the router             |   |  MTU 1400, then 1280    |   |  1460 / 1440          |
#   | Sluice stack "pm"       |   +-------------------------+   | Linux kernel: v6echo  |
#   |  (kring, gateway        |                                 |  servers, clients     |
#   |  10.79.30.2): v6echo    |                                 +-----------------------+
#   |  :7610 tcp, :7611 udp   |
#   | kernel beside: :7710,   |
#   |  :7711                  |
#   +-------------------------+
#
# A holder under sluice run keeps the stack between steps; every program
# runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
NETNS_NS=slp-mid NETNS_DEV=slv0 NETNS_PEER=slv1 NETNS_S=10.79.30.1 NETNS_K=10.79.30.2
. /opt/sluice/bin/netns.sh
NS=$NETNS_NS
FAR=slp-far
S4=10.79.30.1
F4=10.79.31.2
F4C=10.79.31.3
F4U=10.79.31.4
S6=fd00:79:30::1
G6=fd00:79:30::2
F6=fd00:79:31::2
F6C=fd00:79:31::3
F6U=fd00:79:31::4
ST=pm
SUITE="path MTU and fragments on kring"
. /opt/sluice/bin/tap.sh
export SLUICE_GATEWAY=$NETNS_K
srun() { timeout 120 sluice run --stack $ST --ifname slv0 -- "$@"; }
in_far() { $IP netns exec "$FAR" "$@"; }
in_far_t() { timeout 120 $IP netns exec "$FAR" "$@"; }
cleanup() {
	for p in $hold $stcp $ktcpd $kudpd $ptcp; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP route del 10.79.31.0/24 2>/dev/null
	$IP -6 route del fd00:79:31::/64 2>/dev/null
	$IP netns del "$FAR" 2>/dev/null
	netns_down
}
trap cleanup EXIT

# kctr, kseen, lines, step, kstep (on stack $ST).
. /opt/sluice/bin/v6_lib.sh
STEP_TAG=

v6_module_up
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
[ $(( 0x${feat:-0} & 0x80000 )) != 0 ] ||
	skip_all "module features 0x$feat lack ICMP errors and fragments (0x80000)"

# c NAME: a counter of the stack (0 when sluice dump leaves it out).
c() { v=$(kctr "$1"); echo "${v:-0}"; }
# mtu N: the router's far link and the far host's at N bytes.
mtu() {
	in_ns $IP link set slp0 mtu "$1"
	in_far $IP link set slp1 mtu "$1"
}

check "the router namespace pings the device address (kernel)" netns_up
$IP -6 addr add $S6/64 dev slv0 nodad
in_ns $IP -6 addr add $G6/64 dev slv1 nodad
in_ns sysctl -qw net.ipv4.ip_forward=1
in_ns sysctl -qw net.ipv6.conf.all.forwarding=1
$IP netns add "$FAR"
in_ns $IP link add slp0 type veth peer name slp1
in_ns $IP link set slp1 netns "$FAR"
in_ns $IP addr add 10.79.31.1/24 dev slp0
in_ns $IP -6 addr add fd00:79:31::1/64 dev slp0 nodad
in_ns $IP link set slp0 up
in_far $IP link set lo up
for a in $F4 $F4C $F4U; do in_far $IP addr add $a/24 dev slp1; done
for a in $F6 $F6C $F6U; do in_far $IP -6 addr add $a/64 dev slp1 nodad; done
in_far $IP link set slp1 up
mtu 1400
# The far host says the MSS of a 1500-byte path (what a host on a wider
# link behind it would say): only the router knows the narrow hop.  Each
# kind of step meets the hop at an address of the far host's own, as a
# path MTU learnt is kept for its destination (10 minutes, by Sluice and
# Linux alike): the clients connect to $F4C and $F6C, the far host's
# TCP clients come from $F4 and $F6, its UDP clients from $F4U and $F6U
# (far_src).
# far_src A4 A6: the far host's source address towards the VM.
far_src() {
	in_far $IP route replace 10.79.30.0/24 via 10.79.31.1 advmss 1460 src "$1"
	in_far $IP -6 route replace fd00:79:30::/64 via fd00:79:31::1 advmss 1440 src "$2"
}
far_src $F4 $F6
$IP route add 10.79.31.0/24 via $NETNS_K dev slv0
$IP -6 route add fd00:79:31::/64 via $G6 dev slv0
i=0
while [ $i -lt 50 ] && ! ping -6 -c 1 -W 1 $F6 >/dev/null 2>&1; do sleep 0.2; i=$((i + 1)); done
check "the kernel reaches the far host through the router (ping $F4, $F6)" \
	sh -c "ping -c 1 -W 5 $F4 >/dev/null && ping -6 -c 1 -W 5 $F6 >/dev/null"
in_far $IP route show | sed 's/^/# far route: /'
in_far $IP -6 route show | grep -v '^fe80' | sed 's/^/# far route: /'

# The far host's servers; the stack's holder (its UDP echo server) and
# TCP server, the VM kernel's beside them.
timeout 900 $IP netns exec "$FAR" v6echo serve-tcp :: 7600 4 900 >/tmp/pm_ptcp.out 2>&1 &
ptcp=$!
timeout 900 sluice run --stack $ST --ifname slv0 -- v6echo serve-udp :: 7611 20 900 \
	>/tmp/pm_sudp.out 2>&1 &
hold=$!
wait_ready /tmp/pm_sudp.out 300
timeout 900 sluice run --stack $ST --ifname slv0 -- v6echo serve-tcp :: 7610 2 900 \
	>/tmp/pm_stcp.out 2>&1 &
stcp=$!
timeout 900 v6echo serve-tcp :: 7710 2 900 >/tmp/pm_ktcp.out 2>&1 &
ktcpd=$!
timeout 900 v6echo serve-udp :: 7711 20 900 >/tmp/pm_kudp.out 2>&1 &
kudpd=$!
for f in pm_ptcp pm_sudp pm_stcp pm_ktcp pm_kudp; do
	check "server $f ready" wait_ready /tmp/$f.out 300
done
sluice dump $ST >/tmp/pm-dump.out 2>&1
ifi=$(cat /sys/class/net/slv0/ifindex)
check "the stack is on slv0 (ifindex $ifi) through the module's rings" \
	grep -q "^kring: ifindex $ifi, device up" /tmp/pm-dump.out

# pstep WHAT BYTES CMD...: a stack step (step) whose full segments met the
# narrow hop: the stack lowered its MSS on the router's error
# (tcp_mtu_reduced), never by black-hole detection (tcp_mtup_blackhole,
# which is all main's stack had).
pstep() {
	local d=$1 by=$2 r0 r1 b0 b1
	shift 2
	r0=$(c tcp_mtu_reduced) b0=$(c tcp_mtup_blackhole)
	step "$d" "$by" "$@"
	r1=$(c tcp_mtu_reduced) b1=$(c tcp_mtup_blackhole)
	check "... the router's error lowered the path MTU (tcp_mtu_reduced $r0 -> $r1, tcp_mtup_blackhole $b0 -> $b1)" \
		[ "$r1" -gt "$r0" -a "$b1" = "$b0" ]
}

# ustep WHAT CMD...: a UDP step whose datagrams came in fragments that the
# stack reassembled (ip_reasm_ok).
ustep() {
	local d=$1 a0 a1
	shift
	a0=$(c ip_reasm_ok)
	step "$d" 10000 "$@"
	a1=$(c ip_reasm_ok)
	check "... the stack reassembled them (ip_reasm_ok $a0 -> $a1)" [ "$a1" -ge $((a0 + 2)) ]
}

# IPv4: the router's far link at 1400, "fragmentation needed" (RFC 1191).
pstep "IPv4: TCP client under sluice run -> $F4C:7600 through a 1400-byte hop, 200000 bytes echoed" \
	200000 srun v6echo tcp $F4C 7600 200000
kstep "IPv4: TCP client -> $F4C:7600" timeout 120 v6echo tcp $F4C 7600 200000
pstep "IPv4: far kernel TCP client -> $S4:7610 under sluice run, 200000 bytes echoed" \
	200000 in_far_t v6echo tcp $S4 7610 200000
kstep "IPv4: far kernel TCP client -> $S4:7710" in_far_t v6echo tcp $S4 7710 200000
far_src $F4U $F6U
ustep "IPv4: far kernel UDP client ($F4U) -> $S4:7611 under sluice run, 2 x 5000 in fragments, echoed" \
	in_far_t v6echo udp $S4 7611 2 5000
kstep "IPv4: far kernel UDP client -> $S4:7711" in_far_t v6echo udp $S4 7711 2 5000
far_src $F4 $F6

# IPv6: 1280, Packet Too Big (RFC 8201).
mtu 1280
pstep "IPv6: TCP client under sluice run -> [$F6C]:7600 through a 1280-byte hop, 200000 bytes echoed" \
	200000 srun v6echo tcp $F6C 7600 200000
kstep "IPv6: TCP client -> [$F6C]:7600" timeout 120 v6echo tcp $F6C 7600 200000
pstep "IPv6: far kernel TCP client -> [$S6]:7610 under sluice run, 200000 bytes echoed" \
	200000 in_far_t v6echo tcp $S6 7610 200000
kstep "IPv6: far kernel TCP client -> [$S6]:7710" in_far_t v6echo tcp $S6 7710 200000
far_src $F4U $F6U
l0=$(c pmtu_learnt)
ustep "IPv6: far kernel UDP client ([$F6U]) -> [$S6]:7611 under sluice run, 2 x 5000 in fragments, echoed" \
	in_far_t v6echo udp $S6 7611 2 5000
l1=$(c pmtu_learnt)
check "... the stack's echo, cut at 1500, was too big: the path MTU learnt (pmtu_learnt $l0 -> $l1)" \
	[ "$l1" -gt "$l0" ]
kstep "IPv6: far kernel UDP client -> [$S6]:7711" in_far_t v6echo udp $S6 7711 2 5000

for p in $stcp $ktcpd $ptcp; do wait "$p"; done
stcp= ktcpd= ptcp=
for p in $hold $kudpd; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
hold= kudpd=
for f in pm_stcp pm_ktcp pm_ptcp pm_sudp pm_kudp; do sed "s/^/# $f: /" /tmp/$f.out; done
st=$(lines /tmp/pm_stcp.out) kt=$(lines /tmp/pm_ktcp.out)
check "the stack's TCP server saw the far client as the kernel's did ($st)" \
	[ -n "$st" -a "$st" = "$kt" ]
su=$(lines /tmp/pm_sudp.out | sort | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')
ku=$(lines /tmp/pm_kudp.out | sort | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')
check "the stack's UDP server saw the far client's datagrams as the kernel's did ($su)" \
	[ -n "$su" -a "$su" = "$ku" ]
pt=$(lines /tmp/pm_ptcp.out | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')
check "the far server saw the stack's clients as the kernel's ($pt)" \
	[ "$pt" = "2 tcp conn from v4mapped: echoed 200000|2 tcp conn from v6: echoed 200000|" ]
sluice dump $ST >/tmp/pm-dump.out 2>&1
sed -n '/^counters:/,/^sockets:/p' /tmp/pm-dump.out |
	grep -E 'icmp|pmtu|mtu|frag|reasm|rto|blackhole|rx_|tx_' | sed 's/^/# /'

cleanup
trap - EXIT
echo "1..$n"
exit $fail
