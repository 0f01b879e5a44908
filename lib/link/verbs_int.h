/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the verbs links: what link/verbs.c (plain UD, the shared send,
 * receive and neighbour code) and link/verbs_enh.c (enhanced IPoIB) share.
 */
#ifndef SLUICE_LINK_VERBS_INT_H
#define SLUICE_LINK_VERBS_INT_H

#include <sluice/sluice.h>

#include "link/ipoib.h"
#include "link/verbs.h"
#include "link/verbs_api.h"

#define VB			sl_verbs
#define VERBS_RQ_DEFAULT	512
#define VERBS_SQ_DEFAULT	64
#define VERBS_WC_BATCH		32
#define VERBS_TX_BATCH		32	/* WRs a post_send carries at most */
#define VERBS_NEIGH_MAX		64
#define VERBS_FLOWS_MAX		1024	/* flow rules a link keeps */
/* Receive SGEs start here in a buffer: GRH + IPoIB header end at SL_HEADROOM. */
#define VERBS_RX_LEAD		(SL_HEADROOM - SL_IPOIB_GRH_LEN - SL_IPOIB_HLEN)

enum vn_state { VN_FREE, VN_PENDING, VN_VALID, VN_STATIC };

struct verbs_neigh {
	uint32_t ip;			/* network order */
	enum vn_state state;
	uint32_t qpn;
	uint8_t gid[16];
	struct ibv_ah *ah;		/* VALID and STATIC: made once, reused */
	uint32_t hold_idx;		/* packets waiting for resolution (sl_hold_add()) */
	unsigned int tries;
	uint64_t updated_ms;		/* resolved (VALID) or last asked (PENDING) */
	uint64_t probe_ms;		/* VALID past its time: last re-ask */
};

/* An IPv6 neighbour of the plain UD link (link/verbs6.c). */
#define VERBS_NEIGH6_MAX	32
#define VERBS_MC6_AH		4	/* groups' AHs kept */
#define VERBS_MC6_JOIN		3	/* all-nodes, two solicited-node groups */
struct verbs_neigh6 {
	uint8_t ip[16];
	enum vn_state state;
	uint32_t qpn;
	uint8_t gid[16];
	struct ibv_ah *ah;
	uint32_t hold_idx;
	unsigned int tries;
	uint64_t updated_ms;
	uint64_t probe_ms;
};

/* A 5-tuple flow rule for one connection this process runs (enhanced
 * mode; link/README.md "Stacks shared by several processes"). */
struct verbs_flow {
	uint32_t sock;			/* the socket's slot */
	uint32_t laddr, raddr;		/* network order */
	uint16_t lport, rport;		/* network order */
	uint8_t protocol;
	struct ibv_flow *flow;		/* NULL: slot free */
};

struct verbs_link {
	struct sl_link link;
	struct sl_stack *stack;
	pid_t owner;			/* the process that made it (see verbs_forked()) */
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
	bool ib;			/* InfiniBand link layer: AHs need path records */
	bool kneigh;			/* neighbours from the module (NEIGH_RESOLVE) */
	bool enhanced;			/* source-QPN QP of an IPoIB interface */
	bool need_reset;		/* the QP is in the error state: reset it */
	bool port_down;			/* IBV_EVENT_PORT_ERR, no PORT_ACTIVE since */
	unsigned int ifinfo_stale;	/* enhanced: timer ticks left to re-read the Q_Key */
	bool tx_csum;			/* IBV_SEND_IP_CSUM on sends (SLUICE_IB_UD_CSUM) */
	bool rx_csum;			/* trust IBV_WC_IP_CSUM_OK (SLUICE_IB_UD_CSUM) */
	int mcast_err;
	int mc_sock;			/* RoCE: holds the IPv6 group join */
	int mc_ifindex;			/* RoCE: the GID's netdev */
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
	/*
	 * Sends: each packet is copied into a slot of a ring of sq_size slots
	 * this link owns (tx_mr), so the stack's buffer is free again when tx
	 * returns, as core.h wants.  tx_head counts slots taken, tx_tail slots
	 * the device is done with: a slot is reused only after a completion at
	 * or past it was polled (a UD send queue completes in order).  WRs
	 * wait in tx_wr until flush (sl_unlock()) posts them with one
	 * post_send, the last one signalled.
	 */
	uint8_t *tx_ring;
	struct ibv_mr *tx_mr;
	uint32_t tx_slot_size;
	uint64_t tx_head, tx_tail;
	unsigned int tx_npend;
	/*
	 * Receives: a UD receive needs IB MTU + the 40-byte GRH area
	 * (ibv_post_recv(3)); what a pool buffer cannot hold after RX_LEAD
	 * goes to a second SGE in this link's spill area (rx_spill_len bytes
	 * a slot), so a message the stack cannot take is dropped and counted
	 * instead of failing its WR with a length error, which puts the QP
	 * in the error state.
	 */
	uint8_t *rx_spill;
	struct ibv_mr *rx_spill_mr;
	uint32_t rx_spill_len;
	struct ibv_send_wr tx_wr[VERBS_TX_BATCH];
	struct ibv_sge tx_sge[VERBS_TX_BATCH];
	uint64_t last_timer_ms;
	/* What went wrong, for sluice_verbs_info(). */
	uint64_t tx_post_err, tx_wc_err, tx_timeout, rx_wc_err, rx_post_err;
	uint64_t tx_posts, tx_wrs;	/* post_send calls, WRs they carried */
	uint64_t rx_posts;		/* post_recv calls */
	uint64_t flow_err;
	int flow_last_err;
	int last_wc_status;
	int tx_last_err;
	unsigned int tx_last_err_len;
	struct verbs_neigh neigh[VERBS_NEIGH_MAX];
	/* IPv6 (link/verbs6.c). */
	struct verbs_neigh6 neigh6[VERBS_NEIGH6_MAX];
	struct { uint8_t mgid[16]; struct ibv_ah *ah; } mc6_ah[VERBS_MC6_AH];
	unsigned int mc6_ah_next;
	union ibv_gid mc6_joined[VERBS_MC6_JOIN];	/* MGIDs attached */
	unsigned int mc6_n;
	uint8_t mc6_for[16];		/* the stack's address they were for */
	/* Enhanced mode. */
	struct sl_link *under;		/* the kring link on the same interface */
	struct verbs_flow *flows;
	uint32_t ifindex;
};

struct sluice_ifinfo;

/* link/verbs.c and link/verbs_setup.c: the shared parts. */
struct ibv_ah *sl_verbs_ah_make(struct verbs_link *v, const uint8_t gid[16],
				 const struct sluice_neigh_resolve *nr);
extern const struct sl_link_ops sl_verbs_ops;
struct verbs_link *sl_verbs_alloc(struct sl_stack *s, uint32_t rq_size, uint32_t sq_size);
void sl_verbs_free(struct verbs_link *v);
struct ibv_context *sl_verbs_open_device(const char *name);
/* PD, MR over the pool, channel, CQs, tx ring: 0 or -errno. */
int sl_verbs_common_setup(struct verbs_link *v);
int sl_verbs_wait_set(struct verbs_link *v);
/* Lock held: reclaim, fill the receive queue; 0 or -ENOBUFS. */
int sl_verbs_start(struct verbs_link *v);
void sl_verbs_destroy(struct verbs_link *v);
void sl_verbs_return_bufs(struct verbs_link *v);
int sl_verbs_rx_cq(struct verbs_link *v, struct sl_stack *s, int budget);
void sl_verbs_flush(struct sl_link *l, struct sl_stack *s);
/* Lock held: take the device's async events (without waiting). */
void sl_verbs_async(struct verbs_link *v, struct sl_stack *s);
/* RESET -> INIT -> RTR -> RTS with what the link was made with; 0 or the
 * failing modify's error. */
int sl_verbs_qp_up(struct verbs_link *v, enum ibv_qp_state *failed);

/* Queue buffer idx (borrowed) as ethertype to qpn through ah. */
int sl_verbs_send(struct verbs_link *v, struct sl_stack *s, uint32_t idx, uint16_t ethertype,
		  struct ibv_ah *ah, uint32_t qpn);

/* link/verbs6.c: IPv6 (RFC 4391). */
int sl_verbs_tx6(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh);
/* Lock held: an IPv6 packet received (the IPoIB header off). */
void sl_verbs_rx6(struct verbs_link *v, struct sl_stack *s, uint32_t idx);
void sl_verbs6_sync(struct verbs_link *v, struct sl_stack *s);
void sl_verbs6_timer(struct verbs_link *v, struct sl_stack *s, uint64_t now_ms);
void sl_verbs6_destroy(struct verbs_link *v);
void sl_verbs6_return_bufs(struct verbs_link *v, struct sl_stack *s);

/* link/verbs_enh.c */
/* Lock held, from the receive timer: drop rules whose connection is gone
 * or is another one now (closed or freed by whichever process). */
void sl_verbs_flows_reconcile(struct verbs_link *v, struct sl_stack *s);
/* Lock held: this process runs connection so (connect, accept): a 5-tuple
 * rule steers it to this process's QP. */
void sl_verbs_conn_own(struct sl_link *l, struct sl_stack *s, const struct sl_sock *so);
/* Lock held: drop every rule of v (its connections are about to be shared
 * by a fork). */
void sl_verbs_flows_drop(struct verbs_link *v);

/* link/verbs_setup.c: the verbs links of this process, for fork. */
void sl_verbs_register(struct verbs_link *v);
void sl_verbs_unregister(struct verbs_link *v);
/* The attributes of one flow rule for filter f (exposed for the tests). */
struct sl_verbs_flow_rule {
	struct ibv_flow_attr attr;
	struct ibv_flow_spec_ipv4 ipv4;
	struct ibv_flow_spec_tcp_udp l4;
};
int sl_verbs_flow_rule(struct sl_verbs_flow_rule *r, const struct sluice_filter *f, uint8_t port);

#define VERBS_FLOW_PRIO_5TUPLE	0	/* connected: matched first */
#define VERBS_FLOW_PRIO_3TUPLE	1	/* listening / bound */

#endif /* SLUICE_LINK_VERBS_INT_H */
