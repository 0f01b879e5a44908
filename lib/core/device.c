// SPDX-License-Identifier: BSD-2-Clause
/*
 * Talking to /dev/sluice: opening the device and the version handshake.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "os/os.h"

int sluice_dev_open(const char *path)
{
	int fd = sl_sys_openat(AT_FDCWD, path ? path : SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

int sluice_module_query(const char *path, struct sluice_module_info *info)
{
	struct sluice_version v;
	int fd, ret = 0;

	fd = sluice_dev_open(path);
	if (fd < 0)
		return fd;
	memset(&v, 0, sizeof(v));
	v.size = sizeof(v);
	if (sl_sys_ioctl(fd, SLUICE_IOC_VERSION, &v) < 0)
		ret = -errno;
	sl_sys_close(fd);
	if (ret)
		return ret;

	info->abi_version = v.abi_version;
	info->features = v.features;
	/* The module NUL-terminates; do not rely on it. */
	memcpy(info->module_version, v.module_version, sizeof(info->module_version));
	info->module_version[sizeof(info->module_version) - 1] = '\0';
	return v.abi_version == SLUICE_ABI_VERSION ? 0 : -EPROTONOSUPPORT;
}
