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

# A real program: a stack in /dev/shm, a TCP listener and a client on its
# loopback, 64 KiB each way through the installed library.
cat >"$tmp/hello.c" <<'EOC'
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sluice/sluice.h>

#define N 65536
static char out[N], in[N], ret[N];

/* A call that would block: run the stack once (timers, loopback). */
static long again(struct sluice_stack *st, long r)
{
	if (r == -EAGAIN)
		sluice_stack_poll(st);
	return r;
}

int main(int argc, char **argv)
{
	struct sluice_stack_config cfg = { .max_sockets = 16, .n_bufs = 256 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(4711) };
	struct sluice_stack *st;
	size_t sent = 0, got = 0, back = 0, echoed = 0;
	int l, c, s = -EAGAIN, tries;
	long r;

	if (argc != 2 || sluice_stack_create(argv[1], &cfg, &st))
		return 1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	c = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (l < 0 || c < 0 || sluice_bind(st, l, &a) || sluice_listen(st, l, 4))
		return 2;
	r = sluice_connect(st, c, &a);
	if (r && r != -EINPROGRESS)
		return 3;
	for (tries = 0; s < 0 && tries < 100000; tries++)
		s = (int)again(st, sluice_accept(st, l, NULL));
	if (s < 0)
		return 4;
	for (size_t i = 0; i < N; i++)
		out[i] = (char)(i * 7 + i / 251);
	/* client -> server -> back to the client, all at once */
	for (tries = 0; echoed < N && tries < 1000000; tries++) {
		if (sent < N && (r = again(st, sluice_send(st, c, out + sent, N - sent, 0))) > 0)
			sent += (size_t)r;
		if (got < N && (r = again(st, sluice_recv(st, s, in + got, N - got, 0))) > 0)
			got += (size_t)r;
		if (back < got && (r = again(st, sluice_send(st, s, in + back, got - back, 0))) > 0)
			back += (size_t)r;
		if ((r = again(st, sluice_recv(st, c, ret + echoed, N - echoed, 0))) > 0)
			echoed += (size_t)r;
	}
	if (echoed != N || memcmp(in, out, N) || memcmp(ret, out, N))
		return 5;
	printf("echoed %zu bytes over TCP, library %s\n", echoed, SLUICE_LIB_VERSION);
	sluice_close(st, c);
	sluice_close(st, s);
	sluice_close(st, l);
	sluice_stack_close(st);
	return sluice_stack_destroy(argv[1]) ? 7 : 0;
}
EOC
flags=$(env PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest" \
	pkg-config --cflags --libs sluice 2>&1)
check "pkg-config knows sluice ($flags)" grep -q -- '-lsluice' <<<"$flags"
# A tree moved elsewhere: libdir and includedir follow ${prefix}.
moved=$(for v in libdir includedir; do env PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" \
	pkg-config --define-variable=prefix=/opt/moved --variable=$v sluice 2>&1; done | tr '\n' ' ')
moved=${moved% }
check "pkg-config --define-variable=prefix= moves libdir and includedir ($moved)" \
	[ "$moved" = "/opt/moved/lib /opt/moved/include" ]
# shellcheck disable=SC2086
cc -Wall -Wextra -Werror -o "$tmp/hello" "$tmp/hello.c" $flags >"$tmp/cc.log" 2>&1
check "a program builds against the installed headers and library" [ -x "$tmp/hello" ]
out=$(LD_LIBRARY_PATH="$dest/usr/lib" timeout 20 "$tmp/hello" "ti-$$" 2>&1)
rc=$?
check "and runs on the installed shared library: a TCP echo in a stack ($out, exit $rc)" \
	[ "$out/$rc" = "echoed 65536 bytes over TCP, library 0.1.0/0" ]
check "it ran on libsluice.so.0, not a static copy" \
	sh -c "LD_LIBRARY_PATH='$dest/usr/lib' ldd '$tmp/hello' | grep -q 'libsluice.so.0 => $dest/usr/lib/libsluice.so.0'"
out=$("$dest/usr/bin/sluice" version 2>&1)
check "the installed tool runs ($out)" grep -q '^sluice 0.1.0' <<<"$out"
out=$(SLUICE_STACK="ti-$$" timeout 10 "$dest/usr/bin/sluice" run -- \
	/usr/bin/env sh -c 'echo "$LD_PRELOAD"' 2>&1)
check "sluice run preloads the installed library ($out)" \
	[ "$out" = "$dest/usr/lib/sluice/libsluice-preload.so" ]
# Another LIBDIR (lib64 under another prefix): the tool still finds the
# preload library in PKGLIBDIR, LIBDIR/sluice.
make -s install DESTDIR="$tmp/l64" PREFIX=/opt/sl2 LIBDIR=/opt/sl2/lib64 >"$tmp/l64.log" 2>&1
out=$(SLUICE_STACK="ti-$$" timeout 10 "$tmp/l64/opt/sl2/bin/sluice" run -- \
	/usr/bin/env sh -c 'echo "$LD_PRELOAD"' 2>&1)
check "with LIBDIR=/opt/sl2/lib64 the tool finds its preload there ($out)" \
	[ "$out" = "$tmp/l64/opt/sl2/lib64/sluice/libsluice-preload.so" ]
# The installed man pages, as man finds them: each renders, man-db and
# groff say nothing.
for p in "$dest"/usr/share/man/man?/*; do
	name=${p#"$dest"/usr/share/man/}
	warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$p" 2>&1 >/dev/null)
	lines=$(MANWIDTH=80 LC_ALL=C.UTF-8 man -l "$p" 2>/dev/null | wc -l)
	check "installed $name renders ($lines lines)" [ "$lines" -gt 10 ]
	check "installed $name: man --warnings is silent${warn:+ (said: $warn)}" [ -z "$warn" ]
done
sec=$(MANPATH="$dest/usr/share/man" man -w sluice 2>/dev/null)
check "man finds sluice(1) under the installed MANPATH ($sec)" [ "$sec" = "$dest/usr/share/man/man1/sluice.1" ]

kdir=$(ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1)
if [ -n "$kdir" ]; then
	cp -r "$dest/usr/src/sluice-0.1.0" "$tmp/dkms"
	timeout 300 make -s -C "$kdir" M="$tmp/dkms" modules >"$tmp/kbuild.log" 2>&1
	check "the installed DKMS tree builds the module" [ -f "$tmp/dkms/sluice.ko" ]
else
	skip "the installed DKMS tree builds the module" "no kernel headers"
fi

# Not root: with DESTDIR nothing needs privileges (the build is done).
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	mkdir -m 777 "$tmp/nr"
	chmod 755 "$tmp"
	setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
		make -s -C "$top" install DESTDIR="$tmp/nr/root" PREFIX=/usr >"$tmp/nr.log" 2>&1
	rc=$?
	n=$(find "$tmp/nr/root" -type f 2>/dev/null | wc -l)
	want=$(find "$dest" -type f | wc -l)
	check "make install DESTDIR=... as nobody succeeds ($n files of $want, exit $rc)" \
		[ "$rc/$n" = "0/$want" ]
else
	skip "make install DESTDIR=... as a user who is not root" "not root, or no nobody/setpriv"
fi

make -s uninstall DESTDIR="$dest" PREFIX=/usr >"$tmp/uninstall.log" 2>&1
check "make uninstall succeeds" [ $? = 0 ]
left=$(find "$dest" -type f -o -type l | sed "s|^$dest/||" | tr '\n' ' ')
check "uninstall leaves no file${left:+ (left: $left)}" [ -z "$left" ]
[ "$tap_failed" = 0 ] || sed 's/^/# /' "$tmp"/*.log
done_testing
