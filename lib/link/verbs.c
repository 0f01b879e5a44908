// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs link, plain UD mode (DESIGN.md "Data path" 1, issue 6): IPv4
 * framed as IPoIB (RFC 4391) over a UD QP of this process, through
 * rdma-core.  It is what Soft-RoCE (rxe) can run: no source QPN, no flow
 * steering, no checksum offload, so the stack demultiplexes and checks
 * everything itself.  The enhanced IPoIB mode (link/verbs_enh.c) reuses
 * everything here but the QP's creation and the neighbours' source.
 *
 * Receive is zero copy: one MR covers the region's packet-buffer data, so
 * receive WRs point into pool buffers, placed so that after the 40-byte
 * GRH and the 4-byte IPoIB header the IP header lands at SL_HEADROOM.
 *
 * Send copies: a link's tx only borrows the buffer (core.h), and TCP
 * frees what it sent on ACK, UDP at once, so a buffer the device still
 * reads could be reused and rewritten under it.  tx copies the packet
 * behind a 4-byte IPoIB header into a slot of the link's own send ring
 * (its own MR) and queues the WR; flush, which sl_unlock() calls, posts
 * the queued WRs with one post_send, only the last one signalled, and
 * reaps completions without waiting.  A ring slot is reused only after a
 * completion at or past it was polled; when the ring is full, tx waits
 * for the oldest (bounded: VERBS_TX_TIMEOUT_NS).  The copy (a packet's
 * length, in cache) replaced a completion round trip per packet.
 *
 * Neighbours: IPoIB ARP (hardware type 32, 20-byte addresses) over the
 * P_Key's broadcast group when the QP can attach to it, plus static
 * entries; or, on a module stack on an IPoIB interface (kneigh), the
 * module's neighbour table and SA path records (NEIGH_RESOLVE), which an
 * InfiniBand link layer needs for its address handles (DLID, SL, rate).
 * One address handle per neighbour, made when it is resolved and reused
 * for every packet; a resolved entry is asked again after
 * VERBS_NEIGH_REACHABLE_MS and dropped (with its AH) if no answer comes.
 * The table is this process's: address handles belong to its PD.
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

#include "os/os.h"
#include "link/verbs_int.h"

#define VERBS_TX_TIMEOUT_NS	2000000000ll	/* a send that never completes */
#define ARP_RETRY_MS		1000
#define ARP_TRIES		3
#define KNEIGH_RETRY_MS		100	/* asking the module again */
#define KNEIGH_TRIES		30
/* A resolved neighbour is asked again after this long (Linux's
 * base_reachable_time is 30 s) and dropped ARP_TRIES retries later. */
#define VERBS_NEIGH_REACHABLE_MS 30000
#define RX_LEAD			VERBS_RX_LEAD
#define VERBS_RX_REFILL_MIN	16
#define VERBS_IFINFO_TRIES	100	/* timer ticks (10 s) to wait for a rejoin */

_Static_assert(SL_HEADROOM >= SL_IPOIB_GRH_LEN + SL_IPOIB_HLEN, "headroom holds GRH + IPoIB");
_Static_assert(VERBS_TX_BATCH <= VERBS_SQ_DEFAULT, "a batch fits the default send queue");

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

/*
 * An AH to gid: global (GRH) always on RoCE and for multicast; on an
 * InfiniBand link layer from the path record nr (DLID, SL, rate, a GRH
 * only if the path needs one: hop_limit > 0).
 */
struct ibv_ah *sl_verbs_ah_make(struct verbs_link *v, const uint8_t gid[16],
				 const struct sluice_neigh_resolve *nr)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.port_num = v->port;
	if (nr) {
		a.dlid = nr->dlid;
		a.sl = nr->sl & 0xf;
		a.static_rate = nr->rate;
		if (!nr->hop_limit)
			return VB->create_ah(v->pd, &a);
		a.grh.hop_limit = nr->hop_limit;
		a.grh.traffic_class = nr->traffic_class;
		a.grh.flow_label = nr->flow_label & 0xfffff;
	} else {
		a.grh.hop_limit = 64;
	}
	a.is_global = 1;
	memcpy(a.grh.dgid.raw, gid, 16);
	a.grh.sgid_index = (uint8_t)v->gid_index;
	return VB->create_ah(v->pd, &a);
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
		VB->destroy_ah(n->ah);
	if (s) {
		sl_verbs_hold_mark(s, n->hold_idx, 0);
		sl_hold_drop(s, &n->hold_idx, SL_C_arp_hold_dropped);
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

/* Point n at qpn/gid (an AH made only if the GID or path changed, or
 * always with a path record); 0 or -errno. */
static int neigh_set(struct verbs_link *v, struct verbs_neigh *n, uint32_t qpn,
		     const uint8_t gid[16], const struct sluice_neigh_resolve *nr, uint64_t now_ms)
{
	if (!n->ah || nr || memcmp(n->gid, gid, 16)) {
		struct ibv_ah *ah = sl_verbs_ah_make(v, gid, nr);

		if (!ah)
			return errno ? -errno : -ENOMEM;
		if (n->ah)
			VB->destroy_ah(n->ah);
		n->ah = ah;
		memcpy(n->gid, gid, 16);
	}
	n->qpn = qpn & SL_IPOIB_QPN_MASK;
	n->updated_ms = now_ms;
	n->probe_ms = 0;
	n->tries = 0;
	return 0;
}

/* ---- sending ---------------------------------------------------------- */

/*
 * A fork()ed child inherits this struct but not the use of what verbs made:
 * the QP, CQs and their state here are the parent's (rdma-core maps their
 * buffers MADV_DONTFORK), and destroying them through the inherited uverbs
 * fd would destroy the parent's.  The child's stack drops to the kring
 * link underneath (its rings are shared across fork), or to no link, and
 * leaves everything verbs made, posted buffers included, to the parent;
 * at the fork it let go of its references to the parent's uverbs file
 * (link/verbs_setup.c), so the parent's death destroys them.
 */
static bool verbs_forked(struct verbs_link *v)
{
	if (v->owner == sl_self_pid())
		return false;
	if (v->stack->link == &v->link)
		v->stack->link = v->under;
	return true;
}

/* Take completions; with wait, until at least one ring slot is free.
 * 0, or -ETIMEDOUT / -EIO. */
static int tx_reap(struct verbs_link *v, bool wait)
{
	struct ibv_wc wc[8];
	int64_t deadline = 0;
	unsigned int spins = 0;

	for (;;) {
		int k = VB->poll_cq(v->scq, 8, wc);

		if (k < 0)
			return -EIO;
		for (int i = 0; i < k; i++) {
			uint64_t seq = wc[i].wr_id;

			if (wc[i].status != IBV_WC_SUCCESS) {
				v->tx_wc_err++;
				v->last_wc_status = wc[i].status;
				/* A completion in error: the QP is in the
				 * error state (IBA vol 1 10.3.1), flushing
				 * the rest; sl_verbs_rx_cq() resets it. */
				v->need_reset = true;
			}
			/* In order: every slot up to seq is the device's no more. */
			if (seq >= v->tx_tail && seq < v->tx_head)
				v->tx_tail = seq + 1;
		}
		if (k == 8)
			continue;
		if (!wait || v->tx_head - v->tx_tail < v->sq_size)
			return 0;
		/* Soft-RoCE runs the send in a kernel work item: let it. */
		if (++spins < 64)
			continue;
		if (!deadline)
			deadline = mono_ns() + VERBS_TX_TIMEOUT_NS;
		else if (mono_ns() > deadline) {
			v->tx_timeout++;
			return -ETIMEDOUT;
		}
		sl_sys_yield();
	}
}

/* Post what tx queued: one post_send, the last WR signalled. */
static int tx_post(struct verbs_link *v)
{
	struct ibv_send_wr *bad = NULL;
	unsigned int n = v->tx_npend;
	int ret;

	if (!n)
		return 0;
	v->tx_npend = 0;
	v->link.tx_pending = false;
	for (unsigned int i = 0; i < n; i++)
		v->tx_wr[i].next = i + 1 < n ? &v->tx_wr[i + 1] : NULL;
	v->tx_wr[n - 1].send_flags |= IBV_SEND_SIGNALED;
	v->tx_posts++;
	ret = VB->post_send(v->qp, v->tx_wr, &bad);
	if (!ret) {
		v->tx_wrs += n;
		return 0;
	}
	/*
	 * Those from bad on were not posted (they count as lost packets).
	 * When none was, their slots go back at once.  Otherwise the ones
	 * before bad went unsignalled: their slots come back with the next
	 * signalled completion (a later one covers every earlier slot), and
	 * the unposted slots with them; until then they only cost room.
	 */
	v->tx_post_err++;
	if (bad == v->tx_wr)
		v->tx_head -= n;
	return -ret;
}

void sl_verbs_flush(struct sl_link *l, struct sl_stack *s)
{
	struct verbs_link *v = V(l);

	if (verbs_forked(v)) {
		l->tx_pending = false;
		if (v->under && v->under->tx_pending && v->under->ops->flush)
			v->under->ops->flush(v->under, s);
		return;
	}
	if (tx_post(v))
		sl_count(s, SL_C_link_tx_err);
	tx_reap(v, false);
	if (v->under && v->under->tx_pending && v->under->ops->flush)
		v->under->ops->flush(v->under, s);
	l->tx_pending = v->under && v->under->tx_pending;
}

/* Queue buffer idx's data (copied) as ethertype to qpn through ah. */
static int verbs_send(struct verbs_link *v, struct sl_stack *s, uint32_t idx,
		      uint16_t ethertype, struct ibv_ah *ah, uint32_t qpn)
{
	struct sluice_buf *b = sl_buf(s, idx);
	/* Read once: checked against the slot, then copied into it (read
	 * again, up to 64 KiB went into a slot of ud_mtu bytes). */
	uint32_t len = SL_READ_ONCE(b->len);
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	uint8_t *slot;
	int ret;

	if (b->off + len > s->buf_size)
		return -EINVAL;
	if (len > v->ud_mtu)
		return -EMSGSIZE;
	/*
	 * The port is down (IBV_EVENT_PORT_ERR, no PORT_ACTIVE since): the
	 * packet goes nowhere either way, and posting it costs the QP. On
	 * Soft-RoCE a send with its netdev down finds no route for its GID's
	 * address and completes with IBV_WC_LOC_QP_OP_ERR, the QP in the
	 * error state (6.1 rxe_req.c, rxe_requester(): finish_packet() ->
	 * rxe_prepare() -> -EHOSTUNREACH): each packet of a flap cost a
	 * reset and a refill of the whole receive queue.  Dropped here, as
	 * lost on the wire; TCP resends it once the port is back.
	 */
	if (v->port_down) {
		sl_count(s, SL_C_verbs_tx_port_down);
		return -ENETDOWN;
	}
	if (v->tx_npend == VERBS_TX_BATCH) {
		ret = tx_post(v);
		if (ret)
			return ret;
	}
	if (v->tx_head - v->tx_tail >= v->sq_size) {
		ret = tx_post(v);
		if (!ret)
			ret = tx_reap(v, true);
		if (ret)
			return ret;
	}
	slot = v->tx_ring + (size_t)(v->tx_head % v->sq_size) * v->tx_slot_size;
	sl_ipoib_hdr_put(slot, ethertype);
	memcpy(slot + SL_IPOIB_HLEN, sl_buf_data(s, idx), len);
	wr = &v->tx_wr[v->tx_npend];
	sge = &v->tx_sge[v->tx_npend];
	sge->addr = (uintptr_t)slot;
	sge->length = len + SL_IPOIB_HLEN;
	sge->lkey = v->tx_mr->lkey;
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = v->tx_head++;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	/* Ask for the IPv4 (and TCP/UDP) checksum only where it is offered. */
	if (v->tx_csum && ethertype == ETHERTYPE_IP_)
		wr->send_flags = IBV_SEND_IP_CSUM;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = v->qkey;
	v->tx_npend++;
	v->link.tx_pending = true;
	return 0;
}

int sl_verbs_send(struct verbs_link *v, struct sl_stack *s, uint32_t idx, uint16_t ethertype,
		  struct ibv_ah *ah, uint32_t qpn)
{
	return verbs_send(v, s, idx, ethertype, ah, qpn);
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
							  s->lib->ip_addr, to ? tha : NULL, tpa);
	sl_count(s, SL_C_arp_tx);
	if (op == 1)
		verbs_send(v, s, idx, ETHERTYPE_ARP_, v->mcast_ah, SL_IPOIB_MCAST_QPN);
	else
		verbs_send(v, s, idx, ETHERTYPE_ARP_, to->ah, to->qpn);
	sl_buf_free(s, idx);
}

/* n resolved: what waited goes, oldest first (as link/eth.c's). */
static void neigh_release_hold(struct verbs_link *v, struct sl_stack *s, struct verbs_neigh *n)
{
	uint32_t h = sl_hold_take(s, &n->hold_idx), steps = 0;

	sl_verbs_hold_mark(s, h, 0);
	while (sl_buf_next(s, h, &steps)) {
		uint32_t next = sl_hold_next(s, h);

		if (verbs_send(v, s, h, ETHERTYPE_IP_, n->ah, n->qpn))
			sl_count(s, SL_C_link_tx_err);
		else
			sl_count(s, SL_C_link_tx);
		sl_buf_free(s, h);
		h = next;
	}
}

static bool is_broadcast(const struct sl_stack *s, uint32_t nh)
{
	return nh == INADDR_BROADCAST ||
	       (s->lib->ip_mask && s->lib->ip_mask != 0xffffffffu &&
		nh == (s->lib->ip_addr | ~s->lib->ip_mask));
}

/*
 * Ask the module for nh (kneigh): VALID makes n's AH from the path record
 * and returns 0; PENDING -EINPROGRESS; else -errno (-EHOSTUNREACH for a
 * failed resolution).
 */
static int kneigh_ask(struct verbs_link *v, struct sl_stack *s, struct verbs_neigh *n,
		      uint64_t now_ms)
{
	struct sluice_neigh_resolve nr;
	struct sl_ipoib_addr a;
	int ret;

	memset(&nr, 0, sizeof(nr));
	nr.size = sizeof(nr);
	nr.addr = n->ip;
	ret = VB->neigh_resolve(s->region_fd, &nr);
	if (ret)
		return ret;
	if (nr.state == SLUICE_NEIGH_RES_PENDING)
		return -EINPROGRESS;
	if (nr.state != SLUICE_NEIGH_RES_VALID || nr.addr_len != SL_IPOIB_HWLEN)
		return -EHOSTUNREACH;
	/* The path record comes a little after the address. */
	if (v->ib && nr.path_state != SLUICE_NEIGH_RES_VALID)
		return nr.path_state == SLUICE_NEIGH_RES_FAILED ? -EHOSTUNREACH : -EINPROGRESS;
	sl_ipoib_hw_decode(nr.hwaddr, &a);
	ret = neigh_set(v, n, a.qpn, a.gid, v->ib ? &nr : NULL, now_ms);
	if (!ret)
		n->state = VN_VALID;
	return ret;
}

static int verbs_tx_resolve(struct verbs_link *v, struct sl_stack *s, uint32_t idx, uint32_t nh);

static int verbs_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct verbs_link *v = V(l);
	int ret;

	if (verbs_forked(v))
		return v->under ? v->under->ops->tx(v->under, s, idx, nh) : -ENETDOWN;
	ret = verbs_tx_resolve(v, s, idx, nh);

	if (ret) {
		v->tx_last_err = ret;
		v->tx_last_err_len = sl_buf(s, idx)->len;
	}
	return ret;
}

/* Send IPv4 packet idx (borrowed) to next hop nh, resolving it first. */
static int verbs_tx_resolve(struct verbs_link *v, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	uint64_t now_ms = sl_now(s) / 1000;
	struct verbs_neigh *n;
	int ret;

	/*
	 * Enhanced mode: the underlay QP may not attach to a group (mlx5:
	 * mlx5_ib_mcg_attach() refuses a source-QPN QP) and a send to a
	 * group needs its join (an SA MCMemberRecord) and MLID: broadcast
	 * and multicast go out through the interface, whose ipoib joins
	 * (send-only for a group it is not in) and sends, over the kring
	 * link underneath.
	 */
	if (v->under && (is_broadcast(s, nh) || SL_IN_MULTICAST(nh)))
		return v->under->ops->tx(v->under, s, idx, nh);
	if (is_broadcast(s, nh))
		return v->mcast ? verbs_send(v, s, idx, ETHERTYPE_IP_, v->mcast_ah,
					     SL_IPOIB_MCAST_QPN) : -ENETUNREACH;
	/* Plain UD: sending to another group needs a send-only join of its
	 * MGID and an address handle for it: not done. */
	if (SL_IN_MULTICAST(nh))
		return -ENETUNREACH;
	n = neigh_find(v, nh);
	if (n && (n->state == VN_VALID || n->state == VN_STATIC))
		return verbs_send(v, s, idx, ETHERTYPE_IP_, n->ah, n->qpn);
	if (!v->mcast && !v->kneigh) {
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
	if (v->kneigh && n->tries == 0) {
		n->tries++;
		n->updated_ms = now_ms;
		ret = kneigh_ask(v, s, n, now_ms);
		if (!ret)
			return verbs_send(v, s, idx, ETHERTYPE_IP_, n->ah, n->qpn);
		/* Failed: the entry stays, so the next packets wait for the
		 * timer's next question instead of asking (a syscall) each. */
		if (ret != -EINPROGRESS)
			return ret;
	}
	/* A copy waits behind those before it (proto/ip.c, sl_hold_add();
	 * the buffer itself is borrowed).  The copies are in no shared
	 * queue: marked as ours, as posted receive buffers are, so a
	 * process that takes over the stack lock from a dead holder leaves
	 * them alone (proto/recover.c); unmarked while the list changes, so
	 * those it drops go back to the pool clean. */
	sl_verbs_hold_mark(s, n->hold_idx, 0);
	sl_hold_add(s, &n->hold_idx, idx, SL_C_arp_hold_dropped);
	sl_verbs_hold_mark(s, n->hold_idx, sl_self_pid());
	if (!v->kneigh && n->tries == 0) {
		n->tries++;
		n->updated_ms = now_ms;
		arp_send(v, s, 1, NULL, nh);
	}
	return 0;
}

/* Retry or give up pending resolutions, re-ask old ones (about every
 * 100 ms). */
static void arp_timer(struct verbs_link *v, struct sl_stack *s, uint64_t now_ms)
{
	unsigned int tries = v->kneigh ? KNEIGH_TRIES : ARP_TRIES;
	uint64_t retry = v->kneigh ? KNEIGH_RETRY_MS : ARP_RETRY_MS;

	for (int i = 0; i < VERBS_NEIGH_MAX; i++) {
		struct verbs_neigh *n = &v->neigh[i];
		int ret;

		if (n->state == VN_VALID && now_ms - n->updated_ms >= VERBS_NEIGH_REACHABLE_MS) {
			/* Old: ask again, still using what we have; drop it
			 * when nobody answers. */
			if (n->probe_ms && now_ms - n->probe_ms < retry)
				continue;
			if (n->tries >= tries) {
				neigh_clear(v, s, n);
				continue;
			}
			n->tries++;
			n->probe_ms = now_ms;
			if (v->kneigh)
				kneigh_ask(v, s, n, now_ms);
			else
				arp_send(v, s, 1, NULL, n->ip);
			continue;
		}
		if (n->state != VN_PENDING || now_ms - n->updated_ms < retry)
			continue;
		if (n->tries >= tries) {
			neigh_clear(v, s, n);
			continue;
		}
		n->tries++;
		n->updated_ms = now_ms;
		if (!v->kneigh) {
			arp_send(v, s, 1, NULL, n->ip);
			continue;
		}
		/* Until it answers or the tries run out (then dropped above). */
		ret = kneigh_ask(v, s, n, now_ms);
		if (!ret)
			neigh_release_hold(v, s, n);
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

void sl_verbs_hold_mark(struct sl_stack *s, uint32_t head, pid_t pid)
{
	uint32_t steps = 0;

	for (uint32_t i = head; sl_buf_next(s, i, &steps); i = sl_buf(s, i)->next_idx) {
		if (pid)
			sl_verbs_buf_mark(s, i, pid);
		else
			sl_verbs_buf_unmark(s, i);
	}
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
		if (neigh_set(v, n, sa.qpn, sa.gid, NULL, now_ms) == 0) {
			n->state = VN_VALID;
			neigh_release_hold(v, s, n);
		}
	}
	if (!s->lib->ip_addr || tpa != s->lib->ip_addr)
		goto out;
	if (!n && spa) {
		n = neigh_new(v, s, spa);
		if (n && neigh_set(v, n, sa.qpn, sa.gid, NULL, now_ms) == 0)
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
	if (wc->status != IBV_WC_SUCCESS) {
		v->rx_wc_err++;
		v->last_wc_status = wc->status;
		/* Flushed or failed: either way the QP is in the error state. */
		v->need_reset = true;
		/* A flushed WR held no frame (IBA vol 1 10.3.1: the QP's
		 * outstanding WRs complete so in the error state): a reset
		 * flushes the whole receive queue, counted as nothing. */
		if (wc->status == IBV_WC_WR_FLUSH_ERR) {
			sl_buf_free(s, idx);
			return;
		}
		sl_count(s, SL_C_link_rx);
		goto bad;
	}
	sl_count(s, SL_C_link_rx);
	frame = sl_buf_base(s, idx) + RX_LEAD;
	if (wc->opcode != IBV_WC_RECV)
		goto bad;
	if (wc->byte_len > s->buf_size - RX_LEAD) {
		/* Into the spill area: more than a packet buffer holds. */
		sl_count(s, SL_C_verbs_rx_too_big);
		sl_buf_free(s, idx);
		return;
	}
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
	/* The device verified the IPv4 and TCP/UDP checksums: trusted only
	 * where the module says the device offers it (SLUICE_IB_UD_CSUM). */
	b->flags = v->rx_csum && (wc->wc_flags & IBV_WC_IP_CSUM_OK) ? SL_BUF_CSUM_OK : 0;
	if (type == ETHERTYPE_IP_) {
		sl_ip_input(s, idx);
		return;
	}
	if (type == ETHERTYPE_ARP_) {
		arp_input(v, s, idx);
		return;
	}
	if (type == ETHERTYPE_IPV6_) {
		sl_verbs_rx6(v, s, idx);
		return;
	}
bad:
	/* eth_rx_bad counts bad link frames of any framing. */
	sl_count(s, SL_C_eth_rx_bad);
	sl_buf_free(s, idx);
}

/*
 * Keep the receive queue full, a post_recv per VERBS_WC_BATCH WRs: only
 * once VERBS_RX_REFILL_MIN slots are free (or at most half the queue is
 * posted), so a trickle of frames does not cost a post each.
 */
static void rx_refill(struct verbs_link *v, struct sl_stack *s, bool force)
{
	struct ibv_recv_wr wr[VERBS_WC_BATCH], *bad;
	struct ibv_sge sge[VERBS_WC_BATCH][2];
	pid_t pid = sl_self_pid();

	if (!force && v->rx_nfree < VERBS_RX_REFILL_MIN && v->rx_nfree < v->rq_size / 2)
		return;
	while (v->rx_nfree) {
		unsigned int k = 0;

		while (k < VERBS_WC_BATCH && v->rx_nfree) {
			uint32_t idx = sl_buf_alloc(s), slot;

			if (idx == SLUICE_IDX_NONE)
				break;
			slot = v->rx_free[--v->rx_nfree];
			v->rx_slot[slot] = idx;
			sl_verbs_buf_mark(s, idx, pid);
			sge[k][0].addr = (uintptr_t)(sl_buf_base(s, idx) + RX_LEAD);
			sge[k][0].length = s->buf_size - RX_LEAD;
			sge[k][0].lkey = v->mr->lkey;
			wr[k].num_sge = 1;
			if (v->rx_spill) {
				sge[k][1].addr = (uintptr_t)(v->rx_spill +
							     (size_t)slot * v->rx_spill_len);
				sge[k][1].length = v->rx_spill_len;
				sge[k][1].lkey = v->rx_spill_mr->lkey;
				wr[k].num_sge = 2;
			}
			wr[k].wr_id = slot;
			wr[k].sg_list = sge[k];
			wr[k].next = NULL;
			if (k)
				wr[k - 1].next = &wr[k];
			k++;
		}
		if (!k)
			return;
		bad = NULL;
		v->rx_posts++;
		if (VB->post_recv(v->qp, wr, &bad)) {
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

/*
 * The QP fell into the error state (an error completion, or
 * IBV_EVENT_QP_FATAL): take every completion left (the flushed receives
 * give their buffers back), RESET (IBA 10.3.1: the work queues emptied;
 * rdma-core's providers clean the CQ of the QP's entries), free what was
 * still posted, and up again to RTS; then the receive queue is filled.
 * Flow rules and multicast attachments belong to the QP object and stay.
 * Sends the device held are gone: their ring slots are free.  0, or the
 * error of a modify (tried again at the next timer).
 */
static int verbs_qp_reset(struct verbs_link *v, struct sl_stack *s)
{
	struct ibv_wc wc[VERBS_WC_BATCH];
	struct ibv_qp_attr a;
	int k, ret, guard = 1024;

	while (guard-- > 0 && (k = VB->poll_cq(v->rcq, VERBS_WC_BATCH, wc)) > 0)
		for (int i = 0; i < k; i++)
			rx_one(v, s, &wc[i]);
	while (guard-- > 0 && VB->poll_cq(v->scq, VERBS_WC_BATCH, wc) > 0)
		;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	ret = VB->modify_qp(v->qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < v->rq_size; i++)
		if (v->rx_slot[i] != SLUICE_IDX_NONE) {
			sl_verbs_buf_unmark(s, v->rx_slot[i]);
			sl_buf_free(s, v->rx_slot[i]);
			v->rx_slot[i] = SLUICE_IDX_NONE;
			v->rx_free[v->rx_nfree++] = i;
		}
	v->tx_tail = v->tx_head - v->tx_npend;
	ret = sl_verbs_qp_up(v, NULL);
	if (ret)
		return ret;
	v->need_reset = false;
	sl_count(s, SL_C_verbs_qp_reset);
	rx_refill(v, s, true);
	return 0;
}

/*
 * Port down: is it back?  PORT_ACTIVE says so, but an event can be lost
 * to us (the kernel drops one it cannot allocate room for, GFP_ATOMIC:
 * 6.1 uverbs_main.c, ib_uverbs_async_handler()), and a link that waited
 * only for it would send nothing again.  Asked at the 100 ms timer while
 * down.
 */
static void verbs_port_check(struct verbs_link *v)
{
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	if (VB->query_port(v->ctx, v->port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
		v->port_down = false;
}

/*
 * The port's events (ibv_get_async_event(3)), without waiting: a QP
 * error resets the QP; a port going down is noted (sends are dropped
 * unposted until it is back); the port coming back,
 * a LID, SM or P_Key change and a client reregister make every
 * neighbour's path stale (a new DLID, SL or route): resolved neighbours
 * are dropped, with their AHs, and asked again at their next packet.
 * The broadcast group's SA join is the interface's (ipoib rejoins on
 * these events); the QP's attachment to it does not change.
 */
void sl_verbs_async(struct verbs_link *v, struct sl_stack *s)
{
	struct ibv_async_event e;
	int guard = 64;

	while (guard-- > 0 && VB->get_async_event(v->ctx, &e) == 0) {
		enum ibv_event_type t = e.event_type;

		VB->ack_async_event(&e);
		sl_count(s, SL_C_verbs_async_event);
		switch (t) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			v->need_reset = true;
			break;
		case IBV_EVENT_PORT_ERR:
			v->port_down = true;
			sl_count(s, SL_C_verbs_port_down);
			break;
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_LID_CHANGE:
		case IBV_EVENT_SM_CHANGE:
		case IBV_EVENT_PKEY_CHANGE:
		case IBV_EVENT_CLIENT_REREGISTER:
		case IBV_EVENT_GID_CHANGE:
			if (t == IBV_EVENT_PORT_ACTIVE)
				v->port_down = false;
			/* ipoib joins the broadcast group again: its Q_Key
			 * may change, and reads as unknown until it is done. */
			if (v->enhanced)
				v->ifinfo_stale = VERBS_IFINFO_TRIES;
			if (!v->ib)
				break;
			for (int i = 0; i < VERBS_NEIGH_MAX; i++)
				if (v->neigh[i].state == VN_VALID)
					neigh_clear(v, s, &v->neigh[i]);
			sl_count(s, SL_C_verbs_path_flush);
			break;
		default:
			break;
		}
	}
}

/*
 * Enhanced, after a port event: the interface's Q_Key again (IFINFO), once
 * the module has the group's record (SLUICE_IB_QKEY_SA: not while ipoib is
 * still rejoining, when ib_sa's record reads zero).  Sends carry it in
 * every WR.  A controlled one is kept out (see enh_setup()).
 */
static void verbs_ifinfo_refresh(struct verbs_link *v, struct sl_stack *s)
{
	struct sluice_ifinfo ii;

	memset(&ii, 0, sizeof(ii));
	ii.size = sizeof(ii);
	ii.ifindex = v->ifindex;
	v->ifinfo_stale--;
	if (VB->ifinfo(&ii) || !(ii.ib_flags & SLUICE_IB_QKEY_SA) || !ii.qkey ||
	    (ii.qkey & 0x80000000u))
		return;
	if (ii.qkey != v->qkey)
		sl_count(s, SL_C_verbs_qkey_change);
	v->qkey = ii.qkey;
	v->ifinfo_stale = 0;
}

/* Lock held, in a batch: timers, then up to budget receive completions. */
int sl_verbs_rx_cq(struct verbs_link *v, struct sl_stack *s, int budget)
{
	struct ibv_wc wc[VERBS_WC_BATCH];
	uint64_t now_ms;
	int n = 0;

	now_ms = sl_now(s) / 1000;
	if (now_ms - v->last_timer_ms >= 100) {
		v->last_timer_ms = now_ms;
		arp_timer(v, s, now_ms);
		sl_verbs6_timer(v, s, now_ms);
		if (v->enhanced)
			sl_verbs_flows_reconcile(v, s);
		sl_verbs_async(v, s);
		if (v->port_down)
			verbs_port_check(v);
		if (v->ifinfo_stale)
			verbs_ifinfo_refresh(v, s);
	}
	while (n < budget) {
		int want = budget - n < VERBS_WC_BATCH ? budget - n : VERBS_WC_BATCH;
		int k = VB->poll_cq(v->rcq, want, wc);

		if (k <= 0)
			break;
		for (int i = 0; i < k; i++)
			rx_one(v, s, &wc[i]);
		n += k;
		if (k < want)
			break;
	}
	if (v->need_reset) {
		/* Why the QP failed may be waiting as an event: a port gone
		 * down (its PORT_ERR comes before the sends that fail), after
		 * which nothing is posted until it is back.  Read at once, not
		 * at the next timer: each send in between would cost another
		 * reset and a refill of the receive queue. */
		sl_verbs_async(v, s);
		verbs_qp_reset(v, s);
	} else {
		rx_refill(v, s, false);
	}
	return n;
}

static int verbs_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	struct verbs_link *v = V(l);
	int n;

	if (verbs_forked(v))
		return v->under ? v->under->ops->rx(v->under, s, budget) : 0;
	if (v->ev_signalled) {
		uint64_t x;

		v->ev_signalled = false;
		if (sl_sys_read(v->evfd, &x, sizeof(x)) < 0)
			x = 0;
	}
	sl_batch_begin(s);
	n = sl_verbs_rx_cq(v, s, budget);
	/* Enhanced: what no flow rule steered to us came the kernel's way,
	 * through the module's filters, onto the rings. */
	if (v->under && n < budget)
		n += v->under->ops->rx(v->under, s, budget - n);
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

	if (verbs_forked(v))
		return v->under && v->under->ops->fd ? v->under->ops->fd(v->under) : -1;
	while (guard-- > 0 && VB->get_cq_event(v->chan, &cq, &cq_ctx) == 0)
		VB->ack_cq_events(cq, 1);
	if (VB->req_notify_cq(v->rcq, 0))
		return -1;
	if (sl_trylock(v->stack)) {
		int n;

		/* Before sleeping: the async fd is in the set, so an event
		 * left unread would wake us at once, again and again. */
		sl_verbs_async(v, v->stack);
		n = verbs_rx(l, v->stack, 64);

		sl_unlock(v->stack);
		if (n > 0 && !v->ev_signalled) {
			uint64_t one = 1;

			if (sl_sys_write(v->evfd, &one, sizeof(one)) == sizeof(one))
				v->ev_signalled = true;
		}
	}
	return v->epfd;
}

/* ---- the link's ops -------------------------------------------------- */

static void verbs_close(struct sl_link *l)
{
	struct verbs_link *v = V(l);
	struct sl_stack *s = v->stack;
	struct sl_link *under = v->under;

	/* First: a fork in another thread finishes with it before we go on. */
	sl_verbs_unregister(v);
	s->link = NULL;
	if (v->owner == sl_self_pid()) {
		sl_verbs_destroy(v);
		sl_verbs_return_bufs(v);
	}
	sl_verbs_free(v);
	/* Enhanced: the kring link goes last, with the module filters. */
	if (under) {
		s->link = under;
		under->ops->close(under);
	}
}

const struct sl_link_ops sl_verbs_ops = {
	.name = "verbs",
	.tx = verbs_tx,
	.tx6 = sl_verbs_tx6,
	.rx = verbs_rx,
	.fd = verbs_fd,
	.flush = sl_verbs_flush,
	.close = verbs_close,
	.conn_own = sl_verbs_conn_own,
};

/* Lock held: take back dead processes' buffers, fill the receive queue,
 * lower the stack's MTU to the link's; 0 or -ENOBUFS. */
int sl_verbs_start(struct verbs_link *v)
{
	struct sl_stack *s = v->stack;

	/*
	 * The stack's MTU follows the link's (TCP's MSS, UDP's largest
	 * datagram); it only ever goes down, so what attached processes
	 * validated (mtu + headroom fits a buffer) stays true.
	 */
	if (s->r->mtu > v->link.mtu)
		s->r->mtu = v->link.mtu;
	sl_verbs_reclaim(s);
	rx_refill(v, s, true);
	return v->rx_nfree == v->rq_size ? -ENOBUFS : 0;
}

static struct verbs_link *verbs_of(struct sl_stack *s)
{
	return s->link && s->link->ops == &sl_verbs_ops ? V(s->link) : NULL;
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
	ret = n ? neigh_set(v, n, a.qpn, a.gid, NULL, sl_now(s) / 1000) : -ENOSPC;
	if (!ret) {
		n->state = VN_STATIC;
		neigh_release_hold(v, s, n);
	} else if (n && !n->ah) {
		neigh_clear(v, s, n);
	}
	sl_unlock(s);
	return ret;
}
