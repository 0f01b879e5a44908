// SPDX-License-Identifier: BSD-2-Clause
/*
 * What an AF_INET6 socket's IPv6 packets carry and what comes back to it
 * (issue 20), for tests/host/test_ipv6_send.sh: run once on the kernel
 * and once under `sluice run` on a TAP stack, the same kernel peer
 * opposite, which captures what arrives on its device (v6send_peer.py).  The
 * script compares this program's two outputs line for line, and the
 * peer's two captures.
 *
 *   v6send ME PEER PEER2 PORT
 *	me, and the peer's two addresses; the peer listens on UDP PORT,
 *	PORT + 1 and TCP PORT + 2, and answers a datagram to UDP PORT + 3
 *	by sending a Packet Too Big about the last TCP data it saw
 *	(v6send_peer.py).  Every line is "CASE WHAT = value", addresses
 *	written ME, PEER and PEER2.
 *
 * 1. tclass: IPV6_TCLASS and IPV6_UNICAST_HOPS read and set, and per
 *    datagram IPV6_TCLASS and IPV6_HOPLIMIT control messages (the peer's
 *    capture shows each datagram's traffic class and hop limit); a TCP
 *    connection's (its SYN's).
 * 2. errq: a datagram to a closed port of the peer: its port unreachable
 *    in the error queue with IPV6_RECVERR (SO_EE_ORIGIN_ICMP6), and
 *    ECONNREFUSED to a connected socket without it.
 * 3. ptb: a datagram of 1400 bytes (the peer drops it and answers Packet
 *    Too Big 1280): EMSGSIZE in the error queue, then the same datagram
 *    in fragments of at most 1280 bytes (the peer gets it whole), and
 *    EMSGSIZE with IPV6_DONTFRAG and with IPV6_PMTUDISC_DO (a local
 *    error); a TCP connection's MSS after a Packet Too Big.
 * 4. reasm: datagrams the peer sends in fragments (v6send_peer.py) as
 *    they are received: whole, or dropped as Linux drops them.
 *
 * Every wait is bounded (SIGALRM after 20 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static struct in6_addr me, peer, peer2;
static int port;

static const char *name(const struct in6_addr *a)
{
	static char buf[INET6_ADDRSTRLEN];

	if (!memcmp(a, &me, sizeof(*a)))
		return "ME";
	if (!memcmp(a, &peer, sizeof(*a)))
		return "PEER";
	if (!memcmp(a, &peer2, sizeof(*a)))
		return "PEER2";
	return inet_ntop(AF_INET6, a, buf, sizeof(buf));
}

static struct sockaddr_in6 sa(const struct in6_addr *a, int p)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)p) };

	s.sin6_addr = *a;
	return s;
}

static int sock(int type)
{
	struct sockaddr_in6 a = sa(&me, 0);
	int fd = socket(AF_INET6, type, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		printf("FAIL socket/bind: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static int geti(int fd, int level, int opt)
{
	int v = -99;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, level, opt, &v, &l))
		return -errno;
	return v;
}

static void seti(int fd, int level, int opt, int v, const char *c, const char *what)
{
	int r = setsockopt(fd, level, opt, &v, sizeof(v));

	printf("%s set %s %d = %s\n", c, what, v, r ? strerror(errno) : "ok");
}

static const char *res(ssize_t n)
{
	static char buf[64];

	if (n < 0)
		return strerror(errno);
	snprintf(buf, sizeof(buf), "%zd", n);
	return buf;
}

/* sendmsg of len bytes to the peer's port p (0: the connected peer) with
 * up to two int control messages of IPPROTO_IPV6 (type 0: none; a
 * negative type is -(an IPPROTO_IP one)). */
static ssize_t send6(int fd, int p, size_t len, int t1, int v1, int t2, int v2)
{
	static char data[2000];
	char cbuf[CMSG_SPACE(sizeof(int)) * 2];
	struct sockaddr_in6 to = sa(&peer, p);
	struct iovec iov = { data, len };
	struct msghdr m = { .msg_name = p ? &to : NULL, .msg_namelen = p ? sizeof(to) : 0,
			    .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	memset(data, 'a', sizeof(data));
	memset(cbuf, 0, sizeof(cbuf));
	if (t1) {
		m.msg_control = cbuf;
		m.msg_controllen = CMSG_SPACE(sizeof(int)) * (t2 ? 2 : 1);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = t1 < 0 ? IPPROTO_IP : IPPROTO_IPV6;
		c->cmsg_type = t1 < 0 ? -t1 : t1;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &v1, sizeof(int));
		if (t2) {
			c = CMSG_NXTHDR(&m, c);
			c->cmsg_level = IPPROTO_IPV6;
			c->cmsg_type = t2;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &v2, sizeof(int));
		}
	}
	return sendmsg(fd, &m, 0);
}

/* The oldest error queued, as one line. */
static void errq(int fd, const char *c)
{
	char data[2048], cbuf[512];
	struct sockaddr_in6 from;
	struct iovec iov = { data, sizeof(data) };
	struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
			    .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	memset(&from, 0, sizeof(from));
	n = recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
	if (n < 0) {
		printf("%s errq = %s\n", c, strerror(errno));
		return;
	}
	printf("%s errq = %zd bytes flags 0x%x from %s port %s namelen %u\n", c, n, m.msg_flags,
	       name(&from.sin6_addr), from.sin6_port == htons((uint16_t)(port + 1)) ? "P+1" :
	       from.sin6_port == htons(9) ? "9" : from.sin6_port ? "other" : "0",
	       (unsigned int)m.msg_namelen);
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		struct sock_extended_err ee;
		struct sockaddr_in6 off;

		if (h->cmsg_level != IPPROTO_IPV6 || h->cmsg_type != IPV6_RECVERR) {
			printf("%s errq cmsg = level %d type %d\n", c, h->cmsg_level, h->cmsg_type);
			continue;
		}
		memcpy(&ee, CMSG_DATA(h), sizeof(ee));
		memcpy(&off, CMSG_DATA(h) + sizeof(ee), sizeof(off));
		printf("%s errq ee = errno %s origin %u type %u code %u info %u offender %s "
		       "family %u\n", c, strerror((int)ee.ee_errno), ee.ee_origin, ee.ee_type,
		       ee.ee_code, ee.ee_info, off.sin6_family ? name(&off.sin6_addr) : "-",
		       off.sin6_family);
	}
}

static void tclass(void)
{
	const char *c = "tclass";
	int u = sock(SOCK_DGRAM), t = sock(SOCK_STREAM), con = sock(SOCK_DGRAM);
	struct sockaddr_in6 to = sa(&peer, port + 1);

	printf("%s udp default tclass = %d hops = %d mhops = %d\n", c,
	       geti(u, IPPROTO_IPV6, IPV6_TCLASS), geti(u, IPPROTO_IPV6, IPV6_UNICAST_HOPS),
	       geti(u, IPPROTO_IPV6, IPV6_MULTICAST_HOPS));
	printf("%s d1 (defaults) = %s\n", c, res(send6(u, port, 100, 0, 0, 0, 0)));
	seti(u, IPPROTO_IPV6, IPV6_TCLASS, 0x2b, c, "tclass");
	seti(u, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 9, c, "hops");
	seti(u, IPPROTO_IPV6, IPV6_TCLASS, 256, c, "tclass");
	seti(u, IPPROTO_IPV6, IPV6_UNICAST_HOPS, -2, c, "hops");
	printf("%s udp tclass = %d hops = %d\n", c, geti(u, IPPROTO_IPV6, IPV6_TCLASS),
	       geti(u, IPPROTO_IPV6, IPV6_UNICAST_HOPS));
	printf("%s d2 (0x2b, 9) = %s\n", c, res(send6(u, port, 101, 0, 0, 0, 0)));
	printf("%s d3 (cmsg 0x48, 3) = %s\n", c,
	       res(send6(u, port, 102, IPV6_TCLASS, 0x48, IPV6_HOPLIMIT, 3)));
	printf("%s d4 (cmsg -1, -1: the socket's) = %s\n", c,
	       res(send6(u, port, 103, IPV6_TCLASS, -1, IPV6_HOPLIMIT, -1)));
	printf("%s d5 (cmsg hop limit 256) = %s\n", c,
	       res(send6(u, port, 104, IPV6_HOPLIMIT, 256, 0, 0)));
	printf("%s d6 (cmsg IPv4's TTL 7: passed over) = %s\n", c,
	       res(send6(u, port, 105, -IP_TTL, 7, 0, 0)));
	seti(u, IPPROTO_IPV6, IPV6_UNICAST_HOPS, -1, c, "hops");
	seti(u, IPPROTO_IPV6, IPV6_TCLASS, -1, c, "tclass");
	printf("%s d7 (back to the defaults) = %s\n", c, res(send6(u, port, 106, 0, 0, 0, 0)));
	/* A connected socket's default hop limit is its route's. */
	if (connect(con, (struct sockaddr *)&to, sizeof(to)))
		printf("%s connect = %s\n", c, strerror(errno));
	printf("%s connected udp hops = %d\n", c, geti(con, IPPROTO_IPV6, IPV6_UNICAST_HOPS));
	seti(t, IPPROTO_IPV6, IPV6_TCLASS, 0xb8, c, "tcp tclass");
	seti(t, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 5, c, "tcp hops");
	to = sa(&peer, port + 2);
	printf("%s tcp connect = %s\n", c,
	       connect(t, (struct sockaddr *)&to, sizeof(to)) ? strerror(errno) : "ok");
	printf("%s tcp send = %s\n", c, res(send(t, "tcp-tclass", 10, 0)));
	printf("%s tcp tclass = %d hops = %d\n", c, geti(t, IPPROTO_IPV6, IPV6_TCLASS),
	       geti(t, IPPROTO_IPV6, IPV6_UNICAST_HOPS));
	usleep(200000);
	close(t);
	close(u);
	close(con);
}

static void errs(void)
{
	const char *c = "errq";
	int e = sock(SOCK_DGRAM), n = sock(SOCK_DGRAM), one = 1;
	struct sockaddr_in6 to = sa(&peer, 9);

	printf("%s set recverr = %s\n", c,
	       setsockopt(e, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one)) ? strerror(errno) :
									      "ok");
	printf("%s recverr = %d\n", c, geti(e, IPPROTO_IPV6, IPV6_RECVERR));
	printf("%s send to a closed port = %s\n", c,
	       res(sendto(e, "x", 1, 0, (struct sockaddr *)&to, sizeof(to))));
	usleep(300000);
	printf("%s so_error = %d\n", c, geti(e, SOL_SOCKET, SO_ERROR));
	errq(e, c);
	errq(e, c);
	printf("%s send again = %s\n", c,
	       res(sendto(e, "z", 1, 0, (struct sockaddr *)&to, sizeof(to))));
	usleep(300000);
	one = 0;
	setsockopt(e, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one));
	printf("%s recverr off, so_error = %d\n", c, geti(e, SOL_SOCKET, SO_ERROR));
	errq(e, c);
	/* Without IPV6_RECVERR: a connected socket hears of the hard error. */
	connect(n, (struct sockaddr *)&to, sizeof(to));
	printf("%s connected send = %s\n", c, res(send(n, "y", 1, 0)));
	usleep(300000);
	printf("%s connected recv = %s\n", c, res(recv(n, &one, 1, MSG_DONTWAIT)));
	printf("%s connected recv again = %s\n", c, res(recv(n, &one, 1, MSG_DONTWAIT)));
	close(e);
	close(n);
}

static void ptb(void)
{
	const char *c = "ptb";
	int u = sock(SOCK_DGRAM), t = sock(SOCK_STREAM), one = 1, v;
	struct sockaddr_in6 to = sa(&peer, port + 1);
	static char big[3000];

	setsockopt(u, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one));
	connect(u, (struct sockaddr *)&to, sizeof(to));
	printf("%s send 1400 = %s\n", c, res(send6(u, 0, 1400, 0, 0, 0, 0)));
	usleep(400000);
	printf("%s so_error = %d\n", c, geti(u, SOL_SOCKET, SO_ERROR));
	errq(u, c);
	printf("%s mtu = %d\n", c, geti(u, IPPROTO_IPV6, IPV6_MTU));
	printf("%s send 1400 again (fragments) = %s\n", c, res(send6(u, 0, 1400, 0, 0, 0, 0)));
	printf("%s send 1232 (fits 1280) = %s\n", c, res(send6(u, 0, 1232, 0, 0, 0, 0)));
	printf("%s send 1233 dontfrag cmsg = %s\n", c,
	       res(send6(u, 0, 1233, IPV6_DONTFRAG, 1, 0, 0)));
	errq(u, c);
	seti(u, IPPROTO_IPV6, IPV6_DONTFRAG, 1, c, "dontfrag");
	printf("%s send 1400 dontfrag = %s\n", c, res(send6(u, 0, 1400, 0, 0, 0, 0)));
	errq(u, c);
	seti(u, IPPROTO_IPV6, IPV6_DONTFRAG, 0, c, "dontfrag");
	seti(u, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO, c, "mtu_discover");
	printf("%s mtu_discover = %d\n", c, geti(u, IPPROTO_IPV6, IPV6_MTU_DISCOVER));
	printf("%s send 1400 pmtudisc do = %s\n", c, res(send6(u, 0, 1400, 0, 0, 0, 0)));
	errq(u, c);
	printf("%s send 1000 pmtudisc do = %s\n", c, res(send6(u, 0, 1000, 0, 0, 0, 0)));
	/* TCP, to the peer's second address (whose path MTU no Packet Too
	 * Big has lowered yet): the peer's Packet Too Big quotes the next
	 * sequence number (between SND.UNA and SND.NXT once all is
	 * acknowledged). */
	to = sa(&peer2, port + 2);
	printf("%s tcp connect = %s\n", c,
	       connect(t, (struct sockaddr *)&to, sizeof(to)) ? strerror(errno) : "ok");
	memset(big, 'b', sizeof(big));
	printf("%s tcp send 2000 = %s\n", c, res(send(t, big, 2000, 0)));
	printf("%s tcp mtu before = %d\n", c, geti(t, IPPROTO_IPV6, IPV6_MTU));
	usleep(300000);
	v = geti(t, IPPROTO_TCP, TCP_MAXSEG);
	printf("%s tcp mss before = %s\n", c, v > 1300 ? "above 1300" : "1300 or below");
	/* The trigger: a datagram to PORT + 3. */
	send6(u, port + 3, 10, 0, 0, 0, 0);
	usleep(400000);
	v = geti(t, IPPROTO_TCP, TCP_MAXSEG);
	printf("%s tcp mss after = %s\n", c, v <= 1280 - 60 ? "1220 or below" : "above 1220");
	printf("%s tcp mtu after = %d\n", c, geti(t, IPPROTO_IPV6, IPV6_MTU));
	printf("%s tcp send 3000 = %s\n", c, res(send(t, big, 3000, 0)));
	usleep(300000);
	close(t);
	close(u);
}

/* Datagrams the peer sends in fragments: its own 3000 bytes (the kernel
 * cuts them), and crafted ones: overlapping (dropped whole, RFC 5722),
 * whole in two, a duplicate fragment, a fragment of a bad length (a
 * parameter problem back).  Each received: its size and whether its bytes
 * are the peer's pattern. */
static void reasm(void)
{
	const char *c = "reasm";
	struct sockaddr_in6 a = sa(&me, port + 4);
	struct timeval tv = { 1, 0 };
	static unsigned char buf[65536];
	int u = socket(AF_INET6, SOCK_DGRAM, 0);
	ssize_t n;

	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof(a))) {
		printf("FAIL reasm bind: %s\n", strerror(errno));
		exit(1);
	}
	setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	send6(u, port + 5, 2, 0, 0, 0, 0);
	while ((n = recv(u, buf, sizeof(buf), 0)) >= 0) {
		bool ok = true;

		for (ssize_t i = 0; i < n; i++)
			ok = ok && buf[i] == (unsigned char)(i % 251);
		printf("%s got %zd bytes, %s\n", c, n, ok ? "the pattern" : "NOT the pattern");
	}
	printf("%s then = %s\n", c, strerror(errno));
	close(u);
}

int main(int argc, char **argv)
{
	if (argc != 5 || inet_pton(AF_INET6, argv[1], &me) != 1 ||
	    inet_pton(AF_INET6, argv[2], &peer) != 1 || inet_pton(AF_INET6, argv[3], &peer2) != 1) {
		fprintf(stderr, "usage: v6send ME PEER PEER2 PORT\n");
		return 2;
	}
	port = atoi(argv[4]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(20);
	tclass();
	errs();
	ptb();
	reasm();
	/* The peer may stop. */
	{
		int u = sock(SOCK_DGRAM);
		struct sockaddr_in6 to = sa(&peer, port + 3);

		sendto(u, "bye", 3, 0, (struct sockaddr *)&to, sizeof(to));
		close(u);
	}
	printf("done\n");
	return 0;
}
