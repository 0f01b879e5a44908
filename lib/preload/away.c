// SPDX-License-Identifier: BSD-2-Clause
/*
 * The away timer's thread: one a process family (the process that
 * attached the stack first; its forked children arm the same timerfd),
 * asleep in read(2) of the timerfd run/away.c arms, running a turn of
 * the stack when a deadline comes that nobody else ran (lib/README.md,
 * "Timers while the program is away").  Every signal blocked; none in a
 * sandbox; paused around an exec (a thread killed inside the stack by
 * another's exec would leave the lock to a pid that lives on) and at
 * exit.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "preload.h"
#include "run/run.h"

static void *away_main(void *arg)
{
	struct sl_stack *s = arg;
	int fd = sl_tk_fd(s);
	uint64_t n;
	ssize_t r;

	for (;;) {
		r = sl_sys_read(fd, &n, sizeof(n));
		if (r != (ssize_t)sizeof(n)) {
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			break;	/* the fd is gone */
		}
		if (s->corrupt || sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN)
			break;
		if (!sl_load_acquire(&s->tk_off))
			sl_tk_fire(s);
	}
	return NULL;
}

void pl_away_start(struct sl_stack *s)
{
	pthread_t th;
	int ret;

	if (!pl_cfg.away || sl_sys_sandboxed || s->tk)
		return;
	ret = sl_tk_open(s);
	if (ret) {
		pl_debug("stack %s: no away timer (%s)", pl_cfg.stack, strerror(-ret));
		return;
	}
	ret = pl_thread_quiet(away_main, s, 64 * 1024, &th);
	if (ret) {
		/* Nobody reads it: arm nothing. */
		s->tk = NULL;
		pl_debug("stack %s: no away timer thread (%s)", pl_cfg.stack, strerror(ret));
		return;
	}
	pthread_setname_np(th, "sluice-timer");
}

/*
 * No turn of the thread's from here (an exec or the exit): one under way
 * ends before this returns, a later one sees the flag first.  Only in the
 * process whose thread it is; undone by pl_away_resume() (the exec failed).
 */
SL_FORKTEXT void pl_away_pause(struct sl_stack *s)
{
	if (!s || !sl_tk_mine(s))
		return;
	sl_store_release(&s->tk_off, true);
	if (!sl_lock(s))
		sl_unlock(s);
}

void pl_away_resume(struct sl_stack *s)
{
	if (s && sl_tk_mine(s))
		sl_store_release(&s->tk_off, false);
}
