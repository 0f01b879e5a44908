// SPDX-License-Identifier: BSD-2-Clause
/*
 * Data: send, sendto, sendmsg, sendmmsg, recv, recvfrom, recvmsg,
 * recvmmsg, read, write, readv, writev on Sluice sockets, and the _FORTIFY_SOURCE variants
 * (__recv_chk, __recvfrom_chk, __read_chk).
 *
 * The native calls never block (every Sluice socket is non-blocking
 * underneath); a blocking caller waits here for readiness (pl_wait():
 * spin for SLUICE_SPIN_US, then sleep) and tries again, for at most
 * SO_RCVTIMEO / SO_SNDTIMEO.  As on Linux, a blocking stream send returns
 * only when everything is queued; MSG_WAITALL fills the whole buffer
 * unless the stream ends or fails; EPIPE raises SIGPIPE unless
 * MSG_NOSIGNAL.  Control messages are not supported: none are returned,
 * and sendmsg ignores them.
 */
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/errqueue.h>

#include "preload.h"

/* A datagram gathered from or scattered to several iovecs. */
#define PL_DGRAM_MAX	65536
/* Stream writev/sendmsg gathers up to this much into one send. */
#define PL_GATHER_MAX	65536

extern void __chk_fail(void) __attribute__((noreturn));

/*
 * What is left of a socket timeout of tmo ms (SO_RCVTIMEO, SO_SNDTIMEO)
 * started at t0: -1 for none, 0 when it has run out.  Every wait of one
 * call takes from the same timeout, as Linux's sock_rcvtimeo() does.
 */
static int timeo_left(int tmo, uint64_t t0)
{
	uint64_t spent;

	if (tmo < 0)
		return -1;
	spent = (pl_now_us() - t0) / 1000;
	return spent >= (uint64_t)tmo ? 0 : tmo - (int)spent;
}

int pl_wait(struct pl_sock *ps, short events, int timeout_ms)
{
	struct sluice_pollfd p = { .sd = (int)ps->sd, .events = events | SL_POLL_NOERRQ };
	/* As Linux: SA_RESTART restarts a socket call unless it has a timeout. */
	int ret = pl_sluice_wait(&p, 1, timeout_ms, timeout_ms < 0);

	if (ret < 0)
		return ret;
	if (!ret)
		return -EAGAIN;
	return p.revents & POLLNVAL ? -EBADF : 0;
}

short pl_sock_revents(struct pl_sock *ps, short events)
{
	struct sluice_pollfd p = { .sd = (int)ps->sd, .events = events };

	if (sluice_poll(pl_stack(), &p, 1, 0) < 0)
		return POLLERR;
	return p.revents;
}

bool pl_sigpipe_ignored;

static void sigpipe(void)
{
	/* In a sandbox, only if it does something (creds.c). */
	if (sl_sys_sandboxed && pl_sigpipe_ignored)
		return;
	pthread_kill(pthread_self(), SIGPIPE);
}

/* A buffer the kernel would answer EFAULT for: one no process can own,
 * or one not mapped readable here (found by touching it, pl_readable()). */
static bool buf_fault(const void *p, size_t len)
{
	return pl_bad_buf(p, len) || !pl_readable(p, len);
}

/* One buffer out; to may be NULL. */
static ssize_t send_loop(struct pl_sock *ps, const void *buf, size_t len, int flags,
			 const struct sockaddr_in *to, const struct sl_tx_meta *tx)
{
	bool nb = ps->nonblock || (flags & MSG_DONTWAIT);
	int tmo = pl_timeo_ms(&ps->sndtimeo);
	uint64_t t0 = tmo >= 0 ? pl_now_us() : 0;
	size_t done = 0;
	long ret;

	/* Linux's udp_sendmsg(): no urgent data on a datagram. */
	if ((flags & MSG_OOB) && ps->type == SOCK_DGRAM)
		return -EOPNOTSUPP;
	/* Linux: the length cut to MAX_RW_COUNT; an IPv4 datagram above
	 * 64 KiB is EMSGSIZE (udp_sendmsg()) before its bytes are read.  An
	 * AF_INET6 socket's is refused below before they are read too (the
	 * stack's UDP, or the kernel through the twin, which queues the
	 * error for IPV6_RECVERR): not probed. */
	if (len > PL_MAX_RW)
		len = PL_MAX_RW;
	if (ps->type == SOCK_DGRAM && len > 0xffff && !ps->v6)
		return -EMSGSIZE;
	if (!(ps->type == SOCK_DGRAM && len > 0xffff) && buf_fault(buf, len))
		return -EFAULT;
	ps->used = true;
	/* Unbound: its port is the kernel's pick, held by a twin. */
	if (__builtin_expect(ps->type == SOCK_DGRAM && !SL_READ_ONCE(ps->twin), 0) &&
	    !(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->flags) & SL_SF_BOUND))
		pl_dgram_autobind(ps);
	for (;;) {
		/* With a timeout, the call itself never waits (not even for a
		 * stopped lock holder): pl_wait() below waits what is left. */
		ret = sl_sendto_meta(pl_stack(), (int)ps->sd, (const uint8_t *)buf + done,
				     len - done, (flags & (MSG_DONTWAIT | MSG_OOB)) |
				     (tmo >= 0 ? MSG_DONTWAIT : 0), to, tx);
		/* To a kernel socket of this host: through the twin. */
		if (ret == -EREMOTE && ps->type == SOCK_DGRAM)
			ret = pl_twin_send(ps, buf, len, flags & (MSG_DONTWAIT | MSG_CONFIRM), to);
		/* The socket's twin is not this process's (inherited by
		 * SCM_RIGHTS or exec): the stack sends it, as before. */
		if (ret == -ENOTUNIQ)
			ret = sl_sendto_meta(pl_stack(), (int)ps->sd, (const uint8_t *)buf + done,
					     len - done, (flags & MSG_OOB) | MSG_DONTWAIT | SL_MSG_NOTWIN,
					     to, tx);
		if (ret >= 0) {
			done += (size_t)ret;
			/* A blocking stream send queues everything. */
			if (ps->type != SOCK_STREAM || done >= len || nb)
				return (ssize_t)done;
			ret = -EAGAIN;
		}
		if (ret == -EPIPE && ps->type == SOCK_STREAM && !(flags & MSG_NOSIGNAL))
			sigpipe();
		if (ret == -ENOBUFS && ps->type == SOCK_DGRAM) {
			/* The packet pool is empty (receivers hold it): as
			 * Linux with a full send buffer, EAGAIN or wait.  UDP
			 * always polls writable, so waiting is yielding. */
			if (nb)
				return -EAGAIN;
			if (tmo >= 0 && pl_now_us() - t0 >= (uint64_t)tmo * 1000)
				return -EAGAIN;
			sl_sys_yield();
			continue;
		}
		if (ret != -EAGAIN || nb)
			return done ? (ssize_t)done : ret;
		if (!timeo_left(tmo, t0))
			return done ? (ssize_t)done : -EAGAIN;
		ret = pl_wait(ps, POLLOUT, timeo_left(tmo, t0));
		if (ret)
			return done ? (ssize_t)done : ret;
	}
}

/* A call that may block keeps its socket through another thread's
 * close() (pl_call_begin()). */
static ssize_t pl_send(struct pl_sock *ps, const void *buf, size_t len, int flags,
		       const struct sockaddr_in *to, const struct sl_tx_meta *tx)
{
	ssize_t ret;

	if (SL_READ_ONCE(ps->nonblock) || (flags & MSG_DONTWAIT))
		return send_loop(ps, buf, len, flags, to, tx);
	pl_call_begin(ps);
	ret = send_loop(ps, buf, len, flags, to, tx);
	pl_call_end(ps);
	return ret;
}

/*
 * recvmsg(MSG_ERRQUEUE), as Linux's ip_recv_error() and (an AF_INET6
 * socket) ipv6_recv_error() answer: the stack's oldest queued error, else
 * the twin's (its kernel queue, answered by the kernel itself).  The
 * quote as data (MSG_TRUNC if cut), where the datagram went as the
 * address (when the error names a port), SO_TIMESTAMP's stamp, then
 * IP_RECVERR (IPV6_RECVERR) with the sock_extended_err and the offender.
 * -EAGAIN at once when both are empty.  msg_flags MSG_ERRQUEUE.
 */
static void put_cmsg(struct msghdr *msg, size_t *used, int level, int type, const void *data,
		     size_t len);
static void stamp_cmsg(struct msghdr *msg, size_t *used, uint64_t stamp_us, bool ns);
static bool stamp_ns(const struct pl_sock *ps);
static size_t iov_total(const struct iovec *iov, int n);
static int iov_check(const struct iovec *iov, int n, bool out);

/* addr:port as the socket's family shows it (v4-mapped on AF_INET6). */
static void errq_addr(uint32_t addr, uint16_t port, bool v6, struct sockaddr_in6 *out,
		      socklen_t *len)
{
	memset(out, 0, sizeof(*out));
	/* IPv6 itself (a handle: proto.h "IPv6 sockets"): its address. */
	if (v6 && sl_v6tok(addr) && sl_v6tok_addr(pl_sl(), addr, out->sin6_addr.s6_addr)) {
		out->sin6_family = AF_INET6;
		out->sin6_port = port;
		*len = sizeof(struct sockaddr_in6);
	} else if (v6) {
		out->sin6_family = AF_INET6;
		out->sin6_port = port;
		out->sin6_addr.s6_addr[10] = 0xff;
		out->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&out->sin6_addr.s6_addr[12], &addr, 4);
		*len = sizeof(struct sockaddr_in6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;

		sin->sin_family = AF_INET;
		sin->sin_port = port;
		sin->sin_addr.s_addr = addr;
		*len = sizeof(struct sockaddr_in);
	}
}

static ssize_t errq_msg(struct pl_sock *ps, struct msghdr *msg, int flags)
{
	struct {
		struct sock_extended_err ee;
		struct sockaddr_in6 offender;
	} eh;
	uint8_t tmp[4096];
	struct sl_errq_rec rec;
	size_t total, off = 0, used = 0;
	socklen_t alen;
	bool trunc, v6 = ps->v6;
	ssize_t n;

	if (msg->msg_iovlen > IOV_MAX)
		return -EMSGSIZE;
	if (iov_check(msg->msg_iov, (int)msg->msg_iovlen, false) ||
	    (msg->msg_name && !pl_writable(msg->msg_name, msg->msg_namelen)))
		return -EFAULT;
	total = iov_total(msg->msg_iov, (int)msg->msg_iovlen);
	n = sl_errq_recv(pl_stack(), (int)ps->sd, tmp, total < sizeof(tmp) ? total : sizeof(tmp),
			 &rec, &trunc);
	if (n == -EAGAIN)
		return pl_twin_errq(ps, msg, flags & ~MSG_ERRQUEUE);
	if (n < 0)
		return n;
	for (size_t i = 0; i < msg->msg_iovlen && off < (size_t)n; i++) {
		size_t take = msg->msg_iov[i].iov_len < (size_t)n - off ?
			      msg->msg_iov[i].iov_len : (size_t)n - off;

		if (pl_copy_out(msg->msg_iov[i].iov_base, tmp + off, take))
			return -EFAULT;
		off += take;
	}
	/* Where it went (the port 0 for a local error of an unconnected
	 * socket: Linux 6.18 gives it so). */
	if (msg->msg_name) {
		struct sockaddr_in6 a;

		errq_addr(rec.daddr, rec.dport, v6, &a, &alen);
		memcpy(msg->msg_name, &a, msg->msg_namelen < alen ? msg->msg_namelen : alen);
		msg->msg_namelen = alen;
	} else {
		msg->msg_namelen = 0;
	}
	msg->msg_flags = MSG_ERRQUEUE | (trunc ? MSG_TRUNC : 0);
	/* No room for control messages at all: Linux's put_cmsg() says
	 * MSG_CTRUNC. */
	if (!msg->msg_control) {
		msg->msg_flags |= MSG_CTRUNC;
		msg->msg_controllen = 0;
		return n;
	}
	if (SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->opt_flags) & SL_SO_TIMESTAMP)
		stamp_cmsg(msg, &used, rec.ts_us, stamp_ns(ps));
	memset(&eh, 0, sizeof(eh));
	eh.ee.ee_errno = rec.ee_errno;
	eh.ee.ee_origin = rec.origin;
	eh.ee.ee_type = rec.type;
	eh.ee.ee_code = rec.code;
	eh.ee.ee_info = rec.info;
	/* The ICMP message's sender; a local error names none. */
	if (rec.origin == SO_EE_ORIGIN_ICMP) {
		errq_addr(rec.offender, 0, v6, &eh.offender, &alen);
	} else if (rec.origin == SO_EE_ORIGIN_ICMP6) {
		eh.offender.sin6_family = AF_INET6;
		memcpy(eh.offender.sin6_addr.s6_addr, rec.offender6, 16);
	}
	if (v6)
		put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_RECVERR, &eh, sizeof(eh));
	else
		put_cmsg(msg, &used, IPPROTO_IP, IP_RECVERR, &eh,
			 sizeof(eh.ee) + sizeof(struct sockaddr_in));
	msg->msg_controllen = used;
	return n;
}

/* recv()/recvfrom() with MSG_ERRQUEUE: the same, without the control
 * messages. */
static ssize_t errq_read(struct pl_sock *ps, void *buf, size_t len, int flags,
			 struct sockaddr_in *from)
{
	struct sockaddr_in6 a;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov,
			     .msg_iovlen = 1 };
	ssize_t n = errq_msg(ps, &mh, flags);

	if (n >= 0 && from) {
		memset(from, 0, sizeof(*from));
		if (mh.msg_namelen && a.sin6_family == AF_INET6) {
			from->sin_family = AF_INET;
			from->sin_port = a.sin6_port;
			memcpy(&from->sin_addr, &a.sin6_addr.s6_addr[12], 4);
		} else if (mh.msg_namelen) {
			memcpy(from, &a, sizeof(*from));
		}
	}
	return n;
}

/* One buffer in; from may be NULL. */
static ssize_t recv_loop(struct pl_sock *ps, void *buf, size_t len, int flags,
			 struct sockaddr_in *from, struct sl_rx_meta *meta)
{
	bool nb = ps->nonblock || (flags & MSG_DONTWAIT);
	bool all = (flags & MSG_WAITALL) && !(flags & MSG_PEEK) && ps->type == SOCK_STREAM;
	int tmo = pl_timeo_ms(&ps->rcvtimeo), nflags = flags & (MSG_PEEK | MSG_TRUNC | SL_MSG_IOV);
	uint64_t t0 = tmo >= 0 ? pl_now_us() : 0;
	size_t done = 0;
	long ret;

	/* The error queue (IP_RECVERR): its oldest error; reading it never
	 * waits (Linux). */
	if (flags & MSG_ERRQUEUE)
		return errq_read(ps, buf, len, flags, from);
	/* MSG_OOB on a stream: the urgent byte (Linux's tcp_recv_urg()),
	 * never waiting, whatever the blocking mode; with none, EINVAL (a
	 * listener ENOTCONN) before the buffer is looked at; the byte goes
	 * through the stack's checked copy (EFAULT, the byte read, as
	 * Linux's memcpy_to_msg() after it marked it read). */
	if ((flags & MSG_OOB) && ps->type == SOCK_STREAM) {
		int oflags = (flags & (MSG_OOB | MSG_PEEK | MSG_TRUNC)) | MSG_DONTWAIT;

		return sl_recvfrom_meta(pl_stack(), (int)ps->sd, buf, len, oflags, from, meta);
	}
	/* As Linux's import_ubuf(): a length cut to MAX_RW_COUNT, and a
	 * buffer no process can own refused.  Any other is written by the
	 * stack's checked copy (core.h, sl_ucopy()), which stops at a fault
	 * as the kernel's copy_to_user() does: only the bytes received are
	 * touched (a receive of length -1 into a buffer of 10 takes the 10
	 * there are).  MSG_TRUNC on a stream copies nothing (no EFAULT). */
	if (len > PL_MAX_RW)
		len = PL_MAX_RW;
	if (!((flags & MSG_TRUNC) && ps->type == SOCK_STREAM) && !(flags & SL_MSG_IOV) &&
	    pl_bad_dst(buf, len))
		return -EFAULT;
	/* Non-blocking: the native fast path for spinners.  With a timeout:
	 * the call itself never waits (not even for a stopped lock holder);
	 * pl_wait() below waits what is left of it. */
	if (nb || tmo >= 0)
		nflags |= MSG_DONTWAIT;
	for (;;) {
		/* SO_RCVLOWAT on a blocking socket with a timeout: the call
		 * below may not wait, so wait here until the mark is met or
		 * the time is up (then what is there, as Linux). */
		if (!nb && tmo >= 0 && ps->type == SOCK_STREAM && timeo_left(tmo, t0) &&
		    sl_tcp_lowat_wait(sl_sock(pl_sl(), ps->sd), len - done))
			ret = -EAGAIN;
		else
			/* (An iovec cursor has moved on by itself.) */
			ret = sl_recvfrom_meta(pl_stack(), (int)ps->sd,
					       (flags & SL_MSG_IOV) ? buf : (uint8_t *)buf + done,
					       len - done, nflags, from, meta);
		if (ret > 0 && all) {
			done += (size_t)ret;
			if (done >= len)
				return (ssize_t)done;
			continue;
		}
		/* None in the stack: one its kernel twin was seen to get
		 * (twin.c). */
		if (ret == -EAGAIN && ps->type == SOCK_DGRAM && SL_READ_ONCE(ps->twin))
			ret = pl_twin_recv(ps, buf, len, nflags, from, meta);
		if (ret >= 0)
			return (ssize_t)(done + (size_t)ret);
		if (ret != -EAGAIN || nb)
			return done ? (ssize_t)done : ret;
		if (sl_udp_shut_empty(sl_sock(pl_sl(), ps->sd)))
			return 0;
		if (!timeo_left(tmo, t0))
			return done ? (ssize_t)done : -EAGAIN;
		pl_twin_watch_check();	/* a forked child's datagram twins */
		ret = pl_wait(ps, POLLIN, timeo_left(tmo, t0));
		if (ret == -EAGAIN && SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->rcvlowat) > 1)
			continue;	/* timed out under SO_RCVLOWAT: read what is there */
		if (ret)
			return done ? (ssize_t)done : ret;
	}
}

static ssize_t pl_recv(struct pl_sock *ps, void *buf, size_t len, int flags,
		       struct sockaddr_in *from, struct sl_rx_meta *meta)
{
	ssize_t ret;

	if (SL_READ_ONCE(ps->nonblock) || (flags & MSG_DONTWAIT))
		return recv_loop(ps, buf, len, flags, from, meta);
	pl_call_begin(ps);
	ret = recv_loop(ps, buf, len, flags, from, meta);
	pl_call_end(ps);
	return ret;
}

/* The sender, as Linux's move_addr_to_user() after a receive (the data
 * is taken by then): 0 or -errno. */
static int put_from(const struct pl_sock *ps, const struct sockaddr_in *sin,
		    struct sockaddr *a, socklen_t *lenp)
{
	if (!a)
		return 0;
	if (sin->sin_family == AF_INET6)	/* IPv6 itself, from a twin */
		return pl_twin_from6(a, lenp);
	return pl_put_addr(ps, sin, false, a, lenp);
}

/* A datagram to send to where only the kernel reaches: a destination
 * the stack does not reach (or a port of this host no stack socket has),
 * or IPv6 itself on an AF_INET6 socket.  A fresh socket becomes the
 * kernel's; d: pl_dest()'s answer. */
static bool dgram_kernel(const struct pl_sock *ps, int d, const struct sockaddr_in *sin)
{
	if (d == PL_NATIVE6)	/* used without a port (a send that failed): fresh yet */
		return !ps->used || !pl_has_port(ps);
	return !ps->used && d > 0 && pl_dgram_to_kernel(ps, sin);
}

/* IPv6 itself from a used AF_INET6 datagram socket: handed over bound as
 * it is, or ENETUNREACH.  With *done, the kernel's answer (or -errno). */
static ssize_t native6_send(int fd, struct pl_sock *ps, bool *done)
{
	int ret = pl_dgram_v6_handoff(fd, ps, done);

	*done = *done || !ret;
	return ret;
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_storage k;
	struct sockaddr_in sin;
	ssize_t ret;
	int d;

	if (!ps)
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	/* Linux's __sys_sendto(): the address is read first, whatever the
	 * socket (a stream socket then ignores it). */
	if (to) {
		ret = pl_addr_in(&to, tolen, &k);
		if (ret) {
			pl_put(ps);
			return pl_ret(ret);
		}
	}
	/* A stream socket ignores the address, as Linux does once connected. */
	d = ps->type == SOCK_DGRAM ? pl_dest(ps, to, tolen, &sin) : 0;
	if (dgram_kernel(ps, d, &sin)) {
		/* A fresh datagram socket sending where the stack does not
		 * reach, or to a port of this host the stack does not have. */
		ret = pl_fallback(fd, ps);
		pl_put(ps);
		return ret ? pl_ret(ret) : REAL(sendto)(fd, buf, len, flags, to, tolen);
	}
	/* IPv6 itself from a socket with a twin: the twin sends it (the
	 * kernel's answer, as Linux's for the socket's own address). */
	if (d == PL_NATIVE6 && SL_READ_ONCE(ps->twin) && ps->v6) {
		struct iovec iov = { (void *)buf, len };
		struct msghdr mh = { .msg_name = (void *)to, .msg_namelen = tolen,
				     .msg_iov = &iov, .msg_iovlen = 1 };

		ret = pl_twin_sendmsg6(ps, &mh, flags);
	} else if (d == PL_NATIVE6) {
		bool done;

		ret = native6_send(fd, ps, &done);
		if (done) {
			pl_put(ps);
			return ret ? pl_ret(ret) : REAL(sendto)(fd, buf, len, flags, to, tolen);
		}
	} else if (d < 0) {
		ret = d;
	} else {
		ret = pl_send(ps, buf, len, flags, d ? &sin : NULL, NULL);
	}
	pl_put(ps);
	return pl_ret(ret);
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct pl_sock *ps = pl_get_call(fd);
	ssize_t ret;

	if (!ps)
		return REAL(send)(fd, buf, len, flags);
	ret = pl_send(ps, buf, len, flags, NULL, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(send)(fd, buf, len, flags);
	}
	pl_put(ps);
	return pl_ret(ret);
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	struct pl_sock *ps = pl_get_call(fd);
	ssize_t ret;

	if (!ps)
		return REAL(write)(fd, buf, len);
	ret = pl_send(ps, buf, len, 0, NULL, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(write)(fd, buf, len);
	}
	pl_put(ps);
	return pl_ret(ret);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
			socklen_t *fromlen)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_in sin;
	ssize_t ret;

	if (!ps)
		return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
	memset(&sin, 0, sizeof(sin));
	ret = pl_recv(ps, buf, len, flags & ~SL_MSG_IOV, &sin, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
	}
	if (ret >= 0 && from) {
		/* A stream socket: no address, its length 0, as Linux. */
		int e = ps->type == SOCK_DGRAM ? put_from(ps, &sin, from, fromlen) :
						 pl_put_raw(NULL, 0, from, fromlen);

		if (e)
			ret = e;
	}
	pl_put(ps);
	return pl_ret(ret);
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct pl_sock *ps = pl_get_call(fd);
	ssize_t ret;

	if (!ps)
		return REAL(recv)(fd, buf, len, flags);
	/* (The program's flags never carry the library's own.) */
	ret = pl_recv(ps, buf, len, flags & ~SL_MSG_IOV, NULL, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(recv)(fd, buf, len, flags);
	}
	pl_put(ps);
	return pl_ret(ret);
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	struct pl_sock *ps = pl_get_call(fd);
	ssize_t ret;

	if (!ps)
		return REAL(read)(fd, buf, len);
	ret = pl_recv(ps, buf, len, 0, NULL, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(read)(fd, buf, len);
	}
	pl_put(ps);
	return pl_ret(ret);
}

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* An iovec array as Linux's import_iovec() takes it: the array read
 * (EFAULT), a length above SSIZE_MAX EINVAL, then a buffer refused:
 * EFAULT (out: one not readable, buf_fault(); in: one pl_bad_dst()
 * refuses, the rest left to the checked copy). */
static int iov_check(const struct iovec *iov, int n, bool out)
{
	if (n > 0 && buf_fault(iov, (size_t)n * sizeof(*iov)))
		return -EFAULT;
	for (int i = 0; i < n; i++)
		if ((ssize_t)iov[i].iov_len < 0)
			return -EINVAL;
	for (int i = 0; i < n; i++)
		if (out ? buf_fault(iov[i].iov_base, iov[i].iov_len) :
			  pl_bad_dst(iov[i].iov_base, iov[i].iov_len))
			return -EFAULT;
	return 0;
}

/* Out from several iovecs: one datagram, or a stream gathered in chunks. */
static ssize_t pl_sendv(struct pl_sock *ps, const struct iovec *iov, int n, int flags,
			const struct sockaddr_in *to, const struct sl_tx_meta *tx)
{
	size_t total, off = 0, done = 0;
	uint8_t *tmp;
	ssize_t ret = 0;
	int i = 0;

	if (n < 0 || n > IOV_MAX)
		return -EINVAL;
	ret = iov_check(iov, n, true);
	if (ret)
		return ret;
	total = iov_total(iov, n);
	if (n == 1 || total == 0)
		return pl_send(ps, n ? iov[0].iov_base : NULL, n ? iov[0].iov_len : 0, flags, to, tx);
	if (ps->type == SOCK_DGRAM && total > PL_DGRAM_MAX)
		return -EMSGSIZE;
	tmp = malloc(total < PL_GATHER_MAX ? total : PL_GATHER_MAX);
	if (!tmp)
		return -ENOMEM;
	while (done < total) {
		size_t chunk = 0;

		while (i < n && chunk < PL_GATHER_MAX) {
			size_t take = iov[i].iov_len - off;

			if (take > PL_GATHER_MAX - chunk)
				take = PL_GATHER_MAX - chunk;
			memcpy(tmp + chunk, (const uint8_t *)iov[i].iov_base + off, take);
			chunk += take;
			off += take;
			if (off == iov[i].iov_len) {
				i++;
				off = 0;
			}
		}
		ret = pl_send(ps, tmp, chunk, flags, to, tx);
		if (ret < 0)
			break;
		done += (size_t)ret;
		if ((size_t)ret < chunk)
			break;
	}
	free(tmp);
	return done ? (ssize_t)done : ret;
}

/* In to several iovecs: the first waits (unless non-blocking), the rest
 * take what is there; a datagram is scattered whole. */
static ssize_t pl_recvv(struct pl_sock *ps, const struct iovec *iov, int n, int flags,
			struct sockaddr_in *from, bool *trunc, struct sl_rx_meta *meta)
{
	size_t total, done = 0;
	ssize_t ret = 0;

	flags &= ~SL_MSG_IOV;	/* the library's, never the program's */
	if (n < 0 || n > IOV_MAX)
		return -EINVAL;
	ret = iov_check(iov, n, false);
	if (ret)
		return ret;
	total = iov_total(iov, n);
	if (ps->type == SOCK_DGRAM) {
		size_t cap = total < PL_DGRAM_MAX ? total : PL_DGRAM_MAX;
		uint8_t sbuf[2048], *tmp = sbuf;
		size_t off = 0;

		/* One buffer with room for it all (the usual recvmsg): straight
		 * in.  Else through a bounce buffer, on the stack when the
		 * datagram fits one packet buffer (no allocation a call). */
		if (cap && cap == iov[0].iov_len) {
			ret = pl_recv(ps, iov[0].iov_base, cap, flags | MSG_TRUNC, from, meta);
			if (ret > (ssize_t)cap) {
				*trunc = true;
				if (!(flags & MSG_TRUNC))
					ret = (ssize_t)cap;
			}
			return ret;
		}
		if (cap > sizeof(sbuf) && !(tmp = malloc(cap)))
			return -ENOMEM;
		ret = pl_recv(ps, tmp, cap, flags | MSG_TRUNC, from, meta);
		if (ret > (ssize_t)cap) {
			*trunc = true;
			if (!(flags & MSG_TRUNC))
				ret = (ssize_t)cap;
		}
		for (int i = 0; ret > 0 && i < n && off < (size_t)ret && off < cap; i++) {
			size_t take = iov[i].iov_len;

			if (take > cap - off)
				take = cap - off;
			if (take > (size_t)ret - off)
				take = (size_t)ret - off;
			/* Linux: the datagram is taken, the call EFAULT. */
			if (pl_copy_out(iov[i].iov_base, tmp + off, take)) {
				ret = -EFAULT;
				break;
			}
			off += take;
		}
		if (tmp != sbuf)
			free(tmp);
		return ret;
	}
	/* A stream into several iovecs: one receive, each queued buffer
	 * copied whole or not at all (SL_MSG_IOV), as Linux's
	 * tcp_recvmsg() copies an skb: a bad iovec after good ones takes
	 * nothing of the buffer that reaches it.  Urgent data (its one
	 * byte) as before. */
	if (n > 1 && total && !(flags & MSG_OOB)) {
		struct sl_ucur cur = { .iov = iov, .n = (unsigned int)n };

		return pl_recv(ps, &cur, total, flags | SL_MSG_IOV, from, NULL);
	}
	for (int i = 0; i < n; i++) {
		if (!iov[i].iov_len)
			continue;
		ret = pl_recv(ps, iov[i].iov_base, iov[i].iov_len,
			      done && !(flags & MSG_WAITALL) ? flags | MSG_DONTWAIT : flags, from,
			      NULL);
		if (ret <= 0)
			break;
		done += (size_t)ret;
		if ((size_t)ret < iov[i].iov_len || (flags & MSG_PEEK))
			break;
	}
	return done ? (ssize_t)done : ret;
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct pl_sock *ps = pl_get_call(fd);
	ssize_t ret;

	if (!ps)
		return REAL(writev)(fd, iov, n);
	ret = pl_sendv(ps, iov, n, 0, NULL, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(writev)(fd, iov, n);
	}
	pl_put(ps);
	return pl_ret(ret);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct pl_sock *ps = pl_get_call(fd);
	bool trunc = false;
	ssize_t ret;

	if (!ps)
		return REAL(readv)(fd, iov, n);
	ret = pl_recvv(ps, iov, n, 0, NULL, &trunc, NULL);
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(readv)(fd, iov, n);
	}
	pl_put(ps);
	return pl_ret(ret);
}

/*
 * sendmsg's control messages (ip(7), socket(7)).  UDP: IP_PKTINFO (the
 * source address), IP_TTL and IP_TOS for this datagram.  TCP takes the
 * IP level's without looking, as Linux's tcp_sendmsg() does.  Anything
 * else is EINVAL, as Linux answers what it does not know: nothing is
 * dropped unread.
 */
/*
 * An IPPROTO_IPV6 control message of a datagram to IPv6 itself, as
 * Linux's ip6_datagram_send_ctl() takes it: IPV6_TCLASS and
 * IPV6_HOPLIMIT an int from -1 (the socket's) to 255, IPV6_DONTFRAG an
 * int 0 or 1; IPV6_PKTINFO's source ::, ::1 or one of the stack's own
 * addresses (else EINVAL, as its ipv6_chk_addr() refuses), its interface
 * 0 or the stack's (sl_stack_ifindex()).  Any
 * other (routing headers, flow info, ...) EINVAL: not done here.
 */
static int tx6_cmsg(const struct cmsghdr *c, size_t dlen, struct sl_tx_meta *tx)
{
	int v;

	if (c->cmsg_type == IPV6_PKTINFO) {
		struct in6_pktinfo pi;
		uint32_t tok;

		if (dlen < sizeof(pi))
			return -EINVAL;
		memcpy(&pi, CMSG_DATA(c), sizeof(pi));
		if (pi.ipi6_ifindex && (unsigned int)pi.ipi6_ifindex != sl_stack_ifindex(pl_sl()))
			return -EINVAL;
		if (IN6_IS_ADDR_UNSPECIFIED(&pi.ipi6_addr))
			return 0;
		tok = sl_v6tok_find(pl_sl(), pi.ipi6_addr.s6_addr);
		if (!sl_v6tok_own(tok))
			return -EINVAL;
		tx->saddr = tok;
		return 0;
	}
	if (c->cmsg_type != IPV6_TCLASS && c->cmsg_type != IPV6_HOPLIMIT &&
	    c->cmsg_type != IPV6_DONTFRAG)
		return -EINVAL;
	if (dlen != sizeof(int))
		return -EINVAL;
	memcpy(&v, CMSG_DATA(c), sizeof(v));
	if (c->cmsg_type == IPV6_DONTFRAG) {
		if (v < 0 || v > 1)
			return -EINVAL;
		tx->dontfrag = v;
		return 0;
	}
	if (v < -1 || v > 255)
		return -EINVAL;
	/* IPV6_TCLASS -1: Linux 6.18 sends class 0xff (ipc6->tclass stays
	 * -1 past ipcm6_init_sk(), ip6_make_flowinfo() takes its low byte);
	 * IPV6_HOPLIMIT -1 is the socket's. */
	if (c->cmsg_type == IPV6_TCLASS)
		tx->tos = v & 0xff;
	else
		tx->ttl = v;
	return 0;
}

static int tx_cmsgs(const struct pl_sock *ps, const struct msghdr *msg, uint32_t daddr,
		    struct sl_tx_meta *tx)
{
	/* A datagram of an AF_INET6 socket to IPv6 itself takes IPv6's
	 * control messages and passes over IPv4's; to a v4-mapped address
	 * udp_sendmsg() takes IPv4's and passes over IPv6's. */
	bool v6 = ps->v6 && sl_v6tok(daddr);
	struct cmsghdr *c;
	int ret;

	tx->saddr = 0;
	tx->ttl = tx->tos = -1;
	tx->dontfrag = -1;
	if (!msg->msg_control || !msg->msg_controllen)
		return 0;
	if (msg->msg_controllen < sizeof(struct cmsghdr))
		return -EINVAL;
	for (c = CMSG_FIRSTHDR((struct msghdr *)msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		size_t dlen = c->cmsg_len >= CMSG_LEN(0) ? c->cmsg_len - CMSG_LEN(0) : 0;
		int v;

		if (c->cmsg_len < CMSG_LEN(0) ||
		    c->cmsg_len > msg->msg_controllen - ((uint8_t *)c - (uint8_t *)msg->msg_control))
			return -EINVAL;
		if (ps->v6 && c->cmsg_level == IPPROTO_IPV6) {
			if (!v6 || ps->type == SOCK_STREAM) {
				if (c->cmsg_type == IPV6_PKTINFO && ps->type != SOCK_STREAM)
					return -EINVAL;	/* a mapped source: not here */
				continue;
			}
			ret = tx6_cmsg(c, dlen, tx);
			if (ret)
				return ret;
			continue;
		}
		if (c->cmsg_level != IPPROTO_IP)
			return -EINVAL;
		if (ps->type == SOCK_STREAM || v6)
			continue;
		switch (c->cmsg_type) {
		case IP_PKTINFO: {
			struct in_pktinfo pi;

			if (dlen != sizeof(pi))
				return -EINVAL;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			tx->saddr = pi.ipi_spec_dst.s_addr;
			break;
		}
		case IP_TTL:
			if (dlen != sizeof(int))
				return -EINVAL;
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			if (v < 1 || v > 255)
				return -EINVAL;
			tx->ttl = v;
			break;
		case IP_TOS:
			/* Linux: an int, or a byte. */
			if (dlen == sizeof(int))
				memcpy(&v, CMSG_DATA(c), sizeof(v));
			else if (dlen == 1)
				v = *CMSG_DATA(c);
			else
				return -EINVAL;
			if (v < 0 || v > 255)
				return -EINVAL;
			tx->tos = v;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

/* Each fd msg passes with SCM_RIGHTS, to fn. */
static void each_right(const struct msghdr *msg, void (*fn)(int fd))
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			fn(fd);
		}
	}
}

/* Sluice sockets passed with SCM_RIGHTS (over a kernel AF_UNIX socket)
 * arrive as placeholder fds: enter them in the table. */
static void adopt_one(int fd)
{
	pl_fd_adopt(fd);
}

/* Sluice sockets about to be sent with SCM_RIGHTS: the receiver will hold
 * them, so private ones take their locks (fdtable.c).  The message is the
 * program's: looked at only where it can be read (a bad one is the
 * kernel's EFAULT to give). */
static void share_rights(const struct msghdr *msg)
{
	if (pl_fd_any_private() && msg && pl_readable(msg, sizeof(*msg)) && msg->msg_control &&
	    msg->msg_controllen >= sizeof(struct cmsghdr) &&
	    pl_readable(msg->msg_control, msg->msg_controllen))
		each_right(msg, pl_fd_share);
}

/*
 * The program's msghdr as Linux's __copy_msghdr() takes it: copied into
 * m (EFAULT); a name length below 0 EINVAL, above 128 cut to 128; with k
 * (a send), the name copied into k (EFAULT) and m pointing at it; more
 * than UIO_MAXIOV iovecs EMSGSIZE.  A receive's name stays the
 * program's, written after the receive (put_from()).
 */
static int msg_in(const struct msghdr *umsg, struct msghdr *m, struct sockaddr_storage *k)
{
	if (pl_copy_in(m, umsg, sizeof(*m)))
		return -EFAULT;
	if (!m->msg_name)
		m->msg_namelen = 0;
	if ((int)m->msg_namelen < 0)
		return -EINVAL;
	if (m->msg_namelen > sizeof(struct sockaddr_storage))
		m->msg_namelen = sizeof(struct sockaddr_storage);
	if (k && m->msg_namelen) {
		if (pl_copy_in(k, m->msg_name, m->msg_namelen))
			return -EFAULT;
		m->msg_name = k;
	} else if (k) {
		m->msg_name = NULL;
	}
	if (m->msg_iovlen > UIO_MAXIOV)
		return -EMSGSIZE;
	return 0;
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *umsg, int flags)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_storage k;
	struct sockaddr_in sin;
	struct sl_tx_meta tx;
	struct msghdr m, *msg = &m;
	ssize_t ret;
	int d;

	if (!ps) {
		share_rights(umsg);
		return REAL(sendmsg)(fd, umsg, flags);
	}
	ret = msg_in(umsg, &m, &k);
	/* Then the iovecs, then the control messages (Linux: ENOBUFS
	 * above INT_MAX bytes, EFAULT if they cannot be read). */
	if (!ret)
		ret = iov_check(m.msg_iov, (int)m.msg_iovlen, true);
	if (!ret && m.msg_controllen > INT_MAX)
		ret = -ENOBUFS;
	if (!ret && m.msg_controllen && buf_fault(m.msg_control, m.msg_controllen))
		ret = -EFAULT;
	if (!ret) {
		d = ps->type == SOCK_DGRAM ? pl_dest(ps, msg->msg_name, msg->msg_namelen, &sin) :
					     0;
		if (dgram_kernel(ps, d, &sin)) {
			ret = pl_fallback(fd, ps);
			pl_put(ps);
			return ret ? pl_ret(ret) : REAL(sendmsg)(fd, msg, flags);
		}
		if (d == PL_NATIVE6 && SL_READ_ONCE(ps->twin) && ps->v6) {
			ret = pl_twin_sendmsg6(ps, msg, flags);
			pl_put(ps);
			return pl_ret(ret);
		}
		if (d == PL_NATIVE6) {
			bool done;

			ret = native6_send(fd, ps, &done);
			if (done) {
				pl_put(ps);
				return ret ? pl_ret(ret) : REAL(sendmsg)(fd, msg, flags);
			}
		}
		ret = d < 0 ? d : d == PL_NATIVE6 ? ret :
		      tx_cmsgs(ps, msg, d ? sin.sin_addr.s_addr :
				   SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->raddr), &tx);
		if (!ret)
			ret = pl_sendv(ps, msg->msg_iov, (int)msg->msg_iovlen, flags,
				       d ? &sin : NULL, &tx);
	}
	if (pl_ho_redo(fd, ps, ret)) {
		pl_put(ps);
		return REAL(sendmsg)(fd, umsg, flags);
	}
	pl_put(ps);
	return pl_ret(ret);
}

/* One control message into msg, as Linux's put_cmsg(): cut to the room
 * left, with MSG_CTRUNC, if it does not fit; *used grows. */
static void put_cmsg(struct msghdr *msg, size_t *used, int level, int type, const void *data,
		     size_t len)
{
	struct cmsghdr c = { .cmsg_len = CMSG_LEN(len), .cmsg_level = level, .cmsg_type = type };
	size_t room = msg->msg_controllen > *used ? msg->msg_controllen - *used : 0;
	size_t want = CMSG_LEN(len), n;
	uint8_t *at = (uint8_t *)msg->msg_control + *used;

	if (room < sizeof(c)) {
		msg->msg_flags |= MSG_CTRUNC;
		return;
	}
	if (room < want) {
		msg->msg_flags |= MSG_CTRUNC;
		want = room;
		c.cmsg_len = want;	/* Linux: the length it got */
	}
	memcpy(at, &c, sizeof(c));
	n = want - CMSG_LEN(0);
	memcpy(at + CMSG_LEN(0), data, n < len ? n : len);
	*used += CMSG_SPACE(len) < room ? CMSG_SPACE(len) : room;
}

/*
 * TCP_INQ (tcp(7)): the bytes left to read after this call, or 1 once the
 * peer's FIN is in and nothing is (Linux tcp_inq_hint()), read as poll
 * reads the queue.
 */
static void inq_cmsg(struct pl_sock *ps, struct msghdr *msg, size_t *used)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	int inq = (int)SL_READ_ONCE(so->rxq_bytes);

	if (!inq && (SL_READ_ONCE(so->tcp.tflags) & SL_TF_FIN_RCVD))
		inq = 1;
	put_cmsg(msg, used, IPPROTO_TCP, TCP_CM_INQ, &inq, sizeof(inq));
}

/* SO_TIMESTAMP (socket(7)): when the datagram arrived, as a timeval;
 * SO_TIMESTAMPNS (ns): as a timespec (the stack's clock counts µs). */
static void stamp_cmsg(struct msghdr *msg, size_t *used, uint64_t stamp_us, bool ns)
{
	int64_t us = pl_stamp_real_us(stamp_us);
	struct timeval tv = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };
	struct timespec ts = { .tv_sec = tv.tv_sec, .tv_nsec = tv.tv_usec * 1000 };

	if (ns)
		put_cmsg(msg, used, SOL_SOCKET, SO_TIMESTAMPNS, &ts, sizeof(ts));
	else
		put_cmsg(msg, used, SOL_SOCKET, SO_TIMESTAMP, &tv, sizeof(tv));
}

static bool stamp_ns(const struct pl_sock *ps)
{
	return SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->ip6_opt) & SL_S6_TSNS;
}

/* What a socket asked to be told of what it reads: of each datagram
 * (ip(7)), its arrival first (Linux udp_recvmsg(): sock_recv_cmsgs()),
 * then in the order Linux's ip_cmsg_recv_offset() gives them; of a
 * stream, TCP_INQ. */
static void rx_cmsgs(struct pl_sock *ps, struct msghdr *msg, const struct sl_rx_meta *m,
		     ssize_t got)
{
	uint16_t want = SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->opt_flags);
	size_t used = 0;

	/* Linux tcp_recvmsg(): the last arrival of what was read, then
	 * TCP_INQ. */
	if (ps->type == SOCK_STREAM && (want & SL_SO_TIMESTAMP) && got > 0) {
		uint64_t at = SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->tcp.rx_stamp_us);

		if (at)
			stamp_cmsg(msg, &used, at, stamp_ns(ps));
	}
	if (ps->type == SOCK_STREAM && (want & SL_SO_TCP_INQ))
		inq_cmsg(ps, msg, &used);
	if (ps->type == SOCK_DGRAM && (want & SL_SO_TIMESTAMP))
		stamp_cmsg(msg, &used, m->stamp_us, stamp_ns(ps));
	if (ps->type == SOCK_DGRAM && ps->v6 && msg->msg_control && pl_v6_recvpktinfo(ps)) {
		/* Linux ip6_datagram_recv_common_ctl(): the destination (an
		 * IPv4 datagram's v4-mapped, an IPv6 one's from its handle),
		 * the interface it came in on. */
		struct in6_pktinfo pi6 = { .ipi6_ifindex = (int)m->ifindex };

		if (!sl_v6tok(m->daddr) || !sl_v6tok_addr(pl_sl(), m->daddr, pi6.ipi6_addr.s6_addr)) {
			pi6.ipi6_addr.s6_addr[10] = 0xff;
			pi6.ipi6_addr.s6_addr[11] = 0xff;
			memcpy(&pi6.ipi6_addr.s6_addr[12], &m->daddr, 4);
		}
		put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_PKTINFO, &pi6, sizeof(pi6));
	}
	if (ps->type == SOCK_DGRAM && ps->v6 && msg->msg_control && sl_v6tok(m->daddr)) {
		/* An IPv6 datagram (its destination a handle): IPv6's own
		 * (ip6_datagram_recv_specific_ctl(), in its order), none of
		 * IPv4's. */
		if (pl_v6_opt_on(ps, IPV6_RECVHOPLIMIT)) {
			int hl = m->ttl;

			put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_HOPLIMIT, &hl, sizeof(hl));
		}
		if (pl_v6_opt_on(ps, IPV6_RECVTCLASS)) {
			int tc = m->tos;

			put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof(tc));
		}
		if (pl_v6_opt_on(ps, IPV6_RECVORIGDSTADDR)) {
			struct sockaddr_in6 o = { .sin6_family = AF_INET6, .sin6_port = m->dport };

			sl_v6tok_addr(pl_sl(), m->daddr, o.sin6_addr.s6_addr);
			put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_ORIGDSTADDR, &o, sizeof(o));
		}
	} else if (ps->type == SOCK_DGRAM && msg->msg_control) {
		if (want & SL_SO_PKTINFO) {
			struct in_pktinfo pi = {
				.ipi_ifindex = (int)m->ifindex,
				/* Linux: to a group or broadcast, the address
				 * of the interface it came in on. */
				.ipi_spec_dst.s_addr = !SL_IN_MULTICAST(m->daddr) &&
							       m->daddr != INADDR_BROADCAST ? m->daddr :
						       m->ifindex == SL_LO_IFINDEX ?
							       htonl(INADDR_LOOPBACK) :
							       pl_sl()->lib->ip_addr,
				.ipi_addr.s_addr = m->daddr,
			};

			put_cmsg(msg, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		}
		if (want & SL_SO_RECVTTL) {
			int ttl = m->ttl;

			put_cmsg(msg, &used, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl));
		}
		if (want & SL_SO_RECVTOS)
			put_cmsg(msg, &used, IPPROTO_IP, IP_TOS, &m->tos, 1);
		if (want & SL_SO_ORIGDST) {
			struct sockaddr_in o = {
				.sin_family = AF_INET, .sin_port = m->dport,
				.sin_addr.s_addr = m->daddr,
			};

			put_cmsg(msg, &used, IPPROTO_IP, IP_ORIGDSTADDR, &o, sizeof(o));
		}
	}
	msg->msg_controllen = used;
}

/* The fields a receive gives back, written to the program's msghdr as
 * Linux's ____sys_recvmsg() puts them: EFAULT if they cannot be. */
static int msg_out(struct msghdr *umsg, const struct msghdr *m)
{
	if (pl_copy_out(&umsg->msg_flags, &m->msg_flags, sizeof(m->msg_flags)) ||
	    pl_copy_out(&umsg->msg_controllen, &m->msg_controllen, sizeof(m->msg_controllen)))
		return -EFAULT;
	return 0;
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *umsg, int flags)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct msghdr mh, *msg = &mh;
	struct sockaddr_in sin;
	bool trunc = false;
	ssize_t ret;
	int e;

	if (!ps) {
		ret = REAL(recvmsg)(fd, umsg, flags);
		if (ret >= 0 && umsg && umsg->msg_controllen && !pl_cfg.disabled)
			each_right(umsg, adopt_one);
		return ret;
	}
	ret = msg_in(umsg, &mh, NULL);
	/* Control messages go where they can be written; none else (Linux's
	 * put_cmsg() gives up at a fault and the receive stands). */
	if (!ret && mh.msg_controllen &&
	    (pl_bad_buf(mh.msg_control, mh.msg_controllen) ||
	     !pl_writable(mh.msg_control, mh.msg_controllen))) {
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	if (!ret) {
		memset(&sin, 0, sizeof(sin));
		struct sl_rx_meta m = { 0 };

		if (flags & MSG_ERRQUEUE) {
			ret = errq_msg(ps, msg, flags);
			if (ret >= 0 && (pl_copy_out(&umsg->msg_namelen, &mh.msg_namelen,
						     sizeof(mh.msg_namelen)) || msg_out(umsg, &mh)))
				ret = -EFAULT;
			pl_put(ps);
			return pl_ret(ret);
		}
		ret = pl_recvv(ps, msg->msg_iov, (int)msg->msg_iovlen, flags, &sin, &trunc, &m);
		if (pl_ho_redo(fd, ps, ret)) {
			pl_put(ps);
			return REAL(recvmsg)(fd, umsg, flags);
		}
		if (ret >= 0) {
			/* The data is taken: a name or header that cannot be
			 * written is EFAULT all the same, as Linux. */
			e = !msg->msg_name ? 0 :
			    ps->type == SOCK_DGRAM ?
			    put_from(ps, &sin, msg->msg_name, &umsg->msg_namelen) :
			    pl_put_raw(NULL, 0, msg->msg_name, &umsg->msg_namelen);
			msg->msg_flags = trunc ? MSG_TRUNC : 0;
			/* The urgent byte (Linux's tcp_recv_urg()). */
			if ((flags & MSG_OOB) && ret > 0)
				msg->msg_flags |= MSG_OOB;
			rx_cmsgs(ps, msg, &m, ret);
			if (!e)
				e = msg_out(umsg, msg);
			if (e)
				ret = e;
		}
	}
	pl_put(ps);
	return pl_ret(ret);
}

/* ---- _FORTIFY_SOURCE entry points ---- */

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		__chk_fail();
	return recv(fd, buf, len, flags);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			      struct sockaddr *from, socklen_t *fromlen)
{
	if (len > buflen)
		__chk_fail();
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}

/* sendmmsg/recvmmsg: one message at a time through sendmsg/recvmsg. A
 * call that ends with some messages done succeeds, so the errno of the
 * message that stopped it (EAGAIN, EFAULT) is not the program's: the
 * caller's is put back, as Linux leaves it. */
EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	int saved = errno;
	unsigned int i;
	ssize_t r;

	if (!pl_is_sluice(fd)) {
		for (i = 0; vec && i < vlen && pl_readable(&vec[i], sizeof(vec[i])); i++)
			share_rights(&vec[i].msg_hdr);
		return REAL(sendmmsg)(fd, vec, vlen, flags);
	}
	if (vlen > UIO_MAXIOV)
		vlen = UIO_MAXIOV;
	for (i = 0; i < vlen; i++) {
		unsigned int n;

		r = sendmsg(fd, &vec[i].msg_hdr, flags);
		if (r < 0 && !i)
			return -1;
		if (r < 0)
			break;
		n = (unsigned int)r;
		if (pl_copy_out(&vec[i].msg_len, &n, sizeof(n))) {
			if (!i)
				return (int)pl_ret(-EFAULT);
			break;
		}
	}
	errno = saved;
	return (int)i;
}

EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags,
		    struct timespec *timeout)
{
	int saved = errno;
	struct timespec ts;
	unsigned int i;
	ssize_t r;

	uint64_t end = 0, now;

	if (!pl_is_sluice(fd))
		return REAL(recvmmsg)(fd, vec, vlen, flags, timeout);
	/* As Linux (poll_select_set_timeout()): a timespec that cannot be
	 * read is EFAULT, one out of range EINVAL, before anything is
	 * received. */
	if (timeout) {
		if (pl_copy_in(&ts, timeout, sizeof(ts)))
			return (int)pl_ret(-EFAULT);
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L)
			return (int)pl_ret(-EINVAL);
		end = pl_now_us() + (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
	}
	if (vlen > UIO_MAXIOV)
		vlen = UIO_MAXIOV;
	/* The timeout is checked only between messages, as on Linux: the
	 * first receive waits as the socket says. */
	for (i = 0; i < vlen; i++) {
		unsigned int n;

		r = recvmsg(fd, &vec[i].msg_hdr, flags & ~MSG_WAITFORONE);
		if (r < 0) {
			if (!i)
				return -1;
			break;
		}
		n = (unsigned int)r;
		if (pl_copy_out(&vec[i].msg_len, &n, sizeof(n))) {
			if (!i)
				return (int)pl_ret(-EFAULT);
			break;
		}
		if (flags & MSG_WAITFORONE)
			flags |= MSG_DONTWAIT;
		if (timeout && pl_now_us() >= end) {
			i++;
			break;
		}
	}
	/* What is left of the timeout, written back as Linux does. */
	if (timeout) {
		now = pl_now_us();
		now = now < end ? end - now : 0;
		ts.tv_sec = (time_t)(now / 1000000u);
		ts.tv_nsec = (long)(now % 1000000u) * 1000;
		if (pl_copy_out(timeout, &ts, sizeof(ts)))
			return (int)pl_ret(-EFAULT);
	}
	errno = saved;
	return (int)i;
}
