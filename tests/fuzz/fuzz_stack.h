/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the stack fuzz targets share: one stack (10.0.0.1/24, gateway
 * 10.0.0.254) on a fake clock, a link that checks every packet the stack
 * sends, peer segments built here, snapshots of the whole region so every
 * input starts from the same state, and the invariant and leak checks.
 *
 *   fuzz input --fz_*()--> sl_eth_input / sl_ip_input --> stack
 *   fz_link_tx <-- sl_ip_output (checked: IPv4 and L4 checksums, lengths)
 *
 * The region holds offsets and indices only, so copying its bytes back
 * restores a stack exactly; the per-process handle (struct sl_stack) is
 * restored with it.  The ISN secret and the ephemeral port are fixed, so
 * one input always does the same thing.  The caller holds the stack lock
 * from fz_init() on, as the stack's own caller would.
 *
 * A broken invariant calls fz_fail(), which prints it and aborts: libFuzzer
 * records that as a crash with the input that caused it.
 */
#ifndef SLUICE_TESTS_FUZZ_STACK_H
#define SLUICE_TESTS_FUZZ_STACK_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/eth.h"
#include "api/api.h"
#include "../unit/tcp_opts.h"

#define FZ_US		"10.0.0.1"
#define FZ_PEER		"10.0.0.2"
#define FZ_GW		"10.0.0.254"

static const uint8_t fz_mac_us[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t fz_mac_peer[6] = { 0x02, 0, 0, 0, 0, 0x02 };

struct fz_snap {
	uint8_t *region;
	struct sl_stack handle;
	uint64_t now_us;
	uint32_t last_tsval;
};

struct fz {
	struct sl_stack *s;
	struct sl_link link;
	struct sl_eth_link eth;
	int use_eth;		/* output through sl_eth_tx (ARP, held packets) */
	uint32_t us, peer;	/* network order */
	uint64_t now_us;
	unsigned long tx_frames;
	uint32_t last_tsval;	/* newest TSval we sent */
	uint32_t sndbuf_hw;	/* largest SO_SNDBUF the input ever set */
	uint8_t *seen;		/* n_bufs bytes, for the buffer accounting */
	char name[32];
};

static struct fz F;

__attribute__((noreturn, format(printf, 1, 2)))
static void fz_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz invariant broken: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

static uint64_t fz_clock(void *arg)
{
	(void)arg;
	return F.now_us;
}

static uint16_t fz_l4_csum(const struct sl_ip *ip, const uint8_t *l4, unsigned int len)
{
	return sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, ip->proto,
						       (uint16_t)len), l4, len));
}

/* Remember the newest timestamp we sent, for the peer to echo. */
static void fz_note_ts(const uint8_t *th, unsigned int len)
{
	unsigned int thl = (th[12] >> 4) * 4, i = 20;

	if (thl < 20 || thl > len)
		fz_fail("sent a TCP header of %u bytes in %u", thl, len);
	while (i < thl) {
		if (th[i] == 0)
			break;
		if (th[i] == 1) {
			i++;
			continue;
		}
		if (i + 1 >= thl || th[i + 1] < 2 || i + th[i + 1] > thl)
			fz_fail("sent malformed TCP options");
		if (th[i] == 8 && th[i + 1] == 10)
			F.last_tsval = (uint32_t)th[i + 2] << 24 | th[i + 3] << 16 |
				       th[i + 4] << 8 | th[i + 5];
		i += th[i + 1];
	}
}

/* Every IPv4 packet the stack puts on a link must be well formed. */
static void fz_check_out(const uint8_t *p, unsigned int len)
{
	const struct sl_ip *ip = (const struct sl_ip *)p;
	unsigned int hl, tot;

	if (len < sizeof(*ip) || ip->ver_ihl != 0x45)
		fz_fail("sent a packet of %u bytes, header %#x", len, len ? p[0] : 0);
	hl = 20;
	tot = ntohs(ip->tot_len);
	if (tot != len || tot > F.link.mtu)
		fz_fail("sent tot_len %u in a frame of %u (mtu %u)", tot, len, F.link.mtu);
	if (sl_ip_csum(ip) != 0)
		fz_fail("sent a bad IPv4 header checksum");
	if (ip->saddr != F.us)
		fz_fail("sent from a source that is not ours: %08x", ntohl(ip->saddr));
	switch (ip->proto) {
	case IPPROTO_TCP_:
		if (tot - hl < 20 || fz_l4_csum(ip, p + hl, tot - hl) != 0)
			fz_fail("sent a TCP segment with a bad length or checksum");
		fz_note_ts(p + hl, tot - hl);
		break;
	case IPPROTO_UDP_:
		if (tot - hl < 8)
			fz_fail("sent a short UDP datagram");
		if ((p[hl + 6] | p[hl + 7]) && fz_l4_csum(ip, p + hl, tot - hl) != 0)
			fz_fail("sent a UDP datagram with a bad checksum");
		break;
	case IPPROTO_ICMP_:
		if (tot - hl < 8 || sl_csum_fold(sl_csum_add(0, p + hl, tot - hl)) != 0)
			fz_fail("sent an ICMP message with a bad length or checksum");
		break;
	default:
		fz_fail("sent protocol %u", ip->proto);
	}
}

static int fz_xmit(struct sl_link *l, const void *frame, size_t len)
{
	const uint8_t *f = frame;

	(void)l;
	if (len < ETH_HLEN_ || memcmp(f + 6, fz_mac_us, 6))
		fz_fail("sent an Ethernet frame of %zu bytes not from our address", len);
	if (f[12] == 0x08 && f[13] == 0x00)
		fz_check_out(f + ETH_HLEN_, (unsigned int)(len - ETH_HLEN_));
	else if (!(f[12] == 0x08 && f[13] == 0x06) || len < ETH_HLEN_ + 28)
		fz_fail("sent ethertype %02x%02x, %zu bytes", f[12], f[13], len);
	F.tx_frames++;
	return 0;
}

static int fz_link_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	if (!nh)
		fz_fail("sent to next hop 0.0.0.0");
	if (F.use_eth)
		return sl_eth_tx(s, &F.eth, idx, nh);
	(void)l;
	fz_check_out(sl_buf_data(s, idx), sl_buf(s, idx)->len);
	F.tx_frames++;
	return 0;
}

static const struct sl_link_ops fz_link_ops = { .name = "fuzz", .tx = fz_link_tx };

/* The stack, locked, with nothing in it yet. */
static void fz_init(const char *tag, int use_eth)
{
	struct sluice_stack_config cfg = { .n_bufs = 512, .max_sockets = 48 };
	struct sluice_stack *st;
	int ret;

	setenv("SLUICE_SHM", "1", 1);
	memset(&F, 0, sizeof(F));
	F.now_us = 1000000000ull;	/* 1000 s: nothing starts at 0 */
	F.use_eth = use_eth;
	snprintf(F.name, sizeof(F.name), "fz-%s-%d", tag, (int)getpid());
	sluice_stack_destroy(F.name);
	inet_pton(AF_INET, FZ_US, &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	inet_pton(AF_INET, FZ_GW, &cfg.ip_gateway);
	memcpy(cfg.mac, fz_mac_us, 6);
	inet_pton(AF_INET, FZ_US, &F.us);
	inet_pton(AF_INET, FZ_PEER, &F.peer);
	ret = sluice_stack_create(F.name, &cfg, &st);
	if (ret) {
		fprintf(stderr, "cannot create stack %s: %d\n", F.name, ret);
		exit(1);
	}
	/* The region stays mapped; its name is not needed any more. */
	sluice_stack_destroy(F.name);
	F.s = (struct sl_stack *)st;
	sluice_stack_set_clock(st, fz_clock, NULL);
	F.link.ops = &fz_link_ops;
	F.link.mtu = 1500;
	F.eth.link = &F.link;
	F.eth.xmit = fz_xmit;
	F.s->link = &F.link;
	F.seen = calloc(F.s->r->n_bufs, 1);
	if (!F.seen)
		abort();
	sl_lock(F.s);
	/* Deterministic: a fixed ISN key, so fixed ephemeral ports. */
	F.s->lib->tcp_isn_secret[0] = 0x0123456789abcdefull;
	F.s->lib->tcp_isn_secret[1] = 0xfedcba9876543210ull;
	F.s->lib->port_seq = 0;
	memset(F.s->lib->port_perturb, 0, sizeof(F.s->lib->port_perturb));
	sl_timer_rebase(F.s, F.now_us / 1000);
	sl_timer_run(F.s, F.now_us);
}

static void fz_snap_take(struct fz_snap *sn)
{
	sn->region = malloc(F.s->size);
	if (!sn->region)
		abort();
	memcpy(sn->region, F.s->base, F.s->size);
	sn->handle = *F.s;
	sn->now_us = F.now_us;
	sn->last_tsval = F.last_tsval;
}

static void fz_snap_restore(const struct fz_snap *sn)
{
	memcpy(F.s->base, sn->region, F.s->size);
	*F.s = sn->handle;
	F.now_us = sn->now_us;
	F.last_tsval = sn->last_tsval;
	F.sndbuf_hw = 0;
}

/* Run the timers up to now. */
static void fz_timers(void)
{
	unsigned int budget = 256;

	sl_timer_run(F.s, F.now_us);
	sl_stack_drain_loopback(F.s, &budget);
	if (F.use_eth)
		sl_eth_timer(F.s, &F.eth);
}

static void fz_advance_ms(uint64_t ms)
{
	/* A tick at a time for short steps, so delayed ACKs and RTOs fire
	 * when they are due; longer steps jump (the wheel visits every slot). */
	if (ms <= 50) {
		while (ms--) {
			F.now_us += 1000;
			sl_timer_run(F.s, F.now_us);
		}
	} else {
		F.now_us += ms * 1000;
	}
	fz_timers();
}

/* ---- Peer segments -------------------------------------------------- */

struct fz_tcp_opts {
	const uint8_t *raw;	/* raw option bytes, used as they are */
	unsigned int raw_len;
	int mss, ws_on, ws, sack_ok, ts;
	uint32_t tsval, tsecr;
};

/* Build an IPv4/TCP segment from saddr:sport to us:dport into buffer idx. */
static void fz_build_tcp(uint32_t idx, uint32_t saddr, uint16_t sport, uint16_t dport,
			 uint8_t flags, uint32_t seq, uint32_t ack, uint16_t win,
			 const struct fz_tcp_opts *o, const uint8_t *data, unsigned int dlen,
			 int bad_csum)
{
	uint8_t *p = sl_buf_data(F.s, idx), *op;
	struct sl_ip *ip = (struct sl_ip *)p;
	struct sl_tcph *th = (struct sl_tcph *)(p + 20);
	unsigned int ol = 0, tl, cap = F.s->r->buf_size - SL_HEADROOM - 60;

	op = (uint8_t *)(th + 1);
	if (o && o->raw) {
		ol = o->raw_len > 40 ? 40 : o->raw_len;
		memcpy(op, o->raw, ol);
		while (ol % 4)
			op[ol++] = 0;
	} else if (o) {
		ol = tcp_opts_put(op, o->mss, o->ws_on, o->ws, o->sack_ok, o->ts, o->tsval,
				  o->tsecr);
	}
	if (dlen > cap)
		dlen = cap;
	tl = 20 + ol + dlen;
	if (dlen)
		memcpy(op + ol, data, dlen);
	tcp_hdrs_put(ip, th, saddr, F.us, sport, dport, seq, ack, flags, win, ol, tl);
	th->csum = fz_l4_csum(ip, (const uint8_t *)th, tl);
	if (bad_csum)
		th->csum ^= 0x5a5a;
	sl_buf(F.s, idx)->len = (uint16_t)(20 + tl);
}

/* A segment from the peer, through the IPv4 input. */
static void fz_seg(uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack,
		   uint16_t win, const struct fz_tcp_opts *o, const uint8_t *data,
		   unsigned int dlen, int bad_csum)
{
	uint32_t idx = sl_buf_alloc(F.s);

	if (idx == SLUICE_IDX_NONE)
		return;
	fz_build_tcp(idx, F.peer, sport, dport, flags, seq, ack, win, o, data, dlen, bad_csum);
	sl_ip_input(F.s, idx);
}

static struct sl_sock *fz_find(uint16_t lport, uint16_t rport)
{
	return sl_sock_lookup(F.s, SL_SOCK_TCP, F.us, htons(lport), F.peer, htons(rport));
}

/* ---- Invariants ----------------------------------------------------- */

static void fz_mark_chain(uint32_t idx, const char *what, uint32_t *count)
{
	const struct sluice_region *r = F.s->r;
	uint32_t n = 0;

	while (idx != SLUICE_IDX_NONE) {
		if (idx >= r->n_bufs)
			fz_fail("%s: buffer index %u outside the pool", what, idx);
		if (F.seen[idx])
			fz_fail("%s: buffer %u is also on another queue (or twice on this one)",
				what, idx);
		F.seen[idx] = 1;
		if (++n > r->n_bufs)
			fz_fail("%s: a loop", what);
		(*count)++;
		idx = sl_buf(F.s, idx)->next_idx;
	}
}

static void fz_check_tcp(const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;

	if (so->state > SL_TCP_TIME_WAIT)
		fz_fail("socket %u: state %u", so->idx, so->state);
	if (so->state < SL_TCP_ESTABLISHED || so->state == SL_TCP_TIME_WAIT)
		return;
	if (!SEQ_LEQ(tp->snd_una, tp->snd_nxt) || !SEQ_LEQ(tp->snd_nxt, tp->snd_max) ||
	    !SEQ_LEQ(tp->snd_max, tp->snd_end + 1))
		fz_fail("socket %u (state %u): una %u nxt %u max %u end %u", so->idx, so->state,
			tp->snd_una, tp->snd_nxt, tp->snd_max, tp->snd_end);
	/* SO_SNDBUF may shrink below what is queued; never send() past it. */
	if (tp->sndq_bytes > so->sndbuf && tp->sndq_bytes > F.sndbuf_hw)
		fz_fail("socket %u: %u bytes queued to send, sndbuf %u", so->idx,
			tp->sndq_bytes, so->sndbuf);
	if (tp->ooo_count > SL_TCP_OOO_MAX)
		fz_fail("socket %u: %u out-of-order buffers", so->idx, tp->ooo_count);
	/* The least: a black hole's floor (tcp_mtu_probe_floor) less the
	 * timestamp option. */
	if (tp->mss < SL_TCP_MTU_PROBE_FLOOR - 12 || tp->mss > 65535 - 40)
		fz_fail("socket %u: mss %u", so->idx, tp->mss);
	if (tp->snd_wscale > SL_TCP_WSCALE_MAX || tp->rcv_wscale > SL_TCP_WSCALE_MAX)
		fz_fail("socket %u: window scale %u/%u", so->idx, tp->snd_wscale, tp->rcv_wscale);
	if (tp->rto_us < SL_TCP_RTO_MIN_US || tp->rto_us > SL_TCP_RTO_MAX_US)
		fz_fail("socket %u: rto %u us", so->idx, tp->rto_us);
	if (!tp->cwnd)
		fz_fail("socket %u: cwnd 0", so->idx);
}

/*
 * Park lists (proto/tcp/tcp.c, sl_tcp_park()): each listener's list runs
 * head to tail by park_next, each back link names the one before, every
 * socket on it names that listener; a socket that names a listener is on
 * its list; a socket that is not a listener heads none.
 */
static void fz_check_park(void)
{
	const struct sluice_region *r = F.s->r;
	uint32_t named = 0, linked = 0;

	for (uint32_t i = 0; i < r->max_sockets; i++) {
		const struct sl_sock *so = sl_sock(F.s, i);
		uint32_t prev = SLUICE_IDX_NONE, n = 0;

		if (so->type != SL_SOCK_TCP)
			continue;
		if (so->tcp.park_lso != SLUICE_IDX_NONE)
			named++;
		if (so->state != SL_TCP_LISTEN) {
			if (so->tcp.park_head != SLUICE_IDX_NONE || so->tcp.park_tail != SLUICE_IDX_NONE)
				fz_fail("socket %u (state %u) heads a park list", i, so->state);
			continue;
		}
		for (uint32_t j = so->tcp.park_head; j != SLUICE_IDX_NONE;
		     j = sl_sock(F.s, j)->tcp.park_next) {
			const struct sl_sock *c = sl_sock(F.s, j);

			if (j >= r->max_sockets || ++n > r->max_sockets)
				fz_fail("listener %u: park list broken at %u", i, j);
			if (c->type != SL_SOCK_TCP || c->tcp.park_lso != i || c->tcp.park_prev != prev)
				fz_fail("listener %u: parked socket %u names %u, back %u (want %u)", i,
					j, c->tcp.park_lso, c->tcp.park_prev, prev);
			prev = j;
		}
		if (so->tcp.park_tail != prev)
			fz_fail("listener %u: park tail %u, list ends at %u", i, so->tcp.park_tail, prev);
		linked += n;
	}
	if (named != linked)
		fz_fail("%u sockets name a listener they wait on, %u are on its list", named, linked);
}

/*
 * Every buffer is in exactly one place: the free list, a socket's receive,
 * send or out-of-order queue, a packet held for ARP, the loopback queue.
 * Socket counts and the embryo count agree with the table.
 */
static void fz_check(void)
{
	const struct sluice_region *r = F.s->r;
	uint32_t held = 0, nfree = 0, used = 0, embryos = 0;

	memset(F.seen, 0, r->n_bufs);
	fz_mark_chain(F.s->lib->buf_free_idx, "free list", &nfree);
	if (nfree != F.s->lib->buf_free_count)
		fz_fail("free list holds %u buffers, buf_free_count says %u", nfree,
			F.s->lib->buf_free_count);
	fz_mark_chain(F.s->lib->lo_head, "loopback queue", &held);
	for (int i = 0; i < SL_NEIGH_MAX; i++) {
		const struct sl_neigh *n = &F.s->lib->neigh[i];

		if (n->hold_idx == SLUICE_IDX_NONE)
			continue;
		if (n->state != SL_NEIGH_PENDING)
			fz_fail("neighbour %d holds a packet in state %u", i, n->state);
		fz_mark_chain(n->hold_idx, "neighbour's waiting packets", &held);
	}
	for (int i = 0; i < SL_NEIGH_MAX; i++) {
		const struct sl_neigh6 *n = &F.s->lib->neigh6[i];

		if (n->hold_idx == SLUICE_IDX_NONE)
			continue;
		if (n->state != SL_ND_INCOMPLETE)
			fz_fail("IPv6 neighbour %d holds a packet in state %u", i, n->state);
		fz_mark_chain(n->hold_idx, "IPv6 neighbour's waiting packets", &held);
	}
	/* Fragments waiting for the rest of their datagram (proto/ip.c). */
	for (unsigned int i = 0; i < SL_FRAGQ_N; i++) {
		const struct sl_fragq *q = &F.s->lib->fragq[i];
		uint32_t fb = 0;

		if (!q->daddr)
			continue;
		fz_mark_chain(q->head, "reassembly queue", &fb);
		if (fb != q->bufs)
			fz_fail("reassembly queue %u: %u buffers, bufs says %u", i, fb, q->bufs);
		held += fb;
	}
	for (uint32_t i = 0; i < r->max_sockets; i++) {
		const struct sl_sock *so = sl_sock(F.s, i);
		uint32_t rx = 0;

		if (so->type == SL_SOCK_FREE)
			continue;
		if (so->type == SL_SOCK_RESERVED) {
			/* The pool socket() takes from (proto/sock.c): held by
			 * ready[], owning nothing, not counted in sock_used. */
			bool pooled = false;

			for (unsigned int k = 0; k < SL_READY_N; k++)
				pooled |= (uint32_t)F.s->lib->ready[k] == i;
			if (!pooled)
				fz_fail("socket %u: reserved, but not in the pool", i);
			if (so->rxq_head != SLUICE_IDX_NONE || so->wheel_due_ms)
				fz_fail("socket %u: reserved, but holds buffers or a timer", i);
			continue;
		}
		used++;
		if (so->type != SL_SOCK_UDP && so->type != SL_SOCK_TCP)
			fz_fail("socket %u: type %u", i, so->type);
		fz_mark_chain(so->rxq_head, "receive queue", &rx);
		if (rx != so->rxq_count)
			fz_fail("socket %u: %u buffers on the receive queue, rxq_count %u", i, rx,
				so->rxq_count);
		held += rx;
		if (so->type != SL_SOCK_TCP)
			continue;
		if (so->tcp.tflags & SL_TF_EMBRYO)
			embryos++;
		if (so->state != SL_TCP_LISTEN) {
			uint32_t ooo = 0;

			fz_mark_chain(so->tcp.sndq_head, "send queue", &held);
			fz_mark_chain(so->tcp.ooo_head, "out-of-order queue", &ooo);
			if (ooo != so->tcp.ooo_count)
				fz_fail("socket %u: %u out-of-order buffers, ooo_count %u", i, ooo,
					so->tcp.ooo_count);
			held += ooo;
		}
		fz_check_tcp(so);
	}
	if (held + nfree != r->n_bufs)
		fz_fail("buffers: %u free + %u held of %u: %u lost", nfree, held, r->n_bufs,
			r->n_bufs - held - nfree);
	if (used != r->sock_used)
		fz_fail("%u sockets in use, sock_used says %u", used, r->sock_used);
	if (embryos != F.s->lib->tcp_embryos)
		fz_fail("%u embryonic connections, tcp_embryos says %u", embryos, F.s->lib->tcp_embryos);
	fz_check_park();
}

/* Close everything, let every timer run out: nothing may be left. */
static void fz_finish(void)
{
	struct sluice_region *r = F.s->r;
	int i;

	for (uint32_t k = 0; k < r->max_sockets; k++) {
		struct sl_sock *so = sl_sock(F.s, k);

		if (so->type == SL_SOCK_UDP)
			sl_sock_free(F.s, so);
		else if (so->type == SL_SOCK_TCP && !(so->flags & SL_SF_ORPHAN) &&
			 !(so->tcp.tflags & (SL_TF_ACCQ | SL_TF_PASSIVE)))
			sl_tcp_close(F.s, so, F.now_us);
	}
	fz_check();
	/* Jump from deadline to deadline; at least a second, for ARP. */
	for (i = 0; i < 400; i++) {
		uint64_t due = 0;
		bool pending = false;

		for (uint32_t k = 0; k < r->max_sockets; k++) {
			const struct sl_sock *so = sl_sock(F.s, k);

			if (so->type != SL_SOCK_FREE && so->wheel_due_ms &&
			    (!due || so->wheel_due_ms < due))
				due = so->wheel_due_ms;
		}
		for (int n = 0; n < SL_NEIGH_MAX; n++)
			pending |= F.s->lib->neigh[n].hold_idx != SLUICE_IDX_NONE ||
				   F.s->lib->neigh6[n].hold_idx != SLUICE_IDX_NONE;
		if (r->sock_used == 0 && !pending)
			break;
		if (!due && !pending)
			break;
		if (due && due * 1000 > F.now_us)
			F.now_us = due * 1000;
		else
			F.now_us += 1000;
		if (pending && !due)
			F.now_us += 1000000;
		fz_timers();
	}
	if (r->sock_used != 0)
		fz_fail("leak: %u sockets left after every timer ran out (%d steps)",
			r->sock_used, i);
	for (int n = 0; n < SL_NEIGH_MAX; n++)
		if (F.s->lib->neigh[n].hold_idx != SLUICE_IDX_NONE ||
		    F.s->lib->neigh6[n].hold_idx != SLUICE_IDX_NONE)
			fz_fail("leak: neighbour %d still holds a packet", n);
	if (F.s->lib->lo_head != SLUICE_IDX_NONE)
		fz_fail("leak: packets left on the loopback queue");
	if (F.s->lib->buf_free_count != r->n_bufs)
		fz_fail("leak: %u of %u buffers back in the pool", F.s->lib->buf_free_count, r->n_bufs);
	if (F.s->lib->tcp_embryos)
		fz_fail("leak: %u embryonic connections counted", F.s->lib->tcp_embryos);
	fz_check();
}

#endif /* SLUICE_TESTS_FUZZ_STACK_H */
