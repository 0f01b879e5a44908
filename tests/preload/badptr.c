// SPDX-License-Identifier: BSD-2-Clause
/*
 * Bad pointers, lengths and counts given to the socket calls (issue 24
 * item 6): each case makes a call with a null, unmapped, PROT_NONE,
 * read-only or partly mapped pointer, a negative or huge length or an
 * absurd count, and prints one line, "NAME RESULT" (RESULT the return
 * value, or the errno's name; some cases add what a second, good call
 * then finds).  The kernel and Sluice must print the same lines
 * (tests/host/test_badptr.sh).  Each case runs in a child of its own
 * with fresh sockets, so one that kills the caller prints
 * "NAME killed-by-SIG" and the others still run.
 *
 * Fixture of every case (127.0.0.1): a TCP listener L with a connection
 * C <-> S accepted and one C2 waiting in its queue, 10 bytes queued
 * from S to C; UDP sockets U (bound) and U2 (bound), a 10-byte datagram
 * from U2 queued on U; an epoll set E with C in it for POLLIN.
 *
 * Last, "healthy N": after all the cases, a connection made in this
 * process carries 100,000 bytes each way (N: the bytes back), read by
 * recv and by readv into three iovecs in turn.
 */
/* The calls themselves, not their _chk forms, and with the bad arguments
 * the compiler would warn of. */
#undef _FORTIFY_SOURCE
#pragma GCC diagnostic ignored "-Wnonnull"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef FIGETBSZ
#define FIGETBSZ _IO(0x00, 2)
#endif

static int L, C, C2, S, U, U2, E;
static struct sockaddr_in la, ua, u2a;
static char *unmapped, *pnone, *ronly, *edge_page;	/* edge_page: the last mapped page */
static long pg;

/* n bytes before the end of a page followed by an unmapped one. */
static void *edge(size_t n)
{
	return edge_page + pg - n;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		die("poll fixture");
}

static void fixture(void)
{
	socklen_t l = sizeof(la);
	int one = 1;

	L = socket(AF_INET, SOCK_STREAM, 0);
	la.sin_family = AF_INET;
	la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (L < 0 || setsockopt(L, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(L, (struct sockaddr *)&la, sizeof(la)) || listen(L, 8) ||
	    getsockname(L, (struct sockaddr *)&la, &l))
		die("listener");
	C = socket(AF_INET, SOCK_STREAM, 0);
	if (C < 0 || connect(C, (struct sockaddr *)&la, sizeof(la)))
		die("connect");
	S = accept(L, NULL, NULL);
	C2 = socket(AF_INET, SOCK_STREAM, 0);
	if (S < 0 || C2 < 0 || connect(C2, (struct sockaddr *)&la, sizeof(la)))
		die("accept");
	if (write(S, "0123456789", 10) != 10)
		die("write");
	U = socket(AF_INET, SOCK_DGRAM, 0);
	U2 = socket(AF_INET, SOCK_DGRAM, 0);
	ua = la;
	ua.sin_port = 0;
	u2a = ua;
	l = sizeof(ua);
	if (U < 0 || U2 < 0 || bind(U, (struct sockaddr *)&ua, sizeof(ua)) ||
	    getsockname(U, (struct sockaddr *)&ua, &l))
		die("udp");
	l = sizeof(u2a);
	if (bind(U2, (struct sockaddr *)&u2a, sizeof(u2a)) ||
	    getsockname(U2, (struct sockaddr *)&u2a, &l))
		die("udp2");
	if (sendto(U2, "abcdefghij", 10, 0, (struct sockaddr *)&ua, sizeof(ua)) != 10)
		die("sendto");
	wait_in(C);
	wait_in(U);
	{
		struct pollfd p = { .fd = L, .events = POLLIN };

		if (poll(&p, 1, 2000) != 1)
			die("poll listener");
	}
	E = epoll_create1(0);
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = C };

		if (E < 0 || epoll_ctl(E, EPOLL_CTL_ADD, C, &ev))
			die("epoll");
	}
}

static void memory(void)
{
	char *m;

	pg = sysconf(_SC_PAGESIZE);
	/* Far below where the library's own mappings go (top down from
	 * mmap_base), so none of them fills the holes left here. */
	m = mmap((void *)0x500000000000ul, 5 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED)
		die("mmap");
	memset(m, 0, 5 * pg);
	unmapped = m;
	munmap(unmapped, pg);
	pnone = m + pg;
	mprotect(pnone, pg, PROT_NONE);
	ronly = m + 2 * pg;
	mprotect(ronly, pg, PROT_READ);
	edge_page = m + 3 * pg;
	munmap(m + 4 * pg, pg);
}

static void out(const char *name, long ret, int err)
{
	if (ret < 0)
		printf("%s %s\n", name, strerrorname_np(err) ? strerrorname_np(err) : "?");
	else
		printf("%s %ld\n", name, ret);
	fflush(stdout);
}

/* The name and result of the next good recv on fd (non-blocking). */
static void then_recv(const char *name, int fd)
{
	char b[64], n[128];
	long r;

	errno = 0;
	r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	snprintf(n, sizeof(n), "%s+then", name);
	out(n, r, errno);
}

/* The name and what the peer fd then receives (a send's bytes that
 * went, or none): waits up to 200 ms for them. */
static void then_peer(const char *name, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[64], n[128];
	long r;

	poll(&p, 1, 200);
	errno = 0;
	r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	snprintf(n, sizeof(n), "%s+peer", name);
	if (r > 0)
		printf("%s %ld %.*s\n", n, r, (int)r, b);
	else
		out(n, r, errno);
	fflush(stdout);
}

/* A fresh page holding n bytes of src, then made read-only. */
static void *ro_page(const void *src, size_t n)
{
	char *m = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		die("mmap ro");
	memcpy(m, src, n);
	mprotect(m, (size_t)pg, PROT_READ);
	return m;
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* A waiting call (200 ms timeout): its result, and whether it came at
 * once (under 150 ms) or after the wait. */
#define TCASE(name, call)                                                   \
	do {                                                                \
		long r_;                                                    \
		uint64_t t_ = now_ms();                                     \
		char n_[192];                                               \
		errno = 0;                                                  \
		r_ = (long)(call);                                          \
		snprintf(n_, sizeof(n_), "%s %s", name,                     \
			 now_ms() - t_ < 150 ? "at-once" : "waited");       \
		out(n_, r_, errno);                                         \
	} while (0)

#define CASE(name, call)                          \
	do {                                      \
		long r_;                          \
		errno = 0;                        \
		r_ = (long)(call);                \
		out(name, r_, errno);             \
	} while (0)

static int one = 1;

/* setsockopt of an int value, then the value read back. */
static void optval(const char *name, int fd, int level, int opt, int v)
{
	char n[128];
	int got[4] = { 0 };
	socklen_t l = opt == SO_LINGER ? sizeof(struct linger) : sizeof(int);
	long r;

	if (opt == SO_LINGER) {
		struct linger lg = { .l_onoff = 1, .l_linger = v };

		errno = 0;
		r = setsockopt(fd, level, opt, &lg, sizeof(lg));
	} else {
		errno = 0;
		r = setsockopt(fd, level, opt, &v, sizeof(v));
	}
	out(name, r, errno);
	errno = 0;
	r = getsockopt(fd, level, opt, got, &l);
	snprintf(n, sizeof(n), "%s+get", name);
	if (r < 0)
		out(n, r, errno);
	else
		printf("%s %d %d len %u\n", n, got[0], got[1], (unsigned int)l);
}

static void run_case(int i)
{
	struct sockaddr_storage ss;
	struct sockaddr_in sin;
	socklen_t l;
	static char buf[256];
	struct iovec iov;
	struct msghdr mh;
	struct mmsghdr *mv;
	struct pollfd pfd;
	struct epoll_event ev;
	struct timespec ts;
	struct stat st;
	fd_set rs;
	int *ip, k = 0;

	memset(&mh, 0, sizeof(mh));
	/* Each case a number; the list ends where none matches. */
#define N(x) if (i == k++)
	/* sendto's address */
	N(0) CASE("sendto-addr-null", sendto(U, "x", 1, 0, NULL, sizeof(ua)));
	N(0) CASE("sendto-addr-unmapped", sendto(U, "x", 1, 0, (void *)unmapped, sizeof(ua)));
	N(0) CASE("sendto-addr-protnone", sendto(U, "x", 1, 0, (void *)pnone, sizeof(ua)));
	N(0) {
		memcpy(edge(8), &u2a, 8);
		CASE("sendto-addr-partly", sendto(U, "x", 1, 0, edge(8), sizeof(ua)));
	}
	N(0) CASE("sendto-addrlen-neg", sendto(U, "x", 1, 0, (void *)&u2a, (socklen_t)-1));
	N(0) CASE("sendto-addrlen-1m", sendto(U, "x", 1, 0, (void *)&u2a, 1u << 20));
	N(0) CASE("sendto-addrlen-129", sendto(U, "x", 1, 0, (void *)&u2a, 129));
	N(0) {
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, &u2a, sizeof(u2a));
		CASE("sendto-addrlen-128", sendto(U, "x", 1, 0, (void *)&ss, 128));
	}
	/* send and write buffers */
	N(0) CASE("send-udp-buf-null", sendto(U, NULL, 10, 0, (void *)&u2a, sizeof(u2a)));
	N(0) CASE("send-udp-buf-unmapped", sendto(U, unmapped, 10, 0, (void *)&u2a, sizeof(u2a)));
	N(0) CASE("send-udp-buf-protnone", sendto(U, pnone, 10, 0, (void *)&u2a, sizeof(u2a)));
	N(0) CASE("send-udp-buf-partly", sendto(U, edge(4), 10, 0, (void *)&u2a, sizeof(u2a)));
	N(0) CASE("send-udp-len-huge", sendto(U, buf, (size_t)-1, 0, (void *)&u2a, sizeof(u2a)));
	N(0) CASE("send-tcp-buf-null", send(C, NULL, 10, 0));
	N(0) CASE("send-tcp-buf-unmapped", send(C, unmapped, 10, 0));
	N(0) CASE("send-tcp-buf-protnone", send(C, pnone, 10, 0));
	N(0) CASE("send-tcp-buf-partly", send(C, edge(4), 10, 0));
	N(0) CASE("send-tcp-len-huge", send(C, edge(pg), (size_t)-1, 0));
	N(0) CASE("write-tcp-buf-unmapped", write(C, unmapped, 10));
	N(0) CASE("write-tcp-buf-readonly", write(C, ronly, 10));
	/* recv and read buffers */
	N(0) { CASE("recv-tcp-buf-null", recv(C, NULL, 10, 0)); then_recv("recv-tcp-buf-null", C); }
	N(0) { CASE("recv-tcp-buf-unmapped", recv(C, unmapped, 10, 0)); then_recv("recv-tcp-buf-unmapped", C); }
	N(0) { CASE("recv-tcp-buf-protnone", recv(C, pnone, 10, 0)); then_recv("recv-tcp-buf-protnone", C); }
	N(0) { CASE("recv-tcp-buf-readonly", recv(C, ronly, 10, 0)); then_recv("recv-tcp-buf-readonly", C); }
	N(0) { CASE("recv-tcp-buf-partly", recv(C, edge(4), 10, 0)); then_recv("recv-tcp-buf-partly", C); }
	N(0) CASE("recv-tcp-len-huge-room", recv(C, edge(10), (size_t)-1, 0));
	N(0) { CASE("recv-tcp-flag-0x2000000", recv(C, buf, 10, 0x2000000)); then_recv("recv-tcp-flag-0x2000000", C); }
	N(0) {
		static char a[4], c[16];
		struct iovec v[2] = { { a, 4 }, { c, 16 } };

		mh.msg_iov = v;
		mh.msg_iovlen = 2;
		CASE("recvmsg-tcp-flag-0x2000000", recvmsg(C, &mh, 0x2000000));
		then_recv("recvmsg-tcp-flag-0x2000000", C);
	}
	N(0) CASE("recv-tcp-len-neg-heap", recv(C, buf, (size_t)-1, 0));
	N(0) { CASE("read-tcp-buf-readonly", read(C, ronly, 10)); then_recv("read-tcp-buf-readonly", C); }
	N(0) { CASE("recv-udp-buf-null", recv(U, NULL, 10, 0)); then_recv("recv-udp-buf-null", U); }
	N(0) { CASE("recv-udp-buf-readonly", recv(U, ronly, 10, 0)); then_recv("recv-udp-buf-readonly", U); }
	N(0) { CASE("recv-udp-buf-partly", recv(U, edge(4), 10, 0)); then_recv("recv-udp-buf-partly", U); }
	N(0) CASE("recv-udp-len-huge-room", recv(U, edge(10), (size_t)-1, 0));
	N(0) {
		l = sizeof(sin);
		CASE("recvfrom-addr-unmapped", recvfrom(U, buf, 10, 0, (void *)unmapped, &l));
		then_recv("recvfrom-addr-unmapped", U);
	}
	N(0) CASE("recvfrom-addrlen-unmapped", recvfrom(U, buf, 10, 0, (void *)&sin, (void *)unmapped));
	N(0) {
		l = (socklen_t)-1;
		CASE("recvfrom-addrlen-neg", recvfrom(U, buf, 10, 0, (void *)&sin, &l));
	}
	/* connect and bind */
	N(0) CASE("connect-addr-null", connect(C2, NULL, sizeof(la)));
	N(0) CASE("connect-addr-unmapped", connect(C2, (void *)unmapped, sizeof(la)));
	N(0) CASE("connect-addr-partly", connect(socket(AF_INET, SOCK_STREAM, 0), edge(8), sizeof(la)));
	N(0) CASE("connect-addrlen-neg", connect(socket(AF_INET, SOCK_STREAM, 0), (void *)&la, (socklen_t)-1));
	N(0) CASE("connect-addrlen-1m", connect(socket(AF_INET, SOCK_STREAM, 0), (void *)&la, 1u << 20));
	N(0) CASE("connect-udp-addr-unmapped", connect(U2, (void *)unmapped, sizeof(la)));
	N(0) CASE("bind-addr-null", bind(socket(AF_INET, SOCK_STREAM, 0), NULL, sizeof(la)));
	N(0) CASE("bind-addr-unmapped", bind(socket(AF_INET, SOCK_STREAM, 0), (void *)unmapped, sizeof(la)));
	N(0) CASE("bind-addrlen-neg", bind(socket(AF_INET, SOCK_DGRAM, 0), (void *)&la, (socklen_t)-1));
	N(0) CASE("bind-addrlen-1m", bind(socket(AF_INET, SOCK_DGRAM, 0), (void *)&la, 1u << 20));
	/* accept and the names */
	N(0) { l = sizeof(sin); CASE("accept-addr-unmapped", accept(L, (void *)unmapped, &l)); }
	N(0) CASE("accept-addrlen-unmapped", accept(L, (void *)&sin, (void *)unmapped));
	N(0) CASE("accept-addrlen-null", accept(L, (void *)&sin, NULL));
	N(0) { l = (socklen_t)-1; CASE("accept-addrlen-neg", accept(L, (void *)&sin, &l)); }
	N(0) { l = sizeof(sin); CASE("accept-addr-readonly", accept(L, (void *)ronly, &l)); }
	N(0) { l = sizeof(sin); CASE("getsockname-addr-unmapped", getsockname(C, (void *)unmapped, &l)); }
	N(0) CASE("getsockname-addrlen-unmapped", getsockname(C, (void *)&sin, (void *)unmapped));
	N(0) CASE("getsockname-addrlen-null", getsockname(C, (void *)&sin, NULL));
	N(0) { l = (socklen_t)-1; CASE("getsockname-addrlen-neg", getsockname(C, (void *)&sin, &l)); }
	N(0) CASE("getsockname-addrlen-readonly", getsockname(C, (void *)&sin, (void *)ronly));
	N(0) { l = sizeof(sin); CASE("getpeername-addr-protnone", getpeername(C, (void *)pnone, &l)); }
	N(0) CASE("getpeername-addrlen-unmapped", getpeername(C, (void *)&sin, (void *)unmapped));
	N(0) { l = (socklen_t)-1; CASE("getpeername-addrlen-neg", getpeername(C, (void *)&sin, &l)); }
	/* options */
	N(0) CASE("setsockopt-sol-null", setsockopt(C, SOL_SOCKET, SO_RCVBUF, NULL, sizeof(int)));
	N(0) CASE("setsockopt-sol-unmapped", setsockopt(C, SOL_SOCKET, SO_RCVBUF, unmapped, sizeof(int)));
	N(0) CASE("setsockopt-sol-len-neg", setsockopt(C, SOL_SOCKET, SO_RCVBUF, &one, (socklen_t)-1));
	N(0) CASE("setsockopt-linger-unmapped", setsockopt(C, SOL_SOCKET, SO_LINGER, unmapped, sizeof(struct linger)));
	N(0) CASE("setsockopt-tcp-null", setsockopt(C, IPPROTO_TCP, TCP_NODELAY, NULL, sizeof(int)));
	N(0) CASE("setsockopt-tcp-unmapped", setsockopt(C, IPPROTO_TCP, TCP_NODELAY, unmapped, sizeof(int)));
	N(0) CASE("setsockopt-tcp-len-neg", setsockopt(C, IPPROTO_TCP, TCP_NODELAY, &one, (socklen_t)-1));
	N(0) CASE("setsockopt-ip-null", setsockopt(U, IPPROTO_IP, IP_TOS, NULL, sizeof(int)));
	N(0) { l = sizeof(int); CASE("getsockopt-sol-val-unmapped", getsockopt(C, SOL_SOCKET, SO_RCVBUF, unmapped, &l)); }
	N(0) { l = sizeof(int); CASE("getsockopt-sol-val-readonly", getsockopt(C, SOL_SOCKET, SO_RCVBUF, ronly, &l)); }
	N(0) CASE("getsockopt-sol-len-unmapped", getsockopt(C, SOL_SOCKET, SO_RCVBUF, buf, (void *)unmapped));
	N(0) CASE("getsockopt-sol-len-null", getsockopt(C, SOL_SOCKET, SO_RCVBUF, buf, NULL));
	N(0) CASE("getsockopt-sol-len-readonly", getsockopt(C, SOL_SOCKET, SO_RCVBUF, buf, (void *)ronly));
	N(0) { l = (socklen_t)-1; CASE("getsockopt-sol-len-neg", getsockopt(C, SOL_SOCKET, SO_RCVBUF, buf, &l)); }
	N(0) { l = sizeof(int); CASE("getsockopt-tcp-val-unmapped", getsockopt(C, IPPROTO_TCP, TCP_NODELAY, unmapped, &l)); }
	N(0) CASE("getsockopt-tcp-len-unmapped", getsockopt(C, IPPROTO_TCP, TCP_NODELAY, buf, (void *)unmapped));
	N(0) { l = (socklen_t)-1; CASE("getsockopt-tcp-len-neg", getsockopt(C, IPPROTO_TCP, TCP_NODELAY, buf, &l)); }
	N(0) { l = sizeof(int); CASE("getsockopt-ip-val-unmapped", getsockopt(U, IPPROTO_IP, IP_TTL, unmapped, &l)); }
	N(0) CASE("getsockopt-ip-len-unmapped", getsockopt(U, IPPROTO_IP, IP_TTL, buf, (void *)unmapped));
	/* absurd option values: the result and the value read back */
	N(0) optval("opt-rcvbuf-intmax", C, SOL_SOCKET, SO_RCVBUF, 0x7fffffff);
	N(0) optval("opt-sndbuf-intmax", C, SOL_SOCKET, SO_SNDBUF, 0x7fffffff);
	N(0) optval("opt-rcvbuf-neg", C, SOL_SOCKET, SO_RCVBUF, -1);
	N(0) optval("opt-sndbuf-zero", C, SOL_SOCKET, SO_SNDBUF, 0);
	N(0) optval("opt-udp-rcvbuf-intmax", U, SOL_SOCKET, SO_RCVBUF, 0x7fffffff);
	N(0) optval("opt-ip-ttl-256", C, IPPROTO_IP, IP_TTL, 256);
	N(0) optval("opt-ip-ttl-neg2", C, IPPROTO_IP, IP_TTL, -2);
	N(0) optval("opt-keepidle-0", C, IPPROTO_TCP, TCP_KEEPIDLE, 0);
	N(0) optval("opt-keepidle-huge", C, IPPROTO_TCP, TCP_KEEPIDLE, 0x7fffffff);
	N(0) optval("opt-keepcnt-256", C, IPPROTO_TCP, TCP_KEEPCNT, 256);
	N(0) optval("opt-rcvlowat-neg", C, SOL_SOCKET, SO_RCVLOWAT, -5);
	/* sendmsg and recvmsg */
	N(0) CASE("sendmsg-msg-null", sendmsg(U, NULL, 0));
	N(0) CASE("sendmsg-msg-unmapped", sendmsg(U, (void *)unmapped, 0));
	N(0) CASE("sendmsg-msg-partly", sendmsg(U, edge(8), 0));
	N(0) {
		iov.iov_base = "x";
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = unmapped;
		mh.msg_namelen = sizeof(sin);
		CASE("sendmsg-name-unmapped", sendmsg(U, &mh, 0));
	}
	N(0) {
		iov.iov_base = "x";
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, &u2a, sizeof(u2a));
		mh.msg_name = &ss;
		mh.msg_namelen = 1u << 20;
		CASE("sendmsg-namelen-1m", sendmsg(U, &mh, 0));
	}
	N(0) {
		mh.msg_iov = (void *)unmapped;
		mh.msg_iovlen = 1;
		mh.msg_name = &u2a;
		mh.msg_namelen = sizeof(u2a);
		CASE("sendmsg-iov-unmapped", sendmsg(U, &mh, 0));
	}
	N(0) {
		iov.iov_base = unmapped;
		iov.iov_len = 10;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		CASE("sendmsg-tcp-iovbase-unmapped", sendmsg(C, &mh, 0));
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = (size_t)-1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		CASE("sendmsg-tcp-iovlen-neg", sendmsg(C, &mh, 0));
	}
	N(0) {
		mh.msg_iov = (void *)buf;
		mh.msg_iovlen = 1025;
		CASE("sendmsg-tcp-iovcnt-1025", sendmsg(C, &mh, 0));
	}
	N(0) {
		iov.iov_base = "x";
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = unmapped;
		mh.msg_controllen = 32;
		CASE("sendmsg-tcp-control-unmapped", sendmsg(C, &mh, 0));
	}
	N(0) {
		iov.iov_base = "x";
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = &u2a;
		mh.msg_namelen = sizeof(u2a);
		mh.msg_control = unmapped;
		mh.msg_controllen = 32;
		CASE("sendmsg-udp-control-unmapped", sendmsg(U, &mh, 0));
	}
	N(0) CASE("recvmsg-msg-null", recvmsg(U, NULL, 0));
	N(0) CASE("recvmsg-msg-unmapped", recvmsg(U, (void *)unmapped, 0));
	N(0) {
		mh.msg_iov = (void *)unmapped;
		mh.msg_iovlen = 1;
		CASE("recvmsg-iov-unmapped", recvmsg(U, &mh, 0));
		then_recv("recvmsg-iov-unmapped", U);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = unmapped;
		mh.msg_namelen = sizeof(sin);
		CASE("recvmsg-name-unmapped", recvmsg(U, &mh, 0));
		then_recv("recvmsg-name-unmapped", U);
	}
	N(0) {
		iov.iov_base = ronly;
		iov.iov_len = 10;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		CASE("recvmsg-tcp-iovbase-readonly", recvmsg(C, &mh, 0));
		then_recv("recvmsg-tcp-iovbase-readonly", C);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = (size_t)-1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		CASE("recvmsg-tcp-iovlen-neg", recvmsg(C, &mh, 0));
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = unmapped;
		mh.msg_controllen = 64;
		CASE("recvmsg-udp-control-unmapped-none", recvmsg(U, &mh, 0));
	}
	/* sendmmsg and recvmmsg */
	N(0) CASE("sendmmsg-vec-unmapped", sendmmsg(U, (void *)unmapped, 1, 0));
	N(0) CASE("sendmmsg-vec-null", sendmmsg(U, NULL, 1, 0));
	N(0) {
		static struct iovec one_iov = { "x", 1 };

		mv = edge(sizeof(*mv));
		memset(mv, 0, sizeof(*mv));
		mv->msg_hdr.msg_iov = &one_iov;
		mv->msg_hdr.msg_iovlen = 1;
		mv->msg_hdr.msg_name = &u2a;
		mv->msg_hdr.msg_namelen = sizeof(u2a);
		CASE("sendmmsg-vlen-100000-one-valid", sendmmsg(U, mv, 100000, 0));
	}
	N(0) {
		static struct iovec one_iov = { "x", 1 };
		unsigned int n = 2000;

		mv = calloc(n, sizeof(*mv));
		for (unsigned int j = 0; j < n; j++) {
			mv[j].msg_hdr.msg_iov = &one_iov;
			mv[j].msg_hdr.msg_iovlen = 1;
			mv[j].msg_hdr.msg_name = &u2a;
			mv[j].msg_hdr.msg_namelen = sizeof(u2a);
		}
		CASE("sendmmsg-vlen-2000", sendmmsg(U, mv, n, 0));
	}
	N(0) CASE("recvmmsg-vec-unmapped", recvmmsg(U, (void *)unmapped, 1, 0, NULL));
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mv = edge(sizeof(*mv));
		memset(mv, 0, sizeof(*mv));
		mv->msg_hdr.msg_iov = &iov;
		mv->msg_hdr.msg_iovlen = 1;
		CASE("recvmmsg-vlen-100000-one-valid", recvmmsg(U, mv, 100000, MSG_DONTWAIT, NULL));
	}
	N(0) {
		mv = calloc(1, sizeof(*mv));
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mv->msg_hdr.msg_iov = &iov;
		mv->msg_hdr.msg_iovlen = 1;
		CASE("recvmmsg-timeout-unmapped", recvmmsg(U, mv, 1, 0, (void *)unmapped));
		then_recv("recvmmsg-timeout-unmapped", U);
	}
	N(0) {
		mv = calloc(1, sizeof(*mv));
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mv->msg_hdr.msg_iov = &iov;
		mv->msg_hdr.msg_iovlen = 1;
		ts.tv_sec = 0;
		ts.tv_nsec = -1;
		CASE("recvmmsg-timeout-invalid", recvmmsg(U, mv, 1, 0, &ts));
	}
	/* readv and writev */
	N(0) CASE("writev-iov-unmapped", writev(C, (void *)unmapped, 1));
	N(0) CASE("writev-iovcnt-neg", writev(C, (void *)buf, -1));
	N(0) CASE("writev-iovcnt-1025", writev(C, (void *)buf, 1025));
	N(0) { iov.iov_base = buf; iov.iov_len = (size_t)-1; CASE("writev-iovlen-neg", writev(C, &iov, 1)); }
	N(0) CASE("readv-iov-unmapped", readv(C, (void *)unmapped, 1));
	N(0) { iov.iov_base = buf; iov.iov_len = (size_t)-1; CASE("readv-iovlen-neg", readv(C, &iov, 1)); }
	N(0) { iov.iov_base = pnone; iov.iov_len = 10; CASE("readv-iovbase-protnone", readv(C, &iov, 1)); }
	/* poll, select, epoll */
	N(0) CASE("poll-null-1", poll(NULL, 1, 0));
	N(0) CASE("poll-null-0", poll(NULL, 0, 0));
	N(0) CASE("poll-unmapped", poll((void *)unmapped, 1, 0));
	N(0) {
		struct pollfd *p = edge(sizeof(*p));

		p->fd = C;
		p->events = POLLIN;
		CASE("poll-partly", poll(p, 2, 0));
	}
	N(0) {
		struct pollfd *p = (void *)ronly;

		CASE("poll-readonly", poll(p, 1, 0));	/* ronly is zero: fd 0 */
	}
	N(0) {
		struct rlimit rl;

		getrlimit(RLIMIT_NOFILE, &rl);
		pfd.fd = C;
		pfd.events = POLLIN;
		CASE("poll-nfds-over-rlimit", poll(&pfd, (nfds_t)rl.rlim_cur + 1, 0));
	}
	N(0) CASE("ppoll-mask-unmapped", ({ pfd.fd = C; pfd.events = POLLIN; ts.tv_sec = 0; ts.tv_nsec = 0; ppoll(&pfd, 1, &ts, (void *)unmapped); }));
	N(0) CASE("select-read-unmapped", select(C + 1, (void *)unmapped, NULL, NULL, NULL));
	N(0) CASE("select-write-null-ok", ({ struct timeval tv = { 0, 0 }; FD_ZERO(&rs); FD_SET(C, &rs); select(C + 1, &rs, NULL, NULL, &tv); }));
	N(0) CASE("select-nfds-neg", ({ struct timeval tv = { 0, 0 }; FD_ZERO(&rs); FD_SET(C, &rs); select(-1, &rs, NULL, NULL, &tv); }));
	N(0) {
		fd_set *r = (void *)ronly;	/* zero: no fd asked */

		CASE("select-read-readonly-empty", ({ struct timeval tv = { 0, 0 }; select(C + 1, r, NULL, NULL, &tv); }));
	}
	N(0) {
		fd_set *r = edge(8);
		struct timeval tv = { 0, 0 };

		memset(r, 0, 8);
		r->fds_bits[0] = 1ul << C;
		CASE("select-read-edge8", select(C + 1, r, NULL, NULL, &tv));
	}
	N(0) CASE("epoll-wait-events-unmapped", epoll_wait(E, (void *)unmapped, 1, 0));
	N(0) CASE("epoll-wait-events-null", epoll_wait(E, NULL, 1, 0));
	N(0) CASE("epoll-wait-events-readonly", epoll_wait(E, (void *)ronly, 1, 0));
	N(0) CASE("epoll-wait-maxevents-0", epoll_wait(E, &ev, 0, 0));
	N(0) CASE("epoll-wait-maxevents-neg", epoll_wait(E, &ev, -1, 0));
	N(0) CASE("epoll-wait-maxevents-intmax", epoll_wait(E, &ev, 0x7fffffff, 0));
	N(0) CASE("epoll-ctl-event-unmapped", epoll_ctl(E, EPOLL_CTL_ADD, S, (void *)unmapped));
	N(0) CASE("epoll-ctl-mod-event-null", epoll_ctl(E, EPOLL_CTL_MOD, C, NULL));
	N(0) CASE("epoll-ctl-del-event-null", epoll_ctl(E, EPOLL_CTL_DEL, C, NULL));
	/* fstat and ioctl */
	N(0) CASE("fstat-buf-unmapped", fstat(C, (void *)unmapped));
	N(0) { struct stat *volatile np = NULL; CASE("fstat-buf-null", fstat(C, np)); }
	N(0) CASE("fstat-buf-readonly", fstat(C, (void *)ronly));
	N(0) CASE("ioctl-fionread-unmapped", ioctl(C, FIONREAD, unmapped));
	N(0) CASE("ioctl-fionread-readonly", ioctl(C, FIONREAD, ronly));
	N(0) { ip = (void *)edge(2); CASE("ioctl-fionbio-partly", ioctl(C, FIONBIO, ip)); }
	N(0) {
		recv(U, buf, sizeof(buf), 0);	/* a datagram's time stamp to ask */
		CASE("ioctl-siocgstamp-readonly", ioctl(U, SIOCGSTAMP, ronly));
	}
	N(0) {
		int f = memfd_create("badptr", 0);

		if (f < 0 || write(f, "0123456789", 10) != 10)
			die("memfd");
		CASE("sendfile-off-unmapped", sendfile(C, f, (void *)unmapped, 10));
		CASE("sendfile-off-readonly", sendfile(C, f, (void *)ronly, 10));
		CASE("sendfile-from-socket-off-unmapped", sendfile(f, S, (void *)unmapped, 10));
	}
	/* A bad iovec between two good ones (Linux: the skb's copy, or the
	 * datagram's, fails whole: TCP keeps its bytes, UDP drops it; a
	 * send's chunk is read whole before it is queued). */
	N(0) {
		static char a[4], c[16];
		struct iovec v[3] = { { a, 4 }, { unmapped, 4 }, { c, 16 } };

		CASE("readv-tcp-mid-unmapped", readv(C, v, 3));
		then_recv("readv-tcp-mid-unmapped", C);
	}
	N(0) {
		static char a[4], c[16];
		struct iovec v[3] = { { a, 4 }, { pnone, 4 }, { c, 16 } };

		CASE("readv-tcp-mid-protnone", readv(C, v, 3));
		then_recv("readv-tcp-mid-protnone", C);
	}
	N(0) {
		static char a[4], c[16];
		struct iovec v[3] = { { a, 4 }, { ronly, 4 }, { c, 16 } };

		mh.msg_iov = v;
		mh.msg_iovlen = 3;
		CASE("recvmsg-tcp-mid-readonly", recvmsg(C, &mh, 0));
		then_recv("recvmsg-tcp-mid-readonly", C);
	}
	N(0) {
		static char a[10], c[16];
		struct iovec v[3] = { { a, 10 }, { unmapped, 4 }, { c, 16 } };

		CASE("readv-tcp-mid-unmapped-after-all", readv(C, v, 3));
		then_recv("readv-tcp-mid-unmapped-after-all", C);
	}
	N(0) {
		static char a[10], c[16];
		struct iovec v[3] = { { a, 10 }, { unmapped, 4 }, { c, 16 } };
		int q = 0;

		/* A second send queued behind the first (both kernels keep
		 * the two in one buffer: all stay). */
		if (write(S, "abcdef", 6) != 6)
			die("write 2");
		for (int t = 0; t < 200 && q < 16; t++) {
			usleep(5000);
			ioctl(C, FIONREAD, &q);
		}
		CASE("readv-tcp-mid-unmapped-two-sends", readv(C, v, 3));
		then_recv("readv-tcp-mid-unmapped-two-sends", C);
	}
	N(0) {
		static char a[4], c[16];
		struct iovec v[3] = { { a, 4 }, { unmapped, 4 }, { c, 16 } };

		CASE("readv-udp-mid-unmapped", readv(U, v, 3));
		then_recv("readv-udp-mid-unmapped", U);
	}
	N(0) {
		static char a[4], c[16];
		struct iovec v[3] = { { a, 4 }, { pnone, 4 }, { c, 16 } };

		mh.msg_iov = v;
		mh.msg_iovlen = 3;
		CASE("recvmsg-udp-mid-protnone", recvmsg(U, &mh, 0));
		then_recv("recvmsg-udp-mid-protnone", U);
	}
	N(0) {
		struct iovec v[3] = { { "abcd", 4 }, { unmapped, 4 }, { "efgh", 4 } };

		CASE("writev-tcp-mid-unmapped", writev(C, v, 3));
		then_peer("writev-tcp-mid-unmapped", S);
	}
	N(0) {
		struct iovec v[3] = { { "abcd", 4 }, { pnone, 4 }, { "efgh", 4 } };

		mh.msg_iov = v;
		mh.msg_iovlen = 3;
		CASE("sendmsg-tcp-mid-protnone", sendmsg(C, &mh, 0));
		then_peer("sendmsg-tcp-mid-protnone", S);
	}
	N(0) {
		struct iovec v[3] = { { "abcd", 4 }, { edge(2), 4 }, { "efgh", 4 } };

		CASE("writev-tcp-mid-partly", writev(C, v, 3));
		then_peer("writev-tcp-mid-partly", S);
	}
	N(0) {
		struct iovec v[3] = { { "abcd", 4 }, { unmapped, 4 }, { "efgh", 4 } };

		mh.msg_iov = v;
		mh.msg_iovlen = 3;
		mh.msg_name = &u2a;
		mh.msg_namelen = sizeof(u2a);
		CASE("sendmsg-udp-mid-unmapped", sendmsg(U, &mh, 0));
		then_peer("sendmsg-udp-mid-unmapped", U2);
	}
	N(0) {
		struct iovec v[3] = { { "abcd", 4 }, { pnone, 4 }, { "efgh", 4 } };

		if (connect(U, (void *)&u2a, sizeof(u2a)))
			die("connect udp");
		CASE("writev-udp-mid-protnone", writev(U, v, 3));
		then_peer("writev-udp-mid-protnone", U2);
	}
	/* recvmsg's msghdr in a read-only page (Linux writes msg_namelen,
	 * msg_flags and msg_controllen back after the receive), and its
	 * name and control buffers bad */
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = &sin;
		mh.msg_namelen = sizeof(sin);
		CASE("recvmsg-udp-msg-readonly", recvmsg(U, ro_page(&mh, sizeof(mh)), 0));
		then_recv("recvmsg-udp-msg-readonly", U);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		CASE("recvmsg-tcp-msg-readonly", recvmsg(C, ro_page(&mh, sizeof(mh)), 0));
		then_recv("recvmsg-tcp-msg-readonly", C);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = &sin;
		mh.msg_namelen = sizeof(sin);
		CASE("recvmsg-tcp-msg-readonly-name", recvmsg(C, ro_page(&mh, sizeof(mh)), 0));
		then_recv("recvmsg-tcp-msg-readonly-name", C);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		CASE("recvmsg-tcp-msg-readonly-empty-nb", recvmsg(S, ro_page(&mh, sizeof(mh)), MSG_DONTWAIT));
	}
	N(0) {
		struct timeval tv = { 0, 200000 };

		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		setsockopt(S, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		TCASE("recvmsg-tcp-msg-readonly-empty-blocking", recvmsg(S, ro_page(&mh, sizeof(mh)), 0));
	}
	N(0) {
		struct timeval tv = { 0, 200000 };

		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		recv(U, buf, sizeof(buf), 0);
		setsockopt(U, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		TCASE("recvmsg-udp-msg-readonly-empty-blocking", recvmsg(U, ro_page(&mh, sizeof(mh)), 0));
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = unmapped;
		mh.msg_namelen = sizeof(sin);
		CASE("recvmsg-tcp-name-unmapped", recvmsg(C, &mh, 0));
		printf("recvmsg-tcp-name-unmapped+namelen %u\n", (unsigned int)mh.msg_namelen);
		then_recv("recvmsg-tcp-name-unmapped", C);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = pnone;
		mh.msg_namelen = sizeof(sin);
		CASE("recvmsg-udp-name-protnone", recvmsg(U, &mh, 0));
		then_recv("recvmsg-udp-name-protnone", U);
	}
	N(0) {
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_name = edge(4);
		mh.msg_namelen = sizeof(sin);
		CASE("recvmsg-udp-name-partly", recvmsg(U, &mh, 0));
		then_recv("recvmsg-udp-name-partly", U);
	}
	N(0) {
		const char *w[3] = { "unmapped", "readonly", "partly" };
		void *at[3] = { unmapped, ronly, edge(16) };

		for (int j = 0; j < 3; j++) {
			char n[128];
			int fd = socket(AF_INET, SOCK_DGRAM, 0);
			struct sockaddr_in a = ua;

			a.sin_port = 0;
			l = sizeof(a);
			if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) ||
			    bind(fd, (void *)&a, sizeof(a)) || getsockname(fd, (void *)&a, &l) ||
			    sendto(U2, "pk", 2, 0, (void *)&a, sizeof(a)) != 2)
				die("pktinfo");
			wait_in(fd);
			iov.iov_base = buf;
			iov.iov_len = sizeof(buf);
			mh.msg_iov = &iov;
			mh.msg_iovlen = 1;
			mh.msg_name = NULL;
			mh.msg_namelen = 0;
			mh.msg_control = at[j];
			mh.msg_controllen = 64;
			mh.msg_flags = 0;
			snprintf(n, sizeof(n), "recvmsg-udp-pktinfo-control-%s", w[j]);
			CASE(n, recvmsg(fd, &mh, 0));
			printf("%s+back controllen %zu flags 0x%x\n", n, (size_t)mh.msg_controllen, mh.msg_flags);
		}
	}
	/* poll, select and epoll with a bad array, a socket of the stack
	 * (C ready, S idle), a kernel fd (a pipe, with a byte or empty) or
	 * both: Linux reads the array at entry (poll, select: EFAULT at
	 * once) and writes it back after the wait (EFAULT then, whatever is
	 * ready); epoll_wait writes only an event it has */
	N(0) TCASE("poll-null-1-wait", poll(NULL, 1, 200));
	N(0) TCASE("poll-unmapped-wait", poll((void *)unmapped, 1, 200));
	N(0) TCASE("poll-protnone-wait", poll((void *)pnone, 2, 200));
	{
		static const char *const what[6] = { "stack-ready", "stack-idle", "kernel-ready",
						     "kernel-idle", "mix-idle", "mix-ready" };

		for (int w = 0; w < 6; w++) {
			N(0) {
				int pp[2], fa, fb = -1;
				char n[128];

				if (pipe(pp))
					die("pipe");
				if (w == 2 || w == 5)
					write(pp[1], "p", 1);
				fa = w == 0 ? C : w == 1 ? S : pp[0];
				if (w == 4)
					fa = S, fb = pp[0];
				if (w == 5)
					fa = S, fb = pp[0];
				{
					struct pollfd pa[2] = { { fa, POLLIN, 0 }, { fb, POLLIN, 0 } };
					struct pollfd *ro = ro_page(pa, sizeof(pa));
					fd_set s0;
					struct timeval tv = { 0, 200000 };
					struct timespec t2 = { 0, 200000000 };

					snprintf(n, sizeof(n), "poll-readonly-%s", what[w]);
					TCASE(n, poll(ro, fb >= 0 ? 2 : 1, 200));
					snprintf(n, sizeof(n), "ppoll-readonly-%s", what[w]);
					TCASE(n, ppoll(ro, fb >= 0 ? 2 : 1, &t2, NULL));
					FD_ZERO(&s0);
					FD_SET(fa, &s0);
					if (fb >= 0)
						FD_SET(fb, &s0);
					snprintf(n, sizeof(n), "select-readonly-%s", what[w]);
					TCASE(n, select(FD_SETSIZE, ro_page(&s0, sizeof(s0)), NULL, NULL, &tv));
					snprintf(n, sizeof(n), "pselect-readonly-%s", what[w]);
					TCASE(n, pselect(FD_SETSIZE, ro_page(&s0, sizeof(s0)), NULL, NULL, &t2, NULL));
				}
				{
					int e = epoll_create1(0);
					const char *bw[3] = { "null", "unmapped", "readonly" };
					void *bp[3] = { NULL, unmapped, ronly };
					struct epoll_event ee = { .events = EPOLLIN };

					ee.data.fd = fa;
					if (e < 0 || epoll_ctl(e, EPOLL_CTL_ADD, fa, &ee))
						die("epoll fa");
					ee.data.fd = fb;
					if (fb >= 0 && epoll_ctl(e, EPOLL_CTL_ADD, fb, &ee))
						die("epoll fb");
					for (int b = 0; b < 3; b++) {
						snprintf(n, sizeof(n), "epoll-wait-%s-%s", bw[b], what[w]);
						TCASE(n, epoll_wait(e, bp[b], 2, 200));
					}
					snprintf(n, sizeof(n), "epoll-wait-%s+then", what[w]);
					CASE(n, epoll_wait(e, &ee, 1, 0));
				}
			}
		}
	}
	N(0) {
		int e = epoll_create1(0);
		struct epoll_event evs[2] = { { .events = EPOLLIN | EPOLLET, .data.fd = C },
					      { .events = EPOLLIN | EPOLLONESHOT, .data.fd = U } };

		if (e < 0 || epoll_ctl(e, EPOLL_CTL_ADD, C, &evs[0]) ||
		    epoll_ctl(e, EPOLL_CTL_ADD, U, &evs[1]))
			die("epoll et");
		CASE("epoll-wait-et-oneshot-null", epoll_wait(e, NULL, 2, 0));
		CASE("epoll-wait-et-oneshot-null+then", epoll_wait(e, evs, 2, 0));
	}
	N(0) {
		int e = epoll_create1(0);
		struct epoll_event *ev2 = edge(sizeof(struct epoll_event)), ee = { .events = EPOLLIN };

		ee.data.fd = C;
		if (e < 0 || epoll_ctl(e, EPOLL_CTL_ADD, C, &ee))
			die("epoll 2");
		ee.data.fd = U;
		if (epoll_ctl(e, EPOLL_CTL_ADD, U, &ee))
			die("epoll 2");
		CASE("epoll-wait-second-entry-unmapped", epoll_wait(e, ev2, 2, 0));
		CASE("epoll-wait-second-entry-unmapped+then", epoll_wait(e, edge(sizeof(*ev2)), 1, 0));
	}
	/* File calls on a socket (Linux: the socket's inode) */
	N(0) {
		int r = posix_fadvise(C, 0, 0, POSIX_FADV_SEQUENTIAL);

		out("fadvise-tcp", r ? -1 : 0, r);
		r = posix_fadvise(C, 0, -1, POSIX_FADV_NORMAL);
		out("fadvise-tcp-len-neg", r ? -1 : 0, r);
		r = posix_fadvise(U, 0, 10, POSIX_FADV_WILLNEED);
		out("fadvise-udp", r ? -1 : 0, r);
		r = posix_fadvise(C, 0, 10, 99);
		out("fadvise-tcp-advice-bad", r ? -1 : 0, r);
	}
	N(0) CASE("fallocate-tcp", fallocate(C, 0, 0, 10));
	N(0) CASE("fallocate-tcp-len-0", fallocate(C, 0, 0, 0));
	N(0) CASE("fallocate-udp-punch", fallocate(U, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 10));
	N(0) CASE("ftruncate-tcp", ftruncate(C, 0));
	N(0) CASE("ftruncate-tcp-neg", ftruncate(C, -1));
	N(0) CASE("ftruncate-udp", ftruncate(U, 100));
	N(0) CASE("lseek-tcp", lseek(C, 0, SEEK_CUR));
	N(0) CASE("lseek-udp-whence-bad", lseek(U, 0, 99));
	N(0) CASE("pread-tcp-buf-unmapped", pread(C, unmapped, 10, 0));
	N(0) CASE("pread-tcp-off-neg", pread(C, buf, 10, -1));
	N(0) CASE("pwrite-tcp-buf-null", pwrite(C, NULL, 10, 0));
	N(0) CASE("pwrite-udp-off-neg", pwrite(U, buf, 10, -1));
	N(0) {
		int v = -1;

		CASE("ioctl-figetbsz-tcp", ioctl(C, FIGETBSZ, &v));
		printf("ioctl-figetbsz-tcp+value %d\n", v);
	}
	N(0) CASE("ioctl-figetbsz-unmapped", ioctl(C, FIGETBSZ, unmapped));
	N(0) CASE("ioctl-fionread-udp-unmapped", ioctl(U, FIONREAD, unmapped));
	N(0) CASE("ioctl-fionread-listener-unmapped", ioctl(L, FIONREAD, unmapped));
	N(0) CASE("ioctl-fionread-null", ioctl(C, FIONREAD, NULL));
	N(0) CASE("ioctl-siocoutq-readonly", ioctl(C, SIOCOUTQ, ronly));
	N(0) CASE("fsync-tcp", fsync(C));
	N(0) CASE("fdatasync-udp", fdatasync(U));
	N(0) CASE("syncfs-tcp", syncfs(C));
	N(0) CASE("sync-file-range-tcp", sync_file_range(C, 0, 10, SYNC_FILE_RANGE_WRITE));
	N(0) CASE("sync-file-range-tcp-flags-bad", sync_file_range(C, 0, 10, 0x80));
	N(0) CASE("readahead-tcp", readahead(C, 0, 10));
	N(0) {
		CASE("flock-tcp-ex", flock(C, LOCK_EX | LOCK_NB));
		CASE("flock-tcp-ex-other", flock(S, LOCK_EX | LOCK_NB));
		CASE("flock-udp-sh-other", flock(U, LOCK_SH | LOCK_NB));
		CASE("flock-tcp-un", flock(C, LOCK_UN));
		CASE("flock-tcp-op-bad", flock(C, 0));
	}
	N(0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

		CASE("fcntl-ofd-setlk-tcp-wr", fcntl(C, F_OFD_SETLK, &fl));
		CASE("fcntl-ofd-setlk-other-wr", fcntl(S, F_OFD_SETLK, &fl));
		fl.l_type = F_RDLCK;
		CASE("fcntl-setlk-udp-rd", fcntl(U, F_SETLK, &fl));
		fl.l_type = F_WRLCK;
		CASE("fcntl-getlk-udp", fcntl(U2, F_OFD_GETLK, &fl));
		printf("fcntl-getlk-udp+type %d\n", fl.l_type);
		fl.l_type = 7;
		CASE("fcntl-setlk-type-bad", fcntl(C2, F_SETLK, &fl));
		fl.l_type = F_RDLCK;
		fl.l_pid = 1;
		CASE("fcntl-ofd-setlk-pid", fcntl(C2, F_OFD_SETLK, &fl));
		fl.l_pid = 0;
		fl.l_start = 10;
		fl.l_len = 0x7fffffffffffffffll;
		CASE("fcntl-setlk-range-overflow", fcntl(C2, F_SETLK, &fl));
		fl.l_len = -11;
		CASE("fcntl-setlk-len-before-0", fcntl(C2, F_SETLK, &fl));
		fl.l_len = 1;
		fl.l_whence = 9;
		CASE("fcntl-getlk-whence-bad", fcntl(C2, F_GETLK, &fl));
		CASE("fcntl-setlk-lock-unmapped", fcntl(C, F_SETLK, unmapped));
		CASE("fcntl-getlk-lock-readonly", fcntl(C, F_GETLK, ronly));
	}
	/* Locks that meet: another process's process lock (a forked child,
	 * which shares the socket), an OFD lock and a process lock of one
	 * process; another socket's locks never meet them. */
	N(0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
		pid_t p;

		CASE("fcntl-setlk-held", fcntl(C, F_SETLK, &fl));
		p = fork();
		if (p == 0) {
			struct flock f2 = fl;

			CASE("fcntl-setlk-held-other-proc", fcntl(C, F_SETLK, &f2));
			f2.l_type = F_RDLCK;
			CASE("fcntl-setlk-held-other-proc-rd", fcntl(C, F_SETLK, &f2));
			f2 = fl;
			CASE("fcntl-getlk-held-other-proc", fcntl(C, F_GETLK, &f2));
			printf("fcntl-getlk-held-other-proc+type %d by-parent %d\n", f2.l_type,
			       f2.l_pid == getppid());
			f2 = fl;
			CASE("fcntl-ofd-setlk-held-other-proc", fcntl(C, F_OFD_SETLK, &f2));
			f2 = fl;
			CASE("fcntl-setlk-other-sock", fcntl(S, F_SETLK, &f2));
			fflush(stdout);
			_exit(0);
		}
		waitpid(p, NULL, 0);
		fl.l_start = 10;
		CASE("fcntl-ofd-setlk-10", fcntl(C, F_OFD_SETLK, &fl));
		CASE("fcntl-setlk-10-over-ofd", fcntl(C, F_SETLK, &fl));
		CASE("fcntl-getlk-10-over-ofd", fcntl(C, F_GETLK, &fl));
		printf("fcntl-getlk-10-over-ofd+type %d pid %d\n", fl.l_type, fl.l_pid);
		/* A close of another fd of the socket ends our process lock. */
		close(dup(C));
		fl.l_start = 0;
		p = fork();
		if (p == 0) {
			CASE("fcntl-setlk-after-close-other-proc", fcntl(C, F_SETLK, &fl));
			fflush(stdout);
			_exit(0);
		}
		waitpid(p, NULL, 0);
	}
	/* options: lengths 0 and negative, pointers bad */
	N(0) { l = 0; CASE("getsockopt-sol-val-unmapped-len0", getsockopt(C, SOL_SOCKET, SO_RCVBUF, unmapped, &l)); printf("getsockopt-sol-val-unmapped-len0+len %u\n", l); }
	N(0) { l = 0; CASE("getsockopt-tcp-val-unmapped-len0", getsockopt(C, IPPROTO_TCP, TCP_NODELAY, unmapped, &l)); printf("getsockopt-tcp-val-unmapped-len0+len %u\n", l); }
	N(0) { l = 0; CASE("getsockopt-ip-val-unmapped-len0", getsockopt(U, IPPROTO_IP, IP_TTL, unmapped, &l)); printf("getsockopt-ip-val-unmapped-len0+len %u\n", l); }
	N(0) { l = 0; CASE("getsockopt-linger-val-null-len0", getsockopt(C, SOL_SOCKET, SO_LINGER, NULL, &l)); printf("getsockopt-linger-val-null-len0+len %u\n", l); }
	N(0) { l = 0; CASE("getsockopt-tcpinfo-val-unmapped-len0", getsockopt(C, IPPROTO_TCP, TCP_INFO, unmapped, &l)); printf("getsockopt-tcpinfo-val-unmapped-len0+len %u\n", l); }
	N(0) { l = 100; CASE("getsockopt-tcpinfo-val-unmapped", getsockopt(C, IPPROTO_TCP, TCP_INFO, unmapped, &l)); }
	N(0) { l = (socklen_t)-1; CASE("getsockopt-ip-len-neg", getsockopt(U, IPPROTO_IP, IP_TTL, buf, &l)); }
	N(0) { l = (socklen_t)-5; CASE("getsockopt-sol-error-len-neg", getsockopt(C, SOL_SOCKET, SO_ERROR, buf, &l)); }
	N(0) CASE("getsockopt-sol-len-protnone", getsockopt(C, SOL_SOCKET, SO_TYPE, buf, (void *)pnone));
	N(0) CASE("getsockopt-tcp-len-readonly", getsockopt(C, IPPROTO_TCP, TCP_MAXSEG, buf, (void *)ronly));
	N(0) CASE("getsockopt-ip-len-partly", getsockopt(U, IPPROTO_IP, IP_TOS, buf, edge(2)));
	N(0) CASE("setsockopt-sol-val-unmapped-len0", setsockopt(C, SOL_SOCKET, SO_RCVBUF, unmapped, 0));
	N(0) CASE("setsockopt-tcp-val-unmapped-len0", setsockopt(C, IPPROTO_TCP, TCP_NODELAY, unmapped, 0));
	N(0) CASE("setsockopt-ip-val-null-len0", setsockopt(U, IPPROTO_IP, IP_TOS, NULL, 0));
	N(0) CASE("setsockopt-ip-ttl-val-unmapped-len0", setsockopt(U, IPPROTO_IP, IP_TTL, unmapped, 0));
	N(0) CASE("setsockopt-linger-val-null-len0", setsockopt(C, SOL_SOCKET, SO_LINGER, NULL, 0));
	N(0) CASE("setsockopt-ip-len-neg", setsockopt(U, IPPROTO_IP, IP_TTL, &one, (socklen_t)-1));
	N(0) CASE("setsockopt-linger-len-neg", setsockopt(C, SOL_SOCKET, SO_LINGER, &one, (socklen_t)-8));
	N(0) CASE("setsockopt-sol-val-partly", setsockopt(C, SOL_SOCKET, SO_SNDBUF, edge(2), sizeof(int)));
	N(0) CASE("setsockopt-sol-val-unmapped-len1", setsockopt(C, SOL_SOCKET, SO_KEEPALIVE, unmapped, 1));
	N(0) CASE("setsockopt-ip-tos-val-unmapped-len1", setsockopt(U, IPPROTO_IP, IP_TOS, unmapped, 1));
	(void)st;
	if (i >= k)
		exit(3);	/* no such case: the end */
}

static void healthy(void)
{
	static char b[100000], r[100000];
	long got = 0, sent = 0;
	int l, c, s, reads = 0;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) || getsockname(l, (void *)&a, &al))
		die("healthy listener");
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (void *)&a, sizeof(a)))
		die("healthy connect");
	s = accept(l, NULL, NULL);
	memset(b, 'h', sizeof(b));
	while (got < (long)sizeof(r)) {
		struct pollfd p[2] = { { c, sent < (long)sizeof(b) ? POLLOUT : 0, 0 }, { s, POLLIN, 0 } };
		long n;

		if (poll(p, 2, 5000) <= 0)
			break;
		if (p[0].revents & POLLOUT) {
			n = send(c, b + sent, sizeof(b) - (size_t)sent, MSG_DONTWAIT);
			if (n > 0)
				sent += n;
		}
		if (p[1].revents & POLLIN) {
			/* Every other read a readv into three iovecs, the
			 * middle one large (the copy outside the lock). */
			size_t left = sizeof(r) - (size_t)got, i1 = left < 1000 ? left : 1000,
			       i2 = left - i1 < 30000 ? left - i1 : 30000;
			struct iovec v[3] = { { r + got, i1 }, { r + got + i1, i2 },
					      { r + got + i1 + i2, left - i1 - i2 } };

			n = (++reads & 1) ? readv(s, v, 3) : recv(s, r + got, left, MSG_DONTWAIT);
			if (n <= 0)
				break;
			got += n;
		}
	}
	printf("healthy %ld %s\n", got, got == (long)sizeof(r) && !memcmp(b, r, sizeof(r)) ? "same" : "differ");
}

int main(int argc, char **argv)
{
	int only = argc > 1 ? atoi(argv[1]) : -1;

	signal(SIGPIPE, SIG_IGN);
	memory();
	for (int i = only >= 0 ? only : 0;; i++) {
		pid_t p = fork();
		int stt;

		if (p < 0)
			die("fork");
		if (!p) {
			alarm(10);
			fixture();
			run_case(i);
			fflush(stdout);
			_exit(0);
		}
		if (waitpid(p, &stt, 0) != p)
			die("waitpid");
		if (WIFEXITED(stt) && WEXITSTATUS(stt) == 3)
			break;
		if (WIFSIGNALED(stt))
			printf("case-%d killed-by-%s\n", i, sigabbrev_np(WTERMSIG(stt)));
		else if (WEXITSTATUS(stt))
			printf("case-%d exit-%d\n", i, WEXITSTATUS(stt));
		fflush(stdout);
		if (only >= 0)
			break;
	}
	healthy();
	return 0;
}
