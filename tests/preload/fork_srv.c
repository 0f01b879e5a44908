// SPDX-License-Identifier: BSD-2-Clause
/*
 * A plain forking echo server, for sluice run (it knows nothing of
 * Sluice): fork_srv PORT CONNS SECONDS.  Listens on 0.0.0.0:PORT, prints
 * "ready", then for each of CONNS connections forks a child that echoes
 * until EOF and exits; the parent closes its copy and accepts the next.
 * Every child's traffic goes out through whatever link it inherited from
 * the parent (with a kring stack: the rings, mapped before the fork).
 * Exits 0 when all CONNS children exited 0; SECONDS bounds the whole run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int echo(int fd)
{
	char buf[16384];
	ssize_t n, w, off;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("read");
			return 1;
		}
		for (off = 0; off < n; off += w) {
			w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0) {
				perror("write");
				return 1;
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int ls, one = 1, conns, i, status, bad = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: fork_srv PORT CONNS SECONDS\n");
		return 2;
	}
	conns = atoi(argv[2]);
	alarm((unsigned int)atoi(argv[3]));
	sin.sin_port = htons((unsigned short)atoi(argv[1]));
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sin, sizeof(sin)) || listen(ls, 64)) {
		perror("listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < conns; i++) {
		int fd = accept(ls, NULL, NULL);
		pid_t pid;

		if (fd < 0) {
			perror("accept");
			return 1;
		}
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid) {
			close(ls);
			_exit(echo(fd));
		}
		close(fd);
	}
	close(ls);
	for (i = 0; i < conns; i++) {
		if (wait(&status) < 0) {
			perror("wait");
			return 1;
		}
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	printf("children %d, failed %d\n", conns, bad);
	return bad ? 1 : 0;
}
