// SPDX-License-Identifier: BSD-2-Clause
/*
 * Port reservation rows (tests/vm/sockfd.sh; issue 15 item 1): one socket
 * holds a port, a second binds it, each on the kernel or under `sluice
 * run` on a module's stack; the second's answers must be those between
 * two kernel sockets.
 *
 *   resv_hold hold TYPE FAM ADDR PORT OPTS LISTEN
 *	TYPE tcp or udp, FAM 4 or 6; OPTS a comma list of reuseaddr,
 *	reuseport, v6only, dual (IPV6_V6ONLY 0 said), late (SO_REUSEPORT set
 *	after bind(), before listen()), or none; listen if LISTEN is 1.
 *	Prints "bind RESULT" (and "listen RESULT"), then waits for stdin to
 *	close (30 s at most).
 *   resv_hold connect FAM ADDR PORT
 *	A TCP connect(); prints "connect RESULT".
 * RESULT: 0 or the errno's name.  The socket's kind goes to stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *res(int r)
{
	if (!r)
		return "0";
	switch (errno) {
	case EADDRINUSE: return "EADDRINUSE";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EINVAL: return "EINVAL";
	case EACCES: return "EACCES";
	default: return strerror(errno);
	}
}

static int addr_of(int fam, const char *addr, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (fam == 6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)port);
		return inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1 ? (int)sizeof(*s6) : -1;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons((unsigned short)port);
	return inet_pton(AF_INET, addr, &s4->sin_addr) == 1 ? (int)sizeof(*s4) : -1;
}

static int has(const char *opts, const char *o)
{
	size_t n = strlen(o);

	for (const char *p = opts; (p = strstr(p, o)); p += n)
		if ((p == opts || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

static void kind(int s)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", s);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = '\0';
	fprintf(stderr, "resv_hold: fd %s\n", link);
}

static int hold(const char *type, int fam, const char *addr, int port, const char *opts,
		int lis)
{
	struct sockaddr_storage ss;
	int alen = addr_of(fam, addr, port, &ss), one = 1, zero = 0, s;
	char b;

	s = socket(fam == 6 ? AF_INET6 : AF_INET,
		   strcmp(type, "udp") ? SOCK_STREAM : SOCK_DGRAM, 0);
	if (s < 0 || alen < 0) {
		perror("resv_hold: socket");
		return 2;
	}
	if (has(opts, "reuseaddr"))
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (has(opts, "reuseport"))
		setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (has(opts, "v6only"))
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (has(opts, "dual"))
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	printf("bind %s\n", res(bind(s, (struct sockaddr *)&ss, (socklen_t)alen)));
	if (has(opts, "late"))
		setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (lis)
		printf("listen %s\n", res(listen(s, 8)));
	fflush(stdout);
	kind(s);
	while (read(0, &b, 1) > 0)
		;
	close(s);
	return 0;
}

static int conn(int fam, const char *addr, int port)
{
	struct sockaddr_storage ss;
	int alen = addr_of(fam, addr, port, &ss), s;

	s = socket(fam == 6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (s < 0 || alen < 0) {
		perror("resv_hold: socket");
		return 2;
	}
	printf("connect %s\n", res(connect(s, (struct sockaddr *)&ss, (socklen_t)alen)));
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	alarm(30);
	if (argc == 8 && !strcmp(argv[1], "hold"))
		return hold(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]), argv[6], atoi(argv[7]));
	if (argc == 5 && !strcmp(argv[1], "connect"))
		return conn(atoi(argv[2]), argv[3], atoi(argv[4]));
	fprintf(stderr, "usage: see the comment at the top of tests/preload/resv_hold.c\n");
	return 2;
}
