/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libsluice-preload.so: the BSD sockets API of unmodified programs, on a
 * Sluice stack.  One file a call family (socket.c, io.c, fd.c, poll.c,
 * epoll.c); init.c finds the real libc functions and the stack, fdtable.c
 * keeps the fd -> Sluice socket table (urcu-bp) and the placeholder files.
 *
 * Every wrapper hands fds that are not Sluice sockets straight to libc.
 * Native calls return -errno; pl_ret() turns that into errno, in one place.
 */
#ifndef SLUICE_PRELOAD_H
#define SLUICE_PRELOAD_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "os/os.h"
#include "api/api.h"

/* The real libc functions, resolved once (init.c). */
struct pl_libc {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*shutdown)(int, int);
	int (*close)(int);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
			    const sigset_t *);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*sendfile64)(int, int, off64_t *, size_t);
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	int (*setuid)(uid_t);
	int (*seteuid)(uid_t);
	int (*setreuid)(uid_t, uid_t);
	int (*setresuid)(uid_t, uid_t, uid_t);
	/* files.c */
	off_t (*lseek)(int, off_t, int);
	off64_t (*lseek64)(int, off64_t, int);
	ssize_t (*pread)(int, void *, size_t, off_t);
	ssize_t (*pread64)(int, void *, size_t, off64_t);
	ssize_t (*pwrite)(int, const void *, size_t, off_t);
	ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
	ssize_t (*preadv)(int, const struct iovec *, int, off_t);
	ssize_t (*preadv64)(int, const struct iovec *, int, off64_t);
	ssize_t (*pwritev)(int, const struct iovec *, int, off_t);
	ssize_t (*pwritev64)(int, const struct iovec *, int, off64_t);
	ssize_t (*preadv2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*preadv64v2)(int, const struct iovec *, int, off64_t, int);
	ssize_t (*pwritev2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*pwritev64v2)(int, const struct iovec *, int, off64_t, int);
	int (*posix_fadvise)(int, off_t, off_t, int);
	int (*fallocate)(int, int, off_t, off_t);
	int (*flock)(int, int);
	int (*fstat)(int, struct stat *);
	int (*fstat64)(int, struct stat64 *);
	int (*fstatat)(int, const char *, struct stat *, int);
	int (*fstatat64)(int, const char *, struct stat64 *, int);
	int (*statx)(int, const char *, int, unsigned int, struct statx *);
	ssize_t (*splice)(int, off64_t *, int, off64_t *, size_t, unsigned int);
	ssize_t (*tee)(int, int, size_t, unsigned int);
	ssize_t (*vmsplice)(int, const struct iovec *, size_t, unsigned int);
	ssize_t (*copy_file_range)(int, off64_t *, int, off64_t *, size_t, unsigned int);
};
extern struct pl_libc pl_libc;
/*
 * A buffer no process can own: in the null page, wrapping, or reaching
 * into the kernel's half.  A call given one is EFAULT, as the kernel
 * answers, found without touching it (issue 24: it used to be a SIGSEGV
 * in the library).  Other bad pointers (unmapped, PROT_NONE) are found
 * by touching them (pl_readable(); io.c, buf_fault()).
 */
#define PL_USER_TOP	((uintptr_t)1 << 56)
/* Linux's MAX_RW_COUNT: the most one read or write moves (INT_MAX, cut to
 * a page); longer lengths are cut to it. */
#define PL_MAX_RW	((size_t)0x7ffff000)
static inline bool pl_bad_buf(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;

	return len && (a < 4096 || a + len < a || a + len > PL_USER_TOP);
}

/* An interposed call: exported (the map file lists it). */
#define EXPORT __attribute__((visibility("default")))

/* The real function; resolves libc first if a wrapper runs before the
 * library's constructor (another library's constructor may). */
#define REAL(f)	(*(__builtin_expect(pl_libc.f != NULL, 1) ? pl_libc.f : (pl_init(), pl_libc.f)))

/* A new stack's socket slots unless SLUICE_MAX_SOCKETS says otherwise:
 * 0, the library's default (sluice_stack_config). */
#define PL_MAX_SOCKETS	0

/* Settings from the environment (README, "sluice run"). */
struct pl_config {
	char stack[SLUICE_NAME_MAX];	/* SLUICE_STACK */
	unsigned int spin_us;		/* SLUICE_SPIN_US */
	/* How many threads of the stack may spin at once: the CPUs online,
	 * read at start (a sandbox may not read them later). */
	unsigned int spinners;
	unsigned int cpus;	/* online at start (sysconf) */
	bool spin_set;			/* given, not derived (init.c) */
	uint32_t wake_ns;		/* SLUICE_WAKE_NS: a wake-up's cost (sluice run) */
	bool disabled;			/* SLUICE_DISABLE=1: everything in the kernel */
	bool udp;			/* SLUICE_UDP (default 1) */
	bool loopback;			/* SLUICE_LOOPBACK (default 1): 127/8 on the stack */
	bool loopback_set;		/* ... given explicitly (else 0 on a device stack) */
	bool kernel_listen;		/* SLUICE_KERNEL_LISTEN (default 1): kernel twins (twin.c) */
	bool sock_cache;		/* SLUICE_SOCKET_CACHE (default 1): keep placeholders (fdtable.c) */
	bool handoff;			/* SLUICE_HANDOFF (default 1): live hand-off (socket.c) */
	bool exec_handoff;		/* SLUICE_EXEC_HANDOFF (default 1): at an exec (spawn.c) */
	bool away;			/* SLUICE_AWAY_TIMER (default 1): away.c's thread */
	bool inet6;			/* SLUICE_INET6 (default 1): AF_INET6 sockets in the stack */
	bool inet6_native;		/* SLUICE_INET6_NATIVE (default 1): on IPv6 addresses too */
	/* SLUICE_ADDR6=addr/len: the stack's IPv6 address (plen6 0: none). */
	uint8_t addr6[16];
	unsigned int plen6;
	bool debug;			/* SLUICE_DEBUG=1: say what happens on stderr */
	char tap[32];			/* SLUICE_TAP: a TAP device as this process's link */
	char ifname[16];		/* SLUICE_IFNAME: a new stack's device (kring link) */
	uint32_t addr, mask, gateway;	/* SLUICE_ADDR=a.b.c.d/len, SLUICE_GATEWAY */
	unsigned int mtu;		/* SLUICE_MTU */
	unsigned int max_sockets;	/* SLUICE_MAX_SOCKETS: a new stack's socket slots */
	unsigned int n_bufs;		/* SLUICE_BUFS: a new stack's packet buffers */
};
extern struct pl_config pl_cfg;

/*
 * One Sluice socket as this process sees it: one a placeholder open file
 * description (fdtable.c), shared by every fd dup()ed from it.  The
 * fields below @refs are settings the socket had before anything was
 * done with it, replayed on a kernel socket if it falls back (socket.c).
 */
/* Options kept for a hand-over to the kernel: 8 bytes each in every
 * socket of the process, so few. */
#define PL_OPTS_KEPT	6

/* How many IPPROTO_IPV6 options an AF_INET6 socket of the stack keeps
 * (socket.c, v6_kept[]: its length, checked there). */
#define PL_V6_KEPT	12

struct pl_sock {
	uint32_t sd;			/* index in the stack's socket table */
	uint32_t gen;			/* the slot's generation when we took it */
	int type;			/* SOCK_STREAM or SOCK_DGRAM */
	int refs;			/* table slots + callers in flight (atomic) */
	/* Blocking calls in flight (low bits) and releases waiting for them
	 * (PL_CALLS_REL each: a close() of one of its fds meanwhile); atomic,
	 * pl_call_begin(). */
	int calls;
	/* O_NONBLOCK of the open file description: any thread may set it
	 * (SL_READ_ONCE/SL_WRITE_ONCE). */
	bool nonblock;
	bool kfd;			/* the fd is the module's socket fd (SOCK_FD) */
	bool used;			/* bound, connected or sent on: no fallback */
	/* No other process can hold its description: no lock, no probe at
	 * close (fdtable.c, "Private sockets"); cleared once, under table_mu. */
	bool priv;
	/* Its description is a kept one of the placeholder cache (fdtable.c,
	 * "Socket cache"): that entry's index + 1, 0: none; nocache: the
	 * program set what a description keeps (O_ASYNC, an owner, a
	 * lease...), so it is not kept for the next socket. */
	int cache;
	bool nocache;
	/* Put in an epoll set (a module socket fd): no keeper made for it
	 * at close unless its sets' items can be taken out first
	 * (fdtable.c, pl_kfd_parkable()). */
	bool epolled;
	/* A module socket fd's file may be held by another process: it was
	 * adopted (SCM_RIGHTS, exec), sent, or made before a fork, exec or
	 * spawn began (kgen: pl_fd_share_all()'s count when it was made). */
	bool kshared;
	unsigned int kgen;
	bool reuseaddr, reuseport, nodelay, keepalive;
	/* An AF_INET6 socket talking IPv4 (the stack's SL_SF_V6, read when
	 * the fd is made): addresses in and out are sockaddr_in6, v4-mapped
	 * (socket.c, "AF_INET6"). v6only: IPV6_V6ONLY as the program set it
	 * (always 0 here: 1 makes it the kernel's); mapped_any: bound to
	 * ::ffff:0.0.0.0, which getsockname() shows so (not ::). */
	bool v6, v6only, mapped_any;
	/* IPPROTO_IPV6 options without effect on IPv4 traffic (Linux's
	 * neither), kept for getsockopt and a kernel socket it may become:
	 * the value the kernel read back, bit i of v6set says set (socket.c,
	 * v6_kept[]). */
	uint16_t v6set;
	int v6opt[PL_V6_KEPT];
	/* The kernel twin's fd + 1 (twin.c), 0: none.  Any thread may
	 * read it; set at bind() or listen(), cleared by pl_twin_close(). */
	int twin;
	bool twin_shut;			/* ... shut down since it listened (twin.c) */
	/* ... is the module's reservation of the port (pl_twin_adopt()):
	 * an exec or spawn does not hand it over (socket.c, exec_kind()). */
	bool twin_resv;
	/* Fds of this process that name it (table slots; fdtable.c,
	 * table_mu): its twin goes with the last. */
	int nfd;
	int rcvbuf, sndbuf;		/* 0: never set */
	/* O_ASYNC (async.c): this process's async bell for it, fd + 1 (0:
	 * none), its files' record + 1, the process that made it, its
	 * bells[] entry and generation; under async.c's mutex. */
	int async_fd;
	/* Record locks (fd.c, sock_lock()): this process's description of
	 * the socket's lock file, fd + 1 (0: none yet). */
	int lock_fd;
	int async_rec;
	uint32_t async_pid;
	int async_slot;
	uint32_t async_gen;
	struct linger linger;
	struct timeval rcvtimeo, sndtimeo;
	/* connect() was called on it: options are no longer logged. */
	bool connecting;
	/* Int options the stack took before it connected (TCP_MAXSEG,
	 * IP_TTL, TCP_KEEPIDLE, ...), the last value of each, replayed on
	 * the kernel socket it may become (pl_opts_to_kernel()); one more
	 * than fits is not kept (lib/preload/README.md, "Kernel peers"). */
	/* Handed to the kernel by another process, which did not give its
	 * kernel socket (pl_ho_take()): not asked again. */
	bool ho_failed;
	uint8_t nopts;
	struct pl_opt {
		int val;
		uint8_t level, name;	/* all of those levels' names fit */
	} opts[PL_OPTS_KEPT];
};

#define PL_CALLS_REL	0x10000
#define PL_CALLS_INFL	0xffff
/*
 * A blocking call on ps begins and ends.  As on Linux, where a call holds
 * the file, a close() from another thread meanwhile does not end the
 * socket under it: the call goes on (to its data, its timeout or its
 * error), and the release that close() would have made is made when the
 * last such call ends.
 */
void pl_call_begin(struct pl_sock *ps);
void pl_call_end(struct pl_sock *ps);

/* ---- init.c ---- */
void pl_init(void);			/* libc and configuration; cheap after once */
/*
 * A vfork()ed child (or a clone without fork handlers) shares the parent's
 * memory, so it must not touch the table: its close/dup2/close_range go
 * straight to the kernel (posix_spawn and Python's subprocess do that).
 */
bool pl_vfork_child(void);
/* urcu-bp's fork handlers, called only while another thread has used
 * urcu (fdtable.c). */
void pl_rcu_fork_begin(void);
void pl_rcu_fork_parent(void);
void pl_rcu_fork_child(void);
/* ---- spawn.c ---- */
bool pl_vfork_maybe(void);		/* a vfork() of ours may be under way */
/* The process's stack, attached (or created) on first use; NULL if none. */
struct sluice_stack *pl_stack(void);
struct sl_stack *pl_sl(void);		/* the same, as the library's own handle */
/* One of the library's own descriptors (its process record, its probe, the
 * stack's region or device, the link's): a program's close_range() and
 * closefrom() leave them open (fd.c). */
bool pl_fd_is_own(int fd);
/* The library's lock probes (fdtable.c), kept open: close() says EBADF
 * for them, as for a number not open; a dup2() onto one makes the
 * library forget it (pl_fd_probe_lost()) and open another. */
bool pl_fd_is_probe(int fd);
void pl_fd_probe_lost(int fd);

/* Bells (bell.c; run/bell.c): a thread's socket that other processes ring
 * when its Sluice sockets change while it sleeps in the kernel on Sluice
 * and kernel fds at once (poll, select, epoll). */
bool pl_bell_usable(struct sl_stack *s);
int pl_bell_fd(void);			/* this thread's, or -1 */
uint32_t pl_bell_tid(void);
uint32_t pl_bell_id(void);		/* this thread's bell's, never 0 */
void pl_bell_drain(int fd);
bool pl_bell_is(int fd);		/* a bell of any thread of ours */
void pl_bell_lost(int fd);		/* its number is being taken (dup2) */
void pl_bell_atfork_child(void);
/* O_ASYNC (async.c): the socket's async bell and event files armed (on)
 * at the program's fd with its owner and signal, or ended (0 or -errno);
 * the owner and signal copied again after F_SETOWN, F_SETOWN_EX or
 * F_SETSIG; the files ended with the last fd of the socket here; an fd
 * that is one of them, and its number taken by a dup2(); fork. */
int pl_async_setfl(int fd, struct pl_sock *ps, bool on);
void pl_async_owner(int fd, struct pl_sock *ps);
void pl_urg_owner(int fd, struct pl_sock *ps);	/* F_SETOWN*: SIGURG's owner */
void pl_async_release(struct pl_sock *ps);
void pl_async_inherit(int fd);	/* after exec: armed again if it was */
/* Record locks (fd.c): socket sd's lock file opened (fdtable.c), or -1;
 * an fd of the socket closed here (last: the socket's last fd here). */
int pl_fd_lock_file(uint32_t sd);
void pl_sock_locks_close(struct pl_sock *ps, bool last);
bool pl_async_is(int fd);
void pl_async_lost(int fd);
void pl_async_atfork_prepare(void);
void pl_async_atfork_parent(void);
void pl_async_atfork_child(void);
/*
 * A sleep with this thread's bell: pl_bell_begin() registers it for wait
 * channel chan (-1: any change) and returns its fd to sleep on, or -1 (no
 * bell: sleep in slices); then the caller's last look at the Sluice side,
 * under the stack lock; pl_bell_end() after the sleep (rang: it was
 * readable, drain it).  pl_bell_sleep_ms(): how long such a sleep may be.
 */
/* EPOLLEXCLUSIVE items a set sleeps on exclusively (epoll.c). */
#define PL_EP_XMAX	4
/* A bell's registration: an entry per wait channel (run/bell.c), or one
 * for any change, and one per exclusive item; n 0: none. */
struct pl_bellreg {
	unsigned int n;
	int fd;
	int idx[SL_WAITV_MAX + PL_EP_XMAX];
	uint32_t gen[SL_WAITV_MAX + PL_EP_XMAX];
};
struct pl_waiter;
/* Register this thread's bell for the wait channels of the sockets chans
 * names (distinct, at most SL_WAITV_MAX; nchan 0 and nx 0: any change),
 * and as one of the exclusive waiters of each of the nx sockets xsds
 * names (EPOLLEXCLUSIVE items, at most PL_EP_XMAX: one of their waiters
 * is woken a change, run/bell.c): its fd, or -1 (no bell: sleep in
 * slices). */
int pl_bell_begin(const int *chans, unsigned int nchan, const int *xsds, unsigned int nx,
		  struct pl_bellreg *reg);
void pl_bell_end(struct pl_bellreg *reg, bool rang);
int pl_bell_sleep_ms(const struct pl_waiter *w);
/* epoll_event.data of a bell in a set: never reported to the program. */
#define PL_BELL_TAG	0x534c424c00000000ull
/* SIGPIPE was ignored when the process sandboxed itself (creds.c). */
extern bool pl_sigpipe_ignored;
/* errno for a native result: ret >= 0 passes through, -e sets errno = e. */
static inline long pl_ret(long ret)
{
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}
/*
 * SO_RCVTIMEO/SO_SNDTIMEO as a wait in ms: -1 (for ever) when zero; 0 (do
 * not wait) when set with a negative tv_sec, which Linux takes as a zero
 * timeout (sock_set_timeout()): kept as tv_usec -1 (PL_TIMEO_NOW).
 */
#define PL_TIMEO_NOW	(-1)
static inline int pl_timeo_ms(const struct timeval *tv)
{
	long long ms;

	if (tv->tv_usec == PL_TIMEO_NOW)
		return 0;
	if (!tv->tv_sec && !tv->tv_usec)
		return -1;
	ms = (long long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
	return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}
#define pl_debug(...)	do { if (pl_cfg.debug) pl_log(__VA_ARGS__); } while (0)
/* tapq.c: start the thread that reads this process's TAP queue while the
 * program is away from the library (none for a stack without a TAP link). */
void pl_tapq_start(struct sl_stack *s);
/* At exit: the server runs the stack no more (none is inside it after). */
void pl_tapq_stop(struct sl_stack *s);
/* away.c: who runs the stack's timers while the program is away.
 * pl_away_start(), s->tk_start: the thread made when a turn leaves a
 * deadline of this process's own sockets and nobody else keeps them;
 * pl_away_agent_open(), _fd(), _ring(): the agent's share on a module's
 * stack (the timer made at its start, its fd to poll, a ring run);
 * pausing the reader (an exec, the exit), resuming it (the exec failed). */
void pl_away_start(struct sl_stack *s);
void pl_away_agent_open(struct sl_stack *s);
int pl_away_agent_fd(struct sl_stack *s);
void pl_away_agent_ring(struct sl_stack *s, int fd);
void pl_away_pause(struct sl_stack *s);
void pl_away_resume(struct sl_stack *s);
void pl_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A detached library thread running FN(ARG) on a stack of STACK_SIZE bytes,
 * every signal blocked in it (the program's go to its own threads): 0
 * (the thread in *OUT if OUT), else pthread_create()'s error. */
int pl_thread_quiet(void *(*fn)(void *), void *arg, size_t stack_size, pthread_t *out);

/* ---- fdtable.c ---- */
/* A reference on fd's Sluice socket, or NULL for a kernel fd.  pl_put() it. */
struct pl_sock *pl_get(int fd);
void pl_put(struct pl_sock *ps);
/*
 * fd's socket ps was handed to the kernel by another process (its
 * record's ho_pid): switch fd (and its dups here) to that kernel socket
 * (socket.c).  True: fd is the kernel's now.
 */
bool pl_ho_take(int fd, struct pl_sock *ps);
static inline bool pl_ho_seen(const struct pl_sock *ps)
{
	return __builtin_expect(SL_READ_ONCE(sl_sock(pl_sl(), ps->sd)->ho_pid) != 0, 0);
}
/* pl_get() for a call the program makes on fd: NULL too when fd's
 * socket was handed to the kernel by another process and fd switched to
 * it now (the call is the kernel's). */
static inline struct pl_sock *pl_get_call(int fd)
{
	struct pl_sock *ps = pl_get(fd);

	if (ps && pl_ho_seen(ps) && pl_ho_take(fd, ps)) {
		pl_put(ps);
		return NULL;
	}
	return ps;
}
/* A call on ps came back with ret (nothing or an error): if its socket
 * was handed over meanwhile by another process (a live hand-off ended
 * it under this call), fd switches; true: make the call again on fd. */
static inline bool pl_ho_redo(int fd, struct pl_sock *ps, long ret)
{
	return ret <= 0 && pl_ho_seen(ps) && pl_ho_take(fd, ps);
}
/* Quick test without a reference (poll/select partitioning). */
bool pl_is_sluice(int fd);
/* sendfile() from a Sluice socket (files.c): -errno or the count. */
ssize_t pl_sendfile_from_sock(int out, int in, off64_t *off, size_t count);
/*
 * Give the new Sluice socket sd a placeholder fd; returns the fd or
 * -errno (the socket is closed on failure).  cloexec, nonblock: the
 * fd's flags.
 */
int pl_sock_install(uint32_t sd, int type, bool cloexec, bool nonblock);
/* fd was dup()ed to newfd (replacing whatever newfd was). */
void pl_fd_dup(int fd, int newfd, struct pl_sock *ps);
/* Another process may come to hold fds of this process (fork, exec,
 * spawn, clone, sandbox: all sockets) or fd (SCM_RIGHTS): private sockets
 * take their locks (fdtable.c).  begin/end bracket a fork or spawn. */
void pl_fd_share_all(void);
/* One more than the highest fd the table has room for (0: none). */
unsigned int pl_fd_top(void);
/* The fd table's lock, held across a spawn (socket.c): no fd of a socket
 * is closed, dup()ed onto or moved meanwhile. */
void pl_fd_table_lock(void);
void pl_fd_table_unlock(void);
void pl_fd_share(int fd);
/* Around socket() and accept() until the socket's record is made: a
 * process that dies meanwhile has its sockets without records looked for
 * in every slot (fdtable.c, "Lists").  begin returns what end takes. */
int pl_fd_making_begin(void);
void pl_fd_making_end(int slot);
bool pl_fd_any_private(void);
void pl_fd_fork_begin(void);
void pl_fd_fork_end(void);
/* Is a fork() under way (between those two)? */
bool pl_fd_forking(void);
/* Forget fd (before the real close()); returns its socket (a reference)
 * or NULL.  pl_sock_release() after the real close. */
struct pl_sock *pl_fd_forget(int fd);
/* close() of fd, ps's last fd here, before the real close: keep its
 * description for the next socket (fdtable.c, "socket cache"). */
void pl_fd_cache_keep(int fd, struct pl_sock *ps);
int pl_kfd_close(int fd, struct pl_sock *ps);
/* Will close(fd) of ps, a module socket fd whose last fd here is fd,
 * park its file (fdtable.c): no other holder anywhere that the library
 * could not see, an entry for it.  Its epoll items go first then. */
bool pl_kfd_parkable(const struct pl_sock *ps);
/* The fd that held ps is closed: if no fd anywhere holds its placeholder
 * any more, close the Sluice socket.  Drops the reference. */
void pl_sock_release(struct pl_sock *ps);
/* Do Sluice fds of this process poll in the kernel (module socket fds)? */
bool pl_kfds(void);
/*
 * Wait in the kernel on fds (Sluice socket fds and any others) with the
 * stack fd armed, so the stack's own events (kring packets) end it too;
 * at most ms.  Returns poll(2)'s result.
 */
int pl_kfd_sleep(struct pollfd *fds, nfds_t n, int ms);
/* A time on the stack's clock (µs) as wall-clock µs (fd.c): SO_TIMESTAMP
 * and SIOCGSTAMP. */
int64_t pl_stamp_real_us(uint64_t stamp_us);
/* Sweep sockets whose placeholders are gone (killed processes). */
void pl_sweep(void);
/* Open the stack's placeholder file (init.c, on attach): 0 or -errno. */
int pl_fdtable_open(struct sl_stack *s);
/* The death watcher (watch.c) and what it uses of fdtable.c: the
 * records mapped without a process record, their header and path, a
 * lock byte's look and taking, and a sweep now (true: to try again). */
int pl_fdtable_watch_open(struct sl_stack *s);
struct sl_fdhdr *pl_fd_hdr(void);
bool pl_fd_records_ours(void);
const char *pl_fd_recs_path(void);
bool pl_fd_lock_free(off_t off);
int pl_fd_lock_excl(int fd, off_t off);
bool pl_sweep_now(int only);
void pl_stack_adopt(struct sluice_stack *st);
/* A watcher for the stack if none lives (at a program's first attach). */
void pl_watch_ensure(void);
/* The watcher's image: never returns. */
void pl_watch_main(const char *stack) __attribute__((noreturn));
/* Exit: close this process's Sluice sockets. */
void pl_fdtable_close_all(void);
/* fd holds a placeholder of our stack that this process did not make
 * (exec, SCM_RIGHTS): enter it in the table.  Returns whether it did. */
bool pl_fd_adopt(int fd);
/* Rebuild the table from inherited fds (after exec). */
void pl_fdtable_inherit(void);
void pl_fdtable_atfork_child(void);

/*
 * A stack listener's kernel twin moved from fd from to fd to (-1: lost) by
 * a dup2() onto its number (twin.c): returns whether a socket had it.
 */
bool pl_fd_twin_moved(int from, int to);

/* ---- twin.c: OS-backed listeners ---- */
/*
 * bind() of a stream socket: make its kernel twin, bound to sin (port 0:
 * the kernel's choice, written into sin), before the stack's bind.  0 (a
 * twin made, or none possible: the stack alone, as before) or
 * -EADDRINUSE (a kernel socket holds the port).
 */
int pl_twin_bind(struct pl_sock *ps, struct sockaddr_in *sin);
/* After the stack's bind() on a module's stack: the kernel socket that
 * reserves the port (sl_port_twin_fd()) becomes the twin, if ps has none. */
void pl_twin_adopt(struct pl_sock *ps);
/* May ps have a twin at laddr (pl_twin_usable(), or a module's stack
 * where a twin can be had there: twin.c)? */
bool pl_twin_usable_at(const struct pl_sock *ps, uint32_t laddr);
/* on: offer ps's twin, just bound, to the filter the stack's bind() is
 * about to add as its reservation (sl_filter_offer_fd); off, after that
 * bind: whether a filter took it (then ps->twin_resv). */
bool pl_twin_offer(struct pl_sock *ps, bool on);
/* listen(): the twin listens too, before the stack (0 or -EADDRINUSE);
 * pl_twin_listening() once the stack's listen() succeeded, else
 * pl_twin_stop(). */
int pl_twin_listen(struct pl_sock *ps, int backlog);
void pl_twin_listening(struct pl_sock *ps);
/* The away timer's fd (away.c) into this process's watcher's set, if a
 * watcher of this process runs: 1 if it is, 0 none runs, -1 the
 * watcher's lock is held (a fork under way): not now. */
int pl_twin_watch_tk(int fd);
void pl_twin_stop(struct pl_sock *ps);
/* A connection from the twin, if its watcher saw one come: the new
 * kernel fd, or -EAGAIN (none), or the kernel's -errno. */
int pl_twin_accept(struct pl_sock *ps, struct sockaddr *addr, socklen_t *lenp, int flags);
void pl_twin_close(struct pl_sock *ps);
/* A datagram from a datagram socket's twin, if its watcher saw one come
 * (sl_sock udp.os_ready): as sl_recvfrom_meta() (flags MSG_PEEK,
 * MSG_TRUNC; never waits), from the kernel's sender, or -EAGAIN. */
ssize_t pl_twin_recv(struct pl_sock *ps, void *buf, size_t len, int flags,
		     struct sockaddr_in *from, struct sl_rx_meta *meta);
/* A datagram socket connected (to, or AF_UNSPEC: disconnected): its twin
 * too, so it hears only that peer. */
void pl_twin_connect(struct pl_sock *ps, const struct sockaddr_in *to);
/* SO_ERROR of a datagram socket the stack has none for: its twin's
 * pending error (taken, as SO_ERROR takes it), or 0. */
int pl_twin_error(struct pl_sock *ps);
/* recvmsg(MSG_ERRQUEUE) of a datagram socket on its twin's error queue
 * (the ICMP errors of what the twin sent, queued with IP_RECVERR): the
 * kernel's answer into msg as it gives it, or -EAGAIN (no twin, none). */
ssize_t pl_twin_errq(struct pl_sock *ps, struct msghdr *msg, int flags);
/* pl_twin_recv() gave from->sin_family AF_INET6: the sender was IPv6
 * itself (a socket on ::); its address, cut to *lenp as Linux's. */
int pl_twin_from6(struct sockaddr *a, socklen_t *lenp);
/* IPv6 itself from a datagram socket on :: that has a twin (an AF_INET6
 * one): the twin sends it, the socket stays in the stack. */
ssize_t pl_twin_sendmsg6(struct pl_sock *ps, const struct msghdr *msg, int flags);
/* May ps have a kernel twin (SLUICE_KERNEL_LISTEN, a /dev/shm stack, no
 * sandbox)? */
bool pl_twin_usable(const struct pl_sock *ps);
/* A datagram socket about to send or connect unbound: bound here first,
 * to INADDR_ANY and a port the kernel picks, with its twin (socket.c),
 * so the port is held in the kernel too.  0 or -errno (the stack then
 * binds it alone, as before). */
int pl_dgram_autobind(struct pl_sock *ps);
/* A datagram the stack gives its twin to send (-EREMOTE: to this host,
 * where no stack socket is bound); to NULL: the connected peer.
 * -ENOTUNIQ: this process has no twin for it. */
ssize_t pl_twin_send(struct pl_sock *ps, const void *buf, size_t len, int flags,
		     const struct sockaddr_in *to);
/* An option the stack took, set on a bound or listening socket: on its
 * twin too (a kernel connection inherits its listener's options). */
void pl_twin_setopt(struct pl_sock *ps, int level, int name, const void *val, socklen_t len);
bool pl_twin_is(int fd);		/* a twin, or the watcher's set */
void pl_twin_lost(int fd);		/* its number is being taken (dup2) */
/* fork(): a watcher just made has started before the fork (twin.c);
 * watch_mu is held across it. */
void pl_twin_atfork_prepare(void);
void pl_twin_atfork_parent(void);
void pl_twin_atfork_child(void);
/* A forked child holding twins has no watcher yet: the waits start one. */
extern bool pl_twin_unwatched;
void pl_twin_watch(void);
static inline void pl_twin_watch_check(void)
{
	if (__builtin_expect(SL_READ_ONCE(pl_twin_unwatched), 0))
		pl_twin_watch();
}

/* ---- socket.c ---- */
/* Is stack socket sd an AF_INET6 one (SL_SF_V6)? */
static inline bool pl_sd_v6(uint32_t sd)
{
	struct sl_stack *s = pl_sl();

	return s && (SL_READ_ONCE(sl_sock(s, sd)->flags) & SL_SF_V6);
}
/* ... and IPv6 only (IPV6_V6ONLY: SL_SO_V6ONLY, inherited by accepted
 * sockets, seen again after exec and SCM_RIGHTS)? */
static inline bool pl_sd_v6only(uint32_t sd)
{
	struct sl_stack *s = pl_sl();

	return s && (SL_READ_ONCE(sl_sock(s, sd)->opt_flags) & SL_SO_V6ONLY);
}
/* Has ps a port (Linux: inet_num)?  Bound, or connected (a port picked). */
bool pl_has_port(const struct pl_sock *ps);
/* A used AF_INET6 datagram socket bound to :: whose next destination is
 * IPv6 itself: a kernel socket bound to the same port (socket.c).  0: fd
 * is the kernel's; -errno and *gone: neither (ps let go); else still the
 * stack's (ENETUNREACH). */
int pl_dgram_v6_handoff(int fd, struct pl_sock *ps, bool *gone);
/* IPV6_RECVPKTINFO on ps (an AF_INET6 datagram socket): its v4-mapped
 * datagrams come with IPV6_PKTINFO, before the IPv4 ones (io.c). */
bool pl_v6_recvpktinfo(const struct pl_sock *ps);
/* Is IPPROTO_IPV6 option name (one of those kept, socket.c) set non-zero? */
bool pl_v6_opt_on(const struct pl_sock *ps, int name);
/* A destination the stack cannot reach at all: a native IPv6 address on
 * an AF_INET6 socket (pl_dest(), and the other address readers). */
#define PL_NATIVE6	2
/* sendto()/sendmsg()'s address for datagram socket ps: 1 and *out (an
 * IPv4 destination), 0 (none), PL_NATIVE6, or -errno, as Linux reads it
 * for the socket's family. */
int pl_dest(const struct pl_sock *ps, const struct sockaddr *a, socklen_t len,
	    struct sockaddr_in *out);
/* An address for the program, as its socket's family shows it: sin as is
 * (AF_INET), or as a v4-mapped sockaddr_in6 (local: an unspecified local
 * address is ::, as Linux shows a socket bound to ::).  Returns the
 * length; out has room for a sockaddr_in6. */
socklen_t pl_addr_out(const struct pl_sock *ps, const struct sockaddr_in *sin, bool local,
		      void *out);
/* Copied to the program as Linux's move_addr_to_user(): cut to *lenp,
 * *lenp set to the whole length; 0, -EFAULT (a or lenp bad) or -EINVAL
 * (*lenp negative).  pl_put_raw(): klen bytes at k, as they are. */
int pl_put_addr(const struct pl_sock *ps, const struct sockaddr_in *sin, bool local,
		struct sockaddr *a, socklen_t *lenp);
int pl_put_raw(const void *k, socklen_t klen, struct sockaddr *a, socklen_t *lenp);
/* The program's address *a of len bytes copied into k, as Linux's
 * move_addr_to_kernel(): -EINVAL for a length below 0 or above 128,
 * -EFAULT if it cannot be read; then *a points at k. */
int pl_addr_in(const struct sockaddr **a, socklen_t len, struct sockaddr_storage *k);
/* Set the socket's SL_SF_NONBLOCK at the native level (all of ours are). */
void pl_native_nonblock(uint32_t sd);
/* Is this destination reached through the stack (from ps, if given)? */
bool pl_reachable(const struct pl_sock *ps, uint32_t daddr);
/* The options ps keeps for a kernel socket (SO_REUSEADDR, SO_REUSEPORT,
 * SO_KEEPALIVE, TCP_NODELAY, SO_RCVBUF, SO_SNDBUF, SO_LINGER) set on ks. */
void pl_opts_to_kernel(int ks, const struct pl_sock *ps);
/* fd becomes a kernel socket with ps's settings (ps still to be put). */
int pl_fallback(int fd, struct pl_sock *ps);
int pl_handoff(int fd, struct pl_sock *ps);
/* Before an exec of dirfd/path (path "": the file at dirfd; oflags
 * O_NOFOLLOW or 0) with envp (spawn.c): the sockets that stay open across
 * it go to the kernel if the program will not run under Sluice
 * (SLUICE_EXEC_HANDOFF, default 1): connections live, listeners and
 * datagram sockets as their twins, fresh ones as new kernel sockets. */
void pl_exec_handoff(int dirfd, const char *path, int oflags, char *const envp[]);
/*
 * posix_spawn() and posix_spawnp() (spawn.c): glibc's child execs inside
 * libc, where no wrapper runs, and shares our memory until it does.  So
 * the parent does it, around the spawn (socket.c, lib/preload/README.md
 * "At a spawn"): pl_spawn_begin() hands live connections off for good,
 * then puts at each fd of a listener or datagram socket its kernel twin,
 * and at a fresh socket's fd a new kernel socket, with the fd table held;
 * the child inherits those; pl_spawn_end() puts the stack's sockets back
 * and lets the table go.  path: the file as the exec will find it;
 * actions: file actions will run (a close-on-exec listener may be
 * dup2()ed into the child: its twin is put there too).  NULL: nothing
 * to undo.
 */
struct pl_spawn;
/* The same, in a vfork() child's own fds, before its exec (spawn.c): the
 * parent's memory left as it is. */
void pl_exec_vfork(int dirfd, const char *path, int oflags, char *const envp[]);
struct pl_spawn *pl_spawn_begin(const char *path, char *const envp[], bool actions);
void pl_spawn_end(struct pl_spawn *sp);

/* ---- agent.c ---- */
/* This process's hand-off agent (`sluice handoff PID FD`), once. */
void pl_agent_start(void);
/* Is fd the agent's socket (the library's own)?  Its number is about to be
 * taken: move it. */
bool pl_agent_is(int fd);
void pl_agent_lost(int fd);
/*
 * A socket other processes may hold (fork, SCM_RIGHTS) handed to the
 * kernel here (lib/preload/README.md, "Other processes"): the agent keeps
 * a copy of kernel socket ks for stack socket sd of generation gen (0;
 * -errno, no agent to give it: not to be published), drops it, and counts
 * hand-overs that will keep one (d +1 before, -1 after: a request meanwhile
 * waits for it).  pl_agent_tell(): msg to process pid's agent; SL_HO_GET
 * returns the kernel socket it gives (close-on-exec), or -errno.
 */
struct sl_ho_get;
int pl_agent_keep(uint32_t sd, uint32_t gen, int ks);
void pl_agent_drop(uint32_t sd, uint32_t gen);
void pl_agent_settle(uint32_t sd, uint32_t gen);	/* drop it unless others hold sd */
void pl_agent_pending(int d);
int pl_agent_tell(uint32_t pid, const struct sl_ho_get *msg);
void pl_agent_atfork_child(void);
/* Stack socket sd (generation gen), handed over by process pid, was let
 * go here: if no process holds it any more, pid's agent is told
 * (SL_HO_DROP), so its copy goes now rather than at its next look. */
void pl_ho_let_go(uint32_t pid, uint32_t sd, uint32_t gen);
/* The kernel socket a hand-over made of ps, carried by ps's own fd so
 * that it outlives this process (0 or -errno), and a copy of it taken
 * there by another holder (or -errno) (agent.c). */
int pl_ho_carry(int fd, const struct pl_sock *ps, int ks);
int pl_ho_fetch(int fd, const struct pl_sock *ps);
/* Must datagram socket ps, nothing done with it yet, become a kernel
 * socket to send to (or connect to) to?  Not reached by the stack, or an
 * address of this host where no stack socket is bound (a kernel one may
 * be: lib/preload/README.md, "Kernel peers"). */
bool pl_dgram_to_kernel(const struct pl_sock *ps, const struct sockaddr_in *to);
/* A bound TCP socket's kernel twin, taken from the library's own fds to
 * be the socket itself (connect() hands it to the kernel), or -1. */
int pl_twin_take(struct pl_sock *ps);

/* ---- io.c / poll.c ---- */
/*
 * Wait until ps shows one of events (POLLIN/POLLOUT) or an error, at most
 * timeout_ms (< 0: for ever).  0 when ready, -EAGAIN on timeout.
 */
int pl_wait(struct pl_sock *ps, short events, int timeout_ms);
/* Readiness (poll bits) of a Sluice socket right now. */
short pl_sock_revents(struct pl_sock *ps, short events);
/*
 * Wait on Sluice sockets: look without sleeping for SLUICE_SPIN_US, then
 * sleep in slices (the stack wakes sleepers; a slice ends so a signal is
 * noticed).  Returns the number ready, 0 on timeout, -EINTR if a signal
 * handler ran in this thread (if restartable: only one without SA_RESTART).
 */
int pl_sluice_wait(struct sluice_pollfd *p, unsigned int n, int timeout_ms, bool restartable);

/* ---- signal.c ---- */
unsigned int pl_sig_count(void);	/* handlers run in this thread */
bool pl_sig_take_restart(void);		/* did they all have SA_RESTART? (resets) */
/* Did every handler that ran since pl_sig_count() was sigs have SA_RESTART? */
bool pl_sig_restart_since(unsigned int sigs);
/* SIGSEGV and SIGBUS handled by the library too (the constructor). */
void pl_fault_init(void);
/* Can len bytes at p be read?  Touches them (a byte a page) with the
 * library's handler ready to catch a fault: no system call. */
bool pl_readable(const void *p, size_t len);
/* p..p+len may be written (one byte a page, written with
 * its own value: sl_uprobe_w()); the out-structures of a call. */
bool pl_writable(void *p, size_t len);
/* A receive buffer the kernel's access_ok() refuses (wrapping, or past
 * the user half): the rest, the null page too, is left to the stack's
 * checked copy, which faults where Linux's would (after the wait, with
 * the datagram taken).  Without the fault handler, pl_bad_buf(). */
bool pl_bad_dst(const void *p, size_t len);
/* Checked copies of a program's structures (core's sl_ucopy(), the
 * handler in signal.c): 0, or -EFAULT where the kernel's
 * copy_from_user()/copy_to_user() would fail, with no SIGSEGV in the
 * library.  Without the handler (pl_fault_armed false), plain copies. */
extern bool pl_fault_armed;
static inline int pl_copy_in(void *dst, const void *usrc, size_t n)
{
	if (pl_bad_buf(usrc, n))
		return -EFAULT;
	if (__builtin_expect(!pl_fault_armed, 0)) {
		memcpy(dst, usrc, n);
		return 0;
	}
	return sl_ucopy(dst, usrc, n) ? -EFAULT : 0;
}

static inline int pl_copy_out(void *udst, const void *src, size_t n)
{
	if (pl_bad_buf(udst, n))
		return -EFAULT;
	if (__builtin_expect(!pl_fault_armed, 0)) {
		memcpy(udst, src, n);
		return 0;
	}
	return sl_ucopy(udst, src, n) ? -EFAULT : 0;
}

/* Spin/sleep pacing shared by poll, select and epoll (poll.c). */
struct pl_waiter {
	uint64_t start_us;
	int64_t deadline_us;		/* -1: none */
	unsigned int rounds;
	unsigned int spin_us;		/* this wait's spin (pl_spin_us()) */
};
/* This thread's spin now, and a blocking wait that began at start_us
 * ended (poll.c: the spin adapts to how long waits last). */
unsigned int pl_spin_us(void);
unsigned int pl_spin_begin(void);
void pl_spin_tick(uint64_t now);
void pl_spin_end(void);
unsigned int pl_xyield_mask(void);
void pl_spin_note(uint64_t start_us);
void pl_waiter_init(struct pl_waiter *w, int timeout_ms);
/* How long one kernel sleep on module socket fds may last (ms, >= 1). */
int pl_kfd_slice(const struct pl_waiter *w);
int pl_waiter_slice(const struct pl_waiter *w, int cap_ms);
/* How long the next kernel wait may sleep (ms): 0 while spinning; false
 * when the deadline has passed. */
bool pl_waiter_next(struct pl_waiter *w, int *sleep_ms);
/* Spinning on a mixed set: ask the kernel about its part this round? */
bool pl_waiter_kernel(const struct pl_waiter *w);
uint64_t pl_now_us(void);
/* The ms from now to end_us (pl_now_us()'s clock), rounded up: 0 once
 * it has passed, so at least 1 before. */
static inline int pl_ms_until(uint64_t end_us)
{
	uint64_t now = pl_now_us();

	return now >= end_us ? 0 : (int)((end_us - now + 999) / 1000);
}
/* The side a mixed set sleeps on (poll.c): kernel if it was busy last. */
extern __thread bool pl_mixed_kernel_side;
void pl_mixed_note(int sluice_ready, int kernel_ready);

/* Remove fd from every emulated epoll set of this process (epoll.c). */
void pl_epoll_forget_fd(int fd);
/* fd, a module socket fd, is closed as its file's last holder: its items
 * in this process's real sets go now (EPOLL_CTL_DEL), as its file's end
 * would take them, so the module may park the file (epoll.c). */
void pl_epoll_kfd_last(int fd);
/* fd became a kernel socket: move it from the emulated part of every set
 * to the real epoll fd, with the same events and data. */
void pl_epoll_to_kernel(int fd);
/* Before fd's module socket fd is replaced by a kernel socket: the state
 * of its EPOLLONESHOT items in the kernel's sets, for pl_epoll_to_kernel(). */
void pl_epoll_before_kernel(int fd);
bool pl_epoll_is_emulated(int epfd);
void pl_epoll_close(int epfd);
/* After fork: no set is known to hold Sluice sockets alone any more. */
void pl_epoll_atfork(void);

/* _FORTIFY_SOURCE entry points (glibc declares them only internally). */
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *from, socklen_t *fromlen);
ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen);
int fcntl64(int fd, int cmd, ...);

/*
 * creds.c: a root process about to become user uid (its effective uid):
 * give the stack's /dev/shm files to uid first, so it can go on using the
 * stack (fdtable.c).
 */
void pl_stack_files_chown(uid_t uid);

#endif /* SLUICE_PRELOAD_H */
