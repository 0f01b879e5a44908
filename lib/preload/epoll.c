// SPDX-License-Identifier: BSD-2-Clause
/*
 * epoll with Sluice and kernel fds in one set: epoll_create, epoll_create1,
 * epoll_ctl, epoll_wait, epoll_pwait, epoll_pwait2.  With the module's
 * socket fds the kernel's epoll does the work (ep_wait_kfd() below);
 * without the module:
 *
 * The epoll fd is a real one and holds the kernel fds.  The Sluice fds of
 * a set are kept here, per epoll fd, and looked at in O(ready) (issue 23):
 * the stack appends every socket whose readiness changes to the ready
 * ring of the set's watch group (sl_region.epw_ring, proto/sock.c
 * sl_wake_epw()), as the kernel's ep_poll_callback() appends to the set's
 * ready list; a set reads its ring from where it left off (ep_read()) and
 * checks only the items it names, plus those still on its check list
 * (level-triggered items reported and still ready, items added or
 * modified).  A set with no group (all SL_EPW_N taken) reads the stack's
 * journal of every change instead (sl_region.chg_ring).  An item found
 * not ready leaves the list until its ring names it again.  A set that
 * fell more than the ring's length behind checks once every item whose
 * socket's wake sequence moved since a look found it idle (check_all());
 * epoll_ctl() looks at added sockets in batches of PL_ADD_LOOK.  When
 * nothing is ready it sleeps until its ring moves
 * (sl_wait_journal_stop()), spinning first
 * for SLUICE_SPIN_US; with kernel fds in the set too, it sleeps in the
 * real epoll_wait with the thread's bell in the kernel set (bell.c,
 * ep_bell_arm()), rung by whoever changes one of its Sluice sockets, or
 * where there is no bell (a sandbox, a TAP stack) alternates in slices of
 * PL_SLICE_MS between the two, on the side that was busy last.
 *
 * Level-triggered by default; EPOLLET reports a socket again only after
 * its readiness changed (the socket's wake sequence moved); EPOLLONESHOT
 * disables the entry after one report until EPOLL_CTL_MOD.  Limits: a set
 * dup()ed or inherited by fork shares the kernel part but each process
 * keeps its own Sluice part; a Sluice fd in a set is forgotten when that
 * fd is closed, even if a dup of it stays open; epoll fds above PL_EP_MAX
 * hold kernel fds only (adding a Sluice fd fails with ENOMEM);
 * EPOLLWAKEUP is accepted and ignored.
 *
 * EPOLLEXCLUSIVE (issue 23): an item added with it is looked at by the
 * set at each collect while its socket's wake sequence moved (not through
 * the ready ring: it names no watch group), and a set of the stack's
 * sockets alone sleeps as an exclusive waiter of its socket, as a
 * blocking accept() does (sl_wait_journal_excl(): counted in xsleepers,
 * asleep on xseq beside its other channels), so a change wakes one of
 * the sets holding it, not all: N workers' sets on one listener, one
 * woken a connection.  A mixed set (it sleeps in the kernel with its
 * bell) registers its bell as one of those waiters (SL_BELL_X, beside the
 * channels of its other sockets: ep_bell_arm()); a change wakes a futex
 * waiter if one sleeps, else rings the bell registered first
 * (run/bell.c, sl_bell_ring_excl()): nginx's workers, whose sets hold
 * their channel to the master and an eventfd too.  The woken one always
 * looks, and an accept() that leaves a connection queued wakes the next
 * (api.c).  Up to PL_EP_XMAX such items a set; more wake every holder as
 * before.
 * EPOLL_CTL_MOD with it, or of an item added with it, and events beyond
 * EPOLLIN, EPOLLOUT, EPOLLET, EPOLLWAKEUP (and ERR, HUP) with it: EINVAL,
 * as Linux's do_epoll_ctl().
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"

#define PL_EP_MAX	4096
#define PL_SLICE_MS	1
/* Sets up to this many item slots may sleep on their wait channels (ep_channels()). */
#define PL_EP_CHAN_CAP	16
/* Items added and not yet looked at that epoll_ctl() looks at at once. */
#define PL_ADD_LOOK	256
/* Bells a set remembers being in it (threads sleeping on it). */
#define PL_EP_BELLS	4
/* Linux's EPOLLEXCLUSIVE_OK_BITS (fs/eventpoll.c). */
#define PL_EP_XOK	(EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | \
			 EPOLLEXCLUSIVE)

struct pl_epitem {
	int fd;			/* -1: a free slot (next links the free list) */
	uint32_t sd, gen;
	struct epoll_event ev;
	uint32_t seen_seq;	/* EPOLLET: wake sequence at the last report */
	uint32_t seen_mask;
	int32_t next;		/* next item of the same socket, or free slot */
	uint32_t round;		/* the look (ep->round) that last took it */
	/* The socket's wake sequence read before the last look, if that
	 * look found it not ready (idle): a full look passes it by while the
	 * sequence has not moved (check_all()). */
	uint32_t idle_seq;
	bool idle;
	bool disabled;		/* EPOLLONESHOT fired */
	bool listed;		/* on the check list */
	bool excl;		/* EPOLLEXCLUSIVE, in ep->xitems[] */
};

/* A module socket fd of a set, for the spin's look at the region. */
struct pl_kitem {
	int fd;
	uint32_t sd;
	uint32_t mask;		/* events asked for, ERR and HUP always */
	struct epoll_event ev;	/* as the program gave it: for a hand-off */
};

struct pl_ep {
	pthread_mutex_t mu;
	unsigned int n, cap;	/* items in use, slots */
	struct pl_epitem *items;
	int32_t free;		/* first free slot, or -1 */
	int32_t *by_sd;		/* first item of each socket, or -1 */
	int32_t *by_fd;		/* the item of each fd, or -1 */
	uint32_t by_sd_n, by_fd_n;
	uint32_t *check;	/* items that may be ready */
	unsigned int nchk, chkcap;
	/* Items added since the last collect (PL_ADD_LOOK). */
	unsigned int nadd;
	uint32_t jseq;		/* journal read up to here */
	bool jvalid;		/* jseq set: else look at every item */
	uint32_t round;
	unsigned int kn, kcap;	/* module socket fds (hints only: see ep_wait_kfd()) */
	struct pl_kitem *kitems;
	bool kfd;		/* the set ever held a module socket fd */
	/* Bells put in the kernel set (ep_bell_arm()) and left there: a
	 * sleep costs no epoll_ctl while its thread's bell stays in it. */
	struct {
		int fd;
		uint32_t id;	/* pl_bell_id(): the same bell, not its number */
	} bells[PL_EP_BELLS];
	int epfd;		/* the kernel set's fd */
	/* A bell was ever put in (maybe by a parent before fork): the
	 * kernel's answers are filtered even with no Sluice fd left. */
	bool had_bells;
	/* Threads of this process asleep on the set (on its channels or with
	 * a bell), counted under mu with the look that found it idle; and the
	 * count of epoll_ctl ADD/MOD calls, which end such a sleep
	 * (ep_ctl_kick()): Linux wakes a waiter when a ready fd is added. */
	uint32_t sleeping;
	uint32_t ctl_seq;
	/* Its watch group in the stack (core.h, SL_EPW_N), or -1; whether a
	 * claim was tried; ep_forks when claimed (a fork since: another
	 * process's copy of the set may sleep on it too, so its sockets keep
	 * naming it).  With a group, jseq and jvalid are where the set read
	 * the group's ready ring up to (ep_read()), not the journal. */
	int epw;
	bool epw_tried;
	unsigned int epw_forks;
	/* Its EPOLLEXCLUSIVE items (pl_epitem.excl), looked at by every
	 * collect whose socket changed, slept on exclusively (ep_sleep()). */
	int32_t xitems[PL_EP_XMAX];
	unsigned int nx;
	/* The stack's ho_seq when the set last looked for sockets other
	 * processes handed to the kernel (ep_ho_sweep()). */
	uint32_t ho_seen;
};

static struct pl_ep *eps[PL_EP_MAX];
/* Forks of this process (either side): pl_epoll_atfork(). */
static unsigned int ep_forks SL_FORKDATA;
/*
 * Sets that hold no kernel fd for sure: made by epoll_create() in this
 * process, since no fork (another process could add to it), and never
 * given a kernel fd here.  Such a set sleeps on the stack alone, as long
 * as its wait allows (PL_PURE_SLICE_MS: the dead-process sweep runs
 * between, pl_waiter_next()); any other alternates in
 * PL_SLICE_MS slices with the kernel's epoll_wait.
 */
static bool ep_pure[PL_EP_MAX];
/* Above every set marked pure since the last fork: what a fork clears (a
 * page of memset in parent and child cost a copy-on-write fault each). */
static int ep_pure_top SL_FORKDATA;
#define PL_PURE_SLICE_MS	500
static pthread_mutex_t eps_mu = PTHREAD_MUTEX_INITIALIZER;
/* Above the highest epoll fd that ever had a Sluice part: closing a socket
 * looks at the sets below it only. */
static int eps_top;

/* Below eps_top only: a close() of any fd asks (fd.c), and eps[] of a
 * process that never made a set is a page no one touched before a fork
 * (each child's close read it: a fault a child). */
static struct pl_ep *ep_of(int epfd)
{
	if (epfd < 0 || epfd >= SL_READ_ONCE(eps_top))
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

static void epw_unmark(struct pl_ep *ep, uint32_t sd);

void pl_epoll_close(int epfd)
{
	struct pl_ep *ep;

	if (epfd < 0 || epfd >= PL_EP_MAX)
		return;
	SL_WRITE_ONCE(ep_pure[epfd], false);
	pthread_mutex_lock(&eps_mu);
	ep = eps[epfd];
	sl_store_release(&eps[epfd], NULL);
	pthread_mutex_unlock(&eps_mu);
	/* A thread still waiting on it keeps going on freed memory in the
	 * kernel too (its epoll fd is gone): the same undefined case. */
	if (ep) {
		struct sl_stack *s = pl_sl();

		/* Its sockets and its group go back (not after a fork: a
		 * copy of the set elsewhere may still sleep on the group). */
		for (unsigned int i = 0; i < ep->cap; i++)
			if (ep->items[i].fd >= 0)
				epw_unmark(ep, ep->items[i].sd);
		if (ep->epw >= 0 && s && ep->epw_forks == SL_READ_ONCE(ep_forks)) {
			uint32_t self = (uint32_t)getpid();

			(void)sl_cmpxchg(&s->lib->epw_owner[ep->epw], &self, 0);
		}
		free(ep->items);
		free(ep->by_sd);
		free(ep->by_fd);
		free(ep->check);
		free(ep->kitems);
		free(ep);
	}
}

/* The item of fd in ep, or -1; ep->mu held. */
static int32_t item_of_fd(const struct pl_ep *ep, int fd)
{
	return fd >= 0 && (uint32_t)fd < ep->by_fd_n ? ep->by_fd[fd] : -1;
}

static void item_del(struct pl_ep *ep, int32_t i);

void pl_epoll_forget_fd(int fd)
{
	int top = SL_READ_ONCE(eps_top);

	for (int e = 0; e < top; e++) {
		struct pl_ep *ep = ep_of(e);
		int32_t i;

		if (!ep)
			continue;
		pthread_mutex_lock(&ep->mu);
		i = item_of_fd(ep, fd);
		if (i >= 0)
			item_del(ep, i);
		ep_kforget(ep, fd);
		pthread_mutex_unlock(&ep->mu);
	}
}

/*
 * A module socket fd is closed and nothing else holds its file
 * (pl_kfd_parkable(): no other fd here, no call in flight, no fork,
 * spawn, exec or SCM_RIGHTS since it was made): on Linux the file's end
 * takes its items out of every epoll set (eventpoll_release_file()), and
 * the module parks a file only if none is left (f_ep).  So each set that
 * holds it (the set's kitems, kept by epoll_ctl()) lets it go first, one
 * EPOLL_CTL_DEL a set.  An item the library did not see (one added under
 * another fd of the file, since closed, whose item Linux keeps while the
 * file lives) stays: the module then refuses the park and the file ends
 * as after close().
 */
void pl_epoll_kfd_last(int fd)
{
	int top = SL_READ_ONCE(eps_top), saved = errno;

	for (int e = 0; e < top; e++) {
		struct pl_ep *ep = ep_of(e);

		if (!ep || !SL_READ_ONCE(ep->kn))
			continue;
		pthread_mutex_lock(&ep->mu);
		for (unsigned int k = 0; k < ep->kn; k++)
			if (ep->kitems[k].fd == fd) {
				REAL(epoll_ctl)(e, EPOLL_CTL_DEL, fd, NULL);
				ep->kitems[k] = ep->kitems[--ep->kn];
				break;
			}
		pthread_mutex_unlock(&ep->mu);
	}
	errno = saved;
}

/* The bits of an item's events that are no event: what a fired
 * EPOLLONESHOT item keeps (Linux's EP_PRIVATE_BITS). */
#define PL_EP_PRIVATE	(EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE)

/*
 * The events the kernel's set epfd holds for fd now (its fdinfo's
 * "tfd: FD events: X" line), in *events; false if it cannot be read (no
 * /proc) or has no such item.  Read line by line: a set of thousands of
 * items is a few hundred kilobytes, read only at a hand-over.
 */
static bool ep_kernel_events(int epfd, int fd, uint32_t *events)
{
	char path[40], buf[4096];
	size_t have = 0;
	bool found = false;
	int f, saved = errno;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0) {
		errno = saved;
		return false;
	}
	for (;;) {
		ssize_t n = REAL(read)(f, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		while (!found && (nl = strchr(line, '\n'))) {
			int tfd;
			unsigned int ev;

			*nl = 0;
			if (sscanf(line, "tfd: %d events: %x", &tfd, &ev) == 2 && tfd == fd) {
				*events = ev;
				found = true;
			}
			line = nl + 1;
		}
		if (found)
			break;
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;	/* no line is this long: dropped */
	}
	REAL(close)(f);
	errno = saved;
	return found;
}

/*
 * fd is about to become a kernel socket: each real set holding it as a
 * module socket fd lets that registration go now.  The kernel keys it on
 * the file and drops it by itself only when the file's last reference
 * goes, and the file may outlive this fd's switch: the process that
 * handed the socket over still holds it until its own switch (its agent
 * gives the kernel socket to others first), and a blocking call in
 * flight keeps a copy (kfd_keep()).  Left, the set reported the ended
 * stack socket (EPOLLIN|EPOLLRDHUP|EPOLLHUP) under the program's data
 * beside the kernel socket's item.
 */
void pl_epoll_before_kernel(int fd)
{
	int top = SL_READ_ONCE(eps_top);

	for (int e = 0; e < top; e++) {
		struct pl_ep *ep = ep_of(e);

		if (!ep || !SL_READ_ONCE(ep->kn))
			continue;
		pthread_mutex_lock(&ep->mu);
		for (unsigned int k = 0; k < ep->kn; k++) {
			struct pl_kitem *it = &ep->kitems[k];
			uint32_t now;

			/* A fired EPOLLONESHOT item is disarmed in the kernel's
			 * set, which kitems do not see: asked. */
			if (it->fd != fd)
				continue;
			if ((it->ev.events & EPOLLONESHOT) &&
			    ep_kernel_events(e, fd, &now) && !(now & ~(uint32_t)PL_EP_PRIVATE))
				it->ev.events &= PL_EP_PRIVATE;
			REAL(epoll_ctl)(e, EPOLL_CTL_DEL, fd, NULL);
		}
		pthread_mutex_unlock(&ep->mu);
	}
}

/*
 * fd is a kernel socket now (become_kernel(), socket.c): each set that
 * held it keeps its item, with the program's events and data, as on
 * Linux, where the socket never changed.  An EPOLLONESHOT item that had
 * fired is added disarmed, with no events but those the kernel always
 * adds (EPOLLERR, EPOLLHUP: an ADD cannot leave them out), until the
 * program's EPOLL_CTL_MOD.  An EPOLLET item added again reports the
 * socket's readiness once more (an edge it did not see).
 */
void pl_epoll_to_kernel(int fd)
{
	int top = SL_READ_ONCE(eps_top);

	for (int e = 0; e < top; e++) {
		struct pl_ep *ep = ep_of(e);
		int32_t i;

		if (!ep)
			continue;
		pthread_mutex_lock(&ep->mu);
		i = item_of_fd(ep, fd);
		if (i >= 0) {
			struct epoll_event ev = ep->items[i].ev;

			if (ep->items[i].disabled)	/* EPOLLONESHOT fired */
				ev.events &= PL_EP_PRIVATE;
			item_del(ep, i);
			/* Now a kernel socket: the real set watches it. */
			REAL(epoll_ctl)(e, EPOLL_CTL_ADD, fd, &ev);
		}
		/* A module socket fd the real set held: its registration
		 * went before (pl_epoll_before_kernel()); the kernel socket
		 * takes one with the program's events and data. */
		for (unsigned int k = 0; k < ep->kn; k++) {
			if (ep->kitems[k].fd != fd)
				continue;
			REAL(epoll_ctl)(e, EPOLL_CTL_ADD, fd, &ep->kitems[k].ev);
			ep_kforget(ep, fd);
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
			ep->free = -1;
			ep->epw = -1;
			ep->epfd = epfd;
			/* The top first: ep_of() looks below it. */
			if (epfd >= eps_top)
				sl_store_release(&eps_top, epfd + 1);
			sl_store_release(&eps[epfd], ep);
		}
	}
	pthread_mutex_unlock(&eps_mu);
	return ep;
}

/* Make *arr (of *n int32) hold index idx, new entries -1. */
static bool grow_map(int32_t **arr, uint32_t *n, uint32_t idx)
{
	uint32_t m = *n ? *n : 64;
	int32_t *na;

	if (idx < *n)
		return true;
	while (m <= idx)
		m *= 2;
	na = realloc(*arr, m * sizeof(*na));
	if (!na)
		return false;
	memset(na + *n, 0xff, (m - *n) * sizeof(*na));
	*arr = na;
	*n = m;
	return true;
}

/* Put item i on the check list (once); ep->mu held.  False: no memory
 * (then every item is looked at next time). */
static void check_push(struct pl_ep *ep, int32_t i)
{
	struct pl_epitem *it = &ep->items[i];

	if (it->listed)
		return;
	if (ep->nchk == ep->chkcap) {
		unsigned int cap = ep->chkcap ? ep->chkcap * 2 : 16;
		uint32_t *nc = realloc(ep->check, cap * sizeof(*nc));

		if (!nc) {
			ep->jvalid = false;
			return;
		}
		ep->check = nc;
		ep->chkcap = cap;
	}
	it->listed = true;
	ep->check[ep->nchk++] = (uint32_t)i;
}

/*
 * Every item that may have changed since it was last looked at: one whose
 * socket's wake sequence moved (every readiness change moves it, under
 * the lock: proto/sock.c, sl_sock_wake()) since a look found it idle, or
 * that no look found idle.  O(items) reads of one word each, without the
 * lock; only what moved is looked at under it.  Before, every item was
 * looked at under the lock: 8,333 sockets held it for milliseconds.
 */
static void check_all(struct pl_ep *ep, struct sl_stack *s)
{
	for (unsigned int i = 0; i < ep->cap; i++) {
		const struct pl_epitem *it = &ep->items[i];

		if (it->fd < 0 || (it->idle && it->sd < s->max_sockets &&
				   sl_load_acquire(&sl_sock(s, it->sd)->wake_seq) == it->idle_seq))
			continue;
		check_push(ep, (int32_t)i);
	}
}

/*
 * Watch groups (core.h, SL_EPW_N): a set's own wait channel, so that a
 * change to one of its sockets wakes its sleepers and nobody else's, as
 * the kernel's ep_poll_callback wakes the sets a socket is in.  A set
 * claims one with its first Sluice socket; a dead process's is taken
 * over.  The counts on a group are never reset: a sleeper of a process
 * that died costs a spurious wake-up at most, and a socket still naming
 * a group its set gave up wakes that group's next owner for nothing.
 */
static void epw_claim(struct pl_ep *ep, struct sl_stack *s)
{
	uint32_t self = (uint32_t)getpid();

	ep->epw_tried = true;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t g = 0; g < SL_EPW_N; g++) {
			uint32_t o = SL_READ_ONCE(s->lib->epw_owner[g]);

			/* Free ones first; then those of dead processes. */
			if (pass ? !o || !sl_pid_dead((pid_t)o) : o != 0)
				continue;
			if (sl_cmpxchg(&s->lib->epw_owner[g], &o, self)) {
				ep->epw = (int)g;
				ep->epw_forks = SL_READ_ONCE(ep_forks);
				return;
			}
		}
	}
}

/* Socket sd joined the set (ep->mu held): it names the set's group, or
 * every group (SL_EPW_SHARED) if it names another already.  A set with
 * no group sleeps on every change and marks nothing. */
static void epw_mark(struct pl_ep *ep, uint32_t sd)
{
	struct sl_stack *s = pl_sl();
	uint16_t *w, old = 0, mine;

	if (!s || sd >= s->max_sockets)
		return;
	if (ep->epw < 0 && !ep->epw_tried)
		epw_claim(ep, s);
	if (ep->epw < 0)
		return;
	w = &sl_sock(s, sd)->epw;
	mine = (uint16_t)(ep->epw + 1);
	if (sl_cmpxchg(w, &old, mine) || old == mine || old == SL_EPW_SHARED)
		return;
	SL_WRITE_ONCE(*w, (uint16_t)SL_EPW_SHARED);
}

/* Socket sd left the set (its last item; ep->mu held): it names no group
 * if it named ours, unless a fork since the claim may have left a copy
 * of the set in another process that still watches it. */
static void epw_unmark(struct pl_ep *ep, uint32_t sd)
{
	struct sl_stack *s = pl_sl();
	uint16_t mine;

	if (ep->epw < 0 || !s || sd >= s->max_sockets || ep->epw_forks != SL_READ_ONCE(ep_forks))
		return;
	mine = (uint16_t)(ep->epw + 1);
	(void)sl_cmpxchg(&sl_sock(s, sd)->epw, &mine, 0);
}

static int item_add(struct pl_ep *ep, int fd, const struct pl_sock *ps,
		    const struct epoll_event *ev)
{
	struct pl_epitem *it;
	int32_t i;

	if (!grow_map(&ep->by_fd, &ep->by_fd_n, (uint32_t)fd) ||
	    !grow_map(&ep->by_sd, &ep->by_sd_n, ps->sd))
		return -ENOMEM;
	if (ep->free < 0) {
		unsigned int cap = ep->cap ? ep->cap * 2 : 16;
		struct pl_epitem *ni = realloc(ep->items, cap * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		ep->items = ni;
		for (unsigned int k = cap; k-- > ep->cap;) {
			ni[k].fd = -1;
			ni[k].next = ep->free;
			ep->free = (int32_t)k;
		}
		ep->cap = cap;
	}
	i = ep->free;
	it = &ep->items[i];
	ep->free = it->next;
	memset(it, 0, sizeof(*it));
	it->fd = fd;
	it->sd = ps->sd;
	it->gen = ps->gen;
	it->ev = *ev;
	it->seen_seq = (uint32_t)-1;
	it->next = ep->by_sd[ps->sd];
	ep->by_sd[ps->sd] = i;
	ep->by_fd[fd] = i;
	ep->n++;
	ep->nadd++;
	if ((ev->events & EPOLLEXCLUSIVE) && ep->nx < PL_EP_XMAX) {
		/* Names no group: its changes wake the sets holding it one
		 * at a time, not each set's group (the set still claims one,
		 * for its other sockets). */
		struct sl_stack *s = pl_sl();

		it->excl = true;
		ep->xitems[ep->nx++] = i;
		if (ep->epw < 0 && !ep->epw_tried && s)
			epw_claim(ep, s);
	} else {
		epw_mark(ep, ps->sd);
	}
	check_push(ep, i);
	return 0;
}

static void item_del(struct pl_ep *ep, int32_t i)
{
	struct pl_epitem *it = &ep->items[i];
	int32_t *pp = &ep->by_sd[it->sd];

	while (*pp >= 0 && *pp != i)
		pp = &ep->items[*pp].next;
	if (*pp == i)
		*pp = it->next;
	if (ep->by_sd[it->sd] < 0)
		epw_unmark(ep, it->sd);
	if (it->excl) {
		for (unsigned int x = 0; x < ep->nx; x++)
			if (ep->xitems[x] == i) {
				ep->xitems[x] = ep->xitems[--ep->nx];
				break;
			}
		it->excl = false;
	}
	ep->by_fd[it->fd] = -1;
	/* A check list entry may still name it: fd -1 skips it there. */
	it->fd = -1;
	it->next = ep->free;
	ep->free = i;
	/* No Sluice fd left: epoll_wait() goes straight to the kernel, which
	 * must not report a bell to the program. */
	if (!--ep->n) {
		for (int b = 0; b < PL_EP_BELLS; b++) {
			/* Only a number that is still a bell: another could
			 * be a file of the program's by now. */
			if (ep->bells[b].id && pl_bell_is(ep->bells[b].fd))
				REAL(epoll_ctl)(ep->epfd, EPOLL_CTL_DEL, ep->bells[b].fd, NULL);
			ep->bells[b].id = 0;
		}
	}
}

static int ep_ctl(struct pl_ep *ep, int op, int fd, struct pl_sock *ps, struct epoll_event *ev)
{
	int32_t i = item_of_fd(ep, fd);

	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	switch (op) {
	case EPOLL_CTL_ADD:
		if (i >= 0)
			return -EEXIST;
		return item_add(ep, fd, ps, ev);
	case EPOLL_CTL_MOD:
		if (i < 0)
			return -ENOENT;
		/* Linux: an exclusive item cannot be modified. */
		if (ep->items[i].ev.events & EPOLLEXCLUSIVE)
			return -EINVAL;
		ep->items[i].ev = *ev;
		ep->items[i].disabled = false;
		ep->items[i].seen_seq = (uint32_t)-1;
		ep->items[i].idle = false;
		check_push(ep, i);
		return 0;
	case EPOLL_CTL_DEL:
		if (i < 0)
			return -ENOENT;
		item_del(ep, i);
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

/* Linux's do_epoll_wait(): maxevents from 1 to EP_MAX_EVENTS, else
 * EINVAL; an array access_ok() refuses EFAULT.  The kernel finds the
 * rest of a bad array only when it writes an event there
 * (ep_send_events(): EFAULT, the event left ready; none, the wait runs
 * its course).  Here the first entry is tried before the wait (one byte
 * written with its own value): 1 if it cannot take an event
 * (ep_wait_bad()), else 0; the later ones are written by checked copies
 * (ep_collect()). */
static int ep_args(struct epoll_event *evs, int max)
{
	if (max <= 0 || max > (int)(INT_MAX / sizeof(struct epoll_event)))
		return -EINVAL;
	if (pl_bad_dst(evs, (size_t)max * sizeof(*evs)))
		return -EFAULT;
	return !pl_writable(evs, sizeof(*evs));
}

static int ep_wait_kfd(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max,
		       int timeout_ms)
{
	struct pollfd p = { .fd = epfd, .events = POLLIN };
	struct pl_waiter w;
	unsigned int sigs, round = 0;
	int k, sleep_ms = 1;

	/* The kernel's own answer for an array it cannot write. */
	k = ep_args(evs, max);
	if (k < 0)
		return k;
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
		it->ev = *ev;
	} else if (op == EPOLL_CTL_ADD) {
		if (ep->kn == ep->kcap) {
			unsigned int cap = ep->kcap ? ep->kcap * 2 : 16;
			struct pl_kitem *ni = realloc(ep->kitems, cap * sizeof(*ni));

			if (!ni)
				goto out;	/* a hint less: seen every PL_EP_KPEEK rounds */
			ep->kitems = ni;
			ep->kcap = cap;
		}
		ep->kitems[ep->kn++] = (struct pl_kitem){ .fd = fd, .sd = ps->sd, .mask = mask,
							   .ev = *ev };
	}
out:
	pthread_mutex_unlock(&ep->mu);
}

/*
 * An item added (or changed) while a thread of this process sleeps on the
 * set: Linux wakes such a waiter when the fd is ready, and nothing else
 * may change to wake ours (the socket was ready before, on a channel the
 * sleeper does not watch).  ctl_seq moved under mu; the sleepers' words
 * and bells for the channels they sleep on are moved here, and each wakes
 * to see ctl_seq and look at its list (sl_wait_journal_stop()).
 */
static unsigned int ep_channels(const struct pl_ep *ep, int *chans);
static unsigned int ep_xfds(const struct pl_ep *ep, struct sluice_pollfd *xfds);

static void ep_ctl_kick(const int *chans, unsigned int nchan)
{
	if (pl_stack())
		sl_wait_kick(pl_stack(), chans, nchan);
}

static struct pl_ep *ep_kfd_set(int epfd)
{
	struct pl_ep *ep = ep_of(epfd);

	return ep && SL_READ_ONCE(ep->kfd) &&
	       !SL_READ_ONCE(ep->n) ? ep : NULL;
}

static int ep_collect(struct pl_ep *ep, struct epoll_event *out, int max);

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct epoll_event kev;
	struct pl_sock *ps = pl_get(fd);
	struct pl_ep *ep;
	int ret;

	if (ps && ps->kfd) {
		ret = REAL(epoll_ctl)(epfd, op, fd, ev);
		if (!ret && op == EPOLL_CTL_ADD)
			SL_WRITE_ONCE(ps->epolled, true);
		if (!ret && epfd >= 0 && epfd < PL_EP_MAX)
			SL_WRITE_ONCE(ep_pure[epfd], false);
		if (!ret && (ep = ep_get_or_make(epfd)))
			ep_kctl(ep, op, fd, ps, ev);
		pl_put(ps);
		return ret;
	}
	if (!ps) {
		ret = REAL(epoll_ctl)(epfd, op, fd, ev);
		if (!ret && op == EPOLL_CTL_ADD && epfd >= 0 && epfd < PL_EP_MAX)
			SL_WRITE_ONCE(ep_pure[epfd], false);
		return ret;
	}
	/* Linux: the event is read first (EFAULT), then the rest. */
	if (op != EPOLL_CTL_DEL && ev) {
		if (pl_copy_in(&kev, ev, sizeof(kev))) {
			pl_put(ps);
			return (int)pl_ret(-EFAULT);
		}
		ev = &kev;
	}
	if (epfd == fd) {
		ret = -EINVAL;
	} else if (!ep_of(epfd) && REAL(fcntl)(epfd, F_GETFD) < 0) {
		/* Asked once a set: one with a Sluice part was open at its
		 * first Sluice fd, and close() drops the part. */
		ret = -EBADF;
	} else if (op != EPOLL_CTL_DEL && ev && (ev->events & EPOLLEXCLUSIVE) &&
		   (op == EPOLL_CTL_MOD || (ev->events & ~(uint32_t)PL_EP_XOK))) {
		/* Linux: with EPOLLEXCLUSIVE, ADD alone, and only these. */
		ret = -EINVAL;
	} else if (!(ep = ep_get_or_make(epfd))) {
		ret = -ENOMEM;
	} else {
		int chans[SL_WAITV_MAX];
		struct sluice_pollfd xfds[PL_EP_XMAX];
		unsigned int nchan = 0, nx = 0;
		bool kick;

		pthread_mutex_lock(&ep->mu);
		/* The channels a sleeper of the set sleeps on, before this
		 * (looked for only while one sleeps: counted under mu), and
		 * the sockets it may sleep on exclusively. */
		kick = op != EPOLL_CTL_DEL && SL_READ_ONCE(ep->sleeping);
		if (kick) {
			nchan = ep_channels(ep, chans);
			nx = ep_xfds(ep, xfds);
		}
		ret = ep_ctl(ep, op, fd, ps, ev);
		if (!ret && op != EPOLL_CTL_DEL)
			sl_fetch_add(&ep->ctl_seq, 1);
		pthread_mutex_unlock(&ep->mu);
		if (!ret && kick) {
			ep_ctl_kick(chans, nchan);
			if (nx && pl_stack())
				sl_wait_kick_excl(pl_stack(), xfds, nx);
		}
		/* Sockets added and not looked at yet: looked at now, a batch
		 * under one lock, as the kernel's ep_insert() polls the file it
		 * adds.  Ready ones stay listed for the next wait; the others
		 * are passed by until they change (check_all()).  Else a
		 * program that adds thousands and then waits pays for them all
		 * in its first wait (8,333 sockets: milliseconds under the
		 * lock, every other process of the stack waiting for it).
		 * Counted in items added since the last collect, not in the
		 * check list's length: ready items stay listed, and a list
		 * of 256 ready ones made every later add look at them all
		 * (wrk adding 10,000 connecting sockets: 50 million looks). */
		if (!ret && op == EPOLL_CTL_ADD && SL_READ_ONCE(ep->nadd) >= PL_ADD_LOOK)
			ep_collect(ep, NULL, 0);
	}
	pl_put(ps);
	return (int)pl_ret(ret);
}

/* Counted without the stack lock, in this process's block, as the
 * socket cache counts (a stat: another thread's count at the same
 * instant may lose one; no atomic on the look's path). */
static void ep_count(struct sl_stack *s, enum sl_counter c, uint32_t n)
{
	sl_count_n(s, c, n);
}

/*
 * Read a ring of socket indices of size entries from ep->jseq to its
 * head: the set's watch group's ready ring (core.h, SL_EPW_RING), or the
 * stack's journal for a set with no group (ep_journal()): every item of a socket named there goes on the check list.
 * The ring holds the changes of the group's sockets alone (and of
 * sockets in several sets: every group's), so a look costs O(the set's
 * own changes), where the stack's journal cost O(every change in the
 * stack since the last look).  Without the lock, so the entries read are
 * checked afterwards for having been overwritten (the head moved more
 * than the ring's length past where we started): then, and when the set
 * never read it, every item that may have changed (check_all(): the
 * head is read before each socket's wake sequence, which every change
 * moves before its entry is published).  ep->mu held.
 */
static void ep_read(struct pl_ep *ep, struct sl_stack *s, const uint32_t *head,
		    const uint32_t *ring, uint32_t size)
{
	uint32_t from = ep->jseq, end = sl_load_acquire(head);

	if (!ep->jvalid || end - from > size)
		goto all;
	if (end == from)
		return;
	ep_count(s, SL_C_epoll_entries, end - from);
	for (uint32_t q = from; q != end; q++) {
		uint32_t sd = SL_READ_ONCE(ring[q & (size - 1)]);

		if (sd >= ep->by_sd_n)
			continue;
		for (int32_t i = ep->by_sd[sd]; i >= 0; i = ep->items[i].next)
			check_push(ep, i);
	}
	/* Pairs with the release that published each head: the entries
	 * were read before the head is read again. */
	sl_smp_rmb();
	if (SL_READ_ONCE(*head) - from <= size) {
		ep->jseq = end;
		return;
	}
all:
	ep_count(s, SL_C_epoll_full_look, 1);
	ep->jvalid = true;
	check_all(ep, s);
	ep->jseq = end;
}

/*
 * The set's watch group's ring; a set with no group reads the stack's
 * journal the same way, over every change in the stack.
 * ep->mu held.
 */
static void ep_journal(struct pl_ep *ep, struct sl_stack *s)
{
	if (ep->epw >= 0)
		ep_read(ep, s, &s->lib->wq[SL_WQ_N + (uint32_t)ep->epw].chg,
			s->lib->epw_ring[ep->epw], SL_EPW_RING);
	else
		ep_read(ep, s, &s->lib->chg_seq, s->lib->chg_ring, SL_CHG_RING);
}

/*
 * The look under the lock at those of p[] (n of them) not already found
 * ready without it (revents set by sl_rx_ready()); returns how many of
 * all n are ready, or the look's error.
 */
static int ep_look(struct sluice_pollfd *p, unsigned int n)
{
	struct sluice_pollfd qbuf[64], *q = qbuf;
	unsigned int m = 0, pre = 0;
	int ret;

	for (unsigned int k = 0; k < n; k++)
		m += !p[k].revents;
	if (m == n)
		return sl_poll_look(pl_stack(), p, n);
	if (m > 64 && !(q = malloc(m * sizeof(*q))))
		return sl_poll_look(pl_stack(), p, n);	/* all of them, as before */
	m = 0;
	for (unsigned int k = 0; k < n; k++) {
		if (p[k].revents)
			pre++;
		else
			q[m++] = p[k];
	}
	ret = sl_poll_look(pl_stack(), q, m);
	if (ret >= 0) {
		m = 0;
		for (unsigned int k = 0; k < n; k++)
			if (!p[k].revents)
				p[k].revents = q[m++].revents;
		ret += (int)pre;
	}
	if (q != qbuf)
		free(q);
	return ret;
}

/*
 * The Sluice part: fill out[] with up to max events; returns the count.
 * Looks only at the check list (after reading the journal).  An item
 * found not ready, or edge-triggered with nothing new, or one-shot and
 * reported, leaves the list (but none does when the look could not be
 * made: the stack lock's holder is stopped); a level-triggered one reported stays while
 * it is ready (reported again next time, as the kernel's ready list
 * keeps it).
 */
static int ep_collect(struct pl_ep *ep, struct epoll_event *out, int max)
{
	struct epoll_event e;
	struct sluice_pollfd pbuf[64], *p = pbuf;
	uint32_t ibuf[64], *idx = ibuf;
	struct sl_stack *s = pl_sl();
	unsigned int n = 0, keep = 0, nrep = 0, pre = 0;
	int got = 0, ret;

	pthread_mutex_lock(&ep->mu);
	if (!ep->n || !s)
		goto out;
	ep_journal(ep, s);
	/* Exclusive items are on no ring: looked at when their socket's
	 * wake sequence moved since a look found them idle (one word each,
	 * no lock), as check_all() passes items by. */
	for (unsigned int x = 0; x < ep->nx; x++) {
		const struct pl_epitem *it = &ep->items[ep->xitems[x]];

		if (it->listed || it->disabled ||
		    (it->idle && it->sd < s->max_sockets &&
		     sl_load_acquire(&sl_sock(s, it->sd)->wake_seq) == it->idle_seq))
			continue;
		check_push(ep, ep->xitems[x]);
	}
	if (!ep->nchk)
		goto out;
	ep->nadd = 0;
	if (ep->nchk > 64 && (!(p = malloc(ep->nchk * sizeof(*p))) ||
			      !(idx = malloc(ep->nchk * sizeof(*idx))))) {
		ep->jvalid = false;	/* look at all of them next time */
		goto out;
	}
	ep->round++;
	for (unsigned int k = 0; k < ep->nchk; k++) {
		uint32_t i = ep->check[k];
		struct pl_epitem *it = &ep->items[i];

		if (it->fd < 0 || it->round == ep->round)
			continue;	/* gone, or named twice */
		it->round = ep->round;
		if (it->disabled) {
			it->listed = false;
			continue;
		}
		/* Reported, then drained by this thread's last receive with
		 * nothing new since (PostgreSQL's backend back in epoll_wait()
		 * after its reply): idle, as the look would find it, without
		 * taking the lock for it. */
		if (sl_rx_left_idle(pl_stack(), (int)it->sd,
				    it->ev.events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI),
				    &it->idle_seq)) {
			it->listed = false;
			it->idle = true;
			continue;
		}
		idx[n] = i;
		/* Before the look: a change after this read moves it. */
		it->idle = false;
		if (it->sd < s->max_sockets)
			it->idle_seq = sl_load_acquire(&sl_sock(s, it->sd)->wake_seq);
		p[n].sd = (int)it->sd;
		p[n].events = (short)(it->ev.events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI));
		/* Level-triggered input with data queued and nothing else
		 * to say (sl_rx_ready()): reported without the look (a
		 * backend woken by its bell for its client's query). */
		p[n].revents = !(it->ev.events & (EPOLLET | EPOLLONESHOT)) &&
			       sl_rx_ready(pl_stack(), (int)it->sd, it->gen,
					   (uint16_t)p[n].events) ? POLLIN : 0;
		if (p[n].revents)
			pre++;
		n++;
	}
	ret = pre < n ? ep_look(p, n) : (int)n;
	if (ret == -EAGAIN) {
		/* Not looked at (the lock's holder is stopped): what the
		 * journal named stays listed, for the next look; the set does
		 * not sleep on the journal meanwhile (ep_idle()). */
		memcpy(ep->check, idx, n * sizeof(*idx));
		ep->nchk = n;
		goto out;
	}
	for (unsigned int k = 0; k < n; k++) {
		struct pl_epitem *it = &ep->items[idx[k]];
		uint32_t i = idx[k];
		uint32_t rev = ret > 0 ? (uint32_t)(uint16_t)p[k].revents : 0, seq;

		if (!rev || (rev & POLLNVAL)) {
			it->listed = false;	/* back when the journal names it */
			it->idle = !rev && it->sd < s->max_sockets;
			continue;
		}
		seq = sl_sock(s, it->sd)->wake_seq;
		if ((it->ev.events & EPOLLET) && seq == it->seen_seq && !(rev & ~it->seen_mask)) {
			it->listed = false;	/* edge-triggered: nothing new */
			continue;
		}
		if (got >= max) {
			ep->check[keep++] = i;	/* not reported yet: first next time */
			continue;
		}
		/* A look that takes nothing (out NULL: ep_wait_bad()), or
		 * an entry that cannot take the event (Linux: the events
		 * so far, this one left ready): as above.  An entry in the
		 * first one's page (probed writable, ep_args()) is stored
		 * straight; one past it through a checked copy. */
		e.events = rev;
		e.data = it->ev.data;
		if (out && !(((uintptr_t)out ^ ((uintptr_t)(out + got + 1) - 1)) >> 12))
			out[got] = e;
		else if (!out || pl_copy_out(&out[got], &e, sizeof(e))) {
			ep->check[keep++] = i;
			if (out)
				max = got;
			else
				got++;
			continue;
		}
		it->seen_seq = seq;
		it->seen_mask = rev;
		got++;
		if (it->ev.events & EPOLLONESHOT)
			it->disabled = true;
		if (it->ev.events & (EPOLLET | EPOLLONESHOT))
			it->listed = false;
		else
			idx[nrep++] = i;	/* (k >= nrep: idx[k] was read) */
	}
	/* Reported level-triggered items go to the end, as the kernel moves
	 * them to the tail of its ready list: with maxevents smaller than
	 * what is ready, every ready socket gets its turn. */
	for (unsigned int k = 0; k < nrep; k++)
		ep->check[keep++] = idx[k];
	ep->nchk = keep;
out:
	if (p != pbuf)
		free(p);
	if (idx != ibuf)
		free(idx);
	pthread_mutex_unlock(&ep->mu);
	return got;
}

static int ep_chans(const struct pl_ep *ep, int *chans, bool skip_excl)
{
	unsigned int nc = 0, j;

	if (!ep->n)
		return -1;
	if (ep->cap > PL_EP_CHAN_CAP)
		goto group;
	for (unsigned int i = 0; i < ep->cap; i++) {
		const struct pl_epitem *it = &ep->items[i];

		if (it->fd < 0 || (skip_excl && it->excl))
			continue;
		for (j = 0; j < nc && ((it->sd ^ (uint32_t)chans[j]) & (SL_WQ_N - 1)); j++)
			;
		if (j < nc)
			continue;
		if (nc == SL_WAITV_MAX)
			goto group;
		chans[nc++] = (int)it->sd;
	}
	return (int)nc;
group:
	/* A larger set: its watch group, if it has one (epw_claim()), and
	 * its exclusive items' own channels (they name no group). */
	if (ep->epw < 0)
		return -1;
	chans[0] = (int)(SL_CHAN_EPW | (uint32_t)ep->epw);
	nc = 1;
	for (unsigned int x = 0; !skip_excl && x < ep->nx; x++) {
		uint32_t sd = ep->items[ep->xitems[x]].sd;

		for (j = 1; j < nc && ((sd ^ (uint32_t)chans[j]) & (SL_WQ_N - 1)); j++)
			;
		if (j < nc)
			continue;
		if (nc == SL_WAITV_MAX)
			return -1;
		chans[nc++] = (int)sd;
	}
	return (int)nc;
}

/*
 * The wait channels (proto: socket index mod SL_WQ_N) of a small set's
 * sockets, one socket each, when they are at most SL_WAITV_MAX: how many
 * (chans[]), else 0 (any change).  The set then sleeps on them (one
 * futex, or futex_waitv), or registers its bell for them, woken by its
 * own sockets' changes, not by every change in the stack (a forking
 * server's worker watching its client beside a latch and a pipe: one).
 * Exclusive items' channels are among them (a bell's, a kick's).
 * ep->mu held.
 */
static unsigned int ep_channels(const struct pl_ep *ep, int *chans)
{
	int nc = ep_chans(ep, chans, false);

	return nc < 0 ? 0 : (unsigned int)nc;
}

/* The set's exclusive items as a wait's sockets (sl_wait_journal_excl());
 * ep->mu held. */
static unsigned int ep_xfds(const struct pl_ep *ep, struct sluice_pollfd *xfds)
{
	unsigned int k = 0;

	for (unsigned int x = 0; x < ep->nx; x++) {
		const struct pl_epitem *it = &ep->items[ep->xitems[x]];

		if (it->disabled)
			continue;
		xfds[k].sd = (int)it->sd;
		xfds[k].events = (short)((it->ev.events & (EPOLLIN | EPOLLOUT)) | SLUICE_POLLEXCL);
		xfds[k++].revents = 0;
	}
	return k;
}

/*
 * May the set sleep: nothing on its check list is ready now (ep_collect()
 * just emptied it of everything else)?  Then *seen is how far it read the
 * journal and *nchan its channels (ep_channels()); *excl: it sleeps as an
 * exclusive waiter of the *nx sockets xfds names (its EPOLLEXCLUSIVE
 * items), on a futex or with its bell (run/bell.c, SL_BELL_X), and
 * *nchan are the channels of its other sockets alone.
 */
static bool ep_idle(struct pl_ep *ep, uint32_t *seen, int *chans, unsigned int *nchan,
		    uint32_t *ctl, struct sluice_pollfd *xfds, unsigned int *nx, bool futex,
		    bool *excl)
{
	bool idle;
	int nc;

	pthread_mutex_lock(&ep->mu);
	idle = ep->jvalid && !ep->nchk;
	*seen = ep->jseq;
	*nx = 0;
	*excl = false;
	if (ep->nx && (nc = ep_chans(ep, chans, true)) >= 0) {
		/* Exclusive on those items' sockets, on the channels of the
		 * others. */
		*nchan = (unsigned int)nc;
		*nx = ep_xfds(ep, xfds);
		*excl = *nx != 0;
	} else {
		*nchan = ep_channels(ep, chans);
		/* A bell (rung for every channel, theirs too): the last look
		 * looks at them, which a group's ring does not name. */
		if (!futex && *nchan)
			*nx = ep_xfds(ep, xfds);
	}
	/* Counted as asleep with this look: an epoll_ctl after it kicks
	 * (ep_ctl_kick()), one before it left an item on the list. */
	*ctl = ep->ctl_seq;
	if (idle)
		sl_fetch_add(&ep->sleeping, 1);
	pthread_mutex_unlock(&ep->mu);
	return idle;
}

static void ep_awake(struct pl_ep *ep)
{
	sl_fetch_sub(&ep->sleeping, 1);
}

/*
 * Sleep up to ms until the stack's journal moves past what the set has
 * read (the stack wakes us when any socket's readiness changes), if the
 * set is idle.  Returns whether it slept.
 */
static bool ep_sleep(struct pl_ep *ep, int ms, unsigned int sigs)
{
	uint32_t seen, ctl;
	int chans[SL_WAITV_MAX];
	struct sluice_pollfd xfds[PL_EP_XMAX];
	unsigned int nchan = 0, nx = 0;
	bool excl;

	if (!ep_idle(ep, &seen, chans, &nchan, &ctl, xfds, &nx, true, &excl))
		return false;
	/* A signal ends it at once (run.h, sl_wait_word); so does an
	 * epoll_ctl on the set (ep_ctl_kick()). */
	sl_wait_journal_excl(pl_stack(), ep->epw, seen, chans, nchan, xfds, nx, ms, pl_sig_count,
			     sigs, &ep->ctl_seq, ctl);
	ep_awake(ep);
	return true;
}

/*
 * A small set whose every item was found idle, by a look or by this
 * thread's last receive on its socket (ep_collect(): it->idle, at
 * it->idle_seq), with no wake of its socket since and no epoll_ctl since
 * ep_idle() read ctl: the look under the lock before a sleep would find
 * nothing (PostgreSQL's backend back in epoll_wait() after its reply,
 * issue 18).  Read after the sleeper counted itself (its bell's
 * registration, an atomic RMW): sl_sock_wake() moves wake_seq with one
 * and then reads the counts, so a change either shows here or rings.
 */
static bool ep_still_idle(struct pl_ep *ep, uint32_t ctl)
{
	struct sl_stack *s = pl_sl();
	bool idle = s != NULL;

	pthread_mutex_lock(&ep->mu);
	if (ep->cap > PL_EP_CHAN_CAP || ep->nchk || SL_READ_ONCE(ep->ctl_seq) != ctl)
		idle = false;
	for (unsigned int i = 0; idle && i < ep->cap; i++) {
		const struct pl_epitem *it = &ep->items[i];

		if (it->fd < 0 || it->disabled)
			continue;
		idle = it->idle && it->sd < s->max_sockets &&
		       sl_load_acquire(&sl_sock(s, it->sd)->wake_seq) == it->idle_seq;
	}
	pthread_mutex_unlock(&ep->mu);
	return idle;
}

/*
 * A mixed set's sleep with the thread's bell (bell.c): register it for the
 * set's channel (or any change), look at the journal once more under the
 * stack lock, and if nothing moved put the bell in the kernel set.
 * Returns 1 (armed: sleep in epoll_wait, then pl_bell_end()), 0 (the
 * journal moved: collect again) or -1 (no bell: sleep in slices).
 */
static int ep_bell_arm(int epfd, struct pl_ep *ep, struct pl_bellreg *bell)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint32_t seen, ctl;
	int chans[SL_WAITV_MAX];
	struct sluice_pollfd xfds[PL_EP_XMAX];
	int xsds[PL_EP_XMAX];
	unsigned int nchan = 0, nx = 0;
	bool excl;

	if (!ep_idle(ep, &seen, chans, &nchan, &ctl, xfds, &nx, false, &excl))
		return -1;
	for (unsigned int i = 0; i < nx; i++)
		xsds[i] = xfds[i].sd;
	/* Its exclusive items' bells, one of their waiters each: a change
	 * of one rings one set's bell (or wakes one futex sleeper), not
	 * every set holding it (Linux's ep_poll_callback() stops at the
	 * first exclusive entry whose set has a waiter). */
	if (pl_bell_begin(chans, nchan, xsds, excl ? nx : 0, bell) < 0) {
		ep_awake(ep);
		return -1;
	}
	/* The last look, the bell registered: the journal (and the
	 * exclusive items), and an epoll_ctl since ep_idle() (a kick before
	 * the registration rang nothing).  None under the lock when every
	 * item is still as a look or the thread's last receive left it. */
	if (!(nx == 0 && ep_still_idle(ep, ctl)) &&
	    sl_wait_journal_excl(pl_stack(), ep->epw, seen, chans, nchan, xfds, nx, 0, NULL, 0,
				 &ep->ctl_seq, ctl) != 0) {
		pl_bell_end(bell, false);
		ep_awake(ep);
		return 0;
	}
	/* Put in once and left (a ring while the thread is away only makes
	 * its next wait look once more); a closed bell leaves the kernel set
	 * by itself, and a new one with its number has a new id. */
	{
		uint32_t id = pl_bell_id();
		int slot = -1, i;

		pthread_mutex_lock(&ep->mu);
		for (i = 0; i < PL_EP_BELLS; i++) {
			if (ep->bells[i].fd == bell->fd && ep->bells[i].id == id)
				break;
			if (slot < 0 && (ep->bells[i].fd == bell->fd || !ep->bells[i].id))
				slot = i;
		}
		pthread_mutex_unlock(&ep->mu);
		if (i < PL_EP_BELLS)
			return 1;
		ev.data.u64 = PL_BELL_TAG | (uint32_t)bell->fd;
		if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, bell->fd, &ev) && errno != EEXIST) {
			pl_bell_end(bell, false);
			ep_awake(ep);
			return -1;
		}
		pthread_mutex_lock(&ep->mu);
		if (slot < 0)
			slot = (int)(id % PL_EP_BELLS);	/* forget one: it is added again */
		ep->bells[slot].fd = bell->fd;
		ep->bells[slot].id = id;
		SL_WRITE_ONCE(ep->had_bells, true);
		pthread_mutex_unlock(&ep->mu);
	}
	return 1;
}

/* Leave out bells (this thread's or another's sharing the set): returns
 * how many events are left; *rang: this thread's was among them. */
static int ep_unbell(struct epoll_event *evs, int n, int mine, bool *rang)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if ((evs[i].data.u64 & ~0xffffffffull) == PL_BELL_TAG) {
			if ((int)(uint32_t)evs[i].data.u64 == mine)
				*rang = true;
			continue;
		}
		evs[k++] = evs[i];
	}
	return k;
}

static int ep_wait_spin(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max,
			int timeout_ms);

/*
 * An array whose first entry cannot take an event (NULL, unmapped,
 * read-only): as Linux, EFAULT once an event is there (left ready: the
 * looks take nothing, and the kernel's part is asked with the program's
 * array, so the kernel answers for it), else 0 when the time is up.
 * Sleeps in slices, without the bell (never a hot path).
 */
static int ep_wait_bad(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max,
		       int timeout_ms)
{
	struct pl_waiter w;
	unsigned int sigs = pl_sig_count();
	int k, sleep_ms;

	pl_waiter_init(&w, timeout_ms);
	for (;;) {
		if (ep_collect(ep, NULL, 1))
			return -EFAULT;
		if (!(SL_READ_ONCE(ep_pure[epfd]) && !ep->kfd)) {
			k = REAL(epoll_wait)(epfd, evs, max, 0);
			if (k)
				return k < 0 ? -errno : k;
		}
		if (!pl_waiter_next(&w, &sleep_ms))
			return 0;
		if (!sleep_ms || !ep_sleep(ep, sleep_ms, sigs))
			sl_wait_backoff();
		if (pl_sig_count() != sigs) {
			pl_sig_take_restart();
			return -EINTR;	/* epoll_wait is never restarted */
		}
	}
}

/* A wait, and its length told to the thread's spin (pl_spin_note()). */
static int ep_wait(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max, int timeout_ms)
{
	uint64_t t0;
	int ret;

	ret = ep_args(evs, max);
	if (ret < 0)
		return ret;
	if (ret)
		return ep_wait_bad(epfd, ep, evs, max, timeout_ms);
	t0 = pl_now_us();
	pl_twin_watch_check();	/* a forked child's listeners (twin.c) */
	ret = ep_wait_spin(epfd, ep, evs, max, timeout_ms);

	if (timeout_ms)
		pl_spin_note(t0);
	return ret;
}

static int ep_wait_spin(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max,
			int timeout_ms)
{
	struct pl_waiter w;
	struct pl_bellreg bell;
	unsigned int sigs;
	int got, sgot, k, sleep_ms, armed;
	bool pure, skip_kernel, klook, rang;

	if (max <= 0)
		return -EINVAL;
	pl_waiter_init(&w, timeout_ms);
	sigs = pl_sig_count();
	for (;;) {
		got = ep_collect(ep, evs, max);
		sleep_ms = 0;
		klook = true;
		if (!got && !pl_waiter_next(&w, &sleep_ms))
			sleep_ms = 0;
		else if (!got && !sleep_ms)
			klook = pl_waiter_kernel(&w);
		/* No kernel fd to watch: the whole wait on the stack, and
		 * nothing to ask the kernel (but a set that could not sleep
		 * on the stack naps there, as a mixed one does).  Spinning,
		 * the kernel part is asked only now and then (pl_waiter_kernel()). */
		pure = SL_READ_ONCE(ep_pure[epfd]) && !ep->kfd;
		skip_kernel = (pure && !sleep_ms) || !klook;
		armed = -1;
		rang = false;
		if (!got && sleep_ms && !pure) {
			/* Both sides in one kernel sleep, rung from the stack. */
			armed = ep_bell_arm(epfd, ep, &bell);
			if (armed == 0)
				continue;	/* the journal moved: look */
			if (armed > 0)
				sleep_ms = pl_bell_sleep_ms(&w);
		}
		if (armed < 0 && !got && sleep_ms && (pure || !pl_mixed_kernel_side) &&
		    ep_sleep(ep, pure ? pl_waiter_slice(&w, PL_PURE_SLICE_MS) : sleep_ms, sigs)) {
			got = ep_collect(ep, evs, max);
			sleep_ms = 0;
			skip_kernel = pure;
		}
		if (!klook && !pure)
			sl_wait_backoff();	/* as the kernel call spaced rounds */
		sgot = got;
		k = got < max && !skip_kernel ?
		    REAL(epoll_wait)(epfd, evs + got, max - got, got ? 0 : sleep_ms) : 0;
		if (armed > 0)
			ep_awake(ep);
		if (k < 0) {
			k = -errno;
			if (armed > 0)
				pl_bell_end(&bell, false);
			if ((k == -EINTR || k == -EFAULT) && got)
				k = 0;	/* the events so far (a later entry bad) */
			else
				return k;
		}
		/* Bells are never the program's: this thread's own says the
		 * Sluice side changed. */
		k = ep_unbell(evs + got, k, armed > 0 ? bell.fd : -1, &rang);
		if (armed > 0) {
			pl_bell_end(&bell, rang);
			/* After the kernel's events: what rang it, if anything. */
			if (got + k < max)
				got += ep_collect(ep, evs + got + k, max - got - k);
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

/* A set with no Sluice fd left that may still hold a bell (a thread's,
 * or a parent's before fork): the kernel's answer without bells. */
static int ep_wait_unbelled(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	struct pl_waiter w;
	bool rang = false;
	int k, ms;

	pl_waiter_init(&w, timeout_ms);
	for (;;) {
		ms = timeout_ms < 0 ? -1 : timeout_ms ? pl_waiter_slice(&w, timeout_ms) : 0;
		k = REAL(epoll_wait)(epfd, evs, max, ms);
		if (k <= 0)
			return k;
		k = ep_unbell(evs, k, -1, &rang);
		if (k || !timeout_ms ||
		    (w.deadline_us >= 0 && (int64_t)pl_now_us() >= w.deadline_us))
			return k;
	}
}

/*
 * Sockets of the set that another process handed to the kernel (fork,
 * SCM_RIGHTS; lib/preload/README.md, "Other processes"), looked for only
 * when the stack's ho_seq moved since the set last looked: each switches
 * to the kernel socket (pl_ho_take(), which gives the set's item to the
 * kernel socket as at any hand-over), and the events the stack's ended
 * socket gave (the end of stream a live hand-off leaves) are taken out of
 * evs[0..n), as the program's data says them.  The events left.
 */
#define PL_HO_SWEEP	32
static int ep_ho_sweep(struct pl_ep *ep, struct epoll_event *evs, int n)
{
	struct sl_stack *s = pl_sl();
	uint32_t seq, self = (uint32_t)sl_self_pid();
	struct { int fd; uint64_t data; } take[PL_HO_SWEEP];
	unsigned int nt;

	if (!ep || !s)
		return n;
	seq = sl_load_acquire(&s->lib->ho_seq);
	if (__builtin_expect(seq == SL_READ_ONCE(ep->ho_seen), 1))
		return n;
	do {
		nt = 0;
		pthread_mutex_lock(&ep->mu);
		SL_WRITE_ONCE(ep->ho_seen, seq);
		for (unsigned int i = 0; i < ep->cap && nt < PL_HO_SWEEP; i++) {
			struct pl_epitem *it = &ep->items[i];
			uint32_t hp;

			if (it->fd < 0 || it->sd >= s->max_sockets)
				continue;
			hp = SL_READ_ONCE(sl_sock(s, it->sd)->ho_pid);
			if (hp && hp != self)
				take[nt++] = (typeof(take[0])){ it->fd, it->ev.data.u64 };
		}
		for (unsigned int k = 0; k < ep->kn && nt < PL_HO_SWEEP; k++) {
			struct pl_kitem *it = &ep->kitems[k];
			uint32_t hp;

			if (it->sd >= s->max_sockets)
				continue;
			hp = SL_READ_ONCE(sl_sock(s, it->sd)->ho_pid);
			if (hp && hp != self)
				take[nt++] = (typeof(take[0])){ it->fd, it->ev.data.u64 };
		}
		pthread_mutex_unlock(&ep->mu);
		for (unsigned int t = 0; t < nt; t++) {
			struct pl_sock *ps = pl_get(take[t].fd);

			if (!ps || !pl_ho_take(take[t].fd, ps)) {
				take[t].fd = -1;	/* not switched: its events stand */
				pl_put(ps);
				continue;
			}
			pl_put(ps);
			for (int e = 0; e < n;) {
				if (evs[e].data.u64 == take[t].data)
					evs[e] = evs[--n];
				else
					e++;
			}
		}
		/* More than a pass holds: again (each pass switches them). */
	} while (nt == PL_HO_SWEEP);
	return n;
}

/* A wait (wait(): one of the ways below), with the sweep after it; a
 * wait whose events were all the ended sockets' goes on for the time
 * left. */
static int ep_wait_ho(int epfd, struct pl_ep *ep, struct epoll_event *evs, int max,
		      int timeout_ms,
		      int (*wait)(int, struct pl_ep *, struct epoll_event *, int, int))
{
	uint64_t end = timeout_ms > 0 ? pl_now_us() + (uint64_t)timeout_ms * 1000 : 0;
	int n;

	for (;;) {
		n = wait(epfd, ep, evs, max, timeout_ms);
		if (n <= 0)
			return n;
		n = ep_ho_sweep(ep_of(epfd), evs, n);
		if (n || !timeout_ms)
			return n;
		if (timeout_ms > 0 && !(timeout_ms = pl_ms_until(end)))
			return 0;
	}
}

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms)
{
	struct pl_ep *ep = ep_of(epfd);

	if (ep_kfd_set(epfd))
		return (int)pl_ret(ep_wait_ho(epfd, ep, evs, max, timeout_ms, ep_wait_kfd));
	if (!ep || !SL_READ_ONCE(ep->n)) {
		if (ep && SL_READ_ONCE(ep->had_bells))
			return ep_wait_unbelled(epfd, evs, max, timeout_ms);
		return REAL(epoll_wait)(epfd, evs, max, timeout_ms);
	}
	return (int)pl_ret(ep_wait_ho(epfd, ep, evs, max, timeout_ms, ep_wait));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		       const sigset_t *mask)
{
	struct pl_ep *ep = ep_of(epfd);
	sigset_t old, kmask;
	int ret;

	/* The mask read as the kernel reads it (EFAULT), on our way. */
	if (mask && (ep_kfd_set(epfd) || (ep && (SL_READ_ONCE(ep->n) || SL_READ_ONCE(ep->had_bells))))) {
		sigemptyset(&kmask);
		if (pl_copy_in(&kmask, mask, 8))
			return (int)pl_ret(-EFAULT);
		mask = &kmask;
	}
	if (ep_kfd_set(epfd)) {
		if (mask)
			pthread_sigmask(SIG_SETMASK, mask, &old);
		ret = ep_wait_ho(epfd, ep, evs, max, timeout_ms, ep_wait_kfd);
		if (mask)
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		return (int)pl_ret(ret);
	}
	if ((!ep || !SL_READ_ONCE(ep->n)) && !(ep && SL_READ_ONCE(ep->had_bells)))
		return REAL(epoll_pwait)(epfd, evs, max, timeout_ms, mask);
	if (mask)
		pthread_sigmask(SIG_SETMASK, mask, &old);
	ret = SL_READ_ONCE(ep->n) ? ep_wait_ho(epfd, ep, evs, max, timeout_ms, ep_wait) :
				    ep_wait_unbelled(epfd, evs, max, timeout_ms);
	if (ret < 0 && !SL_READ_ONCE(ep->n))
		ret = -errno;
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
	struct timespec kts;
	long long ms;

	if (!ep_kfd_set(epfd) && (!ep || !SL_READ_ONCE(ep->n)) &&
	    !(ep && SL_READ_ONCE(ep->had_bells))) {
		if (!REAL(epoll_pwait2))
			return (int)pl_ret(-ENOSYS);
		return REAL(epoll_pwait2)(epfd, evs, max, ts, mask);
	}
	if (!ts)
		return epoll_pwait(epfd, evs, max, -1, mask);
	if (pl_copy_in(&kts, ts, sizeof(kts)))
		return (int)pl_ret(-EFAULT);
	if (kts.tv_sec < 0 || kts.tv_nsec < 0 || kts.tv_nsec >= 1000000000)
		return (int)pl_ret(-EINVAL);
	ms = (long long)kts.tv_sec * 1000 + (kts.tv_nsec + 999999) / 1000000;
	return epoll_pwait(epfd, evs, max, ms > INT_MAX ? INT_MAX : (int)ms, mask);
}

/* Creation needs no emulation: the set's Sluice part is made on the first
 * EPOLL_CTL_ADD of a Sluice fd.  A stale part from an earlier epoll fd of
 * that number was dropped by close(). */
static int made(int epfd)
{
	if (epfd >= 0 && epfd < PL_EP_MAX) {
		SL_WRITE_ONCE(ep_pure[epfd], true);
		if (epfd >= SL_READ_ONCE(ep_pure_top))
			SL_WRITE_ONCE(ep_pure_top, epfd + 1);
	}
	return epfd;
}

EXPORT int epoll_create(int size)
{
	return made(REAL(epoll_create)(size));
}

EXPORT int epoll_create1(int flags)
{
	return made(REAL(epoll_create1)(flags));
}

SL_FORKTEXT void pl_epoll_atfork(void)
{
	int top = SL_READ_ONCE(ep_pure_top);

	SL_WRITE_ONCE(ep_forks, ep_forks + 1);

	if (top > 0 && top <= PL_EP_MAX) {
		memset(ep_pure, 0, (size_t)top * sizeof(ep_pure[0]));
		SL_WRITE_ONCE(ep_pure_top, 0);
	}
}
