#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: live hand-off of a connection from a Sluice stack on the
# module's rings to the kernel (TCP repair), mid-stream, against a kernel
# peer in a network namespace.  Prints TAP.
#
#   VM root namespace                          netns sho-peer
#   +-----------------------------------+      +-------------------------+
#   | kernel: 10.81.0.1/24 on sho0       | veth | sho1 10.81.0.2/24       |
#   | Sluice stack "ho" on sho0 (kring): +======+ handoff_prog peer :71xx |
#   (tests/vm/netns.sh makes it)
#   |   handoff_prog client (sluice run) |      |   (kernel TCP)          |
#   +-----------------------------------+      +-------------------------+
#
# Each run moves 6 MiB each way, every byte checked at both ends; the peer
# stops reading for 1.5 s after it sent 48 KiB, so that at the hand-off the
# client has bytes unread and bytes unsent and unacknowledged in its stack.
PATH=/opt/sluice/bin:$PATH
NETNS_NS=sho-peer NETNS_DEV=sho0 NETNS_PEER=sho1 NETNS_S=10.81.0.1 NETNS_K=10.81.0.2
. /opt/sluice/bin/netns.sh
NS=$NETNS_NS
S=$NETNS_S
K=$NETNS_K
ST=ho
SUITE="live hand-off"
. /opt/sluice/bin/tap.sh
cleanup() {
	for p in $pp $sp $cp; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	netns_down
}
trap cleanup EXIT

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
[ $(( 0x${feat:-0} & 0x20e )) = $((0x20e)) ] || skip_all "module features 0x$feat lack kring, filters, ifinfo or handoff"

# This namespace's loopback too, as on any host: the CLOSE_WAIT hand-off
# gives the peer's FIN to the kernel socket through it.
$IP link set lo up
check "the peer namespace pings the device address (kernel)" netns_up
# IPv6 addresses before the stack reads the device's (the native IPv6
# rows); no DAD wait.
S6=fd81::1 K6=fd81::2
$IP -6 addr add $S6/64 dev sho0 nodad
in_ns $IP -6 addr add $K6/64 dev sho1 nodad

# run PORT LOG MODE CLIENT-PREFIX... : a peer on PORT, then the client;
# the client's exit status, the peer's in $prc.
run() {
	port=$1 log=$2 mode=$3
	shift 3
	rm -f /tmp/peer.$port
	timeout 150 $IP netns exec "$NS" handoff_prog ${PEER:-peer} "$port" $PEER_ARGS >/tmp/peer.$port 2>&1 &
	pp=$!
	wait_ready /tmp/peer.$port 100
	t0=$(cut -d" " -f1 /proc/uptime)
	"$@" ${CLIENT:-client} "${CADDR:-$K}" "$port" "$mode" >"$log" 2>&1
	rc=$?
	t1=$(cut -d" " -f1 /proc/uptime)
	wait $pp
	prc=$?
	pp=
	secs=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
	sed 's/^/#   /' "$log"
	sed 's/^/#   peer: /' /tmp/peer.$port
	return $rc
}
srun() { timeout 150 sluice run --stack $ST --ifname sho0 -- env SS_OUT=/tmp/ss.out handoff_prog "$@"; }
kern() { timeout 150 env SS_OUT=/tmp/ss-k.out handoff_prog "$@"; }
# The old behaviour at exec, kept as an option.
srun_keep() { timeout 150 sluice run --stack $ST --ifname sho0 -- env SLUICE_EXEC_HANDOFF=0 handoff_prog "$@"; }
# A second fd of the connection (handoff_prog's HO_DUP).
srun_dup() { timeout 150 sluice run --stack $ST --ifname sho0 -- env HO_DUP=1 handoff_prog "$@"; }
# srun_way WAY ARGS...: exec by WAY (handoff_prog's HO_EXEC).
srun_way() { w=$1; shift; timeout 150 sluice run --stack $ST --ifname sho0 -- env HO_EXEC=$w handoff_prog "$@"; }
SETPRIV=/opt/sluice/util-linux/setpriv
# wait_line FILE PATTERN: until FILE has a line matching PATTERN (30 s).
wait_line() {
	i=0
	while [ $i -lt 300 ] && ! grep -q "$2" "$1" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q "$2" "$1"
}

# The kernel alone, the same program: what the hand-off is measured against.
run 7101 /tmp/k.log handoff kern
check "kernel client: 6 MiB each way, checked at both ends (rc $rc, peer $prc, ${secs}s)" \
	test $rc = 0 -a $prc = 0
ksecs=$secs
kus=$(sed -n 's/^setsockopt took \([0-9]*\) us$/\1/p' /tmp/k.log)

# Under Sluice: SO_ATTACH_FILTER, which the stack does not have, mid-stream.
run 7102 /tmp/h.log handoff srun
check "sluice client: SO_ATTACH_FILTER mid-stream hands the connection to the kernel and the stream completes (rc $rc, peer $prc, ${secs}s; kernel ${ksecs}s)" \
	test $rc = 0 -a $prc = 0
hus=$(sed -n 's/^setsockopt took \([0-9]*\) us$/\1/p' /tmp/h.log)
echo "# the hand-off's setsockopt: ${hus} us (the kernel's own SO_ATTACH_FILTER: ${kus} us; QEMU TCG)"
check "... the socket was the stack's before (a module socket fd)" \
	grep -q '^before: sent [0-9]*, stack fd 1$' /tmp/h.log
sent=$(sed -n 's/^before: sent \([0-9]*\),.*/\1/p' /tmp/h.log)
check "... with bytes queued: the client had sent $sent bytes, more than the peer had read" \
	test "${sent:-0}" -gt 65536
check "... and is a kernel socket after, still blocking (SO_ATTACH_FILTER 0)" \
	grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/h.log
check "... an epoll set that held the fd reports it readable, with the program's data" \
	grep -q '^epoll after: 1 data 5eed in 1$' /tmp/h.log
check "... every byte arrived in order at the peer" grep -q "^peer ok rx 6291456 tx 6291456$" /tmp/peer.7102
check "... and at the client" grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/h.log

# Options as negotiated, on the kernel socket: what the peer's kernel
# socket says it agreed to (the stack's TCP_INFO leaves out timestamps and
# SACK in tcpi_options), the stack's window scales and MSS.
pflags=$(sed -n 's/^info peer: state [0-9]* options\(.*\) wscale [0-9]*,[0-9]* mss [0-9]*$/\1/p' /tmp/peer.7102)
aflags=$(sed -n 's/^info after: state [0-9]* options\(.*\) wscale [0-9]*,[0-9]* mss [0-9]*$/\1/p' /tmp/h.log)
bws=$(sed -n 's/^info before: .* wscale \([0-9]*,[0-9]*\) mss \([0-9]*\)$/\1 mss \2/p' /tmp/h.log)
aws=$(sed -n 's/^info after: .* wscale \([0-9]*,[0-9]*\) mss \([0-9]*\)$/\1 mss \2/p' /tmp/h.log)
check "... TCP_INFO options of the kernel socket are those the peer agreed to ('$aflags', peer '$pflags')" \
	test -n "$aflags" -a "$aflags" = "$pflags"
check "... window scales and MSS as in the stack (wscale $aws; stack $bws)" test -n "$aws" -a "$aws" = "$bws"
check "... ESTABLISHED in the kernel (TCP_INFO state 1)" grep -q '^info after: state 1 ' /tmp/h.log
if command -v ss >/dev/null; then
	sed 's/^/#   ss: /' /tmp/ss.out
	check "... ss -tin lists it in the kernel, ESTAB, with window scaling" \
		sh -c "grep -q '^ESTAB.*$S:[0-9]* *$K:7102' /tmp/ss.out && grep -q 'wscale:' /tmp/ss.out"
fi

# TCP_ULP "tls" mid-stream, 3 bytes as Python passes it (Linux reads no
# int for it; the stack said EINVAL, and no hand-off came): the kernel
# alone, then in the stack, handed off live and the kernel's tls module
# attached; the stream goes on (no crypto set: plain bytes).
export HO_OPT=ulp
run 7120 /tmp/ku.log handoff kern
check "kernel client: TCP_ULP tls mid-stream, 6 MiB each way checked (rc $rc, peer $prc)" \
	sh -c "[ $rc = 0 ] && [ $prc = 0 ] && grep -q '^TCP_ULP: 0 errno 0' /tmp/ku.log"
run 7121 /tmp/hu.log handoff srun
unset HO_OPT
check "sluice client: TCP_ULP tls mid-stream hands the connection to the kernel, which takes it; the stream completes (rc $rc, peer $prc)" \
	sh -c "[ $rc = 0 ] && [ $prc = 0 ] && grep -q '^TCP_ULP: 0 errno 0, stack fd 0, nonblock 0$' /tmp/hu.log"
check "... every byte checked at both ends" \
	sh -c "grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7121 &&
	       grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/hu.log"

# Another process holds the connection (a forked child, asleep in recv()
# when its parent sets the option): it switches to the kernel socket on
# its way back and finishes the stream (lib/preload/README.md, "Other
# processes"; before, it woke to the ended stack socket: 0, the end).
# The peer pauses 3 s, so that the child sleeps through the hand-off.
export HO_PAUSE_MS=3000
run 7130 /tmp/fk-k.log fork kern
check "kernel: a forked child asleep in recv() while its parent sets SO_ATTACH_FILTER finishes the stream (rc $rc, peer $prc, ${secs}s)" \
	test $rc = 0 -a $prc = 0
fksecs=$secs
run 7131 /tmp/fk.log fork srun
unset HO_PAUSE_MS
check "sluice: the same; the parent's option hands the connection off live, the child follows it (rc $rc, peer $prc, ${secs}s; kernel ${fksecs}s)" \
	test $rc = 0 -a $prc = 0
check "... the parent's fd is a kernel socket after its SO_ATTACH_FILTER" \
	grep -q '^parent: SO_ATTACH_FILTER 0 errno 0, stack fd 0$' /tmp/fk.log
check "... the child, asleep in recv() then, woke with the peer's next bytes, from the kernel socket" \
	grep -q '^child: woke with [1-9][0-9]*, stack fd 0$' /tmp/fk.log
check "... every byte arrived in order at the peer" grep -q "^peer ok rx 6291456 tx 6291456$" /tmp/peer.7131
check "... and at the child (no end of stream, no second socket)" \
	grep -q '^child ok rx 6291456 tx 6291456 stack fd 0$' /tmp/fk.log
# The same, the child asleep in epoll_wait() (its own set, EPOLLIN and
# EPOLLRDHUP): it must wake to the peer's bytes (EPOLLIN alone), not to
# the ended stack socket (EPOLLRDHUP, EPOLLHUP).
export HO_PAUSE_MS=3000 HO_FORK_EPOLL=1
run 7132 /tmp/fe-k.log fork kern
kline=$(grep '^child: epoll woke' /tmp/fe-k.log)
check "kernel: a forked child asleep in epoll_wait() at the parent's SO_ATTACH_FILTER: $kline (rc $rc, peer $prc)" \
	test $rc = 0 -a $prc = 0
# Four rounds: the child's switch can come before the parent's own (its
# agent gives the kernel socket first), and a set that kept the module
# fd's registration then reported the ended stack socket (EPOLLIN,
# EPOLLRDHUP, EPOLLHUP) after the switch: 4 rounds of 26 before the fix
# (pl_epoll_before_kernel()), none of 30 after.
fer=
for r in 1 2 3; do
	run $((7135 + r)) /tmp/fe$r.log fork srun
	fer="$fer $(grep '^child: epoll woke' /tmp/fe$r.log | sed 's/^child: epoll woke //; s/, stack fd \([01]\)$/ (\1)/')"
	[ $rc = 0 -a $prc = 0 ] || fer="$fer rc $rc peer $prc"
done
run 7133 /tmp/fe.log fork srun
unset HO_PAUSE_MS HO_FORK_EPOLL
check "sluice: the same, the child wakes as on the kernel, on the kernel socket ($(grep '^child: epoll woke' /tmp/fe.log); $(grep "^child: the wake's" /tmp/fe.log))" \
	grep -q '^child: epoll woke 1 events in data f0, stack fd 0$' /tmp/fe.log
check "... three rounds more, each as the kernel's:$fer" \
	sh -c "for r in 1 2 3; do grep -q '^child: epoll woke 1 events in data f0, stack fd 0$' /tmp/fe\$r.log || exit 1; done"
check "... the kernel's line" test "$(sed 's/stack fd [01]$//' /tmp/fe.log | grep '^child: epoll woke')" = "$(sed 's/stack fd [01]$//' /tmp/fe-k.log | grep '^child: epoll woke')"
check "... and the stream finishes, every byte checked at both ends (rc $rc, peer $prc)" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^child ok rx 6291456 tx 6291456 stack fd 0$' /tmp/fe.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7133"

# A connection with two fds (dup()): both move, one kernel socket, and the
# stream goes on on the dup (before: refused, the option ENOPROTOOPT).
run 7115 /tmp/hd.log handoff srun_dup
check "a dup()ed connection: both fds become the one kernel socket (rc $rc, peer $prc)" \
	grep -q '^dup: fd [0-9]* and fd [0-9]* are one kernel socket$' /tmp/hd.log
check "... and the stream finishes on the dup, every byte checked at both ends" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/hd.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7115"

# The other way round: a connection the stack accepted (its listener's
# filter steers it; the hand-off's 5-tuple entry comes first).
rm -f /tmp/s.log
timeout 150 sluice run --stack $ST --ifname sho0 -- handoff_prog server 7104 handoff >/tmp/s.log 2>&1 &
sp=$!
wait_ready /tmp/s.log 150
timeout 150 $IP netns exec "$NS" handoff_prog dialer "$S" 7104 >/tmp/d.log 2>&1
drc=$?
wait $sp
src=$?
sp=
sed 's/^/#   /' /tmp/s.log
sed 's/^/#   dialer: /' /tmp/d.log
check "accepted in the stack: handed to the kernel mid-stream, the stream completes (server $src, kernel dialer $drc)" \
	sh -c "test $src = 0 -a $drc = 0 && grep -q '^connected, stack fd 1$' /tmp/s.log && grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/s.log"
check "... every byte checked at both ends" \
	sh -c "grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/s.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/d.log"

# CLOSE_WAIT: the peer sent 48 KiB and its FIN before the hand-off; the
# FIN moves with the connection (given to the kernel socket as a packet).
PEER_ARGS=closewait
run 7105 /tmp/c.log closewait srun
PEER_ARGS=
check "CLOSE_WAIT: handed to the kernel, in CLOSE_WAIT there (TCP_INFO state 8; rc $rc, peer $prc)" \
	sh -c "grep -q '^info before: state 8 ' /tmp/c.log && grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/c.log && grep -q '^info after: state 8 ' /tmp/c.log"
check "... the client reads the peer's 48 KiB, then the end (0); the peer gets all 6 MiB, checked" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^after the peer.s bytes: read 0$' /tmp/c.log && grep -q '^client ok rx 49152 tx 6291456 stack fd 0$' /tmp/c.log && grep -q '^peer ok rx 6291456 tx 49152$' /tmp/peer.7105"

# Without CAP_NET_ADMIN: TCP_REPAIR is refused; the connection stays.
run 7103 /tmp/n.log nocap srun
check "no CAP_NET_ADMIN: the option fails as the stack answers (ENOPROTOOPT) and the socket stays the stack's" \
	grep -q "^SO_ATTACH_FILTER: -1 errno 92, stack fd 1, nonblock 0$" /tmp/n.log
check "... and the stream completes in the stack, every byte checked (rc $rc, peer $prc)" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^client ok rx 6291456 tx 6291456 stack fd 1$' /tmp/n.log"

# AF_INET6 sockets: a program's AF_INET6 socket to an IPv4-mapped peer
# (the stack talks IPv4 for it) becomes an AF_INET6 kernel socket; the
# kernel alone first, the same program.
CLIENT=client6
run 7106 /tmp/k6.log handoff kern
k6rc=$rc k6prc=$prc
run 7107 /tmp/v6.log handoff srun
CLIENT=
check "AF_INET6, kernel alone: 6 MiB each way checked, SO_ATTACH_FILTER mid-stream (rc $k6rc, peer $k6prc)" \
	sh -c "test $k6rc = 0 -a $k6prc = 0 && grep -q '^peer name after: family 10$' /tmp/k6.log"
check "AF_INET6 (IPv4-mapped peer) in the stack: handed to the kernel mid-stream, the stream completes (rc $rc, peer $prc)" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^before: sent [0-9]*, stack fd 1$' /tmp/v6.log && grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/v6.log"
check "... an AF_INET6 kernel socket after, as before (getpeername family 10 both times)" \
	sh -c "grep -q '^peer name before: family 10$' /tmp/v6.log && grep -q '^peer name after: family 10$' /tmp/v6.log"
check "... every byte checked at both ends, ESTABLISHED in the kernel" \
	sh -c "grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/v6.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7107 && grep -q '^info after: state 1 ' /tmp/v6.log"

# Native IPv6 (issue 20): an AF_INET6 connection to [fd81::2] (the stack's
# address handles; SLUICE_HANDOFF_IPV6) becomes an AF_INET6 kernel
# socket with its sequence numbers, windows, options and queued data; the
# kernel alone first, the same program against the same peer ([::]).
CLIENT=client6 CADDR=$K6 PEER=peer6
run 7108 /tmp/k6n.log handoff kern
k6rc=$rc k6prc=$prc
run 7109 /tmp/v6n.log handoff srun
CLIENT= CADDR= PEER=
sed 's/^/# kernel: /' /tmp/k6n.log | head -n 20
sed 's/^/# sluice: /' /tmp/v6n.log | head -n 20
check "native IPv6, kernel alone: 6 MiB each way checked, SO_ATTACH_FILTER mid-stream (rc $k6rc, peer $k6prc)" \
	sh -c "test $k6rc = 0 -a $k6prc = 0 && grep -q '^peer name after: family 10$' /tmp/k6n.log"
check "native IPv6 in the stack: handed to the kernel mid-stream, the stream completes (rc $rc, peer $prc)" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^before: sent [0-9]*, stack fd 1$' /tmp/v6n.log && grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/v6n.log"
check "... an AF_INET6 kernel socket after, as before (getpeername family 10 both times)" \
	sh -c "grep -q '^peer name before: family 10$' /tmp/v6n.log && grep -q '^peer name after: family 10$' /tmp/v6n.log"
check "... every byte checked at both ends, ESTABLISHED in the kernel" \
	sh -c "grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/v6n.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7109 && grep -q '^info after: state 1 ' /tmp/v6n.log"

# Native IPv6 in CLOSE_WAIT: the peer's 48 KiB and FIN came before the
# hand-off; the FIN moves too, given to the kernel socket in an IPv6
# header (before: refused, the connection stayed the stack's and the
# option failed).  The kernel alone first, the same program and peer.
CLIENT=client6 CADDR=$K6 PEER=peer6 PEER_ARGS=closewait
run 7116 /tmp/kc6.log closewait kern
k6rc=$rc k6prc=$prc
run 7117 /tmp/c6.log closewait srun
CLIENT= CADDR= PEER= PEER_ARGS=
check "native IPv6 CLOSE_WAIT, kernel alone: the peer's 48 KiB, then 0; 6 MiB to the peer (rc $k6rc, peer $k6prc)" \
	sh -c "test $k6rc = 0 -a $k6prc = 0 && grep -q '^after the peer.s bytes: read 0$' /tmp/kc6.log && grep -q '^info after: state 8 ' /tmp/kc6.log"
check "native IPv6 CLOSE_WAIT in the stack: handed to the kernel, in CLOSE_WAIT there (TCP_INFO state 8; rc $rc, peer $prc)" \
	sh -c "grep -q '^info before: state 8 ' /tmp/c6.log && grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/c6.log && grep -q '^info after: state 8 ' /tmp/c6.log"
check "... the client reads the peer's 48 KiB, then the end (0); the peer gets all 6 MiB, checked; as the kernel's run" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^after the peer.s bytes: read 0$' /tmp/c6.log && grep -q '^client ok rx 49152 tx 6291456 stack fd 0$' /tmp/c6.log && grep -q '^peer ok rx 6291456 tx 49152$' /tmp/peer.7117 && grep -q '^client ok rx 49152 tx 6291456 ' /tmp/kc6.log"

# On request from outside: `sluice handoff PID FD` while the program
# sleeps (no call on the socket); first the requests that must fail and
# leave the connection where it is.
# ext PORT LOG MODE: peer and client in the background, up to "waiting";
# sets P and F (the client's pid and fd).
ext() {
	rm -f /tmp/peer.$1 "$2" /tmp/ho.done
	timeout 150 $IP netns exec "$NS" handoff_prog peer "$1" >/tmp/peer.$1 2>&1 &
	pp=$!
	wait_ready /tmp/peer.$1 100
	HO_DONE=/tmp/ho.done srun client "$K" "$1" "$3" >"$2" 2>&1 &
	cp=$!
	wait_line "$2" '^waiting pid'
	P=$(sed -n 's/^waiting pid \([0-9]*\) fd [0-9]*$/\1/p' "$2")
	F=$(sed -n 's/^waiting pid [0-9]* fd \([0-9]*\)$/\1/p' "$2")
}
# ext_end: both ends finish; rc (client) and prc (peer).
ext_end() {
	wait $cp
	rc=$?
	wait $pp
	prc=$?
	cp= pp=
	sed 's/^/#   /' "$1"
}
ext 7108 /tmp/x.log external
ho() { sluice handoff "$@" >/tmp/ho.out 2>&1; horc=$?; sed 's/^/#   sluice handoff: /' /tmp/ho.out; }
ho "$P" 0
check "sluice handoff of an fd that is no socket: refused, says so (rc $horc)" \
	sh -c "test $horc = 1 && grep -q 'not a Sluice socket' /tmp/ho.out"
ho "$P" 999
check "... of an fd the process does not have: refused (rc $horc)" \
	sh -c "test $horc = 1 && grep -q 'has no fd 999' /tmp/ho.out"
if [ -x $SETPRIV ]; then
	sluice_bin=$(command -v sluice)
	$SETPRIV --reuid=65534 --regid=65534 --clear-groups $sluice_bin handoff "$P" "$F" >/tmp/ho.out 2>&1
	horc=$?
	sed 's/^/#   sluice handoff as uid 65534: /' /tmp/ho.out
	check "... asked by another user: refused, 'another user's' (rc $horc)" \
		sh -c "test $horc = 1 && grep -q \"another user's\" /tmp/ho.out"
else
	tap ok "... asked by another user # SKIP no setpriv in the guest"
fi
check "... after those the socket is still the stack's" \
	sh -c "test -n '$P' && readlink /proc/$P/fd/$F | grep -q sluice-sock"
t0=$(cut -d" " -f1 /proc/uptime)
ho "$P" "$F"
t1=$(cut -d" " -f1 /proc/uptime)
horc1=$horc
cp /tmp/ho.out /tmp/ho1.out
# Asked again while the program goes on (its 6 MiB take seconds here).
ho "$P" "$F"
horc2=$horc
cp /tmp/ho.out /tmp/ho2.out
ext_end /tmp/x.log
sed 's/^/#   peer: /' /tmp/peer.7108
check "sluice handoff PID FD: the connection moves to the kernel (rc $horc1, $(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }') s with the tool's start)" \
	sh -c "test $horc1 = 0 && grep -q 'is a kernel socket now' /tmp/ho1.out && grep -q '^SO_ATTACH_FILTER: 0 errno 0, stack fd 0, nonblock 0$' /tmp/x.log"
check "... with unread and unacknowledged bytes at that moment; every byte checked at both ends after (rc $rc, peer $prc)" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/x.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7108"
check "... asked again once it is the kernel's: 'kernel socket already' (rc $horc2)" \
	sh -c "test $horc2 = 1 && grep -q 'kernel socket already' /tmp/ho2.out"

# The process without CAP_NET_ADMIN: its kernel refuses TCP repair; the
# tool says so and the connection goes on in the stack.
ext 7109 /tmp/xn.log extnocap
ho "$P" "$F"
touch /tmp/ho.done
ext_end /tmp/xn.log
check "sluice handoff, the process lacking CAP_NET_ADMIN: refused with a clear error (rc $horc)" \
	sh -c "test $horc = 1 && grep -q 'CAP_NET_ADMIN' /tmp/ho.out"
check "... the stream completes in the stack, every byte checked (rc $rc, peer $prc)" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^client ok rx 6291456 tx 6291456 stack fd 1$' /tmp/xn.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7109"

# At exec of a program that will not run under Sluice (here: itself,
# with LD_PRELOAD taken out of its environment): the connection goes to
# the kernel first, and the new program finishes the stream on it.
run 7110 /tmp/e.log exec srun
check "exec of a program not under Sluice: it gets a kernel socket at the same fd (rc $rc, peer $prc)" \
	sh -c "grep -q '^resumed: fd [0-9]* is a kernel socket, preload unset$' /tmp/e.log && grep -q '^info resumed: state 1 ' /tmp/e.log"
check "... and finishes the stream, every byte checked at both ends" \
	sh -c "test $rc = 0 -a $prc = 0 && grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/e.log && grep -q '^peer ok rx 6291456 tx 6291456$' /tmp/peer.7110"
# The same by fexecve() and by execveat(AT_EMPTY_PATH): no path to judge,
# the library reads the file from the fd.
# posix_spawn(): glibc's child execs inside libc, in the parent's memory;
# the parent hands the connection off first, and keeps the kernel socket.
for wp in fexecve:7112 execveat:7113 posix_spawn:7114; do
	way=${wp%:*}
	run "${wp#*:}" /tmp/e-$way.log exec srun_way $way
	check "$way of a program not under Sluice: a kernel socket at the same fd, the stream finished, every byte checked (rc $rc, peer $prc)" \
		sh -c "grep -q '^resumed: fd [0-9]* is a kernel socket, preload unset$' /tmp/e-$way.log && test $rc = 0 -a $prc = 0 && grep -q '^client ok rx 6291456 tx 6291456 stack fd 0$' /tmp/e-$way.log"
done
check "... posix_spawn: the spawning parent's fd is that kernel socket too, as on the kernel" \
	grep -q '^spawner: fd [0-9]* is the kernel socket$' /tmp/e-posix_spawn.log
# SLUICE_EXEC_HANDOFF=0: as before, the new program gets no socket.
run 7111 /tmp/ek.log exec srun_keep
check "SLUICE_EXEC_HANDOFF=0: the old behaviour, the new program's fd is no socket (rc $rc)" \
	sh -c "test $rc = 3 && grep -q '^resumed: fd [0-9]* is no socket, preload unset$' /tmp/ek.log"

# Listeners and datagram sockets kept across an exec of a program not
# under Sluice, on the module's stack (no twins here: the module's filter
# holds the port, and the kernel socket binds it once the stack's socket
# lets it go): tests/preload/exec_keep on the device address, the same
# program on the kernel alone first; the same lines.
# (EK_NOEARLY: no datagram waits unread across the exec: a module's stack
# binds a new kernel socket and moves none.)
EK_NOEARLY=1 EK_ADDR=$S timeout 60 exec_keep run execve >/tmp/ek-k.log 2>&1
sed 's/^/#   kernel: /' /tmp/ek-k.log
EK_NOEARLY=1 EK_ADDR=$S SLUICE_DEBUG=1 timeout 60 sluice run --stack $ST --ifname sho0 -- exec_keep run execve \
	>/tmp/ek-s.log 2>/tmp/ek-s.err
sed 's/^/#   sluice run: /' /tmp/ek-s.log
grep -v 'is socket\|falls back\|closing\|attached\|gone' /tmp/ek-s.err | sed 's/^/#   stderr: /'
check "a listener, its dup, one on [::], a bound UDP socket and a fresh socket kept across exec on the module's stack: the same lines as on the kernel alone" \
	sh -c "grep -q '^after: every socket served$' /tmp/ek-k.log && diff /tmp/ek-k.log /tmp/ek-s.log >/dev/null"
# (The listener's dup moves with the listener: become_kernel() takes
# every fd of a socket, and says so for the dup.)
check "... each of the five fds the stack's until the exec" \
	test "$(grep -c -e 'handed to the kernel before exec' -e 'a dup of fd [0-9]*, to the kernel with it' /tmp/ek-s.err)" = 5

echo "1..$n"
exit $fail
