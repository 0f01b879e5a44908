#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A benchmark, not a test (issue 19 item 6, on the host): bulk TCP goodput
# over a lossy 10 ms path, Sluice beside the kernel in the same run, in
# seconds rather than a VM boot.  The host kernel has no netem, so
# build/tests/bench/lossy_relay (AF_PACKET, seeded) bridges the two sides
# in a middle namespace, delaying each frame DELAY_US each way and
# dropping IPv4 frames with LOSS% each way:
#
#   ns P-s: kernel iperf3 -s, 10.87.0.1 on veth s0 (and iperf3 -c for "receive")
#   ns P-m: relay m0 <-> m2 (kernel runs) or m0 <-> TAP t0 (Sluice runs)
#   ns P-c: kernel iperf3 -c / -s, 10.87.0.2 on veth c0
#   Sluice: sluice run --tap t0 --addr 10.87.0.3/24 in ns P-m
#
# Every sender's frames are one MTU (TSO, GSO and checksum offload off on
# the veths), so loss falls on each segment alike, and the relay's counts
# are printed with each run.  Kernel and Sluice runs alternate.
#
#   bash tests/bench/lossy_host.sh [-t SECS] [-r ROUNDS] [-l "0.1 1 5"] [-d send|receive|both] [-v]
#
# -v prints, after each run, the sender's TCP_INFO (ss -tin in the kernel's
# namespace; `sluice dump` of the stack's TCP counters for Sluice), and the
# kernel's TcpExt counters that moved in the namespace of the kernel that
# took part (the sender, or for "receive" the kernel sender of both runs).
# A Sluice run's line also gives the frames the TAP device t0 dropped at
# its queue (tx_dropped) and its txqueuelen; a kernel "receive" run's, the
# resets its receiver sent (OutRsts in P-c).
# PCAP=DIR keeps a capture of each run at the sender's side of the relay
# (headers only), DIR/WHO-DIR-LOSS-NANOSECONDS.pcap; tests/bench/lossy_trace.py
# reads them (flight, ACKs per segment, RTT, quiet spells, recoveries).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
relay=$top/build/tests/bench/lossy_relay
sluice=$top/build/tools/sluice
SECS=5 ROUNDS=2 LOSS="0.1 1 5" DIRS=send VERBOSE=0
DELAY_US=${DELAY_US:-5000}
while getopts t:r:l:d:v o; do
	case $o in
	t) SECS=$OPTARG ;;
	r) ROUNDS=$OPTARG ;;
	l) LOSS=$OPTARG ;;
	d) DIRS=$OPTARG ;;
	v) VERBOSE=1 ;;
	*) exit 2 ;;
	esac
done
[ "$DIRS" = both ] && DIRS="send receive"
[ -x "$relay" ] && [ -x "$sluice" ] || { echo "build first (make)"; exit 1; }
command -v iperf3 >/dev/null && command -v ethtool >/dev/null ||
	{ echo "needs iperf3 and ethtool"; exit 1; }

P=slh$$
S=10.87.0.1 K=10.87.0.2 L=10.87.0.3
st=lh$$
cleanup() {
	for n in s m c; do
		ip netns pids $P-$n 2>/dev/null | xargs -r kill 2>/dev/null
	done
	wait 2>/dev/null
	for n in s m c; do ip netns del $P-$n 2>/dev/null; done
	rm -rf /dev/shm/sluice-$st* /dev/shm/sluicefd-$st*
}
trap cleanup EXIT
trap "exit 1" INT TERM
ns() { local n=$1; shift; ip netns exec $P-$n "$@"; }

for n in s m c; do
	ip netns add $P-$n
	ns $n ip link set lo up
	ns $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ip link add s0 netns $P-s type veth peer name m0 netns $P-m
ip link add c0 netns $P-c type veth peer name m2 netns $P-m
ns m ip tuntap add dev t0 mode tap multi_queue
for d in m0 m2 t0; do ns m ip link set $d up; done
ns s ip addr add $S/24 dev s0
ns c ip addr add $K/24 dev c0
for x in s:s0 c:c0 m:m0 m:m2; do
	ns ${x%%:*} ethtool -K ${x#*:} tso off gso off gro off tx off rx off >/dev/null 2>&1
	ns ${x%%:*} ip link set ${x#*:} up
done

ns s iperf3 -s -4 -p 5202 >/dev/null 2>&1 &
ns c iperf3 -s -4 -p 5203 >/dev/null 2>&1 &
# The Sluice receiver (for "receive") is started per run, with the relay.
for _ in $(seq 50); do ns s ss -ltn | grep -q ':5202 ' && break; sleep 0.1; done

# goodput NS COMMAND...: the receiver's Mbit/s of one iperf3 client run
# in namespace P-NS.
goodput() {
	local n=$1; shift
	# The congestion control asked of every sender (iperf3 -C): Debian's
	# default, where this host's may differ.
	timeout $((SECS + 30)) ip netns exec $P-$n "$@" -C "${CC:-cubic}" -t "$SECS" -f m 2>&1 | tee /tmp/$P.out |
		awk '/receiver/ { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") v = $(i - 1) }
			END { print (v == "" ? "-" : v) }'
}
seed=1
# sample WHO DIR: the sender's state each second while a run goes (-v).
sample() {
	local i
	for i in $(seq $((SECS - 1))); do
		sleep 1
		if [ "$1" = sluice ] && [ "$2" = send ]; then
			"$sluice" dump $st 2>/dev/null | grep -A3 'ESTABLISHED' | grep -E 'snd una|srtt|sndbuf' |
				tail -3 | tr -s ' ' | paste -sd' ' | sed "s/^/#   t=$i /" >&2
		else
			local n=c
			[ "$2" = receive ] && n=s
			ns $n ss -tin state established '( dport = 5202 or dport = 5203 or dport = 5201 )' 2>/dev/null |
				tail -n +2 | grep -E 'cwnd' | tail -1 | tr -s ' \t' ' ' | sed "s/^/#   t=$i /" >&2
		fi
	done
}
# snmp NS: the namespace's TcpExt and Tcp counters, one "name value" a line.
snmp() {
	ns $1 cat /proc/net/netstat /proc/net/snmp 2>/dev/null | awk '
		$1 == "TcpExt:" || $1 == "Tcp:" {
			if (!($1 in names)) { names[$1] = 1; for (i = 2; i <= NF; i++) h[$1, i] = $i; next }
			for (i = 2; i <= NF; i++) print h[$1, i], $i
		}'
}
# run WHO DIR LOSS: one run; prints the goodput.
run() {
	local who=$1 dir=$2 x=$3 peer=m2 r kn=c cap=m2 tp=""
	[ "$who" = sluice ] && peer=t0 cap=t0
	[ "$dir" = receive ] && kn=s cap=m0
	[ "$VERBOSE" = 1 ] && snmp $kn >/tmp/$P.snmp0
	# The receiver's resets (a kernel receiver's in P-c) and the frames
	# the TAP device dropped at its queue (tx_dropped; its txqueuelen).
	local rst0 drop0
	rst0=$(snmp c | awk '$1 == "OutRsts" { print $2 }')
	drop0=$(ns m cat /sys/class/net/t0/statistics/tx_dropped)
	ns m "$relay" m0 $peer "$DELAY_US" "$x" $seed $((SECS + 8)) 2>/tmp/$P.relay &
	local rp=$!
	if [ -n "${PCAP:-}" ]; then
		mkdir -p "$PCAP"
		# ip netns exec execs tcpdump: $! is tcpdump's own pid.
		ip netns exec $P-m tcpdump -i $cap -s 128 -w "$PCAP/$who-$dir-$x-$(date +%s%N).pcap" \
			tcp >/dev/null 2>&1 &
		tp=$!
	fi
	sleep 0.2
	[ "$VERBOSE" = 1 ] && sample $who $dir &
	if [ "$dir" = send ]; then
		if [ "$who" = kernel ]; then
			r=$(goodput c iperf3 -c $S -p 5202)
		else
			r=$(goodput m "$sluice" run --stack $st --tap t0 --addr $L/24 -- iperf3 -c $S -p 5202)
		fi
	else
		if [ "$who" = kernel ]; then
			r=$(goodput s iperf3 -c $K -p 5203)
		else
			# Each run's stack has a link address of its own: the
			# peer's neighbour entry of the last must go.
			ns s ip neigh flush dev s0
			ns m timeout $((SECS + 20)) "$sluice" run --stack $st --tap t0 --addr $L/24 -- iperf3 -s -4 -1 -p 5201 >/dev/null 2>&1 &
			local sp=$!
			for _ in $(seq 50); do "$sluice" fds $st 2>/dev/null | grep -q iperf3 && break; sleep 0.1; done
			r=$(goodput s iperf3 -c $L -p 5201)
			wait $sp 2>/dev/null
		fi
	fi
	if [ "$VERBOSE" = 1 ]; then
		echo "## $who $dir loss $x%: $r Mbit/s" >&2
		grep -E 'sender|receiver' /tmp/$P.out | sed 's/^/#   /' >&2
		[ "$who" = sluice ] && "$sluice" dump $st 2>/dev/null |
			grep -E '^  tcp_' | tr -s ' ' | paste -sd' ' | fold -w 160 | sed 's/^/#   /' >&2
		snmp $kn | awk 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { printf "%s %d ", $1, $2 - a[$1] } END { print "" }' \
			/tmp/$P.snmp0 - | fold -w 160 | sed "s/^/#   kernel ($kn) /" >&2
		if [ "$who" = kernel ] && [ "$dir" = receive ]; then
			echo "#   kernel receiver (c) resets sent: $(($(snmp c | awk '$1 == "OutRsts" { print $2 }') - rst0))" >&2
		elif [ "$who" = sluice ]; then
			echo "#   t0 (txqueuelen $(ns m cat /sys/class/net/t0/tx_queue_len)) frames dropped at its queue: $(($(ns m cat /sys/class/net/t0/statistics/tx_dropped) - drop0))" >&2
		fi
		echo >&2
	fi
	[ -n "$tp" ] && { sleep 0.3; kill $tp 2>/dev/null; wait $tp 2>/dev/null; }
	kill $rp 2>/dev/null
	wait $rp 2>/dev/null
	[ "$VERBOSE" = 1 ] && sed 's/^/#   /' /tmp/$P.relay >&2
	rm -rf /dev/shm/sluice-$st* /dev/shm/sluicefd-$st*
	echo "$r"
}

echo "# bulk TCP goodput, Mbit/s at the receiver, iperf3 -t $SECS; relay: delay ${DELAY_US}us and loss X% each way"
echo "# host kernel $(uname -r) (${CC:-cubic}), load $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds, kernel and Sluice alternating"
printf '%-6s %-8s %-22s %-22s %s\n' loss dir kernel sluice "sluice/kernel (medians)"
for x in $LOSS; do
	for dir in $DIRS; do
		ks="" ss=""
		# Round r drops by seed r for both stacks alike (run() is in a
		# command substitution: a seed it moved would not outlive it,
		# and every run used seed 1 before).
		for seed in $(seq "$ROUNDS"); do
			ks="$ks $(run kernel $dir $x)"
			ss="$ss $(run sluice $dir $x)"
		done
		ratio=$(printf '%s\n%s\n' "$ks" "$ss" | awk -f "$top/tests/bench/median_ratio.awk")
		printf '%-6s %-8s %-22s %-22s %s\n' "$x%" $dir "$ks" "$ss" "$ratio"
	done
done
[ "$VERBOSE" = 1 ] || rm -f /tmp/$P.out /tmp/$P.relay
rm -f /tmp/$P.snmp0
