// SPDX-License-Identifier: BSD-2-Clause
/*
 * Live hand-off of a connection to the kernel, mid-stream (tests/vm/handoff.sh).
 *
 *   handoff_prog peer PORT [closewait]     kernel side (not under Sluice), listening
 *   handoff_prog dialer ADDR PORT          kernel side, connecting
 *   handoff_prog client ADDR PORT MODE     under sluice run, on a module stack
 *   handoff_prog server PORT MODE          the same end, accepting
 *   handoff_prog client6 ADDR PORT MODE    client, an AF_INET6 socket to ::ffff:ADDR
 *					    (an IPv4 ADDR) or to ADDR (an IPv6 one)
 *   handoff_prog peer6 PORT [closewait]    peer, an AF_INET6 listener on [::]
 *   handoff_prog resume FD TX              after an exec (MODE exec): goes on
 *
 * Both ends send TOTAL bytes of a pattern that depends on the direction
 * and the offset, and check every byte they receive.  The peer sends
 * EARLY bytes at once and then reads nothing for PAUSE_MS, so that at the
 * hand-off the client has bytes it has not read and bytes sent, unsent
 * or unacknowledged in its stack.  MODE:
 *   handoff  setsockopt(SO_ATTACH_FILTER) mid-stream: the stack has no
 *            socket filters, so the connection must go to the kernel, live,
 *            and the kernel take the filter; then TCP_INFO of the kernel
 *            socket, `ss -tin` (to SS_OUT if set), and the rest of the stream
 *            (with HO_OPT=ulp: setsockopt(TCP_ULP, "tls", 3 bytes, as
 *            Python passes it) instead, which the stack has not either;
 *            the kernel's tls module then takes the connection)
 *   closewait  as handoff, the peer having sent its FIN before (CLOSE_WAIT):
 *            the FIN moves too (the client reads the peer's bytes, then 0)
 *   nocap    the same without CAP_NET_ADMIN in the effective set (TCP repair
 *            needs it): the option fails as the stack answers, the
 *            connection stays the stack's and the stream goes on there
 *   external no option: prints "waiting pid P fd F" and sleeps (no call on
 *            the fd) until the fd is a kernel socket (`sluice handoff P F`
 *            from outside) or the file $HO_DONE exists; extnocap: the same
 *            without CAP_NET_ADMIN (the request is refused)
 *            (any of them with HO_DUP set: a dup() of the fd made first,
 *            which must be the same kernel socket after; the stream then
 *            goes on on the dup)
 *   fork     a forked child holds the connection too: it reads the
 *            peer's EARLY bytes and falls asleep in recv() (the peer
 *            pausing, HO_PAUSE_MS if set), the parent then sets
 *            SO_ATTACH_FILTER (in the stack: the live hand-off) and waits;
 *            the child wakes with the peer's next bytes and finishes the
 *            stream (lib/preload/README.md, "Other processes"); with
 *            HO_FORK_EPOLL set the child sleeps in epoll_wait() instead
 *   exec     execs itself ("resume") with LD_PRELOAD taken out of its
 *            environment: a program that will not run under Sluice; the
 *            new image checks what fd it got and finishes the stream
 *            (HO_EXEC=fexecve or execveat: by fexecve(), or execveat()
 *            with AT_EMPTY_PATH, of the program's own file opened;
 *            HO_EXEC=posix_spawn: spawned by posix_spawn(), glibc's
 *            vfork'd child, the parent waiting for it, its own fd then
 *            the kernel socket the child shares)
 * Exit 0 when every byte arrived in order and each check held; each step
 * prints a line.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <spawn.h>
#include <time.h>
#include <unistd.h>

#define TOTAL		(6u << 20)
#define EARLY		(48u << 10)
#define PAUSE_MS	1500
#define CHUNK		65536

static uint8_t pat(int dir, uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 11) * 7 + (uint64_t)dir * 29);
}

static void fill(uint8_t *b, int dir, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(dir, off + i);
}

static int check(const uint8_t *b, int dir, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(dir, off + i)) {
			fprintf(stderr, "byte %llu: got %u want %u\n",
				(unsigned long long)(off + i), b[i], pat(dir, off + i));
			return -1;
		}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Send until *tx == txend, then shut the sending side; receive until
 * *rx == rxend, checking.  0 or -1. */
static int pump(int fd, int txdir, uint64_t *tx, uint64_t txend, uint64_t *rx, uint64_t rxend)
{
	static uint8_t buf[CHUNK];
	bool shut = false;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (*tx < txend)
			p.events |= POLLOUT;
		else if (!shut) {
			shutdown(fd, SHUT_WR);
			shut = true;
		}
		if (*rx == rxend && shut)
			break;
		if (poll(&p, 1, 30000) <= 0) {
			fprintf(stderr, "stalled: tx %llu rx %llu\n", (unsigned long long)*tx,
				(unsigned long long)*rx);
			return -1;
		}
		if (p.revents & POLLIN) {
			n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0 && *rx < rxend) {
				fprintf(stderr, "early end at %llu\n", (unsigned long long)*rx);
				return -1;
			}
			if (n > 0) {
				if (*rx + (uint64_t)n > rxend || check(buf, !txdir, *rx, (size_t)n))
					return -1;
				*rx += (uint64_t)n;
			} else if (n < 0 && errno != EAGAIN) {
				perror("recv");
				return -1;
			}
		}
		if ((p.revents & POLLOUT) && *tx < txend) {
			size_t want = txend - *tx > CHUNK ? CHUNK : txend - *tx;

			fill(buf, txdir, *tx, want);
			n = send(fd, buf, want, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				*tx += (uint64_t)n;
			else if (n < 0 && errno != EAGAIN) {
				perror("send");
				return -1;
			}
		}
	}
	return 0;
}

static void show_info(int fd, const char *when);

/* A connection accepted on PORT ("ready" once listening), or -1. */
static int listen_accept_fam(int port, int fam)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int l = socket(fam, SOCK_STREAM, 0), one = 1, fd;
	struct sockaddr *sa = fam == AF_INET6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a;
	socklen_t sl = fam == AF_INET6 ? sizeof(a6) : sizeof(a);

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, sa, sl) || listen(l, 4)) {
		perror("listen");
		return -1;
	}
	printf("ready\n");
	fflush(stdout);
	fd = accept(l, NULL, NULL);
	close(l);
	return fd;
}

static int listen_accept(int port)
{
	return listen_accept_fam(port, AF_INET);
}

static int dial(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, addr, &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		close(fd);
		return -1;
	}
	return fd;
}

/* The kernel's end; with closewait it sends EARLY bytes only, then its
 * FIN, before the other end's hand-off. */
static int peer(int fd, bool closewait)
{
	uint64_t tx = 0, rx = 0;
	static uint8_t buf[EARLY];

	if (fd < 0)
		return 1;
	show_info(fd, "peer");
	fill(buf, 1, 0, EARLY);
	if (send(fd, buf, EARLY, 0) != (ssize_t)EARLY)
		return 1;
	tx = EARLY;
	if (closewait)
		shutdown(fd, SHUT_WR);
	/* Reads nothing: the client's sends pile up. */
	sleep_ms(getenv("HO_PAUSE_MS") ? atol(getenv("HO_PAUSE_MS")) : PAUSE_MS);
	if (pump(fd, 1, &tx, closewait ? EARLY : TOTAL, &rx, TOTAL))
		return 1;
	printf("peer ok rx %llu tx %llu\n", (unsigned long long)rx, (unsigned long long)tx);
	return 0;
}

/* Is fd a module socket fd (the stack's) rather than a kernel socket? */
static int is_stack_fd(int fd)
{
	char p[64], l[128];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, l, sizeof(l) - 1);
	if (n < 0)
		return -1;
	l[n] = '\0';
	return strncmp(l, "socket:", 7) != 0;
}

static int cap_net_admin(int on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	if (on)
		d[0].effective |= 1u << CAP_NET_ADMIN;
	else
		d[0].effective &= ~(1u << CAP_NET_ADMIN);
	return (int)syscall(SYS_capset, &h, d);
}

static void show_info(int fd, const char *when)
{
	struct tcp_info ti;
	socklen_t tl = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl)) {
		printf("info %s: none (%d)\n", when, errno);
		return;
	}
	printf("info %s: state %u options%s%s%s wscale %u,%u mss %u\n", when, ti.tcpi_state,
	       (ti.tcpi_options & TCPI_OPT_TIMESTAMPS) ? " ts" : "",
	       (ti.tcpi_options & TCPI_OPT_SACK) ? " sack" : "",
	       (ti.tcpi_options & TCPI_OPT_WSCALE) ? " wscale" : "",
	       ti.tcpi_snd_wscale, ti.tcpi_rcv_wscale, ti.tcpi_snd_mss);
}

/* An AF_INET6 socket connected to ::ffff:addr. */
static int dial6(const char *addr, int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (strchr(addr, ':')) {
		inet_pton(AF_INET6, addr, &a.sin6_addr);
	} else {
		a.sin6_addr.s6_addr[10] = 0xff;
		a.sin6_addr.s6_addr[11] = 0xff;
		inet_pton(AF_INET, addr, &a.sin6_addr.s6_addr[12]);
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		close(fd);
		return -1;
	}
	return fd;
}

extern char **environ;

/* MODE exec: this program again, without LD_PRELOAD (not under Sluice),
 * to go on with fd at tx; returns only if the exec failed. */
static int exec_self(int fd, uint64_t tx)
{
	char a1[16], a2[24], *args[] = { "handoff_prog", "resume", a1, a2, NULL };
	char *env[64];
	const char *way = getenv("HO_EXEC");
	int n = 0;

	snprintf(a1, sizeof(a1), "%d", fd);
	snprintf(a2, sizeof(a2), "%llu", (unsigned long long)tx);
	for (char **e = environ; *e && n < 63; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11))
			env[n++] = *e;
	env[n] = NULL;
	printf("exec: sent %llu\n", (unsigned long long)tx);
	fflush(stdout);
	/* HO_EXEC: fexecve, or execveat of the file itself (AT_EMPTY_PATH):
	 * the library judges the program from an fd, not a path. */
	if (way && !strcmp(way, "posix_spawn")) {
		int st, so = 0;
		socklen_t sl = sizeof(so);
		pid_t pid;

		errno = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, env);
		if (errno) {
			perror(way);
			return 1;
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
			return 1;
		printf("spawner: fd %d %s\n", fd,
		       getsockopt(fd, SOL_SOCKET, SO_TYPE, &so, &sl) ? "is no socket" :
		       is_stack_fd(fd) ? "is the stack's" : "is the kernel socket");
		return WEXITSTATUS(st);
	}
	if (way && (!strcmp(way, "fexecve") || !strcmp(way, "execveat"))) {
		int xfd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

		if (!strcmp(way, "fexecve"))
			fexecve(xfd, args, env);
		else
			execveat(xfd, "", args, env, AT_EMPTY_PATH);
		perror(way);
		return 1;
	}
	execve("/proc/self/exe", args, env);
	perror("execve");
	return 1;
}

/* After exec_self(): what fd is, then the rest of the stream. */
static int resume(int fd, uint64_t tx)
{
	uint64_t rx = 0;
	char p[64], l[128];
	ssize_t n;
	int so = 0;
	socklen_t sl = sizeof(so);

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, l, sizeof(l) - 1);
	l[n > 0 ? n : 0] = '\0';
	printf("resumed: fd %d is %s, preload %s\n", fd,
	       getsockopt(fd, SOL_SOCKET, SO_TYPE, &so, &sl) ? "no socket" :
	       strncmp(l, "socket:", 7) ? "another socket" : "a kernel socket",
	       getenv("LD_PRELOAD") ? "set" : "unset");
	show_info(fd, "resumed");
	fflush(stdout);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &so, &sl))
		return 3;
	if (pump(fd, 0, &tx, TOTAL, &rx, TOTAL)) {
		printf("FAIL: stream\n");
		return 1;
	}
	printf("client ok rx %llu tx %llu stack fd %d\n", (unsigned long long)rx,
	       (unsigned long long)tx, is_stack_fd(fd));
	return 0;
}

/* MODE fork: the parent hands the connection off (in the stack: live)
 * while its forked child, which holds it too, sleeps in recv(); the
 * child finishes the stream from tx. */
static int fork_holder(int fd, uint64_t tx, const struct sock_fprog *prog)
{
	static uint8_t b[CHUNK];
	uint64_t rx = 0;
	int go[2], st, r;
	ssize_t n;
	pid_t pid;
	char c;

	if (pipe(go))
		return 1;
	pid = fork();
	if (!pid) {
		close(go[0]);
		while (rx < EARLY) {
			n = recv(fd, b, EARLY - rx, 0);
			if (n <= 0 || check(b, 1, rx, (size_t)n)) {
				printf("FAIL: child read %zd at %llu\n", n, (unsigned long long)rx);
				_exit(1);
			}
			rx += (uint64_t)n;
		}
		if (getenv("HO_FORK_EPOLL")) {
			/* Asleep in epoll_wait() instead: it must wake to the
			 * peer's bytes, not to the stack socket's end. */
			struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.u64 = 0xf0 };
			int ep = epoll_create1(EPOLL_CLOEXEC), k;

			if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
				_exit(1);
			printf("child: read %llu, asleep in epoll_wait()\n", (unsigned long long)rx);
			if (write(go[1], "a", 1) != 1)
				_exit(1);
			memset(&ev, 0, sizeof(ev));
			k = epoll_wait(ep, &ev, 1, 20000);
			printf("child: epoll woke %d events%s%s%s data %llx, stack fd %d\n", k,
			       (ev.events & EPOLLIN) ? " in" : "", (ev.events & EPOLLRDHUP) ? " rdhup" : "",
			       (ev.events & EPOLLHUP) ? " hup" : "", (unsigned long long)ev.data.u64,
			       is_stack_fd(fd));
			{
				/* What the wake was, in full (a line the checks
				 * do not compare, for a run that differs). */
				struct tcp_info ti;
				socklen_t tl = sizeof(ti), el = sizeof(int);
				int err = -1;

				memset(&ti, 0, sizeof(ti));
				getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
				getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl);
				printf("child: the wake's events 0x%x, SO_ERROR %d, TCP_INFO state %u\n",
				       ev.events, err, ti.tcpi_state);
			}
			close(ep);
		} else {
			printf("child: read %llu, asleep in recv()\n", (unsigned long long)rx);
			if (write(go[1], "a", 1) != 1)
				_exit(1);
		}
		n = recv(fd, b, sizeof(b), 0);
		printf("child: woke with %zd, stack fd %d\n", n, is_stack_fd(fd));
		if (n <= 0 || check(b, 1, rx, (size_t)n))
			_exit(1);
		rx += (uint64_t)n;
		if (pump(fd, 0, &tx, TOTAL, &rx, TOTAL)) {
			printf("FAIL: child's stream\n");
			_exit(1);
		}
		printf("child ok rx %llu tx %llu stack fd %d\n", (unsigned long long)rx,
		       (unsigned long long)tx, is_stack_fd(fd));
		_exit(0);
	}
	close(go[1]);
	if (read(go[0], &c, 1) != 1)
		return 1;
	sleep_ms(300);		/* the child is asleep in recv() */
	r = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, prog, sizeof(*prog));
	printf("parent: SO_ATTACH_FILTER %d errno %d, stack fd %d\n", r, r ? errno : 0,
	       is_stack_fd(fd));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL: the child\n");
		return 1;
	}
	printf("parent: the child is done, stack fd %d\n", is_stack_fd(fd));
	close(fd);
	return r ? 1 : 0;
}

/* The end in the stack (a client or an accepted connection). */
static int client(int fd, const char *mode)
{
	/* A classic BPF program that accepts every packet whole. */
	struct sock_filter code[] = { { BPF_RET | BPF_K, 0, 0, 0xffffffffu } };
	struct sock_fprog prog = { .len = 1, .filter = code };
	static uint8_t buf[CHUNK];
	uint64_t tx = 0, rx = 0;
	int ext = !strcmp(mode, "external") || !strcmp(mode, "extnocap");
	int nocap = !strcmp(mode, "nocap") || !strcmp(mode, "extnocap");
	const char *opt = getenv("HO_OPT");
	int ulp = opt && !strcmp(opt, "ulp");
	int cw = !strcmp(mode, "closewait"), r, e;
	uint64_t rxend = cw ? EARLY : TOTAL;
	struct sockaddr_in pa;
	struct sockaddr_in6 pa6;
	socklen_t pl = sizeof(pa6);
	char addr[INET_ADDRSTRLEN] = "";
	struct epoll_event ev;
	struct timespec t0, t1;
	int flags, ep, r2, dupfd = -1;

	if (fd < 0)
		return 1;
	if (!getpeername(fd, (struct sockaddr *)&pa6, &pl)) {
		if (pa6.sin6_family == AF_INET6) {
			memcpy(&pa.sin_addr, &pa6.sin6_addr.s6_addr[12], 4);
			printf("peer name before: family %d\n", pa6.sin6_family);
		} else {
			memcpy(&pa, &pa6, sizeof(pa));
		}
		inet_ntop(AF_INET, &pa.sin_addr, addr, sizeof(addr));
	}
	printf("connected, stack fd %d\n", is_stack_fd(fd));
	flags = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	sleep_ms(400);		/* the peer's EARLY bytes arrive, unread */
	/* Sends until the stack takes no more: the peer is not reading. */
	for (int i = 0; i < 2000 && tx < TOTAL / 2; i++) {
		ssize_t n;

		fill(buf, 0, tx, CHUNK);
		n = send(fd, buf, CHUNK, MSG_NOSIGNAL);
		if (n > 0)
			tx += (uint64_t)n;
		else
			break;
	}
	fcntl(fd, F_SETFL, flags);
	printf("before: sent %llu, stack fd %d\n", (unsigned long long)tx, is_stack_fd(fd));
	show_info(fd, "before");
	/* HO_DUP: a second fd of it (dup()), which must move too. */
	if (getenv("HO_DUP"))
		dupfd = dup(fd);
	/* An epoll set that holds the fd must keep its item (unread bytes:
	 * EPOLLIN) with the program's data. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.u64 = 0x5eed;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
		perror("epoll");
		return 1;
	}
	if (nocap && !ext && cap_net_admin(0)) {
		perror("capset");
		return 1;
	}
	if (ext && cap_net_admin(0)) {
		perror("capset");
		return 1;
	}
	if (!strcmp(mode, "exec"))
		return exec_self(fd, tx);
	if (!strcmp(mode, "fork"))
		return fork_holder(fd, tx, &prog);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (ext) {
		const char *done = getenv("HO_DONE");

		printf("waiting pid %d fd %d\n", (int)getpid(), fd);
		fflush(stdout);
		for (int i = 0; i < 1200 && is_stack_fd(fd) == 1 && (!done || access(done, F_OK));
		     i++)
			sleep_ms(50);
		r = is_stack_fd(fd) == 1 ? -1 : 0;
		e = ENOPROTOOPT;
	} else {
		if (ulp)
			r = setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", 3);
		else
			r = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
		e = errno;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("setsockopt took %ld us\n",
	       (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000));
	printf("%s: %d errno %d, stack fd %d, nonblock %d\n", ulp ? "TCP_ULP" : "SO_ATTACH_FILTER",
	       r, r ? e : 0,
	       is_stack_fd(fd), !!(fcntl(fd, F_GETFL) & O_NONBLOCK));
	memset(&ev, 0, sizeof(ev));
	r2 = epoll_wait(ep, &ev, 1, 3000);
	printf("epoll after: %d data %llx in %d\n", r2, (unsigned long long)ev.data.u64,
	       !!(ev.events & EPOLLIN));
	if (nocap) {
		if (!r || e != ENOPROTOOPT || is_stack_fd(fd) != 1) {
			printf("FAIL: refused hand-off changed the socket\n");
			return 1;
		}
	} else {
		char cmd[128], *ss = getenv("SS_OUT");

		if (r || is_stack_fd(fd) != 0) {
			printf("FAIL: no hand-off\n");
			return 1;
		}
		if (dupfd >= 0) {
			struct stat a, b;

			if (is_stack_fd(dupfd) != 0 || fstat(fd, &a) || fstat(dupfd, &b) ||
			    a.st_ino != b.st_ino) {
				printf("FAIL: fd %d, its dup, is not the kernel socket\n", dupfd);
				return 1;
			}
			printf("dup: fd %d and fd %d are one kernel socket\n", fd, dupfd);
			/* The rest of the stream on the dup. */
			close(fd);
			fd = dupfd;
		}
		show_info(fd, "after");
		pl = sizeof(pa6);
		if (!getpeername(fd, (struct sockaddr *)&pa6, &pl))
			printf("peer name after: family %d\n", pa6.sin6_family);
		if (ss) {
			snprintf(cmd, sizeof(cmd), "ss -tin dst %s > %s 2>&1", addr, ss);
			if (system(cmd))
				printf("ss failed\n");
		}
	}
	if (pump(fd, 0, &tx, TOTAL, &rx, rxend)) {
		printf("FAIL: stream\n");
		return 1;
	}
	if (cw) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		/* The peer's FIN, moved with the connection: the end. */
		r = poll(&p, 1, 10000) == 1 ? (int)recv(fd, buf, 1, 0) : -2;
		printf("after the peer's bytes: read %d\n", r);
		if (r)
			return 1;
	}
	printf("client ok rx %llu tx %llu stack fd %d\n", (unsigned long long)rx,
	       (unsigned long long)tx, is_stack_fd(fd));
	close(fd);
	close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Capabilities are a thread's: dropped before the first socket, so
	 * that the library's agent thread, made then, has none either. */
	if (argc == 5 && !strcmp(argv[4], "extnocap") && cap_net_admin(0)) {
		perror("capset");
		return 1;
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "peer"))
		return peer(listen_accept(atoi(argv[2])), argc == 4 && !strcmp(argv[3], "closewait"));
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "peer6"))
		return peer(listen_accept_fam(atoi(argv[2]), AF_INET6),
			    argc == 4 && !strcmp(argv[3], "closewait"));
	if (argc == 4 && !strcmp(argv[1], "dialer"))
		return peer(dial(argv[2], atoi(argv[3])), false);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(dial(argv[2], atoi(argv[3])), argv[4]);
	if (argc == 5 && !strcmp(argv[1], "client6"))
		return client(dial6(argv[2], atoi(argv[3])), argv[4]);
	if (argc == 4 && !strcmp(argv[1], "resume"))
		return resume(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc == 4 && !strcmp(argv[1], "server"))
		return client(listen_accept(atoi(argv[2])), argv[3]);
	fprintf(stderr, "usage: %s peer PORT | dialer ADDR PORT | "
		"client|client6 ADDR PORT handoff|closewait|nocap|external|extnocap|exec | server PORT MODE\n", argv[0]);
	return 2;
}
