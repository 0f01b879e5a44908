/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test double of the verbs device for the verbs links (lib/link_verbs*.c),
 * installed with sl_verbs = &vd_api: every rdma-core call the links make
 * lands here (link_verbs_api.h), with the module's IFINFO / NEIGH_RESOLVE
 * and the kring fallback.  It
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
 *    everything it made.
 */
#ifndef SLUICE_TESTS_VERBS_DOUBLE_H
#define SLUICE_TESTS_VERBS_DOUBLE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "link/verbs_int.h"

enum vd_call {
	VD_get_device_list, VD_open_device, VD_query_port, VD_query_gid, VD_query_pkey,
	VD_alloc_pd, VD_reg_mr, VD_create_comp_channel, VD_create_cq, VD_create_qp,
	VD_create_qp_ex, VD_modify_qp, VD_modify_qp_rtr, VD_modify_qp_rts, VD_attach_mcast,
	VD_create_ah, VD_create_flow, VD_post_send, VD_post_recv, VD_req_notify_cq,
	VD_ifinfo, VD_neigh_resolve, VD_link_kring, VD_NCALLS
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
	/* What the links asked for. */
	int calls[VD_NCALLS];
	int live;				/* objects made and not destroyed */
	struct ibv_qp_init_attr qp_attr;
	struct ibv_qp_init_attr_ex qp_attr_ex;
	int n_modify;
	int modify_state[8], modify_mask[8];
	struct sl_verbs_flow_rule flows[VD_FLOWS_MAX];
	struct ibv_flow *flow_obj[VD_FLOWS_MAX];
	int n_flows, n_flows_destroyed, n_flows_live;
	struct ibv_ah_attr ahs[VD_AH_MAX];
	int n_ah, n_ah_live;
	struct vd_sent sent[VD_SENT_MAX];
	int n_sent, n_post_send, n_signalled;
	int mcast_attached;
	/* Send WRs the device owns, in order. */
	struct { uint64_t wr_id, addr; uint32_t len, sum; bool signalled; } out[VD_OUT_MAX];
	int n_out;
	int reuse_violations, corrupt_violations;
	uint64_t completed;
	/* Receive WRs posted and not used. */
	struct { uint64_t wr_id, addr; uint32_t len; } rq[VD_RQ_MAX];
	int n_rq, n_post_recv;
	struct ibv_wc rwc[64];
	int n_rwc;
	struct ibv_cq *rcq, *scq;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	struct ibv_mr *mr[4];
	int n_mr;
	/* The kring fallback. */
	struct sl_link kring;
	int kring_closed;
};

static struct vd_state vd;

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
	return vd_obj(sizeof(struct ibv_context));
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

static struct ibv_qp *vd_new_qp(struct ibv_pd *pd, uint32_t num)
{
	vd.qp = vd_obj(sizeof(*vd.qp));
	vd.qp->pd = pd;
	vd.qp->qp_num = num;
	vd.qp->qp_type = IBV_QPT_UD;
	vd.n_rq = 0;
	return vd.qp;
}

static struct ibv_qp *vd_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	if (vd_failing(VD_create_qp))
		return NULL;
	vd.qp_attr = *a;
	return vd_new_qp(pd, 0x2a);
}

static struct ibv_qp *vd_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a)
{
	(void)c;
	if (vd_failing(VD_create_qp_ex))
		return NULL;
	vd.qp_attr_ex = *a;
	/* An underlay QP has a QPN of its own; it sends as source_qpn. */
	return vd_new_qp(a->pd, 0x3b);
}

static int vd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	(void)qp;
	if (vd.n_modify < 8) {
		vd.modify_state[vd.n_modify] = a->qp_state;
		vd.modify_mask[vd.n_modify] = mask;
	}
	vd.n_modify++;
	if (vd_failing(VD_modify_qp) ||
	    (a->qp_state == IBV_QPS_RTR && vd_failing(VD_modify_qp_rtr)) ||
	    (a->qp_state == IBV_QPS_RTS && vd_failing(VD_modify_qp_rts)))
		return errno;
	return 0;
}

static int vd_destroy_qp(struct ibv_qp *qp)
{
	if (qp == vd.qp)
		vd.qp = NULL;
	return vd_free(qp);
}

static int vd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	if (vd_failing(VD_attach_mcast))
		return errno;
	vd.mcast_attached++;
	return 0;
}

static int vd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)qp;
	(void)gid;
	(void)lid;
	vd.mcast_attached--;
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

	(void)qp;
	if (vd_failing(VD_create_flow))
		return NULL;
	f = vd_obj(sizeof(*f));
	if (vd.n_flows < VD_FLOWS_MAX) {
		/* The specs follow the attribute, as rdma-core reads them. */
		memcpy(&vd.flows[vd.n_flows], a,
		       a->size < sizeof(vd.flows[0]) ? a->size : sizeof(vd.flows[0]));
		vd.flow_obj[vd.n_flows] = f;
	}
	vd.n_flows++;
	vd.n_flows_live++;
	return f;
}

static int vd_destroy_flow(struct ibv_flow *f)
{
	for (int i = 0; i < vd.n_flows && i < VD_FLOWS_MAX; i++)
		if (vd.flow_obj[i] == f)
			vd.flow_obj[i] = NULL;
	vd.n_flows_destroyed++;
	vd.n_flows_live--;
	return vd_free(f);
}

static int vd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	if (vd_failing(VD_post_send)) {
		*bad = wr;
		return errno;
	}
	vd.n_post_send++;
	for (; wr; wr = wr->next) {
		uint64_t a = wr->sg_list[0].addr;
		uint32_t len = wr->sg_list[0].length;

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

static int vd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	if (vd_failing(VD_post_recv)) {
		*bad = wr;
		return errno;
	}
	vd.n_post_recv++;
	for (; wr; wr = wr->next)
		if (vd.n_rq < VD_RQ_MAX) {
			vd.rq[vd.n_rq].wr_id = wr->wr_id;
			vd.rq[vd.n_rq].addr = wr->sg_list[0].addr;
			vd.rq[vd.n_rq].len = wr->sg_list[0].length;
			vd.n_rq++;
		}
	return 0;
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

	if (cq == vd.scq)
		return vd_poll_scq(n, wc);
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
	(void)nh;
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
	.ifinfo = vd_ifinfo,
	.neigh_resolve = vd_neigh_resolve,
	.link_kring = vd_link_kring,
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

/*
 * The device received frame (IPoIB header + packet, len bytes) for the
 * oldest posted receive WR: GRH (sgid) in its first 40 bytes, then the
 * frame; a completion with wc_flags.  0, or -1 if nothing is posted.
 */
static inline int vd_rx(const void *frame, uint32_t len, unsigned int wc_flags, uint32_t src_qp,
			const uint8_t sgid[16])
{
	uint8_t *p;
	struct ibv_wc *wc;

	if (!vd.n_rq || vd.n_rwc >= 64 || len + SL_IPOIB_GRH_LEN > vd.rq[0].len)
		return -1;
	p = (uint8_t *)(uintptr_t)vd.rq[0].addr;
	memset(p, 0, SL_IPOIB_GRH_LEN);
	p[0] = 0x60;
	if (sgid)
		memcpy(p + 8, sgid, 16);
	memcpy(p + SL_IPOIB_GRH_LEN, frame, len);
	wc = &vd.rwc[vd.n_rwc++];
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = vd.rq[0].wr_id;
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = IBV_WC_RECV;
	wc->byte_len = len + SL_IPOIB_GRH_LEN;
	wc->wc_flags = wc_flags | IBV_WC_GRH;
	wc->src_qp = src_qp;
	memmove(vd.rq, vd.rq + 1, sizeof(vd.rq[0]) * (size_t)(vd.n_rq - 1));
	vd.n_rq--;
	return 0;
}

#endif /* SLUICE_TESTS_VERBS_DOUBLE_H */
