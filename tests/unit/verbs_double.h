/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A strict model of the verbs device for the verbs links (lib/link/verbs*.c),
 * installed with sl_verbs = &vd_api: every rdma-core call the links make
 * lands here (link/verbs_api.h), with the module's IFINFO / NEIGH_RESOLVE
 * and the kring fallback.  It enforces the rules a real device and kernel
 * do (each cites its source where it is checked; tests/README.md lists
 * them): a call the rules refuse fails as the kernel would and counts in
 * vd.violations, so a test also sees what it did not look for.  It
 *  - records the attributes asked for: QP init attributes (plain and _ex),
 *    every modify_qp's state and mask, every flow rule, every AH, every
 *    send WR (flags, QPN, Q_Key, the bytes the device would read, copied
 *    when posted) and every receive WR's buffer;
 *  - acts as a device would: a signalled send completes (in order, with
 *    every unsignalled one before it) when the send CQ is polled, unless
 *    completions are held; receives come from frames a test puts in a
 *    posted buffer (vd_rx());
 *  - checks the link's side of the contract: a send WR whose bytes overlap
 *    one the device still owns is a reuse violation, bytes that changed
 *    between post and completion a corruption;
 *  - fails the call a test names (vd.fail[VD_x] = errno) once;
 *  - counts live objects, so every failure path can be checked to free
 *    everything it made;
 *  - injects what a fabric does: error completions, the QP falling into
 *    the error state, async events (vd_event()), a process without
 *    CAP_NET_RAW (vd.no_net_raw); a port down (PORT_ERR until
 *    PORT_ACTIVE, or vd.port.state set by hand: an event the link never
 *    gets) fails each send as Soft-RoCE does.
 */
#ifndef SLUICE_TESTS_VERBS_DOUBLE_H
#define SLUICE_TESTS_VERBS_DOUBLE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "link/verbs_int.h"

enum vd_call {
	VD_get_device_list, VD_open_device, VD_query_port, VD_query_gid, VD_query_pkey,
	VD_alloc_pd, VD_reg_mr, VD_create_comp_channel, VD_create_cq, VD_create_qp,
	VD_create_qp_ex, VD_modify_qp, VD_modify_qp_rtr, VD_modify_qp_rts, VD_attach_mcast,
	VD_create_ah, VD_create_flow, VD_post_send, VD_post_recv, VD_req_notify_cq,
	VD_ifinfo, VD_neigh_resolve, VD_link_kring, VD_destroy_qp, VD_NCALLS
};

#define VD_SENT_MAX	512
#define VD_OUT_MAX	4096
#define VD_RQ_MAX	4096
#define VD_FLOWS_MAX	64
#define VD_AH_MAX	64

struct vd_sent {
	uint64_t wr_id;
	unsigned int send_flags;
	int opcode;
	int num_sge;
	uint32_t lkey;
	uint32_t remote_qpn, remote_qkey;
	uint32_t wire_qkey;		/* the Q_Key the packet carries (vd_post_send) */
	struct ibv_ah *ah;
	uint32_t len;
	uint8_t data[2100];
};

struct vd_state {
	/* What the device and module say. */
	char dev_name[32];
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint16_t pkey;
	struct sluice_ifinfo ifinfo;
	struct sluice_neigh_resolve nr;		/* the answer to any NEIGH_RESOLVE */
	int fail[VD_NCALLS];			/* errno to fail that call with, once */
	bool hold_completions;			/* the device is slow: no send completes */
	bool no_net_raw;			/* the process lacks CAP_NET_RAW */
	bool privileged_qkey;			/* rdma netlink privileged_qkey mode on */
	/* The QP (one at a time, as the links make): the model's state. */
	enum ibv_qp_state qp_state;
	bool qp_underlay;			/* IBV_QP_CREATE_SOURCE_QPN */
	uint32_t qp_qkey;			/* 0 until set (an underlay QP: never) */
	uint16_t qp_pkey_index;
	uint32_t qp_max_recv_sge, qp_max_recv_wr, qp_max_send_wr;
	int qp_users;				/* flows + multicast attachments */
	int violations;				/* calls the rules refused */
	char last_violation[160];
	/* Async events waiting for ibv_get_async_event(). */
	struct ibv_async_event ev[16];
	int n_ev, n_ev_acked, n_ev_got;
	struct ibv_context *ctx;
	/* What the links asked for. */
	int calls[VD_NCALLS];
	int live;				/* objects made and not destroyed */
	struct ibv_qp_init_attr qp_attr;
	struct ibv_qp_init_attr_ex qp_attr_ex;
	int n_modify;
	int modify_state[8], modify_mask[8];
	struct sl_verbs_flow_rule flows[VD_FLOWS_MAX];
	struct ibv_flow *flow_obj[VD_FLOWS_MAX];
	pid_t flow_pid[VD_FLOWS_MAX];		/* the process that made each rule */
	int flow_fab[VD_FLOWS_MAX];		/* its index in the fabric, or -1 */
	int cmd_fd;				/* the context's command file (a memfd) */
	unsigned long cmd_ino;
	void *uar;				/* its page mapped, as rdma-core maps doorbells */
	int n_flows, n_flows_destroyed, n_flows_live;
	struct ibv_ah_attr ahs[VD_AH_MAX];
	int n_ah, n_ah_live;
	struct vd_sent sent[VD_SENT_MAX];
	int n_sent, n_post_send, n_signalled;
	int n_sent_port_down;			/* sends posted with the port down */
	int mcast_attached;
	uint8_t mc_gid[8][16];			/* the MGIDs attached, in order */
	int n_mc_gid;
	/* Send WRs the device owns, in order. */
	struct { uint64_t wr_id, addr; uint32_t len, sum; bool signalled; } out[VD_OUT_MAX];
	int n_out;
	int reuse_violations, corrupt_violations;
	uint64_t completed;
	/* Receive WRs posted and not used. */
	struct { uint64_t wr_id, addr; uint32_t len; int nsge;
		 struct { uint64_t addr; uint32_t len; } sge[4]; } rq[VD_RQ_MAX];
	int n_rq, n_post_recv;
	struct ibv_wc rwc[VD_RQ_MAX];
	int n_rwc;
	struct ibv_wc swc[VD_OUT_MAX];		/* send errors and flushes waiting */
	int n_swc;
	struct ibv_cq *rcq, *scq;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	struct ibv_mr *mr[4];
	int n_mr;
	/* The kring fallback. */
	struct sl_link kring;
	int kring_closed;
	int kring_tx;				/* packets the kring link was given */
	uint32_t kring_tx_nh[16];
};

static struct vd_state vd;

/*
 * The fabric several processes share (issue 14 items 1, 6): every flow
 * rule made on the device by any process of a test, in shared memory
 * made before the test forks (vd_fabric_init()), so a test can ask where
 * the device would steer a packet (vd_steer()).  A rule is the object of
 * its process's uverbs command file, destroyed with the file's last
 * reference (kernel uverbs_main.c, ib_uverbs_close() ->
 * uverbs_destroy_ufile_hw()); a reference is a descriptor or a mapping
 * of the file (uverbs_main.c, rdma_umap_close(): "The vma holds a
 * reference on the struct file that created it"), and fork() copies both
 * (rdma_umap_open() keeps the child's copy).  The model's command file is
 * a memfd with one page mapped (the doorbell page), and whether it is
 * still referenced is read from /proc: any process with a descriptor of
 * it or a mapping of it keeps its rules.
 */
#define VD_FAB_RULES	256
#define VD_UVERBS_PATH	"/memfd:sl-vd-uverbs"

struct vd_fab_rule {
	pid_t pid;
	unsigned long ino;		/* the command file's inode */
	bool live;			/* not destroyed (by the process or the file's release) */
	struct sl_verbs_flow_rule r;
};

struct vd_fabric {
	int n;
	struct vd_fab_rule rule[VD_FAB_RULES];
};

static struct vd_fabric *vd_fab;

static inline uint32_t vd_sum(const void *p, uint32_t len)
{
	const uint8_t *b = p;
	uint32_t h = 2166136261u;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static inline bool vd_failing(enum vd_call c)
{
	vd.calls[c]++;
	if (!vd.fail[c])
		return false;
	errno = vd.fail[c];
	vd.fail[c] = 0;
	return true;
}

/* A call the rules refuse: noted, and the errno the kernel gives. */
static inline int vd_violation(int err, const char *what)
{
	vd.violations++;
	snprintf(vd.last_violation, sizeof(vd.last_violation), "%s", what);
	errno = err;
	return err;
}

static inline void *vd_obj(size_t size)
{
	void *p = calloc(1, size);

	vd.live++;
	return p;
}

static inline int vd_free(void *p)
{
	if (p) {
		free(p);
		vd.live--;
	}
	return 0;
}

static int vd_close_device(struct ibv_context *c)
{
	if (c == vd.ctx)
		vd.ctx = NULL;
	close(c->async_fd);
	/* The file's release destroys what is left of its objects. */
	for (int i = 0; vd_fab && i < vd_fab->n && i < VD_FAB_RULES; i++)
		if (vd_fab->rule[i].ino == vd.cmd_ino && vd_fab->rule[i].pid == getpid())
			vd_fab->rule[i].live = false;
	if (vd.uar)
		munmap(vd.uar, 4096);
	vd.uar = NULL;
	close(c->cmd_fd);
	return vd_free(c);
}

static int vd_dealloc_pd(struct ibv_pd *pd)
{
	return vd_free(pd);
}

static int vd_dereg_mr(struct ibv_mr *mr)
{
	return vd_free(mr);
}

static struct ibv_device **vd_get_device_list(int *n)
{
	struct ibv_device **list;

	if (vd_failing(VD_get_device_list))
		return NULL;
	list = calloc(2, sizeof(*list));
	list[0] = calloc(1, sizeof(**list));
	snprintf(list[0]->name, sizeof(list[0]->name), "%s", vd.dev_name);
	*n = 1;
	return list;
}

static void vd_free_device_list(struct ibv_device **list)
{
	free(list[0]);
	free(list);
}

static const char *vd_get_device_name(struct ibv_device *d)
{
	return d->name;
}

static struct ibv_context *vd_open_device(struct ibv_device *d)
{
	(void)d;
	if (vd_failing(VD_open_device))
		return NULL;
	vd.ctx = vd_obj(sizeof(struct ibv_context));
	/* ibv_get_async_event(3): async events are read from async_fd. */
	vd.ctx->async_fd = eventfd(0, EFD_CLOEXEC);
	/* The command file: rdma-core opens it O_CLOEXEC and maps pages of
	 * it (doorbells, UARs). */
	vd.ctx->cmd_fd = memfd_create("sl-vd-uverbs", MFD_CLOEXEC);
	if (vd.ctx->cmd_fd >= 0 && !ftruncate(vd.ctx->cmd_fd, 4096)) {
		struct stat st;

		vd.uar = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, vd.ctx->cmd_fd, 0);
		if (vd.uar == MAP_FAILED)
			vd.uar = NULL;
		if (!fstat(vd.ctx->cmd_fd, &st))
			vd.cmd_ino = (unsigned long)st.st_ino;
	}
	return vd.ctx;
}

static int vd_query_device_ex(struct ibv_context *c, struct ibv_device_attr_ex *a)
{
	(void)c;
	memset(a, 0, sizeof(*a));
	return 0;
}

static int vd_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a)
{
	(void)c;
	(void)port;
	if (vd_failing(VD_query_port))
		return errno;
	*a = vd.port;
	return 0;
}

static int vd_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	(void)c;
	(void)port;
	(void)index;
	if (vd_failing(VD_query_gid))
		return errno;
	*gid = vd.gid;
	return 0;
}

static int vd_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index,
			   struct ibv_gid_entry *e)
{
	(void)c;
	(void)port;
	(void)index;
	(void)e;
	return ENODEV;
}

static int vd_query_pkey(struct ibv_context *c, uint8_t port, int index, __be16 *pkey)
{
	(void)c;
	(void)port;
	(void)index;
	if (vd_failing(VD_query_pkey))
		return errno;
	*pkey = htons(vd.pkey);
	return 0;
}

static struct ibv_pd *vd_alloc_pd(struct ibv_context *c)
{
	if (vd_failing(VD_alloc_pd))
		return NULL;
	vd.pd = vd_obj(sizeof(*vd.pd));
	vd.pd->context = c;
	return vd.pd;
}

static struct ibv_mr *vd_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr;

	(void)access;
	if (vd_failing(VD_reg_mr))
		return NULL;
	mr = vd_obj(sizeof(*mr));
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = 0x1000 + (uint32_t)vd.n_mr;
	if (vd.n_mr < 4)
		vd.mr[vd.n_mr++] = mr;
	return mr;
}

static struct ibv_comp_channel *vd_create_comp_channel(struct ibv_context *c)
{
	struct ibv_comp_channel *ch;

	if (vd_failing(VD_create_comp_channel))
		return NULL;
	ch = vd_obj(sizeof(*ch));
	ch->context = c;
	ch->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return ch;
}

static int vd_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	return vd_free(ch);
}

static struct ibv_cq *vd_create_cq(struct ibv_context *c, int cqe, void *ctx,
				   struct ibv_comp_channel *ch, int vector)
{
	struct ibv_cq *cq;

	(void)vector;
	if (vd_failing(VD_create_cq))
		return NULL;
	cq = vd_obj(sizeof(*cq));
	cq->context = c;
	cq->cqe = cqe;
	cq->cq_context = ctx;
	cq->channel = ch;
	if (ch)
		vd.rcq = cq;
	else
		vd.scq = cq;
	return cq;
}

static int vd_destroy_cq(struct ibv_cq *cq)
{
	if (cq == vd.rcq)
		vd.rcq = NULL;
	if (cq == vd.scq)
		vd.scq = NULL;
	return vd_free(cq);
}

static struct ibv_qp *vd_new_qp(struct ibv_pd *pd, const struct ibv_qp_cap *cap, bool underlay,
				uint32_t num)
{
	if (vd.qp)
		vd_violation(0, "a second QP while one lives (the links make one)");
	vd.qp = vd_obj(sizeof(*vd.qp));
	vd.qp->pd = pd;
	vd.qp->qp_num = num;
	vd.qp->qp_type = IBV_QPT_UD;
	vd.qp->context = pd->context;
	vd.qp->state = IBV_QPS_RESET;
	/* ibv_create_qp(3): a new QP is in the RESET state. */
	vd.qp_state = IBV_QPS_RESET;
	vd.qp_underlay = underlay;
	vd.qp_qkey = 0;
	vd.qp_users = 0;
	vd.qp_max_recv_sge = cap->max_recv_sge;
	vd.qp_max_recv_wr = cap->max_recv_wr;
	vd.qp_max_send_wr = cap->max_send_wr;
	vd.n_rq = 0;
	return vd.qp;
}

static struct ibv_qp *vd_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	if (vd_failing(VD_create_qp))
		return NULL;
	vd.qp_attr = *a;
	return vd_new_qp(pd, &a->cap, false, 0x2a);
}

static struct ibv_qp *vd_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a)
{
	(void)c;
	if (vd_failing(VD_create_qp_ex))
		return NULL;
	vd.qp_attr_ex = *a;
	/*
	 * No CAP_NET_RAW check here for a UD QP with a source QPN: rdma-core
	 * creates QPs through the ioctl method (kernel 6.1
	 * drivers/infiniband/core/uverbs_std_types_qp.c,
	 * UVERBS_METHOD_QP_CREATE), which checks the capability only for
	 * IB_UVERBS_QPT_RAW_PACKET; only the legacy write command
	 * (uverbs_cmd.c, ib_uverbs_ex_create_qp) checks it for
	 * IB_QP_CREATE_SOURCE_QPN.  The check that bites is create_flow's.
	 */
	/* An underlay QP has a QPN of its own; it sends as source_qpn. */
	return vd_new_qp(a->pd, &a->cap, (a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
			 (a->create_flags & IBV_QP_CREATE_SOURCE_QPN), 0x3b);
}

/*
 * UD transitions and their attributes: kernel 6.1
 * drivers/infiniband/core/verbs.c, qp_state_table and ib_modify_qp_is_ok()
 * (ibv_modify_qp(3) lists the same required ones): RESET->INIT needs
 * P_Key index, port and Q_Key; INIT->RTR nothing (P_Key index, Q_Key
 * optional); RTR->RTS the SQ PSN (Q_Key optional); RESET and ERR from any
 * state but RESET->ERR, with the state alone; nothing else.
 */
static bool vd_ud_transition_ok(enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	int req = 0, opt = 0;

	mask &= ~IBV_QP_STATE;
	if (next == IBV_QPS_RESET)
		return mask == 0;
	if (next == IBV_QPS_ERR)
		return cur != IBV_QPS_RESET && mask == 0;
	if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT)
		req = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	else if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT)
		opt = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
		opt = IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
	else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
		req = IBV_QP_SQ_PSN, opt = IBV_QP_CUR_STATE | IBV_QP_QKEY;
	else if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS)
		opt = IBV_QP_CUR_STATE | IBV_QP_QKEY;
	else
		return false;
	return (mask & req) == req && !(mask & ~(req | opt));
}

static void vd_flush_rq(void);

static int vd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	enum ibv_qp_state next = mask & IBV_QP_STATE ? a->qp_state : vd.qp_state;

	if (vd.n_modify < 8) {
		vd.modify_state[vd.n_modify] = a->qp_state;
		vd.modify_mask[vd.n_modify] = mask;
	}
	vd.n_modify++;
	if (vd_failing(VD_modify_qp) ||
	    (a->qp_state == IBV_QPS_RTR && vd_failing(VD_modify_qp_rtr)) ||
	    (a->qp_state == IBV_QPS_RTS && vd_failing(VD_modify_qp_rts)))
		return errno;
	if (qp != vd.qp)
		return vd_violation(EINVAL, "modify_qp of a QP that is not alive");
	if (vd.qp_underlay) {
		/* mlx5: drivers/infiniband/hw/mlx5/qp.c, mlx5_ib_modify_qp():
		 * "invalid attr_mask ... when underlay QP is used": only
		 * IB_QP_STATE (and CUR_STATE) on a source-QPN QP. */
		if (mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE))
			return vd_violation(EINVAL, "underlay QP: an attribute besides the state");
	} else if (!vd_ud_transition_ok(vd.qp_state, next, mask)) {
		return vd_violation(EINVAL, "UD transition or attribute mask not allowed");
	}
	/* Kernel 6.1 uverbs_cmd.c, modify_qp(): a Q_Key with bit 31 set
	 * (IB_QP_SET_QKEY, a controlled Q_Key, IBA 10.2.4) is -EPERM unless
	 * rdma netlink's privileged_qkey mode is on. */
	if ((mask & IBV_QP_QKEY) && (a->qkey & 0x80000000u) && !vd.privileged_qkey)
		return vd_violation(EPERM, "a controlled Q_Key set without privilege");
	if (mask & IBV_QP_QKEY)
		vd.qp_qkey = a->qkey;
	if (mask & IBV_QP_PKEY_INDEX)
		vd.qp_pkey_index = a->pkey_index;
	if (next == IBV_QPS_RESET) {
		/* IBA 10.3.1 (Reset): the work queues are emptied, no
		 * completions. */
		vd.n_rq = 0;
		vd.n_out = 0;
	}
	vd.qp_state = next;
	qp->state = next;
	if (next == IBV_QPS_ERR)
		vd_flush_rq();
	return 0;
}

static int vd_destroy_qp(struct ibv_qp *qp)
{
	if (vd_failing(VD_destroy_qp))
		return errno;
	/* Kernel 6.1 verbs.c, ib_destroy_qp_user(): -EBUSY while the QP's
	 * usecnt is held: flow rules (ib_uverbs_ex_create_flow) and
	 * multicast attachments (ib_attach_mcast) take it. */
	if (qp == vd.qp && vd.qp_users)
		return vd_violation(EBUSY, "destroy_qp with flows or multicast attached");
	if (qp == vd.qp) {
		vd.qp = NULL;
		vd.n_rq = 0;
	}
	return vd_free(qp);
}

static int vd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)lid;
	if (vd_failing(VD_attach_mcast))
		return errno;
	/* mlx5: drivers/infiniband/hw/mlx5/main.c, mlx5_ib_mcg_attach():
	 * -EOPNOTSUPP on a source-QPN (underlay) QP. */
	if (qp == vd.qp && vd.qp_underlay)
		return vd_violation(EOPNOTSUPP, "multicast attach on the underlay QP");
	if (vd.n_mc_gid < 8)
		memcpy(vd.mc_gid[vd.n_mc_gid++], gid->raw, 16);
	vd.mcast_attached++;
	vd.qp_users++;
	return 0;
}

static int vd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)lid;
	for (int i = 0; i < vd.n_mc_gid; i++)
		if (!memcmp(vd.mc_gid[i], gid->raw, 16)) {
			memmove(vd.mc_gid[i], vd.mc_gid[i + 1], 16 * (size_t)(vd.n_mc_gid - i - 1));
			vd.n_mc_gid--;
			break;
		}
	vd.mcast_attached--;
	vd.qp_users--;
	return 0;
}

static struct ibv_ah *vd_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	struct ibv_ah *ah;

	if (vd_failing(VD_create_ah))
		return NULL;
	if (vd.n_ah < VD_AH_MAX)
		vd.ahs[vd.n_ah] = *a;
	vd.n_ah++;
	vd.n_ah_live++;
	ah = vd_obj(sizeof(*ah));
	ah->pd = pd;
	return ah;
}

static int vd_destroy_ah(struct ibv_ah *ah)
{
	vd.n_ah_live--;
	return vd_free(ah);
}

static struct ibv_flow *vd_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	struct ibv_flow *f;

	if (vd_failing(VD_create_flow))
		return NULL;
	/* Kernel 6.1 uverbs_cmd.c, ib_uverbs_ex_create_flow(): -EPERM
	 * without CAP_NET_RAW, whatever the QP. */
	if (vd.no_net_raw) {
		errno = EPERM;
		return NULL;
	}
	/* ibv_create_flow(3): UD and RAW_PACKET QPs; ours is UD. */
	if (qp != vd.qp) {
		vd_violation(EINVAL, "create_flow on a QP that is not alive");
		return NULL;
	}
	f = vd_obj(sizeof(*f));
	f->context = qp->context;
	if (vd.n_flows < VD_FLOWS_MAX) {
		/* The specs follow the attribute, as rdma-core reads them. */
		memcpy(&vd.flows[vd.n_flows], a,
		       a->size < sizeof(vd.flows[0]) ? a->size : sizeof(vd.flows[0]));
		vd.flow_obj[vd.n_flows] = f;
		vd.flow_pid[vd.n_flows] = getpid();
		vd.flow_fab[vd.n_flows] = -1;
		if (vd_fab && vd_fab->n < VD_FAB_RULES) {
			struct vd_fab_rule *fr = &vd_fab->rule[vd_fab->n];

			fr->pid = getpid();
			fr->ino = vd.cmd_ino;
			fr->r = vd.flows[vd.n_flows];
			fr->live = true;
			vd.flow_fab[vd.n_flows] = vd_fab->n++;
		}
	}
	vd.n_flows++;
	vd.n_flows_live++;
	vd.qp_users++;
	return f;
}

static int vd_destroy_flow(struct ibv_flow *f)
{
	for (int i = 0; i < vd.n_flows && i < VD_FLOWS_MAX; i++)
		if (vd.flow_obj[i] == f) {
			/* A rule is an object of the uverbs context that made
			 * it (ib_uverbs_ex_destroy_flow() looks it up in the
			 * caller's file): a forked child reaching it through
			 * the inherited fd would destroy the parent's. */
			if (vd.flow_pid[i] != getpid())
				vd_violation(EPERM, "destroy_flow of another process's rule");
			if (vd_fab && vd.flow_fab[i] >= 0)
				vd_fab->rule[vd.flow_fab[i]].live = false;
			vd.flow_obj[i] = NULL;
		}
	vd.n_flows_destroyed++;
	vd.n_flows_live--;
	vd.qp_users--;
	return vd_free(f);
}

static inline void vd_qp_error(bool event);

static int vd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	if (vd_failing(VD_post_send)) {
		*bad = wr;
		return errno;
	}
	/* IBA vol 1 10.3.1 (QP states): send WRs are taken in RTS; posting
	 * in Reset, Init or RTR is an immediate error; in Error they are
	 * taken and complete flushed (below). */
	if (qp != vd.qp || (vd.qp_state != IBV_QPS_RTS && vd.qp_state != IBV_QPS_ERR)) {
		*bad = wr;
		return vd_violation(EINVAL, "post_send to a QP not in RTS");
	}
	vd.n_post_send++;
	for (; wr; wr = wr->next) {
		uint64_t a = wr->sg_list[0].addr;
		uint32_t len = wr->sg_list[0].length;

		if (vd.qp_state == IBV_QPS_ERR) {
			if (vd.n_swc < VD_OUT_MAX) {
				memset(&vd.swc[vd.n_swc], 0, sizeof(vd.swc[0]));
				vd.swc[vd.n_swc].wr_id = wr->wr_id;
				vd.swc[vd.n_swc++].status = IBV_WC_WR_FLUSH_ERR;
			}
			continue;
		}
		/* The port down (its netdev down, on Soft-RoCE): the send finds
		 * no route for its GID's address and completes with a local QP
		 * operation error, the QP in the error state (6.1 rxe_req.c,
		 * rxe_requester(): finish_packet() -> rxe_prepare() ->
		 * -EHOSTUNREACH from rxe_find_route(); wqe->status
		 * IB_WC_LOC_QP_OP_ERR); the WRs after it are flushed. */
		if (vd.port.state == IBV_PORT_DOWN) {
			vd.n_sent_port_down++;
			vd_qp_error(false);
			if (vd.n_swc < VD_OUT_MAX) {
				memset(&vd.swc[vd.n_swc], 0, sizeof(vd.swc[0]));
				vd.swc[vd.n_swc].wr_id = wr->wr_id;
				vd.swc[vd.n_swc++].status = IBV_WC_LOC_QP_OP_ERR;
			}
			continue;
		}
		for (int i = 0; i < vd.n_out; i++)
			if (a < vd.out[i].addr + vd.out[i].len && vd.out[i].addr < a + len)
				vd.reuse_violations++;
		if (vd.n_sent < VD_SENT_MAX) {
			struct vd_sent *x = &vd.sent[vd.n_sent];

			x->wr_id = wr->wr_id;
			x->send_flags = wr->send_flags;
			x->opcode = wr->opcode;
			x->num_sge = wr->num_sge;
			x->lkey = wr->sg_list[0].lkey;
			x->remote_qpn = wr->wr.ud.remote_qpn;
			x->remote_qkey = wr->wr.ud.remote_qkey;
			/* IBA vol 1 10.2.5 (Q_Keys): a WR Q_Key with its high
			 * bit set is replaced by the QP's own Q_Key. */
			x->wire_qkey = wr->wr.ud.remote_qkey & 0x80000000u ? vd.qp_qkey :
				       wr->wr.ud.remote_qkey;
			x->ah = wr->wr.ud.ah;
			x->len = len < sizeof(x->data) ? len : sizeof(x->data);
			memcpy(x->data, (void *)(uintptr_t)a, x->len);
		}
		vd.n_sent++;
		if (wr->send_flags & IBV_SEND_SIGNALED)
			vd.n_signalled++;
		if (vd.n_out < VD_OUT_MAX) {
			vd.out[vd.n_out].wr_id = wr->wr_id;
			vd.out[vd.n_out].addr = a;
			vd.out[vd.n_out].len = len;
			vd.out[vd.n_out].sum = vd_sum((void *)(uintptr_t)a, len);
			vd.out[vd.n_out].signalled = (wr->send_flags & IBV_SEND_SIGNALED) != 0;
			vd.n_out++;
		}
	}
	return 0;
}

static void vd_rwc_push(uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc *wc;

	if (vd.n_rwc >= VD_RQ_MAX)
		return;
	wc = &vd.rwc[vd.n_rwc++];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = st;
	wc->opcode = IBV_WC_RECV;
}

static int vd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	if (vd_failing(VD_post_recv)) {
		*bad = wr;
		return errno;
	}
	/* IBA vol 1 10.3.1: receive WRs are taken from Init on; posting in
	 * Reset is an immediate error; in Error they complete flushed. */
	if (qp != vd.qp || vd.qp_state == IBV_QPS_RESET) {
		*bad = wr;
		return vd_violation(EINVAL, "post_recv to a QP in RESET");
	}
	vd.n_post_recv++;
	for (; wr; wr = wr->next) {
		uint32_t total = 0;

		/* ibv_post_recv(3): at most max_recv_sge SGEs, max_recv_wr WRs. */
		if (wr->num_sge < 1 || (uint32_t)wr->num_sge > vd.qp_max_recv_sge ||
		    wr->num_sge > 4 || (uint32_t)vd.n_rq >= vd.qp_max_recv_wr) {
			*bad = wr;
			return vd_violation(EINVAL, "post_recv: SGEs or WRs past the QP's caps");
		}
		if (vd.qp_state == IBV_QPS_ERR) {
			vd_rwc_push(wr->wr_id, IBV_WC_WR_FLUSH_ERR);
			continue;
		}
		if (vd.n_rq >= VD_RQ_MAX)
			continue;
		vd.rq[vd.n_rq].wr_id = wr->wr_id;
		vd.rq[vd.n_rq].addr = wr->sg_list[0].addr;
		vd.rq[vd.n_rq].nsge = wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++) {
			vd.rq[vd.n_rq].sge[i].addr = wr->sg_list[i].addr;
			vd.rq[vd.n_rq].sge[i].len = wr->sg_list[i].length;
			total += wr->sg_list[i].length;
		}
		vd.rq[vd.n_rq].len = total;
		vd.n_rq++;
	}
	return 0;
}

/* IBA vol 1 10.3.1 (Error): every outstanding WR completes with a flush
 * error; so do sends. */
static void vd_flush_rq(void)
{
	for (int i = 0; i < vd.n_rq; i++)
		vd_rwc_push(vd.rq[i].wr_id, IBV_WC_WR_FLUSH_ERR);
	vd.n_rq = 0;
	for (int i = 0; i < vd.n_out && vd.n_swc < VD_OUT_MAX; i++) {
		memset(&vd.swc[vd.n_swc], 0, sizeof(vd.swc[0]));
		vd.swc[vd.n_swc].wr_id = vd.out[i].wr_id;
		vd.swc[vd.n_swc++].status = IBV_WC_WR_FLUSH_ERR;
	}
	vd.n_out = 0;
}

/* The QP falls into the error state (a fabric or device fault), with
 * IBV_EVENT_QP_FATAL (ibv_get_async_event(3)) when event is set. */
static void vd_event(enum ibv_event_type type, uint8_t port);

static inline void vd_qp_error(bool event)
{
	vd.qp_state = IBV_QPS_ERR;
	if (vd.qp)
		vd.qp->state = IBV_QPS_ERR;
	vd_flush_rq();
	if (event)
		vd_event(IBV_EVENT_QP_FATAL, 0);
}

/* The send queue: the device reads a WR's bytes until it completes; a
 * signalled completion retires it and every WR before it. */
static int vd_poll_scq(int n, struct ibv_wc *wc)
{
	int k = 0, last = -1;

	if (vd.hold_completions)
		return 0;
	for (int i = 0; i < vd.n_out && k < n; i++) {
		if (!vd.out[i].signalled)
			continue;
		memset(&wc[k], 0, sizeof(wc[k]));
		wc[k].wr_id = vd.out[i].wr_id;
		wc[k].status = IBV_WC_SUCCESS;
		wc[k].opcode = IBV_WC_SEND;
		k++;
		last = i;
	}
	for (int i = 0; i <= last; i++)
		if (vd.out[i].sum != vd_sum((void *)(uintptr_t)vd.out[i].addr, vd.out[i].len))
			vd.corrupt_violations++;
	if (last >= 0) {
		vd.completed += (uint64_t)last + 1;
		memmove(vd.out, vd.out + last + 1, sizeof(vd.out[0]) * (size_t)(vd.n_out - last - 1));
		vd.n_out -= last + 1;
	}
	return k;
}

static int vd_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k;

	if (cq == vd.scq) {
		k = vd.n_swc < n ? vd.n_swc : n;
		memcpy(wc, vd.swc, sizeof(*wc) * (size_t)k);
		memmove(vd.swc, vd.swc + k, sizeof(*wc) * (size_t)(vd.n_swc - k));
		vd.n_swc -= k;
		return k + vd_poll_scq(n - k, wc + k);
	}
	k = vd.n_rwc < n ? vd.n_rwc : n;
	memcpy(wc, vd.rwc, sizeof(*wc) * (size_t)k);
	memmove(vd.rwc, vd.rwc + k, sizeof(*wc) * (size_t)(vd.n_rwc - k));
	vd.n_rwc -= k;
	return k;
}

static int vd_req_notify_cq(struct ibv_cq *cq, int solicited)
{
	(void)cq;
	(void)solicited;
	return vd_failing(VD_req_notify_cq) ? errno : 0;
}

static int vd_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	(void)ch;
	(void)cq;
	(void)ctx;
	errno = EAGAIN;
	return -1;
}

static void vd_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	(void)cq;
	(void)n;
}

static void vd_event(enum ibv_event_type type, uint8_t port)
{
	uint64_t one = 1;

	if (vd.n_ev >= 16)
		return;
	memset(&vd.ev[vd.n_ev], 0, sizeof(vd.ev[0]));
	vd.ev[vd.n_ev].event_type = type;
	if (type == IBV_EVENT_QP_FATAL)
		vd.ev[vd.n_ev].element.qp = vd.qp;
	else
		vd.ev[vd.n_ev].element.port_num = port;
	vd.n_ev++;
	/* The port's state follows its events. */
	if (type == IBV_EVENT_PORT_ERR)
		vd.port.state = IBV_PORT_DOWN;
	else if (type == IBV_EVENT_PORT_ACTIVE)
		vd.port.state = IBV_PORT_ACTIVE;
	if (vd.ctx && write(vd.ctx->async_fd, &one, sizeof(one)) != sizeof(one))
		vd.violations++;
}

/* ibv_get_async_event(3): one event, or EAGAIN with async_fd non-blocking;
 * each must be acked (ibv_ack_async_event) before its object is destroyed. */
static int vd_get_async_event(struct ibv_context *c, struct ibv_async_event *e)
{
	uint64_t x;

	(void)c;
	if (!vd.n_ev) {
		errno = EAGAIN;
		return -1;
	}
	*e = vd.ev[0];
	memmove(vd.ev, vd.ev + 1, sizeof(vd.ev[0]) * (size_t)(vd.n_ev - 1));
	vd.n_ev--;
	vd.n_ev_got++;
	if (!vd.n_ev && vd.ctx && read(vd.ctx->async_fd, &x, sizeof(x)) < 0)
		vd.violations++;
	return 0;
}

static void vd_ack_async_event(struct ibv_async_event *e)
{
	(void)e;
	vd.n_ev_acked++;
}

static int vd_ifinfo(struct sluice_ifinfo *ii)
{
	uint32_t ifindex = ii->ifindex;

	if (vd_failing(VD_ifinfo))
		return -errno;
	*ii = vd.ifinfo;
	ii->ifindex = ifindex;
	return 0;
}

static int vd_neigh_resolve(int fd, struct sluice_neigh_resolve *nr)
{
	uint32_t addr = nr->addr;

	(void)fd;
	if (vd_failing(VD_neigh_resolve))
		return -errno;
	*nr = vd.nr;
	nr->addr = addr;
	return 0;
}

static int vd_kring_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	(void)l;
	(void)s;
	(void)idx;
	if (vd.kring_tx < 16)
		vd.kring_tx_nh[vd.kring_tx] = nh;
	vd.kring_tx++;
	return 0;
}

static int vd_kring_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	(void)l;
	(void)s;
	(void)budget;
	return 0;
}

static void vd_kring_close(struct sl_link *l)
{
	(void)l;
	vd.kring_closed++;
}

static const struct sl_link_ops vd_kring_ops = {
	.name = "kring-double",
	.tx = vd_kring_tx,
	.rx = vd_kring_rx,
	.close = vd_kring_close,
};

static int vd_link_kring(struct sluice_stack *st)
{
	struct sl_stack *s = (struct sl_stack *)st;

	if (vd_failing(VD_link_kring))
		return -errno;
	vd.kring.ops = &vd_kring_ops;
	vd.kring.mtu = 1500;
	s->link = &vd.kring;
	return 0;
}

static const struct sl_verbs_api vd_api = {
	.get_device_list = vd_get_device_list,
	.free_device_list = vd_free_device_list,
	.get_device_name = vd_get_device_name,
	.open_device = vd_open_device,
	.close_device = vd_close_device,
	.query_device_ex = vd_query_device_ex,
	.query_port = vd_query_port,
	.query_gid = vd_query_gid,
	.query_gid_ex = vd_query_gid_ex,
	.query_pkey = vd_query_pkey,
	.alloc_pd = vd_alloc_pd,
	.dealloc_pd = vd_dealloc_pd,
	.reg_mr = vd_reg_mr,
	.dereg_mr = vd_dereg_mr,
	.create_comp_channel = vd_create_comp_channel,
	.destroy_comp_channel = vd_destroy_comp_channel,
	.create_cq = vd_create_cq,
	.destroy_cq = vd_destroy_cq,
	.create_qp = vd_create_qp,
	.create_qp_ex = vd_create_qp_ex,
	.modify_qp = vd_modify_qp,
	.destroy_qp = vd_destroy_qp,
	.attach_mcast = vd_attach_mcast,
	.detach_mcast = vd_detach_mcast,
	.create_ah = vd_create_ah,
	.destroy_ah = vd_destroy_ah,
	.create_flow = vd_create_flow,
	.destroy_flow = vd_destroy_flow,
	.post_send = vd_post_send,
	.post_recv = vd_post_recv,
	.poll_cq = vd_poll_cq,
	.req_notify_cq = vd_req_notify_cq,
	.get_cq_event = vd_get_cq_event,
	.ack_cq_events = vd_ack_cq_events,
	.get_async_event = vd_get_async_event,
	.ack_async_event = vd_ack_async_event,
	.ifinfo = vd_ifinfo,
	.neigh_resolve = vd_neigh_resolve,
	.link_kring = vd_link_kring,
	.uverbs_path = VD_UVERBS_PATH,
};

/* A fresh device: an active port of link layer ll, MTU 2048, a GID. */
static inline void vd_reset(uint8_t ll)
{
	memset(&vd, 0, sizeof(vd));
	snprintf(vd.dev_name, sizeof(vd.dev_name), "mlx5_0");
	vd.port.state = IBV_PORT_ACTIVE;
	vd.port.link_layer = ll;
	vd.port.active_mtu = IBV_MTU_2048;
	for (int i = 0; i < 16; i++)
		vd.gid.raw[i] = (uint8_t)(0xfe - i);
	vd.pkey = 0xffff;
	sl_verbs = &vd_api;
}

/* Copy len bytes of src to offset off of the oldest posted WR's SGEs. */
static inline void vd_scatter(uint32_t off, const void *src, uint32_t len)
{
	const uint8_t *b = src;

	for (int i = 0; i < vd.rq[0].nsge && len; i++) {
		uint32_t sl = vd.rq[0].sge[i].len, n;

		if (off >= sl) {
			off -= sl;
			continue;
		}
		n = sl - off < len ? sl - off : len;
		memcpy((uint8_t *)(uintptr_t)vd.rq[0].sge[i].addr + off, b, n);
		b += n;
		len -= n;
		off = 0;
	}
}

/*
 * The device received frame (IPoIB header + packet, len bytes) for the
 * oldest posted receive WR.  ibv_post_recv(3): on a UD QP the first 40
 * bytes of the buffers are the GRH's place whether or not one came; the
 * data starts after them.  A GRH came when sgid is given (IB: routed and
 * multicast packets; RoCE: always), and only then is IBV_WC_GRH set
 * (ibv_poll_cq(3)); otherwise the 40 bytes are undefined (here 0xa5).
 * A frame longer than the WR's buffers completes it with
 * IBV_WC_LOC_LEN_ERR and puts the QP in the error state (IBA vol 1 9.9.3,
 * responder local length error), flushing the rest.
 * 0, 1 for a length error, or -1 if nothing is posted (or not in RTR/RTS:
 * IBA 10.3.1, nothing is received before RTR).
 */
static inline int vd_rx(const void *frame, uint32_t len, unsigned int wc_flags, uint32_t src_qp,
			const uint8_t sgid[16])
{
	uint8_t grh[SL_IPOIB_GRH_LEN];
	struct ibv_wc *wc;

	if (!vd.n_rq || vd.n_rwc >= VD_RQ_MAX ||
	    (vd.qp_state != IBV_QPS_RTR && vd.qp_state != IBV_QPS_RTS))
		return -1;
	if (len + SL_IPOIB_GRH_LEN > vd.rq[0].len) {
		uint64_t id = vd.rq[0].wr_id;

		memmove(vd.rq, vd.rq + 1, sizeof(vd.rq[0]) * (size_t)(vd.n_rq - 1));
		vd.n_rq--;
		vd_rwc_push(id, IBV_WC_LOC_LEN_ERR);
		vd_qp_error(false);
		return 1;
	}
	memset(grh, sgid ? 0 : 0xa5, sizeof(grh));
	if (sgid) {
		grh[0] = 0x60;
		memcpy(grh + 8, sgid, 16);
	}
	vd_scatter(0, grh, sizeof(grh));
	vd_scatter(SL_IPOIB_GRH_LEN, frame, len);
	wc = &vd.rwc[vd.n_rwc++];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = vd.rq[0].wr_id;
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = IBV_WC_RECV;
	wc->byte_len = len + SL_IPOIB_GRH_LEN;
	wc->wc_flags = wc_flags | (sgid ? IBV_WC_GRH : 0);
	wc->src_qp = src_qp;
	wc->qp_num = vd.qp ? vd.qp->qp_num : 0;
	memmove(vd.rq, vd.rq + 1, sizeof(vd.rq[0]) * (size_t)(vd.n_rq - 1));
	vd.n_rq--;
	return 0;
}

/* The fabric, shared with the processes this one forks from now on. */
static inline void vd_fabric_init(void)
{
	vd_fab = mmap(NULL, sizeof(*vd_fab), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (vd_fab == MAP_FAILED)
		vd_fab = NULL;
	else
		memset(vd_fab, 0, sizeof(*vd_fab));
}

/* Does a process hold a descriptor or a mapping of the command file ino? */
static inline bool vd_file_held(unsigned long ino)
{
	DIR *proc = opendir("/proc");
	struct dirent *p;
	bool held = false;

	while (proc && !held && (p = readdir(proc))) {
		char path[300], line[512];
		DIR *fds;
		FILE *m;

		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		for (struct dirent *e; fds && !held && (e = readdir(fds));) {
			char fp[600], target[256];
			struct stat st;
			ssize_t n;

			snprintf(fp, sizeof(fp), "%s/%s", path, e->d_name);
			n = readlink(fp, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			if (strstr(target, "sl-vd-uverbs") && !stat(fp, &st) &&
			    (unsigned long)st.st_ino == ino)
				held = true;
		}
		if (fds)
			closedir(fds);
		snprintf(path, sizeof(path), "/proc/%s/maps", p->d_name);
		m = fopen(path, "r");
		while (m && !held && fgets(line, sizeof(line), m)) {
			unsigned long i;

			if (strstr(line, "sl-vd-uverbs") &&
			    sscanf(line, "%*s %*s %*s %*s %lu", &i) == 1 && i == ino)
				held = true;
		}
		if (m)
			fclose(m);
	}
	if (proc)
		closedir(proc);
	return held;
}

/* Does rule r take a packet proto saddr:sport -> daddr:dport (network order)? */
static inline bool vd_rule_takes(const struct sl_verbs_flow_rule *r, uint8_t proto, uint32_t saddr,
				 uint16_t sport, uint32_t daddr, uint16_t dport)
{
	int l4 = proto == IPPROTO_TCP ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;

	return r->ipv4.type == IBV_FLOW_SPEC_IPV4 && (int)r->l4.type == l4 &&
	       (daddr & r->ipv4.mask.dst_ip) == (r->ipv4.val.dst_ip & r->ipv4.mask.dst_ip) &&
	       (saddr & r->ipv4.mask.src_ip) == (r->ipv4.val.src_ip & r->ipv4.mask.src_ip) &&
	       (dport & r->l4.mask.dst_port) == (r->l4.val.dst_port & r->l4.mask.dst_port) &&
	       (sport & r->l4.mask.src_port) == (r->l4.val.src_port & r->l4.mask.src_port);
}

/*
 * Where the device puts a packet: the pid of the process whose QP a rule
 * steers it to (the lowest priority number that matches first: mlx5 looks
 * up priorities in order), 0 when no rule takes it (ipoib receives it, the
 * module's filter hands it to the stack's rings, which every process of
 * the stack reads), or -2 when rules of two processes take it at the same
 * priority.  A rule whose command file nobody holds is gone.
 */
static inline int vd_steer(uint8_t proto, uint32_t saddr, uint16_t sport, uint32_t daddr,
			   uint16_t dport)
{
	int best = -1, who = 0;

	for (int i = 0; vd_fab && i < vd_fab->n && i < VD_FAB_RULES; i++) {
		struct vd_fab_rule *fr = &vd_fab->rule[i];

		if (!fr->live || !vd_rule_takes(&fr->r, proto, saddr, sport, daddr, dport))
			continue;
		if (!vd_file_held(fr->ino)) {
			fr->live = false;
			continue;
		}
		if (best < 0 || (int)fr->r.attr.priority < best) {
			best = fr->r.attr.priority;
			who = fr->pid;
		} else if ((int)fr->r.attr.priority == best && fr->pid != who) {
			who = -2;
		}
	}
	return who;
}

#endif /* SLUICE_TESTS_VERBS_DOUBLE_H */
