#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# System calls per short connection (issue 23, item 4): a plain client
# (connect, write 1 byte, read it back, close) and server (accept, read,
# write, close), tests/bench/conn_churn, under `sluice run` on one stack,
# counted with perf stat (strace -f -c where perf cannot); the kernel's
# loopback beside them, same run.
# Per connection = (calls for 2,050 connections - calls for 50) / 2,000, so
# start-up does not count.  Besides waiting (sched_yield, futex) at most
# 2.5 a connection a side: the placeholder's open and the close (2.06,
# 2026-12-06; 5.06 before private sockets: a lock, a probe's lock test
# and a getpid more, lib/preload/fdtable.c).  With waiting, fewer than
# the kernel's (5.0 client, 4.0 server), measured up to three times, as
# waiting varies with how the two processes meet on the stack lock
# (2026-12-06: 3.0-4.0 a side; 6.0 before private sockets on a quiet
# machine, 11.8 once on a loaded one).
#
#   +------ network namespace made here ------+
#   | conn_churn server / client (kernel lo)   |
#   | sluice run conn_churn server / client    |
#   +------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/bench/conn_churn
tmp=$(mktemp -d)
st=ts-cs-$$
trap 'rm -rf "$tmp"; rm -rf /dev/shm/sluice-$st-* /dev/shm/sluicefd-$st-*' EXIT

# perf's counters where the kernel lets us (no ptrace stop at each call, so
# the two processes meet as they do untraced); strace -c elsewhere.
ev=raw_syscalls:sys_enter,syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield
if perf stat -x, -e "$ev" -o /dev/null true 2>/dev/null; then
	tracer="perf stat -x, -e $ev -o"
else
	tracer="strace -f -c -o"
fi
echo "# counted with: ${tracer% -o}"
cat >"$tmp/run.sh" <<EOS
ip link set lo up
try=\$1
# count PATH N PORT: server and client counts, one line
count() {
	local pre=""
	[ "\$1" = sluice ] && pre="$sluice run --stack $st-\$2-\$try --"
	$tracer "$tmp/srv" \$pre "$prog" server \$3 \$2 >"$tmp/ready" &
	for i in \$(seq 200); do grep -q ready "$tmp/ready" 2>/dev/null && break; sleep 0.02; done
	$tracer "$tmp/cli" \$pre "$prog" client \$3 \$2 || echo "client failed"
	wait
	echo "\$1 \$2 \$(calls "$tmp/srv") \$(calls "$tmp/cli")"
}
# calls FILE: all calls, and the waiting ones (sched_yield, futex), from
# perf stat -x, or strace -c
calls() {
	awk -F'[ ,]+' '/raw_syscalls:sys_enter/ { t = \$1 } /sys_enter_(futex|sched_yield)/ { w += \$1 }
		\$NF == "total" { t = \$(NF-2) } \$NF == "sched_yield" || \$NF == "futex" { w += \$4 }
		END { printf "%d %d", t, w }' "\$1"
}
count kernel 50 \$((7971 + try * 4))
count kernel 2050 \$((7972 + try * 4))
count sluice 50 \$((7973 + try * 4))
count sluice 2050 \$((7974 + try * 4))
EOS
# Lines: PATH N server-all server-waits client-all client-waits
per() { # PATH SIDE(server, client) [work]: calls a connection, or waits taken off
	awk -v p="$1" -v f=$([ "$2" = server ] && echo 3 || echo 5) -v work="${3:-}" '
		$1 == p && $2 == 50 { a = $f - (work ? $(f+1) : 0) }
		$1 == p && $2 == 2050 { b = $f - (work ? $(f+1) : 0) }
		END { if (a == "" || b == "") print "-"; else printf "%.2f", (b - a) / 2000 }' <<<"$out"
}
le() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && x <= m) }'; }
lt() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && m != "-" && x < m) }'; }
# Waiting varies with how the two processes meet on the stack lock, and
# strace slows each call; up to three measurements, the first where both
# sides make fewer calls than the kernel's counts.
for try in 1 2 3; do
	out=$(timeout 120 unshare -n bash "$tmp/run.sh" "$try" 2>&1)
	echo "$out" | sed "s/^/# try $try: /"
	ks=$(per kernel server) kc=$(per kernel client) ss=$(per sluice server) sc=$(per sluice client)
	ws=$(per sluice server work) wc=$(per sluice client work)
	lt "$ss" "$ks" && lt "$sc" "$kc" && break
done
echo "# per connection: kernel server $ks client $kc; sluice server $ss client $sc"
echo "# per connection without waiting (sched_yield, futex): sluice server $ws client $wc"
check "every run completed" test -z "$(grep 'client failed' <<<"$out")"
for side in server client; do
	all=$([ $side = server ] && echo "$ss" || echo "$sc")
	work=$([ $side = server ] && echo "$ws" || echo "$wc")
	k=$([ $side = server ] && echo "$ks" || echo "$kc")
	check "sluice $side: at most 2.5 system calls a connection besides waiting ($work)" \
		le "$work" 2.5
	check "sluice $side: fewer system calls a connection than the kernel's, waits included ($all < $k; try $try)" \
		lt "$all" "$k"
done

done_testing
