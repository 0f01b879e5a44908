// SPDX-License-Identifier: BSD-2-Clause
/*
 * A UDP socket that never called bind(): connect() or its first send
 * gives it a port (Linux's autobind), and it sends on from there
 * (issue 24 item 2; gVisor's UdpSocketTest.SendToAddressOtherThanConnected/1
 * on the module path); and one bound to [::] that connects to IPv6
 * itself.  On Linux a socket connected to [::1]:P may still
 * sendto() [::]:Q (the unspecified address is loopback, ::1 for a socket
 * whose own address is not v4-mapped): the datagram goes, 512 is
 * returned.  tests/vm/sockfd.sh runs it on the kernel and under `sluice
 * run` on a module stack and compares the lines; on the host path the
 * same cases pass (gVisor's, tests/host/test_gvisor.sh).
 *
 *   udp_autobind
 *
 * Cases, one line each, no numbers that change from run to run:
 *   v6_connect_other  AF_INET6, connected to [::1]:P (a socket bound
 *                     there), sendto() [::]:P-1 and [::1]:P-1
 *   v6_send_first     AF_INET6, unbound, sendto() [::1]:P; the peer
 *                     answers to the address it came from
 *   v4_connect_other  AF_INET, connected to 127.0.0.1:P, sendto()
 *                     0.0.0.0:P-1 and 127.0.0.1:P-1
 *   v6_any_connect    AF_INET6, bound to [::]:0, then connect() [::]:P
 *                     (IPv6 itself: the socket becomes the kernel's, its
 *                     twin; gVisor's DualStackSocketTest.AddressOperations/
 *                     V6AnyBindConnectSendTo), its peer, a send to P
 * Every wait is bounded (SO_RCVTIMEO 2 s, an alarm ends it after 20 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char buf[512];

/* A datagram socket of family fam bound to its loopback, port 0. */
static int bound_peer(int fam, struct sockaddr_storage *at, socklen_t *len)
{
	struct timeval tv = { 2, 0 };
	int fd = socket(fam, SOCK_DGRAM, 0);

	memset(at, 0, sizeof(*at));
	if (fam == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)at;

		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)at;

		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*s4);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (fd < 0 || bind(fd, (struct sockaddr *)at, *len) ||
	    getsockname(fd, (struct sockaddr *)at, len))
		return -1;
	return fd;
}

static unsigned short port_of(const struct sockaddr_storage *a)
{
	return ntohs(a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port :
						((const struct sockaddr_in *)a)->sin_port);
}

static void set_port(struct sockaddr_storage *a, unsigned short p)
{
	if (a->ss_family == AF_INET6)
		((struct sockaddr_in6 *)a)->sin6_port = htons(p);
	else
		((struct sockaddr_in *)a)->sin_port = htons(p);
}

/* "512" or "-1 ENAME". */
static void say(const char *what, ssize_t n, int err)
{
	if (n >= 0)
		printf("%s: %zd\n", what, n);
	else
		printf("%s: -1 %s\n", what, strerrorname_np(err) ? strerrorname_np(err) : "?");
}

/* What the program's fd is (a module socket fd, a kernel socket). */
static void show_fd(const char *c, int fd)
{
	char p[64], t[PATH_MAX];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	n = readlink(p, t, sizeof(t) - 1);
	t[n > 0 ? n : 0] = 0;
	if (!strncmp(t, "socket:[", 8))
		strcpy(t, "socket");
	printf("# %s fd %s\n", c, t);
}

/* Connected to the peer P, then sendto() elsewhere: the unspecified
 * address and the loopback address, port P-1. */
static void connect_other(const char *c, int fam)
{
	struct sockaddr_storage at, to;
	socklen_t len;
	int p = bound_peer(fam, &at, &len), fd = socket(fam, SOCK_DGRAM, 0);
	ssize_t n;
	int e;

	if (p < 0 || fd < 0 || connect(fd, (struct sockaddr *)&at, len)) {
		printf("%s: setup failed (%s)\n", c, strerror(errno));
		return;
	}
	show_fd(c, fd);
	memset(&to, 0, sizeof(to));
	to.ss_family = (sa_family_t)fam;
	set_port(&to, (unsigned short)(port_of(&at) - 1));
	n = sendto(fd, buf, sizeof(buf), 0, (struct sockaddr *)&to, len);
	e = errno;
	say(fam == AF_INET6 ? "  sendto [::]:P-1" : "  sendto 0.0.0.0:P-1", n, e);
	to = at;
	set_port(&to, (unsigned short)(port_of(&at) - 1));
	n = sendto(fd, buf, sizeof(buf), 0, (struct sockaddr *)&to, len);
	e = errno;
	say(fam == AF_INET6 ? "  sendto [::1]:P-1" : "  sendto 127.0.0.1:P-1", n, e);
	/* And to the peer itself still. */
	n = send(fd, "hi", 2, 0);
	e = errno;
	say("  send to P", n, e);
	n = recv(p, buf, sizeof(buf), 0);
	e = errno;
	say("  P receives", n, e);
	printf("%s: done\n", c);
	close(fd);
	close(p);
}

/* Unbound, the first call a sendto(): the peer answers to the sender. */
static void send_first(const char *c)
{
	struct sockaddr_storage at, from;
	struct timeval tv = { 2, 0 };
	socklen_t len, flen = sizeof(from);
	int p = bound_peer(AF_INET6, &at, &len), fd = socket(AF_INET6, SOCK_DGRAM, 0);
	ssize_t n;
	int e;

	if (p < 0 || fd < 0) {
		printf("%s: setup failed (%s)\n", c, strerror(errno));
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = sendto(fd, "ping", 4, 0, (struct sockaddr *)&at, len);
	e = errno;
	say("  sendto [::1]:P", n, e);
	show_fd(c, fd);
	n = recvfrom(p, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
	e = errno;
	say("  P receives", n, e);
	if (n >= 0) {
		n = sendto(p, "pong", 4, 0, (struct sockaddr *)&from, flen);
		e = errno;
		say("  P answers", n, e);
		n = recv(fd, buf, sizeof(buf), 0);
		e = errno;
		say("  the sender receives", n, e);
	}
	printf("%s: done\n", c);
	close(fd);
	close(p);
}

/* Bound to [::], then connected to [::]:P (loopback, ::1). */
static void any_connect(const char *c)
{
	struct sockaddr_storage at, to;
	struct sockaddr_in6 any = { .sin6_family = AF_INET6 }, peer;
	socklen_t len, plen = sizeof(peer);
	int p = bound_peer(AF_INET6, &at, &len), fd = socket(AF_INET6, SOCK_DGRAM, 0);
	char a[INET6_ADDRSTRLEN] = "-";
	ssize_t n;
	int e;

	if (p < 0 || fd < 0 || bind(fd, (struct sockaddr *)&any, sizeof(any))) {
		printf("%s: setup failed (%s)\n", c, strerror(errno));
		return;
	}
	show_fd(c, fd);
	memset(&to, 0, sizeof(to));
	to.ss_family = AF_INET6;
	set_port(&to, port_of(&at));
	n = connect(fd, (struct sockaddr *)&to, len);
	e = errno;
	say("  connect [::]:P", n, e);
	n = getpeername(fd, (struct sockaddr *)&peer, &plen);
	e = errno;
	if (!n)
		inet_ntop(AF_INET6, &peer.sin6_addr, a, sizeof(a));
	say("  getpeername", n, e);
	printf("  peer %s port_is_P %d\n", a, !n && ntohs(peer.sin6_port) == port_of(&at));
	n = send(fd, "hi", 2, 0);
	e = errno;
	say("  send to P", n, e);
	n = recv(p, buf, sizeof(buf), 0);
	e = errno;
	say("  P receives", n, e);
	printf("%s: done\n", c);
	close(fd);
	close(p);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(20);
	connect_other("v6_connect_other", AF_INET6);
	send_first("v6_send_first");
	connect_other("v4_connect_other", AF_INET);
	any_connect("v6_any_connect");
	return 0;
}
