#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A process killed beside an idle server of its stack: its sockets are
# closed within a bounded time whatever the server waits in (issue 23
# item 1).  The server (tests/preload/death_peer.py) listens on 127.0.0.1
# (lo up: the listener has a kernel twin), accepts 5 connections from the
# victim, and waits: poll() with no timeout; poll() of 100 ms in a loop
# (as test_idle_syscalls' server), the same with a pipe beside (a kernel
# fd); an epoll set of 100 ms; a mixed epoll
# set (a pipe beside: a kernel fd) with no timeout; a blocking accept().
# The victim is SIGKILLed; the server must see its connections end (EOF)
# within 3 s (accept(): the 5 in CLOSE_WAIT, read with sluice dump).  The
# same program on the kernel beside, where the kernel closes a killed
# process's sockets at once.  Before the sweep ran after every sleep of a
# wait on Sluice sockets alone, a poll() shorter than its 500 ms slice
# swept never: the loop of 100 ms saw nothing for 10 s and more.
#
#   +------------- network namespace made here (lo UP) --------------+
#   |  [sluice run] python3 death_peer.py server MODE  (waits)        |
#   |  [sluice run] python3 death_peer.py victim      <- SIGKILL      |
#   +-----------------------------------------------------------------+
# Every step is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
stack_test ts-dwake

# run MODE [kernel]: prints the seconds from the kill to the server's
# seeing the connections end, or "none" (not within 10 s).
run() {
	local mode=$1 k=${2:-} name st d
	name=${1/:/-}${2:+-k}
	st=ts-dwake-$name-$$ d=$tmp/$name
	mkdir -p "$d"
	cat >"$d/run.sh" <<EOS
set -u
export SLUICE_NO_HELPER=1
ip link set lo up
trap 'kill -9 \$(jobs -p) 2>/dev/null' EXIT
run=""
[ -z "$k" ] && run="$sluice run --stack $st --"
waits() { "$sluice" dump "$st" 2>/dev/null | grep -c CLOSE_WAIT; }
\$run "$py" "$top/tests/preload/death_peer.py" server $mode "$d" 5 >"$d/srv" 2>&1 &
for i in \$(seq 200); do [ -e "$d/port" ] && break; sleep 0.05; done
\$run "$py" "$top/tests/preload/death_peer.py" victim "$d" 5 >"$d/vic" 2>&1 &
b=\$!
for i in \$(seq 200); do [ -e "$d/waiting" ] && [ -e "$d/victim" ] && break; sleep 0.05; done
sleep 0.7	# the server's sweeps since have seen no death
t0=\$(date +%s.%N)
kill -9 \$b
for i in \$(seq 200); do
	[ -s "$d/seen" ] && break
	if [ $mode = accept ] && [ "\$(waits)" -ge 5 ]; then date +%s.%N >"$d/seen"; break; fi
	sleep 0.05
done
if [ -s "$d/seen" ]; then
	"$py" -c 'import sys; print("%.3f" % (float(sys.argv[1].split()[-1]) - float(sys.argv[2])))' "\$(cat "$d/seen")" \$t0
else
	echo none
fi
EOS
	timeout 60 unshare -rn bash "$d/run.sh" 2>/dev/null | tail -1 | grep . || echo none
}

# within S LIMIT: S is a time and at most LIMIT seconds
within() { [ "$1" != none ] && [ "${1#-}" = "$1" ] && "$py" -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "$1" "$2"; }

for m in poll poll:100 mixed-poll:100 epoll:100 mixed-epoll accept; do
	s=$(run $m)
	if [ "$m" != accept ]; then kt=$(run $m kernel); else kt="-"; fi
	echo "# $m: Sluice $s s, the kernel $kt s"
	check "$m: a killed process's connections end within 3 s under Sluice ($s s; the kernel $kt s)" within "$s" 3
	if [ "$m" != accept ]; then
		check "$m: and on the kernel ($kt s)" within "$kt" 3
	fi
done
done_testing
