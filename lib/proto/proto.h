/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proto/: sockets in the region's socket table, the 4-tuple hash, the
 * timer wheel, IPv4, ICMP, UDP, the module's port filters, and (in tcp/,
 * whose header this one includes) TCP: the protocol entry points the run
 * loop, the links and the native API call.  Everything here runs with the
 * stack lock held and never waits.
 */
#ifndef SLUICE_PROTO_H
#define SLUICE_PROTO_H

#include "core/core.h"
#include "proto/tcp/tcp.h"

/* sl_sock.type */
#define SL_SOCK_FREE	0
#define SL_SOCK_UDP	1
#define SL_SOCK_TCP	2
/* In the ready pool (sl_region.ready[]): allocated under the lock, handed
 * out by socket() without it (sock.c, sl_sock_claim()). */
#define SL_SOCK_RESERVED	3

/* A slot that is a socket: not free, not in the ready pool. */
static inline bool sl_sock_type_live(uint8_t type)
{
	return type == SL_SOCK_TCP || type == SL_SOCK_UDP;
}

/* sl_sock.flags */
#define SL_SF_BOUND		0x0001
#define SL_SF_CONNECTED		0x0002	/* UDP: has a default peer */
#define SL_SF_REUSEADDR		0x0004
#define SL_SF_BROADCAST		0x0008
#define SL_SF_NONBLOCK		0x0010
#define SL_SF_SHUT_RD		0x0020
#define SL_SF_SHUT_WR		0x0040
#define SL_SF_HASHED		0x0080	/* on a hash chain */
#define SL_SF_NODELAY		0x0100
#define SL_SF_KEEPALIVE		0x0200
#define SL_SF_ORPHAN		0x0400	/* closed by the user, finishing */
#define SL_SF_FILTER		0x0800	/* holds module filter filter_id */
#define SL_SF_REUSEPORT		0x1000	/* SO_REUSEPORT: shares its port with a group */
#define SL_SF_LINGER		0x2000	/* SO_LINGER on, for linger_s seconds */
#define SL_SF_AUTOBIND		0x4000	/* port picked by connect(): shared by 4-tuple */
/* The program's socket is AF_INET6, talking IPv4 (v4-mapped addresses):
 * the stack ignores it; the preload shows its addresses as sockaddr_in6
 * (lib/preload/README.md, "AF_INET6 sockets"). A child inherits it. */
#define SL_SF_V6		0x8000

/* sl_sock.opt_flags: socket options kept for what getsockopt answers. */
#define SL_SO_OOBINLINE		0x0001	/* SO_OOBINLINE: the urgent byte read as data */
#define SL_SO_PASSCRED		0x0002	/* SO_PASSCRED (nothing to pass on IPv4) */
#define SL_SO_NO_CHECK		0x0004	/* SO_NO_CHECK: UDP sent without a checksum */
#define SL_SO_DEBUG		0x0008	/* SO_DEBUG (Linux: a flag only) */
#define SL_SO_DONTROUTE		0x0010	/* SO_DONTROUTE (one link: nothing to route) */
#define SL_SO_PKTINFO		0x0020	/* IP_PKTINFO: recvmsg tells the destination */
#define SL_SO_RECVTOS		0x0040	/* IP_RECVTOS */
#define SL_SO_RECVTTL		0x0080	/* IP_RECVTTL */
#define SL_SO_ORIGDST		0x0100	/* IP_RECVORIGDSTADDR */
#define SL_SO_RCVBUF_SET	0x0200	/* SO_RCVBUF set by the user (Linux SOCK_RCVBUF_LOCK) */
#define SL_SO_LADDR_AUTO	0x0400	/* UDP: laddr chosen by connect(), reset by disconnect */
#define SL_SO_LPORT_AUTO	0x0800	/* lport chosen by the stack, not the user */
#define SL_SO_TCP_INQ		0x1000	/* TCP_INQ: recvmsg tells what is left to read */
#define SL_SO_TIMESTAMP		0x2000	/* SO_TIMESTAMP: recvmsg tells each arrival time */
#define SL_SO_RECVERR		0x4000	/* IP_RECVERR: errors queued for MSG_ERRQUEUE (errq.c) */
#define SL_SO_V6ONLY		0x8000	/* IPV6_V6ONLY (with SL_SF_V6): no IPv4 */

/* sl_sock.ip6_opt */
#define SL_S6_RECVERR		0x01	/* IPV6_RECVERR: ICMPv6 errors queued (errq.c) */
#define SL_S6_DONTFRAG		0x02	/* IPV6_DONTFRAG: a datagram past the path MTU is EMSGSIZE */
#define SL_S6_PMTU_SHIFT	2	/* IPV6_MTU_DISCOVER + 1 in bits 2-4; 0: WANT */
#define SL_S6_PMTU_MASK		0x1c
/* Not IPv6's (opt_flags is full): SO_TIMESTAMPNS, with SL_SO_TIMESTAMP:
 * the arrival told as a timespec (SCM_TIMESTAMPNS), as Linux's
 * SOCK_RCVTSTAMPNS beside SOCK_RCVTSTAMP. */
#define SL_S6_TSNS		0x80

/* An AF_INET6 socket's IPV6_MTU_DISCOVER (IPV6_PMTUDISC_*, the same
 * values as IP_PMTUDISC_*). */
static inline int sl_sock_pmtudisc6(uint8_t ip6_opt)
{
	unsigned int v = (ip6_opt & SL_S6_PMTU_MASK) >> SL_S6_PMTU_SHIFT;

	return v ? (int)v - 1 : 1 /* IPV6_PMTUDISC_WANT */;
}

/* The smallest SO_RCVBUF / SO_SNDBUF (Linux SOCK_MIN_RCVBUF/SNDBUF here). */
#define SL_SO_RCVBUF_MIN	2304
#define SL_SO_SNDBUF_MIN	4608

/* Readiness, as poll(2) bits. */
#define SL_EV_IN	0x001
#define SL_EV_PRI	0x002	/* urgent data (TCP) */
#define SL_EV_OUT	0x004
#define SL_EV_ERR	0x008
#define SL_EV_HUP	0x010
#define SL_EV_RDHUP	0x2000

/*
 * One socket slot.  Common part first; the protocol part is a union so a
 * slot has one fixed size (sluice_region.sock_size).
 */
/* IPv4 multicast groups a UDP socket joined (IP_ADD_MEMBERSHIP), network
 * order; Linux allows 20 a socket (igmp_max_memberships), Sluice 8. */
#define SL_UDP_MC_MAX	8
struct sl_udp_sock {
	uint32_t mc_n;
	uint32_t mc_group[SL_UDP_MC_MAX];
	/* Sending to groups (ip(7)): IP_MULTICAST_TTL + 1 once set (0: the
	 * default TTL, 1), IP_MULTICAST_LOOP off, IP_MULTICAST_IF (SL_MC_IF_*)
	 * and the address it was given (what getsockopt answers). */
	uint16_t mc_ttl;
	uint8_t mc_noloop, mc_if;
	uint32_t mc_if_addr;
	uint8_t mc_all_off;		/* IP_MULTICAST_ALL off */
	/* The kernel twin (lib/preload/twin.c) was seen to get a datagram:
	 * readable, as one queued here (sl_os_ready()). */
	uint8_t os_ready;
	/* It has a kernel twin: a datagram to an address of this host where
	 * no stack socket is bound goes out through it (sl_udp_sendto()
	 * says -EREMOTE). */
	uint8_t twin;
	/* ... and that twin has an error pending (an ICMP error the kernel
	 * gave it): the socket polls SL_EV_ERR until a call takes it (1), or
	 * only its error queue holds one (2: IP_RECVERR). */
	uint8_t os_err;
	/* SIOCGSTAMP: when the last datagram read without SO_TIMESTAMP
	 * arrived (the stack's clock, µs); 0: none read yet. */
	uint64_t stamp_us;
};

/*
 * IP_MULTICAST_IF: any interface, the stack's own (its address or
 * device), or loopback (127.0.0.0/8, or index SL_LO_IFINDEX: Linux's lo,
 * which is 1 in every network namespace).  A datagram sent to a group on
 * loopback goes to the stack's own members and nowhere else, and even
 * with IP_MULTICAST_LOOP off, as on Linux, where it goes out lo and comes
 * back in.  Memberships may name loopback too.
 */
#define SL_MC_IF_ANY	0
#define SL_MC_IF_STACK	1
#define SL_MC_IF_LO	2
#define SL_LO_IFINDEX	1

struct sl_sock {
	/*
	 * What the module reads (uapi struct sluice_sock_kpoll, at offset 0
	 * of every slot): the readiness published for socket fds (events),
	 * the generation (gen, bumped on every allocation: the one copy),
	 * whether a socket fd's poller is armed, and the module's kstate.
	 */
	struct sluice_sock_kpoll kp;
	uint8_t type;			/* SL_SOCK_* */
	uint8_t state;			/* TCP: SL_TCP_* ; UDP: 0 */
	uint16_t flags;			/* SL_SF_* */
	int32_t error;			/* pending error, positive errno (SO_ERROR) */

	/*
	 * Received data or datagrams: a chain of buffers.  On the slot's
	 * first cache line with what is above, and with nothing a delivery
	 * writes besides: that line is all a spinning receiver reads without
	 * the lock (api.c, rx_nothing()), and the rest of a delivery's
	 * writes (timers, wake_seq, counters, the TCB) go to lines it does
	 * not read, so its looks take no line from the process delivering.
	 */
	uint32_t rxq_head, rxq_tail;
	uint32_t rxq_bytes;		/* payload bytes queued */
	uint32_t rxq_count;		/* buffers queued */

	uint32_t laddr, raddr;		/* network order */
	uint16_t lport, rport;		/* network order */
	uint32_t hash_next;		/* 4-tuple / bound hash chain */
	uint32_t parent_idx;		/* TCP child: its listener */
	uint32_t idx;			/* own index */
	uint32_t next_idx;		/* free list, accept queue, ... */
	uint32_t rcvbuf, sndbuf;	/* limits in bytes (SO_RCVBUF/SO_SNDBUF) */

	/* Timer wheel linkage: one deadline a socket (its poll_at). */
	uint32_t wheel_next, wheel_prev;
	uint64_t wheel_due_ms;		/* 0: not on the wheel */

	uint32_t wake_seq;		/* bumped on every readiness change */
	uint32_t owner_pid;		/* process that created it */
	uint32_t port_next;		/* local-port hash chain */
	/* Local address of the module filter this socket holds (with
	 * SL_SF_FILTER; what was padding). */
	uint32_t filter_laddr;

	/* Per-socket counters. */
	uint64_t rx_pkts, tx_pkts, rx_bytes, tx_bytes;
	uint32_t retransmits;		/* TCP segments sent again */
	/* The module filter (SLUICE_IOC_FILTER_ADD id) for this socket's
	 * local port, with SL_SF_FILTER: whichever process frees the port
	 * deletes it (filter.c).  Sockets sharing the port share the filter;
	 * one of them holds it. */
	uint32_t filter_id;
	/* The port's IPv6 filter (SLUICE_FILTER_IPV6) this socket holds,
	 * 0: none (ids start at 1); its local address is filter_laddr too
	 * (filter.c, "IPv6"). */
	uint32_t filter6_id;
	/*
	 * Buffers lent to a caller copying without the lock (tcp.c,
	 * "lending"): received data taken off the receive queue, and send
	 * buffers being filled before they join the send queue.  The chain's
	 * first buffer carries the borrower's pid in ts_us, so a borrower that
	 * dies leaks nothing: the next borrower or sl_sock_free() takes the
	 * chain back.
	 */
	uint32_t rx_lent_idx, rx_lent_bytes, rx_lent_count;
	uint32_t tx_lent_idx, tx_lent_bytes;
	uint32_t linger_s;		/* SO_LINGER time, with SL_SF_LINGER */
	/* IP_TTL (0: the default, 64) and IP_TOS of the packets it sends. */
	uint8_t ip_ttl, ip_tos;
	uint16_t opt_flags;		/* SL_SO_* (what was padding) */
	uint32_t rcvlowat;		/* SO_RCVLOWAT; 0: 1 */
	/* Socket fds (sockfd.c): rx_bytes (a listener: wake_seq) when the
	 * events were last published, so new data or a new connection wakes
	 * an edge-triggered poller even if EPOLLIN was up. */
	uint32_t kp_rx_mark;
	/*
	 * Exclusive sleepers (a blocking accept(), which Linux queues as
	 * exclusive waiters and wakes one at a time): they count themselves
	 * in xsleepers and sleep on xseq, which sl_sock_wake() moves while
	 * any sleeps, waking only the longest waiting at unlock
	 * (sl_sock_wake_one()).  Kept across a slot's reuse (sock_init()):
	 * a sleeper that outlives its socket still counts itself out.
	 */
	uint32_t xseq, xsleepers;
	/*
	 * Before the stack sees it (SL_LIFE_PRIVATE: made, never bound,
	 * connected, listened on or used for data), a socket is reachable
	 * only through its descriptor, and its options are set and read
	 * under priv_lock (the pid of the process in such a call, or 0)
	 * rather than the stack lock; the first call that needs the stack
	 * takes both and ends it.  SL_LIFE_PENDING: a connect() made while
	 * the lock's holder was stopped, waiting in sl_region.pend[] for the
	 * next holder (sock.c, "Sockets before the stack sees them").
	 */
	uint32_t priv_lock;
	uint8_t life;			/* SL_LIFE_* */
	/* IP_MTU_DISCOVER + 1 once set (what was padding); 0: the default,
	 * IP_PMTUDISC_WANT.  Only the DF bit follows it (sl_ip_sock_hdr()). */
	uint8_t pmtudisc;
	/* The epoll watch group watching it (core.h, SL_EPW_N): g + 1, 0
	 * none, SL_EPW_SHARED more than one; set by the sets' EPOLL_CTL_ADD
	 * without the lock (compare-and-swap), read by sl_sock_wake(). */
	uint16_t epw;
	/*
	 * The error queue (IP_RECVERR, errq.c): a chain of buffers, each one
	 * error (struct sl_errq_rec, then the bytes the ICMP message quoted),
	 * read with MSG_ERRQUEUE; its buffers count against SO_RCVBUF with
	 * the receive queue's, as Linux charges sk_error_queue to rmem.
	 */
	uint32_t errq_head, errq_tail, errq_count;
	/*
	 * What an AF_INET6 socket's IPv6 packets take (ipv6(7); its IPv4
	 * ones take ip_ttl and ip_tos): IPV6_TCLASS; IPV6_UNICAST_HOPS + 1
	 * once set (0: the default, sl_region.ip6_hlim); SL_S6_* bits
	 * (IPV6_RECVERR, IPV6_DONTFRAG, IPV6_MTU_DISCOVER + 1).  Kept by
	 * the preload's setsockopt (lib/preload/socket.c, v6_kept[]).
	 */
	uint8_t ip6_tclass, ip6_opt;
	uint16_t ip6_hops;
	/*
	 * SO_INCOMING_CPU (socket(7)): the CPU the stack ran on when it last
	 * took a packet for this socket, -1 before any, or what setsockopt()
	 * set since; written only when it changes, as Linux's
	 * sk_incoming_cpu_update().  Which packets count is Linux's: a TCP
	 * socket's every segment but a listener's (a child starts with the
	 * CPU that made it, sk_clone_lock()), a connected UDP socket's
	 * datagrams (__udp_queue_rcv_skb()).
	 */
	int32_t incoming_cpu;
	/*
	 * Handed to the kernel by process ho_pid (0: not), which holds the
	 * kernel socket now and gives a copy to any other process that holds
	 * this one (fork, SCM_RIGHTS) at its next call on it: written under
	 * the stack lock before the socket is let go, reset with the slot
	 * (lib/preload/README.md, "Other processes").  Read by every call
	 * the library takes on a stack fd, on the line the call reads.
	 */
	uint32_t ho_pid;
	/* SO_COOKIE: made at the first ask (api.c, sock_cookie()), as
	 * Linux's sock_gen_cookie(); 0 none yet.  Compare-and-swap. */
	uint64_t cookie;

	union {
		struct sl_tcp_sock tcp;
		struct sl_udp_sock udp;
		uint8_t proto_space[SL_SOCK_PROTO_SPACE];
	};
};

_Static_assert(offsetof(struct sl_sock, kp) == 0, "the module's part opens the slot");
_Static_assert(sizeof(struct sl_udp_sock) <= SL_SOCK_PROTO_SPACE, "UDP state fits the slot");
_Static_assert(sizeof(struct sl_tcp_sock) <= SL_SOCK_PROTO_SPACE,
	       "TCP state fits the socket slot");
/* Issue 3's target: at most 1 KiB of shared state per idle connection. */
_Static_assert(sizeof(struct sl_sock) <= SL_SOCK_SIZE && SL_SOCK_SIZE <= 1024,
	       "a socket slot is at most 1 KiB, and the socket fits its slot");

#define SL_LIFE_PRIVATE	0x01
#define SL_LIFE_PENDING	0x02
/* A process armed O_ASYNC on it (F_SETFL, FIOASYNC): its input, new
 * connections and errors ring that process's async bells after unlock
 * (sl_sock_async(); lib/preload/README.md, "O_ASYNC").  Set and cleared
 * under the stack lock, never while the socket is private. */
#define SL_LIFE_ASYNC	0x04
/* ... and a write found no room since (Linux SOCKWQ_ASYNC_NOSPACE): the
 * room coming back is signalled once (sl_sock_async_space()). */
#define SL_LIFE_NOSPACE	0x08
/* A TCP socket with an owner (F_SETOWN, F_SETOWN_EX; with or without
 * O_ASYNC): a new urgent pointer signals it SIGURG after unlock
 * (sl_sock_urg(); lib/preload/README.md, "Urgent data"). */
#define SL_LIFE_OWNER	0x10
/* The description has O_ASYNC (F_SETFL, FIOASYNC; not yet turned off):
 * an exec'd image of a process that holds it arms it again
 * (pl_fdtable_inherit(), sl_async_kept()), as Linux keeps the flag and
 * the owner across exec.  Under the stack lock, as SL_LIFE_ASYNC. */
#define SL_LIFE_FASYNC	0x20

/*
 * SO_RCVLOWAT (socket(7)): bytes a blocking read waits for, and that poll
 * wants before it says readable.  Half the receive buffer will do too,
 * as Linux's tcp_epollin_ready() lets a nearly closed window through, so
 * a sender is never stuck behind a mark the buffer cannot reach.  Read
 * without the lock (poll, the preload's waits): a hint, checked again.
 */
static inline bool sl_tcp_lowat_met(const struct sl_sock *so, size_t len)
{
	uint32_t lowat = SL_READ_ONCE(so->rcvlowat), have = SL_READ_ONCE(so->rxq_bytes);

	if (lowat > len)
		lowat = (uint32_t)len;
	return have && (have >= lowat || have >= SL_READ_ONCE(so->rcvbuf) / 2);
}

/* UDP shut for reading with nothing queued: a blocking read returns 0. */
static inline bool sl_udp_shut_empty(const struct sl_sock *so)
{
	return SL_READ_ONCE(so->type) == SL_SOCK_UDP && (SL_READ_ONCE(so->flags) & SL_SF_SHUT_RD) &&
	       !SL_READ_ONCE(so->rxq_count);
}

/* A blocking read must wait for more: under the mark, and more can come. */
static inline bool sl_tcp_lowat_wait(const struct sl_sock *so, size_t len)
{
	return SL_READ_ONCE(so->rcvlowat) > 1 && !sl_tcp_lowat_met(so, len) &&
	       !SL_READ_ONCE(so->error) && !(SL_READ_ONCE(so->flags) & SL_SF_SHUT_RD) &&
	       !(SL_READ_ONCE(so->tcp.tflags) & SL_TF_FIN_RCVD) &&
	       SL_READ_ONCE(so->state) == SL_TCP_ESTABLISHED;
}

/* Socket idx's slot; idx must be < max_sockets (else the stack is corrupt
 * and this is a process-local sink: see sl_buf()). */
struct sl_sock *sl_sock_bad(const struct sl_stack *s, uint32_t idx);
static inline struct sl_sock *sl_sock(const struct sl_stack *s, uint32_t idx)
{
	if (__builtin_expect(idx >= s->max_sockets, 0))
		return sl_sock_bad(s, idx);
	return (struct sl_sock *)(s->socks + (uint64_t)idx * s->sock_size);
}

/* On no listener's park list, and heading none (sock.c, sl_sock_park_link()). */
static inline void sl_sock_park_none(struct sl_sock *so)
{
	so->tcp.park_head = so->tcp.park_tail = SLUICE_IDX_NONE;
	so->tcp.park_next = so->tcp.park_prev = so->tcp.park_lso = SLUICE_IDX_NONE;
}

/* Above every slot ever used: a walk over the table stops here and never
 * touches (commits) the memory of slots no socket has had. */
static inline uint32_t sl_sock_top(const struct sl_stack *s)
{
	uint32_t top = SL_READ_ONCE(s->lib->sock_fresh);

	return top < s->max_sockets ? top : s->max_sockets;
}



/*
 * Intent, for recovery after a holder's death (recover.c): the holder is
 * about to change so (one operation on it: a user call, a segment or
 * datagram for it, its timer).  A second socket the same operation
 * changes (a listener's new or accepted child) is named by
 * sl_sock_busy2().  A store to a line the holder writes anyway.
 */
static inline void sl_sock_busy(struct sl_stack *s, const struct sl_sock *so)
{
	s->lib->busy[0] = so->idx + 1;
	s->lib->busy[1] = 0;
}

static inline void sl_sock_busy2(struct sl_stack *s, const struct sl_sock *so)
{
	s->lib->busy[1] = so->idx + 1;
}

/* recover.c: bring the stack back after a process died holding its lock
 * (sl_stack.recover); the lock held. */
int sl_stack_recover(struct sl_stack *s, pid_t dead);

/* Out of line: mark the stack corrupt for so; false. */
bool sl_sock_insane(struct sl_stack *s, struct sl_sock *so);

/* An index into a pool of n, or SLUICE_IDX_NONE: bad if 1.  (NONE + 1
 * wraps to 0; every valid x has x + 1 <= n.)  Branch-free, to be or-ed. */
static inline unsigned int sl_idx_bad(uint32_t x, uint32_t n)
{
	return x + 1 > n;
}

/*
 * Are so's links, queue heads and sizes possible (lock held, before a
 * timer runs on it: nobody called for it)?  Its own idx names its slot (it is handed out and linked
 * into chains), error is an errno (handed back negated), a TCP segment
 * (mss after SL_TCP_DATA_OFF) fits a buffer, window scales are shift
 * counts.  If not, marks the stack corrupt: false.  One branch.
 */
static inline bool sl_sock_sane(struct sl_stack *s, struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint32_t nb = s->n_bufs, ns = s->max_sockets;
	unsigned int bad;

	bad = so->idx >= ns || sl_sock(s, so->idx) != so;
	bad |= so->type > SL_SOCK_TCP;
	bad |= (uint32_t)so->error > 4095;
	bad |= sl_idx_bad(so->rxq_head, nb) | sl_idx_bad(so->rxq_tail, nb);
	bad |= sl_idx_bad(so->parent_idx, ns) | sl_idx_bad(so->next_idx, ns);
	bad |= sl_idx_bad(so->hash_next, ns) | sl_idx_bad(so->port_next, ns);
	bad |= sl_idx_bad(so->wheel_next, ns) | sl_idx_bad(so->wheel_prev, ns);
	if (so->type == SL_SOCK_TCP) {
		bad |= so->state > SL_TCP_TIME_WAIT;
		bad |= tp->mss > SL_TCP_BUF_PAYLOAD(s);
		bad |= tp->snd_wscale > SL_TCP_WSCALE_MAX;
		bad |= tp->rcv_wscale > SL_TCP_WSCALE_MAX;
		bad |= (uint32_t)tp->soft_err > 4095;
		bad |= sl_idx_bad(tp->sndq_head, nb) | sl_idx_bad(tp->sndq_tail, nb);
		bad |= sl_idx_bad(tp->sndq_hint, nb) | sl_idx_bad(tp->ooo_head, nb);
		bad |= sl_idx_bad(tp->acc_head, ns) | sl_idx_bad(tp->acc_tail, ns);
	}
	if (__builtin_expect(bad, 0))
		return sl_sock_insane(s, so);
	return true;
}

/*
 * The cheap part of sl_sock_sane(), for every call on a socket (api/api.c):
 * its own idx names its slot (it is handed out as the descriptor and
 * linked into chains).  Its queues and links are checked where they are
 * followed (sl_buf_some(), sl_buf_next(), ...).
 */
static inline bool sl_sock_ok(struct sl_stack *s, struct sl_sock *so)
{
	if (__builtin_expect(so->idx < s->max_sockets &&
			     so == (struct sl_sock *)(s->socks + (uint64_t)so->idx * s->sock_size), 1))
		return true;
	return sl_sock_insane(s, so);
}

/* so's pending error (SO_ERROR), a positive errno; one that is not
 * marks the stack corrupt and reads as ENOTRECOVERABLE. */
static inline int sl_sock_error(struct sl_stack *s, struct sl_sock *so)
{
	int e = so->error;

	if (__builtin_expect((uint32_t)e > 4095, 0)) {
		sl_sock_insane(s, so);
		return -sl_broken_err(s);
	}
	return e;
}

/* A window scale read from the socket (a shift count): at most 14
 * (RFC 7323 2.3), or the stack is corrupt and it reads as 0. */
/* A 4-tuple's hash, for the socket table's buckets and TIME-WAIT's. */
static inline uint32_t sl_tuple_hash(uint32_t laddr, uint16_t lport, uint32_t raddr,
				     uint16_t rport)
{
	uint32_t h = laddr * 0x9e3779b1u;

	h ^= raddr * 0x85ebca6bu;
	h ^= ((uint32_t)lport << 16 | rport) * 0xc2b2ae35u;
	return h ^ (h >> 15);
}

static inline unsigned int sl_tcp_ws(struct sl_stack *s, uint8_t ws)
{
	if (__builtin_expect(ws > SL_TCP_WSCALE_MAX, 0)) {
		sl_corrupt(s, SL_C_corrupt_sock_state, ws);
		return 0;
	}
	return ws;
}

/* TCP entry points: tcp.h. */

/* What a datagram's headers said, for recvmsg's control messages
 * (IP_PKTINFO, IP_RECVTOS, IP_RECVTTL, IP_RECVORIGDSTADDR). */
struct sl_rx_meta {
	uint32_t daddr;			/* the header's destination, network order */
	uint16_t dport;			/* network order */
	uint8_t ttl, tos;
	uint32_t ifindex;		/* where it came in: 1 (lo) for 127/8 */
	/* SO_TIMESTAMP: when it arrived (the stack's clock, µs), if asked. */
	uint64_t stamp_us;
};

/* What sendmsg's control messages ask of one datagram (ip(7), ipv6(7)):
 * IP_PKTINFO's source address, IP_TTL, IP_TOS (to IPv6 itself:
 * IPV6_PKTINFO's, IPV6_HOPLIMIT, IPV6_TCLASS, IPV6_DONTFRAG); 0 / -1 for
 * "as set". */
struct sl_tx_meta {
	uint32_t saddr;			/* network order; 0: the socket's */
	int ttl;			/* 1-255, or -1 */
	int tos;			/* 0-255, or -1 */
	int dontfrag;			/* IPV6_DONTFRAG: 0, 1, or -1 */
};

/* sl_udp_sendto() flag of the preload's (no Linux MSG_ flag has it):
 * not through the twin (this process has none), whatever the socket's
 * udp.twin says. */
#define SL_MSG_NOTWIN	0x01000000

/* A receive's flag of the preload's: buf is a struct sl_ucur (core.h:
 * readv()'s or recvmsg()'s iovecs, len their total), each queued
 * buffer's bytes copied to it whole or not at all, as Linux copies an
 * skb (Linux's MSG_SOCK_DEVMEM bit: the preload strips it from a
 * program's flags).  sl_rx_copy(): the copy of n bytes to buf at done. */
#define SL_MSG_IOV	0x02000000

static inline size_t sl_rx_copy(void *buf, size_t done, int flags, const void *src, size_t n)
{
	if (__builtin_expect(flags & SL_MSG_IOV, 0))
		return sl_ucopy_cur(buf, src, n);
	return sl_ucopy((uint8_t *)buf + done, src, n);
}

/* UDP (udp.c) */
#define SL_UDP_MAX	(65535 - 20 - 8)	/* payload of the largest IPv4 datagram */
ssize_t sl_udp_sendto(struct sl_stack *s, struct sl_sock *so, const void *buf, size_t len,
		      int flags, uint32_t daddr, uint16_t dport, const struct sl_tx_meta *tx);
ssize_t sl_udp_recvfrom(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len,
			int flags, uint32_t *saddr, uint16_t *sport, struct sl_rx_meta *meta);
uint32_t sl_udp_poll(struct sl_stack *s, struct sl_sock *so);
/* IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP (udp.c); 0 or -errno. */
int sl_udp_mc_join(struct sl_stack *s, struct sl_sock *so, uint32_t group, uint32_t ifaddr);
/* IP_MULTICAST_TTL, IP_MULTICAST_LOOP, IP_MULTICAST_IF (udp.c): as Linux
 * takes and gives them; a TCP socket keeps none (ip(7): they act on
 * datagrams). */
/* A struct ip_mreqn, ip_mreq or (IP_MULTICAST_IF) in_addr option value of
 * at least min bytes, as an ip_mreqn (udp.c). */
struct ip_mreqn;
int sl_ip_mreqn(const void *val, unsigned int len, unsigned int min, struct ip_mreqn *mr);
int sl_udp_mc_setopt(struct sl_stack *s, struct sl_sock *so, int name, const void *val,
		     unsigned int len);
int sl_udp_mc_getopt(struct sl_stack *s, const struct sl_sock *so, int name, void *val,
		     unsigned int *len);
int sl_udp_mc_drop(struct sl_stack *s, struct sl_sock *so, uint32_t group, uint32_t ifaddr);
void sl_udp_mc_leave_all(struct sl_stack *s, struct sl_sock *so);
bool sl_udp_mc_member(const struct sl_sock *so, uint32_t group);

/* sock.c: table, hash, ports (callers hold the lock) */
/* A new region's socket table: every slot free (sl_region_create()). */
void sl_sock_table_init(struct sl_stack *s);
struct sl_sock *sl_sock_alloc(struct sl_stack *s, uint8_t type);	/* NULL: -ENFILE */
void sl_sock_free(struct sl_stack *s, struct sl_sock *so);
/* Once a second, lock held: free slots above the top in use go back to
 * the system (sock.c). */
void sl_sock_trim(struct sl_stack *s);

/* Sockets before the stack sees them (sock.c).  Without the lock: a slot
 * from the ready pool, typed and SL_LIFE_PRIVATE (NULL: the pool is
 * empty); a private socket's own lock; a connect queued for the next
 * holder (false: pend[] is full).  With it: fill the pool (when
 * sl_region.ready_want says so); make the queued connects. */
struct sl_sock *sl_sock_claim(struct sl_stack *s, uint8_t type);
uint32_t sl_sock_implicit_laddr(const struct sl_stack *s, uint32_t daddr);
void sl_sock_ready_fill(struct sl_stack *s);
void sl_sock_priv_lock(struct sl_sock *so);
bool sl_sock_priv_trylock(struct sl_sock *so);
void sl_sock_priv_unlock(struct sl_sock *so);
bool sl_sock_pend(struct sl_stack *s, struct sl_sock *so);
void sl_sock_pending_run_slow(struct sl_stack *s);

static inline void sl_sock_pending_run(struct sl_stack *s)
{
	if (__builtin_expect(SL_READ_ONCE(s->lib->pend_hint) != 0, 0))
		sl_sock_pending_run_slow(s);
}
/* The region's count of multicast memberships, counted again from the
 * sockets (recovery). */
void sl_udp_mc_recount(struct sl_stack *s);
void sl_sock_hash(struct sl_stack *s, struct sl_sock *so);
void sl_sock_unhash(struct sl_stack *s, struct sl_sock *so);
/* Child c (its parent_idx set to lso) onto listener lso's list of
 * children; off its listener's list (parent_idx left as it is). */
void sl_sock_kid_link(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *c);
void sl_sock_kid_unlink(struct sl_stack *s, struct sl_sock *c);
void sl_sock_park_link(struct sl_stack *s, struct sl_sock *lso, struct sl_sock *c);
void sl_sock_park_unlink(struct sl_stack *s, struct sl_sock *c);
void sl_sock_park_clear(struct sl_stack *s, struct sl_sock *lso);
void sl_sock_park_forget(struct sl_stack *s, struct sl_sock *so);
/* The chains where a datagram to (addr, port) finds its unconnected
 * sockets: bound to addr and to INADDR_ANY (heads[]); returns 1 or 2
 * (one when both hash to the same chain), walked through hash_next. */
unsigned int sl_sock_unconnected_chains(struct sl_stack *s, uint32_t addr, uint16_t port,
					uint32_t heads[2]);
/*
 * Find the socket for a received packet: an exact 4-tuple match first, then
 * one connected to the peer but bound to INADDR_ANY, then a socket bound to
 * (laddr or INADDR_ANY, lport) with no peer.
 */
/* A connected socket only (sl_sock_lookup() falls back to bound ones). */
struct sl_sock *sl_sock_lookup_conn(struct sl_stack *s, uint8_t type, uint32_t laddr,
				    uint16_t lport, uint32_t raddr, uint16_t rport);
struct sl_sock *sl_sock_lookup(struct sl_stack *s, uint8_t type, uint32_t laddr,
			       uint16_t lport, uint32_t raddr, uint16_t rport);
/* Bind checks: -EADDRINUSE per the SO_REUSEADDR rules; lport 0 picks an
 * ephemeral port.  On success sets laddr/lport and SL_SF_BOUND and hashes. */
int sl_sock_bind(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t lport);
/* The same for a TCP connect()'s implicit bind to an IPv4 peer: an
 * AF_INET6 socket's port is IPv4's alone there (filter.c). */
int sl_sock_bind_conn4(struct sl_stack *s, struct sl_sock *so, uint32_t laddr);
/* Would (laddr, lport) be free for so under the stack's bind rules? */
bool sl_sock_port_free(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t lport);
/* A TCP listener (SL_SOCK_TCP) or UDP socket (SL_SOCK_UDP) of this stack
 * where a SYN or datagram to (addr, port) goes?  (connect() and a fresh
 * datagram socket hand themselves to the kernel where there is none:
 * lib/preload, "Kernel peers".) */
bool sl_sock_unconnected_at(struct sl_stack *s, uint8_t type, uint32_t addr, uint16_t port);
/* connect() on an unbound TCP socket of a stack without filters: an
 * ephemeral port whose 4-tuple with (raddr, rport) no socket has, shared
 * with other connect()s' connections as Linux's __inet_hash_connect() does.
 * laddr is the source address the connection will use.  On success sets
 * laddr/lport, SL_SF_BOUND and SL_SF_AUTOBIND and hashes; -EADDRNOTAVAIL
 * when no port is left. */
int sl_sock_bind_connect(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint32_t raddr,
			 uint16_t rport, uint64_t now_us);
/* First socket on lport's chain of the local-port hash (port_next links). */
uint32_t sl_sock_port_head(struct sl_stack *s, uint16_t lport);
/* Readiness changed: wake sleepers (and, for a socket with a socket fd,
 * note it: its events are published at unlock, sockfd.c). */
void sl_sock_wake(struct sl_stack *s, struct sl_sock *so);
/* Lock held: what sl_sock_wake() does for the sleepers of wait channel c,
 * and for those woken by any change (woken after unlock); for a wake
 * with no socket change (api.c, sl_wait_kick()). */
void sl_wake_chan(struct sl_stack *s, uint32_t c);
void sl_wake_any(struct sl_stack *s);
/* Lock held: socket idx on the ready ring of the epoll watch group(s)
 * its epw names, and their sleepers woken. */
void sl_wake_epw(struct sl_stack *s, uint16_t epw, uint32_t idx);
/* Lock held: one more of so's exclusive sleepers should look (an accept()
 * that left connections queued, or failed for good): wake it at unlock. */
void sl_sock_wake_one(struct sl_stack *s, struct sl_sock *so);
/* Wake every exclusive sleeper of every socket (a recovery, a broken
 * stack: everything may have changed).  O(sockets): not for hot paths. */
void sl_sock_wake_exclusive_all(struct sl_stack *s);
/*
 * Lock held: if so has a socket fd (kstate set by the module), publish
 * its readiness at unlock.  Called for every readiness change and by
 * every user call on a socket (which may lower its readiness: data
 * read, send space used).  A socket without one costs one load.
 */
void sl_kp_note_slow(struct sl_stack *s, struct sl_sock *so);
static inline void sl_kp_note(struct sl_stack *s, struct sl_sock *so)
{
	if (__builtin_expect(so->kp.kstate != SLUICE_KSOCK_NONE, 0) && s->module_backed)
		sl_kp_note_slow(s, so);
}
/* Readiness (SL_EV_* = poll bits) of a socket now; lock held. */
uint32_t sl_sock_events(struct sl_stack *s, struct sl_sock *so);
/*
 * Socket fds (sockfd.c).  Publish so's readiness for its socket fds now
 * (after SOCK_FD made one) and note it for a wake at unlock if armed.
 */
void sl_kp_publish(struct sl_stack *s, struct sl_sock *so);
/*
 * The module released socket sd of generation gen (its last socket fd
 * closed): close it as close() would, if not done already.  Lock held.
 * Returns whether this call closed it.
 */
bool sl_ksock_close_released(struct sl_stack *s, uint32_t sd, uint32_t gen);
/* Close every released socket if ksock_released moved; lock held. */
void sl_ksock_reap(struct sl_stack *s);
/* Lock held: publish the readiness sl_sock_wake() noted (run/ calls it
 * at the end of a turn). */
void sl_kp_publish_noted(struct sl_stack *s);
/*
 * The slots whose pollers were armed, for one SOCK_WAKE after the unlock.
 * Per thread, not in the stack handle: another thread of this process may
 * take the lock, and write the handle, as soon as we let go.  Initial-exec
 * TLS: no __tls_get_addr call on the unlock path.
 */
struct sl_kp_wakes {
	struct sl_stack *s;
	unsigned int n;
	uint32_t idx[SL_KP_WAKES];
};
extern __thread struct sl_kp_wakes sl_kp_w __attribute__((tls_model("initial-exec")));
/* After the unlock, if sl_kp_w.n: the one SOCK_WAKE. */
void sl_kp_wake_flush(void);
/* Tests stand in for the module's SOCK_WAKE here (NULL: ioctl(2)). */
extern int (*sl_sockfd_ioctl)(int fd, unsigned long req, void *arg);
/*
 * O_ASYNC (lib/preload/README.md, "O_ASYNC"): an event Linux signals an
 * O_ASYNC socket's owner for (sk_wake_async(): data or a datagram in, a
 * connection to accept, the end of the stream, an error, a connect
 * done).  Lock held.  A socket nobody armed costs one load of a byte of
 * its first line; an armed one's index goes on this thread's list with
 * why (SL_POLL_IN ..., the si_code Linux gives), whose bells are rung
 * after the unlock (sl_bell_ring_async(), run/bell.c), one byte (one
 * signal) an event.  The same event of the same socket again is a count
 * on its note (rep: how many more), so a turn that brings many datagrams
 * or segments to one socket keeps every one.
 */
#define SL_ASYNC_NOTES	32
struct sl_async_notes {
	struct sl_stack *s;
	unsigned int n;
	uint32_t idx[SL_ASYNC_NOTES];
	uint16_t rep[SL_ASYNC_NOTES];
};
extern __thread struct sl_async_notes sl_async_w __attribute__((tls_model("initial-exec")));
void sl_sock_async_slow(struct sl_stack *s, struct sl_sock *so, uint32_t why);
static inline void sl_sock_async(struct sl_stack *s, struct sl_sock *so, uint32_t why)
{
	if (__builtin_expect(so->life & SL_LIFE_ASYNC, 0))
		sl_sock_async_slow(s, so, why);
}
/* A new urgent pointer (Linux sk_send_sigurg()): the owner's SIGURG, on
 * this thread's list as sl_sock_async() (the index | SL_BELL_URG), sent
 * after the unlock (sl_bell_ring_async()); for an O_ASYNC socket instead
 * the event POLL_PRI, which its async bells make SIGURG, POLL_PRI and the
 * urgent byte's POLL_IN (lib/preload/README.md, "O_ASYNC").  A socket
 * with no owner and no O_ASYNC costs the load of its life byte. */
void sl_sock_urg_slow(struct sl_stack *s, struct sl_sock *so);
static inline void sl_sock_urg(struct sl_stack *s, struct sl_sock *so)
{
	if (__builtin_expect(so->life & (SL_LIFE_OWNER | SL_LIFE_ASYNC), 0))
		sl_sock_urg_slow(s, so);
}
/* Socket so's owner entry ends (its end, or F_SETOWN 0): lock held. */
void sl_sock_owner_drop(struct sl_stack *s, struct sl_sock *so);
/* Room to write came back (an ACK, the pool): signalled if a write found
 * none before (SL_LIFE_NOSPACE) and the socket is writable now, once, as
 * Linux's sk_stream_write_space() and SOCK_WAKE_SPACE. */
void sl_sock_async_space_slow(struct sl_stack *s, struct sl_sock *so);
static inline void sl_sock_async_space(struct sl_stack *s, struct sl_sock *so)
{
	if (__builtin_expect(so->life & SL_LIFE_NOSPACE, 0))
		sl_sock_async_space_slow(s, so);
}
/* Append buffer idx to the receive queue. */
void sl_sock_rxq_append(struct sl_stack *s, struct sl_sock *so, uint32_t idx, uint32_t bytes);
/* A packet for so taken on this CPU (SO_INCOMING_CPU; struct sl_sock). */
void sl_sock_cpu_note(struct sl_sock *so);

/* timer.c: the wheel (1 ms ticks, SLUICE_WHEEL_SLOTS slots, longer
 * deadlines go round again).  sl_timer_set() never moves an entry later:
 * a socket may be called before its deadline and must re-arm itself. */
void sl_timer_set(struct sl_stack *s, struct sl_sock *so, uint64_t due_ms);
void sl_timer_cancel(struct sl_stack *s, struct sl_sock *so);
/* Fire every deadline up to now; returns how many fired. */
int sl_timer_run(struct sl_stack *s, uint64_t now_us);
/* The stack's clock changed (tests): move the wheel to now_ms, keeping
 * every pending deadline the same distance ahead. */
void sl_timer_rebase(struct sl_stack *s, uint64_t now_ms);

/* Loopback packets one unlock delivers at most (see sl_unlock()). */
#define SL_LO_BUDGET	4096

/*
 * Deliver packets queued for the stack's own addresses, at most *budget of
 * them (counted down); lock held.  Returns true if some are left: they wait
 * for the next holder (sl_unlock() and sluice_stack_poll() go on), so no
 * loop of packets begetting packets can keep one process in the stack.
 */
bool sl_stack_drain_loopback(struct sl_stack *s, unsigned int *budget);

/* ip.c */
void sl_ip_input(struct sl_stack *s, uint32_t idx);
/* Send the IPv4 packet in idx (header filled except id/csum/ttl when
 * fill_hdr); consumes idx unless keep is set. */
int sl_ip_output(struct sl_stack *s, uint32_t idx, bool keep);
/* Queue packet first (a chained segment ending with last, or first again)
 * for delivery inside the stack. */
void sl_ip_loopback(struct sl_stack *s, uint32_t first, uint32_t last);
/* Queue the one-buffer packet idx (SL_BUF_LOCAL) for delivery inside the
 * stack. */
void sl_ip_loopback_one(struct sl_stack *s, uint32_t idx);
/* Copy packet idx (from its off, len bytes) into a fresh buffer; returns
 * it, or SLUICE_IDX_NONE. */
uint32_t sl_pkt_copy(struct sl_stack *s, uint32_t idx);
/* The socket's IP_TTL and IP_TOS into the header sl_ip_build() made. */
void sl_ip_sock_hdr(struct sl_stack *s, uint32_t idx, const struct sl_sock *so);
/* Whether so's packets carry DF, by its IP_MTU_DISCOVER (ip.c). */
bool sl_ip_df(const struct sl_sock *so);
/* Set the TTL of the IPv4 packet in idx (sl_ip_build() gave it 64). */
void sl_ip_set_ttl(struct sl_stack *s, uint32_t idx, uint8_t ttl);
/* Linux's default net.ipv4.neigh.default.unres_qlen_bytes. */
#define SL_UNRES_QLEN_BYTES	212992u
/* A packet waiting for its neighbour: a copy of idx joins the list at
 * *hold (linked by next_idx, oldest first), the oldest dropped and
 * counted under c while the list is more than s->unres_qlen_bytes. */
void sl_hold_add(struct sl_stack *s, uint32_t *hold, uint32_t idx, enum sl_counter c);
/* The neighbour resolved: the list at *hold, emptied; the caller sends
 * and frees each, oldest first, unlinking it with sl_hold_next() (the
 * one after idx, or SLUICE_IDX_NONE). */
uint32_t sl_hold_take(struct sl_stack *s, uint32_t *hold);
uint32_t sl_hold_next(struct sl_stack *s, uint32_t idx);
/* Free every packet at *hold, each counted under c. */
void sl_hold_drop(struct sl_stack *s, uint32_t *hold, enum sl_counter c);
/* Free a received packet, all of a chained segment's buffers. */
void sl_pkt_free(struct sl_stack *s, uint32_t idx);
/* Fill an IPv4 header at the front of buffer idx, whose data already holds
 * the transport header and payload at off + 20. */
void sl_ip_build(struct sl_stack *s, uint32_t idx, uint8_t proto, uint32_t saddr,
		 uint32_t daddr, uint16_t payload_len);
/* The stack's own address or 127/8: a packet to it never leaves the
 * stack (sl_ip_output() queues it for sl_stack_drain_loopback()). */
static inline bool sl_ip_is_local(const struct sl_stack *s, uint32_t addr)
{
	/* 127/8, and the handles of ::1 and the stack's IPv6 addresses
	 * (below: SL_V6TOK_LO, _ME, _LL). */
	return (s->lib->ip_addr && addr == s->lib->ip_addr) ||
	       (ntohl(addr) >> 24) == 127 || ntohl(addr) - 1u < 3u;
}
/* A broadcast address: limited, lo's (127.255.255.255: Linux's lo is
 * 127.0.0.1/8 in every namespace) or the stack's subnet's (ip.c). */
bool sl_ip_is_bcast(const struct sl_stack *s, uint32_t addr);

/* icmp.c */
void sl_icmp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen);
void sl_icmp_send_unreach(struct sl_stack *s, uint32_t orig_idx, uint8_t code);
/* An ICMP error of type and code about the packet in orig_idx (kept). */
void sl_icmp_send_error(struct sl_stack *s, uint32_t orig_idx, uint8_t type, uint8_t code);
/* Whether an ICMP error of type and code to daddr may go now (Linux
 * icmpv4_xrlim_allow(), icmp_global_allow()); counts the refusals. */
bool sl_icmp_allow(struct sl_stack *s, uint8_t type, uint8_t code, uint32_t daddr);
/* The two halves of that, shared with ICMPv6 (ip6.c): the host-wide
 * bucket refilled to now (ms) and not empty (the caller takes its token
 * once the peer's bucket allows); destination daddr's bucket in table
 * tab (SL_ICMP_RL_N entries; a new one takes the least recently used),
 * one message each tmo ms, SL_XRLIM_BURST saved up
 * (inet_peer_xrlim_allow()). */
#define SL_XRLIM_BURST	6u
bool sl_icmp_global_ok(struct sl_stack *s, uint64_t now);
bool sl_icmp_peer_allow(struct sl_icmp_rl *tab, const uint8_t *daddr, uint64_t now,
			uint32_t tmo);

/* ip6.c: IPv6 (RFC 8200) and ICMPv6 (RFC 4443), lib/proto/README.md "IPv6".
 * Input of the IPv6 packet in idx (consumed). */
void sl_ip6_input(struct sl_stack *s, uint32_t idx);
/* The hop limit of IPv6 packets that set none (sl_region.ip6_hlim). */
static inline uint8_t sl_ip6_hlim(const struct sl_stack *s)
{
	uint32_t h = SL_READ_ONCE(s->lib->ip6_hlim);

	return h && h <= 255 ? (uint8_t)h : IP6_DEFHLIM_;
}
/* ::1 or the stack's own IPv6 address. */
bool sl_ip6_is_local(const struct sl_stack *s, const uint8_t *a);
/* Is a on the stack's link: a group, link-local, or on its address's
 * prefix (ip6_plen)?  Else a router's (sl_ip6_output()). */
bool sl_ip6_on_link(const struct sl_stack *s, const uint8_t *a);
/* Fill an IPv6 header at the headroom of idx, whose data holds plen bytes
 * of next header nxt at off + 40 (hlim 0: 64). */
void sl_ip6_build(struct sl_stack *s, uint32_t idx, uint8_t nxt, const uint8_t *saddr,
		  const uint8_t *daddr, uint16_t plen, uint8_t tclass, uint32_t flow, uint8_t hlim);
/* Send the IPv6 packet in idx (consumed): to the stack itself, or on the
 * link to its on-link destination. */
int sl_ip6_output(struct sl_stack *s, uint32_t idx);
/* Linux's automatic flow label (auto_flowlabels 1) for a flow: keyed
 * hash, 20 bits, never 0. */
uint32_t sl_ip6_flowlabel(const struct sl_stack *s, const uint8_t *saddr, const uint8_t *daddr,
			  uint8_t nxt, uint32_t ports);
/* Neighbour Discovery (RFC 4861): the link address of on-link nh in
 * mac (0), or -EAGAIN (not known yet: a solicitation goes, a copy of
 * packet idx waits for the answer, the caller keeps idx); the NUD timers,
 * every 100 ms or so. */
int sl_nd_resolve(struct sl_stack *s, const uint8_t *nh, uint8_t *mac, uint32_t idx);
void sl_nd_timer(struct sl_stack *s);
/* Link every IPv6 neighbour entry in use into its hash chain again
 * (recovery: a process may have died between two links). */
void sl_nd_rehash(struct sl_stack *s);
/* An ICMPv6 error about the packet in orig_idx (kept), RFC 4443 2.4. */
void sl_icmp6_send_error(struct sl_stack *s, uint32_t orig_idx, uint8_t type, uint8_t code,
			 uint32_t info);

/*
 * IPv6 sockets (ip6.c, "IPv6 sockets"): an IPv6 address lives in the
 * 32-bit address fields of sockets, lookups and TIME-WAIT as a handle in
 * 0.0.0.0/8, a range IPv4 never delivers (a link's 0/8 source is a
 * martian, ip.c; the preload sends a program's 0/8 to the kernel): ::1
 * is SL_V6TOK_LO, the stack's own address SL_V6TOK_ME, peers handles from
 * SL_V6TOK_BASE in struct sl_region.v6tok.  TCP and UDP run unchanged on
 * the handles; the IPv6 header is made on the way to the link
 * (sl_ip6_output_tok()) and taken off on the way in (ip6.c), so IPv4's
 * path is what it was.  Inside the stack packets between handles stay as
 * IPv4-shaped headers.
 */
#define SL_V6TOK_LO	htonl(1u)
#define SL_V6TOK_ME	htonl(2u)
#define SL_V6TOK_LL	htonl(3u)	/* the stack's link-local address */
#define SL_V6TOK_BASE	4u
static inline bool sl_v6tok(uint32_t a)
{
	return a && !(ntohl(a) >> 24);
}
/* A handle of one of the stack's own addresses (::1 among them). */
static inline bool sl_v6tok_own(uint32_t a)
{
	return ntohl(a) - 1u < 3u;
}
/* fe80::/10 (RFC 4291 2.5.6): an address that needs a scope. */
static inline bool sl_ip6_is_ll(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}
/* Is the handle tok a link-local peer's (or the stack's own)? */
bool sl_v6tok_is_ll(const struct sl_stack *s, uint32_t tok);
/* The stack's link-local address (RFC 4862 5.3, lib/proto/README.md
 * "Link-local"): SL_LL_NONE until the global address is set on a link
 * with link addresses; TENTATIVE while Duplicate Address Detection runs
 * (RFC 4862 5.4: neither used nor answered for), then VALID, or
 * DADFAILED if another node has it. */
#define SL_LL_NONE	0u
#define SL_LL_TENTATIVE	1u
#define SL_LL_VALID	2u
#define SL_LL_DADFAILED	3u
/* Make the link-local address from the link address as the kernel makes
 * it for a new device of this namespace (addr_gen_mode: EUI-64, RFC 4291
 * 2.5.1 and appendix A) and start DAD with probes solicitations (0:
 * none, valid at once); the caller holds the lock. */
void sl_ip6_ll_start(struct sl_stack *s, uint32_t gen_mode, uint32_t probes);
/* The interface index the stack's link-local addresses are scoped to:
 * its device's (a module stack's), its TAP device's, else 0. */
static inline uint32_t sl_stack_ifindex(const struct sl_stack *s)
{
	return s->ifindex ? s->ifindex : SL_READ_ONCE(s->lib->tap_ifindex);
}
/* The address handle tok names into out (16 bytes): false if none. */
bool sl_v6tok_addr(const struct sl_stack *s, uint32_t tok, uint8_t *out);
/* The handle of a (16 bytes), 0 if it has none; _get gives it one (under
 * the lock; 0 if the table is full). */
uint32_t sl_v6tok_find(const struct sl_stack *s, const uint8_t *a);
uint32_t sl_v6tok_get(struct sl_stack *s, const uint8_t *a);
/* The IPv4-shaped packet in idx to an IPv6 peer's handle, sent as IPv6
 * (idx consumed unless keep, as sl_ip_output()). */
int sl_ip6_output_tok(struct sl_stack *s, uint32_t idx, bool keep);
/* A UDP datagram to an IPv6 peer larger than mtu (the IPv6 path MTU) in
 * IPv6 fragments (RFC 8200 4.5): hdr the IPv4-shaped header it would
 * have had (handles, traffic class as tos, hop limit as ttl), uh its UDP
 * header (the checksum made here), data its payload. */
int sl_ip6_output_frags(struct sl_stack *s, const struct sl_ip *hdr, const struct sl_udp *uh,
			const uint8_t *data, size_t dlen, uint32_t mtu);
/* The source address a socket bound to no address uses to daddr (the
 * route's: loopback's for 127/8, ::1's or the stack's own IPv6 address
 * for IPv6, else the stack's address). */
uint32_t sl_ip_src_for(const struct sl_stack *s, uint32_t daddr);

/* Path MTU (proto/ip.c): Linux's ip_rt_min_pmtu, ip_rt_mtu_expires, and
 * reassembly's ipfrag_time and ipfrag_high_thresh. */
#define SL_PMTU_MIN		552
#define SL_PMTU_EXPIRES_MS	(10 * 60 * 1000)
#define SL_IPFRAG_TIME_MS	(30 * 1000)
#define SL_IP6FRAG_TIME_MS	(60 * 1000)	/* Linux's ip6frag_time */
#define SL_IPFRAG_HIGH_THRESH	(4u << 20)
/* The path MTU to daddr: the link's, or lower if ICMP said so. */
uint32_t sl_pmtu_get(struct sl_stack *s, uint32_t daddr);
/* An ICMP fragmentation needed's MTU for daddr; true if the path MTU fell. */
bool sl_pmtu_update(struct sl_stack *s, uint32_t daddr, uint32_t mtu);
/* An IPv6 fragment (ip6.c) made IPv4-shaped on handles (20-byte header,
 * its offset and MF), of identification id: into IPv4's reassembly
 * queues, with IPv6's time limit and checksums (ip.c). */
void sl_ip6_frag_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, uint32_t id);
/* Forget path MTUs and fragments past their time. */
void sl_ip_expire(struct sl_stack *s);
/* Send the datagram of header hdr, transport header l4 and payload data in
 * fragments of at most mtu bytes (DF clear). */
int sl_ip_output_frags(struct sl_stack *s, const struct sl_ip *hdr, const uint8_t *l4,
		       size_t l4len, const uint8_t *data, size_t dlen, uint32_t mtu);

/*
 * An ICMP error as it came (icmp.c), for the error queue: its type and
 * code, ee_info (the next-hop MTU of fragmentation needed, host order),
 * its sender (the offender), the bytes it quoted from quoted (qlen) and
 * whether Linux calls the error hard (icmp_err_convert[].fatal, the
 * errors a UDP socket without IP_RECVERR hears of).  NULL from callers
 * with no ICMP message (tests).
 */
struct sl_icmp_err {
	uint8_t type, code;
	bool hard;
	/* An ICMPv6 error (ip6.c): the quote is IPv4-shaped on handles, the
	 * offender is offender6, and IPV6_RECVERR queues it (Linux's
	 * ipv6_icmp_error(); IP_RECVERR queues ICMPv4's). */
	bool v6;
	uint32_t info;
	uint32_t offender;
	unsigned int qlen;
	uint8_t offender6[16];
};

/* Does so queue this ICMP error (IP_RECVERR for ICMP, IPV6_RECVERR for
 * ICMPv6)? */
static inline bool sl_recverr(const struct sl_sock *so, const struct sl_icmp_err *ie)
{
	return ie && ie->v6 ? (so->ip6_opt & SL_S6_RECVERR) != 0 :
			      (so->opt_flags & SL_SO_RECVERR) != 0;
}

/* One error of the queue, at the start of its buffer (errq.c); plen
 * bytes of what the error quoted follow it (the payload past the UDP
 * header, or from the TCP header on, as Linux's ip_icmp_error() keeps). */
struct sl_errq_rec {
	uint32_t ee_errno;
	uint8_t origin, type, code, pad;	/* SO_EE_ORIGIN_*, ICMP type, code */
	uint32_t info;				/* ee_info */
	uint32_t offender;			/* the ICMP sender; 0: local */
	uint32_t daddr;				/* where the datagram went */
	uint16_t dport;				/* the quoted port; a local error's: the peer's, or 0 */
	uint16_t plen;
	uint64_t ts_us;				/* when it came (the stack's clock) */
	uint8_t offender6[16];			/* SO_EE_ORIGIN_ICMP6's sender */
};

/* sock_extended_err's origins (linux/errqueue.h, which needs time.h). */
#define SO_EE_ORIGIN_LOCAL_	1
#define SO_EE_ORIGIN_ICMP_	2
#define SO_EE_ORIGIN_ICMP6_	3

/* errq.c (lock held): queue an error for so (with SL_SO_RECVERR), or -errno
 * (-ENOBUFS: no room under SO_RCVBUF, or no buffer); wakes so. */
int sl_errq_add(struct sl_stack *s, struct sl_sock *so, const struct sl_errq_rec *rec,
		const void *pay, unsigned int plen);
/* Take the oldest error: its record into *rec, the first len bytes of its
 * quote into buf; the bytes copied, -EAGAIN if none.  *trunc when the quote
 * was longer.  SO_ERROR follows as Linux's sock_dequeue_err_skb(). */
long sl_errq_take(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len,
		  struct sl_errq_rec *rec, bool *trunc);
/* Drop every queued error (IP_RECVERR off, the socket freed). */
void sl_errq_purge(struct sl_stack *s, struct sl_sock *so);
/* A UDP or TCP error for so (found by the quoted header), as Linux's
 * ip_icmp_error(): queued with the payload past skip bytes of the quote. */
void sl_errq_icmp(struct sl_stack *s, struct sl_sock *so, const struct sl_ip *q, int err,
		  const struct sl_icmp_err *ie, unsigned int skip);

/* udp.c */
void sl_udp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen);
/* An ICMP error quoted this UDP header; err is a positive errno.  (TCP's
 * input and ICMP entry points are in tcp.h.) */
void sl_udp_icmp_error(struct sl_stack *s, const struct sl_ip *quoted, int err,
		       const struct sl_icmp_err *ie);

/* filter.c: module filters for the ports of a kring stack (lock held).
 * Take: so is about to hold (laddr, *lport); *lport 0 asks the kernel for
 * an ephemeral port; conn4: a TCP connect() to an IPv4 peer binds it (an
 * AF_INET6 socket's IPv4 filter alone).  0 or -errno (-EADDRINUSE,
 * -EACCES, ...).  Release: so no longer holds its port (unhashed for
 * good). */
int sl_filter_take(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t *lport,
		   bool conn4);
/* The kernel socket that reserves so's port (the filter so holds for its
 * own address), as a new close-on-exec fd of this process (the module's
 * FILTER_FD): its kernel twin.  -ENOENT: so holds no such filter. */
int sl_filter_twin_fd(struct sl_stack *s, const struct sl_sock *so);
void sl_filter_release(struct sl_stack *s, struct sl_sock *so);
/* Filter id (of type, lport, flt_laddr; IPv6's with v6) lost its holder:
 * to another socket on the port, else a TIME-WAIT entry there, else
 * deleted. */
void sl_filter_pass(struct sl_stack *s, uint8_t type, uint16_t lport, uint32_t id,
		    uint32_t flt_laddr, bool v6);
/* Tests stand in for the module's filter ioctls here (NULL: ioctl(2)). */
extern int (*sl_filter_ioctl)(int fd, unsigned long req, void *arg);
/*
 * A kernel socket the caller bound itself to the address and port it is
 * about to bind so to (the preload's twin, in the program's own family
 * and with its options), offered as the reservation of the filter this
 * thread's next sl_filter_take() adds (SLUICE_FILTER_RESV_FD), where the
 * module takes one (SLUICE_FEATURE_FILTER_SOCK); -1: none.  Set just
 * before the bind, cleared after; sl_filter_offer_taken says whether a
 * filter took it (else it reserves nothing of the module's: the port's
 * filter was another socket's already, or none is needed).
 */
extern __thread int sl_filter_offer_fd __attribute__((tls_model("initial-exec")));
extern __thread bool sl_filter_offer_taken __attribute__((tls_model("initial-exec")));

#endif /* SLUICE_PROTO_H */
