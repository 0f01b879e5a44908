// SPDX-License-Identifier: BSD-2-Clause
/*
 * Module filters for a kring stack's ports.  A socket that takes a local
 * port on the device (bind, listen, connect, the implicit bind of a UDP
 * send) adds a 3-tuple filter with SLUICE_IOC_FILTER_ADD: the module then
 * steers that port's packets to the stack and reserves the port in the
 * kernel, so kernel sockets and Sluice sockets never share one.  Ephemeral
 * ports are the kernel's pick (lport 0), for the same reason.
 *
 * One filter per (protocol, local address, port).  The socket that added
 * it holds it (SL_SF_FILTER, filter_id, filter_laddr in its shared slot);
 * others on the same port (a listener's children, SO_REUSEADDR siblings)
 * share it.  When the holder lets the port go, the filter passes to
 * another socket still on the port, else it is deleted, by whichever
 * process that is: filter ids belong to the stack, not to a process.
 * Loopback addresses need no filter.  Runs under the stack lock.
 *
 * IPv6 (a link that carries it, steers6()): a socket on one of the
 * stack's IPv6 addresses (a handle, proto.h "IPv6 sockets") adds an IPv6
 * filter (SLUICE_FILTER_IPV6, the handle's address as laddr6), held in
 * filter6_id; an AF_INET6 socket on [::] adds both families' (IPv6's
 * alone with IPV6_V6ONLY), as Linux's dual-stack socket owns the port in
 * both.  A holder may hold the two only for one local address
 * (filter_laddr is theirs).  A TCP connect() of an AF_INET6 socket to a
 * v4-mapped peer takes IPv4's alone (Linux binds it as tcp_v4_connect()).
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "os/os.h"
#include "proto/proto.h"

/* Ephemeral picks the kernel may hand us that the stack already uses for
 * a loopback socket before we give up. */
#define EPHEMERAL_TRIES	16

int (*sl_filter_ioctl)(int fd, unsigned long req, void *arg);
__thread int sl_filter_offer_fd __attribute__((tls_model("initial-exec"))) = -1;
__thread bool sl_filter_offer_taken __attribute__((tls_model("initial-exec")));

/* The module's FILTER_ADD / _DEL: 0 or -1 with errno, as ioctl(2). */
static int filter_ioctl(struct sl_stack *s, unsigned long req, struct sluice_filter *f)
{
	return sl_filter_ioctl ? sl_filter_ioctl(s->region_fd, req, f) :
				 sl_sys_ioctl(s->region_fd, req, f);
}

static uint8_t proto_of(const struct sl_sock *so)
{
	return so->type == SL_SOCK_TCP ? IPPROTO_TCP : IPPROTO_UDP;
}

/* Does the module steer IPv6 to this stack?  Only for a link that
 * carries it (the kring link's tx6 is there with SLUICE_FEATURE_IPV6). */
static bool steers6(const struct sl_stack *s)
{
	return s->link && s->link->ops->tx6 && (sl_module_features & SLUICE_FEATURE_IPV6);
}

static bool is_loopback(uint32_t addr)
{
	return (ntohl(addr) >> 24) == 127 || addr == SL_V6TOK_LO;
}

/* own: the kernel socket offered as the reservation (a port of its own,
 * bound already), or -1 for one the module binds.  v6: an IPv6 filter,
 * laddr a handle of the stack's own (or 0: ::). */
static int filter_add(struct sl_stack *s, uint8_t proto, bool v6, uint32_t laddr,
		      uint16_t *lport, uint32_t *id, int own)
{
	struct sluice_filter f;

	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.protocol = proto;
	f.lport = *lport;
	if (v6) {
		f.flags = SLUICE_FILTER_IPV6;
		if (laddr && !sl_v6tok_addr(s, laddr, f.laddr6))
			return -EADDRNOTAVAIL;
	} else {
		f.laddr = laddr;
	}
	if (own >= 0) {
		f.flags |= SLUICE_FILTER_RESV_FD;
		f.fd = own;
	}
	if (filter_ioctl(s, SLUICE_IOC_FILTER_ADD, &f)) {
		int err = errno;

		sl_count(s, SL_C_filter_err);
		/* The stack has this filter already: the port is taken. */
		return err == EEXIST ? -EADDRINUSE : -err;
	}
	/* Only what we asked for, or a real pick when we asked for one. */
	if (!f.lport || (*lport && f.lport != *lport)) {
		struct sluice_filter d = { .size = sizeof(d), .id = f.id };

		filter_ioctl(s, SLUICE_IOC_FILTER_DEL, &d);
		sl_count(s, SL_C_filter_err);
		return -EPROTO;
	}
	sl_count(s, SL_C_filter_add);
	*lport = f.lport;
	*id = f.id;
	if (s->link && s->link->ops->filter_add)
		s->link->ops->filter_add(s->link, s, &f);
	return 0;
}

static void filter_del(struct sl_stack *s, uint32_t id)
{
	struct sluice_filter f;

	if (s->link && s->link->ops->filter_del)
		s->link->ops->filter_del(s->link, s, id);
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.id = id;
	/* -ENOENT: gone with the device already; nothing more to do. */
	if (filter_ioctl(s, SLUICE_IOC_FILTER_DEL, &f))
		sl_count(s, SL_C_filter_err);
	else
		sl_count(s, SL_C_filter_del);
}

/* Does o hold the filter of family v6? */
static bool holds(const struct sl_sock *o, bool v6)
{
	return v6 ? o->filter6_id != 0 : (o->flags & SL_SF_FILTER) != 0;
}

/* May o hold the family v6's filter of flt_laddr beside what it holds? */
static bool may_hold(const struct sl_sock *o, bool v6, uint32_t flt_laddr)
{
	return !holds(o, v6) && (!holds(o, !v6) || o->filter_laddr == flt_laddr);
}

/* The socket holding a filter that covers (type, family, laddr, lport),
 * if any. */
static struct sl_sock *filter_holder(struct sl_stack *s, uint8_t type, bool v6, uint32_t laddr,
				     uint16_t lport)
{
	uint32_t guard = 0;

	for (uint32_t i = sl_sock_port_head(s, lport);
	     sl_sock_next(s, i, &guard);) {
		struct sl_sock *o = sl_sock(s, i);

		i = o->port_next;
		if (o->type == type && o->lport == lport && holds(o, v6) &&
		    (!o->filter_laddr || o->filter_laddr == laddr))
			return o;
	}
	return NULL;
}

/* Does a socket or a TIME-WAIT entry hold a filter covering the port? */
static bool filter_held(struct sl_stack *s, uint8_t type, bool v6, uint32_t laddr,
			uint16_t lport)
{
	return filter_holder(s, type, v6, laddr, lport) ||
	       (type == SL_SOCK_TCP && sl_tw_filter_held(s, lport, laddr, v6));
}

static void hold(struct sl_sock *so, bool v6, uint32_t id, uint32_t laddr)
{
	if (v6) {
		so->filter6_id = id;
	} else {
		so->flags |= SL_SF_FILTER;
		so->filter_id = id;
	}
	so->filter_laddr = laddr;
}

/* so lets the filter of family v6 go (the other's, if it holds it,
 * stays). */
static void unhold(struct sl_sock *so, bool v6)
{
	if (v6)
		so->filter6_id = 0;
	else
		so->flags &= ~SL_SF_FILTER;
}

/*
 * A socket sharing a port another holds the filter of: its kernel twin
 * (own) is the stack's too, so where the port is shared with kernel
 * sockets the module's look at the kernel's choice (an SO_REUSEPORT
 * group's hash, UDP's scoring) counts a packet for it as the stack's
 * (FILTER_ADD with SLUICE_FILTER_SIBLING).  Nothing depends on it but
 * which path a connection takes: one the module passes to the kernel
 * reaches the twin, whose connections the program accepts as kernel
 * sockets; so a failure is counted and otherwise ignored.
 */
static void filter_sibling(struct sl_stack *s, uint8_t proto, bool v6, uint32_t laddr,
			   uint16_t lport, int own)
{
	struct sluice_filter f;

	/* A module before SLUICE_FEATURE_SIBLING6 judges IPv4's shared
	 * ports alone (SIBLING with IPV6 is -EINVAL there). */
	if (own < 0 || !(sl_module_features & SLUICE_FEATURE_FILTER_SIBLING) ||
	    (v6 && !(sl_module_features & SLUICE_FEATURE_SIBLING6)))
		return;
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.flags = SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING;
	f.protocol = proto;
	if (v6) {
		f.flags |= SLUICE_FILTER_IPV6;
		if (laddr && !sl_v6tok_addr(s, laddr, f.laddr6))
			return;
	} else {
		f.laddr = laddr;
	}
	f.lport = lport;
	f.fd = own;
	if (filter_ioctl(s, SLUICE_IOC_FILTER_ADD, &f))
		sl_count(s, SL_C_filter_err);
}

/* The offer of this thread's caller, if the module takes one. */
static int offered(void)
{
	return sl_module_features & SLUICE_FEATURE_FILTER_SOCK ? sl_filter_offer_fd : -1;
}

/* so takes the family v6's filter of (flt_laddr, lport), or shares the
 * one another holds: 0 or -errno; *added if a filter was added. */
static int take_fixed(struct sl_stack *s, struct sl_sock *so, bool v6, uint32_t flt_laddr,
		      uint16_t lport, int own, bool *added)
{
	uint32_t id;
	int ret;

	*added = false;
	if (filter_held(s, so->type, v6, flt_laddr, lport)) {
		/* shared: the stack's rules allowed it */
		filter_sibling(s, proto_of(so), v6, flt_laddr, lport, own);
		return 0;
	}
	ret = filter_add(s, proto_of(so), v6, flt_laddr, &lport, &id, own);
	if (!ret) {
		hold(so, v6, id, flt_laddr);
		*added = true;
	}
	return ret;
}

/* Undo take_fixed()'s add. */
static void drop_added(struct sl_stack *s, struct sl_sock *so, bool v6)
{
	unhold(so, v6);
	filter_del(s, v6 ? so->filter6_id : so->filter_id);
}

int sl_filter_take(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t *lport,
		   bool conn4)
{
	uint32_t id, flt_laddr = laddr == INADDR_BROADCAST ? 0 : laddr;
	bool six, want4 = true, want6 = false, added4 = false, added6 = false, first6;
	uint16_t p;
	int ret, own = offered();

	if (!s->filters || !s->module_backed || is_loopback(laddr))
		return 0;
	six = steers6(s);
	if (sl_v6tok(laddr)) {
		/* One of the stack's IPv6 addresses: IPv6's filter alone
		 * (none where the module steers no IPv6). */
		if (!six)
			return 0;
		want4 = false;
		want6 = true;
	} else if (!laddr && (so->flags & SL_SF_V6)) {
		/* [::]: both families, IPv6's alone with IPV6_V6ONLY.  Where
		 * the module steers no IPv6, an IPv6-only socket takes no
		 * IPv4 packet: nothing of the device's is its, and its twin,
		 * offered here, holds its port as Linux's would (an older
		 * module's reservation, AF_INET, is all there is without
		 * it). */
		want6 = six && !conn4;
		if (so->opt_flags & SL_SO_V6ONLY)
			want4 = six ? false : own < 0;
		if (!want4 && !want6)
			return 0;
	}
	if (*lport) {
		if (want4) {
			ret = take_fixed(s, so, false, flt_laddr, *lport, own, &added4);
			if (ret)
				return ret;
		}
		if (want6) {
			ret = take_fixed(s, so, true, flt_laddr, *lport, own, &added6);
			if (ret) {
				if (added4)
					drop_added(s, so, false);
				return ret;
			}
		}
		sl_filter_offer_taken = own >= 0 && (added4 || added6);
		return 0;
	}
	/* The kernel picks the port for the first family; the second must
	 * have it free too, else another pick. */
	first6 = !want4;
	for (int i = 0; i < EPHEMERAL_TRIES; i++) {
		p = 0;
		ret = filter_add(s, proto_of(so), first6, flt_laddr, &p, &id, -1);
		if (ret)
			return ret;
		/* Free in the kernel; in the stack only a loopback socket
		 * (which has no filter) could have it. */
		if (!sl_sock_port_free(s, so, laddr, p)) {
			filter_del(s, id);
			continue;
		}
		hold(so, first6, id, flt_laddr);
		if (want4 && want6) {
			ret = take_fixed(s, so, true, flt_laddr, p, -1, &added6);
			if (ret) {
				drop_added(s, so, false);
				if (ret == -EADDRINUSE)
					continue;
				return ret;
			}
		}
		*lport = p;
		return 0;
	}
	return -EADDRINUSE;
}

/* The reservation of filter id as a new fd: FILTER_FD. */
static int reservation_fd(struct sl_stack *s, uint32_t id)
{
	struct sluice_filter_fd f;

	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.id = id;
	if (sl_sys_ioctl(s->region_fd, SLUICE_IOC_FILTER_FD, &f))
		return -errno;
	return f.fd;
}

/* Does so hold a filter for its own address (the family v6's)? */
static bool holds_own(const struct sl_stack *s, const struct sl_sock *so, bool v6)
{
	return s->module_backed && holds(so, v6) &&
	       so->filter_laddr == (so->laddr == INADDR_BROADCAST ? 0 : so->laddr);
}

int sl_filter_twin_fd(struct sl_stack *s, const struct sl_sock *so)
{
	/* (A test's fake module, sl_filter_ioctl, reserves nothing.) */
	if (sl_filter_ioctl)
		return -ENOTTY;
	/* IPv4's where it holds both: an AF_INET6 socket's twin is never
	 * adopted (lib/preload/twin.c). */
	if (holds_own(s, so, false))
		return reservation_fd(s, so->filter_id);
	if (holds_own(s, so, true))
		return reservation_fd(s, so->filter6_id);
	return -ENOENT;
}

void sl_filter_pass(struct sl_stack *s, uint8_t type, uint16_t lport, uint32_t id,
		    uint32_t flt_laddr, bool v6)
{
	unsigned int guard = 0;

	/* Another socket still on the port takes the filter over: a
	 * listener closed under its children, say ... */
	for (uint32_t i = sl_sock_port_head(s, lport); sl_sock_next(s, i, &guard);) {
		struct sl_sock *o = sl_sock(s, i);

		i = o->port_next;
		if (o->type == type && o->lport == lport && may_hold(o, v6, flt_laddr) &&
		    (!flt_laddr || o->laddr == flt_laddr)) {
			hold(o, v6, id, flt_laddr);
			return;
		}
	}
	/* ... or a connection waiting in TIME-WAIT (Linux's keep the port
	 * bound as long) ... */
	if (type == SL_SOCK_TCP && sl_tw_filter_take(s, lport, flt_laddr, id, v6))
		return;
	/* ... or nobody needs it. */
	if (s->module_backed)
		filter_del(s, id);
}

/* A listener's reservation of filter v6 stops listening. */
static void resv_unlisten(struct sl_stack *s, const struct sl_sock *so, bool v6)
{
	int fd;

	if (sl_filter_ioctl || !holds_own(s, so, v6))
		return;
	fd = reservation_fd(s, v6 ? so->filter6_id : so->filter_id);
	if (fd >= 0) {
		sl_sys_shutdown(fd, SHUT_RD);
		sl_sys_close(fd);
	}
}

void sl_filter_release(struct sl_stack *s, struct sl_sock *so)
{
	bool v4 = so->flags & SL_SF_FILTER;
	uint32_t id6 = so->filter6_id;

	if (!v4 && !id6)
		return;
	/* A listener gone from the stack: its port's reservation, which
	 * processes may have made its kernel twin (FILTER_FD,
	 * lib/preload/twin.c) and whose port may live on (passed below to
	 * its connections, TIME-WAIT), listens no more: kernel clients are
	 * refused, as by a closed listener.  Here, where the stack's socket
	 * ends, not where one process lets its fd go (a forked worker that
	 * closes the listener it inherited must not stop its parent's). */
	if (so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN && s->module_backed) {
		if (v4)
			resv_unlisten(s, so, false);
		if (id6)
			resv_unlisten(s, so, true);
	}
	unhold(so, false);
	unhold(so, true);
	/* so is unhashed already: it is not on the port's chain. */
	if (v4)
		sl_filter_pass(s, so->type, so->lport, so->filter_id, so->filter_laddr, false);
	if (id6)
		sl_filter_pass(s, so->type, so->lport, id6, so->filter_laddr, true);
}
