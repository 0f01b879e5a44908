#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# System calls per short connection (issue 23, item 4): a plain client
# (connect, write 1 byte, read it back, close) and server (accept, read,
# write, close), tests/bench/conn_churn, under `sluice run` on one stack,
# counted with strace -f -c; the kernel's loopback beside them, same run.
# Per connection = (calls for 300 connections - calls for 50) / 250, so
# start-up does not count.  Waiting (sched_yield, futex) varies with the
# scheduling of the two processes on one stack lock, so it is bounded
# apart: the other calls at most 5.5 a connection a side (2026-12-05:
# 5.06: the placeholder's open and lock, the close, the probe's lock
# test, a getpid; 7.0 before the probe was kept open), all calls at most
# 11 (6.0 here on a quiet machine, 8.0-8.1 before the kept probe, 11.8
# once on a loaded CI machine before it; 9.5 before the placeholder lost
# its lseek, 14.4 before the fd table's deferred reclamation; the kernel:
# 5.0 client, 4.0 server).  The goal (fewer than the kernel) is not met
# yet.
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

cat >"$tmp/run.sh" <<EOS
ip link set lo up
# count PATH N PORT: server and client counts, one line
count() {
	local pre=""
	[ "\$1" = sluice ] && pre="$sluice run --stack $st-\$2 --"
	strace -f -c -o "$tmp/srv" \$pre "$prog" server \$3 \$2 >"$tmp/ready" &
	for i in \$(seq 200); do grep -q ready "$tmp/ready" 2>/dev/null && break; sleep 0.02; done
	strace -f -c -o "$tmp/cli" \$pre "$prog" client \$3 \$2 || echo "client failed"
	wait
	echo "\$1 \$2 \$(calls "$tmp/srv") \$(calls "$tmp/cli")"
}
# calls FILE: all calls, and the waiting ones (sched_yield, futex)
calls() {
	awk '\$NF == "total" { t = \$(NF-2) } \$NF == "sched_yield" || \$NF == "futex" { w += \$4 }
		END { printf "%d %d", t, w }' "\$1"
}
count kernel 50 7971
count kernel 300 7972
count sluice 50 7973
count sluice 300 7974
EOS
out=$(timeout 120 unshare -n bash "$tmp/run.sh" 2>&1)
echo "$out" | sed 's/^/# /'
# Lines: PATH N server-all server-waits client-all client-waits
per() { # PATH SIDE(server, client) [work]: calls a connection, or waits taken off
	awk -v p="$1" -v f=$([ "$2" = server ] && echo 3 || echo 5) -v work="${3:-}" '
		$1 == p && $2 == 50 { a = $f - (work ? $(f+1) : 0) }
		$1 == p && $2 == 300 { b = $f - (work ? $(f+1) : 0) }
		END { if (a == "" || b == "") print "-"; else printf "%.2f", (b - a) / 250 }' <<<"$out"
}
le() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && x <= m) }'; }
ks=$(per kernel server) kc=$(per kernel client) ss=$(per sluice server) sc=$(per sluice client)
ws=$(per sluice server work) wc=$(per sluice client work)
echo "# per connection: kernel server $ks client $kc; sluice server $ss client $sc"
echo "# per connection without waiting (sched_yield, futex): sluice server $ws client $wc"
check "every run completed" test -z "$(grep 'client failed' <<<"$out")"
for side in server client; do
	all=$([ $side = server ] && echo "$ss" || echo "$sc")
	work=$([ $side = server ] && echo "$ws" || echo "$wc")
	check "sluice $side: at most 5.5 system calls a connection besides waiting ($work)" \
		le "$work" 5.5
	check "sluice $side: at most 11 system calls a connection in all ($all)" le "$all" 11
done

done_testing
