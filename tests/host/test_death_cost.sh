#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A process's death costs O(its sockets), not O(every socket) (issue 23
# item 1): a process holding 5 UDP sockets is killed (SIGKILL) beside a
# server holding 10 idle sockets, then beside one holding 10,000 (a
# listener and 2 x 5,000 connections, both ends its own).  The sweep of
# a process started next (its first socket() sweeps whatever the stack's
# time says: lib/preload/fdtable.c), or the server's own (its poll() of
# 100 ms sweeps after a sleep, at most every 0.5 s for the stack), finds
# the death and closes the 5 sockets; the records looked at (counter
# sweep_walked, whoever swept) must be the same both times.  Before the lists (sweep_sockets() over every record,
# sweep_unrecorded() over every slot ever used, the ready pool's too) it
# looked at 48 and 20,028 (merge18b with the counter added, 2026-12-06).
#
#   +------------ network namespace made here (lo DOWN) ------------+
#   |  sluice run python3 idle_conns.py N   (stack in /dev/shm)      |
#   |  sluice run python3 -c '5 UDP sockets; sleep'   <- SIGKILL     |
#   +----------------------------------------------------------------+
# Every step is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
stack_test ts-dcost

# run N: kill the 5-socket process beside N connections; writes
# $tmp/res.N: "walked USED_BEFORE USED_AFTER"
run() {
	local n=$1 st=ts-dcost-$1-$$
	cat >"$tmp/run.$n.sh" <<EOS
set -u
export SLUICE_NO_HELPER=1
trap 'kill -9 \$(jobs -p) \${c:-} 2>/dev/null' EXIT
# A new process's first socket() sweeps whatever the stack's time says.
sweep() { "$sluice" run --stack "$st" -- "$py" -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()'; }
used() { "$sluice" dump "$st" 2>/dev/null | sed -n 's/.*; sockets \([0-9]*\)\/.*/\1/p'; }
walked() { v=\$("$sluice" dump "$st" 2>/dev/null | awk '\$1 == "sweep_walked" { print \$2 }'); echo \${v:-0}; }
"$sluice" run --stack "$st" -- "$py" "$top/tests/preload/idle_conns.py" $n \
	"$tmp/ready.$n" 30 >"$tmp/srv.$n" 2>&1 &
a=\$!
for i in \$(seq 600); do [ -e "$tmp/ready.$n" ] && break; sleep 0.05; done
"$sluice" run --stack "$st" -- "$py" -c '
import socket, sys, time
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(5)]
for x in s:
    x.bind(("127.0.0.1", 0))
open(sys.argv[1], "w").close()
time.sleep(60)' "$tmp/ready5.$n" >"$tmp/five.$n" 2>&1 &
b=\$!
for i in \$(seq 200); do [ -e "$tmp/ready5.$n" ] && break; sleep 0.05; done
sleep 0.6	# the server's sweeps since have seen no death
w0=\$(walked); u0=\$(used)
kill -9 \$b
wait \$b 2>/dev/null
sweep
w1=\$(walked); u1=\$(used)
echo "\$((w1 - w0)) \$u0 \$u1" >"$tmp/res.$n"
kill \$a
wait \$a
EOS
	timeout 120 unshare -n bash "$tmp/run.$n.sh" >/dev/null 2>&1
	cat "$tmp/res.$n" 2>/dev/null || echo "-1 -1 -1"
}

# A socket held by two processes (fork: made shared, on the shared list)
# stays open when one of them is killed and is closed when the other is:
# writes $tmp/res.fork: "BEFORE AFTER_PARENT AFTER_CHILD" sockets in use.
run_fork() {
	local st=ts-dcost-fork-$$
	cat >"$tmp/run.fork.sh" <<EOS
set -u
export SLUICE_NO_HELPER=1
trap 'kill -9 \$(jobs -p) \${c:-} 2>/dev/null' EXIT
# A new process's first socket() sweeps whatever the stack's time says.
sweep() { "$sluice" run --stack "$st" -- "$py" -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()'; }
used() { "$sluice" dump "$st" 2>/dev/null | sed -n 's/.*; sockets \([0-9]*\)\/.*/\1/p'; }
"$sluice" run --stack "$st" -- "$py" "$top/tests/preload/idle_conns.py" 5 \
	"$tmp/ready.f" 30 >"$tmp/srv.f" 2>&1 &
a=\$!
for i in \$(seq 600); do [ -e "$tmp/ready.f" ] && break; sleep 0.05; done
"$sluice" run --stack "$st" -- "$py" -c '
import os, socket, sys, time
s = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
for x in s:
    x.bind(("127.0.0.1", 0))
pid = os.fork()
if pid == 0:
    open(sys.argv[1] + ".child", "w").write(str(os.getpid()))
    time.sleep(60)
    os._exit(0)
open(sys.argv[1], "w").close()
time.sleep(60)' "$tmp/readyp" >"$tmp/fork.out" 2>&1 &
b=\$!
for i in \$(seq 200); do [ -e "$tmp/readyp" ] && [ -s "$tmp/readyp.child" ] && break; sleep 0.05; done
c=\$(cat "$tmp/readyp.child")
u0=\$(used)
kill -9 \$b
wait \$b 2>/dev/null
sweep
u1=\$(used)
kill -9 \$c
while kill -0 \$c 2>/dev/null; do sleep 0.05; done
sweep
u2=\$(used)
echo "\$u0 \$u1 \$u2" >"$tmp/res.fork"
kill \$a
wait \$a
EOS
	timeout 60 unshare -n bash "$tmp/run.fork.sh" >/dev/null 2>&1
	cat "$tmp/res.fork" 2>/dev/null || echo "-1 -1 -1"
}

read -r w10 b10 a10 < <(run 5)
read -r wm bm am < <(run 5000)
echo "# 10 beside: looked at $w10, sockets $b10 -> $a10; 10,000 beside: looked at $wm, sockets $bm -> $am"
check "the server held its 11 sockets and the victim its 5 ($b10)" test "$b10" -eq 16
check "and 10,001 beside the 5 ($bm)" test "$bm" -eq 10006
check "the victim's 5 sockets were closed after its death, beside 10 ($a10)" test "$a10" -eq 11
check "and beside 10,000 ($am)" test "$am" -eq 10001
check "the sweep looked at the dead process's 5 sockets beside 10 ($w10)" test "$w10" -eq 5
check "and as many beside 10,000 ($wm; it was every record and slot)" test "$wm" -eq "$w10"
read -r f0 f1 f2 < <(run_fork)
check "a socket shared by fork stays while a holder lives ($f0 -> $f1)" test "$f0" -eq 14 -a "$f1" -eq 14
check "and is closed when its last holder is killed ($f2)" test "$f2" -eq 11
done_testing
