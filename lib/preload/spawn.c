// SPDX-License-Identifier: BSD-2-Clause
/*
 * The calls after which another process may hold this one's fds: exec,
 * spawn, clone, vfork (fork itself: init.c's atfork handlers).  Before
 * each, this process's private sockets take the locks that let other
 * processes see who holds them (fdtable.c, "Private sockets").  Nothing
 * else changes: each call is libc's.
 *
 * glibc's execl*, system(), popen() and posix_spawn*() reach execve and
 * clone inside libc, where no wrapper sees them: each is wrapped itself.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "preload.h"

/* libc's, looked up at first use (none is on a hot path). */
#define NEXT(f)							\
	({							\
		static __typeof__(f) *next_;			\
		if (!SL_READ_ONCE(next_))			\
			SL_WRITE_ONCE(next_, (__typeof__(f) *)dlsym(RTLD_NEXT, #f)); \
		next_;						\
	})

/* An exec: the image goes, its fds without O_CLOEXEC stay.  The file to
 * run: path at dirfd (path "": dirfd itself; oflags O_NOFOLLOW or 0);
 * envp its environment. */
static void before_exec(int dirfd, const char *path, int oflags, char *const envp[])
{
	if (path && pl_cfg.exec_handoff) {
		if (!pl_vfork_child())
			pl_exec_handoff(dirfd, path, oflags, envp);
		else
			pl_exec_vfork(dirfd, path, oflags, envp);
	}
	pl_fd_share_all();
	/* The away timer's thread dies with the image: not inside the
	 * stack (a vfork() child's exec leaves the parent's alone). */
	if (!pl_vfork_child())
		pl_away_pause(pl_sl());
}

/* The exec failed: the image stays, and so does its away timer. */
static int exec_failed(int ret)
{
	if (!pl_vfork_child())
		pl_away_resume(pl_sl());
	return ret;
}

/* file as execvp() finds it on PATH, into buf (file itself if it has a
 * slash or is not found). */
static const char *exec_find(const char *file, char *buf, size_t len)
{
	const char *path = getenv("PATH"), *p, *e;

	if (!file || strchr(file, '/'))
		return file;
	for (p = path ? path : "/bin:/usr/bin"; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		if (snprintf(buf, len, "%.*s%s%s", (int)(e - p), p, e == p ? "" : "/", file) <
			    (int)len &&
		    !access(buf, X_OK))
			return buf;
	}
	return file;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	__typeof__(execve) *f = NEXT(execve);

	if (!f)
		return errno = ENOSYS, -1;
	before_exec(AT_FDCWD, path, 0, envp);
	return exec_failed(f(path, argv, envp));
}

EXPORT int execv(const char *path, char *const argv[])
{
	__typeof__(execv) *f = NEXT(execv);

	if (!f)
		return errno = ENOSYS, -1;
	before_exec(AT_FDCWD, path, 0, environ);
	return exec_failed(f(path, argv));
}

EXPORT int execvp(const char *file, char *const argv[])
{
	__typeof__(execvp) *f = NEXT(execvp);
	char buf[PATH_MAX];

	if (!f)
		return errno = ENOSYS, -1;
	before_exec(AT_FDCWD, exec_find(file, buf, sizeof(buf)), 0, environ);
	return exec_failed(f(file, argv));
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	__typeof__(execvpe) *f = NEXT(execvpe);
	char buf[PATH_MAX];

	if (!f)
		return errno = ENOSYS, -1;
	before_exec(AT_FDCWD, exec_find(file, buf, sizeof(buf)), 0, envp);
	return exec_failed(f(file, argv, envp));
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	__typeof__(fexecve) *f = NEXT(fexecve);

	if (!f)
		return errno = ENOSYS, -1;
	before_exec(fd, "", 0, envp);
	return exec_failed(f(fd, argv, envp));
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		    int flags)
{
	__typeof__(execveat) *f = NEXT(execveat);

	if (!f)
		return errno = ENOSYS, -1;
	/* path "" with AT_EMPTY_PATH: the file at dirfd (without it the
	 * kernel says ENOENT, and nothing is moved: the file is not found). */
	before_exec(dirfd, (*path || (flags & AT_EMPTY_PATH)) ? path : NULL,
		    (flags & AT_SYMLINK_NOFOLLOW) ? O_NOFOLLOW : 0, envp);
	return exec_failed(f(dirfd, path, argv, envp, flags));
}

/*
 * execl, execlp, execle: the arguments gathered into an array (on the
 * stack: exec's own limit on their number is far larger than any real
 * list, and glibc does the same), then execv, execvp, execve.
 */
#define PL_EXECL_MAX	4096

static int gather(const char *arg, va_list ap, char **argv, char ***envp)
{
	int n = 0;

	argv[n++] = (char *)arg;
	while (argv[n - 1]) {
		if (n == PL_EXECL_MAX) {
			errno = E2BIG;
			return -1;
		}
		argv[n++] = va_arg(ap, char *);
	}
	if (envp)
		*envp = va_arg(ap, char **);
	return 0;
}

EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[PL_EXECL_MAX];
	va_list ap;
	int ret;

	va_start(ap, arg);
	ret = gather(arg, ap, argv, NULL);
	va_end(ap);
	return ret ? ret : execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[PL_EXECL_MAX];
	va_list ap;
	int ret;

	va_start(ap, arg);
	ret = gather(arg, ap, argv, NULL);
	va_end(ap);
	return ret ? ret : execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[PL_EXECL_MAX], **envp = NULL;
	va_list ap;
	int ret;

	va_start(ap, arg);
	ret = gather(arg, ap, argv, &envp);
	va_end(ap);
	return ret ? ret : execve(path, argv, envp);
}

/*
 * A spawn returns in the parent: begin and end, as a fork.  glibc's child
 * (clone with CLONE_VM and CLONE_VFORK) execs inside libc, where no
 * wrapper runs: what an exec moves to the kernel (before_exec()) is put
 * in its fds by the parent around the spawn instead (pl_spawn_begin()).
 * fa's actions are glibc's own (its __used is in the public type).
 */
static struct pl_spawn *spawn_begin(const char *path, const posix_spawn_file_actions_t *fa,
				    char *const envp[])
{
	if (!pl_cfg.exec_handoff || pl_vfork_child())
		return NULL;
	return pl_spawn_begin(path, envp, fa && fa->__used > 0);
}

/* A spawn returns in the parent: begin and end, as a fork. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	__typeof__(posix_spawn) *f = NEXT(posix_spawn);
	struct pl_spawn *sp;
	int ret;

	if (!f)
		return ENOSYS;
	pl_fd_fork_begin();
	sp = spawn_begin(path, fa, envp);
	ret = f(pid, path, fa, attr, argv, envp);
	pl_spawn_end(sp);
	pl_fd_fork_end();
	return ret;
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	__typeof__(posix_spawnp) *f = NEXT(posix_spawnp);
	struct pl_spawn *sp;
	int ret;
	char buf[PATH_MAX];

	if (!f)
		return ENOSYS;
	pl_fd_fork_begin();
	sp = spawn_begin(exec_find(file, buf, sizeof(buf)), fa, envp);
	ret = f(pid, file, fa, attr, argv, envp);
	pl_spawn_end(sp);
	pl_fd_fork_end();
	return ret;
}

EXPORT int system(const char *command)
{
	__typeof__(system) *f = NEXT(system);
	int ret;

	if (!f)
		return errno = ENOSYS, -1;
	if (!command)
		return f(command);	/* "is there a shell?": nothing runs */
	pl_fd_fork_begin();
	ret = f(command);
	pl_fd_fork_end();
	return ret;
}

EXPORT FILE *popen(const char *command, const char *type)
{
	__typeof__(popen) *f = NEXT(popen);
	FILE *ret;

	if (!f)
		return errno = ENOSYS, NULL;
	pl_fd_fork_begin();
	ret = f(command, type);
	pl_fd_fork_end();
	return ret;
}

/* glibc's clone(): a child sharing our files (CLONE_FILES) is a thread
 * as far as they go; any other may hold our descriptions. */
EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	__typeof__(clone) *f = NEXT(clone);
	pid_t *ptid;
	void *tls;
	pid_t *ctid;
	va_list ap;
	int ret;

	/* As glibc's: the optional arguments are read, used as flags say. */
	va_start(ap, arg);
	ptid = va_arg(ap, pid_t *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!f)
		return errno = ENOSYS, -1;
	if (flags & CLONE_FILES)
		return f(fn, stack, flags, arg, ptid, tls, ctid);
	pl_fd_fork_begin();
	ret = f(fn, stack, flags, arg, ptid, tls, ctid);
	pl_fd_fork_end();
	return ret;
}

/*
 * vfork(): the child runs in our memory until it execs or exits, and the
 * library must then leave our tables alone (fd.c: pl_vfork_child()).
 * Knowing that needed a getpid() in every close() (one system call a
 * connection, issue 23); with vfork() here, it needs one only while a
 * vfork() of this process is under way (pl_vforks).  In assembly, as
 * libc's own: the child returns through our frame before the parent
 * does, so the return address is kept in a register, not on the stack.
 * x86-64 only; elsewhere libc's vfork() and a getpid() each close, as
 * before.  A vfork child's exec goes through execve() above.
 */
#if defined(__x86_64__)
int pl_vforks __attribute__((visibility("hidden")));
long pl_vfork_failed(long err) __attribute__((visibility("hidden")));

long pl_vfork_failed(long err)
{
	sl_fetch_sub(&pl_vforks, 1);
	errno = (int)-err;
	return -1;
}

__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
	"	endbr64\n"
	"	lock incl pl_vforks(%rip)\n"
	"	popq %rdi\n"			/* the return address */
	"	movl $58, %eax\n"		/* __NR_vfork */
	"	syscall\n"
	"	pushq %rdi\n"
	"	cmpq $-4095, %rax\n"
	"	jae 2f\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"			/* the child: the count stays up */
	"	lock decl pl_vforks(%rip)\n"	/* the parent: the child is gone */
	"1:	ret\n"
	"2:	movq %rax, %rdi\n"
	"	jmp pl_vfork_failed\n"
	".size vfork, .-vfork\n");

bool pl_vfork_maybe(void)
{
	return sl_load_acquire(&pl_vforks) != 0;
}
#else
bool pl_vfork_maybe(void)
{
	return true;
}
#endif
