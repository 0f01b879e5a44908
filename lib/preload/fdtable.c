// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fd -> Sluice socket table, and the placeholder files that give each
 * Sluice socket a real fd number.
 *
 * Table: an array indexed by fd, read on every intercepted call under
 * urcu-bp (rcu_read_lock, rcu_dereference); writers serialise on a mutex,
 * publish with rcu_assign_pointer and free after synchronize_rcu().  A
 * reader takes a reference on the pl_sock before it leaves the read side.
 *
 * Placeholders: a Sluice socket's fd is an AF_UNIX stream socket of its
 * own (place_open(), one socket() per socket), never connected and never
 * listening, bound to /dev/shm/sluicefd-STACK/pN (N the socket's index)
 * once another process may hold it (until then it is private: "Private
 * sockets" below).  A call which bypasses the library (a raw system call,
 * a function the library does not wrap) meets an unconnected socket: read
 * EINVAL, write ENOTCONN (no SIGPIPE), fstat S_IFSOCK, pread and lseek
 * ESPIPE, mmap ENODEV, fsync EINVAL, openat, fchdir and getdents ENOTDIR,
 * a reopen through /proc ENXIO; it stores nothing and reaches no byte of
 * the stack's files (issue 24 item 7; lib/preload/README.md, "The
 * placeholder").
 * Why a file of the kernel's and not a slot number alone:
 *  - the kernel itself counts who holds the socket.  A socket lives until
 *    the last fd of its description is closed, in any process: dup, fork,
 *    SCM_RIGHTS and exec share it, and a process killed by SIGKILL drops
 *    it.  So "was that the last close?" is one connect() of a datagram
 *    socket to the name (nobody_holds(): EPROTOTYPE while the stream
 *    socket lives, ECONNREFUSED after), and the Sluice socket is closed
 *    exactly when the kernel would close a socket.
 *  - the name carries the socket index (getsockname()) and the file
 *    status flags carry O_NONBLOCK, so a program exec()ed with the fd (no
 *    CLOEXEC) rebuilds its table from /proc/self/fd (pl_fdtable_inherit()).
 *  - fd numbers come from the kernel, so they never collide with kernel
 *    fds.
 * The price: a raw getsockopt() says AF_UNIX (the library's says what the
 * socket is), and the kernel's poll/epoll cannot see Sluice readiness,
 * which poll.c and epoll.c emulate.
 *
 * The file "recs" in that directory (/dev/shm/sluicefd-STACK) holds one
 * record per socket slot (state, generation, creator), so a socket whose
 * holders all died without closing it is found and closed by pl_sweep(); and one record per process using the
 * stack, whose lock byte (PL_PROC_LOCK_BASE + record) the process holds
 * from a description of its own for as long as it lives.  A process that
 * dies drops it, so the sweep finds deaths by looking at those records
 * (one probe a process, whatever the number of sockets) and looks at the
 * sockets only after a death (issue 23: no per-tick cost that grows with
 * the connection count), and then only at the dead process's own: the
 * records are kept on lists through the records file (api.h, struct
 * sl_fdproc), a private socket on its creator's, a used one on the
 * shared list ("Lists" below).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <stddef.h>
#include <unistd.h>

#include <urcu-bp.h>

#include "preload.h"

/* Every errno of this file through the thread's kept pointer (os.h). */
#undef errno
#define errno (*sl_errno_loc())

#define PL_FD_PREFIX	"/dev/shm/sluicefd-"
#define PL_RECS_NAME	"/recs"
#define PL_SWEEP_US	500000
#define PL_PROC_LOCK_BASE	SL_FDREC_LOCK_BASE
#define PL_HDR_SIZE	sizeof(struct sl_fdhdr)

struct pl_table {
	unsigned int n;
	struct pl_sock *slot[];
};

static struct pl_table *table;
static pthread_mutex_t table_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;
static char fd_path[96];	/* the directory of the placeholders */
static size_t fd_path_len;	/* its strlen() (place_addr()) */
/* fd_path and "/p", the start of every placeholder's name (place_addr()). */
static struct sockaddr_un place_base;
static char recs_path[104];	/* the records file in it */
static struct sl_fdhdr *hdr;
static struct sl_fdrec *recs;
static uint32_t nrec;

static uint32_t rec_state(uint32_t sd)
{
	return SL_FDREC_STATE(sl_load_acquire(&recs[sd].key));
}
static uint64_t last_sweep_us SL_FORKDATA;
/* This process's record (proc_register()), or -1; all records taken:
 * every sweep looks at every socket, as before records. */
static int reg_fd SL_FORKDATA = -1, reg_slot SL_FORKDATA = -1;
static bool reg_full;
static int sweep_probe = -1;	/* a description that takes no lock */
/* The datagram socket whose connect() asks whether a placeholder's name
 * still has its socket (nobody_holds()); -1 until the first question. */
static int place_probe SL_FORKDATA = -1;

/* A shared socket's placeholder is bound to fd_path/pN, N its index. */
#define PL_PLACE_NAME	SL_FDREC_PLACE_NAME	/* "p" */

/* The socket cache: its entries (the comment before cache_drop() says how
 * they are used). */
#define PL_CACHE	16
static struct pl_cached {
	int fd;			/* the library's copy; -1: none */
	bool nb;		/* O_NONBLOCK of the description */
	struct pl_sock *ps;	/* lent to; NULL: free */
} cache[PL_CACHE] SL_FORKDATA = { [0 ... PL_CACHE - 1] = { .fd = -1 } };
static int ncache SL_FORKDATA;	/* entries with an fd (atomic): 0 skips all */
static pthread_mutex_t cache_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;

static void cache_release(struct pl_sock *ps, bool keep);
static unsigned int fork_gen SL_FORKDATA;	/* forks, execs and spawns begun (atomic) */
static unsigned int fork_busy SL_FORKDATA;	/* ... and not ended (atomic) */
/* pl_fd_share_all() calls (atomic): a module socket fd made before the
 * last of them may be held by another process (struct pl_sock's kgen). */
static unsigned int kshare_gen SL_FORKDATA;

/* Module socket fds kept for a blocking call in flight (kfd_keep()). */
static bool kfd_kept_is(int fd);
static void kfd_keep(struct pl_sock *ps, int fd);
static void kfd_unkeep(struct pl_sock *ps, int fd);

static bool cache_is(int fd)
{
	if (!sl_load_acquire(&ncache))
		return false;
	for (unsigned int i = 0; i < PL_CACHE; i++)
		if (fd == SL_READ_ONCE(cache[i].fd))
			return true;
	return false;
}

/* Drop entry i (cache_mu held); its fd, to close after the mutex, or -1. */
static int cache_drop_locked(unsigned int i)
{
	int fd = cache[i].fd;

	if (fd < 0)
		return -1;
	if (cache[i].ps)
		SL_WRITE_ONCE(cache[i].ps->cache, 0);
	cache[i].ps = NULL;
	SL_WRITE_ONCE(cache[i].fd, -1);
	sl_fetch_sub(&ncache, 1);
	return fd;
}

bool pl_fd_is_own(int fd)
{
	struct sl_stack *s = pl_sl();

	if (fd < 0)
		return false;
	if (fd == SL_READ_ONCE(reg_fd) || pl_fd_is_probe(fd))
		return true;
	if (!s)
		return false;
	return fd == s->region_fd || (s->link && s->link->ops->fd && fd == s->link->ops->fd(s->link));
}

static bool is_sock_probe(int fd)
{
	return fd == SL_READ_ONCE(place_probe);
}

bool pl_fd_is_probe(int fd)
{
	return fd >= 0 && (fd == SL_READ_ONCE(sweep_probe) || is_sock_probe(fd) || cache_is(fd) ||
			   fd == sl_bell_tx_fd() || fd == sl_sys_runnable_fd() ||
			   pl_bell_is(fd) || pl_twin_is(fd) || pl_agent_is(fd) || pl_async_is(fd) ||
			   kfd_kept_is(fd));
}

void pl_fd_probe_lost(int fd)
{
	/* Opened again when next needed (nobody_holds(), sweep()). */
	if (fd == SL_READ_ONCE(place_probe))
		SL_WRITE_ONCE(place_probe, -1);
	if (fd == SL_READ_ONCE(sweep_probe))
		SL_WRITE_ONCE(sweep_probe, -1);
	if (cache_is(fd)) {
		/* The caller's dup2() ends this copy. */
		pthread_mutex_lock(&cache_mu);
		for (unsigned int i = 0; i < PL_CACHE; i++)
			if (cache[i].fd == fd)
				cache_drop_locked(i);
		pthread_mutex_unlock(&cache_mu);
	}
	if (fd == sl_bell_tx_fd())
		sl_bell_tx_lost();
	if (fd == sl_sys_runnable_fd())
		sl_sys_runnable_lost();
	if (pl_bell_is(fd))
		pl_bell_lost(fd);
	if (pl_twin_is(fd))
		pl_twin_lost(fd);
	if (pl_async_is(fd))
		pl_async_lost(fd);
	if (kfd_kept_is(fd))
		kfd_unkeep(NULL, fd);	/* the caller's dup2() ends this copy */
	pl_agent_lost(fd);
}

uint64_t pl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t region_stamp(struct sl_stack *s)
{
	return s->lib->tcp_isn_secret[0] ^ s->lib->tcp_isn_secret[1] ^ 1;
}

/* A lock on byte off of fd (OFD: owned by the description). */
static int ofd_lock_at(int fd, short type, off_t off, bool wait)
{
	struct flock fl = {
		.l_type = type, .l_whence = SEEK_SET, .l_start = off, .l_len = 1,
	};

	return pl_libc.fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) ? -errno : 0;
}

/* Is the lock byte at off free (its holders all gone)?  probe holds no
 * lock there itself (OFD locks do not conflict with their own). */
static bool lock_free_at(int probe, off_t off)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = off, .l_len = 1 };

	return !pl_libc.fcntl(probe, F_OFD_GETLK, &fl) && fl.l_type == F_UNLCK;
}

/*
 * Take a process record: a description of our own holds a read lock on
 * its byte while we live (forked children take their own: after fork the
 * parent's description is shared, and would outlive a dead child).
 */
SL_FORKTEXT static void proc_register(int at)
{
	uint32_t me = (uint32_t)sl_self_pid();
	int fd = -1, i;

	/* The record first, then the file: the watcher (watch.c) wakes when
	 * the records file is opened (inotify) and looks at the records
	 * whose bit in born is set, so the bit is set before the open. */
	for (i = 0; i < SL_FDREC_PROCS; i++) {
		uint32_t st = SL_FDPROC_FREE;

		if (SL_READ_ONCE(hdr->procs[i].state) == SL_FDPROC_FREE &&
		    sl_cmpxchg(&hdr->procs[i].state, &st, SL_FDPROC_CLAIMED))
			break;
	}
	if (i < SL_FDREC_PROCS) {
		SL_WRITE_ONCE(hdr->procs[i].pid, me);
		sl_fetch_or(&hdr->born[i / 64], (uint64_t)1 << (i % 64));
		/* Above the program's numbers (os.h).  A forked child's takes
		 * the number of the parent's it inherited (at), which dup3()
		 * closes: an open, a dup3 and a close, where a move would
		 * cost a close more (the inherited one) and a fcntl. */
		fd = open(recs_path, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0 && at >= 0 && sl_sys_dup3(fd, at, O_CLOEXEC) == at) {
		pl_libc.close(fd);
		fd = at;
	} else {
		if (at >= 0)
			pl_libc.close(at);
		fd = sl_sys_fd_high(fd);
	}
	if (fd < 0 || ofd_lock_at(fd, F_RDLCK, PL_PROC_LOCK_BASE + i, false)) {
		if (fd >= 0)
			pl_libc.close(fd);
		if (i < SL_FDREC_PROCS)
			sl_store_release(&hdr->procs[i].state, SL_FDPROC_FREE);
		reg_full = true;
		return;
	}
	/* Left empty by its last sweep or its process's exit. */
	SL_WRITE_ONCE(hdr->procs[i].head, 0);
	SL_WRITE_ONCE(hdr->procs[i].edit, 0);
	SL_WRITE_ONCE(hdr->procs[i].making, 0);
	SL_WRITE_ONCE(hdr->procs[i].sweeper, 0);
	/* Release: the lock is held before anyone sees LIVE. */
	sl_store_release(&hdr->procs[i].state, SL_FDPROC_LIVE);
	reg_fd = fd;
	reg_slot = i;
}

/*
 * Give our record back, at exit.  Its description is not closed: the
 * kernel closes it as the process ends, a moment later, and its read
 * lock goes with it (a close() here was one system call more for every
 * forked child, test_fork_cost).  Meanwhile the record is free, and a
 * process that takes it locks the same byte for reading beside ours,
 * which conflicts with nothing; a sweep's test for a death (F_WRLCK,
 * lock_free_at()) sees it held, as it is, by a live process.  reg_fd
 * keeps its number, so a close() of it by the program is still refused.
 */
SL_FORKTEXT static void proc_unregister(void)
{
	if (reg_slot >= 0 && hdr)
		sl_store_release(&hdr->procs[reg_slot].state, SL_FDPROC_FREE);
	reg_slot = -1;
}

/*
 * The placeholders' directory, made if missing.  A regular file of that
 * name is an earlier library's placeholder file (one file for both):
 * replaced.
 */
static int make_dir(void)
{
	struct stat st;

	if (!mkdir(fd_path, 0700))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (!lstat(fd_path, &st) && !S_ISDIR(st.st_mode)) {
		unlink(fd_path);
		if (mkdir(fd_path, 0700) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

/* Open (creating or resetting) the stack's placeholders' directory and
 * records file; map the records. */
static int fdtable_map(struct sl_stack *s)
{
	/* The checked copy: the region's may change between the size mapped
	 * here and the record count kept (recs[sd] past the mapping). */
	uint32_t max = s->max_sockets;
	size_t size = PL_HDR_SIZE + (size_t)max * sizeof(struct sl_fdrec);
	struct sl_fdhdr *h;
	struct stat stt;
	void *p;
	int fd, ret = 0;

	snprintf(fd_path, sizeof(fd_path), PL_FD_PREFIX "%s", s->name);
	fd_path_len = strlen(fd_path);
	memset(&place_base, 0, sizeof(place_base));
	place_base.sun_family = AF_UNIX;
	snprintf(place_base.sun_path, sizeof(place_base.sun_path), "%s/" PL_PLACE_NAME, fd_path);
	snprintf(recs_path, sizeof(recs_path), "%s" PL_RECS_NAME, fd_path);
	ret = make_dir();
	if (ret)
		return ret;
	fd = open(recs_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* flock() is a separate lock space from the OFD byte locks. */
	sl_sys_flock(fd, LOCK_EX);
	if (fstat(fd, &stt) || ((size_t)stt.st_size < size && ftruncate(fd, (off_t)size))) {
		ret = -errno;
		goto out;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	h = p;
	if (h->magic != SL_FDREC_MAGIC || h->stamp != region_stamp(s) ||
	    h->nrec != max) {
		/* Left by an earlier stack of this name: nothing in it is
		 * ours.  A new file is zero already, and stays unwritten
		 * (uncommitted) where no socket's record is. */
		if (stt.st_size)
			memset(p, 0, size);
		h->stamp = region_stamp(s);
		h->nrec = max;
		sl_store_release(&h->magic, SL_FDREC_MAGIC);
	}
	hdr = h;
	recs = (struct sl_fdrec *)((uint8_t *)p + PL_HDR_SIZE);
	nrec = max;
out:
	sl_sys_flock(fd, LOCK_UN);
	pl_libc.close(fd);
	return ret;
}

/* The records mapped, and this process's own record taken; a watcher of
 * the stack's deaths started if none lives (watch.c). */
int pl_fdtable_open(struct sl_stack *s)
{
	int ret = fdtable_map(s);

	if (ret)
		return ret;
	proc_register(-1);
	if (reg_slot >= 0 && !s->module_backed)
		pl_watch_ensure();
	return 0;
}

/* The watcher's view: the records mapped, no process record of its own
 * (it is no process of the stack's: it holds no socket). */
int pl_fdtable_watch_open(struct sl_stack *s)
{
	return fdtable_map(s);
}

/* Are the records still those of our region (not reset for a new stack
 * of the same name)? */
bool pl_fd_records_ours(void)
{
	struct sl_stack *s = pl_sl();

	return s && hdr && SL_READ_ONCE(hdr->magic) == SL_FDREC_MAGIC &&
	       SL_READ_ONCE(hdr->stamp) == region_stamp(s);
}

struct sl_fdhdr *pl_fd_hdr(void)
{
	return hdr;
}

const char *pl_fd_recs_path(void)
{
	return recs_path;
}

/* Is lock byte off of the records file free (its holder gone)? */
bool pl_fd_lock_free(off_t off)
{
	if (sweep_probe < 0)
		sweep_probe = sl_sys_fd_high(open(recs_path, O_RDONLY | O_CLOEXEC));
	return sweep_probe >= 0 && lock_free_at(sweep_probe, off);
}

/* A write lock on byte off through fd (a description of the records
 * file): 0 or -errno. */
int pl_fd_lock_excl(int fd, off_t off)
{
	return ofd_lock_at(fd, F_WRLCK, off, false);
}

/* ---- the table ---- */

/*
 * urcu-bp's fork handlers hold its grace-period and registry locks across
 * a fork with every signal blocked: three rt_sigprocmask a fork (two in
 * the parent, one in the child).  Only a thread that has called urcu can
 * hold those locks or be in its registry, so while no thread but the
 * forking one has, the fork needs neither.  A thread counts itself in
 * (never out) under rcu_mu before its first urcu call; a fork holds
 * rcu_mu, so no thread starts using urcu meanwhile.  A signal handler that
 * runs in the middle of its own thread's join or fork joins without the
 * mutex (the outer call holds it).
 */
static __thread bool rcu_mine, rcu_joining;
static unsigned int rcu_threads SL_FORKDATA;
static bool rcu_forking SL_FORKDATA;
static uint32_t rcu_fork_busy SL_FORKDATA;	/* rcu_fork_tid's fork holds rcu_mu */
static pthread_t rcu_fork_tid SL_FORKDATA;
static pthread_mutex_t rcu_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;

static void rcu_join_slow(void)
{
	bool nested = rcu_joining || (sl_load_acquire(&rcu_fork_busy) &&
				      pthread_equal(rcu_fork_tid, pthread_self()));

	rcu_joining = true;
	if (!nested)
		pthread_mutex_lock(&rcu_mu);
	rcu_threads++;
	/* urcu-bp registers the thread at its first read lock: now. */
	rcu_read_lock();
	rcu_read_unlock();
	rcu_mine = true;
	if (!nested)
		pthread_mutex_unlock(&rcu_mu);
	rcu_joining = false;
}

static inline void rcu_join(void)
{
	if (__builtin_expect(!rcu_mine, 0))
		rcu_join_slow();
}

void pl_rcu_fork_begin(void)
{
	pthread_mutex_lock(&rcu_mu);
	rcu_fork_tid = pthread_self();
	sl_store_release(&rcu_fork_busy, 1);
	rcu_forking = rcu_threads > (rcu_mine ? 1u : 0u);
	if (rcu_forking)
		urcu_bp_before_fork();
}

void pl_rcu_fork_parent(void)
{
	if (rcu_forking)
		urcu_bp_after_fork_parent();
	sl_store_release(&rcu_fork_busy, 0);
	pthread_mutex_unlock(&rcu_mu);
}

SL_FORKTEXT void pl_rcu_fork_child(void)
{
	if (rcu_forking)
		urcu_bp_after_fork_child();	/* forgets the other threads */
	rcu_threads = rcu_mine ? 1 : 0;
	rcu_fork_busy = 0;
	pthread_mutex_init(&rcu_mu, NULL);
}

struct pl_sock *pl_get(int fd)
{
	struct pl_sock *ps = NULL;
	struct pl_table *t;

	if (fd < 0 || !SL_READ_ONCE(table))
		return NULL;
	rcu_join();
	rcu_read_lock();
	t = rcu_dereference(table);
	if ((unsigned int)fd < t->n) {
		ps = rcu_dereference(t->slot[fd]);
		/* Non-zero while published: the table's own reference is
		 * dropped only after synchronize_rcu() (pl_fd_forget()). */
		if (ps)
			sl_fetch_add_relaxed(&ps->refs, 1);
	}
	rcu_read_unlock();
	return ps;
}

void pl_put(struct pl_sock *ps)
{
	/* Fully ordered: every use of ps comes before its free. */
	if (ps && sl_fetch_sub(&ps->refs, 1) == 1)
		free(ps);
}

bool pl_is_sluice(int fd)
{
	struct pl_table *t;
	bool ret = false;

	if (fd < 0 || !SL_READ_ONCE(table))
		return false;
	rcu_join();
	rcu_read_lock();
	t = rcu_dereference(table);
	if ((unsigned int)fd < t->n)
		ret = rcu_dereference(t->slot[fd]) != NULL;
	rcu_read_unlock();
	return ret;
}

/* table_mu held.  Make room for fd; 0 or -ENOMEM. */
static int table_grow(int fd)
{
	struct pl_table *old = table, *t;
	unsigned int n = old ? old->n : 0, want = 64;

	if ((unsigned int)fd < n)
		return 0;
	while (want <= (unsigned int)fd)
		want *= 2;
	t = calloc(1, sizeof(*t) + want * sizeof(t->slot[0]));
	if (!t)
		return -ENOMEM;
	t->n = want;
	if (old)
		memcpy(t->slot, old->slot, n * sizeof(t->slot[0]));
	rcu_assign_pointer(table, t);
	if (old) {
		rcu_join();
		synchronize_rcu();
		free(old);
	}
	return 0;
}

static int table_set(int fd, struct pl_sock *ps)
{
	int ret;

	pthread_mutex_lock(&table_mu);
	ret = table_grow(fd);
	if (!ret) {
		rcu_assign_pointer(table->slot[fd], ps);
		SL_WRITE_ONCE(ps->nfd, ps->nfd + 1);
	}
	pthread_mutex_unlock(&table_mu);
	return ret;
}

bool pl_fd_twin_moved(int from, int to)
{
	bool found = false;

	if (!SL_READ_ONCE(table))
		return false;
	pthread_mutex_lock(&table_mu);
	for (unsigned int fd = 0; fd < table->n && !found; fd++) {
		struct pl_sock *ps = table->slot[fd];
		int want = from + 1;

		/* (Several fds may share ps: the first swap moves it.) */
		if (ps && SL_READ_ONCE(ps->twin) == want)
			found = sl_cmpxchg(&ps->twin, &want, to + 1);
	}
	pthread_mutex_unlock(&table_mu);
	return found;
}

/*
 * The table's references to sockets taken out of it, dropped after a
 * grace period: one synchronize_rcu() (two membarrier calls and a signal
 * mask round trip) for PL_DEFER_MAX closes, not one each (issue 23).
 * table_mu held to touch them.
 */
#define PL_DEFER_MAX	64
static struct pl_sock *deferred[PL_DEFER_MAX] SL_FORKDATA;
static unsigned int ndeferred SL_FORKDATA;

struct pl_sock *pl_fd_forget(int fd)
{
	struct pl_sock *ps = NULL, *flush[PL_DEFER_MAX];
	unsigned int nflush = 0;

	if (fd < 0 || !SL_READ_ONCE(table))
		return NULL;
	pthread_mutex_lock(&table_mu);
	if ((unsigned int)fd < table->n) {
		ps = table->slot[fd];
		rcu_assign_pointer(table->slot[fd], NULL);
	}
	if (ps) {
		SL_WRITE_ONCE(ps->nfd, ps->nfd - 1);
		/* The caller's own reference (the table's is held, so the
		 * count is not zero); the table's waits for readers that
		 * found ps before it left the table. */
		sl_fetch_add_relaxed(&ps->refs, 1);
		if (ndeferred == PL_DEFER_MAX) {
			memcpy(flush, deferred, sizeof(deferred));
			nflush = ndeferred;
			ndeferred = 0;
		}
		deferred[ndeferred++] = ps;
	}
	pthread_mutex_unlock(&table_mu);
	if (nflush) {
		rcu_join();
		synchronize_rcu();	/* no reader can find those now */
		for (unsigned int i = 0; i < nflush; i++)
			pl_put(flush[i]);
	}
	if (ps && ps->kfd && !SL_READ_ONCE(ps->nfd))
		kfd_keep(ps, fd);
	return ps;
}

void pl_fd_dup(int fd, int newfd, struct pl_sock *ps)
{
	(void)fd;
	sl_fetch_add_relaxed(&ps->refs, 1);
	if (table_set(newfd, ps))
		pl_put(ps);
}

/* ---- placeholders ---- */

/* ---- module socket fds ---- */

/*
 * On a module's stack (SLUICE_FEATURE_SOCKFD) a Sluice socket's fd is the
 * module's socket fd: the kernel counts its holders (close, dup, fork,
 * SCM_RIGHTS, exec, a killed process) and its poll reports the socket's
 * readiness, so the kernel's poll/select/epoll take it in any set.  When
 * the last reference goes, the module marks the slot released and the
 * next lock holder closes the socket (proto/sockfd.c): the closer itself right
 * after close(), for anyone else (a killed process) whoever runs the
 * stack next.  The placeholder files below remain for /dev/shm stacks
 * and modules without socket fds.
 */
static bool kfd_on;		/* a socket fd was made or adopted */
static bool kfd_off;		/* the module has no SOCK_FD: placeholders */

bool pl_kfds(void)
{
	return SL_READ_ONCE(kfd_on);
}

/*
 * The socket cache on a module's stack (lib/preload/README.md, "Socket
 * cache"): the entries of cache[] hold *parked* socket fds' files, each
 * at the library's fd of it (the keeper).  A close() of a socket's last
 * fd here is SOCK_PARK: the module closes the fd and, if nothing else
 * holds the file (another process's fd, a call in flight, an epoll
 * item), parks it at the keeper and releases the socket as the file's
 * end would; else it closes the keeper too.  The next socket()/accept()
 * is SOCK_REUSE of a parked file in place of SOCK_FD's new one.  The
 * module judges who holds the file, so fork, dup and SCM_RIGHTS need no
 * bookkeeping here; the first keeper of a socket is a dup of its fd
 * (sl_sys_dup_above()), once per entry.
 */
static bool kcache_on(void)
{
	return pl_cfg.sock_cache && (sl_module_features & SLUICE_FEATURE_SOCK_CACHE) &&
	       !sl_sys_sandboxed;
}

/* An entry whose kept description is lent to no socket (cache_mu held):
 * its index, or -1. */
static int cache_idle_locked(void)
{
	for (int i = 0; i < PL_CACHE; i++)
		if (cache[i].fd >= 0 && !cache[i].ps)
			return i;
	return -1;
}

/* SOCK_REUSE of a free entry's file for ps (socket sd of generation gen):
 * the fd, or -1 (none free, or the module said no: that entry ends). */
static int kfd_reuse(struct sl_stack *s, struct pl_sock *ps, struct sluice_sock_reuse *a)
{
	int i, fd = -1, end = -1, saved_errno = errno;

	if (!sl_load_acquire(&ncache) || !kcache_on())
		return -1;
	pthread_mutex_lock(&cache_mu);
	i = cache_idle_locked();
	if (i >= 0) {
		a->fd = cache[i].fd;
		fd = REAL(ioctl)(s->region_fd, SLUICE_IOC_SOCK_REUSE, a);
		if (fd >= 0) {
			cache[i].ps = ps;
			ps->cache = i + 1;
		} else {
			end = cache_drop_locked((unsigned int)i);
		}
	}
	pthread_mutex_unlock(&cache_mu);
	if (end >= 0)
		pl_libc.close(end);
	errno = saved_errno;
	if (fd >= 0)
		sl_count(s, SL_C_sock_fd_cached);
	return fd;
}

/* SOCK_FD (or SOCK_REUSE) for socket sd; the fd or -errno. */
static int kfd_make(struct sl_stack *s, struct pl_sock *ps, uint32_t sd, bool cloexec,
		    bool nonblock)
{
	uint32_t flags = (cloexec ? SLUICE_SOCK_FD_CLOEXEC : 0) |
			 (nonblock ? SLUICE_SOCK_FD_NONBLOCK : 0);
	struct sluice_sock_fd a = { .size = sizeof(a), .idx = sd, .flags = flags };
	struct sluice_sock_reuse r = { .size = sizeof(r), .idx = sd, .flags = flags };
	int fd;

	if (sl_lock(s))
		return -EPIPE;
	a.gen = r.gen = sl_sock(s, sd)->kp.gen;
	sl_unlock(s);
	fd = kfd_reuse(s, ps, &r);
	if (fd < 0)
		fd = REAL(ioctl)(s->region_fd, SLUICE_IOC_SOCK_FD, &a);
	if (fd < 0)
		return -errno;
	/* kstate is OPEN from here: changes are published at each unlock;
	 * this one covers those made before. */
	if (!sl_lock(s)) {
		sl_kp_publish(s, sl_sock(s, sd));
		sl_unlock(s);
	}
	return fd;
}

static int kfd_install(struct sl_stack *s, struct pl_sock *ps, uint32_t sd, int type,
		       bool cloexec, bool nonblock)
{
	/* Before the file is made: a fork that began since copied it
	 * (fork_busy is raised before kshare_gen moves). */
	unsigned int kgen = sl_load_acquire(&kshare_gen);
	bool busy = sl_load_acquire(&fork_busy) != 0;
	int fd = kfd_make(s, ps, sd, cloexec, nonblock), ret;

	if (fd < 0) {
		cache_release(ps, false);
		return fd;
	}
	ps->sd = sd;
	ps->gen = sl_sock(s, sd)->kp.gen;
	ps->type = type;
	ps->v6 = pl_sd_v6(sd);
	ps->v6only = ps->v6 && pl_sd_v6only(sd);
	ps->refs = 1;
	ps->nonblock = nonblock;
	ps->kfd = true;
	ps->kgen = kgen;
	ps->kshared = busy;
	ret = table_set(fd, ps);
	if (ret) {
		pl_libc.close(fd);	/* released: closed at the next unlock */
		cache_release(ps, false);
		return ret;
	}
	SL_WRITE_ONCE(kfd_on, true);
	pl_debug("fd %d is socket %u (%s), a socket fd", fd, sd,
		 type == SOCK_STREAM ? "tcp" : "udp");
	return fd;
}

/*
 * A module socket fd closed while a blocking call of this process is in
 * flight on it (another thread's close() or dup2() over it): on Linux
 * the call holds the file, so the socket goes on under it to its data,
 * timeout or error.  The module ends the stack's socket when its last
 * socket fd goes (kernel/sockfd.c), which the waiting call then saw
 * (EBADF at once: gVisor's ClosedReadBlockingSocket); so a copy of the
 * fd is kept in the library's range (a system call, only at such a
 * close) until the release the call's end makes (sock_release_now()).
 * kept[].fd is the copy + 1, 0: a free entry.
 */
#define PL_KEEP_MAX	16
static struct {
	int fd;
	struct pl_sock *ps;
} kept[PL_KEEP_MAX];
static int nkept;
static pthread_mutex_t keep_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;

static bool kfd_kept_is(int fd)
{
	for (unsigned int i = 0; SL_READ_ONCE(nkept) && i < PL_KEEP_MAX; i++)
		if (fd + 1 == SL_READ_ONCE(kept[i].fd))
			return true;
	return false;
}

/* fd of ps leaves the table, its last here: keep its file if a call is
 * in flight on it. */
static void kfd_keep(struct pl_sock *ps, int fd)
{
	int k;

	if (!(sl_load_acquire(&ps->calls) & PL_CALLS_INFL))
		return;
	k = sl_sys_dup_high(fd);
	if (k < 0)
		return;	/* no room: the call sees the socket end, as before */
	pthread_mutex_lock(&keep_mu);
	for (unsigned int i = 0; i < PL_KEEP_MAX; i++) {
		if (kept[i].fd)
			continue;
		kept[i].ps = ps;
		SL_WRITE_ONCE(kept[i].fd, k + 1);
		SL_WRITE_ONCE(nkept, nkept + 1);
		k = -1;
		break;
	}
	pthread_mutex_unlock(&keep_mu);
	if (k >= 0)
		sl_sys_close(k);
}

/* ps is released: its kept file goes (fd: only that copy, which a
 * dup2() over it ends; -1: any of ps's). */
static void kfd_unkeep(struct pl_sock *ps, int fd)
{
	int close_fd[PL_KEEP_MAX], n = 0;

	if (!SL_READ_ONCE(nkept))
		return;
	pthread_mutex_lock(&keep_mu);
	for (unsigned int i = 0; i < PL_KEEP_MAX; i++) {
		if (!kept[i].fd || (ps && kept[i].ps != ps) || (fd >= 0 && kept[i].fd != fd + 1))
			continue;
		if (fd < 0)
			close_fd[n++] = kept[i].fd - 1;
		SL_WRITE_ONCE(kept[i].fd, 0);
		SL_WRITE_ONCE(nkept, nkept - 1);
	}
	pthread_mutex_unlock(&keep_mu);
	while (n)
		sl_sys_close(close_fd[--n]);
}

/* Our socket fd of ps was closed: close the socket if that was the last. */
static void kfd_reap(struct pl_sock *ps)
{
	struct sl_stack *s = pl_sl();

	if (!s || sl_lock(s))
		return;
	if (sl_ksock_close_released(s, ps->sd, ps->gen))
		pl_debug("closed socket %u (last socket fd)", ps->sd);
	sl_unlock(s);
}

/* A free cache entry (cache_mu held) gets a copy of fd above the
 * program's numbers, lent to ps: its index, or -1 (none free, no fd). */
static int cache_lend_locked(int fd, struct pl_sock *ps)
{
	int i, k;

	for (i = 0; i < PL_CACHE && cache[i].fd >= 0; i++)
		;
	if (i == PL_CACHE || (k = sl_sys_dup_above(fd)) < 0)
		return -1;
	cache[i].ps = ps;
	ps->cache = i + 1;
	SL_WRITE_ONCE(cache[i].fd, k);
	sl_fetch_add(&ncache, 1);
	return i;
}

/*
 * close(fd) of ps's last fd here, a module socket fd: SOCK_PARK with its
 * keeper (made now if ps has none and an entry is free), one system call
 * as close(); plain close() where the file is not to be kept: another fd
 * of it here, a call in flight on it (its copy holds the file: kfd_keep()),
 * a fork under way, what the description keeps (ps->nocache), or an
 * epoll set it was put in and no keeper yet.  Either way the lent entry
 * ends or is free again before the release (sock_release_now()).
 */
/* Can another process hold ps's file?  Not if none was made or given
 * it since ps was made (a fork, exec, spawn or clone: pl_fd_share_all();
 * an SCM_RIGHTS send of it: pl_fd_share()) and it was not received. */
static bool kfd_private(const struct pl_sock *ps)
{
	return !SL_READ_ONCE(ps->kshared) && ps->kgen == sl_load_acquire(&kshare_gen) &&
	       !sl_load_acquire(&fork_busy);
}

/* The close of ps's last fd here may park its file, if the module
 * agrees: the program kept nothing on the description, no call is in
 * flight, no fork under way, and an entry is lent to it or one is free. */
static bool kfd_park_may(const struct pl_sock *ps)
{
	return kcache_on() && !SL_READ_ONCE(ps->nfd) && !SL_READ_ONCE(ps->nocache) &&
	       !(sl_load_acquire(&ps->calls) & PL_CALLS_INFL) && !sl_load_acquire(&fork_busy) &&
	       (SL_READ_ONCE(ps->cache) || sl_load_acquire(&ncache) < PL_CACHE);
}

/* ... and its epoll items are this process's to take out first
 * (pl_epoll_kfd_last()), as the file's end would take them: its file is
 * private (kfd_private()).  A forked child's or a dup's fd keeps them,
 * as on Linux; the module refuses the park then. */
bool pl_kfd_parkable(const struct pl_sock *ps)
{
	return kfd_park_may(ps) && kfd_private(ps);
}

int pl_kfd_close(int fd, struct pl_sock *ps)
{
	struct sluice_sock_park a = { .size = sizeof(a), .fd = fd, .keep_fd = -1 };
	struct sl_stack *s = pl_sl();
	int i = SL_READ_ONCE(ps->cache) - 1, ret, saved_errno = errno;

	/* No keeper made for a socket in a set that stays (the module would
	 * refuse it: the dup would be wasted). */
	if (!s || !kfd_park_may(ps) ||
	    (i < 0 && SL_READ_ONCE(ps->epolled) && !kfd_private(ps)))
		return REAL(close)(fd);
	pthread_mutex_lock(&cache_mu);
	if (i < 0)
		i = cache_lend_locked(fd, ps);
	if (i >= 0 && cache[i].ps == ps)
		a.keep_fd = cache[i].fd;
	pthread_mutex_unlock(&cache_mu);
	errno = saved_errno;
	if (a.keep_fd < 0)
		return REAL(close)(fd);
	ret = REAL(ioctl)(s->region_fd, SLUICE_IOC_SOCK_PARK, &a);
	if (ret < 0) {
		errno = saved_errno;
		return REAL(close)(fd);	/* the entry ends at the release */
	}
	pthread_mutex_lock(&cache_mu);
	if (cache[i].ps == ps) {
		if (ret == 1) {		/* parked: free for the next socket */
			cache[i].ps = NULL;
			ps->cache = 0;
		} else {		/* the module closed the keeper too */
			cache_drop_locked((unsigned int)i);
		}
	}
	pthread_mutex_unlock(&cache_mu);
	errno = saved_errno;
	return 0;
}

/* fd is a module socket fd (SCM_RIGHTS, exec): one of our stack's? */
static bool kfd_adopt(int fd)
{
	struct sluice_sock_info si = { .size = sizeof(si) };
	struct pl_sock *ps;
	struct sl_stack *s;
	struct sl_sock *so;
	int fl;

	if (REAL(ioctl)(fd, SLUICE_IOC_SOCK_INFO, &si))
		return false;
	if (!pl_stack() || !(s = pl_sl()) || strncmp(si.name, s->name, SLUICE_NAME_MAX) ||
	    si.idx >= s->r->max_sockets)
		return false;
	so = sl_sock(s, si.idx);
	fl = REAL(fcntl)(fd, F_GETFL);
	if (fl < 0 || so->kp.gen != si.gen || so->type == SL_SOCK_FREE)
		return false;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return false;
	ps->sd = si.idx;
	ps->gen = si.gen;
	ps->type = so->type == SL_SOCK_TCP ? SOCK_STREAM : SOCK_DGRAM;
	ps->v6 = so->flags & SL_SF_V6;
	ps->v6only = ps->v6 && (so->opt_flags & SL_SO_V6ONLY);
	ps->refs = 1;
	ps->nonblock = fl & O_NONBLOCK;
	ps->used = true;
	ps->kfd = true;
	ps->kshared = true;	/* its sender, or the image before exec */
	if (table_set(fd, ps)) {
		free(ps);
		return false;
	}
	SL_WRITE_ONCE(kfd_on, true);
	pl_debug("adopted fd %d as socket %u (socket fd)", fd, si.idx);
	return true;
}

int pl_kfd_sleep(struct pollfd *fds, nfds_t n, int ms)
{
	struct sl_stack *s = pl_sl();
	uint32_t *sleepers = &s->r->sleepers;
	struct sluice_stack_wake w = { .size = sizeof(w) };
	struct pollfd buf[65], *p = buf;
	int ret;

	if (n + 1 > sizeof(buf) / sizeof(buf[0]) && !(p = malloc((n + 1) * sizeof(*p))))
		return REAL(poll)(fds, n, ms);
	/*
	 * Counted as a sleeper before the module's sequence is read and the
	 * stack looked at once more: a kring packet after that moves the
	 * sequence (the module wakes only while someone sleeps), and poll
	 * on the stack fd armed with it returns at once.  Sluice readiness
	 * comes through the socket fds themselves (armed by this poll).
	 */
	sl_fetch_add(sleepers, 1);
	REAL(ioctl)(s->region_fd, SLUICE_IOC_STACK_WAKE, &w);
	sluice_stack_poll((struct sluice_stack *)s);
	w.flags = SLUICE_WAKE_ARM;
	REAL(ioctl)(s->region_fd, SLUICE_IOC_STACK_WAKE, &w);
	memcpy(p, fds, n * sizeof(*p));
	p[n].fd = s->region_fd;
	p[n].events = POLLIN;
	p[n].revents = 0;
	ret = REAL(poll)(p, n + 1, ms);
	sl_fetch_sub(sleepers, 1);
	for (nfds_t i = 0; i < n; i++)
		fds[i].revents = p[i].revents;
	if (p != buf)
		free(p);
	return ret;
}

/*
 * A new placeholder: an AF_UNIX stream socket of its own, neither bound
 * nor connected, with the socket's O_NONBLOCK and FD_CLOEXEC (its
 * description's status flags are the socket's: dup, fork, SCM_RIGHTS and
 * exec see them).  What a call that bypasses the library meets there is
 * an error of a socket that is not connected: read and recv EINVAL,
 * write and send ENOTCONN (no SIGPIPE: Linux's unix_stream_sendmsg()
 * signals only a peer's shutdown), fstat S_IFSOCK, a reopen through
 * /proc ENXIO; it stores nothing and names no file (issue 24 item 7;
 * lib/preload/README.md, "The placeholder").
 */
static int place_open(int flags)
{
	int saved_errno = errno;
	int fd = REAL(socket)(AF_UNIX, SOCK_STREAM | (flags & O_CLOEXEC ? SOCK_CLOEXEC : 0) |
			      (flags & O_NONBLOCK ? SOCK_NONBLOCK : 0), 0);

	if (fd >= 0)
		errno = saved_errno;	/* a call that succeeds leaves it alone */
	return fd;
}

/*
 * fd_path/pN of socket sd; its length, or 0 if it does not fit.  Written
 * out by hand, not by snprintf(): a forked child's close of the socket it
 * served asks this name, and the first printf of a child faults in five
 * pages of libc's text and tables (vfprintf, its jump table, strchrnul,
 * mempcpy, a stack page below) that its kernel twin never touches.
 */
/*
 * A copy of place_base, not memcpy() of fd_path: a forking server's child
 * closing the sockets it served (nobody_holds()) would call libc's
 * memcpy() for the one variable length, a page of libc's text it
 * otherwise never touches (test_fork_cost); a struct copies inline.
 */
static socklen_t place_addr(uint32_t sd, struct sockaddr_un *a)
{
	char digits[10];
	size_t n = fd_path_len + sizeof("/" PL_PLACE_NAME) - 1, k = 0;

	do
		digits[k++] = (char)('0' + sd % 10);
	while ((sd /= 10));
	if (n + k >= sizeof(a->sun_path))
		return 0;
	*a = place_base;
	while (k)
		a->sun_path[n++] = digits[--k];
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/*
 * Socket sd's placeholder fd gets its name, fd_path/pN: from now on a
 * connect() to the name finds the socket while any description of it
 * lives, in any process (dup, fork, exec, SCM_RIGHTS in flight), and is
 * refused once the last is closed (nobody_holds()).  Not listening, so
 * nobody can queue a connection on it (ECONNREFUSED to a stream
 * connect).  A name left by an earlier socket of the slot (its socket
 * gone: the slot is free only then) is replaced.  0 or -errno.
 */
static int place_bind(int fd, uint32_t sd)
{
	struct sockaddr_un a;
	socklen_t len = place_addr(sd, &a);
	int saved_errno = errno, ret = 0;

	if (!len)
		return -ENAMETOOLONG;
	if (REAL(bind)(fd, (struct sockaddr *)&a, len)) {
		ret = -errno;
		if (ret == -EADDRINUSE && !unlink(a.sun_path))
			ret = REAL(bind)(fd, (struct sockaddr *)&a, len) ? -errno : 0;
	}
	errno = saved_errno;
	return ret;
}

/* The name of socket sd, whose placeholders are all closed, goes (before
 * the socket is closed: the slot is not free yet, so nobody else can
 * have bound it again). */
static void place_unlink(uint32_t sd)
{
	struct sockaddr_un a;
	int saved_errno = errno;

	if (place_addr(sd, &a))
		unlink(a.sun_path);
	errno = saved_errno;
}

/*
 * Lists (issue 23: a process's death costs O(its sockets), not O(all)).
 * Every used record is on one list through the records (next, prev: sd +
 * 1; on: which list):
 *  - a private one on its creator's (sl_fdproc.head).  Only that process
 *    edits it while it lives (priv_mu), and after its death only the one
 *    process that claimed its record to sweep (SL_FDPROC_SWEPT, sweeper:
 *    its pid), so no lock is shared.  While an edit is under way edit says
 *    which record: a process that dies then leaves a list its sweep does
 *    not trust (it looks at every record for that process's, once);
 *  - a used (shared) one on the shared list, edited under shared_lock (the
 *    editor's pid; one found dead is taken over and the list rebuilt from
 *    the records, O(records), once).
 * A record leaves its list before its socket is closed (a closed socket's
 * slot may be taken by another process's socket at once, whose record is
 * the same one), and goes back if the close must wait (a stopped lock
 * holder).  The sweep for a dead process walks its list and the shared
 * one: O(its private sockets + the stack's shared ones).  A process that
 * died while making a socket (making: socket() or accept() before the
 * record) has its sockets without records found by a walk of every slot.
 */
static pthread_mutex_t priv_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;
/* The dead process record this thread sweeps for, or -1. */
static __thread int sweeping = -1;

static uint32_t *list_head(uint16_t on)
{
	if (on == SL_FDREC_ON_SHARED)
		return &hdr->shared_head;
	return on && on <= SL_FDREC_PROCS ? &hdr->procs[on - 1].head : NULL;
}

/* Put record sd at the head of list on; the list's editor. */
static void list_link(uint32_t sd, uint16_t on)
{
	uint32_t *head = list_head(on), h;

	if (!head)
		return;
	h = SL_READ_ONCE(*head);
	SL_WRITE_ONCE(recs[sd].prev, 0);
	SL_WRITE_ONCE(recs[sd].next, h);
	SL_WRITE_ONCE(recs[sd].on, on);
	if (h && h <= nrec)
		SL_WRITE_ONCE(recs[h - 1].prev, sd + 1);
	SL_WRITE_ONCE(*head, sd + 1);
}

/* Take record sd off the list it is on; that list's editor. */
static void list_unlink(uint32_t sd)
{
	uint16_t on = SL_READ_ONCE(recs[sd].on);
	uint32_t n = SL_READ_ONCE(recs[sd].next), p = SL_READ_ONCE(recs[sd].prev);
	uint32_t *head = list_head(on);

	if (head) {
		if (!p)
			SL_WRITE_ONCE(*head, n);
		else if (p <= nrec)
			SL_WRITE_ONCE(recs[p - 1].next, n);
		if (n && n <= nrec)
			SL_WRITE_ONCE(recs[n - 1].prev, p);
	}
	SL_WRITE_ONCE(recs[sd].on, 0);
	SL_WRITE_ONCE(recs[sd].next, 0);
	SL_WRITE_ONCE(recs[sd].prev, 0);
}

/* This process's own list (a record of its own: reg_slot >= 0). */
static void priv_link(uint32_t sd)
{
	struct sl_fdproc *me = &hdr->procs[reg_slot];

	pthread_mutex_lock(&priv_mu);
	/* Before the list's words, and cleared after them. */
	sl_xchg(&me->edit, sd + 1);
	list_link(sd, (uint16_t)(reg_slot + 1));
	sl_store_release(&me->edit, 0);
	pthread_mutex_unlock(&priv_mu);
}

static void priv_unlink(uint32_t sd)
{
	struct sl_fdproc *me;

	if (reg_slot < 0)
		return;
	me = &hdr->procs[reg_slot];
	pthread_mutex_lock(&priv_mu);
	if (SL_READ_ONCE(recs[sd].on) == reg_slot + 1) {
		sl_xchg(&me->edit, sd + 1);
		list_unlink(sd);
		sl_store_release(&me->edit, 0);
	}
	pthread_mutex_unlock(&priv_mu);
}

/* Every used record on the shared list, none else; shared_lock held. */
static void shared_rebuild(void)
{
	struct sl_stack *s = pl_sl();
	uint32_t top = s ? sl_sock_top(s) : nrec, n = 0;

	SL_WRITE_ONCE(hdr->shared_head, 0);
	for (uint32_t sd = 0; sd < nrec && sd < top; sd++) {
		if (SL_READ_ONCE(recs[sd].on) == SL_FDREC_ON_SHARED) {
			SL_WRITE_ONCE(recs[sd].on, 0);
			SL_WRITE_ONCE(recs[sd].next, 0);
			SL_WRITE_ONCE(recs[sd].prev, 0);
		}
		if (rec_state(sd) == SL_FDREC_USED && !SL_READ_ONCE(recs[sd].on)) {
			list_link(sd, SL_FDREC_ON_SHARED);
			n++;
		}
	}
	SL_WRITE_ONCE(hdr->shared_n, n);
	if (s)
		sl_count_n(s, SL_C_sweep_walked, top < nrec ? top : nrec);
	pl_debug("shared socket list rebuilt: %u", n);
}

static void shared_lock(void)
{
	uint32_t me = (uint32_t)sl_self_pid();

	for (unsigned int i = 1;; i++) {
		uint32_t cur = 0;

		if (sl_cmpxchg(&hdr->shared_lock, &cur, me))
			return;
		/* Its editor died mid-edit: ours, and the list rebuilt. */
		if (!(i % 64) && cur != me && sl_pid_dead((pid_t)cur) &&
		    sl_cmpxchg(&hdr->shared_lock, &cur, me)) {
			shared_rebuild();
			return;
		}
		sched_yield();
	}
}

static void shared_unlock(void)
{
	sl_store_release(&hdr->shared_lock, 0);
}

/* Take used record sd (key) off the shared list to close its socket:
 * false if another closer has it, or it is no longer that socket's. */
static bool shared_take(uint32_t sd, uint64_t key)
{
	bool mine = false;

	shared_lock();
	if (SL_READ_ONCE(recs[sd].key) == key) {
		uint16_t on = SL_READ_ONCE(recs[sd].on);

		if (on == SL_FDREC_ON_SHARED) {
			list_unlink(sd);
			SL_WRITE_ONCE(hdr->shared_n, SL_READ_ONCE(hdr->shared_n) - 1);
		}
		mine = on == SL_FDREC_ON_SHARED || !on;
	}
	shared_unlock();
	return mine;
}

/* Back on it (its close must wait), if still that socket's. */
static void shared_put(uint32_t sd, uint64_t key)
{
	shared_lock();
	if (SL_READ_ONCE(recs[sd].key) == key && !SL_READ_ONCE(recs[sd].on)) {
		list_link(sd, SL_FDREC_ON_SHARED);
		SL_WRITE_ONCE(hdr->shared_n, SL_READ_ONCE(hdr->shared_n) + 1);
	}
	shared_unlock();
}

int pl_fd_making_begin(void)
{
	int slot = SL_READ_ONCE(reg_slot);

	if (slot >= 0 && hdr)
		sl_fetch_add(&hdr->procs[slot].making, 1);
	return slot;
}

void pl_fd_making_end(int slot)
{
	/* Not a forked child's: its record is another. */
	if (slot >= 0 && hdr && slot == SL_READ_ONCE(reg_slot))
		sl_fetch_sub(&hdr->procs[slot].making, 1);
}

/*
 * Private sockets (issue 23: a short connection in fewer system calls than
 * the kernel's).  A socket this process made (socket(), accept()) whose
 * description no other process can hold yet needs neither the lock on
 * its byte nor the probe at close: the table counts its fds here
 * (ps->nfd), and the last one's close() closes it.  Its record says
 * SL_FDREC_PRIV and names the creator's process record, so a sweep closes
 * it when that process dies, and not before.  The moment another process
 * could come to hold the description, the socket takes its lock and
 * becomes an ordinary one (make_shared()): before a fork (atfork
 * prepare), an exec, a spawn (posix_spawn, system, popen), a clone, a
 * send with SCM_RIGHTS, a seccomp sandbox (which may forbid the bind
 * later).  A socket made while a fork is under way is made shared at
 * once (fork_busy, fork_gen).  What cannot be seen: a raw clone/fork/
 * execve system call that bypasses libc, and another process's
 * pidfd_getfd(2) of the fd; lib/preload/README.md.
 */
static int npriv SL_FORKDATA;	/* private sockets in the table: 0 skips the walk */

static bool fork_since(unsigned int gen, unsigned int busy);

/*
 * The socket cache (issue 23 item 3; lib/preload/README.md, "Socket
 * cache").  What a socket()/accept() on a /dev/shm stack costs the
 * library beyond the stack's own work is its placeholder: an open() of
 * its shard's FIFO (a path walk and a new file) and, at close(), the
 * description's end.  A private socket's description carries nothing of
 * the socket (no lock, nobody else holds it), so at its last close() it
 * is kept, at a high fd of the library's (the number the program closed
 * is free, as on the kernel), and the next socket of the same shard gets
 * a dup of it at the lowest free number (F_DUPFD or F_DUPFD_CLOEXEC): one
 * call where open() was, and a close() that ends no file.  The socket
 * itself (slot, buffers, options, names, errors) is a new one each time:
 * nothing of the old socket is kept but the FIFO's description.
 *
 * An entry is free (ps NULL) or lent to the socket ps (whose ps->cache
 * names it: the entry's fd and the socket's share one description).  An
 * entry ends (its fd closed) when its socket becomes shared
 * (make_shared(): the lock is on the description, and a kept copy would
 * hold it), when a fork, exec, spawn or sandbox begins (every entry: a
 * child must not share a description with the parent), when the program
 * set what a description keeps (ps->nocache), or when a dup2() lands on
 * its fd.  cache_mu is taken inside table_mu, never around it.
 */
/* ps becomes shared, or goes for good: its entry (if any) ends. */
static void cache_drop(struct pl_sock *ps)
{
	int i = SL_READ_ONCE(ps->cache) - 1, fd = -1;

	if (i < 0)
		return;
	pthread_mutex_lock(&cache_mu);
	if (cache[i].ps == ps)
		fd = cache_drop_locked((unsigned int)i);
	pthread_mutex_unlock(&cache_mu);
	if (fd >= 0)
		pl_libc.close(fd);
}

/* Every entry ends: a fork, exec, spawn, clone or sandbox begins. */
static void cache_drop_all(void)
{
	int fds[PL_CACHE], n = 0;

	if (!sl_load_acquire(&ncache))
		return;
	pthread_mutex_lock(&cache_mu);
	for (unsigned int i = 0; i < PL_CACHE; i++) {
		int fd = cache_drop_locked(i);

		if (fd >= 0)
			fds[n++] = fd;
	}
	pthread_mutex_unlock(&cache_mu);
	for (int i = 0; i < n; i++)
		pl_libc.close(fds[i]);
}

/*
 * A placeholder for a socket (made by ps) from a free entry: the lowest
 * free fd, or -1 (none there, or the dup failed; the caller makes one).
 * Any entry fits any socket: a private placeholder has no name.  The description's O_NONBLOCK is set when it
 * differs (the only status flag a kept description may have had set).
 */
static int cache_take(struct pl_sock *ps, bool cloexec, bool nonblock)
{
	int i, fd = -1, saved_errno = errno;
	bool nb = false;

	if (!sl_load_acquire(&ncache))
		return -1;
	pthread_mutex_lock(&cache_mu);
	i = cache_idle_locked();
	if (i >= 0) {
		cache[i].ps = ps;
		nb = cache[i].nb;
		fd = REAL(fcntl)(cache[i].fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
		if (fd >= 0 && nb != nonblock &&
		    REAL(fcntl)(fd, F_SETFL, nonblock ? O_NONBLOCK : 0)) {
			pl_libc.close(fd);
			fd = -1;
		}
		if (fd < 0) {
			cache[i].ps = NULL;
		} else {
			ps->cache = i + 1;
			ps->nonblock = nonblock;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	errno = saved_errno;
	if (fd >= 0)
		sl_count(pl_sl(), SL_C_sock_fd_cached);
	return fd;
}

/*
 * close(fd) of ps's last fd, before the real close: keep its
 * description if ps is private, has no entry yet, and one is free.  One
 * system call (the dup), made only until the cache is full.
 */
void pl_fd_cache_keep(int fd, struct pl_sock *ps)
{
	unsigned int gen0 = sl_load_acquire(&fork_gen), busy0 = sl_load_acquire(&fork_busy);
	int saved_errno;

	if (!pl_cfg.sock_cache || SL_READ_ONCE(ps->cache) || !SL_READ_ONCE(ps->priv) ||
	    SL_READ_ONCE(ps->nocache) ||
	    SL_READ_ONCE(ps->nfd) || ps->kfd || sl_sys_sandboxed || busy0 ||
	    sl_load_acquire(&ncache) >= PL_CACHE)
		return;
	saved_errno = errno;
	pthread_mutex_lock(&cache_mu);
	cache_lend_locked(fd, ps);
	pthread_mutex_unlock(&cache_mu);
	errno = saved_errno;
	/* A fork that began meanwhile may have copied it: let it go. */
	if (fork_since(gen0, busy0))
		cache_drop(ps);
}

/* ps's last fd here is gone (sock_release_now()): its entry is free for
 * the next socket if ps was private to the end, else it ends. */
static void cache_release(struct pl_sock *ps, bool keep)
{
	int i = SL_READ_ONCE(ps->cache) - 1, fd = -1;

	if (i < 0)
		return;
	pthread_mutex_lock(&cache_mu);
	if (cache[i].ps == ps) {
		if (keep && !SL_READ_ONCE(ps->nocache) && !sl_load_acquire(&fork_busy)) {
			cache[i].nb = SL_READ_ONCE(ps->nonblock);
			cache[i].ps = NULL;
			ps->cache = 0;
		} else {
			fd = cache_drop_locked((unsigned int)i);
		}
	}
	pthread_mutex_unlock(&cache_mu);
	if (fd >= 0)
		pl_libc.close(fd);
}

/* Take the lock and publish the record as used; table_mu held. */
static void make_shared(int fd, struct pl_sock *ps)
{
	uint64_t key = SL_FDREC_KEY(SL_FDREC_PRIV, ps->gen);

	if (!SL_READ_ONCE(ps->priv) || place_bind(fd, ps->sd))
		return;
	cache_drop(ps);	/* a kept copy would keep the name alive */
	/* After the bind, as pl_sock_install(): a closer that sees USED
	 * finds the name too, and the record on the shared list. */
	shared_lock();
	priv_unlink(ps->sd);
	list_link(ps->sd, SL_FDREC_ON_SHARED);
	if (sl_cmpxchg(&recs[ps->sd].key, &key, SL_FDREC_KEY(SL_FDREC_USED, ps->gen)))
		SL_WRITE_ONCE(hdr->shared_n, SL_READ_ONCE(hdr->shared_n) + 1);
	else
		list_unlink(ps->sd);
	shared_unlock();
	SL_WRITE_ONCE(ps->priv, false);
	sl_fetch_sub(&npriv, 1);
}

void pl_fd_share_all(void)
{
	sl_fetch_add(&kshare_gen, 1);	/* every module socket fd so far */
	cache_drop_all();	/* no description of the cache in another process */
	if (!sl_load_acquire(&npriv) || !SL_READ_ONCE(table))
		return;
	pthread_mutex_lock(&table_mu);
	for (unsigned int fd = 0; fd < table->n; fd++)
		if (table->slot[fd])
			make_shared((int)fd, table->slot[fd]);
	pthread_mutex_unlock(&table_mu);
}

void pl_fd_table_lock(void)
{
	pthread_mutex_lock(&table_mu);
}

void pl_fd_table_unlock(void)
{
	pthread_mutex_unlock(&table_mu);
}

void pl_fd_share(int fd)
{
	struct pl_sock *ps;

	if ((!sl_load_acquire(&npriv) && !SL_READ_ONCE(kfd_on)) || !(ps = pl_get(fd)))
		return;
	if (ps->kfd)
		SL_WRITE_ONCE(ps->kshared, true);
	pthread_mutex_lock(&table_mu);
	make_shared(fd, ps);
	pthread_mutex_unlock(&table_mu);
	pl_put(ps);
}

unsigned int pl_fd_top(void)
{
	unsigned int n = 0;

	if (!SL_READ_ONCE(table))
		return 0;
	pthread_mutex_lock(&table_mu);
	n = table->n;
	pthread_mutex_unlock(&table_mu);
	return n;
}

/* Has this process a private socket (the walks above are skipped without)? */
bool pl_fd_any_private(void)
{
	return sl_load_acquire(&npriv) != 0;
}

void pl_fd_fork_begin(void)
{
	sl_fetch_add(&fork_busy, 1);
	sl_fetch_add(&fork_gen, 1);
	pl_fd_share_all();
}

void pl_fd_fork_end(void)
{
	sl_fetch_sub(&fork_busy, 1);
}

bool pl_fd_forking(void)
{
	return sl_load_acquire(&fork_busy) != 0;
}

/* Has a fork, exec or spawn begun since gen, or is one under way? */
static bool fork_since(unsigned int gen, unsigned int busy)
{
	return busy || sl_load_acquire(&fork_busy) || sl_load_acquire(&fork_gen) != gen;
}

int pl_sock_install(uint32_t sd, int type, bool cloexec, bool nonblock)
{
	struct sl_stack *s = pl_sl();
	unsigned int gen0, busy0;
	struct pl_sock *ps;
	bool priv;
	int fd, ret;

	ps = calloc(1, sizeof(*ps));
	if (!ps) {
		ret = -ENOMEM;
		goto err_close_sock;
	}
	if (s->module_backed && !SL_READ_ONCE(kfd_off)) {
		fd = kfd_install(s, ps, sd, type, cloexec, nonblock);
		if (fd >= 0) {
			/* A connection here can go to the kernel on request. */
			if (type == SOCK_STREAM)
				pl_agent_start();
			return fd;
		}
		if (fd != -ENOTTY) {
			ret = fd;
			goto err_free;
		}
		/* A module without socket fds: placeholders from now on. */
		SL_WRITE_ONCE(kfd_off, true);
	}
	/* Private needs a process record of ours (the sweep's test of its
	 * creator) and a process that may still bind a name later. */
	priv = reg_slot >= 0 && !sl_sys_sandboxed;
	gen0 = sl_load_acquire(&fork_gen);
	busy0 = sl_load_acquire(&fork_busy);
	fd = priv ? cache_take(ps, cloexec, nonblock) : -1;
	if (fd < 0)
		fd = place_open((cloexec ? O_CLOEXEC : 0) | (nonblock ? O_NONBLOCK : 0));
	if (fd < 0) {
		ret = -errno;
		goto err_free;
	}
	/* The name says the socket (inherit after exec, SCM_RIGHTS:
	 * placeholder_sd()) and that it is held (nobody_holds()). */
	if (!priv) {
		ret = place_bind(fd, sd);
		if (ret)
			goto err_close_fd;
	}
	ps->gen = sl_sock(s, sd)->kp.gen;
	ps->priv = priv;
	recs[sd].pid = (uint32_t)sl_self_pid();
	recs[sd].type = (uint16_t)type;
	recs[sd].fd = fd;
	recs[sd].proc = priv ? (uint16_t)(reg_slot + 1) : 0;
	/* After the bind: a closer that sees this key finds the name too,
	 * and the record on its list. */
	if (SL_READ_ONCE(recs[sd].on))
		pl_debug("socket %u's record was still on list %u", sd, recs[sd].on);
	if (priv) {
		priv_link(sd);
		sl_store_release(&recs[sd].key, SL_FDREC_KEY(SL_FDREC_PRIV, ps->gen));
		sl_fetch_add(&npriv, 1);
	} else {
		shared_lock();
		list_link(sd, SL_FDREC_ON_SHARED);
		SL_WRITE_ONCE(hdr->shared_n, SL_READ_ONCE(hdr->shared_n) + 1);
		sl_store_release(&recs[sd].key, SL_FDREC_KEY(SL_FDREC_USED, ps->gen));
		shared_unlock();
	}
	ps->sd = sd;
	ps->type = type;
	ps->v6 = pl_sd_v6(sd);
	ps->v6only = ps->v6 && pl_sd_v6only(sd);
	ps->refs = 1;
	ps->nonblock = nonblock;
	ret = table_set(fd, ps);
	if (ret)
		goto err_unrec;
	/* A fork that began before the table had it may have copied the
	 * fd without making it shared: do it now. */
	if (priv && fork_since(gen0, busy0)) {
		pthread_mutex_lock(&table_mu);
		make_shared(fd, ps);
		pthread_mutex_unlock(&table_mu);
	}
	pl_debug("fd %d is socket %u (%s%s)", fd, sd, type == SOCK_STREAM ? "tcp" : "udp",
		 SL_READ_ONCE(ps->priv) ? ", private" : "");
	return fd;

err_unrec:
	if (priv) {
		priv_unlink(sd);
		sl_store_release(&recs[sd].key, SL_FDREC_KEY(SL_FDREC_FREE, ps->gen));
		sl_fetch_sub(&npriv, 1);
	} else {
		shared_take(sd, SL_FDREC_KEY(SL_FDREC_USED, ps->gen));
		sl_store_release(&recs[sd].key, SL_FDREC_KEY(SL_FDREC_FREE, ps->gen));
	}
err_close_fd:
	pl_libc.close(fd);
	cache_release(ps, true);
err_free:
	free(ps);
err_close_sock:
	sluice_close(pl_stack(), (int)sd);
	return ret;
}

/*
 * If nobody holds a placeholder of socket sd any more, close the socket.
 * The write lock taken from a fresh description makes the closer unique
 * (a racing close or sweep finds it taken, or the record already free).
 */
/*
 * Sockets whose close found the stack lock held by a stopped process
 * (sl_close_gen() -EAGAIN): their records stay used, and they are closed
 * at this process's next sweep, or by whoever sweeps after it is gone.
 * reap_mu held.
 */
#define PL_PEND_MAX	64
static uint32_t pend[PL_PEND_MAX];
static unsigned int npend SL_FORKDATA;
static pthread_mutex_t reap_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;

/*
 * Close socket sd if its record is used and no placeholder of it is held
 * any more.  The record is read before the lock is looked at: an
 * installer takes its lock before it publishes the record, so a record
 * read here whose lock is free is the record of a socket nobody holds.
 * Closers do not exclude each other: sl_close_gen() closes a generation
 * once (the second finds it closed, or another socket in the slot), and
 * the record is freed by compare-and-swap of the key read, so never a
 * newer socket's.
 */
static bool nobody_holds(uint32_t sd);

/* Is the creator of private socket sd gone (its process record lapsed:
 * being swept, free, or another process's)? */
static bool creator_gone(uint32_t sd)
{
	uint32_t p = SL_READ_ONCE(recs[sd].proc);

	return !p || p > SL_FDREC_PROCS ||
	       SL_READ_ONCE(hdr->procs[p - 1].state) != SL_FDPROC_LIVE ||
	       SL_READ_ONCE(hdr->procs[p - 1].pid) != SL_READ_ONCE(recs[sd].pid);
}

/*
 * owner: the caller closed the last fd of its private socket sd.
 * -EAGAIN: its close waits for a stopped lock holder (the record back on
 * its list; closed at this process's next sweep, or, swept for a dead
 * process, at the next sweep for it).
 */
static int reap_close(uint32_t sd, uint64_t key);

static int reap(uint32_t sd, bool owner)
{
	struct sl_stack *s = pl_sl();
	uint64_t key;
	uint32_t state;
	uint16_t from;
	int making, ret;

	/* A sandboxed process may not ask a name (connect, os.h), nor did
	 * it lock-test files before: the socket is closed by the sweep that sees this process die, or by
	 * another holder's close. */
	if (!s || sd >= nrec || sl_sys_sandboxed)
		return 0;
	key = sl_load_acquire(&recs[sd].key);
	state = SL_FDREC_STATE(key);
	from = SL_READ_ONCE(recs[sd].on);
	if (state == SL_FDREC_PRIV) {
		if (!owner && !creator_gone(sd))
			return 0;
		/* Off its list before the close: only its editor may. */
		if (from && sweeping >= 0 && from == sweeping + 1)
			list_unlink(sd);
		else if (from && reg_slot >= 0 && from == reg_slot + 1) {
			/*
			 * Off our list and not yet closed: a death here left
			 * the socket on no list, open for ever (a client killed
			 * in close(), test_sockcache).  Counted as a socket in
			 * the making, so a sweep for us looks for such records
			 * (sweep_unrecorded()).
			 */
			making = pl_fd_making_begin();
			priv_unlink(sd);
			ret = reap_close(sd, key);
			pl_fd_making_end(making);
			return ret;
		} else if (from) {
			return 0;	/* another's list: its process or sweep closes it */
		}
	} else if (state != SL_FDREC_USED || !nobody_holds(sd) || !shared_take(sd, key)) {
		return 0;
	} else {
		place_unlink(sd);	/* ours to close: its slot is not free yet */
	}
	return reap_close(sd, key);
}

/* reap(): record sd (key) is on no list now, and ours to close. */
static int reap_close(uint32_t sd, uint64_t key)
{
	struct sl_stack *s = pl_sl();
	uint32_t gen, state = SL_FDREC_STATE(key);
	struct sl_sock *so;

	gen = SL_FDREC_GEN(key);
	so = sl_sock(s, sd);
	/* A first look without the lock; sl_close_gen() checks again
	 * under it (another process may free the socket and take its slot
	 * in between). */
	if (so->type != SL_SOCK_FREE && so->kp.gen == gen && !(so->flags & SL_SF_ORPHAN)) {
		pl_debug("closing socket %u", sd);
		if (sl_close_gen(pl_stack(), (int)sd, gen) == -EAGAIN) {
			/* A stopped lock holder: later, not now. */
			uint16_t proc = SL_READ_ONCE(recs[sd].proc);
			bool known = false;

			if (state == SL_FDREC_PRIV && sweeping >= 0 && proc == sweeping + 1) {
				list_link(sd, proc);
				return -EAGAIN;
			}
			if (state == SL_FDREC_PRIV && reg_slot >= 0 && proc == reg_slot + 1)
				priv_link(sd);
			else if (state == SL_FDREC_USED)
				shared_put(sd, key);
			pthread_mutex_lock(&reap_mu);
			for (unsigned int i = 0; i < npend; i++)
				known |= pend[i] == sd;
			if (!known && npend < PL_PEND_MAX)
				pend[npend++] = sd;
			pthread_mutex_unlock(&reap_mu);
			return -EAGAIN;
		}
	}
	sl_cmpxchg(&recs[sd].key, &key, SL_FDREC_KEY(SL_FDREC_FREE, gen));
	return 0;
}

/*
 * Does no description hold socket sd's placeholder any more?  Asked by a
 * connect() of a datagram socket of the library's (place_probe) to the
 * placeholder's name: a name whose stream socket lives answers
 * EPROTOTYPE (Linux's unix_find_bsd() finds the socket, then compares
 * types; nothing is queued and nothing connects), one whose socket is
 * gone ECONNREFUSED, and a name taken away (place_unlink()) ENOENT.  A
 * name is a path, not an abstract one: an abstract name is looked up in
 * the network namespace of the one who asks, and a process of the stack
 * in another namespace would be told "gone" of a socket that lives.
 * Anything else (EACCES: the name is another user's) cannot tell, and
 * the socket stays.  The probe is kept (a forked child shares it, which
 * is harmless: a datagram socket connects again at each question) among
 * the library's own fds (pl_fd_is_own()), above the program's numbers
 * (sl_sys_fd_high(): a close() makes it, and the number that close freed
 * is the next open()'s, as on the kernel).
 */
static pthread_mutex_t probe_mu SL_FORKDATA = PTHREAD_MUTEX_INITIALIZER;

static bool nobody_holds(uint32_t sd)
{
	struct sockaddr_un a;
	socklen_t len = place_addr(sd, &a);
	int fd = SL_READ_ONCE(place_probe), saved_errno = errno;
	bool gone;

	if (!len)
		return false;
	if (fd < 0) {
		pthread_mutex_lock(&probe_mu);
		fd = place_probe;
		if (fd < 0) {
			fd = sl_sys_fd_high(REAL(socket)(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
			SL_WRITE_ONCE(place_probe, fd);
		}
		pthread_mutex_unlock(&probe_mu);
		if (fd < 0) {
			errno = saved_errno;
			return false;	/* cannot tell: the sweep will */
		}
	}
	gone = REAL(connect)(fd, (struct sockaddr *)&a, len) &&
	       (errno == ECONNREFUSED || errno == ENOENT);
	errno = saved_errno;
	return gone;
}

/* Socket sd's lock file (fd.c, "Record locks"): a file of its own in the
 * placeholders' directory, never written, so every whence starts at 0 as
 * a socket's. */
int pl_fd_lock_file(uint32_t sd)
{
	char path[sizeof(fd_path) + 16];
	int fd, saved_errno = errno;

	if (!fd_path[0])
		return -1;
	snprintf(path, sizeof(path), "%s/l%u", fd_path, sd);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	fd = sl_sys_fd_high(fd);
	errno = saved_errno;
	return fd;
}

static void sock_release_now(struct pl_sock *ps)
{
	int saved_errno = errno;

	pl_sock_locks_close(ps, !SL_READ_ONCE(ps->nfd));
	/* The last fd of it here: its kernel twin goes (twin.c); a forked
	 * process that still has the listener keeps its own fd of it. */
	if (SL_READ_ONCE(ps->twin) && !SL_READ_ONCE(ps->nfd))
		pl_twin_close(ps);
	if (SL_READ_ONCE(ps->cache) && !SL_READ_ONCE(ps->nfd))
		cache_release(ps, SL_READ_ONCE(ps->priv));
	/* ... and its O_ASYNC bell (async.c). */
	if (SL_READ_ONCE(ps->async_fd) && !SL_READ_ONCE(ps->nfd))
		pl_async_release(ps);
	if (ps->kfd) {
		kfd_unkeep(ps, -1);	/* first: the module's release, then the reap */
		kfd_reap(ps);
	} else if (SL_READ_ONCE(ps->priv)) {
		/* table_mu orders this with make_shared(): a socket made
		 * shared after this fd left the table is seen so here. */
		if (!SL_READ_ONCE(ps->nfd)) {
			SL_WRITE_ONCE(ps->priv, false);
			sl_fetch_sub(&npriv, 1);
			reap(ps->sd, true);
		}
	} else {
		reap(ps->sd, false);	/* probes a lock that may be held: EAGAIN */
	}
	pl_put(ps);
	/* The program's close() succeeded.  Written only if changed: a
	 * forked child's first write to its thread's page is a fault. */
	if (errno != saved_errno)
		errno = saved_errno;
}

/* Make the releases that waited for calls in flight, once none is. */
static void sock_release_pending(struct pl_sock *ps)
{
	int v;

	sl_fetch_add_relaxed(&ps->refs, 1);	/* ps outlives the releases */
	for (;;) {
		v = sl_load_acquire(&ps->calls);
		if ((v & PL_CALLS_INFL) || v < PL_CALLS_REL)
			break;	/* a call ends later and makes them; or none */
		if (sl_cmpxchg(&ps->calls, &v, v - PL_CALLS_REL))
			sock_release_now(ps);
	}
	pl_put(ps);
}

void pl_sock_release(struct pl_sock *ps)
{
	if (!ps)
		return;
	/* Any close of the socket ends this process's record locks on it. */
	if (SL_READ_ONCE(ps->lock_fd))
		pl_sock_locks_close(ps, false);
	if (!(sl_fetch_add(&ps->calls, PL_CALLS_REL) & PL_CALLS_INFL))
		sock_release_pending(ps);
}

void pl_call_begin(struct pl_sock *ps)
{
	sl_fetch_add(&ps->calls, 1);
}

void pl_call_end(struct pl_sock *ps)
{
	int old = sl_fetch_sub(&ps->calls, 1);

	if ((old & PL_CALLS_INFL) == 1 && old >= PL_CALLS_REL)
		sock_release_pending(ps);
}

/*
 * Sockets a process got from the stack (socket(), accept()) but died
 * before it made their fd and record, or died closing (its record taken
 * off its list, the socket not yet closed): nobody else can close them.
 * Close those whose process is gone (the generation checked under the
 * lock).
 */
static void sweep_unrecorded(void)
{
	struct sl_stack *s = pl_sl();

	if (s)
		sl_count_n(s, SL_C_sweep_walked, sl_sock_top(s));

	for (uint32_t sd = 0; s && sd < nrec && sd < sl_sock_top(s); sd++) {
		struct sl_sock *so = sl_sock(s, sd);
		uint32_t gen = SL_READ_ONCE(so->kp.gen);

		if (rec_state(sd) == SL_FDREC_PRIV && !SL_READ_ONCE(recs[sd].on)) {
			/* Its creator died closing it (reap()). */
			if (creator_gone(sd))
				reap(sd, false);
			continue;
		}
		if (rec_state(sd) != SL_FDREC_FREE ||
		    !sl_sock_type_live(SL_READ_ONCE(so->type)) ||
		    (SL_READ_ONCE(so->flags) & SL_SF_ORPHAN) ||
		    (so->type == SL_SOCK_TCP &&
		     (SL_READ_ONCE(so->tcp.tflags) & (SL_TF_ACCQ | SL_TF_PASSIVE))) ||
		    !sl_pid_dead((pid_t)SL_READ_ONCE(so->owner_pid)))
			continue;
		/* The record may have been made since the first look. */
		if (rec_state(sd) != SL_FDREC_FREE)
			continue;
		pl_debug("closing socket %u: its process died before it had an fd", sd);
		sl_close_gen(pl_stack(), (int)sd, gen);
	}
}

/*
 * The shared list: close the sockets nobody holds any more.  Its records
 * are copied under the lock and looked at without it (a look probes a
 * lock and may close a socket); one freed and taken again meanwhile is
 * another socket's (its key differs) and left alone.
 */
static void sweep_shared(void)
{
	struct sl_stack *s = pl_sl();
	struct { uint32_t sd; uint64_t key; } *v;
	uint32_t n, k = 0, cur, steps = 0;

	if (!s || !SL_READ_ONCE(hdr->shared_head))
		return;
	shared_lock();
	n = SL_READ_ONCE(hdr->shared_n);
	v = n <= nrec ? malloc(((size_t)n + 1) * sizeof(*v)) : NULL;
	for (cur = SL_READ_ONCE(hdr->shared_head); v && cur; k++) {
		uint32_t sd = cur - 1;

		if (sd >= nrec || k >= n || ++steps > nrec ||
		    SL_READ_ONCE(recs[sd].on) != SL_FDREC_ON_SHARED) {
			/* Not what the editors leave: rebuilt, and looked at
			 * next time. */
			shared_rebuild();
			k = 0;
			break;
		}
		v[k].sd = sd;
		v[k].key = SL_READ_ONCE(recs[sd].key);
		cur = SL_READ_ONCE(recs[sd].next);
	}
	shared_unlock();
	if (!v)
		return;
	sl_count_n(s, SL_C_sweep_walked, k);
	for (uint32_t i = 0; i < k; i++)
		if (sl_load_acquire(&recs[v[i].sd].key) == v[i].key)
			reap(v[i].sd, false);
	free(v);
}

/*
 * Close the private sockets of dead process record p (ours to sweep:
 * SWEPT, sweeper us).  Its list, unless its process died editing it (or
 * its sweeper died, redo): then every record is looked at for its.
 * False: a close waits for a stopped lock holder (the next sweep tries
 * again).
 */
static bool sweep_proc(int p, bool redo)
{
	struct sl_stack *s = pl_sl();
	struct sl_fdproc *pr = &hdr->procs[p];
	bool bad = redo || SL_READ_ONCE(pr->edit), done = true;
	uint32_t cur, steps = 0, top;

	if (!s)
		return false;
	sweeping = p;
	for (cur = SL_READ_ONCE(pr->head); !bad && cur;) {
		uint32_t sd = cur - 1;

		if (sd >= nrec || ++steps > nrec || SL_READ_ONCE(recs[sd].on) != p + 1) {
			bad = true;
			break;
		}
		cur = SL_READ_ONCE(recs[sd].next);
		sl_count(s, SL_C_sweep_walked);
		/* Off the list, or back on it (a stopped holder). */
		if (reap(sd, false) == -EAGAIN)
			done = false;
		else if (SL_READ_ONCE(recs[sd].on) == p + 1)
			list_unlink(sd);	/* not a private socket of its */
	}
	if (bad) {
		pl_debug("process record %d's list not to be trusted: every record", p);
		SL_WRITE_ONCE(pr->head, 0);
		done = true;
		top = sl_sock_top(s) < nrec ? sl_sock_top(s) : nrec;
		sl_count_n(s, SL_C_sweep_walked, top);
		for (uint32_t sd = 0; sd < top; sd++) {
			if (SL_READ_ONCE(recs[sd].on) == p + 1) {
				SL_WRITE_ONCE(recs[sd].on, 0);
				SL_WRITE_ONCE(recs[sd].next, 0);
				SL_WRITE_ONCE(recs[sd].prev, 0);
			}
			if (rec_state(sd) == SL_FDREC_PRIV && SL_READ_ONCE(recs[sd].proc) == p + 1 &&
			    !SL_READ_ONCE(recs[sd].on) && reap(sd, false) == -EAGAIN)
				done = false;
		}
		SL_WRITE_ONCE(pr->edit, 0);
	}
	sweeping = -1;
	return done;
}

static bool sweep(void);
static bool sweep_from(int only);

/* Rate-limited; the program's errno is left as it was. */
/* Close again what a stopped lock holder kept us from closing. */
static void reap_pending(void)
{
	uint32_t mine[PL_PEND_MAX];
	unsigned int n;

	pthread_mutex_lock(&reap_mu);
	n = npend;
	memcpy(mine, pend, n * sizeof(mine[0]));
	npend = 0;
	pthread_mutex_unlock(&reap_mu);
	/* A private socket's is ours (its creator's) to close. */
	for (unsigned int i = 0; i < n; i++)
		reap(mine[i], true);
}

/* This program has not swept yet (a new image: not inherited across
 * exec, and a forked child inherits its parent's false). */
static bool swept_never SL_FORKDATA = true;

/* The watcher (watch.c), when a process of the stack has died: a sweep
 * now, whatever the stack's time says; only process record only's if
 * that is the one death it saw (its pidfd), -1: every record's.  True: a
 * close waits for a stopped lock holder (to try again later). */
bool pl_sweep_now(int only)
{
	bool again;
	int saved_errno = errno;

	if (!recs)
		return false;
	SL_WRITE_ONCE(last_sweep_us, pl_now_us());
	if (SL_READ_ONCE(npend))
		reap_pending();
	again = sweep_from(only);
	if (errno != saved_errno)
		errno = saved_errno;
	return again || SL_READ_ONCE(npend);
}

void pl_sweep(void)
{
	uint64_t now = pl_now_us(), last;
	bool first = SL_READ_ONCE(swept_never);
	int saved_errno;

	/* A sandboxed process may not ask names (connect) or test locks: it leaves
	 * dead processes' sockets to the others on the stack (os.h). */
	if (!recs || sl_sys_sandboxed ||
	    (!first && now - SL_READ_ONCE(last_sweep_us) < PL_SWEEP_US))
		return;
	SL_WRITE_ONCE(swept_never, false);
	SL_WRITE_ONCE(last_sweep_us, now);
	saved_errno = errno;
	if (SL_READ_ONCE(npend))
		reap_pending();
	/*
	 * The stack's sweep: whoever finds the last one PL_SWEEP_US old (or
	 * in the future: a scribbled or reset time only brings the next one
	 * forward) and moves it to now.  A process that lost notes the
	 * winner's time, and looks again PL_SWEEP_US after it.  A process
	 * without a record of its own sweeps on its own time, as before: the
	 * others' sweeps, one probe a record, would not see such a process
	 * die, its own looks at every socket do.
	 */
	last = sl_load_acquire(&hdr->last_sweep_us);
	/* A program's first look sweeps whatever the stack's time says: a
	 * server killed just after another process's sweep still holds its
	 * listener, and a client started now would be let in and reset
	 * where the kernel refuses it. */
	if (first || reg_full || (now - last >= PL_SWEEP_US &&
				  sl_cmpxchg(&hdr->last_sweep_us, &last, now)))
		sweep();
	else if (now - last < PL_SWEEP_US)
		SL_WRITE_ONCE(last_sweep_us, last);
	if (errno != saved_errno)
		errno = saved_errno;
}

/* True: a dead process's close waits for a stopped lock holder (its
 * record is LIVE again with its lock byte free: the next sweep). */
static bool sweep(void)
{
	return sweep_from(-1);
}

/*
 * only >= 0: the watcher saw that record's process end (its pidfd), and
 * looks at that record alone, not at every live record's lock (a system
 * call each: a forking server's children, ended one a connection, made
 * the watcher's sweeps O(processes) each).  Another death has its own
 * pidfd, and every process's own sweeps still look at all.
 */
static bool sweep_from(int only)
{
	uint32_t me = (uint32_t)sl_self_pid();
	int dead[SL_FDREC_PROCS], n = 0;
	bool redo[SL_FDREC_PROCS], unrec = false, again = false;
	int from = only >= 0 && only < SL_FDREC_PROCS ? only : 0;
	int to = only >= 0 && only < SL_FDREC_PROCS ? only + 1 : SL_FDREC_PROCS;

	if (sweep_probe < 0) {
		sweep_probe = sl_sys_fd_high(open(recs_path, O_RDONLY | O_CLOEXEC));
		if (sweep_probe < 0)
			return false;
	}
	/*
	 * One probe a process: has any died (its record's lock dropped)?
	 * Ours to sweep for if we take its sweeper word (another sweeper
	 * may have it already); a sweeper found dead is replaced, and its
	 * sweep done again looking at every record.
	 */
	for (int i = from; i < to; i++) {
		uint32_t st = SL_READ_ONCE(hdr->procs[i].state), sw;

		if (i == reg_slot || (st != SL_FDPROC_LIVE && st != SL_FDPROC_SWEPT) ||
		    (st == SL_FDPROC_LIVE && !lock_free_at(sweep_probe, PL_PROC_LOCK_BASE + i)))
			continue;
		sw = SL_READ_ONCE(hdr->procs[i].sweeper);
		if (sw == me || (sw && !sl_pid_dead((pid_t)sw)) ||
		    !sl_cmpxchg(&hdr->procs[i].sweeper, &sw, me))
			continue;
		/* The process record's state is read again: it may have been
		 * freed and taken by a new process meanwhile. */
		if (SL_READ_ONCE(hdr->procs[i].state) != st ||
		    (st == SL_FDPROC_LIVE && !lock_free_at(sweep_probe, PL_PROC_LOCK_BASE + i))) {
			uint32_t mine = me;

			sl_cmpxchg(&hdr->procs[i].sweeper, &mine, sw);
			continue;
		}
		sl_store_release(&hdr->procs[i].state, SL_FDPROC_SWEPT);
		redo[n] = st == SL_FDPROC_SWEPT || sw;
		dead[n++] = i;
	}
	if (!n) {
		/* No process record of our own: our sockets are shared, and
		 * another such process's death is seen only here. */
		if (reg_full)
			sweep_shared();
		return false;
	}
	pl_debug("%d process(es) of the stack gone: looking at their sockets", n);
	for (int k = 0; k < n; k++) {
		struct sl_fdproc *pr = &hdr->procs[dead[k]];

		unrec |= SL_READ_ONCE(pr->making) != 0;
		if (!sweep_proc(dead[k], redo[k])) {
			/* Again at the next sweep: its lock byte is free. */
			sl_store_release(&pr->state, SL_FDPROC_LIVE);
			sl_store_release(&pr->sweeper, 0);
			dead[k] = -1;
			again = true;
		}
	}
	sweep_shared();
	/* A socket made but not yet recorded is on no list. */
	if (unrec)
		sweep_unrecorded();
	for (int k = 0; k < n; k++)
		if (dead[k] >= 0) {
			SL_WRITE_ONCE(hdr->procs[dead[k]].head, 0);
			SL_WRITE_ONCE(hdr->procs[dead[k]].sweeper, 0);
			sl_store_release(&hdr->procs[dead[k]].state, SL_FDPROC_FREE);
		}
	return again;
}

/* Exit: close this process's Sluice sockets as the kernel closes fds.  No
 * synchronize_rcu() here: urcu may be torn down already. */
SL_FORKTEXT void pl_fdtable_close_all(void)
{
	struct pl_table *t = table;

	if (!t) {
		proc_unregister();
		return;
	}
	for (unsigned int fd = 0; fd < t->n; fd++) {
		struct pl_sock *ps = t->slot[fd];

		if (!ps)
			continue;
		t->slot[fd] = NULL;
		pl_libc.close((int)fd);
		if (ps->kfd)
			kfd_reap(ps);
		else
			reap(ps->sd, SL_READ_ONCE(ps->priv));
	}
	/* Closes a stopped lock holder kept us from: our record stays, and
	 * its lock goes with us, so the next process to sweep sees a death
	 * and closes them. */
	if (SL_READ_ONCE(npend) || (reg_slot >= 0 && SL_READ_ONCE(hdr->procs[reg_slot].head)))
		return;
	proc_unregister();
}

/* The socket a placeholder fd is: N of the name it is bound to,
 * fd_path/pN (place_bind()); -1 if it is none of ours. */
static long placeholder_sd(int fd)
{
	struct sockaddr_un a;
	socklen_t len = sizeof(a);
	char want[sizeof(a.sun_path) + 8];
	int n, saved_errno = errno;
	const char *num;
	long sd = -1;

	if (!REAL(getsockname)(fd, (struct sockaddr *)&a, &len) && a.sun_family == AF_UNIX &&
	    len > offsetof(struct sockaddr_un, sun_path) && len <= sizeof(a)) {
		a.sun_path[len - offsetof(struct sockaddr_un, sun_path) - 1] = '\0';
		n = snprintf(want, sizeof(want), PL_FD_PREFIX "%s/" PL_PLACE_NAME, pl_cfg.stack);
		num = a.sun_path + n;
		if (n > 0 && !strncmp(a.sun_path, want, (size_t)n) && *num &&
		    strspn(num, "0123456789") == strlen(num) && strlen(num) < 11)
			sd = strtol(num, NULL, 10);
	}
	errno = saved_errno;
	return sd;
}

bool pl_fd_adopt(int fd)
{
	char link[128], path[64];
	struct pl_sock *ps;
	struct sl_stack *s;
	ssize_t n;
	long sd;
	int fl;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	if (!strcmp(link, "anon_inode:[sluice-sock]"))
		return !pl_is_sluice(fd) && kfd_adopt(fd);
	/* A placeholder is a socket bound to pN in the stack's directory
	 * (place_bind()). */
	if (strncmp(link, "socket:[", 8) || pl_is_sluice(fd))
		return false;
	sd = placeholder_sd(fd);
	if (sd < 0 || !pl_stack() || !(s = pl_sl()))
		return false;
	/* The name says the socket; the record says it is live. */
	fl = REAL(fcntl)(fd, F_GETFL);
	if (sd >= nrec || fl < 0 ||
	    rec_state((uint32_t)sd) != SL_FDREC_USED ||
	    sl_sock(s, (uint32_t)sd)->kp.gen != SL_FDREC_GEN(recs[sd].key))
		return false;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return false;
	ps->sd = (uint32_t)sd;
	ps->gen = SL_FDREC_GEN(recs[sd].key);
	ps->type = (int)recs[sd].type;
	ps->v6 = pl_sd_v6((uint32_t)sd);
	ps->v6only = ps->v6 && pl_sd_v6only((uint32_t)sd);
	ps->refs = 1;
	ps->nonblock = fl & O_NONBLOCK;
	ps->used = true;
	if (table_set(fd, ps)) {
		free(ps);
		return false;
	}
	pl_debug("adopted fd %d as socket %u", fd, (unsigned int)sd);
	return true;
}

/* After exec: fds of our stack's placeholder file are our sockets. */
void pl_fdtable_inherit(void)
{
	struct dirent *e;
	DIR *d;

	d = opendir("/proc/self/fd");
	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		/* O_ASYNC stays on the description across exec: the image
		 * before's files went with it (async.c). */
		if (pl_fd_adopt(fd))
			pl_async_inherit(fd);
	}
	closedir(d);
}

SL_FORKTEXT void pl_fdtable_atfork_child(void)
{
	/* Another thread may have held it at fork(): the child has one thread. */
	pthread_mutex_init(&table_mu, NULL);
	pthread_mutex_init(&reap_mu, NULL);
	pthread_mutex_init(&probe_mu, NULL);
	pthread_mutex_init(&priv_mu, NULL);
	pthread_mutex_init(&cache_mu, NULL);
	pthread_mutex_init(&keep_mu, NULL);
	/* Files kept for the parent's calls in flight are the parent's. */
	kfd_unkeep(NULL, -1);
	/* The parent emptied its cache before the fork (pl_fd_share_all());
	 * one kept by a close() racing it is the parent's description. */
	for (unsigned int i = 0; ncache && i < PL_CACHE; i++) {
		int fd = cache_drop_locked(i);

		if (fd >= 0)
			pl_libc.close(fd);
	}
	npend = 0;	/* the parent's to close; its records stay used */
	/* One thread: no fork under way here.  The parent made its private
	 * sockets shared before the fork (pl_fd_fork_begin()), or makes one
	 * it was making meanwhile shared right after (fork_since()). */
	fork_busy = 0;
	npriv = 0;
	/* The parent's calls in flight are not the child's: it has only the
	 * thread that forked, which is in none (nor are the parent's
	 * waiting releases).  Written only where not right already: each
	 * page of the heap written after fork() is a copy-on-write fault. */
	if (table)
		for (unsigned int fd = 0; fd < table->n; fd++) {
			struct pl_sock *ps = table->slot[fd];

			if (ps && ps->calls)
				ps->calls = 0;
			if (ps && ps->priv)
				ps->priv = false;
		}
	/* A record of its own: the parent's description is the parent's. */
	if (reg_fd >= 0) {
		int at = reg_fd;

		reg_fd = reg_slot = -1;
		proc_register(at);
	}
}

void pl_stack_files_chown(uid_t uid)
{
	struct sl_stack *s = pl_sl();
	struct dirent *e;
	DIR *d;
	int fd;

	if (!s || s->module_backed)
		return;		/* a module's stack: its fds are open already */
	if (s->region_fd >= 0 && fchown(s->region_fd, uid, (gid_t)-1))
		pl_debug("cannot give the stack to uid %u: %s", (unsigned int)uid,
			 strerror(errno));
	if (!fd_path[0])
		return;
	/* The directory (the placeholders', whose FIFOs the user must open)
	 * and the records in it. */
	for (int i = 0; i < 2; i++) {
		const char *path = i ? recs_path : fd_path;

		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fchown(fd, uid, (gid_t)-1))
			pl_debug("cannot give %s to uid %u: %s", path, (unsigned int)uid,
				 strerror(errno));
		pl_libc.close(fd);
	}
	/* And the shared sockets' names made so far (place_bind()): a
	 * connect() to one needs write permission on it. */
	d = opendir(fd_path);
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, PL_PLACE_NAME, sizeof(PL_PLACE_NAME) - 1) &&
		    fchownat(dirfd(d), e->d_name, uid, (gid_t)-1, AT_SYMLINK_NOFOLLOW))
			pl_debug("cannot give placeholder %s to uid %u: %s", e->d_name,
				 (unsigned int)uid, strerror(errno));
	if (d)
		closedir(d);
}
