// SPDX-License-Identifier: BSD-2-Clause
/*
 * System calls on a socket that bypass its library wrappers, two ways.
 *
 * raw_*: the system call instruction itself (raw() below), which no
 * library sees.  On a kernel socket they are the socket's calls.  On a
 * socket of the stack the fd is a placeholder (an AF_UNIX socket of its
 * own, lib/preload/fdtable.c) and each must answer as the kernel's socket
 * or fail with an error, never read or write a byte of anything behind
 * the fd (a read with bytes waiting leaves them to the stack), say
 * "socket" to fstat, and leave the socket working (issue 24, item 7).
 *
 * sc_*: libc's syscall(3), as gVisor's SetSocketRecvBufForceAboveMax
 * makes setsockopt in a child after unshare(CLONE_NEWUSER).  The preload
 * interposes syscall() (lib/preload/syscall.c), so on a socket of the
 * stack these must answer as the kernel's socket does: each line the
 * same on both.
 *
 * walk_*: the socket's fd used as a file (issue 24 item 7, the
 * placeholder): openat() through it ("../recs", a new file), mkdirat,
 * fchdir, getdents64 or fdopendir, fsync, fdatasync, statx, and a reopen
 * of /proc/self/fd/N for reading, writing or both, each raw and through
 * libc.  On a socket Linux refuses them all (ENOTDIR, EINVAL, ENXIO).
 * Under Sluice the stack's files (its directory beside the placeholder:
 * the records file, the shards) are looked at before and after, every
 * byte: "stack_files: unchanged".
 *
 * One line a call, "NAME: ret ERRNO" (sc_ lines may add what they read),
 * then whether the connection still carries bytes both ways.
 * tests/host/test_conform_raw.sh runs it on the kernel and under `sluice
 * run` and compares.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
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

/*
 * Every byte of the stack's files: the stack's directory beside its
 * placeholders (/dev/shm/sluicefd-STACK, STACK from SLUICE_STACK, which
 * sluice run sets), each entry's name, type, mode and size, and a
 * regular file's contents (FNV-1a).  0 on the kernel: no such directory.
 */
static uint64_t stack_files(void)
{
	const char *stack = getenv("SLUICE_STACK");
	uint64_t h = 1469598103934665603ull;
	char link[PATH_MAX];
	struct dirent *e;
	ssize_t n;
	DIR *d;

	if (!stack || !*stack)
		return 0;
	snprintf(link, sizeof(link), "/dev/shm/sluicefd-%s", stack);
	d = opendir(link);
	while (d && (e = readdir(d))) {
		char f[PATH_MAX + 256], buf[4096];
		struct stat st;
		int in;

		snprintf(f, sizeof(f), "%s/%s", link, e->d_name);
		if (lstat(f, &st))
			continue;
		for (const char *c = e->d_name; *c; c++)
			h = (h ^ (uint8_t)*c) * 1099511628211ull;
		h = (h ^ (uint64_t)st.st_mode) * 1099511628211ull;
		h = (h ^ (uint64_t)st.st_size) * 1099511628211ull;
		if (!S_ISREG(st.st_mode) || (in = open(f, O_RDONLY)) < 0)
			continue;
		/* The records file is live (sweep times, the death watcher's
		 * born bits change under the test): its size (the walk's
		 * write goes past its end) and its first 16 bytes (the magic
		 * and the stamp: offset 0 of any other fresh open). */
		while ((n = read(in, buf, strcmp(e->d_name, "recs") ? sizeof(buf) : 16)) > 0) {
			for (ssize_t i = 0; i < n; i++)
				h = (h ^ (uint8_t)buf[i]) * 1099511628211ull;
			if (!strcmp(e->d_name, "recs"))
				break;
		}
		close(in);
	}
	if (d)
		closedir(d);
	return h;
}

static const char *type_name(mode_t m)
{
	return S_ISSOCK(m) ? "sock" : S_ISFIFO(m) ? "fifo" : S_ISDIR(m) ? "dir" :
	       S_ISREG(m) ? "reg" : "other";
}

/*
 * A reopen of /proc/self/fd/N (raw: openat; else libc's open): the
 * result; if it opened, what it is, and what a write of 4 bytes and a
 * walk to "../recs" through it do (the write read back, so nothing is
 * left in a FIFO's pipe).
 */
static void reopen(const char *name, int fd, int how, bool use_raw)
{
	char path[64], line[160], back[8];
	struct stat st;
	long r, w = 0, k = 0, b = 0;
	int kerr = 0;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = use_raw ? raw(SYS_openat, AT_FDCWD, path, how | O_NONBLOCK | O_CLOEXEC, 0) :
		      open(path, how | O_NONBLOCK | O_CLOEXEC);
	if (r < 0) {
		show(name, r);
		return;
	}
	fstat((int)r, &st);
	if ((how & O_ACCMODE) != O_RDONLY)
		w = raw(SYS_write, r, "walk", 4);
	if (w > 0 && (how & O_ACCMODE) == O_RDWR)
		b = raw(SYS_read, r, back, sizeof(back));
	k = raw(SYS_openat, r, "../recs", O_RDWR | O_CLOEXEC, 0);
	kerr = k < 0 ? errno : 0;
	snprintf(line, sizeof(line), "%s: opened %s write %ld read-back %ld walk %ld %s", name,
		 type_name(st.st_mode), w, b, k, k < 0 ? strerrorname_np(kerr) : "-");
	puts(line);
	if (k >= 0)
		close((int)k);
	close((int)r);
}

/* The socket's fd as a file: each call raw and through libc. */
static void walk(int s)
{
	uint64_t before = stack_files();
	int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct statx stx;
	char buf[256];
	long r;
	DIR *d;

	for (int lc = 0; lc < 2; lc++) {
		const char *p = lc ? "walk_lc_" : "walk_raw_";
		char name[64];

#define NAME(x) (snprintf(name, sizeof(name), "%s%s", p, x), name)
		r = lc ? openat(s, "../recs", O_RDWR | O_CLOEXEC) :
			 raw(SYS_openat, s, "../recs", O_RDWR | O_CLOEXEC, 0);
		show(NAME("openat_recs"), r);
		if (r >= 0) {
			struct stat st;

			/* A byte past the records, so the stack goes on. */
			fstat((int)r, &st);
			show(NAME("recs_written"), pwrite((int)r, "w", 1, st.st_size));
			close((int)r);
		}
		r = lc ? openat(s, "made-here", O_CREAT | O_RDWR | O_CLOEXEC, 0600) :
			 raw(SYS_openat, s, "made-here", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
		show(NAME("openat_creat"), r);
		if (r >= 0)
			close((int)r);
		show(NAME("mkdirat"), lc ? mkdirat(s, "made-dir", 0700) :
			 raw(SYS_mkdirat, s, "made-dir", 0700));
		r = lc ? fchdir(s) : raw(SYS_fchdir, s);
		show(NAME("fchdir"), r);
		if (!r && fchdir(here))
			perror("fchdir back");
		if (lc) {
			d = fdopendir(dup(s));
			show(NAME("fdopendir"), d ? 0 : -1);
			if (d)
				closedir(d);
		} else {
			show(NAME("getdents64"), raw(SYS_getdents64, s, buf, sizeof(buf)));
		}
		show(NAME("fsync"), lc ? fsync(s) : raw(SYS_fsync, s));
		show(NAME("fdatasync"), lc ? fdatasync(s) : raw(SYS_fdatasync, s));
		memset(&stx, 0, sizeof(stx));
		r = lc ? statx(s, "", AT_EMPTY_PATH, STATX_TYPE, &stx) :
			 raw(SYS_statx, s, "", AT_EMPTY_PATH, STATX_TYPE, &stx);
		printf("%s: %ld %s %s\n", NAME("statx"), r, r < 0 ? strerrorname_np(errno) : "-",
		       type_name(stx.stx_mode));
		reopen(NAME("reopen_read"), s, O_RDONLY, !lc);
		reopen(NAME("reopen_write"), s, O_WRONLY, !lc);
		reopen(NAME("reopen_rdwr"), s, O_RDWR, !lc);
#undef NAME
	}
	close(here);
	if (before)
		printf("stack_files: %s\n", stack_files() == before ? "unchanged" : "changed");
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
	struct sockaddr_in la;
	struct stat st;
	long r;
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
	/* The placeholder is a socket too, but an AF_UNIX one (or, before,
	 * no socket at all: ENOTSOCK). */
	al = sizeof(n);
	r = raw(SYS_getsockopt, s, SOL_SOCKET, SO_DOMAIN, &n, &al);
	printf("# backend: %s\n", !r && n == AF_INET ? "kernel" : "sluice");
	la = a;

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
	r = raw(SYS_fstat, s, &st);
	printf("raw_fstat: %ld %s %s\n", r, r < 0 ? strerrorname_np(errno) : "-",
	       type_name(st.st_mode));
	/* Bytes waiting, the fd blocking: the kernel reads them; the
	 * placeholder must fail (not 0, the peer's close; not wait), and
	 * leave them to the socket. */
	send(c, "data", 4, 0);
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	poll(&p, 1, 2000);
	fcntl(s, F_SETFL, 0);
	alarm(10);
	r = raw(SYS_read, s, buf, sizeof(buf));
	alarm(0);
	printf("raw_read_waiting: %ld %s\n", r, r < 0 ? strerrorname_np(errno) : "-");
	fcntl(s, F_SETFL, O_NONBLOCK);
	r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
	printf("raw_read_left: %ld%s\n", r, r > 0 ? " (bytes)" : "");
	r = raw(SYS_ioctl, s, FIONREAD, &n);
	printf("raw_ioctl_fionread: %ld %s%s\n", r, r < 0 ? strerrorname_np(errno) : "-",
	       r < 0 ? "" : n ? " (bytes)" : " (none)");
	show("raw_shutdown", raw(SYS_shutdown, d, SHUT_RDWR));
	a = la;	/* raw_getsockname may have written another family's */
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

	walk(s);
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
