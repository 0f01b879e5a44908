// SPDX-License-Identifier: BSD-2-Clause
/*
 * Bringing a stack back after a process died holding its lock (issue 17).
 *
 * The process that finds the holder dead takes the lock over (lock.c) and
 * calls sl_stack_recover().  A dead holder may have stopped anywhere in a
 * change to shared state; the argument that this covers every such change
 * is in lib/proto/README.md ("Recovery").  In short, shared state is of
 * three kinds, and each is made whole in its own way:
 *
 *  - Primary state: each socket slot (its type, state, addresses, TCB) and
 *    the chains of buffers it owns (receive, send, out-of-order, lent).
 *    Every change the library makes to a socket happens inside one
 *    operation on that socket, and the holder names the socket(s) it is
 *    changing in sl_region.busy[] before it starts (sl_sock_busy()).  A
 *    TCP connection named there may be half changed (data queued but
 *    rcv_nxt not moved, ...): it is reset, RST to its peer and
 *    ECONNRESET to its users.  A UDP socket named there loses the
 *    datagrams it had queued.  A listener keeps going: what an operation
 *    changes in it (queue lengths, its accept queue) is derived state.
 *    Every other socket is checked (fields in range, each chain ends at
 *    its tail, counts and byte totals match the chain, sequence numbers
 *    in order, no buffer in two places) and reset as above if any check
 *    fails, which only a bug or a scribble can cause.
 *  - Derived state, rebuilt from the primary state: the buffer free list
 *    (every buffer nobody holds), the socket free list, the 4-tuple and
 *    port hashes, the timer wheel (from each TCB's deadlines), accept
 *    queues (from SL_TF_ACCQ, in their old order where it can be read),
 *    the SYN and embryo counts, sock_used.
 *  - Queues of packets not yet delivered (loopback, neighbour holds):
 *    kept if whole, else dropped and counted (TCP sends them again).
 *
 * Buffers held outside all of these by a process that is alive (posted to
 * a verbs receive queue, SL_BUF_HELD; on the kring fill ring,
 * SL_BUF_ON_FILL) are left alone.  What remains unclaimed was in the
 * dead holder's hands, and goes back to the pool.
 *
 * Runs rarely, with the lock held: it may allocate and take time (one
 * pass over the buffers and sockets, O(n_bufs + max_sockets)).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/proto.h"

#define TAG_NONE	0u
#define TAG_LO		0xfffffff0u	/* on the loopback queue */
#define TAG_NEIGH	0xfffffff1u	/* a neighbour entry's held packet */
#define TAG_KEEP	0xfffffff2u	/* held by a live process or the module */

struct rec {
	struct sl_stack *s;
	uint32_t *claim;	/* per buffer: TAG_*, or socket idx + 1 */
	uint8_t *bad;		/* per socket: reset it */
	uint32_t resets, lo_dropped;
	pid_t dead;		/* the holder that died */
};

/*
 * Walk the chain from head by next_idx.  It must end (SLUICE_IDX_NONE)
 * within n_bufs steps, at tail when want_tail, with no buffer claimed
 * already (or, claiming, by this tag).  Counts buffers, sums lengths
 * (len) and aux.  With claim set, claims each buffer for tag.
 */
static bool walk(struct rec *rc, uint32_t head, uint32_t tail, bool want_tail, uint32_t tag,
		 bool claim, uint32_t *count, uint64_t *len, uint64_t *aux)
{
	struct sl_stack *s = rc->s;
	uint32_t idx = head, last = SLUICE_IDX_NONE, n = 0;

	*count = 0;
	*len = *aux = 0;
	while (idx != SLUICE_IDX_NONE) {
		const struct sluice_buf *b;

		if (idx >= s->n_bufs || ++n > s->n_bufs || rc->claim[idx] != TAG_NONE)
			return false;
		if (claim)
			rc->claim[idx] = tag;
		b = s->bufmeta + idx;
		*len += b->len;
		*aux += b->aux;
		last = idx;
		idx = b->next_idx;
	}
	*count = n;
	return !want_tail || last == tail;
}

/* A neighbour's list of waiting packets (proto/ip.c, sl_hold_add()):
 * claimed whole, or emptied (counted dropped) if it cannot stay. */
static void hold_keep(struct rec *rc, uint32_t *hold, bool may)
{
	uint64_t len, aux;
	uint32_t n;

	if (*hold == SLUICE_IDX_NONE)
		return;
	if (may && walk(rc, *hold, SLUICE_IDX_NONE, false, TAG_NEIGH, false, &n, &len, &aux)) {
		walk(rc, *hold, SLUICE_IDX_NONE, false, TAG_NEIGH, true, &n, &len, &aux);
		return;
	}
	*hold = SLUICE_IDX_NONE;
	rc->lo_dropped++;
}

/* Take back what socket idx claimed (a later chain of it was bad). */
static void unclaim(struct rec *rc, uint32_t tag)
{
	for (uint32_t i = 0; i < rc->s->n_bufs; i++)
		if (rc->claim[i] == tag)
			rc->claim[i] = TAG_NONE;
}

/* Are so's own fields possible?  (sl_sock_sane() without marking the
 * stack corrupt: here a bad socket is reset, not the stack broken.) */
static bool fields_ok(struct sl_stack *s, const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t nb = s->n_bufs, ns = s->max_sockets;
	unsigned int bad;

	bad = so->type > SL_SOCK_TCP || (uint32_t)so->error > 4095;
	bad |= sl_idx_bad(so->rxq_head, nb) | sl_idx_bad(so->rxq_tail, nb);
	bad |= sl_idx_bad(so->rx_lent_idx, nb) | sl_idx_bad(so->tx_lent_idx, nb);
	bad |= sl_idx_bad(so->errq_head, nb) | sl_idx_bad(so->errq_tail, nb);
	bad |= sl_idx_bad(so->parent_idx, ns);
	if (so->type == SL_SOCK_UDP)
		bad |= so->udp.mc_n > SL_UDP_MC_MAX;
	if (so->type != SL_SOCK_TCP)
		return !bad;
	bad |= so->state > SL_TCP_TIME_WAIT;
	bad |= tp->mss > SL_TCP_BUF_PAYLOAD(s);
	bad |= tp->snd_wscale > SL_TCP_WSCALE_MAX || tp->rcv_wscale > SL_TCP_WSCALE_MAX;
	bad |= (uint32_t)tp->soft_err > 4095;
	bad |= sl_idx_bad(tp->sndq_head, nb) | sl_idx_bad(tp->sndq_tail, nb);
	bad |= sl_idx_bad(tp->ooo_head, nb);
	/* una <= nxt <= max <= end (+1 with a FIN) */
	if (so->state >= SL_TCP_SYN_SENT) {
		bad |= SEQ_GT(tp->snd_una, tp->snd_nxt) || SEQ_GT(tp->snd_nxt, tp->snd_max);
		bad |= SEQ_GT(tp->snd_max, tp->snd_end + 1);
	}
	return !bad;
}

/*
 * Check socket so's chains and claim their buffers; false (nothing
 * claimed) if any is not whole.
 */
static bool claim_sock(struct rec *rc, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t tag = so->idx + 1, n;
	uint64_t len, aux;

	if (!walk(rc, so->rxq_head, so->rxq_tail, true, tag, true, &n, &len, &aux) ||
	    n != so->rxq_count || (so->type == SL_SOCK_TCP && len != so->rxq_bytes))
		goto bad;
	if (!walk(rc, so->rx_lent_idx, 0, false, tag, true, &n, &len, &aux) ||
	    n != so->rx_lent_count)
		goto bad;
	if (!walk(rc, so->tx_lent_idx, 0, false, tag, true, &n, &len, &aux))
		goto bad;
	if (!walk(rc, so->errq_head, so->errq_tail, true, tag, true, &n, &len, &aux) ||
	    n != so->errq_count)
		goto bad;
	if (so->type != SL_SOCK_TCP)
		return true;
	if (!walk(rc, tp->sndq_head, tp->sndq_tail, true, tag, true, &n, &len, &aux) ||
	    aux != tp->sndq_bytes)
		goto bad;
	if (!walk(rc, tp->ooo_head, 0, false, tag, true, &n, &len, &aux) || n != tp->ooo_count)
		goto bad;
	/* sndq_hint is only where the send loop stopped: on the queue, or none. */
	if (tp->sndq_hint != SLUICE_IDX_NONE &&
	    (tp->sndq_hint >= rc->s->n_bufs || rc->claim[tp->sndq_hint] != tag))
		tp->sndq_hint = SLUICE_IDX_NONE;
	return true;
bad:
	unclaim(rc, tag);
	return false;
}

/* A TCP connection whose state was half changed: start of the reset. */
static bool is_conn(const struct sl_sock *so)
{
	return so->type == SL_SOCK_TCP && so->state != SL_TCP_LISTEN &&
	       so->state != SL_TCP_CLOSED;
}

/*
 * Is the chain from head lent to a process that lives (its first buffer
 * carries the borrower's pid, tcp.c "Lending"), and not to the dead
 * holder?  That process is copying into or out of those buffers with the
 * lock let go, this instant perhaps, and gives them back itself
 * (sl_tcp_*_return()): until then they are its own.
 */
static bool lent_to_live(struct rec *rc, uint32_t head)
{
	uint64_t pid;

	if (head >= rc->s->n_bufs)
		return false;
	pid = rc->s->bufmeta[head].ts_us;
	return pid && pid <= (1u << 22) && (pid_t)pid != rc->dead && !sl_pid_dead((pid_t)pid);
}

/*
 * Empty so's queues (their buffers are unclaimed: the pool gets them).
 * With keep_lent, a chain lent to a live process stays the socket's, to
 * be claimed and given back by its borrower: given to the pool, its
 * buffers would be handed out while the borrower still copies, and the
 * borrower's receive would return another connection's bytes, or its
 * send write into another connection's (test_lend; test_killsoak's wrong
 * byte).  Without (the chain itself is not whole), it goes with the rest.
 */
static void drop_queues(struct rec *rc, struct sl_sock *so, bool keep_lent)
{
	struct sl_tcp_sock *tp = &so->tcp;

	so->rxq_head = so->rxq_tail = SLUICE_IDX_NONE;
	so->rxq_bytes = so->rxq_count = 0;
	if (!keep_lent || !lent_to_live(rc, so->rx_lent_idx)) {
		so->rx_lent_idx = SLUICE_IDX_NONE;
		so->rx_lent_bytes = so->rx_lent_count = 0;
	}
	if (!keep_lent || !lent_to_live(rc, so->tx_lent_idx)) {
		so->tx_lent_idx = SLUICE_IDX_NONE;
		so->tx_lent_bytes = 0;
	}
	so->errq_head = so->errq_tail = SLUICE_IDX_NONE;
	so->errq_count = 0;
	if (so->type != SL_SOCK_TCP)
		return;
	tp->sndq_head = tp->sndq_tail = tp->sndq_hint = SLUICE_IDX_NONE;
	tp->sndq_bytes = 0;
	tp->ooo_head = SLUICE_IDX_NONE;
	tp->ooo_bytes = 0;
	tp->ooo_count = 0;
}

/*
 * A socket that cannot be made whole.  A TCP connection ends as a reset
 * one does (its RST goes out once the stack is whole again, send_resets());
 * a listener stops listening; a UDP socket keeps going, without what it
 * had queued.  Its slot stays its users', and a chain lent to a live
 * process stays that process's if keep_lent (drop_queues()).
 */
static void reset_sock(struct rec *rc, struct sl_sock *so, bool keep_lent)
{
	struct sl_tcp_sock *tp = &so->tcp;

	drop_queues(rc, so, keep_lent);
	rc->resets++;
	/* Whatever was out of range is put back in (fields_ok()). */
	if ((uint32_t)so->error > 4095)
		so->error = 0;
	if (so->parent_idx >= rc->s->max_sockets)
		so->parent_idx = SLUICE_IDX_NONE;
	if (so->type != SL_SOCK_TCP) {
		if (so->type == SL_SOCK_UDP && so->udp.mc_n > SL_UDP_MC_MAX)
			so->udp.mc_n = 0;
		return;
	}
	if (tp->mss > SL_TCP_BUF_PAYLOAD(rc->s))
		tp->mss = SL_TCP_MSS_DEFAULT;
	if (tp->snd_wscale > SL_TCP_WSCALE_MAX || tp->rcv_wscale > SL_TCP_WSCALE_MAX)
		tp->snd_wscale = tp->rcv_wscale = 0;
	if ((uint32_t)tp->soft_err > 4095)
		tp->soft_err = 0;
	rc->bad[so->idx] = is_conn(so) && so->state != SL_TCP_TIME_WAIT ? 2 : 1;
	if (so->state == SL_TCP_LISTEN)
		tp->acc_head = tp->acc_tail = SLUICE_IDX_NONE;
	tp->tflags &= ~(SL_TF_FIN_Q | SL_TF_RECOVERY | SL_TF_PROBE);
	tp->t_rexmt = tp->t_dack = tp->t_persist = tp->t_keep = tp->t_close = tp->t_cork = 0;
	tp->t_tlp = tp->t_reo = 0;
	tp->t_pool = 0;
}

/* Rebuild the free lists, hashes, wheel and accept queues. */
static void rebuild(struct rec *rc)
{
	struct sl_stack *s = rc->s;
	struct sl_region *r = s->lib;
	uint32_t free_head = SLUICE_IDX_NONE, nfree = 0, used = 0, embryos = 0;

	for (uint32_t i = s->n_bufs; i-- > 0;) {
		if (rc->claim[i] != TAG_NONE)
			continue;
		/* A dead process's mark goes with it: nobody frees it twice
		 * (sl_verbs_reclaim()). */
		if (sl_buf_holder(&s->bufmeta[i])) {
			s->bufmeta[i].flags = s->bufmeta[i].aux = 0;
			s->bufmeta[i].ts_us = 0;
		}
		s->bufmeta[i].next_idx = free_head;
		free_head = i;
		nfree++;
	}
	if (nfree > r->buf_free_count)
		sl_count_n(s, SL_C_recover_buf_reclaimed, nfree - r->buf_free_count);
	r->buf_free_idx = free_head;
	r->buf_free_count = nfree;

	memset(s->hash, 0xff, 2ull * s->hash_buckets * sizeof(uint32_t));
	memset(s->wheel, 0xff, SLUICE_WHEEL_SLOTS * sizeof(uint32_t));
	r->timers_armed = 0;	/* counted again as they are armed, below */
	free_head = SLUICE_IDX_NONE;
	for (uint32_t i = sl_sock_top(s); i-- > 0;) {
		struct sl_sock *so = sl_sock(s, i);

		so->wheel_next = so->wheel_prev = SLUICE_IDX_NONE;
		so->wheel_due_ms = 0;
		so->hash_next = so->port_next = SLUICE_IDX_NONE;
		if (so->type == SL_SOCK_FREE) {
			so->next_idx = free_head;
			free_head = i;
			continue;
		}
		/* The pool's slots are not counted (sock.c); a socket being
		 * taken from it while this runs may be counted twice or not
		 * at all: a figure for inspection, not a limit. */
		if (so->type != SL_SOCK_RESERVED)
			used++;
		if (so->type == SL_SOCK_TCP && (so->tcp.tflags & SL_TF_EMBRYO))
			embryos++;
	}
	r->sock_free_idx = free_head;
	s->r->sock_used = used;
	r->tcp_embryos = embryos;

	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type == SL_SOCK_FREE)
			continue;
		if (so->flags & SL_SF_HASHED) {
			so->flags &= ~SL_SF_HASHED;
			sl_sock_hash(s, so);
		}
		if (so->type == SL_SOCK_TCP)
			sl_tcp_arm(s, so);
	}
}

struct acc {
	uint32_t head, tail, len;
};

static void acc_append(struct sl_stack *s, struct acc *q, struct sl_sock *c)
{
	c->next_idx = SLUICE_IDX_NONE;
	if (q->tail != SLUICE_IDX_NONE)
		sl_sock(s, q->tail)->next_idx = c->idx;
	else
		q->head = c->idx;
	q->tail = c->idx;
	q->len++;
}

/*
 * Listener l's accept queue: its children with SL_TF_ACCQ, in the old
 * queue's order as far as that can be followed, then any the old queue
 * lost, by index; and its SYN count.  (next_idx links the queue.)
 */
static void rebuild_accept(struct rec *rc, struct sl_sock *l, uint8_t *seen)
{
	struct sl_stack *s = rc->s;
	struct sl_tcp_sock *ltp = &l->tcp;
	uint32_t ns = s->max_sockets, idx = ltp->acc_head, syn = 0, steps = 0;
	struct acc q = { SLUICE_IDX_NONE, SLUICE_IDX_NONE, 0 };

	memset(seen, 0, ns);
	while (idx < ns && !seen[idx] && steps++ < ns) {
		struct sl_sock *c = sl_sock(s, idx);

		if (c->type != SL_SOCK_TCP || c->parent_idx != l->idx ||
		    !(c->tcp.tflags & SL_TF_ACCQ))
			break;
		idx = c->next_idx;
		seen[c->idx] = 1;
		acc_append(s, &q, c);
	}
	for (uint32_t i = 0; i < ns; i++) {
		struct sl_sock *c = sl_sock(s, i);

		if (seen[i] || c->type != SL_SOCK_TCP || c->parent_idx != l->idx)
			continue;
		if (c->tcp.tflags & SL_TF_ACCQ)
			acc_append(s, &q, c);
		else if ((c->tcp.tflags & SL_TF_PASSIVE) && c->state == SL_TCP_SYN_RECEIVED)
			syn++;
	}
	ltp->acc_head = q.head;
	ltp->acc_tail = q.tail;
	ltp->acc_len = (uint16_t)q.len;
	ltp->syn_len = (uint16_t)syn;
}

/* Does the ready pool hold slot idx, free or being taken by a live
 * process?  An entry for a dead taker, or for a slot that is not in the
 * pool, is emptied (the holder that fills the pool next fills it). */
static bool ready_holds(struct sl_stack *s, uint32_t idx)
{
	bool held = false;

	for (unsigned int i = 0; i < SL_READY_N; i++) {
		uint64_t e = SL_READ_ONCE(s->lib->ready[i]);
		pid_t taker = (pid_t)(e >> 32);

		if ((uint32_t)e != idx)
			continue;
		if (!held && (!taker || !sl_pid_dead(taker)))
			held = true;
		else
			sl_cmpxchg(&s->lib->ready[i], &e, SL_READY_NONE);
	}
	SL_WRITE_ONCE(s->lib->ready_want, 1);
	return held;
}

/* Resets go out once the stack is whole: RST to each reset connection's
 * peer, ECONNRESET to its users (or, an orphan, its slot freed). */
static void send_resets(struct rec *rc, uint64_t now_us)
{
	struct sl_stack *s = rc->s;

	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (!rc->bad[i] || so->type != SL_SOCK_TCP)
			continue;
		if (rc->bad[i] == 2 && so->state >= SL_TCP_SYN_RECEIVED)
			sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, so->tcp.snd_nxt, now_us);
		if (so->state == SL_TCP_LISTEN) {
			so->state = SL_TCP_CLOSED;
			so->error = ECONNABORTED;
			sl_sock_unhash(s, so);
			sl_sock_wake(s, so);
			continue;
		}
		sl_tcp_done(s, so, ECONNRESET);
	}
}

/*
 * Every listener's park list (tcp.c, sl_tcp_park()), rebuilt so that no
 * connection that waited on a listener falls back to its 1-3-7 s timer
 * because its holder died: first each list in its old order as far as
 * it can be followed (a link that names a socket parked elsewhere, or one
 * seen already, ends it), then every other socket whose park_lso still
 * names a live listener it waits for, in slot order.  A socket that
 * waits for nothing any more, or whose listener is gone or reset, is on
 * no list.  seen[] is zero on entry and on return.
 */
static void rebuild_park(struct rec *rc, uint8_t *seen)
{
	struct sl_stack *s = rc->s;
	uint32_t top = sl_sock_top(s);

	for (uint32_t i = 0; i < top; i++) {
		struct sl_sock *l = sl_sock(s, i);
		uint32_t j, guard = 0;

		if (l->type != SL_SOCK_TCP)
			continue;
		j = l->tcp.park_head;
		l->tcp.park_head = l->tcp.park_tail = SLUICE_IDX_NONE;
		if (l->state != SL_TCP_LISTEN || rc->bad[i])
			continue;
		while (j < top && sl_sock_next(s, j, &guard)) {
			struct sl_sock *c = sl_sock(s, j);
			uint32_t next = c->tcp.park_next;

			if (seen[j] || c == l || c->tcp.park_lso != i)
				break;
			if (!rc->bad[j] && sl_tcp_parked_for(l, c)) {
				seen[j] = 1;
				sl_sock_park_link(s, l, c);
			}
			j = next;
		}
	}
	for (uint32_t i = 0; i < top; i++) {
		struct sl_sock *c = sl_sock(s, i);
		uint32_t lso;
		struct sl_sock *l;

		if (c->type != SL_SOCK_TCP || seen[i])
			continue;
		lso = c->tcp.park_lso;
		c->tcp.park_next = c->tcp.park_prev = c->tcp.park_lso = SLUICE_IDX_NONE;
		if (lso >= top || lso == i || rc->bad[i] || rc->bad[lso])
			continue;
		l = sl_sock(s, lso);
		if (l->type == SL_SOCK_TCP && l->state == SL_TCP_LISTEN &&
		    sl_tcp_parked_for(l, c))
			sl_sock_park_link(s, l, c);
	}
	memset(seen, 0, s->max_sockets);
}

int sl_stack_recover(struct sl_stack *s, pid_t dead)
{
	struct sl_region *r = s->lib;
	/* Named as index + 1 (0: none). */
	uint32_t busy[2] = { r->busy[0] - 1, r->busy[1] - 1 };
	struct rec rc = { .s = s };
	uint8_t *seen;
	bool again;

	rc.dead = dead;
	rc.claim = calloc(s->n_bufs ? s->n_bufs : 1, sizeof(*rc.claim));
	rc.bad = calloc(s->max_sockets ? s->max_sockets : 1, 2);
	if (!rc.claim || !rc.bad) {
		free(rc.claim);
		free(rc.bad);
		return -ENOMEM;
	}
	seen = rc.bad + s->max_sockets;
	r->busy[0] = r->busy[1] = 0;
	/* TIME-WAIT entries: relinked from the ring, whatever the holder was
	 * doing to them. */
	sl_tw_rebuild(s);

	/* Slots: own index (a slot being allocated was zeroed before it was
	 * named), fields, then the sockets the holder was changing. */
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		so->idx = i;
		if (so->type == SL_SOCK_FREE)
			continue;
		if (so->type == SL_SOCK_RESERVED) {
			/* A pool slot stays if the pool holds it; one the
			 * holder was putting there, or a dead taker had, is
			 * free again. */
			if (!ready_holds(s, i))
				so->type = SL_SOCK_FREE;
			continue;
		}
		if (!fields_ok(s, so)) {
			/* Out of range: nothing in it can be followed. */
			if (so->type > SL_SOCK_TCP || so->state > SL_TCP_TIME_WAIT) {
				so->type = SL_SOCK_FREE;
				rc.resets++;
				continue;
			}
			reset_sock(&rc, so, true);
			rc.bad[i] = rc.bad[i] ? rc.bad[i] : 1;
			continue;
		}
		/* Half changed, perhaps; a chain lent to a live process was
		 * not (only the borrower's own calls change it).  Kept here,
		 * it is claimed below like any chain, and dropped with the
		 * rest if it is not whole. */
		if ((i == busy[0] || i == busy[1]) &&
		    (so->type == SL_SOCK_UDP || is_conn(so))) {
			reset_sock(&rc, so, true);
			rc.bad[i] = rc.bad[i] ? rc.bad[i] : 1;
		}
	}
	/* Chains: a socket whose chains are not whole, or share a buffer
	 * with another's, is reset; claiming again until none is found. */
	do {
		again = false;
		memset(rc.claim, 0, s->n_bufs * sizeof(*rc.claim));
		for (uint32_t i = 0; i < sl_sock_top(s); i++) {
			struct sl_sock *so = sl_sock(s, i);

			if (so->type == SL_SOCK_FREE || so->type == SL_SOCK_RESERVED ||
			    claim_sock(&rc, so))
				continue;
			/* A first failure keeps a live borrower's chain (the
			 * queues were at fault); a second drops it too. */
			reset_sock(&rc, so, !rc.bad[i]);
			rc.bad[i] = rc.bad[i] ? rc.bad[i] : 1;
			again = true;
		}
	} while (again);

	/* The loopback queue: whole, or dropped. */
	{
		uint32_t n;
		uint64_t len, aux;

		if (!walk(&rc, r->lo_head, r->lo_tail, true, TAG_LO, false, &n, &len, &aux)) {
			rc.lo_dropped++;
			r->lo_head = r->lo_tail = SLUICE_IDX_NONE;
		} else {
			walk(&rc, r->lo_head, r->lo_tail, true, TAG_LO, true, &n, &len, &aux);
		}
	}
	/* Fragments being reassembled are dropped: their buffers go back
	 * to the pool (their senders' upper layers send again). */
	memset(r->fragq, 0, sizeof(r->fragq));
	r->frag_mem = 0;
	r->frag_queues = 0;
	/* Packets waiting for a neighbour: each list is kept whole if it
	 * ends, shares no buffer and (IPv6) its entry is INCOMPLETE; else
	 * it is dropped (its buffers go back to the pool). */
	for (unsigned int i = 0; i < SL_NEIGH_MAX; i++)
		hold_keep(&rc, &r->neigh[i].hold_idx, true);
	for (unsigned int i = 0; i < SL_NEIGH6_MAX; i++)
		hold_keep(&rc, &r->neigh6[i].hold_idx,
			  r->neigh6[i].state == SL_ND_INCOMPLETE);
	/* The neighbours' hash chains may be half linked: made again. */
	sl_nd_rehash(s);
	for (uint32_t i = 0; i < s->n_bufs; i++) {
		const struct sluice_buf *b = s->bufmeta + i;
		pid_t holder;

		if (rc.claim[i] != TAG_NONE)
			continue;
		if (b->flags & SL_BUF_ON_FILL) {
			rc.claim[i] = TAG_KEEP;
			continue;
		}
		holder = sl_buf_holder(b);
		if (holder && !sl_pid_dead(holder))
			rc.claim[i] = TAG_KEEP;
	}

	rebuild(&rc);
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN && !rc.bad[i])
			rebuild_accept(&rc, so, seen);
	}
	memset(seen, 0, s->max_sockets);
	/* Children of a listener that is gone cannot be accepted. */
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i), *p;

		if (so->type != SL_SOCK_TCP || so->parent_idx == SLUICE_IDX_NONE)
			continue;
		p = sl_sock(s, so->parent_idx);
		if (p->type != SL_SOCK_TCP || p->state != SL_TCP_LISTEN || rc.bad[p->idx]) {
			so->parent_idx = SLUICE_IDX_NONE;
			if ((so->tcp.tflags & (SL_TF_ACCQ | SL_TF_PASSIVE)) && !rc.bad[i]) {
				/* Nobody can accept it: reset, and its slot freed. */
				so->flags |= SL_SF_ORPHAN;
				rc.bad[i] = is_conn(so) ? 2 : 1;
				rc.resets++;
			}
		} else if (so->state == SL_TCP_CLOSED && !rc.bad[i] &&
			   !(so->tcp.tflags & (SL_TF_ACCQ | SL_TF_PASSIVE))) {
			/* A child the dead holder was making (child_new()):
			 * hashed perhaps, its TCB not yet made.  Nobody will
			 * accept it or time it out, and while it stayed hashed
			 * every SYN from its peer's port met a closed socket
			 * and was refused (test_killsoak's fresh client).
			 * Freed, as a reset embryo is. */
			so->flags |= SL_SF_ORPHAN;
			rc.bad[i] = 1;
			rc.resets++;
		}
	}
	/* Each listener's list of children, again from parent_idx: a dead
	 * holder may have left one half changed. */
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type == SL_SOCK_TCP) {
			so->tcp.kid_next = so->tcp.kid_prev = so->tcp.kid_head = SLUICE_IDX_NONE;
		}
	}
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type == SL_SOCK_TCP && so->parent_idx != SLUICE_IDX_NONE)
			sl_sock_kid_link(s, sl_sock(s, so->parent_idx), so);
	}
	rebuild_park(&rc, seen);
	sl_udp_mc_recount(s);
	send_resets(&rc, sl_now(s));
	if (rc.resets)
		sl_count_n(s, SL_C_recover_sock_reset, rc.resets);
	if (rc.lo_dropped)
		sl_count_n(s, SL_C_recover_lo_dropped, rc.lo_dropped);
	free(rc.claim);
	free(rc.bad);
	/* The orphans, counted again: a holder may have died between a
	 * socket's flag and the count. */
	r->tcp_orphans = 0;
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type == SL_SOCK_TCP && (so->flags & SL_SF_ORPHAN))
			r->tcp_orphans++;
	}
	/* The readiness journal and every watch group's ready ring move
	 * past their length: a holder that died between a socket's change
	 * and its entry left it unnamed, so every epoll set looks at all
	 * its items once (preload/epoll.c, check_all()). */
	sl_store_release(&s->lib->chg_seq, s->lib->chg_seq + SL_CHG_RING + 1);
	for (uint32_t g = 0; g < SL_EPW_N; g++)
		sl_store_release(&s->lib->wq[SL_WQ_N + g].chg,
				 s->lib->wq[SL_WQ_N + g].chg + SL_EPW_RING + 1);
	/* Everyone asleep looks again: their sockets may have changed
	 * (blocked accept()s, each asleep on its listener, at once). */
	sl_sock_wake_exclusive_all(s);
	s->wake_all = true;
	s->wake_pending = true;
	s->wake_poll = true;
	return 0;
}
