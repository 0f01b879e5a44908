// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stacks: creating one (its region pinned by region.c), attaching
 * to one by name, and the stack fd: mmap of the region, poll and the wake
 * ioctl, and the bookkeeping of which processes hold the stack.
 *
 * Locking: sluice_stacks_lock (the list of named stacks, each stack's file
 * count and its sysfs and debugfs entries) comes before a stack's @lock
 * (its attached processes).  sysfs and debugfs readers take only @lock,
 * so removing their entries under sluice_stacks_lock cannot deadlock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/net_namespace.h>

#include "sluice.h"

static unsigned int max_region_mb = 1024;
module_param(max_region_mb, uint, 0644);
MODULE_PARM_DESC(max_region_mb, "Largest stack region, in MiB (default 1024)");

static DEFINE_MUTEX(sluice_stacks_lock);
static LIST_HEAD(sluice_stacks);

/* What each stack fd holds. */
struct sluice_stack_file {
	struct sluice_stack *st;
	struct sluice_proc *proc;
	u32 armed_seq;		/* see struct sluice_stack_wake */
};

/*
 * The region and the rings are pinned kernel memory that any user may ask
 * for, so they are charged, like io_uring's and AF_XDP's, to the creator's
 * user against RLIMIT_MEMLOCK, unless the creator has CAP_IPC_LOCK.  The
 * charge stays with that user until the memory is freed.  *@userp is the
 * user charged, or NULL for none.
 */
int sluice_mem_charge(size_t bytes, struct user_struct **userp)
{
	unsigned long pages = PAGE_ALIGN(bytes) >> PAGE_SHIFT;
	struct user_struct *user;
	unsigned long limit;
	long cur;

	*userp = NULL;
	if (capable(CAP_IPC_LOCK))
		return 0;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	user = get_uid(current_user());
	cur = atomic_long_read(&user->locked_vm);
	do {
		if (pages > limit || (unsigned long)cur > limit - pages) {
			free_uid(user);
			return -ENOMEM;
		}
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, cur + pages));
	*userp = user;
	return 0;
}

void sluice_mem_uncharge(struct user_struct *user, size_t bytes)
{
	if (!user)
		return;
	atomic_long_sub(PAGE_ALIGN(bytes) >> PAGE_SHIFT, &user->locked_vm);
	free_uid(user);
}

static int sluice_stack_charge(struct sluice_stack *st)
{
	return sluice_mem_charge(st->region_size, &st->locked_user);
}

static void sluice_stack_uncharge(struct sluice_stack *st)
{
	sluice_mem_uncharge(st->locked_user, st->region_size);
}

void sluice_stack_get(struct sluice_stack *st)
{
	kref_get(&st->ref);
}

static void sluice_stack_free(struct kref *ref)
{
	struct sluice_stack *st = container_of(ref, struct sluice_stack, ref);

	WARN_ON_ONCE(!list_empty(&st->procs) || st->files ||
		     atomic_read(&st->maps));
	sluice_kring_free(st);
	sluice_sockfd_stack_free(st);
	sluice_region_free(st);
	sluice_stack_uncharge(st);
	put_net(st->net);
	mutex_destroy(&st->lock);
	kfree(st);
	atomic_dec(&sluice_stats.regions);
	/*
	 * Never the module's last reference: the last put comes from an
	 * ioctl on /dev/sluice, a stack file's release or a vma's close, and
	 * that file (the vma's own) holds the module until after it returns.
	 */
	module_put(THIS_MODULE);
}

void sluice_stack_put(struct sluice_stack *st)
{
	kref_put(&st->ref, sluice_stack_free);
}

/* The listed stack of this name in @net, or NULL.  Under the lock. */
static struct sluice_stack *sluice_stack_find(struct net *net,
					      const char *name)
{
	struct sluice_stack *st;

	lockdep_assert_held(&sluice_stacks_lock);
	list_for_each_entry(st, &sluice_stacks, node)
		if (net_eq(st->net, net) &&
		    !strncmp(st->name, name, SLUICE_NAME_MAX))
			return st;
	return NULL;
}

static bool sluice_ifindex_exists(struct net *net, u32 ifindex)
{
	bool found;

	if (ifindex > INT_MAX)
		return false;
	rcu_read_lock();
	found = !!dev_get_by_index_rcu(net, ifindex);
	rcu_read_unlock();
	return found;
}

/**
 * sluice_stack_ifname - the name of the stack's device now
 * @st:		the stack
 * @buf:	IFNAMSIZ bytes or more
 * @len:	size of @buf
 *
 * The stack records only the ifindex: holding the device would stop it
 * from being unregistered.  Steering (to come) will follow the device
 * with a notifier.
 *
 * Return: 0, or -ENODEV if the stack has no device or it has gone.
 */
int sluice_stack_ifname(struct sluice_stack *st, char *buf, size_t len)
{
	struct net_device *dev;
	int ret = -ENODEV;

	buf[0] = '\0';
	if (!st->ifindex)
		return ret;
	rcu_read_lock();
	dev = dev_get_by_index_rcu(st->net, st->ifindex);
	if (dev) {
		strscpy(buf, dev->name, len);
		ret = 0;
	}
	rcu_read_unlock();
	return ret;
}

static struct sluice_stack *sluice_stack_alloc(const struct sluice_stack_create *c,
					       struct net *net)
{
	struct sluice_stack *st;
	int ret;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return ERR_PTR(-ENOMEM);
	st->region_size = c->region_size;
	ret = sluice_stack_charge(st);
	if (ret)
		goto err_free;
	ret = sluice_region_alloc(st);
	if (ret)
		goto err_uncharge;
	kref_init(&st->ref);
	INIT_LIST_HEAD(&st->node);
	memcpy(st->name, c->name, sizeof(st->name));
	if (net_eq(net, &init_net))
		strscpy(st->dirname, c->name, sizeof(st->dirname));
	else
		snprintf(st->dirname, sizeof(st->dirname), "%s@%u", c->name,
			 net->ns.inum);
	st->net = get_net(net);
	st->creator = current_euid();
	st->ifindex = c->ifindex;
	st->max_sockets = c->max_sockets;
	st->n_bufs = c->n_bufs;
	st->buf_size = c->buf_size;
	st->bufdata_off = c->bufdata_off;
	st->sock_off = c->sock_off;
	st->sock_size = c->sock_size;
	sluice_sockfd_stack_init(st);
	atomic_set(&st->maps, 0);
	init_waitqueue_head(&st->wq);
	atomic_set(&st->wake_seq, 0);
	atomic64_set(&st->wakes, 0);
	mutex_init(&st->lock);
	INIT_LIST_HEAD(&st->procs);

	sluice_layout_write(st->region, c,
			    from_kuid_munged(current_user_ns(), st->creator));
	__module_get(THIS_MODULE);
	atomic_inc(&sluice_stats.regions);
	return st;

err_uncharge:
	sluice_stack_uncharge(st);
err_free:
	kfree(st);
	return ERR_PTR(ret);
}

/*
 * One more file of @st (a socket fd), made while another file of it, on
 * which the caller issued an ioctl, is open: the stack is listed.
 */
void sluice_stack_file_add(struct sluice_stack *st)
{
	mutex_lock(&sluice_stacks_lock);
	WARN_ON_ONCE(!st->files);
	st->files++;
	mutex_unlock(&sluice_stacks_lock);
}

/* Take @st's name away: no longer found, shown or counted.  Under the lock. */
static void sluice_stack_unlist(struct sluice_stack *st)
{
	lockdep_assert_held(&sluice_stacks_lock);
	if (list_empty(&st->node))
		return;		/* replaced already (SLUICE_STACK_CREATE_REPLACE) */
	list_del_init(&st->node);
	sluice_debugfs_stack_del(st);
	sluice_sysfs_stack_del(st);
	atomic_dec(&sluice_stats.stacks);
}

/*
 * A file of @st went away, or one reserved under the lock was never made:
 * the last one unlists the stack.  The caller still holds a reference.
 */
void sluice_stack_file_gone(struct sluice_stack *st)
{
	bool last = false;

	mutex_lock(&sluice_stacks_lock);
	if (!WARN_ON_ONCE(!st->files) && !--st->files) {
		sluice_stack_unlist(st);
		last = true;
	}
	mutex_unlock(&sluice_stacks_lock);
	/*
	 * Outside the lock, as both wait for an RCU grace period: no file is
	 * left to kick or set up rings, so stop steering into them, then drop
	 * the filters and release their ports.
	 */
	if (last) {
		sluice_kring_stop(st);
		sluice_filter_stack_release(st);
		sluice_mcast_stack_release(st);
	}
}

/* Count the calling process as attached; returns its record. */
static struct sluice_proc *sluice_proc_attach(struct sluice_stack *st)
{
	struct sluice_proc *p, *fresh;
	struct pid *pid = task_tgid(current);

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return NULL;
	mutex_lock(&st->lock);
	list_for_each_entry(p, &st->procs, node)
		if (p->pid == pid)
			goto found;
	p = fresh;
	fresh = NULL;
	p->pid = get_pid(pid);
	list_add_tail(&p->node, &st->procs);
found:
	p->files++;
	mutex_unlock(&st->lock);
	kfree(fresh);
	return p;
}

static void sluice_proc_detach(struct sluice_stack *st, struct sluice_proc *p)
{
	mutex_lock(&st->lock);
	if (--p->files) {
		mutex_unlock(&st->lock);
		return;
	}
	list_del(&p->node);
	mutex_unlock(&st->lock);
	put_pid(p->pid);
	kfree(p);
}

/* A snapshot: the process may exit right after. */
bool sluice_proc_alive(const struct sluice_proc *p)
{
	return pid_has_task(p->pid, PIDTYPE_TGID);
}

/* Processes attached now: alive, with a file of the stack they made. */
unsigned int sluice_stack_attached(struct sluice_stack *st)
{
	struct sluice_proc *p;
	unsigned int n = 0;

	mutex_lock(&st->lock);
	list_for_each_entry(p, &st->procs, node)
		n += sluice_proc_alive(p);
	mutex_unlock(&st->lock);
	return n;
}

static void sluice_stack_vm_open(struct vm_area_struct *vma)
{
	struct sluice_stack *st = vma->vm_private_data;

	sluice_stack_get(st);
	atomic_inc(&st->maps);
}

static void sluice_stack_vm_close(struct vm_area_struct *vma)
{
	struct sluice_stack *st = vma->vm_private_data;

	atomic_dec(&st->maps);
	sluice_stack_put(st);
}

/*
 * Each vma holds the stack (open runs again for every copy a fork or a
 * split makes, close for every vma unmapped).  The vma's file reference
 * already keeps the stack file, and so its stack and the module, alive;
 * the stack reference makes the region's lifetime not depend on that.
 */
static const struct vm_operations_struct sluice_stack_vm_ops = {
	.open	= sluice_stack_vm_open,
	.close	= sluice_stack_vm_close,
};

static int sluice_stack_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct sluice_stack_file *sf = file->private_data;
	struct sluice_stack *st = sf->st;
	int ret;

	/* A private copy of shared stack state is never what anyone means. */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff == SLUICE_MMAP_KRING >> PAGE_SHIFT)
		ret = sluice_kring_mmap(st, vma);
	else
		ret = sluice_region_mmap(st, vma);
	if (ret)
		return ret;
	vma->vm_private_data = st;
	vma->vm_ops = &sluice_stack_vm_ops;
	sluice_stack_vm_open(vma);
	return 0;
}

static __poll_t sluice_stack_poll(struct file *file, poll_table *wait)
{
	struct sluice_stack_file *sf = file->private_data;
	struct sluice_stack *st = sf->st;

	poll_wait(file, &st->wq, wait);
	/*
	 * Queued before the sequence is read: pairs with the barrier of the
	 * kring's receive path, which looks at the queue after producing.
	 */
	smp_mb();
	/* After poll_wait: a SIGNAL from here on wakes the queue we are on. */
	if ((u32)atomic_read(&st->wake_seq) != READ_ONCE(sf->armed_seq))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

/* Bump the wake sequence and wake every poller (a device change). */
void sluice_stack_wake_all(struct sluice_stack *st)
{
	atomic_inc(&st->wake_seq);
	atomic64_inc(&st->wakes);
	wake_up_interruptible_all(&st->wq);
}

int sluice_ioc_stack_wake(struct file *file, void __user *uarg)
{
	struct sluice_stack_file *sf = file->private_data;
	struct sluice_stack *st = sf->st;
	struct sluice_stack_wake w;
	int ret;

	ret = sluice_arg_in(&w, sizeof(w), offsetofend(struct sluice_stack_wake,
						       reserved), uarg);
	if (ret)
		return ret;
	if (w.reserved)
		return -EINVAL;
	switch (w.flags) {
	case 0:
		w.seq = atomic_read(&st->wake_seq);
		break;
	case SLUICE_WAKE_ARM:
		WRITE_ONCE(sf->armed_seq, w.seq);
		w.seq = atomic_read(&st->wake_seq);
		break;
	case SLUICE_WAKE_SIGNAL:
		/*
		 * Fully ordered: whatever the caller wrote in the region before
		 * this call is visible to a poller that sees the new value.
		 */
		w.seq = atomic_inc_return(&st->wake_seq);
		atomic64_inc(&st->wakes);
		wake_up_interruptible_all(&st->wq);
		break;
	default:
		return -EINVAL;
	}
	return sluice_arg_out(uarg, &w, sizeof(w));
}

/* The stack of a stack fd (an ioctl dispatched with SLUICE_ON_STACK). */
struct sluice_stack *sluice_stack_of(struct file *file)
{
	struct sluice_stack_file *sf = file->private_data;

	return sf->st;
}

static long sluice_stack_ioctl(struct file *file, unsigned int cmd,
			       unsigned long arg)
{
	return sluice_ioctl_dispatch(file, cmd, arg, SLUICE_ON_STACK);
}

static int sluice_stack_release(struct inode *inode, struct file *file)
{
	struct sluice_stack_file *sf = file->private_data;
	struct sluice_stack *st = sf->st;

	sluice_proc_detach(st, sf->proc);
	sluice_stack_file_gone(st);
	kfree(sf);
	sluice_stack_put(st);
	return 0;
}

static const struct file_operations sluice_stack_fops = {
	.owner		= THIS_MODULE,
	.release	= sluice_stack_release,
	.mmap		= sluice_stack_mmap,
	.poll		= sluice_stack_poll,
	.unlocked_ioctl	= sluice_stack_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/*
 * Make a file on @st for the caller, whose file count the caller has
 * already raised under the lock.  On failure that count is dropped again.
 * The fd is reserved but not installed: the caller installs it once the
 * result is copied out, or undoes it with sluice_stack_fd_abort().
 */
static int sluice_stack_fd_make(struct sluice_stack *st, struct file **filep)
{
	struct sluice_stack_file *sf;
	struct file *file;
	int fd, ret;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_files;
	}
	sf = kzalloc(sizeof(*sf), GFP_KERNEL);
	if (!sf) {
		ret = -ENOMEM;
		goto err_fd;
	}
	sf->st = st;
	sf->armed_seq = atomic_read(&st->wake_seq);
	sf->proc = sluice_proc_attach(st);
	if (!sf->proc) {
		ret = -ENOMEM;
		goto err_sf;
	}
	sluice_stack_get(st);
	file = anon_inode_getfile("[sluice-stack]", &sluice_stack_fops, sf,
				  O_RDWR | O_CLOEXEC);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto err_ref;
	}
	/* From here on the file's release undoes everything above. */
	*filep = file;
	return fd;

err_ref:
	/* Drops the reference taken above; the caller still holds one. */
	sluice_stack_put(st);
	sluice_proc_detach(st, sf->proc);
err_sf:
	kfree(sf);
err_fd:
	put_unused_fd(fd);
err_files:
	sluice_stack_file_gone(st);
	return ret;
}

static void sluice_stack_fd_abort(int fd, struct file *file)
{
	put_unused_fd(fd);
	fput(file);
}

/* The creator, or CAP_NET_ADMIN over the stack's network namespace. */
static bool sluice_may_attach(struct sluice_stack *st)
{
	return uid_eq(current_euid(), st->creator) ||
	       ns_capable(st->net->user_ns, CAP_NET_ADMIN);
}

/*
 * May a create with @flags take @st's name?  Only a stack user space has
 * marked broken (a hint from the region: any process that maps it can
 * write it, and any such process could break the stack anyway), and only
 * for a caller who may attach to it.  Under the lock.
 */
static bool sluice_stack_replaceable(struct sluice_stack *st, u32 flags)
{
	return (flags & SLUICE_STACK_CREATE_REPLACE) &&
	       READ_ONCE(st->region->state) == SLUICE_STATE_BROKEN &&
	       sluice_may_attach(st);
}

int sluice_ioc_stack_create(struct file *file, void __user *uarg)
{
	struct net *net = current->nsproxy->net_ns;
	struct sluice_stack_create c;
	struct sluice_stack *st, *old;
	struct file *sfile;
	int fd, ret;

	ret = sluice_arg_in(&c, sizeof(c), offsetofend(struct sluice_stack_create,
						       reserved1), uarg);
	if (ret)
		return ret;
	if ((c.flags & ~SLUICE_STACK_CREATE_REPLACE) || c.reserved0 || c.reserved1 ||
	    !sluice_name_ok(c.name))
		return -EINVAL;
	ret = sluice_layout_check(&c, min_t(u64, (u64)READ_ONCE(max_region_mb) << 20,
					    SIZE_MAX & PAGE_MASK));
	if (ret)
		return ret;
	if (c.ifindex && !sluice_ifindex_exists(net, c.ifindex))
		return -ENODEV;
	/* Refuse a duplicate before allocating; checked again below. */
	mutex_lock(&sluice_stacks_lock);
	st = sluice_stack_find(net, c.name);
	if (st && sluice_stack_replaceable(st, c.flags))
		st = NULL;
	mutex_unlock(&sluice_stacks_lock);
	if (st)
		return -EEXIST;

	st = sluice_stack_alloc(&c, net);
	if (IS_ERR(st))
		return PTR_ERR(st);

	mutex_lock(&sluice_stacks_lock);
	old = sluice_stack_find(net, c.name);
	if (old && !sluice_stack_replaceable(old, c.flags)) {
		ret = -EEXIST;
		goto err_unlock;
	}
	/* The broken one lives on, by no name, for the files that hold it. */
	if (old)
		sluice_stack_unlist(old);
	ret = sluice_sysfs_stack_add(st);
	if (ret)
		goto err_unlock;
	sluice_debugfs_stack_add(st);
	list_add_tail(&st->node, &sluice_stacks);
	atomic_inc(&sluice_stats.stacks);
	st->files = 1;		/* the file made below */
	mutex_unlock(&sluice_stacks_lock);

	fd = sluice_stack_fd_make(st, &sfile);
	if (fd < 0) {
		ret = fd;
		goto err_put;
	}
	c.fd = fd;
	ret = sluice_arg_out(uarg, &c, sizeof(c));
	if (ret) {
		sluice_stack_fd_abort(fd, sfile);
		goto err_put;
	}
	fd_install(fd, sfile);
	sluice_stack_put(st);
	return 0;

err_unlock:
	mutex_unlock(&sluice_stacks_lock);
err_put:
	sluice_stack_put(st);
	return ret;
}

int sluice_ioc_stack_attach(struct file *file, void __user *uarg)
{
	struct net *net = current->nsproxy->net_ns;
	struct sluice_stack_attach a;
	struct sluice_stack *st;
	struct file *sfile;
	int fd, ret;

	ret = sluice_arg_in(&a, sizeof(a), offsetofend(struct sluice_stack_attach,
						       region_size), uarg);
	if (ret)
		return ret;
	if (a.flags || !sluice_name_ok(a.name))
		return -EINVAL;

	mutex_lock(&sluice_stacks_lock);
	st = sluice_stack_find(net, a.name);
	if (!st) {
		mutex_unlock(&sluice_stacks_lock);
		return -ENOENT;
	}
	if (!sluice_may_attach(st)) {
		mutex_unlock(&sluice_stacks_lock);
		return -EACCES;
	}
	sluice_stack_get(st);
	st->files++;		/* the file made below */
	mutex_unlock(&sluice_stacks_lock);

	fd = sluice_stack_fd_make(st, &sfile);
	if (fd < 0) {
		ret = fd;
		goto err_put;
	}
	a.fd = fd;
	a.ifindex = st->ifindex;
	a.region_size = st->region_size;
	ret = sluice_arg_out(uarg, &a, sizeof(a));
	if (ret) {
		sluice_stack_fd_abort(fd, sfile);
		goto err_put;
	}
	fd_install(fd, sfile);
	sluice_stack_put(st);
	return 0;

err_put:
	sluice_stack_put(st);
	return ret;
}
