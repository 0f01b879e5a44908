// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv6 on the plain UD verbs link (issue 20 item 3, RFC 4391): the link
 * resolves its IPv6 neighbours itself, as it does IPv4's with IPoIB ARP
 * (link/verbs.c), because an IPoIB neighbour is a QPN and a GID, which
 * proto/ip6.c's Ethernet Neighbour Discovery cannot hold:
 *
 *   tx6 -> a group: its MGID (sl_ipoib_mc6_mgid(), RFC 4391 4) through
 *          an address handle kept for it, to QPN 0xffffff
 *       -> a neighbour: its AH and QPN, or held while a solicitation with
 *          our 20-byte address (RFC 4391 9.2) goes to its solicited-node
 *          group
 *   rx  -> ICMPv6 types 133..137 (Neighbour Discovery): here, never
 *          proto/ip6.c's; NS for our addresses answered with an NA
 *          carrying our address, NA (and an NS's source address) resolve
 *       -> everything else: sl_ip6_input()
 *
 * The stack's groups (all-nodes and the solicited-node groups of its
 * addresses) are attached to the QP, on RoCE also joined on the netdev as
 * the broadcast group is; the stack's link-local address is RFC 4391 8's,
 * made from the port GID when its IPv6 address is set.  Enhanced mode
 * sends and receives IPv6 on the kring link underneath (the kernel's ND
 * and multicast joins; no IPv6 flow rules yet).  Not done: DAD of the
 * link-local address (the GID is unique on its subnet), NUD's probe
 * states (a resolved entry is asked again after 30 s as IPv4's is),
 * routers, and the IB link layer's path records (plain UD is RoCE's).
 */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "os/os.h"
#include "link/verbs_int.h"

#define ND_RS_		133
#define ND_REDIRECT_	137
#define ND_NS_		135
#define ND_NA_		136
#define ND_OPT_SLLA_	1
#define ND_OPT_TLLA_	2
#define ND_NA_SOLICITED_ 0x40000000u
#define ND_NA_OVERRIDE_	0x20000000u
#define ND_RETRANS_MS	1000	/* RFC 4861 10: RETRANS_TIMER */
#define ND_TRIES	3	/* MAX_MULTICAST_SOLICIT */
#define ND_REACHABLE_MS	30000	/* as the IPv4 neighbours' */

static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };

static bool zero16(const uint8_t *a)
{
	static const uint8_t z[16];

	return !memcmp(a, z, 16);
}

static bool ll_valid(const struct sl_stack *s)
{
	return SL_READ_ONCE(s->lib->ip6_ll_state) == SL_LL_VALID;
}

/* One of the stack's own unicast addresses. */
static bool ours(const struct sl_stack *s, const uint8_t *a)
{
	return (!zero16(s->lib->ip6_addr) && !memcmp(a, s->lib->ip6_addr, 16)) ||
	       (ll_valid(s) && !memcmp(a, s->lib->ip6_ll, 16));
}

/* RFC 4291 2.7.1: ff02::1:ffXX:XXXX of a. */
static void sol_node(uint8_t g[16], const uint8_t *a)
{
	static const uint8_t pre[13] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };

	memcpy(g, pre, 13);
	memcpy(g + 13, a + 13, 3);
}

/* ---- groups ------------------------------------------------------------ */

static int mc6_roce(struct verbs_link *v, const uint8_t mgid[16], int opt)
{
	struct ipv6_mreq mr;

	if (v->mc_sock < 0 || !v->mc_ifindex)
		return 0;
	memcpy(&mr.ipv6mr_multiaddr, mgid, 16);
	mr.ipv6mr_interface = (unsigned int)v->mc_ifindex;
	return sl_sys_setsockopt(v->mc_sock, IPPROTO_IPV6, opt, &mr, sizeof(mr)) ? -errno : 0;
}

static void mc6_leave_all(struct verbs_link *v)
{
	for (unsigned int i = 0; i < v->mc6_n; i++) {
		mc6_roce(v, v->mc6_joined[i].raw, IPV6_LEAVE_GROUP);
		VB->detach_mcast(v->qp, &v->mc6_joined[i], 0);
	}
	v->mc6_n = 0;
}

/*
 * Lock held: the stack's groups attached for its addresses as they are
 * now (all-nodes, the solicited-node groups of its global and link-local
 * addresses), and its link-local address made from the GID once it has
 * an IPv6 address.  Cheap when nothing changed.
 */
void sl_verbs6_sync(struct verbs_link *v, struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	/* As union ibv_gid: the verbs calls take one, 8-byte aligned. */
	union ibv_gid want[VERBS_MC6_JOIN];
	uint8_t g[16];
	unsigned int n = 0;

	if (v->under || !v->mcast || zero16(r->ip6_addr) || !memcmp(v->mc6_for, r->ip6_addr, 16))
		return;
	if (r->ip6_ll_state == SL_LL_NONE) {
		sl_ipoib_ll6(r->ip6_ll, v->gid.raw);
		sl_store_release(&r->ip6_ll_state, SL_LL_VALID);
	}
	mc6_leave_all(v);
	sl_ipoib_mc6_mgid(want[n++].raw, all_nodes, v->mgid);
	sol_node(g, r->ip6_addr);
	sl_ipoib_mc6_mgid(want[n++].raw, g, v->mgid);
	if (ll_valid(s) && memcmp(r->ip6_ll + 13, r->ip6_addr + 13, 3)) {
		sol_node(g, r->ip6_ll);
		sl_ipoib_mc6_mgid(want[n++].raw, g, v->mgid);
	}
	for (unsigned int i = 0; i < n; i++) {
		int ret = VB->attach_mcast(v->qp, &want[i], 0);

		if (!ret && mc6_roce(v, want[i].raw, IPV6_JOIN_GROUP)) {
			VB->detach_mcast(v->qp, &want[i], 0);
			ret = -1;
		}
		if (ret) {
			v->mcast_err = ret > 0 ? ret : EINVAL;
			continue;
		}
		v->mc6_joined[v->mc6_n++] = want[i];
	}
	memcpy(v->mc6_for, r->ip6_addr, 16);
}

/* The AH for a group's MGID: one of a few kept (made on first use; the
 * oldest replaced, as the IPv4 neighbours' AHs are when they go). */
static struct ibv_ah *mc6_ah(struct verbs_link *v, const uint8_t *group)
{
	uint8_t mgid[16];
	unsigned int k;

	sl_ipoib_mc6_mgid(mgid, group, v->mgid);
	for (k = 0; k < VERBS_MC6_AH; k++)
		if (v->mc6_ah[k].ah && !memcmp(v->mc6_ah[k].mgid, mgid, 16))
			return v->mc6_ah[k].ah;
	k = v->mc6_ah_next++ % VERBS_MC6_AH;
	if (v->mc6_ah[k].ah)
		VB->destroy_ah(v->mc6_ah[k].ah);
	v->mc6_ah[k].ah = sl_verbs_ah_make(v, mgid, NULL);
	memcpy(v->mc6_ah[k].mgid, mgid, 16);
	return v->mc6_ah[k].ah;
}

/* ---- neighbours --------------------------------------------------------- */

static struct verbs_neigh6 *n6_find(struct verbs_link *v, const uint8_t *ip)
{
	for (int i = 0; i < VERBS_NEIGH6_MAX; i++)
		if (v->neigh6[i].state != VN_FREE && !memcmp(v->neigh6[i].ip, ip, 16))
			return &v->neigh6[i];
	return NULL;
}

static void n6_clear(struct sl_stack *s, struct verbs_neigh6 *n)
{
	if (n->ah)
		VB->destroy_ah(n->ah);
	if (s) {
		sl_verbs_hold_mark(s, n->hold_idx, 0);
		sl_hold_drop(s, &n->hold_idx, SL_C_nd_unres_drop);
	}
	memset(n, 0, sizeof(*n));
	n->hold_idx = SLUICE_IDX_NONE;
}

static struct verbs_neigh6 *n6_new(struct verbs_link *v, struct sl_stack *s, const uint8_t *ip)
{
	struct verbs_neigh6 *n = NULL;

	for (int i = 0; i < VERBS_NEIGH6_MAX; i++) {
		struct verbs_neigh6 *c = &v->neigh6[i];

		if (c->state == VN_FREE) {
			n = c;
			break;
		}
		if (!n || c->updated_ms < n->updated_ms)
			n = c;
	}
	n6_clear(s, n);
	memcpy(n->ip, ip, 16);
	return n;
}

/* n at the 20-byte address hw (an AH made if the GID changed); resolved,
 * what waited goes, oldest first.  0 or -errno. */
static int n6_set(struct verbs_link *v, struct sl_stack *s, struct verbs_neigh6 *n,
		  const uint8_t hw[SL_IPOIB_HWLEN])
{
	struct sl_ipoib_addr a;
	uint32_t h, steps = 0;

	sl_ipoib_hw_decode(hw, &a);
	if (!n->ah || memcmp(n->gid, a.gid, 16)) {
		struct ibv_ah *ah = sl_verbs_ah_make(v, a.gid, NULL);

		if (!ah)
			return errno ? -errno : -ENOMEM;
		if (n->ah)
			VB->destroy_ah(n->ah);
		n->ah = ah;
		memcpy(n->gid, a.gid, 16);
	}
	n->qpn = a.qpn & SL_IPOIB_QPN_MASK;
	n->state = VN_VALID;
	n->updated_ms = sl_now(s) / 1000;
	n->probe_ms = 0;
	n->tries = 0;
	h = sl_hold_take(s, &n->hold_idx);
	sl_verbs_hold_mark(s, h, 0);
	while (sl_buf_next(s, h, &steps)) {
		uint32_t next = sl_hold_next(s, h);

		sl_count(s, sl_verbs_send(v, s, h, ETHERTYPE_IPV6_, n->ah, n->qpn) ?
			    SL_C_link_tx_err : SL_C_link_tx);
		sl_buf_free(s, h);
		h = next;
	}
	return 0;
}

/* ---- Neighbour Discovery messages --------------------------------------- */

/* An NS (for target, to its solicited-node group) or an NA (target ours,
 * to dst), with our 20-byte address; through sl_ip6_output() and tx6. */
static void nd_send(struct verbs_link *v, struct sl_stack *s, uint8_t type, const uint8_t *target,
		    const uint8_t *src, const uint8_t *dst, uint32_t flags)
{
	const unsigned int len = sizeof(struct sl_icmp6) + 16 + SL_IPOIB_ND_OPT_LEN;
	uint32_t idx = sl_buf_alloc(s);
	struct sl_icmp6 *ic;
	uint8_t *p;

	if (idx == SLUICE_IDX_NONE)
		return;
	ic = (struct sl_icmp6 *)(sl_buf_base(s, idx) + SL_HEADROOM + sizeof(struct sl_ip6));
	memset(ic, 0, sizeof(*ic));
	ic->type = type;
	ic->data = htonl(flags);
	p = (uint8_t *)(ic + 1);
	memcpy(p, target, 16);
	sl_ipoib_nd_opt_put(p + 16, type == ND_NS_ ? ND_OPT_SLLA_ : ND_OPT_TLLA_, v->hw);
	ic->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo6(src, dst, IPPROTO_ICMPV6_, len), ic,
					    len));
	/* RFC 4861 7.1.1: hop limit 255, which receivers check. */
	sl_ip6_build(s, idx, IPPROTO_ICMPV6_, src, dst, (uint16_t)len, 0, 0, 255);
	sl_count(s, type == ND_NS_ ? SL_C_nd_ns_tx : SL_C_nd_na_tx);
	sl_ip6_output(s, idx);
}

static void nd_solicit(struct verbs_link *v, struct sl_stack *s, const uint8_t *target)
{
	const uint8_t *src = sl_ip6_is_ll(target) && ll_valid(s) ? s->lib->ip6_ll
								   : s->lib->ip6_addr;
	uint8_t dst[16];

	sol_node(dst, target);
	nd_send(v, s, ND_NS_, target, src, dst, 0);
}

/* An ND message (ICMPv6 at body, plen bytes, checked to be in the
 * buffer) from ip6. */
static void nd_input(struct verbs_link *v, struct sl_stack *s, const struct sl_ip6 *ip6,
		     const uint8_t *body, unsigned int plen)
{
	const uint8_t *target = body + 8, *hw;
	bool ns = body[0] == ND_NS_;
	struct verbs_neigh6 *n;

	sl_count(s, ns ? SL_C_nd_ns_rx : SL_C_nd_na_rx);
	if (ip6->hlim != 255 || body[1] != 0 || plen < 24 || sl_ip6_is_mcast(target) ||
	    sl_csum_fold(sl_csum_add(sl_csum_pseudo6(ip6->saddr, ip6->daddr, IPPROTO_ICMPV6_,
						     plen), body, plen)) != 0 ||
	    sl_ipoib_nd_opts(body + 24, plen - 24, ns ? ND_OPT_SLLA_ : ND_OPT_TLLA_, &hw)) {
		sl_count(s, SL_C_nd_rx_bad);
		return;
	}
	if (!ns) {
		/* 7.2.5: an answer for an entry we have. */
		n = n6_find(v, target);
		if (n && hw)
			n6_set(v, s, n, hw);
		return;
	}
	/* 7.2.3: for one of our addresses. */
	if (!ours(s, target)) {
		sl_count(s, SL_C_icmp6_rx_ignored);
		return;
	}
	/* 7.2.4: another node's DAD (from ::, to the solicited-node group,
	 * no address option, RFC 4861 7.1.1) for our address: answered to
	 * all-nodes, not solicited, as Linux's ndisc_recv_ns(). */
	if (zero16(ip6->saddr)) {
		if (hw || !sl_ip6_is_mcast(ip6->daddr))
			sl_count(s, SL_C_nd_rx_bad);
		else
			nd_send(v, s, ND_NA_, target, target, all_nodes, ND_NA_OVERRIDE_);
		return;
	}
	/* The sender's address makes or refreshes its entry. */
	if (hw) {
		n = n6_find(v, ip6->saddr);
		if (!n)
			n = n6_new(v, s, ip6->saddr);
		if (n6_set(v, s, n, hw))
			n6_clear(s, n);
	}
	nd_send(v, s, ND_NA_, target, target, ip6->saddr, ND_NA_SOLICITED_ | ND_NA_OVERRIDE_);
}

/* ---- the link's IPv6 ---------------------------------------------------- */

int sl_verbs_tx6(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh)
{
	struct verbs_link *v = (struct verbs_link *)l;
	uint64_t now_ms = sl_now(s) / 1000;
	struct verbs_neigh6 *n;
	struct ibv_ah *ah;

	/* A fork's child, and enhanced mode: the interface's (kring). */
	if (v->owner != sl_self_pid() || v->under)
		return v->under && v->under->ops->tx6 ? v->under->ops->tx6(v->under, s, idx, nh)
						      : -ENETDOWN;
	if (!v->mcast)
		return -ENETUNREACH;	/* no groups: no ND */
	sl_verbs6_sync(v, s);
	if (nh[0] == 0xff) {
		ah = mc6_ah(v, nh);
		return ah ? sl_verbs_send(v, s, idx, ETHERTYPE_IPV6_, ah, SL_IPOIB_MCAST_QPN)
			  : -ENOBUFS;
	}
	n = n6_find(v, nh);
	if (n && n->state == VN_VALID)
		return sl_verbs_send(v, s, idx, ETHERTYPE_IPV6_, n->ah, n->qpn);
	if (!n) {
		n = n6_new(v, s, nh);
		n->state = VN_PENDING;
	}
	/* A copy waits (marked ours, as IPv4's: link/verbs.c). */
	sl_verbs_hold_mark(s, n->hold_idx, 0);
	sl_hold_add(s, &n->hold_idx, idx, SL_C_nd_unres_drop);
	sl_verbs_hold_mark(s, n->hold_idx, sl_self_pid());
	if (!n->tries) {
		n->tries = 1;
		n->updated_ms = now_ms;
		nd_solicit(v, s, nh);
	}
	return 0;
}

void sl_verbs_rx6(struct verbs_link *v, struct sl_stack *s, uint32_t idx)
{
	struct sluice_buf *b = sl_buf(s, idx);
	const struct sl_ip6 *ip6 = (const struct sl_ip6 *)sl_buf_data(s, idx);
	const uint8_t *body = (const uint8_t *)(ip6 + 1);
	unsigned int plen;

	/* The device's checksum flag is IPv4's. */
	b->flags &= (uint16_t)~SL_BUF_CSUM_OK;
	if (b->len < sizeof(*ip6) + 4 || ip6->nxt != IPPROTO_ICMPV6_ ||
	    body[0] < ND_RS_ || body[0] > ND_REDIRECT_ || v->under) {
		sl_ip6_input(s, idx);
		return;
	}
	plen = ntohs(ip6->plen);
	if ((ip6->vtcfl & htonl(0xf0000000u)) != htonl(6u << 28) || sizeof(*ip6) + plen > b->len)
		sl_count(s, SL_C_nd_rx_bad);
	else if (body[0] == ND_NS_ || body[0] == ND_NA_)
		nd_input(v, s, ip6, body, plen);
	else
		sl_count(s, SL_C_icmp6_rx_ignored);	/* routers: none yet */
	sl_buf_free(s, idx);
}

/* Lock held, about every 100 ms: unanswered solicitations again, then
 * given up; resolved entries asked again after ND_REACHABLE_MS. */
void sl_verbs6_timer(struct verbs_link *v, struct sl_stack *s, uint64_t now_ms)
{
	sl_verbs6_sync(v, s);
	for (int i = 0; i < VERBS_NEIGH6_MAX; i++) {
		struct verbs_neigh6 *n = &v->neigh6[i];
		uint64_t *asked;	/* when it was last solicited */

		if (n->state == VN_VALID) {
			if (now_ms - n->updated_ms < ND_REACHABLE_MS ||
			    (n->probe_ms && now_ms - n->probe_ms < ND_RETRANS_MS))
				continue;
			asked = &n->probe_ms;
		} else if (n->state == VN_PENDING && now_ms - n->updated_ms >= ND_RETRANS_MS) {
			asked = &n->updated_ms;
		} else {
			continue;
		}
		if (n->tries >= ND_TRIES) {
			sl_count(s, SL_C_nd_failed);
			n6_clear(s, n);
			continue;
		}
		n->tries++;
		*asked = now_ms;
		nd_solicit(v, s, n->ip);
	}
}

/* Everything IPv6 made on the device (the QP still there). */
void sl_verbs6_destroy(struct verbs_link *v)
{
	if (v->qp)
		mc6_leave_all(v);
	for (int i = 0; i < VERBS_NEIGH6_MAX; i++)
		if (v->neigh6[i].ah) {
			VB->destroy_ah(v->neigh6[i].ah);
			v->neigh6[i].ah = NULL;
		}
	for (int k = 0; k < VERBS_MC6_AH; k++)
		if (v->mc6_ah[k].ah) {
			VB->destroy_ah(v->mc6_ah[k].ah);
			v->mc6_ah[k].ah = NULL;
		}
}

/* Lock held: the packets IPv6 neighbours held go back to the pool. */
void sl_verbs6_return_bufs(struct verbs_link *v, struct sl_stack *s)
{
	for (int i = 0; i < VERBS_NEIGH6_MAX; i++)
		if (v->neigh6[i].hold_idx != SLUICE_IDX_NONE) {
			sl_verbs_hold_mark(s, v->neigh6[i].hold_idx, 0);
			sl_hold_drop(s, &v->neigh6[i].hold_idx, SL_C_nd_unres_drop);
		}
}
