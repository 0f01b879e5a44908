// SPDX-License-Identifier: BSD-2-Clause
/*
 * What one forked child costs, for sluice run (it knows nothing of
 * Sluice): fork_cost MODE N PORT.  Forks N children one after another,
 * each reaped with wait4() before the next, and prints the children's
 * page faults (ru_minflt of each) and CPU time and the fork-to-reap time:
 *   exit   the child exit(0)s at once (the fork and exit paths alone);
 *   echo   a connection a child, as a forking server makes one: the
 *          parent connects to its own listener on 127.0.0.1:PORT,
 *          accepts, sends a byte, forks; the child closes the listener,
 *          reads the byte, writes it back, closes and exit(0)s; the
 *          parent closes its copy, reads the byte back and closes.
 * Output, one line: "MODE N minflt M cpu_us C wall_us W", each a child's
 * mean (wall: the median).  Exits 0 when every child exited 0.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static int child_echo(int ls, int fd)
{
	char c;

	close(ls);
	if (read(fd, &c, 1) != 1 || write(fd, &c, 1) != 1)
		return 1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int n, i, ls = -1, one = 1, echo, bad = 0;
	long long flt = 0, cpu = 0, *wall;

	if (argc != 4 || (strcmp(argv[1], "exit") && strcmp(argv[1], "echo"))) {
		fprintf(stderr, "usage: fork_cost exit|echo N PORT\n");
		return 2;
	}
	echo = !strcmp(argv[1], "echo");
	n = atoi(argv[2]);
	if (n < 1 || n > 100000)
		return 2;
	wall = calloc((size_t)n, sizeof(*wall));
	if (!wall)
		return 1;
	alarm(120);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((unsigned short)atoi(argv[3]));
	if (echo) {
		ls = socket(AF_INET, SOCK_STREAM, 0);
		if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 64)) {
			perror("listen");
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		struct rusage ru;
		int c = -1, fd = -1, st;
		long long t0;
		pid_t pid;
		char b = 'x';

		if (echo) {
			c = socket(AF_INET, SOCK_STREAM, 0);
			if (c < 0 || connect(c, (struct sockaddr *)&sin, sizeof(sin))) {
				perror("connect");
				return 1;
			}
			fd = accept(ls, NULL, NULL);
			if (fd < 0) {
				perror("accept");
				return 1;
			}
			/* Before the fork: the child's read finds its byte,
			 * and waits in neither stack (a count, not a race). */
			if (write(c, &b, 1) != 1)
				bad++;
		}
		t0 = now_us();
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid)
			exit(echo ? child_echo(ls, fd) : 0);
		if (echo) {
			close(fd);
			if (read(c, &b, 1) != 1)
				bad++;
			close(c);
		}
		if (wait4(pid, &st, 0, &ru) != pid) {
			perror("wait4");
			return 1;
		}
		wall[i] = now_us() - t0;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
		flt += ru.ru_minflt;
		cpu += ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec +
		       ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
	}
	qsort(wall, (size_t)n, sizeof(*wall), cmp_ll);
	printf("%s %d minflt %.2f cpu_us %.1f wall_us %lld bad %d\n", argv[1], n,
	       (double)flt / n, (double)cpu / n, wall[n / 2], bad);
	return bad ? 1 : 0;
}
