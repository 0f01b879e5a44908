// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kring link: a module-backed stack on a network device.  The module
 * steers the stack's ports (filter.c) from the device's receive path into
 * the rx ring, in packet buffers we keep on the fill ring; we put IP
 * packets on the tx ring and kick once per batch (flush, from sl_unlock()),
 * and the module sends them through the kernel's neighbour layer.  The
 * kernel keeps the device's address and answers ARP and ping for it; only
 * the filtered ports are the stack's (as Onload shares an interface).
 *
 * Buffers on the fill ring belong to the stack, not to the process that
 * put them there: any process of the stack receives into them and tops the
 * ring up, a process that closes its link leaves them for the others, and
 * they go with the region when the last process has gone (the module frees
 * rings and region together).  The ring's share is bounded (kring.c) and
 * never takes the pool's last SL_KRING_FILL_FLOOR buffers.
 *
 * IPv6 (SLUICE_FEATURE_IPV6): the link carries it (tx6) and the stack's
 * IPv6 addresses are the device's, read from the kernel when the link is
 * made (dev_addrs6()); Neighbour Discovery, as ARP, is the kernel's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "os/os.h"
#include "link/kring.h"
#include "link/link.h"

#define KRING_RX_MAX	1024u
#define KRING_TX	256u
#define RX_BUDGET	64

struct kring_link {
	struct sl_link link;
	struct sl_link_ops ops;	/* kring_ops less what the module lacks */
	struct sl_stack *stack;
	struct sl_kring k;
	void *map;
	size_t map_size;
	uint32_t dev_seq;	/* last device change handled */
	uint64_t addr6_recheck_us;	/* a tentative address: look again then */
	bool gone;		/* the device was unregistered */
};

static void kick(struct kring_link *kl, struct sl_stack *s)
{
	struct sluice_kring_kick kk = { .size = sizeof(kk) };

	kl->link.tx_pending = false;
	sl_count(s, SL_C_kring_kick);
	if (sl_sys_ioctl(s->region_fd, SLUICE_IOC_KRING_KICK, &kk) && errno == ENODEV)
		kl->gone = true;
}

/* One descriptor: IPv4 to nh, or (v6) IPv6 to its destination, or
 * (v6, nh SL_KRING_ROUTED) to its route's next hop.  Inlined into each op
 * with its constant v6. */
#define SL_KRING_ROUTED	1u

static inline __attribute__((always_inline)) int put(struct sl_kring *k, const void *pkt,
						     uint32_t len, uint32_t nh, bool v6)
{
	if (v6)
		return nh == SL_KRING_ROUTED ? sl_kring_tx_put6_routed(k, pkt, len)
					     : sl_kring_tx_put6(k, pkt, len);
	return sl_kring_tx_put(k, pkt, len, nh);
}

static inline __attribute__((always_inline)) int tx(struct sl_link *l, struct sl_stack *s,
						    uint32_t idx, uint32_t nh, bool v6)
{
	struct kring_link *kl = (struct kring_link *)l;
	const struct sluice_buf *b = sl_buf(s, idx);
	int ret;

	if (kl->gone)
		return -ENETDOWN;
	if (b->len > l->mtu)
		return -EMSGSIZE;
	ret = put(&kl->k, sl_buf_data(s, idx), b->len, nh, v6);
	if (ret == -ENOBUFS) {
		/* Full: send what is there now, then ours. */
		sl_count(s, SL_C_kring_tx_full);
		kick(kl, s);
		ret = kl->gone ? -ENETDOWN : put(&kl->k, sl_buf_data(s, idx), b->len, nh, v6);
	}
	if (!ret)
		l->tx_pending = true;
	return ret;
}

static int kring_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	return tx(l, s, idx, nh, false);
}

/* The next hop ip6.c passes is the packet's destination on the link,
 * which the module resolves through the kernel's Neighbour Discovery
 * (SLUICE_KRING_TX_IPV6 carries no next hop), or, with route6
 * (SLUICE_FEATURE_ROUTE6), NULL:
 * a destination off the link, which the module sends to the next hop of
 * the kernel's route (SLUICE_KRING_TX_ROUTE). */
static int kring_tx6(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh)
{
	return tx(l, s, idx, nh ? 0 : SL_KRING_ROUTED, true);
}

static void kring_flush(struct sl_link *l, struct sl_stack *s)
{
	struct kring_link *kl = (struct kring_link *)l;

	if (sl_kring_tx_queued(&kl->k))
		kick(kl, s);
	l->tx_pending = false;
}

/* The MTU the stack may use on a device of MTU dev_mtu: the region's
 * layout rules (a buffer holds it, 576 at least) and a tx slot bound it. */
static uint32_t stack_mtu(const struct sl_stack *s, const struct kring_link *kl, uint32_t dev_mtu)
{
	uint32_t mtu = dev_mtu;

	if (mtu > s->buf_size - SL_HEADROOM)
		mtu = s->buf_size - SL_HEADROOM;
	if (mtu > kl->k.slot_size)
		mtu = kl->k.slot_size;
	return mtu < 576 ? 576 : mtu;
}

static bool on_device(const struct sl_sock *so)
{
	return (ntohl(so->laddr) >> 24) != 127 && (ntohl(so->raddr) >> 24) != 127;
}

/* The device has gone: every socket on it fails, none hangs. */
static void fail_sockets(struct sl_stack *s)
{
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type == SL_SOCK_FREE || !(so->flags & SL_SF_BOUND) || !on_device(so))
			continue;
		if (so->type == SL_SOCK_TCP && so->state > SL_TCP_LISTEN) {
			sl_tcp_done(s, so, so->state == SL_TCP_TIME_WAIT ? 0 : ENETDOWN);
			continue;
		}
		/* Listeners and UDP sockets report it (accept, recv, poll). */
		so->error = ENETDOWN;
		sl_sock_wake(s, so);
	}
}

static void addrs6_follow(struct kring_link *kl, struct sl_stack *s);

/* Lock held: act on a device change the module published (dev_seq). */
static void dev_check(struct kring_link *kl, struct sl_stack *s)
{
	struct sluice_kring *h = kl->k.h;
	uint32_t seq = sl_load_acquire(&h->dev_seq), mtu;

	if (seq == kl->dev_seq) {
		if (__builtin_expect(kl->addr6_recheck_us != 0, 0) &&
		    sl_now(s) >= kl->addr6_recheck_us)
			addrs6_follow(kl, s);
		return;
	}
	kl->dev_seq = seq;
	sl_count(s, SL_C_kring_dev_change);
	if (SL_READ_ONCE(h->dev_state) == SLUICE_KRING_DEV_GONE) {
		if (!kl->gone) {
			kl->gone = true;
			fail_sockets(s);
		}
		return;
	}
	/* New connections take the new MTU (sl_tcp_set_mss reads r->mtu). */
	mtu = stack_mtu(s, kl, SL_READ_ONCE(h->dev_mtu));
	s->r->mtu = mtu;
	kl->link.mtu = mtu;
	/* And the device's IPv6 addresses (a module's notifier moves
	 * dev_seq for an address added or removed). */
	if (kl->link.ops->tx6)
		addrs6_follow(kl, s);
}

static int kring_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	struct kring_link *kl = (struct kring_link *)l;

	dev_check(kl, s);
	return sl_kring_rx(s, &kl->k, budget < RX_BUDGET ? budget : RX_BUDGET);
}

static int kring_fd(struct sl_link *l)
{
	/* Sleepers wait on the stack fd, which the module wakes for rx. */
	(void)l;
	return -1;
}

static void kring_close(struct sl_link *l)
{
	struct kring_link *kl = (struct kring_link *)l;

	kl->stack->link = NULL;
	munmap(kl->map, kl->map_size);
	free(kl);
}

/*
 * Does the kernel route dst out of the stack's device from the stack's own
 * address?  Its answer to RTM_GETROUTE for dst (what `ip -6 route get`
 * asks: the FIB's lookup and the route's source selection,
 * ip6_route_get_saddr()): a unicast route whose device (RTA_OIF) is the
 * stack's and whose source (RTA_PREFSRC) is the stack's ip6_addr.  Asked
 * here, in the program, because whether a socket is the stack's is settled
 * at its connect() (or first send), as its source; the next hop of each
 * packet is the module's, from the same FIB (SLUICE_KRING_TX_ROUTE), so the
 * gateway's Neighbour Discovery and a route changed later are the
 * kernel's.  A netlink socket for one request; none in a sandbox (a
 * filter may not allow one: the kernel's socket, as before).
 */
static bool kring_route6(struct sl_link *l, struct sl_stack *s, const uint8_t *dst)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		struct rtattr rta;
		uint8_t dst[16];
	} req;
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ans;
	const struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	const struct rtmsg *rt;
	const struct rtattr *a;
	uint32_t oif = 0;
	bool src_ok = false;
	ssize_t n;
	int fd, len;

	(void)l;
	if (sl_sys_sandboxed)
		return false;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.rt.rtm_family = AF_INET6;
	req.rt.rtm_dst_len = 128;
	req.rta.rta_type = RTA_DST;
	req.rta.rta_len = RTA_LENGTH(16);
	memcpy(req.dst, dst, 16);
	fd = sl_sys_socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return false;
	n = sl_sys_sendto(fd, &req, sizeof(req), 0, (const struct sockaddr *)&kernel,
			  sizeof(kernel));
	if (n == (ssize_t)sizeof(req))
		n = sl_sys_read(fd, &ans, sizeof(ans));
	else
		n = -1;
	sl_sys_close(fd);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(*rt)) || !NLMSG_OK(&ans.nh, (size_t)n) ||
	    ans.nh.nlmsg_type != RTM_NEWROUTE)
		return false;	/* NLMSG_ERROR: no route (ENETUNREACH) */
	rt = NLMSG_DATA(&ans.nh);
	if (rt->rtm_type != RTN_UNICAST)
		return false;
	len = (int)RTM_PAYLOAD(&ans.nh);
	for (a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == 4)
			memcpy(&oif, RTA_DATA(a), 4);
		else if (a->rta_type == RTA_PREFSRC && RTA_PAYLOAD(a) == 16)
			src_ok = !memcmp(RTA_DATA(a), s->lib->ip6_addr, 16);
	}
	return oif == s->ifindex && src_ok;
}

/*
 * The link's calls with everything this library can do; kring_open() takes
 * out what the module cannot (tx6 without SLUICE_FEATURE_IPV6, route6
 * without SLUICE_FEATURE_ROUTE6) in the link's own copy.
 */
static const struct sl_link_ops kring_ops = {
	.name = "kring",
	.tx = kring_tx,
	.tx6 = kring_tx6,
	.rx = kring_rx,
	.fd = kring_fd,
	.flush = kring_flush,
	.close = kring_close,
	.route6 = kring_route6,
};

static uint32_t pow2_floor(uint32_t v)
{
	uint32_t p = 1;

	while (p * 2 <= v)
		p *= 2;
	return p;
}

/*
 * The device's IPv6 addresses, as the kernel lists them for this network
 * namespace (/proc/net/if_inet6: address, ifindex, prefix length, scope,
 * IFA_F_* flags, name, in hex): its first global one (scope 0) into
 * a->global with its prefix length, its link-local one (scope 0x20) into
 * a->ll.  Addresses whose DAD failed (IFA_F_DADFAILED) are not the
 * device's, nor yet those it still runs (IFA_F_TENTATIVE, not optimistic:
 * a->tentative says one was passed over).  The kernel keeps them, runs
 * DAD and answers solicitations for them; the stack only uses them.
 */
struct dev6 {
	uint8_t global[16], ll[16];
	uint32_t plen;
	bool has_global, has_ll, tentative;
};

#define IF_INET6_SCOPE_LINK	0x20u
#define IF_INET6_DADFAILED	0x08u	/* IFA_F_DADFAILED */
#define IF_INET6_OPTIMISTIC	0x04u	/* IFA_F_OPTIMISTIC: usable during DAD */
#define IF_INET6_TENTATIVE	0x40u	/* IFA_F_TENTATIVE: DAD not done */

static void dev_addrs6(uint32_t ifindex, struct dev6 *a)
{
	char buf[4096], *line, *save = NULL;

	memset(a, 0, sizeof(*a));
	if (sl_sys_read_small("/proc/net/if_inet6", buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char hex[33];
		unsigned int idx, plen, scope, flags;
		uint8_t addr[16];
		bool ok = true;

		if (sscanf(line, "%32s %x %x %x %x", hex, &idx, &plen, &scope, &flags) != 5 ||
		    strlen(hex) != 32 || idx != ifindex || (flags & IF_INET6_DADFAILED) ||
		    plen > 128)
			continue;
		if ((flags & (IF_INET6_TENTATIVE | IF_INET6_OPTIMISTIC)) == IF_INET6_TENTATIVE) {
			a->tentative = true;
			continue;
		}
		for (int i = 0; i < 16 && ok; i++) {
			unsigned int byte;

			ok = sscanf(hex + 2 * i, "%2x", &byte) == 1;
			addr[i] = (uint8_t)byte;
		}
		if (!ok)
			continue;
		if (scope == 0 && !a->has_global) {
			memcpy(a->global, addr, 16);
			a->plen = plen;
			a->has_global = true;
		} else if (scope == IF_INET6_SCOPE_LINK && !a->has_ll) {
			memcpy(a->ll, addr, 16);
			a->has_ll = true;
		}
	}
}

/*
 * Lock held: the stack's IPv6 addresses are the device's (a, as read now),
 * a global one first, else the link-local one, as its ip6_addr, and the
 * link-local one as its own (valid: the kernel ran DAD).  Each process's
 * link reads them when it is made, and again when the module says they
 * changed (its inet6addr notifier moves dev_seq: addrs6_follow()) or a
 * second after one was still tentative.  So a stack that had no global
 * address of the device (ip6_addr zero, or the link-local one it fell
 * back to) takes the first one added later, with its prefix, as the
 * kernel's sockets may from then on; sockets on the link-local address
 * keep it (SL_V6TOK_LL, sl_v6tok_find()).  Not followed: a second global
 * address (the stack holds one, ip6_addr), a SLUICE_ADDR6 stack's, and a
 * removed address, which the stack's sockets keep as Linux's keep theirs
 * until they fail.  (Other processes read ip6_addr without the lock: one
 * that connects at the very moment of the change may see it torn, and
 * fall back to the kernel.)
 */
static void addrs6_take(struct kring_link *kl, struct sl_stack *s, const struct dev6 *a)
{
	static const uint8_t zero[16];
	struct sl_region *r = s->lib;
	bool none = !memcmp(r->ip6_addr, zero, 16);

	kl->addr6_recheck_us = a->tentative ? sl_now(s) + 1000000 : 0;
	if (!none && memcmp(r->ip6_addr, r->ip6_ll, 16))
		return;
	if (a->has_ll && SL_READ_ONCE(r->ip6_ll_state) != SL_LL_VALID) {
		memcpy(r->ip6_ll, a->ll, 16);
		sl_store_release(&r->ip6_ll_state, SL_LL_VALID);
	}
	if (a->has_global) {
		memcpy(r->ip6_addr, a->global, 16);
		sl_store_release(&r->ip6_plen, a->plen ? a->plen : 64);
	} else if (none && a->has_ll) {
		memcpy(r->ip6_addr, a->ll, 16);
		sl_store_release(&r->ip6_plen, 64);
	}
}

static void addrs6_follow(struct kring_link *kl, struct sl_stack *s)
{
	struct dev6 a;

	dev_addrs6(s->ifindex, &a);
	addrs6_take(kl, s, &a);
}

/* Describe the stack's rings, making them if nobody has (-EEXIST: another
 * process made them first, so describe again). */
static int rings_setup(struct sl_stack *s, struct sluice_kring_setup *ks)
{
	uint32_t rx = pow2_floor(s->n_bufs / 4);

	for (int tries = 0; tries < 3; tries++) {
		memset(ks, 0, sizeof(*ks));
		ks->size = sizeof(*ks);
		if (!sl_sys_ioctl(s->region_fd, SLUICE_IOC_KRING_SETUP, ks))
			return 0;
		if (errno != ENOENT)
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		memset(ks, 0, sizeof(*ks));
		ks->size = sizeof(*ks);
		ks->flags = SLUICE_KRING_CREATE;
		ks->rx_entries = rx < KRING_RX_MAX ? rx : KRING_RX_MAX;
		ks->tx_entries = KRING_TX;
		/* Any packet the stack sends fits: at most buf_size - headroom. */
		ks->tx_slot_size = (s->buf_size - SL_HEADROOM + 63) & ~63u;
		if (!sl_sys_ioctl(s->region_fd, SLUICE_IOC_KRING_SETUP, ks))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EAGAIN;
}

int sluice_link_kring(struct sluice_stack *st)
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct sluice_kring_setup ks;
	struct kring_link *kl;
	struct dev6 a6;
	void *map;
	int ret;

	if (!s->module_backed)
		return -EOPNOTSUPP;
	if (!s->ifindex)
		return -ENODEV;
	if (s->link)
		return -EBUSY;
	ret = rings_setup(s, &ks);
	if (ret)
		return ret;
	if (!ks.mmap_size || ks.mmap_size > SIZE_MAX)
		return -EPROTO;
	map = mmap(NULL, ks.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->region_fd,
		   SLUICE_MMAP_KRING);
	if (map == MAP_FAILED)
		return -errno;
	kl = calloc(1, sizeof(*kl));
	if (!kl) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	kl->map = map;
	kl->map_size = ks.mmap_size;
	kl->stack = s;
	kl->ops = kring_ops;
	if (!(sl_module_features & SLUICE_FEATURE_IPV6))
		kl->ops.tx6 = NULL;
	if (!(sl_module_features & SLUICE_FEATURE_ROUTE6))
		kl->ops.route6 = NULL;
	kl->link.ops = &kl->ops;
	if (kl->link.ops->tx6)
		dev_addrs6(s->ifindex, &a6);
	ret = sl_kring_init(&kl->k, map, ks.mmap_size, s);
	if (ret)
		goto err_free;
	if (kl->k.h->ifindex != s->ifindex) {
		ret = -EPROTO;
		goto err_free;
	}
	ret = sl_lock(s);
	if (ret)
		goto err_free;
	kl->dev_seq = sl_load_acquire(&kl->k.h->dev_seq);
	if (kl->k.h->dev_state == SLUICE_KRING_DEV_GONE) {
		sl_unlock(s);
		ret = -ENODEV;
		goto err_free;
	}
	kl->link.mtu = sl_mtu(s);
	if (kl->link.mtu > kl->k.slot_size)
		kl->link.mtu = kl->k.slot_size;
	sl_kring_refill(s, &kl->k);
	if (kl->link.ops->tx6)
		addrs6_take(kl, s, &a6);
	s->filters = true;
	s->link = &kl->link;
	sl_unlock(s);
	return 0;

err_free:
	free(kl);
err_unmap:
	munmap(map, ks.mmap_size);
	return ret;
}
