// SPDX-License-Identifier: BSD-2-Clause
/*
 * libc's syscall(3), interposed: a program that makes a socket call
 * through it on a Sluice socket (gVisor's tests do:
 * syscall(SYS_setsockopt, fd, ...)) gets the socket's answer, as it would
 * on a kernel socket, not the placeholder's ENOTSOCK.  Only the calls of
 * the sockets API and read, write, readv, writev and close are looked at,
 * and only on a Sluice socket's fd; they go to this library's wrapper of
 * the same name.  Every other call, and these on any other fd, is made as
 * libc would make it.  A system call made without libc (the instruction
 * itself, inline) still meets the placeholder and fails (issue 24, item
 * 7; tests/preload/rawcalls.c).  The library's own system calls never come
 * here (os/os.h, sl_syscall()).
 */
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

long syscall(long nr, ...);

/* Does nr take a socket's fd first that a wrapper of ours answers? */
static bool routed(long nr)
{
	switch (nr) {
	case SYS_bind: case SYS_listen: case SYS_accept: case SYS_accept4:
	case SYS_connect: case SYS_shutdown: case SYS_getsockname:
	case SYS_getpeername: case SYS_getsockopt: case SYS_setsockopt:
	case SYS_sendto: case SYS_recvfrom: case SYS_sendmsg: case SYS_recvmsg:
	case SYS_sendmmsg: case SYS_recvmmsg:
	case SYS_read: case SYS_write: case SYS_readv: case SYS_writev:
	case SYS_close:
		return true;
	default:
		return false;
	}
}

static long route(long nr, int fd, long b, long c, long d, long e, long f)
{
	void *pb = (void *)b, *pe = (void *)e;

	switch (nr) {
	case SYS_bind:
		return bind(fd, pb, (socklen_t)c);
	case SYS_listen:
		return listen(fd, (int)b);
	case SYS_accept:
		return accept(fd, pb, (socklen_t *)c);
	case SYS_accept4:
		return accept4(fd, pb, (socklen_t *)c, (int)d);
	case SYS_connect:
		return connect(fd, pb, (socklen_t)c);
	case SYS_shutdown:
		return shutdown(fd, (int)b);
	case SYS_getsockname:
		return getsockname(fd, pb, (socklen_t *)c);
	case SYS_getpeername:
		return getpeername(fd, pb, (socklen_t *)c);
	case SYS_getsockopt:
		return getsockopt(fd, (int)b, (int)c, (void *)d, (socklen_t *)e);
	case SYS_setsockopt:
		return setsockopt(fd, (int)b, (int)c, (const void *)d, (socklen_t)e);
	case SYS_sendto:
		return sendto(fd, pb, (size_t)c, (int)d, pe, (socklen_t)f);
	case SYS_recvfrom:
		return recvfrom(fd, pb, (size_t)c, (int)d, pe, (socklen_t *)f);
	case SYS_sendmsg:
		return sendmsg(fd, pb, (int)c);
	case SYS_recvmsg:
		return recvmsg(fd, pb, (int)c);
	case SYS_sendmmsg:
		return sendmmsg(fd, pb, (unsigned int)c, (int)d);
	case SYS_recvmmsg:
		return recvmmsg(fd, pb, (unsigned int)c, (int)d, (struct timespec *)e);
	case SYS_read:
		return read(fd, pb, (size_t)c);
	case SYS_write:
		return write(fd, pb, (size_t)c);
	case SYS_readv:
		return readv(fd, pb, (int)c);
	case SYS_writev:
		return writev(fd, pb, (int)c);
	default:	/* SYS_close */
		return close(fd);
	}
}

/* Reads six arguments whatever the caller passed, as libc's does (in
 * assembly there): not a fault, but AddressSanitizer would call it one. */
__attribute__((no_sanitize_address))
long syscall(long nr, ...)
{
	long a, b, c, d, e, f;
	va_list ap;

	/* Six, as libc's own syscall() takes whatever the call has. */
	va_start(ap, nr);
	a = va_arg(ap, long);
	b = va_arg(ap, long);
	c = va_arg(ap, long);
	d = va_arg(ap, long);
	e = va_arg(ap, long);
	f = va_arg(ap, long);
	va_end(ap);
	if (routed(nr) && pl_is_sluice((int)a))
		return route(nr, (int)a, b, c, d, e, f);
	return sl_syscall6(nr, a, b, c, d, e, f);
}
