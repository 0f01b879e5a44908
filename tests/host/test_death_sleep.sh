#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A process of a stack ends while every process of the stack sleeps
# outside the library (issue 23 item 1): its connections' peers see the
# end within about the kernel's time.  The server
# (tests/preload/death_sleep.py) holds 5 connections from the victim and
# sleeps in read() of a pipe; the victim sleeps in read() of a FIFO, then
# (kill) in waitpid() of a child, where it is SIGKILLed, or (_exit) calls
# os._exit(0), or (exit) sys.exit(0); (unread) killed with a byte of
# the server's unread on each connection, which the kernel resets: the
# time is then to no connection left ESTABLISHED, the server's reset.  Nobody waits in the library, so
# only the stack's death watcher (lib/preload/watch.c: a pidfd of each
# process) can find the death; before it, the victim's sockets stayed
# open until a process of the stack waited or made a socket.  The time
# is from the kill (or the FIFO's byte) to the server's 5 connections in
# CLOSE_WAIT, read from outside with sluice dump (the kernel: ss), and
# then no socket is left ESTABLISHED or CLOSED.  The same programs on the
# kernel beside, in the same run; and once with SLUICE_NO_WATCHER=1,
# which must see nothing within 3 s (so the test can fail).
#
#   +------------- network namespace made here (lo UP) --------------+
#   |  [sluice run] python3 death_sleep.py server   (in read(pipe))   |
#   |  [sluice run] python3 death_sleep.py victim   (FIFO; waitpid)   |
#   |               <- SIGKILL, or os._exit(0), or sys.exit(0)        |
#   +-----------------------------------------------------------------+
# Every step is bounded by timeout(1) and the loops' counts.
set -u
. "$(dirname "$0")/lib.sh"
stack_test ts-dsleep

# run MODE [kernel|nowatch]: prints "SECONDS LEFT FINS": the time from
# the kill or exit to the 5 in CLOSE_WAIT ("none": not within 3 s), and
# the sockets left ESTABLISHED or CLOSED then; unread: the time to none
# ESTABLISHED, those left, and how many ended with a FIN (CLOSE_WAIT)
# rather than a reset.
run() {
	local mode=$1 k=${2:-} name st d
	name=$mode${2:+-$2}
	st=ts-dsleep-$name-$$ d=$tmp/$name
	mkdir -p "$d"
	cat >"$d/run.sh" <<EOS
set -u
ip link set lo up
mkfifo "$d/go"
victim=
trap 'kill -9 \$(jobs -p) \$(pgrep -P "\$victim" 2>/dev/null) 2>/dev/null' EXIT
run=""
[ "$k" != kernel ] && run="$sluice run --stack $st --"
[ "$k" = nowatch ] && export SLUICE_NO_WATCHER=1
export SLUICE_MAX_SOCKETS=1024
unread=
[ $mode = unread ] && unread=unread
if [ "$k" = kernel ]; then
	waits() { ss -Htn state close-wait | wc -l; }
	left() { ss -Htn state established state closed | wc -l; }
	est() { ss -Htn state established | wc -l; }
else
	waits() { "$sluice" dump "$st" 2>/dev/null | grep -c ' CLOSE_WAIT '; }
	left() { "$sluice" dump "$st" 2>/dev/null | grep -cE ' (ESTABLISHED|CLOSED) '; }
	est() { "$sluice" dump "$st" 2>/dev/null | grep -c ' ESTABLISHED '; }
fi
\$run "$py" "$top/tests/preload/death_sleep.py" server "$d" 5 \$unread >"$d/srv" 2>&1 &
for i in \$(seq 200); do [ -e "$d/port" ] && break; sleep 0.05; done
\$run "$py" "$top/tests/preload/death_sleep.py" victim "$d" 5 >"$d/vic" 2>&1 &
for i in \$(seq 200); do [ -e "$d/waiting" ] && [ -e "$d/victim" ] && break; sleep 0.05; done
victim=\$(cat "$d/victim")
case $mode in
kill|unread) echo k >"$d/go"
	# In waitpid() now (its wait channel), or after 2 s anyway.
	for i in \$(seq 40); do grep -q do_wait "/proc/\$victim/wchan" 2>/dev/null && break; sleep 0.05; done
	sleep 0.2
	t0=\$(date +%s.%N)
	kill -9 "\$victim" ;;
_exit)	t0=\$(date +%s.%N); echo x >"$d/go" ;;
exit)	t0=\$(date +%s.%N); echo e >"$d/go" ;;
esac
t=none
ended() { if [ -n "\$unread" ]; then [ "\$(est)" = 0 ]; else [ "\$(waits)" -ge 5 ]; fi; }
for i in \$(seq 300); do
	if ended; then t=\$(date +%s.%N); break; fi
	[ "\$(date +%s)" -gt "\${t0%.*}" ] && [ "\$(( \$(date +%s) - \${t0%.*} ))" -ge 3 ] && break
	sleep 0.01
done
[ "\$t" != none ] && t=\$("$py" -c 'import sys; print("%.3f" % (float(sys.argv[1]) - float(sys.argv[2])))' \$t \$t0)
# (A connection reset is CLOSED until its program closes it: a
# kernel socket so is not listed by ss.)
if [ -n "\$unread" ]; then echo "\$t \$(est) \$(waits)"; else echo "\$t \$(left) 0"; fi
EOS
	timeout 60 unshare -rn bash "$d/run.sh" 2>/dev/null | tail -1 | grep . || echo "none -1 -1"
}

# within S LIMIT: S is a time and at most LIMIT seconds
within() { [ "$1" != none ] && [ "${1#-}" = "$1" ] && "$py" -c 'import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))' "$1" "$2"; }

for m in kill _exit exit unread; do
	read -r s sl sf < <(run $m)
	read -r kt kl kf < <(run $m kernel)
	echo "# $m: Sluice $s s, the kernel $kt s; left: $sl, the kernel $kl"
	check "$m: the peer sees the end within 0.5 s under Sluice ($s s; the kernel $kt s)" within "$s" 0.5
	check "$m: and on the kernel ($kt s)" within "$kt" 0.5
	what="ESTABLISHED or CLOSED"
	[ $m = unread ] && what="ESTABLISHED (the server's reset)"
	check "$m: no socket left $what ($sl; the kernel $kl)" test "$sl" = 0 -a "$kl" = 0
	[ $m = unread ] &&
		check "unread: reset, as the kernel resets them, not ended with a FIN ($sf in CLOSE_WAIT; the kernel $kf)" test "$sf" = 0 -a "$kf" = 0
done
read -r s sl sf < <(run kill nowatch)
echo "# kill, SLUICE_NO_WATCHER=1: $s s"
check "kill with SLUICE_NO_WATCHER=1: nobody sees the death within 3 s ($s)" test "$s" = none
done_testing
