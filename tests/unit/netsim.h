/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A seeded network simulation for unit tests: two stacks joined by the
 * loop link (lib/link/loop.c, with its fault injection) on one virtual
 * clock, and the pieces of a TCP transfer between them: a pattern each
 * byte of a stream is checked against, and a "side" that sends its
 * stream, shuts down once it is all queued and checks what it receives.
 * Shared by test_netsim.c and test_hostile_link.c.
 *
 *   stack A 10.9.0.1 <== loop link (loss, dup, reorder, corrupt, delay) ==> stack B 10.9.0.2
 */
#ifndef SLUICE_TESTS_NETSIM_H
#define SLUICE_TESTS_NETSIM_H

#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))

static uint64_t vnow;

static inline uint64_t vclock(void *arg)
{
	(void)arg;
	return vnow;
}

/* Byte i of the stream seeded seed. */
static inline uint8_t pattern(uint32_t seed, size_t i)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed;

	return (uint8_t)(x >> 13 ^ x);
}

struct side {
	struct sl_stack *s;
	int sd;
	size_t sent, got, total_out, total_in;
	uint32_t seed_out, seed_in;
	bool shut, eof, bad;
	bool no_read;		/* a peer that never reads */
	bool no_shut;		/* send, but never shut down */
	int err;
};

static inline void pump_rx(struct side *x)
{
	uint8_t buf[4096];
	long n;

	if (x->no_read)
		return;
	while ((n = sluice_recv(ST(x->s), x->sd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (long i = 0; i < n; i++)
			if (buf[i] != pattern(x->seed_in, x->got + i))
				x->bad = true;
		x->got += n;
	}
	if (n == 0)
		x->eof = true;
	else if (n != -EAGAIN && !x->err)
		x->err = (int)n;
}

static inline void pump(struct side *x)
{
	uint8_t buf[4096];
	long n;

	while (x->sent < x->total_out) {
		size_t len = x->total_out - x->sent;

		if (len > sizeof(buf))
			len = sizeof(buf);
		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(x->seed_out, x->sent + i);
		n = sluice_send(ST(x->s), x->sd, buf, len, MSG_DONTWAIT);
		if (n <= 0) {
			if (n < 0 && n != -EAGAIN && !x->err)
				x->err = (int)n;
			break;
		}
		x->sent += n;
	}
	/* Only once connected: shutdown() in SYN-SENT aborts the connect, as
	 * on Linux. */
	if (x->sent == x->total_out && !x->shut && !x->no_shut) {
		struct sluice_pollfd p = { .sd = x->sd, .events = POLLOUT };

		if (sluice_poll(ST(x->s), &p, 1, 0) != 1 || !(p.revents & POLLOUT))
			return;
		sluice_shutdown(ST(x->s), x->sd, SHUT_WR);
		x->shut = true;
	}
	pump_rx(x);
}

/* Both directions of one connection: a's stream seeded for a, b's for b. */
static inline void side_pair(struct side *a, struct side *b, uint64_t seed, size_t na, size_t nb)
{
	a->total_out = b->total_in = na;
	b->total_out = a->total_in = nb;
	a->seed_out = b->seed_in = (uint32_t)seed * 3 + 1;
	b->seed_out = a->seed_in = (uint32_t)seed * 5 + 2;
}

/* Both sides got all they were sent, intact, and the end of it. */
static inline bool side_done(const struct side *a, const struct side *b)
{
	return a->got == a->total_in && b->got == b->total_in && !a->bad && !b->bad &&
	       a->eof && b->eof;
}

/* Every socket and buffer of stack x back, with the buffers free at start. */
static inline bool ns_clean(struct sl_stack *x, uint32_t free0)
{
	return x->r->sock_used == 0 && x->lib->tcp_embryos == 0 && x->lib->buf_free_count == free0;
}

static inline void ns_dump_sockets(struct sl_stack *x, char tag)
{
	for (uint32_t i = 0; i < x->r->max_sockets; i++) {
		struct sl_sock *so = sl_sock(x, i);

		if (so->type != SL_SOCK_FREE && so->type != SL_SOCK_RESERVED)
			printf("#   %c: socket %u type %u state %u flags 0x%x due %llu\n", tag, i,
			       so->type, so->state, so->flags, (unsigned long long)so->wheel_due_ms);
	}
}

/* Poll both stacks, then let 'us' of virtual time pass. */
static inline void ns_step(struct sl_stack *a, struct sl_stack *b, uint64_t us)
{
	sluice_stack_poll(ST(a));
	sluice_stack_poll(ST(b));
	vnow += us;
}

/* What a transfer saw, for figures. */
struct ns_result {
	struct sluice_loop_stats loop;
	uint64_t rexmt_a, rexmt_b;	/* tcp_retransmit */
	uint64_t rto_a, rto_b;		/* tcp_rto */
	uint64_t bad_a, bad_b;		/* tcp_rx_bad + ip_rx_bad_hdr: corruption caught */
	uint64_t ms;			/* virtual time the transfer took */
};

/*
 * One transfer: a sends na bytes to b while b sends nb to a, on a loop
 * link with faults f (seeded seed), on virtual time; then both close and
 * the stacks must give back every socket and buffer.  One TAP line for
 * the data, one for the leak check; res (may be NULL) gets figures.
 */
/* One turn of a transfer from sa to sb: both stacks run, sb's side
 * accepted from listener l once it can be, both sides moved on. */
static inline void ns_turn(struct side *sa, struct side *sb, int l)
{
	sluice_stack_poll(ST(sa->s));
	sluice_stack_poll(ST(sb->s));
	if (sb->sd < 0)
		sb->sd = sluice_accept(ST(sb->s), l, NULL);
	pump(sa);
	if (sb->sd >= 0)
		pump(sb);
}

static inline bool ns_transfer(uint64_t seed, const struct sluice_loop_faults *f, size_t na,
			       size_t nb, const char *what, struct ns_result *res)
{
	struct sl_stack *a = fx_stack("simA", "10.9.0.1", NULL);
	struct sl_stack *b = fx_stack("simB", "10.9.0.2", NULL);
	struct sluice_loop_faults ff = *f;
	struct sockaddr_in srv = fx_addr("10.9.0.2", 80);
	uint32_t freea = a->lib->buf_free_count, freeb = b->lib->buf_free_count;
	struct side sa = { 0 }, sb = { 0 };
	int l, ret, rounds = 0;
	bool ok;

	ff.seed = seed;
	vnow = 1000000;
	sluice_stack_set_clock(ST(a), vclock, NULL);
	sluice_stack_set_clock(ST(b), vclock, NULL);
	sluice_link_loop(ST(a), ST(b), &ff);
	l = sluice_socket(ST(b), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(ST(b), l, &srv);
	sluice_listen(ST(b), l, 8);
	sa.s = a;
	sb.s = b;
	sa.sd = sluice_socket(ST(a), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	ret = sluice_connect(ST(a), sa.sd, &srv);
	sb.sd = -1;
	side_pair(&sa, &sb, seed, na, nb);

	/* Run the virtual network: 1 ms steps, at most 20 simulated minutes. */
	while (rounds++ < 1200000) {
		ns_turn(&sa, &sb, l);
		if (sa.eof && sb.eof)
			break;
		vnow += 1000;
	}
	ok = ret == -EINPROGRESS && side_done(&sa, &sb);
	if (!tap_ok(ok, "%s seed %llu: %zu and %zu bytes arrive intact", what,
		    (unsigned long long)seed, na, nb))
		printf("#   a got %zu/%zu eof %d bad %d err %d; b got %zu/%zu eof %d bad %d err %d;"
		       " %d ms\n", sa.got, nb, sa.eof, sa.bad, sa.err, sb.got, na, sb.eof, sb.bad,
		       sb.err, rounds);
	if (res) {
		memset(res, 0, sizeof(*res));
		sluice_link_loop_stats(ST(a), &res->loop);
		res->rexmt_a = fx_counter(a, "tcp_retransmit");
		res->rexmt_b = fx_counter(b, "tcp_retransmit");
		res->rto_a = fx_counter(a, "tcp_rto");
		res->rto_b = fx_counter(b, "tcp_rto");
		res->bad_a = fx_counter(a, "tcp_rx_bad") + fx_counter(a, "ip_rx_bad_hdr") +
			     fx_counter(a, "ip_rx_bad_csum");
		res->bad_b = fx_counter(b, "tcp_rx_bad") + fx_counter(b, "ip_rx_bad_hdr") +
			     fx_counter(b, "ip_rx_bad_csum");
		res->ms = (uint64_t)rounds;
	}
	sluice_close(ST(a), sa.sd);
	if (sb.sd >= 0)
		sluice_close(ST(b), sb.sd);
	sluice_close(ST(b), l);
	/* Let FIN exchange, retransmissions and TIME_WAIT run out: 5 min. */
	for (int i = 0; i < 3000; i++)
		ns_step(a, b, 100000);
	if (!tap_ok(ns_clean(a, freea) && ns_clean(b, freeb),
		    "%s seed %llu: no socket or buffer left", what, (unsigned long long)seed)) {
		printf("#   sockets %u %u, buffers missing %d %d\n", a->r->sock_used,
		       b->r->sock_used, (int)(freea - a->lib->buf_free_count),
		       (int)(freeb - b->lib->buf_free_count));
		ns_dump_sockets(a, 'a');
		ns_dump_sockets(b, 'b');
	}
	a->link->ops->close(a->link);
	b->link->ops->close(b->link);
	fx_destroy(a);
	fx_destroy(b);
	return ok;
}

#endif /* SLUICE_TESTS_NETSIM_H */
