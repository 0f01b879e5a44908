// SPDX-License-Identifier: BSD-2-Clause
/*
 * The spin time follows what a wake-up costs (lib/run/wait.c,
 * sl_wake_cost_ns(); lib/README.md "Waiting"): `sluice run` times futex
 * hand-offs between two threads on two CPUs; a process that may use one
 * CPU measures nothing, since there a hand-off is a context switch and
 * every spin would come out too short.  And at most as many threads of
 * a stack spin at once as the caller allows (sl_spin_claim()): a slot
 * frees itself when its time is up, so a spinner that died leaks none.
 */
#include <sched.h>

#include "stack_fixture.h"
#include "run/run.h"
#include "os/os.h"

int main(void)
{
	cpu_set_t all, one;
	unsigned int ns;
	int first = -1;

	tap_eq(sl_spin_budget_us(20000), 50, "a 20 us wake-up buys a 50 us spin");
	tap_eq(sl_spin_budget_us(1000), SL_SPIN_MIN_US, "a cheap one: the least spin");
	tap_eq(sl_spin_budget_us(1000000), SL_SPIN_MAX_US, "a dear one: the most");

	{
		struct sl_stack *s = fx_stack("spinslots", "10.5.9.1", NULL);
		int a, b, c;

		a = sl_spin_claim(s, 2, 1u << 20, 200000);
		b = sl_spin_claim(s, 2, 1u << 20, 200000);
		c = sl_spin_claim(s, 2, 1u << 20, 200000);
		tap_ok(a >= 0 && b >= 0 && a != b, "two spinners of a cap of two get slots (%d, %d)", a, b);
		tap_eq(c, -1, "a third sleeps at once");
		sl_spin_release(s, a);
		c = sl_spin_claim(s, 2, 1u << 20, 20);
		tap_eq(c, a, "a slot given back is taken again");
		usleep(2000);
		tap_ok(sl_spin_claim(s, 2, 1u << 20, 20) >= 0,
		       "a slot whose time is up is free again (a spinner that died leaks it for its spin only)");
		tap_ok(sl_spin_claim(s, SL_SPIN_SLOTS + 5, 1u << 20, 20) >= 0, "a cap above the slots is the slots");
		fx_destroy(s);
	}

	{
		/* More runnable threads than CPUs: this one at least, runnable
		 * as it asks, against a machine of no CPUs.  Counted once a
		 * millisecond a stack, by compare-and-swap. */
		struct sl_stack *s = fx_stack("spinrunq", "10.5.9.2", NULL);
		uint64_t before = s->ctr->c[SL_C_spin_runq];

		tap_ok(sl_sys_runnable() >= 1, "the kernel counts this thread runnable (%d)",
		       sl_sys_runnable());
		tap_eq(sl_spin_claim(s, 2, 0, 200), -1, "more runnable threads than CPUs: no spin");
		tap_eq(s->ctr->c[SL_C_spin_runq] - before, 1, "... counted in spin_runq");
		tap_eq(sl_spin_claim(s, 2, 1u << 20, 200), -1,
		       "... and nobody of the stack spins for a while after");
		usleep(2500);
		tap_ok(sl_spin_claim(s, 2, 1u << 20, 200) >= 0, "a count with CPUs to spare lets it spin");
		sl_sys_sandboxed = true;
		usleep(1500);
		tap_ok(sl_spin_claim(s, 2, 0, 200) >= 0 && s->ctr->c[SL_C_spin_runq] - before == 1,
		       "a sandboxed process never counts (its filter may forbid the open)");
		sl_sys_sandboxed = false;
		fx_destroy(s);
	}

	if (sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < 2) {
		tap_ok(1, "wake-up timing # SKIP one CPU here: nothing to time across two");
		return tap_done();
	}
	ns = sl_wake_cost_ns();
	tap_ok(ns > 0 && ns < 50000000, "timed across two CPUs: %u ns", ns);

	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	tap_ok(!sched_setaffinity(0, sizeof(one), &one), "this process on one CPU");
	tap_eq(sl_wake_cost_ns(), 0, "then nothing is measured");
	sched_setaffinity(0, sizeof(all), &all);
	tap_ok(CPU_COUNT(&all) == (sched_getaffinity(0, sizeof(one), &one), CPU_COUNT(&one)),
	       "and its CPUs are given back");
	return tap_done();
}
