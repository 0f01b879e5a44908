#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# System calls a forking server makes per connection (issue 16 item 6,
# issue 23 item 4), beside the kernel in the same run: tests/preload/fork_srv
# (accept, fork a child that echoes until EOF, close its copy) under
# `sluice run`, tests/bench/conn_churn's client (connect, 1 byte each way,
# close) on the same stack, counted with perf stat over the server and its
# children (strace -f -c where perf cannot).
# Per connection = (calls for 1,050 connections - calls for 50) / 1,000.
# What the library adds to a fork, and is bounded here:
#  - getpid: one in the child (lib/core/lock.c forgets the pid at fork and
#    asks once; three before: lock.c's handler, the preload's, the process
#    record's);
#  - rt_sigprocmask: none while only the forking thread has used urcu
#    (lib/preload/fdtable.c, pl_rcu_fork_begin(); three before: urcu-bp's
#    fork handlers block and restore every signal in parent and child);
#  - the spin's look at the run queue: one pread of /proc/loadavg on a kept
#    fd, no open or close (lib/os/os.c, sl_sys_runnable()).
#
#   +------ network namespace made here ------+
#   | fork_srv / conn_churn client (kernel lo) |
#   | sluice run: the same, one stack          |
#   +------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
srv=$top/build/tests/preload/fork_srv
cli=$top/build/tests/bench/conn_churn
tmp=$(mktemp -d)
st=ts-fs-$$
trap 'rm -rf "$tmp"; rm -rf /dev/shm/sluice-$st-* /dev/shm/sluicefd-$st-*' EXIT

calls="getpid rt_sigprocmask openat close pread64 fcntl"
ev=raw_syscalls:sys_enter
for c in $calls; do ev="$ev,syscalls:sys_enter_$c"; done
if perf stat -x, -e "$ev" -o /dev/null true 2>/dev/null; then
	tracer="perf stat -x, -e $ev -o"
else
	tracer="strace -f -c -o"
fi
echo "# counted with: ${tracer% -o}"
cat >"$tmp/run.sh" <<EOS
ip link set lo up
# count PATH N PORT: the server's counts (with its children), one line
count() {
	local pre=""
	[ "\$1" = sluice ] && pre="$sluice run --stack $st-\$2 --"
	# (a file of its own: the last server's "ready" must not be read)
	$tracer "$tmp/srv" \$pre "$srv" \$3 \$2 120 >"$tmp/ready.\$1.\$2" &
	for i in \$(seq 500); do grep -q ready "$tmp/ready.\$1.\$2" 2>/dev/null && break; sleep 0.02; done
	\$pre "$cli" client \$3 \$2 >/dev/null || echo "client failed"
	wait || echo "server failed"
	echo "\$1 \$2 \$(counts "$tmp/srv")"
}
# counts FILE: all calls, then each of: $calls
counts() {
	awk -F'[ ,]+' -v names="$calls" '
		BEGIN { n = split(names, nm, " ") }
		/raw_syscalls:sys_enter/ { c["all"] = \$1 }
		/syscalls:sys_enter_/ { s = \$2; sub(/.*sys_enter_/, "", s); c[s] = \$1 }
		\$NF == "total" { c["all"] = \$(NF-2) }
		NF >= 5 && \$1 ~ /^[0-9.]+\$/ && \$NF != "total" { c[\$NF] = \$4 }
		END { printf "%d", c["all"]; for (i = 1; i <= n; i++) printf " %d", c[nm[i]] }' "\$1"
}
count kernel 50 7961
count kernel 1050 7962
count sluice 50 7963
count sluice 1050 7964
# The spin's looks at /proc/loadavg, traced: opens, and reads of it
strace -f -qq -e trace=openat,read,pread64,fcntl -o "$tmp/looks" $sluice run --stack $st-l -- "$srv" 7965 400 120 >"$tmp/ready.l" &
for i in \$(seq 500); do grep -q ready "$tmp/ready.l" 2>/dev/null && break; sleep 0.02; done
$sluice run --stack $st-l -- "$cli" client 7965 400 >/dev/null || echo "client failed"
wait || echo "server failed"
EOS
out=$(timeout 300 unshare -n bash "$tmp/run.sh" 2>&1)
echo "$out" | sed 's/^/# /'
# per PATH FIELD (2: all, 3...: $calls in order): calls a connection
per() {
	awk -v p="$1" -v f="$2" '
		$1 == p && $2 == 50 { a = $(f + 1) }
		$1 == p && $2 == 1050 { b = $(f + 1) }
		END { if (a == "" || b == "") print "-"; else printf "%.2f", (b - a) / 1000 }' <<<"$out"
}
le() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && m != "-" && x <= m) }'; }
check "every run completed" test -z "$(grep -E '(client|server) failed' <<<"$out")"
f=2
echo "# per connection, kernel / sluice: all $(per kernel 2) / $(per sluice 2)"
for c in $calls; do
	f=$((f + 1))
	k=$(per kernel $f) s=$(per sluice $f)
	echo "# per connection, kernel / sluice: $c $k / $s"
	eval "k_$c=$k s_$c=$s"
done
plus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-") print "-"; else printf "%.2f", a + b }'; }
# Each look: fd = openat(loadavg) then read(fd) before; pread64(fd) now,
# on the fd moved above the program's numbers (F_DUPFD_CLOEXEC, os.c).
lfd=$(awk '/openat\(.*\/proc\/loadavg/ { fd[$NF] = 1; print $NF }
	/fcntl\([0-9]+, F_DUPFD_CLOEXEC/ { split($0, a, /[(,]/); if (a[2] in fd) print $NF }' \
	"$tmp/looks" | sort -u | tr '\n' '|')
opens=$(grep -c 'openat(.*/proc/loadavg' "$tmp/looks")
looks=$(grep -cE "(pread64|read)\((${lfd%|})," "$tmp/looks")
echo "# /proc/loadavg over 400 forked connections: $opens opens, $looks looks"
# shellcheck disable=SC2154
{
check "getpid: at most one a connection more than the kernel's ($s_getpid, kernel $k_getpid)" \
	le "$s_getpid" "$(plus "$k_getpid" 1.1)"
check "rt_sigprocmask: no more than the kernel's, as urcu's fork handlers are skipped ($s_rt_sigprocmask, kernel $k_rt_sigprocmask)" \
	le "$s_rt_sigprocmask" "$(plus "$k_rt_sigprocmask" 0.1)"
check "pread64 of the kept /proc/loadavg fd: at most one a connection ($s_pread64)" \
	le "$s_pread64" "$(plus "$k_pread64" 1)"
}
check "the run queue's file is opened once and kept, not at each look ($opens opens, $looks looks)" \
	test "$opens" -le 2 -o "$opens" -le $((looks / 8))

done_testing
