// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv4 fragments, both ways, and the ICMP error rate limit, as Linux:
 * - reassembly (ip_fragment.c): out of order, a datagram larger than a
 *   packet buffer arrives whole; a duplicate fragment is dropped alone; an
 *   overlapping one drops the whole datagram (RFC 5722); a datagram not
 *   whole after ipfrag_time (30 s) is dropped, and an ICMP time exceeded
 *   sent if its first fragment came; more queues than the table
 *   holds are refused; a bad UDP checksum over the whole is caught;
 * - fragmentation (ip_fragment()): a UDP datagram larger than the path MTU
 *   goes in fragments without DF under IP_PMTUDISC_WANT, multiples of 8,
 *   MF on all but the last; with IP_PMTUDISC_DO it is EMSGSIZE;
 * - ICMP errors (icmp.c): 6 to one host at once, then one a second
 *   (icmp_ratelimit); 50 at once over all hosts (icmp_msgs_burst).
 */
#include "tcp_fixture.h"

static uint8_t data[20000];

/* A fragment from src of datagram id: UDP payload bytes [off, off + len)
 * of the datagram whole (UDP header included), more to come if mf. */
static void frag_in(uint32_t src, uint16_t id, const uint8_t *whole, unsigned int off,
		    unsigned int len, bool mf)
{
	uint32_t idx = sl_buf_alloc(T.s);
	uint8_t *p = sl_buf_data(T.s, idx);
	struct sl_ip *ip = (struct sl_ip *)p;

	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tot_len = htons((uint16_t)(20 + len));
	ip->id = htons(id);
	ip->frag = htons((uint16_t)((off / 8) | (mf ? IP_MF_ : 0)));
	ip->ttl = 64;
	ip->proto = IPPROTO_UDP_;
	ip->saddr = src;
	ip->daddr = T.us;
	ip->csum = sl_ip_csum(ip);
	memcpy(p + 20, whole + off, len);
	sl_buf(T.s, idx)->len = (uint16_t)(20 + len);
	sl_ip_input(T.s, idx);
}

/* A UDP datagram of n payload bytes (data) from the peer's port 7000 to
 * port 9000, its checksum right (or broken), into out. */
static unsigned int dgram(uint8_t *out, unsigned int n, bool bad_csum)
{
	struct sl_udp *uh = (struct sl_udp *)out;

	uh->sport = htons(7000);
	uh->dport = htons(9000);
	uh->len = htons((uint16_t)(8 + n));
	uh->csum = 0;
	memcpy(out + 8, data, n);
	uh->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(T.peer, T.us, IPPROTO_UDP_,
							   (uint16_t)(8 + n)), out, 8 + n));
	if (!uh->csum)
		uh->csum = 0xffff;
	if (bad_csum)
		uh->csum ^= 0x0101;
	return 8 + n;
}

static ssize_t recv_one(struct sl_sock *so, uint8_t *buf, size_t len)
{
	uint32_t saddr;
	uint16_t sport;

	return sl_udp_recvfrom(T.s, so, buf, len, MSG_DONTWAIT, &saddr, &sport, NULL);
}

static struct sl_sock *udp_bound(uint16_t port)
{
	struct sl_sock *so = sl_sock_alloc(T.s, SL_SOCK_UDP);

	if (so && sl_sock_bind(T.s, so, 0, htons(port)))
		return NULL;
	return so;
}

static void test_reassembly(void)
{
	static uint8_t whole[8100], got[9000];
	struct sl_sock *so;
	unsigned int n;
	ssize_t r;

	tf_init("frag");
	so = udp_bound(9000);
	tap_ok(so != NULL, "reasm: a UDP socket on port 9000");
	if (!so)
		return;
	/* 5,000 bytes (more than a 2 KiB buffer) in four fragments, last
	 * first, the first last. */
	n = dgram(whole, 5000, false);
	frag_in(T.peer, 1, whole, 4440, n - 4440, false);
	frag_in(T.peer, 1, whole, 1480, 1480, true);
	frag_in(T.peer, 1, whole, 2960, 1480, true);
	tap_eq(recv_one(so, got, sizeof(got)), -EAGAIN,
	       "reasm: nothing before the datagram is whole");
	frag_in(T.peer, 1, whole, 0, 1480, true);
	r = recv_one(so, got, sizeof(got));
	tap_ok(r == 5000 && !memcmp(got, data, 5000),
	       "reasm: 5,000 bytes in four fragments out of order arrive whole");
	tap_eq(tf_counter(SL_C_ip_rx_frag), 4, "reasm: ip_rx_frag counts the fragments");
	tap_eq(tf_counter(SL_C_ip_reasm_ok), 1, "reasm: ip_reasm_ok counted");

	/* A duplicate is dropped alone. */
	n = dgram(whole, 2000, false);
	frag_in(T.peer, 2, whole, 0, 1480, true);
	frag_in(T.peer, 2, whole, 0, 1480, true);
	frag_in(T.peer, 2, whole, 1480, n - 1480, false);
	r = recv_one(so, got, sizeof(got));
	tap_ok(r == 2000 && !memcmp(got, data, 2000),
	       "reasm: a duplicate fragment does not spoil the datagram");
	tap_eq(tf_counter(SL_C_ip_reasm_dup), 1, "reasm: ip_reasm_dup counted");

	/* An overlap drops it all (RFC 5722, Linux since 4.19): the rest of
	 * the datagram arriving after makes nothing whole. */
	frag_in(T.peer, 3, whole, 0, 1480, true);
	frag_in(T.peer, 3, whole, 1472, n - 1472, false);
	frag_in(T.peer, 3, whole, 1480, n - 1480, false);
	tap_eq(recv_one(so, got, sizeof(got)), -EAGAIN,
	       "reasm: overlapping fragments: nothing delivered");
	tap_eq(tf_counter(SL_C_ip_reasm_overlap), 1, "reasm: ip_reasm_overlap counted");

	/* A bad checksum over the whole (a chain: checked by reassembly). */
	n = dgram(whole, 5000, true);
	frag_in(T.peer, 4, whole, 0, 1480, true);
	frag_in(T.peer, 4, whole, 1480, 1480, true);
	frag_in(T.peer, 4, whole, 2960, 1480, true);
	frag_in(T.peer, 4, whole, 4440, n - 4440, false);
	tap_eq(recv_one(so, got, sizeof(got)), -EAGAIN,
	       "reasm: a bad UDP checksum over the whole drops it");
	tap_eq(tf_counter(SL_C_udp_rx_bad), 1, "reasm: udp_rx_bad counted");

	/* Not whole in 30 s (ipfrag_time): dropped, its buffers back. */
	n = dgram(whole, 3000, false);
	frag_in(T.peer, 5, whole, 0, 1480, true);
	tf_clear();
	tf_advance_ms(29000);
	tap_eq(tf_counter(SL_C_ip_reasm_timeout), 0, "reasm: still waiting at 29 s");
	tf_advance_ms(2000);
	/* This one and the tail of the overlapped datagram, which came after
	 * its queue was dropped and began another (Linux: the same). */
	tap_eq(tf_counter(SL_C_ip_reasm_timeout), 2, "reasm: given up after 30 s");
	tap_eq(T.s->lib->frag_queues, 0, "reasm: no queue left");
	/* Its source hears of it, quoting the first fragment (ip_expire());
	 * the overlapped tail had no first fragment: nothing for that. */
	{
		unsigned int te = 0;

		for (unsigned int i = 0; i < T.n; i++) {
			const uint8_t *f = T.f[i].data;
			const struct sl_ip *q = (const struct sl_ip *)(f + 28);

			if (f[9] == IPPROTO_ICMP_ && f[20] == ICMP_TIMXCEED_ && f[21] == 1 &&
			    q->id == htons(5) && !(ntohs(q->frag) & IP_OFFMASK_))
				te++;
		}
		tap_eq(te, 1, "reasm: one ICMP time exceeded, quoting the first fragment");
		tap_eq(T.n, 1, "reasm: ... and nothing else");
		tap_eq(tf_counter(SL_C_icmp_timxceed_tx), 1, "reasm: icmp_timxceed_tx counted");
	}

	/* More datagrams at once than the table holds: refused, counted. */
	for (unsigned int i = 0; i < SL_FRAGQ_N + 1; i++)
		frag_in(T.peer, (uint16_t)(100 + i), whole, 0, 1480, true);
	tap_eq(tf_counter(SL_C_ip_reasm_mem), 1,
	       "reasm: the queue past the table's is refused (ip_reasm_mem)");
	tf_advance_ms(31000);
	tap_eq(T.s->lib->frag_mem, 0, "reasm: all fragment memory given back");
	sl_sock_free(T.s, so);
	tf_finish();
}

static void test_fragmentation(void)
{
	static uint8_t whole[4000];
	struct sl_sock *so;
	unsigned int off_ok = 1, df = 0, total = 0, mf_last = 1;
	uint32_t sum;
	ssize_t r;
	int v;

	tf_init("fragout");
	so = udp_bound(9001);
	tap_ok(so != NULL, "frag: a UDP socket");
	if (!so)
		return;
	tf_clear();
	r = sl_udp_sendto(T.s, so, data, 3000, 0, T.peer, htons(7000), NULL);
	tap_eq(r, 3000, "frag: 3,000 bytes to a host past the link take IP_PMTUDISC_WANT's path");
	tap_eq(T.n, 3, "frag: three fragments");
	for (unsigned int i = 0; i < T.n; i++) {
		const struct sl_ip *ip = (const struct sl_ip *)T.f[i].data;
		unsigned int off = (ntohs(ip->frag) & IP_OFFMASK_) * 8, len = T.f[i].len - 20;

		if (T.f[i].len > 1500 || off != total || (i + 1 < T.n && (len & 7)))
			off_ok = 0;
		if (ntohs(ip->frag) & IP_DF_)
			df++;
		if (!!(ntohs(ip->frag) & IP_MF_) != (i + 1 < T.n))
			mf_last = 0;
		memcpy(whole + off, T.f[i].data + 20, len);
		total += len;
	}
	tap_ok(off_ok && total == 3008, "frag: at most the MTU each, in order, multiples of 8");
	tap_eq(df, 0, "frag: no DF on fragments");
	tap_ok(mf_last, "frag: MF on all but the last");
	sum = sl_csum_add(sl_csum_pseudo(T.us, T.peer, IPPROTO_UDP_, 3008), whole, 3008);
	tap_ok(sl_csum_fold(sum) == 0 && !memcmp(whole + 8, data, 3000),
	       "frag: put together, the datagram and its checksum are right");
	tap_eq(tf_counter(SL_C_ip_frag_ok), 1, "frag: ip_frag_ok counted");
	tap_eq(tf_counter(SL_C_ip_frag_create), 3, "frag: ip_frag_create counted");

	/* One that fits carries DF (WANT). */
	tf_clear();
	sl_udp_sendto(T.s, so, data, 1000, 0, T.peer, htons(7000), NULL);
	tap_ok(T.n == 1 && (ntohs(((const struct sl_ip *)T.f[0].data)->frag) & IP_DF_),
	       "frag: a datagram that fits goes whole with DF");

	/* A learnt path MTU makes the fragments smaller. */
	sl_pmtu_update(T.s, T.peer, 1000);
	tf_clear();
	sl_udp_sendto(T.s, so, data, 3000, 0, T.peer, htons(7000), NULL);
	tap_ok(T.n == 4 && T.f[0].len <= 1000,
	       "frag: at the path MTU learnt (1000): four fragments");

	/* IP_PMTUDISC_DO: EMSGSIZE, as Linux. */
	v = IP_PMTUDISC_DO;
	so->pmtudisc = (uint8_t)(v + 1);
	tf_clear();
	r = sl_udp_sendto(T.s, so, data, 3000, 0, T.peer, htons(7000), NULL);
	tap_ok(r == -EMSGSIZE && T.n == 0, "frag: IP_PMTUDISC_DO: EMSGSIZE, nothing sent");
	tap_eq(tf_counter(SL_C_ip_tx_toobig), 1, "frag: ip_tx_toobig counted");
	sl_sock_free(T.s, so);
	tf_finish();
}

/* A datagram from src to a closed port of ours. */
static void closed_port_in(uint32_t src)
{
	static uint8_t u[8];

	((struct sl_udp *)u)->sport = htons(7000);
	((struct sl_udp *)u)->dport = htons(9999);
	((struct sl_udp *)u)->len = htons(8);
	frag_in(src, 0, u, 0, 8, false);
}

static unsigned int unreach_sent(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < T.n; i++) {
		const struct sl_ip *ip = (const struct sl_ip *)T.f[i].data;

		if (ip->proto == IPPROTO_ICMP_ && T.f[i].data[20] == ICMP_UNREACH_)
			n++;
	}
	return n;
}

static void test_icmp_ratelimit(void)
{
	unsigned int a, b;

	tf_init("icmprl");
	tf_clear();
	for (int i = 0; i < 100; i++)
		closed_port_in(T.peer);
	a = unreach_sent();
	tap_eq(a, 6, "ICMP: a flood from one host gets 6 port unreachables (icmp_ratelimit burst)");
	tap_eq(tf_counter(SL_C_icmp_ratelimit_host), 94,
	       "ICMP: the rest counted (icmp_ratelimit_host)");
	tf_clear();
	tf_advance_ms(1000);
	for (int i = 0; i < 10; i++)
		closed_port_in(T.peer);
	tap_eq(unreach_sent(), 1, "ICMP: a second later, one more");
	/* 60 hosts at once: 50 at most over all (icmp_msgs_burst). */
	tf_advance_ms(1000);
	tf_clear();
	for (int i = 0; i < 60; i++) {
		uint32_t src = htonl(0x0a000000u | (uint32_t)(10 + i));

		closed_port_in(src);
	}
	b = unreach_sent();
	tap_ok(b <= 50 && b >= 45, "ICMP: 60 hosts at once get at most 50 (icmp_msgs_burst)");
	tap_ok(tf_counter(SL_C_icmp_ratelimit_global) >= 10,
	       "ICMP: the rest counted (icmp_ratelimit_global)");
	tf_finish();
}

int main(void)
{
	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	test_reassembly();
	test_fragmentation();
	test_icmp_ratelimit();
	return tap_done();
}
