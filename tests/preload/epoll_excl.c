// SPDX-License-Identifier: BSD-2-Clause
/*
 * EPOLLEXCLUSIVE (issue 23 items 2 and 7), the same program on the kernel
 * and under `sluice run`:
 *
 *   epoll_excl excl|plain|mixed|mixedplain [WORKERS [CONNS]]
 *
 * First the errno cases of epoll_ctl(2) on a socket: EPOLL_CTL_MOD with
 * EPOLLEXCLUSIVE, or of an item added with it, and EPOLLEXCLUSIVE with
 * EPOLLONESHOT, EPOLLRDHUP or EPOLLPRI: EINVAL; with EPOLLET: allowed.
 * Then WORKERS (4, at least 2) forked processes, each with an epoll set of its own
 * made after the fork, watch one shared listener (with EPOLLEXCLUSIVE, or
 * without: plain) and accept one connection per wake-up; the parent
 * connects CONNS (200) times one at a time, each after a pause that lets
 * every worker fall asleep, and reads the byte its server answers.  A
 * wake-up is a return of epoll_wait() that reports the listener, in any
 * worker.  The kernel wakes one worker a connection with the flag, every
 * worker without it.  Then a burst: 32 connections at once, every one
 * answered (an exclusive wake-up is never lost: a worker that leaves a
 * connection queued passes it on).  Then worker 0 is killed asleep
 * (SIGKILL) and 20 more connections are made one at a time: every one
 * answered by the others (a dead waiter is passed over).  Lines of the
 * form "name value" are
 * the verdicts a test compares with the kernel's; "info_" lines are the
 * figures.  Bounded: every wait has a timeout, the workers stop at a
 * flag or after 60 s.
 *
 * mixed and mixedplain: the same with kernel fds in each worker's set
 * beside the listener, as nginx's workers have (their channel to the
 * master, a socketpair end, and an eventfd): a set of both kinds.  The
 * parent stops each worker through its channel (a byte the worker reads
 * from its set), and a worker's eventfd is written once in the burst (the
 * worker reads it from its set): both counted (kernel_fds_seen).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXW	16
#define BURST	32

struct shared {
	volatile int ready, stop, phase, acks;
	volatile long wakes[MAXW], accepted[MAXW], eagain[MAXW], csw[MAXW];
	/* mixed: the channel's stop byte and the eventfd's count seen */
	volatile int chan_seen[MAXW], efd_seen[MAXW];
};

/* mixed: each worker's channel (its end, the parent's) and eventfd. */
static int chan[MAXW][2], efd[MAXW];

/* The process's voluntary context switches: its sleeps that ended. */
static long nvcsw(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *err_name(int r, int e)
{
	if (r == 0)
		return "ok";
	switch (e) {
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case EBADF: return "EBADF";
	default: return "other";
	}
}

static void ctl_case(const char *name, int ep, int op, int fd, unsigned int events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };
	int r = epoll_ctl(ep, op, fd, &ev);

	printf("%s %s\n", name, err_name(r, errno));
}

static void errno_cases(void)
{
	int ep = epoll_create1(0), s = socket(AF_INET, SOCK_STREAM, 0);
	int t = socket(AF_INET, SOCK_STREAM, 0);

	if (ep < 0 || s < 0 || t < 0) {
		perror("setup");
		exit(1);
	}
	ctl_case("ctl_add_excl_oneshot", ep, EPOLL_CTL_ADD, s,
		 EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT);
	ctl_case("ctl_add_excl_rdhup", ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDHUP);
	ctl_case("ctl_add_excl_pri", ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLEXCLUSIVE | EPOLLPRI);
	ctl_case("ctl_mod_excl_absent", ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLEXCLUSIVE);
	ctl_case("ctl_mod_absent", ep, EPOLL_CTL_MOD, s, EPOLLIN);
	ctl_case("ctl_add_excl_et", ep, EPOLL_CTL_ADD, s,
		 EPOLLIN | EPOLLOUT | EPOLLET | EPOLLEXCLUSIVE);
	ctl_case("ctl_add_excl_again", ep, EPOLL_CTL_ADD, s, EPOLLIN | EPOLLEXCLUSIVE);
	ctl_case("ctl_mod_excl_item", ep, EPOLL_CTL_MOD, s, EPOLLIN);
	ctl_case("ctl_mod_excl_item_excl", ep, EPOLL_CTL_MOD, s, EPOLLIN | EPOLLEXCLUSIVE);
	ctl_case("ctl_del_excl_item", ep, EPOLL_CTL_DEL, s, 0);
	ctl_case("ctl_add_plain", ep, EPOLL_CTL_ADD, t, EPOLLIN);
	ctl_case("ctl_mod_plain_excl", ep, EPOLL_CTL_MOD, t, EPOLLIN | EPOLLEXCLUSIVE);
	ctl_case("ctl_mod_plain", ep, EPOLL_CTL_MOD, t, EPOLLOUT);
	close(t);
	close(s);
	close(ep);
}

static void worker(struct shared *sh, int w, int lfd, unsigned int events, int mixed)
{
	struct epoll_event ev = { .events = events, .data.fd = lfd }, out[8];
	struct epoll_event kev = { .events = EPOLLIN };
	int ep = epoll_create1(0);
	double end = now_s() + 60;
	long base;
	int noted = 0;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev)) {
		perror("worker epoll");
		_exit(1);
	}
	/* nginx's order: the channel and the eventfd, then the listener
	 * (here after it: the order is not what is tested). */
	if (mixed) {
		kev.data.fd = chan[w][1];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, chan[w][1], &kev)) {
			perror("worker channel");
			_exit(1);
		}
		kev.data.fd = efd[w];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, efd[w], &kev)) {
			perror("worker eventfd");
			_exit(1);
		}
	}
	base = nvcsw();
	__sync_fetch_and_add(&sh->ready, 1);
	while (!sh->stop && now_s() < end) {
		int n = epoll_wait(ep, out, 8, 1000), c;

		/* The one-at-a-time phase over: its sleeps that ended. */
		if (sh->phase && !noted) {
			sh->csw[w] = nvcsw() - base;
			noted = 1;
			__sync_fetch_and_add(&sh->acks, 1);
		}
		if (n <= 0)
			continue;
		/* The kernel fds' events (mixed): a stop byte, the eventfd. */
		for (int i = 0; i < n && mixed; i++) {
			uint64_t v;
			char b;

			if (out[i].data.fd == chan[w][1] && read(chan[w][1], &b, 1) == 1)
				sh->chan_seen[w] = 1;
			if (out[i].data.fd == efd[w] && read(efd[w], &v, 8) == 8)
				sh->efd_seen[w] += (int)v;
		}
		if (sh->chan_seen[w])
			break;
		if (mixed) {
			int k = 0;

			for (int i = 0; i < n; i++)
				k += out[i].data.fd == lfd;
			if (!k)
				continue;
		}
		if (!sh->phase)
			sh->wakes[w]++;
		/* One connection a wake-up (nginx with multi_accept off). */
		c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (c < 0) {
			sh->eagain[w]++;
			continue;
		}
		sh->accepted[w]++;
		if (write(c, "x", 1) != 1)
			perror("write");
		close(c);
	}
	_exit(0);
}

/* Connect and read the server's byte (5 s at most): 1 if answered. */
static int one_conn(int port, int *fdp)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		if (fd >= 0)
			close(fd);
		return 0;
	}
	*fdp = fd;
	return 1;
}

static int answered(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;

	return poll(&p, 1, 5000) == 1 && read(fd, &b, 1) == 1;
}

static long sum(volatile long *v, int n)
{
	long t = 0;

	for (int i = 0; i < n; i++)
		t += v[i];
	return t;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "excl";
	int excl = !strcmp(mode, "excl") || !strcmp(mode, "mixed");
	int mixed = !strncmp(mode, "mixed", 5);
	int nw = argc > 2 ? atoi(argv[2]) : 4, conns = argc > 3 ? atoi(argv[3]) : 200;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct shared *sh;
	pid_t pids[MAXW];
	int lfd, port, ok = 0, burst_ok = 0, bfd[BURST], killed_ok = 0;
	long w0, a0, c0;
	double t0, kill_slowest = 0;

	if (nw < 2 || nw > MAXW || conns < 1)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	errno_cases();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (sh == MAP_FAILED || lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lfd, 128) || getsockname(lfd, (struct sockaddr *)&a, &alen)) {
		perror("listener");
		return 1;
	}
	port = ntohs(a.sin_port);
	for (int w = 0; w < nw && mixed; w++)
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, chan[w]) ||
		    (efd[w] = eventfd(0, EFD_NONBLOCK)) < 0) {
			perror("channel");
			return 1;
		}
	for (int w = 0; w < nw; w++) {
		pids[w] = fork();
		if (pids[w] == 0)
			worker(sh, w, lfd, EPOLLIN | (excl ? EPOLLEXCLUSIVE : 0), mixed);
	}
	t0 = now_s();
	while (sh->ready < nw && now_s() - t0 < 10)
		usleep(1000);
	usleep(200000);
	for (int i = 0; i < conns; i++) {
		int fd = -1;

		/* Every worker asleep again before the next connection. */
		usleep(3000);
		if (one_conn(port, &fd) && answered(fd))
			ok++;
		if (fd >= 0)
			close(fd);
	}
	usleep(50000);
	w0 = sum(sh->wakes, nw);
	a0 = sum(sh->accepted, nw);
	sh->phase = 1;
	t0 = now_s();
	while (sh->acks < nw && now_s() - t0 < 5)
		usleep(1000);
	c0 = sum(sh->csw, nw);
	/* The burst: all connected first, then every answer read. */
	for (int i = 0; i < BURST; i++) {
		uint64_t one = 1;

		if (!one_conn(port, &bfd[i]))
			bfd[i] = -1;
		/* Each worker's eventfd once, in the middle of the burst. */
		if (mixed && i < nw && write(efd[i], &one, 8) != 8)
			perror("eventfd");
	}
	for (int i = 0; i < BURST; i++) {
		if (bfd[i] >= 0 && answered(bfd[i]))
			burst_ok++;
		if (bfd[i] >= 0)
			close(bfd[i]);
	}
	/* A worker killed while it sleeps: the others take every
	 * connection after it. */
	usleep(50000);
	kill(pids[0], SIGKILL);
	waitpid(pids[0], NULL, 0);
	for (int i = 0; i < 20; i++) {
		int fd = -1;
		double t;

		usleep(3000);
		t = now_s();
		if (one_conn(port, &fd) && answered(fd))
			killed_ok++;
		if (now_s() - t > kill_slowest)
			kill_slowest = now_s() - t;
		if (fd >= 0)
			close(fd);
	}
	/* mixed: each worker stops at its channel's byte, read from its
	 * set; the flag only after 5 s (then one was not seen). */
	for (int w = 1; w < nw && mixed; w++)
		if (write(chan[w][0], "s", 1) != 1)
			perror("channel write");
	t0 = now_s();
	for (int w = 1; w < nw; w++) {
		int st;

		while (mixed && waitpid(pids[w], &st, WNOHANG) == 0 && now_s() - t0 < 5)
			usleep(1000);
		sh->stop = 1;
		waitpid(pids[w], &st, 0);
	}
	printf("info_wakes %ld info_accepted %ld info_eagain %ld info_conns %d\n", w0, a0,
	       sum(sh->eagain, nw), conns);
	printf("info_reports_per_conn %.2f info_switches_per_conn %.2f\n", (double)w0 / conns,
	       (double)c0 / conns);
	printf("info_after_kill_slowest_ms %.1f\n", kill_slowest * 1000);
	for (int w = 0; w < nw; w++)
		printf("info_worker %d reports %ld accepted %ld switches %ld\n", w, sh->wakes[w],
		       sh->accepted[w], sh->csw[w]);
	printf("all_answered %s\n", ok == conns && a0 == conns ? "yes" : "no");
	printf("burst_answered %s\n", burst_ok == BURST ? "yes" : "no");
	printf("answered_after_a_kill %s\n", killed_ok == 20 ? "yes" : "no");
	if (mixed) {
		int seen = 0;

		/* Worker 0 was killed (maybe before it read its eventfd). */
		for (int w = 0; w < nw; w++)
			seen += w == 0 || (sh->chan_seen[w] && sh->efd_seen[w] == 1);
		printf("kernel_fds_seen %s\n", seen == nw ? "yes" : "no");
	}
	/* A wake-up is a sleep that ended (a voluntary switch): Linux wakes
	 * every set without the flag, even if only one finds the listener
	 * still ready and returns. */
	if (excl)
		printf("one_woken_a_conn %s\n", c0 <= conns * 3 / 2 ? "yes" : "no");
	else
		printf("every_worker_woken %s\n", c0 >= (long)conns * nw * 3 / 4 ? "yes" : "no");
	return 0;
}
