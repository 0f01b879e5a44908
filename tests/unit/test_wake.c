// SPDX-License-Identifier: BSD-2-Clause
/*
 * Waiting on a shared stack, between two processes: how long a process
 * asleep for the stack lock takes to get it once the holder lets go; how
 * often such a waiter wakes while the lock stays held (a futex sleeper
 * wakes only for its liveness check, a napping one every 50 us); how long
 * a process asleep in recv takes to wake once another sends to it, with
 * no link (a futex sleeper) and with a link fd to watch.  Runs
 * on whatever region the stack gets: the module's when it is loaded
 * (tests/vm/lib_on_module.sh), /dev/shm otherwise.  Timings are printed
 * (machines are noisy, TCG in the VM slower still); the assertions are
 * that every hand-over and wakeup happens, and happens by a wakeup, not
 * by a sleep running out.
 *
 * With SLUICE_EXPECT_FUTEX=1 it also asserts that shared futexes work on
 * the stack's region (and so that the futex paths were the ones timed).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "stack_fixture.h"

#define ST(s)		((struct sluice_stack *)(s))
#define ROUNDS		30
#define HOLD_MS		200

/* Processes asleep on socket sd: on its wait channel (a blocking call on
 * it alone), or on the stack's futex. */
static uint32_t sleepers_of(struct sl_stack *s, int sd)
{
	return SL_READ_ONCE(s->lib->wq[sd & (SL_WQ_N - 1)].sleepers) + SL_READ_ONCE(s->r->sleepers);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, and the figures line; @v is sorted in place. */
static double report(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	printf("# %s over %d rounds: median %.1f us, min %.1f us, max %.1f us\n",
	       what, n, v[n / 2], v[0], v[n - 1]);
	return v[n / 2];
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* Until the lock word shows a sleeping waiter, for at most 2 s. */
static bool waiter_asleep(struct sl_stack *s)
{
	for (int i = 0; i < 2000; i++) {
		if (atomic_load((_Atomic uint32_t *)&s->r->lock) & SLUICE_LOCK_WAITERS)
			return true;
		sleep_ms(1);
	}
	return false;
}

/*
 * The holder lets go while another process sleeps for the lock: the time
 * from the release to the waiter holding it.
 */
static void test_lock_handover(void)
{
	struct sl_stack *s = fx_stack("wakelk", "10.0.0.1", NULL);
	double lat[ROUNDS], t0, t1;
	int go[2], back[2], n = 0;
	char c;
	pid_t pid;

	sluice_stack_set_clock(ST(s), NULL, NULL);
	if (pipe(go) || pipe(back)) {
		tap_ok(0, "pipes");
		return;
	}
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < ROUNDS; i++) {
			if (read(go[0], &c, 1) != 1 || sl_lock(s))
				_exit(1);
			t1 = now_us();
			sl_unlock(s);
			if (write(back[1], &t1, sizeof(t1)) != sizeof(t1))
				_exit(2);
		}
		_exit(0);
	}
	for (int i = 0; i < ROUNDS; i++) {
		if (sl_lock(s))
			break;
		if (write(go[1], "g", 1) != 1 || !waiter_asleep(s)) {
			sl_unlock(s);
			break;
		}
		sleep_ms(2);	/* from "set WAITERS" to asleep in the kernel */
		t0 = now_us();
		sl_unlock(s);
		if (read(back[0], &t1, sizeof(t1)) != sizeof(t1))
			break;
		lat[n++] = t1 - t0;
	}
	tap_eq(wait_child(pid), 0, "the waiter took and released the lock every round");
	tap_eq(n, ROUNDS, "every round handed the lock over to a sleeping waiter");
	if (n) {
		double med = report("lock hand-over to a sleeping waiter", lat, n);

		/* A missed wake would wait out the 20 ms liveness check. */
		tap_ok(med < 10000, "the waiter is woken, not timed out (median %.0f us)", med);
	}
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);
	fx_destroy(s);
}

/*
 * A waiter while the lock stays held for HOLD_MS: how many times it
 * wakes (voluntary context switches) and how much CPU it burns.
 */
static void test_lock_waiter_sleeps(void)
{
	struct sl_stack *s = fx_stack("wakeslp", "10.0.0.1", NULL);
	bool futex = sl_futex_usable(s);
	int go[2], back[2];
	long res[3] = { -1, -1, -1 };
	char c;
	pid_t pid;

	sluice_stack_set_clock(ST(s), NULL, NULL);
	if (pipe(go) || pipe(back)) {
		tap_ok(0, "pipes");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct rusage a, b;
		double t0;

		if (read(go[0], &c, 1) != 1)
			_exit(3);
		t0 = now_us();
		getrusage(RUSAGE_SELF, &a);
		if (sl_lock(s))
			_exit(1);
		getrusage(RUSAGE_SELF, &b);
		sl_unlock(s);
		res[0] = b.ru_nvcsw - a.ru_nvcsw;
		res[1] = (b.ru_utime.tv_sec - a.ru_utime.tv_sec) * 1000000L +
			 (b.ru_utime.tv_usec - a.ru_utime.tv_usec) +
			 (b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1000000L +
			 (b.ru_stime.tv_usec - a.ru_stime.tv_usec);
		res[2] = (long)(now_us() - t0);
		_exit(write(back[1], res, sizeof(res)) == sizeof(res) ? 0 : 2);
	}
	if (!sl_lock(s)) {
		if (write(go[1], "g", 1) == 1 && waiter_asleep(s))
			sleep_ms(HOLD_MS);
		sl_unlock(s);
	}
	tap_eq(wait_child(pid), 0, "the waiter got the lock after the holder let go");
	tap_ok(read(back[0], res, sizeof(res)) == sizeof(res), "the waiter reported");
	printf("# a lock waiter over %ld ms held (%s): %ld wakeups, %ld us of CPU\n",
	       res[2] / 1000, futex ? "futex" : "naps", res[0], res[1]);
	if (futex)
		/* 20 ms liveness checks: about ten, not thousands of naps. */
		tap_ok(res[0] >= 0 && res[0] < 100,
		       "a futex waiter sleeps until woken (%ld wakeups)", res[0]);
	else
		tap_ok(res[0] > 0, "no shared futexes here: the waiter napped (%ld wakeups)",
		       res[0]);
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);
	fx_destroy(s);
}

/*
 * A process with no link asleep in recv on a UDP socket; another sends to
 * it over the stack's loopback: the time from the send to recv returning.
 */
static void test_sleeper_wakeup(void)
{
	struct sl_stack *s = fx_stack("wakerx", "10.0.0.1", NULL);
	struct sockaddr_in u = { .sin_family = AF_INET, .sin_port = htons(7600) };
	int us, tx, back[2], n = 0;
	double lat[ROUNDS], t0, t1;
	pid_t pid;

	sluice_stack_set_clock(ST(s), NULL, NULL);
	u.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	us = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tap_eq(sluice_bind(ST(s), us, &u), 0, "a UDP socket for the sleeper");
	if (pipe(back)) {
		tap_ok(0, "pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		char b[8];

		sluice_stack_set_spin(ST(s), 0);	/* straight to sleep */
		for (int i = 0; i < ROUNDS; i++) {
			if (sluice_recv(ST(s), us, b, sizeof(b), 0) != 4)
				_exit(1);
			t1 = now_us();
			if (write(back[1], &t1, sizeof(t1)) != sizeof(t1))
				_exit(2);
		}
		_exit(0);
	}
	for (int i = 0; i < ROUNDS; i++) {
		int waited = 0;

		while (!sleepers_of(s, us) && waited++ < 2000)
			sleep_ms(1);
		if (!sleepers_of(s, us))
			break;
		sleep_ms(2);	/* from "counted" to asleep in the kernel */
		t0 = now_us();
		if (sluice_sendto(ST(s), tx, "wake", 4, 0, &u) != 4 ||
		    read(back[0], &t1, sizeof(t1)) != sizeof(t1))
			break;
		lat[n++] = t1 - t0;
	}
	tap_eq(wait_child(pid), 0, "the sleeper received every datagram");
	tap_eq(n, ROUNDS, "every round woke a sleeping receiver");
	if (n) {
		double med = report("wakeup of a sleeper in recv", lat, n);

		/* A missed wake would sleep out the 10 ms cap. */
		tap_ok(med < 5000, "the sleeper is woken, not timed out (median %.0f us)", med);
	}
	tap_eq(sleepers_of(s, us), 0, "no sleepers left");
	sluice_close(ST(s), us);
	sluice_close(ST(s), tx);
	close(back[0]);
	close(back[1]);
	fx_destroy(s);
}

/* A link with an fd that never becomes readable, and nothing to send. */
struct idle_link {
	struct sl_link link;
	int fd;
};

static int idle_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	(void)l, (void)s, (void)idx, (void)nh;
	return -ENETDOWN;
}

static int idle_fd(struct sl_link *l)
{
	return ((struct idle_link *)l)->fd;
}

static const struct sl_link_ops idle_ops = { .name = "idle", .tx = idle_tx, .fd = idle_fd };

/*
 * The same with a sleeper that has a link fd to watch: on a module's stack
 * it sleeps in poll on the stack fd and that fd together, counted in
 * poll_sleepers, and the waker must signal the stack fd (else it sleeps
 * out the 10 ms cap).  Without the module it polls the link fd in 2 ms
 * slices (nothing can wake it early): only the count is asserted there.
 */
static void test_sleeper_with_link_wakeup(void)
{
	struct sl_stack *s = fx_stack("wakelnk", "10.0.0.1", NULL);
	struct sockaddr_in u = { .sin_family = AF_INET, .sin_port = htons(7601) };
	int us, tx, back[2], idle[2], n = 0, pollers = -1;
	double lat[ROUNDS], t0, t1;
	pid_t pid;

	sluice_stack_set_clock(ST(s), NULL, NULL);
	u.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	us = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tap_eq(sluice_bind(ST(s), us, &u), 0, "a UDP socket for the sleeper with a link");
	if (pipe(back) || pipe(idle)) {
		tap_ok(0, "pipes");
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct idle_link l = { .link = { .ops = &idle_ops, .mtu = 1500 }, .fd = idle[0] };
		char b[8];

		s->link = &l.link;	/* this process's handle only */
		sluice_stack_set_spin(ST(s), 0);
		for (int i = 0; i < ROUNDS; i++) {
			if (sluice_recv(ST(s), us, b, sizeof(b), 0) != 4)
				_exit(1);
			t1 = now_us();
			if (write(back[1], &t1, sizeof(t1)) != sizeof(t1))
				_exit(2);
		}
		s->link = NULL;
		_exit(0);
	}
	for (int i = 0; i < ROUNDS; i++) {
		int waited = 0;

		while (!sleepers_of(s, us) && waited++ < 2000)
			sleep_ms(1);
		if (!sleepers_of(s, us))
			break;
		if (!i)
			pollers = (int)s->lib->poll_sleepers;
		sleep_ms(2);
		t0 = now_us();
		if (sluice_sendto(ST(s), tx, "wake", 4, 0, &u) != 4 ||
		    read(back[0], &t1, sizeof(t1)) != sizeof(t1))
			break;
		lat[n++] = t1 - t0;
	}
	tap_eq(wait_child(pid), 0, "the sleeper with a link received every datagram");
	tap_eq(n, ROUNDS, "every round woke it");
	tap_ok(pollers == (s->module_backed ? 1 : 0),
	       "it counted in poll_sleepers only on a module's stack (%s: %d)",
	       s->module_backed ? "module" : "/dev/shm", pollers);
	if (n) {
		double med = report(s->module_backed ?
				    "wakeup of a sleeper in recv with a link (stack fd)" :
				    "wakeup of a sleeper in recv with a link (2 ms slices)", lat, n);

		if (s->module_backed)
			tap_ok(med < 5000, "the stack fd was signalled, not timed out (median %.0f us)",
			       med);
	}
	tap_eq(s->lib->poll_sleepers, 0, "no pollers left");
	sluice_close(ST(s), us);
	sluice_close(ST(s), tx);
	close(back[0]);
	close(back[1]);
	close(idle[0]);
	close(idle[1]);
	fx_destroy(s);
}

static void test_region_keys_futexes(void)
{
	const char *want = getenv("SLUICE_EXPECT_FUTEX");
	struct sl_stack *s = fx_stack("wakefx", "10.0.0.1", NULL);
	bool ok = sl_futex_usable(s);

	printf("# region: %s; shared futexes: %s\n",
	       s->module_backed ? "the module's" : "/dev/shm", ok ? "yes" : "no");
	if (want && *want == '1')
		tap_ok(ok, "shared futexes work on this stack's region (%s)",
		       s->module_backed ? "module" : "/dev/shm");
	fx_destroy(s);
}

int main(void)
{
	test_region_keys_futexes();
	test_lock_handover();
	test_lock_waiter_sleeps();
	test_sleeper_wakeup();
	test_sleeper_with_link_wakeup();
	return tap_done();
}
