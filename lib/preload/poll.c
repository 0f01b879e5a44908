// SPDX-License-Identifier: BSD-2-Clause
/*
 * Readiness without the module: poll, ppoll, select, pselect (and
 * __poll_chk, __ppoll_chk).
 *
 * A set with no Sluice fd goes straight to the kernel.  A set of Sluice
 * fds only waits in pl_sluice_wait(): it looks for SLUICE_SPIN_US, then
 * sleeps on the stack (woken by whoever changes a socket) in slices of
 * PL_SIG_SLICE_MS.  A mixed set looks at the Sluice part, then polls the
 * kernel part with a zero timeout while spinning; then it sleeps in the
 * kernel's poll with the thread's bell as one more fd (bell.c), rung by
 * whoever changes one of its Sluice sockets, or, with no bell (a sandbox,
 * a TAP stack), in slices of PL_SLICE_MS.  Limits (documented in the
 * README): without a bell, in a mixed set asleep, Sluice readiness is
 * seen up to PL_SLICE_MS late; a
 * signal handler ends a wait with EINTR (signal.c), seen up to
 * PL_SIG_SLICE_MS late; ppoll/pselect install their signal mask around the
 * whole wait, not atomically with the sleep.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "preload.h"

/*
 * glibc declares poll()'s and ppoll()'s fds write_only (__attr_access), so
 * GCC, optimising with the sanitizers, warns that our definitions read
 * them: they are in/out arrays and must be read.
 */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define PL_SLICE_MS	1
#define PL_STACK_FDS	64
/* A wait on Sluice sockets alone sleeps this long at most: a signal ends
 * it at once (sl_poll_signals()), a socket's change too; the slice only
 * lets the sweep for dead processes' sockets run (pl_sweep(), after every
 * sleep however it ended). */
#define PL_SIG_SLICE_MS	500
/* A kernel sleep on module socket fds lasts this long at most: someone has
 * to run the stack's timers when every process sleeps (pl_kfd_slice()). */
#define PL_KFD_SLICE_MS	10

extern void __chk_fail(void) __attribute__((noreturn));

/*
 * How long this thread spins before it sleeps (issue 18: wait without
 * stealing the CPU a peer needs).  The configured spin (pl_cfg.spin_us)
 * while the thread's waits end within it; each wait that lasts longer
 * halves it for the next, down to nothing, and the first that ends
 * within the configured spin again (measured whether it spun or slept)
 * restores it.  A thread whose waits are long (a backend waiting for its
 * client's next connection step, a worker in accept()) stops spinning
 * for them; one in a request-response loop keeps its spin.
 */
static __thread unsigned int spin_now;
static __thread bool spin_set;

unsigned int pl_spin_us(void)
{
	if (!spin_set) {
		spin_now = pl_cfg.spin_us;
		spin_set = true;
	}
	return spin_now < pl_cfg.spin_us ? spin_now : pl_cfg.spin_us;
}

static __thread int spin_slot = -1;
/* The spin the thread's current wait was given (pl_spin_begin()), or 0. */
static __thread unsigned int spin_given;
/* When this thread's spin last looked (pl_spin_tick()), or 0. */
static __thread uint64_t spin_last;

void pl_spin_end(void)
{
	if (spin_slot >= 0)
		sl_spin_release(pl_sl(), spin_slot);
	spin_slot = -1;
}

/*
 * A blocking wait's spin: this thread's (pl_spin_us()), if one of the
 * stack's spin slots is free (sl_spin_claim(): at most as many threads
 * of the stack spin at once as the machine has CPUs), else none.
 * pl_spin_end() when the spin is over, whether the wait is or not.
 */
unsigned int pl_spin_begin(void)
{
	unsigned int us = pl_spin_us();
	struct sl_stack *s = pl_sl();

	pl_spin_end();
	if (!us || !s)
		return 0;
	spin_slot = sl_spin_claim(s, pl_cfg.spinners ? pl_cfg.spinners : 1, pl_cfg.cpus, us);
	spin_last = 0;
	spin_given = spin_slot >= 0 ? us : 0;
	return spin_given;
}

/* A round of a spin at now: a long gap since the last stops the stack's
 * spins for a while (sl_spin_gap()). */
void pl_spin_tick(uint64_t now)
{
	if (spin_slot < 0)
		return;
	if (spin_last)
		sl_spin_gap(pl_sl(), spin_last, now);
	spin_last = now;
}

void pl_spin_note(uint64_t start_us)
{
	uint64_t waited = pl_now_us() - start_us;

	pl_spin_end();
	/* Whether spins pay: a spin that ended its wait, or one whose CPU
	 * time bought nothing (sluice dump). */
	if (spin_given && pl_sl()) {
		bool won = waited <= spin_given;

		sl_count(pl_sl(), won ? SL_C_spin_won : SL_C_spin_lost);
		sl_count_n(pl_sl(), SL_C_spin_us, won ? waited : spin_given);
	}
	spin_given = 0;
	if (waited <= pl_cfg.spin_us)
		spin_now = pl_cfg.spin_us;
	else
		spin_now = pl_spin_us() / 2;
	spin_set = true;
}

void pl_waiter_init(struct pl_waiter *w, int timeout_ms)
{
	w->start_us = pl_now_us();
	w->deadline_us = timeout_ms < 0 ? -1 : (int64_t)(w->start_us + (uint64_t)timeout_ms * 1000);
	w->rounds = 0;
	w->spin_us = timeout_ms ? pl_spin_begin() : 0;
}

bool pl_waiter_next(struct pl_waiter *w, int *sleep_ms)
{
	uint64_t now = pl_now_us();
	int64_t left;

	w->rounds++;
	if (w->deadline_us >= 0 && (int64_t)now >= w->deadline_us)
		return false;
	if (now - w->start_us < w->spin_us) {
		pl_spin_tick(now);
		*sleep_ms = 0;
		return true;
	}
	pl_spin_end();
	pl_sweep();	/* rate-limited: sockets of processes that died */
	*sleep_ms = PL_SLICE_MS;
	if (w->deadline_us >= 0) {
		left = (w->deadline_us - (int64_t)now + 999) / 1000;
		if (left < *sleep_ms)
			*sleep_ms = (int)left;
	}
	return true;
}

/*
 * An epoll set of both kinds spinning (no sleep this round, the wait not
 * over): is this a round to ask the kernel about its part?  The first
 * round and every PL_SPIN_KLOOK-th, or every round if the kernel side was
 * the busy one last time.  A zero-timeout epoll_wait each round was most
 * of what a forking server's workers spent spinning (PostgreSQL waits for
 * its client in such a set), and asleep the kernel part is looked at only
 * once a millisecond anyway.  (poll() asks every round: its rounds look
 * at the Sluice part under the stack lock, which the kernel call spaces.)
 */
#define PL_SPIN_KLOOK	16

bool pl_waiter_kernel(const struct pl_waiter *w)
{
	return pl_mixed_kernel_side || w->rounds % PL_SPIN_KLOOK == 1;
}

/*
 * Which side a mixed set sleeps on: the one that was busy last time in
 * this thread.  The other side is looked at after each slice, so it is
 * seen at most PL_SLICE_MS late; the busy side wakes the sleeper at once.
 */
__thread bool pl_mixed_kernel_side;

void pl_mixed_note(int sluice_ready, int kernel_ready)
{
	pl_mixed_kernel_side = kernel_ready > 0 && sluice_ready <= 0;
}

/* The sum of the sockets' wake sequences, read without the lock. */
static uint32_t wake_sum(struct sl_stack *s, const struct sluice_pollfd *p, unsigned int n)
{
	uint32_t sum = 0;

	for (unsigned int i = 0; i < n; i++)
		if (p[i].sd >= 0 && (uint32_t)p[i].sd < s->r->max_sockets)
			sum += sl_load_acquire(&sl_sock(s, (uint32_t)p[i].sd)->wake_seq);
	return sum;
}

/*
 * While spinning, the sockets are looked at under the stack lock only when
 * one of their wake sequences moved (every readiness change bumps it, under
 * the lock), when running the stack did some work, or every PL_LOOK_EVERY
 * rounds; otherwise a spinning reader would take the lock in a tight loop
 * and fight the writer it waits for.
 */
#define PL_LOOK_EVERY	64

static int sluice_wait(struct sluice_pollfd *p, unsigned int n, int timeout_ms, bool restartable,
		       uint64_t start, unsigned int spin_us);

int pl_sluice_wait(struct sluice_pollfd *p, unsigned int n, int timeout_ms, bool restartable)
{
	uint64_t start = pl_now_us();
	int ret;

	if (!timeout_ms)
		return sluice_wait(p, n, 0, restartable, start, 0);
	ret = sluice_wait(p, n, timeout_ms, restartable, start, pl_spin_begin());
	pl_spin_note(start);
	return ret;
}

static int sluice_wait(struct sluice_pollfd *p, unsigned int n, int timeout_ms, bool restartable,
		       uint64_t start, unsigned int spin_us)
{
	struct sluice_stack *st = pl_stack();
	struct sl_stack *s = pl_sl();
	uint64_t now;
	int64_t deadline = timeout_ms < 0 ? -1 : (int64_t)(start + (uint64_t)timeout_ms * 1000);
	unsigned int sigs = pl_sig_count(), spins = 0;
	uint32_t seen = 0;
	bool look = true;
	int ret, slice;

	for (;;) {
		now = pl_now_us();
		slice = 0;
		if (now - start < spin_us)
			pl_spin_tick(now);
		if (now - start >= spin_us) {
			pl_spin_end();
			slice = PL_SIG_SLICE_MS;
			if (deadline >= 0 && (int64_t)now + slice * 1000 > deadline)
				slice = deadline > (int64_t)now ?
					(int)((deadline - (int64_t)now + 999) / 1000) : 0;
			look = true;
		}
		if (look) {
			/* Spinning: look once; else the stack sleeps (its
			 * own spin is 0), woken by a change. */
			/* Sockets this thread's last receives drained, with
			 * nothing new since (sl_rx_left_idle(): a pgbench
			 * thread's ppoll() after its queries went out, a
			 * blocking read after the last one drained): no look
			 * under the lock before the spin or the first sleep
			 * (issue 18). */
			seen = wake_sum(s, p, n);
			ret = slice ? sl_poll_signals_idle(st, p, n, slice, pl_sig_count, sigs) :
			      sl_poll_idle(st, p, n) ? 0 : sluice_poll(st, p, n, 0);
			/* After every sleep, however it ended: a program whose
			 * waits end before a slice does (poll() with 100 ms in
			 * a loop, or woken by its sockets) swept never. */
			if (slice)
				pl_sweep();	/* rate-limited: sockets of processes that died */
			if (ret && ret != -EINTR)
				return ret;
		}
		if (pl_sig_count() != sigs) {
			bool restart = pl_sig_restart_since(sigs);

			sigs = pl_sig_count();
			pl_sig_take_restart();
			if (!restart || !restartable)
				return -EINTR;
		}
		if (deadline >= 0 && (int64_t)pl_now_us() >= deadline)
			return 0;
		if (!slice) {
			/* A peer that shares our CPU (more spinners than
			 * cores) gets it now and then, or every hand-over
			 * would cost a whole spin time. */
			if (!(++spins & 63))
				sl_sys_yield();
			for (int i = 0; i < 16; i++)
				__builtin_ia32_pause();
			look = !(spins % PL_LOOK_EVERY) || wake_sum(s, p, n) != seen ||
			       sluice_stack_poll(st) != 0;
		}
	}
}

static short to_sluice(short ev)
{
	if (ev & POLLRDNORM)
		ev |= POLLIN;
	if (ev & POLLWRNORM)
		ev |= POLLOUT;
	return ev;
}

static short from_sluice(short rev, short asked)
{
	if ((rev & POLLIN) && (asked & POLLRDNORM))
		rev |= POLLRDNORM;
	if ((rev & POLLOUT) && (asked & POLLWRNORM))
		rev |= POLLWRNORM;
	return rev & (asked | POLLERR | POLLHUP | POLLNVAL);
}

/* A sleep of w's: up to its deadline, at least 1 ms, at most cap_ms. */
int pl_waiter_slice(const struct pl_waiter *w, int cap_ms)
{
	int64_t left;

	if (w->deadline_us < 0)
		return cap_ms;
	left = (w->deadline_us - (int64_t)pl_now_us() + 999) / 1000;
	return left < 1 ? 1 : left < cap_ms ? (int)left : cap_ms;
}

/*
 * A kernel sleep on module socket fds: at most PL_KFD_SLICE_MS, and no
 * later than the wheel's next deadline if this thread is the timer keeper
 * (sl_wait_bound_ms(), as a futex sleep is bounded: at least 1 ms, the
 * deadline's slot rounded up).  Nothing else wakes this sleep for the
 * stack's timers: frames and socket changes wake it, a timer does not.
 * With the slice alone, a RACK reordering timer (a quarter of min_RTT),
 * a TLP or an RTO of a sender asleep in select() fired up to 10 ms late,
 * about one round trip more a recovery on a 10 ms path (issue 19 item 6;
 * tests/vm/sockfd.sh, "keepalive timers").
 */
int pl_kfd_slice(const struct pl_waiter *w)
{
	int b = sl_wait_bound_ms(pl_sl());

	return pl_waiter_slice(w, b < PL_KFD_SLICE_MS ? b : PL_KFD_SLICE_MS);
}

static int poll_wait(struct pollfd *fds, nfds_t n, int timeout_ms);

/* The shared core of poll/ppoll/select: returns the count or -errno. */
static int poll_core(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	uint64_t t0 = pl_now_us();
	int ret;

	pl_twin_watch_check();	/* a forked child's listeners (twin.c) */
	ret = poll_wait(fds, n, timeout_ms);

	if (timeout_ms)
		pl_spin_note(t0);
	return ret;
}

/*
 * poll_core(), and if a socket among the ready ones was handed to the
 * kernel by another process meanwhile (the stack's ho_seq moved: a live
 * hand-off ends the stack's socket, which then polls readable and hung
 * up), each such fd switches to the kernel socket (pl_ho_take()) and the
 * poll is made again for the time left: poll is level-triggered, so
 * nothing is lost, and the program sees the kernel socket's readiness,
 * not the ended socket's (lib/preload/README.md, "Other processes").
 */
static int poll_ho(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct sl_stack *s = pl_sl();
	uint32_t seq = s ? sl_load_acquire(&s->lib->ho_seq) : 0;
	uint64_t end = timeout_ms > 0 ? pl_now_us() + (uint64_t)timeout_ms * 1000 : 0;

	for (;;) {
		int r = poll_core(fds, n, timeout_ms);
		bool moved = false;

		if (r <= 0 || !s || __builtin_expect(sl_load_acquire(&s->lib->ho_seq) == seq, 1))
			return r;
		seq = sl_load_acquire(&s->lib->ho_seq);
		for (nfds_t i = 0; i < n; i++) {
			struct pl_sock *ps = fds[i].revents ? pl_get(fds[i].fd) : NULL;

			if (ps && pl_ho_seen(ps) && pl_ho_take(fds[i].fd, ps))
				moved = true;
			pl_put(ps);
		}
		if (!moved)
			return r;
		if (timeout_ms > 0)
			timeout_ms = pl_ms_until(end);
	}
}

static int poll_wait(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct sluice_pollfd sbuf[PL_STACK_FDS], *sp = sbuf;
	/* One more: the thread's bell (bell.c), while it sleeps. */
	struct pollfd kbuf[PL_STACK_FDS + 1], *kp = kbuf;
	int chans[SL_WAITV_MAX];
	nfds_t *kmap, kmbuf[PL_STACK_FDS], *smap, smbuf[PL_STACK_FDS];
	struct pl_waiter w;
	struct pl_bellreg bell = { .n = 0 };
	unsigned int ns = 0, nk = 0, sigs;
	int ready = 0, ret, sleep_ms;
	struct sluice_stack *st = pl_stack();
	bool kfd_only = true;

	kmap = kmbuf;
	smap = smbuf;
	if (n > PL_STACK_FDS) {
		sp = malloc(n * sizeof(*sp));
		kp = malloc((n + 1) * sizeof(*kp));
		kmap = malloc(n * sizeof(*kmap));
		smap = malloc(n * sizeof(*smap));
		if (!sp || !kp || !kmap || !smap) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (nfds_t i = 0; i < n; i++) {
		struct pl_sock *ps = pl_get_call(fds[i].fd);

		fds[i].revents = 0;
		if (ps) {
			kfd_only &= ps->kfd;
			sp[ns].sd = (int)ps->sd;
			sp[ns].events = to_sluice(fds[i].events);
			smap[ns++] = i;
			pl_put(ps);
		} else if (fds[i].fd >= 0) {
			kp[nk] = fds[i];
			kmap[nk++] = i;
		}
	}
	pl_waiter_init(&w, timeout_ms);
	sigs = pl_sig_count();
	while (kfd_only && ns) {
		/*
		 * Module socket fds: look at the Sluice part in user space and
		 * the kernel part without sleeping while spinning; then sleep
		 * in the kernel on the whole set (socket fds included) and the
		 * stack fd, in slices of PL_KFD_SLICE_MS (timers run between).
		 */
		ready = sluice_poll(st, sp, ns, 0);
		if (ready < 0) {
			ret = ready;
			goto out;
		}
		ret = nk ? REAL(poll)(kp, nk, 0) : 0;
		if (ret < 0) {
			ret = -errno;
			goto out;
		}
		if (ready || ret) {
			ready += ret;
			goto done;
		}
		if (!pl_waiter_next(&w, &sleep_ms))
			goto done;
		if (sleep_ms) {
			sleep_ms = pl_kfd_slice(&w);
			pl_kfd_sleep(fds, n, sleep_ms);
		} else {
			for (int i = 0; i < 16; i++)
				__builtin_ia32_pause();
		}
		if (pl_sig_count() != sigs) {
			pl_sig_take_restart();
			ret = -EINTR;	/* poll is never restarted */
			goto out;
		}
	}
	for (;;) {
		/* Sluice only: the whole wait in pl_sluice_wait(). */
		ret = nk ? sluice_poll(st, sp, ns, 0) : pl_sluice_wait(sp, ns, timeout_ms, false);
		if (ret < 0)
			goto out;
		ready = ret;
		if (nk) {
			sleep_ms = 0;
			if (!ready && !pl_waiter_next(&w, &sleep_ms))
				sleep_ms = 0;
			bell.n = 0;
			if (!ready && sleep_ms &&
			    pl_bell_begin(chans, sl_poll_channels(sp, ns, chans), NULL, 0, &bell) >= 0) {
				/* Both sides in one sleep: the kernel's, with
				 * the bell that a change of these Sluice
				 * sockets rings.  Registered before this last
				 * look, under the stack lock. */
				ready = sluice_poll(st, sp, ns, 0);
				if (ready) {
					pl_bell_end(&bell, false);
					sleep_ms = 0;
				} else {
					kp[nk].fd = bell.fd;
					kp[nk].events = POLLIN;
					kp[nk].revents = 0;
					sleep_ms = pl_bell_sleep_ms(&w);
				}
			} else if (!ready && sleep_ms && !pl_mixed_kernel_side) {
				/* Sluice was the busy side: sleep on the stack
				 * (woken at once), then look at the kernel. */
				ready = sluice_poll(st, sp, ns, sleep_ms);
				sleep_ms = 0;
			}
			if (ready < 0) {
				pl_bell_end(&bell, false);
				ret = ready;
				goto out;
			}
			ret = REAL(poll)(kp, nk + (bell.n > 0), ready ? 0 : sleep_ms);
			if (ret < 0)
				ret = -errno;
			if (bell.n) {
				bool rang = ret > 0 && kp[nk].revents;

				pl_bell_end(&bell, rang);
				if (rang) {
					ret--;
					if (!ready)	/* what rang it */
						ready = sluice_poll(st, sp, ns, 0);
				}
			}
			if (ret < 0)
				goto out;
			if (ret && !ready)	/* catch Sluice changes of the same moment */
				ready = sluice_poll(st, sp, ns, 0);
			if (ready < 0) {
				ret = ready;
				goto out;
			}
			if (ready || ret)
				pl_mixed_note(ready, ret);
			ready += ret;
			if (!ready && pl_sig_count() != sigs) {
				pl_sig_take_restart();
				ret = -EINTR;	/* poll is never restarted */
				goto out;
			}
		}
		if (ready || !nk || (w.deadline_us >= 0 && (int64_t)pl_now_us() >= w.deadline_us))
			break;
	}
done:
	for (unsigned int j = 0; j < ns; j++)
		fds[smap[j]].revents = from_sluice(sp[j].revents, fds[smap[j]].events);
	for (unsigned int j = 0; j < nk; j++)
		fds[kmap[j]].revents = kp[j].revents;
	ret = 0;
	for (nfds_t i = 0; i < n; i++)
		ret += fds[i].revents != 0;
out:
	if (sp != sbuf) {
		free(sp);
		free(kp);
		free(kmap);
		free(smap);
	}
	return ret;
}

/* More than the fd table may hold (Linux's poll(): RLIMIT_NOFILE,
 * EINVAL).  The limit is asked (a system call) only of an array longer
 * than any seen within it before: not on a program's every poll. */
static bool over_nofile(nfds_t n)
{
	static unsigned long seen = 256;
	struct rlimit rl;

	if (n <= SL_READ_ONCE(seen))
		return false;
	if (getrlimit(RLIMIT_NOFILE, &rl) || n > rl.rlim_cur)
		return true;
	SL_WRITE_ONCE(seen, n);
	return false;
}

/*
 * Any Sluice fd in the array?  An array longer than the fd table may
 * hold, or one that cannot be read: none, the kernel's answer (EINVAL,
 * EFAULT) without touching it here.  *wr: the array can take the events
 * back (else the wait is on a copy and EFAULT after it, as Linux's:
 * poll_unwritable()).  One probe a page, writing, in the usual case.
 */
static bool any_sluice(struct pollfd *fds, nfds_t n, bool *wr)
{
	if (over_nofile(n) || pl_bad_buf(fds, n * sizeof(*fds)))
		return false;
	*wr = pl_writable(fds, n * sizeof(*fds));
	if (!*wr && !pl_readable(fds, n * sizeof(*fds)))
		return false;
	for (nfds_t i = 0; i < n; i++)
		if (pl_is_sluice(fds[i].fd))
			return true;
	return false;
}

/* An array the events cannot go back to (a read-only page): Linux's
 * poll() waits on what it read at entry and finds so when it writes the
 * events, EFAULT whatever came, after the wait; the entries before the
 * one that faults get theirs. */
static int poll_unwritable(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct pollfd sbuf[PL_STACK_FDS], *k = sbuf;
	int ret;

	if (n > PL_STACK_FDS && !(k = malloc(n * sizeof(*k))))
		return -ENOMEM;
	ret = pl_copy_in(k, fds, n * sizeof(*k)) ? -EFAULT : poll_core(k, n, timeout_ms);
	for (nfds_t i = 0; ret != -EFAULT && i < n; i++)
		if (pl_copy_out(&fds[i].revents, &k[i].revents, sizeof(k[i].revents)))
			ret = -EFAULT;
	if (k != sbuf)
		free(k);
	return ret;
}

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	bool wr;

	if (!any_sluice(fds, n, &wr))
		return REAL(poll)(fds, n, timeout_ms);
	return (int)pl_ret(wr ? poll_ho(fds, n, timeout_ms) :
				poll_unwritable(fds, n, timeout_ms));
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return poll(fds, n, timeout_ms);
}

static int ts_ms(const struct timespec *ts)
{
	long long ms;

	if (!ts)
		return -1;
	ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	struct timespec kts;
	sigset_t old, kmask;
	bool wr;
	int ret;

	if (!any_sluice(fds, n, &wr))
		return REAL(ppoll)(fds, n, ts, mask);
	/* The timeout and the mask read as the kernel reads them: EFAULT. */
	if ((ts && pl_copy_in(&kts, ts, sizeof(kts))) || (mask && (sigemptyset(&kmask), pl_copy_in(&kmask, mask, 8))))
		return (int)pl_ret(-EFAULT);
	if (ts && (kts.tv_sec < 0 || kts.tv_nsec < 0 || kts.tv_nsec >= 1000000000))
		return (int)pl_ret(-EINVAL);
	if (mask)
		pthread_sigmask(SIG_SETMASK, &kmask, &old);
	ret = wr ? poll_ho(fds, n, ts_ms(ts ? &kts : NULL)) :
		   poll_unwritable(fds, n, ts_ms(ts ? &kts : NULL));
	if (mask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return (int)pl_ret(ret);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		       const sigset_t *mask, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return ppoll(fds, n, ts, mask);
}

/* The bytes of a set Linux's select() reads and writes for nfds. */
static size_t set_bytes(int nfds)
{
	return ((size_t)nfds + 63) / 64 * 8;
}

/* Sets that cannot be read (or nfds below 0): none of ours, the
 * kernel's answer (EFAULT, EINVAL). */
static bool sets_have_sluice(int nfds, fd_set *r, fd_set *w, fd_set *e)
{
	size_t nb = set_bytes(nfds < FD_SETSIZE ? nfds : FD_SETSIZE);

	if (nfds < 0 || (r && (pl_bad_buf(r, nb) || !pl_readable(r, nb))) ||
	    (w && (pl_bad_buf(w, nb) || !pl_readable(w, nb))) ||
	    (e && (pl_bad_buf(e, nb) || !pl_readable(e, nb))))
		return false;
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e))) &&
		    pl_is_sluice(fd))
			return true;
	return false;
}

/* select() through poll_core(): -errno or the number of bits left set. */
static int select_core(int nfds, fd_set *r, fd_set *w, fd_set *e, int timeout_ms)
{
	struct pollfd *fds;
	int n = 0, ret, count = 0;

	if (nfds < 0)
		return -EINVAL;
	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	fds = calloc((size_t)nfds + 1, sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (r && FD_ISSET(fd, r))
			ev |= POLLIN;
		if (w && FD_ISSET(fd, w))
			ev |= POLLOUT;
		if (e && FD_ISSET(fd, e))
			ev |= POLLPRI;
		if (!ev)
			continue;
		fds[n].fd = fd;
		fds[n++].events = ev;
	}
	ret = poll_ho(fds, (nfds_t)n, timeout_ms);
	if (ret < 0)
		goto out;
	for (int i = 0; i < n; i++)
		if (fds[i].revents & POLLNVAL) {
			ret = -EBADF;
			goto out;
		}
	/* Only the bytes nfds covers: the rest may not be the program's. */
	if (r)
		memset(r, 0, set_bytes(nfds));
	if (w)
		memset(w, 0, set_bytes(nfds));
	if (e)
		memset(e, 0, set_bytes(nfds));
	for (int i = 0; i < n; i++) {
		short ev = fds[i].events, rev = fds[i].revents;

		if ((ev & POLLIN) && (rev & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fds[i].fd, r);
			count++;
		}
		if ((ev & POLLOUT) && (rev & (POLLOUT | POLLERR))) {
			FD_SET(fds[i].fd, w);
			count++;
		}
		if ((ev & POLLPRI) && (rev & POLLPRI)) {
			FD_SET(fds[i].fd, e);
			count++;
		}
	}
	ret = count;
out:
	free(fds);
	return ret;
}

/*
 * select_core() on the program's sets, or, where one cannot take the
 * answer back (a read-only page), as Linux's core_sys_select(): on
 * copies read at entry, the answer written after the wait, EFAULT
 * there whatever came (an error of the wait itself, EBADF or EINTR,
 * first).
 */
static int select_sets(int nfds, fd_set *r, fd_set *w, fd_set *e, int timeout_ms)
{
	size_t nb = set_bytes(nfds < FD_SETSIZE ? nfds : FD_SETSIZE);
	fd_set k[3];
	fd_set *u[3] = { r, w, e };
	int ret;

	if ((!r || pl_writable(r, nb)) && (!w || pl_writable(w, nb)) && (!e || pl_writable(e, nb)))
		return select_core(nfds, r, w, e, timeout_ms);
	for (int i = 0; i < 3; i++)
		if (u[i] && pl_copy_in(&k[i], u[i], nb))
			return -EFAULT;
	ret = select_core(nfds, r ? &k[0] : NULL, w ? &k[1] : NULL, e ? &k[2] : NULL,
			  timeout_ms);
	for (int i = 0; ret >= 0 && i < 3; i++)
		if (u[i] && pl_copy_out(u[i], &k[i], nb))
			ret = -EFAULT;
	return ret;
}

EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	struct timeval ktv;
	uint64_t t0;
	long long ms = -1;
	int ret;

	if (!sets_have_sluice(nfds, r, w, e))
		return REAL(select)(nfds, r, w, e, tv);
	if (tv) {
		if (pl_copy_in(&ktv, tv, sizeof(ktv)))
			return (int)pl_ret(-EFAULT);
		if (ktv.tv_sec < 0 || ktv.tv_usec < 0)
			return (int)pl_ret(-EINVAL);
		ms = (long long)ktv.tv_sec * 1000 + (ktv.tv_usec + 999) / 1000;
		if (ms > 0x7fffffff)
			ms = 0x7fffffff;
	}
	t0 = pl_now_us();
	ret = select_sets(nfds, r, w, e, (int)ms);
	if (tv) {
		/* As Linux: the time not slept is left in the timeval. */
		long long left = (long long)ktv.tv_sec * 1000000 + ktv.tv_usec -
				 (long long)(pl_now_us() - t0);

		if (left < 0)
			left = 0;
		ktv.tv_sec = left / 1000000;
		ktv.tv_usec = left % 1000000;
		if (pl_copy_out(tv, &ktv, sizeof(ktv)))
			ret = -EFAULT;
	}
	return (int)pl_ret(ret);
}

EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		   const sigset_t *mask)
{
	struct timespec kts;
	sigset_t old, kmask;
	int ret;

	if (!sets_have_sluice(nfds, r, w, e))
		return REAL(pselect)(nfds, r, w, e, ts, mask);
	if ((ts && pl_copy_in(&kts, ts, sizeof(kts))) || (mask && (sigemptyset(&kmask), pl_copy_in(&kmask, mask, 8))))
		return (int)pl_ret(-EFAULT);
	if (mask)
		pthread_sigmask(SIG_SETMASK, &kmask, &old);
	ret = select_sets(nfds, r, w, e, ts_ms(ts ? &kts : NULL));
	if (mask)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return (int)pl_ret(ret);
}
