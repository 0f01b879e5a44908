// SPDX-License-Identifier: BSD-2-Clause
/*
 * close() from one thread while another is blocked in a call on the same
 * socket (issue 24; gVisor's ClosedReadBlockingSocket and
 * ClosedWriteBlockingSocket): on Linux the blocked call holds the file, so
 * the socket lives on under it to its data, its timeout or its error, and
 * the close() succeeds at once.  tests/vm/sockfd.sh runs it on the kernel
 * and under `sluice run` on a module stack (the socket a module socket fd,
 * which the module ends with its last fd) and compares the lines; on the
 * host path tests/preload/conform.c holds the same.
 *
 *   close_blocked [ADDR]   a TCP connection to itself on ADDR (127.0.0.1)
 *
 * Cases, one line each, no numbers that change from run to run:
 *   recv_timeout  recv() with SO_RCVTIMEO 600 ms, the fd closed after
 *                 150 ms: EAGAIN at the timeout, not before
 *   send_timeout  send() to full buffers with SO_SNDTIMEO 600 ms, closed
 *                 after 150 ms: EAGAIN at the timeout
 *   recv_data     recv() without a timeout, closed after 150 ms, the peer
 *                 sends 3 bytes 150 ms later: the call returns them
 *   next_open     the number the close freed is the next socket()'s
 * Every wait is bounded (an alarm ends the program after 20 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct call {
	int fd;
	int send;
	long ret;
	int err;
	char buf[8];
};

static const char *ip = "127.0.0.1";

static void *run_call(void *arg)
{
	struct call *c = arg;

	c->ret = c->send ? send(c->fd, "x", 1, 0) : recv(c->fd, c->buf, sizeof(c->buf), 0);
	c->err = errno;
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* A connection on ip: *c the client, *s the accepted end. */
static void pair(int *c, int *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, ip, &a.sin_addr);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len)) {
		perror("listener");
		exit(2);
	}
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(2);
	}
	*s = accept(l, NULL, NULL);
	if (*s < 0) {
		perror("accept");
		exit(2);
	}
	close(l);
}

static const char *res(long ret, int err)
{
	static char b[64];

	if (ret >= 0)
		snprintf(b, sizeof(b), "%ld", ret);
	else
		snprintf(b, sizeof(b), "-1 %s", err == EAGAIN ? "EAGAIN" : strerror(err));
	return b;
}

/* The fd's kind, for the log: a module socket fd on the module path. */
static void show_fd(const char *what, int fd)
{
	char p[64], t[PATH_MAX];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, t, sizeof(t) - 1);
	t[n > 0 ? n : 0] = '\0';
	printf("# %s fd %s\n", what, t);
}

/*
 * Non-blocking sends on c until one would block and nothing sent waits
 * for its ACK (SIOCOUTQ == SIOCOUTQNSD): a receiver that does not read
 * holds the ACK of the data that fills its window for its delayed-ACK
 * timer, as Linux does, and the room that ACK frees would let the
 * blocked send through (the kernel's too with lo at MTU 1940; at 65536
 * its send buffer of megabytes hid it).  It waits in poll(), where
 * Sluice's timers run: at most 25 rounds of 20 ms.  1 if a send went.
 */
static int fill_still(int c)
{
	struct pollfd pfd = { .fd = c, .events = POLLOUT };
	char buf[4096] = { 0 };
	int filled = 0, fl = fcntl(c, F_GETFL);

	fcntl(c, F_SETFL, fl | O_NONBLOCK);
	for (int round = 0; round < 25; round++) {
		int outq = -1, nsd = -2;

		for (int k = 0; k < 100000 && send(c, buf, sizeof(buf), 0) > 0; k++)
			filled = 1;
		if (ioctl(c, SIOCOUTQ, &outq) || ioctl(c, SIOCOUTQNSD, &nsd) || outq == nsd)
			break;
		poll(&pfd, 1, 20);
	}
	fcntl(c, F_SETFL, fl);
	return filled;
}

static void timeout_case(int send_side)
{
	struct timeval tv = { .tv_usec = 600000 };
	struct call call = { .send = send_side };
	struct timespec t0;
	pthread_t th;
	int c, s, filled = 0, rc;
	long waited;

	pair(&c, &s);
	show_fd(send_side ? "send_timeout" : "recv_timeout", c);
	if (send_side)
		filled = fill_still(c);
	setsockopt(c, SOL_SOCKET, send_side ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, sizeof(tv));
	call.fd = c;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&th, NULL, run_call, &call);
	usleep(150000);
	rc = close(c);
	pthread_join(th, NULL);
	waited = ms_since(&t0);
	printf("%s: close %d call %s at_timeout %d", send_side ? "send_timeout" : "recv_timeout",
	       rc, res(call.ret, call.err), waited >= 590);
	if (send_side)
		printf(" filled %d", filled);
	printf("\n");
	fflush(stdout);
	close(s);
}

static void data_case(void)
{
	struct call call = { .send = 0 };
	struct timespec t0;
	pthread_t th;
	int c, s, rc;
	long w;

	pair(&c, &s);
	show_fd("recv_data", c);
	call.fd = c;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_create(&th, NULL, run_call, &call);
	usleep(150000);
	rc = close(c);
	usleep(150000);
	w = send(s, "abc", 3, 0);
	pthread_join(th, NULL);
	printf("recv_data: close %d peer_send %ld call %s data %.*s after_send %d\n", rc, w,
	       res(call.ret, call.err), call.ret > 0 ? (int)call.ret : 0, call.buf,
	       ms_since(&t0) >= 290);
	fflush(stdout);
	close(s);
}

/* The number a close() frees is the next socket()'s, a copy kept for a
 * call in flight or not. */
static void next_open_case(void)
{
	struct call call = { .send = 0 };
	struct timeval tv = { .tv_usec = 300000 };
	pthread_t th;
	int c, s, n, filler;

	pair(&c, &s);
	filler = socket(AF_INET, SOCK_STREAM, 0);	/* the listener's number */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	call.fd = c;
	pthread_create(&th, NULL, run_call, &call);
	usleep(100000);
	close(c);
	n = socket(AF_INET, SOCK_STREAM, 0);
	printf("next_open: same_number %d\n", n == c);
	fflush(stdout);
	pthread_join(th, NULL);
	close(n);
	close(filler);
	close(s);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		ip = argv[1];
	alarm(20);
	setvbuf(stdout, NULL, _IOLBF, 0);
	timeout_case(0);
	timeout_case(1);
	data_case();
	next_open_case();
	return 0;
}
