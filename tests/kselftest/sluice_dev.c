// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftests for /dev/sluice: loading, the version ioctl and its argument
 * rules, the sysfs and debugfs inspection paths, and unloading.
 *
 * Runs as root inside the test VM.  The module is loaded from $SLUICE_KO
 * (default /lib/modules/sluice.ko) when a test needs it and is not loaded.
 * Every test leaves the module either loaded and idle or unloaded, so the
 * tests do not depend on their order.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <uapi/sluice.h>

#include "kselftest_harness.h"
#include "sluice_util.h"

#define SYSFS_DEV	"/sys/class/misc/sluice"

/* finit_module(2); returns 0 or -errno. */

/* Read a whole small file into buf, NUL-terminated; returns length or -errno. */

TEST(load_creates_device_sysfs_debugfs)
{
	char buf[256];
	struct stat st;

	if (module_loaded())
		ASSERT_EQ(0, unload_module());
	ASSERT_EQ(0, load_module());

	ASSERT_EQ(0, stat(SLUICE_DEVICE_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 0777);

	ASSERT_LT(0, read_file(SYSFS_MOD "/version", buf, sizeof(buf)));
	EXPECT_STREQ("0.1.0\n", buf);
	ASSERT_LT(0, read_file(SYSFS_DEV "/abi_version", buf, sizeof(buf)));
	EXPECT_EQ(SLUICE_ABI_VERSION, atoi(buf));
	ASSERT_LT(0, read_file(SYSFS_DEV "/features", buf, sizeof(buf)));
	EXPECT_EQ(SLUICE_FEATURES_ALL, strtoull(buf, NULL, 0));
	EXPECT_EQ(SLUICE_ABI_VERSION, info_value("abi_version"));
	EXPECT_EQ(0, info_value("open_files"));
}

TEST(load_twice_is_eexist)
{
	ASSERT_EQ(0, ensure_loaded());
	EXPECT_EQ(-EEXIST, load_module());
}

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	ASSERT_EQ(0, ensure_loaded());
	self->fd = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

static void version_init(struct sluice_version *v)
{
	memset(v, 0, sizeof(*v));
	v->size = sizeof(*v);
}

TEST_F(dev, version_exact_size)
{
	struct sluice_version v;
	char buf[64];

	version_init(&v);
	memset(v.module_version, 'x', sizeof(v.module_version));
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_VERSION, &v));
	EXPECT_EQ(sizeof(v), v.size);
	EXPECT_EQ(0, v.flags);
	EXPECT_EQ(SLUICE_ABI_VERSION, v.abi_version);
	EXPECT_EQ(0, v.reserved);
	EXPECT_EQ(SLUICE_FEATURES_ALL, v.features);
	/* NUL-terminated, padded with zeros, and the same as modinfo says. */
	EXPECT_EQ(0, v.module_version[sizeof(v.module_version) - 1]);
	ASSERT_LT(0, read_file(SYSFS_MOD "/version", buf, sizeof(buf)));
	buf[strcspn(buf, "\n")] = '\0';
	EXPECT_STREQ(buf, v.module_version);
	for (size_t i = strlen(v.module_version); i < sizeof(v.module_version); i++)
		EXPECT_EQ(0, v.module_version[i]);
}

TEST_F(dev, version_short_size_is_einval)
{
	struct sluice_version v;
	const __u32 sizes[] = { 0, 4, 8, sizeof(v) - 8, sizeof(v) - 1 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		version_init(&v);
		v.size = sizes[i];
		EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_VERSION, &v))
			TH_LOG("size %u", sizes[i]);
		/* Nothing was written back. */
		EXPECT_EQ(0, v.abi_version);
		EXPECT_EQ(sizes[i], v.size);
	}
}

TEST_F(dev, version_nonzero_reserved_is_einval)
{
	struct sluice_version v;

	version_init(&v);
	v.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_VERSION, &v));
	EXPECT_EQ(0, v.abi_version);

	version_init(&v);
	v.reserved = 0x80000000u;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_VERSION, &v));
}

TEST_F(dev, version_unknown_flags_are_einval)
{
	struct sluice_version v;

	for (int bit = 0; bit < 32; bit++) {
		version_init(&v);
		v.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_VERSION, &v))
			TH_LOG("flag bit %d", bit);
	}
}

/* A caller built against a newer, larger struct. */
struct version_big {
	struct sluice_version v;
	__u8 tail[16];
	__u8 canary[16];
};

TEST_F(dev, version_larger_struct_zero_tail)
{
	struct version_big b;

	memset(&b, 0, sizeof(b));
	memset(b.canary, 0xa5, sizeof(b.canary));
	b.v.size = sizeof(b.v) + sizeof(b.tail);
	ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_VERSION, &b));
	/* The module reports how much it filled in: its own struct. */
	EXPECT_EQ(sizeof(b.v), b.v.size);
	EXPECT_EQ(SLUICE_ABI_VERSION, b.v.abi_version);
	for (size_t i = 0; i < sizeof(b.tail); i++)
		EXPECT_EQ(0, b.tail[i]);
	for (size_t i = 0; i < sizeof(b.canary); i++)
		EXPECT_EQ(0xa5, b.canary[i]);
}

TEST_F(dev, version_nonzero_tail_is_e2big)
{
	struct version_big b;
	const size_t pos[] = { 0, 7, sizeof(b.tail) - 1 };

	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		memset(&b, 0, sizeof(b));
		b.v.size = sizeof(b.v) + sizeof(b.tail);
		b.tail[pos[i]] = 1;
		EXPECT_EQ(-E2BIG, xioctl(self->fd, SLUICE_IOC_VERSION, &b))
			TH_LOG("non-zero tail byte %zu", pos[i]);
		EXPECT_EQ(0, b.v.abi_version);
	}
}

TEST_F(dev, version_huge_size_is_e2big)
{
	size_t len = 1 << 20;
	struct sluice_version *v;

	/* A megabyte of zeros: still refused, not scanned. */
	v = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, v);
	v->size = len;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, SLUICE_IOC_VERSION, v));
	v->size = UINT32_MAX;
	EXPECT_EQ(-E2BIG, xioctl(self->fd, SLUICE_IOC_VERSION, v));
	munmap(v, len);
}

TEST_F(dev, version_bad_pointer_is_efault)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p;

	EXPECT_EQ(-EFAULT, xioctl(self->fd, SLUICE_IOC_VERSION, NULL));

	/* A struct that runs off the end of a mapping into an unmapped page. */
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, munmap(p + page, page));
	((struct sluice_version *)(p + page - 16))->size = sizeof(struct sluice_version);
	EXPECT_EQ(-EFAULT, xioctl(self->fd, SLUICE_IOC_VERSION, p + page - 16));

	/* A read-only struct: the input is fine, writing the result faults. */
	version_init((struct sluice_version *)p);
	ASSERT_EQ(0, mprotect(p, page, PROT_READ));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, SLUICE_IOC_VERSION, p));
	munmap(p, page);
}

TEST_F(dev, unknown_commands_are_enotty)
{
	struct sluice_version v;
	const unsigned long cmds[] = {
		_IOWR(SLUICE_IOC_MAGIC, 0x7f, struct sluice_version),	/* unused nr */
		_IOWR(SLUICE_IOC_MAGIC, 0xff, struct sluice_version),
		_IOWR(0x42, 0x00, struct sluice_version),		/* other magic */
		_IOR(SLUICE_IOC_MAGIC, 0x00, struct sluice_version),	/* wrong dir */
		_IOW(SLUICE_IOC_MAGIC, 0x00, struct sluice_version),
		_IO(SLUICE_IOC_MAGIC, 0x00),
		_IOWR(SLUICE_IOC_MAGIC, 0x00, __u64),			/* wrong size */
		FIONREAD,
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		version_init(&v);
		EXPECT_EQ(-ENOTTY, xioctl(self->fd, cmds[i], &v))
			TH_LOG("cmd %#lx", cmds[i]);
		EXPECT_EQ(0, v.abi_version);
	}
}

TEST_F(dev, debugfs_counts_ioctls)
{
	long long calls = info_field("ioctl_version", "calls");
	long long errors = info_field("ioctl_version", "errors");
	long long unknown = info_value("ioctl_unknown");
	struct sluice_version v;

	ASSERT_LE(0, calls);
	ASSERT_LE(0, errors);
	ASSERT_LE(0, unknown);

	for (int i = 0; i < 3; i++) {
		version_init(&v);
		ASSERT_EQ(0, xioctl(self->fd, SLUICE_IOC_VERSION, &v));
	}
	version_init(&v);
	v.reserved = 1;
	ASSERT_EQ(-EINVAL, xioctl(self->fd, SLUICE_IOC_VERSION, &v));
	ASSERT_EQ(-ENOTTY, xioctl(self->fd, _IO(SLUICE_IOC_MAGIC, 0x55), NULL));

	EXPECT_EQ(calls + 4, info_field("ioctl_version", "calls"));
	EXPECT_EQ(errors + 1, info_field("ioctl_version", "errors"));
	EXPECT_EQ(unknown + 1, info_value("ioctl_unknown"));
}

TEST_F(dev, debugfs_counts_open_files)
{
	int fd2;

	EXPECT_EQ(1, info_value("open_files"));
	fd2 = open(SLUICE_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(2, info_value("open_files"));
	close(fd2);
	EXPECT_EQ(1, info_value("open_files"));
}

TEST_F(dev, sysfs_and_debugfs_are_read_only)
{
	struct stat st;

	ASSERT_EQ(0, stat(SYSFS_DEV "/abi_version", &st));
	EXPECT_EQ(0444, st.st_mode & 0777);
	ASSERT_EQ(0, stat(SYSFS_DEV "/features", &st));
	EXPECT_EQ(0444, st.st_mode & 0777);
	ASSERT_EQ(0, stat(DEBUGFS_DIR "/info", &st));
	EXPECT_EQ(0444, st.st_mode & 0777);
	/* Even root cannot write an attribute that has no store method. */
	EXPECT_EQ(-1, open(SYSFS_DEV "/abi_version", O_WRONLY));
	EXPECT_EQ(EACCES, errno);
}

TEST_F(dev, read_and_write_are_refused)
{
	char c = 0;

	/* The device is ioctl-only; read(2)/write(2) say so. */
	EXPECT_EQ(-1, read(self->fd, &c, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(self->fd, &c, 1));
	EXPECT_EQ(EINVAL, errno);
}

TEST(unload_refused_while_open)
{
	int fd;

	ASSERT_EQ(0, ensure_loaded());
	fd = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EWOULDBLOCK, unload_module());
	EXPECT_TRUE(module_loaded());
	close(fd);
}

TEST(unload_leaves_nothing_behind)
{
	char buf[8192];

	ASSERT_EQ(0, ensure_loaded());
	ASSERT_EQ(0, unload_module());
	EXPECT_EQ(-1, access(SLUICE_DEVICE_PATH, F_OK));
	EXPECT_EQ(-1, access(SYSFS_DEV, F_OK));
	EXPECT_EQ(-1, access(SYSFS_MOD, F_OK));
	EXPECT_EQ(-1, access(DEBUGFS_DIR, F_OK));
	ASSERT_LE(0, read_file("/proc/modules", buf, sizeof(buf)));
	EXPECT_EQ(NULL, strstr(buf, "sluice "));
	EXPECT_EQ(-ENOENT, unload_module());

	/* And it comes back as new. */
	ASSERT_EQ(0, load_module());
	EXPECT_EQ(0, info_field("ioctl_version", "calls"));
	ASSERT_EQ(0, unload_module());
}

TEST_HARNESS_MAIN
