// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP and the peer's window: a window that shrinks under data in flight
 * (RFC 9293 3.8.6.2.1), persist probes and the RTO budget (RFC 9293
 * 3.8.6.1, RFC 6298), the window of a SYN (RFC 7323 2.2).
 *
 *   test (peer 10.0.0.2:5000) --segments--> TCP core --> capture
 */
#include "tcp_fixture.h"

#define IRS 90000u

static uint8_t pattern[20000];

/* Established with an MSS of 1000 (1460 with mss1460), Nagle off. */
static struct sl_sock *conn(uint32_t *iss, uint16_t mss)
{
	struct sl_sock *so = tf_connect(IRS, iss, &(struct tf_opts){ .mss = mss }, 8192);
	int one = 1;

	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return so;
}

static void ack_win(struct sl_sock *so, uint32_t a, uint16_t win)
{
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, a, win, NULL, 0);
}

static unsigned int payload_sent(uint32_t *first_seq)
{
	unsigned int bytes = 0;

	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (g.plen && first_seq && !bytes)
			*first_seq = g.seq;
		bytes += g.plen;
	}
	return bytes;
}

/* RFC 9293 3.8.6.2.1: the peer shrinks its window to zero with 1000 bytes
 * outstanding.  The RTO becomes a zero-window probe; a peer that answers
 * them is never timed out, and the data goes once the window opens. */
static void test_established_window_shrunk_to_zero(void)
{
	struct sl_sock *so;
	uint32_t iss = 0, first = 0;
	unsigned int probes = 0, rst = 0;

	tf_init("wz");
	so = conn(&iss, 1000);
	tap_eq(sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us), 1000, "1000 bytes sent");
	tf_clear();
	ack_win(so, iss + 1, 0);
	for (int sec = 0; sec < 1800 && so->state == SL_TCP_ESTABLISHED; sec++) {
		tf_advance_ms(1000);
		for (unsigned int i = 0; i < T.n; i++)
			tf_parse(i).flags & TH_RST_ ? rst++ : probes++;
		if (T.n) {
			tf_clear();
			ack_win(so, iss + 1, 0);	/* it answers, window still 0 */
			tf_clear();
		}
	}
	tap_eq(so->state, SL_TCP_ESTABLISHED, "30 minutes of answered probes: not timed out");
	tap_ok(probes >= 10 && rst == 0, "probed (%u), no reset", probes);
	ack_win(so, iss + 1, 8192);
	tap_ok(payload_sent(&first) == 1000 && first == iss + 1,
	       "the window opens: the 1000 bytes go again at once");
	ack_win(so, iss + 1001, 8192);
	tap_eq(so->tcp.snd_una, iss + 1001, "and are acknowledged");
	tf_finish();
}

/* A window of zero with only our FIN outstanding: the FIN is
 * retransmitted (a zero window takes a bare FIN), not probed for. */
static void test_fin_wait_1_zero_window_fin_retransmitted(void)
{
	struct sl_sock *so;
	uint32_t iss = 0;
	int fins = 0;

	tf_init("wzf");
	so = conn(&iss, 1000);
	sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	ack_win(so, iss + 1001, 0);
	tf_clear();
	sl_tcp_shutdown(T.s, so, SHUT_WR, tf_now_us);
	tap_eq(so->state, SL_TCP_FIN_WAIT_1, "FIN-WAIT-1");
	tf_clear();
	tf_advance_ms(3000);
	for (unsigned int i = 0; i < T.n; i++)
		fins += (tf_parse(i).flags & TH_FIN_) && tf_parse(i).seq == iss + 1001;
	tap_ok(fins >= 1, "the FIN is retransmitted into the zero window (%d)", fins);
	ack_win(so, iss + 1002, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "and its ACK arrives");
	tf_finish();
}

/* The same when the peer stops answering: timed out after the data
 * retries' worth of unanswered probes (RFC 1122 4.2.2.17). */
static void test_established_window_zero_peer_gone(void)
{
	struct sl_sock *so;
	uint32_t iss = 0;

	tf_init("wzg");
	so = conn(&iss, 1000);
	sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	ack_win(so, iss + 1, 0);
	for (int sec = 0; sec < 7200 && so->state == SL_TCP_ESTABLISHED; sec++)
		tf_advance_ms(1000);
	tap_eq(so->state, SL_TCP_CLOSED, "unanswered probes: the connection ends");
	tap_eq(so->error, ETIMEDOUT, "with ETIMEDOUT");
	tf_finish();
}

/* RFC 9293 3.8.6.2.1: window 500 with 1000 bytes in flight: the RTO
 * retransmits the 500 that fit (the head buffer is cut), then the rest. */
static void test_established_window_shrunk_below_flight(void)
{
	struct sl_sock *so;
	uint32_t iss = 0, first = 0;
	unsigned int bytes;

	tf_init("ws");
	so = conn(&iss, 1000);
	sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us);
	tf_clear();
	ack_win(so, iss + 1, 500);
	tf_advance_ms(3000);
	bytes = payload_sent(&first);
	tap_ok(bytes >= 500 && first == iss + 1, "the RTO retransmits from SND.UNA");
	tap_eq(tf_parse(0).plen, 500, "no more than the window");
	tf_clear();
	ack_win(so, iss + 501, 500);
	tap_ok(payload_sent(&first) == 500 && first == iss + 501, "then the other 500");
	ack_win(so, iss + 1001, 8192);
	tap_eq(so->tcp.snd_una, iss + 1001, "all acknowledged");
	tap_eq(so->tcp.sndq_bytes, 0, "send queue empty");
	tf_finish();
}

/* A receiver that takes 1000 bytes of a 1460-byte segment and offers a
 * 1000-byte window: the retransmission starts at SND.UNA (the acked front
 * of the buffer is dropped) and fits the window. */
static void test_established_partial_segment_ack(void)
{
	struct sl_sock *so;
	uint32_t iss = 0, first = 0;

	tf_init("wp");
	so = conn(&iss, 1460);
	sl_tcp_send(T.s, so, pattern, 3000, 0, tf_now_us);
	tf_clear();
	ack_win(so, iss + 1001, 1000);
	tap_eq(so->tcp.sndq_bytes, 2000, "1000 bytes acknowledged, 2000 held");
	for (int ms = 0; ms < 3000 && !T.n; ms++)
		tf_advance_ms(1);
	tap_ok(payload_sent(&first) > 0 && first == iss + 1001, "RTO: resent from SND.UNA");
	tap_ok(payload_sent(NULL) <= 1000, "within the 1000-byte window");
	for (int i = 0; i < 20 && so->tcp.snd_una != iss + 3001; i++) {
		uint32_t a = so->tcp.snd_nxt;

		tf_clear();
		ack_win(so, a, 1000);
		tf_advance_ms(10);
	}
	tap_eq(so->tcp.snd_una, iss + 3001, "all 3000 bytes delivered, a window at a time");
	tap_eq(tf_counter(SL_C_tcp_rto) >= 1, 1, "after one RTO");
	tf_finish();
}

/* A zero window from the start (persist, RFC 9293 3.8.6.1), answered for
 * minutes; persist backs off.  Then the window opens, the data goes and
 * is lost: the first RTO must count as the first, not as one after
 * persist's backoff (which aborted at once), and RFC 5681 eq. 4 must
 * set ssthresh on it. */
static void persist_then_loss(const char *tag, int zero_ms)
{
	struct sl_sock *so;
	uint32_t iss = 0;
	unsigned int rst = 0, data = 0;

	tf_init(tag);
	so = conn(&iss, 1000);
	ack_win(so, iss + 1, 0);
	tf_clear();
	tap_eq(sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us), 1000, "queued into a zero window");
	for (int ms = 0; ms < zero_ms; ms += 100) {
		tf_advance_ms(100);
		if (T.n) {
			tf_clear();
			ack_win(so, iss + 1, 0);
			tf_clear();
		}
	}
	tap_ok(so->tcp.backoff > 1, "persist backed off (%u)", so->tcp.backoff);
	ack_win(so, iss + 1, 8192);
	tap_eq(payload_sent(NULL), 1000, "window opens: the data goes");
	tap_eq(so->tcp.backoff, 0, "the persist episode's backoff is gone");
	tf_clear();
	for (int ms = 0; ms < 5000 && !data; ms++) {
		tf_advance_ms(1);
		for (unsigned int i = 0; i < T.n; i++) {
			tf_parse(i).flags & TH_RST_ ? rst++ : 0;
			data += tf_parse(i).plen;
		}
	}
	tap_ok(data == 1000 && rst == 0 && so->state == SL_TCP_ESTABLISHED,
	       "the RTO retransmits; no abort");
	tap_eq(so->tcp.backoff, 1, "that was the first RTO");
	tap_ok(so->tcp.ssthresh != 0x7fffffff, "RFC 5681 eq. 4: ssthresh set on it");
	tf_finish();
}

/* RFC 1122 4.2.3.4 (4): the peer's window stays open but below a segment
 * and below half its largest (a receiver with a tiny SO_RCVBUF), with
 * nothing in flight.  Sender SWS avoidance holds the data; the override
 * timeout must send what fits, or the connection stalls for ever. */
static void test_established_small_window_override(void)
{
	struct sl_sock *so;
	uint32_t iss = 0, first = 0, sent0;

	tf_init("swo");
	so = conn(&iss, 1000);
	tap_eq(sl_tcp_send(T.s, so, pattern, 20000, 0, tf_now_us), 20000, "20000 bytes queued");
	sent0 = payload_sent(NULL);
	tf_clear();
	ack_win(so, iss + 1 + sent0, 500);
	tap_eq(payload_sent(NULL), 0, "a 500-byte window with nothing in flight: SWS holds");
	/* Each 500 bytes acked with the window still 500: the next 500 go,
	 * at once (the rest of a split segment fits) or at the override
	 * timeout; the stream moves on, in order. */
	for (int round = 0; round < 6; round++) {
		unsigned int ms = 0, got;

		while (!payload_sent(NULL) && ms < 5000) {
			tf_advance_ms(50);
			ms += 50;
		}
		got = payload_sent(&first);
		tap_ok(got == 500 && first == iss + 1 + sent0 + 500u * round,
		       "round %d: 500 bytes at offset %u within %u ms (%u at %u)", round,
		       sent0 + 500u * round, ms, got, first - iss - 1);
		tf_clear();
		ack_win(so, iss + 1 + sent0 + 500u * (round + 1), 500);
	}
	tap_eq(so->state, SL_TCP_ESTABLISHED, "the connection lives on");
	tf_finish();
}

static void test_established_persist_then_rto(void)
{
	persist_then_loss("pr", 25 * 60 * 1000);
}

static void test_established_short_persist_then_rto(void)
{
	persist_then_loss("prs", 3000);
}

/* RFC 7323 2.2: the window in a SYN-ACK is never scaled, even when the
 * SYN-ACK agrees to scaling: win=1000 ws=7 is 1000 bytes, not 128000. */
static void test_syn_sent_synack_window_unscaled(void)
{
	struct tf_opts o = { .mss = 1460, .ws_on = 1, .ws = 7 };
	struct sl_sock *so;
	uint32_t iss = 0;
	int one = 1;

	tf_init("wsyn");
	so = tf_connect(IRS, &iss, &o, 1000);
	tap_eq(so->tcp.snd_wnd, 1000, "SYN-ACK win=1000 ws=7: SND.WND 1000");
	tap_eq(so->tcp.max_sndwnd, 1000, "max_sndwnd not inflated");
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tf_clear();
	sl_tcp_send(T.s, so, pattern, 10000, 0, tf_now_us);
	tap_eq(payload_sent(NULL), 1000, "at most 1000 bytes sent");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1001, 1000, NULL, 0);
	tap_eq(so->tcp.snd_wnd, 1000u << 7, "a later ACK's window is scaled");
	tf_finish();
}

/* The same in a simultaneous open (RFC 9293 figure 8): the peer's SYN-ACK
 * completes it, and its window is a SYN's. */
static void test_syn_received_simultaneous_window_unscaled(void)
{
	struct tf_opts o = { .mss = 1460, .ws_on = 1, .ws = 7 };
	struct sl_sock *so = NULL;
	struct tf_seg g;

	tf_init("wsim");
	so = sl_sock_alloc(T.s, SL_SOCK_TCP);
	sl_sock_bind(T.s, so, 0, htons(6000));
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	g = tf_last();
	tf_seg_full(TF_PPORT, 6000, TH_SYN_, IRS, 0, 1000, &o, NULL, 0);	/* crossing SYN */
	tap_eq(so->state, SL_TCP_SYN_RECEIVED, "crossing SYNs: SYN-RECEIVED");
	tf_seg_full(TF_PPORT, 6000, TH_SYN_ | TH_ACK_, IRS, g.seq + 1, 1000, &o, NULL, 0);
	tap_eq(so->state, SL_TCP_ESTABLISHED, "its SYN-ACK: ESTABLISHED");
	tap_eq(so->tcp.snd_wnd, 1000, "SND.WND from the SYN-ACK is not scaled");
	tap_eq(so->tcp.max_sndwnd, 1000, "max_sndwnd not inflated");
	tf_finish();
}

/*
 * The window offered never takes more segments than the out-of-order
 * queue holds (SL_TCP_OOO_MAX): with a receive buffer grown to 16 MiB
 * (as autotuning grows it), the first segment of a window lost, every
 * other segment the window allows arrives out of order and is kept;
 * the hole filled, all are delivered.  Before, a window of 5,744
 * segments was offered here and all past the queue's limit dropped
 * (4,719 with a limit of 1,024), to be sent again
 * (a kernel sender to a Sluice receiver at 0.1 % loss:
 * tests/bench/lossy_host.sh -d receive, 1,203 tcp_ooo_drop in 5 s).
 */
static void test_established_window_within_ooo_queue(void)
{
	struct sl_sock *so;
	uint32_t iss = 0, win, n, base = IRS + 1, m = 1460;	/* our MSS: what the peer may send */
	uint64_t drops;

	tf_n_bufs = 16384;
	tf_init("wo");
	tf_n_bufs = 1024;
	T.s->tcp_rmem_max = 16 << 20;	/* the window scale a host's rmem max gives */
	so = tf_connect(IRS, &iss, &(struct tf_opts){ .mss = 1000, .ws_on = 1, .ws = 7 }, 8192);
	so->rcvbuf = 16 << 20;
	drops = tf_counter(SL_C_tcp_ooo_drop);
	/* The first segment lost: the second arrives past the hole. */
	tf_seg(ntohs(so->lport), TH_ACK_, base + m, iss + 1, 8192, pattern, m);
	tf_clear();
	win = so->tcp.rcv_adv - so->tcp.rcv_nxt;
	n = win / m;
	tap_ok(n > 100, "a large window offered (%u bytes)", win);
	for (uint32_t k = 2; k < n; k++) {
		tf_seg(ntohs(so->lport), TH_ACK_, base + k * m, iss + 1, 8192, pattern, m);
		if (T.n > TF_CAP / 2)
			tf_clear();
	}
	tf_clear();
	tap_eq(tf_counter(SL_C_tcp_ooo_drop) - drops, 0,
	       "every segment of the window past the hole kept");
	tap_eq(so->tcp.ooo_count, n - 1, "all on the out-of-order queue");
	tap_ok(n - 1 <= SL_TCP_OOO_MAX, "the window fits the queue (%u segments)", n);
	tf_seg(ntohs(so->lport), TH_ACK_, base, iss + 1, 8192, pattern, m);
	tap_eq(so->tcp.rcv_nxt, base + n * m, "the hole filled: all delivered");
	tf_finish();
}

int main(void)
{
	test_established_window_shrunk_to_zero();
	test_established_window_zero_peer_gone();
	test_fin_wait_1_zero_window_fin_retransmitted();
	test_established_window_shrunk_below_flight();
	test_established_partial_segment_ack();
	test_established_small_window_override();
	test_established_persist_then_rto();
	test_established_short_persist_then_rto();
	test_syn_sent_synack_window_unscaled();
	test_syn_received_simultaneous_window_unscaled();
	test_established_window_within_ooo_queue();
	return tap_done();
}
