#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# A benchmark, not a test (issue 23 items 3 and 4; tests/vm/run.sh --bench
# churn): short connections on the module path, the socket cache's gain.
# tests/bench/conn_churn's server and client (connect, 1 byte each way,
# close; BENCH_N in a row) on 127.0.0.1: the kernel's loopback, then both
# under sluice run on one module stack on a veth (kring, SLUICE_LOOPBACK=1:
# 127.0.0.1 in the stack, module socket fds) with the socket cache
# (SLUICE_SOCKET_CACHE=1: SOCK_PARK and SOCK_REUSE) and without it (=0:
# SOCK_FD and close()), alternating, BENCH_ROUNDS times, from one client
# process and from 32 (conn_churn client N K; BENCH_K).  One line a run:
# connections a second and CPU time a connection (user + system of both
# ends from /proc/PID/stat, the client's as its shell's reaped child).
# QEMU (TCG) emulates the CPUs: compare within a round, never with the
# host's figures.
#
#   VM root namespace: kernel lo | Sluice stack "cc" on slc0 (kring), lo in it
# kmods: veth
PATH=/opt/sluice/bin:$PATH
NETNS_NS=slc-peer NETNS_DEV=slc0 NETNS_PEER=slc1 NETNS_S=10.82.0.1 NETNS_K=10.82.0.2
. /opt/sluice/bin/netns.sh
N=${BENCH_N:-2000}
ROUNDS=${BENCH_ROUNDS:-3}
KS=${BENCH_K:-1 32}
cleanup() {
	[ -n "$hold" ] && kill "$hold" 2>/dev/null
	wait 2>/dev/null
	netns_down
}
trap cleanup EXIT
lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
netns_up || { echo "the veth pair did not come up"; exit 1; }
$IP link set lo up
tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
ticks() { awk '{ print $14 + $15 + $16 + $17 }' "$1"; }
now_ms() { awk '{ printf "%d", $1 * 1000 }' /proc/uptime; }
# one MODE ROUND: "MODE conn/s cpu-us"
one() {
	p=$((7400 + K + $2 * 3 + $3))
	pre=""
	case $1 in
	cache) pre="env SLUICE_SOCKET_CACHE=1 SLUICE_LOOPBACK=1 SLUICE_UDP=0 sluice run --stack cc --ifname $NETNS_DEV --" ;;
	nocache) pre="env SLUICE_SOCKET_CACHE=0 SLUICE_LOOPBACK=1 SLUICE_UDP=0 sluice run --stack cc --ifname $NETNS_DEV --" ;;
	esac
	rm -f /tmp/cc.srv /tmp/cc.spid
	# The server says its pid, then becomes the command (env and sluice
	# run exec it: the same process).
	timeout 600 sh -c 'echo $$ >/tmp/cc.spid; exec "$@"' sh \
		$pre conn_churn server $p $((N * 10)) >/tmp/cc.srv 2>&1 &
	srv=$!
	i=0
	while [ $i -lt 300 ] && ! grep -q ready /tmp/cc.srv 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
	spid=$(cat /tmp/cc.spid)
	s0=$(ticks /proc/$spid/stat)
	t0=$(now_ms)
	sh -c '"$@" >/dev/null 2>&1; cat /proc/$$/stat' sh $pre conn_churn client $p $N $K >/tmp/cc.cli
	t1=$(now_ms)
	s1=$(ticks /proc/$spid/stat)
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	c=$(ticks /tmp/cc.cli)
	awk -v m=$1 -v n=$N -v ms=$((t1 - t0)) -v t=$((s1 - s0 + c)) -v hz=$tck \
		'BEGIN { printf "%-8s %8.0f conn/s %8.1f us CPU a connection\n", m, n * 1000 / (ms ? ms : 1), t * 1e6 / hz / n }'
}
# A process that holds the stack for the whole run (its helper too).
timeout 3000 env SLUICE_UDP=0 sluice run --stack cc --ifname $NETNS_DEV -- \
	sockfd_prog idle 2990 >/tmp/cc.hold 2>&1 &
hold=$!
i=0
while [ $i -lt 300 ] && ! grep -q ready /tmp/cc.hold 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
for K in $KS; do
echo "# $N connections a run from $K client processes, $ROUNDS rounds; the module's features: $(cat /sys/class/misc/sluice/features)"
r=1
while [ $r -le $ROUNDS ]; do
	one kernel $r 0
	one cache $r 1
	one nocache $r 2
	r=$((r + 1))
done | tee /tmp/cc.all
awk '{ n[$1]++; r[$1] += $2; c[$1] += $4 }
	END { for (m in n) printf "# mean %-8s %8.0f conn/s %8.1f us CPU a connection\n", m, r[m] / n[m], c[m] / n[m] }' /tmp/cc.all
done
sluice dump cc 2>/dev/null | grep -E '^  (sock_fd_cached|sockfd_released) ' | sed 's/^/# /'
