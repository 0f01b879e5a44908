// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv4 (RFC 791, RFC 1122 3.2.1): input checks and demultiplexing, output
 * with routing to the link or to the stack itself.
 *
 * Path MTU discovery's table (RFC 1191), reassembly of fragments (RFC
 * 791, RFC 815, with RFC 5722's rule on overlaps as Linux applies it to
 * IPv4) and fragmentation of datagrams sent without DF.  Options are
 * skipped, never acted on.  The limits are Linux's (lib/proto/README.md,
 * "Path MTU and fragments").
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "proto/proto.h"

uint32_t sl_ip_src_for(const struct sl_stack *s, uint32_t daddr)
{
	if ((ntohl(daddr) >> 24) == 127)
		return htonl(INADDR_LOOPBACK);
	if (__builtin_expect(sl_v6tok(daddr), 0))
		return daddr == SL_V6TOK_LO ? SL_V6TOK_LO
		       : sl_v6tok_is_ll(s, daddr) ? SL_V6TOK_LL : SL_V6TOK_ME;
	return s->lib->ip_addr;
}

bool sl_ip_is_bcast(const struct sl_stack *s, uint32_t addr)
{
	const struct sl_region *r = s->lib;

	return addr == INADDR_BROADCAST || addr == htonl(0x7fffffffu) ||
	       (r->ip_mask && r->ip_mask != 0xffffffffu && addr == (r->ip_addr | ~r->ip_mask));
}

/* Addressed to us: our address, loopback, limited or subnet broadcast. */
static bool ip_for_us(const struct sl_stack *s, uint32_t daddr)
{
	const struct sl_region *r = s->lib;

	if (sl_ip_is_local(s, daddr) || daddr == INADDR_BROADCAST)
		return true;
	return r->ip_mask && r->ip_mask != 0xffffffffu &&
	       daddr == (r->ip_addr | ~r->ip_mask);
}

static void deliver(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen);
static void frag_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen,
		       uint32_t id, bool v6);

void sl_ip_input(struct sl_stack *s, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_ip *ip = (struct sl_ip *)sl_buf_data(s, idx);
	unsigned int hlen, tot, chain;
	uint32_t src;

	/* IPv6 on the stack's own loopback or from a link that tells IP
	 * versions apart by the version (kring; a link with a link type
	 * hands it over by its type: eth.c; from one of those, version 6
	 * here is a bad IPv4 header).  Tested only off IPv4's path. */
	if (__builtin_expect((ip->ver_ihl & 0xf0) != 0x40, 0) &&
	    (b->flags & (SL_BUF_LOCAL | SL_BUF_IP_BYVER)) && b->len && (ip->ver_ihl >> 4) == 6) {
		sl_ip6_input(s, idx);
		return;
	}
	sl_count(s, SL_C_ip_rx);
	if (__builtin_expect(s->lib->cap_on != 0, 0) && sl_cap_ip(s, b, false))
		sl_cap_packet(s, idx, b->flags & SL_BUF_LOCAL ? SL_CAP_LO : 0);
	if (b->len < sizeof(*ip) || (ip->ver_ihl >> 4) != 4)
		goto bad_hdr;
	hlen = (ip->ver_ihl & 0xf) * 4;
	tot = ntohs(ip->tot_len);
	/* A chained segment's total counts its further buffers' payload
	 * (sl_stack_drain_loopback() left it in seq); it must all be there. */
	chain = sl_buf_chained(b) ? b->seq : 0;
	if (hlen < sizeof(*ip) || hlen > b->len || tot < hlen || tot > b->len + chain ||
	    (chain && tot != b->len + chain))
		goto bad_hdr;
	/* Inside the stack nobody computes it (sl_ip_build()), as Linux's
	 * lo skips checksums (CHECKSUM_UNNECESSARY). */
	if (!(b->flags & SL_BUF_LOCAL) && sl_ip_csum(ip) != 0) {
		sl_count(s, SL_C_ip_rx_bad_csum);
		goto drop;
	}
	/* Trim link padding (Ethernet minimum frame size). */
	b->len = (uint16_t)(tot - chain);
	/* 0/8 is no destination (Linux's ip_route_input_slow(): a martian
	 * destination); inside the stack 0.0.0.1-3 are the handles of ::1
	 * and its IPv6 addresses (SL_V6TOK_*), which ip_for_us() takes:
	 * from a link a SYN to 0.0.0.2 was answered, from 0.0.0.2. */
	if (__builtin_expect(!(ntohl(ip->daddr) >> 24), 0) && !(b->flags & SL_BUF_LOCAL) &&
	    ip->daddr != 0) {
		sl_count(s, SL_C_ip_rx_martian);
		goto drop;
	}
	if (!ip_for_us(s, ip->daddr)) {
		/* A group's datagrams go to UDP, which hands them only to
		 * sockets that joined (udp.c); nothing else takes multicast. */
		if (!SL_IN_MULTICAST(ip->daddr) || ip->proto != IPPROTO_UDP_) {
			sl_count(s, SL_C_ip_rx_not_ours);
			goto drop;
		}
		sl_count(s, SL_C_ip_rx_mcast);
	}
	/* RFC 1122 3.2.1.3: no broadcast, multicast or class E sources. */
	src = ntohl(ip->saddr);
	if (src == 0xffffffffu || (src >> 28) >= 0xe) {
		sl_count(s, SL_C_ip_rx_not_ours);
		goto drop;
	}
	/* RFC 1122 3.2.1.3 (a): "this network" (0/8) only as a host's source
	 * while it learns its address, so only to the limited broadcast (a
	 * DHCP client's); Linux's ip_route_input_slow() takes 0.0.0.0 no
	 * other way. A SYN from 0.0.0.0 was answered. */
	if ((src >> 24) == 0 && ip->daddr != INADDR_BROADCAST && !(b->flags & SL_BUF_LOCAL)) {
		sl_count(s, SL_C_ip_rx_martian);
		goto drop;
	}
	/* From a link, our own address (or 127/8) as the source is a martian
	 * (RFC 1812 5.3.7): only the stack itself sends those, on loopback.
	 * A spoofed one could make a socket talk to itself. */
	if (!(b->flags & SL_BUF_LOCAL) && sl_ip_is_local(s, ip->saddr)) {
		sl_count(s, SL_C_ip_rx_martian);
		goto drop;
	}
	if (hlen > sizeof(*ip))
		sl_count(s, SL_C_ip_rx_options);
	if (chain && ip->proto != IPPROTO_TCP_ && ip->proto != IPPROTO_UDP_)
		goto bad_hdr;
	/* Linux reassembles at local delivery (ip_local_deliver()), after
	 * the checks above. */
	if (ntohs(ip->frag) & (IP_MF_ | IP_OFFMASK_)) {
		if (chain)
			goto bad_hdr;
		sl_count(s, SL_C_ip_rx_frag);
		frag_input(s, idx, ip, hlen, ip->id, false);
		return;
	}
	deliver(s, idx, ip, hlen);
	return;

bad_hdr:
	sl_count(s, SL_C_ip_rx_bad_hdr);
drop:
	sl_pkt_free(s, idx);
}

/* A whole datagram for us, to its protocol. */
static void deliver(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen)
{
	switch (ip->proto) {
	case IPPROTO_TCP_:
		sl_tcp_input(s, idx, ip, hlen, sl_now(s));
		return;
	case IPPROTO_UDP_:
		sl_udp_input(s, idx, ip, hlen);
		return;
	case IPPROTO_ICMP_:
		sl_icmp_input(s, idx, ip, hlen);
		return;
	default:
		sl_count(s, SL_C_ip_rx_proto);
		if (ip->daddr != INADDR_BROADCAST)
			sl_icmp_send_unreach(s, idx, ICMP_UNREACH_PROTO_);
		sl_pkt_free(s, idx);
	}
}

void sl_ip_set_ttl(struct sl_stack *s, uint32_t idx, uint8_t ttl)
{
	struct sl_ip *ip = (struct sl_ip *)sl_buf_data(s, idx);

	ip->ttl = ttl;
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
}

/*
 * Whether so's packets say "don't fragment" (DF), by IP_MTU_DISCOVER as
 * Linux decides it: WANT (the default) and DO, and for datagrams PROBE
 * too (ip_dont_fragment(), __ip_make_skb()); never DONT, INTERFACE or
 * OMIT.  Sluice fragments nothing and learns no path MTU, so DF is all
 * the option changes on the wire.
 */
bool sl_ip_df(const struct sl_sock *so)
{
	int v = so->pmtudisc ? so->pmtudisc - 1 : IP_PMTUDISC_WANT;

	return v == IP_PMTUDISC_WANT || v == IP_PMTUDISC_DO ||
	       (v == IP_PMTUDISC_PROBE && so->type == SL_SOCK_UDP);
}

void sl_ip_sock_hdr(struct sl_stack *s, uint32_t idx, const struct sl_sock *so)
{
	struct sl_ip *ip;

	const struct sluice_buf *b;

	/* An IPv4 socket with nothing set: one test. */
	if (!so || (!(so->ip_ttl | so->ip_tos | so->pmtudisc) && !(so->flags & SL_SF_V6)))
		return;
	/* The header alone: a chained segment's first part says a length
	 * past its buffer (sl_ip_build()), which sl_buf_data() refuses. */
	b = sl_buf(s, idx);
	if ((uint32_t)b->off + sizeof(*ip) > s->buf_size) {
		sl_corrupt(s, SL_C_corrupt_buf_len, idx);
		return;
	}
	ip = (struct sl_ip *)(sl_buf_base(s, idx) + b->off);
	if (sl_v6tok(ip->daddr)) {
		/* IPv6 (a handle): IPV6_TCLASS and IPV6_UNICAST_HOPS, else
		 * the default hop limit (ip6_output() takes np->tclass and
		 * np->hop_limit, else ip6_dst_hoplimit()); the header made
		 * from this one carries them (sl_ip6_output_tok()), or it
		 * stays in the stack (::1), where no IPv4 checksum is read. */
		ip->ttl = so->ip6_hops ? (uint8_t)(so->ip6_hops - 1) : sl_ip6_hlim(s);
		ip->tos = so->ip6_tclass;
		return;
	}
	/* An AF_INET6 socket's IPv4 with nothing set: as an IPv4 one's. */
	if (!(so->ip_ttl | so->ip_tos | so->pmtudisc))
		return;
	if (so->ip_ttl)
		ip->ttl = so->ip_ttl;
	ip->tos = so->ip_tos;
	if (so->pmtudisc && !sl_ip_df(so))
		ip->frag &= (uint16_t)~htons(IP_DF_);
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
}

/*
 * Packets waiting for a neighbour, as Linux's __neigh_event_send(): a
 * copy of each joins the tail of the list at *hold; while the list's
 * bytes and the new one's are more than unres_qlen_bytes the oldest go,
 * counted under c (Linux's unres_discards); the newest always waits.  A
 * packet's size here is the buffer it takes (Linux counts truesize, the
 * memory an skb pins), so the default 212992 bytes holds 104 packets in
 * 2048-byte buffers.  Linux's memory is larger than a stack's pool of
 * buffers: while less than a quarter of the pool is free, no list grows.
 */
void sl_hold_add(struct sl_stack *s, uint32_t *hold, uint32_t idx, enum sl_counter c)
{
	uint32_t limit = s->unres_qlen_bytes ? s->unres_qlen_bytes : SL_UNRES_QLEN_BYTES;
	uint32_t n = sl_pkt_copy(s, idx), i, tail = SLUICE_IDX_NONE, steps = 0;
	uint64_t bytes = 0;

	if (n == SLUICE_IDX_NONE) {
		sl_count(s, c);
		return;
	}
	sl_buf(s, n)->next_idx = SLUICE_IDX_NONE;
	for (i = *hold; sl_buf_next(s, i, &steps); i = sl_buf(s, i)->next_idx) {
		bytes += s->buf_size;
		tail = i;
	}
	if (i != SLUICE_IDX_NONE) {	/* a bad list (marked corrupt) */
		sl_buf_free(s, n);
		return;
	}
	/* The pool is shared with every socket and link: while less than a
	 * quarter of it is free, lists grow no more (each keeps its newest). */
	if (s->lib->buf_free_count < s->n_bufs / 4)
		limit = 0;
	while (*hold != SLUICE_IDX_NONE && bytes + s->buf_size > limit) {
		uint32_t h = *hold;

		*hold = sl_buf(s, h)->next_idx;
		if (tail == h)
			tail = SLUICE_IDX_NONE;
		sl_buf_free(s, h);
		sl_count(s, c);
		bytes -= s->buf_size;
	}
	if (tail == SLUICE_IDX_NONE)
		*hold = n;
	else
		sl_buf(s, tail)->next_idx = n;
}

uint32_t sl_hold_take(struct sl_stack *s, uint32_t *hold)
{
	uint32_t h = *hold;

	(void)s;
	*hold = SLUICE_IDX_NONE;
	return h;
}

uint32_t sl_hold_next(struct sl_stack *s, uint32_t idx)
{
	uint32_t next;

	if (!sl_buf_some(s, idx))
		return SLUICE_IDX_NONE;
	next = sl_buf(s, idx)->next_idx;
	sl_buf(s, idx)->next_idx = SLUICE_IDX_NONE;
	return next;
}

void sl_hold_drop(struct sl_stack *s, uint32_t *hold, enum sl_counter c)
{
	uint32_t i = sl_hold_take(s, hold), steps = 0;

	while (sl_buf_next(s, i, &steps)) {
		uint32_t next = sl_hold_next(s, i);

		sl_buf_free(s, i);
		sl_count(s, c);
		i = next;
	}
}

void sl_pkt_free(struct sl_stack *s, uint32_t idx)
{
	if (sl_buf_some(s, idx) && sl_buf_chained(sl_buf(s, idx)))
		sl_buf_free_chain(s, idx);
	else
		sl_buf_free(s, idx);
}

void sl_ip_build(struct sl_stack *s, uint32_t idx, uint8_t proto, uint32_t saddr,
		 uint32_t daddr, uint16_t payload_len)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_ip *ip;

	b->off = SL_HEADROOM;
	b->len = sizeof(*ip);
	ip = (struct sl_ip *)sl_buf_data(s, idx);
	/* May be more than the buffer: a chained segment's first part. */
	b->len = (uint16_t)(sizeof(*ip) + payload_len);
	ip->ver_ihl = 0x45;
	ip->tos = 0;
	ip->tot_len = htons(b->len);
	ip->id = htons((uint16_t)s->lib->ip_id_next++);
	ip->frag = htons(IP_DF_);
	ip->ttl = IP_DEFTTL_;
	ip->proto = proto;
	ip->csum = 0;
	ip->saddr = saddr;
	ip->daddr = daddr;
	/* A packet that stays in the stack goes without (nothing checks it:
	 * sl_ip_input() on SL_BUF_LOCAL); a capture fills it in (capture.c). */
	if (!sl_ip_is_local(s, daddr))
		ip->csum = sl_ip_csum(ip);
}

uint32_t sl_pkt_copy(struct sl_stack *s, uint32_t idx)
{
	uint32_t n = sl_buf_alloc(s);

	if (n == SLUICE_IDX_NONE)
		return n;
	sl_buf(s, n)->len = sl_buf(s, idx)->len;
	memcpy(sl_buf_data(s, n), sl_buf_data(s, idx), sl_buf(s, idx)->len);
	return n;
}

void sl_ip_loopback(struct sl_stack *s, uint32_t first, uint32_t last)
{
	struct sl_region *r = s->lib;

	if (sl_buf_some(s, r->lo_tail))
		sl_buf(s, r->lo_tail)->next_idx = first;
	else
		r->lo_head = first;
	SL_KILL_POINT("lo_queue");
	r->lo_tail = last;
}

void sl_ip_loopback_one(struct sl_stack *s, uint32_t idx)
{
	sl_buf(s, idx)->next_idx = SLUICE_IDX_NONE;
	sl_buf(s, idx)->flags = SL_BUF_LOCAL;
	sl_ip_loopback(s, idx, idx);
}

int sl_ip_output(struct sl_stack *s, uint32_t idx, bool keep)
{
	struct sl_region *r = s->lib;
	struct sl_ip *ip = (struct sl_ip *)sl_buf_data(s, idx);
	uint32_t daddr = ip->daddr, nh;
	int ret;

	sl_count(s, SL_C_ip_tx);
	if (sl_ip_is_local(s, daddr)) {
		/* Never touches the link: queued, delivered before unlock. */
		uint32_t n = keep ? sl_pkt_copy(s, idx) : idx;

		if (n == SLUICE_IDX_NONE) {
			sl_count(s, SL_C_ip_tx_nobuf);
			return -ENOBUFS;
		}
		sl_ip_loopback_one(s, n);
		return 0;
	}
	/* A socket's IPv6 peer (proto.h, "IPv6 sockets"). */
	if (__builtin_expect(sl_v6tok(daddr), 0))
		return sl_ip6_output_tok(s, idx, keep);
	/* A group is on the link: its address is the next hop, which the
	 * link maps (eth.c; the kernel's neighbour code for kring). */
	if (daddr == INADDR_BROADCAST || SL_IN_MULTICAST(daddr) ||
	    (r->ip_mask && (daddr & r->ip_mask) == (r->ip_addr & r->ip_mask)))
		nh = daddr;
	else
		nh = r->ip_gateway;
	if (!nh || !s->link) {
		sl_count(s, SL_C_ip_tx_noroute);
		ret = -ENETUNREACH;
	} else {
		if (__builtin_expect(r->cap_on != 0, 0) && sl_cap_ip(s, sl_buf(s, idx), true))
			sl_cap_packet(s, idx, SL_CAP_OUT);
		ret = s->link->ops->tx(s->link, s, idx, nh);
		if (ret)
			sl_count(s, SL_C_link_tx_err);
		else
			sl_count(s, SL_C_link_tx);
	}
	if (!keep)
		sl_buf_free(s, idx);
	return ret;
}

/* Find the last buffer of chained segment head on the loopback queue and
 * leave the payload bytes after head in head->seq.  False (the stack
 * marked corrupt) if the chain is not what head says. */
static bool chain_cut(struct sl_stack *s, uint32_t head, uint32_t *last)
{
	struct sluice_buf *h = sl_buf(s, head);
	uint32_t idx = h->next_idx, steps = 0, bytes = 0;

	if (!h->aux || h->aux > SL_CHAIN_MAX)
		goto bad;
	for (unsigned int i = 0; i < h->aux; i++) {
		const struct sluice_buf *b;

		if (!sl_buf_next(s, idx, &steps))
			goto bad;
		b = sl_buf(s, idx);
		if (!b->len || (uint32_t)b->off + b->len > s->buf_size)
			goto bad;
		bytes += b->len;
		*last = idx;
		idx = b->next_idx;
	}
	h->seq = bytes;
	return true;
bad:
	sl_corrupt(s, SL_C_corrupt_chain, head);
	return false;
}

bool sl_stack_drain_loopback(struct sl_stack *s, unsigned int *budget)
{
	struct sl_region *r = s->lib;

	if (r->lo_head >= s->n_bufs) {
		if (r->lo_head != SLUICE_IDX_NONE)
			sl_corrupt(s, SL_C_corrupt_buf_idx, r->lo_head);
		return false;
	}
	sl_batch_begin(s);
	while (r->lo_head < s->n_bufs && *budget) {
		(*budget)--;
		uint32_t idx = r->lo_head, last = idx;
		struct sluice_buf *b = sl_buf(s, idx);

		if (sl_buf_chained(b) && !chain_cut(s, idx, &last)) {
			/* Nothing after a broken chain can be trusted. */
			r->lo_head = r->lo_tail = SLUICE_IDX_NONE;
			break;
		}
		r->lo_head = sl_buf(s, last)->next_idx;
		SL_KILL_POINT("lo_drain");
		sl_buf(s, last)->next_idx = SLUICE_IDX_NONE;
		if (r->lo_head == SLUICE_IDX_NONE)
			r->lo_tail = SLUICE_IDX_NONE;
		sl_count(s, SL_C_loopback);
		sl_ip_input(s, idx);
	}
	sl_batch_end(s);
	return r->lo_head < s->n_bufs;
}

/* ---- Path MTU (RFC 1191) ---------------------------------------------- */

static uint64_t now_ms(struct sl_stack *s)
{
	return sl_now(s) / 1000;
}

/* The entry for daddr, or NULL; one past its time is freed first. */
static struct sl_pmtu *pmtu_find(struct sl_stack *s, uint32_t daddr)
{
	struct sl_region *r = s->lib;

	for (unsigned int i = 0; i < SL_PMTU_N; i++) {
		struct sl_pmtu *p = &r->pmtu[i];

		if (!p->daddr || p->daddr != daddr)
			continue;
		/* Past its time, or not a value sl_pmtu_update() leaves. */
		if (now_ms(s) >= p->expires_ms || p->mtu < SL_PMTU_MIN) {
			p->daddr = 0;
			r->pmtu_gen++;
			if (r->pmtu_n)
				r->pmtu_n--;
			sl_count(s, SL_C_pmtu_expired);
			return NULL;
		}
		return p;
	}
	return NULL;
}

uint32_t sl_pmtu_get(struct sl_stack *s, uint32_t daddr)
{
	uint32_t mtu = sl_mtu(s);
	const struct sl_pmtu *p;

	/* An IPv6 peer: 20 bytes more of header; an entry (a Packet Too
	 * Big, ip6.c) keeps its MTU less 20 too. */
	if (__builtin_expect(sl_v6tok(daddr), 0)) {
		if (sl_ip_is_local(s, daddr))
			return mtu;
		mtu -= 20;
	}
	/* No entry (the usual case): no scan on a datagram's way out. */
	if (!s->lib->pmtu_n || sl_ip_is_local(s, daddr))
		return mtu;
	p = pmtu_find(s, daddr);
	return p && p->mtu < mtu ? p->mtu : mtu;
}

/*
 * An ICMP "fragmentation needed" says daddr's path takes mtu bytes, as
 * Linux's __ip_rt_update_pmtu() takes it: not above what is known (then
 * ignored); below ip_rt_min_pmtu (552) it is 552; the same value again
 * keeps the entry for another ip_rt_mtu_expires.  True if it fell.
 */
bool sl_pmtu_update(struct sl_stack *s, uint32_t daddr, uint32_t mtu)
{
	struct sl_region *r = s->lib;
	uint32_t old = sl_pmtu_get(s, daddr);
	struct sl_pmtu *p, *pick = NULL;

	if (mtu < SL_PMTU_MIN)
		mtu = old < SL_PMTU_MIN ? old : SL_PMTU_MIN;
	if (mtu > old || sl_ip_is_local(s, daddr)) {
		sl_count(s, SL_C_pmtu_ignored);
		return false;
	}
	p = pmtu_find(s, daddr);
	if (!p) {
		/* A free entry, else the one that would go first. */
		for (unsigned int i = 0; i < SL_PMTU_N; i++) {
			struct sl_pmtu *q = &r->pmtu[i];

			if (!q->daddr) {
				pick = q;
				r->pmtu_n++;
				break;
			}
			if (!pick || q->expires_ms < pick->expires_ms)
				pick = q;
		}
		p = pick;
		p->daddr = daddr;
		p->mtu = old;
	}
	p->expires_ms = now_ms(s) + SL_PMTU_EXPIRES_MS;
	if (mtu == p->mtu)
		return false;
	p->mtu = mtu;
	r->pmtu_gen++;
	sl_count(s, SL_C_pmtu_learnt);
	return true;
}

/* ---- Reassembly (RFC 791 3.2, RFC 815) ----------------------------------- */

static uint32_t frag_off(const struct sl_ip *ip)
{
	return (uint32_t)(ntohs(ip->frag) & IP_OFFMASK_) * 8;
}

static void fragq_kill(struct sl_stack *s, struct sl_fragq *q)
{
	struct sl_region *r = s->lib;
	uint32_t idx = q->head, steps = 0;

	while (sl_buf_next(s, idx, &steps)) {
		uint32_t next = sl_buf(s, idx)->next_idx;

		sl_buf_free(s, idx);
		idx = next;
	}
	r->frag_mem -= r->frag_mem < q->bufs * s->buf_size ? r->frag_mem : q->bufs * s->buf_size;
	if (r->frag_queues)
		r->frag_queues--;
	memset(q, 0, sizeof(*q));
	q->head = SLUICE_IDX_NONE;
}

/* Queues older than ipfrag_time go; one that holds its first fragment
 * sends its source an ICMP time exceeded quoting it (RFC 792, Linux's
 * ip_expire()), rate-limited as any ICMP error. */
static void frag_expire(struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	uint64_t now = now_ms(s);

	if (!r->frag_queues)
		return;
	for (unsigned int i = 0; i < SL_FRAGQ_N; i++) {
		struct sl_fragq *q = &r->fragq[i];

		if (q->daddr && now >= q->expires_ms) {
			sl_count(s, SL_C_ip_reasm_timeout);
			/* IPv6's: the first fragment is held IPv4-shaped, so
			 * no ICMPv6 time exceeded quotes it (not as Linux). */
			if ((q->flags & (SL_FRAGQ_FIRST | SL_FRAGQ_V6)) == SL_FRAGQ_FIRST &&
			    sl_buf_some(s, q->head))
				sl_icmp_send_error(s, q->head, ICMP_TIMXCEED_, ICMP_TIMXCEED_REASS_);
			fragq_kill(s, q);
		}
	}
}

void sl_ip_expire(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	frag_expire(s);
	for (unsigned int i = 0; i < SL_PMTU_N && r->pmtu_n; i++)
		if (r->pmtu[i].daddr)
			pmtu_find(s, r->pmtu[i].daddr);
}

/* The datagram of q, whole: one packet, or (UDP) a chain as the stack's
 * own large datagrams are (udp.c); its header the first fragment's. */
static uint32_t frag_join(struct sl_stack *s, struct sl_fragq *q)
{
	uint32_t first = q->head, steps = 0, head, tail, idx, total;
	const struct sl_ip *fip = (const struct sl_ip *)sl_buf_data(s, first);
	unsigned int hlen = sl_buf(s, first)->aux, room, n = 0, at;
	struct sl_ip *ip;
	uint8_t *dst;

	total = hlen + q->len;
	if (total > 65535)
		return SLUICE_IDX_NONE;
	head = sl_buf_alloc(s);
	if (head == SLUICE_IDX_NONE)
		return head;
	sl_buf(s, head)->off = SL_HEADROOM;
	room = s->buf_size - SL_HEADROOM;
	if (total > room && q->proto != IPPROTO_UDP_)
		goto fail;
	sl_buf(s, head)->len = (uint16_t)hlen;
	ip = (struct sl_ip *)sl_buf_data(s, head);
	memcpy(ip, fip, hlen);
	ip->tot_len = htons((uint16_t)total);
	ip->frag = 0;
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
	tail = head;
	dst = (uint8_t *)ip + hlen;
	at = hlen;
	for (idx = first; sl_buf_next(s, idx, &steps); idx = sl_buf(s, idx)->next_idx) {
		const struct sluice_buf *f = sl_buf(s, idx);
		const uint8_t *src = sl_buf_data(s, idx) + f->aux;
		unsigned int left = f->len - f->aux;

		while (left) {
			unsigned int part;

			if (at == room) {
				uint32_t c = n < SL_CHAIN_MAX ? sl_buf_alloc(s) : SLUICE_IDX_NONE;

				if (c == SLUICE_IDX_NONE)
					goto fail_chain;
				n++;
				sl_buf(s, c)->off = 0;
				sl_buf(s, c)->len = 0;
				sl_buf(s, c)->next_idx = SLUICE_IDX_NONE;
				sl_buf(s, tail)->next_idx = c;
				tail = c;
				dst = sl_buf_base(s, c);
				at = 0;
				room = s->buf_size;
			}
			part = room - at < left ? room - at : left;
			memcpy(dst, src, part);
			dst += part;
			src += part;
			at += part;
			left -= part;
			sl_buf(s, tail)->len = (uint16_t)(sl_buf(s, tail)->len + part);
		}
	}
	sl_buf(s, tail)->next_idx = SLUICE_IDX_NONE;
	if (n) {
		sl_buf(s, head)->flags = SL_BUF_LOCAL | SL_BUF_CHAIN;
		sl_buf(s, head)->aux = (uint16_t)n;
		sl_buf(s, head)->seq = total - sl_buf(s, head)->len;
	} else {
		sl_buf(s, head)->flags = 0;
	}
	return head;
fail_chain:
	if (tail != head) {
		sl_buf(s, tail)->next_idx = SLUICE_IDX_NONE;
		idx = sl_buf(s, head)->next_idx;
		steps = 0;
		while (sl_buf_next(s, idx, &steps)) {
			uint32_t next = sl_buf(s, idx)->next_idx;

			sl_buf_free(s, idx);
			idx = next;
		}
	}
fail:
	sl_buf_free(s, head);
	return SLUICE_IDX_NONE;
}

/* A reassembled UDP datagram spanning buffers: its checksum, which UDP
 * checks on a single packet but not on a chain (udp.c).  IPv6's (v6: on
 * handles), a single packet too, UDP or TCP: over IPv6's pseudo-header
 * (RFC 8200 8.1), UDP's never 0. */
static bool udp_chain_csum_ok(struct sl_stack *s, uint32_t head, bool v6)
{
	const struct sl_ip *ip = (const struct sl_ip *)sl_buf_data(s, head);
	unsigned int hlen = (ip->ver_ihl & 0xf) * 4, ulen = ntohs(ip->tot_len) - hlen;
	const struct sl_udp *uh = (const struct sl_udp *)((const uint8_t *)ip + hlen);
	uint32_t sum, idx, steps = 0, odd = 0;
	uint8_t a6[16], b6[16];

	if (ip->proto == IPPROTO_UDP_ && (ulen < sizeof(*uh) || ntohs(uh->len) != ulen))
		return false;
	if (ip->proto == IPPROTO_UDP_ && !uh->csum)
		return !v6;
	if (v6) {
		if (!sl_v6tok_addr(s, ip->saddr, a6) || !sl_v6tok_addr(s, ip->daddr, b6))
			return false;
		sum = sl_csum_pseudo6(a6, b6, ip->proto, ulen);
	} else {
		sum = sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_UDP_, (uint16_t)ulen);
	}
	sum = sl_csum_add_at(sum, uh, sl_buf(s, head)->len - hlen, &odd);
	for (idx = sl_buf(s, head)->next_idx; sl_buf_next(s, idx, &steps);
	     idx = sl_buf(s, idx)->next_idx) {
		const struct sluice_buf *c = sl_buf(s, idx);

		sum = sl_csum_add_at(sum, sl_buf_base(s, idx) + c->off, c->len, &odd);
	}
	return sl_csum_fold(sum) == 0;
}

static struct sl_fragq *fragq_get(struct sl_stack *s, const struct sl_ip *ip, uint32_t id,
				   bool v6)
{
	struct sl_region *r = s->lib;
	struct sl_fragq *free_q = NULL;

	for (unsigned int i = 0; i < SL_FRAGQ_N; i++) {
		struct sl_fragq *q = &r->fragq[i];

		if (!q->daddr) {
			if (!free_q)
				free_q = q;
			continue;
		}
		if (q->saddr == ip->saddr && q->daddr == ip->daddr && q->id == id &&
		    q->proto == ip->proto)
			return q;
	}
	if (!free_q)
		return NULL;
	memset(free_q, 0, sizeof(*free_q));
	free_q->saddr = ip->saddr;
	free_q->daddr = ip->daddr;
	free_q->id = id;
	free_q->proto = ip->proto;
	free_q->flags = v6 ? SL_FRAGQ_V6 : 0;
	free_q->head = SLUICE_IDX_NONE;
	free_q->expires_ms = now_ms(s) + (v6 ? SL_IP6FRAG_TIME_MS : SL_IPFRAG_TIME_MS);
	r->frag_queues++;
	return free_q;
}

/*
 * Fragment idx into its queue, as Linux's ip_frag_queue() and
 * inet_frag_queue_insert(): a fragment wholly inside what is held is a
 * duplicate, dropped alone; any other overlap drops the whole datagram
 * (RFC 5722, ReasmOverlaps); an end past a known last, or a last that
 * contradicts the length, drops it too.  Whole: delivered.
 */
void sl_ip6_frag_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, uint32_t id)
{
	frag_input(s, idx, ip, sizeof(*ip), id, true);
}

static void frag_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen,
		       uint32_t id, bool v6)
{
	struct sl_region *r = s->lib;
	struct sluice_buf *b = sl_buf(s, idx);
	uint32_t off = frag_off(ip), plen = b->len - hlen, end = off + plen;
	bool more = ntohs(ip->frag) & IP_MF_;
	uint32_t prev = SLUICE_IDX_NONE, cur, steps = 0, covered = 0, whole;
	struct sl_fragq *q;

	frag_expire(s);
	if (r->frag_mem + s->buf_size > SL_IPFRAG_HIGH_THRESH ||
	    r->frag_mem / s->buf_size + 1 > s->n_bufs / 4 || !(q = fragq_get(s, ip, id, v6))) {
		sl_count(s, SL_C_ip_reasm_mem);
		goto drop;
	}
	if (end > 65535 - hlen)
		goto bad_q;
	if (!more) {
		/* The last: its end is the length; another last must agree. */
		if (end < q->len || ((q->flags & SL_FRAGQ_LAST) && end != q->len))
			goto bad_q;
		q->flags |= SL_FRAGQ_LAST;
		q->len = end;
	} else {
		/* All but the last carry a multiple of 8 (Linux trims). */
		if (plen & 7) {
			plen &= ~7u;
			end = off + plen;
		}
		if (end > q->len) {
			if (q->flags & SL_FRAGQ_LAST)
				goto bad_q;
			q->len = end;
		}
	}
	if (end == off) {
		sl_count(s, SL_C_ip_reasm_bad);
		goto drop_kept;
	}
	/* Where it goes, and what it meets: the held ones never overlap. */
	for (cur = q->head; sl_buf_next(s, cur, &steps); cur = sl_buf(s, cur)->next_idx) {
		const struct sluice_buf *f = sl_buf(s, cur);
		uint32_t fo = f->seq, fe = fo + (f->len - f->aux);

		if (fe <= off) {
			prev = cur;
			continue;
		}
		if (fo >= end)
			break;
		covered += (fe < end ? fe : end) - (fo > off ? fo : off);
	}
	if (covered == end - off) {
		sl_count(s, SL_C_ip_reasm_dup);
		goto drop_kept;
	}
	if (covered) {
		sl_count(s, SL_C_ip_reasm_overlap);
		goto kill_q;
	}
	b->seq = off;
	b->aux = (uint16_t)hlen;
	b->len = (uint16_t)(hlen + plen);
	b->flags = 0;
	if (prev == SLUICE_IDX_NONE) {
		b->next_idx = q->head;
		q->head = idx;
	} else {
		b->next_idx = sl_buf(s, prev)->next_idx;
		sl_buf(s, prev)->next_idx = idx;
	}
	if (!off)
		q->flags |= SL_FRAGQ_FIRST;	/* its header is the datagram's */
	q->meat += plen;
	q->bufs++;
	r->frag_mem += s->buf_size;
	if (!(q->flags & SL_FRAGQ_LAST) || !(q->flags & SL_FRAGQ_FIRST) || q->meat != q->len)
		return;
	whole = frag_join(s, q);
	if (whole == SLUICE_IDX_NONE) {
		sl_count(s, SL_C_ip_reasm_bad);
		fragq_kill(s, q);
		return;
	}
	fragq_kill(s, q);
	ip = (struct sl_ip *)sl_buf_data(s, whole);
	if (sl_buf_chained(sl_buf(s, whole)) || v6) {
		if (!udp_chain_csum_ok(s, whole, v6)) {
			sl_count(s, ip->proto == IPPROTO_UDP_ ? SL_C_udp_rx_bad : SL_C_tcp6_rx_bad);
			sl_pkt_free(s, whole);
			return;
		}
		/* Whole and checked: into UDP as the stack's own chains go. */
		sl_buf(s, whole)->flags |= SL_BUF_CSUM_OK;
	}
	sl_count(s, SL_C_ip_reasm_ok);
	deliver(s, whole, ip, (ip->ver_ihl & 0xf) * 4);
	return;
bad_q:
	sl_count(s, SL_C_ip_reasm_bad);
kill_q:
	fragq_kill(s, q);
	goto drop;
drop_kept:
	/* A queue this fragment alone made is not kept empty. */
	if (q->head == SLUICE_IDX_NONE)
		fragq_kill(s, q);
drop:
	sl_buf_free(s, idx);
}

/*
 * Datagram idx (built, larger than mtu, DF clear) out in fragments of at
 * most mtu bytes, as Linux's ip_fragment(): each a multiple of 8 payload
 * bytes but the last, the header copied (options too: Sluice sends none).
 * The buffer is consumed.  Used for UDP, whose payload the caller has put
 * past the header in parts (sl_udp_sendto()).
 */
int sl_ip_output_frags(struct sl_stack *s, const struct sl_ip *hdr, const uint8_t *l4,
		       size_t l4len, const uint8_t *data, size_t dlen, uint32_t mtu)
{
	size_t total = l4len + dlen, at = 0, per = (mtu - sizeof(*hdr)) & ~(size_t)7;
	unsigned int nfrag = 0;
	int ret = 0;

	while (at < total) {
		uint32_t idx = sl_buf_alloc(s);
		size_t part = total - at < per ? total - at : per, done = 0;
		struct sl_ip *ip;
		uint8_t *p;

		if (idx == SLUICE_IDX_NONE) {
			sl_count(s, SL_C_ip_tx_nobuf);
			return nfrag ? ret : -ENOBUFS;
		}
		sl_buf(s, idx)->off = SL_HEADROOM;
		sl_buf(s, idx)->len = (uint16_t)(sizeof(*ip) + part);
		ip = (struct sl_ip *)sl_buf_data(s, idx);
		memcpy(ip, hdr, sizeof(*ip));
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + part));
		ip->frag = htons((uint16_t)((at / 8) | (at + part < total ? IP_MF_ : 0)));
		ip->csum = 0;
		ip->csum = sl_ip_csum(ip);
		p = (uint8_t *)(ip + 1);
		/* From the transport header, then the payload. */
		if (at < l4len) {
			size_t h = l4len - at < part ? l4len - at : part;

			memcpy(p, l4 + at, h);
			done = h;
		}
		if (done < part)
			memcpy(p + done, data + (at + done - l4len), part - done);
		at += part;
		nfrag++;
		sl_count(s, SL_C_ip_frag_create);
		ret = sl_ip_output(s, idx, false);
		if (ret)
			return ret;
	}
	sl_count(s, SL_C_ip_frag_ok);
	return 0;
}
