// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Internet checksum (RFC 1071), summed 64 bits at a time.  Only the
 * last piece given to sl_csum_add() may have an odd length; a message in
 * pieces of any length (a buffer chain) goes through sl_csum_add_at().
 */
#include <string.h>

#include "core/wire.h"

/* Add with end-around carry, 64 bits at a time (RFC 1071 2(B)). */
static inline uint64_t add64(uint64_t a, uint64_t b)
{
	uint64_t r = a + b;

	return r + (r < b);
}

uint32_t sl_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t a0 = sum, a1 = 0, a2 = 0, a3 = 0;

	/* Four independent chains so the adds overlap. */
	while (len >= 32) {
		uint64_t w[4];

		memcpy(w, p, 32);
		a0 = add64(a0, w[0]);
		a1 = add64(a1, w[1]);
		a2 = add64(a2, w[2]);
		a3 = add64(a3, w[3]);
		p += 32;
		len -= 32;
	}
	a0 = add64(add64(a0, a1), add64(a2, a3));
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		a0 = add64(a0, w);
		p += 8;
		len -= 8;
	}
	if (len) {
		/* The tail, zero-padded in memory order. */
		uint64_t w = 0;

		memcpy(&w, p, len);
		a0 = add64(a0, w);
	}
	/* Fold 64 to 32 bits, keeping the carries. */
	a0 = (a0 & 0xffffffffu) + (a0 >> 32);
	a0 = (a0 & 0xffffffffu) + (a0 >> 32);
	return (uint32_t)a0;
}

uint32_t sl_csum_add_at(uint32_t sum, const void *data, size_t len, uint32_t *odd)
{
	uint32_t part;

	if (!*odd) {
		sum = sl_csum_add(sum, data, len);
	} else {
		/* Starting at an odd byte of the message: its sum byte-swapped. */
		part = sl_csum_add(0, data, len);
		part = (part & 0xffff) + (part >> 16);
		part = (part & 0xffff) + (part >> 16);
		part = ((part & 0xff) << 8) | (part >> 8);
		sum = sl_csum_add(sum, &(uint16_t){ (uint16_t)part }, 2);
	}
	*odd ^= (uint32_t)(len & 1);
	return sum;
}

uint16_t sl_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t sl_csum_pseudo(uint32_t saddr, uint32_t daddr, uint8_t proto, uint16_t len)
{
	uint64_t acc = (uint64_t)(saddr & 0xffff) + (saddr >> 16) +
		       (daddr & 0xffff) + (daddr >> 16) + htons(proto) + htons(len);

	acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
}

uint32_t sl_csum_pseudo6(const uint8_t *saddr, const uint8_t *daddr, uint8_t nxt, uint32_t len)
{
	uint32_t tail[2] = { htonl(len), htonl(nxt) };
	uint32_t sum = sl_csum_add(0, saddr, 16);

	sum = sl_csum_add(sum, daddr, 16);
	return sl_csum_add(sum, tail, sizeof(tail));
}
