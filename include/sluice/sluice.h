/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sluice native API.  Every function that acts returns 0 (or a
 * non-negative value where documented) on success and -errno on failure;
 * none of them sets errno.
 */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include <stdint.h>

#include <uapi/sluice.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLUICE_LIB_VERSION "0.1.0"

/* What the loaded kernel module says about itself. */
struct sluice_module_info {
	unsigned int abi_version;
	uint64_t features;
	char module_version[SLUICE_VERSION_STRLEN];
};

/*
 * Open the Sluice device, close-on-exec.  @path NULL means
 * SLUICE_DEVICE_PATH.  Returns the fd, or -ENOENT when the module is not
 * loaded (no device node), or another -errno from open(2).
 */
int sluice_dev_open(const char *path);

/*
 * Ask the module at @path (NULL: SLUICE_DEVICE_PATH) for its version and
 * features.  Returns 0; -ENOENT when the module is not loaded; -ENOTTY when
 * @path is not a Sluice device; -EPROTONOSUPPORT when the module speaks
 * another ABI than this library (the info is still filled in).
 */
int sluice_module_query(const char *path, struct sluice_module_info *info);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_SLUICE_H */
