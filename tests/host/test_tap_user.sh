#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# A TAP stack for a user who is not root (issue 21 item 3): the tun driver
# lets a process without CAP_NET_ADMIN attach only to a device that exists
# and is its user's (drivers/net/tun.c, tun_not_capable()).
#   - No device and no capability: the program runs, its sockets stay in
#     the kernel, and it is told which capability is missing and the two
#     ways to get it (a device made for the user, or the tool's file
#     capability).
#   - A device root made for the user (ip tuntap add ... user nobody): the
#     user's curl fetches a file from a kernel server over it, in the stack.
#   - The tool given cap_net_admin+p: the user's program makes a device of
#     its own, in the stack, and nothing is said.
# All traffic stays in a namespace of the test's; every program is bounded
# by timeout(1).
set -u
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1 ||
	! command -v curl >/dev/null; then
	skip "TAP as a user" "needs root, setpriv, curl and user nobody"
	done_testing
	exit 0
fi
ns=sl-tuser-$$
st=tu-$$
netns_test "TAP as a user" "$ns" -- "$st" "$st-1" "$st-3"
chmod 755 "$tmp"
mkdir "$tmp/tools" "$tmp/www"
cp "$top/build/tools/sluice" "$tmp/tools/"
cp "$top/build/libsluice-preload.so" "$tmp/"
echo "served by $$" >"$tmp/www/index.txt"
chmod -R a+rX "$tmp"
uid=$(id -u nobody)
# as_nobody STACK TAP ADDR PROGRAM...: the copy of the tool, run by nobody
# in the namespace.
as_nobody() {
	local s=$1 dev=$2 addr=$3
	shift 3
	in_ns timeout 20 setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
		env SLUICE_NO_HELPER=1 "$tmp/tools/sluice" run --stack "$s" --tap "$dev" \
		--addr "$addr" -- "$@"
}


# 1. No device, no capability.
out=$(as_nobody "$st-1" tu9 10.209.0.2/24 "$py" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print("ran")' 2>&1)
check "without CAP_NET_ADMIN or a device the program still runs" grep -qx ran <<<"$out"
check "it is told CAP_NET_ADMIN is needed" grep -q 'TAP tu9: Operation not permitted (making or taking a TAP device needs CAP_NET_ADMIN' <<<"$out"
check "and how root makes a device for it (user $uid)" \
	grep -qF "ip tuntap add dev tu9 mode tap multi_queue user $uid" <<<"$out"
check "and how to give the tool the capability" grep -qF 'setcap cap_net_admin+p' <<<"$out"
check "and that its sockets stay in the kernel" grep -q 'sockets stay in the kernel' <<<"$out"

# 1b. A device that exists and belongs to root: the tun driver refuses
# nobody (EPERM) and the retry without multi-queue says EINVAL; the
# user is told the first, whose device it is, and what root can do.
in_ns ip tuntap add dev tu8 mode tap multi_queue user 0
out=$(as_nobody "$st-1" tu8 10.208.0.2/24 "$py" -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print("ran")' 2>&1)
check "a device of root's: the program runs, told the device belongs to user 0 and needs CAP_NET_ADMIN" \
	grep -q 'TAP tu8: Operation not permitted (TAP device tu8 exists and belongs to user 0: taking it needs CAP_NET_ADMIN' <<<"$out"
check "and how root gives it to this user (user $uid)" \
	grep -qF "ip tuntap add dev tu8 mode tap multi_queue user $uid" <<<"$out"

# 2. A device root made for nobody, a kernel server on its other side.
in_ns ip tuntap add dev tu0 mode tap multi_queue user nobody
in_ns ip addr add 10.209.0.1/24 dev tu0
in_ns ip link set tu0 up
in_ns timeout 60 "$py" -m http.server --bind 10.209.0.1 18095 --directory "$tmp/www" \
	>"$tmp/ksrv.log" 2>&1 &
for _ in $(seq 50); do in_ns ss -ltn 2>/dev/null | grep -q ':18095 ' && break; sleep 0.1; done
out=$(as_nobody "$st" tu0 10.209.0.2/24 curl -sS --max-time 10 http://10.209.0.1:18095/index.txt 2>&1)
check "nobody's curl fetches over a TAP device made for nobody" [ "$out" = "served by $$" ]
ao=$(counter "$st" tcp_active_open)
check "its connection was the stack's (tcp_active_open ${ao:-?})" [ "${ao:-0}" = 1 ]

# 3. The tool with cap_net_admin+p makes a device of the user's own.
if ! setcap cap_net_admin+p "$tmp/tools/sluice" 2>/dev/null; then
	skip "with cap_net_admin+p on the tool" "setcap failed (no libcap2-bin, or no file capabilities)"
	done_testing
	exit
fi
out=$(as_nobody "$st-3" tu3 10.210.0.2/24 "$py" -c '
import socket, subprocess
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"x", ("10.210.0.1", 9))
print(subprocess.run(["ip", "-o", "link", "show", "tu3"], capture_output=True, text=True).stdout.split(":")[1].strip())' 2>&1)
check "with cap_net_admin+p on the tool, the program's stack makes its own device" \
	grep -qx tu3 <<<"$out"
check "and nothing was said on stderr ($(grep -vcx tu3 <<<"$out") other lines)" \
	[ "$(grep -vcx tu3 <<<"$out")" = 0 ]
done_testing
