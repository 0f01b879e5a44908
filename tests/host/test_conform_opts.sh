#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The last socket options of issue 15 (tests/preload/tcpopts.c):
# TCP_NOTSENT_LOWAT and EPOLLOUT following the unsent bytes,
# SO_TIMESTAMP / SO_TIMESTAMPNS and what a TCP or UDP read carries,
# TCP_FASTOPEN_CONNECT and TCP_FASTOPEN in every state, TCP_ULP and
# SO_ATTACH_FILTER on a connection with both ends in the stack: on the
# kernel and under `sluice run`, each in a network namespace of its own,
# every line as the kernel's but SO_ATTACH_FILTER's, which the stack
# refuses (lib/preload/README.md, "Options a stack connection cannot
# take").
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/tcpopts
st=opts-$$
trap 'rm -rf /dev/shm/sluice-"$st"-* /dev/shm/sluicefd-"$st"-*' EXIT
need_netns "loopback connections"
netns_secs=60

for part in lowat ts tfo ulp; do
	k=$(in_netns "$prog" $part 2>&1)
	check "$part, on the kernel: $(wc -l <<<"$k") lines" test -n "$k"
	s=$(in_netns env SLUICE_STACK=$st-$part "$top/build/tools/sluice" run -- "$prog" $part 2>&1)
	# SO_ATTACH_FILTER on a connection with both ends in the stack: the
	# stack runs no filter and says so (lib/preload/README.md, "Options
	# a stack connection cannot take"), never 0 for a filter ignored.
	check_as_kernel "$(grep -v -e "^#" -e "^attach_filter: " <<<"$k")" "$s"
	if [ $part = ulp ]; then
		check "attach_filter: the kernel's $(grep '^attach_filter: ' <<<"$k"), refused in the stack ($(grep '^attach_filter: ' <<<"$s"))" \
			test "$(grep '^attach_filter: ' <<<"$s")" = "attach_filter: ENOPROTOOPT"
	fi
	n=$(sed -n 's/^# stack ends: \([0-9]*\) of \([0-9]*\)$/\1 \2/p' <<<"$s")
	check "$part: every connection end in the stack ($n)" test "${n% *}" = "${n#* }" -a "${n% *}" != 0
done
# The mark from net.ipv4.tcp_notsent_lowat (32 KiB in the namespace), the
# socket setting none: the stack reads the sysctl as a handle is made.
k=$(in_netns sh -c 'sysctl -qw net.ipv4.tcp_notsent_lowat=32768 && exec "$@"' sh "$prog" lowat-sysctl 2>&1)
s=$(in_netns sh -c 'sysctl -qw net.ipv4.tcp_notsent_lowat=32768 && exec "$@"' sh \
	env SLUICE_STACK=$st-sysctl "$top/build/tools/sluice" run -- "$prog" lowat-sysctl 2>&1)
check "lowat-sysctl, on the kernel: $(grep -c '^lowat' <<<"$k") lines" test -n "$(grep '^lowat_filled' <<<"$k")"
check_as_kernel "$(grep -v "^#" <<<"$k")" "$s"
done_testing
