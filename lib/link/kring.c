// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kring rings (uapi "The kring queue"), user-space side, under the
 * stack lock: the stack's processes are one producer of fill and tx and
 * one consumer of rx, serialised by the lock; the module is the other end
 * of each ring.  The mapping is shared memory any process of the stack
 * (or a confused module) could have written, so every descriptor is
 * checked before it is followed: an rx buffer must be in the pool and
 * must be one we put on the fill ring (SL_BUF_ON_FILL), its length must
 * fit the buffer.
 */
#include <errno.h>
#include <string.h>

#include "link/kring.h"

/* Our own index: only we (under the stack lock) write it. */
static inline uint32_t own_load(const uint32_t *p)
{
	return SL_READ_ONCE(*p);
}

/* The other side's index: acquire orders our reads of the entries it
 * published before moving it. */
static inline uint32_t peer_load(const uint32_t *p)
{
	return sl_load_acquire(p);
}

/* Release: the entries (and buffer data) written before are visible to
 * the module once it sees the index. */
static inline void publish(uint32_t *p, uint32_t v)
{
	sl_store_release(p, v);
}

static bool pow2_ok(uint32_t v)
{
	return v && v <= SLUICE_KRING_MAX_ENTRIES && !(v & (v - 1));
}

/* [off, off + len) inside size and past the header. */
static bool area_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off >= sizeof(struct sluice_kring) && off <= size && len <= size - off &&
	       !(off & 3);
}

int sl_kring_init(struct sl_kring *k, void *map, uint64_t size, const struct sl_stack *s)
{
	struct sluice_kring *h = map;
	uint64_t rx_len, fill_len, tx_len, slots_len;
	uint32_t target;

	memset(k, 0, sizeof(*k));
	if (size < sizeof(*h) || h->magic != SLUICE_KRING_MAGIC || h->size > size)
		return -EPROTO;
	if (!pow2_ok(h->rx_entries) || !pow2_ok(h->tx_entries) ||
	    h->tx_slot_size < SLUICE_KRING_MIN_SLOT || h->tx_slot_size > SLUICE_KRING_MAX_SLOT)
		return -EPROTO;
	rx_len = (uint64_t)h->rx_entries * sizeof(struct sluice_kring_rx);
	fill_len = (uint64_t)h->rx_entries * sizeof(uint32_t);
	tx_len = (uint64_t)h->tx_entries * sizeof(struct sluice_kring_tx);
	slots_len = (uint64_t)h->tx_entries * h->tx_slot_size;
	if (!area_ok(h->rx_off, rx_len, size) || !area_ok(h->fill_off, fill_len, size) ||
	    !area_ok(h->tx_off, tx_len, size) || !area_ok(h->tx_slots_off, slots_len, size))
		return -EPROTO;
	/* The four areas must not overlap each other (they are sorted in
	 * the layout the uapi draws, but only disjointness matters). */
	{
		uint64_t a[4][2] = {
			{ h->rx_off, rx_len }, { h->fill_off, fill_len },
			{ h->tx_off, tx_len }, { h->tx_slots_off, slots_len },
		};

		for (int i = 0; i < 4; i++)
			for (int j = i + 1; j < 4; j++)
				if (a[i][0] < a[j][0] + a[j][1] && a[j][0] < a[i][0] + a[i][1])
					return -EPROTO;
	}
	k->h = h;
	k->rx_mask = h->rx_entries - 1;
	k->tx_mask = h->tx_entries - 1;
	k->slot_size = h->tx_slot_size;
	k->rx = (struct sluice_kring_rx *)((uint8_t *)map + h->rx_off);
	k->fill = (uint32_t *)((uint8_t *)map + h->fill_off);
	k->tx = (struct sluice_kring_tx *)((uint8_t *)map + h->tx_off);
	k->slots = (uint8_t *)map + h->tx_slots_off;
	/* Half the ring, and never more than an eighth of the pool. */
	target = h->rx_entries / 2;
	if (target > s->n_bufs / 8)
		target = s->n_bufs / 8;
	k->fill_target = target ? target : 1;
	return 0;
}

/*
 * Ring indices more than a ring apart.  A producer index the module
 * writes heals with its next write (it keeps its own copy); ours
 * (rx.cons, fill.prod) never would: looked at SL_KRING_BAD_LOOKS times in
 * a row, the stack is corrupt.
 */
static void ring_bad(struct sl_stack *s, uint32_t *looks, uint32_t gap)
{
	if (++*looks >= SL_KRING_BAD_LOOKS)
		sl_corrupt(s, SL_C_corrupt_ring, gap);
}

unsigned int sl_kring_refill(struct sl_stack *s, struct sl_kring *k)
{
	struct sluice_kring *h = k->h;
	uint32_t prod = own_load(&h->fill.prod), level = prod - peer_load(&h->fill.cons);
	unsigned int n = 0;

	if (level > k->rx_mask + 1) {
		/* A consumer index we never gave: the ring is not sane. */
		sl_count(s, SL_C_kring_rx_bad);
		ring_bad(s, &k->bad_fill, level);
		return 0;
	}
	k->bad_fill = 0;
	while (level < k->fill_target) {
		uint32_t idx;

		if (s->lib->buf_free_count <= SL_KRING_FILL_FLOOR) {
			sl_count(s, SL_C_kring_fill_low);
			break;
		}
		idx = sl_buf_alloc(s);
		if (idx == SLUICE_IDX_NONE)
			break;
		sl_buf(s, idx)->flags = SL_BUF_ON_FILL;
		k->fill[prod & k->rx_mask] = idx;
		prod++;
		level++;
		n++;
	}
	if (n)
		publish(&h->fill.prod, prod);
	return n;
}

/* Is rx descriptor d one we may take?  Its buffer goes back to the pool
 * when the buffer was ours but the length is not. */
static bool rx_desc_ok(struct sl_stack *s, const struct sluice_kring_rx *d)
{
	struct sluice_buf *b;

	if (d->buf_idx >= s->n_bufs)
		return false;
	b = sl_buf(s, d->buf_idx);
	/* Not one we gave: someone else's buffer, never to be touched. */
	if (!(b->flags & SL_BUF_ON_FILL))
		return false;
	b->flags = 0;
	if (d->len < 20 || d->len > s->buf_size - SLUICE_KRING_RX_HEADROOM) {
		sl_buf_free(s, d->buf_idx);
		return false;
	}
	return true;
}

int sl_kring_rx(struct sl_stack *s, struct sl_kring *k, int budget)
{
	struct sluice_kring *h = k->h;
	uint32_t cons = own_load(&h->rx.cons), avail = peer_load(&h->rx.prod) - cons;
	int n = 0;

	if (avail > k->rx_mask + 1) {
		sl_count(s, SL_C_kring_rx_bad);
		ring_bad(s, &k->bad_rx, avail);
		return 0;
	}
	k->bad_rx = 0;
	if (avail)
		sl_batch_begin(s);
	while (avail && n < budget) {
		/* One copy: the descriptor cannot change between check and use. */
		struct sluice_kring_rx d = k->rx[cons & k->rx_mask];
		struct sluice_buf *b;

		avail--;
		cons++;
		n++;
		if (!rx_desc_ok(s, &d)) {
			sl_count(s, SL_C_kring_rx_bad);
			continue;
		}
		b = sl_buf(s, d.buf_idx);
		b->next_idx = SLUICE_IDX_NONE;
		b->off = SLUICE_KRING_RX_HEADROOM;
		b->len = d.len;
		b->seq = 0;
		b->aux = 0;
		b->ts_us = 0;
		/* IPv6 comes by its version (a module with IPv6 filters). */
		b->flags = (d.flags & SLUICE_KRING_RX_CSUM_OK) ? SL_BUF_CSUM_OK | SL_BUF_IP_BYVER :
								 SL_BUF_IP_BYVER;
		sl_count(s, SL_C_link_rx);
		sl_ip_input(s, d.buf_idx);
	}
	if (n) {
		publish(&h->rx.cons, cons);
		sl_batch_end(s);
	}
	sl_kring_refill(s, k);
	return n;
}

/* One tx descriptor: flags 0 (IPv4 to nh) or SLUICE_KRING_TX_IPV6 (nh 0,
 * with SLUICE_KRING_TX_ROUTE the kernel's route's next hop).
 * Inlined into each caller with its constant flags. */
static inline int tx_put(struct sl_kring *k, const void *pkt, uint32_t len, uint32_t nh,
			 uint32_t flags)
{
	struct sluice_kring *h = k->h;
	uint32_t prod = own_load(&h->tx.prod), slot;
	struct sluice_kring_tx *d;

	if (len > k->slot_size)
		return -EMSGSIZE;
	/* Full (or a consumer index we cannot believe: the kick resets it). */
	if (prod - peer_load(&h->tx.cons) >= k->tx_mask + 1)
		return -ENOBUFS;
	slot = prod & k->tx_mask;
	memcpy(k->slots + (uint64_t)slot * k->slot_size, pkt, len);
	d = &k->tx[slot];
	d->len = len;
	d->nexthop = nh;
	d->flags = flags;
	d->reserved = 0;
	publish(&h->tx.prod, prod + 1);
	return 0;
}

int sl_kring_tx_put(struct sl_kring *k, const void *pkt, uint32_t len, uint32_t nh)
{
	if (len < 20)
		return -EMSGSIZE;
	return tx_put(k, pkt, len, nh, 0);
}

int sl_kring_tx_put6(struct sl_kring *k, const void *pkt, uint32_t len)
{
	if (len < 40)
		return -EMSGSIZE;
	return tx_put(k, pkt, len, 0, SLUICE_KRING_TX_IPV6);
}

int sl_kring_tx_put6_routed(struct sl_kring *k, const void *pkt, uint32_t len)
{
	if (len < 40)
		return -EMSGSIZE;
	return tx_put(k, pkt, len, 0, SLUICE_KRING_TX_IPV6 | SLUICE_KRING_TX_ROUTE);
}

uint32_t sl_kring_tx_queued(const struct sl_kring *k)
{
	return own_load(&k->h->tx.prod) - peer_load(&k->h->tx.cons);
}

uint32_t sl_kring_held(const struct sl_kring *k)
{
	return own_load(&k->h->fill.prod) - own_load(&k->h->rx.cons);
}
