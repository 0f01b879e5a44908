// SPDX-License-Identifier: BSD-2-Clause
/*
 * bind() to port 0 of TCP sockets with SO_REUSEADDR until the ephemeral
 * range runs out (gVisor's TCPBindAvoidsOtherBoundPortsReuseAddr): Linux
 * never picks a port another socket is bound to, SO_REUSEADDR or not
 * (inet_csk_find_open_port() with net.ipv4.ip_autobind_reuse 0), so every
 * socket gets a port of its own and the next bind fails EADDRINUSE.  Run
 * in a network namespace of its own: it narrows ip_local_port_range to
 * 20 ports.  Prints "bound N distinct D then ERRNO"; the kernel and
 * Sluice must print the same (tests/host/test_conform_autobind.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define LO 40000
#define N 20

int main(void)
{
	static unsigned char seen[65536];
	int one = 1, bound = 0, distinct = 0, e = 0;
	int f = open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY);

	if (f < 0 || dprintf(f, "%d %d", LO, LO + N - 1) < 0) {
		perror("ip_local_port_range");
		return 2;
	}
	close(f);
	for (int i = 0; i < N + 10; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		int s = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&a, sizeof(a))) {
			e = errno;
			break;
		}
		getsockname(s, (struct sockaddr *)&a, &al);
		bound++;
		if (!seen[ntohs(a.sin_port)]++)
			distinct++;
	}
	printf("bound %d distinct %d then %s\n", bound, distinct, e ? strerrorname_np(e) : "-");
	return 0;
}
