#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The socket cache (issue 23 item 3; lib/preload/README.md, "Socket
# cache"): a private socket's placeholder description is kept at close()
# and lent to the next socket() or accept().  What the program sees must
# be the kernel's: tests/preload/sockcache.c (numbers lowest free after
# close, /proc/self/fd, fstat, O_NONBLOCK and FD_CLOEXEC as asked, a new
# socket unbound, without error or options, dup, fork, epoll sets) runs on the
# kernel and under `sluice run`, each in a network namespace of its own,
# and must print the same lines; the stack's counter sock_fd_cached shows
# the cache was used.  Then a client churning connections on a stack is
# killed (SIGKILL) holding cached descriptions and open sockets: within
# the server's sweep (0.5 s) the stack holds the listener alone (none
# if the server ended), and no buffer.
#
#   +---------- unshare -n (lo up) ----------+
#   | sockcache (kernel)                     |
#   | sluice run sockcache                   |
#   | sluice run conn_churn server <- client |
#   +----------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
unshare_test "socket cache" sockcache ts-sc-$$
churn=$top/build/tests/bench/conn_churn
netns_secs=120

k=$(in_netns "$prog")
echo "$k" | sed 's/^/# kernel: /'
check "on the kernel: all 9 cases as expected" \
	test "$(grep -c ' ok$' <<<"$k")" = 9
s=$(in_netns env SLUICE_STACK=$st "$sluice" run -- "$prog")
echo "$s" | sed 's/^/# sluice: /'
check_as_kernel "$k" "$s"
n=$(counter "$st" sock_fd_cached)
check "the cache made sockets (sock_fd_cached ${n:-0})" test "${n:-0}" -gt 100

# SIGKILL of a process holding cached descriptions.
cat >"$tmp/kill.sh" <<EOS
ip link set lo up
"$sluice" run --stack $st-k -- "$churn" server 7777 100000000 >"$tmp/srv" 2>&1 &
srv=\$!
for i in \$(seq 200); do grep -q ready "$tmp/srv" && break; sleep 0.05; done
"$sluice" run --stack $st-k -- "$churn" client 7777 100000000 >/dev/null 2>&1 &
cl=\$!
sleep 1
kill -KILL \$cl
wait \$cl
sleep 1.5
"$sluice" dump $st-k >"$tmp/dump"
echo "server \$(kill -0 \$srv 2>/dev/null && echo alive || echo gone)"
kill \$srv 2>/dev/null
wait
EOS
out=$(timeout 60 unshare -n bash "$tmp/kill.sh" 2>&1)
echo "$out" | sed 's/^/# /'
grep -E 'sockets [0-9]|sock_fd_cached' "$tmp/dump" | sed 's/^/# after the kill: /'
n=$(awk '$1 == "sock_fd_cached" { print $2 }' "$tmp/dump")
check "the killed client used the cache (sock_fd_cached ${n:-0})" test "${n:-0}" -gt 100
# (The server ends by itself if the kill cut a connection it was serving,
# as it does on the kernel: then its exit closed the rest.)
check "after the kill the stack holds the listener at most, no buffer" \
	grep -Eq 'sockets [01]/[0-9]* .*buffers 0/' "$tmp/dump"
done_testing
