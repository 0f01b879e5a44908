// SPDX-License-Identifier: BSD-2-Clause
/*
 * System calls on a socket that bypass its library wrappers, two ways.
 *
 * raw_*: the system call instruction itself (raw() below), which no
 * library sees.  On a kernel socket they are the socket's calls.  On a
 * socket of the stack the fd is a placeholder (a directory,
 * lib/preload/fdtable.c) and every one of them must fail with an error,
 * never read or write a byte of anything behind the fd, and leave the
 * socket working (issue 24, item 7).
 *
 * sc_*: libc's syscall(3), as gVisor's SetSocketRecvBufForceAboveMax
 * makes setsockopt in a child after unshare(CLONE_NEWUSER).  The preload
 * interposes syscall() (lib/preload/syscall.c), so on a socket of the
 * stack these must answer as the kernel's socket does: each line the
 * same on both.
 *
 * One line a call, "NAME: ret ERRNO" (sc_ lines may add what they read),
 * then whether the connection still carries bytes both ways.
 * tests/host/test_conform_raw.sh runs it on the kernel and under `sluice
 * run` and compares.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
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

/* A system call made with the instruction, which no library can see:
 * the result, or -1 with errno set. */
#if defined(__x86_64__)
long raw6(long nr, long a, long b, long c, long d, long e, long f);
__asm__(".text\n.globl raw6\n.type raw6, @function\nraw6:\n"
	"	movq %rdi, %rax\n	movq %rsi, %rdi\n	movq %rdx, %rsi\n"
	"	movq %rcx, %rdx\n	movq %r8, %r10\n	movq %r9, %r8\n"
	"	movq 8(%rsp), %r9\n	syscall\n	ret\n"
	".size raw6, .-raw6\n");
#else
#error "rawcalls: the system call instruction is written for x86-64"
#endif

static long raw(long nr, ...)
{
	long a[6], r;
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	r = raw6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* poll fd for input, up to 2 s */
static void wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	poll(&p, 1, 2000);
}

/* The same socket calls through syscall(3), on a connection of their
 * own: each answer as the kernel's. */
static void through_syscall(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in la = a;
	socklen_t al = sizeof(a), ll = sizeof(la);
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s;
	int d = socket(AF_INET, SOCK_DGRAM, 0), e = socket(AF_INET, SOCK_STREAM, 0);
	int v = 1 << 16, got = 0;
	char buf[64] = "";
	struct iovec iov = { buf, sizeof(buf) };
	long r;

	bind(l, (struct sockaddr *)&la, sizeof(la));
	listen(l, 4);
	getsockname(l, (struct sockaddr *)&la, &ll);
	connect(c, (struct sockaddr *)&la, sizeof(la));
	s = accept(l, NULL, NULL);
	fcntl(l, F_SETFL, O_NONBLOCK);
	show("sc_setsockopt_rcvbuf", syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	al = sizeof(got);
	r = syscall(SYS_getsockopt, s, SOL_SOCKET, SO_TYPE, &got, &al);
	printf("sc_getsockopt_type: %ld %s %d %u\n", r, r < 0 ? strerrorname_np(errno) : "-",
	       got, al);
	al = sizeof(a);
	r = syscall(SYS_getsockname, s, &a, &al);
	printf("sc_getsockname: %ld %s %u same-address %d\n", r, r < 0 ? strerrorname_np(errno) : "-",
	       al, a.sin_port == la.sin_port && a.sin_addr.s_addr == la.sin_addr.s_addr);
	al = sizeof(a);
	r = syscall(SYS_getpeername, c, &a, &al);
	printf("sc_getpeername: %ld %s %u same-address %d\n", r, r < 0 ? strerrorname_np(errno) : "-",
	       al, a.sin_port == la.sin_port && a.sin_addr.s_addr == la.sin_addr.s_addr);
	show("sc_sendto", syscall(SYS_sendto, s, "sc-bytes", 8, 0, NULL, 0));
	wait_in(c);
	r = syscall(SYS_recvfrom, c, buf, sizeof(buf), 0, NULL, NULL);
	printf("sc_recvfrom: %ld %.8s\n", r, buf);
	show("sc_write", syscall(SYS_write, c, "abc", 3));
	wait_in(s);
	memset(buf, 0, sizeof(buf));
	r = syscall(SYS_read, s, buf, sizeof(buf));
	printf("sc_read: %ld %.3s\n", r, buf);
	iov.iov_base = "vec";
	iov.iov_len = 3;
	show("sc_writev", syscall(SYS_writev, s, &iov, 1));
	wait_in(c);
	memset(buf, 0, sizeof(buf));
	iov = (struct iovec){ buf, sizeof(buf) };
	r = syscall(SYS_readv, c, &iov, 1);
	printf("sc_readv: %ld %.3s\n", r, buf);
	show("sc_recvfrom_empty", syscall(SYS_recvfrom, s, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL));
	show("sc_shutdown_unconnected_udp", syscall(SYS_shutdown, d, SHUT_RDWR));
	a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	show("sc_bind_udp", syscall(SYS_bind, d, &a, sizeof(a)));
	show("sc_connect_udp", syscall(SYS_connect, d, &la, sizeof(la)));
	iov = (struct iovec){ "dgram", 5 };
	show("sc_sendmsg_udp", syscall(SYS_sendmsg, d, &(struct msghdr){ .msg_iov = &iov,
								   .msg_iovlen = 1 }, 0));
	show("sc_listen", syscall(SYS_listen, e, 4));
	show("sc_accept4_none", syscall(SYS_accept4, l, NULL, NULL, SOCK_NONBLOCK));
	/* Closed through syscall(3) (before the fork, while the socket is
	 * the process's own): the number is free, to the library too. */
	show("sc_close", syscall(SYS_close, e));
	al = sizeof(a);
	show("sc_closed_getsockname", getsockname(e, (struct sockaddr *)&a, &al));
	/* gVisor's own: setsockopt after giving up the capability. */
	if (fork() == 0) {
		if (unshare(CLONE_NEWUSER))
			_exit(2);
		show("sc_rcvbufforce_userns",
		     syscall(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		_exit(0);
	}
	wait(NULL);
	close(d);
	close(s);
	close(c);
	close(l);
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
	raw(SYS_fstat, s, &st);
	printf("# backend: %s\n", S_ISSOCK(st.st_mode) ? "kernel" : "sluice");

	show("raw_setsockopt", raw(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	al = sizeof(v);
	show("raw_getsockopt", raw(SYS_getsockopt, s, SOL_SOCKET, SO_RCVBUF, &v, &al));
	al = sizeof(a);
	show("raw_getsockname", raw(SYS_getsockname, s, &a, &al));
	al = sizeof(a);
	show("raw_getpeername", raw(SYS_getpeername, s, &a, &al));
	show("raw_sendto", raw(SYS_sendto, s, big, 9, MSG_DONTWAIT, NULL, 0));
	show("raw_recvfrom", raw(SYS_recvfrom, s, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL));
	show("raw_read", raw(SYS_read, s, buf, sizeof(buf)));
	show("raw_write", raw(SYS_write, s, big, 9));
	show("raw_readv", raw(SYS_readv, s, &iov, 1));
	show("raw_writev", raw(SYS_writev, s, &iov, 1));
	show("raw_pread64", raw(SYS_pread64, s, buf, sizeof(buf), 0));
	show("raw_ioctl_fionread", raw(SYS_ioctl, s, FIONREAD, &n));
	show("raw_shutdown", raw(SYS_shutdown, d, SHUT_RDWR));
	show("raw_bind", raw(SYS_bind, d, &a, sizeof(a)));
	show("raw_listen", raw(SYS_listen, d, 4));
	show("raw_connect", raw(SYS_connect, d, &a, sizeof(a)));
	show("raw_accept4", raw(SYS_accept4, l, NULL, NULL, SOCK_NONBLOCK));
	show("raw_sendmsg", raw(SYS_sendmsg, d, &(struct msghdr){ .msg_iov = &iov,
								  .msg_iovlen = 1 }, MSG_DONTWAIT));
	m = (void *)raw(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, s, 0);
	show("raw_mmap", m == MAP_FAILED ? -1 : 0);
	/* gVisor's own: setsockopt after giving up the capability. */
	if (fork() == 0) {
		if (unshare(CLONE_NEWUSER))
			_exit(2);
		show("raw_rcvbufforce_userns",
		     raw(SYS_setsockopt, s, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)));
		_exit(0);
	}
	wait(NULL);

	through_syscall();

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
