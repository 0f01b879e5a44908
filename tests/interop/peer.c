// SPDX-License-Identifier: BSD-2-Clause
/*
 * A Sluice program for interop tests against the Linux kernel's stack over
 * a TAP device (tests/host/test_tap_interop.sh):
 *
 *   peer serve  STACK IP/PREFIX TAPDEV SECONDS
 *        answers ping (the stack does), echoes UDP and TCP on port 7 and
 *        discards TCP on port 9, until SECONDS pass
 *   peer tcp-client STACK IP/PREFIX TAPDEV DST-IP PORT BYTES
 *        connects, sends BYTES of a pattern, half-closes, reads the echo
 *        back and checks it; exit 0 when it matches
 *   peer udp-client STACK IP/PREFIX TAPDEV DST-IP PORT COUNT
 *        sends COUNT datagrams and expects each echoed
 *   peer connect STACK IP/PREFIX TAPDEV DST-IP PORT
 *        prints the connect result as an errno name (ECONNREFUSED, 0, ...)
 *   peer send-exit STACK IP/PREFIX TAPDEV DST-IP PORT BYTES
 *        connects, sends BYTES of the pattern byte i = (i * 7 + (i >> 10)),
 *        closes at once and exits, leaving the stack (not destroyed) and
 *        what is unsent to the stack's helper process (lib/api/helper.c)
 * Every loop is bounded in time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sluice/sluice.h>

#define MAXC 64

static struct sluice_stack *st;
static char stack_name[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, long err)
{
	fprintf(stderr, "peer: %s: %s\n", what, strerror((int)-err));
	if (st) {
		sluice_stack_close(st);
		sluice_stack_destroy(stack_name);
	}
	exit(1);
}

static void setup(const char *name, const char *cidr, const char *tap)
{
	struct sluice_stack_config cfg = { .max_sockets = 256, .n_bufs = 8192 };
	char ip[32], *slash;
	int prefix = 24, ret;

	snprintf(ip, sizeof(ip), "%s", cidr);
	slash = strchr(ip, '/');
	if (slash) {
		*slash = 0;
		prefix = atoi(slash + 1);
	}
	if (inet_pton(AF_INET, ip, &cfg.ip_addr) != 1)
		die("address", -EINVAL);
	cfg.ip_mask = htonl(prefix ? ~0u << (32 - prefix) : 0);
	snprintf(stack_name, sizeof(stack_name), "%s", name);
	sluice_stack_destroy(name);
	ret = sluice_stack_create(name, &cfg, &st);
	if (ret)
		die("create stack", ret);
	ret = sluice_link_tap(st, tap);
	/* A single-queue TAP is held by the previous run's helper (finishing
	 * its orphans) until it sees that stack destroyed, just above: it
	 * naps 50 ms at a time, so give it up to 2 s. */
	for (int i = 0; ret == -EBUSY && i < 200; i++) {
		usleep(10000);
		ret = sluice_link_tap(st, tap);
	}
	if (ret)
		die("open tap", ret);
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static void finish(int code)
{
	sluice_stack_close(st);
	sluice_stack_destroy(stack_name);
	exit(code);
}

static int serve(double seconds)
{
	struct sockaddr_in any7 = addr("0.0.0.0", 7), any9 = addr("0.0.0.0", 9), from;
	struct sluice_pollfd p[3 + MAXC];
	int conn[MAXC], nconn = 0, one = 1;
	int u = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int t = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	int d = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	double end = now_s() + seconds;
	static char buf[65536];
	long n;

	sluice_setsockopt(st, t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sluice_bind(st, u, &any7) || sluice_bind(st, t, &any7) || sluice_bind(st, d, &any9) ||
	    sluice_listen(st, t, 128) || sluice_listen(st, d, 128))
		die("bind/listen", -EADDRINUSE);
	printf("ready\n");
	fflush(stdout);
	while (now_s() < end) {
		int np = 0;

		p[np++] = (struct sluice_pollfd){ .sd = u, .events = POLLIN };
		p[np++] = (struct sluice_pollfd){ .sd = t, .events = POLLIN };
		p[np++] = (struct sluice_pollfd){ .sd = d, .events = POLLIN };
		for (int i = 0; i < nconn; i++)
			p[np++] = (struct sluice_pollfd){ .sd = conn[i], .events = POLLIN };
		if (sluice_poll(st, p, np, 100) <= 0)
			continue;
		while ((n = sluice_recvfrom(st, u, buf, sizeof(buf), 0, &from)) >= 0)
			sluice_sendto(st, u, buf, n, 0, &from);
		for (int l = 1; l <= 2; l++) {
			int c;

			while (nconn < MAXC && (c = sluice_accept(st, p[l].sd, NULL)) >= 0) {
				/* Port 9 (discard) connections are marked negative. */
				conn[nconn++] = l == 1 ? c : -c - 1;
			}
		}
		for (int i = 0; i < nconn; i++) {
			int c = conn[i] < 0 ? -conn[i] - 1 : conn[i];
			bool closed = false;

			while ((n = sluice_recv(st, c, buf, sizeof(buf), 0)) > 0) {
				if (conn[i] < 0)
					continue;
				for (long off = 0; off < n;) {
					long w = sluice_send(st, c, buf + off, n - off, 0);

					if (w == -EAGAIN) {
						sluice_stack_poll(st);
						continue;
					}
					if (w < 0) {
						closed = true;
						break;
					}
					off += w;
				}
			}
			if (n == 0 || (n < 0 && n != -EAGAIN) || closed) {
				sluice_close(st, c);
				conn[i--] = conn[--nconn];
			}
		}
	}
	/* Let closing connections finish their FIN exchange. */
	for (double e2 = now_s() + 1; now_s() < e2;)
		sluice_stack_poll(st);
	finish(0);
	return 0;
}

static int tcp_client(const char *ip, int port, long bytes)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_STREAM);
	char *out = malloc(bytes), *in = malloc(bytes);
	long sent = 0, got = 0, n;
	double end = now_s() + 60;
	int ret;

	for (long i = 0; i < bytes; i++)
		out[i] = (char)(i * 7 + (i >> 10));
	ret = sluice_connect(st, s, &a);
	if (ret)
		die("connect", ret);
	/* Interleave sending and receiving so neither window stalls. */
	while ((sent < bytes || got < bytes) && now_s() < end) {
		if (sent < bytes) {
			n = sluice_send(st, s, out + sent, bytes - sent > 65536 ? 65536 : bytes - sent,
					MSG_DONTWAIT);
			if (n > 0)
				sent += n;
			else if (n != -EAGAIN)
				die("send", n);
			if (sent == bytes)
				sluice_shutdown(st, s, SHUT_WR);
		}
		n = sluice_recv(st, s, in + got, bytes - got, MSG_DONTWAIT);
		if (n > 0)
			got += n;
		else if (n == 0)
			break;
		else if (n != -EAGAIN)
			die("recv", n);
		else
			sluice_stack_poll(st);
	}
	if (got != bytes || memcmp(in, out, bytes)) {
		fprintf(stderr, "peer: echoed %ld of %ld bytes%s\n", got, bytes,
			got == bytes ? ", contents differ" : "");
		finish(1);
	}
	n = sluice_recv(st, s, in, 1, 0);
	sluice_close(st, s);
	for (double e2 = now_s() + 0.5; now_s() < e2;)
		sluice_stack_poll(st);
	printf("ok %ld bytes, eof %ld\n", got, n);
	finish(n == 0 ? 0 : 1);
	return 0;
}

static int udp_client(const char *ip, int port, int count)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_DGRAM), good = 0;
	char msg[256], buf[256];

	for (int i = 0; i < count; i++) {
		struct sluice_pollfd p = { .sd = s, .events = POLLIN };
		int len = snprintf(msg, sizeof(msg), "datagram %d from sluice", i);

		sluice_sendto(st, s, msg, len, 0, &a);
		/* The first datagram may wait for ARP. */
		if (sluice_poll(st, &p, 1, 3000) == 1 &&
		    sluice_recv(st, s, buf, sizeof(buf), 0) == len && !memcmp(buf, msg, len))
			good++;
	}
	printf("%d/%d echoed\n", good, count);
	finish(good == count ? 0 : 1);
	return 0;
}

static int connect_only(const char *ip, int port)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_STREAM);
	int ret = sluice_connect(st, s, &a);

	printf("%s\n", ret == 0 ? "0" : ret == -ECONNREFUSED ? "ECONNREFUSED" :
		       ret == -ETIMEDOUT ? "ETIMEDOUT" : strerror(-ret));
	finish(0);
	return 0;
}

static int send_exit(const char *ip, int port, long bytes)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_STREAM);
	static char out[65536];
	long sent = 0, n;
	double end = now_s() + 60;
	int ret;

	ret = sluice_connect(st, s, &a);
	if (ret)
		die("connect", ret);
	while (sent < bytes && now_s() < end) {
		long len = bytes - sent > (long)sizeof(out) ? (long)sizeof(out) : bytes - sent;

		for (long i = 0; i < len; i++)
			out[i] = (char)((sent + i) * 7 + ((sent + i) >> 10));
		n = sluice_send(st, s, out, len, 0);
		if (n < 0)
			die("send", n);
		sent += n;
	}
	sluice_close(st, s);
	printf("sent %ld\n", sent);
	fflush(stdout);
	sluice_stack_close(st);
	exit(sent == bytes ? 0 : 1);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: see tests/interop/peer.c\n");
		return 2;
	}
	setup(argv[2], argv[3], argv[4]);
	if (!strcmp(argv[1], "serve") && argc == 6)
		return serve(atof(argv[5]));
	if (!strcmp(argv[1], "tcp-client") && argc == 8)
		return tcp_client(argv[5], atoi(argv[6]), atol(argv[7]));
	if (!strcmp(argv[1], "udp-client") && argc == 8)
		return udp_client(argv[5], atoi(argv[6]), atoi(argv[7]));
	if (!strcmp(argv[1], "send-exit") && argc == 8)
		return send_exit(argv[5], atoi(argv[6]), atol(argv[7]));
	if (!strcmp(argv[1], "connect") && argc == 7)
		return connect_only(argv[5], atoi(argv[6]));
	fprintf(stderr, "peer: bad arguments\n");
	finish(2);
	return 2;
}
