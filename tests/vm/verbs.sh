#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: two Sluice stacks, in two processes, talk IPoIB-framed
# IPv4 over plain UD QPs through Soft-RoCE (the verbs link, lib/link/verbs.c).
#
#   process A: verbs_peer client          process B: verbs_peer serve
#   stack va1/va2/va3, 10.77.0.1/.3/.4    stack vb, 10.77.0.2, echo :7
#        |  UD QP, IPoIB ARP / static          |  UD QP
#      rxe0 ------------------------------- rxe1     (rdma_rxe, RoCE v2)
#        |                                     |
#       va ====== veth pair (root netns) ===== vb
#        netem loss 2% on va for one round
#
# Checks: both links come up on module-backed stacks, neighbours resolve,
# UDP and TCP both ways (several connections at once, byte-exact), loss
# recovered by TCP, and the QPs, CQs, MRs and PDs gone from
# `rdma resource` after a close (process still alive) and after kill -9.
# Then a port flap (issue 14 item 2): va down for 2 s and up again while a
# TCP connection carries data (rxe raises IB_EVENT_PORT_ERR and
# PORT_ACTIVE on both devices, veth taking vb's carrier with va's); it
# must finish byte-exact, and the kernel does the same beside it:
#
#   netns fa: kpeer tcp-echo 10.78.0.1 --- ka ==veth== kb --- 10.78.0.2 kpeer serve (netns fb)
#   ka flapped with va, at the same moment
# Last, a client's QP moved to the error state mid-transfer (a device
# fault): the link resets it and the connection finishes byte-exact.
# Prints TAP.
SUITE="verbs"
. /opt/sluice/bin/tap.sh
ip=/usr/sbin/ip
rdma=/usr/bin/rdma
tc=/usr/sbin/tc
dir=/tmp/verbs-hw
peer=/opt/sluice/bin/verbs_peer

# Turn a client's PASS/FAIL lines into TAP, its other lines into comments.
report() { # report LOG PREFIX
	while IFS= read -r line; do
		case $line in
		"PASS "*) tap ok "$2: ${line#PASS }" ;;
		"FAIL "*) tap fail "$2: ${line#FAIL }" ;;
		*) echo "# $line" ;;
		esac
	done <"$1"
}

# Soft-RoCE's and the veths' own counters, for a failure's diagnosis.
diag() {
	for d in rxe0 rxe1; do
		c=/sys/class/infiniband/$d/ports/1/hw_counters
		[ -d $c ] || continue
		echo "# $d: $(cd $c && grep -H . * 2>/dev/null | grep -v ':0$' | tr '\n' ' ')"
	done
	$ip -s link show va | sed 's/^/# /'
	$ip -s link show vb | sed 's/^/# /'
	sluice dump vb 2>&1 | sed 's/^/# B: /'
}

# Verbs objects of a pid in `rdma resource` (qp, cq, mr, pd).
count_res() { # count_res KIND PID
	$rdma resource show "$1" 2>/dev/null | grep -c "pid $2 "
}
res_of() { # res_of PID: "qp Q cq C mr M pd P"
	echo "qp $(count_res qp "$1") cq $(count_res cq "$1") mr $(count_res mr "$1") pd $(count_res pd "$1")"
}

wait_file() { # wait_file PATH SECONDS
	i=0
	while [ ! -s "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$1" ]
}
wait_grep() { i=0; while ! grep -q "$2" "$1" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done; }

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
$ip link add va type veth peer name vb && $ip link set va up && $ip link set vb up
if $rdma link add rxe0 type rxe netdev va && $rdma link add rxe1 type rxe netdev vb; then
	tap ok "Soft-RoCE devices rxe0 on va and rxe1 on vb"
else
	tap fail "Soft-RoCE devices rxe0 on va and rxe1 on vb"
	echo "1..$n"
	exit 1
fi
$rdma link show | sed 's/^/# /'
sleep 1
/usr/bin/ibv_devinfo -d rxe0 -v | grep -E 'link_layer|active_mtu|max_mtu|GID\[' | sed 's/^/# rxe0: /'

# sluice doctor on a Soft-RoCE interface (issue 14 item 4), with the real
# sysfs, module and rdma-core the host's test cannot have.
out=$(sluice doctor --interface va 2>&1)
echo "$out" | sed 's/^/# doctor: /'
dcheck() {
	if echo "$out" | grep -qF -- "$2"; then tap ok "doctor: $1"; else tap fail "doctor: $1"; fi
}
dcheck "va is Ethernet, driver veth" "kind: Ethernet (link type 1), MTU 1500, state up, driver veth"
dcheck "rxe0 on va, named Soft-RoCE, its port active" "RDMA device: rxe0 port 1 (Soft-RoCE"
dcheck "rxe0's limits read through rdma-core" "device limits (rxe0"
dcheck "the module's facts: va is not IPoIB" "module: loaded; the interface is not IPoIB to it"
dcheck "a stack on va takes the kring path" "the kring path: the module steers"
# --json: the same facts as one document (schema: tools/README.md).
out=$(sluice doctor --json --interface va 2>&1)
echo "# doctor --json: $out" | cut -c1-400
dcheck "--json: one document, va found, Ethernet, rxe0 on it, the kring path" \
	'"found":true,"kind":"ethernet"'
if echo "$out" | grep -q '"device":"rxe0","port":1,"soft_roce":true' &&
   echo "$out" | grep -q '"path":{"kind":"kring"'; then
	tap ok "doctor --json: rxe0 as Soft-RoCE, the kring path"
else
	tap fail "doctor --json: rxe0 as Soft-RoCE, the kring path"
fi
# mlx5's flow steering mode from this kernel's devlink (generic netlink):
# an HCA described by a sysfs tree of our own (SLUICE_SYSFS), at a PCI
# address devlink has no device for, so the real answer is "no such device".
fk=/tmp/fakesys
mkdir -p $fk/class/net/ib0/device/infiniband/mlx5_0 $fk/class/infiniband/mlx5_0/ports/1 \
	$fk/devices/pci0000:00/0000:81:00.0 $fk/bus/pci
echo 32 >$fk/class/net/ib0/type
ln -s ../../../devices/pci0000:00/0000:81:00.0 $fk/class/infiniband/mlx5_0/device
ln -s ../../../bus/pci $fk/devices/pci0000:00/0000:81:00.0/subsystem
out=$(SLUICE_SYSFS=$fk sluice doctor --interface ib0 2>&1)
echo "$out" | grep 'flow steering' | sed 's/^/# doctor: /'
dcheck "devlink asked for mlx5_0's flow_steering_mode: no such device" \
	"flow steering mode (mlx5_0, devlink pci/0000:81:00.0): unknown: devlink knows no such device"

run_round() { # run_round MODE(arp|static)
	mode=$1
	rm -rf "$dir" && mkdir -p "$dir"
	if [ "$mode" = static ]; then
		export SLUICE_VERBS_STATIC=1
	else
		unset SLUICE_VERBS_STATIC
	fi
	$peer serve vb rxe1 10.77.0.2/24 "$dir" 400 >/tmp/serve.log 2>&1 &
	spid=$!
	if wait_file "$dir/10.77.0.2" 20; then
		tap ok "$mode: B's verbs link is up (stack made by the module)"
	else
		tap fail "$mode: B's verbs link is up (stack made by the module)"
		sed 's/^/# B: /' /tmp/serve.log
		kill -9 $spid 2>/dev/null
		return 1
	fi
	grep '^#' /tmp/serve.log | sed 's/^/# B: /'

	# Round 1: UDP and TCP both ways, several connections at once.
	timeout 200 $peer client va1 rxe0 10.77.0.1/24 "$dir" 10.77.0.2 \
		udp:20 tcp:1:1048576 tcp:4:262144 >/tmp/c1.log 2>&1
	c1=$?
	report /tmp/c1.log "$mode: A->B"
	[ $c1 = 0 ] || diag
	# Soft-RoCE's own counters after the round (UD has no flow control:
	# a receive queue run dry drops, and TCP retransmits what it lost).
	for d in rxe0 rxe1; do
		c=/sys/class/infiniband/$d/ports/1/hw_counters
		[ -d $c ] && echo "# $mode: $d: $(cd $c && grep -H . * 2>/dev/null | grep -v ':0$' | tr '\n' ' ')"
	done
	# Which resolution ran: ARP requests and replies, or none at all.
	atx=$(sed -n 's/^# counter arp_tx //p' /tmp/c1.log)
	arx=$(sed -n 's/^# counter arp_rx //p' /tmp/c1.log)
	if [ "$mode" = arp ]; then
		want="${atx:-0} -gt 0 -a ${arx:-0} -gt 0"
		what="A resolved B by IPoIB ARP over the broadcast group (sent $atx, got $arx)"
	else
		want="${atx:-1} = 0 -a ${arx:-1} = 0"
		what="static neighbours: no ARP at all (sent $atx, got $arx)"
	fi
	# shellcheck disable=SC2086 # the test expression is split on purpose
	if [ $want ]; then tap ok "$mode: $what"; else tap fail "$mode: $what"; fi

	# Round 2: 2 % loss on va, recovered by TCP.
	$tc qdisc add dev va root netem loss 2%
	timeout 200 $peer client va2 rxe0 10.77.0.3/24 "$dir" 10.77.0.2 \
		udp:10 tcp:2:262144 >/tmp/c2.log 2>&1 || diag
	report /tmp/c2.log "$mode: with 2% loss on va"
	drops=$($tc -s qdisc show dev va | sed -n 's/.*dropped \([0-9]*\).*/\1/p' | head -n 1)
	rexmt=$(sed -n 's/^# counter tcp_retransmit //p' /tmp/c2.log)
	echo "# netem dropped ${drops:-?} frames; A retransmitted ${rexmt:-?} segments"
	if [ "${drops:-0}" -gt 0 ] && [ "${rexmt:-0}" -gt 0 ]; then
		tap ok "$mode: netem dropped frames and TCP retransmitted"
	else
		tap fail "$mode: netem dropped frames and TCP retransmitted"
	fi
	$tc qdisc del dev va root

	# Round 3: resources go on close, while the process lives on.
	# Its verbs calls are traced (SLUICE_VERBS_TRACE, lib/link/README.md
	# "The verbs trace"): a real rdma-core and kernel's answers.
	rm -f /tmp/vt-$mode.trace
	SLUICE_VERBS_TRACE=/tmp/vt-$mode.trace SLUICE_VERBS_LINGER=5 \
		timeout 100 $peer client va3 rxe0 10.77.0.4/24 "$dir" 10.77.0.2 \
		tcp:1:65536 >/tmp/c3.log 2>&1 &
	cpid=$!
	i=0
	while ! grep -q '^# closed' /tmp/c3.log && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	report /tmp/c3.log "$mode: before close"
	r=$(res_of $cpid)
	echo "# A after sluice_stack_close, still running: $r"
	if grep -q '^# closed' /tmp/c3.log && [ "$r" = "qp 0 cq 0 mr 0 pd 0" ]; then
		tap ok "$mode: close releases the QP, CQs, MR and PD (process alive)"
	else
		tap fail "$mode: close releases the QP, CQs, MR and PD (process alive)"
	fi
	wait $cpid
	vt=/tmp/vt-$mode.trace
	calls=$(cut -d' ' -f3 $vt 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')
	echo "# $mode: verbs trace of A: $(wc -l <$vt 2>/dev/null) lines:$calls"
	if grep -q ' create_qp .* = qp1' $vt 2>/dev/null && grep -q ' post_send .* = 0$' $vt &&
	   grep -q ' poll_cq ' $vt && grep -q ' destroy_qp qp1 = 0$' $vt &&
	   [ "$(cut -d' ' -f1 $vt | sort -u | wc -l)" = 1 ]; then
		tap ok "$mode: the verbs trace has A's QP made, sends, completions and teardown"
	else
		tap fail "$mode: the verbs trace has A's QP made, sends, completions and teardown"
	fi
	# The host keeps one as a fixture of unit/test_verbs_replay.
	[ "$mode" = static ] && sed 's/^/#vtrace /' $vt

	# A second process on B's stack, with its own verbs link, killed with
	# its receive buffers posted: they stay out of the pool until the next
	# link on the stack takes them back; a clean close returns its own.
	if [ "$mode" = arp ]; then
		used() { sluice dump vb | sed -n 's/.*buffers \([0-9]*\)\/.*/\1/p'; }
		# B's stack still carries the earlier rounds' last segments
		# and ACKs: a buffer or two may be in flight at any reading.
		# Read until two readings 0.2 s apart agree (at most 3 s).
		settled() {
			a=$(used) j=0
			while [ $j -lt 15 ]; do
				sleep 0.2
				b=$(used)
				[ "$a" = "$b" ] && break
				a=$b j=$((j + 1))
			done
			echo "$a"
		}
		near() { [ -n "$1" ] && [ -n "$2" ] && [ $(($1 - $2)) -le 4 ] && [ $(($2 - $1)) -le 4 ]; }
		u0=$(settled)
		$peer attach vb rxe1 30 >/tmp/a1.log 2>&1 &
		apid=$!
		wait_grep /tmp/a1.log '^# attached'
		u1=$(used)
		kill -9 $apid
		wait $apid 2>/dev/null
		u2=$(used)
		$peer attach vb rxe1 3 >/tmp/a2.log 2>&1 &
		apid=$!
		wait_grep /tmp/a2.log '^# detached'
		u3=$(settled)
		wait $apid
		echo "# buffers in use on B's stack: $u0 before, $u1 with a second link, $u2 after its kill -9, $u3 after the next link came and closed"
		# A link posts 512 receives; "takes them back" is all of them,
		# give or take the few buffers of traffic in flight (near).
		if [ -n "$u0" ] && [ "$u1" -ge $((u0 + 256)) ] && near "$u2" "$u1"; then
			tap ok "$mode: a killed process's posted buffers stay out of the pool ($((u2 - u0)))"
		else
			tap fail "$mode: a killed process's posted buffers stay out of the pool"
		fi
		if near "$u3" "$u0" && [ -n "$u1" ] && [ "$u1" -ge $((u0 + 256)) ]; then
			tap ok "$mode: the next link takes them back, and a close returns its own"
		else
			tap fail "$mode: the next link takes them back, and a close returns its own"
		fi
	fi

	# B dies with kill -9: the kernel releases what it had.
	r=$(res_of $spid)
	echo "# B before kill -9: $r"
	kill -9 $spid
	wait $spid 2>/dev/null
	sleep 1
	r2=$(res_of $spid)
	echo "# B after kill -9: $r2"
	if [ "$r" != "qp 0 cq 0 mr 0 pd 0" ] && [ "$r2" = "qp 0 cq 0 mr 0 pd 0" ]; then
		tap ok "$mode: kill -9 releases the QP, CQs, MR and PD"
	else
		tap fail "$mode: kill -9 releases the QP, CQs, MR and PD"
	fi
}

# A port flap while a connection carries data (issue 14 item 2), Sluice
# over rxe0/rxe1 and the kernel over a veth pair of its own, both paced
# to take 10 s, both links down for 2 s at the same moment.
flap_round() {
	rm -rf "$dir" && mkdir -p "$dir"
	unset SLUICE_VERBS_STATIC
	bytes=2097152
	$peer serve vb rxe1 10.77.0.2/24 "$dir" 200 >/tmp/fserve.log 2>&1 &
	spid=$!
	if ! wait_file "$dir/10.77.0.2" 20; then
		tap fail "flap: B's verbs link is up"
		sed 's/^/# B: /' /tmp/fserve.log
		kill -9 $spid 2>/dev/null
		return 1
	fi
	mkdir -p /run/netns
	$ip netns add fa && $ip netns add fb &&
		$ip link add ka netns fa type veth peer name kb netns fb &&
		$ip -n fa addr add 10.78.0.1/24 dev ka && $ip -n fb addr add 10.78.0.2/24 dev kb &&
		$ip -n fa link set ka up && $ip -n fb link set kb up &&
		$ip -n fa link set lo up && $ip -n fb link set lo up
	$ip netns exec fb timeout 150 kpeer serve 7 120 >/tmp/kfserve.log 2>&1 &
	kspid=$!
	sleep 1
	timeout 150 $peer client va5 rxe0 10.77.0.5/24 "$dir" 10.77.0.2 \
		tcp:1:$bytes:10 >/tmp/cf.log 2>&1 &
	cpid=$!
	$ip netns exec fa timeout 150 kpeer tcp-echo 10.78.0.2 7 $bytes 1 10 >/tmp/kf.log 2>&1 &
	kpid=$!
	wait_grep /tmp/cf.log '^# flowing'
	wait_grep /tmp/kf.log '^flowing'
	t0=$(date +%s)
	$ip link set va down
	$ip -n fa link set ka down
	sleep 2
	$ip link set va up
	$ip -n fa link set ka up
	if grep -q '^# flowing' /tmp/cf.log && kill -0 $cpid 2>/dev/null &&
	   grep -q '^flowing' /tmp/kf.log && kill -0 $kpid 2>/dev/null; then
		tap ok "flap: both connections were carrying data when the links went down and up"
	else
		tap fail "flap: both connections were carrying data when the links went down and up"
	fi
	wait $cpid
	c=$?
	ct=$(($(date +%s) - t0))
	wait $kpid
	k=$?
	kt=$(($(date +%s) - t0))
	report /tmp/cf.log "flap: A->B across va down 2 s"
	[ $c = 0 ] || diag
	sed 's/^/# kernel: /' /tmp/kf.log
	if [ $k = 0 ] && grep -q "^ok 1 x $bytes" /tmp/kf.log; then
		tap ok "flap: the kernel's connection across ka down 2 s is byte-exact too"
	else
		tap fail "flap: the kernel's connection across ka down 2 s is byte-exact too"
	fi
	echo "# flap: Sluice's connection ended ${ct}s after the links went down, the kernel's ${kt}s (both paced to 10 s)"
	sg=$(sed -n 's/^# longest wait between echoed bytes: //p' /tmp/cf.log)
	kg=$(sed -n 's/^longest wait between echoed bytes: //p' /tmp/kf.log)
	echo "# flap: longest wait between echoed bytes (the flap's stall, down 2 s): Sluice $sg, kernel $kg"
	# What the links saw: A's counters (printed at its end), B's (dump).
	pd=$(sed -n 's/^# counter verbs_port_down //p' /tmp/cf.log)
	sluice dump vb >/tmp/fdump.log 2>&1
	bd=$(awk '$1 == "verbs_port_down" { print $2 }' /tmp/fdump.log)
	echo "# flap: A: $(grep '^# counter verbs_' /tmp/cf.log | cut -d' ' -f3- | tr '\n' ' ')"
	echo "# flap: B: $(awk '$1 ~ /^verbs_/ { printf "%s %s ", $1, $2 }' /tmp/fdump.log)"
	if [ "${pd:-0}" -ge 1 ] && [ "${bd:-0}" -ge 1 ]; then
		tap ok "flap: both links saw the port go down (verbs_port_down A ${pd:-0}, B ${bd:-0})"
	else
		tap fail "flap: both links saw the port go down (verbs_port_down A ${pd:-0}, B ${bd:-0})"
	fi
	# While down, A's link posts nothing (each send would fail and put
	# its QP in error): a reset at each edge at most (a send just before
	# the PORT_ERR is queued, or just after PORT_ACTIVE while the netdev's
	# IPv6 route is not back yet: both seen), not one per packet sent
	# while down (5 in a run before the fix), and the flushed receive
	# WRs of a reset are no bad frames (2,497 counted before).
	qr=$(sed -n 's/^# counter verbs_qp_reset //p' /tmp/cf.log)
	eb=$(sed -n 's/^# counter eth_rx_bad //p' /tmp/cf.log)
	td=$(sed -n 's/^# counter verbs_tx_port_down //p' /tmp/cf.log)
	if [ "${qr:-9}" -le 2 ] && [ "${eb:-1}" = 0 ]; then
		tap ok "flap: A reset its QP ${qr} time(s), dropped $td packets unposted, counted no flush as a bad frame"
	else
		tap fail "flap: A reset its QP ${qr:-?} time(s) (at most 2), eth_rx_bad ${eb:-?} (0), dropped ${td:-?} unposted"
	fi
	# A's QP moved to the error state mid-transfer, behind the link's back
	# (ibv_modify_qp to ERR, as a device fault would leave it; rxe then
	# flushes its WRs): the link finds it, resets it, the connection goes on.
	SLUICE_PEER_QP_ERROR=131072 timeout 100 $peer client va6 rxe0 10.77.0.6/24 "$dir" \
		10.77.0.2 tcp:1:1048576:4 >/tmp/cq.log 2>&1 || diag
	report /tmp/cq.log "QP error mid-transfer"
	qr=$(sed -n 's/^# counter verbs_qp_reset //p' /tmp/cq.log)
	eb=$(sed -n 's/^# counter eth_rx_bad //p' /tmp/cq.log)
	if grep -q '^# QP 0x[0-9a-f]* moved to the error state: done' /tmp/cq.log &&
	   [ "${qr:-0}" -ge 1 ] && [ "${eb:-1}" = 0 ]; then
		tap ok "QP error mid-transfer: moved to ERR, found and reset by the link (verbs_qp_reset $qr), its flushed receives no bad frames"
	else
		tap fail "QP error mid-transfer: moved to ERR, found and reset by the link (verbs_qp_reset ${qr:-?}), eth_rx_bad ${eb:-?} (0)"
	fi
	kill $kspid 2>/dev/null
	wait $kspid 2>/dev/null
	kill -9 $spid 2>/dev/null
	wait $spid 2>/dev/null
	$ip netns del fa
	$ip netns del fb
}

run_round static
run_round arp
flap_round

$rdma resource show qp | sed 's/^/# /'
$rdma link del rxe1
$rdma link del rxe0
$ip link del va
echo "1..$n"
exit $fail
