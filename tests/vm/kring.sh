#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: a Sluice stack on a veth device through the module's
# rings (kring), against the Linux kernel's own stack in a network
# namespace this script creates and deletes.  Prints TAP.
#
#   VM root namespace                            netns slk-peer
#   +-------------------------------------+      +------------------------+
#   | kernel: 10.77.0.1/24 on slk0        |      |                        |
#   |   answers ARP and ping, owns every  | veth | slk1 10.77.0.2/24      |
#   |   port Sluice has not filtered slk0 +======+ Linux kernel stack:    |
#   | Sluice stack "kr" on slk0 (kring),  |      |   kpeer (clients and   |
#   |   sharing 10.77.0.1: kring_peer     |      |   echo server), ping   |
#   |   echo server on port 7, clients    |      |                        |
#   +-------------------------------------+      +------------------------+
#     netem (3% loss) on both veth ends for the loss-recovery checks
#
#   devgone: a second stack "kg" on veth slkg0 (peer slkg1), whose device
#   is deleted under it.
#
# Every program runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
TC=/usr/sbin/tc
NS=slk-peer
S=10.77.0.1
K=10.77.0.2
SUITE="kring interop"
. /opt/sluice/bin/tap.sh
in_ns() { $IP netns exec "$NS" "$@"; }
cleanup() {
	for p in $srv $ksrv $klis $gone $hand $mc; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP netns del "$NS" 2>/dev/null
	$IP link del slk0 2>/dev/null
	$IP link del slkg0 2>/dev/null
}
trap cleanup EXIT

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
# KRING 0x2, FILTER 0x4, IFINFO 0x8
[ $(( 0x${feat:-0} & 0xe )) = $((0xe)) ] || skip_all "module features 0x$feat lack kring, filters or ifinfo"
[ -x $IP ] || skip_all "no iproute2 at $IP"

mkdir -p /run/netns
$IP netns add "$NS"
$IP link add slk0 type veth peer name slk1
$IP link set slk1 netns "$NS"
$IP addr add "$S/24" dev slk0
$IP link set slk0 up
in_ns $IP link set lo up
in_ns $IP addr add "$K/24" dev slk1
in_ns $IP link set slk1 up
check "the peer namespace pings the device address (kernel, before Sluice)" \
	in_ns ping -c 1 -W 5 "$S"

out=/tmp/kring-serve.out
kring_peer serve kr slk0 400 >$out 2>&1 &
srv=$!
check "Sluice stack on slk0 through kring: echo server up" wait_ready $out
[ -s $out ] && grep -v '^ready$' $out | sed 's/^/# serve: /'

# Kernel clients, Sluice server.
expect "ok 1 x 4194304" "kernel client -> Sluice server: 4 MiB echoed byte for byte" \
	in_ns timeout 240 kpeer tcp-echo "$S" 7 4194304
expect "ok 20 x 65536" "20 concurrent kernel connections -> Sluice: 64 KiB each echoed" \
	in_ns timeout 240 kpeer tcp-echo "$S" 7 65536 20
expect "50/50 echoed" "UDP kernel -> Sluice: 50 datagrams echoed" \
	in_ns timeout 60 kpeer udp-echo "$S" 7 50

# sluice tcpdump on a stack whose region is the module's memory, its
# packets on the rings: 10 datagrams in and their 10 echoes out.
cap=/tmp/kring-cap.out
timeout 120 sluice tcpdump kr -c 20 udp port 7 >$cap 2>$cap.err &
capp=$!
i=0
while [ $i -lt 100 ] && ! grep -q capturing $cap.err; do sleep 0.1; i=$((i + 1)); done
expect "10/10 echoed" "UDP kernel -> Sluice: 10 more datagrams echoed while captured" \
	in_ns timeout 60 kpeer udp-echo "$S" 7 10
wait $capp
n_in=$(grep -c "slk0 In  IP $K\.[0-9]* > $S\.7: UDP" $cap)
n_out=$(grep -c "slk0 Out IP $S\.7 > $K\.[0-9]*: UDP" $cap)
check "sluice tcpdump on the rings: 10 datagrams in, 10 echoes out ($n_in, $n_out)" \
	[ "$n_in" = 10 -a "$n_out" = 10 ]
[ "$n_in" = 10 ] || sed 's/^/# tcpdump: /' $cap $cap.err
check "... and its ring is gone from /dev/shm" sh -c '! ls /dev/shm/sluicecap-* 2>/dev/null'

# Sluice clients (other processes of the same stack), kernel server.
kout=/tmp/kring-kserve.out
in_ns kpeer serve 7 300 >$kout 2>&1 &
ksrv=$!
check "kernel echo server up in the peer namespace" wait_ready $kout
expect "ok 4194304 bytes, eof 0" "Sluice client -> kernel server: 4 MiB echoed byte for byte" \
	timeout 240 kring_peer tcp-client kr "$K" 7 4194304
expect "50/50 echoed" "UDP Sluice -> kernel: 50 datagrams echoed" \
	timeout 60 kring_peer udp-client kr "$K" 7 50
expect ECONNREFUSED "Sluice connect to a closed kernel port: ECONNREFUSED" \
	timeout 60 kring_peer connect kr "$K" 9

# Ports: the kernel and Sluice never share one.
expect EADDRINUSE "the kernel cannot bind TCP port 7 (a Sluice listener holds it)" \
	kpeer bind tcp 7
expect EADDRINUSE "the kernel cannot bind UDP port 7 (a Sluice socket holds it)" \
	kpeer bind udp 7
lout=/tmp/kring-klisten.out
kpeer listen 8080 200 >$lout 2>&1 &
klis=$!
wait_ready $lout
expect EADDRINUSE "Sluice cannot bind TCP port 8080 (a kernel listener holds it)" \
	timeout 30 kring_peer bind kr tcp 8080
expect 0 "Sluice binds a free port (8081)" timeout 30 kring_peer bind kr tcp 8081
expect 0 "... and the kernel gets it back once that socket is closed" kpeer bind tcp 8081

# A listener closed under its connection: the port's filter passes to the
# connection (else its packets would go to the kernel, which resets it).
hout=/tmp/kring-handoff.out
timeout 120 kring_peer handoff kr 9000 100 >$hout 2>&1 &
hand=$!
wait_ready $hout
expect "ok 1 x 262144" "listener closed after accept: its connection still echoes 256 KiB" \
	in_ns timeout 120 kpeer tcp-echo "$S" 9000 262144
wait $hand
hand=
check "... and its own side saw all of it" grep -qx "ok 262144" $hout
expect 0 "the connection closed, the kernel can bind its port again" kpeer bind tcp 9000

check "ping of the shared address is still answered (by the kernel)" \
	in_ns ping -c 3 -W 5 "$S"

# Multicast: a Sluice UDP socket joins a group (IP_ADD_MEMBERSHIP: the
# module makes slk0 a member), a kernel sender in the peer namespace sends
# to it, and closing the socket leaves the group.
mout=/tmp/kring-mcast.out
timeout 60 kring_peer mcast-recv kr 239.7.7.7 5007 20 30 >$mout 2>&1 &
mc=$!
check "a Sluice socket joined 239.7.7.7 (IP_ADD_MEMBERSHIP)" wait_ready $mout
check "... and slk0 is a member of the group" sh -c "$IP maddr show dev slk0 | grep -q 239.7.7.7"
expect "sent 20" "a kernel sender in the peer namespace sends 20 datagrams to the group" \
	in_ns timeout 30 kpeer mcast-send 239.7.7.7 5007 20 "$K"
wait $mc
mc=
check "the Sluice socket got all 20 through the rings" grep -qx "got 20" $mout
check "closing the socket left the group" sh -c "! $IP maddr show dev slk0 | grep -q 239.7.7.7"

# Multicast the other way: a kernel member in the peer namespace, a Sluice
# sender with IP_MULTICAST_TTL 3 (the group is the next hop; the kernel's
# neighbour code maps it to 01:00:5e:07:07:08).
mout=/tmp/kring-mcast-k.out
in_ns timeout 60 kpeer mcast-recv 239.7.7.8 5008 20 30 "$K" >$mout 2>&1 &
mc=$!
check "a kernel socket in the peer namespace joined 239.7.7.8" wait_ready $mout
expect "sent 20" "a Sluice socket sends 20 datagrams to the group, TTL 3" \
	timeout 30 kring_peer mcast-send kr 239.7.7.8 5008 20 3
wait $mc
mc=
check "the kernel member got all 20, with TTL 3" grep -qx "got 20 ttl 3" $mout

# Loss recovery: netem on both ends of the veth.
if in_ns $TC qdisc add dev slk1 root netem loss 3% 2>/dev/null &&
   $TC qdisc add dev slk0 root netem loss 3% 2>/dev/null; then
	expect "ok 1 x 1048576" "3% loss each way: kernel client -> Sluice, 1 MiB intact" \
		in_ns timeout 240 kpeer tcp-echo "$S" 7 1048576
	expect "ok 1048576 bytes, eof 0" "3% loss each way: Sluice client -> kernel, 1 MiB intact" \
		timeout 240 kring_peer tcp-client kr "$K" 7 1048576
	in_ns $TC qdisc del dev slk1 root
	$TC qdisc del dev slk0 root
	rexmt=$(sluice dump kr | sed -n 's/^  tcp_retransmit *\([0-9]*\).*/\1/p')
	check "Sluice retransmitted under loss (tcp_retransmit ${rexmt:-0})" [ "${rexmt:-0}" -gt 0 ]
else
	tap ok "loss recovery # SKIP no netem (sch_netem or tc missing)"
fi

# A new MTU on the device: new connections follow it.
$IP link set slk0 mtu 1280
in_ns $IP link set slk1 mtu 1280
expect "ok 1 x 262144" "MTU 1280 on the veth: kernel client -> Sluice, 256 KiB echoed" \
	in_ns timeout 120 kpeer tcp-echo "$S" 7 262144
mtu=$(sluice dump kr | sed -n 's/^stack kr: .* mtu \([0-9]*\), .*/\1/p')
check "the stack follows the device's MTU (mtu $mtu)" [ "$mtu" = 1280 ]

# The rings and filters afterwards.  Every connection has finished: the
# only buffers out of the pool are the ones on the fill ring (a few
# seconds' grace for the last ACKs to be taken in).
dump=/tmp/kring-dump.out
used=x onfill=y i=0
while [ $i -lt 50 ]; do
	sluice dump kr >$dump 2>&1
	used=$(sed -n 's/.*; buffers \([0-9]*\)\/.*/\1/p' $dump)
	onfill=$(sed -n 's/.* buffers on it \([0-9]*\)$/\1/p' $dump)
	[ "$used" = "$onfill" ] && break
	sleep 0.1
	i=$((i + 1))
done
sed -n '/^counters:/,/^sockets:/p' $dump | sed 's/^/# /'
check "no buffer leaked: the $used in use are the $onfill on the fill ring" [ "$used" = "$onfill" ]
kctr() { sed -n "s/^  $1 *\([0-9]*\) .*/\1/p" $dump | head -n 1; }
for c in bad_index bad_buf bad_desc rx_drop_size; do
	v=$(kctr $c)
	if [ "$v" = 0 ]; then tap ok "kring counter $c is 0"; else tap fail "kring counter $c is 0 (it is '${v}')"; fi
done
if grep -q '^  link_tx_err ' $dump; then
	tap fail "the link refused no packet the stack sent (link_tx_err)"
else
	tap ok "the link refused no packet the stack sent (link_tx_err)"
fi
if grep -q '^  kring_rx_bad ' $dump; then
	tap fail "the stack refused no rx descriptor (kring_rx_bad)"
else
	tap ok "the stack refused no rx descriptor (kring_rx_bad)"
fi
# netem's losses happen in the qdisc, below what these count.
echo "# drops: rx ring full $(kctr rx_drop_ring), no fill buffer $(kctr rx_drop_fill)," \
	"device refused $(kctr tx_drop)"
k=$(kctr kicks) v=$(kctr tx_packets)
check "tx kicks are batched ($k kicks for $v packets)" [ $(( ${k:-0} * 2 )) -lt "${v:-0}" -a "${k:-0}" -gt 0 ]
v=$(kctr rx_packets)
check "the module steered packets to the rings (rx_packets $v)" [ "${v:-0}" -gt 1000 ]
# The same counters through sluice metrics, per link, and dump --json.
m=$(sluice metrics 2>/dev/null |
	sed -n 's/^sluice_kring_rx_packets_total{stack="kr",link="kring"} \([0-9]*\)$/\1/p')
check "sluice metrics has the ring's counters (sluice_kring_rx_packets_total ${m:-none})" \
	[ "${m:-0}" -ge "${v:-1}" ]
j=$(sluice dump --json kr 2>/dev/null | grep -o '"rx_packets":[0-9]*' | cut -d: -f2)
check "and dump --json (kring.counters.rx_packets ${j:-none})" [ "${j:-0}" -ge "${v:-1}" ]
v=$(grep -c 'module filter [0-9]*: udp' $dump)
check "UDP filters: only the server's port 7 is left once the UDP client closed ($v)" [ "$v" = 1 ]

kill $srv 2>/dev/null
wait $srv 2>/dev/null
srv=
# Connections still finishing (TIME-WAIT: 60 s) keep the stack, and its
# ports, in its helper process until they are done (lib/api/helper.c).
hp=$(sluice dump kr 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
echo "# helper: ${hp:-none}"
alive() { [ -n "$1" ] && [ -r /proc/$1/stat ] && ! grep -q ') Z' /proc/$1/stat; }
# Waiting out TIME-WAIT (60 s) is the library's part, the same on every
# kernel: it is done on the newest only; on the others the helper is
# ended, and the stack must go with it all the same.
how="finished and went by itself"
case "$(uname -r)" in
6.1.*)
	how="went when ended (TIME-WAIT waited out on the newest kernel only)"
	alive "$hp" && kill "$hp" 2>/dev/null ;;
esac
i=0
while [ $i -lt 450 ] && alive "$hp"; do sleep 0.2; i=$((i + 1)); done
check "the stack's helper (${hp:-none}) $how" \
	sh -c "! { [ -n '$hp' ] && [ -r /proc/$hp/stat ] && ! grep -q ') Z' /proc/$hp/stat; }"
i=0
while [ $i -lt 50 ] && [ -d /sys/class/misc/sluice/stacks/kr ]; do sleep 0.2; i=$((i + 1)); done
expect 0 "the stack gone, the kernel can bind TCP port 7 again" kpeer bind tcp 7
expect 0 "and UDP port 7" kpeer bind udp 7

# The device goes away under a stack.
$IP link add slkg0 type veth peer name slkg1
$IP addr add 10.78.0.1/24 dev slkg0
$IP link set slkg0 up
$IP link set slkg1 up
gout=/tmp/kring-gone.out
kring_peer wait-gone kg slkg0 30 >$gout 2>&1 &
gone=$!
if wait_ready $gout; then
	$IP link del slkg0
	i=0
	while [ $i -lt 300 ] && kill -0 $gone 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
	check "device deleted: the Sluice process ends by itself" sh -c "! kill -0 $gone 2>/dev/null"
	sed 's/^/# wait-gone: /' $gout
	check "device deleted: accept fails with ENETDOWN" grep -qx 'accept Network is down' $gout
	check "device deleted: recv fails with ENETDOWN" grep -qx 'recv Network is down' $gout
else
	tap fail "a stack on slkg0 comes up"
	sed 's/^/# /' $gout
fi
wait $gone 2>/dev/null
gone=

cleanup
trap - EXIT
i=0
while [ $i -lt 50 ] && ! rmmod sluice 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
check "module unloads: no stack, ring, filter or mapping left" sh -c "! lsmod | grep -q '^sluice '"
echo "1..$n"
exit $fail
