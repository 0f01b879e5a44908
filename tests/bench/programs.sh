#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Real programs, the kernel beside Sluice in the same run (issue 5's
# benchmarks): each pair runs once on the kernel's loopback and once with
# both ends under `sluice run` on one stack (no module: a /dev/shm stack,
# 127.0.0.1 inside it), alternating, ROUNDS times.  A benchmark, not a
# test: it prints figures and asserts nothing.
#
#   one machine, 2 CPUs:  [ server  CPU 1 ] <-- 127.0.0.1 --> [ client  CPU 0 ]
#                          kernel: lo          Sluice: one stack, both ends
#
#   bash tests/bench/programs.sh [-t SECONDS] [-r ROUNDS] [-o WHAT,...]
#   WHAT: sockperf-tcp sockperf-udp sockperf-tput iperf3 redis nginx
#
# Spinning on both sides: sockperf runs with --nonblocked (a busy loop
# on recvfrom, the kernel's equivalent of Sluice's busy-polling), Sluice
# with --profile latency for ping-pong and throughput for the rest.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
sluice=$top/build/tools/sluice
secs=3
rounds=2
only=sockperf-tcp,sockperf-udp,sockperf-tput,iperf3,redis,nginx
while getopts t:r:o: o; do
	case $o in
	t) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	o) only=$OPTARG ;;
	*) echo "usage: $0 [-t SECONDS] [-r ROUNDS] [-o WHAT,...]" >&2; exit 2 ;;
	esac
done
[ -x "$sluice" ] || { echo "build first: make" >&2; exit 2; }
tmp=$(mktemp -d)
st=bench-prog-$$
cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$top/tests/host/nginx_conf.sh"

want() { [[ ",$only," == *",$1,"* ]]; }
have() { command -v "$1" >/dev/null || { echo "# $1 not installed: skipped (tests/vm/deps.sh)"; false; }; }

# prefix MODE PROFILE: how to start a program in MODE (kernel or sluice).
prefix() {
	if [ "$1" = sluice ]; then
		echo "$sluice run --stack $st --profile $2 --"
	fi
}

# Start a server in the background, wait for its port, run the client.
# serve MODE PORT CMD...: sets $srv_pid
serve() {
	local mode=$1 port=$2
	shift 2
	taskset -c 1 "$@" >"$tmp/server.log" 2>&1 &
	srv_pid=$!
	for _ in $(seq 100); do
		if [ "$mode" = sluice ]; then
			"$sluice" fds "$st" 2>/dev/null | grep -q ":$port" && return 0
		else
			ss -ltn -ltu 2>/dev/null | grep -q "127.0.0.1:$port " && return 0
		fi
		sleep 0.05
	done
	sleep 0.5	# not visible by either means: give it a moment
}

stop() {
	kill -INT "$srv_pid" 2>/dev/null
	for _ in $(seq 40); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
}

row() {	# what kernel sluice unit better(lower|higher)
	local r
	r=$(awk -v k="$2" -v s="$3" 'BEGIN { if (k > 0 && s > 0) printf "%.2f", s / k; else print "-" }')
	printf '| %s | %s %s | %s %s | %s |\n' "$1" "$2" "$4" "$3" "$4" "$r"
}

sockperf_pp() {	# MODE tcp|udp -> one-way latency in usec
	local mode=$1 proto=$2 p pre flags=(--nonblocked)
	p=$((12100 + RANDOM % 800))
	pre=$(prefix "$mode" latency)
	[ "$proto" = tcp ] && flags+=(--tcp)
	serve "$mode" "$p" $pre sockperf server -i 127.0.0.1 -p "$p" "${flags[@]}"
	# One second at most: sockperf sizes its sequence table for the
	# kernel's rates, and Sluice's UDP ping-pong overruns it in 3 s
	# ("_seqN > m_maxSequenceNo").
	taskset -c 0 $pre sockperf ping-pong -i 127.0.0.1 -p "$p" "${flags[@]}" \
		-m 64 -t 1 >"$tmp/client.log" 2>&1
	stop
	sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$tmp/client.log" | tail -1
	grep -q 'avg-latency=' "$tmp/client.log" || tail -n 3 "$tmp/client.log" "$tmp/server.log" | sed 's/^/# /' >&2
}

sockperf_tput() {	# MODE -> messages received per second (64-byte UDP)
	local mode=$1 p pre n
	p=$((12100 + RANDOM % 800))
	pre=$(prefix "$mode" throughput)
	serve "$mode" "$p" $pre sockperf server -i 127.0.0.1 -p "$p" --nonblocked
	taskset -c 0 $pre sockperf throughput -i 127.0.0.1 -p "$p" -m 64 -t "$secs" \
		>"$tmp/client.log" 2>&1
	sleep 0.2
	stop
	n=$(sed -n 's/.*Total \([0-9]*\) messages received.*/\1/p' "$tmp/server.log" | tail -1)
	awk -v n="${n:-0}" -v t="$secs" 'BEGIN { printf "%.0f", n / t }'
}

iperf3_bulk() {	# MODE -> Gbit/s received
	local mode=$1 p pre
	p=$((15300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	serve "$mode" "$p" $pre iperf3 -s -1 -p "$p" -B 127.0.0.1
	taskset -c 0 $pre iperf3 -c 127.0.0.1 -p "$p" -t "$secs" -f g >"$tmp/client.log" 2>&1
	stop
	awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Gbits/sec") v = $i } END { print v }' \
		"$tmp/client.log"
}

redis_rps() {	# MODE -> "SET GET" requests per second
	local mode=$1 p pre
	p=$((16300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	serve "$mode" "$p" $pre redis-server --port "$p" --bind 127.0.0.1 --save "" \
		--appendonly no
	taskset -c 0 $pre redis-benchmark -h 127.0.0.1 -p "$p" -t set,get -n $((secs * 20000)) \
		-c 10 -q >"$tmp/client.log" 2>&1
	stop
	tr '\r' '\n' <"$tmp/client.log" |
		awk -F'[: ]+' '/^SET: [0-9]/ { s = $2 } /^GET: [0-9]/ { g = $2 } END { print s, g }'
}

nginx_rps() {	# MODE -> requests per second (wrk, 1 thread, 16 connections)
	local mode=$1 p pre
	p=$((18300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	nginx_conf "$tmp" "$p" 1
	serve "$mode" "$p" $pre nginx -c "$tmp/nginx.conf" -p "$tmp"
	taskset -c 0 $pre wrk -t 1 -c 16 -d "${secs}s" "http://127.0.0.1:$p/" >"$tmp/client.log" 2>&1
	stop
	sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/client.log"
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg);" \
	"${secs}s a run, $rounds rounds, kernel and Sluice alternating"
echo "| what | kernel | Sluice | Sluice / kernel |"
echo "|---|---|---|---|"
for ((r = 1; r <= rounds; r++)); do
	if want sockperf-tcp && have sockperf; then
		k=$(sockperf_pp kernel tcp); s=$(sockperf_pp sluice tcp)
		row "sockperf TCP ping-pong 64 B, one-way latency" "${k:-0}" "${s:-0}" µs
	fi
	if want sockperf-udp && have sockperf; then
		k=$(sockperf_pp kernel udp); s=$(sockperf_pp sluice udp)
		# A client that raced its server's bind reports nothing: once more.
		[ -n "$s" ] || s=$(sockperf_pp sluice udp)
		row "sockperf UDP ping-pong 64 B, one-way latency" "${k:-0}" "${s:-0}" µs
	fi
	if want sockperf-tput && have sockperf; then
		k=$(sockperf_tput kernel); s=$(sockperf_tput sluice)
		row "sockperf UDP throughput 64 B, messages received" "${k:-0}" "${s:-0}" msg/s
	fi
	if want iperf3 && have iperf3; then
		k=$(iperf3_bulk kernel); s=$(iperf3_bulk sluice)
		row "iperf3 TCP single stream" "${k:-0}" "${s:-0}" Gbit/s
	fi
	if want redis && have redis-server && have redis-benchmark; then
		read -r ks kg <<<"$(redis_rps kernel)"; read -r ss sg <<<"$(redis_rps sluice)"
		row "redis-benchmark SET, 10 clients, no pipelining" "${ks:-0}" "${ss:-0}" req/s
		row "redis-benchmark GET, 10 clients, no pipelining" "${kg:-0}" "${sg:-0}" req/s
	fi
	if want nginx && have nginx && have wrk; then
		k=$(nginx_rps kernel); s=$(nginx_rps sluice)
		row "nginx (1 worker) + wrk (1 thread, 16 connections)" "${k:-0}" "${s:-0}" req/s
	fi
done
