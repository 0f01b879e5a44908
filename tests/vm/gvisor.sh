#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# In the test VM: gVisor's socket syscall tests on the module path (issue
# 24 item 2).  tests/conformance/gvisor.sh runs each case twice in a fresh
# network namespace: on the VM's kernel, and under `sluice run` on a stack
# the module holds (its region, its socket fds), loopback inside the stack.
# One TAP line a case: ok when Sluice passes, not ok when the kernel passes
# and Sluice does not, a skip when the kernel does not pass it either.
#
# tests/vm/run.sh copies the binaries (GVISOR_BIN, else build/conformance)
# and the cases to run (GVISOR_VM_SUBSET, default
# tests/conformance/subset.txt; or whole binaries, GVISOR_VM_BINARIES)
# into /opt/sluice/gv; with none there the suite is one skip.  Prints TAP.
# It runs only when asked (`make conformance-vm`, or SLUICE_VM_ONLY=gvisor):
# the subset's 104 cases take about 7 minutes under TCG.
PATH=/opt/sluice/bin:$PATH
SUITE="gVisor on the module"
. /opt/sluice/bin/tap.sh
gv=/opt/sluice/gv
out=/tmp/gv

[ -d $gv/bin ] && [ -x /usr/bin/bash ] || skip_all "no gVisor binaries (GVISOR_BIN on the host)"
lsmod | grep -q '^sluice ' || insmod /lib/modules/sluice.ko
feat=$(sed -n 's/.*features 0x\([0-9a-f]*\).*/\1/p' /sys/kernel/debug/sluice/info | head -n 1)
[ $(( 0x${feat:-0} & 0x81 )) = $((0x81)) ] || skip_all "module features 0x$feat lack stacks or socket fds"
# SOCK_FD calls so far: each Sluice socket of a run is a module socket fd.
sockfds() { sed -n 's/^ioctl_sock_fd calls \([0-9]*\) .*/\1/p' /sys/kernel/debug/sluice/info; }
rm -rf /dev/shm/sluice* $out
mkdir -p $out
fd0=$(sockfds)
t0=$(date +%s)
# The runner's lines as they come (a line a case, --each, and a binary's
# line when it is done), so a run cut short by the VM's time limit, or
# stopped on the host, still shows every case it finished: awk flushes
# each line (busybox sed wrote them in blocks, and a run stopped lost the
# last block).
# shellcheck disable=SC2046 # the runner's arguments, one a line
bash $gv/tests/conformance/gvisor.sh --module --sluice /opt/sluice/bin/sluice \
	--bindir $gv/bin --results $out/results.txt --outdir $out/out \
	--timeout "${GVISOR_VM_TIMEOUT:-60}" --each $(cat $gv/args) 2>&1 |
	awk '{ print "# " $0; fflush() }'
echo "# runner done, $(($(date +%s) - t0)) s"
fd1=$(sockfds)
want=$(cat $gv/count)
got=$(wc -l <$out/results.txt)
check "all $want cases ran ($got)" [ "$got" = "$want" ]
check "Sluice's sockets were module socket fds (SOCK_FD calls ${fd0:-?} -> ${fd1:-?})" \
	[ "${fd1:-0}" -gt "${fd0:-0}" ]
while read -r b c k s; do
	if [ "$s" = pass ]; then
		tap ok "$b $c"
	elif [ "$k" != pass ]; then
		tap ok "$b $c # SKIP the kernel does not pass it either ($k; sluice $s)"
	else
		tap fail "$b $c: kernel pass, sluice $s"
		f=$out/out/$b/$(echo "$c" | tr / _).txt
		[ ! -f "$f" ] || tail -n 30 "$f" | sed 's/^/#   /'
	fi
done <$out/results.txt
check "no stack fell back to /dev/shm" [ -z "$(ls /dev/shm/ | grep '^sluice-')" ]
rmmod sluice && tap ok "module unloads: no stack, fd or mapping left" ||
	tap fail "module unloads: no stack, fd or mapping left"
echo "1..$n"
exit $fail
