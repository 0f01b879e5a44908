#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: the kernel's own ib_ipoib in enhanced mode on fakeib
# (issue 14).  fakeib.ko enhanced=1 gives port 1 an rdma_netdev, as mlx5
# with its IPoIB offloads does: ipoib's ib0 and its P_Key child
# ib0.8001 run on fakeib's underlay QPs; port 2 stays legacy (ipoib's
# own UD QPs), so the kernel's two datagram paths talk to each other.
# Then what the module says of each interface (enhanced or not, QPN,
# Q_Key, P_Key, MTU) and a Sluice stack on the enhanced interfaces (the
# kring link: fakeib has no flow steering and no uverbs) with the kernel
# on the other port.  Prints TAP.
#
#   VM root namespace                          netns ipe-peer
#   +-------------------------------------+    +-----------------------------+
#   | ib0 (port 1, enhanced) 10.91.0.1/24 | IB | ib1 (port 2, legacy)        |
#   | ib0.8001 (enhanced)    10.92.0.1/24 +====+ ib1.8001  10.9[12].0.2/24   |
#   |   the kernel, then Sluice stacks    |    |   kernel: kpeer serve       |
#   +-------------------------------------+    +-----------------------------+
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=ipe-peer
SUITE="enhanced IPoIB on fakeib's rdma_netdev"
. /opt/sluice/bin/ipoib_lib.sh

# field KIND PORT KEY: a value of fakeib's "KIND port PORT" line (ud, rc);
# qpf PORT QPN KEY: of the UD QP QPN (0x0000NN) on PORT.
field() { sed -n "/^  $1 port $2 /s/.* $3 \([0-9]*\).*/\1/p" $D/state | head -n 1; }
qpf() { sed -n "/^  udqp port $1 qpn $2 /s/.* $3 \([^ ]*\).*/\1/p" $D/state | head -n 1; }
# nqp PORT: UD QPs on PORT; under IF: the QPN of IF's underlay QP.
nqp() { grep -c "^  udqp port $1 " $D/state; }
under() { sed -n "/^  udqp .* underlay $1\$/s/.* qpn \(0x[0-9a-f]*\) .*/\1/p" $D/state | head -n 1; }
doc() { sluice doctor --interface "$1" --json >/tmp/ipe-doc.json 2>&1; }
jnum() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" /tmp/ipe-doc.json | head -n 1; }
jstr() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" /tmp/ipe-doc.json | tail -n 1; }
jbool() { sed -n "s/.*\"$1\": *\([a-z][a-z]*\).*/\1/p" /tmp/ipe-doc.json | tail -n 1; }
qpn_of() { cut -d: -f2-4 "/sys/class/net/$1/address" | tr -d :; }
smtu() { sluice dump "$1" 2>/dev/null | sed -n 's/^stack .* mtu \([0-9]*\).*/\1/p' | head -n 1; }
# ifinfo IF: the module's facts of IF against fakeib's and ipoib's
# (the underlay QP, the partition, the interface's MTU); ENH true/false.
ifinfo() {
	f=$1 enh=$2 port=$3
	doc "$f"
	sed -n '/"ipoib"/,$p' /tmp/ipe-doc.json | tr -d '\n' | sed 's/^/# doctor: /'
	echo
	q=0x$(qpn_of "$f")
	check "IFINFO: $f enhanced $(jbool enhanced) (fakeib: $([ "$(under "$f")" ] && echo "underlay QP $(under "$f")" || echo "no underlay"))" \
		test "$(jbool enhanced)" = "$enh"
	check "IFINFO: $f's QPN $(printf '0x%06x' "$(jnum qpn)") is its address's ($q) on fakeib0 port $(jnum ib_port)" \
		test "$(printf '0x%06x' "$(jnum qpn)") $(jnum ib_port)" = "$q $port"
	check "IFINFO: $f's P_Key index $(jnum pkey_index) and Q_Key $(printf '0x%08x' "$(jnum qkey)") are its QP's ($(qpf "$port" "$q" pkey_index), $(qpf "$port" "$q" qkey))" \
		test "$(jnum pkey_index) $(printf '0x%08x' "$(jnum qkey)")" = "$(qpf "$port" "$q" pkey_index) $(qpf "$port" "$q" qkey)"
	check "IFINFO: $f's UD MTU $(jnum ud_mtu) is the interface's ($(in_ns_or "$f" cat "/sys/class/net/$f/mtu"))" \
		test "$(jnum ud_mtu)" = "$(in_ns_or "$f" cat "/sys/class/net/$f/mtu")"
}
in_ns_or() { f=$1; shift; if [ -e "/sys/class/net/$f" ]; then "$@"; else in_ns "$@"; fi; }

check "fakeib loads with ipoib=1 enhanced=1 (an rdma_netdev on port 1)" \
	insmod /lib/modules/fakeib.ko ipoib=1 enhanced=1
# The broadcast groups get Q_Key 0x1234 from the fake SA, not the
# default 0x0B1B the underlay QP starts with: ipoib hands it over in
# attach_mcast (set_qkey), and a legacy peer sends with it.
QK=0x00001234
echo "qkey 1 $QK" >$D/ctl
echo "qkey 2 $QK" >$D/ctl
ipoib_load_8001
ipoib_pair 10.91.0.1 10.91.0.2 "ipoib joined the broadcast group through the rdma_netdev"
grep udqp $D/state | sed 's/^/# /'
q0=0x$(qpn_of ib0)
check "ib0's QPN $q0 is fakeib's underlay QP for it, in RTS with the group's Q_Key ($(qpf 1 "$q0" qkey); the SA's $QK)" \
	test "$(under ib0) $(qpf 1 "$q0" state) $(qpf 1 "$q0" qkey)" = "$q0 rts 0x$(printf %08x $QK)"
check "... and the only UD QP on port 1: ipoib made none of its own ($(nqp 1); port 2, legacy: $(nqp 2) with no underlay)" \
	test "$(nqp 1)" = 1 -a "$(nqp 2)" -ge 1 -a -z "$(grep "udqp port 2 .*underlay [^-]" $D/state)"
check "ipoib refuses connected mode on ib0 (no RC flag in an enhanced address), as on mlx5" \
	sh -c "! echo connected >/sys/class/net/ib0/mode 2>/dev/null && [ \$(cat /sys/class/net/ib0/mode) = datagram ]"
s0=$(qpf 1 "$q0" sent)
check "the kernel on ib0 (enhanced) pings the kernel on ib1 (legacy)" sh -c "ping -c 3 -W 5 10.91.0.2 >/dev/null"
check "... through ib0's underlay QP (its sends $s0 -> $(qpf 1 "$q0" sent))" test "$(qpf 1 "$q0" sent)" -gt "$s0"
check "the kernel on ib1 pings ib0" in_ns sh -c "ping -c 3 -W 5 10.91.0.1 >/dev/null"
big=$(($(cat /sys/class/net/ib0/mtu) - 28))
in_ns kpeer serve 7000 400 >/tmp/ipe-ksrv.log 2>&1 &
ksrv=$!
sleep 1
check "UDP: the kernel on ib0 sends 50 datagrams, echoed by the kernel on ib1 (the baseline)" \
	quiet timeout 60 kpeer udp-echo 10.91.0.2 7000 50
check "TCP: the kernel on ib0, 2 x 300000 bytes echoed byte for byte by the kernel on ib1 (the baseline)" \
	quiet timeout 90 kpeer tcp-echo 10.91.0.2 7000 300000 2
check "UDP: $big-byte datagrams with DF (ib0's MTU) from the kernel on ib0 echoed whole" \
	quiet timeout 60 kpeer udp-df 10.91.0.2 7000 $big 3
e0=$(field ud 1 len_err_tx)
timeout 30 kpeer udp-df 10.91.0.2 7000 $((big + 1)) 1 >/tmp/ipe-big.log 2>&1
check "$((big + 1)) bytes with DF from the kernel on ib0: Message too long, as its MTU says; nothing too long reached the underlay QP (len_err_tx $e0 -> $(field ud 1 len_err_tx))" \
	sh -c "grep -q 'Message too long' /tmp/ipe-big.log && [ $e0 = $(field ud 1 len_err_tx) ]"

# ---- a P_Key child in enhanced mode ----
check "ipoib makes the child ib0.8001 on the enhanced parent" \
	$IP link add link ib0 name ib0.8001 type ipoib pkey 0x8001
check "... and ib1.8001 (legacy) in $NS" in_ns $IP link add link ib1 name ib1.8001 type ipoib pkey 0x8001
$IP addr add 10.92.0.1/24 dev ib0.8001
$IP link set ib0.8001 up
in_ns $IP addr add 10.92.0.2/24 dev ib1.8001
in_ns $IP link set ib1.8001 up
check "ib0.8001 has carrier" until_t 100 carrier ib0.8001
check "ib1.8001 has carrier" until_t 100 ns_carrier ib1.8001
c0=0x$(qpn_of ib0.8001)
check "ib0.8001 has an underlay QP of its own ($c0), P_Key index 1 (0x8001) from set_id" \
	test "$(under ib0.8001) $(qpf 1 "$c0" state) $(qpf 1 "$c0" pkey_index) $(qpf 1 "$c0" pkey)" = "$c0 rts 1 0x8001"
s0=$(qpf 1 "$c0" sent)
check "the kernel pings across the children" sh -c "ping -c 2 -W 5 10.92.0.2 >/dev/null"
check "... through ib0.8001's underlay QP (its sends $s0 -> $(qpf 1 "$c0" sent))" test "$(qpf 1 "$c0" sent)" -gt "$s0"
check "UDP: the kernel on ib0.8001, 50 datagrams echoed by the kernel on ib1.8001 (the baseline)" \
	quiet timeout 60 kpeer udp-echo 10.92.0.2 7000 50
check "TCP: the kernel on ib0.8001, 2 x 300000 bytes echoed (the baseline)" \
	quiet timeout 90 kpeer tcp-echo 10.92.0.2 7000 300000 2

# ---- what the module says (IFINFO), per interface, not per device ----
ifinfo ib0 true 1
ifinfo ib0.8001 true 1
doc ib0
check "doctor: the path on ib0 is the kring one, and why ($(jstr kind): fakeib0 offers no flow steering)" \
	sh -c "grep -q '\"kind\": *\"kring\"' /tmp/ipe-doc.json && grep -q 'fakeib0 offers no flow steering' /tmp/ipe-doc.json"
# ib1 is on the same device, whose rdma_netdev_get_params exists, but
# fakeib gave port 2 none: the module must say legacy.
in_ns sluice doctor --interface ib1 --json >/tmp/ipe-doc.json 2>&1
check "IFINFO: ib1 on the same device is not enhanced (port 2 has no rdma_netdev: legacy ipoib)" \
	test "$(jbool enhanced)" = false -a "$(jbool ipoib)" = true

# ---- Sluice stacks on the enhanced interfaces, the kernel on port 2 ----
check "UDP: 50 datagrams from a Sluice stack on ib0 (enhanced) echoed by the kernel on ib1" \
	quiet timeout 60 sluice run --stack en0 --ifname ib0 -- kpeer udp-echo 10.91.0.2 7000 50
check "TCP: 2 x 300000 bytes from the stack on ib0 echoed byte for byte" \
	quiet timeout 90 sluice run --stack en0 --ifname ib0 -- kpeer tcp-echo 10.91.0.2 7000 300000 2
m=$(smtu en0)
check "the stack's MTU is ib0's (stack ${m:-?}, ib0 $(cat /sys/class/net/ib0/mtu))" \
	test "$m" = "$(cat /sys/class/net/ib0/mtu)"
check "UDP: $big-byte datagrams with DF from the stack on ib0 echoed whole (the kernel's above)" \
	quiet timeout 60 sluice run --stack en0 --ifname ib0 -- kpeer udp-df 10.91.0.2 7000 $big 3
timeout 120 sluice run --stack en0 --ifname ib0 -- kpeer serve 7001 100 >/tmp/ipe-ssrv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 100 ] && ! sluice fds en0 2>/dev/null | grep -q kpeer; do sleep 0.2; i=$((i + 1)); done
check "UDP: the kernel on ib1 sends 50 datagrams to the stack on ib0, echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer udp-echo 10.91.0.1 7001 50
check "TCP: the kernel on ib1 connects to the stack on ib0, 2 x 300000 bytes echoed" \
	quiet timeout 90 $IP netns exec "$NS" kpeer tcp-echo 10.91.0.1 7001 300000 2
kill $ssrv 2>/dev/null
wait $ssrv 2>/dev/null
ssrv=
sluice dump en0 2>/dev/null | grep -E '^(stack|kring)' | sed 's/^/# dump: /'
check "UDP: 50 datagrams from a Sluice stack on ib0.8001 (enhanced child) echoed by the kernel on ib1.8001" \
	quiet timeout 60 sluice run --stack en1 --ifname ib0.8001 -- kpeer udp-echo 10.92.0.2 7000 50
check "TCP: 2 x 300000 bytes from the stack on ib0.8001 echoed byte for byte" \
	quiet timeout 90 sluice run --stack en1 --ifname ib0.8001 -- kpeer tcp-echo 10.92.0.2 7000 300000 2
timeout 120 sluice run --stack en1 --ifname ib0.8001 -- kpeer serve 7001 100 >/tmp/ipe-ssrv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 100 ] && ! sluice fds en1 2>/dev/null | grep -q kpeer; do sleep 0.2; i=$((i + 1)); done
check "TCP: the kernel on ib1.8001 connects to the stack on ib0.8001, 2 x 300000 bytes echoed" \
	quiet timeout 90 $IP netns exec "$NS" kpeer tcp-echo 10.92.0.1 7001 300000 2
check "UDP: the kernel on ib1.8001 sends 50 datagrams to the stack on ib0.8001, echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer udp-echo 10.92.0.1 7001 50
kill $ssrv 2>/dev/null
wait $ssrv 2>/dev/null
ssrv=
grep -E 'udqp|  ud ' $D/state | sed 's/^/# /'

# ---- the child goes, then the parent: their underlay QPs with them ----
$IP link del ib0.8001
check "ib0.8001 deleted: its underlay QP $c0 is gone, ib0's $q0 stays" \
	sh -c "! grep -q 'qpn $c0 ' $D/state && grep -q 'underlay ib0\$' $D/state"
$IP link set ib0 down
check "ib0 down: its underlay QP in reset (no datagram taken)" test "$(qpf 1 "$q0" state)" = reset
$IP link set ib0 up
check "ib0 up again: the kernel pings ib1 through the underlay QP back in RTS" \
	until_t 100 sh -c "ping -c 1 -W 1 10.91.0.2 >/dev/null 2>&1"
dmesg | grep -E 'ib[01]|fakeib|ipoib' | tail -n 12 | sed 's/^/# dmesg: /'

cleanup
trap - EXIT
check "ib_ipoib, ib_cm and fakeib unload" sh -c "! lsmod | grep -qE '^(ib_ipoib|ib_cm|fakeib) '"
echo "1..$n"
exit $fail
