// SPDX-License-Identifier: BSD-2-Clause
/*
 * The timer wheel: SLUICE_WHEEL_SLOTS slots of 1 ms, each a doubly linked
 * list of sockets (by index).  A socket has one deadline, its next
 * poll_at; deadlines beyond one turn of the wheel wait in their slot until
 * the wheel comes round to them.
 */
#include "proto/proto.h"

static uint32_t *slot_head(struct sl_stack *s, uint64_t ms)
{
	return s->wheel + (ms % SLUICE_WHEEL_SLOTS);
}

/* One socket off the wheel; the time the wheel went empty, if it did
 * (the clock, not the wheel's time, which lags while nobody runs it). */
static void wheel_dec(struct sl_stack *s)
{
	struct sl_region *r = s->lib;

	if (r->timers_armed && !--r->timers_armed)
		r->wheel_empty_ms = sl_now(s) / 1000;
}

static void wheel_insert(struct sl_stack *s, struct sl_sock *so)
{
	uint32_t *head = slot_head(s, so->wheel_due_ms);

	s->lib->timers_armed++;

	so->wheel_prev = SLUICE_IDX_NONE;
	so->wheel_next = *head;
	SL_KILL_POINT("timer_insert");
	if (sl_sock_some(s, *head))
		sl_sock(s, *head)->wheel_prev = so->idx;
	*head = so->idx;
}

void sl_timer_cancel(struct sl_stack *s, struct sl_sock *so)
{
	if (!so->wheel_due_ms)
		return;
	if (sl_sock_some(s, so->wheel_prev))
		sl_sock(s, so->wheel_prev)->wheel_next = so->wheel_next;
	else
		*slot_head(s, so->wheel_due_ms) = so->wheel_next;
	if (sl_sock_some(s, so->wheel_next))
		sl_sock(s, so->wheel_next)->wheel_prev = so->wheel_prev;
	so->wheel_next = so->wheel_prev = SLUICE_IDX_NONE;
	so->wheel_due_ms = 0;
	wheel_dec(s);
}

void sl_timer_set(struct sl_stack *s, struct sl_sock *so, uint64_t due_ms)
{
	/*
	 * A deadline that moves later keeps its earlier wheel entry: the
	 * socket is woken early and computes its next deadline then.  TCP
	 * pushes its retransmission deadline back on every ACK; this keeps
	 * that off the wheel (and off other sockets' list links).
	 */
	if (so->wheel_due_ms && so->wheel_due_ms <= due_ms &&
	    so->wheel_due_ms > s->lib->wheel_now_ms)
		return;
	sl_timer_cancel(s, so);
	/* Never in a slot the wheel has passed: the earliest is the next tick. */
	if (due_ms <= s->lib->wheel_now_ms)
		due_ms = s->lib->wheel_now_ms + 1;
	so->wheel_due_ms = due_ms;
	/*
	 * The turn's earliest, for the process's away timer (run/away.c):
	 * not one a fired timer sets again for another process's socket
	 * (its own process arms its deadlines; an idle worker that ran a
	 * busy pair's timers woke again for them: test_idle_beside_busy).
	 */
	if (due_ms - 1 < s->tk_due_ms - 1 &&
	    (!s->tk_in_run || so->owner_pid == (uint32_t)sl_self_pid()))
		s->tk_due_ms = due_ms;
	/* With no such timer yet, one is made only for this process's own
	 * sockets' deadlines (sl_tk_due()): note whether this is one. */
	if (!s->tk_own && !s->tk && so->owner_pid == (uint32_t)sl_self_pid())
		s->tk_own = true;
	/* The first deadline after a quiet second: sleepers may be
	 * sleeping past it (run/wait.c). */
	if (!s->lib->timers_armed &&
	    sl_now(s) / 1000 - s->lib->wheel_empty_ms >= SL_WHEEL_QUIET_MS)
		s->wake_all = true;
	wheel_insert(s, so);
}

int sl_timer_run(struct sl_stack *s, uint64_t now_us)
{
	uint64_t now_ms = now_us / 1000;
	struct sl_region *r = s->lib;
	/* Read once: the bounds below come from one value (two reads of a
	 * scribbled wheel_now_ms made a loop of up to 2^64 slots). */
	uint64_t start = SL_READ_ONCE(r->wheel_now_ms), ms, end;
	int fired = 0;

	if (now_ms <= start)
		return 0;
	s->tk_in_run = true;
	sl_tw_expire(s, now_us);
	/* A jump longer than a turn visits every slot once. */
	end = now_ms - start > SLUICE_WHEEL_SLOTS ? start + SLUICE_WHEEL_SLOTS : now_ms;
	for (ms = start + 1; ms <= end; ms++) {
		uint32_t *head = slot_head(s, ms);
		uint32_t idx = *head, pending = SLUICE_IDX_NONE, steps = 0;

		/* Most slots are empty: nothing to fire, nothing to move. */
		if (idx == SLUICE_IDX_NONE)
			continue;
		/* Detach the slot, then fire what is due and put back the rest. */
		*head = SLUICE_IDX_NONE;
		while (sl_sock_next(s, idx, &steps)) {
			struct sl_sock *so = sl_sock(s, idx);

			idx = so->wheel_next;
			so->wheel_next = pending;
			pending = so->idx;
			/* Off the wheel until put back (wheel_insert()). */
			wheel_dec(s);
		}
		r->wheel_now_ms = ms == end ? now_ms : ms;
		SL_KILL_POINT("timer_run");
		steps = 0;
		while (sl_sock_next(s, pending, &steps)) {
			struct sl_sock *so = sl_sock(s, pending);

			pending = so->wheel_next;
			if (so->wheel_due_ms <= now_ms) {
				so->wheel_due_ms = 0;
				so->wheel_next = so->wheel_prev = SLUICE_IDX_NONE;
				fired++;
				if (so->type == SL_SOCK_TCP && sl_sock_sane(s, so)) {
					sl_sock_busy(s, so);
					sl_tcp_timer(s, so, now_us);
				}
			} else {
				wheel_insert(s, so);
			}
		}
	}
	r->wheel_now_ms = now_ms;
	s->tk_in_run = false;
	/* Fragments and learnt path MTUs past their time (proto/ip.c). */
	if (now_ms >= r->ip_expire_ms) {
		r->ip_expire_ms = now_ms + 1000;
		sl_ip_expire(s);
		/* Memory a load no longer uses, given back (sock.c, buf.c). */
		sl_sock_trim(s);
		sl_buf_trim(s);
	}
	return fired;
}

void sl_timer_rebase(struct sl_stack *s, uint64_t now_ms)
{
	struct sl_region *r = s->lib;
	uint64_t old = r->wheel_now_ms;

	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);
		uint64_t due = so->wheel_due_ms;

		if (so->type == SL_SOCK_FREE || !due)
			continue;
		sl_timer_cancel(s, so);
		r->wheel_now_ms = now_ms;
		sl_timer_set(s, so, due > old ? now_ms + (due - old) : now_ms + 1);
		r->wheel_now_ms = old;
	}
	r->wheel_now_ms = now_ms;
}
