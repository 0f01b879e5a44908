// SPDX-License-Identifier: GPL-2.0-only
/*
 * What user space needs to know about the network to run a stack on a
 * device: the device itself (SLUICE_IOC_IFINFO) and the hardware address
 * of a next hop from the kernel's neighbour table (SLUICE_IOC_NEIGH_RESOLVE),
 * whose resolution (ARP) the kernel does.  On IPoIB both say more
 * (SLUICE_FEATURE_IPOIB): the ib device, port, P_Key, Q_Key... of the
 * interface, and the SA path record to the neighbour (ipoib.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/if_arp.h>
#include <linux/in.h>
#include <linux/inetdevice.h>
#include <linux/minmax.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <net/arp.h>
#include <net/neighbour.h>
#include <net/net_namespace.h>

#include "sluice.h"

/* Fill @info from @dev; under rcu_read_lock(). */
static void sluice_ifinfo_fill(struct sluice_ifinfo *info,
			       const struct net_device *dev)
{
	const struct in_ifaddr *ifa;
	const struct in_device *in_dev;
	unsigned int alen = min_t(unsigned int, dev->addr_len,
				  SLUICE_HWADDR_MAX);
	unsigned int n = 0;

	info->type = dev->type;
	info->mtu = READ_ONCE(dev->mtu);
	info->if_flags = dev_get_flags(dev);
	info->addr_len = alen;
	/*
	 * As rtnetlink reads them, but without RTNL: an address changing
	 * right now may be seen half old, half new.
	 */
	memcpy(info->hwaddr, dev->dev_addr, alen);
	memcpy(info->broadcast, dev->broadcast, alen);
	in_dev = __in_dev_get_rcu(dev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n == SLUICE_IFINFO_ADDRS)
				break;
			info->addr[n] = (__force __u32)ifa->ifa_local;
			info->prefix_len[n] = ifa->ifa_prefixlen;
			n++;
		}
	}
	info->n_addrs = n;
	strscpy_pad(info->name, dev->name, sizeof(info->name));
}

int sluice_ioc_ifinfo(struct file *file, void __user *uarg)
{
	struct net *net = current->nsproxy->net_ns;
	struct sluice_ifinfo info;
	struct net_device *dev;
	u32 size, ifindex;
	int ret;

	ret = sluice_arg_in(&info, sizeof(info),
			    offsetofend(struct sluice_ifinfo, name), uarg);
	if (ret)
		return ret;
	if (info.flags || info.reserved0)
		return -EINVAL;
	if (!info.ifindex || info.ifindex > INT_MAX)
		return -ENODEV;
	/* Every output field starts at zero: nothing stale is copied out. */
	size = info.size;
	ifindex = info.ifindex;
	memset(&info, 0, sizeof(info));
	info.size = size;
	info.ifindex = ifindex;

	rcu_read_lock();
	dev = dev_get_by_index_rcu(net, ifindex);
	if (dev)
		sluice_ifinfo_fill(&info, dev);
	rcu_read_unlock();
	if (!dev)
		return -ENODEV;
	/* IPoIB: what the ib device says, under RTNL (ipoib.c). */
	if (info.type == ARPHRD_INFINIBAND) {
		rtnl_lock();
		dev = __dev_get_by_index(net, ifindex);
		if (dev && dev->type == ARPHRD_INFINIBAND)
			sluice_ipoib_ifinfo(dev, &info);
		rtnl_unlock();
	}
	return sluice_arg_out(uarg, &info, sizeof(info));
}

/*
 * Look @addr up in the ARP table of @dev, creating the entry if needed,
 * and start (or restart) its resolution unless it is usable: the kernel
 * sends the requests and a later call sees the answer.
 */
static int sluice_neigh_lookup(struct net_device *dev,
			       struct sluice_neigh_resolve *res)
{
	__be32 key = (__force __be32)res->addr;
	struct neighbour *n;
	u8 state;

	n = __neigh_lookup_errno(&arp_tbl, &key, dev);
	if (IS_ERR(n))
		return PTR_ERR(n);
	state = READ_ONCE(n->nud_state);
	if (state & NUD_VALID) {
		res->state = SLUICE_NEIGH_RES_VALID;
		res->addr_len = min_t(unsigned int, dev->addr_len,
				      SLUICE_HWADDR_MAX);
		neigh_ha_snapshot((char *)res->hwaddr, n, dev);
	} else if (state & NUD_FAILED) {
		res->state = SLUICE_NEIGH_RES_FAILED;
	} else {
		res->state = SLUICE_NEIGH_RES_PENDING;
	}
	/*
	 * A stale entry is reconfirmed (DELAY, then PROBE), a new or failed
	 * one resolved again, as the kernel does on its own transmit; a
	 * reachable or permanent one is left alone.  No packet waits on it.
	 */
	neigh_event_send(n, NULL);
	neigh_release(n);
	return 0;
}

int sluice_ioc_neigh_resolve(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_neigh_resolve res;
	struct net_device *dev;
	u32 size, addr;
	int ret;

	ret = sluice_arg_in(&res, sizeof(res),
			    offsetofend(struct sluice_neigh_resolve, hwaddr),
			    uarg);
	if (ret)
		return ret;
	if (res.flags || memchr_inv(res.reserved, 0, sizeof(res.reserved)))
		return -EINVAL;
	if (ipv4_is_zeronet((__force __be32)res.addr))
		return -EINVAL;
	if (!st->ifindex || st->ifindex > INT_MAX)
		return -ENODEV;
	size = res.size;
	addr = res.addr;
	memset(&res, 0, sizeof(res));
	res.size = size;
	res.addr = addr;

	dev = dev_get_by_index(st->net, st->ifindex);
	if (!dev)
		return -ENODEV;
	ret = sluice_neigh_lookup(dev, &res);
	/* IPoIB: the path record to the neighbour's GID (ipoib.c). */
	if (!ret && res.state == SLUICE_NEIGH_RES_VALID &&
	    dev->type == ARPHRD_INFINIBAND)
		sluice_ipoib_path(dev, &res);
	dev_put(dev);
	if (ret)
		return ret;
	return sluice_arg_out(uarg, &res, sizeof(res));
}

/* The kernel's neighbour states, most telling bit first. */
static const char *sluice_nud_name(u8 state)
{
	if (state & NUD_PERMANENT)
		return "permanent";
	if (state & NUD_NOARP)
		return "noarp";
	if (state & NUD_REACHABLE)
		return "reachable";
	if (state & NUD_STALE)
		return "stale";
	if (state & NUD_DELAY)
		return "delay";
	if (state & NUD_PROBE)
		return "probe";
	if (state & NUD_INCOMPLETE)
		return "incomplete";
	if (state & NUD_FAILED)
		return "failed";
	return "none";
}

#define SLUICE_NEIGH_SHOW_MAX	256

struct sluice_neigh_dump {
	struct seq_file *m;
	const struct net *net;
	int ifindex;
	unsigned int shown;
	unsigned int more;
};

static void sluice_neigh_dump_one(struct neighbour *n, void *cookie)
{
	struct sluice_neigh_dump *d = cookie;
	char ha[MAX_ADDR_LEN];
	unsigned int len;

	if (n->dev->ifindex != d->ifindex || !net_eq(dev_net(n->dev), d->net))
		return;
	if (d->shown >= SLUICE_NEIGH_SHOW_MAX) {
		d->more++;
		return;
	}
	d->shown++;
	len = min_t(unsigned int, n->dev->addr_len, sizeof(ha));
	neigh_ha_snapshot(ha, n, n->dev);
	seq_printf(d->m, "    %pI4 %*phC %s\n", n->primary_key, len, ha,
		   sluice_nud_name(READ_ONCE(n->nud_state)));
}

/**
 * sluice_neigh_show - the neighbour cache a stack's traffic goes through
 * @m:		the stack's debugfs file
 * @st:		the stack
 *
 * The kernel's ARP table entries on the stack's device: NEIGH_RESOLVE
 * answers from them and the kring tx path sends through them.
 */
void sluice_neigh_show(struct seq_file *m, struct sluice_stack *st)
{
	struct sluice_neigh_dump d = {
		.m = m, .net = st->net, .ifindex = st->ifindex,
	};

	if (!st->ifindex)
		return;
	seq_puts(m, "  neighbours (kernel ARP table, this device):\n");
	neigh_for_each(&arp_tbl, sluice_neigh_dump_one, &d);
	if (d.more)
		seq_printf(m, "    ... %u more\n", d.more);
}
