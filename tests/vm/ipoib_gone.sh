#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: the kernel's own ipoib interfaces go while Sluice stacks
# are open on them (issue 14 item 3, "device removal while stacks are
# open"): a P_Key child deleted (ip link del ib0.8001), then the parent
# with the driver (rmmod ib_ipoib), then the HCA (rmmod fakeib).  On each
# interface a stack with a TCP listener and a UDP socket (kring_peer
# wait-gone) and a second process of it holding a multicast group the
# module joined on the interface (kring_peer mcast-recv), a kernel socket
# in the same group beside it.  The stack's sockets must fail with
# ENETDOWN and its programs end, the removal must not wait on Sluice, the
# stack must go with its programs, and the modules must unload.
# Prints TAP.
#
#   VM root namespace                          netns ipg-peer
#   +--------------------------------------+   +----------------------------+
#   | ib0 (port 1)  10.79.9.1/24           |   | ib1 (port 2)  10.79.9.2/24 |
#   | ib0.8001      10.79.10.1/24          |IB | ib1.8001     10.79.10.2/24 |
#   |   stacks (kring) on each, a kernel   +===+                            |
#   |   group member beside each           |   |                            |
#   +--------------------------------------+   +----------------------------+
#
# Every program runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=ipg-peer
SUITE="the real ib_ipoib's interfaces removed under open stacks"
DBG=/sys/kernel/debug/sluice
. /opt/sluice/bin/ipoib_lib.sh

check "fakeib loads with ipoib=1" insmod /lib/modules/fakeib.ko ipoib=1
ipoib_load_8001
ipoib_pair 10.79.9.1 10.79.9.2
check "ipoib makes the P_Key children ib0.8001 and ib1.8001 in $NS" \
	sh -c "$IP link add link ib0 name ib0.8001 type ipoib pkey 0x8001 &&
		$IP netns exec $NS $IP link add link ib1 name ib1.8001 type ipoib pkey 0x8001"
$IP addr add 10.79.10.1/24 dev ib0.8001
$IP link set ib0.8001 up
in_ns $IP addr add 10.79.10.2/24 dev ib1.8001
in_ns $IP link set ib1.8001 up
check "ib0.8001 has carrier" until_t 100 carrier ib0.8001

# gone_round STACK DEV ADDR GROUP WHAT COMMAND...: a stack on DEV with
# a listener and a UDP socket, a second process of it in GROUP and a
# kernel socket in GROUP beside it; COMMAND (WHAT) takes DEV away.
gone_round() {
	st=$1 dev=$2 a=$3 grp=$4 what=$5
	shift 5
	o=/tmp/ipg-$st
	timeout 90 kring_peer wait-gone "$st" "$dev" 60 >$o.wg 2>&1 &
	wg=$!
	if ! wait_ready $o.wg 150; then
		tap fail "a stack $st on $dev comes up"
		sed 's/^/# /' $o.wg
		kill $wg 2>/dev/null
		return
	fi
	timeout 60 kring_peer mcast-recv "$st" "$grp" 5009 1000 20 >$o.mc 2>&1 &
	mc=$!
	timeout 60 kpeer mcast-recv "$grp" 5010 1000 20 "$a" >$o.kmc 2>&1 &
	kmc=$!
	wait_ready $o.mc 150
	wait_ready $o.kmc 150
	check "$dev: a second process of stack $st joined $grp through the module, the kernel's socket too" \
		sh -c "$IP maddr show dev $dev | grep -q $grp && grep -qx ready $o.mc && grep -qx ready $o.kmc"
	t0=$(cut -d' ' -f1 /proc/uptime)
	check "$what with the stack open" timeout 60 "$@"
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "# $what took $t0 -> $t1 s"
	check "... $dev is gone" sh -c "[ ! -e /sys/class/net/$dev ]"
	i=0
	while [ $i -lt 300 ] && kill -0 $wg 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
	check "... the stack's program ends by itself" sh -c "! kill -0 $wg 2>/dev/null"
	sed 's/^/# wait-gone: /' $o.wg
	check "... its accept fails with ENETDOWN" grep -qx 'accept Network is down' $o.wg
	check "... its recv fails with ENETDOWN" grep -qx 'recv Network is down' $o.wg
	wait $wg 2>/dev/null
	wait $mc
	mrc=$?
	wait $kmc
	krc=$?
	sed 's/^/# sluice member: /' $o.mc
	sed 's/^/# kernel member: /' $o.kmc
	check "... the stack's group member ends at its time (exit $mrc), as the kernel's (exit $krc)" \
		sh -c "[ $mrc = 0 ] && [ $krc = 0 ] && grep -q '^got ' $o.mc"
	i=0
	while [ $i -lt 100 ] && [ -d /sys/class/misc/sluice/stacks/$st ]; do sleep 0.2; i=$((i + 1)); done
	check "... the stack goes with its programs" sh -c "[ ! -d /sys/class/misc/sluice/stacks/$st ]"
}

gone_round gch ib0.8001 10.79.10.1 239.7.9.1 "ip link del ib0.8001" $IP link del ib0.8001
check "fakeib: the child's UD QP went with it (one UD QP left on port 1)" \
	test "$(grep -c '^  udqp port 1 ' $D/state)" = 1
gone_round gpa ib0 10.79.9.1 239.7.9.2 "rmmod ib_ipoib" rmmod ib_ipoib
check "rmmod fakeib with the module's ib_client still registered" timeout 60 rmmod fakeib
check "the module forgot the device (debugfs ib) and its paths" \
	sh -c "! grep -q 'ibdev fakeib0' $DBG/ib && grep -q 'paths 0 ' $DBG/ib_paths"
check "no stack left in the module ($(grep '^stacks' $DBG/info))" grep -qx 'stacks 0' $DBG/info

cleanup
trap - EXIT
check "ib_ipoib, ib_cm and fakeib unloaded" sh -c "! lsmod | grep -qE '^(ib_ipoib|fakeib) '"
echo "1..$n"
exit $fail
