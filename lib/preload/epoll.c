// SPDX-License-Identifier: BSD-2-Clause
/*
 * epoll with Sluice and kernel fds in one set: epoll_create, epoll_create1,
 * epoll_ctl, epoll_wait, epoll_pwait, epoll_pwait2.  With the module's
 * socket fds the kernel's epoll does the work (ep_wait_kfd() below);
 * without the module:
 *
 * The epoll fd is a real one and holds the kernel fds.  The Sluice fds of
 * a set are kept here, in an interest list per epoll fd; epoll_wait looks
 * at them (one sluice_poll() over the list), then asks the real epoll with
 * a zero timeout, spinning for SLUICE_SPIN_US and then sleeping in slices
 * of PL_SLICE_MS on the side that was busy last (the stack, or the real
 * epoll_wait), looking at the other side after each slice.  Level-triggered
 * by default; EPOLLET reports a socket again only after its readiness changed (the
 * socket's wake sequence moved); EPOLLONESHOT disables the entry after one
 * report until EPOLL_CTL_MOD.  Limits: a set dup()ed or inherited by
 * fork shares the kernel part but each process keeps its own Sluice
 * part; a Sluice fd in a set is forgotten when that fd is closed, even if
 * a dup of it stays open; epoll fds above PL_EP_MAX hold kernel fds only
 * (adding a Sluice fd fails with ENOMEM); EPOLLEXCLUSIVE and
 * EPOLLWAKEUP are accepted and ignored.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"

#define EXPORT __attribute__((visibility("default")))
#define PL_EP_MAX	4096
#define PL_SLICE_MS	1

struct pl_epitem {
	int fd;
	uint32_t sd, gen;
	struct epoll_event ev;
	uint32_t seen_seq;	/* EPOLLET: wake sequence at the last report */
	uint32_t seen_mask;
	bool disabled;		/* EPOLLONESHOT fired */
};

/* A module socket fd of a set, for the spin's look at the region. */
struct pl_kitem {
	int fd;
	uint32_t sd;
	uint32_t mask;		/* events asked for, ERR and HUP always */
};

struct pl_ep {
	pthread_mutex_t mu;
	unsigned int n, cap;
	struct pl_epitem *items;
	unsigned int kn, kcap;	/* module socket fds (hints only: see ep_wait_kfd()) */
	struct pl_kitem *kitems;
	bool kfd;		/* the set ever held a module socket fd */
};

static struct pl_ep *eps[PL_EP_MAX];
static pthread_mutex_t eps_mu = PTHREAD_MUTEX_INITIALIZER;

static struct pl_ep *ep_of(int epfd)
{
	if (epfd < 0 || epfd >= PL_EP_MAX)
		return NULL;
	return sl_load_acquire(&eps[epfd]);
}

bool pl_epoll_is_emulated(int epfd)
{
	return ep_of(epfd) != NULL;
}

/* Remove fd from the set's module socket fds; ep->mu held. */
static void ep_kforget(struct pl_ep *ep, int fd)
{
	for (unsigned int i = 0; i < ep->kn; i++)
		if (ep->kitems[i].fd == fd) {
			ep->kitems[i] = ep->kitems[--ep->kn];
			return;
		}
}

void pl_epoll_close(int epfd)
{
	struct pl_ep *ep;

	if (epfd < 0 || epfd >= PL_EP_MAX)
		return;
	pthread_mutex_lock(&eps_mu);
	ep = eps[epfd];
	sl_store_release(&eps[epfd], NULL);
	pthread_mutex_unlock(&eps_mu);
	/* A thread still waiting on it keeps going on freed memory in the
	 * kernel too (its epoll fd is gone): the same undefined case. */
	if (ep) {
		free(ep->items);
		free(ep->kitems);
		free(ep);
	}
}

void pl_epoll_forget_fd(int fd)
{
	for (int e = 0; e < PL_EP_MAX; e++) {
		struct pl_ep *ep = ep_of(e);

		if (!ep)
			continue;
		pthread_mutex_lock(&ep->mu);
		for (unsigned int i = 0; i < ep->n; i++)
			if (ep->items[i].fd == fd) {
				ep->items[i] = ep->items[--ep->n];
				break;
			}
		ep_kforget(ep, fd);
		pthread_mutex_unlock(&ep->mu);
	}
}

void pl_epoll_to_kernel(int fd)
{
	for (int e = 0; e < PL_EP_MAX; e++) {
		struct pl_ep *ep = ep_of(e);

		if (!ep)
			continue;
		pthread_mutex_lock(&ep->mu);
		for (unsigned int i = 0; i < ep->n; i++)
			if (ep->items[i].fd == fd) {
				struct epoll_event ev = ep->items[i].ev;

				ep->items[i] = ep->items[--ep->n];
				/* Now a kernel socket: the real set watches it. */
				REAL(epoll_ctl)(e, EPOLL_CTL_ADD, fd, &ev);
				break;
			}
		pthread_mutex_unlock(&ep->mu);
	}
}

static struct pl_ep *ep_get_or_make(int epfd)
{
	struct pl_ep *ep;

	if (epfd < 0 || epfd >= PL_EP_MAX)
		return NULL;
	pthread_mutex_lock(&eps_mu);
	ep = eps[epfd];
	if (!ep) {
		ep = calloc(1, sizeof(*ep));
		if (ep) {
			pthread_mutex_init(&ep->mu, NULL);
			sl_store_release(&eps[epfd], ep);
		}
	}
	pthread_mutex_unlock(&eps_mu);
	return ep;
}

static int ep_ctl(struct pl_ep *ep, int op, int fd, struct pl_sock *ps, struct epoll_event *ev)
{
	struct pl_epitem *it = NULL;
	unsigned int i;

	for (i = 0; i < ep->n; i++)
		if (ep->items[i].fd == fd) {
			it = &ep->items[i];
			break;
		}
	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	switch (op) {
	case EPOLL_CTL_ADD:
		if (it)
			return -EEXIST;
		if (ep->n == ep->cap) {
			unsigned int cap = ep->cap ? ep->cap * 2 : 16;
			struct pl_epitem *ni = realloc(ep->items, cap * sizeof(*ni));

			if (!ni)
				return -ENOMEM;
			ep->items = ni;
			ep->cap = cap;
		}
		it = &ep->items[ep->n++];
		memset(it, 0, sizeof(*it));
		it->fd = fd;
		it->sd = ps->sd;
		it->gen = ps->gen;
		it->ev = *ev;
		it->seen_seq = (uint32_t)-1;
		return 0;
	case EPOLL_CTL_MOD:
		if (!it)
			return -ENOENT;
		it->ev = *ev;
		it->disabled = false;
		it->seen_seq = (uint32_t)-1;
		return 0;
	case EPOLL_CTL_DEL:
		if (!it)
			return -ENOENT;
		*it = ep->items[--ep->n];
		return 0;
	}
	return -EINVAL;
}

/*
 * Module socket fds go into the real epoll set like any fd: the kernel
 * does the set's work (level, edge, one-shot, exclusive, sharing across
 * dup and fork).  The library runs the stack while the program waits,
 * and while spinning looks at the events the stack published in the
 * region for the set's socket fds (ep->kitems, kept by epoll_ctl): the
 * real epoll_wait is asked only when one shows something or every
 * PL_EP_KPEEK rounds (the set's kernel fds, or socket fds this list
 * missed); then it sleeps in the kernel.
 */
#define PL_EP_KPEEK	16

static bool ep_khint(struct pl_ep *ep)
{
	struct sl_stack *s = pl_sl();
	bool hint = false;

	pthread_mutex_lock(&ep->mu);
	for (unsigned int i = 0; !hint && i < ep->kn; i++)
		if (ep->kitems[i].sd < s->r->max_sockets)
			hint = SL_READ_ONCE(sl_sock(s, ep->kitems[i].sd)->kp.events) &
			       ep->kitems[i].mask;
	pthread_mutex_unlock(&ep->mu);
	return hint;
}

static int ep_wait_kfd(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max,
		       int timeout_ms)
{
	struct pollfd p = { .fd = epfd, .events = POLLIN };
	struct pl_waiter w;
	unsigned int sigs, round = 0;
	int k, sleep_ms = 1;

	if (max <= 0)
		return -EINVAL;
	pl_waiter_init(&w, timeout_ms);
	sigs = pl_sig_count();
	for (;;) {
		/* Runs the link and the timers if nobody else is (the unlock
		 * publishes what changed to the socket fds). */
		sluice_stack_poll(pl_stack());
		if (sleep_ms || !(round++ % PL_EP_KPEEK) || ep_khint(ep)) {
			k = REAL(epoll_wait)(epfd, evs, max, 0);
			if (k)
				return k < 0 ? -errno : k;
		}
		if (!pl_waiter_next(&w, &sleep_ms))
			return 0;
		if (sleep_ms) {
			/* An epoll fd polls readable when its set has events. */
			pl_kfd_sleep(&p, 1, pl_kfd_slice(&w));
		} else {
			for (int i = 0; i < 16; i++)
				__builtin_ia32_pause();
		}
		if (pl_sig_count() != sigs) {
			pl_sig_take_restart();
			return -EINTR;	/* epoll_wait is never restarted */
		}
	}
}

/* Keep ep->kitems in step with a successful epoll_ctl on socket fd fd. */
static void ep_kctl(struct pl_ep *ep, int op, int fd, struct pl_sock *ps,
		    const struct epoll_event *ev)
{
	uint32_t mask = ev ? (ev->events & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP)) |
			     EPOLLERR | EPOLLHUP : 0;
	struct pl_kitem *it = NULL;

	pthread_mutex_lock(&ep->mu);
	SL_WRITE_ONCE(ep->kfd, true);
	for (unsigned int i = 0; i < ep->kn; i++)
		if (ep->kitems[i].fd == fd)
			it = &ep->kitems[i];
	if (op == EPOLL_CTL_DEL) {
		ep_kforget(ep, fd);
	} else if (it) {
		it->mask = mask;
	} else if (op == EPOLL_CTL_ADD) {
		if (ep->kn == ep->kcap) {
			unsigned int cap = ep->kcap ? ep->kcap * 2 : 16;
			struct pl_kitem *ni = realloc(ep->kitems, cap * sizeof(*ni));

			if (!ni)
				goto out;	/* a hint less: seen every PL_EP_KPEEK rounds */
			ep->kitems = ni;
			ep->kcap = cap;
		}
		ep->kitems[ep->kn++] = (struct pl_kitem){ .fd = fd, .sd = ps->sd, .mask = mask };
	}
out:
	pthread_mutex_unlock(&ep->mu);
}

static struct pl_ep *ep_kfd_set(int epfd)
{
	struct pl_ep *ep = ep_of(epfd);

	return ep && SL_READ_ONCE(ep->kfd) &&
	       !SL_READ_ONCE(ep->n) ? ep : NULL;
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct pl_sock *ps = pl_get(fd);
	struct pl_ep *ep;
	int ret;

	if (ps && ps->kfd) {
		ret = REAL(epoll_ctl)(epfd, op, fd, ev);
		if (!ret && (ep = ep_get_or_make(epfd)))
			ep_kctl(ep, op, fd, ps, ev);
		pl_put(ps);
		return ret;
	}
	if (!ps)
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	if (epfd == fd) {
		ret = -EINVAL;
	} else if (REAL(fcntl)(epfd, F_GETFD) < 0) {
		ret = -EBADF;
	} else if (!(ep = ep_get_or_make(epfd))) {
		ret = -ENOMEM;
	} else {
		pthread_mutex_lock(&ep->mu);
		ret = ep_ctl(ep, op, fd, ps, ev);
		pthread_mutex_unlock(&ep->mu);
	}
	pl_put(ps);
	return (int)pl_ret(ret);
}

/* The Sluice part: fill out[] with up to max events; returns the count. */
static int ep_collect(struct pl_ep *ep, struct epoll_event *out, int max)
{
	struct sluice_pollfd pbuf[64], *p = pbuf;
	struct sl_stack *s = pl_sl();
	int got = 0, ret;
	unsigned int n;

	pthread_mutex_lock(&ep->mu);
	n = ep->n;
	if (!n || !s)
		goto out;
	if (n > 64 && !(p = malloc(n * sizeof(*p))))
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		struct pl_epitem *it = &ep->items[i];

		p[i].sd = it->disabled ? -1 : (int)it->sd;
		p[i].events = (short)(it->ev.events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI));
	}
	ret = sluice_poll(pl_stack(), p, n, 0);
	for (unsigned int i = 0; ret > 0 && i < n && got < max; i++) {
		struct pl_epitem *it = &ep->items[i];
		uint32_t rev = (uint32_t)(uint16_t)p[i].revents, seq;

		if (it->disabled || !rev)
			continue;
		if (rev & POLLNVAL)
			continue;	/* closed under us: nothing to report */
		seq = sl_sock(s, it->sd)->wake_seq;
		if ((it->ev.events & EPOLLET) && seq == it->seen_seq && !(rev & ~it->seen_mask))
			continue;	/* edge-triggered: nothing new */
		it->seen_seq = seq;
		it->seen_mask = rev;
		out[got].events = rev;
		out[got].data = it->ev.data;
		got++;
		if (it->ev.events & EPOLLONESHOT)
			it->disabled = true;
	}
	if (p != pbuf)
		free(p);
out:
	pthread_mutex_unlock(&ep->mu);
	return got;
}

/*
 * Sleep up to ms on the set's Sluice sockets (the stack wakes us when one
 * changes).  Only when none is ready now: an edge-triggered socket that is
 * ready but already reported would end every such sleep at once.  Returns
 * whether it slept.
 */
static bool ep_sleep(struct pl_ep *ep, int ms)
{
	struct sluice_pollfd pbuf[64], *p = pbuf;
	bool slept = false;
	unsigned int n = 0;

	pthread_mutex_lock(&ep->mu);
	if (ep->n > 64 && !(p = malloc(ep->n * sizeof(*p)))) {
		pthread_mutex_unlock(&ep->mu);
		return false;
	}
	for (unsigned int i = 0; i < ep->n; i++) {
		if (ep->items[i].disabled)
			continue;
		p[n].sd = (int)ep->items[i].sd;
		p[n++].events = (short)(ep->items[i].ev.events &
					(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI));
	}
	pthread_mutex_unlock(&ep->mu);
	if (n && sluice_poll(pl_stack(), p, n, 0) == 0) {
		sluice_poll(pl_stack(), p, n, ms);
		slept = true;
	}
	if (p != pbuf)
		free(p);
	return slept;
}

static int ep_wait(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max, int timeout_ms)
{
	struct pl_waiter w;
	unsigned int sigs;
	int got, sgot, k, sleep_ms;

	if (max <= 0)
		return -EINVAL;
	pl_waiter_init(&w, timeout_ms);
	sigs = pl_sig_count();
	for (;;) {
		got = ep_collect(ep, evs, max);
		sleep_ms = 0;
		if (!got && !pl_waiter_next(&w, &sleep_ms))
			sleep_ms = 0;
		if (!got && sleep_ms && !pl_mixed_kernel_side && ep_sleep(ep, sleep_ms)) {
			got = ep_collect(ep, evs, max);
			sleep_ms = 0;
		}
		sgot = got;
		k = got < max ? REAL(epoll_wait)(epfd, evs + got, max - got, got ? 0 : sleep_ms) : 0;
		if (k < 0) {
			if (errno == EINTR && got)
				k = 0;
			else
				return -errno;
		}
		got += k;
		if (got) {
			pl_mixed_note(sgot, k);
			return got;
		}
		if (pl_sig_count() != sigs) {
			pl_sig_take_restart();
			return -EINTR;	/* epoll_wait is never restarted */
		}
		if (w.deadline_us >= 0 && (int64_t)pl_now_us() >= w.deadline_us)
			return 0;
	}
}

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	struct pl_ep *ep = ep_of(epfd);

	if (ep_kfd_set(epfd))
		return (int)pl_ret(ep_wait_kfd(epfd, ep, evs, max, timeout_ms));
	if (!ep || !SL_READ_ONCE(ep->n))
		return REAL(epoll_wait)(epfd, evs, max, timeout_ms);
	return (int)pl_ret(ep_wait(epfd, ep, evs, max, timeout_ms));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		       const sigset_t *mask)
{
	struct pl_ep *ep = ep_of(epfd);
	sigset_t old;
	int ret;

	if (ep_kfd_set(epfd)) {
		if (mask)
			pthread_sigmask(SIG_SETMASK, mask, &old);
		ret = ep_wait_kfd(epfd, ep, evs, max, timeout_ms);
		if (mask)
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		return (int)pl_ret(ret);
	}
	if (!ep || !SL_READ_ONCE(ep->n))
		return REAL(epoll_pwait)(epfd, evs, max, timeout_ms, mask);
	if (mask)
		pthread_sigmask(SIG_SETMASK, mask, &old);
	ret = ep_wait(epfd, ep, evs, max, timeout_ms);
	if (mask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return (int)pl_ret(ret);
}

/* epoll_pwait with a timespec: the wait is in milliseconds here, so a
 * timeout is rounded up (never returns early; -1 for NULL, as the call). */
EXPORT int epoll_pwait2(int epfd, struct epoll_event *evs, int max, const struct timespec *ts,
			const sigset_t *mask)
{
	struct pl_ep *ep = ep_of(epfd);
	long long ms;

	if (!ep_kfd_set(epfd) && (!ep || !SL_READ_ONCE(ep->n))) {
		if (!REAL(epoll_pwait2))
			return (int)pl_ret(-ENOSYS);
		return REAL(epoll_pwait2)(epfd, evs, max, ts, mask);
	}
	if (!ts)
		return epoll_pwait(epfd, evs, max, -1, mask);
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000)
		return (int)pl_ret(-EINVAL);
	ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return epoll_pwait(epfd, evs, max, ms > INT_MAX ? INT_MAX : (int)ms, mask);
}

/* Creation needs no emulation: the set's Sluice part is made on the first
 * EPOLL_CTL_ADD of a Sluice fd.  A stale part from an earlier epoll fd of
 * that number was dropped by close(). */
EXPORT int epoll_create(int size)
{
	return REAL(epoll_create)(size);
}

EXPORT int epoll_create1(int flags)
{
	return REAL(epoll_create1)(flags);
}
