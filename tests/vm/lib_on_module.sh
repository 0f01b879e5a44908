#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: the stack's own unit tests again, with the module loaded,
# so every stack they make is a region the module allocates, pins and maps
# (lib/core/region.c uses the module whenever it offers stacks).  Prints TAP.
SUITE="lib_on_module"
. /opt/sluice/bin/tap.sh

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
if grep -q 'features 0x[0-9a-f]*[13579bdf]$' /sys/kernel/debug/sluice/info; then
	tap ok "the module offers stacks"
else
	tap fail "the module offers stacks"
fi
rm -f /dev/shm/sluice-*
# The module's regions are shmem: test_lock and test_wake assert that
# libsluice found shared futexes usable on them and took the futex paths.
export SLUICE_EXPECT_FUTEX=1
for t in test_region test_lock test_wake test_udp test_icmp test_shared test_death test_netsim test_tcp_loop test_capture; do
	echo "# $t on module-backed regions"
	if "/opt/sluice/bin/$t" >"/tmp/$t.tap" 2>&1; then
		cat "/tmp/$t.tap"
		tap ok "$t passes on module-backed regions"
	else
		cat "/tmp/$t.tap"
		tap fail "$t passes on module-backed regions"
	fi
done
# What libsluice itself reports for a module region (test_lock's line).
if grep -q "^# shared futexes in this stack's region (module): yes" /tmp/test_lock.tap; then
	tap ok "libsluice sees usable shared futexes on module regions"
else
	grep "^# shared futexes" /tmp/test_lock.tap
	tap fail "libsluice sees usable shared futexes on module regions"
fi
# Nothing fell back to /dev/shm (test_region makes its corrupted stacks
# there on purpose, with SLUICE_SHM=1, and removes them).
if ls /dev/shm/sluice-* >/dev/null 2>&1; then
	tap fail "no stack fell back to /dev/shm"
else
	tap ok "no stack fell back to /dev/shm"
fi
rmmod sluice && tap ok "module unloads: no stack, fd or mapping left" ||
	tap fail "module unloads: no stack, fd or mapping left"
echo "1..$n"
exit $fail
