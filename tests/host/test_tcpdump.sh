#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# sluice tcpdump: captures of known exchanges read back with the real
# tcpdump(8).
#
#   1. A stack's own loopback (127.0.0.1 inside the stack, which no kernel
#      tool sees), in a network namespace whose lo is down: a TCP connect,
#      12 bytes one way and 3000 the other, both closes, one UDP datagram.
#      Captured whole (-w), then with a BPF filter that keeps only the
#      SYNs and UDP, then printed (no -w) with -c.
#      The default (-i any) is written as LINUX_SLL2, as the kernel's
#      tcpdump writes its "any" device: direction and interface in each
#      record.
#   2. A TAP stack against the kernel in a namespace this test creates
#      (10.205.0.1 kernel, 10.205.0.2 Sluice): a TCP echo and a UDP echo,
#      captured on the link (-i pt0: Ethernet frames, the ARP exchanges
#      among them), then again with -i any and an expression that keeps
#      ARP and SYNs.
#
# Every program is bounded by timeout(1); the namespace is deleted.
set -u
. "$(dirname "$0")/lib.sh"
sluice=$top/build/tools/sluice
py=/usr/bin/python3
td=$(command -v tcpdump || echo /usr/sbin/tcpdump)

if [ ! -x "$td" ] && [ "${SLUICE_NO_DEPS:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tcpdump \
		>/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			tcpdump >/dev/null 2>&1; }
fi
if [ ! -x "$td" ]; then
	skip "sluice tcpdump" "tcpdump(8) is not installed"
	done_testing
	exit
fi

tmp=$(mktemp -d)
lst=tcpd-l-$$
tst=tcpd-t-$$
ns=sl-tcpd-$$
cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	wait 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	rm -rf "/dev/shm/sluice-$lst" "/dev/shm/sluicefd-$lst" "/dev/shm/sluice-$tst" \
		"/dev/shm/sluicefd-$tst" /dev/shm/sluicecap-"$lst"-* /dev/shm/sluicecap-"$tst"-*
	rm -rf "$tmp"
}
trap cleanup EXIT
# The packets of a capture as tcpdump prints them, without the times.
rd() { "$td" -nn -r "$@" 2>/dev/null | cut -d' ' -f2-; }
# wait_for FILE PATTERN: up to 5 s
wait_for() { for _ in $(seq 50); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# --- 1. the stack's own loopback ------------------------------------------
cat >"$tmp/lo.py" <<'EOF'
import os, socket, sys, time
d = sys.argv[1]
l = socket.socket()
l.bind(("127.0.0.1", 7001))
l.listen(4)
print("ready", flush=True)
for k in (1, 2, 3, 4, 5):
    for _ in range(100):
        if os.path.exists("%s/go%d" % (d, k)):
            break
        time.sleep(0.1)
    c = socket.create_connection(("127.0.0.1", 7001))
    a, _ = l.accept()
    c.sendall(b"hello sluice")
    assert a.recv(100) == b"hello sluice"
    a.sendall(b"X" * 3000)
    n = 0
    while n < 3000:
        n += len(c.recv(4000))
    c.close()
    a.recv(10)
    a.close()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 8302))
    v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    v.sendto(b"datagram!", ("127.0.0.1", 8302))
    assert u.recvfrom(100)[0] == b"datagram!"
    u.close()
    v.close()
    print("done%d" % k, flush=True)
EOF
SLUICE_NO_HELPER=1 timeout 60 unshare -n "$sluice" run --stack "$lst" -- \
	"$py" "$tmp/lo.py" "$tmp" >"$tmp/lo.out" 2>&1 &
wait_for "$tmp/lo.out" ready
check "a program runs on stack $lst (its loopback only)" grep -q ready "$tmp/lo.out"

# capture K ARGS...: start sluice tcpdump on the loopback stack, run
# exchange K, stop the capture once it is done.
capture() {
	local k=$1 pid
	shift
	timeout 20 "$sluice" tcpdump "$lst" "$@" >"$tmp/cap$k.out" 2>"$tmp/cap$k.err" &
	pid=$!
	wait_for "$tmp/cap$k.err" capturing
	touch "$tmp/go$k"
	wait_for "$tmp/lo.out" "done$k"
	sleep 0.3
	kill -INT "$pid" 2>/dev/null
	wait "$pid"
}

capture 1 -w "$tmp/all.pcap"
rd "$tmp/all.pcap" >"$tmp/all.txt"
syn=$(grep -c 'Flags \[S\],' "$tmp/all.txt")
synack=$(grep -c 'Flags \[S\.\],' "$tmp/all.txt")
fins=$(grep -c 'Flags \[F\.\],' "$tmp/all.txt")
check "tcpdump -r reads the capture: one SYN ($syn), one SYN-ACK ($synack), two FINs ($fins)" \
	test "$syn" = 1 -a "$synack" = 1 -a "$fins" = 2
# The SYN-ACK acknowledges the SYN's sequence number plus one.
sseq=$(sed -n 's/.*Flags \[S\], seq \([0-9]*\),.*/\1/p' "$tmp/all.txt")
sack=$(sed -n 's/.*Flags \[S\.\], seq [0-9]*, ack \([0-9]*\),.*/\1/p' "$tmp/all.txt")
check "the SYN-ACK acks the SYN's seq + 1 ($sseq, $sack)" \
	test -n "$sseq" -a "$sack" = "$((sseq + 1))"
# Bytes each way: the client's 12, the server's 3000 (tcpdump's lengths).
c2s=$(awk '/> 127.0.0.1.7001: Flags/ { for (i = 1; i <= NF; i++) if ($i == "length") n += $(i + 1) } END { print n + 0 }' "$tmp/all.txt")
s2c=$(awk '/127.0.0.1.7001 > .*Flags/ { for (i = 1; i <= NF; i++) if ($i == "length") n += $(i + 1) } END { print n + 0 }' "$tmp/all.txt")
check "TCP payload: 12 bytes to the server, 3000 back ($c2s, $s2c)" test "$c2s" = 12 -a "$s2c" = 3000
check "the client's bytes are in the capture (tcpdump -A)" \
	grep -q 'hello sluice' <("$td" -nn -A -r "$tmp/all.pcap" 2>/dev/null)
# The stack's own loopback checks no TCP checksum, so its segments carry
# none; the capture fills in what they would carry on a link.
ncs=$("$td" -nn -vv -r "$tmp/all.pcap" 'tcp' 2>/dev/null | grep -c 'cksum 0x[0-9a-f]* (correct)')
check "every TCP segment's checksum is right in the capture (tcpdump -vv: $ncs of $(rd "$tmp/all.pcap" 'tcp' | wc -l) correct)" \
	test "$ncs" -gt 0 -a "$ncs" = "$(rd "$tmp/all.pcap" 'tcp' | wc -l)"
# The payload bytes themselves, of the server's segments as tcpdump picks
# them (-w again), cut out by their headers' lengths.
"$td" -r "$tmp/all.pcap" -w "$tmp/srv.pcap" 'tcp src port 7001' 2>/dev/null
cat >"$tmp/payload.py" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
link = struct.unpack("<I", d[20:24])[0]
pos, data = 24, b""
while pos + 16 <= len(d):
    incl = struct.unpack("<IIII", d[pos:pos + 16])[2]
    p = d[pos + 16:pos + 16 + incl]
    pos += 16 + incl
    if link == 276:     # LINUX_SLL2: a 20-byte header before the packet
        p = p[20:]
    ihl = (p[0] & 15) * 4
    doff = (p[ihl + 12] >> 4) * 4
    data += p[ihl + doff:struct.unpack(">H", p[2:4])[0]]
print(len(data), data == b"X" * 3000)
EOF
xs=$("$py" "$tmp/payload.py" "$tmp/srv.pcap")
check "the server's 3000 bytes are in the capture, every one ($xs)" test "$xs" = "3000 True"
udp=$(grep -c '127.0.0.1.[0-9]* > 127.0.0.1.8302: UDP, length 9' "$tmp/all.txt")
check "one UDP datagram of 9 bytes to 8302 ($udp)" test "$udp" = 1
check "the datagram's bytes are in the capture" \
	grep -q 'datagram!' <("$td" -nn -A -r "$tmp/all.pcap" udp 2>/dev/null)
check "the default capture is LINUX_SLL2, as the kernel's tcpdump -i any writes" \
	grep -q 'link-type LINUX_SLL2' <("$td" -nn -r "$tmp/all.pcap" -c 1 2>&1)
# tcpdump -e prints each record's interface (its name as this machine
# has that index), direction and index: the loopback's (1), In
# (PACKET_HOST), with protocol IPv4.
n=$("$td" -nn -e -r "$tmp/all.pcap" 2>/dev/null | grep -c ' In  *ifindex 1 .*ethertype IPv4')
check "every record says: interface 1 (lo), In, IPv4 ($n of $(wc -l <"$tmp/all.txt"))" \
	test "$n" -gt 0 -a "$n" = "$(wc -l <"$tmp/all.txt")"
total=$(wc -l <"$tmp/all.txt")
capd=$(sed -n 's/^\([0-9]*\) packets captured/\1/p' "$tmp/cap1.err")
check "the tool's count is the file's ($capd, $total), none dropped" \
	test "$capd" = "$total" -a "$total" -ge 11 -a -n "$(grep '^0 packets dropped' "$tmp/cap1.err")"

capture 2 -w "$tmp/some.pcap" 'udp or tcp[tcpflags] & tcp-syn != 0'
rd "$tmp/some.pcap" >"$tmp/some.txt"
n=$(wc -l <"$tmp/some.txt")
check "a BPF expression keeps only the SYN, the SYN-ACK and the datagram ($n packets)" \
	test "$n" = 3 -a "$(grep -c 'Flags \[S' "$tmp/some.txt")" = 2 -a \
	"$(grep -c 'UDP, length 9' "$tmp/some.txt")" = 1

capture 3 -c 2 -i lo 'tcp[tcpflags] & tcp-fin != 0'
n=$(grep -c 'lo .*IP 127.0.0.1\.[0-9]* > 127.0.0.1\.[0-9]*: Flags \[F\.\]' "$tmp/cap3.out")
check "without -w, one line a packet: the two FINs (-c 2: $n)" test "$n" = 2 -a \
	"$(wc -l <"$tmp/cap3.out")" = 2
out=$(timeout 5 "$sluice" tcpdump "$lst" -i nosuch 2>&1)
check "an unknown link is refused, the links named ($out)" grep -q 'any, lo' <<<"$out"
out=$(timeout 5 "$sluice" tcpdump "$lst" 'tcp port' 2>&1)
check "a bad expression is refused with libpcap's message" grep -qi 'syntax' <<<"$out"
ls /dev/shm/sluicecap-"$lst"-* >/dev/null 2>&1
check "no capture ring is left in /dev/shm" test $? != 0
# A tool killed outright runs no cleanup: the stack finds it gone within
# a second of traffic and stops copying, its ring removed.
"$sluice" tcpdump "$lst" -w /dev/null >/dev/null 2>"$tmp/cap4.err" &	# killed below
kpid=$!
wait_for "$tmp/cap4.err" capturing
kill -KILL "$kpid"
wait "$kpid" 2>/dev/null
sleep 1.2
touch "$tmp/go4"
wait_for "$tmp/lo.out" done4
ls /dev/shm/sluicecap-"$lst"-"$kpid" >/dev/null 2>&1
check "a SIGKILLed capture's ring is removed by the stack's next packets" test $? != 0
out=$(timeout 5 "$sluice" tcpdump "$lst" -c 1 2>&1 </dev/null & sleep 1; kill -INT $! 2>/dev/null; wait)
check "and a new capture starts ($out)" grep -q capturing <<<"$out"
# -i lo -w: Ethernet with zero addresses, as the kernel's tcpdump -i lo
# writes; the file's snapshot length the kernel tcpdump's, 262144.
capture 5 -i lo -w "$tmp/lo.pcap"
check "-i lo is written as EN10MB with zero addresses, snapshot 262144, as the kernel's lo" test \
	"$("$td" -nn -r "$tmp/lo.pcap" -c 1 2>&1 | grep -c 'link-type EN10MB .*snapshot length 262144')" = 1 -a \
	"$("$td" -nn -e -r "$tmp/lo.pcap" 2>/dev/null | grep -c '00:00:00:00:00:00 > 00:00:00:00:00:00, ethertype IPv4')" -ge 11
check "and its lines say In, as the kernel's -i any does for lo" \
	test "$(grep -c ' lo In  IP ' "$tmp/cap3.out")" = 2
wait

# --- 2. a TAP stack against the kernel --------------------------------------
if ! ip netns add "$ns" 2>/dev/null; then
	skip "capture on a TAP link" "cannot create network namespaces here"
	done_testing
	exit
fi
in_ns() { ip netns exec "$ns" "$@"; }
in_ns ip link set lo up
in_ns ip tuntap add dev pt0 mode tap multi_queue
in_ns ip addr add 10.205.0.1/24 dev pt0
in_ns ip link set pt0 up
in_ns timeout 30 "$py" -c '
import socket, threading
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("10.205.0.1", 7101)); t.listen(4)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("10.205.0.1", 7102))
def udp():
    while True:
        d, a = u.recvfrom(2000); u.sendto(d, a)
threading.Thread(target=udp, daemon=True).start()
print("ready", flush=True)
while True:
    c, _ = t.accept()
    while True:
        d = c.recv(4000)
        if not d:
            break
        c.sendall(d)
    c.close()' >"$tmp/k.out" 2>&1 &
wait_for "$tmp/k.out" ready
cat >"$tmp/tap.py" <<'EOF'
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(b"warm", ("10.205.0.1", 7102))    # ARP resolved before the capture
s.recvfrom(100)
print("ready", flush=True)
for k in (1, 2):
    for _ in range(100):
        if os.path.exists(d + "/tgo%d" % k):
            break
        time.sleep(0.1)
    c = socket.create_connection(("10.205.0.1", 7101), timeout=3)
    c.sendall(b"tap hello")
    assert c.recv(100) == b"tap hello"
    c.shutdown(socket.SHUT_WR)       # the kernel's FIN is in before "done"
    assert c.recv(100) == b""
    c.close()
    s.sendto(b"tap datagram", ("10.205.0.1", 7102))
    assert s.recvfrom(100)[0] == b"tap datagram"
    if k == 1:
        s.sendto(b"to nobody", ("10.205.0.9", 7102))   # an ARP request, unanswered
    time.sleep(0.3)
    print("done%d" % k, flush=True)
EOF
in_ns timeout 30 "$sluice" run --stack "$tst" --tap pt0 --addr 10.205.0.2/24 -- \
	"$py" "$tmp/tap.py" "$tmp" >"$tmp/tap.out" 2>&1 &
wait_for "$tmp/tap.out" ready
check "a program on a TAP stack reaches the kernel's UDP echo" grep -q ready "$tmp/tap.out"
# tcap K ARGS...: capture exchange K on the TAP stack.
tcap() {
	local k=$1 cpid
	shift
	timeout 20 "$sluice" tcpdump "$tst" "$@" 2>"$tmp/tcap$k.err" &
	cpid=$!
	wait_for "$tmp/tcap$k.err" capturing
	touch "$tmp/tgo$k"
	wait_for "$tmp/tap.out" "done$k"
	kill -INT "$cpid" 2>/dev/null
	wait "$cpid"
}
# The kernel forgets the stack's address: it asks for it (ARP) before its
# SYN-ACK can go out, and the stack answers.
in_ns ip neigh flush dev pt0
tcap 1 -i pt0 -w "$tmp/tap.pcap"
rd "$tmp/tap.pcap" >"$tmp/tap.txt"
mac=$(in_ns cat /sys/class/net/pt0/address)
check "-i pt0 is written as Ethernet (EN10MB), as tcpdump -i on a device" \
	grep -q 'link-type EN10MB' <("$td" -nn -r "$tmp/tap.pcap" -c 1 2>&1)
check "the kernel's ARP request for the stack's address, and the stack's reply" test \
	"$(grep -c 'ARP, Request who-has 10.205.0.2 tell 10.205.0.1' "$tmp/tap.txt")" -ge 1 -a \
	"$(grep -c 'ARP, Reply 10.205.0.2 is-at' "$tmp/tap.txt")" -ge 1
check "the stack's ARP request for an address nobody has" \
	grep -q 'ARP, Request who-has 10.205.0.9 tell 10.205.0.2' "$tmp/tap.txt"
# -e: the frames' addresses; the kernel's frames come from pt0's MAC.
check "the kernel's SYN-ACK frame is from pt0's address ($mac)" \
	grep -q "^$mac > .*10.205.0.1.7101 > 10.205.0.2.[0-9]*: Flags \[S\.\]" \
	<("$td" -nn -e -r "$tmp/tap.pcap" 2>/dev/null | cut -d' ' -f2-)
check "the SYN out on the link and the kernel's SYN-ACK back" test \
	"$(grep -c '10.205.0.2.[0-9]* > 10.205.0.1.7101: Flags \[S\],' "$tmp/tap.txt")" = 1 -a \
	"$(grep -c '10.205.0.1.7101 > 10.205.0.2.[0-9]*: Flags \[S\.\],' "$tmp/tap.txt")" = 1
check "9 bytes each way on the TCP connection" test \
	"$(grep -c '> 10.205.0.1.7101: Flags \[P\.\], seq 1:10,' "$tmp/tap.txt")" = 1 -a \
	"$(grep -c '10.205.0.1.7101 > .*Flags \[P\.\], seq 1:10,' "$tmp/tap.txt")" = 1
check "the datagram out and its echo back (UDP, length 12)" test \
	"$(grep -c 'UDP, length 12' "$tmp/tap.txt")" = 2
check "the kernel's checksums are right in the capture (tcpdump -vv)" test -z \
	"$("$td" -nn -vv -r "$tmp/tap.pcap" 2>/dev/null | grep -i 'incorrect')"
check "the capture has the link's packets only, both FINs among them" test \
	"$(grep -c 127.0.0.1 "$tmp/tap.txt")" = 0 -a "$(grep -c 'Flags \[F' "$tmp/tap.txt")" = 2
# Again with -i any and a filter for ARP and SYNs: SLL2 records with the
# direction of each (tcpdump -e: Out for the stack's SYN, In for the
# kernel's SYN-ACK, B for the kernel's broadcast request), nothing else.
in_ns ip neigh flush dev pt0
tcap 2 -w "$tmp/tany.pcap" 'arp or tcp[tcpflags] & tcp-syn != 0'
"$td" -nn -e -r "$tmp/tany.pcap" 2>/dev/null | cut -d' ' -f2- >"$tmp/tany.txt"
tany() { grep -c "$1" "$tmp/tany.txt"; }
check "-i any with a filter: the SYN Out, the SYN-ACK In, ARP both ways, nothing else" test \
	"$(tany 'Out .*ethertype IPv4.*10.205.0.2.[0-9]* > 10.205.0.1.7101: Flags \[S\],')" = 1 -a \
	"$(tany 'In .*ethertype IPv4.*10.205.0.1.7101 > 10.205.0.2.[0-9]*: Flags \[S\.\],')" = 1 -a \
	"$(tany 'B .*ethertype ARP.*Request who-has 10.205.0.2')" -ge 1 -a \
	"$(tany 'Out .*ethertype ARP.*Reply 10.205.0.2 is-at')" -ge 1 -a \
	"$(grep -vc 'ARP\|Flags \[S' "$tmp/tany.txt")" = 0
done_testing
