// SPDX-License-Identifier: BSD-2-Clause
/*
 * Bugs the fuzz targets found (tests/fuzz/), each pinned down by a test
 * that failed before its fix.  The crashing inputs themselves are kept in
 * tests/fuzz/regress/ and replayed by tests/host/test_fuzz.sh.
 *
 *   test (peer 10.0.0.2:5000) --segments--> TCP core --> capture
 */
#include "tcp_fixture.h"

#define IRS 70000u

static uint8_t pattern[20000];

/* Every captured segment fits the MTU, and options plus payload fit the
 * peer's MSS (RFC 9293 3.7.1: Eff.snd.MSS counts the options). */
static void check_sizes(const char *what, unsigned int mtu, unsigned int peer_mss)
{
	unsigned int worst = 0, worst_tcp = 0, data = 0;

	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (!g.valid)
			continue;
		if (T.f[i].len > worst)
			worst = T.f[i].len;
		/* TCP header beyond 20 bytes, plus payload */
		if (T.f[i].len - 40u > worst_tcp)
			worst_tcp = T.f[i].len - 40u;
		data += g.plen;
	}
	tap_ok(data > 0, "%s: data was sent (%u bytes)", what, data);
	if (!tap_ok(worst <= mtu, "%s: every segment fits the MTU of %u", what, mtu))
		printf("#   largest packet %u bytes\n", worst);
	if (!tap_ok(worst_tcp <= peer_mss, "%s: options + payload fit the peer's MSS %u", what,
		    peer_mss))
		printf("#   largest options + payload %u bytes\n", worst_tcp);
}

/*
 * fuzz_tcp, crash-bdeab2c4: with timestamps and SACK agreed and the peer's
 * data waiting out of order, a full-sized data segment carried SACK blocks
 * on top of its MSS of payload: 20 + 20 + 12 (TS) + 12 (one block) + 1448
 * = 1512 bytes on a 1500-byte path, which a real link drops (DF is set).
 */
static void test_established_sack_blocks_on_full_segments(void)
{
	struct tf_opts o = { .mss = 1460, .sack_ok = 1, .ts = 1, .tsval = 100 };
	struct tf_opts ooo;
	struct sl_sock *so;
	uint32_t iss = 0;
	int one = 1;

	tf_init("sackmtu");
	so = tf_connect(IRS, &iss, &o, 65535);
	tap_ok(so && so->state == SL_TCP_ESTABLISHED, "established with TS and SACK");
	if (!so) {
		tf_finish();
		return;
	}
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* The peer's bytes 1000..1099 arrive, 0..999 are missing. */
	ooo = (struct tf_opts){ .ts = 1, .tsval = 101 };
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1 + 1000, iss + 1, 65535, &ooo,
		    pattern, 100);
	tap_ok(so->tcp.ooo_bytes == 100, "the peer's data waits out of order");
	tf_clear();
	tap_eq(sl_tcp_send(T.s, so, pattern, 3 * 1448, 0, tf_now_us), 3 * 1448,
	       "three full segments queued");
	check_sizes("with SACK blocks to report", 1500, 1460);
	/* And their retransmission, after an RTO, too. */
	tf_clear();
	tf_advance_ms(1100);
	check_sizes("retransmitted with SACK blocks to report", 1500, 1460);
	tf_finish();
}

/* fuzz_tcp, regress/fuzz_tcp/orphan-persist-mss-shrunk: data queued at
 * one MSS, then TCP_MAXSEG made the MSS smaller; the queued buffer went out
 * larger than the MSS, or, with a cwnd of one (small) MSS and nothing in
 * flight, never; and persist, rearmed afresh by each override attempt,
 * never backed off, so the orphan probed for ever. */
static void test_mss_shrunk_under_queued_data(void)
{
	struct sl_sock *so;
	uint32_t iss = 0, sent = 0;
	int mss = 536;

	tf_init("mssshrink");
	so = tf_connect(IRS, &iss, &(struct tf_opts){ .mss = 1460 }, 0);
	tap_ok(so && so->state == SL_TCP_ESTABLISHED, "established, the peer's window 0");
	if (!so) {
		tf_finish();
		return;
	}
	tap_eq(sl_tcp_send(T.s, so, pattern, 1400, 0, tf_now_us), 1400,
	       "1400 bytes queued at MSS 1460, held by the zero window");
	/* TCP_MAXSEG no longer changes an established connection's MSS (as
	 * Linux); the shrink it made is made here directly. */
	so->tcp.user_mss = (uint16_t)mss;
	sl_tcp_set_mss(T.s, so);
	tap_ok(so->tcp.mss <= mss, "the MSS shrinks to 536");
	so->tcp.cwnd = so->tcp.mss;	/* as after an RTO */
	tf_clear();
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 65535, NULL, NULL, 0);
	for (int i = 0; i < 20 && so->tcp.snd_max != so->tcp.snd_end; i++) {
		tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, so->tcp.snd_max, 65535,
			    NULL, NULL, 0);
		tf_advance_ms(10);
	}
	for (unsigned int i = 0; i < T.n; i++)
		sent += tf_parse(i).plen;
	tap_eq(sent, 1400u, "the window opens: all of it goes, with a cwnd of one MSS");
	check_sizes("after the MSS shrank", 1500, 536);
	tf_finish();
}

int main(void)
{
	memset(pattern, 'f', sizeof(pattern));
	test_established_sack_blocks_on_full_segments();
	test_mss_shrunk_under_queued_data();
	return tap_done();
}
