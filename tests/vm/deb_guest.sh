#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# /init of the Debian guest of tests/vm/deb.sh (run as PID 1 by the kernel,
# init=): install the three packages with dpkg (sluice-dkms's postinst lets
# DKMS build the module for this kernel, here, under QEMU), start udev,
# load the module, check /dev/sluice is root:sluice 0660, then as alice
# (in group sluice, not root) run a Perl TCP ping-pong on a module stack
# under `sluice run` and look at it with `sluice stacks --json`; bob (not
# in the group) is refused /dev/sluice.  TAP goes to the second serial
# port (/dev/ttyS1); everything else to the console.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C.UTF-8 HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/shm /dev/pts /run
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -o remount,rw /
exec 3>/dev/ttyS1
n=0
ok() { n=$((n + 1)); echo "ok $n - $*" >&3; }
notok() { n=$((n + 1)); echo "not ok $n - $*" >&3; }
check() { d=$1; shift; if "$@"; then ok "$d"; else notok "$d"; fi; }
# has TEXT PATTERN: a line of TEXT matches PATTERN (grep -E)
has() { printf '%s\n' "$1" | grep -qE "$2"; }
log=/opt/sluice/log
mkdir -p $log
k=$(uname -r)

dpkg -i /opt/sluice/debs/*.deb >$log/dpkg.txt 2>&1
check "dpkg -i installs sluice, libsluice-dev and sluice-dkms on $k" [ $? = 0 ]
check "the group sluice exists (sluice's postinst)" getent group sluice
check "DKMS built and installed sluice for $k" \
	sh -c "dkms status -m sluice -k $k 2>/dev/null | grep -q installed"
check "the module is where modprobe finds it" sh -c "modinfo -n sluice >/dev/null 2>&1"
check "sluice-dkms's postinst loaded it" sh -c "grep -q '^sluice ' /proc/modules"

/lib/systemd/systemd-udevd --daemon >$log/udevd.txt 2>&1
modprobe sluice >$log/modprobe.txt 2>&1
check "modprobe sluice" [ $? = 0 ]
udevadm trigger --action=add >/dev/null 2>&1
udevadm settle --timeout=30
mode=$(stat -c '%U:%G %a' /dev/sluice 2>&1)
check "/dev/sluice is root:sluice 660 by the udev rule ($mode)" [ "$mode" = "root:sluice 660" ]

useradd -m -G sluice alice
useradd -m bob
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --init-groups env HOME="/home/$u" "$@"; }
out=$(as alice sluice info 2>&1)
check "alice (group sluice) asks the module: sluice info exits 0" [ $? = 0 ]
echo "$out" >$log/info-alice.txt
out=$(as bob sluice info 2>&1)
rc=$?
echo "$out" >$log/info-bob.txt
check "bob (not in the group): sluice info exits 1" [ "$rc" = 1 ]
check "bob is told /dev/sluice refused him and how to get it" has "$out" "sluice: .*Permission denied .*group sluice.*adduser"
out=$(as bob sluice run --interface lo -- true 2>&1)
rc=$?
echo "$out" >$log/run-bob.txt
check "bob's sluice run --interface exits 1 and says which group he lacks (exit $rc)" \
	has "$rc $out" "^1 sluice run: .*Permission denied: a member of group sluice"


# A TCP ping-pong on the stack's loopback, in one Perl process under
# sluice run; while it holds the stack (a module stack goes with its last
# process) it asks sluice stacks and dump, as JSON.
cat >/tmp/pp.pl <<'EOP'
use strict;
use IO::Socket::INET;
my $l = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 7200, Listen => 4,
	ReuseAddr => 1) or die "listen: $!";
my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => 7200) or die "connect: $!";
my $s = $l->accept or die "accept: $!";
my ($buf, $got) = ("", 0);
for my $i (1 .. 100) {
	my $m = sprintf("%04d", $i) x 250;
	$c->syswrite($m) == 1000 or die "send: $!";
	my $r = "";
	while (length($r) < 1000) { $s->sysread($buf, 1000 - length($r)) or die "recv: $!"; $r .= $buf; }
	$s->syswrite($r);
	$r = "";
	while (length($r) < 1000) { $c->sysread($buf, 1000 - length($r)) or die "recv: $!"; $r .= $buf; }
	$got++ if $r eq $m;
}
print "pingpong $got\n";
system("sluice stacks --json");
system("sluice dump --json sluice-$<");
system("sluice metrics");
EOP
# A small stack, under the default RLIMIT_MEMLOCK, so the module holds it.
out=$(as alice env SLUICE_MAX_SOCKETS=64 SLUICE_BUFS=512 timeout 120 sluice run -- \
	perl /tmp/pp.pl 2>&1)
echo "$out" >$log/run-alice.txt
check "alice runs a Perl TCP ping-pong under sluice run: 100 of 100 round trips" \
	has "$out" '^pingpong 100$'
check "its stack is held by the module (sluice stacks --json: where module)" \
	has "$out" '"name":"sluice-1000","state":"ready","where":"module"'
lb=$(echo "$out" | grep -o '"loopback":[0-9]*' | head -n 1 | cut -d: -f2)
check "and its loopback carried the traffic (loopback counter ${lb:-?})" [ "${lb:-0}" -ge 200 ]
check "sluice metrics shows the module stack" \
	has "$out" '^sluice_stack_state\{stack="sluice-1000",where="module",state="ready"\} 1$'
check "with its TCP traffic counted" has "$out" '^sluice_tcp_rx_total\{stack="sluice-1000"\} [1-9][0-9]{2,}$'
check "and the metrics end with # EOF" has "$out" '^# EOF$'

echo "1..$n" >&3
for f in $log/*.txt; do echo "== $f"; tail -n 20 "$f"; done
sync
# minbase has no poweroff(8): the kernel's own (sysrq o).
echo o >/proc/sysrq-trigger
sleep 30
