// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sleeping side of bells (run/bell.c has the picture): each thread
 * that sleeps in poll, select or epoll on Sluice and kernel fds at once
 * gets a datagram socket bound to its own abstract name, made when first
 * needed and kept until the thread ends.  It goes among the fds the thread
 * sleeps on; the process that changes one of the thread's Sluice sockets
 * sends it a byte, and the sleep ends at once instead of at the next
 * slice.
 *
 * The bells are the library's own fds: close() says EBADF for them and
 * close_range() leaves them (pl_fd_is_private()); a dup2() onto one makes
 * its thread make another.  A forked child closes the ones it inherited
 * (their names are its parent's threads').  None in a sandbox, on a
 * module's stack (the kernel watches its socket fds), or on a stack with
 * a link fd of its own (a TAP link: its frames must be read by someone,
 * so such sleepers keep their slices).
 */
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload.h"

#define PL_BELL_FDS	65536

/* Which fds are bells, so that close() and dup2() see them. */
static uint64_t bell_bits[PL_BELL_FDS / 64];
/* Words of bell_bits ever written: a forked child looks at no more (8 KiB
 * a process never touched would cost it faults to read, and to clear). */
static int bell_words SL_FORKDATA;

static __thread int bell_fd = -1;
static __thread bool bell_failed;
static __thread uint32_t bell_tid;
static __thread uint32_t bell_id;	/* this bell's, of bell_ids */
static uint32_t bell_ids;
static pthread_key_t bell_key;
static pthread_once_t bell_once = PTHREAD_ONCE_INIT;

static bool bit(int fd)
{
	return fd >= 0 && fd < PL_BELL_FDS &&
	       (SL_READ_ONCE(bell_bits[fd / 64]) >> (fd % 64) & 1);
}

static void set_bit(int fd, bool on)
{
	uint64_t m = 1ull << (fd % 64);

	if (fd < 0 || fd >= PL_BELL_FDS)
		return;
	if (on) {
		sl_store_max(&bell_words, fd / 64 + 1);
		sl_fetch_or(&bell_bits[fd / 64], m);
	} else {
		sl_fetch_and(&bell_bits[fd / 64], ~m);
	}
}

/* A thread that ends takes its bell with it. */
static void bell_exit(void *arg)
{
	int fd = (int)(long)arg - 1;

	if (bit(fd)) {
		set_bit(fd, false);
		pl_libc.close(fd);
	}
}

static void bell_key_init(void)
{
	pthread_key_create(&bell_key, bell_exit);
}

bool pl_bell_usable(struct sl_stack *s)
{
	return s && !s->module_backed && s->futex_ok && !sl_sys_sandboxed &&
	       !(s->link && s->link->ops->fd);
}

static uint32_t thread_id(void)
{
	if (!bell_tid)
		bell_tid = (uint32_t)sl_syscall(SYS_gettid);
	return bell_tid;
}

uint32_t pl_bell_tid(void)
{
	return thread_id();
}

int pl_bell_fd(void)
{
	struct sockaddr_un a;
	socklen_t len;
	int fd = bell_fd;

	if (fd >= 0 && bit(fd))
		return fd;
	bell_fd = -1;	/* a dup2() took its number: another */
	if (bell_failed)
		return -1;
	pthread_once(&bell_once, bell_key_init);
	fd = sl_sys_fd_high(sl_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (fd < 0 || fd >= PL_BELL_FDS) {
		if (fd >= 0)
			pl_libc.close(fd);
		bell_failed = true;
		return -1;
	}
	len = sl_bell_name(&a, (uint32_t)sl_self_pid(), thread_id());
	if (sl_sys_bind(fd, (struct sockaddr *)&a, len)) {
		pl_libc.close(fd);
		bell_failed = true;	/* the name taken: this thread keeps slices */
		return -1;
	}
	set_bit(fd, true);
	pthread_setspecific(bell_key, (void *)(long)(fd + 1));
	bell_id = sl_fetch_add(&bell_ids, 1) + 1;
	bell_fd = fd;
	return fd;
}

uint32_t pl_bell_id(void)
{
	return bell_id;
}


void pl_bell_drain(int fd)
{
	sl_sys_drain_dgrams(fd);
}

bool pl_bell_is(int fd)
{
	return bit(fd);
}

void pl_bell_lost(int fd)
{
	/* The number is someone else's from now on: its thread makes
	 * another (pl_bell_fd()). */
	set_bit(fd, false);
}

SL_FORKTEXT void pl_bell_atfork_child(void)
{
	int n = SL_READ_ONCE(bell_words);

	/* Every bell here is a parent thread's, under its name.  Only what
	 * is not right already is written: each private page written after
	 * a fork is a copy-on-write fault. */
	for (int i = 0; i < n; i++) {
		uint64_t m = SL_READ_ONCE(bell_bits[i]);

		if (m)
			bell_bits[i] = 0;
		while (m) {
			int fd = i * 64 + __builtin_ctzll(m);

			m &= m - 1;
			pl_libc.close(fd);
		}
	}
	if (bell_fd != -1)
		bell_fd = -1;
	if (bell_failed)
		bell_failed = false;
	if (bell_tid)
		bell_tid = 0;	/* the child's thread has an id of its own */
}

/* One more entry of reg for chan; none left: every entry reg held is
 * ended (pl_bell_begin() then registers for any change). */
static bool reg_add(struct sl_stack *s, struct pl_bellreg *reg, uint32_t chan, uint32_t pid,
		    uint32_t tid)
{
	reg->idx[reg->n] = sl_bell_register(s, chan, pid, tid, &reg->gen[reg->n]);
	if (reg->idx[reg->n] < 0) {
		pl_bell_end(reg, false);
		return false;
	}
	reg->n++;
	return true;
}

int pl_bell_begin(const int *chans, unsigned int nchan, const int *xsds, unsigned int nx,
		  struct pl_bellreg *reg)
{
	struct sl_stack *s = pl_sl();
	uint32_t pid, tid;
	int fd;

	reg->n = 0;
	if (!pl_bell_usable(s) || (fd = pl_bell_fd()) < 0)
		return -1;
	pid = (uint32_t)sl_self_pid();
	tid = thread_id();
	/* An entry per channel: a change on any of them rings the bell
	 * once, changes elsewhere not at all. */
	for (unsigned int i = 0; i < nchan && i < SL_WAITV_MAX; i++)
		if (!reg_add(s, reg, (uint32_t)chans[i], pid, tid)) {
			nchan = nx = 0;	/* the entries ran out: any */
			break;
		}
	/* One of each exclusive item's waiters (counted in its xsleepers):
	 * a change rings one of them, not every set holding it. */
	for (unsigned int i = 0; nchan <= SL_WAITV_MAX && i < nx && i < PL_EP_XMAX; i++)
		if (!reg_add(s, reg, SL_BELL_X | (uint32_t)xsds[i], pid, tid)) {
			nchan = nx = 0;
			break;
		}
	if ((!nchan && !nx) || nchan > SL_WAITV_MAX) {
		reg->idx[0] = sl_bell_register(s, SL_BELL_ANY, pid, tid, &reg->gen[0]);
		if (reg->idx[0] < 0)
			return -1;	/* every entry taken: slices, as before */
		reg->n = 1;
	}
	reg->fd = fd;
	return fd;
}

void pl_bell_end(struct pl_bellreg *reg, bool rang)
{
	if (!reg->n)
		return;
	for (unsigned int i = 0; i < reg->n; i++)
		sl_bell_unregister(pl_sl(), reg->idx[i], reg->gen[i]);
	reg->n = 0;
	if (rang)
		pl_bell_drain(reg->fd);
}

int pl_bell_sleep_ms(const struct pl_waiter *w)
{
	return pl_waiter_slice(w, sl_wait_bound_ms(pl_sl()));
}
