# SPDX-License-Identifier: BSD-2-Clause
# What the IPv6 suites on a kring stack share (run_kring6.sh on a veth,
# ipoib6.sh on the kernel's ib_ipoib): the stack's ring counters, the VM
# kernel's TCP and UDP counters, and one step beside the kernel's.  Sourced
# after tap.sh or ipoib_lib.sh (check); the caller sets ST (the stack's
# name) and STEP_TAG (put before each check's text, "" for none).

# v6_module_up: the module loaded, with kring, filters, ifinfo and IPv6;
# else the suite is skipped.
v6_module_up() {
	lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
	feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
	[ $(( 0x${feat:-0} & 0x200e )) = $((0x200e)) ] ||
		skip_all "module features 0x$feat lack kring, filters, ifinfo or IPv6"
}
# kctr NAME: a kring counter of stack $ST.
kctr() { sluice dump "$ST" 2>/dev/null | sed -n "s/^  $1 *\([0-9]*\) .*/\1/p" | head -n 1; }
# The root namespace's kernel TCP and UDP counters (both families): TCP
# InSegs OutSegs, UDP InDatagrams OutDatagrams, Udp6 InDatagrams OutDatagrams.
kseen() {
	awk '/^(Tcp|Udp):/ { if (!h[$1]) { for (i = 1; i <= NF; i++) c[$1, $i] = i; h[$1] = 1; next }
		if ($1 == "Tcp:") t = $c["Tcp:", "InSegs"] " " $c["Tcp:", "OutSegs"]
		else u = $c["Udp:", "InDatagrams"] " " $c["Udp:", "OutDatagrams"] }
		END { printf "%s %s", t, u }' /proc/net/snmp
	awk '$1 == "Udp6InDatagrams" || $1 == "Udp6OutDatagrams" { printf " %s", $2 } END { print "" }' \
		/proc/net/snmp6
}
# lines FILE: a server's lines after "ready", without their numbers.
lines() { sed -n '/^ready$/,$p' "$1" | sed '1d; s/ [0-9]* from / from /'; }

# step DESCRIPTION BYTES CMD...: CMD (a program under sluice run, or a
# kernel peer talking to one) says " ok " in its last line, the rings
# carried at least BYTES each way, and the VM kernel's TCP and UDP saw
# none of it.
step() {
	local d=$1 by=$2 out seen0 seen1 rx0 rx1 tx0 tx1
	shift 2
	seen0=$(kseen) rx0=$(kctr rx_bytes) tx0=$(kctr tx_bytes)
	out=$("$@" 2>&1 | tail -n 1)
	seen1=$(kseen) rx1=$(kctr rx_bytes) tx1=$(kctr tx_bytes)
	check "$STEP_TAG$d: $out" sh -c "echo '$out' | grep -q ' ok '"
	check "$STEP_TAG... through the rings (rx_bytes +$((rx1 - rx0)), tx_bytes +$((tx1 - tx0)))" \
		[ $((rx1 - rx0)) -ge "$by" -a $((tx1 - tx0)) -ge "$by" ]
	check "$STEP_TAG... none of it the VM kernel's TCP or UDP ($seen0 -> $seen1)" [ "$seen0" = "$seen1" ]
}
# holder_end: the stack's holder ($hold, a job of the suite) and then the
# helper that keeps its orphaned connections are ended, not waited for;
# the module's stack must go with them.
holder_end() {
	local hp n=0
	kill $hold 2>/dev/null
	wait $hold 2>/dev/null
	hold=
	hp=$(sluice dump "$ST" 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p')
	[ -n "$hp" ] && kill "$hp" 2>/dev/null
	while [ $n -lt 100 ] && [ -d /sys/class/misc/sluice/stacks/$ST ]; do sleep 0.2; n=$((n + 1)); done
	check "the stack went with its last program" [ ! -d /sys/class/misc/sluice/stacks/$ST ]
}
# kstep DESCRIPTION CMD...: the same program on the VM's kernel.
kstep() {
	local d=$1 out
	shift
	out=$("$@" 2>&1 | tail -n 1)
	check "$STEP_TAG$d (the kernel): $out" sh -c "echo '$out' | grep -q ' ok '"
	# Its connection's last segments, before the next step counts.
	sleep 2
}
