// SPDX-License-Identifier: BSD-2-Clause
/*
 * UDP (RFC 768, RFC 1122 4.1): datagrams stay in their receive buffers on
 * the socket's queue (IP header included, so recvfrom finds the source);
 * sending builds the datagram in one buffer.  Inside the stack (127/8 and
 * its own address) a datagram larger than one packet goes as a chain of
 * buffers, as Linux's loopback, 64 KiB of MTU, carries it whole
 * (lib/README.md, "Segments that span buffers"); on the queue its further
 * buffers follow its first.  One larger than the path MTU to a link goes
 * in IPv4 fragments unless IP_MTU_DISCOVER says DO or PROBE (then
 * -EMSGSIZE), as Linux's ip_append_data() decides; a reassembled one
 * arrives as a chain (proto/ip.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "os/os.h"
#include "proto/proto.h"

/* Buffer aux holds the offset of the UDP payload from the buffer's off;
 * ts_us, on the receive queue, when it arrived (the stack's clock). */

static bool is_broadcast(const struct sl_stack *s, uint32_t daddr)
{
	return sl_ip_is_bcast(s, daddr);
}

/*
 * A queued datagram holds a whole packet buffer whatever its length, so
 * that is what it is charged against SO_RCVBUF (as Linux charges an skb's
 * truesize): counting payload bytes alone let one socket of small
 * datagrams hold the whole pool.  As on Linux, the queue takes a datagram
 * while what it holds is below the limit, so one always fits.
 */
static bool rxq_full(const struct sl_stack *s, const struct sl_sock *so)
{
	return (uint64_t)so->rxq_count * s->buf_size >= so->rcvbuf;
}

/* Datagram idx dropped: with its further buffers if it is a chain. */
static void drop(struct sl_stack *s, uint32_t idx)
{
	if (sl_buf_chained(sl_buf(s, idx)))
		sl_buf_free_chain(s, idx);
	else
		sl_buf_free(s, idx);
}

/* Datagram idx (with its further buffers if chained, linked from it, the
 * last one's next_idx NONE) onto so's receive queue, or dropped. */
static void queue_datagram(struct sl_stack *s, struct sl_sock *so, uint32_t idx,
			   unsigned int pay_off, unsigned int pay_len)
{
	struct sluice_buf *b = sl_buf(s, idx);
	/* A chain's further buffers: aux of them from next_idx, the last
	 * one's next_idx NONE (sl_stack_drain_loopback() checked them). */
	uint32_t more = sl_buf_chained(b) ? b->aux : 0, first = b->next_idx, last = first;

	if (rxq_full(s, so) || so->flags & SL_SF_SHUT_RD) {
		sl_count(s, SL_C_udp_rx_full);
		drop(s, idx);
		return;
	}
	b->aux = pay_off;
	b->seq = pay_len;
	b->ts_us = sl_now(s);	/* SO_TIMESTAMP, SIOCGSTAMP */
	/* A connected socket's only, as Linux's __udp_queue_rcv_skb(). */
	if (so->raddr)
		sl_sock_cpu_note(so);
	sl_sock_rxq_append(s, so, idx, pay_len);
	if (more) {
		/* They follow the first on the queue, each a buffer held
		 * (rxq_count), so SO_RCVBUF is charged for all of them. */
		for (uint32_t i = 1; i < more; i++)
			last = sl_buf(s, last)->next_idx;
		b->next_idx = first;
		so->rxq_tail = last;
		so->rxq_count += more;
	}
	sl_sock_wake(s, so);
	sl_sock_async(s, so, SL_POLL_IN);	/* Linux sock_def_readable() */
}

/* ---- Multicast (RFC 1112) ------------------------------------------------ */

/* Groups so joined: mc_n read once and cut to the array, so no scribbled
 * count (read again after a check) indexes past mc_group. */
static uint32_t mc_count(const struct sl_sock *so)
{
	uint32_t n = SL_READ_ONCE(so->udp.mc_n);

	return n < SL_UDP_MC_MAX ? n : SL_UDP_MC_MAX;
}

bool sl_udp_mc_member(const struct sl_sock *so, uint32_t group)
{
	uint32_t n = mc_count(so);

	for (uint32_t i = 0; i < n; i++)
		if (so->udp.mc_group[i] == group)
			return true;
	return false;
}

/* Does a socket of the stack hold group?  The table of sockets, walked:
 * only for groups the region's count could not hold (mc_over). */
static bool mc_held_scan(struct sl_stack *s, uint32_t group)
{
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		const struct sl_sock *o = sl_sock(s, i);

		sl_count(s, SL_C_sock_walked);
		if (o->type == SL_SOCK_UDP && sl_udp_mc_member(o, group))
			return true;
	}
	return false;
}

/* group's entry in the region's count (sl_region.mc_groups), or NULL. */
static struct sl_mc_group *mc_entry(struct sl_stack *s, uint32_t group)
{
	for (unsigned int i = 0; i < SL_MC_GROUPS; i++)
		if (s->lib->mc_groups[i].n && s->lib->mc_groups[i].group == group)
			return &s->lib->mc_groups[i];
	return NULL;
}

/* One membership of group more. */
static void mc_ref(struct sl_stack *s, uint32_t group)
{
	struct sl_mc_group *g = mc_entry(s, group);

	for (unsigned int i = 0; !g && i < SL_MC_GROUPS; i++)
		if (!s->lib->mc_groups[i].n) {
			g = &s->lib->mc_groups[i];
			g->group = group;
		}
	if (g)
		g->n++;
	else
		s->lib->mc_over++;
}

/* One membership of group fewer (the socket has left it): does another
 * socket of the stack still hold it? */
static bool mc_unref(struct sl_stack *s, uint32_t group)
{
	struct sl_mc_group *g = mc_entry(s, group);

	if (g)
		return --g->n || (s->lib->mc_over && mc_held_scan(s, group));
	if (s->lib->mc_over)
		s->lib->mc_over--;
	return mc_held_scan(s, group);
}

/* Has any socket of the stack joined group? */
static bool group_joined(struct sl_stack *s, uint32_t group)
{
	if (mc_entry(s, group))
		return true;
	return s->lib->mc_over && mc_held_scan(s, group);
}

void sl_udp_mc_recount(struct sl_stack *s)
{
	memset(s->lib->mc_groups, 0, sizeof(s->lib->mc_groups));
	s->lib->mc_over = 0;
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		const struct sl_sock *o = sl_sock(s, i);

		if (o->type != SL_SOCK_UDP)
			continue;
		for (uint32_t k = 0, n = mc_count(o); k < n; k++)
			mc_ref(s, o->udp.mc_group[k]);
	}
}

/*
 * On a module stack with a device, the module makes the device a member
 * (IGMP, the device's filter, the ipoib driver's SA join): the stack joins
 * once, whatever number of its sockets hold the group, and leaves with
 * the last.  Elsewhere (a TAP or loop link, in-stack loopback) there is no
 * device to join; the stack's own input is filter enough.
 */
static int mc_module(struct sl_stack *s, uint32_t group, bool join)
{
	struct sluice_mcast m = { .size = sizeof(m), .group = group };

	if (!s->module_backed || !s->filters)
		return 0;
	if (sl_sys_ioctl(s->region_fd, join ? SLUICE_IOC_MCAST_JOIN : SLUICE_IOC_MCAST_LEAVE, &m) < 0) {
		if ((join && errno == EALREADY) || (!join && errno == ENOENT))
			return 0;
		return -errno;
	}
	return 0;
}

static int mc_check(const struct sl_stack *s, const struct sl_sock *so, uint32_t group,
		    uint32_t ifaddr)
{
	if (so->type != SL_SOCK_UDP)
		return -EPROTO;
	if (!SL_IN_MULTICAST(group))
		return -EINVAL;
	/* The interface: any, the stack's own address (it has one), or
	 * loopback's. */
	if (ifaddr && ifaddr != s->lib->ip_addr && (ntohl(ifaddr) >> 24) != 127)
		return -ENODEV;
	return 0;
}

int sl_udp_mc_join(struct sl_stack *s, struct sl_sock *so, uint32_t group, uint32_t ifaddr)
{
	int ret = mc_check(s, so, group, ifaddr);
	uint32_t n;

	if (ret)
		return ret;
	if (sl_udp_mc_member(so, group))
		return -EADDRINUSE;		/* as Linux */
	n = mc_count(so);
	if (n >= SL_UDP_MC_MAX)
		return -ENOBUFS;		/* as Linux past igmp_max_memberships */
	ret = mc_module(s, group, true);
	if (ret)
		return ret;
	so->udp.mc_group[n] = group;
	so->udp.mc_n = n + 1;
	mc_ref(s, group);
	sl_count(s, SL_C_udp_mc_join);
	return 0;
}

/* Leave group i of the n (mc_count()) so holds; i < n. */
static void mc_remove(struct sl_stack *s, struct sl_sock *so, uint32_t i, uint32_t n)
{
	uint32_t group = so->udp.mc_group[i];

	so->udp.mc_group[i] = so->udp.mc_group[n - 1];
	so->udp.mc_n = n - 1;
	if (!mc_unref(s, group))
		mc_module(s, group, false);
}

int sl_udp_mc_drop(struct sl_stack *s, struct sl_sock *so, uint32_t group, uint32_t ifaddr)
{
	int ret = mc_check(s, so, group, ifaddr);
	uint32_t n = mc_count(so);

	if (ret)
		return ret;
	for (uint32_t i = 0; i < n; i++)
		if (so->udp.mc_group[i] == group) {
			mc_remove(s, so, i, n);
			return 0;
		}
	return -EADDRNOTAVAIL;			/* as Linux: not a member */
}

void sl_udp_mc_leave_all(struct sl_stack *s, struct sl_sock *so)
{
	/* A scribbled count: what fits. */
	for (uint32_t n = mc_count(so); n; n--)
		mc_remove(s, so, n - 1, n);
}

/*
 * Does socket o take a datagram to daddr:dport sent to many?  Multicast:
 * a socket that joined the group, and (IP_MULTICAST_ALL, on by default as
 * on Linux) any socket on the port when some socket of the stack did.
 */
static bool takes_group(const struct sl_sock *o, uint32_t daddr, uint16_t dport, bool mcast,
			bool joined)
{
	if (o->type != SL_SOCK_UDP || o->lport != dport || o->rport ||
	    (o->laddr && o->laddr != daddr))
		return false;
	return !mcast || sl_udp_mc_member(o, daddr) || (joined && !o->udp.mc_all_off);
}

void sl_udp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen)
{
	struct sluice_buf *b = sl_buf(s, idx);
	struct sl_udp *uh = (struct sl_udp *)((uint8_t *)ip + hlen);
	unsigned int len = b->len - hlen, ulen;
	/* A chain (from this stack, to one of its addresses): the payload
	 * bytes in its further buffers, checked by the loopback drain. */
	unsigned int more = sl_buf_chained(b) ? b->seq : 0;
	struct sl_sock *so;

	sl_count(s, SL_C_udp_rx);
	if (len < sizeof(*uh))
		goto bad;
	ulen = ntohs(uh->len);
	if (ulen < sizeof(*uh) || ulen > len + more || (more && ulen != len + more))
		goto bad;
	/* A link that vouches for the checksum (SL_BUF_CSUM_OK) skips it; a
	 * chain never left the stack and carries none. */
	if (uh->csum && !(b->flags & SL_BUF_CSUM_OK) &&
	    (more || sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_UDP_,
							      ulen),
					      uh, ulen)) != 0))
		goto bad;
	if (!more)
		b->len = hlen + ulen;

	if (is_broadcast(s, ip->daddr) || SL_IN_MULTICAST(ip->daddr)) {
		if (more)
			goto bad;	/* never sent as a chain */
		/* Every socket bound to the port on INADDR_ANY (or the broadcast
		 * or group address) with no peer gets a copy; for a group, every
		 * one that joined it.  They are on the two chains of unconnected
		 * sockets for the address and the port (not on any other). */
		bool mcast = SL_IN_MULTICAST(ip->daddr);
		bool joined = mcast && group_joined(s, ip->daddr);
		uint32_t heads[2], last = SLUICE_IDX_NONE;
		unsigned int nch = sl_sock_unconnected_chains(s, ip->daddr, uh->dport, heads);

		for (unsigned int ch = 0; ch < nch; ch++) {
			uint32_t guard = 0;

			for (uint32_t i = heads[ch]; sl_sock_next(s, i, &guard);) {
				struct sl_sock *o = sl_sock(s, i);
				uint32_t here = i;

				i = o->hash_next;
				sl_count(s, SL_C_sock_walked);
				if (!takes_group(o, ip->daddr, uh->dport, mcast, joined))
					continue;
				if (last != SLUICE_IDX_NONE) {
					uint32_t c = sl_buf_alloc(s);

					if (c != SLUICE_IDX_NONE) {
						sl_buf(s, c)->len = b->len;
						memcpy(sl_buf_data(s, c), ip, b->len);
						queue_datagram(s, sl_sock(s, last), c,
							       hlen + sizeof(*uh), ulen - sizeof(*uh));
					}
				}
				last = here;
			}
		}
		if (last == SLUICE_IDX_NONE) {
			sl_count(s, SL_C_udp_rx_noport);
			sl_buf_free(s, idx);
			return;
		}
		queue_datagram(s, sl_sock(s, last), idx, hlen + sizeof(*uh), ulen - sizeof(*uh));
		return;
	}

	so = sl_sock_lookup(s, SL_SOCK_UDP, ip->daddr, uh->dport, ip->saddr, uh->sport);
	if (!so) {
		sl_count(s, SL_C_udp_rx_noport);
		sl_icmp_send_unreach(s, idx, ICMP_UNREACH_PORT_);
		drop(s, idx);
		return;
	}
	queue_datagram(s, so, idx, hlen + sizeof(*uh), ulen - sizeof(*uh));
	return;
bad:
	sl_count(s, SL_C_udp_rx_bad);
	drop(s, idx);
}

void sl_udp_icmp_error(struct sl_stack *s, const struct sl_ip *q, int err,
		       const struct sl_icmp_err *ie)
{
	const struct sl_udp *uh = (const struct sl_udp *)((const uint8_t *)q +
							  (q->ver_ihl & 0xf) * 4);
	struct sl_sock *so = sl_sock_lookup(s, SL_SOCK_UDP, q->saddr, uh->sport, q->daddr,
					    uh->dport);
	bool connected, hard = !ie || ie->hard;

	if (!so)
		return;
	connected = (so->flags & SL_SF_CONNECTED) && so->raddr == q->daddr &&
		    so->rport == uh->dport;
	/* Fragmentation needed: an error unless IP_PMTUDISC_DONT.  A
	 * Packet Too Big (ip6.c) is judged there: hard unless
	 * IPV6_PMTUDISC_DONT, queued with IPV6_RECVERR all the same
	 * (__udp6_lib_err()). */
	if (err == EMSGSIZE && !(ie && ie->v6) && so->pmtudisc == IP_PMTUDISC_DONT + 1)
		return;
	/* Linux's __udp4_lib_err(): with IP_RECVERR every error is queued
	 * (the payload past the UDP header) and is SO_ERROR; without, only
	 * a hard one, to a connected socket. */
	if (sl_recverr(so, ie)) {
		sl_sock_busy(s, so);
		sl_errq_icmp(s, so, q, err, ie, sizeof(*uh));
	} else if (!hard || !connected) {
		return;
	}
	so->error = err;
	sl_sock_wake(s, so);
	sl_sock_async(s, so, SL_POLL_ERR);	/* sk_error_report() */
}

/*
 * A datagram to a group (packet idx, built): its TTL is IP_MULTICAST_TTL
 * (1 by default, RFC 1112 6.1), and with IP_MULTICAST_LOOP (on by
 * default) a copy goes to the group's members inside the stack, as Linux
 * loops it to local members.  Returns true if it is done with idx (a stack
 * with no link: only its own members hear it).
 */
static bool mc_send(struct sl_stack *s, struct sl_sock *so, uint32_t idx)
{
	uint8_t ttl = 1;

	if (so->udp.mc_ttl)
		ttl = (uint8_t)(so->udp.mc_ttl - 1);
	sl_ip_set_ttl(s, idx, ttl);
	sl_count(s, SL_C_udp_mc_tx);
	if (so->udp.mc_if == SL_MC_IF_LO) {
		/* Out of loopback and back in: to the stack's members alone,
		 * whatever IP_MULTICAST_LOOP says. */
		sl_ip_loopback_one(s, idx);
		sl_count(s, SL_C_udp_mc_looped);
		return true;
	}
	if (!so->udp.mc_noloop) {
		uint32_t n = sl_pkt_copy(s, idx);

		if (n != SLUICE_IDX_NONE) {
			sl_ip_loopback_one(s, n);
			sl_count(s, SL_C_udp_mc_looped);
		}
	}
	if (s->link)
		return false;
	sl_buf_free(s, idx);
	return true;
}

/*
 * A datagram to a broadcast address (packet idx, built, source saddr).
 * From a loopback source it goes out lo and no further, as Linux routes a
 * limited broadcast by its source's device (ip_route_output_key_hash()):
 * the stack's own sockets on the port hear it.  Out of the link, a copy
 * goes to them too, as Linux gives every broadcast it sends to its own
 * sockets as well (ip_mc_output(), whatever IP_MULTICAST_LOOP says).
 * Returns true if it is done with idx; false leaves it to sl_ip_output(),
 * which refuses it with ENETUNREACH on a stack with no link.
 */
static bool bcast_send(struct sl_stack *s, uint32_t idx, uint32_t saddr)
{
	uint32_t n;

	if ((ntohl(saddr) >> 24) == 127) {
		sl_ip_loopback_one(s, idx);
		return true;
	}
	if (!s->link)
		return false;
	n = sl_pkt_copy(s, idx);
	if (n != SLUICE_IDX_NONE)
		sl_ip_loopback_one(s, n);
	return false;
}

int sl_ip_mreqn(const void *val, unsigned int len, unsigned int min, struct ip_mreqn *mr)
{
	memset(mr, 0, sizeof(*mr));
	if (!val)
		return -EFAULT;
	if (len < min)
		return -EINVAL;
	/* ip_mreq's imr_interface lands on imr_address, as in Linux. */
	if (len >= sizeof(*mr))
		memcpy(mr, val, sizeof(*mr));
	else if (len >= sizeof(struct ip_mreq))
		memcpy(mr, val, sizeof(struct ip_mreq));
	else
		memcpy(&mr->imr_address, val, sizeof(struct in_addr));
	return 0;
}

static int opt_int(const void *val, unsigned int len, int *v)
{
	unsigned char c;

	/* ip(7): an int, or for these options a single byte too. */
	if (!val || len < 1)
		return -EINVAL;
	if (len >= sizeof(int)) {
		memcpy(v, val, sizeof(*v));
	} else {
		memcpy(&c, val, 1);
		*v = c;
	}
	return 0;
}

int sl_udp_mc_setopt(struct sl_stack *s, struct sl_sock *so, int name, const void *val,
		     unsigned int len)
{
	struct ip_mreqn mr;
	int v = 0, ret;

	if (name == IP_MULTICAST_IF) {
		ret = sl_ip_mreqn(val, len, sizeof(struct in_addr), &mr);
		if (ret)
			return ret;
		uint8_t to;

		/* Any, loopback, or the stack's one interface, by index or
		 * address (Linux: the index wins). */
		if (mr.imr_ifindex == SL_LO_IFINDEX ||
		    (!mr.imr_ifindex && (ntohl(mr.imr_address.s_addr) >> 24) == 127))
			to = SL_MC_IF_LO;
		else if (mr.imr_ifindex ? (!s->ifindex || (unsigned int)mr.imr_ifindex != s->ifindex) :
					  (mr.imr_address.s_addr &&
					   mr.imr_address.s_addr != s->lib->ip_addr))
			return -EADDRNOTAVAIL;
		else
			to = mr.imr_ifindex || mr.imr_address.s_addr ? SL_MC_IF_STACK : SL_MC_IF_ANY;
		if (so->type == SL_SOCK_UDP) {
			so->udp.mc_if = to;
			so->udp.mc_if_addr = mr.imr_address.s_addr;
		}
		return 0;
	}
	ret = opt_int(val, len, &v);
	if (ret)
		return ret;
	if (name == IP_MULTICAST_TTL) {
		if (v == -1)
			v = 1;
		if (v < 0 || v > 255)
			return -EINVAL;
		if (so->type == SL_SOCK_UDP)
			so->udp.mc_ttl = (uint16_t)(v + 1);
		return 0;
	}
	if (name == IP_MULTICAST_ALL) {
		if (so->type == SL_SOCK_UDP)
			so->udp.mc_all_off = !v;
		return 0;
	}
	if (so->type == SL_SOCK_UDP)
		so->udp.mc_noloop = !v;
	return 0;
}

int sl_udp_mc_getopt(struct sl_stack *s, const struct sl_sock *so, int name, void *val,
		     unsigned int *len)
{
	bool udp = so->type == SL_SOCK_UDP;
	int v;

	if (name == IP_MULTICAST_IF) {
		/* Linux: the address it was given (0 if an index was). */
		struct in_addr a = { udp ? so->udp.mc_if_addr : 0 };

		(void)s;

		if (*len < sizeof(a))
			return -EINVAL;
		memcpy(val, &a, sizeof(a));
		*len = sizeof(a);
		return 0;
	}
	if (name == IP_MULTICAST_TTL)
		v = udp && so->udp.mc_ttl ? so->udp.mc_ttl - 1 : 1;
	else if (name == IP_MULTICAST_ALL)
		v = !(udp && so->udp.mc_all_off);
	else
		v = !(udp && so->udp.mc_noloop);
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

/* The socket's IP_TTL and IP_TOS, then those of this datagram's control
 * messages, into the header sl_ip_build() made. */
static void ip_hdr(struct sl_stack *s, uint32_t idx, const struct sl_sock *so,
		   const struct sl_tx_meta *tx)
{
	struct sl_ip *ip;

	sl_ip_sock_hdr(s, idx, so);
	if (!tx || (tx->ttl < 0 && tx->tos < 0))
		return;
	ip = (struct sl_ip *)(sl_buf_base(s, idx) + sl_buf(s, idx)->off);
	if (tx->ttl >= 0)
		ip->ttl = (uint8_t)tx->ttl;
	if (tx->tos >= 0)
		ip->tos = (uint8_t)tx->tos;
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
}

/*
 * A datagram of len bytes (more than max, one packet's) to an address of
 * the stack's own: a chain of buffers on the loopback queue, the headers
 * and the first part in one marked SL_BUF_LOCAL | SL_BUF_CHAIN whose aux
 * counts the rest, each further part filling a buffer.  It never leaves
 * the stack, so it carries no UDP checksum.  All or nothing: -ENOBUFS if
 * the pool cannot hold it.
 */
static ssize_t send_chain(struct sl_stack *s, struct sl_sock *so, const uint8_t *buf,
			  size_t len, uint32_t saddr, uint32_t daddr, uint16_t dport,
			  const struct sl_tx_meta *tx, size_t max)
{
	uint32_t head = sl_buf_alloc(s), tail = head, n = 0;
	size_t done = max;
	struct sl_udp *uh;

	if (head == SLUICE_IDX_NONE)
		return -ENOBUFS;
	while (done < len) {
		uint32_t c = sl_buf_alloc(s);
		size_t part = len - done < s->buf_size ? len - done : s->buf_size;

		if (c == SLUICE_IDX_NONE) {
			sl_buf_free_chain(s, head);
			sl_count(s, SL_C_ip_tx_nobuf);
			return -ENOBUFS;
		}
		sl_buf(s, c)->off = 0;
		sl_buf(s, c)->len = (uint16_t)part;
		memcpy(sl_buf_base(s, c), buf + done, part);
		sl_buf(s, tail)->next_idx = c;
		tail = c;
		done += part;
		n++;
	}
	uh = (struct sl_udp *)(sl_buf_data(s, head) + sizeof(struct sl_ip));
	uh->sport = so->lport;
	uh->dport = dport;
	uh->len = htons((uint16_t)(sizeof(*uh) + len));
	uh->csum = 0;
	memcpy(uh + 1, buf, max);
	sl_ip_build(s, head, IPPROTO_UDP_, saddr, daddr, (uint16_t)(sizeof(*uh) + len));
	ip_hdr(s, head, so, tx);
	/* The IPv4 length counts it all; this buffer holds the first part. */
	sl_buf(s, head)->len = (uint16_t)(sizeof(struct sl_ip) + sizeof(*uh) + max);
	sl_buf(s, head)->flags = SL_BUF_LOCAL | SL_BUF_CHAIN;
	sl_buf(s, head)->aux = (uint16_t)n;
	sl_count(s, SL_C_ip_tx);
	sl_count(s, SL_C_udp_tx);
	sl_count(s, SL_C_loopback_chain);
	so->tx_pkts++;
	so->tx_bytes += len;
	sl_ip_loopback(s, head, tail);
	return (ssize_t)len;
}

/*
 * A datagram of len bytes, more than the path MTU mtu takes, to a host
 * elsewhere: its header and checksum made for the whole, then sent in
 * fragments without DF (Linux __ip_make_skb() sets DF only on what fits).
 */
static ssize_t send_frags(struct sl_stack *s, struct sl_sock *so, const uint8_t *buf,
			  size_t len, uint32_t saddr, uint32_t daddr, uint16_t dport,
			  const struct sl_tx_meta *tx, uint32_t mtu)
{
	uint32_t idx = sl_buf_alloc(s);
	struct sl_udp uh;
	struct sl_ip hdr;
	int ret;

	if (idx == SLUICE_IDX_NONE)
		return -ENOBUFS;
	uh.sport = so->lport;
	uh.dport = dport;
	uh.len = htons((uint16_t)(sizeof(uh) + len));
	uh.csum = 0;
	if (!(so->opt_flags & SL_SO_NO_CHECK)) {
		uint32_t sum = sl_csum_pseudo(saddr, daddr, IPPROTO_UDP_,
					      (uint16_t)(sizeof(uh) + len));

		sum = sl_csum_add(sum, &uh, sizeof(uh));
		uh.csum = sl_csum_fold(sl_csum_add(sum, buf, len));
		if (uh.csum == 0)
			uh.csum = 0xffff;
	}
	/* The header as a single packet's would be (TTL, TOS), DF off. */
	sl_ip_build(s, idx, IPPROTO_UDP_, saddr, daddr, (uint16_t)(sizeof(uh) + len));
	ip_hdr(s, idx, so, tx);
	memcpy(&hdr, sl_buf_base(s, idx) + sl_buf(s, idx)->off, sizeof(hdr));
	sl_buf_free(s, idx);
	hdr.frag = 0;
	sl_count(s, SL_C_udp_tx);
	so->tx_pkts++;
	so->tx_bytes += len;
	/* To IPv6 itself: IPv6 fragments (its checksum made there). */
	if (sl_v6tok(daddr))
		ret = sl_ip6_output_frags(s, &hdr, &uh, buf, len, mtu + 20);
	else
		ret = sl_ip_output_frags(s, &hdr, (const uint8_t *)&uh, sizeof(uh), buf, len, mtu);
	return ret ? ret : (ssize_t)len;
}

/*
 * A datagram to an IPv6 peer (a handle), as Linux's __ip6_append_data()
 * sizes it.  *mtu (the IPv4-shaped path MTU, the IPv6 one less 20, as
 * sl_pmtu_get() keeps handles') becomes the link's under
 * IPV6_PMTUDISC_PROBE and INTERFACE.  Past it: EMSGSIZE under
 * IPV6_DONTFRAG (the socket's or this datagram's) or IPV6_PMTUDISC_DO,
 * PROBE, INTERFACE (ip6_sk_ignore_df() false), and past what one
 * IPv4-shaped datagram holds (SL_UDP_MAX: Linux's IPv6 takes 20 bytes
 * more); with IPV6_RECVERR a local error, ee_info the IPv6 path MTU, the
 * datagram's destination and port (ipv6_local_error()).  Else 0: it goes
 * in fragments (sl_ip6_output_frags()).  To ::1 or the stack's own
 * address (local), only past SL_UDP_MAX: ee_info lo's MTU, 65536.
 */
static int v6_too_big(struct sl_stack *s, struct sl_sock *so, size_t len, uint32_t daddr,
		      uint16_t dport, const struct sl_tx_meta *tx, bool local, uint32_t *mtu)
{
	int disc = sl_sock_pmtudisc6(so->ip6_opt);
	bool df = tx && tx->dontfrag >= 0 ? tx->dontfrag : (so->ip6_opt & SL_S6_DONTFRAG) != 0;
	uint32_t info;

	/* To ::1 or our own address: as big as a chain takes (the caller
	 * judges), past IPv4's largest a local error with lo's MTU. */
	if (local) {
		if (len <= SL_UDP_MAX)
			return 0;
		info = 65536;
		goto too_big;
	}
	*mtu = disc >= IP_PMTUDISC_PROBE ? sl_mtu(s) - 20 : sl_pmtu_get(s, daddr);
	info = *mtu + 20;
	if (len + sizeof(struct sl_ip) + sizeof(struct sl_udp) <= *mtu)
		return 0;
	if (!df && len <= SL_UDP_MAX && disc != IP_PMTUDISC_DO && disc != IP_PMTUDISC_PROBE &&
	    disc != IP_PMTUDISC_INTERFACE)
		return 0;
	sl_count(s, SL_C_ip_tx_toobig);
too_big:
	if (so->ip6_opt & SL_S6_RECVERR) {
		struct sl_errq_rec rec = {
			.ee_errno = EMSGSIZE, .origin = SO_EE_ORIGIN_LOCAL_,
			.info = info, .daddr = daddr, .dport = dport, .ts_us = sl_now(s),
		};

		sl_sock_busy(s, so);
		sl_errq_add(s, so, &rec, NULL, 0);
	}
	return -EMSGSIZE;
}

ssize_t sl_udp_sendto(struct sl_stack *s, struct sl_sock *so, const void *buf, size_t len,
		      int flags, uint32_t daddr, uint16_t dport, const struct sl_tx_meta *tx)
{
	struct sl_udp *uh;
	uint32_t idx, saddr, mtu;
	size_t max;
	bool local = sl_ip_is_local(s, daddr);
	int ret, disc = so->pmtudisc ? so->pmtudisc - 1 : IP_PMTUDISC_WANT;

	/* A pending error (an ICMP unreachable for a connected socket) is
	 * this send's (Linux sock_alloc_send_pskb()). */
	if (so->error) {
		int e = sl_sock_error(s, so);

		so->error = 0;
		return -e;
	}
	if (so->flags & SL_SF_SHUT_WR)
		return -EPIPE;
	if (!dport)
		return -EINVAL;
	/* The path MTU below DO (Linux ip_sk_use_pmtu()), else the link's. */
	mtu = local || disc >= IP_PMTUDISC_PROBE || is_broadcast(s, daddr) ||
	      SL_IN_MULTICAST(daddr) ? sl_mtu(s) : sl_pmtu_get(s, daddr);
	max = mtu - sizeof(struct sl_ip) - sizeof(*uh);
	if (sl_v6tok(daddr)) {
		ret = v6_too_big(s, so, len, daddr, dport, tx, local, &mtu);
		if (ret)
			return ret;
		max = mtu - sizeof(struct sl_ip) - sizeof(*uh);
	}
	/* Larger than a packet: inside the stack as a chain (up to IPv4's
	 * 65535 bytes, as Linux's loopback takes it); to a host elsewhere in
	 * fragments unless DF is asked for (Linux ip_sk_ignore_df()). */
	if (len > max && (len > SL_UDP_MAX ||
			  (local && len > max + (size_t)SL_CHAIN_MAX * s->buf_size) ||
			  (!local && !sl_v6tok(daddr) &&
			   (disc == IP_PMTUDISC_DO || disc == IP_PMTUDISC_PROBE ||
				      disc == IP_PMTUDISC_INTERFACE ||
				      is_broadcast(s, daddr) || SL_IN_MULTICAST(daddr))))) {
		if (!local)
			sl_count(s, SL_C_ip_tx_toobig);
		/* Linux __ip_append_data(): past IPv4's 65,535 bytes, or
		 * past the path MTU with DF, is a local error too
		 * (ip_local_error(), ee_info the limit, no quote, the
		 * connected port). */
		if ((so->opt_flags & SL_SO_RECVERR) && len <= 0xffff &&
		    (len > SL_UDP_MAX || !local)) {
			struct sl_errq_rec rec = {
				.ee_errno = EMSGSIZE, .origin = SO_EE_ORIGIN_LOCAL_,
				.info = len > SL_UDP_MAX ? 0xffff : mtu, .daddr = daddr,
				.dport = (so->flags & SL_SF_CONNECTED) ? so->rport : 0,
				.ts_us = sl_now(s),
			};

			sl_sock_busy(s, so);
			sl_errq_add(s, so, &rec, NULL, 0);
		}
		return -EMSGSIZE;
	}
	if (is_broadcast(s, daddr) && !(so->flags & SL_SF_BROADCAST))
		return -EACCES;
	if (!(so->flags & SL_SF_BOUND)) {
		ret = sl_sock_bind(s, so, 0, 0);
		if (ret)
			return ret;
	}
	/* Bound to a broadcast or group address: the source is the route's,
	 * as Linux's inet_bind() leaves inet_saddr 0 for those. */
	saddr = is_broadcast(s, so->laddr) || SL_IN_MULTICAST(so->laddr) ? 0 : so->laddr;
	/* Out of loopback (127/8, or a group with IP_MULTICAST_IF there):
	 * loopback's address, as Linux picks lo's. */
	if (!saddr && ((ntohl(daddr) >> 24) == 127 ||
		       (SL_IN_MULTICAST(daddr) && so->udp.mc_if == SL_MC_IF_LO)))
		saddr = htonl(INADDR_LOOPBACK);
	else if (!saddr)
		saddr = sl_ip_src_for(s, daddr);
	/* IP_PKTINFO's ipi_spec_dst: a source of the stack's own (ip(7)). */
	if (tx && tx->saddr) {
		if (!sl_ip_is_local(s, tx->saddr))
			return -EINVAL;
		saddr = tx->saddr;
	}
	/* To this host where no stack socket would take it (the input's
	 * own lookup), from a socket with a kernel twin: the twin sends it,
	 * so a kernel socket there gets it from this socket's address and
	 * port (lib/preload/twin.c). */
	if (so->udp.twin && !(flags & SL_MSG_NOTWIN) && local && !SL_IN_MULTICAST(daddr) &&
	    !is_broadcast(s, daddr) &&
	    !sl_sock_lookup(s, SL_SOCK_UDP, daddr, dport, saddr, so->lport))
		return -EREMOTE;
	if (len > max && local)
		return send_chain(s, so, buf, len, saddr, daddr, dport, tx, max);
	if (len > max)
		return send_frags(s, so, buf, len, saddr, daddr, dport, tx, mtu);
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return -ENOBUFS;
	uh = (struct sl_udp *)(sl_buf_data(s, idx) + sizeof(struct sl_ip));
	uh->sport = so->lport;
	uh->dport = dport;
	uh->len = htons(sizeof(*uh) + len);
	uh->csum = 0;
	memcpy(uh + 1, buf, len);
	/* SO_NO_CHECK: no checksum (RFC 768 lets IPv4 UDP go without). */
	if (!(so->opt_flags & SL_SO_NO_CHECK)) {
		uh->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(saddr, daddr, IPPROTO_UDP_,
								   sizeof(*uh) + len),
						    uh, sizeof(*uh) + len));
		if (uh->csum == 0)
			uh->csum = 0xffff;	/* RFC 768: zero means no checksum */
	}
	sl_ip_build(s, idx, IPPROTO_UDP_, saddr, daddr, sizeof(*uh) + len);
	ip_hdr(s, idx, so, tx);
	sl_count(s, SL_C_udp_tx);
	so->tx_pkts++;
	so->tx_bytes += len;
	if (SL_IN_MULTICAST(daddr) && mc_send(s, so, idx))
		return (ssize_t)len;
	if (is_broadcast(s, daddr) && bcast_send(s, idx, saddr))
		return (ssize_t)len;
	ret = sl_ip_output(s, idx, false);
	return ret ? ret : (ssize_t)len;
}

/*
 * A chained datagram's further buffers, after head idx on the queue: the
 * first want of their rest bytes into out; *last the datagram's last
 * buffer, *nbufs its buffers.  Buffers that do not add up to rest mean
 * the queue was written by someone else.
 */
static int chain_copy(struct sl_stack *s, uint32_t idx, uint8_t *out, size_t want, size_t rest,
		      uint32_t *last, uint32_t *nbufs, bool *fault)
{
	uint32_t steps = 0;

	for (idx = sl_buf(s, idx)->next_idx; rest; idx = sl_buf(s, idx)->next_idx) {
		const struct sluice_buf *c;
		size_t l;

		if (!sl_buf_next(s, idx, &steps) || *nbufs > SL_CHAIN_MAX)
			goto bad;
		c = sl_buf(s, idx);
		l = SL_READ_ONCE(c->len);
		if (!l || l > rest || (uint32_t)c->off + l > s->buf_size)
			goto bad;
		if (want && !*fault) {
			*fault = sl_ucopy(out, sl_buf_base(s, idx) + c->off, l < want ? l : want);
			out += l < want ? l : want;
			want -= l < want ? l : want;
		}
		rest -= l;
		*last = idx;
		++*nbufs;
	}
	return 0;
bad:
	sl_corrupt(s, SL_C_corrupt_chain, idx);
	return sl_broken_err(s);
}

ssize_t sl_udp_recvfrom(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len,
			int flags, uint32_t *saddr, uint16_t *sport, struct sl_rx_meta *meta)
{
	uint32_t idx = so->rxq_head, last = idx, nbufs = 1;
	struct sluice_buf *b;
	const struct sl_ip *ip;
	const struct sl_udp *uh;
	size_t dlen, n, head;
	bool fault;
	int ret;

	if (so->error) {
		int e = sl_sock_error(s, so);

		so->error = 0;
		return -e;
	}
	/* Shut for reading and empty: a read that would wait gets 0, one
	 * that may not wait EAGAIN (Linux __skb_wait_for_more_packets()):
	 * the caller knows which (sl_udp_shut_empty()). */
	if (!sl_buf_some(s, idx))
		return -EAGAIN;
	b = sl_buf(s, idx);
	ip = (const struct sl_ip *)sl_buf_data(s, idx);
	/* The datagram (seq bytes at aux, after the UDP header) lies inside
	 * the packet, or the buffer was written by someone else. */
	dlen = SL_READ_ONCE(b->seq);	/* once: checked, it bounds the copy */
	head = dlen;
	if (sl_buf_chained(b))
		head = b->len > b->aux ? b->len - b->aux : 0;
	if (b->aux < sizeof(struct sl_ip) + sizeof(*uh) || b->aux + head > b->len ||
	    head > dlen) {
		sl_corrupt(s, SL_C_corrupt_buf_len, idx);
		return sl_broken_err(s);
	}
	uh = (const struct sl_udp *)((const uint8_t *)ip + b->aux - sizeof(*uh));
	n = dlen < len ? dlen : len;
	/* A fault in the caller's buffer (core.h, sl_ucopy()): EFAULT, and
	 * the datagram is taken all the same, as Linux's udp_recvmsg()
	 * drops it. */
	fault = sl_ucopy(buf, (const uint8_t *)ip + b->aux, n < head ? n : head);
	if (head < dlen) {
		ret = chain_copy(s, idx, (uint8_t *)buf + head, n > head ? n - head : 0,
				 dlen - head, &last, &nbufs, &fault);
		if (ret)
			return ret;
	}
	if (saddr)
		*saddr = ip->saddr;
	if (sport)
		*sport = uh->sport;
	if (meta) {
		meta->daddr = ip->daddr;
		meta->dport = uh->dport;
		meta->ttl = ip->ttl;
		meta->tos = ip->tos;
		/* The stack's own traffic went over "lo" as the kernel sees it;
		 * the rest came in on the stack's device. */
		/* A datagram reassembled from a link's fragments is a local
		 * chain marked checked (proto/ip.c): the link's. */
		meta->ifindex = (b->flags & (SL_BUF_LOCAL | SL_BUF_CSUM_OK)) == SL_BUF_LOCAL ?
				1 : sl_stack_ifindex(s);
	}
	/* SO_TIMESTAMP: the arrival goes with the datagram; else it is what
	 * SIOCGSTAMP answers next (Linux sock_recv_timestamp()). */
	if (so->opt_flags & SL_SO_TIMESTAMP) {
		if (meta)
			meta->stamp_us = b->ts_us;
	} else {
		so->udp.stamp_us = b->ts_us;
	}
	if (!(flags & MSG_PEEK)) {
		so->rxq_head = sl_buf(s, last)->next_idx;
		if (so->rxq_head == SLUICE_IDX_NONE)
			so->rxq_tail = SLUICE_IDX_NONE;
		so->rxq_bytes -= dlen;
		SL_KILL_POINT("udp_recv");
		so->rxq_count -= nbufs;
		sl_buf(s, last)->next_idx = SLUICE_IDX_NONE;
		drop(s, idx);
	}
	if (fault)
		return -EFAULT;
	return (flags & MSG_TRUNC) ? (ssize_t)dlen : (ssize_t)n;
}

uint32_t sl_udp_poll(struct sl_stack *s, struct sl_sock *so)
{
	uint32_t ev = SL_EV_OUT;

	if (sl_buf_some(s, so->rxq_head) || so->udp.os_ready || (so->flags & SL_SF_SHUT_RD))
		ev |= SL_EV_IN;
	if (so->error || so->udp.os_err || so->errq_head != SLUICE_IDX_NONE)
		ev |= SL_EV_ERR;
	return ev;
}
