// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP closing (RFC 9293 3.6, 3.10.4, 3.10.7.4 eighth): FIN in every
 * synchronized state, half-close, simultaneous close, TIME-WAIT and its
 * expiry, resets on close with unread data, RST in the closing states,
 * listeners releasing their children, keepalive.
 */
#include "tcp_fixture.h"

#define IRS 20000u

/* Passive close: ESTABLISHED -FIN-> CLOSE-WAIT -close-> LAST-ACK -ACK-> CLOSED. */
static void test_established_fin(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	uint8_t buf[16];

	tf_init("ef");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 1, iss + 1, 8192, "bye", 3);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 5, "FIN: ACKed at once (data + FIN)");
	tap_eq(so->state, SL_TCP_CLOSE_WAIT, "CLOSE-WAIT");
	tap_ok((sl_tcp_poll(T.s, so) & (SL_EV_IN | SL_EV_RDHUP)) == (SL_EV_IN | SL_EV_RDHUP),
	       "poll: IN and RDHUP");
	tap_eq(sl_tcp_recv(T.s, so, buf, sizeof(buf), 0, tf_now_us), 3, "data before EOF");
	tap_eq(sl_tcp_recv(T.s, so, buf, sizeof(buf), 0, tf_now_us), 0, "then EOF");
	tf_clear();
	tap_eq(sl_tcp_send(T.s, so, "more", 4, 0, tf_now_us), 4, "CLOSE-WAIT: can still send");
	g = tf_last();
	tap_ok(T.n == 1 && g.plen == 4, "data sent in CLOSE-WAIT");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 5, iss + 5, 8192, NULL, 0);
	tf_clear();
	sl_tcp_close(T.s, so, tf_now_us);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == (TH_FIN_ | TH_ACK_) && g.seq == iss + 5, "close: FIN");
	tap_eq(so->state, SL_TCP_LAST_ACK, "LAST-ACK");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 5, iss + 6, 8192, NULL, 0);
	tap_eq(T.s->r->sock_used, T.sock0, "ACK of FIN: CLOSED and released");
	tf_finish();
}

/* A FIN queued behind data the window holds back rides on the segment
 * with the last byte (RFC 9293 3.10.4 allows it; Linux's FIN is in its
 * last skb), also when that segment is sent again; no FIN of its own. */
static void test_fin_rides_last_data(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	uint8_t data[4 * 536];

	memset(data, 'f', sizeof(data));
	tf_init("fr");
	so = tf_connect(IRS, &iss, NULL, 2 * 536);
	tap_eq(sl_tcp_send(T.s, so, data, sizeof(data), 0, tf_now_us), (ssize_t)sizeof(data),
	       "4 segments queued");
	tap_eq(T.n, 2u, "the window lets 2 go");
	tf_clear();
	sl_tcp_close(T.s, so, tf_now_us);
	tap_eq(T.n, 0u, "close: the FIN waits behind the data");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1 + 2 * 536, 8192, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 2 && g.flags == (TH_FIN_ | TH_ACK_ | TH_PSH_) && g.seq == iss + 1 + 3 * 536 &&
	       g.plen == 536, "the last data segment carries the FIN (%u segments, flags 0x%x)",
	       T.n, g.flags);
	tap_eq(so->state, SL_TCP_FIN_WAIT_1, "FIN-WAIT-1");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1 + 3 * 536, 8192, NULL, 0);
	tf_clear();
	tf_advance_ms(3000);
	g = tf_parse(0);
	tap_ok(T.n >= 1 && g.flags == (TH_FIN_ | TH_ACK_ | TH_PSH_) && g.seq == iss + 1 + 3 * 536 &&
	       g.plen == 536, "sent again after the RTO: data and FIN together (flags 0x%x)",
	       g.flags);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2 + 4 * 536, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "data and FIN ACKed: FIN-WAIT-2");
	tf_finish();
}

/* TCP_LINGER2: an orphan's FIN-WAIT-2 lasts that long (tcp(7)), and with
 * -1 it ends at once in a reset (Linux tcp_close()). */
static void test_fin_wait2_linger2(void)
{
	struct sl_sock *so;
	uint32_t iss;
	int v = 5;

	tf_init("l2");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_LINGER2, &v, sizeof(v)), 0,
	       "TCP_LINGER2 5 s");
	sl_tcp_close(T.s, so, tf_now_us);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "FIN ACKed: FIN-WAIT-2");
	tf_advance_ms(4900);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "still FIN-WAIT-2 after 4.9 s");
	tf_advance_ms(200);
	tap_eq(T.s->r->sock_used, T.sock0, "gone after 5 s (the default is 60)");
	tf_finish();

	tf_init("l3");
	so = tf_connect(IRS, &iss, NULL, 8192);
	v = -1;
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_LINGER2, &v, sizeof(v));
	sl_tcp_close(T.s, so, tf_now_us);
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
	tf_advance_ms(2);
	tap_ok(T.n >= 1 && (tf_last().flags & TH_RST_), "TCP_LINGER2 -1: a reset at once");
	tap_eq(T.s->r->sock_used, T.sock0, "and the socket is gone");
	tf_finish();
}

/* TCP_CORK (tcp(7)): a short segment waits, even with TCP_NODELAY and
 * nothing in flight, until uncorked or 200 ms pass; a full one goes. */
static void test_cork(void)
{
	static uint8_t data[3000];
	struct sl_sock *so;
	uint32_t iss;
	int one = 1, zero = 0;

	tf_init("ck");
	so = tf_connect(IRS, &iss, &(struct tf_opts){ .mss = 1000 }, 8192);
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	tf_clear();
	sl_tcp_send(T.s, so, data, 100, 0, tf_now_us);
	tap_eq(T.n, 0, "corked: 100 bytes wait");
	sl_tcp_send(T.s, so, data, 1400, 0, tf_now_us);
	tap_ok(T.n == 1 && tf_last().plen == 1000, "a full segment goes (%u)", T.n);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, so->tcp.snd_nxt, 8192, NULL, 0);
	tf_clear();
	tf_advance_ms(150);
	tap_ok(!T.n || !tf_last().plen, "the 500-byte rest still waits at 150 ms");
	tf_advance_ms(60);
	tap_ok(T.n && tf_last().plen == 500, "and goes at the 200 ms ceiling");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, so->tcp.snd_nxt, 8192, NULL, 0);
	tf_clear();
	sl_tcp_send(T.s, so, data, 10, 0, tf_now_us);
	tap_eq(T.n, 0, "corked again: 10 bytes wait");
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_CORK, &zero, sizeof(zero));
	tap_ok(T.n == 1 && tf_last().plen == 10, "uncorking sends them (%u %u)", T.n, tf_last().plen);
	tf_finish();
}

/* Active close: FIN-WAIT-1 -ACK-> FIN-WAIT-2 -FIN-> TIME-WAIT -2MSL-> gone. */
static void test_fin_wait_active_close(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("ac");
	so = tf_connect(IRS, &iss, NULL, 8192);
	sl_tcp_close(T.s, so, tf_now_us);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == (TH_FIN_ | TH_ACK_) && g.seq == iss + 1, "close: FIN");
	tap_eq(so->state, SL_TCP_FIN_WAIT_1, "FIN-WAIT-1");
	tap_ok(so->flags & SL_SF_ORPHAN, "orphaned");
	tap_eq(T.s->lib->tcp_orphans, 1, "counted as an orphan (the helper's count)");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_1, "ACK not covering the FIN: still FIN-WAIT-1");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "FIN ACKed: FIN-WAIT-2");
	tap_eq(T.n, 0, "nothing sent for a pure ACK");
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 1, iss + 2, 8192, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 2, "peer FIN ACKed");
	tap_ok(tf_tw(so) != NULL, "TIME-WAIT");
	tap_eq(T.s->r->sock_used, T.sock0, "... its socket slot released at once");
	tap_eq(T.s->lib->tcp_orphans, 0, "... and no longer counted as an orphan");
	/* RFC 9293 3.10.7.4: a retransmitted FIN is ACKed and restarts 2 MSL. */
	tf_advance_ms(30000);
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_ok(T.n == 1 && tf_last().ack == IRS + 2, "TIME-WAIT + FIN: ACK again");
	tf_advance_ms(59000);
	tap_ok(tf_tw(so) != NULL, "2 MSL restarted by the FIN");
	tf_advance_ms(1001);
	tap_ok(!tf_tw(so) && !T.s->lib->tw_count, "TIME-WAIT expired after 2 MSL: gone");
	tf_finish();
}

/* RFC 9293 figure 13: both sides close at once. */
static void test_fin_wait_simultaneous_close(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("sc");
	so = tf_connect(IRS, &iss, NULL, 8192);
	sl_tcp_close(T.s, so, tf_now_us);
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 1, iss + 1, 8192, NULL, 0);
	g = tf_last();
	tap_eq(so->state, SL_TCP_CLOSING, "FIN-WAIT-1 + FIN: CLOSING");
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 2, "their FIN ACKed");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 2, iss + 2, 8192, NULL, 0);
	tap_ok(tf_tw(so) != NULL, "CLOSING + ACK of FIN: TIME-WAIT");
	tf_finish();
}

static void test_fin_wait_1_fin_ack(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("fa");
	so = tf_connect(IRS, &iss, NULL, 8192);
	sl_tcp_close(T.s, so, tf_now_us);
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_ok(tf_tw(so) != NULL, "FIN-WAIT-1 + FIN+ACK of our FIN: TIME-WAIT");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_RST_, IRS + 2, 0, 0, NULL, 0);
	tap_ok(!tf_tw(so) && T.n == 0, "TIME-WAIT + RST: closed, nothing sent (RFC 9293 3.10.7.4)");
	tf_finish();
}

/* Half-close: after shutdown(SHUT_WR) the peer's data still arrives. */
static void test_fin_wait_2_half_close(void)
{
	struct sl_sock *so;
	uint32_t iss;
	uint8_t buf[16];

	tf_init("hc");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tap_eq(sl_tcp_shutdown(T.s, so, SHUT_WR, tf_now_us), 0, "shutdown(SHUT_WR)");
	tap_eq(tf_last().flags, TH_FIN_ | TH_ACK_, "FIN sent");
	tap_eq(sl_tcp_send(T.s, so, "x", 1, 0, tf_now_us), -EPIPE, "send after SHUT_WR: EPIPE");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "FIN-WAIT-2");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2, 8192, "hello", 5);
	tap_eq(sl_tcp_recv(T.s, so, buf, sizeof(buf), 0, tf_now_us), 5, "FIN-WAIT-2: data received");
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 6, iss + 2, 8192, NULL, 0);
	tap_ok(so->state == SL_TCP_CLOSED && tf_tw(so),
	       "then TIME-WAIT: the socket closed, as on Linux, and an entry waits");
	tap_eq(sl_tcp_recv(T.s, so, buf, sizeof(buf), 0, tf_now_us), 0, "EOF");
	tap_ok(sl_tcp_poll(T.s, so) & SL_EV_HUP, "both directions closed: HUP");
	tf_finish();
}

/* RFC 2525 2.17: closing with unread data sends RST, not FIN. */
static void test_established_close_unread(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("cu");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 8192, "unread", 6);
	tf_clear();
	sl_tcp_close(T.s, so, tf_now_us);
	g = tf_last();
	tap_ok(T.n == 1 && (g.flags & TH_RST_) && g.seq == iss + 1, "close with unread data: RST");
	tap_eq(T.s->r->sock_used, T.sock0, "released at once");
	tf_finish();
}

/* RFC 7323 3.2: with timestamps agreed our RST carries TSopt, a current
 * TSval and TS.Recent echoed, as Linux's (packetdrill ts_recent/
 * reset_tsval.pkt); without them, no option. */
static void test_established_close_unread_timestamps(void)
{
	struct tf_opts o = { .ts = 1, .tsval = 100 };
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss, tsval0;

	tf_init("ct");
	so = tf_connect(IRS, &iss, &o, 8192);
	tap_ok(so->tcp.tflags & SL_TF_TS, "timestamps agreed");
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 201 }, "unread", 6);
	g = tf_last();
	tap_ok(T.n == 1 && g.ts && g.ack == IRS + 7, "the data ACKed at once, with TSopt");
	tsval0 = g.tsval;
	tf_advance_ms(1000);
	tf_clear();
	sl_tcp_close(T.s, so, tf_now_us);
	g = tf_last();
	tap_ok(T.n == 1 && (g.flags & TH_RST_), "close with unread data: RST");
	tap_ok(g.ts && g.tsecr == 201, "the RST carries TSopt, TS.Recent echoed");
	tap_ok(g.tsval - tsval0 >= 1000 && g.tsval - tsval0 <= 1001,
	       "its TSval is current: %u ms after the last ACK's", g.tsval - tsval0);
	tap_ok(g.nsack == 0 && g.mss == 0 && g.ws < 0, "and no other option");
	tf_finish();

	tf_init("cn");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 8192, "unread", 6);
	tf_clear();
	sl_tcp_close(T.s, so, tf_now_us);
	g = tf_last();
	tap_ok(T.n == 1 && (g.flags & TH_RST_) && !g.ts, "no timestamps agreed: an RST without TSopt");
	tf_finish();
}

/* LAST-ACK / CLOSING + RST: closed (RFC 9293 3.10.7.4 second). */
static void test_last_ack_rst(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("lr");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_ACK_ | TH_FIN_, IRS + 1, iss + 1, 8192, NULL, 0);
	sl_tcp_close(T.s, so, tf_now_us);
	tap_eq(so->state, SL_TCP_LAST_ACK, "LAST-ACK");
	tf_seg(ntohs(so->lport), TH_RST_, IRS + 2, 0, 0, NULL, 0);
	tap_eq(T.s->r->sock_used, T.sock0, "LAST-ACK + RST: released");
	tf_finish();
}

/* The FIN is retransmitted on the RTO like data. */
static void test_fin_wait_1_fin_retransmit(void)
{
	struct sl_sock *so;
	uint32_t iss;
	unsigned int fins = 0;

	tf_init("fr");
	so = tf_connect(IRS, &iss, NULL, 8192);
	sl_tcp_close(T.s, so, tf_now_us);
	tf_clear();
	tf_advance_ms(1000);
	for (unsigned int i = 0; i < T.n; i++)
		if (tf_parse(i).flags == (TH_FIN_ | TH_ACK_) && tf_parse(i).seq == iss + 1)
			fins++;
	tap_ok(fins >= 1, "FIN retransmitted after the RTO");
	tap_eq(so->state, SL_TCP_FIN_WAIT_1, "still FIN-WAIT-1");
	tf_finish();
}

/* An orphan in FIN-WAIT-2 gives up after the FIN timeout. */
static void test_fin_wait_2_orphan_timeout(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("ft");
	so = tf_connect(IRS, &iss, NULL, 8192);
	sl_tcp_close(T.s, so, tf_now_us);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_eq(so->state, SL_TCP_FIN_WAIT_2, "FIN-WAIT-2");
	tf_advance_ms(59000);
	tap_eq(T.s->r->sock_used, T.sock0 + 1, "still there at 59 s");
	tap_eq(T.s->lib->tcp_orphans, 1, "an orphan until then");
	tf_advance_ms(1001);
	tap_eq(T.s->r->sock_used, T.sock0, "released at 60 s");
	tap_eq(T.s->lib->tcp_orphans, 0, "and no orphan after");
	tf_finish();
}

/* A closed listener resets and releases the connections not accepted. */
static void test_listen_close_children(void)
{
	struct sl_sock *l;
	uint32_t iss;

	tf_init("lc");
	l = tf_listener(TF_LPORT, 8);
	tf_seg_full(5001, TF_LPORT, TH_SYN_, 100, 0, 8192, NULL, NULL, 0);
	iss = tf_last().seq;
	tf_seg_full(5001, TF_LPORT, TH_ACK_, 101, iss + 1, 8192, NULL, NULL, 0);
	tf_seg_full(5002, TF_LPORT, TH_SYN_, 100, 0, 8192, NULL, NULL, 0);
	tap_eq(T.s->r->sock_used, T.sock0 + 3, "listener + 2 children");
	tf_clear();
	sl_tcp_close(T.s, l, tf_now_us);
	tap_eq(T.s->r->sock_used, T.sock0, "all released");
	tap_eq(T.n, 2, "each child reset");
	tf_finish();
}

/* A socket closed before it connected or listened held no buffer: its
 * close frees none (its queues were once "buffer 0", so closing it put
 * the free list back on itself). */
static void test_closed_bound_close(void)
{
	struct sl_sock *so;
	uint32_t free0;

	tf_init("cb");
	free0 = T.s->lib->buf_free_count;
	so = sl_sock_alloc(T.s, SL_SOCK_TCP);
	tap_eq(sl_sock_bind(T.s, so, T.us, htons(7777)), 0, "closed: bound");
	sl_tcp_close(T.s, so, tf_now_us);
	tap_eq(T.s->lib->buf_free_count, free0, "closed: closing it leaves the pool as it was");
	so = sl_sock_alloc(T.s, SL_SOCK_TCP);
	sl_tcp_close(T.s, so, tf_now_us);
	tap_eq(T.s->lib->buf_free_count, free0, "closed: so does closing an unbound one");
	tf_finish();
}

/* A socket closed before connect() or listen() (sluice run does this when
 * it hands a fresh socket to the kernel) gives back no buffer it never had. */
static void test_closed_close_fresh(void)
{
	struct sl_sock *so;

	tf_init("cf");
	so = sl_sock_alloc(T.s, SL_SOCK_TCP);
	tap_ok(so != NULL, "fresh socket");
	sl_tcp_close(T.s, so, tf_now_us);
	tap_eq(T.s->r->sock_used, T.sock0, "fresh socket released at once");
	tap_eq(T.s->lib->buf_free_count, T.buf0, "no buffer freed that was not taken");
	tf_finish();
}

/* RFC 1122 4.2.3.6: keepalive probes SND.NXT-1, then gives up. */
static void test_established_keepalive(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	int one = 1, idle = 10, intvl = 2, cnt = 3;

	tf_init("ka");
	so = tf_connect(IRS, &iss, NULL, 8192);
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(int));
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(int));
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(int));
	sl_tcp_setsockopt(T.s, so, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(int));
	tf_advance_ms(10000);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.seq == iss && g.plen == 0,
	       "keepalive probe after the idle time");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 8192, NULL, 0);
	tf_clear();
	tf_advance_ms(9000);
	tap_eq(T.n, 0, "an answer restarts the idle time");
	tf_advance_ms(1000 + 3 * 2000 + 10);
	tap_eq(so->state, SL_TCP_CLOSED, "no answers: connection dropped");
	tap_eq(so->error, ETIMEDOUT, "ETIMEDOUT");
	tf_finish();
}

int main(void)
{
	test_established_fin();
	test_fin_rides_last_data();
	test_fin_wait_active_close();
	test_fin_wait2_linger2();
	test_cork();
	test_fin_wait_simultaneous_close();
	test_fin_wait_1_fin_ack();
	test_fin_wait_2_half_close();
	test_established_close_unread();
	test_established_close_unread_timestamps();
	test_last_ack_rst();
	test_fin_wait_1_fin_retransmit();
	test_fin_wait_2_orphan_timeout();
	test_listen_close_children();
	test_established_keepalive();
	test_closed_bound_close();
	test_closed_close_fresh();
	return tap_done();
}
