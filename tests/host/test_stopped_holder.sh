#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A process stopped (SIGSTOP) while it holds the stack lock makes no other
# process overstay its own timeout (issue 17): a real program under
# `sluice run` times out on time in poll(2), with SO_RCVTIMEO and with a
# socket timeout, and a non-blocking receive returns EAGAIN at once.
#
#   +----------- network namespace made here (lo DOWN) -----------+
#   |  sluice run python3 stopped_holder.py    stack in /dev/shm   |
#   |  holdlock STACK  (takes the lock, then SIGSTOPs itself)       |
#   +--------------------------------------------------------------+
# Every step is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
hold=$top/build/tests/interop/holdlock
py=/usr/bin/python3
tmp=$(mktemp -d)
st=ts-stop-$$

cleanup() {
	jobs -p | xargs -r kill -CONT 2>/dev/null
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	rm -f "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/run.sh" <<EOS
"$sluice" run --stack "$st" -- "$py" "$top/tests/preload/stopped_holder.py" \
	"$tmp/ready" "$tmp/go" >"$tmp/out" 2>"$tmp/err" &
prog=\$!
for i in \$(seq 200); do [ -e "$tmp/ready" ] && break; sleep 0.05; done
"$hold" "$st" &
h=\$!
for i in \$(seq 200); do
	[ "\$(awk '{print \$3}' /proc/\$h/stat 2>/dev/null)" = T ] && break
	sleep 0.01
done
echo "holder state \$(awk '{print \$3}' /proc/\$h/stat)"
echo "dump \$("$sluice" dump "$st" | grep '^  lock: held' | sed "s/process \$h /process HOLDER /")"
touch "$tmp/go"
wait \$prog
echo "program exit \$?"
kill -CONT \$h
wait \$h
echo "holder exit \$?"
EOS
out=$(timeout 60 unshare -n bash "$tmp/run.sh" 2>&1)
check "the holder stopped holding the lock" grep -qx "holder state T" <<<"$out"
check "sluice dump names the stopped holder" \
	grep -qx "dump   lock: held by process HOLDER (stopped: nobody's timeouts wait for it) for at least 200 ms" <<<"$out"
check "the program ran to the end (exit 0)" grep -qx "program exit 0" <<<"$out"
check "the holder, continued, let go and exited" grep -qx "holder exit 0" <<<"$out"

# within TIMEOUT SECONDS NAME: the call took at least TIMEOUT and less than
# TIMEOUT + 40 ms (the issue asks 10 ms; 40 leaves room for a loaded CI).
within() {
	awk -v t="$1" -v g="$2" 'BEGIN { exit !(g >= t - 0.002 && g < t + 0.040) }'
}
read -r _ tp np < <(grep '^poll ' "$tmp/out")
check "poll(200 ms) returns nothing, on time (${tp:-none} s)" \
	bash -c '[ "$0" = 0 ]' "${np:-x}"
check "poll(200 ms): on time" within 0.200 "${tp:-9}"
read -r _ tr rr < <(grep '^rcvtimeo ' "$tmp/out")
check "SO_RCVTIMEO 300 ms: EAGAIN (${rr:-none})" [ "${rr:-}" = errno11 ]
check "SO_RCVTIMEO 300 ms: on time (${tr:-none} s)" within 0.300 "${tr:-9}"
read -r _ ts rs < <(grep '^settimeout ' "$tmp/out")
check "settimeout(0.25): socket.timeout (${rs:-none})" [ "${rs:-}" = timeout ]
check "settimeout(0.25): on time (${ts:-none} s)" within 0.250 "${ts:-9}"
read -r _ tn rn < <(grep '^nonblock ' "$tmp/out")
check "a non-blocking recv: EAGAIN (${rn:-none})" [ "${rn:-}" = eagain ]
check "a non-blocking recv: at once (${tn:-none} s)" within 0 "${tn:-9}"
[ "$tap_failed" = 0 ] || { sed 's/^/# /' "$tmp/out" "$tmp/err"; echo "$out" | sed 's/^/# /'; }
done_testing
