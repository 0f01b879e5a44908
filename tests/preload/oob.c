// SPDX-License-Identifier: BSD-2-Clause
/*
 * Urgent data on TCP as Linux has it (issue 24 item 5; net/ipv4/tcp.c
 * tcp_recv_urg(), tcp_poll(), tcp_ioctl(); tcp_input.c tcp_urg(),
 * tcp_check_urg()): send(MSG_OOB) makes its last byte urgent; the
 * receiver keeps that byte out of band (unless SO_OOBINLINE), reads stop
 * at it (SIOCATMARK 1 there) and step over it, recv(MSG_OOB) returns it
 * once (EINVAL with none, after it was read, or inline; EAGAIN while the
 * pointer came and the byte has not), poll/epoll give POLLPRI and select
 * its exception set while it is unread, and a newer urgent byte replaces
 * an unread one.  Each new urgent pointer sends SIGURG (si_code SI_KERNEL)
 * to the socket's owner, O_ASYNC or not (sk_send_sigurg()): a process, a
 * process group, a thread; none with no owner; with O_ASYNC, SIGIO too.
 *
 * A sender and a receiver on one connection, in steps: the receiver
 * sends the sender one byte ("go") for each step, waits (bounded) until
 * what the step sent has arrived, and prints one line a case, its name
 * first.  The lines must be the same on the kernel and under `sluice
 * run` (tests/host/test_conform_oob.sh).
 *
 *   oob local          both ends here, on 127.0.0.1 (the sender forked)
 *   oob recv PORT      the receiver, listening on PORT (prints "# ready")
 *   oob send ADDR PORT the sender
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "show.h"

/* The large urgent send of the last step: it cannot all arrive in the
 * receiver's small window, so the pointer comes before its byte. */
#define BIG		30000

static char pat(size_t i)
{
	return (char)('A' + i % 26);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- sender ---- */

static void go_wait(int fd)
{
	char c;

	if (recv(fd, &c, 1, MSG_WAITALL) != 1)
		exit(0);	/* the receiver is done (or gave up) */
}

static void put(int fd, const char *p, int flags)
{
	if (send(fd, p, strlen(p), flags) != (ssize_t)strlen(p))
		fprintf(stderr, "send %s: %s\n", p, strerror(errno));
}

static void sender(int fd)
{
	static char big[BIG];
	int fl;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = pat(i);
	go_wait(fd);
	put(fd, "ab", 0);
	put(fd, "c", MSG_OOB);
	go_wait(fd);
	put(fd, "de", 0);
	go_wait(fd);
	put(fd, "f", MSG_OOB);
	go_wait(fd);
	put(fd, "x", MSG_OOB);
	go_wait(fd);
	put(fd, "y", MSG_OOB);
	go_wait(fd);
	put(fd, "g", 0);
	put(fd, "h", MSG_OOB);
	go_wait(fd);
	put(fd, "i", 0);
	put(fd, "j", MSG_OOB);
	go_wait(fd);
	put(fd, "k", 0);
	put(fd, "l", MSG_OOB);
	put(fd, "m", 0);
	go_wait(fd);
	/* What the send buffer takes now; its last byte is urgent. */
	fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (send(fd, big, sizeof(big), MSG_OOB) <= 0)
		fprintf(stderr, "send big: %s\n", strerror(errno));
	fcntl(fd, F_SETFL, fl);
	go_wait(fd);
	close(fd);
	exit(0);
}

/* ---- receiver ---- */

static void go(int fd)
{
	if (send(fd, "g", 1, 0) != 1)
		fprintf(stderr, "go: %s\n", strerror(errno));
}

static int inq(int fd)
{
	int v = -1;

	ioctl(fd, FIONREAD, &v);
	return v;
}

static int atmark(int fd)
{
	int v = -1;

	if (ioctl(fd, SIOCATMARK, &v))
		return -errno;
	return v;
}

/* The urgent byte, looked at (recv(MSG_OOB | MSG_PEEK)); -1 with none. */
static int oob_peek(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_OOB | MSG_PEEK | MSG_DONTWAIT) == 1 ? (unsigned char)c : -1;
}

/* Wait up to 3 s until FIONREAD says n (with urgent data held: the
 * bytes before its mark, as Linux counts) and (oob >= 0) the urgent byte
 * is oob. */
static void arrive(int fd, int n, int oob)
{
	double t0 = now_s();

	while (now_s() - t0 < 3) {
		if (inq(fd) >= n && (oob < 0 || oob_peek(fd) == oob))
			return;
		usleep(2000);
	}
	printf("# step timed out waiting for %d bytes, urgent %c\n", n, oob);
}

/* Wait up to 3 s until a read would find data (POLLIN). */
static void readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 3000) != 1)
		printf("# step timed out waiting for data\n");
}

static const char *pollev(int fd)
{
	static char b[32];
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };

	if (poll(&p, 1, 0) < 0)
		return rv(-1);
	snprintf(b, sizeof(b), "in%d pri%d", !!(p.revents & POLLIN), !!(p.revents & POLLPRI));
	return b;
}

static const char *selev(int fd)
{
	static char b[32];
	struct timeval tv = { 0, 0 };
	fd_set r, e;

	FD_ZERO(&r);
	FD_ZERO(&e);
	FD_SET(fd, &r);
	FD_SET(fd, &e);
	if (select(fd + 1, &r, NULL, &e, &tv) < 0)
		return rv(-1);
	snprintf(b, sizeof(b), "read%d except%d", FD_ISSET(fd, &r), FD_ISSET(fd, &e));
	return b;
}

static const char *epev(int fd)
{
	static char b[32];
	struct epoll_event ev = { .events = EPOLLIN | EPOLLPRI };
	int ep = epoll_create1(0), n;

	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	memset(&ev, 0, sizeof(ev));
	n = epoll_wait(ep, &ev, 1, 0);
	close(ep);
	snprintf(b, sizeof(b), "n%d in%d pri%d", n, !!(ev.events & EPOLLIN),
		 !!(ev.events & EPOLLPRI));
	return b;
}

/* recv() of up to len bytes, shown as "N text" or "-1/ERR". */
static const char *rd(int fd, size_t len, int flags)
{
	static char out[2][64];
	static int k;
	char *o = out[k++ & 1], b[32];
	long r;

	if (len > sizeof(b))
		len = sizeof(b);
	r = recv(fd, b, len, flags | MSG_DONTWAIT);
	if (r < 0)
		snprintf(o, 64, "%s", rv(r));
	else
		snprintf(o, 64, "%ld %.*s", r, (int)r, b);
	return o;
}

/* recvmsg(MSG_OOB): the byte and whether msg_flags says MSG_OOB. */
static const char *oobmsg(int fd)
{
	static char o[64];
	char c = '?';
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	long r = recvmsg(fd, &m, MSG_OOB);

	if (r < 0)
		snprintf(o, sizeof(o), "%s", rv(r));
	else
		snprintf(o, sizeof(o), "%ld %c msg_oob%d", r, c, !!(m.msg_flags & MSG_OOB));
	return o;
}

/* ---- SIGURG ---- */

static volatile sig_atomic_t urgs, urg_code, ios;

static void on_io(int sig)
{
	(void)sig;
	ios = ios + 1;
}

static void on_urg(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	urg_code = si->si_code;
	urgs = urgs + 1;
}

/* The SIGURGs since the last look: waited for up to 3 s until there are
 * want, then 100 ms more for any extra (want 0: 300 ms for none). */
static const char *urg_got(int want)
{
	static char b[48];
	double t0 = now_s();
	int n;

	while (urgs < want && now_s() - t0 < 3)
		usleep(2000);
	usleep(want ? 100000 : 300000);
	n = urgs;
	urgs = 0;
	snprintf(b, sizeof(b), "n%d code %s", n,
		 !n ? "-" : urg_code == SI_KERNEL ? "SI_KERNEL" :
		 urg_code == SI_USER ? "SI_USER" : "other");
	return b;
}

static void owner(int s, int type, pid_t id)
{
	struct f_owner_ex ex = { .type = type, .pid = id };

	if (fcntl(s, F_SETOWN_EX, &ex))
		printf("# F_SETOWN_EX: %s\n", strerror(errno));
}

static void receiver(int s)
{
	struct sigaction sa = { .sa_sigaction = on_urg, .sa_flags = SA_SIGINFO | SA_RESTART };
	int one = 1, zero = 0;
	char b[256];
	double t0;
	long total = 0, r;
	int first = 0;

	sigaction(SIGURG, &sa, NULL);
	signal(SIGIO, on_io);
	/* Sent, an urgent byte after data; the socket has no owner. */
	go(s);
	arrive(s, 0, 'c');
	printf("sigurg_no_owner %s\n", urg_got(0));
	printf("basic_poll %s\n", pollev(s));
	printf("basic_select %s\n", selev(s));
	printf("basic_epoll %s\n", epev(s));
	printf("basic_fionread %d\n", inq(s));
	printf("basic_atmark_before %d\n", atmark(s));
	printf("basic_read %s\n", rd(s, 10, 0));		/* stops at the mark */
	printf("basic_atmark %d\n", atmark(s));
	printf("basic_poll_at_mark %s\n", pollev(s));
	printf("basic_select_at_mark %s\n", selev(s));
	printf("basic_oob %s\n", oobmsg(s));
	printf("basic_oob_again %s\n", rd(s, 1, MSG_OOB));
	printf("basic_poll_after_oob %s\n", pollev(s));
	printf("basic_epoll_after_oob %s\n", epev(s));
	printf("basic_atmark_after_oob %d\n", atmark(s));
	printf("basic_fionread_after_oob %d\n", inq(s));
	/* Data after it: a read steps over the urgent byte. */
	go(s);
	readable(s);
	printf("after_fionread %d\n", inq(s));
	printf("after_read %s\n", rd(s, 10, 0));
	printf("after_atmark %d\n", atmark(s));
	printf("after_oob %s\n", rd(s, 1, MSG_OOB));
	/* An urgent byte alone: peeked, then a read at the mark.  The
	 * process owns the socket (F_SETOWN, no O_ASYNC): SIGURG. */
	fcntl(s, F_SETOWN, getpid());
	go(s);
	arrive(s, 0, 'f');
	printf("sigurg_pid %s\n", urg_got(1));
	printf("alone_peek %s\n", rd(s, 4, MSG_OOB | MSG_PEEK));
	printf("alone_peek_data %s\n", rd(s, 4, MSG_PEEK));
	printf("alone_atmark %d\n", atmark(s));
	printf("alone_read %s\n", rd(s, 4, 0));
	printf("alone_oob_after_read %s\n", rd(s, 1, MSG_OOB));
	printf("alone_atmark_after %d\n", atmark(s));
	printf("alone_fionread_after %d\n", inq(s));
	printf("alone_poll_after %s\n", pollev(s));
	/* A second urgent byte while the first is unread at the head. */
	owner(s, F_OWNER_PGRP, getpgrp());	/* its process group */
	go(s);
	arrive(s, 0, 'x');
	printf("sigurg_pgrp %s\n", urg_got(1));
	owner(s, F_OWNER_TID, (pid_t)gettid());	/* this thread */
	go(s);
	arrive(s, 0, 'y');
	printf("sigurg_tid %s\n", urg_got(1));
	fcntl(s, F_SETOWN, 0);			/* no owner again */
	printf("replace_head_fionread %d\n", inq(s));
	printf("replace_head_oob %s\n", rd(s, 1, MSG_OOB));
	printf("replace_head_read %s\n", rd(s, 4, 0));
	/* ... and with data before the first: it stays, as data. */
	go(s);
	arrive(s, 0, 'h');
	printf("sigurg_owner_gone %s\n", urg_got(0));
	/* O_ASYNC as well: SIGURG for the pointer, SIGIO for the data. */
	fcntl(s, F_SETOWN, getpid());
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_ASYNC);
	ios = 0;
	go(s);
	arrive(s, 0, 'j');
	printf("sigurg_async %s", urg_got(1));
	printf(" sigio %d\n", ios > 0);
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_ASYNC);
	fcntl(s, F_SETOWN, 0);
	printf("replace_mid_fionread %d\n", inq(s));
	printf("replace_mid_read %s\n", rd(s, 10, 0));
	printf("replace_mid_atmark %d\n", atmark(s));
	printf("replace_mid_oob %s\n", rd(s, 1, MSG_OOB));
	printf("replace_mid_read_after %s\n", rd(s, 4, 0));
	/* SO_OOBINLINE: the urgent byte is data; reads still stop at it. */
	setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one));
	go(s);
	arrive(s, 3, -1);
	printf("inline_poll %s\n", pollev(s));
	printf("inline_select %s\n", selev(s));
	printf("inline_oob %s\n", rd(s, 1, MSG_OOB));
	printf("inline_read %s\n", rd(s, 10, 0));
	printf("inline_atmark %d\n", atmark(s));
	printf("inline_read_mark %s\n", rd(s, 10, 0));
	printf("inline_atmark_after %d\n", atmark(s));
	printf("inline_poll_after %s\n", pollev(s));
	setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &zero, sizeof(zero));
	/* The pointer before its byte: reading on to the mark (5 s). */
	go(s);
	t0 = now_s();
	while (now_s() - t0 < 5) {
		struct pollfd p = { .fd = s, .events = POLLIN | POLLPRI };
		char c;

		r = recv(s, &c, 1, MSG_OOB | MSG_PEEK | MSG_DONTWAIT);
		if (!first && !(r < 0 && errno == EINVAL)) {
			first = 1;
			printf("notyet_first_seen %s %s\n", rv(r), pollev(s));
		}
		if (atmark(s) == 1 && r == 1)
			break;
		r = recv(s, b, first ? sizeof(b) : 64, MSG_DONTWAIT);
		if (r > 0) {
			for (long i = 0; i < r; i++)
				if (b[i] != pat((size_t)(total + i)))
					printf("# byte %ld is %c\n", total + i, b[i]);
			total += r;
		} else {
			poll(&p, 1, 20);
		}
	}
	{
		char c = '?';

		r = recv(s, &c, 1, MSG_OOB);
		printf("notyet_at_mark atmark %d oob %s is_last %d\n", atmark(s), rv(r),
		       r == 1 && c == pat((size_t)total));
	}
	printf("notyet_read_on %s\n", rd(s, 4, 0));
	go(s);
}

static int listener(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1, small = 4096;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A small window: the last step's data cannot all come at once. */
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		perror("listen");
		exit(1);
	}
	return l;
}

static int connect_to(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	double t0 = now_s();

	inet_pton(AF_INET, addr, &a.sin_addr);
	while (now_s() - t0 < 10) {
		int c = socket(AF_INET, SOCK_STREAM, 0);

		if (!connect(c, (struct sockaddr *)&a, sizeof(a)))
			return c;
		close(c);
		usleep(50000);
	}
	perror("connect");
	exit(1);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(60);
	if (argc == 2 && !strcmp(argv[1], "local")) {
		int l = listener(0), s, st;
		struct sockaddr_in a;
		socklen_t al = sizeof(a);
		pid_t pid;

		getsockname(l, (struct sockaddr *)&a, &al);
		pid = fork();
		if (!pid) {
			close(l);
			sender(connect_to("127.0.0.1", ntohs(a.sin_port)));
		}
		s = accept(l, NULL, NULL);
		receiver(s);
		waitpid(pid, &st, 0);
		close(s);
		close(l);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "recv")) {
		int l = listener(atoi(argv[2])), s;

		printf("# ready\n");
		s = accept(l, NULL, NULL);
		receiver(s);
		usleep(200000);
		close(s);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "send"))
		sender(connect_to(argv[2], atoi(argv[3])));
	fprintf(stderr, "usage: oob local | recv PORT | send ADDR PORT\n");
	return 2;
}
