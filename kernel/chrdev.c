// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/sluice: the misc character device, its ioctl dispatch and the
 * read-only sysfs attributes of /sys/class/misc/sluice.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/string.h>

#include "sluice.h"

struct sluice_stats sluice_stats;

static int sluice_ioc_version(struct file *file, void __user *uarg)
{
	struct sluice_version v;
	int ret;

	ret = sluice_arg_in(&v, sizeof(v), offsetofend(struct sluice_version,
						       module_version), uarg);
	if (ret)
		return ret;
	if (v.flags || v.reserved)
		return -EINVAL;

	v.abi_version = SLUICE_ABI_VERSION;
	v.features = SLUICE_FEATURES_ALL;
	strscpy_pad(v.module_version, SLUICE_MODULE_VERSION,
		    sizeof(v.module_version));
	return sluice_arg_out(uarg, &v, sizeof(v));
}

struct sluice_ioctl {
	unsigned int cmd;
	enum sluice_ioctl_on on;
	const char *name;
	int (*fn)(struct file *file, void __user *uarg);
};

static const struct sluice_ioctl sluice_ioctls[SLUICE_NR_COUNT] = {
	[SLUICE_NR_VERSION] = { SLUICE_IOC_VERSION, SLUICE_ON_DEV, "version",
				sluice_ioc_version },
	[SLUICE_NR_STACK_CREATE] = { SLUICE_IOC_STACK_CREATE, SLUICE_ON_DEV,
				     "stack_create", sluice_ioc_stack_create },
	[SLUICE_NR_STACK_ATTACH] = { SLUICE_IOC_STACK_ATTACH, SLUICE_ON_DEV,
				     "stack_attach", sluice_ioc_stack_attach },
	[SLUICE_NR_STACK_WAKE] = { SLUICE_IOC_STACK_WAKE, SLUICE_ON_STACK,
				   "stack_wake", sluice_ioc_stack_wake },
	[SLUICE_NR_KRING_SETUP] = { SLUICE_IOC_KRING_SETUP, SLUICE_ON_STACK,
				    "kring_setup", sluice_ioc_kring_setup },
	[SLUICE_NR_KRING_KICK] = { SLUICE_IOC_KRING_KICK, SLUICE_ON_STACK,
				   "kring_kick", sluice_ioc_kring_kick },
	[SLUICE_NR_FILTER_ADD] = { SLUICE_IOC_FILTER_ADD, SLUICE_ON_STACK,
				   "filter_add", sluice_ioc_filter_add },
	[SLUICE_NR_FILTER_DEL] = { SLUICE_IOC_FILTER_DEL, SLUICE_ON_STACK,
				   "filter_del", sluice_ioc_filter_del },
	[SLUICE_NR_IFINFO] = { SLUICE_IOC_IFINFO, SLUICE_ON_DEV, "ifinfo",
			       sluice_ioc_ifinfo },
	[SLUICE_NR_NEIGH_RESOLVE] = { SLUICE_IOC_NEIGH_RESOLVE, SLUICE_ON_STACK,
				      "neigh_resolve", sluice_ioc_neigh_resolve },
	[SLUICE_NR_MCAST_JOIN] = { SLUICE_IOC_MCAST_JOIN, SLUICE_ON_STACK,
				   "mcast_join", sluice_ioc_mcast_join },
	[SLUICE_NR_MCAST_LEAVE] = { SLUICE_IOC_MCAST_LEAVE, SLUICE_ON_STACK,
				    "mcast_leave", sluice_ioc_mcast_leave },
	[SLUICE_NR_SOCK_FD] = { SLUICE_IOC_SOCK_FD, SLUICE_ON_STACK, "sock_fd",
				sluice_ioc_sock_fd },
	[SLUICE_NR_SOCK_WAKE] = { SLUICE_IOC_SOCK_WAKE, SLUICE_ON_STACK,
				  "sock_wake", sluice_ioc_sock_wake },
	[SLUICE_NR_SOCK_INFO] = { SLUICE_IOC_SOCK_INFO, SLUICE_ON_SOCK,
				  "sock_info", sluice_ioc_sock_info },
	[SLUICE_NR_HANDOFF] = { SLUICE_IOC_HANDOFF, SLUICE_ON_STACK,
				"handoff", sluice_ioc_handoff },
	[SLUICE_NR_FILTER_FD] = { SLUICE_IOC_FILTER_FD, SLUICE_ON_STACK,
				  "filter_fd", sluice_ioc_filter_fd },
	[SLUICE_NR_SOCK_KEEP] = { SLUICE_IOC_SOCK_KEEP, SLUICE_ON_SOCK,
				  "sock_keep", sluice_ioc_sock_keep },
	[SLUICE_NR_SOCK_PARK] = { SLUICE_IOC_SOCK_PARK, SLUICE_ON_STACK,
				  "sock_park", sluice_ioc_sock_park },
	[SLUICE_NR_SOCK_REUSE] = { SLUICE_IOC_SOCK_REUSE, SLUICE_ON_STACK,
				   "sock_reuse", sluice_ioc_sock_reuse },
};

const char *sluice_cmd_name(unsigned int nr)
{
	return nr < SLUICE_NR_COUNT ? sluice_ioctls[nr].name : NULL;
}

/**
 * sluice_ioctl_dispatch - run one ioctl, counting it for debugfs
 * @file:	the file it was issued on
 * @cmd:	the command
 * @arg:	its argument, a user pointer
 * @on:		the kind of file @file is
 *
 * Return: the command's result; -ENOTTY for a command that is unknown or
 * belongs to the other kind of file.
 */
long sluice_ioctl_dispatch(struct file *file, unsigned int cmd,
			   unsigned long arg, enum sluice_ioctl_on on)
{
	unsigned int nr = _IOC_NR(cmd);
	const struct sluice_ioctl *op;
	int ret;

	/*
	 * The whole command must match, not just its number: a caller built
	 * against a different struct or direction gets -ENOTTY.
	 */
	if (_IOC_TYPE(cmd) != SLUICE_IOC_MAGIC || nr >= SLUICE_NR_COUNT ||
	    sluice_ioctls[nr].cmd != cmd || sluice_ioctls[nr].on != on) {
		atomic64_inc(&sluice_stats.unknown_cmds);
		return -ENOTTY;
	}
	op = &sluice_ioctls[nr];
	atomic64_inc(&sluice_stats.cmd[nr].calls);
	ret = op->fn(file, (void __user *)arg);
	if (ret < 0)	/* SOCK_FD returns an fd */
		atomic64_inc(&sluice_stats.cmd[nr].errors);
	return ret;
}

static long sluice_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	return sluice_ioctl_dispatch(file, cmd, arg, SLUICE_ON_DEV);
}

static int sluice_open(struct inode *inode, struct file *file)
{
	atomic_inc(&sluice_stats.open_files);
	return 0;
}

static int sluice_release(struct inode *inode, struct file *file)
{
	atomic_dec(&sluice_stats.open_files);
	return 0;
}

static const struct file_operations sluice_fops = {
	.owner		= THIS_MODULE,
	.open		= sluice_open,
	.release	= sluice_release,
	.unlocked_ioctl	= sluice_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", SLUICE_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static ssize_t features_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "0x%llx\n",
			  (unsigned long long)SLUICE_FEATURES_ALL);
}
static DEVICE_ATTR_RO(features);

static struct attribute *sluice_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_features.attr,
	NULL,
};
ATTRIBUTE_GROUPS(sluice);

/*
 * Anyone may open the device: access control is per object (a stack's
 * owner uid or CAP_NET_ADMIN, and port reservation with the caller's
 * credentials), as for sockets.
 */
static struct miscdevice sluice_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= SLUICE_DEVICE_NAME,
	.fops	= &sluice_fops,
	.groups	= sluice_groups,
	.mode	= 0666,
};

/* /sys/class/misc/sluice, the parent of the stacks' sysfs entries. */
struct kobject *sluice_chrdev_kobj(void)
{
	return &sluice_misc.this_device->kobj;
}

int sluice_chrdev_init(void)
{
	return misc_register(&sluice_misc);
}

void sluice_chrdev_exit(void)
{
	misc_deregister(&sluice_misc);
}
