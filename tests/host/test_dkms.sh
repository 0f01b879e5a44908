#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# dkms.conf builds sluice.ko for every installed kernel with headers, from
# exactly the files a source package would ship, in a private DKMS tree.
set -u
. "$(dirname "$0")/lib.sh"
cd "$top"
if ! command -v dkms >/dev/null; then
	fail "dkms is installed (run tests/vm/deps.sh)"
	done_testing
	exit
fi
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/sluice-$ver" "$tmp/tree"
cp -r Kbuild dkms.conf kernel include "$tmp/src/sluice-$ver/"
rm -f "$tmp/src/sluice-$ver"/kernel/*.o "$tmp/src/sluice-$ver"/kernel/.*.cmd
for k in $(bash tests/vm/run.sh --list); do
	if dkms build -m sluice -v "$ver" -k "$k" --sourcetree "$tmp/src" \
		--dkmstree "$tmp/tree" >"$tmp/log" 2>&1 &&
		ls "$tmp/tree/sluice/$ver/$k/x86_64/module/"sluice.ko* >/dev/null 2>&1; then
		ok "dkms builds sluice $ver for $k"
	else
		fail "dkms builds sluice $ver for $k"
		tail -n 20 "$tmp/log" | sed 's/^/# /'
	fi
done
done_testing
