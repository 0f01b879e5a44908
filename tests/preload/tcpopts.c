// SPDX-License-Identifier: BSD-2-Clause
/*
 * The last socket options of issue 15, as the kernel answers them:
 * TCP_NOTSENT_LOWAT (its value, a child's, and EPOLLOUT following the
 * unsent bytes), SO_TIMESTAMP / SO_TIMESTAMPNS (values and the control
 * message a TCP and a UDP read carry), TCP_FASTOPEN_CONNECT and
 * TCP_FASTOPEN in each state, TCP_ULP "tls" and SO_ATTACH_FILTER on a
 * connection.  One line a case, "name: what happened";
 * tests/host/test_conform_opts.sh runs it on the kernel and under
 * `sluice run` (both ends of every connection in one stack) and compares
 * the lines.  Everything over 127.0.0.1; every wait bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "show.h"
#include "stackfd.h"

/* Connection ends made, and how many were the stack's (stackfd.h). */
static int ends, stack_ends;

static struct sockaddr_in lo(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int listener(void)
{
	struct sockaddr_in a = lo(0);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 8)) {
		perror("listener");
		exit(1);
	}
	return l;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);

	getsockname(fd, (struct sockaddr *)&a, &l);
	return ntohs(a.sin_port);
}

/* A connection: *c the client's end, *a the server's. */
static void pair(int l, int c0, int *c, int *a)
{
	struct sockaddr_in to = lo(port_of(l));

	*c = c0 >= 0 ? c0 : socket(AF_INET, SOCK_STREAM, 0);
	if (connect(*c, (struct sockaddr *)&to, sizeof(to))) {
		perror("connect");
		exit(1);
	}
	*a = accept(l, NULL, NULL);
	if (*a < 0) {
		perror("accept");
		exit(1);
	}
	ends += 2;
	stack_ends += stack_fd(*c) + stack_fd(*a);
}

/* "0" or the errno's name. */
static const char *r(int ret)
{
	return ret ? en(errno) : "0";
}

static const char *setint(int fd, int level, int name, int v)
{
	return r(setsockopt(fd, level, name, &v, sizeof(v)));
}

/* The value, or the errno's name. */
static const char *getint(int fd, int level, int name)
{
	static char buf[8][32];
	static int k;
	char *b = buf[k++ & 7];
	int v = 0;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, level, name, &v, &l))
		return en(errno);
	snprintf(b, 32, "%d", v);
	return b;
}

static int unsent(int fd)
{
	int n = -1;

	ioctl(fd, SIOCOUTQNSD, &n);
	return n;
}

static void nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* Writes 4 KiB pieces until EAGAIN, and again while poll says writable
 * within 200 ms (at most 64 MiB): the bytes taken.  The peer reads
 * nothing, so it ends with its window closed. */
static long fill(int fd)
{
	static char buf[4096];
	long total = 0;

	nonblock(fd, true);
	for (int i = 0; i < 16384; i++) {
		ssize_t n = send(fd, buf, sizeof(buf), MSG_DONTWAIT);
		struct pollfd p = { .fd = fd, .events = POLLOUT };

		if (n > 0) {
			total += n;
			continue;
		}
		if (poll(&p, 1, 200) <= 0)
			break;
	}
	return total;
}

static void check_lowat_values(void)
{
	int t = socket(AF_INET, SOCK_STREAM, 0), u = socket(AF_INET, SOCK_DGRAM, 0);
	int l, c, a;

	printf("lowat_default: %s\n", getint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT));
	printf("lowat_set: %s", setint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 16384));
	printf(" %s", getint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT));
	printf(" minus1 %s", setint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT, -1));
	printf(" %s", getint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT));
	printf(" zero %s", setint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 0));
	printf(" %s\n", getint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT));
	printf("lowat_udp: %s\n", setint(u, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 1));
	/* Kept through connect(), and a listener's children have it. */
	l = listener();
	setint(l, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 5000);
	setint(t, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 7000);
	pair(l, t, &c, &a);
	printf("lowat_connected: %s child %s\n", getint(c, IPPROTO_TCP, TCP_NOTSENT_LOWAT),
	       getint(a, IPPROTO_TCP, TCP_NOTSENT_LOWAT));
	close(a);
	close(c);
	close(l);
	close(u);
}

struct drain {
	int fd;
	long want;
};

/* The peer reads what was written, 4 KiB at a time, 2 ms apart. */
static void *drainer(void *arg)
{
	struct drain *d = arg;
	char buf[4096];
	long got = 0;

	for (int i = 0; got < d->want && i < 20000; i++) {
		struct pollfd p = { .fd = d->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 1000) <= 0)
			break;
		n = recv(d->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			got += n;
		usleep(2000);
	}
	return NULL;
}

/*
 * The writer sets a mark and fills until EAGAIN while its peer reads
 * nothing: not writable, more than half a mark unsent.  Then the peer
 * reads slowly; the writer waits for EPOLLOUT (edge-triggered, one
 * epoll_wait of up to 5 s): it comes, with fewer than half a mark
 * unsent, before everything was sent.  The same without a mark fills
 * more.
 */
static void check_lowat_epollout(bool sysctl_mark)
{
	const int mark = 32768;
	int l = listener(), c, a, c2, a2, ep;
	long with, without;
	struct epoll_event ev = { .events = EPOLLOUT | EPOLLET }, got;
	struct drain d;
	pthread_t th;
	int n, u;
	short re;

	pair(l, -1, &c2, &a2);
	without = fill(c2);
	pair(l, -1, &c, &a);
	/* "lowat-sysctl": the mark is net.ipv4.tcp_notsent_lowat's, set by
	 * the caller in its namespace; the socket sets none. */
	if (sysctl_mark)
		printf("lowat_mark: sysctl %s\n", getint(c, IPPROTO_TCP, TCP_NOTSENT_LOWAT));
	else
		printf("lowat_mark: %s\n", setint(c, IPPROTO_TCP, TCP_NOTSENT_LOWAT, mark));
	with = fill(c);
	usleep(100000);
	struct pollfd p = { .fd = c, .events = POLLOUT };

	poll(&p, 1, 0);
	re = p.revents;
	u = unsent(c);
	if (getenv("TCPOPTS_DEBUG"))
		printf("# with %ld without %ld unsent %d\n", with, without, u);
	printf("lowat_filled: fewer than without %s pollout %s unsent over half %s\n",
	       with < without ? "yes" : "no", re & POLLOUT ? "yes" : "no",
	       2L * u >= mark ? "yes" : "no");
	ep = epoll_create1(0);
	epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
	n = epoll_wait(ep, &got, 1, 0);
	printf("lowat_epoll_before: %d\n", n);
	d.fd = a;
	d.want = with;
	pthread_create(&th, NULL, drainer, &d);
	n = epoll_wait(ep, &got, 1, 5000);
	u = unsent(c);
	printf("lowat_epollout: %d unsent under half %s\n", n,
	       n == 1 && 2L * u < mark ? "yes" : n == 1 ? "no" : "-");
	/* Writable now: a write is taken. */
	printf("lowat_write_after: %s\n", send(c, "x", 1, MSG_DONTWAIT) == 1 ? "1" :
					   en(errno));
	pthread_join(th, NULL);
	close(ep);
	close(a2);
	close(c2);
	close(a);
	close(c);
	close(l);
}

/* A blocking send() past the mark returns once the peer reads. */
static void check_lowat_blocking(void)
{
	static char buf[262144];
	int l = listener(), c, a;
	struct drain d;
	pthread_t th;
	long with;
	ssize_t n;

	pair(l, -1, &c, &a);
	setint(c, IPPROTO_TCP, TCP_NOTSENT_LOWAT, 16384);
	with = fill(c);
	nonblock(c, false);
	d.fd = a;
	d.want = with + (long)sizeof(buf);
	pthread_create(&th, NULL, drainer, &d);
	struct timeval tv = { .tv_sec = 5 };

	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = send(c, buf, sizeof(buf), 0);
	printf("lowat_blocking_send: %s\n", n > 0 ? "returned" : en(errno));
	shutdown(c, SHUT_WR);
	pthread_join(th, NULL);
	close(a);
	close(c);
	close(l);
}

/* The kinds of control message a read carries, and whether the time in
 * an SCM_TIMESTAMP(NS) is within 5 s of now. */
static void read_cmsgs(const char *name, int fd)
{
	char data[64], ctl[256];
	struct iovec iov = { .iov_base = data, .iov_len = sizeof(data) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timeval now;
	ssize_t n;

	poll(&p, 1, 2000);
	n = recvmsg(fd, &m, MSG_DONTWAIT);
	gettimeofday(&now, NULL);
	printf("%s: read %zd", name, n);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		double t = -1;

		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMP) {
			struct timeval tv;

			memcpy(&tv, CMSG_DATA(cm), sizeof(tv));
			t = tv.tv_sec + tv.tv_usec / 1e6;
			printf(" SCM_TIMESTAMP len %zu", (size_t)cm->cmsg_len);
		} else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			t = ts.tv_sec + ts.tv_nsec / 1e9;
			printf(" SCM_TIMESTAMPNS len %zu", (size_t)cm->cmsg_len);
		} else {
			printf(" %d/%d", cm->cmsg_level, cm->cmsg_type);
		}
		if (t >= 0) {
			double d = now.tv_sec + now.tv_usec / 1e6 - t;

			printf(" %s", d >= 0 && d < 5 ? "now" : "off");
		}
	}
	printf("\n");
}

static void ts_values(const char *name, int fd)
{
	printf("%s: ns-on %s", name, setint(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1));
	printf(" ts %s ns %s", getint(fd, SOL_SOCKET, SO_TIMESTAMP),
	       getint(fd, SOL_SOCKET, SO_TIMESTAMPNS));
	printf(" ts-on %s", setint(fd, SOL_SOCKET, SO_TIMESTAMP, 1));
	printf(" ts %s ns %s", getint(fd, SOL_SOCKET, SO_TIMESTAMP),
	       getint(fd, SOL_SOCKET, SO_TIMESTAMPNS));
	printf(" ns-on %s", setint(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1));
	printf(" ts-off %s", setint(fd, SOL_SOCKET, SO_TIMESTAMP, 0));
	printf(" ts %s ns %s\n", getint(fd, SOL_SOCKET, SO_TIMESTAMP),
	       getint(fd, SOL_SOCKET, SO_TIMESTAMPNS));
}

static void check_timestamps(void)
{
	int t = socket(AF_INET, SOCK_STREAM, 0), l = listener(), c, a;
	int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ua = lo(0);
	socklen_t ul = sizeof(ua);

	printf("ts_default: ts %s ns %s\n", getint(t, SOL_SOCKET, SO_TIMESTAMP),
	       getint(t, SOL_SOCKET, SO_TIMESTAMPNS));
	ts_values("ts_tcp_fresh", t);
	close(t);
	pair(l, -1, &c, &a);
	ts_values("ts_tcp_connected", a);
	/* Linux stamps arrivals once a socket wants stamps, switched on by
	 * a deferred work item (net_enable_timestamp()): a segment that
	 * comes at once may carry none, and a read of it no message. */
	setint(a, SOL_SOCKET, SO_TIMESTAMPNS, 1);
	usleep(100000);
	send(c, "hello", 5, 0);
	read_cmsgs("ts_tcp_ns_read", a);
	setint(a, SOL_SOCKET, SO_TIMESTAMP, 1);
	send(c, "hello", 5, 0);
	read_cmsgs("ts_tcp_us_read", a);
	setint(a, SOL_SOCKET, SO_TIMESTAMPNS, 0);
	send(c, "hello", 5, 0);
	read_cmsgs("ts_tcp_off_read", a);
	close(a);
	close(c);
	close(l);

	bind(u1, (struct sockaddr *)&ua, sizeof(ua));
	getsockname(u1, (struct sockaddr *)&ua, &ul);
	ts_values("ts_udp", u1);
	setint(u1, SOL_SOCKET, SO_TIMESTAMPNS, 1);
	usleep(100000);
	sendto(u2, "dgram", 5, 0, (struct sockaddr *)&ua, sizeof(ua));
	read_cmsgs("ts_udp_ns_read", u1);
	setint(u1, SOL_SOCKET, SO_TIMESTAMP, 1);
	sendto(u2, "dgram", 5, 0, (struct sockaddr *)&ua, sizeof(ua));
	read_cmsgs("ts_udp_us_read", u1);
	close(u1);
	close(u2);
}

/* An echo of 5 bytes over a connection: "ok" or what went wrong. */
static const char *echo(int c, int a)
{
	char buf[8] = "";
	struct pollfd p = { .fd = a, .events = POLLIN };

	if (send(c, "hello", 5, 0) != 5)
		return "send";
	poll(&p, 1, 2000);
	return recv(a, buf, sizeof(buf), MSG_DONTWAIT) == 5 && !memcmp(buf, "hello", 5) ? "ok" :
												"lost";
}

static void check_fastopen(void)
{
	int f = socket(AF_INET, SOCK_STREAM, 0), b = socket(AF_INET, SOCK_STREAM, 0);
	int l = listener(), c, a, l2;
	struct sockaddr_in any = lo(0);

	/* TCP_FASTOPEN_CONNECT: fresh, bound, connected, listening. */
	printf("tfo_connect_fresh: bad %s", setint(f, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 2));
	printf(" get %s", getint(f, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));
	printf(" set %s", setint(f, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1));
	printf(" get %s\n", getint(f, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));
	pair(l, f, &c, &a);
	/* Under sluice run the kernel's (it does TFO): not counted. */
	ends -= 2;
	stack_ends -= stack_fd(c) + stack_fd(a);
	printf("tfo_connect_fresh_echo: %s\n", echo(c, a));
	close(a);
	close(c);
	bind(b, (struct sockaddr *)&any, sizeof(any));
	printf("tfo_connect_bound: %s", setint(b, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1));
	printf(" get %s\n", getint(b, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));
	pair(l, b, &c, &a);
	printf("tfo_connect_bound_echo: %s get %s\n", echo(c, a),
	       getint(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));
	printf("tfo_connect_connected: %s", setint(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 0));
	printf(" %s", setint(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1));
	printf(" get %s", getint(c, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));
	printf(" accepted %s", setint(a, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1));
	printf(" get %s\n", getint(a, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));
	close(a);
	close(c);
	printf("tfo_connect_listening: %s get %s\n",
	       setint(l, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, 1),
	       getint(l, IPPROTO_TCP, TCP_FASTOPEN_CONNECT));

	/* TCP_FASTOPEN: before listen(), on a listener, on a connection. */
	l2 = socket(AF_INET, SOCK_STREAM, 0);
	printf("tfo_fresh: get %s", getint(l2, IPPROTO_TCP, TCP_FASTOPEN));
	printf(" neg %s", setint(l2, IPPROTO_TCP, TCP_FASTOPEN, -1));
	printf(" set %s", setint(l2, IPPROTO_TCP, TCP_FASTOPEN, 5));
	printf(" get %s\n", getint(l2, IPPROTO_TCP, TCP_FASTOPEN));
	bind(l2, (struct sockaddr *)&any, sizeof(any));
	listen(l2, 8);
	printf("tfo_listening: get %s", getint(l2, IPPROTO_TCP, TCP_FASTOPEN));
	printf(" big %s", setint(l2, IPPROTO_TCP, TCP_FASTOPEN, 1000000));
	printf(" get %s", getint(l2, IPPROTO_TCP, TCP_FASTOPEN));
	printf(" set %s", setint(l2, IPPROTO_TCP, TCP_FASTOPEN, 16));
	printf(" get %s\n", getint(l2, IPPROTO_TCP, TCP_FASTOPEN));
	pair(l2, -1, &c, &a);
	printf("tfo_listener_serves: %s\n", echo(c, a));
	printf("tfo_connection: %s", setint(c, IPPROTO_TCP, TCP_FASTOPEN, 5));
	printf(" get %s", getint(c, IPPROTO_TCP, TCP_FASTOPEN));
	printf(" child get %s\n", getint(a, IPPROTO_TCP, TCP_FASTOPEN));
	close(a);
	close(c);
	close(l2);
	close(l);
}

/* Options the stack cannot run on a connection with both of its ends
 * in it (lib/preload/README.md). */
static void check_ulp_filter(void)
{
	struct sock_filter all[] = { BPF_STMT(BPF_RET | BPF_K, 0xffffffff) };
	struct sock_fprog prog = { .len = 1, .filter = all };
	int l = listener(), c, a;

	pair(l, -1, &c, &a);
	printf("ulp_tls: %s\n", r(setsockopt(c, IPPROTO_TCP, TCP_ULP, "tls", 3)));
	printf("ulp_none: %s\n", r(setsockopt(c, IPPROTO_TCP, TCP_ULP, "nosuchulp", 9)));
	printf("ulp_after_echo: %s\n", echo(c, a));
	printf("attach_filter: %s\n",
	       r(setsockopt(a, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog))));
	printf("attach_filter_echo: %s\n", echo(c, a));
	close(a);
	close(c);
	close(l);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!only || !strcmp(only, "lowat")) {
		check_lowat_values();
		check_lowat_epollout(false);
		check_lowat_blocking();
	}
	if (only && !strcmp(only, "lowat-sysctl"))
		check_lowat_epollout(true);
	if (!only || !strcmp(only, "ts"))
		check_timestamps();
	if (!only || !strcmp(only, "tfo"))
		check_fastopen();
	if (!only || !strcmp(only, "ulp"))
		check_ulp_filter();
	printf("# stack ends: %d of %d\n", stack_ends, ends);
	return 0;
}
