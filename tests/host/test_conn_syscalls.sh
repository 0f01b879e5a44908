#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# System calls per short connection (issue 23, item 4): a plain client
# (connect, write 1 byte, read it back, close) and server (accept, read,
# write, close), tests/bench/conn_churn, under `sluice run` on one stack,
# counted with strace -f -c; the kernel's loopback beside them, same run.
# Per connection = (calls for 300 connections - calls for 50) / 250, so
# start-up does not count.  Bound: 11 a connection on each side
# (2026-12-04: 8.6-9.8 each, varying with the sched_yield and futex counts;
# 14.4 before the fd table's deferred reclamation; the kernel: 5.0 client,
# 4.0 server).  The goal (fewer than the kernel) is not met yet.
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
trap 'rm -rf "$tmp"; rm -f /dev/shm/sluice-$st-* /dev/shm/sluicefd-$st-*' EXIT

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
	echo "\$1 \$2 \$(awk '\$NF == "total" { print \$(NF-2) }' "$tmp/srv") \$(awk '\$NF == "total" { print \$(NF-2) }' "$tmp/cli")"
}
count kernel 50 7971
count kernel 300 7972
count sluice 50 7973
count sluice 300 7974
EOS
out=$(timeout 120 unshare -n bash "$tmp/run.sh" 2>&1)
echo "$out" | sed 's/^/# /'
per() { # PATH SIDE(3 server, 4 client)
	awk -v p="$1" -v f="$2" '$1 == p && $2 == 50 { a = $f } $1 == p && $2 == 300 { b = $f }
		END { if (a == "" || b == "") print "-"; else printf "%.2f", (b - a) / 250 }' <<<"$out"
}
ks=$(per kernel 3) kc=$(per kernel 4) ss=$(per sluice 3) sc=$(per sluice 4)
echo "# per connection: kernel server $ks client $kc; sluice server $ss client $sc"
check "every run completed" test -z "$(grep 'client failed' <<<"$out")"
check "sluice server: at most 11 system calls a connection ($ss)" \
	awk -v x="$ss" 'BEGIN { exit !(x != "-" && x <= 11) }'
check "sluice client: at most 11 system calls a connection ($sc)" \
	awk -v x="$sc" 'BEGIN { exit !(x != "-" && x <= 11) }'

done_testing
