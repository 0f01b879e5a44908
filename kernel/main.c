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

	/* Filters before the device: its ioctls add them. */
	ret = sluice_filter_init();
	if (ret) {
		pr_err("cannot make the filter table: %d\n", ret);
		return ret;
	}

	/* debugfs first so the device never exists without its dumps. */
	sluice_debugfs_init();

	/* Before the device: no rings can exist without the notifier. */
	ret = sluice_kring_init();
	if (ret) {
		pr_err("cannot register the netdev notifier: %d\n", ret);
		goto err_debugfs;
	}

	/* Before the device: IFINFO and NEIGH_RESOLVE look ib devices up. */
	ret = sluice_ipoib_init();
	if (ret) {
		pr_err("cannot register the ib client: %d\n", ret);
		goto err_kring;
	}

	ret = sluice_chrdev_init();
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", SLUICE_DEVICE_NAME, ret);
		goto err_ipoib;
	}

	/*
	 * The stacks' sysfs directory hangs off the device's, so it can only
	 * come after it; until it exists STACK_CREATE fails with -EAGAIN.
	 */
	ret = sluice_sysfs_init(sluice_chrdev_kobj());
	if (ret) {
		pr_err("cannot create the stacks sysfs directory: %d\n", ret);
		goto err_chrdev;
	}

	pr_info("version %s, ABI %u\n", SLUICE_MODULE_VERSION,
		SLUICE_ABI_VERSION);
	return 0;

err_chrdev:
	sluice_chrdev_exit();
err_ipoib:
	sluice_ipoib_exit();
err_kring:
	sluice_kring_exit();
err_debugfs:
	sluice_debugfs_exit();
	sluice_filter_exit();
	return ret;
}

/*
 * No stack can exist here: each holds a reference on the module, and so
 * does each file and mapping of one.
 */
static void __exit sluice_exit(void)
{
	sluice_sysfs_exit();
	sluice_chrdev_exit();
	sluice_ipoib_exit();
	sluice_kring_exit();
	sluice_debugfs_exit();
	sluice_filter_exit();
}

module_init(sluice_init);
module_exit(sluice_exit);

MODULE_DESCRIPTION("Sluice: kernel side of a shared-memory user-space TCP/IP stack");
MODULE_LICENSE("GPL");
MODULE_VERSION(SLUICE_MODULE_VERSION);
