// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs link's receive buffers and process death (lib/link/verbs.c),
 * no device needed: a process killed with buffers posted to its receive
 * queue leaves them marked with its pid; the next link set up on the stack
 * takes them back (sl_verbs_reclaim()), and only them: not a live
 * process's, not our own, not a buffer that merely looks similar.
 */
#include <signal.h>
#include <sys/wait.h>

#include "link/verbs.h"
#include "stack_fixture.h"

/* The pid of a process that existed and is gone (reaped). */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return p;
}

static void test_reclaim_dead_poster(void)
{
	struct sl_stack *s = fx_stack("vbuf", "10.0.0.1", NULL);
	uint32_t dead[8], mine[4], live[4], odd, free0;
	pid_t gone = dead_pid(), parent = getppid();
	unsigned int n;

	sl_lock(s);
	free0 = s->lib->buf_free_count;
	for (int i = 0; i < 8; i++) {
		dead[i] = sl_buf_alloc(s);
		sl_verbs_buf_mark(s, dead[i], gone);
	}
	for (int i = 0; i < 4; i++) {
		mine[i] = sl_buf_alloc(s);
		sl_verbs_buf_mark(s, mine[i], sl_self_pid());
		live[i] = sl_buf_alloc(s);
		sl_verbs_buf_mark(s, live[i], parent);
	}
	/* A buffer with the flag but not the magic (some other owner's). */
	odd = sl_buf_alloc(s);
	sl_buf(s, odd)->flags = SL_VERBS_BUF_POSTED;
	sl_buf(s, odd)->ts_us = (uint64_t)gone;
	tap_eq(s->lib->buf_free_count, free0 - 17, "17 buffers taken from the pool");

	n = sl_verbs_reclaim(s);
	tap_eq(n, 8, "the dead process's 8 posted buffers are taken back");
	tap_eq(s->lib->buf_free_count, free0 - 9, "and are free again");
	tap_eq(sl_buf(s, dead[0])->flags, 0, "a reclaimed buffer is unmarked");
	tap_eq(sl_buf(s, mine[0])->flags, SL_VERBS_BUF_POSTED, "our own posted buffers stay");
	tap_eq(sl_buf(s, live[0])->flags, SL_VERBS_BUF_POSTED, "a live process's stay");
	tap_eq(sl_verbs_reclaim(s), 0, "a second pass finds nothing");

	/* A completion unmarks: the stack owns the buffer from then on. */
	sl_verbs_buf_unmark(s, live[1]);
	tap_ok(sl_buf(s, live[1])->flags == 0 && sl_buf(s, live[1])->aux == 0 &&
	       sl_buf(s, live[1])->ts_us == 0, "unmark clears flags, aux and pid");
	for (int i = 0; i < 4; i++) {
		sl_verbs_buf_unmark(s, mine[i]);
		sl_buf_free(s, mine[i]);
		sl_verbs_buf_unmark(s, live[i]);
		sl_buf_free(s, live[i]);
	}
	sl_buf(s, odd)->flags = 0;
	sl_buf_free(s, odd);
	tap_eq(s->lib->buf_free_count, free0, "leak check: every buffer back in the pool");
	sl_unlock(s);
	fx_destroy(s);
}

int main(void)
{
	test_reclaim_dead_poster();
	return tap_done();
}
