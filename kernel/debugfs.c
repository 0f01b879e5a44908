// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/kernel/debug/sluice: dumps for people and for the sluice tool.
 * Failures to create debugfs entries are not errors (debugfs is optional).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "sluice.h"

static struct dentry *sluice_debugfs_root;

static int info_show(struct seq_file *m, void *unused)
{
	unsigned int nr;

	seq_printf(m, "module_version %s\n", SLUICE_MODULE_VERSION);
	seq_printf(m, "abi_version %u\n", SLUICE_ABI_VERSION);
	seq_printf(m, "features 0x%llx\n",
		   (unsigned long long)SLUICE_FEATURES_ALL);
	seq_printf(m, "open_files %d\n",
		   atomic_read(&sluice_stats.open_files));
	seq_printf(m, "ioctl_unknown %lld\n",
		   (long long)atomic64_read(&sluice_stats.unknown_cmds));
	for (nr = 0; nr < SLUICE_NR_COUNT; nr++)
		seq_printf(m, "ioctl_%s calls %lld errors %lld\n",
			   sluice_cmd_name(nr),
			   (long long)atomic64_read(&sluice_stats.cmd[nr].calls),
			   (long long)atomic64_read(&sluice_stats.cmd[nr].errors));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(info);

void sluice_debugfs_init(void)
{
	sluice_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("info", 0444, sluice_debugfs_root, NULL,
			    &info_fops);
}

void sluice_debugfs_exit(void)
{
	debugfs_remove_recursive(sluice_debugfs_root);
	sluice_debugfs_root = NULL;
}
