#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# make install and make uninstall into a scratch DESTDIR: every file where
# it belongs; a small program built against the installed headers and
# library with `pkg-config --cflags --libs sluice`, then run; the
# installed tool finds its preload library; the installed DKMS tree builds
# the module; uninstall leaves nothing.
set -u
. "$(dirname "$0")/lib.sh"
cd "$top"
tmp=$(mktemp -d)
dest=$tmp/root
trap 'rm -rf "$tmp"; rm -rf /dev/shm/sluice-ti-$$ /dev/shm/sluicefd-ti-$$' EXIT

make -s install DESTDIR="$dest" PREFIX=/usr >"$tmp/install.log" 2>&1
check "make install DESTDIR=... PREFIX=/usr succeeds" [ $? = 0 ]
for f in usr/bin/sluice usr/lib/libsluice.a usr/lib/libsluice.so.0.1.0 usr/lib/libsluice.so.0 \
	usr/lib/libsluice.so usr/lib/sluice/libsluice-preload.so usr/include/sluice/sluice.h \
	usr/include/sluice/uapi/sluice.h usr/lib/pkgconfig/sluice.pc usr/share/man/man1/sluice.1 \
	usr/share/man/man3/sluice.3 usr/share/man/man7/sluice.7 lib/udev/rules.d/60-sluice.rules \
	usr/src/sluice-0.1.0/dkms.conf usr/src/sluice-0.1.0/Kbuild usr/src/sluice-0.1.0/kernel/main.c \
	usr/src/sluice-0.1.0/include/uapi/sluice.h; do
	check "installed $f" [ -e "$dest/$f" ]
done

cat >"$tmp/hello.c" <<'EOC'
#include <stdio.h>
#include <sluice/sluice.h>

int main(int argc, char **argv)
{
	struct sluice_stack_config cfg = { .max_sockets = 16, .n_bufs = 64 };
	struct sluice_stack *st;
	int sd;

	if (argc != 2 || sluice_stack_create(argv[1], &cfg, &st))
		return 1;
	sd = sluice_socket(st, SLUICE_SOCK_DGRAM);
	printf("socket %d, library %s\n", sd, SLUICE_LIB_VERSION);
	sluice_close(st, sd);
	sluice_stack_close(st);
	return sluice_stack_destroy(argv[1]) ? 1 : 0;
}
EOC
pc="PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest"
flags=$(env PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
	pkg-config --cflags --libs sluice 2>&1)
check "pkg-config knows sluice ($flags)" grep -q -- '-lsluice' <<<"$flags"
# shellcheck disable=SC2086
cc -o "$tmp/hello" "$tmp/hello.c" $flags >"$tmp/cc.log" 2>&1
check "a program builds against the installed headers and library" [ -x "$tmp/hello" ]
out=$(LD_LIBRARY_PATH="$dest/usr/lib" timeout 10 "$tmp/hello" "ti-$$" 2>&1)
check "and runs on the installed shared library ($out)" [ "$out" = "socket 0, library 0.1.0" ]
check "it ran on libsluice.so.0, not a static copy" \
	sh -c "LD_LIBRARY_PATH='$dest/usr/lib' ldd '$tmp/hello' | grep -q 'libsluice.so.0 => $dest/usr/lib/libsluice.so.0'"
out=$("$dest/usr/bin/sluice" version 2>&1)
check "the installed tool runs ($out)" grep -q '^sluice 0.1.0' <<<"$out"
out=$(SLUICE_STACK="ti-$$" timeout 10 "$dest/usr/bin/sluice" run -- \
	/usr/bin/env sh -c 'echo "$LD_PRELOAD"' 2>&1)
check "sluice run preloads the installed library ($out)" \
	[ "$out" = "$dest/usr/lib/sluice/libsluice-preload.so" ]
kdir=$(ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)
if [ -n "$kdir" ]; then
	cp -r "$dest/usr/src/sluice-0.1.0" "$tmp/dkms"
	timeout 300 make -s -C "$kdir" M="$tmp/dkms" modules >"$tmp/kbuild.log" 2>&1
	check "the installed DKMS tree builds the module" [ -f "$tmp/dkms/sluice.ko" ]
else
	skip "the installed DKMS tree builds the module" "no kernel headers"
fi

make -s uninstall DESTDIR="$dest" PREFIX=/usr >"$tmp/uninstall.log" 2>&1
check "make uninstall succeeds" [ $? = 0 ]
left=$(find "$dest" -type f -o -type l | sed "s|^$dest/||" | tr '\n' ' ')
check "uninstall leaves no file${left:+ (left: $left)}" [ -z "$left" ]
[ "$tap_failed" = 0 ] || sed 's/^/# /' "$tmp"/*.log
done_testing
