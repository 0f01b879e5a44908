#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Boot Debian kernels under QEMU (software emulation) with sluice.ko and the
# kernel-side tests in an initramfs, and bring back their results as TAP.
#
#   tests/vm/run.sh                    every installed kernel series (newest of each)
#   tests/vm/run.sh --kernel VERSION   just that kernel (repeatable)
#   tests/vm/run.sh --demo             load the module and show what it reports
#   tests/vm/run.sh --bench NAME       run tests/vm/bench_NAME.sh in the VM and
#                                      print its output (a benchmark, not a test)
#   tests/vm/run.sh --list             print the kernels that would be used
#
# Per kernel it checks that sluice.ko builds warning-free against that
# kernel's headers, boots, runs every suite in tests/vm/suites, and that
# the kernel log has no warning, BUG or oops.  Output is one TAP stream;
# the exit status is 0 only if every check passed.  Work files go to
# build/vm/VERSION/ (console.log, results.log, the initramfs tree).
#
# Environment: SLUICE_VM_TIMEOUT (seconds per boot, default 1500),
# SLUICE_VM_MEM (MiB, default 1024), SLUICE_VM_ONLY (run just that suite,
# or those suites: names separated by spaces),
# SLUICE_SEED (passed to the suites, for hostile.sh's replays),
# SLUICE_VM_JOBS (1: the kernels one after the other; default 2, at once).  A suite
# listed "#only NAME ..." in tests/vm/suites runs only when SLUICE_VM_ONLY
# names it (gvisor: GVISOR_BIN, GVISOR_VM_SUBSET, GVISOR_VM_BINARIES,
# GVISOR_VM_JOBS, as add_gvisor() below says; `make conformance-vm`).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"

timeout_s=${SLUICE_VM_TIMEOUT:-1500}
mem=${SLUICE_VM_MEM:-1024}
kernels=()
mode=test

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernels+=("$2"); shift 2 ;;
	--demo) mode=demo; shift ;;
	--bench) mode=bench; bench=$2; shift 2
		[ -f "tests/vm/bench_$bench.sh" ] || { echo "run.sh: no tests/vm/bench_$bench.sh" >&2; exit 2; } ;;
	--list) mode=list; shift ;;
	-h|--help) sed -n '3,20p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

# Kernels that can be booted and built against: a vmlinuz and headers.
# The newest of each major.minor series.
installed_kernels() {
	local d v
	for d in /lib/modules/*; do
		v=${d##*/}
		[ -e "$d/build/Makefile" ] && [ -e "/boot/vmlinuz-$v" ] && echo "$v"
	done | sort -V | awk -F. '{ s = $1 "." $2; last[s] = $0 }
		END { for (s in last) print last[s] }' | sort -V
}

[ ${#kernels[@]} -gt 0 ] || mapfile -t kernels < <(installed_kernels)
if [ "$mode" = list ]; then
	printf '%s\n' "${kernels[@]}"
	exit 0
fi
if [ ${#kernels[@]} = 0 ]; then
	echo "run.sh: no kernel with headers installed: run tests/vm/deps.sh" >&2
	exit 1
fi
[ "$mode" = demo ] || [ "$mode" = bench ] && kernels=("${kernels[0]}")

make -s -j2 all >&2

tap_n=0
tap_fail=0
tap() { # tap STATUS DESCRIPTION [DIRECTIVE]
	tap_n=$((tap_n + 1))
	if [ "$1" = ok ]; then
		echo "ok $tap_n - $2${3:+ # $3}"
	else
		echo "not ok $tap_n - $2"
		tap_fail=$((tap_fail + 1))
	fi
}

# Copy a program and the shared libraries it needs into the tree.
add_binary() { # add_binary ROOT FILE DESTDIR
	local root=$1 file=$2 dest=$3 lib
	install -D -m 0755 "$file" "$root$dest/${file##*/}"
	for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$root$lib" ] || install -D -m 0755 "$lib" "$root$lib"
	done
}

# Copy kernel modules and their dependencies, decompressed, and list them
# in load order in etc/sluice/kmods.
add_kmods() { # add_kmods ROOT VERSION MODULE...
	local root=$1 ver=$2 m path dep
	shift 2
	for m in "$@"; do
		grep -qx "/lib/modules/kmod/$m.ko" "$root/etc/sluice/kmods" 2>/dev/null && continue
		path=$(modinfo -k "$ver" -n "$m")
		[ "$path" = "(builtin)" ] && continue
		for dep in $(modinfo -k "$ver" -F depends "$m" | tr , ' '); do
			add_kmods "$root" "$ver" "$dep"
		done
		mkdir -p "$root/lib/modules/kmod"
		case $path in
		*.xz) xz -dc "$path" >"$root/lib/modules/kmod/$m.ko" ;;
		*.zst) zstd -dqc "$path" >"$root/lib/modules/kmod/$m.ko" ;;
		*) cp "$path" "$root/lib/modules/kmod/$m.ko" ;;
		esac
		echo "/lib/modules/kmod/$m.ko" >>"$root/etc/sluice/kmods"
	done
}

# Copy one kernel module, decompressed, to lib/modules/kmod without
# listing it for loading at boot.
add_kfile() { # add_kfile ROOT VERSION MODULE
	local path
	path=$(modinfo -k "$2" -n "$3") || return 0
	[ "$path" = "(builtin)" ] && return 0
	mkdir -p "$1/lib/modules/kmod"
	case $path in
	*.xz) xz -dc "$path" >"$1/lib/modules/kmod/$3.ko" ;;
	*.zst) zstd -dqc "$path" >"$1/lib/modules/kmod/$3.ko" ;;
	*) cp "$path" "$1/lib/modules/kmod/$3.ko" ;;
	esac
}

# gVisor's socket tests (tests/vm/gvisor.sh): the binaries of the cases
# to run, bash and the runner, in /opt/sluice/gv.  The binaries are
# GVISOR_BIN's, else build/conformance's; the cases GVISOR_VM_SUBSET's
# (lines "BINARY CASE"), or every case of the binaries GVISOR_VM_BINARIES
# names; GVISOR_VM_JOBS=2 runs two cases at a time (the guest has two
# CPUs).  With no binaries nothing is copied and the suite skips.
add_gvisor() { # add_gvisor ROOT
	local root=$1 gv=$1/opt/sluice/gv bin b
	bin=${GVISOR_BIN:-build/conformance}
	[ -x "$bin/tcp_socket_test" ] || return 0
	mkdir -p "$gv/bin" "$gv/tests/conformance"
	if [ -n "${GVISOR_VM_BINARIES:-}" ]; then
		for b in $GVISOR_VM_BINARIES; do
			"$bin/$b" --gtest_list_tests | awk -v b="$b" '
				/^[^ ]/ { suite = $1; next }
				/^  / { print b, suite $1 }' | grep -v DISABLED_
		done
	else
		grep -v '^#' "${GVISOR_VM_SUBSET:-tests/conformance/subset.txt}" | grep .
	fi >"$gv/subset.txt"
	for b in $(awk '{ print $1 }' "$gv/subset.txt" | sort -u); do
		add_binary "$root" "$bin/$b" /opt/sluice/gv/bin
	done
	echo "--subset /opt/sluice/gv/subset.txt${GVISOR_VM_JOBS:+ --jobs $GVISOR_VM_JOBS}" >"$gv/args"
	wc -l <"$gv/subset.txt" >"$gv/count"
	cp tests/conformance/gvisor.sh tests/conformance/gvisor.mk "$gv/tests/conformance/"
	add_binary "$root" /usr/bin/bash /usr/bin
}

run_kernel() { # run_kernel VERSION
	local ver=$1 work="build/vm/$1" root src log rc=0 line kmods=()
	root="$work/root"
	src="$work/src"
	rm -rf "$work"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc/sluice,lib/modules,opt/sluice/bin} "$src"

	# Build the module out of the tree so each kernel has its own objects.
	cp -r Kbuild kernel include "$src/"
	log="$work/module-build.log"
	if ! make -C "/lib/modules/$ver/build" M="$top/$src" modules >"$log" 2>&1; then
		tap fail "$ver: sluice.ko builds"
		sed 's/^/# /' "$log"
		return 1
	fi
	tap ok "$ver: sluice.ko builds"
	if grep -E 'warning:|error:' "$log" >/dev/null; then
		tap fail "$ver: sluice.ko builds without warnings"
		grep -E 'warning:|error:' "$log" | sed 's/^/# /'
	else
		tap ok "$ver: sluice.ko builds without warnings"
	fi
	cp "$src/sluice.ko" "$root/lib/modules/sluice.ko"
	# The IPoIB-like test device the fakeib suite loads (tests/vm/fakeib).
	mkdir -p "$work/fakeib"
	cp tests/vm/fakeib/Kbuild tests/vm/fakeib/fakeib.c "$work/fakeib/"
	log="$work/fakeib-build.log"
	if make -C "/lib/modules/$ver/build" M="$top/$work/fakeib" modules >"$log" 2>&1 &&
		! grep -E 'warning:|error:' "$log" >/dev/null; then
		tap ok "$ver: fakeib.ko builds without warnings"
		cp "$work/fakeib/fakeib.ko" "$root/lib/modules/fakeib.ko"
	else
		tap fail "$ver: fakeib.ko builds without warnings"
		grep -E 'warning:|error:' "$log" | sed 's/^/# /'
	fi

	install -m 0755 /bin/busybox "$root/bin/busybox"
	install -m 0755 tests/vm/init.sh "$root/init"
	add_binary "$root" build/tools/sluice /opt/sluice/bin
	add_binary "$root" build/tests/interop/mkstack /opt/sluice/bin
	# iproute2 for the kring tests' veth pairs and namespaces (busybox's
	# ip cannot make veth); called by full path, busybox prefers its own.
	add_binary "$root" /usr/sbin/ip /usr/sbin
	for t in build/tests/kselftest/*; do
		add_binary "$root" "$t" /opt/sluice/bin
	done
	cp tests/vm/demo.sh "$root/opt/sluice/bin/demo.sh"
	# A bench's BENCH_* settings go in with it (the guest has no
	# environment of ours): one "NAME='VALUE'" line each, then the script.
	[ "$mode" = bench ] && {
		for v in ${!BENCH_@}; do printf "%s='%s'\n" "$v" "${!v}"; done
		cat "tests/vm/bench_$bench.sh"
	} >"$root/opt/sluice/bin/bench.sh" &&
		cp tests/bench/median_ratio.awk "$root/opt/sluice/bin/"
	# ethtool: bench_lossy.sh's BENCH_OFFLOAD=off.
	[ "$mode" = bench ] && [ -x /usr/sbin/ethtool ] && add_binary "$root" /usr/sbin/ethtool /usr/sbin
	# TAP helpers the suites source.
	cp tests/vm/tap.sh "$root/opt/sluice/bin/tap.sh"
	# The kring interop suite: both peers, and iproute2 and tc, which
	# busybox's ip and tc cannot stand in for (veth, netns, netem).
	cp tests/vm/kring.sh "$root/opt/sluice/bin/kring.sh"
	add_binary "$root" build/tests/interop/kring_peer /opt/sluice/bin
	add_binary "$root" build/tests/interop/kpeer /opt/sluice/bin
	# Hostile shared memory and process death on module stacks.
	cp tests/vm/hostile.sh "$root/opt/sluice/bin/hostile.sh"
	# Long transfers through netem (lossy.sh, its topology in netns.sh).
	cp tests/vm/lossy.sh tests/vm/netns.sh "$root/opt/sluice/bin/"
	add_binary "$root" build/tests/interop/scribble /opt/sluice/bin
	add_binary "$root" "$(readlink -f /usr/sbin/ip)" /usr/sbin
	[ -x /usr/sbin/tc ] && add_binary "$root" /usr/sbin/tc /usr/sbin
	# Programs under sluice run on a kring stack (run_kring.sh): the
	# preload library, and the programs with their libraries.
	cp tests/vm/run_kring.sh "$root/opt/sluice/bin/run_kring.sh"
	# IPv6 there (run_kring6.sh): the same echo program on both sides.
	cp tests/vm/run_kring6.sh tests/vm/v6_lib.sh tests/vm/route6.sh tests/vm/pmtu.sh "$root/opt/sluice/bin/"
	add_binary "$root" build/tests/preload/v6echo /opt/sluice/bin
	cp tests/vm/ipoib_lib.sh tests/vm/ipoib_real.sh tests/vm/ipoib_modes.sh tests/vm/ipoib_enh.sh tests/vm/ipoib6.sh \
		tests/vm/ipoib_user.sh tests/vm/ipoib_gone.sh "$root/opt/sluice/bin/"
	# ipoib_user.sh gives a copy of the tool file capabilities.
	[ -x /usr/sbin/setcap ] && add_binary "$root" /usr/sbin/setcap /opt/sluice/libcap
	add_binary "$root" build/libsluice-preload.so /opt/sluice
	add_binary "$root" build/tests/preload/fork_srv /opt/sluice/bin
	# Live hand-off to the kernel (handoff.sh), and ss to show it.
	cp tests/vm/handoff.sh "$root/opt/sluice/bin/handoff.sh"
	add_binary "$root" build/tests/preload/handoff_prog /opt/sluice/bin
	add_binary "$root" build/tests/preload/exec_keep /opt/sluice/bin
	# Raw system calls on a stack socket's fd (rawcalls.sh).
	cp tests/vm/rawcalls.sh "$root/opt/sluice/bin/rawcalls.sh"
	add_binary "$root" build/tests/preload/rawcalls /opt/sluice/bin
	[ -x /usr/bin/ss ] && add_binary "$root" /usr/bin/ss /usr/bin
	# Socket fds under sluice run (sockfd.sh).
	cp tests/vm/sockfd.sh "$root/opt/sluice/bin/sockfd.sh"
	add_binary "$root" build/tests/preload/sockfd_prog /opt/sluice/bin
	add_binary "$root" build/tests/preload/twin_echo /opt/sluice/bin
	add_binary "$root" build/tests/preload/resv_hold /opt/sluice/bin
	add_binary "$root" build/tests/preload/share_rx /opt/sluice/bin
	add_binary "$root" build/tests/preload/close_blocked /opt/sluice/bin
	add_binary "$root" build/tests/preload/tcpopts /opt/sluice/bin
	add_binary "$root" build/tests/preload/conform /opt/sluice/bin
	add_binary "$root" build/tests/preload/udp_autobind /opt/sluice/bin
	add_binary "$root" build/tests/preload/handover /opt/sluice/bin
	# Timers while the program is away (away.sh).
	cp tests/vm/away.sh "$root/opt/sluice/bin/away.sh"
	add_binary "$root" build/tests/preload/timers_away /opt/sluice/bin
	add_binary "$root" build/tests/bench/conn_churn /opt/sluice/bin
	add_binary "$root" build/tests/preload/sockcache /opt/sluice/bin
	for b in curl iperf3; do
		if command -v "$b" >/dev/null; then
			add_binary "$root" "$(command -v "$b")" /usr/bin
		fi
	done
	# The stack's own tests, run again on module-backed regions.
	cp tests/vm/lib_on_module.sh "$root/opt/sluice/bin/lib_on_module.sh"
	for t in $(sed -n 's/^for t in \(.*\); do$/\1/p' tests/vm/lib_on_module.sh); do
		add_binary "$root" "build/tests/unit/$t" /opt/sluice/bin
	done
	# The verbs link over Soft-RoCE: the test, rdma-core's rxe provider,
	# and iproute2's rdma and tc.
	cp tests/vm/verbs.sh "$root/opt/sluice/bin/verbs.sh"
	add_binary "$root" build/tests/interop/verbs_peer /opt/sluice/bin
	add_binary "$root" /usr/bin/rdma /usr/bin
	# run_kring.sh drops CAP_IPC_LOCK from root with util-linux's setpriv
	# (busybox's has no --bounding-set), kept apart from busybox's applets.
	add_binary "$root" /usr/bin/setpriv /opt/sluice/util-linux
	add_binary "$root" /usr/sbin/tc /usr/sbin
	add_binary "$root" /usr/bin/ibv_devinfo /usr/bin
	add_binary "$root" /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so \
		/usr/lib/x86_64-linux-gnu/libibverbs
	install -D -m 0644 /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/rxe.driver"
	if [ "$mode" = demo ] || [ "$mode" = bench ]; then
		echo "$mode sh /opt/sluice/bin/$mode.sh" >"$root/etc/sluice/suites"
		[ "$mode" = bench ] &&
			mapfile -t kmods < <(sed -n 's/^# kmods: *//p' "tests/vm/bench_$bench.sh" | tr ' ' '\n' | grep .)
	else
		# One suite per line: NAME COMMAND..., and the modules it needs;
		# a line "#only NAME COMMAND..." only when SLUICE_VM_ONLY names it.
		sed 's/^#only //' tests/vm/suites | grep -v '^#' | grep . |
			awk -v only="${SLUICE_VM_ONLY:-}" -v seed="${SLUICE_SEED:-}" \
				-v ondemand="$(sed -n 's/^#only \([^ ]*\) .*/\1/p' tests/vm/suites)" '
				BEGIN { split(ondemand, od, "\n"); for (i in od) req[od[i]] = 1
					split(only, ol, " "); for (i in ol) want[ol[i]] = 1 }
				(only == "" && !($1 in req)) || $1 in want {
					# SLUICE_SEED replays a seeded suite (hostile.sh)
					if (seed != "") { $1 = $1 " env SLUICE_SEED=" seed }
					print
				}' >"$root/etc/sluice/suites"
		mapfile -t kmods < <(sed -n 's/^# kmods: *//p' tests/vm/suites | tr ' ' '\n' | grep .)
	fi
	cp tests/vm/gvisor.sh "$root/opt/sluice/bin/gvisor.sh"
	if grep -q '^gvisor ' "$root/etc/sluice/suites"; then add_gvisor "$root"; fi
	# sluice.ko needs ib_core (the ib_client, SA path records): loaded
	# first in every run, the demo's too.
	kmods=(ib_core "${kmods[@]}")
	add_kmods "$root" "$ver" "${kmods[@]}"
	# Modules a suite loads itself, copied but not loaded at boot (lines
	# "# kfiles: NAME..." in tests/vm/suites): ib_ipoib, whose link kind
	# fakeib's own interfaces take in another suite.
	local kf
	for kf in $(sed -n 's/^# kfiles: *//p' tests/vm/suites); do
		add_kfile "$root" "$ver" "$kf"
	done

	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

	echo "# booting $ver under QEMU (TCG)" >&2
	local t0=$SECONDS
	timeout "$timeout_s" qemu-system-x86_64 -accel tcg,thread=multi -smp 2 -m "$mem" \
		-display none -monitor none -no-reboot \
		-kernel "/boot/vmlinuz-$ver" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 quiet panic=-1 oops=panic" \
		-serial "file:$work/console.log" -serial "file:$work/results.log" \
		</dev/null >"$work/qemu.log" 2>&1 || rc=$?
	echo "# $ver: VM ran $((SECONDS - t0)) s, qemu exit $rc" >&2

	if [ "$mode" = demo ] || [ "$mode" = bench ]; then
		sed -n "/^### BEGIN $mode/,/^### END $mode/p" "$work/results.log" | sed '1d;$d;/^### TIME /d' | tr -d '\r'
		grep -q "^### END $mode 0" "$work/results.log"
		return
	fi

	if ! grep -q '^### DONE' "$work/results.log"; then
		tap fail "$ver: VM ran to the end (qemu exit $rc, see $work/console.log)"
		tail -n 30 "$work/console.log" | sed 's/^/# /'
	else
		tap ok "$ver: VM ran to the end"
	fi
	grep '^### KMOD-FAILED' "$work/results.log" | while read -r _ _ m; do
		echo "# failed to load $m"
	done

	# Re-emit every guest TAP result under one numbering.
	local suite="" s_rc
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		"### BEGIN "*) suite=${line#\#\#\# BEGIN } ;;
		"### TIME "*) echo "# $ver: $suite: ${line##* } s in the guest" ;;
		"### END "*)
			s_rc=${line##* }
			if [ "$s_rc" = 0 ]; then tap ok "$ver: $suite: exit status"
			else tap fail "$ver: $suite: exit status $s_rc"; fi
			suite="" ;;
		"### DMESG") break ;;
		"ok "*|"not ok "*)
			[ -n "$suite" ] || continue
			local st=ok rest=${line#ok } dir=""
			case $line in "not ok "*) st=fail; rest=${line#not ok } ;; esac
			rest=${rest#* }   # drop the guest's number
			rest=${rest#- }
			case $rest in *"# SKIP"*) dir="SKIP ${rest#*# SKIP}"; rest=${rest%% # SKIP*} ;; esac
			tap "$st" "$ver: $suite: $rest" "$dir" ;;
		"#"*) [ -n "$suite" ] && echo "$line" ;;
		esac
	done <"$work/results.log"

	local bad
	bad=$(sed -n '/^### DMESG/,/^### DONE/p' "$work/results.log" "$work/console.log" |
		grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|refcount_t:|KASAN|UBSAN' || true)
	if [ -n "$bad" ]; then
		tap fail "$ver: kernel log has no warnings or oopses"
		echo "$bad" | head -n 40 | sed 's/^/# /'
	else
		tap ok "$ver: kernel log has no warnings or oopses"
	fi
}

status=0
if [ "$mode" = test ] && [ ${#kernels[@]} -gt 1 ] && [ "${SLUICE_VM_JOBS:-2}" -gt 1 ]; then
	# The kernels' VMs at once (SLUICE_VM_JOBS=1: one after the other).
	# A guest rarely keeps both its vCPUs busy (boots, waits, one-sided
	# suites), so two VMs on 2 host cores end sooner than one then the
	# other; TCG's times mean nothing either way.  Each kernel's TAP is
	# kept apart and printed in order, numbered as one.
	mkdir -p build/vm
	for k in "${kernels[@]}"; do
		( tap_n=0 tap_fail=0 rc=0
		  run_kernel "$k" || rc=1
		  echo "### rc $rc" ) >"build/vm/$k.tap" 2>"build/vm/$k.err" &
	done
	wait
	for k in "${kernels[@]}"; do
		cat "build/vm/$k.err" >&2
		grep -q '^### rc 0$' "build/vm/$k.tap" || status=1
		while IFS= read -r line; do
			case $line in
			"### rc "*) ;;
			"ok "*) tap ok "${line#ok [0-9]* - }" ;;
			"not ok "*) tap fail "${line#not ok [0-9]* - }" ;;
			*) echo "$line" ;;
			esac
		done <"build/vm/$k.tap"
	done
else
	for k in "${kernels[@]}"; do
		run_kernel "$k" || status=1
	done
fi
{ [ "$mode" = demo ] || [ "$mode" = bench ]; } && exit $status
echo "1..$tap_n"
[ "$tap_fail" = 0 ] && [ $status = 0 ]
