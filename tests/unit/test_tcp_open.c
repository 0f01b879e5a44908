// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP opening: segments to no socket, LISTEN, SYN-SENT and SYN-RECEIVED
 * against every main event (RFC 9293 3.5, 3.10.7.1-3.10.7.4), backlog
 * and SYN-queue limits, simultaneous open, SYN retries.
 */
#include "tcp_fixture.h"

static uint8_t pattern_open[4096];

/* RFC 9293 3.10.7.1: CLOSED answers a SYN with <SEQ=0><ACK=SEG.SEQ+SEG.LEN><RST,ACK>. */
static void test_closed_syn(void)
{
	struct tf_seg g;

	tf_init("cs");
	tf_seg(9999, TH_SYN_, 1000, 0, 8192, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == (TH_RST_ | TH_ACK_), "closed port: SYN gets RST+ACK");
	tap_eq(g.seq, 0, "closed port: RST seq 0");
	tap_eq(g.ack, 1001, "closed port: RST acks SEG.SEQ+SEG.LEN (SYN counts)");
	tap_ok(g.csum_ok, "closed port: RST checksums are right");
	tap_eq(tf_counter(SL_C_tcp_rx_noport), 1, "closed port: counted tcp_rx_noport");
	tf_finish();
}

/* RFC 9293 3.10.7.1: an ACK to no socket gets <SEQ=SEG.ACK><CTL=RST>; an RST nothing. */
static void test_closed_ack_and_rst(void)
{
	struct tf_seg g;

	tf_init("ca");
	tf_seg(9999, TH_ACK_, 1000, 777, 8192, "x", 1);
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_RST_, "closed port: ACK gets a bare RST");
	tap_eq(g.seq, 777, "closed port: RST seq = SEG.ACK");
	tf_clear();
	tf_seg(9999, TH_RST_, 1000, 0, 0, NULL, 0);
	tap_eq(T.n, 0, "closed port: an RST is never answered");
	tf_finish();
}

static void test_listen_syn(void)
{
	struct sl_sock *l, *c = NULL;
	struct tf_seg g;

	tf_init("ls");
	l = tf_listener(TF_LPORT, 8);
	tf_seg(TF_LPORT, TH_SYN_, 5000, 0, 8192, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == (TH_SYN_ | TH_ACK_), "LISTEN + SYN: SYN-ACK");
	tap_eq(g.ack, 5001, "LISTEN + SYN: acks the SYN");
	tap_eq(g.mss, 1460, "LISTEN + SYN: our MSS is MTU - 40 (RFC 9293 3.7.1)");
	tap_eq(g.ws, -1, "LISTEN + SYN: no window scale unless offered (RFC 7323 2.2)");
	tap_ok(!g.ts && !g.sack_ok, "LISTEN + SYN: no TS or SACK unless offered");
	tap_eq(sl_tcp_accept(T.s, l, &c), -EAGAIN, "accept: nothing before the ACK");
	tap_eq(l->tcp.syn_len, 1, "SYN queue holds the child");
	tf_seg(TF_LPORT, TH_ACK_, 5001, g.seq + 1, 8192, NULL, 0);
	tap_eq(sl_tcp_poll(T.s, l), SL_EV_IN, "listener readable once the handshake completes");
	tap_eq(sl_tcp_accept(T.s, l, &c), 0, "accept: the connection");
	tap_ok(c && c->state == SL_TCP_ESTABLISHED, "child is ESTABLISHED");
	tap_eq(c ? c->tcp.mss : 0, 536, "no MSS option: 536 (RFC 9293 3.7.1)");
	tap_eq(l->tcp.syn_len, 0, "SYN queue empty again");
	tap_ok(c && (sl_tcp_poll(T.s, c) & SL_EV_OUT), "child writable");
	tf_finish();
}

static void test_listen_syn_options(void)
{
	struct tf_opts o = { .mss = 1000, .ws_on = 1, .ws = 7, .sack_ok = 1, .ts = 1,
			     .tsval = 4242 };
	struct sl_sock *l, *c;
	struct tf_seg g;

	tf_init("lo");
	l = tf_listener(TF_LPORT, 8);
	tf_seg_full(TF_PPORT, TF_LPORT, TH_SYN_, 5000, 0, 65535, &o, NULL, 0);
	g = tf_last();
	tap_ok(g.ws >= 0 && g.ts && g.sack_ok, "SYN-ACK answers WS, TS and SACK-permitted");
	tap_eq(g.tsecr, 4242, "SYN-ACK echoes TSval (RFC 7323 4.3)");
	tap_ok(g.win > 0, "SYN-ACK window unscaled");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, 5001, g.seq + 1, 100,
		    &(struct tf_opts){ .ts = 1, .tsval = 4243, .tsecr = g.tsval }, NULL, 0);
	c = NULL;
	sl_tcp_accept(T.s, l, &c);
	tap_ok(c != NULL, "accepted");
	if (c) {
		tap_eq(c->tcp.mss, 1000 - 12, "send MSS = peer MSS - timestamp option");
		tap_eq(c->tcp.snd_wnd, 100 << 7, "window scaled by the peer's shift");
		tap_eq(c->tcp.ts_recent, 4243, "TS.Recent updated");
	}
	tf_finish();
}

/* RFC 9293 3.10.7.2: LISTEN answers an ACK with <SEQ=SEG.ACK><CTL=RST>, drops an RST. */
static void test_listen_ack_rst(void)
{
	struct tf_seg g;

	tf_init("la");
	tf_listener(TF_LPORT, 8);
	tf_seg(TF_LPORT, TH_ACK_, 5000, 1234, 8192, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_RST_ && g.seq == 1234, "LISTEN + ACK: RST seq=SEG.ACK");
	tf_clear();
	tf_seg(TF_LPORT, TH_RST_, 5000, 0, 0, NULL, 0);
	tap_eq(T.n, 0, "LISTEN + RST: ignored");
	tf_seg(TF_LPORT, TH_FIN_, 5000, 0, 0, NULL, 0);
	tap_eq(T.n, 0, "LISTEN + FIN without SYN: dropped");
	tf_finish();
}

static void test_listen_backlog_full(void)
{
	struct sl_sock *l;
	uint32_t iss;

	tf_init("bl");
	l = tf_listener(TF_LPORT, 1);
	tf_clear();
	tf_seg_full(5001, TF_LPORT, TH_SYN_, 100, 0, 8192, NULL, NULL, 0);
	iss = tf_last().seq;
	tf_seg_full(5001, TF_LPORT, TH_ACK_, 101, iss + 1, 8192, NULL, NULL, 0);
	tap_eq(l->tcp.acc_len, 1, "backlog 1: one connection waits for accept");
	tf_clear();
	tf_seg_full(5002, TF_LPORT, TH_SYN_, 200, 0, 8192, NULL, NULL, 0);
	iss = tf_last().seq;
	tf_seg_full(5002, TF_LPORT, TH_ACK_, 201, iss + 1, 8192, NULL, NULL, 0);
	tap_eq(l->tcp.acc_len, 2, "and a second: Linux's queue holds backlog + 1");
	tf_clear();
	tf_seg_full(5003, TF_LPORT, TH_SYN_, 300, 0, 8192, NULL, NULL, 0);
	tap_eq(T.n, 0, "backlog full: SYN dropped silently");
	tap_eq(tf_counter(SL_C_tcp_syn_dropped), 1, "backlog full: counted tcp_syn_dropped");
	tf_finish();
}

static void test_listen_synq_full(void)
{
	struct sl_sock *l;
	unsigned int i;

	tf_init("sq");
	l = tf_listener(TF_LPORT, 2);
	tf_clear();
	for (i = 0; i < SL_TCP_SYNQ_MIN; i++)
		tf_seg_full((uint16_t)(6000 + i), TF_LPORT, TH_SYN_, 100, 0, 8192, NULL, NULL, 0);
	tap_eq(T.n, SL_TCP_SYNQ_MIN, "SYN queue: each SYN answered up to the limit");
	tap_eq(l->tcp.syn_len, SL_TCP_SYNQ_MIN, "SYN queue: children counted on the listener");
	tf_seg_full(7000, TF_LPORT, TH_SYN_, 100, 0, 8192, NULL, NULL, 0);
	tap_ok(T.n == SL_TCP_SYNQ_MIN + 1 && tf_last().flags == (TH_SYN_ | TH_ACK_) &&
	       l->tcp.syn_len == SL_TCP_SYNQ_MIN,
	       "SYN queue full: answered with a SYN cookie, nothing queued (test_syncookie)");
	tap_eq(tf_counter(SL_C_tcp_syncookies_sent), 1, "SYN queue full: counted");
	tf_finish();
}

static void test_syn_sent_synack(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("ss"), T.s), SL_SOCK_TCP);
	struct tf_seg g;
	uint32_t iss;

	sl_sock_bind(T.s, so, 0, 0);
	tap_eq(sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us), -EINPROGRESS,
	       "connect: -EINPROGRESS");
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_SYN_, "connect sends a SYN");
	tap_ok(g.mss == 1460 && g.ws >= 0 && g.sack_ok && g.ts && g.tsecr == 0,
	       "SYN offers MSS, WS, SACK-permitted and TS");
	tap_eq(so->state, SL_TCP_SYN_SENT, "SYN-SENT");
	tap_eq(sl_tcp_poll(T.s, so) & SL_EV_OUT, 0, "not writable while connecting");
	tap_eq(sl_tcp_send(T.s, so, "x", 1, 0, tf_now_us), -EAGAIN, "send while connecting: EAGAIN");
	iss = g.seq;
	tf_clear();
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_SYN_ | TH_ACK_, 9000, iss + 1, 4000,
		    &(struct tf_opts){ .mss = 1400 }, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_ACK_ && g.seq == iss + 1 && g.ack == 9001,
	       "SYN-SENT + SYN-ACK: <SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>");
	tap_ok(!g.ts, "no TS after the peer declined it");
	tap_eq(so->state, SL_TCP_ESTABLISHED, "ESTABLISHED");
	tap_eq(so->tcp.mss, 1400, "send MSS from the SYN-ACK");
	tap_eq(so->tcp.snd_wnd, 4000, "no window scaling when the peer declines (RFC 7323 2.2)");
	tap_ok(sl_tcp_poll(T.s, so) & SL_EV_OUT, "writable");
	tf_finish();
}

static void test_syn_sent_bad_ack(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("sb"), T.s), SL_SOCK_TCP);
	struct tf_seg g;
	uint32_t iss;

	sl_sock_bind(T.s, so, 0, 0);
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	iss = tf_last().seq;
	tf_clear();
	/* RFC 9293 3.10.7.3: SEG.ACK =< ISS or > SND.NXT: <SEQ=SEG.ACK><CTL=RST>. */
	tf_seg(ntohs(so->lport), TH_SYN_ | TH_ACK_, 9000, iss + 55, 4000, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_RST_ && g.seq == iss + 55, "SYN-SENT + bad ACK: RST");
	tap_eq(so->state, SL_TCP_SYN_SENT, "still SYN-SENT");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_RST_, 0, 0, 0, NULL, 0);
	tap_eq(so->state, SL_TCP_SYN_SENT, "SYN-SENT + RST without ACK: ignored");
	tf_seg(ntohs(so->lport), TH_RST_ | TH_ACK_, 0, iss + 5, 0, NULL, 0);
	tap_eq(so->state, SL_TCP_SYN_SENT, "SYN-SENT + RST with a bad ACK: ignored");
	tf_seg(ntohs(so->lport), TH_RST_ | TH_ACK_, 0, iss + 1, 0, NULL, 0);
	tap_eq(so->state, SL_TCP_CLOSED, "SYN-SENT + acceptable RST: CLOSED");
	tap_eq(so->error, ECONNREFUSED, "connection refused");
	tap_ok(sl_tcp_poll(T.s, so) & SL_EV_ERR, "poll shows the error");
	tf_finish();
}

/* RFC 9293 3.5 figure 8: both ends send SYNs. */
static void test_syn_sent_simultaneous_open(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("so"), T.s), SL_SOCK_TCP);
	struct tf_seg g;
	uint32_t iss;

	sl_sock_bind(T.s, so, 0, 0);
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	iss = tf_last().seq;
	tf_clear();
	tf_seg(ntohs(so->lport), TH_SYN_, 300, 0, 8192, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == (TH_SYN_ | TH_ACK_) && g.seq == iss && g.ack == 301,
	       "SYN-SENT + SYN: SYN-ACK with our ISS");
	tap_eq(so->state, SL_TCP_SYN_RECEIVED, "SYN-RECEIVED");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_SYN_ | TH_ACK_, 300, iss + 1, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_ESTABLISHED, "SYN-RECEIVED + SYN-ACK: ESTABLISHED");
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_ACK_ && g.seq == iss + 1 && g.ack == 301,
	       "simultaneous open: final ACK");
	tf_finish();
}

/* RFC 6298 5.5 + RFC 1122 4.2.3.5: SYN retransmitted with doubling RTO. */
static void test_syn_sent_retries(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("sr"), T.s), SL_SOCK_TCP);
	uint64_t t0 = tf_now_us, gaps_ok = 1, expect = 1000;
	unsigned int n = 1, sent;

	sl_sock_bind(T.s, so, 0, 0);
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	sent = T.n;
	while (so->state == SL_TCP_SYN_SENT && tf_now_us - t0 < 300000000ull) {
		uint64_t t = tf_now_us;

		while (T.n == sent && so->state == SL_TCP_SYN_SENT)
			tf_advance_ms(1);
		if (T.n != sent) {
			if ((tf_now_us - t) / 1000 != expect) {
				printf("# gap %llu ms, want %llu\n",
				       (unsigned long long)((tf_now_us - t) / 1000),
				       (unsigned long long)expect);
				gaps_ok = 0;
			}
			expect *= 2;
			sent = T.n;
			n++;
		}
	}
	tap_eq(n, 1 + SL_TCP_SYN_RETRIES, "SYN sent 1 + 6 times");
	tap_ok(gaps_ok, "retransmission gaps double from 1 s");
	tap_eq(so->state, SL_TCP_CLOSED, "gave up: CLOSED");
	tap_eq(so->error, ETIMEDOUT, "error ETIMEDOUT");
	tap_eq(tf_counter(SL_C_tcp_rto), SL_TCP_SYN_RETRIES, "counted tcp_rto");
	tf_finish();
}

static void test_syn_received_events(void)
{
	struct sl_sock *l;
	struct tf_seg g;
	uint32_t iss;

	tf_init("sv");
	l = tf_listener(TF_LPORT, 8);
	tf_seg(TF_LPORT, TH_SYN_, 5000, 0, 8192, NULL, 0);
	iss = tf_last().seq;
	tf_clear();
	/* A retransmitted SYN gets the SYN-ACK again. */
	tf_seg(TF_LPORT, TH_SYN_, 5000, 0, 8192, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == (TH_SYN_ | TH_ACK_) && g.seq == iss,
	       "SYN-RECEIVED + same SYN: SYN-ACK again");
	tf_clear();
	/* RFC 9293 3.10.7.4 fifth: unacceptable ACK: <SEQ=SEG.ACK><CTL=RST>. */
	tf_seg(TF_LPORT, TH_ACK_, 5001, iss + 10, 8192, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == TH_RST_ && g.seq == iss + 10, "SYN-RECEIVED + bad ACK: RST");
	tap_eq(l->tcp.syn_len, 1, "child still in the SYN queue");
	tf_clear();
	/* Out-of-window segment: ACK, drop. */
	tf_seg(TF_LPORT, TH_ACK_, 5001 + 100000, iss + 1, 8192, "zz", 2);
	g = tf_last();
	tap_ok(g.valid && (g.flags & TH_ACK_) && !(g.flags & TH_RST_),
	       "SYN-RECEIVED + out-of-window: ACK");
	tap_eq(l->tcp.syn_len, 1, "child still there");
	/* RST in window, exact: back to LISTEN, child gone (RFC 9293 3.10.7.4 second). */
	tf_clear();
	tf_seg(TF_LPORT, TH_RST_, 5001, 0, 0, NULL, 0);
	tap_eq(l->tcp.syn_len, 0, "SYN-RECEIVED + RST: child released");
	tap_eq(T.s->r->sock_used, T.sock0 + 1, "only the listener remains");
	tf_finish();
}

static void test_syn_received_synack_retries(void)
{
	struct sl_sock *l;

	tf_init("sk");
	l = tf_listener(TF_LPORT, 8);
	tf_seg(TF_LPORT, TH_SYN_, 5000, 0, 8192, NULL, 0);
	tf_clear();
	tf_advance_ms(1000);
	tap_ok(T.n == 1 && tf_last().flags == (TH_SYN_ | TH_ACK_),
	       "SYN-ACK retransmitted after 1 s");
	tf_advance_ms(100000);
	tap_eq(T.n, SL_TCP_SYNACK_RETRIES, "SYN-ACK retried 5 times");
	tap_eq(l->tcp.syn_len, 0, "then the child is dropped");
	tf_finish();
}

static void test_syn_sent_icmp_unreach(void)
{
	struct sl_sock *so = sl_sock_alloc((tf_init("su"), T.s), SL_SOCK_TCP);
	uint8_t q[40];
	struct sl_ip *ip = (struct sl_ip *)q;
	struct sl_tcph *th = (struct sl_tcph *)(q + 20);

	sl_sock_bind(T.s, so, 0, 0);
	sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us);
	memcpy(q, T.f[0].data, 40);
	th->seq = htonl(ntohl(th->seq) + 100000);
	sl_tcp_icmp_error(T.s, ip, ECONNREFUSED, NULL);
	tap_eq(so->state, SL_TCP_SYN_SENT, "ICMP with a stale sequence number: ignored (RFC 5927)");
	memcpy(q, T.f[0].data, 40);
	sl_tcp_icmp_error(T.s, ip, ECONNREFUSED, NULL);
	tap_eq(so->state, SL_TCP_CLOSED, "ICMP port unreachable aborts SYN-SENT");
	tap_eq(so->error, ECONNREFUSED, "ECONNREFUSED");
	tf_finish();
}

/* RFC 9293 3.7.1 with RFC 7323 timestamps: a peer MSS of 8 less the 12
 * bytes of the timestamp option wrapped the unsigned MSS to ~4 GB, capped
 * only by the buffer: segments of 1900 bytes on a 1500-byte link.  Now
 * raised to SL_TCP_MSS_MIN (Linux TCP_MIN_MSS) first. */
static void test_syn_sent_tiny_peer_mss_with_ts(void)
{
	struct tf_opts o = { .mss = 8, .ts = 1, .tsval = 5 };
	struct sl_sock *so;
	uint32_t iss = 0;
	int one = 1, big = 0;

	tf_init("tmss");
	so = tf_connect(7000, &iss, &o, 65535);
	tap_eq(so->tcp.mss, 88 - 12, "peer MSS 8 with timestamps: send MSS 76");
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tf_clear();
	tap_eq(sl_tcp_send(T.s, so, pattern_open, 4000, 0, tf_now_us), 4000, "sends");
	tap_ok(T.n > 0, "segments go");
	for (unsigned int i = 0; i < T.n; i++)
		big += T.f[i].len > 1500 || tf_parse(i).plen > 76;
	tap_eq(big, 0, "none beyond 76 bytes of payload or the MTU");
	tf_finish();
}

int main(void)
{
	test_closed_syn();
	test_closed_ack_and_rst();
	test_listen_syn();
	test_listen_syn_options();
	test_listen_ack_rst();
	test_listen_backlog_full();
	test_listen_synq_full();
	test_syn_sent_synack();
	test_syn_sent_bad_ack();
	test_syn_sent_simultaneous_open();
	test_syn_sent_retries();
	test_syn_received_events();
	test_syn_received_synack_retries();
	test_syn_sent_icmp_unreach();
	test_syn_sent_tiny_peer_mss_with_ts();
	return tap_done();
}
