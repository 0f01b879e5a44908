// SPDX-License-Identifier: BSD-2-Clause
/*
 * A stack socket handed to the kernel before its first use (issue 15;
 * lib/preload/README.md, "Kernel peers" and "Every fd of it"): what the
 * program sees of it afterwards must be what it sees on Linux, where the
 * socket never changed.  Run on the kernel and under `sluice run` (the
 * host path in tests/host/test_kernel_peer.sh, a module's stack in
 * tests/vm/sockfd.sh), and the lines compared.
 *
 *   handover [CASE...]  every case below (or those named), one line each, no number that changes
 *               from run to run; lines starting with '#' say what each fd
 *               was (a module socket fd, a Sluice placeholder, a kernel
 *               socket) and are not compared
 *
 * The peers are the kernel's in both runs: a TCP listener and a UDP
 * socket on 127.0.0.1 made with syscall(SYS_socket), which no preload
 * takes, so each stack socket connects or sends where only the kernel
 * is, and is handed over (kernel peers).
 *
 *   epoll     a non-blocking socket in three epoll sets before connect():
 *             level-triggered EPOLLIN|EPOLLOUT, edge-triggered, and
 *             EPOLLONESHOT that fires before connect(); after it each set
 *             still holds the socket with the program's data: the level
 *             one reports it, the edge one once, the fired one-shot
 *             nothing until EPOLL_CTL_MOD, then EPOLL_CTL_DEL finds it
 *   dup       a socket and its dup(): connect() on the first (blocking),
 *             the dup in an epoll set; both fds one socket afterwards
 *             (one inode), data through either, the dup's set reports it
 *   dupopt    a socket and its dup(): an option the stack does not have
 *             (IP_FREEBIND) set on the first hands it over before use;
 *             the dup reads the option back and connects, the first
 *             carries the data
 *   udpdup    a datagram socket and its dup(): a sendto() from the first
 *             to the kernel's UDP socket arrives, the answer comes back
 *             to the dup
 *   fork      a socket, then fork(): the parent connect()s it (handed
 *             over); the child, which holds it too, then finds it
 *             connected (its peer's name), reads what the peer sent
 *             (poll, epoll, recv) and sends; the parent sends too, and
 *             the peer gets both, in order (lib/preload/README.md,
 *             "Other processes")
 *   forkopt   a socket, then fork(): the parent sets an option the stack
 *             does not have (IP_FREEBIND: handed over before use); the
 *             child reads it back and connect()s, and the parent then
 *             finds its socket connected and sends on it
 *   scm       a socket given with SCM_RIGHTS to a process forked before
 *             it was made; the sender connect()s it, the receiver then
 *             finds it connected, reads and sends, as in fork
 *   exit      as fork, but the process that connect()s (handing the
 *             socket over) _exit()s at once, before the child's first
 *             call on it: the child still finds it connected, reads the
 *             peer's bytes and sends, and its close is the peer's end
 *             (lib/preload/README.md, "The carrier")
 *   kill      as exit, the connecting process SIGKILLed right after its
 *             connect() returned
 *
 * Every wait is bounded (an alarm ends the program after 20 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stackfd.h"

static struct sockaddr_in lsn_addr, udp_addr;
static int lsn = -1, usock = -1;

/* A kernel socket whatever preload is loaded: the raw system call. */
static int ksocket(int type)
{
	return (int)syscall(SYS_socket, AF_INET, type | SOCK_CLOEXEC, 0);
}

static void kernel_peers(void)
{
	socklen_t l = sizeof(lsn_addr);

	lsn = ksocket(SOCK_STREAM);
	usock = ksocket(SOCK_DGRAM);
	lsn_addr = (struct sockaddr_in){ .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	udp_addr = lsn_addr;
	if (lsn < 0 || usock < 0 ||
	    syscall(SYS_bind, lsn, &lsn_addr, sizeof(lsn_addr)) ||
	    syscall(SYS_listen, lsn, 8) ||
	    syscall(SYS_getsockname, lsn, &lsn_addr, &l) ||
	    syscall(SYS_bind, usock, &udp_addr, sizeof(udp_addr)) ||
	    (l = sizeof(udp_addr), syscall(SYS_getsockname, usock, &udp_addr, &l))) {
		perror("kernel peers");
		exit(2);
	}
}

/* What fd is, for the '#' lines: the stack's (a module socket fd, a
 * placeholder) or a kernel socket. */
static void say_kind(const char *c, const char *what, int fd)
{
	char p[32], l[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, l, sizeof(l) - 1);
	l[n > 0 ? n : 0] = 0;
	printf("# %s %s fd %s %s\n", c, what, stack_fd(fd) ? "stack" : "kernel", l);
}

/* A connection from the kernel's listener, or -1 after 2 s. */
static int take(void)
{
	struct pollfd p = { .fd = lsn, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		return -1;
	return accept4(lsn, NULL, NULL, SOCK_CLOEXEC);
}

static void wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	poll(&p, 1, 2000);
}

static const char *err(long r)
{
	return r < 0 ? strerrorname_np(errno) : "ok";
}

static int same_file(int a, int b)
{
	struct stat x, y;

	return !fstat(a, &x) && !fstat(b, &y) && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

static void show_ev(const char *c, const char *set, int ep, int ms)
{
	struct epoll_event ev;
	int n = epoll_wait(ep, &ev, 1, ms);

	if (n == 1)
		printf("%s %s: 1 events %#x data %#llx\n", c, set,
		       ev.events & (EPOLLIN | EPOLLOUT | EPOLLHUP | EPOLLERR),
		       (unsigned long long)ev.data.u64);
	else
		printf("%s %s: %d\n", c, set, n);
}

static int add(int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		printf("epoll add: %s\n", strerrorname_np(errno));
	return ep;
}

static void case_epoll(void)
{
	const char *c = "epoll";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), s, lt, et, one;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 0xc3 };
	char b[8] = "";
	long r;

	say_kind(c, "before", fd);
	lt = add(fd, EPOLLIN | EPOLLOUT, 0xa1);
	et = add(fd, EPOLLIN | EPOLLOUT | EPOLLET, 0xb2);
	one = add(fd, EPOLLOUT | EPOLLONESHOT, 0xc3);
	/* A fresh TCP socket is writable (and hung up): the one-shot fires. */
	show_ev(c, "oneshot before", one, 1000);
	r = connect(fd, (struct sockaddr *)&lsn_addr, sizeof(lsn_addr));
	printf("%s connect %ld %s\n", c, r, err(r));
	say_kind(c, "after", fd);
	s = take();
	if (s < 0 || send(s, "hi", 2, 0) != 2)
		printf("%s: no connection from the listener\n", c);
	wait_in(fd);
	show_ev(c, "level", lt, 1000);
	show_ev(c, "level again", lt, 1000);
	show_ev(c, "edge", et, 1000);
	show_ev(c, "edge again", et, 0);
	show_ev(c, "oneshot after", one, 100);
	r = epoll_ctl(one, EPOLL_CTL_MOD, fd, &ev);
	printf("%s oneshot mod %ld %s\n", c, r, err(r));
	show_ev(c, "oneshot rearmed", one, 1000);
	r = epoll_ctl(lt, EPOLL_CTL_DEL, fd, NULL);
	printf("%s level del %ld %s\n", c, r, err(r));
	r = recv(fd, b, sizeof(b) - 1, 0);
	printf("%s recv %ld %s\n", c, r, r > 0 ? b : err(r));
	close(s);
	close(fd);
	close(lt);
	close(et);
	close(one);
}

static void case_dup(void)
{
	const char *c = "dup";
	int fd = socket(AF_INET, SOCK_STREAM, 0), d = dup(fd), s, ep;
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	char b[8] = "";
	long r;

	say_kind(c, "before", fd);
	ep = add(d, EPOLLIN, 0xd4);
	r = connect(fd, (struct sockaddr *)&lsn_addr, sizeof(lsn_addr));
	printf("%s connect %ld %s\n", c, r, err(r));
	say_kind(c, "after", fd);
	say_kind(c, "after, the dup", d);
	printf("%s one socket %d\n", c, same_file(fd, d));
	r = getpeername(d, (struct sockaddr *)&peer, &pl);
	printf("%s dup's peer %s %d\n", c, err(r), !r && peer.sin_port == lsn_addr.sin_port);
	s = take();
	r = send(d, "ab", 2, 0);
	printf("%s send on the dup %ld %s\n", c, r, err(r));
	wait_in(s);
	r = s < 0 ? -1 : recv(s, b, sizeof(b) - 1, MSG_DONTWAIT);
	printf("%s peer got %ld %s\n", c, r, r > 0 ? b : err(r));
	if (s >= 0)
		send(s, "cd", 2, 0);
	wait_in(fd);
	show_ev(c, "dup's set", ep, 1000);
	memset(b, 0, sizeof(b));
	r = recv(fd, b, sizeof(b) - 1, MSG_DONTWAIT);
	printf("%s recv on the first %ld %s\n", c, r, r > 0 ? b : err(r));
	close(fd);
	r = send(d, "e", 1, 0);
	printf("%s send on the dup after the first's close %ld %s\n", c, r, err(r));
	close(d);
	memset(b, 0, sizeof(b));
	wait_in(s);
	r = s < 0 ? -1 : recv(s, b, sizeof(b) - 1, 0);
	printf("%s peer got %ld %s\n", c, r, r > 0 ? b : err(r));
	close(s);
	close(ep);
}

static void case_dupopt(void)
{
	const char *c = "dupopt";
	int fd = socket(AF_INET, SOCK_STREAM, 0), d = dup(fd), s, one = 1, v = 0;
	socklen_t vl = sizeof(v);
	char b[8] = "";
	long r;

	say_kind(c, "before", fd);
	r = setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	printf("%s setsockopt %ld %s\n", c, r, err(r));
	say_kind(c, "after", fd);
	say_kind(c, "after, the dup", d);
	printf("%s one socket %d\n", c, same_file(fd, d));
	r = getsockopt(d, IPPROTO_IP, IP_FREEBIND, &v, &vl);
	printf("%s dup's option %ld %s %d\n", c, r, err(r), v);
	r = connect(d, (struct sockaddr *)&lsn_addr, sizeof(lsn_addr));
	printf("%s connect on the dup %ld %s\n", c, r, err(r));
	s = take();
	r = send(fd, "fg", 2, 0);
	printf("%s send on the first %ld %s\n", c, r, err(r));
	wait_in(s);
	r = s < 0 ? -1 : recv(s, b, sizeof(b) - 1, MSG_DONTWAIT);
	printf("%s peer got %ld %s\n", c, r, r > 0 ? b : err(r));
	close(s);
	close(fd);
	close(d);
}

static void case_udpdup(void)
{
	const char *c = "udpdup";
	int u = socket(AF_INET, SOCK_DGRAM, 0), d = dup(u);
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	char b[8] = "";
	long r;

	say_kind(c, "before", u);
	r = sendto(u, "u1", 2, 0, (struct sockaddr *)&udp_addr, sizeof(udp_addr));
	printf("%s sendto %ld %s\n", c, r, err(r));
	say_kind(c, "after", u);
	say_kind(c, "after, the dup", d);
	printf("%s one socket %d\n", c, same_file(u, d));
	wait_in(usock);
	r = recvfrom(usock, b, sizeof(b) - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
	printf("%s kernel got %ld %s\n", c, r, r > 0 ? b : err(r));
	if (r > 0)
		sendto(usock, "u2", 2, 0, (struct sockaddr *)&from, fl);
	wait_in(d);
	memset(b, 0, sizeof(b));
	r = recv(d, b, sizeof(b) - 1, MSG_DONTWAIT);
	printf("%s the dup got %ld %s\n", c, r, r > 0 ? b : err(r));
	close(u);
	close(d);
}

/* The holder that did not hand it over: the socket as the peer left it
 * ("k1" sent), read with poll, epoll and recv, then "c1" sent; the
 * peer's name first.  Prints its lines, then exits. */
static void other_holder(const char *c, int fd)
{
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[8] = "";
	int ep;
	long r;

	r = getpeername(fd, (struct sockaddr *)&peer, &pl);
	printf("%s other: peer %s %d\n", c, err(r), !r && peer.sin_port == lsn_addr.sin_port);
	r = poll(&p, 1, 2000);
	printf("%s other: poll %ld %#x\n", c, r, p.revents);
	ep = add(fd, EPOLLIN, 0xe5);
	show_ev(c, "other: set", ep, 1000);
	r = recv(fd, b, sizeof(b) - 1, 0);
	printf("%s other: recv %ld %s\n", c, r, r > 0 ? b : err(r));
	r = send(fd, "c1", 2, 0);
	printf("%s other: send %ld %s\n", c, r, err(r));
	say_kind(c, "other, after", fd);
	close(ep);
	close(fd);
}

/* Both holders closed: the peer's end (s, the listener's connection),
 * at once (no copy of the kernel socket left open anywhere:
 * lib/preload/README.md, "Last holder"). */
static void peer_end(const char *c, int s)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	char b;
	long r;

	r = s < 0 || poll(&p, 1, 500) != 1 ? -2 : recv(s, &b, 1, MSG_DONTWAIT);
	printf("%s peer's end %s\n", c, r == -2 ? "not within 0.5 s" : r ? "data" : "0");
}

/* connect() to the listener (the hand-over), said with what fd is after. */
static void connect_said(const char *c, int fd)
{
	long r = connect(fd, (struct sockaddr *)&lsn_addr, sizeof(lsn_addr));

	printf("%s connect %ld %s\n", c, r, err(r));
	say_kind(c, "after", fd);
}

/* The peer's side once the other holder is done: "c1" then "p1" (sent
 * on the parent's fd), in order. */
static void peer_reads(const char *c, int fd, int s)
{
	char b[8] = "";
	long r;

	r = send(fd, "p1", 2, 0);
	printf("%s send on the first %ld %s\n", c, r, err(r));
	close(fd);
	for (size_t got = 0; s >= 0 && got < 4;) {
		wait_in(s);
		r = recv(s, b + got, 4 - got, MSG_DONTWAIT);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	printf("%s peer got %s\n", c, b);
	peer_end(c, s);
	close(s);
}

/* A child that holds every fd too and goes on once told (a "g" on a
 * pipe): 0 in it, its pid in the caller with the pipe's end to tell it
 * by in *go; -1 without a pipe. */
static pid_t fork_told(int *go)
{
	int p[2];
	pid_t pid;
	char x;

	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		close(p[1]);
		if (read(p[0], &x, 1) != 1)
			_exit(1);
		return 0;
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

/* Tell the other holder (process pid, told through go) to go on, and wait
 * for it. */
static void tell_and_wait(const char *c, int go, pid_t pid)
{
	if (write(go, "g", 1) != 1 || waitpid(pid, NULL, 0) != pid)
		printf("%s: no child\n", c);
	close(go);
}

/* The caller's side of "fork" and "scm": connect() (the hand-over), a
 * connection from the listener that sends "k1", the other holder
 * (process pid) let go through fd go and waited for, then the peer's. */
static void connect_then_other(const char *c, int fd, int go, pid_t pid)
{
	int s;

	connect_said(c, fd);
	s = take();
	if (s < 0 || send(s, "k1", 2, 0) != 2)
		printf("%s: no connection from the listener\n", c);
	tell_and_wait(c, go, pid);
	peer_reads(c, fd, s);
}

static void case_fork(void)
{
	const char *c = "fork";
	int fd = socket(AF_INET, SOCK_STREAM, 0), go;
	pid_t pid;

	say_kind(c, "before", fd);
	pid = fork_told(&go);
	if (pid < 0)
		return;
	if (!pid) {
		other_holder(c, fd);
		_exit(0);
	}
	connect_then_other(c, fd, go, pid);
}

static void case_forkopt(void)
{
	const char *c = "forkopt";
	int fd = socket(AF_INET, SOCK_STREAM, 0), go, s = -1, one = 1;
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	char b[8] = "";
	pid_t pid;
	long r;

	say_kind(c, "before", fd);
	pid = fork_told(&go);
	if (pid < 0)
		return;
	if (!pid) {
		int v = 0;
		socklen_t vl = sizeof(v);

		r = getsockopt(fd, IPPROTO_IP, IP_FREEBIND, &v, &vl);
		printf("%s other: option %ld %s %d\n", c, r, err(r), v);
		r = connect(fd, (struct sockaddr *)&lsn_addr, sizeof(lsn_addr));
		printf("%s other: connect %ld %s\n", c, r, err(r));
		say_kind(c, "other, after", fd);
		_exit(0);
	}
	r = setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	printf("%s setsockopt %ld %s\n", c, r, err(r));
	say_kind(c, "after", fd);
	tell_and_wait(c, go, pid);
	r = getpeername(fd, (struct sockaddr *)&peer, &pl);
	printf("%s peer %s %d\n", c, err(r), !r && peer.sin_port == lsn_addr.sin_port);
	s = take();
	r = send(fd, "p1", 2, 0);
	printf("%s send %ld %s\n", c, r, err(r));
	close(fd);
	wait_in(s);
	r = s < 0 ? -1 : recv(s, b, sizeof(b) - 1, MSG_DONTWAIT);
	printf("%s peer got %ld %s\n", c, r, r > 0 ? b : err(r));
	if (s >= 0)
		close(s);
}

/*
 * "exit" and "kill": a process of its own (the caller) makes the socket,
 * forks the other holder, connect()s and says so, then _exit()s (or waits
 * to be SIGKILLed, kill); this process, a subreaper (the other holder is
 * the caller's child), then has the listener's connection send "k1", lets
 * the other holder go and reads its "c1" and the end.
 */
static void case_gone(const char *c, bool kill_it)
{
	int said[2], go[2], s;
	char b[8] = "", x;
	pid_t caller, holder = -1;
	long r;

	if (pipe(said) || pipe(go))
		return;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	caller = fork();
	if (!caller) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		close(said[0]);
		say_kind(c, "before", fd);
		holder = fork();
		if (!holder) {
			close(said[1]);
			close(go[1]);
			if (read(go[0], &x, 1) != 1)
				_exit(1);
			other_holder(c, fd);
			_exit(0);
		}
		connect_said(c, fd);
		if (write(said[1], &holder, sizeof(holder)) != sizeof(holder))
			_exit(1);
		if (kill_it)
			pause();
		_exit(0);
	}
	close(said[1]);
	close(go[0]);
	if (caller < 0 || read(said[0], &holder, sizeof(holder)) != sizeof(holder)) {
		printf("%s: no caller\n", c);
		holder = -1;
	}
	if (kill_it && caller > 0)
		kill(caller, SIGKILL);
	if (caller > 0)
		waitpid(caller, NULL, 0);
	s = take();
	if (s < 0 || send(s, "k1", 2, 0) != 2)
		printf("%s: no connection from the listener\n", c);
	if (holder > 0)
		tell_and_wait(c, go[1], holder);
	else
		close(go[1]);
	close(said[0]);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	wait_in(s);
	r = s < 0 ? -1 : recv(s, b, 2, MSG_DONTWAIT);
	printf("%s peer got %ld %s\n", c, r, r > 0 ? b : err(r));
	peer_end(c, s);
	if (s >= 0)
		close(s);
}

static void case_scm(void)
{
	const char *c = "scm";
	int sp[2], fd;
	pid_t pid;
	char x = 'g';

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		return;
	pid = fork();
	if (!pid) {
		/* Forked before the socket was made: it comes by SCM_RIGHTS. */
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} cb;
		struct iovec iov = { &x, 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
		int got = -1;

		close(sp[0]);
		if (recvmsg(sp[1], &m, 0) != 1 || !CMSG_FIRSTHDR(&m))
			_exit(1);
		memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
		say_kind(c, "other, given", got);
		if (write(sp[1], "r", 1) != 1 || read(sp[1], &x, 1) != 1)
			_exit(1);
		other_holder(c, got);
		_exit(0);
	}
	close(sp[1]);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	say_kind(c, "before", fd);
	{
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int))];
		} cb;
		struct iovec iov = { &x, 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };

		memset(&cb, 0, sizeof(cb));
		CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), &fd, sizeof(int));
		if (sendmsg(sp[0], &m, 0) != 1 || read(sp[0], &x, 1) != 1)
			printf("%s: not given\n", c);
	}
	connect_then_other(c, fd, sp[0], pid);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);	/* a send on the wrong socket: said, not fatal */
	alarm(20);
	kernel_peers();
	for (int i = 1; i < argc || i == 1; i++) {
		const char *c = argc > 1 ? argv[i] : NULL;

		if (!c || !strcmp(c, "epoll"))
			case_epoll();
		if (!c || !strcmp(c, "dup"))
			case_dup();
		if (!c || !strcmp(c, "dupopt"))
			case_dupopt();
		if (!c || !strcmp(c, "udpdup"))
			case_udpdup();
		if (!c || !strcmp(c, "fork"))
			case_fork();
		if (!c || !strcmp(c, "forkopt"))
			case_forkopt();
		if (!c || !strcmp(c, "scm"))
			case_scm();
		if (!c || !strcmp(c, "exit"))
			case_gone("exit", false);
		if (!c || !strcmp(c, "kill"))
			case_gone("kill", true);
	}
	return 0;
}
