// SPDX-License-Identifier: BSD-2-Clause
/*
 * Module filters for a kring stack's ports (lib/proto/filter.c), with the
 * module's FILTER_ADD and FILTER_DEL played here: it keeps a table of
 * filters, refuses a port "the kernel uses" (EADDRINUSE) and a privileged
 * one (EACCES), and picks ephemeral ports itself.  Checked: every port a
 * socket takes on the device gets exactly one filter, loopback gets none,
 * the kernel's refusals reach the caller, an ephemeral port is the
 * kernel's pick (and one the stack holds on loopback is handed back),
 * sockets sharing a port share a filter which passes from one to the next
 * and goes with the last, and a connect after a refused one reserves the
 * port again; a kernel socket offered as the reservation
 * (sl_filter_offer_fd) goes with the filter that a bind adds, only where
 * the module takes one, not where no filter is added.
 */
#include <errno.h>

#include "filter_fake.h"
#include "stack_fixture.h"

static struct sl_stack *S;
#define ST ((struct sluice_stack *)S)

static void test_bind_takes_a_filter(void)
{
	struct sockaddr_in any = fx_addr("0.0.0.0", 5000), us = fx_addr("10.9.0.1", 5000);
	struct sockaddr_in lo = fx_addr("127.0.0.1", 6000);
	int u = sluice_socket(ST, SLUICE_SOCK_DGRAM), t = sluice_socket(ST, SLUICE_SOCK_STREAM);
	int l = sluice_socket(ST, SLUICE_SOCK_DGRAM);
	struct sl_sock *so = sl_sock(S, (uint32_t)u);

	tap_eq(sluice_bind(ST, u, &any), 0, "UDP bind 0.0.0.0:5000");
	tap_ok(has_filter(IPPROTO_UDP, 5000) && M.adds == 1, "... adds one UDP filter for port 5000");
	tap_ok((so->flags & SL_SF_FILTER) && so->filter_id == 100 && so->filter_laddr == 0,
	       "... held by the socket: id and address in its slot");
	tap_eq(sluice_bind(ST, t, &us), 0, "TCP bind 10.9.0.1:5000");
	tap_ok(has_filter(IPPROTO_TCP, 5000) && M.adds == 2, "... a TCP filter of its own");
	tap_eq(sluice_bind(ST, l, &lo), 0, "UDP bind 127.0.0.1:6000");
	tap_eq(M.adds, 2, "... loopback needs no filter");
	sluice_close(ST, u);
	sluice_close(ST, t);
	sluice_close(ST, l);
	tap_eq(live(), 0, "closing them removes both filters");
	tap_eq(M.bad_dels, 0, "and deletes nothing twice");
}

static void test_kernel_refusals(void)
{
	struct sockaddr_in k = fx_addr("0.0.0.0", 8080), p = fx_addr("0.0.0.0", 80);
	int t = sluice_socket(ST, SLUICE_SOCK_STREAM);

	tap_eq(sluice_bind(ST, t, &k), -EADDRINUSE, "a port the kernel uses: -EADDRINUSE");
	tap_ok(!(sl_sock(S, (uint32_t)t)->flags & SL_SF_BOUND), "... and the socket stays unbound");
	tap_eq(sluice_bind(ST, t, &p), -EACCES, "a privileged port without the right: -EACCES");
	tap_eq(live(), 0, "no filter left behind");
	sluice_close(ST, t);
}

static void test_ephemeral_is_the_kernels_pick(void)
{
	struct sockaddr_in to = fx_addr("10.9.0.2", 53), lo = fx_addr("127.0.0.1", 40001);
	struct sockaddr_in name;
	int u = sluice_socket(ST, SLUICE_SOCK_DGRAM), l = sluice_socket(ST, SLUICE_SOCK_DGRAM);
	int adds = M.adds, dels = M.dels;

	M.next_pick = 40000;
	tap_eq(sluice_sendto(ST, u, "q", 1, 0, &to), 1, "a send from an unbound UDP socket");
	sluice_getsockname(ST, u, &name);
	tap_eq(ntohs(name.sin_port), 40000, "... binds the port the kernel picked");
	tap_ok(has_filter(IPPROTO_UDP, 40000), "... under a filter");
	sluice_close(ST, u);
	/* The kernel's next pick is a port the stack holds on loopback. */
	tap_eq(sluice_bind(ST, l, &lo), 0, "a loopback socket on 40001 (no filter)");
	u = sluice_socket(ST, SLUICE_SOCK_DGRAM);
	tap_eq(sluice_sendto(ST, u, "q", 1, 0, &to), 1, "another unbound send");
	sluice_getsockname(ST, u, &name);
	tap_eq(ntohs(name.sin_port), 40002, "... skips the pick the stack holds (40001)");
	tap_ok(!has_filter(IPPROTO_UDP, 40001) && has_filter(IPPROTO_UDP, 40002),
	       "... whose filter went back to the kernel");
	tap_eq(M.adds - adds, 3, "three adds");
	sluice_close(ST, u);
	sluice_close(ST, l);
	tap_eq(M.dels - dels, 3, "three deletes");
	tap_eq(live(), 0, "nothing left");
}

static void test_shared_port_passes_on(void)
{
	struct sockaddr_in a = fx_addr("0.0.0.0", 7000);
	int one = 1, u1 = sluice_socket(ST, SLUICE_SOCK_DGRAM), u2 = sluice_socket(ST, SLUICE_SOCK_DGRAM);
	int adds = M.adds, dels = M.dels;

	sluice_setsockopt(ST, u1, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sluice_setsockopt(ST, u2, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tap_eq(sluice_bind(ST, u1, &a), 0, "SO_REUSEADDR: first socket on 7000");
	tap_eq(sluice_bind(ST, u2, &a), 0, "SO_REUSEADDR: second socket on 7000");
	tap_eq(M.adds - adds, 1, "... one filter for both");
	sluice_close(ST, u1);
	tap_eq(M.dels - dels, 0, "the holder closed: the filter stays");
	tap_ok(sl_sock(S, (uint32_t)u2)->flags & SL_SF_FILTER, "... the other socket holds it now");
	sluice_close(ST, u2);
	tap_eq(M.dels - dels, 1, "the last one closed: the filter goes");
	tap_eq(live(), 0, "nothing left");
}

/* One bind with fd offered: 0 or -errno; *taken as sl_filter_offer_taken. */
static int bind_offering(int sd, const struct sockaddr_in *a, int fd, bool *taken)
{
	int ret;

	sl_filter_offer_taken = false;
	sl_filter_offer_fd = fd;
	ret = sluice_bind(ST, sd, a);
	sl_filter_offer_fd = -1;
	*taken = sl_filter_offer_taken;
	sl_filter_offer_taken = false;
	return ret;
}

static void test_offer_is_the_reservation(void)
{
	struct sockaddr_in any = fx_addr("0.0.0.0", 7100), lo = fx_addr("127.0.0.1", 7101);
	struct sockaddr_in any2 = fx_addr("0.0.0.0", 7102), any3 = fx_addr("0.0.0.0", 7103);
	struct sockaddr_in any4 = fx_addr("0.0.0.0", 7104);
	int one = 1, t1 = sluice_socket(ST, SLUICE_SOCK_STREAM);
	int t2 = sluice_socket(ST, SLUICE_SOCK_STREAM), l = sluice_socket(ST, SLUICE_SOCK_STREAM);
	int t3 = sluice_socket(ST, SLUICE_SOCK_STREAM);
	int v6 = sluice_socket(ST, SLUICE_SOCK_STREAM), v6b = sluice_socket(ST, SLUICE_SOCK_STREAM);
	int old = sluice_socket(ST, SLUICE_SOCK_DGRAM);
	int adds = M.adds, own = M.own_adds;
	bool taken;

	/* A module without SLUICE_FEATURE_FILTER_SOCK: not offered. */
	sl_module_features = 0;
	tap_eq(bind_offering(old, &any3, 40, &taken), 0, "an older module: bind 0.0.0.0:7103");
	tap_ok(!taken && M.own_adds == own && M.adds == adds + 1,
	       "... a filter of the module's own reservation, the fd not offered");
	sl_module_features = SLUICE_FEATURE_FILTER_SOCK;
	sluice_setsockopt(ST, t1, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	sluice_setsockopt(ST, t2, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	tap_eq(bind_offering(t1, &any, 42, &taken), 0, "bind 0.0.0.0:7100 offering fd 42");
	tap_ok(taken && M.own_adds == own + 1 && M.last_fd == 42,
	       "... FILTER_ADD with SLUICE_FILTER_RESV_FD and fd 42: taken");
	tap_eq(bind_offering(t2, &any, 43, &taken), 0, "an SO_REUSEPORT sibling on 7100 offering fd 43");
	tap_ok(!taken && M.own_adds == own + 1 && M.adds == adds + 2 && M.sib_adds == 0,
	       "... shares the filter: no ADD, fd 43 not taken (a twin of its own)");
	/* A module that takes siblings: the third one's twin is named. */
	sl_module_features = SLUICE_FEATURE_FILTER_SOCK | SLUICE_FEATURE_FILTER_SIBLING;
	sluice_setsockopt(ST, t3, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	tap_eq(bind_offering(t3, &any, 47, &taken), 0, "a third sibling on 7100 offering fd 47");
	tap_ok(!taken && M.adds == adds + 2 && M.sib_adds == 1 && M.last_sib_fd == 47,
	       "... no filter, fd 47 named to the module as the stack's (SLUICE_FILTER_SIBLING), not taken");
	sl_module_features = SLUICE_FEATURE_FILTER_SOCK;
	tap_eq(bind_offering(l, &lo, 44, &taken), 0, "loopback 127.0.0.1:7101 offering fd 44");
	tap_ok(!taken && M.adds == adds + 2, "... no filter, not taken");
	/* An AF_INET6 IPV6_V6ONLY socket on :: (as the preload marks it). */
	sl_sock(S, (uint32_t)v6)->flags |= SL_SF_V6;
	sl_sock(S, (uint32_t)v6)->opt_flags |= SL_SO_V6ONLY;
	tap_eq(bind_offering(v6, &any2, 45, &taken), 0, "an IPV6_V6ONLY socket on [::]:7102 offering fd 45");
	tap_ok(!taken && M.adds == adds + 2 && !has_filter(IPPROTO_TCP, 7102),
	       "... no IPv4 filter (it takes no IPv4), not taken: its twin holds the port");
	sl_sock(S, (uint32_t)v6b)->flags |= SL_SF_V6;
	tap_eq(bind_offering(v6b, &any4, 46, &taken), 0, "a dual-stack socket on [::]:7104 offering fd 46");
	tap_ok(taken && M.last_fd == 46 && has_filter(IPPROTO_TCP, 7104), "... its filter, the fd taken");
	sluice_close(ST, t1);
	sluice_close(ST, t2);
	sluice_close(ST, t3);
	sluice_close(ST, l);
	sluice_close(ST, v6);
	sluice_close(ST, v6b);
	sluice_close(ST, old);
	sl_module_features = 0;
	tap_eq(live(), 0, "closed: nothing left");
}

/* An RST|ACK from the peer answering our SYN (connection refused). */
static void refuse(const struct capture *cap)
{
	const uint8_t *syn = cap->frame[cap->n - 1];
	const struct sl_tcph *sth = (const struct sl_tcph *)(syn + 20);
	uint8_t seg[sizeof(struct sl_tcph)], pkt[64];
	struct sl_tcph *th = (struct sl_tcph *)seg;
	struct sl_ip *ip = (struct sl_ip *)pkt;
	size_t len;

	memset(seg, 0, sizeof(seg));
	th->sport = sth->dport;
	th->dport = sth->sport;
	th->ack = htonl(ntohl(sth->seq) + 1);
	th->off = 5 << 4;
	th->flags = TH_RST_ | TH_ACK_;
	len = fx_ip(pkt, "10.9.0.2", "10.9.0.1", IPPROTO_TCP_, seg, sizeof(seg));
	th = (struct sl_tcph *)(pkt + 20);
	th->csum = sl_csum_fold(sl_csum_add(sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_TCP_,
							   sizeof(*th)), th, sizeof(*th)));
	fx_input(S, pkt, len);
}

static void test_connect_again_after_refused(struct capture *cap)
{
	struct sockaddr_in to = fx_addr("10.9.0.2", 9);
	int t = sluice_socket(ST, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	struct sl_sock *so = sl_sock(S, (uint32_t)t);
	int adds = M.adds;
	uint16_t port;

	M.next_pick = 41000;
	tap_eq(sluice_connect(ST, t, &to), -EINPROGRESS, "connect sends its SYN");
	port = ntohs(so->lport);
	tap_ok(port == 41000 && has_filter(IPPROTO_TCP, 41000), "... from the kernel's pick, filtered");
	refuse(cap);
	tap_eq(so->error, ECONNREFUSED, "RST: connection refused");
	tap_ok(!has_filter(IPPROTO_TCP, port) && !(so->flags & SL_SF_FILTER),
	       "... the port is released, and its filter with it");
	so->error = 0;
	/* As Linux: the next connect() reports the failed non-blocking
	 * attempt; the one after it connects again. */
	tap_eq(sluice_connect(ST, t, &to), -ECONNABORTED, "connect: the attempt was aborted");
	tap_eq(sluice_connect(ST, t, &to), -EINPROGRESS, "connect again");
	tap_ok(has_filter(IPPROTO_TCP, port) && M.adds - adds == 2,
	       "... reserves the same port again");
	sluice_close(ST, t);
	tap_eq(live(), 0, "closed: nothing left");
}

int main(void)
{
	struct capture *cap = calloc(1, sizeof(*cap));

	S = fx_stack("filter", "10.9.0.1", cap);
	sl_filter_ioctl = fake_ioctl;
	/* As sluice_link_kring() leaves a stack on a device. */
	S->filters = true;
	S->module_backed = true;
	test_bind_takes_a_filter();
	test_kernel_refusals();
	test_ephemeral_is_the_kernels_pick();
	test_shared_port_passes_on();
	test_offer_is_the_reservation();
	test_connect_again_after_refused(cap);
	S->module_backed = false;
	fx_destroy(S);
	free(cap);
	return tap_done();
}
