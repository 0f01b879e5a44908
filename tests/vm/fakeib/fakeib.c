// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakeib: an InfiniBand HCA with no hardware and IPoIB-like interfaces on
 * it, for testing what sluice.ko does about IPoIB in a VM (issue 14 item
 * 3; kernel/README.md, "An IPoIB-like device in the VM").
 * A test module only: never load it beside ib_ipoib unless with ipoib=1
 * (both are link kind "ipoib"; registering ours then fails with -EEXIST).
 *
 * With ipoib=1 ("way 2", tests/vm/ipoib_real.sh) it makes no interfaces
 * of its own: the kernel's ib_ipoib binds to the two ports as to an HCA's
 * and makes ib0 and ib1.  For that the HCA also has UD QPs (the QP state
 * machine with the attributes each transition needs, P_Key index, port,
 * Q_Key), multicast attach and detach, sends that carry a datagram to
 * the other port's QP (or every QP attached to the group) under the
 * rules real hardware applies, each with its source in a comment
 * ("UD datagrams between the two ports"), receives flushed when a QP
 * goes to the error state, modify_port for ib_cm, and a fake SA that
 * also answers PathRecord queries.  For connected mode (ipoib_modes.sh)
 * it has RC QPs and carries ib_cm's MADs between the ports' QP1s ("RC
 * messages and CM MADs between the two ports").  With enhanced=MASK as
 * well (tests/vm/ipoib_enh.sh) the ports in MASK answer ipoib's
 * rdma_netdev_get_params() as mlx5 with its IPoIB offloads does: ipoib
 * then runs enhanced IPoIB there, its parent and P_Key children each on
 * an underlay UD QP of fakeib's whose datagrams bypass ipoib ("enhanced
 * IPoIB"); the other port stays legacy.
 *
 * The HCA ("fakeib0", two ports of InfiniBand link layer) implements the
 * verbs ib_core needs before it calls any client's add
 * (ib_device_check_mandatory() in drivers/infiniband/core/device.c) and
 * what ib_mad and ib_sa do with a port: a PD, a CQ, QP0 and QP1 taken to
 * RTS with receives posted (ib_mad_port_open()), the SM's address handle
 * (update_sm_ah(); alloc_mad() queries it back before each query).  Other
 * QP types are refused (but UD and RC for ipoib, below).  Sends complete at
 * once; a fake SA answers the MCMemberRecord joins and leaves sent on QP1
 * (into QP1's receives, after a delay the test sets), nothing else (a
 * path query times out unless a local service answers it over RDMA
 * netlink; with ipoib=1 the fake SA answers it).  No DMA device: the core
 * uses virtual addresses (ib_uses_virt_dma()), as rxe and siw do.
 *
 * The interfaces are made the way the ipoib driver makes its own, which
 * is what sluice.ko matches: an ib_client of this module (for its own
 * device only) adds a parent netdev per port ("fib0" on port 1, "fib1"
 * on port 2) of type ARPHRD_INFINIBAND, 20-byte address (flags, QPN,
 * port GID), the HCA's parent device and dev_port = port - 1, and
 * removes them (and their children) when the device goes.  The link
 * kind is "ipoib": P_Key children come from
 *   ip link add link fib0 name fib0.8001 type ipoib pkey 0x8001
 * (no parent device, iflink = the parent), and fill_info reports
 * IFLA_IPOIB_PKEY/MODE/UMCAST.  netdev_priv() starts with a struct
 * rdma_netdev whose set_id is NULL: legacy (not enhanced) IPoIB.
 *
 * The wire: fib0 and fib1 are each other's.  The hard header is ipoib's
 * (a 4-byte header, and before it the 20-byte destination as a pseudo
 * header the transmit function takes off); a packet goes to the other
 * port's interface of the same P_Key if it is addressed to that
 * interface's GID or to a multicast GID, so ARP and the kernel's
 * neighbour code work between them (move one into another netns).  An
 * interface joins its broadcast group while up and, after a multicast
 * error (-ENETRESET: port error, LID change, client reregister), leaves
 * and joins again, as ipoib does.
 *
 * Debugfs /sys/kernel/debug/fakeib/: "state" (read), "ctl" (write one
 * command a write):
 *   port_err PORT | port_active PORT	port state, carrier, and the event
 *   pkey_change PORT | lid_change PORT | sm_change PORT | client_rereg PORT
 *					that event only (ib_dispatch_event())
 *   pkey PORT INDEX VALUE		a P_Key table entry, no event
 *   mtu PORT BYTES			the port's active MTU, no event
 *   qkey PORT VALUE | tclass PORT VALUE	what the fake SA gives a group
 *   sa_delay PORT MS			how late its answers come
 *   remove				ib_unregister_device() now
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/if_infiniband.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/platform_device.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <net/rtnetlink.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_verbs.h>

#define FIB_PORTS	2
#define FIB_PKEYS	8
#define FIB_GIDS	4
#define FIB_HDR_LEN	4		/* ipoib's header: protocol, reserved */
#define FIB_PSEUDO_LEN	INFINIBAND_ALEN	/* the destination, pushed before it */
#define FIB_HARD_LEN	(FIB_HDR_LEN + FIB_PSEUDO_LEN)
#define FIB_QPS		64		/* UD and RC QPs a device, QPN FIB_QPN0 + i */
#define FIB_QPN0	0x48
#define FIB_MCGS	32		/* multicast attachments a UD QP */
#define FIB_MAX_SGE	4		/* a send's */
#define FIB_MAX_RSGE	17		/* a receive's: ipoib's IPOIB_CM_RX_SG */
#define FIB_MAX_CQE	65536		/* ipoib's receive CQ without an SRQ: 33153 */
#define FIB_MC_QPN	0xffffff	/* IB_MULTICAST_QPN */
#define FIB_DEFAULT_QKEY 0x0b1b	/* mlx5's IB_DEFAULT_Q_KEY, the underlay's */
#define FIB_SUBNET	0xfe80000000000000ull
#define FIB_GUID	0x02005e00fe000000ull	/* + port number */

struct fib_dev;

static bool ipoib;
module_param(ipoib, bool, 0444);
MODULE_PARM_DESC(ipoib, "leave the interfaces to the ipoib driver (no fib0/fib1, no link kind)");

static uint enhanced;
module_param(enhanced, uint, 0444);
MODULE_PARM_DESC(enhanced, "with ipoib=1: ports (bit 0: port 1, bit 1: port 2) whose ipoib interfaces get an rdma_netdev (enhanced IPoIB)");

struct fib_port {
	struct fib_dev *fd;
	u32 num;
	enum ib_port_state state;
	enum ib_mtu mtu;
	u32 cap_flags;			/* PortInfo:CapabilityMask */
	u16 pkeys[FIB_PKEYS];		/* under fd->lock */
	struct net_device __rcu *ndev;	/* the parent interface */
	struct list_head children;	/* RCU; changed under RTNL */
	struct fib_qp *qp[2];		/* QP0, QP1 while they exist; fd->lock */
	u64 mad_sends;
	u64 send_errors;
	/* UD traffic (under fd->lock): what the strict rules did */
	u64 ud_sent, ud_rcvd;		/* datagrams out of and into this port */
	u64 drop_qkey, drop_pkey;	/* a receiver's Q_Key or P_Key differed */
	u64 drop_noqp, drop_norecv;	/* no QP (or group member); no WQE */
	u64 drop_state, drop_nogrh;	/* a receiver not in RTR/RTS; mc, no GRH */
	u64 len_err_rx, len_err_tx;	/* local length error completions */
	u64 path_answers;		/* PathRecord GETs the fake SA answered */
	/* RC traffic and CM MADs (under fd->lock) */
	u64 rc_sent, rc_rcvd;		/* messages out of and into this port */
	u64 rc_drop_qp;			/* no connected RC QP in RTR/RTS there */
	u64 rc_drop_pkey;		/* the receiver's P_Key differed */
	u64 rc_rnr;			/* no receive posted: RNR, no retries */
	u64 rc_len_err;			/* the receive too small */
	u64 cm_mads;			/* CM MADs carried to this port's QP1 */
	/* The fake SA: MCMemberRecord joins and leaves sent on QP1 */
	u32 sa_qkey;			/* the Q_Key a group is given */
	u8 sa_tclass;			/* its traffic class */
	unsigned int sa_delay_ms;	/* how late the answers come */
	struct list_head sa_replies;	/* not yet delivered; fd->lock */
	struct delayed_work sa_work;	/* delivers them */
	u64 sa_answers;
};

/* An SA answer waiting for its time. */
struct fib_sa_reply {
	struct list_head node;
	unsigned long due;		/* jiffies */
	u32 slid;			/* the sender's LID: 1 (the SM) or a port */
	u16 pkey_index;
	u8 mad[IB_MGMT_MAD_SIZE];
};

struct fib_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	spinlock_t lock;		/* P_Key tables, QPN, QPs, SA replies */
	u32 next_qpn;
	struct fib_qp *qps[FIB_QPS];	/* UD and RC QPs by QPN - FIB_QPN0 */
	u8 bounce[IB_GRH_BYTES + 4096];	/* a UD packet on the wire */
	struct fib_port port[FIB_PORTS];
};

struct fib_pd {
	struct ib_pd ibpd;
};

struct fib_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;	/* as made, for query_ah */
};

struct fib_mr {
	struct ib_mr ibmr;
};

struct fib_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* the ring and @armed */
	struct ib_wc *wc;
	u32 size, head, count;
	bool armed;
};

/* A posted receive: the fake SA's answers arrive in QP1's. */
struct fib_rwqe {
	struct ib_cqe *cqe;
	u32 num_sge;
	struct ib_sge sge[FIB_MAX_RSGE];
};

struct fib_qp {
	struct ib_qp ibqp;
	spinlock_t lock;		/* state, receive queue, attachments */
	enum ib_qp_state state;
	u32 port;
	u32 qkey;
	u16 pkey_index;
	u32 max_send_sge, max_recv_sge;
	struct fib_rwqe *rq;		/* a ring */
	u32 rq_size, rq_head, rq_count;
	u32 nmcg;			/* UD: groups attached */
	union ib_gid mcg[FIB_MCGS];
	u32 dest_qpn;			/* RC: the remote QP (RTR's IB_QP_DEST_QPN) */
	u16 dlid;			/* RC: its port's LID (RTR's IB_QP_AV) */
	u64 rc_sent, rc_rcvd;		/* RC: messages */
	u64 ud_sent;			/* UD: datagrams posted out */
	struct net_device *ndev;	/* an rdma_netdev's underlay QP: its netdev */
};

/* netdev_priv() of an interface: an rdma_netdev first, as ipoib's. */
struct fib_ndev {
	struct rdma_netdev rn;
	struct fib_port *port;
	struct net_device *dev;
	struct net_device *parent;	/* a child's; NULL for a parent */
	struct list_head node;		/* in port->children */
	u16 pkey;
	u16 mode;
	u16 umcast;
	u32 qpn;
	/* The broadcast group, joined while up, as ipoib does */
	struct mutex mc_lock;		/* @mc and @up */
	struct ib_sa_multicast *mc;
	bool up;
	bool joined;
	struct delayed_work rejoin;	/* after -ENETRESET or a failure */
};

static struct platform_device *fib_pdev;
static struct fib_dev *fib;		/* while registered, under fib_lock */
static DEFINE_MUTEX(fib_lock);
static struct dentry *fib_debugfs;
static struct rtnl_link_ops fib_link_ops;
static struct ib_sa_client fib_sa_client;

static struct fib_dev *to_fd(struct ib_device *ibdev)
{
	return container_of(ibdev, struct fib_dev, ibdev);
}

static struct fib_cq *to_fcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct fib_cq, ibcq);
}

static struct fib_qp *to_fqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct fib_qp, ibqp);
}

static union ib_gid fib_port_gid(u32 port)
{
	union ib_gid g;

	g.global.subnet_prefix = cpu_to_be64(FIB_SUBNET);
	g.global.interface_id = cpu_to_be64(FIB_GUID + port);
	return g;
}

static int fib_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			    struct ib_udata *udata)
{
	if (udata && udata->inlen)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->fw_ver = 1;
	a->sys_image_guid = cpu_to_be64(FIB_GUID);
	a->max_mr_size = ~0ull;
	a->page_size_cap = PAGE_SIZE;
	a->vendor_id = 0xffffff;
	a->max_qp = 2 * FIB_PORTS + FIB_QPS;
	a->max_qp_wr = 4096;
	a->max_send_sge = 4;
	a->max_recv_sge = FIB_MAX_RSGE;
	a->max_sge_rd = 4;
	a->max_cq = 16;
	a->max_cqe = FIB_MAX_CQE;
	a->max_mr = 16;
	a->max_pd = 16;
	a->max_ah = 64;
	a->max_pkeys = FIB_PKEYS;
	return 0;
}

static int fib_query_port(struct ib_device *ibdev, u32 port,
			  struct ib_port_attr *a)
{
	struct fib_port *p = &to_fd(ibdev)->port[port - 1];
	bool up = READ_ONCE(p->state) == IB_PORT_ACTIVE;

	/* The core zeroed *a. */
	a->state = READ_ONCE(p->state);
	a->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
			     IB_PORT_PHYS_STATE_POLLING;
	a->max_mtu = IB_MTU_4096;
	a->active_mtu = READ_ONCE(p->mtu);
	a->gid_tbl_len = FIB_GIDS;
	a->pkey_tbl_len = FIB_PKEYS;
	a->max_msg_sz = 1 << 20;
	a->lid = port;
	a->sm_lid = 1;
	a->sm_sl = 0;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->active_width = IB_WIDTH_4X;
	a->active_speed = IB_SPEED_EDR;
	a->port_cap_flags = READ_ONCE(p->cap_flags);
	return 0;
}

/* ib_cm sets IB_PORT_CM_SUP on each port it serves (cm_add_one()). */
static int fib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			   struct ib_port_modify *pm)
{
	struct fib_dev *fd = to_fd(ibdev);
	struct fib_port *p = &fd->port[port - 1];
	unsigned long flags;

	if (mask & ~IB_PORT_RESET_QKEY_CNTR)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&fd->lock, flags);
	WRITE_ONCE(p->cap_flags, (p->cap_flags | pm->set_port_cap_mask) &
				 ~pm->clr_port_cap_mask);
	spin_unlock_irqrestore(&fd->lock, flags);
	return 0;
}

static int fib_get_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *im)
{
	im->pkey_tbl_len = FIB_PKEYS;
	im->gid_tbl_len = FIB_GIDS;
	im->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static int fib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			  u16 *pkey)
{
	struct fib_dev *fd = to_fd(ibdev);
	unsigned long flags;

	if (index >= FIB_PKEYS)
		return -EINVAL;
	spin_lock_irqsave(&fd->lock, flags);
	*pkey = fd->port[port - 1].pkeys[index];
	spin_unlock_irqrestore(&fd->lock, flags);
	return 0;
}

static int fib_query_gid(struct ib_device *ibdev, u32 port, int index,
			 union ib_gid *gid)
{
	if (index < 0 || index >= FIB_GIDS)
		return -EINVAL;
	if (index)
		memset(gid, 0, sizeof(*gid));
	else
		*gid = fib_port_gid(port);
	return 0;
}

static int fib_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return udata ? -EOPNOTSUPP : 0;
}

static int fib_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int fib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			 struct ib_udata *udata)
{
	struct fib_ah *ah = container_of(ibah, struct fib_ah, ibah);

	if (udata)
		return -EOPNOTSUPP;
	ah->attr = *init->ah_attr;
	/* Not kept: the core holds the GID entry for the AH's life. */
	ah->attr.grh.sgid_attr = NULL;
	return 0;
}

/* ib_sa asks for its SM's AH back before each query (alloc_mad()). */
static int fib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = container_of(ibah, struct fib_ah, ibah)->attr;
	return 0;
}

static int fib_destroy_ah(struct ib_ah *ah, u32 flags)
{
	return 0;
}

static struct ib_mr *fib_get_dma_mr(struct ib_pd *pd, int access)
{
	struct fib_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

	if (!mr)
		return ERR_PTR(-ENOMEM);
	return &mr->ibmr;
}

static struct ib_mr *fib_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				     u64 virt, int access,
				     struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int fib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	kfree(container_of(ibmr, struct fib_mr, ibmr));
	return 0;
}

static int fib_cq_init(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       bool user)
{
	struct fib_cq *cq = to_fcq(ibcq);

	if (user || attr->flags || attr->cqe < 1 || attr->cqe > FIB_MAX_CQE)
		return -EINVAL;
	cq->wc = kvcalloc(attr->cqe, sizeof(*cq->wc), GFP_KERNEL);
	if (!cq->wc)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	cq->size = attr->cqe;
	ibcq->cqe = attr->cqe;
	return 0;
}

/*
 * create_cq's last argument is a struct ib_udata up to Linux 6.10 and a
 * struct uverbs_attr_bundle since: the one the headers declare is used.
 */
struct uverbs_attr_bundle;

static int __maybe_unused fib_create_cq_udata(struct ib_cq *ibcq,
					      const struct ib_cq_init_attr *attr,
					      struct ib_udata *udata)
{
	return fib_cq_init(ibcq, attr, udata);
}

static int __maybe_unused fib_create_cq_attrs(struct ib_cq *ibcq,
					      const struct ib_cq_init_attr *attr,
					      struct uverbs_attr_bundle *attrs)
{
	return fib_cq_init(ibcq, attr, attrs);
}

#define FIB_CREATE_CQ							\
	__builtin_choose_expr(__same_type(((const struct ib_device_ops *)0)->create_cq, \
					  &fib_create_cq_udata),	\
			      fib_create_cq_udata, fib_create_cq_attrs)

static int fib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	kvfree(to_fcq(ibcq)->wc);
	return 0;
}

static int fib_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct fib_cq *cq = to_fcq(ibcq);
	unsigned long flags;
	int i;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < n && cq->count; i++) {
		wc[i] = cq->wc[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return i;
}

static int fib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags nf)
{
	struct fib_cq *cq = to_fcq(ibcq);
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, flags);
	cq->armed = true;
	if ((nf & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, flags);
	return ret;
}

/* Queue a completion and call the handler if armed; any context. */
static int fib_cq_push(struct fib_cq *cq, const struct ib_wc *wc)
{
	unsigned long flags;
	bool notify;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return -ENOSPC;
	}
	cq->wc[(cq->head + cq->count) % cq->size] = *wc;
	cq->count++;
	notify = cq->armed;
	cq->armed = false;
	spin_unlock_irqrestore(&cq->lock, flags);
	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}

static int fib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			 struct ib_udata *udata)
{
	struct fib_dev *fd = to_fd(ibqp->device);
	struct fib_qp *qp = to_fqp(ibqp);
	unsigned long flags;
	struct fib_port *p = NULL;
	int idx, ret = 0;

	if (udata)
		return -EOPNOTSUPP;
	if (init->qp_type == IB_QPT_SMI)
		idx = 0;
	else if (init->qp_type == IB_QPT_GSI)
		idx = 1;
	else if (init->qp_type == IB_QPT_UD || init->qp_type == IB_QPT_RC)
		idx = -1;
	else
		return -EOPNOTSUPP;	/* QP0, QP1, UD and RC QPs only */
	/*
	 * No create flag is offered (LSO, netif QP, multicast loopback
	 * blocking: none in query_device), so any is refused, as rxe's
	 * rxe_qp_chk_init() and mlx5's create_qp flag checks do.
	 */
	if (init->create_flags)
		return -EOPNOTSUPP;
	/*
	 * No SRQ (none is offered: ipoib's connected mode then gives each
	 * RC QP its own receive queue, ipoib_cm_nonsrq_init_rx()); an RC QP
	 * may have no receive queue at all (ipoib's sending side,
	 * ipoib_cm_create_tx_qp()).
	 */
	if ((idx >= 0 && (init->port_num < 1 || init->port_num > FIB_PORTS)) ||
	    init->srq ||
	    (!init->cap.max_recv_wr && init->qp_type != IB_QPT_RC) ||
	    init->cap.max_recv_wr > 4096 || init->cap.max_send_wr > 4096 ||
	    init->cap.max_send_sge > FIB_MAX_SGE ||
	    init->cap.max_recv_sge > FIB_MAX_RSGE || init->cap.max_inline_data)
		return -EINVAL;
	qp->rq = kvcalloc(init->cap.max_recv_wr, sizeof(*qp->rq), GFP_KERNEL);
	if (!qp->rq)
		return -ENOMEM;
	spin_lock_init(&qp->lock);
	qp->rq_size = init->cap.max_recv_wr;
	qp->max_recv_sge = max_t(u32, init->cap.max_recv_sge, 1);
	qp->max_send_sge = max_t(u32, init->cap.max_send_sge, 1);
	qp->state = IB_QPS_RESET;
	spin_lock_irqsave(&fd->lock, flags);
	if (idx >= 0) {
		/* The special QPs' port is fixed at creation. */
		qp->port = init->port_num;
		p = &fd->port[init->port_num - 1];
		ibqp->qp_num = idx;
		if (p->qp[idx])
			ret = -EBUSY;
		else
			p->qp[idx] = qp;
	} else {
		/* A UD or RC QP gets its port at RESET->INIT (IB_QP_PORT). */
		ret = -ENOMEM;
		for (idx = 0; idx < FIB_QPS; idx++) {
			if (fd->qps[idx])
				continue;
			fd->qps[idx] = qp;
			ibqp->qp_num = FIB_QPN0 + idx;
			ret = 0;
			break;
		}
	}
	spin_unlock_irqrestore(&fd->lock, flags);
	if (ret)
		kvfree(qp->rq);
	return ret;
}

/* Every posted receive completes with a flush error.  Under qp->lock. */
static void fib_flush_rq(struct fib_qp *qp)
{
	struct ib_wc wc;

	while (qp->rq_count) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_cqe = qp->rq[qp->rq_head].cqe;
		wc.status = IB_WC_WR_FLUSH_ERR;
		wc.opcode = IB_WC_RECV;
		wc.qp = &qp->ibqp;
		qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
		qp->rq_count--;
		fib_cq_push(to_fcq(qp->ibqp.recv_cq), &wc);
	}
}

static int fib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			 int mask, struct ib_udata *udata)
{
	struct fib_qp *qp = to_fqp(ibqp);
	enum ib_qp_state cur, next;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&qp->lock, flags);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	/*
	 * The transitions and the attributes each requires or allows are
	 * the spec's (IBTA Vol 1 11.2.4.2 / 10.3; ib_modify_qp_is_ok()'s
	 * table): a UD QP's RESET->INIT must give P_Key index, port and
	 * Q_Key, RTR->RTS the SQ PSN.
	 */
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		ret = -EINVAL;
		goto out;
	}
	if (((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= FIB_PKEYS) ||
	    ((mask & IB_QP_PORT) && (attr->port_num < 1 ||
				     attr->port_num > FIB_PORTS))) {
		ret = -EINVAL;
		goto out;
	}
	qp->state = next;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if ((mask & IB_QP_PORT) && ibqp->qp_type != IB_QPT_GSI &&
	    ibqp->qp_type != IB_QPT_SMI)
		qp->port = attr->port_num;
	/* RC: the peer, as ib_cm's RTR attributes name it (IBTA 11.2.4.2) */
	if (mask & IB_QP_DEST_QPN)
		qp->dest_qpn = attr->dest_qp_num;
	if (mask & IB_QP_AV)
		qp->dlid = rdma_ah_get_dlid(&attr->ah_attr);
	/*
	 * In the error state every outstanding receive completes with a
	 * flush error (IBTA Vol 1 10.3.1, "Error" state; rxe's
	 * rxe_qp_error() and mlx5 do the same): ipoib's stop waits for
	 * them (ipoib_ib_dev_stop_default()).
	 */
	if (next == IB_QPS_ERR)
		fib_flush_rq(qp);
	if (next == IB_QPS_RESET) {
		qp->rq_head = 0;
		qp->rq_count = 0;
	}
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	return ret;
}

/*
 * The state and the attributes kept (ipoib asks a QP's state when it
 * takes a child down, check_qp_movement_and_print()).
 */
static int fib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			int mask, struct ib_qp_init_attr *init)
{
	struct fib_qp *qp = to_fqp(ibqp);
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_irqsave(&qp->lock, flags);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->pkey_index = qp->pkey_index;
	attr->port_num = qp->port;
	attr->qkey = qp->qkey;
	attr->dest_qp_num = qp->dest_qpn;
	attr->cap.max_recv_wr = qp->rq_size;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_recv_sge = qp->max_recv_sge;
	spin_unlock_irqrestore(&qp->lock, flags);
	init->qp_type = ibqp->qp_type;
	init->cap = attr->cap;
	return 0;
}

static int fib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct fib_qp *qp = to_fqp(ibqp);
	struct fib_dev *fd = to_fd(ibqp->device);
	struct fib_port *p = qp->port ? &fd->port[qp->port - 1] : NULL;
	struct fib_sa_reply *r, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&fd->lock, flags);
	if (ibqp->qp_type == IB_QPT_UD || ibqp->qp_type == IB_QPT_RC) {
		fd->qps[ibqp->qp_num - FIB_QPN0] = NULL;
	} else {
		p->qp[ibqp->qp_num] = NULL;
		if (ibqp->qp_num == 1) {
			list_for_each_entry_safe(r, tmp, &p->sa_replies, node) {
				list_del(&r->node);
				kfree(r);
			}
		}
	}
	spin_unlock_irqrestore(&fd->lock, flags);
	/* An answer being delivered holds fd->lock: none is after this. */
	if (ibqp->qp_num == 1)
		cancel_delayed_work_sync(&p->sa_work);
	kvfree(qp->rq);
	return 0;
}

/*
 * Multicast attachments of a UD QP (ib_attach_mcast() has checked the
 * QP type and that the GID is a multicast one).  Detaching a group not
 * attached fails, as rxe's rxe_detach_mcast() does.
 */
static int fib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct fib_qp *qp = to_fqp(ibqp);
	unsigned long flags;
	int i, ret = 0;

	spin_lock_irqsave(&qp->lock, flags);
	for (i = 0; i < qp->nmcg; i++)
		if (!memcmp(&qp->mcg[i], gid, sizeof(*gid)))
			goto out;
	if (qp->nmcg == FIB_MCGS)
		ret = -ENOMEM;
	else
		qp->mcg[qp->nmcg++] = *gid;
out:
	spin_unlock_irqrestore(&qp->lock, flags);
	return ret;
}

static int fib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct fib_qp *qp = to_fqp(ibqp);
	unsigned long flags;
	int i, ret = -EINVAL;

	spin_lock_irqsave(&qp->lock, flags);
	for (i = 0; i < qp->nmcg; i++) {
		if (memcmp(&qp->mcg[i], gid, sizeof(*gid)))
			continue;
		qp->mcg[i] = qp->mcg[--qp->nmcg];
		ret = 0;
		break;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	return ret;
}

/* Bytes a receive WQE can take. */
static u32 fib_wqe_room(const struct fib_rwqe *e)
{
	u32 i, n = 0;

	for (i = 0; i < e->num_sge; i++)
		n += e->sge[i].length;
	return n;
}

/* @len bytes of @src into @e's scatter list from byte @off (they fit). */
static void fib_scatter(const struct fib_rwqe *e, u32 off, const u8 *src,
			u32 len)
{
	u32 i, n;

	for (i = 0; i < e->num_sge && len; i++) {
		if (off >= e->sge[i].length) {
			off -= e->sge[i].length;
			continue;
		}
		n = min(len, e->sge[i].length - off);
		memcpy((u8 *)(uintptr_t)e->sge[i].addr + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

/* The oldest posted receive of @qp into *@e; false if none.  qp->lock. */
static bool fib_rq_pop(struct fib_qp *qp, struct fib_rwqe *e)
{
	if (!qp->rq_count)
		return false;
	*e = qp->rq[qp->rq_head];
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	return true;
}

/* ---- the fake SA: MCMemberRecord joins and leaves, PathRecord gets ---- */

/*
 * Offsets in an SA MAD (IBTA 13.4.3, 15.2.1.1), its MCMemberRecord
 * (15.2.5.17) and its PathRecord (15.2.5.16).
 */
#define FIB_MAD_METHOD		3
#define FIB_MAD_STATUS		4
#define FIB_MAD_ATTR_ID		16
#define FIB_SA_DATA		IB_MGMT_SA_HDR
#define FIB_MC_QKEY		32
#define FIB_MC_MLID		36
#define FIB_MC_MTU		38
#define FIB_MC_TCLASS		39
#define FIB_MC_RATE		42
#define FIB_MC_LIFE		43
#define FIB_PR_DGID		8
#define FIB_PR_SGID		24
#define FIB_PR_DLID		40
#define FIB_PR_SLID		42
#define FIB_PR_FLOW_HOP		44	/* raw traffic, flow label, hop limit */
#define FIB_PR_TCLASS		48
#define FIB_PR_NUMB		49	/* reversible, numb_path */
#define FIB_PR_PKEY		50
#define FIB_PR_SL		52
#define FIB_PR_MTU		54
#define FIB_PR_RATE		55
#define FIB_PR_LIFE		56
#define FIB_PR_END		64
#define FIB_SEL_EXACTLY		2
#define FIB_SA_NO_RECORDS	0x0300	/* MAD status: ERR_NO_RECORDS */

/*
 * Into QP1's oldest posted receive: no GRH (40 bytes the MAD layer
 * skips), then the MAD, from @r's LID (the SM's, or a port's for a CM
 * MAD) with @r's P_Key index.  Under fd->lock.
 */
static void fib_deliver(struct fib_qp *qp, const struct fib_sa_reply *r)
{
	const u8 *mad = r->mad;
	struct ib_wc wc = { };
	struct fib_rwqe e;
	bool got;

	spin_lock(&qp->lock);
	got = (qp->state == IB_QPS_RTR || qp->state == IB_QPS_RTS) &&
	      fib_rq_pop(qp, &e);
	spin_unlock(&qp->lock);
	if (!got)
		return;
	wc.wr_cqe = e.cqe;
	wc.qp = &qp->ibqp;
	if (fib_wqe_room(&e) < IB_GRH_BYTES + IB_MGMT_MAD_SIZE) {
		wc.status = IB_WC_LOC_LEN_ERR;
	} else {
		u8 grh[IB_GRH_BYTES] = { };

		fib_scatter(&e, 0, grh, IB_GRH_BYTES);
		fib_scatter(&e, IB_GRH_BYTES, mad, IB_MGMT_MAD_SIZE);
		wc.status = IB_WC_SUCCESS;
		wc.opcode = IB_WC_RECV;
		wc.byte_len = IB_GRH_BYTES + IB_MGMT_MAD_SIZE;
		wc.src_qp = 1;
		wc.slid = r->slid;
		wc.pkey_index = r->pkey_index;
		wc.port_num = qp->port;
	}
	fib_cq_push(to_fcq(qp->ibqp.recv_cq), &wc);
}

/* Deliver the answers whose time has come; re-arm for the next. */
static void fib_sa_work(struct work_struct *work)
{
	struct fib_port *p = container_of(to_delayed_work(work),
					  struct fib_port, sa_work);
	struct fib_sa_reply *r, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&p->fd->lock, flags);
	list_for_each_entry_safe(r, tmp, &p->sa_replies, node) {
		if (time_before(jiffies, r->due)) {
			queue_delayed_work(system_wq, &p->sa_work,
					   r->due - jiffies);
			break;
		}
		list_del(&r->node);
		if (p->qp[1]) {
			fib_deliver(p->qp[1], r);
			if (r->mad[1] == IB_MGMT_CLASS_SUBN_ADM)
				p->sa_answers++;
			else
				p->cm_mads++;
		}
		kfree(r);
	}
	spin_unlock_irqrestore(&p->fd->lock, flags);
}

/* The port whose GID is @gid, or NULL. */
static struct fib_port *fib_gid_port(struct fib_dev *fd, const u8 *gid)
{
	union ib_gid g;
	int i;

	for (i = 0; i < FIB_PORTS; i++) {
		g = fib_port_gid(i + 1);
		if (!memcmp(g.raw, gid, sizeof(g.raw)))
			return &fd->port[i];
	}
	return NULL;
}

/*
 * A PathRecord SubnAdmGet (ipoib's and the module's ib_sa_path_rec_get())
 * answered in place: the path between two of the device's port GIDs,
 * LIDs the port numbers, SL 0, hop limit 0 (no GRH on the subnet, as
 * an SM answers for a local path), the traffic class and P_Key asked
 * for, MTU the smaller active MTU of the two ports, 100 Gb/s.  A GID
 * that is not a port's: status ERR_NO_RECORDS.
 */
static void fib_path_answer(struct fib_port *p, u8 *m)
{
	struct fib_port *s, *d;
	u8 *r = m + FIB_SA_DATA;
	enum ib_mtu mtu;

	s = fib_gid_port(p->fd, r + FIB_PR_SGID);
	d = fib_gid_port(p->fd, r + FIB_PR_DGID);
	if (!s || !d || s != p) {
		m[FIB_MAD_STATUS] = FIB_SA_NO_RECORDS >> 8;
		return;
	}
	mtu = min(READ_ONCE(s->mtu), READ_ONCE(d->mtu));
	r[FIB_PR_DLID] = 0;
	r[FIB_PR_DLID + 1] = d->num;
	r[FIB_PR_SLID] = 0;
	r[FIB_PR_SLID + 1] = s->num;
	memset(r + FIB_PR_FLOW_HOP, 0, 4);
	r[FIB_PR_NUMB] = 0x80 | 1;
	if (!r[FIB_PR_PKEY] && !r[FIB_PR_PKEY + 1])
		memset(r + FIB_PR_PKEY, 0xff, 2);
	r[FIB_PR_SL] = 0;
	r[FIB_PR_SL + 1] = 0;
	r[FIB_PR_MTU] = FIB_SEL_EXACTLY << 6 | mtu;
	r[FIB_PR_RATE] = FIB_SEL_EXACTLY << 6 | IB_RATE_100_GBPS;
	r[FIB_PR_LIFE] = FIB_SEL_EXACTLY << 6 | 18;
	r[FIB_PR_LIFE + 1] = 0;
	p->path_answers++;
}

/*
 * A MAD sent on QP1 (to the SM's LID: the only destination ib_sa has):
 * a join (SubnAdmSet) or leave (SubnAdmDelete) of an MCMemberRecord or,
 * with ipoib=1, a PathRecord SubnAdmGet is answered after the port's sa_delay_ms, a
 * group given the port's Q_Key and traffic class, MLID 0xC001, MTU
 * 2048, rate 100 Gb/s; any other query gets no answer.  Any context.
 */
static void fib_sa_request(struct fib_port *p, const struct ib_send_wr *wr)
{
	struct fib_sa_reply *r;
	unsigned int off = 0;
	unsigned long flags;
	bool first, mc, path;
	u8 *m, *d;
	u32 qkey;
	int i;

	r = kzalloc(sizeof(*r), GFP_ATOMIC);
	if (!r)
		return;
	m = r->mad;
	for (i = 0; i < wr->num_sge && off < sizeof(r->mad); i++) {
		u32 len = min_t(u32, wr->sg_list[i].length, sizeof(r->mad) - off);

		memcpy(m + off, (void *)(uintptr_t)wr->sg_list[i].addr, len);
		off += len;
	}
	mc = m[FIB_MAD_ATTR_ID] == 0 &&
	     m[FIB_MAD_ATTR_ID + 1] == IB_SA_ATTR_MC_MEMBER_REC &&
	     (m[FIB_MAD_METHOD] == IB_MGMT_METHOD_SET ||
	      m[FIB_MAD_METHOD] == IB_SA_METHOD_DELETE);
	path = ipoib && m[FIB_MAD_ATTR_ID] == 0 &&
	       m[FIB_MAD_ATTR_ID + 1] == IB_SA_ATTR_PATH_REC &&
	       m[FIB_MAD_METHOD] == IB_MGMT_METHOD_GET;
	if (off < FIB_SA_DATA + FIB_PR_END ||
	    m[1] != IB_MGMT_CLASS_SUBN_ADM || (!mc && !path)) {
		kfree(r);
		return;
	}
	d = m + FIB_SA_DATA;
	m[FIB_MAD_STATUS] = 0;
	m[FIB_MAD_STATUS + 1] = 0;
	if (path) {
		spin_lock_irqsave(&p->fd->lock, flags);
		fib_path_answer(p, m);
		spin_unlock_irqrestore(&p->fd->lock, flags);
	} else if (m[FIB_MAD_METHOD] == IB_MGMT_METHOD_SET) {
		qkey = READ_ONCE(p->sa_qkey);
		for (i = 0; i < 4; i++)
			d[FIB_MC_QKEY + i] = qkey >> (24 - 8 * i);
		d[FIB_MC_MLID] = 0xc0;
		d[FIB_MC_MLID + 1] = 0x01;
		d[FIB_MC_MTU] = FIB_SEL_EXACTLY << 6 | IB_MTU_2048;
		d[FIB_MC_TCLASS] = READ_ONCE(p->sa_tclass);
		d[FIB_MC_RATE] = FIB_SEL_EXACTLY << 6 | IB_RATE_100_GBPS;
		d[FIB_MC_LIFE] = FIB_SEL_EXACTLY << 6 | 18;
	}
	m[FIB_MAD_METHOD] |= IB_MGMT_METHOD_RESP;
	r->slid = 1;
	spin_lock_irqsave(&p->fd->lock, flags);
	r->due = jiffies + msecs_to_jiffies(READ_ONCE(p->sa_delay_ms));
	first = list_empty(&p->sa_replies);
	list_add_tail(&r->node, &p->sa_replies);
	if (first)
		queue_delayed_work(system_wq, &p->sa_work, r->due - jiffies);
	spin_unlock_irqrestore(&p->fd->lock, flags);
}

/* ---- UD datagrams between the two ports ---- */

/*
 * P_Key matching (IBTA Vol 1 10.9.3): the low 15 bits equal and at
 * least one of the two a full member (bit 15); an invalid P_Key (low
 * bits 0) matches nothing.
 */
static bool fib_pkey_match(u16 a, u16 b)
{
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) &&
	       ((a | b) & 0x8000);
}

/* What a UD send puts on the wire, as the receiver checks it. */
struct fib_ud_pkt {
	struct fib_port *from;
	u32 src_qp;
	u16 pkey;			/* from the sender's P_Key index */
	u32 qkey;			/* DETH Q_Key */
	bool grh;
	const u8 *buf;			/* GRH area (40 bytes), payload */
	u32 len;			/* payload bytes */
	struct sk_buff_head *rxq;	/* for the netdevs, after fd->lock */
};

static void fib_rn_rx(struct fib_port *to, struct fib_qp *qp,
		      const struct fib_ud_pkt *pk);

/*
 * One datagram into @qp on port @to.  The receive rules, each as the
 * hardware applies it:
 * - a QP takes packets only in RTR or RTS (IBTA Vol 1 10.3.1: INIT
 *   accepts posted receives but drops what arrives; rxe's
 *   check_type_state());
 * - the packet's P_Key must match the QP's (10.9.3; rxe's check_keys()),
 *   its Q_Key equal the QP's (10.2.4 "Q_Keys"; rxe's check_keys():
 *   "bad qkey"): else silently dropped;
 * - no posted receive: dropped (RNR NAKs belong to the reliable
 *   services only; mlx5 counts such drops as rx_out_of_buffer);
 * - the first 40 bytes of the receive buffer are the GRH's, whether or
 *   not one came (IB_WC_GRH says if it did; ibv_post_recv(3), ipoib's
 *   IPOIB_UD_BUF_SIZE); byte_len counts them; what is there without a
 *   GRH is undefined, so it is garbage here;
 * - a buffer smaller than 40 + payload: the WQE completes with a local
 *   length error (ibv_poll_cq(3), IBV_WC_LOC_LEN_ERR).
 * Under fd->lock.
 */
static void fib_ud_rx(struct fib_port *to, struct fib_qp *qp,
		      const struct fib_ud_pkt *pk)
{
	static const u8 junk[IB_GRH_BYTES] = {
		[0 ... IB_GRH_BYTES - 1] = 0xa5
	};
	struct ib_wc wc = { };
	struct fib_rwqe e;
	bool got;

	spin_lock(&qp->lock);
	if (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS) {
		spin_unlock(&qp->lock);
		to->drop_state++;
		return;
	}
	if (!fib_pkey_match(pk->pkey, to->pkeys[qp->pkey_index])) {
		spin_unlock(&qp->lock);
		to->drop_pkey++;
		return;
	}
	if (pk->qkey != qp->qkey) {
		spin_unlock(&qp->lock);
		to->drop_qkey++;
		return;
	}
	if (qp->ndev) {
		spin_unlock(&qp->lock);
		fib_rn_rx(to, qp, pk);
		return;
	}
	got = fib_rq_pop(qp, &e);
	spin_unlock(&qp->lock);
	if (!got) {
		to->drop_norecv++;
		return;
	}
	wc.wr_cqe = e.cqe;
	wc.qp = &qp->ibqp;
	wc.opcode = IB_WC_RECV;
	if (fib_wqe_room(&e) < IB_GRH_BYTES + pk->len) {
		wc.status = IB_WC_LOC_LEN_ERR;
		to->len_err_rx++;
	} else {
		fib_scatter(&e, 0, pk->grh ? pk->buf : junk, IB_GRH_BYTES);
		fib_scatter(&e, IB_GRH_BYTES, pk->buf + IB_GRH_BYTES, pk->len);
		wc.status = IB_WC_SUCCESS;
		wc.byte_len = IB_GRH_BYTES + pk->len;
		wc.src_qp = pk->src_qp;
		wc.slid = pk->from->num;
		wc.wc_flags = pk->grh ? IB_WC_GRH : 0;
		wc.pkey_index = qp->pkey_index;
		wc.port_num = to->num;
		to->ud_rcvd++;
	}
	fib_cq_push(to_fcq(qp->ibqp.recv_cq), &wc);
}

/* Is @qp (on port @to) attached to @mgid?  Under fd->lock. */
static bool fib_attached(struct fib_qp *qp, const union ib_gid *mgid)
{
	bool yes = false;
	u32 i;

	spin_lock(&qp->lock);
	for (i = 0; i < qp->nmcg && !yes; i++)
		yes = !memcmp(&qp->mcg[i], mgid, sizeof(*mgid));
	spin_unlock(&qp->lock);
	return yes;
}

/*
 * A UD send from @qp: the two ports are each other's wire (a packet to
 * port 1's LID arrives at port 1, from port 2, and the other way; one
 * to a port's own LID loops back in the HCA).  Rules of the sending
 * side:
 * - a UD message is one packet, at most the port's active MTU (the
 *   unreliable datagram service has no segmentation; ibv_poll_cq(3): a
 *   message larger than the port allows completes with a local length
 *   error);
 * - the DETH Q_Key is the WR's, or the QP's own when the WR's has its
 *   top bit set (a controlled Q_Key, 10.2.4; rxe's init_req_packet());
 * - a multicast DLID (0xC000 and up) reaches every QP of the other port
 *   attached to the GRH's DGID; without a GRH nothing matches (mlx5
 *   steers multicast by MGID, mlx5_ib_mcg_attach()); unicast needs the
 *   QPN of a UD QP on the destination port.
 * The datagram is in fd->bounce after its GRH's 40 bytes; the GRH is
 * written here.  Under fd->lock.
 */
static void fib_ud_route(struct fib_dev *fd, struct fib_port *p,
			 struct fib_ah *ah, u32 dqpn, struct fib_ud_pkt *pk)
{
	const struct ib_global_route *gr = rdma_ah_read_grh(&ah->attr);
	u16 dlid = rdma_ah_get_dlid(&ah->attr);
	struct ib_grh *grh = (struct ib_grh *)fd->bounce;
	struct fib_port *to;
	u32 i;

	pk->buf = fd->bounce;
	pk->grh = rdma_ah_get_ah_flags(&ah->attr) & IB_AH_GRH;
	if (pk->grh) {
		grh->version_tclass_flow =
			cpu_to_be32(6 << 28 | gr->traffic_class << 20 |
				    (gr->flow_label & 0xfffff));
		/* BTH 12 + DETH 8 + payload + ICRC 4 */
		grh->paylen = cpu_to_be16(12 + 8 + pk->len + 4);
		grh->next_hdr = 0x1b;
		grh->hop_limit = gr->hop_limit;
		grh->sgid = fib_port_gid(p->num);
		grh->dgid = gr->dgid;
	}
	p->ud_sent++;
	if (dlid >= be16_to_cpu(IB_MULTICAST_LID_BASE) &&
	    dlid != be16_to_cpu(IB_LID_PERMISSIVE)) {
		to = &fd->port[FIB_PORTS - p->num];
		if (dqpn != FIB_MC_QPN) {
			to->drop_noqp++;
			return;
		}
		if (!pk->grh) {
			to->drop_nogrh++;
			return;
		}
		for (i = 0; i < FIB_QPS; i++) {
			struct fib_qp *r = fd->qps[i];

			if (r && r->ibqp.qp_type == IB_QPT_UD &&
			    r->port == to->num && fib_attached(r, &gr->dgid))
				fib_ud_rx(to, r, pk);
		}
		return;
	}
	to = dlid >= 1 && dlid <= FIB_PORTS ? &fd->port[dlid - 1] : NULL;
	i = dqpn - FIB_QPN0;
	if (!to || dqpn < FIB_QPN0 || i >= FIB_QPS ||
	    !fd->qps[i] || fd->qps[i]->ibqp.qp_type != IB_QPT_UD ||
	    fd->qps[i]->port != to->num) {
		(to ? to : p)->drop_noqp++;
		return;
	}
	fib_ud_rx(to, fd->qps[i], pk);
}

/* A UD send WR of @qp; the WR's Q_Key, else the QP's (see above). */
static enum ib_wc_status fib_ud_send(struct fib_qp *qp,
				     const struct ib_send_wr *wr,
				     struct sk_buff_head *rxq)
{
	struct fib_dev *fd = to_fd(qp->ibqp.device);
	struct fib_port *p = &fd->port[qp->port - 1];
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct fib_ud_pkt pk = {
		.from = p, .src_qp = qp->ibqp.qp_num, .rxq = rxq,
	};
	u32 i, off = IB_GRH_BYTES;

	for (i = 0; i < wr->num_sge; i++)
		pk.len += wr->sg_list[i].length;
	if (pk.len > ib_mtu_enum_to_int(READ_ONCE(p->mtu))) {
		p->len_err_tx++;
		return IB_WC_LOC_LEN_ERR;
	}
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(fd->bounce + off,
		       (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	pk.pkey = p->pkeys[qp->pkey_index];
	pk.qkey = (int)ud->remote_qkey < 0 ? qp->qkey : ud->remote_qkey;
	qp->ud_sent++;
	fib_ud_route(fd, p, container_of(ud->ah, struct fib_ah, ibah),
		     ud->remote_qpn, &pk);
	return IB_WC_SUCCESS;
}

/* ---- RC messages and CM MADs between the two ports ---- */

/*
 * An RC send from @qp (in RTS) to the QP it is connected to: the
 * destination port is the one whose LID the QP's address vector names,
 * the QP there its dest_qpn.  The rules, as the hardware applies them:
 * - the responder must be an RC QP in RTR or RTS connected back to
 *   this one (IBTA Vol 1 9.7.5.1.3: otherwise the packet is dropped and
 *   the requester, after its retries, completes with a transport retry
 *   error, IB_WC_RETRY_EXC_ERR, here at once);
 * - P_Keys must match (10.9.3), else silently dropped, the same error;
 * - a message may be larger than the MTU (RC segments it: 9.7.2), up to
 *   the port's max_msg_sz; it fills the responder's oldest receive, with
 *   no GRH on a local subnet (byte_len is the message's);
 * - no receive posted: an RNR NAK (9.7.5.2.8), and with the RNR retry
 *   count ipoib and ib_cm give (0: ipoib_cm_send_req()) the requester
 *   completes with IB_WC_RNR_RETRY_EXC_ERR;
 * - a receive too small: the responder completes it with a local length
 *   error and the requester with a remote invalid request (9.9.3.1).
 * An error completion takes the requester to the error state (10.3.1).
 * Returns the send completion's status.  Under fd->lock.
 */
static enum ib_wc_status fib_rc_send(struct fib_qp *qp,
				     const struct ib_send_wr *wr)
{
	struct fib_dev *fd = to_fd(qp->ibqp.device);
	struct fib_port *p = &fd->port[qp->port - 1], *to;
	struct ib_wc wc = { };
	struct fib_qp *r = NULL;
	struct fib_rwqe e;
	u32 i, len = 0, off;
	bool ok, got;

	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	to = qp->dlid >= 1 && qp->dlid <= FIB_PORTS ? &fd->port[qp->dlid - 1] : NULL;
	i = qp->dest_qpn - FIB_QPN0;
	if (to && qp->dest_qpn >= FIB_QPN0 && i < FIB_QPS)
		r = fd->qps[i];
	if (!r || r->ibqp.qp_type != IB_QPT_RC || r->port != to->num) {
		p->rc_drop_qp++;
		return IB_WC_RETRY_EXC_ERR;
	}
	spin_lock(&r->lock);
	ok = (r->state == IB_QPS_RTR || r->state == IB_QPS_RTS) &&
	     r->dest_qpn == qp->ibqp.qp_num && r->dlid == p->num;
	if (!ok) {
		spin_unlock(&r->lock);
		to->rc_drop_qp++;
		return IB_WC_RETRY_EXC_ERR;
	}
	if (!fib_pkey_match(p->pkeys[qp->pkey_index], to->pkeys[r->pkey_index])) {
		spin_unlock(&r->lock);
		to->rc_drop_pkey++;
		return IB_WC_RETRY_EXC_ERR;
	}
	got = fib_rq_pop(r, &e);
	spin_unlock(&r->lock);
	if (!got) {
		to->rc_rnr++;
		return IB_WC_RNR_RETRY_EXC_ERR;
	}
	wc.wr_cqe = e.cqe;
	wc.qp = &r->ibqp;
	wc.opcode = IB_WC_RECV;
	wc.src_qp = qp->ibqp.qp_num;
	wc.slid = p->num;
	wc.pkey_index = r->pkey_index;
	wc.port_num = to->num;
	if (fib_wqe_room(&e) < len) {
		wc.status = IB_WC_LOC_LEN_ERR;
		to->rc_len_err++;
		fib_cq_push(to_fcq(r->ibqp.recv_cq), &wc);
		return IB_WC_REM_INV_REQ_ERR;
	}
	for (i = 0, off = 0; i < wr->num_sge; i++) {
		fib_scatter(&e, off, (const u8 *)(uintptr_t)wr->sg_list[i].addr,
			    wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	wc.status = IB_WC_SUCCESS;
	wc.byte_len = len;
	if (wr->opcode == IB_WR_SEND_WITH_IMM) {
		wc.wc_flags = IB_WC_WITH_IMM;
		wc.ex.imm_data = wr->ex.imm_data;
	}
	p->rc_sent++;
	qp->rc_sent++;
	to->rc_rcvd++;
	r->rc_rcvd++;
	fib_cq_push(to_fcq(r->ibqp.recv_cq), &wc);
	return IB_WC_SUCCESS;
}

/*
 * A CM MAD (management class 0x07, IBTA 12.6) sent on QP1 goes to QP1
 * of the port whose LID its address handle names (the fake SA's path
 * records give each port its number as LID), as a GMP from this port's
 * LID and QP1 with the WR's P_Key index: ib_cm's REQ, REP, RTU, DREQ...
 * between the ports.  Delivered from the work that delivers the SA's
 * answers, never inside the sender's post_send.  Any context.
 */
static bool fib_cm_forward(struct fib_port *p, const struct ib_send_wr *wr)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct fib_ah *ah = container_of(ud->ah, struct fib_ah, ibah);
	u16 dlid = rdma_ah_get_dlid(&ah->attr);
	struct fib_sa_reply *r;
	struct fib_port *to;
	unsigned int off = 0;
	unsigned long flags;
	bool first;
	int i;

	if (!wr->num_sge || wr->sg_list[0].length < 2 ||
	    ((u8 *)(uintptr_t)wr->sg_list[0].addr)[1] != IB_MGMT_CLASS_CM)
		return false;
	if (dlid < 1 || dlid > FIB_PORTS || ud->remote_qpn != 1)
		return true;		/* nobody there: lost */
	to = &p->fd->port[dlid - 1];
	r = kzalloc(sizeof(*r), GFP_ATOMIC);
	if (!r)
		return true;
	for (i = 0; i < wr->num_sge && off < sizeof(r->mad); i++) {
		u32 len = min_t(u32, wr->sg_list[i].length, sizeof(r->mad) - off);

		memcpy(r->mad + off, (void *)(uintptr_t)wr->sg_list[i].addr, len);
		off += len;
	}
	r->slid = p->num;
	r->pkey_index = ud->pkey_index;
	spin_lock_irqsave(&p->fd->lock, flags);
	r->due = jiffies;
	first = list_empty(&to->sa_replies);
	list_add_tail(&r->node, &to->sa_replies);
	if (first)
		queue_delayed_work(system_wq, &to->sa_work, 0);
	spin_unlock_irqrestore(&p->fd->lock, flags);
	return true;
}

/*
 * Sends complete at once.  A QP sends only in RTS (IBTA Vol 1 10.3.1;
 * rxe_post_send(): "qp not ready to send"), SEND (with immediate, on
 * UD and RC) only, at most the QP's send SGEs; refused otherwise (the WR
 * and those after it in *bad).  An RC QP in the error state takes the
 * WR and completes it with a flush error (10.3.1, "Error": ipoib drains
 * a connection's QP so, ipoib_cm_start_rx_drain()).  QP0/QP1 sends go
 * to the fake SA, or as CM MADs to the other port's QP1
 * (fib_cm_forward()); UD ones to the other port (fib_ud_send()), RC
 * ones to the QP connected (fib_rc_send()).
 */
static int fib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad)
{
	struct fib_qp *qp = to_fqp(ibqp);
	struct fib_dev *fd = to_fd(ibqp->device);
	struct sk_buff_head rxq;
	struct fib_port *p;
	unsigned long flags;
	struct sk_buff *skb;
	struct ib_wc wc;
	int i, ret = 0;

	__skb_queue_head_init(&rxq);
	for (; wr; wr = wr->next) {
		bool rc = ibqp->qp_type == IB_QPT_RC;
		enum ib_qp_state st = READ_ONCE(qp->state);

		if ((st != IB_QPS_RTS && !(rc && st == IB_QPS_ERR)) ||
		    !qp->port ||
		    (wr->opcode != IB_WR_SEND &&
		     !(wr->opcode == IB_WR_SEND_WITH_IMM &&
		       (ibqp->qp_type == IB_QPT_UD || rc))) ||
		    wr->num_sge > qp->max_send_sge ||
		    (wr->send_flags & IB_SEND_IP_CSUM)) {
			ret = -EINVAL;
			break;
		}
		p = &fd->port[qp->port - 1];
		memset(&wc, 0, sizeof(wc));
		wc.wr_cqe = wr->wr_cqe;
		wc.status = IB_WC_SUCCESS;
		wc.opcode = IB_WC_SEND;
		wc.qp = ibqp;
		for (i = 0; i < wr->num_sge; i++)
			wc.byte_len += wr->sg_list[i].length;
		if (ibqp->qp_type == IB_QPT_UD) {
			spin_lock_irqsave(&fd->lock, flags);
			wc.status = fib_ud_send(qp, wr, &rxq);
			spin_unlock_irqrestore(&fd->lock, flags);
		} else if (rc && st == IB_QPS_ERR) {
			wc.status = IB_WC_WR_FLUSH_ERR;
		} else if (rc) {
			spin_lock_irqsave(&fd->lock, flags);
			wc.status = fib_rc_send(qp, wr);
			spin_unlock_irqrestore(&fd->lock, flags);
			if (wc.status != IB_WC_SUCCESS) {
				spin_lock_irqsave(&qp->lock, flags);
				qp->state = IB_QPS_ERR;
				fib_flush_rq(qp);
				spin_unlock_irqrestore(&qp->lock, flags);
			}
		}
		ret = fib_cq_push(to_fcq(ibqp->send_cq), &wc);
		if (ret)
			break;
		if (ibqp->qp_type == IB_QPT_UD || rc)
			continue;
		WRITE_ONCE(p->mad_sends, p->mad_sends + 1);
		if (ibqp->qp_num == 1 && !fib_cm_forward(p, wr))
			fib_sa_request(p, wr);
	}
	/* Datagrams for enhanced interfaces, outside fd->lock (fib_rn_rx()) */
	while ((skb = __skb_dequeue(&rxq)))
		netif_rx(skb);
	if (ret) {
		*bad = wr;
		if (qp->port) {
			p = &fd->port[qp->port - 1];
			WRITE_ONCE(p->send_errors, p->send_errors + 1);
		}
	}
	return ret;
}

/*
 * Receives may be posted from INIT on (IBTA Vol 1 10.3.1; not in RESET
 * or ERR), with at most the QP's receive SGEs (rxe_post_recv()).
 */
static int fib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad)
{
	struct fib_qp *qp = to_fqp(ibqp);
	struct fib_rwqe *e;
	unsigned long flags;
	int i, ret = 0;

	spin_lock_irqsave(&qp->lock, flags);
	for (; wr; wr = wr->next) {
		if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_ERR ||
		    wr->num_sge < 1 || wr->num_sge > qp->max_recv_sge ||
		    qp->rq_count == qp->rq_size) {
			ret = -EINVAL;
			break;
		}
		e = &qp->rq[(qp->rq_head + qp->rq_count) % qp->rq_size];
		e->cqe = wr->wr_cqe;
		e->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++)
			e->sge[i] = wr->sg_list[i];
		qp->rq_count++;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (ret)
		*bad = wr;
	return ret;
}

static const struct ib_device_ops fib_ib_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,

	.query_device = fib_query_device,
	.query_port = fib_query_port,
	.modify_port = fib_modify_port,
	.get_port_immutable = fib_get_port_immutable,
	.query_pkey = fib_query_pkey,
	.query_gid = fib_query_gid,
	.alloc_pd = fib_alloc_pd,
	.dealloc_pd = fib_dealloc_pd,
	.create_ah = fib_create_ah,
	.destroy_ah = fib_destroy_ah,
	.query_ah = fib_query_ah,
	.get_dma_mr = fib_get_dma_mr,
	.reg_user_mr = fib_reg_user_mr,
	.dereg_mr = fib_dereg_mr,
	.create_cq = FIB_CREATE_CQ,
	.destroy_cq = fib_destroy_cq,
	.poll_cq = fib_poll_cq,
	.req_notify_cq = fib_req_notify_cq,
	.create_qp = fib_create_qp,
	.modify_qp = fib_modify_qp,
	.query_qp = fib_query_qp,
	.destroy_qp = fib_destroy_qp,
	.attach_mcast = fib_attach_mcast,
	.detach_mcast = fib_detach_mcast,
	.post_send = fib_post_send,
	.post_recv = fib_post_recv,

	INIT_RDMA_OBJ_SIZE(ib_ah, fib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, fib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, fib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, fib_qp, ibqp),
};

/* ---- enhanced IPoIB: the rdma_netdev ipoib asks the device for ---- */

/*
 * With enhanced=MASK the device answers ipoib's rdma_netdev_get_params()
 * for those ports (ipoib_intf_init(), rdma_init_netdev()) as mlx5 does
 * when its firmware has IPoIB offloads (mlx5_rdma_rn_get_params(),
 * mlx5_rdma_setup_rn()): the netdev's insides are then the driver's, not
 * ipoib's.  ipoib keeps the control path (ARP, the SA, joins, paths,
 * AHs) and calls the driver through the rdma_netdev (send, attach_mcast,
 * detach_mcast, set_id) and the net_device_ops it saved (rn_ops:
 * ndo_init, ndo_open, ndo_stop, ndo_uninit).  The driver's ndo_init makes
 * the underlay QP, a UD QP whose QPN is the interface's (bytes 1..3 of
 * its address: mlx5i_dev_init()); ndo_open takes it to RTS with the
 * P_Key index set_id gave and the default Q_Key (mlx5i_init_underlay_qp());
 * receives for its QPN or its groups bypass ipoib and go straight to
 * the stack (mlx5i_complete_rx_cqe()); set_id is what tells enhanced
 * from legacy (ipoib_pkey_dev_check_presence(): only the driver's has
 * one).  P_Key children get their own rdma_netdev and underlay QP
 * (ipoib_new_child_link() -> ipoib_intf_init(); mlx5i_pkey_dev_init()).
 * ipoib's own UD QP and connected mode are not there: no RC flag in the
 * address, so ipoib refuses "connected" (ipoib_set_mode()).
 */
struct fib_rn {
	struct rdma_netdev rn;		/* first: ipoib's netdev_priv() */
	struct fib_port *port;
	struct fib_qp *uqp;		/* from ndo_init to ndo_uninit */
	u16 pkey_index;			/* set_id's */
	u32 qkey;			/* the broadcast group's (attach_mcast) */
};

/*
 * A datagram for an underlay QP (its state, P_Key and Q_Key checked by
 * fib_ud_rx()) made into an skb as mlx5i_complete_rx_cqe() makes one:
 * packet type from the GRH's DGID, the interface's own multicast that
 * came back dropped, the GRH pulled, the protocol from ipoib's header,
 * a zeroed pseudo header before it as the MAC header, then both pulled.
 * Queued on pk->rxq: netif_rx() after fd->lock is dropped (it may
 * enable BHs, which it must not with IRQs off).  Under fd->lock.
 */
static void fib_rn_rx(struct fib_port *to, struct fib_qp *qp,
		      const struct fib_ud_pkt *pk)
{
	const struct ib_grh *grh = (const struct ib_grh *)pk->buf;
	struct net_device *dev = qp->ndev;
	struct sk_buff *skb;

	if (pk->len < FIB_HDR_LEN || !pk->rxq)
		return;
	if (pk->grh && pk->src_qp == qp->ibqp.qp_num &&
	    !memcmp(grh->sgid.raw, dev->dev_addr + 4, 16))
		return;
	skb = netdev_alloc_skb(dev, FIB_PSEUDO_LEN + pk->len);
	if (!skb) {
		dev->stats.rx_dropped++;
		return;
	}
	skb_reserve(skb, FIB_PSEUDO_LEN);
	skb_put_data(skb, pk->buf + IB_GRH_BYTES, pk->len);
	if (!pk->grh || grh->dgid.raw[0] != 0xff)
		skb->pkt_type = PACKET_HOST;
	else if (!memcmp(grh->dgid.raw, dev->broadcast + 4, 16))
		skb->pkt_type = PACKET_BROADCAST;
	else
		skb->pkt_type = PACKET_MULTICAST;
	skb->protocol = *(__be16 *)skb->data;
	memset(skb_push(skb, FIB_PSEUDO_LEN), 0, FIB_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, FIB_HARD_LEN);
	skb->ip_summed = CHECKSUM_NONE;
	dev->stats.rx_packets++;
	dev->stats.rx_bytes += pk->len;
	to->ud_rcvd++;
	__skb_queue_tail(pk->rxq, skb);
}

static void fib_rn_drain(struct sk_buff_head *rxq)
{
	struct sk_buff *skb;

	while ((skb = __skb_dequeue(rxq)))
		netif_rx(skb);
}

/*
 * ipoib's transmit (ipoib_start_xmit(), the pseudo header taken off):
 * @skb starts with ipoib's 4-byte header; one UD datagram from the
 * underlay QP to @dqpn through @address, with the group's Q_Key and
 * the P_Key index set_id gave, as mlx5i_xmit() sends it.  Longer than
 * the port's MTU: a local length error, dropped.  Always consumes @skb.
 */
static int fib_rn_send(struct net_device *dev, struct sk_buff *skb,
		       struct ib_ah *address, u32 dqpn)
{
	struct fib_rn *r = netdev_priv(dev);
	struct fib_port *p = r->port;
	struct fib_dev *fd = p->fd;
	struct fib_ud_pkt pk = { .from = p };
	struct sk_buff_head rxq;
	struct fib_qp *u;
	unsigned long flags;
	bool sent = false;

	__skb_queue_head_init(&rxq);
	spin_lock_irqsave(&fd->lock, flags);
	u = r->uqp;
	if (!u || READ_ONCE(u->state) != IB_QPS_RTS) {
		dev->stats.tx_dropped++;
	} else if (skb->len > ib_mtu_enum_to_int(READ_ONCE(p->mtu))) {
		p->len_err_tx++;
		dev->stats.tx_errors++;
	} else if (!skb_copy_bits(skb, 0, fd->bounce + IB_GRH_BYTES, skb->len)) {
		pk.src_qp = u->ibqp.qp_num;
		pk.len = skb->len;
		pk.pkey = p->pkeys[r->pkey_index];
		pk.qkey = r->qkey;
		pk.rxq = &rxq;
		u->ud_sent++;
		fib_ud_route(fd, p, container_of(address, struct fib_ah, ibah),
			     dqpn, &pk);
		sent = true;
	}
	spin_unlock_irqrestore(&fd->lock, flags);
	if (sent) {
		dev->stats.tx_packets++;
		dev->stats.tx_bytes += skb->len;
	}
	dev_kfree_skb_any(skb);
	fib_rn_drain(&rxq);
	return NETDEV_TX_OK;
}

/* The underlay QP's groups: attached to its QPN (mlx5_core_attach_mcg()). */
static int fib_rn_attach_mcast(struct net_device *dev, struct ib_device *hca,
			       union ib_gid *gid, u16 mlid, int set_qkey,
			       u32 qkey)
{
	struct fib_rn *r = netdev_priv(dev);
	unsigned long flags;
	int ret;

	if (!r->uqp)
		return -ENODEV;
	ret = fib_attach_mcast(&r->uqp->ibqp, gid, mlid);
	/*
	 * The broadcast group's Q_Key (ipoib_mcast_join_finish()): mlx5
	 * sends with it (mlx5i_xmit()); the QP receives with it too, as
	 * ipoib's own QP does once ipoib_mcast_attach() has set it, so a
	 * legacy peer's datagrams pass the Q_Key rule.
	 */
	if (set_qkey) {
		spin_lock_irqsave(&r->uqp->lock, flags);
		r->qkey = qkey;
		r->uqp->qkey = qkey;
		spin_unlock_irqrestore(&r->uqp->lock, flags);
	}
	return ret;
}

static int fib_rn_detach_mcast(struct net_device *dev, struct ib_device *hca,
			       union ib_gid *gid, u16 mlid)
{
	struct fib_rn *r = netdev_priv(dev);

	return r->uqp ? fib_detach_mcast(&r->uqp->ibqp, gid, mlid) : -ENODEV;
}

static void fib_rn_set_id(struct net_device *dev, int id)
{
	struct fib_rn *r = netdev_priv(dev);

	if (id >= 0 && id < FIB_PKEYS)
		r->pkey_index = id;
}

/* The underlay QP: a UD QP of the device's, its QPN the address's. */
static int fib_rn_ndo_init(struct net_device *dev)
{
	struct fib_rn *r = netdev_priv(dev);
	struct fib_dev *fd = r->port->fd;
	struct fib_qp *qp;
	unsigned long flags;
	u8 qpn[3];
	int i;

	qp = kzalloc(sizeof(*qp), GFP_KERNEL);
	if (!qp)
		return -ENOMEM;
	spin_lock_init(&qp->lock);
	qp->ibqp.device = &fd->ibdev;
	qp->ibqp.qp_type = IB_QPT_UD;
	qp->state = IB_QPS_RESET;
	qp->port = r->port->num;
	qp->qkey = FIB_DEFAULT_QKEY;
	qp->ndev = dev;
	spin_lock_irqsave(&fd->lock, flags);
	for (i = 0; i < FIB_QPS && fd->qps[i]; i++)
		;
	if (i < FIB_QPS) {
		fd->qps[i] = qp;
		qp->ibqp.qp_num = FIB_QPN0 + i;
		r->uqp = qp;
	}
	spin_unlock_irqrestore(&fd->lock, flags);
	if (i == FIB_QPS) {
		kfree(qp);
		return -ENOMEM;
	}
	qpn[0] = qp->ibqp.qp_num >> 16;
	qpn[1] = qp->ibqp.qp_num >> 8;
	qpn[2] = qp->ibqp.qp_num;
	dev_addr_mod(dev, 1, qpn, sizeof(qpn));
	return 0;
}

static void fib_rn_ndo_uninit(struct net_device *dev)
{
	struct fib_rn *r = netdev_priv(dev);
	struct fib_dev *fd = r->port->fd;
	struct fib_qp *qp = r->uqp;
	unsigned long flags;

	if (!qp)
		return;
	spin_lock_irqsave(&fd->lock, flags);
	fd->qps[qp->ibqp.qp_num - FIB_QPN0] = NULL;
	r->uqp = NULL;
	spin_unlock_irqrestore(&fd->lock, flags);
	kfree(qp);
}

/* RESET -> INIT (P_Key index, port, Q_Key) -> RTR -> RTS, or back. */
static void fib_rn_qp_state(struct fib_rn *r, enum ib_qp_state st)
{
	struct fib_qp *qp = r->uqp;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	if (st == IB_QPS_RTS) {
		qp->pkey_index = r->pkey_index;
		qp->qkey = FIB_DEFAULT_QKEY;
	}
	WRITE_ONCE(qp->state, st);
	spin_unlock_irqrestore(&qp->lock, flags);
}

static int fib_rn_ndo_open(struct net_device *dev)
{
	struct fib_rn *r = netdev_priv(dev);

	if (!r->uqp)
		return -ENODEV;
	fib_rn_qp_state(r, IB_QPS_RTS);
	return 0;
}

static int fib_rn_ndo_stop(struct net_device *dev)
{
	struct fib_rn *r = netdev_priv(dev);

	netif_carrier_off(dev);
	if (r->uqp)
		fib_rn_qp_state(r, IB_QPS_RESET);
	return 0;
}

static const struct net_device_ops fib_rn_netdev_ops = {
	.ndo_init = fib_rn_ndo_init,
	.ndo_uninit = fib_rn_ndo_uninit,
	.ndo_open = fib_rn_ndo_open,
	.ndo_stop = fib_rn_ndo_stop,
};

static int fib_rn_setup(struct ib_device *ibdev, u32 port,
			struct net_device *dev, void *param)
{
	struct fib_rn *r = netdev_priv(dev);

	r->port = &to_fd(ibdev)->port[port - 1];
	r->qkey = FIB_DEFAULT_QKEY;
	r->rn.hca = ibdev;
	r->rn.send = fib_rn_send;
	r->rn.attach_mcast = fib_rn_attach_mcast;
	r->rn.detach_mcast = fib_rn_detach_mcast;
	r->rn.set_id = fib_rn_set_id;
	dev->netdev_ops = &fib_rn_netdev_ops;
	netif_carrier_off(dev);
	return 0;
}

/* -EOPNOTSUPP (ipoib then runs its own datagram path) but on @enhanced ports. */
static int fib_rn_get_params(struct ib_device *ibdev, u32 port,
			     enum rdma_netdev_t type,
			     struct rdma_netdev_alloc_params *params)
{
	if (type != RDMA_NETDEV_IPOIB || port < 1 || port > FIB_PORTS ||
	    !(enhanced & BIT(port - 1)))
		return -EOPNOTSUPP;
	params->sizeof_priv = sizeof(struct fib_rn);
	params->txqs = 1;
	params->rxqs = 1;
	params->param = NULL;
	params->initialize_rdma_netdev = fib_rn_setup;
	return 0;
}

static const struct ib_device_ops fib_enh_ops = {
	.rdma_netdev_get_params = fib_rn_get_params,
};

/* ---- the IPoIB-like interfaces ---- */

/* ipoib's broadcast address for IPv4; bytes 8..9 take the P_Key. */
static const u8 fib_bcast[INFINIBAND_ALEN] = {
	0x00, 0xff, 0xff, 0xff, 0xff, 0x12, 0x40, 0x1b,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xff, 0xff, 0xff, 0xff,
};

static bool fib_pkey_in_table(struct fib_port *p, u16 pkey)
{
	struct fib_dev *fd = p->fd;
	unsigned long flags;
	bool found = false;
	int i;

	spin_lock_irqsave(&fd->lock, flags);
	for (i = 0; i < FIB_PKEYS; i++)
		if ((p->pkeys[i] & 0x7fff) == (pkey & 0x7fff) &&
		    (p->pkeys[i] & 0x7fff))
			found = true;
	spin_unlock_irqrestore(&fd->lock, flags);
	return found;
}

/* Carrier as ipoib has it: the port active and the P_Key in its table. */
static void fib_carrier(struct net_device *dev)
{
	struct fib_ndev *n = netdev_priv(dev);

	if (READ_ONCE(n->port->state) == IB_PORT_ACTIVE &&
	    fib_pkey_in_table(n->port, n->pkey))
		netif_carrier_on(dev);
	else
		netif_carrier_off(dev);
}

/* The other port's interface with @pkey; under RCU. */
static struct net_device *fib_peer(struct fib_ndev *n)
{
	struct fib_port *o = &n->port->fd->port[n->port->num == 1 ? 1 : 0];
	struct net_device *pd = rcu_dereference(o->ndev);
	struct fib_ndev *c;

	if (pd && ((struct fib_ndev *)netdev_priv(pd))->pkey == n->pkey)
		return pd;
	list_for_each_entry_rcu(c, &o->children, node)
		if (c->pkey == n->pkey)
			return c->dev;
	return NULL;
}

static netdev_tx_t fib_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct fib_ndev *n = netdev_priv(dev);
	u8 dst[INFINIBAND_ALEN];
	struct net_device *peer;
	__be16 proto;
	bool mc;

	if (skb->len < FIB_HARD_LEN || !netif_carrier_ok(dev))
		goto drop;
	memcpy(dst, skb->data, INFINIBAND_ALEN);
	proto = *(__be16 *)(skb->data + FIB_PSEUDO_LEN);
	mc = dst[4] == 0xff;
	rcu_read_lock();
	peer = fib_peer(n);
	if (!peer || !(peer->flags & IFF_UP) || !netif_carrier_ok(peer) ||
	    (!mc && memcmp(dst + 4, peer->dev_addr + 4, 16))) {
		rcu_read_unlock();
		goto drop;
	}
	dev->stats.tx_packets++;
	dev->stats.tx_bytes += skb->len - FIB_HARD_LEN;
	skb_scrub_packet(skb, !net_eq(dev_net(dev), dev_net(peer)));
	skb->dev = peer;
	/* As ipoib receives: the pseudo header zeroed, then the header. */
	memset(skb->data, 0, FIB_PSEUDO_LEN);
	skb_reset_mac_header(skb);
	skb_pull(skb, FIB_HARD_LEN);
	skb_reset_network_header(skb);
	skb->protocol = proto;
	skb->pkt_type = !mc ? PACKET_HOST :
			!memcmp(dst + 4, peer->broadcast + 4, 16) ?
			PACKET_BROADCAST : PACKET_MULTICAST;
	skb->ip_summed = CHECKSUM_NONE;
	peer->stats.rx_packets++;
	peer->stats.rx_bytes += skb->len;
	netif_rx(skb);
	rcu_read_unlock();
	return NETDEV_TX_OK;

drop:
	dev->stats.tx_dropped++;
	kfree_skb(skb);
	return NETDEV_TX_OK;
}

static int fib_join_done(int status, struct ib_sa_multicast *mc)
{
	struct fib_ndev *n = mc->context;

	/*
	 * The group in error (port or SM events): leave and join again; a
	 * join that failed (no SM address yet after an event: -EAGAIN) is
	 * tried again 100 ms later, as ipoib backs off.
	 */
	WRITE_ONCE(n->joined, !status);
	if (status == -ENETRESET)
		schedule_delayed_work(&n->rejoin, 0);
	else if (status)
		schedule_delayed_work(&n->rejoin, msecs_to_jiffies(100));
	return 0;
}

/* Join the broadcast group (create it if need be).  Under n->mc_lock. */
static void fib_join(struct fib_ndev *n)
{
	struct ib_sa_mcmember_rec rec = { };
	struct ib_sa_multicast *mc;

	memcpy(rec.mgid.raw, n->dev->broadcast + 4, sizeof(rec.mgid.raw));
	rec.port_gid = fib_port_gid(n->port->num);
	rec.pkey = cpu_to_be16(n->pkey);
	rec.join_state = 1;
	mc = ib_sa_join_multicast(&fib_sa_client, &n->port->fd->ibdev,
				  n->port->num, &rec,
				  IB_SA_MCMEMBER_REC_MGID |
				  IB_SA_MCMEMBER_REC_PORT_GID |
				  IB_SA_MCMEMBER_REC_PKEY |
				  IB_SA_MCMEMBER_REC_JOIN_STATE,
				  GFP_KERNEL, fib_join_done, n);
	n->mc = IS_ERR(mc) ? NULL : mc;
}

/* Under n->mc_lock. */
static void fib_leave(struct fib_ndev *n)
{
	if (!n->mc)
		return;
	ib_sa_free_multicast(n->mc);
	n->mc = NULL;
	WRITE_ONCE(n->joined, false);
}

/*
 * As ipoib after a multicast error: the old membership goes (the group
 * with it when it was the last: its record is gone until the new join
 * is answered), then a new join.
 */
static void fib_rejoin(struct work_struct *work)
{
	struct fib_ndev *n = container_of(to_delayed_work(work),
					  struct fib_ndev, rejoin);

	mutex_lock(&n->mc_lock);
	if (n->mc) {
		fib_leave(n);
		if (n->up)
			fib_join(n);
	}
	mutex_unlock(&n->mc_lock);
}

static int fib_open(struct net_device *dev)
{
	struct fib_ndev *n = netdev_priv(dev);

	fib_carrier(dev);
	netif_start_queue(dev);
	mutex_lock(&n->mc_lock);
	n->up = true;
	fib_join(n);
	mutex_unlock(&n->mc_lock);
	return 0;
}

static int fib_stop(struct net_device *dev)
{
	struct fib_ndev *n = netdev_priv(dev);

	netif_stop_queue(dev);
	mutex_lock(&n->mc_lock);
	n->up = false;
	fib_leave(n);
	mutex_unlock(&n->mc_lock);
	/* After the leave no callback can schedule it again. */
	cancel_delayed_work_sync(&n->rejoin);
	return 0;
}

static int fib_get_iflink(const struct net_device *dev)
{
	const struct fib_ndev *n = netdev_priv(dev);

	return n->parent ? n->parent->ifindex : dev->ifindex;
}

static const struct net_device_ops fib_netdev_ops = {
	.ndo_open = fib_open,
	.ndo_stop = fib_stop,
	.ndo_start_xmit = fib_xmit,
	.ndo_get_iflink = fib_get_iflink,
};

static int fib_hard_header(struct sk_buff *skb, struct net_device *dev,
			   unsigned short type, const void *daddr,
			   const void *saddr, unsigned int len)
{
	u8 *h = skb_push(skb, FIB_HDR_LEN);

	*(__be16 *)h = htons(type);
	h[2] = 0;
	h[3] = 0;
	h = skb_push(skb, FIB_PSEUDO_LEN);
	if (daddr)
		memcpy(h, daddr, INFINIBAND_ALEN);
	else
		memset(h, 0, INFINIBAND_ALEN);
	return FIB_HARD_LEN;
}

static const struct header_ops fib_header_ops = {
	.create = fib_hard_header,
};

static void fib_setup(struct net_device *dev)
{
	dev->netdev_ops = &fib_netdev_ops;
	dev->header_ops = &fib_header_ops;
	dev->type = ARPHRD_INFINIBAND;
	dev->addr_len = INFINIBAND_ALEN;
	dev->hard_header_len = FIB_HARD_LEN;
	dev->flags |= IFF_BROADCAST | IFF_MULTICAST;
	dev->tx_queue_len = 256;
	dev->features = NETIF_F_VLAN_CHALLENGED;
	dev->min_mtu = 68;
	dev->max_mtu = 4092;
	dev->needs_free_netdev = true;
	memcpy(dev->broadcast, fib_bcast, INFINIBAND_ALEN);
}

/* Addresses, MTU and port of a new interface on @p with @pkey and a new QPN. */
static void fib_ndev_init(struct net_device *dev, struct fib_port *p, u16 pkey)
{
	struct fib_ndev *n = netdev_priv(dev);
	union ib_gid gid = fib_port_gid(p->num);
	u8 addr[INFINIBAND_ALEN] = { 0 };
	unsigned long flags;
	u32 qpn;

	spin_lock_irqsave(&p->fd->lock, flags);
	qpn = p->fd->next_qpn++;
	spin_unlock_irqrestore(&p->fd->lock, flags);
	n->port = p;
	n->dev = dev;
	n->pkey = pkey;
	n->qpn = qpn;
	n->rn.hca = &p->fd->ibdev;
	n->rn.port_num = p->num;
	INIT_LIST_HEAD(&n->node);
	mutex_init(&n->mc_lock);
	INIT_DELAYED_WORK(&n->rejoin, fib_rejoin);
	addr[1] = qpn >> 16;
	addr[2] = qpn >> 8;
	addr[3] = qpn;
	memcpy(addr + 4, gid.raw, 16);
	dev_addr_set(dev, addr);
	dev->broadcast[8] = pkey >> 8;
	dev->broadcast[9] = pkey & 0xff;
	dev->mtu = ib_mtu_enum_to_int(READ_ONCE(p->mtu)) - FIB_HDR_LEN;
	dev->rtnl_link_ops = &fib_link_ops;
}

static const struct nla_policy fib_policy[IFLA_IPOIB_MAX + 1] = {
	[IFLA_IPOIB_PKEY] = { .type = NLA_U16 },
	[IFLA_IPOIB_MODE] = { .type = NLA_U16 },
	[IFLA_IPOIB_UMCAST] = { .type = NLA_U16 },
};

static int fib_changelink(struct net_device *dev, struct nlattr *tb[],
			  struct nlattr *data[], struct netlink_ext_ack *extack)
{
	struct fib_ndev *n = netdev_priv(dev);

	if (!data)
		return 0;
	if (data[IFLA_IPOIB_MODE]) {
		u16 mode = nla_get_u16(data[IFLA_IPOIB_MODE]);

		if (mode != IPOIB_MODE_DATAGRAM && mode != IPOIB_MODE_CONNECTED)
			return -EINVAL;
		n->mode = mode;
	}
	if (data[IFLA_IPOIB_UMCAST])
		n->umcast = nla_get_u16(data[IFLA_IPOIB_UMCAST]);
	return 0;
}

/* A P_Key child, as ipoib's ipoib_new_child_link(). */
static int fib_newlink(struct net *src_net, struct net_device *dev,
		       struct nlattr *tb[], struct nlattr *data[],
		       struct netlink_ext_ack *extack)
{
	struct fib_ndev *n = netdev_priv(dev), *pn, *c;
	struct net_device *parent;
	u16 pkey;
	int ret;

	if (!tb[IFLA_LINK])
		return -EINVAL;
	parent = __dev_get_by_index(src_net, nla_get_u32(tb[IFLA_LINK]));
	if (!parent || parent->rtnl_link_ops != &fib_link_ops)
		return -ENODEV;
	pn = netdev_priv(parent);
	if (pn->parent)
		return -EINVAL;		/* no child of a child */
	pkey = data && data[IFLA_IPOIB_PKEY] ?
	       nla_get_u16(data[IFLA_IPOIB_PKEY]) : pn->pkey;
	pkey |= 0x8000;
	if (pkey == pn->pkey)
		return -ENOTUNIQ;
	list_for_each_entry(c, &pn->port->children, node)
		if (c->pkey == pkey)
			return -ENOTUNIQ;
	fib_ndev_init(dev, pn->port, pkey);
	n->parent = parent;
	n->mode = pn->mode;
	ret = fib_changelink(dev, tb, data, extack);
	if (ret)
		return ret;
	ret = register_netdevice(dev);
	if (ret)
		return ret;
	list_add_tail_rcu(&n->node, &pn->port->children);
	fib_carrier(dev);
	return 0;
}

static void fib_dellink(struct net_device *dev, struct list_head *head)
{
	struct fib_ndev *n = netdev_priv(dev);

	if (!n->parent)
		return;		/* parents go with their device */
	list_del_rcu(&n->node);
	unregister_netdevice_queue(dev, head);
}

static size_t fib_get_size(const struct net_device *dev)
{
	return 3 * nla_total_size(sizeof(u16));
}

static int fib_fill_info(struct sk_buff *skb, const struct net_device *dev)
{
	const struct fib_ndev *n = netdev_priv(dev);

	if (nla_put_u16(skb, IFLA_IPOIB_PKEY, n->pkey) ||
	    nla_put_u16(skb, IFLA_IPOIB_MODE, n->mode) ||
	    nla_put_u16(skb, IFLA_IPOIB_UMCAST, n->umcast))
		return -EMSGSIZE;
	return 0;
}

static struct rtnl_link_ops fib_link_ops = {
	.kind = "ipoib",
	.netns_refund = true,
	.maxtype = IFLA_IPOIB_MAX,
	.policy = fib_policy,
	.priv_size = sizeof(struct fib_ndev),
	.setup = fib_setup,
	.newlink = fib_newlink,
	.dellink = fib_dellink,
	.changelink = fib_changelink,
	.get_size = fib_get_size,
	.fill_info = fib_fill_info,
};

/* ---- the client that makes the interfaces, as ipoib's does ---- */

static struct ib_client fib_client;

static void fib_client_remove(struct ib_device *ibdev, void *data);

static int fib_client_add(struct ib_device *ibdev)
{
	struct fib_dev *fd = to_fd(ibdev);
	struct net_device *dev;
	int i, ret;

	if (ibdev->ops.query_port != fib_query_port)
		return -EOPNOTSUPP;
	for (i = 0; i < FIB_PORTS; i++) {
		struct fib_port *p = &fd->port[i];

		dev = alloc_netdev(sizeof(struct fib_ndev), "fib%d",
				   NET_NAME_ENUM, fib_setup);
		if (!dev)
			return -ENOMEM;
		fib_ndev_init(dev, p, 0xffff);
		SET_NETDEV_DEV(dev, ibdev->dev.parent);
		dev->dev_port = i;
		ret = register_netdev(dev);
		if (ret) {
			free_netdev(dev);
			/* ib_core calls no remove for a failed add. */
			fib_client_remove(ibdev, NULL);
			return ret;
		}
		rcu_assign_pointer(p->ndev, dev);
	}
	return 0;
}

static void fib_client_remove(struct ib_device *ibdev, void *data)
{
	struct fib_dev *fd = to_fd(ibdev);
	struct fib_ndev *c, *tmp;
	struct net_device *dev;
	LIST_HEAD(head);
	int i;

	rtnl_lock();
	for (i = 0; i < FIB_PORTS; i++) {
		struct fib_port *p = &fd->port[i];

		list_for_each_entry_safe(c, tmp, &p->children, node) {
			list_del_rcu(&c->node);
			unregister_netdevice_queue(c->dev, &head);
		}
		dev = rtnl_dereference(p->ndev);
		RCU_INIT_POINTER(p->ndev, NULL);
		if (dev)
			unregister_netdevice_queue(dev, &head);
	}
	unregister_netdevice_many(&head);
	rtnl_unlock();
}

static struct ib_client fib_client = {
	.name = "fakeib",
	.add = fib_client_add,
	.remove = fib_client_remove,
};

/* ---- the device ---- */

static int fib_dev_create(void)
{
	struct fib_dev *fd;
	int i, j, ret;

	fd = ib_alloc_device(fib_dev, ibdev);
	if (!fd)
		return -ENOMEM;
	spin_lock_init(&fd->lock);
	fd->next_qpn = 0x48;
	for (i = 0; i < FIB_PORTS; i++) {
		struct fib_port *p = &fd->port[i];

		p->fd = fd;
		p->num = i + 1;
		p->state = IB_PORT_ACTIVE;
		p->mtu = IB_MTU_2048;
		p->cap_flags = IB_PORT_CM_SUP;
		p->sa_qkey = 0x0b1b;
		INIT_LIST_HEAD(&p->children);
		INIT_LIST_HEAD(&p->sa_replies);
		INIT_DELAYED_WORK(&p->sa_work, fib_sa_work);
		for (j = 0; j < FIB_PKEYS; j++)
			p->pkeys[j] = 0;
		p->pkeys[0] = 0xffff;
		p->pkeys[1] = 0x8001;
	}
	fd->ibdev.node_type = RDMA_NODE_IB_CA;
	fd->ibdev.node_guid = cpu_to_be64(FIB_GUID);
	fd->ibdev.phys_port_cnt = FIB_PORTS;
	fd->ibdev.num_comp_vectors = 1;
	fd->ibdev.dev.parent = &fib_pdev->dev;
	strscpy(fd->ibdev.node_desc, "fakeib", sizeof(fd->ibdev.node_desc));
	ib_set_device_ops(&fd->ibdev, &fib_ib_ops);
	if (ipoib && enhanced)
		ib_set_device_ops(&fd->ibdev, &fib_enh_ops);
	ret = ib_register_device(&fd->ibdev, "fakeib%d", NULL);
	if (ret) {
		ib_dealloc_device(&fd->ibdev);
		return ret;
	}
	fib = fd;
	/* The suite's timeline in the kernel log. */
	pr_info("%s registered\n", dev_name(&fd->ibdev.dev));
	return 0;
}

/* Under fib_lock. */
static void fib_dev_remove(void)
{
	if (!fib)
		return;
	pr_info("%s unregistering\n", dev_name(&fib->ibdev.dev));
	ib_unregister_device(&fib->ibdev);
	ib_dealloc_device(&fib->ibdev);
	fib = NULL;
}

/* ---- debugfs ---- */

static const char *const fib_qps_name[] = {
	[IB_QPS_RESET] = "reset", [IB_QPS_INIT] = "init", [IB_QPS_RTR] = "rtr",
	[IB_QPS_RTS] = "rts", [IB_QPS_SQD] = "sqd", [IB_QPS_SQE] = "sqe",
	[IB_QPS_ERR] = "err",
};

static void fib_show_ndev(struct seq_file *m, const char *what,
			  const struct fib_ndev *n)
{
	seq_printf(m, "  %s %s pkey 0x%04x qpn 0x%06x joined %d\n", what,
		   n->dev->name, n->pkey, n->qpn, READ_ONCE(n->joined));
}

static int fib_state_show(struct seq_file *m, void *unused)
{
	struct fib_ndev *c;
	struct net_device *dev;
	int i, j;

	mutex_lock(&fib_lock);
	seq_printf(m, "registered %d\n", !!fib);
	for (i = 0; fib && i < FIB_PORTS; i++) {
		struct fib_port *p = &fib->port[i];

		seq_printf(m, "port %u state %u mtu %d qp0 %d qp1 %d mad_sends %llu send_errors %llu sa_answers %llu sa_qkey 0x%08x sa_delay_ms %u pkeys",
			   p->num, READ_ONCE(p->state),
			   ib_mtu_enum_to_int(READ_ONCE(p->mtu)),
			   !!p->qp[0], !!p->qp[1], READ_ONCE(p->mad_sends),
			   READ_ONCE(p->send_errors), READ_ONCE(p->sa_answers),
			   READ_ONCE(p->sa_qkey), READ_ONCE(p->sa_delay_ms));
		for (j = 0; j < FIB_PKEYS; j++)
			seq_printf(m, " 0x%04x", p->pkeys[j]);
		seq_puts(m, "\n");
		spin_lock_irq(&fib->lock);
		seq_printf(m, "  ud port %u sent %llu rcvd %llu drop_qkey %llu drop_pkey %llu drop_noqp %llu drop_norecv %llu drop_state %llu drop_nogrh %llu len_err_rx %llu len_err_tx %llu path_answers %llu\n",
			   p->num, p->ud_sent, p->ud_rcvd, p->drop_qkey,
			   p->drop_pkey, p->drop_noqp, p->drop_norecv,
			   p->drop_state, p->drop_nogrh, p->len_err_rx,
			   p->len_err_tx, p->path_answers);
		seq_printf(m, "  rc port %u sent %llu rcvd %llu drop_qp %llu drop_pkey %llu rnr %llu len_err %llu cm_mads %llu\n",
			   p->num, p->rc_sent, p->rc_rcvd, p->rc_drop_qp,
			   p->rc_drop_pkey, p->rc_rnr, p->rc_len_err,
			   p->cm_mads);
		for (j = 0; j < FIB_QPS; j++) {
			struct fib_qp *q = fib->qps[j];

			if (!q || q->port != p->num)
				continue;
			spin_lock(&q->lock);
			if (q->ibqp.qp_type == IB_QPT_RC) {
				seq_printf(m, "  rcqp port %u qpn 0x%06x state %s pkey_index %u dest_qpn 0x%06x dlid %u recvs %u sent %llu rcvd %llu\n",
					   p->num, q->ibqp.qp_num,
					   fib_qps_name[q->state],
					   q->pkey_index, q->dest_qpn, q->dlid,
					   q->rq_count, q->rc_sent, q->rc_rcvd);
				spin_unlock(&q->lock);
				continue;
			}
			seq_printf(m, "  udqp port %u qpn 0x%06x state %s pkey_index %u pkey 0x%04x qkey 0x%08x recvs %u mcgs %u sent %llu underlay %s\n",
				   p->num, q->ibqp.qp_num,
				   fib_qps_name[q->state], q->pkey_index,
				   p->pkeys[q->pkey_index], q->qkey,
				   q->rq_count, q->nmcg, q->ud_sent,
				   q->ndev ? q->ndev->name : "-");
			spin_unlock(&q->lock);
		}
		spin_unlock_irq(&fib->lock);
		rtnl_lock();
		dev = rtnl_dereference(p->ndev);
		if (dev)
			fib_show_ndev(m, "netdev", netdev_priv(dev));
		list_for_each_entry(c, &p->children, node)
			fib_show_ndev(m, "child", c);
		rtnl_unlock();
	}
	mutex_unlock(&fib_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(fib_state);

/* Each interface on @p as the port now is (carrier from state and P_Keys). */
static void fib_port_carrier(struct fib_port *p)
{
	struct net_device *dev;
	struct fib_ndev *c;

	rtnl_lock();
	dev = rtnl_dereference(p->ndev);
	if (dev)
		fib_carrier(dev);
	list_for_each_entry(c, &p->children, node)
		fib_carrier(c->dev);
	rtnl_unlock();
}

static void fib_event(struct fib_port *p, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &p->fd->ibdev,
		.event = type,
		.element.port_num = p->num,
	};

	ib_dispatch_event(&ev);
}

static const struct {
	const char *name;
	enum ib_event_type type;
} fib_events[] = {
	{ "port_err", IB_EVENT_PORT_ERR },
	{ "port_active", IB_EVENT_PORT_ACTIVE },
	{ "pkey_change", IB_EVENT_PKEY_CHANGE },
	{ "lid_change", IB_EVENT_LID_CHANGE },
	{ "sm_change", IB_EVENT_SM_CHANGE },
	{ "client_rereg", IB_EVENT_CLIENT_REREGISTER },
};

/* One command; under fib_lock with the device registered. */
static int fib_ctl_run(char *cmd)
{
	unsigned int port, idx, val;
	unsigned long flags;
	struct fib_port *p;
	char word[16];
	int i;

	if (!strcmp(cmd, "remove")) {
		fib_dev_remove();
		return 0;
	}
	if (sscanf(cmd, "%15s %u", word, &port) != 2 || port < 1 ||
	    port > FIB_PORTS)
		return -EINVAL;
	p = &fib->port[port - 1];
	for (i = 0; i < ARRAY_SIZE(fib_events); i++) {
		if (strcmp(word, fib_events[i].name))
			continue;
		if (fib_events[i].type == IB_EVENT_PORT_ERR)
			WRITE_ONCE(p->state, IB_PORT_DOWN);
		else if (fib_events[i].type == IB_EVENT_PORT_ACTIVE)
			WRITE_ONCE(p->state, IB_PORT_ACTIVE);
		/* ipoib looks at its carrier on these (ipoib_event()). */
		fib_port_carrier(p);
		fib_event(p, fib_events[i].type);
		return 0;
	}
	if (!strcmp(word, "pkey")) {
		if (sscanf(cmd, "%15s %u %u %i", word, &port, &idx, &val) != 4 ||
		    idx >= FIB_PKEYS || val > 0xffff)
			return -EINVAL;
		spin_lock_irqsave(&fib->lock, flags);
		p->pkeys[idx] = val;
		spin_unlock_irqrestore(&fib->lock, flags);
		return 0;
	}
	if (!strcmp(word, "qkey") || !strcmp(word, "tclass") ||
	    !strcmp(word, "sa_delay")) {
		if (sscanf(cmd, "%15s %u %i", word, &port, &val) != 3)
			return -EINVAL;
		if (word[0] == 'q')
			WRITE_ONCE(p->sa_qkey, val);
		else if (word[0] == 't' && val <= 0xff)
			WRITE_ONCE(p->sa_tclass, val);
		else if (word[0] == 's' && val <= 10000)
			WRITE_ONCE(p->sa_delay_ms, val);
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(word, "mtu")) {
		if (sscanf(cmd, "%15s %u %u", word, &port, &val) != 3 ||
		    val < 256 || val > 4096 || (val & (val - 1)))
			return -EINVAL;
		WRITE_ONCE(p->mtu, ib_mtu_int_to_enum(val));
		return 0;
	}
	return -EINVAL;
}

static ssize_t fib_ctl_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char cmd[64];
	int ret;

	if (len >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, len))
		return -EFAULT;
	cmd[len] = '\0';
	strim(cmd);
	mutex_lock(&fib_lock);
	ret = fib ? fib_ctl_run(strim(cmd)) : -ENODEV;
	mutex_unlock(&fib_lock);
	return ret ? ret : len;
}

static const struct file_operations fib_ctl_fops = {
	.owner = THIS_MODULE,
	.write = fib_ctl_write,
	.llseek = noop_llseek,
};

static int __init fib_init(void)
{
	int ret;

	fib_pdev = platform_device_register_simple("fakeib", -1, NULL, 0);
	if (IS_ERR(fib_pdev))
		return PTR_ERR(fib_pdev);
	if (!ipoib) {
		ret = rtnl_link_register(&fib_link_ops);
		if (ret) {
			pr_err("link kind ipoib taken (ib_ipoib loaded?): %d\n",
			       ret);
			goto err_pdev;
		}
	}
	ib_sa_register_client(&fib_sa_client);
	ret = ipoib ? 0 : ib_register_client(&fib_client);
	if (ret)
		goto err_sa;
	mutex_lock(&fib_lock);
	ret = fib_dev_create();
	mutex_unlock(&fib_lock);
	if (ret)
		goto err_client;
	fib_debugfs = debugfs_create_dir("fakeib", NULL);
	debugfs_create_file("state", 0444, fib_debugfs, NULL, &fib_state_fops);
	debugfs_create_file("ctl", 0200, fib_debugfs, NULL, &fib_ctl_fops);
	return 0;

err_client:
	if (!ipoib)
		ib_unregister_client(&fib_client);
err_sa:
	ib_sa_unregister_client(&fib_sa_client);
	if (!ipoib)
		rtnl_link_unregister(&fib_link_ops);
err_pdev:
	platform_device_unregister(fib_pdev);
	return ret;
}

static void __exit fib_exit(void)
{
	debugfs_remove_recursive(fib_debugfs);
	mutex_lock(&fib_lock);
	fib_dev_remove();
	mutex_unlock(&fib_lock);
	if (!ipoib)
		ib_unregister_client(&fib_client);
	ib_sa_unregister_client(&fib_sa_client);
	if (!ipoib)
		rtnl_link_unregister(&fib_link_ops);
	platform_device_unregister(fib_pdev);
}

module_init(fib_init);
module_exit(fib_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test-only InfiniBand HCA with IPoIB-like interfaces");
