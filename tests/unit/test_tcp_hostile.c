// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP against hostile or pathological peers: ACK loops (a segment from our
 * own address to our own listener, a connection to itself, out-of-window
 * floods), blind resets (RFC 5961), SYN floods and receive-buffer pinning,
 * and the segments a listener must drop (martian source, SYN+FIN, ...).
 *
 *   test (peer 10.0.0.2:5000, or 10.0.0.1 spoofed) --> TCP core --> capture
 *                                        loopback <--'
 */
#include <signal.h>

#include "tcp_fixture.h"

#define IRS 70000u

static uint8_t pattern[4096];

static void on_alarm(int sig)
{
	static const char m[] = "not ok - the stack lock is never released (ACK loop)\n";

	(void)sig;
	if (write(1, m, sizeof(m) - 1) < 0)
		_exit(2);
	_exit(1);
}

/* Let the lock holder deliver what is on the loopback queue, rounds
 * times; returns TCP segments sent meanwhile. */
static uint64_t run_loopback(int rounds)
{
	uint64_t tx0 = tf_counter(SL_C_tcp_tx);

	signal(SIGALRM, on_alarm);
	alarm(10);
	for (int i = 0; i < rounds; i++) {
		sl_unlock(T.s);
		sl_lock(T.s);
	}
	alarm(0);
	return tf_counter(SL_C_tcp_tx) - tx0;
}

/* A SYN from our own address and port to our listener (a "LAND" SYN,
 * src = dst = 10.0.0.1:80) makes a child whose peer is itself: each of
 * its out-of-window ACKs makes another.  Linux tcp_oow_rate_limited(). */
static void test_listen_syn_from_self(void)
{
	uint32_t peer;
	uint64_t tx;

	tf_init("self");
	tf_listener(TF_LPORT, 8);
	peer = T.peer;
	T.peer = T.us;
	T.raw_tcp = 1;
	tf_seg_full(TF_LPORT, TF_LPORT, TH_SYN_, IRS, 0, 8192, NULL, NULL, 0);
	T.raw_tcp = 0;
	T.peer = peer;
	tx = run_loopback(50);
	printf("# %llu segments in 50 unlocks\n", (unsigned long long)tx);
	tap_ok(tx <= 4, "SYN from self: a bounded number of segments, not a loop");
	tap_ok(T.s->lib->lo_head >= T.s->r->n_bufs, "SYN from self: the loopback queue drains");
	for (int i = 0; i < 100; i++) {
		tf_advance_ms(1000);
		tx = run_loopback(5);
		if (tx > 8)
			break;
	}
	tap_ok(tx <= 8, "SYN from self: still bounded as its timers run");
	tf_finish();
}

/* connect() to its own address and port: a simultaneous open with
 * itself (RFC 9293 figure 8), which Linux allows; it must settle. */
static void test_syn_sent_connect_to_self(void)
{
	struct sl_sock *so;
	uint64_t tx;

	tf_init("selfc");
	so = sl_sock_alloc(T.s, SL_SOCK_TCP);
	tap_ok(so && !sl_sock_bind(T.s, so, T.us, htons(7007)), "bound to 10.0.0.1:7007");
	tap_eq(sl_tcp_connect(T.s, so, T.us, htons(7007), tf_now_us), -EINPROGRESS,
	       "connect to itself starts");
	tx = run_loopback(50);
	tap_eq(so->state, SL_TCP_ESTABLISHED, "connect to itself: ESTABLISHED");
	tap_ok(tx <= 4, "connect to itself: %llu segments, no loop", (unsigned long long)tx);
	tap_eq(sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us), 100, "sends to itself");
	run_loopback(5);
	tf_advance_ms(100);
	run_loopback(5);
	tap_eq(so->rxq_bytes, 100, "and receives it");
	sl_tcp_recv(T.s, so, pattern, sizeof(pattern), 0, tf_now_us);
	sl_tcp_close(T.s, so, tf_now_us);
	for (int i = 0; i < 200 && T.s->r->sock_used != T.sock0; i++) {
		tf_advance_ms(1000);
		run_loopback(2);
	}
	tap_eq(T.s->r->sock_used, T.sock0, "connect to itself: closes");
	tf_finish();
}

/* RFC 9293 3.10.7.4 first: unacceptable segments are ACKed, but pure ACKs
 * at most once per 500 ms (Linux tcp_invalid_ratelimit); data always. */
static void test_established_oow_flood(void)
{
	struct sl_sock *l;
	uint32_t iss = 0;

	tf_init("oow");
	l = tf_listener(TF_LPORT, 8);
	tap_ok(tf_accept(l, IRS, &iss, NULL, 8192) != NULL, "accepted");
	for (int i = 0; i < 1000; i++)
		tf_seg(TF_LPORT, TH_ACK_, IRS + 1 + 1000000, iss + 1, 8192, NULL, 0);
	tap_eq(T.n, 1, "1000 out-of-window ACKs: one ACK out");
	tf_advance_ms(600);
	tf_clear();
	for (int i = 0; i < 1000; i++)
		tf_seg(TF_LPORT, TH_ACK_, IRS + 1 + 1000000, iss + 1, 8192, NULL, 0);
	tap_eq(T.n, 1, "600 ms later: one more");
	tf_clear();
	for (int i = 0; i < 3; i++)
		tf_seg(TF_LPORT, TH_ACK_, IRS + 1 - 100, iss + 1, 8192, pattern, 100);
	tap_eq(T.n, 3, "old data is always re-ACKed (the peer lost our ACK)");
	tf_finish();
}

/* RFC 5961 3.2: an RST is taken only at SEG.SEQ = RCV.NXT exactly.  One
 * that starts 100 bytes below with 200 bytes of payload overlaps RCV.NXT
 * (acceptable), so it gets a challenge ACK, and the trim to the window
 * must not make it look exact. */
static void test_established_rst_below_rcv_nxt(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0;
	struct tf_seg g;

	tf_init("rstb");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192, pattern, 100);
	tf_clear();
	tf_seg(TF_LPORT, TH_RST_, IRS + 1, 0, 0, pattern, 200);	/* RCV.NXT - 100 */
	g = tf_last();
	tap_eq(c->state, SL_TCP_ESTABLISHED, "RST at RCV.NXT-100 with 200 bytes: connection stays");
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 101, "and a challenge ACK");
	tap_eq(tf_counter(SL_C_tcp_challenge_ack), 1, "counted tcp_challenge_ack");
	tf_seg(TF_LPORT, TH_RST_, IRS + 101, 0, 0, NULL, 0);
	tap_eq(c->state, SL_TCP_CLOSED, "the exact RST still resets");
	tf_finish();
}

static uint32_t embryos(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < T.s->r->max_sockets; i++) {
		struct sl_sock *c = sl_sock(T.s, i);

		n += c->type == SL_SOCK_TCP && c->state == SL_TCP_SYN_RECEIVED;
	}
	return n;
}

/* RFC 4987 3.1/3.2: a SYN flood fills at most a share of the socket table
 * (max_sockets / 4 embryos, all listeners together), the rest is answered
 * with cookies (3.6) and counted, and the rest of the stack can still open
 * connections. */
static void test_listen_syn_flood(void)
{
	uint32_t cap, iss = 0;
	struct sl_sock *l2, *so;

	tf_init("synf");
	cap = T.s->r->max_sockets / 4;	/* SL_TCP_SYNQ_SHARE */
	tf_listener(TF_LPORT, 128);
	l2 = tf_listener(8080, 128);
	for (int i = 0; i < 200; i++)
		tf_seg_full((uint16_t)(20000 + i), TF_LPORT, TH_SYN_, IRS + i * 1000u, 0, 8192,
			    NULL, NULL, 0);
	tap_eq(embryos(), cap, "200 SYNs to one listener: max_sockets / 4 embryos");
	for (int i = 0; i < 200; i++)
		tf_seg_full((uint16_t)(30000 + i), 8080, TH_SYN_, IRS + i * 1000u, 0, 8192,
			    NULL, NULL, 0);
	tap_eq(embryos(), cap, "and a second listener adds none: the cap is stack-wide");
	tap_eq(tf_counter(SL_C_tcp_syncookies_sent), 400 - cap,
	       "the other SYNs: answered with SYN cookies (tcp_syncookies_sent)");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tap_ok(so && so->state == SL_TCP_ESTABLISHED, "an ordinary connect() still works");
	/* Embryos time out (SYN-ACK retries); then the listener takes SYNs again. */
	tf_advance_ms(120000);
	tap_eq(embryos(), 0, "the embryos time out");
	tf_clear();
	tf_seg_full(20000, ntohs(l2->lport), TH_SYN_, IRS, 0, 8192, NULL, NULL, 0);
	tap_ok(T.n == 1 && tf_last().flags == (TH_SYN_ | TH_ACK_), "a new SYN is answered");
	tf_finish();
}

/* A peer sending 257-byte segments to a socket that never reads: the
 * payload is packed into the tail buffer (Linux tcp_try_coalesce) and
 * buffers are charged whole against rcvbuf, so the connection pins at
 * most its receive buffer's worth of the shared pool (RFC 9293 3.8.6.2.2
 * leaves the receiver's buffer accounting to it). */
static void test_established_tiny_segments_unread(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0, seq = IRS + 1, bs;
	int i;

	tf_init("tiny");
	bs = T.s->r->buf_size;
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	for (i = 0; i < 4000; i++) {
		tf_clear();
		tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, 257);
		if (tf_last().ack == seq)
			break;
		seq += 257;
	}
	printf("# %u bytes held in %u buffers\n", c->rxq_bytes, c->rxq_count);
	tap_ok(i < 4000, "the window closes");
	tap_ok((uint64_t)c->rxq_count * bs <= c->rcvbuf + bs,
	       "in order: at most rcvbuf's worth of buffers pinned");
	tap_ok(c->rxq_bytes >= c->rcvbuf / 4, "while still taking a useful amount of data");
	tf_finish();
}

/* The same out of order (RFC 9293 3.10.7.4 seventh: queued, never
 * coalesced): tiny segments inside the window take no more buffers than
 * the receive buffer's worth. */
static void test_established_tiny_segments_ooo(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0, bs;

	tf_init("tinyo");
	bs = T.s->r->buf_size;
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 8 * bs;	/* a window of 4 buffers' payload */
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	for (uint32_t i = 0; i < 25; i++)
		tf_seg(TF_LPORT, TH_ACK_, IRS + 1 + 300 + 300 * i, iss + 1, 8192, pattern, 257);
	printf("# %u out-of-order buffers\n", c->tcp.ooo_count);
	tap_ok(c->tcp.ooo_count > 0 && (uint64_t)c->tcp.ooo_count * bs <= c->rcvbuf + bs,
	       "out of order: at most rcvbuf's worth of buffers");
	/* The hole's segment finds the budget taken by the out-of-order
	 * queue: that queue is given up (RFC 2018 8), not the connection. */
	tf_seg(TF_LPORT, TH_ACK_, IRS + 1, iss + 1, 8192, pattern, 300);
	tap_eq(c->rxq_bytes, 300, "the in-order segment is still taken");
	tap_eq(c->tcp.rcv_nxt, IRS + 301, "RCV.NXT moves past it");
	tap_eq(c->tcp.ooo_count, 0, "the out-of-order queue was given up");
	tf_finish();
}

/* Segments a listener takes nothing from are dropped, each counted under
 * a name `sluice dump` shows, and never open a connection: a SYN from
 * 0.0.0.0 (a martian source, RFC 1122 3.2.1.3), one to 0.0.0.2, a SYN with FIN (a
 * scanner's probe; Linux drops it), an RST, a segment with neither SYN
 * nor ACK.  The same SYN from the peer, the control, is answered. */
static void test_listen_hostile_syns(void)
{
	uint32_t peer = T.peer, us;
	uint64_t tx0;

	tf_init("hs");
	us = T.us;
	tf_listener(TF_LPORT, 8);
	peer = T.peer;
	tx0 = tf_counter(SL_C_tcp_tx);

	T.peer = 0;
	tf_seg(TF_LPORT, TH_SYN_, IRS, 0, 8192, NULL, 0);
	T.peer = peer;
	tap_eq(tf_counter(SL_C_ip_rx_martian), 1, "SYN from 0.0.0.0: dropped as a martian");
	tap_eq(tf_counter(SL_C_tcp_tx), tx0, "and not answered");

	/* 0/8 is no destination either (Linux's ip_route_input_slow():
	 * martian destination); inside the stack 0.0.0.1-3 are the handles
	 * of ::1 and its IPv6 addresses (SL_V6TOK_*), which a packet from a
	 * link must not reach (the fuzzer's fragment to 0.0.0.2 was held,
	 * and its time exceeded sent from 0.0.0.2). */
	T.us = SL_V6TOK_ME;
	tf_seg(TF_LPORT, TH_SYN_, IRS, 0, 8192, NULL, 0);
	T.us = us;
	tap_eq(tf_counter(SL_C_ip_rx_martian), 2, "SYN to 0.0.0.2: dropped as a martian");
	tap_eq(tf_counter(SL_C_tcp_tx), tx0, "and not answered");

	tf_seg(TF_LPORT, TH_SYN_ | TH_FIN_, IRS, 0, 8192, NULL, 0);
	tap_eq(tf_counter(SL_C_tcp_rx_synfin), 1, "SYN+FIN: dropped, tcp_rx_synfin");
	tap_eq(tf_counter(SL_C_tcp_tx), tx0, "and not answered");
	tap_eq(T.s->r->sock_used, T.sock0 + 1, "no connection made (the listener only)");

	tf_seg(TF_LPORT, TH_RST_, IRS, 0, 8192, NULL, 0);
	tf_seg(TF_LPORT, TH_FIN_, IRS, 0, 8192, NULL, 0);
	tf_seg(TF_LPORT, 0, IRS, 0, 8192, "x", 1);
	tap_eq(tf_counter(SL_C_tcp_rx_state), 3, "RST, FIN, no flags: dropped, tcp_rx_state");
	tap_eq(tf_counter(SL_C_tcp_tx), tx0, "none answered");

	tf_seg(TF_LPORT, TH_SYN_, IRS, 0, 8192, NULL, 0);
	tap_eq(tf_counter(SL_C_tcp_tx), tx0 + 1, "the same SYN from the peer: a SYN-ACK");
	tf_finish();
}

/* A segment without ACK on a connection is dropped (RFC 9293 3.10.7.4
 * fifth), counted. */
static void test_established_no_ack_counted(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("na");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_PSH_, IRS + 1, 0, 8192, "data", 4);
	tap_eq(tf_counter(SL_C_tcp_rx_state), 1, "data without ACK: dropped, tcp_rx_state");
	tap_eq(so->rxq_bytes, 0, "nothing queued");
	tf_finish();
}

int main(void)
{
	test_listen_syn_from_self();
	test_syn_sent_connect_to_self();
	test_established_oow_flood();
	test_established_rst_below_rcv_nxt();
	test_listen_syn_flood();
	test_established_tiny_segments_unread();
	test_established_tiny_segments_ooo();
	test_listen_hostile_syns();
	test_established_no_ack_counted();
	return tap_done();
}
