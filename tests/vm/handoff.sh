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
#   |   handoff_prog client (sluice run) |      |   (kernel TCP)          |
#   +-----------------------------------+      +-------------------------+
#
# Each run moves 6 MiB each way, every byte checked at both ends; the peer
# stops reading for 1.5 s after it sent 48 KiB, so that at the hand-off the
# client has bytes unread and bytes unsent and unacknowledged in its stack.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=sho-peer
S=10.81.0.1
K=10.81.0.2
ST=ho
SUITE="live hand-off"
. /opt/sluice/bin/tap.sh
in_ns() { $IP netns exec "$NS" "$@"; }
cleanup() {
	for p in $pp $sp; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP netns del "$NS" 2>/dev/null
	$IP link del sho0 2>/dev/null
}
trap cleanup EXIT

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
[ $(( 0x${feat:-0} & 0x20e )) = $((0x20e)) ] || skip_all "module features 0x$feat lack kring, filters, ifinfo or handoff"

mkdir -p /run/netns
$IP netns add "$NS"
$IP link add sho0 type veth peer name sho1
$IP link set sho1 netns "$NS"
$IP addr add "$S/24" dev sho0
$IP link set sho0 up
# This namespace's loopback too, as on any host: the CLOSE_WAIT hand-off
# gives the peer's FIN to the kernel socket through it.
$IP link set lo up
in_ns $IP link set lo up
in_ns $IP addr add "$K/24" dev sho1
in_ns $IP link set sho1 up
check "the peer namespace pings the device address (kernel)" in_ns ping -c 1 -W 5 "$S"

# run PORT LOG MODE CLIENT-PREFIX... : a peer on PORT, then the client;
# the client's exit status, the peer's in $prc.
run() {
	port=$1 log=$2 mode=$3
	shift 3
	rm -f /tmp/peer.$port
	timeout 150 $IP netns exec "$NS" handoff_prog peer "$port" $PEER_ARGS >/tmp/peer.$port 2>&1 &
	pp=$!
	wait_ready /tmp/peer.$port 100
	t0=$(cut -d" " -f1 /proc/uptime)
	"$@" client "$K" "$port" "$mode" >"$log" 2>&1
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

echo "1..$n"
exit $fail
