#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: the kernel's own ib_ipoib driver on fakeib (issue 14,
# "way 2"): fakeib.ko loaded with ipoib=1 makes no interfaces of its own,
# and ib_ipoib binds to its two ports as it would to an HCA's.  fakeib's
# UD QPs carry the datagrams between the ports under the hardware's rules
# (tests/vm/fakeib/fakeib.c, "UD datagrams between the two ports").
# Prints TAP.
#
#   VM root namespace                         netns ipr-peer
#   +------------------------------------+    +---------------------------+
#   | ib0 (port 1) 10.79.0.1/24          |    | ib1 (port 2) 10.79.0.2/24 |
#   |   kernel: ping, kpeer clients      | IB |   kernel: kpeer serve     |
#   |   Sluice stack "ipr" (kring on ib0)+====+   (TCP and UDP echo),      |
#   |   under sluice run: kpeer both ways|    |   kpeer clients            |
#   +------------------------------------+    +---------------------------+
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=ipr-peer
S=10.79.0.1
K=10.79.0.2
ST=ipr
SUITE="real ib_ipoib on fakeib"
. /opt/sluice/bin/ipoib_lib.sh

# field PORT KEY: a value of fakeib's "ud port PORT" line; qpf PORT KEY:
# of its UD QP on PORT ("udqp port PORT" line).
field() { sed -n "/^  ud port $1 /s/.* $2 \([0-9]*\).*/\1/p" $D/state | head -n 1; }
qpf() { sed -n "/^  udqp port $1 /s/.* $2 \([^ ]*\).*/\1/p" $D/state | head -n 1; }
has_dev() { [ -e "/sys/class/net/$1" ]; }

check "fakeib loads with ipoib=1 (no interfaces of its own)" insmod /lib/modules/fakeib.ko ipoib=1
# Ports at 4096 while the fake SA gives groups 2048 (an SM may): ipoib's
# MTU is the broadcast group's.
echo "mtu 1 4096" >$D/ctl
echo "mtu 2 4096" >$D/ctl
insmod $KM/ib_cm.ko 2>/dev/null
check "the kernel's ib_ipoib loads" insmod $KM/ib_ipoib.ko
check "ib_ipoib made ib0 on fakeib0 port 1" until_t 50 has_dev ib0
check "... and ib1 on port 2" until_t 50 has_dev ib1
check "ib0 is port 1's (dev_port 0), ib1 port 2's (dev_port 1)" \
	test "$(cat /sys/class/net/ib0/dev_port)" = 0 -a "$(cat /sys/class/net/ib1/dev_port)" = 1
echo "# ib0 $(cat /sys/class/net/ib0/address) mode $(cat /sys/class/net/ib0/mode 2>/dev/null)"

ipoib_pair "$S" "$K" "ipoib joined its broadcast group through the fake SA"
sed 's/^/# /' $D/state

# What ipoib did with its UD QP, as fakeib saw it.
qpn0=$(qpf 1 qpn)
hw0=$(cat /sys/class/net/ib0/address | cut -d: -f2-4 | tr -d :)
check "ib0's QP (0x$hw0 in its address) is in RTS on port 1" \
	test "$(qpf 1 state)" = rts -a "$qpn0" = "0x$hw0"
check "... its Q_Key the broadcast group's from the SA (0x00000b1b)" test "$(qpf 1 qkey)" = 0x00000b1b
check "... attached to multicast groups (broadcast and more)" test "$(qpf 1 mcgs)" -ge 1
mtu0=$(cat /sys/class/net/ib0/mtu)
check "ib0's MTU is the group's 2048 (the port's is 4096) less ipoib's 4-byte header ($mtu0)" test "$mtu0" = 2044

# The kernel pings across the ports, ARP first (broadcast, with a GRH).
r0=$(field 2 rcvd)
check "ping from ib1's namespace to ib0 (kernel to kernel over fakeib)" \
	sh -c "$IP netns exec $NS ping -c 3 -W 5 $S >/dev/null"
check "ping from ib0 to ib1 with 1900-byte payloads" sh -c "ping -c 2 -W 5 -s 1900 $K >/dev/null"
r1=$(field 2 rcvd)
check "... the datagrams went through port 2's UD QP ($r0 -> $r1)" test "$r1" -gt "$r0"
check "... no Q_Key, P_Key or length drops" \
	test "$(field 1 drop_qkey)$(field 2 drop_qkey)$(field 1 drop_pkey)$(field 2 drop_pkey)$(field 1 len_err_rx)$(field 2 len_err_rx)" = 000000
check "... unicast went by path records from the fake SA ($(field 1 path_answers) on port 1)" \
	test "$(field 1 path_answers)" -ge 1

# The module's IFINFO on the real ipoib's interface.
sluice doctor --interface ib0 --json >/tmp/ipr-doc.json 2>&1
jnum() { sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" /tmp/ipr-doc.json | head -n 1; }
sed -n '/"module"/,$p' /tmp/ipr-doc.json | tr -d '\n' | sed 's/^/# doctor: /'
echo
check "IFINFO: ib0 is IPoIB on fakeib0 port 1" grep -q '"ib_device": *"fakeib0"' /tmp/ipr-doc.json
check "IFINFO: the QPN is ipoib's QP ($(jnum qpn))" test "$(printf '0x%06x' "$(jnum qpn)")" = "$qpn0"
check "IFINFO: the Q_Key is the QP's ($(jnum qkey))" test "$(printf '0x%08x' "$(jnum qkey)")" = "$(qpf 1 qkey)"
check "IFINFO: ... from the SA's record" grep -q '"qkey_from_sa": *true' /tmp/ipr-doc.json
check "doctor: the P_Key is the QP's ($(qpf 1 pkey))" grep -q '"pkey": *"0xffff"' /tmp/ipr-doc.json
check "IFINFO: the UD MTU is ipoib's ($(jnum ud_mtu), ib0 $mtu0)" test "$(jnum ud_mtu)" = "$mtu0"

# A Sluice stack on ib0 through the module's rings, with the kernel on
# the other port: TCP and UDP, both ways.
in_ns kpeer serve 7000 100 >/tmp/ipr-ksrv.log 2>&1 &
ksrv=$!
sleep 1
check "UDP: 50 datagrams from a Sluice stack on ib0 echoed by the kernel on ib1" \
	quiet timeout 60 sluice run --stack $ST --ifname ib0 -- kpeer udp-echo "$K" 7000 50
check "TCP: 2 connections x 300000 bytes from the Sluice stack echoed by the kernel" \
	quiet timeout 60 sluice run --stack $ST --ifname ib0 -- kpeer tcp-echo "$K" 7000 300000 2
# The stack's MTU is the interface's (as the kernel's IP MTU on an
# ipoib netdev is dev->mtu: RFC 4391's IB MTU less the 4-byte IPoIB
# header), and packets of that size cross whole both ways: a UDP
# datagram of 2044 - 28 bytes with DF, which neither side fragments.
smtu=$(sluice dump $ST 2>/dev/null | sed -n 's/^stack .* mtu \([0-9]*\).*/\1/p' | head -n 1)
check "the Sluice stack's MTU is ib0's (stack ${smtu:-?}, ib0 $mtu0)" test "$smtu" = "$mtu0"
big=$((mtu0 - 28))
check "UDP: $big-byte datagrams with DF (IP $mtu0) from the kernel on ib0 echoed by the kernel on ib1 (the baseline)" \
	quiet timeout 60 kpeer udp-df "$K" 7000 $big 5
check "UDP: $big-byte datagrams with DF (IP $mtu0) from the Sluice stack echoed by the kernel" \
	quiet timeout 60 sluice run --stack $ST --ifname ib0 -- kpeer udp-df "$K" 7000 $big 5
# One byte more with DF: EMSGSIZE from the stack as from the kernel.
too_big() { "$@" 2>/dev/null | grep -q 'Message too long'; }
check "... one byte more (IP $((mtu0 + 1))) with DF is refused (EMSGSIZE) by the kernel" \
	too_big timeout 30 kpeer udp-df "$K" 7000 $((big + 1)) 1
check "... and by the Sluice stack" \
	too_big timeout 30 sluice run --stack $ST --ifname ib0 -- kpeer udp-df "$K" 7000 $((big + 1)) 1
timeout 100 sluice run --stack $ST --ifname ib0 -- kpeer serve 7001 60 >/tmp/ipr-ssrv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 100 ] && ! sluice fds $ST 2>/dev/null | grep -q kpeer; do sleep 0.2; i=$((i + 1)); done
check "UDP: the kernel on ib1 sends 50 datagrams to the Sluice stack, echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer udp-echo "$S" 7001 50
check "TCP: the kernel connects to the Sluice stack, 2 x 300000 bytes echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer tcp-echo "$S" 7001 300000 2
check "UDP: the kernel on ib1 sends $big-byte datagrams with DF (IP $mtu0) to the Sluice stack, echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer udp-df "$S" 7001 $big 5
sluice dump $ST 2>/dev/null | grep -E '^(stack|kring)' | sed 's/^/# dump: /'
kill $ssrv 2>/dev/null
wait $ssrv 2>/dev/null
ssrv=

# The hardware's Q_Key rule: port 2's group given another Q_Key and ib1
# made to join again (a client reregister), ipoib on ib1 takes it into
# its QP, and ib0 (still the old one) no longer hears ib1.
q0=$(field 1 drop_qkey)
echo "qkey 2 0x1234" >$D/ctl
echo "client_rereg 2" >$D/ctl
check "after a client reregister ib1's QP has the group's new Q_Key" \
	until_t 100 sh -c "grep -q 'udqp port 2 .* qkey 0x00001234' $D/state"
check "... and ib0's peer no longer answers ping (its datagrams have the wrong Q_Key)" \
	sh -c "! $IP netns exec $NS ping -c 2 -W 2 $S >/dev/null 2>&1"
check "... fakeib dropped them on the Q_Key ($q0 -> $(field 1 drop_qkey))" \
	test "$(field 1 drop_qkey)" -gt "$q0"
echo "qkey 2 0x0b1b" >$D/ctl
echo "client_rereg 2" >$D/ctl
check "the old Q_Key back: ping works again" \
	until_t 100 sh -c "$IP netns exec $NS ping -c 1 -W 1 $S >/dev/null 2>&1"

# The P_Key rule: port 2's table entry 0 made 0x8002 (another partition)
# and a P_Key change event: ipoib on ib1 takes the new P_Key (its heavy
# flush: its QP again through RESET to RTS, the new partition's broadcast
# group joined), and ib0's datagrams (0xffff) no longer match ib1's QP.
p0=$(field 2 drop_pkey)
echo "pkey 2 0 0x8002" >$D/ctl
echo "pkey_change 2" >$D/ctl
check "after a P_Key change ib1's QP is in RTS with P_Key 0x8002" \
	until_t 150 sh -c "grep -q 'udqp port 2 .* state rts .* pkey 0x8002' $D/state"
check "... and ib0 no longer reaches ib1 (ping fails)" \
	sh -c "! ping -c 2 -W 2 $K >/dev/null 2>&1"
check "... fakeib dropped ib0's datagrams on the P_Key ($p0 -> $(field 2 drop_pkey))" \
	test "$(field 2 drop_pkey)" -gt "$p0"
echo "pkey 2 0 0xffff" >$D/ctl
echo "pkey_change 2" >$D/ctl
check "P_Key 0xffff back: ping works again" \
	until_t 150 sh -c "ping -c 1 -W 1 $K >/dev/null 2>&1"

# The Q_Key IFINFO reports while ipoib joins again (issue 14 item 8 and
# the stale window): ib0's group moved to Q_Key 0x2222, then to 0x3333
# with the SA answering 3 s late.  Until the answer ipoib's QP keeps
# 0x2222 (ipoib_mcast_join_finish() changes it only from an answer);
# each IFINFO sample must say what the QP had just before or just after.
echo "qkey 1 0x2222" >$D/ctl
echo "client_rereg 1" >$D/ctl
until_t 100 sh -c "grep -q 'udqp port 1 .* qkey 0x00002222' $D/state"
until_t 50 sh -c "sluice doctor --interface ib0 --json | grep -q '\"qkey\": *8738'"
echo "sa_delay 1 3000" >$D/ctl
echo "qkey 1 0x3333" >$D/ctl
echo "client_rereg 1" >$D/ctl
samples=0 bad=0 old=0 new=0
i=0
# Until the rejoin is seen through (the SA answers after 3 s), 30 s and
# 400 samples at most: 40 samples alone could all fall before it.
t_end=$(($(date +%s) + 30))
while [ $i -lt 400 ] && [ "$(date +%s)" -lt $t_end ]; do
	a=$(qpf 1 qkey)
	q=$(sluice doctor --interface ib0 --json 2>/dev/null | sed -n 's/.*"qkey": *\([0-9]*\).*/\1/p')
	b=$(qpf 1 qkey)
	q=$(printf '0x%08x' "${q:-0}")
	samples=$((samples + 1))
	[ "$q" = 0x00002222 ] && old=$((old + 1))
	[ "$q" = 0x00003333 ] && new=$((new + 1))
	if [ "$q" != "$a" ] && [ "$q" != "$b" ]; then
		bad=$((bad + 1))
		echo "# sample $samples: IFINFO $q, ipoib's QP $a then $b"
	fi
	[ "$a" = 0x00003333 ] && [ "$new" -ge 2 ] && break
	i=$((i + 1))
done
echo "# rejoin: $samples IFINFO samples, $old said the old Q_Key, $new the new one, $bad neither of the QP's"
check "during a rejoin IFINFO's Q_Key is always ipoib's QP's ($bad of $samples samples not)" \
	test "$bad" = 0 -a "$old" -ge 1 -a "$new" -ge 1
echo "sa_delay 1 0" >$D/ctl
echo "qkey 1 0x0b1b" >$D/ctl
echo "client_rereg 1" >$D/ctl
check "Q_Key 0x0b1b back on ib0: ping works again" \
	until_t 150 sh -c "ping -c 1 -W 1 $K >/dev/null 2>&1"

# Down and up: ipoib's stop waits for every posted receive to complete
# (flushed when its QP goes to the error state).
t0=$(cut -d' ' -f1 /proc/uptime)
$IP link set ib0 down
$IP link set ib0 up
t1=$(cut -d' ' -f1 /proc/uptime)
echo "# ib0 down and up: $t0 -> $t1 s"
check "ib0 down and up: no receives left waiting (no 'timing out' from ipoib)" \
	sh -c "! dmesg | grep -q 'timing out'"
check "... and ping works after" until_t 100 sh -c "ping -c 1 -W 1 $K >/dev/null 2>&1"

cleanup
trap - EXIT
check "ib_ipoib, ib_cm and fakeib unload" sh -c "! lsmod | grep -qE '^(ib_ipoib|fakeib) '"
echo "1..$n"
exit $fail
