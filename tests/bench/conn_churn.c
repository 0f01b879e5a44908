// SPDX-License-Identifier: BSD-2-Clause
/*
 * Short connections (issues 16 and 23): a plain program, run on the kernel
 * and under `sluice run` (tests/host/test_conn_syscalls.sh counts its
 * system calls, tests/host/test_churn.sh times it).
 *
 *   conn_churn server PORT N	accept, read 1 byte, write it back, close; N times
 *   conn_churn client PORT N [K]	connect, write 1 byte, read it back, close;
 *				N times in all, from K processes (default 1)
 *   conn_churn prefork PORT N K	the server's work in K forked children,
 *				all blocked in accept() on one listener
 *				(issue 18); N connections in all
 *   conn_churn epserver PORT N	the server's work from one epoll set
 *				(level-triggered) holding the listener and
 *				each connection; a connection is closed in
 *				the set, with no EPOLL_CTL_DEL (issue 23)
 *
 * Both sides on 127.0.0.1; exit 0 if all N went through.  The client
 * prints one line: "connections N seconds S per_s R max_ms M over_100ms C"
 * (M: the longest single connection, C: how many took over 100 ms).
 * The pre-forking server prints, once N are served, how many each child
 * took, the children's CPU time per connection and their voluntary
 * context switches per connection (a herd of woken children shows there):
 * "served N spread A/B/... cpu_us C csw_per_conn W".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <errno.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The worst of all client processes, in a shared page. */
struct worst {
	double max_s;
	long over;
};

static int client(const struct sockaddr_in *a, long n, struct worst *w)
{
	char c = 'x';

	for (long i = 0; i < n; i++) {
		double t0 = now_s(), d;
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof(*a)) ||
		    write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) {
			perror("client");
			return 1;
		}
		close(fd);
		d = now_s() - t0;
		if (d > w->max_s)
			w->max_s = d;
		if (d > 0.1)
			w->over++;
	}
	return 0;
}

/* K children in accept() on l until N are served between them. */
static int prefork(int l, long n, long k)
{
	long *served = mmap(NULL, (size_t)(k + 1) * sizeof(long), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t *kids = calloc((size_t)k, sizeof(pid_t));
	struct rusage ru;
	double t0;
	char c;

	if (served == MAP_FAILED || !kids)
		return 2;
	for (long j = 0; j < k; j++) {
		kids[j] = fork();
		if (kids[j] < 0)
			return 2;
		if (kids[j])
			continue;
		for (;;) {
			int fd = accept(l, NULL, NULL);

			if (fd < 0 || read(fd, &c, 1) != 1 || write(fd, &c, 1) != 1)
				_exit(1);
			close(fd);
			served[j + 1]++;
			__atomic_fetch_add(&served[0], 1, __ATOMIC_RELAXED);
		}
	}
	printf("ready\n");
	fflush(stdout);
	/* Bounded: a minute without all N served is a failure. */
	t0 = now_s();
	while (__atomic_load_n(&served[0], __ATOMIC_RELAXED) < n && now_s() - t0 < 60)
		usleep(10000);
	for (long j = 0; j < k; j++)
		kill(kids[j], SIGKILL);
	for (int st; wait(&st) > 0;)
		;
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("served %ld spread ", served[0]);
	for (long j = 0; j < k; j++)
		printf("%s%ld", j ? "/" : "", served[j + 1]);
	printf(" cpu_us %.1f csw_per_conn %.2f\n",
	       ((double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
		(double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec) /
		       (double)(served[0] ? served[0] : 1),
	       (double)ru.ru_nvcsw / (double)(served[0] ? served[0] : 1));
	return served[0] >= n ? 0 : 1;
}

/* N connections served from one epoll set; a served one is closed while
 * still in the set (Linux takes its item out at the file's end). */
static int epserver(int l, long n)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l }, evs[32];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	long served = 0;

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev))
		return 2;
	printf("ready\n");
	fflush(stdout);
	while (served < n) {
		int k = epoll_wait(ep, evs, 32, -1);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return 1;
		for (int i = 0; i < k; i++) {
			int fd = evs[i].data.fd;
			ssize_t r;
			char c;

			if (fd == l) {
				fd = accept4(l, NULL, NULL, SOCK_NONBLOCK);
				ev.data.fd = fd;
				if (fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
					return 1;
				continue;
			}
			r = read(fd, &c, 1);
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r != 1 || write(fd, &c, 1) != 1)
				return 1;
			close(fd);
			served++;
		}
	}
	close(ep);
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long n;
	char c = 'x';

	if (argc != 4 && !(argc == 5 && (!strcmp(argv[1], "client") ||
					     !strcmp(argv[1], "prefork"))))
		return 2;
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	n = atol(argv[3]);
	if (!strcmp(argv[1], "server") || !strcmp(argv[1], "prefork") ||
	    !strcmp(argv[1], "epserver")) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

		if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 128)) {
			perror("server");
			return 2;
		}
		if (argc == 5)
			return prefork(l, n, atol(argv[4]));
		if (!strcmp(argv[1], "epserver"))
			return epserver(l, n);
		printf("ready\n");
		fflush(stdout);
		for (long i = 0; i < n; i++) {
			int fd = accept(l, NULL, NULL);

			if (fd < 0 || read(fd, &c, 1) != 1 || write(fd, &c, 1) != 1)
				return 1;
			close(fd);
		}
		close(l);
		return 0;
	}
	{
		long k = argc == 5 ? atol(argv[4]) : 1, fails = 0;
		struct worst *w = mmap(NULL, (size_t)(k > 0 ? k : 1) * sizeof(*w),
				       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		struct worst all = { 0, 0 };
		double t0 = now_s(), t;

		if (k < 1 || w == MAP_FAILED)
			return 2;
		if (k == 1) {
			fails = client(&a, n, w);
		} else {
			for (long j = 0; j < k; j++) {
				pid_t p = fork();

				if (p == 0)
					_exit(client(&a, n / k + (j < n % k), &w[j]));
				if (p < 0)
					return 2;
			}
			for (int st; wait(&st) > 0;)
				fails += !WIFEXITED(st) || WEXITSTATUS(st);
		}
		t = now_s() - t0;
		for (long j = 0; j < k; j++) {
			all.max_s = w[j].max_s > all.max_s ? w[j].max_s : all.max_s;
			all.over += w[j].over;
		}
		printf("connections %ld seconds %.3f per_s %.0f max_ms %.2f over_100ms %ld\n", n, t,
		       (double)n / t, all.max_s * 1e3, all.over);
		return fails ? 1 : 0;
	}
}
