// SPDX-License-Identifier: BSD-2-Clause
/*
 * Waiting (run.h): backing off between spins, and sleeping until the
 * stack may have changed: on the link's fd, on the module's stack fd, or
 * on the region's wake_seq futex, which sl_sock_wake() bumps while anyone
 * sleeps.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"
#include "run/run.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_us(void)
{
	return mono_ns() / 1000;
}

/* Longest single sleep before re-checking readiness (other processes may
 * have received what we wait for: without the module nobody wakes us). */
#define SLEEP_SLICE_MS	2
/* How long a spinning caller that found nothing backs off (sl_wait_backoff()). */
#define SPIN_BACKOFF_NS	200
/* The longest sleep on a module's stack fd (sl_wait_sleep()). */
#define SLEEP_MAX_MS	10
/* The longest sleep while timers are armed for all but the keeper; the
 * keeper's too (it wakes sooner for the wheel's next deadline).  They
 * take the keeper's place if it stopped sleeping, so a timer is late by
 * this much at worst when nobody runs the stack and the keeper returned
 * to its program. */
#define SLEEP_SPARE_MS	100
/* A keeper's claim outlasts its planned wake-up, or a running keeper's
 * last turn, by this much (it renews it at each sleep and each turn that
 * moves the wheel). */
#define KEEPER_HOLD_MS	10
/* With nothing on the wheel for SL_WHEEL_QUIET_MS: a change wakes the
 * sleeper, the first deadline set too (sl_timer_set(), wake_all); this
 * only bounds it. */
#define SLEEP_IDLE_MS	1000

__thread uint32_t *sl_wait_word;

/*
 * A caller spinning on a non-blocking receive comes straight back.  Reading
 * the socket's first cache line in a tight loop fights the process that is
 * delivering into it for that line; backing off about SPIN_BACKOFF_NS
 * between looks measured a quarter off the ping-pong latency here (pause
 * is ~14 ns on these VMs, ~45 ns on newer Xeons, so it is calibrated).
 */
static unsigned int backoff_pauses;
static pthread_once_t backoff_once = PTHREAD_ONCE_INIT;

static void backoff_calibrate(void)
{
	uint64_t t0 = mono_us(), dt;

	for (int i = 0; i < 1000; i++)
		__builtin_ia32_pause();
	dt = mono_us() - t0;	/* microseconds for 1000 pauses */
	backoff_pauses = dt ? (unsigned int)(SPIN_BACKOFF_NS / dt) : SPIN_BACKOFF_NS / 10;
	if (backoff_pauses < 1)
		backoff_pauses = 1;
	if (backoff_pauses > 64)
		backoff_pauses = 64;
}

void sl_wait_calibrate(void)
{
	pthread_once(&backoff_once, backoff_calibrate);
}

void sl_wait_backoff(void)
{
	sl_wait_calibrate();
	for (unsigned int i = 0; i < backoff_pauses; i++)
		__builtin_ia32_pause();
}

static long futex_wait(uint32_t *w, uint32_t val, int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	return sl_syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

/*
 * The cost of a wake-up on this machine: half the median round trip of two
 * threads handing a futex word back and forth, each sleeping in between
 * (the waker's FUTEX_WAKE, the sleeper's way back out of FUTEX_WAIT).
 * `sluice run` measures it and hands it to the preload, whose default
 * spin time follows from it (lib/README.md "Waiting").
 */
#define WAKE_ROUNDS	32

/* The other thread: waits for each odd value, answers with the next. */
static void *wake_echo(void *arg)
{
	uint32_t *w = arg;

	for (uint32_t v = 1; v < 2 * WAKE_ROUNDS; v += 2) {
		while (SL_READ_ONCE(*w) != v)
			futex_wait(w, v - 1, 100);
		SL_WRITE_ONCE(*w, v + 1);
		sl_wake_word(w);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

unsigned int sl_wake_cost_ns(void)
{
	uint64_t rt[WAKE_ROUNDS];
	cpu_set_t all, one[2];
	unsigned int got = 0;
	uint32_t w = 0;
	pthread_t t;

	/* On two CPUs: peers in a stack are on two cores, and a wake-up
	 * across cores (an interrupt to a sleeping core) is what a spin
	 * saves; on one CPU a hand-off is a context switch, twenty times
	 * cheaper here, and would make every spin too short.  A creator
	 * that may use one CPU measures nothing (0: the default spin). */
	if (sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < 2)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && got < 2; c++) {
		if (CPU_ISSET(c, &all)) {
			CPU_ZERO(&one[got]);
			CPU_SET(c, &one[got]);
			got++;
		}
	}
	if (pthread_setaffinity_np(pthread_self(), sizeof(one[0]), &one[0]))
		return 0;
	if (pthread_create(&t, NULL, wake_echo, &w)) {
		pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
		return 0;
	}
	pthread_setaffinity_np(t, sizeof(one[1]), &one[1]);
	for (uint32_t i = 0; i < WAKE_ROUNDS; i++) {
		uint64_t t0 = mono_ns();

		SL_WRITE_ONCE(w, 2 * i + 1);
		sl_wake_word(&w);
		while (SL_READ_ONCE(w) != 2 * i + 2)
			futex_wait(&w, 2 * i + 1, 100);
		rt[i] = mono_ns() - t0;
	}
	pthread_join(t, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
	qsort(rt, WAKE_ROUNDS, sizeof(rt[0]), cmp_u64);
	return rt[WAKE_ROUNDS / 2] / 2 < UINT32_MAX ? (unsigned int)(rt[WAKE_ROUNDS / 2] / 2) : 0;
}

/* The module's wake sequence of a module-backed stack (uapi
 * struct sluice_stack_wake); ARM with seq, or just read it. */
static uint32_t module_wake(struct sl_stack *s, uint32_t flags, uint32_t seq)
{
	struct sluice_stack_wake w = { .size = sizeof(w), .flags = flags, .seq = seq };

	if (sl_sys_ioctl(s->region_fd, SLUICE_IOC_STACK_WAKE, &w))
		return seq;
	return w.seq;
}

static int link_fd(struct sl_stack *s)
{
	return s->link && s->link->ops->fd ? s->link->ops->fd(s->link) : -1;
}

/*
 * Does a sleeper of this process sleep in poll on the stack fd?  Only on a
 * module's stack, and only when it has a link fd to watch as well (one
 * poll for both) or the region takes no futex (an older module).  Every
 * other sleeper waits on the futex, the region's wake_seq.
 */
bool sl_wait_on_fd(struct sl_stack *s)
{
	return s->module_backed && (link_fd(s) >= 0 || !s->futex_ok);
}

/*
 * This thread's keeper token: its process's pid and a number of its own
 * (a forked child's thread gets a new one with its pid).
 */
static __thread uint32_t keeper_token, keeper_token_pid;
static uint32_t keeper_threads SL_FORKDATA;	/* counted on by a child's first sleep */

uint32_t sl_keeper_token(void)
{
	uint32_t pid = (uint32_t)sl_self_pid();

	if (keeper_token_pid != pid) {
		keeper_token_pid = pid;
		keeper_token = pid << 10 | (sl_fetch_add_relaxed(&keeper_threads, 1) & 1023);
	}
	return keeper_token;
}

/*
 * Is this sleeper the timer keeper, planning to wake in wake_ms?  It
 * claims or renews the place when it is free, lapsed, already its own, or
 * held by a keeper that would wake later than it will (a thread that set
 * an earlier deadline and then went to sleep takes over from a keeper that
 * planned its sleep before that deadline existed).  One sleeper of the
 * stack wakes for the stack's timers, not every one (issue 18: 32
 * children of a pre-forking server each woke 100 times a second while
 * one connection was open).
 */
static bool keeper_claim(struct sl_stack *s, uint64_t now, uint32_t wake_ms)
{
	uint32_t now_ms = (uint32_t)(now / 1000), me = sl_keeper_token();
	uint64_t cur = SL_READ_ONCE(s->lib->keeper);
	uint32_t until = now_ms + wake_ms + KEEPER_HOLD_MS, cur_until = (uint32_t)(cur >> 32);

	if ((uint32_t)cur != me && (int32_t)(cur_until - now_ms) > 0 &&
	    (int32_t)(cur_until - until) <= 0)
		return false;	/* another's claim holds, and it wakes first */
	return sl_cmpxchg(&s->lib->keeper, &cur, (uint64_t)until << 32 | me);
}

/*
 * A turn of this thread moved the wheel at now_us (sl_run()): a thread
 * that runs the stack keeps its timers while it does, so it takes the
 * keeper's place, and keeps it KEEPER_HOLD_MS past each such turn (a
 * running keeper's claim is its last turn, not a wake-up it planned),
 * unless another's claim holds no later than that: another running
 * keeper, or a sleeper about to wake.  A sleeping keeper's later claim
 * is taken: it wakes as it planned (its sleep cannot be shortened), then
 * finds the place held and sleeps the spare time; were it left the
 * place, it would stay keeper beside threads that run the stack all the
 * time, and wake for their deadlines (an idle worker beside a busy pair,
 * 29 times a second: test_idle_beside_busy).
 *
 * The claim is the only way a sleeper learns that someone else keeps the
 * timers, and a claim is a promise: its holder either runs the stack
 * within KEEPER_HOLD_MS or, going to sleep, renews it for the wheel's
 * next deadline (bound_ms()), which no other sleeper does while it
 * holds.  Before, a sleeper that saw another thread's turn in the last
 * 10 ms took that for a promise, and slept 100 ms: two processes that
 * had both run the stack in those 10 ms each saw the other's turn, and
 * both slept past the deadline (a delayed ACK at 100 ms, not 40:
 * tests/host/test_small_writes.sh, its late rounds).  One compare-and-
 * swap a millisecond at most, on the region's line of the keeper.
 */
void sl_keeper_ran(struct sl_stack *s, uint64_t now_us)
{
	uint32_t now_ms = (uint32_t)(now_us / 1000), me = sl_keeper_token();
	uint64_t cur = SL_READ_ONCE(s->lib->keeper);
	uint32_t until = now_ms + KEEPER_HOLD_MS, cur_until = (uint32_t)(cur >> 32);

	if ((uint32_t)cur == me ? cur_until == until :
	    (int32_t)(cur_until - now_ms) > 0 && (int32_t)(cur_until - until) <= 0)
		return;
	sl_cmpxchg(&s->lib->keeper, &cur, (uint64_t)until << 32 | me);
}

/*
 * The first slot with an entry from the wheel's time on, before lim (ms):
 * its ms, or lim.  Read without the lock, as a hint: an entry of a later
 * turn in that slot makes the keeper wake early, for nothing, never late;
 * a deadline set after this look is the setter's to keep (keeper_claim()).
 */
static uint64_t wheel_next_ms(struct sl_stack *s, uint64_t from, uint64_t lim)
{
	for (uint64_t ms = from; ms < lim; ms++)
		if (SL_READ_ONCE(s->wheel[ms % SLUICE_WHEEL_SLOTS]) != SLUICE_IDX_NONE)
			return ms;
	return lim;
}

/*
 * A sleep's bound at now (µs of sl_now()): SLEEP_IDLE_MS after the wheel
 * has been empty for a quiet second.  Otherwise one thread, the keeper,
 * keeps the timers: a sleeper that claims the place sleeps until the
 * wheel's next deadline (at most SLEEP_SPARE_MS), the others, while the
 * claim of a sleeping or running keeper holds, SLEEP_SPARE_MS.  Beside a
 * busy pair, whose turns run the wheel a thousand times a second, the
 * pair holds the place (sl_keeper_ran()) and an idle worker wakes for its
 * own sockets and SLEEP_SPARE_MS (issue 23: before any of this, a keeper
 * among the idle workers woke every 10 ms while the pair's timers were
 * armed).
 */
static int bound_ms(struct sl_stack *s, uint64_t now)
{
	uint64_t now_ms = now / 1000, ran = SL_READ_ONCE(s->lib->wheel_now_ms), next;
	uint32_t wake;

	if (!SL_READ_ONCE(s->lib->timers_armed) &&
	    now_ms - SL_READ_ONCE(s->lib->wheel_empty_ms) >= SL_WHEEL_QUIET_MS)
		return SLEEP_IDLE_MS;
	next = wheel_next_ms(s, ran + 1, now_ms + SLEEP_SPARE_MS);
	wake = next > now_ms ? (uint32_t)(next - now_ms) : 1;
	return keeper_claim(s, now, wake) ? (int)wake : SLEEP_SPARE_MS;
}

/*
 * Sleep until something may have changed.  With a link fd and no module,
 * poll(2) on it in slices (another process may take in what we wait for,
 * and nothing can wake a poll on our fd then).  On the stack fd with a
 * module (sl_wait_on_fd()).  Otherwise a futex wait on word, a wait
 * channel's seq, or (NULL) the stack's wake sequence: sl_sock_wake()
 * bumps them while anyone sleeps there.
 */
void sl_wait_sleep(struct sl_stack *s, int64_t deadline, uint32_t seq, bool on_fd,
		   uint32_t *word)
{
	int64_t now = (int64_t)sl_now(s);
	int ms = SLEEP_MAX_MS, fd;
	struct pollfd pfd[2];

	fd = link_fd(s);
	if (fd >= 0 && !s->module_backed)
		ms = SLEEP_SLICE_MS;
	else if (!on_fd && s->futex_ok)
		ms = bound_ms(s, (uint64_t)now);
	if (deadline >= 0 && now + ms * 1000 > deadline)
		ms = deadline > now ? (int)((deadline - now + 999) / 1000) : 0;
	if (!ms)
		return;
	if (on_fd) {
		/* One wait for both: the stack fd reports the module's wake
		 * sequence moving away from the value seen before our last
		 * look (armed here), the link fd its frames. */
		module_wake(s, SLUICE_WAKE_ARM, seq);
		pfd[0].fd = s->region_fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = fd;
		pfd[1].events = POLLIN;
		sl_sys_poll(pfd, fd >= 0 ? 2 : 1, ms);
	} else if (fd >= 0 && !s->module_backed) {
		pfd[0].fd = fd;
		pfd[0].events = POLLIN;
		sl_sys_poll(pfd, 1, ms);
	} else if (futex_wait(word ? word : &s->r->wake_seq, seq, ms) && errno == EFAULT) {
		/* No futex on these pages after all (sl_futex_usable()). */
		s->futex_ok = false;
		usleep(ms * 1000 < 1000 ? ms * 1000 : 1000);
	}
}

bool sl_waitv_ok = true;

void sl_wait_sleep_v(struct sl_stack *s, int64_t deadline, uint32_t *const *words,
		     const uint32_t *vals, unsigned int n)
{
	int64_t now;
	int ms;
	struct futex_waitv wv[SL_WAITV_MAX];
	struct timespec ts;

	/*
	 * A link fd and no module (a TAP stack): a frame moves no futex word
	 * until someone reads it, so this sleep reads the queue as a wait
	 * on one channel does (sl_wait_sleep(): poll on the fd, in slices).
	 * On the words alone, a frame waited for the queue server's 50 ms
	 * nap (lib/preload/tapq.c) or the stack's next timer: iperf3, in
	 * select() on its control and data sockets, took its ACKs that late
	 * (tests/host/test_tap_wait_several.sh, tests/bench/lossy_host.sh).
	 */
	if (link_fd(s) >= 0 && !s->module_backed) {
		sl_wait_sleep(s, deadline, 0, false, NULL);
		return;
	}
	now = (int64_t)sl_now(s);
	ms = bound_ms(s, (uint64_t)now);
	if (deadline >= 0 && now + ms * 1000 > deadline)
		ms = deadline > now ? (int)((deadline - now + 999) / 1000) : 0;
	if (!ms || !n || n > SL_WAITV_MAX)
		return;
	memset(wv, 0, sizeof(wv));
	for (unsigned int i = 0; i < n; i++) {
		wv[i].val = vals[i];
		wv[i].uaddr = (uintptr_t)words[i];
		wv[i].flags = FUTEX_32;	/* shared: the words are in the region */
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	/* Woken: the index of the word that woke it, which is no failure
	 * when it is not the first.  (It was read as one: a wake on any
	 * later word, with whatever errno held, took the fallback below, a
	 * 1 ms sleep on the first word alone, and gave up futex_waitv for
	 * good: unit/test_shared case 4's wake-up took 1.1-4.5 ms.) */
	if (sl_syscall(SYS_futex_waitv, wv, n, 0, &ts, CLOCK_MONOTONIC) >= 0 || errno == EAGAIN ||
	    errno == ETIMEDOUT || errno == EINTR)
		return;
	if (errno == EFAULT) {
		s->futex_ok = false;	/* as sl_wait_sleep() */
		return;
	}
	/* ENOSYS (before 5.16), or refused: this wait on its first word
	 * in a short slice, and later ones on the stack's wake_seq. */
	SL_WRITE_ONCE(sl_waitv_ok, false);
	futex_wait(words[0], vals[0], 1);
}

/*
 * A spinner's look at the clock: a gap of SPIN_GAP_US since its last look
 * (a round of a spin is a microsecond or less) means it was taken off its
 * CPU mid-spin: a thread that had been waiting for a CPU ran instead.
 * Linux preempts a spinner for a woken thread, or at the end of its slice
 * when others wait; with a CPU to spare neither happens.  So spinning
 * stops for the stack for SPIN_CROWDED_US, and is tried again after (a
 * spin that finds the machine still crowded is soon taken off again).
 * pgbench -S, 8 clients, PostgreSQL unpinned on 2 CPUs: 30,000-35,000
 * transactions a second before, 39,000-51,000 with this; pinned (the
 * server on one CPU, pgbench on the other) 39,000-52,000 with 20 ms, and
 * 24,000-38,000 with 200 ms, which stopped almost every spin there.
 */
#define SPIN_GAP_US		50
#define SPIN_CROWDED_US		20000

void sl_spin_gap(struct sl_stack *s, uint64_t last_us, uint64_t now_us)
{
	if (now_us - last_us > SPIN_GAP_US && now_us > last_us) {
		SL_WRITE_ONCE(s->lib->crowded_until, now_us + SPIN_CROWDED_US);
		sl_count(s, SL_C_spin_crowded);
	}
}

/*
 * Before a spin: are there more runnable threads than CPUs, the would-be
 * spinner counted?  Then its spin would take a CPU from a thread that
 * waits for one, perhaps the one that would end its wait, and nobody of
 * the stack spins for RUNQ_CROWDED_US.  The kernel's count (sl_sys_runnable())
 * costs three system calls, so it is read by one spinner of the stack
 * each RUNQ_EVERY_US at most; between counts, and in a sandbox, where it
 * is never read, sl_spin_gap() still sees a spinner taken off its CPU,
 * but only after the fact.
 */
#define RUNQ_EVERY_US		1000
#define RUNQ_CROWDED_US		2000

static bool runq_crowded(struct sl_stack *s, uint64_t now, unsigned int cpus)
{
	uint64_t at = SL_READ_ONCE(s->lib->runq_at);
	int n;

	if (now - at < RUNQ_EVERY_US || !sl_cmpxchg(&s->lib->runq_at, &at, now))
		return false;
	n = sl_sys_runnable();
	if (n < 0 || (unsigned int)n <= cpus)
		return false;
	SL_WRITE_ONCE(s->lib->crowded_until, now + RUNQ_CROWDED_US);
	sl_count(s, SL_C_spin_runq);
	return true;
}

int sl_spin_claim(struct sl_stack *s, unsigned int cap, unsigned int cpus, unsigned int spin_us)
{
	uint64_t now = mono_us();

	if (now < SL_READ_ONCE(s->lib->crowded_until) || runq_crowded(s, now, cpus))
		return -1;
	if (cap > SL_SPIN_SLOTS)
		cap = SL_SPIN_SLOTS;
	for (unsigned int i = 0; i < cap; i++) {
		uint64_t *w = &s->lib->spin_until[i], v = SL_READ_ONCE(*w);

		/* Free, or its spinner's time is up (or it died). */
		if (v <= now && sl_cmpxchg(w, &v, now + spin_us + 1))
			return (int)i;
	}
	return -1;
}

void sl_spin_release(struct sl_stack *s, int slot)
{
	if (slot >= 0 && slot < SL_SPIN_SLOTS)
		SL_WRITE_ONCE(s->lib->spin_until[slot], 0);
}

int sl_wait_bound_ms(struct sl_stack *s)
{
	return bound_ms(s, sl_now(s));
}

uint32_t sl_wait_seq(struct sl_stack *s)
{
	return module_wake(s, 0, 0);
}
