/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * api/: the native API (include/sluice/sluice.h: stacks by name, socket
 * calls, readiness and waiting) and the per-stack helper process; this
 * header holds what the preload library and the tool need besides.
 */
#ifndef SLUICE_API_H
#define SLUICE_API_H

#include "link/link.h"

/*
 * Attach to stack name to look at it only (sluice dump, sluice stacks):
 * as sluice_stack_attach(), but a broken stack is attached too, so what
 * broke it can be shown.  Close with sluice_stack_close().
 */
int sl_stack_inspect(const char *name, struct sluice_stack **out);
/*
 * sluice_close(), but only if sd is still generation gen (its kp.gen),
 * checked under the lock; -EBADF if the slot was freed and handed out
 * again meanwhile.  -EAGAIN, nothing closed, if the lock's holder is
 * stopped (SIGSTOP): the caller tries again later, so that no close()
 * waits for another process to be continued.  For the preload's closes,
 * its own and on behalf of a process that is gone (the sweep).
 */
int sl_close_gen(struct sluice_stack *st, int sd, uint32_t gen);
/* sluice_sendto/sluice_recvfrom with what sendmsg's control messages ask
 * of a datagram, and what recvmsg's report of one (UDP; NULL: none). */
long sl_sendto_meta(struct sluice_stack *st, int sd, const void *buf, size_t len, int flags,
		    const struct sockaddr_in *to, const struct sl_tx_meta *tx);
long sl_recvfrom_meta(struct sluice_stack *st, int sd, void *buf, size_t len, int flags,
		      struct sockaddr_in *from, struct sl_rx_meta *meta);
/* recvmsg(MSG_ERRQUEUE): the oldest queued error (IP_RECVERR), its record
 * into *rec and the first len bytes of its quote into buf; the bytes
 * copied (*trunc if there were more), or -EAGAIN at once when the queue
 * is empty (Linux never waits on it). */
long sl_errq_recv(struct sluice_stack *st, int sd, void *buf, size_t len,
		  struct sl_errq_rec *rec, bool *trunc);
/*
 * Wait up to timeout_ms (running the stack meanwhile, as sluice_poll())
 * until the readiness journal (sl_region.chg_seq) is no longer at seen:
 * 1 if it moved, 0 on timeout, or -errno; with count, -EINTR once count()
 * moves from sigs (as sl_poll_signals()).  nchan > 0: the waiter's
 * sockets are all on the wait channels of the sockets chan_sds names
 * (distinct channels, at most SL_WAITV_MAX); it sleeps on those channels
 * and waits for the journal to name a socket of one of them, not any.
 */
int sl_wait_journal(struct sluice_stack *st, uint32_t seen, const int *chan_sds,
		    unsigned int nchan, int timeout_ms, unsigned int (*count)(void),
		    unsigned int sigs);
/*
 * sl_wait_journal() with stop: also done (1) once *stop moves from
 * stop_seen.  The caller that moves it then calls sl_wait_kick() with the
 * same channels, so a sleeper on them wakes to see it (an epoll_ctl from
 * another thread while a thread sleeps on the set).  group >= 0: seen is
 * the head of that watch group's ready ring (core.h, SL_EPW_RING), not
 * the journal's, and the wait is done once that head moves (every entry
 * of the ring is the waiter's).
 */
int sl_wait_journal_stop(struct sluice_stack *st, int group, uint32_t seen, const int *chan_sds,
			 unsigned int nchan, int timeout_ms, unsigned int (*count)(void),
			 unsigned int sigs, const uint32_t *stop, uint32_t stop_seen);
/*
 * sl_wait_journal_stop() for a set with exclusive items (EPOLLEXCLUSIVE):
 * xfds[nx] are their sockets (events, SLUICE_POLLEXCL), looked at each
 * round; the waiter sleeps as an exclusive waiter of each (woken one a
 * change, as a blocking accept(): sl_sock_wake_one()) and on chans for
 * its other sockets (nchan 0: it has none), all in one futex_waitv; 1
 * once one of xfds is ready.  With more words than one sleep takes, on
 * any change.
 */
int sl_wait_journal_excl(struct sluice_stack *st, int group, uint32_t seen, const int *chan_sds,
			 unsigned int nchan, struct sluice_pollfd *xfds, unsigned int nx,
			 int timeout_ms, unsigned int (*count)(void), unsigned int sigs,
			 const uint32_t *stop, uint32_t stop_seen);
/* Wake every exclusive sleeper of xfds' sockets (sl_wait_journal_excl()):
 * for a stop moved (an epoll_ctl on a set asleep on them). */
void sl_wait_kick_excl(struct sluice_stack *st, const struct sluice_pollfd *xfds, unsigned int nx);
/* The wait channels of fds's sockets, a socket of each (chan_sds[]), when
 * they are at most SL_WAITV_MAX: how many, else 0 (then: any change). */
unsigned int sl_poll_channels(const struct sluice_pollfd *fds, unsigned int n, int *chan_sds);
/* Wake whoever sleeps on the wait channels of chan_sds' sockets, on the
 * stack's wake_seq, or with a bell for those channels or any change, as a
 * readiness change on those channels would (no journal entry). */
void sl_wait_kick(struct sluice_stack *st, const int *chan_sds, unsigned int nchan);
/* sluice_poll() that also ends, -EINTR, once count() moves from seen (a
 * thread's signal count): a waiter that must see signals need not wake
 * in slices to look (run.h, sl_wait_word). */
int sl_poll_signals(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n,
		    int timeout_ms, unsigned int (*count)(void), unsigned int seen);
/* sl_poll_signals(), whose first sleep takes no look under the lock while
 * every socket is as this thread's last receive on it left it
 * (sl_rx_left_idle()): the look after the sleep is the first. */
int sl_poll_signals_idle(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n,
			 int timeout_ms, unsigned int (*count)(void), unsigned int seen);
/* sluice_poll(..., 0), but -EAGAIN when it could not look (the stack
 * lock's holder is stopped): a caller that consumed something to choose
 * what it asks (epoll's journal) keeps it for the next look. */
int sl_poll_look(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n);
/*
 * Without the lock: did this thread's last receive on sd leave the socket
 * with none of events (poll bits; errors and hangups always count) and
 * has nothing made it readier since (its wake sequence, which every gain
 * of readiness moves, is as that receive left it)?  Then *seq is that
 * sequence, and a look under the lock would find sd idle: an epoll set's
 * level-triggered item reported before its program drained it need not
 * be looked at again (preload/epoll.c, ep_collect()).  False when unsure.
 */
bool sl_rx_left_idle(struct sluice_stack *st, int sd, uint32_t events, uint32_t *seq);
/*
 * Without the lock: is sd (of generation gen) a TCP connection with data
 * queued and nothing else to tell, so that a look under the lock asking
 * for events (input only: POLLIN, POLLRDHUP, POLLPRI) would report POLLIN
 * alone?  False when unsure: the caller looks under the lock.
 */
bool sl_rx_ready(struct sluice_stack *st, int sd, uint32_t gen, uint32_t events);
/* sl_rx_left_idle() for each of fds' sockets and the events asked: if
 * all are idle, their revents cleared and true (a zero-timeout poll()
 * that would find nothing, answered without the lock). */
bool sl_poll_idle(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n);
/*
 * OS-backed listeners (lib/preload/twin.c): listener sd, if still of
 * generation gen, may have a connection waiting in its kernel twin.
 * SL_OSR_EDGE: one came (the twin's watcher saw it): the listener polls
 * readable and its waiters are woken as for a queued connection.
 * SL_OSR_MORE: one was just taken and more may wait: readable, and one
 * exclusive sleeper (a blocking accept()) woken to look.  SL_OSR_CLEAR:
 * about to look at the twin: not readable for it any more.  0 or -errno
 * (-EBADF: not that listener any more).
 */
#define SL_OSR_CLEAR	0
#define SL_OSR_EDGE	1
#define SL_OSR_MORE	2
/* A datagram socket (sd) got its twin: the stack's datagrams to this host
 * where no stack socket is bound are the twin's to send (-EREMOTE).  For
 * datagram sockets the other three say the same of a datagram waiting
 * in the twin. */
#define SL_OSR_TWIN	3
/* Its twin is gone (closed in this process): the stack sends alone. */
#define SL_OSR_NOTWIN	4
/* The twin has an error pending (SL_EV_ERR, waiters woken) / a call took
 * it. */
#define SL_OSR_ERR	5
#define SL_OSR_ERRTAKEN	6
/* Its error was taken but its error queue (IP_RECVERR) still holds one:
 * POLLERR stays, as Linux's datagram_poll() says, but a blocking call
 * does not end for it (SL_POLL_NOERRQ). */
#define SL_OSR_ERRQ	7
/* In a pollfd's events (no poll bit has it): ERR that only says the error
 * queue is not empty does not count (a blocking call's wait: Linux's
 * ends for sk_err, never for sk_error_queue). */
#define SL_POLL_NOERRQ	0x0800
int sl_listen_os_ready(struct sluice_stack *st, int sd, uint32_t gen, int how);
/*
 * sluice_connect() for the preload: a TCP socket that never connected,
 * whose destination is an address of this host where no listener of the
 * stack is, is left as it was and the answer is -EREMOTE: the preload
 * hands it to the kernel, where a kernel listener may be (a program not
 * under Sluice, an AF_INET6 socket on ::), and the kernel answers
 * (lib/preload/README.md, "Kernel peers").
 */
int sl_connect_kpeer(struct sluice_stack *st, int sd, const struct sockaddr_in *addr);
/* A datagram to (daddr, dport) would find no socket of this stack, and
 * daddr is this host's: a kernel socket may be bound there (the preload
 * hands a UDP socket nothing was done with to the kernel). */
bool sl_udp_kpeer(struct sluice_stack *st, uint32_t daddr, uint16_t dport);
/* Is socket sd the only one of the stack on its port (no other socket of
 * its protocol there, no TIME-WAIT entry holding the port's filter)?
 * Then closing it lets the port go in the kernel too (its module filter
 * and reservation), and a kernel socket may bind it (the preload, before
 * an exec: lib/preload/README.md, "At exec"). */
bool sl_port_alone(struct sluice_stack *st, int sd);
/*
 * Socket sd (generation gen) is a kernel socket in this process now, and
 * other processes may hold it too (fork, SCM_RIGHTS): publish that this
 * process holds the kernel socket (struct sl_sock's ho_pid, under the
 * lock), for them to switch at their next call (lib/preload/README.md,
 * "Other processes").  sluice_handoff() does it itself.  0, or -ESTALE
 * (the slot is another socket's now), -EBADF.
 */
int sl_sock_ho_publish(struct sluice_stack *st, int sd, uint32_t gen);
/*
 * O_ASYNC (lib/preload/README.md, "O_ASYNC"): register (on) the async
 * bell of process pid named by tid for socket sd, in bells[] (entry and
 * generation in *slot and *gen), and mark the socket SL_LIFE_ASYNC; or
 * (off) end entry *slot and clear the mark if no other process's bell is
 * left for the socket.  0 or -errno (-EAGAIN: every entry taken).
 */
int sl_async_bell(struct sluice_stack *st, int sd, bool on, uint32_t pid, uint32_t tid,
		  int *slot, uint32_t *gen);
/* The events async bell entry slot (generation gen) lost to its full
 * queue, by si_code, taken: no lock (run/bell.c, sl_bell_async_take()). */
void sl_async_bell_take(struct sluice_stack *st, int slot, uint32_t gen, uint16_t lost[8]);
/* Whether socket sd's description has O_ASYNC (SL_LIFE_FASYNC): set by
 * sl_async_bell() on, cleared by it off; for an exec'd image. */
bool sl_async_kept(struct sluice_stack *st, int sd);
/*
 * Socket sd's owner (F_SETOWN, F_SETOWN_EX: type F_OWNER_*, id; id 0:
 * none), for SIGURG at a new urgent pointer, with or without O_ASYNC
 * (lib/preload/README.md, "Urgent data"): an owner entry in bells[] and
 * the socket marked SL_LIFE_OWNER, both ended with the socket.  TCP only.
 * 0 or -errno (-EAGAIN: every entry taken).
 */
int sl_urg_owner(struct sluice_stack *st, int sd, int type, int id);

/* On a module's stack: the kernel socket that reserves socket sd's port
 * (its module filter's reservation, which kernel sockets of this host
 * reach: loopback never reaches a filter) as a new close-on-exec fd, to be
 * sd's kernel twin (lib/preload/twin.c); -ENOENT if sd holds no filter for
 * its own address (a loopback address, a port it shares), or -errno. */
int sl_port_twin_fd(struct sluice_stack *st, int sd);
/* The 32-bit handle the stack names IPv6 address addr (16 bytes) by
 * (lib/proto/proto.h, "IPv6 sockets"), given one if it had none; 0: none
 * to give (the table full, or not an address a peer can have). */
uint32_t sl_v6_handle(struct sluice_stack *st, const uint8_t *addr);
/* The helper that finishes orphaned connections (helper.c). */
uint32_t sl_orphans(struct sl_stack *s);
void sl_helper_ensure(struct sl_stack *s);


/*
 * The placeholder records file, /dev/shm/sluicefd-STACK/recs: written by
 * libsluice-preload.so (preload/fdtable.c, which says what each field is
 * for), read by `sluice fds` (a private socket's placeholder has no
 * name that says it; its record does).  A header, then one record per
 * socket slot at offset sizeof(struct sl_fdhdr).
 */
#define SL_FDREC_MAGIC	0x534c554943454637ull	/* "SLUICEF7" */
#define SL_FDREC_FREE	0
#define SL_FDREC_USED	1	/* held: its placeholder's name STACK/p[index] lives */
#define SL_FDREC_PRIV	2	/* held by its creator alone (fd, proc), no name */
#define SL_FDREC_PROCS	256
/* A shared socket's placeholder is an AF_UNIX socket bound to
 * STACK/p(index): "p" and the socket's index. */
#define SL_FDREC_PLACE_NAME	"p"
#define SL_FDREC_LOCK_BASE	((off_t)1 << 40)	/* process i's lock byte: + i */
/* The stack's death watcher holds a write lock on this byte while it
 * lives (preload/watch.c). */
#define SL_FDREC_WATCH_LOCK	(SL_FDREC_LOCK_BASE + SL_FDREC_PROCS)
#define SL_FDPROC_FREE	0
#define SL_FDPROC_CLAIMED	1	/* being registered */
#define SL_FDPROC_LIVE	2	/* its lock byte is held while it lives */
#define SL_FDPROC_SWEPT	3	/* dead, its sockets being closed by sweeper */
#define SL_FDREC_ON_SHARED	0xffffu	/* sl_fdrec.on: the shared list */

/*
 * Lists through the records (sd + 1; 0 ends a list): each process record
 * heads the list of the private sockets it made (edited by that process
 * alone while it lives, then by the one process that sweeps for it), and
 * the header heads the list of the used (shared) ones, edited under
 * shared_lock.  A process's death costs the sweep its own list and the
 * shared one, not every record (issue 23; preload/fdtable.c).
 */
struct sl_fdproc {
	uint32_t state;		/* SL_FDPROC_*; compare-and-swap */
	uint32_t pid;
	uint32_t head;		/* its private sockets' records */
	uint32_t edit;		/* sd + 1 while its list is being changed */
	uint32_t making;	/* sockets being made (no record yet): a count */
	uint32_t sweeper;	/* CLAIMED by a sweep: that process's pid */
	uint32_t pad[2];
};

struct sl_fdhdr {
	uint64_t magic;
	uint64_t stamp;		/* the region's creation secret: a stale file is reset */
	uint32_t nrec;
	uint32_t reserved;
	/* When some process of the stack last swept (CLOCK_MONOTONIC µs,
	 * compare-and-swap): one sweep every PL_SWEEP_US for the stack, not
	 * one for each process (a forking server's children each inherited
	 * an old time and swept as soon as they waited). */
	uint64_t last_sweep_us;
	uint32_t shared_head;	/* the used records' list */
	uint32_t shared_n;	/* ... its length */
	uint32_t shared_lock;	/* 0, or the pid of the process editing it */
	/* The death watcher (preload/watch.c): the pid of the process
	 * starting one, then the watcher's own (compare-and-swap); whether
	 * one lives is its lock byte's (SL_FDREC_WATCH_LOCK), not this. */
	uint32_t watch_pid;
	uint32_t pad[4];
	/* Process records taken since the watcher last looked: bit i of
	 * word i / 64 for record i, set by its process as it registers
	 * (fetch-or), taken by the watcher (exchange with 0). */
	uint64_t born[SL_FDREC_PROCS / 64];
	uint64_t pad2[4];
	struct sl_fdproc procs[SL_FDREC_PROCS];
};

_Static_assert(sizeof(struct sl_fdhdr) % 64 == 0, "records start on a cache line");

/*
 * key: SL_FDREC_* in the low half, the slot's generation when installed
 * in the high half, one word so that a closer frees only the record of
 * the socket it closed (compare-and-swap), never a newer socket's.
 */
struct sl_fdrec {
	uint64_t key;		/* release-stored last */
	uint32_t pid;		/* the creating process */
	int32_t fd;		/* its fd there when made (SL_FDREC_PRIV: sluice fds) */
	uint16_t type;		/* SOCK_STREAM or SOCK_DGRAM */
	uint16_t proc;		/* SL_FDREC_PRIV: its creator's process record + 1 */
	uint16_t on;		/* the list it is on: process record + 1, SL_FDREC_ON_SHARED, 0 */
	uint16_t pad;
	uint32_t next, prev;	/* on that list: sd + 1, 0 none */
};

_Static_assert(sizeof(struct sl_fdrec) == 32, "records of 32 bytes");

#define SL_FDREC_KEY(state, gen)	((uint64_t)(gen) << 32 | (state))
#define SL_FDREC_STATE(key)		((uint32_t)(key))
#define SL_FDREC_GEN(key)		((uint32_t)((key) >> 32))

#endif /* SLUICE_API_H */
