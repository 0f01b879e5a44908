// SPDX-License-Identifier: GPL-2.0-only
/*
 * IPoIB addresses and InfiniBand encodings (see ipoib_addr.h): what the
 * module reports about an IPoIB interface and a path, computed from bytes
 * only, so the host unit test runs this very file.
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/types.h>

#include "ipoib_addr.h"

/* RFC 4391 section 9.1.1: byte 0 flags, bytes 1..3 the QPN, 4..19 the GID. */
u32 sluice_ipoib_qpn(const u8 *hwaddr)
{
	return (u32)hwaddr[1] << 16 | (u32)hwaddr[2] << 8 | hwaddr[3];
}

void sluice_ipoib_gid(const u8 *hwaddr, u8 gid[16])
{
	memcpy(gid, hwaddr + 4, 16);
}

/*
 * RFC 4391 section 4: the broadcast MGID is FF1s:401B:PPPP:0000:0000:0000:
 * FFFF:FFFF, the P_Key at MGID bytes 4..5, that is hwaddr bytes 8..9.
 */
u16 sluice_ipoib_bcast_pkey(const u8 *broadcast)
{
	return (u16)(broadcast[8] << 8 | broadcast[9]);
}

/*
 * RFC 4391 section 4: an IPv4 group G maps to the MGID
 * FF1s:401B:PPPP:0000:0000:0000:GGGG:GGGG, with the scope s and the P_Key
 * of the broadcast group and the low 28 bits of G; the hwaddr adds QPN
 * 0xFFFFFF (section 9.1.1) and a zero flags byte.  @group in network order.
 */
int sluice_ipoib_mcast_hwaddr(const u8 group[4], const u8 *broadcast,
			      u8 out[SLUICE_IPOIB_ALEN])
{
	if ((group[0] & 0xf0) != 0xe0)
		return -EINVAL;
	memset(out, 0, SLUICE_IPOIB_ALEN);
	out[1] = 0xff;
	out[2] = 0xff;
	out[3] = 0xff;
	out[4] = 0xff;
	out[5] = 0x10 | (broadcast[5] & 0x0f);
	out[6] = 0x40;
	out[7] = 0x1b;
	out[8] = broadcast[8];
	out[9] = broadcast[9];
	out[16] = group[0] & 0x0f;
	out[17] = group[1];
	out[18] = group[2];
	out[19] = group[3];
	return 0;
}

/* RFC 1112 section 6.4: 01:00:5E and the low 23 bits of the group. */
int sluice_eth_mcast_hwaddr(const u8 group[4], u8 out[6])
{
	if ((group[0] & 0xf0) != 0xe0)
		return -EINVAL;
	out[0] = 0x01;
	out[1] = 0x00;
	out[2] = 0x5e;
	out[3] = group[1] & 0x7f;
	out[4] = group[2];
	out[5] = group[3];
	return 0;
}

/* IBTA: enum ib_mtu (= enum ibv_mtu) 1..5 is 256 << (n - 1) bytes. */
unsigned int sluice_ib_mtu_bytes(unsigned int mtu_enum)
{
	if (mtu_enum < 1 || mtu_enum > 5)
		return 0;
	return 256u << (mtu_enum - 1);
}

/* The largest IB MTU that fits @bytes, 0 if none does. */
unsigned int sluice_ib_mtu_enum(unsigned int bytes)
{
	unsigned int e;

	for (e = 5; e >= 1; e--)
		if (sluice_ib_mtu_bytes(e) <= bytes)
			return e;
	return 0;
}

/*
 * Static rates in Mb/s by their code: the SA PathRecord Rate field, enum
 * ib_rate and rdma-core's enum ibv_rate share it (2 = 2.5 Gb/s ... 24 =
 * 1200 Gb/s); 0 and 1 are not rates.
 */
static const unsigned int sluice_ib_rates[] = {
	[2] = 2500, [3] = 10000, [4] = 30000, [5] = 5000, [6] = 20000,
	[7] = 40000, [8] = 60000, [9] = 80000, [10] = 120000, [11] = 14000,
	[12] = 56000, [13] = 112000, [14] = 168000, [15] = 25000,
	[16] = 100000, [17] = 200000, [18] = 300000, [19] = 28000,
	[20] = 50000, [21] = 400000, [22] = 600000, [23] = 800000,
	[24] = 1200000,
};

unsigned int sluice_ib_rate_mbps(unsigned int rate)
{
	if (rate >= ARRAY_SIZE(sluice_ib_rates))
		return 0;
	return sluice_ib_rates[rate];
}

/* The ibv_rate for an SA rate: the same code, or 0 (IBV_RATE_MAX) if unknown. */
unsigned int sluice_ib_rate_ibv(unsigned int sa_rate)
{
	return sluice_ib_rate_mbps(sa_rate) ? sa_rate : 0;
}

static void sluice_copy_name(char *dst, size_t size, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < size && src && src[i]; i++)
		dst[i] = src[i];
	memset(dst + i, 0, size - i);
}

/**
 * sluice_ipoib_fill - the IPoIB part of an IFINFO answer
 * @info:	the answer; its ib_* fields are written
 * @d:		what the module found out about the interface
 *
 * Return: 0, or -EINVAL (nothing written) if @d is no IPoIB address.
 */
int sluice_ipoib_fill(struct sluice_ifinfo *info,
		      const struct sluice_ipoib_desc *d)
{
	unsigned int mtu = sluice_ib_mtu_bytes(d->active_mtu);
	unsigned int gmtu = sluice_ib_mtu_bytes(d->group_mtu);
	u32 flags = SLUICE_IB_IPOIB;

	if (d->addr_len != SLUICE_IPOIB_ALEN || !d->hwaddr || !d->broadcast ||
	    !d->port)
		return -EINVAL;
	/*
	 * While ipoib joins the broadcast group again (a client reregister,
	 * an SM change), ib_sa holds a fresh group whose record is still
	 * zero: a Q_Key of 0 is no answer (issue 14 item 8), and IPoIB
	 * groups never use it.
	 */
	if (d->qkey_sa && d->qkey)
		flags |= SLUICE_IB_QKEY_SA;
	if (d->connected)
		flags |= SLUICE_IB_CONNECTED;
	if (d->source_qpn)
		flags |= SLUICE_IB_SOURCE_QPN;
	if (d->flow_steer)
		flags |= SLUICE_IB_FLOW_STEER;
	if (d->ud_csum)
		flags |= SLUICE_IB_UD_CSUM;
	if (d->rss)
		flags |= SLUICE_IB_RSS;
	/*
	 * A P_Key the port's table lacks, or one with no partition bits (IBTA
	 * Vol 1 10.9.1.2: 0x0000 and 0x8000 are invalid): ipoib keeps such
	 * an interface down (ipoib_pkey_dev_check_presence()), and an index
	 * would name some other partition's entry.
	 */
	if (d->pkey_absent || !(d->pkey & 0x7fff))
		flags |= SLUICE_IB_PKEY_ABSENT;
	/*
	 * ipoib's datagram MTU is the broadcast group's (RFC 4391 section
	 * 4; ipoib_mcast_join_finish() sets mcast_mtu from its record), which
	 * an SM may make smaller than the port's: a datagram larger than the
	 * group's would be dropped by ipoib's transmit or by a peer whose
	 * port is at the group's MTU.
	 */
	if (gmtu && (!mtu || gmtu < mtu))
		mtu = gmtu;
	info->ib_flags = flags;
	info->ib_port = d->port;
	sluice_copy_name(info->ib_dev, sizeof(info->ib_dev), d->ib_dev);
	info->pkey = d->pkey;
	info->pkey_index = flags & SLUICE_IB_PKEY_ABSENT ? 0 : d->pkey_index;
	info->qkey = flags & SLUICE_IB_QKEY_SA ? d->qkey : SLUICE_IPOIB_DEFAULT_QKEY;
	info->qpn = sluice_ipoib_qpn(d->hwaddr);
	info->ud_mtu = mtu ? mtu - SLUICE_IPOIB_HLEN : 0;
	sluice_ipoib_gid(d->hwaddr, info->gid);
	sluice_ipoib_gid(d->broadcast, info->bcast_mgid);
	return 0;
}

/* A new entry: nothing known, to be asked at once. */
void sluice_path_init(struct sluice_path_state *s, unsigned long now)
{
	memset(s, 0, sizeof(*s));
	s->state = SLUICE_NEIGH_RES_PENDING;
	s->expires = now;
}

/* Whether @a is at or after @b, across a wrap (the kernel's time_after_eq). */
static bool sluice_time_reached(unsigned long a, unsigned long b)
{
	return (long)(a - b) >= 0;
}

/**
 * sluice_path_lookup - a NEIGH_RESOLVE looks at the entry
 * @s:		the entry
 * @now:	the time
 *
 * Return: true if the caller must start a query now (@s is marked as
 * querying; its answer, sluice_path_answer(), clears that).
 */
bool sluice_path_lookup(struct sluice_path_state *s, unsigned long now)
{
	if (s->querying || !sluice_time_reached(now, s->expires))
		return false;
	if (s->state != SLUICE_NEIGH_RES_VALID)
		s->state = SLUICE_NEIGH_RES_PENDING;
	s->querying = true;
	return true;
}

/**
 * sluice_path_answer - the SA answered, or the query could not be made
 * @s:		the entry
 * @status:	0 or -errno
 * @rec:	the record if @status is 0 (NULL: no record, a failure)
 * @now:	the time
 * @ttl:	how long a record stays
 * @fail_ttl:	how long a failure stays
 */
void sluice_path_answer(struct sluice_path_state *s, int status,
			const struct sluice_path_desc *rec, unsigned long now,
			unsigned long ttl, unsigned long fail_ttl)
{
	s->querying = false;
	s->answered = now;
	if (!status && rec) {
		s->rec = *rec;
		s->state = SLUICE_NEIGH_RES_VALID;
		s->status = 0;
		s->expires = now + ttl;
	} else {
		s->state = SLUICE_NEIGH_RES_FAILED;
		s->status = status ? status : -EHOSTUNREACH;
		s->expires = now + fail_ttl;
	}
}

/* The path fields of a NEIGH_RESOLVE answer from an SA path record. */
void sluice_path_fill(struct sluice_neigh_resolve *res,
		      const struct sluice_path_desc *p)
{
	memcpy(res->dgid, p->dgid, sizeof(res->dgid));
	memcpy(res->sgid, p->sgid, sizeof(res->sgid));
	res->dlid = p->dlid;
	res->sl = p->sl & 0xf;
	res->rate = sluice_ib_rate_ibv(p->rate);
	res->mtu = sluice_ib_mtu_bytes(p->mtu) ? p->mtu : 0;
	res->hop_limit = p->hop_limit;
	res->traffic_class = p->traffic_class;
	res->flow_label = p->flow_label & 0xfffff;
}
