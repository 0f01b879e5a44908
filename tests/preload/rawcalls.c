// SPDX-License-Identifier: BSD-2-Clause
/*
 * System calls made raw (syscall(2): no library sees them) on a socket,
 * as gVisor's SetSocketRecvBufForceAboveMax makes setsockopt in a child
 * after unshare(CLONE_NEWUSER).  On a kernel socket they are the socket's
 * calls.  On a socket of the stack the fd is a placeholder (a directory,
 * lib/preload/fdtable.c) and every one of them must fail with an error,
 * never read or write a byte of anything behind the fd, and leave the
 * socket working (issue 24, item 7).  One line a call:
 *   "NAME: ret ERRNO"
 * then whether the connection still carries bytes both ways.
 * tests/host/test_conform_raw.sh runs it under `sluice run` and checks
 * the lines; on the kernel it shows what the calls would have done.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *name, long r)
{
	printf("%s: %ld %s\n", name, r, r < 0 ? strerrorname_np(errno) : "-");
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s;
	int d = socket(AF_INET, SOCK_DGRAM, 0), v = 1 << 20, one = 1, n = -1;
	char buf[64] = "", big[16] = "raw-bytes";
	struct iovec iov = { buf, sizeof(buf) };
	struct pollfd p;
	struct stat st;
	void *m;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bind(l, (struct sockaddr *)&a, sizeof(a));
	listen(l, 4);
	getsockname(l, (struct sockaddr *)&a, &al);
	connect(c, (struct sockaddr *)&a, sizeof(a));
	s = accept(l, NULL, NULL);
	fcntl(s, F_SETFL, O_NONBLOCK);	/* the kernel's raw calls must not wait */
	fcntl(l, F_SETFL, O_NONBLOCK);
	syscall(SYS_fstat, s, &st);
	printf("# backend: %s\n", S_ISSOCK(st.st_mode) ? "kernel" : "sluice");

	show("raw_setsockopt", syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	al = sizeof(v);
	show("raw_getsockopt", syscall(SYS_getsockopt, s, SOL_SOCKET, SO_RCVBUF, &v, &al));
	al = sizeof(a);
	show("raw_getsockname", syscall(SYS_getsockname, s, &a, &al));
	al = sizeof(a);
	show("raw_getpeername", syscall(SYS_getpeername, s, &a, &al));
	show("raw_sendto", syscall(SYS_sendto, s, big, 9, MSG_DONTWAIT, NULL, 0));
	show("raw_recvfrom", syscall(SYS_recvfrom, s, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL));
	show("raw_read", syscall(SYS_read, s, buf, sizeof(buf)));
	show("raw_write", syscall(SYS_write, s, big, 9));
	show("raw_readv", syscall(SYS_readv, s, &iov, 1));
	show("raw_writev", syscall(SYS_writev, s, &iov, 1));
	show("raw_pread64", syscall(SYS_pread64, s, buf, sizeof(buf), 0));
	show("raw_ioctl_fionread", syscall(SYS_ioctl, s, FIONREAD, &n));
	show("raw_shutdown", syscall(SYS_shutdown, d, SHUT_RDWR));
	show("raw_bind", syscall(SYS_bind, d, &a, sizeof(a)));
	show("raw_listen", syscall(SYS_listen, d, 4));
	show("raw_connect", syscall(SYS_connect, d, &a, sizeof(a)));
	show("raw_accept4", syscall(SYS_accept4, l, NULL, NULL, SOCK_NONBLOCK));
	show("raw_sendmsg", syscall(SYS_sendmsg, d, &(struct msghdr){ .msg_iov = &iov,
								  .msg_iovlen = 1 }, MSG_DONTWAIT));
	m = (void *)syscall(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, s, 0);
	show("raw_mmap", m == MAP_FAILED ? -1 : 0);
	/* gVisor's own: setsockopt after giving up the capability. */
	if (fork() == 0) {
		if (unshare(CLONE_NEWUSER))
			_exit(2);
		show("raw_rcvbufforce_userns",
		     syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		_exit(0);
	}
	wait(NULL);

	/* The connection is as it was: bytes both ways. */
	memset(buf, 0, sizeof(buf));
	fcntl(s, F_SETFL, 0);
	printf("after_send: %zd\n", send(c, "ping", 4, 0));
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	poll(&p, 1, 2000);
	printf("after_recv: %zd %.4s\n", recv(s, buf, sizeof(buf), 0), buf);
	printf("after_back: %zd\n", send(s, "pong", 4, 0));
	p = (struct pollfd){ .fd = c, .events = POLLIN };
	poll(&p, 1, 2000);
	memset(buf, 0, sizeof(buf));
	printf("after_recv_back: %zd %.4s\n", recv(c, buf, sizeof(buf), 0), buf);
	printf("# done\n");
	close(s);
	close(c);
	close(l);
	close(d);
	return 0;
}
