// SPDX-License-Identifier: BSD-2-Clause
/*
 * OS-backed listeners (issue 15, lib/preload/twin.c), both ends of a
 * connection and the port rules, for tests/host/test_os_listen.sh.
 *
 *   oslisten server MODE ADDR PORT N	serve N connections, then print
 *					"served N kernel K stack S"
 *	MODE: block (blocking accept), timeo (blocking, SO_RCVTIMEO 100 ms,
 *	retried), poll, select, epoll (level), epollet (edge, accept until
 *	EAGAIN), oneshot (EPOLLONESHOT, re-armed).  The listener is
 *	non-blocking except in block and timeo.  Each connection: the
 *	client's 4-byte seed and 4-byte length, then that many bytes of
 *	pattern(seed), checked byte for byte; the answer is as many bytes of
 *	pattern(~seed).  K and S: accepted fds that were kernel sockets and
 *	Sluice sockets (a placeholder, stack_fd()).
 *   oslisten client FAMILY ADDR PORT SEED LEN
 *	FAMILY 4 or 6; send, read the answer back and check it; "ok".
 *   oslisten hold FAMILY ADDR PORT OPT LISTEN
 *	bind (OPT: none, reuseaddr, reuseport), listen if LISTEN is 1;
 *	print "bind RESULT" (and "listen RESULT"), then wait for stdin to
 *	close.
 *
 * Every wait is bounded (SIGALRM after 30 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "stackfd.h"

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	uint32_t x = seed ^ (i * 2654435761u);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (uint8_t)x;
}

static void die(const char *what)
{
	fprintf(stderr, "oslisten: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int full(int fd, void *buf, size_t len, int wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? write(fd, (char *)buf + done, len - done) :
				 read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Sender and checker of LEN bytes of pattern(seed), a block at a time. */
static int send_pattern(int fd, uint32_t seed, uint32_t len)
{
	uint8_t b[8192];

	for (uint32_t off = 0; off < len;) {
		uint32_t n = len - off < sizeof(b) ? len - off : (uint32_t)sizeof(b);

		for (uint32_t i = 0; i < n; i++)
			b[i] = pattern(seed, off + i);
		if (full(fd, b, n, 1))
			return -1;
		off += n;
	}
	return 0;
}

static int check_pattern(int fd, uint32_t seed, uint32_t len)
{
	uint8_t b[8192];

	for (uint32_t off = 0; off < len;) {
		uint32_t n = len - off < sizeof(b) ? len - off : (uint32_t)sizeof(b);

		if (full(fd, b, n, 0))
			return -1;
		for (uint32_t i = 0; i < n; i++)
			if (b[i] != pattern(seed, off + i)) {
				fprintf(stderr, "oslisten: byte %u differs\n", off + i);
				return -1;
			}
		off += n;
	}
	return 0;
}

static int kernel_n, stack_n;

/* One connection, blocking: check what comes, answer. */
static void serve(int c)
{
	uint32_t hdr[2];
	int fl = fcntl(c, F_GETFL);

	/* The kernel's own answer: a Sluice socket's fd is a placeholder. */
	if (!stack_fd(c))
		kernel_n++;
	else
		stack_n++;
	fcntl(c, F_SETFL, fl & ~O_NONBLOCK);
	if (full(c, hdr, sizeof(hdr), 0) || check_pattern(c, hdr[0], hdr[1]) ||
	    send_pattern(c, ~hdr[0], hdr[1])) {
		fprintf(stderr, "oslisten: connection failed\n");
		exit(1);
	}
	close(c);
}

/* Accept until EAGAIN (a non-blocking listener); returns how many. */
static int drain(int l, int left)
{
	int n = 0, c;

	while (n < left && (c = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		serve(c);
		n++;
	}
	if (n < left && errno != EAGAIN && errno != EWOULDBLOCK)
		die("accept4");
	return n;
}

static int addr_of(int fam, const char *a, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (fam == 6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, a, &s6->sin6_addr) != 1)
			return -1;
		return sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, a, &s4->sin_addr) != 1)
			return -1;
		return sizeof(*s4);
	}
}

static int server(const char *mode, const char *addr, int port, int n)
{
	struct sockaddr_storage ss;
	int len = addr_of(4, addr, port, &ss), one = 1, done = 0, l, ep = -1;
	bool block = !strcmp(mode, "block") || !strcmp(mode, "timeo");
	bool et = !strcmp(mode, "epollet"), os = !strcmp(mode, "oneshot");
	struct epoll_event ev = { .events = EPOLLIN };

	l = socket(AF_INET, SOCK_STREAM | (block ? 0 : SOCK_NONBLOCK), 0);
	if (l < 0 || len < 0)
		die("socket");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&ss, (socklen_t)len) || listen(l, 64))
		die("bind/listen");
	if (!strcmp(mode, "timeo")) {
		struct timeval tv = { 0, 100000 };

		setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (!strncmp(mode, "epoll", 5) || os) {
		ep = epoll_create1(0);
		ev.events |= et ? EPOLLET : os ? EPOLLONESHOT : 0;
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev))
			die("epoll");
	}
	printf("ready\n");
	fflush(stdout);
	while (done < n) {
		if (block) {
			int c = accept(l, NULL, NULL);

			if (c < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
				continue;	/* timeo: the timeout ran out */
			if (c < 0)
				die("accept");
			serve(c);
			done++;
		} else if (!strcmp(mode, "poll")) {
			struct pollfd p = { .fd = l, .events = POLLIN };

			if (poll(&p, 1, 10000) != 1 || !(p.revents & POLLIN))
				die("poll");
			done += drain(l, n - done);
		} else if (!strcmp(mode, "select")) {
			fd_set r;
			struct timeval tv = { 10, 0 };

			FD_ZERO(&r);
			FD_SET(l, &r);
			if (select(l + 1, &r, NULL, NULL, &tv) != 1)
				die("select");
			done += drain(l, n - done);
		} else {
			struct epoll_event got;

			if (epoll_wait(ep, &got, 1, 10000) != 1)
				die("epoll_wait");
			/* Edge: everything up to EAGAIN, or no new report.
			 * Level and one-shot: one, so the next report is
			 * checked too. */
			done += et ? drain(l, n - done) : drain(l, 1);
			if (os && epoll_ctl(ep, EPOLL_CTL_MOD, l, &ev))
				die("epoll_ctl MOD");
		}
	}
	printf("served %d kernel %d stack %d\n", done, kernel_n, stack_n);
	return 0;
}

static int client(int fam, const char *addr, int port, uint32_t seed, uint32_t len)
{
	struct sockaddr_storage ss;
	int alen = addr_of(fam, addr, port, &ss), c;
	uint32_t hdr[2] = { seed, len };

	c = socket(fam == 6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (c < 0 || alen < 0)
		die("socket");
	if (connect(c, (struct sockaddr *)&ss, (socklen_t)alen))
		die("connect");
	if (full(c, hdr, sizeof(hdr), 1) || send_pattern(c, seed, len) ||
	    check_pattern(c, ~seed, len)) {
		fprintf(stderr, "oslisten: client exchange failed\n");
		return 1;
	}
	close(c);
	printf("ok\n");
	return 0;
}

static const char *res(int r)
{
	return r ? (errno == EADDRINUSE ? "EADDRINUSE" : strerror(errno)) : "0";
}

static int hold(int fam, const char *addr, int port, const char *opt, int lis)
{
	struct sockaddr_storage ss;
	int alen = addr_of(fam, addr, port, &ss), one = 1, s;
	char b;

	s = socket(fam == 6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (s < 0 || alen < 0)
		die("socket");
	if (!strcmp(opt, "reuseaddr"))
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	else if (!strcmp(opt, "reuseport"))
		setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	printf("bind %s\n", res(bind(s, (struct sockaddr *)&ss, (socklen_t)alen)));
	if (lis)
		printf("listen %s\n", res(listen(s, 8)));
	fflush(stdout);
	while (read(0, &b, 1) > 0)
		;
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	alarm(30);
	if (argc == 6 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), argv[3], atoi(argv[4]),
			      (uint32_t)strtoul(argv[5], NULL, 0), (uint32_t)strtoul(argv[6], NULL, 0));
	if (argc == 7 && !strcmp(argv[1], "hold"))
		return hold(atoi(argv[2]), argv[3], atoi(argv[4]), argv[5], atoi(argv[6]));
	fprintf(stderr, "usage: see the comment at the top of tests/preload/oslisten.c\n");
	return 2;
}
