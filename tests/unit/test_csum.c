// SPDX-License-Identifier: BSD-2-Clause
/*
 * The Internet checksum against a plain RFC 1071 reference (16 bits at a
 * time) for random data of every length, with and without a starting sum,
 * and the RFC 1071 section 3 example.
 */
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"
#include "tap.h"

static uint16_t reference(uint32_t init, const uint8_t *p, size_t n)
{
	uint64_t s = init;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] | p[i + 1] << 8);
	if (n & 1)
		s += p[n - 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

int main(void)
{
	static const uint8_t ex[8] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t buf[3000];
	unsigned int bad = 0, seed = 7;

	/* RFC 1071 3: the sum of these bytes is 0xddf2 (in network order). */
	tap_eq(ntohs((uint16_t)~sl_csum_fold(sl_csum_add(0, ex, 8))), 0xddf2, "RFC 1071 example");
	for (int t = 0; t < 100000; t++) {
		size_t n = (size_t)rand_r(&seed) % sizeof(buf);
		uint32_t init = t & 1 ? (uint32_t)rand_r(&seed) : 0;

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		if (sl_csum_fold(sl_csum_add(init, buf, n)) != reference(init, buf, n))
			bad++;
	}
	tap_eq(bad, 0, "100000 random buffers match the reference");
	/* Verifying a buffer that carries its own checksum gives zero. */
	memset(buf, 0x5a, 64);
	buf[10] = buf[11] = 0;
	{
		uint16_t c = sl_csum_fold(sl_csum_add(0, buf, 64));

		memcpy(buf + 10, &c, 2);
		tap_eq(sl_csum_fold(sl_csum_add(0, buf, 64)), 0, "a checksummed buffer verifies to 0");
	}
	return tap_done();
}
