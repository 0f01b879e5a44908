// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kring rings from user space (lib/link/kring.c), with the module's side
 * played here on a ring header laid out in ordinary memory: the header is
 * checked before use, the fill ring is kept stocked within its share of
 * the pool, rx descriptors are checked before they are followed (buffer
 * index, ownership, length), a checksum the link vouches for is not
 * checked again, tx slots carry packet and next hop and the ring stops
 * when full; IPv6 goes both ways (a received packet of version 6 to
 * IPv6's input, an IPv6 tx slot flagged SLUICE_KRING_TX_IPV6 with no next
 * hop); and sl_unlock() flushes a link's pending tx once, only when
 * something is pending.
 */
#include <errno.h>
#include <stdlib.h>

#include "link/kring.h"
#include "stack_fixture.h"

#define RX_ENTRIES	64
#define TX_ENTRIES	8
#define SLOT		2048
#define ALIGN64(x)	(((x) + 63) & ~(uint64_t)63)

struct fake {
	void *map;
	uint64_t size;
	struct sluice_kring *h;
	struct sl_kring k;
};

/* A header as the module would lay it out: rx, fill, tx, then slots. */
static void fake_layout(struct fake *f)
{
	struct sluice_kring *h;
	uint64_t off = ALIGN64(sizeof(*h));

	f->size = 1 << 16;
	f->map = aligned_alloc(4096, f->size);
	memset(f->map, 0, f->size);
	h = f->h = f->map;
	h->magic = SLUICE_KRING_MAGIC;
	h->rx_entries = RX_ENTRIES;
	h->tx_entries = TX_ENTRIES;
	h->tx_slot_size = SLOT;
	h->rx_off = off;
	off = ALIGN64(off + RX_ENTRIES * sizeof(struct sluice_kring_rx));
	h->fill_off = off;
	off = ALIGN64(off + RX_ENTRIES * sizeof(uint32_t));
	h->tx_off = off;
	off = ALIGN64(off + TX_ENTRIES * sizeof(struct sluice_kring_tx));
	h->tx_slots_off = (off + 4095) & ~(uint64_t)4095;
	h->size = h->tx_slots_off + (uint64_t)TX_ENTRIES * SLOT;
	h->ifindex = 7;
}

static void test_header_checks(struct sl_stack *s)
{
	struct fake f;
	struct sl_kring k;

	fake_layout(&f);
	tap_eq(sl_kring_init(&k, f.map, f.size, s), 0, "a well-formed header is taken");
	tap_eq(k.rx_mask, RX_ENTRIES - 1, "rx mask from rx_entries");
	tap_eq(k.fill_target, 32, "fill keeps min(rx_entries / 2, n_bufs / 8) buffers");

	f.h->magic = 0x1234;
	tap_eq(sl_kring_init(&k, f.map, f.size, s), -EPROTO, "bad magic: -EPROTO");
	f.h->magic = SLUICE_KRING_MAGIC;
	f.h->rx_entries = 48;
	tap_eq(sl_kring_init(&k, f.map, f.size, s), -EPROTO, "entries not a power of two");
	f.h->rx_entries = RX_ENTRIES;
	f.h->tx_slots_off = f.size - SLOT;
	tap_eq(sl_kring_init(&k, f.map, f.size, s), -EPROTO, "tx slots past the mapping");
	f.h->tx_slots_off = 4096;
	f.h->fill_off = f.h->rx_off + 8;
	tap_eq(sl_kring_init(&k, f.map, f.size, s), -EPROTO, "fill overlapping rx");
	free(f.map);
	fake_layout(&f);
	f.h->rx_off = 8;
	tap_eq(sl_kring_init(&k, f.map, f.size, s), -EPROTO, "rx inside the header");
	free(f.map);
	fake_layout(&f);
	tap_eq(sl_kring_init(&k, f.map, f.h->size - 1, s), -EPROTO,
	       "a header claiming more than is mapped");
	f.h->tx_slot_size = 100;
	tap_eq(sl_kring_init(&k, f.map, f.size, s), -EPROTO, "tx slot below the minimum");
	free(f.map);
}

/* Module side: take the next fill entry (advance cons). */
static uint32_t mod_take_fill(struct fake *f)
{
	uint32_t c = f->h->fill.cons;
	uint32_t idx = f->k.fill[c & (RX_ENTRIES - 1)];

	f->h->fill.cons = c + 1;
	return idx;
}

/* Module side: write packet pkt into buffer idx and produce a descriptor. */
static void mod_rx(struct sl_stack *s, struct fake *f, uint32_t idx, const void *pkt,
		   uint16_t len, uint16_t flags)
{
	uint32_t p = f->h->rx.prod;
	struct sluice_kring_rx *d = &f->k.rx[p & (RX_ENTRIES - 1)];

	if (idx < s->r->n_bufs && pkt)
		memcpy(sl_buf_base(s, idx) + SLUICE_KRING_RX_HEADROOM, pkt, len);
	d->buf_idx = idx;
	d->len = len;
	d->flags = flags;
	f->h->rx.prod = p + 1;
}

static size_t udp_pkt(uint8_t *out, uint16_t dport, const char *msg, bool good_csum)
{
	uint8_t u[256];
	struct sl_udp *uh = (struct sl_udp *)u;
	size_t n = strlen(msg);
	struct sl_ip *ip;
	size_t len;

	uh->sport = htons(4000);
	uh->dport = htons(dport);
	uh->len = htons(sizeof(*uh) + n);
	uh->csum = 0;
	memcpy(uh + 1, msg, n);
	len = fx_ip(out, "10.9.0.2", "10.9.0.1", IPPROTO_UDP_, u, sizeof(*uh) + n);
	ip = (struct sl_ip *)out;
	uh = (struct sl_udp *)(out + sizeof(*ip));
	uh->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_UDP_,
							   sizeof(*uh) + n), uh, sizeof(*uh) + n));
	if (!uh->csum)
		uh->csum = 0xffff;
	if (!good_csum)
		uh->csum ^= 0x5a5a;	/* what an offloading sender leaves: not final */
	return len;
}

static long recv_udp(struct sl_stack *s, int sd, char *buf, size_t len)
{
	long n = sluice_recv((struct sluice_stack *)s, sd, buf, len - 1, MSG_DONTWAIT);

	buf[n > 0 ? n : 0] = 0;
	return n;
}

static void test_fill_rx(struct sl_stack *s)
{
	struct fake f;
	struct sockaddr_in a = fx_addr("10.9.0.1", 5000);
	uint32_t free0, idx, taken[4], seen = 0;
	uint8_t pkt[512];
	char buf[128];
	size_t len;
	int sd;
	bool distinct = true, flagged = true;

	fake_layout(&f);
	sl_kring_init(&f.k, f.map, f.size, s);
	sd = sluice_socket((struct sluice_stack *)s, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_bind((struct sluice_stack *)s, sd, &a), 0, "a UDP socket on port 5000");

	free0 = s->lib->buf_free_count;
	sl_lock(s);
	tap_eq(sl_kring_refill(s, &f.k), 32, "the first refill stocks the fill ring to its target");
	tap_eq(sl_kring_refill(s, &f.k), 0, "a stocked ring takes no more");
	sl_unlock(s);
	tap_eq(f.h->fill.prod, 32, "fill prod published");
	tap_eq(free0 - s->lib->buf_free_count, 32, "the pool gave exactly those buffers");
	tap_eq(sl_kring_held(&f.k), 32, "the rings hold 32 buffers");
	for (uint32_t i = 0; i < 32; i++) {
		idx = f.k.fill[i];
		if (idx >= s->r->n_bufs || !(sl_buf(s, idx)->flags & SL_BUF_ON_FILL))
			flagged = false;
		for (uint32_t j = 0; j < i; j++)
			distinct &= f.k.fill[j] != idx;
	}
	tap_ok(flagged, "every fill entry is a pool buffer marked as given to the module");
	tap_ok(distinct, "no buffer is on the fill ring twice");

	/* A good datagram, checksum verified here. */
	taken[0] = mod_take_fill(&f);
	len = udp_pkt(pkt, 5000, "first", true);
	mod_rx(s, &f, taken[0], pkt, (uint16_t)len, 0);
	/* A datagram whose checksum the sender left to offload, vouched for. */
	taken[1] = mod_take_fill(&f);
	len = udp_pkt(pkt, 5000, "second", false);
	mod_rx(s, &f, taken[1], pkt, (uint16_t)len, SLUICE_KRING_RX_CSUM_OK);
	/* The same, not vouched for: the stack checks and drops it. */
	taken[2] = mod_take_fill(&f);
	mod_rx(s, &f, taken[2], pkt, (uint16_t)len, 0);
	sl_lock(s);
	tap_eq(sl_kring_rx(s, &f.k, 64), 3, "three descriptors consumed");
	sl_unlock(s);
	tap_eq(f.h->rx.cons, 3, "rx cons published");
	tap_eq(f.h->fill.prod - f.h->fill.cons, 32, "rx refilled the fill ring to its target");
	tap_eq(recv_udp(s, sd, buf, sizeof(buf)), 5, "the first datagram arrived");
	tap_ok(!strcmp(buf, "first"), "with its payload, read at the rx headroom");
	tap_eq(recv_udp(s, sd, buf, sizeof(buf)), 6, "the CSUM_OK datagram arrived unchecked");
	tap_eq(recv_udp(s, sd, buf, sizeof(buf)), -EAGAIN, "the unvouched bad checksum did not");
	tap_eq(fx_counter(s, "udp_rx_bad"), 1, "and was counted as bad");
	tap_eq(fx_counter(s, "link_rx"), 3, "link_rx counts every packet fed to IP");

	/* Hostile descriptors: none may be followed. */
	free0 = s->lib->buf_free_count;
	mod_rx(s, &f, s->r->n_bufs + 5, NULL, 60, 0);		/* outside the pool */
	sl_lock(s);
	idx = sl_buf_alloc(s);					/* someone else's */
	sl_buf(s, idx)->flags = 0x1;
	sl_buf(s, idx)->len = 77;
	sl_unlock(s);
	mod_rx(s, &f, idx, pkt, (uint16_t)len, 0);
	taken[3] = mod_take_fill(&f);
	mod_rx(s, &f, taken[3], NULL, (uint16_t)(s->r->buf_size - 10), 0);	/* too long */
	sl_lock(s);
	seen = (uint32_t)sl_kring_rx(s, &f.k, 64);
	sl_unlock(s);
	tap_eq(seen, 3, "three hostile descriptors consumed");
	tap_eq(fx_counter(s, "kring_rx_bad"), 3, "each counted in kring_rx_bad");
	tap_ok(sl_buf(s, idx)->flags == 0x1 && sl_buf(s, idx)->len == 77,
	       "a buffer never given to the module is left alone");
	/* The pool is LIFO: the refill after the batch hands it out again. */
	tap_eq(f.k.fill[(f.h->fill.prod - 1) & (RX_ENTRIES - 1)], taken[3],
	       "the too-long packet's buffer went back to the pool (and on to fill)");
	/* Pool: -1 (the foreign buffer we allocated), +1 (too long, freed),
	 * -1 (its replacement on the fill ring). */
	tap_eq((int)(free0 - s->lib->buf_free_count), 1, "no buffer leaked or freed twice");
	sl_lock(s);
	sl_buf_free(s, idx);
	sl_unlock(s);

	/* A producer index impossibly far ahead: nothing is followed. */
	f.h->rx.prod = f.h->rx.cons + RX_ENTRIES + 1;
	sl_lock(s);
	tap_eq(sl_kring_rx(s, &f.k, 64), 0, "rx prod more than a ring ahead: nothing consumed");
	sl_unlock(s);
	tap_eq(fx_counter(s, "kring_rx_bad"), 4, "and counted");
	f.h->rx.prod = f.h->rx.cons;

	/* Leak check: the module holds none in flight here, so every buffer
	 * is in the pool or on the fill ring. */
	tap_eq(s->lib->buf_free_count + (f.h->fill.prod - f.h->fill.cons), s->r->n_bufs,
	       "every buffer is in the pool or on the fill ring");
	sluice_close((struct sluice_stack *)s, sd);
	free(f.map);
}

static void test_fill_floor(struct sl_stack *s)
{
	struct fake f;
	uint32_t hog[512], n = 0;

	fake_layout(&f);
	sl_kring_init(&f.k, f.map, f.size, s);
	sl_lock(s);
	while (s->lib->buf_free_count > SL_KRING_FILL_FLOOR + 3 && n < 512)
		hog[n++] = sl_buf_alloc(s);
	tap_eq(sl_kring_refill(s, &f.k), 3, "a low pool gives the fill ring only what is above the floor");
	tap_eq(s->lib->buf_free_count, SL_KRING_FILL_FLOOR, "the floor stays in the pool");
	tap_ok(fx_counter(s, "kring_fill_low") >= 1, "the shortfall is counted");
	while (n)
		sl_buf_free(s, hog[--n]);
	for (uint32_t i = 0; i < 3; i++)
		sl_buf_free(s, f.k.fill[i]);
	sl_unlock(s);
	free(f.map);
}

static void test_tx(struct sl_stack *s)
{
	struct fake f;
	uint8_t pkt[SLOT + 8];
	uint32_t nh = htonl(0x0a090002);
	int ret = 0, n = 0;

	fake_layout(&f);
	sl_kring_init(&f.k, f.map, f.size, s);
	for (int i = 0; i < (int)sizeof(pkt); i++)
		pkt[i] = (uint8_t)(i * 13);
	while (n < 100 && !(ret = sl_kring_tx_put(&f.k, pkt, 100 + n, nh)))
		n++;
	tap_eq(n, TX_ENTRIES, "tx takes exactly tx_entries packets");
	tap_eq(ret, -ENOBUFS, "then reports the ring full");
	tap_eq(sl_kring_tx_queued(&f.k), TX_ENTRIES, "all of them queued for the module");
	tap_ok(f.k.tx[3].len == 103 && f.k.tx[3].nexthop == nh && !f.k.tx[3].flags &&
	       !memcmp(f.k.slots + 3 * SLOT, pkt, 103), "descriptor 3: length, next hop, slot data");
	f.h->tx.cons += 2;	/* the module sent two */
	tap_eq(sl_kring_tx_put(&f.k, pkt, 60, nh), 0, "room again once the module consumes");
	tap_eq(f.k.tx[TX_ENTRIES & (TX_ENTRIES - 1)].len, 60, "the ring wraps to slot 0");
	tap_eq(sl_kring_tx_put(&f.k, pkt, SLOT + 1, nh), -EMSGSIZE, "a packet larger than a slot");
	tap_eq(sl_kring_tx_put(&f.k, pkt, 10, nh), -EMSGSIZE, "shorter than an IPv4 header");
	free(f.map);
}

/*
 * A descriptor of version 6 goes to IPv6's input, not IPv4's bad header
 * count: an ICMPv6 echo request to the stack's address is answered (the
 * fixture has no link to send the reply: ip6_tx_noroute).  IPv6 tx slots
 * say IPv6 and carry no next hop.
 */
static void test_ipv6(struct sl_stack *s)
{
	static const uint8_t me[16] = { 0xfd, 0x09, [15] = 1 };
	static const uint8_t peer[16] = { 0xfd, 0x09, [15] = 2 };
	uint8_t pkt[128] = { 0 };
	struct sl_ip6 *h = (struct sl_ip6 *)pkt;
	struct sl_icmp6 *ic = (struct sl_icmp6 *)(pkt + sizeof(*h));
	uint64_t bad4 = fx_counter(s, "ip_rx_bad_hdr");
	struct fake f;

	memcpy(s->lib->ip6_addr, me, 16);
	s->lib->ip6_plen = 64;
	h->vtcfl = htonl(6u << 28);
	h->plen = htons(24);
	h->nxt = IPPROTO_ICMPV6_;
	h->hlim = 64;
	memcpy(h->saddr, peer, 16);
	memcpy(h->daddr, me, 16);
	ic->type = ICMP6_ECHO_REQUEST_;
	ic->data = htonl(0x42420007);
	memcpy(ic + 1, "sluice-kring-ip6", 16);
	ic->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(h->saddr, h->daddr, IPPROTO_ICMPV6_, 24),
					    ic, 24));
	fake_layout(&f);
	sl_kring_init(&f.k, f.map, f.size, s);
	sl_lock(s);
	sl_kring_refill(s, &f.k);
	sl_unlock(s);
	mod_rx(s, &f, mod_take_fill(&f), pkt, 64, 0);
	sl_lock(s);
	tap_eq(sl_kring_rx(s, &f.k, 64), 1, "an IPv6 descriptor consumed");
	sl_unlock(s);
	tap_eq(fx_counter(s, "ip6_rx"), 1, "to IPv6's input");
	tap_eq(fx_counter(s, "ip_rx_bad_hdr"), bad4, "not IPv4's bad header");
	tap_eq(fx_counter(s, "icmp6_echo_replied"), 1, "the echo request answered");
	tap_eq(fx_counter(s, "ip6_tx_noroute"), 1, "(the fixture has no link for the reply)");

	tap_eq(sl_kring_tx_put6(&f.k, pkt, 64), 0, "an IPv6 packet on the tx ring");
	tap_ok(f.k.tx[0].len == 64 && f.k.tx[0].flags == SLUICE_KRING_TX_IPV6 &&
	       !f.k.tx[0].nexthop && !memcmp(f.k.slots, pkt, 64),
	       "its descriptor: length, SLUICE_KRING_TX_IPV6, no next hop, the slot's data");
	tap_eq(sl_kring_tx_put6(&f.k, pkt, 39), -EMSGSIZE, "shorter than an IPv6 header");
	tap_eq(sl_kring_tx_put6(&f.k, pkt, SLOT + 1), -EMSGSIZE, "larger than a slot");
	memset(s->lib->ip6_addr, 0, 16);
	s->lib->ip6_plen = 0;
	sl_lock(s);
	while (f.h->fill.cons != f.h->fill.prod)
		sl_buf_free(s, mod_take_fill(&f));
	sl_unlock(s);
	free(f.map);
}

/* A link that counts flushes. */
struct flink {
	struct sl_link link;
	int flushes;
};

static void fl_flush(struct sl_link *l, struct sl_stack *s)
{
	(void)s;
	((struct flink *)l)->flushes++;
	l->tx_pending = false;
}

static const struct sl_link_ops fl_ops = { .name = "flush", .flush = fl_flush };

static void test_unlock_flushes(struct sl_stack *s)
{
	struct flink fl = { .link = { .ops = &fl_ops, .mtu = 1500 } };

	s->link = &fl.link;
	sl_lock(s);
	sl_unlock(s);
	tap_eq(fl.flushes, 0, "nothing pending: unlock does not flush");
	sl_lock(s);
	fl.link.tx_pending = true;
	sl_unlock(s);
	tap_eq(fl.flushes, 1, "pending tx: unlock flushes once");
	tap_ok(!s->locked, "and releases the lock");
	s->link = NULL;
}

int main(void)
{
	struct sl_stack *s = fx_stack("kring", "10.9.0.1", NULL);

	test_header_checks(s);
	test_fill_rx(s);
	test_fill_floor(s);
	test_tx(s);
	test_ipv6(s);
	test_unlock_flushes(s);
	fx_destroy(s);
	return tap_done();
}
