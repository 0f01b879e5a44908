// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP output: the send loop (what the windows, Nagle and SWS avoidance
 * allow), headers written in place in front of queued payload, options,
 * control segments, and resets for segments that match no connection.
 */
#include <errno.h>
#include <string.h>

#include "proto/proto.h"

/* Option kinds (RFC 9293 3.2, RFC 7323, RFC 2018). */
#define OPT_EOL		0
#define OPT_NOP		1
#define OPT_MSS		2
#define OPT_WS		3
#define OPT_SACK_PERM	4
#define OPT_SACK	5
#define OPT_TS		8

static uint32_t ts_now(const struct sl_tcp_sock *tp, uint64_t now_us)
{
	/* RFC 7323 5.4: a clock of 1 ms ticks, offset per connection. */
	return (uint32_t)(now_us / 1000) + tp->ts_offset;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

/* Merge the out-of-order queue into SACK blocks, the block holding the
 * newest arrival first (RFC 2018 4), then the highest others: with more
 * ranges than fit, the last 16 of the walk are kept (a window of many
 * holes, a loss burst on a long path, has its newest arrivals at the top;
 * keeping the first 16 reported the same low blocks again and again). */
static unsigned int sack_blocks(struct sl_stack *s, const struct sl_tcp_sock *tp,
				uint32_t out[][2], unsigned int max)
{
	uint32_t r[16][2], first[2] = { 0, 0 }, idx = tp->ooo_head, steps = 0;
	uint32_t cs = 0, ce = 0;
	unsigned int n = 0, k = 0, i;
	bool open = false, have_first = false;

	for (;;) {
		bool more = sl_buf_next(s, idx, &steps);
		const struct sluice_buf *b = more ? sl_buf(s, idx) : NULL;
		uint32_t start = more ? b->seq : 0, end = more ? b->seq + b->len : 0;

		if (more && start == end) {
			/* A bare FIN out of order: RFC 2018 blocks cover data
			 * only, and an empty one is malformed. */
			idx = b->next_idx;
			continue;
		}
		if (more && open && SEQ_LEQ(start, ce)) {
			if (SEQ_GT(end, ce))
				ce = end;
			idx = b->next_idx;
			continue;
		}
		if (open) {
			/* The range cs..ce is complete: the ring keeps the
			 * last 16, and the one with the newest arrival. */
			if (SEQ_GEQ(tp->sack_last, cs) && SEQ_LT(tp->sack_last, ce)) {
				first[0] = cs;
				first[1] = ce;
				have_first = true;
			}
			r[n % 16][0] = cs;
			r[n % 16][1] = ce;
			n++;
		}
		if (!more)
			break;
		cs = start;
		ce = end;
		open = true;
		idx = b->next_idx;
	}
	if (have_first) {
		out[k][0] = first[0];
		out[k][1] = first[1];
		k++;
	}
	/* The rest from the highest down. */
	for (i = 0; i < n && i < 16 && k < max; i++) {
		const uint32_t *e = r[(n - 1 - i) % 16];

		if (have_first && e[0] == first[0] && e[1] == first[1])
			continue;
		out[k][0] = e[0];
		out[k][1] = e[1];
		k++;
	}
	return k;
}

/* Options for a segment with these flags, in at most room bytes (40, or
 * what a full-sized data segment leaves under the MTU: the MSS counts the
 * timestamp option only, so SACK blocks take what fits); returns their
 * length (a multiple of 4). */
static unsigned int build_opts(struct sl_stack *s, struct sl_sock *so, uint8_t flags,
			       uint8_t *o, uint64_t now_us, unsigned int room)
{
	struct sl_tcp_sock *tp = &so->tcp;
	unsigned int n = 0;

	if (flags & TH_SYN_) {
		uint16_t mss = htons(sl_tcp_our_mss(s, so));

		o[n++] = OPT_MSS;
		o[n++] = 4;
		memcpy(o + n, &mss, 2);
		n += 2;
		if (tp->tflags & SL_TF_SACK) {
			if (!(tp->tflags & SL_TF_TS)) {
				o[n++] = OPT_NOP;
				o[n++] = OPT_NOP;
			}
			o[n++] = OPT_SACK_PERM;
			o[n++] = 2;
		} else if (tp->tflags & SL_TF_TS) {
			o[n++] = OPT_NOP;
			o[n++] = OPT_NOP;
		}
		if (tp->tflags & SL_TF_TS) {
			o[n++] = OPT_TS;
			o[n++] = 10;
			put32(o + n, ts_now(tp, now_us));
			put32(o + n + 4, (flags & TH_ACK_) ? tp->ts_recent : 0);
			n += 8;
		}
		if (tp->tflags & SL_TF_WS) {
			o[n++] = OPT_NOP;
			o[n++] = OPT_WS;
			o[n++] = 3;
			o[n++] = tp->rcv_wscale;
		}
		return n;
	}
	if (tp->tflags & SL_TF_TS) {
		o[n++] = OPT_NOP;
		o[n++] = OPT_NOP;
		o[n++] = OPT_TS;
		o[n++] = 10;
		put32(o + n, ts_now(tp, now_us));
		put32(o + n + 4, tp->ts_recent);
		n += 8;
	}
	/* RFC 7323 3.2: an RST may carry TSopt, and Linux's do (the peer's
	 * PAWS sees a current TSval); nothing else. */
	if (flags & TH_RST_)
		return n;
	if (room > 40)
		room = 40;
	if ((tp->tflags & SL_TF_SACK) && (flags & TH_ACK_) &&
	    (tp->ooo_bytes || (tp->tflags & SL_TF_DSACK)) && room >= n + 12) {
		uint32_t blk[SL_TCP_SACK_MAX][2];
		unsigned int max = (room - n - 4) / 8, nb = 0;

		/* RFC 2883 4: a DSACK block first, in one segment only
		 * (Linux clears rx_opt.dsack once it is written), then the
		 * SACK blocks that fit after it. */
		if (tp->tflags & SL_TF_DSACK) {
			blk[0][0] = tp->dsack_seq;
			blk[0][1] = tp->dsack_end;
			nb = 1;
			tp->tflags &= ~SL_TF_DSACK;
		}
		if (tp->ooo_bytes && max > nb)
			nb += sack_blocks(s, tp, blk + nb, max - nb);
		if (nb) {
			o[n++] = OPT_NOP;
			o[n++] = OPT_NOP;
			o[n++] = OPT_SACK;
			o[n++] = (uint8_t)(2 + 8 * nb);
			for (unsigned int i = 0; i < nb; i++) {
				put32(o + n, blk[i][0]);
				put32(o + n + 4, blk[i][1]);
				n += 8;
			}
		}
	}
	return n;
}

/* At most what the window field can say, and TCP_WINDOW_CLAMP. */
static uint32_t rcv_wnd_cap(struct sl_stack *s, const struct sl_tcp_sock *tp, uint32_t space)
{
	uint32_t cap = (tp->tflags & SL_TF_WS) ? 65535u << sl_tcp_ws(s, tp->rcv_wscale) : 65535u;

	if (space > cap)
		space = cap;
	if (tp->window_clamp && space > tp->window_clamp)
		space = tp->window_clamp;
	return space;
}

uint32_t sl_tcp_rcv_window(struct sl_stack *s, const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t mss = sl_tcp_our_mss(s, so);
	uint32_t space = rcv_wnd_cap(s, tp, sl_tcp_rcv_space_mss(s, so, mss));
	uint32_t old = SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv - tp->rcv_nxt : 0;
	uint32_t step = so->rcvbuf / 4;

	/* RFC 9293 3.8.6.2.2: never shrink the window ... */
	if (space <= old)
		return old;
	/* ... and move its right edge only by min(buffer fraction, MSS). */
	if (step > mss)
		step = mss;
	if (space - old < step)
		return old;
	return space;
}

/*
 * Linux's __tcp_ack_snd_check(): more than a full segment waits for its
 * ACK, which goes at once only if it moves the window's right edge (the
 * window the buffer offers now is no smaller than the one the last ACK
 * offered: __tcp_select_window() >= rcv_wnd), or the reader waits for
 * more than is queued (SO_RCVLOWAT).  Otherwise it waits for the timer or
 * the read that frees the space (tcp.c, ack_on_read()).
 */
bool sl_tcp_ack_moves_wnd(struct sl_stack *s, const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t lowat = so->rcvlowat ? so->rcvlowat : 1;
	uint32_t last = SEQ_GT(tp->rcv_adv, tp->last_ack_sent) ? tp->rcv_adv - tp->last_ack_sent : 0;

	if (so->rxq_bytes + so->rx_lent_bytes < lowat)
		return true;
	return rcv_wnd_cap(s, tp, sl_tcp_rcv_space_mss(s, so, sl_tcp_our_mss(s, so))) >= last;
}

/*
 * The largest window the buffer offers, empty: half rcvbuf in segments of
 * our MSS a buffer (sl_tcp_rcv_space_mss()), within the field and
 * TCP_WINDOW_CLAMP (Linux's window_clamp, tcp_full_space()).
 */
uint32_t sl_tcp_rcv_wnd_max(struct sl_stack *s, const struct sl_sock *so)
{
	uint32_t per = sl_tcp_our_mss(s, so), full = so->rcvbuf / 2, bufs;

	if (per > SL_TCP_BUF_PAYLOAD(s))
		per = SL_TCP_BUF_PAYLOAD(s);
	bufs = (so->rcvbuf + s->buf_size - 1) / s->buf_size;	/* rounded up, as there */
	if (full > bufs * per)
		full = bufs * per;
	return rcv_wnd_cap(s, &so->tcp, full);
}

uint16_t sl_tcp_window_field(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t win = sl_tcp_rcv_window(s, so), field;
	uint8_t ws = (tp->tflags & SL_TF_WS) ? sl_tcp_ws(s, tp->rcv_wscale) : 0;

	/*
	 * Rounded down: never more than the buffer takes.  Rounded up, to
	 * keep the edge offered before where it was, the rounding added up
	 * ACK after ACK (up to 2^shift - 1 bytes each: rcv_nxt moves by
	 * segments, not by granules), and with the shift Linux picks (7 and
	 * more) a receiver that does not read offered far more than SO_RCVBUF
	 * holds.  So the field may fall short of the edge by less than a
	 * granule, the retraction RFC 7323 appendix F describes; the edge
	 * itself (rcv_adv, what seq_acceptable() takes data to) stays.
	 */
	field = win >> ws;
	if (field > 65535)
		field = 65535;
	if (SEQ_GT(tp->rcv_nxt + (field << ws), tp->rcv_adv))
		tp->rcv_adv = tp->rcv_nxt + (field << ws);
	return (uint16_t)field;
}

/* RFC 3168 5, 6.1.1: new data of a connection that agreed ECN goes out
 * ECT(0), as Linux's (INET_ECN_xmit()); retransmissions, pure ACKs and
 * control segments stay Not-ECT (6.1.5, 6.1.4). */
static void ecn_mark_ect(struct sl_stack *s, uint32_t idx)
{
	struct sl_ip *ip = (struct sl_ip *)(sl_buf_base(s, idx) + SL_HEADROOM);

	ip->tos = (uint8_t)((ip->tos & ~SL_IP_ECN_MASK) | SL_IP_ECN_ECT0);
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
}

/* The ECN flags a segment carries (RFC 3168 6.1.1, 6.1.3): an
 * ECN-setup SYN has ECE and CWR (not when sent again: Linux's
 * tcp_ecn_clear_syn() falls back), an ECN-setup SYN-ACK ECE alone; once
 * agreed, every segment has ECE while a CE mark waits for the peer's CWR.
 * CWR on data is data_hdr()'s. */
static uint8_t ecn_flags(const struct sl_tcp_sock *tp, uint8_t flags)
{
	if (!(tp->ecn & SL_ECN_OK) || (flags & TH_RST_))
		return flags;
	if (flags & TH_SYN_) {
		if (flags & TH_ACK_)
			return flags | TH_ECE_;
		return tp->backoff ? flags : flags | TH_ECE_ | TH_CWR_;
	}
	if (tp->ecn & SL_ECN_DEMAND_CWR)
		flags |= TH_ECE_;
	return flags;
}

/* Checksum the segment at th (tcp_len bytes, all in buffer idx unless it
 * stays in the stack) and fill the IPv4 header in front of it.  The TCP
 * header may start anywhere after the IPv4 header room. */
static bool emit_prep(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
		      struct sl_tcph *th, unsigned int tcp_len, uint32_t saddr, uint32_t daddr)
{
	uint8_t *base = sl_buf_base(s, idx);
	unsigned int hoff = (unsigned int)((uint8_t *)th - base);
	bool ect = so && (so->tcp.ecn & SL_ECN_ECT);
	uint32_t sum;

	if (ect)
		so->tcp.ecn &= (uint8_t)~SL_ECN_ECT;

	/* th was found in buffer idx; if the stack was found corrupt since
	 * (sl_corrupt() points every buffer at a sink), base is the sink's
	 * and th is not in it: nothing is written or sent. */
	if (__builtin_expect(s->corrupt || hoff < SL_HEADROOM + 20 || hoff >= s->buf_size, 0))
		return false;
	th->csum = 0;
	/* Inside the stack nobody checks it (SL_BUF_LOCAL). */
	if (!sl_ip_is_local(s, daddr)) {
		sum = sl_csum_pseudo(saddr, daddr, IPPROTO_TCP_, (uint16_t)tcp_len);
		th->csum = sl_csum_fold(sl_csum_add(sum, th, tcp_len));
	}
	sl_ip_build(s, idx, IPPROTO_TCP_, saddr, daddr, (uint16_t)tcp_len);
	sl_ip_sock_hdr(s, idx, so);
	if (ect)
		ecn_mark_ect(s, idx);
	if (hoff != SL_HEADROOM + 20) {
		/* Move the 20-byte IPv4 header up against the TCP header. */
		memmove(base + hoff - 20, base + SL_HEADROOM, 20);
		sl_buf(s, idx)->off = (uint16_t)(hoff - 20);
	}
	return true;
}

/* Send the segment at th (see emit_prep()). */
static int emit(struct sl_stack *s, struct sl_sock *so, uint32_t idx, struct sl_tcph *th,
		unsigned int tcp_len, uint32_t saddr, uint32_t daddr, bool keep)
{
	if (!emit_prep(s, so, idx, th, tcp_len, saddr, daddr)) {
		if (!keep)
			sl_buf_free(s, idx);
		return -ENOTRECOVERABLE;
	}
	sl_count(s, SL_C_tcp_tx);
	if (so)
		so->tx_pkts++;
	return sl_ip_output(s, idx, keep);
}

/* Fill the fixed header; an ACK carries our window and rcv_nxt. */
static void fill_hdr(struct sl_stack *s, struct sl_sock *so, struct sl_tcph *th, uint8_t flags,
		     uint32_t seq, unsigned int optlen)
{
	struct sl_tcp_sock *tp = &so->tcp;

	th->sport = so->lport;
	th->dport = so->rport;
	th->seq = htonl(seq);
	th->ack = (flags & TH_ACK_) ? htonl(tp->rcv_nxt) : 0;
	th->off = (uint8_t)(((20 + optlen) / 4) << 4);
	th->flags = ecn_flags(tp, flags);
	th->urp = 0;
	/* Urgent mode: every segment below snd_up says where the urgent data
	 * ends (RFC 9293 3.8.5; the pointer after the last urgent byte, RFC
	 * 6093), 0xFFFF while that is more than 64 KiB away (Linux's
	 * __tcp_transmit_skb()). */
	if (__builtin_expect(tp->tflags & SL_TF_URG, 0) && !(flags & TH_SYN_) &&
	    SEQ_LT(seq, tp->snd_up)) {
		if (SEQ_LT(tp->snd_up, seq + 0x10000)) {
			th->urp = htons((uint16_t)(tp->snd_up - seq));
			th->flags |= TH_URG_;
		} else if (SEQ_GT(seq + 0xFFFF, tp->snd_nxt)) {
			th->urp = htons(0xFFFF);
			th->flags |= TH_URG_;
		}
	}
	if (flags & TH_RST_)
		th->win = 0;
	else if (flags & TH_SYN_) {
		/* RFC 7323 2.2: the window in a SYN is never scaled. */
		uint32_t w = sl_tcp_rcv_window(s, so);

		if (w > 65535)
			w = 65535;
		th->win = htons((uint16_t)w);
		if (SEQ_GT(tp->rcv_nxt + w, tp->rcv_adv))
			tp->rcv_adv = tp->rcv_nxt + w;
	} else {
		th->win = htons(sl_tcp_window_field(s, so));
	}
	if (flags & TH_ACK_) {
		/* Linux tcp_dec_quickack_mode(): an ACK of new data spends a
		 * quick ACK; the last one sets the ACK timeout back. */
		if (tp->quickacks && tp->last_ack_sent != tp->rcv_nxt && !--tp->quickacks)
			tp->ato_ms = SL_TCP_ATO_MIN_MS;
		tp->last_ack_sent = tp->rcv_nxt;
		tp->tflags &= ~(SL_TF_ACKNOW | SL_TF_PUSHED | SL_TF_PUSHED2);
		tp->delack_segs = 0;
		tp->t_dack = 0;
	}
}

int sl_tcp_send_ctl(struct sl_stack *s, struct sl_sock *so, uint8_t flags, uint32_t seq,
		    uint64_t now_us)
{
	uint32_t idx = sl_buf_alloc(s);
	uint8_t opts[40];
	unsigned int optlen;
	struct sl_tcph *th;

	if (idx == SLUICE_IDX_NONE)
		return -ENOBUFS;
	optlen = build_opts(s, so, flags, opts, now_us, 40);
	th = (struct sl_tcph *)(sl_buf_base(s, idx) + SL_HEADROOM + 20);
	fill_hdr(s, so, th, flags, seq, optlen);
	memcpy(th + 1, opts, optlen);
	if (flags & TH_RST_)
		sl_count(s, SL_C_tcp_reset_tx);
	return emit(s, so, idx, th, 20 + optlen, so->laddr, so->raddr, false);
}

/*
 * A pure ACK carries SND.MAX, the highest sequence sent, not SND.NXT: an
 * RTO pulls SND.NXT back to SND.UNA (go_back()), and the peer may hold
 * everything we sent, so a sequence number below its RCV.NXT would make it
 * drop the ACK as out of window (RFC 9293 3.10.7.4).  Two ends both backed
 * off that way ignored each other's ACKs for ever.  Linux's SND.NXT never
 * goes back, so its ACKs carry the same.
 *
 * But never past the right edge of the peer's window as we know it
 * (SND.UNA + SND.WND): Linux's tcp_acceptable_seq().  Data sent up to an
 * edge the peer then held still (its receive buffer full, its reader
 * blocked writing to us), SND.MAX can lie past what its RCV.NXT + RCV.WND
 * allows, and every pure ACK was dropped as out of window; our ACKs then
 * reached it only on RTO retransmissions, backed off exponentially, while
 * its send queue (and so its reader, and so its window) waited for them:
 * the verbs echo test's stall (test_tcp_stall).  At the edge itself the
 * peer takes it (tcp_input.c seq_acceptable()).
 */
int sl_tcp_send_ack(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t seq = tp->snd_max, end = tp->snd_una + tp->snd_wnd;

	if (SEQ_GT(seq, end))
		seq = end;
	return sl_tcp_send_ctl(s, so, TH_ACK_, seq, now_us);
}

void sl_tcp_challenge_ack(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t sec = (uint32_t)(now_us / 1000000);

	if (sec != tp->chal_sec) {
		tp->chal_sec = sec;
		tp->chal_cnt = 0;
	}
	if (tp->chal_cnt >= SL_TCP_CHALLENGE_MAX)
		return;
	tp->chal_cnt++;
	sl_count(s, SL_C_tcp_challenge_ack);
	sl_tcp_send_ack(s, so, now_us);
}

void sl_tcp_oow_ack(struct sl_stack *s, struct sl_sock *so, bool with_data, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint16_t ms = (uint16_t)(now_us / 1000);

	/* Linux tcp_oow_rate_limited(): data is not likely part of a loop. */
	if (!with_data) {
		if (tp->oow_ack_ms && (uint16_t)(ms - tp->oow_ack_ms) < SL_TCP_OOW_LIMIT_MS)
			return;
		tp->oow_ack_ms = ms ? ms : 1;
	}
	sl_tcp_send_ack(s, so, now_us);
}

int sl_tcp_send_syn(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint8_t flags = so->state == SL_TCP_SYN_SENT ? TH_SYN_ : TH_SYN_ | TH_ACK_;

	if (!tp->backoff)
		tp->rtt_start_us = now_us;	/* Karn: time only the first SYN */
	tp->snd_nxt = tp->iss + 1;
	if (SEQ_LT(tp->snd_max, tp->snd_nxt))
		tp->snd_max = tp->snd_nxt;
	return sl_tcp_send_ctl(s, so, flags, tp->iss, now_us);
}

void sl_tcp_rst_fill(struct sl_tcph *th, const struct sl_tcph *in, unsigned int plen)
{
	memset(th, 0, sizeof(*th));
	th->sport = in->dport;
	th->dport = in->sport;
	if (in->flags & TH_ACK_) {
		/* <SEQ=SEG.ACK><CTL=RST> */
		th->seq = in->ack;
		th->flags = TH_RST_;
	} else {
		/* <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK> */
		uint32_t len = plen + !!(in->flags & TH_SYN_) + !!(in->flags & TH_FIN_);

		th->ack = htonl(ntohl(in->seq) + len);
		th->flags = TH_RST_ | TH_ACK_;
	}
	th->off = 5 << 4;
}

void sl_tcp_send_reset(struct sl_stack *s, const struct sl_ip *ip, const void *thv,
		       unsigned int plen)
{
	const struct sl_tcph *in = thv;
	struct sl_tcph *th;
	uint32_t idx;

	/* RFC 9293 3.10.7.1: never answer a reset. */
	if (in->flags & TH_RST_)
		return;
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return;
	th = (struct sl_tcph *)(sl_buf_base(s, idx) + SL_HEADROOM + 20);
	sl_tcp_rst_fill(th, in, plen);
	sl_count(s, SL_C_tcp_reset_tx);
	emit(s, NULL, idx, th, 20, ip->daddr, ip->saddr, false);
}

/* An ACK for a TIME-WAIT entry, as its connection would have sent it. */
int sl_tcp_send_tw_ack(struct sl_stack *s, const struct sl_tw *tw, uint64_t now_us)
{
	uint32_t idx = sl_buf_alloc(s);
	unsigned int optlen = 0;
	struct sl_tcph *th;
	uint8_t *o;

	if (idx == SLUICE_IDX_NONE)
		return -ENOBUFS;
	th = (struct sl_tcph *)(sl_buf_base(s, idx) + SL_HEADROOM + 20);
	memset(th, 0, sizeof(*th));
	th->sport = tw->lport;
	th->dport = tw->rport;
	th->seq = htonl(tw->snd_nxt);
	th->ack = htonl(tw->rcv_nxt);
	th->flags = TH_ACK_;
	th->win = htons(tw->wnd);
	if (tw->flags & SL_TW_TS) {
		o = (uint8_t *)(th + 1);
		o[0] = OPT_NOP;
		o[1] = OPT_NOP;
		o[2] = OPT_TS;
		o[3] = 10;
		put32(o + 4, (uint32_t)(now_us / 1000) + tw->ts_offset);
		put32(o + 8, tw->ts_recent);
		optlen = 12;
	}
	th->off = (uint8_t)(((20 + optlen) / 4) << 4);
	return emit(s, NULL, idx, th, 20 + optlen, tw->laddr, tw->raddr, false);
}

/*
 * The last segment of a retransmitted GSO packet of two or more past
 * SND.UNA, followed by SACKed data to the end of the queue: it ends what
 * the peer lacks of the write, and carries the write's PSH, as Linux's
 * retransmissions show (packetdrill sack-route-refresh-ip-tos.pkt); the
 * head's own retransmission does not (fr-4pkt-sack.pkt), nor one of a
 * single segment (prr-ss-30pkt-lost1_4.pkt). "Of two or more": the
 * segment before went in the same instant, not SACKed. PSH is advisory
 * (RFC 9293 3.9.1); this only keeps the segments the same as Linux's.
 */
static bool sacked_to_tail(struct sl_stack *s, const struct sl_tcp_sock *tp, uint32_t first,
			   uint32_t last, uint64_t now_us)
{
	uint32_t idx = sl_buf(s, last)->next_idx, steps = 0, prev = SLUICE_IDX_NONE;

	if (!tp->sacked_bytes || idx == SLUICE_IDX_NONE || sl_buf(s, first)->seq == tp->snd_una)
		return false;
	for (uint32_t i = tp->sndq_head; sl_buf_next(s, i, &steps) && i != first;
	     i = sl_buf(s, i)->next_idx)
		prev = i;
	if (prev == SLUICE_IDX_NONE || sl_buf(s, prev)->ts_us != now_us ||
	    (sl_buf(s, prev)->flags & (SL_TBF_SACKED | SL_TBF_REXMIT)) != SL_TBF_REXMIT)
		return false;
	steps = 0;
	while (sl_buf_next(s, idx, &steps)) {
		if (!(sl_buf(s, idx)->flags & SL_TBF_SACKED))
			return false;
		idx = sl_buf(s, idx)->next_idx;
	}
	return true;
}

/*
 * Segments of a GSO packet as Linux sizes them (tcp_tso_autosize()): about
 * a millisecond at the pacing rate (200% of cwnd a round trip in slow
 * start, 120% after, as tcp_pacing_ss_ratio and _ca_ratio), at least 2
 * (tcp_min_tso_segs), at most 64 KiB.
 */
static unsigned int gso_segs(const struct sl_tcp_sock *tp)
{
	uint32_t mss = tp->mss ? tp->mss : SL_TCP_MSS_DEFAULT, fl = sl_tcp_flight(tp);
	uint64_t cw = tp->cwnd > fl ? tp->cwnd : fl, per_ms, segs;

	if (!tp->srtt_us)
		return 2;
	per_ms = cw * (tp->cwnd < tp->ssthresh / 2 ? 200 : 120) * 1000000 / 100 / tp->srtt_us /
		 1024;
	segs = per_ms / mss;
	if (segs > 65535 / mss)
		segs = 65535 / mss;
	return segs < 2 ? 2 : (unsigned int)segs;
}

/* Will the buffer after lb go in the same sl_tcp_output() pass as the
 * plen bytes being sent: unsent, and within cwnd and the peer's window
 * (a SACK recovery: what PRR leaves)? */
static bool next_goes(struct sl_stack *s, const struct sl_tcp_sock *tp,
		      const struct sluice_buf *lb, uint32_t plen)
{
	const struct sluice_buf *nb;
	uint32_t wnd = tp->cwnd < tp->snd_wnd ? tp->cwnd : tp->snd_wnd;

	if (!sl_buf_some(s, lb->next_idx))
		return false;
	nb = sl_buf(s, lb->next_idx);
	if (nb->flags & SL_TBF_SENT)
		return false;
	if ((tp->tflags & (SL_TF_RECOVERY | SL_TF_SACK)) == (SL_TF_RECOVERY | SL_TF_SACK))
		return tp->prr_room >= plen + nb->aux;
	return !SEQ_GT(nb->seq + nb->aux, tp->snd_una + wnd);
}

/*
 * PSH as Linux sets it: on the segment that ends a write (SL_TBF_PSH),
 * and on the last segment of every GSO packet of two or more segments
 * (__tcp_transmit_skb() forces it there, for the receiver's GRO), never
 * on a packet of one segment cut from a write. Sent one segment a packet
 * here, new data is counted into packets of gso_segs() within a pass of
 * sl_tcp_output(), a packet ending full, at a write's end or with the
 * pass; retransmissions carry the mark alone. PSH is advisory (RFC 9293
 * 3.9.1): this keeps the segments the same as Linux's.
 */
static bool psh(struct sl_stack *s, struct sl_tcp_sock *tp, uint32_t idx, uint32_t last,
		uint32_t plen)
{
	const struct sluice_buf *lb = sl_buf(s, last);
	bool fresh = !(sl_buf(s, idx)->flags & SL_TBF_SENT) && !(tp->tflags & SL_TF_PROBING);

	if (lb->flags & SL_TBF_PSH) {
		tp->gso_cnt = 0;
		return true;
	}
	if (!fresh)
		return false;
	if (tp->gso_cnt < 255)
		tp->gso_cnt++;
	if (tp->gso_cnt >= gso_segs(tp) || (tp->gso_cnt >= 2 && !next_goes(s, tp, lb, plen))) {
		tp->gso_cnt = 0;
		return true;
	}
	return false;
}

/* A FIN queued after the data rides on the segment that carries the last
 * byte, sent or sent again, as Linux's FIN is in its last skb (RFC 9293
 * 3.10.4 lets a FIN share a segment with data); a chain inside the stack
 * leaves it to a segment of its own. */
static bool fin_rides(struct sl_stack *s, const struct sl_tcp_sock *tp, uint32_t idx,
		      uint32_t last)
{
	const struct sluice_buf *lb = sl_buf(s, last);

	return (tp->tflags & SL_TF_FIN_Q) && idx == last && last == tp->sndq_tail &&
	       lb->seq + lb->aux == tp->snd_end;
}

/* Write the header of a segment whose payload starts in send buffer idx
 * and ends in buffer last; returns it, its length in *hlen. */
static struct sl_tcph *data_hdr(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
				uint32_t last, unsigned int plen, uint64_t now_us,
				unsigned int *hlen)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint8_t opts[40], flags = TH_ACK_;
	unsigned int optlen, mtu;
	struct sl_tcph *th;

	if (psh(s, tp, idx, last, plen) || sacked_to_tail(s, tp, idx, last, now_us))
		flags |= TH_PSH_;
	if (fin_rides(s, tp, idx, last))
		flags |= TH_FIN_;
	/* New data, with ECN agreed: ECT(0), and CWR on the first segment
	 * after a reduction of cwnd (RFC 3168 6.1.2). Linux's test is the
	 * same: seq at or past SND.NXT, i.e. never sent. */
	if ((tp->ecn & SL_ECN_OK) && !(sl_buf(s, idx)->flags & SL_TBF_SENT)) {
		tp->ecn |= SL_ECN_ECT;
		if (tp->ecn & SL_ECN_QUEUE_CWR) {
			tp->ecn &= (uint8_t)~SL_ECN_QUEUE_CWR;
			flags |= TH_CWR_;
		}
	}
	/* Inside the stack a buffer, not the MTU, bounds a segment; an
	 * IPv6 peer's header is 20 bytes longer (SACK blocks on a full
	 * segment took it past the link's MTU: the kring link refused it,
	 * link_tx_err). */
	mtu = sl_ip_is_local(s, so->raddr) ? 40 + 40 + plen :
	      sl_mtu(s) - (__builtin_expect(sl_v6tok(so->raddr), 0) ? 20u : 0u);
	optlen = build_opts(s, so, flags, opts, now_us, mtu > 40 + plen ? mtu - 40 - plen : 0);
	th = (struct sl_tcph *)(sl_buf_base(s, idx) + SL_TCP_DATA_OFF - 20 - optlen);
	fill_hdr(s, so, th, flags, sl_buf(s, idx)->seq, optlen);
	memcpy(th + 1, opts, optlen);
	*hlen = 20 + optlen;
	return th;
}

int sl_tcp_xmit_buf(struct sl_stack *s, struct sl_sock *so, uint32_t idx, uint64_t now_us)
{
	struct sluice_buf *b = sl_buf(s, idx);
	unsigned int plen = b->aux, hlen;
	struct sl_tcph *th;

	/* Read once: checked here, it is what the checksum covers. */
	if (plen > SL_TCP_BUF_PAYLOAD(s)) {
		sl_corrupt(s, SL_C_corrupt_buf_len, idx);
		return -ENOTRECOVERABLE;
	}
	th = data_hdr(s, so, idx, idx, plen, now_us, &hlen);
	/* A FIN on it is sent: the peer may ACK it (fin_rides()). */
	if ((th->flags & TH_FIN_) && SEQ_LT(so->tcp.snd_max, so->tcp.snd_end + 1))
		so->tcp.snd_max = so->tcp.snd_end + 1;
	if (b->flags & SL_TBF_SENT) {
		struct sl_tcp_sock *tp = &so->tcp;

		b->flags |= SL_TBF_REXMIT;
		sl_count(s, SL_C_tcp_retransmit);
		so->retransmits++;
		/* For undo (tcp_input.c): the first retransmission's TSval,
		 * and one more to be reported needless by DSACK; not a loss
		 * probe's (Linux's tcp_retransmit_skb(), which TLP bypasses). */
		if ((tp->tflags & (SL_TF_TLP | SL_TF_TLP_RETX)) != (SL_TF_TLP | SL_TF_TLP_RETX) ||
		    (tp->tflags & SL_TF_RECOVERY)) {
			if (!(tp->undo & SL_UNDO_STAMP)) {
				tp->retrans_ts = ts_now(tp, now_us);
				tp->undo |= SL_UNDO_STAMP;
			}
			tp->undo_retrans = (tp->undo_retrans < 0 ? 0 : tp->undo_retrans) + 1;
		}
	}
	b->flags |= SL_TBF_SENT;
	b->ts_us = now_us;
	return emit(s, so, idx, th, hlen + plen, so->laddr, so->raddr, true);
}

/*
 * Send new data from send buffer idx and the n after it as one segment to
 * a socket of this stack, as Linux's loopback carries 64 KiB GSO packets:
 * one header, one trip through input and one ACK per plen bytes, not per
 * buffer.  The copy is a chain (SL_BUF_CHAIN): the headers and idx's
 * payload, then each further payload in a buffer of its own.
 */
static int xmit_chain(struct sl_stack *s, struct sl_sock *so, uint32_t idx, unsigned int n,
		      uint32_t last, unsigned int plen, uint64_t now_us)
{
	struct sluice_buf *b = sl_buf(s, idx);
	unsigned int hlen, i;
	struct sl_tcph *th = data_hdr(s, so, idx, last, plen, now_us, &hlen);
	uint32_t head, tail, j = b->next_idx;

	if (!emit_prep(s, so, idx, th, hlen + plen, so->laddr, so->raddr))
		return -ENOTRECOVERABLE;
	/* The IPv4 length counts it all; this buffer holds the first part. */
	b->len = (uint16_t)(b->len - (plen - b->aux));
	head = sl_pkt_copy(s, idx);
	if (head == SLUICE_IDX_NONE)
		goto nobuf;
	tail = head;
	for (i = 0; i < n; i++) {
		const struct sluice_buf *sb = sl_buf(s, j);
		uint16_t len = sb->aux;	/* read once: checked, then copied */
		uint32_t c;

		if (len > SL_TCP_BUF_PAYLOAD(s)) {
			sl_corrupt(s, SL_C_corrupt_buf_len, j);
			sl_buf_free_chain(s, head);
			return -ENOTRECOVERABLE;
		}
		c = sl_buf_alloc(s);
		if (c == SLUICE_IDX_NONE) {
			sl_buf_free_chain(s, head);
			goto nobuf;
		}
		sl_buf(s, c)->off = SL_TCP_DATA_OFF;
		sl_buf(s, c)->len = len;
		memcpy(sl_buf_base(s, c) + SL_TCP_DATA_OFF, sl_buf_base(s, j) + SL_TCP_DATA_OFF,
		       len);
		sl_buf(s, tail)->next_idx = c;
		tail = c;
		j = sb->next_idx;
	}
	sl_buf(s, head)->flags = SL_BUF_LOCAL | SL_BUF_CHAIN;
	sl_buf(s, head)->aux = (uint16_t)n;
	sl_ip_loopback(s, head, tail);
	for (i = 0, j = idx; i <= n; i++, j = sl_buf(s, j)->next_idx) {
		sl_buf(s, j)->flags |= SL_TBF_SENT;
		sl_buf(s, j)->ts_us = now_us;
	}
	sl_count(s, SL_C_ip_tx);
	sl_count(s, SL_C_tcp_tx);
	sl_count(s, SL_C_loopback_chain);
	so->tx_pkts++;
	return 0;
nobuf:
	sl_count(s, SL_C_ip_tx_nobuf);
	return -ENOBUFS;
}

/* How many unsent buffers after idx (its payload len, within usable)
 * can go with it in one segment inside the stack; their last in *last
 * and the segment's payload in *plen. */
static unsigned int chain_more(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
			       uint32_t usable, uint32_t *last, uint32_t *plen)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t j = sl_buf(s, idx)->next_idx, total = *plen;
	unsigned int n = 0;

	*last = idx;
	while (n < SL_CHAIN_MAX && sl_buf_some(s, j)) {
		const struct sluice_buf *b = sl_buf(s, j);
		/* Read once: the sum is checked as it is made (it is the
		 * segment's length, which the checksum and IPv4 length cover). */
		uint32_t aux = SL_READ_ONCE(b->aux);

		if ((b->flags & SL_TBF_SENT) || !aux || aux > SL_TCP_BUF_PAYLOAD(s) ||
		    total + aux > usable || total + aux > SL_TCP_CHAIN_BYTES)
			break;
		/* Nagle or a cork holds a short last buffer back as it would
		 * alone. */
		if (aux < tp->mss && j == tp->sndq_tail &&
		    (!(so->flags & SL_SF_NODELAY) || (tp->tflags & SL_TF_CORK)) &&
		    !(tp->tflags & SL_TF_FIN_Q))
			break;
		total += aux;
		*last = j;
		j = b->next_idx;
		n++;
	}
	*plen = total;
	return n;
}

/*
 * Going back after an RTO (SND.NXT below SND.MAX, no fast recovery), the
 * SACKed bytes between SND.UNA and SND.NXT: not in flight, so cwnd does
 * not count them, as Linux's tcp_packets_in_flight() leaves sacked_out
 * out (sl_tcp_go_back() keeps the marks). 0 otherwise, or with none.
 */
static uint32_t sacked_below_nxt(struct sl_stack *s, const struct sl_tcp_sock *tp)
{
	uint32_t n = 0, steps = 0;

	if (!tp->sacked_bytes || !SEQ_LT(tp->snd_nxt, tp->snd_max) ||
	    (tp->tflags & SL_TF_RECOVERY))
		return 0;
	for (uint32_t i = tp->sndq_head; sl_buf_next(s, i, &steps); i = sl_buf(s, i)->next_idx) {
		const struct sluice_buf *b = sl_buf(s, i);

		if (!SEQ_LT(b->seq, tp->snd_nxt))
			break;
		if (b->flags & SL_TBF_SACKED)
			n += b->aux;
	}
	return n;
}
/* Cut buffer idx after at payload bytes; the tail goes to a new buffer
 * behind it.  The one copy on the send path, taken only when the peer's
 * window is smaller than a queued segment. */
static int split_buf(struct sl_stack *s, struct sl_tcp_sock *tp, uint32_t idx, uint32_t at)
{
	struct sluice_buf *b = sl_buf(s, idx), *nb;
	uint32_t n = sl_buf_alloc(s);

	if (n == SLUICE_IDX_NONE)
		return -ENOBUFS;
	nb = sl_buf(s, n);
	nb->seq = b->seq + at;
	nb->aux = (uint16_t)(b->aux - at);
	/* A retransmission may be split too: the tail was sent as well. */
	nb->flags = b->flags & (SL_TBF_SENT | SL_TBF_REXMIT | SL_TBF_PSH);
	b->flags &= (uint16_t)~SL_TBF_PSH;	/* the mark stays at the end */
	nb->ts_us = b->ts_us;
	memcpy(sl_buf_base(s, n) + SL_TCP_DATA_OFF, sl_buf_base(s, idx) + SL_TCP_DATA_OFF + at,
	       nb->aux);
	b->aux = (uint16_t)at;
	nb->next_idx = b->next_idx;
	b->next_idx = n;
	if (tp->sndq_tail == idx)
		tp->sndq_tail = n;
	return 0;
}

uint32_t sl_tcp_flight(const struct sl_tcp_sock *tp)
{
	return tp->snd_nxt - tp->snd_una;
}

void sl_tcp_output(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t idx = tp->sndq_head, last = SLUICE_IDX_NONE, steps = 0, chain_last, clen, seglen;
	uint32_t sacked, max_before = tp->snd_max;
	bool sent = false, local = sl_ip_is_local(s, so->raddr);
	unsigned int n;
	bool fin;

	if (so->state < SL_TCP_ESTABLISHED)
		return;
	/* Nothing queued that was not sent, no FIN and no ACK due: only the
	 * timers (the usual call after a segment that brought data). */
	if (tp->snd_nxt == tp->snd_end && !(tp->tflags & (SL_TF_ACKNOW | SL_TF_FIN_Q))) {
		sl_tcp_arm(s, so);
		return;
	}
	/* A path MTU changed (learnt by another socket, or forgotten): the
	 * MSS follows, as Linux's tcp_current_mss() checks dst_mtu(). */
	if (tp->pmtu_gen != (uint16_t)s->lib->pmtu_gen && !local)
		sl_tcp_set_mss(s, so);
	tp->gso_cnt = 0;	/* a pass starts a GSO packet (psh()) */
	if (SEQ_LT(tp->snd_nxt, tp->snd_una))
		tp->snd_nxt = tp->snd_una;
	sacked = sacked_below_nxt(s, tp);
	/* RFC 5681 4.1: nothing in flight, data to send, and no segment
	 * received for more than an RTO: restart from the restart window. */
	if (tp->snd_una == tp->snd_max && SEQ_LT(tp->snd_nxt, tp->snd_end) &&
	    now_us - tp->last_rx_us > tp->rto_us)
		sl_tcp_cc_idle(tp);
	/* Resume where the last pass stopped: buffers before it are sent. */
	if (sl_buf_some(s, tp->sndq_hint) && SEQ_LEQ(sl_buf(s, tp->sndq_hint)->seq, tp->snd_nxt))
		idx = tp->sndq_hint;
	while (sl_buf_next(s, idx, &steps)) {
		last = idx;
		struct sluice_buf *b = sl_buf(s, idx);
		uint32_t end = b->seq + b->aux, len = b->aux, wnd, usable, rwnd_left;
		bool rexmit;

		if (SEQ_LEQ(end, tp->snd_nxt)) {
			idx = b->next_idx;
			continue;
		}
		rexmit = SEQ_LT(b->seq, tp->snd_max);
		if (rexmit && (b->flags & SL_TBF_SACKED)) {
			tp->snd_nxt = end;
			sacked += len;
			idx = b->next_idx;
			continue;
		}
		/* A length no buffer holds (another process scribbled on
		 * the region) would copy or checksum past the buffer. */
		if (len > SL_TCP_BUF_PAYLOAD(s)) {
			sl_corrupt(s, SL_C_corrupt_buf_len, idx);
			break;
		}
		if (len > tp->mss && tp->mss && !local) {
			/* The MSS shrank after this was queued (TCP_MAXSEG, a
			 * smaller path MTU): no segment may exceed it (RFC 9293
			 * 3.7.1), and one larger than a cwnd of one MSS would
			 * never go (fuzz_tcp found the stall). */
			if (split_buf(s, tp, idx, tp->mss))
				break;
			len = tp->mss;
			end = b->seq + len;
		}
		wnd = tp->cwnd;
		/* RFC 3042 Limited Transmit: each of the first two duplicate
		 * ACKs lets one new segment go beyond cwnd (cwnd itself
		 * unchanged): it left the network, and the ACKs its sending
		 * brings back may reach the fast retransmit threshold. */
		if (!rexmit && tp->dupacks && tp->dupacks < SL_TCP_DUPACK_THRESH &&
		    !(tp->tflags & SL_TF_RECOVERY) && tp->snd_nxt == tp->snd_max)
			wnd += (uint32_t)tp->dupacks * tp->mss;
		if (tp->snd_wnd < wnd)
			wnd = tp->snd_wnd;
		usable = SEQ_GT(tp->snd_una + wnd + sacked, tp->snd_nxt) ?
				 tp->snd_una + wnd + sacked - tp->snd_nxt : 0;
		rwnd_left = SEQ_GT(tp->snd_una + tp->snd_wnd, tp->snd_nxt) ?
				    tp->snd_una + tp->snd_wnd - tp->snd_nxt : 0;
		/* A SACK recovery sends what PRR left it (tcp_input.c,
		 * prr_ack()): cwnd there counts the pipe, not the flight. */
		if ((tp->tflags & (SL_TF_RECOVERY | SL_TF_SACK)) == (SL_TF_RECOVERY | SL_TF_SACK))
			usable = tp->prr_room < rwnd_left ? tp->prr_room : rwnd_left;
		if (len > usable && rexmit && usable && rwnd_left < len && b->seq == tp->snd_nxt) {
			/* RFC 9293 3.8.6.2.1: the peer's window shrank below a
			 * segment we must send again; send what fits. */
			if (split_buf(s, tp, idx, usable))
				break;
			len = usable;
			end = b->seq + len;
		} else if (len > usable) {
			/* RFC 9293 3.8.6.2.1: with nothing in flight and a peer
			 * window smaller than the segment, send what fits. */
			if (rexmit || usable == 0 || rwnd_left >= len ||
			    tp->snd_nxt != tp->snd_una ||
			    (usable < (tp->max_sndwnd / 2 < tp->mss ? tp->max_sndwnd / 2 : tp->mss) &&
			     !(tp->tflags & SL_TF_OVERRIDE)) ||
			    split_buf(s, tp, idx, usable))
				break;
			len = usable;
			end = b->seq + len;
		}
		/* Nagle (RFC 896, RFC 9293 3.7.4) with Minshall's variant
		 * (Linux tcp_nagle_check()): a short last segment waits while
		 * an earlier short one is unacknowledged, unless TCP_NODELAY,
		 * FIN or urgent mode (Linux's tcp_nagle_test()).  Full
		 * segments in flight do not hold it: the tail of a large
		 * write goes at once, not after the peer's delayed ACK. */
		if (!rexmit && len < tp->mss && idx == tp->sndq_tail &&
		    SEQ_GT(tp->snd_sml, tp->snd_una) && SEQ_LEQ(tp->snd_sml, tp->snd_nxt) &&
		    !(so->flags & SL_SF_NODELAY) && !(tp->tflags & (SL_TF_FIN_Q | SL_TF_URG)))
			break;
		/* TCP_CORK (tcp(7)): a short last segment waits even with
		 * nothing in flight and TCP_NODELAY on, until uncorked, a
		 * full segment, the FIN, or the 200 ms ceiling. */
		if (!rexmit && len < tp->mss && idx == tp->sndq_tail &&
		    (tp->tflags & SL_TF_CORK) && !(tp->tflags & (SL_TF_FIN_Q | SL_TF_URG))) {
			if (!tp->t_cork)
				tp->t_cork = now_us + SL_TCP_CORK_US;
			break;
		}
		n = 0;
		clen = len;
		/* Not in urgent mode: the receiver takes a segment with URG
		 * whole only (tcp_input.c, chain_ok()). */
		if (!rexmit && local && !(tp->tflags & SL_TF_URG))
			n = chain_more(s, so, idx, usable, &chain_last, &clen);
		seglen = len;
		fin = false;
		if (n && !xmit_chain(s, so, idx, n, chain_last, clen, now_us)) {
			seglen = clen;
			b = sl_buf(s, chain_last);
			end = b->seq + b->aux;
			idx = chain_last;
			last = idx;
		} else {
			int ret;

			fin = fin_rides(s, tp, idx, idx);
			ret = sl_tcp_xmit_buf(s, so, idx, now_us);
			if (ret == -ENOBUFS || ret == -ENOTRECOVERABLE)
				break;
		}
		/* A FIN that rode on the segment takes its sequence number. */
		end += fin;
		tp->snd_nxt = end;
		/* Linux tcp_event_data_sent(): data sent within the ACK
		 * timeout of data coming in is an exchange
		 * (inet_csk_enter_pingpong_mode()); none came yet, none is. */
		if ((uint32_t)(now_us / 1000) - tp->lrcv_ms < tp->ato_ms)
			tp->tflags |= SL_TF_PINGPONG;
		if ((tp->tflags & (SL_TF_RECOVERY | SL_TF_SACK)) == (SL_TF_RECOVERY | SL_TF_SACK)) {
			tp->prr_room -= seglen < tp->prr_room ? seglen : tp->prr_room;
			tp->prr_out += seglen;
		} else if (tp->ecn & SL_ECN_CWR_WND) {
			tp->prr_out += seglen;	/* an ECN reduction's PRR */
		}
		if (SEQ_GT(end, tp->snd_max))
			tp->snd_max = end;
		if (!rexmit && seglen < tp->mss)
			tp->snd_sml = end;
		if (!tp->t_rexmt)
			tp->t_rexmt = now_us + tp->rto_us;
		sent = true;
		idx = b->next_idx;
	}
	tp->sndq_hint = idx < s->n_bufs ? idx : last;
	/* The FIN follows the last byte (RFC 9293 3.10.4). */
	if ((tp->tflags & SL_TF_FIN_Q) && tp->snd_nxt == tp->snd_end && idx >= s->n_bufs) {
		if (SEQ_GT(tp->snd_max, tp->snd_end)) {
			/* Sent before (an RTO went back): again, and
			 * counted as Linux's total_retrans counts it. */
			sl_count(s, SL_C_tcp_retransmit);
			so->retransmits++;
		}
		sl_tcp_send_ctl(s, so, TH_FIN_ | TH_ACK_, tp->snd_end, now_us);
		tp->tflags |= SL_TF_FIN_ALONE;
		tp->snd_nxt = tp->snd_end + 1;
		if (SEQ_GT(tp->snd_nxt, tp->snd_max))
			tp->snd_max = tp->snd_nxt;
		if (!tp->t_rexmt)
			tp->t_rexmt = now_us + tp->rto_us;
		sent = true;
	}
	if (sent) {
		sl_tcp_tlp_arm(so, now_us);
		/* A persist episode is over: its backoff must not count as
		 * RTOs (SL_TCP_DATA_RETRIES, RFC 5681 eq. 4 in cc_rto). */
		if ((tp->tflags & SL_TF_PROBE) && tp->t_persist)
			tp->backoff = 0;
		tp->t_persist = 0;
		tp->tflags &= ~SL_TF_PROBE;
		/* TCP_NOTSENT_LOWAT: writable again (tcp.c). */
		if (__builtin_expect(tp->tflags & SL_TF_LOWAT, 0))
			sl_tcp_notsent_sent(s, so, max_before);
	} else if (SEQ_LT(tp->snd_nxt, tp->snd_end) && tp->snd_una == tp->snd_max &&
		   !tp->t_persist) {
		/* RFC 9293 3.8.6.1: a zero window is probed. */
		uint64_t d = tp->rto_us < SL_TCP_RTO_MIN_US ? SL_TCP_RTO_MIN_US : tp->rto_us;

		tp->t_persist = now_us + d;
		tp->tflags |= SL_TF_PROBE;
		tp->keep_probes = 0;
		tp->backoff = 0;
	}
	if (tp->tflags & SL_TF_ACKNOW)
		sl_tcp_send_ack(s, so, now_us);
	sl_tcp_arm(s, so);
}
