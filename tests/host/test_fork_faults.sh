#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Page faults a forking server takes per connection (issue 16 item 6),
# beside the kernel in the same run: tests/preload/fork_srv (accept, fork
# a child that echoes until EOF, close its copy) under `sluice run`,
# tests/bench/conn_churn's client on the same stack, perf stat's
# page-faults over the server and its children.
# Per connection = (faults for 1,050 connections - faults for 50) / 1,000.
#
# After fork() every private page the parent or the child writes is a
# copy-on-write fault, and every page of a shared mapping or of a file's
# text the child touches is a fault again (Linux copies no page table of
# those at fork).  What is bounded here:
#  - all faults a connection, Sluice against the kernel's, as a user runs
#    it (the library's twin watcher thread makes the process
#    multi-threaded, and glibc's fork() then locks and resets malloc,
#    stdio and more in both processes: about 13 of the difference), and
#    with SLUICE_KERNEL_LISTEN=0 (no twin, no thread: a single-threaded
#    fork like the kernel's);
#  - faults on the library's own writable data (its RW segment, .bss
#    included), each child and the parent a connection, from perf record
#    of the faulting addresses: the variables fork handlers and a close
#    write are kept on one page (SL_FORKDATA, lib/core/core.h), a table
#    no bell was ever put in is not walked, and what is right already is
#    not written again.  Before: 11 pages a child, 3.1 a connection in
#    the parent (its start included).
#
#   +------ network namespace made here ------+
#   | fork_srv / conn_churn client (kernel lo) |
#   | sluice run: the same, one stack          |
#   +------------------------------------------+
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
srv=$top/build/tests/preload/fork_srv
cli=$top/build/tests/bench/conn_churn
lib=$top/build/libsluice-preload.so
tmp=$(mktemp -d)
st=ts-ff-$$
trap 'rm -rf "$tmp"; rm -rf /dev/shm/sluice-$st-* /dev/shm/sluicefd-$st-*' EXIT

if ! perf stat -x, -e page-faults -o /dev/null true 2>/dev/null ||
   ! perf record -q -e page-faults -c 1 -d -o "$tmp/probe.data" true 2>/dev/null; then
	skip "page faults a forked connection" "perf cannot count page faults here"
	done_testing
	exit
fi
cat >"$tmp/run.sh" <<EOS
ip link set lo up
# count WHO N PORT: the server's page faults (with its children), one line
count() {
	local pre=""
	case "\$1" in
	sluice) pre="$sluice run --stack $st-\$2 --" ;;
	single) pre="env SLUICE_KERNEL_LISTEN=0 $sluice run --stack $st-s\$2 --" ;;
	esac
	# (a file of its own: the last server's "ready" must not be read)
	perf stat -x, -e page-faults -o "$tmp/srv" \$pre "$srv" \$3 \$2 120 >"$tmp/ready.\$1.\$2" &
	for i in \$(seq 500); do grep -q ready "$tmp/ready.\$1.\$2" 2>/dev/null && break; sleep 0.02; done
	\$pre "$cli" client \$3 \$2 >/dev/null || echo "client failed"
	wait || echo "server failed"
	echo "\$1 \$2 \$(awk -F, '/page-faults/ { print \$1 }' "$tmp/srv")"
}
count kernel 50 7971
count kernel 1050 7972
count sluice 50 7973
count sluice 1050 7974
count single 50 7975
count single 1050 7976
# Where each fault of 200 connections is: the addresses
perf record -q -e page-faults -c 1 -d -o "$tmp/rec.data" $sluice run --stack $st-r -- "$srv" 7977 200 120 >"$tmp/ready.r" &
for i in \$(seq 500); do grep -q ready "$tmp/ready.r" 2>/dev/null && break; sleep 0.02; done
$sluice run --stack $st-r -- "$cli" client 7977 200 >/dev/null || echo "client failed"
wait || echo "server failed"
EOS
out=$(timeout 300 unshare -n bash "$tmp/run.sh" 2>&1)
echo "$out" | sed 's/^/# /'
# per WHO: faults a connection
per() {
	awk -v p="$1" '
		$1 == p && $2 == 50 { a = $3 }
		$1 == p && $2 == 1050 { b = $3 }
		END { if (a == "" || b == "") print "-"; else printf "%.2f", (b - a) / 1000 }' <<<"$out"
}
le() { awk -v x="$1" -v m="$2" 'BEGIN { exit !(x != "-" && m != "-" && x <= m) }'; }
plus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-") print "-"; else printf "%.2f", a + b }'; }
k=$(per kernel) s=$(per sluice) s1=$(per single)
echo "# page faults a connection: kernel $k, sluice $s, sluice without twins (one thread) $s1"
check "every run completed" test -z "$(grep -E '(client|server) failed' <<<"$out")"
check "page faults a forked connection: at most the kernel's + 56 ($s, kernel $k; 62-63 more before)" \
	le "$s" "$(plus "$k" 56)"
check "... with a single-threaded fork (no twin): at most the kernel's + 48 ($s1, kernel $k)" \
	le "$s1" "$(plus "$k" 48)"

# The library's RW segment (.data, sl_forkdata, .bss) in the file, and
# where the loader put the file: faults there, a child and the parent.
rw=$(readelf -lW "$lib" | awk '$1 == "LOAD" && $7 ~ /W/ { print $3, $6 }')
perf script -i "$tmp/rec.data" --show-mmap-events -F pid,addr 2>/dev/null >"$tmp/rec.txt"
read -r kid par < <(/usr/bin/python3 "$top/tests/host/seg_faults.py" "$tmp/rec.txt" "$lib" $rw)
echo "# faults on the library's writable data: a child $kid, the parent a connection $par (with its start)"
check "a forked child writes at most 2 pages of the library's own data ($kid; 11 before)" \
	le "$kid" 2
check "the parent: at most 2 of its pages a connection, start included ($par; 3.1 before)" \
	le "$par" 2

done_testing
