// SPDX-License-Identifier: BSD-2-Clause
/*
 * A writer asleep on a full send buffer wakes when another thread raises
 * SO_SNDBUF (gVisor's SendUnblocksOnSendBufferIncrease): Linux's
 * sk_setsockopt() calls sk_write_space() after it sets sk_sndbuf, which
 * wakes a blocked send() and every poll or epoll sleeper waiting for
 * POLLOUT.  A TCP connection on loopback whose reader never reads; the
 * writer fills its send buffer (O_NONBLOCK, until EAGAIN) at a quarter of
 * the largest SO_SNDBUF, then a thread waits to write: `send` (the
 * default) one byte blocking, `epoll` in epoll_wait() for EPOLLOUT; 300 ms
 * later the main thread sets SO_SNDBUF to half the largest.  Prints
 * "woken within 1 s" (the kernel: at the first 100 ms look), "woken late,
 * after N ms", or "not woken" when the thread still waits 3 s after the
 * option; the kernel and Sluice must print the same
 * (tests/host/test_conform_sndbuf_wake.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int wfd;
static volatile int sent;	/* the test program's own flag, not the library's */

static int use_epoll;

static void *sender(void *arg)
{
	char c = 'x';
	int fl = fcntl(wfd, F_GETFL);

	(void)arg;
	if (use_epoll) {
		struct epoll_event ev = { .events = EPOLLOUT }, got;
		int ep = epoll_create1(0);

		epoll_ctl(ep, EPOLL_CTL_ADD, wfd, &ev);
		sent = epoll_wait(ep, &got, 1, 5000) == 1 ? 1 : -ETIMEDOUT;
		close(ep);
		return NULL;
	}
	fcntl(wfd, F_SETFL, fl & ~O_NONBLOCK);
	if (send(wfd, &c, 1, 0) == 1)
		sent = 1;
	else
		sent = -errno;
	return NULL;
}

static void msleep(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), r, big = 0x7fffffff, max = 0, v;
	socklen_t ml = sizeof(max);
	static char buf[1 << 20];
	pthread_t t;
	int steps = 0;

	use_epoll = argc > 1 && argv[1][0] == 'e';
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &al)) {
		perror("listener");
		return 2;
	}
	wfd = socket(AF_INET, SOCK_STREAM, 0);
	if (wfd < 0 || connect(wfd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		return 2;
	}
	r = accept(l, NULL, NULL);
	if (r < 0) {
		perror("accept");
		return 2;
	}
	if (setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) ||
	    getsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &max, &ml)) {
		perror("SO_SNDBUF");
		return 2;
	}
	v = max >> 2;
	setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	fcntl(wfd, F_SETFL, fcntl(wfd, F_GETFL) | O_NONBLOCK);
	for (int quiet = 0; quiet < 3;) {
		/* until EAGAIN three times in a row, 10 ms apart: what
		 * loopback moves to the reader's buffer is gone from ours */
		if (send(wfd, buf, sizeof(buf), 0) < 0) {
			if (errno != EAGAIN) {
				perror("send");
				return 2;
			}
			quiet++;
		} else {
			quiet = 0;
		}
		msleep(10);
	}
	pthread_create(&t, NULL, sender, NULL);
	msleep(300);
	if (sent) {
		printf("send returned before the option (%d)\n", sent);
		return 1;
	}
	v = max >> 1;
	if (setsockopt(wfd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v))) {
		perror("SO_SNDBUF raise");
		return 2;
	}
	while (!sent && steps < 30) {
		msleep(100);
		steps++;
	}
	if (sent != 1) {
		printf("not woken (%d)\n", sent);
		fflush(stdout);
		_exit(1);
	}
	pthread_join(t, NULL);
	if (steps <= 10)
		printf("woken within 1 s\n");
	else
		printf("woken late, after %d00 ms\n", steps);
	return 0;
}
