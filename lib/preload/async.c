// SPDX-License-Identifier: BSD-2-Clause
/*
 * O_ASYNC on a Sluice socket (README.md, "O_ASYNC"): the signal is the
 * kernel's own.  The process that sets O_ASYNC (F_SETFL, FIOASYNC) makes
 * an async bell for the socket: a datagram socket bound to an abstract
 * name (run/bell.c, sl_bell_name()), on whose file it sets the owner
 * (F_SETOWN, F_SETOWN_EX) and the signal (F_SETSIG) the program set on
 * its fd, and O_ASYNC with the bell standing at the program's fd number
 * for that one call, so that the kernel's fasync entry (fa_fd) says the
 * program's number.  The stack then rings the bell at each event Linux
 * signals (sl_sock_async()), from whichever process runs it, and the
 * kernel sends the signal: SIGIO (SI_KERNEL) or the F_SETSIG signal with
 * si_code POLL_IN, si_band and si_fd, to a process, a process group or a
 * thread, with the kernel's own permission check (sigio_perm()).
 *
 * A bell's bytes are read here: every bell's in the library's signal
 * trampoline (pl_async_drain()), the socket's own at each receive and
 * accept on it (pl_async_read(): a program that takes its signals with
 * sigwaitinfo() or a signalfd runs no handler); an unread byte would fill
 * the bell's queue (net.unix.max_dgram_qlen) and the next ring would be
 * refused, with no signal.  (The trampoline cannot take the mutex that
 * orders a read with a bell's close: a bell closed by another thread
 * between its look at the bits and its read leaves a number in the
 * library's range above the program's, which only a program with as many
 * files open could be given in that instant.)
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload.h"

/* Bell names are made of a pid and a thread id (sl_bell_name()): async
 * bells take ids no thread has (above the kernel's PID_MAX_LIMIT). */
#define PL_ASYNC_TID	0x40000000u
#define PL_ASYNC_FDS	65536

static pthread_mutex_t async_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t async_ids;
/* Which fds are async bells, for close() (EBADF), dup2() and draining. */
static uint64_t async_bits[PL_ASYNC_FDS / 64];
static int async_words;

static void set_bit(int fd, bool on)
{
	uint64_t m = 1ull << (fd % 64);

	if (fd < 0 || fd >= PL_ASYNC_FDS)
		return;
	if (on) {
		sl_store_max(&async_words, fd / 64 + 1);
		sl_fetch_or(&async_bits[fd / 64], m);
	} else {
		sl_fetch_and(&async_bits[fd / 64], ~m);
	}
}

bool pl_async_is(int fd)
{
	return fd >= 0 && fd < PL_ASYNC_FDS &&
	       (SL_READ_ONCE(async_bits[fd / 64]) >> (fd % 64) & 1);
}

void pl_async_lost(int fd)
{
	/* A dup2() takes its number: the socket signals no more (the
	 * program closed what it did not own). */
	set_bit(fd, false);
}

void pl_async_drain(void)
{
	int n = SL_READ_ONCE(async_words);

	for (int i = 0; i < n; i++) {
		uint64_t m = SL_READ_ONCE(async_bits[i]);

		while (m) {
			int fd = i * 64 + __builtin_ctzll(m);

			m &= m - 1;
			sl_sys_drain_dgrams(fd);
		}
	}
}

void pl_async_read(struct pl_sock *ps)
{
	/* Under the mutex: the bell is not closed, nor its number reused,
	 * while it is read. */
	pthread_mutex_lock(&async_mu);
	if (ps->async_fd && pl_async_is(ps->async_fd - 1))
		sl_sys_drain_dgrams(ps->async_fd - 1);
	pthread_mutex_unlock(&async_mu);
}

/* The owner and the signal of the program's description, onto the bell. */
static int copy_owner(int fd, int bell)
{
	struct f_owner_ex ex;
	int sig;

	if (REAL(fcntl)(fd, F_GETOWN_EX, &ex) || REAL(fcntl)(bell, F_SETOWN_EX, &ex))
		return -errno;
	sig = REAL(fcntl)(fd, F_GETSIG);
	if (sig < 0 || REAL(fcntl)(bell, F_SETSIG, sig))
		return -errno;
	return 0;
}

/*
 * Arm the bell's O_ASYNC with the bell at the program's number fd for the
 * one fcntl(): the kernel keeps the number it was armed at (fasync_helper())
 * and puts it in si_fd.  The placeholder is held meanwhile by a copy and
 * put back with the fd's close-on-exec flag.  A call another thread makes
 * on the raw fd in those three system calls would meet the bell.
 */
static int arm_at(int fd, int bell)
{
	int fdfl = REAL(fcntl)(fd, F_GETFD), keep, ret = 0;

	if (fdfl < 0)
		return -errno;
	keep = sl_sys_dup_high(fd);
	if (keep < 0)
		return -EMFILE;
	if (sl_sys_dup3(bell, fd, O_CLOEXEC) < 0) {
		ret = -errno;
	} else {
		if (REAL(fcntl)(fd, F_SETFL, O_NONBLOCK | O_ASYNC))
			ret = -errno;
		sl_sys_dup3(keep, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0);
	}
	sl_sys_close(keep);
	return ret;
}

/* closing: the socket's last fd here goes, and the socket with it if it
 * was the last anywhere: the entry ends without the stack lock (a close()
 * never waits for a stopped holder for it); else O_ASYNC was turned off
 * and the socket's mark goes too (sl_async_bell()). */
static void bell_close(struct pl_sock *ps, bool closing)
{
	int fd = ps->async_fd - 1;

	if (ps->async_pid == (uint32_t)sl_self_pid() && ps->async_slot >= 0) {
		if (closing)
			sl_bell_unregister(pl_sl(), ps->async_slot, ps->async_gen);
		else
			sl_async_bell(pl_stack(), (int)ps->sd, false, 0, 0, &ps->async_slot,
				      &ps->async_gen);
	}
	if (pl_async_is(fd)) {
		set_bit(fd, false);
		sl_sys_close(fd);
	}
	ps->async_fd = 0;
	ps->async_slot = -1;
}

static int arm(int fd, struct pl_sock *ps)
{
	struct sockaddr_un a;
	uint32_t pid = (uint32_t)sl_self_pid();
	uint32_t tid = PL_ASYNC_TID | (sl_fetch_add(&async_ids, 1) & 0x3fffffffu);
	socklen_t len;
	int bell, ret;

	bell = sl_sys_fd_high(sl_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (bell < 0)
		return -errno;
	len = sl_bell_name(&a, pid, tid);
	if (sl_sys_bind(bell, (struct sockaddr *)&a, len)) {
		ret = -errno;
		sl_sys_close(bell);
		return ret;
	}
	set_bit(bell, true);
	ps->async_fd = bell + 1;
	ps->async_pid = pid;
	ps->async_slot = -1;
	ret = copy_owner(fd, bell);
	if (!ret)
		ret = arm_at(fd, bell);
	if (!ret)
		ret = sl_async_bell(pl_stack(), (int)ps->sd, true, pid, tid, &ps->async_slot,
				    &ps->async_gen);
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

void pl_async_owner(int fd, struct pl_sock *ps)
{
	pthread_mutex_lock(&async_mu);
	if (ps->async_fd && pl_async_is(ps->async_fd - 1))
		copy_owner(fd, ps->async_fd - 1);
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
