// SPDX-License-Identifier: BSD-2-Clause
/*
 * The socket table: allocation, the two hashes (by 4-tuple for delivery,
 * by local port for bind conflicts), lookup, binding and wakeups.  All of
 * it runs under the stack lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "os/os.h"
#include "proto/proto.h"

static uint32_t *tuple_bucket(struct sl_stack *s, uint32_t laddr, uint16_t lport,
			      uint32_t raddr, uint16_t rport)
{
	return s->hash + (sl_tuple_hash(laddr, lport, raddr, rport) & (s->hash_buckets - 1));
}

static uint32_t *port_bucket(struct sl_stack *s, uint16_t lport)
{
	uint32_t h = lport * 0x9e3779b1u;

	return s->hash + s->hash_buckets +
	       ((h >> 16) & (s->hash_buckets - 1));
}

uint32_t sl_sock_port_head(struct sl_stack *s, uint16_t lport)
{
	return *port_bucket(s, lport);
}

/* A slot of the ready pool for the lock's holder, taken back from the
 * pool (the free list is empty); NONE if the pool has none either. */
static uint32_t ready_take_back(struct sl_stack *s)
{
	for (unsigned int i = 0; i < SL_READY_N; i++) {
		uint64_t e = SL_READ_ONCE(s->lib->ready[i]);

		if ((uint32_t)e < s->max_sockets && !(e >> 32) &&
		    sl_sock(s, (uint32_t)e)->type == SL_SOCK_RESERVED &&
		    sl_cmpxchg(&s->lib->ready[i], &e, SL_READY_NONE)) {
			SL_WRITE_ONCE(s->lib->ready_want, 1);
			return (uint32_t)e;
		}
	}
	return SLUICE_IDX_NONE;
}

/* A fresh socket of type in slot so, which is the caller's alone. */
static void sock_init(struct sl_stack *s, struct sl_sock *so, uint32_t idx, uint8_t type)
{
	uint32_t gen = so->kp.gen, xseq = so->xseq, xsleepers = so->xsleepers;

	/* Resets the module's part too: events, armed, kstate NONE. */
	memset(so, 0, s->sock_size);
	SL_KILL_POINT("sock_alloc");
	so->idx = idx;
	so->kp.gen = gen + 1;
	so->xseq = xseq;
	so->xsleepers = xsleepers;
	so->type = type;
	so->next_idx = so->hash_next = so->port_next = SLUICE_IDX_NONE;
	so->parent_idx = SLUICE_IDX_NONE;
	so->rxq_head = so->rxq_tail = SLUICE_IDX_NONE;
	so->rx_lent_idx = so->tx_lent_idx = SLUICE_IDX_NONE;
	so->errq_head = so->errq_tail = SLUICE_IDX_NONE;
	so->wheel_next = so->wheel_prev = SLUICE_IDX_NONE;
	/* A TCP socket closed before connect() or listen() frees its queues:
	 * they must be empty, not buffer 0. */
	so->tcp.sndq_head = so->tcp.sndq_tail = so->tcp.sndq_hint = SLUICE_IDX_NONE;
	so->tcp.ooo_head = so->tcp.acc_head = so->tcp.acc_tail = SLUICE_IDX_NONE;
	so->tcp.kid_next = so->tcp.kid_prev = so->tcp.kid_head = SLUICE_IDX_NONE;
	sl_sock_park_none(so);
	if (type == SL_SOCK_UDP)
		memset(&so->udp, 0, sizeof(so->udp));
	so->rcvbuf = 256 * 1024;
	so->sndbuf = 256 * 1024;
	so->owner_pid = sl_self_pid();
	so->incoming_cpu = -1;
}

struct sl_sock *sl_sock_alloc(struct sl_stack *s, uint8_t type)
{
	struct sl_region *r = s->lib;
	uint32_t idx = r->sock_free_idx;
	struct sl_sock *so;

	if (idx == SLUICE_IDX_NONE && r->sock_fresh < s->max_sockets) {
		/* A slot no socket has had: its memory is committed now. */
		idx = r->sock_fresh;
		so = sl_sock(s, idx);
		/* Above any generation the slot had before a trim gave it back. */
		so->kp.gen = r->sock_gen_floor;
		so->idx = idx;
		so->next_idx = SLUICE_IDX_NONE;
		SL_WRITE_ONCE(r->sock_fresh, idx + 1);
	} else if (idx == SLUICE_IDX_NONE) {
		idx = ready_take_back(s);
		if (idx != SLUICE_IDX_NONE) {
			so = sl_sock(s, idx);
			sl_sock_busy2(s, so);
			sock_init(s, so, idx, type);
			sl_store_max(&s->lib->sock_peak, sl_fetch_add(&s->r->sock_used, 1) + 1);
			return so;
		}
	}
	if (idx >= s->max_sockets) {
		if (idx != SLUICE_IDX_NONE)
			sl_corrupt(s, SL_C_corrupt_sock_idx, idx);
		sl_count(s, SL_C_nosock);
		return NULL;
	}
	so = sl_sock(s, idx);
	/* Off the free list from here: a holder that dies before its type is
	 * set leaves a free slot recovery puts back; after, a socket named
	 * as being changed. */
	sl_sock_busy2(s, so);
	r->sock_free_idx = so->next_idx;
	/* Atomic: socket() counts the slots it takes from the pool, which
	 * are not counted until then, without the lock. */
	if (type != SL_SOCK_RESERVED)
		sl_store_max(&s->lib->sock_peak, sl_fetch_add(&s->r->sock_used, 1) + 1);
	sock_init(s, so, idx, type);
	return so;
}

/*
 * Sockets before the stack sees them.
 *
 * socket() takes a slot from the ready pool (sl_region.ready[]) without
 * the stack lock, and until the socket is bound, connected, listened on
 * or used for data (SL_LIFE_PRIVATE), only its descriptor reaches it:
 * no hash, timer, queue or packet does.  Its options are then set and
 * read under its own priv_lock.  So a program that makes a connection
 * never waits for the stack lock before connect(), and while the lock's
 * holder is stopped a non-blocking connect() is queued (pend[]) for the
 * next holder to make, as Linux queues a SYN, rather than waiting for a
 * process that may never run again.
 *
 * Death at any point: a pool slot being taken names its taker (high half
 * of the entry); one whose taker died before it typed the slot goes back
 * to the free list (sl_sock_ready_fill()); one typed is a socket of a dead
 * process, which the sweep of dead processes' sockets closes.  A pending
 * connect stays in pend[] until a holder has made it; one the holder died
 * making is a socket named busy, which recovery resets.
 */
struct sl_sock *sl_sock_claim(struct sl_stack *s, uint8_t type)
{
	uint64_t me = (uint64_t)(uint32_t)sl_self_pid() << 32;

	for (unsigned int i = 0; i < SL_READY_N; i++) {
		uint64_t e = SL_READ_ONCE(s->lib->ready[i]);
		struct sl_sock *so;
		uint32_t idx = (uint32_t)e;

		if (idx >= s->max_sockets || (e >> 32) ||
		    !sl_cmpxchg(&s->lib->ready[i], &e, e | me))
			continue;
		so = sl_sock(s, idx);
		if (sl_load_acquire(&so->type) != SL_SOCK_RESERVED || so->idx != idx) {
			/* Not what the pool holds (a scribble): the entry is
			 * emptied for the holder to fill. */
			e |= me;
			sl_cmpxchg(&s->lib->ready[i], &e, SL_READY_NONE);
			SL_WRITE_ONCE(s->lib->ready_want, 1);
			continue;
		}
		if (type == SL_SOCK_UDP)
			memset(&so->udp, 0, sizeof(so->udp));
		so->owner_pid = (uint32_t)(me >> 32);
		so->life = SL_LIFE_PRIVATE;
		sl_store_release(&so->type, type);
		sl_store_max(&s->lib->sock_peak, sl_fetch_add(&s->r->sock_used, 1) + 1);
		sl_store_release(&s->lib->ready[i], SL_READY_NONE);
		SL_WRITE_ONCE(s->lib->ready_want, 1);
		return so;
	}
	return NULL;
}

void sl_sock_ready_fill(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	SL_WRITE_ONCE(r->ready_want, 0);
	for (unsigned int i = 0; i < SL_READY_N; i++) {
		uint64_t e = SL_READ_ONCE(r->ready[i]);
		uint32_t idx = (uint32_t)e;
		pid_t taker = (pid_t)(e >> 32);
		struct sl_sock *so;

		if (idx != SLUICE_IDX_NONE && taker) {
			/* Being taken: done soon, unless the taker died. */
			if (!sl_pid_dead(taker)) {
				SL_WRITE_ONCE(r->ready_want, 1);
				continue;
			}
			if (!sl_cmpxchg(&r->ready[i], &e, SL_READY_NONE))
				continue;
			if (idx < s->max_sockets && sl_sock(s, idx)->type == SL_SOCK_RESERVED) {
				so = sl_sock(s, idx);
				sl_sock_busy2(s, so);
				sl_sock_free(s, so);
			}
		} else if (idx != SLUICE_IDX_NONE) {
			if (idx < s->max_sockets && sl_sock(s, idx)->type == SL_SOCK_RESERVED)
				continue;
			/* Names no pool slot (a scribble): emptied. */
			if (!sl_cmpxchg(&r->ready[i], &e, SL_READY_NONE))
				continue;
		}
		if (r->sock_free_idx == SLUICE_IDX_NONE && r->sock_fresh >= s->max_sockets)
			return;	/* every slot is in use: the pool waits */
		so = sl_sock_alloc(s, SL_SOCK_RESERVED);
		if (!so)
			return;
		sl_store_release(&r->ready[i], (uint64_t)so->idx);
	}
}

/* A holder of a private socket's lock that will never let go: a dead
 * process, or a value no process can have (a scribble; pids stop below
 * 2^22). */
static bool priv_holder_gone(uint32_t v)
{
	return v > (1u << 22) || sl_pid_dead((pid_t)v);
}

/* A process's own lock on a private socket (SL_LIFE_PRIVATE).  Held for
 * a few stores; one whose holder is gone is taken over. */
void sl_sock_priv_lock(struct sl_sock *so)
{
	uint32_t me = (uint32_t)sl_self_pid();

	for (unsigned int n = 0;; n++) {
		uint32_t v = 0;

		if (sl_cmpxchg(&so->priv_lock, &v, me))
			return;
		if (v != me && n > 64 && priv_holder_gone(v) && sl_cmpxchg(&so->priv_lock, &v, me))
			return;
		if (n > 16)
			sl_sys_yield();
	}
}

bool sl_sock_priv_trylock(struct sl_sock *so)
{
	uint32_t v = 0, me = (uint32_t)sl_self_pid();

	return sl_cmpxchg(&so->priv_lock, &v, me) ||
	       (v != me && priv_holder_gone(v) && sl_cmpxchg(&so->priv_lock, &v, me));
}

void sl_sock_priv_unlock(struct sl_sock *so)
{
	sl_store_release(&so->priv_lock, 0);
}

bool sl_sock_pend(struct sl_stack *s, struct sl_sock *so)
{
	for (unsigned int i = 0; i < SL_PEND_N; i++) {
		uint32_t v = SLUICE_IDX_NONE;

		if (sl_cmpxchg(&s->lib->pend[i], &v, so->idx)) {
			sl_store_release(&s->lib->pend_hint, 1);
			return true;
		}
	}
	return false;
}

void sl_sock_pending_run_slow(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	sl_xchg(&r->pend_hint, 0);
	for (unsigned int i = 0; i < SL_PEND_N; i++) {
		uint32_t idx = sl_load_acquire(&r->pend[i]);
		struct sl_sock *so;

		if (idx == SLUICE_IDX_NONE)
			continue;
		so = idx < s->max_sockets ? sl_sock(s, idx) : NULL;
		if (so && so->type == SL_SOCK_TCP && (so->life & SL_LIFE_PENDING)) {
			uint32_t daddr = so->raddr;
			uint16_t dport = so->rport;
			int ret;

			sl_sock_busy(s, so);
			so->life &= (uint8_t)~SL_LIFE_PENDING;
			so->raddr = 0;
			so->rport = 0;
			ret = sl_tcp_open(s, so, daddr, dport);
			if (ret && ret != -EINPROGRESS) {
				/* As a SYN that failed: the error, POLLERR. */
				so->error = -ret;
				sl_sock_wake(s, so);
			}
		}
		/* The slot is empty only once its socket was seen to. */
		sl_store_release(&r->pend[i], SLUICE_IDX_NONE);
	}
}

/*
 * The address an unbound socket's connect binds to.  On a kring stack a
 * connection to 127.0.0.0/8 takes its port on loopback, which needs no
 * module filter; everything else binds to any address, as before.
 */
uint32_t sl_sock_implicit_laddr(const struct sl_stack *s, uint32_t daddr)
{
	/* An IPv6 peer's handle: ::1's (no module filter), or the
	 * stack's own address, whose IPv6 filter (filter.c) is of that
	 * address. */
	if (s->filters && ((ntohl(daddr) >> 24) == 127 || sl_v6tok(daddr)))
		return sl_ip_src_for(s, daddr);
	return 0;
}

void sl_sock_free(struct sl_stack *s, struct sl_sock *so)
{
	uint8_t type = so->type;

	sl_timer_cancel(s, so);
	sl_sock_unhash(s, so);
	sl_filter_release(s, so);
	if (__builtin_expect(so->life & SL_LIFE_OWNER, 0))
		sl_sock_owner_drop(s, so);
	sl_buf_free_chain(s, so->rxq_head);
	so->rxq_head = so->rxq_tail = SLUICE_IDX_NONE;
	sl_errq_purge(s, so);
	/* A borrower still copying sees the generation change and gives
	 * nothing back (tcp.c). */
	sl_buf_free_chain(s, so->rx_lent_idx);
	sl_buf_free_chain(s, so->tx_lent_idx);
	so->rx_lent_idx = so->tx_lent_idx = SLUICE_IDX_NONE;
	so->rx_lent_bytes = so->rx_lent_count = so->tx_lent_bytes = 0;
	if (so->type == SL_SOCK_UDP)
		sl_udp_mc_leave_all(s, so);
	if (so->type == SL_SOCK_TCP && so->parent_idx != SLUICE_IDX_NONE) {
		sl_sock_kid_unlink(s, so);
		so->parent_idx = SLUICE_IDX_NONE;
	}
	if (so->type == SL_SOCK_TCP)
		sl_sock_park_forget(s, so);
	SL_KILL_POINT("sock_free");
	if (type == SL_SOCK_TCP && (so->flags & SL_SF_ORPHAN) && s->lib->tcp_orphans)
		s->lib->tcp_orphans--;
	so->type = SL_SOCK_FREE;
	/* A socket fd still open on it now reports ERR | HUP (sockfd.c). */
	if (so->kp.kstate != SLUICE_KSOCK_NONE)
		sl_sock_wake(s, so);
	so->next_idx = s->lib->sock_free_idx;
	s->lib->sock_free_idx = so->idx;
	s->lib->sock_trim_frees++;
	if (type != SL_SOCK_RESERVED)
		sl_fetch_sub(&s->r->sock_used, 1);
}

/*
 * Slots given back (core/buf.c has the why, for buffers).  Slots are
 * committed from the bottom of the table up (sock_fresh), so what can go
 * back is the free slots above the highest one in use: the trim lowers
 * sock_fresh past them, gives their whole pages back, and builds the
 * free list again lowest first, so that new sockets fill the bottom and
 * the top keeps coming free.  Looked at once a second (proto/timer.c):
 * a trim walks the table (O(top)) when the slot at the top is free, the
 * frees have died down (in the last second 64 or fewer than an eighth of
 * those since the last trim: the load has gone, not a close wave half
 * through), and either a quarter of the top's slots or more (and
 * SL_SOCK_TRIM_MIN) were freed since the last trim, or half the slots
 * committed are free (a trim stopped at a socket in use up there, which
 * has closed since).  So it runs after a load, not in it, at most once
 * a second, and a walk that the frees did not pay for gives back at
 * least the top slot's page run.  The generations of the slots given back raise
 * sock_gen_floor, which a slot taken fresh starts from (sl_sock_alloc()),
 * so an (index, generation) kept from before never names a new socket.
 * A holder that dies in it leaves free slots off the list below
 * sock_fresh, or sock_fresh lowered with pages not yet given back:
 * recovery builds the free list from the slots' types (recover.c), and
 * pages above sock_fresh are read by nobody.
 */
#define SL_SOCK_TRIM_MIN	4096	/* slots freed before a trim */

void sl_sock_trim(struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	uint32_t top = SL_READ_ONCE(r->sock_fresh), low = top, gen = r->sock_gen_floor;
	uint32_t head = SLUICE_IDX_NONE, frees = r->sock_trim_frees, seen = r->sock_trim_seen, used;

	r->sock_trim_seen = frees;
	/* The frees died down, and paid for a walk; or they left half the
	 * committed slots free (a trim that stopped at a socket in use up
	 * there, which has closed since). */
	used = SL_READ_ONCE(s->r->sock_used);
	if (frees == 0 || frees - seen > (frees / 8 > 64 ? frees / 8 : 64) || top > s->max_sockets || top == 0 ||
	    !sl_mem_trimmable(s))
		return;
	if ((frees < SL_SOCK_TRIM_MIN || frees < top / 4) &&
	    (used > top || top - used < SL_SOCK_TRIM_MIN || top - used < top / 2))
		return;
	/* The ready pool's slots were taken at the load's height: those in
	 * the table's upper half go back, and the pool is filled again from
	 * the bottom at unlock. */
	for (unsigned int i = 0; i < SL_READY_N; i++) {
		uint64_t e = SL_READ_ONCE(r->ready[i]);
		uint32_t idx = (uint32_t)e;

		if (idx < top / 2 || idx >= top || (e >> 32) ||
		    sl_sock(s, idx)->type != SL_SOCK_RESERVED || !sl_cmpxchg(&r->ready[i], &e, SL_READY_NONE))
			continue;
		SL_WRITE_ONCE(r->ready_want, 1);
		sl_sock_busy2(s, sl_sock(s, idx));
		sl_sock_free(s, sl_sock(s, idx));
	}
	if (sl_sock(s, top - 1)->type != SL_SOCK_FREE)
		return;
	r->sock_trim_frees = r->sock_trim_seen = 0;
	while (low > 0 && sl_sock(s, low - 1)->type == SL_SOCK_FREE) {
		struct sl_sock *so = sl_sock(s, --low);

		if (so->kp.gen > gen)
			gen = so->kp.gen;
	}
	r->sock_gen_floor = gen;
	for (uint32_t i = low; i-- > 0;) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type != SL_SOCK_FREE)
			continue;
		so->next_idx = head;
		head = i;
	}
	r->sock_free_idx = head;
	SL_KILL_POINT("sock_trim");
	SL_WRITE_ONCE(r->sock_fresh, low);
	/* Whole pages only: the one that holds slot low - 1 stays, and the
	 * one after slot top - 1 too (it may hold what follows the table). */
	sl_mem_give_back(s, s->socks + (uint64_t)low * s->sock_size,
			 s->socks + (uint64_t)top * s->sock_size);
}

/* Remove so from the chain starting at *head, linked through the field at
 * offset link_off. */
static void chain_remove(struct sl_stack *s, uint32_t *head, struct sl_sock *so, size_t link_off)
{
	uint32_t *pp = head, steps = 0;

	while (sl_sock_next(s, *pp, &steps)) {
		struct sl_sock *c = sl_sock(s, *pp);
		uint32_t *link = (uint32_t *)((uint8_t *)c + link_off);

		if (c == so) {
			*pp = *link;
			*link = SLUICE_IDX_NONE;
			return;
		}
		pp = link;
	}
}

void sl_sock_hash(struct sl_stack *s, struct sl_sock *so)
{
	uint32_t *b;

	if (so->flags & SL_SF_HASHED)
		return;
	b = tuple_bucket(s, so->laddr, so->lport, so->raddr, so->rport);
	so->hash_next = *b;
	*b = so->idx;
	SL_KILL_POINT("sock_hash");
	b = port_bucket(s, so->lport);
	so->port_next = *b;
	*b = so->idx;
	so->flags |= SL_SF_HASHED;
}

void sl_sock_unhash(struct sl_stack *s, struct sl_sock *so)
{
	if (!(so->flags & SL_SF_HASHED))
		return;
	chain_remove(s, tuple_bucket(s, so->laddr, so->lport, so->raddr, so->rport), so,
		     offsetof(struct sl_sock, hash_next));
	SL_KILL_POINT("sock_unhash");
	chain_remove(s, port_bucket(s, so->lport), so, offsetof(struct sl_sock, port_next));
	so->flags &= ~SL_SF_HASHED;
}

void sl_sock_kid_link(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *c)
{
	c->tcp.kid_prev = SLUICE_IDX_NONE;
	c->tcp.kid_next = lso->tcp.kid_head;
	if (sl_sock_some(s, lso->tcp.kid_head))
		sl_sock(s, lso->tcp.kid_head)->tcp.kid_prev = c->idx;
	lso->tcp.kid_head = c->idx;
}

/* Each link is changed only if it still names c: a list a dying holder
 * left half changed is built again by recovery, never followed into a
 * slot that is on another. */
void sl_sock_kid_unlink(struct sl_stack *s, struct sl_sock *c)
{
	uint32_t next = c->tcp.kid_next, prev = c->tcp.kid_prev;

	if (sl_sock_some(s, next) && sl_sock(s, next)->tcp.kid_prev == c->idx)
		sl_sock(s, next)->tcp.kid_prev = prev;
	if (sl_sock_some(s, prev)) {
		if (sl_sock(s, prev)->tcp.kid_next == c->idx)
			sl_sock(s, prev)->tcp.kid_next = next;
	} else if (sl_sock_some(s, c->parent_idx) &&
		   sl_sock(s, c->parent_idx)->tcp.kid_head == c->idx) {
		sl_sock(s, c->parent_idx)->tcp.kid_head = next;
	}
	c->tcp.kid_next = c->tcp.kid_prev = SLUICE_IDX_NONE;
}

/*
 * A listener's parked connections (proto/tcp/tcp.c, sl_tcp_park()),
 * oldest first: park_head to park_tail by park_next, back by park_prev;
 * park_lso is the listener a socket waits on.  No fixed limit: a socket
 * is on one list at most, and leaves it when unparked or freed.
 */
void sl_sock_park_link(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *c)
{
	struct sl_tcp_sock *ltp = &lso->tcp;

	c->tcp.park_lso = lso->idx;
	c->tcp.park_next = SLUICE_IDX_NONE;
	c->tcp.park_prev = ltp->park_tail;
	if (sl_sock_some(s, ltp->park_tail))
		sl_sock(s, ltp->park_tail)->tcp.park_next = c->idx;
	else
		ltp->park_head = c->idx;
	ltp->park_tail = c->idx;
}

/* As sl_sock_kid_unlink(): each link is changed only if it still names c. */
void sl_sock_park_unlink(struct sl_stack *s, struct sl_sock *c)
{
	uint32_t next = c->tcp.park_next, prev = c->tcp.park_prev, l = c->tcp.park_lso;
	struct sl_sock *lso;

	if (l == SLUICE_IDX_NONE)
		return;
	lso = sl_sock_some(s, l) ? sl_sock(s, l) : NULL;
	if (sl_sock_some(s, next)) {
		if (sl_sock(s, next)->tcp.park_prev == c->idx)
			sl_sock(s, next)->tcp.park_prev = prev;
	} else if (lso && lso->tcp.park_tail == c->idx) {
		lso->tcp.park_tail = prev;
	}
	if (sl_sock_some(s, prev)) {
		if (sl_sock(s, prev)->tcp.park_next == c->idx)
			sl_sock(s, prev)->tcp.park_next = next;
	} else if (lso && lso->tcp.park_head == c->idx) {
		lso->tcp.park_head = next;
	}
	sl_sock_park_none(c);
}

/* Listener lso lets go of every socket parked on it. */
void sl_sock_park_clear(struct sl_stack *s, struct sl_sock *lso)
{
	uint32_t guard = 0;

	for (uint32_t i = lso->tcp.park_head; sl_sock_next(s, i, &guard);) {
		struct sl_sock *c = sl_sock(s, i);

		i = c->tcp.park_next;
		if (c == lso || c->tcp.park_lso != lso->idx)
			break;	/* not parked here: a list left half changed */
		sl_sock_park_none(c);
	}
	lso->tcp.park_head = lso->tcp.park_tail = SLUICE_IDX_NONE;
}

/* Socket so leaves any list it is on and empties its own. */
void sl_sock_park_forget(struct sl_stack *s, struct sl_sock *so)
{
	sl_sock_park_unlink(s, so);
	if (so->tcp.park_head != SLUICE_IDX_NONE)
		sl_sock_park_clear(s, so);
	sl_sock_park_none(so);
}

static struct sl_sock *chain_find(struct sl_stack *s, uint32_t idx, uint8_t type, uint32_t laddr,
				  uint16_t lport, uint32_t raddr, uint16_t rport)
{
	uint32_t guard = 0;

	while (sl_sock_next(s, idx, &guard)) {
		struct sl_sock *so = sl_sock(s, idx);

		if (so->type == type && so->lport == lport && so->laddr == laddr &&
		    so->raddr == raddr && so->rport == rport)
			return so;
		idx = so->hash_next;
	}
	return NULL;
}

/*
 * SO_REUSEPORT: so is the first socket of a group bound to one address and
 * port; pick the member for this peer by a hash of its address and port,
 * so one peer's packets (and a TCP handshake's) always reach the same one.
 */
static struct sl_sock *reuseport_pick(struct sl_stack *s, struct sl_sock *so, uint32_t raddr,
				      uint16_t rport)
{
	uint32_t n = 0, pick, h = (raddr ^ ((uint32_t)rport << 16) ^ rport) * 0x9e3779b1u;
	struct sl_sock *o;

	for (uint32_t idx = so->idx, steps = 0; sl_sock_next(s, idx, &steps);
	     idx = o->hash_next) {
		o = sl_sock(s, idx);
		if (o->type == so->type && o->lport == so->lport && o->laddr == so->laddr &&
		    !o->raddr && !o->rport && (o->flags & SL_SF_REUSEPORT) &&
		    (o->type != SL_SOCK_TCP || o->state == SL_TCP_LISTEN))
			n++;
	}
	if (n < 2)
		return so;
	pick = (h >> 16) % n;
	for (uint32_t idx = so->idx, steps = 0; sl_sock_next(s, idx, &steps);
	     idx = o->hash_next) {
		o = sl_sock(s, idx);
		if (o->type == so->type && o->lport == so->lport && o->laddr == so->laddr &&
		    !o->raddr && !o->rport && (o->flags & SL_SF_REUSEPORT) &&
		    (o->type != SL_SOCK_TCP || o->state == SL_TCP_LISTEN) && !pick--)
			return o;
	}
	return so;
}

/* The socket connected to (raddr, rport) from (laddr or any, lport). */
/*
 * The families (1 IPv4, 2 IPv6) socket so bound to laddr takes: an
 * address says its own (an IPv6 one is a handle, proto.h "IPv6 sockets");
 * any address an AF_INET socket's IPv4, an AF_INET6 one's both, or IPv6
 * alone with IPV6_V6ONLY.  so NULL: an address alone (a packet's).
 */
static unsigned int sock_families(const struct sl_sock *so, uint32_t laddr)
{
	if (laddr || !so)
		return sl_v6tok(laddr) ? 2u : 1u;
	if (!(so->flags & SL_SF_V6))
		return 1u;
	return so->opt_flags & SL_SO_V6ONLY ? 2u : 3u;
}

static struct sl_sock *lookup_conn(struct sl_stack *s, uint8_t type, uint32_t laddr,
				   uint16_t lport, uint32_t raddr, uint16_t rport)
{
	struct sl_sock *so;

	so = chain_find(s, *tuple_bucket(s, laddr, lport, raddr, rport), type, laddr, lport,
			raddr, rport);
	if (so)
		return so;
	/* Connected to the peer but bound to INADDR_ANY. */
	return chain_find(s, *tuple_bucket(s, 0, lport, raddr, rport), type, 0, lport, raddr,
			  rport);
}

static struct sl_sock *lookup(struct sl_stack *s, uint8_t type, uint32_t laddr,
			       uint16_t lport, uint32_t raddr, uint16_t rport)
{
	struct sl_sock *so = lookup_conn(s, type, laddr, lport, raddr, rport);

	if (so)
		return so;
	so = chain_find(s, *tuple_bucket(s, laddr, lport, 0, 0), type, laddr, lport, 0, 0);
	if (!so) {
		uint32_t n = 0;

		so = chain_find(s, *tuple_bucket(s, 0, lport, 0, 0), type, 0, lport, 0, 0);
		/* On any address: the first socket that takes the packet's
		 * family (an IPv6-only one and an AF_INET one may share a port). */
		while (so && __builtin_expect((so->flags & SL_SF_V6) || sl_v6tok(laddr), 0) &&
		       !(sock_families(so, 0) & sock_families(NULL, laddr)))
			so = ++n < s->max_sockets ?
			     chain_find(s, so->hash_next, type, 0, lport, 0, 0) : NULL;
	}
	if (so && (so->flags & SL_SF_REUSEPORT))
		so = reuseport_pick(s, so, raddr, rport);
	return so;
}

/* Input for so: it is the socket being changed. */
static struct sl_sock *found(struct sl_stack *s, struct sl_sock *so)
{
	if (so)
		sl_sock_busy(s, so);
	return so;
}

struct sl_sock *sl_sock_lookup_conn(struct sl_stack *s, uint8_t type, uint32_t laddr,
				    uint16_t lport, uint32_t raddr, uint16_t rport)
{
	return found(s, lookup_conn(s, type, laddr, lport, raddr, rport));
}

struct sl_sock *sl_sock_lookup(struct sl_stack *s, uint8_t type, uint32_t laddr,
			       uint16_t lport, uint32_t raddr, uint16_t rport)
{
	return found(s, lookup(s, type, laddr, lport, raddr, rport));
}

/*
 * May so take (laddr, lport)?  As Linux: another socket of the same type
 * on that port conflicts if the addresses overlap (equal, or either is
 * INADDR_ANY), unless both set SO_REUSEADDR and the other is not a TCP
 * listener, or both set SO_REUSEPORT; a TCP connection in TIME_WAIT
 * (tcp_tw.c) blocks only a bind without SO_REUSEADDR.
 */
bool sl_sock_port_free(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t lport)
{
	uint32_t idx = *port_bucket(s, lport), guard = 0;

	if (so->type == SL_SOCK_TCP && !(so->flags & SL_SF_REUSEADDR) &&
	    sl_tw_port_used(s, laddr, lport))
		return false;

	while (sl_sock_next(s, idx, &guard)) {
		struct sl_sock *o = sl_sock(s, idx);

		idx = o->port_next;
		if (o == so || o->type != so->type || o->lport != lport)
			continue;
		if (o->laddr && laddr && o->laddr != laddr)
			continue;
		/* Any address meets one of its families only (Linux
		 * ipv6_rcv_saddr_equal(), IPv4's any being v4-mapped). */
		if (!(sock_families(so, laddr) & sock_families(o, o->laddr)))
			continue;
		if ((so->flags & SL_SF_REUSEADDR) && (o->flags & SL_SF_REUSEADDR) &&
		    !(o->type == SL_SOCK_TCP && o->state == SL_TCP_LISTEN))
			continue;
		if ((so->flags & SL_SF_REUSEADDR) && o->type == SL_SOCK_TCP &&
		    o->state == SL_TCP_TIME_WAIT)
			continue;
		/* SO_REUSEPORT on both (a stack is one user's: Linux's same
		 * effective uid rule holds by construction). */
		if ((so->flags & SL_SF_REUSEPORT) && (o->flags & SL_SF_REUSEPORT))
			continue;
		return false;
	}
	return true;
}

/* A socket of this type on chain idx bound to exactly (laddr, lport) with
 * no peer, and (TCP) listening: the sockets a packet's lookup() falls
 * back to, not the connections that share the port. */
static bool unconnected_on(struct sl_stack *s, uint32_t idx, uint8_t type, uint32_t laddr,
			   uint16_t lport, uint32_t daddr)
{
	uint32_t guard = 0;

	while (sl_sock_next(s, idx, &guard)) {
		struct sl_sock *o = sl_sock(s, idx);

		idx = o->hash_next;
		if (o->type == type && o->lport == lport && o->laddr == laddr && !o->raddr &&
		    !o->rport && (type != SL_SOCK_TCP || o->state == SL_TCP_LISTEN) &&
		    (sock_families(o, laddr) & sock_families(NULL, daddr)))
			return true;
	}
	return false;
}

/*
 * Is a socket of this type bound where a packet to (addr, port) would go:
 * on that port, to addr or to INADDR_ANY, with no peer, and for TCP
 * listening?  The two chains of unconnected sockets lookup() reads, walked
 * whole, so the answer does not hang on which bound socket comes first;
 * not the port's chain, which holds every connection of a busy server's
 * port too.  A connected UDP socket there takes only its peer's
 * datagrams: one from a fresh socket finds it only if it is that peer,
 * which a fresh socket is not.
 */
bool sl_sock_unconnected_at(struct sl_stack *s, uint8_t type, uint32_t addr, uint16_t port)
{
	return unconnected_on(s, *tuple_bucket(s, addr, port, 0, 0), type, addr, port, addr) ||
	       unconnected_on(s, *tuple_bucket(s, 0, port, 0, 0), type, 0, port, addr);
}

unsigned int sl_sock_unconnected_chains(struct sl_stack *s, uint32_t addr, uint16_t port,
					uint32_t heads[2])
{
	uint32_t *a = tuple_bucket(s, addr, port, 0, 0), *b = tuple_bucket(s, 0, port, 0, 0);

	heads[0] = *a;
	heads[1] = *b;
	return a == b ? 1 : 2;
}

/* ---- ephemeral ports ------------------------------------------------ */

/*
 * As Linux picks them (net/ipv4/inet_hashtables.c __inet_hash_connect(),
 * inet_connection_sock.c inet_csk_find_open_port()): from
 * ip_local_port_range less ip_local_reserved_ports (api.c reads both), an
 * even count of them.  connect() starts at a keyed hash of its
 * destination (RFC 6056 3.3.4) plus that hash's bucket of port_perturb,
 * and tries the ports of the range's low parity first; bind(0) starts at
 * random and tries the other parity first, so the two seldom meet.
 */
struct eph {
	uint32_t lo, n;
};

static struct eph eph_range(const struct sl_stack *s)
{
	struct eph e = { 32768, 60999 - 32768 + 1 };

	if (s->port_lo) {
		e.lo = s->port_lo;
		e.n = s->port_hi - s->port_lo + 1u;
	}
	if (e.n > 1)
		e.n &= ~1u;
	return e;
}

/* The k-th port to try (k < e.n) from start: those of start's parity,
 * then the others; 0 for a reserved one. */
static uint16_t eph_port(const struct sl_stack *s, struct eph e, uint32_t start, uint32_t k)
{
	uint32_t half = e.n / 2, off = start % e.n, port;

	off = k < half ? off + 2 * k : (off ^ 1) + 2 * (k - half);
	port = e.lo + off % e.n;
	if (s->port_reserved_any && (s->port_reserved[port / 64] >> (port % 64) & 1))
		return 0;
	return htons((uint16_t)port);
}

/*
 * May bind() to port 0 pick p?  For TCP only a port no socket overlapping
 * laddr is bound to, whatever SO_REUSEADDR or SO_REUSEPORT say, nor a
 * TIME-WAIT entry: Linux's inet_csk_find_open_port() asks its conflict
 * test with relax and reuseport_ok false (net.ipv4.ip_autobind_reuse 0),
 * so sharing a port takes an explicit one.  UDP picks as it binds
 * (udp_lib_get_port(): two SO_REUSEADDR sockets may share a port).
 */
static bool pick_free(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t p)
{
	uint32_t idx = *port_bucket(s, p), guard = 0;

	if (so->type != SL_SOCK_TCP)
		return sl_sock_port_free(s, so, laddr, p);
	if (sl_tw_port_used(s, laddr, p))
		return false;
	while (sl_sock_next(s, idx, &guard)) {
		struct sl_sock *o = sl_sock(s, idx);

		idx = o->port_next;
		if (o == so || o->type != so->type || o->lport != p)
			continue;
		if (o->laddr && laddr && o->laddr != laddr)
			continue;
		if (!(sock_families(so, laddr) & sock_families(o, o->laddr)))
			continue;
		return false;
	}
	return true;
}

static int sock_bind(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t lport,
		     bool conn4)
{
	struct eph e = eph_range(s);
	uint32_t start;

	if (so->flags & SL_SF_BOUND)
		return -EINVAL;
	/* As Linux: a UDP socket may bind a multicast group's address, to
	 * get that group's datagrams only. */
	if (laddr && !sl_ip_is_local(s, laddr) && laddr != INADDR_BROADCAST &&
	    !(so->type == SL_SOCK_UDP && SL_IN_MULTICAST(laddr)))
		return -EADDRNOTAVAIL;
	if (lport) {
		if (!sl_sock_port_free(s, so, laddr, lport))
			return -EADDRINUSE;
	}
	/* A kring stack reserves the port in the kernel (an ephemeral one
	 * is the kernel's pick there, so the two never collide). */
	if (s->filters) {
		int ret = sl_filter_take(s, so, laddr, &lport, conn4);

		if (ret)
			return ret;
	}
	if (!lport) {
		so->opt_flags |= SL_SO_LPORT_AUTO;
		start = (uint32_t)sl_tcp_port_hash(s, 0, s->lib->port_seq++, 0) | 1;
		for (uint32_t k = 0; k < e.n; k++) {
			uint16_t p = eph_port(s, e, start, k);

			if (p && pick_free(s, so, laddr, p)) {
				lport = p;
				break;
			}
		}
		if (!lport)
			return -EADDRINUSE;
	}
	so->laddr = laddr;
	so->lport = lport;
	so->flags |= SL_SF_BOUND;
	sl_sock_hash(s, so);
	return 0;
}

int sl_sock_bind(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t lport)
{
	return sock_bind(s, so, laddr, lport, false);
}

int sl_sock_bind_conn4(struct sl_stack *s, struct sl_sock *so, uint32_t laddr)
{
	return sock_bind(s, so, laddr, 0, true);
}

/* May a connect() to (raddr, rport) from laddr take port p?  Not if a
 * socket bound or listening there with bind()/listen() overlaps laddr,
 * nor if a connection or a TIME-WAIT entry has the 4-tuple already (an
 * entry that may be recycled is left in *tw). */
static bool connect_port_ok(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t p,
			    uint32_t raddr, uint16_t rport, uint64_t now_us, struct sl_tw **tw)
{
	uint32_t idx = *port_bucket(s, p), guard = 0;

	while (sl_sock_next(s, idx, &guard)) {
		struct sl_sock *o = sl_sock(s, idx);

		idx = o->port_next;
		if (o == so || o->type != SL_SOCK_TCP || o->lport != p)
			continue;
		if (o->laddr && o->laddr != laddr)
			continue;
		if (!(o->flags & SL_SF_AUTOBIND))
			return false;
		if (o->raddr == raddr && o->rport == rport)
			return false;
	}
	return sl_tw_connect_ok(s, laddr, p, raddr, rport, now_us, tw);
}

int sl_sock_bind_connect(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint32_t raddr,
			 uint16_t rport, uint64_t now_us)
{
	struct eph e = eph_range(s);
	uint64_t h = sl_tcp_port_hash(s, laddr, raddr, rport);
	uint16_t *perturb = &s->lib->port_perturb[h & (SL_PORT_PERTURB - 1)];
	uint32_t start = ((uint32_t)(h >> 32) + *perturb) & ~1u;

	if (so->flags & SL_SF_BOUND)
		return -EINVAL;
	for (uint32_t k = 0; k < e.n; k++) {
		uint16_t p = eph_port(s, e, start, k);
		struct sl_tw *tw;

		if (!p || !connect_port_ok(s, so, laddr, p, raddr, rport, now_us, &tw))
			continue;
		if (tw) {
			sl_count(s, SL_C_tcp_tw_recycled);
			sl_tw_kill(s, tw);
		}
		/* The next connect() to there starts past this port (2k on
		 * from the start, its parity), or when this one found its
		 * port at once, past it by a little at random. */
		h = (sl_tcp_port_hash(s, 0, s->lib->port_seq++, 0) & 7) * 2;
		*perturb += (uint16_t)((2 * k > h ? 2 * k : h) + 2);
		so->laddr = laddr;
		so->lport = p;
		so->flags |= SL_SF_BOUND | SL_SF_AUTOBIND;
		sl_sock_hash(s, so);
		return 0;
	}
	return -EADDRNOTAVAIL;
}

void sl_kp_note_slow(struct sl_stack *s, struct sl_sock *so)
{
	unsigned int i;

	if (s->kp_n == SL_KP_SCAN)
		return;
	for (i = 0; i < s->kp_n && s->kp_note[i] != so->idx; i++)
		;
	if (i < s->kp_n)
		return;
	if (s->kp_n < SL_KP_NOTES)
		s->kp_note[s->kp_n++] = so->idx;
	else
		s->kp_n = SL_KP_SCAN;
}

void sl_sock_wake(struct sl_stack *s, struct sl_sock *so)
{
	/* Under the lock.  The stack-wide futex word moves only while some
	 * process sleeps on it (run/wait.c), so busy-polling processes never
	 * bounce it; the futex wake itself happens after the unlock.  An
	 * atomic RMW, a full barrier: the sleepers' counts below are read
	 * after wake_seq moved, for a sleeper that takes no look under the
	 * lock but counts itself and then reads wake_seq (api.c,
	 * sl_poll_signals_idle()): it sees the move, or we see its count. */
	sl_fetch_add(&so->wake_seq, 1);
	if (SL_READ_ONCE(so->xsleepers))
		sl_sock_wake_one(s, so);
	/* The ready ring of the watch group watching it (core.h,
	 * SL_EPW_RING), after wake_seq: a set that reads the ring's head and
	 * then the socket's wake_seq sees this change in one or the other. */
	sl_wake_epw(s, SL_READ_ONCE(so->epw), so->idx);
	/* The journal (core.h): the entry before the count that shows it. */
	s->lib->chg_ring[s->lib->chg_seq & (SL_CHG_RING - 1)] = so->idx;
	sl_store_release(&s->lib->chg_seq, s->lib->chg_seq + 1);
	/* A socket fd exists (or did): its events go out at unlock.  Others
	 * cost this one load, on the line just written. */
	sl_kp_note(s, so);
	/* A sleeper counts itself before its last look, which it takes
	 * under the lock: we hold it, so either that look comes after us and
	 * sees this change, or its count is visible to this load (one that
	 * takes no look: above).  Those
	 * waiting on so's channel alone first, then everyone else. */
	sl_wake_chan(s, so->idx & (SL_WQ_N - 1));
	sl_wake_any(s);
}

__thread struct sl_async_notes sl_async_w __attribute__((tls_model("initial-exec")));

static bool async_note(struct sl_stack *s, uint32_t note)
{
	unsigned int n = sl_async_w.n;

	/* Per thread, as sl_kp_w: another thread may take the lock (and
	 * write the handle) as soon as we let go.  A second stack's event
	 * in one turn is one signal less. */
	if (n && sl_async_w.s != s)
		return false;
	/* The same event of the same socket as the last: counted there, in
	 * order.  The list full: counted on an earlier note of it, out of
	 * order; none, and more kinds of event than the list holds in one
	 * turn are one signal less (Linux queues a real-time signal an
	 * event; a plain SIGIO is one anyway).  An owner's SIGURG is one. */
	for (unsigned int k = n; k-- > 0 && (k == n - 1 || n == SL_ASYNC_NOTES);) {
		if (sl_async_w.idx[k] != note)
			continue;
		if (!(note & SL_BELL_URG) && sl_async_w.rep[k] < 0xffff)
			sl_async_w.rep[k]++;
		return true;
	}
	if (n == SL_ASYNC_NOTES)
		return false;
	sl_async_w.s = s;
	sl_async_w.idx[n] = note;
	sl_async_w.rep[n] = 0;
	sl_async_w.n = n + 1;
	return true;
}

void sl_sock_async_slow(struct sl_stack *s, struct sl_sock *so, uint32_t why)
{
	if (async_note(s, so->idx | why << SL_ASYNC_WHY_SHIFT))
		sl_count(s, SL_C_sock_async);
}

void sl_sock_urg_slow(struct sl_stack *s, struct sl_sock *so)
{
	/* Linux's sk_send_sigurg() signals only a socket that has a file
	 * (sk_socket->file): not one the program closed. */
	if (so->flags & SL_SF_ORPHAN)
		return;
	/* O_ASYNC: SIGURG, the F_SETSIG signal with POLL_PRI and the POLL_IN
	 * of tcp_urg()'s sk_data_ready() for the byte all come from one
	 * kernel file of the arming process (lib/preload/async.c, event()):
	 * the owner entry's SIGURG would be a second. */
	if (so->life & SL_LIFE_ASYNC)
		sl_sock_async_slow(s, so, SL_POLL_PRI);
	else if (so->life & SL_LIFE_OWNER)
		async_note(s, so->idx | SL_BELL_URG);
}

void sl_sock_owner_drop(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_region *r = s->lib;
	uint32_t top = SL_READ_ONCE(r->bells_top), want = SL_BELL_ASYNC | SL_BELL_URG | so->idx;

	so->life &= (uint8_t)~SL_LIFE_OWNER;
	if (top > SL_BELLS)
		top = SL_BELLS;
	/* Owner entries are not counted (run/bell.c, is_async()): freeing
	 * one is its state's exchange, once, by whoever finds it. */
	for (unsigned int i = 0; i < top; i++) {
		struct sl_bell *b = &r->bells[i];
		uint32_t gen = sl_load_acquire(&b->state);

		if ((gen & 1) && SL_READ_ONCE(b->chan) == want)
			sl_cmpxchg(&b->state, &gen, SL_BELL_FREE);
	}
}

void sl_sock_async_space_slow(struct sl_stack *s, struct sl_sock *so)
{
	if (!(so->life & SL_LIFE_ASYNC)) {
		so->life &= (uint8_t)~SL_LIFE_NOSPACE;
		return;
	}
	if (!(sl_sock_events(s, so) & SL_EV_OUT))
		return;
	so->life &= (uint8_t)~SL_LIFE_NOSPACE;
	sl_sock_async_slow(s, so, SL_POLL_OUT);	/* SOCK_WAKE_SPACE */
}

/* Lock held: socket idx on group g's ready ring, then its sleepers. */
static void epw_append(struct sl_stack *s, uint32_t g, uint32_t idx)
{
	uint32_t *head = &s->lib->wq[SL_WQ_N + g].chg, h = *head;

	s->lib->epw_ring[g][h & (SL_EPW_RING - 1)] = idx;
	/* The entry before the head that shows it (epoll.c, ep_ring()). */
	sl_store_release(head, h + 1);
	sl_wake_chan(s, SL_WQ_N + g);
}

void sl_wake_epw(struct sl_stack *s, uint16_t epw, uint32_t idx)
{
	/* The group of the set watching it; a socket in several sets goes
	 * on every owned group's ring (each set reads its own alone:
	 * epoll.c).  A group nobody owns has no reader: a claim starts
	 * with a look at every item (epw_claim()). */
	if (!epw)
		return;
	if (epw <= SL_EPW_N) {
		epw_append(s, epw - 1u, idx);
		return;
	}
	for (uint32_t g = 0; g < SL_EPW_N; g++)
		if (SL_READ_ONCE(s->lib->epw_owner[g]))
			epw_append(s, g, idx);
}

void sl_wake_chan(struct sl_stack *s, uint32_t c)
{
	struct sl_wq *q = &s->lib->wq[c];

	/*
	 * The FUTEX_WAKE after unlock only if a sleeper read seq's value
	 * before this move (armed, a full barrier before the sleeper reads
	 * seq again: api.c, wq_arm()); one that read an older value is
	 * woken by the wake of that move, or finds the word moved.  So a
	 * second change before the sleeper ran (the data, then the FIN, of
	 * a peer's echo) costs no second system call.
	 */
	if (SL_READ_ONCE(q->sleepers)) {
		uint32_t old = sl_fetch_add(&q->seq, 1);

		if ((int32_t)(SL_READ_ONCE(q->armed) - old) >= 0) {
			s->wq_pending[c / 64] |= 1ull << (c % 64);
			s->wake_pending = true;
		}
	}
	/* Mixed sleepers (run/bell.c): the same rule, their bells rung
	 * after unlock. */
	if (SL_READ_ONCE(q->bells)) {
		s->bell_pending[c / 64] |= 1ull << (c % 64);
		s->wake_pending = true;
	}
}

void sl_wake_any(struct sl_stack *s)
{
	if (SL_READ_ONCE(s->lib->bells_any)) {
		s->bell_any_pending = true;
		s->wake_pending = true;
	}
	if (SL_READ_ONCE(s->r->sleepers)) {
		/* Read by futex waiters without the lock: an atomic RMW. */
		sl_fetch_add(&s->r->wake_seq, 1);
		s->wake_pending = true;
		s->wake_global = true;
		/* A sleeper counts itself in poll_sleepers before sleepers,
		 * both before its last look under the lock. */
		if (SL_READ_ONCE(s->lib->poll_sleepers))
			s->wake_poll = true;
	}
}

void sl_sock_wake_one(struct sl_stack *s, struct sl_sock *so)
{
	unsigned int i;

	/* As sl_sock_wake(): an exclusive sleeper counts itself before its
	 * last look, taken under the lock, so it either sees this change or
	 * is counted here; moving xseq stops one that has not slept yet. */
	if (!SL_READ_ONCE(so->xsleepers))
		return;
	sl_fetch_add(&so->xseq, 1);
	for (i = 0; i < s->xwake_n && s->xwake[i] != so->idx; i++)
		;
	if (i < s->xwake_n)
		return;
	if (s->xwake_n == SL_XWAKE_N) {
		/* More listeners than the list holds changed in one turn:
		 * wake this one now, with the lock held; none asleep on the
		 * word, a mixed set's bell may be (run/bell.c, SL_BELL_X):
		 * every sleeper looks again at unlock. */
		if (sl_wake_word_n(&so->xseq, 1) == 0)
			s->wake_all = true;
		return;
	}
	s->xwake[s->xwake_n++] = so->idx;
	s->wake_pending = true;
}

void sl_sock_wake_exclusive_all(struct sl_stack *s)
{
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (SL_READ_ONCE(so->xsleepers)) {
			sl_fetch_add(&so->xseq, 1);
			sl_wake_word_n(&so->xseq, INT_MAX);
		}
	}
}

uint32_t sl_sock_events(struct sl_stack *s, struct sl_sock *so)
{
	/* A connect() waiting for the lock is connecting: nothing yet. */
	if (__builtin_expect(SL_READ_ONCE(so->life) & SL_LIFE_PENDING, 0))
		return 0;
	return so->type == SL_SOCK_TCP ? sl_tcp_poll(s, so) : sl_udp_poll(s, so);
}

void sl_sock_rxq_append(struct sl_stack *s, struct sl_sock *so, uint32_t idx, uint32_t bytes)
{
	/* (A datagram for several sockets changes each in turn.) */
	sl_sock_busy2(s, so);
	sl_buf(s, idx)->next_idx = SLUICE_IDX_NONE;
	if (sl_buf_some(s, so->rxq_tail))
		sl_buf(s, so->rxq_tail)->next_idx = idx;
	else
		so->rxq_head = idx;
	so->rxq_tail = idx;
	SL_KILL_POINT("rxq_append");
	so->rxq_bytes += bytes;
	so->rxq_count++;
	so->rx_pkts++;
	so->rx_bytes += bytes;
}

void sl_sock_cpu_note(struct sl_sock *so)
{
	int cpu = sl_sys_cpu();

	/* Written only when it moves: its line stays clean otherwise. */
	if (cpu >= 0 && so->incoming_cpu != cpu)
		so->incoming_cpu = cpu;
}

bool sl_sock_insane(struct sl_stack *s, struct sl_sock *so)
{
	sl_corrupt(s, SL_C_corrupt_sock_state,
		   (uint64_t)so->type << 48 | (uint64_t)so->state << 32 | so->idx);
	return false;
}

/*
 * The sink socket for out-of-range indices (see sl_buf_bad() in core/):
 * process-local; its links are put back to SLUICE_IDX_NONE on every
 * hand-out so walks end, field by field (never zeroed as a whole: another
 * thread may be dividing by its mss).
 */
static union {
	struct sl_sock so;
	uint8_t bytes[1024];
} sink_sock __attribute__((aligned(64)));

_Static_assert(sizeof(struct sl_sock) <= sizeof(sink_sock), "the sink holds a socket slot");

struct sl_sock *sl_sock_bad(const struct sl_stack *s, uint32_t idx)
{
	struct sl_sock *so = &sink_sock.so;

	sl_corrupt((struct sl_stack *)s, SL_C_corrupt_sock_idx, idx);
	so->type = SL_SOCK_FREE;
	so->idx = so->next_idx = so->hash_next = so->parent_idx = SLUICE_IDX_NONE;
	so->rxq_head = so->rxq_tail = SLUICE_IDX_NONE;
	so->errq_head = so->errq_tail = SLUICE_IDX_NONE;
	so->errq_count = 0;
	so->wheel_next = so->wheel_prev = so->port_next = SLUICE_IDX_NONE;
	so->tcp.kid_next = so->tcp.kid_prev = so->tcp.kid_head = SLUICE_IDX_NONE;
	sl_sock_park_none(so);
	so->wheel_due_ms = 0;
	so->tcp.sndq_head = so->tcp.sndq_tail = so->tcp.sndq_hint = SLUICE_IDX_NONE;
	so->tcp.ooo_head = so->tcp.acc_head = so->tcp.acc_tail = SLUICE_IDX_NONE;
	so->tcp.mss = 536;
	so->tcp.cwnd = 536;
	return so;
}

void sl_sock_table_init(struct sl_stack *s)
{
	/* No slot is touched: each is laid out when first taken. */
	s->lib->sock_free_idx = SLUICE_IDX_NONE;
	s->lib->sock_fresh = 0;
	for (unsigned int i = 0; i < SL_READY_N; i++)
		s->lib->ready[i] = SL_READY_NONE;
	for (unsigned int i = 0; i < SL_PEND_N; i++)
		s->lib->pend[i] = SLUICE_IDX_NONE;
	s->lib->ready_want = 1;
}
