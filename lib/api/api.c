// SPDX-License-Identifier: BSD-2-Clause
/*
 * The native API (include/sluice/sluice.h): stacks by name, BSD-like socket
 * calls and readiness.  A call on a socket takes the stack lock around the
 * protocol code and ends its turn with sl_unlock() (run/); blocking calls
 * spin for the stack's spin time, then sleep (run/wait.c) until the stack
 * may have changed, re-checking readiness.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"
#include "api/api.h"

static inline struct sl_stack *S(struct sluice_stack *st)
{
	return (struct sl_stack *)st;
}

static uint64_t real_clock(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + ts.tv_nsec / 1000;
}

/* A sysctl's text, NUL-ended, in buf (len > 1): its length, or -1. */
static ssize_t sysctl_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = sl_sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	n = sl_sys_read(fd, buf, len - 1);
	sl_sys_close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/*
 * The ephemeral port range (net.ipv4.ip_local_port_range, "low high")
 * and the ports taken out of it (net.ipv4.ip_local_reserved_ports,
 * "8080,9000-9010"), read as each handle is made, in the caller's network
 * namespace: proto/sock.c picks from them as Linux does.  Also the SYN
 * and SYN-ACK retries, the largest receive buffer and the bytes that
 * wait for a neighbour.  Unreadable (a sandbox, no /proc) or out of
 * Linux's own bounds: Linux's default.
 */
static void port_range_read(struct sl_stack *s)
{
	char buf[4096], *p, *end;
	unsigned long lo, hi;

	if (sysctl_read("/proc/sys/net/ipv4/ip_local_port_range", buf, 64) > 0 &&
	    sscanf(buf, "%lu %lu", &lo, &hi) == 2 && lo >= 1 && lo <= hi && hi <= 65535) {
		s->port_lo = (uint16_t)lo;
		s->port_hi = (uint16_t)hi;
	}
	/* How often a SYN and a SYN-ACK are sent again (tcp(7); TCP_SYNCNT
	 * overrides it a socket): 1-127 as Linux allows. */
	if (sysctl_read("/proc/sys/net/ipv4/tcp_syn_retries", buf, 64) > 0 &&
	    sscanf(buf, "%lu", &lo) == 1 && lo >= 1 && lo <= 127)
		s->tcp_syn_retries = (uint8_t)lo;
	if (sysctl_read("/proc/sys/net/ipv4/tcp_synack_retries", buf, 64) > 0 &&
	    sscanf(buf, "%lu", &lo) == 1 && lo >= 1 && lo <= 127)
		s->tcp_synack_retries = (uint8_t)lo;
	/* ECN (tcp(7) tcp_ecn): 0-2; Linux's higher values (AccECN) are
	 * taken as its 2, accept only. */
	if (sysctl_read("/proc/sys/net/ipv4/tcp_ecn", buf, 64) > 0 && sscanf(buf, "%lu", &lo) == 1)
		s->tcp_ecn = (uint8_t)(lo > 2 ? 3 : lo + 1);
	/* "min default max", and the largest SO_RCVBUF (the window scale's). */
	if (sysctl_read("/proc/sys/net/ipv4/tcp_rmem", buf, 64) > 0 &&
	    sscanf(buf, "%*u %*u %lu", &hi) == 1 && hi <= UINT32_MAX)
		s->tcp_rmem_max = (uint32_t)hi;
	if (sysctl_read("/proc/sys/net/core/rmem_max", buf, 64) > 0 &&
	    sscanf(buf, "%lu", &hi) == 1 && hi <= UINT32_MAX && hi > s->tcp_rmem_max)
		s->tcp_rmem_max = (uint32_t)hi;
	if (sysctl_read("/proc/sys/net/ipv4/tcp_wmem", buf, 64) > 0 &&
	    sscanf(buf, "%*u %*u %lu", &hi) == 1 && hi <= UINT32_MAX)
		s->tcp_wmem_max = (uint32_t)hi;
	/* Its default, UINT32_MAX, is no mark: kept as 0, so a send pass
	 * of a socket without one looks no further (tcp_output.c). */
	if (sysctl_read("/proc/sys/net/ipv4/tcp_notsent_lowat", buf, 64) > 0 &&
	    sscanf(buf, "%lu", &hi) == 1 && hi && hi < UINT32_MAX)
		s->tcp_notsent_lowat = (uint32_t)hi;
	if (sysctl_read("/proc/sys/net/ipv4/tcp_fastopen", buf, 64) > 0 &&
	    sscanf(buf, "%lu", &lo) == 1)
		s->tcp_fastopen = (uint8_t)(1 + (lo & 1));	/* TFO_CLIENT_ENABLE */
	/* Bytes of packets that may wait for one neighbour (proto/ip.c,
	 * sl_hold_add()); 0 is kept as 1: the newest alone waits. */
	if (sysctl_read("/proc/sys/net/ipv4/neigh/default/unres_qlen_bytes", buf, 64) > 0 &&
	    sscanf(buf, "%lu", &hi) == 1 && hi <= INT32_MAX)
		s->unres_qlen_bytes = hi ? (uint32_t)hi : 1;
	if (sysctl_read("/proc/sys/net/ipv4/ip_local_reserved_ports", buf, sizeof(buf)) <= 0)
		return;
	for (p = buf; *p && *p != '\n'; p = end + (*end == ',')) {
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (end == p)
			break;
		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		for (; lo <= hi && hi <= 65535; lo++) {
			s->port_reserved[lo / 64] |= 1ull << (lo % 64);
			s->port_reserved_any = true;
		}
	}
}

static struct sl_stack *stack_new(const char *name)
{
	struct sl_stack *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->region_fd = -1;
	s->recover = sl_stack_recover;
	s->clock = real_clock;
	s->spin_us = 50;
	strncpy(s->name, name, sizeof(s->name) - 1);
	port_range_read(s);
	return s;
}

int sluice_stack_create(const char *name, const struct sluice_stack_config *cfg,
			struct sluice_stack **out)
{
	struct sluice_stack_config dflt = { 0 };
	struct sl_stack *s = stack_new(name);
	int ret;

	if (!s)
		return -ENOMEM;
	ret = sl_region_create(s, name, cfg ? cfg : &dflt, sl_sock_table_init);
	if (ret) {
		free(s);
		return ret;
	}
	s->r->attach_count++;
	*out = (struct sluice_stack *)s;
	return 0;
}

int sluice_stack_attach(const char *name, struct sluice_stack **out)
{
	struct sl_stack *s = stack_new(name);
	int ret;

	if (!s)
		return -ENOMEM;
	ret = sl_region_attach(s, name);
	/*
	 * A stack that can never run again (BROKEN, or its lock held by a
	 * process that is gone) is not attached: the caller is told there is
	 * none (-ENOENT) and makes a fresh one, as `sluice run` does.  A
	 * /dev/shm stack's name is reclaimed here; a module's is taken over
	 * by that create (SLUICE_STACK_CREATE_REPLACE).
	 */
	if (!ret && sl_lock_dead_holder(s)) {
		sl_region_detach(s);
		ret = -EPIPE;
	}
	if ((ret == -EPIPE || ret == -ENOTRECOVERABLE) &&
	    (s->module_backed || sl_region_reclaim(name)))
		ret = -ENOENT;
	if (ret) {
		free(s);
		return ret;
	}
	/* Not under the lock: attaching must work while another holds it. */
	sl_fetch_add_relaxed(&s->r->attach_count, 1);
	*out = (struct sluice_stack *)s;
	return 0;
}

int sl_stack_inspect(const char *name, struct sluice_stack **out)
{
	struct sl_stack *s = stack_new(name);
	int ret;

	if (!s)
		return -ENOMEM;
	s->inspect = true;
	ret = sl_region_attach(s, name);
	if (ret) {
		free(s);
		return ret;
	}
	*out = (struct sluice_stack *)s;
	return 0;
}

void sluice_stack_close(struct sluice_stack *st)
{
	struct sl_stack *s = S(st);

	if (!s)
		return;
	/* Orphaned connections outlive us: a helper finishes them. */
	sl_helper_ensure(s);
	if (s->link && s->link->ops->close)
		s->link->ops->close(s->link);
	sl_region_detach(s);
	free(s);
}

int sluice_stack_destroy(const char *name)
{
	return sl_region_destroy(name);
}

static uint32_t sysctl_u32(const char *path, uint32_t dflt);

int sluice_stack_set_addr6(struct sluice_stack *st, const void *addr, unsigned int plen)
{
	static const uint8_t zero[16], v4m[12] = { [10] = 0xff, [11] = 0xff };
	struct sl_stack *s = S(st);
	const uint8_t *a = addr;
	int ret;

	if (!a || plen < 1 || plen > 128 || a[0] == 0xff || !memcmp(a, zero, 15) ||
	    !memcmp(a, v4m, 12))
		return -EINVAL;
	ret = sl_lock(s);
	if (ret)
		return ret;
	memcpy(s->lib->ip6_addr, a, 16);
	s->lib->ip6_plen = plen;
	/* What a new interface of this network namespace takes as its hop
	 * limit (Linux ip6_dst_hoplimit(): the device's hop_limit; the
	 * stack's link is a device new to the namespace). */
	s->lib->ip6_hlim = sysctl_u32("/proc/sys/net/ipv6/conf/default/hop_limit", 64);
	/* A link with link addresses (TAP) gets its link-local address
	 * too, as a new device of the namespace would (conf.default's
	 * addr_gen_mode, accept_dad, dad_transmits; lib/proto/README.md
	 * "Link-local"). */
	if (s->link && s->link->ops->frames && s->link->ops->tx6)
		sl_ip6_ll_start(s, sysctl_u32("/proc/sys/net/ipv6/conf/default/addr_gen_mode", 0),
				sysctl_u32("/proc/sys/net/ipv6/conf/default/accept_dad", 1) ?
				sysctl_u32("/proc/sys/net/ipv6/conf/default/dad_transmits", 1) : 0);
	sl_unlock(s);
	return 0;
}

void sluice_stack_set_clock(struct sluice_stack *st, uint64_t (*clock)(void *), void *arg)
{
	struct sl_stack *s = S(st);

	s->clock = clock ? clock : real_clock;
	s->clock_arg = clock ? arg : NULL;
	/* The wheel runs on this clock now: move it and every pending
	 * deadline into the new time base. */
	if (sl_lock(s) == 0) {
		sl_timer_rebase(s, sl_now(s) / 1000);
		sl_unlock(s);
	}
}

void sluice_stack_set_spin(struct sluice_stack *st, unsigned int spin_us)
{
	S(st)->spin_us = spin_us;
}

int sluice_stack_poll(struct sluice_stack *st)
{
	return sl_run_poll(S(st));
}

int sluice_stack_counter(struct sluice_stack *st, const char *name, uint64_t *value)
{
	for (unsigned int i = 0; i < SL_C_COUNT; i++)
		if (!strcmp(name, sl_counter_names[i])) {
			*value = sl_counter_sum(S(st), i);
			return 0;
		}
	return -ENOENT;
}

/* ---- sockets --------------------------------------------------------- */

/* What a call that ran on the stack returns: ret, unless the stack was
 * found corrupt meanwhile (sl_corrupt()): then that, not a result made of
 * garbage. */
static long checked(const struct sl_stack *s, long ret)
{
	return __builtin_expect(s->corrupt, 0) ? sl_broken_err(s) : ret;
}

/*
 * Look up sd and take the lock; on success the caller must sl_unlock().
 * How long it waits for the lock (enum get_wait):
 *  - GET_WAIT: as long as it takes.  Control calls (bind, listen, connect,
 *    shutdown, getsockname, getpeername, setsockopt, getsockopt) never
 *    answer EAGAIN for a lock held by a stopped process: Linux never
 *    does, and a program would take it for an error of its own.
 *  - GET_AS_SOCKET: a data call (send, recv, accept, close) on a
 *    non-blocking socket (read before the lock, as a hint) gets -EAGAIN
 *    once the lock's holder is seen stopped, as it would with nothing to
 *    read; a blocking one waits.
 *  - GET_DONTWAIT: -EAGAIN for a stopped holder whatever the socket says
 *    (MSG_DONTWAIT, a put-off close).
 */
enum get_wait { GET_WAIT, GET_AS_SOCKET, GET_DONTWAIT };

static int sock_get_mode(struct sl_stack *s, int sd, struct sl_sock **out, enum get_wait mode)
{
	struct sl_sock *so;
	unsigned int tries = 0;
	bool nb;
	int ret;

	if (s->corrupt)
		return sl_broken_err(s);
	if (sd < 0 || (uint32_t)sd >= s->max_sockets)
		return -EBADF;
	nb = mode == GET_DONTWAIT ||
	     (mode == GET_AS_SOCKET && (SL_READ_ONCE(sl_sock(s, sd)->flags) & SL_SF_NONBLOCK));
again:
	ret = sl_lock_wait(s, -1, nb);
	if (ret)
		return ret;
	/* connect()s queued while a holder was stopped go first. */
	sl_sock_pending_run(s);
	so = sl_sock(s, sd);
	if (!sl_sock_type_live(so->type) || (so->flags & SL_SF_ORPHAN)) {
		sl_unlock(s);
		return -EBADF;
	}
	if (!sl_sock_ok(s, so)) {
		sl_unlock(s);
		return sl_broken_err(s);
	}
	if ((so->life & SL_LIFE_PRIVATE) || SL_READ_ONCE(so->priv_lock)) {
		/* The stack is to see it from now on: after any option call
		 * or queued connect in flight (another thread's, under
		 * priv_lock). */
		if (!sl_sock_priv_trylock(so)) {
			/* Another thread's option call: a few stores.  One
			 * that does not end (its process stopped) is waited
			 * for only by a call that may wait. */
			sl_unlock(s);
			if (mode != GET_WAIT && ++tries > 1000)
				return -EAGAIN;
			sl_sys_yield();
			goto again;
		}
		so->life &= (uint8_t)~SL_LIFE_PRIVATE;
		sl_sock_priv_unlock(so);
	}
	sl_sock_busy(s, so);
	/* The call may lower its readiness (read, accept, send space):
	 * a socket fd's events are published again at unlock. */
	sl_kp_note(s, so);
	*out = so;
	return 0;
}

static int sock_get_nb(struct sl_stack *s, int sd, struct sl_sock **out, bool dontwait)
{
	return sock_get_mode(s, sd, out, dontwait ? GET_DONTWAIT : GET_AS_SOCKET);
}

static int sock_get(struct sl_stack *s, int sd, struct sl_sock **out)
{
	return sock_get_mode(s, sd, out, GET_WAIT);
}

/*
 * A socket the stack does not see yet (SL_LIFE_PRIVATE: proto/sock.c):
 * its option calls need only its own lock.  True with that lock held;
 * false when the socket is the stack's (take the stack lock).
 */
static bool priv_get(struct sl_stack *s, int sd, struct sl_sock **out)
{
	struct sl_sock *so;

	if (sd < 0 || (uint32_t)sd >= s->max_sockets || s->corrupt)
		return false;
	so = sl_sock(s, sd);
	if (!(SL_READ_ONCE(so->life) & SL_LIFE_PRIVATE))
		return false;
	sl_sock_priv_lock(so);
	if (!(SL_READ_ONCE(so->life) & SL_LIFE_PRIVATE) || !sl_sock_type_live(so->type)) {
		sl_sock_priv_unlock(so);
		return false;
	}
	*out = so;
	return true;
}

static uint32_t sock_events(struct sl_stack *s, struct sl_sock *so)
{
	return sl_sock_events(s, so);
}

static int64_t deadline_after(struct sl_stack *s, int timeout_ms)
{
	return timeout_ms < 0 ? -1 : (int64_t)(sl_now(s) + (uint64_t)timeout_ms * 1000);
}

/* The wait channel all of fds's sockets are on, or NULL: they are on
 * several (then the stack's own wake_seq). */
static struct sl_wq *wait_channel(struct sl_stack *s, const struct sluice_pollfd *fds,
				  unsigned int n)
{
	uint32_t c;

	if (!n || fds[0].sd < 0)
		return NULL;
	c = (uint32_t)fds[0].sd & (SL_WQ_N - 1);
	for (unsigned int i = 1; i < n; i++)
		if (fds[i].sd < 0 || ((uint32_t)fds[i].sd & (SL_WQ_N - 1)) != c)
			return NULL;
	return &s->lib->wq[c];
}

unsigned int sl_poll_channels(const struct sluice_pollfd *fds, unsigned int n, int *chan_sds)
{
	unsigned int nc = 0, j;

	for (unsigned int i = 0; i < n; i++) {
		if (fds[i].sd < 0)
			return 0;
		for (j = 0; j < nc && ((fds[i].sd ^ chan_sds[j]) & (SL_WQ_N - 1)); j++)
			;
		if (j < nc)
			continue;
		if (nc == SL_WAITV_MAX)
			return 0;
		chan_sds[nc++] = fds[i].sd;
	}
	return nc;
}

/* The wait channels of fds's sockets, when they are on two to
 * SL_WAITV_MAX and a sleep can wait on all (sl_wait_sleep_v()): how many,
 * else 0. */
static unsigned int wait_channels(struct sl_stack *s, const struct sluice_pollfd *fds,
				  unsigned int n, struct sl_wq **qv)
{
	int chans[SL_WAITV_MAX];
	unsigned int nq;

	if (!SL_READ_ONCE(sl_waitv_ok) || sl_sys_sandboxed)
		return 0;
	nq = sl_poll_channels(fds, n, chans);
	for (unsigned int i = 0; i < nq; i++)
		qv[i] = &s->lib->wq[sl_chan_wq(chans[i])];
	return nq > 1 ? nq : 0;
}

/* What ends a wait early besides readiness (sl_poll_signals()). */
struct poll_intr {
	unsigned int (*count)(void);	/* the thread's signal count */
	unsigned int seen;		/* its value when the caller looked */
	/* The first sleep may skip its look (sl_poll_signals_idle()). */
	bool idle;
};

static bool rx_idle_all(struct sl_stack *s, const struct sluice_pollfd *fds, unsigned int n);
static bool rx_woken(struct sl_stack *s, struct sluice_pollfd *fds, unsigned int n, int *ready);

/*
 * With a journal wait on one channel (lock held): has the journal named a
 * socket of channel c since seen?  *from is where the last look stopped
 * (each entry is read once); a journal that moved more than its length
 * may have dropped one: yes.
 */
static bool journal_names(struct sl_stack *s, uint32_t seen, uint32_t *from,
			  struct sl_wq *const *qv, unsigned int nq)
{
	uint32_t end = SL_READ_ONCE(s->lib->chg_seq);

	if (end - seen > SL_CHG_RING)
		return true;
	for (; *from != end; (*from)++) {
		uint32_t sd = SL_READ_ONCE(s->lib->chg_ring[*from & (SL_CHG_RING - 1)]);
		struct sl_wq *e = &s->lib->wq[sd & (SL_WQ_N - 1)], *g = NULL;

		/* And its epoll watch group's (core.h, SL_EPW_N); a socket
		 * in several sets names them all. */
		if (sd < s->max_sockets) {
			uint16_t w = SL_READ_ONCE(sl_sock(s, sd)->epw);

			if (w == SL_EPW_SHARED)
				return true;
			if (w && w <= SL_EPW_N)
				g = &s->lib->wq[SL_WQ_N + w - 1u];
		}
		for (unsigned int i = 0; i < nq; i++)
			if (qv[i] == e || qv[i] == g)
				return true;
	}
	return false;
}

/* One more exclusive waiter of so (lock not held): a futex sleeper on its
 * xseq, else a mixed set's bell (run/bell.c, SL_BELL_X). */
static void wake_next(struct sl_stack *s, struct sl_sock *so)
{
	if (sl_wake_word_n(&so->xseq, 1) == 0)
		sl_bell_ring_excl(s, so->idx, false);
}

/*
 * The words a sleep of poll_loop()'s waits on and their values now: the
 * one word's value returned, or with *nwv > 0 the nwv words in wv and
 * their values in seqv (channels first, then exclusive items).
 */
/*
 * Channel q's seq, to sleep on: first raised into q->armed (a wrapping
 * max), then read again after a full barrier until it is the value
 * armed.  A waker moves seq, then reads armed (sl_wake_chan(), a full
 * barrier between): if this sleeper read seq before the move, the waker
 * sees it armed and wakes; if after, this sleeper sleeps on the moved
 * value, and looks (or, without the lock, reads its sockets' sequences)
 * after it.  Under the lock, as the look's read is, no waker moves seq
 * between (wakers move it under the lock).
 */
static uint32_t wq_arm(struct sl_wq *q)
{
	uint32_t v = SL_READ_ONCE(q->seq), a, now;

	for (;;) {
		a = SL_READ_ONCE(q->armed);
		while ((int32_t)(a - v) < 0 && !sl_cmpxchg(&q->armed, &a, v))
			;
		sl_smp_mb();	/* armed before seq is read again */
		now = SL_READ_ONCE(q->seq);
		if (now == v)
			return v;
		v = now;
	}
}

static uint32_t sleep_words(struct sl_stack *s, struct sl_sock *xso, struct sl_wq *q,
			    struct sl_wq *const *qv, unsigned int nqv, struct sl_sock *const *xv,
			    unsigned int nxv, uint32_t **wv, uint32_t *seqv, unsigned int *nwv)
{
	uint32_t seq = xso ? SL_READ_ONCE(xso->xseq) : q ? wq_arm(q) :
		       nxv ? SL_READ_ONCE(xv[0]->xseq) : SL_READ_ONCE(s->r->wake_seq);

	for (unsigned int i = 0; i < nqv; i++) {
		wv[i] = &qv[i]->seq;
		seqv[i] = wq_arm(qv[i]);
	}
	if (nxv && (q || nxv > 1)) {
		/* Several words: the channels' (q's first), then each
		 * exclusive item's. */
		unsigned int k = nqv;

		if (q && !nqv) {
			wv[k] = &q->seq;
			seqv[k++] = wq_arm(q);
		}
		for (unsigned int i = 0; i < nxv; i++, k++) {
			wv[k] = &xv[i]->xseq;
			seqv[k] = SL_READ_ONCE(xv[i]->xseq);
		}
		*nwv = k;
	} else {
		*nwv = nqv;
	}
	return seq;
}

/* sluice_poll(), and with journal set, also done once the readiness
 * journal (sl_region.chg_seq) has moved from *journal (with nchan > 0,
 * once it names a socket of one of the wait channels of chans' sockets,
 * whose sleepers alone are then woken; the caller's sockets are all on
 * them; with group >= 0, once that watch group's ready ring's head moves
 * from *journal); with intr, -EINTR once the thread's signal count moves from
 * intr->seen; with stop, 1 once *stop moves from stop_seen; with tell, a
 * zero timeout that could not look (the lock's holder is stopped) returns
 * -EAGAIN rather than 0, for a caller that must look again later. */
static int poll_loop(struct sl_stack *s, struct sluice_pollfd *fds, unsigned int n,
		     int timeout_ms, const uint32_t *journal, int group, const int *chans,
		     unsigned int nchan, const struct poll_intr *intr,
		     const uint32_t *stop, uint32_t stop_seen, bool tell)
{
	/* A journal wait on a watch group's ready ring: its head. */
	const uint32_t *ghead = journal && group >= 0 && group < SL_EPW_N ?
				&s->lib->wq[SL_WQ_N + (uint32_t)group].chg : NULL;
	uint32_t jfrom = journal ? *journal : 0;
	uint32_t *sleepers = &s->r->sleepers;
	uint32_t *poll_sleepers = &s->lib->poll_sleepers;
	struct sl_wq *q = NULL;
	/* Or on several channels at once (qv[0] is then the one counted in
	 * sleepers, the others in their own). */
	struct sl_wq *qv[SL_WAITV_MAX];
	uint32_t *wv[SL_WAITV_MAX], seqv[SL_WAITV_MAX];
	unsigned int nqv = 0, nwv = 0;
	/* The channels whose sockets end a journal wait (all: none listed). */
	struct sl_wq *jq[SL_WAITV_MAX];
	unsigned int njq = 0;
	/* An exclusive waiter (SLUICE_POLLEXCL: accept()) on one socket. */
	struct sl_sock *xso = NULL;
	/* Or, in a journal wait, on each of fds' sockets (an epoll set's
	 * EPOLLEXCLUSIVE items), beside the channels of its other sockets:
	 * counted in each one's xsleepers, asleep on every xseq (and the
	 * channels') in one futex_waitv. */
	struct sl_sock *xv[SL_WAITV_MAX];
	unsigned int nxv = 0;
	/* A zero timeout looks once and never sleeps: no clock reading
	 * (an epoll set's collect makes one or two such looks a wait). */
	uint64_t start = timeout_ms ? sl_now(s) : 0;
	int64_t deadline = timeout_ms ? deadline_after(s, timeout_ms) : 0;
	bool asleep = false, on_fd = false, unlooked = false, slept = false;
	bool idle_first = intr && intr->idle;
	uint32_t seq, mseq = 0;
	int ready, ret;

	if (journal && nchan <= SL_WAITV_MAX)
		for (njq = 0; njq < nchan; njq++)
			jq[njq] = &s->lib->wq[sl_chan_wq(chans[njq])];
	for (;;) {
		/* Past the spin time: count as a sleeper before the last look,
		 * so a change after that look bumps wake_seq and ends the wait
		 * (a poller first in poll_sleepers, so the waker signals it).
		 * A zero timeout only looks: it never sleeps, so never counts. */
		if (!asleep && timeout_ms && sl_now(s) - start >= s->spin_us) {
			on_fd = sl_wait_on_fd(s);
			/* One socket, exclusively: sleep on the socket's own
			 * word, woken one at a time (sl_sock_wake_one()). */
			if (!on_fd && !journal && s->futex_ok && n == 1 &&
			    (fds[0].events & SLUICE_POLLEXCL) && fds[0].sd >= 0 &&
			    (uint32_t)fds[0].sd < s->max_sockets) {
				xso = sl_sock(s, (uint32_t)fds[0].sd);
				sleepers = &xso->xsleepers;
			} else if (!on_fd && !journal && s->futex_ok) {
				/* Sockets all of one wait channel: sleep on it
				 * alone; on a few, on each of them. */
				q = wait_channel(s, fds, n);
				if (!q && (nqv = wait_channels(s, fds, n, qv)))
					q = qv[0];
			} else if (!on_fd && n && s->futex_ok &&
				   (n + nchan == 1 || (n + nchan <= SL_WAITV_MAX &&
						       SL_READ_ONCE(sl_waitv_ok) && !sl_sys_sandboxed))) {
				/* Exclusive items beside channels (or alone). */
				for (nxv = 0; nxv < n; nxv++)
					xv[nxv] = sl_sock(s, (uint32_t)fds[nxv].sd);
				for (nqv = 0; nqv < nchan; nqv++)
					qv[nqv] = &s->lib->wq[sl_chan_wq(chans[nqv])];
				q = nqv ? qv[0] : NULL;
				if (nqv == 1)
					nqv = 0;	/* q alone, counted as such */
				if (!q)
					sleepers = &xv[0]->xsleepers;
			} else if (n) {
				/* Too many words for one sleep: on any change
				 * (wake_seq), as a set without channels. */
			} else if (!on_fd && nchan == 1 && s->futex_ok) {
				q = &s->lib->wq[sl_chan_wq(chans[0])];
			} else if (!on_fd && nchan > 1 && nchan <= SL_WAITV_MAX && s->futex_ok &&
				   SL_READ_ONCE(sl_waitv_ok) && !sl_sys_sandboxed) {
				for (nqv = 0; nqv < nchan; nqv++)
					qv[nqv] = &s->lib->wq[sl_chan_wq(chans[nqv])];
				q = qv[0];
			}
			/* Counted before the look below (see sl_sock_wake()). */
			if (on_fd)
				sl_fetch_add(poll_sleepers, 1);
			if (q) {
				sleepers = &q->sleepers;
				sl_fetch_add(&s->lib->wq_sleepers, nqv ? nqv : 1);
			}
			for (unsigned int i = 1; i < nqv; i++)
				sl_fetch_add(&qv[i]->sleepers, 1);
			for (unsigned int i = q ? 0 : 1; i < nxv; i++)
				sl_fetch_add(&xv[i]->xsleepers, 1);
			sl_fetch_add(sleepers, 1);
			asleep = true;
			/* Before the word's value is read (below): a signal
			 * from here on either moves it or is seen by the check
			 * before the sleep. */
			if (intr && !on_fd)
				SL_WRITE_ONCE(sl_wait_word, xso ? &xso->xseq :
					      q ? &q->seq : nxv ? &xv[0]->xseq :
					      &s->r->wake_seq);
		}
		/*
		 * Every socket as this thread's last receive on it left it,
		 * nothing new since (sl_rx_left_idle()): the first sleep takes
		 * no look under the lock, which would find them all idle.
		 * Counted as a sleeper above (an atomic RMW, a full barrier),
		 * then the words' values read, then the sockets' sequences: a
		 * change from here on moves a word (sl_sock_wake() reads the
		 * counts after moving wake_seq, a barrier between), one before
		 * shows in a sequence, and the look is taken after all.
		 */
		if (idle_first && asleep && !on_fd && !journal) {
			uint32_t wseq = sleep_words(s, xso, q, qv, nqv, xv, nxv, wv, seqv, &nwv);

			idle_first = false;
			if (rx_idle_all(s, fds, n)) {
				for (unsigned int i = 0; i < n; i++)
					fds[i].revents = 0;
				seq = wseq;
				ready = 0;
				ret = 0;
				goto looked;
			}
		}
		/*
		 * Woken: every socket either has plain data queued or is as
		 * this thread's last receive on it left it, and one at least
		 * has (rx_woken()): what the look under the lock would say,
		 * said without it (issue 18: pgbench's thread woken for one
		 * of its clients' replies took the lock to find it, then
		 * again to read it).
		 */
		if (slept && intr && intr->idle && !on_fd && !journal && !xso && !nxv &&
		    rx_woken(s, fds, n, &ready)) {
			seq = 0;	/* (not slept on: ready ends the wait) */
			ret = ready;
			goto looked;
		}
		/* On the stack fd: the sequence before this look (see sl_wait_sleep()). */
		if (asleep && on_fd)
			mseq = sl_wait_seq(s);
		/*
		 * A zero timeout waits for a running holder but not for a
		 * stopped one; any other timeout waits no longer than itself
		 * (a holder stopped by SIGSTOP keeps the lock meanwhile).
		 */
		ret = sl_lock_wait(s, timeout_ms > 0 ? deadline : -1, timeout_ms == 0);
		if (ret == -ETIMEDOUT || ret == -EAGAIN) {
			for (unsigned int i = 0; i < n; i++)
				fds[i].revents = 0;
			unlooked = asleep;
			ret = tell && !timeout_ms ? -EAGAIN : 0;
			break;
		}
		if (ret)
			break;
		sl_run(s);
		ready = 0;
		for (unsigned int i = 0; i < n; i++) {
			struct sl_sock *so;
			uint32_t ev;

			fds[i].revents = 0;
			if (fds[i].sd < 0 || (uint32_t)fds[i].sd >= s->max_sockets ||
			    !sl_sock_type_live((so = sl_sock(s, fds[i].sd))->type)) {
				fds[i].revents = POLLNVAL;
				ready++;
				continue;
			}
			ev = sock_events(s, so);
			/* No pending error, only queued ones (errq.c, or the
			 * twin's, os_err 2): not for a blocking call. */
			if ((fds[i].events & SL_POLL_NOERRQ) && !so->error &&
			    (so->type != SL_SOCK_UDP || so->udp.os_err != 1))
				ev &= ~(uint32_t)SL_EV_ERR;
			fds[i].revents = (short)(ev & ((uint16_t)fds[i].events | SL_EV_ERR | SL_EV_HUP));
			if (fds[i].revents)
				ready++;
		}
		/* A journal wait with exclusive items alone and no ring: only
		 * those items (looked at above) end it, not every change. */
		if (journal && (ghead ? SL_READ_ONCE(*ghead) != *journal :
				njq ? journal_names(s, *journal, &jfrom, jq, njq) :
				!(n && !nchan) && SL_READ_ONCE(s->lib->chg_seq) != *journal))
			ready++;
		seq = sleep_words(s, xso, q, qv, nqv, xv, nxv, wv, seqv, &nwv);
		sl_unlock(s);
		ret = (int)checked(s, ready);
		if (ret < 0)
			break;
looked:
		/* After the words' values were read: a kick that moved stop
		 * before them is seen here, one after them moves them too. */
		if (stop && sl_load_acquire(stop) != stop_seen) {
			ret = 1;
			break;
		}
		if (ready || !timeout_ms || (deadline >= 0 && (int64_t)sl_now(s) >= deadline))
			break;
		if (intr && intr->count() != intr->seen) {
			ret = -EINTR;
			break;
		}
		if (asleep && nwv) {
			sl_wait_sleep_v(s, deadline, wv, seqv, nwv);
			slept = true;
		} else if (asleep) {
			sl_wait_sleep(s, deadline, on_fd ? mseq : seq, on_fd,
				      xso ? &xso->xseq : q ? &q->seq : nxv ? &xv[0]->xseq : NULL);
			slept = true;
		} else {
			sl_wait_backoff();
			sl_run_poll(s);
		}
	}
	if (asleep) {
		SL_WRITE_ONCE(sl_wait_word, NULL);
		sl_fetch_sub(sleepers, 1);
		/* An exclusive sleeper always looks after a wake-up, and
		 * returns what it saw, unless its time ran out waiting for the
		 * lock: then the wake-up may have been meant for a connection
		 * still queued, and the next sleeper looks. */
		if (xso && unlooked && SL_READ_ONCE(xso->xsleepers))
			wake_next(s, xso);
		for (unsigned int i = q ? 0 : 1; i < nxv; i++)
			sl_fetch_sub(&xv[i]->xsleepers, 1);
		for (unsigned int i = 0; unlooked && i < nxv; i++)
			if (SL_READ_ONCE(xv[i]->xsleepers))
				wake_next(s, xv[i]);
		if (q)
			sl_fetch_sub(&s->lib->wq_sleepers, nqv ? nqv : 1);
		for (unsigned int i = 1; i < nqv; i++)
			sl_fetch_sub(&qv[i]->sleepers, 1);
		if (on_fd)
			sl_fetch_sub(poll_sleepers, 1);
	}
	return ret;
}

int sluice_poll(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n,
		int timeout_ms)
{
	return poll_loop(S(st), fds, n, timeout_ms, NULL, -1, NULL, 0, NULL, NULL, 0, false);
}

int sl_poll_look(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n)
{
	return poll_loop(S(st), fds, n, 0, NULL, -1, NULL, 0, NULL, NULL, 0, true);
}

int sl_poll_signals(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n,
		    int timeout_ms, unsigned int (*count)(void), unsigned int seen)
{
	const struct poll_intr intr = { count, seen, false };

	return poll_loop(S(st), fds, n, timeout_ms, NULL, -1, NULL, 0, &intr, NULL, 0, false);
}

int sl_poll_signals_idle(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n,
			 int timeout_ms, unsigned int (*count)(void), unsigned int seen)
{
	const struct poll_intr intr = { count, seen, true };

	return poll_loop(S(st), fds, n, timeout_ms, NULL, -1, NULL, 0, &intr, NULL, 0, false);
}

int sl_wait_journal(struct sluice_stack *st, uint32_t seen, const int *chan_sds,
		    unsigned int nchan, int timeout_ms, unsigned int (*count)(void),
		    unsigned int sigs)
{
	const struct poll_intr intr = { count, sigs, false };

	return poll_loop(S(st), NULL, 0, timeout_ms, &seen, -1, chan_sds, nchan,
			 count ? &intr : NULL, NULL, 0, false);
}

int sl_wait_journal_stop(struct sluice_stack *st, int group, uint32_t seen, const int *chan_sds,
			 unsigned int nchan, int timeout_ms, unsigned int (*count)(void),
			 unsigned int sigs, const uint32_t *stop, uint32_t stop_seen)
{
	const struct poll_intr intr = { count, sigs, false };

	return poll_loop(S(st), NULL, 0, timeout_ms, &seen, group, chan_sds, nchan,
			 count ? &intr : NULL, stop, stop_seen, false);
}

int sl_wait_journal_excl(struct sluice_stack *st, int group, uint32_t seen, const int *chan_sds,
			 unsigned int nchan, struct sluice_pollfd *xfds, unsigned int nx,
			 int timeout_ms, unsigned int (*count)(void), unsigned int sigs,
			 const uint32_t *stop, uint32_t stop_seen)
{
	const struct poll_intr intr = { count, sigs, false };

	return poll_loop(S(st), xfds, nx, timeout_ms, &seen, group, chan_sds, nchan,
			 count ? &intr : NULL, stop, stop_seen, false);
}

void sl_wait_kick_excl(struct sluice_stack *st, const struct sluice_pollfd *xfds, unsigned int nx)
{
	struct sl_stack *s = S(st);

	/* Every exclusive sleeper of those sockets: the one to see the kick
	 * cannot be picked out (the others look and sleep again). */
	for (unsigned int i = 0; i < nx; i++) {
		struct sl_sock *so;

		if (xfds[i].sd < 0 || (uint32_t)xfds[i].sd >= s->max_sockets)
			continue;
		so = sl_sock(s, (uint32_t)xfds[i].sd);
		if (SL_READ_ONCE(so->xsleepers)) {
			sl_fetch_add(&so->xseq, 1);
			sl_wake_word_n(&so->xseq, INT_MAX);
			sl_bell_ring_excl(s, so->idx, true);
		}
	}
}

void sl_wait_kick(struct sluice_stack *st, const int *chan_sds, unsigned int nchan)
{
	struct sl_stack *s = S(st);

	if (sl_lock(s))
		return;
	/* As a readiness change on those channels marks them: woken after
	 * the unlock. */
	for (unsigned int i = 0; i < nchan; i++)
		sl_wake_chan(s, sl_chan_wq(chan_sds[i]));
	sl_wake_any(s);
	sl_unlock(s);
}

/* Block until sd shows one of events (or an error), or fail -EAGAIN if it
 * is non-blocking. */
static int wait_for(struct sl_stack *s, int sd, short events)
{
	struct sluice_pollfd p = { .sd = sd, .events = events };
	int ret = sluice_poll((struct sluice_stack *)s, &p, 1, -1);

	if (ret < 0)
		return ret;
	return p.revents & POLLNVAL ? -EBADF : 0;
}

int sluice_socket(struct sluice_stack *st, int type)
{
	struct sl_stack *s = S(st);
	int base = type & ~SLUICE_SOCK_NONBLOCK, ret;
	struct sl_sock *so;

	if (base != SLUICE_SOCK_STREAM && base != SLUICE_SOCK_DGRAM)
		return -EPROTONOSUPPORT;
	/* From the ready pool, without the lock (proto/sock.c); a broken
	 * stack's answer comes from the lock. */
	so = s->corrupt || sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN ? NULL :
	     sl_sock_claim(s, base == SLUICE_SOCK_STREAM ? SL_SOCK_TCP : SL_SOCK_UDP);
	if (so) {
		if (type & SLUICE_SOCK_NONBLOCK)
			so->flags |= SL_SF_NONBLOCK;
		return (int)so->idx;
	}
	ret = sl_lock(s);
	if (ret)
		return ret;
	so = sl_sock_alloc(s, base == SLUICE_SOCK_STREAM ? SL_SOCK_TCP : SL_SOCK_UDP);
	if (so) {
		so->life = SL_LIFE_PRIVATE;
		if (type & SLUICE_SOCK_NONBLOCK)
			so->flags |= SL_SF_NONBLOCK;
	}
	sl_unlock(s);
	return (int)checked(s, so ? (int)so->idx : -ENFILE);
}

static int addr_ok(const struct sockaddr_in *a)
{
	return a && a->sin_family == AF_INET ? 0 : (a ? -EAFNOSUPPORT : -EFAULT);
}

int sluice_bind(struct sluice_stack *st, int sd, const struct sockaddr_in *addr)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret = addr_ok(addr);

	if (ret)
		return ret;
	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	/* An IPv6 address's handle (proto.h) is no AF_INET socket's. */
	if (sl_v6tok(addr->sin_addr.s_addr) && !(so->flags & SL_SF_V6))
		ret = -EADDRNOTAVAIL;
	else
		ret = sl_sock_bind(s, so, addr->sin_addr.s_addr, addr->sin_port);
	sl_unlock(s);
	return (int)checked(s, ret);
}

int sluice_listen(struct sluice_stack *st, int sd, int backlog)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret = sock_get(s, sd, &so);

	if (ret)
		return ret;
	if (so->type != SL_SOCK_TCP)
		ret = -EOPNOTSUPP;
	else if (!(so->flags & SL_SF_BOUND))
		ret = sl_sock_bind(s, so, 0, 0);	/* listen() on an unbound socket */
	if (!ret)
		ret = sl_tcp_listen(s, so, backlog);
	sl_unlock(s);
	return (int)checked(s, ret);
}

/* Lock held: connection so is this process's to run (connect, accept): a
 * link that steers in the device steers it here (link/README.md). */
static void conn_own(struct sl_stack *s, const struct sl_sock *so)
{
	if (s->link && s->link->ops->conn_own)
		s->link->ops->conn_own(s->link, s, so);
}

int sluice_accept(struct sluice_stack *st, int sd, struct sockaddr_in *peer)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so, *child;
	int ret;

	for (;;) {
		ret = sock_get_nb(s, sd, &so, false);
		if (ret)
			return ret;
		ret = so->type == SL_SOCK_TCP ? sl_tcp_accept(s, so, &child) : -EOPNOTSUPP;
		/* Exclusive sleepers are woken one a change: pass it on if a
		 * connection is left, or this call fails for good (a listener
		 * shut down fails every accept()). */
		if (SL_READ_ONCE(so->xsleepers) && ret != -EAGAIN &&
		    (ret || (sl_sock_events(s, so) & POLLIN)))
			sl_sock_wake_one(s, so);
		if (!ret)
			conn_own(s, child);
		if (!ret && peer) {
			memset(peer, 0, sizeof(*peer));
			peer->sin_family = AF_INET;
			peer->sin_addr.s_addr = child->raddr;
			peer->sin_port = child->rport;
		}
		bool nb = so->flags & SL_SF_NONBLOCK;

		sl_unlock(s);
		ret = (int)checked(s, ret);
		if (!ret)
			return (int)child->idx;
		if (ret != -EAGAIN || nb)
			return ret;
		ret = wait_for(s, sd, POLLIN | SLUICE_POLLEXCL);
		if (ret)
			return ret;
	}
}

int sl_listen_os_ready(struct sluice_stack *st, int sd, uint32_t gen, int how)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret;

	if (sd < 0 || (uint32_t)sd >= s->max_sockets)
		return -EBADF;
	ret = sl_lock(s);
	if (ret)
		return ret;
	so = sl_sock(s, (uint32_t)sd);
	if (so->kp.gen == gen && so->type == SL_SOCK_UDP) {
		/* A datagram twin: readable as a datagram queued here is
		 * (every poller, one exclusive sleeper). */
		if (how == SL_OSR_TWIN || how == SL_OSR_NOTWIN)
			so->udp.twin = how == SL_OSR_TWIN;
		else if (how == SL_OSR_ERR || how == SL_OSR_ERRTAKEN || how == SL_OSR_ERRQ)
			so->udp.os_err = how == SL_OSR_ERR ? 1 : how == SL_OSR_ERRQ ? 2 : 0;
		else
			so->udp.os_ready = how != SL_OSR_CLEAR;
		if (how == SL_OSR_EDGE || how == SL_OSR_ERR)
			sl_sock_wake(s, so);
		/* O_ASYNC: the twin's datagram is sock_def_readable()'s
		 * POLL_IN, its ICMP error sk_error_report()'s POLL_ERR. */
		if (how == SL_OSR_EDGE || how == SL_OSR_ERR)
			sl_sock_async(s, so, how == SL_OSR_ERR ? SL_POLL_ERR : SL_POLL_IN);
		else if (how == SL_OSR_MORE)
			sl_sock_wake_one(s, so);
	} else if (so->kp.gen != gen || so->type != SL_SOCK_TCP || so->state != SL_TCP_LISTEN) {
		ret = -EBADF;
	} else if (how == SL_OSR_CLEAR) {
		so->tcp.tflags &= ~SL_TF_OSREADY;
	} else {
		so->tcp.tflags |= SL_TF_OSREADY;
		/* A new connection wakes as a queued one does (every poller,
		 * one exclusive sleeper); "more may wait" only passes the
		 * turn to the next exclusive sleeper, as sluice_accept(). */
		if (how == SL_OSR_EDGE) {
			sl_sock_wake(s, so);
			sl_sock_async(s, so, SL_POLL_IN);	/* the twin's connection */
		} else
			sl_sock_wake_one(s, so);
	}
	sl_unlock(s);
	return (int)checked(s, ret);
}

/*
 * connect() to AF_UNSPEC (Linux: the protocol's disconnect): a datagram
 * socket forgets its peer; a stream socket not connected stays as it is.
 */
static int disconnect(struct sl_stack *s, struct sl_sock *so)
{
	if (so->type == SL_SOCK_UDP) {
		if (so->flags & SL_SF_CONNECTED) {
			sl_sock_unhash(s, so);
			so->raddr = 0;
			so->rport = 0;
			so->flags &= ~SL_SF_CONNECTED;
			/* An address connect() chose goes with the peer
			 * (Linux: no SOCK_BINDADDR_LOCK, inet_reset_saddr()). */
			if (so->opt_flags & SL_SO_LADDR_AUTO)
				so->laddr = 0;
			so->opt_flags &= ~SL_SO_LADDR_AUTO;
			/* A port the stack chose is given back too (Linux
			 * __udp_disconnect(): no SOCK_BINDPORT_LOCK); one a
			 * module filter holds stays until close. */
			if ((so->opt_flags & SL_SO_LPORT_AUTO) && !(so->flags & SL_SF_FILTER)) {
				so->lport = 0;
				so->flags &= ~(SL_SF_BOUND | SL_SF_AUTOBIND);
				so->opt_flags &= ~SL_SO_LPORT_AUTO;
				return 0;
			}
			sl_sock_hash(s, so);
		}
		return 0;
	}
	if (so->state == SL_TCP_CLOSED && !(so->tcp.tflags & SL_TF_CONNECTED)) {
		/* tcp_disconnect(): a failed attempt is forgotten; reads
		 * say ENOTCONN again. */
		so->tcp.tflags &= ~(SL_TF_DONE | SL_TF_CONN_PEND);
		return 0;
	}
	/* Aborting a live connection this way is not done yet. */
	return -EOPNOTSUPP;
}

/* Linux: a destination of 0.0.0.0 is this host, by the socket's own
 * address if it has one, else 127.0.0.1 (ip_route_output_key_hash()). */
static uint32_t this_host(const struct sl_sock *so, uint32_t daddr)
{
	if (daddr != INADDR_ANY)
		return daddr;
	return so->laddr && so->laddr != INADDR_BROADCAST ? so->laddr : htonl(INADDR_LOOPBACK);
}

/*
 * connect() while the lock's holder is stopped (proto/sock.c, "Sockets
 * before the stack sees them"): a non-blocking TCP socket nothing was
 * done with yet is queued in sl_region.pend[] for the next holder to
 * connect, and this is -EINPROGRESS, as Linux's once its SYN is queued;
 * the socket polls as connecting until then.  -EAGAIN: not such a
 * socket, or the queue is full; wait for the lock.
 */
static int connect_pending(struct sl_stack *s, int sd, const struct sockaddr_in *a)
{
	struct sl_sock *so;

	if (a->sin_family != AF_INET)
		return -EAGAIN;
	if (!priv_get(s, sd, &so))
		return -EAGAIN;
	if (so->type != SL_SOCK_TCP || !(so->flags & SL_SF_NONBLOCK)) {
		sl_sock_priv_unlock(so);
		return -EAGAIN;
	}
	so->raddr = this_host(so, a->sin_addr.s_addr);
	so->rport = a->sin_port;
	SL_WRITE_ONCE(so->life, SL_LIFE_PENDING);
	if (!sl_sock_pend(s, so)) {
		so->raddr = 0;
		so->rport = 0;
		SL_WRITE_ONCE(so->life, SL_LIFE_PRIVATE);
		sl_sock_priv_unlock(so);
		return -EAGAIN;
	}
	sl_sock_priv_unlock(so);
	sl_count(s, SL_C_connect_queued);
	return -EINPROGRESS;
}

static int connect_in(struct sluice_stack *st, int sd, const struct sockaddr_in *given,
		      bool kpeer);

int sluice_connect(struct sluice_stack *st, int sd, const struct sockaddr_in *given)
{
	return connect_in(st, sd, given, false);
}

int sl_connect_kpeer(struct sluice_stack *st, int sd, const struct sockaddr_in *addr)
{
	return connect_in(st, sd, addr, true);
}

/*
 * Would a TCP socket's SYN to daddr find nobody in this stack, where the
 * host's kernel may have a listener?  Decided under the lock, so that
 * a stack listener is either seen here or appears after: then this
 * connection goes to the kernel, and the next one to the stack.  Only a
 * socket that never connected (nothing has flowed: it can become a
 * kernel socket), to an address of this host.
 */
static bool kpeer_wanted(struct sl_stack *s, const struct sl_sock *so, uint32_t daddr,
			 uint16_t dport)
{
	return so->type == SL_SOCK_TCP && so->state == SL_TCP_CLOSED &&
	       !(so->tcp.tflags & (SL_TF_CONN_PEND | SL_TF_CONNECTED)) &&
	       sl_ip_is_local(s, daddr) && !sl_sock_unconnected_at(s, SL_SOCK_TCP, daddr, dport);
}

uint32_t sl_v6_handle(struct sluice_stack *st, const uint8_t *addr)
{
	struct sl_stack *s = S(st);
	uint32_t tok = sl_v6tok_find(s, addr);

	if (tok || sl_lock(s))
		return tok;
	tok = sl_v6tok_get(s, addr);
	sl_unlock(s);
	return tok;
}

bool sl_udp_kpeer(struct sluice_stack *st, uint32_t daddr, uint16_t dport)
{
	struct sl_stack *s = S(st);
	bool ret;

	if (daddr == INADDR_ANY)
		daddr = htonl(INADDR_LOOPBACK);	/* as Linux: this host */
	if (!sl_ip_is_local(s, daddr) || sl_lock(s))
		return false;
	ret = !sl_sock_unconnected_at(s, SL_SOCK_UDP, daddr, dport);
	sl_unlock(s);
	return ret;
}

bool sl_port_alone(struct sluice_stack *st, int sd)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	uint32_t guard = 0;
	bool ret;

	if (sock_get(s, sd, &so))
		return false;
	ret = (so->type == SL_SOCK_TCP || so->type == SL_SOCK_UDP) && so->lport &&
	      (so->type != SL_SOCK_TCP || !sl_tw_filter_held(s, so->lport, so->laddr, false));
	for (uint32_t i = sl_sock_port_head(s, so->lport); ret && sl_sock_next(s, i, &guard);) {
		const struct sl_sock *o = sl_sock(s, i);

		i = o->port_next;
		if (o != so && o->type == so->type && o->lport == so->lport)
			ret = false;
	}
	sl_unlock(s);
	return ret;
}

int sl_async_bell(struct sluice_stack *st, int sd, bool on, uint32_t pid, uint32_t tid,
		  int *slot, uint32_t *gen)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret;

	if (!on) {
		/* Its socket may be gone already (closed by another
		 * process): the entry is ended whatever the lock says. */
		sl_bell_unregister(s, *slot, *gen);
		if (sock_get(s, sd, &so) == 0) {
			if (!sl_bell_async_any(s, (uint32_t)sd, *slot))
				so->life &= (uint8_t)~SL_LIFE_ASYNC;
			so->life &= (uint8_t)~SL_LIFE_FASYNC;
			sl_unlock(s);
		}
		*slot = -1;
		return 0;
	}
	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	*slot = sl_bell_register(s, SL_BELL_ASYNC | (uint32_t)sd, pid, tid, gen);
	if (*slot >= 0)
		so->life |= SL_LIFE_ASYNC | SL_LIFE_FASYNC;
	sl_unlock(s);
	return *slot >= 0 ? 0 : -EAGAIN;
}

bool sl_async_kept(struct sluice_stack *st, int sd)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	bool ret;

	if (sock_get(s, sd, &so))
		return false;
	ret = so->life & SL_LIFE_FASYNC;
	sl_unlock(s);
	return ret;
}

void sl_async_bell_take(struct sluice_stack *st, int slot, uint32_t gen, uint16_t lost[8])
{
	sl_bell_async_take(S(st), slot, gen, lost);
}

int sl_urg_owner(struct sluice_stack *st, int sd, int type, int id)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	uint32_t gen;
	int ret;

	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	if (so->type != SL_SOCK_TCP) {
		sl_unlock(s);
		return 0;	/* no urgent data: nothing to signal */
	}
	/* The old owner's entry goes (a new one, not fields changed under
	 * a ringer that reads them without the lock); looked for whatever
	 * the mark says, so none of an earlier socket of the slot stays. */
	sl_sock_owner_drop(s, so);
	ret = 0;
	if (id > 0) {
		if (sl_bell_register(s, SL_BELL_ASYNC | SL_BELL_URG | (uint32_t)sd, (uint32_t)id,
				     (uint32_t)type, &gen) >= 0)
			so->life |= SL_LIFE_OWNER;
		else
			ret = -EAGAIN;
	}
	sl_unlock(s);
	return ret;
}

int sl_port_twin_fd(struct sluice_stack *st, int sd)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret;

	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	ret = sl_filter_twin_fd(s, so);
	sl_unlock(s);
	return (int)checked(s, ret);
}

static int connect_in(struct sluice_stack *st, int sd, const struct sockaddr_in *given,
		      bool kpeer)
{
	struct sl_stack *s = S(st);
	struct sockaddr_in a, *addr = &a;
	struct sl_sock *so;
	bool nb;
	int ret = given && given->sin_family == AF_UNSPEC ? 0 : addr_ok(given);

	if (ret)
		return ret;
	a = *given;
	ret = sock_get_mode(s, sd, &so, GET_DONTWAIT);
	if (ret == -EAGAIN) {
		/* The holder is stopped: a new non-blocking TCP socket's
		 * connect waits for the next holder, as a SYN in a queue;
		 * anything else waits for the lock. */
		ret = connect_pending(s, sd, &a);
		if (ret != -EAGAIN)
			return ret;
		ret = sock_get(s, sd, &so);
	}
	if (ret)
		return ret;
	if (a.sin_family == AF_INET)
		a.sin_addr.s_addr = this_host(so, a.sin_addr.s_addr);
	if (addr->sin_family == AF_UNSPEC) {
		ret = disconnect(s, so);
		sl_unlock(s);
		return ret;
	}
	if (kpeer && kpeer_wanted(s, so, addr->sin_addr.s_addr, addr->sin_port)) {
		sl_unlock(s);
		return -EREMOTE;	/* left as it was */
	}
	if (so->type == SL_SOCK_UDP) {
		/* Linux ip4_datagram_connect(): a broadcast peer needs
		 * SO_BROADCAST. */
		if (sl_ip_is_bcast(s, addr->sin_addr.s_addr) && !(so->flags & SL_SF_BROADCAST))
			ret = -EACCES;
		else if (!(so->flags & SL_SF_BOUND))
			ret = sl_sock_bind(s, so, sl_sock_implicit_laddr(s, addr->sin_addr.s_addr), 0);
		if (!ret) {
			sl_sock_unhash(s, so);
			so->raddr = addr->sin_addr.s_addr;
			so->rport = addr->sin_port;
			so->flags |= SL_SF_CONNECTED;
			/* Linux ip4_datagram_connect(): a socket bound to no
			 * address takes the route's source for this peer. */
			if (!so->laddr) {
				so->laddr = sl_ip_src_for(s, so->raddr);
				so->opt_flags |= SL_SO_LADDR_AUTO;
			}
			sl_sock_hash(s, so);
			conn_own(s, so);
		}
		sl_unlock(s);
		return ret;
	}
	ret = sl_tcp_connect_failed(s, so);
	if (ret) {
		sl_unlock(s);
		return (int)checked(s, ret);
	}
	ret = sl_tcp_open(s, so, addr->sin_addr.s_addr, addr->sin_port);
	if (!ret || ret == -EINPROGRESS)
		conn_own(s, so);
	nb = so->flags & SL_SF_NONBLOCK;
	sl_unlock(s);
	ret = (int)checked(s, ret);
	if (ret != -EINPROGRESS || nb)
		return ret;
	/* Blocking connect: wait for the handshake to finish or fail. */
	ret = wait_for(s, sd, POLLOUT);
	if (ret)
		return ret;
	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	ret = so->error ? -sl_sock_error(s, so) : 0;
	so->error = 0;
	/* A blocking connect that failed disconnects, as Linux's
	 * __inet_stream_connect() does; one that got through has told its
	 * caller (the next connect() is EISCONN). */
	if (ret && so->type == SL_SOCK_TCP)
		disconnect(s, so);
	else if (so->type == SL_SOCK_TCP)
		so->tcp.tflags &= ~SL_TF_CONN_PEND;
	sl_unlock(s);
	return ret;
}

/*
 * Large sends and receives copy without the stack lock (tcp.c, "lending"):
 * both are entered and left with the lock held, as sl_tcp_send/_recv.
 * Below SL_LEND_MIN bytes the second lock costs more than the copy: a
 * receive lends only when that much is queued, whatever its buffer.
 */
#define SL_LEND_MIN	16384u

static long tcp_send_lent(struct sl_stack *s, struct sl_sock *so, const void *buf, size_t len,
			  int flags, bool *locked)
{
	const uint8_t *p = buf;
	uint32_t gen = so->kp.gen, head, tail = sl_tcp_send_tail_room(s, so);
	size_t n = 0, off;
	long ret, done = 0;

	/* First top up the unsent tail, so the lent buffers start on a
	 * segment boundary. */
	if (tail) {
		done = sl_tcp_send(s, so, buf, tail < len ? tail : len, flags, sl_now_held(s));
		if (done <= 0 || (size_t)done == len)
			return done;
	}
	head = sl_tcp_send_lend(s, so, len - (size_t)done, &n);
	if (head == SLUICE_IDX_NONE)
		return done ? done : sl_tcp_send(s, so, p + done, len - (size_t)done, flags,
						  sl_now_held(s));
	sl_unlock(s);
	off = (size_t)done;
	/* Bounded by what was lent, whatever another process writes into
	 * the buffers' metadata meanwhile (a scribble is found at return). */
	for (uint32_t idx = head, steps = 0; off < len && sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		size_t chunk = SL_READ_ONCE(sl_buf(s, idx)->aux);

		if (chunk > len - off)
			chunk = len - off;
		if (chunk > SL_TCP_BUF_PAYLOAD(s))
			chunk = SL_TCP_BUF_PAYLOAD(s);
		memcpy(sl_buf_base(s, idx) + SL_TCP_DATA_OFF, p + off, chunk);
		off += chunk;
	}
	if (sl_lock(s)) {
		*locked = false;	/* sl_lock() found the stack broken */
		return done ? done : -EPIPE;
	}
	sl_kp_note(s, so);
	ret = sl_tcp_send_return(s, so, gen, head, sl_now_held(s));
	if (ret < 0)
		return done ? done : ret;
	return done + ret;
}

static long tcp_recv_lent(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len,
			  int flags, bool *locked)
{
	uint8_t *p = buf;
	uint32_t gen = so->kp.gen, head;
	size_t n = 0, off = 0, m = len < so->rxq_bytes ? len : so->rxq_bytes;

	/* The copy below is outside the lock, with the bytes lent: first
	 * the caller's buffer is found writable where they will go (one
	 * byte a page, written with its own value), else
	 * the copy under the lock, which stops at a fault (sl_tcp_recv()). */
	if (flags & SL_MSG_IOV) {
		if (sl_uprobe_cur(buf, m))
			return -EAGAIN;
	} else {
		for (size_t o = 0; o < m; o += 4096 - ((uintptr_t)(p + o) & 4095))
			if (sl_uprobe_w(p + o))
				return -EAGAIN;
	}
	head = sl_tcp_recv_lend(s, so, len, &n);
	if (head == SLUICE_IDX_NONE)
		return -EAGAIN;
	sl_unlock(s);
	for (uint32_t idx = head, steps = 0; off < n && sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		size_t chunk = SL_READ_ONCE(sl_buf(s, idx)->len);

		if (chunk > n - off)
			chunk = n - off;
		/* Checked: a buffer unmapped since the probe loses the rest
		 * of what was lent, and does not kill the caller. */
		if (sl_rx_copy(buf, off, flags, sl_buf_data(s, idx), chunk))
			break;
		off += chunk;
	}
	if (off < n)	/* a fault: what was copied, or EFAULT */
		n = off ? off : (size_t)-EFAULT;
	if (sl_lock(s)) {
		/* The data is the caller's; the buffers die with the stack. */
		*locked = false;
		return (long)n;
	}
	sl_kp_note(s, so);
	if (!sl_tcp_recv_return(s, so, gen, head, sl_now_held(s))) {
		/* The chain was taken while we copied (the socket went, or
		 * lost its queues): its buffers may have held another
		 * segment's bytes by then, so none of the copy is given.
		 * The error is the one a call after that would get. */
		int e = so->kp.gen != gen ? EBADF : so->error ? sl_sock_error(s, so) : ECONNRESET;

		if (so->kp.gen == gen)
			so->error = 0;
		return -e;
	}
	return (long)n;
}

/* The socket this thread's last call received from or sent on (a drain,
 * or a request or reply just sent: its next look that finds nothing does
 * not pause, sl_recvfrom_meta()), or -1.  A look that found nothing, and a
 * call on another socket, end it. */
static __thread int rx_drain_sd = -1;

/* What this thread's last TCP receives that held the lock to their end
 * left, for the last few sockets it drained (a thread that serves
 * several, pgbench's with its clients' sockets in one ppoll()): each
 * one's socket (-1: none), generation, wake sequence and events, read
 * under the lock after the receive (sl_rx_left_idle()). */
#define RX_NOTES	8
struct rx_note {
	const struct sl_stack *s;	/* whose socket sd is */
	int sd;
	uint32_t gen, seq, ev;
};
static __thread struct rx_note rx_left[RX_NOTES] = { [0 ... RX_NOTES - 1] = { .sd = -1 } };
static __thread unsigned int rx_left_next;

static struct rx_note *rx_note(const struct sl_stack *s, int sd)
{
	for (unsigned int i = 0; i < RX_NOTES; i++)
		if (rx_left[i].sd == sd && rx_left[i].s == s)
			return &rx_left[i];
	return NULL;
}

static bool rx_idle(struct sl_stack *s, int sd, uint32_t events, uint32_t *seq)
{
	struct rx_note *nt;
	struct sl_sock *so;

	if (sd < 0 || (uint32_t)sd >= s->max_sockets || !(nt = rx_note(s, sd)) ||
	    (nt->ev & (events | SL_EV_ERR | SL_EV_HUP)))
		return false;
	so = sl_sock(s, (uint32_t)sd);
	/* Acquire: pairs with nothing written here; the sequence is read
	 * before the generation, so a slot handed out again in between
	 * shows a new generation. */
	if (sl_load_acquire(&so->wake_seq) != nt->seq || SL_READ_ONCE(so->kp.gen) != nt->gen) {
		nt->sd = -1;
		return false;
	}
	*seq = nt->seq;
	return true;
}

bool sl_rx_left_idle(struct sluice_stack *st, int sd, uint32_t events, uint32_t *seq)
{
	return rx_idle(S(st), sd, events, seq);
}

/*
 * The other side of sl_rx_left_idle(): a socket a change named (an epoll
 * set's journal or ring) that has data queued and nothing else to tell.
 * Read as Linux's tcp_poll() reads a socket, without its lock, between
 * two reads of the wake sequence, which every change of its readiness
 * but a receive's moves: a change in between, or anything but plain data
 * (another state, an error or queued error, urgent data, a FIN, a
 * shutdown, a low-water mark not met, a connect() waiting for the lock),
 * and the caller looks under the lock.  A receive by another thread
 * meanwhile may leave nothing to read, as after Linux's poll (the read
 * then finds EAGAIN).  A PostgreSQL backend woken by its bell took the
 * lock to find its client's query, then again to read it (issue 18).
 */
static bool rx_ready(struct sl_stack *s, int sd, const uint32_t *gen, uint32_t events)
{
	struct sl_sock *so;
	uint32_t seq;
	bool ready;

	/* Input asked for, nothing else (errors and hangups always count). */
	if (s->corrupt || sd < 0 || (uint32_t)sd >= s->max_sockets || !(events & SL_EV_IN) ||
	    (events & ~(uint32_t)(SL_EV_IN | SL_EV_RDHUP | SL_EV_PRI | SL_EV_ERR | SL_EV_HUP)))
		return false;
	so = sl_sock(s, (uint32_t)sd);
	seq = sl_load_acquire(&so->wake_seq);
	ready = SL_READ_ONCE(so->type) == SL_SOCK_TCP &&
		(!gen || SL_READ_ONCE(so->kp.gen) == *gen) &&
		!(SL_READ_ONCE(so->life) & SL_LIFE_PENDING) &&
		SL_READ_ONCE(so->state) == SL_TCP_ESTABLISHED && !SL_READ_ONCE(so->error) &&
		SL_READ_ONCE(so->errq_head) == SLUICE_IDX_NONE &&
		!SL_READ_ONCE(so->tcp.urg_data) &&
		!(SL_READ_ONCE(so->tcp.tflags) & SL_TF_FIN_RCVD) &&
		!(SL_READ_ONCE(so->flags) & (SL_SF_SHUT_RD | SL_SF_SHUT_WR | SL_SF_ORPHAN)) &&
		sl_tcp_lowat_met(so, SIZE_MAX);
	/* Acquire: the fields above were read before the sequence again. */
	return ready && sl_load_acquire(&so->wake_seq) == seq;
}

bool sl_rx_ready(struct sluice_stack *st, int sd, uint32_t gen, uint32_t events)
{
	return rx_ready(S(st), sd, &gen, events);
}

/*
 * After a sleep of poll()'s: each of fds either ready with plain data
 * (rx_ready(): POLLIN) or as this thread's last receive left it
 * (rx_idle(): nothing), and at least one ready?  Then fds' revents say
 * so and *ready how many: the look under the lock would find the same
 * (a pgbench thread woken for one of its clients' replies).
 */
static bool rx_woken(struct sl_stack *s, struct sluice_pollfd *fds, unsigned int n, int *ready)
{
	uint32_t seq;
	int k = 0;

	if (!n || n > RX_NOTES)
		return false;
	/* (revents written as it goes: on false the look writes them all.) */
	for (unsigned int i = 0; i < n; i++) {
		fds[i].revents = 0;
		if (rx_ready(s, fds[i].sd, NULL, (uint16_t)fds[i].events)) {
			fds[i].revents = SL_EV_IN;
			k++;
		} else if (!rx_idle(s, fds[i].sd, (uint16_t)fds[i].events, &seq)) {
			return false;
		}
	}
	*ready = k;
	return k > 0;
}

/* rx_idle() for every one of fds (n of them, at least one). */
static bool rx_idle_all(struct sl_stack *s, const struct sluice_pollfd *fds, unsigned int n)
{
	uint32_t seq;

	if (!n || n > RX_NOTES)
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (!rx_idle(s, fds[i].sd, (uint16_t)fds[i].events, &seq))
			return false;
	return true;
}

bool sl_poll_idle(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n)
{
	if (!rx_idle_all(S(st), fds, n))
		return false;
	for (unsigned int i = 0; i < n; i++)
		fds[i].revents = 0;
	return true;
}

long sluice_sendto(struct sluice_stack *st, int sd, const void *buf, size_t len, int flags,
		   const struct sockaddr_in *to)
{
	return sl_sendto_meta(st, sd, buf, len, flags, to, NULL);
}

long sl_sendto_meta(struct sluice_stack *st, int sd, const void *buf, size_t len, int flags,
		    const struct sockaddr_in *to, const struct sl_tx_meta *tx)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	long ret;
	bool nb, locked;

	/* The peer answers after this: a look for its answer right away
	 * (libpq's PQconsumeInput() after a query, a PostgreSQL backend's read
	 * after its reply, each before it sleeps) is not a spinner's. */
	rx_drain_sd = sd;
	for (;;) {
		ret = sock_get_nb(s, sd, &so, flags & MSG_DONTWAIT);
		if (ret)
			return ret;
		locked = true;
		nb = (so->flags & SL_SF_NONBLOCK) || (flags & MSG_DONTWAIT);
		if (so->type == SL_SOCK_UDP) {
			if (to && to->sin_family != AF_INET)
				ret = -EAFNOSUPPORT;
			else if (!to && !(so->flags & SL_SF_CONNECTED))
				ret = -EDESTADDRREQ;
			else
				ret = sl_udp_sendto(s, so, buf, len, flags,
						    to ? this_host(so, to->sin_addr.s_addr) : so->raddr,
						    to ? to->sin_port : so->rport, tx);
		} else if (len >= SL_LEND_MIN && !(flags & MSG_OOB)) {
			/* (MSG_OOB marks the end of what it queues: sl_tcp_send().) */
			ret = tcp_send_lent(s, so, buf, len, flags, &locked);
		} else {
			ret = sl_tcp_send(s, so, buf, len, flags, sl_now_held(s));
		}
		if (locked)
			sl_unlock(s);
		ret = checked(s, ret);
		if (ret != -EAGAIN || nb)
			return ret;
		ret = wait_for(s, sd, POLLOUT);
		if (ret)
			return ret;
	}
}

long sluice_send(struct sluice_stack *st, int sd, const void *buf, size_t len, int flags)
{
	return sluice_sendto(st, sd, buf, len, flags, NULL);
}

/*
 * Without the lock: is there certainly nothing to receive?  The reads race
 * with other processes, but a stale "nothing" only costs one more spin and
 * a stale "something" takes the lock and finds out.
 */
static bool rx_nothing(const struct sl_stack *s, int sd)
{
	const struct sl_sock *v;
	uint8_t type;

	if (sd < 0 || (uint32_t)sd >= s->max_sockets)
		return false;
	/* Broken by another process: take the lock path, which says so. */
	if (SL_READ_ONCE(s->r->state) != SLUICE_STATE_READY)
		return false;
	v = sl_sock(s, sd);
	if (SL_READ_ONCE(v->rxq_count) || SL_READ_ONCE(v->rxq_bytes) || SL_READ_ONCE(v->error) ||
	    (SL_READ_ONCE(v->flags) & SL_SF_SHUT_RD))
		return false;
	type = SL_READ_ONCE(v->type);
	if (type == SL_SOCK_UDP)
		return true;
	/* An in-order FIN moves ESTABLISHED to CLOSE-WAIT in the same input
	 * call, so the state alone says it: only the slot's first cache line
	 * is read, the one a delivery writes last (rxq_*). */
	return type == SL_SOCK_TCP && SL_READ_ONCE(v->state) == SL_TCP_ESTABLISHED;
}

long sl_errq_recv(struct sluice_stack *st, int sd, void *buf, size_t len,
		  struct sl_errq_rec *rec, bool *trunc)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	long ret;

	*trunc = false;
	if (sd < 0 || (uint32_t)sd >= s->max_sockets)
		return -EBADF;
	/* Nothing queued (read without the lock: a hint, as poll's). */
	if (SL_READ_ONCE(sl_sock(s, (uint32_t)sd)->errq_head) == SLUICE_IDX_NONE)
		return -EAGAIN;
	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	sl_sock_busy(s, so);
	ret = sl_errq_take(s, so, buf, len, rec, trunc);
	sl_unlock(s);
	return checked(s, ret);
}

long sluice_recvfrom(struct sluice_stack *st, int sd, void *buf, size_t len, int flags,
		     struct sockaddr_in *from)
{
	return sl_recvfrom_meta(st, sd, buf, len, flags, from, NULL);
}

long sl_recvfrom_meta(struct sluice_stack *st, int sd, void *buf, size_t len, int flags,
		      struct sockaddr_in *from, struct sl_rx_meta *meta)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	struct rx_note *nt;
	uint32_t saddr = 0;
	uint16_t sport = 0;
	long ret;
	bool nb, locked;

	/* MSG_ERRQUEUE: the stack queues no errors, and Linux answers an
	 * empty error queue at once, whatever the socket's blocking mode. */
	if (flags & MSG_ERRQUEUE)
		return sd < 0 || (uint32_t)sd >= s->max_sockets ? -EBADF : -EAGAIN;
	for (;;) {
		if ((flags & MSG_DONTWAIT) && len && !(flags & MSG_OOB) && !s->corrupt &&
		    rx_nothing(s, sd)) {
			/* A spinning caller comes straight back: pause so its
			 * reads do not fight the writer for the socket's lines.
			 * Not when this read ends a drain (the last call of the
			 * thread received on this socket) or follows its send
			 * on it: a program that reads until EAGAIN and then
			 * waits (libpq, every event loop), or reads right after
			 * its request or reply (pgbench, a PostgreSQL backend),
			 * paid the pause for nothing at each message, and a
			 * spinner's next look pauses. */
			if (rx_drain_sd != sd) {
				sl_count(s, SL_C_rx_backoff);
				sl_wait_backoff();
			}
			rx_drain_sd = -1;
			return -EAGAIN;
		}
		ret = sock_get_nb(s, sd, &so, flags & MSG_DONTWAIT);
		if (ret)
			return ret;
		locked = true;
		nb = (so->flags & SL_SF_NONBLOCK) || (flags & MSG_DONTWAIT);
		if (so->type == SL_SOCK_UDP) {
			ret = sl_udp_recvfrom(s, so, buf, len, flags, &saddr, &sport, meta);
		} else {
			/* SO_RCVLOWAT: a blocking read waits for the mark. */
			bool lowat = !nb && sl_tcp_lowat_wait(so, len);

			ret = -EAGAIN;
			if (flags & MSG_OOB) {
				/* Urgent data never waits (Linux's tcp_recv_urg()). */
				ret = sl_tcp_recv_urg(s, so, buf, len, flags);
				nb = true;
			} else if (!lowat && len >= SL_LEND_MIN && !(flags & (MSG_PEEK | MSG_TRUNC)) &&
				   (so->rxq_bytes >= SL_LEND_MIN ||
				    so->rx_lent_idx != SLUICE_IDX_NONE)) {
				/* By what there is to copy, not the buffer's
				 * size: libpq reads into 16 KiB, and each
				 * 100-byte reply took the lock twice.  A chain
				 * out (a dead borrower's) is taken back there. */
				ret = tcp_recv_lent(s, so, buf, len, flags, &locked);
			}
			if (ret == -EAGAIN && !lowat && !(flags & MSG_OOB))
				ret = sl_tcp_recv(s, so, buf, len, flags, sl_now_held(s));
			saddr = so->raddr;
			sport = so->rport;
			/* Drained, the lock still held: what it left, for
			 * the thread's next epoll, poll or select look
			 * (sl_rx_left_idle()). */
			nt = rx_note(s, sd);
			if (nt)
				nt->sd = -1;
			if (locked && ret > 0 && !so->rxq_bytes) {
				if (!nt)
					nt = &rx_left[rx_left_next++ % RX_NOTES];
				nt->s = s;
				nt->sd = sd;
				nt->gen = so->kp.gen;
				nt->seq = so->wake_seq;
				nt->ev = sock_events(s, so);
			}
		}
		if (locked)
			sl_unlock(s);
		ret = checked(s, ret);
		if (ret > 0)
			rx_drain_sd = sd;
		if (ret >= 0 && from) {
			memset(from, 0, sizeof(*from));
			from->sin_family = AF_INET;
			from->sin_addr.s_addr = saddr;
			from->sin_port = sport;
		}
		if (ret != -EAGAIN || nb)
			return ret;
		if (sl_udp_shut_empty(sl_sock(s, sd)))
			return 0;
		ret = wait_for(s, sd, POLLIN);
		if (ret)
			return ret;
	}
}

long sluice_recv(struct sluice_stack *st, int sd, void *buf, size_t len, int flags)
{
	return sluice_recvfrom(st, sd, buf, len, flags, NULL);
}

int sluice_shutdown(struct sluice_stack *st, int sd, int how)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return -EINVAL;
	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	if (so->type == SL_SOCK_TCP) {
		ret = sl_tcp_shutdown(s, so, how, sl_now_held(s));
	} else {
		/* Linux: an unconnected datagram socket is ENOTCONN, but is
		 * shut (and its waiters woken) all the same. */
		if (!(so->flags & SL_SF_CONNECTED))
			ret = -ENOTCONN;
		so->flags |= how == SHUT_WR ? SL_SF_SHUT_WR :
			     how == SHUT_RD ? SL_SF_SHUT_RD : SL_SF_SHUT_RD | SL_SF_SHUT_WR;
		sl_sock_wake(s, so);
	}
	sl_unlock(s);
	return ret;
}

/* Socket so (the lock held) is the kernel's now, held by this process
 * (struct sl_sock's ho_pid); epoll and poll waits are told (ho_seq). */
static void ho_mark(struct sl_stack *s, struct sl_sock *so)
{
	SL_WRITE_ONCE(so->ho_pid, (uint32_t)sl_self_pid());
	sl_store_release(&s->lib->ho_seq, s->lib->ho_seq + 1);
}

int sluice_handoff(struct sluice_stack *st, int sd)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret, kfd = -1;

	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	ret = sl_tcp_handoff(s, so, &kfd, sl_now_held(s));
	if (!ret)
		ho_mark(s, so);
	sl_unlock(s);
	return ret ? ret : kfd;
}

int sl_sock_ho_publish(struct sluice_stack *st, int sd, uint32_t gen)
{
	struct sl_stack *s = S(st);
	struct sl_sock *so;
	int ret = -ESTALE;

	if (sd < 0 || (uint32_t)sd >= s->max_sockets || s->corrupt)
		return -EBADF;
	if (sl_lock(s))
		return -EIO;
	so = sl_sock(s, sd);
	if (so->kp.gen == gen && sl_sock_type_live(so->type)) {
		ho_mark(s, so);
		ret = 0;
	}
	sl_unlock(s);
	return ret;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * SO_LINGER with a time: close waits until what was queued, and the FIN,
 * are acknowledged, or the time is up (socket(7); Linux then goes on
 * closing in the background and returns 0 either way, even for a
 * non-blocking socket).
 */
static void linger_wait(struct sl_stack *s, int sd, uint32_t gen, uint32_t secs)
{
	double end = mono_s() + secs;
	unsigned int spins = 0;

	for (;;) {
		struct sl_sock *so = sl_sock(s, (uint32_t)sd);
		bool busy;

		if (sl_lock(s))
			return;
		busy = so->kp.gen == gen && so->type == SL_SOCK_TCP &&
		       (so->state == SL_TCP_FIN_WAIT_1 || so->state == SL_TCP_CLOSING ||
			so->state == SL_TCP_LAST_ACK);
		sl_unlock(s);
		if (!busy || mono_s() >= end)
			return;
		sl_run_poll(s);
		if (++spins > 1000) {
			struct timespec nap = { 0, 200000 };

			nanosleep(&nap, NULL);
		}
	}
}

/* Close sd; with want_gen, only if it is still that generation (checked
 * under the lock: the slot may have been freed and handed out again). */
static int close_sd(struct sl_stack *s, int sd, bool want_gen, uint32_t want, enum get_wait mode)
{
	struct sl_sock *so;
	int ret = sock_get_mode(s, sd, &so, mode);
	uint32_t gen, linger = 0;

	if (ret)
		return ret;
	gen = so->kp.gen;
	/* A generation is closed once: a second closer of it (sweepers do
	 * not exclude each other) finds it closed, or another socket. */
	if (want_gen && (gen != want || (so->flags & SL_SF_ORPHAN))) {
		sl_unlock(s);
		return -EBADF;
	}
	if ((so->flags & SL_SF_LINGER) && so->type == SL_SOCK_TCP)
		linger = so->linger_s ? so->linger_s : UINT32_MAX;
	if (so->type == SL_SOCK_TCP)
		sl_tcp_close(s, so, sl_now_held(s));
	else
		sl_sock_free(s, so);
	sl_unlock(s);
	if (linger && linger != UINT32_MAX)
		linger_wait(s, sd, gen, linger);
	return (int)checked(s, 0);
}

int sluice_close(struct sluice_stack *st, int sd)
{
	return close_sd(S(st), sd, false, 0, GET_AS_SOCKET);
}

int sl_close_gen(struct sluice_stack *st, int sd, uint32_t gen)
{
	return close_sd(S(st), sd, true, gen, GET_DONTWAIT);
}

/* Linux (inet_getname()): no peer before the connection is up or after
 * it is gone. */
static int name_put(uint8_t type, uint8_t state, uint32_t addr, uint16_t port, bool peer,
		    struct sockaddr_in *out)
{
	if (peer && (!port || (type == SL_SOCK_TCP &&
			       (state == SL_TCP_CLOSED || state == SL_TCP_SYN_SENT))))
		return -ENOTCONN;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_addr.s_addr = addr;
	out->sin_port = port;
	return 0;
}

static bool busy_names(const struct sl_stack *s, int sd)
{
	const uint32_t *busy = s->lib->busy;

	return SL_READ_ONCE(busy[0]) == (uint32_t)sd + 1 || SL_READ_ONCE(busy[1]) == (uint32_t)sd + 1;
}

/*
 * getsockname/getpeername while the lock's holder is stopped: the slot is
 * read as it stands, which is whole unless the holder is in the middle of
 * changing this very socket.  A holder names a socket in busy[] before it
 * changes it (proto.h), so a read that finds it not named, and the same
 * holding of the lock (lock word and acquisition count) after as before,
 * saw no change half made.  -EAGAIN: the lock moved meanwhile, try it
 * again; -EBUSY: the holder is changing this socket, wait for it.
 */
static int name_of_stopped(struct sl_stack *s, int sd, struct sockaddr_in *out, bool peer)
{
	const struct sl_sock *so = sl_sock(s, sd);
	uint32_t seq = sl_load_acquire(&s->r->lock_seq), word = sl_load_acquire(&s->r->lock);
	uint32_t addr, flags;
	uint16_t port;
	uint8_t type, state;

	if (!(word & SLUICE_LOCK_HELD))
		return -EAGAIN;
	if (busy_names(s, sd))
		return -EBUSY;
	type = SL_READ_ONCE(so->type);
	flags = SL_READ_ONCE(so->flags);
	state = SL_READ_ONCE(so->state);
	addr = peer ? SL_READ_ONCE(so->raddr) : SL_READ_ONCE(so->laddr);
	port = peer ? SL_READ_ONCE(so->rport) : SL_READ_ONCE(so->lport);
	sl_smp_rmb();
	if (busy_names(s, sd))
		return -EBUSY;
	if (SL_READ_ONCE(s->r->lock) != word || SL_READ_ONCE(s->r->lock_seq) != seq)
		return -EAGAIN;
	if (!sl_sock_type_live(type) || (flags & SL_SF_ORPHAN))
		return -EBADF;
	return name_put(type, state, addr, port, peer, out);
}

static int name_of(struct sl_stack *s, int sd, struct sockaddr_in *addr, bool peer)
{
	struct sl_sock *so;
	int ret;

	if (!addr)
		return -EFAULT;
	if (sd < 0 || (uint32_t)sd >= s->max_sockets)
		return -EBADF;
	if (priv_get(s, sd, &so)) {
		ret = name_put(so->type, so->state, peer ? so->raddr : so->laddr,
			       peer ? so->rport : so->lport, peer, addr);
		sl_sock_priv_unlock(so);
		return ret;
	}
	/* A read waits for no stopped process (Linux's never waits for
	 * another process): as the slot stands, unless it is being changed. */
	for (;;) {
		ret = sock_get_mode(s, sd, &so, GET_DONTWAIT);
		if (ret != -EAGAIN)
			break;
		ret = name_of_stopped(s, sd, addr, peer);
		if (ret == -EBUSY) {
			ret = sock_get(s, sd, &so);
			break;
		}
		if (ret != -EAGAIN)
			return ret;	/* answered without the lock */
	}
	if (ret)
		return ret;
	ret = name_put(so->type, so->state, peer ? so->raddr : so->laddr,
		       peer ? so->rport : so->lport, peer, addr);
	sl_unlock(s);
	return ret;
}

int sluice_getsockname(struct sluice_stack *st, int sd, struct sockaddr_in *addr)
{
	return name_of(S(st), sd, addr, false);
}

int sluice_getpeername(struct sluice_stack *st, int sd, struct sockaddr_in *addr)
{
	return name_of(S(st), sd, addr, true);
}

static int flag_opt(uint16_t *word, uint16_t flag, const void *val, unsigned int len)
{
	int v;

	if (!val || len < sizeof(int))
		return -EINVAL;
	memcpy(&v, val, sizeof(v));
	if (v)
		*word |= flag;
	else
		*word &= ~flag;
	return 0;
}

/* An IPPROTO_IP boolean takes a byte too (Linux do_ip_setsockopt()). */
static int ip_flag_opt(uint16_t *word, uint16_t flag, int level, const void *val, unsigned int len)
{
	if (level == IPPROTO_IP && val && len >= 1 && len < sizeof(int))
		return flag_opt(word, flag, &(int){ *(const uint8_t *)val }, sizeof(int));
	return flag_opt(word, flag, val, len);
}

/* Boolean options kept in sl_sock.opt_flags; 0 if not one. */
static uint16_t opt_flag_of(int level, int name)
{
	if (level == IPPROTO_IP) {
		switch (name) {
		case IP_PKTINFO: return SL_SO_PKTINFO;
		case IP_RECVTOS: return SL_SO_RECVTOS;
		case IP_RECVTTL: return SL_SO_RECVTTL;
		case IP_RECVORIGDSTADDR: return SL_SO_ORIGDST;
		case IP_RECVERR: return SL_SO_RECVERR;
		}
		return 0;
	}
	if (level != SOL_SOCKET)
		return 0;
	switch (name) {
	case SO_OOBINLINE: return SL_SO_OOBINLINE;
	case SO_PASSCRED: return SL_SO_PASSCRED;
	case SO_NO_CHECK: return SL_SO_NO_CHECK;
	case SO_DEBUG: return SL_SO_DEBUG;
	case SO_DONTROUTE: return SL_SO_DONTROUTE;
	}
	return 0;
}

/* Since Linux 6.16 SO_PASSCRED is refused (EOPNOTSUPP) on sockets other
 * than AF_UNIX, AF_NETLINK and AF_BLUETOOTH: answer as this kernel does,
 * asked once of a kernel socket of ours. */
static pthread_once_t passcred_once = PTHREAD_ONCE_INIT;
static bool passcred_refused;

static void passcred_probe(void)
{
	int fd = sl_sys_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return;
	passcred_refused = sl_sys_setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) &&
			   errno == EOPNOTSUPP;
	sl_sys_close(fd);
}

static bool opt_refused(int level, int name)
{
	if (level != SOL_SOCKET || name != SO_PASSCRED)
		return false;
	pthread_once(&passcred_once, passcred_probe);
	return passcred_refused;
}

/* IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP: a struct ip_mreqn or ip_mreq,
 * as ip(7) takes them. */
static int mc_opt(struct sl_stack *s, struct sl_sock *so, int name, const void *val,
		  unsigned int len)
{
	char name_buf[IF_NAMESIZE];
	struct ip_mreqn mr;
	int ret = sl_ip_mreqn(val, len, sizeof(struct ip_mreq), &mr);

	if (ret)
		return ret;
	/* An index: lo, the stack's device, or (a stack with none) one the
	 * host has. */
	if (mr.imr_ifindex && mr.imr_ifindex != SL_LO_IFINDEX &&
	    (s->ifindex ? (unsigned int)mr.imr_ifindex != s->ifindex :
			  !if_indextoname((unsigned int)mr.imr_ifindex, name_buf)))
		return -ENODEV;
	/* Linux (ip_mc_find_dev()): an index names the interface, whatever
	 * the address says. */
	if (mr.imr_ifindex)
		mr.imr_address.s_addr = mr.imr_ifindex == SL_LO_IFINDEX ? htonl(INADDR_LOOPBACK) : 0;
	return name == IP_ADD_MEMBERSHIP ?
	       sl_udp_mc_join(s, so, mr.imr_multiaddr.s_addr, mr.imr_address.s_addr) :
	       sl_udp_mc_drop(s, so, mr.imr_multiaddr.s_addr, mr.imr_address.s_addr);
}

/* net.core.rmem_max and wmem_max, and net.ipv4.tcp_rmem's largest, read
 * once (Linux's defaults if not). */
static uint32_t rmem_max = 212992, wmem_max = 212992, tcp_rmem_max = 6291456;
static pthread_once_t mem_max_once = PTHREAD_ONCE_INIT;

static uint32_t sysctl_u32(const char *path, uint32_t dflt)
{
	char buf[32];

	if (sysctl_read(path, buf, sizeof(buf)) <= 0)
		return dflt;
	return (uint32_t)strtoul(buf, NULL, 10) ?: dflt;
}

static void mem_max_read(void)
{
	char buf[64];
	unsigned long a, b, c;

	rmem_max = sysctl_u32("/proc/sys/net/core/rmem_max", rmem_max);
	wmem_max = sysctl_u32("/proc/sys/net/core/wmem_max", wmem_max);
	/* "min default max" */
	if (sysctl_read("/proc/sys/net/ipv4/tcp_rmem", buf, sizeof(buf)) > 0 &&
	    sscanf(buf, "%lu %lu %lu", &a, &b, &c) == 3 && c && c <= UINT32_MAX)
		tcp_rmem_max = (uint32_t)c;
}

/* SO_RCVBUFFORCE / SO_SNDBUFFORCE need CAP_NET_ADMIN in the user
 * namespace that owns the network namespace (Linux sk_setsockopt()), not
 * merely in the caller's own: the kernel is asked, on a socket of ours,
 * before the stack lock is taken. */
static bool force_opt(int level, int name)
{
	return level == SOL_SOCKET && (name == SO_RCVBUFFORCE || name == SO_SNDBUFFORCE);
}

/*
 * IPPROTO_IPV6 options an AF_INET6 socket's IPv6 packets take (ipv6(7)).
 * The preload has had each judged by a kernel socket of the same type
 * (lib/preload/socket.c, v6_kept_set()) and gives the value it read back,
 * an int; here it is only kept.  IPV6_UNICAST_HOPS -1 is the default.
 */
static int ip6_setopt(struct sl_stack *s, struct sl_sock *so, int name, int v, const void *val,
		      unsigned int len)
{
	if (!val || len < sizeof(int))
		return -EINVAL;
	switch (name) {
	case IPV6_TCLASS:
		so->ip6_tclass = (uint8_t)(v < 0 ? 0 : v);
		return 0;
	case IPV6_UNICAST_HOPS:
		so->ip6_hops = (uint16_t)(v < 0 || v > 255 ? 0 : v + 1);
		return 0;
	case IPV6_RECVERR:
		/* Off empties the queue, as Linux's do_ipv6_setsockopt(). */
		so->ip6_opt = (uint8_t)((so->ip6_opt & ~SL_S6_RECVERR) | (v ? SL_S6_RECVERR : 0));
		if (!v && so->life != SL_LIFE_PRIVATE)
			sl_errq_purge(s, so);
		return 0;
	case IPV6_DONTFRAG:
		so->ip6_opt = (uint8_t)((so->ip6_opt & ~SL_S6_DONTFRAG) | (v ? SL_S6_DONTFRAG : 0));
		return 0;
	case IPV6_MTU_DISCOVER:
		if (v < 0 || v > IPV6_PMTUDISC_OMIT)
			return -EINVAL;
		so->ip6_opt = (uint8_t)((so->ip6_opt & ~SL_S6_PMTU_MASK) |
					(v + 1) << SL_S6_PMTU_SHIFT);
		return 0;
	default:
		return -ENOPROTOOPT;
	}
}

static int setsockopt_on(struct sl_stack *s, struct sl_sock *so, int level, int name,
			 const void *val, unsigned int len, bool net_admin)
{
	int ret = 0, v = 0;

	if (val && len >= sizeof(int))
		memcpy(&v, val, sizeof(v));
	if (opt_refused(level, name)) {
		ret = -EOPNOTSUPP;
	} else if (level == SOL_SOCKET && (name == SO_TIMESTAMP || name == SO_TIMESTAMPNS)) {
		/* A datagram's arrival, or a stream's last (tcp_input.c).  As
		 * Linux's sock_set_timestamp(): either on turns the other's
		 * form off, either off turns both off. */
		ret = flag_opt(&so->opt_flags, SL_SO_TIMESTAMP, val, len);
		if (!ret && v && name == SO_TIMESTAMPNS)
			so->ip6_opt |= SL_S6_TSNS;
		else if (!ret)
			so->ip6_opt &= (uint8_t)~SL_S6_TSNS;
	} else if (level == IPPROTO_IP && name == IP_RECVERR) {
		/* Linux ip_sock_set_recverr(): off empties the queue. */
		ret = ip_flag_opt(&so->opt_flags, SL_SO_RECVERR, level, val, len);
		if (!ret && !(so->opt_flags & SL_SO_RECVERR))
			sl_errq_purge(s, so);
	} else if (level == IPPROTO_TCP && name == TCP_INQ && so->type == SL_SOCK_TCP) {
		/* Linux do_tcp_setsockopt(): 0 or 1. */
		if (val && len >= sizeof(int) && (v < 0 || v > 1))
			ret = -EINVAL;
		else
			ret = flag_opt(&so->opt_flags, SL_SO_TCP_INQ, val, len);
	} else if (level == IPPROTO_IP && name == IP_MTU_DISCOVER) {
		/* An int, or a byte (do_ip_setsockopt()); IP_PMTUDISC_DONT
		 * to IP_PMTUDISC_OMIT. */
		if (val && len && len < sizeof(int))
			v = *(const uint8_t *)val;
		if (!val || !len || v < IP_PMTUDISC_DONT || v > IP_PMTUDISC_OMIT)
			ret = -EINVAL;
		else
			so->pmtudisc = (uint8_t)(v + 1);
	} else if (opt_flag_of(level, name)) {
		ret = ip_flag_opt(&so->opt_flags, opt_flag_of(level, name), level, val, len);
	} else if (level == SOL_SOCKET && name == SO_INCOMING_CPU) {
		/* Linux's sk_setsockopt(): any int, kept until a packet moves
		 * it (its RPS and reuseport steering have no twin here). */
		if (!val || len < sizeof(int))
			ret = -EINVAL;
		else
			SL_WRITE_ONCE(so->incoming_cpu, v);
	} else if (level == SOL_SOCKET && name == SO_REUSEADDR) {
		ret = flag_opt(&so->flags, SL_SF_REUSEADDR, val, len);
	} else if (level == SOL_SOCKET && name == SO_BROADCAST) {
		ret = flag_opt(&so->flags, SL_SF_BROADCAST, val, len);
	} else if (level == SOL_SOCKET && name == SO_REUSEPORT) {
		/* As Linux: set before bind to join a group. */
		ret = flag_opt(&so->flags, SL_SF_REUSEPORT, val, len);
	} else if (level == SOL_SOCKET && name == SO_LINGER) {
		struct linger lg;

		if (!val || len < sizeof(lg)) {
			ret = -EINVAL;
		} else {
			memcpy(&lg, val, sizeof(lg));
			so->flags = lg.l_onoff ? so->flags | SL_SF_LINGER : so->flags & ~SL_SF_LINGER;
			/* Linux caps the time at MAX_SCHEDULE_TIMEOUT / HZ. */
			so->linger_s = lg.l_linger < 0 ? 0 : (uint32_t)lg.l_linger;
		}
	} else if (level == SOL_SOCKET && name == SO_RCVLOWAT) {
		/* Linux: negative is INT_MAX, 0 is 1; TCP caps it at half the
		 * receive buffer a user set, else half tcp_rmem's largest
		 * (tcp_set_rcvlowat()). */
		uint32_t u = v < 0 ? INT_MAX : (uint32_t)v, cap;

		pthread_once(&mem_max_once, mem_max_read);
		cap = (so->opt_flags & SL_SO_RCVBUF_SET) ? so->rcvbuf / 2 : tcp_rmem_max / 2;
		if (so->type == SL_SOCK_TCP && u > cap)
			u = cap;
		if (!val || len < sizeof(int))
			ret = -EINVAL;
		else
			so->rcvlowat = u ? u : 1;
	} else if (level == SOL_SOCKET && (name == SO_RCVBUFFORCE || name == SO_SNDBUFFORCE)) {
		/* Linux: CAP_NET_ADMIN passes the cap; still at most INT_MAX/2
		 * (negative is 0), doubled, with the floor. */
		int64_t u = v < 0 ? 0 : v > INT_MAX / 2 ? INT_MAX / 2 : v;

		u *= 2;
		if (!val || len < sizeof(int))
			ret = -EINVAL;
		else if (!net_admin)
			ret = -EPERM;
		else if (name == SO_RCVBUFFORCE)
			so->rcvbuf = u < SL_SO_RCVBUF_MIN ? SL_SO_RCVBUF_MIN : (uint32_t)u;
		else
			so->sndbuf = u < SL_SO_SNDBUF_MIN ? SL_SO_SNDBUF_MIN : (uint32_t)u;
		if (!ret && name == SO_RCVBUFFORCE)
			so->opt_flags |= SL_SO_RCVBUF_SET;
		else if (!ret && so->type == SL_SOCK_TCP)
			so->tcp.tflags |= SL_TF_SNDBUF_SET;
	} else if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF)) {
		/*
		 * As Linux (sk_setsockopt()): the value, taken as unsigned, is
		 * capped at net.core.rmem_max / wmem_max, then doubled for
		 * bookkeeping, with a floor.  So INT_MAX or -1 gives twice the
		 * cap, never a wrapped size.
		 */
		uint32_t u = (uint32_t)v, cap;

		pthread_once(&mem_max_once, mem_max_read);
		cap = name == SO_RCVBUF ? rmem_max : wmem_max;
		if (cap > INT_MAX / 2)
			cap = INT_MAX / 2;
		u = (u > cap ? cap : u) * 2;
		if (!val || len < sizeof(int))
			ret = -EINVAL;
		else if (name == SO_RCVBUF)
			so->rcvbuf = u < SL_SO_RCVBUF_MIN ? SL_SO_RCVBUF_MIN : u;
		else
			so->sndbuf = u < SL_SO_SNDBUF_MIN ? SL_SO_SNDBUF_MIN : u;
		if (!ret && name == SO_RCVBUF)
			so->opt_flags |= SL_SO_RCVBUF_SET;	/* Linux SOCK_RCVBUF_LOCK */
		else if (!ret && so->type == SL_SOCK_TCP)
			so->tcp.tflags |= SL_TF_SNDBUF_SET;	/* Linux SOCK_SNDBUF_LOCK */
	} else if (level == IPPROTO_IP && name == IP_TTL) {
		/* ip(7): 1 to 255, or -1 for the default (64); an int, or
		 * a byte (do_ip_setsockopt()). */
		if (val && len && len < sizeof(int))
			v = *(const uint8_t *)val;
		if (!val || !len)
			ret = -EINVAL;
		else if (v == -1)
			so->ip_ttl = 0;
		else if (v < 1 || v > 255)
			ret = -EINVAL;
		else
			so->ip_ttl = (uint8_t)v;
	} else if (level == IPPROTO_IPV6 && (so->flags & SL_SF_V6)) {
		ret = ip6_setopt(s, so, name, v, val, len);
	} else if (level == IPPROTO_IP && name == IP_TOS) {
		/* Linux (do_ip_setsockopt()): a byte, or an int (no bytes: 0);
		 * on a stream the two ECN bits stay TCP's (and TCP sets none). */
		if (!val && len)
			ret = -EFAULT;
		else {
			uint8_t tos = len >= sizeof(int) ? (uint8_t)v : len ? *(const uint8_t *)val : 0;

			so->ip_tos = so->type == SL_SOCK_TCP ? (uint8_t)(tos & ~3) : tos;
		}
	} else if (level == IPPROTO_IP &&
		   (name == IP_ADD_MEMBERSHIP || name == IP_DROP_MEMBERSHIP)) {
		ret = mc_opt(s, so, name, val, len);
	} else if (level == IPPROTO_IP && (name == IP_MULTICAST_TTL || name == IP_MULTICAST_LOOP ||
					   name == IP_MULTICAST_ALL ||
					   name == IP_MULTICAST_IF)) {
		ret = sl_udp_mc_setopt(s, so, name, val, len);
	} else if (level == SOL_SOCKET && (name == SO_BINDTODEVICE || name == SO_BINDTOIFINDEX)) {
		/* Not the stack's (the caller hands the socket to the kernel):
		 * a name is any length, not an int's (TCP's checks below said
		 * EINVAL for "lo" and its NUL, or "" to unbind). */
		ret = -ENOPROTOOPT;
	} else if (so->type == SL_SOCK_UDP && level == SOL_SOCKET && name == SO_KEEPALIVE) {
		/* Kept on any socket as Linux does (only TCP sends probes). */
		ret = flag_opt(&so->flags, SL_SF_KEEPALIVE, val, len);
	} else if (so->type == SL_SOCK_TCP) {
		ret = sl_tcp_setsockopt(s, so, level, name, val, len);
	} else {
		ret = -ENOPROTOOPT;
	}
	return ret;
}

int sluice_setsockopt(struct sluice_stack *st, int sd, int level, int name, const void *val,
		      unsigned int len)
{
	struct sl_stack *s = S(st);
	bool net_admin = force_opt(level, name) && sl_sys_net_admin();
	struct sl_sock *so;
	uint32_t ev;
	int ret;

	/* Joining a group changes the stack's multicast table. */
	if (!(level == IPPROTO_IP && (name == IP_ADD_MEMBERSHIP || name == IP_DROP_MEMBERSHIP)) &&
	    priv_get(s, sd, &so)) {
		ret = setsockopt_on(s, so, level, name, val, len, net_admin);
		sl_sock_priv_unlock(so);
		return ret;
	}
	ret = sock_get(s, sd, &so);
	if (ret)
		return ret;
	ev = sl_sock_events(s, so);
	ret = setsockopt_on(s, so, level, name, val, len, net_admin);
	/*
	 * An option that changes readiness (SO_RCVLOWAT, SO_SNDBUF) is a
	 * change of the socket, woken as any other: Linux's
	 * tcp_set_rcvlowat() calls tcp_data_ready(), sk_setsockopt() the
	 * socket's sk_write_space().  An epoll set looks at a socket again
	 * only when it is woken (preload/epoll.c): lowering the mark below
	 * what was queued left a sleeper on the set asleep.  (A socket the
	 * stack does not see yet, above, is not connected: its options
	 * change nothing of its readiness.)
	 */
	if (!ret && sl_sock_type_live(so->type) && sl_sock_events(s, so) != ev)
		sl_sock_wake(s, so);
	sl_unlock(s);
	return ret;
}

/*
 * SO_COOKIE or SO_NETNS_COOKIE of a kernel socket made for the asking and
 * closed at once: an AF_UNIX datagram socket, in the caller's network
 * namespace (a stack's sockets are made in it).
 */
static int kernel_cookie(int name, uint64_t *c)
{
	socklen_t l = sizeof(*c);
	int ks = sl_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret;

	if (ks < 0)
		return ks;
	ret = sl_sys_getsockopt(ks, SOL_SOCKET, name, c, &l);
	sl_sys_close(ks);
	return ret;
}

/*
 * SO_COOKIE: a number no other socket of the host has while the machine
 * runs, made at the first ask as Linux's sock_gen_cookie() makes it, kept
 * in the slot until the socket ends (every process and fd of it sees the
 * same).  Taken from the kernel's own generator: the cookie of a kernel
 * socket made for it and closed at once, so no socket of the kernel's has
 * it, now or later, and no other socket of a stack (each took its own).
 * Three system calls, once a socket, only when a program asks.  Where the
 * kernel refuses the socket (a sandbox), the slot's index and generation
 * under the top bit, which the kernel's counter never reaches: unique in
 * the stack.  Neither is known to sock_diag or to BPF's maps.
 */
static uint64_t sock_cookie(struct sl_sock *so)
{
	uint64_t c = SL_READ_ONCE(so->cookie), want = 0;

	if (c)
		return c;
	if (kernel_cookie(SO_COOKIE, &c) || !c)
		c = 1ull << 63 | (uint64_t)so->kp.gen << 24 | (so->idx & 0xffffff);
	if (!sl_cmpxchg(&so->cookie, &want, c))
		c = want;
	return c;
}

/* The option's whole value into val (*len bytes of room, at least 256). */
static int getsockopt_whole(struct sl_stack *s, struct sl_sock *so, int level, int name,
			    void *val, unsigned int *len)
{
	int ret = 0, v;

	if (opt_refused(level, name)) {
		ret = -EOPNOTSUPP;
	} else if (level == SOL_SOCKET && (name == SO_TIMESTAMP || name == SO_TIMESTAMPNS)) {
		/* Linux: SO_TIMESTAMP is on only in its own form. */
		v = (so->opt_flags & SL_SO_TIMESTAMP) &&
		    !(so->ip6_opt & SL_S6_TSNS) == (name == SO_TIMESTAMP);
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == IPPROTO_TCP && name == TCP_INQ && so->type == SL_SOCK_TCP) {
		v = !!(so->opt_flags & SL_SO_TCP_INQ);
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == IPPROTO_IP && name == IP_MTU_DISCOVER) {
		v = so->pmtudisc ? so->pmtudisc - 1 : IP_PMTUDISC_WANT;
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == IPPROTO_IP && name == IP_MTU) {
		/* Linux: the connected route's MTU (learnt path MTU included;
		 * lo's, capped at IP_MAX_MTU 65535, to an address of our own), else ENOTCONN.  A TCP
		 * socket keeps its route after the connection ends. */
		if (!so->raddr || (so->type != SL_SOCK_TCP && !(so->flags & SL_SF_CONNECTED))) {
			ret = -ENOTCONN;
		} else {
			v = sl_ip_is_local(s, so->raddr) ? 65535 : (int)sl_pmtu_get(s, so->raddr);
			memcpy(val, &v, sizeof(v));
			*len = sizeof(v);
		}
	} else if (level == IPPROTO_IPV6 && name == IPV6_MTU && (so->flags & SL_SF_V6) &&
		   sl_v6tok(so->raddr)) {
		/* Linux: the connected route's MTU, as IP_MTU's (::1's and our
		 * own address's lo's, 65536), else ENOTCONN.  The handles'
		 * path MTUs are kept IPv4-shaped, 20 less (ip.c). */
		if (so->type != SL_SOCK_TCP && !(so->flags & SL_SF_CONNECTED)) {
			ret = -ENOTCONN;
		} else {
			v = sl_ip_is_local(s, so->raddr) ? 65536 : (int)sl_pmtu_get(s, so->raddr) + 20;
			memcpy(val, &v, sizeof(v));
			*len = sizeof(v);
		}
	} else if (opt_flag_of(level, name)) {
		v = !!(so->opt_flags & opt_flag_of(level, name));
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == SOL_SOCKET && name == SO_INCOMING_CPU) {
		v = SL_READ_ONCE(so->incoming_cpu);
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == SOL_SOCKET && (name == SO_COOKIE || name == SO_NETNS_COOKIE)) {
		uint64_t c = name == SO_COOKIE ? sock_cookie(so) : 0;

		ret = name == SO_COOKIE ? 0 : kernel_cookie(SO_NETNS_COOKIE, &c);
		memcpy(val, &c, sizeof(c));
		*len = sizeof(c);
	} else if (level == SOL_SOCKET && name == SO_RCVLOWAT) {
		v = so->rcvlowat ? (int)so->rcvlowat : 1;
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == SOL_SOCKET && name == SO_ERROR) {
		v = sl_sock_error(s, so);
		so->error = 0;
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF)) {
		v = (int)(name == SO_RCVBUF ? so->rcvbuf : so->sndbuf);
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == SOL_SOCKET && (name == SO_REUSEADDR || name == SO_BROADCAST ||
					   name == SO_REUSEPORT)) {
		v = !!(so->flags & (name == SO_REUSEADDR ? SL_SF_REUSEADDR :
				    name == SO_BROADCAST ? SL_SF_BROADCAST : SL_SF_REUSEPORT));
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == SOL_SOCKET && name == SO_LINGER) {
		struct linger lg = {
			.l_onoff = !!(so->flags & SL_SF_LINGER), .l_linger = (int)so->linger_s,
		};

		if (*len < sizeof(lg)) {
			ret = -EINVAL;
		} else {
			memcpy(val, &lg, sizeof(lg));
			*len = sizeof(lg);
		}
	} else if (level == SOL_SOCKET && name == SO_BINDTODEVICE) {
		/* Bound to no device: Linux answers an empty name (sshd asks,
		 * for its routing domain). */
		*len = 0;
	} else if (level == SOL_SOCKET && name == SO_TYPE) {
		v = so->type == SL_SOCK_TCP ? SOCK_STREAM : SOCK_DGRAM;
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == IPPROTO_IP && (name == IP_TTL || name == IP_TOS)) {
		v = name == IP_TTL ? (so->ip_ttl ? so->ip_ttl : 64) : so->ip_tos;
		memcpy(val, &v, sizeof(v));
		*len = sizeof(v);
	} else if (level == IPPROTO_IP && (name == IP_MULTICAST_TTL || name == IP_MULTICAST_LOOP ||
					   name == IP_MULTICAST_ALL ||
					   name == IP_MULTICAST_IF)) {
		ret = sl_udp_mc_getopt(s, so, name, val, len);
	} else if (so->type == SL_SOCK_TCP) {
		ret = sl_tcp_getsockopt(s, so, level, name, val, len);
	} else {
		ret = -ENOPROTOOPT;
	}
	return ret;
}

int sluice_getsockopt(struct sluice_stack *st, int sd, int level, int name, void *val,
		      unsigned int *len)
{
	struct sl_stack *s = S(st);
	uint8_t whole[256] __attribute__((aligned(8)));
	unsigned int n = sizeof(whole);
	struct sl_sock *so;
	int ret;

	/* As Linux: a negative length is EINVAL; a short one gets the value
	 * cut to it (an int option's first bytes, a struct's head). */
	if (!len || *len > INT_MAX)
		return -EINVAL;
	if (*len && !val)
		return -EFAULT;
	/* Linux's sk_getsockopt(): a cookie in fewer than 8 bytes is
	 * EINVAL, the namespace's in other than 8. */
	if (level == SOL_SOCKET && ((name == SO_COOKIE && *len < sizeof(uint64_t)) ||
				    (name == SO_NETNS_COOKIE && *len != sizeof(uint64_t))))
		return -EINVAL;
	if (priv_get(s, sd, &so)) {
		ret = getsockopt_whole(s, so, level, name, whole, &n);
		sl_sock_priv_unlock(so);
	} else {
		ret = sock_get(s, sd, &so);
		if (ret)
			return ret;
		ret = getsockopt_whole(s, so, level, name, whole, &n);
		sl_unlock(s);
	}
	if (ret)
		return ret;
	if (level == IPPROTO_IP && n == sizeof(int) && *len && *len < sizeof(int)) {
		int v;

		/* Linux do_ip_getsockopt(): an int from 0 to 255 asked for
		 * in fewer bytes comes as one byte. */
		memcpy(&v, whole, sizeof(v));
		if (v >= 0 && v <= 255) {
			*(uint8_t *)val = (uint8_t)v;
			*len = 1;
			return 0;
		}
	}
	if (n > *len)
		n = *len;
	memcpy(val, whole, n);
	*len = n;
	return 0;
}
