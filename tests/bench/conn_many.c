// SPDX-License-Identifier: BSD-2-Clause
/*
 * Many established connections held at once (issue 23, item 5): a plain
 * program, run on the kernel and under `sluice run` by
 * tests/bench/conn_many.sh and tests/host/test_conn_many.sh.
 *
 *   conn_many TOTAL PROCS IDLE_S
 *
 * PROCS workers (a process's fds are limited: RLIMIT_NOFILE) each listen
 * on 127.0.0.1 and open TOTAL / PROCS connections to themselves from
 * their own address, 127.0.0.(10 + w), keeping both ends: every socket is
 * an established connection of the stack (or the kernel).  Each then
 * waits in epoll_wait (100 ms timeout) on all its sockets and a pipe, as
 * an idle server does, from when all are ready.  After IDLE_S seconds of
 * that the parent stops the workers and prints one line:
 *
 *   conns N setup S s idle_cpu_max U us/s idle_cpu_avg A us/s
 *   idle_csw_max C/s mem_kib_per_conn slab X shmem Y anon Z
 *
 * idle_cpu_max and _avg: the busiest worker's and the mean CPU time a
 * second while idle (the bound is 1 ms a second whatever the
 * count; under Sluice one worker is the stack's timer keeper).  The memory
 * figures are /proc/meminfo differences from before the workers started
 * to when all connections are open, a connection (both ends): the
 * kernel's sockets are Slab, Sluice's region and records are Shmem (its
 * placeholders' files are Slab too).  The machine's other work moves
 * them a little: read them as figures, not bounds.  Exit status 0 when
 * every connection opened and every byte of a check echo came back.
 *
 * With CONN_MANY_FILL=BYTES (at most 4096) each connection's client end
 * sends that many bytes once all are open, which the other end never
 * reads: data held in receive queues until the connections close
 * (tests/host/test_mem_back.sh: the stack's packet buffers used, then
 * freed).
 *
 * With CONN_MANY_READY=FILE in the environment the parent creates FILE
 * once every connection is open and the workers idle, so that a script
 * can measure something else beside them (conn_many.sh: a ping-pong on
 * one more connection of the same stack).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
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

struct report {
	long conns;		/* opened, or -errno of the first failure */
	double setup_s;
	double idle_cpu_s, idle_s;
	long idle_csw;
	int echo_ok;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage_of(struct rusage *ru, double *cpu, long *csw)
{
	getrusage(RUSAGE_SELF, ru);
	*cpu = ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	       ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
	*csw = ru->ru_nvcsw + ru->ru_nivcsw;
}

/* kB of a /proc/meminfo line. */
static long meminfo(const char *key)
{
	char line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = atol(line + kl + 1);
			break;
		}
	fclose(f);
	return v;
}

/* One worker: n connections to itself, then idle until stop is readable. */
static void worker(int w, long n, int ready_fd, int go_fd, int stop_fd)
{
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in ca = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK + 10 + (uint32_t)w) };
	struct report rep = { 0 };
	socklen_t al = sizeof(la);
	struct epoll_event ev, evs[64];
	int l, ep, *fds = calloc((size_t)n * 2, sizeof(int));
	double t0, c0, c1;
	long s0, s1;
	struct rusage ru;
	char buf[8] = "ping", got[8];
	long fill = getenv("CONN_MANY_FILL") ? atol(getenv("CONN_MANY_FILL")) : 0;

	l = socket(AF_INET, SOCK_STREAM, 0);
	ep = epoll_create1(0);
	if (!fds || l < 0 || ep < 0 || bind(l, (struct sockaddr *)&la, sizeof(la)) ||
	    listen(l, 4096) || getsockname(l, (struct sockaddr *)&la, &al)) {
		rep.conns = -errno;
		goto out;
	}
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0), a;

		if (c < 0 || bind(c, (struct sockaddr *)&ca, sizeof(ca)) ||
		    connect(c, (struct sockaddr *)&la, sizeof(la)) ||
		    (a = accept(l, NULL, NULL)) < 0) {
			rep.conns = -errno;
			goto out;
		}
		fds[2 * i] = c;
		fds[2 * i + 1] = a;
		ev.events = EPOLLIN;
		ev.data.fd = a;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev)) {
			rep.conns = -errno;
			goto out;
		}
		rep.conns = i + 1;
	}
	rep.setup_s = now_s() - t0;
	/* The first and the last connections still carry data both ways. */
	rep.echo_ok = 1;
	for (long i = 0; i < n; i += n > 1 ? n - 1 : 1) {
		if (write(fds[2 * i], buf, 4) != 4 || read(fds[2 * i + 1], got, 4) != 4 ||
		    memcmp(got, buf, 4) || write(fds[2 * i + 1], got, 4) != 4 ||
		    read(fds[2 * i], got, 4) != 4 || memcmp(got, buf, 4))
			rep.echo_ok = 0;
	}
	if (fill > 0) {
		static char data[4096];

		if (fill > (long)sizeof(data))
			fill = sizeof(data);
		/* Unread data would wake the idle wait each time: the
		 * accepted ends leave the set first. */
		for (long i = 0; i < n; i++)
			if (epoll_ctl(ep, EPOLL_CTL_DEL, fds[2 * i + 1], NULL) ||
			    write(fds[2 * i], data, (size_t)fill) != fill)
				rep.echo_ok = 0;
	}
	ev.events = EPOLLIN;
	ev.data.fd = stop_fd;
	epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev);
	if (write(ready_fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(3);
	/* Idle from when every worker is: the others' connections opening
	 * are not this one's idle cost. */
	if (read(go_fd, got, 1) != 1)
		_exit(3);
	usage_of(&ru, &c0, &s0);
	t0 = now_s();
	for (bool stop = false; !stop;) {
		int k = epoll_wait(ep, evs, 64, 100);

		for (int i = 0; i < k; i++)
			if (evs[i].data.fd == stop_fd)
				stop = true;
	}
	usage_of(&ru, &c1, &s1);
	rep.idle_s = now_s() - t0;
	rep.idle_cpu_s = c1 - c0;
	rep.idle_csw = s1 - s0;
out:
	if (write(ready_fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(3);
	_exit(rep.conns == n && rep.echo_ok ? 0 : 1);
}

int main(int argc, char **argv)
{
	long total = argc > 1 ? atol(argv[1]) : 10000;
	int procs = argc > 2 ? atoi(argv[2]) : 2;
	int idle = argc > 3 ? atoi(argv[3]) : 2;
	long slab0 = meminfo("Slab"), shm0 = meminfo("Shmem"), anon0 = meminfo("AnonPages");
	long slab1, shm1, anon1, conns = 0;
	double setup = 0, cpu_max = 0, csw_max = 0, cpu_sum = 0;
	int ready[2], go[2], stop[2], bad = 0, status;
	struct report rep;

	if (total < 1 || procs < 1 || procs > 200 || idle < 0 || pipe(ready) || pipe(go) || pipe(stop)) {
		fprintf(stderr, "usage: conn_many TOTAL PROCS IDLE_S\n");
		return 2;
	}
	for (int w = 0; w < procs; w++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0) {
			close(ready[0]);
			close(go[1]);
			close(stop[1]);
			worker(w, total / procs + (w < total % procs), ready[1], go[0], stop[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	close(stop[0]);
	/* Each worker's first report: all of its connections are open. */
	for (int w = 0; w < procs; w++) {
		if (read(ready[0], &rep, sizeof(rep)) != sizeof(rep)) {
			bad = 1;
			break;
		}
		if (rep.conns < 0) {
			fprintf(stderr, "worker failed: %s after %ld\n", strerror((int)-rep.conns), conns);
			bad = 1;
		} else {
			conns += rep.conns;
		}
		if (!rep.echo_ok)
			bad = 1;
		if (rep.setup_s > setup)
			setup = rep.setup_s;
	}
	slab1 = meminfo("Slab");
	shm1 = meminfo("Shmem");
	anon1 = meminfo("AnonPages");
	for (int w = 0; w < procs; w++)
		if (write(go[1], "g", 1) != 1)
			bad = 1;
	if (!bad && getenv("CONN_MANY_READY")) {
		int fd = open(getenv("CONN_MANY_READY"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0)
			bad = 1;
		else
			close(fd);
	}
	if (!bad)
		sleep((unsigned int)idle);
	close(stop[1]);
	for (int w = 0; w < procs; w++) {
		if (read(ready[0], &rep, sizeof(rep)) != sizeof(rep)) {
			bad = 1;
			break;
		}
		if (rep.idle_s > 0) {
			fprintf(stderr, "%s%.0f", w ? " " : "idle cpu us/s of each worker: ",
				rep.idle_cpu_s / rep.idle_s * 1e6);
			cpu_sum += rep.idle_cpu_s / rep.idle_s;
			if (rep.idle_cpu_s / rep.idle_s > cpu_max)
				cpu_max = rep.idle_cpu_s / rep.idle_s;
			if (rep.idle_csw / rep.idle_s > csw_max)
				csw_max = rep.idle_csw / rep.idle_s;
		}
	}
	fprintf(stderr, "\n");
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	printf("conns %ld setup %.2f s idle_cpu_max %.0f us/s idle_cpu_avg %.0f us/s "
	       "idle_csw_max %.0f/s mem_kib_per_conn slab %.2f shmem %.2f anon %.2f\n",
	       conns, setup, cpu_max * 1e6, cpu_sum / procs * 1e6, csw_max,
	       conns ? (double)(slab1 - slab0) / conns : 0,
	       conns ? (double)(shm1 - shm0) / conns : 0,
	       conns ? (double)(anon1 - anon0) / conns : 0);
	return bad || conns != total;
}
