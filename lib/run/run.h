/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * run/: the run loop, the one place the stack is driven from.  Whoever
 * holds the lock runs it; there is no thread of the stack's own.
 *
 *   sl_lock()                        core/: take the stack lock
 *   sl_run()                         the links' input, then due timers
 *     ... the caller's own work on its sockets (api/, preload/) ...
 *   sl_unlock()                      the end of the turn:
 *       sockets whose last socket fd went are closed
 *       packets for the stack itself are delivered (loopback, budgeted)
 *       readiness for socket fds is published
 *       what the holder queued on the link leaves in one batch
 *       the lock is released (one lock waiter woken)
 *       armed socket-fd pollers and sleepers are woken
 *
 * Waiting (wait.c): a blocking call spins (sl_run_poll()) for the stack's
 * spin time, then sleeps in sl_wait_sleep() until something may have
 * changed.
 */
#ifndef SLUICE_RUN_H
#define SLUICE_RUN_H

#include "proto/proto.h"

/* One round of the stack's own work, lock held: input from the link (at
 * most a budget of frames), then every timer due.  Returns the work done. */
int sl_run(struct sl_stack *s);
/* The end of a turn that held the lock (see above); never fails. */
void sl_unlock(struct sl_stack *s);
/*
 * Run the stack if it may have work (a link to read, loopback packets
 * left over, a timer tick passed) and nobody holds it (a holder runs it
 * already).  Cheap enough to call in every spin.  Returns the work done,
 * or the broken stack's error.
 */
int sl_run_poll(struct sl_stack *s);

/* wait.c */
/* A spinning caller that found nothing backs off this long (calibrated). */
void sl_wait_backoff(void);
/* Calibrate that now (once a process, inherited by fork()): a forking
 * server does it before it forks, not each child at its first spin. */
void sl_wait_calibrate(void);
/* What a wake-up costs here, nanoseconds (futex hand-offs between two
 * threads on two CPUs, measured now: a few milliseconds); 0 if it cannot
 * be (one CPU, no thread). */
unsigned int sl_wake_cost_ns(void);
/*
 * The spin time a wake-up's cost buys: two and a half wake-ups (a sleep
 * costs the waker's wake-up, the sleeper's way back out and the cache it
 * comes back to; measured, lib/README.md "Waiting"), at least
 * SL_SPIN_MIN_US, at most SL_SPIN_MAX_US.
 */
#define SL_SPIN_MIN_US	10
#define SL_SPIN_MAX_US	200
static inline unsigned int sl_spin_budget_us(unsigned int wake_cost_ns)
{
	unsigned int us = (unsigned int)(((uint64_t)wake_cost_ns * 5 / 2 + 999) / 1000);

	return us < SL_SPIN_MIN_US ? SL_SPIN_MIN_US : us > SL_SPIN_MAX_US ? SL_SPIN_MAX_US : us;
}
/* Does a sleeper of this process sleep in poll on the stack fd (module
 * stacks), rather than on the region's futex? */
bool sl_wait_on_fd(struct sl_stack *s);
/* The module's wake sequence of a module-backed stack, read before the
 * last look at readiness (sl_wait_sleep() arms with it). */
uint32_t sl_wait_seq(struct sl_stack *s);
/*
 * Sleep until something may have changed, or deadline (microseconds of
 * sl_now(), -1: none).  seq: word's value (a wait channel's seq; NULL:
 * the region's wake_seq), or on_fd the module's sequence, read before the
 * caller's last look at readiness.
 */
void sl_wait_sleep(struct sl_stack *s, int64_t deadline, uint32_t seq, bool on_fd,
		   uint32_t *word);
/*
 * A sleep on several wait channels at once (a poll of sockets on a few
 * channels): one futex_waitv(2) on each channel's seq, each with the value
 * read at the last look, so a change on any of them ends it, and changes
 * on other channels do not.  Where the kernel has no futex_waitv (before
 * 5.16) or in a sandbox (a filter may not know it), sl_waitv_ok is false
 * and such sleeps go to the stack's wake_seq as before.
 */
#define SL_WAITV_MAX	8
extern bool sl_waitv_ok;
void sl_wait_sleep_v(struct sl_stack *s, int64_t deadline, uint32_t *const *words,
		     const uint32_t *vals, unsigned int n);
/* How long a sleeper with nobody to wake it for the stack's timers may
 * sleep at most now: the timer keeper until the wheel's next deadline,
 * the others 100 ms while timers are armed; a second when none are. */
int sl_wait_bound_ms(struct sl_stack *s);
/* This thread's token (its pid and a number), as the timer keeper
 * (sl_region.keeper). */
uint32_t sl_keeper_token(void);
/* A turn of this thread moved the wheel to now_us: it keeps the timers
 * while it runs the stack (the keeper's place, unless another holds it). */
void sl_keeper_ran(struct sl_stack *s, uint64_t now_us);
/*
 * Timers while the program is away (run/away.c): sl_tk_open() makes the
 * process's timerfd (s->tk; a forked child's copy is its parent's, not
 * its own: sl_tk_mine()), sl_tk_fd() its fd for the thread that reads it,
 * which calls sl_tk_fire() at each expiry; sl_tk_arm() sets it for
 * due_ms (wheel ms) if that is earlier than what it is set for, or that
 * has passed.  sl_unlock() calls sl_tk_due() with the earliest deadline
 * of the turn (own: one was a socket's this process made), which arms it,
 * or with no timer yet has s->tk_start make one first when that deadline
 * is the process's own and no other thread keeps the timers.
 */
int sl_tk_open(struct sl_stack *s);
void sl_tk_drop(struct sl_stack *s);	/* made, but nobody will read it */
int sl_tk_fd(struct sl_stack *s);
bool sl_tk_mine(struct sl_stack *s);
void sl_tk_arm(struct sl_stack *s, uint64_t due_ms);
void sl_tk_due(struct sl_stack *s, uint64_t due_ms, bool own);
void sl_tk_fire(struct sl_stack *s);
/* A ring of another process's timer that this one took (a forked child's
 * watcher, sharing its parent's epoll set): a turn, if the lock is free. */
void sl_tk_ring_other(struct sl_stack *s);
/* A slot to spin in for spin_us, among the first cap of the stack's
 * (sl_region.spin_until): its index, or -1 (as many spin already, or
 * runnable threads outnumber the machine's cpus: sleep at once).
 * sl_spin_release() gives it back early. */
int sl_spin_claim(struct sl_stack *s, unsigned int cap, unsigned int cpus, unsigned int spin_us);
/* A spinner's clock between two looks (last_us, now_us): a long gap stops
 * the stack's spins for a while (runnable threads outnumber the CPUs). */
void sl_spin_gap(struct sl_stack *s, uint64_t last_us, uint64_t now_us);
void sl_spin_release(struct sl_stack *s, int slot);

/*
 * Bells (run/bell.c): waking a thread asleep in the kernel on Sluice and
 * kernel fds at once.  sl_bell_name() fills the abstract name of pid's
 * thread tid's bell; sl_bell_register() enters it for wait channel chan
 * (or SL_BELL_ANY, or SL_BELL_X | a socket: one of that socket's exclusive
 * waiters) before the caller's last look at readiness, returning
 * the entry (and *gen) or -1 (all taken); sl_bell_unregister() ends it.
 * sl_bell_ring_pending() rings, after unlock, the bells of the channels a
 * turn changed (all of them with all).  sl_bell_tx_fd(): the process's
 * sending socket, or -1 (the library's own fd).
 */
struct sockaddr_un;
socklen_t sl_bell_name(struct sockaddr_un *a, uint32_t pid, uint32_t tid);
int sl_bell_register(struct sl_stack *s, uint32_t chan, uint32_t pid, uint32_t tid,
		     uint32_t *gen);
void sl_bell_unregister(struct sl_stack *s, int i, uint32_t gen);
void sl_bell_ring_pending(struct sl_stack *s, bool all);
/* After unlock: one exclusive bell of socket idx (SL_BELL_X), the first
 * registered whose name is there, or every one with all. */
void sl_bell_ring_excl(struct sl_stack *s, uint32_t idx, bool all);
/* Async bells (O_ASYNC): after unlock, ring those of the sockets this
 * thread noted (sl_async_w); whether socket idx has one besides entry
 * except (-1: any). */
void sl_bell_ring_async(void);
bool sl_bell_async_any(struct sl_stack *s, uint32_t idx, int except);
/* The events of async bell entry i (generation gen) its ringers found no
 * room for, by si_code, taken (zeroed there). */
void sl_bell_async_take(struct sl_stack *s, int i, uint32_t gen, uint16_t lost[8]);
int sl_bell_tx_fd(void);
void sl_bell_tx_lost(void);	/* its number is being taken (dup2) */
/*
 * The futex word this thread is about to sleep on while a wait that a
 * signal must end is under way (sl_poll_signals()), or NULL.  A signal
 * handler that counts the signal bumps it (the preload's trampoline), so
 * a signal between the waiter's last look at its count and its futex wait
 * makes that wait return at once instead of sleeping through.
 */
extern __thread uint32_t *sl_wait_word;

#endif /* SLUICE_RUN_H */
