// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/kernel/debug/sluice: dumps for people and for the sluice tool:
 * "info" (the module) and "stacks/NAME" (each listed stack, named as in
 * sysfs).  Failures to create debugfs entries are not errors (debugfs is
 * optional).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/netdevice.h>
#include <linux/pid.h>
#include <linux/seq_file.h>
#include <linux/uidgid.h>
#include <net/net_namespace.h>

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
		if (sluice_cmd_name(nr))	/* numbers not (yet) in use */
			seq_printf(m, "ioctl_%s calls %lld errors %lld\n",
				   sluice_cmd_name(nr),
				   (long long)atomic64_read(&sluice_stats.cmd[nr].calls),
				   (long long)atomic64_read(&sluice_stats.cmd[nr].errors));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(info);

/*
 * The debugfs dump of one stack.  The header is shown as found: any
 * process that maps the region may have written anything there.
 */
static void sluice_stack_show(struct seq_file *m, struct sluice_stack *st)
{
	const struct sluice_region *r = st->region;
	char ifname[IFNAMSIZ], rname[SLUICE_NAME_MAX + 1];
	struct sluice_proc *p;
	size_t i;

	sluice_stack_ifname(st, ifname, sizeof(ifname));
	/* One line whatever is there: stop at NUL, hide the unprintable. */
	for (i = 0; i < SLUICE_NAME_MAX; i++) {
		char c = READ_ONCE(r->name[i]);

		if (!c)
			break;
		rname[i] = c >= ' ' && c <= '~' ? c : '?';
	}
	rname[i] = '\0';
	seq_printf(m, "name %s\n", st->name);
	seq_printf(m, "netns %u\n", st->net->ns.inum);
	seq_printf(m, "ifindex %u\n", st->ifindex);
	seq_printf(m, "ifname %s\n", ifname);
	seq_printf(m, "owner_uid %u\n",
		   from_kuid_munged(&init_user_ns, st->creator));
	seq_printf(m, "region_size %zu\n", st->region_size);
	seq_printf(m, "refs %u\n", kref_read(&st->ref));
	seq_printf(m, "maps %d\n", atomic_read(&st->maps));
	seq_printf(m, "wake_seq %u\n", (u32)atomic_read(&st->wake_seq));
	seq_printf(m, "wakes %lld\n", (long long)atomic64_read(&st->wakes));

	seq_printf(m, "attached %u\n", sluice_stack_attached(st));
	mutex_lock(&st->lock);
	list_for_each_entry(p, &st->procs, node)
		seq_printf(m, "pid %d files %u%s\n", pid_nr(p->pid), p->files,
			   sluice_proc_alive(p) ? "" : " exited");
	mutex_unlock(&st->lock);

	seq_puts(m, "header (as user space left it)\n");
	seq_printf(m, "  magic 0x%08x\n", READ_ONCE(r->magic));
	seq_printf(m, "  abi_version %u\n", READ_ONCE(r->abi_version));
	seq_printf(m, "  region_size %llu\n",
		   (unsigned long long)READ_ONCE(r->region_size));
	seq_printf(m, "  name %s\n", rname);
	seq_printf(m, "  state %u\n", READ_ONCE(r->state));
	seq_printf(m, "  creator_uid %u\n", READ_ONCE(r->creator_uid));
	seq_printf(m, "  max_sockets %u sock_size %u hash_buckets %u\n",
		   READ_ONCE(r->max_sockets), READ_ONCE(r->sock_size),
		   READ_ONCE(r->hash_buckets));
	seq_printf(m, "  n_bufs %u buf_size %u mtu %u\n", READ_ONCE(r->n_bufs),
		   READ_ONCE(r->buf_size), READ_ONCE(r->mtu));
	seq_printf(m, "  sock_off %llu hash_off %llu wheel_off %llu\n",
		   (unsigned long long)READ_ONCE(r->sock_off),
		   (unsigned long long)READ_ONCE(r->hash_off),
		   (unsigned long long)READ_ONCE(r->wheel_off));
	seq_printf(m, "  bufmeta_off %llu bufdata_off %llu\n",
		   (unsigned long long)READ_ONCE(r->bufmeta_off),
		   (unsigned long long)READ_ONCE(r->bufdata_off));
	seq_printf(m, "  lock 0x%x lock_owner %d wake_seq %u attach_count %u\n",
		   READ_ONCE(r->lock), READ_ONCE(r->lock_owner),
		   READ_ONCE(r->wake_seq), READ_ONCE(r->attach_count));
	sluice_filter_show(m, st);
	sluice_kring_show(m, st);
	sluice_neigh_show(m, st);
	sluice_mcast_show(m, st);
	sluice_sockfd_show(m, st);
}

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
	sluice_filter_debugfs_init(sluice_debugfs_root);
	sluice_ipoib_debugfs_init(sluice_debugfs_root);
}

void sluice_debugfs_exit(void)
{
	debugfs_remove_recursive(sluice_debugfs_root);
	sluice_debugfs_root = NULL;
	sluice_debugfs_stacks = NULL;
}
