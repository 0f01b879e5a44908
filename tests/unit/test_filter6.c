// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv6 module filters for a kring stack's ports (lib/proto/filter.c,
 * "IPv6"), with the module's FILTER_ADD and FILTER_DEL played here (a
 * table of both families' filters; port 40000 is one "the kernel's IPv6
 * uses", EADDRINUSE for an IPv6 filter only; ephemeral picks count up).
 * Checked: a socket on one of the stack's IPv6 addresses adds an IPv6
 * filter of that address alone; an AF_INET6 socket on [::] adds both
 * families' (IPv6's alone with IPV6_V6ONLY), an AF_INET one IPv4's as
 * before; an ephemeral port is one both families have free; sockets
 * sharing a port pass both filters on and the last deletes them; a TCP
 * connect() of an AF_INET6 socket takes the peer's family alone; and a
 * module without SLUICE_FEATURE_IPV6 gets IPv4's filters only, as before;
 * a socket sharing a port names its kernel twin to the module
 * (SLUICE_FILTER_SIBLING) in the families it holds, IPv6's only with
 * SLUICE_FEATURE_SIBLING6.
 */
#include <errno.h>

#include "stack_fixture.h"

static struct sl_stack *S;
#define ST ((struct sluice_stack *)S)

#define FMAX 32

static struct {
	struct {
		bool used, v6;
		uint8_t proto;
		uint32_t laddr;
		uint8_t laddr6[16];
		uint16_t lport;
		uint32_t id;
	} f[FMAX];
	uint32_t next_id;
	uint16_t next_pick;	/* host order */
	int adds, dels, bad_dels;
	int sibs[2];		/* SLUICE_FILTER_SIBLING adds: IPv4's, IPv6's */
	int last_sib_fd;
} M = { .next_id = 100, .next_pick = 40000 };

static const uint8_t ANY6[16];
static uint8_t me6[16], peer6[16];

static int live(void)
{
	int n = 0;

	for (int i = 0; i < FMAX; i++)
		n += M.f[i].used;
	return n;
}

/* Live filters of family v6 on port (host order) and address a (v4: laddr,
 * v6: laddr6). */
static int count(bool v6, uint16_t port, uint32_t laddr, const uint8_t *laddr6)
{
	int n = 0;

	for (int i = 0; i < FMAX; i++)
		n += M.f[i].used && M.f[i].v6 == v6 && ntohs(M.f[i].lport) == port &&
		     (v6 ? !memcmp(M.f[i].laddr6, laddr6, 16) : M.f[i].laddr == laddr);
	return n;
}

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	struct sluice_filter *a = arg;
	bool v6 = a->flags & SLUICE_FILTER_IPV6;
	int i, slot = -1;

	(void)fd;
	/* A sibling (the module's own check: RESV_FD with it, a port and no
	 * remote); no filter is made.  IPv6's only with SLUICE_FEATURE_SIBLING6. */
	if (req == SLUICE_IOC_FILTER_ADD && (a->flags & SLUICE_FILTER_SIBLING)) {
		if (!(a->flags & SLUICE_FILTER_RESV_FD) || !a->lport || a->rport ||
		    (v6 && !(sl_module_features & SLUICE_FEATURE_SIBLING6))) {
			errno = EINVAL;
			return -1;
		}
		M.sibs[v6]++;
		M.last_sib_fd = a->fd;
		a->id = 0;
		return 0;
	}
	if (a->flags & SLUICE_FILTER_RESV_FD) {
		/* The offered socket as the reservation: as the module's own. */
		a->flags &= ~SLUICE_FILTER_RESV_FD;
		a->fd = 0;
	}
	if (a->size != sizeof(*a) || (a->flags & ~SLUICE_FILTER_IPV6) ||
	    (v6 && a->laddr) || (!v6 && memcmp(a->laddr6, ANY6, 16))) {
		errno = EINVAL;
		return -1;
	}
	if (req == SLUICE_IOC_FILTER_DEL) {
		for (i = 0; i < FMAX; i++)
			if (M.f[i].used && M.f[i].id == a->id) {
				M.f[i].used = false;
				M.dels++;
				return 0;
			}
		M.bad_dels++;
		errno = ENOENT;
		return -1;
	}
	if (!a->lport)
		a->lport = htons(M.next_pick++);
	else if (v6 && ntohs(a->lport) == 40000) {
		errno = EADDRINUSE;
		return -1;
	}
	for (i = 0; i < FMAX; i++) {
		if (M.f[i].used && M.f[i].v6 == v6 && M.f[i].proto == a->protocol &&
		    M.f[i].lport == a->lport && M.f[i].laddr == a->laddr &&
		    !memcmp(M.f[i].laddr6, a->laddr6, 16)) {
			errno = EEXIST;
			return -1;
		}
		if (!M.f[i].used && slot < 0)
			slot = i;
	}
	M.f[slot].used = true;
	M.f[slot].v6 = v6;
	M.f[slot].proto = a->protocol;
	M.f[slot].laddr = a->laddr;
	memcpy(M.f[slot].laddr6, a->laddr6, 16);
	M.f[slot].lport = a->lport;
	M.f[slot].id = a->id = M.next_id++;
	M.adds++;
	return 0;
}

/* An AF_INET6 socket as the preload makes one (SL_SF_V6; v6only). */
static int sock6(int type, bool v6only)
{
	int sd = sluice_socket(ST, type);
	struct sl_sock *so = sl_sock(S, (uint32_t)sd);

	so->flags |= SL_SF_V6;
	if (v6only)
		so->opt_flags |= SL_SO_V6ONLY;
	return sd;
}

static struct sockaddr_in tok(uint32_t t, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = t;
	return a;
}

static void test_own_address_takes_ipv6s_filter(void)
{
	struct sockaddr_in me = tok(SL_V6TOK_ME, 5000);
	int u = sock6(SLUICE_SOCK_DGRAM, false);
	struct sl_sock *so = sl_sock(S, (uint32_t)u);

	tap_eq(sluice_bind(ST, u, &me), 0, "UDP bind [fd00::1]:5000");
	tap_eq(count(true, 5000, 0, me6), 1, "... one IPv6 filter, laddr6 the address");
	tap_eq(live(), 1, "... and no IPv4 one");
	tap_ok(so->filter6_id && !(so->flags & SL_SF_FILTER) && so->filter_laddr == SL_V6TOK_ME,
	       "... held in filter6_id, for the address's handle");
	sluice_close(ST, u);
	tap_eq(live(), 0, "closed: the filter deleted");
}

static void test_any_takes_both_families(void)
{
	struct sockaddr_in any = tok(0, 5001), any2 = tok(0, 5002), any3 = tok(0, 5003);
	int t = sock6(SLUICE_SOCK_STREAM, false), o = sock6(SLUICE_SOCK_STREAM, true);
	int v4 = sluice_socket(ST, SLUICE_SOCK_STREAM);

	tap_eq(sluice_bind(ST, t, &any), 0, "AF_INET6 TCP bind [::]:5001");
	tap_ok(count(false, 5001, 0, NULL) == 1 && count(true, 5001, 0, ANY6) == 1 && live() == 2,
	       "... both families' filters (Linux's dual-stack socket owns both)");
	tap_eq(sluice_bind(ST, o, &any2), 0, "IPV6_V6ONLY bind [::]:5002");
	tap_ok(count(true, 5002, 0, ANY6) == 1 && count(false, 5002, 0, NULL) == 0,
	       "... IPv6's alone");
	tap_eq(sluice_bind(ST, v4, &any3), 0, "AF_INET bind 0.0.0.0:5003");
	tap_ok(count(false, 5003, 0, NULL) == 1 && count(true, 5003, 0, ANY6) == 0,
	       "... IPv4's alone, as before");
	sluice_close(ST, t);
	sluice_close(ST, o);
	sluice_close(ST, v4);
	tap_eq(live(), 0, "closed: every filter deleted");
	tap_eq(M.bad_dels, 0, "and nothing deleted twice");
}

static void test_ephemeral_free_in_both(void)
{
	struct sockaddr_in any = tok(0, 0);
	int u = sock6(SLUICE_SOCK_DGRAM, false);
	struct sl_sock *so = sl_sock(S, (uint32_t)u);
	int dels = M.dels;

	M.next_pick = 40000;
	tap_eq(sluice_bind(ST, u, &any), 0, "AF_INET6 UDP bind [::]:0");
	tap_eq(ntohs(so->lport), 40001, "... not 40000, which the kernel's IPv6 has");
	tap_ok(count(false, 40001, 0, NULL) == 1 && count(true, 40001, 0, ANY6) == 1 && live() == 2,
	       "... both families' filters on the port it got");
	tap_eq(M.dels - dels, 1, "... 40000's IPv4 filter deleted");
	sluice_close(ST, u);
	tap_eq(live(), 0, "closed: nothing left");
}

static void test_shared_port_passes_both(void)
{
	struct sockaddr_in any = tok(0, 5004);
	int a = sock6(SLUICE_SOCK_DGRAM, false), b = sock6(SLUICE_SOCK_DGRAM, false);
	struct sl_sock *sa = sl_sock(S, (uint32_t)a), *sb = sl_sock(S, (uint32_t)b);
	uint32_t id4, id6;

	sa->flags |= SL_SF_REUSEADDR;
	sb->flags |= SL_SF_REUSEADDR;
	tap_eq(sluice_bind(ST, a, &any), 0, "two SO_REUSEADDR AF_INET6 UDP sockets on [::]:5004");
	tap_eq(sluice_bind(ST, b, &any), 0, "... the second");
	tap_eq(live(), 2, "... one filter a family between them");
	id4 = sa->filter_id;
	id6 = sa->filter6_id;
	sluice_close(ST, a);
	tap_ok((sb->flags & SL_SF_FILTER) && sb->filter_id == id4 && sb->filter6_id == id6 &&
	       live() == 2, "the first closed: the second holds both");
	sluice_close(ST, b);
	tap_eq(live(), 0, "the last closed: both deleted");
}

static void test_connect_takes_the_peers_family(void)
{
	struct sockaddr_in to4 = fx_addr("10.9.0.2", 9), to6;
	int t = sock6(SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK, false);
	int t6 = sock6(SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK, false);
	struct sl_sock *so = sl_sock(S, (uint32_t)t), *so6 = sl_sock(S, (uint32_t)t6);

	M.next_pick = 41000;
	tap_eq(sluice_connect(ST, t, &to4), -EINPROGRESS, "AF_INET6 TCP connect to 10.9.0.2 (v4-mapped)");
	tap_ok(count(false, ntohs(so->lport), 0, NULL) == 1 && live() == 1,
	       "... IPv4's filter alone (tcp_v4_connect())");
	sl_lock(S);
	to6 = tok(sl_v6tok_get(S, peer6), 9);
	sl_unlock(S);
	tap_eq(sluice_connect(ST, t6, &to6), -EINPROGRESS, "AF_INET6 TCP connect to [fd00::2]");
	tap_ok(count(true, ntohs(so6->lport), 0, me6) == 1 && live() == 2,
	       "... IPv6's filter alone, of the source address it chose");
	sluice_close(ST, t);
	sluice_close(ST, t6);
	fx_clock_us += 300 * 1000000ull;
	sluice_stack_poll(ST);
	tap_eq(live(), 0, "closed: nothing left");
}

static void test_module_without_ipv6(void)
{
	struct sockaddr_in any = tok(0, 5005), me = tok(SL_V6TOK_ME, 5006);
	int t = sock6(SLUICE_SOCK_STREAM, false), u = sock6(SLUICE_SOCK_DGRAM, false);

	sl_module_features &= ~SLUICE_FEATURE_IPV6;
	tap_eq(sluice_bind(ST, t, &any), 0, "a module without IPv6: AF_INET6 bind [::]:5005");
	tap_ok(count(false, 5005, 0, NULL) == 1 && live() == 1, "... IPv4's filter alone, as before");
	tap_eq(sluice_bind(ST, u, &me), 0, "... bind [fd00::1]:5006");
	tap_eq(live(), 1, "... no filter");
	sluice_close(ST, t);
	sluice_close(ST, u);
	sl_module_features |= SLUICE_FEATURE_IPV6;
	tap_eq(live(), 0, "closed: nothing left");
}

/* A socket sharing [::]:port with one that holds both filters, offering
 * its kernel twin fd: named to the module as the stack's, per family. */
static int bind_sibling(int sd, uint16_t port, int fd)
{
	struct sockaddr_in any = tok(0, port);
	int ret;

	sl_filter_offer_taken = false;
	sl_filter_offer_fd = fd;
	ret = sluice_bind(ST, sd, &any);
	sl_filter_offer_fd = -1;
	sl_filter_offer_taken = false;
	return ret;
}

static void test_sibling_named_in_both_families(void)
{
	int a = sock6(SLUICE_SOCK_STREAM, false), b = sock6(SLUICE_SOCK_STREAM, false);
	int c = sock6(SLUICE_SOCK_STREAM, true), d = sock6(SLUICE_SOCK_STREAM, false);
	uint64_t feat = sl_module_features;

	for (int i = 0; i < 4; i++)
		sl_sock(S, (uint32_t)(i == 0 ? a : i == 1 ? b : i == 2 ? c : d))->flags |=
			SL_SF_REUSEPORT;
	sl_module_features |= SLUICE_FEATURE_FILTER_SOCK | SLUICE_FEATURE_FILTER_SIBLING |
			      SLUICE_FEATURE_SIBLING6;
	tap_eq(bind_sibling(a, 5010, 50), 0, "SO_REUSEPORT AF_INET6 [::]:5010 offering fd 50");
	tap_eq(live(), 2, "... both families' filters");
	tap_eq(bind_sibling(b, 5010, 51), 0, "a dual-stack SO_REUSEPORT sibling offering fd 51");
	tap_ok(M.sibs[0] == 1 && M.sibs[1] == 1 && M.last_sib_fd == 51 && live() == 2,
	       "... named to the module in both families (SIBLING, SIBLING | IPV6), no filter");
	tap_eq(bind_sibling(c, 5010, 52), 0, "an IPV6_V6ONLY sibling offering fd 52");
	tap_ok(M.sibs[0] == 1 && M.sibs[1] == 2 && M.last_sib_fd == 52,
	       "... named in IPv6's alone");
	/* A module that judges IPv4's shared ports alone. */
	sl_module_features &= ~SLUICE_FEATURE_SIBLING6;
	tap_eq(bind_sibling(d, 5010, 53), 0, "a module without SLUICE_FEATURE_SIBLING6: a sibling, fd 53");
	tap_ok(M.sibs[0] == 2 && M.sibs[1] == 2, "... named in IPv4's alone, as before");
	sluice_close(ST, a);
	sluice_close(ST, b);
	sluice_close(ST, c);
	sluice_close(ST, d);
	sl_module_features = feat;
	tap_eq(live(), 0, "closed: nothing left");
}

static int cap_tx6(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh)
{
	(void)nh;
	return cap_tx(l, s, idx, 0);
}

static const struct sl_link_ops cap6_ops = { .name = "capture6", .tx = cap_tx, .tx6 = cap_tx6 };

int main(void)
{
	struct capture *cap = calloc(1, sizeof(*cap));

	S = fx_stack("filter6", "10.9.0.1", cap);
	cap->link.ops = &cap6_ops;
	inet_pton(AF_INET6, "fd00::1", me6);
	inet_pton(AF_INET6, "fd00::2", peer6);
	memcpy(S->lib->ip6_addr, me6, 16);
	S->lib->ip6_plen = 64;
	sl_filter_ioctl = fake_ioctl;
	sl_module_features |= SLUICE_FEATURE_IPV6;
	/* As sluice_link_kring() leaves a stack on a device. */
	S->filters = true;
	S->module_backed = true;
	test_own_address_takes_ipv6s_filter();
	test_any_takes_both_families();
	test_ephemeral_free_in_both();
	test_shared_port_passes_both();
	test_connect_takes_the_peers_family();
	test_module_without_ipv6();
	test_sibling_named_in_both_families();
	S->module_backed = false;
	fx_destroy(S);
	free(cap);
	return tap_done();
}
