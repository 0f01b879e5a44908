// SPDX-License-Identifier: BSD-2-Clause
/*
 * O_ASYNC on a Sluice socket (README.md, "O_ASYNC"): the signal is the
 * kernel's own.  The process that sets O_ASYNC (F_SETFL, FIOASYNC) makes
 * an async bell for the socket, a datagram socket bound to an abstract
 * name (run/bell.c, sl_bell_name()), and three kernel files that stand
 * for the socket's events: a datagram pair (a byte into it: POLL_IN; its
 * other end disconnected with a byte queued: POLL_ERR), a pipe's writing
 * end (a byte through the pipe: POLL_OUT) and a stream pair (its other
 * end shut: POLL_HUP).  On each of the three it sets the owner (F_SETOWN,
 * F_SETOWN_EX) and the signal (F_SETSIG) the program set on its fd, and
 * O_ASYNC with the file standing at the program's fd number for that one
 * call, so that the kernel's fasync entry (fa_fd) says the program's
 * number.  The stack rings the bell at each event Linux signals
 * (sl_sock_async()), from whichever process runs it, with the event's
 * si_code as the byte; this process's async thread reads it and makes
 * that event on its file, and the kernel sends the signal: SIGIO
 * (SI_KERNEL) or the F_SETSIG signal with si_code, si_band and si_fd as
 * a socket's, to a process, a process group or a thread, with the
 * kernel's own permission check (sigio_perm()).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

/* Bell names are made of a pid and a thread id (sl_bell_name()): async
 * bells take ids no thread has (above the kernel's PID_MAX_LIMIT). */
#define PL_ASYNC_TID	0x40000000u
#define PL_ASYNC_FDS	65536
/* Sockets armed at once in a process: a bell each, in the region's table
 * of SL_BELLS (run/bell.c), which holds no more. */
#define PL_ASYNC_RECS	SL_BELLS
#define PL_ASYNC_STACK	(128 * 1024)
/* How long fork() waits for an async thread's start, at most (as twin.c's
 * watcher: a runtime that wraps thread start takes locks of its own). */
#define PL_ASYNC_START_WAIT_MS	1000

/*
 * A socket's files in this process.  The three armed at the program's
 * number: in_s (a datagram pair's end, autobound so its other end can
 * connect to it again), out_w (a pipe's writing end), hup_s (a stream
 * pair's end); the other ends are the thread's to act on.
 */
struct async_rec {
	uint32_t serial;	/* 0: free; in the epoll data, against reuse */
	pid_t pid;		/* the process that made it, whose thread serves it */
	int bell;
	int in_s, in_p;
	int out_r, out_w;
	int hup_s, hup_p;
	struct sockaddr_un in_name;
	socklen_t in_len;
	int slot;		/* its entry in the region's bells[], -1 none */
	uint32_t gen;		/* ... and that entry's generation */
};

/* Orders arming, the owner's copies and closing with the thread's events
 * (the thread holds it while it acts on a record's files). */
static pthread_mutex_t async_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;
static uint32_t async_ids;
/* Read by every fork's child handler: on the fork page, not a .bss page
 * the parent may never have touched (a fault in each child). */
static uint32_t async_serial SL_FORKDATA;
static struct async_rec recs[PL_ASYNC_RECS];
/* Which fds are ours, for close() (EBADF) and dup2(). */
static uint64_t async_bits[PL_ASYNC_FDS / 64];
/* The async thread's epoll set of bells, and the process whose it is. */
static int async_ep = -1;
static pid_t async_ep_pid SL_FORKDATA;	/* on the fork page, as async_mu */
static bool async_up;		/* that thread reached its function */

static void set_bit(int fd, bool on)
{
	uint64_t m = 1ull << (fd % 64);

	if (fd < 0 || fd >= PL_ASYNC_FDS)
		return;
	if (on)
		sl_fetch_or(&async_bits[fd / 64], m);
	else
		sl_fetch_and(&async_bits[fd / 64], ~m);
}

bool pl_async_is(int fd)
{
	return fd >= 0 && fd < PL_ASYNC_FDS &&
	       (SL_READ_ONCE(async_bits[fd / 64]) >> (fd % 64) & 1);
}

static void forget(int *fd)
{
	set_bit(*fd, false);
	*fd = -1;
}

static void drop(int *fd)
{
	if (*fd >= 0 && pl_async_is(*fd))
		sl_sys_close(*fd);
	forget(fd);
}

/* A dup2() is about to take fd's number: the file moves to another
 * (its fasync entry and epoll item go with the file, not the number);
 * with no number free, it is no more acted on. */
static void move(int *f)
{
	int nfd = sl_sys_dup_high(*f);

	set_bit(*f, false);
	*f = nfd;
	set_bit(nfd, true);
}

void pl_async_lost(int fd)
{
	pthread_mutex_lock(&async_mu);
	for (unsigned int i = 0; i < PL_ASYNC_RECS; i++) {
		struct async_rec *r = &recs[i];
		int *f[] = { &r->bell, &r->in_s, &r->in_p, &r->out_r, &r->out_w, &r->hup_s, &r->hup_p };

		if (!r->serial)
			continue;
		for (unsigned int k = 0; k < sizeof(f) / sizeof(f[0]); k++)
			if (*f[k] == fd)
				move(f[k]);
	}
	if (fd == async_ep)
		move(&async_ep);
	set_bit(fd, false);
	pthread_mutex_unlock(&async_mu);
}

/* ---- the events -------------------------------------------------------- */

/*
 * The kernel's signal for one event, made on this record's files
 * (async_mu held).  Each leaves its file as it found it, so the next
 * event of any kind signals again:
 *  - POLL_IN: a byte in_p -> in_s (sock_def_readable()), read at once;
 *  - POLL_ERR: a byte in_s -> in_p, in_p disconnected with it queued
 *    (unix_dgram_disconnected(): ECONNRESET on in_s, sk_error_report()),
 *    the error read (SO_ERROR) and in_p connected back;
 *  - POLL_OUT: a byte through the pipe (pipe_read() signals its writers);
 *  - POLL_HUP: hup_p shut both ways (unix_shutdown(): hup_s's peer_mode
 *    is SHUTDOWN_MASK), again at each;
 *  - POLL_PRI (a new urgent pointer): a byte MSG_OOB hup_p -> hup_s
 *    (queue_oob(): sk_send_sigurg(), SIGURG to the owner and, with
 *    F_SETSIG, POLL_PRI; then sk_data_ready(), POLL_IN, which stands for
 *    tcp_urg()'s for the urgent byte), read at once (hup_s is
 *    SO_OOBINLINE: the byte is data).  Before POLL_HUP only, as a TCP
 *    stream's urgent data comes before its FIN;
 *  - SL_POLL_PRI_ALONE (a new urgent pointer whose segment queued no
 *    data, where Linux gives no POLL_IN): the same, sent while a thread
 *    of ours waits in a read of hup_s (pri_alone()).
 */
static void pri_alone(struct async_rec *r);

static void event(struct async_rec *r, unsigned int why)
{
	struct sockaddr none = { .sa_family = AF_UNSPEC };
	socklen_t len = sizeof(int);
	char b = 0, d[16];
	int err;

	switch (why) {
	case SL_POLL_ERR:
		if (r->in_s < 0 || r->in_p < 0)
			return;
		sl_sys_sendto(r->in_s, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
		sl_sys_connect(r->in_p, &none, sizeof(none));
		sl_sys_getsockopt(r->in_s, SOL_SOCKET, SO_ERROR, &err, &len);
		sl_sys_connect(r->in_p, (struct sockaddr *)&r->in_name, r->in_len);
		return;
	case SL_POLL_OUT:
		if (r->out_w >= 0 && r->out_r >= 0 && sl_sys_write(r->out_w, &b, 1) == 1)
			sl_sys_read(r->out_r, &b, 1);
		return;
	case SL_POLL_HUP:
		if (r->hup_p >= 0)
			sl_sys_shutdown(r->hup_p, SHUT_RDWR);
		return;
	case SL_POLL_PRI:
		if (r->hup_s >= 0 && r->hup_p >= 0 &&
		    sl_sys_sendto(r->hup_p, &b, 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL,
				  NULL, 0) == 1)
			sl_sys_read(r->hup_s, d, sizeof(d));	/* and any left */
		return;
	case SL_POLL_PRI_ALONE:
		if (r->hup_s >= 0 && r->hup_p >= 0)
			pri_alone(r);
		return;
	default:
		/* POLL_IN (and a ring of another build: 0). */
		if (r->in_s < 0 || r->in_p < 0)
			return;
		sl_sys_sendto(r->in_p, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
		sl_sys_drain_dgrams(r->in_s);
		return;
	}
}

/*
 * SIGURG and POLL_PRI without POLL_IN.  queue_oob() calls sk_data_ready()
 * after sk_send_sigurg(), and sock_def_readable()'s POLL_IN
 * (sk_wake_async(SOCK_WAKE_WAITD)) is not sent while a reader of the
 * socket waits for data (SOCKWQ_ASYNC_WAITDATA, set by
 * unix_stream_data_wait() before it sleeps, cleared when it wakes and
 * takes the socket's lock again, after sock_def_readable() looked).  So
 * a thread of ours reads hup_s, made blocking for it (SO_RCVTIMEO bounds
 * the read), and the byte is sent once that thread sleeps in the read
 * (/proc/self/task/TID/syscall: a read of hup_s; then stat: S); it takes
 * the byte.  Without /proc (a sandbox), or the thread not asleep within
 * 50 ms, the byte goes anyway, and the POLL_IN with it as before.  Rare
 * (a pointer on a bare ACK, or out of order): a thread made each time.
 */
static struct {
	uint32_t serial;	/* this event's, and the last its reader ended */
	uint32_t done;
	int tid;
} alone;

static void *alone_main(void *arg)
{
	uint64_t a = (uint64_t)(uintptr_t)arg;
	char d[16];

	SL_WRITE_ONCE(alone.tid, (int)sl_syscall(SYS_gettid));
	sl_sys_read((int)(a >> 32), d, sizeof(d));
	/* Release: its read is over before the event restores O_NONBLOCK. */
	sl_store_release(&alone.done, (uint32_t)a);
	return NULL;
}

/* Is thread tid asleep in a read of fd: its system call first, then its
 * state (S: unix_stream_data_wait(); the iolock sleeps in D). */
static bool alone_asleep(int tid, int fd)
{
	char path[64], b[256], *p, *e;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	if (sl_sys_read_small(path, b, sizeof(b)) <= 0 ||
	    strtol(b, &e, 10) != SYS_read || e == b || strtol(e, NULL, 16) != fd)
		return false;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (sl_sys_read_small(path, b, sizeof(b)) <= 0)
		return false;
	p = strrchr(b, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static void pri_alone(struct async_rec *r)
{
	struct timespec ts = { 0, 100000 };
	uint32_t serial = ++alone.serial;
	int fl = sl_sys_fcntl(r->hup_s, F_GETFL, 0), tid = 0;
	char b = 0, d[16];

	SL_WRITE_ONCE(alone.tid, 0);
	if (fl >= 0 && !sl_sys_fcntl(r->hup_s, F_SETFL, fl & ~O_NONBLOCK) &&
	    !pl_thread_quiet(alone_main, (void *)(uintptr_t)((uint64_t)(uint32_t)r->hup_s << 32 | serial),
			     64 * 1024, NULL)) {
		/* Up to 50 ms for it to sleep. */
		for (int i = 0; i < 500; i++) {
			tid = SL_READ_ONCE(alone.tid);
			if (tid > 0 && alone_asleep(tid, r->hup_s))
				break;
			nanosleep(&ts, NULL);
		}
	}
	if (sl_sys_sendto(r->hup_p, &b, 1, MSG_OOB | MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0) == 1 &&
	    tid > 0)
		for (int i = 0; i < 500 && sl_load_acquire(&alone.done) != serial; i++)
			nanosleep(&ts, NULL);
	if (fl >= 0)
		sl_sys_fcntl(r->hup_s, F_SETFL, fl);
	sl_sys_read(r->hup_s, d, sizeof(d));	/* any left */
}

/* n events why in a row (async_mu held): each POLL_IN a byte in_p ->
 * in_s, a signal each, read every 64 (in_p's send buffer holds about
 * 270 such datagrams: in_s is its peer, so no queue length applies). */
static void events(struct async_rec *r, unsigned int why, unsigned int n)
{
	char b = 0;

	if (why != SL_POLL_IN) {
		while (n--)
			event(r, why);
		return;
	}
	if (r->in_s < 0 || r->in_p < 0)
		return;
	for (unsigned int k = 1; k <= n; k++) {
		sl_sys_sendto(r->in_p, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
		if (k % 64 == 0 || k == n)
			sl_sys_drain_dgrams(r->in_s);
	}
}

/*
 * A bell's rings (async_mu held): its bytes, each an event, in order;
 * then the events its ringers found no room for in its queue (ring(),
 * run/bell.c), kind by kind: so a burst of more events than the queue
 * holds is a signal each, as Linux queues a real-time signal each.
 */
static void serve(uint64_t data)
{
	unsigned int i = (uint32_t)data;
	struct async_rec *r = &recs[i % PL_ASYNC_RECS];
	static const unsigned char order[] = { SL_POLL_OUT, SL_POLL_ERR, SL_POLL_PRI,
					       SL_POLL_PRI_ALONE, SL_POLL_HUP, SL_POLL_IN };
	struct mmsghdr m[16];
	struct iovec v[16];
	char b[16][64];
	uint16_t lost[8];
	int n;

	if (i >= PL_ASYNC_RECS || !r->serial || r->serial != (uint32_t)(data >> 32) ||
	    r->bell < 0)
		return;
	for (int k = 0; k < 16; k++) {
		v[k].iov_base = b[k];
		v[k].iov_len = sizeof(b[k]);
		memset(&m[k].msg_hdr, 0, sizeof(m[k].msg_hdr));
		m[k].msg_hdr.msg_iov = &v[k];
		m[k].msg_hdr.msg_iovlen = 1;
	}
	/* Bounded: a ringer faster than us is met at the next turn. */
	for (int turn = 0; turn < 4; turn++) {
		n = REAL(recvmmsg)(r->bell, m, 16, MSG_DONTWAIT, NULL);
		for (int k = 0; k < n; k++) {
			unsigned int len = m[k].msg_len < sizeof(b[k]) ? m[k].msg_len : sizeof(b[k]);

			/* A run of one kind at a time (a ring's datagram is). */
			for (unsigned int j = 0, run; j < len; j += run) {
				unsigned char why = (unsigned char)b[k][j];

				for (run = 1; j + run < len && b[k][j + run] == b[k][j]; run++)
					;
				if (why != SL_ASYNC_LOOK)
					events(r, why, run);
			}
		}
		if (n < 16)
			break;
	}
	if (r->slot < 0)
		return;
	sl_async_bell_take(pl_stack(), r->slot, r->gen, lost);
	for (unsigned int k = 0; k < sizeof(order); k++)
		if (lost[order[k]])
			events(r, order[k], lost[order[k]]);
}

/* ---- a forked child's part ----------------------------------------------- */

/* An epoll item of the async thread with this bit is a pidfd (bits 32-62)
 * of a process (bits 0-31) whose records this one shares; a record's
 * serial never reaches it. */
#define PL_ASYNC_WATCH	(1ull << 63)

/*
 * Process gone ended, and its thread with it (async_mu held): the records
 * it served that this process shares (a forked child's copies of the
 * files, whose descriptions, and so the owner's fasync entries, live on
 * while any process holds them) are served by this process's thread
 * now, as Linux signals the owner as long as the socket's file exists.
 * Their bells' names stay bound (this process holds them), so the stack
 * rings them still; rings since the end wait in their queues.
 */
static void adopt(pid_t gone)
{
	pid_t self = sl_self_pid();

	for (unsigned int i = 0; i < PL_ASYNC_RECS; i++) {
		struct async_rec *r = &recs[i];
		struct epoll_event ev = { .events = EPOLLIN };

		if (!r->serial || r->pid != gone || r->bell < 0)
			continue;
		r->pid = self;
		ev.data.u64 = (uint64_t)r->serial << 32 | i;
		sl_sys_epoll_ctl(async_ep, EPOLL_CTL_ADD, r->bell, &ev);
	}
}

static int high(int fd);

/* Watch process pid, whose records this one shares (async_mu held): a
 * pidfd in the thread's set; gone already, its records are ours now. */
static void watch(pid_t pid)
{
	int pfd = high((int)sl_syscall(SYS_pidfd_open, pid, 0u));
	struct epoll_event ev = { .events = EPOLLIN };

	if (pfd < 0) {
		if (errno == ESRCH)
			adopt(pid);
		return;
	}
	ev.data.u64 = PL_ASYNC_WATCH | (uint64_t)(uint32_t)pfd << 32 | (uint32_t)pid;
	if (sl_sys_epoll_ctl(async_ep, EPOLL_CTL_ADD, pfd, &ev))
		drop(&pfd);
}

/* A watched process ended (async_mu held). */
static void watched_end(uint64_t data)
{
	int pfd = (int)(data >> 32 & 0x7fffffff);

	if (!pl_async_is(pfd))
		return;		/* its number was taken (pl_async_lost()) */
	sl_sys_epoll_ctl(async_ep, EPOLL_CTL_DEL, pfd, NULL);
	drop(&pfd);
	adopt((pid_t)(uint32_t)data);
}

static void nap(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static void *async_main(void *arg)
{
	struct epoll_event evs[16];

	(void)arg;
	/* Release: pairs with the acquire in pl_async_atfork_prepare(). */
	sl_store_release(&async_up, true);
	for (;;) {
		int n = REAL(epoll_wait)(SL_READ_ONCE(async_ep), evs, 16, -1);

		/* A number moved under us (pl_async_lost()); or, once the
		 * process is in a sandbox, nothing but what it did before
		 * (its filter may allow no more): no signals then. */
		if (n < 0 || sl_sys_sandboxed) {
			nap();
			continue;
		}
		pthread_mutex_lock(&async_mu);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 & PL_ASYNC_WATCH)
				watched_end(evs[i].data.u64);
			else
				serve(evs[i].data.u64);
		}
		pthread_mutex_unlock(&async_mu);
	}
	return NULL;
}

/* This process's async thread and its set, made at its first O_ASYNC
 * (async_mu held).  A forked child's set is its parent's: it makes its own. */
static int thread_start(void)
{
	pid_t self = sl_self_pid();
	int ep, ret;

	if (async_ep_pid == self && async_ep >= 0)
		return 0;
	if (async_ep >= 0)
		drop(&async_ep);	/* the parent's set, our copy */
	ep = sl_sys_fd_high(sl_sys_epoll_create1(EPOLL_CLOEXEC));
	if (ep < 0)
		return -EMFILE;
	set_bit(ep, true);
	SL_WRITE_ONCE(async_ep, ep);
	SL_WRITE_ONCE(async_up, false);
	ret = -pl_thread_quiet(async_main, NULL, PL_ASYNC_STACK, NULL);
	if (ret) {
		drop(&async_ep);
		return ret;
	}
	async_ep_pid = self;
	return 0;
}

void pl_async_atfork_prepare(void)
{
	pthread_mutex_lock(&async_mu);
	if (async_ep_pid != sl_self_pid())
		return;
	for (int i = 0; !sl_load_acquire(&async_up) && i < PL_ASYNC_START_WAIT_MS * 10; i++) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
}

void pl_async_atfork_parent(void)
{
	pthread_mutex_unlock(&async_mu);
}

SL_FORKTEXT void pl_async_atfork_child(void)
{
	pid_t seen[8];
	unsigned int nseen = 0;
	int saved;

	/* Held by the thread that forked, which is this one.  The parent's
	 * thread is not here: its records stay its while it lives (the
	 * child closes its copies with the socket); the child makes a set
	 * of its own. */
	pthread_mutex_init(&async_mu, NULL);
	if (async_ep_pid)	/* unwritten when already right: a page */
		async_ep_pid = 0;
	/* A process that never armed O_ASYNC reads one word here.  One that
	 * did gives each child that shares its records a thread that takes
	 * them over when their process ends (adopt()). */
	if (!SL_READ_ONCE(async_serial) || sl_sys_sandboxed)
		return;
	/* Only here: errno is a call into libc's text (__errno_location()),
	 * a page a child that reads no errno would not touch. */
	saved = errno;
	pthread_mutex_lock(&async_mu);
	for (unsigned int i = 0; i < PL_ASYNC_RECS; i++) {
		const struct async_rec *r = &recs[i];
		unsigned int k;

		if (!r->serial || r->bell < 0)
			continue;
		for (k = 0; k < nseen && seen[k] != r->pid; k++)
			;
		if (k < nseen)
			continue;
		if (!nseen && thread_start())
			break;
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = r->pid;
		watch(r->pid);
	}
	pthread_mutex_unlock(&async_mu);
	if (errno != saved)
		errno = saved;	/* fork() succeeded: errno as it was */
}

/* ---- arming ------------------------------------------------------------ */

/* The owner and the signal of the program's description, onto file f. */
static int copy_owner(int fd, int f)
{
	struct f_owner_ex ex;
	int sig;

	if (f < 0)
		return 0;
	if (REAL(fcntl)(fd, F_GETOWN_EX, &ex) || REAL(fcntl)(f, F_SETOWN_EX, &ex))
		return -errno;
	sig = REAL(fcntl)(fd, F_GETSIG);
	if (sig < 0 || REAL(fcntl)(f, F_SETSIG, sig))
		return -errno;
	return 0;
}

static int copy_owners(int fd, const struct async_rec *r)
{
	int ret = copy_owner(fd, r->in_s);

	if (!ret)
		ret = copy_owner(fd, r->out_w);
	if (!ret)
		ret = copy_owner(fd, r->hup_s);
	return ret;
}

/*
 * Arm O_ASYNC on each of the record's three files with it at the
 * program's number fd for the one fcntl(): the kernel keeps the number it
 * was armed at (fasync_helper()) and puts it in si_fd.  The placeholder is
 * held meanwhile by a copy and put back with the fd's close-on-exec flag.
 * A call another thread makes on the raw fd in those seven system calls
 * would meet one of them.
 */
static int arm_at(int fd, const struct async_rec *r)
{
	int fdfl = REAL(fcntl)(fd, F_GETFD), keep, ret = 0;
	int f[] = { r->in_s, r->out_w, r->hup_s };

	if (fdfl < 0)
		return -errno;
	keep = sl_sys_dup_high(fd);
	if (keep < 0)
		return -EMFILE;
	for (unsigned int k = 0; k < 3 && !ret; k++) {
		if (sl_sys_dup3(f[k], fd, O_CLOEXEC) < 0)
			ret = -errno;
		else if (REAL(fcntl)(fd, F_SETFL, O_NONBLOCK | O_ASYNC))
			ret = -errno;
	}
	sl_sys_dup3(keep, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0);
	sl_sys_close(keep);
	return ret;
}

static int high(int fd)
{
	fd = sl_sys_fd_high(fd);
	set_bit(fd, true);
	return fd;
}

/* Close the record's files: the armed ones first, each while its other
 * end stands, for the last close of a pipe's reading end signals its
 * writers (pipe_release(): POLL_OUT) and a stream pair's other end its
 * peer (unix_release_sock(): POLL_HUP). */
static void rec_drop(struct async_rec *r)
{
	drop(&r->in_s);
	drop(&r->out_w);
	drop(&r->hup_s);
	drop(&r->in_p);
	drop(&r->out_r);
	drop(&r->hup_p);
	drop(&r->bell);
}

/*
 * The armed file at a higher number than its other end.  At exit and exec
 * the kernel closes a process's files in the order of their numbers and
 * releases them in the reverse order (each last fput() is a task work,
 * and task_work_run() runs the newest first, since Linux 5.5): so the
 * armed file goes first, and its other end's release, which would signal
 * the owner (POLL_OUT, POLL_HUP above), finds no fasync entry.  A pair's
 * two ends are alike: their roles change; a pipe's are not: the files
 * change numbers.
 */
static void above(int *armed, int *other, bool alike)
{
	int t = *armed, keep;

	if (*armed > *other)
		return;
	if (!alike) {
		keep = sl_sys_dup_high(*armed);
		if (keep < 0 || sl_sys_dup3(*other, *armed, O_CLOEXEC) < 0 ||
		    sl_sys_dup3(keep, *other, O_CLOEXEC) < 0) {
			if (keep >= 0)
				sl_sys_close(keep);
			return;
		}
		sl_sys_close(keep);
	}
	*armed = *other;
	*other = t;
}

/* The record's files (async_mu held); 0 or -errno, with none left. */
static int rec_files(struct async_rec *r, uint32_t pid, uint32_t tid)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tmo = { 1, 0 };
	int sv[2], p[2], ret, one = 1;
	socklen_t len;

	r->bell = r->in_s = r->in_p = r->out_r = r->out_w = r->hup_s = r->hup_p = -1;
	r->bell = high(sl_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (r->bell < 0)
		return -errno;
	len = sl_bell_name(&a, pid, tid);
	if (sl_sys_bind(r->bell, (struct sockaddr *)&a, len))
		goto err;
	if (sl_sys_socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		goto err;
	r->in_s = high(sv[0]);
	r->in_p = high(sv[1]);
	above(&r->in_s, &r->in_p, true);
	/* An autobound name: in_p connects to it again after an error. */
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (r->in_s < 0 || r->in_p < 0 ||
	    sl_sys_bind(r->in_s, (struct sockaddr *)&a, sizeof(sa_family_t)))
		goto err;
	r->in_len = sizeof(r->in_name);
	if (REAL(getsockname)(r->in_s, (struct sockaddr *)&r->in_name, &r->in_len))
		goto err;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		goto err;
	r->out_r = high(p[0]);
	r->out_w = high(p[1]);
	if (r->out_r < 0 || r->out_w < 0)
		goto err;
	above(&r->out_w, &r->out_r, false);
	if (sl_sys_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		goto err;
	r->hup_s = high(sv[0]);
	r->hup_p = high(sv[1]);
	if (r->hup_s < 0 || r->hup_p < 0)
		goto err;
	above(&r->hup_s, &r->hup_p, true);
	/* Its urgent bytes (POLL_PRI) are read as data; a blocking read of
	 * it (pri_alone()) ends within a second. */
	if (sl_sys_setsockopt(r->hup_s, SOL_SOCKET, SO_OOBINLINE, &one, sizeof(one)) ||
	    sl_sys_setsockopt(r->hup_s, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)))
		goto err;
	return 0;
err:
	ret = errno ? -errno : -EMFILE;
	rec_drop(r);
	return ret;
}

static struct async_rec *rec_of(const struct pl_sock *ps)
{
	int i = ps->async_rec - 1;

	return i >= 0 && i < PL_ASYNC_RECS && recs[i].serial ? &recs[i] : NULL;
}

/* closing: the socket's last fd here goes, and the socket with it if it
 * was the last anywhere: the entry ends without the stack lock (a close()
 * never waits for a stopped holder for it); else O_ASYNC was turned off
 * and the socket's mark goes too (sl_async_bell()).  A forked child
 * closes its copies of the files, and leaves the parent's set alone. */
static void bell_close(struct pl_sock *ps, bool closing)
{
	struct async_rec *r = rec_of(ps);
	pid_t self = sl_self_pid();

	if (ps->async_pid == (uint32_t)self && ps->async_slot >= 0) {
		if (closing)
			sl_bell_unregister(pl_sl(), ps->async_slot, ps->async_gen);
		else
			sl_async_bell(pl_stack(), (int)ps->sd, false, 0, 0, &ps->async_slot,
				      &ps->async_gen);
	}
	if (r) {
		if (r->pid == self && async_ep_pid == self && async_ep >= 0 && r->bell >= 0)
			sl_sys_epoll_ctl(async_ep, EPOLL_CTL_DEL, r->bell, NULL);
		rec_drop(r);
		r->serial = 0;
	}
	ps->async_rec = 0;
	ps->async_fd = 0;
	ps->async_slot = -1;
}

static int arm(int fd, struct pl_sock *ps)
{
	uint32_t pid = (uint32_t)sl_self_pid(), tid;
	struct epoll_event ev = { .events = EPOLLIN };
	struct async_rec *r = NULL;
	struct timespec now;
	int ret;

	/* An image's ids start where the clock says: an exec keeps the pid,
	 * and the image before may have left an entry whose name one of
	 * ours would bind again (run/bell.c frees it when it finds its name
	 * unbound), to be rung twice. */
	if (!async_ids && !clock_gettime(CLOCK_MONOTONIC, &now))
		async_ids = (uint32_t)now.tv_nsec ^ (uint32_t)now.tv_sec << 20;
	tid = PL_ASYNC_TID | (sl_fetch_add(&async_ids, 1) & 0x3fffffffu);

	for (unsigned int i = 0; i < PL_ASYNC_RECS && !r; i++)
		if (!recs[i].serial) {
			r = &recs[i];
			ps->async_rec = (int)i + 1;
		}
	if (!r)
		return -EAGAIN;		/* as a full bell table */
	ret = thread_start();
	if (!ret)
		ret = rec_files(r, pid, tid);
	if (ret) {
		ps->async_rec = 0;
		return ret;
	}
	if (!++async_serial)
		async_serial = 1;
	r->serial = async_serial;
	r->pid = (pid_t)pid;
	r->slot = -1;
	ps->async_fd = r->bell + 1;
	ps->async_pid = pid;
	ps->async_slot = -1;
	ret = copy_owners(fd, r);
	if (!ret)
		ret = arm_at(fd, r);
	ev.data.u64 = (uint64_t)r->serial << 32 | (uint32_t)(ps->async_rec - 1);
	if (!ret && sl_sys_epoll_ctl(async_ep, EPOLL_CTL_ADD, r->bell, &ev))
		ret = -errno;
	if (!ret)
		ret = sl_async_bell(pl_stack(), (int)ps->sd, true, pid, tid, &ps->async_slot,
				    &ps->async_gen);
	if (!ret) {
		r->gen = ps->async_gen;
		SL_WRITE_ONCE(r->slot, ps->async_slot);
	}
	if (ret)
		bell_close(ps, false);
	return ret;
}

int pl_async_setfl(int fd, struct pl_sock *ps, bool on)
{
	int ret = 0;

	pthread_mutex_lock(&async_mu);
	if (on && !ps->async_fd)
		ret = arm(fd, ps);
	else if (!on && ps->async_fd)
		bell_close(ps, false);
	pthread_mutex_unlock(&async_mu);
	return ret;
}

/*
 * After exec: socket fd, inherited, had O_ASYNC in the image before
 * (SL_LIFE_FASYNC), whose files were close-on-exec and whose thread is
 * gone; Linux keeps the flag and the owner on the description, so this
 * image arms it again, with the owner and signal the placeholder kept.
 */
void pl_async_inherit(int fd)
{
	struct pl_sock *ps = pl_get(fd);

	if (!ps)
		return;
	if (!SL_READ_ONCE(ps->async_fd) && sl_async_kept(pl_stack(), (int)ps->sd))
		pl_async_setfl(fd, ps, true);
	pl_put(ps);
}

void pl_async_owner(int fd, struct pl_sock *ps)
{
	struct async_rec *r;

	pthread_mutex_lock(&async_mu);
	r = ps->async_fd ? rec_of(ps) : NULL;
	if (r)
		copy_owners(fd, r);
	pthread_mutex_unlock(&async_mu);
}

/* SIGURG (README.md, "Urgent data"): the description's owner, as the
 * kernel keeps it on the placeholder, to the stack, which signals it at a
 * new urgent pointer (sl_urg_owner(), run/bell.c). */
void pl_urg_owner(int fd, struct pl_sock *ps)
{
	struct f_owner_ex ex;

	if (REAL(fcntl)(fd, F_GETOWN_EX, &ex))
		return;
	/* Linux never refuses an owner: with every entry taken, no SIGURG. */
	sl_urg_owner(pl_stack(), (int)ps->sd, ex.type, ex.pid);
}

void pl_async_release(struct pl_sock *ps)
{
	if (!SL_READ_ONCE(ps->async_fd))
		return;
	pthread_mutex_lock(&async_mu);
	if (ps->async_fd)
		bell_close(ps, true);
	pthread_mutex_unlock(&async_mu);
}
