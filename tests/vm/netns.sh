# SPDX-License-Identifier: BSD-2-Clause
#
# Sourced by VM suites (lossy.sh, run_kring.sh, handoff.sh): a veth pair between the VM's
# root namespace, where a Sluice stack runs on one end through the
# module's rings, and a network namespace the suite creates and deletes,
# where the Linux kernel's own stack is the peer.
#
#   VM root namespace                          netns $NETNS_NS
#   +-----------------------------------+      +--------------------------+
#   | kernel: $NETNS_S/24 on $NETNS_DEV |      |                          |
#   | Sluice stack on $NETNS_DEV        | veth | $NETNS_PEER $NETNS_K/24  |
#   |   (kring), sharing $NETNS_S       +======+ Linux kernel stack       |
#   +-----------------------------------+      +--------------------------+
#       netem_on ARGS: the same netem qdisc on both veth ends
#
# Set NETNS_NS, NETNS_DEV, NETNS_PEER, NETNS_S, NETNS_K before sourcing to
# change the defaults.  Only these addresses, inside this VM, carry traffic.
IP=/usr/sbin/ip
TC=/usr/sbin/tc
NETNS_NS=${NETNS_NS:-slk-lossy}
NETNS_DEV=${NETNS_DEV:-slo0}
NETNS_PEER=${NETNS_PEER:-slo1}
NETNS_S=${NETNS_S:-10.79.0.1}
NETNS_K=${NETNS_K:-10.79.0.2}

in_ns() { $IP netns exec "$NETNS_NS" "$@"; }

# netns_up: the namespace, the veth pair, addresses; 0 when the peer
# namespace answers ping.
netns_up() {
	mkdir -p /run/netns
	$IP netns add "$NETNS_NS" || return 1
	$IP link add "$NETNS_DEV" type veth peer name "$NETNS_PEER" || return 1
	$IP link set "$NETNS_PEER" netns "$NETNS_NS" || return 1
	$IP addr add "$NETNS_S/24" dev "$NETNS_DEV"
	$IP link set "$NETNS_DEV" up
	in_ns $IP link set lo up
	in_ns $IP addr add "$NETNS_K/24" dev "$NETNS_PEER"
	in_ns $IP link set "$NETNS_PEER" up
	in_ns ping -c 1 -W 5 "$NETNS_S" >/dev/null 2>&1
}

# netns_down: everything netns_up made (safe to call twice).
netns_down() {
	$IP netns del "$NETNS_NS" 2>/dev/null
	$IP link del "$NETNS_DEV" 2>/dev/null
	return 0
}

# netem_on ARGS...: netem with ARGS on both ends; 0 if both took it.
netem_on() {
	$TC qdisc add dev "$NETNS_DEV" root netem "$@" 2>/dev/null &&
		in_ns $TC qdisc add dev "$NETNS_PEER" root netem "$@" 2>/dev/null
}

netem_off() {
	$TC qdisc del dev "$NETNS_DEV" root 2>/dev/null
	in_ns $TC qdisc del dev "$NETNS_PEER" root 2>/dev/null
	return 0
}

# netem_stats: "sent N pkt, dropped D" of each end's qdisc, one line each.
netem_stats() {
	echo "$NETNS_DEV: $($TC -s qdisc show dev "$NETNS_DEV" | sed -n 's/^ *Sent \([0-9]*\) bytes \([0-9]*\) pkt (dropped \([0-9]*\).*/\2 pkts, \3 dropped/p' | head -n 1)"
	echo "$NETNS_PEER: $(in_ns $TC -s qdisc show dev "$NETNS_PEER" | sed -n 's/^ *Sent \([0-9]*\) bytes \([0-9]*\) pkt (dropped \([0-9]*\).*/\2 pkts, \3 dropped/p' | head -n 1)"
}

# uptime_ms: milliseconds since boot (busybox date has no %N).
uptime_ms() {
	awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}
