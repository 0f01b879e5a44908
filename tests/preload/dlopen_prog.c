// SPDX-License-Identifier: BSD-2-Clause
/*
 * The preload library loaded with dlopen() and its calls looked up with
 * dlsym(), as test harnesses and some runtimes load a socket library
 * (issue 24, item 8): every call must work as under LD_PRELOAD, and a
 * call that succeeds must leave errno alone (item 3).
 *
 * Usage: dlopen_prog LIBSLUICE_PRELOAD_SO, with SLUICE_STACK set, in a
 * network namespace whose loopback is down (so only the stack's 127/8
 * can carry the traffic).  Prints "ok NAME" or "not ok NAME" a check.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "stackfd.h"

#define KEEP	EDOM	/* what errno holds across each successful call */

static int failed;

static void check(int cond, const char *name)
{
	printf("%s %s\n", cond ? "ok" : "not ok", name);
	failed |= !cond;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		printf("not ok dlsym %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	int (*d_socket)(int, int, int), (*d_bind)(int, const struct sockaddr *, socklen_t);
	int (*d_listen)(int, int), (*d_connect)(int, const struct sockaddr *, socklen_t);
	int (*d_accept)(int, struct sockaddr *, socklen_t *), (*d_close)(int);
	int (*d_getsockname)(int, struct sockaddr *, socklen_t *);
	ssize_t (*d_send)(int, const void *, size_t, int), (*d_recv)(int, void *, size_t, int);
	int (*d_sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	int (*d_recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	int (*d_poll)(struct pollfd *, nfds_t, int), (*d_fstat)(int, struct stat *);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	char buf[16] = "", m1[8] = "one", m2[8] = "two", r1[8] = "", r2[8] = "";
	struct iovec iv[4] = { { m1, 3 }, { m2, 3 }, { r1, sizeof(r1) }, { r2, sizeof(r2) } };
	struct mmsghdr out[2], in[2];
	struct pollfd p;
	struct stat st;
	void *h;
	int l, c, s, u1, u2, r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("not ok dlopen: %s\n", dlerror());
		return 1;
	}
	d_socket = sym(h, "socket");
	d_bind = sym(h, "bind");
	d_listen = sym(h, "listen");
	d_connect = sym(h, "connect");
	d_accept = sym(h, "accept");
	d_close = sym(h, "close");
	d_getsockname = sym(h, "getsockname");
	d_send = sym(h, "send");
	d_recv = sym(h, "recv");
	d_sendmmsg = sym(h, "sendmmsg");
	d_recvmmsg = sym(h, "recvmmsg");
	d_poll = sym(h, "poll");
	d_fstat = sym(h, "fstat");

	/* TCP over the stack's loopback. */
	errno = KEEP;
	l = d_socket(AF_INET, SOCK_STREAM, 0);
	check(l >= 0 && errno == KEEP, "socket() succeeds, errno kept");
	check(stack_fd(l), "the socket is in the stack");
	errno = KEEP;
	r = d_bind(l, (struct sockaddr *)&a, sizeof(a));
	r |= d_listen(l, 4);
	r |= d_getsockname(l, (struct sockaddr *)&a, &al);
	check(!r && errno == KEEP, "bind, listen, getsockname succeed, errno kept");
	c = d_socket(AF_INET, SOCK_STREAM, 0);
	errno = KEEP;
	r = d_connect(c, (struct sockaddr *)&a, sizeof(a));
	check(!r && errno == KEEP, "connect() succeeds over the stack, errno kept");
	errno = KEEP;
	s = d_accept(l, NULL, NULL);
	check(s >= 0 && errno == KEEP && stack_fd(s), "accept() gives a stack socket, errno kept");
	errno = KEEP;
	r = (int)d_send(c, "abc", 3, 0);
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	r = r == 3 && d_poll(&p, 1, 2000) == 1 && (p.revents & POLLIN);
	check(r && errno == KEEP, "send, then poll() sees it, errno kept");
	errno = KEEP;
	r = (int)d_recv(s, buf, sizeof(buf), 0);
	check(r == 3 && !memcmp(buf, "abc", 3) && errno == KEEP, "recv() gets the bytes, errno kept");
	errno = KEEP;
	check(!d_fstat(s, &st) && S_ISSOCK(st.st_mode) && errno == KEEP, "fstat() says socket");

	/* UDP: sendmmsg and recvmmsg, which call the library's own
	 * sendmsg and recvmsg. */
	u1 = d_socket(AF_INET, SOCK_DGRAM, 0);
	u2 = d_socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_port = 0;
	al = sizeof(a);
	r = d_bind(u2, (struct sockaddr *)&a, sizeof(a));
	r |= d_getsockname(u2, (struct sockaddr *)&a, &al);
	r |= d_connect(u1, (struct sockaddr *)&a, sizeof(a));
	check(!r, "two UDP sockets, one connected to the other");
	memset(out, 0, sizeof(out));
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 2; i++) {
		out[i].msg_hdr.msg_iov = &iv[i];
		out[i].msg_hdr.msg_iovlen = 1;
		in[i].msg_hdr.msg_iov = &iv[2 + i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	errno = KEEP;
	r = d_sendmmsg(u1, out, 2, 0);
	check(r == 2 && errno == KEEP, "sendmmsg() sends 2, errno kept");
	p = (struct pollfd){ .fd = u2, .events = POLLIN };
	d_poll(&p, 1, 2000);
	errno = KEEP;
	r = d_recvmmsg(u2, in, 2, MSG_DONTWAIT, NULL);
	check(r == 2 && !strcmp(r1, "one") && !strcmp(r2, "two") && errno == KEEP,
	      "recvmmsg() gets both, errno kept");
	errno = KEEP;
	r = d_close(u1) | d_close(u2) | d_close(s) | d_close(c) | d_close(l);
	check(!r && errno == KEEP, "close() succeeds, errno kept");
	return failed;
}
