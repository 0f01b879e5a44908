// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP data transfer in ESTABLISHED: cumulative ACKs, delayed ACKs, Nagle,
 * receive window, out-of-order reassembly with SACK, zero-window probes,
 * PAWS, window scaling, and the RFC 5961 checks (challenge ACKs).
 */
#include "tcp_fixture.h"

#define PSH_IRS 30000u

#define IRS 10000u

static uint8_t pattern[65536];

static void fill_pattern(void)
{
	for (unsigned int i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 8));
}

/* RFC 9293 3.10.7.4 seventh + RFC 5681 4.2: data is queued and ACKed, one
 * segment after a delay, every second one at once. */
/* PSH as Linux sets it: a burst of new data is Linux's GSO packets, the
 * last segment of each (of two or more) with PSH, as is the segment that
 * ends a write; single segments cut from the middle of a write have none.
 * Here the round trip is short, so a packet is the whole burst. */
static void test_established_psh(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss, psh = 0, last_psh = 0;
	uint8_t data[14 * 536];

	memset(data, 'p', sizeof(data));
	tf_init("ph");
	so = tf_connect(PSH_IRS, &iss, NULL, 65535);
	tap_eq(sl_tcp_send(T.s, so, data, sizeof(data), 0, tf_now_us), (ssize_t)sizeof(data),
	       "14 segments queued");
	for (unsigned int i = 0; i < T.n; i++) {
		g = tf_parse(i);
		if (g.flags & TH_PSH_) {
			psh++;
			last_psh = g.seq + g.plen;
		}
	}
	tap_ok(T.n == 10 && psh == 1 && last_psh == iss + 1 + 10 * 536,
	       "the initial window: PSH on its last segment alone (%u of %u)", psh, T.n);
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, PSH_IRS + 1, iss + 1 + 10 * 536, 65535, NULL, 0);
	g = tf_last();
	psh = 0;
	for (unsigned int i = 0; i < T.n; i++)
		psh += !!(tf_parse(i).flags & TH_PSH_);
	tap_ok(T.n == 4 && psh == 1 && g.seq + g.plen == iss + 1 + 14 * 536 && (g.flags & TH_PSH_),
	       "the rest: PSH where the write ends alone (%u of %u)", psh, T.n);
	tf_finish();
}

static void test_established_data_delayed_ack(void)
{
	struct sl_sock *l, *c;
	uint8_t buf[400];
	struct tf_seg g;
	uint32_t iss;

	tf_init("da");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	tf_past_quickack(c);	/* (below) */
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192, pattern, 100);
	tap_eq(T.n, 0, "one segment: ACK delayed");
	tap_eq(sl_tcp_poll(T.s, c) & SL_EV_IN, SL_EV_IN, "readable");
	tf_advance_ms(39);
	tap_eq(T.n, 0, "not yet at 39 ms");
	tf_advance_ms(1);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 101, "delayed ACK at 40 ms");
	tf_clear();
	/* With PSH, as writes end: short ones without it, of 88 bytes or
	 * more, look full-sized to Linux's tcp_measure_rcv_mss(), and two
	 * alike set its guess of the peer's MSS to their size. */
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 101, iss + 1, 8192, pattern + 100, 100);
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 201, iss + 1, 8192, pattern + 200, 100);
	tap_eq(T.n, 0, "two short segments: ACK still delayed (not a full segment's worth, "
	       "Linux __tcp_ack_snd_check())");
	tap_eq(sl_tcp_recv(T.s, c, buf, 50, MSG_PEEK, tf_now_us), 50, "peek 50");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), 300, "recv all 300");
	tap_ok(!memcmp(buf, pattern, 300), "bytes in order");
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == IRS + 301, "the read that empties the queue ACKs them");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), -EAGAIN, "then EAGAIN");
	/* A duplicate (already received) segment is ACKed at once, and
	 * enters quick-ACK mode (Linux tcp_send_dupack(): our ACK was
	 * likely lost): the next segment is ACKed at once too. */
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, IRS + 101, iss + 1, 8192, pattern + 100, 100);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == IRS + 301, "old data: immediate ACK of RCV.NXT");
	tap_eq(c->rxq_bytes, 0, "old data not queued again");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 301, iss + 1, 8192, pattern, 10);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == IRS + 311,
	       "then quick-ACK mode: the next short segment ACKed at once "
	       "(tests/conformance/pd/delack-dup-quickack.pkt)");
	tf_finish();
}

/*
 * RFC 5681 4.2 as Linux's __tcp_ack_snd_check(): more than one full
 * segment unacknowledged is ACKed at once only if the ACK moves the
 * window's right edge (the window now no smaller than the last ACK's) or
 * the reader waits for more (SO_RCVLOWAT); otherwise the read that frees
 * the space sends it (tcp_cleanup_rbuf()), or the timer.
 */
static void test_established_two_full_segments(void)
{
	struct sl_sock *l, *c;
	uint8_t buf[8192];
	struct tf_seg g;
	uint32_t iss, seq = IRS + 1, mss;

	tf_init("tf");
	l = tf_listener(TF_LPORT, 8);
	/* Segments that take a buffer each (not coalesced: more than half a
	 * buffer), a window well under the unscaled field's 65535. */
	l->rcvbuf = 16 * T.s->buf_size;
	c = tf_accept(l, IRS, &iss, &(struct tf_opts){ .mss = 1460 }, 65535);
	tf_past_quickack(c);
	mss = c->tcp.mss;
	/* The SYN-ACK's window is at most 65535: an ACK of the whole window
	 * first (as Linux's rcv_wnd is from tcp_select_initial_window()). */
	tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
	seq += mss;
	tf_advance_ms(40);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "one full segment: the timer ACKs it");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), (ssize_t)mss, "read it");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
	tf_seg(TF_LPORT, TH_ACK_, seq + mss, iss + 1, 8192, pattern, mss);
	seq += 2 * mss;
	tap_eq(T.n, 0, "two full segments unread: the window would not move, ACK waits "
	       "(tests/conformance/pd/delack-window-edge.pkt)");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), (ssize_t)(2 * mss), "read both");
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "the read sends it");
	/* The edge moves: the last ACK went with two segments queued, and
	 * two are queued again. */
	tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
	tf_seg(TF_LPORT, TH_ACK_, seq + mss, iss + 1, 8192, pattern, mss);
	seq += 2 * mss;
	tf_advance_ms(40);
	tf_clear();
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), (ssize_t)(2 * mss),
	       "the timer ACKed two more; read them");
	tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
	tap_eq(T.n, 0, "one full segment: ACK delayed");
	tf_seg(TF_LPORT, TH_ACK_, seq + mss, iss + 1, 8192, pattern, mss);
	seq += 2 * mss;
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "the second with the edge moving: ACK at once");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), (ssize_t)(2 * mss), "read them");
	/* A reader waiting for more than is queued (SO_RCVLOWAT). */
	tf_advance_ms(100);
	tf_past_quickack(c);
	c->rcvlowat = 10 * mss;
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
	tf_seg(TF_LPORT, TH_ACK_, seq + mss, iss + 1, 8192, pattern, mss);
	seq += 2 * mss;
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "SO_RCVLOWAT not met: the second ACKed at once");
	c->rcvlowat = 0;
	sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	tf_finish();
}

/*
 * Linux tcp_cleanup_rbuf(): a read sends a window update only once the
 * window left to the peer is at most half the largest, and the window
 * now offered is at least twice it ("raised significantly").
 */
static void test_established_window_update_on_read(void)
{
	struct sl_sock *l, *c;
	uint8_t buf[20000];
	struct tf_seg g;
	uint32_t iss, seq = IRS + 1, mss, max, n = 0;

	tf_init("wu");
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 16 * T.s->buf_size;
	c = tf_accept(l, IRS, &iss, &(struct tf_opts){ .mss = 1460 }, 65535);
	mss = c->tcp.mss;
	max = sl_tcp_rcv_window(T.s, c);	/* all of it free */
	tap_ok(max >= 6 * mss, "a window of six segments or more");
	/* Each segment ACKed at once (quick ACKs). */
	tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
	tf_seg(TF_LPORT, TH_ACK_, seq + mss, iss + 1, 8192, pattern, mss);
	seq += 2 * mss;
	tf_clear();
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), (ssize_t)(2 * mss),
	       "read two segments");
	tap_eq(T.n, 0, "more than half the window still offered: no update "
	       "(tests/conformance/pd/delack-window-update.pkt)");
	/* Fill it to less than half left. */
	while (SEQ_GT(c->tcp.rcv_adv, seq) && c->tcp.rcv_adv - seq > max / 2 - mss && n < 64) {
		tf_seg(TF_LPORT, TH_ACK_, seq, iss + 1, 8192, pattern, mss);
		seq += mss;
		n++;
	}
	tf_advance_ms(200);
	tf_clear();
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), (ssize_t)(n * mss),
	       "more segments, then read");
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "less than half left: the read sends an update");
	tf_finish();
}

/*
 * Linux's quick-ACK start (tcp_event_data_recv(), TCP_MAX_QUICKACKS 16):
 * a new connection's first data segments are ACKed at once, one by one;
 * then the delayed ACK; and an end that has sent data acks with it.
 */
static void test_established_data_quick_ack_start(void)
{
	struct sl_sock *l, *c;
	uint8_t buf[100];
	struct tf_seg g;
	uint32_t iss, seq = IRS + 1;
	int i, quick = 0;

	tf_init("qa");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	for (i = 0; i < SL_TCP_QUICKACKS; i++) {
		tf_clear();
		tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
		seq += 10;
		g = tf_last();
		quick += T.n == 1 && g.flags == TH_ACK_ && g.ack == seq;
		sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	}
	tap_eq(quick, SL_TCP_QUICKACKS, "the first 16 data segments: each ACKed at once");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	tap_eq(T.n, 0, "the 17th: ACK delayed");
	tf_advance_ms(40);
	tap_eq(T.n, 1, "delayed ACK at 40 ms");
	tf_finish();

	tf_init("qb");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tap_eq(sl_tcp_send(T.s, c, pattern, 10, 0, tf_now_us), 10, "this end sends data first");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 11, 8192, pattern, 10);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 11,
	       "then the peer's first data is ACKed at once: data sent before any came is no "
	       "exchange (a server's banner; tests/conformance/pd/delack-quick-after-send.pkt)");
	tf_finish();
}

/*
 * Linux's tcp_event_data_recv(): data after a pause longer than the RTO
 * is ACKed at once again (tcp_incr_quickack()), and the ACK timeout
 * follows the peer's segments: doubled by a delayed ACK that went alone
 * (tcp_delack_timer_handler()), within the smoothed RTT (at least 40 ms),
 * and pulled back toward 40 ms by segments close together.
 */
static void test_established_quickack_after_idle_and_ato(void)
{
	struct sl_sock *l, *c;
	uint8_t buf[100];
	struct tf_seg g;
	uint32_t iss, seq = IRS + 1;

	tf_init("qi");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tf_past_quickack(c);
	c->tcp.srtt_us = 100000;	/* a 100 ms path */
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	tf_advance_ms(39);
	tap_eq(T.n, 0, "a short segment: not ACKed at 39 ms");
	tf_advance_ms(1);
	tap_eq(T.n, 1, "ACKed at 40 ms (TCP_ATO_MIN)");
	sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	tf_advance_ms(100);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	tf_advance_ms(79);
	tap_eq(T.n, 0, "after a delayed ACK that went alone, the next waits longer: not at 79 ms");
	tf_advance_ms(1);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "ACKed at 80 ms (the timeout doubled, within the RTT)");
	sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	/* Segments 10 ms apart (each read, as a reader does) pull it back
	 * down by halves: 160 -> 100 -> 70 -> 55 -> 47 -> 43 -> 41 -> 40. */
	tf_advance_ms(100);
	for (int i = 0; i < 8; i++) {
		tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
		seq += 10;
		sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
		tf_advance_ms(10);
	}
	tap_ok(c->tcp.ato_ms == 40, "segments 10 ms apart bring the timeout back to 40 ms (%u)",
	       c->tcp.ato_ms);
	tf_advance_ms(30);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	tf_advance_ms(39);
	tap_eq(T.n, 0, "the next segment's ACK: not at 39 ms");
	tf_advance_ms(1);
	tap_eq(T.n, 1, "at 40 ms");
	sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	/* Idle for longer than the RTO: quick ACKs again. */
	tf_advance_ms(c->tcp.rto_us / 1000 + 1);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "after a pause longer than the RTO: ACKed at once");
	sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	tf_advance_ms(10);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "and the next too (quick ACKs, not one)");
	tf_finish();
}

/*
 * TCP_QUICKACK as Linux's __tcp_sock_set_quickack(): off enters the
 * exchange (no quick ACKs), which lasts only until a delayed ACK has to
 * go alone (tcp(7): the option is not permanent), and getsockopt() reads
 * whether the end is in one.
 */
static void test_established_quickack_option(void)
{
	struct sl_sock *l, *c;
	struct tf_seg g;
	uint32_t iss, seq = IRS + 1;
	int v = 0;
	unsigned int len = sizeof(v);

	tf_init("qo");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tap_eq(sl_tcp_setsockopt(T.s, c, IPPROTO_TCP, TCP_QUICKACK, &v, sizeof(v)), 0,
	       "TCP_QUICKACK off");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	tap_eq(T.n, 0, "the first segment's ACK waits");
	tf_advance_ms(40);
	tap_eq(T.n, 1, "and goes at 40 ms, alone");
	tf_advance_ms(60);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, seq, iss + 1, 8192, pattern, 10);
	seq += 10;
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == seq, "that ended it: the next is ACKed at once (quick ACKs)");
	tap_eq(sl_tcp_getsockopt(T.s, c, IPPROTO_TCP, TCP_QUICKACK, &v, &len), 0, "getsockopt");
	tap_eq(v, 1, "TCP_QUICKACK reads on again");
	tf_finish();
}

/*
 * Linux's tcp_cleanup_rbuf(): a read that empties the queue sends the ACK
 * delayed for a short segment, unless this end is in an exchange (it sent
 * data soon after data came: pingpong), which a delayed ACK that had to
 * go alone ends.
 */
static void test_established_ack_on_read(void)
{
	struct sl_sock *l, *c;
	uint8_t buf[100];
	struct tf_seg g;
	uint32_t iss;

	tf_init("ar");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tf_past_quickack(c);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192, pattern, 10);
	tap_eq(T.n, 0, "a short segment: ACK delayed");
	tap_eq(sl_tcp_recv(T.s, c, buf, 5, 0, tf_now_us), 5, "read half of it");
	tap_eq(T.n, 0, "data left queued: still delayed");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), 5, "read the rest");
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 11,
	       "the read that empties the queue sends the ACK");
	tf_advance_ms(5);
	tap_eq(sl_tcp_send(T.s, c, pattern, 10, 0, tf_now_us), 10,
	       "this end answers within 40 ms: an exchange");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 11, iss + 11, 8192, pattern, 10);
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), 10, "read the next");
	tap_eq(T.n, 0, "in an exchange the ACK waits for the reply");
	tf_advance_ms(40);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 21, "no reply: delayed ACK at 40 ms");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 21, iss + 11, 8192, pattern, 10);
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), 10, "read the third");
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == IRS + 31, "the exchange ended: the read sends the ACK");
	tf_finish();
}

static void test_established_send_nagle(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("sn");
	fill_pattern();
	so = tf_connect(IRS, &iss, &(struct tf_opts){ .mss = 1000 }, 65535);
	tap_eq(sl_tcp_send(T.s, so, pattern, 2100, 0, tf_now_us), 2100, "send 2100 bytes");
	/* Minshall's variant (Linux tcp_nagle_check()): full segments in
	 * flight do not hold the short tail of a write. */
	tap_eq(T.n, 3, "two full segments and the short tail go out (Nagle, Minshall)");
	g = tf_parse(0);
	tap_ok(g.seq == iss + 1 && g.plen == 1000 && !memcmp(g.data, pattern, 1000),
	       "first segment: 1000 bytes from SND.UNA");
	g = tf_parse(1);
	tap_ok(g.seq == iss + 1001 && g.plen == 1000 && g.csum_ok, "second segment");
	g = tf_parse(2);
	tap_ok(g.seq == iss + 2001 && g.plen == 100 && (g.flags & TH_PSH_), "the 100-byte tail");
	/* A short segment unacknowledged: the next short one waits. */
	tf_clear();
	sl_tcp_send(T.s, so, pattern, 50, 0, tf_now_us);
	tap_eq(T.n, 0, "a second short write waits while the first is unacknowledged");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2001, 65535, NULL, 0);
	tap_eq(T.n, 0, "... still, while only the full segments are ACKed");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2101, 65535, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.seq == iss + 2101 && g.plen == 50,
	       "sent once the short one is ACKed");
	tap_eq(so->tcp.sndq_bytes, 50, "acked data freed from the send queue");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2151, 65535, NULL, 0);
	/* TCP_NODELAY: small writes leave at once. */
	tf_clear();
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	sl_tcp_send(T.s, so, "a", 1, 0, tf_now_us);
	sl_tcp_send(T.s, so, "b", 1, 0, tf_now_us);
	tap_eq(T.n, 2, "TCP_NODELAY: two 1-byte segments");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 2153, 65535, NULL, 0);
	tf_finish();
}

/* RFC 2018 4: the first block holds the newest segment; RFC 5681 4.2:
 * out-of-order data is ACKed at once; in-order data fills the gaps. */
static void test_established_ooo_sack(void)
{
	struct tf_opts o = { .sack_ok = 1 };
	struct sl_sock *l, *c;
	uint8_t buf[512];
	struct tf_seg g;
	uint32_t iss, b = IRS + 1;

	tf_init("oo");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &o, 8192);
	tf_seg(TF_LPORT, TH_ACK_, b + 100, iss + 1, 8192, pattern + 100, 100);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == b, "hole: duplicate ACK at once");
	tap_ok(g.nsack == 1 && g.sack[0][0] == b + 100 && g.sack[0][1] == b + 200,
	       "SACK block for the queued segment");
	tap_eq(tf_counter(SL_C_tcp_ooo), 1, "counted tcp_ooo");
	tf_seg(TF_LPORT, TH_ACK_, b + 300, iss + 1, 8192, pattern + 300, 100);
	g = tf_last();
	tap_ok(g.nsack == 2 && g.sack[0][0] == b + 300 && g.sack[1][0] == b + 100,
	       "two blocks, newest first");
	tf_seg(TF_LPORT, TH_ACK_, b + 150, iss + 1, 8192, pattern + 150, 150);
	g = tf_last();
	tap_ok(g.nsack == 2 && g.sack[1][0] == b + 100 && g.sack[1][1] == b + 400,
	       "overlapping segment merges the blocks");
	tap_ok(g.sack[0][0] == b + 150 && g.sack[0][1] == b + 200,
	       "its front, held already, DSACKed first (RFC 2883)");
	tap_eq(c->rxq_bytes, 0, "nothing readable yet");
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 8192, pattern, 100);
	g = tf_last();
	tap_ok(g.ack == b + 400 && g.nsack == 0, "gap filled: cumulative ACK, no SACK");
	tap_eq(c->rxq_bytes, 400, "all 400 bytes readable");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), 400, "recv 400");
	tap_ok(!memcmp(buf, pattern, 400), "reassembled in order");
	tap_eq(c->tcp.ooo_count, 0, "out-of-order queue empty");
	tf_finish();
}

/*
 * RFC 2883 as Linux: data that came twice is reported in the first SACK
 * block of the next ACK, once, ahead of the SACK blocks that fit after it
 * (two with timestamps); below RCV.NXT (a segment refused as old, by the
 * sequence test or PAWS) or held out of order; counted in tcp_dsack_tx.
 * None on a connection without SACK.
 */
static void test_established_dsack(void)
{
	struct tf_opts o = { .sack_ok = 1, .ts = 1, .tsval = 500 };
	struct sl_sock *l, *c;
	uint32_t iss, b = IRS + 1;
	struct tf_seg g;

	tf_init("ds");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &o, 65535);
	o.tsval = 600;
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b, iss + 1, 65535, &o, pattern, 100);
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b + 200, iss + 1, 65535, &o, pattern, 100);
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b + 400, iss + 1, 65535, &o, pattern, 100);
	g = tf_last();
	tap_ok(g.ack == b + 100 && g.nsack == 2, "two holes: two SACK blocks");
	tap_eq(tf_counter(SL_C_tcp_dsack_tx), 0, "no DSACK yet");
	tf_clear();
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b + 200, iss + 1, 65535, &o, pattern, 100);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == b + 100 && g.nsack == 3 && g.sack[0][0] == b + 200 &&
	       g.sack[0][1] == b + 300 && g.sack[1][0] == b + 200 && g.sack[2][0] == b + 400,
	       "out-of-order duplicate: DSACK, then its SACK block, then the other (%d blocks)",
	       g.nsack);
	tap_eq(tf_counter(SL_C_tcp_dsack_tx), 1, "counted tcp_dsack_tx");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b + 600, iss + 1, 65535, &o, pattern, 100);
	g = tf_last();
	tap_ok(g.nsack == 3 && g.sack[0][0] == b + 600 && g.sack[1][0] == b + 400,
	       "the next ACK: SACK blocks only, the newest first");
	tf_clear();
	/* Below RCV.NXT, with an old TSval: PAWS refuses it, the ACK DSACKs. */
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b, iss + 1, 65535,
		    &(struct tf_opts){ .ts = 1, .tsval = 550 }, pattern, 100);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == b + 100 && g.nsack == 3 && g.sack[0][0] == b &&
	       g.sack[0][1] == b + 100, "old by PAWS: DSACK of it");
	tap_eq(tf_counter(SL_C_tcp_dsack_tx), 2, "counted again");
	tap_eq(c->tcp.ooo_count, 3, "the queue unchanged");
	tf_finish();

	/* Without SACK, no DSACK. */
	tf_init("dn");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 65535, pattern, 100);
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 65535, pattern, 100);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == b + 100 && g.nsack == 0, "no SACK: a plain duplicate ACK");
	tap_eq(tf_counter(SL_C_tcp_dsack_tx), 0, "nothing counted");
	tap_ok(!(c->tcp.tflags & SL_TF_DSACK), "nothing waits");
	tf_finish();
}

/* More holes than sack_blocks() looks at (16): the blocks sent are the
 * newest arrival's, then the highest others, not the lowest ranges
 * again and again (a loss burst on a long path leaves many holes, and
 * the sender learns of its newest deliveries only from the top ones). */
static void test_established_sack_many_holes(void)
{
	struct tf_opts o = { .sack_ok = 1 };
	struct sl_sock *l;
	struct tf_seg g;
	uint32_t iss, b = IRS + 1;

	tf_init("sh");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	tf_accept(l, IRS, &iss, &o, 8192);
	/* 20 ranges of 10 bytes, 10 apart, at b + 10 .. b + 400; then a
	 * segment in the lowest hole but one, the newest arrival. */
	for (uint32_t i = 0; i < 20; i++)
		tf_seg(TF_LPORT, TH_ACK_, b + 10 + 20 * i, iss + 1, 8192, pattern, 10);
	g = tf_last();
	tap_ok(g.ack == b && g.nsack == 4 && g.sack[0][0] == b + 390 && g.sack[1][0] == b + 370 &&
	       g.sack[2][0] == b + 350 && g.sack[3][0] == b + 330,
	       "20 holes: the newest block, then the next highest (%u %u %u)",
	       g.nsack > 0 ? g.sack[0][0] - b : 0, g.nsack > 1 ? g.sack[1][0] - b : 0,
	       g.nsack > 2 ? g.sack[2][0] - b : 0);
	tf_seg(TF_LPORT, TH_ACK_, b + 20, iss + 1, 8192, pattern, 10);
	g = tf_last();
	tap_ok(g.nsack == 4 && g.sack[0][0] == b + 10 && g.sack[0][1] == b + 40 &&
	       g.sack[1][0] == b + 390 && g.sack[2][0] == b + 370 && g.sack[3][0] == b + 350,
	       "a low arrival: its block first, then the highest (%u-%u %u %u)",
	       g.nsack > 0 ? g.sack[0][0] - b : 0, g.nsack > 0 ? g.sack[0][1] - b : 0,
	       g.nsack > 1 ? g.sack[1][0] - b : 0, g.nsack > 2 ? g.sack[2][0] - b : 0);
	tf_finish();
}

/* A data segment never passes the MTU for the SACK blocks it carries:
 * the MSS counts the timestamp option only, so a full-sized segment has no
 * room for blocks and goes without (the duplicate ACKs carry them), and a
 * shorter one carries what fits.  (Blocks that did not fit used to push
 * full segments 28 bytes over the MTU, and the link refused them.) */
static void test_established_sack_fits_mtu(void)
{
	struct tf_opts o = { .mss = 1460, .sack_ok = 1, .ts = 1, .tsval = 500 };
	struct sl_sock *l, *c;
	uint32_t iss = 0, b = IRS + 1, sent = 0, len;
	bool fits = true;
	struct tf_seg g;

	tf_init("sm");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &o, 65535);
	c->flags |= SL_SF_NODELAY;
	/* Three holes: the out-of-order queue makes three SACK blocks. */
	for (int i = 0; i < 3; i++) {
		o.tsval++;
		tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, b + 100 + 200 * i, iss + 1, 65535, &o,
			    pattern, 100);
	}
	tap_eq(tf_last().nsack, 3, "three SACK blocks on the duplicate ACK");
	tf_clear();
	len = 3u * c->tcp.mss + 100;
	tap_eq(sl_tcp_send(T.s, c, pattern, len, 0, tf_now_us), len,
	       "three full segments and a short one queued");
	for (unsigned int i = 0; i < T.n; i++) {
		fits &= T.f[i].len <= 1500;
		sent += tf_parse(i).plen;
	}
	tap_ok(T.n == 4 && sent == len, "all of it sent at once, in four segments");
	tap_ok(fits, "every segment within the 1500-byte MTU");
	g = tf_parse(3);
	tap_ok(g.plen == 100 && g.nsack == 3, "the short one carries the three blocks");
	tf_finish();
}

/* RFC 9293 3.8.6.2.2: the window closes as data waits unread and no
 * more than the window is accepted; reading opens it (window update). */
static void test_established_receive_window(void)
{
	struct sl_sock *l, *c;
	struct tf_seg g;
	uint32_t iss, b = IRS + 1, win;
	uint8_t buf[4096];

	tf_init("rw");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 4000;	/* 2000 bytes of window */
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 8192, pattern, 1000);
	tf_seg(TF_LPORT, TH_ACK_, b + 1000, iss + 1, 8192, pattern + 1000, 1000);
	g = tf_last();
	tap_ok(g.ack == b + 2000 && g.win == 0, "window full: advertises 0");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, b + 2000, iss + 1, 8192, pattern + 2000, 500);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == b + 2000, "beyond the window: ACK, data dropped");
	tap_eq(c->rxq_bytes, 2000, "only the window's worth queued");
	tf_clear();
	sl_tcp_recv(T.s, c, buf, 1500, 0, tf_now_us);
	g = tf_last();
	win = g.win;
	tap_ok(T.n == 1 && win >= 1000, "reading sends a window update");
	sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us);
	tf_finish();
}

/* The window offered is one the receive buffer can hold: each segment
 * takes a packet buffer of its own, so with an MSS below half a buffer
 * (980 here; 968 on Soft-RoCE's IPoIB) a window counted in bytes of
 * buffer took more
 * buffers than SO_RCVBUF allows, and the last segments of every full
 * window were dropped (tcp_rx_pressure) and sent again. */
static void receive_window_small_mss(uint32_t rmem_max)
{
	struct sl_sock *l, *c;
	uint32_t iss, b = IRS + 1, end;
	uint64_t drops = 0;
	unsigned int segs = 0, ws;
	bool all_acked = true;
	struct tf_seg g;

	tf_init("rm");
	fill_pattern();
	T.s->r->mtu = 1020;
	T.s->tcp_rmem_max = rmem_max;
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 262144;	/* 128 buffers */
	c = tf_accept(l, IRS, &iss, &(struct tf_opts){ .ws_on = 1, .ws = 7 }, 8192);
	ws = c->tcp.rcv_wscale;
	tap_eq(ws, rmem_max ? 10 : 2, "our window scale");
	drops = sl_counter_sum(T.s, SL_C_tcp_rx_pressure);
	/* The peer fills the window each ACK offers with full segments as it
	 * opens (the SYN's is not scaled); nobody reads. */
	end = c->tcp.rcv_adv;
	while (SEQ_LT(b, end) && segs < 1000) {
		unsigned int n = end - b < 980 ? end - b : 980;

		tf_clear();
		tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, b, iss + 1, 8192, pattern + (b - IRS - 1) % 8192,
		       n);
		g = tf_last();
		b += n;
		segs++;
		all_acked &= !T.n || g.ack == b;
		if (T.n && SEQ_GT(g.ack + ((uint32_t)g.win << ws), end))
			end = g.ack + ((uint32_t)g.win << ws);
	}
	tap_ok(end - IRS - 1 > 100000 && end - IRS - 1 <= 131072,
	       "window offered in all: %u bytes (half of SO_RCVBUF, at most)", end - IRS - 1);
	tap_ok(segs > 100, "%u segments of at most 980 bytes fill it", segs);
	tap_eq(sl_counter_sum(T.s, SL_C_tcp_rx_pressure) - drops, 0,
	       "none dropped for want of buffer space");
	tap_ok(all_acked && c->tcp.rcv_nxt == end && c->rxq_bytes == end - IRS - 1,
	       "every byte of the window taken and ACKed");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 8192, pattern, 980);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == end && g.win == 0,
	       "then the window is 0, and a segment past it is refused");
	sl_tcp_recv(T.s, c, pattern + 10000, sizeof(pattern) - 10000, 0, tf_now_us);
	tf_finish();
}

static void test_established_receive_window_small_mss(void)
{
	receive_window_small_mss(0);
	/* The shift Linux picks for 32 MiB (tcp_rmem's max): a window field
	 * rounded up ACK after ACK offered more than the buffer holds. */
	receive_window_small_mss(32u << 20);
}

/* A pure ACK at the right edge of our window is taken (Linux's
 * tcp_sequence): a peer that filled the window, one segment of it lost,
 * sends its ACKs of our data from there. */
static void test_established_ack_at_right_edge(void)
{
	struct sl_sock *l, *c;
	uint32_t iss, b = IRS + 1, edge;

	tf_init("re");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 4000;	/* 2000 bytes of window */
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	c->flags |= SL_SF_NODELAY;
	tap_eq(sl_tcp_send(T.s, c, pattern, 500, 0, tf_now_us), 500, "500 bytes of ours out");
	edge = c->tcp.rcv_adv;
	/* The peer's first 1000 bytes are lost; the rest of the window came. */
	tf_seg(TF_LPORT, TH_ACK_, b + 1000, iss + 1, 8192, pattern, edge - b - 1000);
	tap_eq(c->tcp.rcv_nxt, b, "a hole at RCV.NXT");
	tf_clear();
	tf_seg(TF_LPORT, TH_ACK_, edge, iss + 501, 8192, NULL, 0);
	tap_eq(c->tcp.snd_una, iss + 501, "its pure ACK from the window's edge acknowledges our data");
	tap_eq(c->tcp.sndq_bytes, 0, "and frees it");
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 501, 8192, pattern, 1000);
	tap_eq(c->tcp.rcv_nxt, edge, "the hole filled: everything up to the edge taken");
	sl_tcp_recv(T.s, c, pattern + 30000, 4000, 0, tf_now_us);
	tf_finish();
}

/* A bare FIN at RCV.NXT is taken even with the window closed (Linux). */
static void test_established_fin_zero_window(void)
{
	struct sl_sock *l, *c;
	uint32_t iss, b = IRS + 1;

	tf_init("fz");
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 4000;
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 8192, pattern, 1000);
	tf_seg(TF_LPORT, TH_ACK_, b + 1000, iss + 1, 8192, pattern + 1000, 1000);
	tap_eq(tf_last().win, 0, "window closed");
	tf_seg(TF_LPORT, TH_ACK_ | TH_FIN_, b + 2000, iss + 1, 8192, pattern, 10);
	tap_eq(c->state, SL_TCP_ESTABLISHED, "FIN with data beyond a zero window: not taken");
	tf_seg(TF_LPORT, TH_ACK_ | TH_FIN_, b + 2000, iss + 1, 8192, NULL, 0);
	tap_eq(c->state, SL_TCP_CLOSE_WAIT, "bare FIN at RCV.NXT: taken");
	tap_eq(tf_last().ack, b + 2001, "and ACKed");
	tf_finish();
}

/* RFC 9293 3.8.6.1: a zero window is probed on the persist timer. */
static void test_established_zero_window_probe(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("zw");
	fill_pattern();
	so = tf_connect(IRS, &iss, NULL, 0);
	tap_eq(sl_tcp_send(T.s, so, pattern, 500, 0, tf_now_us), 500, "queue 500 bytes");
	tap_eq(T.n, 0, "zero window: nothing sent");
	tap_ok(so->tcp.t_persist != 0, "persist timer armed");
	for (int i = 0; i < 1000 && !T.n; i++)
		tf_advance_ms(1);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.seq == iss && g.plen == 0,
	       "window probe within the RTO: SEG.SEQ = SND.UNA - 1, no data");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 0, NULL, 0);
	tap_eq(T.n, 0, "still zero: nothing");
	tf_advance_ms(3000);
	tap_ok(T.n >= 1, "probes continue, backing off");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 1000, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.plen == 500 && g.seq == iss + 1, "window opens: data flows");
	tap_eq(so->tcp.t_persist, 0, "persist timer off");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 501, 1000, NULL, 0);
	tf_finish();
}

/* A peer window smaller than a queued segment: send what fits
 * (RFC 9293 3.8.6.2.1) once nothing is in flight. */
static void test_established_small_peer_window(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("sw");
	fill_pattern();
	so = tf_connect(IRS, &iss, &(struct tf_opts){ .mss = 1400 }, 1000);
	sl_tcp_send(T.s, so, pattern, 1400, 0, tf_now_us);
	g = tf_last();
	tap_ok(T.n == 1 && g.plen == 1000 && !memcmp(g.data, pattern, 1000),
	       "1000 of 1400 bytes sent into a 1000-byte window");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1001, 1000, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.plen == 400 && !memcmp(g.data, pattern + 1000, 400),
	       "the rest after the ACK");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1401, 1000, NULL, 0);
	tf_finish();
}

/* RFC 5961 3.2: an RST in the window but not at RCV.NXT gets a challenge
 * ACK; the exact one resets the connection. */
static void test_established_rst(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;
	uint8_t buf[8];

	tf_init("er");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_RST_, IRS + 1 + 100, 0, 0, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.seq == iss + 1 && g.ack == IRS + 1,
	       "in-window RST: challenge ACK");
	tap_eq(so->state, SL_TCP_ESTABLISHED, "still ESTABLISHED");
	tap_eq(tf_counter(SL_C_tcp_challenge_ack), 1, "counted tcp_challenge_ack");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_RST_, IRS + 1 + 1000000, 0, 0, NULL, 0);
	tap_eq(T.n, 0, "out-of-window RST: dropped silently");
	tf_seg(ntohs(so->lport), TH_RST_ | TH_ACK_, IRS + 1, iss + 1, 0, NULL, 0);
	tap_eq(so->state, SL_TCP_CLOSED, "exact RST: CLOSED");
	tap_eq(sl_tcp_recv(T.s, so, buf, sizeof(buf), 0, tf_now_us), -ECONNRESET,
	       "recv: ECONNRESET");
	tap_eq(sl_tcp_send(T.s, so, buf, 1, 0, tf_now_us), -EPIPE, "send after reset: EPIPE");
	tap_eq(tf_counter(SL_C_tcp_reset_rx), 1, "counted tcp_reset_rx");
	tf_finish();
}

/* RFC 5961 4.2: a SYN in a synchronized state gets a challenge ACK. */
static void test_established_syn(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("es");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_SYN_, IRS + 1, 0, 8192, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 1, "SYN: challenge ACK");
	tap_eq(so->state, SL_TCP_ESTABLISHED, "still ESTABLISHED");
	tf_clear();
	tf_seg(ntohs(so->lport), TH_SYN_, IRS + 77777, 0, 8192, NULL, 0);
	tap_ok(T.n == 1 && tf_last().flags == TH_ACK_, "out-of-window SYN: ACK too");
	tf_finish();
}

/* RFC 5961 5.2 / RFC 9293: an ACK for data never sent is ACKed, dropped. */
static void test_established_bad_ack(void)
{
	struct sl_sock *so;
	struct tf_seg g;
	uint32_t iss;

	tf_init("ba");
	so = tf_connect(IRS, &iss, NULL, 8192);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 5000, 8192, "data", 4);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 1, "ACK beyond SND.NXT: ACK");
	tap_eq(so->rxq_bytes, 0, "its data dropped");
	tap_eq(so->tcp.snd_una, iss + 1, "SND.UNA unchanged");
	tf_clear();
	/* Out of the receive window altogether. */
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1 + 100000, iss + 1, 8192, "data", 4);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == IRS + 1, "out-of-window data: ACK");
	tap_eq(so->rxq_bytes, 0, "not queued");
	tf_finish();
}

/* RFC 7323 5.3: PAWS drops a segment with an older timestamp. */
static void test_established_paws(void)
{
	struct tf_opts o = { .ts = 1, .tsval = 1000 };
	struct sl_sock *l, *c;
	struct tf_seg g;
	uint32_t iss;

	tf_init("pw");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &o, 8192);
	tap_ok(c && (c->tcp.tflags & SL_TF_TS), "timestamps agreed");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 1, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2000 }, "new", 3);
	tap_eq(c->rxq_bytes, 3, "newer TSval: accepted");
	tf_clear();
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 4, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 1500 }, "old", 3);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == TH_ACK_ && g.ack == IRS + 4, "older TSval: ACK");
	tap_eq(c->rxq_bytes, 3, "older TSval: data dropped");
	tap_ok(g.ts && g.tsecr == 2000, "TSecr echoes TS.Recent");
	tf_finish();
}

/*
 * Header prediction (tcp_input.c, predicted()): the next in-order
 * segment with ACK alone and a timestamp that passes PAWS takes the short
 * way to the ACK, counted in tcp_rx_predicted; everything else the whole
 * RFC 9293 path, and each ends as the whole path would have ended it.
 */
static uint64_t predicted(void)
{
	return sl_counter_sum(T.s, SL_C_tcp_rx_predicted);
}

static void test_established_header_prediction(void)
{
	struct tf_opts o = { .ts = 1, .tsval = 1000 };
	struct sl_sock *l, *c;
	uint64_t n0;
	uint32_t iss;

	tf_init("hp");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &o, 8192);
	tap_ok(c && (c->tcp.tflags & SL_TF_TS), "timestamps agreed");
	n0 = predicted();
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2000 }, "abc", 3);
	tap_ok(c->rxq_bytes == 3 && c->tcp.rcv_nxt == IRS + 4 && predicted() == n0 + 1,
	       "the next segment, ACK and PSH, newer TSval: predicted, queued (%llu)",
	       (unsigned long long)(predicted() - n0));
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 4, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2000 }, NULL, 0);
	tap_eq(predicted(), n0 + 2, "a pure ACK at RCV.NXT, same TSval: predicted");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 7, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2001 }, "ghi", 3);
	tap_ok(predicted() == n0 + 2 && c->rxq_bytes == 3 && c->tcp.ooo_count == 1,
	       "a segment past RCV.NXT: the whole path (out of order, held)");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 4, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 1500 }, "old", 3);
	tap_ok(predicted() == n0 + 2 && c->rxq_bytes == 3,
	       "an older TSval: the whole path (PAWS drops it)");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 4, iss + 1, 8192, NULL, "nts", 3);
	tap_ok(predicted() == n0 + 2 && c->rxq_bytes == 3,
	       "no timestamp where one is due: the whole path (dropped)");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 4, iss + 2, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2002 }, "bad", 3);
	tap_ok(predicted() == n0 + 2 && c->rxq_bytes == 3,
	       "an ACK of data never sent: the whole path (challenge ACK, dropped)");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_, IRS + 4, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2003 }, "def", 3);
	tap_ok(predicted() == n0 + 3 && c->rxq_bytes == 9 && c->tcp.ooo_count == 0 &&
		       c->tcp.rcv_nxt == IRS + 10,
	       "the segment the held one waits for: predicted, both queued");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_ | TH_FIN_, IRS + 10, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 2004 }, NULL, 0);
	tap_ok(predicted() == n0 + 3 && c->state == SL_TCP_CLOSE_WAIT,
	       "a FIN: the whole path (CLOSE-WAIT)");
	tf_finish();
}

/* RFC 7323 2.2: the shift is ours to pick; as Linux, one for the largest
 * buffer the socket may grow to (net.ipv4.tcp_rmem's max, 15 MiB as
 * packetdrill's scripts set it: 8), unless SO_RCVBUF fixed the buffer. */
static void test_listen_window_scale_rmem_max(void)
{
	struct tf_opts o = { .ws_on = 1, .ws = 7 };
	struct sl_sock *l;
	struct tf_seg g;
	int v = 65536;

	tf_init("wr");
	T.s->tcp_rmem_max = 15u << 20;
	l = tf_listener(TF_LPORT, 8);
	tf_seg_full(TF_PPORT, TF_LPORT, TH_SYN_, IRS, 0, 8192, &o, NULL, 0);
	g = tf_last();
	tap_eq(g.ws, 8, "15 MiB to grow to: shift 8, as Linux");
	tap_eq(g.win, 65535, "the SYN-ACK's window is not scaled");
	tf_finish();

	tf_init("wr");
	T.s->tcp_rmem_max = 15u << 20;
	l = tf_listener(TF_LPORT, 8);
	/* What SO_RCVBUF of 64 KiB leaves (api.c, setsockopt_on(): doubled). */
	l->rcvbuf = 2 * v;
	l->opt_flags |= SL_SO_RCVBUF_SET;
	tf_seg_full(TF_PPORT, TF_LPORT, TH_SYN_, IRS, 0, 8192, &o, NULL, 0);
	g = tf_last();
	tap_eq(g.ws, 1, "SO_RCVBUF set: the shift is for that buffer (64 KiB of 128)");
	tf_finish();
}

/* RFC 7323 2.3: our window field is shifted by our scale. */
static void test_established_window_scale(void)
{
	struct tf_opts o = { .ws_on = 1, .ws = 2 };
	struct sl_sock *l, *c;
	struct tf_seg g;
	uint32_t iss;

	tf_init("ws");
	l = tf_listener(TF_LPORT, 8);
	l->rcvbuf = 1 << 20;
	tf_seg_full(TF_PPORT, TF_LPORT, TH_SYN_, IRS, 0, 8192, &o, NULL, 0);
	g = tf_last();
	tap_eq(g.ws, 4, "512 KiB window: shift 4 (65535 << 3 is just short)");
	iss = g.seq;
	tf_seg(TF_LPORT, TH_ACK_, IRS + 1, iss + 1, 8192, "hi", 2);
	sl_tcp_accept(T.s, l, &c);
	tf_advance_ms(40);
	g = tf_last();
	tap_ok(g.win > 30000 && g.win <= 32768, "window field scaled down by 4");
	tap_eq(c->tcp.snd_wnd, 8192 << 2, "peer window scaled up by 2");
	tf_finish();
}

/* RFC 7323 5.5: after more than 24 days idle TS.Recent is invalid, so
 * the first segment's TSval is taken whatever its order: the peer's 1 ms
 * clock moved 2^31 and more meanwhile, and PAWS dropped everything. */
static void test_established_paws_after_idle(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0, ts0 = 1000;

	tf_init("pawsi");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &(struct tf_opts){ .ts = 1, .tsval = ts0 }, 8192);
	tf_now_us += 25ull * 86400 * 1000000;	/* 25 days */
	sl_timer_run(T.s, tf_now_us);
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = ts0 + 2160000000u }, pattern, 100);
	tap_eq(c->rxq_bytes, 100, "25 days idle, TSval 2^31+ ahead: data taken");
	tap_eq(c->tcp.ts_recent, ts0 + 2160000000u, "and TS.Recent is the new TSval");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 101, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = ts0 + 2160000000u - 1000 }, pattern, 100);
	tap_eq(c->rxq_bytes, 100, "an old TSval right after: PAWS drops it again");
	tf_finish();
}

/* RFC 2018 3: SACK blocks name received data.  A bare FIN beyond a hole
 * is queued but has no data: no empty block [x, x) for it, alone or
 * next to real blocks. */
static void test_established_ooo_bare_fin_sack(void)
{
	struct tf_opts o = { .sack_ok = 1 };
	struct sl_sock *l, *c;
	struct tf_seg g;
	uint32_t iss = 0, b = IRS + 1;
	int empty = 0;

	tf_init("oofin");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &o, 8192);
	tf_seg(TF_LPORT, TH_ACK_ | TH_FIN_, b + 300, iss + 1, 8192, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.ack == b, "out-of-order FIN: duplicate ACK");
	tap_eq(g.nsack, 0, "no SACK block for a bare FIN");
	tf_seg(TF_LPORT, TH_ACK_, b + 100, iss + 1, 8192, pattern + 100, 100);
	g = tf_last();
	for (int k = 0; k < g.nsack; k++)
		empty += g.sack[k][0] == g.sack[k][1];
	tap_ok(g.nsack == 1 && g.sack[0][0] == b + 100 && g.sack[0][1] == b + 200 && !empty,
	       "data beside it: its block only");
	tf_seg(TF_LPORT, TH_ACK_, b, iss + 1, 8192, pattern, 300);
	tap_eq(c->state, SL_TCP_CLOSE_WAIT, "the hole filled: the FIN is taken");
	tf_finish();
}

/* RFC 7323 3.2: with timestamps agreed, a non-RST segment without TSopt
 * SHOULD be dropped silently; an RST without one MUST NOT be. */
static void test_established_ts_missing(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0;

	tf_init("tsm");
	fill_pattern();
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &(struct tf_opts){ .ts = 1, .tsval = 100 }, 8192);
	tap_ok(c->tcp.tflags & SL_TF_TS, "timestamps agreed");
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192, pattern, 100);
	tap_eq(c->rxq_bytes, 0, "data without TSopt: dropped");
	tap_eq(T.n, 0, "silently");
	tf_seg_full(TF_PPORT, TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, iss + 1, 8192,
		    &(struct tf_opts){ .ts = 1, .tsval = 200 }, pattern, 100);
	tap_eq(c->rxq_bytes, 100, "with TSopt: taken");
	sl_tcp_recv(T.s, c, pattern + 1000, 100, 0, tf_now_us);
	tf_seg(TF_LPORT, TH_RST_, IRS + 101, 0, 0, NULL, 0);
	tap_eq(c->state, SL_TCP_CLOSED, "an RST without TSopt is still taken");
	tf_finish();
}

int main(void)
{
	test_established_psh();
	fill_pattern();
	test_established_data_delayed_ack();
	test_established_two_full_segments();
	test_established_window_update_on_read();
	test_established_data_quick_ack_start();
	test_established_quickack_after_idle_and_ato();
	test_established_quickack_option();
	test_established_ack_on_read();
	test_established_send_nagle();
	test_established_ooo_sack();
	test_established_sack_many_holes();
	test_established_dsack();
	test_established_sack_fits_mtu();
	test_established_receive_window();
	test_established_receive_window_small_mss();
	test_established_ack_at_right_edge();
	test_established_fin_zero_window();
	test_established_zero_window_probe();
	test_established_small_peer_window();
	test_established_rst();
	test_established_syn();
	test_established_bad_ack();
	test_established_paws();
	test_established_header_prediction();
	test_established_paws_after_idle();
	test_established_ooo_bare_fin_sack();
	test_established_ts_missing();
	test_established_window_scale();
	test_listen_window_scale_rmem_max();
	return tap_done();
}
