#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# OS-backed listeners (issue 15, item 1; lib/preload/twin.c): a server
# listening in a stack is reached by clients whose sockets are the kernel's,
# and a stack socket's port is held in the kernel as a kernel socket's is.
#
#   +------------- network namespace made here (lo up) -------------+
#   |  sluice run oslisten server MODE   (stack listener + its twin)  |
#   |     ^ stack: sluice run oslisten client 4 127.0.0.1            |
#   |     ^ kernel lo: oslisten client 4 127.0.0.1 (not under Sluice) |
#   |     ^ kernel lo: oslisten client 6 ::ffff:127.0.0.1            |
#   |     ^ stack: sluice run oslisten client 6 ::ffff:127.0.0.1     |
#   |              (AF_INET6 talking IPv4 is the stack's, issue 20)  |
#   +---------------------------------------------------------------+
#
# 1. Every server mode (blocking accept, with SO_RCVTIMEO, poll, select,
#    epoll level, edge-triggered and one-shot) serves six clients of the
#    three kinds, the data checked byte for byte both ways; kernel clients
#    come out of accept() as kernel sockets, stack ones as Sluice sockets.
# 2. Ports, one row each: a stack socket holds a port and a program not
#    under Sluice binds (and listens on) it, and the other way round, with
#    no option, SO_REUSEADDR and SO_REUSEPORT, the first listening or not;
#    the second's answers must be what they are between two kernel
#    sockets.  A bind() to port 0 takes a port the kernel also holds.
# 3. The twin is the library's (close EBADF, dup2 onto it), shutdown and
#    close stop it; a daemonising server (the parent that listened
#    exits) and a pre-forking one serve kernel clients.
# 4. SLUICE_KERNEL_LISTEN=0 keeps the old behaviour: refused.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/oslisten
tp=$top/tests/preload
tmp=$(mktemp -d)
st=tol-$$
trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" /dev/shm/sluice-$st* /dev/shm/sluicefd-$st*' EXIT

if ! unshare -n true 2>/dev/null; then
	skip "OS-backed listeners" "no network namespaces here"
	done_testing
	exit
fi

# Everything below runs in one namespace of its own (its ports are ours).
cat >"$tmp/run.sh" <<'EOS'
set -u
ip link set lo up
sluice=$1 prog=$2 st=$3 tmp=$4 tp=$5
run() { SLUICE_NO_HELPER=1 "$sluice" run --stack "$st" -- "$@"; }
# The same for timeout(1), which runs programs, not functions.
R=(env SLUICE_NO_HELPER=1 "$sluice" run --stack "$st" --)
waitfor() { for _ in $(seq 200); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.02; done; return 1; }

# 1. servers and clients
port=7100
for mode in block timeo poll select epoll epollet oneshot; do
	port=$((port + 1))
	run "$prog" server "$mode" 127.0.0.1 $port 6 >"$tmp/srv" 2>&1 &
	waitfor ready "$tmp/srv" || echo "server $mode: no ready"
	r=$(timeout 20 "$prog" client 4 127.0.0.1 $port 1 200000)
	r+=,$(timeout 20 "${R[@]}" "$prog" client 6 ::ffff:127.0.0.1 $port 2 100000)
	r+=,$(timeout 20 "${R[@]}" "$prog" client 4 127.0.0.1 $port 3 100000)
	r+=,$(timeout 20 "$prog" client 6 ::ffff:127.0.0.1 $port 4 1)
	# A kernel and a stack client at once.
	timeout 20 "$prog" client 4 127.0.0.1 $port 5 500000 >"$tmp/c5" &
	r+=,$(timeout 20 "${R[@]}" "$prog" client 4 127.0.0.1 $port 6 3000)
	wait %2 2>/dev/null
	r+=,$(cat "$tmp/c5")
	wait %1
	echo "mode $mode clients $r server $(grep served "$tmp/srv")"
done

# 2. ports: row FIRST SECOND OPT LISTEN1 (FIRST, SECOND: kernel or sluice);
# prints what the second got: "bind X listen Y".
port=7300
row() {
	local first=() second=()
	port=$((port + 1))
	[ "$1" = sluice ] && first=(run)
	[ "$2" = sluice ] && second=(run)
	rm -f "$tmp/hold"
	mkfifo "$tmp/hold"
	"${first[@]}" "$prog" hold 4 127.0.0.1 $port "$3" "$4" <"$tmp/hold" >"$tmp/first" &
	exec 9>"$tmp/hold"
	waitfor bind "$tmp/first"
	[ "$4" = 1 ] && waitfor listen "$tmp/first"
	out=$("${second[@]}" "$prog" hold 4 127.0.0.1 $port "$3" 1 </dev/null | tr '\n' ' ')
	exec 9>&-
	wait
	echo "row $1 $2 $3 $4: first $(tr '\n' ' ' <"$tmp/first")second $out"
}
for opt in none reuseaddr reuseport; do
	for l in 0 1; do
		row kernel kernel $opt $l
		row sluice kernel $opt $l
		row kernel sluice $opt $l
	done
done
# bind() to port 0: the kernel's choice, held in the kernel.
run python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
k = socket.socket(socket.AF_INET6)
try:
    k.bind(("::ffff:127.0.0.1", p)); print("port0 kernel bind 0")
except OSError as e:
    print("port0 kernel bind", e.errno)
'

# 3. the twin and forked servers
timeout 30 "${R[@]}" python3 "$tp/os_listen.py" fds | sed 's/^/fds /'
timeout 30 "${R[@]}" python3 "$tp/os_listen.py" daemon >"$tmp/dport"
dport=$(head -1 "$tmp/dport")
for i in 1 2 3; do
	echo "daemon $(timeout 10 python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(b"abc%s" % sys.argv[2].encode())
print("ok" if c.recv(10) == b"ABC%s" % sys.argv[2].encode() else "bad")' "$dport" $i)"
done
timeout 60 "${R[@]}" python3 "$tp/os_listen.py" prefork | sed 's/^/prefork /'

# 4. switched off
port=$((port + 1))
SLUICE_KERNEL_LISTEN=0 run "$prog" server block 127.0.0.1 $port 1 >"$tmp/srv" 2>&1 &
waitfor ready "$tmp/srv"
echo "off kernel client: $(timeout 10 "$prog" client 4 127.0.0.1 $port 9 10 2>&1 | grep -o 'Connection refused')"
echo "off stack client: $(timeout 10 "${R[@]}" "$prog" client 4 127.0.0.1 $port 9 10)"
wait
EOS
out=$(timeout 300 unshare -n bash "$tmp/run.sh" "$sluice" "$prog" "$st" "$tmp" "$tp" 2>&1)
echo "$out" | sed 's/^/# /'
line() { grep -m1 "^$1" <<<"$out"; }

# 1.
for mode in block timeo poll select epoll epollet oneshot; do
	check "server $mode: kernel, AF_INET6 and stack clients all answered byte for byte" \
		grep -q "^mode $mode clients ok,ok,ok,ok,ok,ok server" <<<"$out"
	check "server $mode: 3 kernel connections as kernel fds, 3 stack ones (one AF_INET6) as Sluice fds" \
		grep -q "^mode $mode .* served 6 kernel 3 stack 3$" <<<"$out"
done

# 2. Each row beside the same row between two kernel sockets.
for opt in none reuseaddr reuseport; do
	for l in 0 1; do
		k=$(line "row kernel kernel $opt $l:" | sed 's/.*second //')
		for pair in "sluice kernel" "kernel sluice"; do
			s=$(line "row $pair $opt $l:" | sed 's/.*second //')
			what="stack socket first, then a kernel one"
			[ "$pair" = "kernel sluice" ] && what="kernel socket first, then a stack one"
			check "ports, $what, $opt, first listening $l: '$s' as two kernel sockets ('$k')" \
				[ -n "$k" ] && [ "$s" = "$k" ]
		done
	done
done
check "rows where the kernel refuses are among them (EADDRINUSE)" \
	grep -q '^row kernel kernel none 1:.*second bind EADDRINUSE' <<<"$out"
check "bind() to port 0 in the stack holds that port in the kernel" \
	grep -qx 'port0 kernel bind 98' <<<"$out"

# 3.
check "the twin is there, not the program's fd" grep -qx 'fds twin found True' <<<"$out"
check "close() of the twin says EBADF" grep -qx 'fds close twin EBADF' <<<"$out"
check "a dup2() onto the twin's number gets that number" \
	grep -qx 'fds dup2 onto twin: number now the pipe True' <<<"$out"
check "... and the twin goes on under another" grep -qx 'fds twin moved True' <<<"$out"
check "... still listening: a kernel client accepted" \
	grep -qx 'fds kernel client accepted after dup2 True 127.0.0.1' <<<"$out"
check "getsockname() is the stack's, unchanged" grep -qx 'fds getsockname True' <<<"$out"
check "an option set on the listener after listen() is inherited by a kernel connection" \
	grep -qx 'fds kernel connection inherits TCP_USER_TIMEOUT 4321' <<<"$out"
check "shutdown(SHUT_RD) of the listener stops the twin: refused" \
	grep -qx 'fds after shutdown(SHUT_RD): kernel client ECONNREFUSED' <<<"$out"
check "listen() again after shutdown(SHUT_RD): a kernel client accepted, the same port" \
	grep -qx 'fds listening again: kernel client accepted True True' <<<"$out"
check "close() of the listener: refused, no kernel listener left" \
	grep -qx 'fds after close: twin left None' <<<"$out"
check "after close, a kernel bind with SO_REUSEADDR beside the TIME-WAIT left (as on Linux)" \
	grep -qx 'fds after close: kernel bind with SO_REUSEADDR 0' <<<"$out"
check "a stack listener holds its port from a kernel bind" \
	grep -qx 'fds listening: kernel bind EADDRINUSE' <<<"$out"
check "its close frees the port" grep -qx 'fds closed: kernel bind 0' <<<"$out"
check "a daemonised server (its parent gone) serves kernel clients" \
	[ "$(grep -c '^daemon ok$' <<<"$out")" = 3 ]
check "a pre-forking server: 20 kernel and 20 stack clients answered by its 4 children" \
	grep -qx 'prefork answers kernel 20 stack 20 children [2-4]' <<<"$out"

# 4.
check "SLUICE_KERNEL_LISTEN=0: a kernel client is refused, as before" \
	grep -qx 'off kernel client: Connection refused' <<<"$out"
check "SLUICE_KERNEL_LISTEN=0: a stack client is served" grep -qx 'off stack client: ok' <<<"$out"

done_testing
