// SPDX-License-Identifier: BSD-2-Clause
/*
 * TIME-WAIT entries (lib/proto/tcp/tcp_tw.c, issue 16): a connection that
 * enters TIME-WAIT gives its socket slot and buffers back at once and
 * waits as an entry of the region's table; a full table drops its oldest
 * (counted) and never refuses or delays a connection; entries expire after
 * 2 MSL; a TIME-WAIT port refuses a bind() without SO_REUSEADDR, as on
 * Linux; a scribbled table is emptied, not the stack broken; a holder's
 * death is survived by relinking the ring.
 *
 * The stack is the fixture's small one (64 socket slots, so 1,024
 * entries), both ends of every connection in it, on a virtual clock.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "stack_fixture.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define IP "10.9.0.1"
#define PORT 7500

static struct sl_stack *s;
static int l;

struct tuple {
	uint32_t laddr, raddr;
	uint16_t lport, rport;
};

/* A stack with no link looks at its timers every 16th poll. */
static void run(int rounds)
{
	for (int i = 0; i < rounds; i++)
		sluice_stack_poll(ST(s));
}

/* One short connection, closed by the client first: its side waits in
 * TIME-WAIT.  The client's 4-tuple in *t; false if it did not connect. */
static bool churn_one(struct tuple *t)
{
	const struct sl_sock *so;
	int c, d;

	if (fx_tcp_pair(s, IP, PORT, l, &c, &d))
		return false;
	so = sl_sock(s, (uint32_t)c);
	*t = (struct tuple){ so->laddr, so->raddr, so->lport, so->rport };
	sluice_close(ST(s), c);
	run(4);
	sluice_close(ST(s), d);
	run(4);
	return true;
}

static bool has_tw(const struct tuple *t)
{
	return sl_tw_find(s, t->laddr, t->lport, t->raddr, t->rport) != NULL;
}

static void count_one(const struct sl_tw *tw, void *arg)
{
	(void)tw;
	++*(unsigned int *)arg;
}

static void test_slot_released_at_once(uint32_t used0, uint32_t free0)
{
	struct tuple t;

	tap_ok(churn_one(&t), "a connection, closed by the client first");
	tap_ok(has_tw(&t) && s->lib->tw_count == 1, "its side waits in TIME-WAIT: one entry");
	tap_eq(s->r->sock_used, used0, "... and both socket slots are free already");
	tap_eq(s->lib->buf_free_count, free0, "... and every buffer is back in the pool");
	fx_clock_us += SL_TCP_TIME_WAIT_US - 1000;
	run(32);
	tap_ok(has_tw(&t), "the entry is there just before 2 MSL");
	fx_clock_us += 2000;
	run(32);
	tap_ok(!has_tw(&t) && s->lib->tw_count == 0, "and gone after 2 MSL");
}

static void test_full_table_drops_oldest(void)
{
	uint32_t n = s->tw_max + 76, ok = 0;
	uint64_t over0 = fx_counter(s, "tcp_tw_overflow");
	struct tuple first = { 0 }, t = { 0 };
	unsigned int listed = 0;

	tap_eq(s->tw_max, 1024, "64 socket slots: 1,024 TIME-WAIT entries");
	for (uint32_t i = 0; i < n; i++) {
		if (!churn_one(&t))
			break;
		if (!i)
			first = t;
		ok++;
		fx_clock_us += 10;
	}
	tap_ok(ok == n, "%u connections in a row, none refused (64 socket slots)", n);
	tap_eq(s->lib->tw_count, s->tw_max, "the table is full");
	tap_eq(fx_counter(s, "tcp_tw_overflow") - over0, 76,
	       "the 76 oldest were dropped, counted in tcp_tw_overflow");
	tap_ok(!has_tw(&first) && has_tw(&t), "the first connection's entry went, the last's is there");
	tap_eq(s->lib->tw_peak, s->tw_max, "the peak is the table's size");
	tap_eq(sl_tw_list(s, count_one, &listed), s->tw_max, "listing gives every entry");
	tap_eq(listed, s->tw_max, "... once each");
}

static void test_bind_and_reuseaddr(void)
{
	struct tuple t;
	struct sockaddr_in a;
	int b, one = 1;

	tap_ok(churn_one(&t), "another connection into TIME-WAIT");
	a = fx_addr("0.0.0.0", ntohs(t.lport));
	b = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
	tap_eq(sluice_bind(ST(s), b, &a), -EADDRINUSE,
	       "bind() to its port without SO_REUSEADDR: EADDRINUSE (as Linux)");
	sluice_setsockopt(ST(s), b, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tap_eq(sluice_bind(ST(s), b, &a), 0, "with SO_REUSEADDR: bound");
	sluice_close(ST(s), b);
}

static void test_scribbled_chain(void)
{
	struct tuple t;
	uint64_t reset0 = fx_counter(s, "tcp_tw_table_reset");
	uint32_t *bucket;

	tap_ok(churn_one(&t), "an entry to scribble on");
	/* Every 4-tuple bucket names an entry past the table. */
	bucket = s->tw_hash;
	for (uint32_t i = 0; i < s->tw_max; i++)
		bucket[i] = s->tw_max + 7;
	tap_ok(!has_tw(&t), "a lookup through a scribbled chain finds nothing");
	tap_eq(fx_counter(s, "tcp_tw_table_reset") - reset0, 1,
	       "the table was emptied once (tcp_tw_table_reset)");
	tap_ok(s->lib->tw_count == 0 && !s->corrupt, "the stack is not broken");
	tap_ok(churn_one(&t) && has_tw(&t), "connections go on, and wait in TIME-WAIT again");
}

static void test_rebuild(void)
{
	struct tuple t[8];
	bool all = true;

	for (int i = 0; i < 8; i++)
		all &= churn_one(&t[i]);
	/* A holder that died half way through leaves the chains anyhow. */
	memset(s->tw_hash, 0xff, 2ull * s->tw_max * sizeof(uint32_t));
	tap_ok(all && !has_tw(&t[0]), "chains wiped: the entries cannot be found");
	sl_lock(s);
	sl_tw_rebuild(s);
	sl_unlock(s);
	for (int i = 0; i < 8; i++)
		all &= has_tw(&t[i]);
	tap_ok(all, "relinked from the ring: every entry is found again");
}

/*
 * A connection handed to a kernel socket (tcp_handoff.c) leaves an entry
 * marked SL_TW_GONE: what still reaches the stack for its tuple is dropped
 * without a word, where the stack would answer a reset (no socket) or an
 * ACK (TIME-WAIT) and break the kernel's connection.  The hand-off's last
 * step is done here by hand (the rest needs the module: tests/vm/handoff.sh).
 */
static void test_gone_is_silent(void)
{
	uint64_t tx0, rst0;
	struct tuple t;
	struct sl_sock *so;
	int c = -1, d = -1;

	if (fx_tcp_pair(s, IP, PORT, l, &c, &d)) {
		tap_ok(false, "a connection to hand off");
		return;
	}
	so = sl_sock(s, (uint32_t)c);
	t = (struct tuple){ so->laddr, so->raddr, so->lport, so->rport };
	sl_lock(s);
	sl_tw_gone(s, so, sl_now(s));
	sl_tcp_done(s, so, 0);
	sl_unlock(s);
	tap_ok(has_tw(&t) && (sl_tw_find(s, t.laddr, t.lport, t.raddr, t.rport)->flags & SL_TW_GONE),
	       "the handed-off side leaves a SL_TW_GONE entry");
	tx0 = fx_counter(s, "tcp_tx");
	rst0 = fx_counter(s, "tcp_reset_tx");
	tap_eq(sluice_send(ST(s), d, "late", 4, 0), 4, "the other end sends to the tuple");
	run(8);
	tap_eq(fx_counter(s, "tcp_tx") - tx0, 1, "one segment went out, that send's: nothing answered it");
	tap_eq(fx_counter(s, "tcp_reset_tx") - rst0, 0, "... no reset");
	tap_eq(sl_sock(s, (uint32_t)d)->state, SL_TCP_ESTABLISHED, "the sender's side is still established");
	sluice_close(ST(s), c);
	sluice_close(ST(s), d);
	fx_clock_us += 2 * SL_TCP_TIME_WAIT_US;
	run(64);
}

int main(void)
{
	uint32_t used0, free0;

	s = fx_stack("twtab", IP, NULL);
	{
		struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
		int one = 1;

		l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		sluice_setsockopt(ST(s), l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		sluice_bind(ST(s), l, &a);
		sluice_listen(ST(s), l, 16);
	}
	used0 = s->r->sock_used;
	free0 = s->lib->buf_free_count;
	test_slot_released_at_once(used0, free0);
	test_full_table_drops_oldest();
	test_bind_and_reuseaddr();
	test_scribbled_chain();
	test_rebuild();
	test_gone_is_silent();
	sluice_close(ST(s), l);
	fx_clock_us += 2 * SL_TCP_TIME_WAIT_US;
	run(32);
	tap_eq(s->lib->tw_count, 0, "all expired");
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool");
	fx_destroy(s);
	return tap_done();
}
