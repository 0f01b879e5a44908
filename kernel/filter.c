// SPDX-License-Identifier: GPL-2.0-only
/*
 * Filters: which packets arriving on a stack's device belong to the stack
 * (SLUICE_IOC_FILTER_ADD / _DEL), each with its local port reserved in the
 * kernel by a socket bound with the caller's credentials.
 *
 * One global rhashtable holds every IPv4 filter of every stack, keyed by
 * the whole (netns, ifindex, protocol, local, remote) tuple, and a second
 * one the IPv6 filters (SLUICE_FILTER_IPV6), keyed likewise with 16-byte
 * addresses: the family is the table's, so an IPv4 packet hashes and
 * compares the key it always did.  The receive path looks a packet up in
 * its family's table at most three times (5-tuple, 3-tuple on the
 * packet's local address, 3-tuple on any address), lock-free under RCU.
 * Writers take the stack's own mutex; the rhashtable orders concurrent
 * writers of different stacks.  Each stack's filters are also indexed by
 * id in an xarray, its list for DEL, teardown and the debugfs dump.
 *
 * Reservations (family, protocol, local address, local port) are shared by
 * the filters of one stack that they cover: the same 3-tuple, or the same
 * family, protocol and port with a wildcard (0 or ::) local address, so a
 * listener on *:80 covers the connections it accepts on 10.0.0.1:80.
 * They live in a third global rhashtable keyed by (stack, family,
 * protocol, laddr, lport), only ever used under that stack's mutex.
 *
 * A port the reservation shares with kernel sockets (its SO_REUSEADDR or
 * SO_REUSEPORT let them bind it too) is judged as the kernel would judge
 * it: a packet a 3-tuple filter claims there goes to the stack only if
 * the kernel's own lookup would give it to the reservation, to one of the
 * stack's other sockets on the port (its SO_REUSEPORT siblings' kernel
 * twins, FILTER_ADD with SLUICE_FILTER_SIBLING), or to nobody; otherwise
 * the kernel's receive path takes it (sluice_kernel_takes()).
 *
 * Lifetime: a filter and a reservation are freed after an RCU grace
 * period (kfree_rcu); when the last file of a stack goes,
 * sluice_filter_stack_release() unhashes every filter and waits for a
 * grace period (synchronize_net) before it returns, so no reader that
 * found the stack through a filter can still hold it when the stack is
 * freed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <net/sock_reuseport.h>
#include <net/tcp.h>
#include <net/udp.h>

#include "sluice.h"

static unsigned int filter_max = SLUICE_FILTER_MAX;
module_param(filter_max, uint, 0644);
MODULE_PARM_DESC(filter_max, "Filters per stack, at most 65536 (default 65536)");

/* The whole key is hashed and compared: no implicit padding. */
struct sluice_filter_key {
	const struct net *net;
	s32 ifindex;
	__be32 laddr;
	__be32 raddr;
	__be16 lport;
	__be16 rport;
	u8 protocol;
	u8 pad[7];
};

struct sluice_filter6_key {
	const struct net *net;
	s32 ifindex;
	u8 protocol;
	u8 pad[3];
	struct in6_addr laddr;
	struct in6_addr raddr;
	__be16 lport;
	__be16 rport;
	u8 pad2[4];
};

/*
 * A filter's tuple as FILTER_ADD names it, either family: an IPv4 address
 * in s6_addr32[3], the rest zero.
 */
struct sluice_ftuple {
	struct in6_addr laddr;
	struct in6_addr raddr;
	__be16 lport;
	__be16 rport;
	u8 protocol;
	u8 family;
};

struct sluice_resv_key {
	const struct sluice_stack *st;
	struct in6_addr laddr;		/* IPv4: s6_addr32[3] */
	__be16 lport;
	u8 protocol;
	u8 family;
	u8 pad[4];
};

/* The stack's other kernel sockets on a reservation's port, held. */
#define SLUICE_RESV_SIBS_MAX	64

struct sluice_resv_sibs {
	struct rcu_head rcu;
	unsigned int n;
	struct sock *sk[];
};

/*
 * A port reservation: a bound socket, shared by the filters it covers.
 * Once FILTER_FD has given it to user space as a twin, @file holds it
 * (and is what the last filter's put lets go); @rcvbuf is its receive
 * buffer before the reservation shrank it.  @own: the caller's socket
 * (FILTER_ADD with SLUICE_FILTER_RESV_FD), its file held from the start;
 * @bindport_lock: it had SOCK_BINDPORT_LOCK before (else the last put
 * takes it off again).  @sk: the socket's sock, for the receive path,
 * which compares it with the kernel's lookup and reads its options: TCP
 * and UDP socks are SLAB_TYPESAFE_BY_RCU, so a reader that found the
 * reservation may read one released under it until its grace period
 * ends.  @sibs: the stack's other sockets' kernel twins on the port
 * (SLUICE_FILTER_SIBLING), each held, RCU-published.
 */
struct sluice_resv {
	struct rhash_head node;
	struct sluice_resv_key key;
	struct socket *sock;
	struct file *file;
	struct sock *sk;
	struct sluice_resv_sibs __rcu *sibs;
	int rcvbuf;
	unsigned int refs;		/* under the stack's filter mutex */
	bool own;
	bool bindport_lock;
	struct rcu_head rcu;
};

/* Per stack; made on the first FILTER_ADD, freed when the stack goes. */
struct sluice_stack_filters {
	struct sluice_stack *st;
	struct mutex lock;		/* writers of this stack's filters */
	struct xarray ids;		/* id -> struct sluice_kfilter */
	u32 next_id;
	unsigned int count;
	bool published;			/* a filter was ever hashed */
	atomic64_t adds;
	atomic64_t dels;
	atomic64_t matches;
};

struct sluice_kfilter {
	struct rhash_head node;
	union {				/* @family's table's key */
		struct sluice_filter_key key;
		struct sluice_filter6_key key6;
	};
	u8 family;			/* AF_INET or AF_INET6 */
	struct sluice_stack_filters *fs;
	struct sluice_resv *resv;	/* NULL for a hand-off entry */
	/*
	 * A hand-off entry (SLUICE_IOC_HANDOFF): the kernel socket that took
	 * the connection, held.  TCP sockets are SLAB_TYPESAFE_BY_RCU, so a
	 * reader that found the entry may read its state until the grace
	 * period after the unhashing even if the last reference went.
	 */
	struct sock *ksk;
	u32 id;
	/*
	 * @kshared: a kernel socket has (or had) a connection on the port,
	 * so every segment there asks the kernel's established table
	 * first; set once, by FILTER_ADD or the receive path.  @kernel:
	 * packets the kernel's lookup gave to a kernel socket.
	 */
	bool kshared;
	atomic64_t matches;
	atomic64_t kernel;
	struct rcu_head rcu;
};

static const struct rhashtable_params sluice_filter_params = {
	.head_offset = offsetof(struct sluice_kfilter, node),
	.key_offset = offsetof(struct sluice_kfilter, key),
	.key_len = sizeof(struct sluice_filter_key),
	.automatic_shrinking = true,
};

static const struct rhashtable_params sluice_filter6_params = {
	.head_offset = offsetof(struct sluice_kfilter, node),
	.key_offset = offsetof(struct sluice_kfilter, key6),
	.key_len = sizeof(struct sluice_filter6_key),
	.automatic_shrinking = true,
};

static const struct rhashtable_params sluice_resv_params = {
	.head_offset = offsetof(struct sluice_resv, node),
	.key_offset = offsetof(struct sluice_resv, key),
	.key_len = sizeof(struct sluice_resv_key),
	.automatic_shrinking = true,
};

static struct rhashtable sluice_filter_ht;
static struct rhashtable sluice_filter6_ht;
static struct rhashtable sluice_resv_ht;
/* Serialises making a stack's filter state, nothing else. */
static DEFINE_MUTEX(sluice_filters_make_lock);

static void sluice_filter_key_make(struct sluice_filter_key *k,
				   const struct net *net, int ifindex,
				   u8 protocol, __be32 laddr, __be16 lport,
				   __be32 raddr, __be16 rport)
{
	memset(k, 0, sizeof(*k));
	k->net = net;
	k->ifindex = ifindex;
	k->protocol = protocol;
	k->laddr = laddr;
	k->lport = lport;
	k->raddr = raddr;
	k->rport = rport;
}

static void sluice_filter6_key_make(struct sluice_filter6_key *k,
				    const struct net *net, int ifindex,
				    u8 protocol, const struct in6_addr *laddr,
				    __be16 lport, const struct in6_addr *raddr,
				    __be16 rport)
{
	memset(k, 0, sizeof(*k));
	k->net = net;
	k->ifindex = ifindex;
	k->protocol = protocol;
	k->laddr = *laddr;
	k->lport = lport;
	k->raddr = *raddr;
	k->rport = rport;
}

/* A hand-off entry whose kernel socket still holds the connection. */
static bool sluice_handoff_live(const struct sluice_kfilter *f)
{
	return READ_ONCE(f->ksk->sk_state) != TCP_CLOSE;
}

/*
 * Under rcu_read_lock().  The 5-tuple first; a hand-off entry whose kernel
 * socket is closed is passed over (the stack's 3-tuple filters take the
 * tuple again), a live one is returned as it is.
 */
static struct sluice_kfilter *sluice_filter_find(struct net *net, int ifindex,
						 u8 protocol,
						 __be32 saddr, __be16 sport,
						 __be32 daddr, __be16 dport)
{
	struct sluice_filter_key k;
	struct sluice_kfilter *f;

	if (!atomic_read(&sluice_filter_ht.nelems))
		return NULL;
	sluice_filter_key_make(&k, net, ifindex, protocol, daddr, dport,
			       saddr, sport);
	f = rhashtable_lookup(&sluice_filter_ht, &k, sluice_filter_params);
	if (f && (!f->ksk || sluice_handoff_live(f)))
		return f;
	k.raddr = 0;
	k.rport = 0;
	f = rhashtable_lookup(&sluice_filter_ht, &k, sluice_filter_params);
	if (f || !daddr)
		return f;
	k.laddr = 0;
	return rhashtable_lookup(&sluice_filter_ht, &k, sluice_filter_params);
}

/* Is @sk the reservation's socket or a sibling the stack named? */
static bool sluice_resv_ours(const struct sluice_resv *r, const struct sock *sk)
{
	const struct sluice_resv_sibs *sibs;
	unsigned int i;

	if (sk == READ_ONCE(r->sk))
		return true;
	sibs = rcu_dereference(r->sibs);
	for (i = 0; sibs && i < sibs->n; i++)
		if (sibs->sk[i] == sk)
			return true;
	return false;
}

/*
 * What the kernel's lookup of a reply found, its reference dropped: a TCP
 * connection, request or TIME-WAIT (@est, from an established-table
 * lookup) always takes it; a UDP socket (@udp) unless it is the
 * reservation of @f's stack.
 */
static bool sluice_est_found(struct sock *est)
{
	if (!est)
		return false;
	sock_gen_put(est);
	return true;
}

static bool sluice_udp_found(const struct sluice_kfilter *f, struct sock *udp)
{
	bool takes;

	if (!udp)
		return false;
	takes = !sluice_resv_ours(f->resv, udp);
	sock_put(udp);
	return takes;
}

/* @takes, counted in @f's kernel when true. */
static bool sluice_kernel_counted(struct sluice_kfilter *f, bool takes)
{
	if (takes)
		atomic64_inc(&f->kernel);
	return takes;
}

/*
 * TCP: a segment of a connection, request or TIME-WAIT the kernel has
 * (looked for on a SYN, and on every segment once the port is known to
 * carry kernel connections), or a SYN whose listener, as the kernel
 * would choose it (the reuseport group's hash, the best-scoring
 * listener), is not the stack's.  Other segments are the stack's
 * connections': its SYN went to the stack, and the kernel has none of
 * this tuple.  (A SYN-ACK is a SYN: a kernel socket's connect() from the
 * port is found so.)
 */
static bool sluice_tcp_kernel_takes(struct sluice_kfilter *f, struct net *net,
				    int ifindex, const struct tcphdr *th,
				    const struct iphdr *iph)
{
	struct inet_hashinfo *h = net->ipv4.tcp_death_row.hashinfo;
	struct sock *sk;

	if (th->syn || READ_ONCE(f->kshared)) {
		sk = __inet_lookup_established(net, h, iph->saddr, th->source,
					       iph->daddr, ntohs(th->dest),
					       ifindex, 0);
		if (sluice_est_found(sk))
			return true;
	}
	if (!th->syn || th->ack)
		return false;
	/* No skb: a reuseport BPF program would see the IP header. */
	sk = __inet_lookup_listener(net, h, NULL, 0, iph->saddr, th->source,
				    iph->daddr, ntohs(th->dest), ifindex, 0);
	return sk && !sluice_resv_ours(f->resv, sk);
}

/*
 * Does @f's reservation share its port (SO_REUSEADDR, SO_REUSEPORT, read
 * live: set after bind() they count)?  Nobody else can hold it without.
 */
static bool sluice_resv_shared(const struct sluice_kfilter *f)
{
	const struct sock *rsk;

	if (!f->resv)
		return false;
	rsk = READ_ONCE(f->resv->sk);
	return rsk && (rsk->sk_reuse || rsk->sk_reuseport);
}

/*
 * Would the kernel's own lookup give @skb (IPv4 at skb->data, its
 * transport header at @thoff), which 3-tuple filter @f claims, to a
 * kernel socket that is not the stack's?  Asked only of a port the
 * reservation shares (SO_REUSEADDR, SO_REUSEPORT): nobody else can hold
 * one without.  UDP: the socket the kernel's scoring and reuseport group
 * pick (unicast only: a group's or a broadcast datagram stays the
 * stack's).  Under rcu_read_lock().
 */
static noinline bool sluice_kernel_lookup(struct sluice_kfilter *f,
					  const struct sk_buff *skb,
					  unsigned int thoff)
{
	struct net_device *dev = skb->dev;
	struct net *net = dev_net(dev);
	const struct iphdr *iph;
	struct iphdr _iph;
	struct tcphdr _th;
	const struct tcphdr *th;
	const __be16 *ports;
	struct sock *sk;
	bool takes;

	iph = skb_header_pointer(skb, 0, sizeof(_iph), &_iph);
	/* (The whole TCP header's first 14 bytes, or the UDP ports.) */
	th = skb_header_pointer(skb, thoff, f->key.protocol == IPPROTO_TCP ?
				sizeof(_th) : 2 * sizeof(__be16), &_th);
	if (!iph || !th)
		return false;
	if (f->key.protocol == IPPROTO_TCP) {
		takes = sluice_tcp_kernel_takes(f, net, dev->ifindex, th, iph);
		if (takes && !READ_ONCE(f->kshared))
			WRITE_ONCE(f->kshared, true);
	} else {
		if (ipv4_is_multicast(iph->daddr) || ipv4_is_lbcast(iph->daddr))
			return false;
		ports = (const __be16 *)th;
		/*
		 * The exported lookup that finds the netns's own table (6.2
		 * gave each its own) takes a reference.
		 */
		sk = udp4_lib_lookup(net, iph->saddr, ports[0], iph->daddr,
				     ports[1], dev->ifindex);
		takes = sluice_udp_found(f, sk);
	}
	return sluice_kernel_counted(f, takes);
}

/*
 * The receive path's question, asked only of a port that may be shared
 * (the lookup itself out of line: the path of every other packet stays
 * a few loads and tests).
 */
static bool sluice_kernel_takes(struct sluice_kfilter *f,
				const struct sk_buff *skb, unsigned int thoff)
{
	if (!skb || f->key.rport || !sluice_resv_shared(f))
		return false;
	return sluice_kernel_lookup(f, skb, thoff);
}

/*
 * IPv6's sluice_tcp_kernel_takes(): the same questions of the kernel's
 * IPv6 tables (an AF_INET6 socket, IPv6-only or dual-stack, is found
 * there; an AF_INET one never takes an IPv6 packet).
 */
static bool sluice_tcp6_kernel_takes(struct sluice_kfilter *f, struct net *net,
				     int ifindex, const struct tcphdr *th,
				     const struct ipv6hdr *ip6h)
{
	struct inet_hashinfo *h = net->ipv4.tcp_death_row.hashinfo;
	struct sock *sk;

	if (th->syn || READ_ONCE(f->kshared)) {
		sk = __inet6_lookup_established(net, h, &ip6h->saddr,
						th->source, &ip6h->daddr,
						ntohs(th->dest), ifindex, 0);
		if (sluice_est_found(sk))
			return true;
	}
	if (!th->syn || th->ack)
		return false;
	/* No skb: a reuseport BPF program would see the IPv6 header. */
	sk = inet6_lookup_listener(net, h, NULL, 0, &ip6h->saddr, th->source,
				   &ip6h->daddr, ntohs(th->dest), ifindex, 0);
	return sk && !sluice_resv_ours(f->resv, sk);
}

/*
 * As sluice_kernel_lookup(), for an IPv6 packet (its TCP or UDP header
 * at @thoff: right after the fixed header, or a first fragment's) that
 * IPv6 3-tuple filter @f claims.  UDP: unicast only (a multicast
 * datagram stays the stack's).  Under rcu_read_lock().
 */
static noinline bool sluice_kernel_lookup6(struct sluice_kfilter *f,
					   const struct sk_buff *skb,
					   unsigned int thoff)
{
	struct net_device *dev = skb->dev;
	struct net *net = dev_net(dev);
	const struct ipv6hdr *ip6h;
	struct ipv6hdr _ip6h;
	struct tcphdr _th;
	const struct tcphdr *th;
	const __be16 *ports;
	struct sock *sk;
	bool takes;

	ip6h = skb_header_pointer(skb, 0, sizeof(_ip6h), &_ip6h);
	th = skb_header_pointer(skb, thoff,
				f->key6.protocol == IPPROTO_TCP ?
				sizeof(_th) : 2 * sizeof(__be16), &_th);
	if (!ip6h || !th)
		return false;
	if (f->key6.protocol == IPPROTO_TCP) {
		takes = sluice_tcp6_kernel_takes(f, net, dev->ifindex, th,
						 ip6h);
		if (takes && !READ_ONCE(f->kshared))
			WRITE_ONCE(f->kshared, true);
	} else {
		if (ipv6_addr_is_multicast(&ip6h->daddr))
			return false;
		ports = (const __be16 *)th;
		/* Takes a reference, as udp4_lib_lookup() does. */
		sk = udp6_lib_lookup(net, &ip6h->saddr, ports[0],
				     &ip6h->daddr, ports[1], dev->ifindex);
		takes = sluice_udp_found(f, sk);
	}
	return sluice_kernel_counted(f, takes);
}

/* Under rcu_read_lock(): as sluice_filter_find(), IPv6. */
static struct sluice_kfilter *
sluice_filter_find6(struct net *net, int ifindex, u8 protocol,
		    const struct in6_addr *saddr, __be16 sport,
		    const struct in6_addr *daddr, __be16 dport)
{
	struct sluice_filter6_key k;
	struct sluice_kfilter *f;

	if (!atomic_read(&sluice_filter6_ht.nelems))
		return NULL;
	sluice_filter6_key_make(&k, net, ifindex, protocol, daddr, dport,
				saddr, sport);
	f = rhashtable_lookup(&sluice_filter6_ht, &k, sluice_filter6_params);
	if (f && (!f->ksk || sluice_handoff_live(f)))
		return f;
	memset(&k.raddr, 0, sizeof(k.raddr));
	k.rport = 0;
	f = rhashtable_lookup(&sluice_filter6_ht, &k, sluice_filter6_params);
	if (f || ipv6_addr_any(daddr))
		return f;
	memset(&k.laddr, 0, sizeof(k.laddr));
	return rhashtable_lookup(&sluice_filter6_ht, &k, sluice_filter6_params);
}

static struct sluice_stack *sluice_filter_matched(struct sluice_kfilter *f)
{
	if (!f)
		return NULL;
	atomic64_inc(&f->matches);
	atomic64_inc(&f->fs->matches);
	/* Handed off: the kernel's receive path takes it. */
	return f->ksk ? NULL : f->fs->st;
}

struct sluice_stack *sluice_filter_match(struct net *net, int ifindex, u8 protocol,
					 __be32 saddr, __be16 sport,
					 __be32 daddr, __be16 dport,
					 const struct sk_buff *skb,
					 unsigned int thoff)
{
	struct sluice_kfilter *f;

	f = sluice_filter_find(net, ifindex, protocol, saddr, sport, daddr,
			       dport);
	if (!f)
		return NULL;
	atomic64_inc(&f->matches);
	atomic64_inc(&f->fs->matches);
	/* Handed off: the kernel's receive path takes it. */
	if (f->ksk)
		return NULL;
	if (sluice_kernel_takes(f, skb, thoff))
		return NULL;
	return f->fs->st;
}

/* As sluice_filter_match(), IPv6: @skb's transport header at @thoff. */
struct sluice_stack *sluice_filter_match6(struct net *net, int ifindex,
					  u8 protocol,
					  const struct in6_addr *saddr,
					  __be16 sport,
					  const struct in6_addr *daddr,
					  __be16 dport,
					  const struct sk_buff *skb,
					  unsigned int thoff)
{
	struct sluice_kfilter *f;
	struct sluice_stack *st;

	f = sluice_filter_find6(net, ifindex, protocol, saddr, sport, daddr,
				dport);
	st = sluice_filter_matched(f);
	if (st && skb && !f->key6.rport && sluice_resv_shared(f) &&
	    sluice_kernel_lookup6(f, skb, thoff))
		return NULL;
	return st;
}

/*
 * An ICMP error quoting a packet a stack may have sent (@protocol, from
 * @laddr:@lport to @raddr:@rport): the stack whose filter takes that
 * packet's replies, or NULL.  On a port the reservation shares, the
 * kernel's own lookup of such a reply decides, as for a packet: a kernel
 * connection, request or TIME-WAIT of the tuple (TCP), or the socket the
 * kernel's UDP lookup picks, takes the error.  Under rcu_read_lock().
 */
struct sluice_stack *sluice_filter_match_err(struct net *net, int ifindex,
					     u8 protocol,
					     __be32 laddr, __be16 lport,
					     __be32 raddr, __be16 rport)
{
	struct inet_hashinfo *h = net->ipv4.tcp_death_row.hashinfo;
	struct sluice_kfilter *f;
	struct sluice_stack *st;
	struct sock *sk;
	bool takes;

	f = sluice_filter_find(net, ifindex, protocol, raddr, rport, laddr,
			       lport);
	st = sluice_filter_matched(f);
	if (!st || f->key.rport || !sluice_resv_shared(f))
		return st;
	if (protocol == IPPROTO_TCP) {
		sk = __inet_lookup_established(net, h, raddr, rport, laddr,
					       ntohs(lport), ifindex, 0);
		takes = sluice_est_found(sk);
	} else {
		sk = udp4_lib_lookup(net, raddr, rport, laddr, lport, ifindex);
		takes = sluice_udp_found(f, sk);
	}
	return sluice_kernel_counted(f, takes) ? NULL : st;
}

/* As sluice_filter_match_err(), IPv6. */
struct sluice_stack *sluice_filter_match6_err(struct net *net, int ifindex,
					      u8 protocol,
					      const struct in6_addr *laddr,
					      __be16 lport,
					      const struct in6_addr *raddr,
					      __be16 rport)
{
	struct inet_hashinfo *h = net->ipv4.tcp_death_row.hashinfo;
	struct sluice_kfilter *f;
	struct sluice_stack *st;
	struct sock *sk;
	bool takes;

	f = sluice_filter_find6(net, ifindex, protocol, raddr, rport, laddr,
				lport);
	st = sluice_filter_matched(f);
	if (!st || f->key6.rport || !sluice_resv_shared(f))
		return st;
	if (protocol == IPPROTO_TCP) {
		sk = __inet6_lookup_established(net, h, raddr, rport, laddr,
						ntohs(lport), ifindex, 0);
		takes = sluice_est_found(sk);
	} else {
		sk = udp6_lib_lookup(net, raddr, rport, laddr, lport, ifindex);
		takes = sluice_udp_found(f, sk);
	}
	return sluice_kernel_counted(f, takes) ? NULL : st;
}

/* Under rcu_read_lock(): the filter whose key is exactly @t's, if any. */
static struct sluice_kfilter *sluice_filter_lookup(struct sluice_stack *st,
						   const struct sluice_ftuple *t)
{
	struct sluice_filter6_key k6;
	struct sluice_filter_key k;

	if (t->family == AF_INET6) {
		sluice_filter6_key_make(&k6, st->net, st->ifindex, t->protocol,
					&t->laddr, t->lport, &t->raddr,
					t->rport);
		return rhashtable_lookup(&sluice_filter6_ht, &k6,
					 sluice_filter6_params);
	}
	sluice_filter_key_make(&k, st->net, st->ifindex, t->protocol,
			       t->laddr.s6_addr32[3], t->lport,
			       t->raddr.s6_addr32[3], t->rport);
	return rhashtable_lookup(&sluice_filter_ht, &k, sluice_filter_params);
}

/* @f's key from @t, for its family's table. */
static void sluice_filter_set_key(struct sluice_stack *st,
				  struct sluice_kfilter *f,
				  const struct sluice_ftuple *t)
{
	f->family = t->family;
	if (t->family == AF_INET6)
		sluice_filter6_key_make(&f->key6, st->net, st->ifindex,
					t->protocol, &t->laddr, t->lport,
					&t->raddr, t->rport);
	else
		sluice_filter_key_make(&f->key, st->net, st->ifindex,
				       t->protocol, t->laddr.s6_addr32[3],
				       t->lport, t->raddr.s6_addr32[3],
				       t->rport);
}

static int sluice_filter_insert(struct sluice_kfilter *f)
{
	if (f->family == AF_INET6)
		return rhashtable_lookup_insert_fast(&sluice_filter6_ht,
						     &f->node,
						     sluice_filter6_params);
	return rhashtable_lookup_insert_fast(&sluice_filter_ht, &f->node,
					     sluice_filter_params);
}

static void sluice_filter_unhash(struct sluice_kfilter *f)
{
	if (f->family == AF_INET6)
		rhashtable_remove_fast(&sluice_filter6_ht, &f->node,
				       sluice_filter6_params);
	else
		rhashtable_remove_fast(&sluice_filter_ht, &f->node,
				       sluice_filter_params);
}

/* The stack's filter state, made if @make; NULL if none (or no memory). */
static struct sluice_stack_filters *sluice_filters_get(struct sluice_stack *st,
						       bool make)
{
	struct sluice_stack_filters *fs;

	/* Pairs with the release below: a state seen is initialised. */
	fs = smp_load_acquire(&st->filters);
	if (fs || !make)
		return fs;
	mutex_lock(&sluice_filters_make_lock);
	fs = st->filters;
	if (fs)
		goto out;
	fs = kzalloc(sizeof(*fs), GFP_KERNEL);
	if (!fs)
		goto out;
	fs->st = st;
	mutex_init(&fs->lock);
	xa_init_flags(&fs->ids, XA_FLAGS_ALLOC1);
	fs->next_id = 1;
	atomic64_set(&fs->adds, 0);
	atomic64_set(&fs->dels, 0);
	atomic64_set(&fs->matches, 0);
	/* Orders the initialisation above before the pointer's readers. */
	smp_store_release(&st->filters, fs);
out:
	mutex_unlock(&sluice_filters_make_lock);
	return fs;
}

unsigned int sluice_filter_count(struct sluice_stack *st)
{
	struct sluice_stack_filters *fs = sluice_filters_get(st, false);

	return fs ? READ_ONCE(fs->count) : 0;
}

static struct sluice_resv *sluice_resv_find(const struct sluice_stack *st,
					    u8 family, u8 protocol,
					    const struct in6_addr *laddr,
					    __be16 lport)
{
	struct sluice_resv_key k;

	memset(&k, 0, sizeof(k));
	k.st = st;
	k.family = family;
	k.protocol = protocol;
	k.laddr = *laddr;
	k.lport = lport;
	return rhashtable_lookup_fast(&sluice_resv_ht, &k, sluice_resv_params);
}

/*
 * The caller's dual-stack socket @sock on :@lport may reserve a port in
 * both families: the other family's reservation of :@lport, if @sock is
 * its socket too (the port lock is set and taken off for both as one).
 */
static struct sluice_resv *sluice_resv_dual(const struct sluice_stack *st,
					    u8 family, u8 protocol,
					    __be16 lport,
					    const struct socket *sock)
{
	struct sluice_resv *r;

	r = sluice_resv_find(st, family == AF_INET6 ? AF_INET : AF_INET6,
			     protocol, &in6addr_any, lport);
	return r && r->own && r->sock == sock ? r : NULL;
}

/*
 * Bind a socket of @protocol to @laddr:*@lport in the stack's netns, with
 * the caller's credentials: kern = 0, so the LSM hooks and the privileged
 * port check (CAP_NET_BIND_SERVICE) see the caller.  A port of 0 is
 * chosen by the kernel and returned in *@lport.
 */
static int sluice_resv_bind(struct sluice_stack *st,
			    const struct sluice_ftuple *t, __be16 *lport,
			    struct socket **sockp, int *rcvbuf)
{
	int type = t->protocol == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM;
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = t->laddr,
		.sin6_port = *lport,
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = t->laddr.s6_addr32[3],
		.sin_port = *lport,
	};
	struct sockaddr *sa = (struct sockaddr *)&sin;
	int salen = sizeof(sin);
	struct socket *sock;
	int ret;

	if (t->family == AF_INET6) {
		sa = (struct sockaddr *)&sin6;
		salen = sizeof(sin6);
		/* A link-local address is the stack's device's. */
		if (ipv6_addr_type(&t->laddr) & IPV6_ADDR_LINKLOCAL)
			sin6.sin6_scope_id = st->ifindex;
	}
	ret = __sock_create(st->net, t->family, type, t->protocol, &sock, 0);
	if (ret)
		return ret;
	/* It reserves the IPv6 port only: IPv4 has filters of its own. */
	if (t->family == AF_INET6) {
		ret = ip6_sock_set_v6only(sock->sk);
		if (ret)
			goto err_release;
	}
	ret = kernel_bind(sock, sa, salen);
	if (ret)
		goto err_release;
	/*
	 * Packets the stack's filters do not take (another device, or
	 * before the rings steer) reach this socket, which nobody reads:
	 * the smallest receive buffer bounds what they can pin.
	 */
	*rcvbuf = READ_ONCE(sock->sk->sk_rcvbuf);
	sock_set_rcvbuf(sock->sk, 0);
	if (!*lport) {
		ret = kernel_getsockname(sock, sa);
		if (ret < 0)
			goto err_release;
		*lport = t->family == AF_INET6 ? sin6.sin6_port : sin.sin_port;
		if (WARN_ON_ONCE(!*lport)) {
			ret = -EADDRNOTAVAIL;
			goto err_release;
		}
	}
	*sockp = sock;
	return 0;

err_release:
	sock_release(sock);
	return ret;
}

/*
 * Does @sk, bound, hold the IPv4 address @laddr as a port reservation
 * would: an AF_INET socket on it, an AF_INET6 one on ::ffff:@laddr, or
 * on :: (dual-stack, not IPV6_V6ONLY) for @laddr 0?  An IPv6-only socket
 * holds no IPv4 port, so it cannot stand for an IPv4 filter's.
 */
static bool sluice_sk_holds_v4(const struct sock *sk, __be32 laddr)
{
	if (sk->sk_family == AF_INET)
		return inet_sk(sk)->inet_rcv_saddr == laddr;
#if IS_ENABLED(CONFIG_IPV6)
	if (ipv6_addr_v4mapped(&sk->sk_v6_rcv_saddr))
		return sk->sk_v6_rcv_saddr.s6_addr32[3] == laddr;
	return !laddr && ipv6_addr_any(&sk->sk_v6_rcv_saddr) &&
	       !ipv6_only_sock(sk);
#else
	return false;
#endif
}

/*
 * Does @sk, bound, hold the IPv6 address @laddr (never IPv4-mapped): an
 * AF_INET6 socket bound to it, :: with or without IPV6_V6ONLY for ::.
 */
static bool sluice_sk_holds_v6(const struct sock *sk,
			       const struct in6_addr *laddr)
{
#if IS_ENABLED(CONFIG_IPV6)
	return sk->sk_family == AF_INET6 &&
	       ipv6_addr_equal(&sk->sk_v6_rcv_saddr, laddr);
#else
	return false;
#endif
}

/*
 * May the caller's socket @sk reserve (@protocol, @laddr, @lport) for a
 * stack's filter: TCP or UDP as @protocol says, of either inet family
 * (-EPROTONOSUPPORT), in the stack's netns (-EXDEV), bound to @lport at
 * @laddr, neither listening nor connected, and bound to no device but the
 * stack's (-EINVAL): a socket bound to another device would let a kernel
 * socket bound to the stack's take the port the filter steers.  Under
 * lock_sock().
 */
static int sluice_resv_sock_ok(struct sluice_stack *st, const struct sock *sk,
			       const struct sluice_ftuple *t, __be16 lport)
{
	int type = t->protocol == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM;
	int dev = READ_ONCE(sk->sk_bound_dev_if);
	bool holds;

	if ((sk->sk_family != AF_INET && sk->sk_family != AF_INET6) ||
	    sk->sk_type != type || sk->sk_protocol != t->protocol)
		return -EPROTONOSUPPORT;
	if (!net_eq(sock_net(sk), st->net))
		return -EXDEV;
	if (t->family == AF_INET6)
		holds = sluice_sk_holds_v6(sk, &t->laddr);
	else
		holds = sluice_sk_holds_v4(sk, t->laddr.s6_addr32[3]);
	if (sk->sk_state != TCP_CLOSE || !lport ||
	    inet_sk(sk)->inet_num != ntohs(lport) ||
	    (dev && dev != st->ifindex) || !holds)
		return -EINVAL;
	return 0;
}

/*
 * The caller's socket @sock as @r's reservation of @t's (protocol, local
 * address) and @lport: checked, and its port kept bound whatever is done
 * with it (SOCK_BINDPORT_LOCK, as sluice_resv_file() does), under one hold
 * of its lock; @r holds a reference of its own to the file.  A dual-stack
 * socket reserving its second family keeps the lock state the first found.
 */
static int sluice_resv_own(struct sluice_stack *st, struct sluice_resv *r,
			   struct socket *sock, const struct sluice_ftuple *t,
			   __be16 lport)
{
	struct sluice_resv *dual = sluice_resv_dual(st, t->family,
						    t->protocol, lport, sock);
	struct sock *sk = sock->sk;
	int ret;

	lock_sock(sk);
	ret = sluice_resv_sock_ok(st, sk, t, lport);
	if (!ret) {
		r->bindport_lock = dual ? dual->bindport_lock :
			sk->sk_userlocks & SOCK_BINDPORT_LOCK;
		sk->sk_userlocks |= SOCK_BINDPORT_LOCK;
	}
	release_sock(sk);
	if (ret)
		return ret;
	r->own = true;
	r->sock = sock;
	r->file = get_file(sock->file);
	r->rcvbuf = READ_ONCE(sk->sk_rcvbuf);
	return 0;
}

/*
 * The caller's socket, a reservation no more (@r unhashed): its port lock
 * as it was (its fds may live on as any socket's) once no reservation of
 * the other family holds it too; its file is still held.
 */
static void sluice_resv_disown(struct sluice_resv *r)
{
	struct sock *sk = r->sock->sk;

	if (r->bindport_lock ||
	    sluice_resv_dual(r->key.st, r->key.family, r->key.protocol,
			     r->key.lport, r->sock))
		return;
	lock_sock(sk);
	sk->sk_userlocks &= ~SOCK_BINDPORT_LOCK;
	release_sock(sk);
}

/*
 * The reservation covering @t's (family, protocol, local address) and
 * *@lport for a filter of the stack, with a reference for it: an existing
 * one of the same 3-tuple or of a wildcard address of the family, else a
 * new one: @own (the caller's socket; never with an existing one,
 * -EEXIST), or a socket the module binds.  Under fs->lock.
 */
static struct sluice_resv *sluice_resv_get(struct sluice_stack *st,
					   const struct sluice_ftuple *t,
					   __be16 *lport, struct socket *own)
{
	struct sluice_resv *r = NULL;
	int ret;

	if (*lport) {
		r = sluice_resv_find(st, t->family, t->protocol, &t->laddr,
				     *lport);
		if (!r && !ipv6_addr_any(&t->laddr))
			r = sluice_resv_find(st, t->family, t->protocol,
					     &in6addr_any, *lport);
	}
	if (r && own)
		return ERR_PTR(-EEXIST);
	if (r) {
		r->refs++;
		return r;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	if (own)
		ret = sluice_resv_own(st, r, own, t, *lport);
	else
		ret = sluice_resv_bind(st, t, lport, &r->sock, &r->rcvbuf);
	if (ret)
		goto err_free;
	r->sk = r->sock->sk;
	r->key.st = st;
	r->key.family = t->family;
	r->key.protocol = t->protocol;
	r->key.laddr = t->laddr;
	r->key.lport = *lport;
	r->refs = 1;
	ret = rhashtable_lookup_insert_fast(&sluice_resv_ht, &r->node,
					    sluice_resv_params);
	/* The bind succeeded (or none covers it): the stack had none. */
	if (WARN_ON_ONCE(ret))
		goto err_sock;
	return r;

err_sock:
	if (r->own) {
		sluice_resv_disown(r);
		fput(r->file);
	} else {
		sock_release(r->sock);
	}
err_free:
	kfree(r);
	return ERR_PTR(ret);
}

/* The siblings @r names, put (readers only compare their pointers). */
static void sluice_resv_sibs_free(struct sluice_resv *r)
{
	struct sluice_resv_sibs *sibs = rcu_dereference_protected(r->sibs, 1);
	unsigned int i;

	if (!sibs)
		return;
	RCU_INIT_POINTER(r->sibs, NULL);
	for (i = 0; i < sibs->n; i++)
		sock_put(sibs->sk[i]);
	kfree_rcu(sibs, rcu);
}

/* Under fs->lock: the last filter's put unbinds the port. */
static void sluice_resv_put(struct sluice_resv *r)
{
	if (--r->refs)
		return;
	rhashtable_remove_fast(&sluice_resv_ht, &r->node, sluice_resv_params);
	sluice_resv_sibs_free(r);
	if (r->own)
		sluice_resv_disown(r);
	/* A twin's fds may still hold it: the last of them closes it. */
	if (r->file)
		fput(r->file);
	else if (r->sock)
		sock_release(r->sock);
	/* The receive path may be reading it: see struct sluice_resv. */
	kfree_rcu(r, rcu);
}

/*
 * Does a socket other than @sk hold a place in the port bucket @tb?
 * Linux 6.1 lists a port's sockets in its bucket (sk_bind_node; its
 * address buckets have their own list, sk_bind2_node); since 6.8, which
 * took sk_bind2_node and sk_for_each_bound_bhash2() away, the port's
 * bucket lists its address buckets, and they list the sockets.
 */
#ifdef sk_for_each_bound_bhash2
static bool sluice_tb_others(struct inet_bind_bucket *tb, const struct sock *sk)
{
	struct sock *o;

	sk_for_each_bound(o, &tb->owners)
		if (o != sk)
			return true;
	return false;
}
#else
static bool sluice_tb_others(struct inet_bind_bucket *tb, const struct sock *sk)
{
	struct inet_bind2_bucket *tb2;
	struct sock *o;

	hlist_for_each_entry(tb2, &tb->bhash2, bhash_node)
		sk_for_each_bound(o, &tb2->owners)
			if (o != sk)
				return true;
	return false;
}
#endif

/*
 * Does a kernel TCP socket other than the reservation @sk (bound, and
 * letting others share its port) hold the port now: one bound before it,
 * a connection made from the port, a TIME-WAIT?  Such a socket's
 * connection may be carrying segments already, which no SYN will show
 * the receive path.  The port's bind bucket, under its lock.
 */
static bool sluice_tcp_port_others(struct sock *sk)
{
	struct inet_hashinfo *h = tcp_or_dccp_get_hashinfo(sk);
	struct inet_bind_hashbucket *head;
	struct inet_bind_bucket *tb;
	bool others = false;

	if (!sk->sk_reuse && !sk->sk_reuseport)
		return false;
	head = &h->bhash[inet_bhashfn(sock_net(sk), inet_sk(sk)->inet_num,
				      h->bhash_size)];
	spin_lock_bh(&head->lock);
	tb = inet_csk(sk)->icsk_bind_hash;
	if (tb)
		others = sluice_tb_others(tb, sk);
	spin_unlock_bh(&head->lock);
	return others;
}

/* Unhash, unreserve and free (after a grace period) one filter. */
static void sluice_filter_drop(struct sluice_stack_filters *fs,
			       struct sluice_kfilter *f)
{
	sluice_filter_unhash(f);
	if (f->resv)
		sluice_resv_put(f->resv);
	if (f->ksk)
		sock_put(f->ksk);
	WRITE_ONCE(fs->count, fs->count - 1);
	atomic64_inc(&fs->dels);
	kfree_rcu(f, rcu);
}

/* The tuple @a names (checked), either family. */
static void sluice_filter_tuple(const struct sluice_filter *a,
				struct sluice_ftuple *t)
{
	memset(t, 0, sizeof(*t));
	t->protocol = a->protocol;
	t->lport = (__force __be16)a->lport;
	t->rport = (__force __be16)a->rport;
	if (a->flags & SLUICE_FILTER_IPV6) {
		t->family = AF_INET6;
		memcpy(&t->laddr, a->laddr6, sizeof(t->laddr));
		memcpy(&t->raddr, a->raddr6, sizeof(t->raddr));
	} else {
		t->family = AF_INET;
		t->laddr.s6_addr32[3] = (__force __be32)a->laddr;
		t->raddr.s6_addr32[3] = (__force __be32)a->raddr;
	}
}

static int sluice_filter_check(const void *arg)
{
	const struct sluice_filter *a = arg;
	struct sluice_ftuple t;
	bool v6 = a->flags & SLUICE_FILTER_IPV6;

	if ((a->flags & ~(SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING |
			  SLUICE_FILTER_IPV6)) ||
	    a->reserved0[0] || a->reserved0[1] || a->reserved0[2] ||
	    a->reserved1 || a->reserved2)
		return -EINVAL;
	/* A sibling is a reservation's (either family: both are judged). */
	if (a->flags & SLUICE_FILTER_SIBLING &&
	    !(a->flags & SLUICE_FILTER_RESV_FD))
		return -EINVAL;
	/*
	 * IPv6 addresses in @laddr6 and @raddr6, which the caller must know
	 * of, and none in the IPv4 fields; no IPv6 address without the flag.
	 */
	if (v6 ? a->size < offsetofend(struct sluice_filter, raddr6) ||
	    a->laddr || a->raddr :
	    memchr_inv(a->laddr6, 0, sizeof(a->laddr6)) ||
	    memchr_inv(a->raddr6, 0, sizeof(a->raddr6)))
		return -EINVAL;
	sluice_filter_tuple(a, &t);
	/* An IPv4 filter names IPv4 peers, v4-mapped ones are not IPv6's. */
	if (v6 && (ipv6_addr_v4mapped(&t.laddr) ||
		   ipv6_addr_v4mapped(&t.raddr)))
		return -EINVAL;
	/* The caller's socket reserves a port it bound: a 3-tuple's. */
	if (a->flags & SLUICE_FILTER_RESV_FD ?
	    !a->lport || !ipv6_addr_any(&t.raddr) || a->rport : a->fd)
		return -EINVAL;
	if (a->protocol != IPPROTO_TCP && a->protocol != IPPROTO_UDP)
		return -EINVAL;
	/* Half a remote is no filter; a connection has a local port. */
	if (ipv6_addr_any(&t.raddr) != !a->rport)
		return -EINVAL;
	if (a->rport && !a->lport)
		return -EINVAL;
	return 0;
}

/* @own: the caller's socket as the reservation, or NULL. */
static int sluice_filter_add(struct sluice_stack *st,
			     struct sluice_stack_filters *fs,
			     struct sluice_filter *a, struct socket *own)
{
	unsigned int max = clamp_t(unsigned int, READ_ONCE(filter_max), 1,
				   SLUICE_FILTER_MAX);
	struct sluice_kfilter *f;
	struct sluice_resv *r;
	struct sluice_ftuple t;
	int ret;

	lockdep_assert_held(&fs->lock);
	if (fs->count >= max)
		return -ENOSPC;
	sluice_filter_tuple(a, &t);
	/* Refuse a duplicate before binding anything. */
	if (t.lport) {
		bool dup;

		rcu_read_lock();
		f = sluice_filter_lookup(st, &t);
		dup = f && f->fs == fs;
		rcu_read_unlock();
		if (dup)
			return -EEXIST;
	}

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	r = sluice_resv_get(st, &t, &t.lport, own);
	if (IS_ERR(r)) {
		ret = PTR_ERR(r);
		goto err_free;
	}
	f->resv = r;
	f->fs = fs;
	atomic64_set(&f->matches, 0);
	atomic64_set(&f->kernel, 0);
	if (t.protocol == IPPROTO_TCP && ipv6_addr_any(&t.raddr) && r->sk)
		f->kshared = sluice_tcp_port_others(r->sk);
	sluice_filter_set_key(st, f, &t);
	ret = xa_alloc_cyclic(&fs->ids, &f->id, f, xa_limit_32b, &fs->next_id,
			      GFP_KERNEL);
	if (ret < 0)
		goto err_resv;
	/* Publishes the filter, initialised above, to the receive path. */
	ret = sluice_filter_insert(f);
	if (ret)
		goto err_id;
	fs->published = true;
	WRITE_ONCE(fs->count, fs->count + 1);
	atomic64_inc(&fs->adds);
	a->lport = (__force __u16)t.lport;
	a->id = f->id;
	return 0;

err_id:
	xa_erase(&fs->ids, f->id);
err_resv:
	sluice_resv_put(r);
err_free:
	kfree(f);
	return ret;
}

/*
 * FILTER_ADD with SLUICE_FILTER_SIBLING: @own, the kernel twin of another
 * of the stack's sockets on a port a reservation of the stack covers, is
 * the stack's as the reservation is when the receive path asks the
 * kernel's lookup (sluice_resv_ours()).  No filter is made.  The
 * reservation holds it until it goes; closed ones are dropped at the
 * next add.  Under fs->lock.
 */
static int sluice_resv_sibling_add(struct sluice_stack *st,
				   struct sluice_stack_filters *fs,
				   struct sluice_filter *a, struct socket *own)
{
	struct sluice_resv_sibs *old, *sibs;
	struct sock *sk = own->sk;
	struct sluice_resv *r;
	struct sluice_ftuple t;
	unsigned int i, n = 0;
	int ret;

	lockdep_assert_held(&fs->lock);
	sluice_filter_tuple(a, &t);
	r = sluice_resv_find(st, t.family, t.protocol, &t.laddr, t.lport);
	if (!r && !ipv6_addr_any(&t.laddr))
		r = sluice_resv_find(st, t.family, t.protocol, &in6addr_any,
				     t.lport);
	if (!r || !r->sk)
		return -ENOENT;
	if (sk == r->sk)
		return -EEXIST;
	lock_sock(sk);
	ret = sluice_resv_sock_ok(st, sk, &t, t.lport);
	release_sock(sk);
	if (ret)
		return ret;
	old = rcu_dereference_protected(r->sibs, lockdep_is_held(&fs->lock));
	for (i = 0; old && i < old->n; i++)
		if (old->sk[i] == sk)
			return -EEXIST;
	sibs = kmalloc(struct_size(sibs, sk, SLUICE_RESV_SIBS_MAX), GFP_KERNEL);
	if (!sibs)
		return -ENOMEM;
	for (i = 0; old && i < old->n; i++)
		if (!sock_flag(old->sk[i], SOCK_DEAD))
			sibs->sk[n++] = old->sk[i];
	if (n == SLUICE_RESV_SIBS_MAX) {
		kfree(sibs);
		return -ENOSPC;
	}
	sock_hold(sk);
	sibs->sk[n++] = sk;
	sibs->n = n;
	rcu_assign_pointer(r->sibs, sibs);
	for (i = 0; old && i < old->n; i++)
		if (sock_flag(old->sk[i], SOCK_DEAD))
			sock_put(old->sk[i]);
	if (old)
		kfree_rcu(old, rcu);
	a->id = 0;
	return 0;
}

/*
 * The argument of FILTER_ADD or HANDOFF (@size bytes at @uarg, of which
 * the caller must know @min) into @a, checked by @check, and what both ask
 * of the stack: a device (-ENODEV), a kring if @kring (-ENOENT), and a
 * caller in the stack's network namespace (-EXDEV: entries are made where
 * the caller lives).
 */
static int sluice_filter_arg_in(struct sluice_stack *st, void *a, size_t size,
				size_t min, void __user *uarg, bool kring,
				int (*check)(const void *a))
{
	int ret = sluice_arg_in(a, size, min, uarg);

	if (!ret)
		ret = check(a);
	if (ret)
		return ret;
	if (!st->ifindex)
		return -ENODEV;
	if (kring && !sluice_stack_has_kring(st))
		return -ENOENT;
	if (!net_eq(current->nsproxy->net_ns, st->net))
		return -EXDEV;
	return 0;
}

/*
 * Give the caller @a (@size bytes) with the id of the entry just made; a
 * caller that cannot take it never learns the id, so the entry is taken
 * back.
 */
static int sluice_filter_reply(struct sluice_stack_filters *fs,
			       void __user *uarg, void *a, size_t size, u32 id)
{
	struct sluice_kfilter *f;
	int ret = sluice_arg_out(uarg, a, size);

	if (ret) {
		mutex_lock(&fs->lock);
		f = xa_erase(&fs->ids, id);
		if (!WARN_ON_ONCE(!f))
			sluice_filter_drop(fs, f);
		mutex_unlock(&fs->lock);
	}
	return ret;
}

int sluice_ioc_filter_add(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_stack_filters *fs;
	struct socket *own = NULL;
	struct sluice_filter a;
	int ret;

	ret = sluice_filter_arg_in(st, &a, sizeof(a),
				   offsetofend(struct sluice_filter, reserved1),
				   uarg, true, sluice_filter_check);
	if (ret)
		return ret;
	if (a.flags & SLUICE_FILTER_RESV_FD) {
		own = sockfd_lookup(a.fd, &ret);
		if (!own)
			return ret;	/* -EBADF, -ENOTSOCK */
	}
	fs = sluice_filters_get(st, true);
	if (!fs) {
		ret = -ENOMEM;
		goto out;
	}

	mutex_lock(&fs->lock);
	if (a.flags & SLUICE_FILTER_SIBLING)
		ret = sluice_resv_sibling_add(st, fs, &a, own);
	else
		ret = sluice_filter_add(st, fs, &a, own);
	mutex_unlock(&fs->lock);
	/* (A sibling is no entry to take back: the caller need not know.) */
	if (!ret && (a.flags & SLUICE_FILTER_SIBLING))
		ret = sluice_arg_out(uarg, &a, sizeof(a));
	else if (!ret)
		ret = sluice_filter_reply(fs, uarg, &a, sizeof(a), a.id);
out:
	if (own)
		sockfd_put(own);
	return ret;
}

/* An IPv6 hand-off's address: neither :: nor IPv4-mapped (IPv4's). */
static bool sluice_handoff_addr6_ok(const __u8 *a6)
{
	const struct in6_addr *a = (const struct in6_addr *)a6;

	return !ipv6_addr_any(a) && !ipv6_addr_v4mapped(a);
}

static int sluice_handoff_check(const void *arg)
{
	const struct sluice_handoff *a = arg;

	if ((a->flags & ~SLUICE_HANDOFF_IPV6) || a->reserved0[0] ||
	    a->reserved0[1] || a->reserved0[2] || a->reserved1)
		return -EINVAL;
	if (a->protocol != IPPROTO_TCP || !a->lport || !a->rport)
		return -EINVAL;
	if (a->flags & SLUICE_HANDOFF_IPV6)
		return a->size < offsetofend(struct sluice_handoff, raddr6) ||
		       a->laddr || a->raddr ||
		       !sluice_handoff_addr6_ok(a->laddr6) ||
		       !sluice_handoff_addr6_ok(a->raddr6) ? -EINVAL : 0;
	if (!a->laddr || !a->raddr ||
	    memchr_inv(a->laddr6, 0, sizeof(a->laddr6)) ||
	    memchr_inv(a->raddr6, 0, sizeof(a->raddr6)))
		return -EINVAL;
	return 0;
}

/*
 * Does @sk talk IPv4: an AF_INET socket, or an AF_INET6 one whose peer is
 * IPv4-mapped (its IPv4 addresses and ports are set as an AF_INET
 * socket's, and IPv4 packets of the tuple find it).
 */
static bool sluice_sk_ipv4(const struct sock *sk)
{
	if (sk->sk_family == AF_INET)
		return true;
#if IS_ENABLED(CONFIG_IPV6)
	return sk->sk_family == AF_INET6 &&
	       ipv6_addr_v4mapped(&sk->sk_v6_daddr);
#else
	return false;
#endif
}

/*
 * Is @sk a TCP socket of the stack's netns in repair mode, connected, with
 * the tuple of @a?  Under lock_sock().
 */
static int sluice_handoff_sock_ok(struct sluice_stack *st, struct sock *sk,
				  const struct sluice_handoff *a)
{
	const struct inet_sock *inet = inet_sk(sk);
	bool v6 = a->flags & SLUICE_HANDOFF_IPV6;

	/* IPv6's: an AF_INET6 socket that does not talk IPv4. */
	if ((v6 ? sk->sk_family != AF_INET6 || sluice_sk_ipv4(sk) :
	     !sluice_sk_ipv4(sk)) || sk->sk_type != SOCK_STREAM ||
	    sk->sk_protocol != IPPROTO_TCP)
		return -EPROTONOSUPPORT;
	if (!net_eq(sock_net(sk), st->net))
		return -EXDEV;
	if (!tcp_sk(sk)->repair)
		return -EPERM;
	if (sk->sk_state == TCP_CLOSE || sk->sk_state == TCP_LISTEN)
		return -ENOTCONN;
	if (inet->inet_sport != (__force __be16)a->lport ||
	    inet->inet_dport != (__force __be16)a->rport)
		return -EINVAL;
	if (v6)
		return memcmp(&sk->sk_v6_rcv_saddr, a->laddr6, 16) ||
		       memcmp(&sk->sk_v6_daddr, a->raddr6, 16) ? -EINVAL : 0;
	if (inet->inet_rcv_saddr != (__force __be32)a->laddr ||
	    inet->inet_daddr != (__force __be32)a->raddr)
		return -EINVAL;
	return 0;
}

/*
 * The hand-off entry of @a's tuple already hashed (@g, if any: a dup
 * unless it is one of ours whose socket closed) and the filter this
 * stack steers the tuple by (*@f).  Under rcu_read_lock().
 */
static struct sluice_kfilter *sluice_handoff_find(struct sluice_stack *st,
						  const struct sluice_kfilter *n,
						  struct sluice_kfilter **f)
{
	if (n->family == AF_INET6) {
		const struct sluice_filter6_key *k = &n->key6;

		*f = sluice_filter_find6(st->net, st->ifindex, IPPROTO_TCP,
					 &k->raddr, k->rport, &k->laddr,
					 k->lport);
		return rhashtable_lookup(&sluice_filter6_ht, k,
					 sluice_filter6_params);
	}
	*f = sluice_filter_find(st->net, st->ifindex, IPPROTO_TCP,
				n->key.raddr, n->key.rport, n->key.laddr,
				n->key.lport);
	return rhashtable_lookup(&sluice_filter_ht, &n->key,
				 sluice_filter_params);
}

/* Under fs->lock: hash a hand-off entry for @a holding @sk. */
static int sluice_handoff_add(struct sluice_stack *st,
			      struct sluice_stack_filters *fs,
			      struct sluice_handoff *a, struct sock *sk)
{
	unsigned int max = clamp_t(unsigned int, READ_ONCE(filter_max), 1,
				   SLUICE_FILTER_MAX);
	struct sluice_kfilter *f, *g, *steer;
	struct sluice_ftuple t;
	bool dup;
	int ret;

	lockdep_assert_held(&fs->lock);
	if (fs->count >= max)
		return -ENOSPC;
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	memset(&t, 0, sizeof(t));
	t.protocol = IPPROTO_TCP;
	t.lport = (__force __be16)a->lport;
	t.rport = (__force __be16)a->rport;
	if (a->flags & SLUICE_HANDOFF_IPV6) {
		t.family = AF_INET6;
		memcpy(&t.laddr, a->laddr6, sizeof(t.laddr));
		memcpy(&t.raddr, a->raddr6, sizeof(t.raddr));
	} else {
		t.family = AF_INET;
		t.laddr.s6_addr32[3] = (__force __be32)a->laddr;
		t.raddr.s6_addr32[3] = (__force __be32)a->raddr;
	}
	sluice_filter_set_key(st, f, &t);
	rcu_read_lock();
	g = sluice_handoff_find(st, f, &steer);
	/* Any entry of this tuple but one of ours whose socket closed. */
	dup = g && !(g->fs == fs && g->ksk && !sluice_handoff_live(g));
	/* Only a tuple this stack's own filters steer is the stack's. */
	ret = dup ? -EEXIST : (!steer || steer->fs != fs) ? -ENOENT : 0;
	rcu_read_unlock();
	if (ret)
		goto err_free;
	if (g) {
		/* A hand-off entry whose socket closed: this one replaces it. */
		xa_erase(&fs->ids, g->id);
		sluice_filter_drop(fs, g);
	}

	f->fs = fs;
	atomic64_set(&f->matches, 0);
	ret = xa_alloc_cyclic(&fs->ids, &f->id, f, xa_limit_32b, &fs->next_id,
			      GFP_KERNEL);
	if (ret < 0)
		goto err_free;
	sock_hold(sk);
	f->ksk = sk;
	/* From here the tuple's packets go to the kernel's receive path. */
	ret = sluice_filter_insert(f);
	if (ret)
		goto err_id;
	fs->published = true;
	WRITE_ONCE(fs->count, fs->count + 1);
	atomic64_inc(&fs->adds);
	a->id = f->id;
	return 0;

err_id:
	sock_put(sk);
	xa_erase(&fs->ids, f->id);
err_free:
	kfree(f);
	return ret;
}

int sluice_ioc_handoff(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_stack_filters *fs;
	struct sluice_handoff a;
	struct socket *sock;
	int ret;

	ret = sluice_filter_arg_in(st, &a, sizeof(a),
				   offsetofend(struct sluice_handoff, reserved1),
				   uarg, false, sluice_handoff_check);
	if (ret)
		return ret;
	sock = sockfd_lookup(a.fd, &ret);
	if (!sock)
		return ret;	/* -EBADF, -ENOTSOCK */
	lock_sock(sock->sk);
	ret = sluice_handoff_sock_ok(st, sock->sk, &a);
	release_sock(sock->sk);
	if (ret)
		goto out;
	fs = sluice_filters_get(st, false);
	if (!fs) {
		ret = -ENOENT;
		goto out;
	}
	mutex_lock(&fs->lock);
	ret = sluice_handoff_add(st, fs, &a, sock->sk);
	mutex_unlock(&fs->lock);
	if (!ret)
		ret = sluice_filter_reply(fs, uarg, &a, sizeof(a), a.id);
out:
	sockfd_put(sock);
	return ret;
}

int sluice_ioc_filter_del(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_stack_filters *fs;
	struct sluice_kfilter *f;
	struct sluice_filter a;
	int ret;

	ret = sluice_arg_in(&a, sizeof(a), offsetofend(struct sluice_filter,
						       reserved1), uarg);
	if (ret)
		return ret;
	/* Only @id is read, besides @size and @flags. */
	if (a.flags)
		return -EINVAL;
	fs = sluice_filters_get(st, false);
	if (!fs)
		return -ENOENT;
	mutex_lock(&fs->lock);
	f = xa_erase(&fs->ids, a.id);
	if (f)
		sluice_filter_drop(fs, f);
	mutex_unlock(&fs->lock);
	return f ? 0 : -ENOENT;
}

/*
 * The reservation's socket as a file, made the first time it is asked
 * for.  sock_alloc_file() releases the socket when it fails, so the
 * reservation is void then (its port no longer held): it stays in the
 * table, socketless, until its filters go.  Under fs->lock.
 */
static struct file *sluice_resv_file(struct sluice_resv *r)
{
	struct file *file;
	struct sock *sk;

	if (r->file)
		return r->file;
	if (!r->sock)
		return ERR_PTR(-ENOMEM);
	file = sock_alloc_file(r->sock, 0, NULL);
	if (IS_ERR(file)) {
		r->sock = NULL;
		WRITE_ONCE(r->sk, NULL);
		return file;
	}
	r->file = file;
	sk = r->sock->sk;
	lock_sock(sk);
	/*
	 * A twin's datagrams and connections are read: the default receive
	 * buffer again (a listener's children inherit it), and the port kept
	 * whatever is done to the socket (shutdown() of a listener gives back
	 * a port the kernel chose, inet_put_port(), without this lock).
	 */
	sk->sk_userlocks &= ~SOCK_RCVBUF_LOCK;
	sk->sk_userlocks |= SOCK_BINDPORT_LOCK;
	WRITE_ONCE(sk->sk_rcvbuf, r->rcvbuf);
	release_sock(sk);
	return file;
}

int sluice_ioc_filter_fd(struct file *file, void __user *uarg)
{
	struct sluice_stack *st = sluice_stack_of(file);
	struct sluice_stack_filters *fs;
	struct sluice_filter_fd a;
	struct sluice_kfilter *f;
	struct file *rf;
	int ret, fd;

	ret = sluice_arg_in(&a, sizeof(a), offsetofend(struct sluice_filter_fd,
						       fd), uarg);
	if (ret)
		return ret;
	if (a.flags || a.fd)
		return -EINVAL;
	if (!net_eq(current->nsproxy->net_ns, st->net))
		return -EXDEV;
	fs = sluice_filters_get(st, false);
	if (!fs)
		return -ENOENT;
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	mutex_lock(&fs->lock);
	f = xa_load(&fs->ids, a.id);
	if (!f)
		rf = ERR_PTR(-ENOENT);
	else if (!f->resv)
		rf = ERR_PTR(-EINVAL);
	else
		rf = sluice_resv_file(f->resv);
	if (!IS_ERR(rf))
		get_file(rf);
	mutex_unlock(&fs->lock);
	if (IS_ERR(rf)) {
		put_unused_fd(fd);
		return PTR_ERR(rf);
	}
	a.fd = fd;
	ret = sluice_arg_out(uarg, &a, sizeof(a));
	if (ret) {
		put_unused_fd(fd);
		fput(rf);
		return ret;
	}
	fd_install(fd, rf);
	return 0;
}

void sluice_filter_stack_release(struct sluice_stack *st)
{
	struct sluice_stack_filters *fs = sluice_filters_get(st, false);
	struct sluice_kfilter *f;
	unsigned long id;

	if (!fs)
		return;
	mutex_lock(&fs->lock);
	xa_for_each(&fs->ids, id, f) {
		xa_erase(&fs->ids, id);
		sluice_filter_drop(fs, f);
		cond_resched();
	}
	mutex_unlock(&fs->lock);
	/*
	 * A reader may still hold the stack or @fs through a filter it found
	 * before the unhashing: wait for it.  The filters themselves go with
	 * kfree_rcu().
	 */
	if (fs->published)
		synchronize_net();
	WRITE_ONCE(st->filters, NULL);
	xa_destroy(&fs->ids);
	mutex_destroy(&fs->lock);
	kfree(fs);
}

static const char *sluice_proto_name(u8 protocol)
{
	return protocol == IPPROTO_TCP ? "tcp" : "udp";
}

/* The stack's filters, for its debugfs dump. */
void sluice_filter_show(struct seq_file *m, struct sluice_stack *st)
{
	struct sluice_stack_filters *fs = sluice_filters_get(st, false);
	struct sluice_kfilter *f;
	unsigned long id;

	if (!fs) {
		seq_puts(m, "filters 0 adds 0 dels 0 matches 0\n");
		return;
	}
	mutex_lock(&fs->lock);
	seq_printf(m, "filters %u adds %lld dels %lld matches %lld\n",
		   fs->count, (long long)atomic64_read(&fs->adds),
		   (long long)atomic64_read(&fs->dels),
		   (long long)atomic64_read(&fs->matches));
	xa_for_each(&fs->ids, id, f) {
		if (f->family == AF_INET6)
			seq_printf(m, "%s %u %s [%pI6c]:%u [%pI6c]:%u matches %lld",
				   f->ksk ? "handoff" : "filter", f->id,
				   sluice_proto_name(f->key6.protocol),
				   &f->key6.laddr, ntohs(f->key6.lport),
				   &f->key6.raddr, ntohs(f->key6.rport),
				   (long long)atomic64_read(&f->matches));
		else
			seq_printf(m, "%s %u %s %pI4:%u %pI4:%u matches %lld",
				   f->ksk ? "handoff" : "filter",
				   f->id, sluice_proto_name(f->key.protocol),
				   &f->key.laddr, ntohs(f->key.lport),
				   &f->key.raddr, ntohs(f->key.rport),
				   (long long)atomic64_read(&f->matches));
		/* The port shared with kernel sockets: what they were given. */
		if (atomic64_read(&f->kernel) || READ_ONCE(f->kshared))
			seq_printf(m, " kernel %lld%s",
				   (long long)atomic64_read(&f->kernel),
				   READ_ONCE(f->kshared) ? " kshared" : "");
		seq_putc(m, '\n');
	}
	mutex_unlock(&fs->lock);
}

/*
 * debugfs "match" (root only): write "tcp|udp IFINDEX SADDR SPORT DADDR
 * DPORT" (a packet's source is the remote end; both addresses IPv4, or
 * both IPv6 for the IPv6 filters), read back "NAME ID" of
 * the stack and filter sluice_filter_match() picks in the writer's netns,
 * "kernel ID" for a hand-off entry that gives the packet to the kernel,
 * or "none".  The lookup is the receive path's own, counters included, so
 * tests can check matching before any packet is steered.
 */
#define SLUICE_MATCH_RESULT	(SLUICE_NAME_MAX + 24)

static int match_open(struct inode *inode, struct file *file)
{
	file->private_data = kzalloc(SLUICE_MATCH_RESULT, GFP_KERNEL);
	return file->private_data ? nonseekable_open(inode, file) : -ENOMEM;
}

static int match_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

/* @s as an address of the family the first one had (0: any). */
static int sluice_match_parse_addr(const char *s, struct in6_addr *addr,
				   int *family)
{
	memset(addr, 0, sizeof(*addr));
	if (*family != AF_INET6 &&
	    in4_pton(s, -1, (u8 *)&addr->s6_addr32[3], -1, NULL)) {
		*family = AF_INET;
		return 0;
	}
	if (*family != AF_INET && in6_pton(s, -1, addr->s6_addr, -1, NULL)) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static ssize_t match_write(struct file *file, const char __user *ubuf,
			   size_t len, loff_t *ppos)
{
	char buf[160], proto[4], sa[48], da[48];
	struct in6_addr saddr, daddr;
	struct sluice_kfilter *f;
	struct net *net = current->nsproxy->net_ns;
	u16 sport, dport;
	char *out = file->private_data;
	int ifindex, family = 0;
	u8 protocol;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%3s %d %47s %hu %47s %hu", proto, &ifindex, sa, &sport,
		   da, &dport) != 6)
		return -EINVAL;
	if (sluice_match_parse_addr(sa, &saddr, &family) ||
	    sluice_match_parse_addr(da, &daddr, &family))
		return -EINVAL;
	if (strcmp(proto, "tcp") && strcmp(proto, "udp"))
		return -EINVAL;
	protocol = proto[0] == 't' ? IPPROTO_TCP : IPPROTO_UDP;
	rcu_read_lock();
	if (family == AF_INET6)
		f = sluice_filter_find6(net, ifindex, protocol, &saddr,
					htons(sport), &daddr, htons(dport));
	else
		f = sluice_filter_find(net, ifindex, protocol,
				       saddr.s6_addr32[3], htons(sport),
				       daddr.s6_addr32[3], htons(dport));
	if (f) {
		/* The same effect as the receive path's lookup. */
		atomic64_inc(&f->matches);
		atomic64_inc(&f->fs->matches);
		/* A live hand-off entry: the kernel's, named by its id. */
		snprintf(out, SLUICE_MATCH_RESULT, "%s %u\n",
			 f->ksk ? "kernel" : f->fs->st->name, f->id);
	} else {
		strscpy(out, "none\n", SLUICE_MATCH_RESULT);
	}
	rcu_read_unlock();
	return len;
}

static ssize_t match_read(struct file *file, char __user *ubuf, size_t len,
			  loff_t *ppos)
{
	const char *out = file->private_data;

	return simple_read_from_buffer(ubuf, len, ppos, out, strlen(out));
}

static const struct file_operations sluice_match_fops = {
	.owner		= THIS_MODULE,
	.open		= match_open,
	.release	= match_release,
	.write		= match_write,
	.read		= match_read,
};

void sluice_filter_debugfs_init(struct dentry *root)
{
	debugfs_create_file("match", 0600, root, NULL, &sluice_match_fops);
}

int sluice_filter_init(void)
{
	int ret;

	ret = rhashtable_init(&sluice_filter_ht, &sluice_filter_params);
	if (ret)
		return ret;
	ret = rhashtable_init(&sluice_filter6_ht, &sluice_filter6_params);
	if (ret)
		goto err_filter_ht;
	ret = rhashtable_init(&sluice_resv_ht, &sluice_resv_params);
	if (ret)
		goto err_filter6_ht;
	return 0;

err_filter6_ht:
	rhashtable_destroy(&sluice_filter6_ht);
err_filter_ht:
	rhashtable_destroy(&sluice_filter_ht);
	return ret;
}

/* Every stack, and so every filter, is gone: the tables are empty. */
void sluice_filter_exit(void)
{
	rhashtable_destroy(&sluice_resv_ht);
	rhashtable_destroy(&sluice_filter6_ht);
	rhashtable_destroy(&sluice_filter_ht);
}
