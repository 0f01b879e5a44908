// SPDX-License-Identifier: GPL-2.0-only
/*
 * Socket fds: one anonymous-inode file ("[sluice-sock]") per Sluice socket
 * a program holds, whose poll reports the readiness user space keeps in
 * the socket's slot (struct sluice_sock_kpoll, uapi "Socket fds"), so the
 * kernel's own poll, select and epoll work on sets that mix them with any
 * other fd, and close, dup, fork and SCM_RIGHTS count holders as for any
 * file.  When the last reference to a socket's file goes, the slot is
 * marked released and the stack's pollers are woken: whoever holds the
 * stack lock next closes the socket (a killed process's sockets too).
 *
 * Waits: every file of one slot sleeps on that slot's wait queue, one
 * refcounted struct sluice_sock_slot per slot with files, in the stack's
 * @sockfds xarray (made by the first SOCK_FD, freed after an RCU grace
 * period by the last release), so SOCK_WAKE wakes the pollers of the
 * slots it names and nobody else.
 *
 * The region is user memory: everything read from a slot (gen, events,
 * state) is only ever compared or masked, and the slot is found from the
 * module's own copy of the layout, never from the region's header.
 *
 * The socket cache: SOCK_PARK closes a program's last fd of a file that
 * the library keeps another fd of, and if nothing else holds the file
 * (file_count(), no epoll item, no status flag but O_NONBLOCK) releases
 * the socket as the file's end would and parks the file: on no slot, its
 * poll registering nothing.  SOCK_REUSE binds a parked file that nothing
 * else holds to a new socket and gives it a new fd, in place of the file
 * SOCK_FD would make.  A file moves between slots only while parked, so
 * no waiter is ever left on a slot its file has left.
 *
 * Locking: a stack's @sock_lock (the slots and their file lists, a
 * file's @parked) nests inside nothing and takes nothing else.
 * SOCK_WAKE looks slots up under RCU only.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/fcntl.h>
#include <linux/fdtable.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/net.h>
#include <linux/poll.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <net/sock.h>

#include "sluice.h"

/* The readiness bits a socket fd reports (uapi, "Socket fds"). */
#define SLUICE_SOCK_EVENTS	(EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | \
				 EPOLLHUP | EPOLLRDNORM | EPOLLWRNORM | \
				 EPOLLRDHUP)
/* SOCK_WAKE copies this many indices on the stack; more are allocated. */
#define SLUICE_SOCK_WAKE_ONSTACK	64

/* The wait queue of one slot, shared by every socket fd of the slot. */
struct sluice_sock_slot {
	wait_queue_head_t wq;
	struct list_head files;		/* struct sluice_sock_file, @sock_lock */
	u32 idx;
	struct rcu_head rcu;
};

/* What each socket fd holds: the stack (a reference and a file count). */
struct sluice_sock_file {
	struct sluice_stack *st;
	struct sluice_sock_slot *slot;
	struct list_head node;		/* in slot->files */
	u32 idx;
	u32 gen;
	/*
	 * The kernel socket this stack socket was handed to (SOCK_KEEP):
	 * set once, put at the release, so a GET (which holds the file)
	 * may take a reference without a lock.  A file that keeps one is
	 * never parked (SOCK_PARK): its release puts it.
	 */
	struct file *kept;
	/*
	 * On no slot, its socket released (SOCK_PARK): @sock_lock to
	 * change, read by poll without it (acquire).
	 */
	bool parked;
};

void sluice_sockfd_stack_init(struct sluice_stack *st)
{
	xa_init(&st->sockfds);
	mutex_init(&st->sock_lock);
	atomic_set(&st->sockfd_files, 0);
	atomic_set(&st->ksock_released, 0);
	atomic64_set(&st->sock_wakes, 0);
}

void sluice_sockfd_stack_free(struct sluice_stack *st)
{
	/* Every socket fd holds the stack: none can be left. */
	WARN_ON_ONCE(!xa_empty(&st->sockfds));
	xa_destroy(&st->sockfds);
	mutex_destroy(&st->sock_lock);
}

/*
 * Slot @idx's struct sluice_sock_kpoll, from the layout the module
 * checked at creation: @idx below max_sockets, the table inside the
 * region, slots 64-byte aligned (so each field is naturally aligned).
 */
static struct sluice_sock_kpoll *sluice_kpoll(struct sluice_stack *st, u32 idx)
{
	return (struct sluice_sock_kpoll *)((u8 *)st->region + st->sock_off +
					    (u64)idx * st->sock_size);
}

static bool sluice_stack_broken(struct sluice_stack *st)
{
	return READ_ONCE(st->region->state) == SLUICE_STATE_BROKEN;
}

/* Has @file an epoll item?  (SOCK_PARK and SOCK_REUSE leave such a file.) */
#ifdef CONFIG_EPOLL
static bool sluice_file_epolled(struct file *file)
{
	return READ_ONCE(file->f_ep);
}
#else
static bool sluice_file_epolled(struct file *file)
{
	return false;
}
#endif

static __poll_t sluice_sock_poll(struct file *file, poll_table *wait)
{
	struct sluice_sock_file *sf = file->private_data;
	struct sluice_sock_kpoll *kp;
	u32 ev;

	/*
	 * A parked file joins no queue.  Acquire: a file SOCK_REUSE bound
	 * is read with its new slot, index and generation.
	 */
	if (smp_load_acquire(&sf->parked))
		return EPOLLERR | EPOLLHUP;
	kp = sluice_kpoll(sf->st, sf->idx);
	poll_wait(file, &sf->slot->wq, wait);
	if (READ_ONCE(kp->gen) != sf->gen || sluice_stack_broken(sf->st))
		return EPOLLERR | EPOLLHUP;
	/*
	 * Armed before events are read, with a full barrier between: pairs
	 * with user space's store of events, barrier, exchange of armed.
	 * Either this read sees the new events or user space sees armed
	 * and asks SOCK_WAKE, which finds us on the queue joined above.
	 */
	WRITE_ONCE(kp->armed, 1);
	smp_mb(); /* armed before events: see above */
	ev = READ_ONCE(kp->events);
	return (__force __poll_t)ev & SLUICE_SOCK_EVENTS;
}

/*
 * Put slot @idx on the region's list of released slots (uapi: struct
 * sluice_region.ksock_rel_head), as index + 1.  User space may write the
 * head at any time, so the exchange is tried a bounded number of times;
 * a push given up is found by user space from ksock_released, which then
 * runs ahead of the list.  A successful exchange orders the @kstate store
 * before it.
 */
#define SLUICE_REL_PUSH_TRIES	16

static void sluice_sock_push_released(struct sluice_stack *st,
				      struct sluice_sock_kpoll *kp, u32 idx)
{
	u32 *head = &st->region->ksock_rel_head;
	int i;

	for (i = 0; i < SLUICE_REL_PUSH_TRIES; i++) {
		u32 old = READ_ONCE(*head);

		WRITE_ONCE(kp->rel_next, old);
		if (cmpxchg(head, old, idx + 1) == old)
			return;
	}
}

/*
 * The last file of socket @idx of generation @gen went: mark the slot
 * released (if the socket is still that one) and tell user space.
 */
static void sluice_sock_released(struct sluice_stack *st, u32 idx, u32 gen)
{
	struct sluice_sock_kpoll *kp = sluice_kpoll(st, idx);

	if (READ_ONCE(kp->gen) != gen)
		return;
	WRITE_ONCE(kp->kstate, SLUICE_KSOCK_RELEASED);
	sluice_sock_push_released(st, kp, idx);
	/*
	 * The module's own count, stored (never read back from the region):
	 * release orders the kstate store before it, for a lock holder that
	 * reads the count and then scans the slots.
	 */
	smp_store_release(&st->region->ksock_released,
			  (u32)atomic_inc_return(&st->ksock_released));
	/* As SLUICE_WAKE_SIGNAL: a stack fd's poller (helper, holder) looks. */
	sluice_stack_wake_all(st);
}

/*
 * @sf leaves its slot's queue (@sock_lock held); the slot goes with its
 * last file (SOCK_WAKE may still be waking it: freed after RCU).  True if
 * no other file is of @sf's socket (its generation).
 */
static bool sluice_sock_slot_unlink(struct sluice_stack *st,
				    struct sluice_sock_file *sf)
{
	struct sluice_sock_slot *slot = sf->slot;
	struct sluice_sock_file *o;
	bool last = true;

	list_del(&sf->node);
	list_for_each_entry(o, &slot->files, node)
		if (o->gen == sf->gen)
			last = false;
	if (list_empty(&slot->files)) {
		xa_erase(&st->sockfds, slot->idx);
		kfree_rcu(slot, rcu);
	}
	return last;
}

static int sluice_sock_release(struct inode *inode, struct file *file)
{
	struct sluice_sock_file *sf = file->private_data;
	struct sluice_stack *st = sf->st;
	bool last;

	if (READ_ONCE(sf->parked))	/* released when it was parked */
		goto out;
	mutex_lock(&st->sock_lock);
	last = sluice_sock_slot_unlink(st, sf);
	mutex_unlock(&st->sock_lock);
	if (last)
		sluice_sock_released(st, sf->idx, sf->gen);
out:
	atomic_dec(&st->sockfd_files);
	if (sf->kept)
		fput(sf->kept);
	kfree(sf);
	sluice_stack_file_gone(st);
	sluice_stack_put(st);
	return 0;
}

static long sluice_sock_ioctl(struct file *file, unsigned int cmd,
			      unsigned long arg)
{
	return sluice_ioctl_dispatch(file, cmd, arg, SLUICE_ON_SOCK);
}

/*
 * /proc/PID/fdinfo/FD: which socket of which stack, for tools (`sluice
 * fds`) that cannot issue SOCK_INFO on another process's fd.
 */
static void sluice_sock_show_fdinfo(struct seq_file *m, struct file *file)
{
	struct sluice_sock_file *sf = file->private_data;

	seq_printf(m, "sluice_stack:\t%s\n", sf->st->name);
	if (READ_ONCE(sf->parked)) {
		seq_puts(m, "sluice_parked:\t1\n");
		return;
	}
	seq_printf(m, "sluice_idx:\t%u\n", sf->idx);
	seq_printf(m, "sluice_gen:\t%u\n", sf->gen);
	seq_printf(m, "sluice_kept:\t%d\n", !!READ_ONCE(sf->kept));
}

/* No read, write or mmap: read(2) and write(2) fail with EINVAL, mmap(2) ENODEV. */
static const struct file_operations sluice_sock_fops = {
	.owner		= THIS_MODULE,
	.release	= sluice_sock_release,
	.poll		= sluice_sock_poll,
	.unlocked_ioctl	= sluice_sock_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
	.show_fdinfo	= sluice_sock_show_fdinfo,
};

/* Slot @idx's shared queue, made on first use; @sock_lock held. */
static struct sluice_sock_slot *sluice_sock_slot_get(struct sluice_stack *st,
						     u32 idx)
{
	struct sluice_sock_slot *slot;
	int ret;

	lockdep_assert_held(&st->sock_lock);
	slot = xa_load(&st->sockfds, idx);
	if (slot)
		return slot;
	slot = kzalloc(sizeof(*slot), GFP_KERNEL_ACCOUNT);
	if (!slot)
		return ERR_PTR(-ENOMEM);
	init_waitqueue_head(&slot->wq);
	INIT_LIST_HEAD(&slot->files);
	slot->idx = idx;
	ret = xa_insert(&st->sockfds, idx, slot, GFP_KERNEL_ACCOUNT);
	if (ret) {
		kfree(slot);
		return ERR_PTR(ret);
	}
	return slot;
}

/* The slot's shared queue, made on first use; @sf joins its file list. */
static int sluice_sock_slot_join(struct sluice_stack *st,
				 struct sluice_sock_file *sf)
{
	struct sluice_sock_slot *slot;

	mutex_lock(&st->sock_lock);
	slot = sluice_sock_slot_get(st, sf->idx);
	if (!IS_ERR(slot)) {
		list_add_tail(&sf->node, &slot->files);
		sf->slot = slot;
	}
	mutex_unlock(&st->sock_lock);
	return PTR_ERR_OR_ZERO(slot);
}

/* Undo sluice_sock_slot_join() for a file that was never made. */
static void sluice_sock_slot_leave(struct sluice_stack *st,
				   struct sluice_sock_file *sf)
{
	mutex_lock(&st->sock_lock);
	sluice_sock_slot_unlink(st, sf);
	mutex_unlock(&st->sock_lock);
}

int sluice_ioc_sock_fd(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_sock_file *sf;
	struct sluice_sock_fd a;
	struct file *sfile;
	int fd, ret;

	ret = sluice_arg_in(&a, sizeof(a), offsetofend(struct sluice_sock_fd,
						       gen), uarg);
	if (ret)
		return ret;
	if (a.flags & ~(SLUICE_SOCK_FD_CLOEXEC | SLUICE_SOCK_FD_NONBLOCK))
		return -EINVAL;
	if (a.idx >= st->max_sockets)
		return -EINVAL;
	if (READ_ONCE(sluice_kpoll(st, a.idx)->gen) != a.gen)
		return -ESTALE;

	sf = kzalloc(sizeof(*sf), GFP_KERNEL_ACCOUNT);
	if (!sf)
		return -ENOMEM;
	sf->st = st;
	sf->idx = a.idx;
	sf->gen = a.gen;
	fd = get_unused_fd_flags(a.flags & SLUICE_SOCK_FD_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	ret = sluice_sock_slot_join(st, sf);
	if (ret)
		goto err_fd;
	/* The issuing stack fd is open: the stack is listed, files >= 1. */
	sluice_stack_get(st);
	sluice_stack_file_add(st);
	atomic_inc(&st->sockfd_files);
	sfile = anon_inode_getfile("[sluice-sock]", &sluice_sock_fops, sf,
				   O_RDWR | (a.flags & SLUICE_SOCK_FD_NONBLOCK ?
					     O_NONBLOCK : 0));
	if (IS_ERR(sfile)) {
		ret = PTR_ERR(sfile);
		goto err_stack;
	}
	/* From here on the file's release undoes everything above. */
	WRITE_ONCE(sluice_kpoll(st, a.idx)->kstate, SLUICE_KSOCK_OPEN);
	fd_install(fd, sfile);
	return fd;

err_stack:
	atomic_dec(&st->sockfd_files);
	sluice_stack_file_gone(st);
	sluice_stack_put(st);
	sluice_sock_slot_leave(st, sf);
err_fd:
	put_unused_fd(fd);
err_free:
	kfree(sf);
	return ret;
}

/* Does nothing hold @f (a socket fd's file) but one fd and @refs more? */
static bool sluice_sock_alone(struct file *f, long refs)
{
	return file_count(f) == 1 + refs && !sluice_file_epolled(f);
}

/* The file of socket fd @fd if it is one of @st's, with a reference. */
static struct file *sluice_sock_fget(struct sluice_stack *st, int fd)
{
	struct file *f = fget(fd);

	if (!f)
		return ERR_PTR(-EBADF);
	if (f->f_op != &sluice_sock_fops ||
	    ((struct sluice_sock_file *)f->private_data)->st != st) {
		fput(f);
		return ERR_PTR(-EINVAL);
	}
	return f;
}

/* Close @fd if it is still @f's (the caller's own keeper). */
static void sluice_sock_close_if(int fd, struct file *f)
{
	struct file *k = fget(fd);

	if (k == f)
		close_fd(fd);
	if (k)
		fput(k);
}

int sluice_ioc_sock_park(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_sock_file *sf;
	struct sluice_sock_park a;
	bool last = false, parked = false;
	struct file *f, *k;
	int ret;

	ret = sluice_arg_in(&a, sizeof(a), offsetofend(struct sluice_sock_park,
						       keep_fd), uarg);
	if (ret)
		return ret;
	if (a.flags || a.fd == a.keep_fd)
		return -EINVAL;
	f = sluice_sock_fget(st, a.fd);
	if (IS_ERR(f))
		return PTR_ERR(f);
	sf = f->private_data;
	k = fget(a.keep_fd);
	ret = !k ? -EBADF : k != f || READ_ONCE(sf->parked) ? -EINVAL : 0;
	if (k)
		fput(k);
	if (ret)
		goto out;
	close_fd(a.fd);
	/*
	 * Now the keeper's reference and ours, if nothing else holds the
	 * file: no fd of another process, no call in flight (poll's and
	 * epoll_ctl()'s hold one), no epoll item.
	 */
	mutex_lock(&st->sock_lock);
	if (sluice_sock_alone(f, 1) && !READ_ONCE(sf->kept) &&
	    !(f->f_flags & (O_APPEND | FASYNC | O_DIRECT | O_NOATIME))) {
		last = sluice_sock_slot_unlink(st, sf);
		sf->slot = NULL;
		/* release: pairs with poll's acquire (of a REUSE's too) */
		smp_store_release(&sf->parked, true);
		parked = true;
	}
	mutex_unlock(&st->sock_lock);
	if (parked) {
		if (last)
			sluice_sock_released(st, sf->idx, sf->gen);
		ret = 1;
	} else {
		sluice_sock_close_if(a.keep_fd, f);
	}
out:
	fput(f);
	return ret;
}

int sluice_ioc_sock_reuse(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_sock_slot *slot;
	struct sluice_sock_reuse a;
	struct sluice_sock_file *sf;
	struct file *f;
	int fd, ret;

	ret = sluice_arg_in(&a, sizeof(a), offsetofend(struct sluice_sock_reuse,
						       reserved), uarg);
	if (ret)
		return ret;
	if (a.flags & ~(SLUICE_SOCK_FD_CLOEXEC | SLUICE_SOCK_FD_NONBLOCK) ||
	    a.reserved || a.idx >= st->max_sockets)
		return -EINVAL;
	if (READ_ONCE(sluice_kpoll(st, a.idx)->gen) != a.gen)
		return -ESTALE;
	f = sluice_sock_fget(st, a.fd);
	if (IS_ERR(f))
		return PTR_ERR(f);
	sf = f->private_data;
	fd = get_unused_fd_flags(a.flags & SLUICE_SOCK_FD_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0) {
		ret = fd;
		goto err_fput;
	}
	mutex_lock(&st->sock_lock);
	if (!sf->parked) {
		ret = -EINVAL;
	} else if (!sluice_sock_alone(f, 1)) {
		ret = -EBUSY;
	} else {
		slot = sluice_sock_slot_get(st, a.idx);
		ret = PTR_ERR_OR_ZERO(slot);
	}
	if (!ret) {
		list_add_tail(&sf->node, &slot->files);
		sf->slot = slot;
		sf->idx = a.idx;
		sf->gen = a.gen;
		/* poll reads them after it sees @parked clear */
		smp_store_release(&sf->parked, false);
	}
	mutex_unlock(&st->sock_lock);
	if (ret)
		goto err_fd;
	spin_lock(&f->f_lock);
	f->f_flags = (f->f_flags & ~O_NONBLOCK) |
		     (a.flags & SLUICE_SOCK_FD_NONBLOCK ? O_NONBLOCK : 0);
	spin_unlock(&f->f_lock);
	WRITE_ONCE(sluice_kpoll(st, a.idx)->kstate, SLUICE_KSOCK_OPEN);
	fd_install(fd, f);	/* our reference is the new fd's */
	return fd;

err_fd:
	put_unused_fd(fd);
err_fput:
	fput(f);
	return ret;
}

/* Wake the pollers of each slot in @idx[0..@n), all checked already. */
static void sluice_sock_wake_slots(struct sluice_stack *st, const u32 *idx,
				   u32 n)
{
	struct sluice_sock_slot *slot;
	u32 i;

	rcu_read_lock();
	for (i = 0; i < n; i++) {
		slot = xa_load(&st->sockfds, idx[i]);
		/*
		 * No key: every poller wakes and polls again, so every one is
		 * armed again, whichever events it waits for (a key would
		 * let a filtered-out waiter sleep on with armed cleared).
		 */
		if (slot)
			wake_up_interruptible_poll(&slot->wq, 0);
	}
	rcu_read_unlock();
}

int sluice_ioc_sock_wake(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	u32 onstack[SLUICE_SOCK_WAKE_ONSTACK], *idx = onstack;
	struct sluice_sock_wake w;
	int ret;
	u32 i;

	ret = sluice_arg_in(&w, sizeof(w), offsetofend(struct sluice_sock_wake,
						       idx_ptr), uarg);
	if (ret)
		return ret;
	if (w.flags || w.reserved)
		return -EINVAL;
	if (w.n > SLUICE_SOCK_WAKE_MAX)
		return -E2BIG;
	if (!w.n)
		return 0;
	if (w.n > SLUICE_SOCK_WAKE_ONSTACK) {
		idx = kmalloc_array(w.n, sizeof(*idx), GFP_KERNEL);
		if (!idx)
			return -ENOMEM;
	}
	if (copy_from_user(idx, u64_to_user_ptr(w.idx_ptr),
			   (size_t)w.n * sizeof(*idx))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < w.n; i++)
		if (idx[i] >= st->max_sockets) {
			ret = -EINVAL;
			goto out;
		}
	sluice_sock_wake_slots(st, idx, w.n);
	atomic64_add(w.n, &st->sock_wakes);
out:
	if (idx != onstack)
		kfree(idx);
	return ret;
}

int sluice_ioc_sock_info(struct file *file, void __user *uarg)
{
	struct sluice_sock_file *sf = file->private_data;
	struct sluice_sock_info si;
	int ret;

	ret = sluice_arg_in(&si, sizeof(si), offsetofend(struct sluice_sock_info,
							 name), uarg);
	if (ret)
		return ret;
	if (si.flags)
		return -EINVAL;
	if (READ_ONCE(sf->parked))
		return -ENOTCONN;
	si.idx = sf->idx;
	si.gen = sf->gen;
	memcpy(si.name, sf->st->name, sizeof(si.name));
	return sluice_arg_out(uarg, &si, sizeof(si));
}

/* GET: another fd of the socket @sf keeps, or -errno. */
static int sluice_sock_kept_fd(struct sluice_sock_file *sf, u32 flags)
{
	/* Pairs with SOCK_KEEP's cmpxchg_release(): the file seen whole. */
	struct file *kf = smp_load_acquire(&sf->kept);
	int fd;

	if (!kf)
		return -ENOENT;
	fd = get_unused_fd_flags(flags & SLUICE_SOCK_KEEP_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0)
		return fd;
	fd_install(fd, get_file(kf));
	return fd;
}

int sluice_ioc_sock_keep(struct file *file, void __user *uarg)
{
	struct sluice_sock_file *sf = file->private_data;
	struct sluice_sock_keep k;
	struct socket *sock;
	struct file *kf;
	int ret;

	ret = sluice_arg_in(&k, sizeof(k), offsetofend(struct sluice_sock_keep,
						       reserved), uarg);
	if (ret)
		return ret;
	if (k.reserved || k.flags & ~(SLUICE_SOCK_KEEP_GET | SLUICE_SOCK_KEEP_CLOEXEC))
		return -EINVAL;
	if (k.flags & SLUICE_SOCK_KEEP_GET)
		return k.fd ? -EINVAL : sluice_sock_kept_fd(sf, k.flags);
	if (k.flags)
		return -EINVAL;
	kf = fget(k.fd);
	if (!kf)
		return -EBADF;
	sock = sock_from_file(kf);
	if (!sock || !sock->sk) {
		ret = -ENOTSOCK;
		goto err_put;
	}
	/* Not a socket that could carry this file back (AF_UNIX): no cycle. */
	if (sock->sk->sk_family != AF_INET && sock->sk->sk_family != AF_INET6) {
		ret = -EPROTONOSUPPORT;
		goto err_put;
	}
	/* Orders the socket's making before a GET's use of it. */
	if (cmpxchg_release(&sf->kept, NULL, kf)) {
		ret = -EBUSY;
		goto err_put;
	}
	return 0;

err_put:
	fput(kf);
	return ret;
}

unsigned int sluice_sockfd_count(struct sluice_stack *st)
{
	return atomic_read(&st->sockfd_files);
}

/* debugfs: the socket fds of a stack, one line a slot. */
void sluice_sockfd_show(struct seq_file *m, struct sluice_stack *st)
{
	struct sluice_sock_slot *slot;
	struct sluice_sock_file *sf;
	unsigned long i;

	seq_printf(m, "sockfds %d\n", atomic_read(&st->sockfd_files));
	seq_printf(m, "sockfd_released %d\n", atomic_read(&st->ksock_released));
	seq_printf(m, "sockfd_wakes %lld\n",
		   (long long)atomic64_read(&st->sock_wakes));
	mutex_lock(&st->sock_lock);
	xa_for_each(&st->sockfds, i, slot) {
		struct sluice_sock_kpoll *kp = sluice_kpoll(st, slot->idx);
		unsigned int files = 0;
		u32 gen = 0;

		list_for_each_entry(sf, &slot->files, node) {
			files++;
			gen = sf->gen;
		}
		seq_printf(m, "sockfd slot %u gen %u files %u events 0x%x armed %u kstate %u\n",
			   slot->idx, gen, files, READ_ONCE(kp->events),
			   READ_ONCE(kp->armed), READ_ONCE(kp->kstate));
	}
	mutex_unlock(&st->sock_lock);
}
