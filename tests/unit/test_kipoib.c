// SPDX-License-Identifier: BSD-2-Clause
/*
 * The module's IPoIB address and encoding functions (kernel/ipoib_addr.c,
 * compiled unchanged against tests/fuzz/kshim) on constructed data,
 * checked against RFC 4391 (IPoIB addresses, section 4 MGIDs, section
 * 9.1.1 link-layer address), RFC 1112 section 6.4 (Ethernet groups) and
 * the IBTA MTU and rate codes.
 */
#include <stdio.h>
#include <string.h>

#include "../../kernel/ipoib_addr.h"
#include "tap.h"

/* An interface: flags 0x80 (RC capable), QPN 0x000048, GID fe80::2:c903:a:1b2. */
static const u8 hw[20] = {
	0x80, 0x00, 0x00, 0x48,
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x0a, 0x01, 0xb2,
};
/* Its broadcast, RFC 4391 section 4: FF12:401B:FFFF::FFFF:FFFF, QPN 0xFFFFFF. */
static const u8 bcast[20] = {
	0x00, 0xff, 0xff, 0xff,
	0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};
/* A P_Key child (0x8001, full member) in site-local scope (5). */
static const u8 bcast_child[20] = {
	0x00, 0xff, 0xff, 0xff,
	0xff, 0x15, 0x40, 0x1b, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

static void test_address_fields(void)
{
	u8 gid[16];

	tap_eq(sluice_ipoib_qpn(hw), 0x48, "QPN from hwaddr bytes 1..3");
	tap_eq(sluice_ipoib_qpn(bcast), SLUICE_IPOIB_MCAST_QPN,
	       "broadcast QPN is 0xFFFFFF");
	sluice_ipoib_gid(hw, gid);
	tap_ok(!memcmp(gid, hw + 4, 16) && gid[0] == 0xfe && gid[15] == 0xb2,
	       "GID from hwaddr bytes 4..19");
	tap_eq(sluice_ipoib_bcast_pkey(bcast), 0xffff, "default P_Key 0xFFFF");
	tap_eq(sluice_ipoib_bcast_pkey(bcast_child), 0x8001,
	       "child P_Key with the full-member bit");
}

static void test_mcast_mgid(void)
{
	/* RFC 4391 section 4: 224.0.0.1 -> FF12:401B:FFFF::1 (low 28 bits). */
	static const u8 all_hosts[20] = {
		0, 0xff, 0xff, 0xff,
		0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
	};
	static const u8 g1[4] = { 224, 0, 0, 1 };
	static const u8 g2[4] = { 239, 255, 1, 2 };
	static const u8 bad[4] = { 192, 168, 0, 1 };
	u8 out[20];

	tap_eq(sluice_ipoib_mcast_hwaddr(g1, bcast, out), 0, "224.0.0.1 maps");
	tap_ok(!memcmp(out, all_hosts, 20),
	       "224.0.0.1 -> QPN FFFFFF, MGID FF12:401B:FFFF::1");
	memset(out, 0xaa, sizeof(out));
	tap_eq(sluice_ipoib_mcast_hwaddr(g2, bcast_child, out), 0, "239.255.1.2 maps");
	tap_ok(out[5] == 0x15 && out[8] == 0x80 && out[9] == 0x01,
	       "scope and P_Key come from the broadcast address");
	tap_ok(out[16] == 0x0f && out[17] == 0xff && out[18] == 1 && out[19] == 2 &&
	       !out[10] && !out[15] && !out[0],
	       "low 28 bits of 239.255.1.2 in MGID bytes 12..15, the rest zero");
	tap_eq(sluice_ipoib_mcast_hwaddr(bad, bcast, out), -EINVAL,
	       "a unicast address is no group");
}

static void test_eth_mcast(void)
{
	static const u8 g[4] = { 239, 129, 2, 3 };
	static const u8 want[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	static const u8 bad[4] = { 240, 0, 0, 1 };
	u8 out[6];

	tap_eq(sluice_eth_mcast_hwaddr(g, out), 0, "239.129.2.3 maps on Ethernet");
	tap_ok(!memcmp(out, want, 6), "01:00:5e and the low 23 bits (RFC 1112 6.4)");
	tap_eq(sluice_eth_mcast_hwaddr(bad, out), -EINVAL, "240.0.0.1 is no group");
}

static void test_mtu_rate(void)
{
	tap_eq(sluice_ib_mtu_bytes(1), 256, "IB_MTU_256");
	tap_eq(sluice_ib_mtu_bytes(4), 2048, "IB_MTU_2048");
	tap_eq(sluice_ib_mtu_bytes(5), 4096, "IB_MTU_4096");
	tap_eq(sluice_ib_mtu_bytes(0), 0, "MTU code 0 is none");
	tap_eq(sluice_ib_mtu_bytes(6), 0, "MTU code 6 is none");
	tap_eq(sluice_ib_mtu_enum(4096), 5, "4096 bytes -> IB_MTU_4096");
	tap_eq(sluice_ib_mtu_enum(4095), 4, "4095 bytes -> IB_MTU_2048");
	tap_eq(sluice_ib_mtu_enum(255), 0, "below 256 bytes no IB MTU");
	tap_eq(sluice_ib_rate_mbps(2), 2500, "rate 2 is 2.5 Gb/s");
	tap_eq(sluice_ib_rate_mbps(3), 10000, "rate 3 is 10 Gb/s");
	tap_eq(sluice_ib_rate_mbps(16), 100000, "rate 16 is 100 Gb/s (EDR 4x)");
	tap_eq(sluice_ib_rate_mbps(21), 400000, "rate 21 is 400 Gb/s");
	tap_eq(sluice_ib_rate_ibv(7), 7, "SA rate 7 -> IBV_RATE_40_GBPS (7)");
	tap_eq(sluice_ib_rate_ibv(1), 0, "SA rate 1 is not a rate -> IBV_RATE_MAX");
	tap_eq(sluice_ib_rate_ibv(63), 0, "SA rate 63 unknown -> IBV_RATE_MAX");
}

static void test_ifinfo_fill(void)
{
	struct sluice_ipoib_desc d = {
		.ib_dev = "mlx5_0", .hwaddr = hw, .broadcast = bcast,
		.addr_len = 20, .port = 1, .pkey = 0xffff, .pkey_index = 0,
		.qkey = 0x12345678, .active_mtu = 4, .qkey_sa = false,
		.ud_csum = true, .source_qpn = true,
	};
	struct sluice_ifinfo info;

	memset(&info, 0, sizeof(info));
	tap_eq(sluice_ipoib_fill(&info, &d), 0, "fill a datagram-mode interface");
	tap_eq(info.ib_flags, SLUICE_IB_IPOIB | SLUICE_IB_UD_CSUM | SLUICE_IB_SOURCE_QPN,
	       "flags: IPoIB, UD checksum, source QPN");
	tap_eq(info.qkey, 0x0B1B, "without the SA record the default Q_Key 0x0B1B");
	tap_eq(info.qpn, 0x48, "QPN");
	tap_eq(info.ud_mtu, 2044, "UD MTU: 2048 - 4-byte IPoIB header");
	tap_eq(info.ib_port, 1, "port");
	tap_ok(!strcmp(info.ib_dev, "mlx5_0") && !info.ib_dev[63], "ib device name");
	tap_ok(!memcmp(info.gid, hw + 4, 16), "GID");
	tap_ok(info.bcast_mgid[0] == 0xff && info.bcast_mgid[1] == 0x12 &&
	       info.bcast_mgid[4] == 0xff && info.bcast_mgid[15] == 0xff,
	       "broadcast MGID FF12:401B:FFFF::FFFF:FFFF");

	d.qkey_sa = true;
	d.connected = true;
	d.active_mtu = 5;
	d.pkey = 0x8001;
	d.pkey_index = 3;
	d.ib_dev = "a-very-long-name-that-is-longer-than-the-sixty-four-bytes-of-the-field";
	memset(&info, 0, sizeof(info));
	tap_eq(sluice_ipoib_fill(&info, &d), 0, "fill a connected-mode child");
	tap_ok((info.ib_flags & (SLUICE_IB_QKEY_SA | SLUICE_IB_CONNECTED)) ==
	       (SLUICE_IB_QKEY_SA | SLUICE_IB_CONNECTED), "flags: Q_Key from SA, connected");
	tap_eq(info.qkey, 0x12345678, "the SA's Q_Key");
	tap_eq(info.ud_mtu, 4092, "UD MTU 4092");
	tap_eq(info.pkey, 0x8001, "P_Key");
	tap_eq(info.pkey_index, 3, "P_Key index");
	tap_ok(info.ib_dev[63] == 0 && strlen(info.ib_dev) == 63, "long name cut, NUL-terminated");

	/* Issue 14 item 8: mid-rejoin, ib_sa's record of the group is zero. */
	d.qkey = 0;
	memset(&info, 0, sizeof(info));
	sluice_ipoib_fill(&info, &d);
	tap_ok(!(info.ib_flags & SLUICE_IB_QKEY_SA) && info.qkey == 0x0B1B,
	       "a zero Q_Key in the SA record (a rejoin) is no answer: default 0x%x, flags 0x%x",
	       info.qkey, info.ib_flags);
	d.qkey = 0x12345678;

	/* ipoib's MTU is the broadcast group's, not the port's (RFC 4391). */
	d.active_mtu = 5;
	d.group_mtu = 4;
	memset(&info, 0, sizeof(info));
	sluice_ipoib_fill(&info, &d);
	tap_eq(info.ud_mtu, 2044, "port 4096, broadcast group 2048: UD MTU 2044 (ipoib's)");
	d.active_mtu = 4;
	d.group_mtu = 5;
	memset(&info, 0, sizeof(info));
	sluice_ipoib_fill(&info, &d);
	tap_eq(info.ud_mtu, 2044, "port 2048, group 4096: the port's 2044");
	d.group_mtu = 0;

	d.active_mtu = 0;
	memset(&info, 0, sizeof(info));
	sluice_ipoib_fill(&info, &d);
	tap_eq(info.ud_mtu, 0, "unknown port MTU: UD MTU 0");

	/* A child whose P_Key is not in the port's table (ipoib keeps it
	 * down): said so, and no index that names another partition. */
	tap_eq(info.ib_flags & SLUICE_IB_PKEY_ABSENT, 0, "a P_Key in the table is not absent");
	d.pkey = 0x8002;
	d.pkey_index = 5;
	d.pkey_absent = true;
	memset(&info, 0, sizeof(info));
	sluice_ipoib_fill(&info, &d);
	tap_ok((info.ib_flags & SLUICE_IB_PKEY_ABSENT) && info.pkey == 0x8002 &&
	       !info.pkey_index, "P_Key not in the table: flagged, index 0 (flags 0x%x, index %u)",
	       info.ib_flags, info.pkey_index);
	d.pkey_absent = false;
	d.pkey = 0x8000;
	memset(&info, 0, sizeof(info));
	sluice_ipoib_fill(&info, &d);
	tap_ok(info.ib_flags & SLUICE_IB_PKEY_ABSENT, "P_Key 0x8000 (no partition) is invalid: flagged");
	d.pkey = 0xffff;
	d.pkey_index = 0;

	d.addr_len = 6;
	memset(&info, 0, sizeof(info));
	tap_eq(sluice_ipoib_fill(&info, &d), -EINVAL, "a 6-byte address is no IPoIB");
	tap_eq(info.ib_flags, 0, "and nothing is written");
	d.addr_len = 20;
	d.port = 0;
	tap_eq(sluice_ipoib_fill(&info, &d), -EINVAL, "port 0 does not exist");
}

static void test_path_fill(void)
{
	struct sluice_path_desc p = {
		.dlid = 0x1234, .sl = 0x13, .rate = 16, .mtu = 4, .hop_limit = 0,
		.traffic_class = 0x20, .flow_label = 0xfff12345,
	};
	struct sluice_neigh_resolve res;

	memcpy(p.dgid, hw + 4, 16);
	memcpy(p.sgid, bcast + 4, 16);
	memset(&res, 0, sizeof(res));
	sluice_path_fill(&res, &p);
	tap_eq(res.dlid, 0x1234, "DLID host order");
	tap_eq(res.sl, 3, "SL is 4 bits");
	tap_eq(res.rate, 16, "rate: IBV_RATE_100_GBPS");
	tap_eq(res.mtu, 4, "MTU: IBV_MTU_2048");
	tap_eq(res.traffic_class, 0x20, "traffic class");
	tap_eq(res.flow_label, 0x12345, "flow label is 20 bits");
	tap_ok(!memcmp(res.dgid, hw + 4, 16) && !memcmp(res.sgid, bcast + 4, 16),
	       "DGID and SGID");
	p.mtu = 7;
	p.rate = 0;
	sluice_path_fill(&res, &p);
	tap_ok(res.mtu == 0 && res.rate == 0, "invalid MTU and rate codes read as 0");
}

/* The cache entry's state machine, time passed in (ttl 300, failures 5). */
static void test_path_state_machine(void)
{
	struct sluice_path_desc rec = { .dlid = 7, .sl = 1, .rate = 3, .mtu = 4 };
	struct sluice_path_state s;
	unsigned long t = 1000;

	sluice_path_init(&s, t);
	tap_eq(s.state, SLUICE_NEIGH_RES_PENDING, "new entry: pending");
	tap_ok(sluice_path_lookup(&s, t), "first lookup starts a query");
	tap_ok(s.querying, "and marks it in flight");
	tap_ok(!sluice_path_lookup(&s, t + 1), "no second query while one is in flight");
	tap_eq(s.state, SLUICE_NEIGH_RES_PENDING, "still pending");

	sluice_path_answer(&s, 0, &rec, t + 2, 300, 5);
	tap_eq(s.state, SLUICE_NEIGH_RES_VALID, "answer: valid");
	tap_ok(!s.querying && s.rec.dlid == 7 && s.answered == t + 2,
	       "record kept, query done");
	tap_ok(!sluice_path_lookup(&s, t + 301), "fresh record: no query");
	tap_ok(sluice_path_lookup(&s, t + 302), "expired record: query again");
	tap_eq(s.state, SLUICE_NEIGH_RES_VALID, "the stale record is shown meanwhile");

	sluice_path_answer(&s, -ETIMEDOUT, NULL, t + 400, 300, 5);
	tap_eq(s.state, SLUICE_NEIGH_RES_FAILED, "timeout: failed");
	tap_eq(s.status, -ETIMEDOUT, "with its error");
	tap_ok(!sluice_path_lookup(&s, t + 404), "failure remembered for 5");
	tap_eq(s.state, SLUICE_NEIGH_RES_FAILED, "and reported as failed");
	tap_ok(sluice_path_lookup(&s, t + 405), "then asked again");
	tap_eq(s.state, SLUICE_NEIGH_RES_PENDING, "pending while asked");

	sluice_path_answer(&s, 0, NULL, t + 406, 300, 5);
	tap_ok(s.state == SLUICE_NEIGH_RES_FAILED && s.status == -EHOSTUNREACH,
	       "success without a record is a failure (-EHOSTUNREACH)");

	/* Across the wrap of the clock. */
	sluice_path_init(&s, (unsigned long)-3);
	tap_ok(sluice_path_lookup(&s, (unsigned long)-3), "query at -3");
	sluice_path_answer(&s, 0, &rec, (unsigned long)-2, 300, 5);
	tap_ok(!sluice_path_lookup(&s, 200), "clock wrapped: record still fresh at 200");
	tap_ok(sluice_path_lookup(&s, 298), "and expired at 298");
}

int main(void)
{
	test_address_fields();
	test_mcast_mgid();
	test_eth_mcast();
	test_mtu_rate();
	test_ifinfo_fill();
	test_path_fill();
	test_path_state_machine();
	return tap_done();
}
