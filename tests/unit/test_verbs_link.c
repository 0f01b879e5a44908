// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs links (lib/link/verbs.c, lib/link/verbs_enh.c) against a test
 * double of the device (verbs_double.h): the production code, only the
 * hardware is not there.  What we ask the hardware for is checked exactly,
 * so a regression there fails here:
 *  - enhanced IPoIB: the source-QPN UD QP (create flags, source QPN, type,
 *    sizes), state-only transitions, one 5-tuple flow rule per
 *    connection (specs, masks, priority, no L2 spec), none for listeners
 *    and bound sockets, removed with the connection, IP_CSUM on sends
 *    only with the capability, IBV_WC_IP_CSUM_OK trusted only then, receive buffers
 *    that leave 40 bytes for the GRH, AHs from the path record;
 *  - every failure (each call failing, a missing capability) gives the
 *    exact error and reason, frees everything and leaves the kring link;
 *  - plain UD: sends batched into one post_send at unlock, one signalled,
 *    never a buffer the device still owns reused, even with the stack's
 *    buffer freed and rewritten before the flush; a full send ring waits
 *    for completions; neighbours re-asked after 30 s and dropped (AH
 *    destroyed) when unanswered, ARP again after.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "verbs_double.h"
#include "filter_fake.h"
#include "stack_fixture.h"

#define ST(s)		((struct sluice_stack *)(s))
#define PEER_QPN	0x000456
#define OUR_QPN		0x000123

static const uint8_t peer_gid[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 1, 2, 3 };

static struct sl_stack *mod_stack(const char *tag)
{
	struct sl_stack *s = fx_stack(tag, "10.9.0.1", NULL);

	/* As a stack made on an interface: module filters (filter_fake.h). */
	sl_filter_ioctl = fake_ioctl;
	s->module_backed = true;
	s->filters = true;
	s->ifindex = 7;
	return s;
}

static void mod_destroy(struct sl_stack *s)
{
	if (s->link)
		s->link->ops->close(s->link);
	s->module_backed = false;
	s->filters = false;
	fx_destroy(s);
}

/* An mlx5 IPoIB interface with enhanced IPoIB (caps: extra SLUICE_IB_*). */
static void enh_device(uint32_t caps)
{
	vd_reset(IBV_LINK_LAYER_INFINIBAND);
	vd.ifinfo.ib_flags = SLUICE_IB_IPOIB | SLUICE_IB_SOURCE_QPN | SLUICE_IB_FLOW_STEER | caps;
	vd.ifinfo.ib_port = 1;
	snprintf(vd.ifinfo.ib_dev, sizeof(vd.ifinfo.ib_dev), "mlx5_0");
	snprintf(vd.ifinfo.name, sizeof(vd.ifinfo.name), "ib0");
	vd.ifinfo.pkey = 0xffff;
	vd.ifinfo.pkey_index = 0;
	/* The usual IPoIB broadcast group's Q_Key (not a controlled one:
	 * see test_controlled_qkey()). */
	vd.ifinfo.qkey = 0x00000b1b;
	vd.ifinfo.ib_flags |= SLUICE_IB_QKEY_SA;
	vd.ifinfo.qpn = OUR_QPN;
	vd.ifinfo.ud_mtu = 2044;
	memcpy(vd.ifinfo.gid, vd.gid.raw, 16);
	/* The neighbour 10.9.0.2: resolved, path on the local subnet. */
	vd.nr.state = SLUICE_NEIGH_RES_VALID;
	vd.nr.addr_len = SL_IPOIB_HWLEN;
	vd.nr.hwaddr[1] = (PEER_QPN >> 16) & 0xff;
	vd.nr.hwaddr[2] = (PEER_QPN >> 8) & 0xff;
	vd.nr.hwaddr[3] = PEER_QPN & 0xff;
	memcpy(vd.nr.hwaddr + 4, peer_gid, 16);
	vd.nr.path_state = SLUICE_NEIGH_RES_VALID;
	vd.nr.qpn = PEER_QPN;
	memcpy(vd.nr.dgid, peer_gid, 16);
	vd.nr.dlid = 0x17;
	vd.nr.sl = 3;
	vd.nr.rate = IBV_RATE_100_GBPS;
	vd.nr.mtu = IBV_MTU_2048;
}

/* UDP datagram 10.9.0.2:7 -> 10.9.0.1:port behind an IPoIB header. */
static size_t udp_frame(uint8_t *out, uint16_t port, const char *msg, bool good_csum)
{
	uint8_t pl[64];
	struct sl_udp *u = (struct sl_udp *)pl;
	size_t n = strlen(msg), len;
	struct sl_ip *ip;

	u->sport = htons(7);
	u->dport = htons(port);
	u->len = htons((uint16_t)(sizeof(*u) + n));
	u->csum = 0;
	memcpy(u + 1, msg, n);
	sl_ipoib_hdr_put(out, ETHERTYPE_IP_);
	len = fx_ip(out + SL_IPOIB_HLEN, "10.9.0.2", "10.9.0.1", IPPROTO_UDP, pl, sizeof(*u) + n);
	ip = (struct sl_ip *)(out + SL_IPOIB_HLEN);
	u = (struct sl_udp *)(ip + 1);
	u->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_UDP,
							  (uint16_t)(sizeof(*u) + n)),
					   u, sizeof(*u) + n));
	if (!u->csum)
		u->csum = 0xffff;
	if (!good_csum)
		u->csum ^= 0x5a5a;
	return len + SL_IPOIB_HLEN;
}

static void test_enhanced_attrs(void)
{
	struct sl_stack *s = mod_stack("venh");
	struct sockaddr_in any5000 = fx_addr("0.0.0.0", 5000), us6000 = fx_addr("10.9.0.1", 6000);
	struct sockaddr_in peer = fx_addr("10.9.0.2", 7), peer80 = fx_addr("10.9.0.2", 80);
	struct sluice_link_report rep;
	struct sl_verbs_flow_rule *r;
	struct sluice_verbs_info info;
	uint32_t free0 = s->lib->buf_free_count;
	int lsd, usd, csd, ret;

	enh_device(SLUICE_IB_UD_CSUM | SLUICE_IB_RSS);
	ret = sluice_link_device(ST(s), &rep);
	tap_eq(ret, 0, "enh: sluice_link_device succeeds");
	tap_ok(!strcmp(rep.link, "verbs-enhanced") && rep.verbs_err == 0,
	       "enh: the link is verbs-enhanced (%s, %s)", rep.link, rep.why);
	tap_ok(s->link && !strcmp(s->link->ops->name, "verbs"), "enh: the stack's link is verbs");
	tap_eq(vd.calls[VD_link_kring], 1, "enh: on top of the kring link of the interface");
	/* The QP: exactly what mlx5 enhanced IPoIB wants. */
	tap_eq(vd.calls[VD_create_qp_ex], 1, "enh: one ibv_create_qp_ex");
	tap_eq(vd.calls[VD_create_qp], 0, "enh: no plain ibv_create_qp");
	tap_eq(vd.qp_attr_ex.qp_type, IBV_QPT_UD, "enh: qp_type UD");
	tap_eq(vd.qp_attr_ex.comp_mask, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
	       "enh: comp_mask PD | CREATE_FLAGS");
	tap_eq(vd.qp_attr_ex.create_flags, IBV_QP_CREATE_SOURCE_QPN,
	       "enh: create_flags exactly IBV_QP_CREATE_SOURCE_QPN");
	tap_eq(vd.qp_attr_ex.source_qpn, OUR_QPN, "enh: source_qpn = the interface's QPN");
	tap_ok(vd.qp_attr_ex.pd == vd.pd && vd.qp_attr_ex.send_cq == vd.scq &&
	       vd.qp_attr_ex.recv_cq == vd.rcq && vd.scq != vd.rcq,
	       "enh: our PD, send CQ and receive CQ (with the channel)");
	tap_ok(vd.qp_attr_ex.cap.max_send_wr == VERBS_SQ_DEFAULT &&
	       vd.qp_attr_ex.cap.max_recv_wr == s->r->n_bufs / 4 &&
	       vd.qp_attr_ex.cap.max_send_sge == 1 && vd.qp_attr_ex.cap.max_recv_sge == 2,
	       "enh: caps: %u send, %u recv WRs (a quarter of the pool), 1 send SGE, 2 receive",
	       vd.qp_attr_ex.cap.max_send_wr, vd.qp_attr_ex.cap.max_recv_wr);
	tap_eq(vd.qp_attr_ex.rwq_ind_tbl, NULL, "enh: no RSS indirection table (see link_verbs_enh.c)");
	tap_eq(vd.n_modify, 3, "enh: three modify_qp");
	tap_ok(vd.modify_state[0] == IBV_QPS_INIT && vd.modify_state[1] == IBV_QPS_RTR &&
	       vd.modify_state[2] == IBV_QPS_RTS, "enh: INIT, RTR, RTS");
	tap_ok(vd.modify_mask[0] == IBV_QP_STATE && vd.modify_mask[1] == IBV_QP_STATE &&
	       vd.modify_mask[2] == IBV_QP_STATE, "enh: each with IBV_QP_STATE alone (underlay QP)");
	tap_eq(vd.calls[VD_attach_mcast], 0, "enh: no multicast attach (ARP is the kernel's)");
	/* Receive buffers: 40 bytes of GRH and the IPoIB header before SL_HEADROOM. */
	tap_eq(vd.n_rq, (int)(s->r->n_bufs / 4), "enh: the receive queue is full");
	tap_eq(vd.rq[0].addr - (uint64_t)(uintptr_t)s->base - s->r->bufdata_off -
	       (uint64_t)s->r->buf_size * ((vd.rq[0].addr - (uintptr_t)s->base -
					   s->r->bufdata_off) / s->r->buf_size),
	       SL_HEADROOM - SL_IPOIB_GRH_LEN - SL_IPOIB_HLEN,
	       "enh: a receive SGE starts 44 bytes before the IP header's place");
	tap_eq(vd.rq[0].sge[0].len, s->r->buf_size - (SL_HEADROOM - 44),
	       "enh: and runs to the buffer's end");
	tap_ok(vd.rq[0].nsge == 2 && vd.rq[0].len >= 2048 + 40 && vd.qp_attr_ex.cap.max_recv_sge == 2,
	       "enh: a second SGE makes it IB MTU + GRH (2 SGEs, %u bytes)", vd.rq[0].len);
	tap_eq(vd.n_post_recv, (int)((s->r->n_bufs / 4 + VERBS_WC_BATCH - 1) / VERBS_WC_BATCH),
	       "enh: the queue filled with one post_recv per 32 WRs");

	tap_ok(vd.n_flows == 1 && vd.n_flows_live == 0,
	       "enh: no flow rule before a filter (only the trial one, gone at once)");
	lsd = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
	tap_ok(sluice_bind(ST(s), lsd, &any5000) == 0 && sluice_listen(ST(s), lsd, 8) == 0,
	       "enh: a listener on *:5000 (module filter)");
	/* Issue 14 item 1: a port's 3-tuple may be any process's (link/README.md). */
	tap_eq(vd.n_flows, 1, "enh: no rule for the listener (its SYNs take the rings)");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tap_eq(sluice_bind(ST(s), usd, &us6000), 0, "enh: UDP bind 10.9.0.1:6000");
	tap_eq(vd.n_flows, 1, "enh: no rule for a bound datagram socket");
	/* A connection this process makes: a 5-tuple rule to its QP. */
	csd = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_connect(ST(s), csd, &peer80), -EINPROGRESS, "enh: connect 10.9.0.2:80");
	tap_eq(vd.n_flows, 2, "enh: one flow rule for the connection");
	r = &vd.flows[1];
	tap_ok(r->attr.type == IBV_FLOW_ATTR_NORMAL && r->attr.size == sizeof(*r) &&
	       r->attr.num_of_specs == 2 && r->attr.port == 1 && r->attr.flags == 0 &&
	       r->attr.comp_mask == 0, "enh: rule: NORMAL, 2 specs, port 1, no flags");
	tap_eq(r->attr.priority, VERBS_FLOW_PRIO_5TUPLE, "enh: connection rule at the 5-tuple priority");
	tap_ok(r->ipv4.type == IBV_FLOW_SPEC_IPV4 && r->ipv4.size == sizeof(r->ipv4),
	       "enh: first spec IPv4 (no L2 spec)");
	tap_ok(r->ipv4.val.dst_ip == us6000.sin_addr.s_addr && r->ipv4.mask.dst_ip == 0xffffffffu &&
	       r->ipv4.val.src_ip == peer80.sin_addr.s_addr && r->ipv4.mask.src_ip == 0xffffffffu,
	       "enh: 10.9.0.2 -> 10.9.0.1 exact");
	tap_ok(r->l4.type == IBV_FLOW_SPEC_TCP && r->l4.size == sizeof(r->l4) &&
	       r->l4.val.dst_port == sl_sock(s, (uint32_t)csd)->lport &&
	       r->l4.mask.dst_port == 0xffff && r->l4.val.src_port == htons(80) &&
	       r->l4.mask.src_port == 0xffff, "enh: TCP spec: both ports exact");
	/* A connected datagram socket: a UDP 5-tuple rule. */
	tap_eq(sluice_connect(ST(s), usd, &peer), 0, "enh: UDP connect to 10.9.0.2:7");
	tap_eq(vd.n_flows, 3, "enh: a rule made with the connect");
	r = &vd.flows[2];
	tap_ok(r->l4.type == IBV_FLOW_SPEC_UDP && r->l4.val.dst_port == htons(6000) &&
	       r->l4.val.src_port == htons(7) && r->ipv4.val.dst_ip == us6000.sin_addr.s_addr &&
	       r->ipv4.mask.dst_ip == 0xffffffffu && r->ipv4.mask.src_ip == 0xffffffffu &&
	       r->attr.priority == VERBS_FLOW_PRIO_5TUPLE,
	       "enh: UDP spec, 10.9.0.2:7 -> 10.9.0.1:6000, 5-tuple priority");
	sluice_verbs_info(ST(s), &info);
	tap_ok(info.enhanced == 1 && info.flows == 2 && info.qpn == OUR_QPN,
	       "enh: sluice_verbs_info: enhanced, 2 flows, our QPN is the interface's");

	/* A send: neighbour and path from the module, IP_CSUM asked. */
	tap_eq(sluice_sendto(ST(s), usd, "ping", 4, 0, &peer), 4, "enh: sendto 10.9.0.2:7");
	tap_eq(vd.calls[VD_neigh_resolve], 1, "enh: the neighbour asked of the module");
	tap_eq(vd.n_ah, 1, "enh: one AH");
	tap_ok(vd.ahs[0].dlid == 0x17 && vd.ahs[0].sl == 3 &&
	       vd.ahs[0].static_rate == IBV_RATE_100_GBPS && vd.ahs[0].is_global == 0 &&
	       vd.ahs[0].port_num == 1, "enh: AH from the path record: DLID, SL, rate, no GRH");
	tap_eq(vd.n_sent, 2, "enh: one send WR (after the SYN)");
	tap_ok(vd.sent[1].opcode == IBV_WR_SEND && vd.sent[1].num_sge == 1 &&
	       vd.sent[1].remote_qpn == PEER_QPN && vd.sent[1].remote_qkey == 0x0b1b &&
	       vd.sent[1].wire_qkey == 0x0b1b,
	       "enh: SEND to the peer's QPN with the interface's Q_Key");
	tap_eq(vd.sent[1].send_flags, IBV_SEND_IP_CSUM | IBV_SEND_SIGNALED,
	       "enh: send_flags IP_CSUM (offered) | SIGNALED (last of its batch)");
	tap_ok(vd.sent[1].len == SL_IPOIB_HLEN + 20 + 8 + 4 && vd.sent[1].data[0] == 0x08 &&
	       vd.sent[1].data[1] == 0x00 && vd.sent[1].data[4] == 0x45,
	       "enh: IPoIB header 0x0800 then the IPv4 packet");

	/* Receive: IBV_WC_IP_CSUM_OK is trusted with SLUICE_IB_UD_CSUM. */
	{
		uint8_t f[128], got[32];
		size_t n = udp_frame(f, 6000, "bad-csum-ok", false);
		long k;

		vd_rx(f, (uint32_t)n, IBV_WC_IP_CSUM_OK, PEER_QPN, peer_gid);
		sluice_stack_poll(ST(s));
		k = sluice_recvfrom(ST(s), usd, got, sizeof(got), MSG_DONTWAIT, NULL);
		tap_eq(k, 11, "enh: a datagram the device vouched for is delivered unchecked");
		n = udp_frame(f, 6000, "bad-no-flag", false);
		vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
		sluice_stack_poll(ST(s));
		k = sluice_recvfrom(ST(s), usd, got, sizeof(got), MSG_DONTWAIT, NULL);
		tap_eq(k, -EAGAIN, "enh: without IBV_WC_IP_CSUM_OK a bad checksum is dropped");
	}

	/* Closing the UDP socket removes its rule at the next timer, and only it. */
	sluice_close(ST(s), usd);
	sluice_stack_poll(ST(s));
	fx_clock_us += 200000;
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_flows_destroyed == 2 && vd.flow_obj[2] == NULL && vd.flow_obj[1] != NULL,
	       "enh: close: the UDP rule destroyed, the TCP connection's kept");
	/* A rule the device refuses: the connection still works (rings). */
	vd.fail[VD_create_flow] = EPERM;
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tap_ok(sluice_bind(ST(s), usd, &us6000) == 0 && sluice_connect(ST(s), usd, &peer) == 0,
	       "enh: a connect whose rule is refused succeeds");
	sluice_verbs_info(ST(s), &info);
	tap_ok(info.flow_err == 1 && info.flow_last_err == -EPERM,
	       "enh: counted as flow_err, -EPERM kept (its packets take the rings)");
	sluice_close(ST(s), usd);
	sluice_close(ST(s), csd);
	sluice_close(ST(s), lsd);
	s->link->ops->close(s->link);
	tap_eq(vd.kring_closed, 1, "enh: close closes the kring link under it");
	tap_eq(vd.live, 0, "enh: close: every verbs object destroyed");
	tap_eq(s->lib->buf_free_count, free0, "enh: close: every buffer back in the pool");
	mod_destroy(s);
}

/*
 * fork(): the child must not touch the parent's verbs objects (using them
 * corrupts the parent's queues, destroying them through the shared uverbs
 * fd destroys the parent's): its stack drops to the kring link.
 */
static void test_enhanced_fork(void)
{
	struct sl_stack *s = mod_stack("vfork");
	struct sockaddr_in peer = fx_addr("10.9.0.2", 7), us = fx_addr("10.9.0.1", 6100);
	struct sluice_link_report rep;
	int usd, status = -1, flows;
	pid_t pid;

	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "fork: linked");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_bind(ST(s), usd, &us);
	flows = vd.n_flows_live;
	pid = fork();
	if (pid == 0) {
		/* In the child: every verbs call counted from here is a defect. */
		int calls = 0, bad = 0, s2, destroyed0 = vd.n_flows_destroyed;
		struct sockaddr_in us2 = fx_addr("10.9.0.1", 6101);

		memset(vd.calls, 0, sizeof(vd.calls));
		vd.n_post_send = vd.n_post_recv = 0;
		sluice_sendto(ST(s), usd, "child", 5, 0, &peer);
		sluice_stack_poll(ST(s));
		s2 = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		sluice_bind(ST(s), s2, &us2);
		sluice_close(ST(s), s2);
		if (s->link != &vd.kring)
			bad |= 1;
		s->link->ops->close(s->link);
		for (int i = 0; i < VD_NCALLS; i++)
			calls += vd.calls[i];
		if (calls || vd.n_post_send || vd.n_post_recv || vd.n_flows_destroyed != destroyed0)
			bad |= 2;
		if (vd.violations)
			bad |= 4;	/* e.g. the parent's rule destroyed from here */
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "fork: the child's stack runs on the kring link, no verbs call made there "
	       "(status %d)", status);
	tap_eq(vd.n_flows_live, flows, "fork: the parent's rules untouched");
	tap_ok(s->link && !strcmp(s->link->ops->name, "verbs"), "fork: the parent keeps verbs");
	sluice_close(ST(s), usd);
	mod_destroy(s);
	tap_eq(vd.live, 0, "fork: the parent's close frees everything");
}

/* The 5-tuple rule (a connected socket's filter) beats the 3-tuple one. */
static void test_flow_rule_5tuple(void)
{
	struct sluice_filter f = { .protocol = IPPROTO_TCP, .laddr = htonl(0x0a090001),
				   .raddr = htonl(0x0a090002), .lport = htons(5000),
				   .rport = htons(40000) };
	struct sl_verbs_flow_rule r5, r3;

	tap_eq(sl_verbs_flow_rule(&r5, &f, 1), 0, "5-tuple: rule built");
	f.raddr = 0;
	f.rport = 0;
	tap_eq(sl_verbs_flow_rule(&r3, &f, 1), 0, "3-tuple: rule built");
	tap_ok(r5.attr.priority < r3.attr.priority, "5-tuple priority %u before 3-tuple %u",
	       r5.attr.priority, r3.attr.priority);
	tap_ok(r5.ipv4.val.src_ip == htonl(0x0a090002) && r5.ipv4.mask.src_ip == 0xffffffffu &&
	       r5.ipv4.val.dst_ip == htonl(0x0a090001) && r5.ipv4.mask.dst_ip == 0xffffffffu &&
	       r5.l4.val.src_port == htons(40000) && r5.l4.mask.src_port == 0xffff &&
	       r5.l4.val.dst_port == htons(5000) && r5.l4.mask.dst_port == 0xffff,
	       "5-tuple: both addresses and ports exact");
	f.rport = htons(1);
	tap_eq(sl_verbs_flow_rule(&r5, &f, 1), -EINVAL, "half a remote is refused");
	f.rport = 0;
	f.protocol = IPPROTO_ICMP;
	tap_eq(sl_verbs_flow_rule(&r5, &f, 1), -EINVAL, "a protocol other than TCP/UDP is refused");
}

/* Without SLUICE_IB_UD_CSUM: no IP_CSUM asked, IBV_WC_IP_CSUM_OK ignored. */
static void test_enhanced_no_csum(void)
{
	struct sl_stack *s = mod_stack("vnocs");
	struct sockaddr_in us6000 = fx_addr("10.9.0.1", 6000), peer = fx_addr("10.9.0.2", 7);
	struct sluice_link_report rep;
	uint8_t f[128], got[32];
	size_t n;
	int usd;

	enh_device(0);
	/* A path that needs a GRH. */
	vd.nr.hop_limit = 2;
	vd.nr.traffic_class = 0x20;
	vd.nr.flow_label = 0x12345;
	tap_eq(sluice_link_device(ST(s), &rep), 0, "nocsum: linked");
	tap_ok(!strcmp(rep.link, "verbs-enhanced"), "nocsum: verbs-enhanced");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_bind(ST(s), usd, &us6000);
	sluice_sendto(ST(s), usd, "x", 1, 0, &peer);
	tap_eq(vd.n_sent, 1, "nocsum: sent");
	tap_eq(vd.sent[0].send_flags, IBV_SEND_SIGNALED, "nocsum: no IBV_SEND_IP_CSUM");
	tap_ok(vd.ahs[0].is_global == 1 && vd.ahs[0].grh.hop_limit == 2 &&
	       vd.ahs[0].grh.traffic_class == 0x20 && vd.ahs[0].grh.flow_label == 0x12345 &&
	       !memcmp(vd.ahs[0].grh.dgid.raw, peer_gid, 16) && vd.ahs[0].dlid == 0x17,
	       "nocsum: a path with hop_limit gets a GRH: dgid, hop limit, class, flow label");
	n = udp_frame(f, 6000, "bad", false);
	vd_rx(f, (uint32_t)n, IBV_WC_IP_CSUM_OK, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_eq(sluice_recvfrom(ST(s), usd, got, sizeof(got), MSG_DONTWAIT, NULL), -EAGAIN,
	       "nocsum: IBV_WC_IP_CSUM_OK not trusted without the capability: bad one dropped");
	n = udp_frame(f, 6000, "good", true);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_eq(sluice_recvfrom(ST(s), usd, got, sizeof(got), MSG_DONTWAIT, NULL), 4,
	       "nocsum: a good checksum checked in software is delivered");
	sluice_close(ST(s), usd);
	mod_destroy(s);
	tap_eq(vd.live, 0, "nocsum: nothing left");
}

struct fallback_case {
	const char *what;
	uint32_t ib_flags;		/* 0: the enhanced default */
	enum vd_call fail;
	int err;
	int want;			/* rep.verbs_err */
	const char *why;		/* in rep.why */
	bool listener;			/* a filter exists before linking */
};

static void test_fallbacks(void)
{
	static const uint32_t full = SLUICE_IB_IPOIB | SLUICE_IB_SOURCE_QPN | SLUICE_IB_FLOW_STEER;
	static const struct fallback_case cases[] = {
		{ "not IPoIB", 0x80000000u, VD_NCALLS, 0, -EOPNOTSUPP, "not an IPoIB", false },
		{ "legacy IPoIB", SLUICE_IB_IPOIB | SLUICE_IB_FLOW_STEER, VD_NCALLS, 0,
		  -EOPNOTSUPP, "legacy IPoIB", false },
		{ "connected mode", full | SLUICE_IB_CONNECTED, VD_NCALLS, 0, -EOPNOTSUPP,
		  "connected mode", false },
		{ "no flow steering", SLUICE_IB_IPOIB | SLUICE_IB_SOURCE_QPN, VD_NCALLS, 0,
		  -EOPNOTSUPP, "flow steering", false },
		{ "IFINFO fails", 0, VD_ifinfo, ENOTTY, -ENOTTY, "IFINFO", false },
		{ "IFINFO port 0", 0x40000000u, VD_NCALLS, 0, -EPROTO, "bad IPoIB facts", false },
		{ "no such device", 0, VD_open_device, ENODEV, -ENODEV, "opening ib device mlx5_0",
		  false },
		{ "port query", 0, VD_query_port, EIO, -EIO, "port 1", false },
		{ "alloc_pd", 0, VD_alloc_pd, ENOMEM, -ENOMEM, "verbs resources", false },
		{ "reg_mr", 0, VD_reg_mr, EFAULT, -EFAULT, "verbs resources", false },
		{ "channel", 0, VD_create_comp_channel, EMFILE, -EMFILE, "verbs resources", false },
		{ "create_cq", 0, VD_create_cq, ENOMEM, -ENOMEM, "verbs resources", false },
		{ "no CAP_NET_RAW", 0, VD_create_qp_ex, EPERM, -EPERM, "CAP_NET_RAW", false },
		{ "not mlx5", 0, VD_create_qp_ex, EOPNOTSUPP, -EOPNOTSUPP, "mlx5", false },
		{ "RTR", 0, VD_modify_qp_rtr, EINVAL, -EINVAL, "state 2", false },
		{ "RTS", 0, VD_modify_qp_rts, EINVAL, -EINVAL, "state 3", false },
		{ "arm CQ", 0, VD_req_notify_cq, EIO, -EIO, "arming", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct fallback_case *c = &cases[i];
		struct sl_stack *s = mod_stack("vfb");
		struct sockaddr_in any5000 = fx_addr("0.0.0.0", 5000);
		uint32_t free0 = s->lib->buf_free_count;
		struct sluice_link_report rep;
		int lsd = -1, ret;

		enh_device(0);
		if (c->ib_flags & 0x40000000u)
			vd.ifinfo.ib_port = 0;	/* a module's nonsense */
		else if (c->ib_flags)
			vd.ifinfo.ib_flags = c->ib_flags & ~0x80000000u;
		if (c->fail != VD_NCALLS)
			vd.fail[c->fail] = c->err;
		if (c->listener) {
			lsd = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
			sluice_bind(ST(s), lsd, &any5000);
			sluice_listen(ST(s), lsd, 4);
		}
		ret = sluice_link_device(ST(s), &rep);
		tap_ok(ret == 0 && !strcmp(rep.link, "kring") && s->link == &vd.kring,
		       "fallback %s: the kring link (ret %d, %s)", c->what, ret, rep.link);
		tap_ok(rep.ipoib == (c->ib_flags != 0x80000000u && c->fail != VD_ifinfo),
		       "fallback %s: ipoib %d as IFINFO said", c->what, rep.ipoib);
		tap_ok(rep.verbs_err == c->want && strstr(rep.why, c->why),
		       "fallback %s: %d \"%s\"", c->what, rep.verbs_err, rep.why);
		tap_ok(vd.live == 0 && vd.n_ah_live == 0,
		       "fallback %s: every verbs object made was destroyed (%d live)", c->what,
		       vd.live);
		if (lsd >= 0)
			sluice_close(ST(s), lsd);
		tap_ok(s->lib->buf_free_count == free0, "fallback %s: every buffer back (%u of %u)",
		       c->what, s->lib->buf_free_count, free0);
		mod_destroy(s);
	}
	/* And no link at all when even the rings fail. */
	{
		struct sl_stack *s = mod_stack("vfb2");
		struct sluice_link_report rep;

		enh_device(0);
		vd.fail[VD_link_kring] = ENOENT;
		tap_eq(sluice_link_device(ST(s), &rep), -ENOENT, "no rings: the kring error");
		tap_ok(rep.kring_err == -ENOENT && s->link == NULL && vd.live == 0,
		       "no rings: no link, nothing made");
		mod_destroy(s);
	}
	/*
	 * A P_Key child whose P_Key is not in the port's table (the module
	 * says SLUICE_IB_PKEY_ABSENT): ipoib keeps it down, so no link, not
	 * even the rings, and the reason names the P_Key; the same interface
	 * in enhanced mode too (its index would be another partition's).
	 */
	for (int enh = 0; enh < 2; enh++) {
		struct sl_stack *s = mod_stack("vfb3");
		struct sluice_link_report rep;
		int ret;

		enh_device(0);
		if (!enh)
			vd.ifinfo.ib_flags = SLUICE_IB_IPOIB;
		vd.ifinfo.ib_flags |= SLUICE_IB_PKEY_ABSENT;
		vd.ifinfo.pkey = 0x8002;
		ret = sluice_link_device(ST(s), &rep);
		tap_ok(ret == -ENETDOWN && s->link == NULL && vd.live == 0,
		       "P_Key absent (%s): no link (ret %d, link %s)", enh ? "enhanced" : "legacy",
		       ret, s->link ? "made" : "none");
		tap_ok(strstr(rep.why, "P_Key 0x8002") && strstr(rep.why, "not in"),
		       "P_Key absent (%s): the reason says so: \"%s\"", enh ? "enhanced" : "legacy",
		       rep.why);
		mod_destroy(s);
	}
}

/* Plain UD over RoCE: sends batched at unlock, buffers never reused early. */
static void test_plain_batching(void)
{
	struct sl_stack *s = fx_stack("vbat", "10.9.0.1", NULL);
	struct sluice_verbs_config cfg = { .flags = SLUICE_VERBS_NO_MCAST, .sq_size = 32 };
	uint8_t hw[SL_IPOIB_HWLEN] = { 0, (PEER_QPN >> 16) & 0xff, (PEER_QPN >> 8) & 0xff,
				       PEER_QPN & 0xff };
	uint32_t peer = htonl(0x0a090002), free0 = s->lib->buf_free_count;
	struct sluice_verbs_info info;
	int bad = 0;

	vd_reset(IBV_LINK_LAYER_ETHERNET);
	memcpy(hw + 4, peer_gid, 16);
	tap_eq(sluice_link_verbs(ST(s), &cfg), 0, "plain: link up on RoCE");
	tap_ok(vd.qp_attr.qp_type == IBV_QPT_UD && vd.qp_attr.cap.max_send_wr == 32 &&
	       vd.n_modify == 3 && vd.modify_mask[0] == (IBV_QP_STATE | IBV_QP_PKEY_INDEX |
							  IBV_QP_PORT | IBV_QP_QKEY),
	       "plain: UD QP, INIT with P_Key index, port, Q_Key");
	tap_eq(sluice_verbs_neigh_add(ST(s), peer, hw), 0, "plain: static neighbour");
	tap_ok(vd.ahs[0].is_global == 1 && !memcmp(vd.ahs[0].grh.dgid.raw, peer_gid, 16),
	       "plain: RoCE AH is global, to the GID");

	/* Ten packets in one hold of the lock, each buffer freed and
	 * scribbled on at once: what goes out must be what was sent. */
	sl_lock(s);
	for (int i = 0; i < 10; i++) {
		uint32_t idx = sl_buf_alloc(s);
		uint8_t *d = sl_buf_data(s, idx);

		memset(d, 0x40 + i, 300);
		d[0] = 0x45;
		sl_buf(s, idx)->len = 300;
		if (s->link->ops->tx(s->link, s, idx, peer))
			bad++;
		memset(d, 0xee, 300);
		sl_buf_free(s, idx);
	}
	tap_eq(vd.n_post_send, 0, "plain: nothing posted before the unlock");
	sl_unlock(s);
	tap_eq(bad, 0, "plain: ten tx accepted");
	tap_eq(vd.n_post_send, 1, "plain: one post_send at unlock for ten packets");
	tap_ok(vd.n_sent == 10 && vd.n_signalled == 1 &&
	       (vd.sent[9].send_flags & IBV_SEND_SIGNALED), "plain: ten WRs, only the last signalled");
	bad = 0;
	for (int i = 0; i < 10; i++)
		if (vd.sent[i].len != 304 || vd.sent[i].data[5] != 0x40 + i ||
		    vd.sent[i].lkey == vd.mr[0]->lkey)
			bad++;
	tap_eq(bad, 0, "plain: each WR carries its own packet, from the link's send ring MR");
	tap_ok(vd.sent[0].send_flags == 0, "plain: no IP_CSUM on a device without it");

	/* Many more, in separate unlocks, the device completing as polled. */
	for (int i = 0; i < 200; i++) {
		uint32_t idx;

		sl_lock(s);
		idx = sl_buf_alloc(s);
		memset(sl_buf_data(s, idx), i, 100);
		sl_buf(s, idx)->len = 100;
		s->link->ops->tx(s->link, s, idx, peer);
		sl_buf_free(s, idx);
		sl_unlock(s);
	}
	tap_ok(vd.reuse_violations == 0 && vd.corrupt_violations == 0,
	       "plain: 210 sends: no slot reused while the device owned it, none changed");

	/* A device that completes nothing: the ring fills, then tx fails
	 * after the bounded wait, without touching a slot in use. */
	vd.hold_completions = true;
	{
		int ok = 0, err = 0;

		for (int i = 0; i < 34; i++) {
			uint32_t idx;

			sl_lock(s);
			idx = sl_buf_alloc(s);
			sl_buf(s, idx)->len = 64;
			if (s->link->ops->tx(s->link, s, idx, peer))
				err++;
			else
				ok++;
			sl_buf_free(s, idx);
			sl_unlock(s);
		}
		tap_ok(ok == 32 && err == 2, "plain: a full ring of 32 held: %d sent, %d refused", ok,
		       err);
		tap_eq(vd.reuse_violations, 0, "plain: still no slot reused");
	}
	vd.hold_completions = false;
	sluice_verbs_info(ST(s), &info);
	tap_ok(info.tx_timeout == 2 && info.tx_wrs == (uint64_t)vd.n_sent,
	       "plain: info counts the 2 timeouts and every WR posted");
	s->link->ops->close(s->link);
	tap_ok(vd.live == 0 && s->lib->buf_free_count == free0, "plain: close frees everything");
	fx_destroy(s);
}

/* ARP neighbours age out: asked again after 30 s, dropped unanswered. */
static void test_neigh_expiry(void)
{
	struct sl_stack *s = fx_stack("vexp", "10.9.0.1", NULL);
	struct sockaddr_in peer = fx_addr("10.9.0.2", 7);
	uint8_t hw[SL_IPOIB_HWLEN] = { 0, (PEER_QPN >> 16) & 0xff, (PEER_QPN >> 8) & 0xff,
				       PEER_QPN & 0xff };
	uint64_t dropped;
	uint8_t f[128];
	int usd, arps;
	size_t n;

	/* Link layer unspecified: ARP over the group, no RoCE IPv6 join. */
	vd_reset(IBV_LINK_LAYER_UNSPECIFIED);
	memcpy(hw + 4, peer_gid, 16);
	tap_eq(sluice_link_verbs(ST(s), NULL), 0, "expiry: link up with the broadcast group");
	tap_eq(vd.mcast_attached, 1, "expiry: attached to the broadcast group");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_sendto(ST(s), usd, "a", 1, 0, &peer);
	tap_ok(vd.n_sent == 1 && vd.sent[0].remote_qpn == SL_IPOIB_MCAST_QPN &&
	       vd.sent[0].data[0] == 0x08 && vd.sent[0].data[1] == 0x06,
	       "expiry: an ARP request to the group");
	/* The reply. */
	sl_ipoib_hdr_put(f, ETHERTYPE_ARP_);
	{
		struct sluice_verbs_info info;

		sluice_verbs_info(ST(s), &info);
		n = SL_IPOIB_HLEN + sl_ipoib_arp_build(f + SL_IPOIB_HLEN, 2, hw, htonl(0x0a090002),
						       info.hwaddr, htonl(0x0a090001));
	}
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == 2 && vd.sent[1].remote_qpn == PEER_QPN && vd.n_ah_live == 2,
	       "expiry: the reply resolves it, the held packet goes, one AH for it");
	fx_clock_us += 29ull * 1000000;
	sluice_stack_poll(ST(s));
	tap_eq(vd.n_sent, 2, "expiry: at 29 s nothing is asked");
	fx_clock_us += 2ull * 1000000;
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == 3 && vd.sent[2].remote_qpn == SL_IPOIB_MCAST_QPN,
	       "expiry: at 31 s it is asked again");
	sluice_sendto(ST(s), usd, "b", 1, 0, &peer);
	tap_ok(vd.n_sent == 4 && vd.sent[3].remote_qpn == PEER_QPN,
	       "expiry: still used while asked again");
	arps = 0;
	for (int i = 0; i < 5; i++) {
		fx_clock_us += 1100000;
		sluice_stack_poll(ST(s));
	}
	for (int i = 0; i < vd.n_sent; i++)
		arps += vd.sent[i].remote_qpn == SL_IPOIB_MCAST_QPN;
	tap_eq(vd.n_ah_live, 1, "expiry: unanswered, dropped with its AH (the group's remains)");
	sluice_sendto(ST(s), usd, "c", 1, 0, &peer);
	tap_ok(vd.sent[vd.n_sent - 1].remote_qpn == SL_IPOIB_MCAST_QPN && arps == 4,
	       "expiry: the next send ARPs afresh (%d requests in all before it)", arps);
	/* Two more wait behind it; the reply sends the three in order
	 * (proto/ip.c, sl_hold_add()). */
	dropped = fx_counter(s, "arp_hold_dropped");
	sluice_sendto(ST(s), usd, "d", 1, 0, &peer);
	sluice_sendto(ST(s), usd, "e", 1, 0, &peer);
	arps = vd.n_sent;
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == arps + 3 && vd.sent[arps].remote_qpn == PEER_QPN &&
	       vd.sent[arps + 2].remote_qpn == PEER_QPN &&
	       vd.sent[arps].data[vd.sent[arps].len - 1] == 'c' &&
	       vd.sent[arps + 1].data[vd.sent[arps + 1].len - 1] == 'd' &&
	       vd.sent[arps + 2].data[vd.sent[arps + 2].len - 1] == 'e',
	       "expiry: three waited; the reply sends them in order (%d sent)", vd.n_sent - arps);
	tap_eq(fx_counter(s, "arp_hold_dropped"), dropped, "expiry: none of them dropped");
	sluice_close(ST(s), usd);
	s->link->ops->close(s->link);
	tap_eq(vd.live, 0, "expiry: close frees everything");
	fx_destroy(s);
}

/*
 * InfiniBand link layer, plain UD (issue 14 item 11): peers learn our
 * address from the interface's ARP, so they answer the interface's QPN,
 * never a plain QP's own: such a link could send and never receive a
 * reply.  It is refused; the enhanced link (source QPN = the
 * interface's) is the way onto IB.  Its neighbours come from the
 * module's path records, checked here.
 */
static void test_plain_ib(void)
{
	struct sl_stack *s = fx_stack("vib", "10.9.0.1", NULL);
	struct sockaddr_in peer = fx_addr("10.9.0.2", 7);
	struct sluice_link_report rep;
	struct sluice_verbs_info info;
	int usd, ret;

	enh_device(0);
	tap_eq(sluice_link_verbs(ST(s), NULL), -EOPNOTSUPP,
	       "ib plain: refused on a stack with no module interface (no path records)");
	tap_eq(vd.live, 0, "ib plain: nothing left");
	s->module_backed = true;
	s->ifindex = 7;
	memset(&info, 0, sizeof(info));
	ret = sluice_link_verbs(ST(s), NULL);
	if (!ret)
		sluice_verbs_info(ST(s), &info);
	tap_ok(ret != 0 || info.qpn == vd.ifinfo.qpn,
	       "ib plain: no link under a QPN peers do not answer (ret %d, QPN 0x%x, the "
	       "interface's 0x%x)", ret, info.qpn, vd.ifinfo.qpn);
	tap_ok(ret == -EOPNOTSUPP && vd.live == 0, "ib plain: -EOPNOTSUPP, nothing left (%d)", ret);
	if (!ret)
		s->link->ops->close(s->link);
	fx_destroy(s);
	/* The module's neighbours and paths, on the enhanced link. */
	s = mod_stack("vib2");
	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "ib kneigh: enhanced link up on ib0");
	tap_eq(vd.calls[VD_attach_mcast], 0, "ib kneigh: no ARP group (the module resolves)");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	vd.nr.path_state = SLUICE_NEIGH_RES_PENDING;
	sluice_sendto(ST(s), usd, "a", 1, 0, &peer);
	tap_eq(vd.n_sent, 0, "ib kneigh: path pending: held");
	vd.nr.path_state = SLUICE_NEIGH_RES_VALID;
	fx_clock_us += 150000;
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == 1 && vd.sent[0].remote_qpn == PEER_QPN && vd.ahs[0].dlid == 0x17 &&
	       vd.ahs[0].sl == 3, "ib kneigh: path valid: sent through an AH with DLID and SL");
	/* A neighbour the module fails: asked once, not for every packet;
	 * asked again by the timer, dropped after its tries. */
	{
		struct sockaddr_in gone = fx_addr("10.9.0.9", 7);
		int asked = vd.calls[VD_neigh_resolve];

		vd.nr.state = SLUICE_NEIGH_RES_FAILED;
		for (int i = 0; i < 5; i++)
			sluice_sendto(ST(s), usd, "z", 1, 0, &gone);
		tap_eq(vd.calls[VD_neigh_resolve] - asked, 1,
		       "ib kneigh: a failed neighbour is asked once for 5 packets");
		for (int i = 0; i < 40; i++) {
			fx_clock_us += 110000;
			sluice_stack_poll(ST(s));
		}
		tap_eq(vd.calls[VD_neigh_resolve] - asked, 30,
		       "ib kneigh: asked again by the timer, 30 times in all, then given up");
		for (int i = 0; i < 3; i++)
			sluice_sendto(ST(s), usd, "z", 1, 0, &gone);
		tap_eq(vd.calls[VD_neigh_resolve] - asked, 31, "ib kneigh: given up: the next packet asks afresh");
	}
	sluice_close(ST(s), usd);
	mod_destroy(s);
	tap_eq(vd.live, 0, "ib kneigh: close frees everything");
}

/*
 * Issue 14 item 3: CAP_NET_RAW is checked when a flow rule is made
 * (ib_uverbs_ex_create_flow), not when the source-QPN QP is: without it
 * the link must not come up "enhanced" with every rule failing.  A trial
 * rule at setup finds out, says which capability and how to get it, and
 * leaves the kring path.
 */
static void test_trial_rule_no_net_raw(void)
{
	struct sl_stack *s = mod_stack("vtrial");
	struct sluice_link_report rep;
	uint32_t free0 = s->lib->buf_free_count;

	enh_device(0);
	vd.no_net_raw = true;
	tap_eq(sluice_link_device(ST(s), &rep), 0, "trial: sluice_link_device succeeds");
	tap_ok(!strcmp(rep.link, "kring") && s->link == &vd.kring,
	       "trial: no CAP_NET_RAW: the kring path, not enhanced (%s)", rep.link);
	tap_ok(rep.verbs_err == -EPERM && strstr(rep.why, "CAP_NET_RAW") &&
	       strstr(rep.why, "`sluice run`") && strlen(rep.why) < sizeof(rep.why) - 1,
	       "trial: the reason names CAP_NET_RAW and how to get it (\"%s\")", rep.why);
	tap_ok(vd.live == 0 && vd.n_flows_live == 0, "trial: nothing left of the verbs link");
	tap_eq(s->lib->buf_free_count, free0, "trial: every buffer back");
	mod_destroy(s);
	/* With the capability the trial rule is made and removed at once. */
	s = mod_stack("vtrial2");
	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "trial: with CAP_NET_RAW linked");
	tap_ok(!strcmp(rep.link, "verbs-enhanced") && vd.n_flows_live == 0,
	       "trial: enhanced, no rule left over from the trial (%s, %d live)", rep.link,
	       vd.n_flows_live);
	mod_destroy(s);
	tap_eq(vd.live, 0, "trial: close frees everything");
}

/* Item 4: broadcast and multicast sends in enhanced mode go out (through
 * the interface: ipoib joins the group and sends). */
static void test_enh_bcast_mcast(void)
{
	struct sl_stack *s = mod_stack("vbc");
	struct sockaddr_in us = fx_addr("10.9.0.1", 6200), bc = fx_addr("255.255.255.255", 7);
	struct sockaddr_in sbc = fx_addr("10.9.0.255", 7), mc = fx_addr("224.1.2.3", 7);
	struct sluice_link_report rep;
	int one = 1, usd;

	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "bcast: linked");
	tap_ok(!strcmp(rep.link, "verbs-enhanced"), "bcast: enhanced (%s)", rep.why);
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_bind(ST(s), usd, &us);
	sluice_setsockopt(ST(s), usd, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	tap_eq(sluice_sendto(ST(s), usd, "b", 1, 0, &bc), 1, "bcast: 255.255.255.255 sent");
	tap_eq(sluice_sendto(ST(s), usd, "s", 1, 0, &sbc), 1, "bcast: subnet broadcast sent");
	tap_eq(sluice_sendto(ST(s), usd, "m", 1, 0, &mc), 1, "bcast: 224.1.2.3 sent");
	tap_ok(vd.kring_tx == 3 && vd.kring_tx_nh[2] == mc.sin_addr.s_addr,
	       "bcast: all three through the interface (kring): %d", vd.kring_tx);
	tap_eq(vd.violations, 0, "bcast: no multicast attach tried on the underlay QP");
	sluice_close(ST(s), usd);
	mod_destroy(s);
}

/* Item 9: receive buffers hold IB MTU + the 40-byte GRH area: a full-size
 * datagram from a peer at the interface MTU (2044) must not be a length
 * error (which puts the QP in the error state). */
static void test_rx_buffer_size(void)
{
	struct sl_stack *s = mod_stack("vrxsz");
	struct sluice_link_report rep;
	uint8_t f[2100];
	int small = 0;

	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "rxsize: linked");
	for (int i = 0; i < vd.n_rq; i++)
		small += vd.rq[i].len < 2048 + SL_IPOIB_GRH_LEN;
	tap_ok(small == 0, "rxsize: every receive WR holds IB MTU 2048 + GRH 40 (%u)", vd.rq[0].len);
	/* 2048 bytes: IPoIB header + a 2044-byte IPv4 packet. */
	memset(f, 0, sizeof(f));
	sl_ipoib_hdr_put(f, ETHERTYPE_IP_);
	{
		static const uint8_t zero[2048];

		fx_ip(f + SL_IPOIB_HLEN, "10.9.0.2", "10.9.0.1", IPPROTO_UDP, zero, 2044 - 20);
	}
	tap_eq(vd_rx(f, 2048, 0, PEER_QPN, NULL), 0, "rxsize: a 2048-byte message is received");
	sluice_stack_poll(ST(s));
	tap_eq(vd.qp_state, IBV_QPS_RTS, "rxsize: the QP stays in RTS");
	tap_ok(vd.n_rq > 0 && vd.violations == 0, "rxsize: receives still posted");
	mod_destroy(s);
	tap_eq(vd.live, 0, "rxsize: close frees everything");
}

/* Item 12: a controlled Q_Key (bit 31, IBA 10.2.4): a WR naming it sends
 * the QP's own Q_Key instead (10.2.5), and an underlay QP takes no Q_Key
 * (state-only modify): enhanced mode would send with the wrong key. */
static void test_controlled_qkey(void)
{
	struct sl_stack *s = mod_stack("vqk");
	struct sockaddr_in us = fx_addr("10.9.0.1", 6300), peer = fx_addr("10.9.0.2", 7);
	struct sluice_link_report rep;
	int usd, bad = 0;

	enh_device(0);
	vd.ifinfo.qkey = 0x80010000;
	tap_eq(sluice_link_device(ST(s), &rep), 0, "qkey: linked");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_bind(ST(s), usd, &us);
	sluice_sendto(ST(s), usd, "q", 1, 0, &peer);
	for (int i = 0; i < vd.n_sent; i++)
		bad += vd.sent[i].wire_qkey != 0x80010000;
	tap_ok(bad == 0 && (vd.n_sent > 0 || (!strcmp(rep.link, "kring") &&
					      strstr(rep.why, "Q_Key"))),
	       "qkey: packets carry the group's Q_Key, or the kring path is used and says "
	       "why (%d sent, %d wrong, %s: %s)", vd.n_sent, bad, rep.link, rep.why);
	sluice_close(ST(s), usd);
	mod_destroy(s);
	/* Plain UD: setting a controlled Q_Key on the QP needs privilege. */
	{
		struct sl_stack *p = fx_stack("vqk2", "10.9.0.1", NULL);
		struct sluice_verbs_config cfg = { .flags = SLUICE_VERBS_NO_MCAST,
						   .qkey = 0x80010000 };

		vd_reset(IBV_LINK_LAYER_ETHERNET);
		tap_eq(sluice_link_verbs(ST(p), &cfg), -EPERM,
		       "qkey: plain UD with a controlled Q_Key and no privilege: -EPERM");
		tap_eq(vd.live, 0, "qkey: nothing left");
		fx_destroy(p);
	}
}

/*
 * Item 5: the QP falls into the error state (IBV_EVENT_QP_FATAL; every
 * posted receive flushed): the link resets it, posts receives again,
 * re-makes its rules, and traffic flows without a restart.
 */
static void test_qp_error_recovery(void)
{
	struct sl_stack *s = mod_stack("vrec");
	struct sockaddr_in us = fx_addr("10.9.0.1", 6000), peer7 = fx_addr("10.9.0.2", 7);
	struct sluice_link_report rep;
	uint32_t free0 = s->lib->buf_free_count;
	uint8_t f[128], got[32];
	int usd, rq;
	size_t n;

	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "recover: linked");
	usd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_bind(ST(s), usd, &us);
	sluice_connect(ST(s), usd, &peer7);
	rq = vd.n_rq;
	vd_qp_error(true);
	sluice_stack_poll(ST(s));
	fx_clock_us += 200000;
	sluice_stack_poll(ST(s));
	tap_eq(vd.qp_state, IBV_QPS_RTS, "recover: the QP is back in RTS");
	tap_eq(vd.n_rq, rq, "recover: the receive queue is full again");
	tap_ok(vd.n_flows_live == 1, "recover: the socket's rule is there (%d)", vd.n_flows_live);
	tap_ok(vd.n_ev_got == 1 && vd.n_ev_acked == 1, "recover: the event got and acked");
	n = udp_frame(f, 6000, "again", true);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, NULL);
	sluice_stack_poll(ST(s));
	tap_eq(sluice_recvfrom(ST(s), usd, got, sizeof(got), MSG_DONTWAIT, NULL), 5,
	       "recover: a datagram after it is delivered");
	tap_ok(sl_counter_sum(s, SL_C_verbs_qp_reset) == 1 &&
	       sl_counter_sum(s, SL_C_verbs_async_event) == 1,
	       "recover: counted: verbs_qp_reset 1, verbs_async_event 1");
	/* A length error (no event): the completion says it, same recovery. */
	{
		static uint8_t big[4200];

		memset(big, 0, sizeof(big));
		sl_ipoib_hdr_put(big, ETHERTYPE_IP_);
		vd_rx(big, 4100, 0, PEER_QPN, NULL);
		sluice_stack_poll(ST(s));
		fx_clock_us += 200000;
		sluice_stack_poll(ST(s));
		tap_ok(vd.qp_state == IBV_QPS_RTS && vd.n_rq == rq,
		       "recover: after an error completion too (state %d, %d posted)",
		       (int)vd.qp_state, vd.n_rq);
	}
	/* A port flap: down, then active: the port's events are taken, the
	 * neighbours' paths asked again, and the socket still works. */
	/* Events are taken by the 100 ms timer (and before sleeping). */
	vd_event(IBV_EVENT_PORT_ERR, 1);
	fx_clock_us += 200000;
	sluice_stack_poll(ST(s));
	vd_event(IBV_EVENT_PORT_ACTIVE, 1);
	vd_event(IBV_EVENT_CLIENT_REREGISTER, 1);
	fx_clock_us += 200000;
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_ev == 0 && vd.n_ev_got == 4 && vd.n_ev_acked == vd.n_ev_got,
	       "recover: port events taken and acked (%d)", vd.n_ev_got);
	tap_ok(sl_counter_sum(s, SL_C_verbs_port_down) == 1 &&
	       sl_counter_sum(s, SL_C_verbs_path_flush) == 2,
	       "recover: counted: verbs_port_down 1, verbs_path_flush 2");
	n = udp_frame(f, 6000, "flap", true);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, NULL);
	sluice_stack_poll(ST(s));
	tap_eq(sluice_recvfrom(ST(s), usd, got, sizeof(got), MSG_DONTWAIT, NULL), 4,
	       "recover: received after the flap");
	/* Issue 14 item 8: the SM changes, ipoib rejoins the broadcast group
	 * under a new Q_Key; mid-rejoin the module knows none (no
	 * SLUICE_IB_QKEY_SA): the old key is kept until the new one shows. */
	{
		struct sockaddr_in peer = fx_addr("10.9.0.2", 7);

		vd.ifinfo.ib_flags &= ~SLUICE_IB_QKEY_SA;
		vd.ifinfo.qkey = 0x0b1b;
		vd_event(IBV_EVENT_SM_CHANGE, 1);
		fx_clock_us += 200000;
		sluice_stack_poll(ST(s));
		sluice_sendto(ST(s), usd, "k1", 2, 0, &peer);
		tap_eq(vd.sent[vd.n_sent - 1].wire_qkey, 0x0b1b, "rejoin: mid-rejoin the old Q_Key");
		vd.ifinfo.ib_flags |= SLUICE_IB_QKEY_SA;
		vd.ifinfo.qkey = 0x00002c2c;
		fx_clock_us += 200000;
		sluice_stack_poll(ST(s));
		sluice_sendto(ST(s), usd, "k2", 2, 0, &peer);
		tap_eq(vd.sent[vd.n_sent - 1].wire_qkey, 0x2c2c,
		       "rejoin: once the group's record is back, its new Q_Key");
		tap_eq(sl_counter_sum(s, SL_C_verbs_qkey_change), 1, "rejoin: counted: verbs_qkey_change");
	}
	sluice_close(ST(s), usd);
	s->link->ops->close(s->link);
	tap_ok(vd.live == 0 && s->lib->buf_free_count == free0,
	       "recover: close frees everything, every buffer back");
	mod_destroy(s);
}

/* ---- a port flap under a TCP connection (issue 14 item 2) ---------- */

/*
 * The wire between stack S (the verbs link on the model, plain UD on
 * RoCE, as Soft-RoCE in the VM) and peer stack P (a capture link): S's
 * posted sends go to P, P's packets come to S as receive completions;
 * nothing crosses while the port is down.
 */
struct flap_wire {
	struct sl_stack *s, *p;
	struct capture cap;
	int fwd;			/* vd.sent[] taken so far */
	bool down;
};

static void flap_pump(struct flap_wire *w)
{
	uint8_t f[2100];

	sluice_stack_poll(ST(w->s));
	for (; w->fwd < vd.n_sent && w->fwd < VD_SENT_MAX; w->fwd++) {
		const struct vd_sent *x = &vd.sent[w->fwd];

		if (!w->down && x->len > SL_IPOIB_HLEN)
			fx_input(w->p, x->data + SL_IPOIB_HLEN, x->len - SL_IPOIB_HLEN);
	}
	/* The record is a window: start it again once taken. */
	vd.n_sent = 0;
	w->fwd = 0;
	sluice_stack_poll(ST(w->p));
	for (unsigned int i = 0; i < w->cap.n; i++) {
		if (w->down || (size_t)w->cap.len[i] + SL_IPOIB_HLEN > sizeof(f))
			continue;
		sl_ipoib_hdr_put(f, ETHERTYPE_IP_);
		memcpy(f + SL_IPOIB_HLEN, w->cap.frame[i], w->cap.len[i]);
		vd_rx(f, w->cap.len[i] + SL_IPOIB_HLEN, 0, PEER_QPN, peer_gid);
	}
	w->cap.n = 0;
	sluice_stack_poll(ST(w->s));
}

/* Run the wire for ms of virtual time, 5 ms a step, S sending what its
 * socket takes of the pattern (up to 2 KiB a step) and P reading and
 * checking it. */
static void flap_run(struct flap_wire *w, int csd, int asd, long *sent, long *got, bool *bad,
		     long total, int ms)
{
	static uint8_t buf[8192];

	for (int t = 0; t < ms; t += 5) {
		long n, step = 0;

		/* 2 KiB a step: 400 KB/s, so the transfer lasts through a flap. */
		while (*sent < total && step < 2048) {
			long k = total - *sent < 2048 - step ? total - *sent : 2048 - step;

			for (long i = 0; i < k; i++)
				buf[i] = (uint8_t)((*sent + i) * 7 + ((*sent + i) >> 8));
			n = sluice_send(ST(w->s), csd, buf, (size_t)k, MSG_DONTWAIT);
			if (n <= 0)
				break;
			*sent += n;
			step += n;
		}
		flap_pump(w);
		while ((n = sluice_recv(ST(w->p), asd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
			for (long i = 0; i < n; i++)
				if (buf[i] != (uint8_t)((*got + i) * 7 + ((*got + i) >> 8)))
					*bad = true;
			*got += n;
		}
		fx_clock_us += 5000;
	}
}

/*
 * A TCP connection carrying data when the port goes down for 2 s and
 * comes back (Soft-RoCE's PORT_ERR and PORT_ACTIVE when its netdev goes
 * down and up): every byte arrives, in order; while down the link posts
 * nothing (each send would fail and put the QP in error); the flushes of
 * the one reset are not counted as bad frames.  Then the same with the
 * PORT_ACTIVE event lost: the link finds the port back by asking it.
 */
static void test_port_flap_tcp(void)
{
	struct sl_stack *s = fx_stack("vflap", "10.9.0.1", NULL);
	struct sluice_verbs_config cfg = { .flags = SLUICE_VERBS_NO_MCAST };
	uint8_t hw[SL_IPOIB_HWLEN] = { 0, (PEER_QPN >> 16) & 0xff, (PEER_QPN >> 8) & 0xff,
				       PEER_QPN & 0xff };
	struct sockaddr_in any7 = fx_addr("0.0.0.0", 7), p7 = fx_addr("10.9.0.2", 7);
	static struct flap_wire w;
	uint32_t free0 = s->lib->buf_free_count;
	long sent = 0, got = 0, total = 300000;
	int lsd, csd, asd = -1, one = 1;
	bool bad = false;
	uint64_t resets0, txdown;

	/* The stacks' clock is the test's: no helper may finish their
	 * closing connections after us (it would keep the stacks' files). */
	setenv("SLUICE_NO_HELPER", "1", 1);
	vd_reset(IBV_LINK_LAYER_ETHERNET);
	memset(&w, 0, sizeof(w));
	w.s = s;
	w.p = fx_stack("vflapp", "10.9.0.2", &w.cap);
	memcpy(hw + 4, peer_gid, 16);
	tap_eq(sluice_link_verbs(ST(s), &cfg), 0, "flap: S's verbs link up (RoCE)");
	tap_eq(sluice_verbs_neigh_add(ST(s), htonl(0x0a090002), hw), 0, "flap: P a static neighbour");
	lsd = sluice_socket(ST(w.p), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_setsockopt(ST(w.p), lsd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tap_ok(sluice_bind(ST(w.p), lsd, &any7) == 0 && sluice_listen(ST(w.p), lsd, 4) == 0,
	       "flap: P listens on 7");
	csd = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(ST(s), csd, &p7);
	for (int i = 0; i < 40 && asd < 0; i++) {
		flap_pump(&w);
		asd = sluice_accept(ST(w.p), lsd, NULL);
		fx_clock_us += 5000;
	}
	tap_ok(asd >= 0, "flap: connected over the verbs link");
	flap_run(&w, csd, asd, &sent, &got, &bad, total, 300);
	tap_ok(got > 0 && got < total, "flap: data flowing (%ld of %ld bytes)", got, total);

	/* Down: the event, and the wire carries nothing. */
	resets0 = sl_counter_sum(s, SL_C_verbs_qp_reset);
	vd_event(IBV_EVENT_PORT_ERR, 1);
	w.down = true;
	flap_run(&w, csd, asd, &sent, &got, &bad, total, 2000);
	txdown = sl_counter_sum(s, SL_C_verbs_tx_port_down);
	tap_ok(txdown > 0, "flap: while down, packets dropped unposted (verbs_tx_port_down %llu)",
	       (unsigned long long)txdown);
	tap_ok(vd.n_sent_port_down <= 1,
	       "flap: at most the send before the event was read reached the down port (%d)",
	       vd.n_sent_port_down);
	tap_ok(sl_counter_sum(s, SL_C_verbs_qp_reset) - resets0 <= 1,
	       "flap: so at most one QP reset (%llu)",
	       (unsigned long long)(sl_counter_sum(s, SL_C_verbs_qp_reset) - resets0));
	/* Up: TCP resends; everything arrives. */
	vd_event(IBV_EVENT_PORT_ACTIVE, 1);
	w.down = false;
	for (int i = 0; i < 60 && got < total; i++)
		flap_run(&w, csd, asd, &sent, &got, &bad, total, 500);
	tap_ok(got == total && !bad, "flap: every byte across, in order and intact (%ld of %ld)",
	       got, total);
	tap_eq(sl_counter_sum(s, SL_C_eth_rx_bad), 0,
	       "flap: flushed receive WRs are not counted as bad frames");
	tap_eq(sl_counter_sum(s, SL_C_verbs_port_down), 1, "flap: counted: verbs_port_down 1");

	/* Again, the PORT_ACTIVE event lost: the 100 ms timer asks the port. */
	sent = got = 0;
	sluice_close(ST(s), csd);
	sluice_close(ST(w.p), asd);
	flap_run(&w, -1, -1, &sent, &got, &bad, 0, 500);
	csd = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(ST(s), csd, &p7);
	asd = -1;
	for (int i = 0; i < 40 && asd < 0; i++) {
		flap_pump(&w);
		asd = sluice_accept(ST(w.p), lsd, NULL);
		fx_clock_us += 5000;
	}
	flap_run(&w, csd, asd, &sent, &got, &bad, total, 300);
	vd_event(IBV_EVENT_PORT_ERR, 1);
	w.down = true;
	flap_run(&w, csd, asd, &sent, &got, &bad, total, 1000);
	vd.port.state = IBV_PORT_ACTIVE;	/* and no event says so */
	w.down = false;
	for (int i = 0; i < 60 && got < total; i++)
		flap_run(&w, csd, asd, &sent, &got, &bad, total, 500);
	tap_ok(got == total && !bad,
	       "flap, PORT_ACTIVE lost: the link asked the port, every byte across (%ld of %ld)",
	       got, total);
	sluice_close(ST(s), csd);
	sluice_close(ST(w.p), asd);
	sluice_close(ST(w.p), lsd);
	flap_run(&w, -1, -1, &sent, &got, &bad, 0, 1000);
	s->link->ops->close(s->link);
	fx_destroy(w.p);
	tap_ok(vd.live == 0 && s->lib->buf_free_count == free0, "flap: close frees everything");
	s->link = NULL;
	fx_destroy(s);
	unsetenv("SLUICE_NO_HELPER");
}

/* ---- stacks shared by several processes (issue 14 items 1 and 6) ---- */

#define IP_US	htonl(0x0a090001)	/* 10.9.0.1 */
#define IP_PEER	htonl(0x0a090002)	/* 10.9.0.2 */

static uint16_t lport_of(struct sl_stack *s, int sd)
{
	return sl_sock(s, (uint32_t)sd)->lport;
}

/* A process of the test that waits for a byte on fd, then exits with code. */
static void hold_until(int fd, int code)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(code);
}

/*
 * Item 1, fork: a parent with the enhanced link, a listener and a
 * connection forks (a pre-forking server).  While the parent is busy
 * elsewhere (it runs no stack code), whatever the child may wait on must
 * not be steered to the parent's QP: the shared listener's SYNs and the
 * connection both now hold go through the rings, which either reads; the
 * child's own connection likewise.  A connection the parent makes after
 * the fork is its own: a 5-tuple rule to its QP, taking that connection
 * only.
 */
static void test_shared_fork(void)
{
	struct sl_stack *s = mod_stack("vshf");
	struct sockaddr_in any = fx_addr("0.0.0.0", 5100), p80 = fx_addr("10.9.0.2", 80);
	struct sockaddr_in p81 = fx_addr("10.9.0.2", 81), p82 = fx_addr("10.9.0.2", 82);
	struct sluice_link_report rep;
	int lsd, c1, c3, rep_p[2], go[2], status = -1;
	uint16_t c2_port = 0;
	pid_t pid;

	enh_device(0);
	tap_eq(sluice_link_device(ST(s), &rep), 0, "shared fork: linked");
	lsd = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
	sluice_bind(ST(s), lsd, &any);
	sluice_listen(ST(s), lsd, 8);
	c1 = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(ST(s), c1, &p80);
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(80), IP_US, lport_of(s, c1)), getpid(),
	       "shared fork: before the fork, the parent's connection reaches its QP");
	if (pipe(rep_p) || pipe(go))
		return;
	pid = fork();
	if (pid == 0) {
		int c2 = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		uint16_t p;

		sluice_connect(ST(s), c2, &p81);
		p = lport_of(s, c2);
		if (write(rep_p[1], &p, sizeof(p)) != sizeof(p))
			_exit(2);
		hold_until(go[0], 0);
	}
	if (read(rep_p[0], &c2_port, sizeof(c2_port)) != sizeof(c2_port))
		c2_port = 0;
	/* The parent runs no stack code from here to the checks. */
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(40000), IP_US, htons(5100)), 0,
	       "shared fork: a SYN to the shared listener takes the rings (not the parent's QP)");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(80), IP_US, lport_of(s, c1)), 0,
	       "shared fork: the connection both now hold takes the rings");
	tap_ok(c2_port && vd_steer(IPPROTO_TCP, IP_PEER, htons(81), IP_US, c2_port) != getpid(),
	       "shared fork: the child's own connection is not steered to the parent");
	c3 = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(ST(s), c3, &p82);
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(82), IP_US, lport_of(s, c3)), getpid(),
	       "shared fork: a connection the parent makes after the fork reaches its QP");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(83), IP_US, lport_of(s, c3)), 0,
	       "shared fork: its rule is a 5-tuple one (another peer port to that port: rings)");
	if (write(go[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "shared fork: the child ran (%d)",
	       status);
	close(rep_p[0]);
	close(rep_p[1]);
	close(go[0]);
	close(go[1]);
	sluice_close(ST(s), c3);
	sluice_close(ST(s), c1);
	sluice_close(ST(s), lsd);
	mod_destroy(s);
	tap_eq(vd.live, 0, "shared fork: the parent's close frees everything");
}

/* In a forked process: attach to stack name, as a process that came by
 * name does, and make its own enhanced link (SIGKILLed or released). */
static struct sl_stack *attach_linked(const char *name)
{
	struct sluice_stack *st;
	struct sluice_link_report rep;
	struct sl_stack *s;

	if (sluice_stack_attach(name, &st))
		_exit(3);
	s = (struct sl_stack *)st;
	s->module_backed = true;
	s->filters = true;
	s->ifindex = 7;
	if (sluice_link_device(st, &rep) || strcmp(rep.link, "verbs-enhanced"))
		_exit(4);
	return s;
}

/* In a forked process: a TCP connection from us:lport to the peer's rport. */
static void connect_from(struct sl_stack *s, uint16_t lport, uint16_t rport)
{
	struct sockaddr_in us = fx_addr("10.9.0.1", lport), to = fx_addr("10.9.0.2", rport);
	int sd = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

	if (sluice_bind(ST(s), sd, &us) || sluice_connect(ST(s), sd, &to) != -EINPROGRESS)
		_exit(5);
}

/*
 * Item 1, by name: A and B attach to one stack by name, each with its own
 * enhanced link; A has a listener and a connection, B a connection.
 * Each connection reaches its own process's QP; A's listener takes the
 * rings (B may share the port with it); A's death leaves B's traffic
 * where it was.
 */
static void test_shared_by_name(void)
{
	struct sl_stack *s = mod_stack("vshn");
	int go_a[2], go_b[2], ready[2], status = -1;
	pid_t a, b;
	char c;

	enh_device(0);
	if (pipe(go_a) || pipe(go_b) || pipe(ready))
		return;
	a = fork();
	if (a == 0) {
		struct sl_stack *sa = attach_linked(s->name);
		struct sockaddr_in any = fx_addr("0.0.0.0", 5200);
		int lsd = sluice_socket(ST(sa), SLUICE_SOCK_STREAM);

		if (sluice_bind(ST(sa), lsd, &any) || sluice_listen(ST(sa), lsd, 8))
			_exit(6);
		connect_from(sa, 6200, 90);
		if (write(ready[1], "a", 1) != 1)
			_exit(2);
		hold_until(go_a[0], 0);
	}
	if (read(ready[0], &c, 1) != 1)
		c = 0;
	b = fork();
	if (b == 0) {
		struct sl_stack *sb = attach_linked(s->name);

		connect_from(sb, 6300, 91);
		if (write(ready[1], "b", 1) != 1)
			_exit(2);
		hold_until(go_b[0], 0);
	}
	if (read(ready[0], &c, 1) != 1)
		c = 0;
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(90), IP_US, htons(6200)), a,
	       "by name: A's connection reaches A's QP");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(91), IP_US, htons(6300)), b,
	       "by name: B's connection reaches B's QP");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(99), IP_US, htons(6300)), 0,
	       "by name: B's rule is a 5-tuple one");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(40000), IP_US, htons(5200)), 0,
	       "by name: A's listener takes the rings (any process may hold its port)");
	kill(a, SIGKILL);
	waitpid(a, &status, 0);
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(91), IP_US, htons(6300)), b,
	       "by name: A killed, B's connection still reaches B's QP");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(90), IP_US, htons(6200)), 0,
	       "by name: A's rule went with A");
	if (write(go_b[1], "x", 1) != 1)
		kill(b, SIGKILL);
	status = -1;
	waitpid(b, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "by name: B ran (%d)", status);
	close(go_a[0]);
	close(go_a[1]);
	close(go_b[0]);
	close(go_b[1]);
	close(ready[0]);
	close(ready[1]);
	mod_destroy(s);
}

/*
 * Item 6: a parent with the enhanced link and a connection forks a child
 * and dies; the child lives on.  The dead parent's QP and rules must go
 * at once (the child holds nothing of its uverbs file), and a new process
 * using the same port and peer (another stack on the interface) gets the
 * traffic, not the dead parent's QP.
 */
static void test_dead_parent_child_lives(void)
{
	struct sl_stack *s = mod_stack("vsh6");
	int ready[2], go_k[2], go_n[2], status = -1;
	pid_t p, k = 0, n;

	enh_device(0);
	if (pipe(ready) || pipe(go_k) || pipe(go_n))
		return;
	p = fork();
	if (p == 0) {
		struct sluice_link_report rep;
		pid_t kid;

		if (sluice_link_device(ST(s), &rep))
			_exit(4);
		kid = fork();
		if (kid == 0)
			hold_until(go_k[0], 0);
		/* After the fork: the parent's alone, its rule kept. */
		connect_from(s, 6400, 92);
		if (write(ready[1], &kid, sizeof(kid)) != sizeof(kid))
			_exit(2);
		hold_until(go_k[0], 0);
	}
	if (read(ready[0], &k, sizeof(k)) != sizeof(k))
		k = 0;
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(92), IP_US, htons(6400)), p,
	       "dead parent: its connection reaches its QP while it lives");
	kill(p, SIGKILL);
	waitpid(p, &status, 0);
	tap_ok(k > 0 && kill(k, 0) == 0, "dead parent: its child lives on");
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(92), IP_US, htons(6400)), 0,
	       "dead parent: its rule is gone with it, though its child lives");
	n = fork();
	if (n == 0) {
		struct sl_stack *s2 = mod_stack("vsh6n");
		struct sluice_link_report rep;

		if (sluice_link_device(ST(s2), &rep))
			_exit(4);
		char c;

		connect_from(s2, 6400, 92);
		if (write(ready[1], "n", 1) != 1)
			_exit(2);
		while (read(go_n[0], &c, 1) < 0 && errno == EINTR)
			;
		mod_destroy(s2);
		_exit(0);
	}
	{
		char c;

		if (read(ready[0], &c, 1) != 1)
			c = 0;
	}
	tap_eq(vd_steer(IPPROTO_TCP, IP_PEER, htons(92), IP_US, htons(6400)), n,
	       "dead parent: a new process on the same port and peer gets the traffic");
	if (write(go_k[1], "x", 1) != 1 || write(go_n[1], "x", 1) != 1) {
		kill(n, SIGKILL);
		kill(k, SIGKILL);
	}
	status = -1;
	waitpid(n, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "dead parent: the new process ran");
	if (k > 0)
		waitpid(k, NULL, 0);	/* ours: the test is the subreaper */
	close(ready[0]);
	close(ready[1]);
	close(go_k[0]);
	close(go_k[1]);
	close(go_n[0]);
	close(go_n[1]);
	mod_destroy(s);
}


/*
 * IPv6 on the plain UD link (issue 20 item 3, RFC 4391; link/verbs6.c):
 * a peer (PEER_QPN, peer_gid) simulated frame by frame.  Neighbour
 * Discovery with 20-byte link-layer address options (9.2), the
 * solicited-node group's MGID (4) for the solicitation, the stack's
 * groups attached, the datagram that waited sent to the peer's QPN and
 * GID, a solicitation answered, bad options dropped.
 */
#define ND6_NS	135
#define ND6_NA	136

/* An ND message from src to dst behind an IPoIB header: target, flags,
 * one link-layer address option of type opt (hw, 20 bytes in RFC 4391's
 * 24-byte option, or its first 6 in an Ethernet-sized 8-byte one). */
static size_t nd6_frame(uint8_t *out, uint8_t type, const uint8_t *src, const uint8_t *dst,
			const uint8_t *target, uint32_t flags, uint8_t opt, const uint8_t *hw,
			bool eth_size, uint8_t hlim)
{
	struct sl_ip6 *h = (struct sl_ip6 *)(out + SL_IPOIB_HLEN);
	uint8_t *ic = (uint8_t *)(h + 1);
	unsigned int olen = eth_size ? 8 : SL_IPOIB_ND_OPT_LEN, len = 24 + olen;
	uint16_t c;

	sl_ipoib_hdr_put(out, ETHERTYPE_IPV6_);
	memset(h, 0, sizeof(*h) + len);
	h->vtcfl = htonl(6u << 28);
	h->plen = htons((uint16_t)len);
	h->nxt = IPPROTO_ICMPV6_;
	h->hlim = hlim;
	memcpy(h->saddr, src, 16);
	memcpy(h->daddr, dst, 16);
	ic[0] = type;
	flags = htonl(flags);
	memcpy(ic + 4, &flags, 4);
	memcpy(ic + 8, target, 16);
	if (!opt) {
		len = 24;
		h->plen = htons((uint16_t)len);
	} else if (eth_size) {
		ic[24] = opt;
		ic[25] = 1;
		memcpy(ic + 26, hw, 6);
	} else {
		sl_ipoib_nd_opt_put(ic + 24, opt, hw);
	}
	c = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(src, dst, IPPROTO_ICMPV6_, len), ic, len));
	memcpy(ic + 2, &c, 2);
	return SL_IPOIB_HLEN + sizeof(*h) + len;
}

/* Is sent frame k an ND message of type from src to dst with a valid
 * checksum, for target, with our 20-byte address in its option? */
static bool nd6_sent_is(int k, uint8_t type, const uint8_t *src, const uint8_t *dst,
			const uint8_t *target, const uint8_t *hw)
{
	const struct vd_sent *t = &vd.sent[k];
	const struct sl_ip6 *h = (const struct sl_ip6 *)(t->data + SL_IPOIB_HLEN);
	const uint8_t *ic = (const uint8_t *)(h + 1);
	unsigned int len = 24 + SL_IPOIB_ND_OPT_LEN;

	return t->len == SL_IPOIB_HLEN + sizeof(*h) + len && t->data[0] == 0x86 &&
	       t->data[1] == 0xdd && h->nxt == IPPROTO_ICMPV6_ && h->hlim == 255 &&
	       ntohs(h->plen) == len && !memcmp(h->saddr, src, 16) && !memcmp(h->daddr, dst, 16) &&
	       ic[0] == type && ic[1] == 0 && !memcmp(ic + 8, target, 16) &&
	       ic[24] == (type == ND6_NS ? 1 : 2) && ic[25] == 3 && ic[26] == 0 && ic[27] == 0 &&
	       !memcmp(ic + 28, hw, SL_IPOIB_HWLEN) &&
	       sl_csum_fold(sl_csum_add(sl_csum_pseudo6(src, dst, IPPROTO_ICMPV6_, len), ic,
					len)) == 0;
}

/* A TCP segment from [peer]:80 to [me]:dport behind an IPoIB header. */
static size_t tcp6_frame(uint8_t *out, const uint8_t *peer, const uint8_t *me, uint16_t dport,
			 uint32_t seq, uint32_t ack, uint8_t flags, const char *data)
{
	struct sl_ip6 *h = (struct sl_ip6 *)(out + SL_IPOIB_HLEN);
	struct sl_tcph *t = (struct sl_tcph *)(h + 1);
	size_t n = data ? strlen(data) : 0, len = sizeof(*t) + n;
	uint16_t c;

	sl_ipoib_hdr_put(out, ETHERTYPE_IPV6_);
	memset(h, 0, sizeof(*h) + sizeof(*t));
	h->vtcfl = htonl(6u << 28);
	h->plen = htons((uint16_t)len);
	h->nxt = IPPROTO_TCP;
	h->hlim = 64;
	memcpy(h->saddr, peer, 16);
	memcpy(h->daddr, me, 16);
	t->sport = htons(80);
	t->dport = dport;
	t->seq = htonl(seq);
	t->ack = htonl(ack);
	t->off = 5 << 4;
	t->flags = flags;
	t->win = htons(65535);
	memcpy(t + 1, data ? data : "", n);
	c = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(peer, me, IPPROTO_TCP, (uint16_t)len), t, len));
	t->csum = c;
	return SL_IPOIB_HLEN + sizeof(*h) + len;
}

static void test_ipv6_nd(void)
{
	struct sl_stack *s = fx_stack("vnd6", "10.9.0.1", NULL);
	uint8_t me[16], peer[16], sol[16], mgid[16], want[16], hw_peer[SL_IPOIB_HWLEN];
	static const uint8_t all6[16] = { 0xff, 0x02, [15] = 1 };
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(7000),
				  .sin_addr.s_addr = SL_V6TOK_ME }, to, from;
	struct sluice_verbs_info info;
	struct sl_ipoib_addr pa = { .qpn = PEER_QPN };
	uint8_t f[256], got[64];
	const struct sl_ip6 *h;
	int sd, n0, ah0, joined;
	size_t n;
	long r;

	vd_reset(IBV_LINK_LAYER_UNSPECIFIED);
	memcpy(pa.gid, peer_gid, 16);
	sl_ipoib_hw_encode(hw_peer, &pa);
	inet_pton(AF_INET6, "fd00:9::1", me);
	inet_pton(AF_INET6, "fd00:9::2", peer);
	tap_eq(sluice_link_verbs(ST(s), NULL), 0, "nd6: plain UD link up with the broadcast group");
	tap_eq(sluice_stack_set_addr6(ST(s), me, 64), 0, "nd6: the stack's IPv6 address fd00:9::1/64");
	tap_ok(s->link->ops->tx6 != NULL, "nd6: the plain UD link carries IPv6 (tx6)");
	sluice_verbs_info(ST(s), &info);
	sd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	sl_lock(s);
	sl_sock(s, (uint32_t)sd)->flags |= SL_SF_V6;
	to = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(5555),
				   .sin_addr.s_addr = sl_v6tok_get(s, peer) };
	sl_unlock(s);
	tap_eq(sluice_bind(ST(s), sd, &at), 0, "nd6: a UDP socket on [fd00:9::1]:7000");

	/* The first datagram waits; a solicitation goes to the peer's
	 * solicited-node group ff02::1:ff00:2 as its MGID, to QPN 0xffffff. */
	n0 = vd.n_sent;
	ah0 = vd.n_ah;
	r = sluice_sendto(ST(s), sd, "hello6", 6, 0, &to);
	inet_pton(AF_INET6, "ff02::1:ff00:2", sol);
	inet_pton(AF_INET6, "ff12:601b:ffff::1:ff00:2", want);
	tap_ok(r == 6 && vd.n_sent == n0 + 1 && vd.sent[n0].remote_qpn == SL_IPOIB_MCAST_QPN &&
	       nd6_sent_is(n0, ND6_NS, me, sol, peer, info.hwaddr),
	       "nd6: a solicitation for fd00:9::2 to ff02::1:ff00:2, our 20-byte address in a 24-byte option");
	tap_ok(vd.n_ah == ah0 + 1 && vd.ahs[ah0].is_global && !memcmp(vd.ahs[ah0].grh.dgid.raw, want, 16),
	       "nd6: sent through an AH to MGID ff12:601b:ffff::1:ff00:2 (RFC 4391 4)");
	/* The stack's groups: the broadcast group, all-nodes and the
	 * solicited-node groups of its two addresses. */
	joined = 0;
	for (int i = 0; i < vd.n_mc_gid; i++) {
		uint8_t g[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff };

		memcpy(g + 13, me + 13, 3);
		sl_ipoib_mc6_mgid(mgid, g, vd.mc_gid[0]);
		joined |= !memcmp(vd.mc_gid[i], mgid, 16);
		sl_ipoib_mc6_mgid(mgid, all6, vd.mc_gid[0]);
		joined |= !memcmp(vd.mc_gid[i], mgid, 16) << 1;
		memcpy(g + 13, s->lib->ip6_ll + 13, 3);
		sl_ipoib_mc6_mgid(mgid, g, vd.mc_gid[0]);
		joined |= !memcmp(vd.mc_gid[i], mgid, 16) << 2;
	}
	tap_ok(vd.n_mc_gid == 4 && joined == 7,
	       "nd6: the QP attached to the MGIDs of all-nodes and both solicited-node groups (%d groups)",
	       vd.n_mc_gid);
	sl_ipoib_ll6(want, vd.gid.raw);
	tap_ok(s->lib->ip6_ll_state == SL_LL_VALID && !memcmp(s->lib->ip6_ll, want, 16) &&
	       (want[8] & 2), "nd6: the link-local address is the GID's (RFC 4391 8)");

	/* An NA with an Ethernet-sized option: not an IPoIB address. */
	n = nd6_frame(f, ND6_NA, peer, me, peer, 0x60000000u, 2, hw_peer, true, 255);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == n0 + 1 && fx_counter(s, "nd_rx_bad") == 1,
	       "nd6: an advertisement with an 8-byte address option: dropped, counted");
	/* One with hop limit 64: off-link, dropped (RFC 4861 7.1.2). */
	n = nd6_frame(f, ND6_NA, peer, me, peer, 0x60000000u, 2, hw_peer, false, 64);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == n0 + 1 && fx_counter(s, "nd_rx_bad") == 2,
	       "nd6: an advertisement with hop limit 64: dropped, counted");
	/* The answer: the datagram goes to the peer's QPN and GID. */
	n = nd6_frame(f, ND6_NA, peer, me, peer, 0x60000000u, 2, hw_peer, false, 255);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	h = (const struct sl_ip6 *)(vd.sent[n0 + 1].data + SL_IPOIB_HLEN);
	tap_ok(vd.n_sent == n0 + 2 && vd.sent[n0 + 1].remote_qpn == PEER_QPN &&
	       vd.sent[n0 + 1].data[0] == 0x86 && vd.sent[n0 + 1].data[1] == 0xdd &&
	       h->nxt == IPPROTO_UDP_ && !memcmp(h->daddr, peer, 16) && !memcmp(h->saddr, me, 16) &&
	       vd.sent[n0 + 1].len == SL_IPOIB_HLEN + 40 + 8 + 6 &&
	       !memcmp(vd.sent[n0 + 1].data + SL_IPOIB_HLEN + 48, "hello6", 6),
	       "nd6: the advertisement resolves it: the datagram that waited goes to QPN 0x%06x",
	       PEER_QPN);
	tap_ok(vd.n_ah == ah0 + 2 && !memcmp(vd.ahs[ah0 + 1].grh.dgid.raw, peer_gid, 16),
	       "nd6: ... through an AH to the peer's GID");
	r = sluice_sendto(ST(s), sd, "again", 5, 0, &to);
	tap_ok(r == 5 && vd.n_sent == n0 + 3 && vd.sent[n0 + 2].remote_qpn == PEER_QPN &&
	       vd.n_ah == ah0 + 2, "nd6: the next datagram goes at once, the same AH");

	/* The peer solicits our address: answered to its QPN, solicited and
	 * override, with our 20-byte address. */
	inet_pton(AF_INET6, "ff02::1:ff00:1", sol);
	n = nd6_frame(f, ND6_NS, peer, sol, me, 0, 1, hw_peer, false, 255);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_ok(vd.n_sent == n0 + 4 && vd.sent[n0 + 3].remote_qpn == PEER_QPN &&
	       nd6_sent_is(n0 + 3, ND6_NA, me, peer, me, info.hwaddr) &&
	       vd.sent[n0 + 3].data[SL_IPOIB_HLEN + 44] == 0x60,
	       "nd6: a solicitation for fd00:9::1 answered to the peer: S and O, our address");
	/* Another node's DAD for our address (from ::, no option): answered
	 * to all-nodes' MGID, override only (RFC 4861 7.2.4). */
	{
		static const uint8_t any[16];
		const struct sl_ip6 *nh6 = (const struct sl_ip6 *)(vd.sent[n0 + 4].data + SL_IPOIB_HLEN);
		uint8_t all_mgid[16];

		n = nd6_frame(f, ND6_NS, any, sol, me, 0, 0, hw_peer, false, 255);
		vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
		sluice_stack_poll(ST(s));
		sl_ipoib_mc6_mgid(all_mgid, all6, vd.mc_gid[0]);
		tap_ok(vd.n_sent == n0 + 5 && vd.sent[n0 + 4].remote_qpn == SL_IPOIB_MCAST_QPN &&
		       nd6_sent_is(n0 + 4, ND6_NA, me, all6, me, info.hwaddr) &&
		       vd.sent[n0 + 4].data[SL_IPOIB_HLEN + 44] == 0x20 && nh6->hlim == 255 &&
		       !memcmp(vd.ahs[vd.n_ah - 1].grh.dgid.raw, all_mgid, 16),
		       "nd6: another node's DAD for fd00:9::1: answered to all-nodes (its MGID), override only");
		n0++;
	}
	/* A solicitation for another address: not ours, not answered. */
	n = nd6_frame(f, ND6_NS, peer, sol, peer, 0, 1, hw_peer, false, 255);
	vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
	sluice_stack_poll(ST(s));
	tap_eq(vd.n_sent, n0 + 4, "nd6: a solicitation for another address: no answer");

	/* The peer's datagram reaches the socket. */
	{
		uint8_t pay[16];
		struct sl_ip6 *ih = (struct sl_ip6 *)(f + SL_IPOIB_HLEN);
		struct sl_udp *u = (struct sl_udp *)(ih + 1);
		uint16_t c;

		sl_ipoib_hdr_put(f, ETHERTYPE_IPV6_);
		memset(ih, 0, sizeof(*ih));
		ih->vtcfl = htonl(6u << 28);
		ih->plen = htons(8 + 5);
		ih->nxt = IPPROTO_UDP_;
		ih->hlim = 64;
		memcpy(ih->saddr, peer, 16);
		memcpy(ih->daddr, me, 16);
		u->sport = htons(5555);
		u->dport = htons(7000);
		u->len = htons(8 + 5);
		u->csum = 0;
		memcpy(u + 1, "ping6", 5);
		c = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(peer, me, IPPROTO_UDP_, 13), u, 13));
		u->csum = c ? c : 0xffff;
		vd_rx(f, SL_IPOIB_HLEN + 40 + 13, 0, PEER_QPN, peer_gid);
		sluice_stack_poll(ST(s));
		memset(pay, 0, sizeof(pay));
		r = sluice_recvfrom(ST(s), sd, got, sizeof(got), 0, &from);
		tap_ok(r == 5 && !memcmp(got, "ping6", 5) && from.sin_addr.s_addr == to.sin_addr.s_addr &&
		       from.sin_port == htons(5555), "nd6: the peer's datagram reaches the socket");
	}

	/* Unanswered: solicited three times, then dropped, counted. */
	{
		uint8_t other[16];
		struct sockaddr_in to2 = to;
		uint64_t failed = fx_counter(s, "nd_failed"), drop = fx_counter(s, "nd_unres_drop");
		int ns = 0;

		inet_pton(AF_INET6, "fd00:9::3", other);
		sl_lock(s);
		to2.sin_addr.s_addr = sl_v6tok_get(s, other);
		sl_unlock(s);
		n0 = vd.n_sent;
		sluice_sendto(ST(s), sd, "lost", 4, 0, &to2);
		for (int i = 0; i < 5; i++) {
			fx_clock_us += 1100000;
			sluice_stack_poll(ST(s));
		}
		for (int i = n0; i < vd.n_sent; i++)
			ns += vd.sent[i].remote_qpn == SL_IPOIB_MCAST_QPN;
		tap_ok(ns == 3 && vd.n_sent == n0 + 3 && fx_counter(s, "nd_failed") == failed + 1 &&
		       fx_counter(s, "nd_unres_drop") == drop + 1,
		       "nd6: an unanswered neighbour: 3 solicitations, then its datagram dropped (%d sent)",
		       vd.n_sent - n0);
	}
	/* TCP over IPv6 to the resolved peer: the handshake and a segment
	 * each way, through the peer's AH and QPN. */
	{
		struct sockaddr_in bnd = { .sin_family = AF_INET, .sin_port = htons(40000),
					   .sin_addr.s_addr = SL_V6TOK_ME };
		struct sockaddr_in dst = to;
		const struct sl_tcph *t;
		uint32_t iss = 0;
		int td, k;

		dst.sin_port = htons(80);
		td = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		sl_lock(s);
		sl_sock(s, (uint32_t)td)->flags |= SL_SF_V6;
		sl_unlock(s);
		sluice_bind(ST(s), td, &bnd);
		n0 = vd.n_sent;
		r = sluice_connect(ST(s), td, &dst);
		h = (const struct sl_ip6 *)(vd.sent[n0].data + SL_IPOIB_HLEN);
		t = (const struct sl_tcph *)(h + 1);
		tap_ok(r == -EINPROGRESS && vd.n_sent == n0 + 1 && vd.sent[n0].remote_qpn == PEER_QPN &&
		       h->nxt == IPPROTO_TCP && t->flags == TH_SYN_ && t->dport == htons(80) &&
		       !memcmp(h->daddr, peer, 16),
		       "tcp6: connect sends the SYN to the peer's QPN (%ld)", r);
		iss = ntohl(t->seq);
		n = tcp6_frame(f, peer, me, t->sport, 5000, iss + 1, TH_SYN_ | TH_ACK_, NULL);
		vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
		sluice_stack_poll(ST(s));
		r = sluice_send(ST(s), td, "tcp6!", 5, 0);
		k = vd.n_sent - 1;
		h = (const struct sl_ip6 *)(vd.sent[k].data + SL_IPOIB_HLEN);
		t = (const struct sl_tcph *)(h + 1);
		tap_ok(r == 5 && vd.sent[k].remote_qpn == PEER_QPN && ntohs(h->plen) == 20 + 5 &&
		       ntohl(t->seq) == iss + 1 && ntohl(t->ack) == 5001 &&
		       !memcmp(vd.sent[k].data + SL_IPOIB_HLEN + 40 + 20, "tcp6!", 5),
		       "tcp6: established; the stack's data goes to the peer's QPN (%ld)", r);
		n = tcp6_frame(f, peer, me, t->sport, 5001, iss + 6, TH_ACK_ | TH_PSH_, "back");
		vd_rx(f, (uint32_t)n, 0, PEER_QPN, peer_gid);
		sluice_stack_poll(ST(s));
		memset(got, 0, sizeof(got));
		r = sluice_recv(ST(s), td, got, sizeof(got), 0);
		tap_ok(r == 4 && !memcmp(got, "back", 4), "tcp6: the peer's data reaches the socket (%ld)",
		       r);
		sluice_close(ST(s), td);
	}
	sluice_close(ST(s), sd);
	s->link->ops->close(s->link);
	tap_ok(vd.live == 0 && vd.n_mc_gid == 0, "nd6: close frees every AH and leaves every group");
	fx_destroy(s);
}

int main(void)
{
	test_enhanced_attrs();
	test_flow_rule_5tuple();
	test_enhanced_fork();
	test_enhanced_no_csum();
	test_fallbacks();
	test_plain_batching();
	test_neigh_expiry();
	test_ipv6_nd();
	test_plain_ib();
	test_trial_rule_no_net_raw();
	test_enh_bcast_mcast();
	test_rx_buffer_size();
	test_controlled_qkey();
	test_qp_error_recovery();
	test_port_flap_tcp();
	/* Several processes: the device's rules seen by all of them. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	vd_fabric_init();
	test_shared_fork();
	test_shared_by_name();
	test_dead_parent_child_lives();
	tap_ok(vd.violations == 0, "model: no call the verbs rules refuse was made (%s)",
	       vd.last_violation);
	sl_verbs = &sl_verbs_real;
	return tap_done();
}
