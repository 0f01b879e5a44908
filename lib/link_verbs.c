// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs link, plain UD mode (DESIGN.md "Data path" 1, issue 6): IPv4
 * framed as IPoIB (RFC 4391) over a UD QP of this process, through
 * rdma-core.  It is what Soft-RoCE (rxe) can run: no source QPN, no flow
 * steering, no checksum offload, so the stack demultiplexes and checks
 * everything itself.
 *
 * Zero copy both ways.  One MR covers the region's packet-buffer data, so
 * receive WRs point into pool buffers, placed so that after the 40-byte GRH
 * and the 4-byte IPoIB header the IP header lands at SL_HEADROOM; a send
 * prepends the IPoIB header in place in front of the IP packet.
 *
 * Sends complete before tx returns: a link's tx only borrows the buffer
 * (stack.h), and TCP keeps what it sent for retransmission and frees it on
 * ACK, so a buffer still being read by the device could be freed, reused
 * and rewritten under it.  Polling the send CQ for our own WR keeps the
 * zero copy and needs no buffer ownership protocol; the cost is one
 * completion round trip per packet.  When the stack grows a flush at
 * unlock (struct sl_link_ops), sends can be posted unsignalled but the
 * last, and completed once per batch there.
 *
 * Neighbours: IPoIB ARP (hardware type 32, 20-byte addresses) over the
 * P_Key's broadcast group when the QP can attach to it, plus static
 * entries; one address handle per neighbour, made when it is resolved and
 * reused for every packet.  The table is this process's: address handles
 * belong to its PD.
 *
 * Resources: everything verbs made is released by verbs_close(), and by
 * the kernel (uverbs) when the process dies.  Receive buffers posted from
 * the shared pool go back to it on close; those of a process killed with
 * buffers posted are marked with its pid and taken back by the next link
 * set up on the stack (sl_verbs_reclaim()).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include "ipoib.h"
#include "link_verbs.h"

#define VERBS_RQ_DEFAULT	512
#define VERBS_SQ_DEFAULT	64
#define VERBS_WC_BATCH		32
#define VERBS_NEIGH_MAX		64
#define VERBS_TX_TIMEOUT_NS	2000000000ll	/* a send that never completes */
#define ARP_RETRY_MS		1000
#define ARP_TRIES		3
/* Receive SGEs start here in a buffer: GRH + IPoIB header end at SL_HEADROOM. */
#define RX_LEAD			(SL_HEADROOM - SL_IPOIB_GRH_LEN - SL_IPOIB_HLEN)

_Static_assert(SL_HEADROOM >= SL_IPOIB_GRH_LEN + SL_IPOIB_HLEN, "headroom holds GRH + IPoIB");

enum vn_state { VN_FREE, VN_PENDING, VN_VALID, VN_STATIC };

struct verbs_neigh {
	uint32_t ip;			/* network order */
	enum vn_state state;
	uint32_t qpn;
	uint8_t gid[16];
	struct ibv_ah *ah;		/* VALID and STATIC: made once, reused */
	uint32_t hold_idx;		/* one packet waiting for ARP */
	unsigned int tries;
	uint64_t updated_ms;
};

struct verbs_link {
	struct sl_link link;
	struct sl_stack *stack;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *chan;
	struct ibv_cq *rcq, *scq;
	struct ibv_qp *qp;
	struct ibv_ah *mcast_ah;
	union ibv_gid gid;
	uint8_t mgid[16];
	uint8_t hw[SL_IPOIB_HWLEN];
	uint8_t port;
	bool mcast;
	bool ev_signalled;		/* evfd written by verbs_fd() */
	bool roce;			/* Ethernet link layer (RoCE) */
	int mcast_err;
	int mc_sock;			/* RoCE: holds the IPv6 group join */
	uint16_t pkey;
	uint16_t pkey_index;
	uint32_t gid_index;
	uint32_t qkey;
	uint32_t qpn;
	unsigned int ib_mtu, ud_mtu;
	int epfd, evfd;
	uint32_t rq_size, sq_size;
	/* Receive slots: wr_id is a slot, the slot names the posted buffer. */
	uint32_t *rx_slot;
	uint32_t *rx_free;
	uint32_t rx_nfree;
	uint64_t tx_wr_id;
	uint64_t last_timer_ms;
	/* What went wrong, for sluice_verbs_info(). */
	uint64_t tx_post_err, tx_wc_err, tx_timeout, rx_wc_err, rx_post_err;
	int last_wc_status;
	int tx_last_err;
	unsigned int tx_last_err_len;
	struct verbs_neigh neigh[VERBS_NEIGH_MAX];
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static struct verbs_link *V(struct sl_link *l)
{
	return (struct verbs_link *)l;
}

/* ---- address handles and neighbours ---------------------------------- */

static struct ibv_ah *ah_make(struct verbs_link *v, const uint8_t gid[16])
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	memcpy(a.grh.dgid.raw, gid, 16);
	a.grh.sgid_index = (uint8_t)v->gid_index;
	a.grh.hop_limit = 64;
	a.port_num = v->port;
	return ibv_create_ah(v->pd, &a);
}

static struct verbs_neigh *neigh_find(struct verbs_link *v, uint32_t ip)
{
	for (int i = 0; i < VERBS_NEIGH_MAX; i++)
		if (v->neigh[i].state != VN_FREE && v->neigh[i].ip == ip)
			return &v->neigh[i];
	return NULL;
}

static void neigh_clear(struct verbs_link *v, struct sl_stack *s, struct verbs_neigh *n)
{
	if (n->ah)
		ibv_destroy_ah(n->ah);
	if (n->hold_idx != SLUICE_IDX_NONE && s) {
		sl_buf_free(s, n->hold_idx);
		sl_count(s, SL_C_arp_hold_dropped);
	}
	(void)v;
	memset(n, 0, sizeof(*n));
	n->hold_idx = SLUICE_IDX_NONE;
}

/* A free entry, or the least recently updated dynamic one. */
static struct verbs_neigh *neigh_new(struct verbs_link *v, struct sl_stack *s, uint32_t ip)
{
	struct verbs_neigh *n = NULL;

	for (int i = 0; i < VERBS_NEIGH_MAX; i++) {
		struct verbs_neigh *c = &v->neigh[i];

		if (c->state == VN_FREE) {
			n = c;
			break;
		}
		if (c->state != VN_STATIC && (!n || c->updated_ms < n->updated_ms))
			n = c;
	}
	if (!n)
		return NULL;
	neigh_clear(v, s, n);
	n->ip = ip;
	return n;
}

/* Point n at qpn/gid (an AH made only if the GID changed); 0 or -errno. */
static int neigh_set(struct verbs_link *v, struct verbs_neigh *n, uint32_t qpn,
		     const uint8_t gid[16], uint64_t now_ms)
{
	if (!n->ah || memcmp(n->gid, gid, 16)) {
		struct ibv_ah *ah = ah_make(v, gid);

		if (!ah)
			return errno ? -errno : -ENOMEM;
		if (n->ah)
			ibv_destroy_ah(n->ah);
		n->ah = ah;
		memcpy(n->gid, gid, 16);
	}
	n->qpn = qpn & SL_IPOIB_QPN_MASK;
	n->updated_ms = now_ms;
	n->tries = 0;
	return 0;
}

/* ---- sending ---------------------------------------------------------- */

/* Post one signalled send and poll the send CQ until it completes. */
static int tx_post_wait(struct verbs_link *v, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc[4];
	int64_t deadline = 0;
	uint64_t id = ++v->tx_wr_id;
	unsigned int spins = 0;
	int ret;

	wr->wr_id = id;
	ret = ibv_post_send(v->qp, wr, &bad);
	if (ret) {
		v->tx_post_err++;
		return -ret;
	}
	for (;;) {
		int k = ibv_poll_cq(v->scq, 4, wc);

		if (k < 0)
			return -EIO;
		for (int i = 0; i < k; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				v->tx_wc_err++;
				v->last_wc_status = wc[i].status;
			}
			if (wc[i].wr_id == id)
				return wc[i].status == IBV_WC_SUCCESS ? 0 : -EIO;
		}
		/* Soft-RoCE runs the send in a kernel work item: let it. */
		if (++spins < 64)
			continue;
		if (!deadline)
			deadline = mono_ns() + VERBS_TX_TIMEOUT_NS;
		else if (mono_ns() > deadline) {
			v->tx_timeout++;
			return -ETIMEDOUT;
		}
		sched_yield();
	}
}

/* Send buffer idx's data (borrowed) as ethertype to qpn through ah. */
static int verbs_send(struct verbs_link *v, struct sl_stack *s, uint32_t idx,
		      uint16_t ethertype, struct ibv_ah *ah, uint32_t qpn)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint8_t *data;
	int ret;

	if (b->off < SL_IPOIB_HLEN || b->off + b->len > s->buf_size)
		return -EINVAL;
	if (b->len > v->ud_mtu)
		return -EMSGSIZE;
	data = sl_buf_data(s, idx) - SL_IPOIB_HLEN;
	sl_ipoib_hdr_put(data, ethertype);
	sge.addr = (uintptr_t)data;
	sge.length = b->len + SL_IPOIB_HLEN;
	sge.lkey = v->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = v->qkey;
	ret = tx_post_wait(v, &wr);
	return ret;
}

static void arp_send(struct verbs_link *v, struct sl_stack *s, uint16_t op,
		     const struct verbs_neigh *to, uint32_t tpa)
{
	uint8_t tha[SL_IPOIB_HWLEN];
	struct sl_ipoib_addr ta;
	uint32_t idx;

	if (op == 1 && !v->mcast)
		return;
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return;
	if (to) {
		ta.flags = 0;
		ta.qpn = to->qpn;
		memcpy(ta.gid, to->gid, 16);
		sl_ipoib_hw_encode(tha, &ta);
	}
	sl_buf(s, idx)->len = (uint16_t)sl_ipoib_arp_build(sl_buf_data(s, idx), op, v->hw,
							  s->r->ip_addr, to ? tha : NULL, tpa);
	sl_count(s, SL_C_arp_tx);
	if (op == 1)
		verbs_send(v, s, idx, ETHERTYPE_ARP_, v->mcast_ah, SL_IPOIB_MCAST_QPN);
	else
		verbs_send(v, s, idx, ETHERTYPE_ARP_, to->ah, to->qpn);
	sl_buf_free(s, idx);
}

static void neigh_release_hold(struct verbs_link *v, struct sl_stack *s, struct verbs_neigh *n)
{
	uint32_t h = n->hold_idx;

	if (h == SLUICE_IDX_NONE)
		return;
	n->hold_idx = SLUICE_IDX_NONE;
	if (verbs_send(v, s, h, ETHERTYPE_IP_, n->ah, n->qpn))
		sl_count(s, SL_C_link_tx_err);
	else
		sl_count(s, SL_C_link_tx);
	sl_buf_free(s, h);
}

static bool is_broadcast(const struct sl_stack *s, uint32_t nh)
{
	return nh == INADDR_BROADCAST ||
	       (s->r->ip_mask && s->r->ip_mask != 0xffffffffu &&
		nh == (s->r->ip_addr | ~s->r->ip_mask));
}

static int verbs_tx_resolve(struct verbs_link *v, struct sl_stack *s, uint32_t idx, uint32_t nh);

static int verbs_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct verbs_link *v = V(l);
	int ret = verbs_tx_resolve(v, s, idx, nh);

	if (ret) {
		v->tx_last_err = ret;
		v->tx_last_err_len = sl_buf(s, idx)->len;
	}
	return ret;
}

/* Send IPv4 packet idx (borrowed) to next hop nh, resolving it first. */
static int verbs_tx_resolve(struct verbs_link *v, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct verbs_neigh *n;
	uint32_t hold;

	if (is_broadcast(s, nh))
		return v->mcast ? verbs_send(v, s, idx, ETHERTYPE_IP_, v->mcast_ah,
					     SL_IPOIB_MCAST_QPN) : -ENETUNREACH;
	n = neigh_find(v, nh);
	if (n && (n->state == VN_VALID || n->state == VN_STATIC))
		return verbs_send(v, s, idx, ETHERTYPE_IP_, n->ah, n->qpn);
	if (!v->mcast) {
		/* No broadcast group: only static neighbours are reachable. */
		sl_count(s, SL_C_arp_hold_dropped);
		return -EHOSTUNREACH;
	}
	if (!n) {
		n = neigh_new(v, s, nh);
		if (!n)
			return -ENOBUFS;
		n->state = VN_PENDING;
	}
	/* Hold a copy of the newest packet; the buffer itself is borrowed. */
	hold = sl_buf_alloc(s);
	if (hold != SLUICE_IDX_NONE) {
		sl_buf(s, hold)->len = sl_buf(s, idx)->len;
		memcpy(sl_buf_data(s, hold), sl_buf_data(s, idx), sl_buf(s, idx)->len);
		if (n->hold_idx != SLUICE_IDX_NONE) {
			sl_buf_free(s, n->hold_idx);
			sl_count(s, SL_C_arp_hold_dropped);
		}
		n->hold_idx = hold;
	} else {
		sl_count(s, SL_C_arp_hold_dropped);
	}
	if (n->tries == 0) {
		n->tries++;
		n->updated_ms = sl_now(s) / 1000;
		arp_send(v, s, 1, NULL, nh);
	}
	return 0;
}

/* Retry or give up pending resolutions (about every 100 ms). */
static void arp_timer(struct verbs_link *v, struct sl_stack *s, uint64_t now_ms)
{
	for (int i = 0; i < VERBS_NEIGH_MAX; i++) {
		struct verbs_neigh *n = &v->neigh[i];

		if (n->state != VN_PENDING || now_ms - n->updated_ms < ARP_RETRY_MS)
			continue;
		if (n->tries >= ARP_TRIES) {
			neigh_clear(v, s, n);
			continue;
		}
		n->tries++;
		n->updated_ms = now_ms;
		arp_send(v, s, 1, NULL, n->ip);
	}
}

/* ---- receiving -------------------------------------------------------- */

void sl_verbs_buf_mark(struct sl_stack *s, uint32_t idx, pid_t pid)
{
	struct sluice_buf *b = sl_buf(s, idx);

	b->flags = SL_VERBS_BUF_POSTED;
	b->aux = SL_VERBS_BUF_MAGIC;
	b->ts_us = (uint64_t)pid;
}

void sl_verbs_buf_unmark(struct sl_stack *s, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);

	b->flags = 0;
	b->aux = 0;
	b->ts_us = 0;
}

unsigned int sl_verbs_reclaim(struct sl_stack *s)
{
	pid_t self = sl_self_pid();
	unsigned int n = 0;

	for (uint32_t i = 0; i < s->n_bufs; i++) {
		struct sluice_buf *b = sl_buf(s, i);
		pid_t pid = (pid_t)b->ts_us;

		if (b->flags != SL_VERBS_BUF_POSTED || b->aux != SL_VERBS_BUF_MAGIC ||
		    !b->ts_us || b->ts_us > INT_MAX || pid == self)
			continue;
		/* A zombie still counts as alive: its buffers wait for a later link. */
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		sl_verbs_buf_unmark(s, i);
		sl_buf_free(s, i);
		n++;
	}
	return n;
}

static void arp_input(struct verbs_link *v, struct sl_stack *s, uint32_t idx)
{
	const struct sl_ipoib_arp *a = (const struct sl_ipoib_arp *)sl_buf_data(s, idx);
	uint64_t now_ms = sl_now(s) / 1000;
	struct sl_ipoib_addr sa;
	struct verbs_neigh *n;
	uint32_t spa, tpa;
	uint16_t op;

	sl_count(s, SL_C_arp_rx);
	if (sl_ipoib_arp_check(a, sl_buf(s, idx)->len)) {
		sl_count(s, SL_C_arp_rx_bad);
		goto out;
	}
	sl_ipoib_hw_decode(a->sha, &sa);
	spa = a->spa;
	tpa = a->tpa;
	op = ntohs(a->op);
	if (!memcmp(a->sha + 1, v->hw + 1, SL_IPOIB_HWLEN - 1))
		goto out;	/* our own request, back from the group */
	/* RFC 826 "merge": update an entry we already have. */
	n = spa ? neigh_find(v, spa) : NULL;
	if (n && n->state != VN_STATIC) {
		if (neigh_set(v, n, sa.qpn, sa.gid, now_ms) == 0) {
			n->state = VN_VALID;
			neigh_release_hold(v, s, n);
		}
	}
	if (!s->r->ip_addr || tpa != s->r->ip_addr)
		goto out;
	if (!n && spa) {
		n = neigh_new(v, s, spa);
		if (n && neigh_set(v, n, sa.qpn, sa.gid, now_ms) == 0)
			n->state = VN_VALID;
		else if (n)
			neigh_clear(v, s, n);
	}
	if (op == 1 && n && n->ah)
		arp_send(v, s, 2, n, spa);
out:
	sl_buf_free(s, idx);
}

static void rx_one(struct verbs_link *v, struct sl_stack *s, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)wc->wr_id, idx, plen;
	const uint8_t *frame;
	struct sluice_buf *b;
	int type;

	if (wc->wr_id >= v->rq_size || v->rx_slot[slot] == SLUICE_IDX_NONE) {
		sl_count(s, SL_C_eth_rx_bad);
		return;
	}
	idx = v->rx_slot[slot];
	v->rx_slot[slot] = SLUICE_IDX_NONE;
	v->rx_free[v->rx_nfree++] = slot;
	sl_verbs_buf_unmark(s, idx);
	sl_count(s, SL_C_link_rx);
	frame = sl_buf_base(s, idx) + RX_LEAD;
	if (wc->status != IBV_WC_SUCCESS) {
		v->rx_wc_err++;
		v->last_wc_status = wc->status;
		goto bad;
	}
	if (wc->opcode != IBV_WC_RECV || wc->byte_len > s->buf_size - RX_LEAD)
		goto bad;
	type = sl_ipoib_rx_parse(frame, wc->byte_len, &plen);
	if (type < 0)
		goto bad;
	/* Our own multicast coming back (IBA: a member QP receives its own). */
	if ((wc->src_qp & SL_IPOIB_QPN_MASK) == v->qpn && (wc->wc_flags & IBV_WC_GRH) &&
	    !memcmp(sl_ipoib_grh_sgid(frame), v->gid.raw, 16)) {
		sl_buf_free(s, idx);
		return;
	}
	b = sl_buf(s, idx);
	b->off = SL_HEADROOM;
	b->len = (uint16_t)plen;
	if (type == ETHERTYPE_IP_) {
		sl_ip_input(s, idx);
		return;
	}
	if (type == ETHERTYPE_ARP_) {
		arp_input(v, s, idx);
		return;
	}
bad:
	/* eth_rx_bad counts bad link frames of any framing. */
	sl_count(s, SL_C_eth_rx_bad);
	sl_buf_free(s, idx);
}

/* Keep the receive queue full: one post_recv for the whole refill. */
static void rx_refill(struct verbs_link *v, struct sl_stack *s)
{
	struct ibv_recv_wr wr[VERBS_WC_BATCH], *bad;
	struct ibv_sge sge[VERBS_WC_BATCH];
	pid_t pid = sl_self_pid();

	while (v->rx_nfree) {
		unsigned int k = 0;

		while (k < VERBS_WC_BATCH && v->rx_nfree) {
			uint32_t idx = sl_buf_alloc(s), slot;

			if (idx == SLUICE_IDX_NONE)
				break;
			slot = v->rx_free[--v->rx_nfree];
			v->rx_slot[slot] = idx;
			sl_verbs_buf_mark(s, idx, pid);
			sge[k].addr = (uintptr_t)(sl_buf_base(s, idx) + RX_LEAD);
			sge[k].length = s->buf_size - RX_LEAD;
			sge[k].lkey = v->mr->lkey;
			wr[k].wr_id = slot;
			wr[k].sg_list = &sge[k];
			wr[k].num_sge = 1;
			wr[k].next = NULL;
			if (k)
				wr[k - 1].next = &wr[k];
			k++;
		}
		if (!k)
			return;
		bad = NULL;
		if (ibv_post_recv(v->qp, wr, &bad)) {
			v->rx_post_err++;
			/* Take back what was not posted. */
			for (struct ibv_recv_wr *w = bad; w; w = w->next) {
				uint32_t slot = (uint32_t)w->wr_id;

				sl_verbs_buf_unmark(s, v->rx_slot[slot]);
				sl_buf_free(s, v->rx_slot[slot]);
				v->rx_slot[slot] = SLUICE_IDX_NONE;
				v->rx_free[v->rx_nfree++] = slot;
			}
			return;
		}
		if (k < VERBS_WC_BATCH)
			return;
	}
}

static int verbs_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	struct verbs_link *v = V(l);
	struct ibv_wc wc[VERBS_WC_BATCH];
	uint64_t now_ms;
	int n = 0;

	if (v->ev_signalled) {
		uint64_t x;

		v->ev_signalled = false;
		if (read(v->evfd, &x, sizeof(x)) < 0)
			x = 0;
	}
	sl_batch_begin(s);
	now_ms = sl_now(s) / 1000;
	if (now_ms - v->last_timer_ms >= 100) {
		v->last_timer_ms = now_ms;
		arp_timer(v, s, now_ms);
	}
	while (n < budget) {
		int want = budget - n < VERBS_WC_BATCH ? budget - n : VERBS_WC_BATCH;
		int k = ibv_poll_cq(v->rcq, want, wc);

		if (k <= 0)
			break;
		for (int i = 0; i < k; i++)
			rx_one(v, s, &wc[i]);
		n += k;
		if (k < want)
			break;
	}
	rx_refill(v, s);
	sl_batch_end(s);
	return n;
}

/*
 * The fd to sleep on: an epoll set of the completion channel and an
 * eventfd.  Arming (ibv_req_notify_cq) only reports completions that come
 * after it, so one that came between our last poll of the CQ and the arm
 * would be slept through: after arming we poll once more (if the stack is
 * free), and if that found frames the eventfd makes the fd readable at
 * once, so the caller looks at its sockets again instead of sleeping.
 */
static int verbs_fd(struct sl_link *l)
{
	struct verbs_link *v = V(l);
	struct ibv_cq *cq;
	void *cq_ctx;
	int guard = 64;

	while (guard-- > 0 && ibv_get_cq_event(v->chan, &cq, &cq_ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(v->rcq, 0))
		return -1;
	if (sl_trylock(v->stack)) {
		int n = verbs_rx(l, v->stack, 64);

		sl_unlock(v->stack);
		if (n > 0 && !v->ev_signalled) {
			uint64_t one = 1;

			if (write(v->evfd, &one, sizeof(one)) == sizeof(one))
				v->ev_signalled = true;
		}
	}
	return v->epfd;
}

/* ---- setup and teardown ---------------------------------------------- */

/*
 * The plain UD QP: created by this process, RESET -> INIT (P_Key index,
 * port, Q_Key) -> RTR -> RTS (SQ PSN).  The enhanced path (issue 6, later:
 * IBV_QP_CREATE_SOURCE_QPN = the IPoIB interface's QPN, state-only
 * transitions, flow rules) belongs beside this function, chosen by the
 * caller; everything after the QP exists is shared.
 */
static int verbs_qp_create_plain(struct verbs_link *v)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	int ret;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = v->scq;
	ia.recv_cq = v->rcq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = v->sq_size;
	ia.cap.max_recv_wr = v->rq_size;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	v->qp = ibv_create_qp(v->pd, &ia);
	if (!v->qp)
		return errno ? -errno : -ENOMEM;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = v->pkey_index;
	a.port_num = v->port;
	a.qkey = v->qkey;
	ret = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			    IBV_QP_QKEY);
	if (ret)
		goto err_destroy_qp;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(v->qp, &a, IBV_QP_STATE);
	if (ret)
		goto err_destroy_qp;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	ret = ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (ret)
		goto err_destroy_qp;
	v->qpn = v->qp->qp_num & SL_IPOIB_QPN_MASK;
	return 0;

err_destroy_qp:
	ibv_destroy_qp(v->qp);
	v->qp = NULL;
	return -ret;
}

static struct ibv_context *verbs_open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list) {
		if (!errno)
			errno = ENODEV;
		return NULL;
	}
	errno = ENODEV;
	for (int i = 0; i < n; i++) {
		if (name && strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		break;
	}
	ibv_free_device_list(list);
	return ctx;
}

/*
 * RoCE v2 carries a multicast MGID as an IPv6 multicast destination, and
 * the kernel's IPv6 input drops one for a group nobody on the netdev
 * joined.  Soft-RoCE's attach only adds the link-layer address
 * (dev_mc_add()); the rdma_cm joins the IP group itself for RoCE
 * (cma_igmp_send()), and so do we, with a socket held open while the link
 * lives (closing it leaves the group).  On InfiniBand the SA join is the
 * kernel's (issue 6, kernel side).
 */
static int verbs_roce_ip_join(struct verbs_link *v)
{
	struct ibv_gid_entry ge;
	struct ipv6_mreq mr;
	int ret;

	ret = ibv_query_gid_ex(v->ctx, v->port, v->gid_index, &ge, 0);
	if (ret)
		return ret > 0 ? -ret : -EINVAL;
	if (!ge.ndev_ifindex)
		return -ENODEV;
	v->mc_sock = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (v->mc_sock < 0)
		return -errno;
	memcpy(&mr.ipv6mr_multiaddr, v->mgid, 16);
	mr.ipv6mr_interface = ge.ndev_ifindex;
	if (setsockopt(v->mc_sock, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr))) {
		ret = -errno;
		close(v->mc_sock);
		v->mc_sock = -1;
		return ret;
	}
	return 0;
}

/* Join the broadcast group (IPoIB ARP and IPv4 broadcast). */
static void verbs_mcast_join(struct verbs_link *v)
{
	int ret;

	sl_ipoib_bcast_mgid(v->mgid, v->pkey);
	ret = ibv_attach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
	if (ret) {
		v->mcast_err = -ret;
		return;
	}
	if (v->roce) {
		ret = verbs_roce_ip_join(v);
		if (ret) {
			v->mcast_err = ret;
			ibv_detach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
			return;
		}
	}
	v->mcast_ah = ah_make(v, v->mgid);
	if (!v->mcast_ah) {
		v->mcast_err = errno ? -errno : -ENOMEM;
		ibv_detach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
		return;
	}
	v->mcast = true;
}

static int verbs_wait_set(struct verbs_link *v)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fl = fcntl(v->chan->fd, F_GETFL);

	if (fl < 0 || fcntl(v->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	v->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->evfd < 0)
		return -errno;
	v->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (v->epfd < 0)
		goto err_close_evfd;
	ev.data.fd = v->chan->fd;
	if (epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->chan->fd, &ev))
		goto err_close_epfd;
	ev.data.fd = v->evfd;
	if (epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->evfd, &ev))
		goto err_close_epfd;
	return 0;

err_close_epfd:
	fl = -errno;
	close(v->epfd);
	v->epfd = -1;
	close(v->evfd);
	v->evfd = -1;
	return fl;
err_close_evfd:
	fl = -errno;
	close(v->evfd);
	v->evfd = -1;
	return fl;
}

/* Everything but the pool buffers (verbs_close() gives those back). */
static void verbs_destroy(struct verbs_link *v)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	if (v->mcast)
		ibv_detach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
	if (v->mc_sock >= 0)
		close(v->mc_sock);
	if (v->qp)
		ibv_destroy_qp(v->qp);
	for (int i = 0; i < VERBS_NEIGH_MAX; i++)
		if (v->neigh[i].ah) {
			ibv_destroy_ah(v->neigh[i].ah);
			v->neigh[i].ah = NULL;
		}
	if (v->mcast_ah)
		ibv_destroy_ah(v->mcast_ah);
	if (v->epfd >= 0)
		close(v->epfd);
	if (v->evfd >= 0)
		close(v->evfd);
	/* Every event got must be acked before its CQ can go. */
	while (v->chan && ibv_get_cq_event(v->chan, &cq, &cq_ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	if (v->scq)
		ibv_destroy_cq(v->scq);
	if (v->rcq)
		ibv_destroy_cq(v->rcq);
	if (v->chan)
		ibv_destroy_comp_channel(v->chan);
	if (v->mr)
		ibv_dereg_mr(v->mr);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
}

static void verbs_close(struct sl_link *l)
{
	struct verbs_link *v = V(l);
	struct sl_stack *s = v->stack;
	bool locked;

	s->link = NULL;
	verbs_destroy(v);
	/* The QP is gone, so no buffer is the device's any more. */
	locked = sl_lock(s) == 0;
	for (uint32_t i = 0; locked && i < v->rq_size; i++)
		if (v->rx_slot[i] != SLUICE_IDX_NONE) {
			sl_verbs_buf_unmark(s, v->rx_slot[i]);
			sl_buf_free(s, v->rx_slot[i]);
		}
	for (int i = 0; locked && i < VERBS_NEIGH_MAX; i++)
		if (v->neigh[i].hold_idx != SLUICE_IDX_NONE)
			sl_buf_free(s, v->neigh[i].hold_idx);
	if (locked)
		sl_unlock(s);
	free(v->rx_slot);
	free(v->rx_free);
	free(v);
}

static const struct sl_link_ops verbs_ops = {
	.name = "verbs",
	.tx = verbs_tx,
	.rx = verbs_rx,
	.fd = verbs_fd,
	.close = verbs_close,
};

int sluice_link_verbs(struct sluice_stack *st, const struct sluice_verbs_config *cfg)
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct sluice_verbs_config c = { 0 };
	struct ibv_port_attr pa;
	struct sl_ipoib_addr me;
	struct verbs_link *v;
	uint64_t data_len;
	int ret;

	if (s->link)
		return -EBUSY;
	if (cfg)
		c = *cfg;
	if (c.flags & ~SLUICE_VERBS_NO_MCAST)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->link.ops = &verbs_ops;
	v->stack = s;
	v->port = c.port ? c.port : 1;
	v->pkey_index = c.pkey_index;
	v->gid_index = c.gid_index;
	v->qkey = c.qkey ? c.qkey : SL_IPOIB_QKEY_DEFAULT;
	v->rq_size = c.rq_size ? c.rq_size : VERBS_RQ_DEFAULT;
	if (!c.rq_size && v->rq_size > s->n_bufs / 4)
		v->rq_size = s->n_bufs / 4;
	v->sq_size = c.sq_size ? c.sq_size : VERBS_SQ_DEFAULT;
	v->epfd = -1;
	v->evfd = -1;
	v->mc_sock = -1;
	for (int i = 0; i < VERBS_NEIGH_MAX; i++)
		v->neigh[i].hold_idx = SLUICE_IDX_NONE;
	ret = -EINVAL;
	/* The receive queue holds pool buffers: leave most of the pool. */
	if (v->rq_size > 4096 || v->rq_size > s->n_bufs / 4 || v->sq_size > 4096 ||
	    v->gid_index > 255)
		goto err_free;
	ret = -ENOMEM;
	v->rx_slot = calloc(v->rq_size, sizeof(*v->rx_slot));
	v->rx_free = calloc(v->rq_size, sizeof(*v->rx_free));
	if (!v->rx_slot || !v->rx_free)
		goto err_free;
	for (uint32_t i = 0; i < v->rq_size; i++) {
		v->rx_slot[i] = SLUICE_IDX_NONE;
		v->rx_free[v->rx_nfree++] = v->rq_size - 1 - i;
	}

	v->ctx = verbs_open_device(c.device);
	if (!v->ctx) {
		ret = -errno;
		goto err_free;
	}
	ret = ibv_query_port(v->ctx, v->port, &pa);
	if (ret) {
		ret = -ret;
		goto err_destroy;
	}
	/*
	 * On an InfiniBand link layer an address handle needs the peer's LID
	 * (a path record), which plain ARP does not give: that comes with the
	 * module's IPoIB neighbour resolution (issue 6, kernel side).
	 */
	ret = -EOPNOTSUPP;
	if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND)
		goto err_destroy;
	v->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	ret = -ENETDOWN;
	if (pa.state != IBV_PORT_ACTIVE)
		goto err_destroy;
	v->ib_mtu = sl_ipoib_ib_mtu_bytes(pa.active_mtu);
	v->ud_mtu = sl_ipoib_ud_mtu(pa.active_mtu);
	/* A receive must fit a buffer: GRH + header + packet after RX_LEAD. */
	if (v->ud_mtu > s->buf_size - SL_HEADROOM)
		v->ud_mtu = s->buf_size - SL_HEADROOM;
	ret = -EINVAL;
	if (v->ud_mtu < 576)
		goto err_destroy;
	ret = ibv_query_gid(v->ctx, v->port, (int)v->gid_index, &v->gid);
	if (ret) {
		ret = ret < 0 ? -EINVAL : -ret;
		goto err_destroy;
	}
	ret = ibv_query_pkey(v->ctx, v->port, v->pkey_index, &v->pkey);
	if (ret) {
		ret = ret < 0 ? -EINVAL : -ret;
		goto err_destroy;
	}
	v->pkey = ntohs(v->pkey);

	ret = -ENOMEM;
	v->pd = ibv_alloc_pd(v->ctx);
	if (!v->pd)
		goto err_errno;
	data_len = (uint64_t)s->n_bufs * s->buf_size;
	v->mr = ibv_reg_mr(v->pd, s->bufdata, data_len, IBV_ACCESS_LOCAL_WRITE);
	if (!v->mr)
		goto err_errno;
	v->chan = ibv_create_comp_channel(v->ctx);
	if (!v->chan)
		goto err_errno;
	v->rcq = ibv_create_cq(v->ctx, (int)v->rq_size, v, v->chan, 0);
	if (!v->rcq)
		goto err_errno;
	v->scq = ibv_create_cq(v->ctx, (int)v->sq_size, v, NULL, 0);
	if (!v->scq)
		goto err_errno;
	ret = verbs_qp_create_plain(v);
	if (ret)
		goto err_destroy;
	me.flags = 0;
	me.qpn = v->qpn;
	memcpy(me.gid, v->gid.raw, 16);
	sl_ipoib_hw_encode(v->hw, &me);
	if (!(c.flags & SLUICE_VERBS_NO_MCAST))
		verbs_mcast_join(v);
	ret = verbs_wait_set(v);
	if (ret)
		goto err_destroy;
	v->link.mtu = v->ud_mtu;

	ret = sl_lock(s);
	if (ret)
		goto err_destroy;
	/*
	 * The stack's MTU follows the link's (TCP's MSS, UDP's largest
	 * datagram); it only ever goes down, so what attached processes
	 * validated (mtu + headroom fits a buffer) stays true.
	 */
	if (s->r->mtu > v->ud_mtu)
		s->r->mtu = v->ud_mtu;
	sl_verbs_reclaim(s);
	rx_refill(v, s);
	ret = v->rx_nfree == v->rq_size ? -ENOBUFS : 0;
	sl_unlock(s);
	if (ret)
		goto err_destroy;
	ret = ibv_req_notify_cq(v->rcq, 0);
	if (ret) {
		ret = -ret;
		goto err_return_bufs;
	}
	s->link = &v->link;
	return 0;

err_errno:
	ret = errno ? -errno : -ENOMEM;
	goto err_destroy;
err_return_bufs:
	verbs_close(&v->link);
	return ret;
err_destroy:
	verbs_destroy(v);
err_free:
	free(v->rx_slot);
	free(v->rx_free);
	free(v);
	return ret;
}

static struct verbs_link *verbs_of(struct sl_stack *s)
{
	return s->link && s->link->ops == &verbs_ops ? V(s->link) : NULL;
}

int sluice_verbs_info(struct sluice_stack *st, struct sluice_verbs_info *info)
{
	struct verbs_link *v = verbs_of((struct sl_stack *)st);

	if (!v)
		return -ENODEV;
	memset(info, 0, sizeof(*info));
	memcpy(info->hwaddr, v->hw, SL_IPOIB_HWLEN);
	info->qpn = v->qpn;
	info->ib_mtu = v->ib_mtu;
	info->ud_mtu = v->ud_mtu;
	info->mcast = v->mcast;
	info->mcast_err = v->mcast_err;
	info->tx_post_err = v->tx_post_err;
	info->tx_wc_err = v->tx_wc_err;
	info->tx_timeout = v->tx_timeout;
	info->rx_wc_err = v->rx_wc_err;
	info->last_wc_status = v->last_wc_status;
	info->tx_last_err = v->tx_last_err;
	info->rx_post_err = v->rx_post_err;
	info->rx_posted = v->rq_size - v->rx_nfree;
	info->tx_last_err_len = v->tx_last_err_len;
	return 0;
}

int sluice_verbs_neigh_add(struct sluice_stack *st, uint32_t ip,
			   const uint8_t hwaddr[SLUICE_IPOIB_HWLEN])
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct verbs_link *v = verbs_of(s);
	struct sl_ipoib_addr a;
	struct verbs_neigh *n;
	int ret;

	if (!v)
		return -ENODEV;
	if (!ip || ip == INADDR_BROADCAST || !hwaddr)
		return -EINVAL;
	sl_ipoib_hw_decode(hwaddr, &a);
	ret = sl_lock(s);
	if (ret)
		return ret;
	n = neigh_find(v, ip);
	if (!n)
		n = neigh_new(v, s, ip);
	ret = n ? neigh_set(v, n, a.qpn, a.gid, sl_now(s) / 1000) : -ENOSPC;
	if (!ret) {
		n->state = VN_STATIC;
		neigh_release_hold(v, s, n);
	} else if (n && !n->ah) {
		neigh_clear(v, s, n);
	}
	sl_unlock(s);
	return ret;
}
