// SPDX-License-Identifier: BSD-2-Clause
/*
 * Congestion control: slow start and the loss responses of RFC 5681,
 * with CUBIC (RFC 9438) for congestion avoidance, including its
 * Reno-friendly region.  Fast recovery itself (NewReno, RFC 6582) is in
 * tcp_input.c; this file only moves cwnd and ssthresh.
 */
#include "proto/proto.h"

/* RFC 9438 4.1 and 4.6: C = 0.4, beta_cubic = 0.7, in fixed point /1024. */
#define CUBIC_C_NUM	4	/* C = 4/10 */
#define CUBIC_C_DEN	10
#define CUBIC_BETA	717	/* 0.7 * 1024 */
/* RFC 9438 4.3: alpha_cubic = 3 (1 - beta) / (1 + beta) = 0.529..., /1024 */
#define CUBIC_ALPHA	542
/* |t - K| beyond which W(t) is held: (2e6 ms)^3 = 8e18 still fits an
 * int64_t, and 33 minutes past K the window is far beyond any cwnd. */
#define CUBIC_D_MAX_MS	2000000

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Integer cube root (Newton's method). */
static uint64_t cbrt_u64(uint64_t x)
{
	uint64_t r, y;

	if (x < 2)
		return x;
	r = 1;
	/* Stop at 2^21 (cubed, 2^63): no wrap past 2^64, whatever x is. */
	while (r < (1ull << 21) && r * r * r < x)
		r <<= 1;
	for (int i = 0; i < 64; i++) {
		y = (2 * r + x / (r * r)) / 3;
		if (y >= r)
			break;
		r = y;
	}
	while (r * r * r > x)
		r--;
	return r;
}

/* RFC 6928 2: IW = min(10 MSS, max(2 MSS, 14600)). */
static uint32_t initial_window(const struct sl_tcp_sock *tp)
{
	uint32_t mss = tp->mss ? tp->mss : SL_TCP_MSS_DEFAULT;
	uint32_t iw = max_u32(2 * mss, 14600);

	return iw > 10 * mss ? 10 * mss : iw;
}

void sl_tcp_cc_init(struct sl_tcp_sock *tp)
{
	tp->cwnd = initial_window(tp);
	tp->ssthresh = 0x7fffffff;	/* RFC 5681 3.1: arbitrarily high */
	tp->cc_wmax = 0;
	tp->tflags |= SL_TF_NOWMAX;
	tp->cc_epoch_us = 0;
	tp->cc_acc = 0;
}

/* Window (bytes) the cubic function gives t_us after the epoch began. */
static uint64_t cubic_w(const struct sl_tcp_sock *tp, uint64_t t_us)
{
	/* W(t) = C (t - K)^3 + W_max, t and K in seconds, W in segments;
	 * worked in milliseconds and bytes. */
	int64_t d = (int64_t)(t_us / 1000) - (int64_t)tp->cc_k_ms;
	int64_t cube;

	/* Saturate: an epoch of more than ~35 minutes overflowed d^3. */
	if (d > CUBIC_D_MAX_MS)
		d = CUBIC_D_MAX_MS;
	if (d < -CUBIC_D_MAX_MS)
		d = -CUBIC_D_MAX_MS;
	cube = d * d * d;	/* ms^3 */
	int64_t w = (int64_t)tp->cc_wmax +
		    cube / 1000000000 * CUBIC_C_NUM * (int64_t)tp->mss / CUBIC_C_DEN +
		    (cube % 1000000000) * CUBIC_C_NUM * (int64_t)tp->mss / CUBIC_C_DEN /
			    1000000000;

	return w < (int64_t)tp->mss ? tp->mss : (uint64_t)w;
}

/* An epoch begins: W(t) from W_max, or with none (or cwnd past it) from
 * cwnd with K = 0, cc_wmax then the curve's origin (Linux's
 * bic_origin_point). */
static void cubic_start_epoch(struct sl_tcp_sock *tp, uint32_t mss, uint64_t now_us)
{
	tp->cc_epoch_us = now_us ? now_us : 1;
	tp->cc_west = tp->cwnd;
	tp->cc_acc = 0;
	if (tp->cwnd < tp->cc_wmax) {
		/* K = cbrt((W_max - cwnd) / C), in segments then seconds. */
		uint64_t seg = (uint64_t)(tp->cc_wmax - tp->cwnd) * CUBIC_C_DEN /
			       CUBIC_C_NUM / mss;

		tp->cc_k_ms = (uint32_t)(cbrt_u64(seg * 1000000000ull));
	} else {
		tp->cc_k_ms = 0;
		tp->cc_wmax = tp->cwnd;
	}
}

void sl_tcp_cc_ack(struct sl_tcp_sock *tp, uint32_t acked, uint64_t now_us)
{
	uint64_t target, t;
	/* Divisors, read once: the values found non-zero are the ones
	 * divided by (the socket is in the shared region). */
	uint32_t mss = SL_READ_ONCE(tp->mss), cwnd = SL_READ_ONCE(tp->cwnd);

	if (!acked || !mss || !cwnd)
		return;
	if (cwnd < tp->ssthresh) {
		/* RFC 5681 3.1 slow start by all that was acknowledged, as
		 * Linux's tcp_slow_start() (no RFC 3465 limit L: a stretch ACK
		 * of 10 segments opens 10), up to ssthresh; the rest goes to
		 * congestion avoidance. */
		uint32_t inc = tp->ssthresh - cwnd < acked ? tp->ssthresh - cwnd : acked;

		tp->cwnd += inc;
		acked -= inc;
		cwnd = tp->cwnd;
		if (!acked)
			return;
	}
	if (tp->tflags & SL_TF_RENO) {
		/* RFC 5681 3.1 eq. 3: about one SMSS per RTT. */
		tp->cc_acc += acked;
		if (tp->cc_acc >= cwnd) {
			tp->cc_acc -= cwnd;
			tp->cwnd += mss;
		}
		return;
	}
	if (!tp->cc_epoch_us)
		cubic_start_epoch(tp, mss, now_us);
	t = now_us - tp->cc_epoch_us + tp->srtt_us;	/* RFC 9438 4.2: t + RTT */
	target = cubic_w(tp, t);
	if (target < tp->cwnd)
		target = tp->cwnd;
	if (target > tp->cwnd + tp->cwnd / 2)
		target = tp->cwnd + tp->cwnd / 2;

	/* RFC 9438 4.3: the Reno-friendly estimate; alpha becomes 1 once it
	 * has grown back to W_max. */
	tp->cc_west += (uint32_t)((uint64_t)(tp->cc_west >= tp->cc_wmax ? 1024 : CUBIC_ALPHA) *
				  acked / 1024 * mss / cwnd);
	if (cubic_w(tp, now_us - tp->cc_epoch_us) < tp->cc_west) {
		if (tp->cc_west > tp->cwnd)
			tp->cwnd = tp->cc_west;
		if (!(tp->tflags & SL_TF_NOWMAX))
			return;
		target = tp->cwnd;
	}
	/* No W_max, nothing known of the path: at least 5 % a round trip,
	 * as Linux's bictcp_update() ("cnt" at most 20 while last_max_cwnd
	 * is 0), whichever of the curve and the estimate is lower. */
	if ((tp->tflags & SL_TF_NOWMAX) && target < tp->cwnd + tp->cwnd / 20)
		target = tp->cwnd + tp->cwnd / 20;
	/* RFC 9438 4.4/4.5: grow by (target - cwnd) / cwnd per acked MSS. */
	tp->cc_acc += (uint32_t)((target - tp->cwnd) * acked / cwnd);
	/* At the plateau, still one MSS per 100 RTTs (as Linux's cubic). */
	if (target == tp->cwnd)
		tp->cc_acc += (uint32_t)((uint64_t)acked * mss / 100 / cwnd);
	if (tp->cc_acc >= mss) {
		tp->cwnd += tp->cc_acc / mss * mss;
		tp->cc_acc %= mss;
	}
}

void sl_tcp_cc_idle(struct sl_tcp_sock *tp)
{
	uint32_t rw = initial_window(tp);

	/* RFC 5681 4.1: RW = min(IW, cwnd).  cwnd was not validated while
	 * idle, so CUBIC starts a new epoch when it gets back to
	 * congestion avoidance (RFC 9438 5.8; Linux resets it on
	 * CA_EVENT_TX_START too). */
	if (tp->cwnd > rw)
		tp->cwnd = rw;
	tp->cc_epoch_us = 0;
	tp->cc_acc = 0;
}

/*
 * RFC 9438 4.6-4.7: multiplicative decrease and fast convergence; or
 * Reno's halving.  From cwnd, as Linux's cubictcp_recalc_ssthresh()
 * (max(cwnd x 717/1024, 2 segments)) and tcp_reno_ssthresh() (cwnd / 2):
 * cwnd grows only while it limits the sender (tcp_input.c), so it is the
 * window the path took.  Before, 0.7 x min(cwnd, flight) (RFC 9438 4.6's
 * flight, RFC 5681's FlightSize / 2 for Reno): a loss while the writer
 * held the flight below cwnd cut deeper than Linux
 * (own/ssthresh-cwnd-not-flight: 2.8 segments against 7).
 */
static void cubic_reduce(struct sl_tcp_sock *tp)
{
	uint32_t mss = tp->mss ? tp->mss : SL_TCP_MSS_DEFAULT;
	uint32_t w = tp->cwnd;

	if (tp->tflags & SL_TF_RENO) {
		tp->ssthresh = max_u32(w / 2, 2 * mss);
		tp->cc_acc = 0;
		return;
	}

	if (w < tp->cc_wmax && !(tp->tflags & SL_TF_NOWMAX))
		tp->cc_wmax = (uint32_t)((uint64_t)w * (1024 + CUBIC_BETA) / 2048);
	else
		tp->cc_wmax = w;
	tp->tflags &= ~SL_TF_NOWMAX;
	tp->ssthresh = max_u32((uint32_t)((uint64_t)w * CUBIC_BETA / 1024), 2 * mss);
	tp->cc_epoch_us = 0;
}

/* RFC 3168 6.1.2: with ECN, the first new data segment after any
 * reduction of cwnd carries CWR (as Linux's tcp_ecn_queue_cwr() on entering
 * CWR, recovery or loss). */
static void ecn_queue_cwr(struct sl_tcp_sock *tp)
{
	if (tp->ecn & SL_ECN_OK)
		tp->ecn |= SL_ECN_QUEUE_CWR;
}

void sl_tcp_cc_loss(struct sl_tcp_sock *tp, uint64_t now_us)
{
	(void)now_us;
	cubic_reduce(tp);
	tp->cwnd = tp->ssthresh;
	ecn_queue_cwr(tp);
}

/* RFC 3168 6.1.2: an ECN-Echo: ssthresh as for a loss; cwnd comes down
 * to it over the window (tcp_input.c, PRR as Linux's CWR state). */
void sl_tcp_cc_cwr(struct sl_tcp_sock *tp)
{
	cubic_reduce(tp);
	ecn_queue_cwr(tp);
}

/*
 * An RTO: cwnd one segment; ssthresh reduced only when reduce
 * (sl_tcp_undo_rto(): as Linux's tcp_enter_loss(), not on a timeout inside
 * a fast recovery or after another of the series, RFC 5681 3.1 eq. 4: the
 * reduction for that window was made; before, one inside a recovery
 * reduced again from the flight left, 0.7 x 0.7 and less).  Then CUBIC
 * starts over, as Linux's cubictcp_state() on entering Loss
 * (bictcp_reset(), bictcp_hystart_reset()): no W_max (what fast
 * convergence just set goes too), no epoch, a new HyStart round; before,
 * W_max was kept and avoidance after the timeout crept back to the old
 * window along the concave curve.
 */
void sl_tcp_cc_rto(struct sl_tcp_sock *tp, bool reduce)
{
	if (reduce)
		cubic_reduce(tp);
	tp->cc_wmax = 0;
	tp->tflags |= SL_TF_NOWMAX;
	tp->cc_epoch_us = 0;
	tp->cc_acc = 0;
	tp->hs_end_seq = 0;
	tp->cwnd = tp->mss;		/* RFC 5681 3.1: LW = 1 SMSS */
	tp->ecn &= (uint8_t)~SL_ECN_CWR_WND;	/* the timeout's reduction replaces it */
	ecn_queue_cwr(tp);
}

/*
 * A reduction begins (a recovery, an RTO): keep what an undo would put
 * back, as Linux's tcp_init_cwnd_reduction() and tcp_enter_loss() keep
 * prior_cwnd, and prior_ssthresh as tcp_current_ssthresh(): ssthresh
 * itself during another reduction, else the larger of ssthresh and 3/4
 * of cwnd. none: an ECN-Echo proved the congestion, nothing to restore.
 */
void sl_tcp_cc_save(struct sl_tcp_sock *tp, bool in_reduction, bool none)
{
	uint32_t w = (tp->cwnd >> 1) + (tp->cwnd >> 2);

	tp->prior_cwnd = tp->cwnd;
	if (none)
		tp->prior_ssthresh = 0;
	else
		tp->prior_ssthresh = in_reduction ? tp->ssthresh : max_u32(tp->ssthresh, w);
}

/* The reduction was needless (Linux's tcp_undo_cwnd_reduction() with
 * tcp_reno_undo_cwnd(), which CUBIC uses too): cwnd back to at least what
 * it was, ssthresh to what it was if higher; a CWR still to go is not
 * sent (tcp_ecn_withdraw_cwr()). */
void sl_tcp_cc_undo(struct sl_tcp_sock *tp)
{
	if (!tp->prior_ssthresh)
		return;
	tp->cwnd = max_u32(tp->cwnd, tp->prior_cwnd);
	if (tp->prior_ssthresh > tp->ssthresh) {
		tp->ssthresh = tp->prior_ssthresh;
		tp->ecn &= (uint8_t)~SL_ECN_QUEUE_CWR;
	}
}
