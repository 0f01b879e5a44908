// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs links' setup and teardown (link/verbs.c has the data path and
 * neighbours, link/verbs_enh.c the enhanced IPoIB mode): the device, the
 * port's facts, PD, MRs, channel, CQs, the plain UD QP, the broadcast
 * group, the fd to sleep on, and everything's release.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "os/os.h"
#include "link/verbs_int.h"

/*
 * The plain UD QP: created by this process, RESET -> INIT (P_Key index,
 * port, Q_Key) -> RTR -> RTS (SQ PSN).  The enhanced one (source QPN,
 * state-only transitions) is enh_qp_create() in link/verbs_enh.c;
 * everything after the QP exists is shared.
 */
static int verbs_qp_create_plain(struct verbs_link *v)
{
	struct ibv_qp_init_attr ia;
	int ret;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = v->scq;
	ia.recv_cq = v->rcq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = v->sq_size;
	ia.cap.max_recv_wr = v->rq_size;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = v->rx_spill ? 2 : 1;
	v->qp = VB->create_qp(v->pd, &ia);
	if (!v->qp)
		return errno ? -errno : -ENOMEM;

	ret = sl_verbs_qp_up(v, NULL);
	if (ret)
		goto err_destroy_qp;
	v->qpn = v->qp->qp_num & SL_IPOIB_QPN_MASK;
	return 0;

err_destroy_qp:
	VB->destroy_qp(v->qp);
	v->qp = NULL;
	return -ret;
}

/*
 * From RESET to RTS.  Plain UD (ibv_modify_qp(3), UD): INIT with P_Key
 * index, port and Q_Key, RTR, RTS with the SQ PSN.  The enhanced underlay
 * QP: the state alone each time (mlx5_ib_modify_qp() refuses anything
 * else on a source-QPN QP; P_Key, port and Q_Key are the interface's).
 */
int sl_verbs_qp_up(struct verbs_link *v, enum ibv_qp_state *failed)
{
	static const enum ibv_qp_state states[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	struct ibv_qp_attr a;
	int ret;

	for (unsigned int i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		int mask = IBV_QP_STATE;

		memset(&a, 0, sizeof(a));
		a.qp_state = states[i];
		if (!v->enhanced && states[i] == IBV_QPS_INIT) {
			a.pkey_index = v->pkey_index;
			a.port_num = v->port;
			a.qkey = v->qkey;
			mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else if (!v->enhanced && states[i] == IBV_QPS_RTS) {
			a.sq_psn = 0;
			mask |= IBV_QP_SQ_PSN;
		}
		ret = VB->modify_qp(v->qp, &a, mask);
		if (ret) {
			if (failed)
				*failed = states[i];
			return ret;
		}
	}
	return 0;
}

struct ibv_context *sl_verbs_open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = VB->get_device_list(&n);
	if (!list) {
		if (!errno)
			errno = ENODEV;
		return NULL;
	}
	errno = ENODEV;
	for (int i = 0; i < n; i++) {
		if (name && strcmp(VB->get_device_name(list[i]), name))
			continue;
		ctx = VB->open_device(list[i]);
		break;
	}
	VB->free_device_list(list);
	return ctx;
}

static int verbs_roce_ip_join(struct verbs_link *v)
{
	struct ibv_gid_entry ge;
	struct ipv6_mreq mr;
	int ret;

	ret = VB->query_gid_ex(v->ctx, v->port, v->gid_index, &ge);
	if (ret)
		return ret > 0 ? -ret : -EINVAL;
	if (!ge.ndev_ifindex)
		return -ENODEV;
	v->mc_sock = sl_sys_fd_high(sl_sys_socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (v->mc_sock < 0)
		return -errno;
	memcpy(&mr.ipv6mr_multiaddr, v->mgid, 16);
	mr.ipv6mr_interface = ge.ndev_ifindex;
	v->mc_ifindex = (int)ge.ndev_ifindex;
	if (sl_sys_setsockopt(v->mc_sock, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr))) {
		ret = -errno;
		sl_sys_close(v->mc_sock);
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
	ret = VB->attach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
	if (ret) {
		v->mcast_err = -ret;
		return;
	}
	if (v->roce) {
		ret = verbs_roce_ip_join(v);
		if (ret) {
			v->mcast_err = ret;
			VB->detach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
			return;
		}
	}
	v->mcast_ah = sl_verbs_ah_make(v, v->mgid, NULL);
	if (!v->mcast_ah) {
		v->mcast_err = errno ? -errno : -ENOMEM;
		VB->detach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
		return;
	}
	v->mcast = true;
}


int sl_verbs_wait_set(struct verbs_link *v)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fl = sl_sys_fcntl(v->chan->fd, F_GETFL, 0);

	if (fl < 0 || sl_sys_fcntl(v->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	v->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (v->evfd < 0)
		return -errno;
	v->epfd = sl_sys_epoll_create1(EPOLL_CLOEXEC);
	if (v->epfd < 0)
		goto err_close_evfd;
	ev.data.fd = v->chan->fd;
	if (sl_sys_epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->chan->fd, &ev))
		goto err_close_epfd;
	ev.data.fd = v->evfd;
	if (sl_sys_epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->evfd, &ev))
		goto err_close_epfd;
	/* Async events (port, LID, SM, QP errors) wake a sleeper too;
	 * ibv_get_async_event(3): non-blocking once the fd is. */
	fl = sl_sys_fcntl(v->ctx->async_fd, F_GETFL, 0);
	if (fl < 0 || sl_sys_fcntl(v->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		goto err_close_epfd;
	ev.data.fd = v->ctx->async_fd;
	if (sl_sys_epoll_ctl(v->epfd, EPOLL_CTL_ADD, v->ctx->async_fd, &ev))
		goto err_close_epfd;
	return 0;

err_close_epfd:
	fl = -errno;
	sl_sys_close(v->epfd);
	v->epfd = -1;
	sl_sys_close(v->evfd);
	v->evfd = -1;
	return fl;
err_close_evfd:
	fl = -errno;
	sl_sys_close(v->evfd);
	v->evfd = -1;
	return fl;
}

/* Everything but the pool buffers (sl_verbs_return_bufs() gives those back). */
void sl_verbs_destroy(struct verbs_link *v)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	if (v->flows)
		for (uint32_t i = 0; i < VERBS_FLOWS_MAX; i++)
			if (v->flows[i].flow) {
				VB->destroy_flow(v->flows[i].flow);
				v->flows[i].flow = NULL;
			}
	sl_verbs6_destroy(v);
	if (v->mcast)
		VB->detach_mcast(v->qp, (const union ibv_gid *)v->mgid, 0);
	v->mcast = false;
	if (v->mc_sock >= 0)
		sl_sys_close(v->mc_sock);
	v->mc_sock = -1;
	if (v->qp)
		VB->destroy_qp(v->qp);
	v->qp = NULL;
	for (int i = 0; i < VERBS_NEIGH_MAX; i++)
		if (v->neigh[i].ah) {
			VB->destroy_ah(v->neigh[i].ah);
			v->neigh[i].ah = NULL;
		}
	if (v->mcast_ah)
		VB->destroy_ah(v->mcast_ah);
	v->mcast_ah = NULL;
	if (v->epfd >= 0)
		sl_sys_close(v->epfd);
	if (v->evfd >= 0)
		sl_sys_close(v->evfd);
	v->epfd = v->evfd = -1;
	/* Every event got must be acked before its CQ can go. */
	while (v->chan && VB->get_cq_event(v->chan, &cq, &cq_ctx) == 0)
		VB->ack_cq_events(cq, 1);
	if (v->scq)
		VB->destroy_cq(v->scq);
	if (v->rcq)
		VB->destroy_cq(v->rcq);
	if (v->chan)
		VB->destroy_comp_channel(v->chan);
	if (v->tx_mr)
		VB->dereg_mr(v->tx_mr);
	if (v->rx_spill_mr)
		VB->dereg_mr(v->rx_spill_mr);
	v->rx_spill_mr = NULL;
	if (v->mr)
		VB->dereg_mr(v->mr);
	if (v->pd)
		VB->dealloc_pd(v->pd);
	if (v->ctx)
		VB->close_device(v->ctx);
	v->scq = v->rcq = NULL;
	v->chan = NULL;
	v->tx_mr = v->mr = NULL;
	v->pd = NULL;
	v->ctx = NULL;
}

/* Give back the receive buffers and held packets (the QP is gone, so no
 * buffer is the device's any more). */
void sl_verbs_return_bufs(struct verbs_link *v)
{
	struct sl_stack *s = v->stack;
	bool locked = sl_lock(s) == 0;

	for (uint32_t i = 0; locked && i < v->rq_size; i++)
		if (v->rx_slot[i] != SLUICE_IDX_NONE) {
			sl_verbs_buf_unmark(s, v->rx_slot[i]);
			sl_buf_free(s, v->rx_slot[i]);
			v->rx_slot[i] = SLUICE_IDX_NONE;
			v->rx_free[v->rx_nfree++] = i;
		}
	for (int i = 0; locked && i < VERBS_NEIGH_MAX; i++)
		if (v->neigh[i].hold_idx != SLUICE_IDX_NONE) {
			uint32_t h = sl_hold_take(s, &v->neigh[i].hold_idx), steps = 0;

			sl_verbs_hold_mark(s, h, 0);
			while (sl_buf_next(s, h, &steps)) {
				uint32_t next = sl_hold_next(s, h);

				sl_buf_free(s, h);
				h = next;
			}
		}
	if (locked)
		sl_verbs6_return_bufs(v, s);
	if (locked)
		sl_unlock(s);
}

/*
 * fork() and the verbs links (issue 14 items 1 and 6).
 *
 * The kernel destroys a process's QP, rules and the rest when the last
 * reference to its uverbs command file goes (uverbs_main.c,
 * ib_uverbs_close(): uverbs_destroy_ufile_hw()).  A forked child holds
 * two kinds of reference: the descriptor (fork keeps it, close-on-exec
 * or not) and every mapping of the file, doorbells and UARs
 * (uverbs_main.c: rdma_umap_close() says a VMA holds a reference on the
 * file that made it, and rdma_umap_open() keeps the copy fork makes).
 * The parent could mark the mappings MADV_DONTFORK, but rdma-core maps
 * more as it makes objects, after any mark.  ibv_fork_init(3) only
 * protects registered memory; it makes no resource the child's.  So a
 * dead parent's QP and rules would live as long as any child did,
 * steering the parent's flows to a QP nobody polls.  The child cannot use
 * any of it anyway (verbs_forked()), so at once after the fork it lets
 * go of all of it: it closes the inherited descriptors of its verbs
 * links and unmaps every mapping of the device's command files.  The
 * parent's death then releases its objects at once, as without a child.
 *
 * Before the fork the parent drops its connections' rules: the child
 * shares those sockets from then on, and a rule would take their packets
 * to the parent alone (the rings carry them to both).
 */
#define VERBS_PROC_LINKS	16

static pthread_mutex_t links_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t links_once = PTHREAD_ONCE_INIT;
static struct verbs_link *links[VERBS_PROC_LINKS];

static void verbs_atfork_prepare(void)
{
	pthread_mutex_lock(&links_mu);
	for (int i = 0; i < VERBS_PROC_LINKS; i++) {
		struct verbs_link *v = links[i];

		if (!v || !v->enhanced || v->owner != sl_self_pid() || sl_lock(v->stack))
			continue;
		sl_verbs_flows_drop(v);
		sl_unlock(v->stack);
	}
}

static void verbs_atfork_parent(void)
{
	pthread_mutex_unlock(&links_mu);
}

#define VERBS_UNMAP_MAX	64

/* Unmap what this process maps of files whose path starts with prefix
 * (the ranges gathered first: unmapping changes the list). */
static void unmap_files(const char *prefix)
{
	struct { unsigned long lo, hi; } r[VERBS_UNMAP_MAX];
	char buf[4096], line[512];
	size_t plen = strlen(prefix), ll = 0;
	int fd, nr = 0;
	ssize_t n;

	fd = (int)sl_syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while ((n = sl_sys_read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			const char *path;

			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			path = strchr(line, '/');
			if (path && !strncmp(path, prefix, plen) && nr < VERBS_UNMAP_MAX &&
			    sscanf(line, "%lx-%lx", &r[nr].lo, &r[nr].hi) == 2 && r[nr].hi > r[nr].lo)
				nr++;
		}
	}
	sl_sys_close(fd);
	for (int i = 0; i < nr; i++)
		munmap((void *)r[i].lo, r[i].hi - r[i].lo);
}

static void verbs_atfork_child(void)
{
	bool any = false;

	for (int i = 0; i < VERBS_PROC_LINKS; i++) {
		struct verbs_link *v = links[i];

		if (!v)
			continue;
		/* The parent's: never used here again (verbs_forked()). */
		if (v->ctx) {
			sl_sys_close(v->ctx->cmd_fd);
			sl_sys_close(v->ctx->async_fd);
			any = true;
		}
		if (v->chan)
			sl_sys_close(v->chan->fd);
		links[i] = NULL;
	}
	if (any && VB->uverbs_path)
		unmap_files(VB->uverbs_path);
	pthread_mutex_unlock(&links_mu);
}

static void links_init(void)
{
	pthread_atfork(verbs_atfork_prepare, verbs_atfork_parent, verbs_atfork_child);
}

void sl_verbs_register(struct verbs_link *v)
{
	pthread_once(&links_once, links_init);
	pthread_mutex_lock(&links_mu);
	for (int i = 0; i < VERBS_PROC_LINKS; i++)
		if (!links[i]) {
			links[i] = v;
			break;
		}
	pthread_mutex_unlock(&links_mu);
}

void sl_verbs_unregister(struct verbs_link *v)
{
	pthread_mutex_lock(&links_mu);
	for (int i = 0; i < VERBS_PROC_LINKS; i++)
		if (links[i] == v)
			links[i] = NULL;
	pthread_mutex_unlock(&links_mu);
}

void sl_verbs_free(struct verbs_link *v)
{
	sl_verbs_unregister(v);
	free(v->rx_slot);
	free(v->rx_free);
	free(v->tx_ring);
	free(v->rx_spill);
	free(v->flows);
	free(v);
}

struct verbs_link *sl_verbs_alloc(struct sl_stack *s, uint32_t rq_size, uint32_t sq_size)
{
	struct verbs_link *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->link.ops = &sl_verbs_ops;
	v->stack = s;
	v->owner = sl_self_pid();
	v->port = 1;
	v->qkey = SL_IPOIB_QKEY_DEFAULT;
	v->rq_size = rq_size ? rq_size : VERBS_RQ_DEFAULT;
	if (!rq_size && v->rq_size > s->n_bufs / 4)
		v->rq_size = s->n_bufs / 4;
	v->sq_size = sq_size ? sq_size : VERBS_SQ_DEFAULT;
	v->epfd = -1;
	v->evfd = -1;
	v->mc_sock = -1;
	for (int i = 0; i < VERBS_NEIGH_MAX; i++)
		v->neigh[i].hold_idx = SLUICE_IDX_NONE;
	for (int i = 0; i < VERBS_NEIGH6_MAX; i++)
		v->neigh6[i].hold_idx = SLUICE_IDX_NONE;
	/* The receive queue holds pool buffers: leave most of the pool. */
	if (v->rq_size > 4096 || v->rq_size > s->n_bufs / 4 || !v->rq_size ||
	    v->sq_size > 4096 || v->sq_size < VERBS_TX_BATCH) {
		free(v);
		errno = EINVAL;
		return NULL;
	}
	v->rx_slot = calloc(v->rq_size, sizeof(*v->rx_slot));
	v->rx_free = calloc(v->rq_size, sizeof(*v->rx_free));
	if (!v->rx_slot || !v->rx_free) {
		sl_verbs_free(v);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < v->rq_size; i++) {
		v->rx_slot[i] = SLUICE_IDX_NONE;
		v->rx_free[v->rx_nfree++] = v->rq_size - 1 - i;
	}
	sl_verbs_register(v);
	return v;
}

/* PD, MR over the pool's data, the send ring and its MR, the completion
 * channel and both CQs (v->ctx open, v->ud_mtu set); 0 or -errno. */
int sl_verbs_common_setup(struct verbs_link *v)
{
	struct sl_stack *s = v->stack;
	uint64_t data_len = (uint64_t)s->n_bufs * s->buf_size;
	size_t ring;

	v->pd = VB->alloc_pd(v->ctx);
	if (!v->pd)
		goto err;
	/* The device keeps the pages it registers: no trim gives them back
	 * from now on (core/buf.c; set before, so a trim that looks after
	 * the registration sees it). */
	SL_WRITE_ONCE(s->lib->mem_pinned, 1);
	v->mr = VB->reg_mr(v->pd, s->bufdata, data_len, IBV_ACCESS_LOCAL_WRITE);
	if (!v->mr)
		goto err;
	v->tx_slot_size = (SL_IPOIB_HLEN + v->ud_mtu + 63) & ~63u;
	ring = (size_t)v->tx_slot_size * v->sq_size;
	if (posix_memalign((void **)&v->tx_ring, 4096, ring)) {
		v->tx_ring = NULL;
		return -ENOMEM;
	}
	memset(v->tx_ring, 0, ring);
	v->tx_mr = VB->reg_mr(v->pd, v->tx_ring, ring, IBV_ACCESS_LOCAL_WRITE);
	if (!v->tx_mr)
		goto err;
	if (v->ib_mtu + SL_IPOIB_GRH_LEN > s->buf_size - VERBS_RX_LEAD) {
		v->rx_spill_len = (v->ib_mtu + SL_IPOIB_GRH_LEN - (s->buf_size - VERBS_RX_LEAD) +
				   63) & ~63u;
		ring = (size_t)v->rx_spill_len * v->rq_size;
		if (posix_memalign((void **)&v->rx_spill, 4096, ring)) {
			v->rx_spill = NULL;
			return -ENOMEM;
		}
		v->rx_spill_mr = VB->reg_mr(v->pd, v->rx_spill, ring, IBV_ACCESS_LOCAL_WRITE);
		if (!v->rx_spill_mr)
			goto err;
	}
	v->chan = VB->create_comp_channel(v->ctx);
	if (!v->chan)
		goto err;
	v->rcq = VB->create_cq(v->ctx, (int)v->rq_size, v, v->chan, 0);
	if (!v->rcq)
		goto err;
	v->scq = VB->create_cq(v->ctx, (int)v->sq_size, v, NULL, 0);
	if (!v->scq)
		goto err;
	return 0;
err:
	return errno ? -errno : -ENOMEM;
}

/* The port's MTU, GID and P_Key (v->ctx open, v->port set); 0 or -errno. */
static int verbs_port_setup(struct verbs_link *v, struct ibv_port_attr *pa)
{
	struct sl_stack *s = v->stack;
	int ret;

	ret = VB->query_port(v->ctx, v->port, pa);
	if (ret)
		return -ret;
	v->roce = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
	v->ib = pa->link_layer == IBV_LINK_LAYER_INFINIBAND;
	if (pa->state != IBV_PORT_ACTIVE)
		return -ENETDOWN;
	v->ib_mtu = sl_ipoib_ib_mtu_bytes(pa->active_mtu);
	v->ud_mtu = sl_ipoib_ud_mtu(pa->active_mtu);
	/* A receive must fit a buffer: GRH + header + packet after RX_LEAD. */
	if (v->ud_mtu > s->buf_size - SL_HEADROOM)
		v->ud_mtu = s->buf_size - SL_HEADROOM;
	if (v->ud_mtu < 576)
		return -EINVAL;
	ret = VB->query_gid(v->ctx, v->port, (int)v->gid_index, &v->gid);
	if (ret)
		return ret < 0 ? -EINVAL : -ret;
	ret = VB->query_pkey(v->ctx, v->port, v->pkey_index, &v->pkey);
	if (ret)
		return ret < 0 ? -EINVAL : -ret;
	v->pkey = ntohs(v->pkey);
	return 0;
}

int sluice_link_verbs(struct sluice_stack *st, const struct sluice_verbs_config *cfg)
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct sluice_verbs_config c = { 0 };
	struct ibv_port_attr pa;
	struct sl_ipoib_addr me;
	struct verbs_link *v;
	int ret;

	sl_verbs_trace_check();
	if (s->link)
		return -EBUSY;
	if (cfg)
		c = *cfg;
	if (c.flags & ~SLUICE_VERBS_NO_MCAST || c.gid_index > 255)
		return -EINVAL;
	v = sl_verbs_alloc(s, c.rq_size, c.sq_size);
	if (!v)
		return -errno;
	v->port = c.port ? c.port : 1;
	v->pkey_index = c.pkey_index;
	v->gid_index = c.gid_index;
	if (c.qkey)
		v->qkey = c.qkey;

	v->ctx = sl_verbs_open_device(c.device);
	if (!v->ctx) {
		ret = -errno;
		goto err_free;
	}
	ret = verbs_port_setup(v, &pa);
	if (ret)
		goto err_destroy;
	if (v->ib) {
		/*
		 * InfiniBand: peers learn our IPv4 address from the IPoIB
		 * interface's ARP and answer its QPN, never this QP's own, so
		 * a plain UD link would send and never hear a reply (issue
		 * 14 item 11).  The way onto IB is sluice_link_device(): the
		 * enhanced link (source QPN = the interface's), else the
		 * kring path.
		 */
		ret = -EOPNOTSUPP;
		goto err_destroy;
	}
	ret = sl_verbs_common_setup(v);
	if (ret)
		goto err_destroy;
	ret = verbs_qp_create_plain(v);
	if (ret)
		goto err_destroy;
	me.flags = 0;
	me.qpn = v->qpn;
	memcpy(me.gid, v->gid.raw, 16);
	sl_ipoib_hw_encode(v->hw, &me);
	if (!(c.flags & SLUICE_VERBS_NO_MCAST) && !v->kneigh)
		verbs_mcast_join(v);
	ret = sl_verbs_wait_set(v);
	if (ret)
		goto err_destroy;
	v->link.mtu = v->ud_mtu;

	ret = sl_lock(s);
	if (ret)
		goto err_destroy;
	ret = sl_verbs_start(v);
	sl_unlock(s);
	if (ret)
		goto err_return_bufs;
	ret = VB->req_notify_cq(v->rcq, 0);
	if (ret) {
		ret = -ret;
		goto err_return_bufs;
	}
	s->link = &v->link;
	return 0;

err_return_bufs:
	sl_verbs_destroy(v);
	sl_verbs_return_bufs(v);
	goto err_free;
err_destroy:
	sl_verbs_destroy(v);
err_free:
	sl_verbs_free(v);
	return ret;
}

static struct verbs_link *verbs_of(struct sl_stack *s)
{
	return s->link && s->link->ops == &sl_verbs_ops ? (struct verbs_link *)s->link : NULL;
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
	info->tx_posts = v->tx_posts;
	info->tx_wrs = v->tx_wrs;
	info->rx_posts = v->rx_posts;
	info->enhanced = v->enhanced;
	info->flow_err = v->flow_err;
	info->flow_last_err = v->flow_last_err;
	for (uint32_t i = 0; v->flows && i < VERBS_FLOWS_MAX; i++)
		info->flows += v->flows[i].flow != NULL;
	return 0;
}
