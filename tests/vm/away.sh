#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: timers while the program is away (issue 19; lib/README.md,
# "Timers while the program is away"), on a module's stack.  timers_away
# holds both ends of a connection on 127.0.0.1 in one thread, fills the
# window, then sleeps (usleep(), or a read(2) of a pipe); a forked observer
# times the first zero-window probe, the persist timer's.  Here the
# hand-off agent, the thread the process has for its TCP sockets on a
# module's stack, reads the away timer; no thread is added for it.  Rows:
# the kernel alone, the same under sluice run, and under sluice run with
# SLUICE_AWAY_TIMER=0 (main's library before the timer: no probe within
# 2 s).  TCG times mean little: the bound is the kernel's slowest + 1 s.
# Prints TAP.
#
#   VM root namespace (no traffic leaves 127.0.0.1)
#   +---------------------------------------------+
#   | sta0 10.82.0.1/24 (veth): the stack's device |
#   | timers_away: kernel lo, then Sluice "sta*"   |
#   +---------------------------------------------+
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
SUITE="timers while away"
. /opt/sluice/bin/tap.sh
cleanup() { $IP link del sta0 2>/dev/null; }
trap cleanup EXIT

lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
$IP link set lo up
$IP link add sta0 type veth peer name sta1 || skip_all "no veth"
$IP addr add 10.82.0.1/24 dev sta0
$IP link set sta0 up
$IP link set sta1 up

ta_run() { # WHO MODE PORT: one probe_ms figure, "none", or "failed"
	case "$1" in
	kernel) pre="" ;;
	sluice) pre="env SLUICE_LOOPBACK=1 sluice run --stack sta$3 --ifname sta0 --" ;;
	off) pre="env SLUICE_LOOPBACK=1 SLUICE_AWAY_TIMER=0 sluice run --stack sta$3 --ifname sta0 --" ;;
	esac
	# (No thread named sluice-timer may be in it: the agent reads.)
	timeout 60 $pre timers_away "$2" "$3" >/tmp/ta.$3 2>&1 &
	sleep 1
	for p in $(pidof timers_away); do
		cat /proc/$p/task/*/comm 2>/dev/null
	done | grep -c sluice-timer >/tmp/ta.thr.$3
	wait
	v=$(awk '$2 == "probe_ms" { print $3 }' /tmp/ta.$3)
	[ -n "$v" ] || { sed 's/^/#   /' /tmp/ta.$3 >&2; v=failed; }
	echo "$v"
}
p=7180
for m in sleep pipe; do
	k=$(ta_run kernel $m $((p + 1))) s=$(ta_run sluice $m $((p + 2))) o=$(ta_run off $m $((p + 3)))
	thr=$(cat /tmp/ta.thr.$((p + 2)))
	p=$((p + 3))
	echo "# $m: first probe kernel $k ms, Sluice $s ms, Sluice with the timer off $o"
	check "$m: a probe while the only thread is away ($s ms; the kernel $k ms; + 1,000 ms)" \
		awk -v k="$k" -v s="$s" 'BEGIN { exit !(k ~ /^[0-9.]+$/ && s ~ /^[0-9.]+$/ && s + 0 <= k + 1000) }'
	check "$m: ... read by the agent, no thread of its own ($thr sluice-timer)" test "$thr" = 0
	check "$m: ... and none with SLUICE_AWAY_TIMER=0 ($o)" test "$o" = none
done

echo "1..$n"
exit $fail
