#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Kernel peers (issue 15; lib/preload/README.md, "Kernel peers"): a stack
# client that connect()s to this host where the stack has no listener
# becomes a kernel socket before its SYN, and the kernel connects it, as
# Linux would; a stack listener still gets its stack clients in the stack.
#
#   +-------------- network namespace made here (lo up) ---------------+
#   |  kconnect serve 4 127.0.0.1   (kernel listener, not under Sluice) |
#   |  kconnect serve 6 ::          (kernel AF_INET6, dual stack)       |
#   |  sluice run kconnect serve 4  (stack listener)                    |
#   |     ^ kconnect client CASE 127.0.0.1, on the kernel and under     |
#   |       sluice run, the same expectations                           |
#   +------------------------------------------------------------------+
#
# 1. The kernel's own client against a kernel listener: the reference.
# 2. Stack clients (blocking, non-blocking, in an epoll set before
#    connect(), options and bind(port 0) before connect()) against the
#    kernel listener and a dual-stack AF_INET6 one on ::: every case as
#    the kernel's, the fd a kernel socket afterwards, data both ways; the
#    stack sent no SYN for them (tcp_active_open in `sluice dump`).
# 3. A port nobody listens on: ECONNREFUSED, blocking and non-blocking.
# 4. A stack listener: stack clients stay in the stack (both ends Sluice
#    fds, 4 SYNs more in the stack's counters); one that starts listening
#    after a refused connect gets the next client in the stack.
# 5. A client bound to INADDR_ANY:0 connecting to an address of the
#    host's the stack does not reach: handed over bound as it was.
# 6. UDP: a fresh stack socket sending (sendto, or connect and send) to a
#    port of this host where only a kernel socket is bound becomes a
#    kernel socket and gets the answers; a stack UDP socket keeps its
#    stack clients; a kernel client reaches a stack socket bound on
#    127.0.0.1 (its datagram twin) and gets the answers (the server
#    waits for the first in epoll_wait(), the second in poll()); a UDP bind beside
#    a socket bound on the same port gets EADDRINUSE, whichever side
#    each is on, and so does a kernel bind to the port a stack socket's
#    first sendto() picked.
# 7. SLUICE_KERNEL_LISTEN=0: refused, as before.
# 8. Hand-overs the program does not see (tests/preload/handover): epoll
#    sets that held the socket keep their items (a fired EPOLLONESHOT
#    stays disarmed), and a socket with a dup() moves whole (connect()
#    to a kernel listener, an option the stack lacks, a datagram to a
#    kernel socket), and so does it in another process that holds it (a
#    fork's child, one given it by SCM_RIGHTS: lib/preload/README.md,
#    "Other processes"), also when the process that handed it over
#    _exit()s or is SIGKILLed before the other's first call ("The
#    carrier"): the kernel's lines.
set -u
. "$(dirname "$0")/lib.sh"
unshare_test "kernel peers" kconnect tkp-$$

cat >"$tmp/run.sh" <<'EOS'
set -u
ip link set lo up
sluice=$1 prog=$2 st=$3 tmp=$4
R=(env SLUICE_NO_HELPER=1 "$sluice" run --stack "$st" --)
waitfor() { for _ in $(seq 200); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.02; done; return 1; }
opens() { "$sluice" dump "$st" 2>/dev/null | awk '$1 == "tcp_active_open" { print $2; f = 1 } END { if (!f) print 0 }'; }
cases="block nonblock epoll opts"

# One kernel or stack server for the four cases; clients on the kernel
# or under sluice run.  Prints "TAG CASE RESULT" and "TAG served ...".
round() {
	local tag=$1 family=$2 addr=$3 port=$4 srv=() cli=()
	[ "$5" = stack ] && srv=("${R[@]}")
	[ "$6" = stack ] && cli=("${R[@]}")
	timeout 30 "${srv[@]}" "$prog" serve "$family" "$addr" "$port" 4 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "$tag: no ready"
	for c in $cases; do
		echo "$tag $c $(timeout 20 "${cli[@]}" "$prog" client "$c" 127.0.0.1 "$port" 2>&1)"
	done
	wait
	echo "$tag $(grep served "$tmp/srv")"
}

"${R[@]}" python3 -c 'import socket; socket.socket()'
round ref 4 127.0.0.1 7401 kernel kernel
o0=$(opens)
round k4 4 127.0.0.1 7402 kernel stack
round k6 6 :: 7403 kernel stack
echo "refused kernel $("$prog" client refused 127.0.0.1 7499 2>&1)"
echo "refused stack $(timeout 20 "${R[@]}" "$prog" client refused 127.0.0.1 7499 2>&1)"
o1=$(opens)
echo "syns for kernel peers $((o1 - o0))"
round s4 4 127.0.0.1 7404 stack stack
o2=$(opens)
echo "syns for stack peers $((o2 - o1))"

# A stack listener that comes after a refused connect.
echo "later before $(timeout 20 "${R[@]}" "$prog" client refused 127.0.0.2 7405 2>&1)"
timeout 30 "${R[@]}" "$prog" serve 4 127.0.0.2 7405 1 >"$tmp/srv" 2>&1 &
waitfor ready "$tmp/srv"
echo "later $(timeout 20 "${R[@]}" "$prog" client block 127.0.0.2 7405 2>&1)"
wait
echo "later $(grep served "$tmp/srv")"

# A bound client to an address of the host's that the stack does not
# reach (a loopback-only stack; the kernel has 10.77.0.1 on lo).
ip addr add 10.77.0.1/32 dev lo
for who in kernel stack; do
	cli=()
	[ "$who" = stack ] && cli=("${R[@]}")
	timeout 30 "$prog" serve 4 10.77.0.1 7420 1 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "far: no ready"
	echo "far $who $(timeout 20 "${cli[@]}" "$prog" client bindany 10.77.0.1 7420 2>&1)"
	wait
done

# UDP: a kernel socket bound on this host, a stack one; two datagrams a client.
for pair in "kernel kernel 7410" "kernel stack 7411" "stack stack 7412" "stack kernel 7413"; do
	set -- $pair
	srv=() cli=()
	[ "$1" = stack ] && srv=("${R[@]}")
	[ "$2" = stack ] && cli=("${R[@]}")
	timeout 30 "${srv[@]}" "$prog" userve 127.0.0.1 "$3" 2 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "udp $1: no ready"
	echo "udp $1 $2 $(timeout 20 "${cli[@]}" "$prog" client udp 127.0.0.1 "$3" 2>&1)"
	wait
done

# UDP ports held both ways: a bind beside a bound socket, each side.
for pair in "kernel kernel 7415" "stack kernel 7416" "kernel stack 7417" "stack stack 7418"; do
	set -- $pair
	srv=() cli=()
	[ "$1" = stack ] && srv=("${R[@]}")
	[ "$2" = stack ] && cli=("${R[@]}")
	timeout 30 "${srv[@]}" "$prog" userve 127.0.0.1 "$3" 1 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "ubind $1: no ready"
	echo "ubind $1 $2 $(timeout 20 "${cli[@]}" "$prog" ubind 127.0.0.1 "$3" 2>&1)"
	echo "ubind $1 $2 any $(timeout 20 "${cli[@]}" "$prog" ubind 0.0.0.0 "$3" 2>&1)"
	timeout 20 "$prog" client udp 127.0.0.1 "$3" >/dev/null 2>&1
	wait
done

# The port a UDP socket's first sendto() picks, held both sides too: a
# sender (kernel, or stack to a stack socket) holds it while kernel binds
# try it.
for who in kernel stack; do
	srv=()
	[ "$who" = stack ] && srv=("${R[@]}")
	timeout 30 "${srv[@]}" "$prog" userve 127.0.0.1 7419 1 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "uhold $who: no ready"
	rm -f "$tmp/ff"
	mkfifo "$tmp/ff"
	timeout 30 "${srv[@]}" "$prog" uhold 127.0.0.1 7419 <"$tmp/ff" >"$tmp/hold" 2>&1 &
	exec 9>"$tmp/ff"
	waitfor port "$tmp/hold" || echo "uhold $who: no port"
	p=$(awk '$1 == "port" { print $2 }' "$tmp/hold")
	echo "uhold $who $("$prog" ubind 127.0.0.1 "$p") any $("$prog" ubind 0.0.0.0 "$p")"
	exec 9>&-
	wait
done

# Three datagrams from a kernel sender queued before a stack socket reads:
# poll() says POLLIN exactly while one waits.
for who in kernel stack; do
	srv=()
	[ "$who" = stack ] && srv=("${R[@]}")
	timeout 30 "${srv[@]}" "$prog" udrain 127.0.0.1 7421 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "udrain $who: no ready"
	"$prog" usend 127.0.0.1 7421 3
	wait
	echo "udrain $who $(grep reads "$tmp/srv")"
done

# SLUICE_KERNEL_LISTEN=0: the stack alone, as before.
timeout 30 "$prog" serve 4 127.0.0.1 7407 1 >"$tmp/srv" 2>&1 &
waitfor ready "$tmp/srv"
echo "off $(SLUICE_KERNEL_LISTEN=0 timeout 20 "${R[@]}" "$prog" client block 127.0.0.1 7407 2>&1 | head -1)"
"$prog" client block 127.0.0.1 7407 >/dev/null 2>&1
wait

# Hand-overs the program must not see (tests/preload/handover.c): epoll
# items kept (level, edge, a fired one-shot), every dup() of the socket
# moved with it, and another process that holds it (fork, SCM_RIGHTS)
# switching to it; on the kernel, then under sluice run.
ho=$(dirname "$prog")/handover
timeout 30 "$ho" 2>&1 | sed 's/^/ho kernel /'
timeout 30 "${R[@]}" "$ho" 2>&1 | sed 's/^/ho sluice /'
EOS
out=$(timeout 300 unshare -n bash "$tmp/run.sh" "$sluice" "$prog" "$st" "$tmp" 2>&1)
echo "$out" | sed 's/^/# /'

for c in block nonblock epoll opts; do
	check "reference: kernel client to a kernel listener, $c" grep -qx "ref $c ok $c kernel" <<<"$out"
	check "stack client to a kernel listener, $c: as the kernel's, a kernel fd after connect()" \
		grep -qx "k4 $c ok $c kernel" <<<"$out"
	check "stack client to a kernel AF_INET6 listener on :: via 127.0.0.1, $c" \
		grep -qx "k6 $c ok $c kernel" <<<"$out"
	check "stack client to a stack listener, $c: stays in the stack" \
		grep -qx "s4 $c ok $c stack" <<<"$out"
done
check "the kernel listeners served the stack's clients" \
	[ "$(grep -cx 'k[46] served 4 kernel 4 stack 0' <<<"$out")" = 2 ]
check "the stack sent no SYN for them (handed over before it)" \
	grep -qx 'syns for kernel peers 0' <<<"$out"
check "refused port, on the kernel: ECONNREFUSED blocking and non-blocking" \
	grep -qx 'refused kernel ok refused kernel' <<<"$out"
check "refused port, from the stack: the same answers" \
	grep -qx 'refused stack ok refused kernel' <<<"$out"
check "a stack listener accepts its stack clients as Sluice fds" \
	grep -qx 's4 served 4 kernel 0 stack 4' <<<"$out"
check "... through the stack (4 SYNs in its counters)" \
	grep -qx 'syns for stack peers 4' <<<"$out"
check "refused before a stack listener exists" \
	grep -qx 'later before ok refused kernel' <<<"$out"
check "a stack listener that came later gets the next stack client in the stack" \
	grep -qx 'later ok block stack' <<<"$out"
check "... and accepts it as a Sluice fd" grep -qx 'later served 1 kernel 0 stack 1' <<<"$out"
check "reference: a kernel client bound to INADDR_ANY:0 reaches a host address" \
	grep -qx 'far kernel ok bindany kernel' <<<"$out"
check "a stack client bound to INADDR_ANY:0 reaches a host address the stack does not (was ENETUNREACH)" \
	grep -qx 'far stack ok bindany kernel' <<<"$out"
check "UDP reference: a kernel client and a kernel socket" grep -qx 'udp kernel kernel ok udp kernel' <<<"$out"
check "UDP: a fresh stack socket's datagrams reach a kernel socket of this host, answers back" \
	grep -qx 'udp kernel stack ok udp kernel' <<<"$out"
check "UDP: a stack socket bound there keeps its stack clients" \
	grep -qx 'udp stack stack ok udp stack' <<<"$out"
check "UDP: a kernel client reaches a stack socket bound on 127.0.0.1 (its twin), answers back from it" \
	grep -qx 'udp stack kernel ok udp kernel' <<<"$out"
for pair in "kernel kernel" "stack kernel" "kernel stack" "stack stack"; do
	set -- $pair
	check "UDP port held: a $2 bind to 127.0.0.1:PORT beside a $1 socket there gets EADDRINUSE" \
		grep -qx "ubind $1 $2 EADDRINUSE" <<<"$out"
	check "UDP port held: a $2 bind to 0.0.0.0:PORT beside a $1 socket on 127.0.0.1 gets EADDRINUSE" \
		grep -qx "ubind $1 $2 any EADDRINUSE" <<<"$out"
done
check "UDP: a kernel bind to the port a kernel socket's first sendto() picked: EADDRINUSE (reference)" \
	grep -qx 'uhold kernel EADDRINUSE any EADDRINUSE' <<<"$out"
check "UDP: a kernel bind to the port a stack socket's first sendto() picked: EADDRINUSE (its twin)" \
	grep -qx 'uhold stack EADDRINUSE any EADDRINUSE' <<<"$out"
check "UDP: a kernel socket reads 3 queued datagrams while poll says POLLIN (reference)" \
	grep -qx 'udrain kernel reads 3 spurious 0' <<<"$out"
check "UDP: a stack socket reads a kernel sender's 3 queued datagrams, and POLLIN ends with them" \
	grep -qx 'udrain stack reads 3 spurious 0' <<<"$out"
check "SLUICE_KERNEL_LISTEN=0: refused, as before" \
	grep -q '^off FAIL block: connect (errno Connection refused)' <<<"$out"
ho_k=$(sed -n 's/^ho kernel //p' <<<"$out" | grep -v '^#')
ho_s=$(sed -n 's/^ho sluice //p' <<<"$out" | grep -v '^#')
check "hand-overs: on the kernel, 70 lines" [ "$(grep -c . <<<"$ho_k")" = 70 ]
check "hand-overs: with Sluice, the kernel's lines (epoll items kept, every dup moved)" \
	[ "$ho_k" = "$ho_s" ]
check "hand-overs: ... from stack sockets (9 of 9)" \
	[ "$(grep -c '^ho sluice # [a-z]* before fd stack' <<<"$out")" = 9 ]
check "hand-overs: ... each fd a kernel socket after (17 of 17)" \
	[ "$(grep -c '^ho sluice # .* after.* fd kernel' <<<"$out")" = 17 ]
# Another process that holds the socket (fork, SCM_RIGHTS) switches to the
# kernel socket at its next call: connected, the peer's data, its own.
for c in fork scm; do
	check "hand-over in another process ($c): the other holder finds it connected, as on the kernel" \
		grep -qx "ho sluice $c other: peer ok 1" <<<"$out"
	check "... reads what the peer sent (poll, epoll, recv)" \
		grep -qx "ho sluice $c other: recv 2 k1" <<<"$out"
	check "... and the peer gets both holders' bytes, in order" \
		grep -qx "ho sluice $c peer got c1p1" <<<"$out"
	check "... and the end at once when both have closed (no copy of the kernel socket left open)" \
		grep -qx "ho sluice $c peer's end 0" <<<"$out"
done
# The process that handed it over is gone before the other's first call:
# the kernel socket outlives it, carried by the placeholder (main's
# library: ENOTCONN, EPIPE, the peer's end at the caller's exit).
for c in exit kill; do
	check "hand-over, then the caller's end ($c): the other holder finds it connected" \
		grep -qx "ho sluice $c other: peer ok 1" <<<"$out"
	check "... reads what the peer sent and sends" \
		grep -qx "ho sluice $c other: recv 2 k1" <<<"$out"
	check "... the peer gets it, and the end at the other's close" \
		[ "$(grep -c "^ho sluice $c peer\( got 2 c1\|'s end 0\)$" <<<"$out")" = 2 ]
done
check "hand-over before use in another process (forkopt): the child reads the option back" \
	grep -qx "ho sluice forkopt other: option 0 ok 1" <<<"$out"
check "... connects, and the parent finds its socket connected" \
	grep -qx "ho sluice forkopt peer ok 1" <<<"$out"

done_testing
