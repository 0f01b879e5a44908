// SPDX-License-Identifier: BSD-2-Clause
/*
 * Socket fds, user space's side (lib/proto/sockfd.c, lib/proto/sock.c), with the module
 * played in memory: the test sets kstate and armed as SOCK_FD and poll
 * would, bumps ksock_released as a release would, and a fake
 * SLUICE_IOC_SOCK_WAKE records what user space asks to wake.  Checks:
 * readiness changes of a socket with a socket fd are published at unlock
 * (events as poll bits with RDNORM/WRNORM), an armed poller is disarmed and
 * woken with one SOCK_WAKE per unlock naming every armed socket, sockets
 * without a socket fd cost no wake and no store, more changes than the
 * note list holds fall back to a full scan, a freed socket reports ERR |
 * HUP, and released sockets are closed by the next holder (by a scan, or
 * by the closer itself without one).
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>

#include "stack_fixture.h"

#define ST(s)		((struct sluice_stack *)(s))
#define NSOCK		100
#define MAX_CALLS	16

/* The module's side: every SOCK_WAKE asked for. */
static struct {
	unsigned int calls;
	unsigned int n[MAX_CALLS];
	uint32_t idx[MAX_CALLS][SLUICE_SOCK_WAKE_MAX];
	int bad;		/* calls that broke the uapi rules */
} wk;

static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	struct sluice_sock_wake *w = arg;

	(void)fd;
	if (req != SLUICE_IOC_SOCK_WAKE || w->size != sizeof(*w) || w->flags ||
	    w->reserved || !w->n || w->n > SLUICE_SOCK_WAKE_MAX) {
		wk.bad++;
		return -1;
	}
	if (wk.calls < MAX_CALLS) {
		wk.n[wk.calls] = w->n;
		memcpy(wk.idx[wk.calls], (void *)(uintptr_t)w->idx_ptr, w->n * sizeof(uint32_t));
	}
	wk.calls++;
	return 0;
}

static bool woke(unsigned int call, uint32_t idx)
{
	for (unsigned int i = 0; call < wk.calls && call < MAX_CALLS && i < wk.n[call]; i++)
		if (wk.idx[call][i] == idx)
			return true;
	return false;
}

static struct sl_stack *make_stack(void)
{
	struct sluice_stack_config cfg = { .n_bufs = 512, .max_sockets = NSOCK + 8 };
	struct sluice_stack *st;
	char name[32];

	snprintf(name, sizeof(name), "t-sockfd-%d", (int)getpid());
	sluice_stack_destroy(name);
	inet_pton(AF_INET, "10.9.0.1", &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	if (sluice_stack_create(name, &cfg, &st)) {
		printf("Bail out! cannot create stack %s\n", name);
		exit(1);
	}
	sluice_stack_set_clock(st, fx_clock, NULL);
	return (struct sl_stack *)st;
}

static int udp_bound(struct sl_stack *s, uint16_t port)
{
	struct sockaddr_in a = fx_addr("10.9.0.1", port);
	int sd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);

	if (sd < 0 || sluice_bind(ST(s), sd, &a))
		return -1;
	return sd;
}

static long send1(struct sl_stack *s, int from, uint16_t to_port)
{
	struct sockaddr_in to = fx_addr("10.9.0.1", to_port);

	return sluice_sendto(ST(s), from, "x", 1, 0, &to);
}

/* What SOCK_FD and the module's poll do to a slot. */
static void module_sock_fd(struct sl_stack *s, int sd)
{
	sl_sock(s, (uint32_t)sd)->kp.kstate = SLUICE_KSOCK_OPEN;
}

static void module_poll(struct sl_stack *s, int sd)
{
	__atomic_store_n(&sl_sock(s, (uint32_t)sd)->kp.armed, 1, __ATOMIC_SEQ_CST);
}

/* What the release of the last socket fd does (kernel/sockfd.c): the
 * state, the push on the released list, the count. */
static void module_release(struct sl_stack *s, int sd)
{
	struct sl_sock *so = sl_sock(s, (uint32_t)sd);
	uint32_t old = __atomic_load_n(&s->r->ksock_rel_head, __ATOMIC_RELAXED);

	so->kp.kstate = SLUICE_KSOCK_RELEASED;
	do
		so->kp.rel_next = old;
	while (!__atomic_compare_exchange_n(&s->r->ksock_rel_head, &old, (uint32_t)sd + 1, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	__atomic_add_fetch(&s->r->ksock_released, 1, __ATOMIC_RELEASE);
}

/* ... when its push lost to user space's writes of the head: counted only. */
static void module_release_unlisted(struct sl_stack *s, int sd)
{
	sl_sock(s, (uint32_t)sd)->kp.kstate = SLUICE_KSOCK_RELEASED;
	__atomic_add_fetch(&s->r->ksock_released, 1, __ATOMIC_RELEASE);
}

static void test_publish_and_wake(struct sl_stack *s)
{
	int a = udp_bound(s, 1000), b = udp_bound(s, 2000), c = udp_bound(s, 3000);
	struct sl_sock *sb = sl_sock(s, (uint32_t)b), *sa = sl_sock(s, (uint32_t)a);
	uint32_t rd = SL_EV_IN | EPOLLRDNORM | SL_EV_OUT | EPOLLWRNORM;
	char buf[8];

	tap_ok(a >= 0 && b >= 0 && c >= 0, "three UDP sockets");
	tap_eq(sb->kp.kstate, SLUICE_KSOCK_NONE, "a new socket has no socket fd (kstate 0)");
	tap_eq(sb->kp.events | sb->kp.armed, 0, "a new socket: events and armed 0");

	/* No socket fd anywhere: no note, no store, no wake. */
	send1(s, a, 2000);
	tap_eq(wk.calls, 0, "no socket fd: no SOCK_WAKE");
	tap_eq(sb->kp.events, 0, "no socket fd: events not published");
	sluice_recvfrom(ST(s), b, buf, sizeof(buf), 0, NULL);

	/* A socket fd, nobody polling: published, not woken. */
	module_sock_fd(s, b);
	send1(s, a, 2000);
	tap_eq(sb->kp.events, rd, "socket fd: readable published (IN|RDNORM|OUT|WRNORM)");
	tap_eq(wk.calls, 0, "not armed: no SOCK_WAKE");

	/* Drained: published again; still nobody armed. */
	sluice_recvfrom(ST(s), b, buf, sizeof(buf), 0, NULL);
	tap_eq(sb->kp.events, SL_EV_OUT | EPOLLWRNORM, "drained: OUT|WRNORM published");

	/* Armed: one wake naming it, armed cleared. */
	module_poll(s, b);
	send1(s, a, 2000);
	tap_eq(wk.calls, 1, "armed: one SOCK_WAKE");
	tap_eq(wk.n[0], 1, "... naming one socket");
	tap_ok(woke(0, (uint32_t)b), "... the armed one");
	tap_eq(sb->kp.armed, 0, "armed cleared by user space");
	tap_eq(sb->kp.events, rd, "events published before the wake");
	/* Not re-armed: the next change wakes nobody. */
	send1(s, a, 2000);
	tap_eq(wk.calls, 1, "disarmed: no second SOCK_WAKE");
	/* Armed, IN already up, more data: an edge all the same. */
	module_poll(s, b);
	send1(s, a, 2000);
	tap_eq(wk.calls, 2, "new data with IN up: woken (an edge for EPOLLET)");
	/* Armed, readiness only falls (data read): nobody woken, still armed. */
	module_poll(s, b);
	sluice_recvfrom(ST(s), b, buf, sizeof(buf), 0, NULL);
	sluice_recvfrom(ST(s), b, buf, sizeof(buf), 0, NULL);
	tap_eq(wk.calls, 2, "reads (IN falls): no SOCK_WAKE");
	sluice_recvfrom(ST(s), b, buf, sizeof(buf), 0, NULL);
	tap_eq(sb->kp.events, SL_EV_OUT | EPOLLWRNORM, "... IN withdrawn");
	tap_eq(sb->kp.armed, 1, "... the poller stays armed");
	/* A change that shows nothing new (an ACK, say): nobody woken. */
	sl_lock(s);
	sl_sock_wake(s, sb);
	sl_unlock(s);
	tap_eq(wk.calls, 2, "nothing new to see: no SOCK_WAKE");

	/* Two armed sockets with news for one holder: one call for both. */
	module_sock_fd(s, c);
	module_poll(s, b);
	module_poll(s, c);
	sl_lock(s);
	sb->kp.events = 0;	/* as if OUT had gone down before */
	sl_sock_wake(s, sb);
	sl_sock_wake(s, sl_sock(s, (uint32_t)c));
	sl_sock_wake(s, sb);
	sl_unlock(s);
	tap_eq(wk.calls, 3, "two armed sockets in one unlock: one SOCK_WAKE");
	tap_eq(wk.n[2], 2, "... naming each once");
	tap_ok(woke(2, (uint32_t)b) && woke(2, (uint32_t)c), "... both of them");
	tap_eq(sa->kp.events | sa->kp.armed, 0, "the sender without socket fd untouched");

	/* Armed by the module but no readiness change: no wake. */
	module_poll(s, c);
	sl_lock(s);
	sl_unlock(s);
	tap_eq(wk.calls, 3, "armed, nothing changed: no SOCK_WAKE");

	/* Freed with a socket fd still open (the module's poll then says
	 * ERR|HUP too, by gen; user space publishes it as well). */
	sluice_close(ST(s), c);
	tap_eq(sl_sock(s, (uint32_t)c)->kp.events, SL_EV_ERR | SL_EV_HUP,
	       "freed with a socket fd: ERR|HUP published");
	tap_eq(wk.calls, 4, "... and its armed poller woken");
	sluice_close(ST(s), a);
	sl_sock(s, (uint32_t)b)->kp.kstate = SLUICE_KSOCK_NONE;
	sluice_close(ST(s), b);
}

static void test_overflow_scans(struct sl_stack *s)
{
	int sd[SL_KP_NOTES + 8], n = SL_KP_NOTES + 8, ok = 1, all = 1;
	unsigned int calls = wk.calls, named = 0;

	for (int i = 0; i < n; i++) {
		sd[i] = udp_bound(s, (uint16_t)(5000 + i));
		ok &= sd[i] >= 0;
		module_sock_fd(s, sd[i]);
		module_poll(s, sd[i]);
	}
	tap_ok(ok, "%d sockets with socket fds", n);
	sl_lock(s);
	for (int i = 0; i < n; i++)
		sl_sock_wake(s, sl_sock(s, (uint32_t)sd[i]));
	tap_ok(s->kp_n == SL_KP_SCAN, "more than SL_KP_NOTES noted: full scan flagged");
	sl_unlock(s);
	tap_eq(wk.calls, calls + 1, "one SOCK_WAKE after the scan");
	for (unsigned int c = calls; c < wk.calls && c < MAX_CALLS; c++)
		named += wk.n[c];
	tap_eq(named, n, "... naming every armed socket");
	for (int i = 0; i < n; i++)
		all &= sl_sock(s, (uint32_t)sd[i])->kp.armed == 0 &&
		       sl_sock(s, (uint32_t)sd[i])->kp.events == (SL_EV_OUT | EPOLLWRNORM);
	tap_ok(all, "every one published and disarmed");
	tap_ok(!s->kp_n, "notes reset after the unlock");
	for (int i = 0; i < n; i++) {
		sl_sock(s, (uint32_t)sd[i])->kp.kstate = SLUICE_KSOCK_NONE;
		sluice_close(ST(s), sd[i]);
	}
}

static void test_released(struct sl_stack *s)
{
	int a = udp_bound(s, 7000), b = udp_bound(s, 7001), c = udp_bound(s, 7002);
	uint64_t before = fx_counter(s, "sockfd_released"), scans = fx_counter(s, "sockfd_scan");
	int d = udp_bound(s, 7003), e = udp_bound(s, 7004), f = udp_bound(s, 7005);
	uint32_t gen;
	bool closed;

	module_sock_fd(s, a);
	module_sock_fd(s, b);
	module_sock_fd(s, c);
	/* Nothing released: an unlock closes nothing. */
	sl_lock(s);
	sl_unlock(s);
	tap_eq(sl_sock(s, (uint32_t)a)->type, SL_SOCK_UDP, "open socket fds: nothing closed");

	/* Released (a killed holder, say): the next holder closes it. */
	module_release(s, a);
	sl_lock(s);
	sl_unlock(s);
	tap_eq(sl_sock(s, (uint32_t)a)->type, SL_SOCK_FREE, "released: closed at the next unlock");
	tap_eq(s->lib->ksock_handled, s->r->ksock_released, "ksock_handled caught up");
	tap_eq(sl_sock(s, (uint32_t)b)->type, SL_SOCK_UDP, "the others stay");
	tap_eq(fx_counter(s, "sockfd_released"), before + 1, "counted");

	/* The closer closes its own without a scan. */
	module_release(s, b);
	gen = sl_sock(s, (uint32_t)b)->kp.gen;
	sl_lock(s);
	tap_ok(!sl_ksock_close_released(s, (uint32_t)b, gen + 1), "another generation: not closed");
	closed = sl_ksock_close_released(s, (uint32_t)b, gen);
	tap_ok(closed, "closer: its released socket closed");
	tap_eq(s->lib->ksock_handled, s->r->ksock_released, "... and the release handled");
	tap_ok(!sl_ksock_close_released(s, (uint32_t)b, gen), "closed once only");
	sl_unlock(s);

	/* Three released at once (killed holders, other processes): the
	 * module's list names them, no slot is scanned. */
	module_sock_fd(s, d);
	module_sock_fd(s, e);
	module_sock_fd(s, f);
	module_release(s, d);
	module_release(s, f);
	module_release(s, e);
	sl_lock(s);
	sl_unlock(s);
	tap_ok(sl_sock(s, (uint32_t)d)->type == SL_SOCK_FREE &&
	       sl_sock(s, (uint32_t)e)->type == SL_SOCK_FREE &&
	       sl_sock(s, (uint32_t)f)->type == SL_SOCK_FREE, "three released: all closed at one unlock");
	tap_eq(s->lib->ksock_handled, s->r->ksock_released, "... handled");
	tap_eq(fx_counter(s, "sockfd_scan"), scans, "... from the module's list, no scan");
	tap_eq(s->r->ksock_rel_head, 0, "... which was taken whole");

	/* A release the list does not hold (a push the module gave up):
	 * the count runs ahead of what the list gave, and a scan finds it. */
	module_release_unlisted(s, c);
	sl_lock(s);
	sl_unlock(s);
	tap_eq(sl_sock(s, (uint32_t)c)->type, SL_SOCK_FREE, "an unlisted release: closed all the same");
	tap_eq(s->lib->ksock_handled, s->r->ksock_released, "... handled");
	tap_eq(fx_counter(s, "sockfd_scan"), scans + 1, "... by a scan (sockfd_scan)");
	tap_eq(fx_counter(s, "sockfd_released"), before + 6, "six closed in all");
}

int main(void)
{
	struct sl_stack *s = make_stack();
	char name[SLUICE_NAME_MAX];

	/* A module stack as far as the library is concerned. */
	sl_sockfd_ioctl = fake_ioctl;
	s->module_backed = true;
	test_publish_and_wake(s);
	test_overflow_scans(s);
	test_released(s);
	tap_eq(wk.bad, 0, "every SOCK_WAKE followed the uapi rules");
	s->module_backed = false;
	memcpy(name, s->name, sizeof(name));
	sluice_stack_close(ST(s));
	sluice_stack_destroy(name);
	return tap_done();
}
