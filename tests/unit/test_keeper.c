// SPDX-License-Identifier: BSD-2-Clause
/*
 * The timer keeper (run/wait.c, lib/README.md "Waiting"): while a
 * deadline is on the wheel, exactly one thread of the stack keeps it: a
 * sleeper that sleeps until it, or a thread whose turns run the wheel.
 * Threads of one process stand for processes here (each has its own
 * keeper token); the clock is the fixture's, moved by hand, and each
 * thread asks how long it would sleep (sl_wait_bound_ms()) where it
 * would go to sleep.
 *
 *   actor A ---+                +--- actor B
 *              +-- one stack ---+
 *   main: a deadline on the wheel, the clock
 */
#include <pthread.h>
#include <semaphore.h>

#include "stack_fixture.h"

/* A thread that runs the steps it is given, one at a time. */
struct actor {
	pthread_t t;
	sem_t go, done;
	void (*fn)(struct actor *a);
	struct sl_stack *s;
	int bound;
};

static void *actor_main(void *arg)
{
	struct actor *a = arg;

	for (;;) {
		sem_wait(&a->go);
		if (!a->fn)
			return NULL;
		a->fn(a);
		sem_post(&a->done);
	}
}

static void actor_start(struct actor *a, struct sl_stack *s)
{
	memset(a, 0, sizeof(*a));
	a->s = s;
	sem_init(&a->go, 0, 0);
	sem_init(&a->done, 0, 0);
	pthread_create(&a->t, NULL, actor_main, a);
}

static void actor_do(struct actor *a, void (*fn)(struct actor *a))
{
	a->fn = fn;
	sem_post(&a->go);
	if (fn)
		sem_wait(&a->done);
}

static void actor_stop(struct actor *a)
{
	actor_do(a, NULL);
	pthread_join(a->t, NULL);
	sem_destroy(&a->go);
	sem_destroy(&a->done);
}

/* A turn of the stack, as any call that takes the lock makes. */
static void turn(struct actor *a)
{
	sl_lock(a->s);
	sl_run(a->s);
	sl_unlock(a->s);
}

/* How long this thread would sleep now. */
static void ask(struct actor *a)
{
	a->bound = sl_wait_bound_ms(a->s);
}

/* A stack whose clock stands 1 ms past its wheel, a deadline in 40 ms on
 * the wheel (a delayed ACK's), and the deadline's time (ms). */
static struct sl_stack *keeper_stack(const char *tag, uint64_t *due_ms)
{
	struct sl_stack *s = fx_stack(tag, "10.0.0.1", NULL);
	int sd = sluice_socket((struct sluice_stack *)s, SLUICE_SOCK_DGRAM);

	fx_clock_us = (s->lib->wheel_now_ms + 1) * 1000;
	*due_ms = fx_clock_us / 1000 + 40;
	sl_lock(s);
	sl_timer_set(s, sl_sock(s, (uint32_t)sd), *due_ms);
	sl_unlock(s);
	return s;
}

/*
 * Two processes both run the stack (each turn moves the wheel), 1 ms
 * apart, then both go to sleep: one of them must wake for the deadline,
 * and only one.  Before, each took the other's turn in the last 10 ms
 * for a promise to run the timers, and both slept 100 ms.
 */
static void test_two_runners_then_both_sleep(bool b_first)
{
	struct actor a, b;
	uint64_t due;
	struct sl_stack *s = keeper_stack(b_first ? "keep2b" : "keep2a", &due);
	int left;

	actor_start(&a, s);
	actor_start(&b, s);
	actor_do(&a, turn);
	fx_clock_us += 1000;
	actor_do(&b, turn);
	fx_clock_us += 1000;
	left = (int)(due - fx_clock_us / 1000);
	actor_do(b_first ? &b : &a, ask);
	actor_do(b_first ? &a : &b, ask);
	printf("# both ran, %s asked first: A %d ms, B %d ms, deadline in %d ms\n",
	       b_first ? "B" : "A", a.bound, b.bound, left);
	tap_ok((a.bound <= left) + (b.bound <= left) == 1,
	       "two runners then both asleep (%s first): exactly one wakes by the deadline "
	       "(A %d ms, B %d ms, deadline in %d)", b_first ? "B" : "A", a.bound, b.bound, left);
	actor_stop(&a);
	actor_stop(&b);
	fx_destroy(s);
}

/*
 * A keeper asleep for the deadline, and nobody runs: a second sleeper
 * that comes later does not wake for it too.
 */
static void test_sleeping_keeper_holds(void)
{
	struct actor a, b;
	uint64_t due;
	struct sl_stack *s = keeper_stack("keep3", &due);

	actor_start(&a, s);
	actor_start(&b, s);
	actor_do(&a, turn);
	actor_do(&a, ask);
	fx_clock_us += 20000;
	actor_do(&b, ask);
	tap_ok(a.bound <= 40 && b.bound == 100,
	       "a sleeping keeper holds: it wakes by the deadline (%d ms), a later sleeper "
	       "does not (%d ms)", a.bound, b.bound);
	actor_stop(&a);
	actor_stop(&b);
	fx_destroy(s);
}

/*
 * A busy thread runs the stack every millisecond while another sleeps:
 * the sleeper is not the keeper (the busy one's turns run the timers),
 * so it sleeps the spare 100 ms.  Once the busy one has stopped running
 * for longer than its hold, the next sleeper keeps the deadline.
 */
static void test_busy_runner_keeps(void)
{
	struct actor p, w;
	uint64_t due;
	struct sl_stack *s = keeper_stack("keep4", &due);
	int idle_bound = 0, left;

	actor_start(&p, s);
	actor_start(&w, s);
	for (int ms = 0; ms < 20; ms++) {
		actor_do(&p, turn);
		if (ms == 5 || ms == 15) {
			actor_do(&w, ask);
			if (w.bound > idle_bound)
				idle_bound = w.bound;
		}
		fx_clock_us += 1000;
	}
	tap_ok(idle_bound == 100,
	       "beside a thread that runs the stack every ms, a sleeper sleeps 100 ms (%d)",
	       idle_bound);
	fx_clock_us += 11000;	/* the busy one went back to its program */
	left = (int)(due - fx_clock_us / 1000);
	actor_do(&w, ask);
	tap_ok(w.bound <= left,
	       "once it stopped running the stack, the next sleeper keeps the deadline "
	       "(%d ms, deadline in %d)", w.bound, left);
	actor_stop(&p);
	actor_stop(&w);
	fx_destroy(s);
}

/*
 * A sleeping keeper, then a thread that runs the stack every ms: the
 * runner takes the place, so the keeper, once it woke as planned, sleeps
 * the spare 100 ms beside it and does not wake for the runner's
 * deadlines.  Before, the keeper kept it while it slept again and again.
 */
static void test_runner_takes_from_sleeper(void)
{
	struct actor k, p;
	uint64_t due;
	struct sl_stack *s = keeper_stack("keep5", &due);

	actor_start(&k, s);
	actor_start(&p, s);
	actor_do(&k, ask);
	tap_ok(k.bound <= 40, "an idle sleeper keeps the deadline while nobody runs (%d ms)",
	       k.bound);
	for (int ms = 0; ms < 5; ms++) {
		actor_do(&p, turn);
		fx_clock_us += 1000;
	}
	actor_do(&k, ask);
	tap_ok(k.bound == 100, "a thread that runs the stack every ms takes the place: "
	       "the sleeper, awake again, sleeps 100 ms (%d)", k.bound);
	actor_stop(&k);
	actor_stop(&p);
	fx_destroy(s);
}

int main(void)
{
	test_two_runners_then_both_sleep(false);
	test_two_runners_then_both_sleep(true);
	test_sleeping_keeper_holds();
	test_busy_runner_keeps();
	test_runner_takes_from_sleeper();
	return tap_done();
}
