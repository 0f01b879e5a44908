#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: a user who is not root runs programs on a Sluice stack on
# the kernel's own ipoib (issue 14 item 2), the way tools/README.md says:
# /dev/sluice given to group sluice (mode 0660, as the udev rule does), the
# tool given cap_net_raw,cap_ipc_lock+p with setcap, and a locked-memory
# limit of 8 MiB (the default a login gets), which a stack on ib0 (4,096
# buffers of 4,096 bytes, pinned by the module) is past.  Several of the
# user's programs share the stack (attached by name, and a forking
# server's children).  Each step beside the same program run by the same
# user on the kernel.  Prints TAP.
#
#   VM root namespace                          netns ipu-peer
#   +--------------------------------------+   +----------------------------+
#   | ib0 (port 1) 10.79.8.1/24            |   | ib1 (port 2) 10.79.8.2/24  |
#   |   uid 65534, groups sluice:          |IB |   kernel: kpeer serve      |
#   |   sluice run (setcap'd copy) kpeer   +===+   (TCP and UDP echo),      |
#   |   clients, a server, fork_srv; the   |   |   kpeer clients            |
#   |   same on the kernel beside them     |   |                            |
#   +--------------------------------------+   +----------------------------+
#
# Every program runs for a bounded time.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=ipu-peer
S=10.79.8.1
K=10.79.8.2
ST=ipu
SUITE="a user with file capabilities on the real ib_ipoib"
SETPRIV=/opt/sluice/util-linux/setpriv
SETCAP=/opt/sluice/libcap/setcap
U=65534
G=4242
CAPS=/tmp/ipu-caps
. /opt/sluice/bin/ipoib_lib.sh
# kctr and kseen (the stack's ring counters, the VM kernel's TCP and UDP).
. /opt/sluice/bin/v6_lib.sh
[ -x $SETPRIV ] && [ -x $SETCAP ] || skip_all "no setpriv or setcap in the guest"

dev_mode=$(stat -c '%a %g' /dev/sluice)
ucleanup() {
	[ "${spid:-0}" != 0 ] && kill "$spid" 2>/dev/null
	cleanup
	# /dev/sluice as the module made it, for the suites after.
	chgrp "${dev_mode#* }" /dev/sluice
	chmod "${dev_mode% *}" /dev/sluice
	umount $CAPS 2>/dev/null
}
trap ucleanup EXIT

# as_user [UID] CMD...: CMD as user UID (default 65534) in group sluice
# only, with an 8 MiB locked-memory limit, for 150 s at most.
as_user() {
	u=$U
	case $1 in [0-9]*) u=$1; shift ;; esac
	sh -c 'ulimit -l 8192 && exec timeout 150 "$@"' sh \
		$SETPRIV --reuid="$u" --regid="$u" --groups=$G env HOME=/ "$@"
}
# The tool and the preload library as installed: the tool beside its
# library, on a file system that keeps file capabilities (tmpfs).
mkdir -p $CAPS
mount -t tmpfs -o mode=0755 ipu-caps $CAPS
mkdir $CAPS/bin
cp /opt/sluice/bin/sluice $CAPS/bin/sluice
cp /opt/sluice/libsluice-preload.so $CAPS/
chmod 0755 $CAPS/bin/sluice
chmod 0644 $CAPS/libsluice-preload.so
chgrp $G /dev/sluice
chmod 0660 /dev/sluice

check "fakeib loads with ipoib=1" insmod /lib/modules/fakeib.ko ipoib=1
ipoib_load_8001
ipoib_pair "$S" "$K"
in_ns kpeer serve 7000 200 >/tmp/ipu-ksrv.log 2>&1 &
ksrv=$!
sleep 1

# ustep DESCRIPTION BYTES CMD...: CMD exits 0, the stack's rings carried
# at least BYTES each way, and the VM kernel's TCP and UDP saw none of it.
ustep() {
	d=$1 by=$2
	shift 2
	seen0=$(kseen) rx0=$(kctr rx_bytes) tx0=$(kctr tx_bytes)
	check "$d" quiet "$@"
	seen1=$(kseen) rx1=$(kctr rx_bytes) tx1=$(kctr tx_bytes)
	check "... through the rings (rx_bytes +$((${rx1:-0} - ${rx0:-0})), tx_bytes +$((${tx1:-0} - ${tx0:-0})))" \
		[ $((${rx1:-0} - ${rx0:-0})) -ge "$by" -a $((${tx1:-0} - ${tx0:-0})) -ge "$by" ]
	check "... none of it the VM kernel's TCP or UDP ($seen0 -> $seen1)" [ "$seen0" = "$seen1" ]
}

# The kernel, for the same user: what the stack must do as well.
check "the kernel, as uid $U: 50 UDP datagrams to ib1's echo" \
	quiet as_user kpeer udp-echo "$K" 7000 50
check "the kernel, as uid $U: 2 x 300000 bytes of TCP echoed" \
	quiet as_user kpeer tcp-echo "$K" 7000 300000 2
kbind=$(as_user kpeer bind tcp 80 2>&1 | tail -n 1)
check "the kernel, as uid $U: binding TCP port 80 fails ($kbind)" [ "$kbind" = EACCES ]

# The tool without file capabilities: the stack's buffers are past the
# user's memlock limit; sluice run says so and runs nothing.
out=$(as_user $CAPS/bin/sluice run --stack $ST --interface ib0 -- \
	kpeer udp-echo "$K" 7000 5 2>&1)
rc=$?
echo "$out" | sed 's/^/# no caps: /'
check "without file capabilities sluice run exits 1 (exit $rc)" [ $rc = 1 ]
check "... naming RLIMIT_MEMLOCK and cap_ipc_lock+p" \
	sh -c 'printf "%s\n" "$1" | grep -q "RLIMIT_MEMLOCK.*cap_ipc_lock+p"' sh "$out"

check "setcap cap_net_raw,cap_ipc_lock+p on the tool" \
	$SETCAP cap_net_raw,cap_ipc_lock+p $CAPS/bin/sluice

# A server under sluice run as the user: the stack lives while it does.
as_user $CAPS/bin/sluice run --stack $ST --interface ib0 -- \
	kpeer serve 7001 140 >/tmp/ipu-ssrv.log 2>&1 &
ssrv=$!
i=0
while [ $i -lt 100 ] && ! grep -qx ready /tmp/ipu-ssrv.log 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
sed 's/^/# server: /' /tmp/ipu-ssrv.log
check "with them, sluice run starts a server on a stack on ib0 as uid $U" \
	sh -c "grep -qx ready /tmp/ipu-ssrv.log && [ -d /sys/class/misc/sluice/stacks/$ST ]"
# The user's kpeer (busybox here has no pgrep).
spid=0
for p in /proc/[0-9]*; do
	[ "$(cat $p/comm 2>/dev/null)" = kpeer ] &&
		[ "$(awk '$1 == "Uid:" { print $2 }' $p/status 2>/dev/null)" = $U ] && spid=${p#/proc/}
done
st=/proc/$spid/status
sfield() { awk -v k="$1:" '$1 == k { print $2 }' "$st" 2>/dev/null; }
check "... the server runs as uid $U ($(sfield Uid)) with CAP_NET_RAW and CAP_IPC_LOCK ambient ($(sfield CapAmb))" \
	[ "$(sfield Uid)" = $U -a "$(sfield CapAmb)" = 0000000000006000 ]
check "... and the preload library in it" grep -q libsluice-preload /proc/$spid/maps
sluice dump $ST 2>/dev/null | grep -E '^(stack|kring)' | sed 's/^/# dump: /'

ustep "UDP: the user's program under sluice run sends 50 datagrams, the kernel on ib1 echoes" 1400 \
	as_user $CAPS/bin/sluice run --stack $ST --interface ib0 -- kpeer udp-echo "$K" 7000 50
ustep "TCP: the user's program connects, 2 x 300000 bytes echoed by the kernel on ib1" 600000 \
	as_user $CAPS/bin/sluice run --stack $ST --interface ib0 -- kpeer tcp-echo "$K" 7000 300000 2
ustep "UDP: the kernel on ib1 sends 50 datagrams to the user's server, echoed" 1400 \
	timeout 60 $IP netns exec "$NS" kpeer udp-echo "$S" 7001 50
ustep "TCP: the kernel on ib1 connects to the user's server, 2 x 300000 bytes echoed" 600000 \
	timeout 60 $IP netns exec "$NS" kpeer tcp-echo "$S" 7001 300000 2
# A forking server of the user's on the same stack, beside the server
# above (two programs attached by name, one forking a child a
# connection): each kernel connection is echoed byte for byte by the
# child that took it.  The same server on the kernel first.
fork_round() { # fork_round PORT OUT [sluice run ... --]
	p=$1 fo=$2
	shift 2
	as_user "$@" fork_srv "$p" 8 100 >"$fo" 2>&1 &
	fsrv=$!
	i=0
	while [ $i -lt 100 ] && ! grep -qx ready "$fo" 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
}
fork_done() { # fork_done OUT: wait for the server, then its verdict
	wait $fsrv
	frc=$?
	sed 's/^/# fork_srv: /' "$1"
	[ $frc = 0 ] && grep -qx 'children 8, failed 0' "$1"
}
fork_round 7008 /tmp/ipu-kfork.out
check "the kernel, as uid $U: 8 connections from ib1 to a forking server, 128 KiB each echoed" \
	quiet timeout 60 $IP netns exec "$NS" kpeer tcp-echo "$S" 7008 131072 8
check "... every forked child echoed and exited 0" fork_done /tmp/ipu-kfork.out
fork_round 7007 /tmp/ipu-fork.out $CAPS/bin/sluice run --stack $ST --interface ib0 --
ustep "TCP: the same to the user's forking server on the stack, beside its other server" 1048576 \
	timeout 60 $IP netns exec "$NS" kpeer tcp-echo "$S" 7007 131072 8
check "... every forked child echoed and exited 0" fork_done /tmp/ipu-fork.out

sbind=$(as_user $CAPS/bin/sluice run --stack $ST --interface ib0 -- \
	kpeer bind tcp 80 2>&1 | tail -n 1)
check "on the stack, as uid $U: binding TCP port 80 fails as on the kernel ($sbind)" \
	[ "$sbind" = "$kbind" ]

# Another user of group sluice may not join the first one's stack.
out=$(as_user 65533 $CAPS/bin/sluice run --stack $ST --interface ib0 -- \
	kpeer bind udp 9 2>&1)
rc=$?
echo "$out" | sed 's/^/# uid 65533: /'
check "uid 65533 cannot join uid $U's stack: refused by the module (sluice run exit $rc), the program not run" \
	sh -c '[ "$1" = 1 ] && printf "%s\n" "$2" | grep -q "Permission denied" &&
		! printf "%s\n" "$2" | grep -q "^0$"' sh "$rc" "$out"

# The server itself (as_user runs it under a subshell: $ssrv is that).
[ "$spid" != 0 ] && kill "$spid" 2>/dev/null
i=0
while [ $i -lt 100 ] && [ "$spid" != 0 ] && kill -0 "$spid" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
check "the user's server ends when told" sh -c "[ $spid != 0 ] && ! kill -0 $spid 2>/dev/null"
wait $ssrv 2>/dev/null
ssrv=
ucleanup
trap - EXIT
check "ib_ipoib, ib_cm and fakeib unload" sh -c "! lsmod | grep -qE '^(ib_ipoib|fakeib) '"
echo "1..$n"
exit $fail
