// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack lock across processes: mutual exclusion, a waiter woken by
 * the release, and a holder that dies making the stack broken (never a
 * hang).
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "stack_fixture.h"

static void test_mutual_exclusion(void)
{
	struct sl_stack *s = fx_stack("lockmx", "10.0.0.1", NULL);
	const int rounds = 20000;
	pid_t pid[2];
	int status, ok = 1;

	/* Two children increment a plain counter under the lock. */
	for (int c = 0; c < 2; c++) {
		pid[c] = fork();
		if (pid[c] == 0) {
			struct sluice_stack *st;
			struct sl_stack *cs;

			if (sluice_stack_attach(s->name, &st))
				_exit(2);
			cs = (struct sl_stack *)st;
			for (int i = 0; i < rounds; i++) {
				if (sl_lock(cs))
					_exit(3);
				cs->lib->counters[0].c[SL_C_loopback]++;
				sl_unlock(cs);
			}
			_exit(0);
		}
	}
	for (int c = 0; c < 2; c++) {
		waitpid(pid[c], &status, 0);
		ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	tap_ok(ok, "both children ran");
	tap_eq(s->lib->counters[0].c[SL_C_loopback], 2 * rounds, "no increment was lost");
	tap_eq(s->r->lock, 0, "lock word is free afterwards");
	fx_destroy(s);
}

/* A process that waits for the lock says so in the word, sleeps, and is
 * woken by the release at the end of the holder's turn. */
static void test_waiter_woken(void)
{
	struct sl_stack *s = fx_stack("lockwake", "10.0.0.1", NULL);
	int status, i;
	pid_t pid;

	sl_lock(s);
	pid = fork();
	if (pid == 0) {
		struct sluice_stack *st;

		if (sluice_stack_attach(s->name, &st))
			_exit(2);
		if (sl_lock((struct sl_stack *)st))
			_exit(3);
		sl_unlock((struct sl_stack *)st);
		_exit(0);
	}
	/* Past its spin (2000 tries): it sleeps, and has said so. */
	for (i = 0; i < 200 && !(__atomic_load_n(&s->r->lock, __ATOMIC_RELAXED) &
				 SLUICE_LOCK_WAITERS); i++)
		usleep(5000);
	tap_ok(s->r->lock & SLUICE_LOCK_WAITERS, "the waiter marked the lock word");
	tap_ok(waitpid(pid, &status, WNOHANG) == 0, "and waits while we hold it");
	sl_unlock(s);
	tap_ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the release woke it: it took the lock and let go");
	tap_eq(s->r->lock, 0, "lock word is free afterwards");
	fx_destroy(s);
}

/* A child of s's process attaches, takes the lock and exits holding it. */
static pid_t die_holding(struct sl_stack *s)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct sluice_stack *c;

		if (sluice_stack_attach(s->name, &c) || sl_lock((struct sl_stack *)c))
			_exit(2);
		_exit(0);	/* dies holding the lock */
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child exited holding the lock");
	return pid;
}

/* Issue 17: the next locker takes the lock over and brings the stack back. */
static void test_holder_dies(void)
{
	struct sl_stack *s = fx_stack("lockdie", "10.0.0.1", NULL);
	uint64_t n = 0;
	pid_t pid;
	int sd;

	pid = die_holding(s);
	tap_eq((pid_t)(s->r->lock >> SLUICE_LOCK_PID_SHIFT), pid, "the lock word names the dead child");
	tap_eq(sl_lock(s), 0, "next locker takes the lock over: 0, not a hang or -EPIPE");
	tap_eq((pid_t)(s->r->lock >> SLUICE_LOCK_PID_SHIFT), getpid(), "the lock word names us");
	tap_eq(s->r->state, SLUICE_STATE_READY, "the stack stays READY");
	sl_unlock(s);
	sluice_stack_counter((struct sluice_stack *)s, "lock_recovered", &n);
	tap_eq(n, 1, "lock_recovered counts the recovery");
	sd = sluice_socket((struct sluice_stack *)s, SLUICE_SOCK_DGRAM);
	tap_ok(sd >= 0, "socket() works afterwards (%d)", sd);
	sluice_close((struct sluice_stack *)s, sd);
	fx_destroy(s);
}

/* Without a way to recover (a handle whose recover is unset), a dead
 * holder still breaks the stack, and attach reclaims its name. */
static void test_holder_dies_unrecoverable(void)
{
	struct sl_stack *s = fx_stack("lockdie2", "10.0.0.1", NULL);
	struct sluice_stack *st;
	pid_t pid;
	int ret;

	pid = die_holding(s);
	s->recover = NULL;
	ret = sl_lock(s);
	tap_eq(ret, -EPIPE, "next locker gets -EPIPE, not a hang");
	tap_eq(s->r->state, SLUICE_STATE_BROKEN, "stack is marked broken");
	tap_eq(s->lib->broken_pid, pid, "region names the dead holder");
	tap_eq(sluice_stack_poll((struct sluice_stack *)s), -EPIPE, "stack calls fail with -EPIPE");
	tap_eq(sluice_socket((struct sluice_stack *)s, SLUICE_SOCK_DGRAM), -EPIPE,
	       "socket() on a broken stack is -EPIPE");
	/* Issue 17: the broken stack's name is reclaimed by the next attach. */
	tap_eq(sluice_stack_attach(s->name, &st), -ENOENT,
	       "attach to a broken /dev/shm stack reclaims its name: -ENOENT");
	tap_eq(s->r->state, SLUICE_STATE_BROKEN, "the old stack stays broken for its users");
	fx_destroy(s);
}

/* Open stack name as sluice run does: attach, else create (racing). */
static int open_or_create(const char *name, struct sluice_stack **st)
{
	struct sluice_stack_config cfg = { .n_bufs = 256, .max_sockets = 64 };
	int ret = -ENOENT;

	inet_pton(AF_INET, "10.0.0.1", &cfg.ip_addr);
	for (int tries = 0; tries < 3; tries++) {
		ret = sluice_stack_attach(name, st);
		if (ret != -ENOENT)
			return ret;
		ret = sluice_stack_create(name, &cfg, st);
		if (ret != -EEXIST)
			return ret;
	}
	return ret;
}

/*
 * A process dies holding the lock and nobody takes it afterwards: the
 * next processes to open the stack by name (four at once) find the dead
 * holder; one takes the lock over and brings the stack back, and all four
 * end up on it.  If the stack is also found corrupt (beyond repair), they
 * reclaim the name instead, and all end up on one fresh stack.
 */
static void test_dead_holder_reclaimed(bool corrupt)
{
	struct sl_stack *s = fx_stack(corrupt ? "lockcorr" : "lockrecl", "10.0.0.1", NULL);
	uint64_t secret[4];
	int status, p[2], go[2], ok = 1, n = 0;
	char name[SLUICE_NAME_MAX];

	memcpy(name, s->name, sizeof(name));
	die_holding(s);
	/* Found corrupt as well: beyond repair, so the name is reclaimed. */
	if (corrupt)
		sl_corrupt(s, SL_C_corrupt_header, 0);
	tap_ok(pipe(p) == 0 && pipe(go) == 0, "pipes");
	for (int c = 0; c < 4; c++) {
		if (fork() == 0) {
			struct sluice_stack *st;
			uint64_t v;
			char x;

			close(go[1]);
			if (open_or_create(name, &st))
				_exit(3);
			if (sl_lock((struct sl_stack *)st))
				_exit(4);
			v = ((struct sl_stack *)st)->lib->tcp_isn_secret[0];
			sl_unlock((struct sl_stack *)st);
			if (write(p[1], &v, sizeof(v)) != sizeof(v))
				_exit(5);
			close(p[1]);	/* the parent sees EOF if one of us fails */
			/* Hold the stack until all four have looked: a module's
			 * stack goes with the last process that holds it. */
			(void)!read(go[0], &x, 1);
			_exit(0);
		}
	}
	close(p[1]);
	close(go[0]);
	while (n < 4 && read(p[0], &secret[n], sizeof(secret[n])) == sizeof(secret[n]))
		n++;
	close(go[1]);
	for (int c = 0; c < 4; c++) {
		wait(&status);
		ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	close(p[0]);
	tap_ok(ok && n == 4, "four processes opened the stack by name and took its lock");
	tap_ok(n == 4 && secret[0] == secret[1] && secret[1] == secret[2] &&
	       secret[2] == secret[3], "all four on one stack");
	if (corrupt) {
		tap_ok(n == 4 && secret[0] != s->lib->tcp_isn_secret[0],
		       "a fresh one, not the broken one");
		tap_eq(s->r->state, SLUICE_STATE_BROKEN, "which the old handle sees broken");
	} else {
		tap_ok(n == 4 && secret[0] == s->lib->tcp_isn_secret[0],
		       "the same one, brought back by whichever came first");
		tap_eq(s->r->state, SLUICE_STATE_READY, "which the old handle sees READY");
	}
	fx_destroy(s);
}

/*
 * A waiter reads the holder's pid while the lock is held; the holder then
 * releases it and exits before the waiter checks that pid.  A dead pid
 * alone must not break the stack: only one that still holds the lock.
 */
static void test_holder_exits_after_release(void)
{
	struct sl_stack *s = fx_stack("lockrel", "10.0.0.1", NULL);
	int status;
	pid_t pid;

	pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, &status, 0);

	/* Released by it, then free. */
	s->r->lock = 0;
	tap_ok(!sl_lock_holder_dead(s, pid), "a dead pid that released the free lock is not its holder");
	/* Released by it, then taken by a live process (us). */
	s->r->lock = SLUICE_LOCK_HELD | (uint32_t)getpid() << SLUICE_LOCK_PID_SHIFT;
	tap_ok(!sl_lock_holder_dead(s, pid), "nor when the lock names a live holder");
	tap_ok(!sl_lock_holder_dead(s, getpid()), "a live holder is not dead");
	/* Still naming it: it died holding the lock, whatever lock_owner says
	 * (it may have died before writing it). */
	s->r->lock = SLUICE_LOCK_HELD | SLUICE_LOCK_WAITERS | (uint32_t)pid << SLUICE_LOCK_PID_SHIFT;
	s->r->lock_owner = 0;
	tap_ok(sl_lock_holder_dead(s, pid), "a dead pid the held lock word still names is a dead holder");
	s->r->lock = 0;
	s->r->lock_owner = 0;
	tap_eq(s->r->state, SLUICE_STATE_READY, "none of it broke the stack");
	fx_destroy(s);
}

/*
 * Processes that take the lock a few times and exit, while others wait
 * for it: no survivor may take an exited holder for a dead one.
 */
static void test_short_lived_holders(void)
{
	struct sl_stack *s = fx_stack("lockshort", "10.0.0.1", NULL);
	const int gens = 20, per_gen = 3, rounds = 300;
	int ok = 1, status;
	pid_t pid[3];

	for (int g = 0; g < gens && ok; g++) {
		for (int c = 0; c < per_gen; c++) {
			pid[c] = fork();
			if (pid[c] == 0) {
				struct sluice_stack *st;
				struct sl_stack *cs;

				if (sluice_stack_attach(s->name, &st))
					_exit(2);
				cs = (struct sl_stack *)st;
				for (int i = 0; i < rounds; i++) {
					if (sl_lock(cs))
						_exit(3);
					cs->lib->counters[0].c[SL_C_loopback]++;
					sl_unlock(cs);
				}
				_exit(0);
			}
		}
		for (int c = 0; c < per_gen; c++) {
			waitpid(pid[c], &status, 0);
			ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
		}
	}
	tap_ok(ok, "every short-lived locker ran to the end");
	tap_eq(s->r->state, SLUICE_STATE_READY, "the stack is not broken");
	fx_destroy(s);
}

static void test_futex_keyed(void)
{
	struct sl_stack *s;

	/* /dev/shm pages key shared futexes: sleeping is a futex wait. */
	setenv("SLUICE_SHM", "1", 1);
	s = fx_stack("lockfx", "10.0.0.1", NULL);
	tap_ok(sl_futex_usable(s), "shared futexes work in a /dev/shm region");
	fx_destroy(s);
	unsetenv("SLUICE_SHM");
	/* The default region: the module's when it is loaded.  Its regions
	 * are shmem and key futexes too; an older module's did not, and then
	 * the lock and sleepers nap or poll the stack fd instead (lock.c,
	 * api.c).  Say which; SLUICE_EXPECT_FUTEX=1 (the VM run) asserts it. */
	s = fx_stack("lockfx2", "10.0.0.1", NULL);
	printf("# shared futexes in this stack's region (%s): %s\n",
	       s->module_backed ? "module" : "/dev/shm",
	       sl_futex_usable(s) ? "yes" : "no (short naps instead)");
	tap_eq(s->futex_ok, sl_futex_usable(s), "the library probed the region when it mapped it");
	if (getenv("SLUICE_EXPECT_FUTEX") && !strcmp(getenv("SLUICE_EXPECT_FUTEX"), "1"))
		tap_ok(s->futex_ok, "lock waiters and sleepers use shared futexes on this %s region",
		       s->module_backed ? "module" : "/dev/shm");
	fx_destroy(s);
}

int main(void)
{
	test_mutual_exclusion();
	test_waiter_woken();
	test_holder_dies();
	test_holder_dies_unrecoverable();
	test_dead_holder_reclaimed(false);
	test_dead_holder_reclaimed(true);
	test_holder_exits_after_release();
	test_short_lived_holders();
	test_futex_keyed();
	return tap_done();
}
