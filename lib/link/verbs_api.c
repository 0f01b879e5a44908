// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs links' calls into rdma-core and the module (link/verbs_api.h):
 * the real ones.  Several are inline functions of <infiniband/verbs.h>
 * (post_send, poll_cq, create_qp_ex, create_flow, ...), so they are
 * wrapped here to have an address.
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "os/os.h"
#include "link/verbs_api.h"
#include "link/link.h"

static int r_query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *a)
{
	return ibv_query_device_ex(ctx, NULL, a);
}

static int r_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	return ibv_query_port(ctx, port, a);
}

static int r_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			  struct ibv_gid_entry *e)
{
	return ibv_query_gid_ex(ctx, port, index, e, 0);
}

static struct ibv_mr *r_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static struct ibv_qp *r_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	return ibv_create_qp_ex(ctx, a);
}

static struct ibv_flow *r_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	return ibv_create_flow(qp, a);
}

static int r_destroy_flow(struct ibv_flow *flow)
{
	return ibv_destroy_flow(flow);
}

static int r_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}

static int r_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

static int r_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

static int r_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static int r_ifinfo(struct sluice_ifinfo *ii)
{
	int fd = sluice_dev_open(NULL), ret = 0;

	if (fd < 0)
		return fd;
	if (sl_sys_ioctl(fd, SLUICE_IOC_IFINFO, ii))
		ret = errno == ENOTTY ? -EOPNOTSUPP : -errno;
	sl_sys_close(fd);
	return ret;
}

static int r_neigh_resolve(int stack_fd, struct sluice_neigh_resolve *nr)
{
	if (sl_sys_ioctl(stack_fd, SLUICE_IOC_NEIGH_RESOLVE, nr))
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	return 0;
}

const struct sl_verbs_api sl_verbs_real = {
	.get_device_list = ibv_get_device_list,
	.free_device_list = ibv_free_device_list,
	.get_device_name = ibv_get_device_name,
	.open_device = ibv_open_device,
	.close_device = ibv_close_device,
	.query_device_ex = r_query_device_ex,
	.query_port = r_query_port,
	.query_gid = ibv_query_gid,
	.query_gid_ex = r_query_gid_ex,
	.query_pkey = ibv_query_pkey,
	.alloc_pd = ibv_alloc_pd,
	.dealloc_pd = ibv_dealloc_pd,
	.reg_mr = r_reg_mr,
	.dereg_mr = ibv_dereg_mr,
	.create_comp_channel = ibv_create_comp_channel,
	.destroy_comp_channel = ibv_destroy_comp_channel,
	.create_cq = ibv_create_cq,
	.destroy_cq = ibv_destroy_cq,
	.create_qp = ibv_create_qp,
	.create_qp_ex = r_create_qp_ex,
	.modify_qp = ibv_modify_qp,
	.destroy_qp = ibv_destroy_qp,
	.attach_mcast = ibv_attach_mcast,
	.detach_mcast = ibv_detach_mcast,
	.create_ah = ibv_create_ah,
	.destroy_ah = ibv_destroy_ah,
	.create_flow = r_create_flow,
	.destroy_flow = r_destroy_flow,
	.post_send = r_post_send,
	.post_recv = r_post_recv,
	.poll_cq = r_poll_cq,
	.req_notify_cq = r_req_notify_cq,
	.get_cq_event = ibv_get_cq_event,
	.ack_cq_events = ibv_ack_cq_events,
	.get_async_event = ibv_get_async_event,
	.ack_async_event = ibv_ack_async_event,
	.ifinfo = r_ifinfo,
	.neigh_resolve = r_neigh_resolve,
	.link_kring = sluice_link_kring,
	/* rdma-core opens /dev/infiniband/uverbsN (verbs_open_device()). */
	.uverbs_path = "/dev/infiniband/uverbs",
};

const struct sl_verbs_api *sl_verbs = &sl_verbs_real;
