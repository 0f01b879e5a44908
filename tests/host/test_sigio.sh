#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# O_ASYNC signals on stack sockets as Linux sends them, EINTR of blocking
# recv() and accept() as signal(7) says, and SIOCGSKNS
# (tests/preload/sigio.c): the same program on the kernel and under
# `sluice run`, each in a network namespace of its own, every line the
# same.  A signal's line: number, si_code, si_fd, si_band, how many, to
# whom (the F_SETOWN process, a process group, an F_OWNER_TID thread, an
# owner asleep in sigsuspend() while another process sends); and each
# event's own si_code and si_band in order (connect done, data, the FIN
# after this end shut, a reset, a refused connect, a UDP ICMP error) to
# each kind of owner; urgent data (SIGURG, then with F_SETSIG POLL_PRI
# and the data's POLL_IN; a pointer that brings no data, POLL_PRI
# alone); none to an owner when the armed socket's
# process exits, execs or is killed; a burst of 100 datagrams before
# the owner takes any: 100 real-time signals, one SIGIO; the owner still
# signalled after the arming process exits, a forked child holding the
# socket; one signal an event when two processes set O_ASYNC on it; and
# after an exec of a process that armed it.
set -u
. "$(dirname "$0")/lib.sh"
prog=$top/build/tests/preload/sigio
st=sigio-$$
trap 'rm -rf /dev/shm/sluice-"$st"-* /dev/shm/sluicefd-"$st"-*' EXIT
need_netns "loopback sockets"

# Groups run apart: a signal that never comes (the asleep case ends on an
# alarm) costs only its own group's lines.
groups=("tcp_data tcp_setsig udp_data listen_conn" "fioasync owner_tid owner_pgrp" asleep skns sigwait tcp_space quiet eintr
	events_pid events_tid events_pgrp end_quiet urgent urgent_bare burst fork_keep two_armed exec_keep)
for g in "${groups[@]}"; do
	k=$(in_netns "$prog" $g 2>&1)
	s=$(in_netns env SLUICE_STACK=$st-${g%% *} "$top/build/tools/sluice" run -- "$prog" $g 2>&1)
	printf '# kernel:\n%s\n# sluice:\n%s\n' "$k" "$s" | sed 's/^/# /'
	check_as_kernel "$k" "$s"
done
# The kernel's own answers are what the cases say they are.
k=$(in_netns "$prog" tcp_setsig tcp_space events_tid urgent urgent_bare burst fork_keep two_armed exec_keep 2>&1)
check "on the kernel: F_SETSIG gives POLL_IN, si_fd and POLLIN|POLLRDNORM" \
	grep -q '^tcp_setsig sig=[0-9]* code=1 fd=fd band=0x41 n=1 to=owner$' <<<"$k"
check "on the kernel: room to write back is POLL_OUT, POLLOUT|POLLWRNORM|POLLWRBAND" \
	grep -q '^tcp_space sig=[0-9]* code=2 band=0x304 fd=fd n=1$' <<<"$k"
check "on the kernel: a connect done is POLL_OUT, to the F_OWNER_TID thread" \
	grep -q '^ev_connect_tid sig=[0-9]* n=1 seq=2:0x304 fd=fd to=owner$' <<<"$k"
check "on the kernel: the FIN after this end shut is POLL_HUP (POLLHUP|POLLERR), then POLL_IN" \
	grep -q '^ev_hup_tid sig=[0-9]* n=2 seq=6:0x18,1:0x41 fd=fd to=owner$' <<<"$k"
check "on the kernel: a reset, a refused connect, a UDP ICMP error are POLL_ERR (POLLERR)" \
	test "$(grep -c '^ev_\(reset\|refused\|udp_err\)_tid sig=[0-9]* n=1 seq=4:0x8 fd=fd to=owner$' <<<"$k")" = 3
check "on the kernel: urgent data with F_SETSIG is SIGURG (SI_KERNEL), POLL_PRI (POLLPRI|POLLRDBAND), then POLL_IN for the byte and for the segment" \
	grep -q '^urgent_setsig n=4 urg=1:0x80 seq=rt1:0x5:0x82:fd,rt1:0x1:0x41:fd,rt1:0x1:0x41:fd$' <<<"$k"
check "on the kernel: a pointer past its segment is POLL_PRI then the segment's POLL_IN, each segment's new" \
	grep -q '^urgent_setsig_long got=199999 seq=PIPIPI$' <<<"$k"
check "on the kernel: urgent data without F_SETSIG is SIGURG and SIGIO, nothing else" \
	grep -q '^urgent_nosetsig urg=1 io=1 other=0$' <<<"$k"
check "on the kernel: a new urgent pointer on a bare ACK (the window shut) is SIGURG and POLL_PRI, no POLL_IN" \
	grep -q '^urgent_bare n=2 urg=1:0x80 seq=rt1:0x5:0x82:fd$' <<<"$k"
check "on the kernel: a burst of 100 datagrams is 100 real-time signals, POLL_IN each, one SIGIO" \
	test "$(grep -c '^burst_rt n=100 poll_in=100 si_fd=100$\|^burst_sigio n=1$\|^burst_setsig_sigio n=1 poll_in=1 si_fd=1$' <<<"$k")" = 3
check "on the kernel: the owner gets the signal of a socket whose arming process exited, a child holding it" \
	test "$(grep -c '^fork_keep\(_again\)\? 1:0x41 fd=fd$' <<<"$k")" = 2
check "on the kernel: two processes that both set O_ASYNC on one socket: one signal an event, one SIGURG" \
	test "$(grep -c '^two_armed_udp n=1$\|^two_armed_urgent sigurg=1 poll_pri=1 poll_in=2$' <<<"$k")" = 2
check "on the kernel: O_ASYNC, the owner and F_SETSIG stay across exec, and signal" \
	test "$(grep -c '^exec_keep_after async=1 sig=7 own=1$\|^exec_keep_signal 1:0x41 fd=fd$' <<<"$k")" = 2
done_testing
