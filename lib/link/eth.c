// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ethernet framing and ARP (RFC 826) for links that carry Ethernet frames
 * and have no kernel module to resolve neighbours (TAP).  The neighbour
 * table lives in the region, so every process of a stack shares it.  A
 * packet to an unresolved neighbour is held (one per neighbour, the newest)
 * while requests go out once a second, three times at most; a packet that
 * is dropped for that is counted, never lost silently.
 */
#include <errno.h>
#include <string.h>

#include "link/eth.h"

#define ARP_RETRY_MS	1000
#define ARP_TRIES	3
#define ARP_VALID_MS	(60 * 1000)	/* re-resolve after a minute */

static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static struct sl_neigh *neigh_find(struct sl_stack *s, uint32_t ip)
{
	for (int i = 0; i < SL_NEIGH_MAX; i++)
		if (s->lib->neigh[i].state != SL_NEIGH_FREE && s->lib->neigh[i].ip == ip)
			return &s->lib->neigh[i];
	return NULL;
}

/* A free entry, or the least recently updated one. */
static struct sl_neigh *neigh_new(struct sl_stack *s, uint32_t ip)
{
	struct sl_neigh *n = &s->lib->neigh[0];

	for (int i = 0; i < SL_NEIGH_MAX; i++) {
		struct sl_neigh *c = &s->lib->neigh[i];

		if (c->state == SL_NEIGH_FREE) {
			n = c;
			break;
		}
		if (c->updated_ms < n->updated_ms)
			n = c;
	}
	/* An entry recycled: what waited for it goes, counted. */
	sl_hold_drop(s, &n->hold_idx, SL_C_arp_hold_dropped);
	memset(n, 0, sizeof(*n));
	n->ip = ip;
	n->hold_idx = SLUICE_IDX_NONE;
	return n;
}

/* Prepend an Ethernet header in the headroom of idx, send, restore. */
static int eth_send(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx,
		    const uint8_t *dst, uint16_t type)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_eth *eh;
	int ret;

	if (b->off < sizeof(*eh))
		return -EINVAL;
	b->off -= sizeof(*eh);
	b->len += sizeof(*eh);
	eh = (struct sl_eth *)sl_buf_data(s, idx);
	memcpy(eh->dst, dst, 6);
	memcpy(eh->src, s->lib->mac, 6);
	eh->type = htons(type);
	if (__builtin_expect(s->lib->cap_on != 0, 0))
		sl_cap_packet(s, idx, SL_CAP_OUT | SL_CAP_ETH);
	ret = el->xmit(el->link, sl_buf_data(s, idx), b->len);
	b->off += sizeof(*eh);
	b->len -= sizeof(*eh);
	return ret;
}

static void arp_send(struct sl_stack *s, const struct sl_eth_link *el, uint16_t op,
		     const uint8_t *tha, uint32_t tpa)
{
	uint32_t idx = sl_buf_alloc(s);
	struct sl_arp *a;

	if (idx == SLUICE_IDX_NONE)
		return;
	a = (struct sl_arp *)sl_buf_data(s, idx);
	a->htype = htons(1);
	a->ptype = htons(ETHERTYPE_IP_);
	a->hlen = 6;
	a->plen = 4;
	a->op = htons(op);
	memcpy(a->sha, s->lib->mac, 6);
	a->spa = s->lib->ip_addr;
	memcpy(a->tha, op == 1 ? (const uint8_t *)"\0\0\0\0\0\0" : tha, 6);
	a->tpa = tpa;
	sl_buf(s, idx)->len = sizeof(*a);
	sl_count(s, SL_C_arp_tx);
	eth_send(s, el, idx, op == 1 ? bcast : tha, ETHERTYPE_ARP_);
	sl_buf_free(s, idx);
}

int sl_eth_tx(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx, uint32_t nh)
{
	uint64_t now_ms = sl_now(s) / 1000;
	struct sl_neigh *n;

	if (nh == INADDR_BROADCAST ||
	    (s->lib->ip_mask && s->lib->ip_mask != 0xffffffffu && nh == (s->lib->ip_addr | ~s->lib->ip_mask)))
		return eth_send(s, el, idx, bcast, ETHERTYPE_IP_);
	if (SL_IN_MULTICAST(nh)) {
		/* RFC 1112 6.4: 01-00-5E and the group's low 23 bits; no ARP. */
		uint32_t g = ntohl(nh);
		uint8_t mac[6] = { 0x01, 0x00, 0x5e, (uint8_t)((g >> 16) & 0x7f),
				   (uint8_t)(g >> 8), (uint8_t)g };

		return eth_send(s, el, idx, mac, ETHERTYPE_IP_);
	}
	n = neigh_find(s, nh);
	if (n && n->state == SL_NEIGH_VALID && now_ms - n->updated_ms < ARP_VALID_MS)
		return eth_send(s, el, idx, n->mac, ETHERTYPE_IP_);
	if (!n)
		n = neigh_new(s, nh);
	if (n->state != SL_NEIGH_PENDING) {
		n->state = SL_NEIGH_PENDING;
		n->tries = 0;
	}
	/* A copy waits, behind those before it (the buffer is borrowed). */
	sl_hold_add(s, &n->hold_idx, idx, SL_C_arp_hold_dropped);
	if (n->tries == 0 || now_ms - n->updated_ms >= ARP_RETRY_MS) {
		n->tries++;
		n->updated_ms = now_ms;
		arp_send(s, el, 1, NULL, nh);
	}
	return 0;
}

static void neigh_confirm(struct sl_stack *s, const struct sl_eth_link *el,
			  struct sl_neigh *n, const uint8_t *mac)
{
	memcpy(n->mac, mac, 6);
	n->state = SL_NEIGH_VALID;
	n->updated_ms = sl_now(s) / 1000;
	n->tries = 0;
	/* What waited goes, in the order it was sent (neigh_update()). */
	for (uint32_t h = sl_hold_take(s, &n->hold_idx), steps = 0; sl_buf_next(s, h, &steps);) {
		uint32_t next = sl_hold_next(s, h);

		eth_send(s, el, h, n->mac, ETHERTYPE_IP_);
		sl_buf_free(s, h);
		h = next;
	}
}

static void arp_input(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx)
{
	const struct sl_arp *a = (const struct sl_arp *)sl_buf_data(s, idx);
	struct sl_neigh *n;
	uint8_t sha[6];
	uint32_t spa;
	uint16_t op;

	sl_count(s, SL_C_arp_rx);
	if (sl_buf(s, idx)->len < sizeof(*a) || a->htype != htons(1) ||
	    a->ptype != htons(ETHERTYPE_IP_) || a->hlen != 6 || a->plen != 4 ||
	    (a->sha[0] & 1)) {
		sl_count(s, SL_C_arp_rx_bad);
		goto out;
	}
	op = ntohs(a->op);
	spa = a->spa;
	memcpy(sha, a->sha, 6);
	/* RFC 826 "merge": update an entry we already have. */
	n = spa ? neigh_find(s, spa) : NULL;
	if (n)
		neigh_confirm(s, el, n, sha);
	if (!s->lib->ip_addr || a->tpa != s->lib->ip_addr)
		goto out;
	if (!n && spa)
		neigh_confirm(s, el, neigh_new(s, spa), sha);
	if (op == 1)
		arp_send(s, el, 2, sha, spa);
out:
	sl_buf_free(s, idx);
}

int sl_eth_tx6(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx, const uint8_t *nh)
{
	uint8_t mac[6] = { 0x33, 0x33 };

	/* RFC 2464 7: a group is 33-33 and its last four bytes. */
	if (nh[0] == 0xff)
		memcpy(mac + 2, nh + 12, 4);
	else if (sl_nd_resolve(s, nh, mac, idx))
		return 0;	/* a copy waits for the neighbour's answer */
	return eth_send(s, el, idx, mac, ETHERTYPE_IPV6_);
}

void sl_eth_input(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);
	const struct sl_eth *eh = (const struct sl_eth *)sl_buf_data(s, idx);
	uint16_t type;

	sl_count(s, SL_C_link_rx);
	/* Every frame as it came, also those dropped below (as a packet
	 * socket sees them before the kernel's IP does). */
	if (__builtin_expect(s->lib->cap_on != 0, 0))
		sl_cap_packet(s, idx, SL_CAP_ETH);
	/* IPv6 groups' frames (33-33-...) too: IPv6 input keeps its own. */
	if (b->len < sizeof(*eh) ||
	    (memcmp(eh->dst, s->lib->mac, 6) && memcmp(eh->dst, bcast, 6) &&
	     !(eh->dst[0] == 0x33 && eh->dst[1] == 0x33 && eh->type == htons(ETHERTYPE_IPV6_)))) {
		sl_count(s, SL_C_eth_rx_bad);
		sl_buf_free(s, idx);
		return;
	}
	type = ntohs(eh->type);
	if (eh->dst[0] & 1)
		b->flags |= SL_BUF_L2_BCAST;
	b->off += sizeof(*eh);
	b->len -= sizeof(*eh);
	if (type == ETHERTYPE_IP_) {
		sl_ip_input(s, idx);
	} else if (type == ETHERTYPE_IPV6_) {
		sl_ip6_input(s, idx);
	} else if (type == ETHERTYPE_ARP_) {
		arp_input(s, el, idx);
	} else {
		sl_count(s, SL_C_eth_rx_bad);
		sl_buf_free(s, idx);
	}
}

void sl_eth_timer(struct sl_stack *s, const struct sl_eth_link *el)
{
	uint64_t now_ms = sl_now(s) / 1000;

	for (int i = 0; i < SL_NEIGH_MAX; i++) {
		struct sl_neigh *n = &s->lib->neigh[i];

		if (n->state != SL_NEIGH_PENDING || now_ms - n->updated_ms < ARP_RETRY_MS)
			continue;
		if (n->tries >= ARP_TRIES) {
			/* Unreachable: drop what waited, counted, and forget. */
			sl_hold_drop(s, &n->hold_idx, SL_C_arp_hold_dropped);
			n->state = SL_NEIGH_FREE;
			continue;
		}
		n->tries++;
		n->updated_ms = now_ms;
		arp_send(s, el, 1, NULL, n->ip);
	}
	sl_nd_timer(s);
}
