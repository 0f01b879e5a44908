// SPDX-License-Identifier: BSD-2-Clause
/*
 * Kernel peers (issue 15; lib/preload/README.md, "Kernel peers"): a client
 * that connect()s to this host where the stack has no listener, for
 * tests/host/test_kernel_peer.sh.  Run on the kernel and under `sluice
 * run` with the same expectations: every answer must be the kernel's.
 *
 *   kconnect serve FAMILY ADDR PORT N
 *	listen (FAMILY 4 or 6; 6 on :: takes IPv4 clients too), print
 *	"ready", serve N connections one after the other: read to EOF,
 *	answer every byte xor 0x5a, close; then print "served N kernel K
 *	stack S" (K, S: accepted fds that were kernel sockets, a raw fstat
 *	says socket, or Sluice placeholders).
 *   kconnect userve ADDR PORT N
 *	a UDP socket bound there: print "ready", answer N datagrams (each
 *	byte xor 0x5a) to their senders, print "userved N"; the first
 *	waited for in epoll_wait(), the second in poll(), the rest in
 *	recvfrom().
 *   kconnect client CASE ADDR PORT
 *	one case; prints "ok CASE kernel" or "ok CASE stack" (what the
 *	connected fd is) or "FAIL CASE: why" and exits 1:
 *	block     blocking connect (errno left as it was), names, data
 *	nonblock  SOCK_NONBLOCK|SOCK_CLOEXEC: EINPROGRESS, POLLOUT, SO_ERROR
 *		  0, flags kept, connect() again 0 then EISCONN, data
 *	epoll     non-blocking, in an epoll set before connect(): EPOLLOUT
 *		  reported after it, data
 *	opts      SO_REUSEADDR, SO_KEEPALIVE, TCP_NODELAY, TCP_KEEPIDLE,
 *		  IP_TTL set and bind(127.0.0.1:0) before connect: the
 *		  port and the options are the same after it, data
 *	bindany   bind(INADDR_ANY:0) before connect(): the port kept, data
 *	udp       a fresh UDP socket's sendto(), then a connected one's
 *		  send(): each answer comes back (from a kernel UDP socket)
 *	refused   nobody on PORT: blocking ECONNREFUSED; non-blocking
 *		  EINPROGRESS then SO_ERROR ECONNREFUSED
 *
 * kconnect ubind ADDR PORT: bind a UDP socket there, print "bound" or
 * EADDRINUSE.  kconnect uhold ADDR PORT: a fresh UDP socket's sendto()
 * there, then "port N" (the port it was given), held until stdin ends.
 * kconnect usend ADDR PORT N: N datagrams from a fresh UDP socket.
 * kconnect udrain ADDR PORT: bound there, after a second reads while
 * poll() says POLLIN: "reads R spurious S".
 *
 * Every wait is bounded (SIGALRM after 30 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "stackfd.h"

#define DATA_LEN	100000

static const char *cname = "";

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", cname);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %s)\n", strerror(errno));
	exit(1);
}

/* A kernel socket, not the stack's? */
static int is_kernel(int fd)
{
	return !stack_fd(fd);
}

static void wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	if (poll(&p, 1, 10000) != 1)
		fail("poll for %#x", ev);
}

/* Send DATA_LEN bytes, shut for writing, read the answer back (xor 0x5a). */
static void exchange(int fd)
{
	static uint8_t out[DATA_LEN], in[DATA_LEN];
	size_t sent = 0, got = 0;
	ssize_t n;

	for (size_t i = 0; i < DATA_LEN; i++)
		out[i] = (uint8_t)(i * 7 + (i >> 8));
	while (sent < DATA_LEN || got < DATA_LEN) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (sent < DATA_LEN)
			p.events |= POLLOUT;
		if (poll(&p, 1, 10000) != 1)
			fail("data: poll");
		if ((p.revents & POLLOUT) && sent < DATA_LEN) {
			n = send(fd, out + sent, DATA_LEN - sent, MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN)
				fail("send");
			if (n > 0)
				sent += (size_t)n;
			if (sent == DATA_LEN && shutdown(fd, SHUT_WR))
				fail("shutdown");
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			n = recv(fd, in + got, DATA_LEN - got, MSG_DONTWAIT);
			if (n == 0)
				fail("EOF after %zu bytes", got);
			if (n < 0 && errno != EAGAIN)
				fail("recv");
			if (n > 0)
				got += (size_t)n;
		}
	}
	for (size_t i = 0; i < DATA_LEN; i++)
		if (in[i] != (out[i] ^ 0x5a))
			fail("byte %zu differs", i);
	wait_fd(fd, POLLIN);
	if (recv(fd, in, 1, 0) != 0)
		fail("no EOF at the end");
}

static void check_names(int fd, const struct sockaddr_in *to, uint16_t want_port)
{
	/* Linux's source for this host: 127.0.0.1 for 127/8, else the
	 * destination itself. */
	uint32_t want = (ntohl(to->sin_addr.s_addr) >> 24) == 127 ? htonl(INADDR_LOOPBACK) :
								    to->sin_addr.s_addr;
	struct sockaddr_in me, peer;
	socklen_t len = sizeof(me);

	if (getsockname(fd, (struct sockaddr *)&me, &len) || len != sizeof(me))
		fail("getsockname");
	if (me.sin_family != AF_INET || me.sin_addr.s_addr != want ||
	    !me.sin_port || (want_port && me.sin_port != want_port))
		fail("getsockname says %s:%u", inet_ntoa(me.sin_addr), ntohs(me.sin_port));
	len = sizeof(peer);
	if (getpeername(fd, (struct sockaddr *)&peer, &len) || len != sizeof(peer))
		fail("getpeername");
	if (peer.sin_family != AF_INET || peer.sin_addr.s_addr != to->sin_addr.s_addr ||
	    peer.sin_port != to->sin_port)
		fail("getpeername says %s:%u", inet_ntoa(peer.sin_addr), ntohs(peer.sin_port));
}

static int get_int(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, level, name, &v, &len))
		fail("getsockopt %d/%d", level, name);
	return v;
}

static void set_int(int fd, int level, int name, int v)
{
	if (setsockopt(fd, level, name, &v, sizeof(v)))
		fail("setsockopt %d/%d", level, name);
}

static void so_error_is(int fd, int want)
{
	if (get_int(fd, SOL_SOCKET, SO_ERROR) != want)
		fail("SO_ERROR is not %d", want);
}

static int client(const char *c, const struct sockaddr_in *to)
{
	const struct sockaddr *a = (const struct sockaddr *)to;
	int fd, r;

	cname = c;
	if (!strcmp(c, "block")) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		errno = 4321;
		if (connect(fd, a, sizeof(*to)))
			fail("connect");
		if (errno != 4321)
			fail("a connect() that succeeded changed errno to %d", errno);
		check_names(fd, to, 0);
	} else if (!strcmp(c, "nonblock")) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		r = connect(fd, a, sizeof(*to));
		if (r != -1 || errno != EINPROGRESS)
			fail("connect gave %d, not EINPROGRESS", r);
		wait_fd(fd, POLLOUT);
		so_error_is(fd, 0);
		if (!(fcntl(fd, F_GETFL) & O_NONBLOCK) || !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			fail("O_NONBLOCK or FD_CLOEXEC lost");
		/* Linux: the next connect() reports the one done, 0; only the
		 * one after is EISCONN. */
		if (connect(fd, a, sizeof(*to)))
			fail("connect again");
		r = connect(fd, a, sizeof(*to));
		if (r != -1 || errno != EISCONN)
			fail("a third connect gave %d, not EISCONN", r);
		check_names(fd, to, 0);
	} else if (!strcmp(c, "epoll")) {
		struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 77 }, got;
		int ep = epoll_create1(0);

		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			fail("epoll");
		r = connect(fd, a, sizeof(*to));
		if (r != -1 || errno != EINPROGRESS)
			fail("connect gave %d, not EINPROGRESS", r);
		if (epoll_wait(ep, &got, 1, 10000) != 1 || got.data.u64 != 77 ||
		    !(got.events & EPOLLOUT))
			fail("no EPOLLOUT from the set");
		so_error_is(fd, 0);
		check_names(fd, to, 0);
		close(ep);
	} else if (!strcmp(c, "opts")) {
		struct sockaddr_in me = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(me);

		fd = socket(AF_INET, SOCK_STREAM, 0);
		set_int(fd, SOL_SOCKET, SO_REUSEADDR, 1);
		set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
		set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1);
		set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, 77);
		set_int(fd, IPPROTO_IP, IP_TTL, 33);
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
		    getsockname(fd, (struct sockaddr *)&me, &len))
			fail("bind");
		if (connect(fd, a, sizeof(*to)))
			fail("connect");
		check_names(fd, to, me.sin_port);
		if (get_int(fd, SOL_SOCKET, SO_REUSEADDR) != 1 ||
		    get_int(fd, SOL_SOCKET, SO_KEEPALIVE) != 1 ||
		    get_int(fd, IPPROTO_TCP, TCP_NODELAY) != 1 ||
		    get_int(fd, IPPROTO_TCP, TCP_KEEPIDLE) != 77 ||
		    get_int(fd, IPPROTO_IP, IP_TTL) != 33)
			fail("an option set before connect() was lost");
	} else if (!strcmp(c, "udp")) {
		char b[16];

		for (int i = 0; i < 2; i++) {
			fd = socket(AF_INET, SOCK_DGRAM, 0);
			if (i ? connect(fd, a, sizeof(*to)) || send(fd, "ping", 4, 0) != 4 :
				sendto(fd, "ping", 4, 0, a, sizeof(*to)) != 4)
				fail("send %d", i);
			wait_fd(fd, POLLIN);
			if (recv(fd, b, sizeof(b), 0) != 4 || memcmp(b, "\x2a\x33\x34\x3d", 4))
				fail("answer %d", i);
			if (i)
				break;
			close(fd);
		}
		printf("ok %s %s\n", c, is_kernel(fd) ? "kernel" : "stack");
		return 0;
	} else if (!strcmp(c, "bindany")) {
		struct sockaddr_in me = { .sin_family = AF_INET };
		socklen_t len = sizeof(me);

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
		    getsockname(fd, (struct sockaddr *)&me, &len))
			fail("bind");
		if (connect(fd, a, sizeof(*to)))
			fail("connect");
		check_names(fd, to, me.sin_port);
	} else if (!strcmp(c, "refused")) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		r = connect(fd, a, sizeof(*to));
		if (r != -1 || errno != ECONNREFUSED)
			fail("blocking connect gave %d, not ECONNREFUSED", r);
		close(fd);
		fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		r = connect(fd, a, sizeof(*to));
		if (r != -1 || errno != EINPROGRESS)
			fail("non-blocking connect gave %d, not EINPROGRESS", r);
		wait_fd(fd, POLLOUT);
		so_error_is(fd, ECONNREFUSED);
		printf("ok %s %s\n", c, is_kernel(fd) ? "kernel" : "stack");
		return 0;
	} else {
		fprintf(stderr, "kconnect: no case %s\n", c);
		return 2;
	}
	exchange(fd);
	printf("ok %s %s\n", c, is_kernel(fd) ? "kernel" : "stack");
	close(fd);
	return 0;
}

static int serve(int family, const char *addr, int port, int n)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int ls, k = 0, s = 0, one = 1;
	static uint8_t buf[65536];

	cname = "serve";
	if (family == 6) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, addr, &a6->sin6_addr) != 1)
			fail("address");
		len = sizeof(*a6);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;

		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, addr, &a4->sin_addr) != 1)
			fail("address");
		len = sizeof(*a4);
	}
	ls = socket(family == 6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&ss, len) || listen(ls, 16))
		fail("listen");
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		int c = accept(ls, NULL, NULL);
		ssize_t r;

		if (c < 0)
			fail("accept");
		if (is_kernel(c))
			k++;
		else
			s++;
		while ((r = recv(c, buf, sizeof(buf), 0)) > 0) {
			for (ssize_t j = 0; j < r; j++)
				buf[j] ^= 0x5a;
			if (send(c, buf, (size_t)r, 0) != r)
				fail("send");
		}
		close(c);
	}
	printf("served %d kernel %d stack %d\n", n, k, s);
	return 0;
}

static int userve(const char *addr, int port, int n)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in from;
	socklen_t len;
	uint8_t b[2048];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), ep = epoll_create1(0);

	cname = "userve";
	if (inet_pton(AF_INET, addr, &me.sin_addr) != 1 || fd < 0 ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me)))
		fail("bind");
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN };
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		/* The first datagram waited for in epoll, the second in poll,
		 * the rest in recvfrom(). */
		if (i == 0 && (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ||
			       epoll_wait(ep, &ev, 1, 20000) != 1))
			fail("epoll_wait");
		if (i == 1 && poll(&p, 1, 20000) != 1)
			fail("poll");
		len = sizeof(from);
		r = recvfrom(fd, b, sizeof(b), 0, (struct sockaddr *)&from, &len);
		if (r < 0)
			fail("recvfrom");
		for (ssize_t j = 0; j < r; j++)
			b[j] ^= 0x5a;
		if (sendto(fd, b, (size_t)r, 0, (struct sockaddr *)&from, len) != r)
			fail("sendto");
	}
	printf("userved %d\n", n);
	return 0;
}

/* ubind ADDR PORT: bind a UDP socket there; "bound" or the errno's name
 * (a port another socket holds: EADDRINUSE, beside a kernel socket or a
 * stack one alike). */
static int ubind(const char *addr, int port)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (inet_pton(AF_INET, addr, &me.sin_addr) != 1 || fd < 0)
		return 1;
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)))
		printf("%s\n", errno == EADDRINUSE ? "EADDRINUSE" : strerror(errno));
	else
		printf("bound\n");
	return 0;
}

/* uhold ADDR PORT: a fresh UDP socket sends one datagram there (the
 * port its first send picks), says "port N", and holds it until stdin
 * ends. */
static int uhold(const char *addr, int port)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) }, me;
	socklen_t ml = sizeof(me);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	char c;

	cname = "uhold";
	if (inet_pton(AF_INET, addr, &to.sin_addr) != 1 || fd < 0 ||
	    sendto(fd, "x", 1, 0, (struct sockaddr *)&to, sizeof(to)) != 1 ||
	    getsockname(fd, (struct sockaddr *)&me, &ml))
		fail("sendto");
	printf("port %u\n", (unsigned int)ntohs(me.sin_port));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

/* usend ADDR PORT N: N datagrams from a fresh UDP socket. */
static int usend(const char *addr, int port, int n)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cname = "usend";
	if (inet_pton(AF_INET, addr, &to.sin_addr) != 1 || fd < 0)
		fail("socket");
	for (int i = 0; i < n; i++)
		if (sendto(fd, "d", 1, 0, (struct sockaddr *)&to, sizeof(to)) != 1)
			fail("sendto");
	return 0;
}

/* udrain ADDR PORT: a UDP socket bound there; "ready", then, once a
 * second has passed, read while poll() says POLLIN: "reads R spurious S"
 * (S: a POLLIN with nothing to read). */
static int udrain(const char *addr, int port)
{
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), reads = 0, spurious = 0;
	char b[16];

	cname = "udrain";
	if (inet_pton(AF_INET, addr, &me.sin_addr) != 1 || fd < 0 ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me)))
		fail("bind");
	printf("ready\n");
	fflush(stdout);
	sleep(1);
	while (spurious < 3) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 0) != 1)
			break;
		if (recv(fd, b, sizeof(b), MSG_DONTWAIT) < 0)
			spurious++;
		else
			reads++;
	}
	printf("reads %d spurious %d\n", reads, spurious);
	return 0;
}

int main(int argc, char **argv)
{
	alarm(30);
	if (argc == 5 && !strcmp(argv[1], "usend"))
		return usend(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "udrain"))
		return udrain(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "uhold"))
		return uhold(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "ubind"))
		return ubind(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "userve"))
		return userve(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), argv[3], atoi(argv[4]), atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "client")) {
		struct sockaddr_in to = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)atoi(argv[4])) };

		if (inet_pton(AF_INET, argv[3], &to.sin_addr) != 1)
			return 2;
		return client(argv[2], &to);
	}
	fprintf(stderr, "usage: kconnect serve FAMILY ADDR PORT N | userve ADDR PORT N | client CASE ADDR PORT\n");
	return 2;
}
