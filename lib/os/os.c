// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one door to the operating system (os.h says why): direct system
 * calls, and libc's sigaction resolved once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"

/* Every errno of this file through the thread's kept pointer (os.h). */
#undef errno
#define errno (*sl_errno_loc())
__thread int *sl_errno_p;

/*
 * A system call with six arguments, the kernel's result (-errno on
 * failure): what libc's syscall() does, less errno.  In assembly, as the
 * preload's vfork and probe (preload/spawn.c, signal.c).
 */
#if defined(__x86_64__)
long sl_syscall_raw(long nr, long a, long b, long c, long d, long e, long f);
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl sl_syscall_raw\n.hidden sl_syscall_raw\n.type sl_syscall_raw, @function\n"
	"sl_syscall_raw:\n"
	"	endbr64\n"
	"	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	movq %rdx, %rsi\n"
	"	movq %rcx, %rdx\n"
	"	movq %r8, %r10\n"
	"	movq %r9, %r8\n"
	"	movq 8(%rsp), %r9\n"
	"	syscall\n"
	"	ret\n"
	".size sl_syscall_raw, .-sl_syscall_raw\n"
	".popsection\n");
#else
typedef long (*syscall_fn)(long, ...);

static long sl_syscall_raw(long nr, long a, long b, long c, long d, long e, long f)
{
	static syscall_fn libc_syscall;
	syscall_fn fn = libc_syscall;
	long r;

	if (!fn) {
		fn = (syscall_fn)dlsym(RTLD_NEXT, "syscall");
		libc_syscall = fn;
	}
	r = fn(nr, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
}
#endif

long sl_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = sl_syscall_raw(nr, a, b, c, d, e, f);

	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

ssize_t sl_sys_read(int fd, void *buf, size_t len)
{
	return sl_syscall(SYS_read, fd, buf, len);
}

ssize_t sl_sys_read_small(const char *path, char *buf, size_t len)
{
	int fd = sl_sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = sl_sys_read(fd, buf, len - 1);
	sl_sys_close(fd);
	if (n > 0)
		buf[n] = '\0';
	return n;
}

ssize_t sl_sys_write(int fd, const void *buf, size_t len)
{
	return sl_syscall(SYS_write, fd, buf, len);
}

int sl_sys_close(int fd)
{
	return (int)sl_syscall(SYS_close, fd);
}

int sl_sys_openat(int dfd, const char *path, int flags, unsigned int mode)
{
	return (int)sl_syscall(SYS_openat, dfd, path, flags, mode);
}

int sl_sys_fstat(int fd, struct stat *st)
{
	return (int)sl_syscall(SYS_fstat, fd, st);
}

int sl_sys_flock(int fd, int op)
{
	return (int)sl_syscall(SYS_flock, fd, op);
}

int sl_sys_dup2(int oldfd, int newfd)
{
	/* dup3(2) refuses old == new; dup2(2) then only checks old. */
	if (oldfd == newfd)
		return sl_sys_fcntl(oldfd, F_GETFD, 0) < 0 ? -1 : newfd;
	return (int)sl_syscall(SYS_dup3, oldfd, newfd, 0);
}

int sl_sys_dup3(int oldfd, int newfd, int flags)
{
	return (int)sl_syscall(SYS_dup3, oldfd, newfd, flags);
}

int sl_sys_fcntl(int fd, int cmd, long arg)
{
	return (int)sl_syscall(SYS_fcntl, fd, cmd, arg);
}

/*
 * Where the library's fds go: the top 64 numbers of a kernel fd table of
 * 256 entries (192-255), or of a larger one when the program already
 * holds that many.  The kernel embeds a table of 64 and grows it in
 * steps of 128 << k (alloc_fdtable()), and fork() copies the parent's up
 * to its highest open fd, rounded up: a child of a parent whose highest
 * fd is below 256 costs what one of a parent holding 3 fds costs, one at
 * 960 (a table of 1,024) 3-4 us more a fork, measured (lib/preload
 * README).  So the library's fds stay in the smallest such table that
 * leaves the program 64 numbers above the lowest one free when the fd is
 * made (a fresh fd is the lowest free), capped by the soft
 * RLIMIT_NOFILE (64 below it; half of it under 256); a program holding
 * more moves the next fds made to the next table, once a table.  Read
 * again when the limit has moved under it (F_DUPFD says EINVAL).  The
 * program's fds are numbered as on the kernel until it holds that many.
 */
#define SL_FD_TABLE_MIN	256
#define SL_FD_HIGH_ROOM	64
static int fd_high_base;	/* where the last went; 0: none yet */

static int fd_high_pick(int low)
{
	struct rlimit rl;
	long top = SL_FD_TABLE_MIN, lim = INT_MAX;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)INT_MAX)
		lim = (long)rl.rlim_cur;
	while (top - SL_FD_HIGH_ROOM < (long)low + SL_FD_HIGH_ROOM && top < lim)
		top *= 2;
	if (top > lim)
		top = lim;
	return top >= 4 * SL_FD_HIGH_ROOM ? (int)(top - SL_FD_HIGH_ROOM) : (int)top / 2;
}

/* An O_CLOEXEC copy of fd in the library's range, chosen with low the
 * lowest number free (-1: unknown, keep the range). */
static int dup_high(int fd, int low)
{
	int saved = errno, base = fd_high_base, nfd = -1;

	if (fd < 0)
		return -1;
	for (int i = 0; i < 2 && nfd < 0; i++) {
		if (!base || i || low + SL_FD_HIGH_ROOM > base) {
			base = fd_high_pick(low > 0 ? low : 0);
			if (base > fd_high_base || i)
				fd_high_base = base;	/* the same for every thread */
		}
		if (base <= 0 || (low >= 0 && fd >= base))
			break;	/* no room above it: stays */
		nfd = sl_sys_fcntl(fd, F_DUPFD_CLOEXEC, base);
		if (nfd < 0 && errno != EINVAL)
			break;	/* EMFILE: the range is full */
	}
	errno = saved;
	return nfd;
}

int sl_sys_dup_high(int fd)
{
	return dup_high(fd, -1);
}

int sl_sys_dup_above(int fd)
{
	return dup_high(fd, fd);
}

int sl_sys_fd_high(int fd)
{
	int nfd;

	if (fd < 0)
		return fd;
	nfd = dup_high(fd, fd);
	if (nfd < 0)
		return fd;
	sl_sys_close(fd);
	return nfd;
}

int sl_sys_ioctl(int fd, unsigned long req, void *arg)
{
	return (int)sl_syscall(SYS_ioctl, fd, req, arg);
}

int sl_sys_madvise(void *addr, size_t len, int advice)
{
	return (int)sl_syscall(SYS_madvise, addr, len, advice);
}

int sl_sys_timerfd_create(bool blocking)
{
	return (int)sl_syscall(SYS_timerfd_create, CLOCK_MONOTONIC,
			       TFD_CLOEXEC | (blocking ? 0 : TFD_NONBLOCK));
}

int sl_sys_timerfd_set_ns(int fd, uint64_t ns)
{
	struct itimerspec its = {
		.it_value = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) },
	};

	return (int)sl_syscall(SYS_timerfd_settime, fd, 0, &its, NULL);
}

int sl_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
#ifdef SYS_poll
	/* poll where there is one: sandboxes allow it more often than ppoll
	 * (OpenSSH's pre-authentication filter allows only poll). */
	return (int)sl_syscall(SYS_poll, fds, n, timeout_ms);
#else
	struct timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000L };

	/* ppoll: the one poll every architecture has. */
	return (int)sl_syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, 0);
#endif
}

void sl_sys_drain_dgrams(int fd)
{
	struct mmsghdr m[16];
	struct iovec v[16];
	char b[16];
	long n;

	for (int i = 0; i < 16; i++) {
		v[i].iov_base = &b[i];
		v[i].iov_len = 1;
		memset(&m[i].msg_hdr, 0, sizeof(m[i].msg_hdr));
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	do
		n = sl_syscall(SYS_recvmmsg, fd, m, 16, MSG_DONTWAIT, NULL);
	while (n == 16 || (n < 0 && errno == EINTR));
}

bool sl_sys_sandboxed;

/* /proc/loadavg, opened at the first look and kept: each look after is
 * one pread() at offset 0 (the file is made again at each read from 0).
 * A forked child shares it; the preload's close() and dup2() treat it as
 * the library's own (sl_sys_runnable_fd()). */
static int runq_fd = -1;
static pthread_mutex_t runq_mu = PTHREAD_MUTEX_INITIALIZER;

int sl_sys_runnable_fd(void)
{
	return runq_fd;
}

void sl_sys_runnable_lost(void)
{
	runq_fd = -1;
}

int sl_sys_runnable(void)
{
	char b[128], *p;
	long n;
	int fd, i;

	if (sl_sys_sandboxed)
		return -1;
	fd = runq_fd;
	if (fd < 0) {
		/* Two threads' first looks at once: one opens, the other
		 * looks next time (no wait: a fork may have left it held). */
		if (pthread_mutex_trylock(&runq_mu))
			return -1;
		if (runq_fd < 0)
			runq_fd = sl_sys_fd_high((int)sl_syscall(SYS_openat, AT_FDCWD,
								 "/proc/loadavg",
								 O_RDONLY | O_CLOEXEC));
		fd = runq_fd;
		pthread_mutex_unlock(&runq_mu);
		if (fd < 0)
			return -1;
	}
	n = sl_syscall(SYS_pread64, fd, b, sizeof(b) - 1, (off_t)0);
	if (n <= 0)
		return -1;
	b[n] = 0;
	/* "0.52 0.58 0.59 3/467 12345": the fourth field's numerator. */
	for (p = b, i = 0; i < 3; i++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	if (*p < '0' || *p > '9')
		return -1;
	n = strtol(p, &p, 10);
	return *p == '/' && n > 0 && n < 1 << 24 ? (int)n : -1;
}

void sl_sys_yield(void)
{
	static int nobody;
	struct timespec ts = { 0, 20000 };

	if (!sl_sys_sandboxed) {
		sl_syscall(SYS_sched_yield);
		return;
	}
	sl_syscall(SYS_futex, &nobody, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

int sl_sys_socket(int domain, int type, int protocol)
{
	return (int)sl_syscall(SYS_socket, domain, type, protocol);
}

int sl_sys_socketpair(int domain, int type, int protocol, int sv[2])
{
	return (int)sl_syscall(SYS_socketpair, domain, type, protocol, sv);
}

int sl_sys_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	return (int)sl_syscall(SYS_setsockopt, fd, level, name, val, len);
}

int sl_sys_shutdown(int fd, int how)
{
	return (int)sl_syscall(SYS_shutdown, fd, how);
}

int sl_sys_bind(int fd, const struct sockaddr *a, socklen_t len)
{
	return (int)sl_syscall(SYS_bind, fd, a, len);
}

int sl_sys_connect(int fd, const struct sockaddr *a, socklen_t len)
{
	return (int)sl_syscall(SYS_connect, fd, a, len);
}

int sl_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return (int)sl_syscall(SYS_getsockopt, fd, level, name, val, len);
}

ssize_t sl_sys_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *a,
		      socklen_t alen)
{
	return sl_syscall(SYS_sendto, fd, buf, len, flags, a, alen);
}

bool sl_sys_net_admin(void)
{
	int fd = sl_sys_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), v = 0;
	bool ok;

	if (fd < 0)
		return false;
	ok = !sl_sys_setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v));
	sl_sys_close(fd);
	return ok;
}

int sl_sys_epoll_create1(int flags)
{
	return (int)sl_syscall(SYS_epoll_create1, flags);
}

int sl_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return (int)sl_syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* The next definition after ours (libc's), never the preload's. */
static void resolve(void)
{
	real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
}

int sl_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	pthread_once(&real_once, resolve);
	if (!real_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction(sig, act, old);
}

int sl_sys_cpu(void)
{
	int saved = errno, cpu = sched_getcpu();

	errno = saved;
	return cpu;
}
