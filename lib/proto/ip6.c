// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv6 (RFC 8200): the header in and out, extension headers on input,
 * ICMPv6 (RFC 4443) echo and errors, TCP and UDP over IPv6 to and from
 * the stack's sockets (on address handles, proto.h "IPv6 sockets"), and
 * the answers a host gives to ports nobody holds: a reset, a port
 * unreachable, as Linux answers a closed port.
 *
 * What Linux does is the reference (net/ipv6/ip6_input.c ipv6_rcv(),
 * exthdrs.c ip6_parse_tlv(), icmp.c icmp6_send()); lib/proto/README.md,
 * "IPv6", says what is kept and what is not there yet.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "proto/proto.h"

static const uint8_t ip6_loopback[16] = { [15] = 1 };

static bool ip6_is_zero(const uint8_t *a)
{
	static const uint8_t zero[16];

	return !memcmp(a, zero, 16);
}

static bool ip6_is_v4mapped(const uint8_t *a)
{
	static const uint8_t pre[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a, pre, 12);
}

/* The stack's link-local address, once DAD found no other node on it. */
static bool ip6_ll_is(const struct sl_stack *s, const uint8_t *a)
{
	return SL_READ_ONCE(s->lib->ip6_ll_state) == SL_LL_VALID && !memcmp(a, s->lib->ip6_ll, 16);
}

bool sl_ip6_is_local(const struct sl_stack *s, const uint8_t *a)
{
	return !memcmp(a, ip6_loopback, 16) ||
	       (!ip6_is_zero(s->lib->ip6_addr) && !memcmp(a, s->lib->ip6_addr, 16)) ||
	       ip6_ll_is(s, a);
}

/* The source the stack sends from to dst: its link-local address to a
 * link-local destination (RFC 6724 rule 2, the smallest scope that
 * reaches it), else its global one. */
static const uint8_t *ip6_src_to(const struct sl_stack *s, const uint8_t *dst)
{
	return sl_ip6_is_ll(dst) && ip6_ll_is(s, s->lib->ip6_ll) ? s->lib->ip6_ll
								 : s->lib->ip6_addr;
}

/* A multicast group the stack is in: all-nodes (link- and interface-local
 * scope) and the solicited-node groups of its addresses (RFC 4291 2.7.1;
 * a tentative address's too, RFC 4862 5.4.2). */
static bool ip6_mcast_ours(const struct sl_stack *s, const uint8_t *a)
{
	static const uint8_t all_nodes[15] = { 0xff, 0x02 };
	static const uint8_t sol[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	const uint8_t *me = s->lib->ip6_addr, *ll = s->lib->ip6_ll;

	if ((a[1] == 0x01 || a[1] == 0x02) && !memcmp(a + 2, all_nodes + 2, 13) && a[15] == 1)
		return true;
	if (memcmp(a, sol, 13))
		return false;
	return (!ip6_is_zero(me) && !memcmp(a + 13, me + 13, 3)) ||
	       (s->lib->ip6_ll_state != SL_LL_NONE && !memcmp(a + 13, ll + 13, 3));
}

/*
 * The flow label Linux's net.ipv6.auto_flowlabels (1, the default) puts
 * on packets that set none: a hash of the flow, never 0 (RFC 6437 3),
 * keyed by the stack's secret so others cannot predict it.
 */
uint32_t sl_ip6_flowlabel(const struct sl_stack *s, const uint8_t *saddr, const uint8_t *daddr,
			  uint8_t nxt, uint32_t ports)
{
	uint64_t h = s->lib->tcp_isn_secret[1] ^ ((uint64_t)nxt << 32 | ports);
	uint64_t w;

	for (unsigned int i = 0; i < 16; i += 8) {
		memcpy(&w, saddr + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
		memcpy(&w, daddr + i, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 32;
	}
	h = (h ^ s->lib->tcp_isn_secret[0]) * 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (uint32_t)h & IP6_FLOWLABEL_MASK_ ? (uint32_t)h & IP6_FLOWLABEL_MASK_ : 1;
}

void sl_ip6_build(struct sl_stack *s, uint32_t idx, uint8_t nxt, const uint8_t *saddr,
		  const uint8_t *daddr, uint16_t plen, uint8_t tclass, uint32_t flow, uint8_t hlim)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_ip6 *ip6;

	b->off = SL_HEADROOM;
	b->len = sizeof(*ip6);
	ip6 = (struct sl_ip6 *)sl_buf_data(s, idx);
	b->len = (uint16_t)(sizeof(*ip6) + plen);
	ip6->vtcfl = htonl(6u << 28 | (uint32_t)tclass << 20 | (flow & IP6_FLOWLABEL_MASK_));
	ip6->plen = htons(plen);
	ip6->nxt = nxt;
	ip6->hlim = hlim ? hlim : sl_ip6_hlim(s);
	memcpy(ip6->saddr, saddr, 16);
	memcpy(ip6->daddr, daddr, 16);
}

bool sl_ip6_on_link(const struct sl_stack *s, const uint8_t *a)
{
	const uint8_t *me = s->lib->ip6_addr;
	uint32_t plen = SL_READ_ONCE(s->lib->ip6_plen), n;

	if (a[0] == 0xff || sl_ip6_is_ll(a))
		return true;
	if (plen > 128)
		return false;
	n = plen / 8;
	return !memcmp(a, me, n) && (!(plen % 8) || !((a[n] ^ me[n]) & (0xff00u >> (plen % 8))));
}

int sl_ip6_output(struct sl_stack *s, uint32_t idx)
{
	const struct sl_ip6 *ip6 = (const struct sl_ip6 *)sl_buf_data(s, idx);
	const uint8_t *nh = ip6->daddr;
	int ret;

	sl_count(s, SL_C_ip6_tx);
	if (sl_ip6_is_local(s, ip6->daddr)) {
		sl_ip_loopback_one(s, idx);
		return 0;
	}
	/* On the link the destination is the next hop; off it, a link that
	 * routes (kring: the kernel's route) finds it, and any other sends
	 * there as on the link, as before (a peer only reaches the stack
	 * from its link then). */
	if (!s->link || !s->link->ops->tx6 || ip6_is_zero(s->lib->ip6_addr)) {
		sl_count(s, SL_C_ip6_tx_noroute);
		ret = -ENETUNREACH;
	} else {
		if (__builtin_expect(s->lib->cap_on != 0, 0) && sl_cap_ip(s, sl_buf(s, idx), true))
			sl_cap_packet(s, idx, SL_CAP_OUT);
		if (s->link->ops->route6 && !sl_ip6_on_link(s, nh))
			nh = NULL;
		ret = s->link->ops->tx6(s->link, s, idx, nh);
		sl_count(s, ret ? SL_C_link_tx_err : SL_C_link_tx);
	}
	sl_buf_free(s, idx);
	return ret;
}

/* ---- IPv6 sockets: address handles (proto.h) ---------------------------- */

bool sl_v6tok_addr(const struct sl_stack *s, uint32_t tok, uint8_t *out)
{
	const struct sl_region *r = s->lib;
	uint32_t i = ntohl(tok) - SL_V6TOK_BASE, n = sl_load_acquire(&r->v6tok_n);

	if (tok == SL_V6TOK_LO) {
		memcpy(out, ip6_loopback, 16);
		return true;
	}
	if (tok == SL_V6TOK_ME) {
		memcpy(out, r->ip6_addr, 16);
		return !ip6_is_zero(out);
	}
	if (tok == SL_V6TOK_LL) {
		memcpy(out, r->ip6_ll, 16);
		return !ip6_is_zero(out);
	}
	if (!sl_v6tok(tok) || i >= n || i >= s->v6tok_max)
		return false;
	memcpy(out, s->v6tok[i], 16);
	return true;
}

/*
 * A keyed mix of address a's 16 bytes (the ISN secret's halves, k first),
 * so that peers cannot choose addresses that share a run of hash slots or
 * a chain.
 */
static uint32_t v6_mix(const struct sl_stack *s, const uint8_t *a, unsigned int k)
{
	const uint64_t *secret = s->lib->tcp_isn_secret;
	uint64_t x, y;

	memcpy(&x, a, 8);
	memcpy(&y, a + 8, 8);
	x = (x ^ secret[k]) * 0x9e3779b97f4a7c15ull;
	y = (y ^ secret[k ^ 1] ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
	y ^= y >> 31;
	return (uint32_t)(y ^ (y >> 32));
}

/*
 * Where a's hash slots start.  Slots are probed in turn (linear probing);
 * 2 * v6tok_max of them for at most v6tok_max entries, none ever taken
 * back, so a run ends at an empty slot within a few steps.
 */
static uint32_t v6tok_slot(const struct sl_stack *s, const uint8_t *a)
{
	return v6_mix(s, a, 0) & (2 * s->v6tok_max - 1);
}

/* The entry of a peer's address a, as v6tok_find()'s walk of its hash
 * slots finds it: its index, or the empty slot where it would go
 * (*empty), or neither (a slot out of range: the region scribbled). */
static uint32_t v6tok_lookup(const struct sl_stack *s, const uint8_t *a, uint32_t *empty)
{
	uint32_t n = sl_load_acquire(&s->lib->v6tok_n), mask = 2 * s->v6tok_max - 1;
	uint32_t slot = v6tok_slot(s, a);

	*empty = SLUICE_IDX_NONE;
	for (uint32_t step = 0; s->v6tok_max && step <= mask; step++, slot = (slot + 1) & mask) {
		/* Acquire: pairs with v6tok_get()'s release; the entry the
		 * slot names is written. */
		uint32_t v = sl_load_acquire(&s->v6tok_hash[slot]);

		if (!v) {
			*empty = slot;
			break;
		}
		if (v - 1 < n && v - 1 < s->v6tok_max && !memcmp(s->v6tok[v - 1], a, 16))
			return v - 1;
	}
	return SLUICE_IDX_NONE;
}

uint32_t sl_v6tok_find(const struct sl_stack *s, const uint8_t *a)
{
	const struct sl_region *r = s->lib;
	uint32_t n = sl_load_acquire(&r->v6tok_n), i, empty;

	if (!memcmp(a, ip6_loopback, 16))
		return SL_V6TOK_LO;
	/* The link-local address is LL's, also while it is the stack's
	 * ip6_addr for want of a global one: a global one the stack takes
	 * later (link/kring_link.c) leaves its sockets where they are. */
	if (ip6_ll_is(s, a))
		return SL_V6TOK_LL;
	if (!ip6_is_zero(r->ip6_addr) && !memcmp(a, r->ip6_addr, 16))
		return SL_V6TOK_ME;
	if (!n)
		return 0;
	i = v6tok_lookup(s, a, &empty);
	return i == SLUICE_IDX_NONE ? 0 : htonl(SL_V6TOK_BASE + i);
}

bool sl_v6tok_is_ll(const struct sl_stack *s, uint32_t tok)
{
	uint8_t a[16];

	return sl_v6tok_addr(s, tok, a) && sl_ip6_is_ll(a);
}

uint32_t sl_v6tok_get(struct sl_stack *s, const uint8_t *a)
{
	struct sl_region *r = s->lib;
	uint32_t tok = sl_v6tok_find(s, a), n = r->v6tok_n, slot;

	/* The stack's own link-local address while tentative or failed
	 * is nobody's to name. */
	if (tok || ip6_is_zero(a) || ip6_is_v4mapped(a) || sl_ip6_is_mcast(a) ||
	    n >= s->v6tok_max || !memcmp(a, r->ip6_ll, 16))
		return tok;
	if (v6tok_lookup(s, a, &slot) != SLUICE_IDX_NONE || slot == SLUICE_IDX_NONE)
		return 0;
	/* Never given back: a handle names one address for the stack's
	 * life, so no socket or TIME-WAIT entry can come to name another.
	 * The entry is written before the count, the count before the
	 * hash slot that shows it (a process that dies between leaves an
	 * entry nobody finds: a handle lost, no other harm). */
	memcpy(s->v6tok[n], a, 16);
	sl_store_release(&r->v6tok_n, n + 1);
	sl_store_release(&s->v6tok_hash[slot], n + 1);
	return htonl(SL_V6TOK_BASE + n);
}

/*
 * Out: TCP or UDP from a socket on handles, the IPv4-shaped header
 * (sl_ip_build()) replaced by IPv6's, 20 bytes longer, in the headroom.
 * The transport checksum is made again over IPv6's pseudo-header (RFC
 * 8200 8.1; UDP's never 0); traffic class and hop limit are IP_TOS's
 * and IP_TTL's; the flow label automatic (sl_ip6_flowlabel()).
 */
int sl_ip6_output_tok(struct sl_stack *s, uint32_t idx, bool keep)
{
	uint32_t n = keep ? sl_pkt_copy(s, idx) : idx;
	uint8_t src[16], dst[16];
	unsigned int hlen, l4len;
	struct sluice_buf *b;
	struct sl_ip6 *ip6;
	struct sl_ip ip4;
	unsigned int coff;
	uint32_t ports;
	uint16_t sum;
	uint8_t *l4;

	if (n == SLUICE_IDX_NONE) {
		sl_count(s, SL_C_ip_tx_nobuf);
		return -ENOBUFS;
	}
	b = sl_buf(s, n);
	memcpy(&ip4, sl_buf_data(s, n), sizeof(ip4));
	hlen = (ip4.ver_ihl & 0xf) * 4u;
	l4len = b->len - hlen;
	if (hlen < sizeof(ip4) || b->len < hlen + 8 || b->off + hlen < SL_HEADROOM ||
	    (ip4.proto != IPPROTO_TCP_ && ip4.proto != IPPROTO_UDP_) ||
	    (ntohs(ip4.frag) & (IP_MF_ | IP_OFFMASK_)) || !sl_v6tok_addr(s, ip4.saddr, src) ||
	    !sl_v6tok_addr(s, ip4.daddr, dst) ||
	    (ip4.proto == IPPROTO_TCP_ && l4len < sizeof(struct sl_tcph))) {
		sl_count(s, SL_C_ip6_tx_untranslated);
		sl_buf_free(s, n);
		return -ENETUNREACH;
	}
	l4 = sl_buf_data(s, n) + hlen;
	coff = ip4.proto == IPPROTO_TCP_ ? offsetof(struct sl_tcph, csum)
					 : offsetof(struct sl_udp, csum);
	memset(l4 + coff, 0, 2);
	sum = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(src, dst, ip4.proto, l4len), l4, l4len));
	if (!sum && ip4.proto == IPPROTO_UDP_)
		sum = 0xffff;
	memcpy(l4 + coff, &sum, 2);
	memcpy(&ports, l4, 4);
	b->off = (uint16_t)(b->off + hlen - sizeof(*ip6));
	b->len = (uint16_t)(sizeof(*ip6) + l4len);
	ip6 = (struct sl_ip6 *)sl_buf_data(s, n);
	ip6->vtcfl = htonl(6u << 28 | (uint32_t)ip4.tos << 20 |
			   sl_ip6_flowlabel(s, src, dst, ip4.proto, ports));
	ip6->plen = htons((uint16_t)l4len);
	ip6->nxt = ip4.proto;
	ip6->hlim = ip4.ttl;
	memcpy(ip6->saddr, src, 16);
	memcpy(ip6->daddr, dst, 16);
	return sl_ip6_output(s, n);
}

/*
 * Fragments (RFC 8200 4.5), as Linux's ip6_fragment() cuts a UDP datagram
 * past the path MTU: the unfragmentable part is the IPv6 header alone; each
 * fragment but the last carries the most multiple of 8 bytes that fits mtu
 * with the fragment header; one identification for all of them (Linux
 * hashes the addresses with a secret and a counter, as here); the
 * traffic class, hop limit and flow label a whole packet would have had.
 * The UDP checksum covers the whole datagram over IPv6's pseudo-header
 * (never 0).
 */
int sl_ip6_output_frags(struct sl_stack *s, const struct sl_ip *hdr, const struct sl_udp *uh,
			const uint8_t *data, size_t dlen, uint32_t mtu)
{
	size_t total = sizeof(*uh) + dlen, done = 0, chunk;
	uint8_t src[16], dst[16], head[sizeof(*uh)];
	struct sl_udp u = *uh;
	uint32_t id, flow, ports, n_id;

	chunk = mtu > sizeof(struct sl_ip6) + sizeof(struct sl_ip6_frag) + 8 ?
		(mtu - sizeof(struct sl_ip6) - sizeof(struct sl_ip6_frag)) & ~(size_t)7 : 0;
	if (!sl_v6tok_addr(s, hdr->saddr, src) || !sl_v6tok_addr(s, hdr->daddr, dst) || !chunk ||
	    chunk > s->buf_size - SL_HEADROOM - sizeof(struct sl_ip6) - sizeof(struct sl_ip6_frag)) {
		sl_count(s, SL_C_ip6_tx_untranslated);
		return -ENETUNREACH;
	}
	u.csum = 0;
	u.csum = sl_csum_fold(sl_csum_add(sl_csum_add(sl_csum_pseudo6(src, dst, IPPROTO_UDP_,
								      (uint32_t)total),
						      &u, sizeof(u)),
					  data, dlen));
	if (!u.csum)
		u.csum = 0xffff;
	memcpy(head, &u, sizeof(u));
	memcpy(&ports, &u, 4);
	flow = sl_ip6_flowlabel(s, src, dst, IPPROTO_UDP_, ports);
	n_id = s->lib->ip_id_next++;
	id = sl_ip6_flowlabel(s, dst, src, IPPROTO_FRAGMENT_, n_id) << 12 | (n_id & 0xfff);
	while (done < total) {
		size_t n = total - done < chunk ? total - done : chunk, from = 0;
		bool more = done + n < total;
		struct sl_ip6_frag *fh;
		uint32_t idx = sl_buf_alloc(s);
		uint8_t *p;

		if (idx == SLUICE_IDX_NONE) {
			sl_count(s, SL_C_ip_tx_nobuf);
			return -ENOBUFS;
		}
		fh = (struct sl_ip6_frag *)(sl_buf_base(s, idx) + SL_HEADROOM + sizeof(struct sl_ip6));
		memset(fh, 0, sizeof(*fh));
		fh->nxt = IPPROTO_UDP_;
		fh->off = htons((uint16_t)(done | (more ? 1 : 0)));
		fh->id = htonl(id);
		p = (uint8_t *)(fh + 1);
		/* The stream is the UDP header, then the payload. */
		if (done < sizeof(head)) {
			from = sizeof(head) - done < n ? sizeof(head) - done : n;
			memcpy(p, head + done, from);
		}
		if (n > from)
			memcpy(p + from, data + done + from - sizeof(head), n - from);
		sl_ip6_build(s, idx, IPPROTO_FRAGMENT_, src, dst,
			     (uint16_t)(sizeof(*fh) + n), hdr->tos, flow, hdr->ttl);
		sl_count(s, SL_C_ip6_frag_tx);
		sl_ip6_output(s, idx);
		done += n;
	}
	return 0;
}

/* ---- ICMPv6 errors (RFC 4443 2.4) --------------------------------------- */

/*
 * Linux's limit on ICMPv6 errors (icmpv6_xrlim_allow()): informational
 * messages and Packet Too Big go free; others take a token from the
 * host-wide bucket ICMP uses and one from the destination's, whose
 * interval is net.ipv6.icmp.ratelimit (1000 ms) shortened by the route's
 * prefix length (>> (128 - plen) / 32: 250 ms on a /64).  None for the
 * stack's own addresses.
 */
static bool icmp6_allow(struct sl_stack *s, uint8_t type, const uint8_t *daddr)
{
	struct sl_region *r = s->lib;
	uint64_t now = sl_now(s) / 1000;
	uint32_t plen = r->ip6_plen && r->ip6_plen <= 128 ? r->ip6_plen : 64;
	uint32_t tmo = 1000u >> ((128 - plen) >> 5);

	if ((type & 0x80) || type == ICMP6_PACKET_TOO_BIG_ || sl_ip6_is_local(s, daddr))
		return true;
	if (!sl_icmp_global_ok(s, now) || !sl_icmp_peer_allow(r->icmp6_rl, daddr, now, tmo)) {
		sl_count(s, SL_C_icmp6_ratelimit);
		return false;
	}
	r->icmp_credit--;
	return true;
}

/*
 * The upper-layer header of the packet ip6 (len bytes), past any
 * extension headers: its next-header value in *nxt and its offset, or -1
 * if the chain does not end inside the packet (ipv6_skip_exthdr()).
 */
static int ip6_skip_ext(const uint8_t *pkt, unsigned int len, uint8_t *nxt)
{
	unsigned int off = sizeof(struct sl_ip6);
	uint8_t n = ((const struct sl_ip6 *)pkt)->nxt;

	for (;;) {
		unsigned int hl;

		if (n != IPPROTO_HOPOPTS_ && n != IPPROTO_ROUTING_ && n != IPPROTO_DSTOPTS_ &&
		    n != IPPROTO_FRAGMENT_)
			break;
		if (off + 8 > len)
			return -1;
		if (n == IPPROTO_FRAGMENT_) {
			const struct sl_ip6_frag *fh = (const struct sl_ip6_frag *)(pkt + off);

			/* Only the first fragment shows what follows. */
			if (ntohs(fh->off) & ~7u)
				return -1;
			hl = 8;
		} else {
			hl = ((unsigned int)pkt[off + 1] + 1) * 8;
		}
		n = pkt[off];
		off += hl;
	}
	*nxt = n;
	return off <= len ? (int)off : -1;
}

/*
 * An ICMPv6 error of type and code (info: the pointer, the MTU) about the
 * packet in orig_idx, which stays the caller's.  Not about an ICMPv6
 * error, nor a packet from :: or a group; to a group (or in a link-layer
 * multicast frame) only Packet Too Big and an unknown option that asked
 * for it (RFC 4443 2.4 (e)).  From the address the packet was sent to if
 * it is ours, else the stack's; quoting as much of it as keeps the error
 * within the minimum MTU, 1280.
 */
void sl_icmp6_send_error(struct sl_stack *s, uint32_t orig_idx, uint8_t type, uint8_t code,
			 uint32_t info)
{
	const struct sluice_buf *ob = sl_buf(s, orig_idx);
	const uint8_t *pkt = sl_buf_data(s, orig_idx);
	const struct sl_ip6 *oip = (const struct sl_ip6 *)pkt;
	unsigned int qlen = ob->len, room;
	const uint8_t *src;
	struct sl_icmp6 *ic;
	uint32_t idx, sum;
	uint8_t unxt;
	int uoff;

	if (ip6_is_zero(oip->saddr) || sl_ip6_is_mcast(oip->saddr))
		return;
	if ((sl_ip6_is_mcast(oip->daddr) || (ob->flags & SL_BUF_L2_BCAST)) &&
	    type != ICMP6_PACKET_TOO_BIG_ &&
	    !(type == ICMP6_PARAM_PROB_ && code == ICMP6_PARAMPROB_OPTION_))
		return;
	uoff = ip6_skip_ext(pkt, qlen, &unxt);
	if (uoff >= 0 && unxt == IPPROTO_ICMPV6_ &&
	    ((unsigned int)uoff + 1 > qlen || !(pkt[uoff] & 0x80)))
		return;
	src = sl_ip6_is_local(s, oip->daddr) ? oip->daddr : ip6_src_to(s, oip->saddr);
	if (ip6_is_zero(src))
		return;
	if (!icmp6_allow(s, type, oip->saddr))
		return;
	room = s->buf_size - SL_HEADROOM - sizeof(struct sl_ip6) - sizeof(*ic);
	if (room > IP6_MIN_MTU_ - sizeof(struct sl_ip6) - sizeof(*ic))
		room = IP6_MIN_MTU_ - sizeof(struct sl_ip6) - sizeof(*ic);
	if (qlen > room)
		qlen = room;
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return;
	ic = (struct sl_icmp6 *)(sl_buf_base(s, idx) + SL_HEADROOM + sizeof(struct sl_ip6));
	ic->type = type;
	ic->code = code;
	ic->csum = 0;
	ic->data = htonl(info);
	memcpy(ic + 1, pkt, qlen);
	sum = sl_csum_pseudo6(src, oip->saddr, IPPROTO_ICMPV6_, sizeof(*ic) + qlen);
	ic->csum = sl_csum_fold(sl_csum_add(sum, ic, sizeof(*ic) + qlen));
	sl_ip6_build(s, idx, IPPROTO_ICMPV6_, src, oip->saddr, (uint16_t)(sizeof(*ic) + qlen), 0,
		     sl_ip6_flowlabel(s, src, oip->saddr, IPPROTO_ICMPV6_, type), 0);
	sl_count(s, SL_C_icmp6_err_tx);
	sl_ip6_output(s, idx);
}

/* ---- Neighbour Discovery (RFC 4861) ------------------------------------- */

/* Linux's defaults: base_reachable_time (not randomized here),
 * delay_first_probe_time, retrans_time, mcast_solicit and ucast_solicit. */
#define ND_REACHABLE_MS		30000
#define ND_DELAY_MS		5000
#define ND_RETRANS_MS		1000
#define ND_TRIES		3

#define ND_NS_		135
#define ND_NA_		136
#define ND_OPT_SLLA_	1
#define ND_OPT_TLLA_	2
#define ND_NA_ROUTER_	0x80000000u
#define ND_NA_SOLICITED_ 0x40000000u
#define ND_NA_OVERRIDE_	0x20000000u

static uint64_t nd_now(struct sl_stack *s)
{
	return sl_now(s) / 1000;
}

/* The hash chain of address ip: keyed as the handles' (v6_mix()), with
 * the secret's two halves the other way round. */
static uint32_t *nd_chain(struct sl_stack *s, const uint8_t *ip)
{
	return &s->lib->neigh6_hash[v6_mix(s, ip, 1) & (SL_NEIGH6_MAX - 1)];
}

/* An entry's place in the table from a chain link (index + 1), NULL at
 * the chain's end or for a link out of range. */
static struct sl_neigh6 *nd_at(struct sl_stack *s, uint32_t link)
{
	return link - 1 < SL_NEIGH6_MAX ? &s->lib->neigh6[link - 1] : NULL;
}

/* A chain is at most the table long: a scribbled loop ends there. */
static struct sl_neigh6 *nd_find(struct sl_stack *s, const uint8_t *ip)
{
	struct sl_neigh6 *n = nd_at(s, *nd_chain(s, ip));

	for (unsigned int steps = 0; n && steps < SL_NEIGH6_MAX; steps++, n = nd_at(s, n->hnext))
		if (n->state != SL_ND_FREE && !memcmp(n->ip, ip, 16))
			return n;
	return NULL;
}

static void nd_link(struct sl_stack *s, struct sl_neigh6 *n)
{
	uint32_t *head = nd_chain(s, n->ip);

	n->hnext = *head;
	*head = (uint32_t)(n - s->lib->neigh6) + 1;
}

static void nd_unlink(struct sl_stack *s, struct sl_neigh6 *n)
{
	uint32_t *p = nd_chain(s, n->ip), me = (uint32_t)(n - s->lib->neigh6) + 1;

	for (unsigned int steps = 0; *p && steps < SL_NEIGH6_MAX; steps++) {
		struct sl_neigh6 *c = nd_at(s, *p);

		if (!c)
			break;
		if (*p == me) {
			*p = n->hnext;
			break;
		}
		p = &c->hnext;
	}
	n->hnext = 0;
}

void sl_nd_rehash(struct sl_stack *s)
{
	memset(s->lib->neigh6_hash, 0, sizeof(s->lib->neigh6_hash));
	for (unsigned int i = 0; i < SL_NEIGH6_MAX; i++) {
		s->lib->neigh6[i].hnext = 0;
		if (s->lib->neigh6[i].state != SL_ND_FREE)
			nd_link(s, &s->lib->neigh6[i]);
	}
}

/* Free n, and the packet it held (counted). */
static void nd_forget(struct sl_stack *s, struct sl_neigh6 *n)
{
	sl_hold_drop(s, &n->hold_idx, SL_C_nd_unres_drop);
	if (n->state != SL_ND_FREE)
		nd_unlink(s, n);
	memset(n, 0, sizeof(*n));
	n->hold_idx = SLUICE_IDX_NONE;
}

/* n has a link address now: the packets it held go, oldest first
 * (through the link, which finds n resolved). */
static void nd_release(struct sl_stack *s, struct sl_neigh6 *n)
{
	uint32_t h = sl_hold_take(s, &n->hold_idx), steps = 0;

	while (sl_buf_next(s, h, &steps)) {
		uint32_t next = sl_hold_next(s, h);

		if (s->link && s->link->ops->tx6 && !s->link->ops->tx6(s->link, s, h, n->ip))
			sl_count(s, SL_C_link_tx);
		sl_buf_free(s, h);
		h = next;
	}
}

/* A free entry, else the least recently updated one. */
static struct sl_neigh6 *nd_new(struct sl_stack *s, const uint8_t *ip, uint8_t state)
{
	struct sl_neigh6 *pick = NULL;

	for (unsigned int i = 0; i < SL_NEIGH6_MAX; i++) {
		struct sl_neigh6 *n = &s->lib->neigh6[i];

		if (n->state == SL_ND_FREE) {
			pick = n;
			break;
		}
		if (!pick || n->updated_ms < pick->updated_ms)
			pick = n;
	}
	nd_forget(s, pick);
	memcpy(pick->ip, ip, 16);
	pick->state = state;
	pick->updated_ms = nd_now(s);
	nd_link(s, pick);
	return pick;
}

static void nd_state(struct sl_stack *s, struct sl_neigh6 *n, uint8_t state)
{
	n->state = state;
	n->tries = 0;
	n->updated_ms = nd_now(s);
}

/* An ND message of len bytes (built at m) from the stack's address to
 * dst, hop limit 255 (RFC 4861 7.1: receivers check it). */
static void nd_send(struct sl_stack *s, uint32_t idx, const uint8_t *src, const uint8_t *dst,
		    unsigned int len)
{
	struct sl_icmp6 *ic = (struct sl_icmp6 *)(sl_buf_base(s, idx) + SL_HEADROOM +
						  sizeof(struct sl_ip6));

	ic->csum = 0;
	ic->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(src, dst, IPPROTO_ICMPV6_, len), ic,
					    len));
	sl_ip6_build(s, idx, IPPROTO_ICMPV6_, src, dst, (uint16_t)len, 0, 0, 255);
	sl_ip6_output(s, idx);
}

/* A solicitation for target: to its solicited-node group (resolving), or
 * to it (probing a known neighbour); with our link address (4.3). */
static void nd_send_ns(struct sl_stack *s, const uint8_t *target, bool unicast)
{
	uint8_t dst[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	uint32_t idx = sl_buf_alloc(s);
	struct sl_icmp6 *ic;
	uint8_t *p;

	const uint8_t *src = ip6_src_to(s, target);

	if (idx == SLUICE_IDX_NONE || ip6_is_zero(src)) {
		if (idx != SLUICE_IDX_NONE)
			sl_buf_free(s, idx);
		return;
	}
	if (unicast)
		memcpy(dst, target, 16);
	else
		memcpy(dst + 13, target + 13, 3);
	ic = (struct sl_icmp6 *)(sl_buf_base(s, idx) + SL_HEADROOM + sizeof(struct sl_ip6));
	memset(ic, 0, sizeof(*ic));
	ic->type = ND_NS_;
	p = (uint8_t *)(ic + 1);
	memcpy(p, target, 16);
	p[16] = ND_OPT_SLLA_;
	p[17] = 1;
	memcpy(p + 18, s->lib->mac, 6);
	sl_count(s, SL_C_nd_ns_tx);
	nd_send(s, idx, src, dst, sizeof(*ic) + 16 + 8);
}

/*
 * Duplicate Address Detection of the link-local address (RFC 4862 5.4,
 * as Linux's addrconf_dad_work()): a solicitation for it from :: to its
 * solicited-node group, with no link address but the nonce of RFC 7527
 * (Linux's enhanced_dad, on by default), then retrans_time for another
 * node to answer or solicit the same.
 */
#define ND_OPT_NONCE_	14
static void nd_send_dad(struct sl_stack *s)
{
	static const uint8_t any[16];
	uint8_t dst[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
	const uint8_t *ll = s->lib->ip6_ll;
	uint32_t idx = sl_buf_alloc(s);
	uint64_t nonce = s->lib->tcp_isn_secret[1] ^ s->lib->ip6_ll_dad_ms;
	struct sl_icmp6 *ic;
	uint8_t *p;

	if (idx == SLUICE_IDX_NONE)
		return;
	memcpy(dst + 13, ll + 13, 3);
	ic = (struct sl_icmp6 *)(sl_buf_base(s, idx) + SL_HEADROOM + sizeof(struct sl_ip6));
	memset(ic, 0, sizeof(*ic));
	ic->type = ND_NS_;
	p = (uint8_t *)(ic + 1);
	memcpy(p, ll, 16);
	p[16] = ND_OPT_NONCE_;
	p[17] = 1;
	memcpy(p + 18, &nonce, 6);
	sl_count(s, SL_C_nd_dad_tx);
	nd_send(s, idx, any, dst, sizeof(*ic) + 16 + 8);
}

/* Another node has the link-local address (5.4.3, 5.4.4): it is not used
 * (Linux's addrconf_dad_failure() leaves it "dadfailed"). */
static void nd_dad_failed(struct sl_stack *s)
{
	sl_store_release(&s->lib->ip6_ll_state, SL_LL_DADFAILED);
	sl_count(s, SL_C_nd_dad_failed);
}

void sl_ip6_ll_start(struct sl_stack *s, uint32_t gen_mode, uint32_t probes)
{
	struct sl_region *r = s->lib;
	uint8_t ll[16] = { 0xfe, 0x80 };
	uint64_t now = sl_now(s) / 1000;

	/* addr_gen_mode 1 (none): no link-local address. */
	if (gen_mode == 1 || !memcmp(r->mac, "\0\0\0\0\0\0", 6))
		return;
	/* The interface identifier: modified EUI-64 (RFC 4291 2.5.1, appendix
	 * A), the universal/local bit flipped, ff:fe in the middle. */
	ll[8] = r->mac[0] ^ 0x02;
	ll[9] = r->mac[1];
	ll[10] = r->mac[2];
	ll[11] = 0xff;
	ll[12] = 0xfe;
	memcpy(ll + 13, r->mac + 3, 3);
	/* Each process of the stack sets the address as it attaches: one
	 * already made from this link address stays as it is. */
	if (r->ip6_ll_state != SL_LL_NONE && !memcmp(r->ip6_ll, ll, 16))
		return;
	memcpy(r->ip6_ll, ll, 16);
	r->ip6_ll_probes = probes;
	/* The first solicitation after a random delay below
	 * rtr_solicit_delay, 1 s (addrconf_dad_kick()). */
	r->ip6_ll_dad_ms = now + (sl_ip6_flowlabel(s, ll, ll, 0, (uint32_t)now) % 1000);
	sl_store_release(&r->ip6_ll_state, probes ? SL_LL_TENTATIVE : SL_LL_VALID);
}

static void nd_dad_timer(struct sl_stack *s, uint64_t now)
{
	struct sl_region *r = s->lib;

	if (r->ip6_ll_state != SL_LL_TENTATIVE || now < r->ip6_ll_dad_ms)
		return;
	if (r->ip6_ll_probes) {
		r->ip6_ll_probes--;
		nd_send_dad(s);
		r->ip6_ll_dad_ms = now + ND_RETRANS_MS;
		return;
	}
	sl_store_release(&r->ip6_ll_state, SL_LL_VALID);
}

int sl_nd_resolve(struct sl_stack *s, const uint8_t *nh, uint8_t *mac, uint32_t idx)
{
	struct sl_neigh6 *n = nd_find(s, nh);
	uint64_t now = nd_now(s);

	if (!n) {
		n = nd_new(s, nh, SL_ND_INCOMPLETE);
		n->tries = 1;
		nd_send_ns(s, nh, false);
	}
	switch (n->state) {
	case SL_ND_INCOMPLETE:
		/* A copy waits behind those before it, as many as
		 * unres_qlen_bytes takes (sl_hold_add()). */
		sl_hold_add(s, &n->hold_idx, idx, SL_C_nd_unres_drop);
		return -EAGAIN;
	case SL_ND_REACHABLE:
	case SL_ND_STALE:
		/* 7.3.3: the first packet to a stale entry (a reachable
		 * one past its time is stale) starts DELAY. */
		if (n->state == SL_ND_STALE || now - n->updated_ms >= ND_REACHABLE_MS)
			nd_state(s, n, SL_ND_DELAY);
		break;
	default:
		break;
	}
	memcpy(mac, n->mac, 6);
	return 0;
}

void sl_nd_timer(struct sl_stack *s)
{
	uint64_t now = nd_now(s);

	nd_dad_timer(s, now);
	for (unsigned int i = 0; i < SL_NEIGH6_MAX; i++) {
		struct sl_neigh6 *n = &s->lib->neigh6[i];
		uint64_t age = now - n->updated_ms;

		switch (n->state) {
		case SL_ND_REACHABLE:
			if (age >= ND_REACHABLE_MS)
				nd_state(s, n, SL_ND_STALE);
			break;
		case SL_ND_DELAY:
			if (age < ND_DELAY_MS)
				break;
			nd_state(s, n, SL_ND_PROBE);
			n->tries = 1;
			nd_send_ns(s, n->ip, true);
			break;
		case SL_ND_INCOMPLETE:
		case SL_ND_PROBE:
			if (age < ND_RETRANS_MS)
				break;
			if (n->tries >= ND_TRIES) {
				sl_count(s, SL_C_nd_failed);
				nd_forget(s, n);
				break;
			}
			n->tries++;
			n->updated_ms = now;
			nd_send_ns(s, n->ip, n->state == SL_ND_PROBE);
			break;
		default:
			break;
		}
	}
}

/*
 * The options after an NS or NA's target (at p, len bytes): each at least
 * 8 bytes (7.1.1: a length of 0 makes the message invalid).  The link
 * address of the option of type want, or NULL.  False: invalid.
 */
static bool nd_opts(const uint8_t *p, unsigned int len, uint8_t want, const uint8_t **lla)
{
	*lla = NULL;
	while (len) {
		unsigned int ol;

		if (len < 2 || !p[1] || (ol = p[1] * 8u) > len)
			return false;
		if (p[0] == want && ol >= 8)
			*lla = p + 2;
		p += ol;
		len -= ol;
	}
	return true;
}

/* 7.2.3 / 7.2.4: a solicitation; answered if its target is ours. */
static void nd_ns_input(struct sl_stack *s, const struct sl_ip6 *ip6, const uint8_t *body,
			unsigned int len)
{
	const uint8_t *target = body + 8, *slla;
	static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
	bool dad = ip6_is_zero(ip6->saddr), inc = sl_ip6_is_mcast(ip6->daddr);
	struct sl_neigh6 *n;
	struct sl_icmp6 *ic;
	uint32_t idx;
	uint8_t *p;

	sl_count(s, SL_C_nd_ns_rx);
	if (ip6->hlim != 255 || body[1] != 0 || len < 24 || sl_ip6_is_mcast(target) ||
	    !nd_opts(body + 24, len - 24, ND_OPT_SLLA_, &slla) ||
	    (dad && (slla || !inc))) {
		sl_count(s, SL_C_nd_rx_bad);
		return;
	}
	/* 5.4.3: for our tentative link-local address, another node's DAD
	 * (from ::, with a nonce not ours) means it is taken; other
	 * solicitations for it are not answered. */
	if (s->lib->ip6_ll_state == SL_LL_TENTATIVE && !memcmp(target, s->lib->ip6_ll, 16)) {
		if (dad)
			nd_dad_failed(s);
		return;
	}
	if (!sl_ip6_is_local(s, target) || !memcmp(target, ip6_loopback, 16)) {
		sl_count(s, SL_C_icmp6_rx_ignored);
		return;
	}
	/* 7.2.3: the sender's link address makes or refreshes its entry. */
	if (slla) {
		n = nd_find(s, ip6->saddr);
		if (!n || memcmp(n->mac, slla, 6) || n->state == SL_ND_INCOMPLETE) {
			if (!n)
				n = nd_new(s, ip6->saddr, SL_ND_STALE);
			memcpy(n->mac, slla, 6);
			nd_state(s, n, SL_ND_STALE);
			nd_release(s, n);
		}
	}
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return;
	/* As Linux's ndisc_recv_ns(): solicited unless for DAD (then to all
	 * nodes); override and our link address only when the solicitation
	 * went to a group (a unicast one is a reachability probe). */
	ic = (struct sl_icmp6 *)(sl_buf_base(s, idx) + SL_HEADROOM + sizeof(struct sl_ip6));
	memset(ic, 0, sizeof(*ic));
	ic->type = ND_NA_;
	ic->data = htonl((dad ? 0 : ND_NA_SOLICITED_) | (inc ? ND_NA_OVERRIDE_ : 0));
	p = (uint8_t *)(ic + 1);
	memcpy(p, target, 16);
	if (inc) {
		p[16] = ND_OPT_TLLA_;
		p[17] = 1;
		memcpy(p + 18, s->lib->mac, 6);
	}
	sl_count(s, SL_C_nd_na_tx);
	nd_send(s, idx, target, dad ? all_nodes : ip6->saddr, sizeof(*ic) + 16 + (inc ? 8 : 0));
}

/* 7.2.5: an advertisement for a neighbour we have an entry for. */
static void nd_na_input(struct sl_stack *s, const struct sl_ip6 *ip6, const uint8_t *body,
			unsigned int len)
{
	const struct sl_icmp6 *ic = (const struct sl_icmp6 *)body;
	uint32_t flags = ntohl(ic->data);
	bool sol = flags & ND_NA_SOLICITED_, ovr = flags & ND_NA_OVERRIDE_;
	const uint8_t *tlla;
	struct sl_neigh6 *n;

	sl_count(s, SL_C_nd_na_rx);
	if (ip6->hlim != 255 || ic->code != 0 || len < 24 || sl_ip6_is_mcast(body + 8) ||
	    (sol && sl_ip6_is_mcast(ip6->daddr)) ||
	    !nd_opts(body + 24, len - 24, ND_OPT_TLLA_, &tlla)) {
		sl_count(s, SL_C_nd_rx_bad);
		return;
	}
	/* 5.4.4: an advertisement of our tentative address: taken. */
	if (s->lib->ip6_ll_state == SL_LL_TENTATIVE && !memcmp(body + 8, s->lib->ip6_ll, 16)) {
		nd_dad_failed(s);
		return;
	}
	n = nd_find(s, body + 8);
	if (!n)
		return;
	if (n->state == SL_ND_INCOMPLETE) {
		if (!tlla)
			return;
		memcpy(n->mac, tlla, 6);
		nd_state(s, n, sol ? SL_ND_REACHABLE : SL_ND_STALE);
		nd_release(s, n);
		return;
	}
	if (!ovr && tlla && memcmp(tlla, n->mac, 6)) {
		if (n->state == SL_ND_REACHABLE)
			nd_state(s, n, SL_ND_STALE);
		return;
	}
	if (tlla && memcmp(tlla, n->mac, 6)) {
		memcpy(n->mac, tlla, 6);
		if (!sol)
			nd_state(s, n, SL_ND_STALE);
	}
	if (sol)
		nd_state(s, n, SL_ND_REACHABLE);
}

/* ---- Upper layers ------------------------------------------------------- */

/* The upper-layer checksum of len bytes at off (RFC 8200 8.1): true if
 * right, or not to be checked (the stack's own loopback, as IPv4's). */
static bool ip6_csum_ok(struct sl_stack *s, uint32_t idx, const struct sl_ip6 *ip6,
			unsigned int off, unsigned int len, uint8_t nxt)
{
	const struct sluice_buf *b = sl_buf(s, idx);

	if (b->flags & (SL_BUF_LOCAL | SL_BUF_CSUM_OK))
		return true;
	return sl_csum_fold(sl_csum_add(sl_csum_pseudo6(ip6->saddr, ip6->daddr, nxt, len),
					(const uint8_t *)ip6 + off, len)) == 0;
}

/*
 * What a destination unreachable's code means to a socket, as Linux's
 * icmpv6_err_convert() has it (tab_unreach[]): the errno, and whether it
 * is hard (a connected UDP socket without IPV6_RECVERR hears of it).
 * Codes past these: EPROTO, hard.
 */
static const struct {
	uint8_t err, hard;
} unreach6[7] = {
	{ ENETUNREACH, 0 },	/* no route */
	{ EACCES, 1 },		/* administratively prohibited */
	{ EHOSTUNREACH, 0 },	/* beyond the source's scope */
	{ EHOSTUNREACH, 0 },	/* address unreachable */
	{ ECONNREFUSED, 1 },	/* port unreachable */
	{ EACCES, 1 },		/* source address failed policy */
	{ EACCES, 1 },		/* reject route */
};

/*
 * An ICMPv6 error (RFC 4443 3) about a TCP segment or UDP datagram a
 * socket on handles sent, to that socket, as Linux's icmpv6_notify()
 * and tcp_v6_err() / __udp6_lib_err() give it: the quoted IPv6 header
 * becomes an IPv4-shaped one on the handles (as ip6_to_tok() makes
 * them), so TCP and UDP find the socket as for ICMP, with ie.v6 saying
 * it is IPv6's (IPV6_RECVERR queues it, SO_EE_ORIGIN_ICMP6, the sender
 * as offender).  A Packet Too Big lowers the peer's path MTU (the table
 * keeps handles' MTUs less 20, sl_pmtu_get()), to 1280 at least (RFC
 * 8201 4, Linux __ip6_rt_update_pmtu()), and is EMSGSIZE: hard unless
 * IPV6_PMTUDISC_DONT, not taken at all under INTERFACE or OMIT
 * (ip6_sk_accept_pmtu()); TCP takes none below 1280.
 */
static void icmp6_err_input(struct sl_stack *s, const struct sl_ip6 *ip6,
			    const struct sl_icmp6 *ic, unsigned int len)
{
	uint8_t buf[sizeof(struct sl_ip) + IP6_MIN_MTU_] __attribute__((aligned(8)));
	const uint8_t *qp = (const uint8_t *)(ic + 1);
	unsigned int qlen = len - sizeof(*ic), tl;
	struct sl_ip *q = (struct sl_ip *)buf;
	struct sl_icmp_err ie = { .type = ic->type, .code = ic->code, .v6 = true };
	const struct sl_ip6 *qip6 = (const struct sl_ip6 *)qp;
	uint32_t stok, dtok, mtu = ntohl(ic->data);
	uint16_t ports[2];
	struct sl_sock *so;
	uint8_t nxt;
	int off, err;

	sl_count(s, SL_C_icmp6_err_rx);
	if (qlen < sizeof(*qip6) || (qp[0] >> 4) != 6)
		goto ignored;
	off = ip6_skip_ext(qp, qlen, &nxt);
	if (off < 0 || (unsigned int)off + 8 > qlen ||
	    (nxt != IPPROTO_TCP_ && nxt != IPPROTO_UDP_))
		goto ignored;
	stok = sl_v6tok_find(s, qip6->saddr);
	dtok = sl_v6tok_find(s, qip6->daddr);
	if (!sl_v6tok_own(stok) || !dtok)
		goto ignored;
	tl = qlen - (unsigned int)off;
	if (tl > IP6_MIN_MTU_)
		tl = IP6_MIN_MTU_;
	memset(q, 0, sizeof(*q));
	q->ver_ihl = 0x45;
	q->tot_len = htons((uint16_t)(sizeof(*q) + tl));
	q->ttl = qip6->hlim;
	q->proto = nxt;
	q->saddr = stok;
	q->daddr = dtok;
	memcpy(buf + sizeof(*q), qp + off, tl);
	memcpy(ports, qp + off, 4);
	ie.qlen = (unsigned int)sizeof(*q) + tl;
	memcpy(ie.offender6, ip6->saddr, 16);
	switch (ic->type) {
	case ICMP6_PACKET_TOO_BIG_:
		ie.info = mtu;
		if (nxt == IPPROTO_TCP_) {
			if (mtu >= IP6_MIN_MTU_)
				sl_tcp_icmp_frag(s, q, mtu - 20);
			return;
		}
		so = sl_sock_lookup(s, SL_SOCK_UDP, stok, ports[0], dtok, ports[1]);
		if (!so || sl_sock_pmtudisc6(so->ip6_opt) == IP_PMTUDISC_INTERFACE ||
		    sl_sock_pmtudisc6(so->ip6_opt) == IP_PMTUDISC_OMIT)
			return;
		sl_pmtu_update(s, dtok, (mtu < IP6_MIN_MTU_ ? IP6_MIN_MTU_ : mtu) - 20);
		ie.hard = sl_sock_pmtudisc6(so->ip6_opt) != IP_PMTUDISC_DONT;
		sl_udp_icmp_error(s, q, EMSGSIZE, &ie);
		return;
	case ICMP6_DST_UNREACH_:
		err = ic->code < sizeof(unreach6) / sizeof(unreach6[0]) ?
		      unreach6[ic->code].err : EPROTO;
		ie.hard = ic->code < sizeof(unreach6) / sizeof(unreach6[0]) ?
			  unreach6[ic->code].hard : true;
		break;
	case ICMP6_TIME_EXCEEDED_:
		err = EHOSTUNREACH;
		break;
	default:
		err = EPROTO;
		ie.hard = true;
		break;
	}
	if (nxt == IPPROTO_TCP_)
		sl_tcp_icmp_error(s, q, err, &ie);
	else
		sl_udp_icmp_error(s, q, err, &ie);
	return;
ignored:
	sl_count(s, SL_C_icmp6_rx_ignored);
}

static void icmp6_input(struct sl_stack *s, uint32_t idx, const struct sl_ip6 *ip6,
			unsigned int off)
{
	const struct sluice_buf *b = sl_buf(s, idx);
	unsigned int len = b->len - off;
	const struct sl_icmp6 *ic = (const struct sl_icmp6 *)((const uint8_t *)ip6 + off);
	const uint8_t *src;
	struct sl_icmp6 *rc;
	uint32_t r, sum;

	sl_count(s, SL_C_icmp6_rx);
	/* Even the stack's own: ICMPv6's checksum is always checked. */
	if (len < sizeof(*ic) ||
	    sl_csum_fold(sl_csum_add(sl_csum_pseudo6(ip6->saddr, ip6->daddr, IPPROTO_ICMPV6_, len),
				     ic, len)) != 0) {
		sl_count(s, SL_C_icmp6_rx_bad);
		goto drop;
	}
	if (ic->type == ND_NS_ || ic->type == ND_NA_) {
		if (ic->type == ND_NS_)
			nd_ns_input(s, ip6, (const uint8_t *)ic, len);
		else
			nd_na_input(s, ip6, (const uint8_t *)ic, len);
		goto drop;
	}
	if (ic->type >= ICMP6_DST_UNREACH_ && ic->type <= ICMP6_PARAM_PROB_) {
		icmp6_err_input(s, ip6, ic, len);
		goto drop;
	}
	if (ic->type != ICMP6_ECHO_REQUEST_ || ic->code != 0) {
		sl_count(s, SL_C_icmp6_rx_ignored);
		goto drop;
	}
	/* Linux answers a group's echo too (icmpv6_echo_ignore_multicast
	 * 0), from the stack's own address; the traffic class is the
	 * request's (icmpv6_echo_reply()). */
	src = sl_ip6_is_mcast(ip6->daddr) ? ip6_src_to(s, ip6->saddr) : ip6->daddr;
	if (ip6_is_zero(src) || ip6_is_zero(ip6->saddr) || sl_ip6_is_mcast(ip6->saddr) ||
	    len > s->buf_size - SL_HEADROOM - sizeof(*ip6)) {
		sl_count(s, SL_C_icmp6_rx_ignored);
		goto drop;
	}
	r = sl_buf_alloc(s);
	if (r == SLUICE_IDX_NONE)
		goto drop;
	rc = (struct sl_icmp6 *)(sl_buf_base(s, r) + SL_HEADROOM + sizeof(*ip6));
	memcpy(rc, ic, len);
	rc->type = ICMP6_ECHO_REPLY_;
	rc->csum = 0;
	sum = sl_csum_pseudo6(src, ip6->saddr, IPPROTO_ICMPV6_, len);
	rc->csum = sl_csum_fold(sl_csum_add(sum, rc, len));
	sl_ip6_build(s, r, IPPROTO_ICMPV6_, src, ip6->saddr, (uint16_t)len,
		     (uint8_t)(ntohl(ip6->vtcfl) >> 20),
		     sl_ip6_flowlabel(s, src, ip6->saddr, IPPROTO_ICMPV6_, ic->data), 0);
	sl_count(s, SL_C_icmp6_echo_replied);
	sl_ip6_output(s, r);
drop:
	sl_buf_free(s, idx);
}

/*
 * In: a TCP segment or UDP datagram (checksum checked) at off, for the
 * stack's sockets on address handles (proto.h, "IPv6 sockets").  The
 * IPv6 header becomes an IPv4-shaped one just before the transport
 * header: the handles, the traffic class as TOS, the hop limit as TTL;
 * then TCP or UDP takes it as IPv4's.  A source without a handle gets
 * one only if a socket is bound where the packet goes.  False (nothing
 * changed, the caller answers as for a closed port): no socket would.
 */
static bool ip6_to_tok(struct sl_stack *s, uint32_t idx, struct sl_ip6 *ip6, unsigned int off,
		       uint8_t proto)
{
	struct sluice_buf *b = sl_buf(s, idx);
	uint8_t type = proto == IPPROTO_TCP_ ? SL_SOCK_TCP : SL_SOCK_UDP;
	uint32_t dtok = sl_v6tok_find(s, ip6->daddr), stok = sl_v6tok_find(s, ip6->saddr);
	uint8_t tclass = (uint8_t)(ntohl(ip6->vtcfl) >> 20), hlim = ip6->hlim;
	unsigned int l4len = b->len - off;
	uint16_t ports[2];
	struct sl_ip *ip;

	memcpy(ports, (uint8_t *)ip6 + off, 4);
	if (!sl_v6tok_own(dtok) || (!(b->flags & SL_BUF_LOCAL) && sl_v6tok_own(stok)))
		return false;
	if (!stok || type == SL_SOCK_UDP) {
		if (!sl_sock_unconnected_at(s, type, dtok, ports[1]) &&
		    !(stok && sl_sock_lookup_conn(s, type, dtok, ports[1], stok, ports[0])))
			return false;
	}
	if (!stok) {
		stok = sl_v6tok_get(s, ip6->saddr);
		if (!stok) {
			sl_count(s, SL_C_ip6_rx_peers_full);
			return false;
		}
	}
	ip = (struct sl_ip *)((uint8_t *)ip6 + off - sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tos = tclass;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + l4len));
	ip->id = 0;
	ip->frag = htons(IP_DF_);
	ip->ttl = hlim;
	ip->proto = proto;
	ip->saddr = stok;
	ip->daddr = dtok;
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
	b->off = (uint16_t)(b->off + off - sizeof(*ip));
	b->len = (uint16_t)(sizeof(*ip) + l4len);
	b->flags |= SL_BUF_CSUM_OK;
	if (type == SL_SOCK_TCP)
		sl_tcp_input(s, idx, ip, sizeof(*ip), sl_now(s));
	else
		sl_udp_input(s, idx, ip, sizeof(*ip));
	return true;
}

/* UDP (RFC 768, RFC 8200 8.1): a checksum of 0 is an error over IPv6. */
static void udp6_input(struct sl_stack *s, uint32_t idx, const struct sl_ip6 *ip6,
		       unsigned int off)
{
	struct sluice_buf *b = sl_buf(s, idx);
	const struct sl_udp *uh = (const struct sl_udp *)((const uint8_t *)ip6 + off);
	unsigned int ulen;

	/* udp_rx and tcp_rx: counted here, or by UDP and TCP themselves
	 * for what goes to a socket (ip6_to_tok()). */
	if (b->len < off + sizeof(*uh))
		goto bad;
	ulen = ntohs(uh->len);
	if (ulen < sizeof(*uh) || off + ulen > b->len || !uh->csum)
		goto bad;
	b->len = (uint16_t)(off + ulen);	/* as Linux trims past uh->len */
	if (!ip6_csum_ok(s, idx, ip6, off, ulen, IPPROTO_UDP_))
		goto bad;
	if (!sl_ip6_is_mcast(ip6->daddr) &&
	    ip6_to_tok(s, idx, (struct sl_ip6 *)(uintptr_t)ip6, off, IPPROTO_UDP_))
		return;
	sl_count(s, SL_C_udp_rx);
	sl_count(s, SL_C_udp6_rx_noport);
	if (!sl_ip6_is_mcast(ip6->daddr))
		sl_icmp6_send_error(s, idx, ICMP6_DST_UNREACH_, ICMP6_UNREACH_PORT_, 0);
	goto drop;
bad:
	sl_count(s, SL_C_udp_rx);
	sl_count(s, SL_C_udp6_rx_bad);
drop:
	sl_buf_free(s, idx);
}

/* TCP to a socket (ip6_to_tok()), else to no socket: a reset (RFC 9293
 * 3.10.7.1), never to a group.  Its traffic class the segment's less
 * ECN, as tcp_v6_send_reset(). */
static void tcp6_input(struct sl_stack *s, uint32_t idx, const struct sl_ip6 *ip6,
		       unsigned int off)
{
	const struct sluice_buf *b = sl_buf(s, idx);
	const struct sl_tcph *in = (const struct sl_tcph *)((const uint8_t *)ip6 + off);
	unsigned int len = b->len - off, doff;
	struct sl_tcph *th;
	uint32_t r, sum;

	if (sl_ip6_is_mcast(ip6->daddr) || (b->flags & SL_BUF_L2_BCAST)) {
		sl_count(s, SL_C_tcp_rx);
		sl_count(s, SL_C_tcp_rx_bcast);
		goto drop;
	}
	doff = len >= sizeof(*in) ? (unsigned int)(in->off >> 4) * 4 : 0;
	if (doff < sizeof(*in) || doff > len || !ip6_csum_ok(s, idx, ip6, off, len, IPPROTO_TCP_)) {
		sl_count(s, SL_C_tcp_rx);
		sl_count(s, SL_C_tcp6_rx_bad);
		goto drop;
	}
	if (ip6_to_tok(s, idx, (struct sl_ip6 *)(uintptr_t)ip6, off, IPPROTO_TCP_))
		return;
	sl_count(s, SL_C_tcp_rx);
	sl_count(s, SL_C_tcp6_rx_noport);
	if (in->flags & TH_RST_)
		goto drop;
	r = sl_buf_alloc(s);
	if (r == SLUICE_IDX_NONE)
		goto drop;
	th = (struct sl_tcph *)(sl_buf_base(s, r) + SL_HEADROOM + sizeof(*ip6));
	sl_tcp_rst_fill(th, in, len - doff);
	sum = sl_csum_pseudo6(ip6->daddr, ip6->saddr, IPPROTO_TCP_, sizeof(*th));
	th->csum = sl_csum_fold(sl_csum_add(sum, th, sizeof(*th)));
	sl_ip6_build(s, r, IPPROTO_TCP_, ip6->daddr, ip6->saddr, sizeof(*th),
		     (uint8_t)((ntohl(ip6->vtcfl) >> 20) & 0xfc),
		     sl_ip6_flowlabel(s, ip6->daddr, ip6->saddr, IPPROTO_TCP_,
				      (uint32_t)th->sport << 16 | th->dport), 0);
	sl_count(s, SL_C_tcp_reset_tx);
	sl_ip6_output(s, r);
drop:
	sl_buf_free(s, idx);
}

/*
 * A fragment (RFC 8200 4.5) of a TCP segment or UDP datagram for a socket
 * on handles, its fragment header at off: made IPv4-shaped on the
 * handles (as ip6_to_tok() makes a whole packet) and queued by IPv4's
 * reassembly (ip.c, sl_ip6_frag_input()), which keeps Linux's rules for
 * overlaps (RFC 5722: the whole datagram dropped) and duplicates, its
 * memory limit, and ip6frag_time (60 s), and checks the whole's checksum
 * over IPv6's pseudo-header.  As Linux's ipv6_frag_rcv(): a fragment with
 * more to come whose length is not a multiple of 8 gets a parameter
 * problem pointing at the payload length.  Not taken (ip6_rx_frag_drop):
 * fragments of anything but TCP and UDP (their next header is the
 * fragment header's; no extension header after it), to a group, and from
 * a source with no handle yet unless it is the first fragment of a
 * datagram to a port a socket is bound on (a handle is then given, as
 * for a whole packet): a peer's first fragment must come first.
 */
static void ip6_frag_input(struct sl_stack *s, uint32_t idx, struct sl_ip6 *ip6, unsigned int off)
{
	struct sluice_buf *b = sl_buf(s, idx);
	const struct sl_ip6_frag *fh = (const struct sl_ip6_frag *)((uint8_t *)ip6 + off);
	unsigned int pay = off + sizeof(*fh), flen = b->len - pay;
	uint16_t fo = ntohs(fh->off);
	uint32_t stok, dtok, id = ntohl(fh->id);
	uint8_t nxt = fh->nxt, tclass = (uint8_t)(ntohl(ip6->vtcfl) >> 20), hlim = ip6->hlim;
	struct sl_ip *ip;

	if ((fo & 1) && (flen & 7)) {
		sl_icmp6_send_error(s, idx, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_HEADER_, 4);
		goto drop;
	}
	dtok = sl_v6tok_find(s, ip6->daddr);
	stok = sl_v6tok_find(s, ip6->saddr);
	if ((nxt != IPPROTO_TCP_ && nxt != IPPROTO_UDP_) ||
	    !sl_v6tok_own(dtok) || sl_v6tok_own(stok))
		goto drop;
	if (!stok) {
		uint16_t ports[2];

		if ((fo & ~7u) || flen < 4)
			goto drop;
		memcpy(ports, (uint8_t *)ip6 + pay, 4);
		if (!sl_sock_unconnected_at(s, nxt == IPPROTO_TCP_ ? SL_SOCK_TCP : SL_SOCK_UDP, dtok,
					    ports[1]))
			goto drop;
		stok = sl_v6tok_get(s, ip6->saddr);
		if (!stok) {
			sl_count(s, SL_C_ip6_rx_peers_full);
			goto drop;
		}
	}
	ip = (struct sl_ip *)((uint8_t *)ip6 + pay - sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tos = tclass;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + flen));
	ip->id = (uint16_t)(id ^ (id >> 16));
	ip->frag = htons((uint16_t)((fo >> 3) | ((fo & 1) ? IP_MF_ : 0)));
	ip->ttl = hlim;
	ip->proto = nxt;
	ip->saddr = stok;
	ip->daddr = dtok;
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
	b->off = (uint16_t)(b->off + pay - sizeof(*ip));
	b->len = (uint16_t)(sizeof(*ip) + flen);
	sl_ip6_frag_input(s, idx, ip, id);
	return;
drop:
	sl_count(s, SL_C_ip6_rx_frag_drop);
	sl_buf_free(s, idx);
}

/* ---- Input (RFC 8200 4) ------------------------------------------------- */

/* Linux's max_hbh_opts_cnt and max_dst_opts_cnt: options other than
 * padding one header may carry. */
#define IP6_MAX_OPTS	8

/*
 * The options of the hop-by-hop or destination options header at off
 * (hl bytes), as ip6_parse_tlv(): padding at most 7 bytes in a row and
 * PadN all zero; a router alert (hop-by-hop) is known; any other option's
 * type says in its two high bits what to do (RFC 8200 4.2): skip it, or
 * drop the packet and tell nobody, tell the source, or tell the source
 * unless the packet went to a group.  True: go on.
 */
static bool ip6_opts(struct sl_stack *s, uint32_t idx, const uint8_t *pkt, unsigned int off,
		     unsigned int hl, bool hbh)
{
	const struct sl_ip6 *ip6 = (const struct sl_ip6 *)pkt;
	unsigned int p = off + 2, end = off + hl, pad = 0, n = 0;

	while (p < end) {
		uint8_t t = pkt[p];
		unsigned int ol;

		if (t == IP6_OPT_PAD1_) {
			if (++pad > 7)
				goto bad;
			p++;
			continue;
		}
		if (p + 2 > end || p + 2 + pkt[p + 1] > end)
			goto bad;
		ol = 2u + pkt[p + 1];
		if (t == IP6_OPT_PADN_) {
			pad += ol;
			if (pad > 7)
				goto bad;
			for (unsigned int i = 2; i < ol; i++)
				if (pkt[p + i])
					goto bad;
			p += ol;
			continue;
		}
		pad = 0;
		if (++n > IP6_MAX_OPTS)
			goto bad;
		if (hbh && t == IP6_OPT_RA_ && ol == 4) {
			p += ol;
			continue;
		}
		switch (t >> 6) {
		case 0:
			break;
		case 3:
			if (sl_ip6_is_mcast(ip6->daddr))
				goto unknown;
			/* fall through */
		case 2:
			sl_icmp6_send_error(s, idx, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_OPTION_, p);
			/* fall through */
		default:
			goto unknown;
		}
		p += ol;
	}
	return true;
unknown:
	sl_count(s, SL_C_ip6_rx_unknown_opt);
	return false;
bad:
	sl_count(s, SL_C_ip6_rx_bad_opt);
	return false;
}

void sl_ip6_input(struct sl_stack *s, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);
	const uint8_t *pkt = sl_buf_data(s, idx);
	const struct sl_ip6 *ip6 = (const struct sl_ip6 *)pkt;
	bool local = b->flags & SL_BUF_LOCAL;
	unsigned int off = sizeof(*ip6), nhoff = 6, len;
	uint8_t nxt;

	sl_count(s, SL_C_ip6_rx);
	if (__builtin_expect(s->lib->cap_on != 0, 0) && sl_cap_ip(s, b, false))
		sl_cap_packet(s, idx, local ? SL_CAP_LO : 0);
	if (b->len < sizeof(*ip6) || (ntohl(ip6->vtcfl) >> 28) != 6 || sl_buf_chained(b) ||
	    sizeof(*ip6) + ntohs(ip6->plen) > b->len)
		goto bad_hdr;
	/* Trim link padding; jumbograms (RFC 2675) are not taken. */
	b->len = (uint16_t)(sizeof(*ip6) + ntohs(ip6->plen));
	len = b->len;
	/* RFC 4291 2.5.3: ::1 never from or to a link; 2.7: no group as a
	 * source; a v4-mapped source is IPv4's (RFC 4038 6.2). */
	if (sl_ip6_is_mcast(ip6->saddr) || ip6_is_v4mapped(ip6->saddr) ||
	    (!local && (!memcmp(ip6->saddr, ip6_loopback, 16) ||
			!memcmp(ip6->daddr, ip6_loopback, 16)))) {
		sl_count(s, SL_C_ip6_rx_martian);
		goto drop;
	}
	if (!sl_ip6_is_local(s, ip6->daddr) && !ip6_mcast_ours(s, ip6->daddr)) {
		sl_count(s, SL_C_ip6_rx_not_ours);
		goto drop;
	}
	nxt = ip6->nxt;
	for (;;) {
		unsigned int hl;

		switch (nxt) {
		case IPPROTO_TCP_:
			tcp6_input(s, idx, ip6, off);
			return;
		case IPPROTO_UDP_:
			udp6_input(s, idx, ip6, off);
			return;
		case IPPROTO_ICMPV6_:
			icmp6_input(s, idx, ip6, off);
			return;
		case IPPROTO_NONE_:
			sl_count(s, SL_C_ip6_rx_nonext);
			goto drop;
		case IPPROTO_HOPOPTS_:
		case IPPROTO_DSTOPTS_:
			/* Hop-by-hop only right after the header (4.3). */
			if (nxt == IPPROTO_HOPOPTS_ && off != sizeof(*ip6))
				goto unknown_nh;
			if (off + 8 > len)
				goto bad_hdr;
			hl = ((unsigned int)pkt[off + 1] + 1) * 8;
			if (off + hl > len)
				goto bad_hdr;
			if (!ip6_opts(s, idx, pkt, off, hl, nxt == IPPROTO_HOPOPTS_))
				goto drop;
			break;
		case IPPROTO_ROUTING_: {
			const struct sl_ip6_rthdr *rh = (const struct sl_ip6_rthdr *)(pkt + off);

			if (off + 8 > len)
				goto bad_hdr;
			hl = ((unsigned int)rh->len + 1) * 8;
			if (off + hl > len)
				goto bad_hdr;
			/* 4.4: with no segments left it is skipped, whatever
			 * its type; with some, a host routes none of them
			 * (type 0 is deprecated, RFC 5095 3): a parameter
			 * problem at the type. */
			if (rh->segleft) {
				sl_count(s, SL_C_ip6_rx_rthdr);
				sl_icmp6_send_error(s, idx, ICMP6_PARAM_PROB_,
						    ICMP6_PARAMPROB_HEADER_, off + 2);
				goto drop;
			}
			break;
		}
		case IPPROTO_FRAGMENT_: {
			const struct sl_ip6_frag *fh = (const struct sl_ip6_frag *)(pkt + off);

			if (off + 8 > len)
				goto bad_hdr;
			/* An atomic fragment (offset 0, no more) is the whole
			 * packet (RFC 6946 4); others are reassembled. */
			if (ntohs(fh->off) & 0xfff9u) {
				sl_count(s, SL_C_ip6_rx_frag);
				ip6_frag_input(s, idx, (struct sl_ip6 *)(uintptr_t)ip6, off);
				return;
			}
			hl = 8;
			break;
		}
		default:
			goto unknown_nh;
		}
		nhoff = off;
		nxt = pkt[off];
		off += hl;
	}
unknown_nh:
	/* 4: a next header not recognized: parameter problem, code 1,
	 * pointing at the field that named it. */
	sl_count(s, SL_C_ip6_rx_unknown_nh);
	sl_icmp6_send_error(s, idx, ICMP6_PARAM_PROB_, ICMP6_PARAMPROB_NEXTHDR_, nhoff);
	goto drop;
bad_hdr:
	sl_count(s, SL_C_ip6_rx_bad_hdr);
drop:
	sl_pkt_free(s, idx);
}
