#!/bin/busybox sh
# SPDX-License-Identifier: BSD-2-Clause
#
# /init of the test VM.  Mounts the pseudo file systems, loads the kernel
# modules listed in /etc/sluice/kmods, runs each line of /etc/sluice/suites
# ("NAME COMMAND...") and writes its output between markers to the second
# serial port, which the host reads back:
#   ### BEGIN NAME
#   ...TAP...
#   ### END NAME RC
# then the kernel log, then "### DONE", and powers off.
/bin/busybox --install -s /bin
export PATH=/opt/sluice/bin:/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root LD_LIBRARY_PATH=/opt/sluice/lib

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm

out=/dev/ttyS1
[ -c "$out" ] || out=/dev/console

if [ -f /etc/sluice/kmods ]; then
	while read -r m; do
		insmod "$m" || echo "### KMOD-FAILED $m" >"$out"
	done </etc/sluice/kmods
fi

while read -r name cmd; do
	[ -n "$name" ] || continue
	echo "### BEGIN $name" >"$out"
	t0=$(cut -d. -f1 /proc/uptime)
	# shellcheck disable=SC2086 # the command line is split on purpose
	(cd /opt/sluice && exec $cmd) >"$out" 2>&1 </dev/null
	rc=$?
	# A stack whose programs are gone stays in its helper process while
	# its connections wait out TIME-WAIT (up to 2 MSL): end it, so the
	# next suite starts with no stack of this one's (its checks of "no
	# stack left" and its rmmod would otherwise depend on how long it
	# took to get there).
	sluice stacks 2>/dev/null | awk 'NR > 1 && $7 ~ /^[1-9][0-9]*$/ { print $1, $7 }' |
		while read -r st hp; do
			echo "# after $name: stack $st's helper $hp ended" >"$out"
			kill "$hp" 2>/dev/null
		done
	i=0
	while [ $i -lt 50 ] && [ -n "$(ls /sys/class/misc/sluice/stacks 2>/dev/null)" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	echo "### TIME $name $(($(cut -d. -f1 /proc/uptime) - t0))" >"$out"
	echo "### END $name $rc" >"$out"
done </etc/sluice/suites

echo "### DMESG" >"$out"
dmesg >"$out"
echo "### DONE" >"$out"
sync
poweroff -f
