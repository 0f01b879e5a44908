// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack lock: a futex word in the region shared by every process that
 * runs the stack.  Work another process wants done while the lock is held
 * is deferred lock-free (a flag on the socket and a tagged stack of socket
 * indices) and run by the holder before it lets go.  A process that dies
 * holding the lock is found by the waiters (its pid no longer exists) and
 * the stack is marked broken: every later call fails with -EPIPE instead
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
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sock.h"

#define LOCKW(s)	((_Atomic uint32_t *)&(s)->r->lock)
/*
 * The holder's pid is in the lock word itself (SLUICE_LOCK_PID_SHIFT):
 * taking the lock and naming the holder are one compare-and-swap.  With
 * the pid only in lock_owner, written after the swap, a process killed
 * between the two left a held lock that named nobody, and every waiter
 * slept on it forever (test_death, "killed before naming itself").
 * lock_owner is still written, for people reading dumps.
 */
#define LOCK_FLAGS	(SLUICE_LOCK_WAITERS | SLUICE_LOCK_DEFERRED)
#define OWNERW(s)	((_Atomic int32_t *)&(s)->r->lock_owner)
#define SPIN_TRIES	2000
/* A sleeper re-checks the holder's liveness this often. */
#define CHECK_NS	(20 * 1000 * 1000)

static pid_t cached_pid;

static uint32_t lock_word_held(uint32_t v);
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void pid_refresh(void)
{
	cached_pid = getpid();
}

static void pid_init(void)
{
	pid_refresh();
	pthread_atfork(NULL, NULL, pid_refresh);
}

/* This process's pid without a system call on the hot path. */
pid_t sl_self_pid(void)
{
	pthread_once(&pid_once, pid_init);
	return cached_pid;
}

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static bool stack_broken(struct sl_stack *s)
{
	return atomic_load_explicit((_Atomic uint32_t *)&s->r->state,
				    memory_order_acquire) == SLUICE_STATE_BROKEN;
}

int sl_broken_err(const struct sl_stack *s)
{
	/* broken_pid 0: no process died, a value in the region was found
	 * impossible (sl_corrupt()).  ENOTRECOVERABLE as a robust mutex
	 * whose state was left inconsistent; and no SIGPIPE from a send. */
	if (s->corrupt || !s->r->broken_pid)
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
static union {
	struct sl_sock so;
	uint8_t bytes[1024];
} sink_sock __attribute__((aligned(64)));
static uint8_t sink_data[SLUICE_STACK_MAX_BUF_SIZE + SL_REGION_SLACK] __attribute__((aligned(64)));

_Static_assert(sizeof(struct sl_sock) <= sizeof(sink_sock), "the sink holds a socket slot");

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
	/* Someone only looking (sluice dump) leaves the region alone. */
	if (s->inspect)
		return;
	if (s->ctr)
		s->ctr->c[why]++;
	s->r->broken_pid = 0;
	atomic_store_explicit((_Atomic uint32_t *)&s->r->state, SLUICE_STATE_BROKEN,
			      memory_order_release);
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

struct sl_sock *sl_sock_bad(const struct sl_stack *s, uint32_t idx)
{
	struct sl_sock *so = &sink_sock.so;

	sl_corrupt((struct sl_stack *)s, SL_C_corrupt_sock_idx, idx);
	so->type = SL_SOCK_FREE;
	so->idx = so->next_idx = so->hash_next = so->parent_idx = SLUICE_IDX_NONE;
	so->rxq_head = so->rxq_tail = SLUICE_IDX_NONE;
	so->wheel_next = so->wheel_prev = so->defer_next = so->port_next = SLUICE_IDX_NONE;
	so->wheel_due_ms = 0;
	so->tcp.sndq_head = so->tcp.sndq_tail = so->tcp.sndq_hint = SLUICE_IDX_NONE;
	so->tcp.ooo_head = so->tcp.acc_head = so->tcp.acc_tail = SLUICE_IDX_NONE;
	so->tcp.mss = 536;
	so->tcp.cwnd = 536;
	return so;
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
	s->r->broken_pid = owner;
	sl_count(s, SL_C_lock_broken);
	atomic_store_explicit((_Atomic uint32_t *)&s->r->state, SLUICE_STATE_BROKEN,
			      memory_order_release);
	futex(LOCKW(s), FUTEX_WAKE, INT_MAX, NULL);
}

/* Gone, or a zombie nobody has reaped yet: either way it will never
 * release the lock. */
bool sl_pid_dead(pid_t owner)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (owner <= 0)
		return false;
	if (kill(owner, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)owner);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static void took_lock(struct sl_stack *s)
{
	pid_t self = sl_self_pid();

	atomic_store_explicit(OWNERW(s), self, memory_order_relaxed);
	s->locked = true;
	if (s->ctr_pid != self)
		sl_counters_claim(s);	/* first lock, or a forked child */
}

void sl_counters_claim(struct sl_stack *s)
{
	struct sluice_region *r = s->r;
	uint32_t self = (uint32_t)sl_self_pid();
	int i, pick = -1;

	/* Ours already, else a free block, else one whose process is gone
	 * (its counts stay: the sums only grow), else the last block. */
	for (i = 0; i < SLUICE_PROC_MAX; i++)
		if (r->counter_pid[i] == self)
			pick = i;
	for (i = 0; pick < 0 && i < SLUICE_PROC_MAX; i++)
		if (!r->counter_pid[i])
			pick = i;
	for (i = 0; pick < 0 && i < SLUICE_PROC_MAX; i++)
		if (sl_pid_dead((pid_t)r->counter_pid[i]) || kill((pid_t)r->counter_pid[i], 0))
			pick = i;
	if (pick < 0)
		pick = SLUICE_PROC_MAX - 1;
	r->counter_pid[pick] = self;
	s->ctr = &r->counters[pick];
	s->ctr_pid = (pid_t)self;
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

	for (int i = 0; i < SLUICE_PROC_MAX; i++)
		sum += s->r->counters[i].c[c];
	return sum;
}

bool sl_trylock(struct sl_stack *s)
{
	uint32_t v = atomic_load_explicit(LOCKW(s), memory_order_relaxed);

	if (s->corrupt)
		return false;
	while (!(v & SLUICE_LOCK_HELD)) {
		/* Acquire: the holder's writes to the region are visible. */
		if (atomic_compare_exchange_weak_explicit(LOCKW(s), &v, lock_word_held(v),
							  memory_order_acquire,
							  memory_order_relaxed)) {
			took_lock(s);
			return true;
		}
	}
	return false;
}

int sl_lock(struct sl_stack *s)
{
	struct timespec ts = { 0, CHECK_NS };
	uint32_t v;
	int i;

	if (s->corrupt || stack_broken(s))
		return sl_broken_err(s);
	for (i = 0; i < SPIN_TRIES; i++) {
		if (sl_trylock(s))
			return 0;
		__builtin_ia32_pause();
	}
	s->r->lock_contended++;
	for (;;) {
		v = atomic_load_explicit(LOCKW(s), memory_order_relaxed);
		if (!(v & SLUICE_LOCK_HELD)) {
			/* Taken after sleeping: others may sleep too, keep WAITERS. */
			if (atomic_compare_exchange_weak_explicit(
				    LOCKW(s), &v, lock_word_held(v) | SLUICE_LOCK_WAITERS,
				    memory_order_acquire, memory_order_relaxed)) {
				took_lock(s);
				return 0;
			}
			continue;
		}
		if (!(v & SLUICE_LOCK_WAITERS) &&
		    !atomic_compare_exchange_weak_explicit(LOCKW(s), &v, v | SLUICE_LOCK_WAITERS,
							   memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		if (!s->futex_ok ||
		    (futex(LOCKW(s), FUTEX_WAIT, v | SLUICE_LOCK_WAITERS, &ts) && errno == EFAULT)) {
			/* The region's pages cannot key a shared futex (a
			 * module before shmem regions, see sl_futex_usable()):
			 * sleep a little instead. */
			struct timespec nap = { 0, 50 * 1000 };

			s->futex_ok = false;
			nanosleep(&nap, NULL);
		}
		if (stack_broken(s))
			return sl_broken_err(s);
		v = atomic_load_explicit(LOCKW(s), memory_order_relaxed);
		if (v & SLUICE_LOCK_HELD) {
			pid_t owner = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);

			/* Held, naming no process there can be (pid_max is
			 * at most 2^22; taking the lock names the taker). */
			if (owner <= 0 || owner > (1 << 22)) {
				sl_corrupt(s, SL_C_corrupt_lock, v);
				return sl_broken_err(s);
			}
			if (sl_lock_holder_dead(s, owner)) {
				mark_broken(s, owner);
				return -EPIPE;
			}
		}
	}
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
	v = atomic_load_explicit(LOCKW(s), memory_order_acquire);
	return (v & SLUICE_LOCK_HELD) && (pid_t)(v >> SLUICE_LOCK_PID_SHIFT) == seen;
}

/* Pop every deferred socket and run its work; lock held. */
static void run_deferred(struct sl_stack *s)
{
	_Atomic uint64_t *head = (_Atomic uint64_t *)&s->r->defer_head;
	uint64_t h = atomic_load_explicit(head, memory_order_acquire);
	uint32_t idx, steps = 0;

	/* Take the whole list at once, keeping the tag moving (ABA). */
	while (!atomic_compare_exchange_weak_explicit(
		head, &h, ((h >> 32) + 1) << 32 | SLUICE_IDX_NONE,
		memory_order_acquire, memory_order_acquire))
		;
	for (idx = (uint32_t)h; sl_sock_next(s, idx, &steps);) {
		struct sl_sock *so = sl_sock(s, idx);
		uint32_t next = so->defer_next;
		uint32_t work = atomic_exchange_explicit((_Atomic uint32_t *)&so->defer_work, 0,
							 memory_order_acq_rel);

		sl_count(s, SL_C_defer_run);
		if (so->type != SL_SOCK_FREE && sl_sock_sane(s, so))
			sl_sock_run_work(s, so, work);
		idx = next;
	}
}

/* ---- socket fds (uapi "Socket fds") ------------------------------------ */

int (*sl_sockfd_ioctl)(int fd, unsigned long req, void *arg);

/*
 * The slots whose pollers were armed, for one SOCK_WAKE after the unlock.
 * Per thread, not in the stack handle: another thread of this process may
 * take the lock, and write the handle, as soon as we let go.  Initial-exec
 * TLS: no __tls_get_addr call on the unlock path.
 */
static __thread struct {
	struct sl_stack *s;
	unsigned int n;
	uint32_t idx[SL_KP_WAKES];
} kp_w __attribute__((tls_model("initial-exec")));

#define KP_U32(p)	((_Atomic uint32_t *)(p))

/* One SOCK_WAKE for the n slots at idx. */
static void kp_wake(struct sl_stack *s, const uint32_t *idx, unsigned int n)
{
	struct sluice_sock_wake w = {
		.size = sizeof(w), .n = n, .idx_ptr = (uintptr_t)idx,
	};

	if (sl_sockfd_ioctl)
		sl_sockfd_ioctl(s->region_fd, SLUICE_IOC_SOCK_WAKE, &w);
	else
		ioctl(s->region_fd, SLUICE_IOC_SOCK_WAKE, &w);
}

void sl_kp_publish(struct sl_stack *s, struct sl_sock *so)
{
	uint32_t ev, old = so->kp.events;
	/* New data; on a listener, a connection queued (it is woken then). */
	uint32_t rx = so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN ?
		      so->wake_seq : (uint32_t)so->rx_bytes;

	if (so->type == SL_SOCK_FREE) {
		ev = SL_EV_ERR | SL_EV_HUP;
	} else {
		ev = sl_sock_events(s, so);
		if (ev & SL_EV_IN)
			ev |= EPOLLRDNORM;
		if (ev & SL_EV_OUT)
			ev |= EPOLLWRNORM;
	}
	/*
	 * Events, full barrier, then armed: pairs with the module's poll,
	 * which sets armed, full barrier, reads events.  Either it reads
	 * these events or we see armed and wake it.  armed is read first and
	 * exchanged only when set, so nobody polling costs no store.
	 */
	atomic_store_explicit(KP_U32(&so->kp.events), ev, memory_order_relaxed);
	/*
	 * A poller is woken for what it could not have seen: bits that came
	 * up, or new data (an edge for EPOLLET, as a kernel socket's
	 * data_ready).  Bits that went down (data read, send space used) or
	 * an ACK that changed nothing visible wake nobody, and leave armed
	 * set: the poller's view is still right.
	 */
	if (!(ev & ~old) && rx == so->kp_rx_mark)
		return;
	so->kp_rx_mark = rx;
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(KP_U32(&so->kp.armed), memory_order_relaxed) ||
	    !atomic_exchange_explicit(KP_U32(&so->kp.armed), 0, memory_order_relaxed))
		return;
	/* Rare: so many at once, or another stack's left (a thread holding
	 * two stacks): woken now, under the lock. */
	if (kp_w.n == SL_KP_WAKES || (kp_w.n && kp_w.s != s)) {
		kp_wake(kp_w.s, kp_w.idx, kp_w.n);
		kp_w.n = 0;
	}
	if (!kp_w.n)
		sl_count(s, SL_C_sockfd_wake);
	kp_w.s = s;
	kp_w.idx[kp_w.n++] = so->idx;
}

/* Lock held: publish what sl_sock_wake() noted. */
static void kp_publish_noted(struct sl_stack *s)
{
	/* Our checked copy: the region's may be anything (a scan of 2^32). */
	uint32_t max = s->max_sockets;

	if (s->kp_n == SL_KP_SCAN) {
		for (uint32_t i = 0; i < max; i++) {
			struct sl_sock *so = sl_sock(s, i);

			if (atomic_load_explicit(KP_U32(&so->kp.kstate), memory_order_relaxed) !=
			    SLUICE_KSOCK_NONE)
				sl_kp_publish(s, so);
		}
	} else {
		for (unsigned int i = 0; i < s->kp_n; i++)
			if (s->kp_note[i] < max)
				sl_kp_publish(s, sl_sock(s, s->kp_note[i]));
	}
	s->kp_n = 0;
}

/* After the unlock: the one SOCK_WAKE. */
static void __attribute__((noinline)) kp_wake_flush(void)
{
	kp_wake(kp_w.s, kp_w.idx, kp_w.n);
	kp_w.n = 0;
}

/* Close a released socket as close() would.  Lock held. */
static bool ksock_close(struct sl_stack *s, struct sl_sock *so)
{
	if (so->type == SL_SOCK_FREE || (so->flags & SL_SF_ORPHAN) ||
	    atomic_load_explicit(KP_U32(&so->kp.kstate), memory_order_relaxed) !=
	    SLUICE_KSOCK_RELEASED)
		return false;
	sl_count(s, SL_C_sockfd_released);
	if (so->type == SL_SOCK_TCP)
		sl_tcp_close(s, so, sl_now(s));
	else
		sl_sock_free(s, so);
	return true;
}

void sl_ksock_reap(struct sl_stack *s)
{
	struct sluice_region *r = s->r;
	/* Acquire: the module set kstate before it stored the count. */
	uint32_t rel = atomic_load_explicit(KP_U32(&r->ksock_released), memory_order_acquire);

	if (rel == r->ksock_handled)
		return;
	r->ksock_handled = rel;
	for (uint32_t i = 0; i < s->max_sockets; i++)
		ksock_close(s, sl_sock(s, i));
}

bool sl_ksock_close_released(struct sl_stack *s, uint32_t sd, uint32_t gen)
{
	struct sluice_region *r = s->r;
	struct sl_sock *so;
	uint32_t rel;

	if (sd >= s->max_sockets)
		return false;
	so = sl_sock(s, sd);
	if (so->kp.gen != gen)
		return false;
	rel = atomic_load_explicit(KP_U32(&r->ksock_released), memory_order_acquire);
	if (!ksock_close(s, so))
		return false;
	/* Ours was the only release not handled: no scan needed for it. */
	if (rel == r->ksock_handled + 1)
		r->ksock_handled = rel;
	return true;
}

void sl_unlock(struct sl_stack *s)
{
	unsigned int budget = SL_LO_BUDGET;
	bool lo_left = false, counted = false;
	uint32_t v;

	/* Sockets whose last socket fd went (a killed process's too). */
	if (s->module_backed)
		sl_ksock_reap(s);
	for (;;) {
		/* A corrupt stack runs nothing more: let go, and wake every
		 * waiter and sleeper to find it broken (sl_lock()). */
		if (s->corrupt) {
			atomic_store_explicit(OWNERW(s), 0, memory_order_relaxed);
			atomic_exchange_explicit(LOCKW(s), 0, memory_order_release);
			s->locked = false;
			s->wake_pending = s->wake_poll = false;
			futex(LOCKW(s), FUTEX_WAKE, INT_MAX, NULL);
			futex((_Atomic uint32_t *)&s->r->wake_seq, FUTEX_WAKE, INT_MAX, NULL);
			return;
		}
		lo_left = sl_stack_drain_loopback(s, &budget);
		v = atomic_load_explicit(LOCKW(s), memory_order_relaxed);
		if (v & SLUICE_LOCK_DEFERRED) {
			if (atomic_compare_exchange_weak_explicit(LOCKW(s), &v,
								  v & ~SLUICE_LOCK_DEFERRED,
								  memory_order_acquire,
								  memory_order_relaxed))
				run_deferred(s);
			continue;
		}
		/* More came while we delivered: again, within the budget. */
		if (lo_left && budget)
			continue;
		if (lo_left && !counted) {
			sl_count(s, SL_C_loopback_left);
			counted = true;
		}
		/* Readiness of sockets with socket fds, for their pollers. */
		if (s->kp_n)
			kp_publish_noted(s);
		/* What this holder queued on the link leaves in one batch,
		 * before the next holder can queue behind it. */
		if (s->link && s->link->tx_pending && s->link->ops->flush)
			s->link->ops->flush(s->link, s);
		/* Cleared before the release: see sl_lock_holder_dead(). */
		atomic_store_explicit(OWNERW(s), 0, memory_order_relaxed);
		/* Release: our writes to the region are visible to the next holder. */
		if (atomic_compare_exchange_weak_explicit(LOCKW(s), &v, 0, memory_order_release,
							  memory_order_relaxed))
			break;
		atomic_store_explicit(OWNERW(s), sl_self_pid(), memory_order_relaxed);
	}
	s->locked = false;
	if (v & SLUICE_LOCK_WAITERS)
		futex(LOCKW(s), FUTEX_WAKE, 1, NULL);
	/* One SOCK_WAKE for every armed socket fd this holder changed. */
	if (__builtin_expect(kp_w.n != 0, 0))
		kp_wake_flush();
	if (s->wake_pending) {
		s->wake_pending = false;
		/* Sleepers on the futex (api.c, sleep_round()). */
		if (s->futex_ok)
			futex((_Atomic uint32_t *)&s->r->wake_seq, FUTEX_WAKE, INT_MAX, NULL);
		/* Sleepers in poll on a stack fd: they watch a link fd too, or
		 * the module's regions take no futex. */
		if (s->wake_poll && s->module_backed) {
			struct sluice_stack_wake w = {
				.size = sizeof(w), .flags = SLUICE_WAKE_SIGNAL,
			};

			ioctl(s->region_fd, SLUICE_IOC_STACK_WAKE, &w);
		}
		s->wake_poll = false;
	}
}

bool sl_lock_or_defer(struct sl_stack *s, uint32_t sock_idx, uint32_t work)
{
	struct sl_sock *so = sl_sock(s, sock_idx);
	_Atomic uint64_t *head = (_Atomic uint64_t *)&s->r->defer_head;
	uint32_t old, v;
	uint64_t h;

	old = atomic_fetch_or_explicit((_Atomic uint32_t *)&so->defer_work, work,
				       memory_order_acq_rel);
	if (!old) {
		/* First work for this socket: push it (release: defer_next first). */
		h = atomic_load_explicit(head, memory_order_relaxed);
		do {
			so->defer_next = (uint32_t)h;
		} while (!atomic_compare_exchange_weak_explicit(
			head, &h, ((h >> 32) + 1) << 32 | sock_idx,
			memory_order_release, memory_order_relaxed));
	}
	v = atomic_load_explicit(LOCKW(s), memory_order_relaxed);
	for (;;) {
		if (!(v & SLUICE_LOCK_HELD)) {
			if (atomic_compare_exchange_weak_explicit(LOCKW(s), &v,
								  lock_word_held(v),
								  memory_order_acquire,
								  memory_order_relaxed)) {
				took_lock(s);
				run_deferred(s);
				return true;
			}
			continue;
		}
		/* Held: tell the holder; it runs the work before unlocking. */
		if (atomic_compare_exchange_weak_explicit(LOCKW(s), &v, v | SLUICE_LOCK_DEFERRED,
							  memory_order_release,
							  memory_order_relaxed)) {
			s->r->lock_deferred++;
			return false;
		}
	}
}
