// SPDX-License-Identifier: GPL-2.0-only
/*
 * fakeib: an InfiniBand HCA with no hardware and IPoIB-like interfaces on
 * it, for testing what sluice.ko does about IPoIB in a VM (issue 14 item
 * 3; kernel/README.md, "An IPoIB-like device in the VM").
 * A test module only: never load it beside ib_ipoib (both are link kind
 * "ipoib"; registering ours then fails with -EEXIST).
 *
 * The HCA ("fakeib0", two ports of InfiniBand link layer) implements the
 * verbs ib_core needs before it calls any client's add
 * (ib_device_check_mandatory() in drivers/infiniband/core/device.c) and
 * what ib_mad and ib_sa do with a port: a PD, a CQ, QP0 and QP1 taken to
 * RTS with receives posted (ib_mad_port_open()), the SM's address handle
 * (update_sm_ah(); alloc_mad() queries it back before each query).  Other
 * QP types are refused.  Sends complete at once; a fake SA answers the
 * MCMemberRecord joins and leaves sent on QP1 (into QP1's receives, after
 * a delay the test sets), nothing else (a path query times out unless a
 * local service answers it over RDMA netlink).  No DMA device: the core
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
#define FIB_SUBNET	0xfe80000000000000ull
#define FIB_GUID	0x02005e00fe000000ull	/* + port number */

struct fib_dev;

struct fib_port {
	struct fib_dev *fd;
	u32 num;
	enum ib_port_state state;
	enum ib_mtu mtu;
	u16 pkeys[FIB_PKEYS];		/* under fd->lock */
	struct net_device __rcu *ndev;	/* the parent interface */
	struct list_head children;	/* RCU; changed under RTNL */
	struct fib_qp *qp[2];		/* QP0, QP1 while they exist; fd->lock */
	u64 mad_sends;
	u64 send_errors;
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
	u8 mad[IB_MGMT_MAD_SIZE];
};

struct fib_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	spinlock_t lock;		/* P_Key tables, QPN, QPs, SA replies */
	u32 next_qpn;
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

/* A receive posted to QP0 or QP1: the fake SA's answers arrive in QP1's. */
struct fib_rwqe {
	struct ib_cqe *cqe;
	u64 addr;
	u32 len;
};

struct fib_qp {
	struct ib_qp ibqp;
	spinlock_t lock;		/* state, receive queue */
	enum ib_qp_state state;
	u32 port;
	u32 qkey;
	struct fib_rwqe *rq;		/* a ring */
	u32 rq_size, rq_head, rq_count;
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
	a->max_qp = 2 * FIB_PORTS;
	a->max_qp_wr = 4096;
	a->max_send_sge = 4;
	a->max_recv_sge = 4;
	a->max_sge_rd = 4;
	a->max_cq = 16;
	a->max_cqe = 8192;
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
	a->port_cap_flags = IB_PORT_CM_SUP;
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

	if (user || attr->flags || attr->cqe < 1 || attr->cqe > 8192)
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
	struct fib_port *p;
	int idx;

	if (udata)
		return -EOPNOTSUPP;
	if (init->qp_type == IB_QPT_SMI)
		idx = 0;
	else if (init->qp_type == IB_QPT_GSI)
		idx = 1;
	else
		return -EOPNOTSUPP;	/* QP0 and QP1 only */
	if (init->port_num < 1 || init->port_num > FIB_PORTS ||
	    init->srq || !init->cap.max_recv_wr ||
	    init->cap.max_recv_wr > 4096 || init->cap.max_send_sge > 4 ||
	    init->cap.max_recv_sge > 4)
		return -EINVAL;
	p = &fd->port[init->port_num - 1];
	qp->rq = kvcalloc(init->cap.max_recv_wr, sizeof(*qp->rq), GFP_KERNEL);
	if (!qp->rq)
		return -ENOMEM;
	spin_lock_init(&qp->lock);
	qp->rq_size = init->cap.max_recv_wr;
	qp->port = init->port_num;
	qp->state = IB_QPS_RESET;
	ibqp->qp_num = idx;
	spin_lock_irqsave(&fd->lock, flags);
	if (p->qp[idx]) {
		spin_unlock_irqrestore(&fd->lock, flags);
		kvfree(qp->rq);
		return -EBUSY;
	}
	p->qp[idx] = qp;
	spin_unlock_irqrestore(&fd->lock, flags);
	return 0;
}

static int fib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
			 int mask, struct ib_udata *udata)
{
	struct fib_qp *qp = to_fqp(ibqp);
	enum ib_qp_state cur, next;
	unsigned long flags;

	spin_lock_irqsave(&qp->lock, flags);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	next = mask & IB_QP_STATE ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		spin_unlock_irqrestore(&qp->lock, flags);
		return -EINVAL;
	}
	qp->state = next;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (next == IB_QPS_RESET) {
		qp->rq_head = 0;
		qp->rq_count = 0;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	return 0;
}

static int fib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct fib_qp *qp = to_fqp(ibqp);
	struct fib_dev *fd = to_fd(ibqp->device);
	struct fib_port *p = &fd->port[qp->port - 1];
	struct fib_sa_reply *r, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&fd->lock, flags);
	p->qp[ibqp->qp_num] = NULL;
	if (ibqp->qp_num == 1) {
		list_for_each_entry_safe(r, tmp, &p->sa_replies, node) {
			list_del(&r->node);
			kfree(r);
		}
	}
	spin_unlock_irqrestore(&fd->lock, flags);
	/* An answer being delivered holds fd->lock: none is after this. */
	if (ibqp->qp_num == 1)
		cancel_delayed_work_sync(&p->sa_work);
	kvfree(qp->rq);
	return 0;
}

/* ---- the fake SA: MCMemberRecord joins and leaves on QP1 ---- */

/* Offsets in an SA MAD (IBTA 13.4.3, 15.2.1.1) and its MCMemberRecord (15.2.5.17). */
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
#define FIB_SEL_EXACTLY		2

/*
 * Into QP1's oldest posted receive: no GRH (40 bytes the MAD layer
 * skips), then the MAD, as from the SM's LID.  Under fd->lock.
 */
static void fib_deliver(struct fib_qp *qp, const u8 *mad)
{
	struct ib_wc wc = { };
	struct fib_rwqe e;

	spin_lock(&qp->lock);
	if (!qp->rq_count || (qp->state != IB_QPS_RTR &&
			      qp->state != IB_QPS_RTS)) {
		spin_unlock(&qp->lock);
		return;
	}
	e = qp->rq[qp->rq_head];
	qp->rq_head = (qp->rq_head + 1) % qp->rq_size;
	qp->rq_count--;
	spin_unlock(&qp->lock);
	wc.wr_cqe = e.cqe;
	wc.qp = &qp->ibqp;
	if (e.len < IB_GRH_BYTES + IB_MGMT_MAD_SIZE) {
		wc.status = IB_WC_LOC_LEN_ERR;
	} else {
		memset((void *)(uintptr_t)e.addr, 0, IB_GRH_BYTES);
		memcpy((void *)(uintptr_t)e.addr + IB_GRH_BYTES, mad,
		       IB_MGMT_MAD_SIZE);
		wc.status = IB_WC_SUCCESS;
		wc.opcode = IB_WC_RECV;
		wc.byte_len = IB_GRH_BYTES + IB_MGMT_MAD_SIZE;
		wc.src_qp = 1;
		wc.slid = 1;
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
			fib_deliver(p->qp[1], r->mad);
			p->sa_answers++;
		}
		kfree(r);
	}
	spin_unlock_irqrestore(&p->fd->lock, flags);
}

/*
 * A MAD sent on QP1 (to the SM's LID: the only destination ib_sa has):
 * a join (SubnAdmSet) or leave (SubnAdmDelete) of an MCMemberRecord is
 * answered after the port's sa_delay_ms, the group given the port's
 * Q_Key and traffic class, MLID 0xC001, MTU 2048, rate 100 Gb/s; any
 * other query gets no answer.  Any context.
 */
static void fib_sa_request(struct fib_port *p, const struct ib_send_wr *wr)
{
	struct fib_sa_reply *r;
	unsigned int off = 0;
	unsigned long flags;
	bool first;
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
	if (off < FIB_SA_DATA + FIB_MC_LIFE + 1 ||
	    m[1] != IB_MGMT_CLASS_SUBN_ADM ||
	    m[FIB_MAD_ATTR_ID] != 0 ||
	    m[FIB_MAD_ATTR_ID + 1] != IB_SA_ATTR_MC_MEMBER_REC ||
	    (m[FIB_MAD_METHOD] != IB_MGMT_METHOD_SET &&
	     m[FIB_MAD_METHOD] != IB_SA_METHOD_DELETE)) {
		kfree(r);
		return;
	}
	d = m + FIB_SA_DATA;
	if (m[FIB_MAD_METHOD] == IB_MGMT_METHOD_SET) {
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
	m[FIB_MAD_STATUS] = 0;
	m[FIB_MAD_STATUS + 1] = 0;
	spin_lock_irqsave(&p->fd->lock, flags);
	r->due = jiffies + msecs_to_jiffies(READ_ONCE(p->sa_delay_ms));
	first = list_empty(&p->sa_replies);
	list_add_tail(&r->node, &p->sa_replies);
	if (first)
		queue_delayed_work(system_wq, &p->sa_work, r->due - jiffies);
	spin_unlock_irqrestore(&p->fd->lock, flags);
}

/* A send leaves (to nowhere) and completes at once, if the QP may send. */
static int fib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			 const struct ib_send_wr **bad)
{
	struct fib_qp *qp = to_fqp(ibqp);
	struct fib_port *p = &to_fd(ibqp->device)->port[qp->port - 1];
	struct ib_wc wc;
	int i, ret = 0;

	for (; wr; wr = wr->next) {
		if (READ_ONCE(qp->state) != IB_QPS_RTS ||
		    wr->opcode != IB_WR_SEND || wr->num_sge > 4) {
			ret = -EINVAL;
			break;
		}
		memset(&wc, 0, sizeof(wc));
		wc.wr_cqe = wr->wr_cqe;
		wc.status = IB_WC_SUCCESS;
		wc.opcode = IB_WC_SEND;
		wc.qp = ibqp;
		for (i = 0; i < wr->num_sge; i++)
			wc.byte_len += wr->sg_list[i].length;
		ret = fib_cq_push(to_fcq(ibqp->send_cq), &wc);
		if (ret)
			break;
		WRITE_ONCE(p->mad_sends, p->mad_sends + 1);
		if (ibqp->qp_num == 1)
			fib_sa_request(p, wr);
	}
	if (ret) {
		*bad = wr;
		WRITE_ONCE(p->send_errors, p->send_errors + 1);
	}
	return ret;
}

static int fib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad)
{
	struct fib_qp *qp = to_fqp(ibqp);
	struct fib_rwqe *e;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&qp->lock, flags);
	for (; wr; wr = wr->next) {
		if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_ERR ||
		    wr->num_sge != 1 || qp->rq_count == qp->rq_size) {
			ret = -EINVAL;
			break;
		}
		e = &qp->rq[(qp->rq_head + qp->rq_count) % qp->rq_size];
		e->cqe = wr->wr_cqe;
		e->addr = wr->sg_list[0].addr;
		e->len = wr->sg_list[0].length;
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
	.destroy_qp = fib_destroy_qp,
	.post_send = fib_post_send,
	.post_recv = fib_post_recv,

	INIT_RDMA_OBJ_SIZE(ib_ah, fib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, fib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, fib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, fib_qp, ibqp),
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
	ret = rtnl_link_register(&fib_link_ops);
	if (ret) {
		pr_err("link kind ipoib taken (ib_ipoib loaded?): %d\n", ret);
		goto err_pdev;
	}
	ib_sa_register_client(&fib_sa_client);
	ret = ib_register_client(&fib_client);
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
	ib_unregister_client(&fib_client);
err_sa:
	ib_sa_unregister_client(&fib_sa_client);
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
	ib_unregister_client(&fib_client);
	ib_sa_unregister_client(&fib_sa_client);
	rtnl_link_unregister(&fib_link_ops);
	platform_device_unregister(fib_pdev);
}

module_init(fib_init);
module_exit(fib_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Test-only InfiniBand HCA with IPoIB-like interfaces");
