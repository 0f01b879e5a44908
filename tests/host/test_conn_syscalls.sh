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
# and a getpid more, lib/preload/fdtable.c).  With the wake-ups (each
# FUTEX_WAKE), fewer than the kernel's (5.0 client, 4.0 server), as issue
# 23 item 4 counts them, measured up to three times.
#
# The sleeps (FUTEX_WAIT, futex_waitv, sched_yield) are shown, not
# bounded: a sleep is where the kernel's blocking accept() or read()
# waits inside its own call, and how many a connection takes is how
# often the peer was not running when a spin began, i.e. the machine's
# load.  On a busy machine (load 15-20 on 2 CPUs) the server's accept
# sleeps at nearly every connection and it wakes the client's read
# once: 2 + 1 + 1 = 4, the kernel's 4 (accept, read, write, close, the
# sleep and the wake inside them); counted with them, the server was
# 4.02-4.24 there.  Of those, 0.75 a connection were wakes of a client
# already woken and not yet run (the echo's data, then its FIN, each
# woke the channel while the client still counted as a sleeper): gone
# (struct sl_wq's armed, proto/sock.c sl_wake_chan()), so a wake is made
# only for a sleeper that read the word since the last: a side's wakes a
# connection are at most its peer's sleeps (1.75 against 1.0 before,
# 2026-12-07; a 2% and 0.02 margin for the wake of a sleeper whose
# FUTEX_WAIT found the word moved, which counts as a sleep all the same).
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
# The second futex event counts FUTEX_WAKE alone (shared and private).
ev=raw_syscalls:sys_enter,syscalls:sys_enter_futex,syscalls:sys_enter_futex_waitv,syscalls:sys_enter_sched_yield
wake="-e syscalls:sys_enter_futex --filter 'op == 1 || op == 129'"
if perf stat -x, -e "$ev" -e syscalls:sys_enter_futex --filter 'op == 1 || op == 129' \
	-o /dev/null true 2>/dev/null; then
	tracer="perf stat -x, -e $ev $wake -o"
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
# calls FILE: all calls, the waiting ones (sched_yield, futex,
# futex_waitv: sleeps and wakes), and the wakes (FUTEX_WAKE), from perf
# stat -x, (the second futex line is the wakes); strace -c cannot tell a
# wake from a sleep: every futex call counts as a wake there
calls() {
	awk -F'[ ,]+' '/raw_syscalls:sys_enter/ { t = \$1 }
		/sys_enter_futex,/ && !nf++ { w += \$1; next } /sys_enter_futex,/ { k = \$1 }
		/sys_enter_(futex_waitv|sched_yield)/ { w += \$1 }
		\$NF == "total" { t = \$(NF-2) }
		\$NF == "sched_yield" || \$NF == "futex" || \$NF == "futex_waitv" { w += \$4; s = 1 }
		END { printf "%d %d %d", t, w, s ? w : k }' "\$1"
}
count kernel 50 \$((7971 + try * 4))
count kernel 2050 \$((7972 + try * 4))
count sluice 50 \$((7973 + try * 4))
count sluice 2050 \$((7974 + try * 4))
EOS
# Lines: PATH N server-all server-waits server-wakes client-all client-waits client-wakes
per() { # PATH SIDE(server, client) [work|wakes]: calls a connection; work: waits
	# taken off; wakes: waits taken off but the wakes
	awk -v p="$1" -v f=$([ "$2" = server ] && echo 3 || echo 6) -v m="${3:-}" '
		function c() { return $f - (m ? $(f+1) : 0) + (m == "wakes" ? $(f+2) : 0) }
		$1 == p && $2 == 50 { a = c() }
		$1 == p && $2 == 2050 { b = c() }
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
	xs=$(per sluice server wakes) xc=$(per sluice client wakes)
	lt "$xs" "$ks" && lt "$xc" "$kc" && break
done
echo "# per connection: kernel server $ks client $kc; sluice server $ss client $sc (sleeps and wakes included)"
echo "# per connection without waiting (sched_yield, futex): sluice server $ws client $wc"
echo "# per connection with the wakes (FUTEX_WAKE), not the sleeps: sluice server $xs client $xc"
check "every run completed" test -z "$(grep 'client failed' <<<"$out")"
for side in server client; do
	wk=$([ $side = server ] && echo "$xs" || echo "$xc")
	work=$([ $side = server ] && echo "$ws" || echo "$wc")
	k=$([ $side = server ] && echo "$ks" || echo "$kc")
	check "sluice $side: at most 2.5 system calls a connection besides waiting ($work)" \
		le "$work" 2.5
	check "sluice $side: fewer system calls a connection than the kernel's, wake-ups included ($wk < $k; try $try)" \
		lt "$wk" "$k"
done
# A side's wakes a connection (with the wakes, less the work) and sleeps
# (all, less those with the wakes); perf alone tells them apart.
sub() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a - b }'; }
if [ "${tracer%% *}" = perf ]; then
	wk_s=$(sub "$xs" "$ws") wk_c=$(sub "$xc" "$wc") sl_s=$(sub "$ss" "$xs") sl_c=$(sub "$sc" "$xc")
	echo "# a connection: server wakes $wk_s, sleeps $sl_s; client wakes $wk_c, sleeps $sl_c"
	check "sluice server: a wake only for a sleeper: its wakes at most the client's sleeps ($wk_s <= $sl_c)" \
		awk -v w="$wk_s" -v p="$sl_c" 'BEGIN { exit !(w != "-" && p != "-" && w <= p * 1.02 + 0.02) }'
	check "sluice client: ... and its wakes at most the server's sleeps ($wk_c <= $sl_s)" \
		awk -v w="$wk_c" -v p="$sl_s" 'BEGIN { exit !(w != "-" && p != "-" && w <= p * 1.02 + 0.02) }'
fi

done_testing
