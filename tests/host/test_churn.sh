#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Connection churn (issue 16): 100,000 short connections in a row (connect,
# 1 byte each way, close), a plain client and server in two processes under
# `sluice run` on one stack with default settings, tests/bench/conn_churn;
# then 20,000 from 32 client processes at once; then 400 in a row to a
# pre-forking server whose 16 children sleep in accept(), which must wake
# one child a connection, each in turn (issue 18); then connections held open
# to one peer until connect() fails, with a narrowed ip_local_port_range.  Every connection goes
# through, none takes over 100 ms, and the stack ends as it began: no
# socket slot or buffer held, TIME-WAIT within its table.  Before the
# TIME-WAIT table (lib/proto/tcp/tcp_tw.c) connection 8,190 waited a
# minute for a socket slot.  The kernel's loopback runs the same, same
# namespace, for the figures (not checked: tests are not benchmarks).
#
#   +------------- network namespace made here -------------+
#   | conn_churn server / client (kernel lo)                 |
#   | sluice run conn_churn server / client, one stack        |
#   +--------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/bench/conn_churn
tmp=$(mktemp -d)
st=ts-churn-$$
trap 'rm -rf "$tmp"; rm -rf /dev/shm/sluice-$st /dev/shm/sluicefd-$st /dev/shm/sluice-$st-[pf] /dev/shm/sluicefd-$st-[pf]' EXIT

cat >"$tmp/run.sh" <<EOS
ip link set lo up
# churn PATH N K PORT: one line from the client, "rc=N" after it
churn() {
	local pre=""
	[ "\$1" = sluice ] && pre="$sluice run --stack $st --"
	# Emptied first: the last run's "ready" is not this server's.
	rm -f "$tmp/ready"
	\$pre "$prog" server \$4 \$2 >"$tmp/ready" &
	for i in \$(seq 200); do grep -q ready "$tmp/ready" 2>/dev/null && break; sleep 0.02; done
	echo "\$1 K=\$3 \$(timeout 120 \$pre "$prog" client \$4 \$2 \$3) rc=\$?"
	wait
}
line=\$(churn sluice 100000 1 7981)
echo "\$line"
# A connection held up once by the machine (a preempted process on a
# busy host) is not a stall of the stack: a stall of the stack repeats.
case "\$line" in *" over_100ms 0 rc=0") ;; *) churn sluice 100000 1 7987 | sed 's/^sluice/retry/' ;; esac
churn kernel 100000 1 7982
churn sluice 20000 32 7983
churn kernel 20000 32 7984
$sluice dump $st >"$tmp/dump" 2>&1
$sluice dump --all $st >"$tmp/dumpall" 2>&1
$sluice info 2>/dev/null | grep -A2 "^stack    $st " >"$tmp/info"
# A pre-forking server: 16 children asleep in accept() (no spin), and
# 400 connections in a row; one child should wake for each, in turn.
pf() {
	local pre=""
	[ "\$1" = sluice ] && pre="$sluice run --stack $st-f --spin 0 --"
	rm -f "$tmp/pf"
	\$pre "$prog" prefork \$2 400 16 >"$tmp/pf" &
	for i in \$(seq 200); do grep -q ready "$tmp/pf" 2>/dev/null && break; sleep 0.02; done
	timeout 60 \$pre "$prog" client \$2 400 >/dev/null
	wait
	echo "pf \$1 \$(grep served "$tmp/pf")"
}
pf kernel 7988
pf sluice 7989
# Ephemeral ports from this namespace's range, less a reserved port.
sysctl -qw net.ipv4.ip_local_port_range="40000 40099"
sysctl -qw net.ipv4.ip_local_reserved_ports=40010
echo "ports kernel \$(timeout 60 python3 "$top/tests/preload/port_range.py" 7985 40000 40099 40010)"
echo "ports sluice \$(timeout 60 $sluice run --stack $st-p -- python3 "$top/tests/preload/port_range.py" 7986 40000 40099 40010)"
# SYN retries from this namespace's sysctl, with no option on the socket.
sysctl -qw net.ipv4.tcp_syn_retries=2
echo "synr kernel \$(timeout 30 python3 "$top/tests/preload/syn_retries.py")"
echo "synr sluice \$(timeout 30 $sluice run --stack $st-p -- python3 "$top/tests/preload/syn_retries.py")"
EOS
out=$(timeout 400 unshare -n bash "$tmp/run.sh" 2>&1)
echo "$out" | sed 's/^/# /'
field() { # LINE-PREFIX NAME: the value after NAME on that line
	awk -v p="$1" -v n="$2" 'index($0, p) == 1 { for (i = 1; i < NF; i++) if ($i == n) print $(i + 1) }' <<<"$out"
}
check "100,000 in a row: every connection went through" \
	test -n "$(grep -F 'sluice K=1 ' <<<"$out" | grep -F 'connections 100000' | grep -F 'rc=0')"
retry=" (longest $(field 'sluice K=1 ' max_ms) ms)"
[ "$(field 'sluice K=1 ' over_100ms)" = 0 ] ||
	retry=" (in a second run; the first had $(field 'sluice K=1 ' over_100ms), the longest $(field 'sluice K=1 ' max_ms) ms)"
check "100,000 in a row: none took over 100 ms$retry" \
	test "$(field 'sluice K=1 ' over_100ms)" = 0 -o "$(field 'retry K=1 ' over_100ms)" = 0
check "32 clients at once: all 20,000 went through" \
	test -n "$(grep -F 'sluice K=32 ' <<<"$out" | grep -F 'connections 20000' | grep -F 'rc=0')"
dump=$(cat "$tmp/dump" 2>/dev/null)
echo "$dump" | grep -E 'sockets [0-9]|at most so far|time-wait:|tcp_tw_' | sed 's/^/# /'
check "afterwards no socket slot and no buffer is held" \
	grep -qE 'sockets 0/[0-9]+ .*buffers 0/' <<<"$dump"
peak=$(awk '/at most so far:/ { print $6, $8 }' <<<"$dump")
check "sluice dump shows the high-water marks of slots and buffers ($peak)" \
	awk -v p="$peak" 'BEGIN { split(p, a, " "); exit !(a[1] + 0 >= 2 && a[2] + 0 >= 2) }'
ipeak=$(awk '/^  sockets .* so far; buffers/ { print $7, $16 }' "$tmp/info")
check "sluice info shows them too, the same ($ipeak)" test -n "$ipeak" -a "$ipeak" = "${peak//,/}"
twl=$(grep -c ' TIME_WAIT ' <<<"$dump"); twa=$(grep -c ' TIME_WAIT ' "$tmp/dumpall")
check "sluice dump lists 20 TIME-WAIT entries and says how many more; --all lists them all ($twl, $twa; $(grep -o 'and [0-9]* more TIME-WAIT entries' <<<"$dump"))" \
	test "$twl" = 20 -a "$twa" -gt 20 -a -n "$(grep -F "and $((twa - 20)) more TIME-WAIT entries" <<<"$dump")"
tw=$(awk '/time-wait:/ { print $2, $10 }' <<<"$dump")
check "TIME-WAIT entries within the table ($tw)" \
	awk -v n="${tw% *}" -v m="${tw#* }" 'BEGIN { exit !(n != "" && n + 0 <= m + 0 && n + 0 > 0) }'
kp=$(grep '^ports kernel ' <<<"$out"); sp=$(grep '^ports sluice ' <<<"$out")
pfk=$(grep '^pf kernel ' <<<"$out"); pfs=$(grep '^pf sluice ' <<<"$out")
check "a pre-forking server's 16 children in accept() serve 400 connections (kernel: ${pfk#pf kernel })" \
	test -n "$(grep -F 'served 400 ' <<<"$pfk")" -a -n "$(grep -F 'served 400 ' <<<"$pfs")"
check "one child wakes for each connection, not all 16 (voluntary switches a connection $(field 'pf sluice' csw_per_conn), at most 3)" \
	awk -v w="$(field 'pf sluice' csw_per_conn)" 'BEGIN { exit !(w != "" && w + 0 <= 3) }'
check "each of the 16 children takes its turn, as on the kernel ($(field 'pf sluice' spread))" \
	awk -v p="$(field 'pf sluice' spread)" 'BEGIN { n = split(p, a, "/"); z = 0; for (i = 1; i <= n; i++) z += (a[i] + 0 == 0); exit !(n == 16 && z == 0) }'
check "ip_local_port_range 40000-40099 less 40010: as many connections to one peer as the kernel, the same error, no port outside" \
	test -n "$kp" -a "${kp#ports kernel }" = "${sp#ports sluice }" -a -n "$(grep -F 'in_range True reserved_used False' <<<"$sp")"
check "tcp_syn_retries 2: a connect to a full queue gives up as the kernel's does ($(grep '^synr ' <<<"$out" | tr '\n' ';'))" \
	awk '/^synr (kernel|sluice) Connection timed out after / { t[$2] = $NF }
	     END { exit !(t["kernel"] >= 6.5 && t["sluice"] >= 6.5 && t["sluice"] <= t["kernel"] + 1.5) }' <<<"$out"
echo "# per second: sluice $(field 'sluice K=1 ' per_s), kernel $(field 'kernel K=1 ' per_s) in a row;" \
	"sluice $(field 'sluice K=32 ' per_s), kernel $(field 'kernel K=32 ' per_s) from 32 clients"

done_testing
