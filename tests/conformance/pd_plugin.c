// SPDX-License-Identifier: GPL-2.0-only
/*
 * A Sluice stack inside packetdrill: the shared object its --so_filename
 * option loads (the interface is packetdrill's own packetdrill.h, read
 * from the checkout named by PACKETDRILL and never copied; it is GPL, so
 * this file is too, as the tests built on the kernel's harness are).
 *
 *   packetdrill (script) --netdev_send--> sl_ip_input()   [stack, virtual clock]
 *   packetdrill (sniff)  <--netdev_receive-- pd link tx queue
 *   packetdrill (syscalls) --> sluice_socket(), sluice_send(), ...
 *
 * Time is virtual: the stack's clock is ours (sluice_stack_set_clock()),
 * packetdrill reads it through gettimeofday, and it moves only when
 * packetdrill sleeps, waits for an outbound packet, or a call would block
 * on the thread that runs the script. It moves in steps of one
 * millisecond (the timer wheel's tick, lib/proto/timer.c) while timers
 * are armed, running the stack at each step, so a retransmission leaves
 * at the millisecond its timer is due whatever the machine's load.
 *
 * Every call packetdrill makes holds one mutex. Sluice sockets are all
 * non-blocking underneath; a socket the script did not make non-blocking
 * is waited on here: on packetdrill's main thread by moving the clock
 * (nobody else will), on its thread for blocking calls (a script line
 * with a duration, "0...0.1 read(...)") by sleeping until the main
 * thread changes something.
 *
 * so_flags (--so_flags=...): "ip=A.B.C.D" the stack's address (default
 * 192.168.0.1, the address tests/conformance/packetdrill.sh gives
 * packetdrill), "debug" to print every packet the stack sends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/sockios.h>

#include "packetdrill.h"

#include "api/api.h"

#define PD_FDS		64		/* script fds 3..63 */
#define PD_FD_FIRST	3		/* as a fresh process's first socket */
#define PD_QUEUE	4096		/* outbound frames not yet sniffed */
#define PD_FRAME	2048
#define PD_STEP_US	1000		/* the timer wheel's tick */
/* How far the clock may run, looking for a packet or waiting for a
 * socket on the main thread, before the plugin says nothing came. */
#define PD_WAIT_MAX_US	(300ull * 1000000)
/* A blocking call on packetdrill's syscall thread moves the clock itself
 * only after the main thread has done nothing this long (real time): the
 * script is over, or waits for this very call. */
#define PD_IDLE_REAL_MS	500

struct pd_frame {
	uint64_t at_us;
	uint16_t len;
	uint8_t data[PD_FRAME];
};

struct pd_fd {
	bool used;
	bool nonblock;
	int sd;
	int real;	/* the real fd holding the number, or -1 */
};

struct pd {
	struct sl_link link;		/* first: the stack's s->link */
	pthread_mutex_t mu;
	pthread_cond_t changed;		/* the stack ran or took input */
	pthread_t main;			/* packetdrill's script thread */
	uint64_t main_calls;		/* calls from it, for the idle test */
	struct sluice_stack *st;	/* NULL until the first call needs it */
	struct sl_stack *s;
	struct sluice_stack_config cfg;
	char name[32];
	uint64_t now_us;		/* the virtual clock */
	bool debug;
	unsigned int q_head, q_len;
	struct pd_frame *q;
	uint64_t q_dropped;
	struct pd_fd fd[PD_FDS];
};

static uint64_t pd_clock(void *arg)
{
	return ((struct pd *)arg)->now_us;
}

/* The link: every packet the stack sends waits here for netdev_receive. */
static int pd_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct pd *p = (struct pd *)l;
	struct pd_frame *f;
	uint16_t len = sl_buf(s, idx)->len;

	(void)nh;
	if (p->q_len == PD_QUEUE || len > PD_FRAME) {
		p->q_dropped++;
		return -ENOBUFS;
	}
	f = &p->q[(p->q_head + p->q_len++) % PD_QUEUE];
	f->at_us = p->now_us;
	f->len = len;
	memcpy(f->data, sl_buf_data(s, idx), len);
	if (p->debug && len >= 40 && f->data[9] == IPPROTO_TCP)
		fprintf(stderr, "sluice-pd: %.6f tx seq %u len %u flags 0x%02x\n", p->now_us / 1e6,
			ntohl(*(const uint32_t *)(f->data + 24)), len - 20u - (f->data[32] >> 4) * 4u,
			f->data[33]);
	return 0;
}

static const struct sl_link_ops pd_link_ops = { .name = "packetdrill", .tx = pd_tx };

static void pd_die(const char *what, int err)
{
	fprintf(stderr, "sluice-pd: %s: %s\n", what, strerror(err));
	exit(1);
}

/*
 * The stack, made at the first call that needs it: after the script's
 * first lines, which set the namespace's sysctls (its defaults.sh) that a
 * new handle reads, as a kernel socket made then would see them.
 */
static void pd_stack(struct pd *p)
{
	int ret;

	if (p->st)
		return;
	sluice_stack_destroy(p->name);
	ret = sluice_stack_create(p->name, &p->cfg, &p->st);
	if (ret)
		pd_die("sluice_stack_create", -ret);
	p->s = (struct sl_stack *)p->st;
	sluice_stack_set_clock(p->st, pd_clock, p);
	p->link.ops = &pd_link_ops;
	p->link.mtu = 1500;
	p->s->link = &p->link;
}

static void pd_enter(struct pd *p)
{
	pthread_mutex_lock(&p->mu);
	if (pthread_equal(pthread_self(), p->main))
		p->main_calls++;
	pd_stack(p);
}

static void pd_leave(struct pd *p)
{
	pthread_cond_broadcast(&p->changed);
	pthread_mutex_unlock(&p->mu);
}

/* Run what is due now (timers, loopback), as a turn of the stack. */
static void pd_run(struct pd *p)
{
	sluice_stack_poll(p->st);
}

/* Move the clock to t, running the stack at every tick on the way while
 * any timer is armed (none armed: nothing can happen, jump). */
static void pd_advance_to(struct pd *p, uint64_t t)
{
	while (p->now_us < t) {
		uint64_t next = (p->now_us / PD_STEP_US + 1) * PD_STEP_US;

		if (!p->s->lib->timers_armed || next > t)
			next = t;
		p->now_us = next;
		pd_run(p);
	}
}

/* One tick forward; false once the clock has run max_us past start. */
static bool pd_tick(struct pd *p, uint64_t start, uint64_t max_us)
{
	if (p->now_us - start >= max_us)
		return false;
	pd_advance_to(p, (p->now_us / PD_STEP_US + 1) * PD_STEP_US);
	return true;
}

static bool pd_on_main(const struct pd *p)
{
	return pthread_equal(pthread_self(), p->main);
}

/*
 * A call would block: let time pass until the stack may have changed.
 * On the main thread the clock moves one tick (false once it has moved
 * max_us since start); on another, sleep until the main thread runs the
 * stack, and after PD_IDLE_REAL_MS of a silent main thread move it here.
 */
static bool pd_block(struct pd *p, uint64_t start, uint64_t max_us)
{
	struct timespec until;
	uint64_t calls = p->main_calls;

	if (pd_on_main(p))
		return pd_tick(p, start, max_us);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += PD_IDLE_REAL_MS * 1000000l;
	until.tv_sec += until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	if (pthread_cond_timedwait(&p->changed, &p->mu, &until) == ETIMEDOUT &&
	    calls == p->main_calls)
		return pd_tick(p, start, max_us);
	return p->now_us - start < max_us;
}

/* The events of sd now (POLLNVAL for a bad sd). */
static short pd_events(struct pd *p, int sd, short events)
{
	struct sluice_pollfd q = { .sd = sd, .events = events };

	if (sluice_poll(p->st, &q, 1, 0) < 0)
		return POLLNVAL;
	return q.revents;
}

/* Wait for events on sd, as a blocking call would; false if the clock ran
 * PD_WAIT_MAX_US and nothing came. */
static bool pd_wait_sd(struct pd *p, int sd, short events)
{
	uint64_t start = p->now_us;

	while (!(pd_events(p, sd, events) & (events | POLLERR | POLLHUP | POLLNVAL)))
		if (!pd_block(p, start, PD_WAIT_MAX_US))
			return false;
	return true;
}

static struct pd_fd *pd_fd(struct pd *p, int fd)
{
	if (fd < PD_FD_FIRST || fd >= PD_FDS || !p->fd[fd].used)
		return NULL;
	return &p->fd[fd];
}

/*
 * A new script fd for sd: the lowest free, as the kernel picks, and held
 * in the process by an fd of /dev/null at that number.  packetdrill ends
 * a script by closing each socket it still has with libc's close() on
 * that number, not through the plugin (socket_close()): the number must
 * be a real fd, and one of ours, not a file of the library's (whose fds
 * live above the program's, lib/os/os.h).
 */
static int pd_fd_new(struct pd *p, int sd, bool nonblock)
{
	struct sl_stack *s = p->s;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < PD_FD_FIRST || fd >= PD_FDS || p->fd[fd].used) {
		if (fd >= 0)
			close(fd);
		sluice_close(p->st, sd);
		return -EMFILE;
	}
	p->fd[fd] = (struct pd_fd){ .used = true, .nonblock = nonblock, .sd = sd, .real = fd };
	if (!sl_lock(s)) {
		sl_sock(s, sd)->flags |= SL_SF_NONBLOCK;
		sl_unlock(s);
	}
	return fd;
}

/* A native result (>= 0 or -errno) as a system call's. */
static long pd_ret(long ret)
{
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static int pd_socket(void *u, int domain, int type, int protocol)
{
	struct pd *p = u;
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC), sd, ret;

	if (domain != AF_INET)
		return (int)pd_ret(-EAFNOSUPPORT);
	if ((base == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (base == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return (int)pd_ret(-EPROTONOSUPPORT);
	pd_enter(p);
	sd = sluice_socket(p->st, (base == SOCK_STREAM ? SLUICE_SOCK_STREAM :
				   base == SOCK_DGRAM ? SLUICE_SOCK_DGRAM : -1) | SLUICE_SOCK_NONBLOCK);
	ret = sd < 0 ? sd : pd_fd_new(p, sd, type & SOCK_NONBLOCK);
	pd_leave(p);
	return (int)pd_ret(ret);
}

static const struct sockaddr_in *pd_sin(const struct sockaddr *a, socklen_t len)
{
	if (!a || len < sizeof(struct sockaddr_in))
		return NULL;
	return (const struct sockaddr_in *)a;
}

static void pd_sin_out(const struct sockaddr_in *in, struct sockaddr *a, socklen_t *len)
{
	if (!a || !len)
		return;
	memcpy(a, in, *len < sizeof(*in) ? *len : sizeof(*in));
	*len = sizeof(*in);
}

static int pd_bind(void *u, int fd, const struct sockaddr *addr, socklen_t len)
{
	struct pd *p = u;
	const struct sockaddr_in *a = pd_sin(addr, len);
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : !a ? -EINVAL : sluice_bind(p->st, f->sd, a);
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_listen(void *u, int fd, int backlog)
{
	struct pd *p = u;
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : sluice_listen(p->st, f->sd, backlog);
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_accept(void *u, int fd, struct sockaddr *addr, socklen_t *len)
{
	struct pd *p = u;
	struct sockaddr_in peer;
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	for (;;) {
		ret = !f ? -EBADF : sluice_accept(p->st, f->sd, &peer);
		if (ret != -EAGAIN || f->nonblock || !pd_wait_sd(p, f->sd, POLLIN))
			break;
	}
	if (ret >= 0) {
		ret = pd_fd_new(p, ret, false);
		if (ret >= 0)
			pd_sin_out(&peer, addr, len);
	}
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_connect(void *u, int fd, const struct sockaddr *addr, socklen_t len)
{
	struct pd *p = u;
	const struct sockaddr_in *a = pd_sin(addr, len);
	unsigned int elen = sizeof(int);
	int ret, err = 0;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : !a ? -EINVAL : sluice_connect(p->st, f->sd, a);
	if (ret == -EINPROGRESS && !f->nonblock) {
		pd_wait_sd(p, f->sd, POLLOUT);
		ret = sluice_getsockopt(p->st, f->sd, SOL_SOCKET, SO_ERROR, &err, &elen);
		if (!ret)
			ret = -err;
	}
	pd_leave(p);
	return (int)pd_ret(ret);
}

/* A buffer in the null page: EFAULT, as the preload refuses it
 * (lib/README.md, "Bad buffers"); the native API copies without looking. */
static bool pd_bad_buf(const void *buf, size_t len)
{
	return len && (uintptr_t)buf < 4096;
}

/* recv on fd into one buffer, blocking as the script's socket does. */
static long pd_recv_locked(struct pd *p, int fd, void *buf, size_t len, int flags,
			   struct sockaddr_in *from)
{
	struct pd_fd *f = pd_fd(p, fd);
	long ret;

	if (!f)
		return -EBADF;
	if (pd_bad_buf(buf, len))
		return -EFAULT;
	for (;;) {
		ret = sluice_recvfrom(p->st, f->sd, buf, len, flags | MSG_DONTWAIT, from);
		/* recv(MSG_OOB) never waits (Linux's tcp_recv_urg()). */
		if (ret != -EAGAIN || f->nonblock || (flags & (MSG_DONTWAIT | MSG_OOB)) ||
		    !pd_wait_sd(p, f->sd, POLLIN))
			return ret;
	}
}

/* send on fd from one buffer: a blocking socket sends it all. */
static long pd_send_locked(struct pd *p, int fd, const void *buf, size_t len, int flags,
			   const struct sockaddr_in *to)
{
	struct pd_fd *f = pd_fd(p, fd);
	bool nb;
	size_t done = 0;
	long ret;

	if (!f)
		return -EBADF;
	if (pd_bad_buf(buf, len))
		return -EFAULT;
	nb = f->nonblock || (flags & MSG_DONTWAIT);
	for (;;) {
		ret = sluice_sendto(p->st, f->sd, (const char *)buf + done, len - done,
				    flags | MSG_DONTWAIT, to);
		if (ret > 0)
			done += (size_t)ret;
		if (p->debug)
			fprintf(stderr, "sluice-pd: %.6f send fd %d: %ld, %zu of %zu\n",
				p->now_us / 1e6, fd, ret, done, len);
		if (ret < 0 && ret != -EAGAIN)
			return done ? (long)done : ret;
		if (done == len || nb)
			return done ? (long)done : ret;
		if (!pd_wait_sd(p, f->sd, POLLOUT))
			return done ? (long)done : -EAGAIN;
	}
}

static ssize_t pd_recvfrom(void *u, int fd, void *buf, size_t len, int flags,
			   struct sockaddr *src, socklen_t *srclen)
{
	struct pd *p = u;
	struct sockaddr_in from = { 0 };
	long ret;

	pd_enter(p);
	ret = pd_recv_locked(p, fd, buf, len, flags, &from);
	if (ret >= 0 && src)
		pd_sin_out(&from, src, srclen);
	pd_leave(p);
	return pd_ret(ret);
}

static ssize_t pd_recv(void *u, int fd, void *buf, size_t len, int flags)
{
	return pd_recvfrom(u, fd, buf, len, flags, NULL, NULL);
}

static ssize_t pd_read(void *u, int fd, void *buf, size_t len)
{
	return pd_recvfrom(u, fd, buf, len, 0, NULL, NULL);
}

/* The bytes an iovec array holds; SIZE_MAX for a bad one. */
static size_t pd_iov_len(const struct iovec *iov, int n)
{
	size_t len = 0;

	if (n < 0 || (n && pd_bad_buf(iov, (size_t)n * sizeof(*iov))))
		return SIZE_MAX;
	for (int i = 0; i < n; i++) {
		if (pd_bad_buf(iov[i].iov_base, iov[i].iov_len))
			return SIZE_MAX;
		len += iov[i].iov_len;
	}
	return len;
}

/* Scatter and gather through one buffer: the native calls take one. */
static ssize_t pd_recviov(struct pd *p, int fd, const struct iovec *iov, int n, int flags,
			  struct sockaddr_in *from)
{
	size_t len = pd_iov_len(iov, n), off = 0;
	char *buf;
	long ret;

	if (len == SIZE_MAX)
		return -EFAULT;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	ret = pd_recv_locked(p, fd, buf, len, flags, from);
	for (int i = 0; ret > 0 && i < n && off < (size_t)ret; i++) {
		size_t c = iov[i].iov_len < (size_t)ret - off ? iov[i].iov_len : (size_t)ret - off;

		memcpy(iov[i].iov_base, buf + off, c);
		off += c;
	}
	free(buf);
	return ret;
}

static ssize_t pd_sendiov(struct pd *p, int fd, const struct iovec *iov, int n, int flags,
			  const struct sockaddr_in *to)
{
	size_t len = pd_iov_len(iov, n), off = 0;
	char *buf;
	long ret;

	if (len == SIZE_MAX)
		return -EFAULT;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		if (iov[i].iov_len)
			memcpy(buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	ret = pd_send_locked(p, fd, buf, len, flags, to);
	free(buf);
	return ret;
}

static ssize_t pd_readv(void *u, int fd, const struct iovec *iov, int n)
{
	struct pd *p = u;
	long ret;

	pd_enter(p);
	ret = pd_recviov(p, fd, iov, n, 0, NULL);
	pd_leave(p);
	return pd_ret(ret);
}

static ssize_t pd_recvmsg(void *u, int fd, struct msghdr *msg, int flags)
{
	struct pd *p = u;
	struct sockaddr_in from = { 0 };
	long ret;

	pd_enter(p);
	ret = pd_recviov(p, fd, msg->msg_iov, (int)msg->msg_iovlen, flags, &from);
	if (ret >= 0) {
		if (msg->msg_name) {
			socklen_t l = msg->msg_namelen;

			pd_sin_out(&from, msg->msg_name, &l);
			msg->msg_namelen = l;
		}
		msg->msg_controllen = 0;
		msg->msg_flags = 0;
	}
	pd_leave(p);
	return pd_ret(ret);
}

static ssize_t pd_sendto(void *u, int fd, const void *buf, size_t len, int flags,
			 const struct sockaddr *to, socklen_t tolen)
{
	struct pd *p = u;
	long ret;

	pd_enter(p);
	ret = to && !pd_sin(to, tolen) ? -EINVAL :
	      pd_send_locked(p, fd, buf, len, flags, pd_sin(to, tolen));
	pd_leave(p);
	return pd_ret(ret);
}

static ssize_t pd_send(void *u, int fd, const void *buf, size_t len, int flags)
{
	return pd_sendto(u, fd, buf, len, flags, NULL, 0);
}

static ssize_t pd_write(void *u, int fd, const void *buf, size_t len)
{
	return pd_sendto(u, fd, buf, len, 0, NULL, 0);
}

static ssize_t pd_writev(void *u, int fd, const struct iovec *iov, int n)
{
	struct pd *p = u;
	long ret;

	pd_enter(p);
	ret = pd_sendiov(p, fd, iov, n, 0, NULL);
	pd_leave(p);
	return pd_ret(ret);
}

static ssize_t pd_sendmsg(void *u, int fd, const struct msghdr *msg, int flags)
{
	struct pd *p = u;
	const struct sockaddr_in *to = pd_sin(msg->msg_name, msg->msg_namelen);
	long ret;

	pd_enter(p);
	if (msg->msg_controllen)
		ret = -EOPNOTSUPP;	/* no control message a TCP script sends is ours */
	else
		ret = msg->msg_name && !to ? -EINVAL :
		      pd_sendiov(p, fd, msg->msg_iov, (int)msg->msg_iovlen, flags, to);
	pd_leave(p);
	return pd_ret(ret);
}

static int pd_fcntl(void *u, int fd, int cmd, ...)
{
	struct pd *p = u;
	va_list ap;
	long arg;
	int ret;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	if (!f)
		ret = -EBADF;
	else if (cmd == F_GETFL)
		ret = O_RDWR | (f->nonblock ? O_NONBLOCK : 0);
	else if (cmd == F_SETFL)
		f->nonblock = arg & O_NONBLOCK, ret = 0;
	else if (cmd == F_GETFD || cmd == F_SETFD)
		ret = 0;
	else
		ret = -EINVAL;
	pd_leave(p);
	return (int)pd_ret(ret);
}

/* SIOCINQ / SIOCOUTQ / SIOCOUTQNSD, as Linux's tcp_ioctl() counts them,
 * and SIOCATMARK. */
static int pd_ioctl(void *u, int fd, unsigned long req, ...)
{
	struct pd *p = u;
	struct sl_stack *s = p->s;
	struct sl_sock *so;
	va_list ap;
	int *out, ret;

	va_start(ap, req);
	out = va_arg(ap, int *);
	va_end(ap);
	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	if (!f) {
		ret = -EBADF;
	} else if (req != SIOCINQ && req != SIOCOUTQ && req != SIOCOUTQNSD && req != SIOCATMARK) {
		ret = -ENOTTY;
	} else if (!(ret = sl_lock(s))) {
		so = sl_sock(s, f->sd);
		if (so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN)
			ret = -EINVAL;
		else if (req == SIOCATMARK)
			*out = so->type == SL_SOCK_TCP && sl_tcp_atmark(so);
		else if (req == SIOCINQ)
			*out = (int)(so->type == SL_SOCK_TCP ? sl_tcp_inq(so) : so->rxq_bytes);
		else if (so->type != SL_SOCK_TCP || so->state < SL_TCP_ESTABLISHED)
			*out = 0;
		else
			*out = (int)(so->tcp.snd_end - (req == SIOCOUTQ ? so->tcp.snd_una :
							so->tcp.snd_max));
		sl_unlock(s);
	}
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_close(void *u, int fd)
{
	struct pd *p = u;
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : sluice_close(p->st, f->sd);
	if (f) {
		f->used = false;
		close(f->real);
	}
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_shutdown(void *u, int fd, int how)
{
	struct pd *p = u;
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : sluice_shutdown(p->st, f->sd, how);
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_getsockopt(void *u, int fd, int level, int name, void *val, socklen_t *len)
{
	struct pd *p = u;
	unsigned int l = len ? *len : 0;
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : sluice_getsockopt(p->st, f->sd, level, name, val, &l);
	if (!ret && len)
		*len = l;
	pd_leave(p);
	return (int)pd_ret(ret);
}

static int pd_setsockopt(void *u, int fd, int level, int name, const void *val, socklen_t len)
{
	struct pd *p = u;
	int ret;

	pd_enter(p);
	struct pd_fd *f = pd_fd(p, fd);
	ret = !f ? -EBADF : sluice_setsockopt(p->st, f->sd, level, name, val, len);
	pd_leave(p);
	return (int)pd_ret(ret);
}

/* poll(): a timeout runs on the virtual clock. */
static int pd_poll(void *u, struct pollfd *fds, nfds_t n, int timeout)
{
	struct pd *p = u;
	uint64_t start;
	int ready;

	pd_enter(p);
	start = p->now_us;
	for (;;) {
		ready = 0;
		for (nfds_t i = 0; i < n; i++) {
			struct pd_fd *f = pd_fd(p, fds[i].fd);

			fds[i].revents = fds[i].fd < 0 ? 0 : !f ? POLLNVAL :
					 pd_events(p, f->sd, fds[i].events) &
					 (fds[i].events | POLLERR | POLLHUP | POLLNVAL);
			ready += fds[i].revents != 0;
		}
		if (ready || !timeout)
			break;
		if (!pd_block(p, start, timeout < 0 ? PD_WAIT_MAX_US : (uint64_t)timeout * 1000))
			break;
	}
	pd_leave(p);
	return ready;
}

/* A packet from the script, an IPv4 packet, into the stack. */
static int pd_netdev_send(void *u, const void *buf, size_t count)
{
	struct pd *p = u;
	struct sl_stack *s = p->s;
	uint32_t idx;
	int ret = -1;

	pd_enter(p);
	if (count <= s->buf_size - SL_HEADROOM && !sl_lock(s)) {
		idx = sl_buf_alloc(s);
		if (idx != SLUICE_IDX_NONE) {
			memcpy(sl_buf_data(s, idx), buf, count);
			sl_buf(s, idx)->len = (uint16_t)count;
			sl_ip_input(s, idx);
			ret = 0;
		}
		sl_unlock(s);
	}
	pd_leave(p);
	if (ret)
		fprintf(stderr, "sluice-pd: packet of %zu bytes not taken\n", count);
	return ret;
}

static void pd_debug_frame(const struct pd_frame *f)
{
	const uint8_t *d = f->data;
	char a[16], b[16];

	inet_ntop(AF_INET, d + 12, a, sizeof(a));
	inet_ntop(AF_INET, d + 16, b, sizeof(b));
	fprintf(stderr, "sluice-pd: %.6f out %s > %s proto %u len %u\n",
		f->at_us / 1e6, a, b, d[9], f->len);
}

/* The next packet the stack sends: the clock runs until one leaves. */
static int pd_netdev_receive(void *u, void *buf, size_t *count, long long *at_us)
{
	struct pd *p = u;
	uint64_t start;
	struct pd_frame *f;

	pd_enter(p);
	pd_run(p);
	start = p->now_us;
	while (!p->q_len && p->s->lib->timers_armed && pd_tick(p, start, PD_WAIT_MAX_US))
		;
	if (!p->q_len) {
		fprintf(stderr, "sluice-pd: no packet leaves the stack (%.3f s of virtual time, "
			"%s timer armed)\n", (p->now_us - start) / 1e6,
			p->s->lib->timers_armed ? "a" : "no");
		*count = 0;
		*at_us = (long long)p->now_us;
		pd_leave(p);
		return 0;
	}
	f = &p->q[p->q_head];
	p->q_head = (p->q_head + 1) % PD_QUEUE;
	p->q_len--;
	if (p->debug)
		pd_debug_frame(f);
	*count = f->len < *count ? f->len : *count;
	memcpy(buf, f->data, *count);
	*at_us = (long long)f->at_us;
	pd_leave(p);
	return 0;
}

static int pd_usleep(void *u, useconds_t us)
{
	struct pd *p = u;

	pthread_mutex_lock(&p->mu);
	if (pd_on_main(p))
		p->main_calls++;
	if (p->st)
		pd_advance_to(p, p->now_us + us);
	else
		p->now_us += us;
	pd_leave(p);
	return 0;
}

/* The clock; each look moves it a microsecond, so that packetdrill's
 * last spin before an event (it spins on gettimeofday the final few
 * microseconds) ends. */
static int pd_gettimeofday(void *u, struct timeval *tv, struct timezone *tz)
{
	struct pd *p = u;

	(void)tz;
	pthread_mutex_lock(&p->mu);
	if (pd_on_main(p))
		p->main_calls++;
	p->now_us++;
	tv->tv_sec = (time_t)(p->now_us / 1000000);
	tv->tv_usec = (suseconds_t)(p->now_us % 1000000);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* What Sluice has no native form of: epoll sets, pipes, splice. Scripts
 * that use them are not on tests/conformance/packetdrill.list. */
static int pd_epoll_create(void *u, int size)
{
	(void)u, (void)size;
	return (int)pd_ret(-ENOSYS);
}

static int pd_epoll_ctl(void *u, int epfd, int op, int fd, struct epoll_event *ev)
{
	(void)u, (void)epfd, (void)op, (void)fd, (void)ev;
	return (int)pd_ret(-ENOSYS);
}

static int pd_epoll_wait(void *u, int epfd, struct epoll_event *ev, int max, int timeout)
{
	(void)u, (void)epfd, (void)ev, (void)max, (void)timeout;
	return (int)pd_ret(-ENOSYS);
}

static int pd_pipe(void *u, int fds[2])
{
	(void)u, (void)fds;
	return (int)pd_ret(-ENOSYS);
}

static int pd_splice(void *u, int in, loff_t *off_in, int out, loff_t *off_out, size_t len,
		     unsigned int flags)
{
	(void)u, (void)in, (void)off_in, (void)out, (void)off_out, (void)len, (void)flags;
	return (int)pd_ret(-ENOSYS);
}

static void pd_free(void *u)
{
	struct pd *p = u;
	uint64_t v;

	if (p->q_dropped)
		fprintf(stderr, "sluice-pd: %llu outbound packets dropped (queue full)\n",
			(unsigned long long)p->q_dropped);
	if (p->st) {
		for (unsigned int i = 0; p->debug && i < SL_C_COUNT; i++)
			if (!sluice_stack_counter(p->st, sl_counter_names[i], &v) && v)
				fprintf(stderr, "sluice-pd: %s %llu\n", sl_counter_names[i],
					(unsigned long long)v);
		p->s->link = NULL;
		sluice_stack_close(p->st);
		sluice_stack_destroy(p->name);
	}
	free(p->q);
	pthread_cond_destroy(&p->changed);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static void pd_flags(struct pd *p, const char *flags, struct sluice_stack_config *cfg)
{
	char *copy = strdup(flags ? flags : ""), *save = NULL, *tok;

	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (!strncmp(tok, "ip=", 3)) {
			if (inet_pton(AF_INET, tok + 3, &cfg->ip_addr) != 1)
				pd_die("so_flags ip=", EINVAL);
		} else if (!strcmp(tok, "debug")) {
			p->debug = true;
		} else {
			fprintf(stderr, "sluice-pd: unknown so_flag %s\n", tok);
			exit(1);
		}
	}
	free(copy);
}

void packetdrill_interface_init(const char *flags, struct packetdrill_interface *ifc);

void packetdrill_interface_init(const char *flags, struct packetdrill_interface *ifc)
{
	struct pd *p = calloc(1, sizeof(*p));
	struct sluice_stack_config *cfg;

	if (!p || !(p->q = calloc(PD_QUEUE, sizeof(*p->q))))
		pd_die("calloc", ENOMEM);
	cfg = &p->cfg;
	cfg->max_sockets = 64;
	cfg->n_bufs = 4096;
	/* The scripts hand in segments larger than the MSS announced and than
	 * the 1,500-byte MTU (blocking-read's 2,040 bytes: a peer's GSO/GRO
	 * aggregate), which Linux takes. Sluice's links never deliver more
	 * than MTU + headroom, which a 2,048-byte buffer holds; this link
	 * stands for one that aggregates, so its buffers are 4,096 bytes (up
	 * to 4,032-byte packets), as a stack on a jumbo or IPoIB link has. */
	cfg->buf_size = 4096;
	inet_pton(AF_INET, "192.168.0.1", &cfg->ip_addr);
	inet_pton(AF_INET, "255.255.0.0", &cfg->ip_mask);
	pd_flags(p, flags, cfg);
	/* Off-link peers (192.0.2.1) go to a gateway; this link carries every
	 * packet to packetdrill whatever its next hop. */
	cfg->ip_gateway = (cfg->ip_addr & cfg->ip_mask) | htonl(0xfffe);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->changed, NULL);
	p->main = pthread_self();
	/* Any start will do; Linux's jiffies start far from zero too. */
	p->now_us = 1000000000ull;
	snprintf(p->name, sizeof(p->name), "pd-%d", (int)getpid());

	memset(ifc, 0, sizeof(*ifc));
	ifc->userdata = p;
	ifc->free = pd_free;
	ifc->socket = pd_socket;
	ifc->bind = pd_bind;
	ifc->listen = pd_listen;
	ifc->accept = pd_accept;
	ifc->connect = pd_connect;
	ifc->read = pd_read;
	ifc->readv = pd_readv;
	ifc->recv = pd_recv;
	ifc->recvfrom = pd_recvfrom;
	ifc->recvmsg = pd_recvmsg;
	ifc->write = pd_write;
	ifc->writev = pd_writev;
	ifc->send = pd_send;
	ifc->sendto = pd_sendto;
	ifc->sendmsg = pd_sendmsg;
	ifc->fcntl = pd_fcntl;
	ifc->ioctl = pd_ioctl;
	ifc->close = pd_close;
	ifc->shutdown = pd_shutdown;
	ifc->getsockopt = pd_getsockopt;
	ifc->setsockopt = pd_setsockopt;
	ifc->poll = pd_poll;
	ifc->netdev_send = pd_netdev_send;
	ifc->netdev_receive = pd_netdev_receive;
	ifc->usleep = pd_usleep;
	ifc->gettimeofday = pd_gettimeofday;
	ifc->epoll_create = pd_epoll_create;
	ifc->epoll_ctl = pd_epoll_ctl;
	ifc->epoll_wait = pd_epoll_wait;
	ifc->pipe = pd_pipe;
	ifc->splice = pd_splice;
}
