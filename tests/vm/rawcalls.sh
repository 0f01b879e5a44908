#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: system calls that bypass the library on a stack socket's
# fd (issue 24 item 7; tests/preload/rawcalls.c, which the host's
# test_conform_raw.sh runs on the host's kernel), on this kernel, both
# kinds of fd a socket can be:
# - a stack in /dev/shm (SLUICE_SHM=1): the placeholder, an AF_UNIX
#   stream socket of the library's (lib/preload/README.md, "The
#   placeholder"): raw read EINVAL, raw write ENOTCONN without SIGPIPE,
#   fstat a socket, a read with bytes waiting an error that leaves them
#   to the stack;
# - a module stack (kring on a veth of the VM's, the stack's loopback):
#   the module's socket file: raw read and write fail.
# Each beside rawcalls on the kernel's own sockets; every run's lines are
# printed. Loopback only (127.0.0.1), no namespace.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
SUITE="raw calls"
. /opt/sluice/bin/tap.sh

cleanup() {
	$IP link del rwc0 2>/dev/null
	rm -rf /dev/shm/sluice-rwc* /dev/shm/sluicefd-rwc*
}
cleanup
$IP link set lo up
lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
$IP link add rwc0 type veth peer name rwc1 && $IP addr add 10.81.0.1/24 dev rwc0 &&
	$IP link set rwc0 up && $IP link set rwc1 up
check "a veth for the module's stack" $IP link show rwc0

timeout 60 rawcalls >/tmp/rwc-k.out 2>&1
check "rawcalls on the kernel runs to the end" grep -qx '# done' /tmp/rwc-k.out
timeout 60 env SLUICE_SHM=1 sluice run --stack rwcs -- rawcalls >/tmp/rwc-s.out 2>&1
timeout 60 env SLUICE_LOOPBACK=1 sluice run --stack rwcm --ifname rwc0 -- rawcalls >/tmp/rwc-m.out 2>&1
for f in k s m; do
	grep '^raw_\|^# backend\|^after_' /tmp/rwc-$f.out | sed "s/^/# $f: /"
done
check "/dev/shm stack: rawcalls runs to the end, on Sluice sockets" \
	sh -c 'grep -qx "# done" /tmp/rwc-s.out && grep -qx "# backend: sluice" /tmp/rwc-s.out'
check "/dev/shm stack: the placeholder is an AF_UNIX socket of the library's (raw fstat: socket)" \
	grep -qx 'raw_fstat: 0 - sock' /tmp/rwc-s.out
check "/dev/shm stack: raw read EINVAL (not 0, the peer's close), raw write ENOTCONN (no SIGPIPE: the run went on)" \
	sh -c 'grep -qx "raw_read: -1 EINVAL" /tmp/rwc-s.out && grep -qx "raw_write: -1 ENOTCONN" /tmp/rwc-s.out'
check "/dev/shm stack: raw read with bytes waiting fails and leaves them to the stack" \
	sh -c 'grep -qx "raw_read_waiting: -1 EINVAL" /tmp/rwc-s.out && grep -qx "raw_read_left: 4 (bytes)" /tmp/rwc-s.out'
check "/dev/shm stack: the connection carries bytes both ways afterwards" \
	grep -qx 'after_recv_back: 4 pong' /tmp/rwc-s.out
check "module stack: rawcalls runs to the end, on Sluice sockets" \
	sh -c 'grep -qx "# done" /tmp/rwc-m.out && grep -qx "# backend: sluice" /tmp/rwc-m.out'
check "module stack: raw read and raw read with bytes waiting fail (the module's file has no read)" \
	sh -c 'grep -q "^raw_read: -1 E" /tmp/rwc-m.out && grep -q "^raw_read_waiting: -1 E" /tmp/rwc-m.out &&
	grep -qx "raw_read_left: 4 (bytes)" /tmp/rwc-m.out'
check "module stack: raw write fails" grep -q '^raw_write: -1 E' /tmp/rwc-m.out
check "module stack: the connection carries bytes both ways afterwards" \
	grep -qx 'after_recv_back: 4 pong' /tmp/rwc-m.out
cleanup
echo "1..$n"
[ "$fail" = 0 ]
