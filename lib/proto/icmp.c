// SPDX-License-Identifier: BSD-2-Clause
/*
 * ICMP (RFC 792, RFC 1122 3.2.2): echo replies, destination-unreachable
 * handling for TCP and UDP (fragmentation needed: path MTU, RFC 1191),
 * and sending port/protocol unreachable and reassembly time exceeded,
 * rate-limited as Linux limits its ICMP errors.
 */
#include <errno.h>
#include <string.h>

#include "proto/proto.h"

/*
 * What an unreachable code means to a socket (RFC 1122 4.2.3.9): the
 * errno, and whether it is hard, as Linux's icmp_err_convert[] has them.
 * A UDP socket without IP_RECVERR hears only of hard errors, and only
 * when connected (__udp4_lib_err()).
 */
static const struct {
	uint8_t err, hard;
} unreach[16] = {
	{ ENETUNREACH, 0 },	/* net */
	{ EHOSTUNREACH, 0 },	/* host */
	{ ENOPROTOOPT, 1 },	/* protocol */
	{ ECONNREFUSED, 1 },	/* port */
	{ EMSGSIZE, 0 },	/* fragmentation needed (below) */
	{ EOPNOTSUPP, 0 },	/* source route failed */
	{ ENETUNREACH, 1 },	/* net unknown */
	{ EHOSTDOWN, 1 },	/* host unknown */
	{ ENONET, 1 },		/* host isolated */
	{ ENETUNREACH, 1 },	/* net prohibited */
	{ EHOSTUNREACH, 1 },	/* host prohibited */
	{ ENETUNREACH, 0 },	/* net for TOS */
	{ EHOSTUNREACH, 0 },	/* host for TOS */
	{ EHOSTUNREACH, 1 },	/* administratively filtered */
	{ EHOSTUNREACH, 1 },	/* precedence violation */
	{ EHOSTUNREACH, 1 },	/* precedence cutoff */
};

#define ICMP_PARAMPROB_		12

void sl_icmp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_icmp *ic = (struct sl_icmp *)((uint8_t *)ip + hlen);
	/* Read once: sl_ip_input() checked its own read against hlen; one
	 * below it now would wrap len to ~4 GiB for the checksum and move. */
	unsigned int blen = SL_READ_ONCE(b->len), len = blen - hlen;
	uint32_t tmp;

	sl_count(s, SL_C_icmp_rx);
	if (blen < hlen + sizeof(*ic) || sl_csum_fold(sl_csum_add(0, ic, len)) != 0) {
		sl_count(s, SL_C_icmp_rx_bad);
		goto drop;
	}
	switch (ic->type) {
	case ICMP_ECHO_:
		/* RFC 1122 3.2.2.6: not for broadcast requests. */
		if (ip->daddr == INADDR_BROADCAST || !sl_ip_is_local(s, ip->daddr))
			goto ignored;
		/* Answer in place: swap addresses, drop options, new checksums.
		 * sl_ip_build() puts the header at the headroom; the message
		 * moves to follow it (a link may have left the packet
		 * elsewhere, and options shift it). */
		tmp = ip->saddr;
		{
			uint8_t *at = sl_buf_data(s, idx) - b->off + SL_HEADROOM + sizeof(*ip);

			if (at != (uint8_t *)ic)
				memmove(at, ic, len);
			ic = (struct sl_icmp *)at;
		}
		ic->type = ICMP_ECHOREPLY_;
		ic->csum = 0;
		ic->csum = sl_csum_fold(sl_csum_add(0, ic, len));
		sl_ip_build(s, idx, IPPROTO_ICMP_, ip->daddr, tmp, len);
		sl_count(s, SL_C_icmp_echo_replied);
		sl_ip_output(s, idx, false);
		return;
	case ICMP_UNREACH_:
	case ICMP_TIMXCEED_:
	case ICMP_PARAMPROB_: {
		const struct sl_ip *q = (const struct sl_ip *)(ic + 1);
		unsigned int qlen = len - sizeof(*ic), qhl;
		struct sl_icmp_err ie = {
			.type = ic->type, .code = ic->code, .offender = ip->saddr, .qlen = qlen,
		};
		int err;

		if (ic->type == ICMP_UNREACH_)
			sl_count(s, SL_C_icmp_unreach_rx);
		/* The quoted header plus the first 8 bytes of its payload. */
		if (qlen < sizeof(*q) || (q->ver_ihl >> 4) != 4)
			goto bad;
		qhl = (q->ver_ihl & 0xf) * 4;
		if (qhl < sizeof(*q) || qlen < qhl + 8 || !sl_ip_is_local(s, q->saddr))
			goto bad;
		/* RFC 1191: the next-hop MTU in the second word's low half
		 * (0 from an old router: Linux then takes ip_rt_min_pmtu). */
		if (ic->type == ICMP_UNREACH_ && ic->code == ICMP_UNREACH_NEEDFRAG_) {
			uint32_t mtu = ntohs(ic->seq);

			if (q->proto == IPPROTO_TCP_) {
				sl_tcp_icmp_frag(s, q, mtu);
			} else {
				/* Linux's __udp4_lib_err(): the path MTU for any
				 * protocol; EMSGSIZE for a UDP socket (hard
				 * unless IP_PMTUDISC_DONT, udp.c). */
				sl_pmtu_update(s, q->daddr, mtu);
				ie.info = mtu;
				ie.hard = true;
				if (q->proto == IPPROTO_UDP_)
					sl_udp_icmp_error(s, q, EMSGSIZE, &ie);
			}
			goto drop;
		}
		/* Linux __udp4_lib_err(), tcp_v4_err(): time exceeded is a
		 * soft EHOSTUNREACH, a parameter problem a hard EPROTO. */
		if (ic->type == ICMP_TIMXCEED_) {
			err = EHOSTUNREACH;
		} else if (ic->type == ICMP_PARAMPROB_) {
			err = EPROTO;
			ie.hard = true;
		} else if (ic->code < sizeof(unreach) / sizeof(unreach[0])) {
			err = unreach[ic->code].err;
			ie.hard = unreach[ic->code].hard;
		} else {
			/* Past NR_ICMP_UNREACH: a soft error to UDP, nothing
			 * to TCP (Linux). */
			if (q->proto == IPPROTO_TCP_)
				goto ignored;
			err = EHOSTUNREACH;
		}
		if (q->proto == IPPROTO_TCP_)
			sl_tcp_icmp_error(s, q, err, &ie);
		else if (q->proto == IPPROTO_UDP_)
			sl_udp_icmp_error(s, q, err, &ie);
		goto drop;
	}
	default:
		goto ignored;
	}
ignored:
	sl_count(s, SL_C_icmp_rx_ignored);
	goto drop;
bad:
	sl_count(s, SL_C_icmp_rx_bad);
drop:
	sl_buf_free(s, idx);
}

/*
 * Linux's limits on the ICMP errors it sends (icmp_ratemask 0x1818:
 * destination unreachable but fragmentation needed, source quench, time
 * exceeded, parameter problem), in its order: first the host-wide bucket
 * (icmp_global_allow(): icmp_msgs_per_sec 1000 a second, icmp_msgs_burst
 * 50), then one bucket a destination (inet_peer_xrlim_allow():
 * icmp_ratelimit 1000 ms a message, up to 6 saved up).  A destination of
 * the stack's own (Linux: the loopback device) is never limited.
 */
#define ICMP_RATEMASK		0x1818u
#define ICMP_MSGS_PER_SEC	1000u
#define ICMP_MSGS_BURST		50u
#define ICMP_RATELIMIT_MS	1000u

bool sl_icmp_global_ok(struct sl_stack *s, uint64_t now)
{
	struct sl_region *r = s->lib;

	/* The host-wide bucket, refilled by the ms gone since its last look. */
	if (now > r->icmp_stamp_ms || !r->icmp_stamp_ms) {
		uint64_t add = r->icmp_stamp_ms ? (now - r->icmp_stamp_ms) * ICMP_MSGS_PER_SEC / 1000
						: ICMP_MSGS_BURST;

		if (add) {
			r->icmp_credit = (uint32_t)(r->icmp_credit + add > ICMP_MSGS_BURST ?
						    ICMP_MSGS_BURST : r->icmp_credit + add);
			r->icmp_stamp_ms = now;
		}
	}
	return r->icmp_credit != 0;
}

static bool peer_ok(uint32_t *tokens_ms, uint64_t *last_ms, uint64_t now, uint32_t tmo)
{
	uint32_t tokens = *tokens_ms, cap = SL_XRLIM_BURST * tmo;

	tokens += now > *last_ms ? (uint32_t)(now - *last_ms > cap ? cap : now - *last_ms) : 0;
	if (tokens > cap)
		tokens = cap;
	*last_ms = now;
	if (tokens < tmo) {
		*tokens_ms = tokens;
		return false;
	}
	*tokens_ms = tokens - tmo;
	return true;
}

bool sl_icmp_peer_allow(struct sl_icmp_rl *tab, const uint8_t *daddr, uint64_t now,
			uint32_t tmo)
{
	struct sl_icmp_rl *e = NULL, *old = NULL;

	for (unsigned int i = 0; i < SL_ICMP_RL_N; i++) {
		struct sl_icmp_rl *c = &tab[i];

		if (!memcmp(c->daddr, daddr, 16)) {
			e = c;
			break;
		}
		if (!old || c->last_ms < old->last_ms)
			old = c;
	}
	if (!e) {
		/* A new peer starts with a full bucket (inet_getpeer()). */
		e = old;
		memcpy(e->daddr, daddr, 16);
		e->tokens_ms = SL_XRLIM_BURST * tmo;
		e->last_ms = now;
	}
	return peer_ok(&e->tokens_ms, &e->last_ms, now, tmo);
}

bool sl_icmp_allow(struct sl_stack *s, uint8_t type, uint8_t code, uint32_t daddr)
{
	uint8_t key[16] = { [10] = 0xff, [11] = 0xff };
	uint64_t now = sl_now(s) / 1000;

	if (type > 18 || !(ICMP_RATEMASK & (1u << type)) ||
	    (type == ICMP_UNREACH_ && code == ICMP_UNREACH_NEEDFRAG_) ||
	    sl_ip_is_local(s, daddr))
		return true;
	if (!sl_icmp_global_ok(s, now)) {
		sl_count(s, SL_C_icmp_ratelimit_global);
		return false;
	}
	memcpy(key + 12, &daddr, 4);
	if (!sl_icmp_peer_allow(s->lib->icmp_rl, key, now, ICMP_RATELIMIT_MS)) {
		sl_count(s, SL_C_icmp_ratelimit_host);
		return false;
	}
	s->lib->icmp_credit--;
	return true;
}

/* 576 bytes in all: the quote after an IPv4 and an ICMP header. */
#define ICMP_QUOTE_MAX		(576u - 20u - 8u)

void sl_icmp_send_unreach(struct sl_stack *s, uint32_t orig_idx, uint8_t code)
{
	sl_icmp_send_error(s, orig_idx, ICMP_UNREACH_, code);
}

void sl_icmp_send_error(struct sl_stack *s, uint32_t orig_idx, uint8_t type, uint8_t code)
{
	const struct sl_ip *oip = (const struct sl_ip *)sl_buf_data(s, orig_idx);
	unsigned int qlen, len;
	struct sl_icmp *ic;
	uint32_t idx;

	/* RFC 1122 3.2.2: never about ICMP errors or broadcasts. */
	if (oip->proto == IPPROTO_ICMP_ || oip->daddr == INADDR_BROADCAST ||
	    !sl_ip_is_local(s, oip->daddr))
		return;
	if (!sl_icmp_allow(s, type, code, oip->saddr))
		return;
	/* As much of the datagram as fits in 576 bytes, as Linux's
	 * __icmp_send() quotes (RFC 1812 4.3.2.3; RFC 792 asks for the header
	 * and 8 bytes of the payload at least). */
	qlen = sl_buf(s, orig_idx)->len;
	if (qlen > ICMP_QUOTE_MAX)
		qlen = ICMP_QUOTE_MAX;
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return;
	ic = (struct sl_icmp *)(sl_buf_data(s, idx) + sizeof(struct sl_ip));
	memset(ic, 0, sizeof(*ic));
	ic->type = type;
	ic->code = code;
	memcpy(ic + 1, oip, qlen);
	len = sizeof(*ic) + qlen;
	ic->csum = sl_csum_fold(sl_csum_add(0, ic, len));
	sl_ip_build(s, idx, IPPROTO_ICMP_, oip->daddr, oip->saddr, len);
	sl_count(s, type == ICMP_UNREACH_ ? SL_C_icmp_unreach_tx : SL_C_icmp_timxceed_tx);
	sl_ip_output(s, idx, false);
}
