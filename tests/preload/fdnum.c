// SPDX-License-Identifier: BSD-2-Clause
/*
 * The number a close() frees is the next open()'s, socket()'s or
 * accept()'s (issue 24; issue 23 item 3): the kernel gives the lowest free
 * number, so a program that closes a socket and opens a file gets the
 * socket's number back.  Under `sluice run` the library must not take
 * that number for an fd of its own (a probe of who still holds a shared
 * socket, a record, a bell) while closing or after.
 *
 * Cases, each one line "NAME same" or "NAME other" (the number taken
 * was not the one freed); the kernel and Sluice must print the same
 * lines (tests/host/test_fdnum.sh):
 *  - plain: a socket of this process alone, closed, then open();
 *  - dup: a socket and its dup(), the first closed, then the last;
 *  - fork-first / fork-last: a socket shared with a forked child, closed
 *    here while the child holds it, then in the child (the last close);
 *  - child-first / parent-last: the same, the child closing first;
 *  - socket / accept: a shared socket closed, then socket() or accept();
 *  - wait: a shared socket closed, then a blocking wait (the library's
 *    sweep of dead processes' sockets) before open();
 *  - first: the first socket() of the program takes the number open()
 *    would (no fd of the library's below it).
 * Last, "forktable N": with a listener, a connection and a UDP socket
 * bound on 127.0.0.1 open (under Sluice: twins, their watcher, records,
 * probes), the size of the fd table a fork() copies (the kernel's sizes
 * for the highest open fd: 64, then 128 << k).  The library's fds must
 * not make it larger than 256 where the kernel's is smaller.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The fd table a fork() copies: the kernel's size for the highest fd. */
static int fork_table(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int hi = 0, t = 64;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > hi)
			hi = atoi(e->d_name);
	closedir(d);
	if (hi < 64)
		return t;
	for (t = 128; t <= hi; t *= 2)
		;
	return t;
}

/* NAME same/other: did the next open take number want? */
static void next_open(const char *name, int want)
{
	int f = open("/dev/null", O_RDONLY);

	printf("%s %s\n", name, f == want ? "same" : "other");
	if (f != want)
		fprintf(stderr, "%s: freed %d, open() got %d\n", name, want, f);
	fflush(stdout);
	close(f);
}

static int tcp(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0) {
		perror("socket");
		exit(2);
	}
	return s;
}

/* A child holding s until told (a byte on *go) to close it and report
 * (its line printed by itself: stdout flushed before the fork). */
static pid_t holder(int s, int go[2], const char *name)
{
	pid_t pid;
	char c;

	if (pipe(go)) {
		perror("pipe");
		exit(2);
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (!pid) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		close(s);
		if (name)
			next_open(name, s);
		_exit(0);
	}
	close(go[0]);
	return pid;
}

static void release(pid_t pid, int go[2])
{
	int st;

	if (write(go[1], "x", 1) != 1)
		perror("write");
	close(go[1]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "child failed\n");
		exit(2);
	}
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int s, d, l, c, n, go[2];
	pid_t pid;

	/* first: nothing of the library's below the program's first socket */
	n = open("/dev/null", O_RDONLY);
	close(n);
	s = tcp();
	printf("first %s\n", s == n ? "same" : "other");
	if (s != n)
		fprintf(stderr, "first: open() gave %d, the first socket() %d\n", n, s);
	close(s);

	s = tcp();
	close(s);
	next_open("plain", s);

	/* (The file the first close's number went to stays open: the
	 * last close's number is then the lowest free.) */
	s = tcp();
	d = dup(s);
	close(s);
	n = open("/dev/null", O_RDONLY);
	printf("dup %s\n", n == s ? "same" : "other");
	close(d);
	next_open("dup-last", d);
	close(n);

	/* This process closes first, the child last. */
	s = tcp();
	pid = holder(s, go, "fork-last");
	close(s);
	next_open("fork-first", s);
	release(pid, go);

	/* The child closes first, this process last. */
	s = tcp();
	pid = holder(s, go, "child-first");
	release(pid, go);
	close(s);
	next_open("parent-last", s);

	/* socket() after a shared socket's close */
	s = tcp();
	pid = holder(s, go, NULL);
	close(s);
	d = tcp();
	printf("socket %s\n", d == s ? "same" : "other");
	close(d);
	release(pid, go);

	/* accept() after a shared socket's close */
	l = tcp();
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &al)) {
		perror("listener");
		return 2;
	}
	c = tcp();
	if (connect(c, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		return 2;
	}
	s = tcp();
	pid = holder(s, go, NULL);
	close(s);
	d = accept(l, NULL, NULL);
	printf("accept %s\n", d == s ? "same" : "other");
	close(d);
	release(pid, go);

	/* A wait long enough for the library's sweep, after a shared close. */
	s = tcp();
	pid = holder(s, go, NULL);
	close(s);
	{
		struct pollfd p = { .fd = c, .events = POLLIN };

		poll(&p, 1, 700);
	}
	next_open("wait", s);
	release(pid, go);
	{
		struct sockaddr_in u = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int us = socket(AF_INET, SOCK_DGRAM, 0);

		if (us < 0 || bind(us, (struct sockaddr *)&u, sizeof(u))) {
			perror("udp");
			return 2;
		}
		printf("forktable %d\n", fork_table());
		close(us);
	}
	close(c);
	close(l);
	return 0;
}
