// SPDX-License-Identifier: BSD-2-Clause
/*
 * pool_many N BYTES [LIMIT]: N connections on 127.0.0.1 in one process; the
 * server side of each writes BYTES at once (as a web server answers N
 * keep-alive clients), edge-triggered as nginx waits to write the rest,
 * and the client side reads every connection, level-triggered as wrk
 * does.  Prints "setup S all S", the seconds to open them and to
 * deliver every byte (when the slowest connection got its last); fails
 * if that takes more than LIMIT seconds (default 60).
 * Under Sluice each connection's bytes in flight are packet buffers of
 * the stack's one pool; with too few for them the windows shut and the
 * writers wait for zero-window probes (tests/host/test_pool_many.sh).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	static char buf[65536], out[65536];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct epoll_event *evs;
	struct rlimit rl;
	int n, bytes, lfd, ew, er, left_conns;
	int *cfd, *sfd, *wleft, *rleft;
	double t0, t1, limit = argc > 3 ? atof(argv[3]) : 60;

	if (argc != 3 && argc != 4)
		return 2;
	n = atoi(argv[1]);
	bytes = atoi(argv[2]);
	if (n < 1 || bytes < 1 || bytes > (int)sizeof(out))
		return 2;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n * 2 + 64) {
		rl.rlim_cur = (rlim_t)n * 2 + 64;
		if (rl.rlim_cur > rl.rlim_max || setrlimit(RLIMIT_NOFILE, &rl))
			die("setrlimit");
	}
	memset(out, 'x', sizeof(out));
	cfd = calloc((size_t)n, sizeof(int));
	sfd = calloc((size_t)n, sizeof(int));
	wleft = calloc((size_t)n, sizeof(int));
	rleft = calloc((size_t)n, sizeof(int));
	evs = calloc((size_t)n, sizeof(*evs));
	if (!cfd || !sfd || !wleft || !rleft || !evs)
		die("calloc");
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl))
		die("listen");
	ew = epoll_create1(0);
	er = epoll_create1(0);
	if (ew < 0 || er < 0)
		die("epoll_create1");
	t0 = now();
	for (int i = 0; i < n; i++) {
		struct epoll_event e = { .data.u32 = (uint32_t)i };

		cfd[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (cfd[i] < 0 || connect(cfd[i], (struct sockaddr *)&sa, sizeof(sa)))
			die("connect");
		sfd[i] = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (sfd[i] < 0)
			die("accept4");
		e.events = EPOLLIN;
		if (epoll_ctl(er, EPOLL_CTL_ADD, cfd[i], &e))
			die("epoll_ctl");
		wleft[i] = rleft[i] = bytes;
	}
	t1 = now();
	printf("setup %.3f ", t1 - t0);
	/* Every server side answers at once; what does not fit waits. */
	for (int i = 0; i < n; i++) {
		struct epoll_event e = { .events = EPOLLOUT | EPOLLET, .data.u32 = (uint32_t)i };
		ssize_t w = write(sfd[i], out, (size_t)wleft[i]);

		if (w < 0 && errno != EAGAIN)
			die("write");
		if (w > 0)
			wleft[i] -= (int)w;
		if (epoll_ctl(ew, EPOLL_CTL_ADD, sfd[i], &e))
			die("epoll_ctl");
	}
	t0 = now();
	left_conns = n;
	while (left_conns) {
		int k = epoll_wait(ew, evs, n, 0);

		for (int j = 0; j < k; j++) {
			int i = (int)evs[j].data.u32;

			while (wleft[i]) {
				ssize_t w = write(sfd[i], out, (size_t)wleft[i]);

				if (w < 0 && errno == EAGAIN)
					break;
				if (w <= 0)
					die("write");
				wleft[i] -= (int)w;
			}
		}
		k = epoll_wait(er, evs, n, 10);
		for (int j = 0; j < k; j++) {
			int i = (int)evs[j].data.u32;
			ssize_t r = read(cfd[i], buf, sizeof(buf));

			if (r < 0 && errno == EAGAIN)
				continue;
			if (r <= 0 || r > rleft[i]) {
				fprintf(stderr, "read %zd on connection %d (%d left)\n", r, i,
					rleft[i]);
				return 1;
			}
			rleft[i] -= (int)r;
			if (!rleft[i]) {
				left_conns--;
				epoll_ctl(er, EPOLL_CTL_DEL, cfd[i], NULL);
			}
		}
		if (now() - t0 > limit) {
			fprintf(stderr, "%d connections still short after %.0f s\n", left_conns,
				limit);
			return 1;
		}
	}
	printf("all %.3f\n", now() - t0);
	return 0;
}
