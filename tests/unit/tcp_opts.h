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

#include "api/api.h"

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

/*
 * A test peer's IPv4 and TCP headers for a segment of tl TCP bytes (ol of
 * them options): every field but the TCP checksum, which is left 0 for the
 * caller (who may mean it to be wrong).
 */
static inline void tcp_hdrs_put(struct sl_ip *ip, struct sl_tcph *th, uint32_t saddr,
				uint32_t daddr, uint16_t sport, uint16_t dport, uint32_t seq,
				uint32_t ack, uint8_t flags, uint16_t win, unsigned int ol,
				unsigned int tl)
{
	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tot_len = htons((uint16_t)(20 + tl));
	ip->ttl = 64;
	ip->proto = IPPROTO_TCP_;
	ip->saddr = saddr;
	ip->daddr = daddr;
	ip->csum = sl_ip_csum(ip);
	th->sport = htons(sport);
	th->dport = htons(dport);
	th->seq = htonl(seq);
	th->ack = htonl(ack);
	th->off = (uint8_t)(((20 + ol) / 4) << 4);
	th->flags = flags;
	th->win = htons(win);
	th->csum = 0;
	th->urp = 0;
}

#endif /* SLUICE_TESTS_TCP_OPTS_H */
