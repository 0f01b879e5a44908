// SPDX-License-Identifier: BSD-2-Clause
/*
 * setuid, seteuid, setreuid, setresuid: a server started as root that
 * drops to another user (nginx's workers become nobody, sshd's children
 * the user) must go on using the stack.  A /dev/shm stack's files are
 * created 0600 for their creator, so each placeholder a worker opens after
 * the switch would fail (EACCES from every accept).  Before a root
 * process's effective uid becomes another, the stack's files are given to
 * that user: the stack belongs to whoever the program runs as, as its
 * sockets do on the kernel.  Root processes still on the stack keep their
 * access.  A module's stack needs nothing: its fds are open already.
 *
 * prctl(PR_SET_SECCOMP): a process that sandboxes itself (sshd's
 * pre-authentication child) is noted before its filter applies, and the
 * library makes only the calls common filters allow from then on
 * (os.h, sl_sys_sandboxed; issue 18).
 */
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"


static void give_files(uid_t euid)
{
	if (euid == (uid_t)-1 || euid == 0 || geteuid() != 0)
		return;
	pl_stack_files_chown(euid);
}

EXPORT int setuid(uid_t uid)
{
	give_files(uid);
	return REAL(setuid)(uid);
}

EXPORT int seteuid(uid_t euid)
{
	give_files(euid);
	return REAL(seteuid)(euid);
}

EXPORT int setreuid(uid_t ruid, uid_t euid)
{
	give_files(euid);
	return REAL(setreuid)(ruid, euid);
}

EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	give_files(euid);
	return REAL(setresuid)(ruid, euid, suid);
}

EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	/* Before the filter: once it is in, it may be too late to ask. */
	if (option == PR_SET_SECCOMP && a[0] == SECCOMP_MODE_FILTER) {
		struct sigaction pipe_act;

		/* Asked while it still may be: in the sandbox a SIGPIPE the
		 * library raises (io.c) costs a tgkill(2), which is made only
		 * if SIGPIPE is not ignored. */
		if (!sl_sys_sigaction(SIGPIPE, NULL, &pipe_act))
			pl_sigpipe_ignored = !(pipe_act.sa_flags & SA_SIGINFO) &&
					     pipe_act.sa_handler == SIG_IGN;
		/* Private sockets take their locks while they may
		 * (fdtable.c): a sandbox may forbid fcntl later, at a fork. */
		pl_fd_share_all();
		sl_sys_sandboxed = true;
	}
	/* glibc's prctl is the bare system call; called directly, this needs
	 * no setup (sanitizer runtimes call prctl while they start). */
	return (int)sl_syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
}
