#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A process in a seccomp sandbox is never killed for a call the library
# makes (issue 18).
#
#   1. tests/preload/sandboxed: a child locked in a filter written from
#      OpenSSH's pre-authentication sandbox (kill on anything else) serves
#      a connection with poll, select, read, write, shutdown and close,
#      on the kernel and under `sluice run`.
#   2. Debian's sshd (privilege separation, its seccomp sandbox, its
#      default settings but for its own keys, port and files) under
#      `sluice run` accepts a key login from ssh under `sluice run` on
#      the same stack and runs a command, as it does on the kernel.
#
#   +----------- network namespace made here (lo up) -----------+
#   | sluice run sshd -D        sluice run ssh root@127.0.0.1    |
#   +------------------------------------------------------------+
# Every step is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/sandboxed
tmp=$(mktemp -d)
st=ts-sbx-$$

cleanup() {
	[ -s "$tmp/sshd.pid" ] && kill "$(cat "$tmp/sshd.pid")" 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st" "/dev/shm/sluice-$st-ssh" \
		"/dev/shm/sluicefd-$st-ssh" "$tmp"
}
trap cleanup EXIT

out=$(timeout 60 unshare -n bash -c "ip link set lo up; '$prog' 7300 300" 2>&1)
check "kernel: the sandboxed child served the connection ($(echo $out))" \
	grep -qx "child exit 0" <<<"$out"
out=$(timeout 60 unshare -n bash -c "ip link set lo up; '$sluice' run --stack $st -- '$prog' 7300 300" 2>&1)
check "sluice run: the sandboxed child was not killed and served the connection ($(echo $out))" \
	grep -qx "child exit 0" <<<"$out"
check "sluice run: every exchange came back right" grep -qx "client 300 ok" <<<"$out"

sshd=/usr/sbin/sshd
if [ ! -x "$sshd" ] || ! getent passwd sshd >/dev/null; then
	skip "sshd under sluice run" "no sshd (Debian's openssh-server)"
	done_testing
	exit
fi
py=/usr/bin/python3
head -c 2000000 /dev/urandom >"$tmp/big"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key"
cp "$tmp/user_key.pub" "$tmp/authorized_keys"
cat >"$tmp/sshd_config" <<EOC
Port 2322
ListenAddress 127.0.0.1
HostKey $tmp/host_key
AuthorizedKeysFile $tmp/authorized_keys
PidFile $tmp/sshd.pid
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
LogLevel VERBOSE
EOC
# sshd's privilege-separation directory (Debian's service makes it).
mkdir -p /run/sshd
chmod 755 /run/sshd
cat >"$tmp/run.sh" <<EOS
ip link set lo up
ssh_cmd() {
	timeout 30 \$1 ssh -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o BatchMode=yes -o ConnectTimeout=10 -i "$tmp/user_key" -p 2322 root@127.0.0.1 \
		'echo login-ok; echo \$((6 * 7))'
}
if [ "\$1" = kernel ]; then
	"$sshd" -D -e -f "$tmp/sshd_config" 2>"$tmp/sshd-\$1.log" &
	pre=
else
	"$sluice" run --stack $st-ssh -- "$sshd" -D -e -f "$tmp/sshd_config" 2>"$tmp/sshd-\$1.log" &
	pre="$sluice run --stack $st-ssh --"
fi
s=\$!
for i in \$(seq 100); do grep -q "Server listening" "$tmp/sshd-\$1.log" && break; sleep 0.05; done
# More processes than the stack has counter blocks (16) used it first: a
# sandboxed child must not look for a dead one's block (kill(2) is not
# in its filter).
for i in \$(seq 17); do \$pre "$py" -c 'import socket; socket.socket().bind(("127.0.0.1", 0))'; done
ssh_cmd "\$pre"
echo "ssh exit \$?"
# An upload (scp speaks SFTP to sshd's internal-sftp; ssh sets IP_TOS, and
# its bulk data inside the stack went out as a chained segment the TOS
# was written into: the stack was found corrupt).
timeout 30 \$pre scp -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
	-o BatchMode=yes -i "$tmp/user_key" -P 2322 "$tmp/big" root@127.0.0.1:"$tmp/up-\$1"
echo "scp exit \$?"
cmp -s "$tmp/big" "$tmp/up-\$1" && echo "upload same"
[ "\$1" = sluice ] && "$sluice" dump $st-ssh >"$tmp/dump"
kill \$s
wait \$s
EOS
kout=$(timeout 60 unshare -n bash "$tmp/run.sh" kernel 2>&1)
check "kernel: ssh logs in to sshd and runs a command" \
	bash -c 'grep -qx login-ok <<<"$0" && grep -qx 42 <<<"$0" && grep -qx "ssh exit 0" <<<"$0"' "$kout"
sout=$(timeout 60 unshare -n bash "$tmp/run.sh" sluice 2>&1)
echo "$sout" | sed 's/^/# /'
check "sluice run: ssh logs in to sshd and runs a command (after 17 other processes used the stack)" \
	bash -c 'grep -qx login-ok <<<"$0" && grep -qx 42 <<<"$0" && grep -qx "ssh exit 0" <<<"$0"' "$sout"
check "kernel: scp uploads 2 MB whole" bash -c 'grep -qx "scp exit 0" <<<"$0" && grep -qx "upload same" <<<"$0"' "$kout"
check "sluice run: scp uploads 2 MB whole" bash -c 'grep -qx "scp exit 0" <<<"$0" && grep -qx "upload same" <<<"$0"' "$sout"
check "sluice run: the stack is still ready afterwards" grep -q "^stack $st-ssh: ready" "$tmp/dump"
check "sshd's sandboxed child was not killed (no SIGSYS, no sandbox violation)" \
	bash -c '! grep -Eqi "SIGSYS|sandbox violation|signal 31|killed" "$0"' "$tmp/sshd-sluice.log"
check "sshd and ssh met in the stack (its active and passive opens counted)" \
	awk '$1 == "tcp_passive_open" || $1 == "tcp_active_open" { if ($2 > 0) n++ } END { exit !(n == 2) }' "$tmp/dump"
[ "$tap_failed" = 0 ] || sed 's/^/# sshd: /' "$tmp/sshd-sluice.log" | tail -20
done_testing
