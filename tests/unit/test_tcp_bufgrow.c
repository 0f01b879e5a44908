// SPDX-License-Identifier: BSD-2-Clause
/*
 * Send- and receive-buffer growth (issue 19 item 6): two stacks on the
 * loop link with a 10 ms round trip and no loss, on virtual time.  With
 * the defaults, the sender's buffer grows with cwnd (Linux's
 * tcp_sndbuf_expand()) and the receiver's with what its reader takes in a
 * round trip (tcp_rcv_space_adjust()), so a bulk transfer is not held to
 * a fixed 256 KiB buffer's 128 KiB window a round trip; a buffer the
 * user set with SO_SNDBUF or SO_RCVBUF stays as set, as on Linux.
 */
#include "netsim.h"

struct grow_run {
	int sndbuf, rcvbuf;		/* getsockopt() at the end */
	uint64_t ms;			/* virtual time until all arrived */
	uint64_t sgrown, rgrown;	/* tcp_sndbuf_grown, tcp_rcvbuf_grown */
	bool ok;
};

/* total bytes from a to b over 5 ms each way; set_snd / set_rcv: an
 * SO_SNDBUF on the sender / SO_RCVBUF on the listener (0: none). */
static void grow_transfer(size_t total, int set_snd, int set_rcv, struct grow_run *r)
{
	struct sl_stack *a = fx_stack_sized("bgA", "10.9.0.1", 16384, 16);
	struct sl_stack *b = fx_stack_sized("bgB", "10.9.0.2", 16384, 16);
	const struct sluice_loop_faults f = { .seed = 7, .delay_us = 5000 };
	struct sockaddr_in srv = fx_addr("10.9.0.2", 80);
	struct side sa = { 0 }, sb = { 0 };
	unsigned int len = sizeof(int);
	uint64_t start;
	int l, rounds = 0;

	vnow = 1000000;
	sluice_stack_set_clock(ST(a), vclock, NULL);
	sluice_stack_set_clock(ST(b), vclock, NULL);
	sluice_link_loop(ST(a), ST(b), &f);
	l = sluice_socket(ST(b), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (set_rcv)
		sluice_setsockopt(ST(b), l, SOL_SOCKET, SO_RCVBUF, &set_rcv, sizeof(int));
	sluice_bind(ST(b), l, &srv);
	sluice_listen(ST(b), l, 8);
	sa.s = a;
	sb.s = b;
	sa.sd = sluice_socket(ST(a), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (set_snd)
		sluice_setsockopt(ST(a), sa.sd, SOL_SOCKET, SO_SNDBUF, &set_snd, sizeof(int));
	sluice_connect(ST(a), sa.sd, &srv);
	sb.sd = -1;
	side_pair(&sa, &sb, 3, total, 0);
	start = vnow;
	/* 100 us steps, at most 20 virtual seconds. */
	while (rounds++ < 200000) {
		ns_turn(&sa, &sb, l);
		if (sb.got == total)
			break;
		vnow += 100;
	}
	r->ms = (vnow - start) / 1000;
	r->ok = sb.got == total && !sb.bad;
	r->sndbuf = r->rcvbuf = 0;
	sluice_getsockopt(ST(a), sa.sd, SOL_SOCKET, SO_SNDBUF, &r->sndbuf, &len);
	len = sizeof(int);
	if (sb.sd >= 0)
		sluice_getsockopt(ST(b), sb.sd, SOL_SOCKET, SO_RCVBUF, &r->rcvbuf, &len);
	r->sgrown = fx_counter(a, "tcp_sndbuf_grown");
	r->rgrown = fx_counter(b, "tcp_rcvbuf_grown");
	sluice_close(ST(a), sa.sd);
	if (sb.sd >= 0)
		sluice_close(ST(b), sb.sd);
	sluice_close(ST(b), l);
	for (int i = 0; i < 100; i++)
		ns_step(a, b, 10000);
	a->link->ops->close(a->link);
	b->link->ops->close(b->link);
	fx_destroy(a);
	fx_destroy(b);
}

int main(void)
{
	struct grow_run r;

	/* 24 MiB: with the buffers fixed at 256 KiB (a 128 KiB window, 12.8
	 * MB/s at 10 ms) this takes about 2 s; grown, a few hundred ms. */
	grow_transfer(24u << 20, 0, 0, &r);
	tap_ok(r.ok, "defaults: 24 MiB arrive intact over a 10 ms round trip");
	tap_ok(r.sndbuf > 256 * 1024, "the sender's buffer grew past 256 KiB (%d)", r.sndbuf);
	tap_ok(r.rcvbuf > 256 * 1024, "the receiver's buffer grew past 256 KiB (%d)", r.rcvbuf);
	tap_ok(r.sgrown > 0 && r.rgrown > 0, "counted: tcp_sndbuf_grown %llu, tcp_rcvbuf_grown %llu",
	       (unsigned long long)r.sgrown, (unsigned long long)r.rgrown);
	tap_ok(r.ms < 1000, "24 MiB in under 1 s of virtual time (%llu ms; ~2 s at 128 KiB a round trip)",
	       (unsigned long long)r.ms);

	/* Buffers the user set stay as set (Linux SOCK_SNDBUF_LOCK,
	 * SOCK_RCVBUF_LOCK): 64 KiB asked, 128 KiB kept (doubled). */
	grow_transfer(4u << 20, 64 * 1024, 0, &r);
	tap_ok(r.ok && r.sndbuf == 128 * 1024 && r.sgrown == 0,
	       "SO_SNDBUF set: the sender's buffer stays at 128 KiB (%d, grown %llu)", r.sndbuf,
	       (unsigned long long)r.sgrown);
	grow_transfer(4u << 20, 0, 64 * 1024, &r);
	tap_ok(r.ok && r.rcvbuf == 128 * 1024 && r.rgrown == 0,
	       "SO_RCVBUF set on the listener: the accepted socket's buffer stays at 128 KiB "
	       "(%d, grown %llu)", r.rcvbuf, (unsigned long long)r.rgrown);
	return tap_done();
}
