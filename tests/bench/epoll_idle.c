// SPDX-License-Identifier: BSD-2-Clause
/*
 * epoll with idle connections (issue 23): a plain program, run on the
 * kernel and under `sluice run` by tests/bench/epoll_idle.sh.
 *
 *   epoll_idle N ROUNDS [busy]
 *
 * The parent listens on 127.0.0.1, forks a client that opens N + 1
 * connections, and serves them all from one level-triggered epoll set,
 * echoing what it reads.  The client ping-pongs 64 bytes ROUNDS times over
 * its first connection while the other N stay idle, and prints
 *   N <n> one-way <us> us cpu <us> us/round-trip median <us> us
 * With "busy", the N connections are another process's, in another
 * epoll set of the same stack (a second server), and busy throughout: a
 * fourth process sends 64 bytes on each in turn and reads the echo.  The
 * CPU is still the ping-pong pair's alone: what the other set's changes
 * cost this set's looks.
 * (half the mean round trip; the CPU time of both processes over the
 * same round trips, after 1000 to warm up, per round trip; half the
 * median round trip, which a few round trips that waited for a core on a
 * loaded machine do not move as they move the mean).
 *
 * Each process holds N + 2 fds or more: the program raises its own
 * RLIMIT_NOFILE to N + 256 (root may raise the hard limit too).  Past
 * IDLE_PER_ADDR connections the idle ones are bound to source addresses
 * 127.0.0.10, .11, ... (IDLE_PER_ADDR each), since one source address
 * has fewer ephemeral ports than 100,000 connections need.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

#define IDLE_PER_ADDR	20000

/* Room for n connections' fds (and some) in this process, or false. */
static bool fds_for(int n)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)n + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return true;
	rl.rlim_cur = want;
	if (rl.rlim_max < want)
		rl.rlim_max = want;
	if (!setrlimit(RLIMIT_NOFILE, &rl))
		return true;
	getrlimit(RLIMIT_NOFILE, &rl);
	fprintf(stderr, "epoll_idle: N %d needs %llu fds a process; RLIMIT_NOFILE's hard limit "
		"is %llu and cannot be raised here (CAP_SYS_RESOURCE)\n", n,
		(unsigned long long)want, (unsigned long long)rl.rlim_max);
	return false;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int client(struct sockaddr_in *a, int n, long rounds, int report)
{
	int *fd = calloc((size_t)n + 1, sizeof(int)), one = 1;
	double *rtt = calloc((size_t)rounds, sizeof(double));
	char buf[64] = { 0 };
	double t0, c0, med;

	if (!fd || !rtt)
		return 1;

	for (int i = 0; i <= n; i++) {
		struct sockaddr_in src = { .sin_family = AF_INET,
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 10 +
								    (uint32_t)(i / IDLE_PER_ADDR)) };

		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fd[i] >= 0 && n > IDLE_PER_ADDR && i &&
		    bind(fd[i], (struct sockaddr *)&src, sizeof(src))) {
			perror("client bind");
			return 1;
		}
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)a, sizeof(*a))) {
			perror("client connect");
			return 1;
		}
	}
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int i = 0; i < 1000; i++)	/* warm up */
		if (write(fd[0], buf, 64) != 64 || read(fd[0], buf, 64) != 64)
			return 1;
	t0 = now_s();
	c0 = cpu_s(RUSAGE_SELF);
	for (long r = 0; r < rounds; r++) {
		double t = now_s();
		size_t got = 0;

		if (write(fd[0], buf, 64) != 64)
			return 1;
		while (got < 64) {
			ssize_t k = read(fd[0], buf + got, 64 - got);

			if (k <= 0)
				return 1;
			got += (size_t)k;
		}
		rtt[r] = now_s() - t;
	}
	t0 = now_s() - t0;
	c0 = cpu_s(RUSAGE_SELF) - c0;
	qsort(rtt, (size_t)rounds, sizeof(*rtt), cmp_double);
	med = rounds ? rtt[rounds / 2] : 0;
	/* The client's figures go to the parent, which adds its own CPU. */
	if (write(report, &t0, sizeof(t0)) != sizeof(t0) ||
	    write(report, &c0, sizeof(c0)) != sizeof(c0) ||
	    write(report, &med, sizeof(med)) != sizeof(med))
		return 1;
	return 0;
}

/* The other set (busy): accept n connections on l2 and echo them from an
 * epoll set of its own until one closes. */
static int other_server(int l2, int n)
{
	struct epoll_event ev, evs[64];
	int ep = epoll_create1(0), one = 1;
	char buf[64];

	for (int i = 0; i < n; i++) {
		int fd = accept(l2, NULL, NULL);

		if (fd < 0)
			return 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ev.events = EPOLLIN;
		ev.data.fd = fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
			return 1;
	}
	for (;;) {
		int k = epoll_wait(ep, evs, 64, 1000);

		for (int i = 0; i < k; i++) {
			ssize_t r = read(evs[i].data.fd, buf, sizeof(buf));

			if (r <= 0 || write(evs[i].data.fd, buf, (size_t)r) != r)
				return 0;
		}
	}
}

/* Its client: n connections, 64 bytes on each in turn, the echo read,
 * until killed (at most 10 minutes). */
static int other_client(struct sockaddr_in *a2, int n, int ready)
{
	int *fd = calloc((size_t)n, sizeof(int)), one = 1;
	char buf[64] = { 0 };
	double end = now_s() + 600;

	for (int i = 0; i < n; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)a2, sizeof(*a2)))
			return 1;
		setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (write(ready, "r", 1) != 1)
		return 1;
	close(ready);
	while (now_s() < end)
		for (int i = 0; i < n; i++) {
			size_t got = 0;

			if (write(fd[i], buf, 64) != 64)
				return 1;
			while (got < 64) {
				ssize_t k = read(fd[i], buf + got, 64 - got);

				if (k <= 0)
					return 1;
				got += (size_t)k;
			}
		}
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, l, ep, one = 1, pfd[2], status;
	long rounds = argc > 2 ? atol(argv[2]) : 20000;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct epoll_event ev, evs[64];
	double t, c_client, c_srv0, c_srv, med;
	char buf[64];
	pid_t pid, other[2] = { 0, 0 };
	bool busy = argc > 3 && !strcmp(argv[3], "busy");
	int n_set = busy ? 0 : n;

	if (!fds_for(n))
		return 2;
	if (busy && n > 0) {
		struct sockaddr_in a2 = a;
		socklen_t al2 = sizeof(a2);
		int l2 = socket(AF_INET, SOCK_STREAM, 0), rp[2];

		if (l2 < 0 || pipe(rp) || bind(l2, (struct sockaddr *)&a2, sizeof(a2)) || listen(l2, 4096) ||
		    getsockname(l2, (struct sockaddr *)&a2, &al2)) {
			perror("listen (busy)");
			return 2;
		}
		other[0] = fork();
		if (other[0] == 0)
			_exit(other_server(l2, n));
		other[1] = fork();
		if (other[1] == 0)
			_exit(other_client(&a2, n, rp[1]));
		close(l2);
		close(rp[1]);
		/* The ping-pong starts once the other set's client is busy. */
		if (read(rp[0], buf, 1) != 1) {
			fprintf(stderr, "epoll_idle: the busy client failed\n");
			return 2;
		}
		close(rp[0]);
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4096) ||
	    getsockname(l, (struct sockaddr *)&a, &al) || pipe(pfd)) {
		perror("listen");
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		_exit(client(&a, n_set, rounds, pfd[1]));
	}
	close(pfd[1]);
	ep = epoll_create1(0);
	for (int i = 0; i <= n_set; i++) {
		int fd = accept(l, NULL, NULL);

		if (fd < 0) {
			perror("accept");
			return 2;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ev.events = EPOLLIN;
		ev.data.fd = fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
			perror("epoll_ctl");
			return 2;
		}
	}
	/* The server's CPU over the same echoes as the client's timing:
	 * after the client's 1000 warm-up round trips, for ROUNDS more. */
	c_srv0 = c_srv = 0;
	for (long echoes = 0;;) {
		int k = epoll_wait(ep, evs, 64, 1000);
		bool done = false;

		for (int i = 0; i < k; i++) {
			ssize_t r = read(evs[i].data.fd, buf, sizeof(buf));

			if (r <= 0) {
				done = true;
				continue;
			}
			if (write(evs[i].data.fd, buf, (size_t)r) != r)
				done = true;
			if (++echoes == 1000)
				c_srv0 = cpu_s(RUSAGE_SELF);
			else if (echoes == 1000 + rounds)
				c_srv = cpu_s(RUSAGE_SELF) - c_srv0;
		}
		if (done || waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	for (int i = 0; i < 2; i++)
		if (other[i] > 0) {
			kill(other[i], SIGKILL);
			waitpid(other[i], NULL, 0);
		}
	if (read(pfd[0], &t, sizeof(t)) != sizeof(t) ||
	    read(pfd[0], &c_client, sizeof(c_client)) != sizeof(c_client) ||
	    read(pfd[0], &med, sizeof(med)) != sizeof(med)) {
		fprintf(stderr, "client failed\n");
		return 1;
	}
	printf("N %d%s one-way %.2f us cpu %.2f us/round-trip median %.2f us\n", n,
	       busy ? " busy-other" : "", t / rounds / 2 * 1e6,
	       (c_client + c_srv) / rounds * 1e6, med / 2 * 1e6);
	return 0;
}
