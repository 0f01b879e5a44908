// SPDX-License-Identifier: BSD-2-Clause
/*
 * Seeded random segments against a listener and its connections: random
 * flags, sequence and acknowledgment numbers near and far from the
 * connection's, random (often malformed) options and payload sizes, and
 * random user calls in between.  Nothing may crash, the sequence-space
 * invariants must hold after every segment, and once everything is
 * closed and the timers have run out no socket or buffer is left.
 */
#include "tcp_fixture.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

static bool invariants(struct sl_sock *so)
{
	struct sl_tcp_sock *tp = &so->tcp;

	if (so->type != SL_SOCK_TCP || so->state < SL_TCP_ESTABLISHED ||
	    so->state == SL_TCP_TIME_WAIT)
		return true;
	return SEQ_LEQ(tp->snd_una, tp->snd_nxt) && SEQ_LEQ(tp->snd_nxt, tp->snd_max) &&
	       SEQ_LEQ(tp->snd_max, tp->snd_end + 1) &&
	       tp->sndq_bytes <= so->sndbuf && tp->ooo_count <= SL_TCP_OOO_MAX;
}

static void run(uint64_t seed, unsigned int nseg)
{
	struct sl_sock *l, *c[4] = { NULL };
	uint32_t irs[4];
	uint16_t port[4] = { 0 }, next_port = 10000;
	uint8_t payload[3000], opts[40];
	bool ok = true;
	unsigned int i, conns = 0, hits = 0;

	rng = seed * 0x2545f4914f6cdd1dull + 1;
	tf_init("fz");
	l = tf_listener(TF_LPORT, 4);
	for (i = 0; i < 4; i++) {
		irs[i] = rnd();
		c[i] = NULL;
	}
	memset(payload, 'p', sizeof(payload));
	for (i = 0; i < nseg; i++) {
		unsigned int k = rnd() % 4, r = rnd() % 16, plen = 0, olen;
		uint32_t seq, ack;
		uint8_t flags = (uint8_t)rnd();

		/* Mostly ACKs with data or FIN; now and then SYN or RST. */
		if (rnd() % 8)
			flags = (flags & (TH_FIN_ | TH_PSH_ | TH_URG_)) | TH_ACK_;
		if (rnd() % 4)
			flags &= (uint8_t)~TH_FIN_;
		struct tf_opts o = { 0 };

		if (c[k] && (c[k]->type != SL_SOCK_TCP || c[k]->state == SL_TCP_CLOSED ||
			     (c[k]->tcp.tflags & (SL_TF_PASSIVE | SL_TF_ACCQ)))) {
			if (c[k]->type == SL_SOCK_TCP && c[k]->state == SL_TCP_CLOSED &&
			    !(c[k]->tcp.tflags & (SL_TF_PASSIVE | SL_TF_ACCQ)))
				sl_tcp_close(T.s, c[k], tf_now_us);
			c[k] = NULL;
		}
		if (!c[k]) {
			struct sl_sock *n = NULL;

			if (r < 4) {
				struct tf_seg g;

				struct tf_opts so = { .mss = 200 + rnd() % 1300, .ws_on = rnd() % 2,
						      .ws = rnd() % 15, .sack_ok = rnd() % 2,
						      .ts = rnd() % 2, .tsval = rnd() };

				port[k] = next_port++;
				tf_seg_full(port[k], TF_LPORT, TH_SYN_, irs[k], 0, 8192, &so, NULL, 0);
				g = tf_last();
				if (g.valid && g.flags == (TH_SYN_ | TH_ACK_))
					tf_seg_full(port[k], TF_LPORT, TH_ACK_, irs[k] + 1, g.seq + 1,
						    8192, NULL, NULL, 0);
				irs[k] += 100000;
			}
			if (sl_tcp_accept(T.s, l, &n) == 0) {
				for (unsigned int j = 0; j < 4; j++)
					if (port[j] == ntohs(n->rport))
						k = j;
				if (c[k] && c[k] != n)
					sl_tcp_close(T.s, c[k], tf_now_us);
				c[k] = n;
				conns++;
			}
			if (!c[k])
				continue;
		}
		seq = c[k]->tcp.rcv_nxt + (r < 10 ? rnd() % 3000 : rnd());
		ack = c[k]->tcp.snd_una + (r < 12 ? rnd() % 3000 : rnd());
		if (rnd() % 2)
			plen = rnd() % 1400;
		if (rnd() % 4 == 0) {
			o.ts = 1;
			o.tsval = rnd();
		}
		if (rnd() % 4 == 0) {
			o.nsack = 1 + rnd() % 3;
			for (int b = 0; b < o.nsack; b++) {
				o.sack[b][0] = c[k]->tcp.snd_una + rnd() % 5000;
				o.sack[b][1] = o.sack[b][0] + rnd() % 3000;
			}
		}
		(void)opts;
		(void)olen;
		hits++;
		tf_seg_full(port[k], TF_LPORT, flags, seq, ack, (uint16_t)rnd(), &o, payload, plen);
		/* Random user calls. */
		switch (rnd() % 8) {
		case 0:
			if (c[k]->type == SL_SOCK_TCP)
				sl_tcp_send(T.s, c[k], payload, rnd() % 3000, 0, tf_now_us);
			break;
		case 1: {
			uint8_t b[2000];

			if (c[k]->type == SL_SOCK_TCP)
				sl_tcp_recv(T.s, c[k], b, sizeof(b), 0, tf_now_us);
			break;
		}
		case 2:
			tf_advance_ms(rnd() % 500);
			break;
		case 3:
			if (rnd() % 20 == 0 && c[k]->type == SL_SOCK_TCP) {
				sl_tcp_close(T.s, c[k], tf_now_us);
				c[k] = NULL;
			}
			break;
		default:
			break;
		}
		if (c[k] && c[k]->type == SL_SOCK_TCP && !invariants(c[k]))
			ok = false;
		tf_clear();
	}
	tap_ok(ok && conns > 0, "seed %llu: %u random segments (%u on %u connections), invariants held",
	       (unsigned long long)seed, nseg, hits, conns);
	tf_finish();
}

int main(void)
{
	for (uint64_t seed = 1; seed <= 20; seed++)
		run(seed, 20000);
	return tap_done();
}
