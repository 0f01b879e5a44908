// SPDX-License-Identifier: BSD-2-Clause
/*
 * Timers while the program is away (run.h; lib/README.md, "Timers while
 * the program is away"): a timerfd of the process, armed by the thread
 * that ends a turn which set a deadline earlier than the one it is set
 * for, and read by one thread of the process (the preload's: the module
 * path's hand-off agent, or a thread made for it when first needed),
 * which runs the turn nobody else ran.  Arming wakes nobody: one
 * timerfd_settime(2) on a deadline-earlier transition, none a packet.
 */
#include <errno.h>
#include <stdlib.h>

#include "os/os.h"
#include "run/run.h"

/*
 * The process's timer, in its own memory: a forked child does not touch
 * it (no page of it faulted in, no call on it), and makes one of its own
 * only if it needs one (sl_tk_due()).
 */
struct sl_tk {
	/* The deadline (wheel ms) the timerfd is set for, 0: none.  One
	 * the wheel has passed (wheel_now_ms >= it) was run by whoever
	 * moved the wheel, and counts as none. */
	uint64_t armed_ms;
	int fd;
};

/* A fire that found the lock held tries again this much later (the
 * holder's turn may be one that runs no timers: a send, a close). */
#define TK_RETRY_MS	5

bool sl_tk_mine(struct sl_stack *s)
{
	return SL_READ_ONCE(s->tk) && s->tk_pid == (int32_t)sl_self_pid();
}

int sl_tk_open(struct sl_stack *s)
{
	struct sl_tk *tk = SL_READ_ONCE(s->tk);
	int fd;

	if (sl_tk_mine(s))
		return 0;
	/* A forked child's copy of its parent's: its fd goes (the parent
	 * keeps the timer open), the memory is the child's to reuse. */
	if (tk) {
		SL_WRITE_ONCE(s->tk, NULL);
		sl_sys_close(tk->fd);
	} else {
		tk = calloc(1, sizeof(*tk));
		if (!tk)
			return -ENOMEM;
	}
	fd = sl_sys_timerfd_create(false);
	if (fd < 0) {
		int err = -errno;

		free(tk);
		return err;
	}
	tk->fd = sl_sys_fd_high(fd);
	tk->armed_ms = 0;
	s->tk_pid = (int32_t)sl_self_pid();
	/* Release: the fields before the pointer (other threads arm). */
	sl_store_release(&s->tk, tk);
	return 0;
}

void sl_tk_drop(struct sl_stack *s)
{
	struct sl_tk *tk = SL_READ_ONCE(s->tk);

	if (!sl_tk_mine(s))
		return;
	/* (Another thread may be arming it: the memory stays.) */
	SL_WRITE_ONCE(s->tk, NULL);
	sl_sys_close(tk->fd);
}

int sl_tk_fd(struct sl_stack *s)
{
	return sl_tk_mine(s) ? s->tk->fd : -1;
}

/* Set the timerfd to ring at due_ms (wheel ms, the stack's clock). */
static void tk_set(struct sl_stack *s, struct sl_tk *tk, uint64_t due_ms)
{
	uint64_t now = s->clock(s->clock_arg), at = due_ms * 1000;

	sl_sys_timerfd_set_ns(tk->fd, at > now ? (at - now) * 1000 : 1);
}

void sl_tk_arm(struct sl_stack *s, uint64_t due_ms)
{
	struct sl_tk *tk = SL_READ_ONCE(s->tk);
	uint64_t cur, ran;

	/* A filter may not know timerfd_settime: the keeper's way alone.
	 * A timer the process inherited is its parent's. */
	if (!tk || s->tk_pid != (int32_t)sl_self_pid() || sl_sys_sandboxed)
		return;
	cur = SL_READ_ONCE(tk->armed_ms);
	ran = SL_READ_ONCE(s->lib->wheel_now_ms);
	do {
		/* Set for an earlier deadline the wheel has not passed. */
		if (cur && cur <= due_ms && cur > ran)
			return;
	} while (!sl_cmpxchg(&tk->armed_ms, &cur, due_ms));
	for (;;) {
		tk_set(s, tk, due_ms);
		/* Another thread of the process armed an earlier one between
		 * our swap and our set, and its set may have come first. */
		cur = SL_READ_ONCE(tk->armed_ms);
		if (!cur || cur >= due_ms)
			break;
		due_ms = cur;
	}
}

/* The first wheel slot with an entry after the wheel's time, or 0 (held). */
static uint64_t tk_next(struct sl_stack *s)
{
	uint64_t from = s->lib->wheel_now_ms + 1;

	if (!s->lib->timers_armed)
		return 0;
	for (uint64_t ms = from; ms < from + SLUICE_WHEEL_SLOTS; ms++)
		if (s->wheel[ms % SLUICE_WHEEL_SLOTS] != SLUICE_IDX_NONE)
			return ms;
	return from + SLUICE_WHEEL_SLOTS;	/* beyond a turn: look then */
}

/*
 * Does another thread keep the timers now: a keeper's claim (wait.c) of
 * a thread that is not this one, which runs the stack or sleeps until
 * the wheel's next deadline?
 */
static bool tk_kept(struct sl_stack *s, uint64_t now_ms)
{
	uint64_t k = SL_READ_ONCE(s->lib->keeper);

	return (uint32_t)k != sl_keeper_token() && (int32_t)((uint32_t)(k >> 32) - (uint32_t)now_ms) > 0;
}

/*
 * The keeper's place this thread's turn took (sl_run(), sl_keeper_ran()),
 * given up: a claim is a promise to run the stack or to sleep until its
 * next deadline, and this thread wakes only for what its timer was armed
 * with.  Kept, a sleeper that set a later deadline took it for a keeper
 * that wakes first and slept 100 ms past it (test_small_writes' late
 * rounds: 5-6 in 240 against the kernel's 0-2).
 */
static void tk_unclaim(struct sl_stack *s, uint64_t now_ms)
{
	uint64_t k = SL_READ_ONCE(s->lib->keeper);

	if ((uint32_t)k == sl_keeper_token())
		sl_cmpxchg(&s->lib->keeper, &k, (uint64_t)(uint32_t)now_ms << 32);
}

static void tk_turn(struct sl_stack *s);

/*
 * After a turn that set deadlines, the earliest due_ms: armed, if the
 * process has a timer.  Without one, a thread is made for it (s->tk_start,
 * the preload's) only when the deadline is for a socket this process made
 * and no other thread keeps the timers: a process that never leaves such
 * a deadline behind stays single-threaded (a forked child of a
 * multi-threaded parent costs about 14 page faults more, issue 18).  A
 * forking server's children serve sockets their parent made, and sleep
 * in the stack, keepers while they do: none of them needs one, and the
 * timer they inherit is not theirs to arm (sl_tk_arm()).
 */
void sl_tk_due(struct sl_stack *s, uint64_t due_ms, bool own)
{
	if (!sl_tk_mine(s)) {
		if (!own || !s->tk_start || sl_sys_sandboxed ||
		    tk_kept(s, SL_READ_ONCE(s->lib->wheel_now_ms)))
			return;
		s->tk_start(s);
		if (!sl_tk_mine(s))
			return;
	}
	sl_tk_arm(s, due_ms);
}

void sl_tk_ring_other(struct sl_stack *s)
{
	if (!sl_trylock(s))
		return;
	sl_run(s);
	sl_unlock(s);
}

/*
 * A ring of the timer: a turn unless an exec or the exit is under way.
 * tk_busy then tk_off, as pl_away_pause() stores tk_off then reads
 * tk_busy (a full barrier between, on both sides): one of the two sees
 * the other.
 */
void sl_tk_fire(struct sl_stack *s)
{
	SL_WRITE_ONCE(s->tk_busy, true);
	sl_smp_mb();	/* the store before the load */
	if (!SL_READ_ONCE(s->tk_off))
		tk_turn(s);
	/* Release: the turn's stores before the pause sees it end. */
	sl_store_release(&s->tk_busy, false);
}

static void tk_turn(struct sl_stack *s)
{
	struct sl_tk *tk = SL_READ_ONCE(s->tk);
	uint64_t now_ms = s->clock(s->clock_arg) / 1000, cur, next;

	if (!tk)
		return;
	cur = SL_READ_ONCE(tk->armed_ms);
	/* Set again for later since it rang: it will ring then. */
	if (!cur || cur > now_ms || !sl_cmpxchg(&tk->armed_ms, &cur, 0))
		return;
	/* Another thread moved the wheel past the deadline and keeps the
	 * timers: nothing to do (an idle thread beside a busy pair must
	 * not wake for the pair's deadlines: test_idle_beside_busy). */
	if (SL_READ_ONCE(s->lib->wheel_now_ms) >= cur && tk_kept(s, now_ms))
		return;
	if (!sl_trylock(s)) {
		/* The holder runs them if its turn does; look again. */
		sl_tk_arm(s, now_ms + TK_RETRY_MS);
		return;
	}
	sl_run(s);
	/* Nobody runs the stack: this thread keeps its timers until
	 * someone does (the wheel's next deadline, whoever set it). */
	next = tk_next(s);
	sl_unlock(s);
	if (next)
		sl_tk_arm(s, next);
	tk_unclaim(s, now_ms);
}
