/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * os/: the library's one door to the operating system.
 *
 * libsluice-preload.so interposes close, read, write, ioctl, poll, fcntl,
 * socket and the rest of the BSD sockets API (preload/preload.map).  The
 * stack's own calls must never enter those wrappers: its descriptors
 * (region, TAP device, rings, epoll sets) are not the application's, and a
 * wrapper would look them up in the socket table meant for the program.
 * So every such call the library makes goes through here, where it is a
 * direct system call (sl_syscall(), below) or, for sigaction(2), libc's
 * own entry point resolved once with dlsym(RTLD_NEXT): names the preload
 * exports can never capture them.  Not even libc's syscall(3): the preload
 * interposes that too (preload/syscall.c), for programs that make socket
 * calls with it.  tests/host/test_layers.sh checks with nm(1) that no
 * object outside os/ and preload/ refers to an interposed name.
 *
 * Each call has libc's contract (the result, or -1 with errno set), so a
 * caller reads as it would with the libc call of the same name; none of
 * them is a cancellation point.
 */
#ifndef SLUICE_OS_H
#define SLUICE_OS_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * This thread's errno, through a pointer kept for it: the first use asks
 * libc's __errno_location(), later ones only read the pointer (a forked
 * child's one thread is a copy of the one that forked, at the same
 * address).  A file that says so after its includes reads every errno
 * through it (#undef errno, #define errno (*sl_errno_loc())): os.c,
 * run/bell.c, preload/fdtable.c, on the paths a forking server's child
 * takes as it serves and closes its connection, which saved and put
 * back errno at each packet's CPU note, bell and release, and
 * __errno_location() was a page of libc's text that child faulted in for
 * that alone (tests/host/test_fork_cost.sh).
 */
extern __thread int *sl_errno_p;
static inline int *sl_errno_loc(void)
{
	int *p = sl_errno_p;

	if (__builtin_expect(!p, 0))
		p = sl_errno_p = __errno_location();
	return p;
}

/*
 * syscall(3) under a name the preload does not export: up to six
 * arguments, the result or -1 with errno set.  On x86-64 the system call
 * instruction itself; elsewhere libc's syscall() found with
 * dlsym(RTLD_NEXT), past the preload's.  A macro that pads the arguments
 * to six longs, so no variadic call reads past what its caller passed.
 */
long sl_syscall6(long nr, long a, long b, long c, long d, long e, long f);
#define sl_syscall(...) sl_syscall_pad(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)
#define sl_syscall_pad(nr, a, b, c, d, e, f, ...) \
	sl_syscall6((long)(nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
ssize_t sl_sys_read(int fd, void *buf, size_t len);
ssize_t sl_sys_write(int fd, const void *buf, size_t len);
int sl_sys_close(int fd);
/* openat(2); the layers below the preload open their files with it (open
 * and openat are interposed: preload/files.c). */
int sl_sys_openat(int dfd, const char *path, int flags, unsigned int mode);
int sl_sys_fstat(int fd, struct stat *st);
/* A small file (/proc's) read whole in one read into buf, NUL-terminated:
 * its length, or <= 0 (cannot open or read, or empty). */
ssize_t sl_sys_read_small(const char *path, char *buf, size_t len);
/* flock(2) (interposed: preload/files.c). */
int sl_sys_flock(int fd, int op);
/* May this process set SO_RCVBUFFORCE: CAP_NET_ADMIN over its network
 * namespace, as the kernel answers on a socket made to ask it. */
bool sl_sys_net_admin(void);
/* dup2(2): newfd is closed first if open; old == new checks old. */
int sl_sys_dup2(int oldfd, int newfd);
/* dup3(2): newfd replaced at once (flags: O_CLOEXEC). */
int sl_sys_dup3(int oldfd, int newfd, int flags);
/* fcntl(2) for the commands that take an int or nothing (F_GETFL,
 * F_SETFL, F_GETFD, F_SETFD, F_DUPFD_CLOEXEC), or a pointer as a long
 * (F_SETOWN_EX). */
int sl_sys_fcntl(int fd, int cmd, long arg);
int sl_sys_ioctl(int fd, unsigned long req, void *arg);
/* madvise(2): (MADV_REMOVE: a shared mapping's pages given back to the
 * file's holes, as fallocate(PUNCH_HOLE) gives them). */
int sl_sys_madvise(void *addr, size_t len, int advice);
/*
 * The library's own long-lived fds (probes, records, bells, twins) live
 * above the program's: the number a close() just freed, or any low one,
 * is the next open()'s, socket()'s or accept()'s, as on the kernel
 * (issue 24, issue 23 item 3).  sl_sys_fd_high(fd): fd moved to the
 * library's range (an O_CLOEXEC copy there, fd closed), or fd itself if
 * there is no room; sl_sys_dup_high(fd): an O_CLOEXEC copy there, fd
 * kept, or -1; sl_sys_dup_above(fd): the same, the range chosen above
 * fd as sl_sys_fd_high() chooses it (-1 if there is no room above fd).
 * errno is left alone.
 */
int sl_sys_fd_high(int fd);
int sl_sys_dup_high(int fd);
int sl_sys_dup_above(int fd);
/* A CLOCK_MONOTONIC timerfd(2), non-blocking unless asked, O_CLOEXEC;
 * and setting it to ring once, ns from now (0: disarmed). */
int sl_sys_timerfd_create(bool blocking);
int sl_sys_timerfd_set_ns(int fd, uint64_t ns);
/* poll(2), timeout in milliseconds, negative: no timeout. */
int sl_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms);
int sl_sys_socket(int domain, int type, int protocol);
int sl_sys_socketpair(int domain, int type, int protocol, int sv[2]);
int sl_sys_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int sl_sys_shutdown(int fd, int how);
int sl_sys_bind(int fd, const struct sockaddr *a, socklen_t len);
int sl_sys_connect(int fd, const struct sockaddr *a, socklen_t len);
int sl_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
ssize_t sl_sys_sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *a,
		      socklen_t alen);
/* Take every datagram queued on a non-blocking socket: one recvmmsg(2)
 * for up to 16 (a bell's one byte each), where a read(2) a datagram needs
 * one more to see the queue empty. */
void sl_sys_drain_dgrams(int fd);
int sl_sys_epoll_create1(int flags);
int sl_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/* sigaction(2) through libc's own entry point (it supplies the restorer). */
int sl_sys_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/*
 * Sandboxes (issue 18).  A process that installed a seccomp filter may be
 * killed for a system call its own socket calls would never make on the
 * kernel stack; the preload sets sl_sys_sandboxed when it sees one go in
 * (prctl(PR_SET_SECCOMP), seccomp(2) through syscall(3), or "Seccomp: 2"
 * in /proc/self/status at start), and from then on the library makes only
 * calls that common filters allow (OpenSSH's pre-authentication one is the
 * yardstick: futex, clock_gettime, poll, read, write, close, getpid).
 */
extern bool sl_sys_sandboxed;
/* How many threads of the machine are runnable now, the caller among them
 * (the kernel's nr_running(): /proc/loadavg's fourth field, "R/T"), or
 * -1 (none in a sandbox, or no /proc).  One pread() on a kept fd. */
int sl_sys_runnable(void);
/* Its kept /proc/loadavg fd (-1 none yet), and forgetting it when its
 * number is being taken (a dup2() onto it): the next look opens another. */
int sl_sys_runnable_fd(void);
void sl_sys_runnable_lost(void);
/* Let another thread run: sched_yield(2), or in a sandbox a futex wait of
 * a few tens of microseconds on a word nobody wakes. */
void sl_sys_yield(void);
/* The CPU this thread runs on now (sched_getcpu(3): the rseq area or the
 * vDSO, no system call), -1 if unknown. */
int sl_sys_cpu(void);

#endif /* SLUICE_OS_H */
