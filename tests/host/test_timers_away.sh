#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Timers while the program is away (issue 19), beside the kernel in the
# same run: tests/preload/timers_away holds both ends of a loopback
# connection in one thread, fills the window, then leaves the socket
# calls (usleep(), or a read(2) of a pipe); a forked observer times the
# sender's first zero-window probe through TCP_INFO (tcpi_backoff).  The
# probe is the persist timer's: the kernel runs it in softirq, one RTO
# on (about 400-470 ms here); Sluice's only thread of the process is
# away, so the process's away timer runs it (lib/README.md, "Timers
# while the program is away"), read by the twins' watcher the listener
# gave the process, or, with SLUICE_KERNEL_LISTEN=0 (no twin, no
# watcher), by a thread made for it at the first deadline it left
# behind.  Before, nobody did, and the observer saw no probe within 2 s.
#
#   +---- network namespace made here ----+
#   | timers_away (kernel lo, 127.0.0.1)  |
#   | sluice run: the same, one stack     |
#   | ... SLUICE_KERNEL_LISTEN=0: again   |
#   +-------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
unshare_test "timers while away" timers_away ts-ta-$$
cat >"$tmp/run.sh" <<EOS
ip link set lo up
for m in sleep pipe; do
	for r in 1 2 3; do
		echo "kernel \$("$prog" \$m \$((7960 + r)) || echo \$m failed)"
		echo "sluice \$("$sluice" run --stack $st-\$m\$r -- "$prog" \$m \$((7970 + r)) || echo \$m failed)"
		echo "thread \$(SLUICE_KERNEL_LISTEN=0 "$sluice" run --stack $st-t\$m\$r -- "$prog" \$m \$((7950 + r)) || echo \$m failed)"
	done
done
EOS
out=$(timeout 200 unshare -n bash "$tmp/run.sh" 2>&1)
echo "$out" | sed 's/^/# /'
for m in sleep pipe; do
	k=$(awk -v m=$m '$1 == "kernel" && $2 == m && $3 == "probe_ms" { print $4 }' <<<"$out")
	kn=$(wc -w <<<"$k")
	# The kernel's slowest + 100 ms (the RTOs differ a little; a loaded
	# machine's scheduling).
	kmax=$(tr ' ' '\n' <<<"$k" | awk '$1 != "none" && $1 > m { m = $1 } END { print m + 0 }')
	for who in sluice thread; do
		s=$(awk -v m=$m -v w=$who '$1 == w && $2 == m && $3 == "probe_ms" { print $4 }' <<<"$out")
		sn=$(wc -w <<<"$s")
		check "$m, $who: 3 runs each ran (kernel $kn, sluice $sn)" test "$kn" = 3 -a "$sn" = 3
		check "$m, $who: every first probe while away within the kernel's slowest + 100 ms (sluice $(echo $s), kernel $(echo $k))" \
			awk -v k="$kmax" -v s="$s" 'BEGIN { n = split(s, a, " "); if (n != 3) exit 1
				for (i = 1; i <= n; i++) if (a[i] == "none" || a[i] > k + 100) exit 1 }'
	done
done
done_testing
