#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The Debian packages on a fresh Debian 12 guest (issue 21 item 2):
#
#   host: make deb --------------------+  build/deb/out/*.deb
#   host: debootstrap bookworm (minbase, once, kept in /var/tmp/sluice-debroot)
#         + udev, kmod, dkms, linux-image-K, linux-headers-K (apt in a chroot)
#         + the three .deb and tests/vm/deb_guest.sh  -> ext4 image
#   QEMU: the guest's own vmlinuz-K and initrd.img-K, root on virtio, init=
#         deb_guest.sh: dpkg -i (DKMS builds sluice.ko in the guest),
#         udev, modprobe, /dev/sluice root:sluice 0660, alice (group
#         sluice) runs a program under sluice run on a module stack,
#         bob (no group) is refused
#
#   tests/vm/deb.sh [--kernel VERSION]   (default: the 6.1 series, Debian 12's)
# Needs root (debootstrap, chroot), network for the first debootstrap and
# apt, and a few minutes: DKMS compiles the module under TCG. Prints TAP.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1

k=
[ "${1:-}" = --kernel ] && k=$2
[ -n "$k" ] || k=$(bash tests/vm/run.sh --list | head -n 1)
work=build/vm/deb-$k
# Not under build/: the Makefile includes every *.d file there, and a
# Debian root has some (invoke-rc.d).
root=${SLUICE_DEB_ROOT:-/var/tmp/sluice-debroot}
n=0
say() { n=$((n + 1)); echo "$1 $n - $2"; }
die() {
	say "not ok" "$1"
	[ -n "${2:-}" ] && tail -n 20 "$2" | sed 's/^/# /'
	echo "1..$n"
	exit 1
}
for t in debootstrap qemu-system-x86_64 mkfs.ext4 chroot; do
	command -v "$t" >/dev/null || die "$t is installed (tests/vm/deps.sh)"
done
[ "$(id -u)" = 0 ] || die "runs as root (debootstrap, chroot)"
rm -rf "$work"
mkdir -p "$work"

# build/deb/ is make deb's, and host/test_deb's too, which tests/run.sh
# may run beside this: the packages made and copied out under its lock.
{ flock 9 && make -s deb && mkdir -p "$work/debs" && cp build/deb/out/*.deb "$work/debs/"; } \
	9>build/deb.lock >"$work/deb.log" 2>&1 || die "make deb" "$work/deb.log"

# The guest's root: Debian's minimal base, with what the packages need to
# be installed and built (their Depends pull the rest: dkms brings gcc).
if [ ! -e "$root/.sluice-ready-$k" ]; then
	rm -rf "$root"
	nice -n 10 debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian \
		>"$work/debootstrap.log" 2>&1 || die "debootstrap bookworm" "$work/debootstrap.log"
	cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/" 2>/dev/null
	mount --bind /proc "$root/proc"
	DEBIAN_FRONTEND=noninteractive nice -n 10 chroot "$root" sh -c "apt-get update -qq &&
		apt-get install -y -qq --no-install-recommends udev kmod dkms linux-headers-$k linux-image-$k \
		adduser passwd perl-base" >"$work/apt.log" 2>&1
	rc=$?
	umount "$root/proc"
	[ $rc = 0 ] || die "apt-get install udev kmod dkms linux-headers-$k in the guest's root" \
		"$work/apt.log"
	chroot "$root" apt-get clean
	touch "$root/.sluice-ready-$k"
fi
say ok "a Debian 12 root with udev, dkms, linux-image-$k and its headers ($root)"
# What the packages depend on, from their own control files (the guest
# has no network: dpkg -i there cannot fetch anything).
deps=$(for d in "$work"/debs/*.deb; do dpkg-deb -f "$d" Depends; echo ,; done |
	tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/[[:space:]]//g' | grep -v '^sluice$' | grep . | sort -u)
mount --bind /proc "$root/proc"
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive nice -n 10 chroot "$root" apt-get install -y -qq \
	--no-install-recommends $deps >"$work/apt-deps.log" 2>&1
rc=$?
umount "$root/proc"
chroot "$root" apt-get clean
if [ $rc = 0 ]; then
	say ok "the packages' dependencies are in the guest's root: $(echo $deps)"
else
	die "apt-get install the packages' dependencies in the guest's root" "$work/apt-deps.log"
fi

# A fresh image every run: the cached root, the packages, the guest's init
# (staged outside build/, as the root is).
stage=$(mktemp -d /var/tmp/sluice-deb-vm.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/root"
cp -a "$root/." "$stage/root/"
mkdir -p "$stage/root/opt/sluice/debs"
cp "$work"/debs/*.deb "$stage/root/opt/sluice/debs/"
install -m 755 tests/vm/deb_guest.sh "$stage/root/opt/sluice/guest.sh"
size=$(( $(du -sm "$stage/root" | cut -f1) + 1024 ))
mkfs.ext4 -q -F -L sluiceroot -d "$stage/root" "$stage/disk.img" "${size}M" >"$work/mkfs.log" 2>&1 ||
	die "an ext4 image of the guest's root" "$work/mkfs.log"
rm -rf "$stage/root"

t0=$SECONDS
timeout "${SLUICE_VM_TIMEOUT:-1500}" qemu-system-x86_64 -accel tcg,thread=multi -smp 2 -m 2048 \
	-display none -monitor none -no-reboot -nic none \
	-kernel "$root/boot/vmlinuz-$k" -initrd "$root/boot/initrd.img-$k" \
	-append "root=/dev/vda rw console=ttyS0 init=/opt/sluice/guest.sh panic=-1 quiet" \
	-drive "file=$stage/disk.img,format=raw,if=virtio" \
	-serial "file:$work/console.log" -serial "file:$work/results.log" \
	</dev/null >"$work/qemu.log" 2>&1
rc=$?
echo "# guest ran $((SECONDS - t0)) s, qemu exit $rc"
rm -f "$stage/disk.img"
if ! grep -q '^1\.\.' "$work/results.log" 2>/dev/null; then
	sed 's/^/# /' "$work/results.log" 2>/dev/null
	die "the guest finished its checks (console: $work/console.log)" "$work/console.log"
fi
# The guest's results, numbered after ours.
while read -r line; do
	case $line in
	"ok "*) say ok "${line#ok [0-9]* - }" ;;
	"not ok "*) say "not ok" "${line#not ok [0-9]* - }" ;;
	esac
done < <(tr -d '\r' <"$work/results.log")
grep -q '^not ok' <(tr -d '\r' <"$work/results.log") &&
	sed -n '/^== /,$p' "$work/console.log" | tail -n 60 | sed 's/^/# /'
echo "1..$n"
! grep -q '^not ok' <(tr -d '\r' <"$work/results.log")
