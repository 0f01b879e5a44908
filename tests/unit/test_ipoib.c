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


/*
 * RFC 4391 4: an IPv6 group's MGID, ff1S:601b:PPPP and the group's low 80
 * bits, S and the P_Key the broadcast group's (as Linux's
 * ipv6_ib_mc_map() takes them from the device's broadcast address).
 */
static void test_mc6_mgid(void)
{
	static const struct {
		const char *group;
		uint16_t pkey;
		const char *want;
	} v[] = {
		{ "ff02::1", 0xffff, "ff12:601b:ffff::1" },
		{ "ff02::1:ff00:2", 0xffff, "ff12:601b:ffff::1:ff00:2" },
		{ "ff02::1:ffab:cdef", 0x8001, "ff12:601b:8001::1:ffab:cdef" },
		/* The limited-membership P_Key 0x0001: the full member's bit set. */
		{ "ff02::2", 0x0001, "ff12:601b:8001::2" },
		/* A global group: the scope is still the broadcast group's,
		 * the low 80 bits (bytes 6..15) copied, the rest dropped. */
		{ "ff0e:1111:2222:3333:4444:5555:6666:7777", 0xffff,
		  "ff12:601b:ffff:3333:4444:5555:6666:7777" },
	};
	uint8_t bc[16], g[16], want[16], got[16];

	for (unsigned int i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sl_ipoib_bcast_mgid(bc, v[i].pkey);
		inet_pton(AF_INET6, v[i].group, g);
		inet_pton(AF_INET6, v[i].want, want);
		memset(got, 0xee, sizeof(got));
		sl_ipoib_mc6_mgid(got, g, bc);
		tap_ok(!memcmp(got, want, 16), "mc6 MGID: %s with P_Key 0x%04x is %s", v[i].group,
		       v[i].pkey, v[i].want);
	}
	/* A broadcast group of another scope (an SM may set it): taken. */
	sl_ipoib_bcast_mgid(bc, 0xffff);
	bc[1] = 0x15;
	inet_pton(AF_INET6, "ff02::1", g);
	sl_ipoib_mc6_mgid(got, g, bc);
	tap_eq(got[1], 0x15, "mc6 MGID: the broadcast group's scope (5) is the MGID's");
}

/* RFC 4391 8 and 9.2: the link-local address from the GID, and ND's
 * 24-byte link-layer address option. */
static void test_nd6(void)
{
	uint8_t hw[SL_IPOIB_HWLEN], opt[64], ll[16], want[16];
	const uint8_t *got;

	sl_ipoib_ll6(ll, gid_a);
	inet_pton(AF_INET6, "fe80::211:22ff:fe33:4455", want);
	tap_ok(!memcmp(ll, want, 16), "ll6: fe80:: and the GID's low 8 bytes, 0x02 set (already)");
	{
		uint8_t g[16] = { 0xfe, 0x80, [8] = 0x00, 0x02, 0xc9, 0x03, 0x00, 0x00, 0x00, 0x01 };

		sl_ipoib_ll6(ll, g);
		inet_pton(AF_INET6, "fe80::202:c903:0:1", want);
		tap_ok(!memcmp(ll, want, 16), "ll6: a GUID 0002:c903:0000:0001 gives fe80::202:c903:0:1");
	}
	for (int i = 0; i < SL_IPOIB_HWLEN; i++)
		hw[i] = (uint8_t)(0x10 + i);
	memset(opt, 0xee, sizeof(opt));
	sl_ipoib_nd_opt_put(opt, 1, hw);
	tap_ok(SL_IPOIB_ND_OPT_LEN == 24 && opt[0] == 1 && opt[1] == 3 && opt[2] == 0 && opt[3] == 0 &&
	       !memcmp(opt + 4, hw, 20) && opt[24] == 0xee,
	       "nd opt: type, length 3 (24 bytes), 2 bytes of padding, the 20-byte address");
	tap_ok(sl_ipoib_nd_opts(opt, 24, 1, &got) == 0 && got == opt + 4, "nd opt: found");
	tap_ok(sl_ipoib_nd_opts(opt, 24, 2, &got) == 0 && !got, "nd opt: another type: none");
	/* A nonce option (14, 8 bytes) first, then ours. */
	memmove(opt + 8, opt, 24);
	memset(opt, 0, 8);
	opt[0] = 14;
	opt[1] = 1;
	tap_ok(sl_ipoib_nd_opts(opt, 32, 1, &got) == 0 && got == opt + 12,
	       "nd opt: after another option");
	tap_eq(sl_ipoib_nd_opts(opt, 31, 1, &got), -EINVAL, "nd opt: past the message: invalid");
	opt[1] = 0;
	tap_eq(sl_ipoib_nd_opts(opt, 32, 1, &got), -EINVAL, "nd opt: length 0: invalid");
	opt[0] = 1;
	opt[1] = 1;
	tap_eq(sl_ipoib_nd_opts(opt, 32, 1, &got), -EINVAL,
	       "nd opt: an 8-byte (Ethernet) link-layer address: invalid here");
	tap_ok(sl_ipoib_nd_opts(opt, 0, 1, &got) == 0 && !got, "nd opt: no options: none");
}

int main(void)
{
	test_hwaddr_layout();
	test_bcast_mgid();
	test_rx_parse();
	test_arp();
	test_mtu();
	test_mc6_mgid();
	test_nd6();
	return tap_done();
}
