#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# make deb (tools/pkg/deb/mkdeb.sh): the three packages, their fields
# (dpkg-deb -I), their contents (dpkg-deb -c: paths, owner root/root,
# modes), their scripts, lintian without errors; the sluice and
# libsluice-dev packages unpacked (not installed: this host is shared) run
# the tool and build a program with pkg-config.  Then the same as a user
# who is not root, on a copy of the tree, when this runs as root.
set -u
. "$(dirname "$0")/lib.sh"
cd "$top"
for t in dpkg-deb dpkg-shlibdeps lintian; do
	if ! command -v "$t" >/dev/null; then
		fail "$t is installed (dpkg-dev, lintian: tests/vm/deps.sh)"
		done_testing
		exit
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ver=$(sed -n 's/^VERSION := //p' Makefile)
arch=$(dpkg --print-architecture)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
out=build/deb/out

# build/deb/ is shared with the VM part's vm_deb (tests/vm/deb.sh), which
# tests/run.sh may run beside this: held for the whole test.
mkdir -p build
exec 9>build/deb.lock
flock 9
timeout 900 make -s deb >"$tmp/deb.log" 2>&1
rc=$?
check "make deb succeeds, lintian finds no error (exit $rc)" [ $rc = 0 ]
[ $rc = 0 ] || tail -n 30 "$tmp/deb.log" | sed 's/^/# /'
deb_s=$out/sluice_${ver}_$arch.deb
deb_d=$out/libsluice-dev_${ver}_$arch.deb
deb_k=$out/sluice-dkms_${ver}_all.deb
for d in "$deb_s" "$deb_d" "$deb_k"; do
	check "built $d" [ -f "$d" ]
done
if [ -f "$out/lintian.txt" ]; then
	e=$(grep -c '^E: ' "$out/lintian.txt")
	w=$(grep -c '^W: ' "$out/lintian.txt")
	check "lintian: no errors ($e errors, $w warnings)" [ "$e" = 0 ]
	sed 's/^/# lintian: /' "$out/lintian.txt"
fi

# field DEB NAME: a control field
field() { dpkg-deb -f "$1" "$2" 2>/dev/null; }
check "sluice: version $ver, architecture $arch" \
	[ "$(field "$deb_s" Version)/$(field "$deb_s" Architecture)" = "$ver/$arch" ]
dep=$(field "$deb_s" Depends)
check "sluice depends on libc6, libibverbs1, liburcu8 and adduser ($dep)" \
	sh -c 'for p in libc6 libibverbs1 liburcu8 adduser; do echo "$1" | grep -q "$p" || exit 1; done' \
	- "$dep"
check "libsluice-dev depends on sluice (= $ver)" \
	grep -q "sluice (= $ver)" <<<"$(field "$deb_d" Depends)"
check "sluice-dkms is for all architectures and depends on dkms" \
	[ "$(field "$deb_k" Architecture)/$(field "$deb_k" Depends)" = "all/dkms" ]

# has DEB PATH [MODE]: the package holds PATH (with MODE, as ls shows it)
has() {
	local line
	line=$(dpkg-deb -c "$1" | awk -v p="./$2" '$6 == p { print }')
	[ -n "$line" ] || return 1
	[ -z "${3:-}" ] || [ "${line%% *}" = "$3" ]
}
for p in "usr/bin/sluice -rwxr-xr-x" "usr/lib/$ma/libsluice.so.$ver -rw-r--r--" \
	"usr/lib/$ma/libsluice.so.0" "usr/lib/sluice/libsluice-preload.so -rw-r--r--" \
	"usr/share/man/man1/sluice.1.gz -rw-r--r--" "usr/share/man/man7/sluice.7.gz" \
	"lib/udev/rules.d/60-sluice.rules -rw-r--r--" "usr/share/doc/sluice/copyright" \
	"usr/share/doc/sluice/changelog.gz"; do
	# shellcheck disable=SC2086
	check "sluice holds ${p%% *}" has "$deb_s" $p
done
for p in usr/include/sluice/sluice.h usr/include/sluice/uapi/sluice.h "usr/lib/$ma/libsluice.a" \
	"usr/lib/$ma/libsluice.so" "usr/lib/$ma/pkgconfig/sluice.pc" usr/share/man/man3/sluice.3.gz; do
	check "libsluice-dev holds $p" has "$deb_d" "$p"
done
for p in dkms.conf Kbuild kernel/main.c include/uapi/sluice.h; do
	check "sluice-dkms holds /usr/src/sluice-$ver/$p" has "$deb_k" "usr/src/sluice-$ver/$p"
done
owners=$(for d in "$deb_s" "$deb_d" "$deb_k"; do dpkg-deb -c "$d"; done | awk '{ print $2 }' | sort -u)
check "every file is root/root ($owners)" [ "$owners" = root/root ]
# The shared library is 0644 on Debian (lintian: shared-library-is-executable).
dpkg-deb -e "$deb_s" "$tmp/ctl-s"
dpkg-deb -e "$deb_k" "$tmp/ctl-k"
check "sluice's postinst makes the system group sluice" grep -q 'addgroup --system' "$tmp/ctl-s/postinst"
check "sluice has shlibs" grep -q "^libsluice 0 sluice (>= $ver)" "$tmp/ctl-s/shlibs"
check "sluice activates the ldconfig trigger" grep -qx 'activate-noawait ldconfig' "$tmp/ctl-s/triggers"
check "sluice-dkms's postinst adds and builds the module" \
	sh -c "grep -q 'dkms add' '$tmp/ctl-k/postinst' && grep -q 'dkms build' '$tmp/ctl-k/postinst'"
check "sluice-dkms's prerm removes it" grep -q 'dkms remove' "$tmp/ctl-k/prerm"
check "sluice-dkms's postinst loads it once installed" grep -q 'modprobe "$NAME"' "$tmp/ctl-k/postinst"
mload=$(dpkg-deb --fsys-tarfile "$deb_k" | tar -xOf - ./usr/lib/modules-load.d/sluice.conf 2>/dev/null)
check "sluice-dkms has modules-load.d/sluice.conf, so it loads at boot ($mload)" [ "$mload" = sluice ]
rule=$(dpkg-deb --fsys-tarfile "$deb_s" | tar -xOf - ./lib/udev/rules.d/60-sluice.rules | grep -v '^#')
check "the udev rule: group sluice, mode 0660 ($rule)" \
	grep -q 'KERNEL=="sluice".*GROUP="sluice".*MODE="0660"' <<<"$rule"

# Unpacked in a scratch root: the tool runs and finds its preload library;
# a program builds against the -dev package with pkg-config and runs.
x=$tmp/root
dpkg-deb -x "$deb_s" "$x"
dpkg-deb -x "$deb_d" "$x"
out1=$("$x/usr/bin/sluice" version 2>&1)
check "the packaged tool runs ($out1)" grep -q "^sluice $ver" <<<"$out1"
out1=$(SLUICE_STACK="tdeb-$$" SLUICE_NO_HELPER=1 timeout 10 "$x/usr/bin/sluice" run -- \
	/usr/bin/env sh -c 'echo "$LD_PRELOAD"' 2>&1)
check "sluice run preloads the packaged library ($out1)" \
	[ "$out1" = "$x/usr/lib/sluice/libsluice-preload.so" ]
rm -rf "/dev/shm/sluice-tdeb-$$" "/dev/shm/sluicefd-tdeb-$$"
cat >"$tmp/p.c" <<'EOC'
#include <stdio.h>
#include <sluice/sluice.h>

int main(void)
{
	printf("%s\n", SLUICE_LIB_VERSION);
	return sluice_stack_attach("no-such-stack-tdeb", NULL) == -ENOENT ? 0 : 1;
}
EOC
flags=$(PKG_CONFIG_PATH="$x/usr/lib/$ma/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$x" \
	pkg-config --cflags --libs sluice 2>&1)
# shellcheck disable=SC2086
cc -include errno.h -o "$tmp/p" "$tmp/p.c" $flags >"$tmp/cc.log" 2>&1
out1=$(LD_LIBRARY_PATH="$x/usr/lib/$ma" "$tmp/p" 2>&1)
check "a program builds with pkg-config against libsluice-dev and runs ($out1)" [ "$out1" = "$ver" ]

# The packaged module source builds with dkms (in a private DKMS tree, for
# the newest kernel with headers here), as sluice-dkms's postinst has it.
k=$(ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1 | cut -d/ -f4)
if [ -z "$k" ] || ! command -v dkms >/dev/null; then
	skip "dkms builds the packaged source" "no kernel headers or no dkms"
else
	dpkg-deb -x "$deb_k" "$tmp/k"
	mkdir -p "$tmp/dkms"
	timeout 600 dkms build -m sluice -v "$ver" -k "$k" --sourcetree "$tmp/k/usr/src" \
		--dkmstree "$tmp/dkms" >"$tmp/dkms.log" 2>&1
	check "dkms builds sluice.ko for $k from the packaged source" \
		sh -c "ls '$tmp/dkms/sluice/$ver/$k/'*/module/sluice.ko* >/dev/null 2>&1"
fi

# Not root: a copy of the tree owned by an unprivileged user.
user=nobody
if [ "$(id -u)" != 0 ]; then
	skip "make deb as a user who is not root" "already not root"
elif ! id "$user" >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	skip "make deb as a user who is not root" "no user $user or no setpriv"
else
	mkdir "$tmp/nr"
	tar -C "$top" --exclude=./build --exclude=./.git -cf - . | tar -C "$tmp/nr" -xf -
	chown -R "$user" "$tmp/nr"
	chmod 755 "$tmp"
	timeout 900 setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
		env HOME="$tmp/nr" make -s -C "$tmp/nr" deb >"$tmp/nr.log" 2>&1
	rc=$?
	check "make deb as $user succeeds (exit $rc)" [ $rc = 0 ]
	[ $rc = 0 ] || tail -n 20 "$tmp/nr.log" | sed 's/^/# /'
	owners=$(dpkg-deb -c "$tmp/nr/build/deb/out/sluice_${ver}_$arch.deb" 2>/dev/null |
		awk '{ print $2 }' | sort -u)
	check "and its files are still root/root in the package ($owners)" [ "$owners" = root/root ]
fi
done_testing
