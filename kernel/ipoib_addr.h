/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * IPoIB addresses and InfiniBand encodings as pure functions: no ib_core
 * call, no kernel state, so tests/unit/test_kipoib.c compiles
 * kernel/ipoib_addr.c unchanged (against tests/fuzz/kshim) and checks it
 * against the values of RFC 4391 and the IBTA tables.
 */
#ifndef _SLUICE_IPOIB_ADDR_H
#define _SLUICE_IPOIB_ADDR_H

#include <linux/types.h>
#include <uapi/sluice.h>

/* RFC 4391 section 9.1.1: the IPoIB link-layer address is 20 bytes. */
#define SLUICE_IPOIB_ALEN	20
/* RFC 4391 section 6: UD packets carry a 4-byte IPoIB encapsulation header. */
#define SLUICE_IPOIB_HLEN	4
/* The Q_Key IPoIB uses unless the broadcast group says otherwise. */
#define SLUICE_IPOIB_DEFAULT_QKEY	0x0B1B
/* RFC 4391 section 9.1.1: bytes 1..3 of a multicast hwaddr, the QPN. */
#define SLUICE_IPOIB_MCAST_QPN	0xffffff

u32 sluice_ipoib_qpn(const u8 *hwaddr);
void sluice_ipoib_gid(const u8 *hwaddr, u8 gid[16]);
u16 sluice_ipoib_bcast_pkey(const u8 *broadcast);
int sluice_ipoib_mcast_hwaddr(const u8 group[4], const u8 *broadcast,
			      u8 out[SLUICE_IPOIB_ALEN]);
int sluice_eth_mcast_hwaddr(const u8 group[4], u8 out[6]);

unsigned int sluice_ib_mtu_bytes(unsigned int mtu_enum);
unsigned int sluice_ib_mtu_enum(unsigned int bytes);
unsigned int sluice_ib_rate_ibv(unsigned int sa_rate);
unsigned int sluice_ib_rate_mbps(unsigned int rate);

/* What the module learnt about an IPoIB interface, for IFINFO. */
struct sluice_ipoib_desc {
	const char *ib_dev;		/* the ib_device's name */
	const u8 *hwaddr;		/* @addr_len bytes: the interface's */
	const u8 *broadcast;		/* @addr_len bytes: its broadcast */
	unsigned int addr_len;
	u32 port;
	u16 pkey;
	u16 pkey_index;
	u32 qkey;			/* used only with @qkey_sa */
	unsigned int active_mtu;	/* IB_MTU_* of the port, 0 unknown */
	unsigned int group_mtu;		/* IB_MTU_* of the broadcast group, 0 unknown */
	bool qkey_sa;			/* @qkey came from the MCMemberRecord */
	bool pkey_absent;		/* @pkey not in the port's table */
	bool connected;
	bool source_qpn;
	bool flow_steer;
	bool ud_csum;
	bool rss;
};

int sluice_ipoib_fill(struct sluice_ifinfo *info,
		      const struct sluice_ipoib_desc *d);

/* A path record as the SA answered it, host order. */
struct sluice_path_desc {
	u8 dgid[16];
	u8 sgid[16];
	u32 flow_label;
	u16 dlid;
	u8 sl;
	u8 rate;			/* SA encoding */
	u8 mtu;				/* IB_MTU_* */
	u8 hop_limit;
	u8 traffic_class;
};

void sluice_path_fill(struct sluice_neigh_resolve *res,
		      const struct sluice_path_desc *p);

/*
 * A cached path's state machine, time passed in (jiffies, any unit that
 * wraps like them): PENDING until the first answer, then VALID or FAILED
 * until @expires; a lookup from then on asks again, showing a VALID
 * record meanwhile and turning FAILED into PENDING.  One query at a time.
 */
struct sluice_path_state {
	u32 state;			/* SLUICE_NEIGH_RES_* */
	int status;			/* the last failure, 0 if none */
	bool querying;			/* a query is in flight */
	unsigned long expires;
	unsigned long answered;		/* when the last answer came */
	struct sluice_path_desc rec;	/* valid in state VALID */
};

void sluice_path_init(struct sluice_path_state *s, unsigned long now);
bool sluice_path_lookup(struct sluice_path_state *s, unsigned long now);
void sluice_path_answer(struct sluice_path_state *s, int status,
			const struct sluice_path_desc *rec, unsigned long now,
			unsigned long ttl, unsigned long fail_ttl);

#endif /* _SLUICE_IPOIB_ADDR_H */
