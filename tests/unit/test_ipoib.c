// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPoIB wire formats (lib/link/ipoib.c), no device needed: the 20-byte hardware
 * address (flags, QPN bytes, GID), the broadcast MGID from a P_Key, the
 * 4-byte header, GRH stripping of a UD receive, ARP with hardware type 32
 * (build, check, every malformed field refused), and the UD MTU.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "link/ipoib.h"
#include "core/wire.h"
#include "tap.h"

static const uint8_t gid_a[16] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55
};

static void test_hwaddr_layout(void)
{
	struct sl_ipoib_addr a = { .qpn = 0x123456, .flags = 0x80 }, b;
	uint8_t hw[SL_IPOIB_HWLEN];

	memcpy(a.gid, gid_a, 16);
	memset(hw, 0xee, sizeof(hw));
	sl_ipoib_hw_encode(hw, &a);
	tap_eq(hw[0], 0x80, "hwaddr: byte 0 is the flags");
	tap_ok(hw[1] == 0x12 && hw[2] == 0x34 && hw[3] == 0x56,
	       "hwaddr: bytes 1..3 are the QPN, most significant first");
	tap_ok(!memcmp(hw + 4, gid_a, 16), "hwaddr: bytes 4..19 are the GID");
	memset(&b, 0, sizeof(b));
	sl_ipoib_hw_decode(hw, &b);
	tap_eq(b.qpn, 0x123456, "hwaddr: QPN decodes");
	tap_eq(b.flags, 0x80, "hwaddr: flags decode");
	tap_ok(!memcmp(b.gid, gid_a, 16), "hwaddr: GID decodes");
	a.qpn = 0xffffff;
	sl_ipoib_hw_encode(hw, &a);
	sl_ipoib_hw_decode(hw, &b);
	tap_eq(b.qpn, 0xffffff, "hwaddr: the largest 24-bit QPN round-trips");
}

static void test_bcast_mgid(void)
{
	static const uint8_t want_ffff[16] = {
		0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff
	};
	static const uint8_t want_8001[16] = {
		0xff, 0x12, 0x40, 0x1b, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff
	};
	uint8_t m[16];

	sl_ipoib_bcast_mgid(m, 0xffff);
	tap_ok(!memcmp(m, want_ffff, 16), "mgid: default P_Key gives ff12:401b:ffff::ffff:ffff");
	sl_ipoib_bcast_mgid(m, 0x0001);
	tap_ok(!memcmp(m, want_8001, 16),
	       "mgid: a limited-member P_Key gets its full-membership bit (0x8001)");
}

static void test_rx_parse(void)
{
	uint8_t frame[128];
	uint32_t plen = 0;
	int type;

	memset(frame, 0, sizeof(frame));
	memcpy(frame + 8, gid_a, 16);		/* GRH source GID */
	sl_ipoib_hdr_put(frame + SL_IPOIB_GRH_LEN, ETHERTYPE_IP_);
	tap_ok(frame[40] == 0x08 && frame[41] == 0x00 && !frame[42] && !frame[43],
	       "header: ethertype 0x0800, reserved zero");
	type = sl_ipoib_rx_parse(frame, 40 + 4 + 60, &plen);
	tap_eq(type, ETHERTYPE_IP_, "rx: GRH skipped, ethertype read");
	tap_eq(plen, 60, "rx: payload is byte_len - 40 - 4");
	tap_ok(!memcmp(sl_ipoib_grh_sgid(frame), gid_a, 16), "rx: GRH source GID at bytes 8..23");
	tap_eq(sl_ipoib_rx_parse(frame, 43, &plen), -EINVAL, "rx: shorter than GRH + header refused");
	tap_eq(sl_ipoib_rx_parse(frame, 44, &plen), ETHERTYPE_IP_, "rx: GRH + header alone is empty");
	tap_eq(plen, 0, "rx: empty payload");
	frame[43] = 1;
	tap_eq(sl_ipoib_rx_parse(frame, 100, &plen), -EINVAL, "rx: non-zero reserved half refused");
	sl_ipoib_hdr_put(frame + SL_IPOIB_GRH_LEN, ETHERTYPE_ARP_);
	tap_eq(sl_ipoib_rx_parse(frame, 100, &plen), ETHERTYPE_ARP_, "rx: ARP ethertype");
}

static void test_arp(void)
{
	struct sl_ipoib_addr a = { .qpn = 0xabcdef };
	uint8_t sha[SL_IPOIB_HWLEN], tha[SL_IPOIB_HWLEN], buf[64];
	struct sl_ipoib_arp *p = (struct sl_ipoib_arp *)buf;
	uint32_t spa = htonl(0x0a070001), tpa = htonl(0x0a070002);
	size_t len;

	tap_eq(sizeof(struct sl_ipoib_arp), 56, "arp: 8 + 2 * (20 + 4) bytes");
	memcpy(a.gid, gid_a, 16);
	sl_ipoib_hw_encode(sha, &a);
	memset(buf, 0x5a, sizeof(buf));
	len = sl_ipoib_arp_build(buf, 1, sha, spa, NULL, tpa);
	tap_eq(len, 56, "arp: request length");
	tap_ok(buf[0] == 0 && buf[1] == 32, "arp: hardware type 32 (ARPHRD_INFINIBAND)");
	tap_ok(buf[2] == 0x08 && buf[3] == 0x00 && buf[4] == 20 && buf[5] == 4,
	       "arp: protocol IPv4, hlen 20, plen 4");
	tap_ok(buf[6] == 0 && buf[7] == 1, "arp: op 1 (request)");
	tap_ok(!memcmp(buf + 8, sha, 20), "arp: sender hardware address at 8");
	tap_ok(!memcmp(buf + 28, &spa, 4), "arp: sender IP at 28");
	tap_ok(!memcmp(buf + 32, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 20),
	       "arp: request's target hardware address zero");
	tap_ok(!memcmp(buf + 52, &tpa, 4), "arp: target IP at 52");
	tap_eq(sl_ipoib_arp_check(buf, len), 0, "arp: a request checks");
	tap_eq(sl_ipoib_arp_check(buf, len - 1), -EINVAL, "arp: one byte short refused");

	memcpy(tha, sha, sizeof(tha));
	tha[3] ^= 1;
	len = sl_ipoib_arp_build(buf, 2, sha, spa, tha, tpa);
	tap_ok(!memcmp(p->tha, tha, 20) && p->op == htons(2), "arp: reply carries the target address");
	tap_eq(sl_ipoib_arp_check(buf, len), 0, "arp: a reply checks");

	p->htype = htons(1);
	tap_eq(sl_ipoib_arp_check(buf, len), -EINVAL, "arp: Ethernet hardware type refused");
	p->htype = htons(SL_ARPHRD_INFINIBAND);
	p->hlen = 6;
	tap_eq(sl_ipoib_arp_check(buf, len), -EINVAL, "arp: 6-byte hardware length refused");
	p->hlen = 20;
	p->ptype = htons(0x86dd);
	tap_eq(sl_ipoib_arp_check(buf, len), -EINVAL, "arp: non-IPv4 protocol refused");
	p->ptype = htons(ETHERTYPE_IP_);
	p->plen = 16;
	tap_eq(sl_ipoib_arp_check(buf, len), -EINVAL, "arp: protocol length 16 refused");
	p->plen = 4;
	p->op = htons(3);
	tap_eq(sl_ipoib_arp_check(buf, len), -EINVAL, "arp: op 3 (RARP) refused");
}

static void test_mtu(void)
{
	/* enum ibv_mtu: IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 */
	tap_eq(sl_ipoib_ib_mtu_bytes(1), 256, "mtu: enum 1 is 256");
	tap_eq(sl_ipoib_ib_mtu_bytes(3), 1024, "mtu: enum 3 is 1024");
	tap_eq(sl_ipoib_ib_mtu_bytes(5), 4096, "mtu: enum 5 is 4096");
	tap_eq(sl_ipoib_ud_mtu(4), 2044, "mtu: UD over 2048 is 2044");
	tap_eq(sl_ipoib_ud_mtu(5), 4092, "mtu: UD over 4096 is 4092");
	tap_eq(sl_ipoib_ud_mtu(3), 1020, "mtu: UD over 1024 is 1020");
	tap_eq(sl_ipoib_ud_mtu(0), 0, "mtu: enum 0 is no MTU");
	tap_eq(sl_ipoib_ud_mtu(6), 0, "mtu: enum 6 is no MTU");
}

int main(void)
{
	test_hwaddr_layout();
	test_bcast_mgid();
	test_rx_parse();
	test_arp();
	test_mtu();
	return tap_done();
}
