/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP test fixture: a stack (10.0.0.1/24) whose link captures every frame,
 * a virtual clock, and a scripted peer (10.0.0.2:5000) whose segments are
 * built here and fed to sl_ip_input().  The test holds the stack lock for
 * its whole run, like the stack's own caller; tf_finish() closes, lets
 * every timer run out and checks that no buffer or socket leaked.
 *
 *   test (peer 10.0.0.2:5000) --tf_seg()--> sl_ip_input --> TCP core
 *   test <--tf_last()-- capture link <-- sl_ip_output <-- TCP core
 */
#ifndef SLUICE_TESTS_TCP_FIXTURE_H
#define SLUICE_TESTS_TCP_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "tcp_opts.h"
#include "tap.h"

#define TF_CAP		512
#define TF_US		"10.0.0.1"
#define TF_PEER		"10.0.0.2"
#define TF_PPORT	5000
#define TF_LPORT	80

struct tf_frame {
	uint16_t len;
	uint8_t data[2048];
};

/* A captured segment, parsed (host order). */
struct tf_seg {
	int valid, csum_ok;
	uint32_t saddr, daddr;
	uint16_t sport, dport;
	uint8_t flags;
	uint32_t seq, ack;
	uint16_t win;
	uint16_t plen;
	const uint8_t *data;
	int mss, ws, sack_ok, ts;
	uint32_t tsval, tsecr;
	int nsack;
	uint32_t sack[4][2];
};

struct tf {
	struct sl_stack *s;
	struct sl_link link;
	unsigned int n;			/* frames captured */
	struct tf_frame f[TF_CAP];
	uint32_t us, peer;		/* network order */
	uint32_t buf0, sock0;		/* for the leak check */
	int raw_tcp;			/* tf_seg*() straight to sl_tcp_input() */
	char name[32];
};

static struct tf T;
static uint64_t tf_now_us = 1000000000ull;	/* 1000 s: nothing starts at 0 */

static inline uint64_t tf_clock(void *arg)
{
	(void)arg;
	return tf_now_us;
}

/* A connection past its quick-ACK start (Linux's quick-ACK mode): data
 * came just now, its quick ACKs are spent, and the ACK timeout is
 * TCP_ATO_MIN's 40 ms, so the next segment waits for the delayed ACK. */
static inline void tf_past_quickack(struct sl_sock *so)
{
	so->tcp.quickacks = 0;
	so->tcp.ato_ms = SL_TCP_ATO_MIN_MS;
	so->tcp.lrcv_ms = (uint32_t)(tf_now_us / 1000);
}

static inline int tf_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	(void)l;
	(void)nh;
	if (T.n < TF_CAP) {
		T.f[T.n].len = sl_buf(s, idx)->len;
		memcpy(T.f[T.n].data, sl_buf_data(s, idx), sl_buf(s, idx)->len);
		T.n++;
	}
	return 0;
}

static const struct sl_link_ops tf_ops = { .name = "tcp-capture", .tx = tf_tx };

/* Socket slots of the next tf_init()'s stack. */
static uint32_t tf_max_sockets = 64;
/* Packet buffers of the next tf_init()'s stack. */
static uint32_t tf_n_bufs = 1024;

static inline void tf_init(const char *tag)
{
	struct sluice_stack_config cfg = { .n_bufs = tf_n_bufs, .max_sockets = tf_max_sockets };
	struct sluice_stack *st;
	int ret;

	memset(&T, 0, sizeof(T));
	snprintf(T.name, sizeof(T.name), "t-tcp%s-%d", tag, (int)getpid());
	sluice_stack_destroy(T.name);
	inet_pton(AF_INET, TF_US, &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	inet_pton(AF_INET, TF_US, &T.us);
	inet_pton(AF_INET, TF_PEER, &T.peer);
	ret = sluice_stack_create(T.name, &cfg, &st);
	if (ret) {
		printf("Bail out! cannot create stack %s: %d\n", T.name, ret);
		exit(1);
	}
	T.s = (struct sl_stack *)st;
	/* The window scale follows the socket's buffer, not this host's
	 * net.ipv4.tcp_rmem, unless a test sets it. */
	T.s->tcp_rmem_max = 0;
	sluice_stack_set_clock(st, tf_clock, NULL);
	T.link.ops = &tf_ops;
	T.link.mtu = 1500;
	T.s->link = &T.link;
	sl_lock(T.s);
	sl_timer_run(T.s, tf_now_us);
	T.buf0 = T.s->lib->buf_free_count;
	T.sock0 = T.s->r->sock_used;
}

/* Let ms milliseconds pass, a tick at a time, running timers. */
static inline void tf_advance_ms(uint64_t ms)
{
	while (ms--) {
		tf_now_us += 1000;
		sl_timer_run(T.s, tf_now_us);
	}
}

static inline void tf_clear(void)
{
	T.n = 0;
}

static inline struct tf_seg tf_parse(unsigned int i)
{
	struct tf_seg g;
	const uint8_t *p;
	const struct sl_ip *ip;
	const struct sl_tcph *th;
	unsigned int hl, thl, len;

	memset(&g, 0, sizeof(g));
	g.ws = -1;
	if (i >= T.n)
		return g;
	p = T.f[i].data;
	ip = (const struct sl_ip *)p;
	hl = (ip->ver_ihl & 0xf) * 4;
	if (ip->proto != IPPROTO_TCP_ || T.f[i].len < hl + 20)
		return g;
	len = ntohs(ip->tot_len) - hl;
	th = (const struct sl_tcph *)(p + hl);
	thl = (th->off >> 4) * 4;
	g.valid = 1;
	g.csum_ok = sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, 6, len), th,
					     len)) == 0 && sl_ip_csum(ip) == 0;
	g.saddr = ip->saddr;
	g.daddr = ip->daddr;
	g.sport = ntohs(th->sport);
	g.dport = ntohs(th->dport);
	g.flags = th->flags;
	g.seq = ntohl(th->seq);
	g.ack = ntohl(th->ack);
	g.win = ntohs(th->win);
	g.plen = (uint16_t)(len - thl);
	g.data = (const uint8_t *)th + thl;
	for (const uint8_t *o = (const uint8_t *)(th + 1); o < (const uint8_t *)th + thl;) {
		uint32_t v;

		if (o[0] == 0)
			break;
		if (o[0] == 1) {
			o++;
			continue;
		}
		switch (o[0]) {
		case 2:
			g.mss = o[2] << 8 | o[3];
			break;
		case 3:
			g.ws = o[2];
			break;
		case 4:
			g.sack_ok = 1;
			break;
		case 5:
			g.nsack = (o[1] - 2) / 8;
			for (int k = 0; k < g.nsack && k < 4; k++) {
				memcpy(&v, o + 2 + 8 * k, 4);
				g.sack[k][0] = ntohl(v);
				memcpy(&v, o + 6 + 8 * k, 4);
				g.sack[k][1] = ntohl(v);
			}
			break;
		case 8:
			g.ts = 1;
			memcpy(&v, o + 2, 4);
			g.tsval = ntohl(v);
			memcpy(&v, o + 6, 4);
			g.tsecr = ntohl(v);
			break;
		}
		o += o[1] ? o[1] : 1;
	}
	return g;
}

static inline struct tf_seg tf_last(void)
{
	return tf_parse(T.n ? T.n - 1 : TF_CAP);
}

/* Options a test may put in its segments. */
struct tf_opts {
	int mss, ws_on, ws, sack_ok, ts;
	uint32_t tsval, tsecr;
	int nsack;
	uint32_t sack[4][2];
};

/* Inject a segment from the peer (sport) to us (dport). */
static inline void tf_seg_full(uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq,
			       uint32_t ack, uint16_t win, const struct tf_opts *o,
			       const void *data, unsigned int dlen)
{
	uint32_t idx = sl_buf_alloc(T.s), v;
	uint8_t *p, *op;
	struct sl_ip *ip;
	struct sl_tcph *th;
	unsigned int ol = 0, tl;

	if (idx == SLUICE_IDX_NONE) {
		printf("# no buffer for an injected segment\n");
		return;
	}
	p = sl_buf_data(T.s, idx);
	ip = (struct sl_ip *)p;
	th = (struct sl_tcph *)(p + 20);
	op = (uint8_t *)(th + 1);
	if (o) {
		ol = tcp_opts_put(op, o->mss, o->ws_on, o->ws, o->sack_ok, o->ts, o->tsval,
				  o->tsecr);
		if (o->nsack) {
			op[ol++] = 1; op[ol++] = 1; op[ol++] = 5;
			op[ol++] = (uint8_t)(2 + 8 * o->nsack);
			for (int k = 0; k < o->nsack; k++) {
				v = htonl(o->sack[k][0]); memcpy(op + ol, &v, 4); ol += 4;
				v = htonl(o->sack[k][1]); memcpy(op + ol, &v, 4); ol += 4;
			}
		}
	}
	tl = 20 + ol + dlen;
	if (dlen)
		memcpy(op + ol, data, dlen);
	tcp_hdrs_put(ip, th, T.peer, T.us, sport, dport, seq, ack, flags, win, ol, tl);
	th->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, 6,
							   (uint16_t)tl), th, tl));
	sl_buf(T.s, idx)->len = (uint16_t)(20 + tl);
	/* raw_tcp: past the IPv4 checks, for segments ip.c would refuse
	 * (our own source address from the link) that TCP must survive. */
	if (T.raw_tcp)
		sl_tcp_input(T.s, idx, ip, 20, tf_now_us);
	else
		sl_ip_input(T.s, idx);
}

/* The usual case: from the peer's port to port dport, no options. */
static inline void tf_seg(uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack,
			  uint16_t win, const void *data, unsigned int dlen)
{
	tf_seg_full(TF_PPORT, dport, flags, seq, ack, win, NULL, data, dlen);
}

static inline struct sl_sock *tf_listener(uint16_t port, int backlog)
{
	struct sl_sock *so = sl_sock_alloc(T.s, SL_SOCK_TCP);

	if (!so || sl_sock_bind(T.s, so, 0, htons(port)) ||
	    sl_tcp_listen(T.s, so, backlog)) {
		printf("Bail out! cannot listen on %u\n", port);
		exit(1);
	}
	return so;
}

/* A connection accepted from listener lso: peer ISS irs, our ISS returned
 * in *iss; the peer offers options o (NULL: none). */
static inline struct sl_sock *tf_accept(struct sl_sock *lso, uint32_t irs, uint32_t *iss,
					const struct tf_opts *o, uint16_t win)
{
	struct sl_sock *c = NULL;
	struct tf_seg g;

	tf_clear();
	tf_seg_full(TF_PPORT, ntohs(lso->lport), TH_SYN_, irs, 0, win, o, NULL, 0);
	g = tf_last();
	if (!g.valid || g.flags != (TH_SYN_ | TH_ACK_))
		return NULL;
	*iss = g.seq;
	tf_seg_full(TF_PPORT, ntohs(lso->lport), TH_ACK_, irs + 1, g.seq + 1, win,
		    o && o->ts ? &(struct tf_opts){ .ts = 1, .tsval = o->tsval + 1,
						      .tsecr = g.tsval } : NULL, NULL, 0);
	if (sl_tcp_accept(T.s, lso, &c))
		return NULL;
	tf_clear();
	return c;
}

/* An actively opened connection to the peer, established: our ISS in
 * *iss, the peer's ISS irs. */
static inline struct sl_sock *tf_connect(uint32_t irs, uint32_t *iss, const struct tf_opts *o,
					 uint16_t win)
{
	struct sl_sock *so = sl_sock_alloc(T.s, SL_SOCK_TCP);
	struct tf_seg g;

	if (!so || sl_sock_bind(T.s, so, 0, 0))
		return NULL;
	tf_clear();
	if (sl_tcp_connect(T.s, so, T.peer, htons(TF_PPORT), tf_now_us) != -EINPROGRESS)
		return NULL;
	g = tf_last();
	if (!g.valid || g.flags != TH_SYN_)
		return NULL;
	*iss = g.seq;
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_SYN_ | TH_ACK_, irs, g.seq + 1, win, o,
		    NULL, 0);
	tf_clear();
	return so;
}

/* Sockets on a listener's park list, and lists headed (proto/tcp/tcp.c,
 * sl_tcp_park()): none once everything is closed. */
static inline uint32_t tf_parked(void)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < T.s->r->max_sockets; i++) {
		const struct sl_sock *so = sl_sock(T.s, i);

		if (so->type == SL_SOCK_TCP)
			n += (so->tcp.park_lso != SLUICE_IDX_NONE) +
			     (so->tcp.park_head != SLUICE_IDX_NONE);
	}
	return n;
}

/* Close what the test left, let every timer run out, check for leaks. */
static inline void tf_finish(void)
{
	for (uint32_t i = 0; i < T.s->r->max_sockets; i++) {
		struct sl_sock *so = sl_sock(T.s, i);

		if (so->type == SL_SOCK_TCP && !(so->flags & SL_SF_ORPHAN) &&
		    !(so->tcp.tflags & (SL_TF_ACCQ | SL_TF_PASSIVE)))
			sl_tcp_close(T.s, so, tf_now_us);
	}
	/* Orphans finish on their own: FIN retries, TIME-WAIT, FIN timeout. */
	for (int i = 0; i < 2000 && T.s->r->sock_used != T.sock0; i++)
		tf_advance_ms(1000);
	tap_eq(T.s->r->sock_used, T.sock0, "leak check: every socket released");
	tap_eq(T.s->lib->buf_free_count, T.buf0, "leak check: every buffer back in the pool");
	tap_eq(T.s->lib->tcp_embryos, 0, "leak check: no embryonic connection counted");
	tap_eq(tf_parked(), 0, "leak check: no socket on a listener's park list");
	sl_unlock(T.s);
	T.s->link = NULL;
	sluice_stack_close((struct sluice_stack *)T.s);
	sluice_stack_destroy(T.name);
}

static inline uint64_t tf_counter(enum sl_counter c)
{
	return sl_counter_sum(T.s, c);
}

/* The TIME-WAIT entry of so's connection, if it has one.  so's slot is
 * free once it entered TIME-WAIT (orphaned) or closed (the user's); its
 * addresses stay until the slot is used again. */
static inline struct sl_tw *tf_tw(const struct sl_sock *so)
{
	return sl_tw_find(T.s, so->laddr, so->lport, so->raddr, so->rport);
}

#endif /* SLUICE_TESTS_TCP_FIXTURE_H */
