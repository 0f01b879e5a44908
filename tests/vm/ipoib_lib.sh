#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: what ipoib_real.sh and ipoib_modes.sh share, sourced by
# both after they set IP, NS and SUITE: fakeib's debugfs and the kernel's
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
