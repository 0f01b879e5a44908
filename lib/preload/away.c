// SPDX-License-Identifier: BSD-2-Clause
/*
 * Who reads the away timer (run/away.c; lib/README.md, "Timers while the
 * program is away"), the timerfd of the process that a turn arms
 * for a deadline nobody may run while the program is out of the socket
 * calls.  On a module's stack, the hand-off agent (agent.c), which every
 * process with a TCP socket there has already: it polls the timerfd
 * beside its socket, and no thread is added.  Elsewhere a thread of its
 * own, made only when a turn of the process leaves a deadline of its own
 * sockets and no other thread keeps the timers (s->tk_start, called by
 * sl_tk_due()): a process that never does stays single-threaded, and its
 * forks cost what they did (issue 18).  Every signal blocked; none in a
 * sandbox or a vfork() child, none made while a fork() is under way;
 * paused around an exec (a thread killed inside the stack by another's
 * exec would leave the lock to a pid that lives on) and at exit.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "preload.h"
#include "run/run.h"

/* The timer's own thread: asleep in poll(2) of it (the fd does not
 * block: a ring a later arm reset reads nothing, pl_away_agent_ring()). */
static void *away_main(void *arg)
{
	struct sl_stack *s = arg;
	int fd = sl_tk_fd(s);

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (sl_sys_poll(&pf, 1, -1) < 0 && errno != EINTR)
			break;
		if (pf.revents & POLLNVAL)
			break;	/* the fd is gone */
		if (s->corrupt || sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN)
			break;
		if (pf.revents)
			pl_away_agent_ring(s, fd);
	}
	return NULL;
}

/* The process that made its timer, or tried: one try a process. */
static pid_t away_pid;

void pl_away_start(struct sl_stack *s)
{
	pid_t self = sl_self_pid(), was = SL_READ_ONCE(away_pid);
	pthread_t th;
	int ret;

	if (!pl_cfg.away || sl_sys_sandboxed) {
		s->tk_start = NULL;	/* for good */
		return;
	}
	/* Not in a vfork() child (the parent's memory), nor while a fork()
	 * is under way (its handlers wait for no thread made now). */
	if (was == self || sl_tk_mine(s) || pl_vfork_child() || pl_fd_forking() ||
	    !sl_cmpxchg(&away_pid, &was, self))
		return;
	ret = sl_tk_open(s);
	if (ret) {
		pl_debug("stack %s: no away timer (%s)", pl_cfg.stack, strerror(-ret));
		return;
	}
	/* A process with listeners has a thread already, the twins'
	 * watcher: it reads the timer too (each thread more is a page
	 * fault or two more in every forked child: glibc's fork walks
	 * the threads' descriptors in the child).  Its lock held (a
	 * fork's handlers hold it): another time. */
	ret = pl_twin_watch_tk(sl_tk_fd(s));
	if (ret > 0)
		return;
	if (ret < 0) {
		sl_tk_drop(s);
		SL_WRITE_ONCE(away_pid, was);
		return;
	}
	ret = pl_thread_quiet(away_main, s, 64 * 1024, &th);
	if (ret) {
		/* Nobody reads it: arm nothing. */
		sl_tk_drop(s);
		pl_debug("stack %s: no away timer thread (%s)", pl_cfg.stack, strerror(ret));
		return;
	}
	pthread_setname_np(th, "sluice-timer");
}

/* The agent's share (agent.c): its process's timer, made at its start on
 * a module's stack, and a ring of it run. */
void pl_away_agent_open(struct sl_stack *s)
{
	int ret;

	if (!pl_cfg.away || sl_sys_sandboxed || !s || !s->module_backed || sl_tk_mine(s))
		return;
	ret = sl_tk_open(s);
	if (ret)
		pl_debug("stack %s: no away timer (%s)", pl_cfg.stack, strerror(-ret));
}

int pl_away_agent_fd(struct sl_stack *s)
{
	return s && sl_tk_mine(s) ? sl_tk_fd(s) : -1;
}

void pl_away_agent_ring(struct sl_stack *s, int fd)
{
	uint64_t n;

	if (sl_sys_read(fd, &n, sizeof(n)) != (ssize_t)sizeof(n) || sl_sys_sandboxed ||
	    s->corrupt || sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN)
		return;
	sl_tk_fire(s);
}

/*
 * No turn of the thread's from here (an exec or the exit): one under way
 * ends before this returns, a later one sees the flag first (sl_tk_fire()).
 * Without the stack lock: a process stopped holding it must not stop
 * this one's exit (test_stopped_holder: curl --max-time 1 under sluice
 * run did not end while the holder was stopped).  A turn takes the lock
 * only by trylock, so it ends soon.  Only in the process whose thread it
 * is; undone by pl_away_resume() (the exec failed).
 */
SL_FORKTEXT void pl_away_pause(struct sl_stack *s)
{
	struct timespec nap = { 0, 50 * 1000 };

	if (!s || !sl_tk_mine(s))
		return;
	SL_WRITE_ONCE(s->tk_off, true);
	sl_smp_mb();	/* the store before the load (sl_tk_fire()'s mirror) */
	while (SL_READ_ONCE(s->tk_busy))
		nanosleep(&nap, NULL);
}

void pl_away_resume(struct sl_stack *s)
{
	if (s && sl_tk_mine(s))
		sl_store_release(&s->tk_off, false);
}
