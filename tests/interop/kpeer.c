// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Linux kernel's side of the kring interop test (tests/vm/kring.sh),
 * on plain kernel sockets, run inside the peer network namespace (or, for
 * the bind checks, beside the Sluice stack):
 *
 *   kpeer serve PORT SECONDS [ADDR] TCP and UDP echo on PORT of ADDR
 *                                   (default 0.0.0.0; many TCP
 *                                   connections at once) until SECONDS pass
 *   kpeer tcp-echo IP PORT BYTES [CONNS [SECONDS]]
 *                                   CONNS connections at once (default 1),
 *                                   each sends BYTES of a pattern seeded by
 *                                   its number and checks the echo byte for
 *                                   byte; prints "ok CONNS x BYTES"; with
 *                                   SECONDS, sends paced to take that long
 *                                   and "flowing" printed at the first echo
 *   kpeer udp-echo IP PORT COUNT    COUNT datagrams, each echoed intact
 *                                   (and from IP:PORT: a line before)
 *   kpeer udp-df IP PORT BYTES COUNT
 *                                   COUNT datagrams of BYTES each with DF
 *                                   (IP_PMTUDISC_DO: refused, not
 *                                   fragmented, past the path MTU), each
 *                                   echoed intact; prints "N/COUNT echoed"
 *                                   and the first send error
 *   kpeer bind tcp|udp PORT         prints the errno name of binding
 *                                   0.0.0.0:PORT (0 when it works)
 *   kpeer listen PORT SECONDS       holds a TCP listener on PORT
 *   kpeer mcast-send GROUP PORT COUNT IFADDR
 *                                   COUNT datagrams to GROUP:PORT out of
 *                                   the interface of IFADDR, 20 ms apart
 *   kpeer mcast-recv GROUP PORT COUNT SECONDS IFADDR
 *                                   joins GROUP on the interface of IFADDR,
 *                                   prints "ready", counts datagrams to
 *                                   PORT until COUNT or SECONDS; prints
 *                                   "got N ttl T" (T: the last one's TTL)
 * Every loop is bounded in time; exit status 0 on success.
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC 128

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static uint8_t pattern(unsigned int conn, long i)
{
	return (uint8_t)(i * 7 + (i >> 11) + conn * 31);
}

static int serve(int port, double seconds, const char *ip)
{
	struct sockaddr_in any = addr(ip, port), from;
	struct pollfd p[2 + MAXC];
	int n = 0, one = 1, l, u;
	double end = now_s() + seconds;
	static char buf[65536];
	socklen_t fl;

	l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	u = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (void *)&any, sizeof(any)) || listen(l, 128) ||
	    bind(u, (void *)&any, sizeof(any))) {
		perror("kpeer serve");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	p[0] = (struct pollfd){ .fd = l, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = u, .events = POLLIN };
	while (now_s() < end) {
		if (poll(p, 2 + n, 100) <= 0)
			continue;
		for (int c; n < MAXC && (c = accept4(l, NULL, NULL, 0)) >= 0;)
			p[2 + n++] = (struct pollfd){ .fd = c, .events = POLLIN };
		for (ssize_t r; fl = sizeof(from),
		     (r = recvfrom(u, buf, sizeof(buf), MSG_DONTWAIT, (void *)&from, &fl)) >= 0;)
			sendto(u, buf, r, 0, (void *)&from, fl);
		for (int i = 0; i < n; i++) {
			ssize_t r;

			if (!p[2 + i].revents)
				continue;
			r = recv(p[2 + i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			/* Blocking writes: the echo keeps its order. */
			if (r > 0 && send(p[2 + i].fd, buf, r, MSG_NOSIGNAL) == r)
				continue;
			if (r < 0 && errno == EAGAIN)
				continue;
			close(p[2 + i].fd);
			p[2 + i] = p[2 + --n];
			i--;
		}
	}
	return 0;
}

struct conn {
	int fd;
	long sent, got;
	bool bad, done;
};

static int tcp_echo(const char *ip, int port, long bytes, int nconn, double pace_s)
{
	struct sockaddr_in a = addr(ip, port);
	static struct conn c[MAXC];
	struct pollfd p[MAXC];
	static uint8_t buf[65536];
	double start = now_s(), end = start + 240, last_rx = 0, gap = 0;
	int left = nconn, good = 0;
	bool flowing = false;

	if (nconn < 1 || nconn > MAXC)
		return 2;
	for (int i = 0; i < nconn; i++) {
		c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c[i].fd, (void *)&a, sizeof(a))) {
			printf("connect %d: %s\n", i, strerror(errno));
			return 1;
		}
		fcntl(c[i].fd, F_SETFL, O_NONBLOCK);
	}
	while (left && now_s() < end) {
		double f = pace_s > 0 ? (now_s() - start) / pace_s : 1;
		/* Paced: no more than bytes over pace_s seconds. */
		long allowed = f >= 1 ? bytes : 16384 + (long)(bytes * f);

		for (int i = 0; i < nconn; i++) {
			p[i].fd = c[i].done ? -1 : c[i].fd;
			p[i].events = POLLIN | (c[i].sent < bytes && c[i].sent < allowed ? POLLOUT : 0);
		}
		if (poll(p, nconn, 200) <= 0)
			continue;
		for (int i = 0; i < nconn; i++) {
			struct conn *k = &c[i];
			ssize_t r;

			if (k->done || !p[i].revents)
				continue;
			if (k->sent < bytes && k->sent < allowed && (p[i].revents & POLLOUT)) {
				long m = bytes - k->sent > (long)sizeof(buf) ? (long)sizeof(buf) :
					 bytes - k->sent;

				if (m > allowed - k->sent)
					m = allowed - k->sent;

				for (long j = 0; j < m; j++)
					buf[j] = pattern(i, k->sent + j);
				r = send(k->fd, buf, m, MSG_NOSIGNAL);
				if (r > 0)
					k->sent += r;
				if (k->sent == bytes)
					shutdown(k->fd, SHUT_WR);
			}
			r = recv(k->fd, buf, sizeof(buf), 0);
			if (r > 0) {
				for (long j = 0; j < r; j++)
					if (buf[j] != pattern(i, k->got + j))
						k->bad = true;
				k->got += r;
				/* The longest wait between echoes (a flap's stall). */
				if (last_rx > 0 && now_s() - last_rx > gap)
					gap = now_s() - last_rx;
				last_rx = now_s();
				if (!flowing) {
					printf("flowing\n");
					fflush(stdout);
					flowing = true;
				}
			}
			if (r == 0 || (r < 0 && errno != EAGAIN) || k->got > bytes) {
				k->done = true;
				left--;
				good += !k->bad && k->got == bytes;
				if (k->bad || k->got != bytes)
					printf("conn %d: sent %ld got %ld%s%s\n", i, k->sent, k->got,
					       k->bad ? " corrupted" : "",
					       r < 0 ? strerror(errno) : "");
				close(k->fd);
			}
		}
	}
	if (pace_s > 0)
		printf("longest wait between echoed bytes: %.2f s\n", gap);
	printf("%s %d x %ld\n", good == nconn ? "ok" : "FAILED", good, bytes);
	return good == nconn ? 0 : 1;
}

static int udp_echo(const char *ip, int port, int count)
{
	struct sockaddr_in a = addr(ip, port);
	int s = socket(AF_INET, SOCK_DGRAM, 0), good = 0, same = 0;
	struct timeval tv = { 2, 0 };
	char msg[1400], in[1500];
	struct sockaddr_in from;
	socklen_t fl;

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < count; i++) {
		int len = 20 + (i * 97) % 1300;

		for (int j = 0; j < len; j++)
			msg[j] = (char)(i + j * 3);
		sendto(s, msg, len, 0, (void *)&a, sizeof(a));
		fl = sizeof(from);
		if (recvfrom(s, in, sizeof(in), 0, (void *)&from, &fl) == len && !memcmp(in, msg, len)) {
			good++;
			same += fl == sizeof(from) && from.sin_addr.s_addr == a.sin_addr.s_addr &&
				from.sin_port == a.sin_port;
		}
	}
	/* How many came from the address sent to, then (the last line, which
	 * the suites compare) how many came back intact. */
	printf("%d from %s:%d\n%d/%d echoed\n", same, ip, port, good, count);
	return good == count ? 0 : 1;
}

static int udp_df(const char *ip, int port, int bytes, int count)
{
	struct sockaddr_in a = addr(ip, port);
	int s = socket(AF_INET, SOCK_DGRAM, 0), good = 0, err = 0;
	int disc = IP_PMTUDISC_DO;
	struct timeval tv = { 2, 0 };
	static char msg[65536], in[65536];

	if (bytes < 1 || bytes > (int)sizeof(msg) ||
	    setsockopt(s, IPPROTO_IP, IP_MTU_DISCOVER, &disc, sizeof(disc))) {
		perror("kpeer udp-df");
		return 1;
	}
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < count; i++) {
		for (int j = 0; j < bytes; j++)
			msg[j] = (char)(i * 5 + j);
		if (sendto(s, msg, bytes, 0, (void *)&a, sizeof(a)) != bytes) {
			if (!err)
				err = errno;
			continue;
		}
		if (recv(s, in, sizeof(in), 0) == bytes && !memcmp(in, msg, bytes))
			good++;
	}
	printf("%d/%d echoed (%d bytes, DF)%s%s\n", good, count, bytes, err ? "; send: " : "",
	       err ? strerror(err) : "");
	close(s);
	return good == count ? 0 : 1;
}

static int try_bind(const char *proto, int port)
{
	struct sockaddr_in a = addr("0.0.0.0", port);
	int s = socket(AF_INET, strcmp(proto, "udp") ? SOCK_STREAM : SOCK_DGRAM, 0);
	int ret = bind(s, (void *)&a, sizeof(a)) ? errno : 0;

	printf("%s\n", ret == 0 ? "0" : ret == EADDRINUSE ? "EADDRINUSE" :
		       ret == EACCES ? "EACCES" : strerror(ret));
	close(s);
	return 0;
}

static int hold_listener(int port, int seconds)
{
	struct sockaddr_in a = addr("0.0.0.0", port);
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (bind(s, (void *)&a, sizeof(a)) || listen(s, 8)) {
		perror("kpeer listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sleep(seconds);
	return 0;
}

static int mcast_send(const char *group, int port, int count, const char *ifaddr)
{
	struct sockaddr_in a = addr(group, port);
	struct in_addr ifa;
	int s = socket(AF_INET, SOCK_DGRAM, 0), sent = 0;
	struct timespec gap = { 0, 20000000 };

	inet_pton(AF_INET, ifaddr, &ifa);
	if (setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa))) {
		perror("IP_MULTICAST_IF");
		return 1;
	}
	for (int i = 0; i < count; i++) {
		char msg[64];
		int len = snprintf(msg, sizeof(msg), "mcast %d", i);

		if (sendto(s, msg, len, 0, (struct sockaddr *)&a, sizeof(a)) == len)
			sent++;
		nanosleep(&gap, NULL);
	}
	printf("sent %d\n", sent);
	close(s);
	return sent == count ? 0 : 1;
}

static int mcast_recv(const char *group, int port, int count, double secs,
		      const char *ifaddr)
{
	struct sockaddr_in a = addr("0.0.0.0", port);
	struct ip_mreq mr;
	int s = socket(AF_INET, SOCK_DGRAM, 0), one = 1, n = 0, ttl = -1;
	struct timespec t0, t;
	char buf[1500], cbuf[64];

	inet_pton(AF_INET, group, &mr.imr_multiaddr);
	inet_pton(AF_INET, ifaddr, &mr.imr_interface);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) ||
	    setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) ||
	    setsockopt(s, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one))) {
		perror("mcast-recv");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = t0; n < count && t.tv_sec - t0.tv_sec < secs; clock_gettime(CLOCK_MONOTONIC, &t)) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				    .msg_controllen = sizeof(cbuf) };

		if (poll(&p, 1, 200) != 1 || recvmsg(s, &m, 0) <= 0)
			continue;
		n++;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL)
				memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
	}
	printf("got %d ttl %d\n", n, ttl);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), atof(argv[3]), "0.0.0.0");
	if (argc == 5 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), atof(argv[3]), argv[4]);
	if (argc >= 5 && argc <= 7 && !strcmp(argv[1], "tcp-echo"))
		return tcp_echo(argv[2], atoi(argv[3]), atol(argv[4]), argc >= 6 ? atoi(argv[5]) : 1,
				argc == 7 ? atof(argv[6]) : 0);
	if (argc == 5 && !strcmp(argv[1], "udp-echo"))
		return udp_echo(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "udp-df"))
		return udp_df(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 4 && !strcmp(argv[1], "bind"))
		return try_bind(argv[2], atoi(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "mcast-send"))
		return mcast_send(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
	if (argc == 7 && !strcmp(argv[1], "mcast-recv"))
		return mcast_recv(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), argv[6]);
	if (argc == 4 && !strcmp(argv[1], "listen"))
		return hold_listener(atoi(argv[2]), atoi(argv[3]));
	fprintf(stderr, "usage: see tests/interop/kpeer.c\n");
	return 2;
}
