// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Sluice side of the kring interop test (tests/vm/kring.sh): a stack
 * on a network device, through the module's rings, sharing the device's
 * address with the kernel.
 *
 *   kring_peer serve STACK IFNAME SECONDS [PORT]
 *        makes STACK on IFNAME, echoes TCP (many connections) and UDP on
 *        PORT (default 7), until SECONDS pass
 *   kring_peer tcp-client STACK IP PORT BYTES
 *        attaches to STACK, connects, sends BYTES of a pattern, half-closes,
 *        checks the echo byte for byte; prints "ok BYTES"
 *   kring_peer udp-client STACK IP PORT COUNT
 *        COUNT datagrams, each echoed intact
 *   kring_peer connect STACK IP PORT
 *        prints the connect result as an errno name (ECONNREFUSED, 0, ...)
 *   kring_peer bind STACK tcp|udp PORT
 *        prints the errno name of binding (and for TCP listening) on PORT
 *   kring_peer handoff STACK PORT SECONDS
 *        attaches to STACK, listens on PORT, accepts one connection, closes
 *        the listener (the port's filter passes to the connection), echoes
 *        until EOF and closes; prints "ok BYTES"
 *   kring_peer mcast-recv STACK GROUP PORT COUNT SECONDS
 *        attaches to STACK, binds UDP 0.0.0.0:PORT, joins GROUP
 *        (IP_ADD_MEMBERSHIP: the module joins the device), prints "ready",
 *        counts datagrams until COUNT or SECONDS; prints "got N"
 *   kring_peer mcast-send STACK GROUP PORT COUNT TTL
 *        attaches to STACK, sends COUNT datagrams to GROUP:PORT with
 *        IP_MULTICAST_TTL TTL, 20 ms apart; prints "sent N"
 *   kring_peer wait-gone STACK IFNAME SECONDS
 *        makes STACK on IFNAME with a TCP listener and a UDP socket on port
 *        7, prints "ready", then waits for the device to go: prints what
 *        accept and recv report (ENETDOWN expected), or "timeout"
 * Every loop is bounded in time.  A call failing because the stack is
 * broken (found corrupt, or its lock holder died) ends the program with
 * status 3 and "stack broken: ..." on stdout.
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
#define PENDING (256 * 1024)

static struct sluice_stack *st;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *err_name(long e)
{
	switch (-e) {
	case 0: return "0";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EADDRINUSE: return "EADDRINUSE";
	case EACCES: return "EACCES";
	case ETIMEDOUT: return "ETIMEDOUT";
	default: return strerror((int)-e);
	}
}

/* The stack is broken (found corrupt: ENOTRECOVERABLE; a process died
 * holding its lock: EPIPE): every call on it fails so. */
static bool stack_broken(void)
{
	int r = st ? sluice_stack_poll(st) : 0;

	return r == -ENOTRECOVERABLE || r == -EPIPE;
}

/* Exit 3: a call failed because the stack is broken (tests/vm/hostile.sh). */
static void die(const char *what, long err)
{
	if (stack_broken()) {
		printf("stack broken: %s: %s\n", what, strerror((int)-err));
		fflush(stdout);
		sluice_stack_close(st);
		exit(3);
	}
	fprintf(stderr, "kring_peer: %s: %s\n", what, strerror((int)-err));
	if (st)
		sluice_stack_close(st);
	exit(1);
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static void attach(const char *name)
{
	int ret = sluice_stack_attach(name, &st);

	if (ret)
		die("attach", ret);
	ret = sluice_link_kring(st);
	if (ret)
		die("kring link", ret);
}

/* An echo connection: what was read and not yet written back. */
struct econn {
	int sd;
	char *buf;
	long len;
	bool eof;
};

static int serve(const char *name, const char *ifname, double seconds, int port)
{
	struct sluice_stack_config cfg = { .max_sockets = 512, .n_bufs = 8192 };
	struct sockaddr_in any7 = addr("0.0.0.0", port), from;
	struct sluice_pollfd p[2 + MAXC];
	static struct econn c[MAXC];
	int n = 0, u, t, ret;
	double end = now_s() + seconds;
	static char ubuf[2048];
	long r;

	snprintf(cfg.ifname, sizeof(cfg.ifname), "%s", ifname);
	ret = sluice_stack_create(name, &cfg, &st);
	if (ret)
		die("create stack on the device", ret);
	ret = sluice_link_kring(st);
	if (ret)
		die("kring link", ret);
	u = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	t = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	ret = sluice_bind(st, u, &any7);
	if (!ret)
		ret = sluice_bind(st, t, &any7);
	if (!ret)
		ret = sluice_listen(st, t, 128);
	if (ret)
		die("bind/listen port 7", ret);
	printf("ready\n");
	fflush(stdout);
	while (now_s() < end) {
		int np = 0;

		p[np++] = (struct sluice_pollfd){ .sd = u, .events = POLLIN };
		p[np++] = (struct sluice_pollfd){ .sd = t, .events = POLLIN };
		for (int i = 0; i < n; i++)
			p[np++] = (struct sluice_pollfd){
				.sd = c[i].sd,
				.events = (c[i].len < PENDING && !c[i].eof ? POLLIN : 0) |
					  (c[i].len ? POLLOUT : 0),
			};
		ret = sluice_poll(st, p, np, 100);
		if (ret < 0 && stack_broken())
			die("poll", ret);
		if (ret <= 0)
			continue;
		while ((r = sluice_recvfrom(st, u, ubuf, sizeof(ubuf), MSG_DONTWAIT, &from)) >= 0)
			sluice_sendto(st, u, ubuf, r, 0, &from);
		for (int a; n < MAXC && (a = sluice_accept(st, t, NULL)) >= 0;) {
			c[n] = (struct econn){ .sd = a, .buf = malloc(PENDING) };
			n++;
		}
		for (int i = 0; i < n; i++) {
			struct econn *k = &c[i];
			bool gone = false;

			if (!k->eof && k->len < PENDING) {
				r = sluice_recv(st, k->sd, k->buf + k->len, PENDING - k->len,
						MSG_DONTWAIT);
				if (r > 0)
					k->len += r;
				else if (r == 0)
					k->eof = true;
				else if (r != -EAGAIN)
					gone = true;
			}
			if (k->len) {
				r = sluice_send(st, k->sd, k->buf, k->len, MSG_DONTWAIT);
				if (r > 0) {
					memmove(k->buf, k->buf + r, k->len - r);
					k->len -= r;
				} else if (r != -EAGAIN) {
					gone = true;
				}
			}
			if (k->eof && !k->len)
				sluice_shutdown(st, k->sd, SHUT_WR);
			if (gone || (k->eof && !k->len)) {
				sluice_close(st, k->sd);
				free(k->buf);
				c[i--] = c[--n];
			}
		}
	}
	for (double e2 = now_s() + 1; now_s() < e2;)
		sluice_stack_poll(st);
	sluice_stack_close(st);
	return 0;
}

static int tcp_client(const char *ip, int port, long bytes)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_STREAM);
	char *out = malloc(bytes), *in = malloc(bytes);
	long sent = 0, got = 0, n;
	double end = now_s() + 240;
	int ret;

	for (long i = 0; i < bytes; i++)
		out[i] = (char)(i * 11 + (i >> 9));
	ret = sluice_connect(st, s, &a);
	if (ret)
		die("connect", ret);
	while ((sent < bytes || got < bytes) && now_s() < end) {
		if (sent < bytes) {
			n = sluice_send(st, s, out + sent,
					bytes - sent > 65536 ? 65536 : bytes - sent, MSG_DONTWAIT);
			if (n > 0)
				sent += n;
			else if (n != -EAGAIN)
				die("send", n);
			if (sent == bytes)
				sluice_shutdown(st, s, SHUT_WR);
		}
		n = sluice_recv(st, s, in + got, bytes - got, MSG_DONTWAIT);
		if (n > 0) {
			got += n;
		} else if (n == 0) {
			break;
		} else if (n != -EAGAIN) {
			die("recv", n);
		} else {
			struct sluice_pollfd p = { .sd = s, .events = POLLIN |
						   (sent < bytes ? POLLOUT : 0) };

			ret = sluice_poll(st, &p, 1, 50);
			if (ret < 0 && stack_broken())
				die("poll", ret);
		}
	}
	if (got != bytes || memcmp(in, out, bytes)) {
		printf("FAILED: echoed %ld of %ld bytes%s\n", got, bytes,
		       got == bytes ? ", contents differ" : "");
		sluice_stack_close(st);
		return 1;
	}
	n = sluice_recv(st, s, in, 1, 0);
	sluice_close(st, s);
	for (double e2 = now_s() + 0.5; now_s() < e2;)
		sluice_stack_poll(st);
	printf("ok %ld bytes, eof %ld\n", got, n);
	sluice_stack_close(st);
	return n == 0 ? 0 : 1;
}

static int udp_client(const char *ip, int port, int count)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_DGRAM), good = 0;
	char msg[1400], buf[1500];

	for (int i = 0; i < count; i++) {
		struct sluice_pollfd p = { .sd = s, .events = POLLIN };
		int len = 20 + (i * 89) % 1300;

		for (int j = 0; j < len; j++)
			msg[j] = (char)(i * 5 + j);
		sluice_sendto(st, s, msg, len, 0, &a);
		if (sluice_poll(st, &p, 1, 3000) == 1 &&
		    sluice_recv(st, s, buf, sizeof(buf), 0) == len && !memcmp(buf, msg, len))
			good++;
	}
	printf("%d/%d echoed\n", good, count);
	sluice_close(st, s);
	sluice_stack_close(st);
	return good == count ? 0 : 1;
}

static int connect_only(const char *ip, int port)
{
	struct sockaddr_in a = addr(ip, port);
	int s = sluice_socket(st, SLUICE_SOCK_STREAM);
	int ret = sluice_connect(st, s, &a);

	printf("%s\n", err_name(ret));
	sluice_close(st, s);
	sluice_stack_close(st);
	return 0;
}

static int try_bind(const char *proto, int port)
{
	struct sockaddr_in a = addr("0.0.0.0", port);
	bool tcp = strcmp(proto, "udp") != 0;
	int s = sluice_socket(st, tcp ? SLUICE_SOCK_STREAM : SLUICE_SOCK_DGRAM);
	int ret = sluice_bind(st, s, &a);

	if (!ret && tcp)
		ret = sluice_listen(st, s, 8);
	printf("%s\n", err_name(ret));
	sluice_close(st, s);
	sluice_stack_close(st);
	return 0;
}

static int handoff(int port, int seconds)
{
	struct sockaddr_in a = addr("0.0.0.0", port);
	int l = sluice_socket(st, SLUICE_SOCK_STREAM), c, ret;
	double end = now_s() + seconds;
	static char buf[65536];
	long n = 0, total = 0;

	ret = sluice_bind(st, l, &a);
	if (!ret)
		ret = sluice_listen(st, l, 4);
	if (ret)
		die("listen", ret);
	printf("ready\n");
	fflush(stdout);
	c = sluice_accept(st, l, NULL);
	if (c < 0)
		die("accept", c);
	sluice_close(st, l);
	while (now_s() < end) {
		struct sluice_pollfd p = { .sd = c, .events = POLLIN };

		n = sluice_recv(st, c, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == -EAGAIN) {
			sluice_poll(st, &p, 1, 100);
			continue;
		}
		if (n <= 0)
			break;
		total += n;
		for (long off = 0; off < n && now_s() < end;) {
			long w = sluice_send(st, c, buf + off, n - off, 0);

			if (w < 0)
				die("send", w);
			off += w;
		}
	}
	sluice_close(st, c);
	/* Run the stack until the close is done (LAST-ACK answered). */
	for (double e2 = now_s() + 1; now_s() < e2;)
		sluice_stack_poll(st);
	printf("ok %ld\n", total);
	sluice_stack_close(st);
	return n == 0 ? 0 : 1;
}

static int wait_gone(const char *name, const char *ifname, int seconds)
{
	struct sluice_stack_config cfg = { .max_sockets = 64, .n_bufs = 1024 };
	struct sockaddr_in any = addr("0.0.0.0", 7);
	struct sluice_pollfd p[2];
	int l, u, ret;
	long r;
	char b[16];

	snprintf(cfg.ifname, sizeof(cfg.ifname), "%s", ifname);
	ret = sluice_stack_create(name, &cfg, &st);
	if (!ret)
		ret = sluice_link_kring(st);
	if (ret)
		die("stack on the device", ret);
	l = sluice_socket(st, SLUICE_SOCK_STREAM);
	u = sluice_socket(st, SLUICE_SOCK_DGRAM);
	ret = sluice_bind(st, l, &any);
	if (!ret)
		ret = sluice_listen(st, l, 8);
	if (!ret)
		ret = sluice_bind(st, u, &any);
	if (ret)
		die("bind", ret);
	printf("ready\n");
	fflush(stdout);
	p[0] = (struct sluice_pollfd){ .sd = l, .events = POLLIN };
	p[1] = (struct sluice_pollfd){ .sd = u, .events = POLLIN };
	if (sluice_poll(st, p, 2, seconds * 1000) <= 0) {
		printf("timeout\n");
		sluice_stack_close(st);
		return 1;
	}
	/* Give the other socket its turn too: both must report, not hang. */
	sluice_poll(st, p, 2, 1000);
	ret = sluice_accept(st, l, NULL);
	printf("accept %s\n", err_name(ret < 0 ? ret : 0));
	r = sluice_recv(st, u, b, sizeof(b), MSG_DONTWAIT);
	printf("recv %s\n", err_name(r < 0 ? r : 0));
	sluice_stack_close(st);
	return 0;
}

static int mcast_recv(const char *group, int port, int count, double secs)
{
	struct sockaddr_in a = addr("0.0.0.0", port);
	struct ip_mreqn mr = { .imr_ifindex = 0 };
	int s = sluice_socket(st, SLUICE_SOCK_DGRAM), n = 0, ret;
	double end = now_s() + secs;
	char buf[1500];

	inet_pton(AF_INET, group, &mr.imr_multiaddr);
	ret = sluice_bind(st, s, &a);
	if (!ret)
		ret = sluice_setsockopt(st, s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr));
	if (ret) {
		printf("join %s\n", err_name(ret));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (n < count && now_s() < end) {
		struct sluice_pollfd p = { .sd = s, .events = POLLIN };

		if (sluice_poll(st, &p, 1, 200) == 1 &&
		    sluice_recv(st, s, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			n++;
	}
	printf("got %d\n", n);
	sluice_close(st, s);
	sluice_stack_close(st);
	return 0;
}

static int mcast_send(const char *group, int port, int count, int ttl)
{
	struct sockaddr_in a = addr(group, port);
	int s = sluice_socket(st, SLUICE_SOCK_DGRAM), sent = 0;
	struct timespec gap = { 0, 20000000 };

	if (sluice_setsockopt(st, s, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl))) {
		printf("IP_MULTICAST_TTL failed\n");
		return 1;
	}
	for (int i = 0; i < count; i++) {
		if (sluice_sendto(st, s, "mcast", 5, 0, &a) == 5)
			sent++;
		sluice_stack_poll(st);
		nanosleep(&gap, NULL);
	}
	printf("sent %d\n", sent);
	sluice_close(st, s);
	sluice_stack_close(st);
	return sent == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "serve"))
		return serve(argv[2], argv[3], atof(argv[4]), argc == 6 ? atoi(argv[5]) : 7);
	if (argc == 5 && !strcmp(argv[1], "wait-gone"))
		return wait_gone(argv[2], argv[3], atoi(argv[4]));
	if (argc < 4) {
		fprintf(stderr, "usage: see tests/interop/kring_peer.c\n");
		return 2;
	}
	attach(argv[2]);
	if (!strcmp(argv[1], "tcp-client") && argc == 6)
		return tcp_client(argv[3], atoi(argv[4]), atol(argv[5]));
	if (!strcmp(argv[1], "udp-client") && argc == 6)
		return udp_client(argv[3], atoi(argv[4]), atoi(argv[5]));
	if (!strcmp(argv[1], "connect") && argc == 5)
		return connect_only(argv[3], atoi(argv[4]));
	if (!strcmp(argv[1], "bind") && argc == 5)
		return try_bind(argv[3], atoi(argv[4]));
	if (!strcmp(argv[1], "handoff") && argc == 5)
		return handoff(atoi(argv[3]), atoi(argv[4]));
	if (!strcmp(argv[1], "mcast-recv") && argc == 7)
		return mcast_recv(argv[3], atoi(argv[4]), atoi(argv[5]), atof(argv[6]));
	if (!strcmp(argv[1], "mcast-send") && argc == 7)
		return mcast_send(argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "kring_peer: bad arguments\n");
	sluice_stack_close(st);
	return 2;
}
