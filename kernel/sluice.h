/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internal declarations shared by the files of sluice.ko.
 */
#ifndef _SLUICE_INTERNAL_H
#define _SLUICE_INTERNAL_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <uapi/sluice.h>

struct dentry;
struct file;
struct kobject;
struct in6_addr;
struct iphdr;
struct ipv6hdr;
struct net;
struct net_device;
struct page;
struct seq_file;
struct sk_buff;
struct sluice_stack_filters;
struct sluice_kring_state;
struct vm_area_struct;

#define SLUICE_MODULE_VERSION	"0.1.0"

/* ioctl commands by _IOC_NR; the table in chrdev.c is indexed by these. */
enum sluice_cmd_nr {
	SLUICE_NR_VERSION = _IOC_NR(SLUICE_IOC_VERSION),
	SLUICE_NR_STACK_CREATE = _IOC_NR(SLUICE_IOC_STACK_CREATE),
	SLUICE_NR_STACK_ATTACH = _IOC_NR(SLUICE_IOC_STACK_ATTACH),
	SLUICE_NR_STACK_WAKE = _IOC_NR(SLUICE_IOC_STACK_WAKE),
	SLUICE_NR_KRING_SETUP = _IOC_NR(SLUICE_IOC_KRING_SETUP),
	SLUICE_NR_KRING_KICK = _IOC_NR(SLUICE_IOC_KRING_KICK),
	SLUICE_NR_FILTER_ADD = _IOC_NR(SLUICE_IOC_FILTER_ADD),
	SLUICE_NR_FILTER_DEL = _IOC_NR(SLUICE_IOC_FILTER_DEL),
	SLUICE_NR_IFINFO = _IOC_NR(SLUICE_IOC_IFINFO),
	SLUICE_NR_NEIGH_RESOLVE = _IOC_NR(SLUICE_IOC_NEIGH_RESOLVE),
	SLUICE_NR_MCAST_JOIN = _IOC_NR(SLUICE_IOC_MCAST_JOIN),
	SLUICE_NR_MCAST_LEAVE = _IOC_NR(SLUICE_IOC_MCAST_LEAVE),
	SLUICE_NR_SOCK_FD = _IOC_NR(SLUICE_IOC_SOCK_FD),
	SLUICE_NR_SOCK_WAKE = _IOC_NR(SLUICE_IOC_SOCK_WAKE),
	SLUICE_NR_SOCK_INFO = _IOC_NR(SLUICE_IOC_SOCK_INFO),
	SLUICE_NR_HANDOFF = _IOC_NR(SLUICE_IOC_HANDOFF),
	SLUICE_NR_FILTER_FD = _IOC_NR(SLUICE_IOC_FILTER_FD),
	SLUICE_NR_SOCK_KEEP = _IOC_NR(SLUICE_IOC_SOCK_KEEP),
	SLUICE_NR_SOCK_PARK = _IOC_NR(SLUICE_IOC_SOCK_PARK),
	SLUICE_NR_SOCK_REUSE = _IOC_NR(SLUICE_IOC_SOCK_REUSE),
	SLUICE_NR_COUNT,
};

struct sluice_cmd_stats {
	atomic64_t calls;
	atomic64_t errors;
};

/* Which kind of file an ioctl is issued on. */
enum sluice_ioctl_on {
	SLUICE_ON_DEV,		/* /dev/sluice */
	SLUICE_ON_STACK,	/* a stack fd */
	SLUICE_ON_SOCK,		/* a socket fd (sockfd.c) */
};

/* Module-wide counters, shown in debugfs. */
struct sluice_stats {
	atomic_t open_files;
	atomic_t stacks;	/* listed by name */
	atomic_t regions;	/* allocated, listed or not */
	atomic64_t unknown_cmds;
	struct sluice_cmd_stats cmd[SLUICE_NR_COUNT];
};

extern struct sluice_stats sluice_stats;

const char *sluice_cmd_name(unsigned int nr);

/*
 * A stack: its region and everything the module knows about it.
 *
 * Lifetime: @ref counts the stack's files (one each), the mappings of its
 * region (one per vma) and its sysfs entry; the last put frees the region,
 * drops the netns and the module reference the stack holds.  @files, under
 * sluice_stacks_lock, counts the files; when it drops to zero the name is
 * unlisted and the sysfs and debugfs entries go.
 */
struct sluice_stack {
	struct kref ref;
	struct list_head node;		/* in the list of stacks, if listed */
	unsigned int files;		/* under sluice_stacks_lock */

	char name[SLUICE_NAME_MAX];
	/* sysfs and debugfs entry: NAME, or NAME@NETNS-INODE outside init_net */
	char dirname[SLUICE_NAME_MAX + 16];
	struct net *net;
	kuid_t creator;
	u32 ifindex;

	/*
	 * The region (region.c): region_size bytes of shmem pages, held for
	 * the stack's life; @region is their kernel mapping (vmap), usable
	 * in atomic context until the stack is freed.
	 */
	struct sluice_region *region;
	size_t region_size;
	struct file *region_file;	/* the shmem file that owns the pages */
	struct page **region_pages;	/* region_size >> PAGE_SHIFT, held */
	struct user_struct *locked_user; /* charged region_size, or NULL */
	atomic_t maps;			/* vmas mapping the region or rings */
	/* The buffer pool as created (validated), never read from the region. */
	u32 max_sockets;
	u32 n_bufs;
	u32 buf_size;
	u64 bufdata_off;

	/*
	 * The kring queue, or NULL: set once by SLUICE_IOC_KRING_SETUP (a
	 * release store, read with acquire), freed with the stack.
	 */
	struct sluice_kring_state *kring;

	wait_queue_head_t wq;		/* pollers */
	atomic_t wake_seq;		/* bumped by SLUICE_WAKE_SIGNAL */
	atomic64_t wakes;

	struct mutex lock;		/* @procs */
	struct list_head procs;		/* struct sluice_proc */

	struct kobject *kobj;		/* under sluice_stacks_lock */
	struct dentry *debugfs;		/* under sluice_stacks_lock */

	struct sluice_stack_filters *filters;	/* filter.c, made on first use */

	/* Socket fds (sockfd.c); the socket table as created (validated). */
	u64 sock_off;
	u32 sock_size;
	struct mutex sock_lock;		/* @sockfds and their file lists */
	struct xarray sockfds;		/* slot idx -> struct sluice_sock_slot */
	atomic_t sockfd_files;		/* socket fd files open */
	atomic_t ksock_released;	/* stored in the region's ksock_released */
	atomic64_t sock_wakes;		/* slots SOCK_WAKE named */
};

/*
 * A process that made @files of a stack's files, still open or mapped.  It
 * counts as attached while it is alive: the files may live on in children
 * or other processes after it exits.
 */
struct sluice_proc {
	struct list_head node;
	struct pid *pid;		/* thread group id */
	unsigned int files;
};

/* chrdev.c: the one ioctl dispatcher, for /dev/sluice and stack fds */
long sluice_ioctl_dispatch(struct file *file, unsigned int cmd,
			   unsigned long arg, enum sluice_ioctl_on on);
struct kobject *sluice_chrdev_kobj(void);

/* stack.c */
int sluice_ioc_stack_create(struct file *file, void __user *uarg);
int sluice_ioc_stack_attach(struct file *file, void __user *uarg);
int sluice_ioc_stack_wake(struct file *file, void __user *uarg);
void sluice_stack_get(struct sluice_stack *st);
void sluice_stack_put(struct sluice_stack *st);
bool sluice_proc_alive(const struct sluice_proc *p);
unsigned int sluice_stack_attached(struct sluice_stack *st);
int sluice_stack_ifname(struct sluice_stack *st, char *buf, size_t len);
struct sluice_stack *sluice_stack_of(struct file *file);
void sluice_stack_file_add(struct sluice_stack *st);
void sluice_stack_file_gone(struct sluice_stack *st);

/* filter.c: filters with port reservation */
int sluice_filter_init(void);
void sluice_filter_exit(void);
int sluice_ioc_filter_add(struct file *file, void __user *uarg);
int sluice_ioc_filter_del(struct file *file, void __user *uarg);
int sluice_ioc_filter_fd(struct file *file, void __user *uarg);
int sluice_ioc_handoff(struct file *file, void __user *uarg);
void sluice_stack_wake_all(struct sluice_stack *st);
int sluice_mem_charge(size_t bytes, struct user_struct **userp);
void sluice_mem_uncharge(struct user_struct *user, size_t bytes);

/* kring.c: the kring queue of a stack (rings, rx_handler, netdev notifier) */
int sluice_ioc_kring_setup(struct file *file, void __user *uarg);
int sluice_ioc_kring_kick(struct file *file, void __user *uarg);
int sluice_kring_mmap(struct sluice_stack *st, struct vm_area_struct *vma);
bool sluice_stack_has_kring(struct sluice_stack *st);
void sluice_kring_stop(struct sluice_stack *st);
void sluice_kring_free(struct sluice_stack *st);
void sluice_kring_show(struct seq_file *m, struct sluice_stack *st);
int sluice_kring_init(void);
void sluice_kring_exit(void);

/* filter.c: under rcu_read_lock(); the stack is valid until rcu_read_unlock(). */
struct sluice_stack *sluice_filter_match(struct net *net, int ifindex, u8 protocol,
					 __be32 saddr, __be16 sport,
					 __be32 daddr, __be16 dport,
					 const struct sk_buff *skb,
					 unsigned int thoff);
struct sluice_stack *sluice_filter_match6(struct net *net, int ifindex,
					  u8 protocol,
					  const struct in6_addr *saddr,
					  __be16 sport,
					  const struct in6_addr *daddr,
					  __be16 dport,
					  const struct sk_buff *skb,
					  unsigned int thoff);
struct sluice_stack *sluice_filter_match_err(struct net *net, int ifindex,
					     u8 protocol,
					     __be32 laddr, __be16 lport,
					     __be32 raddr, __be16 rport);
struct sluice_stack *sluice_filter_match6_err(struct net *net, int ifindex,
					      u8 protocol,
					      const struct in6_addr *laddr,
					      __be16 lport,
					      const struct in6_addr *raddr,
					      __be16 rport);
/* errfrag.c: under rcu_read_lock(), as sluice_filter_match(). */
struct sluice_stack *sluice_errfrag4(struct sk_buff *skb,
				     const struct iphdr *iph, unsigned int len);
struct sluice_stack *sluice_errfrag6(struct sk_buff *skb,
				     const struct ipv6hdr *ip6h,
				     unsigned int len);
void sluice_errfrag_init(void);
void sluice_filter_stack_release(struct sluice_stack *st); /* drop all of st's filters */
unsigned int sluice_filter_count(struct sluice_stack *st);
void sluice_filter_show(struct seq_file *m, struct sluice_stack *st);
void sluice_filter_debugfs_init(struct dentry *root);

/* netinfo.c: interface information and neighbour resolution */
int sluice_ioc_ifinfo(struct file *file, void __user *uarg);
int sluice_ioc_neigh_resolve(struct file *file, void __user *uarg);
void sluice_neigh_show(struct seq_file *m, struct sluice_stack *st);

/* ipoib.c: ib_client, IPoIB interfaces, SA path records (ipoib_addr.c: pure parts) */
int sluice_ipoib_init(void);
void sluice_ipoib_exit(void);
void sluice_ipoib_debugfs_init(struct dentry *root);
void sluice_ipoib_ifinfo(struct net_device *dev, struct sluice_ifinfo *info);
void sluice_ipoib_path(struct net_device *dev, struct sluice_neigh_resolve *res);

/* mcast.c: multicast groups joined for a stack */
int sluice_ioc_mcast_join(struct file *file, void __user *uarg);
int sluice_ioc_mcast_leave(struct file *file, void __user *uarg);
void sluice_mcast_stack_release(struct sluice_stack *st);
void sluice_mcast_show(struct seq_file *m, struct sluice_stack *st);

/* region.c: a stack's region (shmem pages, pinned, vmapped) */
int sluice_region_alloc(struct sluice_stack *st);
void sluice_region_free(struct sluice_stack *st);
int sluice_region_mmap(struct sluice_stack *st, struct vm_area_struct *vma);

/* layout.c: the region layout user space asks for */
bool sluice_name_ok(const char name[SLUICE_NAME_MAX]);
int sluice_layout_check(const struct sluice_stack_create *c, u64 max_size);
void sluice_layout_write(struct sluice_region *r,
			 const struct sluice_stack_create *c, u32 creator_uid);

/* sysfs.c: /sys/class/misc/sluice/stacks */
int sluice_sysfs_init(struct kobject *parent);
void sluice_sysfs_exit(void);
int sluice_sysfs_stack_add(struct sluice_stack *st);
void sluice_sysfs_stack_del(struct sluice_stack *st);

/* uarg.c: extensible ioctl argument copying */
int sluice_arg_in(void *karg, size_t ksize, size_t min_size,
		  const void __user *uarg);
int sluice_arg_out(void __user *uarg, void *karg, size_t ksize);

/* sockfd.c: socket fds */
void sluice_sockfd_stack_init(struct sluice_stack *st);
void sluice_sockfd_stack_free(struct sluice_stack *st);
int sluice_ioc_sock_fd(struct file *file, void __user *uarg);
int sluice_ioc_sock_wake(struct file *file, void __user *uarg);
int sluice_ioc_sock_info(struct file *file, void __user *uarg);
int sluice_ioc_sock_keep(struct file *file, void __user *uarg);
int sluice_ioc_sock_park(struct file *file, void __user *uarg);
int sluice_ioc_sock_reuse(struct file *file, void __user *uarg);
unsigned int sluice_sockfd_count(struct sluice_stack *st);
void sluice_sockfd_show(struct seq_file *m, struct sluice_stack *st);

/* chrdev.c */
int sluice_chrdev_init(void);
void sluice_chrdev_exit(void);

/* debugfs.c */
void sluice_debugfs_init(void);
void sluice_debugfs_exit(void);
void sluice_debugfs_stack_add(struct sluice_stack *st);
void sluice_debugfs_stack_del(struct sluice_stack *st);

#endif /* _SLUICE_INTERNAL_H */
