// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kernel ABI is frozen once published: these checks fail when a field
 * moves, a struct changes size, or an ioctl number changes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>

#include <uapi/sluice.h>

#include "tap.h"

int main(void)
{
	/* 2: the region header holds only what the module reads or writes;
	 * the library's own header follows at SLUICE_REGION_LIB_OFF.  3: the
	 * module lists the slots it released (ksock_rel_head, rel_next). */
	tap_eq(SLUICE_ABI_VERSION, 3, "ABI version is 3");
	tap_eq(offsetof(struct sluice_region, state), 48, "region state offset");
	tap_eq(offsetof(struct sluice_region, bufdata_off), 112, "region bufdata_off offset");
	tap_eq(offsetof(struct sluice_region, lock), 128, "region lock offset (its own line)");
	tap_eq(offsetof(struct sluice_region, wake_seq), 136, "region wake_seq offset");
	tap_eq(offsetof(struct sluice_region, sleepers), 140, "region sleepers offset");
	tap_eq(offsetof(struct sluice_region, ksock_released), 144, "region ksock_released offset");
	tap_eq(offsetof(struct sluice_region, sock_used), 152, "region sock_used offset");
	tap_eq(offsetof(struct sluice_region, ksock_rel_head), 192,
	       "region ksock_rel_head offset (a line of its own)");
	tap_eq(sizeof(struct sluice_region), 256, "sizeof(struct sluice_region)");
	tap_eq(SLUICE_REGION_LIB_OFF, 256, "the library's header starts at 256");
	tap_eq(sizeof(struct sluice_version), 56, "sizeof(struct sluice_version)");
	tap_eq(offsetof(struct sluice_version, size), 0, "size is the first field");
	tap_eq(offsetof(struct sluice_version, flags), 4, "flags offset");
	tap_eq(offsetof(struct sluice_version, abi_version), 8, "abi_version offset");
	tap_eq(offsetof(struct sluice_version, reserved), 12, "reserved offset");
	tap_eq(offsetof(struct sluice_version, features), 16, "features offset");
	tap_eq(offsetof(struct sluice_version, module_version), 24, "module_version offset");
	/* dir RW (3) << 30 | size 56 << 16 | magic 0xB5 << 8 | nr 0 */
	tap_eq(SLUICE_IOC_VERSION, 0xC038B500u, "SLUICE_IOC_VERSION value");
	tap_eq(_IOC_SIZE(SLUICE_IOC_VERSION), sizeof(struct sluice_version),
	       "SLUICE_IOC_VERSION encodes the struct size");
	tap_ok(!strcmp(SLUICE_DEVICE_PATH, "/dev/" SLUICE_DEVICE_NAME), "device path");
	return tap_done();
}
