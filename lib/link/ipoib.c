// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPoIB wire formats: see ipoib.h.  Nothing here touches a device.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "link/ipoib.h"
#include "link/link.h"

void sl_ipoib_hw_encode(uint8_t hw[SL_IPOIB_HWLEN], const struct sl_ipoib_addr *a)
{
	hw[0] = a->flags;
	hw[1] = (uint8_t)(a->qpn >> 16);
	hw[2] = (uint8_t)(a->qpn >> 8);
	hw[3] = (uint8_t)a->qpn;
	memcpy(hw + 4, a->gid, 16);
}

void sl_ipoib_hw_decode(const uint8_t hw[SL_IPOIB_HWLEN], struct sl_ipoib_addr *a)
{
	a->flags = hw[0];
	a->qpn = (uint32_t)hw[1] << 16 | (uint32_t)hw[2] << 8 | hw[3];
	memcpy(a->gid, hw + 4, 16);
}

void sl_ipoib_bcast_mgid(uint8_t mgid[16], uint16_t pkey)
{
	pkey |= 0x8000;
	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = 0x12;		/* flags 1 (transient), scope 2 (link-local) */
	mgid[2] = 0x40;		/* IPv4 signature 0x401b */
	mgid[3] = 0x1b;
	mgid[4] = (uint8_t)(pkey >> 8);
	mgid[5] = (uint8_t)pkey;
	memset(mgid + 12, 0xff, 4);	/* the IPv4 broadcast address */
}

void sl_ipoib_mc6_mgid(uint8_t mgid[16], const uint8_t group[16], const uint8_t bcast[16])
{
	mgid[0] = 0xff;
	mgid[1] = 0x10 | (bcast[1] & 0x0f);	/* flags 1, the broadcast group's scope */
	mgid[2] = 0x60;				/* IPv6 signature 0x601b */
	mgid[3] = 0x1b;
	mgid[4] = bcast[4];			/* P_Key, full member */
	mgid[5] = bcast[5];
	memcpy(mgid + 6, group + 6, 10);
}

void sl_ipoib_ll6(uint8_t ll[16], const uint8_t gid[16])
{
	memset(ll, 0, 8);
	ll[0] = 0xfe;
	ll[1] = 0x80;
	memcpy(ll + 8, gid + 8, 8);
	ll[8] |= 0x02;
}

void sl_ipoib_nd_opt_put(uint8_t *p, uint8_t type, const uint8_t hw[SL_IPOIB_HWLEN])
{
	p[0] = type;
	p[1] = SL_IPOIB_ND_OPT_LEN / 8;
	p[2] = 0;
	p[3] = 0;
	memcpy(p + 4, hw, SL_IPOIB_HWLEN);
}

int sl_ipoib_nd_opts(const uint8_t *p, unsigned int len, uint8_t want, const uint8_t **hw)
{
	*hw = NULL;
	while (len) {
		unsigned int ol;

		if (len < 2 || !p[1] || (ol = p[1] * 8u) > len)
			return -EINVAL;
		if (p[0] == want) {
			if (ol != SL_IPOIB_ND_OPT_LEN)
				return -EINVAL;
			*hw = p + 4;
		}
		p += ol;
		len -= ol;
	}
	return 0;
}

void sl_ipoib_hdr_put(uint8_t hdr[SL_IPOIB_HLEN], uint16_t ethertype)
{
	hdr[0] = (uint8_t)(ethertype >> 8);
	hdr[1] = (uint8_t)ethertype;
	hdr[2] = 0;
	hdr[3] = 0;
}

int sl_ipoib_rx_parse(const uint8_t *frame, uint32_t byte_len, uint32_t *payload_len)
{
	const uint8_t *h = frame + SL_IPOIB_GRH_LEN;

	if (byte_len < SL_IPOIB_GRH_LEN + SL_IPOIB_HLEN || h[2] || h[3])
		return -EINVAL;
	*payload_len = byte_len - SL_IPOIB_GRH_LEN - SL_IPOIB_HLEN;
	return (int)((uint32_t)h[0] << 8 | h[1]);
}

const uint8_t *sl_ipoib_grh_sgid(const uint8_t *grh)
{
	return grh + 8;
}

size_t sl_ipoib_arp_build(void *buf, uint16_t op, const uint8_t sha[SL_IPOIB_HWLEN],
			  uint32_t spa, const uint8_t *tha, uint32_t tpa)
{
	struct sl_ipoib_arp *a = buf;

	a->htype = htons(SL_ARPHRD_INFINIBAND);
	a->ptype = htons(ETHERTYPE_IP_);
	a->hlen = SL_IPOIB_HWLEN;
	a->plen = 4;
	a->op = htons(op);
	memcpy(a->sha, sha, SL_IPOIB_HWLEN);
	a->spa = spa;
	if (tha)
		memcpy(a->tha, tha, SL_IPOIB_HWLEN);
	else
		memset(a->tha, 0, SL_IPOIB_HWLEN);
	a->tpa = tpa;
	return sizeof(*a);
}

int sl_ipoib_arp_check(const void *buf, size_t len)
{
	const struct sl_ipoib_arp *a = buf;

	if (len < sizeof(*a) || a->htype != htons(SL_ARPHRD_INFINIBAND) ||
	    a->ptype != htons(ETHERTYPE_IP_) || a->hlen != SL_IPOIB_HWLEN || a->plen != 4 ||
	    (a->op != htons(1) && a->op != htons(2)))
		return -EINVAL;
	return 0;
}

unsigned int sl_ipoib_ib_mtu_bytes(int ibv_mtu)
{
	/* IBA 7.7.9 / enum ibv_mtu: 1 = 256 ... 5 = 4096 */
	return ibv_mtu >= 1 && ibv_mtu <= 5 ? 128u << ibv_mtu : 0;
}

unsigned int sl_ipoib_ud_mtu(int ibv_mtu)
{
	unsigned int b = sl_ipoib_ib_mtu_bytes(ibv_mtu);

	return b ? b - SL_IPOIB_HLEN : 0;
}
