#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Many connections held at once (issue 23, item 5): TOTAL established
# connections, both ends in one stack, opened by PROCS processes
# (tests/bench/conn_many.c), on the kernel and under `sluice run`, side by
# side: the time to open them, an idle worker's CPU a second, and memory
# a connection.  Each process holds TOTAL / PROCS * 2 + 5 fds: keep that
# under `ulimit -n`.
#
#   tests/bench/conn_many.sh [TOTAL [PROCS [IDLE_S]]]   (default 100000 12 3)
# Traffic stays on 127.0.0.0/8 (the kernel's loopback; the stack's own).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
prog=$top/build/tests/bench/conn_many
sluice=$top/build/tools/sluice
total=${1:-100000}
procs=${2:-12}
idle=${3:-3}
st=bcm-$$
printf '%-7s %s\n' kernel "$("$prog" "$total" "$procs" "$idle" 2>/dev/null)"
printf '%-7s %s\n' sluice "$("$sluice" run --stack "$st" -- "$prog" "$total" "$procs" "$idle" 2>/dev/null)"
rm -rf "/dev/shm/sluice-$st" "/dev/shm/sluicefd-$st"
