// SPDX-License-Identifier: BSD-2-Clause
/*
 * holdlock STACK: attach to a stack, take its lock and stop (SIGSTOP)
 * holding it; when continued, let go and exit 0.  For the tests of a
 * stopped lock holder (tests/host/test_stopped_holder.sh).
 *
 * holdlock STACK corrupt: take the lock and find the region corrupt (as a
 * process that read an impossible value would): the stack is BROKEN for
 * good (tests/host/test_reclaim.sh).
 *
 * holdlock STACK churn SECONDS: take the lock, hold it about 100 us, let
 * go, again, for SECONDS (stopped and continued meanwhile by
 * tests/host/test_stopped_holder.sh: a SIGSTOP storm).
 *
 * holdlock STACK killholder N SPARE SECONDS: watch the lock word, and
 * SIGKILL whichever process holds it (but never pid SPARE), stopped with
 * the lock held (killholder()), until N of
 * them died still holding it or SECONDS passed; print "killed K holders,
 * H died holding the lock" (tests/host/test_killsoak.sh), and on stderr a
 * line a kill (wall-clock time, pid).
 */
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wall-clock time, for the test's log of kills. */
static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Deaths with the lock held so far: recoveries made since rec0, and the
 * one still waiting for its recovery if the word names a dead process. */
static long held_deaths(struct sl_stack *s, uint64_t rec0)
{
	uint32_t v = __atomic_load_n(&s->r->lock, __ATOMIC_ACQUIRE);
	long n = (long)(sl_counter_sum(s, SL_C_lock_recovered) - rec0);

	if ((v & SLUICE_LOCK_HELD) && sl_pid_dead((pid_t)(v >> SLUICE_LOCK_PID_SHIFT)))
		n++;
	return n;
}

/*
 * A holder is stopped first and killed only if, stopped, it still holds
 * the lock: a SIGKILL sent to a running holder lands microseconds later,
 * after it let go more often than not (on a 2-core machine with the
 * stack's processes running, none of 5,000 kills sent that way died
 * holding it).  One that let go before it stopped is continued.  The
 * next is looked for once the stack is back from the death (a recovery
 * takes the lock too, and killing each recoverer in turn left the stack
 * without one for the whole run).
 */
static int killholder(struct sl_stack *s, long n, pid_t spare, double seconds)
{
	uint64_t rec0 = sl_counter_sum(s, SL_C_lock_recovered);
	pid_t self = getpid();
	long killed = 0, held = 0, missed = 0;
	double t;

	for (double end = now_s() + seconds; held < n && now_s() < end;) {
		struct timespec nap = { 0, 20 * 1000 * 1000 }, look = { 0, 20 * 1000 };
		uint32_t v = __atomic_load_n(&s->r->lock, __ATOMIC_RELAXED);
		pid_t owner = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);

		if (!(v & SLUICE_LOCK_HELD) || owner <= 0 || owner == spare || owner == self) {
			nanosleep(&look, NULL);
			continue;
		}
		if (kill(owner, SIGSTOP))
			continue;
		for (int i = 0; i < 500 && !sl_pid_stopped(owner) && !sl_pid_dead(owner); i++)
			nanosleep(&look, NULL);
		v = __atomic_load_n(&s->r->lock, __ATOMIC_ACQUIRE);
		if (!(v & SLUICE_LOCK_HELD) || (pid_t)(v >> SLUICE_LOCK_PID_SHIFT) != owner ||
		    kill(owner, SIGKILL)) {
			kill(owner, SIGCONT);
			missed++;
			continue;
		}
		killed++;
		t = wall_s();
		/* Let the others go on: until the stack is back (the next
		 * holder killed mid-recovery, and the next, the stack would
		 * never be), at most 5 s. */
		for (int i = 0; i < 250 && sl_counter_sum(s, SL_C_lock_recovered) - rec0 < (uint64_t)killed;
		     i++)
			nanosleep(&nap, NULL);
		held = held_deaths(s, rec0);
		fprintf(stderr, "%.6f killholder %d (%ld died holding so far, back %.3f s later)\n",
			t, (int)owner, held, wall_s() - t);
	}
	printf("killed %ld holders, %ld died holding the lock (%ld let go before they stopped)\n",
	       killed, held_deaths(s, rec0), missed);
	return 0;
}

int main(int argc, char **argv)
{
	struct sluice_stack *st;
	int ret;

	if (argc != 2 && !(argc == 3 && !strcmp(argv[2], "corrupt")) &&
	    !(argc == 4 && !strcmp(argv[2], "churn")) &&
	    !(argc == 6 && !strcmp(argv[2], "killholder")))
		return 2;
	ret = sluice_stack_attach(argv[1], &st);
	if (ret) {
		fprintf(stderr, "holdlock: attach %s: %d\n", argv[1], ret);
		return 1;
	}
	if (argc == 4) {
		for (double end = now_s() + atof(argv[3]); now_s() < end;) {
			double t0;

			if (sl_lock((struct sl_stack *)st))
				return 1;
			for (t0 = now_s(); now_s() < t0 + 100e-6;)
				;
			sl_unlock((struct sl_stack *)st);
			for (t0 = now_s(); now_s() < t0 + 20e-6;)
				;
		}
		return 0;
	}
	if (argc == 6)
		return killholder((struct sl_stack *)st, atol(argv[3]), (pid_t)atol(argv[4]),
				  atof(argv[5]));
	if (sl_lock((struct sl_stack *)st))
		return 1;
	if (argc == 3) {
		sl_corrupt((struct sl_stack *)st, SL_C_corrupt_header, 0);
		sl_unlock((struct sl_stack *)st);
		return 0;
	}
	raise(SIGSTOP);
	sl_unlock((struct sl_stack *)st);
	sluice_stack_close(st);
	return 0;
}
