// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftests for stacks in sluice.ko: SLUICE_IOC_STACK_CREATE and its
 * argument and layout rules, SLUICE_IOC_STACK_ATTACH and who may attach,
 * mmap of the region, the lifetime of names and regions (fds, mappings,
 * killed processes, module unload), shared futexes on region words
 * (between processes, across fork), poll and SLUICE_IOC_STACK_WAKE, and
 * the sysfs and debugfs entries of a stack.
 *
 * Runs as root inside the test VM, loading the module from $SLUICE_KO
 * (default /lib/modules/sluice.ko) as sluice_dev does.  Every test that
 * passes leaves no stack behind (the fixture's teardown checks it), and
 * the last test unloads the module.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uapi/sluice.h>

#include "kselftest_harness.h"
#include "sluice_util.h"

#define SYSFS_STACKS	"/sys/class/misc/sluice/stacks"
#define PARAM_MAX_MB	SYSFS_MOD "/parameters/max_region_mb"
#define NOBODY		65534

/* One sysfs value of a stack, newline stripped; length or -errno. */
static ssize_t stack_attr(const char *dir, const char *attr, char *buf,
			  size_t len)
{
	char path[256];
	ssize_t n;

	snprintf(path, sizeof(path), SYSFS_STACKS "/%s/%s", dir, attr);
	n = read_file(path, buf, len);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

static long long stack_attr_ll(const char *dir, const char *attr)
{
	char buf[64];

	if (stack_attr(dir, attr, buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 0);
}

static bool stack_listed(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), SYSFS_STACKS "/%s", dir);
	return access(path, F_OK) == 0;
}

static bool stack_in_debugfs(const char *dir)
{
	char path[256];

	snprintf(path, sizeof(path), DEBUGFS_DIR "/stacks/%s", dir);
	return access(path, F_OK) == 0;
}

static void layout(struct sluice_stack_create *c, const char *name,
		   __u32 max_sockets, __u32 n_bufs)
{
	__u32 hash_buckets = 64;

	while (hash_buckets < max_sockets)
		hash_buckets <<= 1;
	stack_layout(c, name, 0, max_sockets, 256, hash_buckets, n_bufs, 2048);
}

/* STACK_CREATE; the new fd, or -errno. */
static int create(int dev, struct sluice_stack_create *c)
{
	int ret = xioctl(dev, SLUICE_IOC_STACK_CREATE, c);

	return ret ? ret : c->fd;
}

static int create_named(int dev, const char *name)
{
	struct sluice_stack_create c;

	layout(&c, name, 16, 16);
	return create(dev, &c);
}

/* STACK_ATTACH; the new fd, or -errno.  @a may be NULL. */
static int attach(int dev, const char *name, struct sluice_stack_attach *a)
{
	struct sluice_stack_attach tmp;
	int ret;

	if (!a)
		a = &tmp;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->fd = -1;
	set_name(a->name, name);
	ret = xioctl(dev, SLUICE_IOC_STACK_ATTACH, a);
	return ret ? ret : a->fd;
}

/* STACK_WAKE with these flags; returns 0 or -errno, the sequence in *seq. */
static int wake(int fd, __u32 flags, __u32 *seq)
{
	struct sluice_stack_wake w = {
		.size = sizeof(w), .flags = flags, .seq = seq ? *seq : 0,
	};
	int ret = xioctl(fd, SLUICE_IOC_STACK_WAKE, &w);

	if (!ret && seq)
		*seq = w.seq;
	return ret;
}

static int poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	if (n < 0)
		return -errno;
	return n ? p.revents : 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

/* The child's exit status, or -1 if it did not exit normally. */
static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The ABI: the same offsets on every architecture, no implicit padding. */
TEST(abi_struct_layouts)
{
	EXPECT_EQ(128, sizeof(struct sluice_stack_create));
	EXPECT_EQ(8, offsetof(struct sluice_stack_create, name));
	EXPECT_EQ(40, offsetof(struct sluice_stack_create, ifindex));
	EXPECT_EQ(48, offsetof(struct sluice_stack_create, region_size));
	EXPECT_EQ(56, offsetof(struct sluice_stack_create, max_sockets));
	EXPECT_EQ(76, offsetof(struct sluice_stack_create, mtu));
	EXPECT_EQ(80, offsetof(struct sluice_stack_create, sock_off));
	EXPECT_EQ(112, offsetof(struct sluice_stack_create, bufdata_off));
	EXPECT_EQ(120, offsetof(struct sluice_stack_create, fd));
	EXPECT_EQ(56, sizeof(struct sluice_stack_attach));
	EXPECT_EQ(40, offsetof(struct sluice_stack_attach, fd));
	EXPECT_EQ(48, offsetof(struct sluice_stack_attach, region_size));
	EXPECT_EQ(16, sizeof(struct sluice_stack_wake));
	EXPECT_EQ(8, offsetof(struct sluice_stack_wake, seq));
	EXPECT_EQ(0x01, _IOC_NR(SLUICE_IOC_STACK_CREATE));
	EXPECT_EQ(0x02, _IOC_NR(SLUICE_IOC_STACK_ATTACH));
	EXPECT_EQ(0x03, _IOC_NR(SLUICE_IOC_STACK_WAKE));
}

FIXTURE(stack) {
	int dev;
	bool param_changed;
};

FIXTURE_SETUP(stack)
{
	ASSERT_EQ(0, ensure_loaded());
	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	/* Every earlier test cleaned up after itself. */
	ASSERT_EQ(0, info_value("stacks"));
	ASSERT_EQ(0, info_value("regions"));
}

FIXTURE_TEARDOWN(stack)
{
	if (self->param_changed)
		write_file(PARAM_MAX_MB, "1024");
	close(self->dev);
	/* A passing test closed and unmapped everything it made. */
	if (_metadata->passed) {
		EXPECT_EQ(0, info_value("stacks"));
		EXPECT_EQ(0, info_value("regions"));
	}
}

TEST_F(stack, create_good_writes_header)
{
	struct sluice_stack_create c;
	const struct sluice_region *r;
	const unsigned char *p;
	int fd;

	layout(&c, "t_good", 16, 16);
	c.fd = 12345;	/* out only: ignored on input */
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(sizeof(c), c.size);
	EXPECT_NE(self->dev, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, c.reserved0);
	EXPECT_EQ(0, c.reserved1);
	EXPECT_EQ(1, info_value("stacks"));
	EXPECT_EQ(1, info_value("regions"));

	r = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, r);
	EXPECT_EQ(SLUICE_REGION_MAGIC, r->magic);
	EXPECT_EQ(SLUICE_ABI_VERSION, r->abi_version);
	EXPECT_EQ(c.region_size, r->region_size);
	EXPECT_EQ(0, memcmp(r->name, c.name, SLUICE_NAME_MAX));
	EXPECT_EQ(SLUICE_STATE_INIT, r->state);
	EXPECT_EQ(geteuid(), r->creator_uid);
	EXPECT_EQ(c.max_sockets, r->max_sockets);
	EXPECT_EQ(c.sock_size, r->sock_size);
	EXPECT_EQ(c.hash_buckets, r->hash_buckets);
	EXPECT_EQ(c.n_bufs, r->n_bufs);
	EXPECT_EQ(c.buf_size, r->buf_size);
	EXPECT_EQ(c.mtu, r->mtu);
	EXPECT_EQ(c.sock_off, r->sock_off);
	EXPECT_EQ(c.hash_off, r->hash_off);
	EXPECT_EQ(c.wheel_off, r->wheel_off);
	EXPECT_EQ(c.bufmeta_off, r->bufmeta_off);
	EXPECT_EQ(c.bufdata_off, r->bufdata_off);
	/* Everything after the module's fields is zero, to the last byte. */
	p = (const unsigned char *)r;
	for (size_t i = offsetof(struct sluice_region, bufdata_off) + 8; i < c.region_size; i++)
		if (p[i]) {
			EXPECT_EQ(0, p[i]) TH_LOG("byte %zu of the region", i);
			break;
		}
	munmap((void *)r, c.region_size);
	close(fd);
	EXPECT_FALSE(stack_listed("t_good"));
}

TEST_F(stack, create_short_size_is_einval)
{
	struct sluice_stack_create c;
	const __u32 sizes[] = { 0, 4, 8, sizeof(c) - 8, sizeof(c) - 1 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		layout(&c, "t_short", 16, 16);
		c.size = sizes[i];
		EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("size %u", sizes[i]);
		EXPECT_EQ(-1, c.fd);
	}
	EXPECT_FALSE(stack_listed("t_short"));
}

TEST_F(stack, create_nonzero_reserved_or_flags_is_einval)
{
	struct sluice_stack_create c;

	layout(&c, "t_resv", 16, 16);
	c.reserved0 = 1;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	layout(&c, "t_resv", 16, 16);
	c.reserved1 = 0x80000000u;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	for (int bit = 0; bit < 32; bit++) {
		if (1u << bit == SLUICE_STACK_CREATE_REPLACE)
			continue;
		layout(&c, "t_resv", 16, 16);
		c.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("flag bit %d", bit);
	}
	EXPECT_EQ(0, info_value("regions"));
}

struct create_big {
	struct sluice_stack_create c;
	__u8 tail[16];
	__u8 canary[16];
};

TEST_F(stack, create_larger_struct_zero_tail)
{
	struct create_big b;
	int fd;

	memset(&b, 0, sizeof(b));
	layout(&b.c, "t_tail", 16, 16);
	memset(b.canary, 0xa5, sizeof(b.canary));
	b.c.size = sizeof(b.c) + sizeof(b.tail);
	fd = create(self->dev, &b.c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(sizeof(b.c), b.c.size);
	for (size_t i = 0; i < sizeof(b.canary); i++)
		EXPECT_EQ(0xa5, b.canary[i]);
	close(fd);
}

TEST_F(stack, create_nonzero_tail_is_e2big)
{
	struct create_big b;
	const size_t pos[] = { 0, 7, sizeof(b.tail) - 1 };

	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		memset(&b, 0, sizeof(b));
		layout(&b.c, "t_tail", 16, 16);
		b.c.size = sizeof(b.c) + sizeof(b.tail);
		b.tail[pos[i]] = 1;
		EXPECT_EQ(-E2BIG, create(self->dev, &b.c)) TH_LOG("tail byte %zu", pos[i]);
	}
	EXPECT_FALSE(stack_listed("t_tail"));
}

TEST_F(stack, create_bad_names_are_einval)
{
	const char *bad[] = {
		"", ".", "..", ".hidden", "a/b", "a b", "a\nb", "a@b", "a:b",
		"caf\xc3\xa9", "\xe9t\xe9", "a*", "-a\t",
	};
	const char *good[] = {
		"a", "A.b-c_D9", "a.", "-", "_", "0123456789012345678901234567890",
	};
	struct sluice_stack_create c;
	int fd;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		layout(&c, bad[i], 16, 16);
		EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("name '%s'", bad[i]);
	}
	/* 32 characters: no room for the NUL. */
	layout(&c, "x", 16, 16);
	memset(c.name, 'x', sizeof(c.name));
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	/* Not NUL-padded: garbage after the terminator. */
	layout(&c, "pad", 16, 16);
	c.name[sizeof(c.name) - 1] = 'z';
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	layout(&c, "pad", 16, 16);
	c.name[4] = 'z';
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	EXPECT_EQ(0, info_value("regions"));

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		layout(&c, good[i], 16, 16);
		fd = create(self->dev, &c);
		EXPECT_LE(0, fd) TH_LOG("name '%s': %d", good[i], fd);
		EXPECT_TRUE(stack_listed(good[i])) TH_LOG("name '%s'", good[i]);
		if (fd >= 0)
			close(fd);
	}
}

TEST_F(stack, create_bad_counts_are_einval)
{
	struct sluice_stack_create c;
	struct {
		const char *what;
		size_t off;
		__u32 value;
	} cases[] = {
#define CASE(f, v) { #f " = " #v, offsetof(struct sluice_stack_create, f), v }
		CASE(max_sockets, 0),
		CASE(max_sockets, SLUICE_STACK_MAX_SOCKETS + 1),
		CASE(sock_size, 0),
		CASE(sock_size, 200),			/* not a multiple of 64 */
		CASE(sock_size, SLUICE_STACK_MAX_SOCK_SIZE + 64),
		CASE(hash_buckets, 0),
		CASE(hash_buckets, 48),			/* not a power of two */
		CASE(hash_buckets, SLUICE_STACK_MAX_HASH_BUCKETS * 2),
		CASE(n_bufs, 0),
		CASE(n_bufs, SLUICE_STACK_MAX_BUFS + 1),
		CASE(buf_size, 0),
		CASE(buf_size, SLUICE_STACK_MAX_BUF_SIZE + 1),
		CASE(mtu, 0),
		CASE(mtu, SLUICE_STACK_MIN_MTU - 1),
		CASE(mtu, 2049),			/* above buf_size */
#undef CASE
	};
	int fd;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		layout(&c, "t_counts", 16, 16);
		memcpy((char *)&c + cases[i].off, &cases[i].value, sizeof(__u32));
		EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("%s", cases[i].what);
	}
	EXPECT_EQ(0, info_value("regions"));

	/*
	 * Upper bounds alone, in a layout that fits them (tens of MiB):
	 * only the bound can refuse these.
	 */
	stack_layout(&c, "t_counts", 0, SLUICE_STACK_MAX_SOCKETS + 1, 64,
		      SLUICE_STACK_MAX_HASH_BUCKETS, 16, 2048);
	EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("max_sockets");
	stack_layout(&c, "t_counts", 0, 1, SLUICE_STACK_MAX_SOCK_SIZE + 64, 64, 16, 2048);
	EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("sock_size");
	stack_layout(&c, "t_counts", 0, 16, 256, SLUICE_STACK_MAX_HASH_BUCKETS * 2, 16, 2048);
	EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("hash_buckets");
	stack_layout(&c, "t_counts", 0, 16, 256, 64, 16, SLUICE_STACK_MAX_BUF_SIZE + 64);
	EXPECT_EQ(-EINVAL, create(self->dev, &c)) TH_LOG("buf_size");
	/* ... and each at its bound is accepted. */
	stack_layout(&c, "t_counts", 0, 1, SLUICE_STACK_MAX_SOCK_SIZE, 64, 16,
		      SLUICE_STACK_MAX_BUF_SIZE);
	fd = create(self->dev, &c);
	EXPECT_LE(0, fd) TH_LOG("sock_size and buf_size at their bounds: %d", fd);
	if (fd >= 0)
		close(fd);
	stack_layout(&c, "t_counts", 0, 16, 256, SLUICE_STACK_MAX_HASH_BUCKETS, 16, 2048);
	fd = create(self->dev, &c);
	EXPECT_LE(0, fd) TH_LOG("hash_buckets at its bound: %d", fd);
	if (fd >= 0)
		close(fd);
	EXPECT_EQ(0, info_value("regions"));

	/* The edges themselves are fine. */
	layout(&c, "t_counts", 1, 1);
	c.mtu = SLUICE_STACK_MIN_MTU;
	c.hash_buckets = 1;
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	close(fd);
	layout(&c, "t_counts", 16, 16);
	c.mtu = c.buf_size;
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	close(fd);
}

TEST_F(stack, create_bad_areas_are_einval)
{
	struct sluice_stack_create c, g;
	const size_t offs[] = {
		offsetof(struct sluice_stack_create, sock_off),
		offsetof(struct sluice_stack_create, hash_off),
		offsetof(struct sluice_stack_create, wheel_off),
		offsetof(struct sluice_stack_create, bufmeta_off),
		offsetof(struct sluice_stack_create, bufdata_off),
	};
	__u64 *o;

	layout(&g, "t_areas", 16, 16);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		const __u64 bad[] = {
			0,				/* over the header */
			64,				/* still in the header */
			g.region_size,			/* starts at the end */
			g.region_size - PAGE,		/* runs past the end */
			g.region_size + PAGE,		/* wholly outside */
			~0ull & ~(PAGE - 1),		/* off + len wraps */
			*(__u64 *)((char *)&g + offs[i]) + 8,	/* unaligned */
		};

		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			c = g;
			o = (__u64 *)((char *)&c + offs[i]);
			*o = bad[j];
			EXPECT_EQ(-EINVAL, create(self->dev, &c))
				TH_LOG("area %zu at %#llx", i, (unsigned long long)bad[j]);
		}
		/* Overlapping each other area: start where that one starts. */
		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			if (k == i)
				continue;
			c = g;
			o = (__u64 *)((char *)&c + offs[i]);
			*o = *(__u64 *)((char *)&g + offs[k]);
			EXPECT_EQ(-EINVAL, create(self->dev, &c))
				TH_LOG("area %zu on area %zu", i, k);
		}
	}
	/* Overlap by one slot only: the socket table's last slot. */
	c = g;
	c.hash_off = c.sock_off + (c.max_sockets - 1) * c.sock_size;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	EXPECT_EQ(0, info_value("regions"));

	/*
	 * Alignment alone: each area moved into free space after the others,
	 * where only its alignment can be wrong.  Aligned there, it is fine.
	 */
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		const bool data = i == sizeof(offs) / sizeof(offs[0]) - 1;
		const __u64 bad[] = { 8, 32, data ? 64 : 8, data ? PAGE / 2 : 40 };
		int fd;

		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			c = g;
			c.region_size += 64 << 10;
			*(__u64 *)((char *)&c + offs[i]) = g.region_size + bad[j];
			EXPECT_EQ(-EINVAL, create(self->dev, &c))
				TH_LOG("area %zu at end + %llu", i, (unsigned long long)bad[j]);
		}
		c = g;
		c.region_size += 64 << 10;
		*(__u64 *)((char *)&c + offs[i]) = g.region_size + (data ? PAGE : 64);
		fd = create(self->dev, &c);
		EXPECT_LE(0, fd) TH_LOG("area %zu aligned at the end: %d", i, fd);
		if (fd >= 0)
			close(fd);
	}

	/* Areas in another order, with gaps, are fine. */
	c = g;
	c.region_size += 2 * PAGE;
	c.sock_off = c.bufdata_off + c.n_bufs * c.buf_size + PAGE;
	c.hash_off = g.sock_off;
	{
		int fd = create(self->dev, &c);

		ASSERT_LE(0, fd);
		close(fd);
	}
}

TEST_F(stack, create_region_size_rules)
{
	struct sluice_stack_create c;
	char buf[32];
	int fd;

	ASSERT_LT(0, read_file(PARAM_MAX_MB, buf, sizeof(buf)));
	EXPECT_EQ(1024, atoi(buf));

	layout(&c, "t_size", 16, 16);
	c.region_size = 0;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	layout(&c, "t_size", 16, 16);
	c.region_size += 1;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	layout(&c, "t_size", 16, 16);
	c.region_size -= PAGE / 2;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));
	/* Smaller than the header. */
	layout(&c, "t_size", 16, 16);
	c.region_size = PAGE;
	EXPECT_EQ(-EINVAL, create(self->dev, &c));

	/* Over the cap is refused before anything is allocated. */
	layout(&c, "t_size", 16, 16);
	c.region_size = (1024ull << 20) + PAGE;
	EXPECT_EQ(-E2BIG, create(self->dev, &c));
	c.region_size = ~0ull & ~(PAGE - 1);
	EXPECT_EQ(-E2BIG, create(self->dev, &c));

	/* The cap is the module parameter, read at each create. */
	self->param_changed = true;
	ASSERT_EQ(0, write_file(PARAM_MAX_MB, "1"));
	layout(&c, "t_size", 16, 16);
	c.region_size = 2ull << 20;
	EXPECT_EQ(-E2BIG, create(self->dev, &c));
	c.region_size = 1ull << 20;
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1 << 20, stack_attr_ll("t_size", "region_size"));
	close(fd);
	ASSERT_EQ(0, write_file(PARAM_MAX_MB, "1024"));
	self->param_changed = false;
	EXPECT_EQ(0, info_value("regions"));
}

/* Create NAME with a region of SIZE bytes; the fd or -errno. */
static int create_sized(int dev, const char *name, __u64 size)
{
	struct sluice_stack_create c;

	layout(&c, name, 16, 16);
	c.region_size = size;
	return create(dev, &c);
}

TEST_F(stack, region_is_charged_to_memlock)
{
	struct rlimit old, zero = { 0, 0 };
	pid_t pid;
	int fd;

	/* CAP_IPC_LOCK: not charged, whatever the limit. */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &old));
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &zero));
	fd = create_sized(self->dev, "t_mem0", 1 << 20);
	EXPECT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &old));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit mb = { 1 << 20, 1 << 20 };
		int a, b, d;

		if (setrlimit(RLIMIT_MEMLOCK, &mb) ||
		    setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		if (create_sized(self->dev, "t_mem1", 2 << 20) != -ENOMEM)
			_exit(1);
		a = create_sized(self->dev, "t_mem1", 512 << 10);
		b = create_sized(self->dev, "t_mem2", 512 << 10);
		if (a < 0 || b < 0)
			_exit(2);
		/* The user's total is at the limit now. */
		if (create_sized(self->dev, "t_mem3", 128 << 10) != -ENOMEM)
			_exit(3);
		/* The charge goes with the region. */
		close(a);
		d = create_sized(self->dev, "t_mem3", 512 << 10);
		if (d < 0)
			_exit(4);
		if (create_sized(self->dev, "t_mem4", 128 << 10) != -ENOMEM)
			_exit(5);
		close(b);
		close(d);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));
	EXPECT_EQ(0, info_value("regions"));
}

/* The lowest free fd number, which a leaked reservation would take. */
static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd;
}

/*
 * A result that cannot be copied out (a read-only argument) fails with
 * -EFAULT after the stack and its file were made: both are undone, and no
 * fd is installed.
 */
TEST_F(stack, efault_on_output_leaves_nothing)
{
	long page = sysconf(_SC_PAGESIZE);
	struct sluice_stack_attach *a;
	struct sluice_stack_create *c;
	char buf[4096], want[64];
	int free_fd, fd;
	char *p;

	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	c = (struct sluice_stack_create *)p;
	layout(c, "t_fault", 16, 16);
	ASSERT_EQ(0, mprotect(p, page, PROT_READ));
	free_fd = lowest_free_fd();
	EXPECT_EQ(-EFAULT, xioctl(self->dev, SLUICE_IOC_STACK_CREATE, c));
	EXPECT_EQ(free_fd, lowest_free_fd());
	EXPECT_FALSE(stack_listed("t_fault"));
	EXPECT_EQ(0, info_value("regions"));
	/* The name was released: it can be created now. */
	fd = create_named(self->dev, "t_fault");
	ASSERT_LE(0, fd);

	ASSERT_EQ(0, mprotect(p, page, PROT_READ | PROT_WRITE));
	a = (struct sluice_stack_attach *)p;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	set_name(a->name, "t_fault");
	ASSERT_EQ(0, mprotect(p, page, PROT_READ));
	free_fd = lowest_free_fd();
	EXPECT_EQ(-EFAULT, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, a));
	EXPECT_EQ(free_fd, lowest_free_fd());
	EXPECT_EQ(1, stack_attr_ll("t_fault", "attached"));
	/* Only the creator's file is left. */
	ASSERT_LT(0, read_file(DEBUGFS_DIR "/stacks/t_fault", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "pid %d files 1\n", getpid());
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	munmap(p, page);
	close(fd);
	EXPECT_FALSE(stack_listed("t_fault"));
}

TEST_F(stack, create_ifindex)
{
	struct sluice_stack_create c;
	char buf[64];
	int fd;

	layout(&c, "t_if", 16, 16);
	c.ifindex = 99999;
	EXPECT_EQ(-ENODEV, create(self->dev, &c));
	c.ifindex = 0x80000001u;
	EXPECT_EQ(-ENODEV, create(self->dev, &c));
	EXPECT_EQ(0, info_value("regions"));

	/* Loopback is ifindex 1 in every network namespace. */
	layout(&c, "t_if", 16, 16);
	c.ifindex = 1;
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, stack_attr_ll("t_if", "ifindex"));
	ASSERT_LE(0, stack_attr("t_if", "ifname", buf, sizeof(buf)));
	EXPECT_STREQ("lo", buf);
	close(fd);

	layout(&c, "t_noif", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, stack_attr_ll("t_noif", "ifindex"));
	ASSERT_LE(0, stack_attr("t_noif", "ifname", buf, sizeof(buf)));
	EXPECT_STREQ("", buf);
	close(fd);
}

TEST_F(stack, create_duplicate_is_eexist_until_last_close)
{
	struct sluice_stack_create c;
	int fd, fd2, fd3;

	fd = create_named(self->dev, "t_dup");
	ASSERT_LE(0, fd);
	layout(&c, "t_dup", 16, 16);
	EXPECT_EQ(-EEXIST, create(self->dev, &c));
	/* Another layout does not matter: the name does. */
	layout(&c, "t_dup", 64, 64);
	EXPECT_EQ(-EEXIST, create(self->dev, &c));
	EXPECT_EQ(1, info_value("regions"));

	/* A dup and an attach fd keep the name: it goes with the last. */
	fd2 = dup(fd);
	fd3 = attach(self->dev, "t_dup", NULL);
	ASSERT_LE(0, fd3);
	close(fd);
	EXPECT_EQ(-EEXIST, create_named(self->dev, "t_dup"));
	close(fd2);
	EXPECT_EQ(-EEXIST, create_named(self->dev, "t_dup"));
	EXPECT_TRUE(stack_listed("t_dup"));
	close(fd3);
	EXPECT_FALSE(stack_listed("t_dup"));
	EXPECT_FALSE(stack_in_debugfs("t_dup"));

	fd = create_named(self->dev, "t_dup");
	ASSERT_LE(0, fd);
	close(fd);
}

/*
 * SLUICE_STACK_CREATE_REPLACE: a stack user space marked broken gives its
 * name to a new one, and lives on, by no name, for the files holding it.
 */
TEST_F(stack, create_replace_takes_a_broken_stacks_name)
{
	struct sluice_stack_create c;
	struct sluice_region *r1, *r2;
	int fd1, fd2, fd3;

	layout(&c, "t_repl", 16, 16);
	fd1 = create(self->dev, &c);
	ASSERT_LE(0, fd1);
	r1 = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd1, 0);
	ASSERT_NE(MAP_FAILED, r1);
	r1->state = SLUICE_STATE_READY;

	layout(&c, "t_repl", 16, 16);
	c.flags = SLUICE_STACK_CREATE_REPLACE;
	EXPECT_EQ(-EEXIST, create(self->dev, &c)) TH_LOG("a stack not broken keeps its name");
	r1->state = SLUICE_STATE_BROKEN;
	layout(&c, "t_repl", 16, 16);
	EXPECT_EQ(-EEXIST, create(self->dev, &c)) TH_LOG("without the flag, even a broken one");

	layout(&c, "t_repl", 16, 16);
	c.flags = SLUICE_STACK_CREATE_REPLACE;
	fd2 = create(self->dev, &c);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(1, info_value("stacks"));
	EXPECT_EQ(2, info_value("regions"));
	EXPECT_TRUE(stack_listed("t_repl"));

	/* The name is the new stack's; the old one is still there for fd1. */
	fd3 = attach(self->dev, "t_repl", NULL);
	ASSERT_LE(0, fd3);
	r2 = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd3, 0);
	ASSERT_NE(MAP_FAILED, r2);
	EXPECT_EQ(SLUICE_STATE_INIT, r2->state);
	EXPECT_EQ(SLUICE_STATE_BROKEN, r1->state);

	/* The old one goes with its last file and mapping, the name stays. */
	close(fd1);
	munmap(r1, c.region_size);
	EXPECT_EQ(1, info_value("regions"));
	EXPECT_TRUE(stack_listed("t_repl"));
	EXPECT_TRUE(stack_in_debugfs("t_repl"));
	close(fd2);
	close(fd3);
	munmap(r2, c.region_size);
	EXPECT_FALSE(stack_listed("t_repl"));
	EXPECT_FALSE(stack_in_debugfs("t_repl"));
}

TEST_F(stack, ioctls_belong_to_their_file)
{
	struct sluice_stack_create c;
	struct sluice_version v = { .size = sizeof(v) };
	__u32 seq;
	int fd;

	fd = create_named(self->dev, "t_which");
	ASSERT_LE(0, fd);
	/* Stack commands on /dev/sluice and device commands on a stack fd. */
	EXPECT_EQ(-ENOTTY, wake(self->dev, 0, &seq));
	layout(&c, "t_which2", 16, 16);
	EXPECT_EQ(-ENOTTY, create(fd, &c));
	EXPECT_EQ(-ENOTTY, attach(fd, "t_which", NULL));
	EXPECT_EQ(-ENOTTY, xioctl(fd, SLUICE_IOC_VERSION, &v));
	EXPECT_EQ(-ENOTTY, xioctl(fd, _IOWR(SLUICE_IOC_MAGIC, 0x7f, struct sluice_stack_wake), &v));
	EXPECT_FALSE(stack_listed("t_which2"));
	/* read and write are not defined on a stack fd. */
	EXPECT_EQ(-1, read(fd, &seq, sizeof(seq)));
	EXPECT_EQ(EINVAL, errno);
	close(fd);
}

TEST_F(stack, attach_good_shares_region)
{
	struct sluice_stack_create c;
	struct sluice_stack_attach a;
	char *m1, *m2;
	int fd, fd2;

	layout(&c, "t_att", 16, 16);
	c.ifindex = 1;
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	fd2 = attach(self->dev, "t_att", &a);
	ASSERT_LE(0, fd2);
	EXPECT_NE(fd, fd2);
	EXPECT_EQ(sizeof(a), a.size);
	EXPECT_EQ(c.region_size, a.region_size);
	EXPECT_EQ(1, a.ifindex);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd2, F_GETFD) & FD_CLOEXEC);

	m1 = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m1);
	m2 = mmap(NULL, a.region_size, PROT_READ, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, m2);
	EXPECT_NE(m1, m2);
	/* The same pages: a write through one shows through the other. */
	strcpy(m1 + c.bufdata_off, "hello through the first mapping");
	m1[c.region_size - 1] = 0x5a;
	EXPECT_STREQ("hello through the first mapping", m2 + c.bufdata_off);
	EXPECT_EQ(0x5a, m2[c.region_size - 1]);
	EXPECT_EQ(SLUICE_REGION_MAGIC, ((struct sluice_region *)m2)->magic);
	munmap(m1, c.region_size);
	munmap(m2, a.region_size);
	close(fd);
	close(fd2);
}

TEST_F(stack, attach_missing_is_enoent)
{
	struct sluice_stack_attach a;
	int fd;

	EXPECT_EQ(-ENOENT, attach(self->dev, "t_nobody", &a));
	EXPECT_EQ(-1, a.fd);
	fd = create_named(self->dev, "t_there");
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOENT, attach(self->dev, "t_ther", NULL));
	EXPECT_EQ(-ENOENT, attach(self->dev, "t_there2", NULL));
	EXPECT_EQ(-ENOENT, attach(self->dev, "T_THERE", NULL));
	close(fd);
	/* Gone with its last fd. */
	EXPECT_EQ(-ENOENT, attach(self->dev, "t_there", NULL));
}

TEST_F(stack, attach_argument_rules)
{
	struct sluice_stack_attach a;
	struct {
		struct sluice_stack_attach a;
		__u8 tail[8];
	} big;
	int fd, fd2;

	fd = create_named(self->dev, "t_aarg");
	ASSERT_LE(0, fd);

	memset(&a, 0, sizeof(a));
	set_name(a.name, "t_aarg");
	a.size = sizeof(a) - 1;
	EXPECT_EQ(-EINVAL, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &a));
	a.size = sizeof(a);
	a.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &a));
	a.flags = 0;
	a.name[20] = 'x';	/* not NUL-padded */
	EXPECT_EQ(-EINVAL, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &a));
	EXPECT_EQ(-EINVAL, attach(self->dev, "../t_aarg", NULL));
	EXPECT_EQ(-EINVAL, attach(self->dev, "", NULL));

	memset(&big, 0, sizeof(big));
	big.a.size = sizeof(big);
	set_name(big.a.name, "t_aarg");
	big.tail[3] = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &big));
	big.tail[3] = 0;
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_STACK_ATTACH, &big));
	fd2 = big.a.fd;
	EXPECT_EQ(sizeof(big.a), big.a.size);
	EXPECT_LE(0, fd2);
	close(fd2);
	close(fd);
}

TEST_F(stack, attach_other_uid_is_eacces)
{
	pid_t pid;
	int fd;

	fd = create_named(self->dev, "t_uid");
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int ret;

		/* Dropping every uid drops every capability too. */
		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		ret = attach(self->dev, "t_uid", NULL);
		_exit(ret < 0 ? -ret : 101);
	}
	EXPECT_EQ(EACCES, child_status(pid));
	EXPECT_EQ(1, stack_attr_ll("t_uid", "attached"));
	close(fd);
}

TEST_F(stack, attach_by_owner_or_cap_net_admin)
{
	int pipefd[2], fd;
	struct sluice_stack_attach a;
	struct sluice_region *r;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int sfd, sfd2;

		close(pipefd[0]);
		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(100);
		sfd = create_named(self->dev, "t_nobody");
		if (sfd < 0)
			_exit(-sfd);
		/* Its creator's uid may attach without any capability. */
		sfd2 = attach(self->dev, "t_nobody", NULL);
		if (sfd2 < 0)
			_exit(-sfd2);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(102);
		/* Hold the stack until the parent closes the pipe. */
		close(pipefd[1]);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_EQ(NOBODY, stack_attr_ll("t_nobody", "owner_uid"));
	/* Root has CAP_NET_ADMIN: may attach to another user's stack. */
	fd = attach(self->dev, "t_nobody", &a);
	ASSERT_LE(0, fd);
	r = mmap(NULL, a.region_size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, r);
	EXPECT_EQ(NOBODY, r->creator_uid);
	EXPECT_EQ(2, stack_attr_ll("t_nobody", "attached"));
	munmap(r, a.region_size);
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pipefd[0]);
	EXPECT_FALSE(stack_listed("t_nobody"));
}

TEST_F(stack, mmap_bounds_are_einval)
{
	struct sluice_stack_create c;
	size_t len;
	char *m;
	int fd;

	layout(&c, "t_mmap", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	len = c.region_size;

	/* Past the end: one page more, or any offset. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, len + PAGE, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, len + 1, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, PAGE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, len));
	EXPECT_EQ(EINVAL, errno);
	/* Private mappings, writable or not. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(1, stack_attr_ll("t_mmap", "attached"));

	/* Less than the whole region is fine, and it cannot grow. */
	m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(SLUICE_REGION_MAGIC, ((struct sluice_region *)m)->magic);
	EXPECT_EQ(MAP_FAILED, mremap(m, PAGE, 2 * PAGE, MREMAP_MAYMOVE));
	EXPECT_EQ(0, munmap(m, PAGE));

	/* A partial munmap splits the vma: both halves hold the region. */
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, munmap(m + PAGE, PAGE));
	m[0] = 1;
	m[2 * PAGE] = 2;
	EXPECT_EQ(0, munmap(m, PAGE));
	EXPECT_EQ(0, munmap(m + 2 * PAGE, len - 2 * PAGE));

	close(fd);
}

TEST_F(stack, mapping_outlives_fd)
{
	struct sluice_stack_create c;
	char *m;
	int fd;

	layout(&c, "t_life", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	m = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	close(fd);

	/* The mapping still holds the stack: listed, usable, its name taken. */
	EXPECT_TRUE(stack_listed("t_life"));
	EXPECT_TRUE(stack_in_debugfs("t_life"));
	EXPECT_EQ(1, stack_attr_ll("t_life", "attached"));
	EXPECT_EQ(1, info_value("regions"));
	EXPECT_EQ(-EEXIST, create_named(self->dev, "t_life"));
	m[c.region_size - 1] = 7;
	EXPECT_EQ(SLUICE_REGION_MAGIC, ((struct sluice_region *)m)->magic);
	fd = attach(self->dev, "t_life", NULL);
	ASSERT_LE(0, fd);
	close(fd);

	/* Unmapped: everything goes, and the name is free again. */
	EXPECT_EQ(0, munmap(m, c.region_size));
	EXPECT_FALSE(stack_listed("t_life"));
	EXPECT_FALSE(stack_in_debugfs("t_life"));
	EXPECT_EQ(0, info_value("stacks"));
	EXPECT_EQ(0, info_value("regions"));
	fd = create_named(self->dev, "t_life");
	ASSERT_LE(0, fd);
	close(fd);
}

static long futex(__u32 *word, int op, __u32 val, const struct timespec *ts)
{
	return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/*
 * Is @pid asleep inside futex(2)?  Its /proc syscall line names the call
 * it is in, its stat line says whether it sleeps.
 */
static bool asleep_in_futex(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	n = read_file(path, buf, sizeof(buf));
	if (n <= 0 || strtol(buf, NULL, 10) != SYS_futex)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = read_file(path, buf, sizeof(buf));
	p = n > 0 ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Up to 5 s for @pid to sleep in futex(2). */
static bool wait_asleep_in_futex(pid_t pid)
{
	for (int i = 0; i < 5000; i++) {
		if (asleep_in_futex(pid))
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * The waiter's side: a shared FUTEX_WAIT on @word while it holds @val,
 * bounded by 5 s; exit 0 only if it was woken (returned 0) and then saw
 * @want there.  Called in a child.
 */
static void __attribute__((noreturn)) futex_waiter(__u32 *word, __u32 val, __u32 want,
						    int ready)
{
	struct timespec ts = { 5, 0 };

	if (write(ready, "r", 1) != 1)
		_exit(10);
	if (futex(word, FUTEX_WAIT, val, &ts))
		_exit(errno == ETIMEDOUT ? 11 : errno == EAGAIN ? 12 : 13);
	_exit(__atomic_load_n(word, __ATOMIC_ACQUIRE) == want ? 0 : 14);
}

/*
 * Region words key shared futexes (uapi "Stacks"): two processes that map
 * one stack on their own (the second attaches by name) wait and wake on
 * the same word, and only on that word: the same offset in another page
 * of the region, or in another stack, is another futex.
 */
TEST_F(stack, shared_futex_between_two_processes)
{
	struct sluice_stack_create c, c2;
	int fd, fd2, ready[2];
	__u32 *m, *m2, *word, *other_page, *other_stack;
	size_t page_words = PAGE / sizeof(__u32);
	char ch;
	pid_t pid;

	layout(&c, "t_futex", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	layout(&c2, "t_futex2", 16, 16);
	fd2 = create(self->dev, &c2);
	ASSERT_LE(0, fd2);
	m = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	m2 = mmap(NULL, c2.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, m2);
	/* A word in the buffer area, the same offset a page on, and in the
	 * other stack. */
	word = m + c.bufdata_off / sizeof(__u32) + 3;
	other_page = word + page_words;
	other_stack = m2 + c.bufdata_off / sizeof(__u32) + 3;
	ASSERT_EQ(c.bufdata_off, c2.bufdata_off);
	ASSERT_LE((c.bufdata_off + PAGE + 16), c.region_size);
	ASSERT_EQ(0, pipe(ready));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sluice_stack_attach a;
		__u32 *cm;
		int cfd;

		/* Its own fd and mapping: nothing inherited is used. */
		close(ready[0]);
		cfd = attach(self->dev, "t_futex", &a);
		if (cfd < 0)
			_exit(20);
		cm = mmap(NULL, a.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
		if (cm == MAP_FAILED)
			_exit(21);
		futex_waiter(cm + c.bufdata_off / sizeof(__u32) + 3, 0, 1, ready[1]);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &ch, 1));
	ASSERT_TRUE(wait_asleep_in_futex(pid));
	/* Other words are other futexes: nobody waits there. */
	EXPECT_EQ(0, futex(other_page, FUTEX_WAKE, 1, NULL));
	EXPECT_EQ(0, futex(other_stack, FUTEX_WAKE, 1, NULL));
	__atomic_store_n(word, 1, __ATOMIC_RELEASE);
	EXPECT_EQ(1, futex(word, FUTEX_WAKE, 1, NULL));
	EXPECT_EQ(0, child_status(pid));

	/* Private futexes are keyed by the address alone, as anywhere. */
	EXPECT_EQ(-1, futex(word, FUTEX_WAIT_PRIVATE, 0, NULL));
	EXPECT_EQ(EAGAIN, errno);
	close(ready[0]);
	munmap(m, c.region_size);
	munmap(m2, c2.region_size);
	close(fd);
	close(fd2);
}

/*
 * A child that inherits the mapping by fork waits on a region word; the
 * parent changes it and wakes it; then the other way round, the lock word
 * of the header this time.
 */
TEST_F(stack, shared_futex_across_fork)
{
	struct sluice_stack_create c;
	struct sluice_region *r;
	int fd, ready[2];
	__u32 *word;
	char ch;
	pid_t pid;

	layout(&c, "t_futex_fork", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	r = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, r);
	close(fd);
	word = (__u32 *)((char *)r + c.bufdata_off);

	/* The child waits, the parent wakes. */
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		futex_waiter(word, 0, 7, ready[1]);
	ASSERT_EQ(1, read(ready[0], &ch, 1));
	ASSERT_TRUE(wait_asleep_in_futex(pid));
	__atomic_store_n(word, 7, __ATOMIC_RELEASE);
	EXPECT_EQ(1, futex(word, FUTEX_WAKE, 1, NULL));
	EXPECT_EQ(0, child_status(pid));

	/* The parent waits on the lock word, a child wakes it. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (!wait_asleep_in_futex(getppid()))
			_exit(30);
		__atomic_store_n(&r->lock, SLUICE_LOCK_HELD, __ATOMIC_RELEASE);
		_exit(futex(&r->lock, FUTEX_WAKE, 1, NULL) == 1 ? 0 : 31);
	}
	{
		struct timespec ts = { 5, 0 };

		EXPECT_EQ(0, futex(&r->lock, FUTEX_WAIT, 0, &ts));
	}
	EXPECT_EQ(SLUICE_LOCK_HELD, __atomic_load_n(&r->lock, __ATOMIC_ACQUIRE));
	EXPECT_EQ(0, child_status(pid));
	close(ready[0]);
	close(ready[1]);
	munmap(r, c.region_size);
	/* The mapping was the last holder: the stack is gone. */
	EXPECT_FALSE(stack_listed("t_futex_fork"));
}

/* A /proc/meminfo value in KiB, or -1. */
static long long meminfo_kb(const char *key)
{
	char buf[8192], *p;
	size_t klen = strlen(key);
	ssize_t n = read_file("/proc/meminfo", buf, sizeof(buf) - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (p = buf; p; p = strchr(p, '\n')) {
		p += *p == '\n';
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return strtoll(p + klen + 1, NULL, 10);
	}
	return -1;
}

/*
 * The region is shmem memory, all of it allocated at create and kept off
 * the reclaim lists (Unevictable) until the stack is freed.  A few pages
 * may sit in per-CPU LRU batches when meminfo is read: 90 % is enough.
 */
TEST_F(stack, region_is_unevictable_shmem)
{
	long long shmem0, unevict0, shmem1, unevict1, kb;
	struct sluice_stack_create c;
	int fd;

	layout(&c, "t_shmem", 16, 4096);	/* 8 MiB of buffers */
	kb = c.region_size / 1024;
	shmem0 = meminfo_kb("Shmem");
	unevict0 = meminfo_kb("Unevictable");
	ASSERT_LE(0, shmem0);
	ASSERT_LE(0, unevict0);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	shmem1 = meminfo_kb("Shmem");
	unevict1 = meminfo_kb("Unevictable");
	TH_LOG("region %lld KiB: Shmem +%lld KiB, Unevictable +%lld KiB", kb,
	       shmem1 - shmem0, unevict1 - unevict0);
	EXPECT_LE(kb * 9 / 10, shmem1 - shmem0);
	EXPECT_LE(kb * 9 / 10, unevict1 - unevict0);
	close(fd);
	/* Freed with the stack: the file is truncated, its pages gone. */
	EXPECT_GT(shmem0 + kb / 10, meminfo_kb("Shmem"));
	EXPECT_GT(unevict0 + kb / 10, meminfo_kb("Unevictable"));
}

TEST_F(stack, fork_inherits_mapping)
{
	struct sluice_stack_create c;
	volatile char *m;
	pid_t pid;
	int fd;

	layout(&c, "t_fork", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	m = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	close(fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		m[c.bufdata_off] = 42;
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));
	EXPECT_EQ(42, m[c.bufdata_off]);
	EXPECT_TRUE(stack_listed("t_fork"));
	munmap((void *)m, c.region_size);
	EXPECT_FALSE(stack_listed("t_fork"));
}

TEST_F(stack, killed_child_leaves_nothing)
{
	struct sluice_stack_create c;
	int pipefd[2], fd;
	char path[128], buf[4096], ch;
	pid_t pid;

	layout(&c, "t_kill", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct sluice_stack_attach a;
		char *m;
		int sfd;

		close(pipefd[0]);
		close(fd);
		sfd = attach(self->dev, "t_kill", &a);
		if (sfd < 0)
			_exit(1);
		m = mmap(NULL, a.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
		if (m == MAP_FAILED)
			_exit(2);
		m[c.bufdata_off] = 'k';
		if (write(pipefd[1], "x", 1) != 1)
			_exit(3);
		for (;;)	/* busy "using" the stack when the signal lands */
			m[c.bufdata_off + 1]++;
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &ch, 1));
	close(pipefd[0]);
	EXPECT_EQ(2, stack_attr_ll("t_kill", "attached"));
	snprintf(path, sizeof(path), DEBUGFS_DIR "/stacks/t_kill");
	ASSERT_LT(0, read_file(path, buf, sizeof(buf)));
	snprintf(path, sizeof(path), "pid %d files 1", pid);
	EXPECT_NE(NULL, strstr(buf, path));

	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	/* The child's fd and mapping went with it. */
	EXPECT_EQ(1, stack_attr_ll("t_kill", "attached"));
	ASSERT_LT(0, read_file(DEBUGFS_DIR "/stacks/t_kill", buf, sizeof(buf)));
	EXPECT_EQ(NULL, strstr(buf, path));
	EXPECT_EQ(1, info_value("regions"));

	close(fd);
	EXPECT_FALSE(stack_listed("t_kill"));
	EXPECT_EQ(0, info_value("stacks"));
	EXPECT_EQ(0, info_value("regions"));
}

TEST_F(stack, wake_argument_rules)
{
	struct sluice_stack_wake w;
	int fd;

	fd = create_named(self->dev, "t_wargs");
	ASSERT_LE(0, fd);
	memset(&w, 0, sizeof(w));
	w.size = sizeof(w) - 1;
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_STACK_WAKE, &w));
	w.size = sizeof(w);
	w.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_STACK_WAKE, &w));
	w.reserved = 0;
	w.flags = SLUICE_WAKE_ARM | SLUICE_WAKE_SIGNAL;
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_STACK_WAKE, &w));
	for (int bit = 2; bit < 32; bit++) {
		w.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_STACK_WAKE, &w)) TH_LOG("bit %d", bit);
	}
	/* None of that changed the sequence. */
	w.flags = 0;
	w.seq = 77;
	ASSERT_EQ(0, xioctl(fd, SLUICE_IOC_STACK_WAKE, &w));
	EXPECT_EQ(0, w.seq);
	EXPECT_EQ(sizeof(w), w.size);
	close(fd);
}

TEST_F(stack, wake_larger_struct)
{
	struct {
		struct sluice_stack_wake w;
		__u8 tail[8];
	} b;
	int fd;

	fd = create_named(self->dev, "t_wbig");
	ASSERT_LE(0, fd);
	memset(&b, 0, sizeof(b));
	b.w.size = sizeof(b);
	b.w.flags = SLUICE_WAKE_SIGNAL;
	b.tail[7] = 1;
	EXPECT_EQ(-E2BIG, xioctl(fd, SLUICE_IOC_STACK_WAKE, &b));
	b.tail[7] = 0;
	ASSERT_EQ(0, xioctl(fd, SLUICE_IOC_STACK_WAKE, &b));
	EXPECT_EQ(sizeof(b.w), b.w.size);
	/* Only the accepted call signalled. */
	EXPECT_EQ(1, b.w.seq);
	close(fd);
}

TEST_F(stack, debugfs_counts_stack_ioctls)
{
	long long cc = info_field("ioctl_stack_create", "calls");
	long long ce = info_field("ioctl_stack_create", "errors");
	long long ac = info_field("ioctl_stack_attach", "calls");
	long long ae = info_field("ioctl_stack_attach", "errors");
	long long wc = info_field("ioctl_stack_wake", "calls");
	long long we = info_field("ioctl_stack_wake", "errors");
	struct sluice_stack_create c;
	int fd, fd2;

	ASSERT_LE(0, cc);
	ASSERT_LE(0, ac);
	ASSERT_LE(0, wc);
	fd = create_named(self->dev, "t_count");
	ASSERT_LE(0, fd);
	layout(&c, "t_count", 16, 16);
	EXPECT_EQ(-EEXIST, create(self->dev, &c));
	fd2 = attach(self->dev, "t_count", NULL);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENOENT, attach(self->dev, "t_nocount", NULL));
	EXPECT_EQ(0, wake(fd, SLUICE_WAKE_SIGNAL, NULL));
	EXPECT_EQ(-EINVAL, wake(fd2, 0x80, NULL));
	EXPECT_EQ(cc + 2, info_field("ioctl_stack_create", "calls"));
	EXPECT_EQ(ce + 1, info_field("ioctl_stack_create", "errors"));
	EXPECT_EQ(ac + 2, info_field("ioctl_stack_attach", "calls"));
	EXPECT_EQ(ae + 1, info_field("ioctl_stack_attach", "errors"));
	EXPECT_EQ(wc + 2, info_field("ioctl_stack_wake", "calls"));
	EXPECT_EQ(we + 1, info_field("ioctl_stack_wake", "errors"));
	close(fd2);
	close(fd);
}

TEST_F(stack, wake_sequence_and_poll_levels)
{
	__u32 s, s2;
	int fd, fd2, fd3;

	fd = create_named(self->dev, "t_seq");
	ASSERT_LE(0, fd);
	fd2 = attach(self->dev, "t_seq", NULL);
	ASSERT_LE(0, fd2);

	/* A new fd is armed at the current sequence: nothing to report. */
	EXPECT_EQ(0, poll_in(fd, 0));
	ASSERT_EQ(0, wake(fd, 0, &s));
	EXPECT_EQ(0, s);

	/* SIGNAL through any fd returns the new value and makes them all ready. */
	s2 = 0;
	ASSERT_EQ(0, wake(fd2, SLUICE_WAKE_SIGNAL, &s2));
	EXPECT_EQ(s + 1, s2);
	EXPECT_EQ(POLLIN, poll_in(fd, 0) & (POLLIN | POLLERR | POLLHUP));
	EXPECT_EQ(POLLIN, poll_in(fd2, 0) & (POLLIN | POLLERR | POLLHUP));
	/* Level, not edge: ready until re-armed. */
	EXPECT_EQ(POLLIN, poll_in(fd, 0) & POLLIN);

	/* ARM with what was seen: quiet.  ARM with an older value: ready. */
	ASSERT_EQ(0, wake(fd, SLUICE_WAKE_ARM, &s2));
	EXPECT_EQ(s + 1, s2);
	EXPECT_EQ(0, poll_in(fd, 0));
	EXPECT_EQ(POLLIN, poll_in(fd2, 0) & POLLIN);
	s2 = s;
	ASSERT_EQ(0, wake(fd, SLUICE_WAKE_ARM, &s2));
	EXPECT_EQ(POLLIN, poll_in(fd, 0) & POLLIN);

	/*
	 * The race the protocol is for: read the sequence, a SIGNAL lands,
	 * then the sleeper arms with what it read and polls: no sleep.
	 */
	ASSERT_EQ(0, wake(fd, 0, &s));
	ASSERT_EQ(0, wake(fd2, SLUICE_WAKE_SIGNAL, NULL));
	s2 = s;
	ASSERT_EQ(0, wake(fd, SLUICE_WAKE_ARM, &s2));
	EXPECT_EQ(s + 1, s2);
	EXPECT_EQ(POLLIN, poll_in(fd, 1000) & POLLIN);

	/* Armed per fd, not per stack: a new fd starts quiet. */
	fd3 = attach(self->dev, "t_seq", NULL);
	ASSERT_LE(0, fd3);
	EXPECT_EQ(0, poll_in(fd3, 0));
	EXPECT_EQ(1, stack_attr_ll("t_seq", "attached"));
	close(fd3);
	close(fd2);
	close(fd);
}

TEST_F(stack, poll_sleeps_until_wake)
{
	long long t0, dt;
	__u32 s, s2;
	pid_t pid;
	int fd, rev;

	fd = create_named(self->dev, "t_poll");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, wake(fd, 0, &s));
	s2 = s;
	ASSERT_EQ(0, wake(fd, SLUICE_WAKE_ARM, &s2));
	EXPECT_EQ(0, poll_in(fd, 50));

	/* Before the fork: the wake comes 300 ms after this at the earliest. */
	t0 = now_ms();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int cfd = attach(self->dev, "t_poll", NULL);

		if (cfd < 0)
			_exit(1);
		usleep(300 * 1000);
		_exit(wake(cfd, SLUICE_WAKE_SIGNAL, NULL) ? 2 : 0);
	}
	rev = poll_in(fd, 10000);
	dt = now_ms() - t0;
	EXPECT_EQ(POLLIN, rev & (POLLIN | POLLERR | POLLHUP));
	/* It slept until the wake, and the wake, not the timeout, ended it. */
	EXPECT_LE(290, dt);
	EXPECT_GT(8000, dt);
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(0, wake(fd, 0, &s2));
	EXPECT_EQ(s + 1, s2);
	close(fd);
}

TEST_F(stack, epoll_sleeps_until_wake)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	long long t0, dt;
	pid_t pid;
	int fd, ep;

	fd = create_named(self->dev, "t_epoll");
	ASSERT_LE(0, fd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ev.data.fd = fd;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));

	t0 = now_ms();
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(300 * 1000);
		/* The inherited fd: any fd of the stack may signal. */
		_exit(wake(fd, SLUICE_WAKE_SIGNAL, NULL) ? 2 : 0);
	}
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 10000));
	dt = now_ms() - t0;
	EXPECT_EQ(fd, out.data.fd);
	EXPECT_TRUE(out.events & EPOLLIN);
	EXPECT_LE(290, dt);
	EXPECT_GT(8000, dt);
	EXPECT_EQ(0, child_status(pid));
	close(ep);
	close(fd);
}

TEST_F(stack, sysfs_values)
{
	const char *attrs[] = {
		"name", "netns", "ifindex", "ifname", "owner_uid", "attached",
		"pids", "region_size", "sockets",
	};
	struct sluice_stack_create c;
	struct sluice_region *r;
	int pipefd[2], fd, fd2;
	char buf[64], want[64], path[256];
	struct stat st;
	pid_t pid;

	layout(&c, "t_sysfs", 64, 256);
	c.ifindex = 1;
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(path, sizeof(path), SYSFS_STACKS "/t_sysfs/%s", attrs[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s", attrs[i]);
		EXPECT_EQ(0444, st.st_mode & 0777) TH_LOG("%s", attrs[i]);
		EXPECT_EQ(-1, open(path, O_WRONLY));
		EXPECT_EQ(EACCES, errno);
	}
	ASSERT_LE(0, stack_attr("t_sysfs", "name", buf, sizeof(buf)));
	EXPECT_STREQ("t_sysfs", buf);
	ASSERT_EQ(0, stat("/proc/self/ns/net", &st));
	EXPECT_EQ((long long)st.st_ino, stack_attr_ll("t_sysfs", "netns"));
	EXPECT_EQ(1, stack_attr_ll("t_sysfs", "ifindex"));
	ASSERT_LE(0, stack_attr("t_sysfs", "ifname", buf, sizeof(buf)));
	EXPECT_STREQ("lo", buf);
	EXPECT_EQ(0, stack_attr_ll("t_sysfs", "owner_uid"));
	EXPECT_EQ((long long)c.region_size, stack_attr_ll("t_sysfs", "region_size"));
	/* Sockets: as the region says, never past the slots created. */
	r = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, r);
	EXPECT_EQ(0, stack_attr_ll("t_sysfs", "sockets"));
	r->sock_used = 3;
	EXPECT_EQ(3, stack_attr_ll("t_sysfs", "sockets"));
	r->sock_used = 0xffffffff;
	EXPECT_EQ(64, stack_attr_ll("t_sysfs", "sockets"));
	munmap(r, c.region_size);

	/* Processes, not fds: a second fd of ours is still one process. */
	EXPECT_EQ(1, stack_attr_ll("t_sysfs", "attached"));
	fd2 = attach(self->dev, "t_sysfs", NULL);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(1, stack_attr_ll("t_sysfs", "attached"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(pipefd[0]);
		if (attach(self->dev, "t_sysfs", NULL) < 0)
			_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], buf, 1));
	EXPECT_EQ(2, stack_attr_ll("t_sysfs", "attached"));
	/* In the order they attached. */
	snprintf(want, sizeof(want), "%d %d", getpid(), pid);
	ASSERT_LE(0, stack_attr("t_sysfs", "pids", buf, sizeof(buf)));
	EXPECT_STREQ(want, buf);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pipefd[0]);
	EXPECT_EQ(1, stack_attr_ll("t_sysfs", "attached"));
	snprintf(want, sizeof(want), "%d", getpid());
	ASSERT_LE(0, stack_attr("t_sysfs", "pids", buf, sizeof(buf)));
	EXPECT_STREQ(want, buf);
	close(fd2);
	EXPECT_EQ(1, stack_attr_ll("t_sysfs", "attached"));
	close(fd);
	EXPECT_FALSE(stack_listed("t_sysfs"));
}

/*
 * A file outliving the process that made it (inherited by a child) keeps
 * the stack, but that process no longer counts as attached.
 */
TEST_F(stack, attached_counts_live_processes)
{
	char buf[4096], want[64];
	int pipefd[2], fd;
	pid_t child, grandchild;

	fd = create_named(self->dev, "t_live");
	ASSERT_LE(0, fd);
	/* The grandchild comes back to us when the child exits. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		pid_t g;

		close(pipefd[0]);
		if (attach(self->dev, "t_live", NULL) < 0)
			_exit(1);
		g = fork();
		if (g < 0)
			_exit(2);
		if (g == 0) {
			/* Holds the child's stack fd, made by the child. */
			g = getpid();
			if (write(pipefd[1], &g, sizeof(g)) != sizeof(g))
				_exit(3);
			pause();
			_exit(0);
		}
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(sizeof(grandchild), read(pipefd[0], &grandchild, sizeof(grandchild)));
	close(pipefd[0]);
	EXPECT_EQ(0, child_status(child));

	EXPECT_EQ(1, stack_attr_ll("t_live", "attached"));
	snprintf(want, sizeof(want), "%d", getpid());
	ASSERT_LE(0, stack_attr("t_live", "pids", buf, sizeof(buf)));
	EXPECT_STREQ(want, buf);
	ASSERT_LT(0, read_file(DEBUGFS_DIR "/stacks/t_live", buf, sizeof(buf)));
	snprintf(want, sizeof(want), "pid %d files 1 exited\n", child);
	EXPECT_NE(NULL, strstr(buf, want)) TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "attached 1\n"));

	/* The grandchild's copy is the last reference to that file. */
	kill(grandchild, SIGKILL);
	EXPECT_EQ(grandchild, waitpid(grandchild, NULL, 0));
	ASSERT_LT(0, read_file(DEBUGFS_DIR "/stacks/t_live", buf, sizeof(buf)));
	EXPECT_EQ(NULL, strstr(buf, want));
	close(fd);
	EXPECT_FALSE(stack_listed("t_live"));
}

TEST_F(stack, debugfs_dump)
{
	struct sluice_stack_create c;
	char buf[8192], want[128];
	struct stat st;
	__u32 s = 0;
	int fd, fd2;

	layout(&c, "t_dbg", 16, 16);
	fd = create(self->dev, &c);
	ASSERT_LE(0, fd);
	fd2 = attach(self->dev, "t_dbg", NULL);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, wake(fd, SLUICE_WAKE_SIGNAL, &s));
	EXPECT_EQ(1, info_value("stacks"));
	EXPECT_EQ(1, info_value("regions"));

	ASSERT_EQ(0, stat(DEBUGFS_DIR "/stacks/t_dbg", &st));
	EXPECT_EQ(0444, st.st_mode & 0777);
	ASSERT_LT(0, read_file(DEBUGFS_DIR "/stacks/t_dbg", buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "name t_dbg\n"));
	snprintf(want, sizeof(want), "region_size %llu\n", (unsigned long long)c.region_size);
	EXPECT_NE(NULL, strstr(buf, want));
	EXPECT_NE(NULL, strstr(buf, "attached 1\n"));
	snprintf(want, sizeof(want), "pid %d files 2\n", getpid());
	EXPECT_NE(NULL, strstr(buf, want));
	EXPECT_NE(NULL, strstr(buf, "wake_seq 1\n"));
	EXPECT_NE(NULL, strstr(buf, "  magic 0x534c5543\n"));
	EXPECT_NE(NULL, strstr(buf, "  state 0\n"));
	/* The stack fds' references (two files, the sysfs entry). */
	EXPECT_NE(NULL, strstr(buf, "refs 3\n"));
	close(fd2);
	close(fd);
	EXPECT_FALSE(stack_in_debugfs("t_dbg"));
	EXPECT_EQ(0, info_value("stacks"));
}

TEST_F(stack, names_are_per_netns)
{
	char dir[64], buf[64];
	struct stat st;
	int pipefd[2], fd;
	pid_t pid;

	fd = create_named(self->dev, "t_ns");
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct stat nst;
		int sfd;

		close(pipefd[0]);
		if (unshare(CLONE_NEWNET))
			_exit(100);
		/* Not visible here, and the same name is free here. */
		if (attach(self->dev, "t_ns", NULL) != -ENOENT)
			_exit(101);
		sfd = create_named(self->dev, "t_ns");
		if (sfd < 0)
			_exit(-sfd);
		if (stat("/proc/self/ns/net", &nst))
			_exit(102);
		if (write(pipefd[1], &nst.st_ino, sizeof(nst.st_ino)) != sizeof(nst.st_ino))
			_exit(103);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(sizeof(st.st_ino), read(pipefd[0], &st.st_ino, sizeof(st.st_ino)));
	close(pipefd[0]);
	snprintf(dir, sizeof(dir), "t_ns@%llu", (unsigned long long)st.st_ino);
	EXPECT_TRUE(stack_listed("t_ns"));
	EXPECT_TRUE(stack_listed(dir)) TH_LOG("%s", dir);
	EXPECT_TRUE(stack_in_debugfs(dir));
	ASSERT_LE(0, stack_attr(dir, "name", buf, sizeof(buf)));
	EXPECT_STREQ("t_ns", buf);
	EXPECT_EQ((long long)st.st_ino, stack_attr_ll(dir, "netns"));
	EXPECT_EQ(2, info_value("stacks"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	EXPECT_FALSE(stack_listed(dir));
	close(fd);
}

/*
 * Processes racing to create, attach to, map, wake and close one name:
 * every call gets one of the answers it may get, and nothing is left.
 */
TEST_F_TIMEOUT(stack, concurrent_create_attach_close, 120)
{
	enum { PROCS = 4, ROUNDS = 300 };
	pid_t pids[PROCS];

	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		ASSERT_LE(0, pids[p]);
		if (pids[p])
			continue;
		for (int i = 0; i < ROUNDS; i++) {
			int fd = create_named(self->dev, "t_race");
			char *m;

			if (fd == -EEXIST)
				fd = attach(self->dev, "t_race", NULL);
			if (fd == -ENOENT)	/* unlisted between the two */
				continue;
			if (fd < 0)
				_exit(10);
			m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (m == MAP_FAILED)
				_exit(11);
			if (((struct sluice_region *)m)->magic != SLUICE_REGION_MAGIC)
				_exit(12);
			m[PAGE - 1 - p]++;
			if (wake(fd, SLUICE_WAKE_SIGNAL, NULL))
				_exit(13);
			/* Half the time the mapping outlives the fd. */
			if (i & 1) {
				close(fd);
				munmap(m, PAGE);
			} else {
				munmap(m, PAGE);
				close(fd);
			}
		}
		_exit(0);
	}
	for (int p = 0; p < PROCS; p++) {
		EXPECT_EQ(0, child_status(pids[p])) TH_LOG("process %d", p);
	}
	EXPECT_FALSE(stack_listed("t_race"));
	EXPECT_EQ(0, info_value("regions"));
}

/*
 * A fixture of its own, declared last, so that it runs after every other
 * test (the harness runs fixtures in the order they are declared, global
 * tests first).
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

TEST_F(unload, refused_while_a_stack_exists)
{
	struct sluice_stack_create c;
	int dev, fd;
	char *m;

	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	layout(&c, "t_unload", 16, 16);
	fd = create(dev, &c);
	ASSERT_LE(0, fd);
	close(dev);
	/* The stack fd holds the module... */
	EXPECT_EQ(-EWOULDBLOCK, unload_module());
	m = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	close(fd);
	/* ...and so does a mapping alone. */
	EXPECT_EQ(-EWOULDBLOCK, unload_module());
	EXPECT_TRUE(module_loaded());
	m[0] = 1;
	munmap(m, c.region_size);
	/* Nothing left: the module unloads, and takes its directories. */
	ASSERT_EQ(0, unload_module());
	EXPECT_EQ(-1, access(SYSFS_STACKS, F_OK));
	EXPECT_EQ(-1, access(DEBUGFS_DIR, F_OK));
}

TEST_HARNESS_MAIN
