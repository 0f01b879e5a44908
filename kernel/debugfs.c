// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/kernel/debug/sluice: dumps for people and for the sluice tool:
 * "info" (the module) and "stacks/NAME" (each listed stack, named as in
 * sysfs).  Failures to create debugfs entries are not errors (debugfs is
 * optional).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "sluice.h"

static struct dentry *sluice_debugfs_root;
static struct dentry *sluice_debugfs_stacks;

static int info_show(struct seq_file *m, void *unused)
{
	unsigned int nr;

	seq_printf(m, "module_version %s\n", SLUICE_MODULE_VERSION);
	seq_printf(m, "abi_version %u\n", SLUICE_ABI_VERSION);
	seq_printf(m, "features 0x%llx\n",
		   (unsigned long long)SLUICE_FEATURES_ALL);
	seq_printf(m, "open_files %d\n",
		   atomic_read(&sluice_stats.open_files));
	seq_printf(m, "stacks %d\n", atomic_read(&sluice_stats.stacks));
	seq_printf(m, "regions %d\n", atomic_read(&sluice_stats.regions));
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

static int stack_show(struct seq_file *m, void *unused)
{
	sluice_stack_show(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(stack);

/*
 * Under sluice_stacks_lock.  The file's private data is the stack without
 * a reference of its own: debugfs_remove() in sluice_debugfs_stack_del()
 * waits for every reader, and runs before the stack can go.
 */
void sluice_debugfs_stack_add(struct sluice_stack *st)
{
	st->debugfs = debugfs_create_file(st->dirname, 0444,
					  sluice_debugfs_stacks, st,
					  &stack_fops);
}

void sluice_debugfs_stack_del(struct sluice_stack *st)
{
	debugfs_remove(st->debugfs);
	st->debugfs = NULL;
}

void sluice_debugfs_init(void)
{
	sluice_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("info", 0444, sluice_debugfs_root, NULL,
			    &info_fops);
	sluice_debugfs_stacks = debugfs_create_dir("stacks",
						   sluice_debugfs_root);
}

void sluice_debugfs_exit(void)
{
	debugfs_remove_recursive(sluice_debugfs_root);
	sluice_debugfs_root = NULL;
	sluice_debugfs_stacks = NULL;
}
