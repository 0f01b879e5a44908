// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP retransmission: RFC 6298 (RTT estimate, RTO, backoff, Karn), give-up
 * after the data retries, RFC 5681 fast retransmit on three duplicate
 * ACKs, RFC 6582 NewReno recovery, SACK-driven retransmission (RFC 2018,
 * RFC 6675) with RACK's loss detection and the tail loss probe (RFC
 * 8985), slow start and the CUBIC decrease (RFC 9438).
 */
#include <netinet/tcp.h>
#include <string.h>

#include "tcp_fixture.h"

#define IRS 30000u

static uint8_t pattern[20000];

static struct sl_sock *conn(uint32_t *iss, bool sack)
{
	struct sl_sock *so = tf_connect(IRS, iss, &(struct tf_opts){ .mss = 1000,
								      .sack_ok = sack },
					65535);
	int one = 1;

	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* The handshake took no time here: give the path a 10 ms round trip
	 * for RACK's reordering window (min_RTT/4), as a real one has. */
	so->tcp.min_rtt_us = 10000;
	return so;
}

/* The estimator as one sample of r on a path left it (Linux's
 * tcp_rtt_estimator() first sample): SRTT r, mdev 2r, RTTVAR at least
 * RTO_MIN, RTO SRTT + RTTVAR. */
static void set_path(struct sl_sock *so, uint32_t r)
{
	so->tcp.srtt_us = r;
	so->tcp.srtt_lo = 0;
	so->tcp.mdev_us = 2 * r;
	so->tcp.rttvar_us = 2 * r > SL_TCP_RTO_MIN_US ? 2 * r : SL_TCP_RTO_MIN_US;
	so->tcp.mdev_max_us = so->tcp.rttvar_us;
	so->tcp.rto_us = r + so->tcp.rttvar_us;
	so->tcp.rtt_seq = so->tcp.snd_max;
}

static void ack(struct sl_sock *so, uint32_t a, const struct tf_opts *o)
{
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, a, 65535, o, NULL, 0);
}

/* One round trip with the window full: 1000-byte segments up to cwnd
 * (at most 20), 10 ms, then everything ACKed. */
static void full_rtt(struct sl_sock *so)
{
	uint32_t sent = 0;

	while (so->tcp.sndq_bytes < so->tcp.cwnd && sent < 20000) {
		sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
		sent += 1000;
	}
	tf_advance_ms(10);
	ack(so, so->tcp.snd_nxt, NULL);
}

/* Wait for the next frame; returns the ms waited. */
static uint64_t wait_frame(uint64_t limit_ms)
{
	unsigned int n = T.n;
	uint64_t ms = 0;

	while (T.n == n && ms < limit_ms) {
		tf_advance_ms(1);
		ms++;
	}
	return ms;
}

static void test_established_rto_backoff(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	uint64_t gap1, gap2, gap3, rto;

	tf_init("rb");
	so = conn(&iss, false);
	rto = so->tcp.rto_us;
	tap_eq(rto, so->tcp.srtt_us + SL_TCP_RTO_MIN_US,
	       "RTO after a tiny RTT: SRTT + 200 ms (Linux's, not RFC 6298's 200 ms floor)");
	sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us);
	tf_clear();
	gap1 = wait_frame(5000);
	g = tf_last();
	tap_ok(g.seq == iss + 1 && g.plen == 100, "RTO: the segment is sent again");
	tap_eq(gap1, (rto + 999) / 1000, "first RTO at that, to the millisecond above");
	gap2 = wait_frame(5000);
	gap3 = wait_frame(5000);
	tap_eq(gap2, (2 * rto + 999) / 1000, "backoff doubles (RFC 6298 5.5)");
	tap_eq(gap3, (4 * rto + 999) / 1000, "and doubles again");
	tap_eq(tf_counter(SL_C_tcp_rto), 3, "counted tcp_rto");
	tap_eq(tf_counter(SL_C_tcp_retransmit), 3, "counted tcp_retransmit");
	tap_eq(so->retransmits, 3, "and on the socket (sluice dump)");
	tap_ok(so->tcp.cwnd == so->tcp.mss, "cwnd = 1 MSS after an RTO (RFC 5681 3.1)");
	/* Karn: the ACK of a retransmitted segment gives no RTT sample. */
	uint32_t srtt = so->tcp.srtt_us;

	tf_advance_ms(300);
	ack(so, iss + 101, NULL);
	tap_eq(so->tcp.srtt_us, srtt, "no RTT sample from a retransmission (Karn)");
	tap_eq(so->tcp.backoff, 0, "new ACK clears the backoff");
	tf_finish();
}

/* SRTT, RTTVAR and RTO from measurements, as Linux's
 * tcp_rtt_estimator() and tcp_set_rto() (RFC 6298's variance with
 * Linux's gains, RTTVAR the most of a window, RTO = SRTT + RTTVAR). */
static void test_established_rtt_estimate(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("rt");
	so = conn(&iss, false);
	so->tcp.srtt_us = 0;	/* forget the handshake's sample */
	so->tcp.srtt_lo = 0;
	so->tcp.rto_us = 1000000;
	sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us);
	tf_advance_ms(300);
	ack(so, iss + 101, NULL);
	tap_eq(so->tcp.srtt_us, 300000, "first sample: SRTT = R");
	tap_eq(so->tcp.mdev_us, 600000, "mdev = 2 R (4 x R/2)");
	tap_eq(so->tcp.rttvar_us, 600000, "RTTVAR = max(mdev, 200 ms)");
	tap_eq(so->tcp.rto_us, 900000, "RTO = SRTT + RTTVAR = 3 R");
	sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us);
	tf_advance_ms(100);
	ack(so, iss + 201, NULL);
	tap_eq(so->tcp.srtt_us, (7 * 300000 + 100000) / 8, "SRTT = 7/8 SRTT + 1/8 R");
	/* R fell 200 ms below SRTT: |err| - mdev/4 = 50 ms, an eighth of
	 * that (Linux's finer gain when the RTT falls). */
	tap_eq(so->tcp.mdev_us, 600000 + (200000 - 600000 / 4) / 8,
	       "mdev: an eighth of the gain on a falling RTT");
	tap_eq(so->tcp.rttvar_us, so->tcp.mdev_us, "RTTVAR follows mdev up");
	tap_eq(so->tcp.rto_us, 275000 + 606250, "RTO = SRTT + RTTVAR");
	tap_eq(so->tcp.mdev_max_us, SL_TCP_RTO_MIN_US, "a new window: its most starts at 200 ms");
	tf_finish();
}

static struct tcp_info info(struct sl_sock *so)
{
	struct tcp_info ti;
	unsigned int len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	sl_tcp_getsockopt(T.s, so, IPPROTO_TCP, TCP_INFO, &ti, &len);
	return ti;
}

/* TCP_INFO's retransmission fields, as Linux's tcp_get_info() gives them
 * on the same exchange (packetdrill tests/conformance/pd/info-retrans.pkt
 * holds the kernel to these figures; its code events read TCP_INFO with
 * the real getsockopt(), which the plugin cannot answer): two segments,
 * two RTOs, then the first ACKed. Before, all four were 0. */
static void test_established_info_retrans(void)
{
	struct tcp_info ti;
	struct sl_sock *so;
	uint32_t iss;

	tf_init("ir");
	so = conn(&iss, false);
	set_path(so, 100000);	/* a 100 ms handshake: RTO 300 ms */
	sl_tcp_send(T.s, so, pattern, 2000, 0, tf_now_us);
	tap_eq(info(so).tcpi_total_retrans, 0, "nothing sent again yet");
	tf_clear();
	tap_eq(wait_frame(1000), 300, "the RTO at 300 ms");
	ti = info(so);
	tap_eq(ti.tcpi_retransmits, 1, "tcpi_retransmits 1 (icsk_retransmits)");
	tap_eq(ti.tcpi_total_retrans, 1, "tcpi_total_retrans 1");
	tap_eq(ti.tcpi_lost, 2, "tcpi_lost 2: all that was out (tcp_timeout_mark_lost())");
	tap_eq(ti.tcpi_retrans, 1, "tcpi_retrans 1: the one sent again");
	tap_eq(wait_frame(1000), 600, "again 600 ms on");
	ti = info(so);
	tap_eq(ti.tcpi_retransmits, 2, "tcpi_retransmits 2");
	tap_eq(ti.tcpi_total_retrans, 2, "tcpi_total_retrans 2");
	tf_advance_ms(10);
	tf_clear();
	ack(so, iss + 1001, NULL);
	tap_ok(T.n == 1 && tf_last().seq == iss + 1001, "the first ACKed: the second goes again");
	ti = info(so);
	tap_eq(ti.tcpi_retransmits, 0, "tcpi_retransmits 0: SND.UNA moved");
	tap_eq(ti.tcpi_total_retrans, 3, "tcpi_total_retrans 3");
	tap_eq(ti.tcpi_lost, 1, "tcpi_lost 1");
	tap_eq(ti.tcpi_retrans, 1, "tcpi_retrans 1");
	tf_advance_ms(10);
	ack(so, iss + 2001, NULL);
	ti = info(so);
	tap_ok(ti.tcpi_lost == 0 && ti.tcpi_retrans == 0 && ti.tcpi_total_retrans == 3,
	       "all ACKed: lost 0, retrans 0, total_retrans 3");
	tf_finish();
}

static void test_established_data_retries(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("dr");
	so = conn(&iss, false);
	sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us);
	tf_clear();
	for (int i = 0; i < 1200 && so->state != SL_TCP_CLOSED; i++)
		tf_advance_ms(1000);
	tap_eq(so->state, SL_TCP_CLOSED, "gave up");
	tap_eq(so->error, ETIMEDOUT, "ETIMEDOUT");
	tap_eq(tf_counter(SL_C_tcp_rto), SL_TCP_DATA_RETRIES, "after 15 retransmissions");
	tap_ok(tf_last().flags & TH_RST_, "and a reset to the peer");
	tf_finish();
}

/* A connect of so to the silent peer gives up after 2 SYN
 * retransmissions, when the last one's timeout ends: 1 + 2 + 4 s. */
static void syn_gives_up_after_two(struct sl_sock *so, const char *why)
{
	uint64_t start;

	sl_sock_bind(T.s, so, 0, 0);
	start = tf_now_us;
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	for (int ms = 0; ms < 10000 && so->state != SL_TCP_CLOSED; ms++)
		tf_advance_ms(1);
	tap_ok(so->state == SL_TCP_CLOSED && so->error == ETIMEDOUT, "%s: gave up, ETIMEDOUT", why);
	tap_eq(T.n, 3, "the SYN and 2 retransmissions");
	tap_ok((tf_now_us - start) / 1000 >= 7000 && (tf_now_us - start) / 1000 <= 7010,
	       "after 7 s (%llu ms)", (unsigned long long)((tf_now_us - start) / 1000));
}

/* TCP_SYNCNT 2: that, not the default 6 retransmissions (127 s). */
static void test_syn_sent_syncnt(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("sc"), T.s), SL_SOCK_TCP);
	int two = 2;

	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_SYNCNT, &two, sizeof(two)), 0,
	       "TCP_SYNCNT 2");
	syn_gives_up_after_two(so, "TCP_SYNCNT 2");
	tf_finish();
}

/* net.ipv4.tcp_syn_retries 2 (read as the stack's handle is made, in
 * s->tcp_syn_retries): the same, with no option on the socket. */
static void test_syn_sent_sysctl(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("ss"), T.s), SL_SOCK_TCP);

	T.s->tcp_syn_retries = 2;
	syn_gives_up_after_two(so, "tcp_syn_retries 2");
	T.s->tcp_syn_retries = 0;
	tf_finish();
}

/* TCP_USER_TIMEOUT (RFC 5482, tcp(7)): unacknowledged data ends the
 * connection after the user's time, well before the retries run out,
 * and the timer fires at that time, not at the next backed-off RTO. */
static void test_established_user_timeout(void)
{
	struct sl_sock *so;
	uint32_t iss;
	int ut = 1500;
	uint64_t start, ms;

	tf_init("ut");
	so = conn(&iss, false);
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut)), 0,
	       "TCP_USER_TIMEOUT 1500 ms set");
	start = tf_now_us;
	sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us);
	tf_clear();
	for (ms = 0; ms < 60000 && so->state != SL_TCP_CLOSED; ms++)
		tf_advance_ms(1);
	ms = (tf_now_us - start) / 1000;
	tap_eq(so->state, SL_TCP_CLOSED, "gave up");
	tap_eq(so->error, ETIMEDOUT, "ETIMEDOUT");
	tap_ok(ms >= 1500 && ms <= 1510, "after the user timeout, 1500 ms (%llu)",
	       (unsigned long long)ms);
	tap_ok(tf_counter(SL_C_tcp_rto) < 5, "after a few retransmissions, not 15 (%llu)",
	       (unsigned long long)tf_counter(SL_C_tcp_rto));
	tap_ok(tf_last().flags & TH_RST_, "and a reset to the peer");
	tf_finish();
}

/* TCP_CONGESTION "reno": one MSS an RTT in congestion avoidance, and the
 * window halves on a loss (RFC 5681 3.1), where CUBIC keeps 0.7. */
static void test_established_reno(void)
{
	struct sl_sock *so;
	uint32_t iss, w0, w;

	tf_init("rn");
	so = conn(&iss, false);
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_CONGESTION, "reno", 4), 0,
	       "TCP_CONGESTION reno set");
	so->tcp.ssthresh = so->tcp.cwnd;
	w0 = so->tcp.cwnd;
	for (int rtt = 0; rtt < 5; rtt++)
		full_rtt(so);
	tap_eq(so->tcp.cwnd, w0 + 5 * 1000, "five RTTs: five MSS more");
	sl_tcp_send(T.s, so, pattern, 5000, 0, tf_now_us);
	w = so->tcp.cwnd;
	sl_tcp_cc_loss(&so->tcp, tf_now_us);
	tap_eq(so->tcp.ssthresh, w / 2 > 2000 ? w / 2 : 2000,
	       "a loss halves cwnd (Linux's tcp_reno_ssthresh(), not the flight)");
	tf_finish();
}

/* RFC 5681 3.2 / RFC 6582 3.2: three duplicate ACKs retransmit at once. */
static void test_established_fast_retransmit(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss, cwnd;

	tf_init("fr");
	so = conn(&iss, false);
	tap_eq(sl_tcp_send(T.s, so, pattern, 5000, 0, tf_now_us), 5000, "send 5 segments");
	tap_eq(T.n, 5, "all five sent in the initial window (RFC 6928)");
	ack(so, iss + 1001, NULL);
	cwnd = so->tcp.cwnd;
	tap_eq(cwnd, 10000 + 1000, "slow start: cwnd grows by the bytes ACKed");
	tf_clear();
	ack(so, iss + 1001, NULL);
	ack(so, iss + 1001, NULL);
	tap_eq(T.n, 0, "two duplicate ACKs: nothing");
	ack(so, iss + 1001, NULL);
	g = tf_last();
	tap_ok(T.n == 1 && g.seq == iss + 1001 && g.plen == 1000, "third: fast retransmit");
	tap_eq(tf_counter(SL_C_tcp_fast_retransmit), 1, "counted tcp_fast_retransmit");
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "in fast recovery");
	tap_eq(so->tcp.ssthresh, cwnd * 717 / 1024,
	       "ssthresh = beta_cubic * cwnd (Linux's cubictcp_recalc_ssthresh(), not the flight)");
	/* RFC 6582: a partial ACK retransmits the next hole. */
	tf_clear();
	ack(so, iss + 2001, NULL);
	g = tf_parse(0);
	tap_ok(T.n >= 1 && g.seq == iss + 2001, "partial ACK: next segment retransmitted");
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "still in recovery");
	ack(so, iss + 5001, NULL);
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY), "full ACK ends recovery");
	tap_ok(so->tcp.cwnd <= so->tcp.ssthresh, "cwnd deflated to at most ssthresh");
	tap_eq(so->tcp.cwnd, so->tcp.ssthresh,
	       "and to ssthresh, not one segment, though the pipe is empty (RFC 6937, Linux)");
	tf_finish();
}

/* RFC 3042 Limited Transmit: each of the first two duplicate ACKs sends
 * one new segment past cwnd (cwnd itself unchanged, and no PSH from the
 * middle of a write, as Linux); then the ACK that shows it was
 * reordering grows cwnd by what it delivered, not by what the duplicate
 * ACKs (or SACK blocks) already stood for: one segment, so two go out
 * (packetdrill limited_transmit/limited-transmit-*.pkt). */
static void limited_transmit(bool sack)
{
	struct tf_opts o = { .nsack = sack };
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss, cwnd, bytes = 0;

	tf_init(sack ? "lts" : "ltn");
	so = conn(&iss, sack);
	set_path(so, 10000);
	tap_eq(sl_tcp_send(T.s, so, pattern, 15000, 0, tf_now_us), 15000, "write 15 segments");
	tap_eq(T.n, 10, "ten go: the initial window");
	cwnd = so->tcp.cwnd;
	/* The SACKs come a round trip on: each gives an RTT sample, and one
	 * of 0 would leave RACK no reordering window (min_RTT/4). */
	tf_advance_ms(10);
	tf_clear();
	o.sack[0][0] = iss + 1001;
	o.sack[0][1] = iss + 2001;
	ack(so, iss + 1, &o);
	g = tf_last();
	tap_ok(T.n == 1 && g.seq == iss + 10001 && g.plen == 1000,
	       "%s first duplicate ACK: one new segment", sack ? "SACK," : "no SACK,");
	tap_ok(!(g.flags & TH_PSH_), "without PSH");
	tf_clear();
	o.sack[0][1] = iss + 3001;
	ack(so, iss + 1, &o);
	g = tf_last();
	tap_ok(T.n == 1 && g.seq == iss + 11001 && g.plen == 1000, "second: one more");
	tap_eq(so->tcp.cwnd, cwnd, "cwnd unchanged by them");
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY), "no recovery yet");
	tf_clear();
	ack(so, iss + 3001, NULL);
	for (unsigned int i = 0; i < T.n; i++)
		bytes += tf_parse(i).plen;
	tap_eq(so->tcp.cwnd, cwnd + 1000, "reordering after all: cwnd grows by the one segment delivered");
	tap_eq(bytes, 2000, "and two segments go (flight 9 of 11)");
	tf_finish();
}

static void test_established_limited_transmit(void)
{
	limited_transmit(false);
	limited_transmit(true);
}

/* RFC 6675 2: with SACK a duplicate ACK is one that SACKs new data, even
 * if its window moved (a receiver reading as the holes wait); counted
 * only with the window unchanged, recovery waited for the RTO. */
static void test_established_sack_dupacks_window_moves(void)
{
	struct tf_opts o = { .nsack = 1 };
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("sw");
	so = conn(&iss, true);
	sl_tcp_send(T.s, so, pattern, 5000, 0, tf_now_us);
	tf_clear();
	for (int i = 0; i < 3; i++) {
		o.sack[0][0] = iss + 1001;
		o.sack[0][1] = iss + 2001 + 1000 * (uint32_t)i;
		tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1,
			    (uint16_t)(60000 + 1000 * i), &o, NULL, 0);
	}
	g = tf_last();
	tap_ok(T.n == 1 && g.seq == iss + 1 && g.plen == 1000,
	       "three ACKs SACKing new data, each with another window: fast retransmit");
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "in recovery");
	ack(so, iss + 5001, NULL);
	tf_finish();
}

/* RFC 8985 6 and RFC 6937: a cumulative ACK whose SACK blocks leave the
 * holes below them lost (RACK: DupThresh SACKed, sent before the newest
 * delivered one and a round trip old) starts recovery, and with the pipe
 * empty PRR's slow-start bound lets every lost segment go at once, the
 * SACKed ones not (packetdrill sack/sack-route-refresh-ip-tos.pkt); one
 * hole a duplicate ACK, it was, and the rest waited for the RTO. */
static void test_established_prr_holes_at_once(void)
{
	struct tf_opts o = { .nsack = 2 };
	struct sl_sock *so;
	uint32_t iss, lost = 0, other = 0;

	tf_init("ph");
	so = conn(&iss, true);
	sl_tcp_send(T.s, so, pattern, 10000, 0, tf_now_us);
	tf_advance_ms(10);
	tf_clear();
	o.sack[0][0] = iss + 3001;
	o.sack[0][1] = iss + 4001;
	o.sack[1][0] = iss + 6001;
	o.sack[1][1] = iss + 10001;
	ack(so, iss + 2001, &o);
	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (g.seq == iss + 2001 || g.seq == iss + 4001 || g.seq == iss + 5001)
			lost++;
		else if (g.plen)
			other++;
	}
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "an advancing ACK with SACK blocks: recovery");
	tap_eq(lost, 3, "the three lost segments retransmitted at once");
	tap_eq(other, 0, "nothing SACKed sent again");
	tap_eq(so->tcp.ssthresh, 10000 * 717 / 1024,
	       "ssthresh from cwnd before the ACK (not grown by it first, as Linux)");
	ack(so, iss + 10001, NULL);
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY) && so->tcp.cwnd == so->tcp.ssthresh,
	       "the full ACK ends it, cwnd = ssthresh");
	tf_finish();
}

/* RFC 8985 7 Tail Loss Probe: with SACK, data outstanding and no ACK,
 * the last segment goes again after PTO = 2 SRTT + 2 ms (Linux), long
 * before the RTO, once; the RTO then runs from the probe. Without SACK,
 * no probe (as Linux). */
static void tail_loss_probe(bool sack)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	uint64_t ms;

	uint64_t rto_ms;

	tf_init(sack ? "tlp" : "tln");
	so = conn(&iss, sack);
	tf_advance_ms(100);
	set_path(so, 20000);	/* a 20 ms path: RTO 220 ms */
	rto_ms = so->tcp.rto_us / 1000;
	sl_tcp_send(T.s, so, pattern, 4000, 0, tf_now_us);
	tf_clear();
	ms = wait_frame(1000);
	g = tf_last();
	if (!sack) {
		tap_ok(ms + 1 >= rto_ms && ms <= rto_ms + 1 &&
		       g.seq == iss + 1,
		       "no SACK: no probe; the RTO (SRTT + 200 ms) sends the first segment at %llu ms",
		       (unsigned long long)ms);
		tf_finish();
		return;
	}
	tap_ok(ms >= 42 && ms <= 43, "SACK: a probe after 2 SRTT + 2 ms (%llu ms)",
	       (unsigned long long)ms);
	tap_ok(T.n == 1 && g.seq == iss + 3001 && g.plen == 1000, "the last segment again");
	tap_eq(tf_counter(SL_C_tcp_loss_probe), 1, "counted tcp_loss_probe");
	tap_eq(tf_counter(SL_C_tcp_rto), 0, "no RTO yet");
	tf_clear();
	ms = wait_frame(1000);
	g = tf_last();
	tap_ok(ms + 1 >= rto_ms && ms <= rto_ms + 1 &&
	       g.seq == iss + 1,
	       "one probe only: the RTO, from the probe, %llu ms later", (unsigned long long)ms);
	ack(so, iss + 4001, NULL);
	tap_ok(!(so->tcp.tflags & SL_TF_TLP) && !so->tcp.t_tlp, "all ACKed: no probe pending");
	tf_finish();
}

static void test_established_tail_loss_probe(void)
{
	tail_loss_probe(true);
	tail_loss_probe(false);
}

/* SACK scoreboard: holes below SACKed data are retransmitted once
 * RFC 6675's IsLost() holds (more than two segments SACKed above them);
 * SACKed segments are not (RFC 2018, RFC 6675). */
static void test_established_sack_recovery(void)
{
	struct sl_sock *so;
	uint32_t iss;
	struct tf_opts o = { 0 };
	int rexmit_1001 = 0, rexmit_3001 = 0, rexmit_sacked = 0;

	tf_init("sr");
	so = conn(&iss, true);
	tap_ok(so->tcp.tflags & SL_TF_SACK, "SACK agreed");
	sl_tcp_send(T.s, so, pattern, 7000, 0, tf_now_us);
	ack(so, iss + 1001, NULL);
	tf_clear();
	/* Segments 2 and 4 lost: blocks 3, then 3 and 5-7. */
	o.nsack = 1;
	o.sack[0][0] = iss + 2001;
	o.sack[0][1] = iss + 3001;
	ack(so, iss + 1001, &o);
	o.nsack = 2;
	o.sack[1][0] = iss + 4001;
	o.sack[1][1] = iss + 5001;
	ack(so, iss + 1001, &o);
	o.sack[1][1] = iss + 6001;
	ack(so, iss + 1001, &o);
	o.sack[1][1] = iss + 7001;
	ack(so, iss + 1001, &o);
	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (!g.plen)
			continue;
		if (g.seq == iss + 1001)
			rexmit_1001++;
		else if (g.seq == iss + 3001)
			rexmit_3001++;
		else
			rexmit_sacked++;
	}
	tap_eq(rexmit_1001, 1, "first hole retransmitted once");
	tap_eq(rexmit_3001, 1, "second hole retransmitted from the SACK information");
	tap_eq(rexmit_sacked, 0, "SACKed segments not retransmitted");
	ack(so, iss + 7001, NULL);
	tap_eq(so->tcp.sndq_bytes, 0, "all acknowledged");
	tf_finish();
}

/* A SACK connection over a 10 ms path, the round trip known. */
static struct sl_sock *rack_conn(uint32_t *iss)
{
	struct sl_sock *so = conn(iss, true);

	set_path(so, 10000);
	return so;
}

static unsigned int frames_at(uint32_t seq)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		n += g.plen && g.seq == seq;
	}
	return n;
}

/* RFC 8985 6.3: one segment SACKed above three holes is not DupThresh;
 * RACK waits a reordering window (min_RTT/4) past the round trip, then
 * its timer takes the three for lost and recovery starts, PRR sending
 * one (packetdrill fast_retransmit/fr-4pkt-fack-last-mss.pkt, Linux
 * 2 ms later). The probe (2 SRTT) is not sent. */
static void test_established_rack_reo_timer(void)
{
	struct tf_opts o = { .nsack = 1 };
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	uint64_t ms;

	tf_init("rr");
	so = rack_conn(&iss);
	sl_tcp_send(T.s, so, pattern, 4000, 0, tf_now_us);
	tf_advance_ms(10);
	tf_clear();
	o.sack[0][0] = iss + 3001;
	o.sack[0][1] = iss + 4001;
	ack(so, iss + 1, &o);
	tap_ok(T.n == 0 && !(so->tcp.tflags & SL_TF_RECOVERY), "one SACKed segment: nothing yet");
	tap_ok(so->tcp.t_reo == tf_now_us + 2500 + 2000, "the reordering timer: 2.5 + 2 ms");
	ms = wait_frame(1000);
	g = tf_last();
	tap_ok(ms == 5 && T.n == 1 && g.seq == iss + 1 && g.plen == 1000,
	       "%llu ms later the first hole goes, alone", (unsigned long long)ms);
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "in recovery");
	tap_eq(tf_counter(SL_C_tcp_rack_reo_timeout), 1, "counted tcp_rack_reo_timeout");
	tap_eq(tf_counter(SL_C_tcp_rack_lost), 3, "three taken for lost (tcp_rack_lost)");
	tap_eq(tf_counter(SL_C_tcp_loss_probe), 0, "no tail loss probe");
	ack(so, iss + 4001, NULL);
	tf_finish();
}

/* RFC 8985 6.2: a retransmission is lost too once a segment sent after
 * it is delivered and RACK.rtt has passed since it left: it goes again
 * at once, where the scoreboard alone waited for the RTO. */
static void test_established_rack_lost_retransmit(void)
{
	struct tf_opts o = { .nsack = 1 };
	struct sl_sock *so;
	uint32_t iss;

	tf_init("rl");
	so = rack_conn(&iss);
	sl_tcp_send(T.s, so, pattern, 10000, 0, tf_now_us);
	tf_advance_ms(10);
	tf_clear();
	o.sack[0][0] = iss + 4001;
	o.sack[0][1] = iss + 10001;
	ack(so, iss + 1, &o);
	tap_ok((so->tcp.tflags & SL_TF_RECOVERY) && frames_at(iss + 1) == 1 &&
	       frames_at(iss + 3001) == 1, "six SACKed: the four holes lost, all sent again");
	tap_eq(tf_counter(SL_C_tcp_rack_lost), 4, "four taken for lost");
	tf_advance_ms(5);
	tf_clear();
	sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	tap_ok(T.n == 1 && tf_last().seq == iss + 10001, "new data after them, 5 ms on");
	tf_advance_ms(10);
	tf_clear();
	o.sack[0][1] = iss + 11001;
	ack(so, iss + 1, &o);
	tap_ok(frames_at(iss + 1) == 1, "it is SACKed 10 ms later: the retransmissions, 15 ms "
	       "old, are lost and the first goes again");
	tap_eq(tf_counter(SL_C_tcp_rto), 0, "no RTO");
	tap_ok(tf_counter(SL_C_tcp_rack_lost) > 4, "counted again (%llu)",
	       (unsigned long long)tf_counter(SL_C_tcp_rack_lost));
	ack(so, iss + 11001, NULL);
	tf_finish();
}

/* Reordering (a segment never sent again delivered below the highest
 * SACKed one) keeps RACK's window at min_RTT/4 even with DupThresh
 * segments SACKed (Linux's reord_seen); a DSACK widens it by a step. */
static void test_established_rack_reordering(void)
{
	struct tf_opts o = { .nsack = 1 };
	struct sl_sock *so;
	uint32_t iss;
	uint64_t ms;

	tf_init("ro");
	so = rack_conn(&iss);
	sl_tcp_send(T.s, so, pattern, 6000, 0, tf_now_us);
	tf_advance_ms(10);
	tf_clear();
	o.sack[0][0] = iss + 2001;
	o.sack[0][1] = iss + 3001;
	ack(so, iss + 1, &o);
	ack(so, iss + 1001, &o);
	tap_eq(tf_counter(SL_C_tcp_rack_reord), 1, "1:1001 came after 2001:3001: reordering");
	o.sack[0][1] = iss + 5001;
	ack(so, iss + 1001, &o);
	tap_ok(frames_at(iss + 1001) == 0 && !(so->tcp.tflags & SL_TF_RECOVERY),
	       "three SACKed above the hole, but reordering seen: it waits");
	ms = wait_frame(1000);
	tap_ok(ms == 5 && frames_at(iss + 1001) == 1, "the timer sends it %llu ms later",
	       (unsigned long long)ms);
	tap_eq(so->tcp.reo_steps, 0, "no DSACK yet: one step");
	o.sack[0][0] = iss + 1001;
	o.sack[0][1] = iss + 2001;
	ack(so, iss + 6001, &o);
	tap_eq(tf_counter(SL_C_tcp_dsack_rx), 1, "a block below the ACK: DSACK (tcp_dsack_rx)");
	tap_eq(so->tcp.reo_steps, 2, "the window widened to two steps");
	tf_finish();
}

/* RFC 8985 7.4 (Linux's tcp_process_tlp_ack()): a probe that sent the
 * last segment again and is followed by an ACK past its end with no
 * DSACK repaired a loss: cwnd comes down as for one. A DSACK of the
 * probe says both copies arrived: no reduction. */
static void tlp_episode(bool dsack)
{
	struct tf_opts o = { .nsack = 1 };
	struct sl_sock *so;
	uint32_t iss, cwnd;
	uint64_t ms;

	tf_init(dsack ? "td" : "tr");
	so = rack_conn(&iss);
	sl_tcp_send(T.s, so, pattern, 4000, 0, tf_now_us);
	tf_clear();
	ms = wait_frame(1000);
	tap_ok(ms == 22 && tf_last().seq == iss + 3001, "%s: the probe after 2 SRTT + 2 ms (%llu)",
	       dsack ? "DSACK" : "no DSACK", (unsigned long long)ms);
	o.sack[0][0] = iss + 3001;
	o.sack[0][1] = iss + 4001;
	ack(so, iss + 4001, dsack ? &o : NULL);
	tap_ok(!!(so->tcp.tflags & SL_TF_TLP) == !dsack,
	       dsack ? "the DSACK ends the episode" : "an ACK at its end leaves it open");
	sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	cwnd = so->tcp.cwnd;
	tf_advance_ms(10);
	ack(so, iss + 5001, NULL);
	tap_ok(!(so->tcp.tflags & SL_TF_TLP), "an ACK past it ends it");
	if (dsack) {
		tap_eq(tf_counter(SL_C_tcp_tlp_recovery), 0, "no loss: no reduction");
		tap_ok(so->tcp.cwnd >= cwnd, "cwnd not cut (%u)", so->tcp.cwnd);
	} else {
		tap_eq(tf_counter(SL_C_tcp_tlp_recovery), 1, "a loss repaired (tcp_tlp_recovery)");
		tap_ok(so->tcp.cwnd < cwnd && so->tcp.cwnd == so->tcp.ssthresh,
		       "cwnd cut to ssthresh (%u from %u)", so->tcp.cwnd, cwnd);
	}
	tf_finish();
}

static void test_established_tlp_episode(void)
{
	tlp_episode(false);
	tlp_episode(true);
}

/* RFC 8985 7.2: with one segment out PTO = 2 SRTT + RTO_MIN, later than
 * the RTO here: the probe goes at the RTO's time in its place, and the
 * RTO runs again from it, not backed off (packetdrill own/tlp-at-rto). */
static void test_established_tlp_at_rto(void)
{
	struct sl_sock *so;
	uint32_t iss;
	uint64_t ms;

	tf_init("ta");
	so = rack_conn(&iss);
	sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	tf_clear();
	ms = wait_frame(1000);
	tap_ok(ms == 210 && tf_counter(SL_C_tcp_loss_probe) == 1 && tf_counter(SL_C_tcp_rto) == 0,
	       "the probe at the RTO's time (SRTT + 200 ms: %llu ms), no RTO", (unsigned long long)ms);
	tf_clear();
	ms = wait_frame(1000);
	tap_ok(ms == 210 && tf_counter(SL_C_tcp_rto) == 1, "the RTO 210 ms later (%llu ms)",
	       (unsigned long long)ms);
	ack(so, iss + 1001, NULL);
	tf_finish();
}

/* CUBIC grows cwnd in congestion avoidance and never below Reno's. */
/*
 * An RTO inside a fast recovery keeps the ssthresh the recovery set:
 * Linux's tcp_enter_loss() reduces only outside Recovery, once SND.UNA
 * has passed the recovery point, or at a first RTO of a Loss; so a
 * retransmission lost on a lossy path costs one reduction, not a second
 * from the flight left (here 0.7 x 6 segments where the recovery set
 * 0.7 x 10).  A second RTO in a row reduces nothing either; an RTO after
 * the recovery ended reduces again.
 */
static void test_established_rto_in_recovery(void)
{
	struct sl_sock *so;
	uint32_t iss, ssthresh;

	tf_init("rr");
	so = conn(&iss, false);
	sl_tcp_send(T.s, so, pattern, 10000, 0, tf_now_us);
	tf_advance_ms(10);
	for (int i = 0; i < 3; i++)
		ack(so, iss + 1, NULL);
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "three duplicate ACKs: recovery");
	ssthresh = so->tcp.ssthresh;
	tap_eq(ssthresh, 10000 * 717 / 1024, "ssthresh = beta_cubic * cwnd");
	/* The fifth segment was lost too: a partial ACK sends it again,
	 * and the flight is six segments now. */
	tf_clear();
	ack(so, iss + 4001, NULL);
	tap_ok((so->tcp.tflags & SL_TF_RECOVERY) && tf_parse(0).seq == iss + 4001,
	       "a partial ACK: the next hole sent again, still in recovery");
	tf_clear();
	tap_ok(wait_frame(2000) < 2000 && tf_last().seq == iss + 4001,
	       "that retransmission lost: the RTO");
	tap_eq(tf_counter(SL_C_tcp_rto), 1, "counted");
	tap_eq(so->tcp.ssthresh, ssthresh, "ssthresh kept");
	tap_eq(so->tcp.cwnd, 1000, "cwnd one segment");
	tf_clear();
	tap_ok(wait_frame(4000) < 4000 && tf_counter(SL_C_tcp_rto) == 2, "lost again: a second RTO");
	tap_eq(so->tcp.ssthresh, ssthresh, "ssthresh still kept");
	/* Everything ACKed: the next loss is a new episode. */
	tf_advance_ms(10);
	ack(so, iss + 10001, NULL);
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY) && !so->tcp.backoff, "all ACKed");
	sl_tcp_send(T.s, so, pattern, 3000, 0, tf_now_us);
	tf_clear();
	tap_ok(wait_frame(4000) < 4000 && tf_counter(SL_C_tcp_rto) == 3, "a loss after it: an RTO");
	tap_ok(so->tcp.ssthresh < ssthresh, "that one reduces (%u from %u)", so->tcp.ssthresh, ssthresh);
	ack(so, so->tcp.snd_max, NULL);
	tf_finish();
}

/* An RTO during an ECN reduction (Linux's CWR state): tcp_enter_loss()
 * keeps the ssthresh the ECN-Echo set while SND.UNA is short of where
 * the reduction began (high_seq), as inside a recovery; reduced again
 * from what was left in flight before (0.7 x 0.7, or of the flight). */
static void test_established_rto_in_ecn_cwr(void)
{
	struct sl_sock *so;
	uint32_t iss, ssthresh;

	tf_init("rc");
	so = conn(&iss, false);
	so->tcp.ecn |= SL_ECN_OK;	/* agreed in the handshake */
	sl_tcp_send(T.s, so, pattern, 10000, 0, tf_now_us);
	tf_advance_ms(10);
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_ | TH_ECE_, IRS + 1, iss + 1001, 65535,
		    NULL, NULL, 0);
	tap_ok(so->tcp.ecn & SL_ECN_CWR_WND, "an ECN-Echo: the reduction begins");
	ssthresh = so->tcp.ssthresh;
	tap_eq(ssthresh, 10000 * 717 / 1024, "ssthresh = beta_cubic * cwnd");
	tf_clear();
	tap_ok(wait_frame(2000) < 2000 && tf_last().seq == iss + 1001, "the rest lost: the RTO");
	tap_eq(tf_counter(SL_C_tcp_rto), 1, "counted");
	tap_eq(so->tcp.ssthresh, ssthresh, "ssthresh kept");
	tap_eq(so->tcp.cwnd, 1000, "cwnd one segment");
	tap_ok(!(so->tcp.ecn & SL_ECN_CWR_WND) && (so->tcp.ecn & SL_ECN_QUEUE_CWR),
	       "the timeout's reduction replaces the ECN one; CWR still to go");
	ack(so, so->tcp.snd_max, NULL);
	tf_finish();
}

/* The data segments sent since tf_clear(), as "seq-offset," pairs from
 * iss + 1, in buf. */
static const char *sent_since(uint32_t iss, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (unsigned int i = 0; i < T.n && o < len; i++) {
		struct tf_seg g = tf_parse(i);

		if (g.plen)
			o += (size_t)snprintf(buf + o, len - o, "%u,", g.seq - iss - 1);
	}
	return buf;
}

/*
 * The SACK scoreboard outlives an RTO, as Linux's tcp_timeout_mark_lost():
 * what was SACKed is not sent again, and cwnd does not count it (Linux's
 * tcp_packets_in_flight()), even when the ACKs after the RTO repeat no
 * SACK block; unless the first unacknowledged segment is SACKed
 * (reneging, RFC 2018 8): then every mark goes. Ten segments, the fourth
 * SACKed, the first three lost, a recovery, its retransmission lost, the
 * RTO.
 */
static void test_established_rto_keeps_sack(void)
{
	struct tf_opts o = { .nsack = 1 };
	struct sl_sock *so;
	uint32_t iss;
	char buf[128];

	tf_init("rs");
	so = conn(&iss, true);
	for (int i = 0; i < 10; i++)
		sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	tf_advance_ms(10);
	o.sack[0][0] = iss + 3001;
	o.sack[0][1] = iss + 4001;
	ack(so, iss + 1, &o);
	tf_clear();
	tap_ok(wait_frame(2000) < 2000 && tf_counter(SL_C_tcp_rto) == 0 && T.n,
	       "SACK of the fourth: the first sent again (RACK)");
	while (tf_counter(SL_C_tcp_rto) == 0 && wait_frame(2000) < 2000)
		;
	tap_eq(tf_counter(SL_C_tcp_rto), 1, "the retransmission lost too: the RTO");
	tap_ok(so->tcp.sacked_bytes == 1000, "the SACKed segment still marked (%u)",
	       so->tcp.sacked_bytes);
	tf_advance_ms(10);
	tf_clear();
	ack(so, iss + 1001, NULL);
	tap_ok(!strcmp(sent_since(iss, buf, sizeof(buf)), "1000,2000,"),
	       "an ACK with no SACK block: the second and third again (%s)", buf);
	tf_advance_ms(10);
	tf_clear();
	ack(so, iss + 2001, NULL);
	tap_ok(!strcmp(sent_since(iss, buf, sizeof(buf)), "4000,5000,"),
	       "the next: the SACKed fourth stepped over, two after it (%s)", buf);
	ack(so, so->tcp.snd_max, NULL);
	tf_finish();

	/* Reneging: SND.UNA reached a SACKed segment, and the RTO still came. */
	tf_init("rn");
	so = conn(&iss, true);
	for (int i = 0; i < 4; i++)
		sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	tf_advance_ms(10);
	o.sack[0][0] = iss + 2001;
	o.sack[0][1] = iss + 3001;
	ack(so, iss + 1, &o);
	tf_advance_ms(1);
	ack(so, iss + 2001, NULL);
	tf_clear();
	while (tf_counter(SL_C_tcp_rto) == 0 && wait_frame(2000) < 2000)
		;
	tap_ok(tf_counter(SL_C_tcp_rto) == 1 && so->tcp.sacked_bytes == 0,
	       "reneging: at the RTO every SACK mark dropped");
	tap_ok(tf_last().seq == iss + 2001, "the SACKed head sent again");
	ack(so, so->tcp.snd_max, NULL);
	tf_finish();
}

static void test_established_cubic_growth(void)
{
	struct sl_sock *so;
	uint32_t iss, una, w0;

	tf_init("cg");
	so = conn(&iss, false);
	so->tcp.ssthresh = so->tcp.cwnd;	/* start in congestion avoidance */
	w0 = so->tcp.cwnd;
	una = iss + 1;
	for (int rtt = 0; rtt < 20; rtt++) {
		full_rtt(so);
		una = so->tcp.snd_una;
	}
	(void)una;
	tap_ok(so->tcp.cwnd > w0, "cwnd grew in congestion avoidance");
	tap_ok(so->tcp.cwnd < w0 * 4, "and slower than slow start");
	tf_finish();
}

/* RFC 6298 5.7 and Karn: after a retransmitted SYN the RTO starts at 3 s
 * and the handshake gives no RTT sample. */
static void test_syn_sent_retransmitted_rto(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("s7"), T.s), SL_SOCK_TCP);
	uint32_t iss;

	sl_sock_bind(T.s, so, 0, 0);
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	iss = tf_last().seq;
	tf_advance_ms(1500);
	tap_eq(T.n, 2, "SYN retransmitted once");
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_SYN_ | TH_ACK_, IRS, iss + 1, 8192, NULL,
		    NULL, 0);
	tap_eq(so->state, SL_TCP_ESTABLISHED, "established");
	tap_eq(so->tcp.srtt_us, 0, "no RTT sample from a retransmitted SYN (Karn)");
	tap_eq(so->tcp.rto_us, 3000000, "RTO 3 s for the data (RFC 6298 5.7)");
	tf_finish();
}

/* RFC 5681 3.2, RFC 6582 3.2 step 2: the very first data segment is lost
 * and three duplicate ACKs of ISS + 1 come back: fast retransmit. */
static void test_established_first_segment_lost(void)
{
	struct sl_sock *so;
	uint32_t iss = 0;

	tf_init("fr0");
	so = conn(&iss, false);
	sl_tcp_send(T.s, so, pattern, 8000, 0, tf_now_us);
	tf_clear();
	for (int i = 0; i < 3; i++)
		ack(so, iss + 1, NULL);
	tap_ok(T.n >= 1 && tf_parse(0).seq == iss + 1 && tf_parse(0).plen == 1000,
	       "three duplicate ACKs of ISS + 1: the first segment again");
	tap_eq(tf_counter(SL_C_tcp_fast_retransmit), 1, "counted tcp_fast_retransmit");
	tap_ok(so->tcp.tflags & SL_TF_RECOVERY, "in recovery");
	ack(so, iss + 8001, NULL);
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY), "the full ACK ends it");
	tf_finish();
}

/* RFC 5681 4.1: after more than an RTO with nothing received and nothing
 * in flight, sending restarts from RW = min(IW, cwnd), and CUBIC's epoch
 * is over (RFC 9438 5.8); without the idle time the window is used. */
static void test_established_restart_after_idle(void)
{
	struct sl_sock *so;
	uint32_t iss = 0;
	unsigned int segs;

	tf_init("idle");
	so = conn(&iss, false);
	so->tcp.cwnd = so->tcp.ssthresh = 40000;	/* as if grown */
	so->tcp.cc_epoch_us = tf_now_us;
	sl_tcp_send(T.s, so, pattern, 20000, 0, tf_now_us);
	tap_eq(T.n, 20, "not idle: 20 segments at once");
	ack(so, iss + 20001, NULL);
	tf_advance_ms(5000);
	tf_clear();
	sl_tcp_send(T.s, so, pattern, 20000, 0, tf_now_us);
	segs = T.n;
	tap_eq(segs, 10, "5 s idle: the restart window, IW = 10 segments (RFC 6928)");
	tap_eq(so->tcp.cc_epoch_us, 0, "and CUBIC's epoch is reset");
	tf_finish();
}

/*
 * After an RTO pulls SND.NXT back to SND.UNA, a pure ACK still carries
 * the highest sequence sent (as Linux's, whose SND.NXT never goes back):
 * the peer may already hold everything sent, so a sequence number below
 * its RCV.NXT would make it drop the ACK as out of window.  Both ends in
 * that state ignored each other's ACKs for ever (seen over verbs).
 */
static void test_established_ack_after_rto_carries_snd_max(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("ackmax");
	so = conn(&iss, false);
	sl_tcp_send(T.s, so, pattern, 3000, 0, tf_now_us);
	tap_eq(so->tcp.snd_max, iss + 3001, "three full segments out");
	tf_clear();
	wait_frame(5000);
	g = tf_last();
	tap_ok(T.n == 1 && g.seq == iss + 1 && g.plen == 1000,
	       "RTO: the first alone is sent again (cwnd 1 MSS)");
	tap_ok(SEQ_LT(so->tcp.snd_nxt, so->tcp.snd_max), "SND.NXT went back");
	/* An old duplicate from the peer (all below RCV.NXT) asks for an ACK. */
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS, iss + 1, 65535, "x", 1);
	g = tf_last();
	tap_ok(T.n >= 1 && g.flags == TH_ACK_ && g.plen == 0, "answered with a pure ACK");
	tap_eq(g.seq, iss + 3001, "whose sequence number is SND.MAX, not the rewound SND.NXT");
	ack(so, iss + 3001, NULL);
	tap_eq(so->tcp.snd_una, iss + 3001, "the peer's ACK of everything is taken");
	tf_finish();
}

/* ---- undo (RFC 3522, RFC 3708, RFC 5682), as Linux's tcp_try_undo_*() ---- */

/* A connection with SACK or not and timestamps or not; the first
 * segment's TSval, to echo, in *tsv after undo_send(). */
static struct sl_sock *undo_conn(uint32_t *iss, bool sack, bool ts)
{
	struct sl_sock *so = tf_connect(IRS, iss, &(struct tf_opts){ .mss = 1000, .sack_ok = sack,
								      .ts = ts, .tsval = 100 },
					65535);
	int one = 1;

	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	so->tcp.min_rtt_us = 10000;
	set_path(so, 10000);
	return so;
}

static uint32_t peer_ts = 200;

static void ack_ts(struct sl_sock *so, uint32_t a, uint32_t ecr, uint32_t sst, uint32_t sen)
{
	struct tf_opts o = { .ts = !!ecr, .tsval = ++peer_ts, .tsecr = ecr, .nsack = !!sen };

	o.sack[0][0] = sst;
	o.sack[0][1] = sen;
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, a, 65535, &o, NULL, 0);
}

/* Ten segments out; returns the first one's TSval (0 without). */
static uint32_t undo_send(struct sl_sock *so, unsigned int segs)
{
	tf_clear();
	sl_tcp_send(T.s, so, pattern, segs * so->tcp.mss, 0, tf_now_us);
	return T.n ? tf_parse(0).tsval : 0;
}

/* A recovery RACK starts for the second segment (three SACKed above),
 * then its end echoes the first transmission's TSval: the original
 * arrived, the recovery is undone at its end (TCPFullUndo), or on a
 * partial ACK with no retransmission out (TCPPartialUndo). */
static void undo_recovery_ts(bool partial)
{
	struct sl_sock *so;
	uint32_t iss, tsv, m, cwnd;

	tf_init(partial ? "up" : "uf");
	so = undo_conn(&iss, true, true);
	tap_ok(so->tcp.tflags & SL_TF_TS, "%s: timestamps agreed", partial ? "partial" : "full");
	m = so->tcp.mss;
	cwnd = so->tcp.cwnd;
	tsv = undo_send(so, 10);
	tf_advance_ms(10);
	tf_clear();
	ack_ts(so, iss + 1 + m, tsv, iss + 1 + 2 * m, iss + 1 + 5 * m);
	tap_ok((so->tcp.tflags & SL_TF_RECOVERY) && frames_at(iss + 1 + m) == 1 &&
	       so->tcp.cwnd < cwnd, "RACK: a recovery, the second segment sent again, cwnd cut");
	tf_advance_ms(5);
	ack_ts(so, iss + 1 + (partial ? 5 : 10) * m, tsv, 0, 0);
	tap_eq(tf_counter(partial ? SL_C_tcp_partial_undo : SL_C_tcp_full_undo), 1,
	       "its ACK echoes the first transmission's TSval: undone");
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY) && so->tcp.cwnd >= cwnd &&
	       so->tcp.ssthresh > cwnd, "out of the recovery, cwnd %u >= %u, ssthresh back",
	       so->tcp.cwnd, cwnd);
	tap_eq(tf_counter(partial ? SL_C_tcp_full_undo : SL_C_tcp_partial_undo), 0,
	       "counted once");
	ack_ts(so, iss + 1 + 10 * m, tsv, 0, 0);
	tf_finish();
}

/* The same recovery without timestamps ends with cwnd = ssthresh; then
 * a DSACK reports the retransmission arrived twice: every retransmission
 * was needless, cwnd and ssthresh go back (TCPDSACKUndo). A DSACK of a
 * segment never sent again (below the episode) undoes nothing. */
static void test_established_undo_dsack(void)
{
	struct sl_sock *so;
	uint32_t iss, cwnd;

	tf_init("ud");
	so = undo_conn(&iss, true, false);
	cwnd = so->tcp.cwnd;
	undo_send(so, 10);
	tf_advance_ms(10);
	tf_clear();
	ack_ts(so, iss + 1001, 0, iss + 2001, iss + 5001);
	tap_ok(frames_at(iss + 1001) == 1, "the second segment sent again");
	tf_advance_ms(5);
	ack_ts(so, iss + 10001, 0, 0, 0);
	tap_ok(!(so->tcp.tflags & SL_TF_RECOVERY) && so->tcp.cwnd == so->tcp.ssthresh &&
	       so->tcp.cwnd < cwnd, "the recovery ends, cwnd = ssthresh (%u)", so->tcp.cwnd);
	ack_ts(so, iss + 10001, 0, iss + 1, iss + 1001);
	tap_eq(tf_counter(SL_C_tcp_dsack_undo), 0, "a DSACK below the episode: nothing");
	ack_ts(so, iss + 10001, 0, iss + 1001, iss + 2001);
	tap_eq(tf_counter(SL_C_tcp_dsack_undo), 1, "the retransmission's DSACK: undone");
	tap_ok(so->tcp.cwnd >= cwnd && so->tcp.ssthresh > cwnd, "cwnd %u >= %u, ssthresh back",
	       so->tcp.cwnd, cwnd);
	tf_finish();
}

/* RFC 3522 after an RTO, no SACK: the ACK of everything echoes the
 * TSval of the first transmission, older than the retransmission's: the
 * timeout was spurious (TCPLossUndo), cwnd goes back, nothing else is
 * sent again. */
static void test_established_undo_rto_eifel(void)
{
	struct sl_sock *so;
	uint32_t iss, tsv, cwnd, m;
	uint64_t ms;

	tf_init("ue");
	so = undo_conn(&iss, false, true);
	m = so->tcp.mss;
	cwnd = so->tcp.cwnd;
	tsv = undo_send(so, 10);
	tf_clear();
	ms = wait_frame(1000);
	tap_ok(ms == 210 && tf_last().seq == iss + 1 && tf_counter(SL_C_tcp_rto) == 1,
	       "the RTO (SRTT + 200 ms) sends the first segment again (%llu ms)",
	       (unsigned long long)ms);
	tf_advance_ms(1);
	ack_ts(so, iss + 1 + m, tsv, 0, 0);
	tap_eq(tf_counter(SL_C_tcp_loss_undo), 1, "its ACK echoes the original's TSval: undone");
	tap_ok(so->tcp.cwnd >= cwnd && !so->tcp.backoff, "cwnd back (%u >= %u)", so->tcp.cwnd,
	       cwnd);
	tap_ok(frames_at(iss + 1 + m) == 0 && so->tcp.snd_nxt == so->tcp.snd_max,
	       "the rest is in flight: not sent again");
	tap_eq(tf_counter(SL_C_tcp_spurious_rto), 0, "not F-RTO's");
	ack_ts(so, iss + 1 + 10 * m, tsv, 0, 0);
	tf_finish();
}

/* F-RTO (RFC 5682 3.1), neither SACK nor timestamps: the RTO's
 * retransmission acknowledged, new data goes instead of the old; then an
 * ACK of old data never sent again: spurious (TCPSpuriousRTOs), undone.
 * Or a duplicate ACK: the loss was real, the old data goes again. */
static void frto(bool spurious)
{
	struct sl_sock *so;
	uint32_t iss, cwnd;

	tf_init(spurious ? "fs" : "fr");
	so = undo_conn(&iss, false, false);
	cwnd = so->tcp.cwnd;
	undo_send(so, 12);
	tap_ok(so->tcp.snd_max == iss + 10001, "%s: ten segments out",
	       spurious ? "spurious" : "real");
	tf_clear();
	wait_frame(1000);
	tf_advance_ms(1);
	tf_clear();
	ack_ts(so, iss + 1001, 0, 0, 0);
	tap_ok(frames_at(iss + 10001) == 1 && frames_at(iss + 1001) == 0,
	       "the RTO's retransmission acknowledged: new data, not the next old segment");
	tf_clear();
	if (spurious) {
		ack_ts(so, iss + 3001, 0, 0, 0);
		tap_eq(tf_counter(SL_C_tcp_spurious_rto), 1, "old data never sent again ACKed: "
		       "spurious (tcp_spurious_rto)");
		tap_eq(tf_counter(SL_C_tcp_loss_undo), 1, "undone (tcp_loss_undo)");
		tap_ok(so->tcp.cwnd >= cwnd && frames_at(iss + 3001) == 0,
		       "cwnd back (%u), nothing old sent again", so->tcp.cwnd);
	} else {
		ack_ts(so, iss + 1001, 0, 0, 0);
		tap_ok(frames_at(iss + 1001) == 1 && tf_counter(SL_C_tcp_loss_undo) == 0 &&
		       tf_counter(SL_C_tcp_spurious_rto) == 0,
		       "a duplicate ACK: real, the old data goes again, no undo");
	}
	ack_ts(so, iss + 12001, 0, 0, 0);
	tf_finish();
}

/* F-RTO with SACK (Linux's tcp_frto=2 is RFC 5682's SACK-enhanced
 * version): after the RTO's first ACK and the new data, a SACK of an old
 * segment never sent again says the timeout was spurious; a SACK of the
 * new data only says it was real. */
static void frto_sack(bool spurious)
{
	struct sl_sock *so;
	uint32_t iss, max0;

	tf_init(spurious ? "ss" : "sr");
	so = undo_conn(&iss, true, false);
	undo_send(so, 12);
	tf_clear();
	while (!tf_counter(SL_C_tcp_rto) && wait_frame(1000) < 1000)
		;
	tap_ok(tf_counter(SL_C_tcp_rto) == 1 && tf_last().seq == iss + 1,
	       "SACK %s: the RTO sends the first segment again (after the probe)",
	       spurious ? "spurious" : "real");
	tf_advance_ms(1);
	tf_clear();
	max0 = so->tcp.snd_max;		/* the probe took one new segment */
	ack_ts(so, iss + 1001, 0, 0, 0);
	tap_ok(frames_at(max0) == 1 && frames_at(iss + 1001) == 0,
	       "its ACK: new data, not the next old segment");
	tf_clear();
	if (spurious)
		ack_ts(so, iss + 1001, 0, iss + 2001, iss + 3001);
	else
		ack_ts(so, iss + 1001, 0, max0, max0 + 1000);
	tap_eq(tf_counter(SL_C_tcp_spurious_rto), spurious ? 1 : 0,
	       spurious ? "an old segment never sent again SACKed: spurious" :
			  "only the new data SACKed: real");
	tap_ok(spurious ? frames_at(iss + 1001) == 0 : frames_at(iss + 1001) == 1,
	       spurious ? "nothing old sent again" : "the old data goes again");
	ack_ts(so, iss + 12001, 0, 0, 0);
	tf_finish();
}

static void test_established_undo(void)
{
	undo_recovery_ts(false);
	undo_recovery_ts(true);
	test_established_undo_dsack();
	test_established_undo_rto_eifel();
	frto(true);
	frto(false);
	frto_sack(true);
	frto_sack(false);
}

int main(void)
{
	test_syn_sent_retransmitted_rto();
	test_syn_sent_syncnt();
	test_syn_sent_sysctl();
	test_established_rto_backoff();
	test_established_rtt_estimate();
	test_established_info_retrans();
	test_established_data_retries();
	test_established_fast_retransmit();
	test_established_limited_transmit();
	test_established_sack_dupacks_window_moves();
	test_established_prr_holes_at_once();
	test_established_tail_loss_probe();
	test_established_sack_recovery();
	test_established_rack_reo_timer();
	test_established_rack_lost_retransmit();
	test_established_rack_reordering();
	test_established_tlp_episode();
	test_established_tlp_at_rto();
	test_established_rto_in_recovery();
	test_established_rto_in_ecn_cwr();
	test_established_rto_keeps_sack();
	test_established_cubic_growth();
	test_established_user_timeout();
	test_established_reno();
	test_established_first_segment_lost();
	test_established_restart_after_idle();
	test_established_ack_after_rto_carries_snd_max();
	test_established_undo();
	return tap_done();
}
