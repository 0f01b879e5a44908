// SPDX-License-Identifier: BSD-2-Clause
/*
 * AF_INET6 sockets talking IPv4 (issue 20; lib/preload/README.md,
 * "AF_INET6 sockets"), for tests/host/test_v6_dual.sh.  Run on the kernel
 * and under `sluice run`: the script compares the two outputs line for
 * line, so every address a case sees (getsockname, getpeername, accept,
 * recvfrom, recvmsg) is compared byte for byte with the kernel's.
 *
 *   v6dual cases PORT
 *	every case below, in this process, on ports PORT, PORT+1, ...;
 *	one line per observation: "CASE WHAT = hex bytes (len N)" or
 *	"CASE WHAT = value"; ports the kernel picks print as "pppp" once
 *	checked against the other end.  Lines "where CASE ROLE kernel|stack"
 *	say what each fd is (a raw fstat says socket: the kernel's); the
 *	script checks those under Sluice only.
 *   v6dual serve FAMILY ADDR PORT N
 *	a listener (FAMILY 4 or 6), "ready", then N connections: read one
 *	line, answer it, close; "served N kernel K stack S".
 *   v6dual client FAMILY ADDR PORT
 *	connect, send a line, read the answer: "ok client kernel|stack".
 *   v6dual bv6
 *	a fresh AF_INET6 socket's IPV6_V6ONLY (net.ipv6.bindv6only), and
 *	whether an IPv4 client reaches it listening on ::.
 *
 * Every wait is bounded (SIGALRM after 20 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "stackfd.h"

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

/* A kernel socket, or the stack's? */
static const char *where(int fd)
{
	return stack_fd(fd) ? "stack" : "kernel";
}

static void say_where(const char *role, int fd)
{
	printf("where %s %s %s\n", cname, role, where(fd));
}

/* An address's bytes; eph: the port is the kernel's choice (masked). */
static void say_addr(const char *what, const void *a, socklen_t len, int eph)
{
	const unsigned char *p = a;

	printf("%s %s =", cname, what);
	for (socklen_t i = 0; i < len && i < 128; i++) {
		if (eph && (i == 2 || i == 3))
			printf(" pp");
		else
			printf(" %02x", p[i]);
	}
	printf(" (len %u)\n", (unsigned int)len);
}

static unsigned short port_of(const void *a)
{
	unsigned short p;

	memcpy(&p, (const char *)a + 2, sizeof(p));	/* sin_port, sin6_port */
	return ntohs(p);
}

static socklen_t mk(int fam, const char *addr, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (fam == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		if (inet_pton(AF_INET, addr, &s->sin_addr) != 1)
			fail("address %s", addr);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
		fail("address %s", addr);
	return sizeof(*s6);
}

static int sock(int fam, int type)
{
	int fd = socket(fam == 4 ? AF_INET : AF_INET6, type, 0);

	if (fd < 0)
		fail("socket");
	return fd;
}

static int getint(int fd, int level, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, level, name, &v, &l))
		return -1000 - errno;
	return v;
}

/* Names of fd, said; eph_local/eph_peer: ports the kernel chose. */
static void names(const char *role, int fd, int eph_local, int eph_peer)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);
	char w[64];

	snprintf(w, sizeof(w), "%s getsockname", role);
	if (getsockname(fd, (struct sockaddr *)&ss, &l))
		fail("getsockname");
	say_addr(w, &ss, l, eph_local);
	l = sizeof(ss);
	snprintf(w, sizeof(w), "%s getpeername", role);
	if (getpeername(fd, (struct sockaddr *)&ss, &l))
		printf("%s %s = errno %d\n", cname, w, errno);
	else
		say_addr(w, &ss, l, eph_peer);
}

static int tcp_listen(int fam, const char *addr, int port, int v6only)
{
	struct sockaddr_storage ss;
	socklen_t l = mk(fam, addr, port, &ss);
	int fd = sock(fam, SOCK_STREAM), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6only >= 0 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)))
		fail("IPV6_V6ONLY");
	if (bind(fd, (struct sockaddr *)&ss, l))
		fail("bind %s %d", addr, port);
	if (listen(fd, 16))
		fail("listen");
	return fd;
}

static int tcp_connect(int fam, const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = mk(fam, addr, port, &ss);
	int fd = sock(fam, SOCK_STREAM);

	if (connect(fd, (struct sockaddr *)&ss, l))
		return -errno;
	return fd;
}

static void xfer(int a, int b)
{
	char buf[16] = "";

	if (write(a, "ping", 4) != 4 || read(b, buf, sizeof(buf)) != 4 || memcmp(buf, "ping", 4))
		fail("data");
	if (write(b, "pong", 4) != 4 || read(a, buf, sizeof(buf)) != 4 || memcmp(buf, "pong", 4))
		fail("data back");
}

/* A TCP pair: a listener (lfam on laddr), a client (cfam to caddr). */
static void tcp_pair(const char *name, int lfam, const char *laddr, int cfam, const char *caddr,
		     int port)
{
	struct sockaddr_storage ss, me;
	socklen_t l = sizeof(ss), ml = sizeof(me);
	int lfd, c, a;

	cname = name;
	lfd = tcp_listen(lfam, laddr, port, -1);
	say_where("listener", lfd);
	names("listener", lfd, 0, 0);
	c = tcp_connect(cfam, caddr, port);
	if (c < 0) {
		errno = -c;
		fail("connect");
	}
	say_where("client", c);
	a = accept(lfd, (struct sockaddr *)&ss, &l);
	if (a < 0)
		fail("accept");
	say_where("accepted", a);
	say_addr("accept address", &ss, l, 1);
	if (getsockname(c, (struct sockaddr *)&me, &ml) || port_of(&me) != port_of(&ss))
		fail("accept's port %u is not the client's %u", port_of(&ss), port_of(&me));
	names("accepted", a, 0, 1);
	names("client", c, 1, 0);
	xfer(c, a);
	printf("%s data ok\n", cname);
	close(a);
	close(c);
	close(lfd);
}

static int udp_bound(int fam, const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t l = mk(fam, addr, port, &ss);
	int fd = sock(fam, SOCK_DGRAM);

	if (bind(fd, (struct sockaddr *)&ss, l))
		fail("udp bind %s %d", addr, port);
	return fd;
}

/* UDP: a bound socket (sfam on saddr), a client (cfam to caddr) sending
 * with sendto, the answer by sendto to recvfrom's address, read with
 * recvmsg. */
/* Say where the server is after its answer too (udp_pair()). */
static bool udp_where_after;

static void udp_pair(const char *name, int sfam, const char *saddr, int cfam, const char *caddr,
		     int port)
{
	struct sockaddr_storage from, to, me;
	socklen_t fl = sizeof(from), tl, ml = sizeof(me);
	char buf[16];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from),
			      .msg_iov = &iov, .msg_iovlen = 1 };
	int s, c;

	cname = name;
	s = udp_bound(sfam, saddr, port);
	say_where("server", s);
	names("server", s, 0, 0);
	c = sock(cfam, SOCK_DGRAM);
	tl = mk(cfam, caddr, port, &to);
	if (sendto(c, "ping", 4, 0, (struct sockaddr *)&to, tl) != 4)
		fail("sendto");
	say_where("client", c);
	names("client", c, 1, 0);
	if (recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) != 4)
		fail("recvfrom");
	say_addr("recvfrom address", &from, fl, 1);
	if (getsockname(c, (struct sockaddr *)&me, &ml) || port_of(&me) != port_of(&from))
		fail("recvfrom's port is not the client's");
	if (sendto(s, "pong", 4, 0, (struct sockaddr *)&from, fl) != 4)
		fail("sendto back");
	if (udp_where_after)
		say_where("server after", s);
	memset(&from, 0, sizeof(from));
	if (recvmsg(c, &msg, 0) != 4)
		fail("recvmsg");
	say_addr("recvmsg address", &from, msg.msg_namelen, 0);
	/* A short room: cut, the length says the whole. */
	fl = 8;
	memset(&from, 0xee, sizeof(from));
	if (sendto(c, "ping", 4, 0, (struct sockaddr *)&to, tl) != 4 ||
	    recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) != 4)
		fail("short recvfrom");
	say_addr("short recvfrom (8 bytes of room)", &from, 12, 1);
	printf("%s short recvfrom length = %u\n", cname, (unsigned int)fl);
	close(c);
	close(s);
}

/* A dual-stack datagram socket with IPV6_RECVPKTINFO and IP_PKTINFO
 * receiving from an IPv4 one: every control message, byte for byte. */
static void udp_pktinfo(int port)
{
	union {
		char buf[256];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_storage ss, from;
	char data[16];
	struct iovec iov = { data, sizeof(data) };
	struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
			      .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	int s, c, one = 1;
	socklen_t l;

	cname = "udp-pktinfo";
	s = udp_bound(6, "::ffff:127.0.0.1", port);
	if (setsockopt(s, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) ||
	    setsockopt(s, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)))
		fail("pktinfo options");
	say_where("server", s);
	printf("%s IPV6_RECVPKTINFO = %d\n", cname, getint(s, IPPROTO_IPV6, IPV6_RECVPKTINFO));
	c = sock(4, SOCK_DGRAM);
	l = mk(4, "127.0.0.1", port, &ss);
	if (sendto(c, "ping", 4, 0, (struct sockaddr *)&ss, l) != 4)
		fail("sendto");
	memset(ctl.buf, 0, sizeof(ctl.buf));
	if (recvmsg(s, &msg, 0) != 4)
		fail("recvmsg");
	printf("%s controllen = %zu flags = %d\n", cname, (size_t)msg.msg_controllen, msg.msg_flags);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		char w[64];

		snprintf(w, sizeof(w), "cmsg level %d type %d", cm->cmsg_level, cm->cmsg_type);
		say_addr(w, CMSG_DATA(cm), (socklen_t)(cm->cmsg_len - CMSG_LEN(0)), 0);
	}
	close(c);
	close(s);
}

/* An IPv6 datagram over ::1 to a dual-stack server asking for every
 * IPv6 control message (and IP_PKTINFO, which an IPv6 datagram does not
 * give). */
static void udp_pktinfo6(int port)
{
	union {
		char buf[512];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_storage ss, from;
	char data[16];
	struct iovec iov = { data, sizeof(data) };
	struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
			      .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	static const int opts[] = { IPV6_RECVPKTINFO, IPV6_RECVHOPLIMIT, IPV6_RECVTCLASS,
				    IPV6_RECVORIGDSTADDR };
	int s, c, one = 1;
	socklen_t l;

	cname = "udp-pktinfo6";
	s = udp_bound(6, "::", port);
	for (unsigned int i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (setsockopt(s, IPPROTO_IPV6, opts[i], &one, sizeof(one)))
			fail("IPv6 control message option %d", opts[i]);
	if (setsockopt(s, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)))
		fail("IP_PKTINFO");
	say_where("server", s);
	c = sock(6, SOCK_DGRAM);
	l = mk(6, "::1", port, &ss);
	if (sendto(c, "ping", 4, 0, (struct sockaddr *)&ss, l) != 4)
		fail("sendto");
	say_where("client", c);
	memset(ctl.buf, 0, sizeof(ctl.buf));
	if (recvmsg(s, &msg, 0) != 4)
		fail("recvmsg");
	printf("%s controllen = %zu flags = %d\n", cname, (size_t)msg.msg_controllen, msg.msg_flags);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		char w[64];

		snprintf(w, sizeof(w), "cmsg level %d type %d", cm->cmsg_level, cm->cmsg_type);
		say_addr(w, CMSG_DATA(cm), (socklen_t)(cm->cmsg_len - CMSG_LEN(0)), 0);
	}
	close(c);
	close(s);
}

static void cases(int port)
{
	struct sockaddr_storage ss;
	socklen_t l;
	int fd, c, v;

	tcp_pair("tcp-v6any-v4", 6, "::", 4, "127.0.0.1", port);
	tcp_pair("tcp-v6any-v6mapped", 6, "::", 6, "::ffff:127.0.0.1", port + 1);
	tcp_pair("tcp-v4-v6mapped", 4, "127.0.0.1", 6, "::ffff:127.0.0.1", port + 2);
	tcp_pair("tcp-v6mapped-v6mapped", 6, "::ffff:127.0.0.1", 6, "::ffff:127.0.0.1", port + 3);
	tcp_pair("tcp-v6mappedany-v4", 6, "::ffff:0.0.0.0", 4, "127.0.0.1", port + 4);
	tcp_pair("tcp-loopback6", 6, "::1", 6, "::1", port + 5);
	udp_pair("udp-v6any-v4", 6, "::", 4, "127.0.0.1", port + 6);
	udp_pair("udp-v4-v6mapped", 4, "127.0.0.1", 6, "::ffff:127.0.0.1", port + 7);
	udp_pair("udp-v6any-v6mapped", 6, "::", 6, "::ffff:127.0.0.1", port + 8);
	udp_pair("udp-v6mappedany-v4", 6, "::ffff:0.0.0.0", 4, "127.0.0.1", port + 14);
	udp_pair("udp-v6mapped-v6mapped", 6, "::ffff:127.0.0.1", 6, "::ffff:127.0.0.1", port + 15);
	udp_pair("udp-loopback6", 6, "::1", 6, "::1", port + 9);
	/* A server on :: reached over ::1 (an IPv6 client, the kernel's). */
	udp_where_after = true;
	udp_pair("udp-v6any-loopback6", 6, "::", 6, "::1", port + 16);
	udp_where_after = false;
	udp_pktinfo(port + 13);
	udp_pktinfo6(port + 17);

	/* getsockname of a fresh socket, after bind(::, 0). */
	cname = "names";
	fd = sock(6, SOCK_STREAM);
	names("unbound", fd, 0, 0);
	say_where("fresh", fd);
	l = mk(6, "::", 0, &ss);
	if (bind(fd, (struct sockaddr *)&ss, l))
		fail("bind(::, 0)");
	names("bound(::,0)", fd, 1, 0);
	say_where("bound", fd);
	close(fd);
	fd = sock(6, SOCK_DGRAM);
	names("udp unbound", fd, 0, 0);
	close(fd);

	/* Options of a dual-stack socket, as the kernel answers them. */
	cname = "opts";
	fd = sock(6, SOCK_STREAM);
	printf("opts SO_DOMAIN = %d\n", getint(fd, SOL_SOCKET, SO_DOMAIN));
	printf("opts IPV6_V6ONLY = %d\n", getint(fd, IPPROTO_IPV6, IPV6_V6ONLY));
	printf("opts IPV6_TCLASS = %d\n", getint(fd, IPPROTO_IPV6, IPV6_TCLASS));
	printf("opts IPV6_UNICAST_HOPS = %d\n", getint(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS));
	printf("opts IPV6_MULTICAST_HOPS = %d\n", getint(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS));
	printf("opts IPV6_MULTICAST_LOOP = %d\n", getint(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP));
	printf("opts IP_TOS = %d\n", getint(fd, IPPROTO_IP, IP_TOS));
	say_where("after gets", fd);
	l = mk(6, "::", port + 10, &ss);
	if (bind(fd, (struct sockaddr *)&ss, l))
		fail("bind");
	v = 0;
	printf("opts V6ONLY=0 after bind = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof(v)) ? errno : 0);
	v = 1;
	printf("opts V6ONLY=1 after bind = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof(v)) ? errno : 0);
	printf("opts IPV6_V6ONLY after bind = %d\n", getint(fd, IPPROTO_IPV6, IPV6_V6ONLY));
	v = 7;
	printf("opts UNICAST_HOPS=7 bound = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v)) ? errno : 0);
	printf("opts IPV6_UNICAST_HOPS = %d\n", getint(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS));
	v = 300;
	printf("opts UNICAST_HOPS=300 bound = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v)) ? errno : 0);
	printf("opts MULTICAST_HOPS=3 on a stream socket = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &v, sizeof(v)) ? errno : 0);
	say_where("bound", fd);
	close(fd);
	fd = sock(6, SOCK_STREAM);
	v = 0;
	printf("opts V6ONLY=0 fresh = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof(v)) ? errno : 0);
	say_where("V6ONLY=0", fd);
	v = 0x20;
	printf("opts TCLASS=0x20 fresh = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v)) ? errno : 0);
	printf("opts IPV6_TCLASS = %d\n", getint(fd, IPPROTO_IPV6, IPV6_TCLASS));
	printf("opts IPV6_V6ONLY = %d\n", getint(fd, IPPROTO_IPV6, IPV6_V6ONLY));
	say_where("TCLASS", fd);
	close(fd);
	/* IPV6_RECVERR: no effect on IPv4 (ICMPv4 errors are IP_RECVERR's,
	 * Linux __udp4_lib_err()): kept in the stack. */
	fd = sock(6, SOCK_DGRAM);
	v = 1;
	printf("opts RECVERR fresh = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &v, sizeof(v)) ? errno : 0);
	printf("opts IPV6_RECVERR = %d\n", getint(fd, IPPROTO_IPV6, IPV6_RECVERR));
	say_where("RECVERR", fd);
	close(fd);
	/* One the stack does not do (IPv6 path MTU news): the kernel's. */
	fd = sock(6, SOCK_DGRAM);
	printf("opts RECVPATHMTU fresh = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPATHMTU, &v, sizeof(v)) ? errno : 0);
	printf("opts IPV6_RECVPATHMTU = %d\n", getint(fd, IPPROTO_IPV6, IPV6_RECVPATHMTU));
	say_where("RECVPATHMTU", fd);
	v = 5;
	close(fd);
	fd = sock(6, SOCK_DGRAM);
	printf("opts udp MULTICAST_HOPS=5 fresh = %d\n",
	       setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &v, sizeof(v)) ? errno : 0);
	printf("opts udp IPV6_MULTICAST_HOPS = %d\n", getint(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS));
	say_where("udp MULTICAST_HOPS", fd);
	close(fd);
	fd = sock(6, SOCK_STREAM);
	l = 8;
	printf("opts bind(short sockaddr) = %d\n", bind(fd, (struct sockaddr *)&ss, 8) ? errno : 0);
	mk(4, "127.0.0.1", 0, &ss);
	printf("opts bind(AF_INET) = %d\n",
	       bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6)) ? errno : 0);
	close(fd);

	/* IPV6_V6ONLY=1 before bind: IPv6 only (the stack's, on handles). */
	cname = "v6only";
	fd = tcp_listen(6, "::", port + 11, 1);
	say_where("listener", fd);
	printf("v6only IPV6_V6ONLY = %d\n", getint(fd, IPPROTO_IPV6, IPV6_V6ONLY));
	c = tcp_connect(4, "127.0.0.1", port + 11);
	printf("v6only v4 connect = %s\n", c < 0 ? strerror(-c) : "connected");
	if (c >= 0)
		close(c);
	c = tcp_connect(6, "::1", port + 11);
	printf("v6only v6 connect = %s\n", c < 0 ? strerror(-c) : "connected");
	if (c >= 0) {
		int a = accept(fd, NULL, NULL);

		say_where("accepted", a);
		printf("v6only accepted IPV6_V6ONLY = %d\n", getint(a, IPPROTO_IPV6, IPV6_V6ONLY));
		close(a);
		close(c);
	}
	/* An AF_INET listener on the same port beside it (Linux lets them
	 * share it): IPv4 clients reach that one, IPv6 ones the first. */
	{
		int l4 = tcp_listen(4, "0.0.0.0", port + 11, -1), a;

		say_where("v4 listener", l4);
		c = tcp_connect(4, "127.0.0.1", port + 11);
		printf("v6only+v4 v4 connect = %s\n", c < 0 ? strerror(-c) : "connected");
		if (c >= 0) {
			a = accept(l4, NULL, NULL);
			names("v4 accepted", a, 1, 1);
			close(a);
			close(c);
		}
		c = tcp_connect(6, "::1", port + 11);
		printf("v6only+v4 v6 connect = %s\n", c < 0 ? strerror(-c) : "connected");
		if (c >= 0) {
			a = accept(fd, NULL, NULL);
			names("v6 accepted", a, 1, 1);
			close(a);
			close(c);
		}
		close(l4);
	}
	close(fd);
	/* IPv6 only, or bound to IPv6 itself, meeting v4-mapped addresses. */
	{
		int one = 1;

		fd = sock(6, SOCK_DGRAM);
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		l = mk(6, "::ffff:127.0.0.1", port + 11, &ss);
		printf("v6only udp bind mapped = %s\n",
		       bind(fd, (struct sockaddr *)&ss, l) ? strerror(errno) : "0");
		printf("v6only udp sendto mapped = %s\n",
		       sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, l) < 0 ? strerror(errno) : "sent");
		close(fd);
		fd = sock(6, SOCK_STREAM);
		l = mk(6, "::1", 0, &ss);
		if (bind(fd, (struct sockaddr *)&ss, l))
			fail("bind ::1");
		say_where("bound ::1", fd);
		l = mk(6, "::ffff:127.0.0.1", port + 11, &ss);
		printf("v6only ::1 connect mapped = %s\n",
		       connect(fd, (struct sockaddr *)&ss, l) ? strerror(errno) : "connected");
		close(fd);
	}

	/* A v4 socket of the stack meets a v6 listener on :: (port taken
	 * by both families: a v4 bind on the same port is refused). */
	cname = "ports";
	fd = tcp_listen(6, "::", port + 12, -1);
	c = sock(4, SOCK_STREAM);
	l = mk(4, "0.0.0.0", port + 12, &ss);
	printf("ports v4 bind on a v6 :: listener's port = %s\n",
	       bind(c, (struct sockaddr *)&ss, l) ? strerror(errno) : "bound");
	close(c);
	close(fd);
}

static void serve(int fam, const char *addr, int port, int n)
{
	int lfd = tcp_listen(fam, addr, port, -1), k = 0, st = 0;

	cname = "serve";
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t l = sizeof(ss);
		char buf[64];
		int a = accept(lfd, (struct sockaddr *)&ss, &l), r;

		if (a < 0)
			fail("accept");
		if (!strcmp(where(a), "kernel"))
			k++;
		else
			st++;
		r = (int)read(a, buf, sizeof(buf));
		if (r <= 0 || write(a, buf, (size_t)r) != r)
			fail("echo");
		close(a);
	}
	printf("served %d kernel %d stack %d\n", n, k, st);
}

static void client(int fam, const char *addr, int port)
{
	char buf[8];
	int c;

	cname = "client";
	c = tcp_connect(fam, addr, port);
	if (c < 0) {
		errno = -c;
		fail("connect");
	}
	if (write(c, "hello", 5) != 5 || read(c, buf, sizeof(buf)) != 5 || memcmp(buf, "hello", 5))
		fail("echo");
	printf("ok client %s\n", where(c));
}

static void bv6(int port)
{
	int fd = sock(6, SOCK_STREAM), c;
	struct sockaddr_storage ss;
	socklen_t l = mk(6, "::", port, &ss);

	cname = "bv6";
	printf("bv6 IPV6_V6ONLY = %d\n", getint(fd, IPPROTO_IPV6, IPV6_V6ONLY));
	if (bind(fd, (struct sockaddr *)&ss, l) || listen(fd, 4))
		fail("listen");
	say_where("listener", fd);
	c = tcp_connect(4, "127.0.0.1", port);
	printf("bv6 v4 connect = %s\n", c < 0 ? strerror(-c) : "connected");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(20);
	if (argc == 3 && !strcmp(argv[1], "cases"))
		cases(atoi(argv[2]));
	else if (argc == 6 && !strcmp(argv[1], "serve"))
		serve(atoi(argv[2]), argv[3], atoi(argv[4]), atoi(argv[5]));
	else if (argc == 5 && !strcmp(argv[1], "client"))
		client(atoi(argv[2]), argv[3], atoi(argv[4]));
	else if (argc == 3 && !strcmp(argv[1], "bv6"))
		bv6(atoi(argv[2]));
	else
		fail("usage: v6dual cases PORT | serve FAM ADDR PORT N | client FAM ADDR PORT | bv6 PORT");
	return 0;
}
