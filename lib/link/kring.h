/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The kring rings seen from user space (uapi struct sluice_kring): the
 * header validated once, then fill, rx and tx handled under the stack
 * lock.  Kept apart from the link (link/kring_link.c) so a test can drive the
 * rings laid out in ordinary memory, playing the module's side.
 */
#ifndef SLUICE_KRING_H
#define SLUICE_KRING_H

#include "link/link.h"

struct sl_kring {
	struct sluice_kring *h;
	uint32_t rx_mask, tx_mask;	/* entries - 1 */
	uint32_t slot_size;
	struct sluice_kring_rx *rx;
	uint32_t *fill;
	struct sluice_kring_tx *tx;
	uint8_t *slots;
	uint32_t fill_target;		/* buffers kept on the fill ring */
	/* Looks in a row at impossible indices, rx and fill rings. */
	uint32_t bad_rx, bad_fill;
};

/* Impossible ring indices seen this many times in a row: corrupt. */
#define SL_KRING_BAD_LOOKS	64

/* Pool buffers the fill ring never takes: input must still find one for
 * an ACK that frees send-queue buffers. */
#define SL_KRING_FILL_FLOOR	16

/*
 * Check the header of a kring mapping of size bytes (sizes, offsets and
 * areas inside the mapping) and set up k for stack s.  0 or -EPROTO.
 */
int sl_kring_init(struct sl_kring *k, void *map, uint64_t size, const struct sl_stack *s);
/* Give the module free buffers until fill_target wait on the fill ring
 * (never below SL_KRING_FILL_FLOOR free in the pool).  Returns how many. */
unsigned int sl_kring_refill(struct sl_stack *s, struct sl_kring *k);
/* Take up to budget received packets off rx into sl_ip_input(), then
 * refill.  Returns the descriptors consumed (good or refused). */
int sl_kring_rx(struct sl_stack *s, struct sl_kring *k, int budget);
/* Copy a len-byte IPv4 packet for next hop nh into the next tx slot and
 * publish it.  0, -ENOBUFS when the ring is full, -EMSGSIZE. */
int sl_kring_tx_put(struct sl_kring *k, const void *pkt, uint32_t len, uint32_t nh);
/* The same for a len-byte IPv6 packet, sent to its destination as the
 * on-link next hop (SLUICE_KRING_TX_IPV6: the kernel's Neighbour
 * Discovery resolves it).  -EMSGSIZE below 40 bytes. */
int sl_kring_tx_put6(struct sl_kring *k, const void *pkt, uint32_t len);
/* The same, to the next hop of the kernel's route for its destination
 * out of the device (SLUICE_KRING_TX_ROUTE; SLUICE_FEATURE_ROUTE6). */
int sl_kring_tx_put6_routed(struct sl_kring *k, const void *pkt, uint32_t len);
/* tx entries published that the module has not consumed. */
uint32_t sl_kring_tx_queued(const struct sl_kring *k);
/* Buffers the rings hold: on fill, being received into, or on rx. */
uint32_t sl_kring_held(const struct sl_kring *k);

#endif /* SLUICE_KRING_H */
