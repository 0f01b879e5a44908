#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: the kernel's own ib_ipoib on fakeib (as ipoib_real.sh),
# its P_Key child interfaces and its connected mode, with a Sluice stack
# on the kring link and the kernel as the peer (issue 14).  Prints TAP.
#
#   VM root namespace                          netns ipm-peer
#   +-------------------------------------+    +-----------------------------+
#   | ib0 (port 1) 10.81.0.1/24           |    | ib1 (port 2) 10.81.0.2/24   |
#   | ib0.8001     10.82.0.1/24           | IB | ib1.8001     10.82.0.2/24   |
#   | ib0.8002     10.83.0.1/24 (no P_Key |    |   kernel: kpeer serve on    |
#   |   in the table: ipoib keeps it down)|    |   both (TCP and UDP echo)   |
#   |   Sluice stacks (kring) on ib0.8001 +====+                             |
#   |   and, in connected mode, on ib0    |    |                             |
#   +-------------------------------------+    +-----------------------------+
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=ipm-peer
SUITE="ipoib P_Key children and connected mode"
. /opt/sluice/bin/ipoib_lib.sh

# field KIND PORT KEY: a value of fakeib's "KIND port PORT" line (ud, rc);
# qpf PORT QPN KEY: of the UD QP QPN (0x0000NN) on PORT.
field() { sed -n "/^  $1 port $2 /s/.* $3 \([0-9]*\).*/\1/p" $D/state | head -n 1; }
qpf() { sed -n "/^  udqp port $1 qpn $2 /s/.* $3 \([^ ]*\).*/\1/p" $D/state | head -n 1; }
# doc IF: sluice doctor's JSON for IF into /tmp/ipm-doc.json;
# jnum KEY, jstr KEY: a number, a string of it (the first such key).
doc() { sluice doctor --interface "$1" --json >/tmp/ipm-doc.json 2>&1; }
jnum() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" /tmp/ipm-doc.json | head -n 1; }
jstr() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" /tmp/ipm-doc.json | head -n 1; }
# QPN of an interface: its address's bytes 1..3.
qpn_of() { cut -d: -f2-4 "/sys/class/net/$1/address" | tr -d :; }
# The stack's MTU as sluice dump says it.
smtu() { sluice dump "$1" 2>/dev/null | sed -n 's/^stack .* mtu \([0-9]*\).*/\1/p' | head -n 1; }

check "fakeib loads with ipoib=1" insmod /lib/modules/fakeib.ko ipoib=1
ipoib_load_8001
ipoib_pair 10.81.0.1 10.81.0.2

# ---- P_Key children of the real ipoib (issue 14 item 7) ----
check "ipoib makes a P_Key child ib0.8001 (ip link add ... type ipoib pkey 0x8001)" \
	$IP link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "... and ib1.8001 in $NS" in_ns $IP link add link ib1 name ib1.8001 type ipoib pkey 0x8001
$IP addr add 10.82.0.1/24 dev ib0.8001
$IP link set ib0.8001 up
in_ns $IP addr add 10.82.0.2/24 dev ib1.8001
in_ns $IP link set ib1.8001 up
check "ib0.8001 has carrier (ipoib joined partition 0x8001's broadcast group)" until_t 100 carrier ib0.8001
check "ib1.8001 has carrier" until_t 100 ns_carrier ib1.8001
$IP -d link show ib0.8001 | sed 's/^/# /'
c0=0x$(qpn_of ib0.8001)
echo "# ib0.8001's QP $c0: $(grep "udqp port 1 qpn $c0 " $D/state)"
check "ipoib gave ib0.8001 a UD QP of its own on port 1 in RTS, P_Key index 1 (0x8001)" \
	test "$(qpf 1 $c0 state) $(qpf 1 $c0 pkey_index) $(qpf 1 $c0 pkey)" = "rts 1 0x8001"
check "the kernel pings across the children (baseline)" sh -c "ping -c 2 -W 5 10.82.0.2 >/dev/null"

# What the module says of the child, against what ipoib says (rtnetlink:
# ip -d link; the child has no pkey file in sysfs) and what its QP has.
doc ib0.8001
sed -n '/"ipoib"/,$p' /tmp/ipm-doc.json | tr -d '\n' | sed 's/^/# doctor: /'
echo
rt_pkey=$($IP -d link show ib0.8001 | sed -n 's/.*ipoib pkey *\(0x[0-9a-f]*\).*/\1/p')
check "IFINFO: ib0.8001 is IPoIB on fakeib0 port 1 (its parent's port)" \
	test "$(jstr ib_device) $(jnum ib_port)" = "fakeib0 1"
check "IFINFO: its P_Key is ipoib's ($(printf '0x%04x' "$(jnum pkey)"), rtnetlink $rt_pkey), in the table at index $(jnum pkey_index) (its QP's)" \
	test "$(printf '0x%04x' "$(jnum pkey)") $(jnum pkey_index)" = "$rt_pkey $(qpf 1 $c0 pkey_index)" -a -n "$rt_pkey"
check "IFINFO: ... in the port's table" grep -q '"pkey_in_table": *true' /tmp/ipm-doc.json
check "IFINFO: the QPN is the child's QP's ($(printf '0x%06x' "$(jnum qpn)"), $c0)" \
	test "$(printf '0x%06x' "$(jnum qpn)")" = "$c0"
check "IFINFO: the Q_Key is its QP's ($(printf '0x%08x' "$(jnum qkey)"), $(qpf 1 $c0 qkey)), from the SA" \
	test "$(printf '0x%08x' "$(jnum qkey)")" = "$(qpf 1 $c0 qkey)" -a "$(jnum qkey_from_sa)" != x
check "IFINFO: the UD MTU is the child's ($(jnum ud_mtu), ib0.8001 $(cat /sys/class/net/ib0.8001/mtu))" \
	test "$(jnum ud_mtu)" = "$(cat /sys/class/net/ib0.8001/mtu)"
check "doctor: mode and P_Key as rtnetlink gives them, parent ib0 ($(jstr mode), $(jstr parent))" \
	test "$(jstr mode) $(jstr parent)" = "datagram ib0" -a "$(sed -n 's/.*"ipoib": *{[^}]*"pkey": *"\([^"]*\)".*/\1/p' /tmp/ipm-doc.json)" = "$rt_pkey"

# A Sluice stack on the child, the kernel on ib1.8001: both ways.
in_ns kpeer serve 7000 300 >/tmp/ipm-ksrv.log 2>&1 &
ksrv=$!
sleep 1
check "UDP: 50 datagrams from a Sluice stack on ib0.8001 echoed by the kernel on ib1.8001" \
	quiet timeout 60 sluice run --stack chst --ifname ib0.8001 -- kpeer udp-echo 10.82.0.2 7000 50
check "TCP: 2 connections x 300000 bytes from the stack on ib0.8001 echoed byte for byte" \
	quiet timeout 60 sluice run --stack chst --ifname ib0.8001 -- kpeer tcp-echo 10.82.0.2 7000 300000 2
m=$(smtu chst)
check "the stack's MTU is ib0.8001's (stack ${m:-?}, ib0.8001 $(cat /sys/class/net/ib0.8001/mtu))" \
	test "$m" = "$(cat /sys/class/net/ib0.8001/mtu)"
big=$(($(cat /sys/class/net/ib0.8001/mtu) - 28))
check "UDP: $big-byte datagrams with DF from the stack on ib0.8001 echoed whole (as the kernel's, next)" \
	quiet timeout 60 sluice run --stack chst --ifname ib0.8001 -- kpeer udp-df 10.82.0.2 7000 $big 3
check "... the kernel on ib0.8001 the same (the baseline)" quiet timeout 60 kpeer udp-df 10.82.0.2 7000 $big 3
timeout 100 sluice run --stack chst --ifname ib0.8001 -- kpeer serve 7001 80 >/tmp/ipm-ssrv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 100 ] && ! sluice fds chst 2>/dev/null | grep -q kpeer; do sleep 0.2; i=$((i + 1)); done
check "UDP: the kernel on ib1.8001 sends 50 datagrams to the stack on ib0.8001, echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer udp-echo 10.82.0.1 7001 50
check "TCP: the kernel on ib1.8001 connects to the stack, 2 x 300000 bytes echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer tcp-echo 10.82.0.1 7001 300000 2
kill $ssrv 2>/dev/null
wait $ssrv 2>/dev/null
ssrv=
sluice dump chst 2>/dev/null | grep -E '^(stack|kring)' | sed 's/^/# dump: /'

# ---- a child whose P_Key is not in the port's table ----
check "ipoib makes ib0.8002 although 0x8002 is in no table" \
	$IP link add link ib0 name ib0.8002 type ipoib pkey 0x8002
$IP addr add 10.83.0.1/24 dev ib0.8002
$IP link set ib0.8002 up
sleep 1
check "... and keeps it down: up, no carrier ($(cat /sys/class/net/ib0.8002/operstate))" \
	test "$(cat /sys/class/net/ib0.8002/carrier)" = 0
doc ib0.8002
sed -n '/"module"/,$p' /tmp/ipm-doc.json | tr -d '\n' | sed 's/^/# doctor: /'
echo
check "IFINFO: P_Key 0x8002 not in the port's table" \
	test "$(jnum pkey) $(sed -n 's/.*"pkey_in_table": *\([a-z]*\).*/\1/p' /tmp/ipm-doc.json)" = "32770 false"
check "doctor: no stack runs on ib0.8002, and why" \
	sh -c "grep -q '\"kind\": *\"none\"' /tmp/ipm-doc.json && grep -q 'not in fakeib0 port 1' /tmp/ipm-doc.json"
# ipoib's own datagrams on ib0 and ib0.8001 (an ARP probe of a neighbour
# entry, a multicast report) may leave meanwhile: their QPs' sends are
# taken from the port's.
p0=0x$(qpn_of ib0)
own() { echo $(($(qpf 1 "$p0" sent) + $(qpf 1 "$c0" sent))); }
s0=$(field ud 1 sent) o0=$(own)
timeout 30 sluice run --stack ab --ifname ib0.8002 -- kpeer udp-echo 10.83.0.2 7000 2 >/tmp/ipm-ab.log 2>&1
s1=$(field ud 1 sent) o1=$(own)
sed 's/^/# /' /tmp/ipm-ab.log
check "sluice run on ib0.8002 says the P_Key is not in the table and leaves the sockets to the kernel" \
	sh -c "grep -q 'P_Key 0x8002 of ib0.8002 is not in fakeib0 port 1' /tmp/ipm-ab.log && grep -q 'sockets stay in the kernel' /tmp/ipm-ab.log"
check "... and nothing left port 1 meanwhile but ipoib's own on ib0 and ib0.8001, on any partition (UD sends $s0 -> $s1, ipoib's $o0 -> $o1)" \
	test $((s1 - s0)) = $((o1 - o0))
$IP link del ib0.8002

# ---- connected mode (RC QPs through ib_cm) ----
# ipoib sends unicast to a peer whose address has the RC flag over an RC
# QP that ib_cm connects (fakeib carries the CM MADs between the ports'
# QP1s and the RC messages between the QPs), multicast over UD; the MTU
# becomes 65520.  The kring path gives ipoib's xmit IP packets and takes
# what its receive path hands the stack, CM or UD alike.
echo connected >/sys/class/net/ib0/mode
in_ns sh -c 'echo connected >/sys/class/net/ib1/mode'
cmtu=$(cat /sys/class/net/ib0/mtu)
check "ib0 and ib1 in connected mode (ib0's MTU $cmtu)" \
	test "$(cat /sys/class/net/ib0/mode) $(in_ns cat /sys/class/net/ib1/mode)" = "connected connected"
r0=$(field rc 2 rcvd)
check "the kernel pings ib1 in connected mode" until_t 100 sh -c "ping -c 1 -W 1 10.81.0.2 >/dev/null 2>&1"
check "... with 20000-byte payloads (one IP packet at MTU $cmtu)" sh -c "ping -c 2 -W 5 -s 20000 10.81.0.2 >/dev/null"
check "... over RC QPs that ib_cm connected (CM MADs $(field rc 1 cm_mads)/$(field rc 2 cm_mads), RC messages into port 2: $r0 -> $(field rc 2 rcvd))" \
	test "$(field rc 2 rcvd)" -gt "$r0" -a "$(field rc 1 cm_mads)" -ge 1 -a "$(field rc 2 cm_mads)" -ge 1
grep -E 'rcqp|  rc ' $D/state | sed 's/^/# /'
doc ib0
check "IFINFO: ib0 in connected mode" grep -q '"connected": *true' /tmp/ipm-doc.json
check "UDP: 20000-byte datagrams with DF from the kernel on ib0 echoed by the kernel on ib1 (the baseline)" \
	quiet timeout 30 kpeer udp-df 10.81.0.2 7000 20000 2

timeout 200 sluice run --stack cm --ifname ib0 -- kpeer serve 7001 170 >/tmp/ipm-ssrv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 100 ] && ! sluice fds cm 2>/dev/null | grep -q kpeer; do sleep 0.2; i=$((i + 1)); done
sluice dump cm 2>/dev/null | sed -n '1,2p' | sed 's/^/# dump: /'
m=$(smtu cm)
bsz=$(sluice dump cm 2>/dev/null | sed -n 's/.* of \([0-9]*\) bytes$/\1/p' | head -n 1)
check "the stack's MTU on ib0 in connected mode is what its ${bsz:-?}-byte buffers hold less the 64-byte headroom (${m:-?}; ib0 $cmtu)" \
	test -n "$m" -a -n "$bsz" -a "$m" = $((bsz - 64)) -a "$m" -lt "$cmtu"
check "UDP: 50 datagrams from a Sluice stack on ib0 in connected mode echoed by the kernel" \
	quiet timeout 60 sluice run --stack cm --ifname ib0 -- kpeer udp-echo 10.81.0.2 7000 50
r0=$(field rc 2 rcvd)
check "TCP: 2 x 300000 bytes from the stack on ib0 in connected mode echoed byte for byte" \
	quiet timeout 90 sluice run --stack cm --ifname ib0 -- kpeer tcp-echo 10.81.0.2 7000 300000 2
check "... over the RC QPs (RC messages into port 2: $r0 -> $(field rc 2 rcvd))" test "$(field rc 2 rcvd)" -gt "$r0"
check "UDP: $((m - 28))-byte datagrams with DF (IP $m) from the stack echoed whole" \
	quiet timeout 60 sluice run --stack cm --ifname ib0 -- kpeer udp-df 10.81.0.2 7000 $((m - 28)) 3
too_big() { "$@" 2>/dev/null | grep -q 'Message too long'; }
check "UDP: 20000 bytes with DF from the stack: EMSGSIZE, past its MTU $m (the kernel sent them whole)" \
	too_big timeout 30 sluice run --stack cm --ifname ib0 -- kpeer udp-df 10.81.0.2 7000 20000 1
check "TCP: the kernel on ib1 connects to the stack in connected mode, 2 x 300000 bytes echoed" \
	quiet timeout 90 $IP netns exec "$NS" kpeer tcp-echo 10.81.0.1 7001 300000 2
check "UDP: the kernel on ib1 sends 50 datagrams to the stack in connected mode, echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer udp-echo 10.81.0.1 7001 50
# One IP packet of 20028 bytes, longer than any buffer of the stack: the
# module leaves it to the kernel, whose UDP gives it to the port's
# reservation, the server socket's twin; its echo goes back fragmented.
check "UDP: the kernel on ib1 sends 20000-byte datagrams with DF to the stack, echoed (through the socket's kernel twin)" \
	quiet timeout 30 $IP netns exec "$NS" kpeer udp-df 10.81.0.1 7001 20000 2
pass=$(sed -n 's/.* rx_pass_size \([0-9]*\).*/\1/p' /sys/kernel/debug/sluice/stacks/cm 2>/dev/null | head -n 1)
check "... the module left them to the kernel (rx_pass_size ${pass:-?})" test "${pass:-0}" -ge 2
sluice dump cm 2>/dev/null | grep -E '^(stack|kring)|rx_drop_size|ip_rx_frag|ip_tx_frag' | sed 's/^/# dump: /'
grep -E 'rcqp|  rc |  ud ' $D/state | sed 's/^/# /'
dmesg | grep -E 'ib[01]|fakeib|ib_cm' | tail -n 20 | sed 's/^/# dmesg: /'

# Back to datagram mode under the running stack: the MTU falls to the
# group's, and the stack made in connected mode takes it for new
# connections (the kring header's dev_mtu, kring_link.c), or its
# segments of up to 8128 bytes would be dropped by ipoib's UD send.
echo datagram >/sys/class/net/ib0/mode
in_ns sh -c 'echo datagram >/sys/class/net/ib1/mode'
check "back in datagram mode, the kernel pings ib1" until_t 100 sh -c "ping -c 1 -W 1 10.81.0.2 >/dev/null 2>&1"
check "TCP: the kernel connects to the stack made in connected mode, now in datagram mode, 2 x 300000 bytes echoed" \
	quiet timeout 90 $IP netns exec "$NS" kpeer tcp-echo 10.81.0.1 7001 300000 2
check "TCP: the same stack connects to the kernel, 2 x 300000 bytes echoed" \
	quiet timeout 90 sluice run --stack cm --ifname ib0 -- kpeer tcp-echo 10.81.0.2 7000 300000 2
m=$(smtu cm)
check "... its MTU followed ib0's ($m, ib0 $(cat /sys/class/net/ib0/mtu))" test "$m" = "$(cat /sys/class/net/ib0/mtu)"
kill $ssrv 2>/dev/null
wait $ssrv 2>/dev/null
ssrv=

cleanup
trap - EXIT
check "ib_ipoib, ib_cm and fakeib unload" sh -c "! lsmod | grep -qE '^(ib_ipoib|ib_cm|fakeib) '"
echo "1..$n"
exit $fail
