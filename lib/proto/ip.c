// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv4 (RFC 791, RFC 1122 3.2.1): input checks and demultiplexing, output
 * with routing to the link or to the stack itself.
 *
 * Fragments are dropped and counted (ip_rx_frag): Sluice sets DF on what
 * it sends and its peers on the accelerated path do path-MTU discovery;
 * reassembly is not implemented.  Options are skipped, never acted on.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "proto/proto.h"

bool sl_ip_is_local(const struct sl_stack *s, uint32_t addr)
{
	return (s->lib->ip_addr && addr == s->lib->ip_addr) ||
	       (ntohl(addr) >> 24) == 127;
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

void sl_ip_input(struct sl_stack *s, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_ip *ip = (struct sl_ip *)sl_buf_data(s, idx);
	unsigned int hlen, tot, chain;
	uint32_t src;

	sl_count(s, SL_C_ip_rx);
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
	if (sl_ip_csum(ip) != 0) {
		sl_count(s, SL_C_ip_rx_bad_csum);
		goto drop;
	}
	/* Trim link padding (Ethernet minimum frame size). */
	b->len = (uint16_t)(tot - chain);
	if (ntohs(ip->frag) & (IP_MF_ | IP_OFFMASK_)) {
		sl_count(s, SL_C_ip_rx_frag);
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
		goto drop;
	}

bad_hdr:
	sl_count(s, SL_C_ip_rx_bad_hdr);
drop:
	sl_pkt_free(s, idx);
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

	if (!so || (!so->ip_ttl && !so->ip_tos && !so->pmtudisc))
		return;
	/* The header alone: a chained segment's first part says a length
	 * past its buffer (sl_ip_build()), which sl_buf_data() refuses. */
	b = sl_buf(s, idx);
	if ((uint32_t)b->off + sizeof(*ip) > s->buf_size) {
		sl_corrupt(s, SL_C_corrupt_buf_len, idx);
		return;
	}
	ip = (struct sl_ip *)(sl_buf_base(s, idx) + b->off);
	if (so->ip_ttl)
		ip->ttl = so->ip_ttl;
	ip->tos = so->ip_tos;
	if (so->pmtudisc && !sl_ip_df(so))
		ip->frag &= (uint16_t)~htons(IP_DF_);
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
}

void sl_pkt_hold(struct sl_stack *s, uint32_t *hold, uint32_t idx)
{
	uint32_t n = sl_pkt_copy(s, idx);

	if (n == SLUICE_IDX_NONE) {
		sl_count(s, SL_C_arp_hold_dropped);
		return;
	}
	if (*hold != SLUICE_IDX_NONE) {
		sl_buf_free(s, *hold);
		sl_count(s, SL_C_arp_hold_dropped);
	}
	*hold = n;
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
