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
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	rm -rf "$tmp"
}
trap cleanup EXIT

# stopped_start TAG [ARG]: the start of a script run in a namespace of its
# own: stopped_holder.py (its files $tmp/TAGready, TAGgo, TAGout, TAGerr;
# ARG its mode) under sluice run, then a holder that takes the stack lock
# and stops; prints "holder state T" once stopped ($prog, $h: their pids).
stopped_start() {
	cat <<EOS
"$sluice" run --stack "$st" -- "$py" "$top/tests/preload/stopped_holder.py" \
	"$tmp/${1}ready" "$tmp/${1}go" ${2:-} >"$tmp/${1}out" 2>"$tmp/${1}err" &
prog=\$!
for i in \$(seq 200); do [ -e "$tmp/${1}ready" ] && break; sleep 0.05; done
"$hold" "$st" &
h=\$!
for i in \$(seq 200); do
	[ "\$(awk '{print \$3}' /proc/\$h/stat 2>/dev/null)" = T ] && break
	sleep 0.01
done
echo "holder state \$(awk '{print \$3}' /proc/\$h/stat)"
EOS
}

{ stopped_start ""; cat <<EOS
echo "dump \$("$sluice" dump "$st" | grep '^  lock: held' | sed "s/process \$h /process HOLDER /")"
echo "stacks \$("$sluice" stacks | awk -v s="$st" '\$1 == s { print \$NF }' | sed "s/^\$h,/HOLDER,/")"
echo "info \$("$sluice" info 2>/dev/null | grep -A1 "^stack    $st (shm)" | tail -1 | sed "s/process \$h /process HOLDER /")"
# A real client's own limit fires: curl's connect is queued, and it gives
# up after its --max-time (exit 28), as with a server that never answers.
t0=\$(date +%s%N)
"$sluice" run --stack "$st" -- curl -s -o /dev/null --max-time 1 http://127.0.0.1:18093/ ; rc=\$?
echo "curl exit \$rc after \$(( (\$(date +%s%N) - t0) / 1000000 )) ms"
touch "$tmp/go"
# The control calls at the end wait for the lock: give it back after 3 s.
( sleep 3; kill -CONT \$h ) &
wait \$prog
echo "program exit \$?"
kill -CONT \$h
wait \$h
echo "holder exit \$?"
EOS
} >"$tmp/run.sh"
out=$(timeout 60 unshare -n bash "$tmp/run.sh" 2>&1)
check "the holder stopped holding the lock" grep -qx "holder state T" <<<"$out"
check "sluice dump names the stopped holder" \
	grep -qx "dump   lock: held by process HOLDER (stopped: nobody's timeouts wait for it) for at least 200 ms" <<<"$out"
check "sluice stacks shows the stopped holder in its LOCK column" grep -qx "stacks HOLDER,stopped" <<<"$out"
check "sluice info names the stopped holder and for how long" \
	grep -qx "info   lock: held by process HOLDER (stopped: nobody's timeouts wait for it) for at least 200 ms" <<<"$out"
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
read -r _ te ne < <(grep '^epoll ' "$tmp/out")
check "epoll_wait(150 ms) returns nothing (${ne:-none})" bash -c '[ "$0" = 0 ]' "${ne:-x}"
check "epoll_wait(150 ms): on time (${te:-none} s)" within 0.150 "${te:-9}"
read -r _ tsl nsl < <(grep '^select ' "$tmp/out")
check "select(150 ms) returns nothing (${nsl:-none})" bash -c '[ "$0" = 0 ]' "${nsl:-x}"
check "select(150 ms): on time (${tsl:-none} s)" within 0.150 "${tsl:-9}"
read -r _ tr rr < <(grep '^rcvtimeo ' "$tmp/out")
check "SO_RCVTIMEO 300 ms: EAGAIN (${rr:-none})" [ "${rr:-}" = errno11 ]
check "SO_RCVTIMEO 300 ms: on time (${tr:-none} s)" within 0.300 "${tr:-9}"
read -r _ tsn rsn < <(grep '^sndtimeo ' "$tmp/out")
check "SO_SNDTIMEO 200 ms on a full send buffer: EAGAIN (${rsn:-none})" [ "${rsn:-}" = errno11 ]
check "SO_SNDTIMEO 200 ms: on time (${tsn:-none} s)" within 0.200 "${tsn:-9}"
read -r _ ts rs < <(grep '^settimeout ' "$tmp/out")
check "settimeout(0.25): socket.timeout (${rs:-none})" [ "${rs:-}" = timeout ]
check "settimeout(0.25): on time (${ts:-none} s)" within 0.250 "${ts:-9}"
read -r _ tn rn < <(grep '^nonblock ' "$tmp/out")
check "a non-blocking recv: EAGAIN (${rn:-none})" [ "${rn:-}" = eagain ]
check "a non-blocking recv: at once (${tn:-none} s)" within 0 "${tn:-9}"
read -r _ tnm nm < <(grep '^names ' "$tmp/out")
check "getsockname and getpeername of a connection: answered (${nm:-none})" \
	grep -qE '^127\.0\.0\.1:[0-9]+ 127\.0\.0\.1:18093$' <<<"${nm:-x}"
check "getsockname and getpeername: at once, not waiting for the holder (${tnm:-none} s)" within 0 "${tnm:-9}"
read -r _ tf rf nf hf < <(grep '^fresh ' "$tmp/out")
check "socket(), setsockopt, getsockopt, getsockname and a non-blocking connect: at once (${tf:-none} s)" \
	within 0 "${tf:-9}"
check "the connect: EINPROGRESS (${rf:-none}), the option read back (${nf:-none}), no name yet (${hf:-none})" \
	[ "${rf:-}/${nf:-}/${hf:-}" = "115/1/0.0.0.0:0" ]
check "the queued connect completed once the holder went on, and carried data" \
	grep -qx "queued writable 0 queued" "$tmp/out"
read -r _ _ crc _ cms _ < <(grep '^curl exit ' <<<"$out")
check "curl --max-time 1 with the holder stopped: gives up on time (exit ${crc:-none} after ${cms:-none} ms)" \
	awk -v r="${crc:-0}" -v m="${cms:-0}" 'BEGIN { exit !(r == 28 && m >= 990 && m < 1500) }'
for call in setsockopt getsockopt bind listen connect shutdown; do
	r=$(sed -n "s/^control $call //p" "$tmp/out")
	check "$call with the holder stopped: no EAGAIN, it waits for the lock (${r:-none})" \
		[ "${r:-}" = ok ]
done
read -r _ _ tw < <(grep '^control waited ' "$tmp/out")
check "the control calls waited for the holder to be continued (${tw:-none} s)" \
	awk -v w="${tw:-0}" 'BEGIN { exit !(w >= 0.5) }'

# A storm: a process that takes and lets go of the lock over and over is
# stopped and continued every few milliseconds for 3 s, while the program
# makes timed calls (poll, epoll_wait, select 20 ms; SO_RCVTIMEO 30 ms).
cat >"$tmp/storm.sh" <<EOS
"$sluice" run --stack "$st" -- "$py" "$top/tests/preload/stopped_holder.py" \
	"$tmp/sready" "$tmp/sgo" storm >"$tmp/sout" 2>"$tmp/serr" &
prog=\$!
for i in \$(seq 200); do [ -e "$tmp/sready" ] && break; sleep 0.05; done
"$hold" "$st" churn 4 &
h=\$!
stops=0
while kill -0 \$prog 2>/dev/null; do
	kill -STOP \$h 2>/dev/null || break
	stops=\$((stops + 1))
	sleep 0.00\$((RANDOM % 8 + 2))
	kill -CONT \$h
	sleep 0.00\$((RANDOM % 4 + 1))
done
kill -CONT \$h 2>/dev/null
wait \$prog
echo "storm program exit \$? after \$stops stops"
wait \$h
EOS
sout=$(timeout 60 unshare -n bash "$tmp/storm.sh" 2>&1)
echo "$sout" | sed 's/^/# /'
sed 's/^/# /' "$tmp/sout" "$tmp/serr"
check "the storm program ran to the end" grep -q "^storm program exit 0 after [1-9]" <<<"$sout"
# The issue's bound: no waiter overshoots its timeout by more than 10 ms.
for k in poll epoll select rcvtimeo; do
	read -r _ _ w n < <(grep "^storm $k " "$tmp/sout")
	check "storm: $k never overshot its timeout by more than 10 ms (worst ${w:-none} s, ${n:-0} rounds)" \
		awk -v w="${w:-9}" 'BEGIN { exit !(w <= 0.010) }'
done
# epoll's journal (issue 24): readiness recorded before the holder stopped
# is reported once it goes on, though nothing changes in the stack then.
{ stopped_start j journal; cat <<EOS
touch "$tmp/jgo"
for i in \$(seq 200); do [ -e "$tmp/jgo.looked" ] && break; sleep 0.01; done
sleep 0.1
kill -CONT \$h
wait \$prog
echo "program exit \$?"
wait \$h
EOS
} >"$tmp/journal.sh"
jout=$(timeout 60 unshare -n bash "$tmp/journal.sh" 2>&1)
echo "$jout" | sed 's/^/# /'
sed 's/^/# /' "$tmp/jout" "$tmp/jerr"
check "journal: the holder was stopped while the set looked" grep -qx "holder state T" <<<"$jout"
read -r _ _ jf _ jb _ jd _ ja _ jt < <(grep '^journal ' "$tmp/jout")
check "journal: nothing ready at first, the datagram seen by poll() before the stop (${jf:-none} ${jb:-none})" \
	[ "${jf:-}/${jb:-}" = 0/1 ]
check "journal: epoll_wait(0) with the holder stopped reports nothing (${jd:-none})" [ "${jd:-}" = 0 ]
check "journal: once the holder went on, epoll_wait reports the socket (${ja:-none} in ${jt:-none} s)" \
	awk -v n="${ja:-0}" -v t="${jt:-9}" 'BEGIN { exit !(n == 1 && t < 1) }'
[ "$tap_failed" = 0 ] || { sed 's/^/# /' "$tmp/out" "$tmp/err"; echo "$out" | sed 's/^/# /'; }
done_testing
