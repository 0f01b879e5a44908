// SPDX-License-Identifier: GPL-2.0-only
/*
 * sluice.ko: module init and exit.  Init is a ladder whose labels name what
 * they undo; exit is its exact reverse.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "sluice.h"

static int __init sluice_init(void)
{
	int ret;

	/* debugfs first so the device never exists without its dumps. */
	sluice_debugfs_init();

	ret = sluice_chrdev_init();
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", SLUICE_DEVICE_NAME, ret);
		goto err_debugfs;
	}

	pr_info("version %s, ABI %u\n", SLUICE_MODULE_VERSION,
		SLUICE_ABI_VERSION);
	return 0;

err_debugfs:
	sluice_debugfs_exit();
	return ret;
}

static void __exit sluice_exit(void)
{
	sluice_chrdev_exit();
	sluice_debugfs_exit();
}

module_init(sluice_init);
module_exit(sluice_exit);

MODULE_DESCRIPTION("Sluice: kernel side of a shared-memory user-space TCP/IP stack");
MODULE_LICENSE("GPL");
MODULE_VERSION(SLUICE_MODULE_VERSION);
