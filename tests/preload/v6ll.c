// SPDX-License-Identifier: BSD-2-Clause
/*
 * Link-local IPv6 addresses and their scope (issue 20), for
 * tests/host/test_ipv6_ll.sh: run once on the kernel over a veth and once
 * under `sluice run` on a TAP stack, a kernel peer opposite
 * (v6ll_peer.py); the script compares the two outputs line for line.
 *
 *   v6ll ME PEER IFNAME PORT
 *	ME: the program's own fe80:: address on IFNAME (the veth, or the
 *	stack's on its TAP device); PEER: the peer's fe80:: address.  The
 *	peer echoes TCP on PORT and UDP on PORT + 1, each reply saying
 *	whom it came from, and on a datagram "back P" to PORT + 2 connects
 *	to the sender's TCP port P and sends a datagram to its UDP port P.
 *	Addresses are written ME and PEER, scope ids IF (IFNAME's index), 0
 *	or the number.
 *
 * 1. bind: ME with no scope, IFNAME's, lo's and one no device has.
 * 2. connect (TCP, UDP) to PEER with each of those scopes; where it is
 *    taken, the names each side has and a round trip.
 * 3. sendto (UDP) to PEER with each scope, the answer and its sender.
 * 4. a socket on ME%IF: connect and sendto with no scope and lo's.
 * 5. IPV6_PKTINFO: what arrives (the address and ipi6_ifindex), and as
 *    a control message sent (ME on IF, ME on lo, :: on IF).
 * 6. accepted from the peer: a listener on :: and one on ME%IF; the
 *    names of the connection and a datagram from the peer.
 *
 * Every wait is bounded (SO_RCVTIMEO 3 s; SIGALRM after 40 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static struct in6_addr me, peer;
static unsigned int ifx;
static int port;

static const char *scope_name(uint32_t sc)
{
	static char buf[4][16];
	static int n;

	if (sc == ifx)
		return "IF";
	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "%u", sc);
	return buf[n];
}

/* ADDR scope S (the port is not shown: some are the kernel's choice). */
static const char *show(const struct sockaddr_in6 *a, socklen_t len)
{
	static char buf[4][96];
	static int n;
	char s[INET6_ADDRSTRLEN];
	const char *w = s;

	n = (n + 1) % 4;
	if (a->sin6_family != AF_INET6 || len != sizeof(*a)) {
		snprintf(buf[n], sizeof(buf[n]), "family %u len %u", a->sin6_family, len);
		return buf[n];
	}
	if (!memcmp(&a->sin6_addr, &me, sizeof(me)))
		w = "ME";
	else if (!memcmp(&a->sin6_addr, &peer, sizeof(peer)))
		w = "PEER";
	else
		inet_ntop(AF_INET6, &a->sin6_addr, s, sizeof(s));
	snprintf(buf[n], sizeof(buf[n]), "%s scope %s", w, scope_name(a->sin6_scope_id));
	return buf[n];
}

static struct sockaddr_in6 sa(const struct in6_addr *a, int p, uint32_t scope)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)p),
				  .sin6_scope_id = scope };

	s.sin6_addr = *a;
	return s;
}

static int sock(int type)
{
	struct timeval tv = { .tv_sec = 3 };
	int fd = socket(AF_INET6, type, 0);

	if (fd < 0) {
		printf("FAIL socket: %s\n", strerror(errno));
		exit(1);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void names(const char *tag, int fd)
{
	struct sockaddr_in6 a;
	socklen_t len = sizeof(a);

	memset(&a, 0, sizeof(a));
	if (getsockname(fd, (struct sockaddr *)&a, &len))
		printf("%s getsockname = %s\n", tag, strerror(errno));
	else
		printf("%s getsockname = %s\n", tag, show(&a, len));
	len = sizeof(a);
	memset(&a, 0, sizeof(a));
	if (getpeername(fd, (struct sockaddr *)&a, &len))
		printf("%s getpeername = %s\n", tag, strerror(errno));
	else
		printf("%s getpeername = %s\n", tag, show(&a, len));
}

/* A reply (the peer says whom it came from) and its sender. */
static void reply(const char *tag, int fd, bool from)
{
	struct sockaddr_in6 a;
	socklen_t len = sizeof(a);
	char buf[256];
	ssize_t n;

	memset(&a, 0, sizeof(a));
	n = recvfrom(fd, buf, sizeof(buf) - 1, 0, from ? (struct sockaddr *)&a : NULL,
		     from ? &len : NULL);
	if (n < 0) {
		printf("%s reply = %s\n", tag, strerror(errno));
		return;
	}
	buf[n] = '\0';
	if (from)
		printf("%s reply = %s, from %s\n", tag, buf, show(&a, len));
	else
		printf("%s reply = %s\n", tag, buf);
}

static const uint32_t scopes[] = { 0, 0 /* IF */, 1, 99999 };

static uint32_t scope_at(unsigned int i)
{
	return i == 1 ? ifx : scopes[i];
}

static void t_bind(void)
{
	for (int t = 0; t < 2; t++)
		for (unsigned int i = 0; i < 4; i++) {
			int fd = sock(t ? SOCK_DGRAM : SOCK_STREAM);
			struct sockaddr_in6 a = sa(&me, 0, scope_at(i));
			const char *tag = t ? "bind udp" : "bind tcp";

			if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
				printf("%s scope %s = %s\n", tag, scope_name(scope_at(i)),
				       strerror(errno));
			else
				printf("%s scope %s = ok\n", tag, scope_name(scope_at(i)));
			if (i == 1)
				names(tag, fd);
			close(fd);
		}
}

static void t_connect(void)
{
	for (int t = 0; t < 2; t++)
		for (unsigned int i = 0; i < 4; i++) {
			int fd = sock(t ? SOCK_DGRAM : SOCK_STREAM);
			struct sockaddr_in6 a = sa(&peer, port + t, scope_at(i));
			const char *tag = t ? "connect udp" : "connect tcp";

			if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
				printf("%s scope %s = %s\n", tag, scope_name(scope_at(i)),
				       strerror(errno));
				close(fd);
				continue;
			}
			printf("%s scope %s = ok\n", tag, scope_name(scope_at(i)));
			names(tag, fd);
			if (send(fd, "hello", 5, 0) != 5)
				printf("%s send = %s\n", tag, strerror(errno));
			reply(tag, fd, t);
			close(fd);
		}
}

static void t_sendto(void)
{
	for (unsigned int i = 0; i < 4; i++) {
		int fd = sock(SOCK_DGRAM);
		struct sockaddr_in6 a = sa(&peer, port + 1, scope_at(i));

		if (sendto(fd, "dgram", 5, 0, (struct sockaddr *)&a, sizeof(a)) != 5) {
			printf("sendto scope %s = %s\n", scope_name(scope_at(i)), strerror(errno));
			close(fd);
			continue;
		}
		printf("sendto scope %s = ok\n", scope_name(scope_at(i)));
		reply("sendto", fd, true);
		names("sendto", fd);
		close(fd);
	}
}

static int bound_me(int type, int p)
{
	int fd = sock(type), one = 1;
	struct sockaddr_in6 a = sa(&me, p, ifx);

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		printf("FAIL bind ME%%IF: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static void t_bound(void)
{
	int fd = bound_me(SOCK_DGRAM, 0);
	struct sockaddr_in6 a = sa(&peer, port + 1, 0);

	printf("bound connect scope 0 = %s\n",
	       connect(fd, (struct sockaddr *)&a, sizeof(a)) ? strerror(errno) : "ok");
	names("bound connect", fd);
	if (send(fd, "bound", 5, 0) != 5)
		printf("bound send = %s\n", strerror(errno));
	reply("bound", fd, true);
	a.sin6_scope_id = 1;
	printf("bound connect scope 1 = %s\n",
	       connect(fd, (struct sockaddr *)&a, sizeof(a)) ? strerror(errno) : "ok");
	printf("bound sendto scope 1 = %s\n",
	       sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof(a)) == 1 ? "ok"
									: strerror(errno));
	a.sin6_scope_id = 0;
	printf("bound sendto scope 0 = %s\n",
	       sendto(fd, "again", 5, 0, (struct sockaddr *)&a, sizeof(a)) == 5 ? "ok"
									    : strerror(errno));
	reply("bound again", fd, true);
	close(fd);
}

/* Send with an IPV6_PKTINFO of src on interface i. */
static void pktinfo_send(const char *tag, const struct in6_addr *src, unsigned int i)
{
	int fd = sock(SOCK_DGRAM), on = 1;
	struct sockaddr_in6 a = sa(&peer, port + 1, 0);
	char cbuf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	struct iovec iov = { "pktinfo", 7 };
	struct msghdr mh = { .msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov,
			     .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	struct in6_pktinfo pi = { .ipi6_addr = *src, .ipi6_ifindex = i };
	ssize_t n;

	setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on));
	memset(cbuf, 0, sizeof(cbuf));
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	n = sendmsg(fd, &mh, 0);
	printf("pktinfo send %s = %s\n", tag, n == 7 ? "ok" : strerror(errno));
	if (n == 7)
		reply("pktinfo send", fd, true);
	close(fd);
}

/* A datagram with IPV6_RECVPKTINFO: its pktinfo. */
static void recv_pktinfo(const char *tag, int fd)
{
	char buf[256], cbuf[256];
	struct sockaddr_in6 a;
	struct iovec iov = { buf, sizeof(buf) - 1 };
	struct msghdr mh = { .msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov,
			     .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	memset(&a, 0, sizeof(a));
	n = recvmsg(fd, &mh, 0);
	if (n < 0) {
		printf("%s recvmsg = %s\n", tag, strerror(errno));
		return;
	}
	buf[n] = '\0';
	printf("%s recvmsg = %s, from %s\n", tag, buf, show(&a, mh.msg_namelen));
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		struct in6_pktinfo pi;
		struct sockaddr_in6 d = { .sin6_family = AF_INET6 };

		if (c->cmsg_level != IPPROTO_IPV6 || c->cmsg_type != IPV6_PKTINFO) {
			printf("%s cmsg %d/%d\n", tag, c->cmsg_level, c->cmsg_type);
			continue;
		}
		memcpy(&pi, CMSG_DATA(c), sizeof(pi));
		d.sin6_addr = pi.ipi6_addr;
		printf("%s pktinfo = %s ifindex %s\n", tag, show(&d, sizeof(d)),
		       scope_name((uint32_t)pi.ipi6_ifindex));
	}
}

static void t_pktinfo(void)
{
	int fd = bound_me(SOCK_DGRAM, 0), on = 1;
	struct sockaddr_in6 a = sa(&peer, port + 1, ifx);

	setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on));
	if (sendto(fd, "pi", 2, 0, (struct sockaddr *)&a, sizeof(a)) != 2)
		printf("pktinfo sendto = %s\n", strerror(errno));
	recv_pktinfo("pktinfo", fd);
	close(fd);
	pktinfo_send("ME on IF", &me, ifx);
	pktinfo_send("ME on lo", &me, 1);
	pktinfo_send(":: on IF", &in6addr_any, ifx);
}

/* The peer connects to tcp and sends to udp (port p). */
static void t_accept(const char *tag, const struct in6_addr *on, int p)
{
	int l = sock(SOCK_STREAM), u = sock(SOCK_DGRAM), one = 1, c, ctl;
	struct sockaddr_in6 a = sa(on, p, on == &me ? ifx : 0);
	socklen_t len = sizeof(a);
	char msg[32];

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(u, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    bind(u, (struct sockaddr *)&a, sizeof(a))) {
		printf("FAIL %s listen: %s\n", tag, strerror(errno));
		exit(1);
	}
	ctl = sock(SOCK_DGRAM);
	a = sa(&peer, port + 2, ifx);
	snprintf(msg, sizeof(msg), "back %d", p);
	if (sendto(ctl, msg, strlen(msg), 0, (struct sockaddr *)&a, sizeof(a)) < 0)
		printf("%s ctl = %s\n", tag, strerror(errno));
	memset(&a, 0, sizeof(a));
	c = accept(l, (struct sockaddr *)&a, &len);
	if (c < 0) {
		printf("%s accept = %s\n", tag, strerror(errno));
	} else {
		struct timeval tv = { .tv_sec = 3 };

		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		printf("%s accept = %s\n", tag, show(&a, len));
		names(tag, c);
		reply(tag, c, false);
		close(c);
	}
	recv_pktinfo(tag, u);
	close(ctl);
	close(u);
	close(l);
}

int main(int argc, char **argv)
{
	if (argc != 5 || inet_pton(AF_INET6, argv[1], &me) != 1 ||
	    inet_pton(AF_INET6, argv[2], &peer) != 1) {
		fprintf(stderr, "usage: v6ll ME PEER IFNAME PORT\n");
		return 2;
	}
	ifx = if_nametoindex(argv[3]);
	port = atoi(argv[4]);
	if (!ifx) {
		fprintf(stderr, "v6ll: no interface %s\n", argv[3]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(40);
	t_bind();
	t_connect();
	t_sendto();
	t_bound();
	t_pktinfo();
	t_accept("accept any", &in6addr_any, port + 10);
	t_accept("accept me", &me, port + 11);
	printf("done\n");
	return 0;
}
