// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack's helper process: it finishes orphaned TCP connections (closed
 * by their program, not yet CLOSED: unsent or unacknowledged data, a FIN
 * to retransmit, TIME-WAIT) after every program that could run the stack's
 * timers and output has gone, as Linux keeps sending after close()/exit.
 *
 * A process that detaches (sluice_stack_close(), the preload library's
 * exit) calls sl_helper_ensure(): if orphans are left and no live helper
 * holds the region's helper_pid, it claims the word under the stack lock
 * with its own pid, forks twice (setsid between: no controlling terminal),
 * and waits, bounded, until the grandchild has moved the claim to its own
 * pid by compare-and-swap and attached the stack by name.  The helper then
 * closes every inherited fd, points stdio at /dev/null, opens the link
 * again (the module's rings for a device stack; another queue of a
 * multi-queue TAP device), runs the stack until no orphan is left or
 * SLUICE_HELPER_MAX_S (default 2 MSL of RFC 9293, 120 s) has passed,
 * clears the word under the lock and detaches (with the module the region
 * goes with the last fd; a /dev/shm file stays, as ever).
 *
 * Deciding "no orphan left" and clearing the word happen under the same
 * lock as a detacher's check, so an orphan is never left with nobody: a
 * detacher either sees the helper's pid, and the helper sees the orphan,
 * or sees 0 and spawns a new one.  A claim whose process is dead is stale
 * and the next detacher takes it over.
 *
 * Only stacks whose link another process can open again get a helper: a
 * TAP link or a stack on a device (kring).  A loop link lives in one
 * process; a stack with no link talks only to itself, and its other
 * processes run it.  SLUICE_NO_HELPER=1 disables it (tests).
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"
#include "api/api.h"

#define HELPER_MAX_S		120	/* RFC 9293 3.4.2: 2 MSL of 2 min... bounded */
#define HELPER_READY_MS		2000	/* a detacher waits this long for the helper */
#define HELPER_BUSY_MS		2	/* nap while orphans have data or a FIN out */
#define HELPER_IDLE_MS		50	/* nap while orphans only sit in TIME-WAIT */
#define HELPER_TAP_TRIES	200	/* 10 ms apart: a single-queue TAP's fd to go */

static bool helper_self SL_FORKDATA;		/* this process is a helper: it spawns none */

/* Claimed and given up with a compare-and-swap: any process may try. */
static int32_t *helper_word(struct sl_stack *s)
{
	return &s->lib->helper_pid;
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") && strcmp(v, "no") && strcmp(v, "off");
}

/*
 * TCP sockets closed by their program and still finishing: the ones with
 * more to do than wait out TIME-WAIT, which a connection does as a
 * compact entry, not a socket (proto/tcp/tcp_tw.c).  A count the stack
 * keeps (sl_region.tcp_orphans), not a walk of the table: the helper
 * asks twice a turn, every 2 ms while they last.  Lock held.
 */
static uint32_t orphans_busy(struct sl_stack *s)
{
	uint32_t o = SL_READ_ONCE(s->lib->tcp_orphans);

	/* (More than there are slots is a scribble: nothing to wait for.) */
	return o <= s->max_sockets ? o : 0;
}

/* Those, and connections waiting in TIME-WAIT.  Lock held. */
uint32_t sl_orphans(struct sl_stack *s)
{
	uint32_t tw = SL_READ_ONCE(s->lib->tw_count);

	/* (A count past the table is a scribble: nothing to wait for.) */
	return (tw <= s->tw_max ? tw : 0) + orphans_busy(s);
}

/* Orphans left and no live helper: claim the word for @self. */
static bool claim(struct sl_stack *s, int32_t self)
{
	bool won = false;
	int32_t cur;

	if (sl_lock(s))
		return false;
	if (sl_orphans(s)) {
		cur = SL_READ_ONCE(*helper_word(s));
		if (cur <= 0 || cur == self || sl_pid_dead(cur))
			won = sl_cmpxchg(helper_word(s), &cur, self);
	}
	sl_unlock(s);
	return won;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* stdio to /dev/null, @wfd to 3, every other fd closed; returns 3. */
static int helper_fds(int wfd)
{
	int null = sl_sys_openat(AT_FDCWD, "/dev/null", O_RDWR, 0);

	if (wfd <= 3)
		wfd = sl_sys_fcntl(wfd, F_DUPFD, 4);
	if (null >= 0) {
		sl_sys_dup2(null, 0);
		sl_sys_dup2(null, 1);
		sl_sys_dup2(null, 2);
	}
	sl_sys_dup2(wfd, 3);
	if (sl_syscall(SYS_close_range, 4u, ~0u, 0u)) {
		long max = sysconf(_SC_OPEN_MAX);

		for (long fd = 4; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
			sl_sys_close((int)fd);
	}
	return 3;
}

/*
 * The program's signal handlers are its own code (an interpreter's, say),
 * which must not run in the helper, and it may have blocked signals: back
 * to the defaults, so the helper can be stopped like any process.
 */
static void helper_signals(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t all;

	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sl_sys_sigaction(sig, &sa, NULL);
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
}

static int helper_link(struct sluice_stack *st, const char *tap, int ready)
{
	struct sl_stack *s = (struct sl_stack *)st;
	int ret = 0;

	if (s->ifindex) {
		ret = sluice_link_kring(st);
	} else if (tap[0]) {
		ret = sluice_link_tap(st, tap);
		/* A single-queue TAP device takes its second fd only once the
		 * program's has gone: tell it to go, then try again. */
		if (ret == -EBUSY) {
			(void)!sl_sys_write(ready, "b", 1);
			for (int i = 0; ret == -EBUSY && i < HELPER_TAP_TRIES; i++) {
				usleep(10000);
				ret = sluice_link_tap(st, tap);
			}
			return ret;
		}
	}
	(void)!sl_sys_write(ready, "r", 1);
	return ret;
}

/*
 * A /dev/shm stack whose file is gone (destroyed, or replaced by a new one
 * of the same name): nobody can attach to it again, so TIME-WAIT there
 * protects no later connection and need not be waited out.
 */
static bool shm_destroyed(struct sl_stack *s)
{
	struct stat a, b;
	char path[64];

	if (s->module_backed || sl_region_path(s->name, path, sizeof(path)) ||
	    sl_sys_fstat(s->region_fd, &a))
		return false;
	return stat(path, &b) || a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

/* Run the stack until no orphan is left or the cap passes. */
static void helper_run(struct sl_stack *s, int32_t self)
{
	const char *v = getenv("SLUICE_HELPER_MAX_S");
	uint64_t cap_s = v && *v ? strtoull(v, NULL, 10) : HELPER_MAX_S;
	uint64_t end = mono_ms() + (cap_s ? cap_s : HELPER_MAX_S) * 1000u;
	struct pollfd pfd[2] = { { .fd = -1, .events = POLLIN }, { .fd = -1, .events = POLLIN } };
	struct sluice_stack_wake w = { .size = sizeof(w) };
	uint32_t busy;
	int n;

	for (;;) {
		/* The module's wake sequence before this look: a socket fd
		 * released after it (a killed program's) ends the nap. */
		w.flags = 0;
		if (s->module_backed)
			sl_sys_ioctl(s->region_fd, SLUICE_IOC_STACK_WAKE, &w);
		if (sl_lock(s))
			return;		/* broken: nothing can run on it */
		/* Released sockets become orphans before they are counted. */
		if (s->module_backed)
			sl_ksock_reap(s);
		busy = orphans_busy(s);
		if (!sl_orphans(s) || mono_ms() >= end || (!busy && shm_destroyed(s))) {
			int32_t me = self;

			sl_cmpxchg(helper_word(s), &me, 0);
			sl_unlock(s);
			return;
		}
		sl_unlock(s);
		sluice_stack_poll((struct sluice_stack *)s);
		n = 0;
		if (s->module_backed) {
			w.flags = SLUICE_WAKE_ARM;
			sl_sys_ioctl(s->region_fd, SLUICE_IOC_STACK_WAKE, &w);
			pfd[n++].fd = s->region_fd;
		}
		pfd[n].fd = s->link && s->link->ops->fd ? s->link->ops->fd(s->link) : -1;
		if (pfd[n].fd >= 0)
			n++;
		sl_sys_poll(pfd, (nfds_t)n, busy ? HELPER_BUSY_MS : HELPER_IDLE_MS);
	}
}

static void __attribute__((noreturn)) helper_main(struct sl_stack *ps, int32_t owner,
						  const char *tap, int wfd)
{
	char name[SLUICE_NAME_MAX], ifname[IFNAMSIZ];
	int32_t self = (int32_t)getpid();
	struct sluice_stack *st;
	int ready;

	helper_self = true;
	helper_signals();
	/* The detacher is alive and waiting: its claim becomes ours. */
	if (!sl_cmpxchg(helper_word(ps), &owner, self))
		_exit(0);
	memcpy(name, ps->name, sizeof(name));
	snprintf(ifname, sizeof(ifname), "%s", tap);
	/* Let go of the program's view of the stack; attach our own. */
	if (ps->link && ps->link->ops->close)
		ps->link->ops->close(ps->link);
	sl_region_detach(ps);
	ready = helper_fds(wfd);
	if (sluice_stack_attach(name, &st))
		_exit(1);	/* the claim is stale once we are gone */
	helper_link(st, ifname, ready);
	sl_sys_close(ready);
	helper_run((struct sl_stack *)st, self);
	sluice_stack_close(st);
	_exit(0);
}

SL_FORKTEXT void sl_helper_ensure(struct sl_stack *s)
{
	int32_t self = (int32_t)sl_self_pid();
	struct pollfd pfd;
	char tap[IFNAMSIZ] = "", c;
	const char *t;
	bool ok = false;
	int fds[2], st;
	uint64_t end;
	pid_t child;

	if (helper_self || !s || !s->r || s->inspect || s->corrupt)
		return;
	/* The link first: most stacks have none to open again, and every
	 * exiting process (a forking server's child) comes here. */
	t = sl_link_tap_name(s->link);
	if ((!t && !s->ifindex) || env_on("SLUICE_NO_HELPER"))
		return;
	if (t)
		snprintf(tap, sizeof(tap), "%s", t);
	if (!claim(s, self))
		return;
	if (pipe2(fds, O_CLOEXEC))
		goto err_unclaim;
	child = fork();
	if (child < 0)
		goto err_close_pipe;
	if (!child) {
		sl_sys_close(fds[0]);
		setsid();
		child = fork();
		if (!child)
			helper_main(s, self, tap, fds[1]);
		_exit(0);
	}
	sl_sys_close(fds[1]);
	fds[1] = -1;
	for (int i = 0; i < 100 && waitpid(child, &st, 0) < 0 && errno == EINTR; i++)
		;
	/* Until the helper has attached (one byte), or gave up (EOF). */
	end = mono_ms() + HELPER_READY_MS;
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	while (mono_ms() < end) {
		int n = sl_sys_poll(&pfd, 1, (int)(end - mono_ms()) + 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			ok = sl_sys_read(fds[0], &c, 1) == 1;
		break;
	}
	sl_sys_close(fds[0]);
	if (ok) {
		/* What reached our queue of the link while the helper came
		 * up goes with our fd: the peer's ACK of the FIN our close()
		 * sent, a few hundred µs behind it, was lost so, and the FIN
		 * went again at the RTO though the peer had it.  Take it in
		 * now; the helper reads its own queue from here on. */
		if (!sl_lock(s)) {
			sl_run(s);
			sl_unlock(s);
		}
		return;
	}
	/* No helper took the claim: let the next detacher try. */
	sl_cmpxchg(helper_word(s), &self, 0);
	return;

err_close_pipe:
	sl_sys_close(fds[0]);
	sl_sys_close(fds[1]);
err_unclaim:
	sl_cmpxchg(helper_word(s), &self, 0);
}
