// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP limits and robustness: bad checksums and header lengths, the
 * out-of-order queue limit, buffer-pool exhaustion on both paths, the
 * send buffer, RFC 5961 7 challenge-ACK rate limit, a new SYN ending a
 * TIME-WAIT connection (RFC 6191 flavour), and socket options.
 */
#include "tcp_fixture.h"

#define IRS 50000u

static uint8_t pattern[65536];

/* A 40-byte IPv4 + TCP packet from the peer to the listener, with a good
 * IP header and a zeroed TCP header for the caller to fill in. */
static uint32_t raw_segment(struct sl_tcph **th)
{
	uint32_t idx = sl_buf_alloc(T.s);
	uint8_t *p = sl_buf_data(T.s, idx);
	struct sl_ip *ip = (struct sl_ip *)p;

	memset(p, 0, 40);
	ip->ver_ihl = 0x45;
	ip->tot_len = htons(40);
	ip->ttl = 64;
	ip->proto = IPPROTO_TCP_;
	ip->saddr = T.peer;
	ip->daddr = T.us;
	ip->csum = sl_ip_csum(ip);
	*th = (struct sl_tcph *)(p + 20);
	sl_buf(T.s, idx)->len = 40;
	return idx;
}

/* RFC 9293 3.1 / 3.10.7: a bad checksum or data offset is dropped, counted. */
static void test_any_bad_segment(void)
{
	struct sl_sock *l;
	uint32_t idx;
	struct sl_tcph *th;

	tf_init("bs");
	l = tf_listener(TF_LPORT, 8);
	(void)l;
	tf_seg(TF_LPORT, TH_SYN_, 100, 0, 8192, NULL, 0);
	tap_eq(T.n, 1, "a good SYN is answered");
	tf_clear();
	/* A SYN whose checksum is wrong. */
	idx = raw_segment(&th);
	th->sport = htons(6001);
	th->dport = htons(TF_LPORT);
	th->seq = htonl(5);
	th->off = 5 << 4;
	th->flags = TH_SYN_;
	th->csum = 0x1234;
	sl_ip_input(T.s, idx);
	tap_eq(T.n, 0, "bad checksum: no answer");
	tap_eq(tf_counter(SL_C_tcp_rx_bad), 1, "bad checksum: counted tcp_rx_bad");
	idx = raw_segment(&th);
	th->off = 15 << 4;	/* 60-byte header in a 20-byte segment */
	sl_ip_input(T.s, idx);
	tap_eq(tf_counter(SL_C_tcp_rx_bad), 2, "data offset beyond the segment: counted");
	tf_finish();
}

/* The out-of-order queue holds at most SL_TCP_OOO_MAX buffers. */
#define OOO_SENT (SL_TCP_OOO_MAX < 1014 ? SL_TCP_OOO_MAX + 10 : 1024 + 10)	/* past the pool too */
static void test_established_ooo_limit(void)
{
	struct sl_sock *l, *c;
	uint32_t iss;

	tf_init("ol");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, &(struct tf_opts){ .sack_ok = 1 }, 8192);
	for (unsigned int i = 0; i < OOO_SENT; i++)
		tf_seg(TF_LPORT, TH_ACK_, IRS + 1 + 20 * (i + 1), iss + 1, 8192, pattern, 10);
	/* Whichever limit comes first: SL_TCP_OOO_MAX, rcvbuf, the pool's
	 * reserve (this stack's pool is small). */
	tap_ok(c->tcp.ooo_count > 0 && c->tcp.ooo_count <= SL_TCP_OOO_MAX &&
	       (uint64_t)c->tcp.ooo_count * T.s->buf_size <= c->rcvbuf + T.s->buf_size,
	       "out-of-order queue stops at its limit (%u buffers)", c->tcp.ooo_count);
	tap_eq(tf_counter(SL_C_tcp_ooo), c->tcp.ooo_count, "only those counted as queued");
	tap_eq(tf_counter(SL_C_tcp_ooo_drop) + tf_counter(SL_C_tcp_rx_pressure),
	       OOO_SENT - c->tcp.ooo_count,
	       "the rest dropped and counted (tcp_ooo_drop, tcp_rx_pressure)");
	tf_finish();
}

/* An empty pool: send says -EAGAIN (never crashes), payload is dropped
 * and counted, the ACK still gets through; all recovers afterwards. */
static void test_established_pool_exhausted(void)
{
	struct sl_sock *so;
	uint32_t iss, hog = SLUICE_IDX_NONE, n = 0, idx;

	tf_init("pe");
	so = tf_connect(IRS, &iss, NULL, 65535);
	so->flags |= SL_SF_NODELAY;
	/* Take the pool down to 4 free buffers. */
	while (T.s->lib->buf_free_count > 4) {
		idx = sl_buf_alloc(T.s);
		sl_buf(T.s, idx)->next_idx = hog;
		hog = idx;
		n++;
	}
	tap_eq(sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us), -EAGAIN,
	       "pool nearly empty: send is -EAGAIN");
	tap_eq(sl_tcp_poll(T.s, so) & SL_EV_OUT, 0, "and not writable");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 65535, pattern, 100);
	tap_eq(so->rxq_bytes, 0, "received payload dropped under pool pressure");
	tap_eq(tf_counter(SL_C_tcp_rx_pressure), 1, "counted tcp_rx_pressure");
	tap_ok(T.n >= 1 && tf_last().ack == IRS + 1, "the drop is ACKed so the peer resends");
	sl_buf_free_chain(T.s, hog);
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 65535, pattern, 100);
	tap_eq(so->rxq_bytes, 100, "pool back: the retransmission is taken");
	tap_eq(sl_tcp_send(T.s, so, pattern, 1000, 0, tf_now_us), 1000, "and send works again");
	tap_ok(sl_tcp_poll(T.s, so) & SL_EV_OUT, "writable again");
	tf_seg(ntohs(so->lport), TH_ACK_, IRS + 101, iss + 1001, 65535, NULL, 0);
	(void)n;
	tf_finish();
}

/* The send buffer bounds what send() takes; ACKs make room. */
static void test_established_sndbuf(void)
{
	struct sl_sock *so;
	uint32_t iss;
	ssize_t n;

	tf_init("sb");
	so = tf_connect(IRS, &iss, NULL, 0);	/* zero window: nothing leaves */
	so->sndbuf = 10000;
	n = sl_tcp_send(T.s, so, pattern, 30000, 0, tf_now_us);
	tap_eq(n, 10000, "send takes up to SO_SNDBUF");
	tap_eq(sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us), -EAGAIN, "then -EAGAIN");
	tap_eq(sl_tcp_poll(T.s, so) & SL_EV_OUT, 0, "not writable");
	tf_finish();
}

/* RFC 5961 7: challenge ACKs are rate limited. */
static void test_established_challenge_limit(void)
{
	struct sl_sock *so;
	uint32_t iss;

	tf_init("cl");
	so = tf_connect(IRS, &iss, NULL, 8192);
	for (int i = 0; i < SL_TCP_CHALLENGE_MAX + 50; i++)
		tf_seg(ntohs(so->lport), TH_RST_, IRS + 10 + (uint32_t)i, 0, 0, NULL, 0);
	tap_eq(T.n, SL_TCP_CHALLENGE_MAX, "at most the limit in one second");
	tf_advance_ms(1000);
	tf_clear();
	tf_seg(ntohs(so->lport), TH_RST_, IRS + 10, 0, 0, NULL, 0);
	tap_eq(T.n, 1, "the next second allows more");
	tap_eq(so->state, SL_TCP_ESTABLISHED, "never reset by them");
	tf_finish();
}

/* A SYN above RCV.NXT of a TIME-WAIT connection starts a new one. */
static void test_time_wait_new_syn(void)
{
	struct sl_sock *l, *c, *c2 = NULL;
	struct tf_seg g;
	uint32_t iss;

	tf_init("tw");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	sl_tcp_close(T.s, c, tf_now_us);
	tf_seg(TF_LPORT, TH_ACK_ | TH_FIN_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_ok(tf_tw(c) != NULL, "server side in TIME-WAIT");
	tf_clear();
	tf_seg(TF_LPORT, TH_SYN_, IRS + 100000, 0, 8192, NULL, 0);
	g = tf_last();
	tap_ok(T.n == 1 && g.flags == (TH_SYN_ | TH_ACK_) && g.ack == IRS + 100001,
	       "new SYN: the listener answers");
	tf_seg(TF_LPORT, TH_ACK_, IRS + 100001, g.seq + 1, 8192, NULL, 0);
	tap_eq(sl_tcp_accept(T.s, l, &c2), 0, "and the new connection is accepted");
	tf_finish();
}

static void test_any_sockopts(void)
{
	struct sl_sock *so;
	uint32_t iss;
	int v = 0;
	unsigned int len = sizeof(v);

	tf_init("so");
	so = tf_connect(IRS, &iss, &(struct tf_opts){ .mss = 1200 }, 8192);
	tap_eq(sl_tcp_getsockopt(T.s, so, IPPROTO_TCP, TCP_MAXSEG, &v, &len), 0, "TCP_MAXSEG");
	tap_eq(v, 1200, "TCP_MAXSEG is the send MSS");
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_MAXSEG, &(int){ 10 }, sizeof(int)),
	       -EINVAL, "TCP_MAXSEG below 88: EINVAL");
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int)), 0,
	       "TCP_NODELAY on");
	sl_tcp_getsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &v, &len);
	tap_eq(v, 1, "TCP_NODELAY reads back");
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, 9999, &v, sizeof(v)), -ENOPROTOOPT,
	       "unknown option: ENOPROTOOPT");
	tap_eq(sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &v, 2), -EINVAL,
	       "short option: EINVAL");
	tf_finish();
}

int main(void)
{
	test_any_bad_segment();
	test_established_ooo_limit();
	test_established_pool_exhausted();
	test_established_sndbuf();
	test_established_challenge_limit();
	test_time_wait_new_syn();
	test_any_sockopts();
	return tap_done();
}
