/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the module's kselftests: loading and unloading
 * sluice.ko ($SLUICE_KO, default /lib/modules/sluice.ko), reading and
 * writing small sysfs and debugfs files, ioctls returning -errno, and the
 * region layout of a SLUICE_IOC_STACK_CREATE argument.
 *
 * Include after <uapi/sluice.h>.
 */
#ifndef SLUICE_KSELFTEST_UTIL_H
#define SLUICE_KSELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYSFS_MOD	"/sys/module/sluice"
#define DEBUGFS_DIR	"/sys/kernel/debug/sluice"
#define PAGE		4096ull
#define ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((__u64)(a) - 1))

static const char *ko_path(void)
{
	const char *p = getenv("SLUICE_KO");

	return p ? p : "/lib/modules/sluice.ko";
}

static bool module_loaded(void)
{
	return access(SYSFS_MOD, F_OK) == 0;
}

/* Load the module file at path: 0 or -errno (finit_module). */
static int load_ko(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0))
		ret = -errno;
	close(fd);
	return ret;
}

static int load_module(void)
{
	return load_ko(ko_path());
}

static int unload_module(void)
{
	return syscall(SYS_delete_module, "sluice", O_NONBLOCK) ? -errno : 0;
}

static int ensure_loaded(void)
{
	return module_loaded() ? 0 : load_module();
}

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * On the "KEY ..." line of the debugfs info dump: the number after
 * "FIELD ", or with @field NULL the number after "KEY "; -1 if absent.
 */
static inline long long info_field(const char *key, const char *field)
{
	char buf[8192], *line, *save = NULL, *p;
	size_t klen = strlen(key);

	if (read_file(DEBUGFS_DIR "/info", buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		if (!field)
			return strtoll(line + klen + 1, NULL, 0);
		p = strstr(line, field);
		return p ? strtoll(p + strlen(field) + 1, NULL, 0) : -1;
	}
	return -1;
}

static inline long long info_value(const char *key)
{
	return info_field(key, NULL);
}

/* ioctl returning 0 or -errno, so ASSERT_EQ shows the errno. */
static inline int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* @name into a name field: NUL-padded, not NUL-terminated when too long. */
static inline void set_name(char dst[SLUICE_NAME_MAX], const char *name)
{
	size_t n = strlen(name);

	memset(dst, 0, SLUICE_NAME_MAX);
	memcpy(dst, name, n < SLUICE_NAME_MAX ? n : SLUICE_NAME_MAX);
}

/*
 * A STACK_CREATE argument with a layout computed the way user space does
 * it (every area 64-byte aligned after the header, buffer data and the
 * region's end page aligned), independently of the library; mtu is
 * min(buf_size, 1500), fd -1.
 */
static inline void stack_layout(struct sluice_stack_create *c,
				const char *name, __u32 ifindex,
				__u32 max_sockets, __u32 sock_size,
				__u32 hash_buckets, __u32 n_bufs,
				__u32 buf_size)
{
	__u64 off;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	set_name(c->name, name);
	c->ifindex = ifindex;
	c->max_sockets = max_sockets;
	c->sock_size = sock_size;
	c->hash_buckets = hash_buckets;
	c->n_bufs = n_bufs;
	c->buf_size = buf_size;
	c->mtu = buf_size < 1500 ? buf_size : 1500;
	c->fd = -1;

	off = ALIGN_UP(sizeof(struct sluice_region), 64);
	c->sock_off = off;
	off += (__u64)max_sockets * sock_size;
	c->hash_off = ALIGN_UP(off, 64);
	off = c->hash_off + 2ull * hash_buckets * 4;
	c->wheel_off = ALIGN_UP(off, 64);
	off = c->wheel_off + SLUICE_WHEEL_SLOTS * 4;
	c->bufmeta_off = ALIGN_UP(off, 64);
	off = c->bufmeta_off + (__u64)n_bufs * sizeof(struct sluice_buf);
	c->bufdata_off = ALIGN_UP(off, PAGE);
	off = c->bufdata_off + (__u64)n_bufs * buf_size;
	c->region_size = ALIGN_UP(off, PAGE);
}

#endif /* SLUICE_KSELFTEST_UTIL_H */
