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
 *
 * It also keeps, for each socket this process handed to the kernel that
 * other processes may hold too (fork, SCM_RIGHTS), a copy of the kernel
 * socket, and gives it by SCM_RIGHTS to any such process that asks
 * (SL_HO_GET, the same credential check) at its next call on the
 * socket; the copy goes when the stack's socket has gone from every
 * process (SL_HO_DROP from the last, or a look each second while copies
 * are kept) or with this process (lib/preload/README.md, "Other
 * processes").
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

/*
 * Kernel sockets this process made of stack sockets other processes may
 * hold (socket sd of generation gen), kept for them; under copy_mu, whose
 * condition says a copy came.  ho_pending: hand-overs whose kernel socket
 * is not kept yet (a live hand-off publishes under the stack lock, before
 * the kernel socket reaches the library): a request waits for them.
 */
struct ho_copy {
	uint32_t sd, gen;
	int fd;
};
static struct ho_copy *copies;
static unsigned int capcopies;
/* Read by a forked child's handler (pl_agent_atfork_child()): with the
 * fork handlers' own variables, no page of its own to fault in. */
static unsigned int ncopies SL_FORKDATA;
static int ho_pending;
static pthread_mutex_t copy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t copy_cv = PTHREAD_COND_INITIALIZER;
#define PL_HO_WAIT_MS	2000	/* a request waits for a pending copy, an asker for its answer */
#define PL_HO_LOOK_MS	1000	/* with copies kept, the agent looks at them this often */

/* Is stack socket sd (generation gen) still this process's hand-over:
 * held by another process, not yet let go everywhere? */
static bool copy_needed(uint32_t sd, uint32_t gen)
{
	struct sl_stack *s = pl_sl();
	const struct sl_sock *so;

	if (!s || sd >= s->max_sockets)
		return false;
	so = sl_sock(s, sd);
	return SL_READ_ONCE(so->kp.gen) == gen && sl_sock_type_live(SL_READ_ONCE(so->type)) &&
	       SL_READ_ONCE(so->ho_pid) == (uint32_t)sl_self_pid();
}

static void copy_del_locked(unsigned int i)
{
	REAL(close)(copies[i].fd);
	copies[i] = copies[--ncopies];
	SL_WRITE_ONCE(ncopies, ncopies);
}

/* Copies no longer needed go. */
static void copies_prune(void)
{
	pthread_mutex_lock(&copy_mu);
	if (ho_pending) {	/* one kept, not published yet */
		pthread_mutex_unlock(&copy_mu);
		return;
	}
	for (unsigned int i = 0; i < ncopies;)
		if (!copy_needed(copies[i].sd, copies[i].gen))
			copy_del_locked(i);
		else
			i++;
	pthread_mutex_unlock(&copy_mu);
}

void pl_agent_pending(int d)
{
	pthread_mutex_lock(&copy_mu);
	ho_pending += d;
	pthread_cond_broadcast(&copy_cv);
	pthread_mutex_unlock(&copy_mu);
}

int pl_agent_keep(uint32_t sd, uint32_t gen, int ks)
{
	struct ho_copy *n;
	int fd;

	pl_agent_start();
	if (SL_READ_ONCE(agent_fd) < 0 || SL_READ_ONCE(agent_pid) != sl_self_pid())
		return -ESRCH;	/* nobody to answer: not published */
	fd = sl_sys_dup_high(ks);
	if (fd < 0)
		return -EMFILE;
	pthread_mutex_lock(&copy_mu);
	for (unsigned int i = 0; i < ncopies; i++)
		if (copies[i].sd == sd) {	/* an older generation's, gone */
			copy_del_locked(i);
			break;
		}
	if (ncopies == capcopies) {
		unsigned int cap = capcopies ? 2 * capcopies : 8;

		n = realloc(copies, cap * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&copy_mu);
			REAL(close)(fd);
			return -ENOMEM;
		}
		copies = n;
		capcopies = cap;
	}
	copies[ncopies] = (struct ho_copy){ .sd = sd, .gen = gen, .fd = fd };
	SL_WRITE_ONCE(ncopies, ncopies + 1);
	pthread_cond_broadcast(&copy_cv);
	pthread_mutex_unlock(&copy_mu);
	/* Wake the agent, asleep without a timeout while it kept none. */
	if (ncopies == 1) {
		struct sl_ho_get nudge = { .magic = SL_HO_DROP, .sd = UINT32_MAX };

		pl_agent_tell((uint32_t)sl_self_pid(), &nudge);
	}
	return 0;
}

void pl_agent_drop(uint32_t sd, uint32_t gen)
{
	pthread_mutex_lock(&copy_mu);
	for (unsigned int i = 0; i < ncopies; i++)
		if (copies[i].sd == sd && copies[i].gen == gen) {
			copy_del_locked(i);
			break;
		}
	pthread_mutex_unlock(&copy_mu);
}

void pl_agent_settle(uint32_t sd, uint32_t gen)
{
	if (!copy_needed(sd, gen))
		pl_agent_drop(sd, gen);
}

/* A request for the copy of socket rq->sd: answered with it, or an errno. */
static void answer_get(int sk, const struct sl_ho_get *rq, const struct ucred *cr,
		       const struct sockaddr_un *from, socklen_t fromlen)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cb;
	struct sl_ho_ans an = { .magic = SL_HO_MAGIC, .fd = (int32_t)rq->sd };
	struct iovec iov = { &an, sizeof(an) };
	struct msghdr m = { .msg_name = (void *)from, .msg_namelen = fromlen,
			    .msg_iov = &iov, .msg_iovlen = 1 };
	struct timespec until;
	int fd = -1;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PL_HO_WAIT_MS / 1000;
	pthread_mutex_lock(&copy_mu);
	for (;;) {
		for (unsigned int i = 0; i < ncopies && fd < 0; i++)
			if (copies[i].sd == rq->sd && copies[i].gen == rq->gen)
				fd = copies[i].fd;
		if (fd >= 0 || !ho_pending ||
		    pthread_cond_timedwait(&copy_cv, &copy_mu, &until) == ETIMEDOUT)
			break;
	}
	if (cr->uid != 0 && cr->uid != getuid() && cr->uid != geteuid())
		an.err = EPERM;
	else if (fd < 0)
		an.err = ENOENT;
	if (!an.err) {
		memset(&cb, 0, sizeof(cb));
		m.msg_control = cb.b;
		m.msg_controllen = sizeof(cb.b);
		CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), &fd, sizeof(int));
	}
	/* Under copy_mu: the copy is not closed while in flight. */
	REAL(sendmsg)(sk, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
	pthread_mutex_unlock(&copy_mu);
	pl_debug("socket %u's kernel socket asked by pid %d uid %d: %d", rq->sd, (int)cr->pid,
		 (int)cr->uid, an.err);
}

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

static bool copy_is(int fd)
{
	bool is = false;

	if (!SL_READ_ONCE(ncopies))
		return false;
	pthread_mutex_lock(&copy_mu);
	for (unsigned int i = 0; i < ncopies && !is; i++)
		is = copies[i].fd == fd;
	pthread_mutex_unlock(&copy_mu);
	return is;
}

bool pl_agent_is(int fd)
{
	return fd >= 0 && (fd == SL_READ_ONCE(agent_fd) || copy_is(fd));
}

void pl_agent_lost(int fd)
{
	int nfd;

	if (copy_is(fd)) {
		/* A copy's number is taken: it goes on under another. */
		pthread_mutex_lock(&copy_mu);
		for (unsigned int i = 0; i < ncopies; i++)
			if (copies[i].fd == fd) {
				nfd = sl_sys_dup_high(fd);
				if (nfd < 0)
					nfd = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0);
				if (nfd < 0)
					copy_del_locked(i);
				else
					copies[i].fd = nfd;
				break;
			}
		pthread_mutex_unlock(&copy_mu);
		return;
	}
	if (fd < 0 || fd != SL_READ_ONCE(agent_fd))
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
		union {
			struct sl_ho_req rq;
			struct sl_ho_get get;
		} u;
		struct sl_ho_req rq;
		struct sl_ho_ans an = { .magic = SL_HO_MAGIC };
		struct iovec iov = { &u, sizeof(u) };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from),
				    .msg_iov = &iov, .msg_iovlen = 1,
				    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
		struct ucred cr = { .uid = (uid_t)-1 };
		struct cmsghdr *c;
		struct sl_stack *s = pl_sl();
		int tfd = pl_away_agent_fd(s);
		struct pollfd pf[2] = { { .fd = sk, .events = POLLIN },
					{ .fd = tfd, .events = POLLIN } };
		ssize_t n;

		/* With copies kept: a look at them each PL_HO_LOOK_MS (a
		 * holder that let go without a word: died, or swept).  With
		 * the away timer (away.c): its rings too, one poll for both. */
		if (SL_READ_ONCE(ncopies) || tfd >= 0) {
			int np = REAL(poll)(pf, tfd >= 0 ? 2 : 1,
					    SL_READ_ONCE(ncopies) ? PL_HO_LOOK_MS : -1);

			if (!np) {
				copies_prune();
				continue;
			}
			if (np > 0 && tfd >= 0 && (pf[1].revents & POLLIN))
				pl_away_agent_ring(s, tfd);
			if (np > 0 && !pf[0].revents)
				continue;
		}
		n = REAL(recvmsg)(sk, &m, 0);

		if (n < 0 && errno != EINTR && errno != EAGAIN) {
			/* Its socket is gone (a dup2() found no number to move
			 * it to): no agent; the tool says nobody answers. */
			pthread_mutex_lock(&agent_mu);
			if (SL_READ_ONCE(agent_fd) == sk || SL_READ_ONCE(agent_fd) < 0)
				break;
			pthread_mutex_unlock(&agent_mu);
			continue;
		}
		if (sl_sys_sandboxed)
			continue;
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
				memcpy(&cr, CMSG_DATA(c), sizeof(cr));
		if (n == (ssize_t)sizeof(u.get) && u.get.magic == SL_HO_DROP) {
			/* (UINT32_MAX: pl_agent_keep()'s wake-up alone.) */
			if (u.get.sd != UINT32_MAX)
				copies_prune();
			continue;
		}
		if (n == (ssize_t)sizeof(u.get) && u.get.magic == SL_HO_GET) {
			if (m.msg_namelen > sizeof(sa_family_t))
				answer_get(sk, &u.get, &cr, &from, m.msg_namelen);
			continue;
		}
		if (n != (ssize_t)sizeof(rq) || u.rq.magic != SL_HO_MAGIC)
			continue;
		rq = u.rq;
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
	/* The stack's away timer, read by this thread too (away.c). */
	pl_away_agent_open(pl_sl());
	if (pl_thread_quiet(agent_main, NULL, PL_AGENT_STACK, NULL)) {
		/* Nobody reads the timer either: arm nothing. */
		if (pl_away_agent_fd(pl_sl()) >= 0)
			sl_tk_drop(pl_sl());
		SL_WRITE_ONCE(agent_fd, -1);
		REAL(close)(sk);
	}
out:
	pthread_mutex_unlock(&agent_mu);
}

int pl_agent_tell(uint32_t pid, const struct sl_ho_get *msg)
{
	struct sockaddr_un me = { .sun_family = AF_UNIX }, to = { .sun_family = AF_UNIX };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cb;
	struct sl_ho_ans an;
	struct iovec iov = { &an, sizeof(an) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
	struct timeval tv = { PL_HO_WAIT_MS / 1000 + 1, 0 };
	struct cmsghdr *c;
	int sk, len, ks = -1, ret, saved = errno;
	ssize_t n;

	if (sl_sys_sandboxed)
		return -EPERM;
	sk = REAL(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return -errno;
	len = snprintf(to.sun_path + 1, sizeof(to.sun_path) - 1, SL_HO_NAME, (int)pid);
	/* Autobind: an abstract name of our own, for the answer. */
	if (REAL(bind)(sk, (struct sockaddr *)&me, sizeof(sa_family_t)) ||
	    REAL(setsockopt)(sk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    REAL(sendto)(sk, msg, sizeof(*msg), MSG_NOSIGNAL, (struct sockaddr *)&to,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len)) !=
		    (ssize_t)sizeof(*msg)) {
		ret = -errno;
		goto out;
	}
	ret = 0;
	if (msg->magic != SL_HO_GET)
		goto out;
	do
		n = REAL(recvmsg)(sk, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (c = n > 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&ks, CMSG_DATA(c), sizeof(int));
	if (n < 0)
		ret = -errno;
	else if (n != (ssize_t)sizeof(an) || an.magic != SL_HO_MAGIC || an.fd != (int32_t)msg->sd)
		ret = -EPROTO;
	else if (an.err)
		ret = -an.err;
	else
		ret = ks < 0 ? -EPROTO : ks;
	if (ret < 0 && ks >= 0)
		REAL(close)(ks);
out:
	REAL(close)(sk);
	errno = saved;
	return ret;
}

/*
 * The copy that outlives its maker (lib/preload/README.md, "Other
 * processes", "The carrier"): kernel socket ks rides in the receive queue
 * of the socket's own placeholder fd (an AF_UNIX stream socket, shared by
 * every process that holds the socket: fdtable.c, "The placeholder"),
 * put there with SCM_RIGHTS from the other end of a connection made for
 * it.  The kernel then holds it for exactly as long as any description
 * of the placeholder lives, in any process: the maker's _exit() or
 * SIGKILL does not end it, and the last holder's switch (a dup3() over
 * the placeholder) or close does, as Linux ends a socket with its last
 * fd.  Each holder takes its own copy by MSG_PEEK, which leaves it for
 * the others.  On a module's stack the fd is the module's socket file,
 * which keeps it the same way (SLUICE_IOC_SOCK_KEEP; a module without
 * it says ENOTTY, and the agent keeps the copy).  0, or -errno.
 */
int pl_ho_carry(int fd, const struct pl_sock *ps, int ks)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cb;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t al = sizeof(a);
	char one = 'k';
	struct iovec iov = { &one, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
	int l, c = -1, ret = 0;

	if (sl_sys_sandboxed)
		return -EOPNOTSUPP;
	if (ps->kfd) {
		struct sluice_sock_keep k = { .size = sizeof(k), .fd = ks };

		return REAL(ioctl)(fd, SLUICE_IOC_SOCK_KEEP, &k) ? -errno : 0;
	}
	l = REAL(socket)(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -errno;
	/* Autobind (an abstract name of its own), listen, and the
	 * placeholder connects to it: an AF_UNIX connect() completes at
	 * once, blocking or not, with the backlog free. */
	if (REAL(bind)(l, (struct sockaddr *)&a, sizeof(sa_family_t)) || REAL(listen)(l, 1) ||
	    REAL(getsockname)(l, (struct sockaddr *)&a, &al) ||
	    REAL(connect)(fd, (struct sockaddr *)&a, al) ||
	    (c = REAL(accept4)(l, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		ret = -errno;
		goto out;
	}
	memset(&cb, 0, sizeof(cb));
	CMSG_FIRSTHDR(&m)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&m)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&m)->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&m)), &ks, sizeof(int));
	if (REAL(sendmsg)(c, &m, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
		ret = -errno;
out:
	/* The placeholder keeps what was sent after its peer closes. */
	if (c >= 0)
		REAL(close)(c);
	REAL(close)(l);
	return ret;
}

/* The kernel socket carried by fd's placeholder (pl_ho_carry()), a copy
 * of this process's own (close-on-exec), or -errno (-EAGAIN: none). */
int pl_ho_fetch(int fd, const struct pl_sock *ps)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cb;
	char one;
	struct iovec iov = { &one, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cb.b, .msg_controllen = sizeof(cb.b) };
	struct cmsghdr *c;
	int ks = -1, saved = errno;
	ssize_t n;

	if (ps->kfd) {
		struct sluice_sock_keep k = {
			.size = sizeof(k),
			.flags = SLUICE_SOCK_KEEP_GET | SLUICE_SOCK_KEEP_CLOEXEC,
		};

		ks = REAL(ioctl)(fd, SLUICE_IOC_SOCK_KEEP, &k);
		n = ks < 0 ? -errno : 0;
		errno = saved;
		return ks >= 0 ? ks : (int)n;
	}
	n = REAL(recvmsg)(fd, &m, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	for (c = n == 1 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&ks, CMSG_DATA(c), sizeof(int));
	errno = saved;
	return ks >= 0 ? ks : -EAGAIN;
}

/* A forked child: the parent's copies are not its to give (the parent's
 * agent gives them), and would hold the kernel sockets open. */
SL_FORKTEXT void pl_agent_atfork_child(void)
{
	if (!SL_READ_ONCE(ncopies))
		return;
	pthread_mutex_init(&copy_mu, NULL);
	pthread_cond_init(&copy_cv, NULL);
	for (unsigned int i = 0; i < ncopies; i++)
		REAL(close)(copies[i].fd);
	ncopies = 0;
	ho_pending = 0;
}

void pl_ho_let_go(uint32_t pid, uint32_t sd, uint32_t gen)
{
	const struct sl_sock *so = sl_sock(pl_sl(), sd);
	struct sl_ho_get drop = { .magic = SL_HO_DROP, .sd = sd, .gen = gen };

	if (SL_READ_ONCE(so->kp.gen) != gen || !sl_sock_type_live(SL_READ_ONCE(so->type)))
		pl_agent_tell(pid, &drop);
}
