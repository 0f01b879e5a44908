#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: hostile shared memory and process death on module stacks.
# A scribbler attaches to a kring stack carrying traffic and writes seeded
# garbage over its rings and region; the module must notice (bad_*
# counters), never oops, and clean up everything once the processes are
# gone.  The scribbled stack's own processes never die of a signal: they
# find the region corrupt and exit with kring_peer's "stack broken"
# status (3), or finish.  A second stack, of other processes, keeps
# working throughout.  Prints TAP.
#
#   VM root namespace                              netns slh-peer
#   +----------------------------------------+      +----------------------+
#   | stack "hx" on slh0 10.80.0.1 (kring):   | veth | slh1 10.80.0.2       |
#   |   kring_peer serve (port 17), its       +======+  kpeer clients, echo |
#   |   tcp-client; scribble (garbage)        |      |  server on port 7    |
#   | stack "hq" on slq0 10.81.0.1 (kring):   | veth | slq1 10.81.0.2       |
#   |   kring_peer serve (port 7), left alone +======+  kpeer tcp-echo      |
#   +----------------------------------------+      +----------------------+
#
# SLUICE_SEED picks the garbage (default: from the clock, printed).
# Every program runs under a timeout.
PATH=/opt/sluice/bin:$PATH
IP=/usr/sbin/ip
NS=slh-peer
SUITE="hostile"
. /opt/sluice/bin/tap.sh
in_ns() { $IP netns exec "$NS" "$@"; }
# ended NAME PID FILE: wait for it (its own timeout bounds this) and say
# how it ended and what it printed last; its status is left in $rc.
ended() {
	wait "$2"
	rc=$?
	if [ $rc -eq 137 ] || [ $rc -eq 124 ]; then how="timed out ($rc)"
	elif [ $rc -gt 128 ]; then how="signal $((rc - 128))"
	else how="exit $rc"; fi
	echo "# $1: $how: $(tail -n 1 "$3" 2>/dev/null)"
}
info() { sed -n "s/^$1 //p" /sys/kernel/debug/sluice/info; }
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	$IP netns del "$NS" 2>/dev/null
	$IP link del slh0 2>/dev/null
	$IP link del slq0 2>/dev/null
}
trap cleanup EXIT

seed=${SLUICE_SEED:-$(date +%s)}
echo "# seed $seed (SLUICE_SEED=$seed replays it)"
lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(info features)
if [ $(( ${feat:-0} & 0xe )) != $((0xe)) ] || [ ! -x $IP ]; then
	echo "ok 1 - hostile # SKIP module features ${feat:-?} or no iproute2"
	echo "1..1"
	exit 0
fi

# User faults stay logged (exception-trace): the scribbled stack's own
# processes must not fault either, and a "traps: ... general protection"
# line fails the kernel-log check below and the runner's.
echo 1 >/proc/sys/debug/exception-trace 2>/dev/null

mkdir -p /run/netns
$IP netns add "$NS"
in_ns $IP link set lo up
for p in h:80 q:81; do
	l=${p%%:*} net=${p#*:}
	$IP link add sl${l}0 type veth peer name sl${l}1
	$IP link set sl${l}1 netns "$NS"
	$IP addr add 10.$net.0.1/24 dev sl${l}0
	$IP link set sl${l}0 up
	in_ns $IP addr add 10.$net.0.2/24 dev sl${l}1
	in_ns $IP link set sl${l}1 up
done

# The stack left alone, and the one to be scribbled on: each its own process.
timeout -s KILL 150 kring_peer serve hq slq0 120 >/tmp/hq.out 2>&1 &
hq=$!
timeout -s KILL 60 kring_peer serve hx slh0 40 17 >/tmp/hx.out 2>&1 &
hx=$!
in_ns timeout -s KILL 70 kpeer serve 7 50 >/tmp/hk.out 2>&1 &
hk=$!
pids="$hq $hx $hk"
check "stack hq (left alone) serves" wait_ready /tmp/hq.out 150
check "stack hx (to be scribbled on) serves" wait_ready /tmp/hx.out 150
check "kernel echo server for hx's client" wait_ready /tmp/hk.out 150

# Traffic on both stacks, in both directions on hx, then the scribbler.
in_ns timeout -s KILL 120 kpeer tcp-echo 10.81.0.1 7 2097152 2 >/tmp/q-tcp.out 2>&1 &
qt=$!
in_ns timeout -s KILL 50 kpeer tcp-echo 10.80.0.1 17 8388608 2 >/tmp/x-tcp.out 2>&1 &
xt=$!
in_ns timeout -s KILL 50 kpeer udp-echo 10.80.0.1 17 400 >/tmp/x-udp.out 2>&1 &
xu=$!
timeout -s KILL 50 kring_peer tcp-client hx 10.80.0.2 7 8388608 >/tmp/x-cli.out 2>&1 &
xc=$!
pids="$pids $qt $xt $xu $xc"
sleep 2
hx_pids=$(cat /sys/class/misc/sluice/stacks/hx/pids 2>/dev/null)
timeout -s KILL 120 scribble hx "$seed" 3000 >/tmp/scribble.out 2>&1
rc=$?
sed 's/^/# scribble: /' /tmp/scribble.out
check "scribbler ran its rounds, exited by itself (rc $rc)" [ $rc -le 1 ]
check "the module noticed: its bad_* counters moved" [ $rc -eq 0 ]

# Every process on hx ends, by itself or by its timeout: nothing hangs
# unbounded, and what ends is reported.
ended hx-server $hx /tmp/hx.out
hx_rc=$rc
ended kernel-tcp-clients $xt /tmp/x-tcp.out
ended kernel-udp-client $xu /tmp/x-udp.out
ended sluice-tcp-client $xc /tmp/x-cli.out
xc_rc=$rc
# hx's own processes (libsluice on the scribbled region): 0 finished, 1
# the client's echo differed (scribbled payload), 3 "stack broken".
# Never a signal, never their timeout (137).
check "hx's server ended by itself, not by a signal (rc $hx_rc)" \
	[ "$hx_rc" = 0 -o "$hx_rc" = 3 ]
check "hx's Sluice client ended by itself, not by a signal (rc $xc_rc)" \
	[ "$xc_rc" = 0 -o "$xc_rc" = 1 -o "$xc_rc" = 3 ]
check "hx's processes found the region corrupt: a clear error, exit 3 (server $hx_rc, client $xc_rc)" \
	[ "$hx_rc" = 3 -o "$xc_rc" = 3 ]
check "no user-space fault logged (traps: / segfault)" \
	sh -c "! dmesg | grep -Eq 'traps:|segfault at'"
# Where, if one was: the faulting ip and the library's mapping.
dmesg | grep -E -A1 'traps:|segfault at' | sed 's/^/# fault: /'
kill -9 $hk 2>/dev/null
wait $hk 2>/dev/null
check "nothing of hx's is left running" sh -c "! kill -0 $hx $xt $xu $xc 2>/dev/null"
echo "# hx had attached pids: $hx_pids"

# The stack nobody scribbled on: its transfer is byte-exact.
wait $qt
expect "ok 2 x 2097152" "stack hq, scribbled next door: 2 x 2 MiB echoed byte for byte" \
	cat /tmp/q-tcp.out
expect "50/50 echoed" "stack hq still answers UDP afterwards" \
	in_ns timeout 60 kpeer udp-echo 10.81.0.1 7 50

# Process death on a module stack: kill -9 a process asleep in accept.
timeout -s KILL 60 kring_peer handoff hq 9100 50 >/tmp/hd.out 2>&1 &
hd=$!
pids="$pids $hd"
wait_ready /tmp/hd.out 150
sysq=/sys/class/misc/sluice/stacks/hq
a0=$(cat $sysq/attached)
check "the accepting process is attached to hq ($(cat $sysq/pids))" grep -qw "$hd" $sysq/pids
kill -9 $hd
wait $hd 2>/dev/null
i=0
while [ $i -lt 50 ] && grep -qw "$hd" $sysq/pids; do sleep 0.1; i=$((i + 1)); done
check "killed mid-accept: its pid left hq's pids ($(cat $sysq/pids))" sh -c "! grep -qw $hd $sysq/pids"
check "... and attached dropped ($a0 -> $(cat $sysq/attached))" [ "$(cat $sysq/attached)" -lt "$a0" ]
expect "ok 1 x 262144" "the survivor (hq's server) still echoes 256 KiB" \
	in_ns timeout 120 kpeer tcp-echo 10.81.0.1 7 262144
kill $hq 2>/dev/null
wait $hq 2>/dev/null
pids=""

# Everything closed: no stack, region, ring or filter left; ports are the kernel's.
i=0
while [ $i -lt 100 ] && { [ "$(info stacks)" != 0 ] || [ "$(info regions)" != 0 ]; }; do
	sleep 0.1
	i=$((i + 1))
done
# What is left, if anything: its helper, sockets and TIME-WAIT entries.
[ "$(info stacks)" = 0 ] || sluice stacks 2>&1 | sed 's/^/# left: /'
[ "$(info stacks)" = 0 ] || sluice dump hq 2>&1 | grep -E 'helper|time-wait|^  +[0-9]+ tcp|TIME_WAIT' |
	head -20 | sed 's/^/# left: /'
check "no stack left (stacks $(info stacks))" [ "$(info stacks)" = 0 ]
check "no region left (regions $(info regions))" [ "$(info regions)" = 0 ]
expect 0 "the kernel can bind TCP port 17 again (hx's)" kpeer bind tcp 17
expect 0 "and UDP port 17" kpeer bind udp 17
expect 0 "and TCP port 7 (hq's)" kpeer bind tcp 7
expect 0 "and TCP port 9100 (the killed process's listener)" kpeer bind tcp 9100
if dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|KASAN|UBSAN' >/tmp/hbad.txt; then
	tap fail "kernel log clean after the scribbling"
	sed 's/^/# /' /tmp/hbad.txt | head -n 20
else
	tap ok "kernel log clean after the scribbling"
fi

cleanup
trap - EXIT
i=0
while [ $i -lt 50 ] && ! rmmod sluice 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
check "module unloads: no stack, ring, filter or mapping left" sh -c "! lsmod | grep -q '^sluice '"
echo "1..$n"
exit $fail
