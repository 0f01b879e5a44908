// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP lifecycle and user calls: connect, listen, accept, send, recv,
 * shutdown, close, poll and socket options; the RFC 6528 ISN; teardown.
 * Segment arrival is tcp_input.c, transmission tcp_output.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/proto.h"

/* ---- RFC 6528 ISN: a keyed hash of the 4-tuple plus a 4 us clock ---- */

static inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v0, v1, v2, v3)					\
	do {								\
		v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32); \
		v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2;		\
		v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0;		\
		v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32); \
	} while (0)

/* SipHash-2-4 of two 64-bit words (a 16-byte message). */
static uint64_t siphash_2w(const uint64_t key[2], uint64_t m0, uint64_t m1)
{
	uint64_t v0 = key[0] ^ 0x736f6d6570736575ull, v1 = key[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = key[0] ^ 0x6c7967656e657261ull, v3 = key[1] ^ 0x7465646279746573ull;
	uint64_t b = (uint64_t)16 << 56;

	v3 ^= m0;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m0;
	v3 ^= m1;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m1;
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t tuple_hash(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			   uint16_t rport, uint32_t domain)
{
	uint64_t m0 = (uint64_t)laddr << 32 | raddr;
	uint64_t m1 = (uint64_t)lport << 48 | (uint64_t)rport << 32 | domain;

	const uint64_t key[2] = { s->lib->tcp_isn_secret[0], s->lib->tcp_isn_secret[1] };

	return siphash_2w(key, m0, m1);
}

/* RFC 6528 3: ISN = M + F(localip, localport, remoteip, remoteport, key),
 * M a timer ticking every 4 microseconds. */
uint32_t sl_tcp_isn(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
		    uint16_t rport, uint64_t now_us)
{
	return (uint32_t)tuple_hash(s, laddr, lport, raddr, rport, 1) + (uint32_t)(now_us / 4);
}

/*
 * SYN cookies (RFC 4987 3.6), the layout ours: bits 31-30 the cookie
 * clock's tick (64 s) mod 4, bits 29-27 an index into cookie_mss, bits 26-0
 * a SipHash MAC over the 4-tuple, the peer's ISN, the tick and the index.
 * A forger guesses 27 bits per try; a cookie lives one to two ticks.
 */
static const uint16_t cookie_mss[8] = { 536, 1024, 1220, 1440, 1460, 1880, 4012, 8960 };

static uint32_t cookie_mac(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			   uint16_t rport, uint32_t peer_isn, uint32_t tick, unsigned int mi)
{
	const uint64_t key[2] = { s->lib->tcp_isn_secret[0], s->lib->tcp_isn_secret[1] };
	uint64_t h = tuple_hash(s, laddr, lport, raddr, rport, 3);

	return (uint32_t)siphash_2w(key, h, (uint64_t)peer_isn << 32 | tick << 3 | mi) &
	       0x07ffffffu;
}

uint32_t sl_tcp_cookie_make(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			    uint16_t rport, uint32_t peer_isn, uint16_t peer_mss, uint64_t now_us)
{
	uint32_t tick = (uint32_t)(now_us / SL_TCP_COOKIE_TICK_US);
	unsigned int mi = 0;

	while (mi < 7 && cookie_mss[mi + 1] <= peer_mss)
		mi++;
	return (tick & 3) << 30 | mi << 27 |
	       cookie_mac(s, laddr, lport, raddr, rport, peer_isn, tick, mi);
}

uint16_t sl_tcp_cookie_check(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			     uint16_t rport, uint32_t peer_isn, uint32_t cookie, uint64_t now_us)
{
	uint32_t now_tick = (uint32_t)(now_us / SL_TCP_COOKIE_TICK_US);
	unsigned int mi = (cookie >> 27) & 7;

	for (uint32_t age = 0; age < 2; age++) {
		uint32_t tick = now_tick - age;

		if ((tick & 3) == cookie >> 30 &&
		    cookie_mac(s, laddr, lport, raddr, rport, peer_isn, tick, mi) ==
			    (cookie & 0x07ffffffu))
			return cookie_mss[mi];
	}
	return 0;
}

/* RFC 7323 7.1: a per-connection random offset for TSval. */
uint32_t sl_tcp_ts_offset(struct sl_stack *s, uint32_t laddr, uint16_t lport, uint32_t raddr,
			  uint16_t rport)
{
	return (uint32_t)tuple_hash(s, laddr, lport, raddr, rport, 2);
}

/* RFC 6056 3.3.4 (Linux's secure_ipv4_port_ephemeral()): where
 * connect()'s search for a port to (raddr, rport) from laddr starts,
 * keyed so an off-path attacker cannot guess it. */
uint64_t sl_tcp_port_hash(struct sl_stack *s, uint32_t laddr, uint32_t raddr, uint16_t rport)
{
	return tuple_hash(s, laddr, 0, raddr, rport, 4);
}

/* ---- TCB helpers ---------------------------------------------------- */

/* Inside the stack the limit is a packet buffer, not the link's MTU;
 * elsewhere the path's (learnt from ICMP, proto/ip.c). */
static uint32_t path_mtu(struct sl_stack *s, const struct sl_sock *so)
{
	if (sl_ip_is_local(s, so->raddr))
		return SL_TCP_BUF_PAYLOAD(s) + 40;
	return sl_pmtu_get(s, so->raddr);
}

uint16_t sl_tcp_our_mss(struct sl_stack *s, const struct sl_sock *so)
{
	uint32_t mss = path_mtu(s, so) - 40;	/* RFC 9293 3.7.1: MTU - IP - TCP */

	if (so->tcp.user_mss && so->tcp.user_mss < mss)
		mss = so->tcp.user_mss;
	return (uint16_t)mss;
}

void sl_tcp_set_mss(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t mss = tp->peer_mss ? tp->peer_mss : SL_TCP_MSS_DEFAULT;
	uint32_t cap = SL_TCP_BUF_PAYLOAD(s), pmtu = path_mtu(s, so), pmss = pmtu - 40;

	tp->pmtu = (uint16_t)(pmtu > 65535 ? 65535 : pmtu);
	tp->pmtu_gen = (uint16_t)s->lib->pmtu_gen;
	/* A black hole found (tcp_timer.c): tcp_base_mss, then halved at
	 * each RTO more, not below tcp_mtu_probe_floor. */
	if (tp->mtup) {
		uint32_t bh = SL_TCP_BASE_MSS >> (tp->mtup - 1);

		if (bh < SL_TCP_MTU_PROBE_FLOOR)
			bh = SL_TCP_MTU_PROBE_FLOOR;
		if (pmss > bh)
			pmss = bh;
	}
	if (mss > pmss)
		mss = pmss;
	if (tp->user_mss && tp->user_mss < mss)
		mss = tp->user_mss;
	/* Linux TCP_MIN_MSS: a tiny MSS option is raised, before the options
	 * are taken off; the path still has the last word. */
	if (mss < SL_TCP_MSS_MIN)
		mss = SL_TCP_MSS_MIN;
	if (mss > pmss)
		mss = pmss;
	/* RFC 9293 3.7.1: the MSS counts no TCP options; ours take room. */
	if (tp->tflags & SL_TF_TS)
		mss = mss > 12 + 1 ? mss - 12 : 1;
	if (mss > cap)
		mss = cap;
	tp->mss = (uint16_t)mss;
}

uint32_t sl_tcp_rcv_space(struct sl_stack *s, const struct sl_sock *so)
{
	return sl_tcp_rcv_space_mss(s, so, sl_tcp_our_mss(s, so));
}

uint32_t sl_tcp_rcv_space_mss(struct sl_stack *s, const struct sl_sock *so, uint32_t mss)
{
	/* Half the buffer is payload, the rest covers buffer overhead (as
	 * Linux's tcp_adv_win_scale = 1). */
	uint32_t lim = so->rcvbuf / 2;
	uint32_t used = so->rxq_bytes + so->tcp.ooo_bytes + so->rx_lent_bytes;
	uint32_t free_bufs = s->lib->buf_free_count, reserve = s->n_bufs / 8, cap;
	uint64_t held = (uint64_t)(so->rxq_count + so->tcp.ooo_count + so->rx_lent_count) *
			s->buf_size;
	/* A segment takes a buffer of its own, whatever its length: the
	 * room is in buffers, each good for a segment of at most our MSS
	 * (or what a buffer holds, inside the stack).  Counted in bytes of
	 * buffer instead, a small MSS (968 on Soft-RoCE's IPoIB) offered a
	 * window that took more buffers than rcvbuf allows, and the last
	 * segments of every full window were dropped and sent again. */
	uint32_t per = mss, bufs, room, ooo_left;

	if (per > SL_TCP_BUF_PAYLOAD(s))
		per = SL_TCP_BUF_PAYLOAD(s);
	/* As rx_over_budget() (tcp_input.c) takes a buffer while the held
	 * ones are short of rcvbuf: rounded up. */
	bufs = held < so->rcvbuf ?
		       (so->rcvbuf - (uint32_t)held + s->buf_size - 1) / s->buf_size : 0;
	room = bufs * per;
	/* Every segment that arrives past a hole takes a place on the
	 * out-of-order queue, which holds SL_TCP_OOO_MAX: offer no more
	 * than it has left, or one loss early in a window grown past it has
	 * the rest of that window dropped and sent again (Linux's queue is
	 * bounded by sk_rcvbuf alone, which the window already is). */
	ooo_left = so->tcp.ooo_count < SL_TCP_OOO_MAX ? SL_TCP_OOO_MAX - so->tcp.ooo_count : 0;
	if (room > ooo_left * per)
		room = ooo_left * per;

	/* The pool is shared by every connection: offer no more than half
	 * of what is free beyond the reserve (in full segments). */
	cap = free_bufs > reserve ? (free_bufs - reserve) / 2 * mss : 0;
	if (lim > used + cap)
		lim = used + cap;
	if (used >= lim)
		return 0;
	/* Buffers are charged whole against rcvbuf (Linux's truesize). */
	return lim - used < room ? lim - used : room;
}

uint32_t sl_tcp_synq_cap(const struct sl_stack *s)
{
	uint32_t cap = s->max_sockets / SL_TCP_SYNQ_SHARE;

	if (cap < SL_TCP_SYNQ_MIN)
		cap = SL_TCP_SYNQ_MIN;
	return cap > 65535 ? 65535 : cap;
}

static uint8_t wscale_for(uint32_t space)
{
	uint8_t ws = 0;

	while (ws < SL_TCP_WSCALE_MAX && (space >> ws) > 65535)
		ws++;
	return ws;
}

/*
 * The window scale to offer (RFC 7323 2.2: the receiver's choice): as
 * Linux's tcp_select_initial_window(), one for the largest window the
 * receive buffer may grow to (net.ipv4.tcp_rmem's max, net.core.rmem_max)
 * unless SO_RCVBUF fixed the buffer or TCP_WINDOW_CLAMP the window.  A
 * shift larger than the window needs costs only its granularity; one too
 * small would cap the window.
 */
static uint8_t wscale_for_sock(const struct sl_stack *s, const struct sl_sock *so)
{
	uint32_t space = so->rcvbuf / 2;

	if (!(so->opt_flags & SL_SO_RCVBUF_SET) && s->tcp_rmem_max > space)
		space = s->tcp_rmem_max;
	if (so->tcp.window_clamp && space > so->tcp.window_clamp)
		space = so->tcp.window_clamp;
	return wscale_for(space);
}

void sl_tcp_init_tcb(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint16_t user_mss = tp->user_mss, ki = tp->keep_idle_s, kv = tp->keep_intvl_s;
	uint8_t kc = tp->keep_cnt;
	/* What setsockopt() set before connect() or listen() stays. */
	uint32_t ut = tp->user_timeout_ms, clamp = tp->window_clamp;
	uint32_t keep = tp->tflags & (SL_TF_CORK | SL_TF_PINGPONG | SL_TF_RENO | SL_TF_SNDBUF_SET);
	int32_t l2 = tp->linger2_s;
	uint8_t synr = tp->syn_retries, defer = tp->defer_accept, tfo = tp->fastopen_connect;
	uint32_t lowat = tp->notsent_lowat;
	/* A child is on its listener's list already (sl_sock_kid_link()). */
	uint32_t kn = tp->kid_next, kp = tp->kid_prev, kh = tp->kid_head;

	/* A connect() again after one failed: off any park list first. */
	sl_sock_park_forget(s, so);
	memset(tp, 0, sizeof(*tp));
	sl_sock_park_none(so);
	tp->kid_next = kn;
	tp->kid_prev = kp;
	tp->kid_head = kh;
	tp->tflags = keep;
	tp->user_timeout_ms = ut;
	tp->window_clamp = clamp;
	tp->linger2_s = l2;
	tp->syn_retries = synr;
	tp->defer_accept = defer;
	tp->notsent_lowat = lowat;
	if (lowat || s->tcp_notsent_lowat)
		tp->tflags |= SL_TF_LOWAT;
	tp->fastopen_connect = tfo;
	tp->user_mss = user_mss;
	tp->keep_idle_s = ki ? ki : SL_TCP_KEEPIDLE_S;
	tp->keep_intvl_s = kv ? kv : SL_TCP_KEEPINTVL_S;
	tp->keep_cnt = kc ? kc : SL_TCP_KEEPCNT;
	tp->sndq_head = tp->sndq_tail = tp->sndq_hint = SLUICE_IDX_NONE;
	tp->ooo_head = SLUICE_IDX_NONE;
	tp->acc_head = tp->acc_tail = SLUICE_IDX_NONE;
	tp->iss = sl_tcp_isn(s, so->laddr, so->lport, so->raddr, so->rport, now_us);
	tp->snd_una = tp->snd_nxt = tp->snd_max = tp->snd_sml = tp->iss;
	tp->snd_end = tp->iss + 1;
	tp->recover = tp->iss;		/* RFC 6582 3.2 step 1 */
	tp->ts_offset = sl_tcp_ts_offset(s, so->laddr, so->lport, so->raddr, so->rport);
	tp->rto_us = SL_TCP_RTO_INIT_US;
	tp->rcv_wscale = wscale_for_sock(s, so);
	tp->last_rx_us = now_us;
	sl_tcp_set_mss(s, so);
	sl_tcp_cc_init(tp);
}

void sl_tcp_set_state(struct sl_stack *s, struct sl_sock *so, enum sl_tcp_state st)
{
	if (st == SL_TCP_ESTABLISHED)
		so->tcp.tflags |= SL_TF_CONNECTED;
	so->state = (uint8_t)st;
	sl_sock_wake(s, so);
}

static void free_queues(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;

	sl_buf_free_chain(s, tp->sndq_head);
	tp->sndq_head = tp->sndq_tail = tp->sndq_hint = SLUICE_IDX_NONE;
	tp->sndq_bytes = 0;
	tp->sacked_bytes = 0;
	sl_buf_free_chain(s, tp->ooo_head);
	tp->ooo_head = SLUICE_IDX_NONE;
	tp->ooo_bytes = 0;
	tp->ooo_count = 0;
	tp->t_rexmt = tp->t_dack = tp->t_persist = tp->t_keep = tp->t_close = tp->t_cork = 0;
	tp->t_pool = 0;
}

/* Abort every child of listener lso that the user has not accepted. */
static void abort_children(struct sl_stack *s, struct sl_sock *lso, uint64_t now_us)
{
	uint32_t guard = 0;

	/* Its own list (sl_sock_kid_link()), not the table. */
	for (uint32_t i = lso->tcp.kid_head; sl_sock_next(s, i, &guard);) {
		struct sl_sock *c = sl_sock(s, i);

		i = c->tcp.kid_next;
		sl_count(s, SL_C_sock_walked);
		if (c->type != SL_SOCK_TCP || c == lso || c->parent_idx != lso->idx)
			break;	/* not its child: a list left half changed */
		c->tcp.kid_next = c->tcp.kid_prev = SLUICE_IDX_NONE;
		/* Linux: a listener's close resets its unaccepted children. */
		if (c->state >= SL_TCP_SYN_RECEIVED && c->state != SL_TCP_TIME_WAIT)
			sl_tcp_send_ctl(s, c, TH_RST_ | TH_ACK_, c->tcp.snd_nxt, now_us);
		c->parent_idx = SLUICE_IDX_NONE;
		c->tcp.tflags &= ~(SL_TF_ACCQ | SL_TF_PASSIVE);
		sl_tcp_destroy(s, c);
	}
	lso->tcp.kid_head = SLUICE_IDX_NONE;
	lso->tcp.acc_head = lso->tcp.acc_tail = SLUICE_IDX_NONE;
	lso->tcp.acc_len = lso->tcp.syn_len = 0;
}

static struct sl_sock *parent_of(struct sl_stack *s, const struct sl_sock *so)
{
	struct sl_sock *p;

	if (!sl_sock_some(s, so->parent_idx))
		return NULL;
	p = sl_sock(s, so->parent_idx);
	return p->type == SL_SOCK_TCP && p->state == SL_TCP_LISTEN ? p : NULL;
}

void sl_tcp_embryo_done(struct sl_stack *s, struct sl_sock *so)
{
	if (!(so->tcp.tflags & SL_TF_EMBRYO))
		return;
	so->tcp.tflags &= ~SL_TF_EMBRYO;
	if (s->lib->tcp_embryos)
		s->lib->tcp_embryos--;
}

void sl_tcp_destroy(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_sock *p = parent_of(s, so);

	sl_tcp_embryo_done(s, so);
	if (p && (so->tcp.tflags & SL_TF_PASSIVE) && !(so->tcp.tflags & SL_TF_ACCQ) &&
	    so->state == SL_TCP_SYN_RECEIVED && p->tcp.syn_len)
		p->tcp.syn_len--;
	free_queues(s, so);
	sl_sock_free(s, so);
}

void sl_tcp_done(struct sl_stack *s, struct sl_sock *so, int err)
{
	struct sl_tcp_sock *tp = &so->tcp;
	bool embryo = (tp->tflags & SL_TF_PASSIVE) && !(tp->tflags & SL_TF_ACCQ);

	if (err)
		so->error = err;
	if (embryo || (so->flags & SL_SF_ORPHAN)) {
		sl_tcp_destroy(s, so);
		return;
	}
	free_queues(s, so);
	so->state = SL_TCP_CLOSED;
	so->flags |= SL_SF_SHUT_WR;
	tp->tflags |= SL_TF_DONE;
	/* Linux releases the port when a connection ends (inet_put_port). */
	sl_sock_unhash(s, so);
	sl_filter_release(s, so);
	sl_timer_cancel(s, so);
	sl_sock_wake(s, so);
	/* A reset or a timeout: Linux sk_error_report(), POLL_ERR. */
	if (err)
		sl_sock_async(s, so, SL_POLL_ERR);
}

/* ---- User calls ----------------------------------------------------- */

uint32_t sl_tcp_src_addr(const struct sl_stack *s, uint32_t raddr)
{
	return sl_ip_src_for(s, raddr);
}

int sl_tcp_connect_failed(struct sl_stack *s, struct sl_sock *so)
{
	int e;

	/* A non-blocking attempt that failed: the next connect() reports it,
	 * its error or ECONNABORTED, and only the one after tries again
	 * (Linux __inet_stream_connect(), SS_CONNECTING). */
	if (so->state != SL_TCP_CLOSED || !(so->tcp.tflags & SL_TF_CONN_PEND))
		return 0;
	e = so->error ? sl_sock_error(s, so) : ECONNABORTED;
	so->error = 0;
	so->tcp.tflags &= ~SL_TF_CONN_PEND;
	return -e;
}

int sl_tcp_connect(struct sl_stack *s, struct sl_sock *so, uint32_t raddr, uint16_t rport,
		   uint64_t now_us)
{
	if (so->state == SL_TCP_SYN_SENT || so->state == SL_TCP_SYN_RECEIVED)
		return -EALREADY;
	if (so->state == SL_TCP_LISTEN)
		return -EINVAL;
	if (sl_tcp_connect_failed(s, so))
		return -ECONNABORTED;
	/* A non-blocking connect that got through, whatever came after (the
	 * peer's FIN): the next connect() reports it, 0, and only the one
	 * after is EISCONN (Linux __inet_stream_connect(), SS_CONNECTING). */
	if ((so->tcp.tflags & SL_TF_CONN_PEND) && so->state >= SL_TCP_ESTABLISHED) {
		so->tcp.tflags &= ~SL_TF_CONN_PEND;
		return 0;
	}
	if (so->state != SL_TCP_CLOSED || (so->tcp.tflags & SL_TF_CONNECTED))
		return -EISCONN;
	/* Port 0 is not refused here: as on Linux the SYN goes, and finds
	 * nobody (ECONNREFUSED). */
	if (!raddr)
		return -EINVAL;
	/* Linux tcp_v4_connect(): a broadcast or multicast route is
	 * ENETUNREACH. */
	if (sl_ip_is_bcast(s, raddr) || SL_IN_MULTICAST(raddr))
		return -ENETUNREACH;
	sl_sock_unhash(s, so);
	if (!so->laddr) {
		so->laddr = sl_tcp_src_addr(s, raddr);
		if (!so->laddr)
			return -ENETUNREACH;
	}
	so->raddr = raddr;
	so->rport = rport;
	so->error = 0;
	so->flags &= ~(SL_SF_SHUT_RD | SL_SF_SHUT_WR);
	sl_sock_hash(s, so);
	sl_tcp_init_tcb(s, so, now_us);
	/* Offer what we implement; the SYN-ACK says what the peer agrees. */
	so->tcp.tflags |= SL_TF_WS | SL_TF_TS | SL_TF_SACK | SL_TF_CONN_PEND;
	/* RFC 3168 6.1.1: ECN is asked for only with tcp_ecn 1. */
	if (sl_tcp_ecn_mode(s) == 1)
		so->tcp.ecn = SL_ECN_OK;
	so->state = SL_TCP_SYN_SENT;
	sl_count(s, SL_C_tcp_active_open);
	sl_tcp_send_syn(s, so, now_us);
	so->tcp.t_rexmt = now_us + so->tcp.rto_us;
	sl_tcp_arm(s, so);
	return -EINPROGRESS;
}

int sl_tcp_listen(struct sl_stack *s, struct sl_sock *so, int backlog)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (so->state != SL_TCP_CLOSED && so->state != SL_TCP_LISTEN)
		return -EINVAL;
	/* As Linux's __sys_listen(): a negative backlog, or one above
	 * somaxconn, is somaxconn; 0 is 0.  The queue holds one more than
	 * the backlog (sl_tcp_acceptq_full()). */
	if ((unsigned int)backlog > SL_TCP_SOMAXCONN)
		backlog = SL_TCP_SOMAXCONN;
	if (so->state == SL_TCP_CLOSED) {
		uint16_t um = tp->user_mss;
		uint32_t lowat = tp->notsent_lowat, qlen = tp->fastopen_qlen;

		/* Linux's listen-time port check (inet_csk_get_port() with the
		 * socket already LISTEN): another listener on the port, or a
		 * socket bound there without SO_REUSEADDR on both, is in the
		 * way (SO_REUSEPORT on both: a group). */
		if (!sl_sock_port_free(s, so, so->laddr, so->lport))
			return -EADDRINUSE;

		sl_sock_park_forget(s, so);
		memset(tp, 0, sizeof(*tp));
		sl_sock_park_none(so);
		tp->user_mss = um;
		tp->notsent_lowat = lowat;	/* the children's (Linux clones it) */
		tp->fastopen_qlen = qlen;
		if (lowat || s->tcp_notsent_lowat)
			tp->tflags |= SL_TF_LOWAT;
		tp->kid_next = tp->kid_prev = tp->kid_head = SLUICE_IDX_NONE;
		tp->acc_head = tp->acc_tail = SLUICE_IDX_NONE;
		tp->sndq_head = tp->sndq_tail = tp->ooo_head = tp->sndq_hint = SLUICE_IDX_NONE;
		if (!(so->flags & SL_SF_HASHED))
			sl_sock_hash(s, so);
	}
	tp->backlog = (uint16_t)backlog;
	tp->syn_max = backlog < SL_TCP_SYNQ_MIN ? SL_TCP_SYNQ_MIN : (uint16_t)backlog;
	if (tp->syn_max > sl_tcp_synq_cap(s))
		tp->syn_max = (uint16_t)sl_tcp_synq_cap(s);
	sl_tcp_set_state(s, so, SL_TCP_LISTEN);
	return 0;
}

int sl_tcp_accept(struct sl_stack *s, struct sl_sock *lso, struct sl_sock **child)
{
	struct sl_tcp_sock *tp = &lso->tcp;
	struct sl_sock *c;

	if (lso->state != SL_TCP_LISTEN)
		return -EINVAL;
	if (!sl_sock_some(s, tp->acc_head))
		/* A listener whose device went away says so (link/kring_link.c). */
		return lso->error ? -sl_sock_error(s, lso) : -EAGAIN;
	c = sl_sock(s, tp->acc_head);
	sl_sock_busy2(s, c);
	tp->acc_head = c->next_idx;
	if (tp->acc_head == SLUICE_IDX_NONE)
		tp->acc_tail = SLUICE_IDX_NONE;
	SL_KILL_POINT("tcp_accept");
	tp->acc_len--;
	c->next_idx = SLUICE_IDX_NONE;
	sl_sock_kid_unlink(s, c);
	c->parent_idx = SLUICE_IDX_NONE;
	c->tcp.tflags &= ~(SL_TF_ACCQ | SL_TF_PASSIVE);
	/* Handed to the accepting process: its socket from now on. */
	c->owner_pid = (uint32_t)sl_self_pid();
	*child = c;
	if (tp->park_head != SLUICE_IDX_NONE)
		sl_tcp_unpark(s, lso, sl_now(s));
	return 0;
}

/*
 * Connections of this stack that met listener lso's full accept queue:
 * a client's SYN (the client in SYN-SENT) or a child's last ACK of the
 * handshake (the child in SYN-RECEIVED).  Linux drops both and the client
 * tries again after its retransmission timeout, 1 s for a SYN; a client
 * in the same stack makes connections faster than a slow server accepts
 * them, so it would wait out that second far more often than on the
 * kernel.  Parked here, oldest first, on a list through the slots with no
 * fixed limit (proto/sock.c, sl_sock_park_link()), each is sent again as
 * accept() makes room: the SYN, or the SYN-ACK that the client answers
 * with its ACK.  Its timer stays armed all the same (recovery rebuilds
 * the list: recover.c, rebuild_park()).
 */
void sl_tcp_park(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *so)
{
	if (so->tcp.park_lso == lso->idx)
		return;		/* parked here already */
	sl_sock_park_unlink(s, so);
	sl_sock_park_link(s, lso, so);
	sl_count(s, SL_C_tcp_syn_parked);
}

/* Whether c still waits for listener lso: a client in SYN-SENT to its
 * port (and address, unless it listens on any), or its child in
 * SYN-RECEIVED. */
bool sl_tcp_parked_for(const struct sl_sock *lso, const struct sl_sock *c)
{
	return c->type == SL_SOCK_TCP &&
	       ((c->state == SL_TCP_SYN_SENT && c->rport == lso->lport &&
		 (!lso->laddr || c->raddr == lso->laddr)) ||
		(c->state == SL_TCP_SYN_RECEIVED && c->parent_idx == lso->idx));
}

void sl_tcp_unpark(struct sl_stack *s, struct sl_sock *lso, uint64_t now_us)
{
	struct sl_tcp_sock *ltp = &lso->tcp;
	uint32_t guard = 0;

	while (sl_sock_next(s, ltp->park_head, &guard)) {
		struct sl_sock *c = sl_sock(s, ltp->park_head);

		/* Shared memory: a list that cannot be is emptied (the
		 * connections on it still have their timers). */
		if (c == lso || c->tcp.park_lso != lso->idx)
			break;
		sl_sock_park_unlink(s, c);
		if (!sl_tcp_parked_for(lso, c))
			continue;
		sl_count(s, SL_C_tcp_syn_unparked);
		sl_tcp_send_syn(s, c, now_us);
		return;
	}
	if (ltp->park_head != SLUICE_IDX_NONE)
		sl_sock_park_clear(s, lso);
}

/* Buffers send queues may not take: whatever the sockets' sndbuf says,
 * the pool keeps room for received segments, or ACKs that would free
 * send buffers could not be received at all (Linux: tcp_mem pressure). */
static bool pool_has_room(const struct sl_stack *s)
{
	uint32_t reserve = s->n_bufs / 8;

	if (reserve < 16)
		reserve = 16;
	return s->lib->buf_free_count > reserve;
}

static bool can_send(const struct sl_sock *so)
{
	return (so->state == SL_TCP_ESTABLISHED || so->state == SL_TCP_CLOSE_WAIT) &&
	       !(so->flags & SL_SF_SHUT_WR);
}

/*
 * TCP_NOTSENT_LOWAT (tcp(7)), as Linux's tcp_stream_memory_free(): the
 * bytes written but not yet sent (write_seq - snd_nxt there; here
 * snd_end - snd_max, a queued FIN not counted), shifted left by wake, are
 * under the mark in force: the socket's, else net.ipv4.tcp_notsent_lowat
 * (UINT32_MAX by default: no mark).  A write takes a new buffer only
 * while the bytes are under it (wake 0, sk_stream_memory_free() in
 * tcp_sendmsg_locked()); poll says writable only while twice the bytes
 * are (wake 1, tcp_poll()), so a writer woken has room for half a mark.
 */
static uint32_t notsent_lowat(const struct sl_stack *s, const struct sl_tcp_sock *tp)
{
	uint32_t l = SL_READ_ONCE(tp->notsent_lowat);

	return l ? l : s->tcp_notsent_lowat ? s->tcp_notsent_lowat : UINT32_MAX;
}

static uint32_t notsent_bytes(const struct sl_tcp_sock *tp)
{
	uint32_t end = SL_READ_ONCE(tp->snd_end), max = SL_READ_ONCE(tp->snd_max);

	return SEQ_GT(end, max) ? end - max : 0;
}

static bool notsent_ok(const struct sl_stack *s, const struct sl_tcp_sock *tp, uint32_t more,
		       unsigned int wake)
{
	uint32_t lowat;

	if (__builtin_expect(!(SL_READ_ONCE(tp->tflags) & SL_TF_LOWAT), 1))
		return true;
	lowat = notsent_lowat(s, tp);
	return lowat == UINT32_MAX || ((uint64_t)notsent_bytes(tp) + more) << wake < lowat;
}

/*
 * sl_tcp_output() sent new data with a mark in force (max_before: SND.MAX
 * before it): the socket turned writable is a change of it, woken as
 * Linux's tcp_check_space() calls sk_write_space() after an ACK let data
 * go.  An ACK of new data wakes anyway (tcp_input.c); a window update
 * alone, or data sent by a timer, would not.
 */
void sl_tcp_notsent_sent(struct sl_stack *s, struct sl_sock *so, uint32_t max_before)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t lowat = notsent_lowat(s, tp), end = tp->snd_end, before;

	if (lowat == UINT32_MAX || !can_send(so))
		return;
	before = SEQ_GT(end, max_before) ? end - max_before : 0;
	if ((uint64_t)before << 1 >= lowat && notsent_ok(s, tp, 0, 1)) {
		sl_sock_wake(s, so);
		sl_sock_async_space(s, so);
	}
}

/*
 * Room for the next send buffer of socket so: the pool's (above), or, for
 * a socket with nothing queued or lent, one buffer from below that
 * reserve down to a sixteenth of the pool, as Linux forces the memory of
 * the first skb when the write and retransmit queues are empty
 * (tcp_stream_alloc_skb(), sk_forced_mem_schedule()).
 */
static bool send_room(struct sl_stack *s, const struct sl_sock *so)
{
	uint32_t floor = s->n_bufs / 16;

	if (pool_has_room(s))
		return true;
	return !sl_buf_some(s, so->tcp.sndq_head) && !so->tx_lent_bytes &&
	       s->lib->buf_free_count > (floor < 16 ? 16 : floor);
}

/*
 * A write the pool refused (all or part): the writer learns that it may
 * write again from a wake of this socket, and the pool's room coming back
 * is no event of it (a socket with nothing in flight has no ACK to come;
 * one whose ACK comes while the pool is still short wakes without
 * POLLOUT).  An edge-triggered writer (nginx) waited for ever, or until
 * something else moved the socket.  So the socket looks at the pool again
 * every SL_TCP_POOL_US until it has room, and then wakes its writers
 * (sl_tcp_pool_look(), from its timer): O(refused sockets), no walk.
 */
static void pool_refused(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	sl_count(s, SL_C_tcp_tx_pool_wait);
	if (!tp->t_pool) {
		tp->t_pool = now_us + SL_TCP_POOL_US;
		sl_tcp_arm(s, so);
	}
}

/*
 * A look (poll, epoll, the module's events) found so writable but for the
 * pool: the pool's room coming back makes it writable, and that must be a
 * wake of so, as any change of its readiness is (an epoll set passes by
 * an item a look found idle until its wake sequence moves: preload/
 * epoll.c, check_all()).  As Linux's tcp_poll() sets SOCK_NOSPACE, so that
 * the space freed later calls sk_stream_write_space(): the socket watches
 * the pool as a refused writer's does (pool_refused()).  Found when an
 * edge-triggered writer whose wake came while the pool was short again
 * (the look after it found no room) was never woken: the pool's room was
 * no event of its socket (tests/host/test_pool_many.sh, 4,096 buffers).
 */
static void pool_watch(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (!tp->t_pool) {
		tp->t_pool = sl_now(s) + SL_TCP_POOL_US;
		sl_tcp_arm(s, so);
	}
}

void sl_tcp_pool_look(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	if (!can_send(so))
		return;
	if (send_room(s, so)) {
		sl_sock_wake(s, so);
		sl_sock_async_space(s, so);
	} else {
		so->tcp.t_pool = now_us + SL_TCP_POOL_US;
	}
}

/* Put buffer idx at the tail of the send queue, numbered from snd_end. */
static void sndq_append(struct sl_stack *s, struct sl_tcp_sock *tp, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);

	b->seq = tp->snd_end;
	b->next_idx = SLUICE_IDX_NONE;
	if (sl_buf_some(s, tp->sndq_tail))
		sl_buf(s, tp->sndq_tail)->next_idx = idx;
	else
		tp->sndq_head = idx;
	tp->sndq_tail = idx;
}

/* A write ends at the tail: Linux marks the tail of its write queue PSH
 * at the end of each sendmsg (tcp_push()). The mark stays with the
 * buffer's last byte (split_buf() moves it). */
static void mark_push(struct sl_stack *s, struct sl_tcp_sock *tp)
{
	if (sl_buf_some(s, tp->sndq_tail))
		sl_buf(s, tp->sndq_tail)->flags |= SL_TBF_PSH;
}

ssize_t sl_tcp_send(struct sl_stack *s, struct sl_sock *so, const void *buf, size_t len,
		    int flags, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	const uint8_t *p = buf;
	size_t done = 0;
	bool refused = false;
	uint32_t mss;

	if (so->error) {
		int e = sl_sock_error(s, so);

		so->error = 0;
		return -e;
	}
	if (so->state == SL_TCP_SYN_SENT || so->state == SL_TCP_SYN_RECEIVED)
		return (so->flags & SL_SF_SHUT_WR) ? -EPIPE : -EAGAIN;
	/* Not connected, listening or shut: EPIPE, as Linux's
	 * sk_stream_wait_connect() answers a socket that is not connecting. */
	if (!can_send(so))
		return -EPIPE;
	if (!len)
		return 0;
	/* A segment's payload (after SL_TCP_DATA_OFF) must fit a buffer.
	 * Read once: the copy below is bounded by this value (and the
	 * division by it is by the value found non-zero). */
	mss = SL_READ_ONCE(tp->mss);
	if (__builtin_expect(mss > SL_TCP_BUF_PAYLOAD(s), 0)) {
		sl_sock_insane(s, so);
		return sl_broken_err(s);
	}
	while (done < len) {
		uint32_t queued = tp->sndq_bytes + so->tx_lent_bytes;
		uint32_t room = so->sndbuf > queued ? so->sndbuf - queued : 0;
		uint32_t idx = tp->sndq_tail, n, aux = mss;
		struct sluice_buf *b;

		if (!room)
			break;
		/* No send queue takes more than a quarter of the pool. */
		if (!mss || tp->sndq_bytes / mss >= s->n_bufs / 4)
			break;
		/* Fill the unsent tail buffer first (what Nagle holds back).
		 * Its length read once: checked below the MSS, it is where
		 * the copy starts and what bounds it (read again, mss - aux
		 * wrapped to ~4 GiB and the copy ran past the buffer). */
		if (sl_buf_some(s, idx) && !(sl_buf(s, idx)->flags & SL_TBF_SENT)) {
			aux = SL_READ_ONCE(sl_buf(s, idx)->aux);
			/* This write goes on past it: the mark moves on (as
			 * Linux clears PSH of a tail skb it appends to). */
			if (aux < mss)
				sl_buf(s, idx)->flags &= (uint16_t)~SL_TBF_PSH;
		}
		if (aux >= mss) {
			if (!notsent_ok(s, tp, 0, 0))
				break;
			idx = send_room(s, so) ? sl_buf_alloc(s) : SLUICE_IDX_NONE;
			if (idx == SLUICE_IDX_NONE) {
				refused = true;
				break;
			}
			sl_buf(s, idx)->aux = 0;
			aux = 0;
			sndq_append(s, tp, idx);
		}
		b = sl_buf(s, idx);
		n = mss - aux;
		if (n > room)
			n = room;
		if (n > len - done)
			n = (uint32_t)(len - done);
		memcpy(sl_buf_base(s, idx) + SL_TCP_DATA_OFF + aux, p + done, n);
		b->aux = (uint16_t)(aux + n);
		SL_KILL_POINT("tcp_send");
		tp->snd_end += n;
		tp->sndq_bytes += n;
		done += n;
	}
	if (refused)
		pool_refused(s, so, now_us);
	/* Short of room: an O_ASYNC owner is signalled when it comes back
	 * (Linux sk_stream_wait_memory() sets SOCKWQ_ASYNC_NOSPACE). */
	if (done < len && (so->life & SL_LIFE_ASYNC))
		so->life |= SL_LIFE_NOSPACE;
	if (done) {
		so->tx_bytes += done;
		mark_push(s, tp);
		/* MSG_OOB: the last byte written is urgent; the pointer goes
		 * after it (Linux's tcp_mark_urg(): snd_up = write_seq). */
		if (flags & MSG_OOB) {
			tp->snd_up = tp->snd_end;
			tp->tflags |= SL_TF_URG;
		}
		sl_tcp_output(s, so, now_us);
		return (ssize_t)done;
	}
	/* Nothing queued: the send buffer is full, or the pool is low (other
	 * connections' ACKs give buffers back; poll shows OUT once they do,
	 * as Linux waits in sk_stream_wait_memory(), and pool_refused() wakes
	 * this socket's writers then). */
	return -EAGAIN;
}

/*
 * Lending: a large send or receive copies its data without the stack lock,
 * so one process's copy runs while another process runs the stack (a
 * receiver copying out no longer stops the sender, and the other way
 * round).  Under the lock, whole buffers are taken off the receive queue,
 * or allocated for the send queue, and recorded in the socket; the caller
 * unlocks, copies, locks again and gives them back (sl_tcp_*_return()).
 * Only one chain a direction a socket is out at a time; a chain whose
 * borrower died is taken back by the next borrower.
 */
static bool lent_free(struct sl_stack *s, uint32_t *lent)
{
	uint32_t idx = *lent;

	if (!sl_buf_some(s, idx))
		return true;
	if (!sl_pid_dead((pid_t)sl_buf(s, idx)->ts_us))
		return false;
	sl_buf_free_chain(s, idx);
	*lent = SLUICE_IDX_NONE;
	return true;
}

void sl_tcp_lent_reap(struct sl_stack *s, struct sl_sock *so)
{
	if (lent_free(s, &so->rx_lent_idx))
		so->rx_lent_bytes = so->rx_lent_count = 0;
	if (lent_free(s, &so->tx_lent_idx))
		so->tx_lent_bytes = 0;
}

uint32_t sl_tcp_recv_lend(struct sl_stack *s, struct sl_sock *so, size_t len, size_t *bytes)
{
	uint32_t head = so->rxq_head, idx = head, last = SLUICE_IDX_NONE, count = 0;
	size_t n = 0;

	/* Urgent data: reads stop at its mark and step over it
	 * (sl_tcp_recv()); whole buffers would not. */
	if (so->state == SL_TCP_LISTEN || so->tcp.urg_data || !lent_free(s, &so->rx_lent_idx))
		return SLUICE_IDX_NONE;
	so->rx_lent_bytes = so->rx_lent_count = 0;
	for (uint32_t steps = 0; sl_buf_next(s, idx, &steps);) {
		const struct sluice_buf *b = sl_buf(s, idx);
		/* Read once: n bounds the caller's copy into a buffer of len
		 * bytes (read again, n could pass len). */
		uint16_t blen = SL_READ_ONCE(b->len);

		if (n + blen > len)
			break;
		n += blen;
		count++;
		last = idx;
		idx = b->next_idx;
	}
	if (last == SLUICE_IDX_NONE)
		return SLUICE_IDX_NONE;
	/* The borrower is named before the chain is the socket's: a
	 * recovery keeps a chain lent to a live process (recover.c), and a
	 * holder killed in between must not leave one that names a
	 * receive time as a pid.  Volatile stores: in this order. */
	SL_WRITE_ONCE(sl_buf(s, head)->ts_us, (uint64_t)sl_self_pid());
	so->rxq_head = idx;
	if (!sl_buf_some(s, idx))
		so->rxq_head = so->rxq_tail = SLUICE_IDX_NONE;
	sl_buf(s, last)->next_idx = SLUICE_IDX_NONE;
	so->rxq_bytes -= (uint32_t)n;
	so->rxq_count -= count;
	so->rx_lent_bytes = (uint32_t)n;
	so->rx_lent_count = count;
	SL_WRITE_ONCE(so->rx_lent_idx, head);
	*bytes = n;
	return head;
}

static bool ack_on_read(struct sl_stack *s, struct sl_sock *so, uint64_t now_us);
static void window_update(struct sl_stack *s, struct sl_sock *so, bool acked, uint64_t now_us);

bool sl_tcp_recv_return(struct sl_stack *s, struct sl_sock *so, uint32_t gen, uint32_t head,
			uint64_t now_us)
{
	if (so->kp.gen != gen || so->rx_lent_idx != head)
		return false;	/* the socket went meanwhile, and the chain with it */
	sl_buf_free_chain(s, head);
	so->rx_lent_idx = SLUICE_IDX_NONE;
	so->rx_lent_bytes = so->rx_lent_count = 0;
	window_update(s, so, ack_on_read(s, so, now_us), now_us);
	return true;
}

uint32_t sl_tcp_send_lend(struct sl_stack *s, struct sl_sock *so, size_t len, size_t *bytes)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t queued = tp->sndq_bytes + so->tx_lent_bytes, mss = tp->mss;
	uint32_t room = so->sndbuf > queued ? so->sndbuf - queued : 0;
	uint32_t head = SLUICE_IDX_NONE, tail = SLUICE_IDX_NONE, nbufs;
	size_t n = 0;

	if (!can_send(so) || so->error || !mss || !lent_free(s, &so->tx_lent_idx))
		return SLUICE_IDX_NONE;
	if (len > room)
		len = room;
	/* No send queue takes more than a quarter of the pool (sl_tcp_send). */
	nbufs = tp->sndq_bytes / mss;
	while (n < len && nbufs < s->n_bufs / 4 && notsent_ok(s, tp, (uint32_t)n, 0)) {
		uint32_t idx = pool_has_room(s) || (!n && send_room(s, so)) ? sl_buf_alloc(s) :
									     SLUICE_IDX_NONE;
		uint32_t chunk = len - n < mss ? (uint32_t)(len - n) : mss;
		struct sluice_buf *b;

		if (idx == SLUICE_IDX_NONE) {
			pool_refused(s, so, sl_now(s));
			break;
		}
		b = sl_buf(s, idx);
		b->aux = (uint16_t)chunk;
		b->flags = 0;
		b->next_idx = SLUICE_IDX_NONE;
		if (tail == SLUICE_IDX_NONE)
			head = idx;
		else
			sl_buf(s, tail)->next_idx = idx;
		tail = idx;
		n += chunk;
		nbufs++;
	}
	if (head == SLUICE_IDX_NONE)
		return SLUICE_IDX_NONE;
	SL_WRITE_ONCE(sl_buf(s, head)->ts_us, (uint64_t)sl_self_pid());
	so->tx_lent_bytes = (uint32_t)n;
	SL_WRITE_ONCE(so->tx_lent_idx, head);
	*bytes = n;
	return head;
}

ssize_t sl_tcp_send_return(struct sl_stack *s, struct sl_sock *so, uint32_t gen, uint32_t head,
			   uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	size_t done = 0;

	if (so->kp.gen != gen || so->tx_lent_idx != head)
		return -EPIPE;	/* the socket went meanwhile, and the chain with it */
	so->tx_lent_idx = SLUICE_IDX_NONE;
	so->tx_lent_bytes = 0;
	if (!can_send(so) || so->error) {
		/* Reset or shut meanwhile: as if the call came after that. */
		int e = so->error ? sl_sock_error(s, so) : EPIPE;

		sl_buf_free_chain(s, head);
		so->error = 0;
		return -e;
	}
	for (uint32_t idx = head, steps = 0; sl_buf_next(s, idx, &steps);) {
		struct sluice_buf *b = sl_buf(s, idx);
		uint32_t next = b->next_idx;

		b->ts_us = 0;
		sndq_append(s, tp, idx);
		tp->snd_end += b->aux;
		tp->sndq_bytes += b->aux;
		done += b->aux;
		idx = next;
	}
	so->tx_bytes += done;
	mark_push(s, tp);
	sl_tcp_output(s, so, now_us);
	return (ssize_t)done;
}

/* Bytes a send can put into the unsent tail buffer (what Nagle holds back). */
uint32_t sl_tcp_send_tail_room(struct sl_stack *s, const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	const struct sluice_buf *b;

	if (!sl_buf_some(s, tp->sndq_tail))
		return 0;
	b = sl_buf(s, tp->sndq_tail);
	if ((b->flags & SL_TBF_SENT) || b->aux >= tp->mss)
		return 0;
	return tp->mss - b->aux;
}

/*
 * Receive-buffer growth (dynamic right-sizing), as Linux's
 * tcp_rcv_space_adjust() after each read: once a round trip has passed
 * since the round began, if the user read more in it than in any round
 * before, the buffer grows so that the window offers twice that and 16
 * segments, and more again in proportion to how fast the rate grew
 * (slow start doubles it each round), up to net.ipv4.tcp_rmem's max;
 * never for a socket whose SO_RCVBUF the user set.  The window offered
 * is half of rcvbuf (sl_tcp_rcv_space_mss()), so rcvbuf is twice the
 * window.  Without it a 256 KiB rcvbuf held a 10 ms path at ~100 Mbit/s
 * (tests/bench/lossy_host.sh -d receive).
 */
static void rcv_space_adjust(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t seq = tp->rcv_nxt - so->rxq_bytes - so->rx_lent_bytes, copied;
	uint32_t max = s->tcp_rmem_max ? s->tcp_rmem_max : SL_TCP_RMEM_MAX;
	uint64_t win, grow;

	if (!tp->rcvq_time_us) {
		tp->rcvq_time_us = now_us ? now_us : 1;
		tp->rcvq_seq = seq;
		tp->rcvq_space = SL_TCP_IW_SEGS * tp->mss;
		return;
	}
	if (!tp->srtt_us || now_us - tp->rcvq_time_us < tp->srtt_us)
		return;
	copied = seq - tp->rcvq_seq;
	if (copied > tp->rcvq_space && tp->rcvq_space) {
		win = 2 * (uint64_t)copied + 16 * (uint64_t)tp->mss;
		grow = win * (copied - tp->rcvq_space) / tp->rcvq_space;
		win += 2 * grow;
		if (!(so->opt_flags & SL_SO_RCVBUF_SET) && so->rcvbuf < max) {
			win *= 2;	/* the window is half the buffer */
			if (win > max)
				win = max;
			if (win > so->rcvbuf) {
				so->rcvbuf = (uint32_t)win;
				sl_count(s, SL_C_tcp_rcvbuf_grown);
			}
		}
		tp->rcvq_space = copied;
	}
	tp->rcvq_seq = seq;
	tp->rcvq_time_us = now_us ? now_us : 1;
}

/*
 * Linux tcp_cleanup_rbuf(), after a read that took data: an ACK being
 * delayed goes now if more than a full segment waits for it (one
 * __tcp_ack_snd_check() held because it did not move the window), or if
 * the read left nothing queued and a short segment is among what it
 * covers, unless this end is in an exchange (its reply will carry it) and
 * only one came.  So a peer's next small write, held by Nagle until this
 * ACK, waits for no timer when nothing is sent back on the connection.
 * True if it sent the ACK.
 */
static bool ack_on_read(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (!tp->t_dack || so->state < SL_TCP_ESTABLISHED)
		return false;
	if (!(tp->delack_segs >= 2 ||
	      tp->rcv_nxt - tp->last_ack_sent > (tp->rcv_mss ? tp->rcv_mss : tp->mss))) {
		if (!(tp->tflags & (SL_TF_PUSHED | SL_TF_PUSHED2)) || so->rxq_bytes ||
		    so->rx_lent_bytes)
			return false;
		if (!(tp->tflags & SL_TF_PUSHED2) && (tp->tflags & SL_TF_PINGPONG))
			return false;
	}
	sl_tcp_send_ack(s, so, now_us);
	return true;
}

/*
 * Linux tcp_cleanup_rbuf()'s window update: once the window left to the
 * peer is at most half the largest (window_clamp), a read that lets the
 * window offered be at least twice it sends it ("raised significantly";
 * RFC 9293 3.8.6.2.2, the receiver's side of SWS avoidance).  Not once the
 * peer's FIN is in: nothing more will come; nor after ack_on_read()
 * sent one (acked).  The receive buffer may grow first.
 */
static void window_update(struct sl_stack *s, struct sl_sock *so, bool acked, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t adv = SEQ_GT(tp->rcv_adv, tp->rcv_nxt) ? tp->rcv_adv - tp->rcv_nxt : 0;
	uint32_t win;

	if (so->state < SL_TCP_ESTABLISHED || (tp->tflags & SL_TF_FIN_RCVD))
		return;
	rcv_space_adjust(s, so, now_us);
	if (acked || 2ull * adv > sl_tcp_rcv_wnd_max(s, so))
		return;
	win = sl_tcp_rcv_window(s, so);
	if (win && win >= 2ull * adv)
		sl_tcp_send_ack(s, so, now_us);
}

uint32_t sl_tcp_copied_seq(const struct sl_sock *so)
{
	return so->tcp.rcv_nxt - so->rxq_bytes - so->rx_lent_bytes -
	       !!(so->tcp.tflags & SL_TF_FIN_RCVD);
}

void sl_tcp_rxq_eat(struct sl_stack *s, struct sl_sock *so, uint32_t n)
{
	uint32_t idx = so->rxq_head;
	struct sluice_buf *b;

	if (!sl_buf_some(s, idx))
		return;
	b = sl_buf(s, idx);
	if (n > b->len)
		n = b->len;
	b->off += n;
	b->len -= n;
	SL_KILL_POINT("tcp_recv");
	b->seq += n;
	so->rxq_bytes -= n;
	if (!b->len) {
		so->rxq_head = b->next_idx;
		if (so->rxq_head == SLUICE_IDX_NONE)
			so->rxq_tail = SLUICE_IDX_NONE;
		so->rxq_count--;
		sl_buf_free(s, idx);
	}
}

/*
 * A read, as Linux's tcp_recvmsg_locked(): with urgent data held
 * (urg_data), it stops before the urgent byte once it has read anything
 * (the mark, SIOCATMARK), and one that starts there steps over the byte
 * (unless SO_OOBINLINE) and reads on.  Once the reader is past the byte
 * the urgent data is over.
 */
ssize_t sl_tcp_recv(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len, int flags,
		    uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	size_t done = 0;
	/* at: bytes of buffer idx a peek has passed over already. */
	uint32_t idx = so->rxq_head, steps = 0, at = 0, seq = sl_tcp_copied_seq(so);

	if (so->state == SL_TCP_LISTEN)
		return -ENOTCONN;
	while (done < len && sl_buf_next(s, idx, &steps)) {
		struct sluice_buf *b = sl_buf(s, idx);
		uint32_t n = SL_READ_ONCE(b->len);	/* once: it bounds the copy */

		if (at >= n) {
			idx = b->next_idx;
			at = 0;
			continue;
		}
		n -= at;
		if (n > len - done)
			n = (uint32_t)(len - done);
		if (__builtin_expect(tp->urg_data != 0, 0)) {
			uint32_t d = tp->urg_seq - seq;

			if (!d) {
				if (done)
					break;
				if (!(so->opt_flags & SL_SO_OOBINLINE)) {
					seq++;
					if (flags & MSG_PEEK) {
						at++;
						continue;
					}
					sl_tcp_rxq_eat(s, so, 1);
					tp->urg_data = 0;
					idx = so->rxq_head;
					continue;
				}
			} else if (d < n) {
				n = d;
			}
		}
		/* MSG_TRUNC on a stream: Linux discards the bytes, uncopied.
		 * A fault in the caller's buffer (core.h, sl_ucopy()), or in
		 * any of its iovecs (SL_MSG_IOV): as Linux's tcp_recvmsg(),
		 * what was copied before this buffer, or EFAULT; this
		 * buffer's bytes stay queued. */
		if (!(flags & MSG_TRUNC) && sl_rx_copy(buf, done, flags, sl_buf_data(s, idx) + at, n)) {
			if (done)
				break;
			return -EFAULT;
		}
		done += n;
		seq += n;
		if (flags & MSG_PEEK) {
			at += n;
			continue;
		}
		sl_tcp_rxq_eat(s, so, n);
		if (__builtin_expect(tp->urg_data != 0, 0) && SEQ_GT(seq, tp->urg_seq))
			tp->urg_data = 0;
		idx = so->rxq_head;
	}
	if (done) {
		if (!(flags & MSG_PEEK))
			window_update(s, so, ack_on_read(s, so, now_us), now_us);
		return (ssize_t)done;
	}
	/* Linux tcp_recvmsg(): a read of 0 bytes is 0 once there is data,
	 * and otherwise answers as any read (ENOTCONN, EAGAIN, waits). */
	if (!len && so->rxq_bytes)
		return 0;
	if (so->error) {
		int e = sl_sock_error(s, so);

		so->error = 0;
		return -e;
	}
	if ((so->tcp.tflags & SL_TF_FIN_RCVD) || (so->flags & SL_SF_SHUT_RD))
		return 0;
	if (so->state == SL_TCP_CLOSED)
		return (so->tcp.tflags & (SL_TF_CONNECTED | SL_TF_DONE)) ? 0 : -ENOTCONN;
	return -EAGAIN;
}

ssize_t sl_tcp_recv_urg(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len, int flags)
{
	struct sl_tcp_sock *tp = &so->tcp;

	(void)s;
	if (so->state == SL_TCP_LISTEN)
		return -ENOTCONN;
	/* None, read already, or inline: EINVAL ("Yes this is right!"). */
	if ((so->opt_flags & SL_SO_OOBINLINE) || !tp->urg_data || tp->urg_data == SL_URG_READ)
		return -EINVAL;
	if (so->state == SL_TCP_CLOSED && !(tp->tflags & SL_TF_DONE))
		return -ENOTCONN;
	if (tp->urg_data & SL_URG_VALID) {
		uint8_t c = (uint8_t)tp->urg_data;

		if (!(flags & MSG_PEEK))
			tp->urg_data = SL_URG_READ;
		if (!len)
			return 0;	/* Linux: MSG_TRUNC in msg_flags */
		/* Linux too has marked it read before its copy faults. */
		if (!(flags & MSG_TRUNC) && sl_ucopy(buf, &c, 1))
			return -EFAULT;
		return 1;
	}
	/* A pointer came and its byte has not: never wait for it. */
	if (so->state == SL_TCP_CLOSED || (tp->tflags & SL_TF_FIN_RCVD) ||
	    (so->flags & SL_SF_SHUT_RD))
		return 0;
	return -EAGAIN;
}

uint32_t sl_tcp_inq(const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t copied;

	if (__builtin_expect(!tp->urg_data, 1) || (so->opt_flags & SL_SO_OOBINLINE))
		return so->rxq_bytes;
	copied = sl_tcp_copied_seq(so);
	if (SEQ_LT(tp->urg_seq, copied) || SEQ_GEQ(tp->urg_seq, tp->rcv_nxt))
		return so->rxq_bytes;
	return tp->urg_seq - copied;
}

bool sl_tcp_atmark(const struct sl_sock *so)
{
	return so->tcp.urg_data && so->tcp.urg_seq == sl_tcp_copied_seq(so);
}

/* Queue our FIN (RFC 9293 3.10.4 CLOSE / shutdown(SHUT_WR)). */
static void queue_fin(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	so->flags |= SL_SF_SHUT_WR;
	if (tp->tflags & SL_TF_FIN_Q)
		return;
	switch (so->state) {
	case SL_TCP_ESTABLISHED:
		tp->tflags |= SL_TF_FIN_Q;
		sl_tcp_set_state(s, so, SL_TCP_FIN_WAIT_1);
		break;
	case SL_TCP_CLOSE_WAIT:
		tp->tflags |= SL_TF_FIN_Q;
		sl_tcp_set_state(s, so, SL_TCP_LAST_ACK);
		break;
	case SL_TCP_SYN_RECEIVED:
		/* Sent once the handshake completes (tcp_input.c). */
		return;
	default:
		return;
	}
	sl_tcp_output(s, so, now_us);
}

int sl_tcp_shutdown(struct sl_stack *s, struct sl_sock *so, int how, uint64_t now_us)
{
	if (so->state == SL_TCP_LISTEN) {
		/*
		 * As Linux (inet_shutdown()): shut for reading, a listener
		 * stops listening (its unaccepted children are reset) and a
		 * blocked accept() wakes to EINVAL; it stays bound and may
		 * listen again.  Shut for writing only, nothing happens.
		 */
		if (how == SHUT_RD || how == SHUT_RDWR) {
			abort_children(s, so, now_us);
			sl_tcp_set_state(s, so, SL_TCP_CLOSED);
			sl_sock_wake(s, so);
		}
		return 0;
	}
	if (so->state == SL_TCP_SYN_SENT) {
		/* Linux inet_shutdown(): tcp_disconnect() aborts the attempt
		 * (POLLHUP, POLLERR with ECONNRESET) and the socket may
		 * connect again. */
		sl_tcp_done(s, so, ECONNRESET);
		so->tcp.tflags &= ~(SL_TF_DONE | SL_TF_CONN_PEND);
		return 0;
	}
	/* Closed, or in TIME-WAIT (Linux's full socket is closed there, a
	 * time-wait sock stands in): ENOTCONN, the flags taken anyway. */
	if (so->state == SL_TCP_CLOSED || so->state == SL_TCP_TIME_WAIT) {
		so->flags |= (how == SHUT_WR ? 0 : SL_SF_SHUT_RD) | (how == SHUT_RD ? 0 : SL_SF_SHUT_WR);
		sl_sock_wake(s, so);
		return -ENOTCONN;
	}
	if (how == SHUT_RD || how == SHUT_RDWR)
		so->flags |= SL_SF_SHUT_RD;
	if (how == SHUT_WR || how == SHUT_RDWR)
		queue_fin(s, so, now_us);
	sl_sock_wake(s, so);
	return 0;
}

void sl_tcp_close(struct sl_stack *s, struct sl_sock *so, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;

	/* A child not yet accepted belongs to its listener. */
	if (tp->tflags & (SL_TF_PASSIVE | SL_TF_ACCQ))
		return;
	switch (so->state) {
	case SL_TCP_LISTEN:
		abort_children(s, so, now_us);
		sl_tcp_destroy(s, so);
		return;
	case SL_TCP_CLOSED:
	case SL_TCP_SYN_SENT:
		sl_tcp_destroy(s, so);
		return;
	default:
		break;
	}
	if (!(so->flags & SL_SF_ORPHAN))
		s->lib->tcp_orphans++;
	so->flags |= SL_SF_ORPHAN | SL_SF_SHUT_RD;
	SL_KILL_POINT("tcp_close");
	if ((so->rxq_bytes || ((so->flags & SL_SF_LINGER) && !so->linger_s)) &&
	    so->state != SL_TCP_TIME_WAIT) {
		/* RFC 2525 2.17 and Linux: unread data is lost, say so.
		 * SO_LINGER with a zero time: an abortive close (socket(7)),
		 * no FIN, no TIME-WAIT. */
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_count(s, SL_C_tcp_reset_tx);
		sl_tcp_destroy(s, so);
		return;
	}
	if (so->state == SL_TCP_SYN_RECEIVED) {
		/* Simultaneous open not yet finished: nothing was sent. */
		sl_tcp_send_ctl(s, so, TH_RST_ | TH_ACK_, tp->snd_nxt, now_us);
		sl_tcp_destroy(s, so);
		return;
	}
	queue_fin(s, so, now_us);
	if (so->state == SL_TCP_FIN_WAIT_2 && !tp->t_close)
		tp->t_close = sl_tcp_fin_wait2_end(tp, now_us);
	sl_tcp_arm(s, so);
}

uint32_t sl_tcp_poll(struct sl_stack *s, struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint32_t ev = 0;

	if (so->state == SL_TCP_LISTEN)
		return (tp->acc_len || (tp->tflags & SL_TF_OSREADY) ? SL_EV_IN : 0) |
		       (so->error ? SL_EV_ERR : 0);
	if (so->error || so->errq_head != SLUICE_IDX_NONE)
		ev |= SL_EV_ERR;
	if (__builtin_expect(tp->urg_data != 0, 0)) {
		/* Linux's tcp_poll(): the urgent byte, unread out of band,
		 * is POLLPRI; at the mark it is not data to read (without
		 * SO_OOBINLINE). */
		if (tp->urg_data & SL_URG_VALID)
			ev |= SL_EV_PRI;
		if (sl_tcp_atmark(so) && !(so->opt_flags & SL_SO_OOBINLINE)) {
			if (so->rxq_bytes > 1 && sl_tcp_lowat_met(so, SIZE_MAX))
				ev |= SL_EV_IN;
		} else if (sl_tcp_lowat_met(so, SIZE_MAX)) {
			ev |= SL_EV_IN;
		}
	} else if (sl_tcp_lowat_met(so, SIZE_MAX)) {
		ev |= SL_EV_IN;
	}
	if ((tp->tflags & SL_TF_FIN_RCVD) || (so->flags & SL_SF_SHUT_RD))
		ev |= SL_EV_IN;
	if (tp->tflags & SL_TF_FIN_RCVD || (so->flags & SL_SF_SHUT_RD))
		ev |= SL_EV_RDHUP;
	/* Shut both ways is a hangup too, as Linux's tcp_poll() says. */
	if ((so->flags & (SL_SF_SHUT_RD | SL_SF_SHUT_WR)) == (SL_SF_SHUT_RD | SL_SF_SHUT_WR))
		ev |= SL_EV_HUP;
	if (so->state == SL_TCP_CLOSED) {
		ev |= SL_EV_HUP | SL_EV_IN | SL_EV_OUT;
		/* Ended (reset, refused): shut both ways, so the read side's
		 * hangup too (Linux tcp_done() sets SHUTDOWN_MASK). */
		if (tp->tflags & SL_TF_DONE)
			ev |= SL_EV_RDHUP;
	} else if (can_send(so)) {
		uint32_t mss = SL_READ_ONCE(tp->mss);	/* once: the divisor tested */

		if (so->sndbuf > tp->sndq_bytes + so->sndbuf / 8 &&
		    tp->sndq_bytes / (mss ? mss : 1) < s->n_bufs / 4 && notsent_ok(s, tp, 0, 1)) {
			if (send_room(s, so))
				ev |= SL_EV_OUT;
			else
				pool_watch(s, so);
		}
	} else if (so->state > SL_TCP_SYN_RECEIVED) {
		/* Write side shut: a write would fail at once (EPIPE). */
		ev |= SL_EV_OUT;
	}
	if ((so->flags & SL_SF_SHUT_WR) && (tp->tflags & SL_TF_FIN_RCVD))
		ev |= SL_EV_HUP;
	return ev;
}

static int get_int(const void *val, unsigned int len, int *v)
{
	if (!val || len < sizeof(int))
		return -EINVAL;
	memcpy(v, val, sizeof(*v));
	return 0;
}

/*
 * TCP_DEFER_ACCEPT is kept, as Linux keeps it, as a count of SYN-ACK
 * retransmissions: the first after 1 s (RFC 6298's initial RTO), each
 * interval doubling up to the largest RTO; seconds round up to the next
 * whole count, so 3 reads back as 3 but 5 as 7.
 */
static uint8_t secs_to_retrans(int secs)
{
	uint32_t step = SL_TCP_RTO_INIT_US / 1000000, max = SL_TCP_RTO_MAX_US / 1000000;
	uint32_t total = step, n = 1;

	if (secs <= 0)
		return 0;
	while ((uint32_t)secs > total && n < 255) {
		step = step * 2 > max ? max : step * 2;
		total += step;
		n++;
	}
	return (uint8_t)n;
}

static int retrans_to_secs(uint8_t n)
{
	uint32_t step = SL_TCP_RTO_INIT_US / 1000000, max = SL_TCP_RTO_MAX_US / 1000000;
	uint32_t total = n ? step : 0;

	while (n-- > 1) {
		step = step * 2 > max ? max : step * 2;
		total += step;
	}
	return (int)total;
}

int sl_tcp_open(struct sl_stack *s, struct sl_sock *so, uint32_t daddr, uint16_t dport)
{
	uint32_t src;
	int ret = 0;

	if (!(so->flags & SL_SF_BOUND) && !s->filters) {
		src = sl_tcp_src_addr(s, daddr);
		ret = src ? sl_sock_bind_connect(s, so, src, daddr, dport, sl_now(s)) : -ENETUNREACH;
	} else if (!(so->flags & SL_SF_BOUND)) {
		src = sl_sock_implicit_laddr(s, daddr);
		ret = sl_v6tok(daddr) ? sl_sock_bind(s, so, src, 0) : sl_sock_bind_conn4(s, so, src);
	} else if (s->filters && !(so->flags & SL_SF_HASHED)) {
		/* Connecting again after a failed attempt released the port
		 * (sl_tcp_done()): a kring stack reserves it again. */
		ret = sl_filter_take(s, so, so->laddr, &so->lport, false);
	}
	if (!ret)
		ret = sl_tcp_connect(s, so, daddr, dport, sl_now(s));
	return ret;
}

/* TCP_CONGESTION: the algorithms this stack runs (tcp_cc.c), by Linux's
 * names (TCP_CA_NAME_MAX bytes with the NUL). */
#define SL_TCP_CA_NAME_MAX	16

static int set_congestion(struct sl_tcp_sock *tp, const void *val, unsigned int len)
{
	char name[SL_TCP_CA_NAME_MAX] = "";

	if (!val)
		return -EFAULT;
	/* Linux: at most TCP_CA_NAME_MAX - 1 bytes, up to a NUL. */
	memcpy(name, val, len < sizeof(name) - 1 ? len : sizeof(name) - 1);
	if (strcmp(name, "cubic") && strcmp(name, "reno"))
		return -ENOENT;
	tp->tflags = !strcmp(name, "reno") ? tp->tflags | SL_TF_RENO : tp->tflags & ~SL_TF_RENO;
	/* Linux tcp_reinit_congestion_control(): the new one starts afresh. */
	tp->cc_epoch_us = 0;
	tp->cc_acc = 0;
	return 0;
}

int sl_tcp_setsockopt(struct sl_stack *s, struct sl_sock *so, int level, int name,
		      const void *val, unsigned int len)
{
	struct sl_tcp_sock *tp = &so->tcp;
	uint64_t now_us = s->lib->wheel_now_ms * 1000;
	int v, ret;

	if (level == IPPROTO_TCP && name == TCP_CONGESTION)
		return set_congestion(tp, val, len);
	/* Strings and keys the stack does not have, read before any int by
	 * Linux's do_tcp_setsockopt(): not EINVAL for a length under an
	 * int ("tls", 3 bytes), so the kernel takes the socket and answers
	 * (preload: a fallback, a live hand-off). */
	if (level == IPPROTO_TCP && (name == TCP_ULP || name == TCP_FASTOPEN_KEY))
		return -ENOPROTOOPT;
	ret = get_int(val, len, &v);
	if (ret)
		return ret;
	if (level == SOL_SOCKET && name == SO_KEEPALIVE) {
		if (v)
			so->flags |= SL_SF_KEEPALIVE;
		else
			so->flags &= ~SL_SF_KEEPALIVE;
		if (so->state >= SL_TCP_ESTABLISHED) {
			sl_tcp_keep_reset(so, now_us);
			sl_tcp_arm(s, so);
		}
		return 0;
	}
	if (level != IPPROTO_TCP)
		return -ENOPROTOOPT;
	switch (name) {
	case TCP_NODELAY:
		if (v) {
			so->flags |= SL_SF_NODELAY;
			if (so->state >= SL_TCP_ESTABLISHED)
				sl_tcp_output(s, so, now_us);
		} else {
			so->flags &= ~SL_SF_NODELAY;
		}
		return 0;
	case TCP_MAXSEG:
		if (v && (v < SL_TCP_MSS_MIN || v > 65535))
			return -EINVAL;
		/* As Linux: the MSS a connection will take; one already
		 * established keeps its own (do_tcp_setsockopt() sets
		 * user_mss alone, read when a SYN is sent or answered). */
		tp->user_mss = (uint16_t)v;
		return 0;
	case TCP_KEEPIDLE:
	case TCP_KEEPINTVL:
		if (v < 1 || v > 32767)
			return -EINVAL;
		if (name == TCP_KEEPIDLE)
			tp->keep_idle_s = (uint16_t)v;
		else
			tp->keep_intvl_s = (uint16_t)v;
		if (so->state >= SL_TCP_ESTABLISHED) {
			sl_tcp_keep_reset(so, now_us);
			sl_tcp_arm(s, so);
		}
		return 0;
	case TCP_KEEPCNT:
		if (v < 1 || v > 127)
			return -EINVAL;
		tp->keep_cnt = (uint8_t)v;
		return 0;
	case TCP_CORK:
		if (v) {
			tp->tflags |= SL_TF_CORK;
		} else {
			/* Uncorking pushes what the cork held (tcp(7)). */
			tp->tflags &= ~SL_TF_CORK;
			tp->t_cork = 0;
			if (so->state >= SL_TCP_ESTABLISHED) {
				sl_tcp_output(s, so, now_us);
				sl_tcp_arm(s, so);
			}
		}
		return 0;
	case TCP_QUICKACK:
		/* Linux __tcp_sock_set_quickack(): off enters the exchange
		 * (pingpong mode: no quick ACKs, until a delayed ACK goes
		 * alone); on leaves it, and an ACK that waits goes now if
		 * the queue is read (tcp_cleanup_rbuf() with it pushed) or
		 * more than a segment waits for it; an even value enters
		 * the exchange again after. */
		if (!v) {
			tp->tflags |= SL_TF_PINGPONG;
			return 0;
		}
		tp->tflags &= ~SL_TF_PINGPONG;
		if (tp->t_dack && (so->state == SL_TCP_ESTABLISHED ||
				   so->state == SL_TCP_CLOSE_WAIT)) {
			if (tp->rcv_nxt - tp->last_ack_sent >
				    (tp->rcv_mss ? tp->rcv_mss : tp->mss) ||
			    (!so->rxq_bytes && !so->rx_lent_bytes)) {
				sl_tcp_send_ack(s, so, now_us);
				sl_tcp_arm(s, so);
			} else {
				tp->tflags |= SL_TF_PUSHED;
			}
			if (!(v & 1))
				tp->tflags |= SL_TF_PINGPONG;
		}
		return 0;
	case TCP_SYNCNT:
		if (v < 1 || v > SL_TCP_SYNCNT_MAX)
			return -EINVAL;
		tp->syn_retries = (uint8_t)v;
		return 0;
	case TCP_DEFER_ACCEPT:
		tp->defer_accept = secs_to_retrans(v);
		return 0;
	case TCP_USER_TIMEOUT:
		if (v < 0)
			return -EINVAL;
		tp->user_timeout_ms = (uint32_t)v;
		return 0;
	case TCP_LINGER2:
		/* Linux: negative is -1 (no FIN-WAIT-2), 0 the default,
		 * capped at TCP_FIN_TIMEOUT_MAX. */
		tp->linger2_s = v < 0 ? -1 : v > SL_TCP_LINGER2_MAX_S ? SL_TCP_LINGER2_MAX_S : v;
		return 0;
	case TCP_NOTSENT_LOWAT:
		/* Linux: any int, kept unsigned (-1 reads back as -1); 0 is
		 * the sysctl's.  Its sk_write_space(): sluice_setsockopt()
		 * wakes the socket if its readiness changed. */
		tp->notsent_lowat = (uint32_t)v;
		if (v || s->tcp_notsent_lowat)
			tp->tflags |= SL_TF_LOWAT;
		else
			tp->tflags &= ~SL_TF_LOWAT;
		return 0;
	case TCP_FASTOPEN:
		/* Linux: a listener or a socket that will be one; the queue
		 * length kept at most somaxconn (fastopen_queue_tune()). */
		if (v < 0 || (so->state != SL_TCP_CLOSED && so->state != SL_TCP_LISTEN))
			return -EINVAL;
		tp->fastopen_qlen = v > SL_TCP_SOMAXCONN ? SL_TCP_SOMAXCONN : (uint32_t)v;
		return 0;
	case TCP_FASTOPEN_CONNECT:
		/* Linux: 0 or 1, EOPNOTSUPP with the client side off
		 * (net.ipv4.tcp_fastopen), and only before a connection. */
		if (v < 0 || v > 1)
			return -EINVAL;
		if (s->tcp_fastopen == 1)
			return -EOPNOTSUPP;
		if (so->state != SL_TCP_CLOSED)
			return -EINVAL;
		/* A socket never used: the kernel's, which does TFO with
		 * cookies (the preload hands it over); one bound already
		 * stays and connects as the kernel does without a cookie. */
		if (so->life & SL_LIFE_PRIVATE)
			return -ENOPROTOOPT;
		tp->fastopen_connect = (uint8_t)v;
		return 0;
	case TCP_WINDOW_CLAMP:
		/* Linux tcp_set_window_clamp(): 0 only before a connection;
		 * at least half the smallest receive buffer. */
		if (!v) {
			if (so->state != SL_TCP_CLOSED)
				return -EINVAL;
			tp->window_clamp = 0;
		} else {
			tp->window_clamp = v < SL_SO_RCVBUF_MIN / 2 ? SL_SO_RCVBUF_MIN / 2 : (uint32_t)v;
		}
		return 0;
	default:
		return -ENOPROTOOPT;
	}
}

/* Our states as Linux numbers them (include/net/tcp_states.h), for
 * TCP_INFO's tcpi_state, which programs compare with TCP_ESTABLISHED. */
static const uint8_t linux_state[] = {
	[SL_TCP_CLOSED] = 7, [SL_TCP_LISTEN] = 10, [SL_TCP_SYN_SENT] = 2,
	[SL_TCP_SYN_RECEIVED] = 3, [SL_TCP_ESTABLISHED] = 1, [SL_TCP_FIN_WAIT_1] = 4,
	[SL_TCP_FIN_WAIT_2] = 5, [SL_TCP_CLOSE_WAIT] = 8, [SL_TCP_CLOSING] = 11,
	[SL_TCP_LAST_ACK] = 9, [SL_TCP_TIME_WAIT] = 6,
};

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * TCP_INFO's tcpi_lost and tcpi_retrans, in segments, as Linux's lost_out
 * and retrans_out: of what is sent and neither acknowledged nor SACKed,
 * the segments taken for lost (RACK's, or after an RTO everything sent
 * before it, tcp_timeout_mark_lost()), and those sent again and not
 * taken for lost since (TCPCB_SACKED_RETRANS).  A walk of the send queue:
 * TCP_INFO is no hot path.
 */
static void info_lost_retrans(struct sl_stack *s, const struct sl_tcp_sock *tp, uint32_t *lost,
			      uint32_t *retrans)
{
	uint32_t steps = 0, nl = 0, nr = 0;
	bool rto = tp->undo & SL_UNDO_LOSS;

	for (uint32_t i = tp->sndq_head; sl_buf_next(s, i, &steps); i = sl_buf(s, i)->next_idx) {
		const struct sluice_buf *b = sl_buf(s, i);

		if (!(b->flags & SL_TBF_SENT) || !SEQ_LT(b->seq, tp->snd_max))
			break;
		if (b->flags & SL_TBF_SACKED)
			continue;
		if ((b->flags & SL_TBF_LOST) || (rto && SEQ_LT(b->seq, tp->recover)))
			nl++;
		if ((b->flags & SL_TBF_REXMIT) &&
		    ((b->flags & SL_TBF_RECOV) ||
		     (!(b->flags & SL_TBF_LOST) && SEQ_LT(b->seq, tp->snd_nxt))))
			nr++;
	}
	*lost = nl;
	*retrans = nr;
}

int sl_tcp_getsockopt(struct sl_stack *s, struct sl_sock *so, int level, int name, void *val,
		      unsigned int *len)
{
	struct sl_tcp_sock *tp = &so->tcp;
	int v;

	/* sluice_getsockopt() hands every option a whole buffer (256 bytes)
	 * and cuts the answer to the caller's length. */
	if (!val || !len)
		return -EINVAL;
	if (level == SOL_SOCKET && name == SO_KEEPALIVE) {
		v = !!(so->flags & SL_SF_KEEPALIVE);
	} else if (level != IPPROTO_TCP) {
		return -ENOPROTOOPT;
	} else if (name == TCP_INFO) {
		struct tcp_info ti;
		unsigned int n = *len < sizeof(ti) ? *len : sizeof(ti);
		uint32_t mss = SL_READ_ONCE(tp->mss), div = mss ? mss : 1;	/* once: a divisor */

		memset(&ti, 0, sizeof(ti));
		ti.tcpi_state = linux_state[so->state < ARRAY_LEN(linux_state) ? so->state : 0];
		ti.tcpi_rto = tp->rto_us;
		ti.tcpi_snd_mss = mss;
		ti.tcpi_rcv_mss = sl_tcp_our_mss(s, so);
		ti.tcpi_rtt = tp->srtt_us;
		ti.tcpi_rttvar = tp->mdev_us >> 2;	/* as Linux: mdev, not RTTVAR */
		ti.tcpi_snd_ssthresh = tp->ssthresh / div;
		ti.tcpi_snd_cwnd = tp->cwnd / div;
		ti.tcpi_backoff = tp->backoff;
		ti.tcpi_snd_wscale = tp->snd_wscale;
		ti.tcpi_rcv_wscale = tp->rcv_wscale;
		ti.tcpi_unacked = (tp->snd_max - tp->snd_una) / div;
		/* Linux's icsk_retransmits (RTOs since SND.UNA last moved),
		 * total_retrans (every segment sent again: RTO, fast
		 * retransmit, RACK, loss probe, SYN), lost_out, retrans_out. */
		ti.tcpi_retransmits = tp->backoff;
		ti.tcpi_total_retrans = so->retransmits;
		info_lost_retrans(s, tp, &ti.tcpi_lost, &ti.tcpi_retrans);
		memcpy(val, &ti, n);
		*len = n;
		return 0;
	} else {
		switch (name) {
		case TCP_NODELAY:
			v = !!(so->flags & SL_SF_NODELAY);
			break;
		case TCP_MAXSEG:
			v = so->state >= SL_TCP_ESTABLISHED ? tp->mss :
				(tp->user_mss ? tp->user_mss : SL_TCP_MSS_DEFAULT);
			break;
		case TCP_KEEPIDLE:
			v = tp->keep_idle_s ? tp->keep_idle_s : SL_TCP_KEEPIDLE_S;
			break;
		case TCP_KEEPINTVL:
			v = tp->keep_intvl_s ? tp->keep_intvl_s : SL_TCP_KEEPINTVL_S;
			break;
		case TCP_KEEPCNT:
			v = tp->keep_cnt ? tp->keep_cnt : SL_TCP_KEEPCNT;
			break;
		case TCP_CORK:
			v = !!(tp->tflags & SL_TF_CORK);
			break;
		case TCP_SYNCNT:
			v = tp->syn_retries ? tp->syn_retries : SL_TCP_SYN_RETRIES;
			break;
		case TCP_DEFER_ACCEPT:
			v = retrans_to_secs(tp->defer_accept);
			break;
		case TCP_QUICKACK:
			v = !(tp->tflags & SL_TF_PINGPONG);
			break;
		case TCP_USER_TIMEOUT:
			v = (int)tp->user_timeout_ms;
			break;
		case TCP_LINGER2:
			v = tp->linger2_s ? tp->linger2_s : (int)(SL_TCP_FIN_TIMEOUT_US / 1000000);
			break;
		case TCP_WINDOW_CLAMP:
			/* Unset: 0 before a connection, then what the window may
			 * reach (Linux computes its clamp at connect time). */
			v = (int)(tp->window_clamp ? tp->window_clamp :
				  so->state == SL_TCP_CLOSED || so->state == SL_TCP_LISTEN ? 0 :
				  so->rcvbuf);
			break;
		case TCP_NOTSENT_LOWAT:
			v = (int)tp->notsent_lowat;
			break;
		case TCP_FASTOPEN:
			v = (int)tp->fastopen_qlen;
			break;
		case TCP_FASTOPEN_CONNECT:
			v = tp->fastopen_connect;
			break;
		case TCP_CONGESTION: {
			char ca[SL_TCP_CA_NAME_MAX] = "cubic";

			if (tp->tflags & SL_TF_RENO)
				memcpy(ca, "reno", sizeof("reno"));
			/* Linux copies min(len, TCP_CA_NAME_MAX) bytes. */
			memcpy(val, ca, sizeof(ca));
			*len = sizeof(ca);
			return 0;
		}
		default:
			return -ENOPROTOOPT;
		}
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

/* ICMP destination unreachable quoting one of our segments (RFC 1122
 * 4.2.3.9, RFC 5927 4.1: check the quoted sequence number first). */
void sl_tcp_icmp_error(struct sl_stack *s, const struct sl_ip *q, int err,
		       const struct sl_icmp_err *ie)
{
	const struct sl_tcph *th = (const struct sl_tcph *)((const uint8_t *)q +
							    (q->ver_ihl & 0xf) * 4);
	struct sl_sock *so = sl_sock_lookup(s, SL_SOCK_TCP, q->saddr, th->sport, q->daddr,
					    th->dport);
	uint32_t seq = ntohl(th->seq);

	if (!so || so->raddr != q->daddr || so->rport != th->dport ||
	    so->state < SL_TCP_SYN_SENT)
		return;
	if (SEQ_LT(seq, so->tcp.snd_una) || SEQ_GT(seq, so->tcp.snd_max))
		return;
	/* Fragmentation needed is path-MTU news, never fatal (RFC 5927). */
	if (so->state == SL_TCP_SYN_SENT && err != EMSGSIZE) {
		/* Linux tcp_v4_err(): with IP_RECVERR the error is queued
		 * too, the quote from the TCP header on. */
		sl_sock_busy(s, so);
		sl_errq_icmp(s, so, q, err, ie, 0);
		sl_tcp_done(s, so, err);
		return;
	}
	/* Established: IP_RECVERR makes it the socket's error at once (the
	 * connection goes on); else it is only what a timeout reports. */
	if (sl_recverr(so, ie) && err != EMSGSIZE) {
		so->error = err;
		sl_sock_wake(s, so);
		sl_sock_async(s, so, SL_POLL_ERR);	/* sk_error_report() */
		return;
	}
	so->tcp.soft_err = err;
}

/*
 * Fragmentation needed for one of our segments (RFC 1191), believed as
 * Linux's tcp_v4_err() believes it (RFC 5927 4.1): only for a connection
 * (not a listener) and a quoted sequence number from SND.UNA to SND.NXT.
 * The destination's path MTU falls for every socket (sl_pmtu_update());
 * this connection's MSS follows and what is in flight goes again at the
 * new size at once, as tcp_v4_mtu_reduced() and tcp_simple_retransmit()
 * do, without a congestion response.  IP_PMTUDISC_DONT (and INTERFACE,
 * OMIT) keep the MSS.
 */
void sl_tcp_icmp_frag(struct sl_stack *s, const struct sl_ip *q, uint32_t mtu)
{
	const struct sl_tcph *th = (const struct sl_tcph *)((const uint8_t *)q +
							    (q->ver_ihl & 0xf) * 4);
	struct sl_sock *so = sl_sock_lookup(s, SL_SOCK_TCP, q->saddr, th->sport, q->daddr,
					    th->dport);
	struct sl_tcp_sock *tp;
	uint32_t seq = ntohl(th->seq), pmtu;
	int disc;

	if (!so || so->raddr != q->daddr || so->rport != th->dport ||
	    so->state < SL_TCP_SYN_SENT)
		return;
	tp = &so->tcp;
	if (SEQ_LT(seq, tp->snd_una) || SEQ_GT(seq, tp->snd_nxt)) {
		sl_count(s, SL_C_icmp_rx_oow);
		return;
	}
	sl_sock_busy(s, so);
	if (sl_v6tok(so->raddr)) {
		/* A Packet Too Big (ip6.c gives the MTU less 20, as the
		 * handles' path MTUs are kept): tcp_v6_err() takes none
		 * below 1280 and none under IPV6_PMTUDISC_INTERFACE or
		 * OMIT (ip6_sk_accept_pmtu()); tcp_v6_mtu_reduced() keeps
		 * no soft error and follows whatever IPV6_MTU_DISCOVER. */
		disc = sl_sock_pmtudisc6(so->ip6_opt);
		if (mtu + 20 < IP6_MIN_MTU_ || disc == IP_PMTUDISC_INTERFACE ||
		    disc == IP_PMTUDISC_OMIT)
			return;
		sl_pmtu_update(s, so->raddr, mtu);
		pmtu = sl_pmtu_get(s, so->raddr);
		disc = IP_PMTUDISC_WANT;
	} else {
		sl_pmtu_update(s, so->raddr, mtu);
		pmtu = sl_pmtu_get(s, so->raddr);
		disc = so->pmtudisc ? so->pmtudisc - 1 : IP_PMTUDISC_WANT;
		if (pmtu < tp->pmtu && sl_ip_df(so))
			tp->soft_err = EMSGSIZE;
	}
	if (disc == IP_PMTUDISC_DONT || disc == IP_PMTUDISC_INTERFACE ||
	    disc == IP_PMTUDISC_OMIT || pmtu >= tp->pmtu)
		return;
	sl_tcp_set_mss(s, so);
	sl_count(s, SL_C_tcp_mtu_reduced);
	if (so->state < SL_TCP_ESTABLISHED || tp->snd_una == tp->snd_nxt)
		return;
	sl_tcp_go_back(s, tp);
	sl_tcp_output(s, so, sl_now(s));
}
