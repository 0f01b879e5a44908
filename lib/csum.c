// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Internet checksum (RFC 1071), summed 32 bits at a time.
 */
#include <string.h>

#include "wire.h"

uint32_t sl_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t acc = sum;

	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		acc += (w & 0xffffffffu) + (w >> 32);
		p += 8;
		len -= 8;
	}
	while (len >= 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		acc += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		/* Pad the odd byte with zero, in memory order. */
		uint16_t w = 0;

		memcpy(&w, p, 1);
		acc += w;
	}
	acc = (acc & 0xffffffffu) + (acc >> 32);
	acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
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
