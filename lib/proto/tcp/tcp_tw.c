// SPDX-License-Identifier: BSD-2-Clause
/*
 * TIME-WAIT entries (tcp.h has the picture): a ring in the region, two
 * hashes over it, under the stack lock.
 *
 * The region is shared, so every index read from it is checked before it
 * is followed, and a chain that leads nowhere or round in a circle empties
 * the table (tcp_tw_table_reset) rather than breaking the stack: an entry
 * is soft state, and losing one costs no more than the table overflowing.
 * A holder that dies half way through a change leaves the chains for
 * sl_tw_rebuild(), which relinks every live entry of the ring.
 */
#include <arpa/inet.h>
#include <string.h>

#include "os/os.h"
#include "proto/proto.h"

_Static_assert(sizeof(struct sl_tw) == SL_TW_SIZE, "a TIME-WAIT entry is SL_TW_SIZE bytes");

static struct sl_tw *tw_at(struct sl_stack *s, uint32_t i)
{
	return (struct sl_tw *)(s->tw + (uint64_t)i * SL_TW_SIZE);
}

static uint32_t tw_index(struct sl_stack *s, const struct sl_tw *tw)
{
	return (uint32_t)(((const uint8_t *)tw - s->tw) / SL_TW_SIZE);
}

static uint32_t *tuple_head(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			    uint16_t rport)
{
	return s->tw_hash + (sl_tuple_hash(laddr, lport, raddr, rport) & (s->tw_max - 1));
}

static uint32_t *port_head(struct sl_stack *s, uint16_t lport)
{
	return s->tw_hash + s->tw_max + ((lport * 0x9e3779b1u) >> 16 & (s->tw_max - 1));
}

static void clear_hashes(struct sl_stack *s)
{
	for (uint32_t i = 0; i < 2 * s->tw_max; i++)
		s->tw_hash[i] = SLUICE_IDX_NONE;
}

/* The table made no sense: start it again, empty. */
static void tw_reset(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	sl_count(s, SL_C_tcp_tw_table_reset);
	clear_hashes(s);
	r->tw_tail = r->tw_head;
	r->tw_count = 0;
	/* The table empty, filters held go to sockets on their ports or
	 * are deleted, not leaked. */
	for (uint32_t i = 0; i < s->tw_max; i++) {
		struct sl_tw *tw = tw_at(s, i);
		uint8_t flags = tw->flags;

		tw->flags = 0;
		if ((flags & (SL_TW_LIVE | SL_TW_FILTER)) == (SL_TW_LIVE | SL_TW_FILTER))
			sl_filter_pass(s, SL_SOCK_TCP, tw->lport, tw->filter_id, tw->filter_laddr,
				       false);
		if ((flags & (SL_TW_LIVE | SL_TW_FILTER6)) == (SL_TW_LIVE | SL_TW_FILTER6))
			sl_filter_pass(s, SL_SOCK_TCP, tw->lport, tw->filter6_id, tw->filter_laddr,
				       true);
	}
}

/* Is the ring's own state possible?  If not, reset it: false. */
static bool ring_ok(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	if (__builtin_expect(r->tw_head - r->tw_tail <= s->tw_max && r->tw_count <= s->tw_max, 1))
		return true;
	tw_reset(s);
	return false;
}

/* A step along a chain: idx names an entry, and the walk is no longer than
 * the table.  At the end of a bad chain the table is reset. */
static bool tw_next(struct sl_stack *s, uint32_t idx, uint32_t *steps)
{
	if (__builtin_expect(idx < s->tw_max && ++*steps <= s->tw_max, 1))
		return true;
	if (idx != SLUICE_IDX_NONE)
		tw_reset(s);
	return false;
}

static void link_entry(struct sl_stack *s, uint32_t i)
{
	struct sl_tw *tw = tw_at(s, i);
	uint32_t *h = tuple_head(s, tw->laddr, tw->lport, tw->raddr, tw->rport);

	tw->hnext = *h;
	*h = i;
	h = port_head(s, tw->lport);
	tw->pprev = SLUICE_IDX_NONE;
	tw->pnext = *h;
	if (*h < s->tw_max)
		tw_at(s, *h)->pprev = i;
	*h = i;
}

/* Take entry i off both chains; false (and the table reset) if it was
 * not where its links say. */
static bool unlink_entry(struct sl_stack *s, uint32_t i)
{
	struct sl_tw *tw = tw_at(s, i);
	uint32_t *pp = tuple_head(s, tw->laddr, tw->lport, tw->raddr, tw->rport), steps = 0;
	uint32_t next = tw->pnext, prev = tw->pprev;

	while (*pp != i) {
		if (!tw_next(s, *pp, &steps)) {
			if (*pp == SLUICE_IDX_NONE)
				tw_reset(s);
			return false;
		}
		pp = &tw_at(s, *pp)->hnext;
	}
	*pp = tw->hnext;
	SL_KILL_POINT("tw_unlink");
	if ((next != SLUICE_IDX_NONE && next >= s->tw_max) ||
	    (prev != SLUICE_IDX_NONE && (prev >= s->tw_max || tw_at(s, prev)->pnext != i)) ||
	    (prev == SLUICE_IDX_NONE && *port_head(s, tw->lport) != i)) {
		tw_reset(s);
		return false;
	}
	if (prev == SLUICE_IDX_NONE)
		*port_head(s, tw->lport) = next;
	else
		tw_at(s, prev)->pnext = next;
	if (next != SLUICE_IDX_NONE)
		tw_at(s, next)->pprev = prev;
	tw->hnext = tw->pnext = tw->pprev = SLUICE_IDX_NONE;
	return true;
}

/* End a live entry: off the chains, no longer live.  The ring slot is
 * passed over when the tail reaches it. */
static void end_entry(struct sl_stack *s, uint32_t i)
{
	struct sl_tw *tw = tw_at(s, i);
	uint8_t flags = tw->flags;

	if (!unlink_entry(s, i))
		return;
	tw->flags = 0;
	s->lib->tw_count--;
	/* Off the chains: its filter goes to whoever is left on the port. */
	if (flags & SL_TW_FILTER)
		sl_filter_pass(s, SL_SOCK_TCP, tw->lport, tw->filter_id, tw->filter_laddr, false);
	if (flags & SL_TW_FILTER6)
		sl_filter_pass(s, SL_SOCK_TCP, tw->lport, tw->filter6_id, tw->filter_laddr, true);
}

/* Write src at the ring's head (the oldest entry goes if it is full). */
static void put(struct sl_stack *s, const struct sl_tw *src)
{
	struct sl_region *r = s->lib;
	uint32_t i;

	if (!s->tw_max || !ring_ok(s))
		return;
	if (r->tw_head - r->tw_tail == s->tw_max) {
		i = r->tw_tail & (s->tw_max - 1);
		if (tw_at(s, i)->flags & SL_TW_LIVE) {
			sl_count(s, SL_C_tcp_tw_overflow);
			end_entry(s, i);
			if (!ring_ok(s))
				return;
		}
		r->tw_tail++;
	}
	i = r->tw_head & (s->tw_max - 1);
	*tw_at(s, i) = *src;
	tw_at(s, i)->flags = src->flags | SL_TW_LIVE;
	link_entry(s, i);
	SL_KILL_POINT("tw_put");
	r->tw_head++;
	if (++r->tw_count > r->tw_peak)
		r->tw_peak = r->tw_count;
}

void sl_tw_enter(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	struct sl_tw tw;
	uint32_t wnd = SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv - tp->rcv_nxt : 0;
	uint8_t ws = (tp->tflags & SL_TF_WS) ? sl_tcp_ws(s, tp->rcv_wscale) : 0;

	memset(&tw, 0, sizeof(tw));
	tw.laddr = so->laddr;
	tw.raddr = so->raddr;
	tw.lport = so->lport;
	tw.rport = so->rport;
	tw.snd_nxt = tp->snd_max;
	tw.rcv_nxt = tp->rcv_nxt;
	tw.ts_recent = tp->ts_recent;
	tw.ts_recent_s = tp->ts_recent_s;
	tw.ts_offset = tp->ts_offset;
	tw.expire_us = now_us + SL_TCP_TIME_WAIT_US;
	/* One rate limit for the connection's out-of-window ACKs. */
	tw.oow_ms = tp->oow_ack_ms;
	wnd >>= ws;
	tw.wnd = (uint16_t)(wnd > 65535 ? 65535 : wnd);
	tw.flags = ((tp->tflags & SL_TF_TS) ? SL_TW_TS : 0) |
		   ((so->flags & SL_SF_AUTOBIND) ? SL_TW_AUTOBIND : 0);
	put(s, &tw);
	SL_KILL_POINT("tw_enter");
	so->tcp.t_close = 0;
	sl_tcp_done(s, so, 0);
}

/*
 * A connection handed to a kernel socket (tcp_handoff.c): an entry that
 * drops what still reaches the stack for its 4-tuple (segments the module
 * steered before it stopped, in the rx ring), where no entry would have
 * the stack answer with a reset and end the kernel's connection.  It
 * holds no filter and lasts as TIME-WAIT does.
 */
void sl_tw_gone(struct sl_stack *s, const struct sl_sock *so, uint64_t now_us)
{
	struct sl_tw tw;

	memset(&tw, 0, sizeof(tw));
	tw.laddr = so->laddr;
	tw.raddr = so->raddr;
	tw.lport = so->lport;
	tw.rport = so->rport;
	tw.snd_nxt = so->tcp.snd_max;
	tw.rcv_nxt = so->tcp.rcv_nxt;
	tw.expire_us = now_us + SL_TCP_TIME_WAIT_US;
	tw.flags = SL_TW_GONE;
	put(s, &tw);
}

struct sl_tw *sl_tw_find(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			 uint16_t rport)
{
	uint32_t idx, steps = 0;

	if (!s->tw_max || !s->lib->tw_count)
		return NULL;
	idx = *tuple_head(s, laddr, lport, raddr, rport);
	while (tw_next(s, idx, &steps)) {
		struct sl_tw *tw = tw_at(s, idx);

		if (tw->lport == lport && tw->rport == rport && tw->laddr == laddr &&
		    tw->raddr == raddr && (tw->flags & SL_TW_LIVE))
			return tw;
		idx = tw->hnext;
	}
	return NULL;
}

void sl_tw_kill(struct sl_stack *s, struct sl_tw *tw)
{
	if (tw->flags & SL_TW_LIVE)
		end_entry(s, tw_index(s, tw));
}

struct sl_tw *sl_tw_rearm(struct sl_stack *s, struct sl_tw *tw, uint64_t now_us)
{
	struct sl_tw copy = *tw;

	copy.expire_us = now_us + SL_TCP_TIME_WAIT_US;
	/* Unchanged order: the newest entry's time just moves on. */
	if (tw_index(s, tw) == ((s->lib->tw_head - 1) & (s->tw_max - 1))) {
		tw->expire_us = copy.expire_us;
		return tw;
	}
	sl_tw_kill(s, tw);
	put(s, &copy);
	return sl_tw_find(s, copy.laddr, copy.lport, copy.raddr, copy.rport);
}

void sl_tw_expire(struct sl_stack *s, uint64_t now_us)
{
	struct sl_region *r = s->lib;
	unsigned int budget = 4096;

	if (!s->tw_max || r->tw_tail == r->tw_head || !ring_ok(s))
		return;
	while (r->tw_tail != r->tw_head && budget--) {
		uint32_t i = r->tw_tail & (s->tw_max - 1);
		struct sl_tw *tw = tw_at(s, i);

		if (tw->flags & SL_TW_LIVE) {
			if (tw->expire_us > now_us)
				return;
			end_entry(s, i);
			if (!ring_ok(s))
				return;
		}
		r->tw_tail++;
	}
}

bool sl_tw_port_used(struct sl_stack *s, uint32_t laddr, uint16_t lport)
{
	uint32_t idx, steps = 0;

	if (!s->tw_max || !s->lib->tw_count)
		return false;
	idx = *port_head(s, lport);
	while (tw_next(s, idx, &steps)) {
		struct sl_tw *tw = tw_at(s, idx);

		if (tw->lport == lport && (tw->flags & SL_TW_LIVE) &&
		    (!laddr || tw->laddr == laddr))
			return true;
		idx = tw->pnext;
	}
	return false;
}

/*
 * Linux's tcp_tw_reuse = 2 (its default): an entry whose peer is this
 * stack (so no old duplicate is out on a wire), with timestamps, in
 * TIME-WAIT for a second or more (tcp_twsk_unique() asks that of the
 * time TS.Recent was taken), gives its 4-tuple to a new connect().  The
 * peer's listener takes the new SYN.
 */
static bool recyclable(struct sl_stack *s, const struct sl_tw *tw, uint64_t now_us)
{
	return (tw->flags & SL_TW_TS) && sl_ip_is_local(s, tw->raddr) &&
	       now_us + SL_TCP_TIME_WAIT_US >= tw->expire_us + SL_TCP_TW_REUSE_US;
}

bool sl_tw_connect_ok(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
		      uint16_t rport, uint64_t now_us, struct sl_tw **reuse)
{
	uint32_t idx, steps = 0;

	*reuse = NULL;
	if (!s->tw_max || !s->lib->tw_count)
		return true;
	idx = *port_head(s, lport);
	while (tw_next(s, idx, &steps)) {
		struct sl_tw *tw = tw_at(s, idx);

		idx = tw->pnext;
		if (tw->lport != lport || !(tw->flags & SL_TW_LIVE) || tw->laddr != laddr)
			continue;
		/* A port bound with bind() is not connect()'s to share. */
		if (!(tw->flags & SL_TW_AUTOBIND))
			return false;
		if (tw->raddr != raddr || tw->rport != rport)
			continue;
		if (!recyclable(s, tw, now_us))
			return false;
		*reuse = tw;
	}
	return true;
}

/* The first live entry on lport that holds a filter of the family (v6)
 * covering laddr (holder), or that holds none of it and has address
 * laddr (0: any), holding the other family's only for laddr too. */
static struct sl_tw *on_port(struct sl_stack *s, uint16_t lport, uint32_t laddr, bool holder,
			     bool v6)
{
	uint8_t mine = v6 ? SL_TW_FILTER6 : SL_TW_FILTER, other = v6 ? SL_TW_FILTER : SL_TW_FILTER6;
	uint32_t idx, steps = 0;

	if (!s->tw_max || !s->lib->tw_count)
		return NULL;
	idx = *port_head(s, lport);
	while (tw_next(s, idx, &steps)) {
		struct sl_tw *tw = tw_at(s, idx);

		idx = tw->pnext;
		if (tw->lport != lport || !(tw->flags & SL_TW_LIVE))
			continue;
		if (holder && (tw->flags & mine) &&
		    (!tw->filter_laddr || tw->filter_laddr == laddr))
			return tw;
		if (!holder && !(tw->flags & mine) && (!laddr || tw->laddr == laddr) &&
		    (!(tw->flags & other) || tw->filter_laddr == laddr))
			return tw;
	}
	return NULL;
}

bool sl_tw_filter_take(struct sl_stack *s, uint16_t lport, uint32_t laddr, uint32_t id, bool v6)
{
	struct sl_tw *tw = on_port(s, lport, laddr, false, v6);

	if (!tw)
		return false;
	if (v6) {
		tw->flags |= SL_TW_FILTER6;
		tw->filter6_id = id;
	} else {
		tw->flags |= SL_TW_FILTER;
		tw->filter_id = id;
	}
	tw->filter_laddr = laddr;
	return true;
}

bool sl_tw_filter_held(struct sl_stack *s, uint16_t lport, uint32_t laddr, bool v6)
{
	return on_port(s, lport, laddr, true, v6) != NULL;
}

void sl_tw_rebuild(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	if (!s->tw_max || !ring_ok(s))
		return;
	clear_hashes(s);
	r->tw_count = 0;
	for (uint32_t pos = r->tw_tail; pos != r->tw_head; pos++) {
		uint32_t i = pos & (s->tw_max - 1);

		if (tw_at(s, i)->flags & SL_TW_LIVE) {
			link_entry(s, i);
			r->tw_count++;
		}
	}
}

unsigned int sl_tw_list(struct sl_stack *s, void (*fn)(const struct sl_tw *tw, void *arg),
			void *arg)
{
	const struct sl_region *r = s->lib;
	uint32_t head = SL_READ_ONCE(r->tw_head), tail = SL_READ_ONCE(r->tw_tail);
	unsigned int n = 0;

	if (!s->tw_max || head - tail > s->tw_max)
		return 0;
	for (uint32_t pos = head; pos != tail; pos--) {
		struct sl_tw tw = *tw_at(s, (pos - 1) & (s->tw_max - 1));

		if (tw.flags & SL_TW_LIVE) {
			fn(&tw, arg);
			n++;
		}
	}
	return n;
}
