#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: what ipoib_real.sh, ipoib_modes.sh, ipoib_enh.sh and ipoib6.sh
# share, sourced by each after it sets IP, NS and SUITE: fakeib's debugfs and the kernel's
# modules, TAP, the peer namespace, the cleanup (the servers $ksrv and
# $ssrv, the namespace, ib_ipoib, ib_cm and fakeib), the modules loaded
# (sluice) and unloaded (a fakeib left loaded), and the helpers both use.
D=/sys/kernel/debug/fakeib
KM=/lib/modules/kmod
. /opt/sluice/bin/tap.sh

in_ns() { $IP netns exec "$NS" "$@"; }
cleanup() {
	for p in $ksrv $ssrv; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP netns del "$NS" 2>/dev/null
	rmmod ib_ipoib 2>/dev/null
	rmmod ib_cm 2>/dev/null
	rmmod fakeib 2>/dev/null
}
trap cleanup EXIT

[ -f $KM/ib_ipoib.ko ] || skip_all "no ib_ipoib.ko for this kernel"
lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
lsmod | grep -q '^fakeib ' && rmmod fakeib

# carrier IF, ns_carrier IF: IF (in the peer namespace) has carrier.
carrier() { [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ]; }
ns_carrier() { [ "$(in_ns cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ]; }
# until TENTHS COMMAND...: true once COMMAND is, polling every 0.1 s.
until_t() {
	t=$1
	shift
	i=0
	while [ $i -lt "$t" ]; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	"$@"
}
# quiet COMMAND...: its output as TAP comments (kpeer prints "ok ..."),
# its exit status kept.
quiet() {
	out=$("$@" 2>&1)
	rc=$?
	[ -n "$out" ] && echo "$out" | sed 's/^/# /'
	return $rc
}
# ipoib_load_8001: P_Key 0x8001 in both ports' tables (index 1), so ipoib can
# run its children there (0x8002 in neither); the events refresh
# ib_core's cache.  Then the kernel's ib_cm and ib_ipoib, which make ib0
# and ib1 on fakeib's two ports.
ipoib_load_8001() {
	echo "pkey 1 1 0x8001" >$D/ctl
	echo "pkey 2 1 0x8001" >$D/ctl
	echo "pkey_change 1" >$D/ctl
	echo "pkey_change 2" >$D/ctl
	insmod $KM/ib_cm.ko 2>/dev/null
	check "the kernel's ib_ipoib loads" insmod $KM/ib_ipoib.ko
	check "ib_ipoib made ib0 and ib1" until_t 50 sh -c "[ -e /sys/class/net/ib0 ] && [ -e /sys/class/net/ib1 ]"
}
# ipoib_pair ADDR0 ADDR1 [WHY]: ib1 into the peer namespace, ib0 at
# ADDR0/24 here and ib1 at ADDR1/24 there, both up and with carrier
# (WHY: what ib0's carrier shows).
ipoib_pair() {
	mkdir -p /run/netns
	$IP netns add "$NS"
	check "ib1 moves into netns $NS" $IP link set ib1 netns "$NS"
	$IP addr add "$1/24" dev ib0
	$IP link set ib0 up
	in_ns $IP link set lo up
	in_ns $IP addr add "$2/24" dev ib1
	in_ns $IP link set ib1 up
	check "ib0 has carrier${3:+ ($3)}" until_t 100 carrier ib0
	check "ib1 has carrier" until_t 100 ns_carrier ib1
}
