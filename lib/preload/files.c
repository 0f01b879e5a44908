// SPDX-License-Identifier: BSD-2-Clause
/*
 * File calls on a Sluice socket, answered as Linux answers them on a
 * socket (issue 24, item 7): a socket has no position (lseek, pread,
 * pwrite: ESPIPE), fstat says socket, splice moves the socket's bytes
 * to or from a pipe, and tee, vmsplice and copy_file_range refuse it.
 * Without this the calls would reach the placeholder's FIFO (fdtable.c),
 * which refuses them or moves nothing, but with a FIFO's answers.
 *
 * The figures each answer is checked against are printed by
 * tests/preload/conform.c, run on the kernel and under `sluice run`.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload.h"

#define PL_SPLICE_CHUNK	65536

/* ---- no position ---- */

/* Linux's lseek(): a whence above SEEK_MAX is EINVAL before the file is
 * asked (a socket's no_llseek(): ESPIPE). */
static long no_seek(unsigned int whence)
{
	return pl_ret(whence > SEEK_HOLE ? -EINVAL : -ESPIPE);
}

/* pread/pwrite and the v forms: a negative offset is EINVAL
 * (ksys_pread64(), do_preadv()) before the file's FMODE_PREAD: ESPIPE;
 * the buffer is never looked at. */
static long no_pos(long long off)
{
	return pl_ret(off < 0 ? -EINVAL : -ESPIPE);
}

EXPORT off_t lseek(int fd, off_t off, int whence)
{
	if (pl_is_sluice(fd))
		return (off_t)no_seek((unsigned int)whence);
	return REAL(lseek)(fd, off, whence);
}

EXPORT off64_t lseek64(int fd, off64_t off, int whence)
{
	if (pl_is_sluice(fd))
		return (off64_t)no_seek((unsigned int)whence);
	return REAL(lseek64)(fd, off, whence);
}

EXPORT ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(pread)(fd, buf, len, off);
}

EXPORT ssize_t pread64(int fd, void *buf, size_t len, off64_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(pread64)(fd, buf, len, off);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(pwrite)(fd, buf, len, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t len, off64_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(pwrite64)(fd, buf, len, off);
}

EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(preadv)(fd, iov, n, off);
}

EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off64_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(preadv64)(fd, iov, n, off);
}

EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(pwritev)(fd, iov, n, off);
}

EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off)
{
	if (pl_is_sluice(fd))
		return no_pos(off);
	return REAL(pwritev64)(fd, iov, n, off);
}

/*
 * Advice, space and whole-file locks: a socket is an inode of sockfs,
 * and Linux answers these on it as on any such inode, where the
 * placeholder's FIFO answers as a FIFO opened for reading (ESPIPE,
 * EBADF) and shares one lock among a shard's sockets.
 *
 * posix_fadvise(): generic_fadvise() on a mapping with no backing
 * device: a negative length or an unknown advice EINVAL, else 0.
 */
EXPORT int posix_fadvise(int fd, off_t off, off_t len, int advice)
{
	if (!pl_is_sluice(fd))
		return REAL(posix_fadvise)(fd, off, len, advice);
	return len < 0 || advice < POSIX_FADV_NORMAL || advice > POSIX_FADV_NOREUSE ? EINVAL : 0;
}

EXPORT int posix_fadvise64(int fd, off_t off, off_t len, int advice)
	__attribute__((alias("posix_fadvise")));

/* vfs_fallocate(): the range and the mode are checked first (the kernel
 * asked on the placeholder: EINVAL, EOPNOTSUPP), then FMODE_WRITE (which
 * the placeholder lacks, EBADF, and a socket has) and the inode's type:
 * a socket is neither a file nor a block device, ENODEV. */
EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
	int saved = errno;

	if (!pl_is_sluice(fd))
		return REAL(fallocate)(fd, mode, off, len);
	if (off < 0 || len <= 0)
		return (int)pl_ret(-EINVAL);
	if (!REAL(fallocate)(fd, mode, off, len))
		return (int)pl_ret(-ENODEV);	/* not reached: no FMODE_WRITE */
	if (errno != EBADF && errno != ENODEV && errno != ESPIPE)
		return -1;
	errno = saved;
	return (int)pl_ret(-ENODEV);
}

EXPORT int fallocate64(int fd, int mode, off_t off, off_t len) __attribute__((alias("fallocate")));

/* flock(): a socket's lock is its own inode's, and only its own open
 * description (shared by dup, fork and SCM_RIGHTS, never opened again)
 * holds it, so it never meets another: every lock is granted at once.
 * The request is checked as flock_translate_cmd() checks it (LOCK_MAND
 * ignored, as Linux does now). */
EXPORT int flock(int fd, int op)
{
	int cmd = op & ~LOCK_NB;

	if (!pl_is_sluice(fd))
		return REAL(flock)(fd, op);
	if (op & LOCK_MAND)
		return 0;
	if (cmd != LOCK_SH && cmd != LOCK_EX && cmd != LOCK_UN)
		return (int)pl_ret(-EINVAL);
	return 0;
}

/*
 * preadv2/pwritev2 at offset -1 are readv/writev (Linux: the file's own
 * position, which a socket ignores); RWF_NOWAIT is MSG_DONTWAIT; the
 * other flags Linux knows do nothing to a socket; an unknown one is
 * EOPNOTSUPP.
 */
#define PL_RWF_KNOWN	(RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND)

static ssize_t rw2(int fd, const struct iovec *iov, int n, off64_t off, int flags, bool out)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)(n > 0 ? n : 0) };
	int mf = flags & RWF_NOWAIT ? MSG_DONTWAIT : 0;

	if (off != -1)
		return no_pos(off);
	if (flags & ~PL_RWF_KNOWN)
		return pl_ret(-EOPNOTSUPP);
	if (n < 0 || n > IOV_MAX)
		return pl_ret(-EINVAL);
	return out ? sendmsg(fd, &m, mf | MSG_NOSIGNAL) : recvmsg(fd, &m, mf);
}

EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
	if (pl_is_sluice(fd))
		return rw2(fd, iov, n, off, flags, false);
	return REAL(preadv2)(fd, iov, n, off, flags);
}

EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off64_t off, int flags)
{
	if (pl_is_sluice(fd))
		return rw2(fd, iov, n, off, flags, false);
	return REAL(preadv64v2)(fd, iov, n, off, flags);
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
	if (pl_is_sluice(fd))
		return rw2(fd, iov, n, off, flags, true);
	return REAL(pwritev2)(fd, iov, n, off, flags);
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off64_t off, int flags)
{
	if (pl_is_sluice(fd))
		return rw2(fd, iov, n, off, flags, true);
	return REAL(pwritev64v2)(fd, iov, n, off, flags);
}

/* ---- fstat: a socket ---- */

/* The kernel's socket filesystem device, as a kernel socket shows it. */
static dev_t sockfs_dev(void)
{
	static dev_t dev;
	struct stat st;
	int s;

	if (SL_READ_ONCE(dev))
		return dev;
	s = REAL(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return 0;
	if (!REAL(fstat)(s, &st))
		SL_WRITE_ONCE(dev, st.st_dev);
	REAL(close)(s);
	return dev;
}

static int sock_stat(int fd, struct stat *ust)
{
	struct pl_sock *ps = pl_get(fd);
	int saved = errno;
	struct stat kst, *st = &kst;

	if (!ps)
		return -EBADF;
	memset(st, 0, sizeof(*st));
	st->st_dev = sockfs_dev();
	/* Apart from the kernel's socket inodes (small numbers), one per
	 * socket: a slot reused gets another number. */
	st->st_ino = (ino_t)1 << 40 | (ino_t)ps->gen << 20 | ps->sd;
	st->st_mode = S_IFSOCK | 0777;
	st->st_nlink = 1;
	st->st_uid = geteuid();
	st->st_gid = getegid();
	st->st_blksize = 4096;
	pl_put(ps);
	errno = saved;
	/* Written as the kernel's cp_new_stat() writes it: EFAULT. */
	return pl_copy_out(ust, st, sizeof(*st));
}

EXPORT int fstat(int fd, struct stat *st)
{
	if (pl_is_sluice(fd))
		return (int)pl_ret(sock_stat(fd, st));
	return REAL(fstat)(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	if (pl_is_sluice(fd))
		return (int)pl_ret(sock_stat(fd, (struct stat *)st));
	return REAL(fstat64)(fd, st);
}

/* fstatat(fd, "", st, AT_EMPTY_PATH) is fstat(fd); Linux 6.11 takes NULL
 * for "" (a helper: glibc declares the path nonnull). */
static bool this_fd(const char *path, int flags)
{
	return (flags & AT_EMPTY_PATH) && (!path || !path[0]);
}

EXPORT int fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	if (this_fd(path, flags) && pl_is_sluice(dfd))
		return (int)pl_ret(sock_stat(dfd, st));
	return REAL(fstatat)(dfd, path, st, flags);
}

EXPORT int fstatat64(int dfd, const char *path, struct stat64 *st, int flags)
{
	if (this_fd(path, flags) && pl_is_sluice(dfd))
		return (int)pl_ret(sock_stat(dfd, (struct stat *)st));
	return REAL(fstatat64)(dfd, path, st, flags);
}

/* statx(fd, "", AT_EMPTY_PATH, ...) of a socket: what fstat says, in
 * statx's fields (the basic ones, as the kernel fills a socket's). */
EXPORT int statx(int dfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	struct stat st;
	int ret;

	if (!this_fd(path, flags) || !pl_is_sluice(dfd))
		return REAL(statx)(dfd, path, flags, mask, stx);
	ret = sock_stat(dfd, &st);
	if (ret)
		return (int)pl_ret(ret);
	memset(stx, 0, sizeof(*stx));
	stx->stx_mask = STATX_BASIC_STATS;
	stx->stx_blksize = (uint32_t)st.st_blksize;
	stx->stx_nlink = (uint32_t)st.st_nlink;
	stx->stx_uid = st.st_uid;
	stx->stx_gid = st.st_gid;
	stx->stx_mode = (uint16_t)st.st_mode;
	stx->stx_ino = st.st_ino;
	stx->stx_dev_major = major(st.st_dev);
	stx->stx_dev_minor = minor(st.st_dev);
	return 0;
}

/* Programs built against glibc before 2.33 call these. */
int __fxstat(int ver, int fd, struct stat *st);
int __fxstat64(int ver, int fd, struct stat64 *st);

EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	if (pl_is_sluice(fd))
		return (int)pl_ret(sock_stat(fd, st));
	(void)ver;	/* _STAT_VER: the kernel's layout, which fstat fills */
	return REAL(fstat)(fd, st);
}

EXPORT int __fxstat64(int ver, int fd, struct stat64 *st)
{
	if (pl_is_sluice(fd))
		return (int)pl_ret(sock_stat(fd, (struct stat *)st));
	(void)ver;
	return REAL(fstat64)(fd, st);
}

/* ---- splice and its kin ---- */

static bool is_pipe(int fd)
{
	struct stat st;

	return !REAL(fstat)(fd, &st) && S_ISFIFO(st.st_mode);
}

static bool sock_nonblock(int fd)
{
	int fl = REAL(fcntl)(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Wait (bounded by nothing, as splice) until the pipe can take bytes or
 * give them; -EAGAIN if the caller must not wait. */
static int pipe_wait(int p, short ev, bool nonblock)
{
	struct pollfd pfd = { .fd = p, .events = ev };

	if (nonblock)
		return -EAGAIN;
	if (REAL(poll)(&pfd, 1, -1) < 0)
		return -errno;
	return 0;
}

/* Bytes the pipe can take now. */
static ssize_t pipe_room(int p)
{
	int size = REAL(fcntl)(p, F_GETPIPE_SZ), queued = 0;

	if (size < 0 || REAL(ioctl)(p, FIONREAD, &queued))
		return -errno;
	return size > queued ? size - queued : 0;
}

static __thread char *splice_buf;

static char *chunk_buf(void)
{
	if (!splice_buf)
		splice_buf = malloc(PL_SPLICE_CHUNK);
	return splice_buf;
}

/*
 * Socket to pipe.  TCP: the bytes are peeked, written to the pipe (which
 * has room for them), then taken off the socket, so nothing is lost if
 * the pipe side fails.  UDP: one datagram, cut to what fits, as the
 * kernel's splice reads one.
 */
static ssize_t sock_to_pipe(int s, int p, size_t len, unsigned int flags)
{
	bool nonblock = (flags & SPLICE_F_NONBLOCK) || sock_nonblock(s);
	int type = 0;
	socklen_t tl = sizeof(type);
	ssize_t room, n, w;
	char *buf = chunk_buf();

	if (!buf)
		return -ENOMEM;
	getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &tl);
	while ((room = pipe_room(p)) == 0) {
		int ret = pipe_wait(p, POLLOUT, nonblock);

		if (ret)
			return ret;
	}
	if (room < 0)
		return room;
	if ((size_t)room < len)
		len = (size_t)room;
	if (len > PL_SPLICE_CHUNK)
		len = PL_SPLICE_CHUNK;
	n = recv(s, buf, len, (type == SOCK_STREAM ? MSG_PEEK : 0) |
		 (sock_nonblock(s) ? MSG_DONTWAIT : 0));
	if (n <= 0)
		return n < 0 ? -errno : 0;
	w = REAL(write)(p, buf, (size_t)n);
	if (w < 0)
		return -errno;
	if (type == SOCK_STREAM && w > 0)
		recv(s, buf, (size_t)w, MSG_TRUNC | MSG_DONTWAIT);
	return w;
}

/*
 * Pipe to socket.  Only what the socket takes is read from the pipe: a
 * non-blocking socket is offered no more than its free send space, so a
 * short send cannot strand bytes taken off the pipe.
 */
static ssize_t pipe_to_sock(int p, int s, size_t len, unsigned int flags)
{
	bool nonblock = sock_nonblock(s);
	int avail = 0, sndbuf = 0, outq = 0;
	socklen_t sl = sizeof(sndbuf);
	char *buf = chunk_buf();
	ssize_t n, w, done = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct pollfd pfd = { .fd = p, .events = POLLIN };

		if (REAL(ioctl)(p, FIONREAD, &avail))
			return -errno;
		if (avail > 0)
			break;
		/* Empty: no writer left is the end (0), else wait. */
		if (REAL(poll)(&pfd, 1, 0) > 0 && (pfd.revents & POLLHUP))
			return 0;
		n = pipe_wait(p, POLLIN, (flags & SPLICE_F_NONBLOCK) != 0);
		if (n)
			return n;
	}
	if ((size_t)avail < len)
		len = (size_t)avail;
	if (len > PL_SPLICE_CHUNK)
		len = PL_SPLICE_CHUNK;
	if (nonblock && !getsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl) &&
	    !ioctl(s, SIOCOUTQ, &outq)) {
		if (outq >= sndbuf)
			return -EAGAIN;
		if ((size_t)(sndbuf - outq) < len)
			len = (size_t)(sndbuf - outq);
	}
	n = REAL(read)(p, buf, len);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	while (done < n) {
		w = send(s, buf + done, (size_t)(n - done),
			 flags & SPLICE_F_MORE ? MSG_MORE : 0);
		if (w < 0) {
			if (done)
				break;
			return -errno;
		}
		done += w;
	}
	if (done < n)
		pl_debug("splice: %zd bytes read from the pipe could not be sent", n - done);
	return done;
}

EXPORT ssize_t splice(int in, off64_t *in_off, int out, off64_t *out_off, size_t len,
		      unsigned int flags)
{
	bool sin = pl_is_sluice(in), sout = pl_is_sluice(out);
	int saved = errno;
	ssize_t ret;

	if (!sin && !sout)
		return REAL(splice)(in, in_off, out, out_off, len, flags);
	/* Linux (do_splice()): an offset for a file that cannot pread is
	 * EINVAL; one end must be a pipe. */
	if ((sin && in_off) || (sout && out_off))
		return pl_ret(-EINVAL);
	if (sin && sout)
		return pl_ret(-EINVAL);
	if (!is_pipe(sin ? out : in))
		return pl_ret(-EINVAL);
	if (!len)
		return 0;
	ret = sin ? sock_to_pipe(in, out, len, flags) : pipe_to_sock(in, out, len, flags);
	if (ret >= 0)
		errno = saved;
	return pl_ret(ret);
}

EXPORT ssize_t tee(int in, int out, size_t len, unsigned int flags)
{
	if (pl_is_sluice(in) || pl_is_sluice(out))
		return pl_ret(-EINVAL);	/* both ends must be pipes */
	return REAL(tee)(in, out, len, flags);
}

EXPORT ssize_t vmsplice(int fd, const struct iovec *iov, size_t n, unsigned int flags)
{
	if (pl_is_sluice(fd))
		return pl_ret(-EBADF);	/* not a pipe */
	return REAL(vmsplice)(fd, iov, n, flags);
}

EXPORT ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off, size_t len,
			       unsigned int flags)
{
	if (pl_is_sluice(in) || pl_is_sluice(out))
		return pl_ret(-EINVAL);	/* regular files only */
	return REAL(copy_file_range)(in, in_off, out, out_off, len, flags);
}

/* sendfile from a Sluice socket (fd.c): what splice does, into a pipe. */
ssize_t pl_sendfile_from_sock(int out, int in, off64_t *off, size_t count)
{
	if (off)
		return -ESPIPE;
	if (pl_is_sluice(out) || !is_pipe(out))
		return -EINVAL;
	return sock_to_pipe(in, out, count, 0);
}
