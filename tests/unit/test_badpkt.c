// SPDX-License-Identifier: BSD-2-Clause
/*
 * Hostile input: truncated, oversized, bad-checksum and nonsense packets
 * are counted and dropped; nothing crashes, no buffer leaks, and the stack
 * still works afterwards.
 */
#include <errno.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))

static uint64_t rng = 12345;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* After changing a header field: a valid checksum again, then input. */
static void resum_input(struct sl_stack *s, uint8_t *pkt, size_t len)
{
	struct sl_ip *ip = (struct sl_ip *)pkt;

	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
	fx_input(s, pkt, len);
}

static uint64_t c(struct sl_stack *s, const char *n)
{
	return fx_counter(s, n);
}

int main(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("bad", "10.3.0.1", &cap);
	uint32_t free0 = s->lib->buf_free_count;
	uint8_t pkt[2048], pay[1600];
	struct sl_ip *ip = (struct sl_ip *)pkt;
	size_t len;

	memset(pay, 0xab, sizeof(pay));

	/* Truncated: shorter than an IPv4 header. */
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	fx_input(s, pkt, 19);
	tap_eq(c(s, "ip_rx_bad_hdr"), 1, "19-byte packet: bad header");

	/* Version 6 in an IPv4 packet. */
	ip->ver_ihl = 0x65;
	fx_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_bad_hdr"), 2, "version 6: bad header");

	/* IHL below 5 and beyond the packet. */
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	ip->ver_ihl = 0x44;
	fx_input(s, pkt, len);
	ip->ver_ihl = 0x4f;
	fx_input(s, pkt, 40);
	tap_eq(c(s, "ip_rx_bad_hdr"), 4, "IHL 4 and IHL past the end: bad header");

	/* tot_len larger than what arrived, and smaller than the header. */
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	ip->tot_len = htons(1000);
	resum_input(s, pkt, len);
	ip->tot_len = htons(12);
	resum_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_bad_hdr"), 6, "tot_len too long and too short: bad header");

	/* Header checksum wrong. */
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	ip->csum ^= 1;
	fx_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_bad_csum"), 1, "bad header checksum counted");

	/* Fragments: counted, not reassembled. */
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	ip->frag = htons(IP_MF_);
	resum_input(s, pkt, len);
	ip->frag = htons(100);
	resum_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_frag"), 2, "first and later fragments counted");

	/* Not for us; from a broadcast source. */
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.77", IPPROTO_UDP_, pay, 8);
	fx_input(s, pkt, len);
	len = fx_ip(pkt, "255.255.255.255", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	fx_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_not_ours"), 2, "foreign destination and broadcast source dropped");

	/* Our own address as the source, from the link: a martian.  (A SYN
	 * from ourselves to our own listener would make a socket talk to
	 * itself.) */
	len = fx_ip(pkt, "10.3.0.1", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	fx_input(s, pkt, len);
	len = fx_ip(pkt, "127.0.0.1", "10.3.0.1", IPPROTO_UDP_, pay, 8);
	fx_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_martian"), 2, "own and loopback sources from the link dropped");

	/* Unknown protocol: ICMP protocol unreachable goes back. */
	cap.n = 0;
	len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", 99, pay, 8);
	fx_input(s, pkt, len);
	tap_eq(c(s, "ip_rx_proto"), 1, "unknown protocol counted");
	tap_eq(cap.n, 1, "one reply sent");
	tap_eq(cap.frame[0][20], ICMP_UNREACH_, "it is ICMP unreachable");
	tap_eq(cap.frame[0][21], ICMP_UNREACH_PROTO_, "code: protocol unreachable");

	/* UDP: length beyond the packet, shorter than a header, bad checksum. */
	{
		struct sl_udp uh = { htons(1), htons(2), htons(100), 0 };

		len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, &uh, sizeof(uh));
		fx_input(s, pkt, len);
		uh.len = htons(4);
		len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, &uh, sizeof(uh));
		fx_input(s, pkt, len);
		uh.len = htons(8);
		uh.csum = htons(0x1234);
		len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_UDP_, &uh, sizeof(uh));
		fx_input(s, pkt, len);
		tap_eq(c(s, "udp_rx_bad"), 3, "three bad UDP datagrams counted");
	}

	/* ICMP: bad checksum; unreachable quoting garbage. */
	{
		uint8_t m[40] = { ICMP_ECHO_, 0 };

		len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_ICMP_, m, 8);
		fx_input(s, pkt, len);
		m[0] = ICMP_UNREACH_;
		m[1] = ICMP_UNREACH_PORT_;
		m[8] = 0x45;
		((struct sl_icmp *)m)->csum = sl_csum_fold(sl_csum_add(0, m, 20));
		len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", IPPROTO_ICMP_, m, 20);
		fx_input(s, pkt, len);
		tap_eq(c(s, "icmp_rx_bad"), 2, "bad ICMP checksum and short quote counted");
	}

	/* Oversized: a frame longer than a buffer never gets in (the link
	 * checks), and a packet whose tot_len exceeds it is bad. */

	/* 200,000 random packets: random bytes, random lengths, half of them
	 * with a valid IPv4 header around random payload. */
	for (int i = 0; i < 200000; i++) {
		size_t n = rnd() % 1500;

		for (size_t j = 0; j < n; j++)
			pay[j] = (uint8_t)rnd();
		if (i & 1) {
			static const uint8_t protos[] = { IPPROTO_TCP_, IPPROTO_UDP_, IPPROTO_ICMP_ };

			len = fx_ip(pkt, "10.3.0.9", "10.3.0.1", protos[rnd() % 3], pay, n);
			fx_input(s, pkt, len);
		} else {
			fx_input(s, pay, n);
		}
		cap.n = 0;
		fx_clock_us += 10;
		if (i % 1000 == 0)
			sluice_stack_poll(ST(s));
	}
	tap_ok(c(s, "ip_rx") >= 200000, "all 200000 random packets were seen");
	/* Random fragments wait for the rest of their datagrams until
	 * ipfrag_time (30 s) has passed. */
	fx_clock_us += 31000000;
	sluice_stack_poll(ST(s));
	tap_eq(s->lib->buf_free_count + 0, free0, "no buffer leaked");

	/* And the stack still works. */
	{
		struct sockaddr_in a = fx_addr("10.3.0.1", 4000);
		int x = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
		char b[8];

		sluice_bind(ST(s), x, &a);
		sluice_sendto(ST(s), x, "ok", 2, 0, &a);
		tap_eq(sluice_recv(ST(s), x, b, sizeof(b), 0), 2, "stack still delivers");
		sluice_close(ST(s), x);
	}
	/* TCP state may still hold buffers for sockets random SYNs made; the
	 * pool must be whole once they are gone. */
	tap_eq(s->lib->buf_free_count, free0, "pool whole at the end");
	fx_destroy(s);
	return tap_done();
}
