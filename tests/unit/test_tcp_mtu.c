// SPDX-License-Identifier: BSD-2-Clause
/*
 * TCP segments never pass the link's MTU: the MSS leaves room for the
 * timestamp option only, so while SACK blocks are due (data held out of
 * order) a full-sized data segment leaves them out (RFC 2018 4: SACK is
 * optional in any one segment) and the pure ACKs carry them.  Found over
 * the verbs link, whose UD MTU (1020 on Soft-RoCE) is a hard limit: a
 * 1032-byte retransmission was refused there, and the connection stalled.
 *
 * Path MTU discovery (RFC 1191 with RFC 5927's checks, as Linux's
 * tcp_v4_err()): an ICMP fragmentation needed quoting a sequence number in
 * the window lowers the destination's path MTU for every socket, the MSS
 * follows and the flight goes again at once; one outside the window, one
 * not below the path MTU, a socket with IP_PMTUDISC_DONT change nothing;
 * below 552 is 552; it is forgotten after 10 min.  Black-hole detection
 * (tcp_mtu_probing=1): 3 s of RTOs without an answer lower the MSS to
 * tcp_base_mss, each later RTO halves it.
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

/* ICMP fragmentation needed from a router (10.0.0.254) quoting our
 * segment sport -> dport with sequence number seq; next-hop MTU mtu. */
static void icmp_fragneeded(uint16_t sport, uint16_t dport, uint32_t seq, uint16_t mtu)
{
	uint32_t idx = sl_buf_alloc(T.s);
	uint8_t *p = sl_buf_data(T.s, idx);
	struct sl_ip *ip = (struct sl_ip *)p, *q = (struct sl_ip *)(p + 28);
	struct sl_icmp *ic = (struct sl_icmp *)(p + 20);
	struct sl_tcph *th = (struct sl_tcph *)(p + 48);

	memset(p, 0, 76);
	tcp_hdrs_put(q, th, T.us, T.peer, sport, dport, seq, 0, TH_ACK_, 1000, 0, 1400);
	ic->type = ICMP_UNREACH_;
	ic->code = ICMP_UNREACH_NEEDFRAG_;
	ic->seq = htons(mtu);
	ic->csum = sl_csum_fold(sl_csum_add(0, ic, 56));
	ip->ver_ihl = 0x45;
	ip->tot_len = htons(76);
	ip->ttl = 64;
	ip->proto = IPPROTO_ICMP_;
	inet_pton(AF_INET, "10.0.0.254", &ip->saddr);
	ip->daddr = T.us;
	ip->csum = sl_ip_csum(ip);
	sl_buf(T.s, idx)->len = 76;
	sl_ip_input(T.s, idx);
}

/* Data frames captured since the last tf_clear(): how many, the longest
 * (IP bytes), the first one's sequence number. */
static unsigned int data_frames(unsigned int *longest, uint32_t *first_seq)
{
	unsigned int n = 0;

	*longest = 0;
	for (unsigned int i = 0; i < T.n; i++) {
		struct tf_seg g = tf_parse(i);

		if (!g.valid || !g.plen)
			continue;
		if (!n)
			*first_seq = g.seq;
		n++;
		if (T.f[i].len > *longest)
			*longest = T.f[i].len;
	}
	return n;
}

static void test_pmtu_fragneeded(void)
{
	struct tf_opts o = { .mss = 1460, .ts = 1, .tsval = 100 };
	unsigned int longest, n, mss0;
	struct sl_sock *so, *so2;
	uint32_t iss, iss2, first = 0, una;
	int one = 1;

	tf_init("pmtu");
	so = tf_connect(IRS, &iss, &o, 65535);
	tap_ok(so != NULL, "pmtu: connected");
	if (!so)
		return;
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	mss0 = so->tcp.mss;
	tap_eq(mss0, 1448, "pmtu: MSS 1460 less the timestamps before any ICMP");
	sl_tcp_send(T.s, so, pattern, sizeof(pattern), 0, tf_now_us);
	una = so->tcp.snd_una;
	tap_ok(so->tcp.snd_nxt != una, "pmtu: data in flight");

	/* Outside the window (RFC 5927 4.1): above SND.NXT, below SND.UNA. */
	tf_clear();
	icmp_fragneeded(ntohs(so->lport), TF_PPORT, so->tcp.snd_nxt + 1, 1280);
	icmp_fragneeded(ntohs(so->lport), TF_PPORT, una - 1, 1280);
	tap_eq(tf_counter(SL_C_icmp_rx_oow), 2,
	       "pmtu: ICMPs quoting sequence numbers out of the window are counted");
	tap_eq(so->tcp.mss, mss0, "pmtu: ... and change nothing");
	tap_eq(sl_pmtu_get(T.s, T.peer), 1500, "pmtu: ... not even the path MTU");
	tap_eq(T.n, 0, "pmtu: ... and send nothing");

	/* In the window: the path MTU falls, the MSS follows, the flight goes
	 * again at once at the new size. */
	icmp_fragneeded(ntohs(so->lport), TF_PPORT, una, 1280);
	tap_eq(sl_pmtu_get(T.s, T.peer), 1280, "pmtu: the path MTU to the peer is 1280");
	tap_eq(so->tcp.mss, 1280 - 40 - 12, "pmtu: the MSS follows (less the timestamps)");
	tap_eq(tf_counter(SL_C_pmtu_learnt), 1, "pmtu: pmtu_learnt counted");
	tap_eq(tf_counter(SL_C_tcp_mtu_reduced), 1, "pmtu: tcp_mtu_reduced counted");
	n = data_frames(&longest, &first);
	tap_ok(n >= 1 && first == una, "pmtu: the first unacknowledged segment went again at once");
	tap_ok(longest <= 1280, "pmtu: no frame longer than the path MTU");
	tap_eq(so->tcp.soft_err, EMSGSIZE, "pmtu: EMSGSIZE kept as the soft error, as Linux");

	/* Not below what is known: ignored; below 552: 552. */
	icmp_fragneeded(ntohs(so->lport), TF_PPORT, una, 1400);
	tap_eq(sl_pmtu_get(T.s, T.peer), 1280, "pmtu: a higher MTU is ignored");
	tap_eq(tf_counter(SL_C_pmtu_ignored), 1, "pmtu: pmtu_ignored counted");
	tf_clear();

	/* A second connection to the same peer starts at the learnt MTU. */
	so2 = tf_connect(IRS + 5000, &iss2, &o, 65535);
	tap_ok(so2 && so2->tcp.mss == 1280 - 40 - 12,
	       "pmtu: another socket to the peer uses it too");
	if (so2) {
		/* Its own ICMP lowers the path below 552: 552 (ip_rt_min_pmtu). */
		sl_tcp_send(T.s, so2, pattern, 3000, 0, tf_now_us);
		icmp_fragneeded(ntohs(so2->lport), TF_PPORT, so2->tcp.snd_una, 300);
		tap_eq(sl_pmtu_get(T.s, T.peer), 552,
	       "pmtu: below ip_rt_min_pmtu the path MTU is 552");
		tap_eq(so2->tcp.mss, 552 - 40 - 12, "pmtu: ... and the MSS follows");
		/* The first connection follows the shared entry at its next send. */
		tf_clear();
		sl_tcp_send(T.s, so, pattern, 100, 0, tf_now_us);
		tap_eq(so->tcp.mss, 552 - 40 - 12,
	       "pmtu: the other connection follows at its next send");
	}

	/* Ten minutes on (Linux ip_rt_mtu_expires) the entry is forgotten. */
	tf_now_us += 601ull * 1000000;
	tap_eq(sl_pmtu_get(T.s, T.peer), 1500, "pmtu: forgotten after 10 min");
	tap_eq(tf_counter(SL_C_pmtu_expired), 1, "pmtu: pmtu_expired counted");
	tf_finish();
}

static void test_pmtu_dont(void)
{
	struct tf_opts o = { .mss = 1460, .ts = 1, .tsval = 100 };
	struct sl_sock *so;
	uint32_t iss;

	tf_init("pmtud");
	so = tf_connect(IRS, &iss, &o, 65535);
	tap_ok(so != NULL, "pmtu DONT: connected");
	if (!so)
		return;
	so->pmtudisc = IP_PMTUDISC_DONT + 1;
	sl_tcp_send(T.s, so, pattern, 4000, 0, tf_now_us);
	icmp_fragneeded(ntohs(so->lport), TF_PPORT, so->tcp.snd_una, 1280);
	tap_eq(sl_pmtu_get(T.s, T.peer), 1280, "pmtu DONT: the route learns it (Linux too)");
	tap_eq(so->tcp.mss, 1448, "pmtu DONT: the socket's MSS stays");
	tf_finish();
}

static void test_blackhole(void)
{
	struct tf_opts o = { .mss = 1460, .ts = 1, .tsval = 100 };
	unsigned int longest = 0, n;
	struct sl_sock *so;
	uint32_t iss, first = 0;
	int one = 1, rtos = 0;

	tf_init("bh");
	so = tf_connect(IRS, &iss, &o, 65535);
	tap_ok(so != NULL, "black hole: connected");
	if (!so)
		return;
	sl_tcp_setsockopt(T.s, so, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sl_tcp_send(T.s, so, pattern, sizeof(pattern), 0, tf_now_us);
	/* Nothing is answered: RTOs until 3 s have passed. */
	while (!tf_counter(SL_C_tcp_mtup_blackhole) && rtos < 20) {
		uint64_t before = tf_counter(SL_C_tcp_rto);

		tf_clear();
		while (tf_counter(SL_C_tcp_rto) == before)
			tf_advance_ms(10);
		rtos++;
	}
	tap_eq(tf_counter(SL_C_tcp_mtup_blackhole), 1,
	       "black hole: found after RTOs without an answer");
	tap_ok(tf_now_us - 1000000000ull >= 3000000,
	       "black hole: not before 3 s (tcp_retries1 from the 200 ms RTO)");
	tap_eq(so->tcp.mss, 1024 - 12, "black hole: MSS is tcp_base_mss (less the timestamps)");
	n = data_frames(&longest, &first);
	tap_ok(n == 1 && longest <= 1024 + 52, "black hole: the retransmission has the lower size");
	tap_eq(tf_counter(SL_C_pmtu_learnt), 0, "black hole: no path MTU learnt (no ICMP)");
	/* Still nothing: the next RTO halves it. */
	{
		uint64_t before = tf_counter(SL_C_tcp_rto);

		while (tf_counter(SL_C_tcp_rto) == before)
			tf_advance_ms(10);
	}
	tap_eq(so->tcp.mss, 512 - 12, "black hole: the next RTO halves it");
	tf_finish();
}

int main(void)
{
	test_established_ooo_full_segments_fit_mtu();
	test_pmtu_fragneeded();
	test_pmtu_dont();
	test_blackhole();
	return tap_done();
}
