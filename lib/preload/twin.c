// SPDX-License-Identifier: BSD-2-Clause
/*
 * OS-backed listeners (issue 15): a stack's TCP socket bound to an address
 * the host's kernel also has (127.0.0.1, INADDR_ANY, ...) gets a *twin*, a
 * kernel TCP socket bound to the same address and port, and listening
 * when the stack socket listens.  A client whose socket is the kernel's (a
 * program not under Sluice, an AF_INET6 socket, one that fell back) then
 * reaches the server through the twin, and accept() hands it that
 * connection as a plain kernel fd.  The twin also holds the port in the
 * kernel, so a kernel bind() to a port a stack socket holds fails as it
 * would beside another kernel socket, and a stack bind() to a port a kernel
 * socket holds fails (the twin's bind decides, with the SO_REUSEADDR and
 * SO_REUSEPORT the program set before it; bind() to port 0 takes the
 * port the kernel chooses).
 *
 * Readiness: the twin is never put in the program's poll, select or epoll
 * sets, and a blocking accept() never sleeps on it.  Instead one thread of
 * the process (the watcher) sleeps in epoll_wait() on every twin of the
 * process, edge-triggered: a connection coming to a twin sets the
 * listener's SL_TF_OSREADY in the stack, under the lock, and wakes the
 * listener's waiters as a connection queued in the stack does
 * (sl_listen_os_ready(): the journal, wait channels, bells, one exclusive
 * sleeper).  So poll, select, epoll (level, edge, one-shot) and the
 * exclusive wake-one accept see "a connection waiting" on the listener
 * whichever side it is on, and a server whose clients are all in the
 * stack makes no system call more than before: accept() looks at the
 * twin only while SL_TF_OSREADY is set (it clears it, then accept4()s the
 * twin; a connection taken sets it again, as more may wait).
 *
 * fork() waits until a watcher just made has reached its function
 * (pl_twin_atfork_prepare()): a runtime that wraps thread start, as
 * AddressSanitizer does, takes locks of its own there (allocator, stack
 * depot) that it does not take around fork(), and a child forked in that
 * window inherits them held by a thread it does not have.  Its next thread,
 * or its next allocation of that size, then waits for ever: a
 * pre-forking server that forks right after listen() (epoll_et.py, under
 * the sanitized library) stopped mid-echo.
 *
 * Datagram twins (issues 15, 20): a UDP socket bound in the stack (or
 * bound here at its first send or connect(), pl_dgram_autobind()) has a
 * kernel UDP twin on the same address and port, in the watcher's set from
 * its bind.  A datagram coming to it sets the socket's udp.os_ready:
 * readable as a datagram queued in the stack, and recv takes it from the
 * twin once the stack's queue is empty (pl_twin_recv(), the sender's
 * address as the kernel gave it: IPv6 itself for a socket on ::).  A
 * datagram the stack has no socket for on this host goes out through the
 * twin (pl_twin_send(): sl_udp_sendto() says -EREMOTE); its ICMP errors
 * come back as EPOLLERR (udp.os_err: POLLERR, SO_ERROR).
 *
 * The twins and the watcher's epoll fd are the library's own fds: close()
 * says EBADF for them, close_range() leaves them, a dup2() onto one moves
 * it to another number first (pl_twin_lost()).  A forked child shares them
 * as it shares the listener, and starts a watcher of its own (on the same
 * epoll set) the first time it waits; the twin is closed when the last fd
 * of the listener in the process is (sock_release_now(), fdtable.c).
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

#define PL_TWIN_FDS	65536
#define PL_WATCH_EVS	32
#define PL_WATCH_STACK	(256 * 1024)
/* In a watched twin's epoll data, beside the socket: a datagram twin. */
#define PL_TWIN_DGRAM	0x80000000u
/* The epoll data's low half of the away timer (away.c), its process's
 * pid the high half: no socket's. */
#define PL_WATCH_TK	UINT32_MAX

/* Which fds are twins or the watcher's set (close() and dup2() ask).  The
 * low ones apart, with the fork page's data (SL_FORKDATA): a forked child
 * that closes the listener it inherited closes its twin, and clearing the
 * bit costs no page of its own. */
#define PL_TWIN_LOW	1024
static uint64_t own_low[PL_TWIN_LOW / 64] SL_FORKDATA;
static uint64_t own_high[(PL_TWIN_FDS - PL_TWIN_LOW) / 64];

static uint64_t *own_word(int fd)
{
	return fd < PL_TWIN_LOW ? &own_low[fd / 64] : &own_high[(fd - PL_TWIN_LOW) / 64];
}
static int watch_fd = -1;	/* the watcher's epoll set; kept across fork */
static pid_t watch_pid SL_FORKDATA;	/* the process whose watcher runs */
/* That watcher reached watch_main(), past its start (written by it). */
static bool watch_up;
/* Held across fork() (pl_twin_atfork_prepare()), so no watcher is made
 * while one is. */
static pthread_mutex_t watch_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;
static int twin_count SL_FORKDATA;	/* twins this process holds */
bool pl_twin_unwatched SL_FORKDATA;

static bool bit(int fd)
{
	return fd >= 0 && fd < PL_TWIN_FDS &&
	       (SL_READ_ONCE(*own_word(fd)) >> (fd % 64) & 1);
}

static void set_bit(int fd, bool on)
{
	uint64_t m = 1ull << (fd % 64);

	if (fd < 0 || fd >= PL_TWIN_FDS)
		return;
	if (on)
		sl_fetch_or(own_word(fd), m);
	else
		sl_fetch_and(own_word(fd), ~m);
}

bool pl_twin_is(int fd)
{
	return bit(fd);
}

/* May ps have a twin: a stream or datagram socket, on a stack in /dev/shm (a module's
 * stack keeps its ports in its filters: but pl_twin_usable_at()), outside a
 * sandbox. */
bool pl_twin_usable(const struct pl_sock *ps)
{
	struct sl_stack *s = pl_sl();

	return pl_cfg.kernel_listen && (ps->type == SOCK_STREAM || ps->type == SOCK_DGRAM) &&
	       !ps->kfd && s && !s->module_backed && !sl_sys_sandboxed;
}

/* May ps, on a module's stack, have a twin (below: pl_twin_usable_at(),
 * pl_twin_adopt())? */
static bool module_twin_usable(const struct pl_sock *ps)
{
	struct sl_stack *s = pl_sl();

	return pl_cfg.kernel_listen && (ps->type == SOCK_STREAM || ps->type == SOCK_DGRAM) &&
	       s && s->module_backed && !sl_sys_sandboxed;
}

/*
 * On a module's stack, a socket bound to a loopback address (any address
 * on a stack without a device) has a twin too, made here as on the host
 * path: 127/8 never reaches the module's
 * filters (the stack's own loopback carries it, sl_filter_take()), so
 * nothing held the port in the kernel, a kernel client was refused and a
 * kernel sender reached nothing.  Any other address is the module's: its
 * filter steers the port, and its reservation (a kernel socket bound
 * without SO_REUSEADDR) holds it, so no twin could bind there; the
 * reservation itself becomes the twin instead (pl_twin_adopt()), or, where
 * the module takes the program's own socket as the reservation, the twin
 * made here becomes the reservation (pl_twin_offer()).  The
 * socket is a module socket fd (ps->kfd): what the watcher sees goes out
 * as any event of the stack's (SL_TF_OSREADY, udp.os_ready, sl_kp_note()).
 */
bool pl_twin_usable_at(const struct pl_sock *ps, uint32_t laddr)
{
	if (pl_twin_usable(ps))
		return true;
	/* A module's stack without a device (no filters, no reservation:
	 * nothing holds any of its ports in the kernel): every address, as
	 * on the host path.  One whose module takes the program's own
	 * socket as the reservation (SLUICE_FEATURE_FILTER_SOCK): every
	 * address too; the twin made here, in the program's family and
	 * with its options before bind(), is offered to the filter the
	 * stack's bind() adds (pl_twin_offer()), and where none is added (a
	 * port another socket's filter holds, SO_REUSEPORT siblings; an
	 * IPv6-only socket) it stays a twin as on the host path. */
	return module_twin_usable(ps) &&
	       ((ntohl(laddr) >> 24) == 127 || !pl_sl()->filters ||
		(sl_module_features & SLUICE_FEATURE_FILTER_SOCK));
}

bool pl_twin_offer(struct pl_sock *ps, bool on)
{
	int fd = SL_READ_ONCE(ps->twin) - 1;
	bool taken = sl_filter_offer_taken;

	sl_filter_offer_taken = false;
	sl_filter_offer_fd = on && fd >= 0 && pl_sl()->module_backed ? fd : -1;
	if (on || !taken)
		return false;
	/* The port's reservation is the twin (as pl_twin_adopt()'s). */
	ps->twin_resv = true;
	pl_debug("socket %u: its kernel twin, fd %d, is the port's reservation", ps->sd, fd);
	return true;
}

/*
 * A module's stack: the port's reservation (the kernel socket the module
 * bound, with the program's credentials, where the stack's socket bound)
 * as the twin.  Kernel sockets of this host reach the port there, on
 * 127.0.0.1 for a socket on 0.0.0.0 and on the device's own address alike
 * (both are the kernel's loopback, which no filter sees); packets from
 * the device are the filter's, before IP.  The reservation holds the port
 * both ways as before.  After the stack's bind (the filter is made there),
 * so the options kept so far are set on it after its bind, not before:
 * SO_REUSEADDR and SO_REUSEPORT are the kernel's to judge only for binds
 * that come later.  An AF_INET6 socket has none (the reservation is an
 * AF_INET socket, whose addresses are not the program's form).
 */
void pl_twin_adopt(struct pl_sock *ps)
{
	int fd;

	if (SL_READ_ONCE(ps->twin) || ps->v6 || !module_twin_usable(ps))
		return;
	fd = sl_sys_fd_high(sl_port_twin_fd(pl_stack(), (int)ps->sd));
	if (fd < 0)
		return;	/* a loopback address, a shared port: as before */
	if (fd >= PL_TWIN_FDS) {
		REAL(close)(fd);
		return;
	}
	/* A stream twin never blocks (accept4() with the program's flags). */
	if (ps->type == SOCK_STREAM)
		REAL(fcntl)(fd, F_SETFL, O_NONBLOCK);
	pl_opts_to_kernel(fd, ps);
	set_bit(fd, true);
	sl_fetch_add(&twin_count, 1);
	ps->twin_resv = true;
	SL_WRITE_ONCE(ps->twin, fd + 1);
	pl_debug("socket %u: the port's reservation, fd %d, is its kernel twin", ps->sd, fd);
}

int pl_twin_bind(struct pl_sock *ps, struct sockaddr_in *sin)
{
	struct sockaddr_in6 got, at;
	socklen_t len = sizeof(got), alen;
	int fd, e;

	if (SL_READ_ONCE(ps->twin) || !pl_twin_usable_at(ps, sin->sin_addr.s_addr) ||
	    (SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->flags) & SL_SF_BOUND))
		return 0;	/* bound already: the stack says EINVAL */
	/* An AF_INET6 socket's twin is an AF_INET6 kernel socket bound as
	 * the program said (:: takes IPv6 clients too; IPV6_V6ONLY as the
	 * socket has it, pl_opts_to_kernel()). */
	/* A datagram twin blocks (its sends are the program's: a blocking
	 * socket's wait; reads never wait, MSG_DONTWAIT). */
	/* Above the program's numbers (os.h): bind() makes no fd on the
	 * kernel. */
	fd = sl_sys_fd_high(REAL(socket)(ps->v6 ? AF_INET6 : AF_INET,
					 ps->type | (ps->type == SOCK_STREAM ? SOCK_NONBLOCK : 0) |
					 SOCK_CLOEXEC, 0));
	if (fd < 0)
		return 0;	/* no twin: the stack alone, as before */
	if (fd >= PL_TWIN_FDS)
		goto none;
	/* The options set so far, before bind() (SO_REUSEADDR and
	 * SO_REUSEPORT decide there: Linux inet_csk_get_port()); later ones
	 * follow (pl_twin_setopt()). */
	pl_opts_to_kernel(fd, ps);
	alen = pl_addr_out(ps, sin, true, &at);
	if (REAL(bind)(fd, (const struct sockaddr *)&at, alen)) {
		e = errno;
		REAL(close)(fd);
		/* A kernel socket holds the port: as beside it.  Any other
		 * refusal (an address only the stack has, as a TAP link's; a
		 * port below 1024 for a user) leaves the stack's rules alone. */
		return e == EADDRINUSE ? -EADDRINUSE : 0;
	}
	if (!sin->sin_port) {
		if (REAL(getsockname)(fd, (struct sockaddr *)&got, &len))
			goto none;
		sin->sin_port = got.sin6_port;	/* the kernel's choice, for both */
	}
	set_bit(fd, true);
	sl_fetch_add(&twin_count, 1);
	SL_WRITE_ONCE(ps->twin, fd + 1);
	pl_debug("socket %u: kernel twin fd %d on port %u", ps->sd, fd,
		 (unsigned int)ntohs(sin->sin_port));
	return 0;
none:
	REAL(close)(fd);
	return 0;
}

void pl_twin_close(struct pl_sock *ps)
{
	int fd = sl_xchg(&ps->twin, 0) - 1;

	if (fd < 0)
		return;
	/* The stack sends alone again (a closed socket's generation has
	 * moved on: nothing is changed then). */
	if (ps->type == SOCK_DGRAM)
		sl_listen_os_ready(pl_stack(), (int)ps->sd, ps->gen, SL_OSR_NOTWIN);
	/* A module's reservation (pl_twin_adopt()) lives on while the
	 * port's filter does; a listener's stops listening when the stack's
	 * socket ends (sl_filter_release()), not here: another process may
	 * still hold the listener and this twin. */
	ps->twin_resv = false;
	set_bit(fd, false);
	REAL(close)(fd);
	sl_fetch_sub(&twin_count, 1);
	pl_debug("socket %u: kernel twin fd %d closed", ps->sd, fd);
}

int pl_twin_take(struct pl_sock *ps)
{
	int fd;

	/* Shut from listening once (in the watcher's set, and it may have
	 * let its port go): a fresh kernel socket is bound instead. */
	if (SL_READ_ONCE(ps->twin_shut)) {
		pl_twin_close(ps);
		return -1;
	}
	fd = sl_xchg(&ps->twin, 0) - 1;
	if (fd < 0)
		return -1;
	/* A datagram twin, or a listening one (an exec takes it,
	 * socket.c), is in the watcher's set: out of it first. */
	if ((ps->type == SOCK_DGRAM ||
	     SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state) == SL_TCP_LISTEN) &&
	    SL_READ_ONCE(watch_fd) >= 0)
		REAL(epoll_ctl)(SL_READ_ONCE(watch_fd), EPOLL_CTL_DEL, fd, NULL);
	set_bit(fd, false);
	sl_fetch_sub(&twin_count, 1);
	pl_debug("socket %u: kernel twin fd %d becomes the socket", ps->sd, fd);
	return fd;
}

/* ---- the watcher ---- */

static void watch_nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static void *watch_main(void *arg)
{
	struct epoll_event evs[PL_WATCH_EVS];
	struct sluice_stack *st = pl_stack();

	(void)arg;
	/* Its start is over (a runtime's, too): fork() may go on.  Release:
	 * pairs with the acquire in pl_twin_atfork_prepare(). */
	sl_store_release(&watch_up, true);
	for (;;) {
		int n = REAL(epoll_wait)(SL_READ_ONCE(watch_fd), evs, PL_WATCH_EVS, -1);

		if (n < 0) {
			/* A number moved under us (pl_twin_lost()): again. */
			if (errno != EINTR)
				watch_nap();
			continue;
		}
		/* Once the process is in a sandbox, nothing but the call it
		 * made before (its filter may allow no more). */
		if (sl_sys_sandboxed)
			continue;
		for (int i = 0; i < n; i++) {
			uint32_t lo = (uint32_t)evs[i].data.u64, gen = (uint32_t)(evs[i].data.u64 >> 32);
			int sd = (int)(lo & ~PL_TWIN_DGRAM);

			/* The away timer rang (away.c).  In a forked child
			 * that shares the set, its parent's: the edge is
			 * this watcher's, so it runs the due timers itself. */
			if (lo == PL_WATCH_TK) {
				struct sl_stack *s = (struct sl_stack *)st;

				if (gen == (uint32_t)sl_self_pid())
					pl_away_agent_ring(s, pl_away_agent_fd(s));
				else
					sl_tk_ring_other(s);
				continue;
			}

			/* A datagram twin's error (an ICMP error for its
			 * peer): the socket polls POLLERR, as Linux's. */
			if ((lo & PL_TWIN_DGRAM) && (evs[i].events & EPOLLERR))
				sl_listen_os_ready(st, sd, gen, SL_OSR_ERR);
			/* An error alone is no datagram: not readable. */
			if (!(lo & PL_TWIN_DGRAM) || (evs[i].events & EPOLLIN))
				sl_listen_os_ready(st, sd, gen, SL_OSR_EDGE);
		}
	}
	return NULL;
}

/* Make sure this process has a watcher thread (watch_mu held). */
static void watch_start_locked(void)
{
	pid_t self = sl_self_pid();
	int fd;

	if (watch_pid == self || sl_sys_sandboxed)
		return;
	if (watch_fd < 0) {
		fd = sl_sys_fd_high(REAL(epoll_create1)(EPOLL_CLOEXEC));
		if (fd < 0)
			return;
		if (fd >= PL_TWIN_FDS) {
			REAL(close)(fd);
			return;
		}
		set_bit(fd, true);
		SL_WRITE_ONCE(watch_fd, fd);
	}
	SL_WRITE_ONCE(watch_up, false);
	if (!pl_thread_quiet(watch_main, NULL, PL_WATCH_STACK, NULL))
		watch_pid = self;
}

void pl_twin_watch(void)
{
	SL_WRITE_ONCE(pl_twin_unwatched, false);
	/* A child that closed the listeners it inherited (a forking
	 * server's worker: PostgreSQL's backends close the postmaster's
	 * at once) has nothing to watch: no thread for it. */
	if (sl_sys_sandboxed || !SL_READ_ONCE(twin_count))
		return;
	pthread_mutex_lock(&watch_mu);
	watch_start_locked();
	pthread_mutex_unlock(&watch_mu);
}

int pl_twin_listen(struct pl_sock *ps, int backlog)
{
	int fd = SL_READ_ONCE(ps->twin) - 1;
	struct sockaddr_in me;
	struct sockaddr_in6 at;

	if (fd < 0)
		return 0;
	/* A listener shut for reading lets go of a port the kernel chose
	 * (Linux's tcp_set_state(TCP_CLOSE) without SOCK_BINDPORT_LOCK:
	 * getsockname() still shows it, listen() would pick another); the
	 * stack kept it.  Listening again, the twin takes it back (EINVAL:
	 * it had kept it, bound by the program's own port), or there is no
	 * twin any more. */
	if (SL_READ_ONCE(ps->twin_shut)) {
		SL_WRITE_ONCE(ps->twin_shut, false);
		if (sluice_getsockname(pl_stack(), (int)ps->sd, &me) ||
		    (REAL(bind)(fd, (const struct sockaddr *)&at, pl_addr_out(ps, &me, true, &at)) &&
		     errno != EINVAL)) {
			pl_twin_close(ps);
			return 0;
		}
	}
	if (REAL(listen)(fd, backlog)) {
		int e = errno;

		/* Another kernel socket listens there (both SO_REUSEADDR:
		 * the binds were allowed, listen() is not). */
		if (e == EADDRINUSE)
			return -EADDRINUSE;
		pl_twin_close(ps);
	}
	return 0;
}

int pl_twin_watch_tk(int fd)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLET,
		.data.u64 = (uint64_t)(uint32_t)sl_self_pid() << 32 | PL_WATCH_TK,
	};
	bool ok;

	if (fd < 0)
		return 0;
	/* (Held across a fork, perhaps by this very thread.) */
	if (pthread_mutex_trylock(&watch_mu))
		return -1;
	ok = watch_pid == sl_self_pid() && SL_READ_ONCE(watch_fd) >= 0 &&
	     !REAL(epoll_ctl)(watch_fd, EPOLL_CTL_ADD, fd, &ev);
	pthread_mutex_unlock(&watch_mu);
	return ok;
}

void pl_twin_listening(struct pl_sock *ps)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLET,
		.data.u64 = (uint64_t)ps->gen << 32 | ps->sd |
			    (ps->type == SOCK_DGRAM ? PL_TWIN_DGRAM : 0),
	};
	int fd = SL_READ_ONCE(ps->twin) - 1;

	if (fd < 0)
		return;
	pthread_mutex_lock(&watch_mu);
	watch_start_locked();
	if (watch_pid != sl_self_pid() ||
	    (REAL(epoll_ctl)(watch_fd, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)) {
		pthread_mutex_unlock(&watch_mu);
		/* Nobody would see its connections: no twin then. */
		REAL(shutdown)(fd, SHUT_RD);
		pl_twin_close(ps);
		return;
	}
	/* (Connections already queued, after a listen() again: an item
	 * added to an epoll set reports what is ready at once.) */
	pthread_mutex_unlock(&watch_mu);
	if (ps->type == SOCK_DGRAM)
		sl_listen_os_ready(pl_stack(), (int)ps->sd, ps->gen, SL_OSR_TWIN);
}

void pl_twin_stop(struct pl_sock *ps)
{
	int fd = SL_READ_ONCE(ps->twin) - 1;

	if (fd >= 0 && !REAL(shutdown)(fd, SHUT_RD))	/* stops listening */
		SL_WRITE_ONCE(ps->twin_shut, true);
}

int pl_twin_accept(struct pl_sock *ps, struct sockaddr *addr, socklen_t *lenp, int flags)
{
	struct sluice_stack *st = pl_stack();
	int fd, tw, e = EAGAIN;

	if (!(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->tcp.tflags) & SL_TF_OSREADY))
		return -EAGAIN;
	pl_call_begin(ps);	/* the twin stays open until this ends */
	tw = SL_READ_ONCE(ps->twin) - 1;
	if (tw >= 0) {
		/* Cleared first: a connection that comes after the kernel's
		 * answer sets it again (the watcher). */
		sl_listen_os_ready(st, (int)ps->sd, ps->gen, SL_OSR_CLEAR);
		fd = REAL(accept4)(tw, addr, lenp, flags);
		e = fd < 0 ? errno : 0;
		if (e != EAGAIN && e != EWOULDBLOCK)
			/* One taken (more may wait), or an error the next
			 * accept() is to see again, as the kernel's. */
			sl_listen_os_ready(st, (int)ps->sd, ps->gen, SL_OSR_MORE);
		if (fd >= 0)
			pl_debug("socket %u: connection fd %d from the kernel twin", ps->sd, fd);
	}
	pl_call_end(ps);
	if (!e)
		return fd;
	return e == EWOULDBLOCK ? -EAGAIN : -e;
}

/* What the kernel said of a datagram (the cmsgs its twin was asked for,
 * as the program asked the socket) in the stack's terms. */
static void twin_meta(struct msghdr *mh, struct sl_rx_meta *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			m->daddr = pi.ipi_addr.s_addr;
			m->ifindex = (uint32_t)pi.ipi_ifindex;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			int ttl;

			memcpy(&ttl, CMSG_DATA(c), sizeof(ttl));
			m->ttl = (uint8_t)ttl;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			m->tos = *CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_ORIGDSTADDR) {
			struct sockaddr_in o;

			memcpy(&o, CMSG_DATA(c), sizeof(o));
			m->daddr = o.sin_addr.s_addr;
			m->dport = o.sin_port;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMP) {
			struct timeval tv;

			memcpy(&tv, CMSG_DATA(c), sizeof(tv));
			/* The stack's clock, as its own datagrams' stamps. */
			m->stamp_us = (uint64_t)((int64_t)tv.tv_sec * 1000000 + tv.tv_usec -
						 pl_stamp_real_us(0));
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
			struct timespec ts;

			/* The twin took SO_TIMESTAMPNS with the socket. */
			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			m->stamp_us = (uint64_t)((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 -
						 pl_stamp_real_us(0));
		}
	}
}

/* The IPv6 sender of the last datagram this thread took from a twin. */
static __thread struct sockaddr_in6 from6;

int pl_twin_from6(struct sockaddr *a, socklen_t *lenp)
{
	return pl_put_raw(&from6, sizeof(from6), a, lenp);
}

/* The twin's error taken: POLLERR goes unless its error queue still
 * holds one (Linux datagram_poll(): EPOLLERR while the queue is not
 * empty, whatever SO_ERROR says).  Taken by reading that queue, the next
 * error queued is the pending one again (sock_dequeue_err_skb()). */
static void err_taken(struct pl_sock *ps, int fd, bool errq)
{
	struct pollfd p = { .fd = fd, .events = 0 };
	bool more = REAL(poll)(&p, 1, 0) == 1 && (p.revents & POLLERR);

	sl_listen_os_ready(pl_stack(), (int)ps->sd, ps->gen,
			   !more ? SL_OSR_ERRTAKEN : errq ? SL_OSR_ERR : SL_OSR_ERRQ);
}

ssize_t pl_twin_recv(struct pl_sock *ps, void *buf, size_t len, int flags,
		     struct sockaddr_in *from, struct sl_rx_meta *meta)
{
	struct sluice_stack *st = pl_stack();
	union {
		struct cmsghdr h;
		uint8_t b[256];
	} ctl;
	struct sockaddr_in6 a;
	struct iovec iov = { buf, len };
	struct msghdr mh = {
		.msg_name = &a, .msg_namelen = sizeof(a), .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = meta ? ctl.b : NULL, .msg_controllen = meta ? sizeof(ctl) : 0,
	};
	ssize_t n = -1;
	int tw, e = EAGAIN;

	/* A datagram there, or its pending error (os_err 1). */
	if (!SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->udp.os_ready) &&
	    SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->udp.os_err) != 1)
		return -EAGAIN;
	pl_call_begin(ps);	/* the twin stays open until this ends */
	tw = SL_READ_ONCE(ps->twin) - 1;
	if (tw >= 0) {
		/* Cleared first: a datagram that comes after the kernel's
		 * answer sets it again (the watcher). */
		sl_listen_os_ready(st, (int)ps->sd, ps->gen, SL_OSR_CLEAR);
		n = REAL(recvmsg)(tw, &mh, (flags & (MSG_PEEK | MSG_TRUNC)) | MSG_DONTWAIT);
		e = n < 0 ? errno : 0;
		if (e && e != EAGAIN && e != EWOULDBLOCK)	/* its error, taken */
			err_taken(ps, tw, false);
		/* Readable again only if another waits there (one more call;
		 * a datagram coming later brings its own edge): a poll that
		 * says POLLIN must not send a blocking recv to sleep. */
		if (e != EAGAIN && e != EWOULDBLOCK &&
		    ((flags & MSG_PEEK) || REAL(recv)(tw, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT) >= 0))
			sl_listen_os_ready(st, (int)ps->sd, ps->gen, SL_OSR_MORE);
	}
	pl_call_end(ps);
	if (e)
		return e == EWOULDBLOCK ? -EAGAIN : -e;
	if (from) {
		memset(from, 0, sizeof(*from));
		from->sin_family = AF_INET;
		if (a.sin6_family == AF_INET6 && !IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)) {
			/* IPv6 itself (a socket on ::): kept for put_from(),
			 * which AF_INET6 here sends to pl_twin_from6(). */
			from->sin_family = AF_INET6;
			from6 = a;
		} else if (a.sin6_family == AF_INET6) {
			/* A v4-mapped sender (an IPv6 twin hears IPv4 so). */
			from->sin_port = a.sin6_port;
			memcpy(&from->sin_addr, &a.sin6_addr.s6_addr[12], 4);
		} else {
			memcpy(from, &a, sizeof(*from));
		}
	}
	if (meta)
		twin_meta(&mh, meta);
	return n;
}

ssize_t pl_twin_send(struct pl_sock *ps, const void *buf, size_t len, int flags,
		     const struct sockaddr_in *to)
{
	struct sockaddr_in6 at;
	ssize_t n = -1;
	int fd, e = ENETUNREACH;

	pl_call_begin(ps);
	fd = SL_READ_ONCE(ps->twin) - 1;
	if (fd >= 0) {
		if (SL_READ_ONCE(ps->nonblock))
			flags |= MSG_DONTWAIT;
		n = to ? REAL(sendto)(fd, buf, len, flags | MSG_NOSIGNAL,
				      (const struct sockaddr *)&at, pl_addr_out(ps, to, false, &at)) :
			 REAL(send)(fd, buf, len, flags | MSG_NOSIGNAL);
		e = n < 0 ? errno : 0;
		/* A pending error is a send's too (and taken by it). */
		if (e && e != EAGAIN && e != EWOULDBLOCK &&
		    SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->udp.os_err))
			err_taken(ps, fd, false);
	}
	pl_call_end(ps);
	if (fd < 0)
		return -ENOTUNIQ;	/* none in this process: the stack's way */
	return e ? -e : n;
}

ssize_t pl_twin_sendmsg6(struct pl_sock *ps, const struct msghdr *msg, int flags)
{
	ssize_t n = -1;
	int fd, e = ENETUNREACH;

	pl_call_begin(ps);
	fd = SL_READ_ONCE(ps->twin) - 1;
	if (fd >= 0) {
		if (SL_READ_ONCE(ps->nonblock))
			flags |= MSG_DONTWAIT;
		n = REAL(sendmsg)(fd, msg, flags | MSG_NOSIGNAL);
		e = n < 0 ? errno : 0;
	}
	pl_call_end(ps);
	return e ? -e : n;
}

int pl_twin_error(struct pl_sock *ps)
{
	int fd, e = 0;
	socklen_t l = sizeof(e);

	if (!SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->udp.os_err))
		return 0;
	pl_call_begin(ps);
	fd = SL_READ_ONCE(ps->twin) - 1;
	if (fd >= 0 && !REAL(getsockopt)(fd, SOL_SOCKET, SO_ERROR, &e, &l))
		err_taken(ps, fd, false);
	pl_call_end(ps);
	return e;
}

ssize_t pl_twin_errq(struct pl_sock *ps, struct msghdr *msg, int flags)
{
	ssize_t n = -1;
	int fd, e = EAGAIN;

	if (ps->type != SOCK_DGRAM || !SL_READ_ONCE(ps->twin))
		return -EAGAIN;
	pl_call_begin(ps);
	fd = SL_READ_ONCE(ps->twin) - 1;
	if (fd >= 0) {
		n = REAL(recvmsg)(fd, msg, flags | MSG_ERRQUEUE | MSG_DONTWAIT);
		e = n < 0 ? errno : 0;
		if (!e)
			err_taken(ps, fd, true);
	}
	pl_call_end(ps);
	return e ? (e == EWOULDBLOCK ? -EAGAIN : -e) : n;
}

void pl_twin_connect(struct pl_sock *ps, const struct sockaddr_in *to)
{
	int fd = SL_READ_ONCE(ps->twin) - 1;
	struct sockaddr_in6 at;
	struct sockaddr un = { .sa_family = AF_UNSPEC };
	int saved = errno;

	if (fd < 0)
		return;
	/* Its peer, as the stack's: a connected socket hears only it (and
	 * AF_UNSPEC forgets it). */
	if (to->sin_family == AF_UNSPEC)
		REAL(connect)(fd, &un, sizeof(un));
	else if (REAL(connect)(fd, (const struct sockaddr *)&at, pl_addr_out(ps, to, false, &at)))
		pl_twin_close(ps);
	/* The kernel's refusal (ENETUNREACH where it has no route to the
	 * peer: no loopback in the namespace) is not the call's, which
	 * the stack answered. */
	errno = saved;
}

void pl_twin_setopt(struct pl_sock *ps, int level, int name, const void *val, socklen_t len)
{
	int fd = SL_READ_ONCE(ps->twin) - 1;
	uint8_t st;

	if (fd < 0)
		return;
	/* A bound or listening socket only: one that connected (after an
	 * explicit bind()) pays no system call more for its options.  A
	 * datagram twin takes them all (what it is told of each datagram,
	 * IP_PKTINFO, IP_RECVTTL, SO_TIMESTAMP..., is what pl_twin_recv()
	 * passes on). */
	st = SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state);
	if (ps->type == SOCK_DGRAM || st == SL_TCP_LISTEN || st == SL_TCP_CLOSED)
		REAL(setsockopt)(fd, level, name, val, len);	/* the stack's answer stands */
}

void pl_twin_lost(int fd)
{
	int nfd;

	if (!bit(fd))
		return;
	/* Its number is being taken (dup2): the file goes on under another,
	 * so the twin keeps its port and queue, and the watcher's set its
	 * items (an epoll item lives as long as its file). */
	nfd = sl_sys_dup_high(fd);
	if (nfd < 0)
		nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0);
	if (nfd >= PL_TWIN_FDS) {
		REAL(close)(nfd);
		nfd = -1;
	}
	set_bit(fd, false);
	if (nfd >= 0)
		set_bit(nfd, true);
	pthread_mutex_lock(&watch_mu);
	if (fd == watch_fd) {
		SL_WRITE_ONCE(watch_fd, nfd);
		if (nfd < 0)
			watch_pid = 0;
		pthread_mutex_unlock(&watch_mu);
		return;
	}
	pthread_mutex_unlock(&watch_mu);
	if (!pl_fd_twin_moved(fd, nfd)) {
		if (nfd >= 0) {
			set_bit(nfd, false);
			REAL(close)(nfd);
		}
	} else if (nfd < 0) {
		sl_fetch_sub(&twin_count, 1);	/* gone with its number */
	}
}

/* How long fork() waits for a watcher's start, at most (in naps of 0.1
 * ms): a runtime that takes its own locks before fork() runs these
 * handlers (one that intercepts fork() itself) keeps the thread from
 * starting until the fork is over; it needs no wait, and gets this one,
 * once, then the fork as before. */
#define PL_WATCH_START_WAIT_MS	1000

void pl_twin_atfork_prepare(void)
{
	pthread_mutex_lock(&watch_mu);
	if (watch_pid != sl_self_pid())
		return;	/* no watcher here (a forked child's comes at its first wait) */
	for (int i = 0; !sl_load_acquire(&watch_up) && i < PL_WATCH_START_WAIT_MS * 10; i++) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

void pl_twin_atfork_parent(void)
{
	pthread_mutex_unlock(&watch_mu);
}

SL_FORKTEXT void pl_twin_atfork_child(void)
{
	/* Held by the thread that forked, which is this one. */
	pthread_mutex_init(&watch_mu, NULL);
	/* The parent's watcher is not here: the child starts its own when
	 * it first waits (on the same epoll set, which it shares). */
	watch_pid = 0;
	SL_WRITE_ONCE(pl_twin_unwatched, SL_READ_ONCE(twin_count) > 0);
}
