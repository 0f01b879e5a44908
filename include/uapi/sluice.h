/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * Sluice kernel ABI: the ioctls of /dev/sluice and their argument structs.
 *
 * Rules every command follows (see Documentation/driver-api/ioctl.rst):
 *  - one _IOWR struct per command; its first field is @size, the number of
 *    bytes of the struct the caller knows about;
 *  - @size below the command's first published size is -EINVAL; above the
 *    size this module knows, the extra bytes must be zero (-E2BIG otherwise),
 *    so old binaries run on new modules and new binaries on old ones;
 *  - reserved fields and unknown flag bits must be zero (-EINVAL);
 *  - pointers travel as __u64, there is no long, bool or enum;
 *  - an unknown command is -ENOTTY.
 * On output the module writes min(@size, its own size) bytes and never
 * copies uninitialised bytes out.
 */
#ifndef _UAPI_SLUICE_H
#define _UAPI_SLUICE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SLUICE_DEVICE_NAME	"sluice"
#define SLUICE_DEVICE_PATH	"/dev/sluice"

/* Bumped on an incompatible change; compatible growth uses @size. */
#define SLUICE_ABI_VERSION	1

#define SLUICE_IOC_MAGIC	0xB5

#define SLUICE_VERSION_STRLEN	32

/*
 * Feature bits reported by SLUICE_IOC_VERSION.  A bit is only defined once
 * the module implements what it names; none are yet.
 */
#define SLUICE_FEATURES_ALL	0ULL

/**
 * struct sluice_version - SLUICE_IOC_VERSION argument
 * @size:	in: sizeof(struct sluice_version) as the caller knows it
 * @flags:	in: must be zero
 * @abi_version:	out: SLUICE_ABI_VERSION of the module
 * @reserved:	must be zero on input, zero on output
 * @features:	out: SLUICE_FEATURE_* bits the module implements
 * @module_version:	out: the module's version, NUL-terminated
 */
struct sluice_version {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 reserved;
	__u64 features;
	char module_version[SLUICE_VERSION_STRLEN];
};

#define SLUICE_IOC_VERSION	_IOWR(SLUICE_IOC_MAGIC, 0x00, struct sluice_version)

#endif /* _UAPI_SLUICE_H */
