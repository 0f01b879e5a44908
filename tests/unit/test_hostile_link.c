// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lossy and hostile links (issue 7), one named test per item, each
 * printing its figures as TAP diagnostics (tests/README.md, "Lossy and
 * hostile links"):
 * long transfers through every fault of the loop link, a SYN flood, an
 * ACK flood with bad sequence numbers, blind RST and data injection
 * (RFC 5961), a tiny MSS, a zero window held for 30 minutes, and a peer
 * that never reads.  Two harnesses, both on virtual time:
 *
 *   netsim.h:      stack A 10.9.0.1 <== loop link (faults) ==> stack B 10.9.0.2
 *                  (+ a shim on a link that looks at every segment sent,
 *                   + forged segments put straight into a stack's input)
 *   tcp_fixture.h: scripted peer 10.0.0.2:5000 --> stack 10.0.0.1 --> capture
 */
#include "netsim.h"
#include "tcp_fixture.h"

#define MIB (1024u * 1024u)

/* ---- A shim on a stack's link: sees every TCP segment it sends ------ */

struct pseg {
	bool tcp;
	uint8_t flags;
	uint16_t sport, dport, win, plen;
	uint32_t seq, ack;
};

struct shim {
	struct sl_link link;
	struct sl_link *inner;
	struct sl_stack *s;
	void (*hook)(struct shim *sh, const struct pseg *g);
	uint64_t segs, pure_acks, max_plen;
};

static struct pseg parse_pkt(const uint8_t *p, unsigned int len)
{
	const struct sl_ip *ip = (const struct sl_ip *)p;
	const struct sl_tcph *th;
	unsigned int hl = (ip->ver_ihl & 0xf) * 4, tl;
	struct pseg g = { 0 };

	if (len < 40 || ip->proto != IPPROTO_TCP_ || len < hl + 20)
		return g;
	th = (const struct sl_tcph *)(p + hl);
	tl = ntohs(ip->tot_len) - hl;
	g.tcp = true;
	g.flags = th->flags;
	g.sport = ntohs(th->sport);
	g.dport = ntohs(th->dport);
	g.seq = ntohl(th->seq);
	g.ack = ntohl(th->ack);
	g.win = ntohs(th->win);
	g.plen = (uint16_t)(tl - (th->off >> 4) * 4);
	return g;
}

static int shim_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct shim *sh = (struct shim *)l;
	struct pseg g = parse_pkt(sl_buf_data(s, idx), sl_buf(s, idx)->len);

	if (g.tcp) {
		sh->segs++;
		if (g.plen > sh->max_plen)
			sh->max_plen = g.plen;
		if (!g.plen && g.flags == TH_ACK_)
			sh->pure_acks++;
		if (sh->hook)
			sh->hook(sh, &g);
	}
	return sh->inner->ops->tx(sh->inner, s, idx, nh);
}

static int shim_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	struct shim *sh = (struct shim *)l;

	return sh->inner->ops->rx(sh->inner, s, budget);
}

static const struct sl_link_ops shim_ops = { .name = "shim", .tx = shim_tx, .rx = shim_rx };

static void shim_on(struct shim *sh, struct sl_stack *s)
{
	memset(sh, 0, sizeof(*sh));
	sh->inner = s->link;
	sh->s = s;
	sh->link.ops = &shim_ops;
	sh->link.mtu = s->link->mtu;
	s->link = &sh->link;
}

static void shim_off(struct shim *sh)
{
	sh->s->link = sh->inner;
}

/* ---- A pair of stacks over the loop link ----------------------------- */

struct pair {
	struct sl_stack *a, *b;
	uint32_t freea, freeb;
	int l;				/* B's listener on port 80 */
	struct sockaddr_in srv;
};

static void pair_up(struct pair *p, const char *tag, const struct sluice_loop_faults *f)
{
	char ta[16], tb[16];

	snprintf(ta, sizeof(ta), "%sA", tag);
	snprintf(tb, sizeof(tb), "%sB", tag);
	p->a = fx_stack(ta, "10.9.0.1", NULL);
	p->b = fx_stack(tb, "10.9.0.2", NULL);
	p->freea = p->a->lib->buf_free_count;
	p->freeb = p->b->lib->buf_free_count;
	vnow = 1000000;
	sluice_stack_set_clock(ST(p->a), vclock, NULL);
	sluice_stack_set_clock(ST(p->b), vclock, NULL);
	sluice_link_loop(ST(p->a), ST(p->b), f);
	p->srv = fx_addr("10.9.0.2", 80);
	p->l = sluice_socket(ST(p->b), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(ST(p->b), p->l, &p->srv);
	sluice_listen(ST(p->b), p->l, 128);
}

/* A connection A -> B:80, established and accepted (1 ms steps, at most
 * 10 s); sa/sb get the stack and socket. */
static bool pair_connect(struct pair *p, struct side *sa, struct side *sb, int sndbuf)
{
	sa->s = p->a;
	sb->s = p->b;
	sa->sd = sluice_socket(ST(p->a), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (sndbuf)
		sluice_setsockopt(ST(p->a), sa->sd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (sluice_connect(ST(p->a), sa->sd, &p->srv) != -EINPROGRESS)
		return false;
	sb->sd = -1;
	for (int i = 0; i < 10000 && sb->sd < 0; i++) {
		ns_step(p->a, p->b, 1000);
		sb->sd = sluice_accept(ST(p->b), p->l, NULL);
	}
	return sb->sd >= 0;
}

/* Close the listener, let 5 minutes pass, check nothing leaked, free. */
static void pair_down(struct pair *p, const char *what)
{
	sluice_close(ST(p->b), p->l);
	for (int i = 0; i < 3000; i++)
		ns_step(p->a, p->b, 100000);
	if (!tap_ok(ns_clean(p->a, p->freea) && ns_clean(p->b, p->freeb),
		    "%s: leak check: every socket and buffer back on both stacks", what)) {
		printf("#   sockets %u %u, buffers missing %d %d\n", p->a->r->sock_used,
		       p->b->r->sock_used, (int)(p->freea - p->a->lib->buf_free_count),
		       (int)(p->freeb - p->b->lib->buf_free_count));
		ns_dump_sockets(p->a, 'a');
		ns_dump_sockets(p->b, 'b');
	}
	p->a->link->ops->close(p->a->link);
	p->b->link->ops->close(p->b->link);
	fx_destroy(p->a);
	fx_destroy(p->b);
}

/* Put a forged TCP segment into stack s's input, as if from its link. */
static void forge_ts(struct sl_stack *s, uint32_t saddr, uint32_t daddr, uint16_t sport,
		     uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t win,
		     const uint32_t *tsval, const void *data, unsigned int dlen)
{
	uint8_t pkt[1600];
	struct sl_ip *ip = (struct sl_ip *)pkt;
	struct sl_tcph *th = (struct sl_tcph *)(pkt + 20);
	unsigned int ol = tsval ? tcp_opts_put((uint8_t *)(th + 1), 0, 0, 0, 0, 1, *tsval, 0) : 0;
	unsigned int tl = 20 + ol + dlen;

	tcp_hdrs_put(ip, th, saddr, daddr, sport, dport, seq, ack, flags, win, ol, tl);
	if (dlen)
		memcpy((uint8_t *)(th + 1) + ol, data, dlen);
	th->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(saddr, daddr, 6, (uint16_t)tl), th, tl));
	fx_input(s, pkt, 20 + tl);
}

static void forge(struct sl_stack *s, uint32_t saddr, uint32_t daddr, uint16_t sport,
		  uint16_t dport, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t win,
		  const void *data, unsigned int dlen)
{
	forge_ts(s, saddr, daddr, sport, dport, flags, seq, ack, win, NULL, data, dlen);
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t sndq_buffers(struct sl_stack *s, const struct sl_sock *so)
{
	uint32_t n = 0;

	for (uint32_t i = so->tcp.sndq_head; i < s->r->n_bufs && n <= s->r->n_bufs;
	     i = sl_buf(s, i)->next_idx)
		n++;
	return n;
}

/* ---- 1. Long transfers through every fault ------------------------- */

static void test_long_transfer_faults(void)
{
	/* Every fault at once, each at a rate a bad real link shows. */
	const struct sluice_loop_faults f = {
		.loss_ppm = 10000, .dup_ppm = 5000, .reorder_ppm = 10000,
		.corrupt_ppm = 5000, .delay_us = 1000,
	};
	struct ns_result r, sum = { 0 };
	const size_t each = 4 * MIB;
	unsigned int ok = 0, seeds = 4;

	for (unsigned int i = 0; i < seeds; i++) {
		uint64_t seed = 7000 + i;

		ok += ns_transfer(seed, &f, each, each, "long transfer, all faults", &r);
		printf("# seed %llu: %zu bytes each way in %llu ms (virtual); wire: %llu frames,"
		       " %llu lost, %llu duplicated, %llu reordered, %llu corrupted, %llu dropped"
		       " full; retransmits %llu + %llu (RTOs %llu + %llu); corrupt segments"
		       " refused %llu + %llu\n", (unsigned long long)seed, each,
		       (unsigned long long)r.ms, (unsigned long long)r.loop.frames,
		       (unsigned long long)r.loop.lost, (unsigned long long)r.loop.duplicated,
		       (unsigned long long)r.loop.reordered, (unsigned long long)r.loop.corrupted,
		       (unsigned long long)r.loop.dropped_full, (unsigned long long)r.rexmt_a,
		       (unsigned long long)r.rexmt_b, (unsigned long long)r.rto_a,
		       (unsigned long long)r.rto_b, (unsigned long long)r.bad_a,
		       (unsigned long long)r.bad_b);
		sum.loop.frames += r.loop.frames;
		sum.loop.lost += r.loop.lost;
		sum.loop.duplicated += r.loop.duplicated;
		sum.loop.reordered += r.loop.reordered;
		sum.loop.corrupted += r.loop.corrupted;
		sum.rexmt_a += r.rexmt_a + r.rexmt_b;
		sum.bad_a += r.bad_a + r.bad_b;
	}
	printf("# total: %zu MiB byte-exact over %u seeds; %llu frames, %llu lost, %llu"
	       " duplicated, %llu reordered, %llu corrupted; %llu retransmits\n",
	       2 * each * seeds / MIB, seeds, (unsigned long long)sum.loop.frames,
	       (unsigned long long)sum.loop.lost, (unsigned long long)sum.loop.duplicated,
	       (unsigned long long)sum.loop.reordered, (unsigned long long)sum.loop.corrupted,
	       (unsigned long long)sum.rexmt_a);
	tap_eq(ok, seeds, "test_long_transfer_faults: every seed's transfer byte-exact both ways");
	tap_ok(sum.loop.lost && sum.loop.duplicated && sum.loop.reordered && sum.loop.corrupted,
	       "test_long_transfer_faults: every kind of fault was injected");
	tap_ok(sum.bad_a > 0 && sum.rexmt_a >= sum.loop.lost / 4,
	       "test_long_transfer_faults: corruption was caught by checksums (%llu) and losses"
	       " repaired by retransmission (%llu)", (unsigned long long)sum.bad_a,
	       (unsigned long long)sum.rexmt_a);
}

/* ---- 2. SYN flood ---------------------------------------------------- */

/*
 * Spoofed SYNs from random sources of B's subnet (no such hosts: B's
 * SYN-ACKs reach A, which drops them as not its own, so no RST ever
 * frees an embryo) at B's listener, 10 a millisecond for 2 s, while a
 * connection made before the flood transfers both ways and a new one is
 * attempted half a second in.  The flood takes at most sl_tcp_synq_cap()
 * embryos (RFC 4987 3.1/3.2); every other SYN is answered with a SYN
 * cookie (RFC 4987 3.6) and leaves nothing, so the new connection gets in
 * at once, on a cookie, during the flood.  (Before cookies it got in only
 * once the flood's embryos had timed out, 63.5 s on.)
 */
static void test_syn_flood(void)
{
	const struct sluice_loop_faults clean = { .delay_us = 500 };
	const unsigned int flood_ms = 2000, per_ms = 10;
	struct side sa = { 0 }, sb = { 0 }, sa2 = { 0 }, sb2 = { 0 };
	uint32_t cap, socks0, max_emb = 0, max_socks = 0, min_free = UINT32_MAX, srcbase;
	uint64_t t_conn2 = 0, t_start, t_conn1_done = 0, injected = 0, drop0;
	struct pair p;
	bool ok;

	rng_state = 4987;
	pair_up(&p, "hsyn", &clean);
	ok = pair_connect(&p, &sa, &sb, 0);
	tap_ok(ok, "test_syn_flood: a connection made before the flood");
	side_pair(&sa, &sb, 11, 0, 0);
	sa.no_shut = sb.no_shut = true;	/* idle until the flood is on */
	cap = sl_tcp_synq_cap(p.b);
	socks0 = p.b->r->sock_used;
	drop0 = fx_counter(p.b, "tcp_syncookies_sent");
	inet_pton(AF_INET, "10.9.0.0", &srcbase);
	sa2.sd = sb2.sd = -1;
	t_start = vnow;
	for (uint64_t ms = 0; ms < 200000; ms++) {
		if (ms < flood_ms) {
			for (unsigned int k = 0; k < per_ms; k++) {
				uint64_t r = rnd();
				uint32_t src = htonl(ntohl(srcbase) + 3 + (uint32_t)(r % 250));

				forge(p.b, src, p.srv.sin_addr.s_addr, (uint16_t)(1024 + (r >> 8) % 64000),
				      80, TH_SYN_, (uint32_t)(r >> 32), 0, 65535, NULL, 0);
				injected++;
			}
		}
		if (ms == 100) {
			side_pair(&sa, &sb, 11, 8 * MIB, 8 * MIB);
			sa.no_shut = sb.no_shut = false;
		}
		if (ms == 500) {
			sa2.s = p.a;
			sb2.s = p.b;
			sa2.sd = sluice_socket(ST(p.a), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
			sluice_connect(ST(p.a), sa2.sd, &p.srv);
			side_pair(&sa2, &sb2, 12, 65536, 65536);
		}
		ns_step(p.a, p.b, 0);
		for (int k = 0; k < 2; k++) {
			int sd = sluice_accept(ST(p.b), p.l, NULL);

			if (sd >= 0 && sb.sd >= 0 && sb2.sd < 0) {
				sb2.sd = sd;
				t_conn2 = vnow;
			}
		}
		pump(&sa);
		pump(&sb);
		if (sa2.sd >= 0)
			pump(&sa2);
		if (sb2.sd >= 0)
			pump(&sb2);
		if (p.b->lib->tcp_embryos > max_emb)
			max_emb = p.b->lib->tcp_embryos;
		if (p.b->r->sock_used > max_socks)
			max_socks = p.b->r->sock_used;
		min_free = min_u32(min_free, min_u32(p.a->lib->buf_free_count,
						     p.b->lib->buf_free_count));
		if (!t_conn1_done && ms > 100 && side_done(&sa, &sb))
			t_conn1_done = vnow;
		if (ms > flood_ms && side_done(&sa, &sb) && sb2.sd >= 0 && side_done(&sa2, &sb2))
			break;
		vnow += 1000;
	}
	printf("# %llu spoofed SYNs in %u ms; embryos at most %u (cap %u = max_sockets / %u);"
	       " tcp_syncookies_sent %llu; sockets on B at most %u (%u before); fewest free buffers"
	       " on either stack %u of %u\n", (unsigned long long)injected, flood_ms, max_emb, cap,
	       SL_TCP_SYNQ_SHARE, (unsigned long long)(fx_counter(p.b, "tcp_syncookies_sent") - drop0),
	       max_socks, socks0, min_free, p.b->r->n_bufs);
	printf("# the connection made before: 8 MiB each way (from 0.1 s) done %.2f s into the flood; the new"
	       " one (SYN at 0.5 s): accepted at %.1f s; SYN-ACKs to spoofed sources dropped"
	       " by A: %llu\n", (double)(t_conn1_done - t_start) / 1e6,
	       t_conn2 ? (double)(t_conn2 - t_start) / 1e6 : -1.0,
	       (unsigned long long)fx_counter(p.a, "ip_rx_not_ours"));
	tap_eq(max_emb, cap, "test_syn_flood: the SYN queue fills to its stack-wide cap, no further");
	tap_ok(max_socks <= socks0 + cap + 1,
	       "test_syn_flood: sockets stay within the connections + the cap");
	tap_ok(fx_counter(p.b, "tcp_syncookies_sent") - drop0 >= injected - cap,
	       "test_syn_flood: every SYN past the cap answered with a cookie, nothing kept");
	tap_ok(min_free > p.b->r->n_bufs / 2, "test_syn_flood: the flood holds no packet buffers");
	tap_ok(side_done(&sa, &sb) && t_conn1_done && t_conn1_done - t_start < flood_ms * 1000ull,
	       "test_syn_flood: the established connection transfers 8 MiB each way during it");
	tap_ok(t_conn2 && t_conn2 - t_start < flood_ms * 1000ull && side_done(&sa2, &sb2),
	       "test_syn_flood: a new connection gets in during the flood (a SYN cookie), and "
	       "transfers");
	sluice_close(ST(p.a), sa.sd);
	sluice_close(ST(p.b), sb.sd);
	if (sa2.sd >= 0)
		sluice_close(ST(p.a), sa2.sd);
	if (sb2.sd >= 0)
		sluice_close(ST(p.b), sb2.sd);
	pair_down(&p, "test_syn_flood");
}

/* ---- 3. ACK flood with bad sequence numbers ------------------------- */

/*
 * B sends 16 MiB to A.  For 1 s, 60 forged segments a millisecond from
 * A's address and port hit B's connection, with a timestamp that passes
 * PAWS (just or far ahead of TS.Recent): a sequence number far out of the window (RFC 9293 3.10.7.4:
 * answered by an ACK, at most one per 500 ms: Linux
 * tcp_invalid_ratelimit), or in the window with an ACK of data never sent
 * or older than SND.UNA - MAX.SND.WND (RFC 5961 5.2: a challenge ACK, at
 * most 100 a second per connection, section 7); and a quarter with no
 * timestamp on a connection that agreed to them (RFC 7323 3.2: dropped
 * silently).  None may change the connection's state; the transfer
 * completes byte-exact.
 */
static void test_ack_flood_bad_seq(void)
{
	const struct sluice_loop_faults clean = { .delay_us = 500 };
	const unsigned int flood_ms = 1000, per_ms = 60;
	struct side sa = { 0 }, sb = { 0 };
	uint64_t chal0, oow0, forged = 0, t0, t_flood_end = 0, changed = 0, done_at = 0;
	struct sl_sock *so;
	struct shim sh;
	struct pair p;

	rng_state = 5961;
	pair_up(&p, "hack", &clean);
	tap_ok(pair_connect(&p, &sa, &sb, 0), "test_ack_flood_bad_seq: connected");
	side_pair(&sa, &sb, 21, 0, 16 * MIB);
	sa.no_shut = sb.no_shut = true;
	so = sl_sock(p.b, (uint32_t)sb.sd);
	tap_ok(so->tcp.tflags & SL_TF_TS, "test_ack_flood_bad_seq: timestamps agreed");
	shim_on(&sh, p.b);
	chal0 = fx_counter(p.b, "tcp_challenge_ack");
	oow0 = sh.pure_acks;
	t0 = vnow;
	for (unsigned int ms = 0; ms < 60000; ms++) {
		for (unsigned int k = 0; ms < flood_ms && k < per_ms; k++) {
			struct sl_tcp_sock before = so->tcp;
			uint8_t state = so->state;
			uint32_t seq = so->tcp.rcv_nxt, ack = so->tcp.snd_una;
			/* Just ahead of TS.Recent, or far ahead (still not "old"). */
			uint32_t tsval = so->tcp.ts_recent + ((k & 4) ? 0x40000000u : 1u);
			uint64_t r = rnd();

			switch (k % 4) {
			case 0:
				seq += 0x40000000u + (uint32_t)(r % 0x3fffffff);
				break;
			case 1:
				ack = so->tcp.snd_max + 1 + (uint32_t)(r % 0x3fffffff);
				break;
			case 2:
				ack = so->tcp.snd_una - so->tcp.max_sndwnd - 1 -
				      (uint32_t)(r % 0x3fffffff);
				break;
			default:
				ack = so->tcp.snd_max + 1 + (uint32_t)(r % 0x3fffffff);
				break;
			}
			forge_ts(p.b, so->raddr, so->laddr, ntohs(so->rport), 80, TH_ACK_, seq, ack,
				 (uint16_t)(r >> 40), k % 4 == 3 ? NULL : &tsval, NULL, 0);
			forged++;
			if (so->state != state ||
			    so->tcp.snd_una != before.snd_una || so->tcp.snd_nxt != before.snd_nxt ||
			    so->tcp.snd_wnd != before.snd_wnd || so->tcp.rcv_nxt != before.rcv_nxt ||
			    so->tcp.cwnd != before.cwnd || so->tcp.dupacks != before.dupacks ||
			    so->tcp.ts_recent != before.ts_recent) {
				if (++changed < 4)
					printf("#   kind %u: una %u->%u wnd %u->%u rcv %u->%u cwnd"
					       " %u->%u TS.Recent %u->%u\n", k % 4, before.snd_una,
					       so->tcp.snd_una, before.snd_wnd, so->tcp.snd_wnd,
					       before.rcv_nxt, so->tcp.rcv_nxt, before.cwnd,
					       so->tcp.cwnd, before.ts_recent, so->tcp.ts_recent);
			}
		}
		if (ms == flood_ms) {
			t_flood_end = vnow;
			oow0 = sh.pure_acks - oow0;
		}
		ns_step(p.a, p.b, 0);
		pump(&sa);
		pump(&sb);
		if (!done_at && sa.got == sa.total_in) {
			done_at = vnow;
			sa.no_shut = sb.no_shut = false;
		}
		if (ms >= flood_ms && side_done(&sa, &sb))
			break;
		vnow += 1000;
	}
	chal0 = fx_counter(p.b, "tcp_challenge_ack") - chal0;
	printf("# %llu forged segments in %u ms; challenge ACKs %llu; B's pure ACKs during the"
	       " flood %llu (B receives no data: each answers a forged segment); 16 MiB done at"
	       " %.2f s (the flood ended at %.2f s)\n", (unsigned long long)forged, flood_ms,
	       (unsigned long long)chal0, (unsigned long long)oow0,
	       (double)(done_at - t0) / 1e6, (double)(t_flood_end - t0) / 1e6);
	tap_eq(changed, 0, "test_ack_flood_bad_seq: no forged segment changed the connection");
	tap_ok(chal0 >= SL_TCP_CHALLENGE_MAX && chal0 <= 2 * SL_TCP_CHALLENGE_MAX,
	       "test_ack_flood_bad_seq: challenge ACKs rate-limited to %u a second (%llu in 1 s)",
	       SL_TCP_CHALLENGE_MAX, (unsigned long long)chal0);
	tap_ok(oow0 <= chal0 + 3, "test_ack_flood_bad_seq: out-of-window ACKs answered at most"
	       " once per %u ms besides", SL_TCP_OOW_LIMIT_MS);
	tap_ok(side_done(&sa, &sb) && done_at && done_at < t_flood_end,
	       "test_ack_flood_bad_seq: 16 MiB arrive byte-exact during the flood");
	shim_off(&sh);
	sluice_close(ST(p.a), sa.sd);
	sluice_close(ST(p.b), sb.sd);
	pair_down(&p, "test_ack_flood_bad_seq");
}

/* ---- 4. Blind RST injection (RFC 5961 3) ----------------------------- */

#define IRS 1000000u

static uint8_t bytes_at(uint32_t seed, size_t off, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = pattern(seed, off + i);
	return out[0];
}

/* The peer sends n bytes of its stream at *pseq, we read and check them. */
static bool peer_data(struct sl_sock *c, uint32_t *pseq, size_t *off, size_t n, uint32_t ack)
{
	uint8_t buf[1400], got[1400];
	bool ok = true;

	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);

		bytes_at(31, *off, buf, k);
		tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, *pseq, ack, 65535, buf, (unsigned int)k);
		if (sl_tcp_recv(T.s, c, got, sizeof(got), 0, tf_now_us) != (ssize_t)k ||
		    memcmp(got, buf, k))
			ok = false;
		*pseq += (uint32_t)k;
		*off += k;
		n -= k;
	}
	return ok;
}

static void test_blind_rst_injection(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0, pseq = IRS + 1, wnd, in_bad = 0, out_bad = 0, in_n = 0, out_n = 0;
	uint64_t chal0;
	size_t off = 0;
	bool data_ok = true;
	unsigned int burst;

	tf_init("hrst");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tap_ok(c != NULL, "test_blind_rst_injection: accepted");
	if (!c)
		return;
	data_ok &= peer_data(c, &pseq, &off, 10000, iss + 1);
	sl_timer_run(T.s, tf_now_us += 100000);
	wnd = c->tcp.rcv_adv - c->tcp.rcv_nxt;
	chal0 = tf_counter(SL_C_tcp_challenge_ack);
	/* Every offset inside the window (RCV.NXT excluded), 11 ms apart so
	 * the rate limit lets each be answered; every 4096th the peer's data
	 * moves RCV.NXT on. */
	for (uint32_t o = 1; o < wnd; o++) {
		struct tf_seg g;

		if (!(o & 4095)) {
			data_ok &= peer_data(c, &pseq, &off, 1000, iss + 1);
			sl_timer_run(T.s, tf_now_us += 100000);
			wnd = c->tcp.rcv_adv - c->tcp.rcv_nxt;
		}
		tf_now_us += 11000;
		sl_timer_run(T.s, tf_now_us);
		tf_clear();
		tf_seg(TF_LPORT, TH_RST_, c->tcp.rcv_nxt + o, 0, 0, NULL, 0);
		g = tf_last();
		in_n++;
		if (c->state != SL_TCP_ESTABLISHED || T.n != 1 || g.flags != TH_ACK_ ||
		    g.ack != c->tcp.rcv_nxt)
			in_bad++;
		if (c->state != SL_TCP_ESTABLISHED)
			break;
	}
	printf("# %u in-window RSTs (every offset of a %u-byte window), %llu challenge ACKs\n",
	       in_n, wnd, (unsigned long long)(tf_counter(SL_C_tcp_challenge_ack) - chal0));
	tap_eq(in_bad, 0, "test_blind_rst_injection: every in-window RST gets a challenge ACK"
	       " and leaves the connection");
	/* Out of the window: the edges, then the whole sequence space. */
	for (uint64_t k = 0; k < 70000 && c->state == SL_TCP_ESTABLISHED; k++) {
		uint32_t o;

		if (k == 0)
			o = wnd;
		else if (k == 1)
			o = wnd + 1;
		else if (k == 2)
			o = (uint32_t)-1;
		else if (k == 3)
			o = 0x80000000u;
		else
			o = (uint32_t)(k * 65521u);
		if (o < wnd)
			continue;
		tf_clear();
		tf_seg(TF_LPORT, TH_RST_, c->tcp.rcv_nxt + o, 0, 0, NULL, 0);
		out_n++;
		if (c->state != SL_TCP_ESTABLISHED || T.n)
			out_bad++;
	}
	printf("# %u out-of-window RSTs across the sequence space\n", out_n);
	tap_eq(out_bad, 0, "test_blind_rst_injection: out-of-window RSTs are dropped silently");
	/* A burst inside one second: the rate limit (RFC 5961 7). */
	tf_now_us = (tf_now_us / 1000000 + 1) * 1000000;
	sl_timer_run(T.s, tf_now_us);
	tf_clear();
	for (burst = 0; burst < 1000; burst++)
		tf_seg(TF_LPORT, TH_RST_, c->tcp.rcv_nxt + 1 + burst, 0, 0, NULL, 0);
	tap_eq(T.n, SL_TCP_CHALLENGE_MAX, "test_blind_rst_injection: 1000 in one second: 100"
	       " challenge ACKs");
	data_ok &= peer_data(c, &pseq, &off, 20000, iss + 1);
	tap_ok(data_ok && c->state == SL_TCP_ESTABLISHED,
	       "test_blind_rst_injection: the peer's %zu bytes arrive byte-exact", off);
	tf_seg(TF_LPORT, TH_RST_, c->tcp.rcv_nxt, 0, 0, NULL, 0);
	tap_eq(c->state, SL_TCP_CLOSED, "test_blind_rst_injection: the RST at RCV.NXT resets");
	tap_eq(sl_tcp_recv(T.s, c, &burst, 1, 0, tf_now_us), -ECONNRESET,
	       "test_blind_rst_injection: and the application sees ECONNRESET");
	tf_finish();
}

/* ---- 5. Blind data injection (RFC 5961 5) ---------------------------- */

static void test_blind_data_injection(void)
{
	static uint8_t out[20000];
	const uint8_t evil[100] = { 'E', 'V', 'I', 'L' };
	struct sl_sock *l, *c;
	uint32_t iss = 0, pseq = IRS + 1, bad = 0, n = 0, una, max, mw, rxq;
	uint8_t buf[256];
	size_t off = 0;
	bool data_ok;

	tf_init("hdat");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	tap_ok(c != NULL, "test_blind_data_injection: accepted");
	if (!c)
		return;
	/* Data of ours in flight, not yet acknowledged. */
	tap_eq(sl_tcp_send(T.s, c, out, sizeof(out), 0, tf_now_us), (long long)sizeof(out),
	       "test_blind_data_injection: 20000 bytes of ours in flight");
	data_ok = peer_data(c, &pseq, &off, 3000, iss + 1);
	una = c->tcp.snd_una;
	max = c->tcp.snd_max;
	mw = c->tcp.max_sndwnd;
	printf("# SND.UNA %u, SND.MAX %u (+%u), MAX.SND.WND %u\n", una, max, max - una, mw);
	for (int i = 0; i < 3000; i++) {
		uint64_t r = rnd();
		uint32_t ack;
		uint8_t fl = TH_ACK_ | TH_PSH_;

		if (i % 3 == 0)		/* acknowledges what was never sent */
			ack = max + 1 + (i < 30 ? (uint32_t)i : (uint32_t)(r % 0x7ffffffe));
		else if (i % 3 == 1)	/* older than SND.UNA - MAX.SND.WND */
			ack = una - mw - 1 - (i < 30 ? (uint32_t)i : (uint32_t)(r % 0x7fff0000));
		else {			/* no ACK at all (RFC 9293 3.10.7.4 fifth) */
			ack = una;
			fl = TH_PSH_;
		}
		rxq = c->rxq_bytes;
		tf_now_us += 11000;
		tf_clear();
		tf_seg(TF_LPORT, fl, c->tcp.rcv_nxt, ack, 65535, evil, sizeof(evil));
		n++;
		if (c->rxq_bytes != rxq || c->tcp.rcv_nxt != pseq || c->tcp.snd_una != una ||
		    c->state != SL_TCP_ESTABLISHED)
			bad++;
		if ((fl & TH_ACK_) && (T.n != 1 || tf_last().ack != pseq))
			bad++;
	}
	tap_eq(bad, 0, "test_blind_data_injection: data with an unacceptable ACK (or none) is"
	       " dropped, the ACKed ones with a challenge ACK");
	printf("# %u blind data segments at RCV.NXT refused\n", n);
	/* The edge of the acceptable range (SND.UNA - MAX.SND.WND <= SEG.ACK)
	 * is taken: the peer's own data with an old ACK is not blind. */
	rxq = c->rxq_bytes;
	bytes_at(31, off, buf, sizeof(buf));
	tf_seg(TF_LPORT, TH_ACK_ | TH_PSH_, pseq, una - mw, 65535, buf, sizeof(buf));
	tap_eq(c->rxq_bytes, rxq + sizeof(buf), "test_blind_data_injection: an ACK at SND.UNA -"
	       " MAX.SND.WND is acceptable (the range's edge)");
	data_ok &= sl_tcp_recv(T.s, c, buf, sizeof(buf), 0, tf_now_us) == (ssize_t)sizeof(buf) &&
		   buf[0] == pattern(31, off);
	pseq += sizeof(buf);
	off += sizeof(buf);
	data_ok &= peer_data(c, &pseq, &off, 20000, max);
	tap_ok(data_ok && c->tcp.snd_una == max,
	       "test_blind_data_injection: the peer's %zu bytes byte-exact, ours all acknowledged",
	       off);
	tf_finish();
}

/* ---- 6. Tiny MSS ------------------------------------------------------ */

static void tiny_watch(struct sl_stack *s, int sd, uint32_t *max_rxb, uint32_t *max_ooo,
		       uint32_t *max_sndb, uint32_t *bad)
{
	struct sl_sock *so = sl_sock(s, (uint32_t)sd);
	uint32_t bs = s->r->buf_size, nb = sndq_buffers(s, so);

	if (so->rxq_count > *max_rxb)
		*max_rxb = so->rxq_count;
	if (so->tcp.ooo_count > *max_ooo)
		*max_ooo = so->tcp.ooo_count;
	if (nb > *max_sndb)
		*max_sndb = nb;
	if ((uint64_t)so->rxq_count * bs > so->rcvbuf + bs ||
	    (uint64_t)so->tcp.ooo_count * bs > so->rcvbuf + bs ||
	    so->tcp.ooo_count > SL_TCP_OOO_MAX || nb > s->r->n_bufs / 4 + 1)
		(*bad)++;
}

static void test_tiny_mss(void)
{
	static const int offered[] = { 1, 48, 64, 87, 88, 89, 200 };
	const struct sluice_loop_faults f = {
		.loss_ppm = 5000, .reorder_ppm = 10000, .dup_ppm = 2000, .delay_us = 1000,
	};
	struct side sa = { 0 }, sb = { 0 };
	uint32_t mrx = 0, mooo = 0, msnd = 0, bad = 0, minfree = UINT32_MAX, mss_bad = 0;
	int maxseg = SL_TCP_MSS_MIN, ms;
	struct shim sha, shb;
	struct pair p;

	/* What the peer offers in its SYN, what we send with. */
	tf_init("hmss");
	for (unsigned int i = 0; i < sizeof(offered) / sizeof(offered[0]); i++) {
		struct tf_opts o = { .mss = offered[i] };
		uint32_t iss = 0, want = offered[i] < SL_TCP_MSS_MIN ? SL_TCP_MSS_MIN : offered[i];
		struct sl_sock *l = tf_listener((uint16_t)(TF_LPORT + i), 8), *c;
		static uint8_t data[4000];
		unsigned int big = 0;

		c = tf_accept(l, IRS, &iss, &o, 65535);
		if (!c) {
			mss_bad++;
			continue;
		}
		tf_clear();
		sl_tcp_send(T.s, c, data, sizeof(data), 0, tf_now_us);
		for (unsigned int k = 0; k < T.n; k++)
			big += tf_parse(k).plen > want;
		printf("# peer offers MSS %d: we send %u-byte segments (%u sent, %u over)\n",
		       offered[i], c->tcp.mss, T.n, big);
		if (c->tcp.mss != want || big || !T.n)
			mss_bad++;
		sl_tcp_close(T.s, c, tf_now_us);
		sl_tcp_close(T.s, l, tf_now_us);
	}
	tap_eq(mss_bad, 0, "test_tiny_mss: an MSS below 88 (Linux TCP_MIN_MSS) is raised to 88;"
	       " segments never exceed the send MSS");
	printf("# Linux raises a peer's MSS only to tcp_min_snd_mss (48); Sluice to %d\n",
	       SL_TCP_MSS_MIN);
	tf_finish();

	/* 1 MiB each way with TCP_MAXSEG 88 on A: both ends send 88 or less. */
	pair_up(&p, "hmss", &f);
	sa.s = p.a;
	sb.s = p.b;
	sa.sd = sluice_socket(ST(p.a), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_setsockopt(ST(p.a), sa.sd, IPPROTO_TCP, TCP_MAXSEG, &maxseg, sizeof(maxseg)),
	       0, "test_tiny_mss: TCP_MAXSEG 88 on A");
	maxseg = SL_TCP_MSS_MIN - 1;
	tap_eq(sluice_setsockopt(ST(p.a), sa.sd, IPPROTO_TCP, TCP_MAXSEG, &maxseg, sizeof(maxseg)),
	       -EINVAL, "test_tiny_mss: TCP_MAXSEG 87 is refused (EINVAL, as Linux)");
	sluice_connect(ST(p.a), sa.sd, &p.srv);
	sb.sd = -1;
	shim_on(&sha, p.a);
	shim_on(&shb, p.b);
	side_pair(&sa, &sb, 41, MIB, MIB);
	/* For the first second both ends leave what arrives unread: 76-byte
	 * segments pile up in the receive queues, charged whole buffers. */
	sa.no_read = sb.no_read = true;
	for (ms = 0; ms < 600000; ms++) {
		if (ms == 1000)
			sa.no_read = sb.no_read = false;
		ns_step(p.a, p.b, 0);
		if (sb.sd < 0)
			sb.sd = sluice_accept(ST(p.b), p.l, NULL);
		pump(&sa);
		if (sb.sd >= 0) {
			pump(&sb);
			tiny_watch(p.a, sa.sd, &mrx, &mooo, &msnd, &bad);
			tiny_watch(p.b, sb.sd, &mrx, &mooo, &msnd, &bad);
		}
		minfree = min_u32(minfree, min_u32(p.a->lib->buf_free_count, p.b->lib->buf_free_count));
		if (side_done(&sa, &sb))
			break;
		vnow += 1000;
	}
	printf("# 1 MiB each way in %d ms (virtual): %llu + %llu segments, largest payload %llu"
	       " and %llu; most buffers: receive queue %u, out of order %u, send queue %u; fewest"
	       " free buffers %u of %u\n", ms, (unsigned long long)sha.segs,
	       (unsigned long long)shb.segs, (unsigned long long)sha.max_plen,
	       (unsigned long long)shb.max_plen, mrx, mooo, msnd, minfree, p.a->r->n_bufs);
	tap_ok(side_done(&sa, &sb), "test_tiny_mss: 1 MiB each way byte-exact at MSS 88");
	tap_ok(sha.max_plen <= SL_TCP_MSS_MIN && shb.max_plen <= SL_TCP_MSS_MIN,
	       "test_tiny_mss: no segment either way carries more than 88 bytes");
	tap_eq(bad, 0, "test_tiny_mss: every socket within its buffer limits at every step");
	tap_ok(minfree > 0, "test_tiny_mss: neither pool ran dry");
	shim_off(&sha);
	shim_off(&shb);
	sluice_close(ST(p.a), sa.sd);
	sluice_close(ST(p.b), sb.sd);
	pair_down(&p, "test_tiny_mss");
}

/* ---- 7. A zero window held for 30 minutes --------------------------- */

static uint64_t probe_t[256];
static unsigned int probe_n;
static struct sl_sock *probe_so;

static void probe_hook(struct shim *sh, const struct pseg *g)
{
	(void)sh;
	if (probe_so && !g->plen && g->flags == TH_ACK_ &&
	    g->seq == probe_so->tcp.snd_una - 1 && probe_n < 256)
		probe_t[probe_n++] = vnow;
}

/*
 * The peer advertises exactly zero for 30 minutes and answers every
 * probe (RFC 9293 3.8.6.1): probes back off to RTO_MAX and go on for as
 * long as they are answered; then the window opens and the data follows.
 */
static void zero_window_scripted(void)
{
	static uint8_t out[100000], seen[100000];
	uint32_t iss = 0, probes = 0, bufs, bad_gap = 0, sndq;
	uint64_t last = 0, gap, maxgap = 0, prevgap = 0;
	struct sl_sock *l, *c;
	size_t got = 0;

	tf_init("hzw0");
	l = tf_listener(TF_LPORT, 8);
	c = tf_accept(l, IRS, &iss, NULL, 65535);
	if (!tap_ok(c != NULL, "test_zero_window_long: scripted peer connected"))
		return;
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = pattern(71, i);
	sl_tcp_send(T.s, c, out, sizeof(out), 0, tf_now_us);
	/* The peer takes what came and closes its window. */
	tf_seg(TF_LPORT, TH_ACK_, IRS + 1, c->tcp.snd_max, 0, NULL, 0);
	tf_clear();
	bufs = T.s->lib->buf_free_count;
	sndq = c->tcp.sndq_bytes;
	last = tf_now_us;
	for (uint32_t ms = 0; ms < 30 * 60 * 1000; ms++) {
		tf_advance_ms(1);
		for (unsigned int k = 0; k < T.n; k++) {
			struct tf_seg g = tf_parse(k);

			if (g.plen || g.seq != c->tcp.snd_una - 1)
				continue;
			probes++;
			gap = tf_now_us - last;
			last = tf_now_us;
			if (gap > maxgap)
				maxgap = gap;
			if (gap + 1000 < prevgap || gap > SL_TCP_RTO_MAX_US + 1000)
				bad_gap++;
			prevgap = gap;
		}
		if (T.n)
			tf_seg(TF_LPORT, TH_ACK_, IRS + 1, c->tcp.snd_una, 0, NULL, 0);
		tf_clear();
	}
	printf("# exact zero window, 30 min: %u probes, the longest interval %.1f s; buffers"
	       " in use unchanged: %s\n", probes, (double)maxgap / 1e6,
	       bufs == T.s->lib->buf_free_count ? "yes" : "no");
	tap_ok(probes > SL_TCP_DATA_RETRIES && probes < 40 && !bad_gap,
	       "test_zero_window_long: probes back off to RTO_MAX and go on while answered (%u)",
	       probes);
	tap_ok(c->state == SL_TCP_ESTABLISHED && bufs == T.s->lib->buf_free_count &&
	       c->tcp.sndq_bytes == sndq, "test_zero_window_long: connection and its queue kept,"
	       " no buffer taken");
	/* The window opens: take every segment, ACK it, until all is in. */
	memcpy(seen, out, c->tcp.snd_una - iss - 1);
	got = c->tcp.snd_una - iss - 1;
	tf_seg(TF_LPORT, TH_ACK_, IRS + 1, c->tcp.snd_una, 65535, NULL, 0);
	for (int round = 0; round < 10000 && got < sizeof(out); round++) {
		for (unsigned int k = 0; k < T.n; k++) {
			struct tf_seg g = tf_parse(k);
			size_t at = g.seq - iss - 1;

			if (g.plen && at == got && at + g.plen <= sizeof(seen)) {
				memcpy(seen + at, g.data, g.plen);
				got += g.plen;
			}
		}
		tf_clear();
		tf_seg(TF_LPORT, TH_ACK_, IRS + 1, iss + 1 + (uint32_t)got, 65535, NULL, 0);
		tf_advance_ms(1);
	}
	tap_ok(got == sizeof(out) && !memcmp(seen, out, sizeof(out)),
	       "test_zero_window_long: the window opens and all 100000 bytes follow, byte-exact");
	tf_finish();
}

static void test_zero_window_long(void)
{
	const struct sluice_loop_faults clean = { .delay_us = 1000 };
	const uint64_t hold_us = 30ull * 60 * 1000000;
	struct side sa = { 0 }, sb = { 0 };
	uint32_t fa, fb, mono_bad = 0;
	uint64_t t0 = 0, maxgap = 0, firstgap = 0;
	struct shim sh;
	struct pair p;
	int i;

	zero_window_scripted();
	pair_up(&p, "hzw", &clean);
	tap_ok(pair_connect(&p, &sa, &sb, 0), "test_zero_window_long: connected");
	side_pair(&sa, &sb, 51, MIB, 0);
	sb.no_read = true;
	sb.no_shut = true;
	probe_so = sl_sock(p.a, (uint32_t)sa.sd);
	/* Fill B until its window is zero and A has data it may not send. */
	for (i = 0; i < 60000; i++) {
		ns_step(p.a, p.b, 1000);
		pump(&sa);
		pump(&sb);
		if (probe_so->tcp.snd_wnd < probe_so->tcp.mss &&
		    probe_so->tcp.snd_una == probe_so->tcp.snd_max &&
		    SEQ_LT(probe_so->tcp.snd_nxt, probe_so->tcp.snd_end))
			break;
	}
	printf("# B never reads: its window stays at %u bytes (below A's MSS %u: RFC 9293"
	       " 3.8.6.2 SWS avoidance holds A until the override timeout of RFC 1122"
	       " 4.2.3.4 sends what fits), A holds %u unsent\n",
	       probe_so->tcp.snd_wnd, probe_so->tcp.mss,
	       probe_so->tcp.snd_end - probe_so->tcp.snd_nxt);
	tap_ok(i < 60000, "test_zero_window_long: B's window closes (%zu bytes sent, %u held"
	       " by B)", sa.sent, sl_sock(p.b, (uint32_t)sb.sd)->rxq_bytes);
	shim_on(&sh, p.a);
	sh.hook = probe_hook;
	probe_n = 0;
	fa = p.a->lib->buf_free_count;
	fb = p.b->lib->buf_free_count;
	t0 = vnow;
	/* 30 minutes in 10 ms steps: the timer wheel catches up each step. */
	while (vnow - t0 < hold_us) {
		ns_step(p.a, p.b, 10000);
		pump(&sa);
		pump(&sb);
	}
	for (unsigned int k = 0; k < probe_n; k++) {
		uint64_t gap = probe_t[k] - (k ? probe_t[k - 1] : t0);

		if (k == 1)
			firstgap = gap;
		if (gap > maxgap)
			maxgap = gap;
		if (k > 1 && gap + 20000 < probe_t[k - 1] - probe_t[k - 2])
			mono_bad++;
	}
	printf("# 30 min of a window below one segment (B never reads): %u probes; intervals %.2f s first, at most %.1f s;"
	       " buffers in use A %u B %u, unchanged: %s\n", probe_n, (double)firstgap / 1e6,
	       (double)maxgap / 1e6, p.a->r->n_bufs - fa, p.b->r->n_bufs - fb,
	       fa == p.a->lib->buf_free_count && fb == p.b->lib->buf_free_count ? "yes" : "no");
	tap_ok(probe_n > SL_TCP_DATA_RETRIES && probe_n < 60,
	       "test_zero_window_long: probes go on past %u while answered, backed off (%u)",
	       SL_TCP_DATA_RETRIES, probe_n);
	tap_ok(firstgap >= SL_TCP_RTO_MIN_US && maxgap <= SL_TCP_RTO_MAX_US + 20000 &&
	       !mono_bad, "test_zero_window_long: intervals grow from >= RTO_MIN and are capped"
	       " at RTO_MAX (RFC 6298 2.5)");
	tap_ok(probe_so->state == SL_TCP_ESTABLISHED &&
	       sl_sock(p.b, (uint32_t)sb.sd)->state == SL_TCP_ESTABLISHED,
	       "test_zero_window_long: the connection is not dropped");
	/* The override sends the bytes B offered, once (A splits a segment
	 * for it: one buffer); then the window is zero and only probes go.
	 * B holds at most that one more buffer. */
	tap_ok(p.a->lib->buf_free_count + 1 >= fa && p.b->lib->buf_free_count + 1 >= fb &&
	       sl_sock(p.b, (uint32_t)sb.sd)->rxq_bytes <= sl_sock(p.b, (uint32_t)sb.sd)->rcvbuf,
	       "test_zero_window_long: no buffer taken beyond the window B offered (A %d, B %d)",
	       (int)fa - (int)p.a->lib->buf_free_count, (int)fb - (int)p.b->lib->buf_free_count);
	/* The window opens: everything flows. */
	sb.no_read = false;
	sb.no_shut = false;
	for (i = 0; i < 600000 && !side_done(&sa, &sb); i++) {
		ns_step(p.a, p.b, 1000);
		pump(&sa);
		pump(&sb);
	}
	printf("# after the window opened: %zu bytes in %d ms\n", sb.got, i);
	tap_ok(side_done(&sa, &sb), "test_zero_window_long: then 1 MiB arrives byte-exact");
	probe_so = NULL;
	shim_off(&sh);
	sluice_close(ST(p.a), sa.sd);
	sluice_close(ST(p.b), sb.sd);
	pair_down(&p, "test_zero_window_long");
}

/* ---- 8. A peer that never reads -------------------------------------- */

static void test_never_reading_peer(void)
{
	const struct sluice_loop_faults clean = { .delay_us = 500 };
	struct side sa = { 0 }, sb = { 0 }, sa2 = { 0 }, sb2 = { 0 };
	uint32_t max_sndq = 0, max_rxb = 0, minfree = UINT32_MAX, bs;
	struct sl_sock *so, *peer;
	int sndbuf = 16384, i;
	long n;
	struct pair p;

	pair_up(&p, "hnr", &clean);
	bs = p.a->r->buf_size;
	tap_ok(pair_connect(&p, &sa, &sb, sndbuf), "test_never_reading_peer: stuck connection up");
	tap_ok(pair_connect(&p, &sa2, &sb2, 0), "test_never_reading_peer: second connection up");
	side_pair(&sa, &sb, 61, 4 * MIB, 0);
	sb.no_read = true;
	sa.no_shut = true;
	side_pair(&sa2, &sb2, 62, 4 * MIB, 4 * MIB);
	so = sl_sock(p.a, (uint32_t)sa.sd);
	peer = sl_sock(p.b, (uint32_t)sb.sd);
	for (i = 0; i < 600000 && !side_done(&sa2, &sb2); i++) {
		ns_step(p.a, p.b, 1000);
		pump(&sa);
		pump(&sb);
		pump(&sa2);
		pump(&sb2);
		if (so->tcp.sndq_bytes > max_sndq)
			max_sndq = so->tcp.sndq_bytes;
		if (peer->rxq_count > max_rxb)
			max_rxb = peer->rxq_count;
		minfree = min_u32(minfree, min_u32(p.a->lib->buf_free_count, p.b->lib->buf_free_count));
	}
	n = sluice_send(ST(p.a), sa.sd, "x", 1, MSG_DONTWAIT);
	printf("# stuck: %zu bytes accepted from the application, send queue at most %u bytes"
	       " (SO_SNDBUF %d -> %u), B holds %u bytes in %u buffers (rcvbuf %u); the other"
	       " connection moved 4 MiB each way in %d ms; fewest free buffers %u of %u\n",
	       sa.sent, max_sndq, sndbuf, so->sndbuf, peer->rxq_bytes, max_rxb, peer->rcvbuf, i,
	       minfree, p.a->r->n_bufs);
	tap_ok(max_sndq <= so->sndbuf, "test_never_reading_peer: the send queue stops at SO_SNDBUF");
	tap_eq(n, -EAGAIN, "test_never_reading_peer: and send() says EAGAIN");
	tap_ok((uint64_t)max_rxb * bs <= peer->rcvbuf + bs,
	       "test_never_reading_peer: the reader's side holds at most its rcvbuf");
	tap_ok(side_done(&sa2, &sb2),
	       "test_never_reading_peer: another connection on the same stacks transfers 4 MiB"
	       " each way byte-exact");
	tap_ok(minfree > p.a->r->n_bufs / 8, "test_never_reading_peer: the pools are not drained");
	/* The sender gives up: it closes with its data unsent.  The orphan
	 * must not outlive its probes' backoff however often the reader
	 * answers (Linux tcp_probe_timer: an orphan goes once its backoff
	 * reaches TCP_RTO_MAX), or a reader that never reads pins its send
	 * queue for ever. */
	{
		struct side sa3 = { 0 }, sb3 = { 0 };
		struct sl_sock *o;
		uint32_t gen, free0;
		uint64_t t0;

		tap_ok(pair_connect(&p, &sa3, &sb3, sndbuf),
		       "test_never_reading_peer: a third connection up");
		side_pair(&sa3, &sb3, 63, MIB, 0);
		sb3.no_read = sb3.no_shut = sa3.no_shut = true;
		for (i = 0; i < 2000; i++) {
			ns_step(p.a, p.b, 1000);
			pump(&sa3);
			pump(&sb3);
		}
		o = sl_sock(p.a, (uint32_t)sa3.sd);
		gen = o->kp.gen;
		free0 = p.a->lib->buf_free_count;
		printf("# the sender closes with %u bytes queued, the reader holds %u unread\n",
		       o->tcp.sndq_bytes, sl_sock(p.b, (uint32_t)sb3.sd)->rxq_bytes);
		sluice_close(ST(p.a), sa3.sd);
		t0 = vnow;
		while (vnow - t0 < 30ull * 60 * 1000000 && o->kp.gen == gen && o->type != SL_SOCK_FREE)
			ns_step(p.a, p.b, 10000);
		printf("# the orphan went after %.1f s; %u buffers back\n", (double)(vnow - t0) / 1e6,
		       p.a->lib->buf_free_count - free0);
		tap_ok(o->kp.gen != gen || o->type == SL_SOCK_FREE,
		       "test_never_reading_peer: the sender's orphan goes in bounded time");
		tap_ok(vnow - t0 < 10ull * 60 * 1000000,
		       "test_never_reading_peer: within 10 minutes (%.0f s)", (double)(vnow - t0) / 1e6);
		sluice_close(ST(p.b), sb3.sd);
	}
	/* The reader closes with unread data: RST (RFC 2525 2.17), and both
	 * ends give everything back. */
	sluice_close(ST(p.b), sb.sd);
	for (i = 0; i < 100; i++)
		ns_step(p.a, p.b, 1000);
	n = sluice_send(ST(p.a), sa.sd, "x", 1, MSG_DONTWAIT);
	tap_ok(n == -ECONNRESET || n == -EPIPE,
	       "test_never_reading_peer: closing unread data resets the sender (%ld)", n);
	tap_eq(so->tcp.sndq_bytes, 0, "test_never_reading_peer: and frees its send queue");
	sluice_close(ST(p.a), sa.sd);
	sluice_close(ST(p.a), sa2.sd);
	sluice_close(ST(p.b), sb2.sd);
	pair_down(&p, "test_never_reading_peer");
}

int main(void)
{
	test_long_transfer_faults();
	test_syn_flood();
	test_ack_flood_bad_seq();
	test_blind_rst_injection();
	test_blind_data_injection();
	test_tiny_mss();
	test_zero_window_long();
	test_never_reading_peer();
	return tap_done();
}
