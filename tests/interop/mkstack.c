// SPDX-License-Identifier: BSD-2-Clause
/*
 * mkstack NAME [SECONDS]: create a stack with a few sockets and some
 * traffic, and leave it in place (for the sluice tool's tests and the
 * demo).  A /dev/shm stack outlives this program; a stack in the module
 * lives while a process holds it, so SECONDS keeps it that long.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sluice/sluice.h>

int main(int argc, char **argv)
{
	struct sluice_stack_config cfg = { .max_sockets = 16, .n_bufs = 64 };
	struct sockaddr_in u = { .sin_family = AF_INET, .sin_port = htons(5353) };
	struct sockaddr_in t = { .sin_family = AF_INET, .sin_port = htons(8080) };
	struct sluice_stack *st;
	int a, b, l, ret;
	char buf[16];

	if (argc != 2 && argc != 3)
		return 2;
	inet_pton(AF_INET, "10.7.0.1", &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	ret = sluice_stack_create(argv[1], &cfg, &st);
	if (ret) {
		fprintf(stderr, "mkstack: %s\n", strerror(-ret));
		return 1;
	}
	u.sin_addr.s_addr = cfg.ip_addr;
	a = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	b = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	l = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(st, a, &u);
	sluice_bind(st, l, &t);
	sluice_listen(st, l, 8);
	sluice_sendto(st, b, "hi", 2, 0, &u);
	sluice_sendto(st, b, "there", 5, 0, &u);
	sluice_recv(st, a, buf, sizeof(buf), 0);
	if (argc == 3) {
		printf("holding %s\n", argv[1]);
		fflush(stdout);
		sleep((unsigned int)atoi(argv[2]));
	}
	sluice_stack_close(st);
	return 0;
}
