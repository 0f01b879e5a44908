// SPDX-License-Identifier: BSD-2-Clause
/*
 * Descriptors: close, close_range, dup, dup2, dup3, fcntl, ioctl, and
 * sendfile to a Sluice socket.
 *
 * A Sluice socket's fd is a placeholder file (fdtable.c), so the kernel
 * does the descriptor work (numbers, FD_CLOEXEC, the O_NONBLOCK of the
 * open file description) and this layer keeps its table in step.  close()
 * closes the Sluice socket when no fd anywhere holds it any more.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/sockios.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "preload.h"

#ifndef FIGETBSZ
#define FIGETBSZ	_IO(0x00, 2)	/* linux/fs.h */
#endif

#define PL_KERNEL_O_LARGEFILE	0100000	/* asm-generic/fcntl.h */

EXPORT int close(int fd)
{
	struct pl_sock *ps;
	int ret;

	if (!pl_is_sluice(fd) && !pl_epoll_is_emulated(fd)) {
		if (__builtin_expect(pl_fd_is_probe(fd), 0)) {
			errno = EBADF;	/* not the program's to close */
			return -1;
		}
		return REAL(close)(fd);
	}
	if (pl_vfork_child())
		return REAL(close)(fd);
	if (pl_epoll_is_emulated(fd))
		pl_epoll_close(fd);
	ps = pl_fd_forget(fd);
	if (!ps)
		return REAL(close)(fd);
	if (ps->kfd && SL_READ_ONCE(ps->epolled) && pl_kfd_parkable(ps))
		pl_epoll_kfd_last(fd);
	pl_epoll_forget_fd(fd);
	pl_fd_cache_keep(fd, ps);
	ret = ps->kfd ? pl_kfd_close(fd, ps) : REAL(close)(fd);
	pl_sock_release(ps);
	return ret;
}

EXPORT int dup(int fd)
{
	struct pl_sock *ps = pl_get_call(fd);
	int nfd;

	if (!ps)
		return REAL(dup)(fd);
	/* A close() of fd meanwhile waits for the new fd to be counted
	 * (a private socket's last fd closes it: fdtable.c). */
	pl_call_begin(ps);
	nfd = REAL(dup)(fd);
	if (nfd >= 0)
		pl_fd_dup(fd, nfd, ps);
	pl_call_end(ps);
	pl_put(ps);
	return nfd;
}

/* dup2/dup3/F_DUPFD: newfd's old socket (if any) is closed by the call. */
static int dup_onto(int fd, int newfd, int flags, bool three)
{
	struct pl_sock *ps, *old;
	int ret;

	if ((fd == newfd && !three) || pl_vfork_child())
		return three ? REAL(dup3)(fd, newfd, flags) : REAL(dup2)(fd, newfd);
	if (pl_fd_is_probe(newfd))
		pl_fd_probe_lost(newfd);
	ps = pl_get_call(fd);
	old = fd != newfd ? pl_fd_forget(newfd) : NULL;
	if (old)
		pl_epoll_forget_fd(newfd);
	if (ps)
		pl_call_begin(ps);	/* as dup() */
	ret = three ? REAL(dup3)(fd, newfd, flags) : REAL(dup2)(fd, newfd);
	if (ret >= 0 && ps)
		pl_fd_dup(fd, ret, ps);
	if (ps)
		pl_call_end(ps);
	pl_sock_release(old);
	pl_put(ps);
	return ret;
}

EXPORT int dup2(int fd, int newfd)
{
	return dup_onto(fd, newfd, 0, false);
}

EXPORT int dup3(int fd, int newfd, int flags)
{
	return dup_onto(fd, newfd, flags, true);
}

/*
 * Record locks (F_SETLK, F_SETLKW, F_GETLK and the OFD forms) on a
 * socket: Linux locks the socket's own inode, which only the holders of
 * that one socket can reach, so a lock never meets another socket's.
 * On the placeholder they would meet the shard's other sockets' and the
 * library's own liveness locks (fdtable.c: a program's read lock there
 * could keep a dead socket looking held), and a write lock is EBADF (a
 * FIFO opened for reading).  So they go to a file of the socket's own
 * (pl_fd_lock_file(): "l" and its index in the placeholders' directory,
 * empty, opened by each process at its first lock and kept in
 * ps->lock_fd, inherited by a child forked after), after the struct is
 * read (EFAULT) and checked as flock_to_posix_lock() checks it: the
 * kernel then refuses what Linux refuses, a process lock of another
 * process that overlaps (EAGAIN, F_GETLK gives its pid) and an OFD lock
 * and a process lock that overlap, in one process or two.  Any close of
 * the socket ends the process's process locks (a whole-range F_UNLCK,
 * pl_sock_locks_close()), its last the file.  Where this is not Linux:
 * OFD locks are the lock file's description's, which a child forked
 * after the first lock shares, but two processes that first locked
 * after the fork each have their own (they conflict, where on Linux the
 * socket's one description holds both), as do an exec'd image and a
 * process that got the socket with SCM_RIGHTS; the file unopenable
 * (another user's stack), every lock is granted, F_GETLK F_UNLCK.
 */
void pl_sock_locks_close(struct pl_sock *ps, bool last)
{
	struct flock all = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	int lk = SL_READ_ONCE(ps->lock_fd) - 1;

	if (lk < 0)
		return;
	if (!last) {
		REAL(fcntl)(lk, F_SETLK, &all);
		return;
	}
	SL_WRITE_ONCE(ps->lock_fd, 0);
	pl_libc.close(lk);
}

static int sock_lock_file(struct pl_sock *ps)
{
	int lk = SL_READ_ONCE(ps->lock_fd) - 1, none = 0;

	if (lk >= 0)
		return lk;
	lk = pl_fd_lock_file(ps->sd);
	if (lk < 0)
		return -1;
	if (!sl_cmpxchg(&ps->lock_fd, &none, lk + 1)) {
		pl_libc.close(lk);	/* another thread opened it first */
		lk = none - 1;
	}
	return lk;
}

static int sock_lock(struct pl_sock *ps, int cmd, void *arg)
{
	bool ofd = cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
	bool get = cmd == F_GETLK || cmd == F_OFD_GETLK;
	struct flock fl;
	int lk;

	if (pl_copy_in(&fl, arg, sizeof(fl)))
		return -EFAULT;
	/* A socket's position and size are 0: every whence starts at 0. */
	if (fl.l_whence != SEEK_SET && fl.l_whence != SEEK_CUR && fl.l_whence != SEEK_END)
		return -EINVAL;
	if (fl.l_start < 0 || (fl.l_len < 0 && fl.l_start + fl.l_len < 0))
		return -EINVAL;
	if (fl.l_len > 0 && fl.l_len - 1 > LLONG_MAX - fl.l_start)
		return -EOVERFLOW;
	if (fl.l_type != F_RDLCK && fl.l_type != F_WRLCK && (get || fl.l_type != F_UNLCK))
		return -EINVAL;
	if (ofd && fl.l_pid)
		return -EINVAL;
	lk = sock_lock_file(ps);
	if (lk >= 0) {
		if (REAL(fcntl)(lk, cmd, &fl))
			return -errno;
		return get && pl_copy_out(arg, &fl, sizeof(fl)) ? -EFAULT : 0;
	}
	if (!get)
		return 0;
	fl.l_type = F_UNLCK;
	return pl_copy_out(arg, &fl, sizeof(fl)) ? -EFAULT : 0;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	struct pl_sock *ps;
	bool want_async;
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);	/* int or pointer: the same register */
	va_end(ap);
	ps = pl_get_call(fd);
	if (!ps)
		return REAL(fcntl)(fd, cmd, arg);
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
		pl_call_begin(ps);	/* as dup() */
		ret = REAL(fcntl)(fd, cmd, arg);
		if (ret >= 0)
			pl_fd_dup(fd, ret, ps);
		pl_call_end(ps);
		pl_put(ps);
		return ret;
	}
	if (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK || cmd == F_OFD_SETLK ||
	    cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK) {
		ret = sock_lock(ps, cmd, arg);
		pl_put(ps);
		return ret ? (int)pl_ret(ret) : 0;
	}
	/* A pipe's and a memfd's requests: the placeholder is a FIFO and
	 * would answer them (F_GETPIPE_SZ 65536); on a socket Linux's
	 * pipe_fcntl() is EBADF, memfd_fcntl() EINVAL. */
	if (cmd == F_GETPIPE_SZ || cmd == F_SETPIPE_SZ || cmd == F_ADD_SEALS ||
	    cmd == F_GET_SEALS) {
		pl_put(ps);
		return (int)pl_ret(cmd == F_GETPIPE_SZ || cmd == F_SETPIPE_SZ ? -EBADF : -EINVAL);
	}
	/* What the description would keep for the next socket besides
	 * O_NONBLOCK (an owner, a signal, a lease, O_ASYNC, O_APPEND...):
	 * not kept then (fdtable.c, "socket cache"). */
	if (!(cmd == F_GETFD || cmd == F_SETFD || cmd == F_GETFL || cmd == F_GETOWN ||
	      cmd == F_GETOWN_EX || cmd == F_GETSIG || cmd == F_GETLEASE ||
	      (cmd == F_SETFL && !((long)arg & (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME)))))
		SL_WRITE_ONCE(ps->nocache, true);
	/* O_ASYNC never reaches the placeholder: a FIFO keeps it and the
	 * kernel would signal the owner at every close of another
	 * description of the shard's FIFO (pipe_release()); the socket's
	 * own signals come from its async bell (async.c). */
	want_async = cmd == F_SETFL && ((long)arg & O_ASYNC);
	if (cmd == F_SETFL)
		arg = (void *)((long)arg & ~O_ASYNC);
	ret = REAL(fcntl)(fd, cmd, arg);
	if (ret >= 0 && cmd == F_SETFL) {
		SL_WRITE_ONCE(ps->nonblock, ((long)arg & O_NONBLOCK) != 0);
		/* O_ASYNC: the signal comes from the socket's async bell
		 * (async.c); F_GETFL reads the flag from it. */
		if (want_async ? !SL_READ_ONCE(ps->async_fd) :
				 SL_READ_ONCE(ps->async_fd) != 0) {
			int err = pl_async_setfl(fd, ps, want_async);

			if (err) {
				/* Not armed: the flag does not stay. */
				errno = -err;
				ret = -1;
			}
		}
	} else if (ret >= 0 && (cmd == F_SETOWN || cmd == F_SETOWN_EX || cmd == F_SETSIG)) {
		/* The placeholder keeps them for F_GETOWN, F_GETOWN_EX and
		 * F_GETSIG, and the kernel checked them; the bell signals. */
		if (SL_READ_ONCE(ps->async_fd))
			pl_async_owner(fd, ps);
		/* ... and SIGURG goes to the owner, O_ASYNC or not. */
		if (cmd != F_SETSIG && ps->type == SOCK_STREAM)
			pl_urg_owner(fd, ps);
	} else if (ret >= 0 && cmd == F_GETFL)
		/* What a socket says: read-write (the placeholder's FIFO
		 * is read-only, fdtable.c), no O_LARGEFILE (the kernel's
		 * bit; glibc's O_LARGEFILE is 0 on 64-bit), and no
		 * O_DIRECTORY (an earlier library's placeholder). */
		ret = (ret & ~(O_ACCMODE | PL_KERNEL_O_LARGEFILE | O_DIRECTORY)) | O_RDWR |
		      /* O_ASYNC as the socket's async bell says. */
		      (SL_READ_ONCE(ps->async_fd) ? O_ASYNC : 0);
	pl_put(ps);
	return ret;
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

/* Bytes the next read would return: a stream's queue, a datagram's size. */
static int inq(struct pl_sock *ps)
{
	struct sl_stack *s = pl_sl();
	struct sl_sock *so;
	long n;

	if (ps->type == SOCK_DGRAM) {
		char none;

		n = sluice_recvfrom(pl_stack(), (int)ps->sd, &none, 0,
				    MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT, NULL);
		return n == -EAGAIN ? 0 : (int)n;
	}
	if (sl_lock(s))
		return -EPIPE;
	so = sl_sock(s, ps->sd);
	n = so->state == SL_TCP_LISTEN ? -EINVAL : (long)sl_tcp_inq(so);
	sl_unlock(s);
	return (int)n;
}

/* SIOCATMARK: 1 when the next byte to read is the urgent one (Linux's
 * tcp_ioctl(), which asks no state: a listener has none, 0). */
static int atmark(struct pl_sock *ps)
{
	struct sl_stack *s = pl_sl();
	struct sl_sock *so;
	int n;

	if (sl_lock(s))
		return -EPIPE;
	so = sl_sock(s, ps->sd);
	n = so->state == SL_TCP_LISTEN ? 0 : sl_tcp_atmark(so);
	sl_unlock(s);
	return n;
}

/*
 * SIOCOUTQ: bytes not yet acknowledged; SIOCOUTQNSD: bytes not yet sent
 * (Linux's tcp_ioctl(): write_seq - snd_una / - snd_nxt).  A datagram
 * socket's leave at once: 0.
 */
static int outq(struct pl_sock *ps, bool unsent)
{
	struct sl_stack *s = pl_sl();
	struct sl_sock *so;
	long n;

	if (ps->type == SOCK_DGRAM)
		return 0;
	if (sl_lock(s))
		return -EPIPE;
	so = sl_sock(s, ps->sd);
	if (so->state == SL_TCP_LISTEN)
		n = -EINVAL;
	else if (so->state < SL_TCP_ESTABLISHED)
		n = 0;
	else
		n = (long)(uint32_t)(so->tcp.snd_end - (unsent ? so->tcp.snd_max : so->tcp.snd_una));
	sl_unlock(s);
	return (int)n;
}

/*
 * The stack's clock (µs) on the wall clock, for SO_TIMESTAMP and
 * SIOCGSTAMP: the offset between the two taken once a process, so a
 * stamp read twice reads the same, as Linux keeps it.
 */
static pthread_once_t stamp_once = PTHREAD_ONCE_INIT;
static int64_t stamp_off_us;

static void stamp_offset(void)
{
	struct sl_stack *s = pl_sl();
	struct timespec real;

	clock_gettime(CLOCK_REALTIME, &real);
	stamp_off_us = (int64_t)real.tv_sec * 1000000 + real.tv_nsec / 1000 -
		       (int64_t)s->clock(s->clock_arg);
}

int64_t pl_stamp_real_us(uint64_t stamp_us)
{
	pthread_once(&stamp_once, stamp_offset);
	return (int64_t)stamp_us + stamp_off_us;
}

/*
 * SIOCGSTAMP / SIOCGSTAMPNS (0x8906 / 0x8907, the 64-bit time forms):
 * when the last datagram read without SO_TIMESTAMP arrived; ENOENT if
 * none was (a stream's never is: Linux sock_gettstamp()).
 */
static int stamp(struct pl_sock *ps, unsigned long req, void *arg)
{
	struct sl_stack *s = pl_sl();
	uint64_t at = 0;
	int64_t us;

	if (ps->type == SOCK_DGRAM)
		at = SL_READ_ONCE(sl_sock(s, ps->sd)->udp.stamp_us);
	us = at ? pl_stamp_real_us(at) : 0;
	/* Datagrams read from its kernel twin (twin.c) have their stamp
	 * there: the later of the two is the last read's. */
	if (ps->type == SOCK_DGRAM && SL_READ_ONCE(ps->twin)) {
		struct timeval kt;

		pl_call_begin(ps);
		if (SL_READ_ONCE(ps->twin) &&
		    !REAL(ioctl)(SL_READ_ONCE(ps->twin) - 1, 0x8906, &kt) &&
		    (int64_t)kt.tv_sec * 1000000 + kt.tv_usec > us)
			us = (int64_t)kt.tv_sec * 1000000 + kt.tv_usec;
		pl_call_end(ps);
	}
	if (!us)
		return -ENOENT;
	/* Written by a checked copy: EFAULT where put_user() fails (a
	 * read-only page too). */
	if (req == 0x8906) {
		struct timeval tv = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };

		return pl_copy_out(arg, &tv, sizeof(tv));
	} else {
		struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000 };

		return pl_copy_out(arg, &ts, sizeof(ts));
	}
}

/*
 * Interface and routing requests (SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFADDR,
 * SIOCETHTOOL, SIOCADDRT, SIOCGARP, ...: the sockios range): Linux's
 * sock_ioctl() hands them to dev_ioctl() whatever the socket, so programs
 * make them on whatever socket they hold.  Not the few that are about the
 * socket itself (owner, time stamps, urgent mark, queues, namespace).
 */
static bool dev_request(unsigned long req)
{
	if (req < 0x8900 || req > 0x89ff)
		return false;
	switch (req) {
	case 0x8901:	/* FIOSETOWN */
	case 0x8902:	/* SIOCSPGRP */
	case 0x8903:	/* FIOGETOWN */
	case 0x8904:	/* SIOCGPGRP */
	case 0x8905:	/* SIOCATMARK */
	case 0x8906:	/* SIOCGSTAMP_OLD */
	case 0x8907:	/* SIOCGSTAMPNS_OLD */
	case 0x894b:	/* SIOCOUTQNSD */
	case 0x894c:	/* SIOCGSKNS */
		return false;
	}
	return true;
}

/*
 * SIOCGSKNS: an fd of the socket's network namespace, which is the one
 * the process was in when it made the socket, as it is its kernel
 * sockets' (a stack socket is made in the caller's namespace).  Asked of
 * a kernel socket of ours, kept above the program's numbers so the fd
 * the kernel gives is the program's next, as on a socket of its own;
 * the kernel checks CAP_NET_ADMIN over the namespace (EPERM).
 */
static int netns_fd(void)
{
	int ks = sl_sys_fd_high(REAL(socket)(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)), ret;

	if (ks < 0)
		return -errno;
	ret = REAL(ioctl)(ks, 0x894c, NULL);
	if (ret < 0)
		ret = -errno;
	REAL(close)(ks);
	return ret;
}

/* A dev_request() on a kernel socket of our own, made for it (a kept one
 * could be closed under us by a program closing every fd). */
static int dev_ioctl(unsigned long req, void *arg)
{
	int ks = REAL(socket)(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (ks < 0)
		return -errno;
	ret = REAL(ioctl)(ks, req, arg) ? -errno : 0;
	REAL(close)(ks);
	return ret;
}

/* An int the caller passes by pointer, or gets back through one: EFAULT
 * for one it does not have (NULL, unmapped, PROT_NONE), as the kernel's
 * get_user()/put_user(), not a SIGSEGV in the library.  (A read-only
 * page passes the probe.) */
static bool bad_int(const void *arg)
{
	return pl_bad_buf(arg, sizeof(int)) || !pl_readable(arg, sizeof(int));
}

/* One written back (a read-only page too: put_user() fails there). */
static bool bad_out_int(void *arg)
{
	return pl_bad_buf(arg, sizeof(int)) || !pl_writable(arg, sizeof(int));
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	struct pl_sock *ps;
	va_list ap;
	void *arg;
	int ret, v, saved;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	ps = pl_get_call(fd);
	if (!ps)
		return REAL(ioctl)(fd, req, arg);
	saved = errno;
	if (req == FIONBIO) {
		if (bad_int(arg)) {
			ret = -EFAULT;
		} else {
			int fl = REAL(fcntl)(fd, F_GETFL);

			memcpy(&v, arg, sizeof(v));
			ret = fl < 0 ? -errno :
			      REAL(fcntl)(fd, F_SETFL, v ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) ?
			      -errno : 0;
			if (!ret)
				SL_WRITE_ONCE(ps->nonblock, v != 0);
		}
	} else if (req == FIONREAD || req == SIOCOUTQ || req == SIOCOUTQNSD) {
		/* As tcp_ioctl(): a listener's EINVAL before put_user(). */
		ret = req == FIONREAD ? inq(ps) : outq(ps, req == SIOCOUTQNSD);
		if (ret >= 0)
			ret = pl_copy_out(arg, &ret, sizeof(ret)) ? -EFAULT : 0;
	} else if (req == FIGETBSZ) {
		/* do_vfs_ioctl() on any file: its file system's block size
		 * (sockfs's, as anon_inodefs', is PAGE_SIZE). */
		v = (int)sysconf(_SC_PAGESIZE);
		ret = pl_copy_out(arg, &v, sizeof(v)) ? -EFAULT : 0;
	} else if (req == SIOCATMARK && ps->type == SOCK_STREAM) {
		ret = bad_out_int(arg) ? -EFAULT : atmark(ps);
		if (ret >= 0) {
			v = ret;
			memcpy(arg, &v, sizeof(v));
			ret = 0;
		}
	} else if (req == 0x8906 || req == 0x8907) {	/* SIOCGSTAMP, SIOCGSTAMPNS */
		ret = stamp(ps, req, arg);
	} else if (req == FIOCLEX || req == FIONCLEX) {
		/* The fd's close-on-exec flag: the kernel's, on any file
		 * (do_vfs_ioctl()); the placeholder's fd is the program's. */
		ret = REAL(ioctl)(fd, req, arg) ? -errno : 0;
	} else if (req == 0x8901 || req == 0x8902) {	/* FIOSETOWN, SIOCSPGRP */
		/* The description's owner, as F_SETOWN (Linux sock_ioctl():
		 * f_setown()); through fcntl() so the socket cache knows. */
		if (bad_int(arg)) {
			ret = -EFAULT;
		} else {
			memcpy(&v, arg, sizeof(v));
			ret = fcntl(fd, F_SETOWN, v) ? -errno : 0;
		}
	} else if (req == 0x8903 || req == 0x8904) {	/* FIOGETOWN, SIOCGPGRP */
		/* f_getown(): a process group as its negative id. */
		if (bad_out_int(arg)) {
			ret = -EFAULT;
		} else {
			v = REAL(fcntl)(fd, F_GETOWN);
			memcpy(arg, &v, sizeof(v));
			ret = 0;
		}
	} else if (req == FIOASYNC) {
		/* Linux ioctl_fioasync(): O_ASYNC of the description, as
		 * F_SETFL sets it (through fcntl(): the bell, async.c). */
		if (bad_int(arg)) {
			ret = -EFAULT;
		} else {
			int fl = REAL(fcntl)(fd, F_GETFL);

			memcpy(&v, arg, sizeof(v));
			ret = fl < 0 ? -errno :
			      fcntl(fd, F_SETFL, v ? fl | O_ASYNC : fl & ~O_ASYNC) ? -errno : 0;
		}
	} else if (req == 0x894c) {		/* SIOCGSKNS */
		ret = netns_fd();
	} else if (dev_request(req)) {
		/* The kernel answers these alike on any socket of the
		 * namespace: ask it on one of its own. */
		ret = dev_ioctl(req, arg);
	} else {
		ret = -ENOTTY;
	}
	pl_put(ps);
	/* A request that succeeds leaves errno as it was, also where the
	 * library asked the kernel something that failed on the way
	 * (SIOCGSTAMP's question to the twin, ENOENT). */
	if (ret >= 0)
		errno = saved;
	return (int)pl_ret(ret);
}

/*
 * close_range(2) without the library knowing would leave stale entries,
 * and would close the library's own descriptors under it (sshd closes
 * every fd above 5 when it re-executes itself): the number of one could
 * then be the program's next file, which the library would treat as its
 * own.  So the range is closed around them, as if they were not there.
 */
static int close_range_keeping(unsigned int first, unsigned int last, int flags)
{
	unsigned int lo = first;
	long ret = 0;

	if (pl_vfork_child())
		return (int)sl_syscall(SYS_close_range, first, last, flags);
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		for (unsigned int fd = first; fd <= last && fd < 65536; fd++)
			if (pl_is_sluice((int)fd) || pl_epoll_is_emulated((int)fd))
				close((int)fd);
	for (unsigned int fd = first; fd <= last && fd < 65536; fd++) {
		if (!pl_fd_is_own((int)fd))
			continue;
		if (fd > lo && sl_syscall(SYS_close_range, lo, fd - 1, flags))
			ret = -1;
		lo = fd + 1;
		if (!lo)
			return (int)ret;
	}
	if (lo <= last && lo >= first && sl_syscall(SYS_close_range, lo, last, flags))
		ret = -1;
	return (int)ret;
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	if (first > last)
		return (int)sl_syscall(SYS_close_range, first, last, flags);	/* EINVAL */
	return close_range_keeping(first, last, flags);
}

/* glibc's closefrom() calls close_range without our wrapper. */
EXPORT void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	close_range_keeping((unsigned int)lowfd, ~0U, 0);
}

/*
 * sendfile(2) to a Sluice socket: read the file and send what was read.
 * Like the kernel, a short send ends the call and the file offset moves
 * by what was sent.
 */
#define PL_SENDFILE_CHUNK	65536

static ssize_t pl_sendfile(int out, int in, off64_t *off, size_t count)
{
	static __thread char *buf;
	size_t done = 0;
	ssize_t n, w;
	off64_t pos = off ? *off : 0;

	/* Linux's do_splice_direct() reads only a file or a block device:
	 * from a socket is ESPIPE with an offset, else EINVAL, its bytes
	 * left queued (this loop sent them, and waited for ever on an
	 * empty socket). */
	if (pl_is_sluice(in))
		return off ? -ESPIPE : -EINVAL;
	if (!buf && !(buf = malloc(PL_SENDFILE_CHUNK)))
		return -ENOMEM;
	while (done < count) {
		size_t want = count - done < PL_SENDFILE_CHUNK ? count - done : PL_SENDFILE_CHUNK;

		n = off ? pread64(in, buf, want, pos) : REAL(read)(in, buf, want);
		if (n < 0) {
			if (!done)
				return -errno;
			break;
		}
		if (!n)
			break;
		w = send(out, buf, (size_t)n, 0);
		if (w < 0) {
			if (!off)	/* put back what was read but not sent */
				lseek64(in, -(off64_t)n, SEEK_CUR);
			if (!done)
				return -errno;
			break;
		}
		if (w < n && !off)
			lseek64(in, -(off64_t)(n - w), SEEK_CUR);
		done += (size_t)w;
		pos += w;
		if (w < n)
			break;
	}
	if (off)
		*off = pos;
	return (ssize_t)done;
}

/* The offset read first and written back last, as Linux's sendfile64()
 * does: EFAULT where it cannot be (checked copies). */
static ssize_t sendfile_off(int out, int in, off64_t *off, size_t count)
{
	off64_t o = 0;
	ssize_t ret;

	if (off && pl_copy_in(&o, off, sizeof(o)))
		return -EFAULT;
	ret = pl_is_sluice(out) ? pl_sendfile(out, in, off ? &o : NULL, count) :
				  pl_sendfile_from_sock(out, in, off ? &o : NULL, count);
	if (off && pl_copy_out(off, &o, sizeof(o)))
		return -EFAULT;
	return ret;
}

_Static_assert(sizeof(off_t) == sizeof(off64_t), "sendfile's offset is sendfile64's");

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	if (!pl_is_sluice(out) && !pl_is_sluice(in))
		return REAL(sendfile)(out, in, off, count);
	return pl_ret(sendfile_off(out, in, (off64_t *)off, count));
}

EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	if (!pl_is_sluice(out) && !pl_is_sluice(in))
		return REAL(sendfile64)(out, in, off, count);
	return pl_ret(sendfile_off(out, in, off, count));
}
