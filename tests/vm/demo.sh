#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The demo inside the VM: load sluice.ko, show what it reports, make a
# stack in it and look at it, unload.
set -e
echo "== insmod sluice.ko"
insmod /lib/modules/sluice.ko
dmesg | grep 'sluice:' | sed 's/^/   kernel: /'
echo "== ls -l /dev/sluice"
ls -l /dev/sluice
echo "== sluice info"
sluice info
echo "== a stack in the module (mkstack holds it for 3 s)"
mkstack demo 3 >/tmp/mkstack.out &
while ! grep -q holding /tmp/mkstack.out 2>/dev/null; do sleep 0.1; done
sluice stacks
for f in name owner_uid attached region_size; do
	printf '   /sys/class/misc/sluice/stacks/demo/%s = %s\n' "$f" \
		"$(cat /sys/class/misc/sluice/stacks/demo/$f)"
done
sluice dump demo | sed -n '1,3p;/^sockets/,$p'
wait
[ ! -e /sys/class/misc/sluice/stacks/demo ] && echo "   holder gone: the stack is gone"
echo "== rmmod sluice"
rmmod sluice
[ ! -e /dev/sluice ] && echo "   /dev/sluice is gone, module unloaded cleanly"
