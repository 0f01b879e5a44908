// SPDX-License-Identifier: BSD-2-Clause
/*
 * The run loop (run.h has its picture): the links' input and the timers
 * at the start of a turn, and at its end everything the holder left for
 * others to see, before and after the lock is let go.
 */
#include "os/os.h"
#include "run/run.h"

int sl_run(struct sl_stack *s)
{
	uint64_t wheel = s->lib->wheel_now_ms;
	int n = 0;

	if (s->link && s->link->ops->rx)
		n += s->link->ops->rx(s->link, s, 64);
	n += sl_timer_run(s, sl_now_held(s));
	/* This thread runs the wheel: it keeps the timers while it does,
	 * so sleepers need not wake for them (wait.c, sl_keeper_ran()). */
	if (s->lib->wheel_now_ms != wheel)
		sl_keeper_ran(s, s->lib->wheel_now_ms * 1000);
	return n;
}

/* After the release: sleepers waiting for readiness this turn changed. */
static void wake_sleepers(struct sl_stack *s)
{
	s->wake_pending = false;
	/* Sleepers on a wait channel whose sockets changed ... */
	for (unsigned int i = 0; i < SL_WQ_ALL / 64; i++) {
		uint64_t m = s->wq_pending[i];

		s->wq_pending[i] = 0;
		while (m) {
			unsigned int c = i * 64 + (unsigned int)__builtin_ctzll(m);

			m &= m - 1;
			sl_wake_word(&s->lib->wq[c].seq);
		}
	}
	/* ... one exclusive sleeper (accept(), an epoll set) of each socket
	 * noted: on its futex word, else a mixed set's bell ... */
	for (unsigned int i = 0; i < s->xwake_n; i++)
		if (s->xwake[i] < s->max_sockets &&
		    sl_wake_word_n(&sl_sock(s, s->xwake[i])->xseq, 1) == 0)
			sl_bell_ring_excl(s, s->xwake[i], false);
	s->xwake_n = 0;
	/* ... the bells of mixed sleepers (poll, epoll) ... */
	sl_bell_ring_pending(s, false);
	/* ... and those on the stack's futex (wait.c), if any. */
	if (s->futex_ok && s->wake_global)
		sl_wake_sleepers(s);
	s->wake_global = false;
	/* Sleepers in poll on a stack fd: they watch a link fd too, or the
	 * module's regions take no futex. */
	if (s->wake_poll && s->module_backed) {
		struct sluice_stack_wake w = {
			.size = sizeof(w), .flags = SLUICE_WAKE_SIGNAL,
		};

		sl_sys_ioctl(s->region_fd, SLUICE_IOC_STACK_WAKE, &w);
	}
	s->wake_poll = false;
}

void sl_unlock(struct sl_stack *s)
{
	unsigned int budget = SL_LO_BUDGET;
	uint64_t tk_due;
	bool lo_left, tk_own;

	/* connect()s queued while a holder was stopped, and the pool that
	 * socket() takes slots from without the lock (proto/sock.c). */
	if (!s->corrupt) {
		sl_sock_pending_run(s);
		if (__builtin_expect(SL_READ_ONCE(s->lib->ready_want) != 0, 0))
			sl_sock_ready_fill(s);
	}
	/* The holder's operations are done: what follows names its own
	 * sockets (sl_sock_busy()). */
	s->lib->busy[0] = s->lib->busy[1] = 0;
	/* Sockets whose last socket fd went (a killed process's too). */
	if (s->module_backed)
		sl_ksock_reap(s);
	/* Packets for the stack itself; delivering them may queue more, so
	 * again while any budget is left.  What is left waits for the next
	 * holder: no loop of packets begetting packets keeps us here. */
	do {
		/* A corrupt stack runs nothing more: let go, and wake every
		 * waiter and sleeper to find it broken (sl_lock()). */
		if (s->corrupt) {
			sl_lock_release_broken(s);
			return;
		}
		lo_left = sl_stack_drain_loopback(s, &budget);
	} while (lo_left && budget);
	if (lo_left)
		sl_count(s, SL_C_loopback_left);
	/* Readiness of sockets with socket fds, for their pollers. */
	if (s->kp_n)
		sl_kp_publish_noted(s);
	/* What this holder queued on the link leaves in one batch, before
	 * the next holder can queue behind it. */
	if (s->link && s->link->tx_pending && s->link->ops->flush)
		s->link->ops->flush(s->link, s);
	/* The turn's earliest new deadline, for the away timer (away.c). */
	tk_due = s->tk_due_ms;
	tk_own = s->tk_own;
	s->tk_due_ms = 0;
	s->tk_own = false;
	sl_lock_release(s);
	if (tk_due)
		sl_tk_due(s, tk_due, tk_own);
	/* One SOCK_WAKE for every armed socket fd this holder changed. */
	if (__builtin_expect(sl_kp_w.n != 0, 0))
		sl_kp_wake_flush();
	/* Owners of O_ASYNC sockets this holder changed: signalled by the
	 * kernel, through their async bells. */
	if (__builtin_expect(sl_async_w.n != 0, 0))
		sl_bell_ring_async();
	if (s->wake_pending)
		wake_sleepers(s);
	/* An idle stack's first deadline, or a recovery: every sleeper looks
	 * again. */
	if (__builtin_expect(s->wake_all, 0)) {
		s->wake_all = false;
		if (s->futex_ok && (SL_READ_ONCE(s->r->sleepers) ||
				    SL_READ_ONCE(s->lib->wq_sleepers)))
			sl_wake_everyone(s);
		sl_bell_ring_pending(s, true);
	}
}

int sl_run_poll(struct sl_stack *s)
{
	int n;

	/* Acquire: pairs with the release that marked it broken. */
	if (s->corrupt || sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN)
		return sl_broken_err(s);
	/* With no link and no loopback packets left over (sl_unlock()), only
	 * timers need running: look at the clock every 16th call (reading it
	 * costs more than the rest of a spin). */
	if (!s->link && SL_READ_ONCE(s->lib->lo_head) == SLUICE_IDX_NONE &&
	    ((++s->poll_calls & 15) || sl_now(s) / 1000 <= s->lib->wheel_now_ms))
		return 0;
	if (!sl_trylock(s))
		return 0;
	n = sl_run(s);
	sl_unlock(s);
	return n;
}
