#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Non-root use with file capabilities (issue 14 item 2, issue 21 item 3):
# a copy of the tool given cap_net_raw,cap_ipc_lock+p (setcap), run by
# user nobody, passes them to the program it starts as ambient
# capabilities: the program has them, and its loader, not in
# secure-execution mode, keeps LD_PRELOAD (the preload is mapped).
# Without file capabilities nothing is passed.
set -u
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v setcap >/dev/null || ! command -v setpriv >/dev/null ||
	! id nobody >/dev/null 2>&1; then
	skip "ambient capabilities" "needs root, setcap (libcap2-bin), setpriv and user nobody"
	done_testing
	exit 0
fi
tmp=$(mktemp -d)
stack=tcap-$$
trap 'rm -rf "$tmp" "/dev/shm/sluice-$stack" "/dev/shm/sluicefd-$stack"' EXIT
chmod 755 "$tmp"
mkdir "$tmp/tools"
cp "$top/build/tools/sluice" "$tmp/tools/"
cp "$top/build/libsluice-preload.so" "$tmp/"
chmod -R a+rX "$tmp"

# as_nobody: the copy of the tool runs a shell that prints its capability
# sets (hex) and whether the preload library is mapped in it.
as_nobody() {
	setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups env SLUICE_NO_HELPER=1 \
		"$tmp/tools/sluice" run --stack "$stack" -- sh -c \
		'sed -n "s/^\(CapPrm\|CapEff\|CapAmb\):\t/\1 /p" /proc/self/status
		 grep -q libsluice-preload /proc/self/maps && echo preloaded' 2>&1
}

out=$(as_nobody)
check "without file capabilities the program has none" grep -q '^CapEff 0000000000000000$' <<<"$out"
check "and is preloaded" grep -qx preloaded <<<"$out"

if ! setcap cap_net_raw,cap_ipc_lock+p "$tmp/tools/sluice" 2>/dev/null; then
	skip "with file capabilities" "setcap failed (a file system without them?)"
	done_testing
	exit 0
fi
# CAP_IPC_LOCK is bit 14, CAP_NET_RAW bit 13: 0x6000.
out=$(as_nobody)
check "with cap_net_raw,cap_ipc_lock+p on the tool, the program has both ambient" \
	grep -q '^CapAmb 0000000000006000$' <<<"$out"
check "and effective ($(grep CapEff <<<"$out"))" grep -q '^CapEff 0000000000006000$' <<<"$out"
check "and its loader kept the preload" grep -qx preloaded <<<"$out"
check "nothing was said on stderr" [ "$(grep -vc '^Cap\|^preloaded$' <<<"$out")" = 0 ]
done_testing
