// SPDX-License-Identifier: BSD-2-Clause
/*
 * Socket life: socket, bind, listen, accept, accept4, connect, shutdown,
 * getsockname, getpeername, getsockopt, setsockopt.
 *
 * What is accelerated: AF_INET stream and datagram sockets (datagram
 * unless SLUICE_UDP=0), and AF_INET6 ones talking IPv4 (below).
 * Everything else is the kernel's from the start.
 * A Sluice socket nothing was done with yet (not bound, connected or sent
 * on) becomes a kernel socket, transparently and with the options it was
 * given, when it connects or sends to a destination the stack does not
 * reach, binds to an address that is not the stack's, or is given an
 * option Sluice does not have (pl_fallback()).  One not yet connected
 * that connects to this host where the stack has no listener becomes a
 * kernel socket too, bound as it was (kernel peers: kpeer_handoff()), as
 * does a fresh datagram socket sending to a port of this host no stack
 * socket has (pl_dgram_to_kernel()).
 *
 * Every Sluice socket is non-blocking at the native level; blocking is
 * done here (io.c: pl_wait()), so O_NONBLOCK stays a property of the open
 * file description as in the kernel.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"


void pl_native_nonblock(uint32_t sd)
{
	struct sl_stack *s = pl_sl();

	if (!s || sl_lock(s))
		return;
	sl_sock(s, sd)->flags |= SL_SF_NONBLOCK;
	sl_unlock(s);
}

bool pl_reachable(const struct pl_sock *ps, uint32_t daddr)
{
	struct sl_stack *s = pl_sl();
	const struct sl_region *r;

	if (!s)
		return false;
	r = s->lib;
	/* An IPv6 address's handle: an AF_INET6 socket's (native6()). */
	if (sl_v6tok(daddr))
		return ps && ps->v6;
	/* A group on loopback (IP_MULTICAST_IF): the stack's own members. */
	if (SL_IN_MULTICAST(daddr) && ps && ps->type == SOCK_DGRAM && pl_cfg.loopback &&
	    SL_READ_ONCE(sl_sock(s, ps->sd)->udp.mc_if) == SL_MC_IF_LO)
		return true;
	/* 0.0.0.0 is this host (Linux sends it over loopback). */
	if ((ntohl(daddr) >> 24) == 127 || daddr == INADDR_ANY)
		return pl_cfg.loopback;
	if (sl_ip_is_local(s, daddr))
		return true;
	/* A group is on the link of a stack that has one (an address). */
	if (SL_IN_MULTICAST(daddr))
		return r->ip_addr && s->link;
	/* A stack with an address of its own reaches its subnet, and the rest
	 * through its gateway (a link such as SLUICE_TAP carries it). */
	return r->ip_addr && daddr != INADDR_ANY && daddr != INADDR_BROADCAST &&
	       ((daddr & r->ip_mask) == (r->ip_addr & r->ip_mask) || r->ip_gateway);
}

/* May a Sluice socket bind this address? (127/8 only with SLUICE_LOOPBACK) */
static bool is_local(uint32_t addr)
{
	if ((ntohl(addr) >> 24) == 127)
		return pl_cfg.loopback;
	return sl_ip_is_local(pl_sl(), addr);
}

static int get_sin(const struct sockaddr *a, socklen_t len, struct sockaddr_in *out)
{
	if (!a)
		return -EFAULT;
	if (len < sizeof(*out))
		return -EINVAL;
	memcpy(out, a, sizeof(*out));
	return out->sin_family == AF_INET ? 0 : -EAFNOSUPPORT;
}

/* connect()'s address: AF_INET, or AF_UNSPEC (a disconnect; Linux reads
 * only its family). */
static int get_sin_or_unspec(const struct sockaddr *a, socklen_t len, struct sockaddr_in *out)
{
	if (a && len >= sizeof(sa_family_t) && a->sa_family == AF_UNSPEC) {
		memset(out, 0, sizeof(*out));
		out->sin_family = AF_UNSPEC;
		return 0;
	}
	return get_sin(a, len, out);
}

/*
 * AF_INET6 sockets.  The stack speaks IPv4 only; an AF_INET6 socket lives
 * in it as long as it talks IPv4, which is what a dual-stack socket
 * (IPV6_V6ONLY 0, Linux's default) does with v4-mapped addresses
 * (::ffff:a.b.c.d) and with :: (any IPv4 address; IPv6 ones through the
 * kernel twin, twin.c).  Every address crossing the API is converted here:
 * in, a sockaddr_in6 read with Linux's rules (at least SIN6_LEN_RFC2133,
 * 24 bytes; family AF_INET6; for datagrams AF_INET and AF_UNSPEC too);
 * out, v4-mapped, flowinfo and scope 0, 28 bytes.  An address that needs
 * IPv6 itself (::1, any non-mapped one) is PL_NATIVE6: a fresh socket
 * becomes the kernel's (pl_fallback()), a bound one that never connected
 * too, bound as it was (kpeer_connect(), pl_dgram_v6_handoff()); any
 * other is refused (lib/preload/README.md, "AF_INET6 sockets").
 */
#define PL_SIN6_MIN	24	/* Linux's SIN6_LEN_RFC2133 */

static bool v4mapped(const struct in6_addr *a)
{
	static const uint8_t pre[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(a->s6_addr, pre, sizeof(pre));
}

/* Does ps's local address say IPv4 (Linux: sk_v6_rcv_saddr v4-mapped)?
 * Bound to a v4-mapped address, or connected through one. */
static bool local_mapped(const struct pl_sock *ps)
{
	struct sockaddr_in me;

	return ps->mapped_any || (!sluice_getsockname(pl_stack(), (int)ps->sd, &me) &&
				  me.sin_addr.s_addr != INADDR_ANY && !sl_v6tok(me.sin_addr.s_addr));
}

/*
 * IPv6 itself in the stack (lib/proto/proto.h, "IPv6 sockets"): the
 * 32-bit handle the stack names a6 by, where the stack reaches it: ::1
 * (with loopback acceleration), its own IPv6 address, one on its link's
 * prefix or one its link's route reaches (a handle given now).  0: the
 * kernel's (a scope id, a socket
 * whose address is v4-mapped, anything else).
 */
static uint32_t native6(const struct pl_sock *ps, const struct sockaddr_in6 *s6)
{
	const struct sl_stack *s = pl_sl();
	const uint8_t *a = s6->sin6_addr.s6_addr, *me;
	uint32_t tok, plen;

	if (!s || !pl_cfg.inet6_native || s6->sin6_scope_id || local_mapped(ps))
		return 0;
	tok = sl_v6tok_find(s, a);
	if (tok == SL_V6TOK_LO)
		return pl_cfg.loopback ? tok : 0;
	if (tok)
		return tok;
	me = s->lib->ip6_addr;
	plen = SL_READ_ONCE(s->lib->ip6_plen);
	if (!s->link || !s->link->ops->tx6 || !memcmp(me, (const uint8_t[16]){ 0 }, 16) ||
	    plen < 8 || plen > 128)
		return 0;
	for (uint32_t i = 0; i < plen; i++)
		if ((a[i / 8] ^ me[i / 8]) & (0x80u >> (i % 8)))
			goto routed;
	return sl_v6_handle(pl_stack(), a);
routed:
	/* Off the prefix: through a router, where the link asks the
	 * kernel's route (kring: its device and our address as source). */
	if (!s->link->ops->route6 || !s->link->ops->route6(s->link, (struct sl_stack *)s, a))
		return 0;
	return sl_v6_handle(pl_stack(), a);
}

/* Is ps bound to an IPv6 address of its own (a handle)? */
static bool local_native(const struct pl_sock *ps)
{
	struct sockaddr_in me;

	return !sluice_getsockname(pl_stack(), (int)ps->sd, &me) && sl_v6tok(me.sin_addr.s_addr);
}

/* Is ps's own address the stack's link-local one?  Linux has it bound to
 * the stack's interface then (sk_bound_dev_if, set by the bind or the
 * connect that gave it). */
static bool local_ll(const struct pl_sock *ps)
{
	struct sockaddr_in me;

	return !sluice_getsockname(pl_stack(), (int)ps->sd, &me) &&
	       me.sin_addr.s_addr == SL_V6TOK_LL;
}

/*
 * A link-local address (fe80::/10) and its scope, as Linux reads them
 * (inet6_bind(), tcp_v6_connect(), ip6_datagram_connect(),
 * udpv6_sendmsg()); the stack's interface is sl_stack_ifindex() (a TAP
 * stack's: its TAP device's; lib/proto/README.md "Link-local").
 *   bind: scope 0 EINVAL; the stack's interface: its own link-local
 *     address, else the kernel's answer (EADDRNOTAVAIL); another: the
 *     kernel's (ENODEV, EADDRNOTAVAIL, or its own address there).
 *   connect: scope 0 EINVAL unless the socket is on the stack's
 *     interface already (its address link-local); the stack's interface:
 *     the peer (a handle); another: EINVAL on the stack's interface
 *     already, else the kernel's (ENETUNREACH, or a route there).
 *   send: scope 0 or the stack's interface: the peer (a namespace whose
 *     one interface with link-local routes is the stack's sends there);
 *     another: ENETUNREACH on the stack's interface already, else the
 *     kernel's.
 */
static int ll6(const struct pl_sock *ps, const struct sockaddr_in6 *s6, bool any, bool conn,
	       struct sockaddr_in *out)
{
	const struct sl_stack *s = pl_sl();
	uint32_t ifx = s ? sl_stack_ifindex(s) : 0, scope = s6->sin6_scope_id, tok;
	bool dev;

	if (!s || !pl_cfg.inet6_native || !ifx || local_mapped(ps) ||
	    SL_READ_ONCE(s->lib->ip6_ll_state) != SL_LL_VALID)
		return PL_NATIVE6;
	dev = local_ll(ps);
	if (any) {
		if (!scope)
			return -EINVAL;
		tok = scope == ifx ? sl_v6tok_find(s, s6->sin6_addr.s6_addr) : 0;
		out->sin_addr.s_addr = tok;
		return tok == SL_V6TOK_LL ? 0 : PL_NATIVE6;
	}
	if (scope && scope != ifx)
		return dev ? (conn ? -EINVAL : -ENETUNREACH) : PL_NATIVE6;
	if (!scope && conn && !dev)
		return -EINVAL;
	tok = sl_v6_handle(pl_stack(), s6->sin6_addr.s6_addr);
	out->sin_addr.s_addr = tok;
	return tok ? 0 : PL_NATIVE6;
}

/* A sockaddr_in6 (family checked by the caller) to the stack's address:
 * 0 and *out, or PL_NATIVE6.  ::, with any: INADDR_ANY (a bind);
 * without, Linux's connect() and sendto() take it as loopback, ::1
 * unless the socket's own address is v4-mapped.  IPv6 addresses the
 * stack reaches are handles (native6()); v4-mapped 0/8 is the kernel's
 * (the stack's handles are there). */
static int sin6_to_sin(const struct pl_sock *ps, const struct sockaddr_in6 *s6, bool any,
		       bool conn, struct sockaddr_in *out)
{
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = s6->sin6_port;
	if (v4mapped(&s6->sin6_addr)) {
		/* IPv6 only: Linux __inet6_bind() EINVAL, tcp_v6_connect(),
		 * udpv6_sendmsg() ENETUNREACH. */
		if (ps->v6only)
			return any ? -EINVAL : -ENETUNREACH;
		/* Bound to IPv6 itself (a handle), to IPv4: tcp_v6_connect()
		 * and udpv6_sendmsg() take the IPv4 route from an IPv6
		 * source, which has none. */
		if (!any && local_native(ps))
			return -ENETUNREACH;
		memcpy(&out->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		return sl_v6tok(out->sin_addr.s_addr) ? PL_NATIVE6 : 0;
	}
	if (sl_ip6_is_ll(s6->sin6_addr.s6_addr))
		return ll6(ps, s6, any, conn, out);
	if (!IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr)) {
		out->sin_addr.s_addr = native6(ps, s6);
		return out->sin_addr.s_addr ? 0 : PL_NATIVE6;
	}
	if (any)
		return 0;
	if (!local_mapped(ps))
		return PL_NATIVE6;
	out->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

bool pl_has_port(const struct pl_sock *ps)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);

	return (SL_READ_ONCE(so->flags) & (SL_SF_BOUND | SL_SF_CONNECTED)) ||
	       (ps->type == SOCK_STREAM && SL_READ_ONCE(so->state) != SL_TCP_CLOSED);
}

/* Read a sockaddr_in6 of at least PL_SIN6_MIN bytes (the rest zero). */
static int get_sin6(const struct sockaddr *a, socklen_t len, struct sockaddr_in6 *s6)
{
	if (!a)
		return -EFAULT;
	if (len < PL_SIN6_MIN)
		return -EINVAL;
	memset(s6, 0, sizeof(*s6));
	memcpy(s6, a, len < sizeof(*s6) ? len : sizeof(*s6));
	return s6->sin6_family == AF_INET6 ? 0 : -EAFNOSUPPORT;
}

socklen_t pl_addr_out(const struct pl_sock *ps, const struct sockaddr_in *sin, bool local,
		      void *out)
{
	struct sockaddr_in6 s6;

	if (!ps->v6) {
		memcpy(out, sin, sizeof(*sin));
		return sizeof(*sin);
	}
	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_port = sin->sin_port;
	/* An IPv6 address's handle (native6()): the address. */
	if (sl_v6tok(sin->sin_addr.s_addr) && pl_sl() &&
	    sl_v6tok_addr(pl_sl(), sin->sin_addr.s_addr, s6.sin6_addr.s6_addr)) {
		/* A link-local one with its scope: the stack's interface
		 * (Linux: the socket's bound device, the packet's). */
		if (sl_ip6_is_ll(s6.sin6_addr.s6_addr))
			s6.sin6_scope_id = sl_stack_ifindex(pl_sl());
		memcpy(out, &s6, sizeof(s6));
		return sizeof(s6);
	}
	if (!local || sin->sin_addr.s_addr != INADDR_ANY || ps->mapped_any) {
		s6.sin6_addr.s6_addr[10] = 0xff;
		s6.sin6_addr.s6_addr[11] = 0xff;
		memcpy(&s6.sin6_addr.s6_addr[12], &sin->sin_addr, 4);
	}
	memcpy(out, &s6, sizeof(s6));
	return sizeof(s6);
}

int pl_put_raw(const void *k, socklen_t klen, struct sockaddr *a, socklen_t *lenp)
{
	int len;

	if (pl_copy_in(&len, lenp, sizeof(len)))
		return -EFAULT;
	if (len > (int)klen)
		len = (int)klen;
	if (len < 0)
		return -EINVAL;
	if (len && pl_copy_out(a, k, (size_t)len))
		return -EFAULT;
	return pl_copy_out(lenp, &klen, sizeof(klen));
}

int pl_put_addr(const struct pl_sock *ps, const struct sockaddr_in *sin, bool local,
		struct sockaddr *a, socklen_t *lenp)
{
	struct sockaddr_in6 buf;
	socklen_t n = pl_addr_out(ps, sin, local, &buf);

	return pl_put_raw(&buf, n, a, lenp);
}

int pl_addr_in(const struct sockaddr **a, socklen_t len, struct sockaddr_storage *k)
{
	if ((int)len < 0 || len > sizeof(*k))
		return -EINVAL;
	memset(k, 0, sizeof(k->ss_family));
	if (len && pl_copy_in(k, *a, len))
		return -EFAULT;
	*a = (const struct sockaddr *)k;
	return 0;
}

int pl_dest(const struct pl_sock *ps, const struct sockaddr *a, socklen_t len,
	    struct sockaddr_in *out)
{
	struct sockaddr_in6 s6;
	int ret;

	if (!a)
		return 0;
	if (!ps->v6 || (len >= sizeof(sa_family_t) && a->sa_family == AF_INET)) {
		/* Linux udpv6_sendmsg(): AF_INET is IPv4's sendmsg. */
		if (len < sizeof(*out))
			return -EINVAL;
		memcpy(out, a, sizeof(*out));
		return out->sin_family == AF_INET ? 1 : -EAFNOSUPPORT;
	}
	if (len < offsetof(struct sockaddr, sa_data))
		return -EINVAL;
	if (a->sa_family == AF_UNSPEC)
		return 0;	/* as none (the connected peer) */
	if (a->sa_family != AF_INET6)
		return -EINVAL;
	ret = get_sin6(a, len, &s6);
	if (ret)
		return ret;
	ret = sin6_to_sin(ps, &s6, false, false, out);
	return ret ? ret : 1;
}

static int put_sin(const struct pl_sock *ps, const struct sockaddr_in *sin, bool local,
		   struct sockaddr *a, socklen_t *lenp)
{
	if (!a)
		return 0;	/* accept()'s: none asked */
	return pl_put_addr(ps, sin, local, a, lenp);
}

static int sopt(int ks, int level, int name, const void *v, socklen_t len)
{
	return REAL(setsockopt)(ks, level, name, v, len);
}

/*
 * The fd becomes a kernel socket with the settings the Sluice one had;
 * the Sluice socket is closed unless another fd still holds it.
 */
/* The multicast sending options the Sluice socket holds, given to kernel
 * socket ks (the kernel's defaults are the same: TTL 1, loop on, any). */
static void mc_opts_to(int ks, const struct pl_sock *ps)
{
	static const int names[] = { IP_MULTICAST_TTL, IP_MULTICAST_LOOP, IP_MULTICAST_IF };

	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		union {
			int i;
			struct in_addr a;
		} v;
		unsigned int len = sizeof(v);

		if (!sluice_getsockopt(pl_stack(), (int)ps->sd, IPPROTO_IP, names[i], &v, &len))
			sopt(ks, IPPROTO_IP, names[i], &v, len);
	}
}

/*
 * IPPROTO_IPV6 options a stack socket keeps: those without effect on an
 * AF_INET6 socket's IPv4 traffic in Linux (its IPv4 packets take IP_TOS,
 * IP_TTL, IP_MULTICAST_*; IPV6_RECVTCLASS and IPV6_RECVHOPLIMIT give
 * control messages for IPv6 packets only, ip6_datagram_recv_specific_ctl()),
 * and IPV6_RECVPKTINFO, which gives a v4-mapped datagram an IPV6_PKTINFO
 * (ip6_datagram_recv_common_ctl(); io.c does the same).
 * IPV6_RECVORIGDSTADDR too: udpv6_recvmsg() gives an IPv4 datagram only
 * the IPv4 control messages, so it changes nothing for the stack's.
 * IPV6_RECVERR: ICMPv4 errors are queued by IP_RECVERR alone
 * (__udp4_lib_err()); the error queue of an AF_INET6 socket answers in
 * IPv6's terms whichever set it (io.c).  The values are
 * kept so that getsockopt answers them and a kernel socket it becomes,
 * or its twin, has them.  Every other IPPROTO_IPV6 option would change
 * what the kernel does: a fresh socket becomes the kernel's, a used one is
 * refused (setsockopt()).  At most 16 (v6set's bits).
 */
static const int v6_kept[] = { IPV6_TCLASS, IPV6_UNICAST_HOPS, IPV6_MULTICAST_HOPS,
			       IPV6_MULTICAST_LOOP, IPV6_MULTICAST_IF, IPV6_RECVTCLASS,
			       IPV6_RECVHOPLIMIT, IPV6_RECVPKTINFO, IPV6_RECVORIGDSTADDR,
			       IPV6_RECVERR, IPV6_MTU_DISCOVER, IPV6_DONTFRAG };
#define PL_V6_RECVPKTINFO	7	/* its index */
_Static_assert(sizeof(v6_kept) / sizeof(v6_kept[0]) == PL_V6_KEPT,
	       "pl_sock.v6opt holds every kept option");

static int v6_kept_idx(int name);

/* Those of them the stack applies to the socket's IPv6 packets, kept in
 * its slot too (every process sees them, an accepted socket inherits
 * them: lib/proto/proto.h, sl_sock.ip6_tclass). */
static bool v6_in_slot(int name)
{
	return name == IPV6_TCLASS || name == IPV6_UNICAST_HOPS || name == IPV6_RECVERR ||
	       name == IPV6_MTU_DISCOVER || name == IPV6_DONTFRAG;
}

/* Such an option's value as the slot holds it; false: the default of a
 * hop limit not set (the kernel's answer, asked of a new socket). */
static bool v6_slot_get(const struct pl_sock *ps, int name, int *v)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	uint8_t o = SL_READ_ONCE(so->ip6_opt);
	uint16_t h;

	switch (name) {
	case IPV6_TCLASS:
		*v = SL_READ_ONCE(so->ip6_tclass);
		return true;
	case IPV6_UNICAST_HOPS:
		/* Not set: a socket connected to a peer has its route's
		 * (the stack's default, ip6_dst_hoplimit()); else the
		 * kernel's answer (conf.all.hop_limit). */
		h = SL_READ_ONCE(so->ip6_hops);
		if (!h && sl_v6tok(SL_READ_ONCE(so->raddr)) &&
		    !sl_v6tok_own(SL_READ_ONCE(so->raddr))) {
			*v = sl_ip6_hlim(pl_sl());
			return true;
		}
		*v = h - 1;
		return h != 0;
	case IPV6_RECVERR:
		*v = !!(o & SL_S6_RECVERR);
		return true;
	case IPV6_DONTFRAG:
		*v = !!(o & SL_S6_DONTFRAG);
		return true;
	case IPV6_MTU_DISCOVER:
		*v = sl_sock_pmtudisc6(o);
		return true;
	}
	return false;
}

bool pl_v6_recvpktinfo(const struct pl_sock *ps)
{
	return (ps->v6set & (1u << PL_V6_RECVPKTINFO)) && ps->v6opt[PL_V6_RECVPKTINFO];
}

bool pl_v6_opt_on(const struct pl_sock *ps, int name)
{
	int i = v6_kept_idx(name);

	return i >= 0 && (ps->v6set & (1u << i)) && ps->v6opt[i];
}

static int v6_kept_idx(int name)
{
	for (unsigned int i = 0; i < sizeof(v6_kept) / sizeof(v6_kept[0]); i++)
		if (v6_kept[i] == name)
			return (int)i;
	return -1;
}

static void v6_kept_to(int ks, const struct pl_sock *ps)
{
	for (unsigned int i = 0; i < sizeof(v6_kept) / sizeof(v6_kept[0]); i++)
		if (ps->v6set & (1u << i))
			sopt(ks, IPPROTO_IPV6, v6_kept[i], &ps->v6opt[i], sizeof(int));
}

/* Set one of them: the kernel judges the value on a new socket of the
 * same type (its errors, its checks: a stream socket has no multicast
 * options) and the value it reads back is kept.  errno kept. */
static int v6_kept_set(struct pl_sock *ps, int i, const void *val, socklen_t len)
{
	int ks = REAL(socket)(AF_INET6, ps->type | SOCK_CLOEXEC, 0), saved = errno, ret, v;
	socklen_t vl = sizeof(v);

	if (ks < 0)
		return -errno;
	ret = REAL(setsockopt)(ks, IPPROTO_IPV6, v6_kept[i], val, len) ? -errno : 0;
	if (!ret && !REAL(getsockopt)(ks, IPPROTO_IPV6, v6_kept[i], &v, &vl)) {
		ps->v6opt[i] = v;
		ps->v6set |= (uint16_t)(1u << i);
		if (v6_in_slot(v6_kept[i])) {
			/* -1 (the default hop limit) is not what it reads back. */
			if (v6_kept[i] == IPV6_UNICAST_HOPS && val && len >= sizeof(int) &&
			    *(const int *)val == -1)
				v = -1;
			ret = sluice_setsockopt(pl_stack(), (int)ps->sd, IPPROTO_IPV6, v6_kept[i],
						&v, sizeof(v));
		}
	}
	REAL(close)(ks);
	errno = saved;
	return ret;
}

void pl_opts_to_kernel(int ks, const struct pl_sock *ps)
{
	int one = 1, v6only = ps->v6only;

	/* Said, not left to the kernel's default (bindv6only may be 1 where
	 * the program set 0); after a bind() the kernel refuses it, and the
	 * socket has it already (a twin). */
	if (ps->v6)
		sopt(ks, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));

	if (ps->reuseaddr)
		sopt(ks, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ps->reuseport)
		sopt(ks, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (ps->keepalive)
		sopt(ks, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	if (ps->nodelay)
		sopt(ks, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ps->rcvbuf)
		sopt(ks, SOL_SOCKET, SO_RCVBUF, &ps->rcvbuf, sizeof(int));
	if (ps->sndbuf)
		sopt(ks, SOL_SOCKET, SO_SNDBUF, &ps->sndbuf, sizeof(int));
	if (ps->linger.l_onoff)
		sopt(ks, SOL_SOCKET, SO_LINGER, &ps->linger, sizeof(ps->linger));
	for (unsigned int i = 0; i < ps->nopts && i < PL_OPTS_KEPT; i++)
		sopt(ks, ps->opts[i].level, ps->opts[i].name, &ps->opts[i].val, sizeof(int));
	v6_kept_to(ks, ps);
}

/* An int option the stack took before the socket connected, kept for the
 * kernel socket it may become (those kept in fields of their own above
 * are not logged). */
static void opt_log(struct pl_sock *ps, int level, int name, const void *val, socklen_t len)
{
	unsigned int i;
	int v;

	if (ps->connecting || !val || len != sizeof(int) || (unsigned int)level > 255 ||
	    (unsigned int)name > 255 ||
	    (level == SOL_SOCKET && (name == SO_REUSEADDR || name == SO_REUSEPORT ||
				     name == SO_KEEPALIVE || name == SO_RCVBUF ||
				     name == SO_SNDBUF)) ||
	    (level == IPPROTO_TCP && name == TCP_NODELAY))
		return;
	memcpy(&v, val, sizeof(v));
	for (i = 0; i < ps->nopts && i < PL_OPTS_KEPT; i++)
		if (ps->opts[i].level == level && ps->opts[i].name == name)
			break;
	if (i == PL_OPTS_KEPT)
		return;		/* full: not kept (README) */
	ps->opts[i] = (struct pl_opt){ .val = v, .level = (uint8_t)level, .name = (uint8_t)name };
	if (i == ps->nopts)
		ps->nopts++;
}

/* fd, a Sluice socket, becomes kernel socket ks (closed here): the
 * settings kept in ps go to ks, ks takes fd's number (close-on-exec as fd
 * was), and the Sluice socket is let go unless another fd holds it.  ks
 * non-blocking (a twin) or not. */
/* ps's timeouts, O_NONBLOCK and multicast memberships on kernel socket
 * ks (non-blocking already, or not). */
static void kernel_settings(int ks, const struct pl_sock *ps, bool ks_nonblock)
{
	bool nb = SL_READ_ONCE(ps->nonblock);

	for (int i = 0; i < 2; i++) {
		struct timeval tv = i ? ps->sndtimeo : ps->rcvtimeo;

		if (tv.tv_usec == PL_TIMEO_NOW)
			tv = (struct timeval){ .tv_sec = -1 };	/* as it was set */
		if (tv.tv_sec || tv.tv_usec)
			sopt(ks, SOL_SOCKET, i ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (nb != ks_nonblock)
		REAL(fcntl)(ks, F_SETFL, nb ? O_NONBLOCK : 0);
	if (ps->type == SOCK_DGRAM)
		mc_opts_to(ks, ps);
}

/* take: ks is another process's kernel socket of ps (pl_ho_take()),
 * which has the description's settings already. */
static int become_kernel_one(int fd, struct pl_sock *ps, int ks, bool ks_nonblock, bool take)
{
	struct f_owner_ex own = { 0 };
	struct pl_sock *old;
	int fdfl, ret = 0, sig = 0;

	if (!take)
		kernel_settings(ks, ps, ks_nonblock);
	/* The description's owner, F_SETSIG signal and O_ASYNC (async.c),
	 * which Linux keeps with the socket: the kernel's signals then (its
	 * refused connect's POLL_ERR). */
	if (!take && !REAL(fcntl)(fd, F_GETOWN_EX, &own) && own.pid)
		sig = REAL(fcntl)(fd, F_GETSIG);
	fdfl = REAL(fcntl)(fd, F_GETFD);
	/* Before the dup3(): what the kernel's sets hold for fd now. */
	pl_epoll_before_kernel(fd);
	old = pl_fd_forget(fd);
	if (REAL(dup3)(ks, fd, fdfl > 0 && (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
		ret = -errno;
	REAL(close)(ks);
	if (!ret && own.pid) {
		REAL(fcntl)(fd, F_SETOWN_EX, &own);
		if (sig > 0)
			REAL(fcntl)(fd, F_SETSIG, sig);
		if (SL_READ_ONCE(ps->async_fd))
			REAL(fcntl)(fd, F_SETFL, REAL(fcntl)(fd, F_GETFL) | O_ASYNC);
	}
	if (ret)
		pl_epoll_forget_fd(fd);
	else
		pl_epoll_to_kernel(fd);
	pl_debug("fd %d falls back to the kernel", fd);
	pl_sock_release(old);
	return ret;
}

/*
 * fd becomes kernel socket ks (become_kernel_one()), and so does every
 * other fd of ps in this process (dup()s, dup2()s, F_DUPFD: on Linux one
 * socket, so one kernel socket at each, with its own close-on-exec and
 * epoll items), found before anything changes; else a dup would stay the
 * stack's socket beside the kernel's, two sockets where the program has
 * one (lib/preload/README.md, "Every fd of it").  A call another thread
 * makes on a dup in the moment between sees the stack's socket once.
 */
#define PL_DUPS_HERE	8
static int become_kernel_x(int fd, struct pl_sock *ps, int ks, bool ks_nonblock, bool take)
{
	unsigned int want = SL_READ_ONCE(ps->nfd), nother = 0, top, cap = PL_DUPS_HERE;
	int buf[PL_DUPS_HERE], *other = buf, ret;
	uint32_t sd = ps->sd, gen = ps->gen;
	bool kept = false, carried = false;

	/*
	 * Other processes may hold the socket too (fork, SCM_RIGHTS; not a
	 * private one): fd itself carries ks for them where it can, so that
	 * it outlives this process (pl_ho_carry()), else the agent keeps a
	 * copy; and the socket's record says this process has it (under the
	 * stack lock, before this process lets the stack's socket go), so
	 * each switches at its next call on it (lib/preload/README.md,
	 * "Other processes").  In a sandbox they keep the stack's socket.
	 */
	if (!take && !SL_READ_ONCE(ps->priv) && !sl_sys_sandboxed) {
		pl_agent_pending(1);
		carried = !pl_ho_carry(fd, ps, ks);
		kept = !carried && !pl_agent_keep(sd, gen, ks);
		if (kept && sl_sock_ho_publish(pl_stack(), (int)sd, gen)) {
			pl_agent_drop(sd, gen);
			kept = false;
		}
		if (carried)
			sl_sock_ho_publish(pl_stack(), (int)sd, gen);
		pl_agent_pending(-1);
	}

	if (want > 1) {
		want--;
		if (want > PL_DUPS_HERE) {
			other = malloc(want * sizeof(*other));
			if (other)
				cap = want;
			else
				other = buf;	/* the first PL_DUPS_HERE, said below */
		}
		top = pl_fd_top();
		for (unsigned int o = 0; o < top && nother < want && nother < cap; o++) {
			struct pl_sock *q = (int)o == fd ? NULL : pl_get((int)o);

			if (q == ps)
				other[nother++] = (int)o;
			pl_put(q);
		}
		if (nother == cap && cap < want)
			pl_log("fd %d: %u of its %u other fds stay the stack's socket (no memory)",
			       fd, want - nother, want);
	}
	ret = become_kernel_one(fd, ps, ks, ks_nonblock, take);
	for (unsigned int i = 0; !ret && i < nother; i++) {
		struct pl_sock *q = pl_get(other[i]), *old;
		int fl;

		if (q != ps) {	/* closed or replaced meanwhile */
			pl_put(q);
			continue;
		}
		fl = REAL(fcntl)(other[i], F_GETFD);
		pl_epoll_before_kernel(other[i]);
		old = pl_fd_forget(other[i]);
		if (REAL(dup3)(fd, other[i], fl > 0 && (fl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
			pl_epoll_forget_fd(other[i]);
		} else {
			pl_epoll_to_kernel(other[i]);
			pl_debug("fd %d, a dup of fd %d, to the kernel with it", other[i], fd);
		}
		pl_sock_release(old);
		pl_put(q);
	}
	if (other != buf)
		free(other);
	/* This process held the stack's socket alone (it went with its
	 * fds): nobody is to ask for the copy. */
	if (kept)
		pl_agent_settle(sd, gen);
	return ret;
}

static int become_kernel(int fd, struct pl_sock *ps, int ks, bool ks_nonblock)
{
	return become_kernel_x(fd, ps, ks, ks_nonblock, false);
}

/*
 * fd's socket ps was handed to the kernel by another process (ho_pid in
 * its record; fork, SCM_RIGHTS): that process's agent gives its kernel
 * socket, which becomes fd and every other fd of ps here, as at a
 * hand-over of our own (close-on-exec, epoll items), and the stack's
 * socket is let go.  True: fd is no longer the stack's (the caller
 * makes the call on the kernel socket).  False: it still is (nobody
 * gives it: that process ended, a sandbox; said once, and not asked
 * again for this socket).
 */
static pthread_mutex_t take_mu = PTHREAD_MUTEX_INITIALIZER;

bool pl_ho_take(int fd, struct pl_sock *ps)
{
	struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	uint32_t pid = SL_READ_ONCE(so->ho_pid);
	struct sl_ho_get rq = { .magic = SL_HO_GET, .sd = ps->sd, .gen = ps->gen };
	struct pl_sock *cur;
	int ks, k2, saved = errno;
	bool agent = false;

	if (!pid || pid == (uint32_t)sl_self_pid() || SL_READ_ONCE(ps->ho_failed) ||
	    SL_READ_ONCE(so->kp.gen) != ps->gen || sl_sys_sandboxed)
		return false;
	pthread_mutex_lock(&take_mu);
	/* Another thread's call may have switched it meanwhile. */
	cur = pl_get(fd);
	pl_put(cur);
	if (cur != ps) {
		pthread_mutex_unlock(&take_mu);
		return true;
	}
	/* Carried by the fd itself (pl_ho_carry()), else the agent's copy.
	 * The agent answers once the hand-over it is making is done (a live
	 * hand-off publishes before the kernel socket is carried): the fd
	 * is looked at again then, and when the agent is gone. */
	ks = pl_ho_fetch(fd, ps);
	if (ks < 0) {
		ks = pl_agent_tell(pid, (const struct sl_ho_get *)&rq);
		agent = ks >= 0;
		if (ks < 0 && (k2 = pl_ho_fetch(fd, ps)) >= 0)
			ks = k2;
	}
	if (ks < 0) {
		SL_WRITE_ONCE(ps->ho_failed, true);
		pthread_mutex_unlock(&take_mu);
		pl_log("fd %d: its socket was handed to the kernel by process %u, which does not "
		       "give it (%s): it stays the stack's here", fd, pid, strerror(-ks));
		errno = saved;
		return false;
	}
	become_kernel_x(fd, ps, ks, false, true);
	pthread_mutex_unlock(&take_mu);
	/* This process held the stack's socket last: the copy kept for
	 * holders can go now (else with the agent's next look).  A carried
	 * one went with the fd's last description. */
	if (agent)
		pl_ho_let_go(pid, rq.sd, rq.gen);
	pl_debug("fd %d: the kernel socket process %u made of socket %u", fd, pid, rq.sd);
	errno = saved;
	return true;
}

int pl_fallback(int fd, struct pl_sock *ps)
{
	int ks = REAL(socket)(ps->v6 ? AF_INET6 : AF_INET, ps->type | SOCK_CLOEXEC, 0);
	int saved = errno, ret;

	if (ks < 0)
		return -errno;
	pl_opts_to_kernel(ks, ps);
	ret = become_kernel(fd, ps, ks, false);
	if (!ret)
		errno = saved;	/* an option the kernel refused is not the call's error */
	return ret;
}

/*
 * Live hand-off (lib/preload/README.md, "Live hand-off"): an established
 * TCP connection becomes a kernel socket at the same fd number, moved with
 * TCP repair by sluice_handoff() (proto/tcp/tcp_handoff.c), with the
 * options kept here, O_NONBLOCK, close-on-exec and its epoll items.  Every
 * fd of it in this process moves (dup()s: each becomes the one kernel
 * socket, close-on-exec as it was).  An AF_INET6 one talking IPv4 becomes
 * an AF_INET6 kernel socket with IPv4-mapped names.  No other thread
 * blocked in a call on it, not in a sandbox.  0, fd is the kernel's; or
 * -errno and the connection is the stack's, working.
 */
int pl_handoff(int fd, struct pl_sock *ps)
{
	int ks, ret;

	if (ps->type != SOCK_STREAM)
		return -EOPNOTSUPP;
	if (sl_sys_sandboxed || !SL_READ_ONCE(ps->nfd))
		return -EOPNOTSUPP;
	/* Another thread blocked in a call on it would wake to the stack
	 * socket's end (0, EPIPE): not while one is. */
	if (SL_READ_ONCE(ps->calls) & PL_CALLS_INFL)
		return -EBUSY;
	/* The hand-off publishes under the stack lock (other processes
	 * that hold the socket then ask this one's agent, which waits for
	 * the copy become_kernel() gives it). */
	pl_agent_pending(1);
	ks = sluice_handoff(pl_stack(), (int)ps->sd);
	if (ks < 0) {
		pl_agent_pending(-1);
		return ks;
	}
	pl_opts_to_kernel(ks, ps);
	pl_debug("fd %d handed to the kernel, live", fd);
	/* The stack's socket has ended: each other fd of it becomes the
	 * kernel socket too (become_kernel(); the table still names them,
	 * so they are found after the hand-off as before it). */
	ret = become_kernel(fd, ps, ks, false);
	pl_agent_pending(-1);
	return ret;
}

/*
 * Will the file at dirfd/path (path "": dirfd itself, as fexecve() and
 * execveat(AT_EMPTY_PATH) run it), run with envp, run under Sluice: this
 * library in its LD_PRELOAD, and a program the dynamic loader starts and
 * lets preload (not a static ELF file, not set-user-ID or set-group-ID to
 * another)?  A script is taken as its interpreter would be: yes.  A file
 * that cannot be read: yes (the exec fails or the kernel runs what we
 * cannot see; nothing is moved for it).  oflags: O_NOFOLLOW for
 * AT_SYMLINK_NOFOLLOW.
 */
static bool runs_under_sluice(int dirfd, const char *path, int oflags, char *const envp[])
{
	const char *pre = NULL, *me = "libsluice-preload";
	char self[32];
	Dl_info di;
	struct stat st;
	Elf64_Ehdr eh;
	bool interp = false;
	int fd;

	if (dladdr((void *)runs_under_sluice, &di) && di.dli_fname && strrchr(di.dli_fname, '/'))
		me = strrchr(di.dli_fname, '/') + 1;
	for (char *const *e = envp; e && *e; e++)
		if (!strncmp(*e, "LD_PRELOAD=", 11))
			pre = *e + 11;
	if (!pre || !strstr(pre, me))
		return false;
	if (!*path) {
		/* The file itself (opened O_PATH, perhaps): opened again. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", dirfd);
		fd = open(self, O_RDONLY | O_CLOEXEC);
	} else {
		fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | oflags);
	}
	if (fd < 0)
		return true;
	if (fstat(fd, &st) ||
	    ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	    ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		REAL(close)(fd);
		return false;
	}
	if (REAL(pread)(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr)) {
		REAL(close)(fd);
		return true;	/* a script, or not ours to judge */
	}
	for (unsigned int i = 0; i < eh.e_phnum && !interp; i++) {
		Elf64_Phdr ph;

		if (REAL(pread)(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			break;
		interp = ph.p_type == PT_INTERP;
	}
	REAL(close)(fd);
	return interp;
}

/* A stream socket that never connected (bound, or not: used or not)? */
static bool kpeer_fresh(const struct pl_sock *ps)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);

	return SL_READ_ONCE(so->state) == SL_TCP_CLOSED &&
	       !(SL_READ_ONCE(so->tcp.tflags) & (SL_TF_CONN_PEND | SL_TF_CONNECTED));
}

/* What an exec does with a stack socket that stays open across it. */
enum ex_kind {
	EX_STAY,	/* nothing (as before: the new image finds no socket) */
	EX_LIVE,	/* an established connection: live hand-off */
	EX_TWIN,	/* its kernel twin (listening, or bound) becomes it */
	EX_FRESH,	/* nothing done with it yet: a new kernel socket */
	EX_REBIND,	/* a module's stack: the port let go, a kernel socket binds it */
	EX_NONE,	/* stays, and the new program is told nothing new */
};

static enum ex_kind exec_kind(const struct pl_sock *ps)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	int st = SL_READ_ONCE(so->state);
	uint32_t fl = SL_READ_ONCE(so->flags);

	if (ps->type == SOCK_STREAM && (st == SL_TCP_ESTABLISHED || st == SL_TCP_CLOSE_WAIT))
		return EX_LIVE;
	/* (A module's port reservation is not handed over: the stack's
	 * socket, when it ends, stops it listening, sl_filter_release();
	 * the port is bound again below, as before it was a twin.) */
	if (SL_READ_ONCE(ps->twin) && !SL_READ_ONCE(ps->twin_shut) && !ps->twin_resv)
		return EX_TWIN;
	if (!(fl & (SL_SF_BOUND | SL_SF_CONNECTED)) && !sl_sys_sandboxed &&
	    (ps->type == SOCK_DGRAM || (ps->type == SOCK_STREAM && kpeer_fresh(ps))))
		return EX_FRESH;
	/* A module's stack where the filter holds the port (a twin there
	 * is the port's reservation). */
	if (pl_sl()->module_backed && !sl_sys_sandboxed &&
	    (st == SL_TCP_LISTEN || (ps->type == SOCK_DGRAM && (fl & SL_SF_BOUND))))
		return EX_REBIND;
	/* Listeners and datagram sockets without a twin (a module's stack,
	 * SLUICE_KERNEL_LISTEN=0, an address only the stack has): said. */
	if (st == SL_TCP_LISTEN || ps->type == SOCK_DGRAM)
		return EX_STAY;
	return EX_NONE;		/* closing, connecting: as before */
}

/*
 * fd's listener or datagram socket becomes its kernel twin (twin.c),
 * which listens, or is bound, on the same address and port with the
 * socket's options (kernel clients were reaching it already).  The
 * stack's socket is let go with this fd (closed if it was the last
 * anywhere: connections it had queued and not accepted are reset, its
 * unread datagrams dropped: lib/preload/README.md, "At exec").  prev: the
 * kernel socket a dup of this socket became already, else -1.
 */
/*
 * The datagrams the stack holds for ps and nobody has read, written into
 * its twin's kernel queue as the packets they were: from their sender's
 * address and port, to the socket's address and port, through a raw
 * socket on the kernel's loopback (CAP_NET_RAW; a local packet keeps its
 * route, so no reverse-path filter sees it).  Without it they stay where
 * they are (and go with the stack's socket: lib/preload/README.md, "What
 * an exec cannot move").  An IPv4 socket only (an AF_INET6 one's senders
 * may be IPv6 handles); the IP header's own fields (TOS, TTL) are not the
 * sender's.  The number moved.
 */
static unsigned int dgram_requeue(const struct pl_sock *ps)
{
	struct sockaddr_in me, from, to = { .sin_family = AF_INET };
	const size_t hl = sizeof(struct iphdr) + sizeof(struct udphdr);
	unsigned int moved = 0;
	unsigned char *pkt, b;
	int raw;
	long n;

	if (ps->type != SOCK_DGRAM || ps->v6 || sl_sys_sandboxed ||
	    sluice_getsockname(pl_stack(), (int)ps->sd, &me) ||
	    sluice_recvfrom(pl_stack(), (int)ps->sd, &b, 1, MSG_PEEK | MSG_DONTWAIT, &from) < 0)
		return 0;	/* nothing waits */
	raw = REAL(socket)(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	pkt = raw < 0 ? NULL : malloc(hl + 65535);
	if (!pkt) {
		if (raw >= 0)
			REAL(close)(raw);
		pl_debug("socket %u: its unread datagrams cannot be given to its twin (%s)",
			 ps->sd, raw < 0 ? "no raw socket: CAP_NET_RAW" : "no memory");
		return 0;
	}
	to.sin_addr.s_addr = me.sin_addr.s_addr ? me.sin_addr.s_addr : htonl(INADDR_LOOPBACK);
	while ((n = sluice_recvfrom(pl_stack(), (int)ps->sd, pkt + hl, 65535 - hl,
				    MSG_DONTWAIT, &from)) >= 0) {
		struct iphdr *ip = (struct iphdr *)pkt;
		struct udphdr *uh = (struct udphdr *)(pkt + sizeof(*ip));

		memset(pkt, 0, hl);
		ip->version = 4;
		ip->ihl = sizeof(*ip) / 4;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons((uint16_t)(hl + (size_t)n));	/* the kernel's anyway */
		ip->saddr = from.sin_addr.s_addr;
		ip->daddr = to.sin_addr.s_addr;
		uh->source = from.sin_port;
		uh->dest = me.sin_port;
		uh->len = htons((uint16_t)(sizeof(*uh) + (size_t)n));
		/* uh->check 0: none, as IPv4 allows. */
		if (REAL(sendto)(raw, pkt, hl + (size_t)n, 0, (const struct sockaddr *)&to,
				 sizeof(to)) == (ssize_t)(hl + (size_t)n))
			moved++;
	}
	free(pkt);
	REAL(close)(raw);
	if (moved)
		pl_debug("socket %u: %u unread datagram(s) given to its twin", ps->sd, moved);
	return moved;
}

static int exec_to_twin(int fd, struct pl_sock *ps, int prev)
{
	int ks;

	if (prev >= 0) {
		ks = REAL(fcntl)(prev, F_DUPFD_CLOEXEC, 0);
		return ks < 0 ? -errno : become_kernel(fd, ps, ks, SL_READ_ONCE(ps->nonblock));
	}
	if (sl_sys_sandboxed)
		return -EPERM;
	ks = pl_twin_take(ps);
	if (ks < 0)
		return -EOPNOTSUPP;
	dgram_requeue(ps);
	/* A stream twin is non-blocking (twin.c), a datagram one not. */
	return become_kernel(fd, ps, ks, ps->type == SOCK_STREAM);
}

/* A kernel socket that is to bind a module stack's port once every fd of
 * the stack's socket has gone (exec_rebind()). */
struct ex_bind {
	int fd, backlog;
	bool listen;
	socklen_t ml, pln;
	struct sockaddr_in6 me, peer;
};

/*
 * A module's stack (no twins: the module's filter and reservation hold
 * the port): fd's listener or bound datagram socket, the only socket of
 * the stack on its port, becomes a kernel socket of its family and type
 * with its options; the stack's socket goes with its last fd here (its
 * filter and the port's reservation with it), after which the kernel
 * socket binds that address and port, and listens with the socket's
 * backlog or connects to its peer (ex_bind_now(), once every fd has been
 * seen).  0; -EADDRINUSE before anything changed (the port is shared in
 * the stack: a listener's accepted connections, SO_REUSEPORT siblings,
 * TIME-WAIT).
 */
static int exec_rebind(int fd, struct pl_sock *ps, struct ex_bind *b)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	struct sockaddr_in me, peer;
	int ks;

	if (!sl_port_alone(pl_stack(), (int)ps->sd) ||
	    sluice_getsockname(pl_stack(), (int)ps->sd, &me))
		return -EADDRINUSE;
	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->listen = SL_READ_ONCE(so->state) == SL_TCP_LISTEN;
	b->backlog = SL_READ_ONCE(so->tcp.backlog);
	b->ml = pl_addr_out(ps, &me, true, &b->me);
	if (ps->type == SOCK_DGRAM && (SL_READ_ONCE(so->flags) & SL_SF_CONNECTED) &&
	    !sluice_getpeername(pl_stack(), (int)ps->sd, &peer))
		b->pln = pl_addr_out(ps, &peer, false, &b->peer);
	ks = REAL(socket)(ps->v6 ? AF_INET6 : AF_INET, ps->type | SOCK_CLOEXEC, 0);
	if (ks < 0)
		return -errno;
	pl_opts_to_kernel(ks, ps);
	return become_kernel(fd, ps, ks, false);
}

/* The stack's socket gone: the kernel socket takes its port.  A kernel
 * program that bound it in between has it (said; fd stays unbound). */
static void ex_bind_now(const struct ex_bind *b, const char *what)
{
	if (REAL(bind)(b->fd, (const struct sockaddr *)&b->me, b->ml) ||
	    (b->listen && REAL(listen)(b->fd, b->backlog)) ||
	    (b->pln && REAL(connect)(b->fd, (const struct sockaddr *)&b->peer, b->pln)))
		pl_log("fd %d, a kernel socket now, could not take its port again before the "
		       "exec of %s (%s): the new program finds it unbound", b->fd, what,
		       strerror(errno));
}

void pl_exec_handoff(int dirfd, const char *path, int oflags, char *const envp[])
{
	unsigned int top = pl_fd_top();
	bool checked = false, under = true;
	/* Sockets with more than one fd here: the kernel socket the first
	 * became, for the others to share. */
	struct { const struct pl_sock *ps; int fd; } done[8];
	struct ex_bind binds[8];
	unsigned int ndone = 0, nbind = 0;
	char what[48];

	if (*path)
		snprintf(what, sizeof(what), "%.47s", path);
	else
		snprintf(what, sizeof(what), "the file at fd %d", dirfd);
	for (unsigned int fd = 0; fd < top; fd++) {
		struct pl_sock *ps = pl_get((int)fd);
		enum ex_kind k;
		const char *name, *why;
		int fl, ret, prev = -1;
		bool many;

		if (!ps)
			continue;
		for (unsigned int i = 0; i < ndone; i++)
			if (done[i].ps == ps)
				prev = done[i].fd;
		fl = REAL(fcntl)((int)fd, F_GETFD);
		/* Another fd of a socket moved already: a dup of that. */
		k = fl < 0 || (fl & FD_CLOEXEC) ? EX_NONE : prev >= 0 ? EX_TWIN : exec_kind(ps);
		if (k == EX_NONE) {
			pl_put(ps);
			continue;
		}
		/* Only once a socket would stay open across it. */
		if (!checked) {
			under = runs_under_sluice(dirfd, path, oflags, envp);
			checked = true;
		}
		if (under) {
			pl_put(ps);
			return;
		}
		many = SL_READ_ONCE(ps->nfd) > 1;
		switch (k) {
		case EX_LIVE:
			ret = pl_handoff((int)fd, ps);
			break;
		case EX_TWIN:
			ret = exec_to_twin((int)fd, ps, prev);
			break;
		case EX_FRESH:
			ret = pl_fallback((int)fd, ps);
			break;
		case EX_REBIND:
			/* Several fds share it (as dups, above); one more than
			 * there is room for is not moved. */
			ret = nbind == sizeof(binds) / sizeof(binds[0]) ||
					      (many && ndone == sizeof(done) / sizeof(done[0])) ?
				      -ENOBUFS : exec_rebind((int)fd, ps, &binds[nbind]);
			if (!ret)
				nbind++;
			break;
		default:
			ret = -EOPNOTSUPP;
			break;
		}
		if (!ret && many && prev < 0 && ndone < sizeof(done) / sizeof(done[0]))
			done[ndone++] = (typeof(done[0])){ ps, (int)fd };
		name = ps->type == SOCK_DGRAM ? "datagram socket" : "listener";
		why = k == EX_STAY ? "it has no kernel twin" :
		      k == EX_REBIND && ret == -EADDRINUSE ?
		      "other sockets of the stack share its port" : NULL;
		pl_put(ps);
		if (!ret)
			pl_debug("fd %d handed to the kernel before exec of %s", (int)fd, what);
		else if (k == EX_LIVE)
			pl_log("fd %d stays the stack's connection across the exec of %s, which "
			       "will not run under Sluice and gets it as no socket: its hand-off "
			       "to the kernel failed (%s)%s", (int)fd, what, strerror(-ret),
			       ret == -EOPNOTSUPP && !pl_sl()->module_backed ?
			       "; a stack without the module cannot hand off" : "");
		else
			pl_log("fd %d stays the stack's %s across the exec of %s, which will not "
			       "run under Sluice and gets it as no socket: %s%s%s", (int)fd, name,
			       what, why ? why : "it failed (", why ? "" : strerror(-ret),
			       why ? "" : ")");
	}
	for (unsigned int i = 0; i < nbind; i++)
		ex_bind_now(&binds[i], what);
}

/*
 * An exec in a vfork() child (spawn.c; lib/preload/README.md, "At a
 * spawn"): the child has fds of its own but our memory, which it must
 * leave as it is (pl_vfork_child()): no socket of the stack is let go,
 * no fd table entry changes.  Done in the child's own fds only: a
 * listener's or datagram socket's twin put at its fd, a fresh socket's
 * fd a new kernel socket.  A connection is not handed off from here (that
 * ends the stack's socket under the parent): said.  What the child
 * changed itself (dup2() goes to the kernel there) is not known here.
 */
void pl_exec_vfork(int dirfd, const char *path, int oflags, char *const envp[])
{
	unsigned int top = pl_fd_top();
	bool checked = false;

	for (unsigned int fd = 0; fd < top; fd++) {
		struct pl_sock *ps = pl_get((int)fd);
		const char *why = NULL;
		enum ex_kind k;
		int fl, ks, ret = 0;

		if (!ps)
			continue;
		fl = REAL(fcntl)((int)fd, F_GETFD);
		k = fl < 0 || (fl & FD_CLOEXEC) ? EX_NONE : exec_kind(ps);
		if (k == EX_NONE) {
			pl_put(ps);
			continue;
		}
		if (!checked) {
			checked = true;
			if (runs_under_sluice(dirfd, path, oflags, envp)) {
				pl_put(ps);
				return;
			}
		}
		switch (k) {
		case EX_TWIN:
			ks = SL_READ_ONCE(ps->twin) - 1;
			if (ks < 0 || sl_sys_sandboxed) {
				ret = -EOPNOTSUPP;
				break;
			}
			kernel_settings(ks, ps, ps->type == SOCK_STREAM);
			ret = REAL(dup3)(ks, (int)fd, 0) < 0 ? -errno : 0;
			break;
		case EX_FRESH:
			ks = REAL(socket)(ps->v6 ? AF_INET6 : AF_INET, ps->type | SOCK_CLOEXEC, 0);
			if (ks < 0) {
				ret = -errno;
				break;
			}
			pl_opts_to_kernel(ks, ps);
			kernel_settings(ks, ps, false);
			ret = REAL(dup3)(ks, (int)fd, 0) < 0 ? -errno : 0;
			REAL(close)(ks);
			break;
		case EX_LIVE:
			ret = -EBUSY;
			why = "a vfork() child cannot hand a connection off (it shares its parent's "
			      "memory)";
			break;
		default:
			ret = -EOPNOTSUPP;
			why = k == EX_REBIND ? "a module's stack has no kernel twin to share with it" :
					       "it has no kernel twin";
			break;
		}
		if (!ret)
			pl_debug("fd %d handed to the kernel before exec of %s in a vfork() child",
				 (int)fd, *path ? path : "the file at an fd");
		else
			pl_log("fd %d stays the stack's %s across the exec of %s in a vfork() child, "
			       "which will not run under Sluice and gets it as no socket: %s%s%s",
			       (int)fd, k == EX_LIVE ? "connection" : ps->type == SOCK_DGRAM ?
			       "datagram socket" : "listener", *path ? path : "the file at an fd",
			       why ? why : "it failed (", why ? "" : strerror(-ret), why ? "" : ")");
		pl_put(ps);
	}
}

/*
 * posix_spawn() (lib/preload/README.md, "At a spawn").  Each fd put in
 * the child: ks at fd while the child is made (ours to close after: a
 * fresh socket's; else the twin); the stack's placeholder meanwhile in
 * flight on a socket pair of our own (stashed), in no fd of ours: the
 * child gets a copy of our fd table, keeps its close-on-exec fds until
 * some time after the spawn has returned to us (Linux closes them after
 * it lets a vfork parent go), and a copy of the placeholder there would
 * hold its lock (fdtable.c): a close of ours right after the spawn would
 * then leave the stack's socket open.
 */
struct pl_spawn_fd {
	int fd, ks;
	bool own, cloexec, stashed;
	struct pl_sock *ps;
};

struct pl_spawn {
	unsigned int n, cap;
	int pair[2];
	struct pl_spawn_fd f[];
};

static bool spawn_add(struct pl_spawn **spp, const struct pl_spawn_fd *e)
{
	struct pl_spawn *sp = *spp, *n;

	if (!sp || sp->n == sp->cap) {
		unsigned int cap = sp ? sp->cap * 2 : 8;

		n = realloc(sp, sizeof(*sp) + cap * sizeof(sp->f[0]));
		if (!n)
			return false;
		if (!sp) {
			n->n = 0;
			n->pair[0] = n->pair[1] = -1;
		}
		n->cap = cap;
		*spp = sp = n;
	}
	sp->f[sp->n++] = *e;
	return true;
}

/* fd's file sent on the pair (0), or received back (the new fd). */
static int spawn_stash(int pair, int fd, bool back)
{
	char cb[CMSG_SPACE(sizeof(int))], b = 0;
	struct iovec iov = { &b, 1 };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb)
	};
	struct cmsghdr *c;

	memset(cb, 0, sizeof(cb));
	if (back) {
		if (REAL(recvmsg)(pair, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1 ||
		    !(c = CMSG_FIRSTHDR(&mh)) || c->cmsg_type != SCM_RIGHTS)
			return -1;
		memcpy(&fd, CMSG_DATA(c), sizeof(fd));
		return fd;
	}
	c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(fd));
	return REAL(sendmsg)(pair, &mh, MSG_DONTWAIT) == 1 ? 0 : -1;
}

struct pl_spawn *pl_spawn_begin(const char *path, char *const envp[], bool actions)
{
	unsigned int top = pl_fd_top();
	struct pl_spawn *sp = NULL;
	bool checked = false;
	char what[48];

	snprintf(what, sizeof(what), "%.47s", path ? path : "?");
	for (unsigned int fd = 0; path && fd < top; fd++) {
		struct pl_sock *ps = pl_get((int)fd);
		struct pl_spawn_fd e = { .fd = (int)fd, .ks = -1, .ps = ps };
		const char *why = NULL;
		enum ex_kind k;
		int fl, ret = 0;

		if (!ps)
			continue;
		fl = REAL(fcntl)((int)fd, F_GETFD);
		e.cloexec = fl >= 0 && (fl & FD_CLOEXEC);
		k = fl < 0 ? EX_NONE : exec_kind(ps);
		/* A close-on-exec fd reaches the child only through a file
		 * action's dup2(): a twin is put there for it (cheap), nothing
		 * else is done for one. */
		if (e.cloexec && !(actions && k == EX_TWIN))
			k = EX_NONE;
		if (k == EX_NONE) {
			pl_put(ps);
			continue;
		}
		if (!checked) {
			checked = true;
			if (runs_under_sluice(AT_FDCWD, path, 0, envp)) {
				pl_put(ps);
				break;
			}
		}
		switch (k) {
		case EX_LIVE:
			/* For good: parent and child then share the kernel
			 * socket, as they would the kernel's. */
			ret = pl_handoff((int)fd, ps);
			if (!ret)
				pl_debug("fd %d handed to the kernel before the spawn of %s", (int)fd,
					 what);
			else
				pl_log("fd %d stays the stack's connection, and the spawned %s, which "
				       "will not run under Sluice, gets it as no socket: its hand-off "
				       "to the kernel failed (%s)%s", (int)fd, what, strerror(-ret),
				       ret == -EOPNOTSUPP && !pl_sl()->module_backed ?
				       "; a stack without the module cannot hand off" : "");
			pl_put(ps);
			continue;
		case EX_TWIN:
			e.ks = SL_READ_ONCE(ps->twin) - 1;
			if (e.ks < 0 || sl_sys_sandboxed)
				ret = -EOPNOTSUPP;
			else	/* the file is one: as at an exec (fork and exec) */
				kernel_settings(e.ks, ps, ps->type == SOCK_STREAM);
			/* What waits in the stack goes where the child reads
			 * too (we read the twin as well). */
			if (!e.cloexec)
				dgram_requeue(ps);
			break;
		case EX_FRESH:
			e.ks = REAL(socket)(ps->v6 ? AF_INET6 : AF_INET, ps->type | SOCK_CLOEXEC, 0);
			if (e.ks < 0) {
				ret = -errno;
				break;
			}
			e.own = true;
			pl_opts_to_kernel(e.ks, ps);
			kernel_settings(e.ks, ps, false);
			break;
		default:	/* no twin; a module's stack: the parent keeps the port */
			ret = -EOPNOTSUPP;
			why = k == EX_REBIND ? "a module's stack has no kernel twin to share with it" :
					       "it has no kernel twin";
			break;
		}
		if (!ret && !spawn_add(&sp, &e))
			ret = -ENOMEM;
		if (ret) {
			pl_log("fd %d stays the stack's %s, and the spawned %s, which will not run "
			       "under Sluice, gets it as no socket: %s%s%s", (int)fd,
			       ps->type == SOCK_DGRAM ? "datagram socket" : "listener", what,
			       why ? why : "it failed (", why ? "" : strerror(-ret), why ? "" : ")");
			if (e.own)
				REAL(close)(e.ks);
			pl_put(ps);
		}
	}
	if (!sp)
		return NULL;
	if (sl_syscall(SYS_socketpair, AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp->pair))
		pl_log("the spawned %s gets no kernel socket for the stack's (%s)", what,
		       strerror(errno));
	/* From here to pl_spawn_end() no fd of a socket changes. */
	pl_fd_table_lock();
	for (unsigned int i = 0; sp->pair[0] >= 0 && i < sp->n; i++) {
		struct pl_spawn_fd *e = &sp->f[i];
		struct pl_sock *cur = pl_get(e->fd);

		pl_put(cur);
		if (cur != e->ps)
			continue;	/* closed or replaced meanwhile */
		/* The placeholder in flight, then the kernel socket at fd
		 * (which lets the placeholder's fd go). */
		if (spawn_stash(sp->pair[0], e->fd, false))
			continue;
		e->stashed = true;
		if (REAL(dup3)(e->ks, e->fd, e->cloexec ? O_CLOEXEC : 0) < 0) {
			pl_log("fd %d: no kernel socket in the spawned %s (%s)", e->fd, what,
			       strerror(errno));
			continue;
		}
		pl_debug("fd %d handed to the kernel in the spawned %s", e->fd, what);
	}
	return sp;
}

void pl_spawn_end(struct pl_spawn *sp)
{
	if (!sp)
		return;
	/* In the order sent: each placeholder back at its fd. */
	for (unsigned int i = 0; i < sp->n; i++) {
		struct pl_spawn_fd *e = &sp->f[i];
		int back;

		if (!e->stashed)
			continue;
		back = spawn_stash(sp->pair[1], -1, true);
		if (back < 0 || REAL(dup3)(back, e->fd, e->cloexec ? O_CLOEXEC : 0) < 0)
			pl_log("fd %d: the stack's socket could not be put back after a spawn (%s)",
			       e->fd, strerror(errno));
		if (back >= 0)
			REAL(close)(back);
	}
	pl_fd_table_unlock();
	for (int i = 0; i < 2; i++)
		if (sp->pair[i] >= 0)
			REAL(close)(sp->pair[i]);
	for (unsigned int i = 0; i < sp->n; i++) {
		if (sp->f[i].own)
			REAL(close)(sp->f[i].ks);
		pl_put(sp->f[i].ps);
	}
	free(sp);
}

/* setsockopt() of what the stack does not have, on a connection: may it
 * go to the kernel, live?  Then the kernel answers the option. */
static bool handoff_for_opt(const struct pl_sock *ps)
{
	return pl_cfg.handoff && ps->type == SOCK_STREAM && !sl_sys_sandboxed &&
	       (SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state) == SL_TCP_ESTABLISHED ||
		SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state) == SL_TCP_CLOSE_WAIT);
}

/*
 * Can a kernel socket of this host be reached at all: is the kernel's
 * loopback up?  In a network namespace whose lo is down none can (Linux
 * says ENETUNREACH), and the stack, whose own loopback is up, answers
 * itself as before.  ks: any kernel socket (-1: make one).  One ioctl,
 * only where a socket would be handed over; errno left as it was.
 */
static bool kernel_lo_up(int ks)
{
	struct ifreq ifr;
	int saved = errno, fd = ks >= 0 ? ks : REAL(socket)(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool up = true;		/* cannot tell: the kernel decides */

	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (fd >= 0 && !REAL(ioctl)(fd, SIOCGIFFLAGS, &ifr))
		up = ifr.ifr_flags & IFF_UP;
	if (fd >= 0 && ks < 0)
		REAL(close)(fd);
	errno = saved;
	return up;
}

/*
 * Kernel peers: connect() from a TCP socket that never connected, to an
 * address of this host where the stack has no listener (decided under the
 * stack lock: sl_connect_kpeer() said -EREMOTE).  A kernel socket may
 * listen there (a program not under Sluice, one that fell back, an
 * AF_INET6 socket on ::), and Linux would connect to it: the socket
 * becomes a kernel socket, bound as it was (its twin, which holds that
 * port in the kernel and has its options, or a kernel socket bound to the
 * stack's address and port), and the kernel connects it and answers
 * (ECONNREFUSED where nobody listens, EINPROGRESS and its readiness).
 * 0, fd is the kernel's; or -errno: with *gone, fd is neither (the
 * replacing dup3() failed, the stack socket was let go), else fd is still
 * the stack's.
 */
static int kpeer_handoff(int fd, struct pl_sock *ps, bool *gone)
{
	struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	struct sockaddr_in me;
	struct sockaddr_in6 mine;
	socklen_t melen = 0;
	int ks = -1;

	*gone = false;
	if (SL_READ_ONCE(so->flags) & SL_SF_BOUND) {
		if (!kernel_lo_up(SL_READ_ONCE(ps->twin) - 1))
			return -ENETDOWN;
		*gone = true;
		ks = pl_twin_take(ps);
		if (ks >= 0) {
			pl_opts_to_kernel(ks, ps);	/* those set before its bind() */
			return become_kernel(fd, ps, ks, true);
		}
		if (sluice_getsockname(pl_stack(), (int)ps->sd, &me))
			return -EINVAL;
		melen = pl_addr_out(ps, &me, true, &mine);
	}
	*gone = false;
	ks = REAL(socket)(ps->v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ks < 0)
		return -errno;
	if (!kernel_lo_up(ks)) {
		REAL(close)(ks);
		return -ENETDOWN;
	}
	pl_opts_to_kernel(ks, ps);
	if ((SL_READ_ONCE(so->flags) & SL_SF_BOUND) &&
	    REAL(bind)(ks, (const struct sockaddr *)&mine, melen)) {
		int e = errno;

		REAL(close)(ks);
		return -e;
	}
	*gone = true;
	return become_kernel(fd, ps, ks, false);
}

/*
 * A datagram socket bound to :: (in the stack: INADDR_ANY) that now talks
 * to an IPv6 address (::1, ...), which Linux sends from the same port and
 * the stack cannot: it becomes a kernel AF_INET6 socket bound to [::] and
 * that port, as a TCP socket bound and never connected does (kernel
 * peers).  Not when datagrams wait to be read (they would be lost), when
 * it is connected, bound to a v4-mapped address (IPv4 only), or in a
 * sandbox: the stack answers ENETUNREACH (every fd of it here moves).  Its twin (twin.c), which holds the port on [::],
 * becomes the socket; without one a kernel socket is bound there, and
 * if a kernel socket took the port meanwhile, the bind fails and so
 * does the call.  A module socket fd too (the module's stacks have twins
 * since module twins; one that is the port's reservation is the
 * program's own socket, which the module lets go with the stack's
 * socket): it refused, so connect() to [::] after bind() to [::] said
 * ENETUNREACH there (gVisor's DualStackSocketTest.AddressOperations/
 * V6AnyBind*).
 */
int pl_dgram_v6_handoff(int fd, struct pl_sock *ps, bool *gone)
{
	const struct sl_sock *so = sl_sock(pl_sl(), ps->sd);
	struct sockaddr_in6 mine;
	struct sockaddr_in me;
	socklen_t ml;
	int ks;

	*gone = false;
	/* Its own address v4-mapped (bound so, or connected through one):
	 * IPv4 only, Linux says EAFNOSUPPORT. */
	if (ps->type == SOCK_DGRAM && local_mapped(ps))
		return -EAFNOSUPPORT;
	if (ps->type != SOCK_DGRAM || !ps->v6 || sl_sys_sandboxed ||
	    (SL_READ_ONCE(so->flags) & SL_SF_CONNECTED) || SL_READ_ONCE(so->rxq_bytes) ||
	    sluice_getsockname(pl_stack(), (int)ps->sd, &me) || me.sin_addr.s_addr != INADDR_ANY)
		return -ENETUNREACH;
	/* Its twin holds that port on [::] already, with its options and
	 * the datagrams kernel senders sent it: it becomes the socket. */
	ks = SL_READ_ONCE(ps->twin) ? pl_twin_take(ps) : -1;
	if (ks < 0) {
		ml = pl_addr_out(ps, &me, true, &mine);
		ks = REAL(socket)(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (ks < 0)
			return -ENETUNREACH;
		pl_opts_to_kernel(ks, ps);
		if (REAL(bind)(ks, (const struct sockaddr *)&mine, ml)) {
			int e = errno;

			REAL(close)(ks);
			return -e;
		}
	}
	*gone = true;
	return become_kernel(fd, ps, ks, false);
}

bool pl_dgram_to_kernel(const struct pl_sock *ps, const struct sockaddr_in *to)
{
	if (!pl_reachable(ps, to->sin_addr.s_addr))
		return true;
	/* This host's, and no stack socket there: a kernel one may be, and
	 * Linux would deliver to it (decided under the stack lock; a stack
	 * socket bound there later gets the next fresh socket's). */
	return ps->type == SOCK_DGRAM && pl_cfg.kernel_listen && !sl_sys_sandboxed &&
	       !SL_IN_MULTICAST(to->sin_addr.s_addr) &&
	       sl_udp_kpeer(pl_stack(), to->sin_addr.s_addr, to->sin_port) && kernel_lo_up(-1);
}

/* Hand fd to the kernel and connect() there: with *done, connect()'s
 * return (errno set); without it, -errno and fd is still the stack's.
 * saved: errno when the program's call began. */
static int kpeer_connect(int fd, struct pl_sock *ps, const struct sockaddr *addr, socklen_t len,
			 int saved, bool *done)
{
	bool gone;
	int ret = kpeer_handoff(fd, ps, &gone);

	*done = !ret || gone;
	if (!*done)
		return ret;
	if (ret)
		return (int)pl_ret(ret);
	errno = saved;	/* the kernel's answer alone */
	return REAL(connect)(fd, addr, len);
}

/* May connect() hand ps to the kernel?  Twins allowed, not in a sandbox;
 * every fd of it in this process moves (become_kernel()). */
static bool kpeer_ok(const struct pl_sock *ps)
{
	return ps->type == SOCK_STREAM && pl_cfg.kernel_listen && !sl_sys_sandboxed;
}

/*
 * net.ipv6.bindv6only: 1, an AF_INET6 socket is IPv6-only (IPV6_V6ONLY)
 * from the start, 0 dual-stack; -1, a kernel without IPv6 (no such file),
 * which answers socket() itself.  Read once, at the first AF_INET6 socket
 * (Linux reads the namespace's value at each socket()).
 */
static int bindv6only(void)
{
	static int v6only = -2;	/* unknown */
	int v = SL_READ_ONCE(v6only), saved = errno, f;
	char c = 'x';

	if (v > -2)
		return v;
	f = open("/proc/sys/net/ipv6/bindv6only", O_RDONLY | O_CLOEXEC);
	if (f >= 0) {
		if (REAL(read)(f, &c, 1) != 1)
			c = 'x';
		REAL(close)(f);
	}
	errno = saved;
	v = c == '0' ? 0 : c == 'x' ? -1 : 1;
	SL_WRITE_ONCE(v6only, v);
	return v;
}

EXPORT int socket(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC), sd, fd, making;
	struct sluice_stack *st;
	struct sl_stack *s;

	pl_init();
	if (pl_cfg.disabled ||
	    !(domain == AF_INET || (domain == AF_INET6 && pl_cfg.inet6 && bindv6only() >= 0)) ||
	    !((base == SOCK_STREAM && (!protocol || protocol == IPPROTO_TCP)) ||
	      (base == SOCK_DGRAM && pl_cfg.udp && (!protocol || protocol == IPPROTO_UDP))))
		return REAL(socket)(domain, type, protocol);
	st = pl_stack();
	if (!st)
		return REAL(socket)(domain, type, protocol);
	pl_sweep();
	making = pl_fd_making_begin();
	sd = sluice_socket(st, (base == SOCK_STREAM ? SLUICE_SOCK_STREAM : SLUICE_SOCK_DGRAM) |
			   SLUICE_SOCK_NONBLOCK);
	if (sd < 0) {
		pl_fd_making_end(making);
		pl_debug("no Sluice socket (%s): a kernel one", strerror(-sd));
		return REAL(socket)(domain, type, protocol);
	}
	s = pl_sl();
	if (domain == AF_INET6 && !sl_lock(s)) {
		/* Before the fd: pl_sd_v6(), pl_sd_v6only(). */
		sl_sock(s, (uint32_t)sd)->flags |= SL_SF_V6;
		if (bindv6only() == 1)
			sl_sock(s, (uint32_t)sd)->opt_flags |= SL_SO_V6ONLY;
		sl_unlock(s);
	}
	fd = pl_sock_install((uint32_t)sd, base, type & SOCK_CLOEXEC, type & SOCK_NONBLOCK);
	pl_fd_making_end(making);
	return (int)pl_ret(fd);
}

/*
 * A bind in the stack and, for a stream socket, of its kernel twin
 * (twin.c) first: the kernel's answer about the port is the one a program
 * would get beside kernel sockets.  Port 0: the kernel's choice, taken by
 * the stack too; if a stack socket holds that port (one connect() chose),
 * another, PL_TWIN_TRIES times, then the stack's choice without a twin.
 */
#define PL_TWIN_TRIES	8

static int bind_both(struct pl_sock *ps, struct sockaddr_in *sin)
{
	bool pick = !sin->sin_port;
	int ret;

	for (int i = 0; i < PL_TWIN_TRIES; i++) {
		ret = pl_twin_bind(ps, sin);
		if (ret)
			return ret;
		pl_twin_offer(ps, true);
		ret = sluice_bind(pl_stack(), (int)ps->sd, sin);
		pl_twin_offer(ps, false);
		if (!ret)
			pl_twin_adopt(ps);
		if (!ret && ps->type == SOCK_DGRAM && SL_READ_ONCE(ps->twin)) {
			struct sl_stack *s = pl_sl();

			/* A port the kernel chose is not the program's: a
			 * disconnect gives it back (Linux: no
			 * SOCK_BINDPORT_LOCK), as the stack's own choice. */
			if (pick && !sl_lock(s)) {
				sl_sock(s, ps->sd)->opt_flags |= SL_SO_LPORT_AUTO;
				sl_unlock(s);
			}
			pl_twin_listening(ps);	/* a datagram twin hears at once */
		}
		if (!ret || !SL_READ_ONCE(ps->twin))
			return ret;
		pl_twin_close(ps);
		if (ret != -EADDRINUSE || !pick)
			return ret;
		sin->sin_port = 0;
	}
	return sluice_bind(pl_stack(), (int)ps->sd, sin);
}

int pl_dgram_autobind(struct pl_sock *ps)
{
	struct sockaddr_in any = { .sin_family = AF_INET };

	/* As Linux's autobind: INADDR_ANY (:: for a dual-stack socket) and
	 * a port the kernel picks, which a disconnect gives back.  On a
	 * module's stack as its bind() to INADDR_ANY would (twin.c,
	 * pl_twin_usable_at()): without the twin an AF_INET6 socket
	 * connected to ::1 could not send to another IPv6 address
	 * (ENETUNREACH, native6_send()), nor a kernel socket answer it. */
	if (ps->mapped_any || !pl_twin_usable_at(ps, INADDR_ANY))
		return 0;
	return bind_both(ps, &any);
}

/*
 * bind() of ps to IPv4 address sin (the program's address: addr, len).
 * With *done, the call's return (errno set), ps put; else -errno or 0.
 */
static int bind4(int fd, struct pl_sock *ps, struct sockaddr_in *sin,
		 const struct sockaddr *addr, socklen_t len, bool *done)
{
	int ret = 0;

	*done = false;
	/* A datagram socket may bind a group's address, to hear only it, or
	 * the limited broadcast address, to hear only broadcasts: it hears
	 * what a socket bound to INADDR_ANY on the stack would (Linux
	 * inet_bind() takes both, RTN_MULTICAST and RTN_BROADCAST). */
	if (sin->sin_addr.s_addr != INADDR_ANY && !is_local(sin->sin_addr.s_addr) &&
	    !(ps->type == SOCK_DGRAM && (SL_IN_MULTICAST(sin->sin_addr.s_addr) ||
					 sin->sin_addr.s_addr == INADDR_BROADCAST))) {
		if (!ps->used) {
			/* An address of the host's, not the stack's. */
			ret = pl_fallback(fd, ps);
			pl_put(ps);
			*done = true;
			return ret ? (int)pl_ret(ret) : REAL(bind)(fd, addr, len);
		}
		ret = -EADDRNOTAVAIL;
	}
	if (!ret)
		ret = bind_both(ps, sin);
	if (!ret)
		ps->used = true;
	return ret;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_storage k;
	struct sockaddr_in sin;
	bool done = false;
	int ret;

	if (!ps)
		return REAL(bind)(fd, addr, len);
	ret = pl_addr_in(&addr, len, &k);
	if (ret) {
		pl_put(ps);
		return (int)pl_ret(ret);
	}
	if (ps->v6) {
		struct sockaddr_in6 s6;
		bool was_any = ps->mapped_any;

		ret = get_sin6(addr, len, &s6);
		if (!ret)
			ret = sin6_to_sin(ps, &s6, true, false, &sin);
		/* A datagram socket on :: takes IPv6 datagrams too, which only
		 * the kernel gets: its twin (twin.c) hears them; without
		 * twins it is the kernel's, as an IPv6 address is. */
		if (!ret && ps->type == SOCK_DGRAM && IN6_IS_ADDR_UNSPECIFIED(&s6.sin6_addr) &&
		    !pl_has_port(ps) && !pl_twin_usable_at(ps, INADDR_ANY))
			ret = PL_NATIVE6;
		if (ret == PL_NATIVE6) {
			/* An IPv6 address (::1, ...): the kernel's socket, if
			 * nothing was done with it yet (else Linux: bound
			 * already). */
			ret = ps->used && pl_has_port(ps) ? -EINVAL : pl_fallback(fd, ps);
			pl_put(ps);
			return ret ? (int)pl_ret(ret) : REAL(bind)(fd, addr, len);
		}
		/* Before the twin's bind, which shows it (pl_addr_out()). */
		if (!ret && !(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->flags) & SL_SF_BOUND))
			ps->mapped_any = v4mapped(&s6.sin6_addr) && sin.sin_addr.s_addr == INADDR_ANY;
		if (!ret) {
			ret = bind4(fd, ps, &sin, addr, len, &done);
			if (done)
				return ret;
		}
		if (ret)
			ps->mapped_any = was_any;
		pl_put(ps);
		return (int)pl_ret(ret);
	}
	ret = get_sin(addr, len, &sin);
	/* Linux inet_bind(): AF_UNSPEC is taken as AF_INET if the address
	 * is INADDR_ANY (old programs bind that way). */
	if (ret == -EAFNOSUPPORT && sin.sin_family == AF_UNSPEC &&
	    sin.sin_addr.s_addr == htonl(INADDR_ANY)) {
		sin.sin_family = AF_INET;
		ret = 0;
	}
	if (!ret) {
		ret = bind4(fd, ps, &sin, addr, len, &done);
		if (done)
			return ret;
	}
	pl_put(ps);
	return (int)pl_ret(ret);
}

EXPORT int listen(int fd, int backlog)
{
	struct pl_sock *ps = pl_get_call(fd);
	int ret;

	if (!ps)
		return REAL(listen)(fd, backlog);
	ret = 0;
	if (ps->type == SOCK_STREAM && !SL_READ_ONCE(ps->twin) &&
	    !(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->flags) & SL_SF_BOUND)) {
		/* Not bound: a port the kernel's twin and the stack agree on,
		 * as bind() to port 0 (Linux's listen() binds INADDR_ANY). */
		struct sockaddr_in any = { .sin_family = AF_INET };

		ret = bind_both(ps, &any);
	}
	if (!ret)
		ret = pl_twin_listen(ps, backlog);
	if (!ret)
		ret = sluice_listen(pl_stack(), (int)ps->sd, backlog);
	if (!ret) {
		ps->used = true;
		pl_twin_listening(ps);
	} else if (SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state) != SL_TCP_LISTEN) {
		pl_twin_stop(ps);	/* not listening in the stack: nor there */
	}
	pl_put(ps);
	return (int)pl_ret(ret);
}

static int do_accept(int fd, struct sockaddr *addr, socklen_t *lenp, int flags)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_in peer;
	int ret, nfd, making = -1;

	if (!ps)
		return REAL(accept4)(fd, addr, lenp, flags);
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
		ret = -EINVAL;
		goto out;
	}
	for (;;) {
		making = pl_fd_making_begin();
		ret = sluice_accept(pl_stack(), (int)ps->sd, &peer);
		if (ret < 0)
			pl_fd_making_end(making);
		/* None in the stack: one its kernel twin was seen to get
		 * (twin.c), a plain kernel fd from now on. */
		if (ret == -EAGAIN && SL_READ_ONCE(ps->twin)) {
			ret = pl_twin_accept(ps, addr, lenp, flags);
			if (ret != -EAGAIN)
				goto out;
		}
		if (ret != -EAGAIN || ps->nonblock)
			break;
		pl_twin_watch_check();
		/* One waiter woken a connection, as Linux wakes accept(). */
		ret = pl_wait(ps, POLLIN | SLUICE_POLLEXCL, pl_timeo_ms(&ps->rcvtimeo));
		if (ret)
			break;
	}
	if (ret < 0)
		goto out;
	pl_native_nonblock((uint32_t)ret);
	nfd = pl_sock_install((uint32_t)ret, SOCK_STREAM, flags & SOCK_CLOEXEC,
			      flags & SOCK_NONBLOCK);
	pl_fd_making_end(making);
	if (nfd >= 0) {
		struct pl_sock *child = pl_get(nfd);

		if (child) {
			child->used = true;
			pl_put(child);
		}
		/* Linux's __sys_accept4_file(): the connection is taken, and
		 * given up if its address cannot be written. */
		ret = put_sin(ps, &peer, false, addr, lenp);
		if (ret) {
			close(nfd);
			goto out;
		}
	}
	ret = nfd;
out:
	pl_put(ps);
	return (int)pl_ret(ret);
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *lenp)
{
	pl_init();
	return do_accept(fd, addr, lenp, 0);
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *lenp, int flags)
{
	pl_init();
	return do_accept(fd, addr, lenp, flags);
}

/* connect()'s address on an AF_INET6 socket, read as Linux does: AF_UNSPEC
 * disconnects (its family alone is read); a datagram socket takes AF_INET
 * too (__ip6_datagram_connect()); else a sockaddr_in6.  0 and *out (IPv4,
 * or AF_UNSPEC), PL_NATIVE6, or -errno. */
static int conn_addr6(const struct pl_sock *ps, const struct sockaddr *a, socklen_t len,
		      struct sockaddr_in *out)
{
	struct sockaddr_in6 s6;
	int ret;

	if (a && len >= sizeof(sa_family_t) &&
	    (a->sa_family == AF_UNSPEC || (a->sa_family == AF_INET && ps->type == SOCK_DGRAM)))
		return get_sin_or_unspec(a, len, out);
	ret = get_sin6(a, len, &s6);
	return ret ? ret : sin6_to_sin(ps, &s6, false, true, out);
}

/*
 * connect() to where the stack does not go (IPv6 itself, an address it
 * does not reach): a fresh socket becomes a kernel one (pl_fallback()),
 * one bound but never connected a kernel one bound as it was (kernel
 * peers).  true: the kernel took the call, *ret is connect()'s return and
 * ps is put; false: it could not, the socket is still the stack's.
 */
static bool connect_elsewhere(int fd, struct pl_sock *ps, bool fresh, const struct sockaddr *addr,
			      socklen_t len, int saved, int *ret)
{
	bool done;
	int r;

	if (fresh) {
		r = pl_fallback(fd, ps);
		pl_put(ps);
		*ret = r ? (int)pl_ret(r) : REAL(connect)(fd, addr, len);
		return true;
	}
	if (kpeer_ok(ps) && kpeer_fresh(ps)) {
		r = kpeer_connect(fd, ps, addr, len, saved, &done);
		if (done) {
			pl_put(ps);
			*ret = r;
			return true;
		}
	}
	return false;
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved = errno;
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_storage k;
	struct sockaddr_in sin;
	struct sluice_stack *st;
	unsigned int vlen;
	bool done;
	int ret, err;

	if (!ps)
		return REAL(connect)(fd, addr, len);
	ret = pl_addr_in(&addr, len, &k);
	if (ret) {
		pl_put(ps);
		return (int)pl_ret(ret);
	}
	st = pl_stack();
	ret = ps->v6 ? conn_addr6(ps, addr, len, &sin) : get_sin_or_unspec(addr, len, &sin);
	if (ret == PL_NATIVE6) {
		/* IPv6 itself (::1, ...): a kernel socket, as a destination
		 * the stack does not reach (below), bound as it was. */
		if (connect_elsewhere(fd, ps, !ps->used || !pl_has_port(ps), addr, len, saved,
				      &ret))
			return ret;
		if (ps->type == SOCK_DGRAM) {
			ret = pl_dgram_v6_handoff(fd, ps, &done);
			if (!ret || done) {
				pl_put(ps);
				if (ret)
					return (int)pl_ret(ret);
				errno = saved;
				return REAL(connect)(fd, addr, len);
			}
			goto out;	/* ENETUNREACH, or EAFNOSUPPORT */
		}
		ret = -ENETUNREACH;
		goto out;
	}
	if (ret)
		goto out;
	if (sin.sin_family == AF_UNSPEC) {
		ret = sluice_connect(st, (int)ps->sd, &sin);
		/* The twin forgets its peer too; a port that went with the
		 * peer (a chosen one) leaves it nothing to hold. */
		if (!ret && ps->type == SOCK_DGRAM &&
		    !(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->flags) & SL_SF_BOUND))
			pl_twin_close(ps);
		else if (!ret && ps->type == SOCK_DGRAM)
			pl_twin_connect(ps, &sin);
		goto out;
	}
	if (sin.sin_addr.s_addr == INADDR_ANY)	/* as Linux: this host */
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ps->type == SOCK_DGRAM && !ps->used && pl_dgram_to_kernel(ps, &sin)) {
		ret = pl_fallback(fd, ps);
		pl_put(ps);
		return ret ? (int)pl_ret(ret) : REAL(connect)(fd, addr, len);
	}
	if (!pl_reachable(ps, sin.sin_addr.s_addr)) {
		if (connect_elsewhere(fd, ps, !ps->used, addr, len, saved, &ret))
			return ret;
		ret = -ENETUNREACH;
		goto out;
	}
	ps->used = true;
	ps->connecting = true;
	/* A datagram socket's port is held in the kernel too (its twin),
	 * as its bind() would have. */
	if (ps->type == SOCK_DGRAM && !SL_READ_ONCE(ps->twin) &&
	    !(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->flags) & SL_SF_BOUND))
		pl_dgram_autobind(ps);
	if (kpeer_ok(ps)) {
		ret = sl_connect_kpeer(st, (int)ps->sd, &sin);
		if (ret == -EREMOTE) {
			ret = kpeer_connect(fd, ps, addr, len, saved, &done);
			if (done) {
				pl_put(ps);
				return ret;
			}
			/* No kernel socket bound as it was: the stack answers. */
			ret = sluice_connect(st, (int)ps->sd, &sin);
		}
	} else {
		ret = sluice_connect(st, (int)ps->sd, &sin);
	}
	/* A socket bound before it connects needs its kernel twin no more
	 * (twin.c): a connection's port is not held in the kernel, as the
	 * ports connect() picks are not, and a twin for each would cost the
	 * program an fd the kernel would not (EMFILE at half the limit). */
	if ((ret == 0 || ret == -EINPROGRESS) && ps->type == SOCK_STREAM)
		pl_twin_close(ps);
	/* A datagram socket's twin keeps its port and hears the same peer. */
	if (ret == 0 && ps->type == SOCK_DGRAM)
		pl_twin_connect(ps, &sin);
	if (ret != -EINPROGRESS || ps->nonblock)
		goto out;
	/* Blocking connect: wait for the handshake to end either way. */
	ret = pl_wait(ps, POLLOUT, pl_timeo_ms(&ps->sndtimeo));
	if (ret == -EAGAIN) {
		ret = -EINPROGRESS;	/* as Linux when SO_SNDTIMEO runs out */
		goto out;
	}
	if (ret)
		goto out;
	vlen = sizeof(err);
	ret = sluice_getsockopt(st, (int)ps->sd, SOL_SOCKET, SO_ERROR, &err, &vlen);
	if (!ret && !err && SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state) >= SL_TCP_ESTABLISHED)
		/* Through: this connect() has told it, so the next one is
		 * EISCONN (asked again, the stack reports the connect done). */
		sluice_connect(st, (int)ps->sd, &sin);
	if (!ret && err) {
		/* A blocking connect that failed disconnects (Linux's
		 * __inet_stream_connect()): reads say ENOTCONN, not 0. */
		struct sockaddr_in un = { .sin_family = AF_UNSPEC };

		sluice_connect(st, (int)ps->sd, &un);
		ret = -err;
	}
out:
	pl_put(ps);
	return (int)pl_ret(ret);
}

EXPORT int shutdown(int fd, int how)
{
	struct pl_sock *ps = pl_get_call(fd);
	bool lis;
	int ret;

	if (!ps)
		return REAL(shutdown)(fd, how);
	lis = SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->state) == SL_TCP_LISTEN;
	ret = sluice_shutdown(pl_stack(), (int)ps->sd, how);
	/* A listener shut for reading stops listening (Linux: a
	 * disconnect); so does its twin (twin.c, pl_twin_stop()). */
	if (!ret && lis && SL_READ_ONCE(ps->twin) && (how == SHUT_RD || how == SHUT_RDWR))
		pl_twin_stop(ps);
	pl_put(ps);
	return (int)pl_ret(ret);
}

static int name_of(int fd, struct sockaddr *addr, socklen_t *lenp, bool peer)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sockaddr_in sin;
	int ret;

	if (!ps)
		return peer ? REAL(getpeername)(fd, addr, lenp) :
			      REAL(getsockname)(fd, addr, lenp);
	ret = peer ? sluice_getpeername(pl_stack(), (int)ps->sd, &sin) :
		     sluice_getsockname(pl_stack(), (int)ps->sd, &sin);
	if (!ret)
		ret = pl_put_addr(ps, &sin, !peer, addr, lenp);
	pl_put(ps);
	return (int)pl_ret(ret);
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *lenp)
{
	return name_of(fd, addr, lenp, false);
}

EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *lenp)
{
	return name_of(fd, addr, lenp, true);
}

static int int_opt(const void *val, socklen_t len, int *v)
{
	if (!val)
		return -EFAULT;
	if (len < sizeof(int))
		return -EINVAL;
	memcpy(v, val, sizeof(*v));
	return 0;
}

/* Options this layer keeps (the stack has no use for them yet). */
static int set_local(struct pl_sock *ps, int name, const void *val, socklen_t len)
{
	int v = 0, ret;

	switch (name) {
	case SO_REUSEPORT:
		ret = int_opt(val, len, &v);
		if (!ret)
			ret = sluice_setsockopt(pl_stack(), (int)ps->sd, SOL_SOCKET, name, val, len);
		if (!ret)
			ps->reuseport = v;
		return ret;
	case SO_LINGER:
		if (!val)
			return -EFAULT;
		if (len < sizeof(struct linger))
			return -EINVAL;
		/* Kept here too, for a hand-over to the kernel. */
		ret = sluice_setsockopt(pl_stack(), (int)ps->sd, SOL_SOCKET, name, val, len);
		if (!ret)
			memcpy(&ps->linger, val, sizeof(ps->linger));
		return ret;
	case SO_RCVTIMEO:
	case SO_SNDTIMEO: {
		struct timeval tv;

		if (!val)
			return -EFAULT;
		if (len < sizeof(tv))
			return -EINVAL;
		memcpy(&tv, val, sizeof(tv));
		if (tv.tv_usec < 0 || tv.tv_usec >= 1000000)
			return -EDOM;
		if (tv.tv_sec < 0) {
			tv.tv_sec = 0;
			tv.tv_usec = PL_TIMEO_NOW;
		}
		*(name == SO_RCVTIMEO ? &ps->rcvtimeo : &ps->sndtimeo) = tv;
		return 0;
	}
	case SO_PRIORITY:
		return int_opt(val, len, &v);	/* accepted, no effect */
	}
	return -ENOPROTOOPT;
}

/* IPV6_V6ONLY into ps and its slot (SL_SO_V6ONLY: lookups, sock.c). */
static int v6only_to(struct pl_sock *ps, bool on)
{
	struct sl_stack *s = pl_sl();
	struct sl_sock *so;
	int ret = sl_lock(s);

	if (ret)
		return ret;
	so = sl_sock(s, ps->sd);
	so->opt_flags = (uint16_t)(on ? so->opt_flags | SL_SO_V6ONLY :
					so->opt_flags & ~SL_SO_V6ONLY);
	sl_unlock(s);
	ps->v6only = on;
	return 0;
}

/*
 * IPV6_V6ONLY on an AF_INET6 socket of the stack, with Linux's rules
 * (do_ipv6_setsockopt()): EINVAL once it has a port.  1 makes it IPv6
 * only: v4-mapped addresses refused (sin6_to_sin()), no IPv4 packet
 * found by it (sock.c), its twin IPv6 only too.
 */
static int set_v6only(struct pl_sock *ps, const void *val, socklen_t len)
{
	int v, ret;

	if (len < sizeof(int))
		return -EINVAL;		/* before the pointer is read, as Linux */
	ret = int_opt(val, len, &v);
	if (ret)
		return ret;
	if (pl_has_port(ps))
		return -EINVAL;
	return v6only_to(ps, v != 0);
}

/*
 * TCP_ULP on a connection that stays in the stack (both ends in it, or
 * no hand-off allowed): the kernel would load the upper layer by its name
 * and fail with ENOENT where this host has none (no tls module); asked of
 * a new kernel socket, that answer is the program's.  An upper layer the
 * kernel has cannot run over the stack: ENOPROTOOPT stays
 * (lib/preload/README.md, "Options a stack connection cannot take").
 */
static int ulp_unknown(const void *val, socklen_t len)
{
	int ks = REAL(socket)(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), saved = errno, ret;

	if (ks < 0)
		return -ENOPROTOOPT;
	ret = REAL(setsockopt)(ks, IPPROTO_TCP, TCP_ULP, val, len) ? -errno : 0;
	REAL(close)(ks);
	errno = saved;
	return ret == -ENOENT ? -ENOENT : -ENOPROTOOPT;
}

static int set_opt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct pl_sock *ps = pl_get_call(fd);
	int ret, v = 0;

	if (!ps)
		return REAL(setsockopt)(fd, level, name, val, len);
	if (ps->v6 && level == IPPROTO_IPV6 && name == IPV6_V6ONLY) {
		ret = set_v6only(ps, val, len);
		pl_put(ps);
		return (int)pl_ret(ret);
	}
	if (ps->v6 && level == IPPROTO_IPV6 && v6_kept_idx(name) >= 0) {
		ret = v6_kept_set(ps, v6_kept_idx(name), val, len);
		if (!ret && SL_READ_ONCE(ps->twin))
			pl_twin_setopt(ps, level, name, val, len);
		pl_put(ps);
		return (int)pl_ret(ret);
	}
	ret = level == SOL_SOCKET ? set_local(ps, name, val, len) : -ENOPROTOOPT;
	if (ret == -ENOPROTOOPT) {
		ret = sluice_setsockopt(pl_stack(), (int)ps->sd, level, name, val, len);
		if (!ret && val && len >= sizeof(int))
			memcpy(&v, val, sizeof(v));
		if (!ret && level == SOL_SOCKET && name == SO_REUSEADDR) {
			ps->reuseaddr = v;
		} else if (!ret && level == SOL_SOCKET && name == SO_KEEPALIVE) {
			ps->keepalive = v;
		} else if (!ret && level == SOL_SOCKET && name == SO_RCVBUF) {
			ps->rcvbuf = v;
		} else if (!ret && level == SOL_SOCKET && name == SO_SNDBUF) {
			ps->sndbuf = v;
		} else if (!ret && level == IPPROTO_TCP && name == TCP_NODELAY) {
			ps->nodelay = v;
		}
	}
	if (!ret)
		opt_log(ps, level, name, val, len);
	/* What a kernel connection accepted from the twin inherits, as a
	 * child inherits its listener's options (TCP_USER_TIMEOUT,
	 * TCP_DEFER_ACCEPT, TCP_NODELAY, ...): set on the twin too, while
	 * the socket is not connected (twin.c). */
	if (!ret && SL_READ_ONCE(ps->twin))
		pl_twin_setopt(ps, level, name, val, len);
	/* Levels an IPv4 socket has (others fail as Linux: ENOPROTOOPT). */
	if (ret == -ENOPROTOOPT && !ps->used &&
	    (level == SOL_SOCKET || level == IPPROTO_IP || (ps->v6 && level == IPPROTO_IPV6) ||
	     level == (ps->type == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP))) {
		/* Something Sluice does not do, before anything happened:
		 * the kernel takes the socket, with this option. */
		ret = pl_fallback(fd, ps);
		pl_put(ps);
		return ret ? (int)pl_ret(ret) : REAL(setsockopt)(fd, level, name, val, len);
	}
	/* Something Sluice does not do, on a connection (TCP_ULP, a socket
	 * filter, ...): the connection goes to the kernel, live, and the
	 * kernel answers.  If it cannot go, the stack's answer stands. */
	if (ret == -ENOPROTOOPT && ps->used && handoff_for_opt(ps) &&
	    (level == SOL_SOCKET || level == IPPROTO_IP || level == IPPROTO_TCP)) {
		int saved = errno, r = pl_handoff(fd, ps);

		if (!r) {
			pl_put(ps);
			errno = saved;
			return REAL(setsockopt)(fd, level, name, val, len);
		}
		pl_debug("fd %d: no hand-off for option %d/%d (%d)", fd, level, name, r);
	}
	if (ret == -ENOPROTOOPT && ps->used && level == IPPROTO_TCP && name == TCP_ULP)
		ret = ulp_unknown(val, len);
	pl_put(ps);
	return (int)pl_ret(ret);
}

static int put_int(int v, void *val, socklen_t *lenp)
{
	if (!val || !lenp)
		return -EFAULT;
	if ((int)*lenp < 0)
		return -EINVAL;
	/* As Linux: at most sizeof(int) bytes, the length says how many. */
	if (*lenp > sizeof(int))
		*lenp = sizeof(int);
	memcpy(val, &v, *lenp);
	return 0;
}

static int put_blob(const void *p, socklen_t size, void *val, socklen_t *lenp)
{
	if (!val || !lenp)
		return -EFAULT;
	if ((int)*lenp < 0)
		return -EINVAL;
	if (*lenp > size)
		*lenp = size;
	memcpy(val, p, *lenp);
	return 0;
}

/*
 * IPPROTO_IPV6 options of an AF_INET6 socket of the stack.  IPV6_V6ONLY
 * and those of v6_kept[] are kept here; no other can have been set
 * (setting one hands a fresh socket to the kernel, and is refused on a
 * used one), so each has the value a new kernel socket of the same type
 * has: asked of one, whose answer (value, length, error) is the
 * program's.
 */
static int get_v6opt(const struct pl_sock *ps, int name, void *val, socklen_t *lenp)
{
	int ks, ret, saved = errno, i;

	if (name == IPV6_V6ONLY)
		return put_int(ps->v6only, val, lenp);
	/* A connection on handles: the stack's path MTU (api.c). */
	if (name == IPV6_MTU && lenp && sl_v6tok(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->raddr))) {
		unsigned int ul = *lenp;

		ret = sluice_getsockopt(pl_stack(), (int)ps->sd, IPPROTO_IPV6, name, val, &ul);
		if (!ret)
			*lenp = ul;
		return ret;
	}
	if (v6_in_slot(name) && v6_slot_get(ps, name, &i))
		return put_int(i, val, lenp);
	i = v6_kept_idx(name);
	if (i >= 0 && (ps->v6set & (1u << i)))
		return put_int(ps->v6opt[i], val, lenp);
	ks = REAL(socket)(AF_INET6, ps->type | SOCK_CLOEXEC, 0);
	if (ks < 0)
		return -errno;
	ret = REAL(getsockopt)(ks, IPPROTO_IPV6, name, val, lenp) ? -errno : 0;
	REAL(close)(ks);
	errno = saved;
	return ret;
}

static int get_opt(int fd, int level, int name, void *val, socklen_t *lenp)
{
	struct pl_sock *ps = pl_get_call(fd);
	struct sl_stack *s;
	unsigned int ulen;
	int ret;

	if (!ps)
		return REAL(getsockopt)(fd, level, name, val, lenp);
	s = pl_sl();
	if (ps->v6 && level == IPPROTO_IPV6) {
		ret = get_v6opt(ps, name, val, lenp);
		pl_put(ps);
		return (int)pl_ret(ret);
	}
	/* A level an IPv4 socket does not have: Linux's IP layer answers
	 * EOPNOTSUPP (do_ip_getsockopt()). */
	if (level != SOL_SOCKET && level != IPPROTO_IP &&
	    level != (ps->type == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP)) {
		pl_put(ps);
		return (int)pl_ret(-EOPNOTSUPP);
	}
	if (level == SOL_SOCKET && name == SO_REUSEPORT)
		ret = put_int(ps->reuseport, val, lenp);
	else if (level == SOL_SOCKET && name == SO_KEEPALIVE)
		ret = put_int(ps->keepalive, val, lenp);
	else if (level == SOL_SOCKET && name == SO_DOMAIN)
		ret = put_int(ps->v6 ? AF_INET6 : AF_INET, val, lenp);
	else if (level == SOL_SOCKET && name == SO_PROTOCOL)
		ret = put_int(ps->type == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP, val, lenp);
	else if (level == SOL_SOCKET && name == SO_TYPE)
		ret = put_int(ps->type, val, lenp);
	else if (level == SOL_SOCKET && name == SO_ACCEPTCONN)
		ret = put_int(sl_sock(s, ps->sd)->type == SL_SOCK_TCP &&
			      sl_sock(s, ps->sd)->state == SL_TCP_LISTEN, val, lenp);
	else if (level == SOL_SOCKET && name == SO_LINGER)
		ret = put_blob(&ps->linger, sizeof(ps->linger), val, lenp);
	else if (level == SOL_SOCKET && name == SO_PEERCRED) {
		/* An inet socket has no peer credentials: Linux's
		 * cred_to_ucred() of none, pid 0, uid and gid -1. */
		struct ucred uc = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };

		ret = put_blob(&uc, sizeof(uc), val, lenp);
	}
	else if (level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO)) {
		struct timeval tv = name == SO_RCVTIMEO ? ps->rcvtimeo : ps->sndtimeo;

		if (tv.tv_usec == PL_TIMEO_NOW)
			tv.tv_usec = 0;		/* Linux shows a zero timeout as 0 */
		ret = put_blob(&tv, sizeof(tv), val, lenp);
	}
	else if (!lenp)
		ret = -EFAULT;
	else {
		ulen = *lenp;
		ret = sluice_getsockopt(pl_stack(), (int)ps->sd, level, name, val, &ulen);
		if (!ret)
			*lenp = ulen;
		/* None in the stack: the error its twin got (twin.c). */
		if (!ret && level == SOL_SOCKET && name == SO_ERROR && ps->type == SOCK_DGRAM &&
		    ulen >= sizeof(int) && !*(int *)val)
			*(int *)val = pl_twin_error(ps);
	}
	pl_put(ps);
	return (int)pl_ret(ret);
}

/*
 * The option's value and length as Linux's __sys_setsockopt() and
 * __sys_getsockopt() take them: a negative length EINVAL, then the
 * program's memory read and written only through checked copies
 * (signal.c, pl_copy_in()), so a bad pointer is EFAULT; the option code
 * above works on copies.  A value longer than the copy (1 KiB; no option
 * of the stack's is) is probed where it lies.
 */
#define PL_OPT_MAX	1024

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	uint64_t kval[PL_OPT_MAX / sizeof(uint64_t)];

	if (!pl_is_sluice(fd))
		return REAL(setsockopt)(fd, level, name, val, len);
	if ((int)len < 0)
		return (int)pl_ret(-EINVAL);
	/* Linux's sk_setsockopt(): every option but SO_BINDTODEVICE takes
	 * at least an int, EINVAL before its value is read. */
	if (level == SOL_SOCKET && name != SO_BINDTODEVICE && len < sizeof(int))
		return (int)pl_ret(-EINVAL);
	if (len && len <= sizeof(kval)) {
		if (pl_copy_in(kval, val, len))
			return (int)pl_ret(-EFAULT);
		val = kval;
	} else if (len && (pl_bad_buf(val, len) || !pl_readable(val, len))) {
		return (int)pl_ret(-EFAULT);
	}
	return set_opt(fd, level, name, val, len);
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *lenp)
{
	uint64_t kval[PL_OPT_MAX / sizeof(uint64_t)];
	socklen_t klen;
	int ret;

	if (!pl_is_sluice(fd))
		return REAL(getsockopt)(fd, level, name, val, lenp);
	if (pl_copy_in(&klen, lenp, sizeof(klen)))
		return (int)pl_ret(-EFAULT);
	if ((int)klen < 0)
		return (int)pl_ret(-EINVAL);
	if (klen > sizeof(kval))
		klen = sizeof(kval);
	/* What is there (a few options read it); a value that cannot be
	 * read cannot be written either: EFAULT below, after the option's
	 * own answer. */
	if (pl_copy_in(kval, val, klen))
		memset(kval, 0, klen);
	ret = get_opt(fd, level, name, kval, &klen);
	if (ret)
		return ret;
	if (pl_copy_out(val, kval, klen) || pl_copy_out(lenp, &klen, sizeof(klen)))
		return (int)pl_ret(-EFAULT);
	return 0;
}
