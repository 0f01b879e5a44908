#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# AF_INET6 sockets talking IPv4 in the stack (issue 20, first step;
# lib/preload/README.md, "AF_INET6 sockets"), beside the kernel.
#
#   +------------- network namespace made here (lo up) ---------------+
#   |  v6dual cases: every case in one process, on the kernel and      |
#   |  under sluice run; the outputs (every address a case sees, byte  |
#   |  for byte, and every answer) must be the same                    |
#   |  sluice run v6dual serve 6 :: <- stack and kernel clients, v4/v6 |
#   |  sluice run python3 -m http.server --bind :: <- sluice run curl  |
#   +------------------------------------------------------------------+
#
# 1. The cases (tests/preload/v6dual.c): a v6 listener on :: with a v4
#    client, v6 clients through ::ffff:127.0.0.1, a v4 listener with a v6
#    client, a v6 listener on ::ffff:127.0.0.1 and on ::ffff:0.0.0.0;
#    UDP both ways (recvfrom, recvmsg, a short address buffer); ::1;
#    getsockname of a fresh socket and after bind(::, 0); IPPROTO_IPV6
#    options; IPV6_V6ONLY=1; a v4 bind on a v6 listener's port.  Same
#    output as the kernel's; under Sluice the v4-mapped sockets are the
#    stack's, and those on ::1 (IPv6 itself, on address handles:
#    lib/proto/proto.h "IPv6 sockets") too.
# 2. A stack listener on [::] serves stack clients (AF_INET to 127.0.0.1,
#    AF_INET6 to ::ffff:127.0.0.1 and to ::1) in the stack and kernel
#    clients (IPv4 and ::1) through its AF_INET6 twin.
# 3. net.ipv6.bindv6only=1: an AF_INET6 socket is IPv6 only from the
#    start, as Linux, in the stack.
# 4. A real program: python3 -m http.server --bind :: under sluice run,
#    fetched by curl under sluice run over 127.0.0.1, in the stack; and
#    --bind ::1 fetched by curl -6 the same way.
# 5. SLUICE_INET6=0: AF_INET6 sockets are the kernel's, as before (what
#    the checks of 1 and 2 see without this work); SLUICE_INET6_NATIVE=0:
#    sockets on ::1 are the kernel's, as before.
set -u
. "$(dirname "$0")/lib.sh"
unshare_test "AF_INET6 sockets" v6dual tv6-$$

cat >"$tmp/run.sh" <<'EOS'
set -u
ip link set lo up
sluice=$1 prog=$2 st=$3 tmp=$4
R=(env SLUICE_NO_HELPER=1 "$sluice" run --stack "$st" --)
waitfor() { for _ in $(seq 250); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.02; done; return 1; }
count() { "$sluice" dump "$st" 2>/dev/null | awk -v c="$1" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }'; }

timeout 30 "$prog" cases 7600 >"$tmp/k.txt" 2>&1
echo "kernel rc $?"
timeout 30 "${R[@]}" "$prog" cases 7620 >"$tmp/s.txt" 2>&1
echo "sluice rc $?"
# (Before this work the mixed UDP cases hang: the first lines are enough.)
SLUICE_INET6=0 timeout 5 "${R[@]}" "$prog" cases 7640 >"$tmp/off.txt" 2>&1
echo "off rc $?"
sed 's/^/k: /' "$tmp/k.txt"
sed 's/^/s: /' "$tmp/s.txt"
grep '^where' "$tmp/off.txt" | sed 's/^/off: /'
SLUICE_INET6_NATIVE=0 timeout 30 "${R[@]}" "$prog" cases 7700 >"$tmp/nat.txt" 2>&1
grep '^where' "$tmp/nat.txt" | sed 's/^/nat: /'

# A stack listener on [::]: two stack clients, two kernel ones.
p0=$(count tcp_passive_open)
timeout 30 "${R[@]}" "$prog" serve 6 :: 7660 5 >"$tmp/srv" 2>&1 &
waitfor ready "$tmp/srv" || echo "serve: no ready"
echo "srv stack4 $(timeout 20 "${R[@]}" "$prog" client 4 127.0.0.1 7660 2>&1)"
echo "srv stack6 $(timeout 20 "${R[@]}" "$prog" client 6 ::ffff:127.0.0.1 7660 2>&1)"
echo "srv stack6native $(timeout 20 "${R[@]}" "$prog" client 6 ::1 7660 2>&1)"
echo "srv kernel4 $(timeout 20 "$prog" client 4 127.0.0.1 7660 2>&1)"
echo "srv kernel6 $(timeout 20 "$prog" client 6 ::1 7660 2>&1)"
wait
echo "srv $(grep served "$tmp/srv")"
echo "srv passive opens $(( $(count tcp_passive_open) - p0 ))"

# A real program on [::], and curl, both under sluice run.
p0=$(count tcp_passive_open)
mkdir -p "$tmp/www" && echo "hello from ::" >"$tmp/www/index.txt"
(cd "$tmp/www" && exec timeout 60 "${R[@]}" /usr/bin/python3 -m http.server --bind :: 7670) \
	>"$tmp/http.log" 2>&1 &
for _ in $(seq 250); do
	grep -q 'Serving HTTP' "$tmp/http.log" 2>/dev/null && break
	sleep 0.02
done
echo "http body $(timeout 20 "${R[@]}" curl -s http://127.0.0.1:7670/index.txt)"
echo "http fds $("$sluice" fds "$st" 2>/dev/null | grep -c python3)"
echo "http passive opens $(( $(count tcp_passive_open) - p0 ))"
kill %% 2>/dev/null
wait

# The same on ::1 (IPv6 itself), with curl -6.
p0=$(count tcp_passive_open)
(cd "$tmp/www" && exec timeout 60 "${R[@]}" /usr/bin/python3 -m http.server --bind ::1 7671) \
	>"$tmp/http6.log" 2>&1 &
for _ in $(seq 250); do
	grep -q 'Serving HTTP' "$tmp/http6.log" 2>/dev/null && break
	sleep 0.02
done
echo "http6 body $(timeout 20 "${R[@]}" curl -6 -s 'http://[::1]:7671/index.txt')"
echo "http6 fds $("$sluice" fds "$st" 2>/dev/null | grep -c python3)"
echo "http6 fds v6 $("$sluice" fds "$st" 2>/dev/null | grep -c 'LISTEN *\[::1\]:7671')"
echo "http6 dump v6 $("$sluice" dump "$st" 2>/dev/null | grep -c 'LISTEN *\[::1\]:7671')"
echo "http6 passive opens $(( $(count tcp_passive_open) - p0 ))"
echo "http6 log $(grep -c '"GET /index.txt' "$tmp/http6.log") $(grep -o '^::1 ' "$tmp/http6.log" | head -1)"
kill %% 2>/dev/null
wait

# bindv6only=1 in this namespace.
sysctl -qw net.ipv6.bindv6only=1
echo "bv6 kernel $(timeout 20 "$prog" bv6 7680 2>&1 | grep -v ^where | tr '\n' ';')"
echo "bv6 sluice $(timeout 20 "${R[@]}" "$prog" bv6 7681 2>&1 | tr '\n' ';')"
EOS
out=$(timeout 240 unshare -n bash "$tmp/run.sh" "$sluice" "$prog" "$st" "$tmp" 2>&1)
echo "$out" | sed 's/^/# /'

# The two case runs used ports 7600.. and 7620..: the kernel's output with
# its fixed ports moved by 20 must be the stack's, byte for byte.
kout=$(sed -n 's/^k: //p' <<<"$out" | grep -v '^where ')
sout=$(sed -n 's/^s: //p' <<<"$out" | grep -v '^where ')
shift_ports() {
	local line p
	while IFS= read -r line; do
		for p in $(seq 7600 7619); do
			line=${line// $(printf '%02x %02x' $((p >> 8)) $((p & 255))) / $(printf '%02x %02x' $(((p + 20) >> 8)) $(((p + 20) & 255))) }
		done
		echo "$line"
	done
}
check "the cases ran to the end on the kernel" grep -qx 'kernel rc 0' <<<"$out"
check "... and under sluice run" grep -qx 'sluice rc 0' <<<"$out"
check "every address and answer the same as the kernel's, byte for byte ($(wc -l <<<"$kout") lines)" \
	test "$(shift_ports <<<"$kout")" = "$sout" -a -n "$kout"
swhere=$(sed -n 's/^s: where //p' <<<"$out")
inst() { grep -qx "$1 $2" <<<"$swhere"; }
for c in tcp-v6any-v4 tcp-v6any-v6mapped tcp-v4-v6mapped tcp-v6mapped-v6mapped tcp-v6mappedany-v4; do
	check "$c: listener, client and accepted socket in the stack" \
		test "$(grep -c "^$c .* stack$" <<<"$swhere")" = 3
done
for c in udp-v4-v6mapped udp-v6mappedany-v4 udp-v6mapped-v6mapped; do
	check "$c: both sockets in the stack" test "$(grep -c "^$c .* stack$" <<<"$swhere")" = 2
done
for c in udp-v6any-v4 udp-v6any-v6mapped; do
	check "$c: a datagram socket on :: is the stack's (its twin takes IPv6), its clients too" \
		test "$(grep -c "^$c .* stack$" <<<"$swhere")" = 2
done
check "udp-v6any-loopback6: a server on :: reached by a client over ::1, both in the stack" \
	test "$(grep -c '^udp-v6any-loopback6 server\( after\)\? stack$' <<<"$swhere")" = 2 -a \
	"$(grep -c '^udp-v6any-loopback6 client stack$' <<<"$swhere")" = 1
check "tcp over ::1 (native IPv6): listener, client and accepted socket in the stack" \
	test "$(grep -c '^tcp-loopback6 .* stack$' <<<"$swhere")" = 3
check "udp over ::1: both sockets in the stack" \
	test "$(grep -c '^udp-loopback6 .* stack$' <<<"$swhere")" = 2
check "SLUICE_INET6_NATIVE=0: tcp and udp over ::1 are the kernel's, as before" \
	test "$(grep -c '^nat: where \(tcp\|udp\)-loopback6 .* kernel$' <<<"$out")" = 5
check "a fresh AF_INET6 socket and one bound to :: are the stack's" \
	test "$(grep -c '^names .* stack$' <<<"$swhere")" = 2
check "IPPROTO_IPV6 gets leave a socket in the stack; IPV6_V6ONLY=0 too" \
	test "$(grep -c '^opts \(after gets\|bound\|V6ONLY=0\) stack$' <<<"$swhere")" = 3
check "IPV6_TCLASS, IPV6_UNICAST_HOPS, IPV6_MULTICAST_HOPS (no effect on IPv4) kept in the stack" \
	test "$(grep -c '^opts \(TCLASS\|udp MULTICAST_HOPS\) stack$' <<<"$swhere")" = 2
check "IPV6_RECVERR (no effect on IPv4) kept in the stack" inst opts 'RECVERR stack'
check "IPV6_RECVPATHMTU on a fresh socket hands it to the kernel" inst opts 'RECVPATHMTU kernel'
check "IPV6_RECVPKTINFO and IP_PKTINFO on a dual-stack socket in the stack (control messages compared above)" \
	inst udp-pktinfo 'server stack'
check "an IPv6 datagram over ::1 with IPv6's control messages (compared above): both sockets in the stack" \
	test "$(grep -c '^udp-pktinfo6 \(server\|client\) stack$' <<<"$swhere")" = 2
check "IPV6_V6ONLY=1 before bind: a stack listener, IPv6 only (answers compared above)" \
	inst v6only 'listener stack'
check "... its accepted socket in the stack, an AF_INET listener on its port too" \
	test "$(grep -c '^v6only \(accepted\|v4 listener\) stack$' <<<"$swhere")" = 2
check "... a socket bound to ::1 in the stack" inst v6only 'bound ::1 stack'
check "SLUICE_INET6=0: AF_INET6 sockets are the kernel's, as before" \
	test "$(grep -c '^off: where tcp-v6any-v4 listener kernel$' <<<"$out")" = 1
check "stack listener on [::]: an AF_INET stack client to 127.0.0.1 in the stack" \
	grep -qx 'srv stack4 ok client stack' <<<"$out"
check "... an AF_INET6 stack client to ::ffff:127.0.0.1 in the stack" \
	grep -qx 'srv stack6 ok client stack' <<<"$out"
check "... a kernel IPv4 client through the twin" grep -qx 'srv kernel4 ok client kernel' <<<"$out"
check "... a kernel IPv6 client on ::1 through the twin (AF_INET6 on [::])" \
	grep -qx 'srv kernel6 ok client kernel' <<<"$out"
check "... an AF_INET6 stack client to ::1 in the stack (IPv6 itself)" \
	grep -qx 'srv stack6native ok client stack' <<<"$out"
check "... accepted: 2 from the kernel, 3 in the stack" \
	grep -qx 'srv served 5 kernel 2 stack 3' <<<"$out"
check "... 3 passive opens in the stack's counters" grep -qx 'srv passive opens 3' <<<"$out"
check "python3 -m http.server --bind :: under sluice run serves curl under sluice run" \
	grep -qx 'http body hello from ::' <<<"$out"
check "... its listener is a stack socket (sluice fds)" grep -q '^http fds [1-9]' <<<"$out"
check "... the connection was the stack's (passive opens)" grep -q '^http passive opens [1-9]' <<<"$out"
check "python3 -m http.server --bind ::1 under sluice run serves curl -6 under sluice run" \
	grep -qx 'http6 body hello from ::' <<<"$out"
check "... its listener is a stack socket (sluice fds)" grep -q '^http6 fds [1-9]' <<<"$out"
check "... the connection was the stack's (passive opens)" grep -q '^http6 passive opens [1-9]' <<<"$out"
check "... sluice fds and sluice dump show its listener as [::1]:7671" \
	eval 'grep -qx "http6 fds v6 1" <<<"$out" && grep -qx "http6 dump v6 1" <<<"$out"'
check "... its log names the client ::1 (getpeername)" grep -qx 'http6 log 1 ::1 ' <<<"$out"
check "bindv6only=1, the kernel: IPV6_V6ONLY 1, IPv4 refused" \
	grep -qx 'bv6 kernel bv6 IPV6_V6ONLY = 1;bv6 v4 connect = Connection refused;' <<<"$out"
check "bindv6only=1, sluice run: the same, a stack socket" \
	grep -qx 'bv6 sluice bv6 IPV6_V6ONLY = 1;where bv6 listener stack;bv6 v4 connect = Connection refused;' <<<"$out"

done_testing
