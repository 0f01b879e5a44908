// SPDX-License-Identifier: BSD-2-Clause
/*
 * A seeded network simulation: two stacks joined by the loop link with
 * loss, reordering, duplication, corruption and delay, on a virtual
 * clock.  TCP transfers of many sizes, in both directions at once, must
 * arrive complete and identical, for many seeds; afterwards no buffer or
 * socket is left behind once TIME_WAIT has run out.
 */
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))

static uint64_t vnow;

static uint64_t vclock(void *arg)
{
	(void)arg;
	return vnow;
}

static uint8_t pattern(uint32_t seed, size_t i)
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
	int err;
};

static void pump_rx(struct side *x);

static void pump(struct side *x)
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
		if (n <= 0)
			break;
		x->sent += n;
	}
	/* Only once connected: shutdown() in SYN-SENT aborts the connect, as
	 * on Linux. */
	if (x->sent == x->total_out && !x->shut) {
		struct sluice_pollfd p = { .sd = x->sd, .events = POLLOUT };

		if (sluice_poll(ST(x->s), &p, 1, 0) != 1 || !(p.revents & POLLOUT))
			return;
		sluice_shutdown(ST(x->s), x->sd, SHUT_WR);
		x->shut = true;
	}
	pump_rx(x);
}

static void pump_rx(struct side *x)
{
	uint8_t buf[4096];
	long n;

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

/* One transfer: a sends na bytes to b while b sends nb to a. */
static bool transfer(uint64_t seed, const struct sluice_loop_faults *f, size_t na, size_t nb,
		     const char *what)
{
	struct sl_stack *a = fx_stack("simA", "10.9.0.1", NULL);
	struct sl_stack *b = fx_stack("simB", "10.9.0.2", NULL);
	struct sluice_loop_faults ff = *f;
	struct sockaddr_in srv = fx_addr("10.9.0.2", 80);
	uint32_t freea = a->r->buf_free_count, freeb = b->r->buf_free_count;
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
	sa.total_out = sb.total_in = na;
	sb.total_out = sa.total_in = nb;
	sa.seed_out = sb.seed_in = (uint32_t)seed * 3 + 1;
	sb.seed_out = sa.seed_in = (uint32_t)seed * 5 + 2;

	/* Run the virtual network: 1 ms steps, at most 20 simulated minutes. */
	while (rounds++ < 1200000) {
		sluice_stack_poll(ST(a));
		sluice_stack_poll(ST(b));
		if (sb.sd < 0)
			sb.sd = sluice_accept(ST(b), l, NULL);
		pump(&sa);
		if (sb.sd >= 0)
			pump(&sb);
		if (sa.eof && sb.eof)
			break;
		vnow += 1000;
	}
	ok = ret == -EINPROGRESS && sa.got == nb && sb.got == na && !sa.bad && !sb.bad &&
	     sa.eof && sb.eof;
	if (!tap_ok(ok, "%s seed %llu: %zu and %zu bytes arrive intact", what,
		    (unsigned long long)seed, na, nb))
		printf("#   a got %zu/%zu eof %d bad %d err %d; b got %zu/%zu eof %d bad %d err %d;"
		       " %d ms\n", sa.got, nb, sa.eof, sa.bad, sa.err, sb.got, na, sb.eof, sb.bad,
		       sb.err, rounds);
	sluice_close(ST(a), sa.sd);
	if (sb.sd >= 0)
		sluice_close(ST(b), sb.sd);
	sluice_close(ST(b), l);
	/* Let FIN exchange, retransmissions and TIME_WAIT run out: 5 min. */
	for (int i = 0; i < 3000; i++) {
		vnow += 100000;
		sluice_stack_poll(ST(a));
		sluice_stack_poll(ST(b));
	}
	if (!tap_ok(a->r->sock_used == 0 && b->r->sock_used == 0 &&
		    a->r->tcp_embryos == 0 && b->r->tcp_embryos == 0 &&
		    a->r->buf_free_count == freea && b->r->buf_free_count == freeb,
		    "%s seed %llu: no socket or buffer left", what, (unsigned long long)seed))
	{
		printf("#   sockets %u %u, buffers missing %d %d\n", a->r->sock_used,
		       b->r->sock_used, (int)(freea - a->r->buf_free_count),
		       (int)(freeb - b->r->buf_free_count));
		for (int k = 0; k < 2; k++) {
			struct sl_stack *x = k ? b : a;

			for (uint32_t i = 0; i < x->r->max_sockets; i++) {
				struct sl_sock *so = sl_sock(x, i);

				if (so->type != SL_SOCK_FREE)
					printf("#   %c: socket %u type %u state %u flags 0x%x due %llu\n",
					       k ? 'b' : 'a', i, so->type, so->state, so->flags,
					       (unsigned long long)so->wheel_due_ms);
			}
		}
	}
	a->link->ops->close(a->link);
	b->link->ops->close(b->link);
	fx_destroy(a);
	fx_destroy(b);
	return ok;
}

int main(void)
{
	static const size_t sizes[] = { 0, 1, 1460, 1461, 65536, 300000 };
	const struct sluice_loop_faults clean = { .delay_us = 500 };
	const struct sluice_loop_faults lossy = {
		.loss_ppm = 20000, .dup_ppm = 10000, .reorder_ppm = 20000,
		.corrupt_ppm = 5000, .delay_us = 2000,
	};
	const struct sluice_loop_faults harsh = {
		.loss_ppm = 80000, .dup_ppm = 30000, .reorder_ppm = 50000,
		.corrupt_ppm = 20000, .delay_us = 10000,
	};

	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		transfer(i + 1, &clean, sizes[i], sizes[(i + 3) % 6], "clean");
	for (uint64_t seed = 100; seed < 300; seed++)
		transfer(seed, &lossy, sizes[seed % 6], sizes[(seed / 2) % 6], "lossy");
	for (uint64_t seed = 1000; seed < 1050; seed++)
		transfer(seed, &harsh, 100000, 50000, "harsh");
	return tap_done();
}
