// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP and UDP echo over IPv6 (and IPv4 to a dual-stack socket) on plain
 * socket calls, run on the kernel and under `sluice run` alike
 * (tests/vm/run_kring6.sh): what it prints names no address or port, so
 * the two runs' lines compare as they are.
 *
 *   v6echo serve-tcp ADDR PORT CONNS SECONDS
 *       listens on [ADDR]:PORT (ADDR "::" is dual-stack: IPV6_V6ONLY off),
 *       prints "ready", then takes CONNS connections one after another,
 *       echoing each until the client's EOF: a line each,
 *       "tcp conn N from v6|v4mapped: echoed BYTES"
 *   v6echo serve-udp ADDR PORT COUNT SECONDS
 *       echoes COUNT datagrams back to each sender: a line each,
 *       "udp dgram N from v6|v4mapped: echoed BYTES"
 *   v6echo tcp ADDR PORT BYTES
 *       connects (AF_INET6, or AF_INET for a dotted ADDR), sends BYTES of
 *       a pattern while reading the echo, checks it byte for byte:
 *       "tcp ok BYTES", else what differed
 *   v6echo udp ADDR PORT COUNT SIZE
 *       COUNT datagrams of SIZE bytes, each echoed intact from ADDR:PORT
 *       (sent again after 1 s without it, 5 times at most): "udp ok COUNT x SIZE"
 *
 * Every wait is bounded (SECONDS, alarm()); exit status 0 on success.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Byte i of the pattern a client sends. */
static uint8_t pat(uint64_t i)
{
	return (uint8_t)((i * 7919u + (i >> 13) * 31u + 13u) & 0xff);
}

/* ADDR:PORT as a sockaddr of its family; its length, 0 if unparsable. */
static socklen_t parse(const char *addr, const char *port, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)atoi(port));
		return sizeof(*s6);
	}
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)atoi(port));
		return sizeof(*s4);
	}
	return 0;
}

static const char *kind(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET)
		return "v4";
	return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) ? "v4mapped" : "v6";
}

static int server(int type, const char *addr, const char *port)
{
	struct sockaddr_storage ss;
	socklen_t len = parse(addr, port, &ss);
	int fd, on = 1, off = 0;

	if (!len) {
		fprintf(stderr, "bad address %s\n", addr);
		return -1;
	}
	fd = socket(ss.ss_family, type, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, (struct sockaddr *)&ss, len) || (type == SOCK_STREAM && listen(fd, 8))) {
		perror("bind/listen");
		close(fd);
		return -1;
	}
	printf("ready\n");
	fflush(stdout);
	return fd;
}

static int serve_tcp(char **av)
{
	int lfd = server(SOCK_STREAM, av[0], av[1]), conns = atoi(av[2]);
	static char buf[65536];

	if (lfd < 0)
		return 1;
	for (int n = 1; n <= conns; n++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		uint64_t total = 0;
		int c = accept(lfd, (struct sockaddr *)&peer, &plen);
		ssize_t r;

		if (c < 0) {
			perror("accept");
			return 1;
		}
		while ((r = read(c, buf, sizeof(buf))) > 0) {
			for (ssize_t off = 0, w; off < r; off += w) {
				w = write(c, buf + off, (size_t)(r - off));
				if (w <= 0) {
					perror("write");
					return 1;
				}
			}
			total += (uint64_t)r;
		}
		close(c);
		printf("tcp conn %d from %s: echoed %llu\n", n, kind(&peer),
		       (unsigned long long)total);
		fflush(stdout);
	}
	close(lfd);
	return 0;
}

static int serve_udp(char **av)
{
	int fd = server(SOCK_DGRAM, av[0], av[1]), count = atoi(av[2]);
	static char buf[65536];

	if (fd < 0)
		return 1;
	for (int n = 1; n <= count; n++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		ssize_t r = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);

		if (r < 0 || sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&peer, plen) != r) {
			perror("udp echo");
			return 1;
		}
		printf("udp dgram %d from %s: echoed %zd\n", n, kind(&peer), r);
		fflush(stdout);
	}
	close(fd);
	return 0;
}

static int client_tcp(char **av)
{
	struct sockaddr_storage ss;
	socklen_t len = parse(av[0], av[1], &ss);
	uint64_t bytes = strtoull(av[2], NULL, 10), sent = 0, got = 0;
	static uint8_t out[16384], in[65536];
	int fd;

	if (!len)
		return 2;
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len)) {
		perror("connect");
		return 1;
	}
	while (got < bytes) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < bytes ? POLLOUT : 0) };
		ssize_t r;

		if (poll(&p, 1, 10000) <= 0) {
			printf("tcp timeout: sent %llu, echoed %llu\n", (unsigned long long)sent,
			       (unsigned long long)got);
			return 1;
		}
		if ((p.revents & POLLOUT) && sent < bytes) {
			size_t n = bytes - sent < sizeof(out) ? (size_t)(bytes - sent) : sizeof(out);

			for (size_t i = 0; i < n; i++)
				out[i] = pat(sent + i);
			r = send(fd, out, n, MSG_DONTWAIT);
			if (r > 0)
				sent += (uint64_t)r;
			else if (r < 0 && errno != EAGAIN) {
				perror("send");
				return 1;
			}
			if (sent == bytes)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			r = recv(fd, in, sizeof(in), MSG_DONTWAIT);
			if (r == 0) {
				printf("tcp EOF after %llu of %llu\n", (unsigned long long)got,
				       (unsigned long long)bytes);
				return 1;
			}
			if (r < 0 && errno != EAGAIN) {
				perror("recv");
				return 1;
			}
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pat(got + (uint64_t)i)) {
					printf("tcp byte %llu differs\n",
					       (unsigned long long)(got + (uint64_t)i));
					return 1;
				}
			if (r > 0)
				got += (uint64_t)r;
		}
	}
	close(fd);
	printf("tcp ok %llu\n", (unsigned long long)bytes);
	return 0;
}

static int client_udp(char **av)
{
	struct sockaddr_storage ss, from;
	socklen_t len = parse(av[0], av[1], &ss), flen;
	int count = atoi(av[2]), size = atoi(av[3]), fd;
	static uint8_t out[65536], in[65536];

	if (!len || size < 1 || size > (int)sizeof(out))
		return 2;
	fd = socket(ss.ss_family, SOCK_DGRAM, 0);
	if (fd < 0)
		return 1;
	for (int n = 0; n < count; n++) {
		int tries = 0;
		ssize_t r;

		for (int i = 0; i < size; i++)
			out[i] = pat((uint64_t)n * 65536u + (uint64_t)i);
		for (;;) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (sendto(fd, out, (size_t)size, 0, (struct sockaddr *)&ss, len) != size) {
				perror("sendto");
				return 1;
			}
			if (poll(&p, 1, 1000) == 1)
				break;
			if (++tries == 5) {
				printf("udp %d: no echo\n", n);
				return 1;
			}
		}
		flen = sizeof(from);
		r = recvfrom(fd, in, sizeof(in), 0, (struct sockaddr *)&from, &flen);
		if (r != size || memcmp(in, out, (size_t)size) || flen != len ||
		    memcmp(&from, &ss, len)) {
			printf("udp %d: echo differs (%zd bytes)\n", n, r);
			return 1;
		}
	}
	close(fd);
	printf("udp ok %d x %d\n", count, size);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "serve-tcp")) {
		alarm((unsigned int)atoi(argv[5]));
		return serve_tcp(argv + 2);
	}
	if (argc == 6 && !strcmp(argv[1], "serve-udp")) {
		alarm((unsigned int)atoi(argv[5]));
		return serve_udp(argv + 2);
	}
	alarm(120);
	if (argc == 5 && !strcmp(argv[1], "tcp"))
		return client_tcp(argv + 2);
	if (argc == 6 && !strcmp(argv[1], "udp"))
		return client_udp(argv + 2);
	fprintf(stderr, "usage: see the head of tests/preload/v6echo.c\n");
	return 2;
}
