// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/class/misc/sluice/stacks/NAME/: one read-only value a file for each
 * listed stack (NAME@NETNS-INODE for stacks outside the initial network
 * namespace, whose names may repeat those of other namespaces).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/netdevice.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <net/net_namespace.h>

#include "sluice.h"

static struct kobject *sluice_stacks_kobj;

/* Holds a reference on its stack until sysfs is done with it. */
struct sluice_stack_kobj {
	struct kobject kobj;
	struct sluice_stack *st;
};

static struct sluice_stack *to_stack(struct kobject *kobj)
{
	return container_of(kobj, struct sluice_stack_kobj, kobj)->st;
}

static ssize_t name_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", to_stack(kobj)->name);
}

static ssize_t netns_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", to_stack(kobj)->net->ns.inum);
}

static ssize_t ifindex_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", to_stack(kobj)->ifindex);
}

/* Empty when the stack has no device or its device has gone. */
static ssize_t ifname_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	char name[IFNAMSIZ];

	sluice_stack_ifname(to_stack(kobj), name, sizeof(name));
	return sysfs_emit(buf, "%s\n", name);
}

static ssize_t owner_uid_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", from_kuid_munged(&init_user_ns,
							to_stack(kobj)->creator));
}

static ssize_t attached_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%u\n", sluice_stack_attached(to_stack(kobj)));
}

/*
 * The attached processes' ids (in the initial pid namespace, so never one
 * reused by another process: exited ones are left out), space-separated.
 */
static ssize_t pids_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	struct sluice_stack *st = to_stack(kobj);
	struct sluice_proc *p;
	int len = 0;

	mutex_lock(&st->lock);
	list_for_each_entry(p, &st->procs, node) {
		/* Whole numbers only: the list stops short of a full page. */
		if (len > PAGE_SIZE - 16)
			break;
		if (!sluice_proc_alive(p))
			continue;
		len += sysfs_emit_at(buf, len, "%s%d", len ? " " : "",
				     pid_nr(p->pid));
	}
	mutex_unlock(&st->lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

static ssize_t region_size_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%zu\n", to_stack(kobj)->region_size);
}

/*
 * Sockets in use, as the stack's processes keep count in the region: user
 * space writes it, so it is only ever shown, capped at the slots created.
 */
static ssize_t sockets_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct sluice_stack *st = to_stack(kobj);

	return sysfs_emit(buf, "%u\n", min(READ_ONCE(st->region->sock_used),
					    st->max_sockets));
}

static ssize_t filters_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", sluice_filter_count(to_stack(kobj)));
}

/* 1 once the stack has rings (SLUICE_IOC_KRING_SETUP), else 0. */
static ssize_t kring_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%d\n", sluice_stack_has_kring(to_stack(kobj)));
}

/* Socket fd files open (SLUICE_IOC_SOCK_FD, shared by dup and fork). */
static ssize_t sockfds_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%u\n", sluice_sockfd_count(to_stack(kobj)));
}

static struct kobj_attribute sluice_attr_name = __ATTR_RO(name);
static struct kobj_attribute sluice_attr_netns = __ATTR_RO(netns);
static struct kobj_attribute sluice_attr_ifindex = __ATTR_RO(ifindex);
static struct kobj_attribute sluice_attr_ifname = __ATTR_RO(ifname);
static struct kobj_attribute sluice_attr_owner_uid = __ATTR_RO(owner_uid);
static struct kobj_attribute sluice_attr_attached = __ATTR_RO(attached);
static struct kobj_attribute sluice_attr_pids = __ATTR_RO(pids);
static struct kobj_attribute sluice_attr_region_size = __ATTR_RO(region_size);
static struct kobj_attribute sluice_attr_sockets = __ATTR_RO(sockets);
static struct kobj_attribute sluice_attr_filters = __ATTR_RO(filters);
static struct kobj_attribute sluice_attr_kring = __ATTR_RO(kring);
static struct kobj_attribute sluice_attr_sockfds = __ATTR_RO(sockfds);

static struct attribute *sluice_stack_attrs[] = {
	&sluice_attr_name.attr,
	&sluice_attr_netns.attr,
	&sluice_attr_ifindex.attr,
	&sluice_attr_ifname.attr,
	&sluice_attr_owner_uid.attr,
	&sluice_attr_attached.attr,
	&sluice_attr_pids.attr,
	&sluice_attr_region_size.attr,
	&sluice_attr_sockets.attr,
	&sluice_attr_filters.attr,
	&sluice_attr_kring.attr,
	&sluice_attr_sockfds.attr,
	NULL,
};
ATTRIBUTE_GROUPS(sluice_stack);

static void sluice_stack_kobj_release(struct kobject *kobj)
{
	struct sluice_stack_kobj *sk =
		container_of(kobj, struct sluice_stack_kobj, kobj);

	sluice_stack_put(sk->st);
	kfree(sk);
}

static const struct kobj_type sluice_stack_ktype = {
	.release	= sluice_stack_kobj_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= sluice_stack_groups,
};

/**
 * sluice_sysfs_stack_add - give a new stack its sysfs directory
 * @st:		the stack, not listed yet; under sluice_stacks_lock
 *
 * Return: 0, -ENOMEM, or -EAGAIN while the module is still loading.
 */
int sluice_sysfs_stack_add(struct sluice_stack *st)
{
	struct sluice_stack_kobj *sk;
	struct kobject *parent;
	int ret;

	/* Pairs with the release in sluice_sysfs_init(). */
	parent = smp_load_acquire(&sluice_stacks_kobj);
	if (!parent)
		return -EAGAIN;
	sk = kzalloc(sizeof(*sk), GFP_KERNEL);
	if (!sk)
		return -ENOMEM;
	sluice_stack_get(st);
	sk->st = st;
	ret = kobject_init_and_add(&sk->kobj, &sluice_stack_ktype, parent,
				   "%s", st->dirname);
	if (ret) {
		/* The release drops the stack reference. */
		kobject_put(&sk->kobj);
		return ret;
	}
	/* Tell udev; kobject_del() then announces the removal too. */
	kobject_uevent(&sk->kobj, KOBJ_ADD);
	st->kobj = &sk->kobj;
	return 0;
}

/*
 * Remove the directory; kernfs waits for readers still in a show method.
 * The stack reference goes with the last kobject reference.
 */
void sluice_sysfs_stack_del(struct sluice_stack *st)
{
	if (!st->kobj)
		return;
	kobject_del(st->kobj);
	kobject_put(st->kobj);
	st->kobj = NULL;
}

int sluice_sysfs_init(struct kobject *parent)
{
	struct kobject *kobj = kobject_create_and_add("stacks", parent);

	if (!kobj)
		return -ENOMEM;
	/* Publishes a directory that is complete. */
	smp_store_release(&sluice_stacks_kobj, kobj);
	return 0;
}

void sluice_sysfs_exit(void)
{
	kobject_put(sluice_stacks_kobj);
	sluice_stacks_kobj = NULL;
}
