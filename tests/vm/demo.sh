#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The demo inside the VM: load sluice.ko, show what it reports, unload.
set -e
echo "== insmod sluice.ko"
insmod /lib/modules/sluice.ko
dmesg | grep 'sluice:' | sed 's/^/   kernel: /'
echo "== ls -l /dev/sluice"
ls -l /dev/sluice
echo "== sluice info"
sluice info
echo "== rmmod sluice"
rmmod sluice
[ ! -e /dev/sluice ] && echo "   /dev/sluice is gone, module unloaded cleanly"
