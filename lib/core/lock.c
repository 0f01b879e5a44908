// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack lock: a futex word in the region shared by every process that
 * runs the stack.  Taking it is here; the end of a turn that held it (run
 * what the holder left, then release and wake) is sl_unlock() in run/,
 * which lets go through sl_lock_release().  A process that dies
 * holding the lock is found by the waiters (its pid no longer exists);
 * one of them takes the lock over and brings the stack back to a whole
 * state (sl_stack.recover, proto/recover.c).  Only if that cannot be done
 * is the stack marked broken: every later call fails with -EPIPE instead
 * of hanging or running on half-updated state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "os/os.h"

#define LOCKW(s)	(&(s)->r->lock)
/*
 * The holder's pid is in the lock word itself (SLUICE_LOCK_PID_SHIFT):
 * taking the lock and naming the holder are one compare-and-swap.  With
 * the pid only in lock_owner, written after the swap, a process killed
 * between the two left a held lock that named nobody, and every waiter
 * slept on it forever (test_death, "killed before naming itself").
 * lock_owner is still written, for people reading dumps.
 */
#define LOCK_FLAGS	SLUICE_LOCK_WAITERS
#define OWNERW(s)	(&(s)->r->lock_owner)
#define SPIN_TRIES	2000
/* A sleeper re-checks the holder's liveness this often. */
#define CHECK_NS	(20 * 1000 * 1000)

static pid_t cached_pid SL_FORKDATA;

static uint32_t lock_word_held(uint32_t v);
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

/* A forked child asks again at its first need: one getpid() a child,
 * whoever of the library asks first (the preload's fork handler, its
 * process record, a lock). */
SL_FORKTEXT static void pid_forget(void)
{
	SL_WRITE_ONCE(cached_pid, 0);
}

static void pid_init(void)
{
	pthread_atfork(NULL, NULL, pid_forget);
}

/* This process's pid without a system call on the hot path. */
pid_t sl_self_pid(void)
{
	pid_t p;

	pthread_once(&pid_once, pid_init);
	p = SL_READ_ONCE(cached_pid);
	if (__builtin_expect(!p, 0)) {
		p = getpid();
		SL_WRITE_ONCE(cached_pid, p);
	}
	return p;
}

static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return sl_syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static bool stack_broken(struct sl_stack *s)
{
	/* Acquire: pairs with the release that marked it broken. */
	return sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN;
}

int sl_broken_err(const struct sl_stack *s)
{
	/* broken_pid 0: no process died, a value in the region was found
	 * impossible (sl_corrupt()).  ENOTRECOVERABLE as a robust mutex
	 * whose state was left inconsistent; and no SIGPIPE from a send. */
	if (s->corrupt || !s->lib->broken_pid)
		return -ENOTRECOVERABLE;
	return -EPIPE;
}

/*
 * Sinks for out-of-range indices (see sl_buf_bad()): process-local, shared
 * by every stack and thread of the process.  Whatever a caller writes
 * there is garbage nobody reads back for anything but more garbage; the
 * links are put back to SLUICE_IDX_NONE on every hand-out so walks end,
 * field by field (never zeroed as a whole: another thread may be dividing
 * by the sink socket's mss).
 */
static struct sluice_buf sink_buf;
static uint8_t sink_data[SLUICE_STACK_MAX_BUF_SIZE + SL_REGION_SLACK] __attribute__((aligned(64)));

void sl_corrupt(struct sl_stack *s, enum sl_counter why, uint64_t val)
{
	if (s->corrupt)
		return;
	s->corrupt = true;
	s->corrupt_why = why;
	s->corrupt_val = val;
	/* Every index is out of range from now on: walks end at once. */
	s->n_bufs = 0;
	s->max_sockets = 0;
	s->tw_max = 0;
	s->v6tok_max = 0;
	/* Someone only looking (sluice dump) leaves the region alone. */
	if (s->inspect)
		return;
	if (s->ctr)
		s->ctr->c[why]++;
	s->lib->broken_pid = 0;
	/* Release: broken_pid is written before anyone sees BROKEN. */
	sl_store_release(&s->r->state, SLUICE_STATE_BROKEN);
}

struct sluice_buf *sl_buf_bad(const struct sl_stack *s, uint32_t idx)
{
	sl_corrupt((struct sl_stack *)s, SL_C_corrupt_buf_idx, idx);
	sink_buf.next_idx = SLUICE_IDX_NONE;
	sink_buf.off = SL_HEADROOM;
	sink_buf.len = 0;
	return &sink_buf;
}

uint8_t *sl_buf_base_bad(const struct sl_stack *s, uint32_t idx)
{
	sl_corrupt((struct sl_stack *)s, SL_C_corrupt_buf_idx, idx);
	return sink_data;
}

uint8_t *sl_buf_data_bad(const struct sl_stack *s, uint32_t idx)
{
	sl_corrupt((struct sl_stack *)s,
		   idx < s->n_bufs ? SL_C_corrupt_buf_len : SL_C_corrupt_buf_idx, idx);
	return sink_data + SL_HEADROOM;
}

bool sl_walk_end(struct sl_stack *s, uint32_t idx, uint32_t n, uint32_t steps, bool socks)
{
	if (idx == SLUICE_IDX_NONE)
		return false;
	if (idx >= n)
		sl_corrupt(s, socks ? SL_C_corrupt_sock_idx : SL_C_corrupt_buf_idx, idx);
	else
		sl_corrupt(s, SL_C_corrupt_chain, steps);
	return false;
}

/* The holder is gone: mark the stack broken and wake everyone. */
static void mark_broken(struct sl_stack *s, pid_t owner)
{
	s->lib->broken_pid = owner;
	if (s->ctr)
		sl_count(s, SL_C_lock_broken);
	/* Release: broken_pid is written before anyone sees BROKEN. */
	sl_store_release(&s->r->state, SLUICE_STATE_BROKEN);
	futex(LOCKW(s), FUTEX_WAKE, INT_MAX, NULL);
}

static uint32_t lock_word_held(uint32_t v);
static void took_lock(struct sl_stack *s);

/*
 * Lock word v names owner, found dead holding it (sl_lock_holder_dead()):
 * take the lock over, and bring the stack back (s->recover, issue 17).
 * One process wins the exchange; the others go on waiting, for it.  0:
 * taken over and recovered, the lock held; -EAGAIN: someone else took it
 * (or the word moved): look again; else the stack is broken, that error.
 */
static int take_over(struct sl_stack *s, uint32_t v, pid_t owner)
{
	int ret;

	if (!s->recover) {
		mark_broken(s, owner);
		return -EPIPE;
	}
	/* Waiters sleep on the word: the next release must wake one. */
	if (!sl_cmpxchg_weak_acquire(LOCKW(s), &v, lock_word_held(v) | SLUICE_LOCK_WAITERS))
		return -EAGAIN;
	took_lock(s);
	ret = s->recover(s, owner);
	if (s->corrupt || stack_broken(s)) {
		sl_lock_release_broken(s);
		return sl_broken_err(s);
	}
	if (ret) {
		mark_broken(s, owner);
		sl_lock_release_broken(s);
		return -EPIPE;
	}
	sl_count(s, SL_C_lock_recovered);
	return 0;
}

/*
 * The state letter of process pid from /proc/PID/stat ("R", "S", "T",
 * "Z", ...), 'X' if it is gone, or 0 if that cannot be read.
 */
static char pid_state(pid_t pid)
{
	char path[64], buf[256], *p;

	/* A sandboxed process may be killed for kill(2) or refused /proc:
	 * it does not know, and leaves dead holders to others. */
	if (sl_sys_sandboxed)
		return 0;
	if (kill(pid, 0) && errno == ESRCH)
		return 'X';
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	/* kill(2) saw it: no /proc here (a chroot) is not a death. */
	if (sl_sys_read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	/* "pid (comm) S ...": the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Gone, or a zombie nobody has reaped yet: either way it will never
 * release the lock. */
bool sl_pid_dead(pid_t owner)
{
	char st;

	if (owner <= 0)
		return false;
	st = pid_state(owner);
	return st == 'X' || st == 'Z';
}

bool sl_pid_stopped(pid_t pid)
{
	char st;

	if (pid <= 0)
		return false;
	st = pid_state(pid);
	return st == 'T' || st == 't';
}

static void took_lock(struct sl_stack *s)
{
	pid_t self = sl_self_pid();

	SL_WRITE_ONCE(*OWNERW(s), self);
	/* Read by inspectors without the lock: a holder that keeps the same
	 * count has held it all along. */
	SL_WRITE_ONCE(s->r->lock_seq, s->r->lock_seq + 1);
	s->locked = true;
	if (s->ctr_pid != self)
		sl_counters_claim(s);	/* first lock, or a forked child */
}

void sl_counters_claim(struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	uint32_t self = (uint32_t)sl_self_pid();
	int i, pick = -1;

	/*
	 * Ours already, else a free block (a process gives its block back as
	 * it detaches or exits: sl_counters_release()), else the block our
	 * pid hashes to, shared with whoever counts there: every increment is
	 * made under the lock, so sharing loses no count (its cost is only a
	 * line that moves between cores).  No system call here: this runs
	 * with the lock held, at a forked child's first lock, and asking
	 * whether each block's process still lives (kill(2), /proc) cost a
	 * forking server's children up to 16 of each under the lock.
	 */
	for (i = 0; i < SL_PROC_MAX; i++)
		if (SL_READ_ONCE(r->counter_pid[i]) == self)
			pick = i;
	for (i = 0; pick < 0 && i < SL_PROC_MAX; i++)
		if (!SL_READ_ONCE(r->counter_pid[i]))
			pick = i;
	if (pick < 0)
		pick = (int)(self % SL_PROC_MAX);
	SL_WRITE_ONCE(r->counter_pid[pick], self);
	s->ctr = &r->counters[pick];
	s->ctr_pid = (pid_t)self;
}

SL_FORKTEXT void sl_counters_release(struct sl_stack *s)
{
	uint32_t self = (uint32_t)sl_self_pid();
	uint32_t *w;

	/* A forked child that never locked points at its parent's block. */
	if (!s || !s->r || s->ctr_pid != (pid_t)self)
		return;
	w = &s->lib->counter_pid[s->ctr - s->lib->counters];
	/* Without the lock: only if it still names us (a claimer may have
	 * taken it over); our later counts, if any, land in a block shared
	 * with its next owner, which the lock keeps exact. */
	sl_cmpxchg(w, &self, 0);
}

bool sl_futex_usable(struct sl_stack *s)
{
	/*
	 * A shared futex is keyed by the page's file and offset (or its
	 * anonymous mm).  /dev/shm pages have one, and so have the module's
	 * regions now (shmem pages); pages that an older module mapped from
	 * vmalloc memory have no file mapping and every futex call on them
	 * fails with EFAULT.  A wake on a word nobody waits on tells.
	 */
	return futex(LOCKW(s), FUTEX_WAKE, 0, NULL) >= 0 || errno != EFAULT;
}

uint64_t sl_counter_sum(const struct sl_stack *s, enum sl_counter c)
{
	uint64_t sum = 0;

	for (int i = 0; i < SL_PROC_MAX; i++)
		sum += s->lib->counters[i].c[c];
	return sum;
}

bool sl_trylock(struct sl_stack *s)
{
	uint32_t v = SL_READ_ONCE(*LOCKW(s));

	if (s->corrupt)
		return false;
	while (!(v & SLUICE_LOCK_HELD)) {
		/* Acquire: the holder's writes to the region are visible. */
		if (sl_cmpxchg_weak_acquire(LOCKW(s), &v, lock_word_held(v))) {
			took_lock(s);
			return true;
		}
	}
	return false;
}

int sl_lock_wait(struct sl_stack *s, int64_t deadline_us, bool nonblock)
{
	struct timespec ts;
	bool waited = false;
	int64_t left, slice;
	pid_t owner;
	uint32_t v;
	int i;

	if (s->corrupt || stack_broken(s))
		return sl_broken_err(s);
	for (i = 0; i < SPIN_TRIES; i++) {
		if (sl_trylock(s))
			return 0;
		__builtin_ia32_pause();
	}
	/* Bumped by any waiter of any process: atomic. */
	sl_fetch_add_relaxed(&s->lib->lock_contended, 1);
	for (;;) {
		v = SL_READ_ONCE(*LOCKW(s));
		if (!(v & SLUICE_LOCK_HELD)) {
			/* Taken after sleeping: others may sleep too, keep WAITERS. */
			if (sl_cmpxchg_weak_acquire(LOCKW(s), &v,
						    lock_word_held(v) | SLUICE_LOCK_WAITERS)) {
				took_lock(s);
				return 0;
			}
			continue;
		}
		owner = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);
		/* Held, naming no process there can be (pid_max is at most
		 * 2^22; taking the lock names the taker). */
		if (owner <= 0 || owner > (1 << 22)) {
			sl_corrupt(s, SL_C_corrupt_lock, v);
			return sl_broken_err(s);
		}
		/*
		 * A holder stopped (SIGSTOP, a debugger) keeps the lock for as
		 * long as it stays stopped: a caller that must not block
		 * gives up, one with a deadline when it passes (issue 17:
		 * nobody's timeout waits for another process).  The holder's
		 * state is read only once the lock has stayed held through a
		 * first short sleep (1 ms), woken early by any release: a
		 * running holder lets go well before, and a contended lock
		 * costs no /proc reads.
		 */
		if (nonblock && waited && sl_pid_stopped(owner))
			return -EAGAIN;
		slice = nonblock && !waited ? 1000 : CHECK_NS / 1000;
		left = slice;
		if (deadline_us >= 0) {
			left = deadline_us - (int64_t)sl_now(s);
			if (left <= 0)
				return -ETIMEDOUT;
			if (left > slice)
				left = slice;
		}
		if (!(v & SLUICE_LOCK_WAITERS) &&
		    !sl_cmpxchg_weak_relaxed(LOCKW(s), &v, v | SLUICE_LOCK_WAITERS))
			continue;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left * 1000;
		if (!s->futex_ok ||
		    (futex(LOCKW(s), FUTEX_WAIT, v | SLUICE_LOCK_WAITERS, &ts) && errno == EFAULT)) {
			/* The region's pages cannot key a shared futex (a
			 * module before shmem regions, see sl_futex_usable()):
			 * sleep a little instead. */
			struct timespec nap = { 0, 50 * 1000 };

			s->futex_ok = false;
			nanosleep(&nap, NULL);
		}
		waited = true;
		if (stack_broken(s))
			return sl_broken_err(s);
		v = SL_READ_ONCE(*LOCKW(s));
		if ((v & SLUICE_LOCK_HELD) && (pid_t)(v >> SLUICE_LOCK_PID_SHIFT) == owner &&
		    sl_lock_holder_dead(s, owner)) {
			int ret = take_over(s, SL_READ_ONCE(*LOCKW(s)), owner);

			if (ret != -EAGAIN)
				return ret;
		}
	}
}

bool sl_lock_dead_holder(struct sl_stack *s)
{
	uint32_t v = SL_READ_ONCE(*LOCKW(s));
	pid_t owner = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);

	if (!(v & SLUICE_LOCK_HELD) || owner <= 0 || owner > (1 << 22) ||
	    !sl_lock_holder_dead(s, owner))
		return false;
	if (take_over(s, v, owner) == -EAGAIN)
		return false;	/* another process is bringing it back */
	if (!s->locked)
		return true;	/* broken */
	sl_lock_release(s);
	sl_wake_everyone(s);
	return false;
}

/* The lock word that takes a free word @v for this process. */
static uint32_t lock_word_held(uint32_t v)
{
	return (v & LOCK_FLAGS) | SLUICE_LOCK_HELD |
	       (uint32_t)sl_self_pid() << SLUICE_LOCK_PID_SHIFT;
}

/*
 * Did @seen, read as the holder's pid while the lock looked held, die
 * holding it?  Being dead is not enough: the holder may have released
 * the lock and exited between our two loads.  A dead process writes
 * nothing more, so once @seen is known dead, a held word still naming it
 * means it never released.
 */
bool sl_lock_holder_dead(struct sl_stack *s, pid_t seen)
{
	uint32_t v;

	if (!sl_pid_dead(seen))
		return false;
	/* Acquire: pairs with nothing in the dead process; orders this load
	 * after the liveness check above. */
	v = sl_load_acquire(LOCKW(s));
	return (v & SLUICE_LOCK_HELD) && (pid_t)(v >> SLUICE_LOCK_PID_SHIFT) == seen;
}

uint32_t sl_lock_release(struct sl_stack *s)
{
	uint32_t v;

	/* Cleared before the release: see sl_lock_holder_dead(). */
	SL_WRITE_ONCE(*OWNERW(s), 0);
	/* Release: our writes to the region are visible to the next holder.
	 * Waiters only ever add WAITERS to a held word: whatever they set is
	 * in what the exchange returns. */
	v = sl_xchg_release(LOCKW(s), 0);
	s->locked = false;
	sl_hold_end(s);
	if (v & SLUICE_LOCK_WAITERS)
		futex(LOCKW(s), FUTEX_WAKE, 1, NULL);
	return v;
}

void sl_lock_release_broken(struct sl_stack *s)
{
	SL_WRITE_ONCE(*OWNERW(s), 0);
	/* Release: as sl_lock_release(). */
	sl_xchg_release(LOCKW(s), 0);
	s->locked = false;
	sl_hold_end(s);
	s->wake_pending = s->wake_poll = s->wake_global = s->wake_all = false;
	memset(s->wq_pending, 0, sizeof(s->wq_pending));
	s->xwake_n = 0;
	memset(s->bell_pending, 0, sizeof(s->bell_pending));
	s->bell_any_pending = false;
	futex(LOCKW(s), FUTEX_WAKE, INT_MAX, NULL);
	sl_wake_everyone(s);
}

void sl_wake_sleepers(struct sl_stack *s)
{
	sl_wake_word(&s->r->wake_seq);
}

void sl_wake_everyone(struct sl_stack *s)
{
	for (unsigned int c = 0; c < SL_WQ_ALL; c++) {
		if (!SL_READ_ONCE(s->lib->wq[c].sleepers))
			continue;
		sl_fetch_add(&s->lib->wq[c].seq, 1);
		futex(&s->lib->wq[c].seq, FUTEX_WAKE, INT_MAX, NULL);
	}
	sl_fetch_add(&s->r->wake_seq, 1);
	sl_wake_sleepers(s);
}

void sl_wake_word(uint32_t *word)
{
	futex(word, FUTEX_WAKE, INT_MAX, NULL);
}

int sl_wake_word_n(uint32_t *word, int n)
{
	long r = futex(word, FUTEX_WAKE, (uint32_t)n, NULL);

	return r < 0 ? -errno : (int)r;
}
