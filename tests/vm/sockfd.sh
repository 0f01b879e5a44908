#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: socket fds (issue 5).  Programs under `sluice run
# --ifname sfd0` on a kring stack hold Sluice TCP connections as module
# socket fds, against the Linux kernel's TCP echo server (kpeer serve) in a
# network namespace this script creates and deletes.  Prints TAP.
#
#   VM root namespace                             netns sfd-peer
#   +--------------------------------------+      +-------------------------+
#   | kernel: 10.80.0.1/24 on sfd0         | veth | sfd1 10.80.0.2/24       |
#   | Sluice stack "sfd" on sfd0 (kring):  +======+ Linux kernel stack:     |
#   |   sockfd_prog idle (holds the stack) |      |   kpeer serve :7100     |
#   |   sockfd_prog epoll|poll|share|scm   |      |   (TCP echo)            |
#   |   sockfd_prog hold, killed -9        |      |                         |
#   +--------------------------------------+      +-------------------------+
#
# Checks: the kernel's epoll (level and edge) and poll/select on sets that
# mix Sluice connections, a pipe and a kernel UDP socket; fork and dup
# sharing a connection; SCM_RIGHTS passing one to a new program which uses
# it, and a new program exec'd with one; kill -9 of a process holding connections: the module releases its
# socket fds, the process left on the stack closes them (the kernel peer
# sees them end: no ESTABLISHED left), and the counts go back to zero; a
# kernel UDP socket and a stack UDP socket on 127.0.0.1 reach each other.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=sfd-peer
S=10.80.0.1
K=10.80.0.2
ST=sfd
PORT=7100
SUITE="socket fds"
. /opt/sluice/bin/tap.sh
in_ns() { $IP netns exec "$NS" "$@"; }
srun() { srun_t 60 "$@"; }
srun_t() { # srun_t SECONDS PROGRAM...: under sluice run on the stack, bounded
	t=$1
	shift
	timeout "$t" env SLUICE_UDP=0 sluice run --stack $ST --ifname sfd0 -- "$@"
}
# The pid of the sockfd_prog whose arguments include WORD.
prog_pid() {
	for p in $(pidof sockfd_prog); do
		grep -q "$1" /proc/$p/cmdline 2>/dev/null && echo $p
	done | head -n 1
}
# prog_tap DESCRIPTION PROG-ARGS...: the program's own ok/not ok lines, renumbered
prog_tap() {
	d=$1
	shift
	srun sockfd_prog "$@" >/tmp/sfd.out 2>/tmp/sfd.err
	rc=$?
	while read -r line; do
		case $line in
		"ok - "*) tap ok "$d: ${line#ok - }" ;;
		"not ok - "*) tap fail "$d: ${line#not ok - }" ;;
		esac
	done </tmp/sfd.out
	grep '^#' /tmp/sfd.out
	check "$d: exit status $rc" [ $rc = 0 ]
	[ $rc = 0 ] || grep -E '^sockfd' /sys/kernel/debug/sluice/stacks/$ST | sed 's/^/# debugfs: /'
	[ -s /tmp/sfd.err ] && sed 's/^/# stderr: /' /tmp/sfd.err
}
cleanup() {
	for p in $kpeer $idle $hold; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP netns del "$NS" 2>/dev/null
	$IP link del sfd0 2>/dev/null
}
trap cleanup EXIT
sysv() { cat "/sys/class/misc/sluice/stacks/$ST/$1" 2>/dev/null; }
# Connections to the echo port that the peer still has ESTABLISHED.
peer_estab() {
	p=$(printf '%04X' $PORT)
	in_ns cat /proc/net/tcp | awk -v p=":$p" '$2 ~ p"$" && $4 == "01" { c++ } END { print c + 0 }'
}

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
[ $(( 0x${feat:-0} & 0x8e )) = $((0x8e)) ] || skip_all "module features 0x$feat lack kring, filters, ifinfo or socket fds"

$IP link set lo up
mkdir -p /run/netns
$IP netns add "$NS"
$IP link add sfd0 type veth peer name sfd1
$IP link set sfd1 netns "$NS"
$IP addr add "$S/24" dev sfd0
$IP link set sfd0 up
in_ns $IP link set lo up
in_ns $IP addr add "$K/24" dev sfd1
in_ns $IP link set sfd1 up
check "the peer namespace pings the device address (kernel)" in_ns ping -c 1 -W 5 "$S"
in_ns timeout 200 kpeer serve $PORT 180 >/tmp/kpeer.log 2>&1 &
kpeer=$!
sleep 1

# A process that stays on the stack (and runs it) throughout.
srun_t 170 sockfd_prog idle 150 >/tmp/idle.out 2>&1 &
idle=$!
i=0
while [ $i -lt 150 ] && ! grep -q ready /tmp/idle.out 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
check "a program waits in epoll_wait on a listener (holds the stack)" grep -q ready /tmp/idle.out
check "... its listener is a socket fd (sysfs sockfds $(sysv sockfds))" [ "$(sysv sockfds)" = 1 ]

prog_tap "epoll lt" epoll "$K" $PORT lt
prog_tap "epoll et" epoll "$K" $PORT et
prog_tap "poll" poll "$K" $PORT
prog_tap "fork/dup" share "$K" $PORT
prog_tap "scm_rights" scm "$K" $PORT
prog_tap "exec" exec "$K" $PORT
check "after the programs: one socket fd left, the listener (sockfds $(sysv sockfds))" \
	[ "$(sysv sockfds)" = 1 ]

# kill -9 of a process holding connections.
rel0=$(sed -n 's/^sockfd_released \([0-9]*\)/\1/p' /sys/kernel/debug/sluice/stacks/$ST)
srun_t 120 sockfd_prog hold "$K" $PORT 4 100 >/tmp/hold.out 2>&1 &
hold=$!
i=0
while [ $i -lt 150 ] && ! grep -q ready /tmp/hold.out 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
check "a program holds 4 connections" grep -q ready /tmp/hold.out
check "... the peer has them ESTABLISHED ($(peer_estab))" [ "$(peer_estab)" -ge 4 ]
check "... as 5 socket fds with the listener (sockfds $(sysv sockfds))" [ "$(sysv sockfds)" = 5 ]
# The process itself, not the timeout and sluice run around it.
kill -9 "$(prog_pid hold)" 2>/dev/null
i=0
while [ $i -lt 100 ] && [ "$(peer_estab)" != 0 ]; do sleep 0.1; i=$((i + 1)); done
check "kill -9: the peer's connections end (ESTABLISHED $(peer_estab)) in $((i / 10)).$((i % 10)) s" \
	[ "$(peer_estab)" = 0 ]
rel1=$(sed -n 's/^sockfd_released \([0-9]*\)/\1/p' /sys/kernel/debug/sluice/stacks/$ST)
check "... the module released its 4 socket fds ($rel0 -> $rel1)" [ $((rel1 - rel0)) = 4 ]
check "... socket fds back to the listener's (sockfds $(sysv sockfds))" [ "$(sysv sockfds)" = 1 ]
grep -E '^sockfd' /sys/kernel/debug/sluice/stacks/$ST | sed 's/^/# debugfs: /'

# A kernel UDP socket and a stack's UDP socket on loopback (issue 24,
# gVisor udp_bind Sendto/10, /11): 127/8 never reaches the module's
# filters, so without a datagram twin (lib/preload/twin.c) the kernel's
# datagrams to the stack's port found no socket, and the stack's answer
# to the kernel's port stayed in the stack.  kpeer serve under sluice run
# (its UDP socket on 127.0.0.1 in the stack: SLUICE_LOOPBACK=1, as a
# stack on a device leaves 127/8 to the kernel by default), kpeer
# udp-echo on the kernel: each datagram there and back, the answer from
# the address the kernel sent to.
fds0=$(sysv sockfds)
timeout 60 env SLUICE_LOOPBACK=1 sluice run --stack $ST --ifname sfd0 -- \
	kpeer serve 7310 40 127.0.0.1 >/tmp/lo-serve.out 2>&1 &
lo=$!
i=0
while [ $i -lt 150 ] && ! grep -q ready /tmp/lo-serve.out 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
check "a stack echo server on 127.0.0.1 (TCP and UDP) under sluice run" grep -q ready /tmp/lo-serve.out
# Its listener and UDP socket (fds 3 and 4): the module's socket fds.
lop=$(for p in $(pidof kpeer); do grep -q 7310 /proc/$p/cmdline 2>/dev/null && echo $p; done | head -n 1)
lofds=$(for f in 3 4; do readlink /proc/${lop:-0}/fd/$f; done | grep -c '^anon_inode:\[sluice-sock\]$')
ls -l /proc/${lop:-0}/fd 2>/dev/null | awk 'NF > 9 { print "# kpeer serve fd", $9, $11 }'
check "... its two sockets are the module's socket fds ($lofds of 2; sysfs sockfds $fds0 -> $(sysv sockfds))" \
	[ "$lofds" = 2 ]
timeout 40 kpeer udp-echo 127.0.0.1 7310 5 >/tmp/lo-echo.out 2>&1
sed 's/^/# kpeer udp-echo: /' /tmp/lo-echo.out
check "module path: a kernel UDP socket -> a stack UDP socket on 127.0.0.1 -> back: 5 of 5 echoed" \
	grep -qx "5/5 echoed" /tmp/lo-echo.out
check "... each answer from 127.0.0.1:7310, where the kernel sent it" \
	grep -qx "5 from 127.0.0.1:7310" /tmp/lo-echo.out
kill $lo 2>/dev/null
wait $lo 2>/dev/null
[ -s /tmp/lo-serve.out ] && grep -v '^ready$' /tmp/lo-serve.out | sed 's/^/# kpeer serve: /'
i=0
while [ $i -lt 50 ] && [ "$(sysv sockfds)" != "$fds0" ]; do sleep 0.1; i=$((i + 1)); done
check "... its socket fds gone with it (sockfds $(sysv sockfds))" [ "$(sysv sockfds)" = "$fds0" ]

# The last program goes (SIGTERM: no exit handlers); the helper may hold
# the stack on for connections in TIME-WAIT, but no socket fd is left.
kill "$(prog_pid idle)" 2>/dev/null
wait $idle 2>/dev/null
i=0
while [ $i -lt 100 ] && [ "$(sysv sockfds)" != 0 ] && [ -e /sys/class/misc/sluice/stacks/$ST ]; do
	sleep 0.1
	i=$((i + 1))
done
check "the last program gone: no socket fd left (sockfds '$(sysv sockfds)')" \
	[ "$(sysv sockfds)" = 0 ] || [ ! -e /sys/class/misc/sluice/stacks/$ST ]
# A helper waiting out TIME-WAIT (up to 2 MSL) holds the stack on; the
# next suite wants the module to itself: end it, and the stack goes.
hp=$(sluice dump $ST 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
sluice dump $ST 2>/dev/null | grep -E '^  (helper|time-wait):' | sed 's/^/# /'
[ -n "$hp" ] && kill "$hp" 2>/dev/null
i=0
while [ $i -lt 50 ] && [ -e /sys/class/misc/sluice/stacks/$ST ]; do sleep 0.1; i=$((i + 1)); done
check "the stack goes with its helper (${hp:-no helper})" [ ! -e /sys/class/misc/sluice/stacks/$ST ]
ST2=sfdcc
# System calls per short connection on the module path (issue 23, item
# 4): conn_churn's server and client on a stack of their own on sfd0
# (module socket fds: an ioctl makes one, close ends it), both on the
# stack's own loopback, traced with strace -f; (2,050 connections - 50) /
# 2,000 a side, the kernel's loopback beside them.  Counts are exact
# here, times are not: under TCG a spin is over before the peer has run,
# so waiting (futex, poll, sched_yield, and the SOCK_WAKE ioctl that
# wakes a poller: the kernel's own blocking calls wait and wake inside)
# is shown, not bounded, and so are the looks at a lock holder that
# seems slow (kill(pid, 0), its /proc stat: 0.3-0.9 a connection here,
# none on real CPUs), which is why the bound is the kernel's count and
# not the ioctl and close a connection that remain; and clock_gettime is
# a system call here (the
# guest's clocksource has no vDSO path; conn_churn reads the clock twice
# a connection on both paths), so it is left out of both counts.
churn_calls() { # PATH N PORT: "server-work server-wait client-work client-wait"
	pre=""
	[ "$1" = sluice ] && pre="env SLUICE_LOOPBACK=1 SLUICE_UDP=0 sluice run --stack $ST2 --ifname sfd0 --"
	rm -f /tmp/cc.ready
	timeout 600 strace -f -qq -o /tmp/cc.srv $pre conn_churn server "$3" "$2" >/tmp/cc.ready 2>&1 &
	wait_ready_word /tmp/cc.ready
	timeout 600 strace -f -qq -o /tmp/cc.cli $pre conn_churn client "$3" "$2" >/dev/null 2>&1
	wait
	echo "$(trace_calls /tmp/cc.srv) $(trace_calls /tmp/cc.cli)"
}
trace_calls() { # strace -f FILE: "work wait" (the clock left out)
	# Waiting: futex, poll, sched_yield, the module's wait ioctl, and the
	# spin's look at the run queue (lib/run/wait.c: /proc/loadavg opened,
	# read and closed at most once a millisecond a stack, before a spin).
	awk '{ pid = $1; sub(/^[0-9]+ +/, "") }
		/^<\.\.\. / || /^\+\+\+ / || /^--- / || !/^[a-z_0-9]+\(/ { next }
		{ name = $0; sub(/\(.*/, "", name) }
		name == "clock_gettime" { next }
		name == "openat" && /"\/proc\/loadavg"/ { la[pid] = $NF; wait++; next }
		(name == "read" || name == "close") && la[pid] != "" &&
			index($0, name "(" la[pid] ",") + index($0, name "(" la[pid] ")") == 1 {
			if (name == "close") la[pid] = ""
			wait++; next }
		name == "futex" || name == "poll" || name == "ppoll" || name == "sched_yield" ||
		(name == "ioctl" && /0xb5, 0xd,/) { wait++; next }
		{ work++ }
		END { print work + 0, wait + 0 }' "$1"
}
wait_ready_word() { # until FILE says "ready" somewhere, 30 s at most
	i=0
	while [ $i -lt 300 ] && ! grep -q ready "$1" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
per_conn() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.2f", (b - a) / 2000 }'; }
lt() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && m != "-" && x < m) }'; }
if command -v strace >/dev/null && command -v conn_churn >/dev/null; then
	set -- $(churn_calls kernel 50 7301) $(churn_calls kernel 2050 7302)
	ks=$(per_conn "$1" "$5") kc=$(per_conn "$3" "$7")
	# A process that holds the stack, so its counters can be read after.
	timeout 600 env SLUICE_UDP=0 sluice run --stack $ST2 --ifname sfd0 -- \
		sockfd_prog idle 590 >/tmp/idle2.out 2>&1 &
	wait_ready_word /tmp/idle2.out
	set -- $(churn_calls sluice 50 7303) $(churn_calls sluice 2050 7304)
	for f in srv cli; do
		echo "# Sluice $f, 2,050 connections, the calls made most:"
		sed 's/^[0-9]* *//' /tmp/cc.$f | grep -oE '^[a-z_0-9]+\(' | sort | uniq -c | sort -rn |
			head -n 8 | sed 's/^/#   /'
	done
	ss=$(per_conn "$1" "$5") sw=$(per_conn "$2" "$6") sc=$(per_conn "$3" "$7") cw=$(per_conn "$4" "$8")
	echo "# system calls a connection besides waiting and the clock: kernel server $ks client $kc;" \
		"Sluice (socket fds) server $ss client $sc; waiting under TCG: server $sw client $cw"
	check "module path: a short connection's server side makes fewer system calls than the kernel's, besides waiting ($ss < $ks)" \
		lt "$ss" "$ks"
	check "module path: ... and its client side ($sc < $kc)" lt "$sc" "$kc"
	# Every close went through the module's released list (ABI 3): no
	# lock holder had to look at every slot.
	rel=$(sluice dump $ST2 2>/dev/null | sed -n 's/^  sockfd_released *\([0-9]*\) .*/\1/p' | head -n 1)
	scan=$(sluice dump $ST2 2>/dev/null | sed -n 's/^  sockfd_scan *\([0-9]*\) .*/\1/p' | head -n 1)
	# (sluice dump leaves out counters that are 0.)
	check "module path: ${rel:-?} sockets closed after their socket fds, ${scan:-0} scans of every slot" \
		test "${rel:-0}" -ge 4100 -a "${scan:-0}" = 0
	kill "$(prog_pid idle)" 2>/dev/null
	wait 2>/dev/null
	# Its helper waits out TIME-WAIT: end it, as above.
	hp=$(sluice dump $ST2 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	i=0
	while [ $i -lt 50 ] && [ -e /sys/class/misc/sluice/stacks/$ST2 ]; do sleep 0.1; i=$((i + 1)); done
	check "module path: ... and its stack goes with its helper (${hp:-no helper})" \
		[ ! -e /sys/class/misc/sluice/stacks/$ST2 ]
else
	tap ok "module path: system calls a connection # SKIP no strace or conn_churn in the guest"
fi

echo "1..$n"
exit $fail
