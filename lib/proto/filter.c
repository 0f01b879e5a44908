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

static bool is_loopback(uint32_t addr)
{
	/* An IPv6 address's handle (proto.h "IPv6 sockets") too: the
	 * module steers no IPv6, so nothing of the kernel's to hold. */
	return (ntohl(addr) >> 24) == 127 || sl_v6tok(addr);
}

/* own: the kernel socket offered as the reservation (a port of its own,
 * bound already), or -1 for one the module binds. */
static int filter_add(struct sl_stack *s, uint8_t proto, uint32_t laddr, uint16_t *lport,
		      uint32_t *id, int own)
{
	struct sluice_filter f;

	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.protocol = proto;
	f.laddr = laddr;
	f.lport = *lport;
	if (own >= 0) {
		f.flags = SLUICE_FILTER_RESV_FD;
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

/* The socket holding a filter that covers (type, laddr, lport), if any. */
static struct sl_sock *filter_holder(struct sl_stack *s, uint8_t type, uint32_t laddr,
				     uint16_t lport)
{
	uint32_t guard = 0;

	for (uint32_t i = sl_sock_port_head(s, lport);
	     sl_sock_next(s, i, &guard);) {
		struct sl_sock *o = sl_sock(s, i);

		i = o->port_next;
		if (o->type == type && o->lport == lport && (o->flags & SL_SF_FILTER) &&
		    (!o->filter_laddr || o->filter_laddr == laddr))
			return o;
	}
	return NULL;
}

/* Does a socket or a TIME-WAIT entry hold a filter covering the port? */
static bool filter_held(struct sl_stack *s, uint8_t type, uint32_t laddr, uint16_t lport)
{
	return filter_holder(s, type, laddr, lport) ||
	       (type == SL_SOCK_TCP && sl_tw_filter_held(s, lport, laddr));
}

static void hold(struct sl_sock *so, uint32_t id, uint32_t laddr)
{
	so->flags |= SL_SF_FILTER;
	so->filter_id = id;
	so->filter_laddr = laddr;
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
static void filter_sibling(struct sl_stack *s, uint8_t proto, uint32_t laddr, uint16_t lport,
			   int own)
{
	struct sluice_filter f;

	if (own < 0 || !(sl_module_features & SLUICE_FEATURE_FILTER_SIBLING))
		return;
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.flags = SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING;
	f.protocol = proto;
	f.laddr = laddr;
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

int sl_filter_take(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t *lport)
{
	uint32_t id, flt_laddr = laddr == INADDR_BROADCAST ? 0 : laddr;
	uint16_t p;
	int ret, own = offered();

	if (!s->filters || !s->module_backed || is_loopback(laddr))
		return 0;
	/* An IPv6-only socket on any address takes no IPv4 packet (the
	 * module steers no IPv6): nothing of the device's is its, and its
	 * twin, offered here, holds its port as Linux's would (an older
	 * module's reservation, AF_INET, is all there is without it). */
	if (own >= 0 && !laddr && (so->flags & SL_SF_V6) && (so->opt_flags & SL_SO_V6ONLY))
		return 0;
	if (*lport) {
		if (filter_held(s, so->type, flt_laddr, *lport)) {
			/* shared: the stack's rules allowed it */
			filter_sibling(s, proto_of(so), flt_laddr, *lport, own);
			return 0;
		}
		ret = filter_add(s, proto_of(so), flt_laddr, lport, &id, own);
		if (!ret) {
			hold(so, id, flt_laddr);
			sl_filter_offer_taken = own >= 0;
		}
		return ret;
	}
	for (int i = 0; i < EPHEMERAL_TRIES; i++) {
		p = 0;
		ret = filter_add(s, proto_of(so), flt_laddr, &p, &id, -1);
		if (ret)
			return ret;
		/* Free in the kernel; in the stack only a loopback socket
		 * (which has no filter) could have it. */
		if (sl_sock_port_free(s, so, laddr, p)) {
			hold(so, id, flt_laddr);
			*lport = p;
			return 0;
		}
		filter_del(s, id);
	}
	return -EADDRINUSE;
}

int sl_filter_twin_fd(struct sl_stack *s, const struct sl_sock *so)
{
	struct sluice_filter_fd f;

	/* (A test's fake module, sl_filter_ioctl, reserves nothing.) */
	if (sl_filter_ioctl)
		return -ENOTTY;
	if (!s->module_backed || !(so->flags & SL_SF_FILTER) ||
	    so->filter_laddr != (so->laddr == INADDR_BROADCAST ? 0 : so->laddr))
		return -ENOENT;
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.id = so->filter_id;
	if (sl_sys_ioctl(s->region_fd, SLUICE_IOC_FILTER_FD, &f))
		return -errno;
	return f.fd;
}

void sl_filter_pass(struct sl_stack *s, uint8_t type, uint16_t lport, uint32_t id,
		    uint32_t flt_laddr)
{
	unsigned int guard = 0;

	/* Another socket still on the port takes the filter over: a
	 * listener closed under its children, say ... */
	for (uint32_t i = sl_sock_port_head(s, lport); sl_sock_next(s, i, &guard);) {
		struct sl_sock *o = sl_sock(s, i);

		i = o->port_next;
		if (o->type == type && o->lport == lport && !(o->flags & SL_SF_FILTER) &&
		    (!flt_laddr || o->laddr == flt_laddr)) {
			hold(o, id, flt_laddr);
			return;
		}
	}
	/* ... or a connection waiting in TIME-WAIT (Linux's keep the port
	 * bound as long) ... */
	if (type == SL_SOCK_TCP && sl_tw_filter_take(s, lport, flt_laddr, id))
		return;
	/* ... or nobody needs it. */
	if (s->module_backed)
		filter_del(s, id);
}

void sl_filter_release(struct sl_stack *s, struct sl_sock *so)
{
	int fd;

	if (!(so->flags & SL_SF_FILTER))
		return;
	/* A listener gone from the stack: its port's reservation, which
	 * processes may have made its kernel twin (FILTER_FD,
	 * lib/preload/twin.c) and whose port may live on (passed below to
	 * its connections, TIME-WAIT), listens no more: kernel clients are
	 * refused, as by a closed listener.  Here, where the stack's socket
	 * ends, not where one process lets its fd go (a forked worker that
	 * closes the listener it inherited must not stop its parent's). */
	if (so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN && s->module_backed &&
	    (fd = sl_filter_twin_fd(s, so)) >= 0) {
		sl_sys_shutdown(fd, SHUT_RD);
		sl_sys_close(fd);
	}
	so->flags &= ~SL_SF_FILTER;
	/* so is unhashed already: it is not on the port's chain. */
	sl_filter_pass(s, so->type, so->lport, so->filter_id, so->filter_laddr);
}
