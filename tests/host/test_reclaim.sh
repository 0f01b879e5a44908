#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A killed lock holder or a broken stack never blocks a program (issue 17):
# a /dev/shm stack whose lock a killed process still holds is brought back
# by the next process to want the lock, whether that is a program already
# running on it or the next `sluice run`; a stack found corrupt (BROKEN for
# good) is reclaimed by the next `sluice run`, which gets a fresh stack of
# the same name.  No manual cleanup, no "Broken pipe".
#
#   +----------- network namespace made here (lo DOWN) -----------+
#   |  sluice run python3 (UDP to itself on 127.0.0.1)  /dev/shm   |
#   |  holdlock STACK: takes the lock, stops, is SIGKILLed           |
#   |  holdlock STACK corrupt: finds the region corrupt              |
#   +--------------------------------------------------------------+
# The kernel's loopback is down, so a datagram that arrives went through
# the stack.  Every step is bounded by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
hold=$top/build/tests/interop/holdlock
py=/usr/bin/python3
tmp=$(mktemp -d)
st=ts-recl-$$

cleanup() {
	jobs -p | xargs -r kill -9 2>/dev/null
	wait 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	rm -rf "$tmp"
}
trap cleanup EXIT

# UDP to itself; "ok" if the datagram comes back.  With a file argument:
# first wait for that file (while another process breaks the stack), then
# try once more and say what happened.
cat >"$tmp/udp.py" <<'EOS'
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.settimeout(2)
def once():
    s.sendto(b"ping", s.getsockname())
    return s.recv(16)
print("first", "ok" if once() == b"ping" else "bad", flush=True)
if len(sys.argv) > 1:
    open(sys.argv[1] + ".ready", "w").close()
    for _ in range(500):
        if os.path.exists(sys.argv[1]):
            break
        time.sleep(0.01)
    try:
        once()
        print("after", "ok", flush=True)
    except OSError as e:
        print("after", "errno%d" % e.errno, flush=True)
EOS

cat >"$tmp/run.sh" <<EOS
run() { timeout 20 "$sluice" run --stack "$st" -- "$py" "$tmp/udp.py" "\$@"; }
stopped() {
	for i in \$(seq 200); do
		[ "\$(awk '{print \$3}' /proc/\$1/stat 2>/dev/null)" = T ] && return 0
		sleep 0.01
	done
	return 1
}
echo "A \$(run | tr '\n' ' ')"
# A process dies holding the lock, and nobody has looked since.
"$hold" "$st" & h=\$!
stopped \$h && echo "B holder stopped"
kill -9 \$h; wait \$h 2>/dev/null
ino1=\$(stat -c %i /dev/shm/sluice-$st)
echo "C \$(run | tr '\n' ' ')"
ino2=\$(stat -c %i /dev/shm/sluice-$st)
[ "\$ino1" = "\$ino2" ] && echo "C same stack"
echo "C recovered \$("$sluice" dump "$st" | awk '\$1 == "lock_recovered" { print \$2 }')"
# A holder killed under a running program: the program brings it back.
run "$tmp/go" >"$tmp/long" & p=\$!
for i in \$(seq 200); do [ -e "$tmp/go.ready" ] && break; sleep 0.05; done
"$hold" "$st" & h=\$!
stopped \$h && echo "D holder stopped"
kill -9 \$h; wait \$h 2>/dev/null
touch "$tmp/go"
wait \$p
echo "D \$(tr '\n' ' ' <"$tmp/long")"
echo "D state \$("$sluice" stacks 2>/dev/null | awk -v s="$st" '\$1 == s { print \$2 }')"
# A stack found corrupt under a running program: BROKEN for good ...
rm -f "$tmp/go" "$tmp/go.ready"
run "$tmp/go" >"$tmp/long" & p=\$!
for i in \$(seq 200); do [ -e "$tmp/go.ready" ] && break; sleep 0.05; done
"$hold" "$st" corrupt
touch "$tmp/go"
wait \$p
echo "F \$(tr '\n' ' ' <"$tmp/long")"
echo "F state \$("$sluice" stacks 2>/dev/null | awk -v s="$st" '\$1 == s { print \$2 }')"
ino1=\$(stat -c %i /dev/shm/sluice-$st)
# ... and the next program starts anyway, on a fresh stack.
echo "E \$(run | tr '\n' ' ')"
ino2=\$(stat -c %i /dev/shm/sluice-$st)
[ "\$ino1" != "\$ino2" ] && echo "E fresh stack"
echo "E state \$("$sluice" stacks 2>/dev/null | awk -v s="$st" '\$1 == s { print \$2 }')"
EOS
out=$(timeout 120 unshare -n bash "$tmp/run.sh" 2>&1)
check "a program on a new stack talks to itself through it" grep -qx "A first ok " <<<"$out"
check "a holder stopped with the lock, then was killed" grep -qx "B holder stopped" <<<"$out"
check "the next sluice run works: it brought the dead holder's stack back" \
	grep -qx "C first ok " <<<"$out"
check "the same stack, not a fresh one" grep -qx "C same stack" <<<"$out"
check "sluice dump counts the recovery (lock_recovered 1)" grep -qx "C recovered 1" <<<"$out"
check "a second holder stopped and was killed under a running program" \
	grep -qx "D holder stopped" <<<"$out"
check "that program kept working: it brought the stack back" \
	grep -qx "D first ok after ok " <<<"$out"
check "sluice stacks shows it ready" grep -qx "D state ready" <<<"$out"
check "a program on a stack found corrupt gets an error" \
	grep -qE "^F first ok after errno[0-9]+ $" <<<"$out"
check "sluice stacks shows that one corrupt" grep -qx "F state corrupt" <<<"$out"
check "the next sluice run works anyway: the BROKEN stack was reclaimed" \
	grep -qx "E first ok " <<<"$out"
check "on a fresh stack of the same name" grep -qx "E fresh stack" <<<"$out"
check "sluice stacks shows the new one ready" grep -qx "E state ready" <<<"$out"
[ "$tap_failed" = 0 ] || echo "$out" | sed 's/^/# /'
done_testing
