// SPDX-License-Identifier: GPL-2.0-only
/*
 * InfiniBand: the module as an ib_client (which ib devices exist), the IPoIB
 * interfaces among the network devices (IFINFO's ib_* fields) and SA path
 * records for their neighbours (NEIGH_RESOLVE), asked asynchronously and
 * cached with their failures.  Everything computed from bytes alone lives
 * in ipoib_addr.c, which the host unit test runs: addresses, encodings,
 * the IFINFO and path fills, a cache entry's state machine.
 *
 * Matching a netdev to its (ib_device, port): the ipoib driver gives its
 * interfaces (and their P_Key children) the HCA's parent device
 * (SET_NETDEV_DEV(dev, ca->dev.parent)) and dev_port = port - 1; an
 * ARPHRD_INFINIBAND netdev with a 20-byte address whose parent is an ib
 * device's parent, on a port of InfiniBand link layer, is that port's.
 *
 * Locking: sluice_ib_lock (a mutex) guards the list of ib devices; the
 * client's remove takes it, so an ib_device found under it stays valid
 * until it is dropped.  RTNL, when held, is taken before it, never after.
 * sluice_path_lock (a spinlock, taken with interrupts off: SA callbacks
 * run from the MAD layer) guards the path cache.
 *
 * Lifetime of a path entry: on the list while cached; a query in flight
 * holds it (@querying) and its callback, which always comes (also when
 * cancelled), frees an entry that was taken off the list meanwhile
 * (@dead).  Unload: ib_unregister_client() removes every device (which
 * cancels its queries), then ib_sa_unregister_client() waits for every
 * callback.
 *
 * Device removal: the ipoib driver unregisters its netdevs when their ib
 * device goes, which kring.c's netdev notifier turns into DEV_GONE for the
 * stacks on them; this file drops the device's cached paths and cancels
 * its queries.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <net/netlink.h>
#include <net/rtnetlink.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

#include "ipoib_addr.h"
#include "sluice.h"

static unsigned int path_ttl = 300;
module_param(path_ttl, uint, 0644);
MODULE_PARM_DESC(path_ttl, "Seconds an SA path record stays cached (default 300)");

static unsigned int path_fail_ttl = 5;
module_param(path_fail_ttl, uint, 0644);
MODULE_PARM_DESC(path_fail_ttl, "Seconds a failed path query is remembered (default 5)");

/* Path entries at most, over all devices; the least recently used go. */
#define SLUICE_PATH_MAX		4096
/* How long the SA may take to answer, as the ipoib driver allows. */
#define SLUICE_PATH_TIMEOUT_MS	1000

/* Broadcast groups' last Q_Keys remembered a device (see below). */
#define SLUICE_QKEY_SLOTS	16

/* One per ib device the client was told about. */
struct sluice_ibdev {
	struct list_head node;		/* in sluice_ib_devs */
	struct ib_device *ibdev;
	/* The last nonzero Q_Key of each broadcast group; sluice_ib_lock */
	struct {
		u32 port;
		u32 qkey;
		u8 mgid[16];
	} qkeys[SLUICE_QKEY_SLOTS];
	unsigned int nqkeys, next_qkey;
};

struct sluice_path {
	struct list_head node;		/* in sluice_paths, LRU order */
	/* The key: the device, the interface's port, P_Key and GID, the peer's GID */
	const struct ib_device *ibdev;
	u32 port;
	u16 pkey;
	u8 sgid[16];
	u8 dgid[16];

	struct sluice_path_state s;	/* state, record, expiry (jiffies) */
	bool dead;			/* off the list; the callback frees it */
	u64 lookups;
	u64 queries;
	struct ib_sa_query *query;
	int query_id;
};

static DEFINE_MUTEX(sluice_ib_lock);
static LIST_HEAD(sluice_ib_devs);
static atomic64_t sluice_ib_adds = ATOMIC64_INIT(0);
static atomic64_t sluice_ib_removes = ATOMIC64_INIT(0);

static DEFINE_SPINLOCK(sluice_path_lock);
static LIST_HEAD(sluice_paths);
static unsigned int sluice_path_count;

static struct ib_sa_client sluice_sa_client;

/*
 * The hardware device and dev_port that name @dev's port: @dev's own, or
 * for a P_Key child (ib0.8001, ipoib_vlan_add()) its parent's.  ipoib sets
 * the device parent and dev_port on a parent interface only
 * (ipoib_parent_init(); a child's ipoib_child_init() sets neither) and
 * gives a child's parent as its iflink (ipoib_get_iflink()).  The parent
 * is looked up under RCU: some callers do not hold RTNL.
 */
static bool sluice_ipoib_port_of(const struct net_device *dev,
				 const struct device **hw, u16 *dev_port)
{
	const struct rtnl_link_ops *ops = dev->rtnl_link_ops;
	const struct net_device *parent;
	int iflink;

	*hw = dev->dev.parent;
	*dev_port = dev->dev_port;
	if (*hw || !ops || strcmp(ops->kind, "ipoib"))
		return *hw;
	iflink = dev_get_iflink(dev);
	if (iflink == dev->ifindex)
		return false;
	rcu_read_lock();
	parent = dev_get_by_index_rcu(dev_net(dev), iflink);
	if (parent && parent->type == ARPHRD_INFINIBAND) {
		*hw = parent->dev.parent;
		*dev_port = parent->dev_port;
	}
	rcu_read_unlock();
	return *hw;
}

/*
 * The ib device and port of an IPoIB netdev (a P_Key child's: its
 * parent's), or NULL.  Under sluice_ib_lock.
 */
static struct ib_device *sluice_ib_match(const struct net_device *dev,
					 u32 *port)
{
	const struct device *hw;
	struct sluice_ibdev *e;
	u16 dev_port;
	u32 p;

	lockdep_assert_held(&sluice_ib_lock);
	if (dev->type != ARPHRD_INFINIBAND ||
	    dev->addr_len != SLUICE_IPOIB_ALEN ||
	    !sluice_ipoib_port_of(dev, &hw, &dev_port))
		return NULL;
	p = (u32)dev_port + 1;
	list_for_each_entry(e, &sluice_ib_devs, node) {
		if (e->ibdev->dev.parent != hw ||
		    !rdma_is_port_valid(e->ibdev, p) ||
		    !rdma_protocol_ib(e->ibdev, p))
			continue;
		*port = p;
		return e->ibdev;
	}
	return NULL;
}

/*
 * Connected mode, as the ipoib driver itself reports it to rtnetlink
 * (IFLA_IPOIB_MODE of its link ops' fill_info): the one interface it
 * offers besides sysfs.  Under RTNL, which keeps the link ops in place.
 */
static bool sluice_ipoib_connected(const struct net_device *dev)
{
	const struct rtnl_link_ops *ops = dev->rtnl_link_ops;
	const struct nlattr *a;
	struct sk_buff *skb;
	bool cm = false;

	ASSERT_RTNL();
	if (!ops || !ops->fill_info || strcmp(ops->kind, "ipoib"))
		return false;
	skb = alloc_skb(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return false;
	if (!ops->fill_info(skb, dev)) {
		a = nla_find((const struct nlattr *)skb->data, skb->len,
			     IFLA_IPOIB_MODE);
		cm = a && nla_len(a) >= sizeof(u16) &&
		     nla_get_u16(a) == IPOIB_MODE_CONNECTED;
	}
	kfree_skb(skb);
	return cm;
}

/*
 * Enhanced IPoIB, as the interface itself was made, not as its device
 * could: ipoib asks the device's driver for the netdev's insides
 * (ipoib_intf_init(), rdma_init_netdev()) and, when the driver has none
 * to give (no rdma_netdev_get_params, or mlx5 firmware without
 * ipoib_enhanced_offloads: mlx5_rdma_rn_get_params() says -EOPNOTSUPP),
 * fills the struct rdma_netdev at netdev_priv() itself with its own
 * datagram path and no set_id.  The driver's (mlx5: mlx5_rdma_setup_rn())
 * sets set_id, which ipoib then calls (ipoib_ib_dev_open_default()).
 * Only then do user QPs with the interface's source QPN reach the wire
 * as the interface.  Both ipoib's parents and its P_Key children carry
 * its link ops (kind "ipoib"), which make netdev_priv() an rdma_netdev.
 */
static bool sluice_ipoib_enhanced(const struct net_device *dev)
{
	const struct rtnl_link_ops *ops = dev->rtnl_link_ops;
	const struct rdma_netdev *rn;

	if (!ops || strcmp(ops->kind, "ipoib"))
		return false;
	rn = netdev_priv(dev);
	return rn->set_id;
}

/*
 * The last nonzero Q_Key ib_core's record of a broadcast group had, and
 * remembering one.  While ipoib joins the group again (a client
 * reregister, an SM change: ipoib's light flush), ib_sa holds a fresh
 * group whose record is zero until the SA answers, and ipoib's QP keeps
 * the Q_Key of its last join (ipoib_mcast_join_finish() sets priv->qkey
 * and the QP's only from an answer): that one is what the interface is
 * sending and receiving with in that window, not the default 0x0B1B.
 * Under sluice_ib_lock.
 */
static bool sluice_qkey_recall(struct sluice_ibdev *e, u32 port,
			       const u8 *mgid, u32 *qkey)
{
	unsigned int i;

	for (i = 0; e && i < e->nqkeys; i++) {
		if (e->qkeys[i].port == port &&
		    !memcmp(e->qkeys[i].mgid, mgid, 16)) {
			*qkey = e->qkeys[i].qkey;
			return true;
		}
	}
	return false;
}

static void sluice_qkey_remember(struct sluice_ibdev *e, u32 port,
				 const u8 *mgid, u32 qkey)
{
	unsigned int i;

	if (!e)
		return;
	for (i = 0; i < e->nqkeys; i++)
		if (e->qkeys[i].port == port &&
		    !memcmp(e->qkeys[i].mgid, mgid, 16))
			break;
	if (i == e->nqkeys) {
		/* A new group: a free slot, else the oldest one's */
		if (e->nqkeys < SLUICE_QKEY_SLOTS) {
			i = e->nqkeys++;
		} else {
			i = e->next_qkey;
			e->next_qkey = (e->next_qkey + 1) % SLUICE_QKEY_SLOTS;
		}
		e->qkeys[i].port = port;
		memcpy(e->qkeys[i].mgid, mgid, 16);
	}
	e->qkeys[i].qkey = qkey;
}

static struct ib_client sluice_ib_client;

/**
 * sluice_ipoib_ifinfo - the ib_* fields of IFINFO for @dev
 * @dev:	the interface, under RTNL
 * @info:	the answer; left alone unless @dev is IPoIB on a known device
 *
 * P_Key from the broadcast address and its index from the port's cached
 * table, UD MTU from the port's active MTU or the broadcast group's if
 * smaller, Q_Key from the broadcast group's MCMemberRecord if ib_core
 * holds one with a Q_Key (the ipoib driver joined it), else the last
 * such record's (a rejoin under way), both with SLUICE_IB_QKEY_SA, else
 * the default 0x0B1B without it.
 */
void sluice_ipoib_ifinfo(struct net_device *dev, struct sluice_ifinfo *info)
{
	struct sluice_ipoib_desc d = { };
	struct ib_sa_mcmember_rec mc;
	struct sluice_ibdev *e;
	struct ib_port_attr attr;
	struct ib_device *ibdev;
	union ib_gid mgid;
	u16 idx;
	u32 port;

	ASSERT_RTNL();
	mutex_lock(&sluice_ib_lock);
	ibdev = sluice_ib_match(dev, &port);
	if (!ibdev)
		goto out;
	d.ib_dev = dev_name(&ibdev->dev);
	d.hwaddr = dev->dev_addr;
	d.broadcast = dev->broadcast;
	d.addr_len = dev->addr_len;
	d.port = port;
	d.pkey = sluice_ipoib_bcast_pkey(dev->broadcast);
	if (!ib_find_cached_pkey(ibdev, port, d.pkey, &idx))
		d.pkey_index = idx;
	else
		d.pkey_absent = true;
	if (!ib_query_port(ibdev, port, &attr))
		d.active_mtu = attr.active_mtu;
	sluice_ipoib_gid(dev->broadcast, mgid.raw);
	e = ib_get_client_data(ibdev, &sluice_ib_client);
	if (!ib_sa_get_mcmember_rec(ibdev, port, &mgid, &mc) && mc.qkey) {
		d.qkey = be32_to_cpu(mc.qkey);
		d.qkey_sa = true;
		d.group_mtu = mc.mtu;
		sluice_qkey_remember(e, port, mgid.raw, d.qkey);
	} else if (sluice_qkey_recall(e, port, mgid.raw, &d.qkey)) {
		d.qkey_sa = true;
	}
	d.connected = sluice_ipoib_connected(dev);
	/*
	 * Enhanced IPoIB: the interface is the driver's netdev, not ipoib's
	 * own (the device offering one is not enough: see above).
	 */
	d.source_qpn = ibdev->ops.rdma_netdev_get_params && sluice_ipoib_enhanced(dev);
	d.ud_csum = !!(ibdev->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM);
	d.flow_steer = !!(ibdev->attrs.device_cap_flags &
			  IB_DEVICE_MANAGED_FLOW_STEERING);
	d.rss = ibdev->attrs.rss_caps.max_rwq_indirection_tables > 0;
	sluice_ipoib_fill(info, &d);
out:
	mutex_unlock(&sluice_ib_lock);
}

/* Under sluice_path_lock. */
static struct sluice_path *sluice_path_find(const struct ib_device *ibdev,
					    u32 port, u16 pkey,
					    const u8 *sgid, const u8 *dgid)
{
	struct sluice_path *p;

	list_for_each_entry(p, &sluice_paths, node)
		if (p->ibdev == ibdev && p->port == port && p->pkey == pkey &&
		    !memcmp(p->sgid, sgid, 16) && !memcmp(p->dgid, dgid, 16))
			return p;
	return NULL;
}

/* Take @p off the list; free it unless a query still holds it.  Under the lock. */
static void sluice_path_unlist(struct sluice_path *p)
{
	list_del(&p->node);
	sluice_path_count--;
	if (p->s.querying)
		p->dead = true;
	else
		kfree(p);
}

static void sluice_path_done(int status, struct sa_path_rec *rec,
			     unsigned int num_prs, void *context)
{
	struct sluice_path_desc d = { };
	struct sluice_path *p = context;
	unsigned long flags;
	bool got = false;

	if (!status && rec && num_prs >= 1 && rec->rec_type == SA_PATH_REC_TYPE_IB) {
		memcpy(d.dgid, rec->dgid.raw, 16);
		memcpy(d.sgid, rec->sgid.raw, 16);
		d.dlid = (u16)be32_to_cpu(sa_path_get_dlid(rec));
		d.sl = rec->sl;
		d.rate = rec->rate;
		d.mtu = rec->mtu;
		d.hop_limit = rec->hop_limit;
		d.traffic_class = rec->traffic_class;
		d.flow_label = be32_to_cpu(rec->flow_label);
		got = true;
	}
	spin_lock_irqsave(&sluice_path_lock, flags);
	p->query = NULL;
	if (p->dead) {
		spin_unlock_irqrestore(&sluice_path_lock, flags);
		kfree(p);
		return;
	}
	sluice_path_answer(&p->s, status, got ? &d : NULL, jiffies,
			   READ_ONCE(path_ttl) * HZ,
			   READ_ONCE(path_fail_ttl) * HZ);
	spin_unlock_irqrestore(&sluice_path_lock, flags);
}

/*
 * The SA callback's count of records is an int up to Linux 6.2 and an
 * unsigned int from 6.3: the callback passed is the one whose type
 * ib_sa_path_rec_get() of the headers built against takes.
 */
static void __maybe_unused sluice_path_done_int(int status,
						struct sa_path_rec *rec,
						int num_prs, void *context)
{
	sluice_path_done(status, rec, num_prs > 0 ? num_prs : 0, context);
}

static void __maybe_unused sluice_path_done_uint(int status,
						 struct sa_path_rec *rec,
						 unsigned int num_prs,
						 void *context)
{
	sluice_path_done(status, rec, num_prs, context);
}

/* ib_sa_path_rec_get() as declared up to Linux 6.2. */
int ib_sa_path_rec_get_int_prs(struct ib_sa_client *client,
			       struct ib_device *device, u32 port_num,
			       struct sa_path_rec *rec,
			       ib_sa_comp_mask comp_mask,
			       unsigned long timeout_ms, gfp_t gfp_mask,
			       void (*callback)(int status,
						struct sa_path_rec *resp,
						int num_prs, void *context),
			       void *context, struct ib_sa_query **query);
#define SLUICE_PATH_DONE						\
	__builtin_choose_expr(__same_type(&ib_sa_path_rec_get,		\
					  &ib_sa_path_rec_get_int_prs),	\
			      sluice_path_done_int, sluice_path_done_uint)

/*
 * Ask the SA for @p's path, in the broadcast group's traffic class
 * @tclass (as ipoib's path_rec_start() does: the query's comp_mask names
 * TRAFFIC_CLASS, so a 0 there asks for class 0, which the subnet may not
 * route).  Under sluice_ib_lock, which keeps @ibdev.
 */
static void sluice_path_query(struct sluice_path *p, struct ib_device *ibdev,
			      u8 tclass)
{
	struct sa_path_rec rec = { };
	struct ib_sa_query *query;
	int id;

	rec.traffic_class = tclass;
	memcpy(rec.dgid.raw, p->dgid, 16);
	memcpy(rec.sgid.raw, p->sgid, 16);
	rec.pkey = cpu_to_be16(p->pkey);
	rec.numb_path = 1;
	rec.reversible = 1;
	rec.rec_type = SA_PATH_REC_TYPE_IB;
	id = ib_sa_path_rec_get(&sluice_sa_client, ibdev, p->port, &rec,
				IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID |
				IB_SA_PATH_REC_NUMB_PATH |
				IB_SA_PATH_REC_TRAFFIC_CLASS |
				IB_SA_PATH_REC_PKEY,
				SLUICE_PATH_TIMEOUT_MS, GFP_KERNEL,
				SLUICE_PATH_DONE, p, &query);
	spin_lock_irq(&sluice_path_lock);
	if (id < 0) {
		/* No callback will come: the entry is ours again. */
		if (p->dead) {
			spin_unlock_irq(&sluice_path_lock);
			kfree(p);
			return;
		}
		sluice_path_answer(&p->s, id, NULL, jiffies,
				   READ_ONCE(path_ttl) * HZ,
				   READ_ONCE(path_fail_ttl) * HZ);
	} else if (p->s.querying) {
		/* Not answered yet: remember it for a cancel. */
		p->query = query;
		p->query_id = id;
	}
	spin_unlock_irq(&sluice_path_lock);
}

/* Make room for one more entry; under the lock.  False if all are busy. */
static bool sluice_path_evict(void)
{
	struct sluice_path *p;

	if (sluice_path_count < SLUICE_PATH_MAX)
		return true;
	list_for_each_entry(p, &sluice_paths, node) {
		if (!p->s.querying) {
			sluice_path_unlist(p);
			return true;
		}
	}
	return false;
}

/**
 * sluice_ipoib_path - the path fields of NEIGH_RESOLVE
 * @dev:	the stack's device (a reference held)
 * @res:	the answer, whose @hwaddr is the neighbour's, VALID
 *
 * For an IPoIB @dev: the neighbour's QPN and GID, and the SA path record
 * from the interface's GID to it as cached (VALID), asked for (PENDING)
 * or failed (FAILED); a stale or failed entry is asked for again.  Other
 * devices: nothing (path_state 0).
 */
void sluice_ipoib_path(struct net_device *dev, struct sluice_neigh_resolve *res)
{
	u8 sgid[16], dgid[16], hw[SLUICE_IPOIB_ALEN], bc[SLUICE_IPOIB_ALEN];
	struct sluice_path *p, *fresh;
	struct ib_device *ibdev;
	bool start = false;
	u16 pkey;
	u32 port;

	if (res->addr_len != SLUICE_IPOIB_ALEN)
		return;
	/* The device's addresses as one snapshot: they change under RTNL. */
	rtnl_lock();
	memcpy(hw, dev->dev_addr, sizeof(hw));
	memcpy(bc, dev->broadcast, sizeof(bc));
	rtnl_unlock();
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	mutex_lock(&sluice_ib_lock);
	ibdev = sluice_ib_match(dev, &port);
	if (!ibdev)
		goto out;
	sluice_ipoib_gid(hw, sgid);
	sluice_ipoib_gid(res->hwaddr, dgid);
	pkey = sluice_ipoib_bcast_pkey(bc);
	res->qpn = sluice_ipoib_qpn(res->hwaddr);
	memcpy(res->dgid, dgid, 16);
	memcpy(res->sgid, sgid, 16);

	spin_lock_irq(&sluice_path_lock);
	p = sluice_path_find(ibdev, port, pkey, sgid, dgid);
	if (!p) {
		if (!fresh || !sluice_path_evict()) {
			spin_unlock_irq(&sluice_path_lock);
			res->path_state = SLUICE_NEIGH_RES_FAILED;
			goto out;
		}
		p = fresh;
		fresh = NULL;
		p->ibdev = ibdev;
		p->port = port;
		p->pkey = pkey;
		memcpy(p->sgid, sgid, 16);
		memcpy(p->dgid, dgid, 16);
		sluice_path_init(&p->s, jiffies);
		list_add_tail(&p->node, &sluice_paths);
		sluice_path_count++;
	} else {
		list_move_tail(&p->node, &sluice_paths);
	}
	p->lookups++;
	/* A stale record is still shown while it is refreshed. */
	start = sluice_path_lookup(&p->s, jiffies);
	if (start)
		p->queries++;
	res->path_state = p->s.state;
	if (p->s.state == SLUICE_NEIGH_RES_VALID)
		sluice_path_fill(res, &p->s.rec);
	spin_unlock_irq(&sluice_path_lock);
	if (start) {
		struct ib_sa_mcmember_rec mc;
		union ib_gid mgid;
		u8 tclass = 0;

		sluice_ipoib_gid(bc, mgid.raw);
		if (!ib_sa_get_mcmember_rec(ibdev, port, &mgid, &mc))
			tclass = mc.traffic_class;
		sluice_path_query(p, ibdev, tclass);
	}
out:
	mutex_unlock(&sluice_ib_lock);
	kfree(fresh);
}

/* Drop @ibdev's paths, cancelling their queries.  Under sluice_ib_lock. */
static void sluice_path_drop_dev(const struct ib_device *ibdev)
{
	struct sluice_path *p, *tmp;
	struct ib_sa_query *query;
	int id;

again:
	spin_lock_irq(&sluice_path_lock);
	list_for_each_entry_safe(p, tmp, &sluice_paths, node) {
		if (ibdev && p->ibdev != ibdev)
			continue;
		query = p->query;
		id = p->query_id;
		p->query = NULL;
		sluice_path_unlist(p);
		if (query) {
			/*
			 * Cancelling takes the SA's locks: outside ours.  The
			 * callback (-EINTR) frees the entry, marked dead.
			 */
			spin_unlock_irq(&sluice_path_lock);
			ib_sa_cancel_query(id, query);
			goto again;
		}
	}
	spin_unlock_irq(&sluice_path_lock);
}

static int sluice_ib_add(struct ib_device *ibdev)
{
	struct sluice_ibdev *e;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->ibdev = ibdev;
	mutex_lock(&sluice_ib_lock);
	list_add_tail(&e->node, &sluice_ib_devs);
	mutex_unlock(&sluice_ib_lock);
	ib_set_client_data(ibdev, &sluice_ib_client, e);
	atomic64_inc(&sluice_ib_adds);
	return 0;
}

static void sluice_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct sluice_ibdev *e = client_data;

	mutex_lock(&sluice_ib_lock);
	list_del(&e->node);
	sluice_path_drop_dev(ibdev);
	mutex_unlock(&sluice_ib_lock);
	atomic64_inc(&sluice_ib_removes);
	kfree(e);
}

static struct ib_client sluice_ib_client = {
	.name	= "sluice",
	.add	= sluice_ib_add,
	.remove	= sluice_ib_remove,
};

static const char *sluice_link_layer_name(enum rdma_link_layer ll)
{
	switch (ll) {
	case IB_LINK_LAYER_INFINIBAND:
		return "infiniband";
	case IB_LINK_LAYER_ETHERNET:
		return "ethernet";
	default:
		return "unspecified";
	}
}

/* debugfs "ib": the ib devices the client knows, their ports and caps. */
static int sluice_ib_show(struct seq_file *m, void *unused)
{
	struct ib_port_attr attr;
	struct sluice_ibdev *e;
	u32 port;

	mutex_lock(&sluice_ib_lock);
	seq_printf(m, "adds %lld removes %lld\n",
		   (long long)atomic64_read(&sluice_ib_adds),
		   (long long)atomic64_read(&sluice_ib_removes));
	list_for_each_entry(e, &sluice_ib_devs, node) {
		struct ib_device *ibdev = e->ibdev;

		seq_printf(m, "ibdev %s parent %s ports %u source_qpn %d ud_csum %d flow_steer %d rss %d\n",
			   dev_name(&ibdev->dev),
			   ibdev->dev.parent ? dev_name(ibdev->dev.parent) : "-",
			   rdma_end_port(ibdev),
			   !!ibdev->ops.rdma_netdev_get_params,
			   !!(ibdev->attrs.device_cap_flags & IB_DEVICE_UD_IP_CSUM),
			   !!(ibdev->attrs.device_cap_flags &
			      IB_DEVICE_MANAGED_FLOW_STEERING),
			   ibdev->attrs.rss_caps.max_rwq_indirection_tables > 0);
		rdma_for_each_port(ibdev, port) {
			seq_printf(m, "  port %u link_layer %s", port,
				   sluice_link_layer_name(rdma_port_get_link_layer(ibdev, port)));
			if (!ib_query_port(ibdev, port, &attr))
				seq_printf(m, " state %u active_mtu %u lid 0x%x sm_lid 0x%x",
					   attr.state,
					   sluice_ib_mtu_bytes(attr.active_mtu),
					   (u32)attr.lid, (u32)attr.sm_lid);
			seq_puts(m, "\n");
		}
	}
	mutex_unlock(&sluice_ib_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sluice_ib);

static const char *sluice_path_state_name(u32 state)
{
	switch (state) {
	case SLUICE_NEIGH_RES_VALID:
		return "valid";
	case SLUICE_NEIGH_RES_PENDING:
		return "pending";
	default:
		return "failed";
	}
}

/* debugfs "ib_paths": the path cache, failures included. */
static int sluice_ib_paths_show(struct seq_file *m, void *unused)
{
	struct sluice_path *p;
	unsigned long now;

	mutex_lock(&sluice_ib_lock);
	spin_lock_irq(&sluice_path_lock);
	now = jiffies;
	seq_printf(m, "paths %u max %u\n", sluice_path_count, SLUICE_PATH_MAX);
	list_for_each_entry(p, &sluice_paths, node) {
		seq_printf(m, "%s port %u pkey 0x%04x sgid %pI6 dgid %pI6 %s",
			   dev_name(&p->ibdev->dev), p->port, p->pkey, p->sgid,
			   p->dgid, sluice_path_state_name(p->s.state));
		if (p->s.state == SLUICE_NEIGH_RES_VALID)
			seq_printf(m, " dlid 0x%x sl %u rate %u mbps %u mtu %u",
				   p->s.rec.dlid, p->s.rec.sl, p->s.rec.rate,
				   sluice_ib_rate_mbps(p->s.rec.rate),
				   sluice_ib_mtu_bytes(p->s.rec.mtu));
		else if (p->s.status)
			seq_printf(m, " error %d", p->s.status);
		seq_printf(m, " querying %d lookups %llu queries %llu expires_in_ms %ld\n",
			   p->s.querying, p->lookups, p->queries,
			   time_after(p->s.expires, now) ?
			   (long)jiffies_to_msecs(p->s.expires - now) : 0L);
	}
	spin_unlock_irq(&sluice_path_lock);
	mutex_unlock(&sluice_ib_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sluice_ib_paths);

void sluice_ipoib_debugfs_init(struct dentry *root)
{
	debugfs_create_file("ib", 0444, root, NULL, &sluice_ib_fops);
	debugfs_create_file("ib_paths", 0444, root, NULL, &sluice_ib_paths_fops);
}

/* Registers with the SA first: the client's add may come at once. */
int sluice_ipoib_init(void)
{
	int ret;

	ib_sa_register_client(&sluice_sa_client);
	ret = ib_register_client(&sluice_ib_client);
	if (ret)
		goto err_sa;
	return 0;

err_sa:
	ib_sa_unregister_client(&sluice_sa_client);
	return ret;
}

void sluice_ipoib_exit(void)
{
	/* Removes every device: their paths go, their queries are cancelled. */
	ib_unregister_client(&sluice_ib_client);
	/* Waits for the callbacks of the cancelled queries. */
	ib_sa_unregister_client(&sluice_sa_client);
	mutex_lock(&sluice_ib_lock);
	sluice_path_drop_dev(NULL);
	mutex_unlock(&sluice_ib_lock);
}
