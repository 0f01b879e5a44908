// SPDX-License-Identifier: BSD-2-Clause
/*
 * How long a TCP port's module filter lives (lib/proto/filter.c), driven segment
 * by segment with the module's filter ioctls played by filter_fake.h: an
 * actively closed connection keeps its port's filter through TIME-WAIT and
 * gives it up when 2 MSL have passed; a listener closed under an accepted
 * connection hands its filter to it, and the filter goes with the last
 * socket on the port.
 */
#include "filter_fake.h"
#include "tcp_fixture.h"

#define IRS 30000u

static void kring_on(void)
{
	sl_filter_ioctl = fake_ioctl;
	T.s->filters = true;
	T.s->module_backed = true;
}

static void kring_off(void)
{
	T.s->module_backed = false;
}

static void test_time_wait_keeps_the_filter(void)
{
	struct sl_sock *so;
	uint32_t iss = 0;
	uint16_t port;

	tf_init("ftw");
	kring_on();
	M.next_pick = 42000;
	so = tf_connect(IRS, &iss, NULL, 8192);
	port = ntohs(so->lport);
	tap_ok(so && port == 42000 && has_filter(IPPROTO_TCP, 42000),
	       "an active open takes the kernel's pick, filtered");
	sl_tcp_close(T.s, so, tf_now_us);
	tf_seg(port, TH_ACK_, IRS + 1, iss + 2, 8192, NULL, 0);
	tf_seg(port, TH_ACK_ | TH_FIN_, IRS + 1, iss + 2, 8192, NULL, 0);
	tap_ok(tf_tw(so) != NULL, "closed actively: TIME-WAIT");
	tap_ok(has_filter(IPPROTO_TCP, port), "TIME-WAIT keeps the port's filter");
	tf_advance_ms(59000);
	tap_ok(has_filter(IPPROTO_TCP, port), "... still there just before 2 MSL");
	tf_advance_ms(1100);
	tap_ok(!has_filter(IPPROTO_TCP, port), "2 MSL passed: the filter is deleted");
	tap_eq(M.bad_dels, 0, "deleted once");
	kring_off();
	tf_finish();
}

static void test_listener_hands_over(void)
{
	struct sl_sock *l, *c;
	uint32_t iss = 0;
	int dels = M.dels;

	tf_init("flh");
	kring_on();
	l = tf_listener(9100, 8);
	tap_ok(has_filter(IPPROTO_TCP, 9100), "listen on 9100: filtered");
	c = tf_accept(l, IRS, &iss, NULL, 8192);
	tap_ok(c && !(c->flags & SL_SF_FILTER), "the accepted connection shares it");
	sl_tcp_close(T.s, l, tf_now_us);
	tap_ok(has_filter(IPPROTO_TCP, 9100) && (c->flags & SL_SF_FILTER),
	       "listener closed: the connection holds the filter now");
	tap_eq(M.dels - dels, 0, "... nothing deleted");
	/* The peer closes first: LAST-ACK, then gone (no TIME-WAIT here). */
	tf_seg(9100, TH_ACK_ | TH_FIN_, IRS + 1, iss + 1, 8192, NULL, 0);
	sl_tcp_close(T.s, c, tf_now_us);
	tf_seg(9100, TH_ACK_, IRS + 2, iss + 2, 8192, NULL, 0);
	tap_ok(!has_filter(IPPROTO_TCP, 9100), "the last socket on the port gone: filter deleted");
	tap_eq(M.bad_dels, 0, "deleted once");
	kring_off();
	tf_finish();
}

int main(void)
{
	test_time_wait_keeps_the_filter();
	test_listener_hands_over();
	return tap_done();
}
