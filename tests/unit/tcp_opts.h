/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * TCP options a test peer puts in its segments, encoded the way a peer
 * would send them; shared by the unit-test fixture (tcp_fixture.h) and the
 * fuzz fixture (tests/fuzz/fuzz_stack.h).
 */
#ifndef SLUICE_TESTS_TCP_OPTS_H
#define SLUICE_TESTS_TCP_OPTS_H

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

/*
 * MSS (RFC 9293 3.2), window scale (RFC 7323 2), SACK permitted
 * (RFC 2018 2) and timestamps (RFC 7323 3), each only if asked for, at
 * op; returns the bytes written (a multiple of 4, at most 20).
 */
static inline unsigned int tcp_opts_put(uint8_t *op, int mss, int ws_on, int ws, int sack_ok,
					int ts, uint32_t tsval, uint32_t tsecr)
{
	unsigned int ol = 0;
	uint32_t v;

	if (mss) {
		op[ol++] = 2; op[ol++] = 4;
		op[ol++] = (uint8_t)(mss >> 8); op[ol++] = (uint8_t)mss;
	}
	if (ws_on) {
		op[ol++] = 1; op[ol++] = 3; op[ol++] = 3; op[ol++] = (uint8_t)ws;
	}
	if (sack_ok) {
		op[ol++] = 1; op[ol++] = 1; op[ol++] = 4; op[ol++] = 2;
	}
	if (ts) {
		op[ol++] = 1; op[ol++] = 1; op[ol++] = 8; op[ol++] = 10;
		v = htonl(tsval); memcpy(op + ol, &v, 4); ol += 4;
		v = htonl(tsecr); memcpy(op + ol, &v, 4); ol += 4;
	}
	return ol;
}

#endif /* SLUICE_TESTS_TCP_OPTS_H */
