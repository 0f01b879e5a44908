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
# kernel UDP socket and a stack UDP socket on 127.0.0.1 reach each other;
# kernel sockets of the VM reach a stack listener on 127.0.0.1 and on
# 0.0.0.0 (by 127.0.0.1 and by sfd0's address) and a stack UDP socket on
# 0.0.0.0, and the stack's sockets reach kernel ones (twin_echo, each
# case beside the same programs on the kernel alone); port reservations
# in the program's own form (family, IPV6_V6ONLY, SO_REUSEADDR,
# SO_REUSEPORT: resv_hold rows, each beside two kernel sockets).
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
TC=/usr/sbin/tc
NS=sfd-peer
S=10.80.0.1
K=10.80.0.2
S6=fd80::1
K6=fd80::2
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
wait_ready_word() { # until FILE says "ready" somewhere, 30 s at most
	i=0
	while [ $i -lt 300 ] && ! grep -q ready "$1" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
cleanup() {
	for p in $kpeer $idle $hold $idle2 $klsrv; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP netns del "$NS" 2>/dev/null
	$IP link del sfd0 2>/dev/null
	[ "$hist" = on ] && hist_on off
}
trap cleanup EXIT
sysv() { cat "/sys/class/misc/sluice/stacks/$ST/$1" 2>/dev/null; }
# Connections to the echo port that the peer still has ESTABLISHED.
peer_estab() {
	p=$(printf '%04X' $PORT)
	in_ns cat /proc/net/tcp | awk -v p=":$p" '$2 ~ p"$" && $4 == "01" { c++ } END { print c + 0 }'
}

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
# The system call counts of the last part (see there): the triggers go
# in once, here, before any stack or program runs, and out at the end
# (each run empties them), not added and removed around each run: done
# so, one run in three on 6.1 under TCG had a soft lockup in the guest's
# kernel (a shell, the cause not found) as the counting began.
TR=/sys/kernel/tracing
# Each system call by thread and number; ioctls by thread and request
# (SLUICE_IOC_SOCK_WAKE is _IOWR(0xb5, 0x0d, ...): its low 16 bits are
# 0xb50d, 46349); who made whom.
H_ALL="hist:keys=common_pid,id.syscall:size=8192"
H_WAIT="hist:keys=common_pid,cmd:size=2048"
H_FORK="hist:keys=parent_pid,child_pid:size=2048"
# Each poll's timeout by thread (the keepalive part).
H_POLL="hist:keys=common_pid,timeout_msecs:size=2048"
hist_on() { # add (on), empty (clear) or remove (off) the four triggers; 1 if one failed
	b="" e="" r=0
	[ "$1" = off ] && b="!"
	[ "$1" = clear ] && e=":clear"
	echo "$b$H_ALL$e" >>$TR/events/raw_syscalls/sys_enter/trigger || r=1
	echo "$b$H_WAIT$e" >>$TR/events/syscalls/sys_enter_ioctl/trigger || r=1
	echo "$b$H_FORK$e" >>$TR/events/sched/sched_process_fork/trigger || r=1
	echo "$b$H_POLL$e" >>$TR/events/syscalls/sys_enter_poll/trigger || r=1
	return $r
}
[ -e $TR/events ] || mount -t tracefs tracefs $TR 2>/dev/null
hist=none
if [ -e $TR/events/raw_syscalls/sys_enter/hist ]; then
	hist=on
	hist_on on || hist=refused
fi
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
# IPv6 addresses too, before the stack's link reads the device's (the
# shared-port and reservation rows over IPv6); no DAD wait.
$IP -6 addr add $S6/64 dev sfd0 nodad
in_ns $IP -6 addr add $K6/64 dev sfd1 nodad
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

# The stack's timers for a program asleep in poll() on module socket fds
# (issue 19 item 6): nothing else ends such a sleep but frames and socket
# changes, so its slice (at most 10 ms) is bounded by the wheel's next
# deadline when the program keeps the stack's timers (pl_kfd_slice());
# before, every slice was 10 ms and a timer (a RACK reordering timer, a
# TLP, an RTO) fired up to 10 ms late.  sockfd_prog keeplate: 8
# connections with keepalive (4 s idle, a probe, 1 s), the peer made
# silent (tc drops all it gets on the port), each waited for in poll()
# with no timeout until its ETIMEDOUT; on a stack of the program's own
# (no other process's sleeps run its timers), and on the kernel beside.
# What is checked is each poll's timeout (its sys_enter_poll, counted by
# the trigger above): slices shorter than 10 ms, ended at a deadline,
# where before there were none; how late the errors came is printed,
# not checked: under TCG with the host loaded the guest's own sleeps
# overrun by more than the slice (the kernel's keepalive timer, on its
# timer wheel's coarser level, by more still).
KL_N=8
# An echo server of its own: the peer keeps its ends of these connections
# ESTABLISHED (it never hears of their end), and the checks below count
# the main server's.
KL_PORT=7190
kl_run() { # kl_run kernel|sluice: the program's last line; its pid in /tmp/kl.pid
	pre=""
	[ "$1" = sluice ] && pre="env SLUICE_UDP=0 SLUICE_NO_HELPER=1 sluice run --stack sfdkl --ifname sfd0 --"
	: >/tmp/kl-$1.out
	timeout 60 sh -c 'echo $$ >/tmp/kl.pid; exec "$@"' sh \
		$pre sockfd_prog keeplate "$K" $KL_PORT $KL_N >/tmp/kl-$1.out 2>&1 &
	klp=$!
	wait_ready_word /tmp/kl-$1.out
	in_ns $TC filter add dev sfd1 parent ffff: protocol ip prio 1 u32 \
		match ip dport $KL_PORT 0xffff action drop 2>/dev/null
	wait $klp
	in_ns $TC filter del dev sfd1 parent ffff: 2>/dev/null
	grep '^keeplate' /tmp/kl-$1.out
}
# kl_all LINE [sockfd]: every connection timed out (each a socket fd).
kl_all() {
	[ "$(kl_field timedout "$1")" = $KL_N ] && { [ -z "$2" ] || [ "$(kl_field sockfd "$1")" = $KL_N ]; }
}
kl_field() { echo "$2" | awk -v f="$1" '{ for (i = 1; i < NF; i++) if ($i == f) v = $(i + 1) } END { print v == "" ? "-" : v }'; }
in_ns timeout 60 kpeer serve $KL_PORT 50 >/tmp/kpeer-kl.log 2>&1 &
klsrv=$!
if [ "$hist" = on ] && [ -e $TR/events/syscalls/sys_enter_poll/hist ] &&
	wait_ready_word /tmp/kpeer-kl.log && in_ns $TC qdisc add dev sfd1 ingress 2>/dev/null; then
	klk=$(kl_run kernel)
	hist_on clear
	kls=$(kl_run sluice)
	# "{ common_pid: PID, timeout_msecs: MS } hitcount: N" of the program's
	# polls: all of them, and those shorter than the 10 ms slice.
	klpolls=$(awk -v p="$(cat /tmp/kl.pid)" '/^\{/ { gsub(/[{}:,]/, " ")
			if ($2 == p) { all += $NF; if ($4 >= 0 && $4 < 10) short += $NF } }
		END { print all + 0, short + 0 }' $TR/events/syscalls/sys_enter_poll/hist)
	echo "# kernel: ${klk:-nothing}"
	echo "# Sluice: ${kls:-nothing}; its polls, and those under 10 ms: $klpolls"
	check "keepalive timers, waited for in poll(): on the kernel, $(kl_field timedout "$klk") of $KL_N connections end ETIMEDOUT" \
		kl_all "$klk"
	check "... on module socket fds ($(kl_field sockfd "$kls") of $KL_N), the same ($(kl_field timedout "$kls") of $KL_N)" \
		kl_all "$kls" sockfd
	check "... its sleeps in poll end at the stack's deadlines: ${klpolls#* } of ${klpolls% *} shorter than the 10 ms slice, at least $KL_N" \
		[ "${klpolls#* }" -ge $KL_N ]
else
	tap ok "keepalive timers, waited for in poll() # SKIP no trigger on sys_enter_poll or no tc ingress"
fi
in_ns $TC qdisc del dev sfd1 ingress 2>/dev/null
kill $klsrv 2>/dev/null
wait $klsrv 2>/dev/null

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

# Kernel sockets meeting a module stack's TCP listener and UDP socket on
# this host's own addresses (issue 15 item 1, issue 24): a listener on
# 127.0.0.1 (the stack's loopback, SLUICE_LOOPBACK=1: no filter there)
# or on 0.0.0.0 (the module's filter and its port reservation, a kernel
# socket bound there) needs a kernel twin for a kernel client on
# 127.0.0.1 or on the device's address (both the kernel's loopback) to
# reach it; so does a UDP socket on 0.0.0.0 for a kernel sender, and for
# its own datagrams to a kernel socket to come from its address.  Each
# case runs twin_echo on the kernel alone first, then with one side under
# sluice run on the stack; the lines (ports aside) must be the same, and
# the Sluice side's socket a module socket fd.
tw_pre() { # 0: the kernel; 1: sluice run; L: sluice run with the stack's loopback
	case $1 in
	1) echo "env SLUICE_UDP=1 sluice run --stack $ST --ifname sfd0 --" ;;
	L) echo "env SLUICE_UDP=1 SLUICE_LOOPBACK=1 sluice run --stack $ST --ifname sfd0 --" ;;
	esac
}
# beside PFX PROG [ARG...]: PROG on the kernel, then under sluice run on
# the stack's loopback, 30 s each: /tmp/PFX.kernel and /tmp/PFX.sluice,
# both printed, their exits in bk and bs.  same_lines PFX: the two
# outputs' lines, comments left out, are the same.
beside() {
	bp=$1
	shift
	timeout 30 "$@" >"/tmp/$bp.kernel" 2>&1
	bk=$?
	timeout 30 $(tw_pre L) "$@" >"/tmp/$bp.sluice" 2>&1
	bs=$?
	sed 's/^/#   kernel: /' "/tmp/$bp.kernel"
	sed 's/^/#   sluice: /' "/tmp/$bp.sluice"
}
same_lines() {
	grep -v '^#' "/tmp/$1.kernel" >"/tmp/$1.k.n"
	grep -v '^#' "/tmp/$1.sluice" >"/tmp/$1.s.n"
	diff "/tmp/$1.k.n" "/tmp/$1.s.n" >/dev/null
}
# sides_log PFX ROLE...: each ROLE's output (/tmp/PFX-ROLE.SIDE) and
# stderr (/tmp/PFX-ROLEe.SIDE), kernel then sluice, as TAP comments.
sides_log() {
	pfx=$1
	shift
	for f in "$@"; do
		for side in kernel sluice; do
			sed "s/^/#   $side $f: /" /tmp/$pfx-$f.$side
			sed "s/^/#   $side $f stderr: /" /tmp/$pfx-${f}e.$side
		done
	done
}
# twin_case DESC SERVER-SIDE CLIENT-SIDE PORT SMODE SADDR SARG CMODE CADDR CARG
twin_case() {
	# (Not d: check() sets it.)
	twd=$1 sside=$2 cside=$3 tp=$4
	for side in kernel sluice; do
		spre="" cpre=""
		[ $side = sluice ] && spre=$(tw_pre $sside) cpre=$(tw_pre $cside)
		p=$tp
		[ $side = sluice ] && p=$((tp + 1))
		# The last case's output goes first: the redirection below is
		# made in the background job, and wait_ready_word could read
		# that case's "ready" before it (a loaded guest: the client
		# connected before this server listened, refused).
		rm -f /tmp/tw-s.$side
		timeout 60 $spre twin_echo $5 $6 $p $7 >/tmp/tw-s.$side 2>/tmp/tw-se.$side &
		tws=$!
		wait_ready_word /tmp/tw-s.$side
		timeout 40 $cpre twin_echo $8 $9 $p ${10} >/tmp/tw-c.$side 2>/tmp/tw-ce.$side
		twc=$?
		wait $tws
		twr=$?
		echo "$twr $twc" >/tmp/tw-rc.$side
		for f in s c; do
			sed "s/:$p\$/:PORT/; s/:$p /:PORT /" /tmp/tw-$f.$side | grep -v '^#' >/tmp/tw-$f.$side.n
		done
	done
	sides_log tw s c
	check "$twd: on the kernel alone, every line ok (exit $(cat /tmp/tw-rc.kernel))" \
		sh -c "test '$(cat /tmp/tw-rc.kernel)' = '0 0' && ! grep -q '^not ok' /tmp/tw-s.kernel /tmp/tw-c.kernel"
	check "$twd: with Sluice, every line ok (exit $(cat /tmp/tw-rc.sluice))" \
		sh -c "test '$(cat /tmp/tw-rc.sluice)' = '0 0' && ! grep -q '^not ok' /tmp/tw-s.sluice /tmp/tw-c.sluice"
	check "$twd: ... the same lines as on the kernel alone" \
		sh -c "diff /tmp/tw-s.kernel.n /tmp/tw-s.sluice.n >/dev/null && diff /tmp/tw-c.kernel.n /tmp/tw-c.sluice.n >/dev/null"
	# The Sluice side is the stack's (a module socket fd), not a kernel
	# socket it fell back to; but a fresh TCP socket that connects to a
	# kernel listener becomes a kernel socket, by design (kernel peers,
	# lib/preload/README.md), on the host path too.
	if [ "$8" = tclient ] && [ "$sside" = 0 ]; then
		echo "# $twd: the client's socket: $(sed -n 's/^# client fd //p' /tmp/tw-c.sluice) (kernel peers)"
	else
		f=s
		[ "$sside" = 0 ] && f=c
		check "$twd: ... the Sluice side's socket is a module socket fd" \
			grep -q '^# .*fd anon_inode:\[sluice-sock\]$' /tmp/tw-$f.sluice
	fi
}
twin_case "kernel client -> module stack TCP listener on 127.0.0.1" L 0 7320 \
	tserve 127.0.0.1 30 tclient 127.0.0.1 300000
twin_case "kernel client on 127.0.0.1 -> module stack TCP listener on 0.0.0.0" 1 0 7322 \
	tserve 0.0.0.0 30 tclient 127.0.0.1 300000
twin_case "kernel client on the device's address -> module stack TCP listener on 0.0.0.0" 1 0 7324 \
	tserve 0.0.0.0 30 tclient $S 300000
twin_case "kernel UDP on 127.0.0.1 -> module stack UDP socket on 0.0.0.0 -> back" 1 0 7326 \
	userve 0.0.0.0 "5 20" uclient 127.0.0.1 5
twin_case "module stack TCP client (stack loopback) -> kernel listener on 127.0.0.1" 0 L 7328 \
	tserve 127.0.0.1 30 tclient 127.0.0.1 300000
twin_case "module stack TCP client -> kernel listener on 0.0.0.0, at the device's address" 0 1 7330 \
	tserve 0.0.0.0 30 tclient $S 300000
twin_case "module stack UDP on 0.0.0.0 -> kernel UDP on 0.0.0.0 at 127.0.0.1 -> back" 0 1 7332 \
	userve 0.0.0.0 "5 20" uclient 127.0.0.1 5
twin_case "module stack UDP on 0.0.0.0 (stack loopback) -> kernel UDP on 127.0.0.1 -> back" 0 L 7334 \
	userve 127.0.0.1 "5 20" uclient 127.0.0.1 5

# Port reservations (issue 15 item 1): a socket under sluice run on the
# stack, bound to 0.0.0.0 or [::] (the module's filter holds its port),
# and a kernel socket on one port, either first: the second's answers
# must be those between two kernel sockets (each row first on the kernel
# alone, then as said), the family, IPV6_V6ONLY, SO_REUSEADDR and
# SO_REUSEPORT (set before bind()) of both counting as there; "nobody": a
# kernel socket of uid 65534.
SETPRIV=/opt/sluice/util-linux/setpriv
rs_pre() {
	case $1 in
	sluice) echo "env SLUICE_UDP=1 sluice run --stack $ST --ifname sfd0 --" ;;
	nobody) echo "$SETPRIV --reuid=65534 --regid=65534 --clear-groups" ;;
	esac
}
rs_wait() { # until FILE has WORD, 20 s at most
	i=0
	while [ $i -lt 200 ] && ! grep -q "$2" "$1" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
}
# resv_row DESC FIRST SECOND PORT "TYPE FAM ADDR OPTS LISTEN" "SECOND'S ARGS"
# SECOND'S ARGS: the same five, or "connect FAM ADDR" (a TCP connect()).
resv_row() {
	rd=$1 rf=$2 rsec=$3 rp=$4 fa=$5 sa=$6
	if [ "$rsec" = nobody ] && [ ! -x "$SETPRIV" ]; then
		tap ok "$rd # SKIP no setpriv in the guest"
		return
	fi
	for side in kernel sluice; do
		p=$rp fpre="" spre=""
		[ "$rsec" = nobody ] && spre=$(rs_pre nobody)
		if [ $side = sluice ]; then
			p=$((rp + 1)) fpre=$(rs_pre "$rf") spre=$(rs_pre "$rsec")
		fi
		rm -f /tmp/rs-hold /tmp/rs-f.$side /tmp/rs-fe.$side
		mkfifo /tmp/rs-hold
		set -- $fa
		timeout 40 $fpre resv_hold hold "$1" "$2" "$3" $p "$4" "$5" \
			</tmp/rs-hold >/tmp/rs-f.$side 2>/tmp/rs-fe.$side &
		rsf=$!
		exec 9>/tmp/rs-hold
		rs_wait /tmp/rs-fe.$side 'resv_hold: fd'
		set -- $sa
		if [ "$1" = connect ]; then
			timeout 20 $spre resv_hold connect "$2" "$3" $p >/tmp/rs-s.$side 2>/tmp/rs-se.$side
		else
			timeout 20 $spre resv_hold hold "$1" "$2" "$3" $p "$4" "$5" \
				</dev/null >/tmp/rs-s.$side 2>/tmp/rs-se.$side
		fi
		exec 9>&-
		wait $rsf
	done
	sides_log rs f s
	check "$rd: '$(tr '\n' ' ' </tmp/rs-s.sluice)' as between two kernel sockets ('$(tr '\n' ' ' </tmp/rs-s.kernel)')" \
		sh -c "test -s /tmp/rs-s.kernel && diff /tmp/rs-f.kernel /tmp/rs-f.sluice >/dev/null && diff /tmp/rs-s.kernel /tmp/rs-s.sluice >/dev/null"
	for f in f s; do
		w=$rf
		[ $f = s ] && w=$rsec
		[ "$w" = sluice ] || continue
		check "$rd: ... the $([ $f = f ] && echo first || echo second) a module socket fd" \
			grep -q 'fd anon_inode:\[sluice-sock\]$' /tmp/rs-${f}e.sluice
	done
}
# Families (item 1.1): the reservation is the program's own socket.
resv_row "stack AF_INET6 listener on [::]; kernel AF_INET6 IPV6_V6ONLY bind on [::]" sluice kernel 7400 \
	"tcp 6 :: none 1" "tcp 6 :: v6only 0"
resv_row "kernel AF_INET6 IPV6_V6ONLY listener on [::]; stack AF_INET6 listener on [::]" kernel sluice 7402 \
	"tcp 6 :: v6only 1" "tcp 6 :: none 1"
resv_row "stack AF_INET6 IPV6_V6ONLY listener on [::]; kernel AF_INET listener on 0.0.0.0" sluice kernel 7404 \
	"tcp 6 :: v6only 1" "tcp 4 0.0.0.0 none 1"
resv_row "stack AF_INET6 UDP on [::]; kernel AF_INET6 IPV6_V6ONLY UDP on [::]" sluice kernel 7406 \
	"udp 6 :: none 0" "udp 6 :: v6only 0"
resv_row "stack AF_INET6 listener on [::]; a kernel client on ::1" sluice kernel 7408 \
	"tcp 6 :: none 1" "connect 6 ::1"
# SO_REUSEPORT (item 1.2), the same user's only (the stack's socket
# first: its options reached the reservation after its bind before, as
# they do its twin; the guards: another user, no option).
resv_row "kernel SO_REUSEPORT listener; stack SO_REUSEPORT listener" kernel sluice 7410 \
	"tcp 4 0.0.0.0 reuseport 1" "tcp 4 0.0.0.0 reuseport 1"
resv_row "kernel SO_REUSEPORT UDP; stack SO_REUSEPORT UDP" kernel sluice 7412 \
	"udp 4 0.0.0.0 reuseport 0" "udp 4 0.0.0.0 reuseport 0"
resv_row "stack AF_INET6 SO_REUSEPORT listener on [::]; kernel AF_INET SO_REUSEPORT listener" sluice kernel 7414 \
	"tcp 6 :: reuseport 1" "tcp 4 0.0.0.0 reuseport 1"
resv_row "stack SO_REUSEPORT listener; kernel SO_REUSEPORT listener of another user" sluice nobody 7416 \
	"tcp 4 0.0.0.0 reuseport 1" "tcp 4 0.0.0.0 reuseport 1"
resv_row "stack SO_REUSEPORT listener; kernel listener without it" sluice kernel 7418 \
	"tcp 4 0.0.0.0 reuseport 1" "tcp 4 0.0.0.0 none 1"
# SO_REUSEADDR set before bind() (item 1.3).
resv_row "kernel SO_REUSEADDR socket bound; stack SO_REUSEADDR listener" kernel sluice 7420 \
	"tcp 4 0.0.0.0 reuseaddr 0" "tcp 4 0.0.0.0 reuseaddr 1"
resv_row "kernel SO_REUSEADDR UDP; stack SO_REUSEADDR UDP" kernel sluice 7422 \
	"udp 4 0.0.0.0 reuseaddr 0" "udp 4 0.0.0.0 reuseaddr 0"
# IPv6 (issue 20): a stack socket on the device's IPv6 address (an IPv6
# filter of that address, the program's socket its reservation) or on
# [::], IPV6_V6ONLY or dual-stack, against kernel sockets of both
# families.
resv_row "stack AF_INET6 listener on [$S6]; kernel AF_INET6 IPV6_V6ONLY bind on [::]" sluice kernel 7460 \
	"tcp 6 $S6 none 1" "tcp 6 :: v6only 0"
resv_row "kernel AF_INET6 listener on [$S6]; stack AF_INET6 listener on [::]" kernel sluice 7462 \
	"tcp 6 $S6 none 1" "tcp 6 :: none 1"
resv_row "stack AF_INET6 listener on [$S6]; kernel AF_INET listener on 0.0.0.0" sluice kernel 7464 \
	"tcp 6 $S6 none 1" "tcp 4 0.0.0.0 none 1"
resv_row "stack AF_INET6 SO_REUSEPORT listener on [$S6]; kernel AF_INET6 SO_REUSEPORT listener on [::]" sluice kernel 7466 \
	"tcp 6 $S6 reuseport 1" "tcp 6 :: reuseport 1"
resv_row "stack AF_INET6 IPV6_V6ONLY UDP on [::]; kernel AF_INET UDP on 0.0.0.0" sluice kernel 7468 \
	"udp 6 :: v6only 0" "udp 4 0.0.0.0 none 0"
resv_row "kernel AF_INET6 UDP on [::]; stack AF_INET6 UDP on [$S6]" kernel sluice 7470 \
	"udp 6 :: none 0" "udp 6 $S6 none 0"
# The device's packets to a port a stack socket shares with a kernel
# socket (issue 15): the module's filter claims the port, but on a port
# the reservation shares (SO_REUSEADDR, SO_REUSEPORT) it asks the
# kernel's own lookup and passes to the kernel what the kernel would give
# a kernel socket: an SO_REUSEPORT group's share of new connections and
# datagrams (the group's hash), a kernel connection's segments, UDP's
# choice between SO_REUSEADDR sockets.  share_rx serve on the port twice
# (tags 1 and 2, in that order), share_rx clients in the peer namespace
# from fixed source ports (TCP ends each with a reset: no TIME-WAIT), so
# the kernel alone and then one side under sluice run get the same
# tuples on the same port: each must be answered by the same socket.
SR_N=24
sr_pre() { [ "$1" = sluice ] && rs_pre sluice; }
# share_split DESC TYPE OPTS FIRST SECOND PORT SPORT SPLIT [SADDR CADDR]
#   FIRST, SECOND: kernel or sluice (under sluice run on the stack, the
#   kernel run has both on the kernel); SPLIT 1: the kernel alone must
#   give each some, 0: it gives all to one; the servers on SADDR
#   (0.0.0.0), the clients to CADDR ($S).
share_split() {
	shd=$1 sty=$2 sopt=$3 s1=$4 s2=$5 sp=$6 ssp=$7 ssplit=$8
	ssa=${9:-0.0.0.0} sca=${10:-$S}
	for side in kernel sluice; do
		pre1="" pre2=""
		[ $side = sluice ] && pre1=$(sr_pre "$s1") pre2=$(sr_pre "$s2")
		rm -f /tmp/sh-hold1 /tmp/sh-hold2 /tmp/sh-1.$side /tmp/sh-2.$side
		mkfifo /tmp/sh-hold1 /tmp/sh-hold2
		timeout 100 $pre1 share_rx serve $sty $ssa $sp $sopt 1 \
			</tmp/sh-hold1 >/tmp/sh-1.$side 2>/tmp/sh-1e.$side &
		sh1=$!
		exec 7>/tmp/sh-hold1
		rs_wait /tmp/sh-1.$side 'ready\|error'
		timeout 100 $pre2 share_rx serve $sty $ssa $sp $sopt 2 \
			</tmp/sh-hold2 >/tmp/sh-2.$side 2>/tmp/sh-2e.$side &
		sh2=$!
		exec 8>/tmp/sh-hold2
		rs_wait /tmp/sh-2.$side 'ready\|error'
		in_ns timeout 90 share_rx clients $sty $sca $sp $ssp $SR_N \
			>/tmp/sh-c.$side 2>/tmp/sh-ce.$side
		exec 7>&- 8>&-
		wait $sh1 $sh2
	done
	sides_log sh 1 2
	for side in kernel sluice; do
		echo "#   $side: answered by $(cut -d' ' -f2 /tmp/sh-c.$side | sort | uniq -c | tr -s ' \n' ' ')"
	done
	if [ "$ssplit" = 1 ]; then
		check "$shd: on the kernel alone, all $SR_N answered, by both" \
			sh -c "[ \$(grep -c ' [12]\$' /tmp/sh-c.kernel) = $SR_N ] && grep -q ' 1\$' /tmp/sh-c.kernel && grep -q ' 2\$' /tmp/sh-c.kernel"
	else
		check "$shd: on the kernel alone, all $SR_N answered" \
			sh -c "[ \$(grep -c ' [12]\$' /tmp/sh-c.kernel) = $SR_N ]"
	fi
	check "$shd: with Sluice, each by the socket the kernel alone chose" \
		diff /tmp/sh-c.kernel /tmp/sh-c.sluice
	for f in 1 2; do
		w=$s1
		[ $f = 2 ] && w=$s2
		[ "$w" = sluice ] || continue
		check "$shd: ... socket $f a module socket fd, its connections too ($(cat /tmp/sh-$f.sluice | tr '\n' ' '))" \
			sh -c "grep -q 'fd anon_inode:\[sluice-sock\]\$' /tmp/sh-${f}e.sluice && grep -q 'kernel 0\$' /tmp/sh-$f.sluice"
	done
}
share_split "TCP SO_REUSEPORT listeners: the stack's first, a kernel one second" tcp reuseport sluice kernel 7430 41000 1
share_split "TCP SO_REUSEPORT listeners: a kernel one first, the stack's second" tcp reuseport kernel sluice 7431 41100 1
share_split "UDP SO_REUSEPORT: the stack's first, a kernel one second" udp reuseport sluice kernel 7432 41200 1
share_split "UDP SO_REUSEADDR: the stack's first, a kernel one second (the later bound gets unicast)" udp reuseaddr sluice kernel 7433 41300 0
share_split "UDP SO_REUSEADDR: a kernel one first, the stack's second" udp reuseaddr kernel sluice 7434 41400 0
# Two of the stack's SO_REUSEPORT listeners (two processes): every
# connection the stack's (the second's kernel twin is named to the module
# as the stack's: a connection the group's hash gives it is not passed to
# the kernel, where the program would accept it as a kernel socket);
# which of the two takes it is the stack's choice.
# share_stack2 DESC SADDR CADDR PORT SPORT
share_stack2() {
for side in kernel sluice; do
	pre=""
	[ $side = sluice ] && pre=$(rs_pre sluice)
	rm -f /tmp/sh-hold1 /tmp/sh-hold2 /tmp/sh-1.$side /tmp/sh-2.$side
	mkfifo /tmp/sh-hold1 /tmp/sh-hold2
	timeout 100 $pre share_rx serve tcp $2 $4 reuseport 1 \
		</tmp/sh-hold1 >/tmp/sh-1.$side 2>/tmp/sh-1e.$side &
	sh1=$!
	exec 7>/tmp/sh-hold1
	rs_wait /tmp/sh-1.$side 'ready\|error'
	timeout 100 $pre share_rx serve tcp $2 $4 reuseport 2 \
		</tmp/sh-hold2 >/tmp/sh-2.$side 2>/tmp/sh-2e.$side &
	sh2=$!
	exec 8>/tmp/sh-hold2
	rs_wait /tmp/sh-2.$side 'ready\|error'
	in_ns timeout 90 share_rx clients tcp $3 $4 $5 $SR_N >/tmp/sh-c.$side 2>/tmp/sh-ce.$side
	exec 7>&- 8>&-
	wait $sh1 $sh2
done
sides_log sh 1 2
for side in kernel sluice; do
	echo "#   $side: answered by $(cut -d' ' -f2 /tmp/sh-c.$side | sort | uniq -c | tr -s ' \n' ' ')"
done
check "$1: all $SR_N answered, on the kernel alone and with Sluice" \
	sh -c "[ \$(grep -c ' [12]\$' /tmp/sh-c.kernel) = $SR_N ] && [ \$(grep -c ' [12]\$' /tmp/sh-c.sluice) = $SR_N ]"
check "$1: ... every connection a module socket fd ($(cat /tmp/sh-1.sluice /tmp/sh-2.sluice | tr '\n' ' '))" \
	sh -c "grep -q 'kernel 0\$' /tmp/sh-1.sluice && grep -q 'kernel 0\$' /tmp/sh-2.sluice"
}
share_stack2 "two stack SO_REUSEPORT listeners" 0.0.0.0 $S 7435 41500
# IPv6 (issue 20): the same rows over IPv6 to sockets on [::] (dual-stack,
# IPV6_V6ONLY for one), the module asking the kernel's IPv6 lookup
# (__inet6_lookup_established(), inet6_lookup_listener(),
# udp6_lib_lookup()); main's module gave every IPv6 packet to the stack.
share_split "IPv6: TCP SO_REUSEPORT listeners on [::]: the stack's first, a kernel one second" \
	tcp reuseport sluice kernel 7450 41600 1 :: $S6
share_split "IPv6: TCP SO_REUSEPORT listeners on [::]: a kernel one first, the stack's second" \
	tcp reuseport kernel sluice 7451 41700 1 :: $S6
share_split "IPv6: UDP SO_REUSEPORT IPV6_V6ONLY on [::]: the stack's first, a kernel one second" \
	udp reuseport,v6only sluice kernel 7452 41800 1 :: $S6
share_split "IPv6: UDP SO_REUSEADDR on [::]: the stack's first, a kernel one second (the later bound gets unicast)" \
	udp reuseaddr sluice kernel 7453 41900 0 :: $S6
share_stack2 "IPv6: two stack SO_REUSEPORT listeners on [::]" :: $S6 7454 42000
# A kernel socket's connection from a port (SO_REUSEADDR, to an echo
# server in the peer namespace), then a listener on that port
# (SO_REUSEADDR: Linux lets it listen beside a connection): the
# connection's segments from the device are the kernel's, before and
# after (the module finds the connection in the port's bind bucket when
# the stack's filter is added, and asks the kernel's established table
# for every segment to the port from then on).
in_ns timeout 100 kpeer serve 7440 90 >/tmp/se-peer.log 2>&1 &
sepeer=$!
sleep 1
for side in kernel sluice; do
	p=7441
	[ $side = sluice ] && p=7442
	pre=""
	[ $side = sluice ] && pre=$(rs_pre sluice)
	rm -f /tmp/se-go /tmp/se-hold /tmp/se-k.$side /tmp/se-s.$side
	mkfifo /tmp/se-go /tmp/se-hold
	timeout 60 share_rx kconn $K 7440 $p </tmp/se-go >/tmp/se-k.$side 2>/tmp/se-ke.$side &
	sek=$!
	exec 7>/tmp/se-go
	rs_wait /tmp/se-k.$side 'connected\|error'
	timeout 60 $pre share_rx serve tcp 0.0.0.0 $p reuseaddr 1 \
		</tmp/se-hold >/tmp/se-s.$side 2>/tmp/se-se.$side &
	ses=$!
	exec 8>/tmp/se-hold
	rs_wait /tmp/se-s.$side 'ready\|error'
	echo go >&7
	exec 7>&-
	wait $sek
	exec 8>&-
	wait $ses
done
kill $sepeer 2>/dev/null
wait $sepeer 2>/dev/null
sides_log se k s
check "a kernel connection from a port, then a listener there: on the kernel alone, its echoes come back" \
	sh -c "[ \$(grep -c '^echo ok\$' /tmp/se-k.kernel) = 3 ] && grep -q '^ready\$' /tmp/se-s.kernel"
check "a kernel connection from a port, then a stack listener there: the same lines" \
	sh -c "diff /tmp/se-k.kernel /tmp/se-k.sluice >/dev/null && diff /tmp/se-s.kernel /tmp/se-s.sluice >/dev/null"
check "... the listener a module socket fd" grep -q 'fd anon_inode:\[sluice-sock\]$' /tmp/se-se.sluice
# close() of a module socket fd while another thread of the program is
# blocked in recv() or send() on it (issue 24 item 2; gVisor's
# ClosedReadBlockingSocket, ClosedWriteBlockingSocket): as on Linux the
# call goes on to its timeout or its data; the module ends a stack socket
# with its last socket fd, so the library keeps a copy of the fd for the
# call (lib/preload/fdtable.c, kfd_keep()).  close_blocked on the kernel,
# then under sluice run on the stack's loopback: the same lines.
beside cb close_blocked
check "close under a blocked call: on the kernel, exit $bk, 4 lines" \
	sh -c "[ $bk = 0 ] && [ \$(grep -vc '^#' /tmp/cb.kernel) = 4 ]"
check "close under a blocked call: with Sluice (exit $bs), the kernel's lines" same_lines cb
check "close under a blocked call: ... on module socket fds" \
	grep -q '^# recv_timeout fd anon_inode:\[sluice-sock\]$' /tmp/cb.sluice
# A UDP socket that never called bind() (issue 24 item 2; gVisor's
# SendToAddressOtherThanConnected/1): its port comes from connect() or its
# first send, and with it a kernel twin, as a bind() to 0.0.0.0 on the
# module's stack has (preload: pl_dgram_autobind()), so an AF_INET6 socket
# connected to [::1] sends on to [::] and [::1] (IPv6 itself: the twin
# sends it) as on Linux, where it had none and said ENETUNREACH.  And one
# bound to [::] that connects to [::] (gVisor's DualStackSocketTest.
# AddressOperations/V6AnyBind*): it becomes the kernel's, its twin, where
# a module socket fd was refused that (pl_dgram_v6_handoff(), ENETUNREACH).
beside ua udp_autobind
check "UDP without bind(): on the kernel, exit $bk, every sendto sent" \
	sh -c "[ $bk = 0 ] && [ \$(grep -c ': 512\$' /tmp/ua.kernel) = 4 ]"
check "UDP without bind(): with Sluice (exit $bs), the kernel's lines" same_lines ua
check "UDP without bind(): ... on module socket fds" \
	grep -q '^# v6_connect_other fd anon_inode:\[sluice-sock\]$' /tmp/ua.sluice
# The last options of issue 15 (tests/preload/tcpopts.c; host
# test_conform_opts): TCP_NOTSENT_LOWAT with EPOLLOUT following the unsent
# bytes through the module's socket fds, SO_TIMESTAMPNS, TCP_FASTOPEN and
# TCP_FASTOPEN_CONNECT, TCP_ULP, on connections with both ends in the
# stack.  Every line the kernel's but two the stack cannot take there
# (lib/preload/README.md, "Options a stack connection cannot take"):
# SO_ATTACH_FILTER is ENOPROTOOPT, and TCP_ULP "tls" is the kernel's
# answer where it has no tls, else ENOPROTOOPT.
beside to tcpopts
grep -v -e '^attach_filter: ' -e '^ulp_tls: ' /tmp/to.kernel >/tmp/to2.kernel
grep -v -e '^attach_filter: ' -e '^ulp_tls: ' /tmp/to.sluice >/tmp/to2.sluice
check "issue 15's last options: on the kernel, exit $bk" [ $bk = 0 ]
check "... with Sluice (exit $bs), the kernel's lines" same_lines to2
check "... SO_ATTACH_FILTER refused in the stack" grep -q '^attach_filter: ENOPROTOOPT$' /tmp/to.sluice
to_k=$(grep '^ulp_tls' /tmp/to.kernel) to_s=$(grep '^ulp_tls' /tmp/to.sluice)
[ "$to_k" = "ulp_tls: 0" ] && to_want="ulp_tls: ENOPROTOOPT" || to_want=$to_k
check "... TCP_ULP tls: the kernel's $to_k, the stack's $to_s" [ "$to_s" = "$to_want" ]
check "... every connection end a module socket fd" \
	awk '/^# stack ends:/ { ok = ($4 == $6 && $4 > 0) } END { exit !ok }' /tmp/to.sluice
# A socket's identities (issue 24; conform.c, check_sock_ids()):
# SO_COOKIE, SO_NETNS_COOKIE and SO_INCOMING_CPU answered as the kernel
# answers them, where they said ENOPROTOOPT and setting SO_INCOMING_CPU
# made the socket the kernel's.
beside si conform ids
check "socket identities: on the kernel, exit $bk, 15 lines" \
	sh -c "[ $bk = 0 ] && [ \$(grep -vc '^#' /tmp/si.kernel) = 15 ]"
check "socket identities: with Sluice (exit $bs), the kernel's lines" same_lines si
check "socket identities: ... on module socket fds" grep -q '^# ids fd sluice$' /tmp/si.sluice
# Hand-overs to the kernel the program must not see (issue 15; preload:
# become_kernel(), pl_epoll_to_kernel()): tests/preload/handover's stack
# sockets connect or send where only the kernel is (its own kernel
# listener and UDP socket on 127.0.0.1) and become kernel sockets.  On a
# module's stack the kernel's epoll drops a module socket fd's item when
# dup3() replaces the fd: each set that held it must hold the kernel
# socket with the program's events and data, a fired EPOLLONESHOT item
# disarmed as it was; a socket with a dup() moves whole (both fds one
# kernel socket), where the dup stayed the stack's (a second socket) or
# the hand-over was refused.  And another process that holds the module
# socket fd (a fork's child, one given it by SCM_RIGHTS) follows the
# hand-over at its next call (lib/preload/README.md, "Other processes"),
# where it was left on the stack's socket (ENOTCONN, EPIPE), also after
# the process that handed it over _exit()ed or was SIGKILLed ("The
# carrier": the module socket file keeps the kernel socket).
beside ho handover
check "hand-overs: on the kernel, exit $bk, 70 lines" \
	sh -c "[ $bk = 0 ] && [ \$(grep -vc '^#' /tmp/ho.kernel) = 70 ]"
check "hand-overs: with Sluice (exit $bs), the kernel's lines (epoll items kept, every dup moved, other processes follow)" \
	same_lines ho
check "hand-overs: ... from module socket fds (9 of 9), each fd a kernel socket after (17 of 17)" \
	sh -c "[ \$(grep -c '^# [a-z]* before fd stack anon_inode:\[sluice-sock\]\$' /tmp/ho.sluice) = 9 ] &&
	       [ \$(grep -c '^# .* after.* fd kernel socket:' /tmp/ho.sluice) = 17 ]"
check "hand-overs: ... a forked child and an SCM_RIGHTS receiver find it connected and read the peer's bytes" \
	sh -c "grep -qx 'fork other: recv 2 k1' /tmp/ho.sluice && grep -qx 'scm other: recv 2 k1' /tmp/ho.sluice"
check "hand-overs: ... also when the process that handed it over _exit()ed or was SIGKILLed first (the module socket fd keeps the kernel socket: SOCK_KEEP)" \
	sh -c "grep -qx 'exit other: recv 2 k1' /tmp/ho.sluice && grep -qx 'kill other: recv 2 k1' /tmp/ho.sluice &&
	       grep -qx \"exit peer's end 0\" /tmp/ho.sluice && grep -qx \"kill peer's end 0\" /tmp/ho.sluice"

# The last program goes (SIGTERM: no exit handlers); the helper may hold
# the stack on for connections in TIME-WAIT, but no socket fd is left.
kill "$(prog_pid idle)" 2>/dev/null
wait $idle 2>/dev/null
i=0
while [ $i -lt 100 ] && [ "$(sysv sockfds)" != 0 ] && [ -e /sys/class/misc/sluice/stacks/$ST ]; do
	sleep 0.1
	i=$((i + 1))
done
# (Or the stack gone with it, its helper too: one check, not a check or
# a test after it.)
check "the last program gone: no socket fd left (sockfds '$(sysv sockfds)')" \
	sh -c "[ '$(sysv sockfds)' = 0 ] || [ ! -e /sys/class/misc/sluice/stacks/$ST ]"
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
# stack's own loopback, counted in the kernel by tracefs hist triggers
# (each side: the process started and every process and thread it
# makes, as strace -f followed them, but without stopping a process at
# each call, which under TCG took minutes); (2,050 connections - 50) /
# 2,000 a side, the kernel's loopback beside them.  Counts are exact
# here, times are not: under TCG a spin is over before the peer has run,
# so waiting (futex, poll, sched_yield, and the SOCK_WAKE ioctl that
# wakes a poller: the kernel's own blocking calls wait and wake inside)
# is shown, not bounded, and so are the looks at a lock holder that
# seems slow (kill(pid, 0), its /proc stat), which is why the bound is
# the kernel's count and not the ioctl and close a connection that
# remain; and clock_gettime is a system call here (the guest's
# clocksource has no vDSO path; conn_churn reads the clock twice a
# connection on both paths), so it is left out of both counts.
# cc_srv: conn_churn's server mode (server, epserver); cc_tag: a suffix
# for the kept count files (/tmp/cc.PATH$cc_tag.SIDE.N).
cc_srv=server cc_tag=
churn_calls() { # PATH N PORT: "server-work server-wait client-work client-wait"
	pre=""
	[ "$1" = sluice ] && pre="env SLUICE_LOOPBACK=1 SLUICE_UDP=0 sluice run --stack $ST2 --ifname sfd0 --"
	rm -f /tmp/cc.ready /tmp/cc.pid.srv /tmp/cc.pid.cli
	# (A refused trigger: no figures, so the checks below fail.)
	[ "$hist" = on ] && hist_on clear || return
	# Each side's first process says its pid, then becomes the command.
	timeout 600 sh -c 'echo $$ >/tmp/cc.pid.srv; exec "$@"' sh \
		$pre conn_churn $cc_srv "$3" "$2" >/tmp/cc.ready 2>&1 &
	wait_ready_word /tmp/cc.ready
	timeout 600 sh -c 'echo $$ >/tmp/cc.pid.cli; exec "$@"' sh \
		$pre conn_churn client "$3" "$2" >/dev/null 2>&1
	wait
	cat $TR/events/raw_syscalls/sys_enter/hist >/tmp/cc.all
	cat $TR/events/syscalls/sys_enter_ioctl/hist >/tmp/cc.wait
	cat $TR/events/sched/sched_process_fork/hist >/tmp/cc.fork
	for f in srv cli; do
		side_calls "$(cat /tmp/cc.pid.$f)" >/tmp/cc.$f
		cp /tmp/cc.$f /tmp/cc.$1$cc_tag.$f.$2
	done
	echo "$(sum_calls /tmp/cc.srv) $(sum_calls /tmp/cc.cli)"
}
# side_calls ROOT-PID: "NUMBER NAME COUNT" for each system call made by
# ROOT-PID and its descendants (from /tmp/cc.fork), the module's
# SOCK_WAKE ioctls apart as number -1; "dropped" if a table was full.
side_calls() {
	# (No loop variable: sh has no locals, and the caller loops on f.)
	grep -q '^ *Dropped: [1-9]' /tmp/cc.all /tmp/cc.wait /tmp/cc.fork && echo "0 dropped 1"
	awk -v root="${1:-none}" '
		FILENAME != last { last = FILENAME; file++ }
		!/^\{/ { next }
		{ gsub(/[{}:,]|\[|\]/, " ") }
		file == 1 { pid[++n] = $2; name[n] = $4; nr[n] = $5; cnt[n] = $NF }
		file == 2 && $4 % 65536 == 46349 { waits[$2] += $NF }
		file == 3 { parent[$4] = $2 }
		END {
			for (i = 1; i <= n; i++) {
				p = pid[i]
				for (q = p; q != "" && q != root; q = parent[q])
					;
				if (q != root)
					continue
				c = cnt[i]
				if (nr[i] == 16 && !(p in seen)) {
					seen[p] = 1
					c -= waits[p]
					print -1, "ioctl(SOCK_WAKE)", waits[p] + 0
				}
				print nr[i], name[i], c
			}
		}' /tmp/cc.all /tmp/cc.wait /tmp/cc.fork
}
sum_calls() { # side_calls FILE: "work wait" (the clock left out)
	# Waiting: futex, poll, ppoll, sched_yield, the module's SOCK_WAKE,
	# and the spin's look at the run queue (lib/os/os.c: a pread of
	# /proc/loadavg at most once a millisecond a stack, before a spin;
	# nothing else on either path preads).  x86-64 numbers.
	awk '$2 == "dropped" { print "- -"; bad = 1; exit }
		$1 == 228 { next }
		$1 == -1 || $1 == 202 || $1 == 7 || $1 == 271 || $1 == 24 || $1 == 17 { wait += $3; next }
		{ work += $3 }
		END { if (!bad) print work + 0, wait + 0 }' "$1"
}
per_call() { # FILE-50 FILE-2050 (side_calls): each call's count a connection, if 0.005 or more
	awk 'FILENAME != last { last = FILENAME; file++ }
		$2 == "dropped" { next }
		{ c[$2] += file == 1 ? -$3 : $3 }
		END { for (k in c) if (c[k] >= 10 || c[k] <= -10) printf "%.3f %s\n", c[k] / 2000, k }' "$1" "$2" |
		sort -rn
}
per_conn() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-") print "-"; else printf "%.2f", (b - a) / 2000 }'; }
lt() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && m != "-" && x < m) }'; }
if [ "$hist" = none ]; then
	tap ok "module path: system calls a connection # SKIP no tracefs hist triggers (CONFIG_HIST_TRIGGERS) in this kernel"
elif ! command -v conn_churn >/dev/null; then
	tap ok "module path: system calls a connection # SKIP no conn_churn in the guest"
else
	t0=$(date +%s)
	set -- $(churn_calls kernel 50 7301) $(churn_calls kernel 2050 7302)
	ks=$(per_conn "$1" "$5") kc=$(per_conn "$3" "$7")
	# A process that holds the stack, so its counters can be read after.
	timeout 600 env SLUICE_UDP=0 sluice run --stack $ST2 --ifname sfd0 -- \
		sockfd_prog idle 590 >/tmp/idle2.out 2>&1 &
	idle2=$!
	wait_ready_word /tmp/idle2.out
	set -- $(churn_calls sluice 50 7303) $(churn_calls sluice 2050 7304)
	for p in kernel sluice; do
		for f in srv cli; do
			echo "# $p $f: calls a connection, (2,050 - 50) / 2,000:"
			per_call /tmp/cc.$p.$f.50 /tmp/cc.$p.$f.2050 | sed 's/^/#   /'
		done
	done
	ss=$(per_conn "$1" "$5") sw=$(per_conn "$2" "$6") sc=$(per_conn "$3" "$7") cw=$(per_conn "$4" "$8")
	echo "# system calls a connection besides waiting and the clock: kernel server $ks client $kc;" \
		"Sluice (socket fds) server $ss client $sc; waiting under TCG: server $sw client $cw" \
		"($(($(date +%s) - t0)) s counting)"
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
	# The socket cache (SLUICE_FEATURE_SOCK_CACHE): a socket's file is
	# parked at its close (SOCK_PARK, in place of close()) and bound to
	# the next socket (SOCK_REUSE, in place of SOCK_FD): no close(2) a
	# connection, and nearly every socket from the cache.
	cached=$(sluice dump $ST2 2>/dev/null | sed -n 's/^  sock_fd_cached *\([0-9]*\) .*/\1/p' | head -n 1)
	# A socket not from the cache would cost a keeper (fcntl F_DUPFD) at
	# its close, or a close(2) once the entries are all lent.
	one_call() { # SIDE NAME [TAG]: NAME's calls a connection on the Sluice side
		per_call /tmp/cc.sluice$3.$1.50 /tmp/cc.sluice$3.$1.2050 | awk -v n="$2" '$2 == n { print $1 }'
	}
	cl_s=$(one_call srv sys_close) cl_c=$(one_call cli sys_close)
	fc_s=$(one_call srv sys_fcntl) fc_c=$(one_call cli sys_fcntl)
	check "module path: the socket cache: no close(2) a connection (server ${cl_s:-0}, client ${cl_c:-0}), no keeper made (fcntl: server ${fc_s:-0}, client ${fc_c:-0}); ${cached:-0} of the 4,200 sockets from the cache" \
		awk -v s="${cl_s:-0}" -v c="${cl_c:-0}" -v fs="${fc_s:-0}" -v fc="${fc_c:-0}" -v n="${cached:-0}" \
			'BEGIN { exit !(s < 0.05 && c < 0.05 && fs < 0.05 && fc < 0.05 && n >= 4100) }'
	# The same with an epoll server (conn_churn epserver: the listener
	# and each connection in one level-triggered set, a connection closed
	# while in it, no EPOLL_CTL_DEL), where Onload refuses its cache.
	# Linux takes a file's items out of its sets at the file's end, and
	# the module parks no file that is in a set; so the library, when
	# no other fd or process can hold the file, takes its items out first
	# (one EPOLL_CTL_DEL a set), and the file is parked. Before, every
	# accepted socket's file ended at its close(2). The kernel's epoll
	# server beside it.
	cc_srv=epserver cc_tag=.ep
	set -- $(churn_calls kernel 50 7305) $(churn_calls kernel 2050 7306)
	eks=$(per_conn "$1" "$5") ekc=$(per_conn "$3" "$7")
	set -- $(churn_calls sluice 50 7307) $(churn_calls sluice 2050 7308)
	ess=$(per_conn "$1" "$5") esw=$(per_conn "$2" "$6") esc=$(per_conn "$3" "$7")
	cc_srv=server cc_tag=
	for p in kernel sluice; do
		echo "# $p epoll server: calls a connection, (2,050 - 50) / 2,000:"
		per_call /tmp/cc.$p.ep.srv.50 /tmp/cc.$p.ep.srv.2050 | sed 's/^/#   /'
	done
	cached2=$(sluice dump $ST2 2>/dev/null | sed -n 's/^  sock_fd_cached *\([0-9]*\) .*/\1/p' | head -n 1)
	ecl=$(one_call srv sys_close .ep) edel=$(one_call srv sys_epoll_ctl .ep)
	echo "# epoll server, system calls a connection besides waiting and the clock: kernel server $eks" \
		"client $ekc; Sluice server $ess client $esc (waiting under TCG: server $esw)"
	check "module path: an epoll server's closed sockets are parked: no close(2) a connection (${ecl:-0}), epoll_ctl ${edel:-0} (ADD and DEL); $((${cached2:-0} - ${cached:-0})) of its 4,200 sockets from the cache" \
		awk -v s="${ecl:-0}" -v n="$((${cached2:-0} - ${cached:-0}))" 'BEGIN { exit !(s < 0.05 && n >= 4100) }'
	# Shown, not bounded: the library's epoll_wait() on a set of socket
	# fds looks at the kernel's set with a zero timeout between looks at
	# the stack and sleeps in poll() on the stack fd (preload/epoll.c,
	# ep_wait_kfd()): 6.1 under TCG, 2026-12-07, the Sluice server 8.90
	# a connection (epoll_wait 3.08, ioctl 3.67: SOCK_REUSE, SOCK_PARK and
	# the stack fd's STACK_WAKE, epoll_ctl 2.00), the kernel's 7.01
	# (epoll_wait 2, accept4, epoll_ctl, read, write, close).
	kill "$(prog_pid idle)" 2>/dev/null
	# (Not a bare wait: the kernel's echo server runs on for its 180 s.)
	wait $idle2 2>/dev/null
	# Its helper waits out TIME-WAIT: end it, as above.
	hp=$(sluice dump $ST2 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	i=0
	while [ $i -lt 50 ] && [ -e /sys/class/misc/sluice/stacks/$ST2 ]; do sleep 0.1; i=$((i + 1)); done
	check "module path: ... and its stack goes with its helper (${hp:-no helper})" \
		[ ! -e /sys/class/misc/sluice/stacks/$ST2 ]
fi

# The socket cache's semantics on socket fds (issue 23 item 3):
# tests/preload/sockcache (lowest free numbers, /proc/self/fd, fstat,
# flags as asked, a fresh socket, dup, fork, epoll sets) on the kernel
# and under sluice run on a module stack (127.0.0.1 in it), the same
# lines; the stack's counter shows the cache was used.
ST3=sfdsc
if command -v sockcache >/dev/null; then
	timeout 300 env SLUICE_UDP=0 sluice run --stack $ST3 --ifname sfd0 -- \
		sockfd_prog idle 290 >/tmp/idle3.out 2>&1 &
	idle3=$!
	wait_ready_word /tmp/idle3.out
	timeout 120 sockcache >/tmp/sc.kernel 2>&1
	timeout 120 env SLUICE_LOOPBACK=1 SLUICE_UDP=0 sluice run --stack $ST3 --ifname sfd0 -- \
		sockcache >/tmp/sc.sluice 2>&1
	sed 's/^/# kernel: /' /tmp/sc.kernel
	sed 's/^/# sluice: /' /tmp/sc.sluice
	check "socket cache: sockcache on the kernel, all 9 cases" \
		test "$(grep -c ' ok$' /tmp/sc.kernel)" = 9
	check "socket cache: ... on module socket fds, the kernel's lines" cmp -s /tmp/sc.kernel /tmp/sc.sluice
	cached=$(sluice dump $ST3 2>/dev/null | sed -n 's/^  sock_fd_cached *\([0-9]*\) .*/\1/p' | head -n 1)
	check "socket cache: ... made from the cache (sock_fd_cached ${cached:-0})" test "${cached:-0}" -gt 100
	# A socket in an epoll set whose file a dup or a forked child holds
	# past the close: the item stays, as Linux keeps it with the file
	# (the library takes items out before a park only for a file no one
	# else can hold); the kernel's lines.
	timeout 120 sockcache epoll_held >/tmp/sch.kernel 2>&1
	timeout 120 env SLUICE_LOOPBACK=1 SLUICE_UDP=0 sluice run --stack $ST3 --ifname sfd0 -- \
		sockcache epoll_held >/tmp/sch.sluice 2>&1
	sed 's/^/# kernel: /' /tmp/sch.kernel
	sed 's/^/# sluice: /' /tmp/sch.sluice
	check "socket cache: a held socket's epoll item stays after its fd's close (dup, fork): the kernel's line" \
		sh -c 'grep -qx "epoll_held ok" /tmp/sch.kernel && cmp -s /tmp/sch.kernel /tmp/sch.sluice'
	cached=$(sluice dump $ST3 2>/dev/null | sed -n 's/^  sock_fd_cached *\([0-9]*\) .*/\1/p' | head -n 1)
	# Without it (SLUICE_SOCKET_CACHE=0: what a library does on a module
	# without SLUICE_FEATURE_SOCK_CACHE, SOCK_FD and close()), the same.
	timeout 120 env SLUICE_SOCKET_CACHE=0 SLUICE_LOOPBACK=1 SLUICE_UDP=0 \
		sluice run --stack $ST3 --ifname sfd0 -- sockcache >/tmp/sc.off 2>&1
	c2=$(sluice dump $ST3 2>/dev/null | sed -n 's/^  sock_fd_cached *\([0-9]*\) .*/\1/p' | head -n 1)
	check "socket cache: ... and without the cache, the kernel's lines, none from it (${cached:-0} -> ${c2:-0})" \
		sh -c "cmp -s /tmp/sc.kernel /tmp/sc.off && [ '${cached:-0}' = '${c2:-0}' ]"
	kill $idle3 2>/dev/null
	wait $idle3 2>/dev/null
	hp=$(sluice dump $ST3 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	i=0
	while [ $i -lt 50 ] && [ -e /sys/class/misc/sluice/stacks/$ST3 ]; do sleep 0.1; i=$((i + 1)); done
else
	tap ok "socket cache: sockcache on module socket fds # SKIP no sockcache in the guest"
fi

echo "1..$n"
exit $fail
