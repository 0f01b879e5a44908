// SPDX-License-Identifier: BSD-2-Clause
/*
 * ARP (RFC 826) for Ethernet-style links without the module: requests for
 * unresolved neighbours with the packet held, the reply releasing it,
 * answering requests for our address, retries, and a counted drop when a
 * neighbour never answers; TCP in a broadcast frame is not taken.
 */
#include "link/eth.h"
#include "stack_fixture.h"

struct wire {
	struct sl_link link;
	unsigned int n;
	uint16_t len[16];
	uint8_t frame[16][2048];
};

static int wire_xmit(struct sl_link *l, const void *frame, size_t len)
{
	struct wire *w = (struct wire *)l;

	if (w->n < 16) {
		w->len[w->n] = (uint16_t)len;
		memcpy(w->frame[w->n++], frame, len);
	}
	return 0;
}

static const uint8_t peer_mac[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };

/* Send IP packet pkt to next hop nh through the Ethernet layer. */
static void ip_out(struct sl_stack *s, struct sl_eth_link *el, const uint8_t *pkt, size_t len,
		   uint32_t nh, int *ret)
{
	uint32_t idx;

	sl_lock(s);
	idx = sl_buf_alloc(s);
	memcpy(sl_buf_data(s, idx), pkt, len);
	sl_buf(s, idx)->len = (uint16_t)len;
	*ret = sl_eth_tx(s, el, idx, nh);
	sl_buf_free(s, idx);
	sl_unlock(s);
}

/* Feed an ARP packet (op, sender ip/mac, target ip) to the stack. */
static void arp_in(struct sl_stack *s, struct sl_eth_link *el, uint16_t op, const char *spa,
		   const uint8_t *sha, const char *tpa)
{
	uint32_t idx;
	struct sl_eth *eh;
	struct sl_arp *a;

	sl_lock(s);
	idx = sl_buf_alloc(s);
	sl_buf(s, idx)->off = SL_HEADROOM - ETH_HLEN_;
	eh = (struct sl_eth *)sl_buf_data(s, idx);
	memset(eh->dst, 0xff, 6);
	memcpy(eh->src, sha, 6);
	eh->type = htons(ETHERTYPE_ARP_);
	a = (struct sl_arp *)(eh + 1);
	a->htype = htons(1);
	a->ptype = htons(ETHERTYPE_IP_);
	a->hlen = 6;
	a->plen = 4;
	a->op = htons(op);
	memcpy(a->sha, sha, 6);
	inet_pton(AF_INET, spa, &a->spa);
	memset(a->tha, 0, 6);
	inet_pton(AF_INET, tpa, &a->tpa);
	sl_buf(s, idx)->len = sizeof(*eh) + sizeof(*a);
	sl_eth_input(s, el, idx);
	sl_unlock(s);
}

/* Feed IPv4 packet pkt to the stack in an Ethernet frame to dst. */
static void ip_in(struct sl_stack *s, struct sl_eth_link *el, const uint8_t *dst,
		  const uint8_t *pkt, size_t len)
{
	uint32_t idx;
	struct sl_eth *eh;

	sl_lock(s);
	idx = sl_buf_alloc(s);
	sl_buf(s, idx)->off = SL_HEADROOM - ETH_HLEN_;
	eh = (struct sl_eth *)sl_buf_data(s, idx);
	memcpy(eh->dst, dst, 6);
	memcpy(eh->src, peer_mac, 6);
	eh->type = htons(ETHERTYPE_IP_);
	memcpy(eh + 1, pkt, len);
	sl_buf(s, idx)->len = (uint16_t)(sizeof(*eh) + len);
	sl_eth_input(s, el, idx);
	sl_unlock(s);
}

/* A SYN from 10.6.0.9:4000 to 10.6.0.1:port, IPv4 and TCP, in out. */
static size_t syn_pkt(uint8_t *out, uint16_t port)
{
	struct sl_tcph th = { .sport = htons(4000), .dport = htons(port), .seq = htonl(1),
			      .off = 5 << 4, .flags = TH_SYN_, .win = htons(8192) };
	size_t len = fx_ip(out, "10.6.0.9", "10.6.0.1", IPPROTO_TCP_, &th, sizeof(th));
	struct sl_ip *ip = (struct sl_ip *)out;
	struct sl_tcph *t = (struct sl_tcph *)(ip + 1);

	t->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_TCP_,
							  sizeof(*t)), t, sizeof(*t)));
	return len;
}

int main(void)
{
	struct sl_stack *s = fx_stack("arp", "10.6.0.1", NULL);
	struct wire w = { .link = { .mtu = 1500 } };
	struct sl_eth_link el = { .link = &w.link, .xmit = wire_xmit };
	uint32_t free0 = s->lib->buf_free_count, nh;
	const struct sl_eth *eh;
	const struct sl_arp *a;
	uint8_t pkt[128];
	size_t len;
	int ret;

	memcpy(s->lib->mac, "\x02\x11\x22\x33\x44\x55", 6);
	inet_pton(AF_INET, "10.6.0.9", &nh);

	/* An IP packet to an unknown neighbour: held, and a request goes out. */
	len = fx_ip(pkt, "10.6.0.1", "10.6.0.9", IPPROTO_UDP_, "payload!", 8);
	ip_out(s, &el, pkt, len, nh, &ret);
	tap_eq(ret, 0, "send to an unresolved neighbour is accepted");
	tap_eq(w.n, 1, "one frame went out");
	eh = (const struct sl_eth *)w.frame[0];
	a = (const struct sl_arp *)(eh + 1);
	tap_ok(!memcmp(eh->dst, "\xff\xff\xff\xff\xff\xff", 6), "to the broadcast address");
	tap_eq(ntohs(eh->type), ETHERTYPE_ARP_, "an ARP frame");
	tap_eq(ntohs(a->op), 1, "a request");
	tap_eq(a->tpa, nh, "asking for 10.6.0.9");
	tap_eq(a->spa, s->lib->ip_addr, "from our address");
	tap_ok(!memcmp(a->sha, s->lib->mac, 6), "with our MAC");
	tap_eq(free0 - s->lib->buf_free_count, 1, "one buffer held for the neighbour");

	/* The reply releases the held packet, addressed to the peer's MAC. */
	arp_in(s, &el, 2, "10.6.0.9", peer_mac, "10.6.0.1");
	tap_eq(w.n, 2, "the held packet went out on the reply");
	eh = (const struct sl_eth *)w.frame[1];
	tap_ok(!memcmp(eh->dst, peer_mac, 6), "to the neighbour's MAC");
	tap_eq(ntohs(eh->type), ETHERTYPE_IP_, "as IPv4");
	tap_ok(!memcmp(w.frame[1] + ETH_HLEN_ + 20, "payload!", 8), "with its payload");
	tap_eq(s->lib->buf_free_count, free0, "hold buffer returned");

	/* Resolved now: the next packet goes straight out. */
	ip_out(s, &el, pkt, len, nh, &ret);
	tap_eq(w.n, 3, "resolved neighbour: sent at once");

	/* A request for our address is answered. */
	arp_in(s, &el, 1, "10.6.0.20", peer_mac, "10.6.0.1");
	tap_eq(w.n, 4, "request for us answered");
	a = (const struct sl_arp *)(w.frame[3] + ETH_HLEN_);
	tap_eq(ntohs(a->op), 2, "with a reply");
	tap_ok(!memcmp(a->sha, s->lib->mac, 6), "giving our MAC");
	tap_ok(!memcmp(a->tha, peer_mac, 6), "to the asker");
	/* A request for another address is not. */
	arp_in(s, &el, 1, "10.6.0.21", peer_mac, "10.6.0.77");
	tap_eq(w.n, 4, "request for someone else ignored");

	/* Bad ARP: counted. */
	{
		uint64_t bad0 = fx_counter(s, "arp_rx_bad");
		uint8_t mc[6] = { 0x01, 0, 0x5e, 0, 0, 1 };

		arp_in(s, &el, 2, "10.6.0.30", mc, "10.6.0.1");
		tap_eq(fx_counter(s, "arp_rx_bad"), bad0 + 1, "multicast sender MAC is bad");
	}

	/* A group needs no ARP: its MAC is 01-00-5E and the low 23 bits of
	 * the group (RFC 1112 6.4), the 24th dropped. */
	inet_pton(AF_INET, "239.129.2.3", &nh);
	w.n = 0;
	len = fx_ip(pkt, "10.6.0.1", "239.129.2.3", IPPROTO_UDP_, "payload!", 8);
	ip_out(s, &el, pkt, len, nh, &ret);
	tap_ok(ret == 0 && w.n == 1, "a datagram to a group goes out at once");
	eh = (const struct sl_eth *)w.frame[0];
	tap_ok(!memcmp(eh->dst, "\x01\x00\x5e\x01\x02\x03", 6) &&
	       ntohs(eh->type) == ETHERTYPE_IP_,
	       "as IPv4 to 01:00:5e:01:02:03, no ARP request");
	tap_eq(s->lib->buf_free_count, free0, "nothing held for it");

	/* Unicast TCP in a link-layer broadcast frame is dropped and counted
	 * (Linux's tcp_v4_rcv() takes only PACKET_HOST); in a frame to our
	 * MAC the same SYN, to a closed port, is answered with a reset. */
	len = syn_pkt(pkt, 7);
	ip_in(s, &el, (const uint8_t *)"\xff\xff\xff\xff\xff\xff", pkt, len);
	tap_eq(fx_counter(s, "tcp_rx_bcast"), 1, "a SYN in a broadcast frame: dropped, tcp_rx_bcast");
	tap_eq(fx_counter(s, "tcp_reset_tx"), 0, "not answered");
	ip_in(s, &el, s->lib->mac, pkt, len);
	tap_eq(fx_counter(s, "tcp_reset_tx"), 1, "in a frame to our MAC: answered with a reset");
	tap_eq(fx_counter(s, "tcp_rx_bcast"), 1, "and not counted as broadcast");
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");

	/* A neighbour that never answers: 3 requests, then a counted drop. */
	inet_pton(AF_INET, "10.6.0.99", &nh);
	w.n = 0;
	ip_out(s, &el, pkt, len, nh, &ret);
	sl_lock(s);
	for (int i = 0; i < 5; i++) {
		fx_clock_us += 1100 * 1000;
		sl_eth_timer(s, &el);
	}
	sl_unlock(s);
	tap_eq(w.n, 3, "three requests in all");
	tap_eq(fx_counter(s, "arp_hold_dropped"), 1, "the held packet is dropped and counted");
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");

	/* Packets waiting for a neighbour: a queue bounded in bytes as
	 * Linux's unres_qlen_bytes (a packet counted as the buffer it
	 * takes), the oldest dropped, the rest sent in order on the reply
	 * (Linux's __neigh_event_send() and neigh_update()). */
	{
		uint64_t drop0 = fx_counter(s, "arp_hold_dropped");
		bool order = true;
		char msg[24];

		inet_pton(AF_INET, "10.6.0.50", &nh);
		w.n = 0;
		s->unres_qlen_bytes = 5 * s->buf_size;
		for (int i = 0; i < 8; i++) {
			snprintf(msg, sizeof(msg), "dgram%d", i);
			len = fx_ip(pkt, "10.6.0.1", "10.6.0.50", IPPROTO_UDP_, msg, 6);
			ip_out(s, &el, pkt, len, nh, &ret);
		}
		tap_eq(w.n, 1, "eight packets to an unresolved neighbour: one request");
		tap_eq(free0 - s->lib->buf_free_count, 5, "five wait (5 buffers' bytes)");
		tap_eq(fx_counter(s, "arp_hold_dropped"), drop0 + 3,
		       "the three oldest dropped, counted in arp_hold_dropped");
		arp_in(s, &el, 2, "10.6.0.50", peer_mac, "10.6.0.1");
		tap_eq(w.n, 6, "the reply sends the five");
		for (int i = 0; i < 5 && w.n == 6; i++) {
			snprintf(msg, sizeof(msg), "dgram%d", i + 3);
			order &= !memcmp(w.frame[1 + i] + ETH_HLEN_ + 20, msg, 6);
		}
		tap_ok(order && w.n == 6, "oldest first: dgram3 .. dgram7");
		tap_eq(s->lib->buf_free_count, free0, "their buffers returned");

		/* The default (212992 bytes: 104 buffers) keeps a burst of
		 * ten whole; a neighbour that never answers frees them all,
		 * each counted. */
		s->unres_qlen_bytes = 0;
		inet_pton(AF_INET, "10.6.0.51", &nh);
		w.n = 0;
		drop0 = fx_counter(s, "arp_hold_dropped");
		for (int i = 0; i < 10; i++)
			ip_out(s, &el, pkt, len, nh, &ret);
		tap_eq(free0 - s->lib->buf_free_count, 10, "by default a burst of ten waits whole");
		tap_eq(fx_counter(s, "arp_hold_dropped"), drop0, "none dropped");
		sl_lock(s);
		for (int i = 0; i < 5; i++) {
			fx_clock_us += 1100 * 1000;
			sl_eth_timer(s, &el);
		}
		sl_unlock(s);
		tap_eq(fx_counter(s, "arp_hold_dropped"), drop0 + 10,
		       "unanswered: the ten dropped and counted");
		tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");

		/* Less than a quarter of the pool free: no list grows, the
		 * newest alone waits. */
		{
			uint32_t *taken = calloc(s->n_bufs, sizeof(*taken)), nt = 0;

			sl_lock(s);
			while (s->lib->buf_free_count >= s->n_bufs / 4)
				taken[nt++] = sl_buf_alloc(s);
			sl_unlock(s);
			inet_pton(AF_INET, "10.6.0.52", &nh);
			drop0 = fx_counter(s, "arp_hold_dropped");
			for (int i = 0; i < 3; i++)
				ip_out(s, &el, pkt, len, nh, &ret);
			tap_eq(fx_counter(s, "arp_hold_dropped"), drop0 + 2,
			       "pool below a quarter free: of three, two dropped");
			sl_lock(s);
			while (nt)
				sl_buf_free(s, taken[--nt]);
			sl_unlock(s);
			free(taken);
			tap_eq(free0 - s->lib->buf_free_count, 1, "the newest waits");
		}
	}
	fx_destroy(s);
	return tap_done();
}
