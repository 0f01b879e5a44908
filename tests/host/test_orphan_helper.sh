#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The stack's helper process (lib/api/helper.c) finishes what a program left
# behind: a Sluice client sends 4 MiB to a kernel server, closes and exits
# at once; the kernel must still receive every byte and the FIN, and the
# helper must then go by itself, leaving the stack without sockets.  A
# second run with SLUICE_NO_HELPER=1 must come up short (so the test can
# fail).
#
#   netns sl-orph-PID
#   +------------------------------------------------------------+
#   |  kernel stack              |  TAP so0  |   Sluice stack     |
#   |  10.205.0.1/24 on so0  <---+-----------+--> 10.205.0.2      |
#   |  python3 receiver :9000-2  | (multi-   |   peer send-exit,  |
#   |  (sleeps, then counts and  |  queue)   |   python3 under    |
#   |   hashes, RST after EOF)   |           |   sluice run; then |
#   |                            |           |   the helper       |
#   +------------------------------------------------------------+
#
# All traffic stays inside the namespace; every wait is bounded.
set -u
. "$(dirname "$0")/lib.sh"
peer=$top/build/tests/interop/peer
sluice=$top/build/tools/sluice
py=/usr/bin/python3
[ -x "$py" ] || py=python3

need_netns "orphan helper"

ns=sl-orph-$$
stack=t-orph-$$
K=10.205.0.1
S=10.205.0.2
N=$((4 << 20))
helpers=()
cleanup() {
	[ -n "${rcv:-}" ] && kill "$rcv" 2>/dev/null
	[ -n "${rcv1:-}" ] && kill "$rcv1" 2>/dev/null
	for p in "${helpers[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "/dev/shm/sluice-$stack" "/dev/shm/sluice-$stack-n" "/dev/shm/sluice-$stack-p" \
		"/dev/shm/sluicefd-$stack-p" "/dev/shm/sluice-$stack-s"
}
trap cleanup EXIT
in_ns() { ip netns exec "$ns" "$@"; }

ip netns add "$ns"
in_ns ip link set lo up
in_ns ip tuntap add dev so0 mode tap multi_queue
in_ns ip addr add "$K/24" dev so0
in_ns ip link set so0 up

# receiver PORT: accept one connection, wait a second, then read slowly
# through a small receive buffer (about 4 MB/s: the window stays small, so
# the client exits with up to its 256 KiB send buffer unsent), to EOF or
# 8 s of silence; print "BYTES HASH-OK EOF", hold 2 s (the helper stays
# visible), reset.
receiver() {
	in_ns timeout 60 "$py" - "$K" "$1" "$N" <<'PY' &
import hashlib, socket, struct, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(1)
l.settimeout(30)
print("listening", flush=True)
c, _ = l.accept()
time.sleep(1)
c.settimeout(8)
n, eof, h = 0, False, hashlib.sha256()
want = hashlib.sha256(bytes(((i * 7 + (i >> 10)) & 0xff) for i in range(int(sys.argv[3]))))
try:
    while True:
        b = c.recv(1 << 14)
        if not b:
            eof = True
            break
        n += len(b)
        h.update(b)
        time.sleep(0.004)
except socket.timeout:
    pass
print(n, int(h.digest() == want.digest()), int(eof), flush=True)
time.sleep(2)
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.close()
PY
	rcv=$!
}

# The helper's pid from the stack's dump, or nothing.
helper_of() {
	"$sluice" dump "$1" 2>/dev/null | sed -n 's/^  helper: process \([0-9]*\) .*/\1/p'
}

out=$(mktemp)
receiver 9000 >"$out"
for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
sent=$(in_ns timeout 60 "$peer" send-exit "$stack" "$S/24" so0 "$K" 9000 "$N" 2>&1)
check "Sluice client sent 4 MiB, closed and exited (got $sent)" [ "$sent" = "sent $N" ]
hp=$(helper_of "$stack")
check "the stack names a live helper process (pid ${hp:-none})" \
	bash -c "[ -n '$hp' ] && kill -0 '$hp'"
[ -n "$hp" ] && helpers+=("$hp")
for _ in $(seq 150); do [ "$(wc -l <"$out")" -ge 2 ] && break; sleep 0.1; done
res=$(sed -n 2p "$out")
check "the kernel received all 4 MiB byte-exact and the FIN (got '$res')" [ "$res" = "$N 1 1" ]
wait "$rcv" 2>/dev/null
rcv=
gone=0
for _ in $(seq 100); do
	if [ -z "$hp" ] || ! kill -0 "$hp" 2>/dev/null; then gone=1; break; fi
	sleep 0.1
done
check "the helper exited by itself once the connection was done" [ $gone = 1 ]
row=$("$sluice" stacks | grep -E "^$stack ")
check "the stack has no sockets and no helper left ($row)" \
	bash -c "grep -qE '^$stack +ready +shm +0/[0-9]+ .* 0 free\$' <<<'$row'"

# The same from an unmodified program under sluice run: the preload
# library's exit path leaves the connection to a helper.
: >"$out"
receiver 9002 >"$out"
for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
sent=$(in_ns timeout 60 "$sluice" run --stack "$stack-p" --tap so0 --addr "$S/24" -- \
	"$py" -c '
import socket, sys
n = int(sys.argv[2])
data = bytes(((i * 7 + (i >> 10)) & 0xff) for i in range(n))
s = socket.create_connection((sys.argv[1], 9002), timeout=30)
s.sendall(data)
s.close()
print("sent", n)' "$K" "$N" 2>&1)
check "python3 under sluice run sent 4 MiB, closed and exited (got $sent)" [ "$sent" = "sent $N" ]
hp=$(helper_of "$stack-p")
check "the stack names a live helper process (pid ${hp:-none})" \
	bash -c "[ -n '$hp' ] && kill -0 '$hp'"
[ -n "$hp" ] && helpers+=("$hp")
for _ in $(seq 150); do [ "$(wc -l <"$out")" -ge 2 ] && break; sleep 0.1; done
res=$(sed -n 2p "$out")
check "sluice run: the kernel received all 4 MiB byte-exact and the FIN (got '$res')" \
	[ "$res" = "$N 1 1" ]
wait "$rcv" 2>/dev/null
rcv=
gone=0
for _ in $(seq 100); do
	if [ -z "$hp" ] || ! kill -0 "$hp" 2>/dev/null; then gone=1; break; fi
	sleep 0.1
done
check "sluice run: the helper exited by itself" [ $gone = 1 ]
row=$("$sluice" stacks | grep -E "^$stack-p ")
check "sluice run: the stack has no sockets and no helper left ($row)" \
	bash -c "grep -qE '^$stack-p +ready +shm +0/[0-9]+ .* 0 free\$' <<<'$row'"

# A helper killed before it is done leaves a stale claim: the next
# process that leaves with orphans takes over, and its helper finishes its
# own connection (and the one the dead helper left, if it can).
out1=$(mktemp)
receiver 9003 >"$out1"
rcv1=$rcv
for _ in $(seq 50); do grep -q listening "$out1" && break; sleep 0.1; done
in_ns timeout 60 "$peer" send-exit "$stack-s" "$S/24" so0 "$K" 9003 "$N" >/dev/null 2>&1
h1=$(helper_of "$stack-s")
[ -n "$h1" ] && kill -9 "$h1" 2>/dev/null
for _ in $(seq 20); do kill -0 "$h1" 2>/dev/null || break; sleep 0.1; done
check "a killed helper ($h1) shows as stale" \
	bash -c "'$sluice' dump '$stack-s' | grep -q 'helper: process $h1 .*(gone: stale)'"
: >"$out"
receiver 9004 >"$out"
for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
sent=$(in_ns timeout 60 "$peer" send-exit "$stack-s" "$S/24" so0 "$K" 9004 "$N" 2>&1)
h2=$(helper_of "$stack-s")
check "the next process to leave started a new helper ($h1 -> ${h2:-none})" \
	bash -c "[ -n '$h2' ] && [ '$h2' != '$h1' ] && kill -0 '$h2'"
[ -n "$h2" ] && helpers+=("$h2")
for _ in $(seq 150); do [ "$(wc -l <"$out")" -ge 2 ] && break; sleep 0.1; done
res=$(sed -n 2p "$out")
check "... which sent all of its 4 MiB and the FIN (got '$res')" [ "$res" = "$N 1 1" ]
wait "$rcv" "$rcv1" 2>/dev/null
rcv=
gone=0
for _ in $(seq 200); do
	if [ -z "$h2" ] || ! kill -0 "$h2" 2>/dev/null; then gone=1; break; fi
	sleep 0.1
done
check "... and went by itself" [ $gone = 1 ]
rm -f "$out1"

# Without the helper, the program's exit strands what it had not sent.
: >"$out"
receiver 9001 >"$out"
for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
sent=$(SLUICE_NO_HELPER=1 in_ns timeout 60 "$peer" send-exit "$stack-n" "$S/24" so0 "$K" 9001 "$N" 2>&1)
check "SLUICE_NO_HELPER=1: the client sent 4 MiB and exited (got $sent)" [ "$sent" = "sent $N" ]
check "SLUICE_NO_HELPER=1: no helper" [ -z "$(helper_of "$stack-n")" ]
for _ in $(seq 200); do [ "$(wc -l <"$out")" -ge 2 ] && break; sleep 0.1; done
res=$(sed -n 2p "$out")
check "SLUICE_NO_HELPER=1: the kernel is left short, no FIN (got '$res')" \
	bash -c "read -r n h e <<<'$res'; [ \"\${n:-$N}\" -lt $N ] && [ \"\${e:-1}\" = 0 ]"
wait "$rcv" 2>/dev/null
rcv=
rm -f "$out"
done_testing
