// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftests for sluice.ko's filters (SLUICE_IOC_FILTER_ADD / _DEL and
 * their port reservations), interface information (SLUICE_IOC_IFINFO)
 * and neighbour resolution (SLUICE_IOC_NEIGH_RESOLVE).
 *
 * Runs as root inside the test VM (loading $SLUICE_KO as the other
 * suites do), with /usr/sbin/ip and the veth module.  Topologies, made
 * and removed by the fixtures that need them:
 *
 *   filter, ifinfo:  stacks on lo (127.0.0.1/8), brought up here
 *
 *   ifinfo (veth):   sfi0 (02:00:00:00:97:01, mtu 1400,        sfi1
 *                          10.97.0.1/24, 10.97.1.1/16)  <--->  (no address)
 *
 *   neigh:           root netns                            netns "sfn"
 *                    sfn0 10.98.0.1/24  <--- veth --->  sfn1 10.98.0.2/24
 *                    02:00:00:00:98:01                   02:00:00:00:98:02
 *                    stack "t_nb" on sfn0; 10.98.0.77 is nobody's
 *
 * Matching is checked through debugfs "match", which runs the receive
 * path's own lookup (the rx_handler that feeds it packets is not part of
 * these tests).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uapi/sluice.h>

#include "kselftest_harness.h"
#include "sluice_util.h"

#define SYSFS_STACKS	"/sys/class/misc/sluice/stacks"
#define PARAM_FMAX	SYSFS_MOD "/parameters/filter_max"
#define IP		"/usr/sbin/ip"
#define NOBODY		65534
#define TAIL		16	/* bytes past the struct in the size tests */

/* Run a shell command line quietly; its exit status. */
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long long stack_attr_ll(const char *dir, const char *attr)
{
	char path[256], buf[64];

	snprintf(path, sizeof(path), SYSFS_STACKS "/%s/%s", dir, attr);
	if (read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 0);
}

/* The stack's debugfs dump into @buf; its length or -errno. */
static ssize_t stack_dump(const char *dir, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), DEBUGFS_DIR "/stacks/%s", dir);
	return read_file(path, buf, len);
}

/* A stack on @ifindex, without rings; its fd or -errno. */
static int create_stack_bare(int dev, const char *name, __u32 ifindex)
{
	struct sluice_stack_create c;
	int ret;

	stack_layout(&c, name, ifindex, 16, 256, 64, 16, 2048);
	ret = xioctl(dev, SLUICE_IOC_STACK_CREATE, &c);
	return ret ? ret : c.fd;
}

/*
 * A stack on @ifindex with (small) rings when it has a device, since
 * filters steer into rings; its fd or -errno.
 */
static int create_stack(int dev, const char *name, __u32 ifindex)
{
	struct sluice_kring_setup k = {
		.size = sizeof(k), .flags = SLUICE_KRING_CREATE,
		.rx_entries = 8, .tx_entries = 8, .tx_slot_size = 2048,
	};
	int fd, ret;

	fd = create_stack_bare(dev, name, ifindex);
	if (fd < 0 || !ifindex)
		return fd;
	ret = xioctl(fd, SLUICE_IOC_KRING_SETUP, &k);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static void filter_init(struct sluice_filter *f, __u8 proto,
			const char *laddr, __u16 lport,
			const char *raddr, __u16 rport)
{
	memset(f, 0, sizeof(*f));
	f->size = sizeof(*f);
	f->protocol = proto;
	f->laddr = laddr ? inet_addr(laddr) : 0;
	f->raddr = raddr ? inet_addr(raddr) : 0;
	f->lport = htons(lport);
	f->rport = htons(rport);
}

/* FILTER_ADD; 0 or -errno, the filter's id in *@id (may be NULL). */
static int add(int st, __u8 proto, const char *laddr, __u16 lport,
	       const char *raddr, __u16 rport, __u32 *id)
{
	struct sluice_filter f;
	int ret;

	filter_init(&f, proto, laddr, lport, raddr, rport);
	ret = xioctl(st, SLUICE_IOC_FILTER_ADD, &f);
	if (!ret && id)
		*id = f.id;
	return ret;
}

static int del(int st, __u32 id)
{
	struct sluice_filter f = { .size = sizeof(f), .id = id };

	return xioctl(st, SLUICE_IOC_FILTER_DEL, &f);
}

/* Bind a fresh kernel socket to addr:port and close it: 0 or -errno. */
static int try_bind(int type, const char *addr, __u16 port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = addr ? inet_addr(addr) : INADDR_ANY,
	};
	int s = socket(AF_INET, type | SOCK_CLOEXEC, 0), ret = 0;

	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sin, sizeof(sin)))
		ret = -errno;
	close(s);
	return ret;
}

/*
 * Issue @cmd with the first @len bytes of @arg and @size in the size
 * field, followed by @tail_byte (in TAIL bytes) when @size is larger than
 * @len.  Returns 0 or -errno; the result is copied back into @arg.
 */
static int sized_ioctl(int fd, unsigned long cmd, void *arg, size_t len,
		       __u32 size, unsigned char tail_byte)
{
	unsigned char buf[512];
	__u32 own_size;
	int ret;

	memcpy(&own_size, arg, sizeof(own_size));
	memset(buf, 0, sizeof(buf));
	memcpy(buf, arg, len);
	memcpy(buf, &size, sizeof(size));
	if (size > len)
		memset(buf + len, tail_byte, TAIL);
	ret = xioctl(fd, cmd, buf);
	memcpy(arg, buf, len);
	/* The caller's struct keeps its own size for the next call. */
	memcpy(arg, &own_size, sizeof(own_size));
	return ret;
}

/* debugfs "match": the "NAME ID" the module picks, or "none". */
static int match(char *out, size_t len, const char *proto, int ifindex,
		 const char *saddr, int sport, const char *daddr, int dport)
{
	char q[128];
	int fd, ret = 0;
	ssize_t n;

	snprintf(q, sizeof(q), "%s %d %s %d %s %d", proto, ifindex, saddr,
		 sport, daddr, dport);
	fd = open(DEBUGFS_DIR "/match", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, q, strlen(q)) != (ssize_t)strlen(q)) {
		ret = -errno;
		goto out;
	}
	n = read(fd, out, len - 1);
	if (n < 0) {
		ret = -errno;
		goto out;
	}
	out[n] = '\0';
	if (n && out[n - 1] == '\n')
		out[n - 1] = '\0';
out:
	close(fd);
	return ret;
}

static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int drop_to_nobody(void)
{
	return setresgid(NOBODY, NOBODY, NOBODY) ||
	       setresuid(NOBODY, NOBODY, NOBODY);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static bool have_ip(void)
{
	return access(IP, X_OK) == 0;
}

TEST(abi_struct_layouts)
{
	/* Grown by SLUICE_FEATURE_FILTER_SOCK from 32, by _IPV6 from 40. */
	EXPECT_EQ(72, sizeof(struct sluice_filter));
	EXPECT_EQ(40, offsetof(struct sluice_filter, laddr6));
	EXPECT_EQ(56, offsetof(struct sluice_filter, raddr6));
	EXPECT_EQ(8, offsetof(struct sluice_filter, protocol));
	EXPECT_EQ(12, offsetof(struct sluice_filter, laddr));
	EXPECT_EQ(20, offsetof(struct sluice_filter, lport));
	EXPECT_EQ(24, offsetof(struct sluice_filter, id));
	EXPECT_EQ(32, offsetof(struct sluice_filter, fd));
	/* Grown by SLUICE_FEATURE_IPOIB from 148 and 56 (sluice_ipoib.c). */
	EXPECT_EQ(268, sizeof(struct sluice_ifinfo));
	EXPECT_EQ(28, offsetof(struct sluice_ifinfo, hwaddr));
	EXPECT_EQ(92, offsetof(struct sluice_ifinfo, addr));
	EXPECT_EQ(132, offsetof(struct sluice_ifinfo, name));
	EXPECT_EQ(108, sizeof(struct sluice_neigh_resolve));
	EXPECT_EQ(24, offsetof(struct sluice_neigh_resolve, hwaddr));
}

TEST(version_reports_the_features)
{
	struct sluice_version v = { .size = sizeof(v) };
	int dev;

	ASSERT_EQ(0, ensure_loaded());
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, xioctl(dev, SLUICE_IOC_VERSION, &v));
	EXPECT_TRUE(v.features & SLUICE_FEATURE_FILTER);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_IFINFO);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_NEIGH);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_HANDOFF);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_FILTER_FD);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_FILTER_SOCK);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_FILTER_SIBLING);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_IPV6);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_SIBLING6);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_HANDOFF6);
	close(dev);
}

/* A stack "t_f" on lo, which is up. */
FIXTURE(filter) {
	int dev;
	int st;
	int lo;
	bool fmax_changed;
};

FIXTURE_SETUP(filter)
{
	ASSERT_EQ(0, ensure_loaded());
	if (have_ip())
		sh(IP " link set lo up");
	self->lo = if_nametoindex("lo");
	ASSERT_LT(0, self->lo);
	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, info_value("stacks"));
	self->st = create_stack(self->dev, "t_f", self->lo);
	ASSERT_LE(0, self->st);
	self->fmax_changed = false;
}

FIXTURE_TEARDOWN(filter)
{
	if (self->fmax_changed)
		write_file(PARAM_FMAX, "65536");
	if (self->st >= 0)
		close(self->st);
	close(self->dev);
	if (_metadata->passed)
		EXPECT_EQ(0, info_value("stacks"));
}

TEST_F(filter, add_size_rules)
{
	struct sluice_filter f;

	filter_init(&f, IPPROTO_TCP, NULL, 41000, NULL, 0);
	/* Below the first published size (32, without @fd). */
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				       sizeof(f), 31, 0));
	EXPECT_EQ(-E2BIG, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				      sizeof(f), sizeof(f) + TAIL, 0xff));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	ASSERT_EQ(0, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				 sizeof(f), sizeof(f), 0));
	EXPECT_EQ(sizeof(f), f.size);
	EXPECT_EQ(htons(41000), f.lport);
	EXPECT_NE(0, f.id);
	filter_init(&f, IPPROTO_TCP, NULL, 41001, NULL, 0);
	ASSERT_EQ(0, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				 sizeof(f), sizeof(f) + TAIL, 0));
	/* The module writes and reports only the bytes it knows. */
	EXPECT_EQ(sizeof(f), f.size);
	/* The first published size still works. */
	filter_init(&f, IPPROTO_TCP, NULL, 41002, NULL, 0);
	ASSERT_EQ(0, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				 sizeof(f), 32, 0));
	EXPECT_EQ(htons(41002), f.lport);
	EXPECT_EQ(3, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, add_nonzero_flags_or_reserved_is_einval)
{
	struct sluice_filter f;

	for (int i = 0; i < 7; i++) {
		filter_init(&f, IPPROTO_TCP, NULL, 41010, NULL, 0);
		switch (i) {
		case 0: f.flags = 8; break;
		case 1: f.reserved0[0] = 1; break;
		case 2: f.reserved0[2] = 0x80; break;
		case 3: f.reserved1 = 1; break;
		case 4: f.flags = 0x80000000u; break;
		case 5: f.reserved2 = 1; break;
		case 6: f.fd = 3; break;	/* without SLUICE_FILTER_RESV_FD */
		}
		EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f))
			TH_LOG("case %d", i);
	}
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	/* Nothing was reserved on the way. */
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41010));
}

TEST_F(filter, add_bad_protocol_is_einval)
{
	static const __u8 bad[] = { 0, IPPROTO_ICMP, IPPROTO_SCTP, 255,
				    IPPROTO_RAW, IPPROTO_UDPLITE };

	for (size_t i = 0; i < sizeof(bad); i++) {
		EXPECT_EQ(-EINVAL, add(self->st, bad[i], NULL, 41020, NULL, 0,
				       NULL)) TH_LOG("protocol %u", bad[i]);
	}
	EXPECT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41020, NULL, 0, NULL));
	EXPECT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41020, NULL, 0, NULL));
}

TEST_F(filter, add_half_a_remote_is_einval)
{
	EXPECT_EQ(-EINVAL, add(self->st, IPPROTO_TCP, "127.0.0.1", 41030,
			       "127.0.0.2", 0, NULL));
	EXPECT_EQ(-EINVAL, add(self->st, IPPROTO_TCP, "127.0.0.1", 41030,
			       NULL, 5000, NULL));
	/* A connection has a local port: 0 is for 3-tuples only. */
	EXPECT_EQ(-EINVAL, add(self->st, IPPROTO_TCP, "127.0.0.1", 0,
			       "127.0.0.2", 5000, NULL));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41030,
			 "127.0.0.2", 5000, NULL));
}

TEST_F(filter, add_duplicate_is_eexist)
{
	__u32 a, b;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41040, NULL, 0, &a));
	EXPECT_EQ(-EEXIST, add(self->st, IPPROTO_TCP, NULL, 41040, NULL, 0,
			       NULL));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41040,
			 "127.0.0.3", 999, &b));
	EXPECT_NE(a, b);
	EXPECT_EQ(-EEXIST, add(self->st, IPPROTO_TCP, "127.0.0.1", 41040,
			       "127.0.0.3", 999, NULL));
	/* Another protocol, another remote port: other filters. */
	EXPECT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41040, NULL, 0, NULL));
	EXPECT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41040,
			 "127.0.0.3", 1000, NULL));
	EXPECT_EQ(4, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, del_rules)
{
	struct sluice_filter f;
	__u32 id;

	ASSERT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41050, NULL, 0, &id));
	EXPECT_EQ(-ENOENT, del(self->st, id + 1000));
	EXPECT_EQ(-ENOENT, del(self->st, 0));

	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.id = id;
	/* Below the first published size (32). */
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_FILTER_DEL, &f,
				       sizeof(f), 31, 0));
	EXPECT_EQ(-E2BIG, sized_ioctl(self->st, SLUICE_IOC_FILTER_DEL, &f,
				      sizeof(f), sizeof(f) + TAIL, 1));
	f.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_DEL, &f));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	/* Only the id is read: the rest of the struct does not matter. */
	f.flags = 0;
	f.protocol = 99;
	f.reserved1 = 7;
	f.lport = 1;
	f.fd = -1;
	EXPECT_EQ(0, sized_ioctl(self->st, SLUICE_IOC_FILTER_DEL, &f,
				 sizeof(f), sizeof(f) + TAIL, 0));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(-ENOENT, del(self->st, id));
}

TEST_F(filter, ids_belong_to_their_stack)
{
	__u32 id;
	int st2;

	st2 = create_stack(self->dev, "t_f2", self->lo);
	ASSERT_LE(0, st2);
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41060, NULL, 0, &id));
	EXPECT_EQ(-ENOENT, del(st2, id));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	/* The other stack cannot reserve the same port. */
	EXPECT_EQ(-EADDRINUSE, add(st2, IPPROTO_TCP, NULL, 41060, NULL, 0,
				   NULL));
	close(st2);
}

TEST_F(filter, ioctls_belong_to_their_file)
{
	struct sluice_filter f;
	struct sluice_ifinfo info = { .size = sizeof(info), .ifindex = 1 };

	filter_init(&f, IPPROTO_TCP, NULL, 41070, NULL, 0);
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_FILTER_ADD, &f));
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_FILTER_DEL, &f));
	EXPECT_EQ(-ENOTTY, xioctl(self->st, SLUICE_IOC_IFINFO, &info));
}

TEST_F(filter, add_without_device_is_enodev)
{
	struct sluice_neigh_resolve r = { .size = sizeof(r) };
	int st0;

	r.addr = inet_addr("127.0.0.1");
	st0 = create_stack(self->dev, "t_f0", 0);
	ASSERT_LE(0, st0);
	EXPECT_EQ(-ENODEV, add(st0, IPPROTO_TCP, NULL, 41080, NULL, 0, NULL));
	EXPECT_EQ(-ENODEV, xioctl(st0, SLUICE_IOC_NEIGH_RESOLVE, &r));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41080));
	close(st0);
}

TEST_F(filter, add_without_rings_is_enoent)
{
	int st;

	st = create_stack_bare(self->dev, "t_fnr", self->lo);
	ASSERT_LE(0, st);
	EXPECT_EQ(-ENOENT, add(st, IPPROTO_TCP, NULL, 41085, NULL, 0, NULL));
	EXPECT_EQ(-ENOENT, add(st, IPPROTO_UDP, NULL, 0, NULL, 0, NULL));
	/* Nothing was reserved. */
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41085));
	close(st);
}

TEST_F(filter, port_the_kernel_uses_is_eaddrinuse)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_port = htons(41090),
	};
	int s;

	for (int i = 0; i < 2; i++) {
		int type = i ? SOCK_DGRAM : SOCK_STREAM;
		__u8 proto = i ? IPPROTO_UDP : IPPROTO_TCP;

		s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
		ASSERT_LE(0, s);
		ASSERT_EQ(0, bind(s, (struct sockaddr *)&sin, sizeof(sin)));
		EXPECT_EQ(-EADDRINUSE, add(self->st, proto, NULL, 41090, NULL,
					   0, NULL));
		EXPECT_EQ(-EADDRINUSE, add(self->st, proto, "127.0.0.1", 41090,
					   NULL, 0, NULL));
		EXPECT_EQ(-EADDRINUSE, add(self->st, proto, "127.0.0.1", 41090,
					   "127.0.0.2", 80, NULL));
		close(s);
		/* The kernel let the port go: so does the refusal. */
		EXPECT_EQ(0, add(self->st, proto, NULL, 41090, NULL, 0, NULL));
	}
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, filter_holds_its_port_until_del)
{
	__u32 tcp, udp;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41100, NULL, 0, &tcp));
	ASSERT_EQ(0, add(self->st, IPPROTO_UDP, "127.0.0.1", 41100, NULL, 0,
			 &udp));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41100));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, "127.0.0.1", 41100));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_DGRAM, "127.0.0.1", 41100));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_DGRAM, NULL, 41100));
	/* Only that protocol and port. */
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41101));
	EXPECT_EQ(0, del(self->st, tcp));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41100));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_DGRAM, "127.0.0.1", 41100));
	EXPECT_EQ(0, del(self->st, udp));
	EXPECT_EQ(0, try_bind(SOCK_DGRAM, "127.0.0.1", 41100));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, filter_holds_its_port_until_the_stack_goes)
{
	int fd2;
	struct sluice_stack_attach a = { .size = sizeof(a) };

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41110, NULL, 0, NULL));
	ASSERT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41110, NULL, 0, NULL));
	strcpy(a.name, "t_f");
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &a));
	fd2 = a.fd;
	/* One of two files closed: the stack, and its filters, live on. */
	close(self->st);
	self->st = -1;
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41110));
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	close(fd2);
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41110));
	EXPECT_EQ(0, try_bind(SOCK_DGRAM, NULL, 41110));
}

/* FILTER_FD: 0 or -errno, the new fd in *@fd. */
static int filter_fd(int st, __u32 id, int *fd)
{
	struct sluice_filter_fd a = { .size = sizeof(a), .id = id };
	int ret = xioctl(st, SLUICE_IOC_FILTER_FD, &a);

	if (!ret)
		*fd = a.fd;
	return ret;
}

TEST_F(filter, filter_fd_argument_rules)
{
	struct sluice_filter_fd a = { .size = sizeof(a) };
	__u32 id;
	int fd;

	EXPECT_EQ(16, sizeof(a));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41140, NULL, 0, &id));
	a.id = id;
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_FILTER_FD, &a,
				       sizeof(a), sizeof(a) - 1, 0));
	EXPECT_EQ(-E2BIG, sized_ioctl(self->st, SLUICE_IOC_FILTER_FD, &a,
				      sizeof(a), sizeof(a) + TAIL, 0xff));
	a.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_FD, &a));
	a.flags = 0;
	a.fd = 3;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_FD, &a));
	EXPECT_EQ(-ENOENT, filter_fd(self->st, id + 1000, &fd));
	/* On /dev/sluice, not a stack: not this command's file. */
	a.fd = 0;
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_FILTER_FD, &a));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(-ENOENT, filter_fd(self->st, id, &fd));
}

/*
 * The fd is the socket that holds the port: bound there, close-on-exec,
 * the default receive buffer again; a listener on it takes kernel
 * connections; the port stays held after the fd closes while the filter
 * lives, and after the filter goes while the fd lives, and is free when
 * both have gone.
 */
TEST_F(filter, filter_fd_is_the_ports_reservation)
{
	struct sockaddr_in sin = { .sin_family = AF_INET }, to = sin;
	socklen_t len = sizeof(sin);
	int fd, ufd, c, a, rcv = 0, dflt = 0, s, st;
	__u32 tcp, udp;

	/* A stack on a veth device of its own: the fixture's is on lo,
	 * whose packets its filters would steer (a stack on a device never
	 * sees the kernel's loopback, which is what the twin is for). */
	if (!have_ip())
		SKIP(return, "no " IP);
	sh(IP " link del twf0 2>/dev/null");
	ASSERT_EQ(0, sh(IP " link add twf0 type veth peer name twf1"));
	ASSERT_EQ(0, sh(IP " link set twf0 up"));
	st = create_stack(self->dev, "t_ffd", if_nametoindex("twf0"));
	ASSERT_LE(0, st);
	ASSERT_EQ(0, add(st, IPPROTO_TCP, NULL, 41150, NULL, 0, &tcp));
	ASSERT_EQ(0, add(st, IPPROTO_UDP, NULL, 41150, NULL, 0, &udp));
	ASSERT_EQ(0, filter_fd(st, tcp, &fd));
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, getsockname(fd, (struct sockaddr *)&sin, &len));
	EXPECT_EQ(htons(41150), sin.sin_port);
	EXPECT_EQ(INADDR_ANY, sin.sin_addr.s_addr);
	/* The default buffer, as a fresh socket's (the reservation had the
	 * least, which a listener's children would inherit). */
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	len = sizeof(dflt);
	getsockopt(s, SOL_SOCKET, SO_RCVBUF, &dflt, &len);
	close(s);
	len = sizeof(rcv);
	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
	EXPECT_EQ(dflt, rcv);
	/* A kernel client on 127.0.0.1 reaches a listener there. */
	ASSERT_EQ(0, listen(fd, 4));
	to.sin_port = htons(41150);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ(0, connect(c, (struct sockaddr *)&to, sizeof(to)));
	a = accept(fd, NULL, NULL);
	EXPECT_LE(0, a);
	/* Reset, not closed: a TIME-WAIT on the port would hold it. */
	setsockopt(a, SOL_SOCKET, SO_LINGER, &(struct linger){ 1, 0 },
		   sizeof(struct linger));
	close(a);
	close(c);
	/* Shut from listening, closed: the port is still the filter's. */
	EXPECT_EQ(0, shutdown(fd, SHUT_RD));
	close(fd);
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41150));
	/* The same socket again, not listening. */
	ASSERT_EQ(0, filter_fd(st, tcp, &fd));
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ(-1, connect(c, (struct sockaddr *)&to, sizeof(to)));
	EXPECT_EQ(ECONNREFUSED, errno);
	close(c);
	/* The filter gone, the fd still holds the port ... */
	EXPECT_EQ(0, del(st, tcp));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41150));
	close(fd);
	/* ... and then nobody. */
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41150));
	/* UDP: a kernel sender's datagram to 127.0.0.1 is there. */
	ASSERT_EQ(0, filter_fd(st, udp, &ufd));
	c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ(3, sendto(c, "abc", 3, 0, (struct sockaddr *)&to, sizeof(to)));
	close(c);
	{
		char b[8];

		EXPECT_EQ(3, recv(ufd, b, sizeof(b), MSG_DONTWAIT));
	}
	close(ufd);
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_DGRAM, NULL, 41150));
	EXPECT_EQ(0, del(st, udp));
	EXPECT_EQ(0, try_bind(SOCK_DGRAM, NULL, 41150));
	close(st);
	sh(IP " link del twf0");
}

/*
 * A kernel socket of @family (4 or 6) and @type, with @opts (RS_*) set
 * before its bind() to @addr:@port (NULL: any); listening if @lis.  The
 * socket, or -errno of the step that failed.
 */
#define RS_REUSEADDR	0x1
#define RS_REUSEPORT	0x2
#define RS_V6ONLY	0x4

static int resv_sock(int family, int type, const char *addr, __u16 port,
		     int opts, bool lis)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	int one = 1, s, len;
	void *sa;

	s = socket(family == 6 ? AF_INET6 : AF_INET, type | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (opts & RS_REUSEADDR)
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (opts & RS_REUSEPORT)
		setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (family == 6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY,
			   &(int){ !!(opts & RS_V6ONLY) }, sizeof(int));
	if (family == 6) {
		s6.sin6_port = htons(port);
		if (addr)
			inet_pton(AF_INET6, addr, &s6.sin6_addr);
		sa = &s6;
		len = sizeof(s6);
	} else {
		s4.sin_port = htons(port);
		s4.sin_addr.s_addr = addr ? inet_addr(addr) : INADDR_ANY;
		sa = &s4;
		len = sizeof(s4);
	}
	if (bind(s, sa, len) || (lis && listen(s, 4))) {
		int e = -errno;

		close(s);
		return e;
	}
	return s;
}

/* FILTER_ADD with @fd as the reservation; 0 or -errno, the id in *@id. */
static int add_own(int st, __u8 proto, const char *laddr, __u16 lport,
		   int fd, __u32 *id)
{
	struct sluice_filter f;
	int ret;

	filter_init(&f, proto, laddr, lport, NULL, 0);
	f.flags = SLUICE_FILTER_RESV_FD;
	f.fd = fd;
	ret = xioctl(st, SLUICE_IOC_FILTER_ADD, &f);
	if (!ret && id)
		*id = f.id;
	return ret;
}

/* A kernel socket's bind as two kernel sockets would see it, closed. */
static int try_bind_as(int family, int type, const char *addr, __u16 port,
		       int opts)
{
	int s = resv_sock(family, type, addr, port, opts, false);

	if (s >= 0)
		close(s);
	return s < 0 ? s : 0;
}

TEST_F(filter, resv_fd_argument_rules)
{
	struct sluice_filter f;
	int p[2], s, u, ok;
	__u32 id;

	filter_init(&f, IPPROTO_TCP, NULL, 0, NULL, 0);
	f.flags = SLUICE_FILTER_RESV_FD;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	filter_init(&f, IPPROTO_TCP, NULL, 41300, "10.1.1.1", 80);
	f.flags = SLUICE_FILTER_RESV_FD;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	filter_init(&f, IPPROTO_TCP, NULL, 41300, NULL, 0);
	f.flags = SLUICE_FILTER_RESV_FD;
	f.reserved2 = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	EXPECT_EQ(-EBADF, add_own(self->st, IPPROTO_TCP, NULL, 41300, -1, NULL));
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	EXPECT_EQ(-ENOTSOCK, add_own(self->st, IPPROTO_TCP, NULL, 41300, p[0],
				     NULL));
	close(p[0]);
	close(p[1]);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ(-EPROTONOSUPPORT, add_own(self->st, IPPROTO_TCP, NULL, 41300,
					    s, NULL));
	close(s);
	/* A UDP socket for a TCP filter, and the reverse. */
	u = resv_sock(4, SOCK_DGRAM, NULL, 41300, 0, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(-EPROTONOSUPPORT, add_own(self->st, IPPROTO_TCP, NULL, 41300,
					    u, NULL));
	s = resv_sock(4, SOCK_STREAM, NULL, 41300, 0, false);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EPROTONOSUPPORT, add_own(self->st, IPPROTO_UDP, NULL, 41300,
					    s, NULL));
	close(u);
	/* Another port, another address. */
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, NULL, 41301, s, NULL));
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, "127.0.0.1", 41300,
				   s, NULL));
	close(s);
	/* Not bound; listening. */
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, NULL, 41300, s, NULL));
	close(s);
	s = resv_sock(4, SOCK_STREAM, NULL, 41300, 0, true);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, NULL, 41300, s, NULL));
	close(s);
	/* IPv6-only on ::, or on an IPv6 address: no IPv4 port held. */
	s = resv_sock(6, SOCK_STREAM, NULL, 41300, RS_V6ONLY, false);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, NULL, 41300, s, NULL));
	close(s);
	s = resv_sock(6, SOCK_STREAM, "::1", 41300, 0, false);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, NULL, 41300, s, NULL));
	close(s);
	/* Bound to a device that is not the stack's (a stack on lo). */
	if (have_ip()) {
		sh(IP " link del rsv0 2>/dev/null");
		ASSERT_EQ(0, sh(IP " link add rsv0 type veth peer name rsv1"));
		s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ASSERT_EQ(0, setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE,
					"rsv0", 5));
		{
			struct sockaddr_in sin = {
				.sin_family = AF_INET,
				.sin_port = htons(41300),
			};

			ASSERT_EQ(0, bind(s, (struct sockaddr *)&sin,
					  sizeof(sin)));
		}
		EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_TCP, NULL, 41300,
					   s, NULL));
		close(s);
		sh(IP " link del rsv0");
	}
	/* Nothing was reserved on the way. */
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41300));
	/* A reservation of the stack covers it already (both sockets with
	 * SO_REUSEADDR, neither listening: the kernel let both bind). */
	s = resv_sock(4, SOCK_STREAM, NULL, 41302, RS_REUSEADDR, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, add_own(self->st, IPPROTO_TCP, NULL, 41302, s, &id));
	u = resv_sock(4, SOCK_STREAM, "127.0.0.1", 41302, RS_REUSEADDR, false);
	ASSERT_LE(0, u);
	ok = add_own(self->st, IPPROTO_TCP, "127.0.0.1", 41302, u, NULL);
	EXPECT_EQ(-EEXIST, ok);
	close(u);
	close(s);
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(0, del(self->st, id));
	/* On /dev/sluice, not a stack: not this command's file. */
	EXPECT_EQ(-ENOTTY, add_own(self->dev, IPPROTO_TCP, NULL, 41300, 0,
				   NULL));
}

/*
 * The caller's AF_INET6 socket on [::] (dual-stack) reserves the port in
 * both families as a kernel [::] socket does: a kernel bind() of either
 * family there is EADDRINUSE, with the fd closed too; FILTER_FD gives
 * that socket back; SO_REUSEADDR and SO_REUSEPORT set before its bind
 * are the kernel's to judge.
 */
TEST_F(filter, resv_fd_holds_the_port_as_the_callers_socket)
{
	struct sockaddr_in6 sin6;
	socklen_t len = sizeof(sin6);
	__u32 id, id2;
	int s, fd;

	s = resv_sock(6, SOCK_STREAM, NULL, 41310, 0, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, add_own(self->st, IPPROTO_TCP, NULL, 41310, s, &id));
	close(s);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, 41310, 0));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, 41310, 0));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, 41310,
					   RS_V6ONLY));
	ASSERT_EQ(0, filter_fd(self->st, id, &fd));
	ASSERT_EQ(0, getsockname(fd, (struct sockaddr *)&sin6, &len));
	EXPECT_EQ(AF_INET6, sin6.sin6_family);
	EXPECT_EQ(htons(41310), sin6.sin6_port);
	/* Shut from listening: the port stays (SOCK_BINDPORT_LOCK). */
	EXPECT_EQ(0, listen(fd, 4));
	EXPECT_EQ(0, shutdown(fd, SHUT_RD));
	close(fd);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, 41310, 0));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, NULL, 41310, 0));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, 41310, 0));

	/* SO_REUSEPORT: a kernel socket of the same user with it joins,
	 * one without it does not; UDP with SO_REUSEADDR alike. */
	s = resv_sock(4, SOCK_STREAM, NULL, 41311, RS_REUSEPORT, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, add_own(self->st, IPPROTO_TCP, NULL, 41311, s, &id));
	close(s);
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, NULL, 41311, RS_REUSEPORT));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, 41311, RS_REUSEPORT));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, 41311, 0));
	s = resv_sock(4, SOCK_DGRAM, NULL, 41311, RS_REUSEADDR, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, add_own(self->st, IPPROTO_UDP, NULL, 41311, s, &id2));
	close(s);
	EXPECT_EQ(0, try_bind_as(4, SOCK_DGRAM, NULL, 41311, RS_REUSEADDR));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_DGRAM, NULL, 41311, 0));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(0, del(self->st, id2));
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, NULL, 41311, 0));
	EXPECT_EQ(0, try_bind_as(4, SOCK_DGRAM, NULL, 41311, 0));
	/* v4-mapped: the address it names. */
	s = resv_sock(6, SOCK_DGRAM, "::ffff:127.0.0.1", 41312, 0, false);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_UDP, NULL, 41312, s,
				   NULL));
	ASSERT_EQ(0, add_own(self->st, IPPROTO_UDP, "127.0.0.1", 41312, s,
			     &id));
	close(s);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_DGRAM, "127.0.0.1", 41312,
					   0));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(0, try_bind_as(4, SOCK_DGRAM, "127.0.0.1", 41312, 0));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

/* FILTER_ADD with SLUICE_FILTER_SIBLING; *@id gets the id answered. */
static int add_sibling(int st, __u8 proto, const char *laddr, __u16 lport,
		       int fd, __u32 *id)
{
	struct sluice_filter f;
	int ret;

	filter_init(&f, proto, laddr, lport, NULL, 0);
	f.flags = SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING;
	f.fd = fd;
	f.id = 77;
	ret = xioctl(st, SLUICE_IOC_FILTER_ADD, &f);
	if (id)
		*id = f.id;
	return ret;
}

/*
 * IPv6 filters (SLUICE_FILTER_IPV6): @laddr6 and @raddr6 for @laddr and
 * @raddr.  NULL is :: for either address.
 */
static void filter6_init(struct sluice_filter *f, __u8 proto,
			 const char *laddr, __u16 lport,
			 const char *raddr, __u16 rport)
{
	filter_init(f, proto, NULL, lport, NULL, rport);
	f->flags = SLUICE_FILTER_IPV6;
	if (laddr)
		inet_pton(AF_INET6, laddr, f->laddr6);
	if (raddr)
		inet_pton(AF_INET6, raddr, f->raddr6);
}

static int add6(int st, __u8 proto, const char *laddr, __u16 lport,
		const char *raddr, __u16 rport, __u32 *id)
{
	struct sluice_filter f;
	int ret;

	filter6_init(&f, proto, laddr, lport, raddr, rport);
	ret = xioctl(st, SLUICE_IOC_FILTER_ADD, &f);
	if (!ret && id)
		*id = f.id;
	return ret;
}

/*
 * SLUICE_FILTER_SIBLING: another of the stack's sockets on a port one of
 * its reservations covers (an SO_REUSEPORT sibling's kernel twin) is
 * named as the stack's; no filter is made, nothing is reserved, and a
 * closed one holds no port.
 */
TEST_F(filter, sibling_rules)
{
	struct sluice_filter f;
	int s, t, u;
	__u32 id, sid;

	filter_init(&f, IPPROTO_TCP, NULL, 41320, NULL, 0);
	f.flags = SLUICE_FILTER_SIBLING;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	t = resv_sock(4, SOCK_STREAM, NULL, 41320, RS_REUSEPORT, false);
	ASSERT_LE(0, t);
	/* No reservation of the stack covers the port yet. */
	EXPECT_EQ(-ENOENT, add_sibling(self->st, IPPROTO_TCP, NULL, 41320, t,
				       NULL));
	s = resv_sock(4, SOCK_STREAM, NULL, 41320, RS_REUSEPORT, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, add_own(self->st, IPPROTO_TCP, NULL, 41320, s, &id));
	/* The reservation itself. */
	EXPECT_EQ(-EEXIST, add_sibling(self->st, IPPROTO_TCP, NULL, 41320, s,
				       NULL));
	EXPECT_EQ(-EBADF, add_sibling(self->st, IPPROTO_TCP, NULL, 41320, -1,
				      NULL));
	/* A UDP socket; a socket on another port. */
	u = resv_sock(4, SOCK_DGRAM, NULL, 41320, 0, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(-EPROTONOSUPPORT, add_sibling(self->st, IPPROTO_TCP, NULL,
						41320, u, NULL));
	close(u);
	u = resv_sock(4, SOCK_STREAM, NULL, 41321, RS_REUSEPORT, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(-EINVAL, add_sibling(self->st, IPPROTO_TCP, NULL, 41320, u,
				       NULL));
	EXPECT_EQ(-ENOENT, add_sibling(self->st, IPPROTO_TCP, NULL, 41321, u,
				       NULL));
	close(u);
	EXPECT_EQ(0, add_sibling(self->st, IPPROTO_TCP, NULL, 41320, t, &sid));
	EXPECT_EQ(0, sid);
	EXPECT_EQ(-EEXIST, add_sibling(self->st, IPPROTO_TCP, NULL, 41320, t,
				       NULL));
	/* Covered by the wildcard reservation: a sibling on 127.0.0.1. */
	u = resv_sock(4, SOCK_STREAM, "127.0.0.1", 41320, RS_REUSEPORT, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(0, add_sibling(self->st, IPPROTO_TCP, "127.0.0.1", 41320, u,
				 NULL));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	/* Closed, a sibling holds no port (the module only holds its sock). */
	close(u);
	close(t);
	close(s);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, 41320, 0));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, NULL, 41320, 0));
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, "127.0.0.1", 41320, 0));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

static int add6_own(int st, __u8 proto, const char *laddr, __u16 lport,
		    int fd, __u32 *id)
{
	struct sluice_filter f;
	int ret;

	filter6_init(&f, proto, laddr, lport, NULL, 0);
	f.flags |= SLUICE_FILTER_RESV_FD;
	f.fd = fd;
	ret = xioctl(st, SLUICE_IOC_FILTER_ADD, &f);
	if (!ret && id)
		*id = f.id;
	return ret;
}

static int add6_sibling(int st, __u8 proto, const char *laddr, __u16 lport,
			int fd, __u32 *id)
{
	struct sluice_filter f;
	int ret;

	filter6_init(&f, proto, laddr, lport, NULL, 0);
	f.flags |= SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING;
	f.fd = fd;
	f.id = 77;
	ret = xioctl(st, SLUICE_IOC_FILTER_ADD, &f);
	if (id)
		*id = f.id;
	return ret;
}

/*
 * SLUICE_FILTER_SIBLING with SLUICE_FILTER_IPV6 (SLUICE_FEATURE_SIBLING6):
 * as sibling_rules, for an IPv6 reservation; a sibling must hold the
 * IPv6 port (an AF_INET socket holds none), IPV6_V6ONLY or dual-stack,
 * and a dual-stack reservation's two families are named apart.
 */
TEST_F(filter, ipv6_sibling_rules)
{
	int s, t, u, d;
	__u32 id, id4, sid;

	t = resv_sock(6, SOCK_STREAM, NULL, 41330, RS_REUSEPORT, false);
	ASSERT_LE(0, t);
	/* No reservation of the stack covers the port yet. */
	EXPECT_EQ(-ENOENT, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, t,
					NULL));
	/* A dual-stack socket reserves both families' filters. */
	s = resv_sock(6, SOCK_STREAM, NULL, 41330, RS_REUSEPORT, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, add6_own(self->st, IPPROTO_TCP, NULL, 41330, s, &id));
	ASSERT_EQ(0, add_own(self->st, IPPROTO_TCP, NULL, 41330, s, &id4));
	/* The reservation itself, in either family. */
	EXPECT_EQ(-EEXIST, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, s,
					NULL));
	EXPECT_EQ(-EEXIST, add_sibling(self->st, IPPROTO_TCP, NULL, 41330, s,
				       NULL));
	EXPECT_EQ(-EBADF, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, -1,
				       NULL));
	/* A UDP socket; an AF_INET one (no IPv6 port); another port. */
	u = resv_sock(6, SOCK_DGRAM, NULL, 41330, 0, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(-EPROTONOSUPPORT, add6_sibling(self->st, IPPROTO_TCP, NULL,
						 41330, u, NULL));
	close(u);
	u = resv_sock(4, SOCK_STREAM, NULL, 41330, RS_REUSEPORT, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(-EINVAL, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, u,
					NULL));
	/* ... which IPv4's takes. */
	EXPECT_EQ(0, add_sibling(self->st, IPPROTO_TCP, NULL, 41330, u, NULL));
	close(u);
	u = resv_sock(6, SOCK_STREAM, NULL, 41331, RS_REUSEPORT, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(-EINVAL, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, u,
					NULL));
	EXPECT_EQ(-ENOENT, add6_sibling(self->st, IPPROTO_TCP, NULL, 41331, u,
					NULL));
	close(u);
	/* A dual-stack sibling, named in each family once. */
	EXPECT_EQ(0, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, t, &sid));
	EXPECT_EQ(0, sid);
	EXPECT_EQ(-EEXIST, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, t,
					NULL));
	EXPECT_EQ(0, add_sibling(self->st, IPPROTO_TCP, NULL, 41330, t, NULL));
	/* An IPV6_V6ONLY sibling holds IPv6's port alone. */
	d = resv_sock(6, SOCK_STREAM, NULL, 41330, RS_REUSEPORT | RS_V6ONLY,
		      false);
	ASSERT_LE(0, d);
	EXPECT_EQ(-EINVAL, add_sibling(self->st, IPPROTO_TCP, NULL, 41330, d,
				       NULL));
	EXPECT_EQ(0, add6_sibling(self->st, IPPROTO_TCP, NULL, 41330, d, NULL));
	/* Covered by the wildcard reservation: a sibling on ::1. */
	u = resv_sock(6, SOCK_STREAM, "::1", 41330, RS_REUSEPORT, false);
	ASSERT_LE(0, u);
	EXPECT_EQ(0, add6_sibling(self->st, IPPROTO_TCP, "::1", 41330, u,
				  NULL));
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	/* Closed, a sibling holds no port. */
	close(u);
	close(d);
	close(t);
	close(s);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, 41330,
					   RS_V6ONLY));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(0, del(self->st, id4));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, 41330, 0));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, "::1", 41330, 0));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

/* Every argument an IPv6 filter can get wrong, each -EINVAL. */
TEST_F(filter, ipv6_argument_rules)
{
	struct sluice_filter f;
	int s;

	/* A caller that does not know @raddr6 cannot ask for IPv6. */
	filter6_init(&f, IPPROTO_TCP, NULL, 41400, NULL, 0);
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				       sizeof(f), 40, 0));
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				       sizeof(f), sizeof(f) - 1, 0));
	/* Bytes past the struct still must be zero. */
	EXPECT_EQ(-E2BIG, sized_ioctl(self->st, SLUICE_IOC_FILTER_ADD, &f,
				      sizeof(f), sizeof(f) + TAIL, 0xff));
	for (int i = 0; i < 13; i++) {
		filter6_init(&f, IPPROTO_TCP, NULL, 41400, NULL, 0);
		switch (i) {
		case 0: f.laddr = inet_addr("127.0.0.1"); break;
		case 1: f.raddr = inet_addr("127.0.0.2"); f.rport = 1; break;
		case 2: f.flags = 0; f.laddr6[15] = 1; break;
		case 3: f.flags = 0; f.raddr6[0] = 0xfd; break;
		case 4: inet_pton(AF_INET6, "::ffff:127.0.0.1", f.laddr6); break;
		case 5: inet_pton(AF_INET6, "::ffff:10.0.0.1", f.raddr6);
			f.rport = htons(80); break;
		case 6: inet_pton(AF_INET6, "fd00::2", f.raddr6); break;
		case 7: f.rport = htons(80); break;
		case 8: inet_pton(AF_INET6, "fd00::2", f.raddr6);
			f.rport = htons(80); f.lport = 0; break;
		case 9: f.protocol = IPPROTO_ICMPV6; break;
		case 10: f.flags |= SLUICE_FILTER_RESV_FD; f.fd = 0;
			inet_pton(AF_INET6, "fd00::2", f.raddr6);
			f.rport = htons(80); break;
		case 11: f.flags |= 8; break;
		/* A sibling is a socket's, IPv6's as IPv4's. */
		case 12: f.flags |= SLUICE_FILTER_SIBLING; break;
		}
		EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f))
			TH_LOG("case %d", i);
	}
	/* The caller's socket: an AF_INET one holds no IPv6 port; nor does
	 * one bound to another address. */
	s = resv_sock(4, SOCK_STREAM, NULL, 41400, 0, false);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EINVAL, add6_own(self->st, IPPROTO_TCP, NULL, 41400, s, NULL));
	close(s);
	s = resv_sock(6, SOCK_STREAM, "::1", 41400, 0, false);
	ASSERT_LE(0, s);
	EXPECT_EQ(-EINVAL, add6_own(self->st, IPPROTO_TCP, NULL, 41400, s, NULL));
	EXPECT_EQ(-EPROTONOSUPPORT, add6_own(self->st, IPPROTO_UDP, "::1",
					     41400, s, NULL));
	close(s);
	/* Nothing was reserved on the way. */
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, 41400, RS_V6ONLY));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, 41400, 0));
	/* The same arguments right: a filter, once. */
	EXPECT_EQ(0, add6(self->st, IPPROTO_TCP, NULL, 41400, NULL, 0, NULL));
	EXPECT_EQ(-EEXIST, add6(self->st, IPPROTO_TCP, NULL, 41400, NULL, 0,
				NULL));
	EXPECT_EQ(0, add6(self->st, IPPROTO_TCP, "::1", 41400, "fd00::2", 80,
			  NULL));
	EXPECT_EQ(-EEXIST, add6(self->st, IPPROTO_TCP, "::1", 41400, "fd00::2",
				80, NULL));
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
}

/*
 * The module's reservation of an IPv6 filter is an IPV6_V6ONLY socket:
 * it holds the IPv6 port, not IPv4's, which an IPv4 filter reserves
 * beside it; a port of 0 is one the kernel picks.
 */
TEST_F(filter, ipv6_filter_reserves_the_ipv6_port)
{
	struct sluice_filter f;
	__u32 id, id4, id1;

	ASSERT_EQ(0, add6(self->st, IPPROTO_TCP, NULL, 41410, NULL, 0, &id));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, 41410,
					   RS_V6ONLY));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, 41410, 0));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, "::1", 41410, 0));
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, NULL, 41410, 0));
	EXPECT_EQ(0, try_bind_as(6, SOCK_DGRAM, NULL, 41410, 0));
	/* IPv4's filter of the port beside it. */
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41410, NULL, 0, &id4));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, 41410, 0));
	/* A connection on ::1 shares the reservation of ::. */
	ASSERT_EQ(0, add6(self->st, IPPROTO_TCP, "::1", 41410, "::1", 5000,
			  &id1));
	EXPECT_EQ(0, del(self->st, id));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, 41410,
					   RS_V6ONLY));
	EXPECT_EQ(0, del(self->st, id1));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, 41410, RS_V6ONLY));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, 41410, 0));
	EXPECT_EQ(0, del(self->st, id4));
	EXPECT_EQ(0, try_bind_as(4, SOCK_STREAM, NULL, 41410, 0));
	/* A specific address: its port there. */
	ASSERT_EQ(0, add6(self->st, IPPROTO_UDP, "::1", 41411, NULL, 0, &id));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_DGRAM, "::1", 41411, 0));
	EXPECT_EQ(0, del(self->st, id));
	/* Port 0: the kernel's pick, held. */
	filter6_init(&f, IPPROTO_UDP, NULL, 0, NULL, 0);
	ASSERT_EQ(0, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	EXPECT_NE(0, f.lport);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_DGRAM, NULL, ntohs(f.lport),
					   RS_V6ONLY));
	EXPECT_EQ(0, del(self->st, f.id));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

/* IPv6 lookups: most specific first, and never an IPv4 filter's. */
TEST_F(filter, ipv6_match_order)
{
	char out[64], want[64], buf[16384], line[200];
	__u32 any, local, conn, v4;
	int lo = self->lo;

	ASSERT_EQ(0, add6(self->st, IPPROTO_TCP, NULL, 41420, NULL, 0, &any));
	ASSERT_EQ(0, add6(self->st, IPPROTO_TCP, "::1", 41420, NULL, 0,
			  &local));
	ASSERT_EQ(0, add6(self->st, IPPROTO_TCP, "::1", 41420, "fd00::5", 7000,
			  &conn));
	ASSERT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41421, NULL, 0, &v4));

	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "fd00::5", 7000, "::1",
			   41420));
	snprintf(want, sizeof(want), "t_f %u", conn);
	EXPECT_STREQ(want, out);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "fd00::5", 7001, "::1",
			   41420));
	snprintf(want, sizeof(want), "t_f %u", local);
	EXPECT_STREQ(want, out);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "fd00::5", 7000,
			   "fd00::1", 41420));
	snprintf(want, sizeof(want), "t_f %u", any);
	EXPECT_STREQ(want, out);
	/* An IPv4 packet of the IPv6 filters' port, and the reverse. */
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "10.0.0.5", 7000,
			   "127.0.0.1", 41420));
	EXPECT_STREQ("none", out);
	ASSERT_EQ(0, match(out, sizeof(out), "udp", lo, "fd00::5", 7000, "::1",
			   41421));
	EXPECT_STREQ("none", out);
	ASSERT_EQ(0, match(out, sizeof(out), "udp", lo, "10.0.0.5", 7000,
			   "127.0.0.1", 41421));
	snprintf(want, sizeof(want), "t_f %u", v4);
	EXPECT_STREQ(want, out);
	/* Another device; mixed families are no query. */
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo + 1000, "fd00::5", 7000,
			   "::1", 41420));
	EXPECT_STREQ("none", out);
	EXPECT_NE(0, match(out, sizeof(out), "tcp", lo, "fd00::5", 7000,
			   "127.0.0.1", 41420));
	/* The dump shows them in brackets, each counted. */
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	snprintf(line, sizeof(line),
		 "filter %u tcp [::1]:41420 [fd00::5]:7000 matches 1\n", conn);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);
	snprintf(line, sizeof(line),
		 "filter %u tcp [::]:41420 [::]:0 matches 1\n", any);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);
	EXPECT_EQ(0, del(self->st, conn));
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "fd00::5", 7000, "::1",
			   41420));
	snprintf(want, sizeof(want), "t_f %u", local);
	EXPECT_STREQ(want, out);
}

/*
 * The caller's AF_INET6 socket reserves an IPv6 filter: IPV6_V6ONLY on
 * ::, or a dual-stack one on :: for both families' filters, whose port
 * stays locked until the last of the two goes (a port the kernel picked,
 * so the lock is the filters' own: a listener's shutdown would free it).
 */
TEST_F(filter, ipv6_resv_fd_of_either_kind)
{
	struct sockaddr_in6 sin6;
	socklen_t len = sizeof(sin6);
	__u32 id4, id6;
	__u16 port;
	int s, fd;

	s = resv_sock(6, SOCK_DGRAM, NULL, 41430, RS_V6ONLY, false);
	ASSERT_LE(0, s);
	/* IPV6_V6ONLY: no IPv4 port. */
	EXPECT_EQ(-EINVAL, add_own(self->st, IPPROTO_UDP, NULL, 41430, s, NULL));
	ASSERT_EQ(0, add6_own(self->st, IPPROTO_UDP, NULL, 41430, s, &id6));
	EXPECT_EQ(-EEXIST, add6_own(self->st, IPPROTO_UDP, NULL, 41430, s,
				    NULL));
	close(s);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_DGRAM, NULL, 41430,
					   RS_V6ONLY));
	EXPECT_EQ(0, try_bind_as(4, SOCK_DGRAM, NULL, 41430, 0));
	EXPECT_EQ(0, del(self->st, id6));
	EXPECT_EQ(0, try_bind_as(6, SOCK_DGRAM, NULL, 41430, RS_V6ONLY));

	/* Dual-stack, on a port the kernel picked. */
	s = resv_sock(6, SOCK_STREAM, NULL, 0, 0, false);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, getsockname(s, (struct sockaddr *)&sin6, &len));
	port = ntohs(sin6.sin6_port);
	ASSERT_EQ(0, add_own(self->st, IPPROTO_TCP, NULL, port, s, &id4));
	ASSERT_EQ(0, add6_own(self->st, IPPROTO_TCP, NULL, port, s, &id6));
	close(s);
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	/* IPv4's filter gone, IPv6's keeps the socket and its port lock. */
	EXPECT_EQ(0, del(self->st, id4));
	ASSERT_EQ(0, filter_fd(self->st, id6, &fd));
	EXPECT_EQ(0, listen(fd, 4));
	EXPECT_EQ(0, shutdown(fd, SHUT_RD));
	close(fd);
	EXPECT_EQ(-EADDRINUSE, try_bind_as(6, SOCK_STREAM, NULL, port,
					   RS_V6ONLY));
	EXPECT_EQ(-EADDRINUSE, try_bind_as(4, SOCK_STREAM, NULL, port, 0));
	EXPECT_EQ(0, del(self->st, id6));
	EXPECT_EQ(0, try_bind_as(6, SOCK_STREAM, NULL, port, 0));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, lport_zero_reserves_a_port_the_kernel_picks)
{
	struct sluice_filter f;
	__u16 tcp, udp;

	filter_init(&f, IPPROTO_TCP, NULL, 0, NULL, 0);
	ASSERT_EQ(0, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	tcp = ntohs(f.lport);
	EXPECT_NE(0, tcp);
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, tcp));
	EXPECT_EQ(-EEXIST, add(self->st, IPPROTO_TCP, NULL, tcp, NULL, 0,
			       NULL));

	filter_init(&f, IPPROTO_UDP, "127.0.0.1", 0, NULL, 0);
	ASSERT_EQ(0, xioctl(self->st, SLUICE_IOC_FILTER_ADD, &f));
	udp = ntohs(f.lport);
	EXPECT_NE(0, udp);
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_DGRAM, "127.0.0.1", udp));
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	close(self->st);
	self->st = -1;
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, tcp));
	EXPECT_EQ(0, try_bind(SOCK_DGRAM, "127.0.0.1", udp));
}

TEST_F(filter, filters_share_a_reservation)
{
	__u32 c1, c2, lst;

	/* Two connections from one local port. */
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41120,
			 "127.0.0.2", 1000, &c1));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41120,
			 "127.0.0.2", 1001, &c2));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, "127.0.0.1", 41120));
	EXPECT_EQ(0, del(self->st, c1));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, "127.0.0.1", 41120));
	EXPECT_EQ(0, del(self->st, c2));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, "127.0.0.1", 41120));

	/* A listener on any address covers the connections it accepts. */
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41121, NULL, 0, &lst));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41121,
			 "127.0.0.9", 5555, &c1));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41121, NULL, 0,
			 &c2));
	EXPECT_EQ(0, del(self->st, lst));
	/* The connection still holds the wildcard reservation. */
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41121));
	EXPECT_EQ(0, del(self->st, c1));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41121));
	EXPECT_EQ(0, del(self->st, c2));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41121));
}

/*
 * The reservation is made with the credentials of whoever issues ADD,
 * not the stack's creator's: root's stack used by nobody cannot take a
 * privileged port, nobody's stack used by root can.
 */
TEST_F(filter, privileged_port_follows_the_callers_credentials)
{
	int go[2], res[2], st2, ret;
	struct sluice_stack_attach a = { .size = sizeof(a) };
	pid_t pid;
	char c;

	/* Root's stack, nobody's call. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (drop_to_nobody())
			_exit(100);
		ret = add(self->st, IPPROTO_TCP, NULL, 80, NULL, 0, NULL);
		if (ret != -EACCES)
			_exit(ret < 0 ? -ret : 101);
		/* Not the uid as such: an unprivileged port is fine. */
		ret = add(self->st, IPPROTO_TCP, NULL, 41130, NULL, 0, NULL);
		_exit(ret < 0 ? -ret : 0);
	}
	EXPECT_EQ(0, child_status(pid));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 80));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 41130));

	/* Nobody's stack, root's call. */
	ASSERT_EQ(0, pipe2(go, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(res, O_CLOEXEC));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd;

		close(go[1]);
		close(res[0]);
		if (drop_to_nobody())
			_exit(100);
		fd = create_stack(self->dev, "t_nobody", self->lo);
		if (fd < 0)
			_exit(-fd);
		ret = add(fd, IPPROTO_TCP, NULL, 81, NULL, 0, NULL);
		c = ret == -EACCES ? 'y' : 'n';
		if (write(res[1], &c, 1) != 1)
			_exit(102);
		/* Hold the stack until the parent is done with it. */
		if (read(go[0], &c, 1) < 0)
			_exit(103);
		close(fd);
		_exit(0);
	}
	close(go[0]);
	close(res[1]);
	ASSERT_EQ(1, read(res[0], &c, 1));
	EXPECT_EQ('y', c);
	strcpy(a.name, "t_nobody");
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &a));
	st2 = a.fd;
	EXPECT_EQ(0, add(st2, IPPROTO_TCP, NULL, 81, NULL, 0, NULL));
	EXPECT_EQ(-EADDRINUSE, try_bind(SOCK_STREAM, NULL, 81));
	EXPECT_EQ(1, stack_attr_ll("t_nobody", "filters"));
	close(st2);
	close(go[1]);
	EXPECT_EQ(0, child_status(pid));
	close(res[0]);
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 81));
}

TEST_F(filter, caller_in_another_netns_is_exdev)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ret;

		if (unshare(CLONE_NEWNET))
			_exit(100);
		ret = add(self->st, IPPROTO_TCP, NULL, 41140, NULL, 0, NULL);
		_exit(ret < 0 ? -ret : 0);
	}
	EXPECT_EQ(EXDEV, child_status(pid));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, filter_max_is_enospc)
{
	__u32 ids[4], extra;
	int st2;

	ASSERT_EQ(0, write_file(PARAM_FMAX, "4"));
	self->fmax_changed = true;
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41150 + i, NULL,
				 0, &ids[i]));
	}
	EXPECT_EQ(-ENOSPC, add(self->st, IPPROTO_UDP, NULL, 41154, NULL, 0,
			       NULL));
	/* The refusal reserved nothing. */
	EXPECT_EQ(0, try_bind(SOCK_DGRAM, NULL, 41154));
	EXPECT_EQ(0, del(self->st, ids[1]));
	EXPECT_EQ(0, add(self->st, IPPROTO_UDP, NULL, 41154, NULL, 0, &extra));
	EXPECT_EQ(4, stack_attr_ll("t_f", "filters"));
	/* The cap is per stack. */
	st2 = create_stack(self->dev, "t_f2", self->lo);
	ASSERT_LE(0, st2);
	EXPECT_EQ(0, add(st2, IPPROTO_UDP, NULL, 41155, NULL, 0, NULL));
	close(st2);
}

TEST_F(filter, efault_on_output_takes_the_filter_back)
{
	struct sluice_filter *f;

	f = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, f);
	filter_init(f, IPPROTO_TCP, NULL, 41160, NULL, 0);
	ASSERT_EQ(0, mprotect(f, PAGE, PROT_READ));
	EXPECT_EQ(-EFAULT, xioctl(self->st, SLUICE_IOC_FILTER_ADD, f));
	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	EXPECT_EQ(0, try_bind(SOCK_STREAM, NULL, 41160));
	munmap(f, PAGE);
}

TEST_F(filter, sysfs_and_debugfs_show_the_filters)
{
	char buf[16384], line[160];
	__u32 a, b;

	EXPECT_EQ(0, stack_attr_ll("t_f", "filters"));
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "filters 0 adds 0 dels 0 matches 0\n"));

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41170, NULL, 0, &a));
	ASSERT_EQ(0, add(self->st, IPPROTO_UDP, "127.0.0.1", 41171,
			 "127.0.0.2", 53, &b));
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "filters 2 adds 2 dels 0 matches 0\n"));
	snprintf(line, sizeof(line),
		 "filter %u tcp 0.0.0.0:41170 0.0.0.0:0 matches 0\n", a);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);
	snprintf(line, sizeof(line),
		 "filter %u udp 127.0.0.1:41171 127.0.0.2:53 matches 0\n", b);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);

	EXPECT_EQ(0, del(self->st, a));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "filters 1 adds 2 dels 1 matches 0\n"));
	snprintf(line, sizeof(line), "filter %u ", a);
	EXPECT_EQ(NULL, strstr(buf, line));
}

/* Most specific first: 5-tuple, local address, any address. */
TEST_F(filter, match_order)
{
	__u32 any, local, conn, other;
	char out[64], want[64], buf[16384], line[160];
	int st2, lo = self->lo;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41180, NULL, 0, &any));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41180, NULL, 0,
			 &local));
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, "127.0.0.1", 41180,
			 "127.0.0.5", 7000, &conn));
	st2 = create_stack(self->dev, "t_f2", lo);
	ASSERT_LE(0, st2);
	ASSERT_EQ(0, add(st2, IPPROTO_UDP, NULL, 41181, NULL, 0, &other));

	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.5", 7000,
			   "127.0.0.1", 41180));
	snprintf(want, sizeof(want), "t_f %u", conn);
	EXPECT_STREQ(want, out);
	/* Another remote port or address: the listener on 127.0.0.1. */
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.5", 7001,
			   "127.0.0.1", 41180));
	snprintf(want, sizeof(want), "t_f %u", local);
	EXPECT_STREQ(want, out);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.6", 7000,
			   "127.0.0.1", 41180));
	EXPECT_STREQ(want, out);
	/* Another local address: the listener on any. */
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.5", 7000,
			   "127.0.0.2", 41180));
	snprintf(want, sizeof(want), "t_f %u", any);
	EXPECT_STREQ(want, out);
	/* Another stack's filter. */
	ASSERT_EQ(0, match(out, sizeof(out), "udp", lo, "127.0.0.5", 7000,
			   "127.0.0.3", 41181));
	snprintf(want, sizeof(want), "t_f2 %u", other);
	EXPECT_STREQ(want, out);
	/* Nothing for another port, protocol or device. */
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.5", 7000,
			   "127.0.0.1", 41182));
	EXPECT_STREQ("none", out);
	ASSERT_EQ(0, match(out, sizeof(out), "udp", lo, "127.0.0.5", 7000,
			   "127.0.0.1", 41180));
	EXPECT_STREQ("none", out);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo + 1000, "127.0.0.5",
			   7000, "127.0.0.1", 41180));
	EXPECT_STREQ("none", out);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.5", 41180,
			   "127.0.0.1", 7000));
	EXPECT_STREQ("none", out);

	/* Each match counted on its filter and its stack. */
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "filters 3 adds 3 dels 0 matches 4\n"));
	snprintf(line, sizeof(line), "filter %u tcp 127.0.0.1:41180 127.0.0.5:7000 matches 1\n",
		 conn);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);
	snprintf(line, sizeof(line), "filter %u tcp 127.0.0.1:41180 0.0.0.0:0 matches 2\n",
		 local);
	EXPECT_NE(NULL, strstr(buf, line)) TH_LOG("%s", buf);

	/* Gone filters match no more; the next most specific takes over. */
	EXPECT_EQ(0, del(self->st, conn));
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", lo, "127.0.0.5", 7000,
			   "127.0.0.1", 41180));
	snprintf(want, sizeof(want), "t_f %u", local);
	EXPECT_STREQ(want, out);
	close(st2);
	ASSERT_EQ(0, match(out, sizeof(out), "udp", lo, "127.0.0.5", 7000,
			   "127.0.0.3", 41181));
	EXPECT_STREQ("none", out);
}

/*
 * SLUICE_IOC_HANDOFF.  The kernel socket that takes a connection is made
 * here as the library makes it: TCP_REPAIR on, bound to the stack's
 * address and port, connected in repair mode (no SYN is sent).
 */
static void handoff_init(struct sluice_handoff *h, int fd, __u16 lport,
			 __u16 rport)
{
	memset(h, 0, sizeof(*h));
	h->size = sizeof(*h);
	h->fd = fd;
	h->protocol = IPPROTO_TCP;
	h->laddr = inet_addr("127.0.0.1");
	h->raddr = inet_addr("127.0.0.5");
	h->lport = htons(lport);
	h->rport = htons(rport);
}

/* A TCP socket 127.0.0.1:@lport -> 127.0.0.5:@rport, in repair mode
 * unless !@repair (then only bound); its fd or -errno. */
static int repair_sock(__u16 lport, __u16 rport, bool repair, bool do_connect)
{
	struct sockaddr_in me = {
		.sin_family = AF_INET, .sin_port = htons(lport),
		.sin_addr.s_addr = inet_addr("127.0.0.1"),
	};
	struct sockaddr_in peer = {
		.sin_family = AF_INET, .sin_port = htons(rport),
		.sin_addr.s_addr = inet_addr("127.0.0.5"),
	};
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e;

	if (s < 0)
		return -errno;
	if ((repair && setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one))) ||
	    (repair && bind(s, (struct sockaddr *)&me, sizeof(me))) ||
	    (do_connect && connect(s, (struct sockaddr *)&peer, sizeof(peer)))) {
		e = errno;
		close(s);
		return -e;
	}
	return s;
}

static int handoff(int st, struct sluice_handoff *h)
{
	return xioctl(st, SLUICE_IOC_HANDOFF, h);
}

TEST(handoff_struct_layout)
{
	EXPECT_EQ(68, sizeof(struct sluice_handoff));
	EXPECT_EQ(8, offsetof(struct sluice_handoff, fd));
	EXPECT_EQ(12, offsetof(struct sluice_handoff, protocol));
	EXPECT_EQ(16, offsetof(struct sluice_handoff, laddr));
	EXPECT_EQ(24, offsetof(struct sluice_handoff, lport));
	EXPECT_EQ(28, offsetof(struct sluice_handoff, id));
	EXPECT_EQ(36, offsetof(struct sluice_handoff, laddr6));
	EXPECT_EQ(52, offsetof(struct sluice_handoff, raddr6));
	EXPECT_EQ(0x0f, _IOC_NR(SLUICE_IOC_HANDOFF));
	/* The first size, as before the IPv6 fields: either caller meets it. */
	EXPECT_EQ(36, _IOC_SIZE(SLUICE_IOC_HANDOFF));
	EXPECT_EQ(SLUICE_HANDOFF_SIZE_VER0,
		  offsetof(struct sluice_handoff, reserved1) + 4);
}

TEST_F(filter, handoff_argument_rules)
{
	struct sluice_handoff h;
	int ks;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41300, NULL, 0, NULL));
	ks = repair_sock(41300, 7000, true, true);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41300, 7000);
	/* Below the first size (the IPv6 fields are optional). */
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_HANDOFF, &h,
				       sizeof(h), SLUICE_HANDOFF_SIZE_VER0 - 1,
				       0));
	EXPECT_EQ(-E2BIG, sized_ioctl(self->st, SLUICE_IOC_HANDOFF, &h,
				      sizeof(h), sizeof(h) + TAIL, 0xff));
	h.flags = 2;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	/* IPv6 addresses without the flag, the flag with IPv4's. */
	handoff_init(&h, ks, 41300, 7000);
	h.laddr6[15] = 1;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 41300, 7000);
	h.flags = SLUICE_HANDOFF_IPV6;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 41300, 7000);
	h.reserved0[1] = 1;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 41300, 7000);
	h.reserved1 = 1;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 41300, 7000);
	h.protocol = IPPROTO_UDP;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 41300, 0);
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 0, 7000);
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	handoff_init(&h, ks, 41300, 7000);
	h.raddr = 0;
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	/* Not the socket's own tuple. */
	handoff_init(&h, ks, 41300, 7001);
	EXPECT_EQ(-EINVAL, handoff(self->st, &h));
	/* The stack fd's command: -ENOTTY on /dev/sluice. */
	handoff_init(&h, ks, 41300, 7000);
	EXPECT_EQ(-ENOTTY, handoff(self->dev, &h));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
	close(ks);
}

TEST_F(filter, handoff_bad_fd)
{
	struct sluice_handoff h;
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC), u, ks;

	ASSERT_LE(0, nul);
	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41301, NULL, 0, NULL));
	handoff_init(&h, -1, 41301, 7000);
	EXPECT_EQ(-EBADF, handoff(self->st, &h));
	handoff_init(&h, 1000000, 41301, 7000);
	EXPECT_EQ(-EBADF, handoff(self->st, &h));
	handoff_init(&h, nul, 41301, 7000);
	EXPECT_EQ(-ENOTSOCK, handoff(self->st, &h));
	u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, u);
	handoff_init(&h, u, 41301, 7000);
	EXPECT_EQ(-EPROTONOSUPPORT, handoff(self->st, &h));
	close(u);
	u = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (u >= 0) {
		handoff_init(&h, u, 41301, 7000);
		EXPECT_EQ(-EPROTONOSUPPORT, handoff(self->st, &h));
		close(u);
	}
	/* A plain TCP socket: no repair mode, so no CAP_NET_ADMIN shown. */
	ks = repair_sock(41301, 7000, false, false);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41301, 7000);
	EXPECT_EQ(-EPERM, handoff(self->st, &h));
	close(ks);
	/* In repair mode, bound, not connected. */
	ks = repair_sock(41301, 7000, true, false);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41301, 7000);
	EXPECT_EQ(-ENOTCONN, handoff(self->st, &h));
	close(ks);
	close(nul);
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
}

TEST_F(filter, handoff_of_a_tuple_the_stack_does_not_steer_is_enoent)
{
	struct sluice_handoff h;
	int st2, ks;

	ks = repair_sock(41302, 7000, true, true);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41302, 7000);
	EXPECT_EQ(-ENOENT, handoff(self->st, &h));
	close(ks);
	/* Another stack's port is not this one's either. */
	st2 = create_stack(self->dev, "t_f2", self->lo);
	ASSERT_LE(0, st2);
	ASSERT_EQ(0, add(st2, IPPROTO_TCP, NULL, 41302, NULL, 0, NULL));
	ks = repair_sock(41302, 7000, true, true);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41302, 7000);
	EXPECT_EQ(-ENOENT, handoff(self->st, &h));
	EXPECT_EQ(0, handoff(st2, &h));
	close(st2);
	close(ks);
}

TEST_F(filter, handoff_without_device_is_enodev)
{
	struct sluice_handoff h;
	int st0, ks;

	st0 = create_stack(self->dev, "t_f0", 0);
	ASSERT_LE(0, st0);
	ks = repair_sock(41303, 7000, true, true);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41303, 7000);
	EXPECT_EQ(-ENODEV, handoff(st0, &h));
	close(ks);
	close(st0);
}

TEST_F(filter, handoff_caller_in_another_netns_is_exdev)
{
	struct sluice_handoff h;
	pid_t pid;
	int ks;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41304, NULL, 0, NULL));
	ks = repair_sock(41304, 7000, true, true);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41304, 7000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(unshare(CLONE_NEWNET) ? 2 :
		      handoff(self->st, &h) == -EXDEV ? 0 : 1);
	EXPECT_EQ(0, child_status(pid));
	close(ks);
}

/* The tuple goes to the kernel while its socket lives, and comes back to
 * the stack's filters when the socket closes; one hand-off a tuple. */
TEST_F(filter, handoff_passes_the_tuple_while_the_socket_lives)
{
	struct sluice_handoff h;
	char out[64], want[64], buf[16384];
	__u32 any;
	int ks, ks2;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41305, NULL, 0, &any));
	ks = repair_sock(41305, 7000, true, true);
	ASSERT_LE(0, ks);
	handoff_init(&h, ks, 41305, 7000);
	ASSERT_EQ(0, handoff(self->st, &h));
	EXPECT_NE(0, h.id);
	EXPECT_NE(any, h.id);
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "127.0.0.5",
			   7000, "127.0.0.1", 41305));
	snprintf(want, sizeof(want), "kernel %u", h.id);
	EXPECT_STREQ(want, out);
	/* Another remote port: still the stack's. */
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "127.0.0.5",
			   7001, "127.0.0.1", 41305));
	snprintf(want, sizeof(want), "t_f %u", any);
	EXPECT_STREQ(want, out);
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "handoff %u tcp 127.0.0.1:41305 127.0.0.5:7000", h.id);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	/* Once is all. */
	ks2 = repair_sock(41305, 7000, true, false);
	EXPECT_EQ(-EEXIST, handoff(self->st, &h));
	/* Closed (repair mode: no RST), the tuple is the stack's again. */
	close(ks);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "127.0.0.5",
			   7000, "127.0.0.1", 41305));
	snprintf(want, sizeof(want), "t_f %u", any);
	EXPECT_STREQ(want, out);
	/* A new hand-off of the tuple replaces the dead entry. */
	if (ks2 >= 0) {
		struct sockaddr_in peer = {
			.sin_family = AF_INET, .sin_port = htons(7000),
			.sin_addr.s_addr = inet_addr("127.0.0.5"),
		};
		__u32 old = h.id;

		ASSERT_EQ(0, connect(ks2, (struct sockaddr *)&peer, sizeof(peer)));
		handoff_init(&h, ks2, 41305, 7000);
		ASSERT_EQ(0, handoff(self->st, &h));
		EXPECT_NE(old, h.id);
		EXPECT_EQ(-ENOENT, del(self->st, old));
		EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
		EXPECT_EQ(0, del(self->st, h.id));
		close(ks2);
	}
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
}

/* An IPv6 hand-off's argument: [::1]:@lport -> [::1]:@rport (routed in
 * any namespace: repair mode's connect() still looks the route up). */
static void handoff6_init(struct sluice_handoff *h, int fd, __u16 lport,
			  __u16 rport)
{
	handoff_init(h, fd, lport, rport);
	h->flags = SLUICE_HANDOFF_IPV6;
	h->laddr = 0;
	h->raddr = 0;
	inet_pton(AF_INET6, "::1", h->laddr6);
	inet_pton(AF_INET6, "::1", h->raddr6);
}

/* An AF_INET6 TCP socket [::1]:@lport -> [::1]:@rport in repair mode
 * (connected if @do_connect); its fd or -errno. */
static int repair_sock6(__u16 lport, __u16 rport, bool do_connect)
{
	struct sockaddr_in6 me = { .sin6_family = AF_INET6, .sin6_port = htons(lport) };
	struct sockaddr_in6 peer = { .sin6_family = AF_INET6, .sin6_port = htons(rport) };
	int s = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e;

	if (s < 0)
		return -errno;
	inet_pton(AF_INET6, "::1", &me.sin6_addr);
	inet_pton(AF_INET6, "::1", &peer.sin6_addr);
	if (setsockopt(s, IPPROTO_TCP, TCP_REPAIR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&me, sizeof(me)) ||
	    (do_connect && connect(s, (struct sockaddr *)&peer, sizeof(peer)))) {
		e = errno;
		close(s);
		return -e;
	}
	return s;
}

/*
 * SLUICE_HANDOFF_IPV6 (SLUICE_FEATURE_HANDOFF6): every errno of an IPv6
 * hand-off, and its entry's life as IPv4's (the tuple the kernel's while
 * its socket lives, the stack's again once it closed).
 */
TEST_F(filter, handoff6_rules_and_life)
{
	struct sluice_handoff h;
	char out[64], want[64], buf[16384];
	int ks, k4;
	__u32 any;

	ASSERT_EQ(0, add6(self->st, IPPROTO_TCP, NULL, 41340, NULL, 0, &any));
	ks = repair_sock6(41340, 7000, true);
	ASSERT_LE(0, ks);
	/* A caller that does not know @raddr6. */
	handoff6_init(&h, ks, 41340, 7000);
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_HANDOFF, &h,
				       sizeof(h), 36, 0));
	for (int i = 0; i < 5; i++) {
		handoff6_init(&h, ks, 41340, 7000);
		switch (i) {
		case 0: h.laddr = inet_addr("127.0.0.1"); break;
		case 1: h.raddr = inet_addr("127.0.0.5"); break;
		case 2: memset(h.laddr6, 0, 16); break;
		case 3: inet_pton(AF_INET6, "::ffff:10.0.0.5", h.raddr6); break;
		/* Not the socket's own tuple. */
		case 4: inet_pton(AF_INET6, "fd00::6", h.raddr6); break;
		}
		EXPECT_EQ(-EINVAL, handoff(self->st, &h)) TH_LOG("case %d", i);
	}
	/* An AF_INET socket is IPv4's, not IPv6's. */
	k4 = repair_sock(41340, 7000, true, true);
	ASSERT_LE(0, k4);
	handoff6_init(&h, k4, 41340, 7000);
	EXPECT_EQ(-EPROTONOSUPPORT, handoff(self->st, &h));
	/* ... and an IPv6 socket no IPv4 hand-off. */
	handoff_init(&h, ks, 41340, 7000);
	EXPECT_EQ(-EPROTONOSUPPORT, handoff(self->st, &h));
	close(k4);
	/* A tuple the stack does not steer. */
	k4 = repair_sock6(41341, 7000, true);
	ASSERT_LE(0, k4);
	handoff6_init(&h, k4, 41341, 7000);
	EXPECT_EQ(-ENOENT, handoff(self->st, &h));
	close(k4);
	handoff6_init(&h, ks, 41340, 7000);
	ASSERT_EQ(0, handoff(self->st, &h));
	EXPECT_NE(0, h.id);
	EXPECT_NE(any, h.id);
	EXPECT_EQ(-EEXIST, handoff(self->st, &h));
	EXPECT_EQ(2, stack_attr_ll("t_f", "filters"));
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "::1", 7000,
			   "::1", 41340));
	snprintf(want, sizeof(want), "kernel %u", h.id);
	EXPECT_STREQ(want, out);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "::1", 7001,
			   "::1", 41340));
	snprintf(want, sizeof(want), "t_f %u", any);
	EXPECT_STREQ(want, out);
	ASSERT_LT(0, stack_dump("t_f", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "handoff %u tcp [::1]:41340 [::1]:7000",
		 h.id);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	/* Closed (repair mode: no RST), the tuple is the stack's again. */
	close(ks);
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "::1", 7000,
			   "::1", 41340));
	snprintf(want, sizeof(want), "t_f %u", any);
	EXPECT_STREQ(want, out);
	EXPECT_EQ(0, del(self->st, h.id));
	EXPECT_EQ(1, stack_attr_ll("t_f", "filters"));
}

/* Filters are looked up in the namespace they were made in. */
TEST_F(filter, match_is_per_netns)
{
	char out[64];
	pid_t pid;

	ASSERT_EQ(0, add(self->st, IPPROTO_TCP, NULL, 41190, NULL, 0, NULL));
	ASSERT_EQ(0, match(out, sizeof(out), "tcp", self->lo, "127.0.0.5",
			   7000, "127.0.0.1", 41190));
	EXPECT_EQ(0, strncmp(out, "t_f ", 4));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (unshare(CLONE_NEWNET))
			_exit(100);
		if (match(out, sizeof(out), "tcp", 1, "127.0.0.5", 7000,
			  "127.0.0.1", 41190))
			_exit(101);
		_exit(strcmp(out, "none") ? 1 : 0);
	}
	EXPECT_EQ(0, child_status(pid));
}

/*
 * Stacks made, filled, partly emptied and closed over and over while
 * another process looks packets up: every step succeeds, lookups find
 * either nothing or a live stack's filter, and nothing is left after.
 */
TEST_F_TIMEOUT(filter, concurrent_add_del_match_close, 120)
{
	enum { WRITERS = 2, ROUNDS = 40, PER = 8 };
	pid_t pids[WRITERS + 1];
	int lo = self->lo;

	for (int w = 0; w <= WRITERS; w++) {
		pids[w] = fork();
		ASSERT_LE(0, pids[w]);
		if (pids[w])
			continue;
		if (w == WRITERS) {
			/* The reader. */
			for (int i = 0; i < ROUNDS * 4; i++) {
				char out[64];
				int port = 42000 + (i % WRITERS) * 100 + i % PER;

				if (match(out, sizeof(out), i & 1 ? "udp" : "tcp",
					  lo, "127.0.0.7", 9000, "127.0.0.1", port))
					_exit(1);
				if (strcmp(out, "none") && strncmp(out, "t_c", 3))
					_exit(2);
			}
			_exit(0);
		}
		for (int r = 0; r < ROUNDS; r++) {
			char name[16];
			__u32 ids[PER];
			int fd;

			snprintf(name, sizeof(name), "t_c%d", w);
			fd = create_stack(self->dev, name, lo);
			if (fd < 0)
				_exit(10);
			for (int j = 0; j < PER; j++) {
				int port = 42000 + w * 100 + j;

				if (add(fd, j & 1 ? IPPROTO_UDP : IPPROTO_TCP,
					j & 2 ? "127.0.0.1" : NULL, port,
					j & 4 ? "127.0.0.7" : NULL, j & 4 ? 9000 : 0,
					&ids[j]))
					_exit(11);
			}
			for (int j = 0; j < PER; j += 2)
				if (del(fd, ids[j]))
					_exit(12);
			close(fd);
		}
		_exit(0);
	}
	for (int w = 0; w <= WRITERS; w++) {
		EXPECT_EQ(0, child_status(pids[w])) TH_LOG("process %d", w);
	}
	for (int w = 0; w < WRITERS; w++) {
		for (int j = 0; j < PER; j++) {
			EXPECT_EQ(0, try_bind(j & 1 ? SOCK_DGRAM : SOCK_STREAM,
					      NULL, 42000 + w * 100 + j));
		}
	}
}

/* IFINFO, checked against what the socket ioctls report. */
static void ifinfo_check(struct __test_metadata *_metadata, const char *name,
			 const struct sluice_ifinfo *info)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ASSERT_LE(0, s);
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	ASSERT_EQ(0, ioctl(s, SIOCGIFFLAGS, &ifr));
	EXPECT_EQ((__u32)(unsigned short)ifr.ifr_flags,
		  info->if_flags & 0xffff);
	ASSERT_EQ(0, ioctl(s, SIOCGIFMTU, &ifr));
	EXPECT_EQ((__u32)ifr.ifr_mtu, info->mtu);
	ASSERT_EQ(0, ioctl(s, SIOCGIFHWADDR, &ifr));
	EXPECT_EQ(ifr.ifr_hwaddr.sa_family, info->type);
	EXPECT_EQ(0, memcmp(ifr.ifr_hwaddr.sa_data, info->hwaddr, 6));
	EXPECT_STREQ(name, info->name);
	EXPECT_EQ(if_nametoindex(name), info->ifindex);
	close(s);
}

static int ifinfo(int dev, int ifindex, struct sluice_ifinfo *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	info->ifindex = ifindex;
	return xioctl(dev, SLUICE_IOC_IFINFO, info);
}

FIXTURE(ifinfo) {
	int dev;
	bool veth;
};

FIXTURE_SETUP(ifinfo)
{
	ASSERT_EQ(0, ensure_loaded());
	if (have_ip())
		sh(IP " link set lo up");
	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	self->veth = false;
}

FIXTURE_TEARDOWN(ifinfo)
{
	if (self->veth)
		sh(IP " link del sfi0");
	close(self->dev);
}

TEST_F(ifinfo, argument_rules)
{
	struct sluice_ifinfo info;

	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	info.ifindex = 1;
	/* One byte short of the first published size (before the ib_* fields). */
	EXPECT_EQ(-EINVAL, sized_ioctl(self->dev, SLUICE_IOC_IFINFO, &info,
				       sizeof(info),
				       offsetof(struct sluice_ifinfo, ib_flags) - 1, 0));
	EXPECT_EQ(-E2BIG, sized_ioctl(self->dev, SLUICE_IOC_IFINFO, &info,
				      sizeof(info), sizeof(info) + TAIL, 1));
	EXPECT_EQ(0, sized_ioctl(self->dev, SLUICE_IOC_IFINFO, &info,
				 sizeof(info), sizeof(info) + TAIL, 0));
	EXPECT_EQ(sizeof(info), info.size);
	EXPECT_STREQ("lo", info.name);
	EXPECT_EQ(0, sized_ioctl(self->dev, SLUICE_IOC_IFINFO, &info,
				 sizeof(info), sizeof(info), 0));
	EXPECT_STREQ("lo", info.name);
	info.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->dev, SLUICE_IOC_IFINFO, &info));
	info.flags = 0;
	info.reserved0 = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->dev, SLUICE_IOC_IFINFO, &info));
}

TEST_F(ifinfo, bad_ifindex_is_enodev)
{
	struct sluice_ifinfo info;

	EXPECT_EQ(-ENODEV, ifinfo(self->dev, 0, &info));
	EXPECT_EQ(-ENODEV, ifinfo(self->dev, 99999, &info));
	EXPECT_EQ(-ENODEV, ifinfo(self->dev, 0x80000001, &info));
	EXPECT_EQ(-ENODEV, ifinfo(self->dev, 0xffffffff, &info));
}

TEST_F(ifinfo, loopback)
{
	struct sluice_ifinfo info;
	int lo = if_nametoindex("lo");

	ASSERT_LT(0, lo);
	/* Output fields are overwritten, not merged with what came in. */
	ASSERT_EQ(0, ifinfo(self->dev, lo, &info));
	ifinfo_check(_metadata, "lo", &info);
	EXPECT_EQ(ARPHRD_LOOPBACK, info.type);
	EXPECT_EQ(6, info.addr_len);
	EXPECT_TRUE(info.if_flags & IFF_LOOPBACK);
	EXPECT_TRUE(info.if_flags & IFF_UP);
	ASSERT_EQ(1, info.n_addrs);
	EXPECT_EQ(inet_addr("127.0.0.1"), info.addr[0]);
	EXPECT_EQ(8, info.prefix_len[0]);
	for (int i = 1; i < SLUICE_IFINFO_ADDRS; i++) {
		EXPECT_EQ(0, info.addr[i]);
		EXPECT_EQ(0, info.prefix_len[i]);
	}
}

/* Another netns has its own lo, and none of this one's devices. */
TEST_F(ifinfo, in_the_callers_netns)
{
	pid_t pid;

	if (!have_ip())
		SKIP(return, "no " IP);
	ASSERT_EQ(0, sh(IP " link add sfi0 type veth peer name sfi1"));
	self->veth = true;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sluice_ifinfo info;

		if (unshare(CLONE_NEWNET))
			_exit(100);
		if (ifinfo(self->dev, if_nametoindex("lo"), &info))
			_exit(101);
		/* A fresh namespace's lo is down and has no address. */
		if (info.n_addrs || (info.if_flags & IFF_UP))
			_exit(102);
		_exit(ifinfo(self->dev, 2, &info) == -ENODEV ? 0 : 103);
	}
	EXPECT_EQ(0, child_status(pid));
}

TEST_F(ifinfo, veth)
{
	struct sluice_ifinfo info;
	__u32 want[2] = { inet_addr("10.97.0.1"), inet_addr("10.97.1.1") };
	int idx, seen = 0;

	if (!have_ip())
		SKIP(return, "no " IP);
	ASSERT_EQ(0, sh(IP " link add sfi0 address 02:00:00:00:97:01 mtu 1400"
			" type veth peer name sfi1"));
	self->veth = true;
	ASSERT_EQ(0, sh(IP " addr add 10.97.0.1/24 dev sfi0"));
	ASSERT_EQ(0, sh(IP " addr add 10.97.1.1/16 dev sfi0"));
	ASSERT_EQ(0, sh(IP " link set sfi0 up"));
	idx = if_nametoindex("sfi0");
	ASSERT_LT(0, idx);
	ASSERT_EQ(0, ifinfo(self->dev, idx, &info));
	ifinfo_check(_metadata, "sfi0", &info);
	EXPECT_EQ(ARPHRD_ETHER, info.type);
	EXPECT_EQ(1400, info.mtu);
	EXPECT_EQ(6, info.addr_len);
	EXPECT_EQ(0, memcmp(info.hwaddr, "\x02\x00\x00\x00\x97\x01", 6));
	EXPECT_EQ(0, memcmp(info.broadcast, "\xff\xff\xff\xff\xff\xff", 6));
	for (int i = 6; i < SLUICE_HWADDR_MAX; i++) {
		EXPECT_EQ(0, info.hwaddr[i]);
		EXPECT_EQ(0, info.broadcast[i]);
	}
	EXPECT_TRUE(info.if_flags & IFF_UP);
	ASSERT_EQ(2, info.n_addrs);
	for (int i = 0; i < 2; i++) {
		if (info.addr[i] == want[0] && info.prefix_len[i] == 24)
			seen |= 1;
		if (info.addr[i] == want[1] && info.prefix_len[i] == 16)
			seen |= 2;
	}
	EXPECT_EQ(3, seen);

	/* Changes show at once. */
	ASSERT_EQ(0, sh(IP " link set sfi0 down mtu 1280"));
	ASSERT_EQ(0, ifinfo(self->dev, idx, &info));
	EXPECT_EQ(1280, info.mtu);
	EXPECT_FALSE(info.if_flags & IFF_UP);
	ASSERT_EQ(0, sh(IP " link del sfi0"));
	self->veth = false;
	EXPECT_EQ(-ENODEV, ifinfo(self->dev, idx, &info));
}

/* The root netns end of a veth pair and its peer in netns "sfn". */
FIXTURE(neigh) {
	int dev;
	int st;
	bool made;
};

FIXTURE_SETUP(neigh)
{
	self->made = false;
	self->st = -1;
	ASSERT_EQ(0, ensure_loaded());
	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	if (!have_ip())
		return;
	sh(IP " link set lo up");
	/* A bare initramfs may lack the directory ip keeps namespaces in. */
	sh("mkdir -p /var/run/netns /run/netns");
	ASSERT_EQ(0, sh(IP " netns add sfn"));
	self->made = true;
	ASSERT_EQ(0, sh(IP " link add sfn0 address 02:00:00:00:98:01 type veth"
			" peer name sfn1 address 02:00:00:00:98:02"));
	ASSERT_EQ(0, sh(IP " link set sfn1 netns sfn"));
	ASSERT_EQ(0, sh(IP " addr add 10.98.0.1/24 dev sfn0"));
	ASSERT_EQ(0, sh(IP " link set sfn0 up"));
	ASSERT_EQ(0, sh(IP " -n sfn addr add 10.98.0.2/24 dev sfn1"));
	ASSERT_EQ(0, sh(IP " -n sfn link set sfn1 up"));
	/* Unanswered requests give up after 3 * 100 ms, not 3 s. */
	ASSERT_EQ(0, write_file("/proc/sys/net/ipv4/neigh/sfn0/retrans_time_ms",
				"100"));
	self->st = create_stack(self->dev, "t_nb", if_nametoindex("sfn0"));
	ASSERT_LE(0, self->st);
}

FIXTURE_TEARDOWN(neigh)
{
	if (self->st >= 0)
		close(self->st);
	if (self->made) {
		sh(IP " link del sfn0");
		sh(IP " netns del sfn");
	}
	close(self->dev);
}

static int resolve(int st, const char *addr, struct sluice_neigh_resolve *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->addr = inet_addr(addr);
	return xioctl(st, SLUICE_IOC_NEIGH_RESOLVE, r);
}

TEST_F(neigh, argument_rules)
{
	struct sluice_neigh_resolve r;

	if (!have_ip())
		SKIP(return, "no " IP);
	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.addr = inet_addr("10.98.0.2");
	/* One byte short of the first published size (before the path fields). */
	EXPECT_EQ(-EINVAL, sized_ioctl(self->st, SLUICE_IOC_NEIGH_RESOLVE, &r,
				       sizeof(r),
				       offsetof(struct sluice_neigh_resolve, path_state) - 1,
				       0));
	EXPECT_EQ(-E2BIG, sized_ioctl(self->st, SLUICE_IOC_NEIGH_RESOLVE, &r,
				      sizeof(r), sizeof(r) + TAIL, 1));
	EXPECT_EQ(0, sized_ioctl(self->st, SLUICE_IOC_NEIGH_RESOLVE, &r,
				 sizeof(r), sizeof(r) + TAIL, 0));
	EXPECT_EQ(0, sized_ioctl(self->st, SLUICE_IOC_NEIGH_RESOLVE, &r,
				 sizeof(r), sizeof(r), 0));
	for (int i = 0; i < 3; i++) {
		resolve(self->st, "10.98.0.2", &r);
		switch (i) {
		case 0: r.flags = 1; break;
		case 1: r.reserved[0] = 1; break;
		case 2: r.reserved[6] = 1; break;
		}
		EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_NEIGH_RESOLVE, &r))
			TH_LOG("case %d", i);
	}
	EXPECT_EQ(-EINVAL, resolve(self->st, "0.0.0.0", &r));
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_NEIGH_RESOLVE, &r));
}

TEST_F_TIMEOUT(neigh, peer_resolves_to_its_mac, 60)
{
	static char dump[16384];
	struct sluice_neigh_resolve r;
	int i, pending = 0;

	if (!have_ip())
		SKIP(return, "no " IP);
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, resolve(self->st, "10.98.0.2", &r));
		if (r.state == SLUICE_NEIGH_RES_VALID)
			break;
		ASSERT_EQ(SLUICE_NEIGH_RES_PENDING, r.state);
		pending++;
		sleep_ms(50);
	}
	ASSERT_EQ(SLUICE_NEIGH_RES_VALID, r.state);
	/* A new entry cannot be valid before the peer answered. */
	EXPECT_LT(0, pending);
	EXPECT_EQ(6, r.addr_len);
	EXPECT_EQ(0, memcmp(r.hwaddr, "\x02\x00\x00\x00\x98\x02", 6));
	for (i = 6; i < SLUICE_HWADDR_MAX; i++) {
		EXPECT_EQ(0, r.hwaddr[i]);
	}
	EXPECT_EQ(inet_addr("10.98.0.2"), r.addr);
	/* The kernel's own table has it too. */
	EXPECT_EQ(0, sh(IP " neigh show 10.98.0.2 dev sfn0 | grep -q 02:00:00:00:98:02"));
	/* And the stack's debugfs dump shows the entry it goes through. */
	ASSERT_LT(0, stack_dump("t_nb", dump, sizeof(dump)));
	EXPECT_NE(NULL, strstr(dump, "neighbours (kernel ARP table"));
	EXPECT_NE(NULL, strstr(dump, "10.98.0.2 02:00:00:00:98:02 ")) TH_LOG("%s", dump);
	/* And asking again is an answer at once. */
	ASSERT_EQ(0, resolve(self->st, "10.98.0.2", &r));
	EXPECT_EQ(SLUICE_NEIGH_RES_VALID, r.state);
}

TEST_F_TIMEOUT(neigh, nobody_goes_pending_then_failed, 60)
{
	struct sluice_neigh_resolve r;
	int i, pending = 0;

	if (!have_ip())
		SKIP(return, "no " IP);
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, resolve(self->st, "10.98.0.77", &r));
		ASSERT_NE(SLUICE_NEIGH_RES_VALID, r.state);
		if (r.state == SLUICE_NEIGH_RES_FAILED)
			break;
		ASSERT_EQ(SLUICE_NEIGH_RES_PENDING, r.state);
		pending++;
		sleep_ms(50);
	}
	EXPECT_EQ(SLUICE_NEIGH_RES_FAILED, r.state);
	EXPECT_LT(0, pending);
	for (i = 0; i < SLUICE_HWADDR_MAX; i++) {
		EXPECT_EQ(0, r.hwaddr[i]);
	}
	/* Asking again tries again. */
	ASSERT_EQ(0, resolve(self->st, "10.98.0.77", &r));
	EXPECT_EQ(SLUICE_NEIGH_RES_PENDING, r.state);
}

/* lo needs no ARP: every address is valid at once, all zeros. */
TEST_F(neigh, loopback_is_valid_at_once)
{
	struct sluice_neigh_resolve r;
	int st;

	st = create_stack(self->dev, "t_nblo", if_nametoindex("lo"));
	ASSERT_LE(0, st);
	ASSERT_EQ(0, resolve(st, "127.0.0.1", &r));
	EXPECT_EQ(SLUICE_NEIGH_RES_VALID, r.state);
	EXPECT_EQ(6, r.addr_len);
	EXPECT_EQ(0, memcmp(r.hwaddr, "\0\0\0\0\0\0", 6));
	close(st);
}

/*
 * Declared last, so it runs last: with every stack closed the module
 * unloads, so no filter, reservation or stack reference was left behind.
 */
FIXTURE(unload) {
	int unused;
};

FIXTURE_SETUP(unload)
{
	ASSERT_EQ(0, ensure_loaded());
}

FIXTURE_TEARDOWN(unload)
{
}

TEST_F(unload, nothing_left_behind)
{
	EXPECT_EQ(0, info_value("stacks"));
	EXPECT_EQ(0, info_value("regions"));
	ASSERT_EQ(0, unload_module());
	EXPECT_FALSE(module_loaded());
}

TEST_HARNESS_MAIN
