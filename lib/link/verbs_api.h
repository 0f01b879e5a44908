/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every rdma-core call the verbs links make (link/verbs.c, plain UD;
 * link/verbs_enh.c, enhanced IPoIB), through one table.  Production uses
 * sl_verbs_real (the library's calls, inline wrappers included); the host
 * unit tests swap in a test double (tests/unit/verbs_double.c) that
 * records and checks every attribute the links pass and injects errors,
 * so the code under test is the production code, only the device is not.
 * The module's ioctls the links make (IFINFO, NEIGH_RESOLVE) and the
 * kring fallback go through the table too, for the same reason.
 */
#ifndef SLUICE_LINK_VERBS_API_H
#define SLUICE_LINK_VERBS_API_H

#include <infiniband/verbs.h>

struct sluice_stack;
struct sluice_ifinfo;
struct sluice_neigh_resolve;

struct sl_verbs_api {
	struct ibv_device **(*get_device_list)(int *n);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device_ex)(struct ibv_context *ctx, struct ibv_device_attr_ex *a);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a);
	int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *e);
	int (*query_pkey)(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
				    struct ibv_comp_channel *ch, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *a);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *a);
	int (*destroy_ah)(struct ibv_ah *ah);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp, struct ibv_flow_attr *a);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
	int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *e);
	void (*ack_async_event)(struct ibv_async_event *e);
	/* The module: SLUICE_IOC_IFINFO on /dev/sluice for @ii->ifindex, and
	 * SLUICE_IOC_NEIGH_RESOLVE on the stack fd; 0 or -errno. */
	int (*ifinfo)(struct sluice_ifinfo *ii);
	int (*neigh_resolve)(int stack_fd, struct sluice_neigh_resolve *nr);
	/* The fallback link (sluice_link_kring()). */
	int (*link_kring)(struct sluice_stack *st);
	/* Where the device's command files are: a forked child unmaps what
	 * it inherited of them (link/verbs_setup.c, verbs_atfork_child()). */
	const char *uverbs_path;
};

extern const struct sl_verbs_api sl_verbs_real;
/* What the links call: &sl_verbs_real unless a test swapped it. */
extern const struct sl_verbs_api *sl_verbs;

/* link/verbs_trace.c: with SLUICE_VERBS_TRACE=FILE in the environment,
 * swap sl_verbs for a table that appends a line a call to FILE and calls
 * the one it replaced (link/README.md "The verbs trace").  The verbs
 * links' constructors call it; without the variable nothing changes. */
void sl_verbs_trace_check(void);

#endif /* SLUICE_LINK_VERBS_API_H */
