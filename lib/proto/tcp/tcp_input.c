// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP input: checks, demultiplexing and the segment-arrival rules of
 * RFC 9293 3.10.7 with RFC 5961 (challenge ACKs), RFC 7323 (PAWS),
 * RFC 2018 (SACK), RFC 5681/6582 (fast retransmit, NewReno recovery),
 * with SACK RFC 8985 (RACK loss detection; the tail loss probe's end) and
 * RFC 6937 (PRR). Received payload stays in its buffer: trimmed in place, queued.
 */
#include <errno.h>
#include <string.h>

#include "proto/proto.h"

struct seg_opts {
	uint16_t mss;
	int8_t ws;		/* -1: absent */
	bool sack_ok, ts;
	uint32_t tsval, tsecr;
	uint8_t nsack;
	uint32_t sack[SL_TCP_SACK_MAX][2];
};

/* One arriving segment, in host order. */
struct seg {
	uint32_t seq, ack, end;	/* end: seq + payload + SYN + FIN */
	uint32_t wnd;
	uint8_t flags;
	uint8_t oflags;		/* flags as they arrived (SYN may be taken off) */
	uint16_t plen;		/* payload bytes */
	uint16_t poff;		/* payload offset from the buffer's off */
	uint16_t more;		/* of plen, bytes in a chain's further buffers */
	uint32_t chain;		/* the first of those buffers (SL_BUF_CHAIN) */
	uint16_t nchain;	/* how many there are */
	uint8_t ecn;		/* TH_ECE_ and TH_CWR_ as they arrived */
	uint8_t ipecn;		/* the IPv4 header's ECN field (SL_IP_ECN_*) */
	struct seg_opts o;
};

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* RFC 9293 3.1: options; a malformed list stops parsing. */
static void parse_opts(const uint8_t *p, unsigned int len, bool syn, struct seg_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ws = -1;
	while (len) {
		unsigned int k = p[0], l;

		if (k == 0)
			break;
		if (k == 1) {
			p++;
			len--;
			continue;
		}
		if (len < 2 || (l = p[1]) < 2 || l > len)
			break;
		switch (k) {
		case 2:
			if (l == 4 && syn)
				o->mss = (uint16_t)(p[2] << 8 | p[3]);
			break;
		case 3:
			if (l == 3 && syn)
				o->ws = (int8_t)(p[2] > SL_TCP_WSCALE_MAX ? SL_TCP_WSCALE_MAX : p[2]);
			break;
		case 4:
			if (l == 2 && syn)
				o->sack_ok = true;
			break;
		case 5:
			if (!syn && l >= 10 && (l - 2) % 8 == 0) {
				for (unsigned int i = 0; i < (l - 2) / 8 && i < SL_TCP_SACK_MAX; i++) {
					o->sack[i][0] = get32(p + 2 + 8 * i);
					o->sack[i][1] = get32(p + 6 + 8 * i);
					o->nsack = (uint8_t)(i + 1);
				}
			}
			break;
		case 8:
			if (l == 10) {
				o->ts = true;
				o->tsval = get32(p + 2);
				o->tsecr = get32(p + 6);
			}
			break;
		default:
			break;
		}
		p += l;
		len -= l;
	}
}

static bool is_bcast(const struct sl_stack *s, uint32_t a)
{
	uint32_t h = ntohl(a);

	return a == INADDR_BROADCAST || (h >> 28) == 0xe ||
	       (s->lib->ip_mask && s->lib->ip_mask != 0xffffffffu &&
		a == (s->lib->ip_addr | ~s->lib->ip_mask));
}

/* ---- queues ---------------------------------------------------------- */

/* Buffers received payload may not take: the last few stay free so that
 * segments carrying ACKs (which free send buffers) can still arrive. */
static bool rx_pool_low(const struct sl_stack *s)
{
	uint32_t reserve = s->n_bufs / 64;

	return s->lib->buf_free_count < (reserve < 8 ? 8 : reserve);
}

/* Trim buffer idx (a received segment) to its payload and stamp it. */
static void to_payload(struct sl_stack *s, uint32_t idx, const struct seg *g)
{
	struct sluice_buf *b = sl_buf(s, idx);

	b->off = (uint16_t)(b->off + g->poff);
	b->len = (uint16_t)(g->plen - g->more);
	b->seq = g->seq;
	b->flags = (g->flags & TH_FIN_) ? SL_TBF_FIN : 0;
	b->next_idx = SLUICE_IDX_NONE;
}

/* In-order payload of len bytes would be copied into the receive queue's
 * tail buffer: it is at most half a buffer and fits the tail's room. */
static bool rx_tail_fits(struct sl_stack *s, const struct sl_sock *so, uint32_t len)
{
	const struct sluice_buf *tb;

	if (!sl_buf_some(s, so->rxq_tail) || len > s->buf_size / 2)
		return false;
	tb = sl_buf(s, so->rxq_tail);
	return (uint32_t)tb->off + tb->len + len <= s->buf_size;
}

/* The connection holds its receive buffer's worth of packet buffers
 * (Linux charges truesize against sk_rcvbuf): a peer sending tiny
 * segments cannot pin more of the shared pool than that. */
static bool rx_over_budget(const struct sl_stack *s, const struct sl_sock *so)
{
	uint64_t held = (uint64_t)(so->rxq_count + so->tcp.ooo_count) * s->buf_size;

	return held >= so->rcvbuf;
}

/* Append in-order payload to the receive queue, copying a segment of up
 * to half a buffer into the tail buffer's spare room instead (saves a
 * buffer, as Linux's tcp_try_coalesce).  Returns true if idx was freed. */
static bool rx_append(struct sl_stack *s, struct sl_sock *so, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);
	uint32_t t = so->rxq_tail;

	if (so->opt_flags & SL_SO_TIMESTAMP)
		so->tcp.rx_stamp_us = sl_now(s);
	if (rx_tail_fits(s, so, b->len)) {
		struct sluice_buf *tb = sl_buf(s, t);

		memcpy(sl_buf_data(s, t) + tb->len, sl_buf_data(s, idx), b->len);
		tb->len = (uint16_t)(tb->len + b->len);
		so->rxq_bytes += b->len;
		so->rx_bytes += b->len;
		sl_buf_free(s, idx);
		return true;
	}
	sl_sock_rxq_append(s, so, idx, b->len);
	return false;
}

/* The sequence after a queued segment, its FIN counted (Linux end_seq). */
static uint32_t buf_end(const struct sluice_buf *b)
{
	return b->seq + b->len + !!(b->flags & SL_TBF_FIN);
}

/*
 * RFC 2883: data that came twice, seq..end, is reported first in the
 * next segment's SACK blocks (tcp_output.c, build_opts()), as Linux's
 * tcp_dsack_set() on a SACK connection (net.ipv4.tcp_dsack's default:
 * not read, as tcp_sack is not).  A later one takes its place.
 */
static void __attribute__((noinline)) dsack_set(struct sl_stack *s, struct sl_tcp_sock *tp,
						 uint32_t seq, uint32_t end)
{
	if (!(tp->tflags & SL_TF_SACK))
		return;
	tp->tflags |= SL_TF_DSACK;
	tp->dsack_seq = seq;
	tp->dsack_end = end;
	sl_count(s, SL_C_tcp_dsack_tx);
}

/* Linux's tcp_dsack_extend(): the block waiting grows by a range that
 * overlaps or touches it (tcp_sack_extend()), and one is set if none
 * waits. */
static void dsack_extend(struct sl_stack *s, struct sl_tcp_sock *tp, uint32_t seq, uint32_t end)
{
	if (!(tp->tflags & SL_TF_DSACK)) {
		dsack_set(s, tp, seq, end);
		return;
	}
	if (SEQ_LEQ(tp->dsack_seq, end) && SEQ_LEQ(seq, tp->dsack_end)) {
		if (SEQ_LT(seq, tp->dsack_seq))
			tp->dsack_seq = seq;
		if (SEQ_GT(end, tp->dsack_end))
			tp->dsack_end = end;
	}
}

/*
 * The out-of-order segment that now continues the stream (NONE: none),
 * off the queue and trimmed to RCV.NXT; those it holds only old data of
 * are freed.  What of them the in-order data brought again is reported by
 * DSACK, as Linux's tcp_ofo_queue() does below the RCV.NXT the segment
 * left (*high, taken at the first call).  Out of line: deliver(), inlined
 * in every in-order segment's path, only asks whether a queue is there.
 */
static uint32_t __attribute__((noinline)) ooo_next(struct sl_stack *s, struct sl_sock *so,
						   uint32_t *steps, uint32_t *high)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (!*steps)
		*high = tp->rcv_nxt;
	for (;;) {
		uint32_t h = tp->ooo_head, d;
		struct sluice_buf *hb;

		if (!sl_buf_next(s, h, steps))
			return SLUICE_IDX_NONE;
		hb = sl_buf(s, h);
		if (SEQ_GT(hb->seq, tp->rcv_nxt))
			return SLUICE_IDX_NONE;
		if (SEQ_LT(hb->seq, *high)) {
			uint32_t hi = *high;

			if (SEQ_LT(buf_end(hb), *high))
				*high = buf_end(hb);
			dsack_extend(s, tp, hb->seq, hi);
		}
		tp->ooo_head = hb->next_idx;
		tp->ooo_bytes -= hb->len;
		tp->ooo_count--;
		d = tp->rcv_nxt - hb->seq;
		if (d > hb->len || (d == hb->len && !(hb->flags & SL_TBF_FIN))) {
			sl_buf_free(s, h);
			continue;
		}
		hb->off = (uint16_t)(hb->off + d);
		hb->len = (uint16_t)(hb->len - d);
		hb->seq += d;
		hb->next_idx = SLUICE_IDX_NONE;
		return h;
	}
}

/* Deliver in-order segment buffer idx (already trimmed to start at
 * rcv_nxt), then whatever the out-of-order queue now continues. */
static void deliver(struct sl_stack *s, struct sl_sock *so, uint32_t idx)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t steps = 0, high = 0;

	for (;;) {
		struct sluice_buf *b = sl_buf(s, idx);
		bool fin = b->flags & SL_TBF_FIN;

		tp->rcv_nxt += b->len;
		if (b->len)
			rx_append(s, so, idx);
		else
			sl_buf_free(s, idx);
		if (fin) {
			tp->rcv_nxt++;
			tp->tflags |= SL_TF_FIN_RCVD;
			sl_buf_free_chain(s, tp->ooo_head);
			tp->ooo_head = SLUICE_IDX_NONE;
			tp->ooo_bytes = 0;
			tp->ooo_count = 0;
			return;
		}
		/* Pull the next out-of-order segment if it now fits. */
		if (!sl_buf_some(s, tp->ooo_head))
			return;
		idx = ooo_next(s, so, &steps, &high);
		if (idx == SLUICE_IDX_NONE)
			return;
	}
}

/* Append the further buffers of a chained segment whose first buffer
 * deliver() just took (in order, nothing out of order: chain_ok()). */
static void deliver_more(struct sl_stack *s, struct sl_sock *so, const struct seg *g)
{
	uint32_t idx = g->chain, steps = 0;

	if (so->opt_flags & SL_SO_TIMESTAMP)
		so->tcp.rx_stamp_us = sl_now(s);
	while (sl_buf_next(s, idx, &steps)) {
		struct sluice_buf *b = sl_buf(s, idx);
		uint32_t next = b->next_idx;

		b->seq = so->tcp.rcv_nxt;
		b->flags = 0;
		SL_KILL_POINT("tcp_rx_data");
		so->tcp.rcv_nxt += b->len;
		sl_sock_rxq_append(s, so, idx, b->len);
		idx = next;
	}
}

/*
 * A chained segment (one from a socket of this stack, spanning several
 * buffers) is taken whole only where it simply continues the stream:
 * everything else about it then holds as for a one-buffer segment, with no
 * trimming.  Any other is cut to its first buffer and goes the usual way;
 * the sender sends the rest again, one buffer a segment.
 */
static bool chain_ok(struct sl_stack *s, const struct sl_sock *so, const struct seg *g)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint64_t held = (uint64_t)(so->rxq_count + tp->ooo_count + so->rx_lent_count + 1 +
				   g->nchain) * s->buf_size;

	return so->state >= SL_TCP_ESTABLISHED && so->state <= SL_TCP_FIN_WAIT_2 &&
	       so->state != SL_TCP_CLOSE_WAIT && !(tp->tflags & SL_TF_FIN_RCVD) &&
	       !(so->flags & SL_SF_ORPHAN) &&
	       (g->flags & (TH_SYN_ | TH_RST_ | TH_FIN_ | TH_URG_ | TH_ACK_)) == TH_ACK_ &&
	       g->seq == tp->rcv_nxt && SEQ_GT(tp->rcv_adv, tp->rcv_nxt) &&
	       SEQ_LEQ(g->seq + g->plen, tp->rcv_adv) && !sl_buf_some(s, tp->ooo_head) &&
	       !rx_pool_low(s) && held <= so->rcvbuf;
}

/*
 * Queue an out-of-order segment sorted by seq (RFC 9293 3.10.7.4 seventh,
 * RFC 5681 4.2), with the overlaps Linux's tcp_data_queue_ofo() finds,
 * each reported by DSACK: against the last segment starting at or before
 * it, all of it held already (dropped), its front held (queued after
 * that one), or that one covered from the same start (taking its place);
 * then the segments after it that it covers go, and one it overlaps is
 * reported up to its end.  Returns false if it was dropped (idx freed).
 */
static bool ooo_insert(struct sl_stack *s, struct sl_sock *so, uint32_t idx)
{
	struct sl_tcp_sock *tp = &so->tcp;
	struct sluice_buf *b = sl_buf(s, idx);
	uint32_t *pp = &tp->ooo_head, *prev = NULL, seq = b->seq, end = buf_end(b), steps = 0;

	if (tp->ooo_count >= SL_TCP_OOO_MAX || rx_pool_low(s) || rx_over_budget(s, so)) {
		sl_count(s, SL_C_tcp_ooo_drop);
		sl_buf_free(s, idx);
		return false;
	}
	tp->sack_last = seq;
	while (sl_buf_next(s, *pp, &steps)) {
		struct sluice_buf *c = sl_buf(s, *pp);

		if (SEQ_GT(c->seq, seq))
			break;
		prev = pp;
		pp = &c->next_idx;
	}
	if (prev) {
		uint32_t ci = *prev;
		struct sluice_buf *c = sl_buf(s, ci);
		uint32_t ce = buf_end(c);

		if (SEQ_LEQ(end, ce) && SEQ_LT(seq, ce)) {
			/* Already held. */
			dsack_set(s, tp, seq, end);
			sl_buf_free(s, idx);
			return true;
		}
		if (SEQ_LT(seq, ce) && SEQ_GT(seq, c->seq)) {
			dsack_set(s, tp, seq, ce);
		} else if (SEQ_LT(seq, ce)) {
			dsack_extend(s, tp, c->seq, ce);
			*prev = c->next_idx;
			tp->ooo_bytes -= c->len;
			tp->ooo_count--;
			sl_buf_free(s, ci);
			pp = prev;
		}
	}
	b->next_idx = *pp;
	*pp = idx;
	tp->ooo_bytes += b->len;
	tp->ooo_count++;
	sl_count(s, SL_C_tcp_ooo);
	while (sl_buf_next(s, b->next_idx, &steps)) {
		uint32_t ni = b->next_idx;
		struct sluice_buf *c = sl_buf(s, ni);
		uint32_t ce = buf_end(c);

		if (SEQ_LEQ(end, c->seq))
			break;
		if (SEQ_LT(end, ce)) {
			dsack_extend(s, tp, c->seq, end);
			break;
		}
		dsack_extend(s, tp, c->seq, ce);
		b->next_idx = c->next_idx;
		tp->ooo_bytes -= c->len;
		tp->ooo_count--;
		sl_buf_free(s, ni);
	}
	return true;
}

/* ---- acknowledgements ------------------------------------------------ */

/* ---- RACK (RFC 8985 6, as Linux's tcp_recovery.c) -------------------- */

/* Was the segment sent at ta, ending at ea, sent after the one sent at tb
 * ending at eb?  One send time (a burst): the later in sequence
 * (Linux's tcp_skb_sent_after()). */
static bool sent_after(uint64_t ta, uint32_t ea, uint64_t tb, uint32_t eb)
{
	return ta > tb || (ta == tb && SEQ_GT(ea, eb));
}

/*
 * Send-queue buffer b was delivered (newly SACKed, or acknowledged
 * without having been SACKed): RFC 8985 6.2 step 2 (Linux's
 * tcp_rack_advance()) and reordering (a never-resent segment delivered
 * below the highest SACKed one, Linux's tcp_check_sack_reordering()).
 */
static void rack_delivered(struct sl_stack *s, struct sl_tcp_sock *tp, const struct sluice_buf *b,
			   uint64_t now_us)
{
	uint64_t rtt = now_us > b->ts_us ? now_us - b->ts_us : 0;
	uint32_t end = b->seq + b->aux;

	if (!(tp->tflags & SL_TF_SACK))
		return;
	if (!(b->flags & SL_TBF_REXMIT) && (tp->rack & SL_RACK_HIGH) &&
	    SEQ_LT(b->seq, tp->sack_high) && !(tp->rack & SL_RACK_REORD)) {
		tp->rack |= SL_RACK_REORD;
		sl_count(s, SL_C_tcp_rack_reord);
	}
	/* Sent again and back sooner than any RTT seen: the original's
	 * delivery, maybe; no sample (RFC 8985 6.2 step 2, Linux). */
	if ((b->flags & SL_TBF_REXMIT) && (!tp->min_rtt_us || rtt < tp->min_rtt_us))
		return;
	tp->rack |= SL_RACK_ADVANCED;
	tp->rack_rtt_us = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
	if (sent_after(b->ts_us, end, tp->rack_xmit_us, tp->rack_end_seq)) {
		tp->rack_xmit_us = b->ts_us;
		tp->rack_end_seq = end;
	}
}

/* RFC 8985 6.2 step 4, as Linux's tcp_rack_reo_wnd(): none while no
 * reordering was seen and a recovery is on or DupThresh segments are
 * SACKed; else min_RTT/4 a step, at most SRTT. */
static uint32_t rack_reo_wnd(const struct sl_tcp_sock *tp, unsigned int sacked_segs)
{
	uint64_t w;

	if (!(tp->rack & SL_RACK_REORD) &&
	    ((tp->tflags & SL_TF_RECOVERY) || tp->backoff || sacked_segs >= SL_TCP_DUPACK_THRESH))
		return 0;
	w = (uint64_t)(tp->min_rtt_us / 4) * (tp->reo_steps ? tp->reo_steps : 1);
	return w < tp->srtt_us ? (uint32_t)w : tp->srtt_us;
}

/*
 * RFC 8985 6.2 step 5 (Linux's tcp_rack_detect_loss()): a segment sent
 * before RACK.xmit_ts, neither delivered nor waiting to be sent again, is
 * lost once RACK.rtt + the reordering window have passed since it left
 * (a retransmission too: it loses SL_TBF_RECOV and goes again). Returns
 * how long until the next one would be (0: none); *newly: marked now,
 * *lost: every segment marked and not yet delivered. The walk is in
 * sequence order and stops at the first segment never resent that left
 * after RACK.xmit_ts (Linux's walks its send-time list to the same
 * point), so an ACK with nothing lost looks at one segment.
 */
static uint64_t rack_detect(struct sl_stack *s, struct sl_tcp_sock *tp, uint64_t now_us,
			    uint32_t *newly, uint32_t *lost)
{
	uint32_t idx, steps = 0, reo;
	unsigned int sacked = 0;
	uint64_t wait = 0;

	*newly = *lost = 0;
	/* SACKed segments, as far as DupThresh (all reo_wnd asks). */
	for (idx = tp->sndq_head; tp->sacked_bytes && sacked < SL_TCP_DUPACK_THRESH &&
	     sl_buf_next(s, idx, &steps); idx = sl_buf(s, idx)->next_idx) {
		const struct sluice_buf *b = sl_buf(s, idx);

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		sacked += !!(b->flags & SL_TBF_SACKED);
	}
	reo = rack_reo_wnd(tp, sacked);
	steps = 0;
	for (idx = tp->sndq_head; sl_buf_next(s, idx, &steps); idx = sl_buf(s, idx)->next_idx) {
		struct sluice_buf *b = sl_buf(s, idx);
		int64_t left;

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		if (b->flags & SL_TBF_SACKED)
			continue;
		if ((b->flags & (SL_TBF_LOST | SL_TBF_RECOV)) == SL_TBF_LOST) {
			(*lost)++;
			continue;
		}
		/* A retransmission left after the originals of its instant,
		 * whatever their sequence (a clock that did not move). */
		if (!sent_after(tp->rack_xmit_us, tp->rack_end_seq, b->ts_us, b->seq + b->aux) ||
		    ((b->flags & SL_TBF_REXMIT) && b->ts_us == tp->rack_xmit_us)) {
			/* A segment never sent again, sent after RACK.xmit_ts:
			 * every later one left later still (first sends go in
			 * sequence order, resends after them): none is due. */
			if (!(b->flags & SL_TBF_REXMIT))
				break;
			*lost += !!(b->flags & SL_TBF_LOST);
			continue;
		}
		left = (int64_t)tp->rack_rtt_us + reo - (int64_t)(now_us - b->ts_us);
		if (left <= 0) {
			b->flags = (uint16_t)((b->flags | SL_TBF_LOST) & ~SL_TBF_RECOV);
			(*newly)++;
			(*lost)++;
			sl_count(s, SL_C_tcp_rack_lost);
		} else {
			*lost += !!(b->flags & SL_TBF_LOST);
			if ((uint64_t)left > wait)
				wait = (uint64_t)left;
		}
	}
	return wait;
}

/* After an ACK: look for losses if RACK.xmit_ts moved, and set the
 * reordering timer for the segment that may yet be (RFC 8985 6.2 step
 * 5, Linux's tcp_rack_mark_lost(): the wait plus 2 ms). */
static void rack_mark(struct sl_stack *s, struct sl_tcp_sock *tp, uint64_t now_us, uint32_t *newly,
		      uint32_t *lost)
{
	uint64_t wait;

	*newly = *lost = 0;
	/* Nothing newly delivered: nothing new to judge by. */
	if (!(tp->tflags & SL_TF_SACK) || !(tp->rack & SL_RACK_ADVANCED))
		return;
	tp->rack &= (uint8_t)~SL_RACK_ADVANCED;
	wait = rack_detect(s, tp, now_us, newly, lost);
	tp->t_reo = wait ? now_us + wait + SL_TCP_REO_SLACK_US : 0;
	if (tp->t_reo)
		tp->t_tlp = 0;
}

/* ---- undo (RFC 3522 Eifel, RFC 3708 DSACK, RFC 5682 F-RTO) ----------- */

/*
 * A DSACK for [st, en): the segments it reports twice were sent again
 * needlessly. Those of the episode being judged (above undo_marker)
 * are taken off undo_retrans; at 0 every retransmission was needless
 * (Linux's tcp_check_dsack() and tcp_sacktag_one(), one count a
 * segment).
 */
static void dsack_count(struct sl_tcp_sock *tp, uint32_t st, uint32_t en)
{
	uint32_t mss = tp->mss ? tp->mss : SL_TCP_MSS_DEFAULT, segs;

	if (!(tp->undo & SL_UNDO_MARK) || tp->undo_retrans <= 0 || !SEQ_GT(en, tp->undo_marker) ||
	    !SEQ_LT(st, en))
		return;
	segs = (en - st + mss - 1) / mss;
	tp->undo_retrans = segs >= (uint32_t)tp->undo_retrans ? 0 : tp->undo_retrans - (int32_t)segs;
}

/* Retransmissions of this recovery still out: neither SACKed nor taken
 * for lost again (Linux's retrans_out). */
static uint32_t retrans_out(struct sl_stack *s, const struct sl_tcp_sock *tp)
{
	uint32_t n = 0, steps = 0;

	for (uint32_t idx = tp->sndq_head; sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		const struct sluice_buf *b = sl_buf(s, idx);

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		n += (b->flags & (SL_TBF_RECOV | SL_TBF_SACKED)) == SL_TBF_RECOV;
	}
	return n;
}

/* A recovery or an RTO begins: what it sends again from here is judged
 * (Linux's tcp_init_undo(); a probe's retransmission still out counts). */
static void undo_init(struct sl_tcp_sock *tp, uint32_t out)
{
	int32_t n = (int32_t)out +
		    ((tp->tflags & (SL_TF_TLP | SL_TF_TLP_RETX)) == (SL_TF_TLP | SL_TF_TLP_RETX));

	tp->undo_marker = tp->snd_una;
	tp->undo_retrans = n ? n : -1;
	tp->undo |= SL_UNDO_MARK;
}

/* Free send-queue data below snd_una; returns bytes newly acknowledged. */
/*
 * The send times an ACK's RTT sample comes from (Linux's
 * tcp_clean_rtx_queue() and tcp_sacktag_one()): the oldest and newest of
 * the segments it acknowledged cumulatively and had not sent again, and
 * of those it newly SACKed; 0: none.
 */
struct ack_stamps {
	uint64_t first, last, sfirst, slast;
	bool rexmit;		/* a segment sent again was acknowledged */
};

static void drop_acked(struct sl_stack *s, struct sl_sock *so, struct ack_stamps *st,
		       uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t steps = 0;
	bool rexmit_acked = false;

	while (sl_buf_next(s, tp->sndq_head, &steps)) {
		uint32_t idx = tp->sndq_head;
		struct sluice_buf *b = sl_buf(s, idx);
		uint32_t end = b->seq + b->aux;

		if (SEQ_GT(end, tp->snd_una) || !(b->flags & SL_TBF_SENT))
			break;
		if (!(b->flags & SL_TBF_SACKED))
			rack_delivered(s, tp, b, now_us);
		if (b->flags & SL_TBF_REXMIT) {
			rexmit_acked = true;
		} else if (!(b->flags & SL_TBF_SACKED)) {
			if (SEQ_LEQ(end, tp->recover))
				tp->undo |= SL_UNDO_ORIG;
			if (!st->first)
				st->first = b->ts_us;
			st->last = b->ts_us;
		}
		tp->sndq_head = b->next_idx;
		if (tp->sndq_head == SLUICE_IDX_NONE)
			tp->sndq_tail = SLUICE_IDX_NONE;
		if (tp->sndq_hint == idx)
			tp->sndq_hint = SLUICE_IDX_NONE;
		tp->sndq_bytes -= b->aux;
		if (b->flags & SL_TBF_SACKED)
			tp->sacked_bytes -= b->aux < tp->sacked_bytes ? b->aux : tp->sacked_bytes;
		SL_KILL_POINT("tcp_ack");
		sl_buf_free(s, idx);
	}
	/* Without SACK an ACK that also covers a segment sent again cannot
	 * tell which copy arrived (Linux drops FLAG_ORIG_SACK_ACKED). */
	if (rexmit_acked && !(tp->tflags & SL_TF_SACK))
		tp->undo &= (uint8_t)~SL_UNDO_ORIG;
	st->rexmit |= rexmit_acked;
	/* SND.UNA inside the head buffer (the peer took only part of a
	 * segment, e.g. into a window it shrank): drop the acknowledged
	 * front, so a retransmission starts at SND.UNA and can be cut to
	 * what the window allows (RFC 9293 3.8.6.2.1). */
	if (sl_buf_some(s, tp->sndq_head)) {
		struct sluice_buf *b = sl_buf(s, tp->sndq_head);
		uint8_t *p = sl_buf_base(s, tp->sndq_head) + SL_TCP_DATA_OFF;
		/* Read once: checked, then the offset and length of the move
		 * (read again, d or aux - d could be anything up to 4 GiB). */
		uint32_t seq = SL_READ_ONCE(b->seq), aux = SL_READ_ONCE(b->aux), una = SL_READ_ONCE(tp->snd_una);

		if (aux > SL_TCP_BUF_PAYLOAD(s)) {
			sl_corrupt(s, SL_C_corrupt_buf_len, tp->sndq_head);
		} else if ((b->flags & SL_TBF_SENT) && SEQ_GT(una, seq) && SEQ_LT(una, seq + aux)) {
			uint32_t d = una - seq;

			memmove(p, p + d, aux - d);
			b->aux = (uint16_t)(aux - d);
			b->seq = una;
			tp->sndq_bytes -= d;
			if (b->flags & SL_TBF_SACKED)
				tp->sacked_bytes -= d < tp->sacked_bytes ? d : tp->sacked_bytes;
		}
	}
}

/* Mark the send-queue buffers o's SACK blocks cover; returns the bytes
 * newly SACKed. */
static uint32_t mark_sacked(struct sl_stack *s, struct sl_sock *so, const struct seg_opts *o,
			    uint32_t ack, uint32_t *high_out, struct ack_stamps *at, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t newly = 0, high = (tp->rack & SL_RACK_HIGH) ? tp->sack_high : tp->snd_una;

	*high_out = high;

	/* RFC 2883: a first block at or below the ACK, or inside the
	 * second, reports a segment that arrived twice (Linux's
	 * tcp_check_dsack()). */
	if (o->nsack && SEQ_LT(o->sack[0][0], o->sack[0][1]) &&
	    (SEQ_LEQ(o->sack[0][1], ack) ||
	     (o->nsack > 1 && SEQ_GEQ(o->sack[0][0], o->sack[1][0]) &&
	      SEQ_LEQ(o->sack[0][1], o->sack[1][1])))) {
		sl_count(s, SL_C_tcp_dsack_rx);
		tp->rack |= SL_RACK_DSACK;
		dsack_count(tp, o->sack[0][0], o->sack[0][1]);
	}

	for (unsigned int i = 0; i < o->nsack; i++) {
		uint32_t st = o->sack[i][0], en = o->sack[i][1];

		/* RFC 2018 / RFC 6675: ignore blocks outside (UNA, MAX]. */
		if (!SEQ_LT(st, en) || SEQ_LEQ(en, tp->snd_una) || SEQ_GT(en, tp->snd_max))
			continue;
		uint32_t steps = 0;

		for (uint32_t idx = tp->sndq_head;
		     sl_buf_next(s, idx, &steps);) {
			struct sluice_buf *b = sl_buf(s, idx);

			if (SEQ_GEQ(b->seq, en))
				break;
			if (SEQ_GEQ(b->seq, st) && SEQ_LEQ(b->seq + b->aux, en) &&
			    (b->flags & (SL_TBF_SENT | SL_TBF_SACKED)) == SL_TBF_SENT) {
				b->flags |= SL_TBF_SACKED;
				newly += b->aux;
				rack_delivered(s, tp, b, now_us);
				if (!(b->flags & SL_TBF_REXMIT) && SEQ_LEQ(b->seq + b->aux, tp->recover))
					tp->undo |= SL_UNDO_ORIG;
				if (!(b->flags & SL_TBF_REXMIT)) {
					if (!at->sfirst || b->ts_us < at->sfirst)
						at->sfirst = b->ts_us;
					if (b->ts_us > at->slast)
						at->slast = b->ts_us;
				}
				if (SEQ_GT(b->seq + b->aux, high))
					high = b->seq + b->aux;
			}
			idx = b->next_idx;
		}
	}
	/* Taken as the highest SACKed once the ACK is done (ack_process()):
	 * what this ACK delivers is judged against the one before. */
	*high_out = high;
	tp->sacked_bytes += newly;
	return newly;
}

/* Retransmit the first hole below the highest SACKed data, or the head. */
static void retransmit_hole(struct sl_stack *s, struct sl_sock *so, uint64_t now_us,
			    bool head)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t idx, cand = SLUICE_IDX_NONE, steps = 0;
	bool sacked_after = false;

	for (idx = tp->sndq_head; sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		struct sluice_buf *b = sl_buf(s, idx);

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		if (b->flags & SL_TBF_SACKED) {
			if (cand != SLUICE_IDX_NONE)
				sacked_after = true;
			continue;
		}
		if (cand == SLUICE_IDX_NONE && !(b->flags & SL_TBF_RECOV))
			cand = idx;
		if (cand != SLUICE_IDX_NONE && sacked_after)
			break;
	}
	if (cand == SLUICE_IDX_NONE || (!head && !sacked_after))
		return;
	sl_buf(s, cand)->flags |= SL_TBF_RECOV;
	sl_tcp_xmit_buf(s, so, cand, now_us);
}

/* RFC 6675 4 SetPipe(), with RACK's losses (Linux's
 * tcp_packets_in_flight()): what is still in the network, in bytes: sent,
 * neither SACKed nor taken for lost, and once more for each retransmission
 * still out. */
static uint32_t sack_pipe(struct sl_stack *s, const struct sl_tcp_sock *tp)
{
	uint32_t pipe = 0, steps = 0;

	for (uint32_t idx = tp->sndq_head; sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		const struct sluice_buf *b = sl_buf(s, idx);

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		if (b->flags & SL_TBF_SACKED)
			continue;
		if (!(b->flags & SL_TBF_LOST))
			pipe += b->aux;
		if (b->flags & SL_TBF_RECOV)
			pipe += b->aux;
	}
	return pipe;
}

/* Send again, in sequence order, the segments taken for lost and not yet
 * resent, while the pipe stays within cwnd (RFC 6675 NextSeg() rule 1;
 * Linux's tcp_xmit_retransmit_queue()); returns the pipe after. */
static uint32_t send_lost(struct sl_stack *s, struct sl_sock *so, uint32_t pipe, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t steps = 0;

	for (uint32_t idx = tp->sndq_head; sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		struct sluice_buf *b = sl_buf(s, idx);

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		if ((b->flags & (SL_TBF_SACKED | SL_TBF_LOST | SL_TBF_RECOV)) != SL_TBF_LOST)
			continue;
		if (pipe + b->aux > tp->cwnd)
			break;
		b->flags |= SL_TBF_RECOV;
		if (sl_tcp_xmit_buf(s, so, idx, now_us))
			break;
		pipe += b->aux;
		tp->prr_out += b->aux;
	}
	return pipe;
}

/*
 * RFC 6937 Proportional Rate Reduction, on each ACK of a SACK recovery
 * (the one that starts it too), as Linux's tcp_cwnd_reduction(): cwnd =
 * pipe + what this ACK lets out, ssthresh/cwnd-before of what was
 * delivered while pipe is above ssthresh (whole segments), and slow start
 * back up to it below (PRR-SSRB, one segment more when SND.UNA moved and
 * nothing was newly lost). The lost segments go first (send_lost()); what
 * room is left goes to new data in sl_tcp_output() (prr_room). The first
 * ACK always sends one (Linux: the fast retransmit is forced).
 */
static void prr_ack(struct sl_stack *s, struct sl_sock *so, uint32_t delivered, bool una_moved,
		    uint32_t newly_lost, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t pipe = sack_pipe(s, tp), mss = tp->mss ? tp->mss : SL_TCP_MSS_DEFAULT;
	int64_t sndcnt;

	tp->prr_delivered += delivered;
	if (pipe > tp->ssthresh) {
		uint64_t fs = tp->recover_fs ? tp->recover_fs : 1;
		uint64_t due = ((uint64_t)tp->prr_delivered * tp->ssthresh + fs - 1) / fs;

		sndcnt = (int64_t)((due + mss - 1) / mss * mss) - tp->prr_out;
	} else {
		int64_t limit = (int64_t)tp->prr_delivered - tp->prr_out;

		if (limit < (int64_t)delivered)
			limit = delivered;
		if (una_moved && !newly_lost)
			limit += mss;
		sndcnt = (int64_t)tp->ssthresh - pipe < limit ? (int64_t)tp->ssthresh - pipe : limit;
	}
	if (sndcnt < 0)
		sndcnt = 0;
	if (!tp->prr_out && sndcnt < mss)
		sndcnt = mss;
	tp->cwnd = pipe + (uint32_t)sndcnt;
	pipe = send_lost(s, so, pipe, now_us);
	tp->prr_room = tp->cwnd > pipe ? tp->cwnd - pipe : 0;
}

/* Enter fast recovery (RFC 6582 3.2 step 2; with SACK, RFC 6675 5 and
 * RFC 6937 on RACK's losses), this ACK having delivered delivered bytes. */
static void enter_recovery(struct sl_stack *s, struct sl_sock *so, uint32_t delivered,
			   uint32_t newly_lost, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t steps = 0, cwnd = tp->cwnd, out;

	sl_count(s, SL_C_tcp_fast_retransmit);
	if (!(tp->tflags & SL_TF_SACK))
		for (uint32_t i = tp->sndq_head; sl_buf_next(s, i, &steps);
		     i = sl_buf(s, i)->next_idx)
			sl_buf(s, i)->flags &= ~SL_TBF_RECOV;
	/* An episode to judge for undo (Linux's tcp_enter_recovery()): the
	 * first retransmission's stamp is new unless one is still out. */
	out = retrans_out(s, tp);
	if (!out && sl_buf_some(s, tp->sndq_head) &&
	    !(sl_buf(s, tp->sndq_head)->flags & SL_TBF_REXMIT))
		tp->undo &= (uint8_t)~SL_UNDO_STAMP;
	undo_init(tp, out);
	/* An ECN reduction under way set ssthresh already: not again (Linux's
	 * tcp_enter_recovery() in CWR); the recovery takes it over, and an
	 * undo leaves ssthresh as the ECN-Echo made it. */
	if (tp->ecn & SL_ECN_CWR_WND) {
		tp->ecn &= (uint8_t)~SL_ECN_CWR_WND;
		tp->prior_ssthresh = 0;
		tp->cwnd = tp->ssthresh;
	} else {
		sl_tcp_cc_save(tp, false, tp->undo & SL_UNDO_ECE);
		sl_tcp_cc_loss(tp, now_us);
	}
	tp->recover = tp->snd_max;
	tp->tflags |= SL_TF_RECOVERY;
	/* A reduction ends a probe's episode (Linux's
	 * tcp_init_cwnd_reduction()). */
	tp->tflags &= ~(SL_TF_TLP | SL_TF_TLP_RETX);
	tp->t_tlp = 0;
	if (tp->tflags & SL_TF_SACK) {
		tp->prr_delivered = tp->prr_out = 0;
		/* PRR's divisor: the cwnd before (Linux's prior_cwnd). */
		tp->recover_fs = cwnd;
		prr_ack(s, so, delivered, false, newly_lost, now_us);
	} else {
		retransmit_hole(s, so, now_us, true);
		tp->cwnd = tp->ssthresh + SL_TCP_DUPACK_THRESH * tp->mss;
	}
	tp->t_rexmt = now_us + tp->rto_us;
}

/* RACK's reordering timer ran out (RFC 8985 6.3, Linux's
 * tcp_rack_reo_timeout()): look again; what is lost now starts a
 * recovery (as if a segment was delivered) or goes within cwnd. */
void sl_tcp_rack_timeout(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t newly, lost;
	uint64_t wait;

	tp->t_reo = 0;
	if (!(tp->tflags & SL_TF_SACK) || tp->snd_una == tp->snd_max ||
	    so->state < SL_TCP_ESTABLISHED)
		return;
	sl_count(s, SL_C_tcp_rack_reo_timeout);
	wait = rack_detect(s, tp, now_us, &newly, &lost);
	if (newly) {
		if (!(tp->tflags & SL_TF_RECOVERY) && SEQ_GT(tp->snd_una, tp->recover)) {
			enter_recovery(s, so, tp->mss, newly, now_us);
		} else if (tp->tflags & SL_TF_RECOVERY) {
			uint32_t pipe = send_lost(s, so, sack_pipe(s, tp), now_us);

			tp->prr_room = tp->cwnd > pipe ? tp->cwnd - pipe : 0;
		}
		sl_tcp_output(s, so, now_us);
	}
	if (wait)
		tp->t_reo = now_us + wait + SL_TCP_REO_SLACK_US;
	else if (!tp->t_rexmt)
		sl_tcp_rearm_rexmt(so, now_us);
}

/*
 * RFC 3168 6.1.3, receiver, for a data segment taken: a CWR ends the
 * ECN-Echo, then a CE mark starts it (ECE on every segment until the
 * peer's CWR) and it and the next are acknowledged at once, as Linux's
 * tcp_ecn_accept_cwr() and tcp_ecn_check_ce().
 */
static void ecn_rx(struct sl_stack *s, struct sl_tcp_sock *tp, const struct seg *g)
{
	if (!(tp->ecn & SL_ECN_OK))
		return;
	if (g->ecn & TH_CWR_) {
		/* The sender has just cut cwnd, maybe to one segment: ACK now. */
		tp->ecn &= (uint8_t)~SL_ECN_DEMAND_CWR;
		tp->tflags |= SL_TF_ACKNOW;
	}
	if (g->ipecn == SL_IP_ECN_CE) {
		sl_count(s, SL_C_tcp_ecn_ce_rx);
		/* The sender's cwnd may be small: this segment and the next
		 * are ACKed at once (Linux's quick-ACK mode for 2). */
		if (!(tp->ecn & SL_ECN_DEMAND_CWR) && tp->quickacks < 2)
			tp->quickacks = 2;
		tp->ecn |= SL_ECN_DEMAND_CWR;
		tp->tflags |= SL_TF_ACKNOW;
	}
}

/*
 * RFC 3168 6.1.2, sender, as Linux's CWR state: an ECN-Echo outside a
 * recovery or another reduction sets ssthresh as a loss would (and CWR
 * on the next new data, sl_tcp_cc_cwr()); cwnd then comes down to it
 * over the window by PRR (below); once an ACK passes what had been sent
 * when it began, cwnd = ssthresh. Called before the ACK moves SND.UNA.
 */
static void ecn_echo(struct sl_stack *s, struct sl_tcp_sock *tp, const struct seg *g)
{
	/* Linux holds CWR until something above high_seq is acked, so that
	 * the CWR reached the peer. */
	if ((tp->ecn & SL_ECN_CWR_WND) && SEQ_GT(g->ack, tp->ecn_high)) {
		tp->ecn &= (uint8_t)~SL_ECN_CWR_WND;
		tp->cwnd = tp->ssthresh;
	}
	if (!(tp->ecn & SL_ECN_OK) || !(g->ecn & TH_ECE_) || (g->oflags & TH_SYN_) ||
	    (tp->ecn & SL_ECN_CWR_WND) || (tp->tflags & SL_TF_RECOVERY))
		return;
	sl_count(s, SL_C_tcp_ecn_reduce);
	/* Congestion proven: nothing to undo (Linux's tcp_enter_cwr()). */
	tp->undo &= (uint8_t)~SL_UNDO_MARK;
	tp->prior_ssthresh = 0;
	sl_tcp_cc_cwr(tp);
	tp->ecn |= SL_ECN_CWR_WND;
	tp->ecn_high = tp->snd_nxt;
	tp->recover_fs = tp->cwnd;	/* PRR's divisor: the cwnd before */
	tp->prr_delivered = tp->prr_out = 0;
}

/*
 * RFC 6937 PRR for an ECN reduction, on each ACK of it, as Linux's
 * tcp_cwnd_reduction(): while the flight is above ssthresh, send
 * ssthresh/cwnd-before of what was delivered; below, slow start back up
 * to it (PRR-SSRB, one segment more when SND.UNA moved). Whole
 * segments, as Linux counts packets; the first ACK lets one out.
 */
static void ecn_prr(struct sl_tcp_sock *tp, uint32_t delivered, bool una_moved)
{
	uint32_t flight = sl_tcp_flight(tp), mss = tp->mss ? tp->mss : SL_TCP_MSS_DEFAULT;
	uint32_t pipe = flight - (tp->sacked_bytes < flight ? tp->sacked_bytes : flight);
	int64_t delta = (int64_t)tp->ssthresh - pipe, sndcnt;

	if (!delivered)
		return;
	tp->prr_delivered += delivered;
	if (delta < 0) {
		uint64_t prior = tp->recover_fs ? tp->recover_fs : 1;
		uint64_t due = ((uint64_t)tp->ssthresh * tp->prr_delivered + prior - 1) / prior;

		sndcnt = (int64_t)((due + mss - 1) / mss * mss) - tp->prr_out;
	} else {
		sndcnt = (int64_t)tp->prr_delivered - tp->prr_out;
		if (sndcnt < (int64_t)delivered)
			sndcnt = delivered;
		if (una_moved)
			sndcnt += mss;
		if (sndcnt > delta)
			sndcnt = delta;
	}
	if (sndcnt < (tp->prr_out ? 0 : (int64_t)mss))
		sndcnt = tp->prr_out ? 0 : mss;
	tp->cwnd = pipe + (uint32_t)sndcnt;
}

/* A recovery ended: a window widened by DSACKs is kept for
 * SL_RACK_PERSIST recoveries, then back to min_RTT/4 (Linux's
 * tcp_rack_update_reo_wnd()); a DSACK seen widens it by a step. */
static void rack_recovery_end(struct sl_tcp_sock *tp)
{
	if (tp->reo_persist)
		tp->reo_persist--;
	else
		tp->reo_steps = 1;
}

/* On each ACK: a DSACK that came with it widens the reordering window by
 * min_RTT/4 (RFC 8985 6.2 step 4; Linux widens at most once a round
 * trip). */
static void rack_dsack(struct sl_tcp_sock *tp)
{
	if (!(tp->rack & SL_RACK_DSACK))
		return;
	tp->rack &= (uint8_t)~SL_RACK_DSACK;
	if (tp->reo_steps < 255)
		tp->reo_steps = (uint8_t)(tp->reo_steps ? tp->reo_steps + 1 : 2);
	tp->reo_persist = SL_RACK_PERSIST;
}

/*
 * RFC 8985 7.4, as Linux's tcp_process_tlp_ack(): was the probe's episode
 * a loss? A probe of new data, one the peer reports twice (DSACK) or a
 * pure duplicate ACK at its end: no. An ACK past the end of a probe that
 * was a retransmission, with no DSACK: it repaired a loss, and cwnd comes
 * down as for one (Linux: CWR, ended at once: cwnd = ssthresh).
 */
static void tlp_ack(struct sl_stack *s, struct sl_tcp_sock *tp, uint32_t ack, bool una_moved,
		    bool sacked, bool dsack_tlp, uint64_t now_us)
{
	if (!(tp->tflags & SL_TF_TLP) || SEQ_LT(ack, tp->tlp_high))
		return;
	if (!(tp->tflags & SL_TF_TLP_RETX) || dsack_tlp) {
		tp->tflags &= ~(SL_TF_TLP | SL_TF_TLP_RETX);
	} else if (SEQ_GT(ack, tp->tlp_high)) {
		tp->tflags &= ~(SL_TF_TLP | SL_TF_TLP_RETX);
		sl_count(s, SL_C_tcp_tlp_recovery);
		tp->ecn &= (uint8_t)~SL_ECN_CWR_WND;
		sl_tcp_cc_loss(tp, now_us);
	} else if (!una_moved && !sacked) {
		tp->tflags &= ~(SL_TF_TLP | SL_TF_TLP_RETX);
	}
}

/* As Linux's tcp_packet_delayed(): the ACK echoes a TSval older than the
 * first retransmission (RFC 3522: the original arrived), or nothing was
 * sent again yet (not so without SACK once SND.UNA reached recover). */
static bool packet_delayed(const struct sl_tcp_sock *tp, const struct seg *g)
{
	if (tp->undo & SL_UNDO_STAMP)
		return (tp->tflags & SL_TF_TS) && g->o.ts && g->o.tsecr &&
		       SEQ_LT(g->o.tsecr, tp->retrans_ts);
	return (tp->tflags & SL_TF_SACK) || SEQ_LT(tp->snd_una, tp->recover);
}

/* Linux's tcp_may_undo(): an episode to judge, and every retransmission
 * of it reported needless by DSACK, or the timestamps show a delay. */
static bool may_undo(const struct sl_tcp_sock *tp, const struct seg *g)
{
	return (tp->undo & SL_UNDO_MARK) && (!tp->undo_retrans || packet_delayed(tp, g));
}

/* The reduction was needless (Linux's tcp_undo_cwnd_reduction()): cwnd
 * and ssthresh back, counted under c; unmark: what was taken for lost is
 * not (it is in flight). */
static void undo_reduction(struct sl_stack *s, struct sl_sock *so, bool unmark, enum sl_counter c)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t steps = 0;

	if (unmark)
		for (uint32_t i = tp->sndq_head; sl_buf_next(s, i, &steps); i = sl_buf(s, i)->next_idx)
			sl_buf(s, i)->flags &= (uint16_t)~SL_TBF_LOST;
	sl_tcp_cc_undo(tp);
	tp->undo &= (uint8_t)~SL_UNDO_MARK;
	tp->rack |= SL_RACK_ADVANCED;	/* look at the losses again */
	sl_count(s, c);
}

/* A recovery left by an undo before its end (Linux's tcp_try_keep_open()):
 * with SACK, a new loss may start one at once (RFC 6582's guard is for
 * duplicate ACKs without SACK). */
static void recovery_leave(struct sl_tcp_sock *tp)
{
	tp->tflags &= ~SL_TF_RECOVERY;
	tp->dupacks = 0;
	rack_recovery_end(tp);
	if (tp->tflags & SL_TF_SACK)
		tp->recover = tp->snd_una - 1;
}

/* At a recovery's end (Linux's tcp_try_undo_recovery()): undone if it
 * was needless (TCPFullUndo); else cwnd = ssthresh is the caller's. */
static bool undo_recovery(struct sl_stack *s, struct sl_sock *so, const struct seg *g)
{
	if (!may_undo(&so->tcp, g))
		return false;
	undo_reduction(s, so, false, SL_C_tcp_full_undo);
	return true;
}

/*
 * A partial ACK in a recovery (Linux's tcp_try_undo_partial()): the hole
 * was filled by a segment sent before the first retransmission
 * (timestamps: a delay, not a loss); with no retransmission still out,
 * undo and leave the recovery (TCPPartialUndo). Linux also holds back
 * further retransmissions while some are out; here they go on.
 */
static bool undo_partial(struct sl_stack *s, struct sl_sock *so, const struct seg *g)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (!(tp->undo & SL_UNDO_MARK) || !packet_delayed(tp, g) || retrans_out(s, tp))
		return false;
	if (!sl_buf_some(s, tp->sndq_head) || !(sl_buf(s, tp->sndq_head)->flags & SL_TBF_REXMIT))
		tp->undo &= (uint8_t)~SL_UNDO_STAMP;
	undo_reduction(s, so, true, SL_C_tcp_partial_undo);
	recovery_leave(tp);
	return true;
}

/* DSACKs reported every retransmission of the episode needless (Linux's
 * tcp_try_undo_dsack(), in a recovery or after it; TCPDSACKUndo). */
static bool undo_dsack(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (!(tp->undo & SL_UNDO_MARK) || tp->undo_retrans || (tp->undo & SL_UNDO_LOSS))
		return false;
	if (tp->reo_persist < SL_RACK_PERSIST)
		tp->reo_persist++;
	undo_reduction(s, so, false, SL_C_tcp_dsack_undo);
	if (tp->tflags & SL_TF_RECOVERY)
		recovery_leave(tp);
	return true;
}

/* An RTO's reduction undone (Linux's tcp_try_undo_loss(); TCPLossUndo,
 * and TCPSpuriousRTOs when F-RTO found it): the segments the go-back
 * would send again are in flight after all, SND.NXT returns to SND.MAX. */
static void undo_loss(struct sl_stack *s, struct sl_sock *so, bool frto)
{
	struct sl_tcp_sock *tp = &so->tcp;

	undo_reduction(s, so, true, SL_C_tcp_loss_undo);
	if (frto)
		sl_count(s, SL_C_tcp_spurious_rto);
	tp->undo &= (uint8_t)~(SL_UNDO_LOSS | SL_UNDO_FRTO | SL_UNDO_FRTO_NEW);
	tp->snd_nxt = tp->snd_max;
	tp->sndq_hint = SLUICE_IDX_NONE;
	tp->backoff = 0;
}

/* F-RTO is over, the loss was real (RFC 5682 3.1 step 3a): the go-back
 * resumes from SND.UNA. */
static void frto_off(struct sl_tcp_sock *tp)
{
	if (tp->undo & SL_UNDO_FRTO_NEW) {
		tp->snd_nxt = tp->snd_una;
		tp->sndq_hint = SLUICE_IDX_NONE;
	}
	tp->undo &= (uint8_t)~(SL_UNDO_FRTO | SL_UNDO_FRTO_NEW);
}

/*
 * An ACK after an RTO, until SND.UNA passes what had been sent (Linux's
 * tcp_process_loss(), F-RTO as tcp_frto=2: RFC 5682 3.1 with SACK):
 * - SND.UNA moved and timestamps or DSACKs show the data arrived: undo;
 * - F-RTO: data never sent again below recover delivered (3b): the
 *   timeout was spurious, undo; new data sent and a duplicate ACK or a
 *   SACK of it (3a), or no verdict: the loss was real, go back;
 * - the first ACK that moves SND.UNA: new data goes instead of the next
 *   retransmissions (2b; returns true, loss_frto_send() after cwnd has
 *   grown), or, with none to send, F-RTO ends;
 * - SND.UNA at recover: the state ends (undone if needless).
 */
static bool loss_ack(struct sl_stack *s, struct sl_sock *so, const struct seg *g, bool una_moved,
		     bool dupish)
{
	struct sl_tcp_sock *tp = &so->tcp;
	bool recovered = SEQ_GEQ(tp->snd_una, tp->recover);

	if (!(tp->undo & SL_UNDO_LOSS))
		return false;
	if (una_moved && may_undo(tp, g)) {
		undo_loss(s, so, false);
		return false;
	}
	if (tp->undo & SL_UNDO_FRTO) {
		if (tp->undo & SL_UNDO_ORIG) {
			undo_loss(s, so, true);
			return false;
		}
		if (tp->undo & SL_UNDO_FRTO_NEW) {
			if (dupish || una_moved)
				frto_off(tp);
		} else if (una_moved && !recovered) {
			tp->recover = tp->snd_max;
			if (SEQ_LT(tp->snd_max, tp->snd_end) &&
			    SEQ_LT(tp->snd_max, tp->snd_una + tp->snd_wnd))
				return true;
			frto_off(tp);
		}
	}
	if (recovered) {
		if (may_undo(tp, g))
			undo_reduction(s, so, false, SL_C_tcp_loss_undo);
		tp->undo &= (uint8_t)~(SL_UNDO_LOSS | SL_UNDO_FRTO | SL_UNDO_FRTO_NEW);
	}
	return false;
}

/* F-RTO step 2b: new data, as much as cwnd lets go with the segments the
 * RTO took for lost left out (Linux's pipe); the old ones wait, taken as
 * in flight, for the next ACK's verdict. Nothing could go: F-RTO ends. */
static void loss_frto_send(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t nxt = tp->snd_nxt, cwnd = tp->cwnd, max0 = tp->snd_max;

	tp->snd_nxt = tp->snd_max;
	tp->sndq_hint = SLUICE_IDX_NONE;
	tp->cwnd = tp->snd_max - tp->snd_una + cwnd;
	sl_tcp_output(s, so, now_us);
	tp->cwnd = cwnd;
	if (SEQ_GT(tp->snd_max, max0)) {
		tp->undo |= SL_UNDO_FRTO_NEW;
	} else {
		tp->snd_nxt = nxt;
		tp->sndq_hint = SLUICE_IDX_NONE;
		tp->undo &= (uint8_t)~SL_UNDO_FRTO;
	}
}

/* An RTO fired (Linux's tcp_enter_loss(), called by tcp_timer.c before
 * it reduces cwnd and goes back): the first of a series, or one after
 * the last episode's data was all acknowledged, keeps what an undo would
 * restore and starts an episode; F-RTO judges it unless it came during a
 * fast recovery (a repeated timeout may: RFC 5682 3.2). One during an
 * ECN reduction (Linux's CWR state) keeps the ssthresh the ECN-Echo set
 * until SND.UNA reaches the point the reduction began at, as one during
 * a recovery does: RFC 5681 3.1 eq. 4, once a window. */
bool sl_tcp_undo_rto(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	bool fresh = !(tp->tflags & SL_TF_RECOVERY) && !(tp->undo & SL_UNDO_LOSS);
	bool cwr = fresh && (tp->ecn & SL_ECN_CWR_WND);
	/* Linux's tcp_enter_loss(): outside Recovery, CWR and Loss, SND.UNA
	 * past the recovery point (high_seq), or the first RTO of a Loss. */
	bool reduce = (fresh && !cwr) || !SEQ_LT(tp->snd_una, cwr ? tp->ecn_high : tp->recover) ||
		      ((tp->undo & SL_UNDO_LOSS) && !tp->backoff);

	(void)s;
	if (reduce) {
		sl_tcp_cc_save(tp, (tp->tflags & SL_TF_RECOVERY) || (tp->ecn & SL_ECN_CWR_WND), false);
		/* Nothing sent again still out: a new first retransmission. */
		if (!(tp->tflags & SL_TF_RECOVERY) && sl_buf_some(s, tp->sndq_head) &&
		    !(sl_buf(s, tp->sndq_head)->flags & SL_TBF_REXMIT))
			tp->undo &= (uint8_t)~SL_UNDO_STAMP;
		undo_init(tp, 0);
	}
	tp->undo &= (uint8_t)~(SL_UNDO_FRTO | SL_UNDO_FRTO_NEW);
	if (fresh || tp->backoff)
		tp->undo |= SL_UNDO_FRTO;
	tp->undo |= SL_UNDO_LOSS;
	return reduce;
}

/* The highest SACKed sequence after an ACK's blocks (mark_sacked()). */
static void sack_high_set(struct sl_tcp_sock *tp, uint32_t high)
{
	if (!(tp->tflags & SL_TF_SACK) || SEQ_LEQ(high, tp->snd_una))
		return;
	tp->sack_high = high;
	tp->rack |= SL_RACK_HIGH;
}

/*
 * The RTT sample an ACK gives, as Linux's tcp_clean_rtx_queue() and
 * tcp_ack_update_rtt() take it (every ACK, not one timed segment a round
 * as before): from the oldest segment it acknowledged cumulatively, none
 * if it acknowledged one sent again (Karn); else from the oldest it newly
 * SACKed; else, when it acknowledged new data and timestamps are on, from
 * the echoed TSval (a millisecond at least).  min_RTT and HyStart take the
 * newest segment's.
 */
static void ack_rtt(struct sl_tcp_sock *tp, const struct seg *g, const struct ack_stamps *st,
		    bool acked, uint64_t now_us)
{
	int64_t r = -1, ca = -1;

	if (st->first && !st->rexmit && now_us >= st->last) {
		r = (int64_t)(now_us - st->first);
		ca = (int64_t)(now_us - st->last);
	}
	if (st->sfirst && now_us >= st->slast) {
		if (r < 0)
			r = (int64_t)(now_us - st->sfirst);
		ca = (int64_t)(now_us - st->slast);
	}
	if (r < 0 && acked && (tp->tflags & SL_TF_TS) && g->o.ts && g->o.tsecr) {
		uint32_t d = (uint32_t)(now_us / 1000) + tp->ts_offset - g->o.tsecr;

		if (d < INT32_MAX / 1000)
			r = ca = (int64_t)(d ? d : 1) * 1000;
	}
	if (r < 0 || r > UINT32_MAX)
		return;
	sl_tcp_rtt_sample(tp, (uint32_t)r, ca > UINT32_MAX ? UINT32_MAX : (uint32_t)ca);
}

/*
 * Send-buffer growth, as Linux's tcp_sndbuf_expand() from tcp_new_space():
 * after an ACK, a socket whose buffer the user did not fix and whose
 * flight is short of cwnd (so the buffer, not cwnd, may be what holds it
 * back) gets room for twice cwnd (at least the initial window), up to
 * net.ipv4.tcp_wmem's max; it never shrinks.  Linux sizes it in truesize
 * (about three times a segment's payload without GSO), this buffer counts
 * payload, so twice cwnd is what Linux's factor 2 asks for: a recovery's
 * old flight and new data both fit.  Without it the 256 KiB default held
 * a 10 ms path at ~100 Mbit/s whatever the loss (tests/bench/lossy_host.sh).
 */
static void sndbuf_expand(struct sl_stack *s, struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t max = s->tcp_wmem_max ? s->tcp_wmem_max : SL_TCP_WMEM_MAX;
	uint64_t want = 2 * (uint64_t)(tp->cwnd > SL_TCP_IW_SEGS * tp->mss ?
				       tp->cwnd : SL_TCP_IW_SEGS * tp->mss);

	if ((tp->tflags & SL_TF_SNDBUF_SET) || so->sndbuf >= max ||
	    tp->snd_max - tp->snd_una >= tp->cwnd)
		return;
	if (want > max)
		want = max;
	if (want > so->sndbuf) {
		so->sndbuf = (uint32_t)want;
		sl_count(s, SL_C_tcp_sndbuf_grown);
	}
}

/* RFC 9293 3.10.7.4 fifth, ESTABLISHED: process an acceptable ACK.
 * Returns false if the segment is to be dropped. */
static bool ack_process(struct sl_stack *s, struct sl_sock *so, const struct seg *g,
			uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	/* RFC 7323 2.2: the window of a segment with SYN is never scaled. */
	uint32_t ack = g->ack, acked;
	uint32_t wnd = (g->oflags & TH_SYN_) ? g->wnd : g->wnd << sl_tcp_ws(s, tp->snd_wscale);
	uint32_t newly_sacked = 0, sacked_pre = tp->sacked_bytes, newly_lost, lost;
	uint32_t high = tp->sack_high, snd_una0 = tp->snd_una;
	bool dsack_tlp = false, frto_new = false;
	bool dup, sack = tp->tflags & SL_TF_SACK;
	struct ack_stamps st = { 0 };

	/* RFC 5961 5.2: acceptable if SND.UNA - MAX.SND.WND <= SEG.ACK <= SND.NXT. */
	if (SEQ_GT(ack, tp->snd_max) || SEQ_LT(ack, tp->snd_una - tp->max_sndwnd)) {
		sl_tcp_challenge_ack(s, so, now_us);
		return false;
	}
	tp->undo &= (uint8_t)~(SL_UNDO_ORIG | SL_UNDO_ECE);
	if (tp->tflags & SL_TF_SACK) {
		newly_sacked = mark_sacked(s, so, &g->o, ack, &high, &st, now_us);
		/* A DSACK at or below the probe's end: the probe arrived
		 * with what it sent again (Linux's FLAG_DSACK_TLP). */
		dsack_tlp = (tp->rack & SL_RACK_DSACK) && (tp->tflags & SL_TF_TLP) &&
			    SEQ_LEQ(g->o.sack[0][1], tp->tlp_high);
		rack_dsack(tp);
	}
	if (tp->tflags & SL_TF_PROBE)
		tp->keep_probes = 0;	/* the peer answers our window probes */
	/* An ECN-Echo proves congestion: no cwnd undo (Linux's FLAG_ECE). */
	if ((tp->ecn & SL_ECN_OK) && (g->ecn & TH_ECE_) && !(g->oflags & TH_SYN_)) {
		tp->undo |= SL_UNDO_ECE;
		tp->prior_ssthresh = 0;
	}
	ecn_echo(s, tp, g);

	/* RFC 5681 2: a duplicate ACK leaves the window as it was; RFC 6675
	 * 2: one that SACKs new data is one whatever its window (a receiver
	 * reading meanwhile moves it). */
	dup = ack == tp->snd_una && g->plen == 0 && !(g->flags & (TH_SYN_ | TH_FIN_)) &&
	      tp->snd_una != tp->snd_max && SEQ_LEQ(tp->snd_wl1, g->seq) &&
	      (wnd == tp->snd_wnd || newly_sacked);

	/* Window update (RFC 9293 3.10.7.4: SND.WL1/WL2), not from old ACKs. */
	if (SEQ_GEQ(ack, tp->snd_una) &&
	    (SEQ_LT(tp->snd_wl1, g->seq) ||
	     (tp->snd_wl1 == g->seq && SEQ_LEQ(tp->snd_wl2, ack)))) {
		/* Persist ends when the window opens enough to send into:
		 * then tcp_output.c clears the probes' backoff as it sends
		 * (Linux tcp_ack_probe).  A window that opens by less than the
		 * sender may use (RFC 9293 3.8.6.2.1 SWS avoidance: a receiver
		 * that never reads keeps the edge it advertised) leaves the
		 * backoff running, or probes would go every 2 RTO forever. */
		tp->snd_wnd = wnd;
		tp->snd_wl1 = g->seq;
		tp->snd_wl2 = ack;
		if (wnd > tp->max_sndwnd)
			tp->max_sndwnd = wnd;
	}

	/* Newly SACKed only; not from an old ACK (Linux's tcp_ack() takes
	 * its SACK blocks but no sample). */
	if (ack == tp->snd_una)
		ack_rtt(tp, g, &st, false, now_us);
	if (SEQ_GT(ack, tp->snd_una)) {
		/* RFC 7661 flavour (Linux tcp_is_cwnd_limited): grow cwnd only
		 * while it is what limits the sender. */
		bool cwnd_limited = 2 * (tp->snd_max - tp->snd_una) >= tp->cwnd;
		uint32_t delivered;

		acked = ack - tp->snd_una;
		tp->snd_una = ack;
		if (SEQ_LT(tp->snd_nxt, ack))
			tp->snd_nxt = ack;
		/* Urgent mode ends once the urgent data is acknowledged
		 * (Linux's tcp_clean_rtx_queue(): snd_up = snd_una). */
		if ((tp->tflags & SL_TF_URG) && SEQ_GEQ(ack, tp->snd_up))
			tp->tflags &= ~SL_TF_URG;
		drop_acked(s, so, &st, now_us);
		ack_rtt(tp, g, &st, true, now_us);
		sack_high_set(tp, high);
		tp->backoff = 0;
		tp->keep_probes = 0;
		/* What this ACK delivered, for cwnd to grow by (as Linux counts
		 * delivered segments): data SACKed before was delivered then;
		 * without SACK each duplicate ACK stood for a segment that
		 * arrived (Linux's tcp_add_reno_sack()), at least one segment
		 * of what is newly acknowledged is new. */
		if (sack)
			delivered = acked + tp->sacked_bytes - sacked_pre;
		else if (acked > (uint32_t)tp->dupacks * tp->mss + tp->mss)
			delivered = acked - (uint32_t)tp->dupacks * tp->mss;
		else
			delivered = acked < tp->mss ? acked : tp->mss;
		rack_mark(s, tp, now_us, &newly_lost, &lost);
		/* Nothing sent again is out, outside a recovery or an RTO:
		 * the next first retransmission is stamped anew. */
		if (!(tp->tflags & SL_TF_RECOVERY) && !(tp->undo & SL_UNDO_LOSS) &&
		    (!sl_buf_some(s, tp->sndq_head) ||
		     !(sl_buf(s, tp->sndq_head)->flags & SL_TBF_REXMIT)))
			tp->undo &= (uint8_t)~SL_UNDO_STAMP;

		if (tp->tflags & SL_TF_RECOVERY) {
			if (SEQ_GEQ(ack, tp->recover)) {
				/* RFC 6582 3.2 step 3, its second choice, as
				 * Linux (tcp_end_cwnd_reduction()) and RFC 6937
				 * end a recovery: cwnd = ssthresh.  The first,
				 * min(ssthresh, FlightSize + SMSS), left one
				 * segment when the full ACK emptied the pipe
				 * (the usual case), and a receiver delaying its
				 * ACK of that one segment stalled the sender.
				 * Unless it was needless: then cwnd is put back. */
				if (!undo_recovery(s, so, g))
					tp->cwnd = tp->ssthresh;
				tp->tflags &= ~SL_TF_RECOVERY;
				tp->dupacks = 0;
				rack_recovery_end(tp);
			} else if (undo_partial(s, so, g) || (sack && undo_dsack(s, so))) {
				/* Needless: out of the recovery, cwnd back. */
			} else if (sack) {
				prr_ack(s, so, delivered, true, newly_lost, now_us);
			} else {
				/* Partial ACK: retransmit the next hole, deflate. */
				retransmit_hole(s, so, now_us, true);
				tp->cwnd = tp->cwnd > acked ? tp->cwnd - acked : tp->mss;
				if (acked >= tp->mss)
					tp->cwnd += tp->mss;
			}
		} else {
			tp->dupacks = 0;
			bool recov;

			if (tp->undo & SL_UNDO_LOSS)
				frto_new = loss_ack(s, so, g, true, false);
			else
				undo_dsack(s, so);
			/* RACK took a segment for lost (Linux's
			 * tcp_time_to_recover(): the loss is proven).  Then
			 * cwnd does not grow first: ssthresh comes from the
			 * cwnd before this ACK, as Linux's tcp_fastretrans_alert()
			 * runs before tcp_cong_control(). */
			recov = sack && lost && SEQ_GT(ack, tp->recover);
			if (tp->ecn & SL_ECN_CWR_WND)
				ecn_prr(tp, delivered, true);
			else if (cwnd_limited && !recov)
				sl_tcp_cc_ack(tp, delivered, now_us);
			if (frto_new)
				loss_frto_send(s, so, now_us);
			if (recov)
				enter_recovery(s, so, delivered, newly_lost, now_us);
		}
		sl_tcp_rearm_rexmt(so, now_us);
		tlp_ack(s, tp, ack, true, newly_sacked != 0, dsack_tlp, now_us);
		if (!tp->t_reo)
			sl_tcp_tlp_arm(so, now_us);
		sndbuf_expand(s, so);
		sl_sock_wake(s, so);
		sl_sock_async_space(s, so);
	} else if (dup) {
		tp->dupacks++;
		rack_mark(s, tp, now_us, &newly_lost, &lost);
		if (tp->undo & SL_UNDO_LOSS)
			loss_ack(s, so, g, false, true);
		if (undo_dsack(s, so)) {
			/* DSACKs: every retransmission needless; cwnd back. */
		} else if ((tp->tflags & SL_TF_RECOVERY) && sack) {
			prr_ack(s, so, newly_sacked, false, newly_lost, now_us);
		} else if (tp->tflags & SL_TF_RECOVERY) {
			/* RFC 6582 3.2 step 4: inflate; RFC 6675: fill holes. */
			tp->cwnd += tp->mss;
			retransmit_hole(s, so, now_us, false);
		} else if ((sack ? lost != 0 : tp->dupacks == SL_TCP_DUPACK_THRESH) &&
			   SEQ_GT(ack, tp->recover)) {
			/* RFC 6582 3.2 step 2: fast retransmit, or with SACK
			 * RFC 6675 5 (4): DupThresh duplicates, or IsLost() of
			 * the first unacknowledged segment.  Tested as
			 * FreeBSD's SEG.ACK > snd_recover: recover starts at ISS
			 * (step 1), so a lost first segment (duplicate ACKs of
			 * ISS + 1) qualifies, which "ACK - 1 > recover" missed. */
			enter_recovery(s, so, newly_sacked, newly_lost, now_us);
		} else if (tp->ecn & SL_ECN_CWR_WND) {
			ecn_prr(tp, newly_sacked, false);
		}
		if (tp->t_reo)
			tp->t_tlp = 0;
	} else if (ack == tp->snd_una) {
		tp->dupacks = 0;
		rack_mark(s, tp, now_us, &newly_lost, &lost);
		if ((tp->undo & SL_UNDO_LOSS) && newly_sacked)
			loss_ack(s, so, g, false, true);
		undo_dsack(s, so);
		if (sack && lost && !(tp->tflags & SL_TF_RECOVERY) && SEQ_GT(ack, tp->recover))
			enter_recovery(s, so, newly_sacked, newly_lost, now_us);
	} else if (newly_sacked && sack) {
		/* An ACK below SND.UNA (reordered on the way) still brings
		 * SACK information: what it delivered lets PRR send, as
		 * Linux's tcp_ack() takes an old ACK's SACK blocks. */
		rack_mark(s, tp, now_us, &newly_lost, &lost);
		if (undo_dsack(s, so)) {
			/* DSACKs: every retransmission needless; cwnd back. */
		} else if (tp->tflags & SL_TF_RECOVERY) {
			prr_ack(s, so, newly_sacked, false, newly_lost, now_us);
		} else if (lost && SEQ_GT(tp->snd_una, tp->recover)) {
			enter_recovery(s, so, newly_sacked, newly_lost, now_us);
		}
	}
	if (tp->snd_una == snd_una0)
		tlp_ack(s, tp, ack, false, newly_sacked != 0, dsack_tlp, now_us);
	sack_high_set(tp, high);
	tp->undo &= (uint8_t)~(SL_UNDO_ORIG | SL_UNDO_ECE);
	return true;
}

/* ---- states ---------------------------------------------------------- */

static void enter_time_wait(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	sl_tcp_set_state(s, so, SL_TCP_TIME_WAIT);
	sl_buf_free_chain(s, tp->sndq_head);
	tp->sndq_head = tp->sndq_tail = tp->sndq_hint = SLUICE_IDX_NONE;
	tp->sndq_bytes = 0;
	tp->sacked_bytes = 0;
	/* A dead process's borrowed buffers would wait out TIME-WAIT. */
	sl_tcp_lent_reap(s, so);
	tp->t_rexmt = tp->t_persist = tp->t_keep = 0;
	tp->t_close = now_us + SL_TCP_TIME_WAIT_US;
}

/* Negotiated options of a SYN or SYN-ACK (RFC 7323, RFC 2018). */
static void take_syn_opts(struct sl_stack *s, struct sl_sock *so, const struct seg *g,
			  uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	tp->peer_mss = g->o.mss ? g->o.mss : SL_TCP_MSS_DEFAULT;
	if (g->o.ws >= 0 && (tp->tflags & SL_TF_WS)) {
		tp->snd_wscale = (uint8_t)g->o.ws;
	} else {
		tp->tflags &= ~SL_TF_WS;
		tp->snd_wscale = tp->rcv_wscale = 0;
	}
	if (g->o.ts && (tp->tflags & SL_TF_TS)) {
		tp->ts_recent = g->o.tsval;
		tp->ts_recent_s = (uint32_t)(now_us / 1000000);
	} else
		tp->tflags &= ~SL_TF_TS;
	if (!g->o.sack_ok)
		tp->tflags &= ~SL_TF_SACK;
	/* RFC 3168 6.1.1: ECN is agreed by a SYN with ECE and CWR (not
	 * itself ECT: Linux refuses one that is, as a middlebox's doing)
	 * answered by a SYN-ACK with ECE alone. Passive: with tcp_ecn 1 or
	 * 2; active: only what connect() offered. */
	if (so->state == SL_TCP_SYN_SENT) {
		/* A SYN-ACK agrees with ECE alone; a SYN crossing ours
		 * (simultaneous open) with ECE and CWR, as Linux's
		 * tcp_ecn_rcv_syn(). */
		uint8_t want = (g->oflags & TH_ACK_) ? TH_ECE_ : TH_ECE_ | TH_CWR_;

		if ((g->ecn & (TH_ECE_ | TH_CWR_)) != want)
			tp->ecn = 0;
	} else if (sl_tcp_ecn_mode(s) && (g->ecn & (TH_ECE_ | TH_CWR_)) == (TH_ECE_ | TH_CWR_) &&
		   !g->ipecn) {
		tp->ecn = SL_ECN_OK;
	}
	sl_tcp_set_mss(s, so);
	sl_tcp_cc_init(tp);
}

static void established(struct sl_stack *s, struct sl_sock *so, const struct seg *g)
{
	struct sl_tcp_sock *tp = &so->tcp;

	/* RFC 6298 5.7: a retransmitted SYN leaves no sample; start at 3 s. */
	if (tp->backoff && !tp->srtt_us)
		tp->rto_us = 3000000;

	/* RFC 7323 2.2: the window of a SYN-ACK (also one that completes a
	 * simultaneous open) is never scaled; the third ACK's is. */
	tp->snd_wnd = (g->oflags & TH_SYN_) ? g->wnd : g->wnd << sl_tcp_ws(s, tp->snd_wscale);
	tp->max_sndwnd = tp->snd_wnd;
	tp->snd_wl1 = g->seq;
	tp->snd_wl2 = g->ack;
	tp->backoff = 0;
	tp->t_rexmt = 0;
	sl_tcp_set_state(s, so, SL_TCP_ESTABLISHED);
	/* Linux tcp_finish_connect(): sk_wake_async(POLL_OUT). */
	sl_sock_async(s, so, SL_POLL_OUT);
}

/* The stack holds as many embryonic connections as it may: a count in
 * the region (SL_TF_EMBRYO marks who is in it), so a SYN costs O(1). */
static bool embryos_full(const struct sl_stack *s)
{
	return s->lib->tcp_embryos >= sl_tcp_synq_cap(s);
}

/* A socket for a connection to listener lso, hashed, its TCB fresh. */
static struct sl_sock *child_new(struct sl_stack *s, struct sl_sock *lso, const struct sl_ip *ip,
				 const struct sl_tcph *th, uint64_t now_us)
{
	struct sl_tcp_sock *ltp = &lso->tcp, *tp;
	struct sl_sock *c = sl_sock_alloc(s, SL_SOCK_TCP);

	if (!c) {
		sl_count(s, SL_C_tcp_syn_dropped);
		return NULL;
	}
	c->laddr = ip->daddr;
	c->lport = th->dport;
	c->raddr = ip->saddr;
	c->rport = th->sport;
	/* As Linux: options are inherited (SO_REUSEADDR too, so a server can
	 * bind its port again while its children close), O_NONBLOCK is not. */
	c->flags |= SL_SF_BOUND |
		    (lso->flags & (SL_SF_NODELAY | SL_SF_KEEPALIVE | SL_SF_REUSEADDR | SL_SF_V6));
	c->rcvbuf = lso->rcvbuf;
	c->sndbuf = lso->sndbuf;
	c->ip_ttl = lso->ip_ttl;
	c->ip_tos = lso->ip_tos;
	c->opt_flags = lso->opt_flags;
	c->rcvlowat = lso->rcvlowat;
	c->pmtudisc = lso->pmtudisc;
	c->ip6_tclass = lso->ip6_tclass;	/* Linux copies ipv6_pinfo */
	c->ip6_hops = lso->ip6_hops;
	c->ip6_opt = lso->ip6_opt;
	c->parent_idx = lso->idx;
	sl_sock_cpu_note(c);		/* Linux's sk_clone_lock() */
	sl_sock_kid_link(s, lso, c);
	c->owner_pid = lso->owner_pid;
	SL_KILL_POINT("tcp_child");
	tp = &c->tcp;
	tp->user_mss = ltp->user_mss;
	tp->keep_idle_s = ltp->keep_idle_s;
	tp->keep_intvl_s = ltp->keep_intvl_s;
	tp->keep_cnt = ltp->keep_cnt;
	tp->user_timeout_ms = ltp->user_timeout_ms;
	tp->linger2_s = ltp->linger2_s;
	tp->window_clamp = ltp->window_clamp;
	tp->syn_retries = ltp->syn_retries;
	tp->defer_accept = ltp->defer_accept;
	tp->notsent_lowat = ltp->notsent_lowat;
	sl_sock_hash(s, c);
	sl_tcp_init_tcb(s, c, now_us);
	tp->tflags |= SL_TF_PASSIVE |
		      (ltp->tflags & (SL_TF_CORK | SL_TF_RENO | SL_TF_SNDBUF_SET));
	return c;
}

/*
 * Linux's tcp_initialize_rcv_mss(): until the peer's segments show their
 * size, the receiver takes it for the least of this end's MSS, the send
 * MSS, half the window offered and 536 (TCP_MSS_DEFAULT), at least 88
 * (TCP_MIN_MSS); set when data first comes (rcv_mss()).  Once a
 * connection: out of line.
 */
static uint32_t __attribute__((noinline)) rcv_mss_init(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t h, wnd;

	h = sl_tcp_our_mss(s, so);
	wnd = SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv - tp->rcv_nxt : 0;
	if (tp->mss && tp->mss < h)
		h = tp->mss;
	if (wnd / 2 < h)
		h = wnd / 2;
	if (h > SL_TCP_MSS_DEFAULT)
		h = SL_TCP_MSS_DEFAULT;
	if (h < SL_TCP_MSS_MIN)
		h = SL_TCP_MSS_MIN;
	tp->rcv_mss = (uint16_t)h;
	return h;
}

static uint32_t rcv_mss(struct sl_stack *s, struct sl_sock *so)
{
	return so->tcp.rcv_mss ? so->tcp.rcv_mss : rcv_mss_init(s, so);
}

/*
 * Linux's tcp_measure_rcv_mss(), for in-order data of len bytes (a
 * chain's: its first buffer's, as Linux takes a GSO packet's gso_size):
 * one of at least rcv_mss sets it (at most this end's MSS), and marks the
 * ACK pushed if it has PSH (the end of a write); a shorter one marks it
 * pushed (a second: pushed twice; cleared when an ACK goes), unless it
 * looks full-sized (536 bytes or more with its header, or 88 and no PSH)
 * and is the second of that size in a row, which sets rcv_mss.
 */
static void measure_rcv_mss(struct sl_stack *s, struct sl_sock *so, const struct seg *g,
			    unsigned int thl, uint32_t len)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t lss = tp->rcv_lss;

	tp->rcv_lss = 0;
	if (len >= rcv_mss(s, so)) {
		uint32_t our = sl_tcp_our_mss(s, so);

		tp->rcv_mss = (uint16_t)(len < our ? len : our);
		if (g->oflags & TH_PSH_)
			tp->tflags |= SL_TF_PUSHED;
		return;
	}
	len += thl;
	if (len >= SL_TCP_MSS_DEFAULT + 20 ||
	    (len >= SL_TCP_MSS_MIN + 20 && !(g->oflags & (TH_FIN_ | TH_URG_ | TH_SYN_ | TH_PSH_)))) {
		len -= 20 + ((tp->tflags & SL_TF_TS) ? 12 : 0);
		tp->rcv_lss = (uint16_t)len;
		if (len == lss) {
			tp->rcv_mss = (uint16_t)len;
			return;
		}
	}
	tp->tflags |= tp->tflags & SL_TF_PUSHED ? SL_TF_PUSHED2 : SL_TF_PUSHED;
}

/*
 * Linux's tcp_incr_quickack(): quick ACKs for the next segments, as many
 * as half the window holds segments of the peer's size (rcv_mss: 536
 * until larger ones came), at least 2 and at most SL_TCP_QUICKACKS
 * (TCP_MAX_QUICKACKS), so a sender held by Nagle, or in slow start, waits
 * for no delayed-ACK timer.
 */
static void quickack_incr(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t q = sl_tcp_rcv_window(s, so) / (2u * rcv_mss(s, so));

	if (q < 2)
		q = 2;
	if (q > SL_TCP_QUICKACKS)
		q = SL_TCP_QUICKACKS;
	if (q > tp->quickacks)
		tp->quickacks = (uint8_t)q;
}

/*
 * Linux's tcp_event_data_recv(): in-order data came at now_us.  The first
 * starts the ACK timeout at TCP_ATO_MIN and gives quick ACKs; then a gap
 * of at most half of it pulls it toward TCP_ATO_MIN, a gap shorter than
 * it halves it toward the gap (at most the RTO), and a gap longer than
 * the RTO (the sender was idle) gives quick ACKs again.
 */
static void ato_update(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t now = (uint32_t)(now_us / 1000), m = now - tp->lrcv_ms;
	uint32_t rto = tp->rto_us / 1000;

	if (!tp->ato_ms) {
		quickack_incr(s, so);
		tp->ato_ms = SL_TCP_ATO_MIN_MS;
	} else if (m <= SL_TCP_ATO_MIN_MS / 2) {
		tp->ato_ms = (uint16_t)(tp->ato_ms / 2 + SL_TCP_ATO_MIN_MS / 2);
	} else if (m < tp->ato_ms) {
		m += tp->ato_ms / 2u;
		tp->ato_ms = (uint16_t)(m > rto ? rto : m);
	} else if (m > rto) {
		quickack_incr(s, so);
	}
	tp->lrcv_ms = now;
}

/*
 * Linux's tcp_enter_quickack_mode(), for data the peer sent again or past
 * the window (tcp_send_dupack(), tcp_data_queue()): its ACK was likely
 * lost or the peer is probing, so the next segments are ACKed at once,
 * outside any exchange, and the ACK timeout starts again.
 */
static void quickack_enter(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;

	quickack_incr(s, so);
	tp->tflags &= ~SL_TF_PINGPONG;
	tp->ato_ms = SL_TCP_ATO_MIN_MS;
}

/*
 * Linux's tcp_send_dupack() for a segment with data or a FIN refused by
 * the sequence test or PAWS: the part of it below RCV.NXT came before,
 * and the ACK the caller sends reports it by DSACK.  Not in TIME-WAIT,
 * whose ACKs carry no SACK blocks (Linux tcp_v4_timewait_ack()).
 */
static void __attribute__((noinline)) dupack_dsack(struct sl_stack *s, struct sl_sock *so,
						    const struct seg *g, bool with_data)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (with_data && SEQ_LT(g->seq, tp->rcv_nxt) && so->state >= SL_TCP_ESTABLISHED &&
	    so->state != SL_TCP_TIME_WAIT)
		dsack_set(s, tp, g->seq, SEQ_GT(g->end, tp->rcv_nxt) ? tp->rcv_nxt : g->end);
}

/* Linux's tcp_in_quickack_mode(): quick ACKs left, and no exchange. */
static bool quick_ack(const struct sl_tcp_sock *tp)
{
	return tp->quickacks && !(tp->tflags & SL_TF_PINGPONG);
}

/*
 * Linux's tcp_send_delayed_ack(): arm the delayed ACK for the ACK
 * timeout from now_us, bounded (above TCP_ATO_MIN) by 200 ms for a short
 * segment or an exchange, else 500 ms, and by the smoothed RTT (at least
 * TCP_ATO_MIN); never later than a delayed ACK already armed.  True: that
 * one is about to go (within a quarter of the timeout): ACK now.
 */
static bool delack_arm(struct sl_tcp_sock *tp, uint64_t now_us)
{
	uint32_t ato = tp->ato_ms ? tp->ato_ms : SL_TCP_ATO_MIN_MS;
	uint64_t due;

	if (ato > SL_TCP_ATO_MIN_MS) {
		uint32_t max = tp->tflags & (SL_TF_PINGPONG | SL_TF_PUSHED) ?
			       SL_TCP_ATO_PUSHED_MS : SL_TCP_ATO_MAX_MS;
		uint32_t rtt = tp->srtt_us / 1000;

		if (tp->srtt_us && (rtt > SL_TCP_ATO_MIN_MS ? rtt : SL_TCP_ATO_MIN_MS) < max)
			max = rtt > SL_TCP_ATO_MIN_MS ? rtt : SL_TCP_ATO_MIN_MS;
		if (ato > max)
			ato = max;
	}
	if (ato > SL_TCP_ATO_PUSHED_MS)
		ato = SL_TCP_ATO_PUSHED_MS;	/* icsk_delack_max */
	due = now_us + ato * 1000ull;
	if (tp->t_dack) {
		if (tp->t_dack <= now_us + ato * 250ull)
			return true;
		if (due > tp->t_dack)
			due = tp->t_dack;
	}
	tp->t_dack = due;
	return false;
}

/* A passive child in SYN-RECEIVED: on its listener's SYN queue. */
static void child_embryo(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *c)
{
	c->state = SL_TCP_SYN_RECEIVED;
	lso->tcp.syn_len++;
	c->tcp.tflags |= SL_TF_EMBRYO;
	s->lib->tcp_embryos++;
	sl_count(s, SL_C_tcp_passive_open);
}

/* Low 6 bits of a cookie SYN-ACK's TSval, echoed in the ACK's TSecr: what
 * the SYN offered that the cookie has no room for (as Linux does). */
#define COOKIE_TS_WS_NONE	0x0f
#define COOKIE_TS_SACK		0x10
#define COOKIE_TS_MASK		0x3f

/*
 * The SYN queue is full: answer the SYN with a SYN-ACK whose ISN is a
 * cookie (RFC 4987 3.6) and keep nothing.  The SYN-ACK is what a child
 * would send, made on a socket on the C stack; window scaling and SACK
 * ride in the TSval's low bits, so without timestamps they are off.
 */
static void cookie_synack(struct sl_stack *s, struct sl_sock *lso, const struct sl_ip *ip,
			  const struct sl_tcph *th, const struct seg *g, uint64_t now_us)
{
	struct sl_sock tmp;
	struct sl_tcp_sock *tp = &tmp.tcp;

	memset(&tmp, 0, sizeof(tmp));
	tmp.type = SL_SOCK_TCP;
	tmp.laddr = ip->daddr;
	tmp.lport = th->dport;
	tmp.raddr = ip->saddr;
	tmp.rport = th->sport;
	tmp.rcvbuf = lso->rcvbuf;
	tmp.sndbuf = lso->sndbuf;
	tp->user_mss = lso->tcp.user_mss;
	sl_tcp_init_tcb(s, &tmp, now_us);
	tp->tflags |= SL_TF_WS | SL_TF_TS | SL_TF_SACK;
	take_syn_opts(s, &tmp, g, now_us);
	/* A cookie keeps no ECN: the SYN-ACK does not agree to it. */
	tp->ecn = 0;
	if (tp->tflags & SL_TF_TS) {
		uint32_t now_ms = (uint32_t)(now_us / 1000), ts = now_ms + tp->ts_offset;
		uint32_t want = (ts & ~(uint32_t)COOKIE_TS_MASK) |
				((tp->tflags & SL_TF_WS) ? tp->snd_wscale : COOKIE_TS_WS_NONE) |
				((tp->tflags & SL_TF_SACK) ? COOKIE_TS_SACK : 0);

		if (SEQ_GT(want, ts))
			want -= COOKIE_TS_MASK + 1;
		tp->ts_offset = want - now_ms;
	} else {
		tp->tflags &= ~(SL_TF_WS | SL_TF_SACK);
		tp->rcv_wscale = 0;
	}
	tp->irs = g->seq;
	tp->rcv_nxt = tp->rcv_adv = g->seq + 1;
	tp->iss = sl_tcp_cookie_make(s, tmp.laddr, tmp.lport, tmp.raddr, tmp.rport, g->seq,
				     g->o.mss ? g->o.mss : SL_TCP_MSS_DEFAULT, now_us);
	tmp.state = SL_TCP_SYN_RECEIVED;
	sl_tcp_send_syn(s, &tmp, now_us);
	lso->tcp.cookie_s = (uint32_t)(now_us / 1000000) + 1;
	sl_count(s, SL_C_tcp_syncookies_sent);
}

static void sync_input(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
		       const struct sl_ip *ip, const struct sl_tcph *th, struct seg *g,
		       uint64_t now_us);

/*
 * An ACK at listener lso: the third segment of a handshake answered with a
 * cookie?  If its cookie is good, the connection is made as its SYN would
 * have made it, in SYN-RECEIVED, and the ACK goes through the usual path
 * (which completes it and takes any data).  Returns false if the segment
 * is not that (idx untouched), true if it was taken (idx consumed).
 */
static bool cookie_ack(struct sl_stack *s, struct sl_sock *lso, uint32_t idx,
		       const struct sl_ip *ip, const struct sl_tcph *th, const struct seg *g,
		       uint64_t now_us)
{
	struct sl_tcp_sock *ltp = &lso->tcp, *tp;
	uint32_t now_s = (uint32_t)(now_us / 1000000) + 1;
	struct seg g2 = *g;
	struct sl_sock *c;
	uint16_t mss;

	if (!ltp->cookie_s || now_s - ltp->cookie_s > SL_TCP_COOKIE_LISTEN_S ||
	    (g->flags & (TH_SYN_ | TH_RST_)))
		return false;
	mss = sl_tcp_cookie_check(s, ip->daddr, th->dport, ip->saddr, th->sport, g->seq - 1,
				  g->ack - 1, now_us);
	if (!mss) {
		sl_count(s, SL_C_tcp_syncookies_failed);
		return false;
	}
	if (sl_tcp_acceptq_full(ltp) || !(c = child_new(s, lso, ip, th, now_us))) {
		/* As Linux: no reset; the peer sends again. */
		if (sl_tcp_acceptq_full(ltp))
			sl_count(s, SL_C_tcp_syn_dropped);
		sl_pkt_free(s, idx);
		return true;
	}
	tp = &c->tcp;
	if (g->o.ts) {
		unsigned int ws = g->o.tsecr & COOKIE_TS_WS_NONE;

		tp->tflags |= SL_TF_TS;
		tp->ts_recent = g->o.tsval;
		tp->ts_recent_s = now_s - 1;
		if (ws != COOKIE_TS_WS_NONE) {
			tp->tflags |= SL_TF_WS;
			tp->snd_wscale = (uint8_t)(ws > SL_TCP_WSCALE_MAX ? SL_TCP_WSCALE_MAX : ws);
		}
		if (g->o.tsecr & COOKIE_TS_SACK)
			tp->tflags |= SL_TF_SACK;
	}
	if (!(tp->tflags & SL_TF_WS))
		tp->rcv_wscale = 0;
	tp->peer_mss = mss;
	sl_tcp_set_mss(s, c);
	sl_tcp_cc_init(tp);
	tp->irs = g->seq - 1;
	tp->rcv_nxt = g->seq;
	tp->iss = g->ack - 1;
	tp->snd_una = tp->recover = tp->iss;
	tp->snd_nxt = tp->snd_max = tp->snd_end = tp->iss + 1;
	/* What our SYN-ACK offered: the window of a SYN, never scaled. */
	tp->rcv_adv = tp->rcv_nxt;
	tp->rcv_adv += sl_tcp_rcv_window(s, c) < 65535 ? sl_tcp_rcv_window(s, c) : 65535;
	tp->rtt_start_us = now_us;
	/* Should the ACK not complete it, the SYN-ACK goes again, as for any
	 * embryo, until the connection is made or given up. */
	tp->t_rexmt = now_us + tp->rto_us;
	child_embryo(s, lso, c);
	sl_count(s, SL_C_tcp_syncookies_ok);
	sync_input(s, c, idx, ip, th, &g2, now_us);
	return true;
}

/* A listener got a segment (RFC 9293 3.10.7.2). */
static void listen_input(struct sl_stack *s, struct sl_sock *lso, uint32_t idx,
			 const struct sl_ip *ip, const struct sl_tcph *th, const struct seg *g,
			 uint64_t now_us)
{
	struct sl_tcp_sock *ltp = &lso->tcp;
	struct sl_sock *c;
	struct sl_tcp_sock *tp;

	/* RFC 9293 3.10.7.2: an RST is ignored, an ACK reset, and anything
	 * else without SYN dropped. */
	if (g->flags & TH_RST_) {
		sl_count(s, SL_C_tcp_rx_state);
		goto drop;
	}
	if (g->flags & TH_ACK_) {
		if (cookie_ack(s, lso, idx, ip, th, g, now_us))
			return;
		sl_tcp_send_reset(s, ip, th, g->plen);
		goto drop;
	}
	if (!(g->flags & TH_SYN_)) {
		sl_count(s, SL_C_tcp_rx_state);
		goto drop;
	}
	/* SYN with FIN opens nothing: no host sends it, scanners do (nmap's
	 * FIN-SYN probe), and Linux's tcp_rcv_state_process() drops it. */
	if (g->flags & TH_FIN_) {
		sl_count(s, SL_C_tcp_rx_synfin);
		goto drop;
	}
	if (sl_tcp_acceptq_full(ltp)) {
		/* As Linux (ListenOverflows); a client in this stack waits
		 * for accept() to make room rather than for its timer, and is
		 * counted as parked, not dropped. */
		c = NULL;
		if (SL_READ_ONCE(sl_buf(s, idx)->flags) & SL_BUF_LOCAL)
			c = sl_sock_lookup_conn(s, SL_SOCK_TCP, ip->saddr, th->sport, ip->daddr,
						th->dport);
		if (c && c->state == SL_TCP_SYN_SENT)
			sl_tcp_park(s, lso, c);
		else
			sl_count(s, SL_C_tcp_syn_dropped);
		goto drop;
	}
	if (ltp->syn_len >= ltp->syn_max || embryos_full(s)) {
		cookie_synack(s, lso, ip, th, g, now_us);
		goto drop;
	}
	c = child_new(s, lso, ip, th, now_us);
	if (!c)
		goto drop;
	tp = &c->tcp;
	tp->tflags |= SL_TF_WS | SL_TF_TS | SL_TF_SACK;
	tp->irs = g->seq;
	tp->rcv_nxt = g->seq + 1;
	tp->rcv_adv = tp->rcv_nxt;
	take_syn_opts(s, c, g, now_us);
	tp->snd_wnd = g->wnd;	/* RFC 7323 2.2: a SYN's window is not scaled */
	tp->snd_wl1 = g->seq;
	child_embryo(s, lso, c);
	sl_tcp_send_syn(s, c, now_us);
	tp->t_rexmt = now_us + tp->rto_us;
	sl_tcp_arm(s, c);
drop:
	sl_buf_free(s, idx);
}

/* SYN-SENT (RFC 9293 3.10.7.3). */
static void syn_sent_input(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
			   const struct sl_ip *ip, const struct sl_tcph *th, const struct seg *g,
			   uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (g->flags & TH_ACK_) {
		if (SEQ_LEQ(g->ack, tp->iss) || SEQ_GT(g->ack, tp->snd_max)) {
			if (!(g->flags & TH_RST_))
				sl_tcp_send_reset(s, ip, th, g->plen);
			goto drop;
		}
	}
	if (g->flags & TH_RST_) {
		/* RFC 5961 3.2 allows only an RST that ACKs our SYN here. */
		if (g->flags & TH_ACK_) {
			sl_count(s, SL_C_tcp_reset_rx);
			sl_buf_free(s, idx);
			sl_tcp_done(s, so, ECONNREFUSED);
			return;
		}
		sl_count(s, SL_C_tcp_rx_state);
		goto drop;
	}
	if (!(g->flags & TH_SYN_)) {
		sl_count(s, SL_C_tcp_rx_state);
		goto drop;
	}
	tp->irs = g->seq;
	tp->rcv_nxt = g->seq + 1;
	tp->rcv_adv = tp->rcv_nxt;
	take_syn_opts(s, so, g, now_us);
	if (g->flags & TH_ACK_) {
		tp->snd_una = g->ack;
		tp->snd_wscale = (tp->tflags & SL_TF_WS) ? tp->snd_wscale : 0;
		if (!tp->backoff) {	/* Karn: only an unrepeated SYN */
			uint32_t r = (uint32_t)(now_us - tp->rtt_start_us);

			sl_tcp_rtt_sample(tp, r, r);
		}
		established(s, so, g);
		sl_tcp_keep_reset(so, now_us);
		/* RFC 9293: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>, then any data. */
		tp->tflags |= SL_TF_ACKNOW;
		sl_tcp_output(s, so, now_us);
		goto drop;
	}
	/* Simultaneous open (RFC 9293 figure 7): SYN-RECEIVED, send SYN-ACK. */
	tp->snd_wnd = g->wnd;
	tp->snd_wl1 = g->seq;
	so->state = SL_TCP_SYN_RECEIVED;
	sl_tcp_send_syn(s, so, now_us);
	tp->t_rexmt = now_us + tp->rto_us;
	sl_tcp_arm(s, so);
drop:
	sl_buf_free(s, idx);
}

/* The right edge of the window offered: RCV.NXT + RCV.WND. */
static uint32_t wnd_edge(const struct sl_tcp_sock *tp)
{
	return SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv : tp->rcv_nxt;
}

static bool seq_acceptable(const struct sl_tcp_sock *tp, const struct seg *g)
{
	uint32_t wnd = SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv - tp->rcv_nxt : 0;
	uint32_t len = g->end - g->seq;

	/* RFC 9293 3.10.7.4 first: the four cases, but a segment of no
	 * length may sit at the window's right edge, as Linux takes it
	 * (tcp_sequence(): !after(seq, rcv_nxt + window)).  A peer that has
	 * filled the window sends its pure ACKs there; refused, their ACKs
	 * were lost until our RCV.NXT caught up with the edge.  (Not an RST:
	 * RFC 5961 3.2 keeps to the window proper.) */
	if (!len)
		return wnd ? SEQ_GEQ(g->seq, tp->rcv_nxt) &&
				     (SEQ_LT(g->seq, tp->rcv_nxt + wnd) ||
				      (g->seq == tp->rcv_nxt + wnd && !(g->flags & TH_RST_))) :
			     g->seq == tp->rcv_nxt;
	if (!wnd)
		return false;
	return (SEQ_GEQ(g->seq, tp->rcv_nxt) && SEQ_LT(g->seq, tp->rcv_nxt + wnd)) ||
	       (SEQ_GEQ(g->end - 1, tp->rcv_nxt) && SEQ_LT(g->end - 1, tp->rcv_nxt + wnd));
}

/* The listener of a passive child, while it is not yet accepted. */
static struct sl_sock *listener_of(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_sock *p;

	if (!(so->tcp.tflags & SL_TF_PASSIVE) || !sl_sock_some(s, so->parent_idx))
		return NULL;
	p = sl_sock(s, so->parent_idx);
	return p->type == SL_SOCK_TCP && p->state == SL_TCP_LISTEN ? p : NULL;
}

/* A passive child finished its handshake: onto the accept queue. */
static bool child_ready(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_sock *p = listener_of(s, so);
	struct sl_tcp_sock *ptp;

	if (!p)
		return !(so->tcp.tflags & SL_TF_PASSIVE);
	ptp = &p->tcp;
	if (sl_tcp_acceptq_full(ptp)) {
		/* As Linux: ignore the ACK; our SYN-ACK will be retransmitted,
		 * or sent again when accept() makes room. */
		sl_tcp_park(s, p, so);
		return false;
	}
	if (ptp->syn_len)
		ptp->syn_len--;
	sl_tcp_embryo_done(s, so);
	so->next_idx = SLUICE_IDX_NONE;
	if (sl_sock_some(s, ptp->acc_tail))
		sl_sock(s, ptp->acc_tail)->next_idx = so->idx;
	else
		ptp->acc_head = so->idx;
	ptp->acc_tail = so->idx;
	SL_KILL_POINT("tcp_accq");
	ptp->acc_len++;
	so->tcp.tflags |= SL_TF_ACCQ;
	sl_sock_wake(s, p);
	sl_sock_async(s, p, SL_POLL_IN);	/* the listener's sk_data_ready() */
	return true;
}

/*
 * Header prediction (Van Jacobson's, as BSD and Linux's
 * tcp_rcv_established() do it): the usual segment of an established
 * connection is the next in sequence, carries ACK (PSH aside) and nothing
 * else, a timestamp that passes PAWS if timestamps are on, an ACK within
 * what was sent, and data that fits the window.  Such a segment passes
 * every check of RFC 9293 3.10.7.4 before the ACK (sequence number, RST,
 * SYN, the ACK bit) and needs no trimming, so sync_input() goes straight
 * to the ACK: the same steps, without their tests.  Anything else takes
 * the whole path.
 */
static bool predicted(const struct sl_sock *so, const struct seg *g)
{
	const struct sl_tcp_sock *tp = &so->tcp;

	return so->state == SL_TCP_ESTABLISHED && (g->flags & ~TH_PSH_) == TH_ACK_ &&
	       g->seq == tp->rcv_nxt && SEQ_GEQ(tp->rcv_adv, tp->rcv_nxt + g->plen) &&
	       SEQ_GEQ(g->ack, tp->snd_una) && SEQ_LEQ(g->ack, tp->snd_max) &&
	       (tp->tflags & SL_TF_TS ? g->o.ts && SEQ_GEQ(g->o.tsval, tp->ts_recent) : !g->o.ts);
}

/* The byte at sequence seq of segment g (in buffer idx, not yet trimmed
 * to its payload), which holds it: seq - g->seq < g->plen. */
static uint8_t seg_byte(struct sl_stack *s, uint32_t idx, const struct seg *g, uint32_t seq)
{
	uint32_t d = seq - g->seq, first = (uint32_t)g->plen - g->more, chain = g->chain, steps = 0;

	if (d < first)
		return sl_buf_data(s, idx)[g->poff + d];
	d -= first;
	while (sl_buf_next(s, chain, &steps)) {
		const struct sluice_buf *b = sl_buf(s, chain);
		uint16_t blen = SL_READ_ONCE(b->len);

		if (d < blen)
			return sl_buf_data(s, chain)[d];
		d -= blen;
		chain = b->next_idx;
	}
	return 0;
}

/*
 * Sixth: the URG bit (RFC 9293 3.10.7.4), as Linux's tcp_urg() and
 * tcp_check_urg() take it.  The pointer points after the urgent byte
 * (RFC 6093 3: what every stack sends; Linux's tcp_stdurg 0), so the byte
 * is at SEG.SEQ + SEG.UP - 1.  A pointer already read past, below
 * RCV.NXT, or not beyond the one held is ignored; a newer one replaces
 * the one held (its byte, unread out of band, stays in the stream as
 * data).  The byte is taken out of band when the segment holding it
 * arrives; it stays in the receive queue, where reads step over it.
 *
 * O_ASYNC: a new pointer is the event POLL_PRI (sl_sock_urg()), which the
 * arming process makes SIGURG, POLL_PRI and one POLL_IN (lib/preload/
 * async.c).  That POLL_IN stands for Linux's tcp_urg() sk_data_ready() for
 * the byte when the byte is in the pointer's segment, else for the
 * segment's own tcp_data_ready(): true then, and the caller says the
 * event, POLL_PRI once it queues the segment in order (and signals no
 * POLL_IN for its data), else SL_POLL_PRI_ALONE, SIGURG and POLL_PRI with
 * no POLL_IN, as Linux gives for a pointer that brings no data.  The
 * byte's POLL_IN is signalled when it comes, so the order of codes is
 * Linux's.
 */
static bool urg_input(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
		      const struct sl_tcph *th, const struct seg *g)
{
	struct sl_tcp_sock *tp = &so->tcp;
	bool pri = false;

	if (th->flags & TH_URG_) {
		uint32_t up = ntohs(th->urp), ptr, copied = sl_tcp_copied_seq(so);

		ptr = ntohl(th->seq) + (up ? up - 1 : 0);
		if (SEQ_LEQ(copied, ptr) && SEQ_GEQ(ptr, tp->rcv_nxt) &&
		    !(tp->urg_data && SEQ_LEQ(ptr, tp->urg_seq))) {
			/* Where Linux raises SIGURG (sk_send_sigurg()): counted,
			 * and the owner's signal sent after the unlock; an
			 * O_ASYNC socket's event once the segment is placed. */
			tp->urg_sigs++;
			pri = (so->life & SL_LIFE_ASYNC) && !(so->flags & SL_SF_ORPHAN);
			if (!pri)
				sl_sock_urg(s, so);
			/* The byte held is at the head, not read out of band,
			 * and more is queued: it goes, so that a read does not
			 * take it as data (Linux: copied_seq++). */
			if (tp->urg_data && tp->urg_seq == copied &&
			    !(so->opt_flags & SL_SO_OOBINLINE) && so->rxq_bytes &&
			    !so->rx_lent_bytes)
				sl_tcp_rxq_eat(s, so, 1);
			tp->urg_data = SL_URG_NOTYET;
			tp->urg_seq = ptr;
		}
	}
	if (tp->urg_data == SL_URG_NOTYET && tp->urg_seq - g->seq < g->plen) {
		tp->urg_data = SL_URG_VALID | seg_byte(s, idx, g, tp->urg_seq);
		sl_sock_wake(s, so);
		/* Linux's tcp_urg() sk_data_ready(): POLL_IN (the POLL_PRI
		 * event's when the pointer came with it). */
		if (pri)
			sl_sock_urg(s, so);
		else
			sl_sock_async(s, so, SL_POLL_IN);
		return false;
	}
	return pri;
}

/* Synchronized states and SYN-RECEIVED (RFC 9293 3.10.7.4). */
static void sync_input(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
		       const struct sl_ip *ip, const struct sl_tcph *th, struct seg *g,
		       uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	bool queued = false, fin_acked, syn, with_data, ts_stale, urg_in = false, urg_said = false;
	uint32_t gen = so->kp.gen, seg_seq, old_seq;

	if (predicted(so, g)) {
		old_seq = g->seq;
		sl_count(s, SL_C_tcp_rx_predicted);
		ts_stale = false;	/* TSval is at or past TS.Recent */
		goto ack;
	}

	/* A retransmitted SYN while our SYN-ACK is unanswered. */
	if (so->state == SL_TCP_SYN_RECEIVED && (g->flags & TH_SYN_) &&
	    !(g->flags & (TH_ACK_ | TH_RST_)) && g->seq == tp->irs) {
		sl_tcp_send_syn(s, so, now_us);
		goto drop;
	}

	/* Simultaneous open (RFC 9293 figure 8): the peer's SYN-ACK answers
	 * our SYN; take it as the ACK that completes the handshake. */
	if (so->state == SL_TCP_SYN_RECEIVED && !(tp->tflags & SL_TF_PASSIVE) &&
	    (g->flags & (TH_SYN_ | TH_ACK_ | TH_RST_)) == (TH_SYN_ | TH_ACK_) &&
	    g->seq == tp->irs && g->ack == tp->iss + 1) {
		g->flags &= (uint8_t)~TH_SYN_;
		g->seq++;
		tp->tflags |= SL_TF_ACKNOW;
	}
	syn = g->flags & TH_SYN_;
	/* RFC 5961 3.2 tests the SEG.SEQ that arrived; the trim below moves
	 * g->seq up to RCV.NXT (old_seq: where its text began). */
	seg_seq = g->seq;
	old_seq = g->seq;
	/* Linux tcp_oow_rate_limited(): a segment with payload or FIN and no
	 * SYN is always answered; pure ACKs and SYNs at a limited rate. */
	with_data = g->end != g->seq && !syn;
	/* RFC 7323 5.5: a TS.Recent older than 24 days is no longer valid
	 * (the peer's clock may have wrapped half its space since). */
	ts_stale = (uint32_t)(now_us / 1000000) - tp->ts_recent_s > SL_TCP_PAWS_IDLE_S;

	/* RFC 7323 3.2: once both sides sent TSopt, a non-RST segment
	 * without one SHOULD be dropped silently (an RST MUST NOT be). */
	if ((tp->tflags & SL_TF_TS) && !g->o.ts && !(g->flags & TH_RST_)) {
		sl_count(s, SL_C_tcp_rx_no_ts);
		goto drop;
	}

	/* RFC 7323 5.3: PAWS. */
	if ((tp->tflags & SL_TF_TS) && g->o.ts && !(g->flags & TH_RST_) &&
	    SEQ_LT(g->o.tsval, tp->ts_recent) && !ts_stale) {
		sl_count(s, SL_C_tcp_rx_paws);
		dupack_dsack(s, so, g, with_data);
		sl_tcp_oow_ack(s, so, with_data, now_us);
		goto drop;
	}

	/* First: sequence number. */
	if (!seq_acceptable(tp, g)) {
		bool zero_wnd_ok = g->seq == tp->rcv_nxt && !(g->flags & (TH_SYN_ | TH_RST_));

		if (!zero_wnd_ok) {
			sl_count(s, SL_C_tcp_rx_oow);
			if (!(g->flags & TH_RST_)) {
				if (so->state == SL_TCP_TIME_WAIT && (g->flags & TH_FIN_))
					tp->t_close = now_us + SL_TCP_TIME_WAIT_US;
				/* Data sent again (all of it below RCV.NXT:
				 * tcp_send_dupack()), or starting at the
				 * window's right edge (tcp_data_queue()'s
				 * out_of_window): quick-ACK mode. */
				if (with_data && so->state >= SL_TCP_ESTABLISHED &&
				    so->state <= SL_TCP_FIN_WAIT_2 &&
				    (SEQ_LT(g->seq, tp->rcv_nxt) || g->seq == wnd_edge(tp)))
					quickack_enter(s, so);
				dupack_dsack(s, so, g, with_data);
				sl_tcp_oow_ack(s, so, with_data, now_us);
				sl_tcp_arm(s, so);
			}
			goto drop;
		}
		/* RCV.WND = 0: take the ACK and RST of a segment at RCV.NXT
		 * but none of its data (RFC 9293: "special allowance"); a bare
		 * FIN is taken too, as Linux does (it costs no buffer space). */
		if (g->plen) {
			g->flags &= (uint8_t)~TH_FIN_;
			/* Linux tcp_data_queue(): in order, window 0. */
			if (so->state >= SL_TCP_ESTABLISHED && so->state <= SL_TCP_FIN_WAIT_2)
				quickack_enter(s, so);
		}
		g->plen = 0;
		g->end = g->seq + !!(g->flags & TH_FIN_);
		tp->tflags |= SL_TF_ACKNOW;
	}
	/* Trim to the window: the front below RCV.NXT, the tail past it. */
	if (SEQ_LT(g->seq, tp->rcv_nxt)) {
		uint32_t d = tp->rcv_nxt - g->seq;

		if (g->flags & TH_SYN_) {
			g->flags &= (uint8_t)~TH_SYN_;
			g->seq++;
			d--;
		}
		if (d >= g->plen) {
			if (d > g->plen)
				g->flags &= (uint8_t)~TH_FIN_;
			d = g->plen;
		}
		/* Its front came before: DSACK it if the text is taken. */
		old_seq = g->seq;
		g->seq += d;
		g->poff = (uint16_t)(g->poff + d);
		g->plen = (uint16_t)(g->plen - d);
		tp->tflags |= SL_TF_ACKNOW;
	}
	{
		uint32_t wnd = SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv - tp->rcv_nxt : 0;
		uint32_t room = tp->rcv_nxt + wnd - g->seq;

		if (SEQ_GT(g->seq + g->plen, tp->rcv_nxt + wnd)) {
			g->plen = (uint16_t)(SEQ_GT(tp->rcv_nxt + wnd, g->seq) ? room : 0);
			g->flags &= (uint8_t)~TH_FIN_;
			tp->tflags |= SL_TF_ACKNOW;
		}
	}

	/* Second: RST (RFC 5961 3.2). */
	if (g->flags & TH_RST_) {
		if (seg_seq != tp->rcv_nxt) {
			sl_tcp_challenge_ack(s, so, now_us);
			goto drop;
		}
		sl_count(s, SL_C_tcp_reset_rx);
		sl_pkt_free(s, idx);
		if (so->state == SL_TCP_SYN_RECEIVED)
			sl_tcp_done(s, so, (tp->tflags & SL_TF_PASSIVE) ? 0 : ECONNREFUSED);
		else if (so->state >= SL_TCP_CLOSING)
			sl_tcp_done(s, so, 0);
		else
			sl_tcp_done(s, so, so->state == SL_TCP_CLOSE_WAIT ? EPIPE : ECONNRESET);
		return;
	}

	/* Fourth: SYN in a synchronized state (RFC 5961 4.2). */
	if (syn) {
		sl_tcp_challenge_ack(s, so, now_us);
		goto drop;
	}

	/* Fifth: ACK. */
	if (!(g->flags & TH_ACK_)) {
		sl_count(s, SL_C_tcp_rx_state);
		goto drop;
	}
	if (so->state == SL_TCP_SYN_RECEIVED) {
		if (!SEQ_LT(tp->snd_una, g->ack) || SEQ_GT(g->ack, tp->snd_max)) {
			sl_tcp_send_reset(s, ip, th, g->plen);
			goto drop;
		}
		/* TCP_DEFER_ACCEPT: a bare ACK does not complete the
		 * connection until the SYN-ACK was sent that many times more;
		 * data does (Linux tcp_check_req()). */
		if ((tp->tflags & SL_TF_PASSIVE) && tp->backoff < tp->defer_accept && !g->plen &&
		    !(g->flags & TH_FIN_)) {
			sl_count(s, SL_C_tcp_defer_accept);
			goto drop;
		}
		if (!child_ready(s, so))
			goto drop;
		tp->snd_una = g->ack;
		tp->snd_wscale = (tp->tflags & SL_TF_WS) ? tp->snd_wscale : 0;
		if (!tp->backoff && !tp->srtt_us) {	/* Karn */
			uint32_t r = (uint32_t)(now_us - tp->rtt_start_us);

			sl_tcp_rtt_sample(tp, r, r);
		}
		established(s, so, g);
		sl_tcp_keep_reset(so, now_us);
		if (so->flags & SL_SF_SHUT_WR) {
			tp->tflags |= SL_TF_FIN_Q;
			so->state = SL_TCP_FIN_WAIT_1;
		}
	}
ack:
	if (!ack_process(s, so, g, now_us))
		goto out_ack;	/* RFC 5961 5.2: ACK it and drop it */
	/* RFC 7323 4.3: remember the timestamp to echo, only from a segment
	 * whose ACK was acceptable (as Linux since 2013: tcp_replace_ts_recent
	 * after tcp_ack).  Taken before the RST, SYN and ACK checks, a blind
	 * in-window segment with a huge TSval and a bad ACK would move
	 * TS.Recent ahead of the real peer, whose segments PAWS then drops
	 * (test_hostile_link: test_ack_flood_bad_seq). */
	if ((tp->tflags & SL_TF_TS) && g->o.ts && SEQ_LEQ(g->seq, tp->last_ack_sent) &&
	    (SEQ_GEQ(g->o.tsval, tp->ts_recent) || ts_stale)) {
		tp->ts_recent = g->o.tsval;
		tp->ts_recent_s = (uint32_t)(now_us / 1000000);
	}
	fin_acked = (tp->tflags & SL_TF_FIN_Q) && SEQ_GT(tp->snd_una, tp->snd_end);
	switch (so->state) {
	case SL_TCP_FIN_WAIT_1:
		if (fin_acked) {
			sl_tcp_set_state(s, so, SL_TCP_FIN_WAIT_2);
			if (so->flags & SL_SF_ORPHAN)
				tp->t_close = sl_tcp_fin_wait2_end(tp, now_us);
		}
		break;
	case SL_TCP_CLOSING:
		if (fin_acked)
			enter_time_wait(s, so, now_us);
		break;
	case SL_TCP_LAST_ACK:
		if (fin_acked) {
			sl_pkt_free(s, idx);
			sl_tcp_done(s, so, 0);
			return;
		}
		break;
	case SL_TCP_TIME_WAIT:
		if (g->flags & TH_FIN_) {
			tp->t_close = now_us + SL_TCP_TIME_WAIT_US;
			tp->tflags |= SL_TF_ACKNOW;
		}
		break;
	default:
		break;
	}

	/* Sixth: the URG bit. */
	if (__builtin_expect((th->flags & TH_URG_) || tp->urg_data == SL_URG_NOTYET, 0))
		urg_in = urg_input(s, so, idx, th, g);

	/* Seventh: segment text (ESTABLISHED, FIN-WAIT-1, FIN-WAIT-2). */
	if ((g->plen || (g->flags & TH_FIN_)) && so->state >= SL_TCP_ESTABLISHED &&
	    so->state <= SL_TCP_FIN_WAIT_2 && !(tp->tflags & SL_TF_FIN_RCVD)) {
		bool in_order = g->seq == tp->rcv_nxt;

		if ((so->flags & SL_SF_ORPHAN) && g->plen) {
			/* Linux: new data for a closed socket resets it. */
			sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
			sl_pkt_free(s, idx);
			sl_tcp_done(s, so, 0);
			return;
		}
		/* Linux tcp_data_queue(): the front below RCV.NXT came
		 * before, whether or not there is room for the rest. */
		if (old_seq != g->seq)
			dsack_set(s, tp, old_seq, g->seq);
		if (g->plen && in_order && sl_buf_some(s, tp->ooo_head) &&
		    (rx_pool_low(s) || rx_over_budget(s, so))) {
			/* The segment the out-of-order queue waits for, and
			 * no room for it: renege on the queue (RFC 2018 8,
			 * Linux tcp_prune_ofo_queue), or it would wait for
			 * ever. */
			sl_buf_free_chain(s, tp->ooo_head);
			tp->ooo_head = SLUICE_IDX_NONE;
			tp->ooo_bytes = 0;
			tp->ooo_count = 0;
		}
		if (g->plen && (rx_pool_low(s) ||
				(rx_over_budget(s, so) && !(in_order && rx_tail_fits(s, so, g->plen))))) {
			/* Taken again when the peer retransmits. */
			sl_count(s, SL_C_tcp_rx_pressure);
			tp->tflags |= SL_TF_ACKNOW;
			goto out_ack;
		}
		to_payload(s, idx, g);
		queued = true;
		if (g->plen)
			ecn_rx(s, tp, g);
		if (in_order) {
			bool had_ooo = sl_buf_some(s, tp->ooo_head);

			deliver(s, so, idx);
			if (g->more)
				deliver_more(s, so, g);
			if (g->plen) {
				/* Linux tcp_event_data_recv(): the size
				 * first, then the ACK timeout. */
				measure_rcv_mss(s, so, g, (th->off >> 4) * 4u,
						g->nchain ? (uint32_t)(g->plen - g->more) :
							    g->plen + (g->seq - old_seq));
				ato_update(s, so, now_us);
				/* Full-sized ones; a chain counts a
				 * segment a buffer, as Linux acks GSO by
				 * size. */
				if (g->nchain || g->plen >= tp->rcv_mss)
					tp->delack_segs += 1 + g->nchain;
			}
			if (had_ooo || (tp->tflags & SL_TF_FIN_RCVD))
				tp->tflags |= SL_TF_ACKNOW;
			else if ((tp->delack_segs >= 2 ||
				  tp->rcv_nxt - tp->last_ack_sent > tp->rcv_mss) &&
				 sl_tcp_ack_moves_wnd(s, so))
				/* RFC 5681 4.2: more than one full
				 * segment unacknowledged, and as Linux's
				 * __tcp_ack_snd_check() only if the ACK
				 * moves the window's edge (else the read
				 * that frees space sends it). */
				tp->tflags |= SL_TF_ACKNOW;
			else if (quick_ack(tp) || delack_arm(tp, now_us))
				tp->tflags |= SL_TF_ACKNOW;
			sl_sock_wake(s, so);
			/* A new urgent pointer's POLL_PRI (urg_input()): its
			 * POLL_IN stands for this segment's. */
			if (urg_in) {
				sl_sock_urg(s, so);
				urg_said = true;
			}
			/* A FIN is tcp_fin()'s signal first: POLL_HUP once
			 * both ways are shut (this end's sending was), else
			 * POLL_IN; then Linux tcp_data_ready(): POLL_IN. */
			if (g->flags & TH_FIN_)
				sl_sock_async(s, so, (so->flags & SL_SF_SHUT_WR) ? SL_POLL_HUP :
										SL_POLL_IN);
			/* (A new urgent pointer's POLL_PRI gave it: urg_input().) */
			if (!urg_in)
				sl_sock_async(s, so, SL_POLL_IN);
		} else {
			/* RFC 5681 4.2: an immediate duplicate ACK. */
			ooo_insert(s, so, idx);
			tp->tflags |= SL_TF_ACKNOW;
		}
	}

	/* Eighth: FIN, once it is in order (deliver() consumed it). */
	if ((tp->tflags & SL_TF_FIN_RCVD) && so->state >= SL_TCP_SYN_RECEIVED &&
	    so->state <= SL_TCP_FIN_WAIT_2) {
		switch (so->state) {
		case SL_TCP_ESTABLISHED:
			sl_tcp_set_state(s, so, SL_TCP_CLOSE_WAIT);
			break;
		case SL_TCP_FIN_WAIT_1:
			if (SEQ_GT(tp->snd_una, tp->snd_end))
				enter_time_wait(s, so, now_us);
			else
				sl_tcp_set_state(s, so, SL_TCP_CLOSING);
			break;
		case SL_TCP_FIN_WAIT_2:
			enter_time_wait(s, so, now_us);
			break;
		default:
			break;
		}
		tp->tflags |= SL_TF_ACKNOW;
	}
out_ack:
	/* A new urgent pointer and nothing queued in order: Linux's
	 * tcp_check_urg() signals, tcp_data_queue() does not. */
	if (__builtin_expect(urg_in && !urg_said, 0))
		sl_sock_async(s, so, SL_POLL_PRI_ALONE);
	if (!queued)
		sl_pkt_free(s, idx);
	if (so->type != SL_SOCK_TCP || so->kp.gen != gen)
		return;
	sl_tcp_output(s, so, now_us);
	/* Its last ACK sent, a connection in TIME-WAIT gives up its slot. */
	if (so->state == SL_TCP_TIME_WAIT) {
		sl_tw_enter(s, so, now_us);
		return;
	}
	/* sl_tcp_output() arms the timers itself from ESTABLISHED on. */
	if (so->state < SL_TCP_ESTABLISHED)
		sl_tcp_arm(s, so);
	return;
drop:
	sl_pkt_free(s, idx);
}

/* RFC 6191 2: may this SYN start a new incarnation of a TIME-WAIT
 * connection?  With timestamps on both, if its TSval is newer than
 * TS.Recent; otherwise if its ISN is above RCV.NXT. */
static bool tw_syn_ok(const struct sl_tcp_sock *tp, const struct seg *g)
{
	if ((tp->tflags & SL_TF_TS) && g->o.ts)
		return SEQ_GT(g->o.tsval, tp->ts_recent);
	return SEQ_GT(g->seq, tp->rcv_nxt);
}

/*
 * A segment for a TIME-WAIT entry (RFC 9293 3.10.7.4, as Linux's
 * tcp_timewait_state_process() reads it).  True if it ends here; false
 * for a SYN that may start a new incarnation (RFC 6191: its timestamp, or
 * without them its sequence number, is beyond the old connection's): the
 * entry is gone and the listener gets the SYN.
 */
static bool tw_input(struct sl_stack *s, struct sl_tw *tw, const struct seg *g, uint64_t now_us)
{
	uint32_t now_s = (uint32_t)(now_us / 1000000);
	bool ts = (tw->flags & SL_TW_TS) && g->o.ts;
	bool paws = ts && !(g->flags & TH_RST_) && SEQ_LT(g->o.tsval, tw->ts_recent) &&
		    now_s - tw->ts_recent_s <= SL_TCP_PAWS_IDLE_S;
	uint16_t ms = (uint16_t)(now_us / 1000);

	/* The kernel's connection now: not a word from the stack. */
	if (tw->flags & SL_TW_GONE)
		return true;
	if (!paws && g->seq == tw->rcv_nxt && (g->end == g->seq || (g->flags & TH_RST_))) {
		/* A reset at RCV.NXT ends it: RFC 1337's hazard, taken as
		 * Linux takes it by default (tcp_rfc1337 = 0). */
		if (g->flags & TH_RST_) {
			sl_count(s, SL_C_tcp_tw_killed);
			sl_tw_kill(s, tw);
			return true;
		}
		/* A bare ACK at RCV.NXT: nothing to answer. */
		if (ts) {
			tw->ts_recent = g->o.tsval;
			tw->ts_recent_s = now_s;
		}
		sl_tw_rearm(s, tw, now_us);
		return true;
	}
	if ((g->flags & (TH_SYN_ | TH_RST_ | TH_ACK_)) == TH_SYN_ && !paws &&
	    (SEQ_GT(g->seq, tw->rcv_nxt) || (ts && SEQ_GT(g->o.tsval, tw->ts_recent)))) {
		sl_count(s, SL_C_tcp_tw_killed);
		sl_tw_kill(s, tw);
		return false;
	}
	if (paws)
		sl_count(s, SL_C_tcp_rx_paws);
	if (g->flags & TH_RST_)
		return true;
	/* Anything else (a FIN sent again, an old duplicate) is answered
	 * with an ACK; data and FINs always, the rest at a limited rate
	 * (Linux tcp_oow_rate_limited()). */
	if ((paws || (g->flags & TH_ACK_)) && !(tw = sl_tw_rearm(s, tw, now_us)))
		return true;
	if (g->end == g->seq || (g->flags & TH_SYN_)) {
		if (tw->oow_ms && (uint16_t)(ms - tw->oow_ms) < SL_TCP_OOW_LIMIT_MS)
			return true;
		tw->oow_ms = ms ? ms : 1;
	}
	sl_tcp_send_tw_ack(s, tw, now_us);
	return true;
}

void sl_tcp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen,
		  uint64_t now_us)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_tcph *th = (struct sl_tcph *)((uint8_t *)ip + hlen);
	/*
	 * Length, flags and (chained) further length read once: what is
	 * checked here is what the checksum covers.  Read again, a length
	 * below hlen after the check wrapped len to ~4 GiB for the checksum.
	 */
	unsigned int blen = SL_READ_ONCE(b->len), bflags = SL_READ_ONCE(b->flags);
	/* A chained segment: sl_ip_input() checked its length (b->seq). */
	unsigned int more = sl_buf_flags_chained(bflags) ? SL_READ_ONCE(b->seq) : 0;
	unsigned int len, thl;
	struct sl_sock *so;
	struct seg g;

	sl_count(s, SL_C_tcp_rx);
	if (blen < hlen + sizeof(*th) || more > 65535 - blen)
		goto bad;
	len = blen + more - hlen;
	thl = (th->off >> 4) * 4u;
	if (thl < sizeof(*th) || thl > blen - hlen)
		goto bad;
	if (!(bflags & (SL_BUF_LOCAL | SL_BUF_CSUM_OK)) &&
	    sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_TCP_,
						    (uint16_t)len), th, len)) != 0)
		goto bad;
	/* RFC 1122 4.2.3.10 / RFC 9293 3.9.2.3: no broadcast or multicast.
	 * Port 0 is not special, as on Linux: a segment to it finds no
	 * socket and is answered with a reset from it, which the connecting
	 * socket takes (a connect() to port 0 is refused). */
	if (is_bcast(s, ip->daddr) || is_bcast(s, ip->saddr) || (bflags & SL_BUF_L2_BCAST)) {
		sl_count(s, SL_C_tcp_rx_bcast);
		goto drop;
	}

	g.seq = ntohl(th->seq);
	g.ack = ntohl(th->ack);
	g.flags = th->flags & (TH_FIN_ | TH_SYN_ | TH_RST_ | TH_PSH_ | TH_ACK_ | TH_URG_);
	g.oflags = g.flags;
	g.ecn = th->flags & (TH_ECE_ | TH_CWR_);
	g.ipecn = ip->tos & SL_IP_ECN_MASK;
	g.wnd = ntohs(th->win);
	g.plen = (uint16_t)(len - thl);
	g.poff = (uint16_t)(hlen + thl);
	g.more = (uint16_t)more;
	g.chain = more ? b->next_idx : SLUICE_IDX_NONE;
	g.nchain = more ? b->aux : 0;
	g.end = g.seq + g.plen + !!(g.flags & TH_SYN_) + !!(g.flags & TH_FIN_);
	parse_opts((const uint8_t *)(th + 1), thl - sizeof(*th), g.flags & TH_SYN_, &g.o);

	/* A connection, or else a TIME-WAIT entry, before a listener. */
	so = sl_sock_lookup_conn(s, SL_SOCK_TCP, ip->daddr, th->dport, ip->saddr, th->sport);
	if (!so) {
		struct sl_tw *tw = sl_tw_find(s, ip->daddr, th->dport, ip->saddr, th->sport);

		if (tw && tw_input(s, tw, &g, now_us))
			goto drop;
		so = sl_sock_lookup(s, SL_SOCK_TCP, ip->daddr, th->dport, ip->saddr, th->sport);
	}
	/* RFC 6191: a new SYN beyond a TIME-WAIT connection's timestamps (or,
	 * without them, its sequence space) ends it and goes to the listener. */
	if (so && so->state == SL_TCP_TIME_WAIT && (g.flags & TH_SYN_) &&
	    !(g.flags & (TH_ACK_ | TH_RST_)) && tw_syn_ok(&so->tcp, &g)) {
		struct sl_tcp_sock *tp = &so->tcp;

		tp->t_close = 0;
		sl_tcp_done(s, so, 0);
		so = sl_sock_lookup(s, SL_SOCK_TCP, ip->daddr, th->dport, ip->saddr, th->sport);
	}
	if (!so || so->state == SL_TCP_CLOSED) {
		sl_count(s, SL_C_tcp_rx_noport);
		sl_tcp_send_reset(s, ip, th, g.plen);
		goto drop;
	}
	if (more && !chain_ok(s, so, &g)) {
		sl_buf_free_chain(s, g.chain);
		b->flags &= (uint16_t)~SL_BUF_CHAIN;
		g.plen = (uint16_t)(g.plen - more);
		g.end -= more;
		g.more = 0;
		g.chain = SLUICE_IDX_NONE;
		g.nchain = 0;
		sl_count(s, SL_C_loopback_unchained);
	}
	so->rx_pkts++;
	/* Linux's tcp_v4_rcv(): every socket's segment but a listener's. */
	if (so->state != SL_TCP_LISTEN)
		sl_sock_cpu_note(so);
	so->tcp.last_rx_us = now_us;
	if (so->state >= SL_TCP_ESTABLISHED && so->state <= SL_TCP_CLOSE_WAIT)
		sl_tcp_keep_reset(so, now_us);
	switch (so->state) {
	case SL_TCP_LISTEN:
		listen_input(s, so, idx, ip, th, &g, now_us);
		return;
	case SL_TCP_SYN_SENT:
		syn_sent_input(s, so, idx, ip, th, &g, now_us);
		return;
	default:
		sync_input(s, so, idx, ip, th, &g, now_us);
		return;
	}
bad:
	sl_count(s, SL_C_tcp_rx_bad);
drop:
	sl_pkt_free(s, idx);
}
