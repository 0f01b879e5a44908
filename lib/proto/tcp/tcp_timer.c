// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP timers: one wheel deadline per socket, the earliest of its RTO,
 * delayed-ACK, persist, keepalive and close (TIME-WAIT, FIN-WAIT-2)
 * deadlines (smoltcp's poll_at); RTT estimation and the RTO as Linux's,
 * RFC 6298's backoff.
 */
#include <errno.h>

#include "proto/proto.h"

void sl_tcp_arm(struct sl_stack *s, struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	/* The earliest deadline set: 0 (unset) less one is the largest
	 * value, so a plain minimum of each less one skips it (no branch:
	 * this runs after every segment in and every send). */
	uint64_t m = tp->t_rexmt - 1, due;

	m = tp->t_dack - 1 < m ? tp->t_dack - 1 : m;
	m = tp->t_persist - 1 < m ? tp->t_persist - 1 : m;
	m = tp->t_keep - 1 < m ? tp->t_keep - 1 : m;
	m = tp->t_close - 1 < m ? tp->t_close - 1 : m;
	m = tp->t_cork - 1 < m ? tp->t_cork - 1 : m;
	m = tp->t_tlp - 1 < m ? tp->t_tlp - 1 : m;
	m = tp->t_reo - 1 < m ? tp->t_reo - 1 : m;
	m = tp->t_pool - 1 < m ? tp->t_pool - 1 : m;
	due = m + 1;
	if (!due) {
		sl_timer_cancel(s, so);
		return;
	}
	/* Round up: the wheel fires at or after the millisecond. */
	due = (due + 999) / 1000;
	if (so->wheel_due_ms != due)
		sl_timer_set(s, so, due);
}

/*
 * HyStart's delay test, as Linux's CUBIC does it by default (hystart=1,
 * hystart_detect's delay part; Ha and Rhee, "Taming the elephants"): in
 * slow start from 16 segments, the least of the first 8 RTT samples of a
 * round beyond min_RTT + min_RTT/8 (clamped to 4-16 ms) means a queue is
 * building: slow start ends there (ssthresh = cwnd) rather than at the
 * loss of a burst that overflows it.  Found on the VM bench: with the
 * send buffer grown, slow start on a path limited by the emulated CPUs
 * went on until netem's 1,000-packet queue dropped thousands of segments.
 */
static void hystart_delay(struct sl_tcp_sock *tp, uint32_t r)
{
	uint32_t thresh;

	if ((tp->tflags & SL_TF_RENO) || tp->cwnd >= tp->ssthresh ||
	    tp->cwnd < SL_TCP_HS_LOW_WINDOW * (uint32_t)tp->mss)
		return;
	if (SEQ_GEQ(tp->snd_una, tp->hs_end_seq) || !tp->hs_end_seq) {
		/* A new round: what is sent now is acknowledged a round on. */
		tp->hs_end_seq = tp->snd_nxt;
		tp->hs_rtt_us = UINT32_MAX;
		tp->hs_samples = 0;
	}
	if (tp->hs_samples >= SL_TCP_HS_SAMPLES)
		return;
	if (r < tp->hs_rtt_us)
		tp->hs_rtt_us = r;
	if (++tp->hs_samples < SL_TCP_HS_SAMPLES)
		return;
	thresh = tp->min_rtt_us / 8;
	if (thresh < SL_TCP_HS_DELAY_MIN_US)
		thresh = SL_TCP_HS_DELAY_MIN_US;
	if (thresh > SL_TCP_HS_DELAY_MAX_US)
		thresh = SL_TCP_HS_DELAY_MAX_US;
	if (tp->hs_rtt_us > tp->min_rtt_us + thresh)
		tp->ssthresh = tp->cwnd;
}

/*
 * An RTT sample: r for the estimator (Linux's seq_rtt_us, from the oldest
 * segment the ACK delivered), ca_r for min_RTT and HyStart (its ca_rtt_us,
 * from the newest).  The estimator and the RTO are Linux's
 * tcp_rtt_estimator() and tcp_set_rto(), not RFC 6298's SRTT + 4 RTTVAR
 * at least 200 ms:
 *   SRTT   += (R - SRTT) / 8, kept scaled by 8;
 *   mdev    = 3/4 mdev + |R - SRTT| (4 x the mean deviation), with an
 *            eighth of that gain when R is below SRTT (Eifel-like);
 *   RTTVAR  = the most mdev of a window (a round: until SND.UNA passes
 *            what was SND.MAX when it began), at least RTO_MIN; at a new
 *            window it falls by a quarter of its distance to that most;
 *   RTO     = SRTT + RTTVAR (at most RTO_MAX).
 * On a steady path that is SRTT + 200 ms where RFC 6298's is 200 ms: on
 * the VM's lossy bench (12 ms path) a stall of the ACKs a little over
 * 200 ms fired this stack's RTO and not the kernel's (25 RTOs against 5
 * at 5 % loss, 19 of them spurious; tests/bench/README.md).  The first sample: SRTT = R, mdev
 * 2R, RTTVAR max(2R, RTO_MIN), so RTO = max(3R, R + 200 ms).  Linux
 * rounds the RTO up to a jiffy (4 ms at HZ 250); here it is in µs and the
 * timer wheel rounds up to 1 ms.
 */
void sl_tcp_rtt_sample(struct sl_tcp_sock *tp, uint32_t r, uint32_t ca_r)
{
	uint32_t srtt8 = (tp->srtt_us << 3) | (tp->srtt_lo & 7);
	int64_t m = r ? r : 1;
	uint64_t rto;

	if (!ca_r)
		ca_r = 1;
	if (!tp->min_rtt_us || ca_r < tp->min_rtt_us)
		tp->min_rtt_us = ca_r;
	hystart_delay(tp, ca_r);
	if (srtt8) {
		m -= srtt8 >> 3;		/* the error */
		srtt8 += (uint32_t)m;		/* SRTT = 7/8 SRTT + 1/8 R */
		if (m < 0) {
			m = -m - (tp->mdev_us >> 2);
			if (m > 0)
				m >>= 3;	/* RTT falling: 1/32, not 1/4 */
		} else {
			m -= tp->mdev_us >> 2;
		}
		tp->mdev_us += (uint32_t)m;	/* mdev = 3/4 mdev + 1/4 |err| */
		if (tp->mdev_us > tp->mdev_max_us) {
			tp->mdev_max_us = tp->mdev_us;
			if (tp->mdev_max_us > tp->rttvar_us)
				tp->rttvar_us = tp->mdev_max_us;
		}
		if (SEQ_GT(tp->snd_una, tp->rtt_seq)) {
			/* A window ended: RTTVAR decays towards its most. */
			if (tp->mdev_max_us < tp->rttvar_us)
				tp->rttvar_us -= (tp->rttvar_us - tp->mdev_max_us) >> 2;
			tp->rtt_seq = tp->snd_max;
			tp->mdev_max_us = SL_TCP_RTO_MIN_US;
		}
	} else {
		srtt8 = (uint32_t)m << 3;
		tp->mdev_us = (uint32_t)m << 1;	/* RTO = 3 R */
		tp->rttvar_us = tp->mdev_us > SL_TCP_RTO_MIN_US ? tp->mdev_us : SL_TCP_RTO_MIN_US;
		tp->mdev_max_us = tp->rttvar_us;
		tp->rtt_seq = tp->snd_max;
	}
	if (!srtt8)
		srtt8 = 1;
	tp->srtt_us = srtt8 >> 3;
	tp->srtt_lo = (uint8_t)(srtt8 & 7);
	rto = (uint64_t)(srtt8 >> 3) + tp->rttvar_us;
	tp->rto_us = rto > SL_TCP_RTO_MAX_US ? SL_TCP_RTO_MAX_US : (uint32_t)rto;
	tp->backoff = 0;		/* RFC 6298 5.7, Linux: a valid sample */
}

/* RFC 6298 5.1/5.3: restart the timer if data is outstanding. */
void sl_tcp_rearm_rexmt(struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	tp->t_rexmt = tp->snd_una != tp->snd_max ? now_us + tp->rto_us : 0;
}

/*
 * RFC 8985 7.2: schedule a tail loss probe, PTO after now, for a SACK
 * connection with data outstanding, not in recovery or after an RTO
 * (Linux: only in CA_Open or CA_Disorder) and with no probe out. PTO as
 * Linux's tcp_schedule_loss_probe(): 2 SRTT plus 2 ms, or plus RTO_MIN
 * (the receiver's delayed ACK) with one segment out; at most when the
 * RTO would fire, which the probe then replaces (the RTO runs again from
 * the probe, not backed off).
 */
void sl_tcp_tlp_arm(struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint64_t pto;

	tp->t_tlp = 0;
	if ((tp->tflags & (SL_TF_SACK | SL_TF_RECOVERY)) != SL_TF_SACK || (tp->tflags & SL_TF_TLP) ||
	    (tp->undo & SL_UNDO_LOSS) || !tp->srtt_us || tp->backoff ||
	    tp->snd_una == tp->snd_max || !tp->snd_wnd || so->state < SL_TCP_ESTABLISHED)
		return;
	pto = 2ull * tp->srtt_us;
	if (tp->snd_max - tp->snd_una <= tp->mss)
		pto += SL_TCP_RTO_MIN_US;
	else
		pto += SL_TCP_TLP_MIN_US;
	/* The RTO sooner: the probe goes at its time, in its place (Linux's
	 * one timer; sl_tcp_timer() runs the probe first). */
	if (tp->t_rexmt && now_us + pto >= tp->t_rexmt)
		pto = tp->t_rexmt > now_us ? tp->t_rexmt - now_us : 0;
	tp->t_tlp = now_us + pto;
}

void sl_tcp_keep_reset(struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	tp->keep_probes = (tp->tflags & SL_TF_PROBE) ? tp->keep_probes : 0;
	if ((so->flags & SL_SF_KEEPALIVE) && so->state >= SL_TCP_ESTABLISHED &&
	    so->state <= SL_TCP_CLOSE_WAIT)
		tp->t_keep = now_us + (uint64_t)tp->keep_idle_s * 1000000;
	else
		tp->t_keep = 0;
}

static void backoff_rto(struct sl_tcp_sock *tp)
{
	uint64_t rto = (uint64_t)tp->rto_us * 2;	/* RFC 6298 5.5 */

	tp->rto_us = rto > SL_TCP_RTO_MAX_US ? SL_TCP_RTO_MAX_US : (uint32_t)rto;
	if (tp->backoff < 255)
		tp->backoff++;
}

/*
 * RFC 6298 5.4: go back to the first unacknowledged byte and send again
 * what is not SACKed (sl_tcp_output() steps over SACKed data, and counts
 * it out of the flight).  The SACK marks stay, as Linux's
 * tcp_timeout_mark_lost() keeps them, unless the first unacknowledged
 * segment is marked: the receiver then dropped data it had SACKed
 * (reneging, RFC 2018 8), so none of the marks is believed.  Before, every
 * RTO dropped them, and a segment SACKed before it went again unless a
 * later ACK repeated its block first.
 */
void sl_tcp_go_back(struct sl_stack *s, struct sl_tcp_sock *tp)
{
	uint32_t steps = 0;
	bool reneg = sl_buf_some(s, tp->sndq_head) &&
		     (sl_buf(s, tp->sndq_head)->flags & SL_TBF_SACKED);
	uint16_t drop = reneg ? SL_TBF_SACKED | SL_TBF_RECOV | SL_TBF_LOST :
				SL_TBF_RECOV | SL_TBF_LOST;

	for (uint32_t i = tp->sndq_head; sl_buf_next(s, i, &steps);
	     i = sl_buf(s, i)->next_idx)
		sl_buf(s, i)->flags &= (uint16_t)~drop;
	if (reneg || !tp->sacked_bytes) {
		tp->sacked_bytes = 0;
		tp->rack &= (uint8_t)~SL_RACK_HIGH;
	}
	tp->t_tlp = 0;
	tp->t_reo = 0;
	tp->rack &= (uint8_t)~SL_RACK_ADVANCED;
	tp->tflags &= ~(SL_TF_TLP | SL_TF_TLP_RETX);
	tp->snd_nxt = tp->snd_una;
	tp->sndq_hint = SLUICE_IDX_NONE;
	tp->tflags &= ~SL_TF_RECOVERY;
	tp->recover = tp->snd_max;
	tp->dupacks = 0;
}

/*
 * TCP_USER_TIMEOUT (RFC 5482; tcp(7)): data unacknowledged for longer ends
 * the connection, whatever the retry count, and the timer fires no later
 * than that (Linux tcp_clamp_rto_to_user_timeout()).
 */
static bool user_timed_out(const struct sl_tcp_sock *tp, uint64_t now_us)
{
	uint32_t ut = SL_READ_ONCE(tp->user_timeout_ms);

	return ut && tp->rexmt_first_us && now_us - tp->rexmt_first_us >= (uint64_t)ut * 1000;
}

static uint64_t clamp_to_user_timeout(const struct sl_tcp_sock *tp, uint64_t due)
{
	uint32_t ut = SL_READ_ONCE(tp->user_timeout_ms);
	uint64_t end = tp->rexmt_first_us + (uint64_t)ut * 1000;

	return ut && tp->rexmt_first_us && end < due ? end : due;
}

/* The peer shrank its window to zero under data in flight (RFC 9293
 * 3.8.6.2.1 lets it, if it should not).  Nothing may be sent again, so
 * the RTO sends a zero-window probe instead, and, as the persist timer
 * (RFC 1122 4.2.2.17; Linux tcp_retransmit_timer), the connection ends
 * only when probes go unanswered, not after so many RTOs.  An orphan is
 * timed out as usual. */
static void on_rexmt_zero_window(struct sl_stack *s, struct sl_sock *so, unsigned int limit,
				 uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint64_t rto = (uint64_t)tp->rto_us * 2;

	if (tp->keep_probes >= limit || user_timed_out(tp, now_us)) {
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_done(s, so, tp->soft_err ? tp->soft_err : ETIMEDOUT);
		return;
	}
	sl_tcp_go_back(s, tp);
	sl_tcp_send_ctl(s, so, TH_ACK_, tp->snd_una - 1, now_us);
	tp->keep_probes++;		/* reset by any acceptable ACK (tcp_input.c) */
	tp->tflags |= SL_TF_PROBE;
	tp->rto_us = rto > SL_TCP_RTO_MAX_US ? SL_TCP_RTO_MAX_US : (uint32_t)rto;
	tp->t_rexmt = clamp_to_user_timeout(tp, now_us + tp->rto_us);
}

/*
 * Black-hole detection (RFC 4821 as Linux's tcp_mtu_probing=1 does it,
 * tcp_write_timeout() and tcp_mtu_probing()): data unacknowledged for as
 * long as tcp_retries1 (3) RTOs from the 200 ms minimum take (3 s) and
 * no ICMP, so the path may drop large packets silently.  The first time
 * the MSS falls to tcp_base_mss (1024), each RTO after that halves it,
 * down to tcp_mtu_probe_floor (48).  Searching back up is not done.
 */
static void blackhole(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint64_t wait = ((2u << SL_TCP_RETRIES1) - 1) * (uint64_t)SL_TCP_RTO_MIN_US;

	if (sl_ip_is_local(s, so->raddr) || !tp->rexmt_first_us ||
	    now_us - tp->rexmt_first_us < wait || tp->mtup >= 6)
		return;
	tp->mtup++;
	sl_tcp_set_mss(s, so);
	sl_count(s, SL_C_tcp_mtup_blackhole);
}

/* The retransmission timer expired (RFC 6298 5.4-5.7). */
static void on_rexmt(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	unsigned int limit;
	bool reduce;

	tp->t_rexmt = 0;
	if (so->state == SL_TCP_SYN_SENT || so->state == SL_TCP_SYN_RECEIVED) {
		/* TCP_SYNCNT, else the defaults; a deferred child keeps
		 * offering its SYN-ACK for as long as it defers. */
		limit = tp->syn_retries ? tp->syn_retries :
			so->state == SL_TCP_SYN_SENT ?
			(s->tcp_syn_retries ? s->tcp_syn_retries : SL_TCP_SYN_RETRIES) :
			(s->tcp_synack_retries ? s->tcp_synack_retries : SL_TCP_SYNACK_RETRIES);
		if (so->state == SL_TCP_SYN_RECEIVED && limit < tp->defer_accept)
			limit = tp->defer_accept;
		if (tp->backoff >= limit) {
			sl_tcp_done(s, so, tp->soft_err ? tp->soft_err : ETIMEDOUT);
			return;
		}
		sl_count(s, SL_C_tcp_rto);
		sl_count(s, SL_C_tcp_retransmit);
		so->retransmits++;
		backoff_rto(tp);
		/* RFC 6298 5.7: after a lost SYN, restart from 3 s would apply;
		 * like Linux we keep doubling from 1 s. */
		sl_tcp_send_syn(s, so, now_us);
		tp->t_rexmt = now_us + tp->rto_us;
		return;
	}
	if (tp->snd_una == tp->snd_max)
		return;
	/* The first expiry of a series: the data went out one RTO ago. */
	if (!tp->backoff && !(tp->tflags & SL_TF_PROBE))
		tp->rexmt_first_us = now_us > tp->rto_us ? now_us - tp->rto_us : 0;
	if (user_timed_out(tp, now_us)) {
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_done(s, so, ETIMEDOUT);
		return;
	}
	limit = (so->flags & SL_SF_ORPHAN) ? SL_TCP_ORPHAN_RETRIES : SL_TCP_DATA_RETRIES;
	/* Data outstanding: a FIN alone is sent into a zero window (and
	 * taken there, as Linux does), so it is retransmitted as usual. */
	if (!tp->snd_wnd && !(so->flags & SL_SF_ORPHAN) && SEQ_LT(tp->snd_una, tp->snd_end)) {
		on_rexmt_zero_window(s, so, limit, now_us);
		return;
	}
	if (tp->backoff >= limit) {
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_done(s, so, tp->soft_err ? tp->soft_err : ETIMEDOUT);
		return;
	}
	sl_count(s, SL_C_tcp_rto);
	blackhole(s, so, now_us);
	reduce = sl_tcp_undo_rto(s, so);
	backoff_rto(tp);
	sl_tcp_cc_rto(tp, reduce);
	sl_tcp_go_back(s, tp);
	sl_tcp_output(s, so, now_us);
	tp->t_rexmt = clamp_to_user_timeout(tp, now_us + tp->rto_us);
}

/* RFC 8985 7.3: the probe. New data if the peer's window takes a
 * segment of it (cwnd notwithstanding), else the last segment sent
 * again; then the RTO runs from now. */
static void on_tlp(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t idx, last = SLUICE_IDX_NONE, steps = 0, cwnd = tp->cwnd;

	tp->t_tlp = 0;
	if ((tp->tflags & (SL_TF_SACK | SL_TF_RECOVERY | SL_TF_TLP)) != SL_TF_SACK ||
	    tp->snd_una == tp->snd_max)
		return;
	sl_count(s, SL_C_tcp_loss_probe);
	tp->tflags |= SL_TF_TLP;
	tp->tflags &= ~SL_TF_TLP_RETX;
	if (tp->snd_nxt == tp->snd_max && SEQ_LT(tp->snd_nxt, tp->snd_end) &&
	    SEQ_GEQ(tp->snd_una + tp->snd_wnd, tp->snd_nxt + tp->mss)) {
		tp->cwnd = tp->snd_nxt - tp->snd_una + tp->mss;
		tp->tflags |= SL_TF_PROBING;
		sl_tcp_output(s, so, now_us);
		tp->tflags &= ~SL_TF_PROBING;
		tp->cwnd = cwnd;
	} else if ((tp->tflags & (SL_TF_FIN_Q | SL_TF_FIN_ALONE)) == (SL_TF_FIN_Q | SL_TF_FIN_ALONE) &&
		   tp->snd_max == tp->snd_end + 1) {
		/* The last segment sent was a FIN alone: it is the probe. */
		tp->tflags |= SL_TF_TLP_RETX;
		sl_count(s, SL_C_tcp_retransmit);
		so->retransmits++;
		sl_tcp_send_ctl(s, so, TH_FIN_ | TH_ACK_, tp->snd_end, now_us);
	} else {
		for (idx = tp->sndq_head; sl_buf_next(s, idx, &steps); idx = sl_buf(s, idx)->next_idx) {
			const struct sluice_buf *b = sl_buf(s, idx);

			if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
				break;
			if (!(b->flags & SL_TBF_SACKED))
				last = idx;
		}
		if (last != SLUICE_IDX_NONE) {
			tp->tflags |= SL_TF_TLP_RETX;
			sl_tcp_xmit_buf(s, so, last, now_us);
		}
	}
	tp->tlp_high = tp->snd_max;
	tp->t_tlp = 0;
	tp->t_rexmt = clamp_to_user_timeout(tp, now_us + tp->rto_us);
}

/* The persist interval: the RTO (at least RTO_MIN) doubled per backoff.
 * The shift is bounded (the backoff, from the region, may be anything). */
static uint64_t persist_delay(const struct sl_tcp_sock *tp)
{
	uint8_t shift = SL_READ_ONCE(tp->backoff);

	return (uint64_t)(tp->rto_us < SL_TCP_RTO_MIN_US ? SL_TCP_RTO_MIN_US : tp->rto_us)
	       << (shift > 16 ? 16 : shift);
}

static void on_persist(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint64_t d;

	tp->t_persist = 0;
	if (!SEQ_LT(tp->snd_nxt, tp->snd_end) || tp->snd_una != tp->snd_max) {
		tp->tflags &= ~SL_TF_PROBE;
		tp->backoff = 0;	/* that was persist's, not the RTO's */
		return;
	}
	d = persist_delay(tp);
	/* Unanswered probes end the connection as unanswered retransmissions
	 * do (Linux tcp_probe_timer); a peer that answers keeps it open.  An
	 * orphan (its program has closed it) goes once its backoff reaches
	 * RTO_MAX, answered or not (Linux tcp_probe_timer with
	 * tcp_orphan_retries 0), or a peer that never reads would pin its
	 * send queue for ever (test_hostile_link: test_never_reading_peer). */
	if (tp->keep_probes >= ((so->flags & SL_SF_ORPHAN) ? SL_TCP_ORPHAN_RETRIES :
							      SL_TCP_DATA_RETRIES) ||
	    ((so->flags & SL_SF_ORPHAN) && d >= SL_TCP_RTO_MAX_US)) {
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_done(s, so, tp->soft_err ? tp->soft_err : ETIMEDOUT);
		return;
	}
	/* A window that is open, but too small for sender SWS avoidance
	 * to use (RFC 9293 3.8.6.2.1: less than a segment and less than
	 * half the largest the peer offered), would hold the data for ever
	 * if the peer's window never grows (a tiny SO_RCVBUF): the override
	 * timeout of RFC 1122 4.2.3.4 (4) sends what fits, as Linux's
	 * window probe does (tcp_write_wakeup). */
	if (SEQ_GT(tp->snd_una + tp->snd_wnd, tp->snd_nxt)) {
		uint8_t backoff = tp->backoff, probes = tp->keep_probes;

		tp->tflags |= SL_TF_OVERRIDE;
		sl_tcp_output(s, so, now_us);
		tp->tflags &= ~SL_TF_OVERRIDE;
		if (tp->snd_una != tp->snd_max)
			return;	/* sent: the RTO covers it now */
		/* Nothing went, and output armed persist afresh: it is still
		 * this episode, whose backoff must grow (or an orphan that
		 * cannot send would probe for ever: fuzz_tcp found it). */
		tp->backoff = backoff;
		tp->keep_probes = probes;
	}
	/* A probe below the window makes the peer answer with its window
	 * (RFC 9293 3.8.6.1; the form Linux and BSD send). */
	sl_tcp_send_ctl(s, so, TH_ACK_, tp->snd_una - 1, now_us);
	tp->keep_probes++;
	if (tp->backoff < 16)
		tp->backoff++;
	d = persist_delay(tp);
	if (d > SL_TCP_RTO_MAX_US)
		d = SL_TCP_RTO_MAX_US;
	tp->t_persist = now_us + d;
}

static void on_keep(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	tp->t_keep = 0;
	if (!(so->flags & SL_SF_KEEPALIVE) || so->state < SL_TCP_ESTABLISHED ||
	    so->state > SL_TCP_CLOSE_WAIT)
		return;
	if (tp->snd_una != tp->snd_max || tp->t_persist) {
		/* Data in flight: the RTO watches the peer. */
		tp->t_keep = now_us + (uint64_t)tp->keep_idle_s * 1000000;
		return;
	}
	if (tp->keep_probes >= tp->keep_cnt) {
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_done(s, so, tp->soft_err ? tp->soft_err : ETIMEDOUT);
		return;
	}
	/* RFC 1122 4.2.3.6: SEG.SEQ = SND.NXT - 1, no data. */
	sl_tcp_send_ctl(s, so, TH_ACK_, tp->snd_una - 1, now_us);
	tp->keep_probes++;
	tp->t_keep = now_us + (uint64_t)tp->keep_intvl_s * 1000000;
}

void sl_tcp_timer(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t gen = so->kp.gen;

	if (so->state == SL_TCP_CLOSED || so->state == SL_TCP_LISTEN)
		return;
	if (tp->t_close && tp->t_close <= now_us) {
		/* TIME-WAIT over (RFC 9293 3.6), or an orphan's FIN-WAIT-2;
		 * with TCP_LINGER2 -1 that one ends in a reset (Linux). */
		tp->t_close = 0;
		if (so->state == SL_TCP_FIN_WAIT_2 && tp->linger2_s < 0)
			sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_done(s, so, 0);
		return;
	}
	/* A probe due with the RTO goes in its place (on_tlp() moves the
	 * RTO on). */
	if (tp->t_tlp && tp->t_tlp <= now_us) {
		on_tlp(s, so, now_us);
		if (so->type != SL_SOCK_TCP || so->kp.gen != gen || so->state == SL_TCP_CLOSED)
			return;
	}
	if (tp->t_rexmt && tp->t_rexmt <= now_us) {
		on_rexmt(s, so, now_us);
		if (so->type != SL_SOCK_TCP || so->kp.gen != gen || so->state == SL_TCP_CLOSED)
			return;
	}
	if (tp->t_reo && tp->t_reo <= now_us) {
		sl_tcp_rack_timeout(s, so, now_us);
		if (so->type != SL_SOCK_TCP || so->kp.gen != gen || so->state == SL_TCP_CLOSED)
			return;
	}
	if (tp->t_persist && tp->t_persist <= now_us) {
		on_persist(s, so, now_us);
		if (so->type != SL_SOCK_TCP || so->kp.gen != gen || so->state == SL_TCP_CLOSED)
			return;
	}
	if (tp->t_dack && tp->t_dack <= now_us) {
		tp->t_dack = 0;
		/* Linux tcp_delack_timer_handler(): a delayed ACK that had
		 * to go alone ends the exchange and sets the ACK timeout
		 * back, or outside one doubles it (up to the RTO). */
		if (tp->tflags & SL_TF_PINGPONG) {
			tp->tflags &= ~SL_TF_PINGPONG;
			tp->ato_ms = SL_TCP_ATO_MIN_MS;
		} else if (tp->ato_ms) {
			uint32_t a = tp->ato_ms * 2u, rto = tp->rto_us / 1000;

			tp->ato_ms = (uint16_t)(a < rto ? a : rto);
		}
		sl_tcp_send_ack(s, so, now_us);
	}
	if (tp->t_cork && tp->t_cork <= now_us) {
		/* The cork's ceiling: what it held goes, as if uncorked once. */
		tp->t_cork = 0;
		if (tp->tflags & SL_TF_CORK) {
			tp->tflags &= ~SL_TF_CORK;
			sl_tcp_output(s, so, now_us);
			tp->tflags |= SL_TF_CORK;
			if (so->type != SL_SOCK_TCP || so->kp.gen != gen || so->state == SL_TCP_CLOSED)
				return;
		}
	}
	if (tp->t_pool && tp->t_pool <= now_us) {
		tp->t_pool = 0;
		sl_tcp_pool_look(s, so, now_us);
	}
	if (tp->t_keep && tp->t_keep <= now_us) {
		on_keep(s, so, now_us);
		if (so->type != SL_SOCK_TCP || so->kp.gen != gen || so->state == SL_TCP_CLOSED)
			return;
	}
	sl_tcp_arm(s, so);
}
