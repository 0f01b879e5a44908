// SPDX-License-Identifier: BSD-2-Clause
/*
 * Hand-off on request (`sluice handoff PID FD`, issue 15): only the
 * process that holds an fd can put another file at its number, so the
 * tool asks the process, and the process's library does it.  A process
 * with a TCP socket on a module's stack (where a hand-off can be made)
 * has one thread more, the agent, asleep in recvmsg() on an AF_UNIX
 * datagram socket named "sluice-handoff-PID" in the abstract namespace
 * (core/core.h, "sluice handoff").  A request names an fd; the agent hands it to the
 * kernel as a setsockopt() the stack lacks would (pl_handoff()) and
 * answers 0 or the errno, to the asker's own name.
 *
 * Who asks is the kernel's word (SO_PASSCRED: SCM_CREDENTIALS comes with
 * every datagram): a user other than the process's, not root, is refused
 * (EPERM) and nothing is done.  An fd that is not a Sluice socket is
 * ENOTSOCK (EBADF if none is open).  The agent starts with the process's
 * first TCP socket on a module's stack (pl_sock_install()); a forked child
 * starts its own with its first such socket (until then it has none: a
 * request to it finds nobody).  Its socket is the library's own fd, as
 * twins are (close() says EBADF, a dup2() onto it moves it).  Every signal is blocked in
 * it; once the process is in a sandbox it answers nothing (its filter may
 * allow no more than the call it sleeps in).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

#define PL_AGENT_STACK	(128 * 1024)

static pid_t agent_pid;		/* the process whose agent runs */
/* Its socket: the library's own fd (close() says EBADF, a dup2() onto it
 * moves it first: pl_agent_lost()); -1 none. */
static int agent_fd = -1;
static pthread_mutex_t agent_mu = PTHREAD_MUTEX_INITIALIZER;

/* fd of this process to the kernel: 0 or -errno. */
static int agent_handoff(int fd)
{
	struct pl_sock *ps = pl_get(fd);
	int ret;

	if (!ps)
		return REAL(fcntl)(fd, F_GETFD) < 0 ? -EBADF : -ENOTSOCK;
	ret = pl_handoff(fd, ps);
	pl_put(ps);
	return ret;
}

bool pl_agent_is(int fd)
{
	return fd >= 0 && fd == SL_READ_ONCE(agent_fd);
}

void pl_agent_lost(int fd)
{
	int nfd;

	if (!pl_agent_is(fd))
		return;
	/* Its number is taken: the socket goes on under another. */
	nfd = sl_sys_dup_high(fd);
	if (nfd < 0)
		nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0);
	SL_WRITE_ONCE(agent_fd, nfd);
}

static void *agent_main(void *arg)
{
	(void)arg;
	for (;;) {
		int sk = SL_READ_ONCE(agent_fd);
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(struct ucred))];
		} cb;
		struct sockaddr_un from;
		struct sl_ho_req rq;
		struct sl_ho_ans an = { .magic = SL_HO_MAGIC };
		struct iovec iov = { &rq, sizeof(rq) };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from),
				    .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
		struct ucred cr = { .uid = (uid_t)-1 };
		struct cmsghdr *c;
		ssize_t n = REAL(recvmsg)(sk, &m, 0);

		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			/* Its socket is gone (a dup2() found no number to move
			 * it to): no agent; the tool says nobody answers. */
			pthread_mutex_lock(&agent_mu);
			if (SL_READ_ONCE(agent_fd) == sk || SL_READ_ONCE(agent_fd) < 0)
				break;
			pthread_mutex_unlock(&agent_mu);
			continue;
		}
		if (n != (ssize_t)sizeof(rq) || rq.magic != SL_HO_MAGIC || sl_sys_sandboxed)
			continue;
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
				memcpy(&cr, CMSG_DATA(c), sizeof(cr));
		an.fd = rq.fd;
		if (cr.uid != 0 && cr.uid != getuid() && cr.uid != geteuid())
			an.err = EPERM;
		else
			an.err = -agent_handoff(rq.fd);
		pl_debug("hand-off of fd %d asked by pid %d uid %d: %d", rq.fd, (int)cr.pid,
			 (int)cr.uid, an.err);
		if (m.msg_namelen > sizeof(sa_family_t))
			REAL(sendto)(sk, &an, sizeof(an), MSG_DONTWAIT | MSG_NOSIGNAL,
				     (struct sockaddr *)&from, m.msg_namelen);
	}
	SL_WRITE_ONCE(agent_fd, -1);
	pthread_mutex_unlock(&agent_mu);
	return NULL;
}

void pl_agent_start(void)
{
	pid_t self = sl_self_pid();
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int sk, one = 1, len;

	if (SL_READ_ONCE(agent_pid) == self || sl_sys_sandboxed)
		return;
	pthread_mutex_lock(&agent_mu);
	if (agent_pid == self)
		goto out;
	/* An attempt a process: what fails here (a name taken) is not
	 * tried again with every socket. */
	SL_WRITE_ONCE(agent_pid, self);
	/* A forked child's copy of its parent's: not its name. */
	if (agent_fd >= 0) {
		REAL(close)(agent_fd);
		SL_WRITE_ONCE(agent_fd, -1);
	}
	/* Above the program's numbers (os.h). */
	sk = sl_sys_fd_high(REAL(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	if (sk < 0)
		goto out;
	len = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, SL_HO_NAME, (int)self);
	if (REAL(setsockopt)(sk, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    REAL(bind)(sk, (struct sockaddr *)&a,
		       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len))) {
		pl_debug("no hand-off agent: %s", strerror(errno));
		REAL(close)(sk);
		goto out;
	}
	SL_WRITE_ONCE(agent_fd, sk);
	if (pl_thread_quiet(agent_main, NULL, PL_AGENT_STACK, NULL)) {
		SL_WRITE_ONCE(agent_fd, -1);
		REAL(close)(sk);
	}
out:
	pthread_mutex_unlock(&agent_mu);
}
