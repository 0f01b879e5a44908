// SPDX-License-Identifier: BSD-2-Clause
/*
 * Kernel sockets meeting a module stack's sockets on this host's own
 * addresses (tests/vm/sockfd.sh; issue 15 item 1, issue 24): one side
 * runs under `sluice run`, the other on the kernel, or both on the
 * kernel for the lines to compare with.  Each line it prints is the same
 * on the kernel and on Sluice when both behave alike (no port numbers
 * that change from run to run).
 *
 *   twin_echo tserve ADDR PORT SECS   listen on ADDR:PORT, "ready"; wait in
 *                                     epoll_wait for one connection, accept
 *                                     it; the client's first line names its
 *                                     own address: accept()'s and
 *                                     getpeername()'s must be it; echo all
 *   twin_echo tclient ADDR PORT BYTES connect, send that line and BYTES of a
 *                                     pattern, check the echo byte for byte
 *   twin_echo userve ADDR PORT COUNT SECS
 *                                     UDP bound to ADDR:PORT, "ready";
 *                                     COUNT datagrams, each naming its
 *                                     sender: recvfrom()'s must be it;
 *                                     each echoed
 *   twin_echo uclient ADDR PORT COUNT bound to 0.0.0.0:0 (the port printed
 *                                     into each datagram), COUNT datagrams
 *                                     to ADDR:PORT, each echo intact and
 *                                     from ADDR:PORT
 * Every wait is bounded; exit status 0 when every line said "ok".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static int failed;

static void say(int ok, const char *what)
{
	printf("%sok - %s\n", ok ? "" : "not ", what);
	fflush(stdout);
	if (!ok)
		failed = 1;
}

static struct sockaddr_in addr_of(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static const char *str(const struct sockaddr_in *a, char *b, size_t n)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(b, n, "%s:%u", ip, ntohs(a->sin_port));
	return b;
}

static unsigned char pattern(long i)
{
	return (unsigned char)(i * 13 + (i >> 9));
}

/* Read until '\n' (at most n - 1 bytes), bounded by the socket's timeout. */
static int read_line(int fd, char *b, size_t n)
{
	size_t k = 0;

	while (k + 1 < n) {
		ssize_t r = recv(fd, b + k, 1, 0);

		if (r <= 0)
			return -1;
		if (b[k] == '\n')
			break;
		k++;
	}
	b[k] = 0;
	return 0;
}

/* What the fd is, for the script (a '#' line: not compared): a module
 * socket fd is "anon_inode:[sluice-sock]", a kernel socket "socket:[N]". */
static void show_fd(int fd, const char *what)
{
	char path[64], l[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, l, sizeof(l) - 1);
	l[n < 0 ? 0 : n] = 0;
	printf("# %s fd %s\n", what, l);
}

static void timeouts(int fd, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int tserve(const char *ip, int port, int secs)
{
	struct sockaddr_in me = addr_of(ip, port), peer, pn, sn;
	struct epoll_event ev = { .events = EPOLLIN }, got = { 0 };
	socklen_t pl = sizeof(peer), l;
	char a[64], b[64], line[128];
	static char buf[65536];
	long total = 0;
	int ls, ep, c, n;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (void *)&me, sizeof(me)) || listen(ls, 8)) {
		perror("twin_echo tserve");
		return 2;
	}
	show_fd(ls, "listener");
	printf("ready\n");
	fflush(stdout);
	ep = epoll_create1(0);
	ev.data.fd = ls;
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
	n = epoll_wait(ep, &got, 1, secs * 1000);
	say(n == 1 && got.data.fd == ls && (got.events & EPOLLIN),
	    "epoll_wait on the listener: readable");
	if (n != 1)
		return 1;
	c = accept(ls, (void *)&peer, &pl);
	say(c >= 0, "accept");
	if (c < 0)
		return 1;
	timeouts(c, secs);
	l = sizeof(pn);
	getpeername(c, (void *)&pn, &l);
	l = sizeof(sn);
	getsockname(c, (void *)&sn, &l);
	if (read_line(c, line, sizeof(line))) {
		say(0, "the client's first line");
		return 1;
	}
	say(!strcmp(line, str(&peer, a, sizeof(a))), "accept()'s address is the client's");
	say(!strcmp(line, str(&pn, b, sizeof(b))), "getpeername() says the same");
	if (failed)
		printf("# client %s, accept %s, getpeername %s\n", line, a, b);
	printf("getsockname %s\n", str(&sn, a, sizeof(a)));
	strcat(line, "\n");
	send(c, line, strlen(line), MSG_NOSIGNAL);
	for (ssize_t r; (r = recv(c, buf, sizeof(buf), 0)) > 0; total += r)
		if (send(c, buf, (size_t)r, MSG_NOSIGNAL) != r)
			break;
	printf("echoed %ld bytes\n", total);
	close(c);
	close(ls);
	return failed;
}

static int tclient(const char *ip, int port, long bytes)
{
	struct sockaddr_in to = addr_of(ip, port), me;
	socklen_t l = sizeof(me);
	char a[64], line[128];
	static unsigned char out[65536], in[65536];
	long sent = 0, got = 0, bad = -1;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	timeouts(s, 30);
	if (connect(s, (void *)&to, sizeof(to))) {
		printf("connect: %s\n", strerror(errno));
		return 1;
	}
	say(1, "connect");
	show_fd(s, "client");
	getsockname(s, (void *)&me, &l);
	snprintf(line, sizeof(line), "%s\n", str(&me, a, sizeof(a)));
	send(s, line, strlen(line), MSG_NOSIGNAL);
	if (read_line(s, a, sizeof(a)) || strncmp(a, line, strlen(a))) {
		say(0, "its first line echoed");
		return 1;
	}
	/* Send and read in turns of at most 64 KiB: the echo never waits
	 * on a full send queue of ours. */
	while (got < bytes) {
		long n = bytes - sent < (long)sizeof(out) ? bytes - sent : (long)sizeof(out);

		for (long i = 0; i < n; i++)
			out[i] = pattern(sent + i);
		if (n && send(s, out, (size_t)n, MSG_NOSIGNAL) != n)
			break;
		sent += n;
		while (got < sent) {
			ssize_t r = recv(s, in, (size_t)(sent - got), 0);

			if (r <= 0)
				goto end;
			for (ssize_t i = 0; i < r && bad < 0; i++)
				if (in[i] != pattern(got + i))
					bad = got + i;
			got += r;
		}
	}
end:
	shutdown(s, SHUT_WR);
	say(got == bytes && bad < 0, "the echo, byte for byte");
	printf("%ld of %ld bytes back%s\n", got, bytes, bad >= 0 ? ", differing" : "");
	close(s);
	return failed;
}

static int userve(const char *ip, int port, int count, int secs)
{
	struct sockaddr_in me = addr_of(ip, port), from;
	char a[64], buf[256];
	int u = socket(AF_INET, SOCK_DGRAM, 0), match = 0, n = 0;

	if (u < 0 || bind(u, (void *)&me, sizeof(me))) {
		perror("twin_echo userve");
		return 2;
	}
	show_fd(u, "udp");
	printf("ready\n");
	fflush(stdout);
	for (; n < count; n++) {
		struct pollfd p = { .fd = u, .events = POLLIN };
		socklen_t fl = sizeof(from);
		ssize_t r;

		if (poll(&p, 1, secs * 1000) != 1)
			break;
		r = recvfrom(u, buf, sizeof(buf) - 1, 0, (void *)&from, &fl);
		if (r < 0)
			break;
		buf[r] = 0;
		/* "ADDR:PORT seq N": the sender as it knows itself. */
		*strchrnul(buf, ' ') = 0;
		if (!strcmp(buf, str(&from, a, sizeof(a))))
			match++;
		else
			printf("# datagram %d: says %s, recvfrom %s\n", n, buf, a);
		buf[strlen(buf)] = ' ';
		sendto(u, buf, (size_t)r, 0, (void *)&from, fl);
	}
	say(n == count, "poll, then every datagram received");
	say(match == n, "recvfrom()'s address is each sender's");
	printf("%d/%d from their senders\n", match, count);
	close(u);
	return failed;
}

static int uclient(const char *ip, int port, int count)
{
	struct sockaddr_in to = addr_of(ip, port), any = addr_of("0.0.0.0", 0), me, from;
	socklen_t l = sizeof(me);
	char a[64], buf[256], in[256];
	int u = socket(AF_INET, SOCK_DGRAM, 0), ok = 0, right = 0;

	if (u < 0 || bind(u, (void *)&any, sizeof(any)) || getsockname(u, (void *)&me, &l)) {
		perror("twin_echo uclient");
		return 2;
	}
	show_fd(u, "udp client");
	/* Long: under QEMU's TCG on a loaded host an answer took over 5 s. */
	timeouts(u, 15);
	for (int i = 0; i < count; i++) {
		socklen_t fl = sizeof(from);
		ssize_t r;
		int n;

		/* The address the kernel will send from: ADDR's, here a
		 * loopback one, with the port bound. */
		me.sin_addr = to.sin_addr;
		n = snprintf(buf, sizeof(buf), "%s seq %d", str(&me, a, sizeof(a)), i);
		if (sendto(u, buf, (size_t)n, 0, (void *)&to, sizeof(to)) != n)
			break;
		r = recvfrom(u, in, sizeof(in), 0, (void *)&from, &fl);
		if (r == n && !memcmp(in, buf, (size_t)n))
			ok++;
		if (r >= 0 && from.sin_addr.s_addr == to.sin_addr.s_addr &&
		    from.sin_port == to.sin_port)
			right++;
	}
	say(ok == count, "every datagram echoed intact");
	say(right == count, "each answer from where it was sent");
	printf("%d/%d echoed, %d from %s\n", ok, count, right, ip);
	close(u);
	return failed;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "tserve"))
		return tserve(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "tclient"))
		return tclient(argv[2], atoi(argv[3]), atol(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "userve"))
		return userve(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 5 && !strcmp(argv[1], "uclient"))
		return uclient(argv[2], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: see tests/preload/twin_echo.c\n");
	return 2;
}
