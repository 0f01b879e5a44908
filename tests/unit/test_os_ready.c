// SPDX-License-Identifier: BSD-2-Clause
/*
 * A listener's kernel twin has a connection (lib/preload/twin.c): what
 * sl_listen_os_ready() does to the listener in the stack.  An edge makes
 * the listener readable and moves its wake sequence and the readiness
 * journal (what poll, epoll and its edge-triggered entries look at); "more"
 * keeps it readable and moves neither; a clear makes it not readable again
 * unless the stack's own queue holds a connection; a socket that is not
 * that listener (another generation, not listening, out of range) is
 * -EBADF and untouched.
 */
#include <errno.h>
#include <poll.h>

#include "stack_fixture.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define IP "10.8.1.1"

static struct sl_stack *s;

static short revents(int sd)
{
	struct sluice_pollfd p = { .sd = sd, .events = POLLIN };

	return sluice_poll(ST(s), &p, 1, 0) == 1 ? p.revents : 0;
}

static int listener(uint16_t port)
{
	struct sockaddr_in a = fx_addr("0.0.0.0", port);
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 8);
	return l;
}

static void test_listening_edge_more_clear(void)
{
	int l = listener(7601);
	struct sl_sock *so = sl_sock(s, (uint32_t)l);
	uint32_t gen = so->kp.gen, seq, chg;
	struct sockaddr_in peer;

	tap_eq(revents(l), 0, "a fresh listener is not readable");
	seq = so->wake_seq;
	chg = s->lib->chg_seq;
	tap_eq(sl_listen_os_ready(ST(s), l, gen, SL_OSR_EDGE), 0, "edge: 0");
	tap_eq(revents(l) & POLLIN, POLLIN, "edge: the listener polls readable");
	tap_ok(so->wake_seq != seq, "edge: its wake sequence moved (epoll's edge)");
	tap_ok(s->lib->chg_seq != chg, "edge: the readiness journal names it");
	tap_eq(sluice_accept(ST(s), l, &peer), -EAGAIN,
	       "accept() of the stack finds its own queue empty");
	seq = so->wake_seq;
	chg = s->lib->chg_seq;
	tap_eq(sl_listen_os_ready(ST(s), l, gen, SL_OSR_MORE), 0, "more: 0");
	tap_eq(revents(l) & POLLIN, POLLIN, "more: still readable");
	tap_eq(so->wake_seq, seq, "more: no new edge");
	tap_eq(s->lib->chg_seq, chg, "more: nothing in the journal");
	tap_eq(sl_listen_os_ready(ST(s), l, gen, SL_OSR_CLEAR), 0, "clear: 0");
	tap_eq(revents(l), 0, "clear: not readable");
	sluice_close(ST(s), l);
}

static void test_clear_keeps_stack_queue(void)
{
	int l = listener(7602), c = -1, a = -1;
	uint32_t gen = sl_sock(s, (uint32_t)l)->kp.gen;

	tap_eq(fx_tcp_pair(s, IP, 7602, l, &c, &a), 0, "a connection in the stack");
	/* fx_tcp_pair() accepted it; one more waits in the queue. */
	{
		struct sockaddr_in to = fx_addr(IP, 7602);
		int c2 = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

		sluice_connect(ST(s), c2, &to);
		for (int i = 0; i < 20; i++)
			sluice_stack_poll(ST(s));
		sl_listen_os_ready(ST(s), l, gen, SL_OSR_EDGE);
		sl_listen_os_ready(ST(s), l, gen, SL_OSR_CLEAR);
		tap_eq(revents(l) & POLLIN, POLLIN,
		       "clear: a connection queued in the stack still makes it readable");
		sluice_close(ST(s), c2);
	}
	sluice_close(ST(s), c);
	sluice_close(ST(s), a);
	sluice_close(ST(s), l);
}

static void test_not_that_listener(void)
{
	int l = listener(7603), u;
	uint32_t gen = sl_sock(s, (uint32_t)l)->kp.gen;
	struct sockaddr_in a = fx_addr("0.0.0.0", 7604);

	tap_eq(sl_listen_os_ready(ST(s), l, gen + 1, SL_OSR_EDGE), -EBADF,
	       "another generation: -EBADF");
	tap_eq(revents(l), 0, "... and the listener is untouched");
	tap_eq(sl_listen_os_ready(ST(s), -1, gen, SL_OSR_EDGE), -EBADF, "a negative index: -EBADF");
	tap_eq(sl_listen_os_ready(ST(s), (int)s->max_sockets, gen, SL_OSR_EDGE), -EBADF,
	       "an index past the table: -EBADF");
	u = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(ST(s), u, &a);
	tap_eq(sl_listen_os_ready(ST(s), u, sl_sock(s, (uint32_t)u)->kp.gen, SL_OSR_EDGE), -EBADF,
	       "a socket that does not listen: -EBADF");
	tap_eq(sl_sock(s, (uint32_t)u)->tcp.tflags & SL_TF_OSREADY, 0, "... and is untouched");
	sluice_close(ST(s), u);
	sluice_close(ST(s), l);
	tap_eq(sl_listen_os_ready(ST(s), l, gen, SL_OSR_EDGE), -EBADF, "a closed listener: -EBADF");
}

int main(void)
{
	s = fx_stack("osready", IP, NULL);
	test_listening_edge_more_clear();
	test_clear_keeps_stack_queue();
	test_not_that_listener();
	fx_destroy(s);
	return tap_done();
}
