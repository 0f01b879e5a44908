#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: IPv6 on the kring path (issue 20), as run_kring.sh is
# for IPv4.  tests/preload/v6echo under `sluice run --ifname slv0`, on a
# Sluice stack that runs through the module's rings on a veth, against the
# Linux kernel's own stack in a network namespace this script creates and
# deletes; the same program on the VM's kernel (no Sluice) beside each
# step, talking to the same peers, and their lines compared.  Prints TAP.
#
#   VM root namespace                                  netns slv-peer
#   +-------------------------------------------+      +----------------------------+
#   | kernel: 10.79.6.1/24, fd00:79:6::1/64     |      |                            |
#   |   on slv0 (ND, ARP; its TCP and UDP must  | veth | slv1 10.79.6.2/24,         |
#   |   not move while Sluice's steps run)      +======+   fd00:79:6::2/64          |
#   | Sluice stack "rk6" on slv0 (kring):       |      | Linux kernel stack:        |
#   |   v6echo serve-tcp [::]:7200, udp :7201   |      |   v6echo serve-tcp :7400,  |
#   |   v6echo tcp/udp clients                  |      |   serve-udp :7401, and     |
#   | the kernel beside: v6echo serve-tcp :7300 |      |   the clients of :7200,    |
#   |   udp :7301, and the same clients         |      |   :7201, :7300, :7301      |
#   +-------------------------------------------+      +----------------------------+
#
# A third program under sluice run holds the stack (a module's stack goes
# with its last process) while the servers come and go, so its counters
# can be read before and after each step.  Every program runs for a
# bounded time.
PATH=/opt/sluice/bin:$PATH
NETNS_NS=slv-peer NETNS_DEV=slv0 NETNS_PEER=slv1 NETNS_S=10.79.6.1 NETNS_K=10.79.6.2
. /opt/sluice/bin/netns.sh
NS=$NETNS_NS
S=$NETNS_S
K=$NETNS_K
S6=fd00:79:6::1
K6=fd00:79:6::2
ST=rk6
SUITE="IPv6 on kring"
. /opt/sluice/bin/tap.sh
srun() { timeout 120 sluice run --stack $ST --ifname slv0 -- "$@"; }
in_ns_t() { timeout 120 $IP netns exec "$NS" "$@"; }
cleanup() {
	for p in $hold $stcp $sudp $ktcpd $kudpd $ptcp $pudp; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	netns_down
}
trap cleanup EXIT

# kctr, kseen, lines, step, kstep (on stack $ST).
. /opt/sluice/bin/v6_lib.sh
STEP_TAG=

v6_module_up

check "the peer namespace pings the device address (kernel)" netns_up
# Both ends' IPv6 addresses, without DAD's wait (the kernel's to run).
$IP -6 addr add $S6/64 dev slv0 nodad
in_ns $IP -6 addr add $K6/64 dev slv1 nodad
i=0
while [ $i -lt 50 ] && $IP -6 addr show dev slv0 | grep -q tentative; do sleep 0.2; i=$((i + 1)); done

# The peer's kernel servers, and the VM's kernel servers beside the stack's.
in_ns_t v6echo serve-tcp :: 7400 2 600 >/tmp/p_tcp.out 2>&1 &
ptcp=$!
in_ns_t v6echo serve-udp :: 7401 8 600 >/tmp/p_udp.out 2>&1 &
pudp=$!
timeout 600 v6echo serve-tcp :: 7300 2 600 >/tmp/k_tcp.out 2>&1 &
ktcpd=$!
timeout 600 v6echo serve-udp :: 7301 6 600 >/tmp/k_udp.out 2>&1 &
kudpd=$!
# The stack's holder (a UDP socket waiting for a datagram that never
# comes), then its servers on [::] (dual-stack), under sluice run.
timeout 600 sluice run --stack $ST --ifname slv0 -- v6echo serve-udp :: 7202 1 600 \
	>/tmp/hold.out 2>&1 &
hold=$!
wait_ready /tmp/hold.out 200
timeout 600 sluice run --stack $ST --ifname slv0 -- v6echo serve-tcp :: 7200 2 600 \
	>/tmp/s_tcp.out 2>&1 &
stcp=$!
timeout 600 sluice run --stack $ST --ifname slv0 -- v6echo serve-udp :: 7201 6 600 \
	>/tmp/s_udp.out 2>&1 &
sudp=$!
for f in p_tcp p_udp k_tcp k_udp s_tcp s_udp; do
	check "server $f ready" wait_ready /tmp/$f.out 200
done
sluice fds $ST >/tmp/fds.out 2>&1
check "the stack's holder and two servers are on stack $ST (sluice fds)" \
	[ "$(grep -c ' v6echo$' /tmp/fds.out)" -ge 3 ]
sed 's/^/# fds: /' /tmp/fds.out
sluice dump $ST >/tmp/rk6-dump.out 2>&1
ifi=$(cat /sys/class/net/slv0/ifindex)
check "the stack is on slv0 (ifindex $ifi) through the module's rings" \
	grep -q "^kring: ifindex $ifi, device up" /tmp/rk6-dump.out
grep -E '^(stack|kring|ipv6|ip6)' /tmp/rk6-dump.out | sed 's/^/# dump: /'

# Stack client -> kernel server, over IPv6: TCP 2 MB, UDP 4 x 1400.
step "TCP client under sluice run -> kernel server [$K6]:7400, 2000000 bytes echoed" 2000000 \
	srun v6echo tcp $K6 7400 2000000
kstep "TCP client -> kernel server [$K6]:7400" timeout 120 v6echo tcp $K6 7400 2000000
step "UDP client under sluice run -> kernel server [$K6]:7401, 4 x 1400 echoed" 5600 \
	srun v6echo udp $K6 7401 4 1400
kstep "UDP client -> kernel server [$K6]:7401" timeout 120 v6echo udp $K6 7401 4 1400

# Kernel clients -> the stack's dual-stack [::] servers: an IPv6 and an
# IPv4 client each, then the same clients to the VM kernel's servers.
step "kernel TCP client -> [$S6]:7200 under sluice run ([::]), 2000000 bytes echoed" 2000000 \
	in_ns_t v6echo tcp $S6 7200 2000000
step "kernel TCP client -> $S:7200 under sluice run ([::], IPv4), 500000 bytes echoed" 500000 \
	in_ns_t v6echo tcp $S 7200 500000
step "kernel UDP client -> [$S6]:7201 under sluice run ([::]), 3 x 1400 echoed" 4200 \
	in_ns_t v6echo udp $S6 7201 3 1400
step "kernel UDP client -> $S:7201 under sluice run ([::], IPv4), 3 x 1400 echoed" 4200 \
	in_ns_t v6echo udp $S 7201 3 1400
kstep "kernel TCP client -> [$S6]:7300" in_ns_t v6echo tcp $S6 7300 2000000
kstep "kernel TCP client -> $S:7300 (IPv4)" in_ns_t v6echo tcp $S 7300 500000
kstep "kernel UDP client -> [$S6]:7301" in_ns_t v6echo udp $S6 7301 3 1400
kstep "kernel UDP client -> $S:7301 (IPv4)" in_ns_t v6echo udp $S 7301 3 1400

for p in $stcp $sudp $ktcpd $kudpd $ptcp; do wait "$p"; done
stcp= sudp= ktcpd= kudpd= ptcp=
kill $pudp 2>/dev/null
wait $pudp 2>/dev/null
pudp=
for f in s_tcp s_udp k_tcp k_udp p_tcp p_udp; do sed "s/^/# $f: /" /tmp/$f.out; done
st=$(lines /tmp/s_tcp.out) kt=$(lines /tmp/k_tcp.out)
check "the stack's [::] TCP server saw what the kernel's did, line for line" [ "$st" = "$kt" ]
check "... an IPv6 client, then an IPv4 one (v4-mapped), each echoed whole" \
	[ "$(echo "$st" | tr '\n' '|')" = "tcp conn from v6: echoed 2000000|tcp conn from v4mapped: echoed 500000|" ]
su=$(lines /tmp/s_udp.out) ku=$(lines /tmp/k_udp.out)
check "the stack's [::] UDP server saw what the kernel's did, line for line" [ "$su" = "$ku" ]
check "... 3 IPv6 datagrams, then 3 IPv4 ones (v4-mapped), each echoed whole" \
	[ "$(echo "$su" | uniq -c | awk '{ $1 = $1; print }' | tr '\n' '|')" = \
		"3 udp dgram from v6: echoed 1400|3 udp dgram from v4mapped: echoed 1400|" ]
pt=$(lines /tmp/p_tcp.out | uniq -c | awk '{ $1 = $1; print }')
pu=$(lines /tmp/p_udp.out | uniq -c | awk '{ $1 = $1; print }')
check "the peer's servers saw the stack's client as the kernel's ($pt; $pu)" \
	[ "$pt" = "2 tcp conn from v6: echoed 2000000" -a "$pu" = "8 udp dgram from v6: echoed 1400" ]

sluice dump $ST >/tmp/rk6-dump.out 2>&1
sed -n '/^counters:/,/^sockets:/p' /tmp/rk6-dump.out | grep -v ' 0 ' | sed 's/^/# /'
for c in bad_index bad_buf bad_desc rx_drop_size; do
	v=$(sed -n "s/^  $c *\([0-9]*\) .*/\1/p" /tmp/rk6-dump.out | head -n 1)
	check "kring counter $c is 0 ($v)" [ "$v" = 0 ]
done
v=$(sed -n 's/^  link_tx_err *\([0-9]*\) .*/\1/p' /tmp/rk6-dump.out | head -n 1)
check "the link refused no packet the stack sent (link_tx_err ${v:-0})" [ "${v:-0}" = 0 ]

# The holder goes; the orphaned connections and TIME-WAIT entries hold
# the stack in its helper: ended here, not waited for (run_kring.sh
# checks the helper).
holder_end

cleanup
trap - EXIT
echo "1..$n"
exit $fail
