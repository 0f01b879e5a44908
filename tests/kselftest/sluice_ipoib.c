// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftests for what sluice.ko does about InfiniBand and multicast:
 * the ib_client (an rxe device added and removed shows in and goes from
 * debugfs "ib"), IFINFO's and NEIGH_RESOLVE's IPoIB fields on devices that
 * are no IPoIB (all zero) with the size rules of the grown structs, and
 * SLUICE_IOC_MCAST_JOIN / _LEAVE: argument rules and every errno, the
 * membership in the netns's /proc/net/igmp, its end at LEAVE and at the
 * stack's last close, and a multicast datagram from a kernel peer reaching
 * the stack's rings through a filter on the group.  (IPoIB matching, P_Key
 * children, path records and device removal on an InfiniBand link layer:
 * sluice_fakeib.c; tests/unit/test_kipoib.c covers their pure parts.)
 *
 *   +---- test's own netns -----+        +---- netns slk_peer_PID ----+
 *   | stack on sk0 10.77.0.1/24  | <----> | sk1 10.77.0.2/24            |
 *   | joins 239.1.2.3 (IGMP)     |  veth  | kernel UDP socket sends to  |
 *   | filter udp 239.1.2.3:40200 |        | 239.1.2.3:40200 via sk1     |
 *   | rxe device slrxe0 on sk0   |        |                             |
 *   +----------------------------+        +-----------------------------+
 *
 * Runs as root inside the test VM; the last test unloads the module.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uapi/sluice.h>

#include "kselftest_harness.h"
#include "sluice_util.h"

#define RDMA_CMD	"/usr/bin/rdma"
#define N_BUFS		16
#define BUF_SIZE	2048

#include "sluice_veth.h"
#define GROUP		0xef010203	/* 239.1.2.3 */
#define GROUP_PORT	40200
#define HDRS		(sizeof(struct iphdr) + sizeof(struct udphdr))
#define offsetofend(t, m)	(offsetof(t, m) + sizeof(((t *)0)->m))
/* The first published sizes: callers built before SLUICE_FEATURE_IPOIB. */
#define IFINFO_V1	offsetofend(struct sluice_ifinfo, name)
#define NEIGH_V1	offsetofend(struct sluice_neigh_resolve, hwaddr)

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++)
			return false;
	return true;
}

static bool all_byte(const void *p, size_t n, unsigned char b)
{
	const unsigned char *c = p;

	while (n--)
		if (*c++ != b)
			return false;
	return true;
}

/* Whether @file contains @needle. */
static bool file_has(const char *file, const char *needle)
{
	static char buf[65536];

	if (read_file(file, buf, sizeof(buf)) < 0)
		return false;
	return strstr(buf, needle) != NULL;
}

/* /proc/net/igmp prints a group as its __be32 in %08X. */
static bool igmp_has(__u32 group_be)
{
	char s[16];

	snprintf(s, sizeof(s), "%08X", group_be);
	return file_has("/proc/net/igmp", s);
}

static int mcast(int fd, unsigned long cmd, __u32 group_be,
		 struct sluice_mcast *m)
{
	memset(m, 0, sizeof(*m));
	m->size = sizeof(*m);
	m->group = group_be;
	return xioctl(fd, cmd, m);
}

static int ifinfo(int dev, __u32 ifindex, struct sluice_ifinfo *info,
		  __u32 size)
{
	memset(info, 0, sizeof(*info));
	info->size = size;
	info->ifindex = ifindex;
	return xioctl(dev, SLUICE_IOC_IFINFO, info);
}

TEST(abi_struct_layouts)
{
	EXPECT_EQ(148, IFINFO_V1);
	EXPECT_EQ(148, offsetof(struct sluice_ifinfo, ib_flags));
	EXPECT_EQ(156, offsetof(struct sluice_ifinfo, ib_dev));
	EXPECT_EQ(236, offsetof(struct sluice_ifinfo, gid));
	EXPECT_EQ(268, sizeof(struct sluice_ifinfo));
	EXPECT_EQ(56, NEIGH_V1);
	EXPECT_EQ(56, offsetof(struct sluice_neigh_resolve, path_state));
	EXPECT_EQ(108, sizeof(struct sluice_neigh_resolve));
	EXPECT_EQ(48, sizeof(struct sluice_mcast));
	EXPECT_EQ(16, offsetof(struct sluice_mcast, hwaddr));
}

/* The module says what it implements: both features, in VERSION and sysfs. */
TEST(features_advertised)
{
	struct sluice_version v = { .size = sizeof(v) };
	char buf[64];
	int dev;

	ASSERT_EQ(0, ensure_loaded());
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, xioctl(dev, SLUICE_IOC_VERSION, &v));
	EXPECT_TRUE(v.features & SLUICE_FEATURE_IPOIB);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_MCAST);
	ASSERT_LT(0, read_file("/sys/class/misc/sluice/features", buf,
			       sizeof(buf)));
	EXPECT_EQ(v.features, strtoull(buf, NULL, 0));
	close(dev);
}

/*
 * A netdev of type InfiniBand that no ib device owns (a tun device whose
 * link type is set to ARPHRD_INFINIBAND, no 20-byte address): IFINFO's,
 * NEIGH_RESOLVE's and MCAST_JOIN's IPoIB branches run and find no IPoIB.
 */
TEST(infiniband_type_without_ib_device)
{
	struct sluice_stack_create c;
	struct sluice_neigh_resolve r;
	struct sluice_ifinfo info;
	struct sluice_mcast m;
	struct ifreq ifr;
	int tfd, dev, fd, i;
	__u32 ifindex;

	ASSERT_EQ(0, ensure_loaded());
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	tfd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (tfd < 0)
		SKIP(return, "no /dev/net/tun");
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	strcpy(ifr.ifr_name, "slib0");
	ASSERT_EQ(0, ioctl(tfd, TUNSETIFF, &ifr));
	ASSERT_EQ(0, ioctl(tfd, TUNSETLINK, ARPHRD_INFINIBAND));
	ASSERT_EQ(0, run(IP_CMD " addr add 10.78.0.1/24 dev slib0"));
	ASSERT_EQ(0, run(IP_CMD " link set slib0 up"));
	ifindex = if_nametoindex("slib0");
	ASSERT_NE(0, ifindex);
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);

	memset(&info, 0xaa, sizeof(info));
	info.size = sizeof(info);
	info.flags = 0;
	info.reserved0 = 0;
	info.ifindex = ifindex;
	ASSERT_EQ(0, xioctl(dev, SLUICE_IOC_IFINFO, &info));
	EXPECT_EQ(ARPHRD_INFINIBAND, info.type);
	EXPECT_EQ(0, info.ib_flags);
	EXPECT_TRUE(all_zero(&info.ib_flags,
			     sizeof(info) - offsetof(struct sluice_ifinfo, ib_flags)));

	fd = stack_create(dev, "t_ib_tun", ifindex, &c);
	ASSERT_LE(0, fd);
	/* No ARP on tun: the neighbour is valid at once, with no address. */
	for (i = 0; i < 100; i++) {
		memset(&r, 0, sizeof(r));
		r.size = sizeof(r);
		r.addr = htonl(0x0a4e0002);
		ASSERT_EQ(0, xioctl(fd, SLUICE_IOC_NEIGH_RESOLVE, &r));
		if (r.state == SLUICE_NEIGH_RES_VALID)
			break;
		usleep(10000);
	}
	EXPECT_EQ(SLUICE_NEIGH_RES_VALID, r.state);
	EXPECT_EQ(0, r.path_state);
	EXPECT_EQ(0, r.qpn);

	memset(&m, 0xee, sizeof(m));
	m.size = sizeof(m);
	m.flags = 0;
	memset(m.reserved, 0, sizeof(m.reserved));
	m.group = htonl(GROUP);
	ASSERT_EQ(0, xioctl(fd, SLUICE_IOC_MCAST_JOIN, &m));
	EXPECT_EQ(0, m.addr_len);
	EXPECT_TRUE(all_zero(m.hwaddr, sizeof(m.hwaddr)));
	EXPECT_TRUE(igmp_has(htonl(GROUP)));
	close(fd);
	EXPECT_FALSE(igmp_has(htonl(GROUP)));
	close(dev);
	close(tfd);
}


FIXTURE_SETUP(veth)
{
	veth_up(_metadata, self, "t_ib");
}

FIXTURE_TEARDOWN(veth)
{
	veth_down(_metadata, self);
}

/* An Ethernet device: the IPoIB part is there, all zero, whatever came in. */
TEST_F(veth, ifinfo_ethernet_ib_fields_zero)
{
	struct sluice_ifinfo info;

	memset(&info, 0xaa, sizeof(info));
	info.size = sizeof(info);
	info.flags = 0;
	info.reserved0 = 0;
	info.ifindex = self->ifindex;
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_IFINFO, &info));
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_EQ(1, info.type);	/* ARPHRD_ETHER */
	EXPECT_EQ(6, info.addr_len);
	EXPECT_EQ(0, info.ib_flags);
	EXPECT_TRUE(all_zero(&info.ib_flags,
			     sizeof(info) - offsetof(struct sluice_ifinfo, ib_flags)));
	EXPECT_EQ(0, strcmp(info.name, "sk0"));
}

/* A caller of the first size gets just that; the rest of its buffer stays. */
TEST_F(veth, ifinfo_old_size_truncated)
{
	unsigned char big[sizeof(struct sluice_ifinfo) + 8];
	struct sluice_ifinfo *b = (struct sluice_ifinfo *)big;
	struct sluice_ifinfo info;

	memset(&info, 0x5c, sizeof(info));
	info.size = IFINFO_V1;
	info.flags = 0;
	info.reserved0 = 0;
	info.ifindex = self->ifindex;
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_IFINFO, &info));
	EXPECT_EQ(IFINFO_V1, info.size);
	EXPECT_EQ(0, strcmp(info.name, "sk0"));
	EXPECT_TRUE(all_byte(&info.ib_flags, sizeof(info) - IFINFO_V1, 0x5c));

	EXPECT_EQ(-EINVAL, ifinfo(self->dev, self->ifindex, &info, IFINFO_V1 - 1));
	/* A newer caller's bytes past what the module knows must be zero. */
	memset(big, 0, sizeof(big));
	b->size = sizeof(big);
	b->ifindex = self->ifindex;
	EXPECT_EQ(0, xioctl(self->dev, SLUICE_IOC_IFINFO, big));
	EXPECT_EQ(sizeof(info), b->size);
	big[sizeof(info) + 3] = 1;
	b->size = sizeof(big);
	EXPECT_EQ(-E2BIG, xioctl(self->dev, SLUICE_IOC_IFINFO, big));
}

/* Ethernet neighbours have no path record: path fields zero, old size works. */
TEST_F(veth, neigh_resolve_ethernet_no_path)
{
	struct sluice_neigh_resolve r;
	int i;

	for (i = 0; i < 300; i++) {
		memset(&r, 0xaa, sizeof(r));
		r.size = sizeof(r);
		r.flags = 0;
		memset(r.reserved, 0, sizeof(r.reserved));
		r.addr = self->peer_addr;
		ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_NEIGH_RESOLVE, &r));
		if (r.state == SLUICE_NEIGH_RES_VALID)
			break;
		usleep(10000);
	}
	ASSERT_EQ(SLUICE_NEIGH_RES_VALID, r.state);
	EXPECT_EQ(6, r.addr_len);
	EXPECT_EQ(sizeof(r), r.size);
	EXPECT_EQ(0, r.path_state);
	EXPECT_TRUE(all_zero(&r.path_state,
			     sizeof(r) - offsetof(struct sluice_neigh_resolve,
						  path_state)));

	memset(&r, 0x77, sizeof(r));
	r.size = NEIGH_V1;
	r.flags = 0;
	memset(r.reserved, 0, sizeof(r.reserved));
	r.addr = self->peer_addr;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_NEIGH_RESOLVE, &r));
	EXPECT_EQ(NEIGH_V1, r.size);
	EXPECT_EQ(SLUICE_NEIGH_RES_VALID, r.state);
	EXPECT_TRUE(all_byte(&r.path_state, sizeof(r) - NEIGH_V1, 0x77));
}

/* Every argument error of JOIN and LEAVE, by errno. */
TEST_F(veth, mcast_bad_args)
{
	struct sluice_stack_create c;
	struct sluice_mcast m;
	int nodev;

	memset(&m, 0, sizeof(m));
	m.size = offsetofend(struct sluice_mcast, hwaddr) - 1;
	m.group = htonl(GROUP);
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_MCAST_JOIN, &m));
	m.size = sizeof(m);
	m.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_MCAST_JOIN, &m));
	m.flags = 0;
	m.reserved[2] = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_MCAST_JOIN, &m));
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_MCAST_LEAVE, &m));
	EXPECT_EQ(-EINVAL, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
				 htonl(0x0a4d0002), &m));
	EXPECT_EQ(-EINVAL, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
				 htonl(0xf0000001), &m));	/* 240.0.0.1 */
	EXPECT_EQ(-EINVAL, mcast(self->fd, SLUICE_IOC_MCAST_JOIN, 0, &m));
	EXPECT_EQ(-ENOENT, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE,
				 htonl(GROUP), &m));
	/* On /dev/sluice these are no commands. */
	EXPECT_EQ(-ENOTTY, mcast(self->dev, SLUICE_IOC_MCAST_JOIN,
				 htonl(GROUP), &m));

	/* A stack without a device has nothing to join on. */
	nodev = stack_create(self->dev, "t_ib_nodev", 0, &c);
	ASSERT_LE(0, nodev);
	EXPECT_EQ(-ENODEV, mcast(nodev, SLUICE_IOC_MCAST_JOIN, htonl(GROUP), &m));
	close(nodev);
	EXPECT_FALSE(igmp_has(htonl(GROUP)));
}

/* JOIN: the netns's device is a member; LEAVE and close end it. */
TEST_F(veth, mcast_join_leave_igmp)
{
	static const __u8 mac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	struct sluice_mcast m;
	char path[128];

	EXPECT_FALSE(igmp_has(htonl(GROUP)));
	memset(&m, 0xff, sizeof(m));
	m.size = sizeof(m);
	m.flags = 0;
	memset(m.reserved, 0, sizeof(m.reserved));
	m.group = htonl(GROUP);
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_MCAST_JOIN, &m));
	EXPECT_EQ(sizeof(m), m.size);
	EXPECT_EQ(6, m.addr_len);
	EXPECT_EQ(0, memcmp(m.hwaddr, mac, 6));
	EXPECT_TRUE(all_zero(m.hwaddr + 6, sizeof(m.hwaddr) - 6));
	EXPECT_TRUE(igmp_has(htonl(GROUP)));
	snprintf(path, sizeof(path), DEBUGFS_DIR "/stacks/%s", self->dir);
	EXPECT_TRUE(file_has(path, "mcast_group 239.1.2.3 ifindex"));
	EXPECT_TRUE(file_has(path, "mcast 1\n"));

	EXPECT_EQ(-EALREADY, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
				   htonl(GROUP), &m));
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE, htonl(GROUP), &m));
	EXPECT_EQ(6, m.addr_len);
	EXPECT_FALSE(igmp_has(htonl(GROUP)));
	EXPECT_TRUE(file_has(path, "mcast 0\n"));
	EXPECT_EQ(-ENOENT, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE,
				 htonl(GROUP), &m));

	/* The stack's last file takes its groups with it. */
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN, htonl(GROUP), &m));
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
			   htonl(0xe00000fb), &m));	/* 224.0.0.251 */
	EXPECT_TRUE(igmp_has(htonl(GROUP)));
	/* The mapping holds the file too: the last of both is the end. */
	munmap(self->region, self->c.region_size);
	self->region = NULL;
	EXPECT_TRUE(igmp_has(htonl(GROUP)));
	close(self->fd);
	self->fd = -1;
	EXPECT_FALSE(igmp_has(htonl(GROUP)));
	EXPECT_FALSE(igmp_has(htonl(0xe00000fb)));
}

/*
 * The device goes with groups joined: JOIN is -ENODEV, LEAVE still lets
 * a group go (no link address left to report), and the stack closes
 * holding the other (teardown; the kernel log is checked after the run).
 */
TEST_F(veth, mcast_device_deleted)
{
	struct sluice_mcast m;

	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN, htonl(GROUP), &m));
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
			   htonl(0xef060606), &m));
	ASSERT_EQ(0, run(IP_CMD " link del sk0"));
	EXPECT_FALSE(igmp_has(htonl(GROUP)));
	EXPECT_EQ(-ENODEV, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
				 htonl(0xef050505), &m));
	EXPECT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE, htonl(GROUP), &m));
	EXPECT_EQ(0, m.addr_len);
	EXPECT_TRUE(all_zero(m.hwaddr, sizeof(m.hwaddr)));
	EXPECT_EQ(-ENOENT, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE,
				 htonl(GROUP), &m));
}

/* SLUICE_MCAST_MAX groups a stack, then -ENOSPC; a leave makes room. */
TEST_F(veth, mcast_max_groups)
{
	struct sluice_mcast m;
	__u32 i;

	for (i = 0; i < SLUICE_MCAST_MAX; i++)
		ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
				   htonl(0xef020000 + i), &m));
	EXPECT_EQ(-ENOSPC, mcast(self->fd, SLUICE_IOC_MCAST_JOIN,
				 htonl(0xef030000), &m));
	EXPECT_FALSE(igmp_has(htonl(0xef030000)));
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE, htonl(0xef020005), &m));
	EXPECT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN, htonl(0xef030000), &m));
	EXPECT_TRUE(igmp_has(htonl(0xef020000 + SLUICE_MCAST_MAX - 1)));
}

/* Groups are per stack: two stacks on one device join the same group. */
TEST_F(veth, mcast_two_stacks)
{
	struct sluice_stack_create c;
	struct sluice_mcast m;
	int fd2;

	fd2 = stack_create(self->dev, "t_ib2", self->ifindex, &c);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN, htonl(GROUP), &m));
	ASSERT_EQ(0, mcast(fd2, SLUICE_IOC_MCAST_JOIN, htonl(GROUP), &m));
	EXPECT_EQ(-ENOENT, mcast(fd2, SLUICE_IOC_MCAST_LEAVE,
				 htonl(0xef090909), &m));
	close(fd2);
	/* The first stack's membership is its own and stays. */
	EXPECT_TRUE(igmp_has(htonl(GROUP)));
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_LEAVE, htonl(GROUP), &m));
	EXPECT_FALSE(igmp_has(htonl(GROUP)));
}

static __u32 rx_wait(struct sluice_kring *k, __u32 n, int timeout_ms)
{
	int waited;

	for (waited = 0; waited < timeout_ms; waited += 10) {
		if (__atomic_load_n(&k->rx.prod, __ATOMIC_ACQUIRE) - k->rx.cons >= n)
			break;
		usleep(10000);
	}
	return __atomic_load_n(&k->rx.prod, __ATOMIC_ACQUIRE) - k->rx.cons;
}

/* A UDP socket in the peer's netns that sends multicast out of sk1. */
static int peer_mcast_socket(int self_ns, int peer_ns, __u32 addr)
{
	struct ip_mreqn mreq = { .imr_address.s_addr = addr };
	int s = -1, ret;

	if (setns(peer_ns, CLONE_NEWNET))
		return -errno;
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	mreq.imr_ifindex = if_nametoindex("sk1");
	ret = s < 0 ? -errno : 0;
	if (!ret && setsockopt(s, IPPROTO_IP, IP_MULTICAST_IF, &mreq,
			       sizeof(mreq)))
		ret = -errno;
	if (setns(self_ns, CLONE_NEWNET) && !ret)
		ret = -errno;
	if (ret && s >= 0)
		close(s);
	return ret ? ret : s;
}

/* A kernel peer's datagram to the group reaches the stack's rings by its filter. */
TEST_F(veth, mcast_rx_through_kring)
{
	struct sluice_kring_setup s = { .size = sizeof(s) };
	struct sluice_filter f = { .size = sizeof(f) };
	struct sockaddr_in to = {
		.sin_family = AF_INET, .sin_port = htons(GROUP_PORT),
		.sin_addr.s_addr = htonl(GROUP),
	};
	unsigned char payload[200], *pkt;
	struct sluice_kring_rx *d;
	struct sluice_kring *k;
	struct sluice_mcast m;
	__u32 i, group = htonl(GROUP);
	int ps;

	s.flags = SLUICE_KRING_CREATE;
	s.rx_entries = 8;
	s.tx_entries = 8;
	s.tx_slot_size = 2048;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_KRING_SETUP, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	for (i = 0; i < 8; i++) {
		((__u32 *)((char *)k + k->fill_off))[i] = i;
	}
	__atomic_store_n(&k->fill.prod, 8, __ATOMIC_RELEASE);

	f.protocol = IPPROTO_UDP;
	f.laddr = group;
	f.lport = htons(GROUP_PORT);
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_FILTER_ADD, &f));
	ASSERT_EQ(0, mcast(self->fd, SLUICE_IOC_MCAST_JOIN, group, &m));

	ps = peer_mcast_socket(self->self_ns, self->peer_ns, self->peer_addr);
	ASSERT_LE(0, ps);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i * 7;
	ASSERT_EQ((ssize_t)sizeof(payload),
		  sendto(ps, payload, sizeof(payload), 0,
			 (struct sockaddr *)&to, sizeof(to)));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	d = (struct sluice_kring_rx *)((char *)k + k->rx_off);
	EXPECT_EQ(HDRS + sizeof(payload), d->len);
	pkt = self->region + self->c.bufdata_off + d->buf_idx * BUF_SIZE +
	      SLUICE_KRING_RX_HEADROOM;
	EXPECT_EQ(0, memcmp(pkt + 12, &self->peer_addr, 4));
	EXPECT_EQ(0, memcmp(pkt + 16, &group, 4));
	EXPECT_EQ(GROUP_PORT, (pkt[22] << 8) | pkt[23]);
	EXPECT_EQ(0, memcmp(pkt + HDRS, payload, sizeof(payload)));

	/* Another port of the group has no filter: it goes to the kernel. */
	to.sin_port = htons(GROUP_PORT + 1);
	ASSERT_EQ((ssize_t)sizeof(payload),
		  sendto(ps, payload, sizeof(payload), 0,
			 (struct sockaddr *)&to, sizeof(to)));
	usleep(200000);
	EXPECT_EQ(1, rx_wait(k, 2, 10));
	close(ps);
	munmap(k, s.mmap_size);
}

/* The rxe device whose links an ib_client sees come and go. */
static bool ib_list_has(const char *name)
{
	char needle[64];

	snprintf(needle, sizeof(needle), "ibdev %s ", name);
	return file_has(DEBUGFS_DIR "/ib", needle);
}

static long long ib_count(const char *key)
{
	char buf[65536], *p;

	if (read_file(DEBUGFS_DIR "/ib", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, key);
	return p ? strtoll(p + strlen(key) + 1, NULL, 0) : -1;
}

/*
 * Soft-RoCE: `rdma link add` makes an ib device, which the module's
 * ib_client is told about (debugfs "ib"), and `rdma link delete` removes
 * it.  An rxe port is RoCE (Ethernet link layer): no IPoIB for IFINFO.
 */
TEST_F(veth, ib_client_sees_rxe)
{
	struct sluice_ifinfo info;
	long long adds, removes;
	int i;

	if (access(RDMA_CMD, X_OK) || access("/sys/module/rdma_rxe", F_OK))
		SKIP(return, "no rdma tool or rdma_rxe module");
	adds = ib_count("adds");
	removes = ib_count("removes");
	ASSERT_LE(0, adds);
	EXPECT_FALSE(ib_list_has("slrxe0"));
	ASSERT_EQ(0, run(RDMA_CMD " link add slrxe0 type rxe netdev sk0"));
	for (i = 0; i < 100 && !ib_list_has("slrxe0"); i++)
		usleep(20000);
	EXPECT_TRUE(ib_list_has("slrxe0"));
	EXPECT_EQ(adds + 1, ib_count("adds"));
	EXPECT_TRUE(file_has(DEBUGFS_DIR "/ib", "port 1 link_layer ethernet"));

	ASSERT_EQ(0, ifinfo(self->dev, self->ifindex, &info, sizeof(info)));
	EXPECT_EQ(0, info.ib_flags);
	EXPECT_EQ(0, info.ib_port);
	EXPECT_EQ(0, info.ib_dev[0]);

	ASSERT_EQ(0, run(RDMA_CMD " link delete slrxe0"));
	for (i = 0; i < 100 && ib_list_has("slrxe0"); i++)
		usleep(20000);
	EXPECT_FALSE(ib_list_has("slrxe0"));
	EXPECT_EQ(removes + 1, ib_count("removes"));
	EXPECT_TRUE(file_has(DEBUGFS_DIR "/ib_paths", "paths 0 max"));
}

/* Its own fixture, registered last, so that it runs after the veth tests. */
FIXTURE(end) {
	int unused;
};

FIXTURE_SETUP(end)
{
}

FIXTURE_TEARDOWN(end)
{
}

/* No stack, file or group left: the module (and its ib client) unloads. */
TEST_F(end, unload)
{
	int i, ret = -EBUSY;

	if (!module_loaded())
		SKIP(return, "module not loaded");
	for (i = 0; i < 50 && ret; i++) {
		ret = unload_module();
		if (ret)
			usleep(100000);
	}
	EXPECT_EQ(0, ret);
}

TEST_HARNESS_MAIN
