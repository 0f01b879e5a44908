/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ethernet framing and ARP shared by Ethernet-style links.
 */
#ifndef SLUICE_ETH_H
#define SLUICE_ETH_H

#include "link/link.h"

struct sl_eth_link {
	struct sl_link *link;
	/* Put one whole frame on the wire. */
	int (*xmit)(struct sl_link *l, const void *frame, size_t len);
};

/* Send IPv4 packet idx (borrowed) to next hop nh, resolving it first. */
int sl_eth_tx(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx, uint32_t nh);
/* Send IPv6 packet idx (borrowed) to on-link nh: a group's address, or
 * a neighbour Neighbour Discovery knows (else dropped, a solicitation
 * sent: proto/ip6.c). */
int sl_eth_tx6(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx, const uint8_t *nh);
/* An Ethernet frame at idx's data; consumes idx. */
void sl_eth_input(struct sl_stack *s, const struct sl_eth_link *el, uint32_t idx);
/* Retry or give up pending resolutions; call about once a second or more. */
void sl_eth_timer(struct sl_stack *s, const struct sl_eth_link *el);

#endif /* SLUICE_ETH_H */
