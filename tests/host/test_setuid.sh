#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A server started as root whose workers drop to another user (as nginx's
# become nobody) goes on using the stack: under `sluice run`, a python
# master listens as root and forks a worker that calls setgid/setuid(65534)
# and then accepts, reads and answers on the stack.  Before, every accept of
# such a worker failed with EACCES (the /dev/shm files were root's, 0600).
#
#   +------- network namespace made here (lo DOWN) -------+
#   | sluice run python3: master (root), worker (nobody)   |
#   +------------------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
tmp=$(mktemp -d)
st=ts-uid-$$
trap 'rm -rf "$tmp"; rm -rf /dev/shm/sluice-$st /dev/shm/sluicefd-$st' EXIT

if [ "$(id -u)" != 0 ]; then
	skip "setuid workers" "not root"
	done_testing
	exit
fi
cat >"$tmp/srv.py" <<'EOS'
import os, socket, sys
l = socket.socket()
l.bind(("127.0.0.1", 18120))
l.listen(4)
pid = os.fork()
if pid == 0:
    os.setgid(65534)
    os.setuid(65534)
    try:
        c, _ = l.accept()
        c.sendall(b"uid %d: " % os.geteuid() + c.recv(16))
        c.close()
        os._exit(0)
    except OSError as e:
        print("worker", e, flush=True)
        os._exit(1)
c = socket.socket()
c.settimeout(5)
c.connect(("127.0.0.1", 18120))
c.sendall(b"hello")
print("reply", c.recv(64).decode(), flush=True)
_, status = os.waitpid(pid, 0)
print("worker exit", os.waitstatus_to_exitcode(status), flush=True)
EOS
out=$(timeout 30 unshare -n "$sluice" run --stack "$st" -- python3 "$tmp/srv.py" 2>&1)
echo "$out" | sed 's/^/# /'
check "the worker, now uid 65534, accepted and answered on the stack" \
	grep -qx "reply uid 65534: hello" <<<"$out"
check "the worker exited cleanly" grep -qx "worker exit 0" <<<"$out"
n=$("$sluice" dump "$st" 2>/dev/null | awk '$1 == "tcp_passive_open" { print $2 }')
check "the connection was the stack's (tcp_passive_open ${n:-0})" test "${n:-0}" -ge 1
done_testing
