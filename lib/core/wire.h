/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire formats: Ethernet, ARP, IPv4, ICMP, UDP, TCP headers, and the
 * Internet checksum.  All multi-byte fields are in network order.
 */
#ifndef SLUICE_WIRE_H
#define SLUICE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>

#define ETH_HLEN_	14
#define ETHERTYPE_IP_	0x0800
#define ETHERTYPE_ARP_	0x0806
#define ETHERTYPE_IPV6_	0x86dd

struct sl_eth {
	uint8_t dst[6];
	uint8_t src[6];
	uint16_t type;
} __attribute__((packed));

/* RFC 826 ARP for IPv4 over Ethernet. */
struct sl_arp {
	uint16_t htype;		/* 1 */
	uint16_t ptype;		/* 0x0800 */
	uint8_t hlen;		/* 6 */
	uint8_t plen;		/* 4 */
	uint16_t op;		/* 1 request, 2 reply */
	uint8_t sha[6];
	uint32_t spa;
	uint8_t tha[6];
	uint32_t tpa;
} __attribute__((packed));

/* RFC 791 */
struct sl_ip {
	uint8_t ver_ihl;
	uint8_t tos;
	uint16_t tot_len;
	uint16_t id;
	uint16_t frag;		/* flags and fragment offset */
	uint8_t ttl;
	uint8_t proto;
	uint16_t csum;
	uint32_t saddr;
	uint32_t daddr;
} __attribute__((packed));

#define IP_DF_		0x4000
#define IP_MF_		0x2000
#define IP_OFFMASK_	0x1fff
#define IP_DEFTTL_	64	/* RFC 1700 recommended default */

#define IPPROTO_ICMP_	1
#define IPPROTO_TCP_	6
#define IPPROTO_UDP_	17

/* RFC 792 */
struct sl_icmp {
	uint8_t type;
	uint8_t code;
	uint16_t csum;
	uint16_t id;
	uint16_t seq;
} __attribute__((packed));

#define ICMP_ECHOREPLY_		0
#define ICMP_UNREACH_		3
#define ICMP_ECHO_		8
#define ICMP_TIMXCEED_		11
#define ICMP_UNREACH_NET_	0
#define ICMP_UNREACH_HOST_	1
#define ICMP_UNREACH_PROTO_	2
#define ICMP_UNREACH_PORT_	3
#define ICMP_UNREACH_NEEDFRAG_	4
#define ICMP_TIMXCEED_REASS_	1	/* fragment reassembly time exceeded */

/* RFC 768 */
struct sl_udp {
	uint16_t sport;
	uint16_t dport;
	uint16_t len;
	uint16_t csum;
} __attribute__((packed));

/* RFC 9293 section 3.1 */
struct sl_tcph {
	uint16_t sport;
	uint16_t dport;
	uint32_t seq;
	uint32_t ack;
	uint8_t off;		/* data offset << 4 */
	uint8_t flags;
	uint16_t win;
	uint16_t csum;
	uint16_t urp;
} __attribute__((packed));

#define TH_FIN_	0x01
#define TH_SYN_	0x02
#define TH_RST_	0x04
#define TH_PSH_	0x08
#define TH_ACK_	0x10
#define TH_URG_	0x20
#define TH_ECE_	0x40
#define TH_CWR_	0x80

/* RFC 8200 3: the IPv6 header.  vtcfl: version 4 bits, traffic class 8,
 * flow label 20, in network order as one word. */
struct sl_ip6 {
	uint32_t vtcfl;
	uint16_t plen;		/* payload length: what follows this header */
	uint8_t nxt;		/* next header */
	uint8_t hlim;		/* hop limit */
	uint8_t saddr[16];
	uint8_t daddr[16];
} __attribute__((packed));

#define IP6_HLEN_		40
#define IP6_FLOWLABEL_MASK_	0x000fffffu
#define IP6_DEFHLIM_		64	/* Linux's hop_limit default */
#define IP6_MIN_MTU_		1280	/* RFC 8200 5 */

/* Next header values (IANA protocol numbers) the stack knows. */
#define IPPROTO_HOPOPTS_	0
#define IPPROTO_ROUTING_	43
#define IPPROTO_FRAGMENT_	44
#define IPPROTO_ICMPV6_		58
#define IPPROTO_NONE_		59
#define IPPROTO_DSTOPTS_	60

/* RFC 8200 4.3/4.6: hop-by-hop and destination options headers, and 4.4
 * the routing header's first four bytes (length in 8-byte units past
 * the first 8). */
struct sl_ip6_ext {
	uint8_t nxt;
	uint8_t len;
} __attribute__((packed));
struct sl_ip6_rthdr {
	uint8_t nxt;
	uint8_t len;
	uint8_t type;
	uint8_t segleft;
} __attribute__((packed));
/* RFC 8200 4.5 */
struct sl_ip6_frag {
	uint8_t nxt;
	uint8_t reserved;
	uint16_t off;		/* offset << 3 | res 2 bits | M */
	uint32_t id;
} __attribute__((packed));

#define IP6_OPT_PAD1_	0
#define IP6_OPT_PADN_	1
#define IP6_OPT_RA_	5	/* router alert (RFC 2711), hop-by-hop */

/* RFC 4443 2.1 */
struct sl_icmp6 {
	uint8_t type;
	uint8_t code;
	uint16_t csum;
	uint32_t data;		/* echo: id and sequence; param problem: pointer; PTB: MTU */
} __attribute__((packed));

#define ICMP6_DST_UNREACH_	1
#define ICMP6_PACKET_TOO_BIG_	2
#define ICMP6_TIME_EXCEEDED_	3
#define ICMP6_PARAM_PROB_	4
#define ICMP6_ECHO_REQUEST_	128
#define ICMP6_ECHO_REPLY_	129
#define ICMP6_UNREACH_PORT_	4
#define ICMP6_PARAMPROB_HEADER_	0	/* erroneous header field */
#define ICMP6_PARAMPROB_NEXTHDR_ 1	/* unrecognized next header */
#define ICMP6_PARAMPROB_OPTION_	2	/* unrecognized IPv6 option */

static inline bool sl_ip6_is_mcast(const uint8_t *a)
{
	return a[0] == 0xff;
}

/* The IPv6 pseudo-header sum for upper-layer checksums (RFC 8200 8.1). */
uint32_t sl_csum_pseudo6(const uint8_t *saddr, const uint8_t *daddr, uint8_t nxt, uint32_t len);

/* One's-complement sum of a buffer, folded to 16 bits later. */
uint32_t sl_csum_add(uint32_t sum, const void *data, size_t len);
/* sum plus data's len bytes, which follow pieces whose lengths added up to
 * an odd number if *odd (updated): a message in pieces of any length. */
uint32_t sl_csum_add_at(uint32_t sum, const void *data, size_t len, uint32_t *odd);
uint16_t sl_csum_fold(uint32_t sum);
/* The IPv4 pseudo-header sum for a TCP or UDP checksum (RFC 9293 3.1). */
uint32_t sl_csum_pseudo(uint32_t saddr, uint32_t daddr, uint8_t proto, uint16_t len);

static inline uint16_t sl_ip_csum(const struct sl_ip *ip)
{
	return sl_csum_fold(sl_csum_add(0, ip, (ip->ver_ihl & 0xf) * 4));
}

#endif /* SLUICE_WIRE_H */
