// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack's death watcher (issue 23 item 1): a process that holds a
 * pidfd of each process of the stack and sweeps (fdtable.c) as soon as
 * one of them ends, wherever the others sleep.  Without it a death was
 * found only by a process of the stack waiting in the library (a sweep
 * at most every 0.5 s after a sleep of its waits, or at a program's
 * first socket()): a stack whose processes all slept elsewhere (a pipe's
 * read(), waitpid(), pause()) left a killed process's connections open,
 * their peers never told.
 *
 * Who: one process a stack of placeholders (/dev/shm; a module's stack
 * has the module's file release).  The first program of the stack that
 * finds none (its lock byte, SL_FDREC_WATCH_LOCK of the records file,
 * free) claims the start (sl_fdhdr.watch_pid, compare-and-swap) and
 * spawns the program's dynamic linker on this library, with SLUICE_WATCH
 * set: the linker loads the library and its dependencies alone (not the
 * program, nothing of its memory: a fork would keep a copy of all of it
 * for as long as the stack lives) and enters it at pl_watch_entry.  That
 * image forks at once and exits (the spawner waits for it, so the
 * watcher is nobody's child to reap); the grandchild attaches the stack
 * by name, maps the records, takes the lock byte, and watches.
 *
 * What: at start every process record, then only the records born since
 * (sl_fdhdr.born, a bit a record, set by its process before it opens the
 * records file; that open wakes the watcher through inotify IN_OPEN, so
 * a process registering costs no system call more).  Each gets a pidfd
 * (pidfd_open(2): readable once the process has exited, its files, and
 * so its record's lock, released).  A pidfd readable for a record that
 * is still its process's (not given back at a clean exit) is a death:
 * sweep() now, which closes the dead process's sockets as the kernel
 * closes a killed process's (FIN, or RST with data unread), and the
 * peers see the end within milliseconds.  A close that waits for a
 * stopped lock holder is tried again every 100 ms.  Costs: nothing on
 * any call's path; in the watcher one wake-up a process start and one a
 * process end, O(p) to rebuild its poll set then (p: processes of the
 * stack), at a death its pidfd told alone a probe of that record's lock
 * and one of each shared socket (sweep_from()), O(p) probes otherwise.
 *
 * Leaving: 2 s after the last process of the stack is gone (so that
 * short programs started one after another find it), it gives its claim
 * and lock back, then looks at born again: a process registered
 * meanwhile saw the lock held, so the watcher takes the lock again and
 * stays (or, another watcher having it, goes).
 *
 * Not watched (as before: the waits' sweeps): SLUICE_NO_WATCHER=1, a
 * sandboxed process (it cannot spawn), a program whose ids are not its
 * real ones (no exec of it with this library), a module's stack.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

extern char **environ;

#define WATCH_RETRY_MS	100	/* a close that waits for a stopped lock holder */
#define WATCH_LINGER_MS	2000	/* after the last process, before leaving */

static bool env_on(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") && strcmp(v, "no") && strcmp(v, "off");
}

/* This library's path (dladdr()). */
static bool lib_path(char *buf, size_t len)
{
	Dl_info di;

	return dladdr((void *)pl_watch_ensure, &di) && di.dli_fname && di.dli_fname[0] == '/' &&
	       snprintf(buf, len, "%s", di.dli_fname) < (int)len;
}

/* The program's dynamic linker (its PT_INTERP), which runs this library
 * as a program (its entry point: pl_watch_entry). */
static int interp_of(struct dl_phdr_info *info, size_t size, void *data)
{
	char *out = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_INTERP)
			snprintf(out, PATH_MAX, "%s",
				 (const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr));
	return 1;	/* the first object is the program */
}

/* Spawn the watcher's first image and wait for it (it forks the watcher
 * and exits at once): 0 or -errno. */
static int spawn_watcher(uint32_t claim)
{
	__typeof__(posix_spawn) *spawn = (__typeof__(posix_spawn) *)dlsym(RTLD_NEXT, "posix_spawn");
	char ld[PATH_MAX] = "", lib[PATH_MAX], stack[16 + SLUICE_NAME_MAX], who[32];
	char *argv[] = { ld, lib, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	size_t n = 0, k = 0;
	char **envp;
	int ret, st;
	pid_t pid;

	dl_iterate_phdr(interp_of, ld);
	if (!spawn || !ld[0] || !lib_path(lib, sizeof(lib)))
		return -ENOENT;
	snprintf(stack, sizeof(stack), "SLUICE_WATCH=%s", pl_cfg.stack);
	snprintf(who, sizeof(who), "SLUICE_WATCH_CLAIM=%u", (unsigned int)claim);
	/* The program's environment (LD_LIBRARY_PATH, a sanitizer's
	 * LD_PRELOAD: what loads this library), with ours. */
	while (environ && environ[n])
		n++;
	envp = malloc((n + 3) * sizeof(*envp));
	if (!envp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "SLUICE_WATCH", 12))
			envp[k++] = environ[i];
	envp[k++] = stack;
	envp[k++] = who;
	envp[k] = NULL;
	posix_spawn_file_actions_init(&fa);	/* Nothing of the program's: stdio on /dev/null (a shell's $(...)
	 * would wait for a pipe held open), every other fd closed (a
	 * placeholder held would keep its socket open). */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_adddup2(&fa, 0, 1);
	posix_spawn_file_actions_adddup2(&fa, 0, 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF);
	ret = -spawn(&pid, ld, &fa, &at, argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	if (ret)
		return ret;
	for (int i = 0; i < 100 && waitpid(pid, &st, 0) < 0 && errno == EINTR; i++)
		;
	return 0;
}

void pl_watch_ensure(void)
{
	struct sl_fdhdr *h = pl_fd_hdr();
	uint32_t me = (uint32_t)sl_self_pid(), cur;
	int saved_errno = errno;

	if (!h || sl_sys_sandboxed || env_on("SLUICE_NO_WATCHER") || getuid() != geteuid() ||
	    getgid() != getegid() || !pl_fd_lock_free(SL_FDREC_WATCH_LOCK))
		goto out;
	/* Another is starting one (it looks at every record once it runs),
	 * unless that process is gone. */
	cur = SL_READ_ONCE(h->watch_pid);
	if (cur && cur != me && !sl_pid_dead((pid_t)cur))
		goto out;
	if (!sl_cmpxchg(&h->watch_pid, &cur, me))
		goto out;
	if (spawn_watcher(me)) {
		pl_debug("no death watcher for stack %s", pl_cfg.stack);
		sl_cmpxchg(&h->watch_pid, &me, 0);
	}
out:
	errno = saved_errno;
}

/* ---- the watcher ---- */

struct watch {
	struct sl_fdhdr *h;
	int pidfd[SL_FDREC_PROCS];
	uint32_t pid[SL_FDREC_PROCS];
	int lk;			/* holds SL_FDREC_WATCH_LOCK */
	uint32_t self;
};

static int pidfd_open(pid_t pid)
{
	return (int)sl_syscall(SYS_pidfd_open, pid, 0u);
}

static void forget(struct watch *w, int i)
{
	if (w->pidfd[i] >= 0)
		pl_libc.close(w->pidfd[i]);
	w->pidfd[i] = -1;
}

/* Record i: a pidfd of its process.  True: it has died already. */
static bool look(struct watch *w, int i)
{
	struct sl_fdproc *p = &w->h->procs[i];
	uint32_t st = sl_load_acquire(&p->state), pid = SL_READ_ONCE(p->pid);
	int fd;

	if (st == SL_FDPROC_FREE || !pid) {
		forget(w, i);
		return false;
	}
	if (w->pidfd[i] >= 0 && w->pid[i] == pid)
		return false;
	forget(w, i);
	fd = pidfd_open((pid_t)pid);
	if (fd < 0)
		return st != SL_FDPROC_CLAIMED;	/* gone (ESRCH): its lock is free */
	w->pidfd[i] = fd;
	w->pid[i] = pid;
	/* The pid may be another process's already (the record's died and
	 * the number was given again): its process lives only while the
	 * record's lock byte is held. */
	return st == SL_FDPROC_LIVE && pl_fd_lock_free(SL_FDREC_LOCK_BASE + i);
}

static bool look_born(struct watch *w)
{
	bool dead = false;

	for (int k = 0; k < SL_FDREC_PROCS / 64; k++) {
		uint64_t b = SL_READ_ONCE(w->h->born[k]) ? sl_xchg(&w->h->born[k], 0) : 0;

		for (; b; b &= b - 1)
			dead |= look(w, k * 64 + __builtin_ctzll(b));
	}
	return dead;
}

static bool look_all(struct watch *w)
{
	bool dead = false;

	for (int k = 0; k < SL_FDREC_PROCS / 64; k++)
		sl_xchg(&w->h->born[k], 0);
	for (int i = 0; i < SL_FDREC_PROCS; i++)
		dead |= look(w, i);
	return dead;
}

/* The lock byte through a description of our own. */
static bool take_lock(struct watch *w)
{
	w->lk = open(pl_fd_recs_path(), O_RDWR | O_CLOEXEC);	/* a write lock */
	if (w->lk >= 0 && !pl_fd_lock_excl(w->lk, SL_FDREC_WATCH_LOCK))
		return true;
	if (w->lk >= 0)
		pl_libc.close(w->lk);
	w->lk = -1;
	return false;
}

/* No process left: give the claim and the lock back.  True: one
 * registered meanwhile and the watcher stays (lock taken again). */
static bool leave(struct watch *w)
{
	uint32_t me = w->self;
	bool born = false;

	sl_cmpxchg(&w->h->watch_pid, &me, 0);
	pl_libc.close(w->lk);
	w->lk = -1;
	/* Ordered after the unlock (a system call) and before the reads: a
	 * process whose bit is not seen here sees the lock free, and starts
	 * a watcher itself. */
	sl_smp_mb();
	for (int k = 0; k < SL_FDREC_PROCS / 64; k++)
		born |= SL_READ_ONCE(w->h->born[k]) != 0;
	if (!born || !take_lock(w))
		return false;
	SL_WRITE_ONCE(w->h->watch_pid, w->self);
	return true;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void watch_run(struct watch *w)
{
	struct pollfd p[SL_FDREC_PROCS + 1];
	int at[SL_FDREC_PROCS + 1], ino, n;
	/* The one record whose end was seen, or -1: look at every one. */
	int only = -1;
	bool sweep, again = false;
	uint64_t idle_since = 0;

	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ino < 0 || inotify_add_watch(ino, pl_fd_recs_path(), IN_OPEN) < 0)
		return;
	sweep = look_all(w);
	for (;;) {
		int ms = -1;

		/* The records reset for a new stack of the name (a broken
		 * one replaced): not this region's any more. */
		if (!pl_fd_records_ours())
			return;
		if (sweep) {
			pl_debug("watcher: a process of the stack ended: sweeping");
			again = pl_sweep_now(only);
			sweep = false;
		}
		only = -1;
		n = 0;
		p[n].fd = ino;
		p[n++].events = POLLIN;
		for (int i = 0; i < SL_FDREC_PROCS; i++)
			if (w->pidfd[i] >= 0) {
				p[n].fd = w->pidfd[i];
				p[n].events = POLLIN;
				at[n++] = i;
			}
		if (n == 1 && !again) {
			uint64_t t = now_ms();

			if (!idle_since)
				idle_since = t;
			if (t - idle_since >= WATCH_LINGER_MS) {
				if (!leave(w))
					return;
				sweep = look_all(w);
				idle_since = 0;
				continue;
			}
			ms = (int)(WATCH_LINGER_MS - (t - idle_since));
		} else {
			idle_since = 0;
			if (again)
				ms = WATCH_RETRY_MS;
		}
		if (sl_sys_poll(p, (nfds_t)n, ms) <= 0) {
			sweep = again;	/* a timeout: the retry (an EINTR: harmless) */
			continue;
		}
		if (p[0].revents) {
			char buf[4096];

			while (sl_sys_read(ino, buf, sizeof(buf)) > 0)
				;
			sweep |= look_born(w);
		}
		/* A look's death or a retry: which record is not known. */
		if (sweep || again)
			only = -2;
		for (int k = 1; k < n; k++) {
			int i = at[k];
			struct sl_fdproc *pr = &w->h->procs[i];

			if (!p[k].revents)
				continue;
			forget(w, i);
			/* Given back at a clean exit (or taken by another
			 * process since): nothing of its to close. */
			if (sl_load_acquire(&pr->state) != SL_FDPROC_FREE &&
			    SL_READ_ONCE(pr->pid) == w->pid[i]) {
				sweep = true;
				only = only == -1 ? i : -2;
			}
		}
		if (only < 0)
			only = -1;
	}
}

/*
 * The library run as a program by the dynamic linker (ld.so LIB,
 * spawn_watcher()): the linker has loaded its dependencies and run their
 * initializers (libc's sets environ), not this object's own, and jumps
 * here with the process's first stack.  The link's -e names it
 * (Makefile).
 */
void pl_watch_start(void) __attribute__((noreturn));
void pl_watch_start(void)
{
	const char *name = getenv("SLUICE_WATCH");

	if (!name)
		_exit(127);
	pl_watch_main(name);
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl pl_watch_entry\n"
	".type pl_watch_entry, @function\n"
	"pl_watch_entry:\n"
	"	xor %ebp, %ebp\n"
	"	and $-16, %rsp\n"
	"	call pl_watch_start\n"
	"	hlt\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl pl_watch_entry\n"
	".type pl_watch_entry, %function\n"
	"pl_watch_entry:\n"
	"	mov x29, #0\n"
	"	mov x30, #0\n"
	"	bl pl_watch_start\n");
#endif

void pl_watch_main(const char *stack)
{
	char name[SLUICE_NAME_MAX];
	const char *c = getenv("SLUICE_WATCH_CLAIM");
	uint32_t claim = c ? (uint32_t)strtoul(c, NULL, 10) : 0;
	struct sluice_stack *st;
	struct sl_stack *s;
	static struct watch w;
	pid_t pid;

	snprintf(name, sizeof(name), "%s", stack);
	/* The watcher is nobody's child: its spawner waits for this image. */
	pid = fork();
	if (pid)
		_exit(pid < 0);
	pl_init();
	prctl(PR_SET_NAME, "sluice-watch");
	if (sluice_stack_attach(name, &st))
		goto out;
	s = (struct sl_stack *)st;
	if (s->module_backed || pl_fdtable_watch_open(s))
		goto out_close;
	pl_stack_adopt(st);
	w.h = pl_fd_hdr();
	w.self = (uint32_t)getpid();
	for (int i = 0; i < SL_FDREC_PROCS; i++)
		w.pidfd[i] = -1;
	if (!take_lock(&w))
		goto out_unclaim;	/* another watcher lives */
	SL_WRITE_ONCE(w.h->watch_pid, w.self);
	pl_debug("watcher %u of stack %s", w.self, name);
	watch_run(&w);
	if (w.lk >= 0) {
		uint32_t me = w.self;

		sl_cmpxchg(&w.h->watch_pid, &me, 0);
	}
	sluice_stack_close(st);
	_exit(0);

out_unclaim:
	if (claim && w.h)
		sl_cmpxchg(&w.h->watch_pid, &claim, 0);
out_close:
	sluice_stack_close(st);
out:
	_exit(1);
}
