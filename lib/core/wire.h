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
