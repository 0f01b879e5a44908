#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# An idle process's system calls do not grow with its connections (issue
# 23): a python3 server under `sluice run` holding N TCP connections (both
# ends its own) sits in poll(2) on its listener with a 100 ms timeout;
# strace -c counts its system calls over 2 s, for N = 20 and N = 400.
# The kernel would make ~20 (the polls); finding dead processes' sockets
# must cost per death, not per socket per tick.
#
#   +------------ network namespace made here (lo DOWN) ------------+
#   |  sluice run python3 idle_conns.py N   (stack in /dev/shm)      |
#   |  strace -c -f -p PID   for 2 s                                 |
#   +----------------------------------------------------------------+
# Every step is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
tmp=$(mktemp -d)

cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	rm -rf /dev/shm/sluice-ts-idle-*-"$$" /dev/shm/sluicefd-ts-idle-*-"$$"
	rm -rf "$tmp"
}
trap cleanup EXIT

if ! command -v strace >/dev/null; then
	skip "system calls of an idle process" "no strace (tests/vm/deps.sh installs it)"
	done_testing
	exit
fi

# calls N: the idle server's system calls in 2 s with N connections.
calls() {
	local n=$1 st=ts-idle-$1-$$
	rm -f "$tmp/ready.$n"
	cat >"$tmp/run.$n.sh" <<EOS
"$sluice" run --stack "$st" -- "$py" "$top/tests/preload/idle_conns.py" $n \
	"$tmp/ready.$n" 6 >"$tmp/out.$n" 2>&1 &
p=\$!
for i in \$(seq 300); do [ -e "$tmp/ready.$n" ] && break; sleep 0.05; done
sleep 0.6	# past one sweep period after the last connection
timeout -s INT 2 strace -c -f -p \$p -o "$tmp/strace.$n" 2>/dev/null
wait \$p
EOS
	timeout 60 unshare -n bash "$tmp/run.$n.sh" >/dev/null 2>&1
	awk '$NF == "total" { print $(NF-2); f = 1 } END { if (!f) print -1 }' "$tmp/strace.$n"
}

c20=$(calls 20)
c400=$(calls 400)
check "the server held 20 connections through the stack" grep -qx "open 20" "$tmp/out.20"
check "and 400" grep -qx "open 400" "$tmp/out.400"
check "strace counted both runs ($c20, $c400 calls)" [ "$c20" -ge 0 ] && [ "$c400" -ge 0 ]
check "idle with 400 connections: no more system calls than with 20, give or take 20 ($c400 vs $c20)" \
	[ "$c400" -le $((c20 + 20)) ]
# What is left is waiting itself (a sleeper wakes every 10 ms to run the
# timers, and spins first): issue 18's work; this bound only keeps it there.
check "idle: under 400 system calls in 2 s ($c400; the kernel ~20)" [ "$c400" -lt 400 ]
[ "$tap_failed" = 0 ] || sed 's/^/# /' "$tmp"/strace.* "$tmp"/out.*
done_testing
