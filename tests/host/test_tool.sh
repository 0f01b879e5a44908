#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The sluice command on the host, where the module is not loaded.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice

out=$("$sluice" version)
check "sluice version prints the library version" [ "$out" = "sluice 0.1.0 (ABI 3)" ]

"$sluice" >/dev/null 2>&1
check "no command is a usage error (exit 2)" [ $? = 2 ]
err=$("$sluice" frobnicate 2>&1 >/dev/null)
rc=$?
check "an unknown command exits 2" [ $rc = 2 ]
check "an unknown command is named in the error" grep -q "unknown command 'frobnicate'" <<<"$err"
"$sluice" help | grep -q '^  info'
check "help lists the info command" [ $? = 0 ]

if [ -e /dev/sluice ]; then
	skip "info without the module says it is not loaded" "/dev/sluice exists here"
else
	err=$("$sluice" info 2>&1 >/dev/null)
	rc=$?
	check "info without the module exits 1" [ $rc = 1 ]
	check "info without the module says it is not loaded" \
		grep -q 'the sluice module is not loaded' <<<"$err"
fi

# stacks and dump, on a stack left in /dev/shm by tests/interop/mkstack
name=t-tool-$$
rm -f "/dev/shm/sluice-$name"
if "$top/build/tests/interop/mkstack" "$name"; then
	out=$("$sluice" stacks)
	check "stacks lists the new stack as ready, in /dev/shm" grep -qE "^$name +ready +shm +3/16" <<<"$out"
	out=$("$sluice" dump "$name")
	check "dump shows the address" grep -q "stack $name: ready, 10.7.0.1/255.255.255.0" <<<"$out"
	check "dump shows the bound UDP socket with a datagram queued" \
		grep -qE "udp +- +10\.7\.0\.1:5353 +0\.0\.0\.0:0 +5 " <<<"$out"
	check "dump shows the TCP listener" grep -qE "tcp +LISTEN +0\.0\.0\.0:8080" <<<"$out"
	check "dump shows the listener's queues" grep -q "accept queue 0, SYN queue 0/" <<<"$out"
	check "dump shows counters with their meaning" \
		grep -qE "udp_rx +2  UDP datagrams received" <<<"$out"
	check "dump shows loopback traffic" grep -qE "loopback +2 " <<<"$out"
	# A region someone scribbled on is refused, not trusted.
	printf 'garbage!' | dd of="/dev/shm/sluice-$name" bs=1 seek=0 conv=notrunc 2>/dev/null
	err=$("$sluice" dump "$name" 2>&1 >/dev/null)
	check "dump of a corrupted region says it is not a valid stack (exit 1)" \
		grep -q "not a valid Sluice stack" <<<"$err"
	out=$("$sluice" stacks)
	check "stacks marks the corrupted region invalid" grep -qE "^$name +invalid" <<<"$out"
	# sluice run on it (as after an upgrade, the old stack left in
	# /dev/shm): refused, with what to do, not a bare "Protocol error".
	err=$(timeout 20 "$sluice" run --stack "$name" -- true 2>&1)
	check "run on it exits 1 ($?)" [ $? = 1 ]
	check "run on it says what to remove or to name another stack" \
		grep -q "remove /dev/shm/sluice-$name .*--stack" <<<"$err"
	rm -f "/dev/shm/sluice-$name"
else
	fail "mkstack creates a stack"
fi
err=$("$sluice" dump no-such-stack-$$ 2>&1 >/dev/null)
check "dump of a missing stack says so" grep -q "No such file or directory" <<<"$err"
done_testing
