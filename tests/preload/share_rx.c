// SPDX-License-Identifier: BSD-2-Clause
/*
 * Who gets the device's packets to a port two sockets share
 * (tests/vm/sockfd.sh, the shared-port rows; issue 15): each side on the
 * kernel or under `sluice run` on a module's stack, the answers compared
 * with two kernel sockets' in the same run.
 *
 *   share_rx serve TYPE ADDR PORT OPTS TAG
 *	TYPE tcp or udp, at ADDR:PORT: AF_INET, or AF_INET6 for an IPv6
 *	ADDR (dual-stack unless OPTS says v6only); OPTS reuseaddr,
 *	reuseport, v6only (comma list).  TCP: listens, and writes TAG on each
 *	connection it accepts, then closes it; UDP: answers each datagram
 *	with TAG.  Prints "ready" once bound (and listening), then, when
 *	stdin closes (60 s at most), "served N" and how many of them were
 *	kernel sockets ("kernel M": accepted connections that are not the
 *	module's socket fds).
 *   share_rx clients TYPE ADDR PORT SPORT N
 *	N connections (datagrams) to ADDR:PORT (either family), one at a
 *	time, from source ports SPORT..SPORT+N-1; prints "SPORT TAG" for each answer, or
 *	"SPORT none".  TCP ends each with a reset (SO_LINGER 0), so no
 *	TIME-WAIT is left on either side and the same tuples can be tried
 *	again.
 *   share_rx kconn ADDR PORT LPORT
 *	A TCP connection from LPORT (SO_REUSEADDR) to an echo server at
 *	ADDR:PORT; prints "connected", then, once a line comes on stdin,
 *	sends three lines and prints "echo ok" or what went wrong for each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	printf("error %s %s\n", what, strerror(errno));
	exit(1);
}

static struct sockaddr_in sin_of(const char *addr, int port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", addr);
		exit(2);
	}
	return sin;
}

/* ADDR:PORT of either family (an IPv6 one has a colon); its length. */
static socklen_t ss_of(const char *addr, int port, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!strchr(addr, ':')) {
		struct sockaddr_in sin = sin_of(addr, port);

		memcpy(ss, &sin, sizeof(sin));
		return sizeof(sin);
	}
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons((unsigned short)port);
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1) {
		fprintf(stderr, "bad address %s\n", addr);
		exit(2);
	}
	return sizeof(*s6);
}

static void setint(int fd, int level, int opt, int v)
{
	if (setsockopt(fd, level, opt, &v, sizeof(v)))
		die("setsockopt");
}

static void timeouts(int fd, int sec)
{
	struct timeval tv = { .tv_sec = sec };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Is fd one of the module's socket fds? */
static int module_fd(int fd)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	return !strcmp(link, "anon_inode:[sluice-sock]");
}

static int serve(int tcp, const char *addr, int port, const char *opts, const char *tag)
{
	struct sockaddr_storage sin;
	socklen_t slen = ss_of(addr, port, &sin);
	int fd = socket(sin.ss_family, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
	long served = 0, kernel = 0;
	time_t end = time(NULL) + 60;

	if (fd < 0)
		die("socket");
	if (strstr(opts, "reuseaddr"))
		setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	if (strstr(opts, "reuseport"))
		setint(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	if (sin.ss_family == AF_INET6)
		setint(fd, IPPROTO_IPV6, IPV6_V6ONLY, strstr(opts, "v6only") != NULL);
	if (bind(fd, (struct sockaddr *)&sin, slen))
		die("bind");
	if (tcp && listen(fd, 64))
		die("listen");
	fprintf(stderr, "share_rx: fd %s\n", module_fd(fd) ? "anon_inode:[sluice-sock]" : "kernel");
	printf("ready\n");
	fflush(stdout);
	while (time(NULL) < end) {
		struct pollfd p[2] = { { .fd = 0, .events = POLLIN }, { .fd = fd, .events = POLLIN } };
		char buf[64];

		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			die("poll");
		if (p[0].revents)
			break;	/* stdin closed (or a line): the end */
		if (!(p[1].revents & POLLIN))
			continue;
		if (tcp) {
			int c = accept(fd, NULL, NULL);

			if (c < 0)
				continue;
			served++;
			kernel += !module_fd(c);
			if (write(c, tag, strlen(tag)) < 0 || write(c, "\n", 1) < 0)
				fprintf(stderr, "share_rx: write: %s\n", strerror(errno));
			close(c);
		} else {
			struct sockaddr_storage from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
					     (struct sockaddr *)&from, &fl);

			if (n < 0)
				continue;
			served++;
			if (sendto(fd, tag, strlen(tag), 0, (struct sockaddr *)&from, fl) < 0)
				fprintf(stderr, "share_rx: sendto: %s\n", strerror(errno));
		}
	}
	printf("served %ld kernel %ld\n", served, kernel);
	return 0;
}

static int clients(int tcp, const char *addr, int port, int sport, int n)
{
	struct sockaddr_storage to, me;
	socklen_t tlen = ss_of(addr, port, &to);

	for (int i = 0; i < n; i++) {
		socklen_t mlen = ss_of(to.ss_family == AF_INET6 ? "::" : "0.0.0.0", sport + i, &me);
		int fd = socket(to.ss_family, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
		char buf[64] = "";
		ssize_t got = -1;

		if (fd < 0)
			die("socket");
		setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
		timeouts(fd, tcp ? 10 : 3);
		if (bind(fd, (struct sockaddr *)&me, mlen))
			die("bind");
		if (tcp) {
			if (!connect(fd, (struct sockaddr *)&to, tlen))
				got = read(fd, buf, sizeof(buf) - 1);
		} else if (sendto(fd, "x", 1, 0, (struct sockaddr *)&to, tlen) == 1) {
			got = recv(fd, buf, sizeof(buf) - 1, 0);
		}
		if (got > 0) {
			buf[got] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			printf("%d %s\n", sport + i, buf);
		} else {
			printf("%d none\n", sport + i);
		}
		if (tcp) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(fd);
	}
	return 0;
}

static int kconn(const char *addr, int port, int lport)
{
	struct sockaddr_in to = sin_of(addr, port), me = sin_of("0.0.0.0", lport);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char line[64];

	if (fd < 0)
		die("socket");
	setint(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	timeouts(fd, 10);
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)))
		die("bind");
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)))
		die("connect");
	printf("connected\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	for (int i = 0; i < 3; i++) {
		char msg[32], buf[64];
		size_t len = (size_t)snprintf(msg, sizeof(msg), "ping %d\n", i);
		size_t got = 0;
		ssize_t r = write(fd, msg, len);

		if (r != (ssize_t)len) {
			printf("echo write %s\n", r < 0 ? strerror(errno) : "short");
			continue;
		}
		while (got < len && (r = read(fd, buf + got, len - got)) > 0)
			got += (size_t)r;
		if (got == len && !memcmp(buf, msg, len))
			printf("echo ok\n");
		else
			printf("echo %s\n", r < 0 ? strerror(errno) : r == 0 ? "eof" : "wrong");
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && !strcmp(argv[1], "serve"))
		return serve(!strcmp(argv[2], "tcp"), argv[3], atoi(argv[4]), argv[5], argv[6]);
	if (argc == 7 && !strcmp(argv[1], "clients"))
		return clients(!strcmp(argv[2], "tcp"), argv[3], atoi(argv[4]), atoi(argv[5]),
			       atoi(argv[6]));
	if (argc == 5 && !strcmp(argv[1], "kconn"))
		return kconn(argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: share_rx serve TYPE ADDR PORT OPTS TAG | clients TYPE ADDR PORT SPORT N | kconn ADDR PORT LPORT\n");
	return 2;
}
