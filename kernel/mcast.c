// SPDX-License-Identifier: GPL-2.0-only
/*
 * Multicast groups a stack joins (SLUICE_IOC_MCAST_JOIN / _LEAVE): each is
 * a kernel UDP socket made with the caller's credentials in the stack's
 * netns, a member of the group on the stack's device (IP_ADD_MEMBERSHIP),
 * so the kernel does what joining means there: IGMP reports, the device's
 * multicast filter and, on IPoIB, the ipoib driver's SA join (a QP in user
 * space cannot attach to a group on an underlay it does not own).  The
 * socket is never bound: it receives nothing; the packets reach the stack
 * through a filter on the group (FILTER_ADD with laddr = group) and the
 * kring rx_handler.
 *
 * The groups of every stack are on one list under one mutex: joins are
 * rare and at most SLUICE_MCAST_MAX a stack.  A stack's groups are left
 * when its last file goes (sluice_mcast_stack_release()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/if_arp.h>
#include <linux/in.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sockptr.h>
#include <net/sock.h>

#include "ipoib_addr.h"
#include "sluice.h"

struct sluice_mcast_group {
	struct list_head node;		/* in sluice_mcast_groups */
	struct sluice_stack *st;	/* no reference: left before it goes */
	__be32 group;
	int ifindex;
	struct socket *sock;		/* the membership */
};

static DEFINE_MUTEX(sluice_mcast_lock);
static LIST_HEAD(sluice_mcast_groups);

/* Under sluice_mcast_lock. */
static struct sluice_mcast_group *sluice_mcast_find(struct sluice_stack *st,
						    __be32 group,
						    unsigned int *count)
{
	struct sluice_mcast_group *g, *found = NULL;
	unsigned int n = 0;

	list_for_each_entry(g, &sluice_mcast_groups, node) {
		if (g->st != st)
			continue;
		n++;
		if (g->group == group)
			found = g;
	}
	if (count)
		*count = n;
	return found;
}

/*
 * The group's link address on the stack's device: Ethernet (RFC 1112) or
 * IPoIB (RFC 4391, the scope and P_Key of the device's broadcast); other
 * link types, and those types with another address length (a tun device
 * set to ARPHRD_INFINIBAND), have none (@addr_len 0).
 */
static int sluice_mcast_hwaddr(struct sluice_stack *st, struct sluice_mcast *m)
{
	u8 bcast[SLUICE_IPOIB_ALEN];
	struct net_device *dev;
	bool eth, ipoib;
	int ret = 0;

	rtnl_lock();
	dev = __dev_get_by_index(st->net, st->ifindex);
	if (!dev) {
		rtnl_unlock();
		return -ENODEV;
	}
	eth = dev->type == ARPHRD_ETHER && dev->addr_len == ETH_ALEN;
	ipoib = dev->type == ARPHRD_INFINIBAND &&
		dev->addr_len == SLUICE_IPOIB_ALEN;
	if (ipoib)
		memcpy(bcast, dev->broadcast, sizeof(bcast));
	rtnl_unlock();

	if (eth) {
		ret = sluice_eth_mcast_hwaddr((const u8 *)&m->group, m->hwaddr);
		m->addr_len = ETH_ALEN;
	} else if (ipoib) {
		ret = sluice_ipoib_mcast_hwaddr((const u8 *)&m->group, bcast,
						m->hwaddr);
		m->addr_len = SLUICE_IPOIB_ALEN;
	}
	return ret;
}

/* A socket of the caller's in the stack's netns, member of @group on @ifindex. */
static int sluice_mcast_sock(struct sluice_stack *st, __be32 group,
			     int ifindex, struct socket **sockp)
{
	struct ip_mreqn mreq = {
		.imr_multiaddr.s_addr = group,
		.imr_ifindex = ifindex,
	};
	struct socket *sock;
	int ret;

	/* kern = 0: the LSM hooks see the caller, as for its own socket. */
	ret = __sock_create(st->net, PF_INET, SOCK_DGRAM, IPPROTO_UDP, &sock, 0);
	if (ret)
		return ret;
	ret = sock->ops->setsockopt(sock, SOL_IP, IP_ADD_MEMBERSHIP,
				    KERNEL_SOCKPTR(&mreq), sizeof(mreq));
	if (ret) {
		sock_release(sock);
		return ret;
	}
	*sockp = sock;
	return 0;
}

static int sluice_mcast_arg(struct sluice_mcast *m, void __user *uarg)
{
	int ret;

	ret = sluice_arg_in(m, sizeof(*m), offsetofend(struct sluice_mcast,
						       hwaddr), uarg);
	if (ret)
		return ret;
	if (m->flags || memchr_inv(m->reserved, 0, sizeof(m->reserved)))
		return -EINVAL;
	if (!ipv4_is_multicast((__force __be32)m->group))
		return -EINVAL;
	/* Outputs start at zero: nothing of the caller's is echoed. */
	m->addr_len = 0;
	memset(m->hwaddr, 0, sizeof(m->hwaddr));
	return 0;
}

int sluice_ioc_mcast_join(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_mcast_group *g;
	struct sluice_mcast m;
	unsigned int count;
	int ret;

	ret = sluice_mcast_arg(&m, uarg);
	if (ret)
		return ret;
	if (!st->ifindex || st->ifindex > INT_MAX)
		return -ENODEV;
	ret = sluice_mcast_hwaddr(st, &m);
	if (ret)
		return ret;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->st = st;
	g->group = (__force __be32)m.group;
	g->ifindex = st->ifindex;

	mutex_lock(&sluice_mcast_lock);
	if (sluice_mcast_find(st, g->group, &count)) {
		ret = -EALREADY;
		goto err_unlock;
	}
	if (count >= SLUICE_MCAST_MAX) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	ret = sluice_mcast_sock(st, g->group, g->ifindex, &g->sock);
	if (ret)
		goto err_unlock;
	list_add_tail(&g->node, &sluice_mcast_groups);
	mutex_unlock(&sluice_mcast_lock);

	ret = sluice_arg_out(uarg, &m, sizeof(m));
	if (ret) {
		/* The caller never learnt it joined: leave again. */
		mutex_lock(&sluice_mcast_lock);
		list_del(&g->node);
		mutex_unlock(&sluice_mcast_lock);
		sock_release(g->sock);
		kfree(g);
	}
	return ret;

err_unlock:
	mutex_unlock(&sluice_mcast_lock);
	kfree(g);
	return ret;
}

int sluice_ioc_mcast_leave(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_mcast_group *g;
	struct sluice_mcast m;
	int ret;

	ret = sluice_mcast_arg(&m, uarg);
	if (ret)
		return ret;
	mutex_lock(&sluice_mcast_lock);
	g = sluice_mcast_find(st, (__force __be32)m.group, NULL);
	if (g)
		list_del(&g->node);
	mutex_unlock(&sluice_mcast_lock);
	if (!g)
		return -ENOENT;
	/* Closing the socket leaves the group (ip_mc_drop_socket()). */
	sock_release(g->sock);
	kfree(g);
	/* The device is the stack's: its link address as for JOIN, if it is still there. */
	if (sluice_mcast_hwaddr(st, &m))
		m.addr_len = 0;
	return sluice_arg_out(uarg, &m, sizeof(m));
}

/* The stack's last file went: leave every group it joined. */
void sluice_mcast_stack_release(struct sluice_stack *st)
{
	struct sluice_mcast_group *g, *tmp;
	LIST_HEAD(gone);

	mutex_lock(&sluice_mcast_lock);
	list_for_each_entry_safe(g, tmp, &sluice_mcast_groups, node)
		if (g->st == st)
			list_move_tail(&g->node, &gone);
	mutex_unlock(&sluice_mcast_lock);
	list_for_each_entry_safe(g, tmp, &gone, node) {
		sock_release(g->sock);
		kfree(g);
	}
}

/* The stack's groups, for its debugfs dump. */
void sluice_mcast_show(struct seq_file *m, struct sluice_stack *st)
{
	struct sluice_mcast_group *g;
	unsigned int count;

	mutex_lock(&sluice_mcast_lock);
	sluice_mcast_find(st, 0, &count);
	seq_printf(m, "mcast %u\n", count);
	list_for_each_entry(g, &sluice_mcast_groups, node)
		if (g->st == st)
			seq_printf(m, "mcast_group %pI4 ifindex %d\n", &g->group,
				   g->ifindex);
	mutex_unlock(&sluice_mcast_lock);
}
