// SPDX-License-Identifier: BSD-2-Clause
/*
 * ICMP echo (RFC 792, RFC 1122 3.2.2.6): requests to the stack's address
 * are answered with the same identifier, sequence and data; requests to a
 * broadcast address are not.
 */
#include "stack_fixture.h"

int main(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("icmp", "10.4.0.1", &cap);
	uint32_t free0 = s->lib->buf_free_count;
	uint8_t pkt[256], m[64];
	struct sl_icmp *ic = (struct sl_icmp *)m;
	const struct sl_ip *rip = (const struct sl_ip *)cap.frame[0];
	const struct sl_icmp *ric = (const struct sl_icmp *)(cap.frame[0] + 20);
	size_t len;

	memset(m, 0, sizeof(m));
	ic->type = ICMP_ECHO_;
	ic->id = htons(0x4242);
	ic->seq = htons(7);
	memcpy(m + 8, "sluice-echo-data", 16);
	ic->csum = sl_csum_fold(sl_csum_add(0, m, 24));
	len = fx_ip(pkt, "10.4.0.9", "10.4.0.1", IPPROTO_ICMP_, m, 24);
	fx_input(s, pkt, len);

	tap_eq(cap.n, 1, "one reply");
	tap_eq(cap.len[0], 44, "reply is as long as the request");
	tap_eq(rip->saddr, ((const struct sl_ip *)pkt)->daddr, "from the stack's address");
	tap_eq(rip->daddr, ((const struct sl_ip *)pkt)->saddr, "to the requester");
	tap_eq(cap.nh[0], rip->daddr, "next hop is the requester (same subnet)");
	tap_eq(sl_ip_csum(rip), 0, "IP header checksum valid");
	tap_eq(ric->type, ICMP_ECHOREPLY_, "type echo reply");
	tap_eq(ntohs(ric->id), 0x4242, "same identifier");
	tap_eq(ntohs(ric->seq), 7, "same sequence");
	tap_ok(!memcmp(cap.frame[0] + 28, "sluice-echo-data", 16), "same data");
	tap_eq(sl_csum_fold(sl_csum_add(0, ric, 24)), 0, "ICMP checksum valid");
	tap_eq(fx_counter(s, "icmp_echo_replied"), 1, "counted");

	/* A link may leave the packet short of the headroom (IPoIB: its
	 * 4-byte header where Ethernet's 14 would be).  The reply was built
	 * with its header at the headroom, over the request's first bytes
	 * (fuzz_packet, regress/fuzz_packet/icmp-echo-away-from-headroom). */
	cap.n = 0;
	len = fx_ip(pkt, "10.4.0.9", "10.4.0.1", IPPROTO_ICMP_, m, 24);
	sl_lock(s);
	{
		uint32_t idx = sl_buf_alloc(s);

		sl_buf(s, idx)->off = SL_HEADROOM - 10;
		memcpy(sl_buf_data(s, idx), pkt, len);
		sl_buf(s, idx)->len = (uint16_t)len;
		sl_ip_input(s, idx);
	}
	sl_unlock(s);
	tap_eq(cap.n, 1, "off the headroom: one reply");
	tap_eq(ntohs(ric->id), 0x4242, "... with the same identifier");
	tap_ok(!memcmp(cap.frame[0] + 28, "sluice-echo-data", 16), "... and data");
	tap_eq(sl_csum_fold(sl_csum_add(0, ric, 24)), 0, "... and a valid ICMP checksum");

	cap.n = 0;
	len = fx_ip(pkt, "10.4.0.9", "255.255.255.255", IPPROTO_ICMP_, m, 24);
	fx_input(s, pkt, len);
	tap_eq(cap.n, 0, "broadcast echo is not answered");
	tap_eq(fx_counter(s, "icmp_rx_ignored"), 1, "counted: icmp_rx_ignored");
	ic->type = 13;	/* a timestamp request: not a type the stack answers */
	ic->csum = 0;
	ic->csum = sl_csum_fold(sl_csum_add(0, m, 24));
	len = fx_ip(pkt, "10.4.0.9", "10.4.0.1", IPPROTO_ICMP_, m, 24);
	fx_input(s, pkt, len);
	tap_ok(cap.n == 0 && fx_counter(s, "icmp_rx_ignored") == 2 &&
	       fx_counter(s, "icmp_rx_bad") == 0, "a timestamp request: unanswered, counted");
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");
	fx_destroy(s);
	return tap_done();
}
