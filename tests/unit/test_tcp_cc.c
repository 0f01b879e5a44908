// SPDX-License-Identifier: BSD-2-Clause
/*
 * Congestion control in isolation (tcp_cc.c): the initial window
 * (RFC 6928), slow start (RFC 5681), and CUBIC (RFC 9438): the
 * multiplicative decrease, the return to W_max after K seconds, the
 * convex probing beyond it, fast convergence, the timeout response.
 */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "tap.h"

#define MSS 1000u

static struct sl_tcp_sock tcb(void)
{
	struct sl_tcp_sock tp;

	memset(&tp, 0, sizeof(tp));
	tp.mss = MSS;
	tp.srtt_us = 10000;
	sl_tcp_cc_init(&tp);
	return tp;
}

/* One RTT of ACKs for the whole window, a segment at a time. */
static void rtt_of_acks(struct sl_tcp_sock *tp, uint64_t *now)
{
	uint32_t segs = tp->cwnd / MSS;

	tp->snd_una = 0;
	tp->snd_nxt = tp->cwnd;
	for (uint32_t i = 0; i < segs; i++)
		sl_tcp_cc_ack(tp, MSS, *now);
	*now += tp->srtt_us;
}

static void test_cc_initial_and_slow_start(void)
{
	struct sl_tcp_sock tp = tcb();
	uint64_t now = 1000000;

	tap_eq(tp.cwnd, 10 * MSS, "IW = min(10 MSS, max(2 MSS, 14600)) (RFC 6928)");
	rtt_of_acks(&tp, &now);
	tap_eq(tp.cwnd, 20 * MSS, "slow start doubles per RTT");
}

static void test_cc_cubic_decrease_and_recovery(void)
{
	struct sl_tcp_sock tp = tcb();
	uint64_t now = 1000000, t_back = 0, t0;
	uint32_t wmax = 100 * MSS, min_after = ~0u, at_k;
	int rtts;

	/* 100 ms RTT: the cubic function, not the Reno-friendly estimate
	 * (which wins on short paths, RFC 9438 4.3), shapes the recovery. */
	tp.srtt_us = 100000;
	tp.cwnd = wmax;
	tp.ssthresh = wmax;
	tp.snd_una = 0;
	tp.snd_nxt = wmax;
	sl_tcp_cc_loss(&tp, now);
	tap_eq(tp.ssthresh, wmax * 717 / 1024, "ssthresh = 0.7 cwnd (RFC 9438 4.6)");
	tap_eq(tp.cwnd, tp.ssthresh, "cwnd = ssthresh after the decrease");
	tap_eq(tp.cc_wmax, wmax, "W_max = cwnd before the decrease");
	uint32_t at_1s = 0;

	t0 = now;
	for (rtts = 0; rtts < 150; rtts++) {
		if (tp.cwnd < min_after)
			min_after = tp.cwnd;
		rtt_of_acks(&tp, &now);
		if (rtts == 9)
			at_1s = tp.cwnd;
		if (rtts == 41)
			t_back = tp.cwnd;
	}
	(void)t0;
	/* K = cbrt(W_max (1 - beta) / C) = cbrt(100 * 0.3 / 0.4) = 4.22 s;
	 * W(t) = C (t - K)^3 + W_max: W(1.1 s) = 88 MSS (target is t + RTT). */
	tap_ok(tp.cc_k_ms > 4100 && tp.cc_k_ms < 4300, "K = cbrt(W_max (1 - beta) / C) (%u ms)",
	       tp.cc_k_ms);
	tap_ok(at_1s >= 84 * MSS && at_1s <= 92 * MSS, "concave: W(1 s) = C (t - K)^3 + W_max (%u MSS)",
	       at_1s / MSS);
	tap_ok(t_back >= 97 * MSS && t_back <= 104 * MSS, "plateau: back at W_max at K (%u MSS)",
	       (uint32_t)(t_back / MSS));
	tap_ok(min_after >= tp.ssthresh, "never below ssthresh while there is no loss");
	tap_ok(tp.cwnd > 2 * wmax, "convex region: probes well past W_max later (%u MSS)",
	       tp.cwnd / MSS);
	at_k = tp.cwnd;
	(void)at_k;
}

/* On a short path CUBIC grows at least like Reno (RFC 9438 4.3). */
static void test_cc_reno_friendly(void)
{
	struct sl_tcp_sock tp = tcb();
	uint64_t now = 1000000;
	uint32_t w;

	tp.srtt_us = 1000;
	tp.cwnd = 100 * MSS;
	tp.ssthresh = tp.cwnd;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_loss(&tp, now);
	w = tp.cwnd;
	for (int i = 0; i < 50; i++)
		rtt_of_acks(&tp, &now);
	/* alpha = 3 (1 - 0.7) / 1.7 = 0.53 MSS a round trip: ~26 in 50. */
	tap_ok(tp.cwnd >= w + 22 * MSS && tp.cwnd <= w + 30 * MSS,
	       "Reno-friendly: about 0.53 MSS per RTT (%d MSS in 50 RTTs)",
	       (int)((tp.cwnd - w) / MSS));
	for (int i = 0; i < 50; i++)
		rtt_of_acks(&tp, &now);
	tap_ok(tp.cwnd >= 100 * MSS + 20 * MSS,
	       "past W_max the estimate grows like Reno, 1 MSS per RTT (%u MSS)", tp.cwnd / MSS);
}

static void test_cc_fast_convergence(void)
{
	struct sl_tcp_sock tp = tcb();
	uint64_t now = 1000000;

	tp.cwnd = 100 * MSS;
	tp.ssthresh = tp.cwnd;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_loss(&tp, now);
	/* A second loss before reaching W_max: W_max = cwnd (1 + beta) / 2. */
	tp.snd_nxt = tp.cwnd;
	{
		uint32_t w = tp.cwnd;

		sl_tcp_cc_loss(&tp, now);
		tap_eq(tp.cc_wmax, (uint32_t)((uint64_t)w * (1024 + 717) / 2048),
		       "fast convergence lowers W_max (RFC 9438 4.7)");
	}
}

static void test_cc_timeout(void)
{
	struct sl_tcp_sock tp = tcb();

	tp.cwnd = 50 * MSS;
	tp.snd_nxt = tp.cwnd;
	tp.backoff = 1;
	sl_tcp_cc_rto(&tp, true);
	tap_eq(tp.cwnd, MSS, "RTO: cwnd = 1 MSS (RFC 5681 3.1)");
	tap_eq(tp.ssthresh, 50 * MSS * 717 / 1024, "RTO: ssthresh reduced once");
	tp.backoff = 2;
	sl_tcp_cc_rto(&tp, false);
	tap_eq(tp.ssthresh, 50 * MSS * 717 / 1024, "second RTO in a row: ssthresh kept");
}

/* Linux's tcp_slow_start(): a stretch ACK (GRO, a receiver ACKing every
 * few segments) opens cwnd by all it acknowledged, not RFC 3465's 2 SMSS,
 * but never past ssthresh; what is left over goes to avoidance. */
static void test_cc_slow_start_stretch_ack(void)
{
	struct sl_tcp_sock tp = tcb();

	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_ack(&tp, 10 * MSS, 1000000);
	tap_eq(tp.cwnd, 20 * MSS, "a stretch ACK of 10 segments opens 10 in slow start");
	tp.ssthresh = 24 * MSS;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_ack(&tp, 10 * MSS, 1010000);
	tap_ok(tp.cwnd >= 24 * MSS && tp.cwnd < 26 * MSS,
	       "slow start stops at ssthresh, the rest to avoidance (%u)", tp.cwnd);
}

/* RFC 3168 6.1.2: with ECN agreed, any reduction of cwnd (a loss, a
 * timeout, an ECN-Echo) puts CWR on the next new data; an ECN-Echo sets
 * ssthresh as a loss and leaves cwnd to PRR; without ECN nothing is
 * queued. */
static void test_cc_ecn_cwr(void)
{
	struct sl_tcp_sock tp = tcb();

	tp.cwnd = 20 * MSS;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_loss(&tp, 1000000);
	tap_ok(!(tp.ecn & SL_ECN_QUEUE_CWR), "no ECN: a loss queues no CWR");
	tp = tcb();
	tp.ecn = SL_ECN_OK;
	tp.cwnd = 20 * MSS;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_cwr(&tp);
	tap_ok(tp.ecn & SL_ECN_QUEUE_CWR, "ECN-Echo: CWR queued");
	tap_eq(tp.ssthresh, 20 * MSS * 717 / 1024, "ECN-Echo: ssthresh as for a loss (beta 0.7)");
	tap_eq(tp.cwnd, 20 * MSS, "ECN-Echo: cwnd left to PRR");
	tp.ecn = SL_ECN_OK | SL_ECN_CWR_WND;
	tp.backoff = 1;
	sl_tcp_cc_rto(&tp, true);
	tap_ok((tp.ecn & (SL_ECN_QUEUE_CWR | SL_ECN_CWR_WND)) == SL_ECN_QUEUE_CWR,
	       "RTO: CWR queued, the ECN reduction replaced by the timeout's");
}

/* RFC 9438 4.2: W(t) = C (t - K)^3 + W_max for any t.  An ACK 40 minutes
 * into an epoch (an application-limited or idle sender) overflowed the
 * int64_t (t - K)^3: undefined behaviour, caught by make sanitize.  The
 * window must grow, not wrap or collapse. */
static void test_cc_cubic_long_epoch(void)
{
	struct sl_tcp_sock tp = tcb();
	uint64_t now = 1000000000ull;
	uint32_t prev, after_loss;
	bool grew = true;

	tp.cwnd = 100 * MSS;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_loss(&tp, now);
	prev = after_loss = tp.cwnd;
	tp.snd_nxt = tp.cwnd;
	for (int min = 0; min <= 60; min += 5) {
		sl_tcp_cc_ack(&tp, MSS, now + (uint64_t)min * 60 * 1000000);
		grew = grew && tp.cwnd >= prev;
		prev = tp.cwnd;
	}
	tap_ok(grew, "ACKs 0..60 minutes into an epoch: cwnd never falls");
	tap_ok(tp.cwnd > after_loss && tp.cwnd < 0x7fffffff, "it grows, and stays finite (%u)",
	       tp.cwnd);
}

/* HyStart's delay test (Linux CUBIC's default): in slow start from 16
 * segments, a round whose first 8 RTT samples all exceed min_RTT by more
 * than max(4 ms, min_RTT/8) ends slow start at that cwnd; a smaller rise,
 * or fewer than 16 segments, does not. */
static void test_cc_hystart_delay(void)
{
	struct sl_tcp_sock tp = tcb();

	tp.cwnd = 20 * MSS;
	tp.snd_una = 1000;
	tp.snd_nxt = 1000 + 20 * MSS;
	sl_tcp_rtt_sample(&tp, 10000, 10000);		/* min_RTT 10 ms */
	tp.snd_una += 1;
	for (int i = 0; i < 8; i++)
		sl_tcp_rtt_sample(&tp, 13500, 13500);	/* +3.5 ms: below 4 ms */
	tap_ok(tp.ssthresh > tp.cwnd, "HyStart: a 3.5 ms rise over 10 ms keeps slow start");
	/* The next round (SND.UNA past the round's end). */
	tp.snd_una = tp.snd_nxt;
	tp.snd_nxt += 20 * MSS;
	for (int i = 0; i < 7; i++)
		sl_tcp_rtt_sample(&tp, 15000, 15000);
	tap_ok(tp.ssthresh > tp.cwnd, "HyStart: 7 samples of +5 ms decide nothing yet");
	sl_tcp_rtt_sample(&tp, 15000, 15000);
	tap_eq(tp.ssthresh, tp.cwnd, "HyStart: the 8th sample of +5 ms ends slow start at cwnd");

	tp = tcb();
	tp.cwnd = 15 * MSS;
	tp.snd_una = 1000;
	tp.snd_nxt = 1000 + 15 * MSS;
	sl_tcp_rtt_sample(&tp, 10000, 10000);
	for (int i = 0; i < 8; i++)
		sl_tcp_rtt_sample(&tp, 30000, 30000);
	tap_ok(tp.ssthresh > tp.cwnd, "HyStart: not below 16 segments");
}

/* Cube root by Newton's method (no libm here); x >= 0. */
static double cbrt_d(double x)
{
	double r = x > 1 ? x : 1;

	for (int i = 0; i < 200; i++)
		r = (2 * r + x / (r * r)) / 3;
	return r;
}

/*
 * Linux's CUBIC in congestion avoidance, in packets, for the figures the
 * next test holds Sluice to: tcp_cubic.c's bictcp_update() (ack_cnt, the
 * once-a-jiffy and HZ/32 recomputation of cnt, K and the origin at the
 * epoch's start, the target at t + delay_min, "cnt" at most 20 while
 * last_max_cwnd is 0, the Reno-friendly tcp_cwnd with beta_scale 15,
 * cnt at least 2) and tcp_cong_avoid_ai(); HZ 1000, every ACK of a round
 * at the same instant, one segment each, as rtt_of_acks(). Doubles for
 * K and the cube where Linux works in 1/1024 s.
 */
static uint32_t linux_cubic_ca(uint32_t cwnd, uint32_t last_max, int rtts, uint32_t rtt_ms)
{
	uint32_t cnt = 0, cwnd_cnt = 0, ack_cnt = 0, tcp_cwnd = 0, origin = 0, last_cwnd = 0;
	uint64_t epoch = 0, last_time = 0, now = 1000;
	double k = 0;

	for (int r = 0; r < rtts; r++, now += rtt_ms) {
		uint32_t n = cwnd;

		for (uint32_t i = 0; i < n; i++) {
			ack_cnt++;
			if (last_cwnd == cwnd && now - last_time <= 1000 / 32)
				goto ai;
			if (!epoch || now != last_time) {
				double t, d;
				uint32_t delta, target;

				last_cwnd = cwnd;
				last_time = now;
				if (!epoch) {
					epoch = now;
					ack_cnt = 1;
					tcp_cwnd = cwnd;
					k = last_max <= cwnd ? 0 : cbrt_d((last_max - cwnd) / 0.4);
					origin = last_max <= cwnd ? cwnd : last_max;
				}
				t = (double)(now - epoch + rtt_ms) / 1000;
				d = t < k ? k - t : t - k;
				d = 0.4 * d * d * d;
				delta = (uint32_t)d;
				target = t < k ? origin - delta : origin + delta;
				cnt = target > cwnd ? cwnd / (target - cwnd) : 100 * cwnd;
				if (!last_max && cnt > 20)
					cnt = 20;
			}
			while (ack_cnt > (cwnd * 15) >> 3) {
				ack_cnt -= (cwnd * 15) >> 3;
				tcp_cwnd++;
			}
			if (tcp_cwnd > cwnd && cnt > cwnd / (tcp_cwnd - cwnd))
				cnt = cwnd / (tcp_cwnd - cwnd);
			if (cnt < 2)
				cnt = 2;
ai:
			if (cwnd_cnt >= cnt) {
				cwnd_cnt = 0;
				cwnd++;
			}
			if (++cwnd_cnt >= cnt) {
				cwnd += cwnd_cnt / cnt;
				cwnd_cnt -= cwnd_cnt / cnt * cnt;
			}
		}
	}
	return cwnd;
}

/*
 * CUBIC after an RTO, as Linux: tcp_enter_loss() takes ssthresh from
 * cubictcp_recalc_ssthresh() (0.7 cwnd; fast convergence moves W_max),
 * then cubictcp_state() on TCP_CA_Loss resets it all (bictcp_reset():
 * last_max_cwnd 0, epoch 0). Slow start back to ssthresh, then
 * avoidance from cwnd with K = 0 and at least 5 % a round: over 10 rounds
 * of 10 ms Linux's figures (linux_cubic_ca()) give 70 -> 113 segments,
 * where a W_max kept (85, after fast convergence from 120) gives 73.
 */
static void test_cc_rto_resets_wmax(void)
{
	struct sl_tcp_sock tp = tcb();
	uint64_t now = 1000000;
	uint32_t want, kept, got;

	tp.cwnd = 100 * MSS;
	tp.cc_wmax = 120 * MSS;			/* an earlier loss's W_max */
	tp.tflags &= ~SL_TF_NOWMAX;
	tp.snd_nxt = tp.cwnd;
	sl_tcp_cc_rto(&tp, true);
	tap_eq(tp.ssthresh, 100 * MSS * 717 / 1024, "RTO: ssthresh = 0.7 cwnd (cubictcp_recalc_ssthresh)");
	tap_ok(tp.cc_wmax == 0 && (tp.tflags & SL_TF_NOWMAX),
	       "RTO: no W_max after it (bictcp_reset() on TCP_CA_Loss)");
	tp.snd_una = 0;
	while (tp.cwnd < tp.ssthresh) {
		tp.snd_nxt = tp.cwnd;
		sl_tcp_cc_ack(&tp, MSS, now);
	}
	now += tp.srtt_us;
	tap_ok(tp.cwnd - tp.ssthresh < MSS, "slow start back to ssthresh (%u)", tp.cwnd);
	want = linux_cubic_ca(tp.cwnd / MSS, 0, 10, 10);
	kept = linux_cubic_ca(tp.cwnd / MSS, 120 * 1741 / 2048, 10, 10);
	for (int i = 0; i < 10; i++)
		rtt_of_acks(&tp, &now);
	got = tp.cwnd / MSS;
	tap_ok(got * 100 >= want * 95 && got * 100 <= want * 105,
	       "10 rounds after: %u segments, Linux's figure %u (with W_max kept: %u)", got, want,
	       kept);
	/* The next loss sets W_max again, from cwnd (none to converge from). */
	tp.snd_nxt = tp.cwnd;
	got = tp.cwnd;
	sl_tcp_cc_loss(&tp, now);
	tap_ok(tp.cc_wmax == got && !(tp.tflags & SL_TF_NOWMAX),
	       "a loss after it: W_max = cwnd, the 5 %% floor off");
}

int main(void)
{
	test_cc_initial_and_slow_start();
	test_cc_cubic_decrease_and_recovery();
	test_cc_reno_friendly();
	test_cc_fast_convergence();
	test_cc_timeout();
	test_cc_cubic_long_epoch();
	test_cc_slow_start_stretch_ack();
	test_cc_ecn_cwr();
	test_cc_hystart_delay();
	test_cc_rto_resets_wmax();
	return tap_done();
}
