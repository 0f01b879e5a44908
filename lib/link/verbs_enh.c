// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs link, enhanced IPoIB mode (issue 6): on an IPoIB interface of
 * a device that offers it (mlx5, the module's SLUICE_IB_SOURCE_QPN), a UD
 * QP of this process sends as the interface itself and receives what flow
 * rules steer to it, bypassing the kernel both ways.
 *
 *  - The QP: ibv_create_qp_ex, IBV_QPT_UD, IBV_QP_CREATE_SOURCE_QPN with
 *    source_qpn = the interface's QPN (uverbs wants CAP_NET_RAW for it:
 *    -EPERM), then RESET -> INIT -> RTR -> RTS with IBV_QP_STATE alone:
 *    mlx5 refuses any other attribute on an underlay QP (mlx5_ib_modify_qp:
 *    "invalid attr_mask ... when underlay QP is used"); P_Key, port and
 *    Q_Key are the interface's.  Sends name the Q_Key in each WR.
 *  - Steering: one 5-tuple flow rule per connection this process made
 *    or accepted (sl_verbs_conn_own(), from the API), dropped when the
 *    connection goes (the timer's reconcile) and before a fork (the
 *    child shares it then): IBV_FLOW_SPEC_IPV4 (local and remote
 *    address) + IBV_FLOW_SPEC_TCP or _UDP (ports), no L2 spec (an IPoIB
 *    port has no Ethernet header to match), priority 0.  No 3-tuple
 *    rules: a port's packets may be any process's (link/README.md).
 *    mlx5 matches the underlay QPN itself (bth_dst_qp).  Creating flows
 *    needs CAP_NET_RAW too.
 *  - Everything else keeps going through the kernel: this link runs on top
 *    of the kring link of the same interface (the module's filters need
 *    its rings and reserve the ports; what no rule steers, or a refused
 *    rule would have, reaches the stack through them; ARP stays the
 *    kernel's, and neighbours and path records come from the module).
 *  - Checksums: IBV_SEND_IP_CSUM on IPv4 sends and IBV_WC_IP_CSUM_OK
 *    trusted on receive only with SLUICE_IB_UD_CSUM; otherwise software.
 *  - RSS: not used even with SLUICE_IB_RSS.  Verbs RSS is a
 *    IBV_QPT_RAW_PACKET QP over an indirection table of WQs, and mlx5
 *    refuses any create flag on such a QP (process_create_flags: -EINVAL
 *    for a RAW_PACKET QP with rwq_ind_tbl), so it cannot carry the
 *    interface's source QPN, and its flow rules match no underlay QPN.
 *    One QP per process takes the stack's traffic (one stack lock anyway).
 *
 * Any failure returns the stack to the kring link on the same interface
 * and says which capability was missing (sluice_link_device()).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "link/verbs_int.h"
#include "link/link.h"

int sl_verbs_flow_rule(struct sl_verbs_flow_rule *r, const struct sluice_filter *f, uint8_t port)
{
	bool five = f->raddr || f->rport;

	if (f->protocol != IPPROTO_TCP && f->protocol != IPPROTO_UDP)
		return -EINVAL;
	if (!f->lport || (five && (!f->raddr || !f->rport)))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->attr.type = IBV_FLOW_ATTR_NORMAL;
	r->attr.size = sizeof(*r);
	r->attr.priority = five ? VERBS_FLOW_PRIO_5TUPLE : VERBS_FLOW_PRIO_3TUPLE;
	r->attr.num_of_specs = 2;
	r->attr.port = port;
	r->ipv4.type = IBV_FLOW_SPEC_IPV4;
	r->ipv4.size = sizeof(r->ipv4);
	/* Packets to us: their destination is our side. */
	r->ipv4.val.dst_ip = f->laddr;
	r->ipv4.mask.dst_ip = f->laddr ? 0xffffffffu : 0;
	r->ipv4.val.src_ip = f->raddr;
	r->ipv4.mask.src_ip = f->raddr ? 0xffffffffu : 0;
	r->l4.type = f->protocol == IPPROTO_TCP ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;
	r->l4.size = sizeof(r->l4);
	r->l4.val.dst_port = f->lport;
	r->l4.mask.dst_port = 0xffff;
	r->l4.val.src_port = f->rport;
	r->l4.mask.src_port = f->rport ? 0xffff : 0;
	return 0;
}

static struct verbs_link *enh_of(struct sl_link *l)
{
	struct verbs_link *v = (struct verbs_link *)l;

	/* A forked child's connections take the rings (link/verbs.c). */
	return v->enhanced && v->flows && v->owner == sl_self_pid() ? v : NULL;
}

static bool flow_is(const struct verbs_flow *fl, const struct sl_sock *so)
{
	uint8_t type = fl->protocol == IPPROTO_TCP ? SL_SOCK_TCP : SL_SOCK_UDP;

	return so->type == type && so->lport == fl->lport && so->rport == fl->rport &&
	       so->raddr == fl->raddr && (!fl->laddr || so->laddr == fl->laddr) &&
	       (type == SL_SOCK_TCP || (so->flags & SL_SF_CONNECTED));
}

static void flow_destroy(struct verbs_link *v, struct verbs_flow *fl)
{
	if (VB->destroy_flow(fl->flow))
		v->flow_err++;
	fl->flow = NULL;
}

/*
 * Stacks shared by several processes (issue 14 item 1; link/README.md):
 * rules are made only for connections, 5-tuple, to the QP of the process
 * that connected or accepted, which is the one that waits on them.  What
 * a port's 3-tuple would take (listeners, bound and unconnected datagram
 * sockets, any socket two processes may use) reaches the stack through
 * the module's filters and the rings, which every process of the stack
 * reads: no other process's QP stands in the way.
 */
void sl_verbs_conn_own(struct sl_link *l, struct sl_stack *s, const struct sl_sock *so)
{
	struct verbs_link *v = enh_of(l);
	struct verbs_flow *slot = NULL;
	struct sl_verbs_flow_rule r;
	struct sluice_filter f;
	int ret;

	(void)s;
	/* IPv6 (a handle in 0/8): no IPv6 rules yet, its packets take the
	 * rings. */
	if (!v || !so->lport || !so->rport || !so->raddr || sl_v6tok(so->raddr) ||
	    (ntohl(so->raddr) >> 24) == 127 || (so->laddr && (ntohl(so->laddr) >> 24) == 127))
		return;
	for (uint32_t i = 0; i < VERBS_FLOWS_MAX; i++) {
		struct verbs_flow *fl = &v->flows[i];

		if (fl->flow && fl->sock == so->idx) {
			if (flow_is(fl, so))
				return;		/* made already */
			flow_destroy(v, fl);	/* the slot's former connection */
		}
		if (!fl->flow && !slot)
			slot = fl;
	}
	if (!slot) {
		v->flow_err++;
		v->flow_last_err = -ENOSPC;
		return;
	}
	memset(&f, 0, sizeof(f));
	f.protocol = so->type == SL_SOCK_TCP ? IPPROTO_TCP : IPPROTO_UDP;
	f.laddr = so->laddr;
	f.raddr = so->raddr;
	f.lport = so->lport;
	f.rport = so->rport;
	ret = sl_verbs_flow_rule(&r, &f, v->port);
	if (!ret) {
		errno = 0;
		slot->flow = VB->create_flow(v->qp, &r.attr);
		if (!slot->flow)
			ret = errno ? -errno : -EINVAL;
	}
	if (ret) {
		/* Its packets take the rings. */
		v->flow_err++;
		v->flow_last_err = ret;
		return;
	}
	slot->sock = so->idx;
	slot->protocol = f.protocol;
	slot->laddr = f.laddr;
	slot->raddr = f.raddr;
	slot->lport = f.lport;
	slot->rport = f.rport;
}

/*
 * A connection closes in whichever process runs the stack then, and only
 * this process can destroy its rule (the rule is an object of its uverbs
 * file): each timer tick drops the rules whose socket is no longer that
 * connection.
 */
void sl_verbs_flows_reconcile(struct verbs_link *v, struct sl_stack *s)
{
	if (!v->flows || v->owner != sl_self_pid())
		return;
	for (uint32_t i = 0; i < VERBS_FLOWS_MAX; i++) {
		struct verbs_flow *fl = &v->flows[i];

		if (fl->flow && (fl->sock >= s->max_sockets || !flow_is(fl, sl_sock(s, fl->sock))))
			flow_destroy(v, fl);
	}
}

void sl_verbs_flows_drop(struct verbs_link *v)
{
	if (!v->flows || v->owner != sl_self_pid())
		return;
	for (uint32_t i = 0; i < VERBS_FLOWS_MAX; i++)
		if (v->flows[i].flow)
			flow_destroy(v, &v->flows[i]);
}

static void why(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void why(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* The underlay QP: source QPN = the interface's, state-only transitions. */
static int enh_qp_create(struct verbs_link *v, const struct sluice_ifinfo *ii, char *msg,
			 size_t len)
{
	struct ibv_qp_init_attr_ex ia;
	enum ibv_qp_state failed = IBV_QPS_RESET;
	int ret;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = v->scq;
	ia.recv_cq = v->rcq;
	ia.cap.max_send_wr = v->sq_size;
	ia.cap.max_recv_wr = v->rq_size;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = v->rx_spill ? 2 : 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.pd = v->pd;
	ia.create_flags = IBV_QP_CREATE_SOURCE_QPN;
	ia.source_qpn = ii->qpn & SL_IPOIB_QPN_MASK;
	errno = 0;
	v->qp = VB->create_qp_ex(v->ctx, &ia);
	if (!v->qp) {
		ret = errno ? -errno : -ENOMEM;
		if (ret == -EPERM)
			why(msg, len, "a source-QPN QP needs CAP_NET_RAW: setcap cap_net_raw+p "
			    "on the sluice tool, then start the program with `sluice run`");
		else if (ret == -EOPNOTSUPP || ret == -EINVAL || ret == -ENOSYS)
			why(msg, len, "device %s does not create source-QPN UD QPs (%s): "
			    "enhanced IPoIB needs an mlx5 device", ii->ib_dev, strerror(-ret));
		else
			why(msg, len, "creating the source-QPN QP on %s: %s", ii->ib_dev,
			    strerror(-ret));
		return ret;
	}
	ret = sl_verbs_qp_up(v, &failed);
	if (ret) {
		why(msg, len, "moving the source-QPN QP to state %d: %s", (int)failed,
		    strerror(ret));
		return -ret;
	}
	v->qpn = ii->qpn & SL_IPOIB_QPN_MASK;
	return 0;
}

/*
 * A trial rule, made and removed at once (as libvma did): the kernel checks
 * CAP_NET_RAW when a rule is made (ib_uverbs_ex_create_flow), not when the
 * source-QPN QP is (rdma-core's ioctl path checks nothing for a UD QP), so
 * without this the link would come up enhanced with every rule refused.
 * It matches UDP to port 9 of 0.0.0.0, which no packet has as its
 * destination, and lives for two system calls.  0, or -errno with msg.
 */
static int enh_trial_rule(struct verbs_link *v, char *msg, size_t len)
{
	struct sl_verbs_flow_rule r;
	struct ibv_flow *flow;
	int ret;

	memset(&r, 0, sizeof(r));
	r.attr.type = IBV_FLOW_ATTR_NORMAL;
	r.attr.size = sizeof(r);
	r.attr.priority = VERBS_FLOW_PRIO_3TUPLE;
	r.attr.num_of_specs = 2;
	r.attr.port = v->port;
	r.ipv4.type = IBV_FLOW_SPEC_IPV4;
	r.ipv4.size = sizeof(r.ipv4);
	r.ipv4.mask.dst_ip = 0xffffffffu;
	r.l4.type = IBV_FLOW_SPEC_UDP;
	r.l4.size = sizeof(r.l4);
	r.l4.val.dst_port = htons(9);
	r.l4.mask.dst_port = 0xffff;
	errno = 0;
	flow = VB->create_flow(v->qp, &r.attr);
	if (flow) {
		VB->destroy_flow(flow);
		return 0;
	}
	ret = errno ? -errno : -EINVAL;
	if (ret == -EPERM)
		why(msg, len, "flow rules need CAP_NET_RAW, which this process lacks: setcap "
		    "cap_net_raw+p on the sluice tool, then start the program with `sluice run`");
	else
		why(msg, len, "a trial flow rule was refused: %s (flow steering unusable)",
		    strerror(-ret));
	return ret;
}

/*
 * Enhanced mode on the stack's IPoIB interface ii, over the kring link
 * under (already made, detached from the stack).  0, or -errno with msg
 * saying what was missing.
 */
static int enh_setup(struct verbs_link *v, const struct sluice_ifinfo *ii, char *msg, size_t len)
{
	struct sl_stack *s = v->stack;
	struct ibv_port_attr pa;
	struct sl_ipoib_addr me;
	int ret;

	v->ctx = sl_verbs_open_device(ii->ib_dev);
	if (!v->ctx) {
		ret = errno ? -errno : -ENODEV;
		why(msg, len, "opening ib device %s: %s", ii->ib_dev, strerror(-ret));
		return ret;
	}
	v->port = (uint8_t)ii->ib_port;
	ret = VB->query_port(v->ctx, v->port, &pa);
	if (ret) {
		why(msg, len, "ib device %s port %u: %s", ii->ib_dev, ii->ib_port, strerror(ret));
		return -ret;
	}
	if (pa.link_layer != IBV_LINK_LAYER_INFINIBAND) {
		why(msg, len, "ib device %s port %u is not InfiniBand", ii->ib_dev, ii->ib_port);
		return -EOPNOTSUPP;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		why(msg, len, "ib device %s port %u is not active", ii->ib_dev, ii->ib_port);
		return -ENETDOWN;
	}
	/*
	 * A controlled Q_Key (bit 31, IBA 10.2.4): a send WR naming one
	 * makes the device send the QP's own Q_Key instead (IBA 10.2.5), and
	 * an underlay QP has none (mlx5 takes only the state in its
	 * modify_qp).  Our packets would carry the wrong key and be dropped:
	 * the interface's ipoib, whose QP holds the key, carries them.
	 */
	if (ii->qkey & 0x80000000u) {
		why(msg, len, "the broadcast group's Q_Key 0x%08x of %s is a controlled one "
		    "(top bit set), which a source-QPN QP cannot send with", ii->qkey, ii->name);
		return -EOPNOTSUPP;
	}
	v->ib = true;
	v->kneigh = true;
	v->enhanced = true;
	v->ifindex = ii->ifindex;
	v->pkey = ii->pkey;
	v->pkey_index = ii->pkey_index;
	v->qkey = ii->qkey;
	memcpy(v->gid.raw, ii->gid, 16);
	v->ib_mtu = ii->ud_mtu + SL_IPOIB_HLEN;
	v->ud_mtu = ii->ud_mtu;
	if (v->ud_mtu > s->buf_size - SL_HEADROOM)
		v->ud_mtu = s->buf_size - SL_HEADROOM;
	if (v->ud_mtu < 576) {
		why(msg, len, "UD MTU %u of %s is below 576", ii->ud_mtu, ii->name);
		return -EINVAL;
	}
	v->tx_csum = v->rx_csum = (ii->ib_flags & SLUICE_IB_UD_CSUM) != 0;
	v->flows = calloc(VERBS_FLOWS_MAX, sizeof(*v->flows));
	if (!v->flows)
		return -ENOMEM;
	ret = sl_verbs_common_setup(v);
	if (ret) {
		why(msg, len, "verbs resources on %s: %s", ii->ib_dev, strerror(-ret));
		return ret;
	}
	ret = enh_qp_create(v, ii, msg, len);
	if (ret)
		return ret;
	ret = enh_trial_rule(v, msg, len);
	if (ret)
		return ret;
	me.flags = 0;
	me.qpn = v->qpn;
	memcpy(me.gid, v->gid.raw, 16);
	sl_ipoib_hw_encode(v->hw, &me);
	ret = sl_verbs_wait_set(v);
	if (ret) {
		why(msg, len, "completion channel: %s", strerror(-ret));
		return ret;
	}
	v->link.mtu = v->ud_mtu < v->under->mtu ? v->ud_mtu : v->under->mtu;
	ret = VB->req_notify_cq(v->rcq, 0);
	if (ret) {
		why(msg, len, "arming the completion queue: %s", strerror(ret));
		return -ret;
	}
	ret = sl_lock(s);
	if (ret)
		return ret;
	ret = sl_verbs_start(v);
	if (ret)
		why(msg, len, "no packet buffers for the receive queue");
	else
		s->link = &v->link;
	sl_unlock(s);
	return ret;
}

int sluice_link_device(struct sluice_stack *st, struct sluice_link_report *rep)
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct sluice_link_report dummy;
	struct sluice_ifinfo ii;
	struct verbs_link *v;
	struct sl_link *under;
	int ret;

	sl_verbs_trace_check();
	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	if (s->link)
		return -EBUSY;
	if (!s->module_backed || !s->ifindex)
		return -EOPNOTSUPP;
	memset(&ii, 0, sizeof(ii));
	ii.size = sizeof(ii);
	ii.ifindex = s->ifindex;
	ret = VB->ifinfo(&ii);
	rep->ipoib = !ret && (ii.ib_flags & SLUICE_IB_IPOIB);
	/* What the module says is still checked before use. */
	ii.ib_dev[sizeof(ii.ib_dev) - 1] = '\0';
	ii.name[sizeof(ii.name) - 1] = '\0';
	if (ret) {
		why(rep->why, sizeof(rep->why), "interface facts (IFINFO): %s", strerror(-ret));
		rep->verbs_err = ret;
	} else if ((ii.ib_flags & SLUICE_IB_IPOIB) &&
		   (!ii.ib_port || ii.ib_port > 255 || !ii.ib_dev[0] || ii.qpn > SL_IPOIB_QPN_MASK)) {
		why(rep->why, sizeof(rep->why), "IFINFO: bad IPoIB facts (port %u, device \"%s\", "
		    "QPN 0x%x)", ii.ib_port, ii.ib_dev, ii.qpn);
		ret = -EPROTO;
		rep->verbs_err = ret;
	} else if (!(ii.ib_flags & SLUICE_IB_IPOIB)) {
		/* Ethernet and the rest: kring is the link, nothing missing. */
		why(rep->why, sizeof(rep->why), "%s is not an IPoIB interface", ii.name);
		ret = -EOPNOTSUPP;
	} else if (ii.ib_flags & SLUICE_IB_CONNECTED) {
		why(rep->why, sizeof(rep->why), "%s is in connected mode (enhanced IPoIB is "
		    "datagram only)", ii.name);
		ret = -EOPNOTSUPP;
	} else if (!(ii.ib_flags & SLUICE_IB_SOURCE_QPN)) {
		why(rep->why, sizeof(rep->why), "%s is legacy IPoIB (ipoib's own datagram path, "
		    "not %s's driver): enhanced IPoIB needs mlx5 with its IPoIB offloads on",
		    ii.name, ii.ib_dev);
		ret = -EOPNOTSUPP;
	} else if (!(ii.ib_flags & SLUICE_IB_FLOW_STEER)) {
		why(rep->why, sizeof(rep->why), "%s offers no flow steering", ii.ib_dev);
		ret = -EOPNOTSUPP;
	}
	/*
	 * A P_Key child whose P_Key the port's table lacks: ipoib keeps it
	 * down (no carrier, no QP: ipoib_ib_dev_open()), so nothing a stack
	 * sends there leaves, and no P_Key index is this interface's to send
	 * with.  No link at all, with the reason, rather than a stack whose
	 * every packet is dropped unsaid (the preload leaves the sockets to
	 * the kernel, which knows the interface is down).
	 */
	if (rep->ipoib && (ii.ib_flags & SLUICE_IB_PKEY_ABSENT)) {
		why(rep->why, sizeof(rep->why), "P_Key 0x%04x of %s is not in %s port %u's "
		    "P_Key table: ipoib keeps %s down until the subnet manager adds it",
		    ii.pkey, ii.name, ii.ib_dev, ii.ib_port, ii.name);
		rep->verbs_err = -ENETDOWN;
		rep->kring_err = -ENETDOWN;
		return -ENETDOWN;
	}
	if (!ret)
		rep->verbs_err = 0;
	else if (!rep->verbs_err)
		rep->verbs_err = ret;
	/* Every path needs the rings: the fallback, and the filters of the
	 * enhanced link. */
	ret = VB->link_kring(st);
	if (ret) {
		rep->kring_err = ret;
		return ret;
	}
	snprintf(rep->link, sizeof(rep->link), "kring");
	if (rep->verbs_err)
		return 0;
	ret = sl_lock(s);
	if (ret)
		return 0;
	under = s->link;
	s->link = NULL;
	sl_unlock(s);
	v = sl_verbs_alloc(s, 0, 0);
	if (!v) {
		ret = -errno;
		why(rep->why, sizeof(rep->why), "%s", strerror(-ret));
		goto fallback;
	}
	v->under = under;
	ret = enh_setup(v, &ii, rep->why, sizeof(rep->why));
	if (!ret) {
		snprintf(rep->link, sizeof(rep->link), "verbs-enhanced");
		return 0;
	}
	/* The rules made go with the QP (sl_verbs_destroy()). */
	sl_verbs_destroy(v);
	sl_verbs_return_bufs(v);
	sl_verbs_free(v);
fallback:
	rep->verbs_err = ret;
	if (!rep->why[0])
		why(rep->why, sizeof(rep->why), "%s", strerror(-ret));
	s->link = under;
	return 0;
}
