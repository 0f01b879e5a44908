// SPDX-License-Identifier: BSD-2-Clause
/*
 * Bells: waking a thread that sleeps in the kernel on Sluice and kernel fds
 * at once (a poll or an epoll set of both kinds, without the module).
 *
 * A futex cannot be waited on together with fds, and a Sluice socket has
 * no fd the kernel can watch without the module.  So such a thread owns a
 * bell: a datagram socket of its own, bound to an abstract name made of
 * its pid and thread id (sl_bell_name()), which it puts among the fds it
 * sleeps on.  Before its last look at the Sluice side it registers in the
 * region (sl_region.bells[]): the wait channel of its Sluice sockets
 * (counted in wq[chan].bells) or SL_BELL_ANY (counted in bells_any).  A
 * holder that changes a socket of that channel (sl_sock_wake()) notes it
 * and, after unlock, sends one byte to each registered bell of the channel
 * (sl_bell_ring_pending()): the sleeper's poll or epoll_wait returns.
 *
 * The order is the futex sleepers' (lib/README.md, "Waiting"): the count
 * before the last look, taken under the lock; a change after that look
 * sees the count and rings.  A bell whose name is gone (its thread or
 * process ended) is freed by the ringer; so is one in another network
 * namespace (abstract names are per namespace), whose sleeper then wakes
 * on its time bound as before bells.  The entry's generation makes a free
 * happen once, whoever does it.  Costs: a registration and its end, two
 * atomic operations each, a scan of the entries ever used (at most
 * SL_BELLS) by a holder whose turn changed a socket of a channel with a
 * bell, and one sendto(2) a bell rung.
 *
 * Exclusive bells (EPOLLEXCLUSIVE in a mixed set): an entry of chan
 * SL_BELL_X | socket is counted in that socket's xsleepers, beside the
 * futex waiters on its xseq (a blocking accept(), a set of stack sockets
 * alone), and a change wakes one of them all: a futex waiter if one is
 * asleep, else the entry registered first (the longest asleep, as the
 * futex queue's order), and only another if that one's name is gone
 * (sl_bell_ring_excl()).  N workers' mixed sets on one listener: one
 * datagram a connection, where a channel's bells rang all N.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "os/os.h"
#include "run/run.h"

/* Every errno of this file through the thread's kept pointer (os.h). */
#undef errno
#define errno (*sl_errno_loc())

socklen_t sl_bell_name(struct sockaddr_un *a, uint32_t pid, uint32_t tid)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* Abstract (a leading NUL): nothing in the file system to clean. */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "sluice-bell-%u-%u", pid, tid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static uint32_t *bell_count(struct sl_stack *s, uint32_t chan)
{
	return chan == SL_BELL_ANY ? &s->lib->bells_any : &s->lib->wq[chan % SL_WQ_ALL].bells;
}

static bool is_async(uint32_t chan)
{
	return chan != SL_BELL_ANY && (chan & SL_BELL_ASYNC);
}

static bool is_excl(uint32_t chan)
{
	return chan != SL_BELL_ANY && (chan & (SL_BELL_ASYNC | SL_BELL_X)) == SL_BELL_X;
}

/* An exclusive entry's socket, or NULL. */
static struct sl_sock *excl_sock(struct sl_stack *s, uint32_t chan)
{
	uint32_t idx = chan & ~SL_BELL_X;

	return idx < s->max_sockets ? sl_sock(s, idx) : NULL;
}

/* A registration's count: its channel's, any change's, or an exclusive
 * entry's socket's xsleepers (an async entry has none). */
static uint32_t *entry_count(struct sl_stack *s, uint32_t chan)
{
	struct sl_sock *so;

	if (is_async(chan))
		return NULL;
	if (!is_excl(chan))
		return bell_count(s, chan);
	so = excl_sock(s, chan);
	return so ? &so->xsleepers : NULL;
}

int sl_bell_register(struct sl_stack *s, uint32_t chan, uint32_t pid, uint32_t tid,
		     uint32_t *gen)
{
	struct sl_region *r = s->lib;

	/* Kept as its wq[] entry (a watch group's past SL_WQ_N). */
	if (chan != SL_BELL_ANY && !is_async(chan) && !is_excl(chan))
		chan = sl_chan_wq((int)chan);
	if (is_excl(chan) && !excl_sock(s, chan))
		return -1;
	for (unsigned int i = 0; i < SL_BELLS; i++) {
		struct sl_bell *b = &r->bells[i];
		uint32_t st = SL_READ_ONCE(b->state), want;

		if (st != SL_BELL_FREE || !sl_cmpxchg(&b->state, &st, SL_BELL_CLAIMED))
			continue;
		SL_WRITE_ONCE(b->chan, chan);
		SL_WRITE_ONCE(b->pid, pid);
		SL_WRITE_ONCE(b->tid, tid);
		/* An entry's lost events are its own, not an earlier user's. */
		if (is_async(chan))
			memset(r->bells_lost[i], 0, sizeof(r->bells_lost[i]));
		/* Generations are odd (never FREE or CLAIMED) and new each
		 * time, so an entry is freed once, by whoever finds it with
		 * the generation it read. */
		want = sl_fetch_add(&r->bells_gen, 2) | 1;
		/* Release: a ringer that reads this generation reads the
		 * fields above. */
		sl_store_release(&b->state, want);
		sl_store_max(&r->bells_top, i + 1);
		/* Counted before the caller's last look (see sl_sock_wake()).
		 * An async bell is found by its socket's flag instead. */
		if (entry_count(s, chan))
			sl_fetch_add(entry_count(s, chan), 1);
		*gen = want;
		return (int)i;
	}
	return -1;
}

/* Free entry i if it still has generation gen: once, by whoever. */
static bool bell_free(struct sl_stack *s, unsigned int i, uint32_t gen)
{
	struct sl_bell *b = &s->lib->bells[i];
	uint32_t chan = SL_READ_ONCE(b->chan), st = gen;

	if (!sl_cmpxchg(&b->state, &st, SL_BELL_FREE))
		return false;
	if (entry_count(s, chan))
		sl_fetch_sub(entry_count(s, chan), 1);
	return true;
}

void sl_bell_unregister(struct sl_stack *s, int i, uint32_t gen)
{
	if (i >= 0 && i < SL_BELLS)
		bell_free(s, (unsigned int)i, gen);
}

/* The process's sending socket, made when first needed; kept. */
static int tx_fd = -1;

int sl_bell_tx_fd(void)
{
	return SL_READ_ONCE(tx_fd);
}

void sl_bell_tx_lost(void)
{
	SL_WRITE_ONCE(tx_fd, -1);
}

/* A count into an async bell's lost[why], saturating. */
static void lost_add(struct sl_stack *s, unsigned int i, unsigned int why, unsigned int n)
{
	uint16_t *c = &s->lib->bells_lost[i % SL_BELLS][why % 8], v = SL_READ_ONCE(*c), want;

	do {
		want = (uint16_t)(v + n > 0xffff ? 0xffff : v + n);
	} while (v != want && !sl_cmpxchg(c, &v, want));
}

/*
 * Bell i: one byte 0 (a sleeper's), or an async bell's n events of
 * si_code why, one byte each in one datagram.  An async bell's queue
 * full (its thread has not read the datagrams before; it holds
 * net.unix.max_dgram_qlen, 10): the events go to its lost[why] count, and
 * a byte SL_ASYNC_LOOK after it says so, unless the queue is still full,
 * when the thread reads the queue after the count was added (both are
 * ordered by the queue: it takes the counts after each read).  False
 * only if its name is gone (the entry freed): nobody woke.  A generation
 * ended meanwhile is a sleeper that woke and looks, and no socket to ring
 * from is none for anyone here: both true.
 */
static bool ring(struct sl_stack *s, unsigned int i, uint32_t gen, char why, unsigned int n)
{
	struct sl_bell *b = &s->lib->bells[i];
	char bytes[64];
	struct sockaddr_un a;
	socklen_t len;
	int fd = SL_READ_ONCE(tx_fd);

	if (fd < 0) {
		int nfd = sl_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int none = -1;

		/* Made while a close() wakes a sleeper: the number just
		 * freed is the program's next (os.h). */
		nfd = sl_sys_fd_high(nfd);

		if (nfd < 0)
			return true;	/* no ring from here; nor from anyone else */
		if (!sl_cmpxchg(&tx_fd, &none, nfd)) {
			sl_sys_close(nfd);	/* another thread made it first */
			nfd = none;
		}
		fd = nfd;
	}
	len = sl_bell_name(&a, SL_READ_ONCE(b->pid), SL_READ_ONCE(b->tid));
	/* The fields are the generation's only if it is still there: else
	 * its sleeper woke and ended it, and looks. */
	if (sl_load_acquire(&b->state) != gen)
		return true;
	if (!n)
		n = 1;
	memset(bytes, why, n < sizeof(bytes) ? n : sizeof(bytes));
	while (n) {
		unsigned int k = n < sizeof(bytes) ? n : sizeof(bytes);

		if (sl_sys_sendto(fd, bytes, k, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a,
				  len) == (ssize_t)k) {
			n -= k;
			continue;
		}
		/* Nobody bound there (the thread or process ended) or not in
		 * this namespace: the entry is stale for us. */
		if (errno == ECONNREFUSED || errno == ENOENT) {
			bell_free(s, i, gen);
			return false;
		}
		/* EAGAIN: its queue is full of rings not read yet; it will
		 * wake.  A sleeper's needs no more; an event is counted. */
		if (!is_async(SL_READ_ONCE(b->chan)))
			return true;
		lost_add(s, i, (unsigned char)why, n);
		bytes[0] = (char)SL_ASYNC_LOOK;
		sl_sys_sendto(fd, bytes, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len);
		return true;
	}
	return true;
}

void sl_bell_async_take(struct sl_stack *s, int i, uint32_t gen, uint16_t lost[8])
{
	uint16_t *c;

	memset(lost, 0, 8 * sizeof(lost[0]));
	if (i < 0 || i >= SL_BELLS)
		return;
	if (sl_load_acquire(&s->lib->bells[i].state) != gen)
		return;
	c = s->lib->bells_lost[i];
	for (unsigned int k = 0; k < 8; k++)
		if (SL_READ_ONCE(c[k]))
			lost[k] = sl_xchg(&c[k], 0);
}

void sl_bell_ring_pending(struct sl_stack *s, bool all)
{
	struct sl_region *r = s->lib;
	uint32_t top = SL_READ_ONCE(r->bells_top);
	bool any = s->bell_any_pending || all;
	uint64_t pend[SL_WQ_ALL / 64];
	bool some = all, set = false;
	int saved = errno;

	memcpy(pend, s->bell_pending, sizeof(pend));
	for (unsigned int k = 0; k < SL_WQ_ALL / 64; k++)
		set |= pend[k] != 0;
	/* Cleared only if set: this runs at every turn's end, and a forked
	 * process's first write to a private page is a copy-on-write fault. */
	if (set)
		memset(s->bell_pending, 0, sizeof(s->bell_pending));
	some |= set;
	if (s->bell_any_pending)
		s->bell_any_pending = false;
	if ((!some && !any) || sl_sys_sandboxed)
		return;
	if (top > SL_BELLS)
		top = SL_BELLS;
	for (unsigned int i = 0; i < top; i++) {
		const struct sl_bell *b = &r->bells[i];
		uint32_t gen = sl_load_acquire(&b->state), chan;

		if (!(gen & 1))
			continue;	/* free, or being claimed */
		chan = SL_READ_ONCE(b->chan);
		if (is_async(chan))
			continue;	/* a signal, for its socket's events only */
		/* An exclusive entry (chan past SL_WQ_ALL) is rung here only
		 * with all (a recovery): one at a time otherwise,
		 * sl_bell_ring_excl(). */
		if (all || (chan == SL_BELL_ANY ? any :
			    (chan < SL_WQ_ALL && (pend[chan / 64] >> (chan % 64) & 1))))
			ring(s, i, gen, 0, 1);
	}
	if (errno != saved)
		errno = saved;
}

void sl_bell_ring_excl(struct sl_stack *s, uint32_t idx, bool all)
{
	const struct sl_region *r = s->lib;
	uint32_t top = SL_READ_ONCE(r->bells_top), want = SL_BELL_X | idx;
	int saved = errno;

	if (sl_sys_sandboxed)
		return;
	if (top > SL_BELLS)
		top = SL_BELLS;
	/* The first registered (generations grow: the oldest is the longest
	 * asleep); one whose name is gone is freed by ring(), then the next.
	 * Bounded: each round frees an entry or ends. */
	for (unsigned int round = 0; round < SL_BELLS; round++) {
		uint32_t best_gen = 0;
		int best = -1;

		for (unsigned int i = 0; i < top; i++) {
			const struct sl_bell *b = &r->bells[i];
			uint32_t gen = sl_load_acquire(&b->state);

			if (!(gen & 1) || SL_READ_ONCE(b->chan) != want)
				continue;
			if (all) {
				ring(s, i, gen, 0, 1);
				continue;
			}
			if (best < 0 || (int32_t)(gen - best_gen) < 0) {
				best = (int)i;
				best_gen = gen;
			}
		}
		if (all || best < 0 || ring(s, (unsigned int)best, best_gen, 0, 1))
			break;
	}
	if (errno != saved)
		errno = saved;
}

/*
 * Async bells (O_ASYNC; lib/preload/README.md, "O_ASYNC").  The process
 * that armed O_ASYNC on a socket owns a bell whose kernel file carries
 * the owner and the signal the program set: a byte sent to it, the
 * event's si_code, wakes that process's async thread, which makes the
 * kernel signal the owner itself (lib/preload/async.c).  Entries are
 * bells[] entries of chan SL_BELL_ASYNC | socket; the socket carries
 * SL_LIFE_ASYNC so that the stack looks for them only then.
 */
bool sl_bell_async_any(struct sl_stack *s, uint32_t idx, int except)
{
	const struct sl_region *r = s->lib;
	uint32_t top = SL_READ_ONCE(r->bells_top);

	if (top > SL_BELLS)
		top = SL_BELLS;
	for (unsigned int i = 0; i < top; i++) {
		const struct sl_bell *b = &r->bells[i];

		if ((int)i != except && (sl_load_acquire(&b->state) & 1) &&
		    SL_READ_ONCE(b->chan) == (SL_BELL_ASYNC | idx))
			return true;
	}
	return false;
}

/*
 * SIGURG to a socket's owner (lib/preload/README.md, "Urgent data"), sent
 * by the kernel: a stream pair of our own whose receiving end names the
 * owner (F_SETOWN_EX) and gets one byte MSG_OOB, so AF_UNIX's queue_oob()
 * calls sk_send_sigurg() on it, and the owner (a thread, a process or
 * every process of a group) gets SIGURG with si_code SI_KERNEL, as from
 * a TCP socket, after the kernel's sigio_perm() check.  Five system calls
 * a new urgent pointer, none for a socket without an owner; nothing kept.
 */
static void sigurg(const struct sl_bell *b, uint32_t gen)
{
	struct f_owner_ex ex = {
		.type = (int)SL_READ_ONCE(b->tid), .pid = (pid_t)SL_READ_ONCE(b->pid),
	};
	int sv[2];

	/* The fields are the generation's only if it is still there. */
	if (sl_load_acquire(&b->state) != gen || ex.pid <= 0)
		return;
	if (sl_sys_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		return;
	if (!sl_sys_fcntl(sv[1], F_SETOWN_EX, (long)&ex))
		sl_sys_sendto(sv[0], "!", 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
	sl_sys_close(sv[0]);
	sl_sys_close(sv[1]);
}

void sl_bell_ring_async(void)
{
	struct sl_stack *s = sl_async_w.s;
	unsigned int n = sl_async_w.n;
	uint32_t top;
	int saved = errno;

	sl_async_w.n = 0;
	if (!s || sl_sys_sandboxed)
		return;
	top = SL_READ_ONCE(s->lib->bells_top);
	if (top > SL_BELLS)
		top = SL_BELLS;
	for (unsigned int k = 0; k < n; k++) {
		uint32_t note = sl_async_w.idx[k], rep = sl_async_w.rep[k];
		uint32_t want = SL_BELL_ASYNC | (note & ~SL_ASYNC_WHY_MASK);
		char why = (char)((note & SL_ASYNC_WHY_MASK) >> SL_ASYNC_WHY_SHIFT);

		for (unsigned int i = 0; i < top; i++) {
			const struct sl_bell *b = &s->lib->bells[i];
			uint32_t gen = sl_load_acquire(&b->state);

			if (!(gen & 1) || SL_READ_ONCE(b->chan) != want)
				continue;
			if (want & SL_BELL_URG) {
				sigurg(b, gen);
				continue;
			}
			/*
			 * One bell of the socket's: every process's that armed
			 * it carries the description's owner and signal (copied
			 * from the placeholder), and Linux keeps one fasync entry
			 * a file (fasync_helper()), so a process that armed it
			 * after another (forked before) adds no second signal.
			 * The next only if this one is gone.
			 */
			if (ring(s, i, gen, why, rep + 1))
				break;
		}
	}
	if (errno != saved)
		errno = saved;
}
