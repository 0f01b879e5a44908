// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP segments never pass the link's MTU: the MSS leaves room for the
 * timestamp option only, so while SACK blocks are due (data held out of
 * order) a full-sized data segment leaves them out (RFC 2018 4: SACK is
 * optional in any one segment) and the pure ACKs carry them.  Found over
 * the verbs link, whose UD MTU (1020 on Soft-RoCE) is a hard limit: a
 * 1032-byte retransmission was refused there, and the connection stalled.
 */
#include "tcp_fixture.h"

#define IRS 70000u

static uint8_t pattern[8000];

static void test_established_ooo_full_segments_fit_mtu(void)
{
	struct tf_opts o = { .mss = 1460, .sack_ok = 1, .ts = 1, .tsval = 100 };
	unsigned int mtu, over = 0, data_segs = 0, sack_acks = 0, sack_full = 0, sack_short = 0;
	struct sl_sock *so;
	uint32_t iss;
	int one = 1;

	tf_init("mtu");
	mtu = T.s->r->mtu;
	so = tf_connect(IRS, &iss, &o, 65535);
	tap_ok(so && (so->tcp.tflags & SL_TF_SACK) && (so->tcp.tflags & SL_TF_TS),
	       "connected with SACK and timestamps");
	if (!so)
		return;
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1, iss + 1, 65535,
		    &(struct tf_opts){ .ts = 1, .tsval = 101 }, NULL, 0);
	/* The peer's bytes 100..199 arrive before 0..99: held out of order. */
	tf_clear();
	tf_seg_full(TF_PPORT, ntohs(so->lport), TH_ACK_, IRS + 1 + 100, iss + 1, 65535,
		    &(struct tf_opts){ .ts = 1, .tsval = 102 }, pattern, 100);
	tap_ok(so->tcp.ooo_bytes == 100, "100 bytes held out of order");
	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (g.valid && g.plen == 0 && g.nsack == 1)
			sack_acks++;
	}
	tap_ok(sack_acks >= 1, "the duplicate ACK carries a SACK block");
	tf_clear();
	sl_tcp_send(T.s, so, pattern, sizeof(pattern), 0, tf_now_us);
	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (!g.valid || !g.plen)
			continue;
		data_segs++;
		if (T.f[i].len > mtu)
			over++;
		if (g.nsack && g.plen == so->tcp.mss)
			sack_full++;
		else if (g.nsack)
			sack_short++;
	}
	tap_ok(data_segs >= 2, "data segments sent while SACK blocks are due");
	tap_eq(over, 0, "no segment is longer than the MTU");
	tap_eq(sack_full, 0, "full-sized data segments leave the SACK blocks out");
	tap_eq(sack_short, 1, "the short last segment has room for them and carries them");
	tf_finish();
}

int main(void)
{
	test_established_ooo_full_segments_fit_mtu();
	return tap_done();
}
