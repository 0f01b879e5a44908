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
#   bash tests/bench/programs.sh [-t SECONDS] [-r ROUNDS] [-o WHAT,...] [-u]
#   -u: unpinned, as users run programs (the scheduler places both ends;
#       with more runnable threads than CPUs they preempt each other)
#   WHAT: sockperf-tcp sockperf-udp sockperf-tput iperf3 redis nginx
#         pgbench pgbench-C (its two -C rows alone, not by default)
#         java-tpc apache churn churn-long (not by default: -t is its
#         whole length, both servers living through all of it, each
#         side's batches as long as its rate makes them: in -t 1200 the
#         kernel's took 784 s and Sluice's 375 s)
#         nginx-10k (not by default: nginx with 10,000 keep-alive
#         connections, `make bench-many`)
#         nginx-4w (not by default: nginx with 4 workers, EPOLLEXCLUSIVE)
#
# Spinning on both sides: sockperf runs with --nonblocked (a busy loop
# on recvfrom, the kernel's equivalent of Sluice's busy-polling), Sluice
# with --profile latency for ping-pong and throughput for the rest.
#
# pgbench, java-tpc and churn also give the CPU time per transaction
# (request, connection) beside each rate: user + system time of both
# ends over the run, the server's whole process tree (/proc/PID/stat,
# with the children it reaped) and the client's (/usr/bin/time), in µs.
#   pgbench   PostgreSQL (fsync off, 32 MB shared_buffers, TCP on
#             127.0.0.1 only, its own user when run as root), pgbench
#             -s 4: select-only (-S) and TPC-B-like, 1, 8 and 32 clients,
#             and both with -C (a connection per transaction), 8 clients.
#             Under Sluice the server and pgbench share one stack,
#             with the default profile, as a new user runs them (the
#             throughput profile's 20 µs spin is shorter than most of
#             PostgreSQL's answers: one client ran at a third of the rate).
#   java-tpc  tests/bench/TpcHttp.java, a thread per connection, blocking
#             java.net sockets, keep-alive HTTP/1.1; wrk, 16 and 64
#             connections, after a 1 s warm-up (the JIT).
#   apache    Apache httpd (Debian's apache2-bin), blocking I/O, a static
#             file: mpm_prefork (a process a connection, as a forking
#             server) and mpm_worker (a thread a connection), wrk with 16
#             and 64 keep-alive connections, and prefork with
#             "Connection: close"; the default profile, as a new user.
#   churn     new connections: build/tests/bench/conn_churn, 50,000 in a
#             row and from 32 client processes; nginx with wrk sending
#             "Connection: close".
#   nginx-10k nginx (1 worker, worker_connections 15000, its fd limit
#             raised by worker_rlimit_nofile to 30000 or the hard limit,
#             listen backlog 15000, which Linux cuts to
#             net.core.somaxconn) and wrk (1 thread, 10,000
#             keep-alive connections, --latency): requests/s, CPU µs a
#             request, p99 latency.  wrk holds 10,000 fds: `ulimit -n`
#             must allow it.  Under Sluice a /dev/shm stack has 262,144
#             socket slots: no setting needed.
#   nginx-4w  nginx with worker_processes 4 (its default accept_mutex
#             off: each worker's epoll set holds the listener with
#             EPOLLEXCLUSIVE beside its channel to the master and an
#             eventfd) and wrk (1 thread): 16 connections keep-alive and
#             "Connection: close", and 1 connection "Connection: close"
#             (each request a new connection to workers that sleep
#             between: one should wake): requests/s, CPU µs a request
#             (both ends) and the server's voluntary context switches a
#             request (its sleeps that ended: master and workers, every
#             thread, from /proc/PID/task/*/status).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
sluice=$top/build/tools/sluice
secs=3
rounds=2
only=sockperf-tcp,sockperf-udp,sockperf-tput,iperf3,redis,nginx,pgbench,java-tpc,apache,churn
pinned=yes
while getopts t:r:o:u o; do
	case $o in
	t) secs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	o) only=$OPTARG ;;
	u) pinned=no ;;
	*) echo "usage: $0 [-t SECONDS] [-r ROUNDS] [-o WHAT,...] [-u]" >&2; exit 2 ;;
	esac
done
# $pin0, $pin1: the client's and the server's CPU (words before a command)
pin0="taskset -c 0" pin1="taskset -c 1"
[ "$pinned" = yes ] || pin0="" pin1=""
[ -x "$sluice" ] || { echo "build first: make" >&2; exit 2; }
tmp=$(mktemp -d)
pg=""	# PostgreSQL's directory, made on first use
st=bench-prog-$$
churn_bin=$top/build/tests/bench/conn_churn
cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	rm -rf "$tmp" ${pg:+"$pg"}
}
trap cleanup EXIT
. "$top/tests/host/nginx_conf.sh"

want() { [[ ",$only," == *",$1,"* ]]; }
# PostgreSQL's programs live in /usr/lib/postgresql/VERSION/bin on Debian,
# not on PATH (its wrappers are for clusters made by pg_createcluster).
for d in /usr/lib/postgresql/*/bin; do
	[ -x "$d/postgres" ] && pg_path=$d
done
[ -n "${pg_path:-}" ] && PATH=$PATH:$pg_path

# The Debian package of each program, installed when missing (as root; as
# another user the row is skipped with a note).
declare -A pkg_of=([sockperf]=sockperf [iperf3]=iperf3 [redis-server]=redis-server
	[redis-benchmark]=redis-tools [nginx]=nginx [wrk]=wrk [postgres]=postgresql
	[pgbench]=postgresql [java]=default-jdk-headless [javac]=default-jdk-headless
	[apache2]=apache2-bin)
apt_updated=""
have() {
	local p=${pkg_of[$1]:-}
	command -v "$1" >/dev/null && return 0
	if [ -n "$p" ] && [ "$(id -u)" = 0 ]; then
		[ -n "$apt_updated" ] || { apt-get update -qq >&2; apt_updated=1; }
		echo "# installing $p (for $1)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >&2
		for d in /usr/lib/postgresql/*/bin; do
			[ -x "$d/postgres" ] && [[ ":$PATH:" != *":$d:"* ]] && PATH=$PATH:$d
		done
		command -v "$1" >/dev/null && return 0
	fi
	echo "# $1 not installed: skipped (Debian package ${p:-?})"
	false
}

# prefix MODE [PROFILE]: how to start a program in MODE (kernel or sluice);
# no PROFILE: the default, as a new user runs it.
prefix() {
	if [ "$1" = sluice ]; then
		echo "$sluice run --stack $st ${2:+--profile $2} --"
	fi
}

# Start a server in the background, wait for its port, run the client.
# serve MODE PORT CMD...: sets $srv_pid
serve() {
	local mode=$1 port=$2
	shift 2
	$pin1 "$@" >"$tmp/server.log" 2>&1 &
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

rowc() {	# what kernel kernel-cpu sluice sluice-cpu unit: a rate, CPU µs per transaction
	local r
	r=$(awk -v k="$2" -v s="$4" -v kc="$3" -v sc="$5" 'BEGIN {
		if (k > 0 && s > 0) printf "%.2f", s / k; else printf "-"
		if (kc > 0 && sc > 0) printf " (CPU %.2f)", sc / kc }')
	printf '| %s | %s %s, %s µs CPU | %s %s, %s µs CPU | %s |\n' "$1" "$2" "$6" "$3" "$4" "$6" "$5" "$r"
}

# ticks PID: clock ticks used so far by PID and its descendants, each
# with the children it has reaped (utime stime cutime cstime)
ticks() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
		{ pid = $1; sub(/^.*\) /, ""); up[pid] = $2; t[pid] = $12 + $13 + $14 + $15 }
		END {
			for (p in t) {
				for (q = p; q != root && q > 1; q = up[q])
					;
				if (q == root)
					n += t[p]
			}
			print n + 0
		}'
}

# switches PID: voluntary context switches so far (sleeps that ended) of
# every thread of PID and of its descendants that are alive
switches() {
	local p n=0 v
	for p in $(cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
		{ pid = $1; sub(/^.*\) /, ""); up[pid] = $2 }
		END { for (p in up) { for (q = p; q != root && q > 1; q = up[q]) ; if (q == root) print p } }'); do
		v=$(cat "/proc/$p/task/"*/status 2>/dev/null |
			awk '/^voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }')
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

# timed CMD...: run the client, its user + system seconds to $tmp/time
timed() {
	/usr/bin/time -f '%U %S' -o "$tmp/time" "$@"
}

# per_tx TICKS N: µs of CPU per transaction, the server's TICKS and the
# client's time (timed) over N transactions
per_tx() {
	awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" '
		END { if (n > 0) printf "%.1f", (t / hz + $1 + $2) / n * 1e6; else print 0 }' "$tmp/time"
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
	$pin0 $pre sockperf ping-pong -i 127.0.0.1 -p "$p" "${flags[@]}" \
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
	$pin0 $pre sockperf throughput -i 127.0.0.1 -p "$p" -m 64 -t "$secs" \
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
	$pin0 $pre iperf3 -c 127.0.0.1 -p "$p" -t "$secs" -f g >"$tmp/client.log" 2>&1
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
	$pin0 $pre redis-benchmark -h 127.0.0.1 -p "$p" -t set,get -n $((secs * 20000)) \
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
	$pin0 $pre wrk -t 1 -c 16 -d "${secs}s" "http://127.0.0.1:$p/" >"$tmp/client.log" 2>&1
	stop
	sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/client.log"
}

nginx_many() {	# MODE CONNECTIONS -> "requests/s cpu-µs-per-request p99-ms"
	local mode=$1 c=$2 p pre t0 n rps p99
	p=$((18300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	# nginx warns "worker_connections are not enough, reusing
	# connections" (and closes idle ones) at 10,240 for 10,000 clients.
	nginx_conf "$tmp" "$p" 1 $((c * 3 / 2))
	serve "$mode" "$p" $pre nginx -c "$tmp/nginx.conf" -p "$tmp"
	t0=$(ticks "$srv_pid")
	timed timeout $((secs + 120)) taskset -c 0 $pre wrk -t 1 -c "$c" -d "${secs}s" --latency \
		--timeout 10s "http://127.0.0.1:$p/" >"$tmp/client.log" 2>&1
	t0=$(($(ticks "$srv_pid") - t0))
	stop
	n=$(awk '/ requests in / { print $1 }' "$tmp/client.log")
	rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/client.log")
	# "     99%    12.34ms" (us, ms or s) -> ms
	p99=$(awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
		if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
		printf "%.2f", v }' "$tmp/client.log")
	grep -E 'errors|Non-2xx' "$tmp/client.log" | sed "s/^ */# $mode: /" >&2
	[ -n "$n" ] || tail -n 3 "$tmp/client.log" "$tmp/server.log" | sed 's/^/# /' >&2
	echo "$(printf '%.0f' "${rps:-0}") $(per_tx "$t0" "${n:-0}") ${p99:-0}"
}

# PostgreSQL runs as its own user when we are root (it refuses root), in a
# data directory of its own made on first use, pgbench as the same user.
pg_as=()
pg_ok=""
pg_init() {	# once: initdb, pgbench -i -s 4 (on the kernel); false if that failed
	local p u
	case $pg_ok in yes) return 0 ;; no) return 1 ;; esac
	pg_ok=no
	pg=$(mktemp -d)
	pg_bin=$(dirname "$(readlink -f "$(command -v postgres)")")
	if [ "$(id -u)" = 0 ]; then
		id -u postgres >/dev/null 2>&1 && u=postgres || u=nobody
		chown "$u" "$pg"
		pg_as=(setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups)
	fi
	(cd "$pg" && "${pg_as[@]}" "$pg_bin/initdb" -D "$pg/data" -U postgres -A trust --no-sync \
		>"$tmp/initdb.log" 2>&1) || { sed 's/^/# /' "$tmp/initdb.log"; return 1; }
	p=$((20300 + RANDOM % 500))
	pg_serve kernel "$p" || { stop; return 1; }
	if (cd "$pg" && timeout 300 "${pg_as[@]}" pgbench -i -q -s 4 -h 127.0.0.1 -p "$p" \
		-U postgres postgres >"$tmp/client.log" 2>&1); then
		pg_ok=yes
	else
		sed 's/^/# /' "$tmp/client.log"
	fi
	stop
	[ "$pg_ok" = yes ]
}

pg_serve() {	# MODE PORT: PostgreSQL on 127.0.0.1:PORT, no unix socket
	local mode=$1 p=$2 pre
	pre=$(prefix "$mode")
	serve "$mode" "$p" "${pg_as[@]}" $pre "$pg_bin/postgres" -D "$pg/data" -h 127.0.0.1 -p "$p" -k "" \
		-c fsync=off -c synchronous_commit=off -c full_page_writes=off \
		-c shared_buffers=32MB -c max_connections=100 -c autovacuum=off
	for _ in $(seq 100); do	# up: listening, and past recovery
		(cd "$pg" && "${pg_as[@]}" $pre pg_isready -q -h 127.0.0.1 -p "$p" -U postgres) && return 0
		sleep 0.1
	done
	echo "# postgres did not start ($mode)" >&2
	tail -n 5 "$tmp/server.log" | sed 's/^/# /' >&2
	false
}

pgbench_tps() {	# MODE CLIENTS [pgbench flags] -> "tps cpu-µs-per-transaction"
	local mode=$1 c=$2 p pre t0 n tps
	shift 2
	p=$((20300 + RANDOM % 500))
	pre=$(prefix "$mode")
	pg_serve "$mode" "$p" || { stop; echo "0 0"; return; }
	t0=$(ticks "$srv_pid")
	(cd "$pg" && timed timeout $((secs + 60)) $pin0 "${pg_as[@]}" $pre pgbench \
		-h 127.0.0.1 -p "$p" -U postgres -c "$c" -j $((c < 2 ? 1 : 2)) -T "$secs" "$@" postgres \
		>"$tmp/client.log" 2>&1)
	t0=$(($(ticks "$srv_pid") - t0))
	stop
	n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$tmp/client.log")
	# "without initial connection time" where pgbench says so; with -C
	# connecting is part of each transaction
	tps=$(awk '/^tps = / { v[++i] = $3 } /^tps = .*without/ { w = $3 }
		END { print w != "" ? w : (i ? v[1] : 0) }' "$tmp/client.log")
	[ -n "$n" ] || tail -n 3 "$tmp/client.log" "$tmp/server.log" | sed 's/^/# /' >&2
	echo "$(printf '%.0f' "$tps") $(per_tx "$t0" "${n:-0}")"
}

# wrk_cpu MODE PORT CONNECTIONS [wrk flags]: wrk (1 thread) on CPU 0
# against $srv_pid -> "requests/s cpu-µs-per-request"
wrk_cpu() {
	local mode=$1 p=$2 c=$3 pre t0 n rps
	shift 3
	pre=$(prefix "$mode" throughput)
	t0=$(ticks "$srv_pid")
	timed timeout $((secs + 60)) $pin0 $pre wrk -t 1 -c "$c" -d "${secs}s" "$@" \
		"http://127.0.0.1:$p/" >"$tmp/client.log" 2>&1
	t0=$(($(ticks "$srv_pid") - t0))
	n=$(awk '/ requests in / { print $1 }' "$tmp/client.log")
	rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/client.log")
	grep -E 'errors|Non-2xx' "$tmp/client.log" | sed "s/^ */# $mode: /" >&2
	[ -n "$n" ] || tail -n 3 "$tmp/client.log" "$tmp/server.log" | sed 's/^/# /' >&2
	echo "$(printf '%.0f' "${rps:-0}") $(per_tx "$t0" "${n:-0}")"
}

java_rps() {	# MODE CONNECTIONS -> "requests/s cpu-µs-per-request"
	local mode=$1 c=$2 p pre
	p=$((21300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	if [ ! -e "$tmp/java/TpcHttp.class" ]; then
		javac -d "$tmp/java" "$top/tests/bench/TpcHttp.java" || { echo "0 0"; return; }
	fi
	# The JVM's sockets are AF_INET6 unless told otherwise; Sluice takes
	# those too since issue 20 (v4-mapped), but these figures were all
	# measured with AF_INET sockets, so they stay so.
	serve "$mode" "$p" $pre java -Djava.net.preferIPv4Stack=true -cp "$tmp/java" TpcHttp "$p"
	$pin0 $pre wrk -t 1 -c "$c" -d 1s "http://127.0.0.1:$p/" >/dev/null 2>&1	# warm-up
	wrk_cpu "$mode" "$p" "$c"
	stop
}

# apache_rps MODE MPM CONNECTIONS [wrk flags] -> "requests/s cpu-µs-per-request"
apache_rps() {
	local mode=$1 mpm=$2 c=$3 p pre d
	shift 3
	# "close": the header with its space (as one word "Connection:close"
	# wrk sends it so and the connection stays open: nginx_close()).
	[ "${1-}" = close ] && set -- -H "Connection: close"
	p=$((18900 + RANDOM % 500))
	pre=$(prefix "$mode")
	d=$tmp/apache
	mkdir -p "$d/htdocs" "$d/logs"
	echo "hello from apache" >"$d/htdocs/index.html"
	# Its children run as nobody when we are root: a way in for them.
	chmod a+x "$tmp"
	chmod -R a+rX "$d"
	[ "$(id -u)" = 0 ] && chown nobody "$d/logs"
	cat >"$d/httpd.conf" <<EOC
ServerRoot $d
Listen 127.0.0.1:$p
LoadModule mpm_${mpm}_module /usr/lib/apache2/modules/mod_mpm_$mpm.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
ServerName localhost
PidFile $d/httpd.pid
ErrorLog $d/logs/error.log
Mutex file:$d/logs
DocumentRoot $d/htdocs
DirectoryIndex index.html
KeepAlive On
MaxKeepAliveRequests 0
MaxRequestWorkers 128
ServerLimit 128
EOC
	if [ "$mpm" = prefork ]; then
		printf 'StartServers 16\nMinSpareServers 16\nMaxSpareServers 80\n' >>"$d/httpd.conf"
	else
		printf 'StartServers 2\nThreadsPerChild 64\nMinSpareThreads 64\nMaxSpareThreads 128\n' \
			>>"$d/httpd.conf"
	fi
	[ "$(id -u)" = 0 ] && printf 'User nobody\nGroup %s\n' "$(id -gn nobody)" >>"$d/httpd.conf"
	# A session of its own: stopping, it signals its whole process group.
	serve "$mode" "$p" setsid $pre apache2 -f "$d/httpd.conf" -DFOREGROUND
	$pin0 $pre wrk -t 1 -c "$c" -d 1s "$@" "http://127.0.0.1:$p/" >/dev/null 2>&1	# warm-up
	wrk_cpu "$mode" "$p" "$c" "$@"
	stop
	sleep 0.3	# its children see the parent gone
}

nginx_close() {	# MODE -> "requests/s cpu-µs-per-request", a connection a request
	local mode=$1 p pre
	p=$((18300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	nginx_conf "$tmp" "$p" 1
	serve "$mode" "$p" $pre nginx -c "$tmp/nginx.conf" -p "$tmp"
	wrk_cpu "$mode" "$p" 16 -H "Connection: close"
	stop
}

nginx_workers() {	# MODE CONNECTIONS [WRK ARGS] -> "requests/s cpu-µs-per-request server-switches-per-request"
	local mode=$1 c=$2 p pre c0 r n
	shift 2
	p=$((18300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	nginx_conf "$tmp" "$p" 4
	serve "$mode" "$p" $pre nginx -c "$tmp/nginx.conf" -p "$tmp"
	sleep 0.3	# every worker started and asleep
	c0=$(switches "$srv_pid")
	r=$(wrk_cpu "$mode" "$p" "$c" "$@")
	c0=$(($(switches "$srv_pid") - c0))
	n=$(awk '/ requests in / { print $1 }' "$tmp/client.log")
	stop
	echo "$r $(awk -v c="$c0" -v n="${n:-0}" 'BEGIN { if (n > 0) printf "%.2f", c / n; else print 0 }')"
}

churn() {	# MODE N K -> "connections/s cpu-µs-per-connection"
	local mode=$1 n=$2 k=$3 p pre t0 r
	p=$((22300 + RANDOM % 500))
	pre=$(prefix "$mode" throughput)
	# The server takes more than N, so it is still there to be measured.
	serve "$mode" "$p" $pre "$churn_bin" server "$p" $((n * 10))
	t0=$(ticks "$srv_pid")
	timed timeout 300 $pin0 $pre "$churn_bin" client "$p" "$n" "$k" >"$tmp/client.log" 2>&1
	t0=$(($(ticks "$srv_pid") - t0))
	stop
	r=$(awk '/^connections / { print $6 }' "$tmp/client.log")
	[ -n "$r" ] || tail -n 3 "$tmp/client.log" "$tmp/server.log" | sed 's/^/# /' >&2
	grep -q ' over_100ms 0$' "$tmp/client.log" ||
		sed "s/^/# $mode K=$k: /" "$tmp/client.log" >&2
	echo "${r:-0} $(per_tx "$t0" "$([ -n "$r" ] && echo "$n" || echo 0)")"
}

# churn-long: -t SECONDS of conn_churn from 32 client processes, in
# batches of 20,000 alternating between a kernel server and a Sluice one,
# each kept running the whole time (so anything that grows shows); a line
# a pair of batches: both rates, the Sluice stack's slots, buffers and
# TIME-WAIT entries in use, the kernel's (/proc/net/sockstat: sockets in
# use, TIME-WAIT, pages), both servers' resident memory and the Sluice
# server's split into anonymous and shared (the stack's region, touched
# once).  At the end: each side's connections over its own seconds, the
# longest connection and how many took over 100 ms, and every sampled
# figure's first, last and peak, and its peak in each half of the run.
churn_long() {
	local kp=$((22800 + RANDOM % 100)) sp=$((22900 + RANDOM % 100)) pre ksrv ssrv
	local end=$((SECONDS + secs)) k s kl sl use ks krss srss
	pre=$(prefix sluice throughput)
	$pin1 "$churn_bin" server "$kp" 2000000000 >"$tmp/kserver.log" 2>&1 &
	ksrv=$!
	$pin1 $pre "$churn_bin" server "$sp" 2000000000 >"$tmp/sserver.log" 2>&1 &
	ssrv=$!
	for _ in $(seq 100); do
		grep -q ready "$tmp/kserver.log" && grep -q ready "$tmp/sserver.log" && break
		sleep 0.05
	done
	: >"$tmp/kclient"; : >"$tmp/sclient"; : >"$tmp/samples"
	echo "# churn-long: s; conn/s kernel, Sluice; Sluice sockets buffers time-wait;" \
		"kernel sockets time-wait pages; server RSS KiB kernel, Sluice (anon shared)"
	while [ "$SECONDS" -lt "$end" ]; do
		kl=$($pin0 "$churn_bin" client "$kp" 20000 32 2>&1 | tail -n 1)
		sl=$($pin0 $pre "$churn_bin" client "$sp" 20000 32 2>&1 | tail -n 1)
		echo "$kl" >>"$tmp/kclient"
		echo "$sl" >>"$tmp/sclient"
		k=$(awk '/^connections / { print $6 }' <<<"$kl")
		s=$(awk '/^connections / { print $6 }' <<<"$sl")
		use=$("$sluice" dump "$st" 2>/dev/null | awk '
			/ sockets [0-9]+\// { split($0, a, "sockets "); split(a[2], b, "/"); so = b[1]
				split($0, c, "buffers "); split(c[2], d, "/"); bu = d[1] }
			/time-wait:/ { tw = $2 } END { print so, bu, tw }')
		ks=$(awk '/^TCP:/ { print $3, $7, $11 }' /proc/net/sockstat)
		krss=$(awk '/^VmRSS/ { print $2 }' "/proc/$ksrv/status" 2>/dev/null)
		srss=$(awk '/^(VmRSS|RssAnon|RssShmem)/ { printf "%s%s", n++ ? " " : "", $2 }' \
			"/proc/$ssrv/status" 2>/dev/null)
		echo "# $SECONDS; ${k:-0} ${s:-0}; $use; $ks; ${krss:-?} ${srss:-?}"
		echo "$SECONDS ${k:-0} ${s:-0} $use $ks ${krss:-?} ${srss:-?}" >>"$tmp/samples"
	done
	kill -KILL "$ksrv" "$ssrv" 2>/dev/null
	wait "$ksrv" "$ssrv" 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	for side in kernel sluice; do
		awk -v side="$side" '
			/^connections / { n += $2; t += $4; b++; if ($8 > m) m = $8; o += $10; next }
			{ bad++ }
			END { printf "# churn-long %s: %d connections in %d batches over %.0f s of its own:" \
				" %.0f conn/s; longest %.1f ms, %d over 100 ms; %d batches failed\n",
				side, n, b, t, t ? n / t : 0, m, o, bad }' "$tmp/${side:0:1}client"
	done
	awk '
		{ for (i = 1; i <= NF; i++) v[NR, i] = $i; nf = NF }
		END {
			split("s kconn/s sconn/s sluice-sockets sluice-buffers sluice-time-wait" \
				" kernel-sockets kernel-time-wait kernel-pages kernel-RSS" \
				" sluice-RSS sluice-anon sluice-shared", name, " ")
			print "# churn-long memory: first last peak, peak of the first half, of the second"
			for (i = 4; i <= nf; i++) {
				p = p1 = p2 = 0
				for (r = 1; r <= NR; r++) {
					x = v[r, i] + 0
					if (x > p) p = x
					if (r <= NR / 2 && x > p1) p1 = x
					if (r > NR / 2 && x > p2) p2 = x
				}
				printf "#   %s: %s %s %d, %d %d\n", name[i], v[1, i], v[NR, i], p, p1, p2
			}
		}' "$tmp/samples"
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
	if want nginx-10k && have nginx && have wrk; then
		read -r k kc kp <<<"$(nginx_many kernel 10000)"
		read -r s sc sp <<<"$(nginx_many sluice 10000)"
		rowc "nginx (1 worker) + wrk (1 thread, 10,000 keep-alive connections)" \
			"$k" "$kc" "$s" "$sc" req/s
		row "... its p99 latency (wrk --latency)" "${kp:-0}" "${sp:-0}" ms
	fi
	if want nginx-4w && have nginx && have wrk; then
		for args in "16 keep" "16 close" "1 close"; do
			read -r c how <<<"$args"
			# "Connection: close" as one word, its space kept: wrk sends
			# "Connection:close" too, and the connection stays open.
			hdr=()
			[ "$how" = close ] && hdr=(-H "Connection: close")
			{ read -r k kc kw <<<"$(nginx_workers kernel "$c" "${hdr[@]}")"
			  read -r s sc sw <<<"$(nginx_workers sluice "$c" "${hdr[@]}")"; }
			what="keep-alive"
			[ "$how" = close ] && what="Connection: close"
			n="$c connections"
			[ "$c" = 1 ] && n="1 connection"
			rowc "nginx (4 workers) + wrk (1 thread, $n), $what" \
				"$k" "$kc" "$s" "$sc" req/s
			row "... the server's voluntary context switches a request" "${kw:-0}" "${sw:-0}" ""
		done
	fi
	if { want pgbench || want pgbench-C; } && have postgres && have pgbench && pg_init; then
		pgrows=("1 -S" "8 -S" "32 -S" "1" "8" "32" "8 -S -C" "8 -C")
		want pgbench || pgrows=("8 -S -C" "8 -C")
		for args in "${pgrows[@]}"; do
			read -r c flags <<<"$args"
			# shellcheck disable=SC2086 # flags: words
			{ read -r k kc <<<"$(pgbench_tps kernel "$c" $flags)"
			  read -r s sc <<<"$(pgbench_tps sluice "$c" $flags)"; }
			what="select-only (-S)"
			[[ " $flags " == *" -S "* ]] || what="TPC-B-like"
			[[ " $flags " == *" -C "* ]] && what="$what, a connection per transaction (-C)"
			n="$c clients"
			[ "$c" = 1 ] && n="1 client"
			rowc "pgbench -s 4 $what, $n" "$k" "$kc" "$s" "$sc" tps
		done
	fi
	if want java-tpc && have java && have javac && have wrk; then
		for c in 16 64; do
			read -r k kc <<<"$(java_rps kernel "$c")"; read -r s sc <<<"$(java_rps sluice "$c")"
			rowc "Java thread per connection (TpcHttp) + wrk (1 thread, $c connections)" \
				"$k" "$kc" "$s" "$sc" req/s
		done
	fi
	if want apache && have apache2 && have wrk; then
		for args in "prefork 16" "prefork 64" "worker 16" "worker 64" \
			"prefork 16 close"; do
			# shellcheck disable=SC2086 # args: words
			{ read -r k kc <<<"$(apache_rps kernel $args)"
			  read -r s sc <<<"$(apache_rps sluice $args)"; }
			read -r m c more <<<"$args"
			what="a process a connection (mpm_prefork)"
			[ "$m" = worker ] && what="a thread a connection (mpm_worker)"
			[ -n "$more" ] && what="$what, Connection: close"
			rowc "Apache httpd, $what + wrk (1 thread, $c connections)" "$k" "$kc" "$s" "$sc" req/s
		done
	fi
	if want churn && [ -x "$churn_bin" ]; then
		read -r k kc <<<"$(churn kernel 50000 1)"; read -r s sc <<<"$(churn sluice 50000 1)"
		rowc "conn_churn 50,000 connections in a row (1 B each way)" "$k" "$kc" "$s" "$sc" conn/s
		read -r k kc <<<"$(churn kernel 50000 32)"; read -r s sc <<<"$(churn sluice 50000 32)"
		rowc "conn_churn 50,000 connections from 32 client processes" "$k" "$kc" "$s" "$sc" conn/s
		if have nginx && have wrk; then
			read -r k kc <<<"$(nginx_close kernel)"; read -r s sc <<<"$(nginx_close sluice)"
			rowc "nginx (1 worker) + wrk (1 thread, 16 connections), Connection: close" \
				"$k" "$kc" "$s" "$sc" req/s
		fi
	fi
	if want churn-long && [ -x "$churn_bin" ] && [ "$r" = 1 ]; then
		churn_long
	fi
done
