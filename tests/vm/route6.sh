#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: IPv6 beyond the on-link peers of the addresses a kring
# stack started with (issue 20).  First, a stack on slv0 reaches a host two
# hops away by the VM kernel's routes (a prefix route via a global gateway,
# the default route via a link-local one): the module sends each routed
# packet to the next hop of the kernel's route (SLUICE_KRING_TX_ROUTE),
# whose address the kernel's Neighbour Discovery resolves.  Then a stack
# on slv2, a device with no global IPv6 address when the stack was made,
# takes the one `ip -6 addr add` gives it later (the module's inet6addr
# notifier; DAD the kernel's).  tests/preload/v6echo under `sluice run`
# and on the VM's kernel beside it, to the same peers, their lines
# compared.  Prints TAP.
#
#   VM root namespace               netns slr-mid (router)       netns slr-far
#   +---------------------------+   +-----------------------+   +----------------------+
#   | slv0 fd00:79:8::1/64      |   | slv1 fd00:79:8::2/64, |   | slr1 fd00:79:9::2/64 |
#   |  fd00:79:9::/64 via       +===+   fe80::79:2          |   |  fd00:79:a::2/128    |
#   |   fd00:79:8::2            |   | forwarding on         |   | default via          |
#   |  default via fe80::79:2   |   | slr0 fd00:79:9::1/64  +===+   fd00:79:9::1       |
#   | Sluice stack "rr6" (kring)|   | fd00:79:a::/64 via    |   | Linux kernel:        |
#   |  v6echo serve-tcp :7200   |   |   fd00:79:9::2        |   |  v6echo servers      |
#   |  clients to the far host  |   +-----------------------+   |  :7400 tcp :7401 udp |
#   | kernel beside: :7300      |   |                       |   |  and clients         |
#   |                           |   | slv3 fd00:79:b::2/64  |   +----------------------+
#   | slv2 10.79.11.1/24, later +===+   v6echo serve-tcp    |
#   |  fd00:79:b::1/64 (DAD)    |   |   :7500, clients      |
#   | Sluice stack "ra6" on it: |   +-----------------------+
#   |  v6echo serve-tcp :7210   |
#   | kernel beside: :7310      |
#   +---------------------------+
#
# A holder under sluice run keeps the stack between steps; every program
# runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
NETNS_NS=slr-mid NETNS_DEV=slv0 NETNS_PEER=slv1 NETNS_S=10.79.8.1 NETNS_K=10.79.8.2
. /opt/sluice/bin/netns.sh
NS=$NETNS_NS
FAR=slr-far
S6=fd00:79:8::1
G6=fd00:79:8::2
GLL=fe80::79:2
F6=fd00:79:9::2
FA6=fd00:79:a::2
ST=rr6
SUITE="IPv6 through a router on kring"
. /opt/sluice/bin/tap.sh
srun() { timeout 120 sluice run --stack $ST --ifname slv0 -- "$@"; }
in_ns_t() { timeout 120 $IP netns exec "$NS" "$@"; }
in_far() { $IP netns exec "$FAR" "$@"; }
in_far_t() { timeout 120 $IP netns exec "$FAR" "$@"; }
cleanup() {
	for p in $hold $stcp $ktcpd $ptcp $pudp $mtcp; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP -6 route del fd00:79:9::/64 2>/dev/null
	$IP -6 route del default dev slv0 2>/dev/null
	$IP netns del "$FAR" 2>/dev/null
	$IP link del slv2 2>/dev/null
	netns_down
}
trap cleanup EXIT

# kctr, kseen, lines, step, kstep (on stack $ST).
. /opt/sluice/bin/v6_lib.sh
STEP_TAG=

v6_module_up

# servers DEV UPORT HOLD TPORT STCP KPORT KTCP: on stack $ST on DEV, the
# holder (a UDP server on UPORT that keeps the stack, /tmp/HOLD.out) and
# a TCP server on [::]:TPORT (/tmp/STCP.out); the VM kernel's TCP server
# on KPORT beside them (/tmp/KTCP.out).  Their pids in hold, stcp, ktcpd.
servers() {
	timeout 600 sluice run --stack $ST --ifname $1 -- v6echo serve-udp :: $2 1 600 \
		>/tmp/$3.out 2>&1 &
	hold=$!
	wait_ready /tmp/$3.out 200
	timeout 600 sluice run --stack $ST --ifname $1 -- v6echo serve-tcp :: $4 1 600 \
		>/tmp/$5.out 2>&1 &
	stcp=$!
	timeout 600 v6echo serve-tcp :: $6 1 600 >/tmp/$7.out 2>&1 &
	ktcpd=$!
}

check "the router namespace pings the device address (kernel)" netns_up
$IP -6 addr add $S6/64 dev slv0 nodad
in_ns $IP -6 addr add $G6/64 dev slv1 nodad
in_ns $IP -6 addr add $GLL/64 dev slv1 nodad
in_ns sysctl -qw net.ipv6.conf.all.forwarding=1
$IP netns add "$FAR"
in_ns $IP link add slr0 type veth peer name slr1
in_ns $IP link set slr1 netns "$FAR"
in_ns $IP -6 addr add fd00:79:9::1/64 dev slr0 nodad
in_ns $IP link set slr0 up
in_ns $IP -6 route add fd00:79:a::/64 via $F6
in_far $IP link set lo up
in_far $IP -6 addr add $F6/64 dev slr1 nodad
in_far $IP -6 addr add $FA6/128 dev slr1 nodad
in_far $IP link set slr1 up
in_far $IP -6 route add default via fd00:79:9::1
# The VM's routes: the far prefix via the router's global address, the
# rest (fd00:79:a::2 among it) by the default route via its link-local one.
$IP -6 route add fd00:79:9::/64 via $G6 dev slv0
$IP -6 route add default via $GLL dev slv0
i=0
while [ $i -lt 50 ] && ! ping -6 -c 1 -W 1 $F6 >/dev/null 2>&1; do sleep 0.2; i=$((i + 1)); done
check "the kernel reaches the far host through the router (ping $F6, $FA6)" \
	sh -c "ping -6 -c 1 -W 5 $F6 >/dev/null && ping -6 -c 1 -W 5 $FA6 >/dev/null"
$IP -6 route get $F6 | sed 's/^/# route: /'
$IP -6 route get $FA6 | sed 's/^/# route: /'

# The far host's kernel servers; the stack's holder and [::] server and
# the VM kernel's server beside it.
timeout 600 $IP netns exec "$FAR" v6echo serve-tcp :: 7400 3 600 >/tmp/p_tcp.out 2>&1 &
ptcp=$!
timeout 600 $IP netns exec "$FAR" v6echo serve-udp :: 7401 8 600 >/tmp/p_udp.out 2>&1 &
pudp=$!
servers slv0 7202 hold 7200 s_tcp 7300 k_tcp
for f in p_tcp p_udp s_tcp k_tcp; do
	check "server $f ready" wait_ready /tmp/$f.out 200
done
sluice dump $ST >/tmp/rr6-dump.out 2>&1
ifi=$(cat /sys/class/net/slv0/ifindex)
check "the stack is on slv0 (ifindex $ifi) through the module's rings" \
	grep -q "^kring: ifindex $ifi, device up" /tmp/rr6-dump.out
drop0=$(kctr tx_drop)

# Stack clients -> the far host: by the prefix route, then the default.
step "TCP client under sluice run -> [$F6]:7400 (prefix route via $G6), 1000000 bytes echoed" \
	1000000 srun v6echo tcp $F6 7400 1000000
kstep "TCP client -> [$F6]:7400" timeout 120 v6echo tcp $F6 7400 1000000
step "TCP client under sluice run -> [$FA6]:7400 (default route via $GLL), 500000 bytes echoed" \
	500000 srun v6echo tcp $FA6 7400 500000
step "UDP client under sluice run -> [$F6]:7401, 4 x 1400 echoed" 5600 \
	srun v6echo udp $F6 7401 4 1400
kstep "UDP client -> [$F6]:7401" timeout 120 v6echo udp $F6 7401 4 1400

# The far host's client -> the stack's [::] server (its replies routed),
# then the same client to the VM kernel's server.
step "far kernel TCP client -> [$S6]:7200 under sluice run, 1000000 bytes echoed" 1000000 \
	in_far_t v6echo tcp $S6 7200 1000000
kstep "far kernel TCP client -> [$S6]:7300" in_far_t v6echo tcp $S6 7300 1000000

for p in $stcp $ktcpd $ptcp; do wait "$p"; done
stcp= ktcpd= ptcp=
kill $pudp 2>/dev/null
wait $pudp 2>/dev/null
pudp=
for f in s_tcp k_tcp p_tcp p_udp; do sed "s/^/# $f: /" /tmp/$f.out; done
st=$(lines /tmp/s_tcp.out) kt=$(lines /tmp/k_tcp.out)
check "the stack's server saw the far client as the kernel's did ($st)" \
	[ -n "$st" -a "$st" = "$kt" ]
pt=$(lines /tmp/p_tcp.out | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')
pu=$(lines /tmp/p_udp.out | uniq -c | awk '{ $1 = $1; print }')
check "the far servers saw the stack's clients as the kernel's ($pt; $pu)" \
	[ "$pt" = "2 tcp conn from v6: echoed 1000000|1 tcp conn from v6: echoed 500000|" -a \
	  "$pu" = "8 udp dgram from v6: echoed 1400" ]
drop1=$(kctr tx_drop)
check "the module routed every packet (tx_drop $drop0 -> $drop1)" [ "$drop0" = "$drop1" ]

sluice dump $ST >/tmp/rr6-dump.out 2>&1
sed -n '/^counters:/,/^sockets:/p' /tmp/rr6-dump.out | grep -v ' 0 ' | sed 's/^/# /'
v=$(sed -n 's/^  link_tx_err *\([0-9]*\) .*/\1/p' /tmp/rr6-dump.out | head -n 1)
check "the link refused no packet the stack sent (link_tx_err ${v:-0})" [ "${v:-0}" = 0 ]
v=$(sed -n 's/^  bad_desc *\([0-9]*\) .*/\1/p' /tmp/rr6-dump.out | head -n 1)
check "kring counter bad_desc is 0 ($v)" [ "$v" = 0 ]

holder_end

# Addresses added later.  slv2 has IPv4 (a module's stack needs one) and
# its link-local IPv6 address only when the stack "ra6" is made on it (a
# holder keeps it); its [::] server waits in accept() while fd00:79:b::1
# is added, with DAD.
$IP link add slv2 type veth peer name slv3
$IP link set slv3 netns "$NS"
$IP addr add 10.79.11.1/24 dev slv2
$IP link set slv2 up
in_ns $IP -6 addr add fd00:79:b::2/64 dev slv3 nodad
in_ns $IP link set slv3 up
i=0
while [ $i -lt 50 ] && { ! $IP -6 addr show dev slv2 scope link | grep -q 'inet6 fe80' ||
	$IP -6 addr show dev slv2 | grep -q tentative; }; do sleep 0.2; i=$((i + 1)); done
ST=ra6
timeout 600 $IP netns exec "$NS" v6echo serve-tcp :: 7500 2 600 >/tmp/m_tcp.out 2>&1 &
mtcp=$!
servers slv2 7205 hold2 7210 a_tcp 7310 ka_tcp
for f in m_tcp a_tcp ka_tcp; do
	check "server $f ready" wait_ready /tmp/$f.out 200
done
# show6 WHEN: the stack's IPv6 address (sluice dump), the module's view.
show6() {
	sluice dump $ST 2>&1 | grep -E '^  ipv6 ' | sed "s/^/# $1: /"
	grep -E 'filter|dev_seq' /sys/kernel/debug/sluice/stacks/$ST 2>/dev/null | sed "s/^/# $1: /"
}
show6 before
$IP -6 addr add fd00:79:b::1/64 dev slv2
i=0
while [ $i -lt 100 ] && $IP -6 addr show dev slv2 | grep -q tentative; do sleep 0.2; i=$((i + 1)); done
check "the kernel ran DAD on fd00:79:b::1 (no longer tentative)" \
	sh -c "$IP -6 addr show dev slv2 | grep -q 'fd00:79:b::1/64' && ! $IP -6 addr show dev slv2 | grep -q tentative"
show6 added
step "kernel TCP client in $NS -> [fd00:79:b::1]:7210, added after the stack was made, under sluice run, 300000 bytes echoed" \
	300000 in_ns_t v6echo tcp fd00:79:b::1 7210 300000
show6 after
sluice dump $ST 2>&1 | sed -n '/^counters:/,/^sockets:/p' | grep -v ' 0 ' | sed 's/^/# /'
kstep "kernel TCP client in $NS -> [fd00:79:b::1]:7310" in_ns_t v6echo tcp fd00:79:b::1 7310 300000
step "TCP client under sluice run on slv2 -> [fd00:79:b::2]:7500 from that address, 300000 bytes echoed" \
	300000 timeout 120 sluice run --stack $ST --ifname slv2 -- v6echo tcp fd00:79:b::2 7500 300000
kstep "TCP client -> [fd00:79:b::2]:7500" timeout 120 v6echo tcp fd00:79:b::2 7500 300000
for p in $stcp $ktcpd $mtcp; do wait "$p"; done
stcp= ktcpd= mtcp=
for f in a_tcp ka_tcp m_tcp; do sed "s/^/# $f: /" /tmp/$f.out; done
st=$(lines /tmp/a_tcp.out) kt=$(lines /tmp/ka_tcp.out)
check "the stack's server saw the client as the kernel's did ($st)" [ -n "$st" -a "$st" = "$kt" ]
mt=$(lines /tmp/m_tcp.out | uniq -c | awk '{ $1 = $1; print }')
check "the peer's server saw the stack's client as the kernel's ($mt)" \
	[ "$mt" = "2 tcp conn from v6: echoed 300000" ]
show6 end
kill $hold 2>/dev/null
wait $hold 2>/dev/null
hold=
hp=$(sluice dump $ST 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
[ -n "$hp" ] && kill "$hp" 2>/dev/null

cleanup
trap - EXIT
echo "1..$n"
exit $fail
