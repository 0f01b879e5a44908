// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv6 input and output (RFC 8200) and ICMPv6 (RFC 4443) in the stack:
 * the header built on the way out, extension headers on the way in
 * (options by their type's high bits, routing headers, fragments, an
 * unknown next header), upper-layer checksums with the pseudo-header, a
 * closed port answered as Linux answers it, errors rate-limited, the
 * stack's own loopback; a socket on handles: traffic class and hop limit,
 * ICMPv6 errors into its error queue, Packet Too Big, fragments out and
 * in.
 */
#include <errno.h>

#include "stack_fixture.h"

/* With nd_on, as an Ethernet link: a unicast next hop is resolved first
 * (its link address in last_mac), or the packet waits for it. */
static bool nd_on;
static uint8_t last_mac[6];

/* The stack's entry for ip, or NULL. */
static const struct sl_neigh6 *nd_entry(const struct sl_stack *s, const uint8_t *ip)
{
	for (unsigned int i = 0; i < SL_NEIGH6_MAX; i++)
		if (s->lib->neigh6[i].state != SL_ND_FREE && !memcmp(s->lib->neigh6[i].ip, ip, 16))
			return &s->lib->neigh6[i];
	return NULL;
}

static int cap_tx6(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh)
{
	if (nd_on && nh[0] != 0xff && sl_nd_resolve(s, nh, last_mac, idx))
		return 0;
	return cap_tx(l, s, idx, 0);
}

static const struct sl_link_ops cap6_ops = { .name = "capture6", .tx = cap_tx, .tx6 = cap_tx6 };

static const char *ME = "2001:db8::1", *PEER = "2001:db8::9";

/* An IPv6 header and payload into out; returns the length. */
static size_t ip6(uint8_t *out, const char *src, const char *dst, uint8_t nxt, uint32_t tcfl,
		  const void *payload, size_t plen)
{
	struct sl_ip6 *h = (struct sl_ip6 *)out;

	memset(h, 0, sizeof(*h));
	h->vtcfl = htonl(6u << 28 | tcfl);
	h->plen = htons((uint16_t)plen);
	h->nxt = nxt;
	h->hlim = 64;
	inet_pton(AF_INET6, src, h->saddr);
	inet_pton(AF_INET6, dst, h->daddr);
	memcpy(h + 1, payload, plen);
	return sizeof(*h) + plen;
}

/* The upper-layer checksum of packet pkt's last ulen bytes, filled in at
 * csum_at (from the upper-layer header). */
static void ul_csum(uint8_t *pkt, size_t len, size_t ulen, uint8_t nxt, size_t csum_at)
{
	const struct sl_ip6 *h = (const struct sl_ip6 *)pkt;
	uint8_t *ul = pkt + len - ulen;

	ul[csum_at] = ul[csum_at + 1] = 0;
	uint16_t c = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(h->saddr, h->daddr, nxt,
							      (uint32_t)ulen), ul, ulen));
	memcpy(ul + csum_at, &c, 2);
}

static bool ul_csum_ok(const uint8_t *pkt, size_t len, size_t off, uint8_t nxt)
{
	const struct sl_ip6 *h = (const struct sl_ip6 *)pkt;

	return sl_csum_fold(sl_csum_add(sl_csum_pseudo6(h->saddr, h->daddr, nxt,
							(uint32_t)(len - off)),
					pkt + off, len - off)) == 0;
}

/* ext (elen bytes of extension headers, the first named by first, the
 * last's next header ICMPv6), then an echo request with 16 bytes. */
static size_t echo(uint8_t *out, const char *src, const char *dst, uint8_t first,
		   const uint8_t *ext, size_t elen, uint32_t tcfl)
{
	uint8_t m[256];
	struct sl_icmp6 *ic = (struct sl_icmp6 *)(m + elen);
	size_t len;

	if (elen)	/* ext may be NULL then (memcpy wants a pointer) */
		memcpy(m, ext, elen);
	memset(ic, 0, sizeof(*ic));
	ic->type = ICMP6_ECHO_REQUEST_;
	ic->data = htonl(0x42420007);
	memcpy(ic + 1, "sluice-echo6-dat", 16);
	len = ip6(out, src, dst, elen ? first : IPPROTO_ICMPV6_, tcfl, m, elen + 24);
	ul_csum(out, len, 24, IPPROTO_ICMPV6_, 2);
	return len;
}

/* Each packet in comes 300 ms after the last (one error a peer each
 * 250 ms is allowed), but while rate limits are tested. */
static bool tick = true;

static void in6(struct sl_stack *s, const uint8_t *pkt, size_t len, uint16_t flags)
{
	uint32_t idx;

	if (tick)
		fx_clock_us += 300000;
	sl_lock(s);
	idx = sl_buf_alloc(s);
	if (idx != SLUICE_IDX_NONE) {
		memcpy(sl_buf_data(s, idx), pkt, len);
		sl_buf(s, idx)->len = (uint16_t)len;
		sl_buf(s, idx)->flags = flags;
		sl_ip6_input(s, idx);
	}
	sl_unlock(s);
}

/* Frame i of cap an ICMPv6 message of type and code to dst, its
 * checksum right: its data word (-1 if not). */
static int64_t icmp6_of(const struct capture *cap, unsigned int i, uint8_t type, uint8_t code)
{
	const uint8_t *f = cap->frame[i];
	const struct sl_ip6 *h = (const struct sl_ip6 *)f;
	const struct sl_icmp6 *ic = (const struct sl_icmp6 *)(f + 40);

	if (i >= cap->n || cap->len[i] < 48 || (ntohl(h->vtcfl) >> 28) != 6 ||
	    h->nxt != IPPROTO_ICMPV6_ || ntohs(h->plen) + 40u != cap->len[i] ||
	    ic->type != type || ic->code != code || !ul_csum_ok(f, cap->len[i], 40, IPPROTO_ICMPV6_))
		return -1;
	return ntohl(ic->data);
}

/* An ICMPv6 error of type, code and data from PEER to ME quoting the
 * packet q (qlen bytes) into out; its length. */
static size_t icmp6_err(uint8_t *out, uint8_t type, uint8_t code, uint32_t data, const uint8_t *q,
			size_t qlen)
{
	uint8_t m[1300];
	struct sl_icmp6 *ic = (struct sl_icmp6 *)m;
	size_t len;

	memset(ic, 0, sizeof(*ic));
	ic->type = type;
	ic->code = code;
	ic->data = htonl(data);
	memcpy(ic + 1, q, qlen);
	len = ip6(out, PEER, ME, IPPROTO_ICMPV6_, 0, m, sizeof(*ic) + qlen);
	ul_csum(out, len, sizeof(*ic) + qlen, IPPROTO_ICMPV6_, 2);
	return len;
}

/* A fragment from PEER to ME of the UDP datagram dg: bytes [a, b), M. */
static size_t frag6(uint8_t *out, const uint8_t *dg, size_t a, size_t b, bool more, uint32_t id)
{
	uint8_t m[1500];
	struct sl_ip6_frag *fh = (struct sl_ip6_frag *)m;

	fh->nxt = IPPROTO_UDP_;
	fh->reserved = 0;
	fh->off = htons((uint16_t)(a | (more ? 1 : 0)));
	fh->id = htonl(id);
	memcpy(fh + 1, dg + a, b - a);
	return ip6(out, PEER, ME, IPPROTO_FRAGMENT_, 0, m, sizeof(*fh) + b - a);
}

/*
 * 12b. What a socket on handles sends and hears (lib/proto/README.md,
 * "Traffic class and hop limit", "ICMPv6 errors to sockets", "Fragments
 * and Packet Too Big"): sd is a UDP socket bound to [ME]:7000, *peer
 * PEER's handle and port 5555.
 */
static void v6_send_cases(struct sl_stack *s, struct capture *cp, int sd,
			  const struct sockaddr_in *peer)
{
	struct sluice_stack *st = (struct sluice_stack *)s;
	static uint8_t big[1400], pkt[1600], q[1600], dg[208];
	struct sl_errq_rec rec;
	const struct sl_ip6 *h;
	uint8_t p6[16], got[256];
	struct sockaddr_in from;
	size_t len, qlen;
	int v, r1, r2;
	bool trunc;
	long n;

	inet_pton(AF_INET6, PEER, p6);
	v = 0x2b;
	r1 = sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v));
	v = 9;
	r2 = sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v));
	cp->n = 0;
	n = sluice_sendto(st, sd, "class", 5, 0, peer);
	h = (const struct sl_ip6 *)cp->frame[0];
	tap_ok(!r1 && !r2 && n == 5 && cp->n == 1 && ((ntohl(h->vtcfl) >> 20) & 0xff) == 0x2b &&
	       h->hlim == 9, "IPV6_TCLASS 0x2b, IPV6_UNICAST_HOPS 9: on the datagram sent");
	qlen = cp->len[0];
	memcpy(q, cp->frame[0], qlen);
	v = -1;
	sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, sizeof(v));
	v = 0;
	sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v));
	s->lib->ip6_hlim = 77;
	cp->n = 0;
	sluice_sendto(st, sd, "dflt", 4, 0, peer);
	h = (const struct sl_ip6 *)cp->frame[0];
	tap_ok(cp->n == 1 && !(ntohl(h->vtcfl) & 0x0ff00000) && h->hlim == 77,
	       "... set back: class 0, the stack's default hop limit (conf.default.hop_limit)");

	/* A port unreachable quoting it: into the error queue with
	 * IPV6_RECVERR, as ICMPv6's. */
	len = icmp6_err(pkt, ICMP6_DST_UNREACH_, ICMP6_UNREACH_PORT_, 0, q, qlen);
	in6(s, pkt, len, 0);
	n = sl_errq_recv(st, sd, got, sizeof(got), &rec, &trunc);
	tap_ok(n == -EAGAIN, "a port unreachable without IPV6_RECVERR (unconnected): not queued");
	v = 1;
	sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_RECVERR, &v, sizeof(v));
	in6(s, pkt, len, 0);
	n = sl_errq_recv(st, sd, got, sizeof(got), &rec, &trunc);
	tap_ok(n == 5 && !memcmp(got, "class", 5) && rec.ee_errno == ECONNREFUSED &&
	       rec.origin == SO_EE_ORIGIN_ICMP6_ && rec.type == 1 && rec.code == 4 &&
	       !memcmp(rec.offender6, p6, 16) && rec.daddr == peer->sin_addr.s_addr &&
	       rec.dport == htons(5555), "with it: queued, ICMPv6's origin, type, code, the offender");

	/* Packet Too Big (1280) quoting a datagram: EMSGSIZE queued, the
	 * path MTU 1280 (1260 IPv4-shaped); a larger datagram in fragments. */
	len = icmp6_err(pkt, ICMP6_PACKET_TOO_BIG_, 0, 1280, q, qlen);
	in6(s, pkt, len, 0);
	n = sl_errq_recv(st, sd, got, sizeof(got), &rec, &trunc);
	sl_lock(s);
	v = (int)sl_pmtu_get(s, peer->sin_addr.s_addr);
	sl_unlock(s);
	tap_ok(n == 5 && rec.ee_errno == EMSGSIZE && rec.type == 2 && rec.info == 1280 && v == 1260,
	       "Packet Too Big 1280: EMSGSIZE queued, ee_info 1280; the path MTU falls");
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	cp->n = 0;
	n = sluice_sendto(st, sd, big, sizeof(big), 0, peer);
	{
		const struct sl_ip6 *f0 = (const struct sl_ip6 *)cp->frame[0];
		const struct sl_ip6 *f1 = (const struct sl_ip6 *)cp->frame[1];
		const struct sl_ip6_frag *h0 = (const void *)(cp->frame[0] + 40);
		const struct sl_ip6_frag *h1 = (const void *)(cp->frame[1] + 40);
		uint8_t whole[1408];
		uint32_t sum;

		tap_ok(n == 1400 && cp->n == 2 && cp->len[0] == 1280 && f0->nxt == IPPROTO_FRAGMENT_ &&
		       h0->nxt == IPPROTO_UDP_ && ntohs(h0->off) == 1 && ntohs(h1->off) == 1232 &&
		       h0->id == h1->id && ntohs(f1->plen) == 8 + 1408 - 1232 &&
		       (ntohl(f0->vtcfl) & 0xfffff) == (ntohl(f1->vtcfl) & 0xfffff),
		       "1400 bytes past it: two fragments (1232 and 176 bytes, one id, one flow label)");
		memcpy(whole, cp->frame[0] + 48, 1232);
		memcpy(whole + 1232, cp->frame[1] + 48, 176);
		sum = sl_csum_pseudo6(f0->saddr, f0->daddr, IPPROTO_UDP_, 1408);
		tap_ok(cp->n == 2 && sl_csum_fold(sl_csum_add(sum, whole, 1408)) == 0 &&
		       !memcmp(whole + 8, big, 1400), "... the UDP checksum over the whole, the bytes in order");
	}
	v = 1;
	sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_DONTFRAG, &v, sizeof(v));
	cp->n = 0;
	n = sluice_sendto(st, sd, big, sizeof(big), 0, peer);
	tap_ok(n == -EMSGSIZE && cp->n == 0 && sl_errq_recv(st, sd, got, sizeof(got), &rec, &trunc) == 0 &&
	       rec.origin == SO_EE_ORIGIN_LOCAL_ && rec.info == 1280,
	       "IPV6_DONTFRAG: EMSGSIZE, a local error (ee_info 1280)");
	v = 0;
	sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_DONTFRAG, &v, sizeof(v));

	/* Fragments in: a datagram of 200 bytes in two, reassembled. */
	{
		struct sl_udp *u = (struct sl_udp *)dg;
		uint8_t ph[40];

		for (size_t i = 0; i < 200; i++)
			dg[8 + i] = (uint8_t)(i * 7);
		u->sport = htons(5555);
		u->dport = htons(7000);
		u->len = htons(208);
		u->csum = 0;
		ip6(ph, PEER, ME, IPPROTO_UDP_, 0, dg, 0);
		u->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(((struct sl_ip6 *)ph)->saddr,
								   ((struct sl_ip6 *)ph)->daddr,
								   IPPROTO_UDP_, 208), dg, 208));
	}
	len = frag6(pkt, dg, 0, 128, true, 0x77);
	in6(s, pkt, len, 0);
	len = frag6(pkt, dg, 128, 208, false, 0x77);
	in6(s, pkt, len, 0);
	n = sluice_recvfrom(st, sd, got, sizeof(got), 0, &from);
	tap_ok(n == 200 && !memcmp(got, dg + 8, 200) && from.sin_addr.s_addr == peer->sin_addr.s_addr,
	       "a datagram in two fragments: reassembled, from the peer's handle");
	/* Overlapping: the whole datagram dropped (RFC 5722). */
	len = frag6(pkt, dg, 0, 128, true, 0x78);
	in6(s, pkt, len, 0);
	len = frag6(pkt, dg, 120, 208, false, 0x78);
	in6(s, pkt, len, 0);
	n = sluice_recvfrom(st, sd, got, sizeof(got), 0, &from);
	tap_ok(n == -EAGAIN && fx_counter(s, "ip_reasm_overlap") == 1,
	       "overlapping fragments: the datagram dropped, counted");
	/* A bad checksum over the whole: dropped. */
	v = (int)fx_counter(s, "udp_rx_bad");
	dg[100] ^= 1;
	len = frag6(pkt, dg, 0, 128, true, 0x79);
	in6(s, pkt, len, 0);
	len = frag6(pkt, dg, 128, 208, false, 0x79);
	in6(s, pkt, len, 0);
	dg[100] ^= 1;
	n = sluice_recvfrom(st, sd, got, sizeof(got), 0, &from);
	tap_ok(n == -EAGAIN && fx_counter(s, "udp_rx_bad") == (uint64_t)v + 1,
	       "a wrong UDP checksum over the whole (IPv6's pseudo-header): dropped");
	/* More to come and a length not a multiple of 8: a parameter
	 * problem at the payload length. */
	cp->n = 0;
	len = frag6(pkt, dg, 0, 13, true, 0x7a);
	in6(s, pkt, len, 0);
	tap_ok(icmp6_of(cp, 0, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_HEADER_) == 4,
	       "a fragment of 13 bytes with more to come: parameter problem, pointer 4");
	v = 0;
	sluice_setsockopt(st, sd, IPPROTO_IPV6, IPV6_RECVERR, &v, sizeof(v));
	s->lib->ip6_hlim = 0;
}

int main(void)
{
	static struct capture cap;
	struct sl_stack *s = fx_stack("ip6", "10.6.0.1", &cap);
	uint32_t free0 = s->lib->buf_free_count;
	uint8_t pkt[1600], ext[64], pay[64], me[16], peer[16];
	const struct sl_ip6 *rh = (const struct sl_ip6 *)cap.frame[0];
	size_t len;

	cap.link.ops = &cap6_ops;
	inet_pton(AF_INET6, ME, me);
	inet_pton(AF_INET6, PEER, peer);
	memcpy(s->lib->ip6_addr, me, 16);
	s->lib->ip6_plen = 64;

	/* 1. Echo: the header built as RFC 8200 3 and Linux fill it. */
	len = echo(pkt, PEER, ME, 0, NULL, 0, 0xb8u << 20 | 0x12345);
	in6(s, pkt, len, 0);
	tap_eq(cap.n, 1, "echo request: one reply");
	tap_eq(icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0), 0x42420007, "an echo reply, same id and sequence, checksum right");
	tap_eq(cap.len[0], len, "as long as the request");
	tap_ok(!memcmp(rh->saddr, me, 16) && !memcmp(rh->daddr, peer, 16), "from our address to the requester");
	tap_eq(rh->hlim, 64, "hop limit 64");
	tap_eq(ntohl(rh->vtcfl) >> 20 & 0xff, 0xb8, "traffic class the request's (icmpv6_echo_reply)");
	tap_ok((ntohl(rh->vtcfl) & 0xfffff) != 0, "a flow label (auto_flowlabels)");
	tap_ok(!memcmp(cap.frame[0] + 48, "sluice-echo6-dat", 16), "same data");
	tap_eq(fx_counter(s, "icmp6_echo_replied"), 1, "counted");

	/* Link padding past the payload length is trimmed. */
	cap.n = 0;
	memset(pkt + len, 0xee, 20);
	in6(s, pkt, len + 20, 0);
	tap_ok(cap.n == 1 && cap.len[0] == len, "padding after the payload: trimmed");

	/* 2. Bad packets, each dropped and counted. */
	cap.n = 0;
	len = echo(pkt, PEER, ME, 0, NULL, 0, 0);
	pkt[len - 1] ^= 1;
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "icmp6_rx_bad") == 1, "bad ICMPv6 checksum: dropped, counted");
	len = echo(pkt, PEER, ME, 0, NULL, 0, 0);
	in6(s, pkt, len - 1, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_bad_hdr") == 1, "shorter than its payload length: bad header");
	in6(s, pkt, 39, 0);
	tap_eq(fx_counter(s, "ip6_rx_bad_hdr"), 2, "shorter than a header: bad header");
	len = echo(pkt, "::1", ME, 0, NULL, 0, 0);
	in6(s, pkt, len, 0);
	len = echo(pkt, "ff02::1", ME, 0, NULL, 0, 0);
	in6(s, pkt, len, 0);
	len = echo(pkt, "::ffff:10.6.0.9", ME, 0, NULL, 0, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_martian") == 3, "::1, a group, v4-mapped as source: martians");
	len = echo(pkt, PEER, "2001:db8::2", 0, NULL, 0, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_not_ours") == 1, "to another address: not ours");

	/* 3. Groups: all-nodes and our solicited-node group are ours;
	 * echo to them answered from our address. */
	len = echo(pkt, PEER, "ff02::1", 0, NULL, 0, 0);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_ok(cap.n == 1 && !memcmp(rh->saddr, me, 16), "echo to ff02::1: answered from our address");
	cap.n = 0;
	len = echo(pkt, PEER, "ff02::1:ff00:1", 0, NULL, 0, 0);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_eq(cap.n, 1, "echo to our solicited-node group: answered");
	cap.n = 0;
	len = echo(pkt, PEER, "ff02::1:ff00:2", 0, NULL, 0, 0);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_eq(cap.n, 0, "another solicited-node group: not ours");

	/* 4. Options (RFC 8200 4.2), in a hop-by-hop header. */
	cap.n = 0;
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_ICMPV6_;
	ext[1] = 0;
	ext[2] = IP6_OPT_PADN_;
	ext[3] = 4;
	len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 8, 0);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0), 0x42420007, "hop-by-hop with PadN: answered");
	const uint8_t acts[4] = { 0x1e, 0x5e, 0x9e, 0xde };
	for (unsigned int a = 0; a < 4; a++) {
		cap.n = 0;
		ext[2] = acts[a];
		ext[3] = 4;
		len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 8, 0);
		in6(s, pkt, len, 0);
		if (a == 0)
			tap_eq(icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0), 0x42420007, "unknown option 00xxxxxx: skipped, answered");
		else if (a == 1)
			tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_unknown_opt") == 1, "unknown option 01xxxxxx: dropped silently");
		else
			tap_eq(icmp6_of(&cap, 0, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_OPTION_), 42,
			       a == 2 ? "unknown option 10xxxxxx: parameter problem code 2 at the option"
				      : "unknown option 11xxxxxx to us: parameter problem code 2 at the option");
	}
	tap_ok(cap.n == 1 && cap.len[0] == 48 + len && !memcmp(cap.frame[0] + 48, pkt, len),
	       "the error quotes the whole packet");
	tap_ok(!memcmp(rh->saddr, me, 16) && !memcmp(rh->daddr, peer, 16), "... from us to the source");
	cap.n = 0;
	len = echo(pkt, PEER, "ff02::1", IPPROTO_HOPOPTS_, ext, 8, 0);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_eq(cap.n, 0, "unknown option 11xxxxxx to a group: dropped, no error");
	ext[2] = 0x9e;
	len = echo(pkt, PEER, "ff02::1", IPPROTO_HOPOPTS_, ext, 8, 0);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_eq(icmp6_of(&cap, 0, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_OPTION_), 42,
	       "unknown option 10xxxxxx to a group: the error still goes (RFC 4443 2.4 e.3)");
	cap.n = 0;
	ext[2] = IP6_OPT_PADN_;
	ext[4] = 1;
	len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 8, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_bad_opt") == 1, "PadN not all zero: dropped (as Linux)");
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_ICMPV6_;
	ext[1] = 1;
	ext[2] = IP6_OPT_PADN_;
	ext[3] = 12;
	len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 16, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_bad_opt") == 2, "14 bytes of padding in a row: dropped");
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_ICMPV6_;
	ext[1] = 2;
	for (unsigned int i = 0; i < 9; i++)
		ext[2 + 2 * i] = 0x1e;
	ext[20] = IP6_OPT_PADN_;
	ext[21] = 2;
	len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 24, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_bad_opt") == 3, "9 options in one header: dropped (max_hbh_opts_cnt 8)");
	ext[2 + 2 * 8] = IP6_OPT_PADN_;
	len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 24, 0);
	in6(s, pkt, len, 0);
	tap_eq(cap.n, 1, "8 options and two PadN (6 bytes): answered");
	for (unsigned int i = 18; i < 24; i++)
		ext[i] = IP6_OPT_PAD1_;
	len = echo(pkt, PEER, ME, IPPROTO_HOPOPTS_, ext, 24, 0);
	in6(s, pkt, len, 0);
	tap_eq(cap.n, 2, "8 options and 6 Pad1: answered");

	/* Destination options, then hop-by-hop: 4.3 allows it first only. */
	cap.n = 0;
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_HOPOPTS_;
	ext[8] = IPPROTO_ICMPV6_;
	len = echo(pkt, PEER, ME, IPPROTO_DSTOPTS_, ext, 16, 0);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_NEXTHDR_), 40,
	       "hop-by-hop after destination options: parameter problem code 1 at the field naming it");
	cap.n = 0;
	ext[0] = IPPROTO_ICMPV6_;
	len = echo(pkt, PEER, ME, IPPROTO_DSTOPTS_, ext, 8, 0);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0), 0x42420007, "destination options (Pad1s): answered");
	cap.n = 0;
	ext[1] = 5;	/* 48 bytes where 32 are left */
	len = echo(pkt, PEER, ME, IPPROTO_DSTOPTS_, ext, 8, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_bad_hdr") == 3, "an extension header past the packet: bad header");

	/* 5. Routing headers (4.4, RFC 5095). */
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_ICMPV6_;
	ext[1] = 2;		/* type 0: reserved word, one address */
	ext[2] = 0;
	ext[3] = 1;		/* segments left */
	cap.n = 0;
	len = echo(pkt, PEER, ME, IPPROTO_ROUTING_, ext, 24, 0);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_HEADER_), 42,
	       "routing type 0 with segments left: parameter problem code 0 at the type");
	tap_eq(fx_counter(s, "ip6_rx_rthdr"), 1, "counted");
	cap.n = 0;
	ext[3] = 0;
	len = echo(pkt, PEER, ME, IPPROTO_ROUTING_, ext, 24, 0);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0), 0x42420007, "routing header, no segments left: skipped, answered");

	/* 6. Fragments: atomic ones are whole packets (RFC 6946). */
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_ICMPV6_;
	ext[4] = 0x12;
	cap.n = 0;
	len = echo(pkt, PEER, ME, IPPROTO_FRAGMENT_, ext, 8, 0);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0), 0x42420007, "atomic fragment: answered");
	cap.n = 0;
	ext[3] = 1;		/* M */
	len = echo(pkt, PEER, ME, IPPROTO_FRAGMENT_, ext, 8, 0);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_frag") == 1 && fx_counter(s, "ip6_rx_frag_drop") == 1,
	       "a first fragment of ICMPv6: counted, not reassembled (TCP and UDP only)");

	/* 7. Next headers. */
	cap.n = 0;
	len = ip6(pkt, PEER, ME, 253, 0, "abcdefgh", 8);
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_NEXTHDR_), 6,
	       "unknown next header: parameter problem code 1 at offset 6");
	tap_eq(fx_counter(s, "ip6_rx_unknown_nh"), 2, "counted (with the hop-by-hop above)");
	cap.n = 0;
	len = ip6(pkt, PEER, ME, IPPROTO_NONE_, 0, "abcdefgh", 8);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "ip6_rx_nonext") == 1, "no next header: dropped quietly");
	/* Never an error about an ICMPv6 error. */
	memset(ext, 0, sizeof(ext));
	ext[0] = IPPROTO_ICMPV6_;
	ext[2] = 0x9e;
	ext[3] = 4;
	memset(pay, 0, sizeof(pay));
	memcpy(pay, ext, 8);
	pay[8] = ICMP6_DST_UNREACH_;
	len = ip6(pkt, PEER, ME, IPPROTO_HOPOPTS_, 0, pay, 8 + 48);
	ul_csum(pkt, len, 48, IPPROTO_ICMPV6_, 2);
	in6(s, pkt, len, 0);
	tap_eq(cap.n, 0, "unknown option before an ICMPv6 error: no error about it");

	/* 8. UDP (checksum 0 is an error, 8.1) and TCP to closed ports. */
	struct sl_udp *uh = (struct sl_udp *)pay;

	memset(pay, 0, sizeof(pay));
	uh->sport = htons(5000);
	uh->dport = htons(9);
	uh->len = htons(12);
	memcpy(uh + 1, "ping", 4);
	len = ip6(pkt, PEER, ME, IPPROTO_UDP_, 0, pay, 12);
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "udp6_rx_bad") == 1, "UDP checksum 0: dropped");
	ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
	pkt[len - 1] ^= 1;
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 0 && fx_counter(s, "udp6_rx_bad") == 2, "UDP checksum wrong: dropped");
	pkt[len - 1] ^= 1;
	in6(s, pkt, len, 0);
	tap_eq(icmp6_of(&cap, 0, ICMP6_DST_UNREACH_, ICMP6_UNREACH_PORT_), 0,
	       "UDP to a closed port: port unreachable");
	tap_ok(cap.len[0] == 48 + len && !memcmp(cap.frame[0] + 48, pkt, len), "... quoting the datagram");
	tap_eq(fx_counter(s, "udp6_rx_noport"), 1, "counted");

	struct sl_tcph *th = (struct sl_tcph *)pay;
	const struct sl_tcph *rt = (const struct sl_tcph *)(cap.frame[1] + 40);

	memset(pay, 0, sizeof(pay));
	th->sport = htons(5001);
	th->dport = htons(80);
	th->seq = htonl(1000);
	th->off = 5 << 4;
	th->flags = TH_SYN_;
	len = ip6(pkt, PEER, ME, IPPROTO_TCP_, 0x2bu << 20, pay, 20);
	ul_csum(pkt, len, 20, IPPROTO_TCP_, 16);
	in6(s, pkt, len, 0);
	th = (struct sl_tcph *)(pkt + 40);
	tap_eq(cap.n, 2, "TCP SYN to a closed port: one answer");
	tap_ok(((const struct sl_ip6 *)cap.frame[1])->nxt == IPPROTO_TCP_ && cap.len[1] == 60 &&
	       ul_csum_ok(cap.frame[1], 60, 40, IPPROTO_TCP_), "a TCP segment, checksum right");
	tap_ok(rt->flags == (TH_RST_ | TH_ACK_) && rt->seq == 0 && ntohl(rt->ack) == 1001 &&
	       rt->sport == htons(80) && rt->dport == htons(5001), "RST|ACK, seq 0, ack SYN's + 1");
	tap_eq(ntohl(((const struct sl_ip6 *)cap.frame[1])->vtcfl) >> 20 & 0xff, 0x28,
	       "traffic class the segment's without ECN");
	th->flags = TH_ACK_;
	th->ack = htonl(77);
	ul_csum(pkt, len, 20, IPPROTO_TCP_, 16);
	in6(s, pkt, len, 0);
	rt = (const struct sl_tcph *)(cap.frame[2] + 40);
	tap_ok(cap.n == 3 && rt->flags == TH_RST_ && ntohl(rt->seq) == 77, "ACK to a closed port: RST, seq its ack");
	th->flags = TH_RST_;
	ul_csum(pkt, len, 20, IPPROTO_TCP_, 16);
	in6(s, pkt, len, 0);
	tap_eq(cap.n, 3, "a RST: unanswered");
	th->flags = TH_SYN_;
	ul_csum(pkt, len, 20, IPPROTO_TCP_, 16);
	pkt[len - 1] ^= 1;
	in6(s, pkt, len, 0);
	tap_ok(cap.n == 3 && fx_counter(s, "tcp6_rx_bad") == 1, "TCP checksum wrong: dropped");
	pkt[len - 1] ^= 1;
	inet_pton(AF_INET6, "ff02::1", ((struct sl_ip6 *)pkt)->daddr);
	ul_csum(pkt, len, 20, IPPROTO_TCP_, 16);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_eq(cap.n, 3, "TCP to a group: dropped");

	/* 9. Errors rate-limited: 6 at once to a peer on a /64, then one
	 * each 250 ms (net.ipv6.icmp.ratelimit >> 2). */
	cap.n = 0;
	tick = false;
	memset(pay, 0, sizeof(pay));
	uh->sport = htons(5000);
	uh->dport = htons(9);
	uh->len = htons(12);
	len = ip6(pkt, "2001:db8::77", ME, IPPROTO_UDP_, 0, pay, 12);
	ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
	for (int i = 0; i < 20; i++)
		in6(s, pkt, len, 0);
	tap_eq(cap.n, 6, "20 datagrams to a closed port: 6 errors");
	fx_clock_us += 250000;
	for (int i = 0; i < 5; i++)
		in6(s, pkt, len, 0);
	tap_eq(cap.n, 7, "250 ms later: one more");
	tap_eq(fx_counter(s, "icmp6_ratelimit"), 18, "the rest counted");

	/* 10. The stack's own loopback: ::1 to ::1 through the loopback
	 * queue, answered in the stack, nothing on the link. */
	cap.n = 0;
	len = echo(pkt, "::1", "::1", 0, NULL, 0, 0);
	sl_lock(s);
	{
		uint32_t idx = sl_buf_alloc(s);

		memcpy(sl_buf_data(s, idx), pkt, len);
		sl_buf(s, idx)->len = (uint16_t)len;
		sl_ip_loopback_one(s, idx);
	}
	sl_unlock(s);
	tap_eq(fx_counter(s, "icmp6_echo_replied"), 12, "echo on ::1: answered");
	tap_ok(cap.n == 0 && fx_counter(s, "loopback") == 2 && fx_counter(s, "icmp6_rx_ignored") == 1,
	       "... inside the stack: request and reply on the loopback queue, the reply taken in");
	len = ip6(pkt, "::1", "::1", IPPROTO_UDP_, 0, pay, 12);
	ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
	for (int i = 0; i < 20; i++)
		in6(s, pkt, len, SL_BUF_LOCAL);
	tap_eq(fx_counter(s, "icmp6_ratelimit"), 18, "to ourselves: errors not limited");
	/* From a link, version 6 in an IPv4 frame is a bad IPv4 header. */
	len = echo(pkt, PEER, ME, 0, NULL, 0, 0);
	fx_input(s, pkt, len);
	tap_ok(fx_counter(s, "ip_rx_bad_hdr") == 1 && cap.n == 0, "version 6 in an IPv4 frame: bad IPv4 header");

	/* 11. Neighbour Discovery (RFC 4861). */
	{
		static const uint8_t pmac[6] = { 2, 0, 0, 0, 0, 0x20 };
		uint8_t m[64], p3[16], peer2[16];
		struct sl_icmp6 *ic = (struct sl_icmp6 *)m;
		const struct sl_icmp6 *ric = (const struct sl_icmp6 *)(cap.frame[0] + 40);
		const uint8_t *rb = cap.frame[0] + 48;
		size_t mlen;

		tick = true;
		inet_pton(AF_INET6, "2001:db8::30", p3);
		inet_pton(AF_INET6, "2001:db8::20", peer2);
		/* An NS for us to our solicited-node group, with the sender's
		 * link address: an NA, solicited and override, with ours. */
		memset(m, 0, sizeof(m));
		ic->type = 135;
		memcpy(m + 8, me, 16);
		m[24] = 1;
		m[25] = 1;
		memcpy(m + 26, pmac, 6);
		mlen = 32;
		cap.n = 0;
		len = ip6(pkt, "2001:db8::20", "ff02::1:ff00:1", IPPROTO_ICMPV6_, 0, m, mlen);
		((struct sl_ip6 *)pkt)->hlim = 255;
		ul_csum(pkt, len, mlen, IPPROTO_ICMPV6_, 2);
		in6(s, pkt, len, SL_BUF_L2_BCAST);
		tap_eq(icmp6_of(&cap, 0, 136, 0), 0x60000000, "NS to our group: NA, solicited and override");
		tap_ok(cap.len[0] == 72 && !memcmp(rb, me, 16) && rb[16] == 2 && rb[17] == 1 &&
		       !memcmp(rb + 18, s->lib->mac, 6), "... for our address, with our link address");
		tap_ok(rh->hlim == 255 && !memcmp(rh->saddr, me, 16) && ric->type == 136 &&
		       cap.frame[0][39] == 0x20, "... hop limit 255, from us to the sender");
		tap_ok(nd_entry(s, peer2) && nd_entry(s, peer2)->state == SL_ND_STALE &&
		       !memcmp(nd_entry(s, peer2)->mac, pmac, 6),
		       "the sender's entry: STALE, its link address (7.2.3)");
		/* A unicast NS (a reachability probe): Linux's NA has neither
		 * override nor our link address. */
		cap.n = 0;
		len = ip6(pkt, "2001:db8::20", ME, IPPROTO_ICMPV6_, 0, m, mlen);
		((struct sl_ip6 *)pkt)->hlim = 255;
		ul_csum(pkt, len, mlen, IPPROTO_ICMPV6_, 2);
		in6(s, pkt, len, 0);
		tap_eq(icmp6_of(&cap, 0, 136, 0), 0x40000000, "unicast NS: NA, solicited only");
		tap_eq(cap.len[0], 64, "... no link-address option");
		cap.n = 0;
		((struct sl_ip6 *)pkt)->hlim = 64;
		in6(s, pkt, len, 0);
		tap_ok(cap.n == 0 && fx_counter(s, "nd_rx_bad") == 1, "hop limit not 255: invalid, dropped");
		/* DAD: from ::, no option: answered to all nodes, not solicited. */
		len = ip6(pkt, "::", "ff02::1:ff00:1", IPPROTO_ICMPV6_, 0, m, 24);
		((struct sl_ip6 *)pkt)->hlim = 255;
		ul_csum(pkt, len, 24, IPPROTO_ICMPV6_, 2);
		in6(s, pkt, len, SL_BUF_L2_BCAST);
		tap_eq(icmp6_of(&cap, 0, 136, 0), 0x20000000, "DAD NS for our address: NA, override, not solicited");
		tap_ok(cap.frame[0][24] == 0xff && cap.frame[0][25] == 0x02 && cap.frame[0][39] == 1,
		       "... to all nodes");
		cap.n = 0;
		m[23] ^= 1;
		len = ip6(pkt, "2001:db8::20", ME, IPPROTO_ICMPV6_, 0, m, mlen);
		((struct sl_ip6 *)pkt)->hlim = 255;
		ul_csum(pkt, len, mlen, IPPROTO_ICMPV6_, 2);
		in6(s, pkt, len, 0);
		tap_eq(cap.n, 0, "NS for another address: unanswered");

		/* Resolving: a reply to an unknown neighbour is dropped and an
		 * NS goes to its solicited-node group (7.2.2). */
		nd_on = true;
		cap.n = 0;
		len = echo(pkt, "2001:db8::30", ME, 0, NULL, 0, 0);
		in6(s, pkt, len, 0);
		tap_eq(icmp6_of(&cap, 0, 135, 0), 0, "echo from an unknown neighbour: an NS first");
		tap_ok(cap.len[0] == 72 && !memcmp(rb, p3, 16) && rb[16] == 1 &&
		       !memcmp(rb + 18, s->lib->mac, 6) && cap.frame[0][24] == 0xff &&
		       cap.frame[0][35] == 0x01 && cap.frame[0][36] == 0xff && cap.frame[0][39] == 0x30,
		       "... for it, to its solicited-node group, with our link address");
		tap_ok(nd_entry(s, p3) && nd_entry(s, p3)->state == SL_ND_INCOMPLETE &&
		       nd_entry(s, p3)->hold_idx != SLUICE_IDX_NONE, "... the reply waits (INCOMPLETE)");
		len = echo(pkt, "2001:db8::30", ME, 0, NULL, 0, 0x07u << 20);
		in6(s, pkt, len, 0);
		tap_ok(cap.n == 1 && fx_counter(s, "nd_unres_drop") == 0,
		       "a second reply waits behind it (unres_qlen_bytes), none dropped");
		/* Its NA (solicited, override, its link address). */
		memset(m, 0, sizeof(m));
		ic->type = 136;
		ic->data = htonl(0x60000000);
		memcpy(m + 8, p3, 16);
		m[24] = 2;
		m[25] = 1;
		memcpy(m + 26, pmac, 5);
		m[31] = 0x30;
		cap.n = 0;
		len = ip6(pkt, "2001:db8::30", ME, IPPROTO_ICMPV6_, 0, m, 32);
		((struct sl_ip6 *)pkt)->hlim = 255;
		ul_csum(pkt, len, 32, IPPROTO_ICMPV6_, 2);
		in6(s, pkt, len, 0);
		tap_ok(cap.n == 2 && icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0) == 0x42420007 &&
		       icmp6_of(&cap, 1, ICMP6_ECHO_REPLY_, 0) == 0x42420007 &&
		       (ntohl(rh->vtcfl) >> 20 & 0xff) == 0 &&
		       (ntohl(((const struct sl_ip6 *)cap.frame[1])->vtcfl) >> 20 & 0xff) == 7 &&
		       last_mac[5] == 0x30 && nd_entry(s, p3)->state == SL_ND_REACHABLE &&
		       nd_entry(s, p3)->hold_idx == SLUICE_IDX_NONE,
		       "its NA: both waiting replies go to its link address, in order");
		cap.n = 0;
		len = echo(pkt, "2001:db8::30", ME, 0, NULL, 0, 0);
		in6(s, pkt, len, 0);
		tap_ok(cap.n == 1 && icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0) == 0x42420007 &&
		       last_mac[5] == 0x30, "REACHABLE: the next reply goes at once");
		/* NUD (7.3.3): 30 s on, stale; the next use delays, 5 s on a
		 * unicast probe, then two more a second apart, then gone. */
		fx_clock_us += 31000000;
		sl_lock(s);
		sl_nd_timer(s);
		sl_unlock(s);
		cap.n = 0;
		in6(s, pkt, len, 0);
		tap_eq(cap.n, 1, "30 s later (STALE): the reply still goes");
		tick = false;
		cap.n = 0;
		for (int i = 0; i < 4; i++) {
			fx_clock_us += i ? 1000000 : 5000000;
			sl_lock(s);
			sl_nd_timer(s);
			sl_unlock(s);
		}
		tap_ok(cap.n == 3 && icmp6_of(&cap, 0, 135, 0) == 0 && !memcmp(cap.frame[0] + 24, p3, 16) &&
		       icmp6_of(&cap, 2, 135, 0) == 0, "no confirmation: 3 unicast probes, DELAY 5 s then 1 s apart");
		tap_eq(fx_counter(s, "nd_failed"), 1, "then the entry is given up");
		cap.n = 0;
		in6(s, pkt, len, 0);
		for (int i = 0; i < 3; i++) {
			fx_clock_us += 1000000;
			sl_lock(s);
			sl_nd_timer(s);
			sl_unlock(s);
		}
		tap_ok(cap.n == 3 && icmp6_of(&cap, 2, 135, 0) == 0 && cap.frame[2][24] == 0xff,
		       "unresolved: 3 multicast solicitations a second apart");
		tap_ok(fx_counter(s, "nd_failed") == 2 && fx_counter(s, "nd_unres_drop") == 1,
		       "then given up, the waiting reply dropped");
		nd_on = false;
	}

	/* 12. A socket on the stack's IPv6 address, named by its handle
	 * (lib/proto/proto.h, "IPv6 sockets"): a datagram from an IPv6 peer
	 * reaches it with the peer's handle as its source; its reply leaves
	 * as IPv6, the checksum over IPv6's pseudo-header. */
	{
		struct sluice_stack *st = (struct sluice_stack *)s;
		struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(7000),
					  .sin_addr.s_addr = SL_V6TOK_ME }, from;
		const struct sl_ip6 *h;
		uint8_t p6[16], named[16];
		char got[16];
		int sd = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
		long n;

		tick = true;
		sl_lock(s);
		sl_sock(s, (uint32_t)sd)->flags |= SL_SF_V6;
		sl_unlock(s);
		tap_eq(sluice_bind(st, sd, &at), 0, "a UDP socket bound to the stack's IPv6 address");
		memset(pay, 0, sizeof(pay));
		uh->sport = htons(5555);
		uh->dport = htons(7000);
		uh->len = htons(12);
		memcpy(uh + 1, "ping", 4);
		len = ip6(pkt, PEER, ME, IPPROTO_UDP_, 0x2b00000, pay, 12);
		ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
		cap.n = 0;
		in6(s, pkt, len, 0);
		n = sluice_recvfrom(st, sd, got, sizeof(got), 0, &from);
		inet_pton(AF_INET6, PEER, p6);
		tap_ok(n == 4 && !memcmp(got, "ping", 4) && sl_v6tok(from.sin_addr.s_addr) &&
		       from.sin_port == htons(5555) && sl_v6tok_addr(s, from.sin_addr.s_addr, named) &&
		       !memcmp(named, p6, 16), "a datagram from an IPv6 peer: taken, from its handle");
		n = sluice_sendto(st, sd, "pong!", 5, 0, &from);
		h = (const struct sl_ip6 *)cap.frame[0];
		tap_ok(n == 5 && cap.n == 1 && cap.len[0] == 40 + 13 && (ntohl(h->vtcfl) >> 28) == 6 &&
		       (ntohl(h->vtcfl) & 0xfffff) && h->nxt == IPPROTO_UDP_ && h->hlim == 64 &&
		       ntohs(h->plen) == 13 && !memcmp(h->daddr, p6, 16) &&
		       !memcmp(h->saddr, s->lib->ip6_addr, 16) &&
		       ul_csum_ok(cap.frame[0], cap.len[0], 40, IPPROTO_UDP_) &&
		       !memcmp(cap.frame[0] + 48, "pong!", 5),
		       "its reply: IPv6 from our address, UDP checksum over IPv6's pseudo-header, a flow label, hop limit 64");
		/* A peer nobody is bound for gets no handle: a closed port. */
		len = ip6(pkt, "2001:db8::99", ME, IPPROTO_UDP_, 0, pay, 12);
		uh = (struct sl_udp *)(pkt + 40);
		uh->dport = htons(7001);
		ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
		cap.n = 0;
		inet_pton(AF_INET6, "2001:db8::99", p6);
		in6(s, pkt, len, 0);
		tap_ok(!sl_v6tok_find(s, p6) &&
		       icmp6_of(&cap, 0, ICMP6_DST_UNREACH_, ICMP6_UNREACH_PORT_) == 0,
		       "... to a port nobody holds: no handle given, a port unreachable");
		v6_send_cases(s, &cap, sd, &from);
		sluice_close(st, sd);
	}

	/* 13. The link-local address (RFC 4862): made from the link address
	 * (modified EUI-64), Duplicate Address Detection, then used. */
	{
		static const uint8_t mac1[6] = { 0x02, 0x00, 0x5e, 0x10, 0x20, 0x30 };
		static const uint8_t mac2[6] = { 0x06, 0x00, 0x5e, 0x10, 0x20, 0x31 };
		const uint8_t *rb = cap.frame[0] + 48;
		uint8_t ll[16], m[64], lp[16];
		struct sl_icmp6 *ic = (struct sl_icmp6 *)m;
		uint32_t ptok;

		tick = true;
		memcpy(s->lib->mac, mac1, 6);
		sl_lock(s);
		sl_ip6_ll_start(s, 1, 1);
		sl_unlock(s);
		tap_eq(s->lib->ip6_ll_state, SL_LL_NONE, "addr_gen_mode 1: no link-local address");
		sl_lock(s);
		sl_ip6_ll_start(s, 0, 1);
		sl_unlock(s);
		inet_pton(AF_INET6, "fe80::5eff:fe10:2030", ll);
		tap_ok(!memcmp(s->lib->ip6_ll, ll, 16) && s->lib->ip6_ll_state == SL_LL_TENTATIVE,
		       "fe80:: and modified EUI-64 (U/L bit flipped, ff:fe): tentative");
		cap.n = 0;
		len = echo(pkt, "fe80::9", "fe80::5eff:fe10:2030", 0, NULL, 0, 0);
		in6(s, pkt, len, 0);
		tap_ok(cap.n == 0 && !sl_v6tok_find(s, ll), "tentative: not answered, no handle");
		fx_clock_us += 1000000;
		sl_lock(s);
		sl_nd_timer(s);
		sl_unlock(s);
		tap_ok(cap.n == 1 && icmp6_of(&cap, 0, 135, 0) == 0 && !memcmp(rh->saddr, (const uint8_t[16]){ 0 }, 16) &&
		       rh->daddr[0] == 0xff && rh->daddr[1] == 0x02 && rh->daddr[11] == 1 &&
		       rh->daddr[12] == 0xff && !memcmp(rh->daddr + 13, ll + 13, 3) &&
		       !memcmp(rb, ll, 16) && rb[16] == 14 && rb[17] == 1 && rh->hlim == 255,
		       "within 1 s: a DAD NS from :: to its solicited-node group, a nonce, no link address");
		fx_clock_us += 1000000;
		sl_lock(s);
		sl_nd_timer(s);
		sl_unlock(s);
		tap_ok(s->lib->ip6_ll_state == SL_LL_VALID && sl_v6tok_find(s, ll) == SL_V6TOK_LL &&
		       fx_counter(s, "nd_dad_tx") == 1, "retrans_time with no answer: valid, handle LL");
		cap.n = 0;
		in6(s, pkt, len, 0);
		inet_pton(AF_INET6, "fe80::9", lp);
		tap_ok(cap.n == 1 && icmp6_of(&cap, 0, ICMP6_ECHO_REPLY_, 0) == 0x42420007 &&
		       !memcmp(rh->saddr, ll, 16) && !memcmp(rh->daddr, lp, 16),
		       "valid: an echo to it answered from it");
		cap.n = 0;
		len = echo(pkt, "fe80::9", "ff02::1", 0, NULL, 0, 0);
		in6(s, pkt, len, SL_BUF_L2_BCAST);
		tap_ok(cap.n == 1 && !memcmp(rh->saddr, ll, 16),
		       "an echo to all nodes from a link-local source: answered from the link-local address");
		/* An NS for it to its solicited-node group. */
		memset(m, 0, sizeof(m));
		ic->type = 135;
		memcpy(m + 8, ll, 16);
		m[24] = 1;
		m[25] = 1;
		memcpy(m + 26, mac2, 6);
		len = ip6(pkt, "fe80::9", "ff02::1:ff10:2030", IPPROTO_ICMPV6_, 0, m, 32);
		((struct sl_ip6 *)pkt)->hlim = 255;
		ul_csum(pkt, len, 32, IPPROTO_ICMPV6_, 2);
		cap.n = 0;
		in6(s, pkt, len, SL_BUF_L2_BCAST);
		tap_ok(icmp6_of(&cap, 0, 136, 0) == 0x60000000 && !memcmp(rh->saddr, ll, 16) &&
		       !memcmp(rb, ll, 16), "an NS for it to its group: an NA from it");
		ptok = sl_v6tok_get(s, lp);
		tap_ok(sl_v6tok_is_ll(s, ptok) && sl_ip_src_for(s, ptok) == SL_V6TOK_LL &&
		       sl_ip_src_for(s, sl_v6tok_get(s, peer)) == SL_V6TOK_ME,
		       "source for a link-local peer: the link-local address; for a global one the global");
		sl_lock(s);
		sl_ip6_ll_start(s, 0, 1);
		sl_unlock(s);
		tap_eq(s->lib->ip6_ll_state, SL_LL_VALID, "made again from the same link address: kept");
		/* Another node has it: its NA, or its own DAD NS. */
		for (int k = 0; k < 2; k++) {
			memcpy(s->lib->mac, mac2, 6);
			s->lib->mac[5] = (uint8_t)(0x40 + k);
			sl_lock(s);
			sl_ip6_ll_start(s, 0, 1);
			sl_unlock(s);
			memset(m, 0, sizeof(m));
			ic->type = k ? 135 : 136;
			ic->data = k ? 0 : htonl(0x20000000);
			memcpy(m + 8, s->lib->ip6_ll, 16);
			len = ip6(pkt, k ? "::" : "fe80::9", k ? "ff02::1:ff10:2041" : "ff02::1",
				  IPPROTO_ICMPV6_, 0, m, 24);
			((struct sl_ip6 *)pkt)->hlim = 255;
			ul_csum(pkt, len, 24, IPPROTO_ICMPV6_, 2);
			cap.n = 0;
			in6(s, pkt, len, SL_BUF_L2_BCAST);
			tap_ok(s->lib->ip6_ll_state == SL_LL_DADFAILED && cap.n == 0 &&
			       fx_counter(s, "nd_dad_failed") == (uint64_t)k + 1 &&
			       !sl_v6tok_find(s, s->lib->ip6_ll),
			       k ? "another node's DAD NS for our tentative address: DAD failed, not used"
				 : "an NA for our tentative address: DAD failed, not used");
		}
		memset(s->lib->ip6_ll, 0, 16);
		s->lib->ip6_ll_state = SL_LL_NONE;
	}

	/* 13b. Many peers (issue 20): a server's IPv6 clients each get a
	 * handle of their own, as many as the stack's table holds
	 * (sl_v6tok_entries(), 1,024 for this stack's 64 slots), found again
	 * by a hash, not a walk; past the table a new peer is refused and
	 * counted.  Was: 256 at most, whatever the stack's size. */
	{
		struct sluice_stack *st = (struct sluice_stack *)s;
		struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(7100),
					  .sin_addr.s_addr = SL_V6TOK_ME }, from;
		struct sl_udp *u6 = (struct sl_udp *)pay;
		int sd = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
		uint32_t got = 0, distinct = 0, refound = 0, full0, first = 0, last = 0;
		uint8_t a[16], named[16];
		char src[48], buf[8];
		long n;

		sl_lock(s);
		sl_sock(s, (uint32_t)sd)->flags |= SL_SF_V6;
		sl_unlock(s);
		tap_eq(sluice_bind(st, sd, &at), 0, "a UDP server on the stack's IPv6 address");
		full0 = (uint32_t)fx_counter(s, "ip6_rx_peers_full");
		for (uint32_t i = 0; i < 1000; i++) {
			snprintf(src, sizeof(src), "2001:db8::1:%x:%x", i >> 8, i & 0xff);
			memset(pay, 0, sizeof(pay));
			u6->sport = htons((uint16_t)(20000 + i));
			u6->dport = htons(7100);
			u6->len = htons(12);
			memcpy(uh + 1, "hi!", 4);
			len = ip6(pkt, src, ME, IPPROTO_UDP_, 0, pay, 12);
			ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
			cap.n = 0;
			in6(s, pkt, len, 0);
			n = sluice_recvfrom(st, sd, buf, sizeof(buf), 0, &from);
			inet_pton(AF_INET6, src, a);
			if (n != 4 || from.sin_port != htons((uint16_t)(20000 + i)))
				continue;
			got++;
			if (sl_v6tok(from.sin_addr.s_addr) && !sl_v6tok_own(from.sin_addr.s_addr) &&
			    sl_v6tok_addr(s, from.sin_addr.s_addr, named) && !memcmp(named, a, 16) &&
			    (!last || ntohl(from.sin_addr.s_addr) == ntohl(last) + 1))
				distinct++;
			if (!first)
				first = from.sin_addr.s_addr;
			last = from.sin_addr.s_addr;
		}
		for (uint32_t i = 0; i < 1000; i++) {
			snprintf(src, sizeof(src), "2001:db8::1:%x:%x", i >> 8, i & 0xff);
			inet_pton(AF_INET6, src, a);
			refound += sl_v6tok_find(s, a) == htonl(ntohl(first) + i);
		}
		tap_eq(got, 1000, "1,000 datagrams from 1,000 IPv6 peers: all taken");
		tap_eq(distinct, 1000, "... each from a handle of its own, naming its address");
		tap_eq(refound, 1000, "... each handle found again from its address");
		tap_eq(fx_counter(s, "ip6_rx_peers_full"), full0, "... none refused (peers_full)");
		/* Fill the table: then a new peer is refused and counted. */
		for (uint32_t i = 0; s->lib->v6tok_n < s->v6tok_max && i < 2 * s->v6tok_max; i++) {
			memset(a, 0, 16);
			a[0] = 0x20, a[1] = 0x01, a[2] = 0x0d, a[3] = 0xb8, a[5] = 2;
			a[14] = (uint8_t)(i >> 8), a[15] = (uint8_t)i;
			sl_lock(s);
			sl_v6tok_get(s, a);
			sl_unlock(s);
		}
		len = ip6(pkt, "2001:db8::3:1", ME, IPPROTO_UDP_, 0, pay, 12);
		ul_csum(pkt, len, 12, IPPROTO_UDP_, 6);
		in6(s, pkt, len, 0);
		tap_ok(s->lib->v6tok_n == s->v6tok_max && s->v6tok_max == 1024 &&
		       fx_counter(s, "ip6_rx_peers_full") == full0 + 1 &&
		       sluice_recvfrom(st, sd, buf, sizeof(buf), 0, &from) == -EAGAIN,
		       "the table full (1,024 for 64 slots): a new peer refused, counted");
		sluice_close(st, sd);
	}

	/* 14. No IPv6 address, no link for IPv6: not sent, counted. */
	memset(s->lib->ip6_addr, 0, 16);
	cap.n = 0;
	len = echo(pkt, PEER, "ff02::1", 0, NULL, 0, 0);
	in6(s, pkt, len, SL_BUF_L2_BCAST);
	tap_eq(cap.n, 0, "no address of our own: a group's echo unanswered");
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");
	fx_destroy(s);
	return tap_done();
}
