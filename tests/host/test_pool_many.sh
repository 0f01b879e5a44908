#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Many connections' bytes in flight at once, more than the stack's packet
# buffer pool holds (issue 23, nginx with 10,000 keep-alive clients):
# tests/preload/pool_many opens 5,000 connections in one process, the
# server side of each writes 6,000 bytes at once and waits to write the
# rest edge-triggered (as nginx), the client side reads them all
# level-triggered (as wrk), the kernel beside it.
#
# Before: a write the pool refused was never followed by a wake of its
# socket (a socket with nothing in flight has no ACK to come), so an
# edge-triggered writer waited for ever: with 4,096 buffers (the old
# default) 4,104 connections were still short after 60 s.  Now the
# refused socket looks at the pool again every 5 ms and wakes its writers
# once it has room (lib/proto/tcp/tcp.c, pool_refused()); and a /dev/shm
# stack has 65,536 buffers by default (lib/core/region.c, SL_BUFS_SHM).
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
prog=$top/build/tests/preload/pool_many
st=ts-pool-$$
trap 'rm -rf /dev/shm/sluice-$st* /dev/shm/sluicefd-$st*' EXIT

field() { sed -n "s/\(^\|.* \)$1 \([0-9.-]*\).*/\2/p" <<<"$2"; }
within() { awk -v t="$1" -v k="$2" 'BEGIN { exit !(t != "" && k != "" && t <= 5 * k + 0.5) }'; }

k=$(timeout 60 unshare -n sh -c 'ip link set lo up && exec "$0" 5000 6000 20' "$prog" 2>&1)
krc=$?
echo "# kernel: $k"
check "the kernel delivers 5000 x 6000 bytes (exit $krc)" test "$krc" = 0
kt=$(field all "$k")
for b in 1024 4096 default; do
	env=()
	[ "$b" = default ] || env=(SLUICE_BUFS=$b)
	s=$(env "${env[@]}" timeout 60 unshare -n "$sluice" run --stack "$st-$b" -- "$prog" 5000 6000 20 2>&1)
	src=$?
	echo "# sluice, $b buffers: $s"
	check "Sluice with $b buffers delivers every byte (exit $src)" test "$src" = 0
	if [ "$b" = default ]; then
		check "Sluice with the default pool within 5x + 0.5 s of the kernel ($(field all "$s") s; the kernel $kt s)" \
			within "$(field all "$s")" "$kt"
	else
		# A pool far short of what is in flight: progress, not speed.
		check "Sluice with $b buffers: in under 10 s ($(field all "$s") s)" \
			awk -v t="$(field all "$s")" 'BEGIN { exit !(t != "" && t < 10) }'
	fi
	rm -rf "/dev/shm/sluice-$st-$b" "/dev/shm/sluicefd-$st-$b"
done
done_testing
