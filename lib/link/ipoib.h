/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IPoIB wire formats (RFC 4391, RFC 4392): the 4-byte encapsulation header,
 * the 20-byte hardware address, ARP with hardware type 32, the broadcast
 * group's MGID and the UD MTU.  Pure encode/decode, no device: the verbs
 * link (link/verbs.c) uses it and the host unit tests drive it directly.
 */
#ifndef SLUICE_IPOIB_H
#define SLUICE_IPOIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_IPOIB_HLEN		4	/* RFC 4391 6: type (2), reserved (2) */
#define SL_IPOIB_GRH_LEN	40	/* IBA 9.6.1.2: GRH in front of every UD receive */
#define SL_IPOIB_HWLEN		20	/* RFC 4391 9.1.1: flags+QPN (4), GID (16) */
#define SL_IPOIB_QPN_MASK	0xffffffu
#define SL_IPOIB_MCAST_QPN	0xffffffu	/* IBA 10.8.2: QPN of a multicast send */
#define SL_IPOIB_QKEY_DEFAULT	0x0b1bu	/* what Linux ipoib uses without an SA answer */
#define SL_ARPHRD_INFINIBAND	32	/* RFC 4391 9.1.1: ARP hardware type */

/* RFC 4391 9.1.1: ARP for IPv4 over InfiniBand (56 bytes). */
struct sl_ipoib_arp {
	uint16_t htype;		/* 32 */
	uint16_t ptype;		/* 0x0800 */
	uint8_t hlen;		/* 20 */
	uint8_t plen;		/* 4 */
	uint16_t op;		/* 1 request, 2 reply */
	uint8_t sha[SL_IPOIB_HWLEN];
	uint32_t spa;
	uint8_t tha[SL_IPOIB_HWLEN];
	uint32_t tpa;
} __attribute__((packed));

/* A decoded 20-byte address. */
struct sl_ipoib_addr {
	uint32_t qpn;		/* 24 bits */
	uint8_t flags;		/* first byte: 0x80 "connected mode" (RFC 4755) */
	uint8_t gid[16];
};

void sl_ipoib_hw_encode(uint8_t hw[SL_IPOIB_HWLEN], const struct sl_ipoib_addr *a);
void sl_ipoib_hw_decode(const uint8_t hw[SL_IPOIB_HWLEN], struct sl_ipoib_addr *a);

/* RFC 4391 4: the broadcast group ff12:401b:<pkey>::ffff:ffff (link-local
 * scope 2), the P_Key with its full-membership bit set. */
void sl_ipoib_bcast_mgid(uint8_t mgid[16], uint16_t pkey);

/*
 * RFC 4391 4: the MGID an IPv6 multicast address maps to,
 * ff1S:601b:PPPP followed by the group's low 80 bits (bytes 6..15), the
 * scope S and the P_Key taken from the broadcast group's MGID bcast, as
 * Linux's ipv6_ib_mc_map() takes them from the device's broadcast address.
 */
void sl_ipoib_mc6_mgid(uint8_t mgid[16], const uint8_t group[16], const uint8_t bcast[16]);

/* RFC 4391 8: the link-local address fe80::/64 whose interface identifier
 * is the port GUID (a GID's low 8 bytes) with the universal/local bit
 * (0x02 of its first byte) set, as Linux's addrconf_ifid_infiniband(). */
void sl_ipoib_ll6(uint8_t ll[16], const uint8_t gid[16]);

/*
 * RFC 4391 9.2: Neighbour Discovery's source/target link-layer address
 * option (type 1 or 2) for a 20-byte address: length 3 (24 bytes), two
 * bytes of padding, then the address (Linux: ndisc_addr_option_pad() 2).
 */
#define SL_IPOIB_ND_OPT_LEN	24
/* Write the option of type with address hw at p (24 bytes). */
void sl_ipoib_nd_opt_put(uint8_t *p, uint8_t type, const uint8_t hw[SL_IPOIB_HWLEN]);
/*
 * The options of an NS or NA after its target (len bytes at p): every one
 * at least 8 bytes and within len (RFC 4861 7.1.1), else -EINVAL.  *hw
 * points at the 20-byte address of the option of type want, or is NULL
 * without one; one of that type with another length is -EINVAL (not an
 * IPoIB address).
 */
int sl_ipoib_nd_opts(const uint8_t *p, unsigned int len, uint8_t want, const uint8_t **hw);

/* Write the 4-byte header for ethertype into hdr (the reserved half zero). */
void sl_ipoib_hdr_put(uint8_t hdr[SL_IPOIB_HLEN], uint16_t ethertype);

/*
 * A UD receive of byte_len bytes at frame (the GRH first): check that the
 * GRH and header fit and the reserved half is zero.  Returns the ethertype
 * and sets *payload_len (bytes after the header), or -EINVAL.
 */
int sl_ipoib_rx_parse(const uint8_t *frame, uint32_t byte_len, uint32_t *payload_len);

/* The GRH's source GID (IBA 8.3.1: bytes 8..23). */
const uint8_t *sl_ipoib_grh_sgid(const uint8_t *grh);

/* Build an ARP packet at buf (at least sizeof(struct sl_ipoib_arp)); tha may
 * be NULL (all zero).  Returns its length. */
size_t sl_ipoib_arp_build(void *buf, uint16_t op, const uint8_t sha[SL_IPOIB_HWLEN],
			  uint32_t spa, const uint8_t *tha, uint32_t tpa);
/* Check an ARP packet of len bytes: 0, or -EINVAL for anything but IPv4 over
 * InfiniBand with 20-byte addresses and op 1 or 2. */
int sl_ipoib_arp_check(const void *buf, size_t len);

/* ibv_mtu enum value (1..5) to bytes (256..4096); 0 for anything else. */
unsigned int sl_ipoib_ib_mtu_bytes(int ibv_mtu);
/* The IP MTU over UD with that IB MTU: IB MTU - 4 (RFC 4391 7). */
unsigned int sl_ipoib_ud_mtu(int ibv_mtu);

#endif /* SLUICE_IPOIB_H */
