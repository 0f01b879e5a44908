// SPDX-License-Identifier: BSD-2-Clause
/*
 * SYN cookies (RFC 4987 3.6, lib/proto/tcp/tcp.c and lib/proto/tcp/tcp_input.c): with its SYN
 * queue full a listener answers a SYN with a SYN-ACK whose ISN is a cookie
 * and keeps nothing; the ACK that echoes a good cookie makes the
 * connection, with the MSS the cookie holds and the window scale and SACK
 * the timestamp echo brings back; a bad, stale or unasked-for cookie gets
 * the reset any stray ACK gets.  Segment by segment, on virtual time.
 */
#include "tcp_fixture.h"

#define IRS 5000000u

static struct sl_sock *l;

/* Fill l's SYN queue with SYNs from ports 6000.. that never complete. */
static void fill_synq(void)
{
	for (uint16_t i = 0; i < l->tcp.syn_max; i++)
		tf_seg_full(6000 + i, TF_LPORT, TH_SYN_, IRS + i * 1000u, 0, 8192, NULL, NULL, 0);
	tf_clear();
}

static void test_cookie_with_options(void)
{
	uint32_t socks = T.s->r->sock_used, embryos = T.s->lib->tcp_embryos;
	uint64_t sent0 = tf_counter(SL_C_tcp_syncookies_sent);
	struct tf_opts o = { .mss = 1460, .ws_on = 1, .ws = 7, .sack_ok = 1, .ts = 1,
			     .tsval = 777000 };
	struct sl_sock *c = NULL;
	struct tf_seg g;
	char buf[16];

	tf_seg_full(7000, TF_LPORT, TH_SYN_, IRS, 0, 8192, &o, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == (TH_SYN_ | TH_ACK_) && g.ack == IRS + 1,
	       "queue full: the SYN is answered with a SYN-ACK");
	tap_eq(tf_counter(SL_C_tcp_syncookies_sent) - sent0, 1, "counted in tcp_syncookies_sent");
	tap_ok(T.s->r->sock_used == socks && T.s->lib->tcp_embryos == embryos,
	       "and nothing is kept: no socket, no embryo");
	tap_ok(g.mss > 0 && g.ws >= 0 && g.sack_ok && g.ts && g.tsecr == o.tsval,
	       "it offers MSS, window scale, SACK and timestamps as a child's would");
	tap_eq(g.tsval & 0x3f, 0x17u, "its TSval's low bits keep the peer's scale (7) and SACK");

	tf_clear();
	tf_seg_full(7000, TF_LPORT, TH_ACK_ | TH_PSH_, IRS + 1, g.seq + 1, 1000,
		    &(struct tf_opts){ .ts = 1, .tsval = 777001, .tsecr = g.tsval }, "hello", 5);
	tap_eq(tf_counter(SL_C_tcp_syncookies_ok), 1, "the ACK's cookie is good");
	tap_eq(sl_tcp_accept(T.s, l, &c), 0, "and the connection is accepted");
	if (!c)
		return;
	tap_eq(c->state, SL_TCP_ESTABLISHED, "ESTABLISHED");
	tap_ok((c->tcp.tflags & (SL_TF_TS | SL_TF_WS | SL_TF_SACK)) ==
		       (SL_TF_TS | SL_TF_WS | SL_TF_SACK) && c->tcp.snd_wscale == 7,
	       "timestamps, SACK and the peer's window scale 7 came back");
	tap_eq(c->tcp.mss, 1460 - 12, "the MSS the cookie holds (1460), less the timestamps");
	tap_eq(c->tcp.snd_wnd, 1000u << 7, "the ACK's window is scaled");
	tap_eq(sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us), 5, "the data the ACK carried is there");
	tf_clear();
	tap_eq(sl_tcp_send(T.s, c, "world", 5, 0, tf_now_us), 5, "and the connection sends");
	g = tf_last();
	tap_ok(g.valid && g.plen == 5 && g.ack == IRS + 6, "from the cookie's sequence space");
}

static void test_cookie_without_timestamps(void)
{
	struct sl_sock *c = NULL;
	struct tf_seg g;

	tf_clear();
	tf_seg_full(7001, TF_LPORT, TH_SYN_, IRS, 0, 8192,
		    &(struct tf_opts){ .mss = 1300, .ws_on = 1, .ws = 5, .sack_ok = 1 }, NULL, 0);
	g = tf_last();
	tap_ok(g.valid && g.flags == (TH_SYN_ | TH_ACK_) && g.ws < 0 && !g.sack_ok && !g.ts,
	       "no timestamps: the cookie SYN-ACK offers no window scale and no SACK");
	tf_seg_full(7001, TF_LPORT, TH_ACK_, IRS + 1, g.seq + 1, 4000, NULL, NULL, 0);
	tap_eq(sl_tcp_accept(T.s, l, &c), 0, "the connection is made");
	if (!c)
		return;
	tap_ok(!(c->tcp.tflags & (SL_TF_TS | SL_TF_WS | SL_TF_SACK)), "with none of them");
	tap_eq(c->tcp.mss, 1220, "the MSS rounds down to the cookie's table (1300: 1220)");
	tap_eq(c->tcp.snd_wnd, 4000u, "the window is not scaled");
}

static void test_bad_cookies(void)
{
	uint64_t fail0 = tf_counter(SL_C_tcp_syncookies_failed);
	uint32_t socks = T.s->r->sock_used;
	struct tf_seg g, r;

	tf_clear();
	tf_seg_full(7002, TF_LPORT, TH_SYN_, IRS, 0, 8192, NULL, NULL, 0);
	g = tf_last();
	tf_clear();
	tf_seg_full(7002, TF_LPORT, TH_ACK_, IRS + 1, g.seq + 2, 4000, NULL, NULL, 0);
	r = tf_last();
	tap_ok(T.n == 1 && (r.flags & TH_RST_) && r.seq == g.seq + 2,
	       "a cookie off by one: the ACK is reset");
	tf_clear();
	tf_seg_full(7003, TF_LPORT, TH_ACK_, IRS + 1, g.seq + 1, 4000, NULL, NULL, 0);
	tap_ok(T.n == 1 && (tf_last().flags & TH_RST_), "another port's cookie: reset");
	tf_clear();
	tf_seg_full(7002, TF_LPORT, TH_ACK_, IRS + 2, g.seq + 1, 4000, NULL, NULL, 0);
	tap_ok(T.n == 1 && (tf_last().flags & TH_RST_), "another ISN's cookie: reset");
	tap_eq(tf_counter(SL_C_tcp_syncookies_failed) - fail0, 3, "counted in tcp_syncookies_failed");

	/* Two cookie ticks (128 s) on, with the listener still sending
	 * cookies, the old one is stale. */
	tap_eq(T.s->r->sock_used, socks, "no bad cookie made a socket");
	for (int i = 0; i < 2; i++) {
		tf_advance_ms(100000);
		fill_synq();	/* the first flood's embryos have given up */
		tf_seg_full((uint16_t)(7004 + i), TF_LPORT, TH_SYN_, IRS, 0, 8192, NULL, NULL, 0);
	}
	tf_clear();
	tf_seg_full(7002, TF_LPORT, TH_ACK_, IRS + 1, g.seq + 1, 4000, NULL, NULL, 0);
	tap_ok(T.n == 1 && (tf_last().flags & TH_RST_), "a cookie 200 s old: reset");
	tap_eq(tf_counter(SL_C_tcp_syncookies_failed) - fail0, 4, "as a stale cookie");
}

static void test_no_cookies_asked(void)
{
	struct sl_sock *l2 = tf_listener(81, 4);
	uint64_t fail0 = tf_counter(SL_C_tcp_syncookies_failed);

	tf_clear();
	tf_seg_full(7010, 81, TH_ACK_, IRS + 1, 12345, 4000, NULL, NULL, 0);
	tap_ok(T.n == 1 && (tf_last().flags & TH_RST_),
	       "an ACK at a listener that sent no cookie: reset");
	tap_eq(tf_counter(SL_C_tcp_syncookies_failed), fail0, "and no cookie was looked at");
	sl_tcp_close(T.s, l2, tf_now_us);
}

int main(void)
{
	tf_init("cookie");
	l = tf_listener(TF_LPORT, 16);
	fill_synq();
	test_cookie_with_options();
	test_cookie_without_timestamps();
	test_bad_cookies();
	test_no_cookies_asked();
	tf_finish();
	return tap_done();
}
