/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the module's kselftests: loading and unloading
 * sluice.ko ($SLUICE_KO, default /lib/modules/sluice.ko) and reading small
 * sysfs and debugfs files.
 */
#ifndef SLUICE_KSELFTEST_UTIL_H
#define SLUICE_KSELFTEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYSFS_MOD	"/sys/module/sluice"

static const char *ko_path(void)
{
	const char *p = getenv("SLUICE_KO");

	return p ? p : "/lib/modules/sluice.ko";
}

static bool module_loaded(void)
{
	return access(SYSFS_MOD, F_OK) == 0;
}

static int load_module(void)
{
	int fd = open(ko_path(), O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0))
		ret = -errno;
	close(fd);
	return ret;
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

#endif /* SLUICE_KSELFTEST_UTIL_H */
