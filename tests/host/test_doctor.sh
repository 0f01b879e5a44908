#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# sluice doctor --interface IF (issue 14 item 4) on this host, which has
# no InfiniBand hardware: it must say so plainly, and say what Sluice
# does on loopback, on a veth pair (a private network namespace), and on
# the interfaces of a Soft-RoCE and an IPoIB setup described by a sysfs
# tree of our own (SLUICE_SYSFS): the host's kernel has neither.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

has() { grep -qF -- "$1" <<<"$out"; }

"$sluice" doctor >/dev/null 2>&1
check "doctor without --interface is a usage error (exit 2)" test $? = 2
"$sluice" doctor --interface >/dev/null 2>&1
check "--interface without a name is a usage error" test $? = 2
"$sluice" doctor --interface ../etc >/dev/null 2>&1
check "a name with a slash is refused" test $? = 2
"$sluice" help | grep -q '^  doctor \[--json\] --interface IF'
check "help lists doctor" test $? = 0

out=$("$sluice" doctor --interface nosuch0 2>&1)
rc=$?
check "an interface that does not exist: exit 1" test $rc = 1
check "... and it says there is no such interface" has "there is no network interface nosuch0"

out=$("$sluice" doctor --interface lo 2>&1)
rc=$?
check "lo: exit 0" test $rc = 0
check "lo: named loopback" has "kind: loopback (link type 772)"
check "lo: nothing to set up, no module needed" has "nothing to set up: each stack keeps its loopback traffic to itself"
if [ ! -e /sys/class/infiniband ] || [ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
	check "no RDMA hardware here: said plainly" has "no RDMA device on this machine"
else
	skip "no RDMA hardware here: said plainly" "this host has RDMA devices"
fi
if [ -e /dev/sluice ]; then
	skip "without the module: said, and what runs instead" "/dev/sluice exists here"
else
	check "without the module: said" has "module: not loaded (/dev/sluice is absent)"
fi

# A veth pair in a network namespace of its own.
if unshare -n true 2>/dev/null; then
	out=$(unshare -n sh -c "ip link add dv0 type veth peer name dv1 && ip link set dv0 up &&
		'$sluice' doctor --interface dv0" 2>&1)
	rc=$?
	check "veth: exit 0" test $rc = 0
	check "veth: Ethernet, driver veth" has "kind: Ethernet (link type 1), MTU 1500"
	check "veth: the driver named" has "driver veth"
	if [ -e /dev/sluice ]; then
		check "veth: the kring path" has "the kring path: the module steers"
	else
		check "veth: what runs without the module" has "without the module, no stack runs on dv0"
	fi
else
	skip "veth: checks" "cannot make a network namespace"
fi

# Soft-RoCE on a veth, and an IPoIB interface, as sysfs shows them.
fake=$tmp/sys
mk() { mkdir -p "$(dirname "$fake/$1")" && printf '%s\n' "$2" >"$fake/$1"; }
mk class/net/rv0/type 1
mk class/net/rv0/mtu 1500
mk class/net/rv0/operstate up
mk class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0 rv0
mk class/infiniband/rxe0/ports/1/state "4: ACTIVE"
mk class/infiniband/rxe0/ports/1/link_layer Ethernet
mk class/infiniband/rxe0/ports/1/rate "10 Gb/sec (1X QDR)"
mk class/net/ib0/type 32
mk class/net/ib0/mtu 2044
mk class/net/ib0/operstate up
mk class/net/ib0/mode connected
mk class/net/ib0/pkey 0xffff
mk class/net/ib0/dev_port 0
mkdir -p "$fake/class/net/ib0/device/infiniband/mlx5_0"
mk class/infiniband/mlx5_0/ports/1/state "4: ACTIVE"
mk class/infiniband/mlx5_0/ports/1/link_layer InfiniBand
mk class/infiniband/mlx5_0/ports/1/rate "100 Gb/sec (4X EDR)"
mk module/ib_ipoib/parameters/ipoib_enhanced 1

out=$(SLUICE_SYSFS=$fake "$sluice" doctor --interface rv0 2>&1)
rc=$?
check "rxe: exit 0" test $rc = 0
check "rxe: the Soft-RoCE device on the interface, port, link layer, state" \
	has "RDMA device: rxe0 port 1 (Soft-RoCE: rdma_rxe, verbs in software over Ethernet): link layer Ethernet, state 4: ACTIVE"
check "rxe: its limits unknown when rdma-core cannot open it, and why" \
	has "device limits: unknown (rdma-core cannot open rxe0"
out=$(SLUICE_SYSFS=$fake "$sluice" doctor --interface rxe0 2>&1)
rc=$?
check "rxe0 named itself: exit 1" test $rc = 1
check "rxe0 named itself: it is an RDMA device on rv0, not an interface" \
	has "rxe0 is an RDMA device, not a network interface: it sits on rv0"

out=$(SLUICE_SYSFS=$fake "$sluice" doctor --interface ib0 2>&1)
rc=$?
check "ipoib: exit 0" test $rc = 0
check "ipoib: IP over InfiniBand" has "kind: IP over InfiniBand (link type 32), MTU 2044"
check "ipoib: its HCA and port" has "RDMA device: mlx5_0 port 1: link layer InfiniBand, state 4: ACTIVE"
check "ipoib: mode, P_Key, ipoib_enhanced" \
	has "IPoIB mode: connected (enhanced IPoIB is datagram only), P_Key 0xffff, ipoib_enhanced=1"
check "ipoib: mlx5's flow steering mode unknown without a bus device, and why" \
	has "flow steering mode (mlx5_0): unknown: no bus device for mlx5_0 in sysfs"
check "rxe: no flow steering mode (mlx5's alone)" \
	test -z "$(SLUICE_SYSFS=$fake "$sluice" doctor --interface rv0 | grep 'flow steering mode')"

# The HCA as a PCI device: its devlink handle, and the flow steering mode
# devlink gives (here: none, there is no such device; this host's kernel
# may have no devlink at all).  The VM suite verbs asks a real devlink.
mkdir -p "$fake/devices/pci0000:00/0000:81:00.0" "$fake/bus/pci"
ln -s ../../../devices/pci0000:00/0000:81:00.0 "$fake/class/infiniband/mlx5_0/device"
ln -s ../../../bus/pci "$fake/devices/pci0000:00/0000:81:00.0/subsystem"
out=$(SLUICE_SYSFS=$fake "$sluice" doctor --interface ib0 2>&1)
check "ipoib: mlx5_0's devlink handle, its flow steering mode unknown, and why" \
	grep -qE "flow steering mode \(mlx5_0, devlink pci/0000:81:00.0\): unknown: (this kernel has no devlink|devlink knows no such device)" <<<"$out"

done_testing
