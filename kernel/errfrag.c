// SPDX-License-Identifier: GPL-2.0-only
/*
 * The received packets that name a stack's socket only inside them
 * (issue 19 item 2, issue 20 item 2): ICMP errors whose quoted header is
 * a packet one of the stack's sockets sent, and IP fragments of a
 * datagram to one.  Without them the stack learnt no path MTU below its
 * device's (a router's "fragmentation needed" or Packet Too Big went to
 * the kernel, which has no socket for the connection) and lost every
 * datagram a peer had to fragment.
 *
 * Call chains (from kring.c's rx_handler, off the TCP and UDP path):
 *   ICMP:      sluice_errfrag4/6 -> sluice_icmp4/6 -> sluice_filter_match{,6}_err
 *   fragments: sluice_errfrag4/6 -> sluice_frag4/6 -> sluice_filter_match{,6}
 *              (the first) or the train table (the rest)
 *
 * ICMP: IPv4 destination unreachable, time exceeded and parameter problem;
 * ICMPv6 destination unreachable, packet too big, time exceeded and
 * parameter problem: the errors the stack's TCP and UDP act on.  The
 * quoted header must be whole (its IP header, options or a fragment
 * header, and the first 8 bytes of TCP or UDP), of version 4 or 6 as the
 * outer one, the first (or only) fragment of its datagram, from the
 * address the error is sent to; the filter asked is the one that takes the
 * quoted packet's replies (its addresses and ports reversed).  Anything
 * else, Neighbour Discovery and echo among it, is the kernel's.  The
 * stack then believes the error as on any link (RFC 5927: the sequence
 * number in the window, lib/proto).
 *
 * Fragments: only the first carries the ports.  A first fragment whose
 * datagram a filter claims records its train (netns, device, addresses,
 * identification, protocol, ports) in a small table here; the fragments
 * after it that match the train go to the same stack (the filters asked
 * again with the recorded ports, so a filter gone since leaves them to the
 * kernel), and the stack reassembles (lib/proto/ip.c, Linux's rules).
 * Linux's senders send the first fragment first; one that comes before it
 * is the kernel's, and that datagram is lost, as it would be to a
 * receiver that kept no fragment it could not place.  A train is kept for
 * Linux's reassembly time (ipfrag_time 30 s, ip6frag_time 60 s) or until
 * another hashes to its slot.  The table is taken with a spinlock: only
 * fragments come here.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/jiffies.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <net/ip.h>
#include <net/ipv6.h>

#include "sluice.h"

#define SLUICE_TRAINS		256	/* a power of two */
#define SLUICE_TRAIN_TIME4	(30 * HZ)	/* Linux's ipfrag_time */
#define SLUICE_TRAIN_TIME6	(60 * HZ)	/* Linux's ip6frag_time */

/* What names a train: RFC 791's (src, dst, protocol, id), RFC 8200's. */
struct sluice_train_key {
	struct in6_addr saddr;	/* IPv4: s6_addr32[0] */
	struct in6_addr daddr;
	__be32 id;
	int ifindex;
	u8 family;
	u8 protocol;
	u8 pad[2];
};

struct sluice_train {
	struct sluice_train_key key;
	const struct net *net;	/* compared, never followed */
	unsigned long expires;	/* jiffies; 0: free */
	__be16 sport, dport;
};

static struct sluice_train sluice_trains[SLUICE_TRAINS];
static DEFINE_SPINLOCK(sluice_trains_lock);
static u32 sluice_trains_seed __read_mostly;

static u32 sluice_train_slot(const struct net *net,
			     const struct sluice_train_key *k)
{
	return jhash2((const u32 *)k, sizeof(*k) / sizeof(u32),
		      sluice_trains_seed ^ (u32)(unsigned long)net) &
		(SLUICE_TRAINS - 1);
}

static void sluice_train_record(const struct net *net,
				const struct sluice_train_key *k,
				__be16 sport, __be16 dport)
{
	struct sluice_train *t = &sluice_trains[sluice_train_slot(net, k)];

	spin_lock_bh(&sluice_trains_lock);
	t->key = *k;
	t->net = net;
	t->sport = sport;
	t->dport = dport;
	t->expires = (jiffies + (k->family == AF_INET ? SLUICE_TRAIN_TIME4 :
				 SLUICE_TRAIN_TIME6)) | 1;
	spin_unlock_bh(&sluice_trains_lock);
}

/* The ports of @k's train, if a first fragment recorded it. */
static bool sluice_train_find(const struct net *net,
			      const struct sluice_train_key *k,
			      __be16 *sport, __be16 *dport)
{
	struct sluice_train *t = &sluice_trains[sluice_train_slot(net, k)];
	bool found;

	spin_lock_bh(&sluice_trains_lock);
	found = t->expires && time_before(jiffies, t->expires) &&
		t->net == net && !memcmp(&t->key, k, sizeof(*k));
	if (found) {
		*sport = t->sport;
		*dport = t->dport;
	}
	spin_unlock_bh(&sluice_trains_lock);
	return found;
}

/* Does a packet of @len bytes fit one of @st's buffers after the headroom? */
static bool sluice_fits(const struct sluice_stack *st, unsigned int len)
{
	return len <= st->buf_size - min(st->buf_size, SLUICE_KRING_RX_HEADROOM);
}

static bool sluice_l4(u8 protocol)
{
	return protocol == IPPROTO_TCP || protocol == IPPROTO_UDP;
}

/* An IPv4 fragment (@iph, @len bytes, whole in @skb). */
static struct sluice_stack *sluice_frag4(struct sk_buff *skb,
					 const struct iphdr *iph,
					 unsigned int len)
{
	struct net_device *dev = skb->dev;
	struct net *net = dev_net(dev);
	unsigned int ihl = iph->ihl * 4;
	struct sluice_train_key k = {};
	struct sluice_stack *st;
	const __be16 *ports;
	__be16 _ports[2];

	if (!sluice_l4(iph->protocol) || len <= ihl)
		return NULL;
	k.saddr.s6_addr32[0] = iph->saddr;
	k.daddr.s6_addr32[0] = iph->daddr;
	k.id = (__force __be32)iph->id;
	k.ifindex = dev->ifindex;
	k.family = AF_INET;
	k.protocol = iph->protocol;
	if (iph->frag_off & htons(IP_OFFSET)) {
		if (!sluice_train_find(net, &k, &_ports[0], &_ports[1]))
			return NULL;
		st = sluice_filter_match(net, dev->ifindex, iph->protocol,
					 iph->saddr, _ports[0], iph->daddr,
					 _ports[1], NULL, 0);
		return st && sluice_fits(st, len) ? st : NULL;
	}
	/* The first: its ports (the kernel's lookup of a shared port too). */
	if (len < ihl + 8)
		return NULL;
	ports = skb_header_pointer(skb, ihl, sizeof(_ports), _ports);
	if (!ports)
		return NULL;
	st = sluice_filter_match(net, dev->ifindex, iph->protocol, iph->saddr,
				 ports[0], iph->daddr, ports[1], skb, ihl);
	/* One that does not fit: the whole datagram is the kernel's. */
	if (!st || !sluice_fits(st, len))
		return NULL;
	sluice_train_record(net, &k, ports[0], ports[1]);
	return st;
}

/* An IPv4 ICMP message (@iph, @len bytes, whole in @skb), not a fragment. */
static struct sluice_stack *sluice_icmp4(struct sk_buff *skb,
					 const struct iphdr *iph,
					 unsigned int len)
{
	struct net_device *dev = skb->dev;
	unsigned int ihl = iph->ihl * 4, qhl;
	const struct icmphdr *ic;
	const struct iphdr *q;
	struct icmphdr _ic;
	struct iphdr _q;
	const __be16 *ports;
	__be16 _ports[2];

	ic = skb_header_pointer(skb, ihl, sizeof(_ic), &_ic);
	if (!ic || (ic->type != ICMP_DEST_UNREACH &&
		    ic->type != ICMP_TIME_EXCEEDED &&
		    ic->type != ICMP_PARAMETERPROB))
		return NULL;
	q = skb_header_pointer(skb, ihl + sizeof(_ic), sizeof(_q), &_q);
	if (!q || q->version != 4 || q->ihl < 5 || !sluice_l4(q->protocol) ||
	    (q->frag_off & htons(IP_OFFSET)) || q->saddr != iph->daddr)
		return NULL;
	qhl = q->ihl * 4;
	/* The quoted header whole, and 8 bytes of TCP or UDP (RFC 792). */
	if (len < ihl + sizeof(_ic) + qhl + 8)
		return NULL;
	ports = skb_header_pointer(skb, ihl + sizeof(_ic) + qhl,
				   sizeof(_ports), _ports);
	if (!ports)
		return NULL;
	return sluice_filter_match_err(dev_net(dev), dev->ifindex, q->protocol,
				       q->saddr, ports[0], q->daddr, ports[1]);
}

struct sluice_stack *sluice_errfrag4(struct sk_buff *skb,
				     const struct iphdr *iph, unsigned int len)
{
	if (ip_is_fragment(iph))
		return sluice_frag4(skb, iph, len);
	if (iph->protocol == IPPROTO_ICMP)
		return sluice_icmp4(skb, iph, len);
	return NULL;
}

/*
 * An IPv6 fragment: a fragment header right after the fixed one (another
 * extension header first is the kernel's, as before), of TCP or UDP.
 */
static struct sluice_stack *sluice_frag6(struct sk_buff *skb,
					 const struct ipv6hdr *ip6h,
					 unsigned int len)
{
	struct net_device *dev = skb->dev;
	struct net *net = dev_net(dev);
	const unsigned int fhoff = sizeof(*ip6h);
	const unsigned int thoff = fhoff + sizeof(struct frag_hdr);
	struct sluice_train_key k = {};
	const struct frag_hdr *fh;
	struct sluice_stack *st;
	struct frag_hdr _fh;
	const __be16 *ports;
	__be16 _ports[2];

	fh = skb_header_pointer(skb, fhoff, sizeof(_fh), &_fh);
	if (!fh || !sluice_l4(fh->nexthdr) || len <= thoff)
		return NULL;
	k.saddr = ip6h->saddr;
	k.daddr = ip6h->daddr;
	k.id = fh->identification;
	k.ifindex = dev->ifindex;
	k.family = AF_INET6;
	k.protocol = fh->nexthdr;
	if (fh->frag_off & htons(IP6_OFFSET)) {
		if (!sluice_train_find(net, &k, &_ports[0], &_ports[1]))
			return NULL;
		st = sluice_filter_match6(net, dev->ifindex, fh->nexthdr,
					  &ip6h->saddr, _ports[0],
					  &ip6h->daddr, _ports[1], NULL, 0);
		return st && sluice_fits(st, len) ? st : NULL;
	}
	if (len < thoff + 8)
		return NULL;
	ports = skb_header_pointer(skb, thoff, sizeof(_ports), _ports);
	if (!ports)
		return NULL;
	st = sluice_filter_match6(net, dev->ifindex, fh->nexthdr, &ip6h->saddr,
				  ports[0], &ip6h->daddr, ports[1], skb, thoff);
	if (!st || !sluice_fits(st, len))
		return NULL;
	sluice_train_record(net, &k, ports[0], ports[1]);
	return st;
}

/*
 * An ICMPv6 error right after the fixed header; its quoted packet's
 * TCP or UDP header right after the quoted fixed header, or after a
 * fragment header of a first fragment (the stack's own fragments).
 */
static struct sluice_stack *sluice_icmp6(struct sk_buff *skb,
					 const struct ipv6hdr *ip6h,
					 unsigned int len)
{
	struct net_device *dev = skb->dev;
	unsigned int qoff = sizeof(*ip6h) + sizeof(struct icmp6hdr), thoff;
	const struct icmp6hdr *ic;
	const struct ipv6hdr *q;
	const struct frag_hdr *fh;
	struct icmp6hdr _ic;
	struct ipv6hdr _q;
	struct frag_hdr _fh;
	const __be16 *ports;
	__be16 _ports[2];
	u8 protocol;

	ic = skb_header_pointer(skb, sizeof(*ip6h), sizeof(_ic), &_ic);
	if (!ic || (ic->icmp6_type != ICMPV6_DEST_UNREACH &&
		    ic->icmp6_type != ICMPV6_PKT_TOOBIG &&
		    ic->icmp6_type != ICMPV6_TIME_EXCEED &&
		    ic->icmp6_type != ICMPV6_PARAMPROB))
		return NULL;
	q = skb_header_pointer(skb, qoff, sizeof(_q), &_q);
	if (!q || q->version != 6 || !ipv6_addr_equal(&q->saddr, &ip6h->daddr))
		return NULL;
	protocol = q->nexthdr;
	thoff = qoff + sizeof(_q);
	if (protocol == NEXTHDR_FRAGMENT) {
		fh = skb_header_pointer(skb, thoff, sizeof(_fh), &_fh);
		if (!fh || (fh->frag_off & htons(IP6_OFFSET)))
			return NULL;
		protocol = fh->nexthdr;
		thoff += sizeof(_fh);
	}
	/* The first 8 bytes of TCP or UDP: ports, and TCP's sequence. */
	if (!sluice_l4(protocol) || len < thoff + 8)
		return NULL;
	ports = skb_header_pointer(skb, thoff, sizeof(_ports), _ports);
	if (!ports)
		return NULL;
	return sluice_filter_match6_err(dev_net(dev), dev->ifindex, protocol,
					&q->saddr, ports[0], &q->daddr,
					ports[1]);
}

struct sluice_stack *sluice_errfrag6(struct sk_buff *skb,
				     const struct ipv6hdr *ip6h,
				     unsigned int len)
{
	if (ip6h->nexthdr == NEXTHDR_FRAGMENT)
		return sluice_frag6(skb, ip6h, len);
	if (ip6h->nexthdr == IPPROTO_ICMPV6)
		return sluice_icmp6(skb, ip6h, len);
	return NULL;
}

void sluice_errfrag_init(void)
{
	sluice_trains_seed = get_random_u32();
}
