// SPDX-License-Identifier: BSD-2-Clause
/*
 * Short connections (issue 23): a plain program, run on the kernel and
 * under `sluice run` (tests/bench/conn_churn.sh counts system calls).
 *
 *   conn_churn server PORT N	accept, read 1 byte, write it back, close; N times
 *   conn_churn client PORT N	connect, write 1 byte, read it back, close; N times
 *
 * Both sides on 127.0.0.1; exit 0 if all N went through.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long n;
	char c = 'x';

	if (argc != 4)
		return 2;
	a.sin_port = htons((uint16_t)atoi(argv[2]));
	n = atol(argv[3]);
	if (!strcmp(argv[1], "server")) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

		if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 128)) {
			perror("server");
			return 2;
		}
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
	for (long i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
		    write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
			return 1;
		close(fd);
	}
	return 0;
}
