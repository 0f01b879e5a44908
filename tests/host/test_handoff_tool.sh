#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# `sluice handoff PID FD` and the hand-off at exec where they cannot
# work: on the host path (a stack in /dev/shm, no module), and for
# descriptors, processes and users they must refuse.  The live hand-off
# itself runs in QEMU (tests/vm/handoff.sh); here every refusal must be a
# clear error and leave the connection working.
#
#   +---------- network namespace made here (lo down) ----------+
#   |  sluice run ho.py: a connection on the stack's loopback,   |
#   |  both ends in one process; sluice handoff from outside     |
#   +------------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
tmp=$(mktemp -d)
st=tho-$$
trap 'jobs -p | xargs -r kill 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp" /dev/shm/sluice-$st* /dev/shm/sluicefd-$st*' EXIT

if ! unshare -n true 2>/dev/null; then
	skip "sluice handoff" "no network namespaces here"
	done_testing
	exit
fi

# pair: a connection, "pid P fd F" (the client's end), then waits for
# $tmp/go and moves 1 MiB each way over it, checked.  exec: the same, then
# the process execs python3 without LD_PRELOAD (not under Sluice), which
# says what fd F became.
cat >"$tmp/ho.py" <<'EOS'
import os, socket, sys, time
mode, port, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if mode == "after":
    fd = int(sys.argv[4])
    try:
        s = socket.socket(fileno=fd)
        if s.family == socket.AF_UNIX:
            # The placeholder: a socket of the library's, no TCP socket.
            print("after exec: fd %d is no socket of its (AF_UNIX)" % fd, flush=True)
        else:
            print("after exec: fd %d is a socket" % fd, flush=True)
    except OSError as e:
        print("after exec: fd %d is no socket (%s)" % (fd, e.strerror), flush=True)
    sys.exit(0)
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port))
l.listen(1)
c = socket.create_connection(("127.0.0.1", port))
a, _ = l.accept()
print("pid %d fd %d" % (os.getpid(), c.fileno()), flush=True)
if mode == "exec":
    os.set_inheritable(c.fileno(), True)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    os.execve(sys.executable, [sys.executable, sys.argv[0], "after", "0", go,
                               str(c.fileno())], env)
for _ in range(1500):
    if os.path.exists(go):
        break
    time.sleep(0.02)
c.setblocking(True)
ok = True
for k in range(16):
    data = bytes((i * 7 + k) & 255 for i in range(65536))
    c.sendall(data)
    got = bytearray()
    while len(got) < len(data):
        got += a.recv(65536)
    a.sendall(bytes(got))
    back = bytearray()
    while len(back) < len(data):
        back += c.recv(65536)
    ok = ok and bytes(back) == data
print("still works" if ok else "corrupt", flush=True)
EOS

cat >"$tmp/run.sh" <<'EOS'
set -u
sluice=$1 py=$2 st=$3 tmp=$4
. "$5"
waitfor() { for _ in $(seq 500); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.02; done; return 1; }
SLUICE_NO_HELPER=1 "$sluice" run --stack "$st" -- "$py" "$tmp/ho.py" pair 7201 "$tmp/go" >"$tmp/out" 2>&1 &
prog=$!
waitfor '^pid ' "$tmp/out"
P=$(sed -n 's/^pid \([0-9]*\) fd [0-9]*$/\1/p' "$tmp/out")
F=$(sed -n 's/^pid [0-9]* fd \([0-9]*\)$/\1/p' "$tmp/out")
ho() { "$sluice" handoff "$@" >"$tmp/ho" 2>&1; rc=$?; sed 's/^/#   /' "$tmp/ho"; }
has() { test "$rc" = "$1" && grep -q "$2" "$tmp/ho"; }

ho "$P" "$F"
check "host path: refused, saying a stack without the module cannot hand off (rc $rc)" \
	has 1 'stack without the module'
ho "$P" 0
check "an fd that is not a socket: refused, 'not a Sluice socket' (rc $rc)" has 1 'not a Sluice socket'
ho "$P" 4095
check "an fd the process does not have: refused (rc $rc)" has 1 'has no fd 4095'
ho 999999999 3
check "a process id that is none: refused (rc $rc)" has 1 'no process id\|no process'
ho "$P" x
check "a bad fd number: refused (rc $rc)" has 1 'no fd number'
"$py" -c 'import socket,time; s=socket.socket(); print(s.fileno(), flush=True); time.sleep(30)' >"$tmp/k" &
kp=$!
waitfor '^[0-9]' "$tmp/k"
ho "$kp" "$(cat "$tmp/k")"
check "a kernel socket: refused, 'a kernel socket already' (rc $rc)" has 1 'kernel socket already'
kill $kp 2>/dev/null
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$sluice" handoff "$P" "$F" >"$tmp/ho" 2>&1
	rc=$?
	sed 's/^/#   /' "$tmp/ho"
	check "another user's process: refused, 'another user's' (rc $rc)" has 1 "another user's"
else
	skip "another user's process" "no setpriv"
fi
touch "$tmp/go"
wait $prog
check "after every refusal the connection still works in the stack (1 MiB each way in 64 KiB rounds, checked)" \
	grep -q '^still works$' "$tmp/out"

# exec of a program that will not run under Sluice, on the host path: the
# connection cannot go to the kernel, and the library says so.
SLUICE_NO_HELPER=1 timeout 60 "$sluice" run --stack "$st" -- "$py" "$tmp/ho.py" exec 7202 "$tmp/go" >"$tmp/ex" 2>&1
sed 's/^/#   /' "$tmp/ex"
check "exec not under Sluice, host path: not silently ignored (a warning names the fd and why)" \
	grep -q "stays the stack's connection across the exec.*a stack without the module cannot hand off" "$tmp/ex"
check "... and the new program finds no socket of its there, as before" grep -q '^after exec: fd [0-9]* is no socket' "$tmp/ex"
done_testing
EOS
unshare -n bash "$tmp/run.sh" "$sluice" "$py" "$st" "$tmp" "$top/tests/host/lib.sh"
