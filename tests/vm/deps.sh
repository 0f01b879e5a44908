#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Install what building and testing Sluice needs on Debian 12, only when it
# is missing: the toolchain, the kernel images and headers the VM suite boots
# (Debian's default 6.1 series and the newest complete 6.12 series), QEMU,
# busybox, the kselftest harness (linux-source-6.1) and the user-space
# libraries (rdma-core, liburcu), clang-14 with libFuzzer for the fuzz
# targets (make fuzz), and the programs the preload tests run under
# sluice run (curl, python3, sockperf, iperf3, redis, nginx, wrk), man
# and groff for the man page test (tests/host/test_man.sh), dpkg-dev and
# lintian for make deb (tests/host/test_deb.sh), debootstrap for the guest
# that installs the packages (tests/vm/deb.sh), and the Prometheus client
# library whose parser reads sluice metrics (tests/host/test_json_metrics.sh).
#
#   tests/vm/deps.sh            install everything
#   tests/vm/deps.sh --print    print the kernel versions that would be used
set -euo pipefail

apt_updated=0
apt_update() {
	if [ "$apt_updated" = 0 ]; then
		apt-get update -qq
		apt_updated=1
	fi
}

need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ "${#missing[@]}" = 0 ] && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages: ${missing[*]} (run as root to install)" >&2
		exit 1
	fi
	apt_update
	echo "deps: installing ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >&2
}

# The newest 6.12 ABI for which both an image and its headers are published.
newest_612() {
	local n
	apt_update
	for n in $(apt-cache pkgnames linux-headers-6.12. 2>/dev/null |
		sed -n 's/^linux-headers-6\.12\.\([0-9]*\)+deb12-amd64$/\1/p' | sort -rn); do
		if apt-cache show "linux-image-6.12.$n+deb12-amd64-unsigned" >/dev/null 2>&1; then
			echo "6.12.$n+deb12-amd64"
			return 0
		fi
	done
	return 1
}

# An installed 6.12 kernel with headers, if one is already there.
installed_612() {
	local d v
	for d in /lib/modules/6.12.*-amd64; do
		[ -e "$d/build/Makefile" ] || continue
		v=${d##*/}
		[ -e "/boot/vmlinuz-$v" ] && echo "$v"
	done | sort -V | tail -n 1
}

base=(build-essential make gcc pkg-config kmod cpio xz-utils perl
	qemu-system-x86 busybox-static iproute2
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	libibverbs-dev librdmacm-dev rdma-core ibverbs-providers ibverbs-utils liburcu-dev
	dkms openssl clang-14 libfuzzer-14-dev
	curl python3 sockperf iperf3 redis-server nginx wrk
	man-db groff-base strace openssh-server
	dpkg-dev lintian python3-prometheus-client debootstrap e2fsprogs
	libpcap-dev tcpdump libcap2-bin)

if [ "${1:-}" = --print ]; then
	installed_612
	exit 0
fi

need_pkgs "${base[@]}"

v612=$(installed_612)
if [ -z "$v612" ]; then
	v612=$(newest_612) || { echo "deps: no 6.12 kernel with headers found in apt" >&2; exit 1; }
	need_pkgs "linux-image-$v612-unsigned" "linux-headers-$v612"
fi

# The kselftest harness headers come from the kernel source package.
if [ ! -e /usr/src/linux-source-6.1/tools/testing/selftests/kselftest_harness.h ]; then
	echo "deps: unpacking kselftest headers from linux-source-6.1" >&2
	tar -C /usr/src -xJf /usr/src/linux-source-6.1.tar.xz \
		linux-source-6.1/tools/testing/selftests \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
fi
