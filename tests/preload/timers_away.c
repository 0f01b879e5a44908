// SPDX-License-Identifier: BSD-2-Clause
/*
 * Timers while the program is away (issue 19): one thread holds both ends
 * of a loopback connection, sends until the window is full (EAGAIN:
 * nobody reads the other end), and then leaves the socket calls: it
 * sleeps in usleep(), or blocks in a read() of a pipe.  The sender's
 * persist timer must then send a zero-window probe (RFC 9293 3.8.6.1;
 * Linux's tcp_probe_timer() one RTO on, backing off): a timer, which
 * nobody ran while the only thread of the process was away.  A forked
 * observer reads the sender's TCP_INFO every millisecond and says when
 * the first probe went (tcpi_backoff moves to 1).
 *
 *   timers_away MODE PORT      MODE: sleep (usleep) or pipe (read(2))
 *
 * Prints "MODE probe_ms N" (ms from the last send to the first probe),
 * or "MODE probe_ms none" when none went within NONE_MS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NONE_MS		2000
#define MAX_SENDS	100000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static int backoff(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len))
		die("TCP_INFO");
	return (int)ti.tcpi_backoff;
}

/* The observer: told the time of the last send, waits for the probe. */
static void observe(int cfd, int from, int to)
{
	double t0, t;
	char line[64];
	int n;

	if (read(from, &t0, sizeof(t0)) != sizeof(t0))
		_exit(2);
	for (t = now_ms(); t - t0 < NONE_MS; t = now_ms()) {
		if (backoff(cfd))
			break;
		usleep(1000);
	}
	if (t - t0 < NONE_MS)
		n = snprintf(line, sizeof(line), "%.1f", t - t0);
	else
		n = snprintf(line, sizeof(line), "none");
	if (write(to, line, (size_t)n) != n)
		_exit(2);
	_exit(0);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int lfd, cfd, sfd, one = 1, down[2], up[2], sends = 0, status;
	static char buf[16384];
	char line[64] = "";
	double t0;
	bool pipe_mode;
	pid_t obs;
	ssize_t n;

	if (argc != 3)
		return fprintf(stderr, "usage: %s sleep|pipe PORT\n", argv[0]), 2;
	pipe_mode = !strcmp(argv[1], "pipe");
	a.sin_port = htons((unsigned short)atoi(argv[2]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4))
		die("listen");
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	sfd = accept(lfd, NULL, NULL);
	if (sfd < 0)
		die("accept");
	if (pipe(down) || pipe(up))
		die("pipe");
	obs = fork();
	if (obs < 0)
		die("fork");
	if (!obs)
		observe(cfd, down[0], up[1]);
	/* Fill the window: nobody reads the other end. */
	if (fcntl(cfd, F_SETFL, O_NONBLOCK))
		die("O_NONBLOCK");
	memset(buf, 'x', sizeof(buf));
	for (;;) {
		n = send(cfd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			die("send");
		if (++sends > MAX_SENDS) {
			fprintf(stderr, "the window never filled\n");
			return 2;
		}
	}
	t0 = now_ms();
	if (write(down[1], &t0, sizeof(t0)) != sizeof(t0))
		die("write");
	/* Away: no socket call until the observer has its answer. */
	if (pipe_mode) {
		n = read(up[0], line, sizeof(line) - 1);
	} else {
		usleep((NONE_MS + 200) * 1000);
		n = read(up[0], line, sizeof(line) - 1);
	}
	if (n <= 0)
		die("read");
	line[n] = '\0';
	if (waitpid(obs, &status, 0) != obs || !WIFEXITED(status) || WEXITSTATUS(status))
		return fprintf(stderr, "observer failed\n"), 2;
	printf("%s probe_ms %s\n", argv[1], line);
	close(sfd);
	close(cfd);
	close(lfd);
	return 0;
}
