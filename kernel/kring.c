// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kring queue of a stack: rings shared with user space (a second
 * mapping of the stack fd), an rx_handler on the stack's device that steers
 * the stack's packets into them, SLUICE_IOC_KRING_KICK that sends what user
 * space put on the tx ring through the neighbour layer, and a netdev
 * notifier that follows the device.
 *
 * Call chains:
 *   receive: __netif_receive_skb_core -> sluice_rx_handler ->
 *            (IPv6: sluice_rx_other -> sluice_rx_ipv6) ->
 *            sluice_filter_match{,6} (fragments, ICMP: sluice_rx_errfrag{,6}
 *            -> errfrag.c) -> sluice_rx_steer -> sluice_kring_rx ->
 *            (GSO) segment -> sluice_kring_rx_one -> fill ring -> rx ring ->
 *            wake
 *   send:    SLUICE_IOC_KRING_KICK -> sluice_kring_tx_one -> neigh_xmit
 *            (ARP for IPv4, Neighbour Discovery for IPv6)
 *
 * Locking and lifetime: RTNL guards the per-device struct (struct
 * sluice_kdev, one per device with rings, holding the rx_handler) and the
 * list of rings on it.  The rx_handler holds no reference: a ring set is
 * unpublished (kr->kdev = NULL, off the device's list) under RTNL, then
 * synchronize_net() lets every rx_handler that may still write into it
 * finish; the memory itself is freed only with the stack.  Producers on
 * the rx ring (rx_handlers on several CPUs) serialise on kr->rx_lock;
 * kicks serialise on kr->tx_lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <linux/sched/user.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <net/arp.h>
#include <net/ip.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/neighbour.h>
/* __skb_gso_segment(): netdevice.h up to 6.4, then net/gso.h, which udp.h includes */
#include <net/udp.h>

#include "sluice.h"

/* One per device with rings: owns the device's rx_handler. */
struct sluice_kdev {
	struct net_device *dev;		/* no reference: the notifier follows it */
	struct list_head krings;	/* RCU readers; changed under RTNL */
	unsigned int users;		/* rings on the list, under RTNL */
};

/* The kernel's private view of a stack's rings. */
struct sluice_kring_state {
	struct sluice_stack *st;	/* the stack that holds this */
	struct sluice_kring *k;		/* vmalloc_user(size) */
	size_t size;
	struct user_struct *locked_user; /* charged size, or NULL */
	u32 ifindex;
	u32 rx_entries;
	u32 tx_entries;
	u32 tx_slot_size;
	u64 rx_off;
	u64 fill_off;
	u64 tx_off;
	u64 tx_slots_off;

	/* Published while steering; NULL once stopped or the device went. */
	struct sluice_kdev __rcu *kdev;
	struct list_head node;		/* in kdev->krings */

	spinlock_t rx_lock;		/* the rx producer and fill consumer */
	u32 rx_prod;			/* private copies of the indices */
	u32 fill_cons;			/* the module writes */
	u64 rx_gso_split;		/* GSO skbs segmented, for debugfs */
	atomic64_t rx_pass_size;	/* datagrams too long, left to the kernel */
	struct mutex tx_lock;		/* the tx consumer */
	u32 tx_cons;
};

static rx_handler_result_t sluice_rx_handler(struct sk_buff **pskb);

/* The device's kdev, if its rx_handler is ours.  Under RTNL. */
static struct sluice_kdev *sluice_kdev_of(struct net_device *dev)
{
	if (rtnl_dereference(dev->rx_handler) != sluice_rx_handler)
		return NULL;
	return rtnl_dereference(dev->rx_handler_data);
}

/* The stack's rings, or NULL. */
static struct sluice_kring_state *sluice_kring_of(struct sluice_stack *st)
{
	/* Pairs with the release in SETUP: the rings are complete. */
	return smp_load_acquire(&st->kring);
}

bool sluice_stack_has_kring(struct sluice_stack *st)
{
	return !!sluice_kring_of(st);
}

static struct sluice_kring_rx *sluice_rx_desc(struct sluice_kring_state *kr,
					      u32 i)
{
	return (struct sluice_kring_rx *)((u8 *)kr->k + kr->rx_off) +
		(i & (kr->rx_entries - 1));
}

static u32 *sluice_fill_entry(struct sluice_kring_state *kr, u32 i)
{
	return (u32 *)((u8 *)kr->k + kr->fill_off) + (i & (kr->rx_entries - 1));
}

static struct sluice_kring_tx *sluice_tx_desc(struct sluice_kring_state *kr,
					      u32 i)
{
	return (struct sluice_kring_tx *)((u8 *)kr->k + kr->tx_off) +
		(i & (kr->tx_entries - 1));
}

static u8 *sluice_tx_slot(struct sluice_kring_state *kr, u32 i)
{
	return (u8 *)kr->k + kr->tx_slots_off +
		(size_t)(i & (kr->tx_entries - 1)) * kr->tx_slot_size;
}

/* Counters live in the shared header: the module only ever adds to them. */
static void sluice_kring_count(u64 *ctr, u64 n)
{
	WRITE_ONCE(*ctr, READ_ONCE(*ctr) + n);
}

/*
 * Wake sleepers after producing, cheaply: only when someone sleeps, that
 * is the region's sleepers count is non-zero (a sleeper counts itself
 * there before its last look at the rings) or a poller is queued on a
 * stack fd.  Either the sleeper sees the packet or we see the sleeper.
 */
static __always_inline void sluice_kring_wake(struct sluice_stack *st)
{
	/* Orders the rx.prod store before the loads of the sleeper counts. */
	smp_mb();
	/* Paired with the barrier after poll_wait() in the stack's poll. */
	if (!READ_ONCE(st->region->sleepers) && !waitqueue_active(&st->wq))
		return;
	/*
	 * Fully ordered: a poller that queues itself after the check below
	 * sees the new sequence, one queued before it is woken.
	 */
	atomic_inc_return(&st->wake_seq);
	/* Ordered by the fully ordered atomic above. */
	if (waitqueue_active(&st->wq)) {
		atomic64_inc(&st->wakes);
		wake_up_interruptible_all(&st->wq);
	}
}

/*
 * Copy one IPv4 packet of @len bytes at @off in @skb into a buffer from the
 * fill ring and post it on the rx ring.  Under kr->rx_lock.
 */
static bool sluice_kring_rx_one(struct sluice_kring_state *kr,
				struct sk_buff *skb, int off, unsigned int len)
{
	struct sluice_stack *st = kr->st;
	struct sluice_kring *k = kr->k;
	u32 fill_prod, rx_cons, idx = SLUICE_IDX_NONE, n;
	struct sluice_kring_rx *d;
	u8 *dst;

	if (len > st->buf_size - min(st->buf_size, SLUICE_KRING_RX_HEADROOM) ||
	    len > U16_MAX) {
		sluice_kring_count(&k->rx_drop_size, 1);
		return false;
	}
	/* Acquire: user space is done with what it consumed. */
	rx_cons = smp_load_acquire(&k->rx.cons);
	if (kr->rx_prod - rx_cons > kr->rx_entries) {
		/* A consumer index that passed what was produced. */
		sluice_kring_count(&k->bad_index, 1);
		sluice_kring_count(&k->rx_drop_ring, 1);
		return false;
	}
	if (kr->rx_prod - rx_cons == kr->rx_entries) {
		sluice_kring_count(&k->rx_drop_ring, 1);
		return false;
	}
	/* Acquire: the fill entries written before the index. */
	fill_prod = smp_load_acquire(&k->fill.prod);
	if (fill_prod - kr->fill_cons > kr->rx_entries) {
		/* Reset: skip everything the producer claims. */
		sluice_kring_count(&k->bad_index, 1);
		kr->fill_cons = fill_prod;
		/* Release: as below. */
		smp_store_release(&k->fill.cons, kr->fill_cons);
	}
	/* At most rx_entries entries: the distance was checked above. */
	for (n = fill_prod - kr->fill_cons; n; n--) {
		idx = READ_ONCE(*sluice_fill_entry(kr, kr->fill_cons));
		kr->fill_cons++;
		if (idx < st->n_bufs)
			break;
		sluice_kring_count(&k->bad_buf, 1);
		idx = SLUICE_IDX_NONE;
	}
	/* Release: our reads of the entries are done before user space reuses them. */
	smp_store_release(&k->fill.cons, kr->fill_cons);
	if (idx == SLUICE_IDX_NONE) {
		sluice_kring_count(&k->rx_drop_fill, 1);
		return false;
	}
	dst = (u8 *)st->region + st->bufdata_off + (size_t)idx * st->buf_size +
		SLUICE_KRING_RX_HEADROOM;
	if (WARN_ON_ONCE(skb_copy_bits(skb, off, dst, len))) {
		/* Never: the length was checked against the skb. The buffer is lost. */
		return false;
	}
	d = sluice_rx_desc(kr, kr->rx_prod);
	WRITE_ONCE(d->buf_idx, idx);
	WRITE_ONCE(d->len, len);
	WRITE_ONCE(d->flags, skb->ip_summed == CHECKSUM_UNNECESSARY ||
		   skb->ip_summed == CHECKSUM_PARTIAL ?
		   SLUICE_KRING_RX_CSUM_OK : 0);
	kr->rx_prod++;
	/* Release: the packet and descriptor before the index that shows them. */
	smp_store_release(&k->rx.prod, kr->rx_prod);
	sluice_kring_count(&k->rx_packets, 1);
	sluice_kring_count(&k->rx_bytes, len);
	return true;
}

/* The length an IP header at @skb's network header gives its packet. */
static unsigned int sluice_ip_len(const struct sk_buff *skb)
{
	if (ip_hdr(skb)->version == 6)
		return sizeof(struct ipv6hdr) +
			ntohs(ipv6_hdr(skb)->payload_len);
	return ntohs(ip_hdr(skb)->tot_len);
}

/*
 * A GSO or GRO skb larger than a buffer is segmented in software into
 * packets of its MSS, each received on its own.  Consumes @skb.
 */
static __always_inline bool sluice_kring_rx_gso(struct sluice_kring_state *kr,
						struct sk_buff *skb)
{
	struct sk_buff *segs, *seg, *next;
	bool any = false;

	/* Segmenting writes headers: only into an skb we own. */
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		goto drop;
	/*
	 * Segmentation would have to invent checksums for an skb nobody
	 * checked (and warns): never the case for GRO or a local sender.
	 */
	if (skb->ip_summed == CHECKSUM_NONE || !skb_mac_header_was_set(skb))
		goto drop_skb;
	/* Segmentation starts from the link header, as on transmit. */
	__skb_push(skb, skb->data - skb_mac_header(skb));
	segs = __skb_gso_segment(skb, 0, false);
	if (IS_ERR_OR_NULL(segs))
		goto drop_skb;
	consume_skb(skb);
	spin_lock(&kr->rx_lock);
	kr->rx_gso_split++;
	skb_list_walk_safe(segs, seg, next) {
		unsigned int len = sluice_ip_len(seg);

		skb_mark_not_on_list(seg);
		if (len <= seg->len - skb_network_offset(seg))
			any |= sluice_kring_rx_one(kr, seg, skb_network_offset(seg),
						   len);
		else
			sluice_kring_count(&kr->k->rx_drop_size, 1);
		consume_skb(seg);
	}
	spin_unlock(&kr->rx_lock);
	return any;

drop_skb:
	kfree_skb(skb);
drop:
	spin_lock(&kr->rx_lock);
	sluice_kring_count(&kr->k->rx_drop_size, 1);
	spin_unlock(&kr->rx_lock);
	return false;
}

/*
 * Receive @skb (IP at skb->data, @len bytes) into @kr.  Consumes @skb.
 * Inlined into each family's handler, as it was into IPv4's alone.
 */
static __always_inline void sluice_kring_rx(struct sluice_kring_state *kr,
					    struct sk_buff *skb, unsigned int len)
{
	struct sluice_stack *st = kr->st;
	bool posted;

	/* A GSO skb's tot_len may be anything: only whole packets go as one. */
	if (skb_is_gso(skb) &&
	    (skb->len > st->buf_size - min(st->buf_size, SLUICE_KRING_RX_HEADROOM) ||
	     len != skb->len)) {
		posted = sluice_kring_rx_gso(kr, skb);
	} else {
		spin_lock(&kr->rx_lock);
		posted = sluice_kring_rx_one(kr, skb, 0, len);
		spin_unlock(&kr->rx_lock);
		consume_skb(skb);
	}
	if (posted)
		sluice_kring_wake(st);
}

/*
 * @skb (an IP packet of @len bytes, @protocol TCP or UDP) was matched to
 * @st (or NULL) on @kdev's device: into its rings if they still steer
 * there.  Under rcu_read_lock(), which it drops.  Inlined into both
 * families' handlers, so IPv4's costs no call.
 */
static __always_inline rx_handler_result_t
sluice_rx_steer(struct sk_buff *skb, struct sluice_kdev *kdev,
		struct sluice_stack *st, u8 protocol, unsigned int len)
{
	struct sluice_kring_state *kr = NULL;

	if (st)
		kr = sluice_kring_of(st);
	/* Rings still steering, on this very device. */
	if (!kr || !kdev || rcu_access_pointer(kr->kdev) != kdev) {
		rcu_read_unlock();
		return RX_HANDLER_PASS;
	}
	/*
	 * A UDP datagram longer than the stack's buffers hold (an IPoIB
	 * interface in connected mode has an MTU of 65520, the buffers at
	 * most 8192 unless asked): dropping it lost what the kernel takes.
	 * The kernel's UDP delivers it to the port's reservation, which the
	 * library reads as the socket's kernel twin (FILTER_FD).  Never a
	 * TCP segment: the kernel has no socket for a stack's connection
	 * and would reset it (the stack's MSS keeps them short).
	 */
	if (protocol == IPPROTO_UDP && !skb_is_gso(skb) &&
	    len > st->buf_size - min(st->buf_size, SLUICE_KRING_RX_HEADROOM)) {
		atomic64_inc(&kr->rx_pass_size);
		rcu_read_unlock();
		return RX_HANDLER_PASS;
	}
	sluice_kring_rx(kr, skb, len);
	rcu_read_unlock();
	return RX_HANDLER_CONSUMED;
}

/*
 * IPv4 fragments and ICMP (@iph, copied by the caller): a stack's if it
 * is an error quoting one of its packets, or a fragment of a datagram to
 * one of its sockets (errfrag.c); the kernel's otherwise.  Out of line:
 * TCP's and UDP's path pays one test it paid before.
 */
static noinline rx_handler_result_t sluice_rx_errfrag(struct sk_buff *skb,
						      const struct iphdr *iph)
{
	struct net_device *dev = skb->dev;
	unsigned int len = ntohs(iph->tot_len);
	struct sluice_kdev *kdev;
	struct sluice_stack *st;

	if (skb_is_gso(skb) || len < iph->ihl * 4 || len > skb->len ||
	    (!ip_is_fragment(iph) && iph->protocol != IPPROTO_ICMP))
		return RX_HANDLER_PASS;
	rcu_read_lock();
	kdev = rcu_dereference(dev->rx_handler_data);
	st = sluice_errfrag4(skb, iph, len);
	/* Checked against the buffers already: no protocol's rule applies. */
	return sluice_rx_steer(skb, kdev, st, 0, len);
}

/* As sluice_rx_errfrag(), IPv6: a fragment header or ICMPv6 first. */
static noinline rx_handler_result_t sluice_rx_errfrag6(struct sk_buff *skb,
						       const struct ipv6hdr *ip6h)
{
	struct net_device *dev = skb->dev;
	struct sluice_kdev *kdev;
	struct sluice_stack *st;
	unsigned int len;

	len = sizeof(*ip6h) + ntohs(ip6h->payload_len);
	if (skb_is_gso(skb) || len > skb->len)
		return RX_HANDLER_PASS;
	rcu_read_lock();
	kdev = rcu_dereference(dev->rx_handler_data);
	st = sluice_errfrag6(skb, ip6h, len);
	return sluice_rx_steer(skb, kdev, st, 0, len);
}

/*
 * IPv6 packets whose first next header is TCP or UDP, as IPv4's below;
 * a fragment header or ICMPv6 first: sluice_rx_errfrag6().  Other
 * extension headers are the kernel's; so is all of ICMPv6 but the errors
 * quoting a stack's packet (Neighbour Discovery among it).
 */
static rx_handler_result_t sluice_rx_ipv6(struct sk_buff *skb)
{
	struct net_device *dev = skb->dev;
	const struct ipv6hdr *ip6h;
	struct sluice_kdev *kdev;
	struct sluice_stack *st;
	struct ipv6hdr _ip6h;
	const __be16 *ports;
	__be16 _ports[2];
	unsigned int len;

	ip6h = skb_header_pointer(skb, 0, sizeof(_ip6h), &_ip6h);
	if (!ip6h || ip6h->version != 6)
		return RX_HANDLER_PASS;
	if (ip6h->nexthdr != IPPROTO_TCP && ip6h->nexthdr != IPPROTO_UDP) {
		if (ip6h->nexthdr == NEXTHDR_FRAGMENT ||
		    ip6h->nexthdr == IPPROTO_ICMPV6)
			return sluice_rx_errfrag6(skb, ip6h);
		return RX_HANDLER_PASS;
	}
	len = sizeof(_ip6h) + ntohs(ip6h->payload_len);
	/* A GSO skb's payload length may be anything: checked per segment. */
	if (!skb_is_gso(skb) &&
	    (len < sizeof(_ip6h) + sizeof(_ports) || len > skb->len))
		return RX_HANDLER_PASS;
	ports = skb_header_pointer(skb, sizeof(_ip6h), sizeof(_ports), _ports);
	if (!ports)
		return RX_HANDLER_PASS;

	rcu_read_lock();
	kdev = rcu_dereference(dev->rx_handler_data);
	st = sluice_filter_match6(dev_net(dev), dev->ifindex, ip6h->nexthdr,
				  &ip6h->saddr, ports[0], &ip6h->daddr,
				  ports[1], skb, sizeof(_ip6h));
	return sluice_rx_steer(skb, kdev, st, ip6h->nexthdr, len);
}

/* Anything but IPv4 for this host: IPv6's, or the kernel's. */
static noinline rx_handler_result_t sluice_rx_other(struct sk_buff *skb)
{
	if (skb->protocol != htons(ETH_P_IPV6) ||
	    skb->pkt_type == PACKET_OTHERHOST)
		return RX_HANDLER_PASS;
	return sluice_rx_ipv6(skb);
}

/*
 * The rx_handler of every device with rings.  IPv4 TCP and UDP packets
 * (IPv6 ones: sluice_rx_ipv6()) that a stack's filter claims are the
 * stack's: received into its rings, or dropped there (counted) when they
 * do not fit; so are the fragments of a datagram and the ICMP errors
 * about a packet a filter claims (sluice_rx_errfrag()).  Everything else,
 * bad headers among it, goes on to the kernel.
 */
static rx_handler_result_t sluice_rx_handler(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct net_device *dev = skb->dev;
	const struct iphdr *iph;
	struct sluice_kdev *kdev;
	struct sluice_stack *st;
	const __be16 *ports;
	__be16 _ports[2];
	struct iphdr _iph;
	unsigned int ihl, len;

	if (skb->protocol != htons(ETH_P_IP) ||
	    skb->pkt_type == PACKET_OTHERHOST)
		return sluice_rx_other(skb);
	/* Copies when not linear: the skb may be shared (a tap holds it). */
	iph = skb_header_pointer(skb, 0, sizeof(_iph), &_iph);
	if (!iph || iph->version != 4 || iph->ihl < 5)
		return RX_HANDLER_PASS;
	if (unlikely(ip_is_fragment(iph) ||
		     (iph->protocol != IPPROTO_TCP &&
		      iph->protocol != IPPROTO_UDP)))
		return sluice_rx_errfrag(skb, iph);
	ihl = iph->ihl * 4;
	len = ntohs(iph->tot_len);
	/* GSO skbs may carry any tot_len (0 for BIG TCP): checked per segment. */
	if (!skb_is_gso(skb) && (len < ihl + sizeof(_ports) || len > skb->len))
		return RX_HANDLER_PASS;
	ports = skb_header_pointer(skb, ihl, sizeof(_ports), _ports);
	if (!ports)
		return RX_HANDLER_PASS;

	rcu_read_lock();
	kdev = rcu_dereference(dev->rx_handler_data);
	st = sluice_filter_match(dev_net(dev), dev->ifindex, iph->protocol,
				 iph->saddr, ports[0], iph->daddr, ports[1],
				 skb, ihl);
	return sluice_rx_steer(skb, kdev, st, iph->protocol, len);
}

/*
 * Take @kr off its device.  Under RTNL; the caller lets readers finish
 * (synchronize_net()) before the rings can be freed.  The last ring set
 * on a device takes the rx_handler with it.
 */
static void sluice_kring_unlink(struct sluice_kring_state *kr,
				struct sluice_kdev *kdev)
{
	ASSERT_RTNL();
	RCU_INIT_POINTER(kr->kdev, NULL);
	list_del_rcu(&kr->node);
	if (--kdev->users)
		return;
	/* Waits for every rx_handler call in flight. */
	netdev_rx_handler_unregister(kdev->dev);
	kfree(kdev);
}

/* Attach @kr to @dev, registering the rx_handler if it is the first. */
static int sluice_kring_link(struct sluice_kring_state *kr,
			     struct net_device *dev)
{
	struct sluice_kdev *kdev;
	int ret;

	ASSERT_RTNL();
	kdev = sluice_kdev_of(dev);
	if (!kdev) {
		/* A bridge, bond, macvlan... port: not ours to take. */
		if (netdev_is_rx_handler_busy(dev))
			return -EBUSY;
		kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
		if (!kdev)
			return -ENOMEM;
		kdev->dev = dev;
		INIT_LIST_HEAD(&kdev->krings);
		ret = netdev_rx_handler_register(dev, sluice_rx_handler, kdev);
		if (ret) {
			kfree(kdev);
			return ret;
		}
	}
	kdev->users++;
	list_add_tail_rcu(&kr->node, &kdev->krings);
	rcu_assign_pointer(kr->kdev, kdev);
	return 0;
}

static bool sluice_kring_sizes_ok(const struct sluice_kring_setup *s)
{
	return s->rx_entries && s->rx_entries <= SLUICE_KRING_MAX_ENTRIES &&
	       is_power_of_2(s->rx_entries) &&
	       s->tx_entries && s->tx_entries <= SLUICE_KRING_MAX_ENTRIES &&
	       is_power_of_2(s->tx_entries) &&
	       s->tx_slot_size >= SLUICE_KRING_MIN_SLOT &&
	       s->tx_slot_size <= SLUICE_KRING_MAX_SLOT &&
	       !(s->tx_slot_size % 64);
}

/* Allocate and lay out the rings the caller asked for (sizes checked). */
static struct sluice_kring_state *
sluice_kring_alloc(struct sluice_stack *st, const struct sluice_kring_setup *s)
{
	struct sluice_kring_state *kr;
	struct sluice_kring *k;
	u64 off;
	int ret;

	kr = kzalloc(sizeof(*kr), GFP_KERNEL);
	if (!kr)
		return ERR_PTR(-ENOMEM);
	kr->st = st;
	kr->ifindex = st->ifindex;
	kr->rx_entries = s->rx_entries;
	kr->tx_entries = s->tx_entries;
	kr->tx_slot_size = s->tx_slot_size;
	off = ALIGN(sizeof(struct sluice_kring), 64);
	kr->rx_off = off;
	off = ALIGN(off + (u64)s->rx_entries * sizeof(struct sluice_kring_rx), 64);
	kr->fill_off = off;
	off = ALIGN(off + (u64)s->rx_entries * sizeof(u32), 64);
	kr->tx_off = off;
	off = PAGE_ALIGN(off + (u64)s->tx_entries * sizeof(struct sluice_kring_tx));
	kr->tx_slots_off = off;
	/* At most 2^32 bytes of slots: fits a size_t on 64-bit only. */
	off = PAGE_ALIGN(off + (u64)s->tx_entries * s->tx_slot_size);
	if (off > SIZE_MAX / 2) {
		ret = -ENOMEM;
		goto err_free;
	}
	kr->size = off;
	spin_lock_init(&kr->rx_lock);
	mutex_init(&kr->tx_lock);
	INIT_LIST_HEAD(&kr->node);

	ret = sluice_mem_charge(kr->size, &kr->locked_user);
	if (ret)
		goto err_free;
	k = vmalloc_user(kr->size);
	if (!k) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	kr->k = k;
	k->magic = SLUICE_KRING_MAGIC;
	k->rx_entries = kr->rx_entries;
	k->tx_entries = kr->tx_entries;
	k->tx_slot_size = kr->tx_slot_size;
	k->size = kr->size;
	k->rx_off = kr->rx_off;
	k->fill_off = kr->fill_off;
	k->tx_off = kr->tx_off;
	k->tx_slots_off = kr->tx_slots_off;
	k->ifindex = kr->ifindex;
	k->dev_state = SLUICE_KRING_DEV_UP;
	return kr;

err_uncharge:
	sluice_mem_uncharge(kr->locked_user, kr->size);
err_free:
	kfree(kr);
	return ERR_PTR(ret);
}

static void sluice_kring_destroy(struct sluice_kring_state *kr)
{
	vfree(kr->k);
	sluice_mem_uncharge(kr->locked_user, kr->size);
	mutex_destroy(&kr->tx_lock);
	kfree(kr);
}

static void sluice_kring_describe(const struct sluice_kring_state *kr,
				  struct sluice_kring_setup *s)
{
	s->rx_entries = kr->rx_entries;
	s->tx_entries = kr->tx_entries;
	s->tx_slot_size = kr->tx_slot_size;
	s->mmap_size = kr->size;
}

int sluice_ioc_kring_setup(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_kring_state *kr;
	struct sluice_kring_setup s;
	struct net_device *dev;
	int ret;

	ret = sluice_arg_in(&s, sizeof(s), offsetofend(struct sluice_kring_setup,
						       mmap_size), uarg);
	if (ret)
		return ret;
	if (s.reserved || (s.flags & ~SLUICE_KRING_CREATE))
		return -EINVAL;
	if (!(s.flags & SLUICE_KRING_CREATE)) {
		if (s.rx_entries || s.tx_entries || s.tx_slot_size)
			return -EINVAL;
		kr = sluice_kring_of(st);
		if (!kr)
			return -ENOENT;
		sluice_kring_describe(kr, &s);
		return sluice_arg_out(uarg, &s, sizeof(s));
	}
	if (!sluice_kring_sizes_ok(&s))
		return -EINVAL;
	if (!st->ifindex || st->ifindex > INT_MAX)
		return -ENODEV;
	if (sluice_kring_of(st))
		return -EEXIST;

	kr = sluice_kring_alloc(st, &s);
	if (IS_ERR(kr))
		return PTR_ERR(kr);

	rtnl_lock();
	/* Checked again: another thread may have set up rings meanwhile. */
	if (st->kring) {
		ret = -EEXIST;
		goto err_unlock;
	}
	dev = __dev_get_by_index(st->net, st->ifindex);
	if (!dev) {
		ret = -ENODEV;
		goto err_unlock;
	}
	kr->k->dev_mtu = READ_ONCE(dev->mtu);
	ret = sluice_kring_link(kr, dev);
	if (ret)
		goto err_unlock;
	/* Release: the rings are complete before anyone can find them. */
	smp_store_release(&st->kring, kr);
	rtnl_unlock();

	sluice_kring_describe(kr, &s);
	/* The rings stay made even if the copy out fails. */
	return sluice_arg_out(uarg, &s, sizeof(s));

err_unlock:
	rtnl_unlock();
	sluice_kring_destroy(kr);
	return ret;
}

int sluice_kring_mmap(struct sluice_stack *st, struct vm_area_struct *vma)
{
	struct sluice_kring_state *kr = sluice_kring_of(st);

	if (!kr || vma->vm_end - vma->vm_start > kr->size)
		return -EINVAL;
	/* Sets VM_DONTEXPAND | VM_DONTDUMP, so mremap cannot grow it. */
	return remap_vmalloc_range(vma, kr->k, 0);
}

/*
 * Is the IPv6 packet in @skb (@len bytes, the slot's copy) one to send:
 * version 6, its payload length @len's, a destination that can be an
 * on-link next hop (not ::, ::1 or IPv4-mapped)?  Its destination in
 * *@nh.
 */
static bool sluice_kring_tx_ok6(struct sk_buff *skb, u32 len,
				struct in6_addr *nh)
{
	const struct ipv6hdr *ip6h = ipv6_hdr(skb);
	int type;

	if (ip6h->version != 6 ||
	    ntohs(ip6h->payload_len) != len - sizeof(*ip6h))
		return false;
	*nh = ip6h->daddr;
	type = ipv6_addr_type(nh);
	return !(type & (IPV6_ADDR_LOOPBACK | IPV6_ADDR_MAPPED)) &&
	       type != IPV6_ADDR_ANY;
}

/*
 * The route of one kick's routed IPv6 packets: its last destination and
 * source and the next hop the kernel's route gave them.  A kick's batch
 * to one peer asks the FIB once (the kernel's TCP keeps a route a
 * socket); nothing is kept past the kick, so a route changed since is
 * the next kick's.
 */
struct sluice_route6 {
	bool valid;
	struct in6_addr daddr, saddr, nh;
};

/*
 * The next hop out of @dev for the IPv6 packet in @skb: the gateway of
 * the kernel's route (ip6_route_output(), the FIB's rules and tables,
 * as for a kernel socket bound to @dev), or its destination where the
 * route has none.  False for no route (an unreachable, prohibit or
 * blackhole one among them) or one through another device.
 */
static bool sluice_kring_route6(struct net_device *dev, struct sk_buff *skb,
				struct sluice_route6 *rc)
{
	const struct ipv6hdr *ip6h = ipv6_hdr(skb);
	struct flowi6 fl6 = {};
	struct dst_entry *dst;
	bool ok;

	if (rc->valid && ipv6_addr_equal(&rc->daddr, &ip6h->daddr) &&
	    ipv6_addr_equal(&rc->saddr, &ip6h->saddr))
		return true;
	fl6.flowi6_oif = dev->ifindex;
	fl6.daddr = ip6h->daddr;
	fl6.saddr = ip6h->saddr;
	fl6.flowi6_proto = ip6h->nexthdr;
	dst = ip6_route_output(dev_net(dev), NULL, &fl6);
	ok = !dst->error && dst->dev == dev;
	if (ok) {
		rc->daddr = ip6h->daddr;
		rc->saddr = ip6h->saddr;
		rc->nh = *rt6_nexthop(container_of(dst, struct rt6_info, dst),
				      &ip6h->daddr);
	}
	rc->valid = ok;
	dst_release(dst);
	return ok;
}

/*
 * Send the IPv6 packet of tx descriptor @d (read, flags checked): to its
 * destination as the on-link next hop, or with SLUICE_KRING_TX_ROUTE to
 * its route's, resolved by Neighbour Discovery.
 */
static void sluice_kring_tx6(struct sluice_kring_state *kr,
			     struct net_device *dev, u32 i,
			     const struct sluice_kring_tx *d,
			     struct sluice_route6 *rc)
{
	struct sluice_kring *k = kr->k;
	struct in6_addr nh;
	struct sk_buff *skb;
	int ret;

	if (d->nexthop || d->reserved || d->len < sizeof(struct ipv6hdr) ||
	    d->len > kr->tx_slot_size || d->len > READ_ONCE(dev->mtu))
		goto bad_desc;
	skb = alloc_skb(LL_RESERVED_SPACE(dev) + d->len, GFP_KERNEL);
	if (!skb) {
		sluice_kring_count(&k->tx_drop, 1);
		return;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	skb_reset_network_header(skb);
	skb_put_data(skb, sluice_tx_slot(kr, i), d->len);
	if (!sluice_kring_tx_ok6(skb, d->len, &nh)) {
		kfree_skb(skb);
		goto bad_desc;
	}
	if (d->flags & SLUICE_KRING_TX_ROUTE) {
		if (!sluice_kring_route6(dev, skb, rc)) {
			kfree_skb(skb);
			sluice_kring_count(&k->tx_drop, 1);
			return;
		}
		nh = rc->nh;
	}
	skb->protocol = htons(ETH_P_IPV6);
	skb->dev = dev;
	skb->ip_summed = CHECKSUM_NONE;
	/* -EAFNOSUPPORT without IPv6, -EINVAL where the device has none. */
	ret = neigh_xmit(NEIGH_ND_TABLE, dev, &nh, skb);
	if (net_xmit_eval(ret)) {
		sluice_kring_count(&k->tx_drop, 1);
		return;
	}
	sluice_kring_count(&k->tx_packets, 1);
	sluice_kring_count(&k->tx_bytes, d->len);
	return;

bad_desc:
	sluice_kring_count(&k->bad_desc, 1);
}

/*
 * Send tx entry @i.  The packet is copied into the skb first and checked
 * there: user space may change the slot while we look.
 */
static void sluice_kring_tx_one(struct sluice_kring_state *kr,
				struct net_device *dev, u32 i,
				struct sluice_route6 *rc)
{
	struct sluice_kring *k = kr->k;
	struct sluice_kring_tx d;
	const struct iphdr *iph;
	struct sk_buff *skb;
	int ret;

	d.len = READ_ONCE(sluice_tx_desc(kr, i)->len);
	d.nexthop = READ_ONCE(sluice_tx_desc(kr, i)->nexthop);
	d.flags = READ_ONCE(sluice_tx_desc(kr, i)->flags);
	d.reserved = READ_ONCE(sluice_tx_desc(kr, i)->reserved);
	/* IPv4's checks as before: the flags test was always there. */
	if (unlikely(d.flags)) {
		if (d.flags == SLUICE_KRING_TX_IPV6 ||
		    d.flags == (SLUICE_KRING_TX_IPV6 | SLUICE_KRING_TX_ROUTE)) {
			sluice_kring_tx6(kr, dev, i, &d, rc);
			return;
		}
		goto bad_desc;
	}
	if (d.reserved || d.len < sizeof(struct iphdr) ||
	    d.len > kr->tx_slot_size || d.len > READ_ONCE(dev->mtu) ||
	    ipv4_is_zeronet(d.nexthop) || ipv4_is_loopback(d.nexthop))
		goto bad_desc;

	skb = alloc_skb(LL_RESERVED_SPACE(dev) + d.len, GFP_KERNEL);
	if (!skb) {
		sluice_kring_count(&k->tx_drop, 1);
		return;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	skb_reset_network_header(skb);
	skb_put_data(skb, sluice_tx_slot(kr, i), d.len);
	iph = ip_hdr(skb);
	if (iph->version != 4 || iph->ihl < 5 || iph->ihl * 4 > d.len ||
	    ntohs(iph->tot_len) != d.len) {
		kfree_skb(skb);
		goto bad_desc;
	}
	skb->protocol = htons(ETH_P_IP);
	skb->dev = dev;
	/* The stack filled in every checksum: nothing for the device to do. */
	skb->ip_summed = CHECKSUM_NONE;
	/* Resolves (ARP) and builds the link header; always consumes the skb. */
	ret = neigh_xmit(NEIGH_ARP_TABLE, dev, &d.nexthop, skb);
	if (net_xmit_eval(ret)) {
		sluice_kring_count(&k->tx_drop, 1);
		return;
	}
	sluice_kring_count(&k->tx_packets, 1);
	sluice_kring_count(&k->tx_bytes, d.len);
	return;

bad_desc:
	sluice_kring_count(&k->bad_desc, 1);
}

int sluice_ioc_kring_kick(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_kring_state *kr;
	struct sluice_route6 rc = {};
	struct sluice_kring_kick c;
	struct sluice_kdev *kdev;
	struct net_device *dev;
	struct sluice_kring *k;
	u32 prod, n;
	int ret;

	ret = sluice_arg_in(&c, sizeof(c), offsetofend(struct sluice_kring_kick,
						       reserved), uarg);
	if (ret)
		return ret;
	if (c.flags || c.reserved)
		return -EINVAL;
	kr = sluice_kring_of(st);
	if (!kr)
		return -ENOENT;
	k = kr->k;

	rcu_read_lock();
	kdev = rcu_dereference(kr->kdev);
	dev = kdev ? kdev->dev : NULL;
	/* The notifier waits for this reference before the device goes. */
	if (dev)
		dev_hold(dev);
	rcu_read_unlock();
	if (!dev)
		return -ENODEV;

	mutex_lock(&kr->tx_lock);
	sluice_kring_count(&k->kicks, 1);
	c.sent = 0;
	/* Acquire: the descriptors and slots written before the index. */
	prod = smp_load_acquire(&k->tx.prod);
	if (prod - kr->tx_cons > kr->tx_entries) {
		/* bad_index is the rx side's too. */
		spin_lock_bh(&kr->rx_lock);
		sluice_kring_count(&k->bad_index, 1);
		spin_unlock_bh(&kr->rx_lock);
		kr->tx_cons = prod;
	}
	for (n = prod - kr->tx_cons; n; n--) {
		sluice_kring_tx_one(kr, dev, kr->tx_cons, &rc);
		kr->tx_cons++;
		c.sent++;
		cond_resched();
	}
	/* Release: we are done with the slots user space may now reuse. */
	smp_store_release(&k->tx.cons, kr->tx_cons);
	mutex_unlock(&kr->tx_lock);
	dev_put(dev);
	return sluice_arg_out(uarg, &c, sizeof(c));
}

/*
 * The stack's last file went: steer nothing into its rings any more.  The
 * rings stay (mappings may remain) until the stack is freed.
 */
void sluice_kring_stop(struct sluice_stack *st)
{
	struct sluice_kring_state *kr = sluice_kring_of(st);
	struct sluice_kdev *kdev;

	if (!kr)
		return;
	rtnl_lock();
	kdev = rtnl_dereference(kr->kdev);
	if (kdev)
		sluice_kring_unlink(kr, kdev);
	rtnl_unlock();
	/* No rx_handler writes into the rings or the region after this. */
	synchronize_net();
}

void sluice_kring_free(struct sluice_stack *st)
{
	struct sluice_kring_state *kr = st->kring;

	if (!kr)
		return;
	WARN_ON_ONCE(rcu_access_pointer(kr->kdev));
	st->kring = NULL;
	sluice_kring_destroy(kr);
}

/*
 * Under RTNL (the netdev notifier) or not (the inet6addr one): a compare
 * and exchange, so that two changes at once both move the sequence.
 */
static void sluice_kring_dev_changed(struct sluice_kring_state *kr)
{
	struct sluice_kring *k = kr->k;
	u32 seq;

	do {
		seq = READ_ONCE(k->dev_seq);
	} while (cmpxchg(&k->dev_seq, seq, seq + 1) != seq);
	sluice_stack_wake_all(kr->st);
}

static int sluice_netdev_event(struct notifier_block *nb, unsigned long event,
			       void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct sluice_kring_state *kr, *tmp;
	struct sluice_kdev *kdev;

	ASSERT_RTNL();
	kdev = sluice_kdev_of(dev);
	if (!kdev)
		return NOTIFY_DONE;
	switch (event) {
	case NETDEV_UNREGISTER:
		/* Also a move to another netns: the stack's ifindex is gone. */
		list_for_each_entry_safe(kr, tmp, &kdev->krings, node) {
			RCU_INIT_POINTER(kr->kdev, NULL);
			list_del_rcu(&kr->node);
			WRITE_ONCE(kr->k->dev_state, SLUICE_KRING_DEV_GONE);
			sluice_kring_dev_changed(kr);
		}
		/* Waits for every rx_handler call in flight. */
		netdev_rx_handler_unregister(dev);
		kfree(kdev);
		break;
	case NETDEV_CHANGEMTU:
		list_for_each_entry(kr, &kdev->krings, node) {
			WRITE_ONCE(kr->k->dev_mtu, READ_ONCE(dev->mtu));
			sluice_kring_dev_changed(kr);
		}
		break;
	case NETDEV_CHANGEADDR:
	case NETDEV_DOWN:
	case NETDEV_UP:
		list_for_each_entry(kr, &kdev->krings, node)
			sluice_kring_dev_changed(kr);
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block sluice_netdev_nb = {
	.notifier_call = sluice_netdev_event,
};

/*
 * An IPv6 address of a device stacks steer was added or removed (addrconf;
 * an atomic chain, under RCU, RTNL not always held): the stacks read the
 * device's addresses again at their dev_seq (lib/link/kring_link.c).  The
 * krings list is RCU's (list_add_tail_rcu(), list_del_rcu(), and the kdev
 * freed after netdev_rx_handler_unregister()'s synchronize_net()).
 */
static int sluice_inet6addr_event(struct notifier_block *nb,
				  unsigned long event, void *ptr)
{
	const struct inet6_ifaddr *ifa = ptr;
	struct net_device *dev = ifa->idev->dev;
	struct sluice_kring_state *kr;
	struct sluice_kdev *kdev;

	if (event != NETDEV_UP && event != NETDEV_DOWN)
		return NOTIFY_DONE;
	rcu_read_lock();
	kdev = rcu_access_pointer(dev->rx_handler) == sluice_rx_handler ?
	       rcu_dereference(dev->rx_handler_data) : NULL;
	if (kdev)
		list_for_each_entry_rcu(kr, &kdev->krings, node)
			sluice_kring_dev_changed(kr);
	rcu_read_unlock();
	return NOTIFY_DONE;
}

static struct notifier_block sluice_inet6addr_nb = {
	.notifier_call = sluice_inet6addr_event,
};

/* The stack's debugfs dump: rings as made, indices and counters as found. */
void sluice_kring_show(struct seq_file *m, struct sluice_stack *st)
{
	struct sluice_kring_state *kr = sluice_kring_of(st);
	const struct sluice_kring *k;

	if (!kr) {
		seq_puts(m, "kring none\n");
		return;
	}
	k = kr->k;
	seq_puts(m, "kring\n");
	seq_printf(m, "  size %zu rx_entries %u tx_entries %u tx_slot_size %u\n",
		   kr->size, kr->rx_entries, kr->tx_entries, kr->tx_slot_size);
	seq_printf(m, "  rx_off %llu fill_off %llu tx_off %llu tx_slots_off %llu\n",
		   kr->rx_off, kr->fill_off, kr->tx_off, kr->tx_slots_off);
	seq_printf(m, "  ifindex %u steering %d dev_state %u dev_mtu %u dev_seq %u\n",
		   kr->ifindex, !!rcu_access_pointer(kr->kdev),
		   READ_ONCE(k->dev_state), READ_ONCE(k->dev_mtu),
		   READ_ONCE(k->dev_seq));
	seq_printf(m, "  rx prod %u cons %u fill prod %u cons %u tx prod %u cons %u\n",
		   READ_ONCE(k->rx.prod), READ_ONCE(k->rx.cons),
		   READ_ONCE(k->fill.prod), READ_ONCE(k->fill.cons),
		   READ_ONCE(k->tx.prod), READ_ONCE(k->tx.cons));
	seq_printf(m, "  rx_packets %llu rx_bytes %llu rx_drop_ring %llu rx_drop_fill %llu rx_drop_size %llu\n",
		   READ_ONCE(k->rx_packets), READ_ONCE(k->rx_bytes),
		   READ_ONCE(k->rx_drop_ring), READ_ONCE(k->rx_drop_fill),
		   READ_ONCE(k->rx_drop_size));
	seq_printf(m, "  tx_packets %llu tx_bytes %llu tx_drop %llu kicks %llu\n",
		   READ_ONCE(k->tx_packets), READ_ONCE(k->tx_bytes),
		   READ_ONCE(k->tx_drop), READ_ONCE(k->kicks));
	seq_printf(m, "  bad_index %llu bad_buf %llu bad_desc %llu\n",
		   READ_ONCE(k->bad_index), READ_ONCE(k->bad_buf),
		   READ_ONCE(k->bad_desc));
	seq_printf(m, "  module rx_prod %u fill_cons %u tx_cons %u rx_gso_split %llu rx_pass_size %lld\n",
		   READ_ONCE(kr->rx_prod), READ_ONCE(kr->fill_cons),
		   READ_ONCE(kr->tx_cons), READ_ONCE(kr->rx_gso_split),
		   (long long)atomic64_read(&kr->rx_pass_size));
}

int sluice_kring_init(void)
{
	int ret;

	sluice_errfrag_init();
	ret = register_netdevice_notifier(&sluice_netdev_nb);
	if (ret)
		return ret;
	ret = register_inet6addr_notifier(&sluice_inet6addr_nb);
	if (ret)
		goto err_netdev;
	return 0;

err_netdev:
	unregister_netdevice_notifier(&sluice_netdev_nb);
	return ret;
}

void sluice_kring_exit(void)
{
	unregister_inet6addr_notifier(&sluice_inet6addr_nb);
	unregister_netdevice_notifier(&sluice_netdev_nb);
}
