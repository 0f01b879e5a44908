// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftests for the kring queue of sluice.ko: SLUICE_IOC_KRING_SETUP and
 * _KICK argument rules, the RLIMIT_MEMLOCK charge, the mapping at
 * SLUICE_MMAP_KRING, the module's distrust of every index and length user
 * space writes in the rings, wakeups, and real traffic: UDP both ways
 * (ARP through the neighbour layer on tx), UDP GSO and TCP TSO from the
 * kernel segmented on the way in, concurrent receivers, and the device
 * going away (deleted, moved, its peer's namespace torn down).  IPv6
 * (SLUICE_FEATURE_IPV6) likewise: UDP both ways (Neighbour Discovery, the
 * kernel's, on tx), UDP GSO, a TCP connection with TSO from the peer,
 * bad IPv6 tx descriptors counted.  Both families: the fragments of a
 * steered datagram and the ICMP errors quoting a steered packet reach the
 * ring (SLUICE_FEATURE_ERRFRAG), malformed ones and the rest the kernel.
 *
 *   lo tests: a network namespace of the test's own, the stack on lo
 *
 *   veth tests:
 *   +---- test's own netns ----+        +---- netns slk_peer_PID ----+
 *   | stack on sk0 10.77.0.1/24 | <----> | sk1 10.77.0.2/24            |
 *   |  (IPv6 tests: fd77::1/64) |        |  (fd77::2/64)               |
 *   | rings: rx, fill, tx       |  veth  | kernel UDP sockets (peer)   |
 *   +---------------------------+        +-----------------------------+
 *
 * Packets reach a stack's rings through its filters: steer() adds them
 * (SLUICE_IOC_FILTER_ADD; tests/kselftest/sluice_filter.c tests filters).
 * Runs as root inside the test VM; the last test unloads the module.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uapi/sluice.h>

#include "kselftest_harness.h"
#include "sluice_util.h"

#define SYSFS_STACKS	"/sys/class/misc/sluice/stacks"
#define N_BUFS		16
#define BUF_SIZE	2048

#include "sluice_veth.h"
#define STEERED_PORT	40123
#define HDRS		(sizeof(struct iphdr) + sizeof(struct udphdr))
#define NOBODY		65534

#ifndef UDP_SEGMENT
#define UDP_SEGMENT	103
#endif

/*
 * Steer UDP and TCP to local @port (any local address) into the stack of
 * @fd: two 3-tuple filters, which also reserve the port in the kernel.  A
 * test whose steering cannot be set up fails at once.
 */
static void steer(int fd, __u16 port)
{
	static const __u8 protos[] = { IPPROTO_UDP, IPPROTO_TCP };
	struct sluice_filter f;
	size_t i;

	for (i = 0; i < sizeof(protos); i++) {
		memset(&f, 0, sizeof(f));
		f.size = sizeof(f);
		f.protocol = protos[i];
		f.lport = htons(port);
		if (ioctl(fd, SLUICE_IOC_FILTER_ADD, &f)) {
			fprintf(stderr, "# steer: FILTER_ADD %u/%u: %s\n",
				protos[i], port, strerror(errno));
			_exit(1);
		}
	}
}

/* A stack of N_BUFS buffers of BUF_SIZE on @ifindex: its fd, or -errno. */
static void setup_args(struct sluice_kring_setup *s, __u32 flags, __u32 rx,
		       __u32 tx, __u32 slot)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->flags = flags;
	s->rx_entries = rx;
	s->tx_entries = tx;
	s->tx_slot_size = slot;
}

static int kring_setup(int fd, __u32 flags, __u32 rx, __u32 tx, __u32 slot,
		       struct sluice_kring_setup *s)
{
	setup_args(s, flags, rx, tx, slot);
	return xioctl(fd, SLUICE_IOC_KRING_SETUP, s);
}

/* KICK: -errno, or the entries consumed. */
static int kick(int fd)
{
	struct sluice_kring_kick k = { .size = sizeof(k) };
	int ret = xioctl(fd, SLUICE_IOC_KRING_KICK, &k);

	return ret ? ret : (int)k.sent;
}

static struct sluice_kring_rx *rx_desc(struct sluice_kring *k, __u32 i)
{
	return (struct sluice_kring_rx *)((char *)k + k->rx_off) +
		(i & (k->rx_entries - 1));
}

static __u32 *fill_entry(struct sluice_kring *k, __u32 i)
{
	return (__u32 *)((char *)k + k->fill_off) + (i & (k->rx_entries - 1));
}

static struct sluice_kring_tx *tx_desc(struct sluice_kring *k, __u32 i)
{
	return (struct sluice_kring_tx *)((char *)k + k->tx_off) +
		(i & (k->tx_entries - 1));
}

static unsigned char *tx_slot(struct sluice_kring *k, __u32 i)
{
	return (unsigned char *)k + k->tx_slots_off +
		(size_t)(i & (k->tx_entries - 1)) * k->tx_slot_size;
}

/* Give the module buffer @idx to receive into. */
static void fill_put(struct sluice_kring *k, __u32 idx)
{
	__u32 p = k->fill.prod;

	*fill_entry(k, p) = idx;
	__atomic_store_n(&k->fill.prod, p + 1, __ATOMIC_RELEASE);
}

/* Put @len bytes on the tx ring for @nexthop (network order). */
static void tx_put(struct sluice_kring *k, const void *pkt, __u32 len,
		   __u32 nexthop)
{
	__u32 p = k->tx.prod;
	struct sluice_kring_tx *d = tx_desc(k, p);

	memcpy(tx_slot(k, p), pkt, len);
	d->len = len;
	d->nexthop = nexthop;
	d->flags = 0;
	d->reserved = 0;
	__atomic_store_n(&k->tx.prod, p + 1, __ATOMIC_RELEASE);
}

/* Put the IPv6 packet @pkt on the tx ring (SLUICE_KRING_TX_IPV6). */
static void tx_put6(struct sluice_kring *k, const void *pkt, __u32 len)
{
	tx_put(k, pkt, len, 0);
	tx_desc(k, k->tx.prod - 1)->flags = SLUICE_KRING_TX_IPV6;
}

/* Wait (bounded) until the rx ring holds @n packets; returns how many. */
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

/* Wait (bounded) until the counter reaches @want; returns its value. */
static __u64 ctr_wait(const __u64 *ctr, __u64 want)
{
	int waited;

	for (waited = 0; waited < 2000; waited += 10) {
		if (__atomic_load_n(ctr, __ATOMIC_RELAXED) >= want)
			break;
		usleep(10000);
	}
	return __atomic_load_n(ctr, __ATOMIC_RELAXED);
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __u32 csum_add(__u32 sum, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (p[i] << 8) | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

/* An IPv4 + UDP packet with both checksums; returns its length. */
static size_t build_udp(unsigned char *pkt, __u32 saddr, __u16 sport,
			__u32 daddr, __u16 dport, const void *payload,
			size_t plen)
{
	struct iphdr *ip = (struct iphdr *)pkt;
	struct udphdr *uh = (struct udphdr *)(pkt + sizeof(*ip));
	unsigned char pseudo[12];
	__u16 ulen = sizeof(*uh) + plen;
	__u32 sum;

	memset(pkt, 0, HDRS);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(HDRS + plen);
	ip->id = htons(1);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = saddr;
	ip->daddr = daddr;
	ip->check = htons(csum_fold(csum_add(0, ip, sizeof(*ip))));
	uh->source = htons(sport);
	uh->dest = htons(dport);
	uh->len = htons(ulen);
	memcpy(pkt + HDRS, payload, plen);
	memcpy(pseudo, &saddr, 4);
	memcpy(pseudo + 4, &daddr, 4);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP;
	pseudo[10] = ulen >> 8;
	pseudo[11] = ulen & 0xff;
	sum = csum_add(csum_add(0, pseudo, sizeof(pseudo)), uh, ulen);
	uh->check = htons(csum_fold(sum) ?: 0xffff);
	return HDRS + plen;
}

#define HDRS6		(sizeof(struct ip6_hdr) + sizeof(struct udphdr))

/* The IPv6 pseudo-header's sum (RFC 8200 8.1) for @len bytes of @proto. */
static __u32 csum6_pseudo(const unsigned char *ip6, __u32 len, __u8 proto)
{
	return csum_add(0, ip6 + 8, 32) + (len >> 16) + (len & 0xffff) + proto;
}

/* An IPv6 header for @plen bytes of @proto, hop limit 64. */
static void build_ip6(unsigned char *pkt, const struct in6_addr *saddr,
		      const struct in6_addr *daddr, __u16 plen, __u8 proto)
{
	memset(pkt, 0, 40);
	pkt[0] = 0x60;
	pkt[4] = plen >> 8;
	pkt[5] = plen & 0xff;
	pkt[6] = proto;
	pkt[7] = 64;
	memcpy(pkt + 8, saddr, 16);
	memcpy(pkt + 24, daddr, 16);
}

/* An IPv6 + UDP packet with its checksum; returns its length. */
static size_t build_udp6(unsigned char *pkt, const struct in6_addr *saddr,
			 __u16 sport, const struct in6_addr *daddr, __u16 dport,
			 const void *payload, size_t plen)
{
	unsigned char *uh = pkt + 40;
	__u16 ulen = 8 + plen, ck;

	build_ip6(pkt, saddr, daddr, ulen, IPPROTO_UDP);
	memset(uh, 0, 8);
	uh[0] = sport >> 8;
	uh[1] = sport & 0xff;
	uh[2] = dport >> 8;
	uh[3] = dport & 0xff;
	uh[4] = ulen >> 8;
	uh[5] = ulen & 0xff;
	memcpy(uh + 8, payload, plen);
	ck = csum_fold(csum_add(csum6_pseudo(pkt, ulen, IPPROTO_UDP), uh, ulen));
	ck = ck ?: 0xffff;
	uh[6] = ck >> 8;
	uh[7] = ck & 0xff;
	return HDRS6 + plen;
}

/* Whether the TCP or UDP checksum of the IPv6 packet @pkt verifies. */
static bool csum6_ok(const unsigned char *pkt)
{
	__u16 plen = (pkt[4] << 8) | pkt[5];

	return csum_fold(csum_add(csum6_pseudo(pkt, plen, pkt[6]), pkt + 40,
				  plen)) == 0;
}

/* Whether the UDP checksum of the IPv4 packet @pkt (ihl 5) verifies. */
static bool udp_csum_ok(const unsigned char *pkt)
{
	__u16 ulen = (pkt[24] << 8) | pkt[25];
	unsigned char pseudo[12];

	memcpy(pseudo, pkt + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_UDP;
	pseudo[10] = ulen >> 8;
	pseudo[11] = ulen & 0xff;
	return csum_fold(csum_add(csum_add(0, pseudo, sizeof(pseudo)),
				  pkt + 20, ulen)) == 0;
}

/* The child's exit status, or -1 if it did not exit normally. */
static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A UDP socket bound to @addr:@port (host order) in the current netns. */
static int udp_socket(__u32 addr, __u16 port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = addr,
	};
	struct timeval tv = { .tv_sec = 5 };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		close(s);
		return -errno;
	}
	return s;
}

static int udp_send(int s, __u32 addr, __u16 port, const void *p, size_t len)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = addr,
	};

	return sendto(s, p, len, 0, (struct sockaddr *)&sa, sizeof(sa)) ==
	       (ssize_t)len ? 0 : -errno;
}

static long long dump_value(const char *dir, const char *key)
{
	char path[256], buf[8192], *p;
	size_t klen = strlen(key);

	snprintf(path, sizeof(path), DEBUGFS_DIR "/stacks/%s", dir);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; (p = strstr(p, key)); p += klen)
		if ((p == buf || p[-1] == ' ') && p[klen] == ' ')
			return strtoll(p + klen + 1, NULL, 0);
	return -1;
}

TEST(abi_struct_layouts)
{
	EXPECT_EQ(32, sizeof(struct sluice_kring_setup));
	EXPECT_EQ(24, offsetof(struct sluice_kring_setup, mmap_size));
	EXPECT_EQ(16, sizeof(struct sluice_kring_kick));
	EXPECT_EQ(8, sizeof(struct sluice_kring_rx));
	EXPECT_EQ(16, sizeof(struct sluice_kring_tx));
	EXPECT_EQ(128, sizeof(struct sluice_kring_ring));
	EXPECT_EQ(0, offsetof(struct sluice_kring, rx) % 64);
	EXPECT_EQ(0, offsetof(struct sluice_kring, rx_packets) % 64);
	EXPECT_EQ(0x04, _IOC_NR(SLUICE_IOC_KRING_SETUP));
	EXPECT_EQ(0x05, _IOC_NR(SLUICE_IOC_KRING_KICK));
}

/*
 * A stack on lo in a network namespace of the test's own (the harness
 * runs each test in a child), so steered ports touch nothing else.
 */
FIXTURE(lo) {
	int dev;
	int fd;
	struct sluice_stack_create c;
	char dir[64];
	unsigned char *region;
};

FIXTURE_SETUP(lo)
{
	struct stat st;

	ASSERT_EQ(0, ensure_loaded());
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, run(IP_CMD " link set lo up"));
	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, info_value("stacks"));
	self->fd = stack_create(self->dev, "t_kring", if_nametoindex("lo"),
				&self->c);
	ASSERT_LE(0, self->fd);
	self->region = mmap(NULL, self->c.region_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->region);
	/* The sysfs and debugfs name outside the initial netns. */
	ASSERT_EQ(0, stat("/proc/self/ns/net", &st));
	snprintf(self->dir, sizeof(self->dir), "t_kring@%lu",
		 (unsigned long)st.st_ino);
}

FIXTURE_TEARDOWN(lo)
{
	munmap(self->region, self->c.region_size);
	close(self->fd);
	close(self->dev);
	if (_metadata->passed) {
		EXPECT_EQ(0, info_value("stacks"));
		EXPECT_EQ(0, info_value("regions"));
	}
}

TEST_F(lo, setup_arg_size_and_reserved)
{
	struct sluice_kring_setup s;
	struct {
		struct sluice_kring_setup s;
		__u64 tail;
	} big;

	setup_args(&s, SLUICE_KRING_CREATE, 64, 64, 2048);
	s.size = sizeof(s) - 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_KRING_SETUP, &s));
	EXPECT_EQ(-EINVAL, kring_setup(self->fd, SLUICE_KRING_CREATE | 0x2,
				       64, 64, 2048, &s));
	EXPECT_EQ(-EINVAL, kring_setup(self->fd, 0x80000000u, 64, 64, 2048, &s));
	setup_args(&s, SLUICE_KRING_CREATE, 64, 64, 2048);
	s.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_KRING_SETUP, &s));
	memset(&big, 0, sizeof(big));
	setup_args(&big.s, SLUICE_KRING_CREATE, 64, 64, 2048);
	big.s.size = sizeof(big);
	big.tail = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, SLUICE_IOC_KRING_SETUP, &big));
	/* Nothing was made by any of these. */
	EXPECT_EQ(-ENOENT, kring_setup(self->fd, 0, 0, 0, 0, &s));
	/* A larger struct with a zero tail is fine; the module says its size. */
	big.tail = 0;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_KRING_SETUP, &big));
	EXPECT_EQ(sizeof(s), big.s.size);
	EXPECT_EQ(64, big.s.rx_entries);
	/* Not on /dev/sluice. */
	EXPECT_EQ(-ENOTTY, kring_setup(self->dev, 0, 0, 0, 0, &s));
	EXPECT_EQ(-ENOTTY, kick(self->dev));
}

TEST_F(lo, setup_bad_sizes)
{
	static const __u32 bad[][3] = {
		{ 0, 64, 2048 }, { 3, 64, 2048 }, { 96, 64, 2048 },
		{ SLUICE_KRING_MAX_ENTRIES << 1, 64, 2048 },
		{ 64, 0, 2048 }, { 64, 6, 2048 },
		{ 64, SLUICE_KRING_MAX_ENTRIES << 1, 2048 },
		{ 64, 64, 0 }, { 64, 64, SLUICE_KRING_MIN_SLOT - 64 },
		{ 64, 64, SLUICE_KRING_MIN_SLOT + 1 }, { 64, 64, 200 },
		{ 64, 64, SLUICE_KRING_MAX_SLOT + 64 },
	};
	struct sluice_kring_setup s;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(-EINVAL, kring_setup(self->fd, SLUICE_KRING_CREATE,
					       bad[i][0], bad[i][1], bad[i][2],
					       &s)) TH_LOG("sizes #%zu", i);
	EXPECT_EQ(-ENOENT, kring_setup(self->fd, 0, 0, 0, 0, &s));
	/* The extremes that are allowed. */
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 1, 1,
				 SLUICE_KRING_MIN_SLOT, &s));
	EXPECT_EQ(1, s.rx_entries);
	EXPECT_EQ(SLUICE_KRING_MIN_SLOT, s.tx_slot_size);
}

TEST_F(lo, setup_query_create_twice)
{
	struct sluice_stack_attach a = { .size = sizeof(a), .fd = -1 };
	struct sluice_kring_setup s, q;
	struct sluice_kring *k, *k2;
	int fd2;

	EXPECT_EQ(-ENOENT, kring_setup(self->fd, 0, 0, 0, 0, &q));
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 256, 128, 2048,
				 &s));
	EXPECT_EQ(256, s.rx_entries);
	EXPECT_EQ(128, s.tx_entries);
	EXPECT_EQ(2048, s.tx_slot_size);
	EXPECT_EQ(0, s.mmap_size % PAGE);
	EXPECT_LE(sizeof(struct sluice_kring) + 256 * 12 + 128 * 16 + 128 * 2048,
		  s.mmap_size);
	EXPECT_EQ(-EEXIST, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 64,
				       2048, &q));
	/* Query: in fields must be zero. */
	EXPECT_EQ(-EINVAL, kring_setup(self->fd, 0, 256, 0, 0, &q));
	ASSERT_EQ(0, kring_setup(self->fd, 0, 0, 0, 0, &q));
	EXPECT_EQ(sizeof(q), q.size);
	EXPECT_EQ(0, q.flags);
	EXPECT_EQ(s.rx_entries, q.rx_entries);
	EXPECT_EQ(s.tx_entries, q.tx_entries);
	EXPECT_EQ(s.tx_slot_size, q.tx_slot_size);
	EXPECT_EQ(0, q.reserved);
	EXPECT_EQ(s.mmap_size, q.mmap_size);

	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	EXPECT_EQ(SLUICE_KRING_MAGIC, k->magic);
	EXPECT_EQ(256, k->rx_entries);
	EXPECT_EQ(128, k->tx_entries);
	EXPECT_EQ(2048, k->tx_slot_size);
	EXPECT_EQ(s.mmap_size, k->size);
	EXPECT_LE(sizeof(*k), k->rx_off);
	EXPECT_LE(k->rx_off + 256 * sizeof(struct sluice_kring_rx), k->fill_off);
	EXPECT_LE(k->fill_off + 256 * 4, k->tx_off);
	EXPECT_LE(k->tx_off + 128 * sizeof(struct sluice_kring_tx), k->tx_slots_off);
	EXPECT_EQ(0, k->tx_slots_off % PAGE);
	EXPECT_EQ(k->size, k->tx_slots_off + 128 * 2048);
	EXPECT_EQ(if_nametoindex("lo"), k->ifindex);
	EXPECT_EQ(SLUICE_KRING_DEV_UP, k->dev_state);
	EXPECT_EQ(65536, k->dev_mtu);
	EXPECT_EQ(0, k->rx.prod);
	EXPECT_EQ(0, k->rx_packets);
	/* The rings are the same through another fd of the stack. */
	strcpy(a.name, "t_kring");
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &a));
	fd2 = a.fd;
	ASSERT_EQ(0, kring_setup(fd2, 0, 0, 0, 0, &q));
	k2 = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd2,
		  SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k2);
	k->dev_seq = 0xabc;	/* (k), but anyone can scribble */
	EXPECT_EQ(0xabc, k2->dev_seq);
	munmap(k2, PAGE);
	close(fd2);
	munmap(k, s.mmap_size);
}

TEST_F(lo, sysfs_and_debugfs)
{
	struct sluice_kring_setup s;
	char path[256], buf[16];

	snprintf(path, sizeof(path), SYSFS_STACKS "/%s/kring", self->dir);
	ASSERT_LT(0, read_file(path, buf, sizeof(buf)));
	EXPECT_STREQ("0\n", buf);
	EXPECT_EQ(-1, dump_value(self->dir, "rx_entries"));
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 32, 1024, &s));
	ASSERT_LT(0, read_file(path, buf, sizeof(buf)));
	EXPECT_STREQ("1\n", buf);
	EXPECT_EQ(64, dump_value(self->dir, "rx_entries"));
	EXPECT_EQ(32, dump_value(self->dir, "tx_entries"));
	EXPECT_EQ(1024, dump_value(self->dir, "tx_slot_size"));
	EXPECT_EQ(1, dump_value(self->dir, "steering"));
	EXPECT_EQ(0, dump_value(self->dir, "kicks"));
	EXPECT_EQ(0, kick(self->fd));
	EXPECT_EQ(1, dump_value(self->dir, "kicks"));
	EXPECT_EQ(0, dump_value(self->dir, "bad_desc"));
}

/* The rings are charged to the caller's RLIMIT_MEMLOCK, until freed. */
TEST_F(lo, rings_are_charged_to_memlock)
{
	struct sluice_stack_create ca, cb;
	struct sluice_kring_setup s;
	int fa, fb;
	pid_t pid;

	fa = stack_create(self->dev, "t_memA", if_nametoindex("lo"), &ca);
	fb = stack_create(self->dev, "t_memB", if_nametoindex("lo"), &cb);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit mb = { 1 << 20, 1 << 20 };

		if (setrlimit(RLIMIT_MEMLOCK, &mb) ||
		    setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		/* 2 MiB of slots alone. */
		if (kring_setup(fa, SLUICE_KRING_CREATE, 64, 128, 16384, &s) != -ENOMEM)
			_exit(1);
		/* 516 KiB: fits once, not twice. */
		if (kring_setup(fa, SLUICE_KRING_CREATE, 64, 64, 8192, &s))
			_exit(2);
		if (s.mmap_size != 4096 + 64 * 8192)
			_exit(3);
		if (kring_setup(fb, SLUICE_KRING_CREATE, 64, 64, 8192, &s) != -ENOMEM)
			_exit(4);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));
	/* Stack A and its rings go: the charge goes with them. */
	close(fa);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit mb = { 1 << 20, 1 << 20 };

		if (setrlimit(RLIMIT_MEMLOCK, &mb) ||
		    setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		_exit(kring_setup(fb, SLUICE_KRING_CREATE, 64, 64, 8192, &s) ? 5 : 0);
	}
	EXPECT_EQ(0, child_status(pid));
	close(fb);
}

TEST_F(lo, mmap_bounds)
{
	struct sluice_kring_setup s;
	size_t len;
	char *m;

	/* No rings yet. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
				   SLUICE_MMAP_KRING));
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 64, 2048, &s));
	len = s.mmap_size;
	EXPECT_EQ(MAP_FAILED, mmap(NULL, len + PAGE, PROT_READ, MAP_SHARED,
				   self->fd, SLUICE_MMAP_KRING));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
				   SLUICE_MMAP_KRING + PAGE));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd,
				   SLUICE_MMAP_KRING - PAGE));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, self->fd, SLUICE_MMAP_KRING));
	/* The region at 0 is unchanged by the rings. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->c.region_size + PAGE, PROT_READ,
				   MAP_SHARED, self->fd, 0));
	m = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(SLUICE_KRING_MAGIC, *(__u32 *)m);
	/* Cannot grow. */
	EXPECT_EQ(MAP_FAILED, mremap(m, PAGE, 2 * PAGE, MREMAP_MAYMOVE));
	munmap(m, PAGE);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, m);
	m[len - 1] = 1;
	munmap(m, len);
}

TEST_F(lo, kick_args)
{
	struct sluice_kring_kick c = { .size = sizeof(c) };
	struct sluice_kring_setup s;

	EXPECT_EQ(-ENOENT, kick(self->fd));
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 64, 2048, &s));
	c.size = sizeof(c) - 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_KRING_KICK, &c));
	c.size = sizeof(c);
	c.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_KRING_KICK, &c));
	c.flags = 0;
	c.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_KRING_KICK, &c));
	c.reserved = 0;
	c.sent = 77;	/* out only */
	EXPECT_EQ(0, xioctl(self->fd, SLUICE_IOC_KRING_KICK, &c));
	EXPECT_EQ(0, c.sent);
}

/* Every kind of bad tx descriptor is consumed, counted and not sent. */
TEST_F(lo, tx_bad_desc_counted)
{
	unsigned char pkt[256], bad[256];
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	__u32 lo = htonl(INADDR_LOOPBACK), peer = htonl(0x0a4d0002);
	size_t len;
	int n = 0;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 64,
				 SLUICE_KRING_MIN_SLOT, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	len = build_udp(pkt, lo, 40000, lo, 9, "x", 1);

	tx_put(k, pkt, len, peer);
	tx_desc(k, k->tx.prod - 1)->len = 0, n++;
	tx_put(k, pkt, len, peer);
	tx_desc(k, k->tx.prod - 1)->len = 19, n++;
	tx_put(k, pkt, len, peer);
	tx_desc(k, k->tx.prod - 1)->len = SLUICE_KRING_MIN_SLOT + 1, n++;
	tx_put(k, pkt, len, peer);
	tx_desc(k, k->tx.prod - 1)->len = 0xffffffffu, n++;
	tx_put(k, pkt, len, peer);
	tx_desc(k, k->tx.prod - 1)->flags = 1, n++;
	tx_put(k, pkt, len, peer);
	tx_desc(k, k->tx.prod - 1)->reserved = 1, n++;
	tx_put(k, pkt, len, 0), n++;		/* no next hop */
	memcpy(bad, pkt, len);
	bad[0] = 0x65;				/* IPv6 version */
	tx_put(k, bad, len, peer), n++;
	bad[0] = 0x44;				/* ihl 4 */
	tx_put(k, bad, len, peer), n++;
	bad[0] = 0x4f;				/* ihl 15: 60 > len */
	tx_put(k, bad, len, peer), n++;
	tx_put(k, pkt, len - 1, peer), n++;	/* tot_len says one more */

	EXPECT_EQ(n, kick(self->fd));
	EXPECT_EQ(n, k->bad_desc);
	EXPECT_EQ(k->tx.prod, k->tx.cons);
	EXPECT_EQ(0, k->tx_packets);
	EXPECT_EQ(0, k->tx_drop);
	EXPECT_EQ(1, k->kicks);
	munmap(k, s.mmap_size);
}

/* Every kind of bad IPv6 tx descriptor is consumed, counted, not sent. */
TEST_F(lo, tx6_bad_desc_counted)
{
	struct in6_addr a, b;
	unsigned char pkt[256], bad[256];
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	size_t len;
	int n = 0;

	inet_pton(AF_INET6, "fd77::1", &a);
	inet_pton(AF_INET6, "fd77::2", &b);
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 64,
				 SLUICE_KRING_MIN_SLOT, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	len = build_udp6(pkt, &a, 40000, &b, 9, "x", 1);

	tx_put6(k, pkt, len);
	tx_desc(k, k->tx.prod - 1)->nexthop = htonl(0x0a4d0002), n++;
	tx_put6(k, pkt, len);
	tx_desc(k, k->tx.prod - 1)->reserved = 1, n++;
	tx_put6(k, pkt, len);
	tx_desc(k, k->tx.prod - 1)->flags = SLUICE_KRING_TX_IPV6 | 4, n++;
	tx_put6(k, pkt, len);			/* ROUTE without IPV6 */
	tx_desc(k, k->tx.prod - 1)->flags = SLUICE_KRING_TX_ROUTE, n++;
	tx_put6(k, pkt, len);
	tx_desc(k, k->tx.prod - 1)->len = 39, n++;
	tx_put6(k, pkt, len);
	tx_desc(k, k->tx.prod - 1)->len = SLUICE_KRING_MIN_SLOT + 1, n++;
	tx_put6(k, pkt, len - 1), n++;		/* payload length says more */
	memcpy(bad, pkt, len);
	bad[0] = 0x45;				/* IPv4 version */
	tx_put6(k, bad, len), n++;
	memcpy(bad, pkt, len);
	memset(bad + 24, 0, 16);		/* to :: */
	tx_put6(k, bad, len), n++;
	bad[39] = 1;				/* to ::1 */
	tx_put6(k, bad, len), n++;
	inet_pton(AF_INET6, "::ffff:10.77.0.2", bad + 24);
	tx_put6(k, bad, len), n++;
	/* An IPv6 packet without the flag is IPv4's to check: bad. */
	tx_put(k, pkt, len, htonl(0x0a4d0002)), n++;

	EXPECT_EQ(n, kick(self->fd));
	EXPECT_EQ(n, k->bad_desc);
	EXPECT_EQ(k->tx.prod, k->tx.cons);
	EXPECT_EQ(0, k->tx_packets);
	EXPECT_EQ(0, k->tx_drop);
	munmap(k, s.mmap_size);
}

/*
 * SLUICE_KRING_TX_ROUTE: a packet whose destination the kernel has no
 * route for out of the device (none, then an unreachable and a blackhole
 * one) is consumed and counted in tx_drop, not bad_desc, and not sent.
 * (The routed send itself: tests/vm/route6.sh.)
 */
TEST_F(lo, tx6_route_none_dropped)
{
	static const char *const routes[] = {
		NULL, IP_CMD " -6 route add unreachable fd77::/64",
		IP_CMD " -6 route replace blackhole fd77::/64",
	};
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	unsigned char pkt[256];
	struct in6_addr a, b;
	size_t len;
	int i;

	inet_pton(AF_INET6, "::1", &a);
	inet_pton(AF_INET6, "fd77::2", &b);
	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 64,
				 SLUICE_KRING_MIN_SLOT, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	len = build_udp6(pkt, &a, 40000, &b, 9, "x", 1);
	for (i = 0; i < 3; i++) {
		if (routes[i])
			ASSERT_EQ(0, run(routes[i]));
		tx_put6(k, pkt, len);
		tx_desc(k, k->tx.prod - 1)->flags =
			SLUICE_KRING_TX_IPV6 | SLUICE_KRING_TX_ROUTE;
		EXPECT_EQ(1, kick(self->fd));
		EXPECT_EQ(i + 1, k->tx_drop);
	}
	EXPECT_EQ(0, k->bad_desc);
	EXPECT_EQ(0, k->tx_packets);
	EXPECT_EQ(k->tx.prod, k->tx.cons);
	munmap(k, s.mmap_size);
}

TEST_F(lo, tx_prod_far_ahead_counted)
{
	struct sluice_kring_setup s;
	struct sluice_kring *k;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 16, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	k->tx.prod = 17;
	EXPECT_EQ(0, kick(self->fd));
	EXPECT_EQ(1, k->bad_index);
	EXPECT_EQ(17, k->tx.cons);
	/* The ring goes on from there; a scribbled cons is not believed. */
	k->tx.cons = 1000;
	k->tx.prod = 17 + 16;
	EXPECT_EQ(16, kick(self->fd));
	EXPECT_EQ(16, k->bad_desc);	/* zero-length descriptors */
	EXPECT_EQ(33, k->tx.cons);
	EXPECT_EQ(1, k->bad_index);
	/* Backwards is far ahead too. */
	k->tx.prod = 5;
	EXPECT_EQ(0, kick(self->fd));
	EXPECT_EQ(2, k->bad_index);
	EXPECT_EQ(5, k->tx.cons);
	munmap(k, s.mmap_size);
}

/*
 * A packet to a steered port on lo lands in the stack's buffer; bad fill
 * entries are skipped and counted, and no byte outside the buffer that
 * was used changes.
 */
TEST_F(lo, rx_steered_and_bad_fill_counted)
{
	unsigned char *data = self->region + self->c.bufdata_off;
	size_t data_len = (size_t)N_BUFS * BUF_SIZE, i;
	__u32 lo = htonl(INADDR_LOOPBACK);
	struct sluice_kring_setup s;
	struct sluice_kring_rx *d;
	struct sluice_kring *k;
	unsigned char payload[100];
	unsigned char *before, *pkt;
	int tx, rx;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 8, 8, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	steer(self->fd, STEERED_PORT);
	memset(self->region + sizeof(struct sluice_region), 0x5a,
	       self->c.region_size - sizeof(struct sluice_region));
	before = malloc(self->c.region_size);
	ASSERT_NE(NULL, before);
	memcpy(before, self->region, self->c.region_size);

	fill_put(k, N_BUFS);
	fill_put(k, 0x7fffffff);
	fill_put(k, 0xffffffff);
	fill_put(k, 5);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i * 7;
	tx = udp_socket(lo, 0);
	ASSERT_LE(0, tx);
	/* The filter reserved the port: no kernel socket can take it. */
	rx = udp_socket(lo, STEERED_PORT);
	EXPECT_EQ(-EADDRINUSE, rx);
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, payload, sizeof(payload)));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	EXPECT_EQ(3, k->bad_buf);
	EXPECT_EQ(4, k->fill.cons);
	d = rx_desc(k, 0);
	EXPECT_EQ(5, d->buf_idx);
	EXPECT_EQ(HDRS + sizeof(payload), d->len);
	/* lo leaves the UDP checksum to offload. */
	EXPECT_EQ(SLUICE_KRING_RX_CSUM_OK, d->flags);
	EXPECT_EQ(1, k->rx_packets);
	EXPECT_EQ(d->len, k->rx_bytes);
	pkt = data + 5 * BUF_SIZE + SLUICE_KRING_RX_HEADROOM;
	EXPECT_EQ(0x45, pkt[0]);
	EXPECT_EQ(IPPROTO_UDP, pkt[9]);
	EXPECT_EQ(STEERED_PORT, (pkt[22] << 8) | pkt[23]);
	EXPECT_EQ(0, memcmp(pkt + HDRS, payload, sizeof(payload)));
	/* Everything else in the region is as it was. */
	memcpy(before + self->c.bufdata_off + 5 * BUF_SIZE +
	       SLUICE_KRING_RX_HEADROOM, pkt, d->len);
	EXPECT_EQ(0, memcmp(before, self->region, self->c.region_size));
	(void)data_len;

	/* Not steered (no filter): the kernel's. */
	{
		int low = udp_socket(lo, 39999);
		char b[8];

		ASSERT_LE(0, low);
		ASSERT_EQ(0, udp_send(tx, lo, 39999, "hello", 5));
		EXPECT_EQ(5, recv(low, b, sizeof(b), 0));
		close(low);
	}
	EXPECT_EQ(1, k->rx_packets);
	close(tx);
	free(before);
	munmap(k, s.mmap_size);
}

TEST_F(lo, rx_drops_counted)
{
	__u32 lo = htonl(INADDR_LOOPBACK), i;
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	static char big[3000];
	int tx;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 2, 2, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	tx = udp_socket(lo, 0);
	ASSERT_LE(0, tx);
	steer(self->fd, STEERED_PORT);

	/* No fill buffer. */
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "a", 1));
	EXPECT_EQ(1, ctr_wait(&k->rx_drop_fill, 1));
	/*
	 * A UDP datagram larger than a buffer holds after the headroom (one
	 * skb on lo) is left to the kernel (its UDP gives it to the port's
	 * reservation): counted in debugfs, neither in the ring nor dropped.
	 */
	fill_put(k, 1);
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, big,
			      BUF_SIZE - SLUICE_KRING_RX_HEADROOM - HDRS + 1));
	for (i = 0; i < 200 && dump_value(self->dir, "rx_pass_size") < 1; i++)
		usleep(10000);
	EXPECT_EQ(1, dump_value(self->dir, "rx_pass_size"));
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, big,
			      BUF_SIZE - SLUICE_KRING_RX_HEADROOM - HDRS));
	EXPECT_EQ(1, ctr_wait(&k->rx_packets, 1));
	EXPECT_EQ(0, k->rx_drop_size);
	EXPECT_EQ(BUF_SIZE - SLUICE_KRING_RX_HEADROOM, rx_desc(k, 0)->len);
	/* The ring full: two posted, nothing consumed. */
	fill_put(k, 2);
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "b", 1));
	EXPECT_EQ(2, ctr_wait(&k->rx_packets, 2));
	fill_put(k, 3);
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "c", 1));
	EXPECT_EQ(1, ctr_wait(&k->rx_drop_ring, 1));
	EXPECT_EQ(2, k->rx_packets);
	/* A consumer that passed the producer is not believed either. */
	k->rx.cons = 100;
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "d", 1));
	EXPECT_EQ(1, ctr_wait(&k->bad_index, 1));
	k->rx.cons = 2;
	/* A fill producer far ahead: counted, and the fill ring reset. */
	k->fill.prod = k->fill.cons + 3;
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "e", 1));
	EXPECT_EQ(2, ctr_wait(&k->rx_drop_fill, 2));
	EXPECT_EQ(2, k->bad_index);
	EXPECT_EQ(k->fill.prod, k->fill.cons);
	for (i = 0; i < 2; i++)
		EXPECT_GT(N_BUFS, rx_desc(k, i)->buf_idx);
	close(tx);
	munmap(k, s.mmap_size);
}

/* A packet for the stack wakes a poller of the stack fd. */
TEST_F(lo, rx_wakes_poller)
{
	struct sluice_stack_wake w = { .size = sizeof(w) };
	__u32 lo = htonl(INADDR_LOOPBACK);
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	pid_t pid;
	int tx, status;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 8, 8, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	fill_put(k, 0);
	steer(self->fd, STEERED_PORT);
	/* Counted as a sleeper before the last look, as libsluice does. */
	((struct sluice_region *)self->region)->sleepers = 1;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	w.flags = SLUICE_WAKE_ARM;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	EXPECT_EQ(0, k->rx.prod);
	EXPECT_EQ(0, poll(&p, 1, 0));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(200000);
		tx = udp_socket(lo, 0);
		_exit(tx < 0 || udp_send(tx, lo, STEERED_PORT, "w", 1));
	}
	EXPECT_EQ(1, poll(&p, 1, 5000));
	EXPECT_EQ(1, k->rx.prod);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	munmap(k, s.mmap_size);
}

/* Packets the kernel dropped before any rx_handler (backlog full). */
static long long softnet_dropped(void)
{
	char buf[4096], *line, *save = NULL;
	long long sum = 0;
	unsigned int processed, dropped;

	if (read_file("/proc/net/softnet_stat", buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (sscanf(line, "%x %x", &processed, &dropped) == 2)
			sum += dropped;
	return sum;
}

#define FLOOD_SENDERS	2
#define FLOOD_EACH	1000

/* Nobody sleeps: the sequence stays; a counted sleeper: it moves. */
TEST_F(lo, rx_bumps_wake_seq_only_for_sleepers)
{
	struct sluice_stack_wake w = { .size = sizeof(w) };
	struct sluice_region *r = (struct sluice_region *)self->region;
	__u32 lo = htonl(INADDR_LOOPBACK), seq;
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	int tx;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 8, 8, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	fill_put(k, 0);
	fill_put(k, 1);
	steer(self->fd, STEERED_PORT);
	tx = udp_socket(lo, 0);
	ASSERT_LE(0, tx);
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	seq = w.seq;
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "1", 1));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	EXPECT_EQ(seq, w.seq);
	r->sleepers = 1;
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "2", 1));
	ASSERT_EQ(2, rx_wait(k, 2, 5000));
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	EXPECT_EQ(seq + 1, w.seq);
	close(tx);
	munmap(k, s.mmap_size);
}

/*
 * Senders on both CPUs at once (rx_handlers run concurrently for one
 * stack) while the test consumes and refills: every packet arrives intact
 * exactly once or is counted as a drop.
 */
TEST_F(lo, rx_concurrent_senders_accounted)
{
	static unsigned char seen[FLOOD_SENDERS][FLOOD_EACH];
	__u32 lo = htonl(INADDR_LOOPBACK), cons = 0, i;
	long long kdrop0, kdrop, received = 0, dups = 0, bad = 0, t0;
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	pid_t pids[FLOOD_SENDERS];
	struct timespec ts;
	int n, status;

	ASSERT_EQ(0, kring_setup(self->fd, SLUICE_KRING_CREATE, 64, 8, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	for (i = 0; i < N_BUFS; i++)
		fill_put(k, i);
	steer(self->fd, STEERED_PORT);
	kdrop0 = softnet_dropped();
	ASSERT_LE(0, kdrop0);

	for (n = 0; n < FLOOD_SENDERS; n++) {
		pids[n] = fork();
		ASSERT_LE(0, pids[n]);
		if (pids[n] == 0) {
			cpu_set_t cpus;
			__u32 msg[2] = { n, 0 };
			int tx = udp_socket(lo, 0);

			CPU_ZERO(&cpus);
			CPU_SET(n, &cpus);
			sched_setaffinity(0, sizeof(cpus), &cpus);
			for (msg[1] = 0; tx >= 0 && msg[1] < FLOOD_EACH; msg[1]++) {
				if (udp_send(tx, lo, STEERED_PORT, msg, sizeof(msg)))
					_exit(1);
				/* Bursts the size of the pool, then a breath. */
				if (msg[1] % 8 == 7)
					usleep(2000);
			}
			_exit(tx < 0);
		}
	}

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec;
	for (;;) {
		__u32 prod = __atomic_load_n(&k->rx.prod, __ATOMIC_ACQUIRE);

		for (; cons != prod; cons++) {
			struct sluice_kring_rx *d = rx_desc(k, cons);
			__u32 msg[2];

			if (d->buf_idx >= N_BUFS || d->len != HDRS + sizeof(msg)) {
				bad++;
				continue;
			}
			memcpy(msg, self->region + self->c.bufdata_off +
			       d->buf_idx * BUF_SIZE + SLUICE_KRING_RX_HEADROOM +
			       HDRS, sizeof(msg));
			if (msg[0] >= FLOOD_SENDERS || msg[1] >= FLOOD_EACH)
				bad++;
			else if (seen[msg[0]][msg[1]]++)
				dups++;
			received++;
			fill_put(k, d->buf_idx);
		}
		__atomic_store_n(&k->rx.cons, cons, __ATOMIC_RELEASE);
		kdrop = softnet_dropped() - kdrop0;
		if (received + (long long)k->rx_drop_fill + (long long)k->rx_drop_ring +
		    kdrop >= FLOOD_SENDERS * FLOOD_EACH)
			break;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec - t0 > 20)
			break;
		sched_yield();
	}
	for (n = 0; n < FLOOD_SENDERS; n++) {
		ASSERT_EQ(pids[n], waitpid(pids[n], &status, 0));
		EXPECT_EQ(0, status);
	}
	TH_LOG("received %lld, dropped fill %llu ring %llu backlog %lld",
	       received, k->rx_drop_fill, k->rx_drop_ring, kdrop);
	EXPECT_EQ(FLOOD_SENDERS * FLOOD_EACH,
		  received + k->rx_drop_fill + k->rx_drop_ring + kdrop);
	EXPECT_EQ(received, k->rx_packets);
	EXPECT_LT(0, received);
	EXPECT_EQ(0, dups);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, k->bad_buf);
	EXPECT_EQ(0, k->bad_index);
	munmap(k, s.mmap_size);
}

TEST(setup_without_device)
{
	struct sluice_stack_create c;
	struct sluice_kring_setup s;
	int dev, fd;

	ASSERT_EQ(0, ensure_loaded());
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	fd = stack_create(dev, "t_nodev", 0, &c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENODEV, kring_setup(fd, SLUICE_KRING_CREATE, 64, 64, 2048, &s));
	EXPECT_EQ(-ENOENT, kring_setup(fd, 0, 0, 0, 0, &s));
	EXPECT_EQ(-ENOENT, kick(fd));
	close(fd);
	close(dev);
}

/* The veth pair of the picture at the top. */

/* Make a UDP socket bound to @port in the peer's namespace. */
static int peer_socket(int self_ns, int peer_ns, __u32 addr, __u16 port)
{
	int s;

	if (setns(peer_ns, CLONE_NEWNET))
		return -errno;
	s = udp_socket(addr, port);
	if (setns(self_ns, CLONE_NEWNET)) {
		if (s >= 0)
			close(s);
		return -errno;
	}
	return s;
}

FIXTURE_SETUP(veth)
{
	veth_up(_metadata, self, "t_veth");
}

FIXTURE_TEARDOWN(veth)
{
	veth_down(_metadata, self);
}

static struct sluice_kring *veth_rings(struct __test_metadata *_metadata,
				       int fd, __u32 rx)
{
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	__u32 i;

	if (kring_setup(fd, SLUICE_KRING_CREATE, rx, 16, 2048, &s))
		return NULL;
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 SLUICE_MMAP_KRING);
	if (k == MAP_FAILED)
		return NULL;
	for (i = 0; i < rx && i < N_BUFS; i++)
		fill_put(k, i);
	return k;
}

/* A datagram from a kernel socket in the peer arrives byte-exact. */
TEST_F(veth, rx_udp_from_peer)
{
	unsigned char payload[300], *pkt;
	struct sluice_kring_rx *d;
	struct sluice_kring *k;
	int s;
	size_t i;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	EXPECT_EQ(1500, k->dev_mtu);
	steer(self->fd, STEERED_PORT);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i ^ 0x3c;
	s = peer_socket(self->self_ns, self->peer_ns, self->peer_addr, 5001);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, udp_send(s, self->addr, STEERED_PORT, payload,
			      sizeof(payload)));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	d = rx_desc(k, 0);
	EXPECT_EQ(HDRS + sizeof(payload), d->len);
	EXPECT_GT(N_BUFS, d->buf_idx);
	/* veth hands on a local sender's packet with the checksum left to do. */
	EXPECT_EQ(SLUICE_KRING_RX_CSUM_OK, d->flags);
	pkt = self->region + self->c.bufdata_off + d->buf_idx * BUF_SIZE +
	      SLUICE_KRING_RX_HEADROOM;
	EXPECT_EQ(0x45, pkt[0]);
	EXPECT_EQ(HDRS + sizeof(payload), (pkt[2] << 8) | pkt[3]);
	EXPECT_EQ(IPPROTO_UDP, pkt[9]);
	EXPECT_EQ(0, memcmp(pkt + 12, &self->peer_addr, 4));
	EXPECT_EQ(0, memcmp(pkt + 16, &self->addr, 4));
	EXPECT_EQ(5001, (pkt[20] << 8) | pkt[21]);
	EXPECT_EQ(STEERED_PORT, (pkt[22] << 8) | pkt[23]);
	EXPECT_EQ(sizeof(payload) + 8, (pkt[24] << 8) | pkt[25]);
	EXPECT_EQ(0, memcmp(pkt + HDRS, payload, sizeof(payload)));
	EXPECT_EQ(1, k->rx_packets);
	EXPECT_EQ(HDRS + sizeof(payload), k->rx_bytes);
	close(s);
	munmap(k, k->size);
}

/*
 * A UDP GSO send of three segments from the peer arrives as three
 * packets (segmented on the way, by the sender's stack or by the module).
 */
TEST_F(veth, rx_udp_gso_segments)
{
	static unsigned char payload[3000];
	struct sluice_kring *k;
	int s, gso = 1000;
	__u32 i;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	steer(self->fd, STEERED_PORT);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i * 13;
	s = peer_socket(self->self_ns, self->peer_ns, self->peer_addr, 5002);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, setsockopt(s, IPPROTO_UDP, UDP_SEGMENT, &gso, sizeof(gso)));
	ASSERT_EQ(0, udp_send(s, self->addr, STEERED_PORT, payload,
			      sizeof(payload)));
	ASSERT_EQ(3, rx_wait(k, 3, 5000));
	for (i = 0; i < 3; i++) {
		struct sluice_kring_rx *d = rx_desc(k, i);
		unsigned char *pkt = self->region + self->c.bufdata_off +
			d->buf_idx * BUF_SIZE + SLUICE_KRING_RX_HEADROOM;

		EXPECT_EQ(HDRS + 1000, d->len);
		EXPECT_EQ(HDRS + 1000, (pkt[2] << 8) | pkt[3]);
		/* Segmentation filled in the checksums, or says not to check. */
		if (!(d->flags & SLUICE_KRING_RX_CSUM_OK))
			EXPECT_TRUE(udp_csum_ok(pkt)) TH_LOG("segment %u", i);
		EXPECT_EQ(1008, (pkt[24] << 8) | pkt[25]);
		EXPECT_EQ(0, memcmp(pkt + HDRS, payload + i * 1000, 1000));
	}
	EXPECT_EQ(0, k->rx_drop_size);
	/* veth passed the GSO skb on whole: the module segmented it. */
	EXPECT_EQ(1, dump_value(self->dir, "rx_gso_split"));
	close(s);
	munmap(k, k->size);
}

/* A packet put on the tx ring reaches a kernel socket in the peer (ARP). */
TEST_F(veth, tx_udp_to_peer)
{
	static unsigned char big[1600], bigpkt[1600];
	unsigned char pkt[512], payload[200], got[512];
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	struct sluice_kring *k;
	size_t len, i;
	int s;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	s = peer_socket(self->self_ns, self->peer_ns, self->peer_addr, 5003);
	ASSERT_LE(0, s);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = 255 - i;
	len = build_udp(pkt, self->addr, 40124, self->peer_addr, 5003, payload,
			sizeof(payload));
	tx_put(k, pkt, len, self->peer_addr);
	EXPECT_EQ(1, kick(self->fd));
	EXPECT_EQ(1, k->tx.cons);
	EXPECT_EQ(sizeof(payload), recvfrom(s, got, sizeof(got), 0,
					    (struct sockaddr *)&from, &flen));
	EXPECT_EQ(0, memcmp(got, payload, sizeof(payload)));
	EXPECT_EQ(self->addr, from.sin_addr.s_addr);
	EXPECT_EQ(40124, ntohs(from.sin_port));
	EXPECT_EQ(1, k->tx_packets);
	EXPECT_EQ(len, k->tx_bytes);
	EXPECT_EQ(0, k->tx_drop);
	/* Longer than the device's MTU: refused. */
	len = build_udp(bigpkt, self->addr, 40124, self->peer_addr, 5003, big,
			1501 - HDRS);
	tx_put(k, bigpkt, len, self->peer_addr);
	EXPECT_EQ(1, kick(self->fd));
	EXPECT_EQ(1, k->bad_desc);
	close(s);
	munmap(k, k->size);
}

/* A TCP segment's checksum (IPv4 ihl 5 at @pkt, @len bytes) verifies. */
static bool tcp_csum_ok(const unsigned char *pkt, size_t len)
{
	unsigned char pseudo[12];
	size_t tlen = len - 20;

	memcpy(pseudo, pkt + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	pseudo[10] = tlen >> 8;
	pseudo[11] = tlen & 0xff;
	return csum_fold(csum_add(csum_add(0, pseudo, sizeof(pseudo)),
				  pkt + 20, tlen)) == 0;
}

static __u32 get32(const unsigned char *p)
{
	return (__u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void put32(unsigned char *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* A 44-byte SYN-ACK (IPv4, TCP with an MSS option), both checksums. */
static void build_synack(unsigned char *pkt, __u32 saddr, __u16 sport,
			 __u32 daddr, __u16 dport, __u32 seq, __u32 ack,
			 __u16 mss)
{
	unsigned char pseudo[12];
	__u16 ck;

	memset(pkt, 0, 44);
	pkt[0] = 0x45;
	pkt[3] = 44;
	pkt[8] = 64;
	pkt[9] = IPPROTO_TCP;
	memcpy(pkt + 12, &saddr, 4);
	memcpy(pkt + 16, &daddr, 4);
	ck = csum_fold(csum_add(0, pkt, 20));
	pkt[10] = ck >> 8;
	pkt[11] = ck & 0xff;
	pkt[20] = sport >> 8;
	pkt[21] = sport & 0xff;
	pkt[22] = dport >> 8;
	pkt[23] = dport & 0xff;
	put32(pkt + 24, seq);
	put32(pkt + 28, ack);
	pkt[32] = 6 << 4;		/* data offset: 24 bytes */
	pkt[33] = 0x12;			/* SYN | ACK */
	pkt[34] = 0xff;			/* window 65535 */
	pkt[35] = 0xff;
	pkt[40] = 2;			/* MSS, RFC 9293 3.2 */
	pkt[41] = 4;
	pkt[42] = mss >> 8;
	pkt[43] = mss & 0xff;
	memcpy(pseudo, pkt + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	pseudo[10] = 0;
	pseudo[11] = 24;
	ck = csum_fold(csum_add(csum_add(0, pseudo, 12), pkt + 20, 24));
	pkt[36] = ck >> 8;
	pkt[37] = ck & 0xff;
}

/*
 * The kernel's TCP in the peer connects to a steered port; the test
 * answers the SYN through the tx ring and receives what the client then
 * writes, which leaves as TSO: every segment arrives, in MSS-sized
 * packets, checksummed or flagged.
 */
TEST_F(veth, rx_tcp_tso_from_peer)
{
	static unsigned char data[8000], got[sizeof(data)], covered[sizeof(data)];
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(40200) };
	struct pollfd p;
	unsigned char synack[44], *pkt;
	__u32 cons = 0, isn = 0, have = 0, i;
	__u16 cport = 0;
	struct sluice_kring *k;
	int c, waited;

	k = veth_rings(_metadata, self->fd, 16);
	ASSERT_NE(NULL, k);
	steer(self->fd, 40200);
	for (i = 0; i < sizeof(data); i++)
		data[i] = i * 31 + 7;
	ASSERT_EQ(0, setns(self->peer_ns, CLONE_NEWNET));
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ASSERT_EQ(0, setns(self->self_ns, CLONE_NEWNET));
	ASSERT_LE(0, c);
	to.sin_addr.s_addr = self->addr;
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&to, sizeof(to)));
	ASSERT_EQ(EINPROGRESS, errno);

	/* The SYN. */
	ASSERT_LE(1, rx_wait(k, 1, 5000));
	pkt = self->region + self->c.bufdata_off +
	      rx_desc(k, 0)->buf_idx * BUF_SIZE + SLUICE_KRING_RX_HEADROOM;
	ASSERT_EQ(IPPROTO_TCP, pkt[9]);
	ASSERT_EQ(0x02, pkt[33] & 0x3f);
	cport = (pkt[20] << 8) | pkt[21];
	isn = get32(pkt + 24);

	/* SYN-ACK with MSS 1460, from the stack's side. */
	build_synack(synack, self->addr, 40200, self->peer_addr, cport, 1000,
		     isn + 1, 1460);
	ASSERT_TRUE(tcp_csum_ok(synack, sizeof(synack)));
	tx_put(k, synack, sizeof(synack), self->peer_addr);
	ASSERT_EQ(1, kick(self->fd));
	EXPECT_EQ(1, k->tx_packets);

	p.fd = c;
	p.events = POLLOUT;
	ASSERT_EQ(1, poll(&p, 1, 5000));
	ASSERT_EQ((ssize_t)sizeof(data), send(c, data, sizeof(data), 0));

	/* Collect the data by sequence number (retransmits may repeat it). */
	for (waited = 0; have < sizeof(data) && waited < 8000; waited += 10) {
		__u32 prod = __atomic_load_n(&k->rx.prod, __ATOMIC_ACQUIRE);

		for (; cons != prod; cons++) {
			struct sluice_kring_rx *d = rx_desc(k, cons);
			unsigned int hl, plen;
			__u32 off;

			pkt = self->region + self->c.bufdata_off +
			      d->buf_idx * BUF_SIZE + SLUICE_KRING_RX_HEADROOM;
			hl = 20 + (pkt[32] >> 4) * 4;
			EXPECT_GE(1500, d->len);
			EXPECT_EQ(d->len, (pkt[2] << 8) | pkt[3]);
			if (!(d->flags & SLUICE_KRING_RX_CSUM_OK))
				EXPECT_TRUE(tcp_csum_ok(pkt, d->len));
			plen = d->len - hl;
			off = get32(pkt + 24) - (isn + 1);
			if (plen && off < sizeof(data) && off + plen <= sizeof(data)) {
				EXPECT_GE(1460, plen);
				memcpy(got + off, pkt + hl, plen);
				memset(covered + off, 1, plen);
				while (have < sizeof(data) && covered[have])
					have++;
			}
			fill_put(k, d->buf_idx);
		}
		__atomic_store_n(&k->rx.cons, cons, __ATOMIC_RELEASE);
		if (have < sizeof(data))
			usleep(10000);
	}
	EXPECT_EQ(sizeof(data), have);
	EXPECT_EQ(0, memcmp(got, data, have));
	TH_LOG("%u packets, %lld GSO skbs segmented", cons,
	       dump_value(self->dir, "rx_gso_split"));
	close(c);
	munmap(k, k->size);
}

/*
 * IPv6 on the veth pair: fd77::1 on sk0, fd77::2 on sk1, without DAD so
 * both are usable at once.  Neighbour Discovery is the kernels' on both
 * sides (the rx_handler passes ICMPv6 on).
 */
static int veth_v6(FIXTURE_DATA(veth) *self, struct in6_addr *a,
		   struct in6_addr *peer)
{
	char cmd[256];

	inet_pton(AF_INET6, "fd77::1", a);
	inet_pton(AF_INET6, "fd77::2", peer);
	if (run(IP_CMD " addr add fd77::1/64 dev sk0 nodad"))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 IP_CMD " -n %s addr add fd77::2/64 dev sk1 nodad", self->peer);
	return run(cmd) ? -1 : 0;
}

/* Steer IPv6 @proto to local [::]:@port; the filter's id or 0. */
static __u32 steer6(int fd, __u8 proto, __u16 port)
{
	struct sluice_filter f;

	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.flags = SLUICE_FILTER_IPV6;
	f.protocol = proto;
	f.lport = htons(port);
	if (ioctl(fd, SLUICE_IOC_FILTER_ADD, &f)) {
		fprintf(stderr, "# steer6: FILTER_ADD %u/%u: %s\n", proto, port,
			strerror(errno));
		return 0;
	}
	return f.id;
}

/* An AF_INET6 socket of @type in the peer's netns, bound to [@addr]:@port. */
static int peer_socket6(FIXTURE_DATA(veth) *self, int type,
			const struct in6_addr *addr, __u16 port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port) };
	struct timeval tv = { .tv_sec = 5 };
	int s, e = 0;

	if (addr)
		sa.sin6_addr = *addr;
	if (setns(self->peer_ns, CLONE_NEWNET))
		return -errno;
	s = socket(AF_INET6, type | SOCK_CLOEXEC, 0);
	if (s < 0 || (type == SOCK_DGRAM && bind(s, (struct sockaddr *)&sa,
						 sizeof(sa))))
		e = -errno;
	if (s >= 0)
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (setns(self->self_ns, CLONE_NEWNET))
		e = -errno;
	if (e && s >= 0)
		close(s);
	return e ?: s;
}

static int send6(int s, const struct in6_addr *to, __u16 port, const void *p,
		 size_t len)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port), .sin6_addr = *to };

	return sendto(s, p, len, 0, (struct sockaddr *)&sa, sizeof(sa)) ==
	       (ssize_t)len ? 0 : -errno;
}

static unsigned char *rx_pkt(FIXTURE_DATA(veth) *self, struct sluice_kring *k,
			     __u32 i)
{
	return self->region + self->c.bufdata_off +
	       rx_desc(k, i)->buf_idx * BUF_SIZE + SLUICE_KRING_RX_HEADROOM;
}

/*
 * A datagram from a kernel IPv6 socket in the peer arrives byte-exact
 * (after the peer's Neighbour Solicitation, which the kernel answered);
 * one too long for the link goes as fragments, which reach the ring, for
 * the stack to reassemble: the port's reservation (FILTER_FD) gets none.
 */
TEST_F(veth, rx_udp6_from_peer)
{
	unsigned char payload[300], *pkt;
	static unsigned char big[3000], got[4000];
	struct sluice_filter_fd ff = { .size = sizeof(ff) };
	struct timeval tv = { .tv_sec = 5 };
	struct in6_addr a, peer;
	struct sluice_kring_rx *d;
	struct sluice_kring *k;
	size_t i, off;
	int s, s4;

	ASSERT_EQ(0, veth_v6(self, &a, &peer));
	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	ff.id = steer6(self->fd, IPPROTO_UDP, STEERED_PORT);
	ASSERT_NE(0, ff.id);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i ^ 0x5a;
	s = peer_socket6(self, SOCK_DGRAM, &peer, 5011);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, send6(s, &a, STEERED_PORT, payload, sizeof(payload)));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	d = rx_desc(k, 0);
	EXPECT_EQ(HDRS6 + sizeof(payload), d->len);
	EXPECT_EQ(SLUICE_KRING_RX_CSUM_OK, d->flags);
	pkt = rx_pkt(self, k, 0);
	EXPECT_EQ(6, pkt[0] >> 4);
	EXPECT_EQ(8 + sizeof(payload), (pkt[4] << 8) | pkt[5]);
	EXPECT_EQ(IPPROTO_UDP, pkt[6]);
	EXPECT_EQ(0, memcmp(pkt + 8, &peer, 16));
	EXPECT_EQ(0, memcmp(pkt + 24, &a, 16));
	EXPECT_EQ(5011, (pkt[40] << 8) | pkt[41]);
	EXPECT_EQ(STEERED_PORT, (pkt[42] << 8) | pkt[43]);
	EXPECT_EQ(0, memcmp(pkt + HDRS6, payload, sizeof(payload)));
	EXPECT_EQ(1, k->rx_packets);
	EXPECT_EQ(HDRS6 + sizeof(payload), k->rx_bytes);
	/* IPv4 to the port is not the IPv6 filter's. */
	s4 = peer_socket(self->self_ns, self->peer_ns, self->peer_addr, 5012);
	ASSERT_LE(0, s4);
	ASSERT_EQ(0, udp_send(s4, self->addr, STEERED_PORT, "v4", 2));
	close(s4);
	/*
	 * Fragments (1448, 1448 and 112 bytes after the fragment header):
	 * the stack's, in order, with one identification; none reaches the
	 * reservation.
	 */
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_FILTER_FD, &ff));
	tv.tv_sec = 0;
	tv.tv_usec = 300000;
	setsockopt(ff.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (i = 0; i < sizeof(big); i++)
		big[i] = i * 7;
	ASSERT_EQ(0, send6(s, &a, STEERED_PORT, big, sizeof(big)));
	ASSERT_EQ(4, rx_wait(k, 4, 5000));
	for (i = 1, off = 0; i < 4; i++) {
		unsigned int plen, fo;

		pkt = rx_pkt(self, k, i);
		plen = (pkt[4] << 8) | pkt[5];
		fo = (pkt[42] << 8) | pkt[43];
		EXPECT_EQ(40 + plen, rx_desc(k, i)->len);
		EXPECT_EQ(44, pkt[6]);
		EXPECT_EQ(IPPROTO_UDP, pkt[40]);
		EXPECT_EQ(off, fo & ~7u);
		EXPECT_EQ(i < 3, fo & 1);
		EXPECT_EQ(0, memcmp(pkt + 44, rx_pkt(self, k, 1) + 44, 4));
		if (i == 1) {
			EXPECT_EQ(STEERED_PORT, (pkt[50] << 8) | pkt[51]);
			EXPECT_EQ(0, memcmp(pkt + 56, big, plen - 16));
		} else {
			EXPECT_EQ(0, memcmp(pkt + 48, big + off - 8, plen - 8));
		}
		off += plen - 8;
	}
	EXPECT_EQ(8 + sizeof(big), off);
	EXPECT_EQ(-1, recv(ff.fd, got, sizeof(got), 0));
	EXPECT_EQ(4, k->rx_packets);
	EXPECT_EQ(0, k->rx_drop_size);
	close(ff.fd);
	close(s);
	munmap(k, k->size);
}

/*
 * A datagram too long for the link, cut by the peer's kernel (1480, 1480
 * and 48 bytes after the header): its fragments reach the ring when a
 * filter claims its port (the first fragment's; the others follow its
 * train), for the stack to reassemble; a datagram to a port no filter
 * claims is the kernel's, reassembled for its socket.
 */
TEST_F(veth, rx_frags_of_steered_datagram)
{
	static unsigned char big[3000], got[4000];
	struct sluice_kring *k;
	unsigned char *pkt;
	size_t i, off;
	int s, ks;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	steer(self->fd, STEERED_PORT);
	for (i = 0; i < sizeof(big); i++)
		big[i] = i * 13;
	s = peer_socket(self->self_ns, self->peer_ns, self->peer_addr, 5021);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, udp_send(s, self->addr, STEERED_PORT, big, sizeof(big)));
	ASSERT_EQ(3, rx_wait(k, 3, 5000));
	for (i = 0, off = 0; i < 3; i++) {
		unsigned int tot, fo;

		pkt = rx_pkt(self, k, i);
		tot = (pkt[2] << 8) | pkt[3];
		fo = (pkt[6] << 8) | pkt[7];
		EXPECT_EQ(tot, rx_desc(k, i)->len);
		EXPECT_EQ(0x45, pkt[0]);
		EXPECT_EQ(IPPROTO_UDP, pkt[9]);
		EXPECT_EQ(off, (fo & 0x1fff) * 8);
		EXPECT_EQ(i < 2 ? 0x2000 : 0, fo & 0x2000);
		EXPECT_EQ(0, memcmp(pkt + 4, rx_pkt(self, k, 0) + 4, 2));
		if (i == 0) {
			EXPECT_EQ(STEERED_PORT, (pkt[22] << 8) | pkt[23]);
			EXPECT_EQ(0, memcmp(pkt + HDRS, big, tot - HDRS));
		} else {
			EXPECT_EQ(0, memcmp(pkt + 20, big + off - 8, tot - 20));
		}
		off += tot - 20;
	}
	EXPECT_EQ(8 + sizeof(big), off);
	ks = udp_socket(self->addr, STEERED_PORT + 1);
	ASSERT_LE(0, ks);
	ASSERT_EQ(0, udp_send(s, self->addr, STEERED_PORT + 1, big, sizeof(big)));
	EXPECT_EQ(sizeof(big), recv(ks, got, sizeof(got), 0));
	EXPECT_EQ(0, memcmp(got, big, sizeof(big)));
	EXPECT_EQ(3, k->rx_packets);
	close(ks);
	close(s);
	munmap(k, k->size);
}

/* A raw socket of @family and @proto in the peer's netns. */
static int peer_raw(FIXTURE_DATA(veth) *self, int family, int proto)
{
	int s, e = 0;

	if (setns(self->peer_ns, CLONE_NEWNET))
		return -errno;
	s = socket(family, SOCK_RAW | SOCK_CLOEXEC, proto);
	if (s < 0)
		e = -errno;
	if (setns(self->self_ns, CLONE_NEWNET))
		e = -errno;
	if (e && s >= 0)
		close(s);
	return e ?: s;
}

/* A counter of this netns's /proc/net/snmp (@file) or snmp6, or -1. */
static long long snmp_value(const char *file, const char *group,
			    const char *name)
{
	char buf[8192], *names, *vals, *n, *v, *sn, *sv;
	size_t glen = strlen(group);

	if (read_file(file, buf, sizeof(buf)) < 0)
		return -1;
	if (!group[0]) {
		/* snmp6: "NAME VALUE" lines. */
		for (n = strtok_r(buf, "\n", &sn); n; n = strtok_r(NULL, "\n", &sn))
			if (!strncmp(n, name, strlen(name)) &&
			    n[strlen(name)] == ' ')
				return strtoll(n + strlen(name), NULL, 10);
		return -1;
	}
	for (names = buf; (names = strstr(names, group)); names += glen) {
		if ((names != buf && names[-1] != '\n') || names[glen] != ':')
			continue;
		vals = strstr(names + glen, group);
		if (!vals)
			return -1;
		n = strtok_r(names + glen + 1, " \n", &sn);
		v = strtok_r(vals + glen + 1, " \n", &sv);
		for (; n && v; n = strtok_r(NULL, " \n", &sn),
		     v = strtok_r(NULL, " \n", &sv)) {
			if (!strcmp(n, name))
				return strtoll(v, NULL, 10);
			if (strchr(n, ':'))
				return -1;
		}
		return -1;
	}
	return -1;
}

/*
 * snmp_value() once it has grown by @want from @from, or after 2 s as it
 * is then.
 */
static long long snmp_wait(const char *file, const char *group,
			   const char *name, long long from, long long want)
{
	long long v = -1;
	int i;

	for (i = 0; i < 200; i++) {
		v = snmp_value(file, group, name);
		if (v - from >= want)
			break;
		usleep(10000);
	}
	return v;
}

/*
 * An ICMP error of @type/@code in @buf quoting a packet of @proto from
 * @src:@sport to @dst:@dport, its fragment offset @fo (8-byte units),
 * with @l4 bytes of its transport header; its length.
 */
static size_t icmp4_err(unsigned char *buf, __u8 type, __u8 code, __u32 src,
			__u16 sport, __u32 dst, __u16 dport, __u8 proto,
			__u16 fo, size_t l4)
{
	struct iphdr *q = (struct iphdr *)(buf + 8);
	size_t len = 8 + sizeof(*q) + l4;
	__u16 ck;

	memset(buf, 0, len + 8);
	buf[0] = type;
	buf[1] = code;
	if (type == 3 && code == 4)
		buf[6] = 1280 >> 8;	/* the next-hop MTU, RFC 1191 */
	q->version = 4;
	q->ihl = 5;
	q->tot_len = htons(1500);
	q->frag_off = htons(0x4000 | fo);
	q->ttl = 64;
	q->protocol = proto;
	q->saddr = src;
	q->daddr = dst;
	q->check = htons(csum_fold(csum_add(0, q, sizeof(*q))));
	buf[28] = sport >> 8;
	buf[29] = sport & 0xff;
	buf[30] = dport >> 8;
	buf[31] = dport & 0xff;
	ck = csum_fold(csum_add(0, buf, len));
	buf[2] = ck >> 8;
	buf[3] = ck & 0xff;
	return len;
}

/* rx_icmp_errors' messages for the kernel (fragmentation needed but one). */
static const struct {
	__u8 type, proto;
	int src_peer, sport_off;
	__u16 fo;
	size_t l4;
} bad4[] = {
	{ 3, IPPROTO_UDP, 0, 0, 0, 4 },		/* 4 bytes of UDP */
	{ 3, IPPROTO_UDP, 1, 0, 0, 8 },		/* not from the stack's address */
	{ 3, IPPROTO_UDP, 0, 1, 0, 8 },		/* a port no filter claims */
	{ 3, IPPROTO_ICMP, 0, 0, 0, 8 },	/* not TCP or UDP */
	{ 3, IPPROTO_UDP, 0, 0, 185, 8 },	/* a later fragment */
	{ 8, IPPROTO_UDP, 0, 0, 0, 8 },		/* an echo request */
};

#define N_BAD4	((int)(sizeof(bad4) / sizeof(bad4[0])))

/*
 * ICMP errors from the peer: the stack's when the quoted header names a
 * packet a filter's socket sent (fragmentation needed, time exceeded); the
 * kernel's (its Icmp InMsgs counts each) when the quoted transport header
 * is short, the quoted source is not the error's destination, no filter
 * takes the quoted tuple's replies, the quoted protocol is not TCP or UDP,
 * the quoted packet is a later fragment, or the message is no error.
 */
TEST_F(veth, rx_icmp_errors)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	unsigned char buf[128], *pkt;
	struct sluice_kring *k;
	long long in0, in1;
	size_t len;
	int r, i;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	steer(self->fd, STEERED_PORT);
	to.sin_addr.s_addr = self->addr;
	r = peer_raw(self, AF_INET, IPPROTO_ICMP);
	ASSERT_LE(0, r);
	/* The peer's ARP first, so the counts below are the messages'. */
	ASSERT_EQ(0, run("ping -c 1 -W 5 10.77.0.2 >/dev/null 2>&1"));
	in0 = snmp_value("/proc/net/snmp", "Icmp", "InMsgs");
	ASSERT_LE(0, in0);
	for (i = 0; i < N_BAD4; i++) {
		len = icmp4_err(buf, bad4[i].type, 4,
				bad4[i].src_peer ? self->peer_addr : self->addr,
				STEERED_PORT + bad4[i].sport_off,
				self->peer_addr, 5031, bad4[i].proto,
				bad4[i].fo, bad4[i].l4);
		EXPECT_EQ((ssize_t)len, sendto(r, buf, len, 0,
					       (struct sockaddr *)&to,
					       sizeof(to)));
	}
	in1 = snmp_wait("/proc/net/snmp", "Icmp", "InMsgs", in0, N_BAD4);
	EXPECT_EQ(N_BAD4, in1 - in0);
	EXPECT_EQ(0, k->rx_packets);
	len = icmp4_err(buf, 3, 4, self->addr, STEERED_PORT, self->peer_addr,
			5031, IPPROTO_UDP, 0, 8);
	EXPECT_EQ((ssize_t)len, sendto(r, buf, len, 0, (struct sockaddr *)&to,
				       sizeof(to)));
	len = icmp4_err(buf, 11, 0, self->addr, STEERED_PORT, self->peer_addr,
			5031, IPPROTO_TCP, 0, 8);
	EXPECT_EQ((ssize_t)len, sendto(r, buf, len, 0, (struct sockaddr *)&to,
				       sizeof(to)));
	ASSERT_EQ(2, rx_wait(k, 2, 5000));
	pkt = rx_pkt(self, k, 0);
	EXPECT_EQ(IPPROTO_ICMP, pkt[9]);
	EXPECT_EQ(3, pkt[20]);
	EXPECT_EQ(4, pkt[21]);
	EXPECT_EQ(1280, (pkt[26] << 8) | pkt[27]);
	EXPECT_EQ(20 + len, rx_desc(k, 0)->len);
	pkt = rx_pkt(self, k, 1);
	EXPECT_EQ(11, pkt[20]);
	EXPECT_EQ(IPPROTO_TCP, pkt[28 + 9]);
	usleep(100000);
	EXPECT_EQ(2, k->rx_packets);
	EXPECT_EQ(in1, snmp_value("/proc/net/snmp", "Icmp", "InMsgs"));
	close(r);
	munmap(k, k->size);
}

/*
 * ICMPv6 errors quoting [fd77::1]:STEERED_PORT -> [fd77::2]:5041: @type,
 * the quoted source @src, a fragment header of offset @fo (bytes) first
 * when @frag, @l4 bytes of UDP; the kernel makes the checksum.
 */
static size_t icmp6_err(unsigned char *buf, __u8 type,
			const struct in6_addr *src, const struct in6_addr *dst,
			__u16 sport, int frag, __u16 fo, size_t l4)
{
	unsigned char *q = buf + 8, *t = q + 40;
	size_t len;

	memset(buf, 0, 128);
	buf[0] = type;
	if (type == 2)
		buf[6] = 1280 >> 8;
	q[0] = 0x60;
	q[4] = 0x05;
	q[5] = 0xc8;
	q[6] = frag ? 44 : IPPROTO_UDP;
	q[7] = 64;
	memcpy(q + 8, src, 16);
	memcpy(q + 24, dst, 16);
	if (frag) {
		t[0] = IPPROTO_UDP;
		t[2] = fo >> 8;
		t[3] = (fo & 0xf8) | 1;
		t[7] = 9;
		t += 8;
	}
	t[0] = sport >> 8;
	t[1] = sport & 0xff;
	t[2] = 5041 >> 8;
	t[3] = 5041 & 0xff;
	len = t + l4 - buf;
	return len;
}

/* rx_icmp6_errors' messages for the kernel. */
static const struct {
	__u8 type;
	int src_peer, sport_off, frag;
	__u16 fo;
	size_t l4;
} bad6[] = {
	{ 2, 0, 0, 0, 0, 4 },		/* 4 bytes of UDP */
	{ 2, 1, 0, 0, 0, 8 },		/* not from the stack's address */
	{ 1, 0, 1, 0, 0, 8 },		/* a port no filter claims */
	{ 1, 0, 0, 1, 1448, 8 },	/* a later fragment */
	{ 128, 0, 0, 0, 0, 8 },		/* an echo request */
};

#define N_BAD6	((int)(sizeof(bad6) / sizeof(bad6[0])))

/* rx_icmp_errors for ICMPv6: Packet Too Big and the rest. */
TEST_F(veth, rx_icmp6_errors)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6 };
	unsigned char buf[128], *pkt;
	struct in6_addr a, peer;
	struct sluice_kring *k;
	long long in0, in1;
	size_t len;
	int r, u, i;

	ASSERT_EQ(0, veth_v6(self, &a, &peer));
	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	ASSERT_NE(0, steer6(self->fd, IPPROTO_UDP, STEERED_PORT));
	to.sin6_addr = a;
	r = peer_raw(self, AF_INET6, IPPROTO_ICMPV6);
	ASSERT_LE(0, r);
	/* Neighbour Discovery first, so the counts below are the errors'. */
	u = peer_socket6(self, SOCK_DGRAM, &peer, 5042);
	ASSERT_LE(0, u);
	ASSERT_EQ(0, send6(u, &a, STEERED_PORT, "nd", 2));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	usleep(200000);
	in0 = snmp_value("/proc/net/snmp6", "", "Icmp6InMsgs");
	ASSERT_LE(0, in0);
	for (i = 0; i < N_BAD6; i++) {
		len = icmp6_err(buf, bad6[i].type,
				bad6[i].src_peer ? &peer : &a, &peer,
				STEERED_PORT + bad6[i].sport_off,
				bad6[i].frag, bad6[i].fo, bad6[i].l4);
		EXPECT_EQ((ssize_t)len, sendto(r, buf, len, 0,
					       (struct sockaddr *)&to,
					       sizeof(to)));
	}
	in1 = snmp_wait("/proc/net/snmp6", "", "Icmp6InMsgs", in0, N_BAD6);
	/* (At least: the kernel may probe its neighbour meanwhile.) */
	EXPECT_LE(N_BAD6, in1 - in0);
	EXPECT_EQ(1, k->rx_packets);
	len = icmp6_err(buf, 2, &a, &peer, STEERED_PORT, 0, 0, 8);
	EXPECT_EQ((ssize_t)len, sendto(r, buf, len, 0, (struct sockaddr *)&to,
				       sizeof(to)));
	len = icmp6_err(buf, 1, &a, &peer, STEERED_PORT, 1, 0, 8);
	EXPECT_EQ((ssize_t)len, sendto(r, buf, len, 0, (struct sockaddr *)&to,
				       sizeof(to)));
	ASSERT_EQ(3, rx_wait(k, 3, 5000));
	pkt = rx_pkt(self, k, 1);
	EXPECT_EQ(IPPROTO_ICMPV6, pkt[6]);
	EXPECT_EQ(2, pkt[40]);
	EXPECT_EQ(1280, (pkt[46] << 8) | pkt[47]);
	EXPECT_EQ(40 + 8 + 40 + 8, rx_desc(k, 1)->len);
	pkt = rx_pkt(self, k, 2);
	EXPECT_EQ(1, pkt[40]);
	EXPECT_EQ(44, pkt[48 + 6]);
	usleep(100000);
	EXPECT_EQ(3, k->rx_packets);
	close(u);
	close(r);
	munmap(k, k->size);
}

/* A UDP GSO send of three IPv6 segments arrives as three packets. */
TEST_F(veth, rx_udp6_gso_segments)
{
	static unsigned char payload[3000];
	struct in6_addr a, peer;
	struct sluice_kring *k;
	int s, gso = 1000;
	__u32 i;

	ASSERT_EQ(0, veth_v6(self, &a, &peer));
	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	ASSERT_NE(0, steer6(self->fd, IPPROTO_UDP, STEERED_PORT));
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = i * 11;
	s = peer_socket6(self, SOCK_DGRAM, &peer, 5013);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, setsockopt(s, IPPROTO_UDP, UDP_SEGMENT, &gso, sizeof(gso)));
	ASSERT_EQ(0, send6(s, &a, STEERED_PORT, payload, sizeof(payload)));
	ASSERT_EQ(3, rx_wait(k, 3, 5000));
	for (i = 0; i < 3; i++) {
		struct sluice_kring_rx *d = rx_desc(k, i);
		unsigned char *pkt = rx_pkt(self, k, i);

		EXPECT_EQ(HDRS6 + 1000, d->len);
		EXPECT_EQ(1008, (pkt[4] << 8) | pkt[5]);
		if (!(d->flags & SLUICE_KRING_RX_CSUM_OK))
			EXPECT_TRUE(csum6_ok(pkt)) TH_LOG("segment %u", i);
		EXPECT_EQ(0, memcmp(pkt + HDRS6, payload + i * 1000, 1000));
	}
	EXPECT_EQ(0, k->rx_drop_size);
	EXPECT_EQ(1, dump_value(self->dir, "rx_gso_split"));
	close(s);
	munmap(k, k->size);
}

/*
 * An IPv6 packet on the tx ring reaches a kernel socket in the peer: the
 * kernel's Neighbour Discovery resolves its destination (the first packet
 * waits in the neighbour's queue for the advertisement).
 */
TEST_F(veth, tx_udp6_to_peer)
{
	static unsigned char bigpkt[1600], big[1600];
	unsigned char pkt[512], payload[200], got[512];
	struct sockaddr_in6 from;
	socklen_t flen = sizeof(from);
	struct in6_addr a, peer;
	struct sluice_kring *k;
	size_t len, i;
	int s;

	ASSERT_EQ(0, veth_v6(self, &a, &peer));
	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	s = peer_socket6(self, SOCK_DGRAM, &peer, 5014);
	ASSERT_LE(0, s);
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = 200 - i;
	len = build_udp6(pkt, &a, 40125, &peer, 5014, payload, sizeof(payload));
	tx_put6(k, pkt, len);
	EXPECT_EQ(1, kick(self->fd));
	EXPECT_EQ(sizeof(payload), recvfrom(s, got, sizeof(got), 0,
					    (struct sockaddr *)&from, &flen));
	EXPECT_EQ(0, memcmp(got, payload, sizeof(payload)));
	EXPECT_EQ(0, memcmp(&from.sin6_addr, &a, 16));
	EXPECT_EQ(40125, ntohs(from.sin6_port));
	/* Resolved now: the second goes at once. */
	tx_put6(k, pkt, len);
	EXPECT_EQ(1, kick(self->fd));
	EXPECT_EQ(sizeof(payload), recv(s, got, sizeof(got), 0));
	EXPECT_EQ(2, k->tx_packets);
	EXPECT_EQ(2 * len, k->tx_bytes);
	EXPECT_EQ(0, k->tx_drop);
	EXPECT_EQ(0, k->bad_desc);
	/* Longer than the device's MTU: refused. */
	len = build_udp6(bigpkt, &a, 40125, &peer, 5014, big, 1501 - HDRS6);
	tx_put6(k, bigpkt, len);
	EXPECT_EQ(1, kick(self->fd));
	EXPECT_EQ(1, k->bad_desc);
	close(s);
	munmap(k, k->size);
}

/* A 64-byte IPv6 SYN-ACK (TCP with an MSS option) with its checksum. */
static void build_synack6(unsigned char *pkt, const struct in6_addr *saddr,
			  __u16 sport, const struct in6_addr *daddr,
			  __u16 dport, __u32 seq, __u32 ack, __u16 mss)
{
	unsigned char *th = pkt + 40;
	__u16 ck;

	build_ip6(pkt, saddr, daddr, 24, IPPROTO_TCP);
	memset(th, 0, 24);
	th[0] = sport >> 8;
	th[1] = sport & 0xff;
	th[2] = dport >> 8;
	th[3] = dport & 0xff;
	put32(th + 4, seq);
	put32(th + 8, ack);
	th[12] = 6 << 4;
	th[13] = 0x12;			/* SYN | ACK */
	th[14] = 0xff;
	th[15] = 0xff;
	th[20] = 2;			/* MSS, RFC 9293 3.2 */
	th[21] = 4;
	th[22] = mss >> 8;
	th[23] = mss & 0xff;
	ck = csum_fold(csum_add(csum6_pseudo(pkt, 24, IPPROTO_TCP), th, 24));
	th[16] = ck >> 8;
	th[17] = ck & 0xff;
}

/*
 * The kernel's TCP in the peer connects over IPv6 to a steered port; the
 * test answers the SYN through the tx ring and receives what the client
 * then writes (TSO on veth): every byte, in MSS-sized packets.
 */
TEST_F(veth, rx_tcp6_tso_from_peer)
{
	static unsigned char data[8000], got[sizeof(data)], covered[sizeof(data)];
	struct sockaddr_in6 to = { .sin6_family = AF_INET6,
				   .sin6_port = htons(40201) };
	unsigned char synack[64], *pkt;
	__u32 cons = 0, isn = 0, have = 0, i;
	struct in6_addr a, peer;
	struct sluice_kring *k;
	struct pollfd p;
	__u16 cport = 0;
	int c, waited;

	ASSERT_EQ(0, veth_v6(self, &a, &peer));
	k = veth_rings(_metadata, self->fd, 16);
	ASSERT_NE(NULL, k);
	ASSERT_NE(0, steer6(self->fd, IPPROTO_TCP, 40201));
	for (i = 0; i < sizeof(data); i++)
		data[i] = i * 29 + 3;
	c = peer_socket6(self, SOCK_STREAM, NULL, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, fcntl(c, F_SETFL, O_NONBLOCK));
	to.sin6_addr = a;
	ASSERT_EQ(-1, connect(c, (struct sockaddr *)&to, sizeof(to)));
	ASSERT_EQ(EINPROGRESS, errno);

	ASSERT_LE(1, rx_wait(k, 1, 5000));
	pkt = rx_pkt(self, k, 0);
	ASSERT_EQ(6, pkt[0] >> 4);
	ASSERT_EQ(IPPROTO_TCP, pkt[6]);
	ASSERT_EQ(0x02, pkt[53] & 0x3f);
	cport = (pkt[40] << 8) | pkt[41];
	isn = get32(pkt + 44);

	build_synack6(synack, &a, 40201, &peer, cport, 1000, isn + 1, 1440);
	ASSERT_TRUE(csum6_ok(synack));
	tx_put6(k, synack, sizeof(synack));
	ASSERT_EQ(1, kick(self->fd));
	EXPECT_EQ(1, k->tx_packets);

	p.fd = c;
	p.events = POLLOUT;
	ASSERT_EQ(1, poll(&p, 1, 5000));
	ASSERT_EQ((ssize_t)sizeof(data), send(c, data, sizeof(data), 0));

	for (waited = 0; have < sizeof(data) && waited < 8000; waited += 10) {
		__u32 prod = __atomic_load_n(&k->rx.prod, __ATOMIC_ACQUIRE);

		for (; cons != prod; cons++) {
			struct sluice_kring_rx *d = rx_desc(k, cons);
			unsigned int hl, plen;
			__u32 off;

			pkt = rx_pkt(self, k, cons);
			hl = 40 + (pkt[52] >> 4) * 4;
			EXPECT_GE(1500, d->len);
			EXPECT_EQ(d->len, 40 + ((pkt[4] << 8) | pkt[5]));
			if (!(d->flags & SLUICE_KRING_RX_CSUM_OK))
				EXPECT_TRUE(csum6_ok(pkt));
			plen = d->len - hl;
			off = get32(pkt + 44) - (isn + 1);
			if (plen && off < sizeof(data) && off + plen <= sizeof(data)) {
				EXPECT_GE(1440, plen);
				memcpy(got + off, pkt + hl, plen);
				memset(covered + off, 1, plen);
				while (have < sizeof(data) && covered[have])
					have++;
			}
			fill_put(k, d->buf_idx);
		}
		__atomic_store_n(&k->rx.cons, cons, __ATOMIC_RELEASE);
		if (have < sizeof(data))
			usleep(10000);
	}
	EXPECT_EQ(sizeof(data), have);
	EXPECT_EQ(0, memcmp(got, data, have));
	TH_LOG("%u packets, %lld GSO skbs segmented", cons,
	       dump_value(self->dir, "rx_gso_split"));
	close(c);
	munmap(k, k->size);
}

/* The device goes while the rings exist: GONE, KICK fails, no oops. */
TEST_F(veth, device_unregistered)
{
	struct sluice_stack_wake w = { .size = sizeof(w) };
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	__u32 seq;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	w.flags = SLUICE_WAKE_ARM;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	seq = k->dev_seq;
	ASSERT_EQ(0, run(IP_CMD " link set sk0 mtu 1400"));
	EXPECT_EQ(1400, k->dev_mtu);
	EXPECT_LT(seq, k->dev_seq);
	EXPECT_EQ(1, poll(&p, 1, 1000));
	seq = k->dev_seq;
	ASSERT_EQ(0, run(IP_CMD " link set sk0 down"));
	EXPECT_LT(seq, k->dev_seq);
	EXPECT_EQ(SLUICE_KRING_DEV_UP, k->dev_state);
	seq = k->dev_seq;
	ASSERT_EQ(0, run(IP_CMD " link set sk0 up"));
	EXPECT_LT(seq, k->dev_seq);
	seq = k->dev_seq;
	w.flags = 0;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	w.flags = SLUICE_WAKE_ARM;
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_STACK_WAKE, &w));
	EXPECT_EQ(0, poll(&p, 1, 0));
	ASSERT_EQ(0, run(IP_CMD " link del sk0"));
	EXPECT_EQ(SLUICE_KRING_DEV_GONE, k->dev_state);
	EXPECT_LT(seq, k->dev_seq);
	EXPECT_EQ(1, poll(&p, 1, 1000));
	EXPECT_EQ(-ENODEV, kick(self->fd));
	EXPECT_EQ(-EEXIST, kring_setup(self->fd, SLUICE_KRING_CREATE, 8, 8,
				       2048, &s));
	ASSERT_EQ(0, kring_setup(self->fd, 0, 0, 0, 0, &s));
	EXPECT_EQ(0, dump_value(self->dir, "steering"));
	/* A device of the same name again is not the stack's. */
	ASSERT_EQ(0, run(IP_CMD " link add sk0 type veth peer name sk1"));
	EXPECT_EQ(-ENODEV, kick(self->fd));
	munmap(k, k->size);
}

/* The peer's namespace is torn down, taking the veth pair with it. */
TEST_F(veth, peer_netns_deleted)
{
	struct sluice_kring *k;
	char cmd[256];
	int waited;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	close(self->peer_ns);
	self->peer_ns = -1;
	snprintf(cmd, sizeof(cmd), IP_CMD " netns del %s", self->peer);
	ASSERT_EQ(0, run(cmd));
	/* The namespace is dismantled by a worker: wait for it, bounded. */
	for (waited = 0; waited < 10000; waited += 20) {
		if (__atomic_load_n(&k->dev_state, __ATOMIC_ACQUIRE) ==
		    SLUICE_KRING_DEV_GONE)
			break;
		usleep(20000);
	}
	EXPECT_EQ(SLUICE_KRING_DEV_GONE, k->dev_state);
	EXPECT_EQ(0, if_nametoindex("sk0"));
	EXPECT_EQ(-ENODEV, kick(self->fd));
	munmap(k, k->size);
}

/* The device moves to another namespace: gone for the stack. */
TEST_F(veth, device_moved_to_other_netns)
{
	struct sluice_kring *k;
	char cmd[256];
	int s, r;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	snprintf(cmd, sizeof(cmd), IP_CMD " link set sk0 netns %s", self->peer);
	ASSERT_EQ(0, run(cmd));
	EXPECT_EQ(SLUICE_KRING_DEV_GONE, k->dev_state);
	EXPECT_EQ(-ENODEV, kick(self->fd));
	EXPECT_EQ(0, dump_value(self->dir, "steering"));
	/* Both ends in the peer now: its traffic is its own kernel's. */
	snprintf(cmd, sizeof(cmd), IP_CMD " -n %s addr add 10.77.1.1/24 dev sk0"
		 " && " IP_CMD " -n %s link set sk0 up && " IP_CMD
		 " -n %s link set lo up", self->peer, self->peer, self->peer);
	ASSERT_EQ(0, run(cmd));
	s = peer_socket(self->self_ns, self->peer_ns, htonl(0x0a4d0002), 0);
	r = peer_socket(self->self_ns, self->peer_ns, htonl(0x0a4d0101),
			STEERED_PORT);
	ASSERT_LE(0, s);
	ASSERT_LE(0, r);
	ASSERT_EQ(0, udp_send(s, htonl(0x0a4d0101), STEERED_PORT, "m", 1));
	EXPECT_EQ(1, recv(r, cmd, sizeof(cmd), 0));
	EXPECT_EQ(0, k->rx_packets);
	close(r);
	close(s);
	munmap(k, k->size);
}

/* Two stacks on one device share its rx_handler; the first steers. */
TEST_F(veth, two_stacks_share_the_device)
{
	struct sluice_stack_create c2;
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	int fd2, s1;

	k = veth_rings(_metadata, self->fd, 8);
	ASSERT_NE(NULL, k);
	fd2 = stack_create(self->dev, "t_veth2", self->ifindex, &c2);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, kring_setup(fd2, SLUICE_KRING_CREATE, 8, 8, 2048, &s));
	/* The first goes: the second is the device's only one, still steered. */
	munmap(k, k->size);
	munmap(self->region, self->c.region_size);
	self->region = MAP_FAILED;
	close(self->fd);
	self->fd = fd2;
	self->c = c2;
	self->region = mmap(NULL, c2.region_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, self->region);
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd2,
		 SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	fill_put(k, 3);
	steer(fd2, STEERED_PORT);
	s1 = peer_socket(self->self_ns, self->peer_ns, self->peer_addr, 5004);
	ASSERT_LE(0, s1);
	ASSERT_EQ(0, udp_send(s1, self->addr, STEERED_PORT, "two", 3));
	ASSERT_EQ(1, rx_wait(k, 1, 5000));
	EXPECT_EQ(3, rx_desc(k, 0)->buf_idx);
	close(s1);
	munmap(k, s.mmap_size);
}

/* Another rx_handler on the device (a bridge port): -EBUSY. */
TEST_F(veth, setup_busy_device)
{
	struct sluice_kring_setup s;

	if (run(IP_CMD " link add slkbr0 type bridge 2>/dev/null"))
		SKIP(return, "no bridge support in this kernel");
	ASSERT_EQ(0, run(IP_CMD " link set sk0 master slkbr0"));
	EXPECT_EQ(-EBUSY, kring_setup(self->fd, SLUICE_KRING_CREATE, 8, 8,
				      2048, &s));
	EXPECT_EQ(-ENOENT, kring_setup(self->fd, 0, 0, 0, 0, &s));
	run(IP_CMD " link del slkbr0");
}

/*
 * Rings mapped after every fd closed keep the stack, its steering and the
 * module; unmapped, everything goes and the port is the kernel's again.
 */
TEST(unload_after_rings)
{
	__u32 lo = htonl(INADDR_LOOPBACK);
	struct sluice_stack_create c;
	struct sluice_kring_setup s;
	struct sluice_kring *k;
	int dev, fd, rx, tx;
	char b[8];

	ASSERT_EQ(0, ensure_loaded());
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ASSERT_EQ(0, run(IP_CMD " link set lo up"));
	tx = udp_socket(lo, 0);
	ASSERT_LE(0, tx);
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	fd = stack_create(dev, "t_unload", if_nametoindex("lo"), &c);
	ASSERT_LE(0, fd);
	close(dev);
	ASSERT_EQ(0, kring_setup(fd, SLUICE_KRING_CREATE, 64, 64, 2048, &s));
	k = mmap(NULL, s.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 SLUICE_MMAP_KRING);
	ASSERT_NE(MAP_FAILED, k);
	steer(fd, STEERED_PORT);
	close(fd);
	EXPECT_EQ(-EWOULDBLOCK, unload_module());
	/* The filter still reserves the port. */
	EXPECT_EQ(-EADDRINUSE, udp_socket(lo, STEERED_PORT));
	EXPECT_EQ(1, info_value("stacks"));
	/* Still steered (into a ring with no fill buffer). */
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "s", 1));
	EXPECT_EQ(1, ctr_wait(&k->rx_drop_fill, 1));
	munmap(k, s.mmap_size);
	EXPECT_EQ(0, info_value("stacks"));
	EXPECT_EQ(0, info_value("regions"));
	/* Not steering, port released: a packet to it is the kernel's. */
	rx = udp_socket(lo, STEERED_PORT);
	ASSERT_LE(0, rx);
	ASSERT_EQ(0, udp_send(tx, lo, STEERED_PORT, "k", 1));
	EXPECT_EQ(1, recv(rx, b, sizeof(b), 0));
	close(rx);
	close(tx);
	ASSERT_EQ(0, unload_module());
}

TEST_HARNESS_MAIN
