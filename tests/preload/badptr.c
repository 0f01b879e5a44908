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
 * process carries 100,000 bytes each way (N: the bytes back).
 */
/* The calls themselves, not their _chk forms, and with the bad arguments
 * the compiler would warn of. */
#undef _FORTIFY_SOURCE
#pragma GCC diagnostic ignored "-Wnonnull"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wstringop-overread"
#include <errno.h>
#include <fcntl.h>
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
	(void)st;
	if (i >= k)
		exit(3);	/* no such case: the end */
}

static void healthy(void)
{
	static char b[100000], r[100000];
	long got = 0, sent = 0;
	int l, c, s;
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
			n = recv(s, r + got, sizeof(r) - (size_t)got, MSG_DONTWAIT);
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
