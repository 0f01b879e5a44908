// SPDX-License-Identifier: BSD-2-Clause
/*
 * Conformance checks for the preload library: each check prints one line
 * "name: what happened" (return values, errno names, readiness bits, byte
 * counts).  tests/host/test_preload.sh runs this program once on the
 * kernel and once under `sluice run`, and compares the lines one by one.
 * Everything goes over 127.0.0.1; every wait is bounded.
 *
 * The first line, "# backend: kernel|sluice", says whose sockets these
 * were (a Sluice socket's fd is a placeholder file, fdtable.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "show.h"
#include "stackfd.h"

static volatile sig_atomic_t sigpipes;


static const char *evs(short re)
{
	static char buf[4][64];
	static int k;
	char *b = buf[k++ & 3];

	snprintf(b, 64, "%s%s%s%s%s%s", re & POLLIN ? "IN," : "", re & POLLOUT ? "OUT," : "",
		 re & POLLERR ? "ERR," : "", re & POLLHUP ? "HUP," : "",
		 re & POLLRDHUP ? "RDHUP," : "", re & POLLNVAL ? "NVAL," : "");
	if (!*b)
		strcpy(b, "-");
	return b;
}

static short poll1(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };

	if (poll(&p, 1, ms) < 0)
		return -1;
	return p.revents;
}

static struct sockaddr_in lo(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &l))
		return 0;
	return ntohs(a.sin_port);
}

static int listener(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = lo(0);

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16)) {
		perror("listener");
		exit(2);
	}
	*port = port_of(fd);
	return fd;
}

/* A connected pair: *c the client, *s the accepted end. */
static void pair(int *l, int *c, int *s)
{
	uint16_t port;
	struct sockaddr_in a;

	*l = listener(&port);
	a = lo(port);
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(*c, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(2);
	}
	*s = accept(*l, NULL, NULL);
	if (*s < 0) {
		perror("accept");
		exit(2);
	}
}

/* A port nobody listens on: bound, then closed. */
static uint16_t closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = lo(0);
	uint16_t p;

	bind(fd, (struct sockaddr *)&a, sizeof(a));
	p = port_of(fd);
	close(fd);
	return p;
}

static void check_socket_basics(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), fd2, v, r;
	struct sockaddr_in a = lo(0), p;
	socklen_t l = sizeof(v);

	r = getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l);
	printf("so_type: %s %d len %u\n", rv(r), v, l);
	{
		char dev[16] = "x";
		socklen_t dl = sizeof(dev);

		r = getsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, &dl);
		printf("so_bindtodevice_unbound: %s len %u\n", rv(r), dl);
	}
	l = sizeof(p);
	printf("getpeername_unconnected: %s\n", rv(getpeername(fd, (struct sockaddr *)&p, &l)));
	printf("shutdown_unconnected: %s\n", rv(shutdown(fd, SHUT_RDWR)));
	printf("bind: %s\n", rv(bind(fd, (struct sockaddr *)&a, sizeof(a))));
	printf("bind_again: %s\n", rv(bind(fd, (struct sockaddr *)&a, sizeof(a))));
	printf("getsockname_port_set: %d\n", port_of(fd) != 0);
	a = lo(port_of(fd));
	fd2 = socket(AF_INET, SOCK_STREAM, 0);
	printf("bind_in_use: %s\n", rv(bind(fd2, (struct sockaddr *)&a, sizeof(a))));
	a.sin_family = AF_INET6;
	printf("bind_bad_family: %s\n", rv(bind(fd2, (struct sockaddr *)&a, sizeof(a))));
	printf("bind_short: %s\n", rv(bind(fd2, (struct sockaddr *)&a, 4)));
	printf("close: %s\n", rv(close(fd)));
	printf("close_again: %s\n", rv(close(fd)));
	printf("close2: %s\n", rv(close(fd2)));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	r = listen(fd, 4);
	printf("listen_unbound: %s port_set %d\n", rv(r), port_of(fd) != 0);
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l);
	printf("so_acceptconn: %d\n", v);
	close(fd);
}

static void check_options(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), v = 1, r;
	socklen_t l = sizeof(v);
	struct timeval tv = { 0, 100000 };

	r = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v));
	v = 0;
	getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &l);
	printf("tcp_nodelay: %s %d\n", rv(r), v != 0);
	v = 1;
	r = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v));
	v = 0;
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &l);
	printf("so_reuseaddr: %s %d\n", rv(r), v != 0);
	v = 1;
	r = setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v));
	v = 0;
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &l);
	printf("so_keepalive: %s %d\n", rv(r), v != 0);
	v = 1;
	printf("so_reuseport: %s\n", rv(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &v, sizeof(v))));
	printf("setsockopt_short: %s\n", rv(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, 2)));
	printf("ipv6_level_on_ipv4: %s\n",
	       rv(setsockopt(fd, IPPROTO_IPV6, 26 /* IPV6_V6ONLY */, &v, sizeof(v))));
	printf("so_rcvtimeo: %s\n", rv(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))));
	v = 65536;
	r = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l);
	printf("so_rcvbuf_doubled: %s %d\n", rv(r), v == 131072);
	l = sizeof(v);
	r = getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &l);
	printf("so_error_fresh: %s %d\n", rv(r), v);
	close(fd);
	/* An inet socket's peer credentials, connected and not: none. */
	{
		struct ucred uc;
		int lf, c, a;

		pair(&lf, &c, &a);
		for (int k = 0; k < 2; k++) {
			memset(&uc, 0x55, sizeof(uc));
			l = sizeof(uc);
			r = getsockopt(k ? a : lf, SOL_SOCKET, SO_PEERCRED, &uc, &l);
			printf("so_peercred_%s: %s len %u pid %d uid %d gid %d\n",
			       k ? "accepted" : "listener", rv(r), (unsigned int)l, (int)uc.pid,
			       (int)uc.uid, (int)uc.gid);
		}
		l = 4;
		r = getsockopt(c, SOL_SOCKET, SO_PEERCRED, &uc, &l);
		printf("so_peercred_short: %s len %u\n", rv(r), (unsigned int)l);
		close(lf);
		close(c);
		close(a);
	}
}

static void check_connect(void)
{
	struct sockaddr_in a = lo(closed_port());
	int fd = socket(AF_INET, SOCK_STREAM, 0), v = -1;
	socklen_t l = sizeof(v);
	short re;

	printf("connect_refused: %s\n", rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	close(fd);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	printf("connect_nb_refused: %s\n", rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	re = poll1(fd, POLLOUT | POLLIN, 2000);
	printf("connect_nb_refused_poll: %s\n", evs(re));
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &l);
	printf("connect_nb_refused_so_error: %s\n", en(v));
	l = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &l);
	printf("connect_nb_refused_so_error_again: %s\n", en(v));
	close(fd);
}

static void check_nonblocking(void)
{
	int l, c, s, fl;
	char buf[16];

	pair(&l, &c, &s);
	printf("recv_dontwait_empty: %s\n", rv(recv(c, buf, sizeof(buf), MSG_DONTWAIT)));
	fl = fcntl(c, F_GETFL);
	printf("fcntl_setfl_nonblock: %s\n", rv(fcntl(c, F_SETFL, fl | O_NONBLOCK)));
	printf("fcntl_getfl_nonblock: %d\n", (fcntl(c, F_GETFL) & O_NONBLOCK) != 0);
	printf("fcntl_getfl: %#x\n", fcntl(c, F_GETFL));
	printf("recv_nonblock_empty: %s\n", rv(recv(c, buf, sizeof(buf), 0)));
	printf("read_nonblock_empty: %s\n", rv(read(c, buf, sizeof(buf))));
	fl = 0;
	printf("fionbio_off: %s\n", rv(ioctl(c, FIONBIO, &fl)));
	printf("fcntl_getfl_after_fionbio: %d\n", (fcntl(c, F_GETFL) & O_NONBLOCK) != 0);
	fl = 1;
	ioctl(l, FIONBIO, &fl);
	printf("accept_nonblock_empty: %s\n", rv(accept(l, NULL, NULL)));
	close(c);
	close(s);
	close(l);
}

static void check_data(void)
{
	int l, c, s, n, r;
	char buf[64];

	pair(&l, &c, &s);
	printf("poll_fresh: %s\n", evs(poll1(c, POLLIN | POLLOUT, 0)));
	printf("send10: %s\n", rv(send(s, "0123456789", 10, 0)));
	printf("poll_data: %s\n", evs(poll1(c, POLLIN | POLLOUT, 2000)));
	n = -1;
	r = ioctl(c, FIONREAD, &n);
	printf("fionread: %s %d\n", rv(r), n);
	printf("peek5: %s\n", rv(recv(c, buf, 5, MSG_PEEK)));
	memset(buf, 0, sizeof(buf));
	printf("recv4: %s %.4s\n", rv(recv(c, buf, 4, 0)), buf);
	memset(buf, 0, sizeof(buf));
	printf("recv_rest: %s %s\n", rv(recv(c, buf, sizeof(buf), 0)), buf);
	printf("write: %s\n", rv(write(c, "abc", 3)));
	poll1(s, POLLIN, 2000);
	memset(buf, 0, sizeof(buf));
	printf("read: %s %s\n", rv(read(s, buf, sizeof(buf))), buf);
	{
		struct iovec out[3] = { { "ab", 2 }, { "cde", 3 }, { "fghi", 4 } };
		char x[4] = { 0 }, y[16] = { 0 };
		struct iovec in[2] = { { x, 3 }, { y, 15 } };

		printf("writev: %s\n", rv(writev(s, out, 3)));
		poll1(c, POLLIN, 2000);
		/* the kernel may split it: wait until all 9 bytes are there */
		for (int i = 0; i < 200; i++) {
			if (!ioctl(c, FIONREAD, &n) && n >= 9)
				break;
			usleep(5000);
		}
		r = readv(c, in, 2);
		printf("readv: %s %s|%s\n", rv(r), x, y);
	}
	{
		struct msghdr m = { 0 };
		struct iovec io = { buf, sizeof(buf) };

		send(c, "msg", 3, 0);
		poll1(s, POLLIN, 2000);
		m.msg_iov = &io;
		m.msg_iovlen = 1;
		memset(buf, 0, sizeof(buf));
		r = recvmsg(s, &m, 0);
		printf("recvmsg: %s %s flags %d\n", rv(r), buf, m.msg_flags);
	}
	close(c);
	printf("poll_after_peer_close: %s\n", evs(poll1(s, POLLIN | POLLRDHUP, 2000)));
	printf("recv_eof: %s\n", rv(recv(s, buf, sizeof(buf), 0)));
	close(s);
	close(l);
}

static void *later_send(void *arg)
{
	usleep(50000);
	send(*(int *)arg, "def", 3, 0);
	return NULL;
}

static void check_waitall(void)
{
	int l, c, s;
	char buf[8] = { 0 };
	pthread_t t;

	pair(&l, &c, &s);
	send(s, "abc", 3, 0);
	pthread_create(&t, NULL, later_send, &s);
	long r = recv(c, buf, 6, MSG_WAITALL);

	printf("recv_waitall: %s %s\n", rv(r), buf);
	pthread_join(t, NULL);
	close(c);
	close(s);
	close(l);
}

static void *blocked_send(void *arg)
{
	struct timeval tv = { 3, 0 };
	int fd = *(int *)arg;
	char b = 'x';

	/* A send that waits for room; 3 s at most (SO_SNDTIMEO). */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	*(int *)arg = (int)send(fd, &b, 1, 0);
	return NULL;
}

/* A send blocked on a full buffer returns once another thread raises
 * SO_SNDBUF (Linux sk_setsockopt(): sk_write_space() wakes it), as
 * gVisor's SendUnblocksOnSendBufferIncrease checks; the peer never reads. */
static void check_sndbuf_raise(void)
{
	int l, c, s, sz = 16384, arg;
	char buf[4096];
	pthread_t t;

	memset(buf, 'y', sizeof(buf));
	pair(&l, &c, &s);
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 100000 && send(c, buf, sizeof(buf), 0) > 0; i++)
		usleep(i < 200 ? 1000 : 0);
	printf("sndbuf_raise_full: %s\n", errno == EAGAIN ? "EAGAIN" : strerror(errno));
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);
	arg = c;
	pthread_create(&t, NULL, blocked_send, &arg);
	usleep(100000);
	sz = 1 << 20;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	pthread_join(t, NULL);
	printf("sndbuf_raise_wakes_send: %d\n", arg);
	close(c);
	close(s);
	close(l);
}

static void check_timeout(void)
{
	int l, c, s;
	struct timeval tv = { 0, 100000 };
	struct timespec t0, t1;
	char buf[8];
	long ms;

	pair(&l, &c, &s);
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("recv_rcvtimeo: %s\n", rv(recv(c, buf, sizeof(buf), 0)));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	printf("recv_rcvtimeo_waited_90_1000ms: %d\n", ms >= 90 && ms < 1000);
	close(c);
	close(s);
	close(l);
}

/* Linux: a negative tv_sec is a zero timeout (a blocking socket's recv
 * returns EAGAIN at once), shown as {0, 0}; tv_usec out of range is EDOM. */
static void check_timeout_odd(void)
{
	int l, c, s;
	struct timeval tv = { -1, 0 }, got = { 7, 7 }, bad = { 1, 1000000 };
	struct timespec t0, t1;
	socklen_t len = sizeof(got);
	char buf[8];
	long r, ms;

	pair(&l, &c, &s);
	printf("rcvtimeo_negative_set: %s\n", rv(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))));
	r = getsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &got, &len);
	printf("rcvtimeo_negative_get: %s %ld %ld\n", rv(r), (long)got.tv_sec, (long)got.tv_usec);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = recv(c, buf, sizeof(buf), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	printf("recv_rcvtimeo_negative: %s at_once %d\n", rv(r), ms < 50);
	printf("rcvtimeo_usec_1e6: %s\n", rv(setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof(bad))));
	close(c);
	close(s);
	close(l);
}

/* Odd corners of connecting, as Linux answers them. */
static void check_connect_corners(void)
{
	struct sockaddr_in a = lo(0), me;
	struct sockaddr_in6 un = { .sin6_family = AF_UNSPEC };
	socklen_t ml = sizeof(me);
	int fd, l, c, s;
	char buf[8] = "abcdefg";
	long r;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	printf("send_never_connected: %s\n", rv(send(fd, "x", 1, MSG_NOSIGNAL)));
	printf("recv_never_connected: %s\n", rv(recv(fd, buf, 1, MSG_DONTWAIT)));
	printf("recv0_never_connected: %s\n", rv(recv(fd, buf, 0, 0)));
	a = lo(0);
	printf("connect_port_0: %s\n", rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	close(fd);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	a = lo(closed_port());
	printf("connect_refused: %s\n", rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	r = getsockname(fd, (struct sockaddr *)&me, &ml);
	printf("name_after_refused: %s port_kept %d\n", rv(r), me.sin_port != 0);
	printf("recv_after_refused: %s\n", rv(recv(fd, buf, 1, MSG_DONTWAIT)));
	close(fd);

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	a = lo(9);
	connect(fd, (struct sockaddr *)&a, sizeof(a));
	printf("udp_disconnect: %s\n", rv(connect(fd, (struct sockaddr *)&un, sizeof(un))));
	ml = sizeof(me);
	printf("udp_peer_after_disconnect: %s\n", rv(getpeername(fd, (struct sockaddr *)&me, &ml)));
	close(fd);

	pair(&l, &c, &s);
	send(s, "hello", 5, 0);
	poll1(c, POLLIN, 2000);
	memset(buf, 0, sizeof(buf));
	r = recv(c, buf, 3, MSG_TRUNC);
	printf("tcp_recv_trunc: %s buf_untouched %d\n", rv(r), buf[0] == 0);
	r = recv(c, buf, sizeof(buf), 0);
	printf("tcp_recv_after_trunc: %s %.2s\n", rv(r), buf);
	close(c);
	close(s);
	close(l);
}

/* Interface requests on a TCP socket: answered as on any socket. */
static void check_dev_ioctls(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct ifreq ifr;
	struct ifconf ifc;
	char buf[1024];
	long r;

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	/* (Not IFF_UP: the Sluice run has lo down in its namespace.) */
	printf("siocgifflags_lo: %s loopback %d\n", rv(r), !!(ifr.ifr_flags & IFF_LOOPBACK));
	r = ioctl(fd, SIOCGIFINDEX, &ifr);
	printf("siocgifindex_lo: %s %d\n", rv(r), ifr.ifr_ifindex);
	r = ioctl(fd, SIOCGIFMTU, &ifr);
	printf("siocgifmtu_lo: %s %d\n", rv(r), ifr.ifr_mtu);
	ifc.ifc_len = sizeof(buf);
	ifc.ifc_buf = buf;
	r = ioctl(fd, SIOCGIFCONF, &ifc);
	printf("siocgifconf: %s\n", rv(r));
	strcpy(ifr.ifr_name, "nosuch0");
	printf("siocgifflags_missing: %s\n", rv(ioctl(fd, SIOCGIFFLAGS, &ifr)));
	printf("unknown_ioctl: %s\n", rv(ioctl(fd, 0x89ef + 0x10000, &ifr)));
	close(fd);
	{
		int l, c, sv, v = 7, u = socket(AF_INET, SOCK_DGRAM, 0);

		pair(&l, &c, &sv);
		r = ioctl(c, SIOCOUTQ, &v);
		printf("siocoutq_idle: %s %d\n", rv(r), v);
		v = 7;
		r = ioctl(c, SIOCOUTQNSD, &v);
		printf("siocoutqnsd_idle: %s %d\n", rv(r), v);
		v = 7;
		r = ioctl(c, SIOCATMARK, &v);
		printf("siocatmark: %s %d\n", rv(r), v);
		printf("siocoutq_listener: %s\n", rv(ioctl(l, SIOCOUTQ, &v)));
		v = 7;
		r = ioctl(l, SIOCATMARK, &v);	/* tcp_ioctl(): no listener check */
		printf("siocatmark_listener: %s %d\n", rv(r), v);
		v = 7;
		r = ioctl(u, SIOCOUTQ, &v);
		printf("siocoutq_udp: %s %d\n", rv(r), v);
		close(u);
		close(c);
		close(sv);
		close(l);
	}
}

/* IP_TTL and IP_TOS on TCP and UDP sockets. */
static void check_ttl_tos(void)
{
	int t = socket(AF_INET, SOCK_STREAM, 0), u = socket(AF_INET, SOCK_DGRAM, 0), v;
	socklen_t l = sizeof(v);
	unsigned char byte = 9;
	struct stat before, after;

	fstat(t, &before);

	getsockopt(t, IPPROTO_IP, IP_TTL, &v, &l);
	printf("ttl_default: %d\n", v);
	v = 7;
	printf("ttl_set7: %s\n", rv(setsockopt(t, IPPROTO_IP, IP_TTL, &v, sizeof(v))));
	l = sizeof(v);
	getsockopt(t, IPPROTO_IP, IP_TTL, &v, &l);
	printf("ttl_get: %d\n", v);
	v = 0;
	printf("ttl_set0: %s\n", rv(setsockopt(t, IPPROTO_IP, IP_TTL, &v, sizeof(v))));
	v = 256;
	printf("ttl_set256: %s\n", rv(setsockopt(t, IPPROTO_IP, IP_TTL, &v, sizeof(v))));
	printf("ttl_set_byte: %s\n", rv(setsockopt(u, IPPROTO_IP, IP_TTL, &byte, 1)));
	l = sizeof(v);
	getsockopt(u, IPPROTO_IP, IP_TTL, &v, &l);
	printf("ttl_get_byte: %d\n", v);
	v = -1;
	setsockopt(t, IPPROTO_IP, IP_TTL, &v, sizeof(v));
	l = sizeof(v);
	getsockopt(t, IPPROTO_IP, IP_TTL, &v, &l);
	printf("ttl_back_to_default: %d\n", v);
	v = 0x13;
	printf("tos_set_tcp: %s\n", rv(setsockopt(t, IPPROTO_IP, IP_TOS, &v, sizeof(v))));
	l = sizeof(v);
	getsockopt(t, IPPROTO_IP, IP_TOS, &v, &l);
	printf("tos_get_tcp: 0x%x\n", v);
	v = 0x13;
	setsockopt(u, IPPROTO_IP, IP_TOS, &v, sizeof(v));
	l = sizeof(v);
	getsockopt(u, IPPROTO_IP, IP_TOS, &v, &l);
	printf("tos_get_udp: 0x%x\n", v);
	/* Handled where the socket is: it did not move to the kernel. */
	fstat(t, &after);
	printf("ttl_tos_kept_the_socket: %d\n", (before.st_mode & S_IFMT) == (after.st_mode & S_IFMT));
	close(t);
	close(u);
}

static void check_shutdown(void)
{
	int l, c, s;
	char buf[8] = { 0 };
	long r;

	pair(&l, &c, &s);
	printf("shutdown_wr: %s\n", rv(shutdown(c, SHUT_WR)));
	printf("peer_poll_after_shut_wr: %s\n", evs(poll1(s, POLLIN | POLLRDHUP, 2000)));
	printf("peer_recv_eof: %s\n", rv(recv(s, buf, sizeof(buf), 0)));
	printf("send_after_shut_wr: %s\n", rv(send(c, "x", 1, MSG_NOSIGNAL)));
	printf("peer_still_sends: %s\n", rv(send(s, "yz", 2, 0)));
	poll1(c, POLLIN, 2000);
	r = recv(c, buf, sizeof(buf), 0);
	printf("recv_after_shut_wr: %s %s\n", rv(r), buf);
	printf("shutdown_bad_how: %s\n", rv(shutdown(c, 7)));
	close(c);
	close(s);
	close(l);
}

static void *accept_blocked(void *arg)
{
	int l = *(int *)arg, r = accept(l, NULL, NULL);

	return (void *)(long)(r < 0 ? -errno : r);
}

/*
 * Linux (inet_shutdown()): a listener shut for reading stops listening
 * and wakes a blocked accept() (EINVAL); shut for writing, nothing
 * happens; a TCP socket neither listening nor connected is ENOTCONN, and
 * so is an unconnected UDP socket, while a connected one succeeds.
 */
static void check_shutdown_unconnected(void)
{
	struct sockaddr_in a;
	pthread_t t[3];
	void *res;
	uint16_t port;
	int l, c, u;

	l = listener(&port);
	printf("listener_shutdown_wr: %s\n", rv(shutdown(l, SHUT_WR)));
	/* Three of them: accept()s wait as exclusive waiters, woken one at
	 * a time, and each that fails for good wakes the next. */
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, accept_blocked, &l);
	usleep(100000);
	printf("listener_shutdown_rd: %s\n", rv(shutdown(l, SHUT_RD)));
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], &res);
		errno = (int)-(long)res;
		printf("blocked_accept_after_shutdown %d: %s\n", i,
		       rv((long)res < 0 ? -1 : (long)res));
	}
	printf("accept_after_shutdown: %s\n", rv(accept(l, NULL, NULL)));
	c = socket(AF_INET, SOCK_STREAM, 0);
	a = lo(port);
	printf("connect_to_shut_listener: %s\n", rv(connect(c, (struct sockaddr *)&a, sizeof(a))));
	close(c);
	close(l);

	c = socket(AF_INET, SOCK_STREAM, 0);
	a = lo(0);
	bind(c, (struct sockaddr *)&a, sizeof(a));
	printf("bound_tcp_shutdown: %s\n", rv(shutdown(c, SHUT_RDWR)));
	close(c);

	u = socket(AF_INET, SOCK_DGRAM, 0);
	printf("unconnected_udp_shutdown: %s\n", rv(shutdown(u, SHUT_RDWR)));
	a = lo(9);
	connect(u, (struct sockaddr *)&a, sizeof(a));
	printf("connected_udp_shutdown: %s\n", rv(shutdown(u, SHUT_WR)));
	close(u);
}

/*
 * A call that succeeds leaves errno as it was (the first socket() of a
 * process, which attaches a Sluice stack, included).
 */
static void check_errno_kept(void)
{
	struct sockaddr_in a = lo(0);
	socklen_t al = sizeof(a);
	int fd, one = 1, kept = 1;

	errno = EDOM;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	kept &= fd >= 0 && errno == EDOM;
	printf("first_socket_keeps_errno: %d\n", fd >= 0 && errno == EDOM);
	errno = EDOM;
	kept &= !setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) && errno == EDOM;
	errno = EDOM;
	kept &= !bind(fd, (struct sockaddr *)&a, sizeof(a)) && errno == EDOM;
	errno = EDOM;
	kept &= !getsockname(fd, (struct sockaddr *)&a, &al) && errno == EDOM;
	errno = EDOM;
	kept &= !listen(fd, 4) && errno == EDOM;
	errno = EDOM;
	kept &= poll1(fd, POLLIN, 0) == 0 && errno == EDOM;
	errno = EDOM;
	kept &= !close(fd) && errno == EDOM;
	printf("successful_calls_keep_errno: %d\n", kept);
}

/* The same for the data path, epoll, select, dup and fcntl. */
static void check_errno_kept_more(void)
{
	int l, c, s, ep, d, kept = 1, v;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	socklen_t vl = sizeof(v);
	fd_set r;
	struct timeval tv = { 0, 0 };
	char buf[4];

	pair(&l, &c, &s);
#define KEEP(call, ok) do { errno = EDOM; kept &= (call) ok && errno == EDOM; } while (0)
	KEEP(send(c, "ab", 2, 0), == 2);
	poll1(s, POLLIN, 2000);
	KEEP(recv(s, buf, 1, 0), == 1);
	KEEP(read(s, buf, 1), == 1);
	KEEP(write(s, "z", 1), == 1);
	KEEP(getsockopt(c, SOL_SOCKET, SO_ERROR, &v, &vl), == 0);
	KEEP(fcntl(c, F_GETFL), >= 0);
	KEEP((d = dup(c)), >= 0);
	KEEP(close(d), == 0);
	KEEP((ep = epoll_create1(0)), >= 0);
	KEEP(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev), == 0);
	KEEP(epoll_wait(ep, &out, 1, 1000), == 1);
	FD_ZERO(&r);
	FD_SET(c, &r);
	KEEP(select(c + 1, &r, NULL, NULL, &tv), == 1);
	KEEP(close(ep), == 0);
#undef KEEP
	printf("data_calls_keep_errno: %d\n", kept);
	close(c);
	close(s);
	close(l);
}

/*
 * getsockopt lengths as Linux: a short buffer gets the value cut to it, a
 * negative length is EINVAL; SO_RCVBUF/SO_SNDBUF are capped (no wrapped
 * sizes); TCP_INFO's state is Linux's number.
 */
static void check_option_lengths(void)
{
	int l, c, s, fd = socket(AF_INET, SOCK_STREAM, 0), v, big = 0x7fffffff, neg = -1;
	unsigned char b[8];
	struct tcp_info ti;
	socklen_t len;
	long r;

	memset(b, 0xee, sizeof(b));
	len = 1;
	r = getsockopt(fd, SOL_SOCKET, SO_TYPE, b, &len);
	printf("so_type_len1: %s len %u byte %d next %d\n", rv(r), len, b[0], b[1]);
	len = 2;
	r = getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, b, &len);
	printf("nodelay_len2: %s len %u\n", rv(r), len);
	len = 0;
	r = getsockopt(fd, SOL_SOCKET, SO_TYPE, b, &len);
	printf("so_type_len0: %s len %u\n", rv(r), len);
	len = (socklen_t)-1;
	r = getsockopt(fd, SOL_SOCKET, SO_TYPE, b, &len);
	printf("so_type_len_negative: %s\n", rv(r));
	len = 4;
	r = getsockopt(fd, SOL_SOCKET, SO_LINGER, b, &len);
	printf("linger_len4: %s len %u\n", rv(r), len);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	len = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len);
	printf("rcvbuf_int_max: %d\n", v);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &neg, sizeof(neg));
	len = sizeof(v);
	getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len);
	printf("sndbuf_minus_one: %d\n", v);
	len = sizeof(ti);
	memset(&ti, 0, sizeof(ti));
	getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
	printf("tcp_info_state_new: %d\n", ti.tcpi_state);
	len = 8;
	r = getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
	printf("tcp_info_len8: %s len %u\n", rv(r), len);
	close(fd);
	/* SO_BINDTODEVICE with a name shorter than an int ("lo" and its
	 * NUL, strlen + 1 as programs pass it), and "" that unbinds: the
	 * option sets a fresh socket up for its bind (issue 15 item 1). */
	for (int i = 0; i < 2; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		r = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, i ? "" : "lo", i ? 0 : 3);
		printf("bindtodevice_%s: %s\n", i ? "empty" : "lo_len3", rv(r));
		close(fd);
	}
	pair(&l, &c, &s);
	len = sizeof(ti);
	getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len);
	printf("tcp_info_state_connected: %d\n", ti.tcpi_state);
	close(c);
	close(s);
	close(l);
}

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void check_epipe(void)
{
	int l, c, s, e;
	char buf[8];

	signal(SIGPIPE, on_sigpipe);
	pair(&l, &c, &s);
	close(s);
	poll1(c, POLLIN, 2000);
	printf("recv_eof_after_peer_close: %s\n", rv(recv(c, buf, sizeof(buf), 0)));
	printf("send_after_peer_close: %s\n", rv(send(c, "x", 1, 0)));
	/* The peer answers with a reset: wait for it to arrive. */
	printf("poll_after_reset: %s\n", evs(poll1(c, POLLOUT | POLLIN, 2000)));
	sigpipes = 0;
	e = (int)send(c, "x", 1, 0);
	printf("send_epipe: %s sigpipes %d\n", rv(e), (int)sigpipes);
	e = (int)send(c, "x", 1, MSG_NOSIGNAL);
	printf("send_epipe_nosignal: %s sigpipes %d\n", rv(e), (int)sigpipes);
	signal(SIGPIPE, SIG_DFL);
	{
		struct sockaddr_in p;
		socklen_t pl = sizeof(p);

		printf("getpeername_after_reset: %s\n",
		       rv(getpeername(c, (struct sockaddr *)&p, &pl)));
	}
	close(c);
	close(l);
}

/* More corners: a refused non-blocking connect then read; two listeners
 * with SO_REUSEADDR on one port; poll after shutdown(SHUT_RDWR). */
static void check_more_corners(void)
{
	int fd, one = 1, a1, a2, l, c, s;
	struct sockaddr_in a;
	uint16_t port;
	char buf[4];

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	a = lo(closed_port());
	printf("nb_connect_refused: %s\n", rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	printf("nb_connect_refused_poll: %s\n", evs(poll1(fd, POLLOUT, 2000)));
	printf("read_after_nb_refused: %s\n", rv(read(fd, buf, 1)));
	printf("read_after_nb_refused_again: %s\n", rv(read(fd, buf, 1)));
	/* The next connect reports the failed attempt; the one after tries
	 * again (and is refused again). */
	printf("connect_after_nb_refused: %s\n", rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	printf("connect_after_nb_refused_again: %s\n",
	       rv(connect(fd, (struct sockaddr *)&a, sizeof(a))));
	close(fd);

	a1 = socket(AF_INET, SOCK_STREAM, 0);
	a2 = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(a1, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(a2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a = lo(0);
	bind(a1, (struct sockaddr *)&a, sizeof(a));
	port = port_of(a1);
	a = lo(port);
	printf("reuseaddr_second_bind: %s\n", rv(bind(a2, (struct sockaddr *)&a, sizeof(a))));
	printf("reuseaddr_first_listen: %s\n", rv(listen(a1, 4)));
	printf("reuseaddr_second_listen: %s\n", rv(listen(a2, 4)));
	close(a1);
	close(a2);

	pair(&l, &c, &s);
	shutdown(c, SHUT_RDWR);
	printf("poll_after_shut_rdwr: %s\n", evs(poll1(c, POLLIN | POLLOUT | POLLRDHUP, 1000)));
	close(c);
	close(s);
	close(l);
}

/* A server restarts its listener while the connection it accepted is
 * still closing (the server closed first): SO_REUSEADDR lets it bind. */
static void check_rebind(void)
{
	int l, c, s, one = 1, l2;
	uint16_t port;
	struct sockaddr_in a;
	char b;

	pair(&l, &c, &s);
	port = port_of(l);
	close(s);			/* the server closes first */
	poll1(c, POLLIN, 2000);
	recv(c, &b, 1, 0);		/* the client sees it, keeps its end */
	close(l);
	l2 = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a = lo(port);
	printf("rebind_while_child_closes: %s\n", rv(bind(l2, (struct sockaddr *)&a, sizeof(a))));
	printf("relisten: %s\n", rv(listen(l2, 4)));
	close(l2);
	close(c);
}

/*
 * Ports held both ways (issue 15): an AF_INET socket (the stack's under
 * sluice run, with its kernel twin) and an AF_INET6 one on :: (the
 * stack's too since issue 20, with an AF_INET6 twin) on one port, either
 * first, with no option, SO_REUSEADDR or
 * SO_REUSEPORT, the first listening or not: the second's bind() and
 * listen() answer as between two kernel sockets.
 */
static int any_sock(int fam, int opt, uint16_t port)
{
	int fd = socket(fam, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	if (opt)
		setsockopt(fd, SOL_SOCKET, opt == 1 ? SO_REUSEADDR : SO_REUSEPORT, &one, sizeof(one));
	if (fam == AF_INET ? bind(fd, (struct sockaddr *)&a4, sizeof(a4)) :
			     bind(fd, (struct sockaddr *)&a6, sizeof(a6))) {
		printf("bind %s ", rv(-1));
		close(fd);
		return -1;
	}
	return fd;
}

static uint16_t any_port(int fd)
{
	struct sockaddr_in6 a;
	socklen_t l = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &l))
		return 0;
	return ntohs(a.sin6_port);	/* the same place in sockaddr_in */
}

static void check_port_rows(void)
{
	static const char *const opts[] = { "none", "reuseaddr", "reuseport" };

	for (int opt = 0; opt < 3; opt++)
		for (int lis = 0; lis < 2; lis++)
			for (int v6first = 0; v6first < 2; v6first++) {
				int f1 = v6first ? AF_INET6 : AF_INET;
				int f2 = v6first ? AF_INET : AF_INET6;
				int a, b;

				printf("ports_%s_first_%s_%s: ", v6first ? "v6" : "v4", opts[opt],
				       lis ? "listening" : "bound");
				a = any_sock(f1, opt, 0);
				if (a < 0) {
					printf("\n");
					continue;
				}
				if (lis)
					listen(a, 4);
				b = any_sock(f2, opt, any_port(a));
				if (b >= 0) {
					printf("bind 0 listen %s", rv(listen(b, 4)));
					close(b);
				}
				printf("\n");
				close(a);
			}
}

static void check_connected_again(void)
{
	int l, c, s;
	struct sockaddr_in a;
	uint16_t port;

	pair(&l, &c, &s);
	port = port_of(l);
	a = lo(port);
	printf("connect_again: %s\n", rv(connect(c, (struct sockaddr *)&a, sizeof(a))));
	close(c);
	close(s);
	close(l);
}

static void check_accept4(void)
{
	int l, c, s;
	uint16_t port;
	struct sockaddr_in a, p;
	socklen_t pl = sizeof(p);

	l = listener(&port);
	a = lo(port);
	c = socket(AF_INET, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&a, sizeof(a));
	s = accept4(l, (struct sockaddr *)&p, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
	printf("accept4: %d nonblock %d cloexec %d peer_len %u peer_is_client %d\n", s >= 0,
	       (fcntl(s, F_GETFL) & O_NONBLOCK) != 0, (fcntl(s, F_GETFD) & FD_CLOEXEC) != 0, pl,
	       ntohs(p.sin_port) == port_of(c));
	printf("accept4_bad_flags: %s\n", rv(accept4(l, NULL, NULL, 0x1)));
	close(c);
	close(s);
	close(l);
}

static void check_dup(void)
{
	int l, c, s, d, d2;
	char buf[8] = { 0 };
	long r;

	pair(&l, &c, &s);
	d = dup(c);
	printf("dup: %d\n", d >= 0);
	printf("close_orig: %s\n", rv(close(c)));
	printf("send_on_dup: %s\n", rv(send(d, "du", 2, 0)));
	poll1(s, POLLIN, 2000);
	r = recv(s, buf, sizeof(buf), 0);
	printf("peer_got: %s %s\n", rv(r), buf);
	printf("peer_no_eof_yet: %s\n", evs(poll1(s, POLLIN, 50)));
	d2 = fcntl(d, F_DUPFD_CLOEXEC, 100);
	printf("f_dupfd_cloexec: %d %d\n", d2 >= 100, (fcntl(d2, F_GETFD) & FD_CLOEXEC) != 0);
	printf("dup2_onto_self: %d\n", dup2(d2, d2) == d2);
	close(d);
	close(d2);
	printf("peer_eof_after_last_close: %s\n", evs(poll1(s, POLLIN, 2000)));
	close(s);
	close(l);
}

static void check_fork(void)
{
	int l, c, s, st;
	char buf[8] = { 0 };
	pid_t pid;

	pair(&l, &c, &s);
	fflush(stdout);
	pid = fork();
	if (!pid) {
		send(s, "child", 5, 0);
		close(s);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	poll1(c, POLLIN, 2000);
	long r = recv(c, buf, sizeof(buf), 0);

	printf("fork_child_sent: %s %s\n", rv(r), buf);
	printf("fork_no_eof_while_parent_holds: %s\n", rv(recv(c, buf, sizeof(buf), MSG_DONTWAIT)));
	close(s);
	poll1(c, POLLIN, 2000);
	printf("fork_eof_after_parent_close: %s\n", rv(recv(c, buf, sizeof(buf), 0)));
	close(c);
	close(l);
}

static void check_select(void)
{
	int l, c, s, n;
	fd_set r, w;
	struct timeval tv = { 0, 0 };

	pair(&l, &c, &s);
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(c, &r);
	FD_SET(c, &w);
	FD_SET(0, &r);	/* a kernel fd in the same set (stdin: /dev/null) */
	n = select(c + 1, &r, &w, NULL, &tv);
	printf("select_fresh: %d r %d w %d stdin %d\n", n, FD_ISSET(c, &r), FD_ISSET(c, &w),
	       FD_ISSET(0, &r));
	send(s, "x", 1, 0);
	poll1(c, POLLIN, 2000);
	FD_ZERO(&r);
	FD_SET(c, &r);
	tv.tv_sec = 1;
	n = select(c + 1, &r, NULL, NULL, &tv);
	printf("select_readable: %d r %d\n", n, FD_ISSET(c, &r));
	close(c);
	close(s);
	close(l);
}

static void check_epoll(void)
{
	int l, c, s, ep, n, pfd[2];
	struct epoll_event ev = { 0 }, out[4];
	char buf[8];

	pair(&l, &c, &s);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (pipe(pfd))
		return;
	ev.events = EPOLLIN;
	ev.data.u32 = 1;
	printf("epoll_add: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev)));
	printf("epoll_add_again: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev)));
	ev.data.u32 = 2;
	epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev);
	printf("epoll_wait_empty: %s\n", rv(epoll_wait(ep, out, 4, 0)));
	send(s, "x", 1, 0);
	n = epoll_wait(ep, out, 4, 2000);
	printf("epoll_wait_data: %d data %u events %s\n", n, n > 0 ? out[0].data.u32 : 0,
	       n > 0 ? evs((short)out[0].events) : "-");
	printf("epoll_level_again: %d\n", epoll_wait(ep, out, 4, 0));
	{
		struct timespec zero = { 0, 0 }, bad = { 0, 2000000000L };

		printf("epoll_pwait2_level: %d\n", epoll_pwait2(ep, out, 4, &zero, NULL));
		printf("epoll_pwait2_bad_timespec: %s\n",
		       rv(epoll_pwait2(ep, out, 4, &bad, NULL)));
	}
	if (write(pfd[1], "p", 1) != 1)
		return;
	n = epoll_wait(ep, out, 4, 1000);
	printf("epoll_mixed: %d\n", n);
	if (read(pfd[0], buf, 1) != 1)
		return;
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u32 = 1;
	printf("epoll_mod_et: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev)));
	n = epoll_wait(ep, out, 4, 1000);
	printf("epoll_et_first: %d\n", n);
	printf("epoll_et_again: %d\n", epoll_wait(ep, out, 4, 0));
	send(s, "y", 1, 0);
	n = epoll_wait(ep, out, 4, 2000);
	printf("epoll_et_new_data: %d\n", n);
	printf("epoll_del: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL)));
	printf("epoll_del_again: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL)));
	printf("epoll_after_del: %d\n", epoll_wait(ep, out, 4, 0));
	/* One-shot: once, then nothing until EPOLL_CTL_MOD arms it again. */
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u32 = 3;
	printf("epoll_add_oneshot: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev)));
	printf("epoll_oneshot_first: %d\n", epoll_wait(ep, out, 4, 1000));
	printf("epoll_oneshot_again: %d\n", epoll_wait(ep, out, 4, 0));
	send(s, "z", 1, 0);
	printf("epoll_oneshot_new_data: %d\n", epoll_wait(ep, out, 4, 100));
	printf("epoll_oneshot_mod: %s\n", rv(epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev)));
	printf("epoll_oneshot_rearmed: %d\n", epoll_wait(ep, out, 4, 1000));
	epoll_ctl(ep, EPOLL_CTL_DEL, c, NULL);
	/* Level-triggered, two ready, one event a call: each gets its turn. */
	{
		int l2, c2, s2;
		char order[8] = "";

		pair(&l2, &c2, &s2);
		ev.events = EPOLLIN;
		ev.data.u32 = 'A';
		epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
		ev.data.u32 = 'B';
		epoll_ctl(ep, EPOLL_CTL_ADD, c2, &ev);
		send(s2, "w", 1, 0);
		for (int i = 0; i < 50 && epoll_wait(ep, out, 4, 100) < 2; i++)
			;	/* both readable (c has data left from above) */
		for (int i = 0; i < 4; i++)
			if (epoll_wait(ep, out, 1, 1000) == 1)
				order[i] = (char)out[0].data.u32;
		printf("epoll_level_turns: %s\n", order);
		/* A socket closed while in the set leaves it. */
		close(c2);
		n = epoll_wait(ep, out, 4, 0);
		printf("epoll_closed_left: %d data %c\n", n, n == 1 ? (char)out[0].data.u32 : '-');
		close(s2);
		close(l2);
	}
	close(ep);
	close(pfd[0]);
	close(pfd[1]);
	close(c);
	close(s);
	close(l);
}

static void check_udp(void)
{
	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = lo(0), from;
	socklen_t fl = sizeof(from);
	char big[100], buf[16];
	struct msghdr m = { 0 };
	struct iovec io = { buf, 10 };
	long r;

	memset(big, 'u', sizeof(big));
	bind(a, (struct sockaddr *)&sa, sizeof(sa));
	sa = lo(port_of(a));
	printf("udp_recv_empty: %s\n", rv(recv(a, buf, sizeof(buf), MSG_DONTWAIT)));
	printf("udp_send_unconnected_no_dest: %s\n", rv(send(b, "x", 1, 0)));
	printf("udp_sendto: %s\n", rv(sendto(b, "hello", 5, 0, (struct sockaddr *)&sa, sizeof(sa))));
	poll1(a, POLLIN, 2000);
	memset(buf, 0, sizeof(buf));
	r = recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	printf("udp_recvfrom: %s %s from_is_b %d len %u\n", rv(r), buf,
	       ntohs(from.sin_port) == port_of(b), fl);
	sendto(b, big, sizeof(big), 0, (struct sockaddr *)&sa, sizeof(sa));
	poll1(a, POLLIN, 2000);
	m.msg_iov = &io;
	m.msg_iovlen = 1;
	r = recvmsg(a, &m, 0);
	printf("udp_recvmsg_trunc: %s trunc %d\n", rv(r), (m.msg_flags & MSG_TRUNC) != 0);
	printf("udp_connect: %s\n", rv(connect(b, (struct sockaddr *)&sa, sizeof(sa))));
	printf("udp_send_connected: %s\n", rv(send(b, "abc", 3, 0)));
	poll1(a, POLLIN, 2000);
	printf("udp_recv: %s\n", rv(recv(a, buf, sizeof(buf), 0)));
	{
		struct mmsghdr mv[3];
		struct iovec iv[3];
		char mb[3][8];

		memset(mv, 0, sizeof(mv));
		for (int i = 0; i < 3; i++) {
			iv[i].iov_base = mb[i];
			iv[i].iov_len = sizeof(mb[i]);
			mv[i].msg_hdr.msg_iov = &iv[i];
			mv[i].msg_hdr.msg_iovlen = 1;
		}
		memcpy(mb[0], "one", 3);
		memcpy(mb[1], "two22", 5);
		iv[0].iov_len = 3;
		iv[1].iov_len = 5;
		r = sendmmsg(b, mv, 2, 0);
		printf("udp_sendmmsg: %s lens %u %u\n", rv(r), mv[0].msg_len, mv[1].msg_len);
		poll1(a, POLLIN, 2000);
		for (int i = 0; i < 50; i++) {	/* both queued (the kernel's may lag) */
			int q = 0;

			if (recv(a, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT) > 0 &&
			    !ioctl(a, FIONREAD, &q) && q > 0)
				break;
			usleep(2000);
		}
		usleep(20000);
		iv[0].iov_len = iv[1].iov_len = 8;
		errno = EDOM;
		r = recvmmsg(a, mv, 3, MSG_WAITFORONE, NULL);
		printf("udp_recvmmsg: %s lens %u %u errno kept %d\n", rv(r), mv[0].msg_len,
		       mv[1].msg_len, r >= 0 && errno == EDOM);
		/* Fewer messages than asked is a success: errno stays as
		 * it was (the library's last sendmsg/recvmsg had set
		 * EAGAIN or EFAULT). */
		iv[0].iov_len = 3;
		mv[1].msg_hdr.msg_iov = NULL;
		errno = EDOM;
		r = sendmmsg(b, mv, 2, 0);
		printf("udp_sendmmsg_second_bad: %s errno kept %d\n", rv(r), r >= 0 && errno == EDOM);
		mv[1].msg_hdr.msg_iov = &iv[1];
		poll1(a, POLLIN, 2000);
		errno = EDOM;
		r = recvmmsg(a, mv, 3, MSG_DONTWAIT, NULL);
		printf("udp_recvmmsg_fewer: %s errno kept %d\n", rv(r), r >= 0 && errno == EDOM);
	{
		struct timespec bad = { 0, 2000000000L };
		struct mmsghdr one;

		memset(&one, 0, sizeof(one));
		printf("recvmmsg_bad_timeout: %s\n", rv(recvmmsg(b, &one, 1, 0, &bad)));
	}
	}
	/* The error queue is empty; reading it never waits, even on a
	 * blocking socket (it hung here). */
	m.msg_flags = 0;
	printf("udp_errqueue_empty_blocking: %s\n", rv(recvmsg(a, &m, MSG_ERRQUEUE)));
	close(a);
	close(b);
}

static void check_nonblock_fill(void)
{
	int l, c, s, got_eagain = 0;
	static char chunk[65536];
	long total = 0, r;

	pair(&l, &c, &s);
	fcntl(c, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 4096; i++) {
		r = send(c, chunk, sizeof(chunk), 0);
		if (r < 0) {
			got_eagain = errno == EAGAIN;
			break;
		}
		total += r;
	}
	printf("nonblock_fill_ends_in_eagain: %d some_sent %d\n", got_eagain, total > 0);
	printf("poll_full: %s\n", evs(poll1(c, POLLOUT, 0)));
	close(c);
	close(s);
	close(l);
}

static void check_sendfile(void)
{
	char path[] = "/tmp/conform-XXXXXX", data[10000], got[6000];
	int f = mkstemp(path), l, c, s;
	off_t off = 100;
	long r, n;

	for (int i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)(i * 7 + i / 251);
	if (f < 0 || write(f, data, sizeof(data)) != (ssize_t)sizeof(data))
		return;
	unlink(path);
	pair(&l, &c, &s);
	r = sendfile(s, f, &off, 5000);
	printf("sendfile_offset: %s off %ld\n", rv(r), (long)off);
	n = recv(c, got, 5000, MSG_WAITALL);
	printf("sendfile_offset_data: %ld same %d\n", n, !memcmp(got, data + 100, 5000));
	lseek(f, 0, SEEK_SET);
	r = sendfile(s, f, NULL, 10);
	printf("sendfile_pos: %s pos %ld\n", rv(r), (long)lseek(f, 0, SEEK_CUR));
	n = recv(c, got, 10, MSG_WAITALL);
	printf("sendfile_pos_data: %ld same %d\n", n, !memcmp(got, data, 10));
	close(f);
	close(c);
	close(s);
	close(l);
}

/*
 * File calls on a socket (issue 24, item 7): no position, fstat says
 * socket, splice and sendfile move the socket's bytes through a pipe,
 * tee/vmsplice/copy_file_range refuse it.  And a raw system call, which
 * no library sees, fails on a socket: it never reads or writes the bytes
 * of whatever file stands behind the fd.
 */
static void check_file_calls(void)
{
	char path[] = "/tmp/conform-XXXXXX", buf[64] = "";
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct stat st, st2, ust;
	int l, c, s, p[2], f = mkstemp(path), u, un, d;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	off64_t off = 0;
	long r;

	if (f < 0 || pipe(p))
		return;
	unlink(path);
	pair(&l, &c, &s);
	u = socket(AF_INET, SOCK_STREAM, 0);
	d = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	printf("file_lseek: %s\n", rv(lseek(s, 0, SEEK_CUR)));
	printf("file_pread: %s\n", rv(pread(s, buf, 4, 0)));
	printf("file_pwrite: %s\n", rv(pwrite(s, "x", 1, 0)));
	printf("file_preadv: %s\n", rv(preadv(s, &iov, 1, 0)));
	printf("file_pwritev: %s\n", rv(pwritev(s, &iov, 1, 0)));
	printf("file_preadv2_at_0: %s\n", rv(preadv2(s, &iov, 1, 0, 0)));
	send(c, "hello", 5, 0);
	poll1(s, POLLIN, 1000);
	r = preadv2(s, &iov, 1, -1, 0);
	printf("file_preadv2_here: %s %.5s\n", rv(r), buf);

	/* fstat: a socket, as a kernel socket (a UNIX one) shows it. */
	un = socket(AF_UNIX, SOCK_DGRAM, 0);
	fstat(un, &ust);
	r = fstat(s, &st);
	printf("file_fstat: %s sock %d perm %o nlink %lu size %ld blksize %ld same_dev %d\n",
	       rv(r), S_ISSOCK(st.st_mode), st.st_mode & 07777, (unsigned long)st.st_nlink,
	       (long)st.st_size, (long)st.st_blksize, st.st_dev == ust.st_dev);
	r = fstatat(c, "", &st2, AT_EMPTY_PATH);
	printf("file_fstatat_empty: %s sock %d other_ino %d\n", rv(r), S_ISSOCK(st2.st_mode),
	       st2.st_ino != st.st_ino);
	close(un);

	/* splice: socket -> pipe -> socket. */
	send(c, "splice-data", 11, 0);
	poll1(s, POLLIN, 1000);
	r = splice(s, NULL, p[1], NULL, 100, 0);
	memset(buf, 0, sizeof(buf));
	printf("splice_sock_to_pipe: %s pipe %s %.11s\n", rv(r), rv(read(p[0], buf, sizeof(buf))),
	       buf);
	/* The socket's own O_NONBLOCK decides (SPLICE_F_NONBLOCK is the pipe's). */
	fcntl(s, F_SETFL, O_NONBLOCK);
	printf("splice_sock_empty_nonblock: %s\n", rv(splice(s, NULL, p[1], NULL, 100, 0)));
	fcntl(s, F_SETFL, 0);
	printf("splice_pipe_empty_nonblock: %s\n",
	       rv(splice(p[0], NULL, s, NULL, 100, SPLICE_F_NONBLOCK)));
	r = write(p[1], "back", 4);
	r = splice(p[0], NULL, s, NULL, 100, 0);
	memset(buf, 0, sizeof(buf));
	printf("splice_pipe_to_sock: %s peer %s %.4s\n", rv(r), rv(recv(c, buf, 4, MSG_WAITALL)),
	       buf);
	printf("splice_offset: %s\n", rv(splice(s, &off, p[1], NULL, 10, 0)));
	printf("splice_to_file: %s\n", rv(splice(s, NULL, f, NULL, 10, 0)));
	printf("splice_unconnected: %s\n", rv(splice(u, NULL, p[1], NULL, 10, 0)));
	printf("tee: %s\n", rv(tee(s, p[1], 10, 0)));
	printf("vmsplice: %s\n", rv(vmsplice(s, &iov, 1, 0)));
	printf("copy_file_range_from: %s\n", rv(copy_file_range(s, NULL, f, NULL, 10, 0)));
	printf("copy_file_range_to: %s\n", rv(copy_file_range(f, NULL, s, NULL, 10, 0)));

	/* sendfile from a socket: into a pipe; not into a file; no offset. */
	send(c, "sendfile", 8, 0);
	poll1(s, POLLIN, 1000);
	printf("sendfile_from_sock_to_file: %s\n", rv(sendfile(f, s, NULL, 8)));
	printf("sendfile_from_sock_offset: %s\n", rv(sendfile(p[1], s, (off_t *)&off, 8)));
	r = sendfile(p[1], s, NULL, 8);
	memset(buf, 0, sizeof(buf));
	printf("sendfile_from_sock_to_pipe: %s pipe %s %.8s\n", rv(r),
	       rv(read(p[0], buf, sizeof(buf))), buf);
	/* Between two sockets: Linux takes only a file or a block device as
	 * the input of a sendfile to anything but a pipe (EINVAL), and the
	 * bytes stay queued. */
	send(c, "ss", 2, 0);
	poll1(s, POLLIN, 1000);
	printf("sendfile_sock_to_sock: %s\n", rv(sendfile(c, s, NULL, 2)));
	memset(buf, 0, sizeof(buf));
	r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
	printf("sendfile_sock_to_sock_left: %s %.2s\n", rv(r), buf);
	printf("mmap_udp: %s\n", mmap(NULL, 4096, PROT_READ, MAP_SHARED, d, 0) == MAP_FAILED ?
	       rv(-1) : "mapped");
	/* A pipe's and a memfd's requests (the placeholder is a FIFO). */
	printf("fcntl_getpipe_sz: %s\n", rv(fcntl(s, F_GETPIPE_SZ)));
	printf("fcntl_setpipe_sz: %s\n", rv(fcntl(s, F_SETPIPE_SZ, 4096)));
	printf("fcntl_get_seals: %s\n", rv(fcntl(s, F_GET_SEALS)));
	printf("fcntl_add_seals: %s\n", rv(fcntl(s, F_ADD_SEALS, F_SEAL_SEAL)));

	/* Raw system calls: an error, whatever the fd stands for. */
	sigaction(SIGPIPE, &ign, &old);
	printf("raw_read_fails: %d\n", syscall(SYS_read, u, buf, sizeof(buf)) < 0);
	printf("raw_write_fails: %d\n", syscall(SYS_write, u, "x", 1) < 0);
	printf("raw_pread_fails: %d\n", syscall(SYS_pread64, u, buf, sizeof(buf), 0) < 0);
	printf("raw_read_udp_fails: %d\n", syscall(SYS_read, d, buf, sizeof(buf)) < 0);
	sigaction(SIGPIPE, &old, NULL);
	close(f);
	close(p[0]);
	close(p[1]);
	close(d);
	close(u);
	close(c);
	close(s);
	close(l);
}

static const char *iopt(int fd, int level, int name)
{
	static char b[4][48];
	static int k;
	char *o = b[k++ & 3];
	socklen_t l = sizeof(int);
	int v = -7;

	if (getsockopt(fd, level, name, &v, &l))
		snprintf(o, 48, "%s", rv(-1));
	else
		snprintf(o, 48, "%d len %u", v, (unsigned int)l);
	return o;
}

static const char *setint(int fd, int level, int name, int v)
{
	return rv(setsockopt(fd, level, name, &v, sizeof(v)));
}

/*
 * Options Linux keeps on a TCP socket (issue 24: ENOPROTOOPT under Sluice
 * before): TCP_CORK and what it holds back, TCP_QUICKACK, TCP_USER_TIMEOUT,
 * TCP_LINGER2, TCP_CONGESTION, TCP_WINDOW_CLAMP, and the SOL_SOCKET flags
 * SO_OOBINLINE, SO_NO_CHECK, SO_DEBUG, SO_DONTROUTE.
 */
static void check_tcp_options(void)
{
	char ca[24], buf[64];
	socklen_t cl = sizeof(ca);
	int l, c, s, n, rmin = 0;
	socklen_t rl = sizeof(rmin);
	struct timespec t0, t1;
	const char *r;
	short ev;

	pair(&l, &c, &s);
	printf("tcp_cork_default: %s\n", iopt(c, IPPROTO_TCP, TCP_CORK));
	r = setint(c, IPPROTO_TCP, TCP_CORK, 1);
	printf("tcp_cork_on: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_CORK));
	n = (int)send(c, "abc", 3, 0);
	ev = poll1(s, POLLIN, 50);
	printf("tcp_cork_holds: sent %d peer %s\n", n, evs(ev));
	r = setint(c, IPPROTO_TCP, TCP_CORK, 0);
	printf("tcp_cork_off: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_CORK));
	ev = poll1(s, POLLIN, 1000);
	printf("tcp_uncork_sends: peer %s got %s\n", evs(ev), rv(recv(s, buf, sizeof(buf), 0)));
	/* Corked and left: the 200 ms ceiling lets the bytes go. */
	setint(c, IPPROTO_TCP, TCP_CORK, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	send(c, "defg", 4, 0);
	ev = poll1(s, POLLIN, 2000);
	printf("recv0_with_data: %s\n", rv(recv(s, buf, 0, 0)));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	n = (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
	printf("tcp_cork_ceiling: peer %s got %s after_150_1000ms %d\n", evs(ev),
	       rv(recv(s, buf, sizeof(buf), 0)), n >= 150 && n <= 1000);
	setint(c, IPPROTO_TCP, TCP_CORK, 0);

	printf("tcp_quickack_default: %s\n", iopt(c, IPPROTO_TCP, TCP_QUICKACK));
	r = setint(c, IPPROTO_TCP, TCP_QUICKACK, 0);
	printf("tcp_quickack_off: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_QUICKACK));
	r = setint(c, IPPROTO_TCP, TCP_QUICKACK, 1);
	printf("tcp_quickack_on: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_QUICKACK));

	printf("tcp_user_timeout_default: %s\n", iopt(c, IPPROTO_TCP, TCP_USER_TIMEOUT));
	r = setint(c, IPPROTO_TCP, TCP_USER_TIMEOUT, -10);
	printf("tcp_user_timeout_negative: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_USER_TIMEOUT));
	r = setint(c, IPPROTO_TCP, TCP_USER_TIMEOUT, 10);
	printf("tcp_user_timeout_10: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_USER_TIMEOUT));

	printf("tcp_linger2_default: %s\n", iopt(c, IPPROTO_TCP, TCP_LINGER2));
	r = setint(c, IPPROTO_TCP, TCP_LINGER2, -1234);
	printf("tcp_linger2_negative: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_LINGER2));
	r = setint(c, IPPROTO_TCP, TCP_LINGER2, 0);
	printf("tcp_linger2_zero: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_LINGER2));
	r = setint(c, IPPROTO_TCP, TCP_LINGER2, 121);
	printf("tcp_linger2_above_max: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_LINGER2));
	r = setint(c, IPPROTO_TCP, TCP_LINGER2, 59);
	printf("tcp_linger2_59: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_LINGER2));

	memset(ca, 'x', sizeof(ca));
	n = getsockopt(c, IPPROTO_TCP, TCP_CONGESTION, ca, &cl);
	/* The kernel's default is the host's sysctl (cubic, bbr): a name. */
	printf("tcp_congestion_default: %s named %d len %u\n", rv(n), ca[0] >= 'a' && ca[0] <= 'z',
	       (unsigned int)cl);
	n = setsockopt(c, IPPROTO_TCP, TCP_CONGESTION, "reno", 4);
	cl = sizeof(ca);
	memset(ca, 'x', sizeof(ca));
	getsockopt(c, IPPROTO_TCP, TCP_CONGESTION, ca, &cl);
	printf("tcp_congestion_reno: %s %.16s len %u zero_padded %d\n", rv(n), ca,
	       (unsigned int)cl, ca[4] == 0 && ca[15] == 0);
	printf("tcp_congestion_unknown: %s\n",
	       rv(setsockopt(c, IPPROTO_TCP, TCP_CONGESTION, "invalid_ca_cc", 13)));
	cl = 6;
	n = setsockopt(c, IPPROTO_TCP, TCP_CONGESTION, "cubic", 5);
	getsockopt(c, IPPROTO_TCP, TCP_CONGESTION, ca, &cl);
	printf("tcp_congestion_cubic_short: %s %.5s len %u\n", rv(n), ca, (unsigned int)cl);
	/* TCP_ULP is a string, not an int ("tls", 3 bytes, as Python and
	 * others pass it): Linux reads no int for it; the stack has none
	 * and gives a fresh socket to the kernel, which answers. */
	{
		int u = socket(AF_INET, SOCK_STREAM, 0), u4 = socket(AF_INET, SOCK_STREAM, 0);

		printf("tcp_ulp_tls_fresh: %s\n", rv(setsockopt(u, IPPROTO_TCP, TCP_ULP, "tls", 3)));
		printf("tcp_ulp_tls_nul_fresh: %s\n",
		       rv(setsockopt(u4, IPPROTO_TCP, TCP_ULP, "tls", 4)));
		close(u);
		close(u4);
	}

	setint(s, SOL_SOCKET, SO_RCVBUF, 0);
	getsockopt(s, SOL_SOCKET, SO_RCVBUF, &rmin, &rl);
	printf("tcp_window_clamp_zero_connected: %s\n", setint(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, 0));
	n = 0;
	rl = sizeof(n);
	r = setint(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, rmin / 2 - 1);
	printf("tcp_window_clamp_small: %s is_half_min_rcvbuf %d\n", r,
	       !getsockopt(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, &n, &rl) && n == rmin / 2);
	r = setint(s, IPPROTO_TCP, TCP_WINDOW_CLAMP, 9000);
	printf("tcp_window_clamp_9000: %s %s\n", r, iopt(s, IPPROTO_TCP, TCP_WINDOW_CLAMP));

	/* TCP_SYNCNT; TCP_DEFER_ACCEPT, kept as SYN-ACK retransmissions
	 * (5 s reads back 7), and a listener's connection ready to accept
	 * only once data came. */
	printf("tcp_syncnt_default: %s\n", iopt(c, IPPROTO_TCP, TCP_SYNCNT));
	printf("tcp_syncnt_0: %s\n", setint(c, IPPROTO_TCP, TCP_SYNCNT, 0));
	printf("tcp_syncnt_128: %s\n", setint(c, IPPROTO_TCP, TCP_SYNCNT, 128));
	r = setint(c, IPPROTO_TCP, TCP_SYNCNT, 20);
	printf("tcp_syncnt_20: %s %s\n", r, iopt(c, IPPROTO_TCP, TCP_SYNCNT));
	printf("tcp_defer_accept_default: %s\n", iopt(c, IPPROTO_TCP, TCP_DEFER_ACCEPT));
	for (int secs = -1; secs <= 7; secs += 2) {
		r = setint(c, IPPROTO_TCP, TCP_DEFER_ACCEPT, secs);
		printf("tcp_defer_accept_%d: %s %s\n", secs, r, iopt(c, IPPROTO_TCP, TCP_DEFER_ACCEPT));
	}
	{
		uint16_t dport;
		int dl = listener(&dport), dc = socket(AF_INET, SOCK_STREAM, 0), da;
		struct sockaddr_in a = lo(dport);

		setint(dl, IPPROTO_TCP, TCP_DEFER_ACCEPT, 3);
		fcntl(dl, F_SETFL, O_NONBLOCK);
		printf("tcp_defer_accept_connect: %s\n", rv(connect(dc, (struct sockaddr *)&a, sizeof(a))));
		printf("tcp_defer_accept_no_data: poll %s accept %s\n", evs(poll1(dl, POLLIN, 300)),
		       rv(accept(dl, NULL, NULL)));
		send(dc, "d", 1, 0);
		ev = poll1(dl, POLLIN, 2000);
		da = accept(dl, NULL, NULL);
		printf("tcp_defer_accept_data: poll %s accept_ok %d recv %s\n", evs(ev), da >= 0,
		       rv(da >= 0 ? recv(da, buf, sizeof(buf), MSG_DONTWAIT) : -1));
		close(da);
		close(dc);
		close(dl);
	}

	/* Buffers no process can own: EFAULT, not a crash (issue 24). */
	{
		/* Through a volatile: the compiler refuses a literal NULL. */
		void *volatile nul = NULL;
		struct iovec bad = { nul, 3 };

		send(c, "xyz", 3, 0);
		poll1(s, POLLIN, 1000);
		printf("efault_read_null: %s\n", rv(read(s, nul, 3)));
		printf("efault_recv_minus1: %s\n", rv(recv(s, (void *)-1, 3, 0)));
		printf("efault_send_null: %s\n", rv(send(c, nul, 3, 0)));
		printf("efault_writev_null_base: %s\n", rv(writev(c, &bad, 1)));
		printf("efault_readv_null_iov: %s\n", rv(readv(s, nul, 1)));
		printf("efault_poll_null: %s\n", rv(poll(nul, 1, 0)));
		printf("efault_data_still_there: %s\n", rv(recv(s, buf, sizeof(buf), 0)));
	}
	/* Levels an IPv4 socket does not have. */
	{
		int u = socket(AF_INET, SOCK_DGRAM, 0), one = 1;

		printf("level_ipv6_get_tcp: %s\n", iopt(c, IPPROTO_IPV6, IPV6_V6ONLY));
		printf("level_udp_get_tcp: %s\n", iopt(c, IPPROTO_UDP, 1));
		printf("level_tcp_get_udp: %s\n", iopt(u, IPPROTO_TCP, TCP_NODELAY));
		printf("level_ipv6_get_udp: %s\n", iopt(u, IPPROTO_IPV6, IPV6_RECVERR));
		printf("level_ipv6_set_udp: %s\n", setint(u, IPPROTO_IPV6, IPV6_RECVERR, 1));
		r = rv(setsockopt(u, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)));
		printf("so_keepalive_udp: %s %s\n", r, iopt(u, SOL_SOCKET, SO_KEEPALIVE));
		close(u);
	}
	/* TCP_WINDOW_CLAMP before a connection: 0 is allowed, and unset. */
	{
		int f = socket(AF_INET, SOCK_STREAM, 0);

		r = setint(f, IPPROTO_TCP, TCP_WINDOW_CLAMP, 0);
		printf("tcp_window_clamp_fresh: %s %s\n", r, iopt(f, IPPROTO_TCP, TCP_WINDOW_CLAMP));
		close(f);
	}
	/* shutdown() of a socket still connecting aborts it (Linux
	 * tcp_disconnect()): POLLHUP and POLLERR.  The listener's queue is
	 * full, so the SYN waits unanswered. */
	{
		uint16_t qport;
		int ql = socket(AF_INET, SOCK_STREAM, 0), q1 = socket(AF_INET, SOCK_STREAM, 0);
		int q2 = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		struct sockaddr_in qa = lo(0);
		struct pollfd qp = { .fd = q2 };

		bind(ql, (struct sockaddr *)&qa, sizeof(qa));
		listen(ql, 0);
		qport = port_of(ql);
		qa = lo(qport);
		connect(q1, (struct sockaddr *)&qa, sizeof(qa));
		printf("tcp_connecting: %s\n", rv(connect(q2, (struct sockaddr *)&qa, sizeof(qa))));
		printf("tcp_connecting_shutdown: %s\n", rv(shutdown(q2, SHUT_RD)));
		r = rv(poll(&qp, 1, 0));
		printf("tcp_connecting_shutdown_poll: %s %s\n", r, evs(qp.revents));
		close(q2);
		close(q1);
		close(ql);
	}
	/* In TIME-WAIT a socket is closed to shutdown() (ENOTCONN). */
	{
		int tl, tc, ts;

		pair(&tl, &tc, &ts);
		shutdown(ts, SHUT_WR);
		poll1(tc, POLLIN, 1000);
		shutdown(tc, SHUT_RDWR);
		poll1(ts, POLLIN, 1000);
		usleep(100000);
		printf("tcp_time_wait_shutdown: %s\n", rv(shutdown(ts, SHUT_WR)));
		close(tc);
		close(ts);
		close(tl);
	}

	/* SO_RCVLOWAT: poll and a blocking read wait for the mark; a
	 * non-blocking read, or one whose timeout ends, gets what is there. */
	printf("so_rcvlowat_default: %s\n", iopt(s, SOL_SOCKET, SO_RCVLOWAT));
	r = setint(s, SOL_SOCKET, SO_RCVLOWAT, 0);
	printf("so_rcvlowat_0: %s %s\n", r, iopt(s, SOL_SOCKET, SO_RCVLOWAT));
	r = setint(s, SOL_SOCKET, SO_RCVLOWAT, -5);
	printf("so_rcvlowat_negative: %s %s\n", r, iopt(s, SOL_SOCKET, SO_RCVLOWAT));
	r = setint(s, SOL_SOCKET, SO_RCVLOWAT, 10);
	printf("so_rcvlowat_10: %s %s\n", r, iopt(s, SOL_SOCKET, SO_RCVLOWAT));
	send(c, "12345", 5, 0);
	printf("so_rcvlowat_poll_5_bytes: %s\n", evs(poll1(s, POLLIN, 100)));
	{
		struct timeval tv = { 0, 150000 };

		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = rv(recv(s, buf, sizeof(buf), 0));
		clock_gettime(CLOCK_MONOTONIC, &t1);
		n = (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		printf("so_rcvlowat_timeout_read: %s waited_100_1000ms %d\n", r, n >= 100 && n <= 1000);
		tv.tv_usec = 0;
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	send(c, "123456789012", 12, 0);
	printf("so_rcvlowat_poll_12_bytes: %s\n", evs(poll1(s, POLLIN, 1000)));
	printf("so_rcvlowat_read: %s\n", rv(recv(s, buf, sizeof(buf), 0)));
	send(c, "abc", 3, 0);
	poll1(s, POLLIN, 100);
	printf("so_rcvlowat_nonblock_read: %s\n", rv(recv(s, buf, sizeof(buf), MSG_DONTWAIT)));

	for (int i = 0; i < 4; i++) {
		static const int names[] = { SO_OOBINLINE, SO_NO_CHECK, SO_DEBUG, SO_DONTROUTE };
		static const char *const nm[] = { "oobinline", "no_check", "debug", "dontroute" };
		const char *d = iopt(c, SOL_SOCKET, names[i]);

		r = setint(c, SOL_SOCKET, names[i], 1);
		printf("so_%s: default %s set %s now %s\n", nm[i], d, r,
		       iopt(c, SOL_SOCKET, names[i]));
	}
	close(c);
	close(s);
	close(l);
}

/*
 * UDP control messages (ip(7)): IP_PKTINFO, IP_RECVTTL, IP_RECVTOS and
 * IP_RECVORIGDSTADDR on recvmsg; IP_PKTINFO (the source), IP_TTL and
 * IP_TOS on sendmsg; MSG_CTRUNC when the room runs out.
 */
static void check_udp_cmsgs(void)
{
	static const int opts[] = { IP_PKTINFO, IP_RECVTTL, IP_RECVTOS, IP_RECVORIGDSTADDR };
	static const char *const names[] = { "pktinfo", "recvttl", "recvtos", "recvorigdstaddr" };
	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0), v;
	struct sockaddr_in ba = lo(0), from;
	socklen_t l = sizeof(ba);
	union { char buf[256]; struct cmsghdr align; } ctl;
	char data[16];
	struct iovec iov = { data, sizeof(data) };
	struct msghdr m;
	struct cmsghdr *c;
	struct in_pktinfo pi;
	long r;

	bind(b, (struct sockaddr *)&ba, sizeof(ba));
	getsockname(b, (struct sockaddr *)&ba, &l);
	for (int i = 0; i < 4; i++) {
		const char *d = iopt(b, IPPROTO_IP, opts[i]);
		const char *sr = setint(b, IPPROTO_IP, opts[i], 1);

		printf("udp_%s: default %s set %s now %s\n", names[i], d, sr,
		       iopt(b, IPPROTO_IP, opts[i]));
	}
	/* Sent with a source of 127.0.0.2, TTL 33 and TOS 0x10 by cmsg. */
	memset(&m, 0, sizeof(m));
	memset(&ctl, 0, sizeof(ctl));
	m.msg_name = &ba;
	m.msg_namelen = sizeof(ba);
	iov.iov_len = 5;
	memcpy(data, "cmsgs", 5);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.buf;
	m.msg_controllen = CMSG_SPACE(sizeof(pi)) + CMSG_SPACE(sizeof(int)) * 2;
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memset(&pi, 0, sizeof(pi));
	pi.ipi_spec_dst.s_addr = htonl(0x7f000002);
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	c = CMSG_NXTHDR(&m, c);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TTL;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	v = 33;
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	c = CMSG_NXTHDR(&m, c);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TOS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	v = 0x10;
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	printf("udp_sendmsg_cmsgs: %s\n", rv(sendmsg(a, &m, 0)));
	poll1(b, POLLIN, 1000);

	memset(&m, 0, sizeof(m));
	memset(&ctl, 0, sizeof(ctl));
	iov.iov_len = sizeof(data);
	m.msg_name = &from;
	m.msg_namelen = sizeof(from);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.buf;
	m.msg_controllen = sizeof(ctl.buf);
	r = recvmsg(b, &m, 0);
	printf("udp_recvmsg_cmsgs: %s from_127_0_0_2 %d flags %x\n", rv(r),
	       from.sin_addr.s_addr == htonl(0x7f000002), (unsigned int)m.msg_flags);
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_type == IP_PKTINFO) {
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			printf("udp_cmsg_pktinfo: len %zu ifindex_lo %d spec_dst %08x addr %08x\n",
			       (size_t)c->cmsg_len, pi.ipi_ifindex == 1,
			       ntohl(pi.ipi_spec_dst.s_addr), ntohl(pi.ipi_addr.s_addr));
		} else if (c->cmsg_type == IP_TTL) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			printf("udp_cmsg_ttl: len %zu %d\n", (size_t)c->cmsg_len, v);
		} else if (c->cmsg_type == IP_TOS) {
			printf("udp_cmsg_tos: len %zu 0x%x\n", (size_t)c->cmsg_len, *CMSG_DATA(c));
		} else if (c->cmsg_type == IP_ORIGDSTADDR) {
			struct sockaddr_in o;

			memcpy(&o, CMSG_DATA(c), sizeof(o));
			printf("udp_cmsg_origdstaddr: len %zu family %d port_ok %d addr %08x\n",
			       (size_t)c->cmsg_len, o.sin_family, o.sin_port == ba.sin_port,
			       ntohl(o.sin_addr.s_addr));
		} else {
			printf("udp_cmsg_other: level %d type %d\n", c->cmsg_level, c->cmsg_type);
		}
	}
	/* Room for one: cut, MSG_CTRUNC. */
	sendto(a, "x", 1, 0, (struct sockaddr *)&ba, sizeof(ba));
	poll1(b, POLLIN, 1000);
	memset(&m, 0, sizeof(m));
	iov.iov_len = sizeof(data);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.buf;
	m.msg_controllen = CMSG_SPACE(sizeof(pi));
	r = recvmsg(b, &m, 0);
	printf("udp_recvmsg_ctrunc: %s ctrunc %d controllen %zu\n", rv(r),
	       !!(m.msg_flags & MSG_CTRUNC), (size_t)m.msg_controllen);
	/* An IP_TTL out of range in a control message. */
	memset(&m, 0, sizeof(m));
	m.msg_name = &ba;
	m.msg_namelen = sizeof(ba);
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.buf;
	m.msg_controllen = CMSG_SPACE(sizeof(int));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TTL;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	v = 0;
	memcpy(CMSG_DATA(c), &v, sizeof(v));
	printf("udp_sendmsg_ttl_0: %s\n", rv(sendmsg(a, &m, 0)));
	/* IP_TOS's sizes (Linux do_ip_setsockopt()/do_ip_getsockopt()):
	 * no bytes set 0, fewer than an int come back as one byte, NULL is
	 * EFAULT. */
	v = 0xc0;
	r = setsockopt(a, IPPROTO_IP, IP_TOS, &v, 0);
	printf("ip_tos_set_len0: %s %s\n", rv(r), iopt(a, IPPROTO_IP, IP_TOS));
	for (socklen_t n = 1; n < sizeof(int); n++) {
		unsigned int got = 0xffffffffu;
		socklen_t gl = n;

		const char *sr = rv(setsockopt(a, IPPROTO_IP, IP_TOS, &v, n));
		const char *gr = rv(getsockopt(a, IPPROTO_IP, IP_TOS, &got, &gl));

		printf("ip_tos_len%u: set %s get %s len %u byte 0x%x\n", (unsigned int)n, sr, gr,
		       (unsigned int)gl, got & 0xff);
	}
	printf("ip_tos_set_null: %s\n", rv(setsockopt(a, IPPROTO_IP, IP_TOS, NULL, sizeof(int))));
	l = 0;
	printf("ip_tos_get_len0: %s len %u\n", rv(getsockopt(a, IPPROTO_IP, IP_TOS, &v, &l)),
	       (unsigned int)l);
	close(a);
	close(b);
}

static const char *ipport(int fd, bool peer)
{
	static char b[2][40];
	static int k;
	char *o = b[k++ & 1];
	struct sockaddr_in a;
	socklen_t l = sizeof(a);

	if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&a, &l))
		snprintf(o, 40, "%s", rv(-1));
	else
		snprintf(o, 40, "%s port_set %d", inet_ntoa(a.sin_addr), a.sin_port != 0);
	return o;
}

/*
 * UDP connect() picks the source address for the peer (Linux
 * ip4_datagram_connect()), disconnecting forgets it; shutdown(SHUT_RD)
 * unconnected is ENOTCONN, and a read of a shut, empty socket is 0 if it
 * would wait, EAGAIN if it may not.
 */
static void check_udp_connect_shut(void)
{
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in any = { .sin_family = AF_INET }, self, un = { .sin_family = AF_UNSPEC };
	socklen_t l = sizeof(self);
	char buf[8];
	const char *r;

	bind(u, (struct sockaddr *)&any, sizeof(any));
	printf("udp_bound_any: %s\n", ipport(u, false));
	printf("udp_shut_rd_unconnected: %s\n", rv(shutdown(u, SHUT_RD)));
	printf("udp_shut_rd_unconnected_recv: %s\n", rv(recv(u, buf, sizeof(buf), MSG_DONTWAIT)));
	getsockname(u, (struct sockaddr *)&self, &l);
	self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r = rv(connect(u, (struct sockaddr *)&self, sizeof(self)));
	printf("udp_connect_self: %s %s\n", r, ipport(u, false));
	printf("udp_connected_recv: %s\n", rv(recv(u, buf, sizeof(buf), MSG_DONTWAIT)));
	printf("udp_shut_rd: %s\n", rv(shutdown(u, SHUT_RD)));
	printf("udp_shut_rd_recv_dontwait: %s\n", rv(recv(u, buf, sizeof(buf), MSG_DONTWAIT)));
	printf("udp_shut_rd_recv_blocking: %s\n", rv(recv(u, buf, sizeof(buf), 0)));
	printf("udp_shut_rd_poll: %s\n", evs(poll1(u, POLLIN, 0)));
	r = rv(connect(u, (struct sockaddr *)&un, sizeof(un)));
	printf("udp_disconnect_name: %s %s\n", r, ipport(u, false));
	close(u);
	/* Unbound, then connected: the port and the address are chosen. */
	u = socket(AF_INET, SOCK_DGRAM, 0);
	r = rv(connect(u, (struct sockaddr *)&self, sizeof(self)));
	printf("udp_connect_unbound: %s %s\n", r, ipport(u, false));
	close(u);

	/* A connected socket whose peer is gone: the ICMP unreachable is
	 * the next send's error (Linux sock_alloc_send_pskb()), once. */
	{
		int gone = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in ga = lo(0);
		socklen_t gl = sizeof(ga);
		struct pollfd gp;

		bind(gone, (struct sockaddr *)&ga, sizeof(ga));
		getsockname(gone, (struct sockaddr *)&ga, &gl);
		u = socket(AF_INET, SOCK_DGRAM, 0);
		connect(u, (struct sockaddr *)&ga, sizeof(ga));
		close(gone);
		printf("udp_send_no_receiver: %s\n", rv(send(u, buf, 4, 0)));
		gp = (struct pollfd){ .fd = u, .events = POLLERR };
		r = rv(poll(&gp, 1, 1000));
		printf("udp_send_no_receiver_poll: %s %s\n", r, evs(gp.revents));
		printf("udp_send_after_unreachable: %s\n", rv(send(u, buf, 4, 0)));
		printf("udp_send_again: %s\n", rv(send(u, buf, 4, 0)));
		close(u);
		/* The same error read by SO_ERROR (gVisor's
		 * ConnectWriteToInvalidPort), which takes it. */
		{
			int e = -1;
			socklen_t el = sizeof(e);

			gone = socket(AF_INET, SOCK_DGRAM, 0);
			ga = lo(0);
			gl = sizeof(ga);
			bind(gone, (struct sockaddr *)&ga, sizeof(ga));
			getsockname(gone, (struct sockaddr *)&ga, &gl);
			u = socket(AF_INET, SOCK_DGRAM, 0);
			connect(u, (struct sockaddr *)&ga, sizeof(ga));
			close(gone);
			send(u, buf, 4, 0);
			gp = (struct pollfd){ .fd = u, .events = POLLERR };
			poll(&gp, 1, 1000);
			r = rv(getsockopt(u, SOL_SOCKET, SO_ERROR, &e, &el));
			printf("udp_so_error_unreachable: %s %s", r, e == ECONNREFUSED ? "ECONNREFUSED" : "other");
			el = sizeof(e);
			getsockopt(u, SOL_SOCKET, SO_ERROR, &e, &el);
			printf(" again %d\n", e);
			close(u);
		}
	}
	/* bind(AF_UNSPEC, INADDR_ANY) is an AF_INET bind (Linux inet_bind()). */
	u = socket(AF_INET, SOCK_DGRAM, 0);
	un.sin_addr.s_addr = htonl(INADDR_ANY);
	r = rv(bind(u, (struct sockaddr *)&un, sizeof(un)));
	printf("udp_bind_unspec_any: %s %s\n", r, ipport(u, false));
	/* 0.0.0.0 as a destination is this host. */
	{
		int rcv = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in ra = lo(0), z;
		socklen_t rl = sizeof(ra);

		bind(rcv, (struct sockaddr *)&ra, sizeof(ra));
		getsockname(rcv, (struct sockaddr *)&ra, &rl);
		z = ra;
		z.sin_addr.s_addr = htonl(INADDR_ANY);
		printf("udp_sendto_any_addr: %s\n",
		       rv(sendto(u, "any", 3, 0, (struct sockaddr *)&z, sizeof(z))));
		poll1(rcv, POLLIN, 1000);
		printf("udp_sendto_any_addr_recv: %s\n", rv(recv(rcv, buf, sizeof(buf), MSG_DONTWAIT)));
		close(rcv);
	}
	close(u);
	{
		uint16_t tport;
		int tl = listener(&tport), tc = socket(AF_INET, SOCK_STREAM, 0), ta;
		struct sockaddr_in z = lo(tport);

		z.sin_addr.s_addr = htonl(INADDR_ANY);
		r = rv(connect(tc, (struct sockaddr *)&z, sizeof(z)));
		ta = accept(tl, NULL, NULL);
		printf("tcp_connect_any_addr: %s accepted %d peer %s\n", r, ta >= 0, ipport(tc, true));
		close(ta);
		close(tc);
		close(tl);
	}
}

/* close_range(2) closes Sluice sockets too: the peer sees the end. */
static void check_close_range(void)
{
	int l, c, s;
	char b;

	pair(&l, &c, &s);
	printf("close_range: %s\n", rv(close_range((unsigned int)s, (unsigned int)s, 0)));
	printf("close_range_peer_eof: %s\n", evs(poll1(c, POLLIN, 2000)));
	printf("close_range_peer_recv: %s\n", rv(recv(c, &b, 1, 0)));
	printf("close_range_fd_gone: %s\n", rv(send(s, "x", 1, MSG_NOSIGNAL)));
	close(c);
	close(l);
}

/*
 * A program that closes every descriptor it does not know of (a daemon
 * tidying up, a double close): the library's own stay (close() says
 * EBADF for them, as for a number not open), and sockets made afterwards
 * still end as they should when closed.
 */
static void check_stray_closes(void)
{
	int l, c, s, l2, c2, s2;
	char b;

	pair(&l, &c, &s);
	close(s);	/* the library looks at who else holds it */
	for (int fd = 3; fd < 1024; fd++)
		if (fd != l && fd != c)
			close(fd);
	pair(&l2, &c2, &s2);
	printf("stray_closes_send: %s\n", rv(send(s2, "y", 1, MSG_NOSIGNAL)));
	printf("stray_closes_recv: %s\n", rv(recv(c2, &b, 1, 0)));
	close(s2);
	printf("stray_closes_peer_eof: %s\n", evs(poll1(c2, POLLIN, 2000)));
	printf("stray_closes_peer_recv: %s\n", rv(recv(c2, &b, 1, 0)));
	close(c2);
	close(l2);
	close(c);
	close(l);
}

static void *much_later_send(void *arg)
{
	usleep(200000);
	send(*(int *)arg, "def", 3, 0);
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void alarm_in_50ms(void)
{
	struct itimerval it = { { 0, 0 }, { 0, 50000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

/* A handler without SA_RESTART ends blocking calls with EINTR; with
 * SA_RESTART a blocking recv goes on (and poll still ends). */
static void check_signals(void)
{
	struct sigaction sa, old;
	struct pollfd p;
	int l, c, s;
	char buf[8];
	pthread_t t;
	long r;

	pair(&l, &c, &s);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	alarm_in_50ms();
	r = recv(c, buf, sizeof(buf), 0);
	printf("eintr_recv: %s\n", rv(r));
	alarm_in_50ms();
	r = accept(l, NULL, NULL);
	printf("eintr_accept: %s\n", rv(r));
	p.fd = c;
	p.events = POLLIN;
	alarm_in_50ms();
	r = poll(&p, 1, 5000);
	printf("eintr_poll: %s\n", rv(r));
	sigaction(SIGALRM, NULL, &old);
	printf("sigaction_reports_own_handler: %d\n", old.sa_handler == on_alarm);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	alarm_in_50ms();
	r = poll(&p, 1, 5000);
	printf("eintr_poll_sa_restart: %s\n", rv(r));
	pthread_create(&t, NULL, much_later_send, &s);	/* "def" after 200 ms */
	alarm_in_50ms();
	memset(buf, 0, sizeof(buf));
	r = recv(c, buf, sizeof(buf), 0);
	printf("sa_restart_recv_goes_on: %s %s\n", rv(r), buf);
	pthread_join(t, NULL);
	signal(SIGALRM, SIG_DFL);
	close(c);
	close(s);
	close(l);
}

/*
 * Issue 24 items 4 and 5, tried as a user: the generic fd ioctls
 * (FIOCLEX, FIONCLEX) and the owner ones (FIOSETOWN, SIOCSPGRP,
 * FIOGETOWN, SIOCGPGRP) on a socket, as F_SETFD/F_SETOWN would; and
 * recv(MSG_OOB) where no urgent data came: EINVAL at once, blocking or
 * not (ENOTCONN on a listener), never a wait.
 */
static void check_fd_ioctls_oob(void)
{
	struct sigaction sa;
	int l, c, s, v;
	char b[4];
	long r;

	pair(&l, &c, &s);
	r = ioctl(c, FIOCLEX);
	printf("fioclex: %s cloexec %d\n", rv(r), fcntl(c, F_GETFD) & FD_CLOEXEC);
	r = ioctl(c, FIONCLEX);
	printf("fionclex: %s cloexec %d\n", rv(r), fcntl(c, F_GETFD) & FD_CLOEXEC);
	v = getpid();
	r = ioctl(c, FIOSETOWN, &v);
	printf("fiosetown: %s getown_is_pid %d\n", rv(r), fcntl(c, F_GETOWN) == getpid());
	v = -7;
	r = ioctl(c, FIOGETOWN, &v);
	printf("fiogetown: %s is_pid %d\n", rv(r), v == getpid());
	v = -getpgrp();
	r = ioctl(c, SIOCSPGRP, &v);
	printf("siocspgrp_group: %s getown_is_group %d\n", rv(r), fcntl(c, F_GETOWN) == -getpgrp());
	v = -7;
	r = ioctl(c, SIOCGPGRP, &v);
	printf("siocgpgrp: %s is_group %d\n", rv(r), v == -getpgrp());
	v = 0;
	r = ioctl(c, SIOCSPGRP, &v);
	printf("siocspgrp_none: %s getown %d\n", rv(r), fcntl(c, F_GETOWN));
	printf("fiosetown_null: %s\n", rv(ioctl(c, FIOSETOWN, NULL)));
	printf("fiogetown_null: %s\n", rv(ioctl(c, FIOGETOWN, NULL)));
	{
		/* An unmapped int: EFAULT, not a SIGSEGV in the library. */
		void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);

		munmap(gone, 4096);
		printf("efault_ioctl_ints: fionread %s", rv(ioctl(c, FIONREAD, gone)));
		printf(" siocoutq %s", rv(ioctl(c, SIOCOUTQ, gone)));
		printf(" fionbio %s", rv(ioctl(c, FIONBIO, gone)));
		printf(" siocatmark %s", rv(ioctl(c, SIOCATMARK, gone)));
		printf(" fiosetown %s\n", rv(ioctl(c, FIOSETOWN, gone)));
	}
	/* No urgent data: a blocking recv(MSG_OOB) must not wait (the
	 * alarm would end a wait with EINTR). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	alarm(2);
	printf("recv_oob_none: %s\n", rv(recv(s, b, 1, MSG_OOB)));
	alarm(0);
	printf("recv_oob_none_nonblocking: %s\n", rv(recv(s, b, 1, MSG_OOB | MSG_DONTWAIT)));
	send(c, "ab", 2, 0);
	poll1(s, POLLIN, 2000);
	printf("recv_oob_normal_data_queued: %s\n", rv(recv(s, b, 2, MSG_OOB | MSG_DONTWAIT)));
	printf("recv_oob_listener: %s\n", rv(recv(l, b, 1, MSG_OOB | MSG_DONTWAIT)));
	printf("recv_after_oob_tries: %s %.2s\n", rv(recv(s, b, 2, MSG_DONTWAIT)), b);
	{
		int u = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0), kept;
		struct sockaddr_in a = lo(0);
		socklen_t al = sizeof(a);

		bind(u, (struct sockaddr *)&a, sizeof(a));
		getsockname(u, (struct sockaddr *)&a, &al);
		printf("send_oob_udp: %s\n",
		       rv(sendto(u2, "a", 1, MSG_OOB, (struct sockaddr *)&a, sizeof(a))));
		/* A datagram socket connecting keeps errno (its kernel twin's
		 * connect may fail where the kernel has no loopback). */
		errno = EDOM;
		kept = !connect(u2, (struct sockaddr *)&a, sizeof(a)) && errno == EDOM;
		printf("udp_connect_keeps_errno: %d\n", kept);
		close(u);
		close(u2);
	}
	signal(SIGALRM, SIG_DFL);
	close(c);
	close(s);
	close(l);
}

/* Lengths the compiler cannot see, so _FORTIFY_SOURCE calls the checked
 * entry points (__recv_chk, __recvfrom_chk, __read_chk, __poll_chk). */
static volatile size_t two = 2;

static void check_fortified(void)
{
	int l, c, s;
	char buf[8] = { 0 };
	struct pollfd p[1];
	long r;

	pair(&l, &c, &s);
	send(s, "abcdef", 6, 0);
	p[0].fd = c;
	p[0].events = POLLIN;
	r = poll(p, two / 2, 2000);
	printf("chk_poll: %s %s\n", rv(r), evs(p[0].revents));
	r = recv(c, buf, two, 0);
	printf("chk_recv: %s %s\n", rv(r), buf);
	r = read(c, buf, two);
	printf("chk_read: %s %.2s\n", rv(r), buf);
	r = recvfrom(c, buf, two, 0, NULL, NULL);
	printf("chk_recvfrom: %s %.2s\n", rv(r), buf);
	close(c);
	close(s);
	close(l);
}

/*
 * A TCP connection with IP_TOS set (ssh sets it) carrying more than one
 * buffer at a time: inside the stack that goes as one chained segment,
 * whose header the TOS is written into (the stack was found corrupt).
 */
static void check_tos_bulk(void)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), a, tos = 0x10;
	static char out[60000], in[60000];
	struct sockaddr_in sa = lo(0);
	long sent, got = 0, r;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7);
	bind(l, (struct sockaddr *)&sa, sizeof(sa));
	listen(l, 1);
	sa = lo(port_of(l));
	setsockopt(c, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	connect(c, (struct sockaddr *)&sa, sizeof(sa));
	a = accept(l, NULL, NULL);
	sent = send(c, out, sizeof(out), 0);
	while (got < (long)sizeof(in) && poll1(a, POLLIN, 2000) > 0 &&
	       (r = recv(a, in + got, sizeof(in) - got, 0)) > 0)
		got += r;
	printf("tos_bulk: sent %s got %ld same %d\n", rv(sent), got,
	       got == (long)sizeof(in) && !memcmp(in, out, sizeof(in)));
	close(a);
	close(c);
	close(l);
}

/*
 * Multicast on loopback (issue 24, gVisor's IpMulticastLoopback* cases):
 * a membership and IP_MULTICAST_IF naming lo by index or address, a group
 * heard by its member even with IP_MULTICAST_LOOP off (it goes out lo and
 * back in), IP_MULTICAST_ALL, and the answers getsockopt gives.
 */
static void check_mcast_lo(void)
{
	int tx = socket(AF_INET, SOCK_DGRAM, 0), rx = socket(AF_INET, SOCK_DGRAM, 0), v = -1;
	struct sockaddr_in any = { .sin_family = AF_INET }, to = { .sin_family = AF_INET };
	struct ip_mreqn join = { .imr_ifindex = 1 };
	struct in_addr ifa = { htonl(INADDR_LOOPBACK) }, got = { 1 };
	socklen_t l = sizeof(got);
	char buf[16] = "";
	long r;

	inet_pton(AF_INET, "224.0.2.1", &join.imr_multiaddr);
	bind(rx, (struct sockaddr *)&any, sizeof(any));
	printf("mcast_lo_join_by_index: %s\n",
	       rv(setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof(join))));
	printf("mcast_lo_join_again: %s\n",
	       rv(setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof(join))));
	printf("mcast_lo_if_by_address: %s\n",
	       rv(setsockopt(tx, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa))));
	r = getsockopt(tx, IPPROTO_IP, IP_MULTICAST_IF, &got, &l);
	printf("mcast_lo_if_get: %s loopback %d len %u\n", rv(r),
	       got.s_addr == htonl(INADDR_LOOPBACK), l);
	v = 0;
	setsockopt(tx, IPPROTO_IP, IP_MULTICAST_LOOP, &v, sizeof(v));
	l = sizeof(v);
	v = -1;
	r = getsockopt(rx, IPPROTO_IP, IP_MULTICAST_ALL, &v, &l);
	printf("mcast_all_default: %s %d\n", rv(r), v);
	l = sizeof(to);
	getsockname(rx, (struct sockaddr *)&to, &l);
	to.sin_addr = join.imr_multiaddr;
	printf("mcast_lo_send: %s\n", rv(sendto(tx, "grp", 3, 0, (struct sockaddr *)&to,
						  sizeof(to))));
	poll1(rx, POLLIN, 2000);
	r = recv(rx, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	printf("mcast_lo_heard_with_loop_off: %s %s\n", rv(r), r > 0 ? buf : "-");
	join.imr_ifindex = 9999;
	printf("mcast_join_no_such_index: %s\n",
	       rv(setsockopt(rx, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof(join))));
	close(tx);
	close(rx);
}

/*
 * lo's own broadcast address, 127.255.255.255: SO_BROADCAST needed, every
 * socket on the port hears it (two on 0.0.0.0 with SO_REUSEADDR and one
 * bound to it), and one bound to it sends from 127.0.0.1.
 */
static void check_bcast_lo_subnet(void)
{
	int r1 = socket(AF_INET, SOCK_DGRAM, 0), r2 = socket(AF_INET, SOCK_DGRAM, 0);
	int rb = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET }, from;
	int socks[3] = { r1, r2, rb };
	socklen_t l = sizeof(a);
	char buf[16];
	long r;

	setsockopt(r1, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(r2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(rb, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bind(r1, (struct sockaddr *)&a, sizeof(a));
	getsockname(r1, (struct sockaddr *)&a, &l);
	bind(r2, (struct sockaddr *)&a, sizeof(a));
	a.sin_addr.s_addr = htonl(0x7fffffffu);
	printf("lo_bcast_bind: %s\n", rv(bind(rb, (struct sockaddr *)&a, sizeof(a))));
	printf("lo_bcast_send_no_so_broadcast: %s\n",
	       rv(sendto(tx, "n", 1, 0, (struct sockaddr *)&a, sizeof(a))));
	setsockopt(tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	printf("lo_bcast_send: %s\n", rv(sendto(tx, "lb", 2, 0, (struct sockaddr *)&a, sizeof(a))));
	for (int i = 0; i < 3; i++) {
		memset(buf, 0, sizeof(buf));
		poll1(socks[i], POLLIN, 2000);
		r = recv(socks[i], buf, sizeof(buf) - 1, MSG_DONTWAIT);
		printf("lo_bcast_heard_%d: %s %s\n", i, rv(r), r > 0 ? buf : "-");
	}
	/* From the socket bound to it: the source is 127.0.0.1. */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sendto(rb, "s", 1, 0, (struct sockaddr *)&a, sizeof(a));
	poll1(r1, POLLIN, 2000);
	l = sizeof(from);
	r = recvfrom(r1, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &l);
	if (r <= 0) {
		poll1(r2, POLLIN, 100);
		r = recvfrom(r2, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &l);
	}
	printf("lo_bcast_bound_sends_from_lo: %s %d\n", rv(r),
	       r > 0 && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	/* connect(): a datagram socket needs SO_BROADCAST for it, a stream
	 * socket has no route to a broadcast address. */
	a.sin_addr.s_addr = htonl(0x7fffffffu);
	a.sin_port = htons(9);
	close(tx);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	printf("lo_bcast_udp_connect: %s\n", rv(connect(tx, (struct sockaddr *)&a, sizeof(a))));
	setsockopt(tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	printf("lo_bcast_udp_connect_so_broadcast: %s\n",
	       rv(connect(tx, (struct sockaddr *)&a, sizeof(a))));
	close(tx);
	tx = socket(AF_INET, SOCK_STREAM, 0);
	printf("lo_bcast_tcp_connect: %s\n", rv(connect(tx, (struct sockaddr *)&a, sizeof(a))));
	close(tx);
	close(rb);
	close(r2);
	close(r1);
}

/*
 * Broadcast on loopback (issue 24, gVisor's TestBindToBcastThen* cases):
 * a socket bound to 255.255.255.255 hears a broadcast sent from
 * 127.0.0.1 (Linux routes it out lo, its source's device), and can send
 * itself, from 127.0.0.1.
 */
static void check_bcast_lo(void)
{
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	int rx2 = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
	struct sockaddr_in bc = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_BROADCAST };
	struct sockaddr_in any = { .sin_family = AF_INET }, loa = lo(0), got, from;
	socklen_t l = sizeof(got);
	char buf[16] = "";
	long r;

	printf("bcast_bind: %s\n", rv(bind(rx, (struct sockaddr *)&bc, sizeof(bc))));
	r = getsockname(rx, (struct sockaddr *)&got, &l);
	printf("bcast_bind_name: %s %s\n", rv(r),
	       got.sin_addr.s_addr == INADDR_BROADCAST ? "255.255.255.255" : "other");
	bind(tx, (struct sockaddr *)&loa, sizeof(loa));
	bc.sin_port = got.sin_port;
	printf("bcast_send_no_so_broadcast: %s\n",
	       rv(sendto(tx, "b", 1, 0, (struct sockaddr *)&bc, sizeof(bc))));
	setsockopt(tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	printf("bcast_send_from_lo: %s\n",
	       rv(sendto(tx, "bc", 2, 0, (struct sockaddr *)&bc, sizeof(bc))));
	poll1(rx, POLLIN, 2000);
	l = sizeof(from);
	r = recvfrom(rx, buf, sizeof(buf) - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &l);
	printf("bcast_heard: %s %s from_lo %d\n", rv(r), r > 0 ? buf : "-",
	       r > 0 && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	/* The socket on 255.255.255.255 sends to 127.0.0.1. */
	bind(rx2, (struct sockaddr *)&any, sizeof(any));
	l = sizeof(got);
	getsockname(rx2, (struct sockaddr *)&got, &l);
	loa.sin_port = got.sin_port;
	printf("bcast_bound_send: %s\n",
	       rv(sendto(rx, "up", 2, 0, (struct sockaddr *)&loa, sizeof(loa))));
	poll1(rx2, POLLIN, 2000);
	memset(buf, 0, sizeof(buf));
	l = sizeof(from);
	r = recvfrom(rx2, buf, sizeof(buf) - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &l);
	printf("bcast_bound_heard: %s %s from_lo %d\n", rv(r), r > 0 ? buf : "-",
	       r > 0 && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	close(rx2);
	close(tx);
	close(rx);
	check_bcast_lo_subnet();
}

static sigjmp_buf segv_jb;
static int *volatile nowhere;
static volatile sig_atomic_t segvs;

static void on_segv(int sig)
{
	(void)sig;
	segvs++;
	siglongjmp(segv_jb, 1);
}

/*
 * A buffer that is mapped but not readable (PROT_NONE) or not mapped at
 * all: EFAULT, as the kernel's copy answers (issue 24, gVisor's
 * SendWithProtNoneBufEfaults), not a SIGSEGV inside the library.  And
 * the program's own SIGSEGV is still its own: the default kills, a
 * handler it installs runs and reads back, a fault outside any call
 * reaches it.
 */
static void check_efault_mapped(void)
{
	int tx = socket(AF_INET, SOCK_DGRAM, 0), rx = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = lo(0);
	socklen_t l = sizeof(a);
	uint8_t *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	struct iovec iov = { page, 897 };
	struct msghdr mh = { .msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov,
			     .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = mh };
	struct sigaction sa, old;
	int status, c, sv, l_fd;
	pid_t pid;

	bind(rx, (struct sockaddr *)&a, sizeof(a));
	getsockname(rx, (struct sockaddr *)&a, &l);
	mh.msg_name = &a;
	mm.msg_hdr = mh;
	/* The second page stays readable: a buffer across both is bad too. */
	mprotect(page, 4096, PROT_NONE);
	printf("efault_sendto_prot_none: %s\n",
	       rv(sendto(tx, page, 100, 0, (struct sockaddr *)&a, sizeof(a))));
	printf("efault_sendto_across_pages: %s\n",
	       rv(sendto(tx, page + 4000, 200, 0, (struct sockaddr *)&a, sizeof(a))));
	printf("efault_sendmsg_prot_none: %s\n", rv(sendmsg(tx, &mh, 0)));
	printf("efault_sendmmsg_prot_none: %s\n", rv(sendmmsg(tx, &mm, 1, 0)));
	printf("efault_sendto_readable_page: %s\n",
	       rv(sendto(tx, page + 4096, 100, 0, (struct sockaddr *)&a, sizeof(a))));
	/* A datagram is there: the copy out is what fails. */
	poll1(rx, POLLIN, 2000);
	printf("efault_recv_prot_none: %s\n", rv(recv(rx, page, 100, MSG_DONTWAIT)));
	munmap(page, 4096);
	printf("efault_sendto_unmapped: %s\n",
	       rv(sendto(tx, page, 100, 0, (struct sockaddr *)&a, sizeof(a))));
	munmap(page + 4096, 4096);
	/* The same on a stream. */
	pair(&l_fd, &c, &sv);
	printf("efault_tcp_send_unmapped: %s\n", rv(send(c, page, 10, MSG_NOSIGNAL)));
	close(l_fd);
	close(c);
	close(sv);
	close(tx);
	close(rx);

	/* SIGSEGV: what the program set is what it reads back (set first: a
	 * sanitizer's runtime has a handler there already). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGSEGV, NULL, &old);
	printf("segv_disposition_default: %s\n",
	       old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO) ? "SIG_DFL" : "other");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sa.sa_flags = SA_NODEFER;
	printf("segv_handler_set: %s\n", rv(sigaction(SIGSEGV, &sa, NULL)));
	sigaction(SIGSEGV, NULL, &old);
	printf("segv_handler_reads_back: %s\n", old.sa_handler == on_segv ? "yes" : "no");
	if (!sigsetjmp(segv_jb, 0))
		*nowhere = 1;	/* a fault of the program's */
	printf("segv_handler_ran: %d\n", (int)segvs);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigaction(SIGSEGV, &sa, NULL);
	/* And the default still kills (a child, with a core not wanted). */
	pid = fork();
	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		*nowhere = 1;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	printf("segv_default_kills: %s\n",
	       WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV ? "SIGSEGV" : "no");
}

/* Read from fd until n bytes are queued (FIONREAD) or a second passes. */
static int wait_inq(int fd, int n)
{
	int q = -1;

	for (int i = 0; i < 100; i++) {
		if (ioctl(fd, FIONREAD, &q) || q >= n)
			break;
		usleep(10000);
	}
	return q;
}

/*
 * Issue 24, the options gVisor's suite found missing or different:
 * IP_MTU_DISCOVER on both kinds; TCP_INQ and its control message; two
 * small writes that one read takes whole (the quick-ACK start: Nagle's
 * second write waits for no delayed ACK); TCP_MAXSEG on an established
 * connection (Linux keeps the MSS); SIOCGSTAMP and SO_TIMESTAMP on UDP;
 * SO_RCVBUFFORCE from a user namespace that does not own the network
 * namespace.
 */
static void check_issue24_opts(void)
{
	static const int pmtu[] = { IP_PMTUDISC_DONT, IP_PMTUDISC_WANT, IP_PMTUDISC_DO,
				    IP_PMTUDISC_PROBE, IP_PMTUDISC_INTERFACE, IP_PMTUDISC_OMIT };
	union { char buf[128]; struct cmsghdr align; } ctl;
	int l, c, s, u, b, inq = -1, one = 1;
	char data[1024] = { 0 };
	struct iovec iov = { data, 512 };
	struct sockaddr_in ba = lo(0);
	socklen_t sl = sizeof(ba);
	struct timeval tv = { 0 }, tv2 = { 0 };
	struct msghdr m;
	struct cmsghdr *cm;
	long r;
	pid_t pid;

	pair(&l, &c, &s);
	tv.tv_sec = 2;	/* every read below is bounded */
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	tv.tv_sec = 0;
	u = socket(AF_INET, SOCK_DGRAM, 0);
	printf("pmtudisc_default: tcp %s", iopt(s, IPPROTO_IP, IP_MTU_DISCOVER));
	printf(" udp %s\n", iopt(u, IPPROTO_IP, IP_MTU_DISCOVER));
	for (unsigned int i = 0; i < sizeof(pmtu) / sizeof(pmtu[0]); i++) {
		printf("pmtudisc_%d: tcp %s", pmtu[i], setint(s, IPPROTO_IP, IP_MTU_DISCOVER, pmtu[i]));
		printf(" %s", iopt(s, IPPROTO_IP, IP_MTU_DISCOVER));
		printf(" udp %s", setint(u, IPPROTO_IP, IP_MTU_DISCOVER, pmtu[i]));
		printf(" %s\n", iopt(u, IPPROTO_IP, IP_MTU_DISCOVER));
	}
	printf("pmtudisc_99: tcp %s", setint(s, IPPROTO_IP, IP_MTU_DISCOVER, 99));
	printf(" udp %s\n", setint(u, IPPROTO_IP, IP_MTU_DISCOVER, -1));
	/* IP_MTU: the route's MTU when connected (loopback: 65535, IP_MAX_MTU), else
	 * ENOTCONN (listener, unconnected UDP). */
	printf("ip_mtu: tcp %s listener %s udp %s", iopt(s, IPPROTO_IP, IP_MTU),
	       iopt(l, IPPROTO_IP, IP_MTU), iopt(u, IPPROTO_IP, IP_MTU));
	{
		struct sockaddr_in to = lo(9);

		connect(u, (struct sockaddr *)&to, sizeof(to));
		printf(" connected %s\n", iopt(u, IPPROTO_IP, IP_MTU));
	}

	/* Two 5-byte writes, one read of 10. */
	send(c, data, 5, 0);
	send(c, data, 5, 0);
	wait_inq(s, 10);
	printf("tcp_coalesced: %s\n", rv(recv(s, data, 10, 0)));

	printf("tcp_inq: default %s", iopt(s, IPPROTO_TCP, TCP_INQ));
	printf(" set %s", setint(s, IPPROTO_TCP, TCP_INQ, 1));
	printf(" now %s", iopt(s, IPPROTO_TCP, TCP_INQ));
	printf(" bad %s", setint(s, IPPROTO_TCP, TCP_INQ, 2));
	printf(" udp %s\n", setint(u, IPPROTO_TCP, TCP_INQ, 1));
	for (int i = 0; i < 4; i++)
		send(c, data, 256, 0);
	inq = wait_inq(s, 1024);
	for (int i = 0; i < 2; i++) {
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int));
		r = recvmsg(s, &m, 0);
		cm = CMSG_FIRSTHDR(&m);
		inq = -1;
		if (cm && cm->cmsg_level == IPPROTO_TCP && cm->cmsg_type == TCP_CM_INQ)
			memcpy(&inq, CMSG_DATA(cm), sizeof(inq));
		printf("tcp_inq_cmsg_%d: %s inq %d len %zu flags %x\n", i, rv(r), inq,
		       cm ? (size_t)cm->cmsg_len : 0, (unsigned int)m.msg_flags);
	}
	setint(s, IPPROTO_TCP, TCP_INQ, 0);
	printf("tcp_siocgstamp: %s\n", rv(ioctl(s, SIOCGSTAMP, &tv)));

	/* TCP_MAXSEG 1024 under TCP_CORK: 1024 bytes go as one write. */
	printf("tcp_maxseg_established: cork %s", setint(c, IPPROTO_TCP, TCP_CORK, 1));
	printf(" maxseg %s\n", setint(c, IPPROTO_TCP, TCP_MAXSEG, 1024));
	send(c, data, 1024, 0);
	poll1(s, POLLIN, 1000);
	printf("tcp_maxseg_corked_read: %s\n", rv(recv(s, data, 1024, MSG_WAITALL)));
	close(c);
	close(s);
	close(l);

	/* SIOCGSTAMP before and after a read; SO_TIMESTAMP. */
	b = socket(AF_INET, SOCK_DGRAM, 0);
	bind(b, (struct sockaddr *)&ba, sizeof(ba));
	getsockname(b, (struct sockaddr *)&ba, &sl);
	connect(u, (struct sockaddr *)&ba, sizeof(ba));
	printf("udp_timestamp: default %s\n", iopt(b, SOL_SOCKET, SO_TIMESTAMP));
	printf("udp_siocgstamp_none: %s\n", rv(ioctl(b, SIOCGSTAMP, &tv)));
	send(u, "ab", 2, 0);
	poll1(b, POLLIN, 1000);
	r = recv(b, data, sizeof(data), 0);
	printf("udp_siocgstamp_read: %s", rv(r));
	errno = EDOM;
	r = ioctl(b, SIOCGSTAMP, &tv);
	printf(" %s errno kept %d", rv(r), !r && errno == EDOM);
	printf(" within_5s %d\n", labs(tv.tv_sec - time(NULL)) <= 5);
	printf("udp_timestamp_set: %s", setint(b, SOL_SOCKET, SO_TIMESTAMP, 1));
	printf(" now %s\n", iopt(b, SOL_SOCKET, SO_TIMESTAMP));
	send(u, "cd", 2, 0);
	poll1(b, POLLIN, 1000);
	memset(&m, 0, sizeof(m));
	iov.iov_len = sizeof(data);
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = ctl.buf;
	m.msg_controllen = sizeof(ctl.buf);
	r = recvmsg(b, &m, 0);
	cm = CMSG_FIRSTHDR(&m);
	if (cm)
		memcpy(&tv2, CMSG_DATA(cm), sizeof(tv2));
	printf("udp_timestamp_cmsg: %s level_socket %d type_timestamp %d len %zu within_5s %d\n",
	       rv(r), cm && cm->cmsg_level == SOL_SOCKET, cm && cm->cmsg_type == SO_TIMESTAMP,
	       cm ? (size_t)cm->cmsg_len : 0, labs(tv2.tv_sec - time(NULL)) <= 5);
	tv2 = tv;
	ioctl(b, SIOCGSTAMP, &tv);
	printf("udp_siocgstamp_kept: %d\n", tv.tv_sec == tv2.tv_sec && tv.tv_usec == tv2.tv_usec);
	close(b);

	/* CAP_NET_ADMIN in a new user namespace is not over this network
	 * namespace: SO_RCVBUFFORCE is EPERM. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int v = 1 << 20;

		if (unshare(CLONE_NEWUSER))
			_exit(3);
		_exit(setsockopt(u, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) ? errno : 0);
	}
	waitpid(pid, &one, 0);
	printf("rcvbufforce_userns: %s\n",
	       WIFEXITED(one) ? WEXITSTATUS(one) == 3 ? "no-userns" : en(WEXITSTATUS(one)) :
				"killed");
	close(u);
}

struct blocked_call {
	int fd;
	bool send;
	long ret;
	int err;
};

/*
 * A socket's identities (socket(7)): SO_COOKIE, a 64-bit number of its
 * own, the same through every fd and at every ask, another socket's
 * another (a kernel AF_UNIX socket's too), at least 8 bytes asked;
 * SO_NETNS_COOKIE, the network namespace's, as any socket of it answers
 * (an AF_UNIX socket's), exactly 8 bytes; SO_INCOMING_CPU, -1 until a
 * packet comes, then the CPU that took it: a TCP socket's every segment
 * but a listener's, a connected UDP socket's datagrams, not an
 * unconnected one's; setsockopt() keeps any int and the socket stays
 * whose it was.
 */
static int cpu_of(int fd)
{
	socklen_t l = sizeof(int);
	int v = -9;

	if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &v, &l))
		return -errno - 1000;
	return v;
}

static void check_sock_ids(void)
{
	uint64_t c1 = 0, c1b = 0, c1d = 0, c2 = 0, cu = 0, n1 = 0, nu = 0, big[2] = { 0, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0), fd2 = socket(AF_INET, SOCK_DGRAM, 0);
	int u = socket(AF_UNIX, SOCK_STREAM, 0), d = dup(fd), was = stack_fd(fd), v, r;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int lf, c, a, ua, ub;
	struct sockaddr_in sa = lo(0);
	struct timeval tv = { 2, 0 };
	socklen_t l = 8;
	char b[8];

#define IN_RANGE(x) ((x) >= 0 && (x) < ncpu)
	r = getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c1, &l);
	printf("so_cookie: %s len %u nonzero %d\n", rv(r), (unsigned int)l, c1 != 0);
	l = 8;
	getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c1b, &l);
	l = 8;
	getsockopt(d, SOL_SOCKET, SO_COOKIE, &c1d, &l);
	l = 8;
	getsockopt(fd2, SOL_SOCKET, SO_COOKIE, &c2, &l);
	l = 8;
	getsockopt(u, SOL_SOCKET, SO_COOKIE, &cu, &l);
	printf("so_cookie_same: again %d dup %d; other socket %d, unix %d\n", c1b == c1,
	       c1d == c1, c2 && c2 != c1, cu && cu != c1 && cu != c2);
	l = 4;
	printf("so_cookie_short: %s len %u\n",
	       rv(getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c2, &l)), (unsigned int)l);
	l = sizeof(big);
	r = getsockopt(fd, SOL_SOCKET, SO_COOKIE, big, &l);
	printf("so_cookie_long: %s len %u same %d\n", rv(r), (unsigned int)l, big[0] == c1);
	l = 8;
	r = getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &n1, &l);
	l = 8;
	getsockopt(u, SOL_SOCKET, SO_NETNS_COOKIE, &nu, &l);
	printf("so_netns_cookie: %s len %u as unix %d\n", rv(r), (unsigned int)l, n1 && n1 == nu);
	l = 4;
	printf("so_netns_cookie_short: %s\n",
	       rv(getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &n1, &l)));
	l = sizeof(big);
	printf("so_netns_cookie_long: %s\n",
	       rv(getsockopt(fd2, SOL_SOCKET, SO_NETNS_COOKIE, big, &l)));
	printf("so_incoming_cpu_fresh: tcp %d udp %d\n", cpu_of(fd), cpu_of(fd2));
	v = 3;
	r = setsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &v, sizeof(v));
	printf("so_incoming_cpu_set: %s %d whose same %d\n", rv(r), cpu_of(fd), stack_fd(fd) == was);
	v = -5;
	r = setsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &v, sizeof(v));
	printf("so_incoming_cpu_set_neg: %s %d\n", rv(r), cpu_of(d));
	r = setsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &v, 2);
	printf("so_incoming_cpu_set_short: %s\n", rv(r));
	pair(&lf, &c, &a);
	setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));	/* bounded */
	printf("so_incoming_cpu_pair: listener %d client %d accepted %d\n", cpu_of(lf),
	       IN_RANGE(cpu_of(c)), IN_RANGE(cpu_of(a)));
	v = 1000;
	setsockopt(a, SOL_SOCKET, SO_INCOMING_CPU, &v, sizeof(v));
	send(c, "x", 1, 0);
	r = recv(a, b, 1, 0);
	printf("so_incoming_cpu_data: %s %d\n", rv(r), IN_RANGE(cpu_of(a)));
	/* UDP: an unconnected receiver keeps -1, a connected one moves. */
	ua = socket(AF_INET, SOCK_DGRAM, 0);
	ub = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(ua, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	bind(ua, (struct sockaddr *)&sa, sizeof(sa));
	bind(ub, (struct sockaddr *)&sa, sizeof(sa));
	sa = lo(port_of(ua));
	sendto(ub, "y", 1, 0, (struct sockaddr *)&sa, sizeof(sa));
	r = recv(ua, b, 1, 0);
	printf("so_incoming_cpu_udp_unconnected: %s %d\n", rv(r), cpu_of(ua));
	connect(ub, (struct sockaddr *)&sa, sizeof(sa));
	sa = lo(port_of(ub));
	connect(ua, (struct sockaddr *)&sa, sizeof(sa));
	send(ub, "z", 1, 0);
	r = recv(ua, b, 1, 0);
	printf("so_incoming_cpu_udp_connected: %s %d\n", rv(r), IN_RANGE(cpu_of(ua)));
#undef IN_RANGE
	close(ua);
	close(ub);
	close(lf);
	close(c);
	close(a);
	close(d);
	close(fd);
	close(fd2);
	close(u);
}

static void *blocked_call_run(void *arg)
{
	struct blocked_call *b = arg;
	char c = 0;

	b->ret = b->send ? send(b->fd, &c, 1, 0) : recv(b->fd, &c, 1, 0);
	b->err = errno;
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Non-blocking 4096-byte sends on c until one would block and nothing
 * sent waits for its ACK (SIOCOUTQ == SIOCOUTQNSD), so no later ACK frees
 * room: a receiver that does not read holds the ACK of the data that
 * fills its window for its delayed-ACK timer, as Linux does
 * (__tcp_ack_snd_check(): that ACK would not move the window's right
 * edge), and the room it frees then lets a send through.  Linux's own
 * 127.0.0.1 hid this: its 64 KiB MSS puts the window in a segment or two
 * and its send buffer grows to megabytes, so the ACK frees too little
 * for a write wake-up; with lo at MTU 1940 the kernel's blocked send
 * took that room at 40 ms too.  Between rounds it waits in poll() (at
 * most 20 ms, 25 rounds), where Sluice's timers run.  The number of
 * sends that went.
 */
static int fill_still(int c)
{
	struct pollfd pfd = { .fd = c, .events = POLLOUT };
	char buf[4096] = { 0 };
	int n = 0, fl = fcntl(c, F_GETFL);

	fcntl(c, F_SETFL, fl | O_NONBLOCK);
	for (int round = 0; round < 25; round++) {
		int outq = -1, nsd = -2;

		for (int k = 0; k < 100000 && send(c, buf, sizeof(buf), 0) > 0; k++)
			n++;
		if (ioctl(c, SIOCOUTQ, &outq) || ioctl(c, SIOCOUTQNSD, &nsd) || outq == nsd)
			break;
		poll(&pfd, 1, 20);
	}
	fcntl(c, F_SETFL, fl);
	return n;
}

/*
 * A read, and a write to full buffers, blocked with a 400 ms timeout
 * while another thread closes the fd after 100 ms: as on Linux the call
 * holds the socket and runs to its timeout (EAGAIN), the close succeeds.
 */
static void check_close_under_blocked_call(void)
{
	struct timeval tv = { .tv_usec = 400000 };
	struct blocked_call b;
	struct timespec t0;
	pthread_t th;
	int l, c, s, n = 0;

	for (int i = 0; i < 2; i++) {
		pair(&l, &c, &s);
		b = (struct blocked_call){ .fd = c, .send = i == 1 };
		if (b.send)
			n = fill_still(c);
		setsockopt(c, SOL_SOCKET, b.send ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, sizeof(tv));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pthread_create(&th, NULL, blocked_call_run, &b);
		usleep(100000);
		printf("close_under_blocked_%s: close %s", b.send ? "send" : "recv", rv(close(c)));
		pthread_join(th, NULL);
		errno = b.err;
		printf(" call %s waited_timeout %d filled %d\n", rv(b.ret), ms_since(&t0) >= 390,
		       !b.send || n > 0);
		close(s);
		close(l);
	}
}

/* UDP datagrams larger than a packet, over 127.0.0.1 (Linux's loopback
 * takes 65507 bytes whole): sent, read whole, cut, and the limit. */
static void check_udp_large(void)
{
	static char out[65536], in[65536];
	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0), q = -1;
	struct sockaddr_in ba = lo(0);
	socklen_t l = sizeof(ba);
	struct iovec iov = { in, 100 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct timeval tv = { .tv_sec = 2 };
	long r;

	for (unsigned int i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7 + (i >> 8));
	bind(b, (struct sockaddr *)&ba, sizeof(ba));
	getsockname(b, (struct sockaddr *)&ba, &l);
	setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	connect(a, (struct sockaddr *)&ba, sizeof(ba));
	printf("udp_large_10k: send %s", rv(send(a, out, 10240, 0)));
	poll1(b, POLLIN, 1000);
	ioctl(b, FIONREAD, &q);
	printf(" fionread %d", q);
	r = recv(b, in, sizeof(in), 0);
	printf(" recv %s same %d\n", rv(r), r == 10240 && !memcmp(in, out, 10240));
	printf("udp_large_max: send %s", rv(send(a, out, 65507, 0)));
	r = recv(b, in, sizeof(in), 0);
	printf(" recv %s same %d", rv(r), r == 65507 && !memcmp(in, out, 65507));
	printf(" over %s\n", rv(send(a, out, 65508, 0)));
	send(a, out + 1, 16384, 0);
	r = recvmsg(b, &m, 0);
	printf("udp_large_cut: %s trunc %d same %d\n", rv(r), !!(m.msg_flags & MSG_TRUNC),
	       !memcmp(in, out + 1, 100));
	close(a);
	close(b);
}

/* A non-blocking connect that got through, the peer closing at once: the
 * next connect() reports it (0), the one after is EISCONN; after a
 * blocking connect, EISCONN at once. */
static void check_connect_reported(void)
{
	uint16_t port;
	int l = listener(&port), c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), a;
	struct sockaddr_in sa = lo(port);

	printf("connect_nb: %s", rv(connect(c, (struct sockaddr *)&sa, sizeof(sa))));
	a = accept(l, NULL, NULL);
	close(a);
	printf(" poll %s", evs(poll1(c, POLLOUT, 1000)));
	printf(" again %s", rv(connect(c, (struct sockaddr *)&sa, sizeof(sa))));
	printf(" third %s\n", rv(connect(c, (struct sockaddr *)&sa, sizeof(sa))));
	close(c);
	c = socket(AF_INET, SOCK_STREAM, 0);
	printf("connect_blocking: %s", rv(connect(c, (struct sockaddr *)&sa, sizeof(sa))));
	printf(" again %s\n", rv(connect(c, (struct sockaddr *)&sa, sizeof(sa))));
	close(c);
	close(accept(l, NULL, NULL));
	close(l);

	/* Reset, and refused: shut both ways, RDHUP too. */
	{
		struct linger lg = { 1, 0 };
		int s2, e = 0;
		socklen_t el = sizeof(e);

		pair(&l, &c, &s2);
		setsockopt(s2, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(s2);
		poll1(c, POLLERR, 1000);
		getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el);
		printf("poll_reset_rdhup: so_error %s events %s\n", en(e),
		       evs(poll1(c, POLLIN | POLLOUT | POLLRDHUP, 0)));
		close(c);
		close(l);
		c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		sa = lo(closed_port());
		connect(c, (struct sockaddr *)&sa, sizeof(sa));
		poll1(c, POLLOUT, 1000);
		getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el);
		printf("poll_refused_rdhup: so_error %s events %s\n", en(e),
		       evs(poll1(c, POLLIN | POLLOUT | POLLRDHUP, 0)));
		close(c);
	}
}

int main(int argc, char **argv)
{
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* "conform ids": that check alone (tests/vm/sockfd.sh, a module's
	 * stack; the rest wants the host path's loopback). */
	if (argc > 1 && !strcmp(argv[1], "ids")) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		printf("# ids fd %s\n", stack_fd(fd) ? "sluice" : "kernel");
		close(fd);
		check_sock_ids();
		printf("# done\n");
		return 0;
	}
	/* First: the first socket() of the process attaches the stack. */
	check_errno_kept();
	fd = socket(AF_INET, SOCK_STREAM, 0);
	printf("# backend: %s\n", stack_fd(fd) ? "sluice" : "kernel");
	close(fd);
	check_socket_basics();
	check_options();
	check_option_lengths();
	check_connect();
	check_connect_corners();
	check_ttl_tos();
	check_tos_bulk();
	check_dev_ioctls();
	check_errno_kept_more();
	check_more_corners();
	check_nonblocking();
	check_data();
	check_waitall();
	check_sndbuf_raise();
	check_timeout();
	check_timeout_odd();
	check_shutdown();
	check_shutdown_unconnected();
	check_epipe();
	check_connected_again();
	check_rebind();
	check_port_rows();
	check_accept4();
	check_dup();
	check_fork();
	check_select();
	check_epoll();
	check_udp();
	check_mcast_lo();
	check_bcast_lo();
	check_efault_mapped();
	check_nonblock_fill();
	check_fortified();
	check_sendfile();
	check_close_range();
	check_file_calls();
	check_tcp_options();
	check_udp_cmsgs();
	check_udp_connect_shut();
	check_issue24_opts();
	check_sock_ids();
	check_close_under_blocked_call();
	check_udp_large();
	check_connect_reported();
	check_signals();
	check_fd_ioctls_oob();
	/* Last: it closes every descriptor it did not open. */
	check_stray_closes();
	printf("# done\n");
	return 0;
}
