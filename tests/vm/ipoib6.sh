#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: IPv6 over the kernel's own ib_ipoib on fakeib (issue 20
# item 3, RFC 4391), a Sluice stack on the kring link, as run_kring6.sh is
# on a veth.  The kernel keeps Neighbour Discovery (its 20-byte link-layer
# address options) and the multicast-to-MGID mapping; the module sends the
# stack's packets through NEIGH_ND_TABLE (ipoib's hard header) and steers
# ETH_P_IPV6 from ipoib to the rings.  On ib0 and on the P_Key child
# ib0.8001: tests/preload/v6echo TCP and UDP between the stack and the
# kernel on the other port, both ways, byte-exact, none of it the VM
# kernel's TCP or UDP, and the same program on the VM's kernel beside
# each step.  The stack's link-local address is the device's, derived
# from the port GUID (RFC 4391 section 8).  Prints TAP.
#
#   VM root namespace                             netns ip6-peer
#   +----------------------------------------+    +-----------------------------+
#   | ib0 (port 1)  fd00:79:16::1/64         |    | ib1 (port 2) fd00:79:16::2  |
#   | ib0.8001      fd00:79:17::1/64         | IB | ib1.8001     fd00:79:17::2  |
#   |   Sluice stacks (kring) on each:       +====+   kernel: v6echo servers    |
#   |   v6echo servers and clients; the      |    |   and the clients of the    |
#   |   VM's kernel's beside them            |    |   stack's and VM's servers  |
#   +----------------------------------------+    +-----------------------------+
#
# Every program runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=ip6-peer
SUITE="IPv6 over the real ib_ipoib"
. /opt/sluice/bin/ipoib_lib.sh

in_ns_t() { timeout 120 $IP netns exec "$NS" "$@"; }
# kctr, kseen, lines, step, kstep (on stack $ST, STEP_TAG set per device).
. /opt/sluice/bin/v6_lib.sh
# hex6 ADDR: an IPv6 address as 32 hex digits (as /proc/net/if_inet6).
hex6() {
	echo "$1" | awk -F: '{
		n = 0; for (i = 1; i <= NF; i++) if ($i != "") n++
		out = ""; z = 0
		for (i = 1; i <= NF; i++) {
			if ($i == "") { if (!z) { for (j = n; j < 8; j++) out = out "0000"; z = 1 } continue }
			out = out substr("0000" $i, length($i) + 1)
		}
		print tolower(out) }'
}
# ll_of IF: IF's link-local address in the kernel (if_inet6, scope 20).
ll_of() { awk -v d="$1" '$6 == d && $4 == "20" { print $1 }' /proc/net/if_inet6 | head -n 1; }
# guid_ll IF: fe80::/64 with the interface identifier RFC 4391 section 8
# derives from IF's 20-byte address: its last 8 bytes (the port GUID)
# with the universal/local bit (0x02 of the first) set.
guid_ll() {
	g=$(cut -d: -f13-20 "/sys/class/net/$1/address" | tr -d :)
	printf 'fe80000000000000%x%s\n' $(( 0x$(echo "$g" | cut -c1) )) \
		"$(printf '%x' $(( 0x$(echo "$g" | cut -c2) | 2 )))$(echo "$g" | cut -c3-)"
}

check "fakeib loads with ipoib=1" insmod /lib/modules/fakeib.ko ipoib=1
ipoib_load_8001
ipoib_pair 10.79.16.1 10.79.16.2
check "ipoib makes the P_Key children ib0.8001 and ib1.8001 in $NS" \
	sh -c "$IP link add link ib0 name ib0.8001 type ipoib pkey 0x8001 &&
		$IP netns exec $NS $IP link add link ib1 name ib1.8001 type ipoib pkey 0x8001"
$IP addr add 10.79.17.1/24 dev ib0.8001
$IP link set ib0.8001 up
in_ns $IP addr add 10.79.17.2/24 dev ib1.8001
in_ns $IP link set ib1.8001 up
check "ib0.8001 and ib1.8001 have carrier" until_t 100 sh -c \
	"[ \"\$(cat /sys/class/net/ib0.8001/carrier)\" = 1 ] &&
	 [ \"\$($IP netns exec $NS cat /sys/class/net/ib1.8001/carrier)\" = 1 ]"
for d in ib0 ib0.8001; do
	[ $d = ib0 ] && p=16 || p=17
	$IP -6 addr add fd00:79:$p::1/64 dev $d nodad
	in_ns $IP -6 addr add fd00:79:$p::2/64 dev ib1${d#ib0} nodad
done
# The link-local addresses' DAD (the kernel's, over ipoib's multicast).
i=0
while [ $i -lt 50 ] && { $IP -6 addr show | grep -q tentative ||
	in_ns $IP -6 addr show | grep -q tentative; }; do sleep 0.2; i=$((i + 1)); done
for d in ib0 ib0.8001; do
	check "$d's link-local address is the one RFC 4391 section 8 derives from its GUID ($(ll_of $d))" \
		test "$(ll_of $d)" = "$(guid_ll $d)"
done

# suite_on DEV S6 K6 ST BASE: the steps on one interface; ports BASE+0
# (the stack's TCP server), +1 (its UDP), +2 (its holder), +10 and +11
# (the VM kernel's servers), +20 and +21 (the peer's).
suite_on() {
	dev=$1 S6=$2 K6=$3 ST=$4 b=$5
	pdev=ib1${dev#ib0}
	srun() { timeout 120 sluice run --stack $ST --ifname $dev -- "$@"; }

	check "$dev: the kernel pings the peer over IPv6 (its ND over ipoib, baseline)" \
		sh -c "ping -6 -c 2 -W 5 $K6 >/dev/null"
	lla=$($IP -6 neigh show $K6 dev $dev | sed -n 's/.* lladdr \([^ ]*\).*/\1/p')
	check "$dev: the kernel's ND learnt the peer's 20-byte address, $pdev's ($lla)" \
		test "$lla" = "$(in_ns cat /sys/class/net/$pdev/address)"

	in_ns_t v6echo serve-tcp :: $((b + 20)) 2 300 >/tmp/p_tcp.out 2>&1 &
	ptcp=$!
	in_ns_t v6echo serve-udp :: $((b + 21)) 8 300 >/tmp/p_udp.out 2>&1 &
	pudp=$!
	timeout 300 v6echo serve-tcp :: $((b + 10)) 1 300 >/tmp/k_tcp.out 2>&1 &
	ktcpd=$!
	timeout 300 v6echo serve-udp :: $((b + 11)) 3 300 >/tmp/k_udp.out 2>&1 &
	kudpd=$!
	timeout 300 sluice run --stack $ST --ifname $dev -- v6echo serve-udp :: $((b + 2)) 1 300 \
		>/tmp/hold.out 2>&1 &
	hold=$!
	ksrv="$ptcp $pudp $ktcpd $kudpd $hold"
	wait_ready /tmp/hold.out 200
	timeout 300 sluice run --stack $ST --ifname $dev -- v6echo serve-tcp :: $b 1 300 \
		>/tmp/s_tcp.out 2>&1 &
	stcp=$!
	timeout 300 sluice run --stack $ST --ifname $dev -- v6echo serve-udp :: $((b + 1)) 3 300 \
		>/tmp/s_udp.out 2>&1 &
	sudp=$!
	ssrv="$stcp $sudp"
	for f in p_tcp p_udp k_tcp k_udp s_tcp s_udp; do
		check "$dev: server $f ready" wait_ready /tmp/$f.out 200
	done
	sluice dump $ST >/tmp/ip6-dump.out 2>&1
	ifi=$(cat /sys/class/net/$dev/ifindex)
	check "$dev: the stack is on $dev (ifindex $ifi) through the module's rings" \
		grep -q "^kring: ifindex $ifi, device up" /tmp/ip6-dump.out
	grep -E '^(stack|kring|  ipv6)' /tmp/ip6-dump.out | sed 's/^/# dump: /'
	a=$(sed -n 's/^  ipv6 \([^/]*\)\/\([0-9]*\),.*/\1 \2/p' /tmp/ip6-dump.out)
	check "$dev: the stack's IPv6 address is the device's ($a)" \
		test "$(hex6 "${a% *}") ${a#* }" = "$(hex6 $S6) 64"
	sll=$(sed -n 's/.* link-local \([^/]*\)\/64 valid, scope .*/\1/p' /tmp/ip6-dump.out)
	check "$dev: its link-local address is the device's, from the GUID ($sll)" \
		test -n "$sll" -a "$(hex6 "$sll")" = "$(ll_of $dev)"
	mtu=$(cat /sys/class/net/$dev/mtu)
	big=$((mtu - 48))

	STEP_TAG="$dev: "
	step "TCP client under sluice run -> kernel [$K6]:$((b + 20)), 300000 bytes echoed" 300000 \
		srun v6echo tcp $K6 $((b + 20)) 300000
	kstep "TCP client -> kernel [$K6]:$((b + 20))" timeout 120 v6echo tcp $K6 $((b + 20)) 300000
	step "UDP client under sluice run -> kernel [$K6]:$((b + 21)), 3 x 1400 and 1 x $big (IPv6 $mtu) echoed" 5600 \
		sh -c "timeout 120 sluice run --stack $ST --ifname $dev -- v6echo udp $K6 $((b + 21)) 3 1400 &&
			timeout 120 sluice run --stack $ST --ifname $dev -- v6echo udp $K6 $((b + 21)) 1 $big"
	kstep "UDP client -> kernel [$K6]:$((b + 21)), 3 x 1400 and 1 x $big" \
		sh -c "timeout 120 v6echo udp $K6 $((b + 21)) 3 1400 && timeout 120 v6echo udp $K6 $((b + 21)) 1 $big"
	step "kernel TCP client on $pdev -> [$S6]:$b under sluice run, 300000 bytes echoed" 300000 \
		in_ns_t v6echo tcp $S6 $b 300000
	step "kernel UDP client on $pdev -> [$S6]:$((b + 1)) under sluice run, 2 x 1400 and 1 x $big echoed" 4000 \
		sh -c "$IP netns exec $NS timeout 120 v6echo udp $S6 $((b + 1)) 2 1400 &&
			$IP netns exec $NS timeout 120 v6echo udp $S6 $((b + 1)) 1 $big"
	kstep "kernel TCP client on $pdev -> [$S6]:$((b + 10))" in_ns_t v6echo tcp $S6 $((b + 10)) 300000
	kstep "kernel UDP client on $pdev -> [$S6]:$((b + 11)), 2 x 1400 and 1 x $big" \
		sh -c "$IP netns exec $NS timeout 120 v6echo udp $S6 $((b + 11)) 2 1400 &&
			$IP netns exec $NS timeout 120 v6echo udp $S6 $((b + 11)) 1 $big"

	for p in $stcp $sudp $ktcpd $kudpd $ptcp; do wait "$p"; done
	kill $pudp 2>/dev/null
	wait $pudp 2>/dev/null
	for f in s_tcp s_udp k_tcp k_udp p_tcp p_udp; do sed "s/^/# $f: /" /tmp/$f.out; done
	st=$(lines /tmp/s_tcp.out) kt=$(lines /tmp/k_tcp.out)
	check "$dev: the stack's TCP server saw what the kernel's did, line for line ($st)" \
		[ -n "$st" -a "$st" = "$kt" ]
	su=$(lines /tmp/s_udp.out) ku=$(lines /tmp/k_udp.out)
	check "$dev: the stack's UDP server saw what the kernel's did, line for line" \
		[ -n "$su" -a "$su" = "$ku" ]
	pt=$(lines /tmp/p_tcp.out | uniq -c | awk '{ $1 = $1; print }')
	check "$dev: the peer's TCP server saw the stack's client as the kernel's ($pt)" \
		[ "$pt" = "2 tcp conn from v6: echoed 300000" ]
	pu=$(lines /tmp/p_udp.out | sort | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')
	check "$dev: ... and its UDP server ($pu)" \
		[ "$pu" = "6 udp dgram from v6: echoed 1400|2 udp dgram from v6: echoed $big|" ]

	sluice dump $ST >/tmp/ip6-dump.out 2>&1
	sed -n '/^counters:/,/^sockets:/p' /tmp/ip6-dump.out | grep -v ' 0 ' | sed 's/^/# /'
	for c in bad_index bad_buf bad_desc rx_drop_size; do
		v=$(sed -n "s/^  $c *\([0-9]*\) .*/\1/p" /tmp/ip6-dump.out | head -n 1)
		check "$dev: kring counter $c is 0 ($v)" [ "$v" = 0 ]
	done
	v=$(sed -n 's/^  link_tx_err *\([0-9]*\) .*/\1/p' /tmp/ip6-dump.out | head -n 1)
	check "$dev: the link refused no packet the stack sent (link_tx_err ${v:-0})" [ "${v:-0}" = 0 ]
	kill $hold 2>/dev/null
	wait $hold 2>/dev/null
	hp=$(sluice dump $ST 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	i=0
	while [ $i -lt 100 ] && [ -d /sys/class/misc/sluice/stacks/$ST ]; do sleep 0.2; i=$((i + 1)); done
	ksrv= ssrv=
}

suite_on ib0 fd00:79:16::1 fd00:79:16::2 ip6a 7600
suite_on ib0.8001 fd00:79:17::1 fd00:79:17::2 ip6b 7700

cleanup
trap - EXIT
check "ib_ipoib, ib_cm and fakeib unload" sh -c "! lsmod | grep -qE '^(ib_ipoib|fakeib) '"
echo "1..$n"
exit $fail
