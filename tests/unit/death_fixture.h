/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the tests that kill processes on a shared stack have in common
 * (test_death, test_killpt): a seeded generator, the monotonic clock, a
 * virtual clock to run timers out, and closing what a dead process left.
 */
#ifndef SLUICE_TESTS_DEATH_FIXTURE_H
#define SLUICE_TESTS_DEATH_FIXTURE_H

#include <time.h>

#include "stack_fixture.h"

static uint64_t rng;

/* xorshift64*, the high half; seed rng first. */
static inline uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t vclock_us;

static inline uint64_t vclock(void *arg)
{
	(void)arg;
	return vclock_us;
}

/*
 * Close what the dead process left open, as its fd table's closing would
 * have: its listeners first (their unaccepted children go with them), then
 * its other sockets that are not already closing.  Returns how many.
 */
static inline int close_dead(struct sl_stack *s, pid_t dead)
{
	int closed = 0;

	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < s->r->max_sockets; i++) {
			struct sl_sock *so = sl_sock(s, i);

			if (so->type == SL_SOCK_FREE || so->owner_pid != (uint32_t)dead ||
			    (so->flags & SL_SF_ORPHAN))
				continue;
			if (pass == 0 && !(so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN))
				continue;
			if (sluice_close((struct sluice_stack *)s, (int)i) == 0)
				closed++;
		}
	return closed;
}

/*
 * Every process but this one gone: run every timer out (TIME-WAIT too) on
 * a virtual clock pushed 300 s forward, and list what is left for a
 * reader of a failure.
 */
static inline void run_out_timers(struct sl_stack *s)
{
	vclock_us = sl_now(s);
	sluice_stack_set_clock((struct sluice_stack *)s, vclock, NULL);
	for (int i = 0; i < 3000; i++) {
		vclock_us += 100000;
		sluice_stack_poll((struct sluice_stack *)s);
	}
	for (uint32_t i = 0; i < s->r->max_sockets; i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (so->type != SL_SOCK_FREE && so->type != SL_SOCK_RESERVED)
			printf("# left: sd %u type %u state %u flags 0x%x owner %u port %u->%u parent %u\n",
			       i, so->type, so->state, so->flags, so->owner_pid, ntohs(so->lport),
			       ntohs(so->rport), so->parent_idx);
	}
}

#endif /* SLUICE_TESTS_DEATH_FIXTURE_H */
