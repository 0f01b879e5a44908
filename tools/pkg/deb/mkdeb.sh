#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# make deb: the Debian packages, from a build of their own in build/deb/
# (Debian's hardening flags, dpkg-buildflags) installed into a staging
# tree and split three ways:
#   sluice         the tool, libsluice.so.0, the preload library (in
#                  /usr/lib/sluice, where the tool looks), the man pages
#                  sluice(1) and sluice(7), the udev rule; postinst makes
#                  the system group sluice
#   libsluice-dev  the headers, libsluice.a, the libsluice.so link,
#                  sluice.pc, sluice(3)
#   sluice-dkms    the module's source in /usr/src/sluice-VERSION with
#                  dkms.conf, and modules-load.d/sluice.conf; postinst
#                  adds, builds, installs and loads it
# Files are owned by root in the packages without fakeroot (dpkg-deb
# --root-owner-group), so this runs as any user.  Then lintian, when
# installed, on the three: any error fails.
#   bash tools/pkg/deb/mkdeb.sh [--no-lintian]
# DEB_MAINTAINER overrides the Maintainer field.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
cd "$top"
lintian=1
[ "${1:-}" = --no-lintian ] && lintian=0

version=$(sed -n 's/^VERSION := //p' Makefile)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
maint=${DEB_MAINTAINER:-Sluice maintainers <maintainers@sluice.example>}
B=build/deb
out=$B/out
stage=$B/stage
rm -rf "$stage" "$out" "$B/pkg"
mkdir -p "$out"

# Hardened, and the paths a Debian system uses: libraries in the
# multiarch folder, the preload library in /usr/lib/sluice.
cflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
ldflags="$(dpkg-buildflags --get LDFLAGS) -Wl,-z,now"
paths=(PREFIX=/usr LIBDIR="/usr/lib/$multiarch" PKGLIBDIR=/usr/lib/sluice UDEVDIR=/lib/udev
	DKMSDIR="/usr/src/sluice-$version")
nice -n 10 make -s -j2 B="$B" CFLAGS="$cflags" LDFLAGS="$ldflags" lib tools
make -s B="$B" CFLAGS="$cflags" LDFLAGS="$ldflags" "${paths[@]}" DESTDIR="$PWD/$stage" install

# take PKG PATH...: move PATH (relative to the staging root) into PKG's tree.
take() {
	local pkg=$1 p
	shift
	for p in "$@"; do
		mkdir -p "$B/pkg/$pkg/$(dirname "$p")"
		mv "$stage/$p" "$B/pkg/$pkg/$p"
	done
}
libdir=usr/lib/$multiarch
take sluice usr/bin/sluice "$libdir/libsluice.so.$version" "$libdir/libsluice.so.0" \
	usr/lib/sluice usr/share/man/man1 usr/share/man/man7 lib/udev
take libsluice-dev usr/include "$libdir/libsluice.a" "$libdir/libsluice.so" "$libdir/pkgconfig" \
	usr/share/man/man3
take sluice-dkms "usr/src/sluice-$version"
# Loaded at boot (systemd-modules-load), and by the postinst at once.
mkdir -p "$B/pkg/sluice-dkms/usr/lib/modules-load.d"
printf 'sluice\n' >"$B/pkg/sluice-dkms/usr/lib/modules-load.d/sluice.conf"
left=$(cd "$stage" && find . -type f -o -type l)
if [ -n "$left" ]; then
	echo "mkdeb: installed but in no package: $left" >&2
	exit 1
fi

# subst FILE: a template with its SPDX line gone and @FIELDS@ filled.
subst() {
	sed -e '/^# SPDX-License-Identifier/d' -e "s|@VERSION@|$version|g" -e "s|@ARCH@|$arch|g" \
		-e "s|@MAINTAINER@|$maint|g" -e "s|@DEPENDS@|${depends:-}|g" -e "s|@SIZE@|${size:-}|g" "$1"
}

depends=""
for pkg in sluice libsluice-dev sluice-dkms; do
	root=$B/pkg/$pkg
	# Debian's ways: stripped objects, compressed man pages and
	# changelog, the copyright file, modes 0755/0644.
	find "$root" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec strip --strip-unneeded \
		--remove-section=.comment --remove-section=.note {} +
	find "$root" -type f -name '*.a' -exec strip --strip-debug --remove-section=.comment {} +
	find "$root/usr/share/man" -type f -exec gzip -9n {} + 2>/dev/null || true
	mkdir -p "$root/usr/share/doc/$pkg" "$root/DEBIAN"
	cp "$here/copyright" "$root/usr/share/doc/$pkg/copyright"
	subst "$here/changelog" | gzip -9n >"$root/usr/share/doc/$pkg/changelog.gz"
	find "$root" -type d -exec chmod 0755 {} +
	find "$root" -type f -exec chmod go-w {} +
	# Shared objects are not executables (lintian: shlib-with-executable-bit).
	find "$root" -type f -name '*.so*' -exec chmod 0644 {} +
	if [ "$pkg" = sluice ]; then
		# What the ELF files need, as dpkg-shlibdeps finds it (it
		# wants a debian/control to stand in).
		mkdir -p "$B/shl/debian"
		printf 'Source: sluice\n\nPackage: sluice\nArchitecture: any\n' >"$B/shl/debian/control"
		objs=$(find "$PWD/$root" -type f \( -name '*.so*' -o -path '*/bin/*' \))
		# shellcheck disable=SC2086
		depends=$(cd "$B/shl" && dpkg-shlibdeps -O -l"$PWD/../pkg/sluice/$libdir" $objs 2>/dev/null |
			sed -n 's/^shlibs:Depends=//p')
		subst "$here/sluice.shlibs" >"$root/DEBIAN/shlibs"
		subst "$here/sluice.triggers" >"$root/DEBIAN/triggers"
	fi
	for s in postinst prerm postrm; do
		if [ -f "$here/$pkg.$s" ]; then
			subst "$here/$pkg.$s" >"$root/DEBIAN/$s"
			chmod 0755 "$root/DEBIAN/$s"
		fi
	done
	(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
		xargs -0 -r md5sum >DEBIAN/md5sums)
	size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
	subst "$here/$pkg.control" >"$root/DEBIAN/control"
	chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
	a=$arch
	[ "$pkg" = sluice-dkms ] && a=all
	dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${pkg}_${version}_$a.deb" >/dev/null
	echo "mkdeb: $out/${pkg}_${version}_$a.deb"
done

if [ "$lintian" = 1 ]; then
	if ! command -v lintian >/dev/null; then
		echo "mkdeb: lintian is not installed (apt-get install lintian): not checked" >&2
		exit 0
	fi
	# Errors fail; what is left of the warnings is explained in
	# tools/README.md ("Debian packages").
	lintian --no-tag-display-limit \
		"$out"/*.deb | tee "$out/lintian.txt"
	if grep -q '^E: ' "$out/lintian.txt"; then
		echo "mkdeb: lintian found errors" >&2
		exit 1
	fi
fi
