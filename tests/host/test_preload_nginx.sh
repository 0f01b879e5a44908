#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# nginx under `sluice run` serving wrk under `sluice run`, on one stack,
# without the module (the stack is in /dev/shm).
#
#   +------------- network namespace made here (lo DOWN) -------------+
#   |  sluice run nginx (master + 2 workers, forked: one stack)       |
#   |        ^  127.0.0.1:18180, inside the stack                     |
#   |        v                                                        |
#   |  sluice run wrk -t 2 -c 16 -d 2s                                |
#   +-----------------------------------------------------------------+
#
# The kernel's loopback is down in the namespace, so nothing can work
# through it: requests served prove the stack carried them.  wrk must
# see no socket error and no non-2xx reply, the stack's counters must
# move, and `sluice fds` must show the listening socket in the master
# and both workers (the fork sharing).  The same pair on the kernel's
# loopback is run beside it for the ratio (reported, not asserted).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
tmp=$(mktemp -d)
st=tn-nginx-$$

cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
	rm -rf "$tmp"
}
trap cleanup EXIT

nginx=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$nginx" ] || ! command -v wrk >/dev/null; then
	skip "nginx and wrk under sluice run" "nginx or wrk not installed (tests/vm/deps.sh)"
	done_testing
	exit
fi
if ! unshare -n true 2>/dev/null; then
	skip "nginx and wrk under sluice run" "no network namespaces here"
	done_testing
	exit
fi

# A configuration of the test's own: every path in the temp directory.
. "$(dirname "$0")/nginx_conf.sh"
nginx_conf "$tmp" 18180 2

# run.sh MODE: nginx and wrk in this namespace, MODE sluice or kernel.
cat >"$tmp/run.sh" <<EOS
mode=\$1
if [ "\$mode" = sluice ]; then
	pre=("$sluice" run --stack "$st" --)
else
	ip link set lo up
	pre=()
fi
"\${pre[@]}" "$nginx" -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/logs/error.log" &
ngx=\$!
for i in \$(seq 100); do
	[ "\$(pgrep -c -P \$(cat "$tmp/nginx.pid" 2>/dev/null || echo 0) 2>/dev/null)" = 2 ] && break
	sleep 0.1
done
# The workers may still be starting: look until all three hold the socket.
if [ "\$mode" = sluice ]; then
	for i in \$(seq 100); do
		"$sluice" fds "$st" >"$tmp/fds.\$mode"
		[ "\$(grep -c ' nginx\$' "$tmp/fds.\$mode")" -ge 3 ] && break
		sleep 0.1
	done
fi
[ "\$mode" = sluice ] && "$sluice" fds >"$tmp/fds.all"
timeout 20 "\${pre[@]}" wrk -t 2 -c 16 -d 2s http://127.0.0.1:18180/index.html
echo "wrk rc \$?"
kill -QUIT \$ngx
for i in \$(seq 50); do kill -0 \$ngx 2>/dev/null || break; sleep 0.1; done
kill -0 \$ngx 2>/dev/null && { kill -9 \$ngx; echo "nginx did not stop"; }
wait \$ngx
echo "nginx rc \$?"
EOS

rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
timeout 60 unshare -n bash "$tmp/run.sh" sluice >"$tmp/sluice.out" 2>&1
sed 's/^/# /' "$tmp/sluice.out"
reqs=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$tmp/sluice.out")
check "wrk under sluice run: nginx under sluice run answered (${reqs:-0} requests)" \
	[ "${reqs:-0}" -gt 0 ]
check "wrk ran to the end (rc 0)" grep -qx "wrk rc 0" "$tmp/sluice.out"
check "no socket errors (connect, read, write, timeout)" \
	sh -c "! grep -q 'Socket errors' '$tmp/sluice.out'"
check "no non-2xx replies" sh -c "! grep -q 'Non-2xx' '$tmp/sluice.out'"
check "nginx stopped cleanly on SIGQUIT (rc 0)" grep -qx "nginx rc 0" "$tmp/sluice.out"
n=$(grep -c ' nginx$' "$tmp/fds.sluice" 2>/dev/null)
check "the listening socket is on the stack in the master and both workers ($n fds)" \
	[ "${n:-0}" -ge 3 ]
sed 's/^/# fds: /' "$tmp/fds.sluice" 2>/dev/null
pids=$(awk '$NF == "nginx" { print $1 }' "$tmp/fds.sluice" 2>/dev/null | sort -u | wc -l)
check "... in three processes ($pids)" [ "$pids" -ge 3 ]
check "sluice fds shows it as a TCP listener on 127.0.0.1:18180" \
	grep -qE " $st +[0-9]+ +tcp +LISTEN +127\.0\.0\.1:18180 .* nginx$" "$tmp/fds.sluice"
check "sluice fds without a name lists it too" grep -q " $st " "$tmp/fds.all"
ctr() { "$sluice" dump "$st" 2>/dev/null | awk -v n="$1" '$1 == n { print $2 }'; }
tx=$(ctr tcp_tx)
rx=$(ctr tcp_rx)
check "the stack carried it (tcp_tx ${tx:-?}, tcp_rx ${rx:-?})" \
	[ "${tx:-0}" -gt "${reqs:-0}" -a "${rx:-0}" -gt "${reqs:-0}" ]
grep -E '\[(alert|emerg|crit)\]' "$tmp/logs/error.log" | sed 's/^/# nginx: /'
check "nginx logged no alert, crit or emerg" \
	sh -c "! grep -qE '\[(alert|emerg|crit)\]' '$tmp/logs/error.log'"

timeout 60 unshare -n bash "$tmp/run.sh" kernel >"$tmp/kernel.out" 2>&1
krps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/kernel.out")
srps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$tmp/sluice.out")
echo "# requests/s: kernel loopback ${krps:-?}, Sluice ${srps:-?} (one run, unpinned; not asserted)"
done_testing
