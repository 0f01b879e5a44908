/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * core/: the per-process handle on a shared region (struct sl_stack), its
 * checked geometry and offset helpers, packet buffers, counters, the lock,
 * the link interface (struct sl_link_ops) and the region itself.  Nothing
 * here knows a protocol; every layer above includes this header.
 *
 * Everything in the region is reached through an offset or an index from
 * r (the mapped header); nothing stored in the region is a pointer, so a
 * parent and a forked child, or unrelated processes, may map it anywhere.
 */
#ifndef SLUICE_CORE_H
#define SLUICE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <sluice/sluice.h>

#include "core/shm.h"
#include "core/wire.h"

struct sl_stack;
struct sl_sock;

/* Entries in the readiness journal (sl_region.chg_ring): a power of 2. */
#define SL_CHG_RING	1024

/* Sockets socket() takes without the lock, and connect()s waiting for
 * it (sl_region.ready[], pend[]). */
#define SL_READY_N	8
#define SL_READY_NONE	((uint64_t)SLUICE_IDX_NONE)
#define SL_PEND_N	16
/* A wheel empty this long lets sleepers sleep long (run/wait.c); a busy
 * stack's wheel empties and fills between packets, and a long sleeper
 * must be woken when it fills again (the timer kick), so only a quiet
 * one counts. */
#define SL_WHEEL_QUIET_MS	1000
/* Wait channels (struct sl_region.wq): a power of two. */
#define SL_WQ_N		256
/*
 * Epoll watch groups (preload/epoll.c): one a set of the Sluice side,
 * each a wait channel after the SL_WQ_N of the sockets, wq[SL_WQ_N + g].
 * A socket names the group of the set that watches it (sl_sock.epw: g + 1,
 * 0 none, SL_EPW_SHARED more than one), and its readiness changes wake
 * that group's sleepers alone, as the kernel's ep_poll_callback wakes
 * the sets a socket is in.  A chans[] entry (api.h) with SL_CHAN_EPW set
 * names group (entry & (SL_EPW_N - 1)) rather than a socket's channel.
 */
#define SL_EPW_N	256
/*
 * Entries in each watch group's ready ring (sl_region.epw_ring): a power
 * of 2.  sl_sock_wake() appends a socket to the ring of the group it
 * names (every owned group's, SL_EPW_SHARED), as the kernel's
 * ep_poll_callback() appends an epitem to its set's ready list; the
 * group's wq[].chg is the ring's head.  A set reads its own ring alone:
 * a look costs O(its own sockets' changes), not the stack's.
 */
#define SL_EPW_RING	1024
#define SL_WQ_ALL	(SL_WQ_N + SL_EPW_N)
#define SL_CHAN_EPW	0x40000000
#define SL_EPW_SHARED	0xffffu

/* The wq[] entry of a chans[] entry: a watch group's, or the channel of
 * the socket it names. */
static inline uint32_t sl_chan_wq(int chan)
{
	return ((uint32_t)chan & SL_CHAN_EPW) ? SL_WQ_N + ((uint32_t)chan & (SL_EPW_N - 1)) :
						 (uint32_t)chan & (SL_WQ_N - 1);
}
#define SL_XWAKE_N	16
#define SL_SPIN_SLOTS	16
#define SL_BELLS	256
#define SL_BELL_ANY	0xffffffffu
/* An async bell (O_ASYNC, run/bell.c): chan is this bit | the socket's
 * index; rung for the socket's events (sl_sock_async()), never by waits. */
#define SL_BELL_ASYNC	0x80000000u
/* ... and with this bit too, no bell but the socket's owner (F_SETOWN,
 * F_SETOWN_EX), for SIGURG (run/bell.c, sl_bell_ring_async()): pid is
 * the owner's id, tid its type (F_OWNER_TID, _PID, _PGRP). */
#define SL_BELL_URG	0x40000000u
/* An exclusive bell (EPOLLEXCLUSIVE in a mixed set, run/bell.c): chan is
 * this bit | the socket's index; counted in the socket's xsleepers, and
 * one of them rung a change, as one futex waiter on its xseq is woken
 * (sl_bell_ring_excl()). */
#define SL_BELL_X	0x20000000u
/* An async note (sl_sock_async()) carries the event's si_code above the
 * socket's index (below 2^20), and the ring's byte says it to the bell's
 * process (lib/preload/README.md, "O_ASYNC"): Linux's POLL_IN .. POLL_HUP
 * (asm-generic/siginfo.h), as sk_wake_async() gives them. */
#define SL_ASYNC_WHY_SHIFT	24
#define SL_ASYNC_WHY_MASK	(7u << SL_ASYNC_WHY_SHIFT)
#define SL_POLL_IN	1u
#define SL_POLL_OUT	2u
#define SL_POLL_ERR	4u
#define SL_POLL_PRI	5u
#define SL_POLL_HUP	6u
/* POLL_PRI of a new urgent pointer whose segment queued nothing in order
 * (a bare ACK with URG, a segment out of order or dropped for want of
 * room): SIGURG and POLL_PRI without the POLL_IN that POLL_PRI's event
 * brings (lib/preload/async.c, event()).  No si_code: async.c's own. */
#define SL_POLL_PRI_ALONE	7u
/* A ring's byte that is no event: the bell's lost[] counts changed. */
#define SL_ASYNC_LOOK	0x80u
#define SL_BELL_FREE	0u
#define SL_BELL_CLAIMED	2u
/* connect()'s port perturbation buckets (sl_region.port_perturb): a
 * power of two. */
#define SL_PORT_PERTURB	256

/* Counter blocks: one a process (SL_PROC_MAX processes count apart). */
#define SL_NEIGH_MAX	64
#define SL_PROC_MAX	16
#define SL_COUNTERS_MAX	192

struct sl_counters {
	uint64_t c[SL_COUNTERS_MAX];
};

/*
 * A path MTU below the link's, learnt for one destination from an ICMP
 * "fragmentation needed" (RFC 1191), forgotten at expires_ms (Linux
 * ip_rt_mtu_expires, 10 min).  daddr 0: free.
 */
#define SL_PMTU_N	64
struct sl_pmtu {
	uint32_t daddr;
	uint32_t mtu;
	uint64_t expires_ms;
};

/* ICMP and ICMPv6 errors to one destination (Linux inet_peer
 * rate_tokens/rate_last), keyed by IPv6 address: IPv4 ones v4-mapped
 * (all zero: free).  One table for each family (sl_icmp_peer_allow()). */
#define SL_ICMP_RL_N	64
struct sl_icmp_rl {
	uint8_t daddr[16];
	uint32_t tokens_ms;
	uint64_t last_ms;
};

/*
 * One IPv6 neighbour (RFC 4861 7.3.2, proto/ip6.c): its address, link
 * address and state (SL_ND_*), probes sent in this state, when the state
 * was entered or last confirmed, and while INCOMPLETE the packets
 * waiting for the answer (hold_idx, a list as sl_neigh's).
 */
#define SL_ND_FREE		0
#define SL_ND_INCOMPLETE	1
#define SL_ND_REACHABLE		2
#define SL_ND_STALE		3
#define SL_ND_DELAY		4
#define SL_ND_PROBE		5
struct sl_neigh6 {
	uint8_t ip[16];
	uint8_t mac[6];
	uint8_t state;
	uint8_t tries;
	uint32_t hold_idx;
	uint64_t updated_ms;
	uint32_t hnext;		/* the next entry of its hash chain + 1, 0 none */
};
/* IPv6 neighbours a stack keeps: Linux's gc_thresh3 (a server's on-link
 * clients each need one), found by a hash of their address
 * (sl_region.neigh6_hash). */
#define SL_NEIGH6_MAX	1024

/*
 * One datagram being reassembled (RFC 791, RFC 815): its fragments are
 * buffers linked by next_idx from head in offset order, each with its
 * payload offset in seq and its IP header length in aux.  len: the
 * payload's length once the last fragment came (0 before), meat the bytes
 * held, bufs the buffers.  daddr 0: free.
 */
#define SL_FRAGQ_N	32
#define SL_FRAGQ_LAST	0x01	/* the fragment without MF came */
#define SL_FRAGQ_FIRST	0x02	/* the fragment at offset 0 came */
#define SL_FRAGQ_V6	0x04	/* IPv6's (on handles: proto/ip6.c) */
struct sl_fragq {
	uint32_t saddr, daddr;
	uint32_t id;			/* IPv4's (network order), or IPv6's 32 bits */
	uint8_t proto, flags;
	uint32_t len, meat, head, bufs;
	uint64_t expires_ms;
};

/* sl_neigh.state */
#define SL_NEIGH_FREE		0
#define SL_NEIGH_PENDING	1	/* request sent, no answer yet */
#define SL_NEIGH_VALID		2

/*
 * One neighbour (ARP) entry, for stacks that resolve addresses themselves
 * (no module): ip (network order), state, the packets waiting for the
 * answer (hold_idx: the oldest, the rest linked by next_idx in the order
 * sent, as sl_hold_add() keeps them; or SLUICE_IDX_NONE), the link
 * address, requests sent while pending, the last confirmation or request.
 */
struct sl_neigh {
	uint32_t ip;
	uint32_t state;
	uint32_t hold_idx;
	uint8_t mac[6];
	uint16_t tries;
	uint64_t updated_ms;
};

#define SL_MC_GROUPS	64	/* groups counted in the region (sl_region.mc_groups) */

/*
 * The library's own header in a region, at SLUICE_REGION_LIB_OFF (the
 * module's struct sluice_region is before it; the module never reads
 * this).  Its layout is SL_LAYOUT_VERSION's.
 */
struct sl_region {
	/*
	 * The layout version of the library that laid out the region past
	 * the module's header (SL_LAYOUT_VERSION): first, at the same offset
	 * in every version, so any build can read it and refuse another's.
	 */
	uint32_t lib_layout;
	uint32_t broken_pid;		/* pid found dead holding the lock */
	uint32_t ip_addr;		/* network order */
	uint32_t ip_mask;		/* network order */
	uint32_t ip_gateway;		/* network order, 0 for none */
	uint8_t mac[6];			/* link address, Ethernet-style links */
	/*
	 * Nonzero while `sluice tcpdump` captures (core/capture.c): the one
	 * branch the packet paths take when nobody does, on a line they read
	 * anyway (the addresses above).  Set after cap_pid, with release.
	 */
	uint16_t cap_on;
	uint64_t lock_contended;	/* times the lock was found held (atomic) */
	/*
	 * Those of sluice_region.sleepers that sleep in poll on a stack fd
	 * (with a link fd to watch as well) rather than on the futex; counted
	 * before sleepers, so whoever sees them in sleepers sees them here.
	 */
	uint32_t poll_sleepers;
	/*
	 * Spinners (run/wait.c, sl_spin_claim()): each slot holds the time
	 * (CLOCK_MONOTONIC, µs) until which a thread of the stack spins, or
	 * 0.  At most as many threads spin at once as the machine has CPUs:
	 * more take the CPU the thread that would end their wait needs.  A
	 * slot frees itself when its time is up (a process that dies while
	 * spinning leaks nothing).
	 */
	uint64_t spin_until[SL_SPIN_SLOTS];
	/*
	 * The timer keeper (run/wait.c, bound_ms(), sl_keeper_ran()): the
	 * thread that keeps the stack's timers while they are armed, so the
	 * others need not wake for them: asleep, it wakes for the wheel's
	 * next deadline; running the stack, its turns run them.  Its token
	 * (low half) and the time, in ms of sl_now() modulo 2^32, until
	 * which its claim holds (high half: its planned wake-up, or its last
	 * turn that moved the wheel, plus KEEPER_HOLD_MS); compare-and-swap.
	 * A keeper that neither sleeps nor runs the stack lets it lapse.
	 */
	uint64_t keeper;
	/*
	 * Until when (CLOCK_MONOTONIC, µs) nobody of the stack spins: a
	 * spinner found it had been taken off its CPU mid-spin (run/wait.c,
	 * sl_spin_gap()), so runnable threads outnumber the CPUs and a spin
	 * takes the CPU a peer needs.
	 */
	uint64_t crowded_until;
	/*
	 * When (CLOCK_MONOTONIC, µs) a would-be spinner last counted the
	 * machine's runnable threads (run/wait.c, runq_crowded()): one count
	 * a stack each RUNQ_EVERY_US at most, claimed by compare-and-swap.
	 */
	uint64_t runq_at;
	/*
	 * The value of sluice_region.ksock_released up to which a lock
	 * holder has closed the released sockets, so one holder, not every
	 * process, looks for them after each release.
	 */
	uint32_t ksock_handled;
	/*
	 * The capturing tool's pid (compare-and-swap, taken over when that
	 * process is dead): its ring is /dev/shm/sluicecap-NAME-PID.
	 */
	int32_t cap_pid;
	/* The TAP device of the stack's TAP link, if it has one, so that a
	 * process that attaches by name opens a queue of its own (link/tap.c). */
	char tap_name[16];
	/* That device's ifindex in its namespace, written with tap_name: the
	 * interface a TAP stack's link-local addresses are scoped to
	 * (sin6_scope_id, IPV6_PKTINFO; lib/proto/README.md "Link-local"). */
	uint32_t tap_ifindex;

	/* Stack-wide state, written only under the lock. */
	uint32_t buf_free_idx __attribute__((aligned(64)));
	uint32_t buf_free_count;
	uint32_t sock_free_idx;
	/* Slots from here up have never been used: their memory is the
	 * file's holes, not committed until a socket takes one
	 * (sl_sock_alloc()); walks over the table stop here (sl_sock_top()). */
	uint32_t sock_fresh;
	/* Slots freed since the table was last trimmed (proto/sock.c,
	 * sl_sock_trim()): a trim walks the table once enough frees have
	 * paid for it; sock_trim_seen, that count at the last look. */
	uint32_t sock_trim_frees, sock_trim_seen;
	uint32_t wheel_slot_idx;	/* slot the wheel has run up to */
	uint64_t wheel_now_ms;		/* time the wheel has run up to */
	/* Sockets on the wheel, and the wheel time it last became empty:
	 * empty for a second (SL_WHEEL_QUIET_MS), nobody need wake to run
	 * timers (run/wait.c sleeps long). */
	uint32_t timers_armed;
	uint64_t wheel_empty_ms;
	/* Ephemeral ports (proto/sock.c): bind(0) draws its start from
	 * port_seq; connect() adds port_perturb[] of its destination's
	 * bucket to a keyed hash, as Linux's table_perturb. */
	uint32_t port_seq;
	uint32_t ip_id_next;
	uint32_t tcp_embryos;		/* TCP connections in SYN-RECEIVED from a listener */
	/*
	 * TIME-WAIT (proto/tcp/tcp_tw.c): a ring of s->tw_max entries past
	 * the timer wheel, written at tw_head and expired from tw_tail (both
	 * run free; the entry is the position mod tw_max), tw_count of them
	 * live, tw_peak the most there were at once.
	 */
	uint32_t tw_head, tw_tail, tw_count, tw_peak;
	/* TCP sockets closed by their program and still finishing
	 * (SL_SF_ORPHAN): the helper's count, kept here so that it does not
	 * walk the table every turn (api/helper.c).  Lock held; recovery
	 * counts them again. */
	uint32_t tcp_orphans;
	/*
	 * Multicast groups the stack's UDP sockets hold (proto/udp.c): each
	 * group with its count of memberships, so a datagram to a group and
	 * a socket's leave ask here rather than walk every slot.  Memberships
	 * of groups past the table's SL_MC_GROUPS are counted in mc_over
	 * (while any are, a group not found here is looked for in the
	 * table of sockets).  Lock held; recovery counts them again.
	 */
	uint32_t mc_over;
	struct sl_mc_group {
		uint32_t group, n;	/* n == 0: a free entry */
	} mc_groups[SL_MC_GROUPS];
	/* High-water marks of the socket slots and buffers in use (sluice
	 * info), for sizing a stack to its load. */
	uint32_t sock_peak, buf_peak;
	/*
	 * Memory given back (proto/sock.c sl_sock_trim(), core/buf.c
	 * sl_buf_trim()), lock held: sock_gen_floor, the highest generation
	 * a slot given back had (a slot taken fresh again starts above it,
	 * so an old (index, generation) never names its new socket);
	 * buf_trim_hi, the most buffers in use seen once a second since the
	 * last trim of the pool, and buf_trim_peak, buf_peak at that trim;
	 * mem_pinned, set by a link that registered the region's memory with
	 * a device (verbs): its pages must stay where they are.
	 */
	uint32_t sock_gen_floor;
	uint32_t buf_trim_hi, buf_trim_peak;
	uint32_t mem_pinned;
	/*
	 * Intent: the sockets (index + 1; 0 none) the holder is changing,
	 * named before it starts (proto.h, sl_sock_busy()), so that the
	 * process that takes the lock over from a dead holder knows which
	 * may be half changed (proto/recover.c).
	 */
	uint32_t busy[2];
	/*
	 * The pid of the stack's helper process, which finishes orphaned
	 * connections after their programs have gone (api/helper.c), or 0;
	 * claimed by compare-and-swap, taken over when its process is dead.
	 */
	int32_t helper_pid;
	uint64_t tcp_isn_secret[2];	/* RFC 6528 keyed ISN, set at creation */

	/*
	 * Sockets before the stack sees them (proto/sock.c).  ready[]: slots
	 * allocated under the lock (SL_SOCK_RESERVED) for socket() to take
	 * without it; an entry is the index in its low half and, while a
	 * process is taking it, that pid in its high half (SL_READY_NONE:
	 * empty).  ready_want: a holder should fill the pool.  pend[]:
	 * sockets whose connect() waits for the lock (SLUICE_IDX_NONE:
	 * empty); pend_hint: one may be there.
	 */
	uint64_t ready[SL_READY_N] __attribute__((aligned(64)));
	uint32_t ready_want;
	uint32_t pend_hint;
	uint32_t pend[SL_PEND_N];

	/*
	 * The readiness journal: every readiness change (sl_sock_wake())
	 * appends the socket's index, under the lock; chg_seq counts them.
	 * Readers (the preload's epoll sets) read it without the lock and
	 * look only at the sockets named since their last look: O(changes),
	 * not O(sockets in the set).  A reader more than SL_CHG_RING behind
	 * has lost entries and looks at everything once.
	 */
	/*
	 * Wait channels: a process that sleeps on sockets all of one channel
	 * (socket index mod SL_WQ_N: a blocking call on one socket, a poll
	 * of a few) counts itself in that channel's sleepers and sleeps on
	 * its seq, so a readiness change wakes the sleepers of its own
	 * channel, not every sleeper of the stack (run/README.md).
	 */
	struct sl_wq {
		uint32_t seq, sleepers;
		uint32_t bells;		/* mixed sleepers on it (bells[]) */
		/* The latest seq a sleeper read to sleep on (a wrapping
		 * max; api.c, wq_arm()): a change that moves seq past it
		 * needs no FUTEX_WAKE, every sleeper having been woken or
		 * finding the word moved (proto/sock.c, sl_wake_chan()). */
		uint32_t armed;
		/* A watch group's: its sockets' readiness changes, all of
		 * them, under the lock: the head of its ready ring
		 * (epw_ring[g]), stored with release after the entry it
		 * counts (proto/sock.c, preload/epoll.c ep_ring()). */
		uint32_t chg;
	} wq[SL_WQ_ALL] __attribute__((aligned(64)));
	/* The pid whose epoll set has watch group g (0: free; a dead pid's
	 * is taken by the next claim: preload/epoll.c). */
	uint32_t epw_owner[SL_EPW_N];
	uint32_t wq_sleepers;		/* the sum of wq[].sleepers */
	/*
	 * Mixed sleepers (run/bell.c): a thread waiting in poll or epoll on
	 * Sluice and kernel fds at once, without the module, sleeps in the
	 * kernel with its thread's bell (a datagram socket with an abstract
	 * name) among the fds, and registers here: the channel of its Sluice
	 * sockets (counted in wq[chan].bells), or SL_BELL_ANY (counted in
	 * bells_any: woken by every change).  The holder that changes a
	 * socket of that channel rings the bell after unlock: one datagram.
	 */
	struct sl_bell {
		uint32_t state;		/* SL_BELL_FREE, _CLAIMED, or its generation (odd) */
		uint32_t chan;		/* wait channel, SL_BELL_ANY, or SL_BELL_ASYNC | socket */
		uint32_t pid, tid;	/* whose bell (its name); an owner's (SL_BELL_URG) */
	} bells[SL_BELLS];
	uint32_t bells_top;		/* entries ever used: the scans' bound */
	uint32_t bells_gen;		/* the next generation, less its odd bit */
	uint32_t bells_any;		/* entries of SL_BELL_ANY */

	uint16_t port_perturb[SL_PORT_PERTURB];

	/* What a wake-up costs on this machine, ns, as `sluice run`
	 * measured it for the first program that attached (run/wait.c,
	 * sl_wake_cost_ns()), for sluice info; 0 unknown. */
	uint32_t wake_cost_ns;
	/* Bumped (under the stack lock) by each hand-over of a socket to the
	 * kernel that other processes may hold too (struct sl_sock's ho_pid):
	 * an epoll or poll wait that sees it move looks at its items for
	 * sockets to switch (lib/preload/README.md, "Other processes"). */
	uint32_t ho_seq;

	uint32_t chg_seq __attribute__((aligned(64)));
	uint32_t chg_ring[SL_CHG_RING];

	/*
	 * The watch groups' ready rings: entry (wq[SL_WQ_N + g].chg mod
	 * SL_EPW_RING) of epw_ring[g] is written, under the lock, by the
	 * change that group's count then counts.  Readers (the sets of the
	 * group, one process or several after a fork) read without the lock
	 * from where each left off, and look at everything once when they
	 * fell more than SL_EPW_RING behind.  A page a group: only the rings
	 * of groups in use are ever touched (committed).
	 */
	uint32_t epw_ring[SL_EPW_N][SL_EPW_RING] __attribute__((aligned(64)));

	/* The loopback queue (buffer idx), on a line of its own. */
	uint32_t lo_head __attribute__((aligned(64)));
	uint32_t lo_tail;

	struct sl_neigh neigh[SL_NEIGH_MAX] __attribute__((aligned(64)));

	/* Path MTUs learnt from ICMP (proto/ip.c, RFC 1191), per destination. */
	struct sl_pmtu pmtu[SL_PMTU_N] __attribute__((aligned(64)));
	uint32_t pmtu_gen;		/* changes when an entry does */
	uint32_t pmtu_n;		/* entries in use */
	uint64_t ip_expire_ms;		/* the next look for what expired */
	/* ICMP errors sent: the global token bucket (proto/icmp.c; credit,
	 * last refill in ms) and one a destination. */
	uint32_t icmp_credit;
	uint64_t icmp_stamp_ms;
	struct sl_icmp_rl icmp_rl[SL_ICMP_RL_N];
	/* IPv4 reassembly (proto/ip.c): the queues and the bytes of the
	 * buffers they hold (truesize, as Linux's ipfrag_high_thresh counts). */
	struct sl_fragq fragq[SL_FRAGQ_N];
	uint32_t frag_mem;
	uint32_t frag_queues;

	/* IPv6 (proto/ip6.c): the stack's own address besides ::1 (all
	 * zero: none), its prefix length, and ICMPv6 errors sent per
	 * destination (the host-wide bucket is icmp_credit's, shared with
	 * ICMP as Linux shares it). */
	uint8_t ip6_addr[16];
	uint32_t ip6_plen;
	/* The hop limit of IPv6 packets with none set (Linux's
	 * net.ipv6.conf.default.hop_limit, read when the address is set;
	 * 0: 64). */
	uint32_t ip6_hlim;
	/* The stack's link-local address (proto/ip6.c, "Link-local"): made
	 * from the link address with the global one (all zero: none),
	 * SL_LL_* its state, and while TENTATIVE when Duplicate Address
	 * Detection acts next (ms) and the solicitations left to send. */
	uint8_t ip6_ll[16];
	uint32_t ip6_ll_state;
	uint32_t ip6_ll_probes;
	uint64_t ip6_ll_dad_ms;
	struct sl_icmp_rl icmp6_rl[SL_ICMP_RL_N];
	struct sl_neigh6 neigh6[SL_NEIGH6_MAX];
	/* Chains of neigh6 entries by a hash of their address: the first
	 * entry's index + 1, 0 none (proto/ip6.c, nd_find()). */
	uint32_t neigh6_hash[SL_NEIGH6_MAX];
	/* How many IPv6 peer addresses have a handle (struct sl_stack's
	 * v6tok, proto/ip6.c "IPv6 sockets"): appended under the lock, the
	 * count published after the entry (read without the lock by the
	 * preload). */
	uint32_t v6tok_n;

	/* Async bell i's events that found its datagram queue full
	 * (net.unix.max_dgram_qlen), by si_code: added by the ringer, taken
	 * by the bell's thread (run/bell.c, sl_bell_async_take()).  Here,
	 * not in struct sl_bell, so that the fields before keep their
	 * places (4 KiB, 64-byte multiple: those after keep their lines). */
	uint16_t bells_lost[SL_BELLS][8];

	/* Which process counts in which block of counters (below). */
	uint32_t counter_pid[SL_PROC_MAX] __attribute__((aligned(64)));

	/*
	 * Counters, only ever incremented, under the lock, by the process
	 * that owns the block: a stack's counter is the sum over the blocks,
	 * so no counter line moves between cores with every packet.
	 */
	struct sl_counters counters[SL_PROC_MAX] __attribute__((aligned(64)));
};

/*
 * A capture ring (core/capture.c, tools/tcpdump.c): a file in /dev/shm the
 * tool makes and every process of the stack maps while sl_region.cap_on.
 * Records of struct sl_cap_rec, each followed by its bytes and padded to
 * 8, never split at the end of data[]: a record whose len is 0 says "go
 * on at the start".  head and tail count bytes from the start (free
 * running; position = count mod size).  The stack's lock holder writes
 * at head and moves it with release; the tool reads up to head and moves
 * tail; a record that does not fit in what the tool has not read yet is
 * dropped and counted in drops.
 */
#define SL_CAP_MAGIC	0x50434c53u	/* "SLCP" */
struct sl_cap_ring {
	uint32_t magic;
	uint32_t size;			/* bytes of data[], a power of two */
	uint32_t snaplen;		/* bytes kept of each packet */
	uint32_t reserved;
	uint64_t head __attribute__((aligned(64)));
	uint64_t drops;
	uint64_t tail __attribute__((aligned(64)));
	uint8_t data[] __attribute__((aligned(64)));
};
struct sl_cap_rec {
	uint32_t len;			/* record bytes with header and padding; 0: wrap */
	uint32_t caplen;		/* bytes of the packet that follow */
	uint32_t origlen;		/* the packet's length */
	uint16_t flags;			/* SL_CAP_* */
	uint16_t reserved;
	uint64_t ts_ns;			/* CLOCK_REALTIME */
};
#define SL_CAP_OUT	0x1		/* sent (else received) */
#define SL_CAP_LO	0x2		/* the stack's own loopback (else its link) */
#define SL_CAP_ETH	0x4		/* a whole Ethernet frame (a link that frames:
					 * link/eth.c), else an IP packet */

_Static_assert(sizeof(struct sluice_region) <= SLUICE_REGION_LIB_OFF,
	       "the module's header ends before the library's");

/* Counters in sl_region.counters; X(name, description). */
#define SL_COUNTERS(X)							\
	X(ip_rx, "IPv4 packets received")				\
	X(ip_tx, "IPv4 packets sent")					\
	X(ip_rx_bad_hdr, "dropped: bad IPv4 header or length")		\
	X(ip_rx_bad_csum, "dropped: bad IPv4 header checksum")		\
	X(ip_rx_not_ours, "dropped: not addressed to this stack")	\
	X(ip_rx_martian, "dropped: martian source (ours or 127/8 from a link, 0/8)") \
	X(ip_rx_frag, "IPv4 fragments received (Linux ReasmReqds)")	\
	X(ip_reasm_ok, "IPv4 datagrams reassembled")			\
	X(ip_reasm_timeout, "reassemblies given up after ipfrag_time, 30 s")	\
	X(ip_reasm_overlap, "reassemblies dropped: overlapping fragments (RFC 5722)") \
	X(ip_reasm_dup, "dropped: duplicate IPv4 fragments")		\
	X(ip_reasm_mem, "dropped: fragments over ipfrag_high_thresh or the queues") \
	X(ip_reasm_bad, "reassemblies dropped: bad fragment length or end")	\
	X(ip_frag_ok, "datagrams sent in fragments (Linux FragOKs)")	\
	X(ip_frag_create, "fragments sent (Linux FragCreates)")		\
	X(ip_tx_toobig, "not sent: larger than the path MTU with DF (EMSGSIZE)") \
	X(pmtu_learnt, "path MTUs lowered by ICMP fragmentation needed")	\
	X(pmtu_expired, "learnt path MTUs forgotten after 10 min")	\
	X(pmtu_ignored, "ignored: fragmentation needed not below the path MTU") \
	X(ip_rx_options, "IPv4 packets with options (skipped)")		\
	X(ip_rx_proto, "dropped: unknown protocol")			\
	X(ip_tx_noroute, "not sent: no route or link")			\
	X(ip_tx_nobuf, "not sent: no packet buffer")			\
	X(loopback, "packets delivered within the stack")		\
	X(loopback_left, "unlocks that left loopback packets for later")	\
	X(loopback_chain, "segments within the stack spanning buffers")	\
	X(loopback_unchained, "spanning segments cut to their first buffer")	\
	X(icmp_rx, "ICMP messages received")				\
	X(icmp_rx_bad, "dropped: bad ICMP message")			\
	X(icmp_echo_replied, "ICMP echo requests answered")		\
	X(icmp_unreach_rx, "ICMP destination unreachable received")	\
	X(icmp_unreach_tx, "ICMP destination unreachable sent")		\
	X(icmp_timxceed_tx, "ICMP time exceeded sent (fragment reassembly)")	\
	X(icmp_ratelimit_global, "ICMP errors not sent: icmp_msgs_per_sec/burst") \
	X(icmp_ratelimit_host, "ICMP errors not sent: icmp_ratelimit to one host") \
	X(icmp_rx_oow, "ignored: ICMP quoting a TCP sequence outside the window") \
	X(udp_rx, "UDP datagrams received")				\
	X(udp_tx, "UDP datagrams sent")					\
	X(udp_rx_bad, "dropped: bad UDP length or checksum")		\
	X(udp_rx_noport, "dropped: UDP to a closed port")		\
	X(udp_rx_full, "dropped: UDP receive queue full")		\
	X(tcp_rx, "TCP segments received")				\
	X(tcp_tx, "TCP segments sent")					\
	X(tcp_rx_bad, "dropped: bad TCP header or checksum")		\
	X(tcp_tw_recycled, "TIME-WAIT connections ended early by connect()")	\
	X(tcp_tw_overflow, "TIME-WAIT entries dropped, oldest first, the table full") \
	X(tcp_tw_killed, "TIME-WAIT entries ended by a reset or a new SYN")	\
	X(tcp_tw_table_reset, "TIME-WAIT table found inconsistent and emptied") \
	X(tcp_rx_noport, "TCP segments to no socket (RST sent)")	\
	X(tcp_retransmit, "TCP segments retransmitted")			\
	X(tcp_rto, "TCP retransmission timeouts")			\
	X(tcp_mtu_reduced, "TCP MSS lowered to a new path MTU, in flight resent") \
	X(tcp_mtup_blackhole, "TCP MSS lowered to tcp_base_mss after RTOs (black hole)") \
	X(tcp_fast_retransmit, "TCP fast retransmits")			\
	X(tcp_ecn_ce_rx, "TCP data segments received CE-marked (ECN)")	\
	X(tcp_ecn_reduce, "TCP cwnd reductions for an ECN-Echo")	\
	X(tcp_challenge_ack, "TCP challenge ACKs sent (RFC 5961)")	\
	X(tcp_defer_accept, "bare ACKs a TCP_DEFER_ACCEPT listener's child waited past for data")	\
	X(tcp_syn_dropped, "SYNs dropped for the peer to send again: backlog full, or no socket") \
	X(tcp_syn_parked, "connections of this stack held for a full accept queue") \
	X(tcp_syn_unparked, "held connections sent again when accept() made room") \
	X(tcp_syncookies_sent, "SYN queue full: SYNs answered with a cookie")	\
	X(tcp_syncookies_ok, "connections made from a valid SYN cookie")	\
	X(tcp_syncookies_failed, "ACKs at a listener with a bad cookie")	\
	X(tcp_active_open, "TCP active opens")				\
	X(tcp_passive_open, "TCP passive opens")			\
	X(tcp_reset_rx, "TCP resets received")				\
	X(tcp_reset_tx, "TCP resets sent")				\
	X(tcp_ooo, "TCP segments queued out of order")			\
	X(tcp_rx_pressure, "TCP payload dropped: pool or socket buffers full") \
	X(tcp_tx_pool_wait, "TCP sends the buffer pool refused (the writer is woken when it has room)") \
	X(arp_rx, "ARP packets received")				\
	X(arp_tx, "ARP packets sent")					\
	X(arp_rx_bad, "dropped: bad ARP packet")			\
	X(arp_hold_dropped, "packets dropped waiting for ARP (past unres_qlen_bytes, or no answer)")	\
	X(eth_rx_bad, "dropped: bad or foreign Ethernet frame")		\
	X(link_rx, "frames received from the link")			\
	X(link_tx, "frames sent on the link")				\
	X(link_tx_err, "frames the link failed to send")		\
	X(nobuf, "packet buffer allocations that failed")		\
	X(nosock, "socket allocations that failed")			\
	X(lock_broken, "lock found held by a dead process")		\
	X(kring_rx_bad, "kring rx descriptors refused (bad index, length or buffer)") \
	X(kring_tx_full, "kring tx ring found full (kicked early)")	\
	X(kring_kick, "kring tx kicks (SLUICE_IOC_KRING_KICK)")		\
	X(kring_fill_low, "kring fill ring left short: pool too low")	\
	X(kring_dev_change, "kring device changes seen (dev_seq)")	\
	X(filter_add, "filters added (ports reserved in the kernel)")	\
	X(filter_del, "filters removed")				\
	X(filter_err, "filter ioctls that failed")			\
	X(corrupt_buf_idx, "region corrupt: a buffer index out of range") \
	X(corrupt_buf_len, "region corrupt: a buffer offset or length past its buffer") \
	X(corrupt_sock_idx, "region corrupt: a socket index out of range") \
	X(corrupt_sock_state, "region corrupt: a socket's sizes or queues impossible") \
	X(corrupt_chain, "region corrupt: a chain longer than its pool (a cycle)") \
	X(corrupt_ring, "region corrupt: kring indices past the ring") \
	X(corrupt_lock, "region corrupt: the lock word names no process") \
	X(corrupt_header, "region corrupt: header state impossible") \
	X(sockfd_wake, "SLUICE_IOC_SOCK_WAKE calls for armed socket fds")	\
	X(sockfd_released, "sockets closed after their last socket fd went") \
	X(sockfd_scan, "scans of every slot for released socket fds (the module's list fell short)") \
	X(udp_mc_join, "multicast groups joined by UDP sockets (IP_ADD_MEMBERSHIP)") \
	X(udp_mc_tx, "UDP datagrams sent to a multicast group")	\
	X(udp_mc_looped, "of those, copies delivered inside the stack (IP_MULTICAST_LOOP)") \
	X(ip_rx_mcast, "multicast datagrams taken in")			\
	X(tcp_rx_paws, "TCP segments dropped by PAWS (timestamp too old)")	\
	X(tcp_rx_no_ts, "TCP segments dropped: no timestamp where one is due") \
	X(tcp_rx_oow, "TCP segments outside the receive window (ACKed, dropped)") \
	X(lock_recovered, "stacks brought back after a process died holding the lock") \
	X(recover_sock_reset, "sockets reset by that: half changed, or not whole") \
	X(recover_buf_reclaimed, "buffers taken back from a dead lock holder") \
	X(recover_lo_dropped, "queued packets dropped by that (loopback, neighbour holds)") \
	X(connect_queued, "connects queued while the lock's holder was stopped") \
	X(spin_crowded, "spins stopped: a spinner was taken off its CPU (more runnable threads than CPUs)") \
	X(spin_runq, "spins stopped: more runnable threads than CPUs when a spin began") \
	X(tcp_rx_bcast, "dropped: TCP to or from broadcast or multicast, or in a link-layer broadcast frame") \
	X(tcp_rx_synfin, "dropped: SYN with FIN at a listener") \
	X(tcp_rx_state, "dropped: TCP segment its state takes nothing from (a listener's RST or non-SYN, no ACK, ...)") \
	X(tcp_ooo_drop, "TCP out-of-order segments dropped: queue or pool full") \
	X(tcp_loss_probe, "TCP tail loss probes sent (RFC 8985 7)") \
	X(icmp_rx_ignored, "ICMP messages dropped unanswered: a type not handled, an echo to broadcast") \
	X(verbs_qp_reset, "verbs QP found in error, reset and brought back to RTS") \
	X(verbs_async_event, "verbs async events taken (port, LID, SM, P_Key, QP)") \
	X(verbs_port_down, "verbs port down events") \
	X(verbs_path_flush, "verbs neighbours dropped to ask their paths again (port, LID, SM change)") \
	X(verbs_rx_too_big, "verbs receives longer than a packet buffer (dropped, the QP kept)") \
	X(verbs_qkey_change, "enhanced IPoIB: the broadcast group's Q_Key changed after a rejoin") \
	X(sock_walked, "sockets looked at by a listener's close (its children) and datagrams to many (the port's)") \
	X(tcp_rack_lost, "TCP segments RACK took for lost (RFC 8985 6.2)") \
	X(tcp_rack_reo_timeout, "TCP RACK reordering timer expiries (RFC 8985 6.3)") \
	X(tcp_rack_reord, "TCP reordering seen: a SACK or ACK below the highest SACKed") \
	X(tcp_dsack_rx, "TCP DSACK blocks received (RFC 2883): a segment arrived twice") \
	X(tcp_dsack_tx, "TCP DSACK blocks set to send (RFC 2883): data that came twice (Linux TCPDSACKOldSent + TCPDSACKOfoSent)") \
	X(tcp_tlp_recovery, "TCP loss probes that repaired a loss: cwnd reduced (RFC 8985 7.4)") \
	X(tcp_full_undo, "TCP recoveries undone at their end: timestamps or DSACK showed no loss (Linux TCPFullUndo)") \
	X(tcp_partial_undo, "TCP recoveries undone on a partial ACK: the hole was filled by the original (Linux TCPPartialUndo)") \
	X(tcp_dsack_undo, "TCP reductions undone: DSACKs reported every retransmission needless (Linux TCPDSACKUndo)") \
	X(tcp_loss_undo, "TCP RTO reductions undone: timestamps, DSACK or F-RTO showed no loss (Linux TCPLossUndo)") \
	X(tcp_spurious_rto, "TCP RTOs F-RTO found spurious (RFC 5682; Linux TCPSpuriousRTOs)") \
	X(ip6_rx, "IPv6 packets received")				\
	X(ip6_tx, "IPv6 packets sent")					\
	X(ip6_rx_bad_hdr, "dropped: bad IPv6 header, length or extension header chain") \
	X(ip6_rx_not_ours, "dropped: IPv6 not addressed to this stack")	\
	X(ip6_rx_martian, "dropped: IPv6 source multicast, v4-mapped, or ::1 from a link") \
	X(ip6_rx_bad_opt, "dropped: IPv6 options malformed (length, padding, too many)") \
	X(ip6_rx_unknown_opt, "dropped: IPv6 option of an unknown type that says discard (RFC 8200 4.2)") \
	X(ip6_rx_rthdr, "dropped: IPv6 routing header with segments left (type 0: RFC 5095)") \
	X(ip6_rx_unknown_nh, "dropped: IPv6 unknown next header (parameter problem sent)") \
	X(ip6_rx_frag, "IPv6 fragments received (not atomic: to reassembly)")	\
	X(ip6_rx_nonext, "IPv6 packets with no next header (59), dropped") \
	X(ip6_tx_noroute, "IPv6 not sent: no route or no IPv6 on the link") \
	X(ip6_tx_untranslated, "IPv6 socket packets not sent: not TCP or UDP, a fragment, or an unknown peer") \
	X(ip6_rx_peers_full, "IPv6 segments or datagrams from a new peer left to the closed-port answer: peer table full") \
	X(icmp6_rx, "ICMPv6 messages received")			\
	X(icmp6_rx_bad, "dropped: bad ICMPv6 length or checksum")	\
	X(icmp6_rx_ignored, "ICMPv6 messages dropped unanswered (a type not handled)") \
	X(icmp6_echo_replied, "ICMPv6 echo requests answered")		\
	X(icmp6_err_tx, "ICMPv6 errors sent (unreachable, parameter problem)") \
	X(icmp6_ratelimit, "ICMPv6 errors not sent: rate limits")	\
	X(udp6_rx_bad, "dropped: bad UDP over IPv6 length or checksum (0 included)") \
	X(udp6_rx_noport, "dropped: UDP over IPv6 to a closed port")	\
	X(tcp6_rx_bad, "dropped: bad TCP over IPv6 header or checksum")	\
	X(tcp6_rx_noport, "TCP over IPv6 segments to no socket (RST sent)") \
	X(nd_ns_rx, "neighbour solicitations received")		\
	X(nd_ns_tx, "neighbour solicitations sent")			\
	X(nd_na_rx, "neighbour advertisements received")		\
	X(nd_na_tx, "neighbour advertisements sent")			\
	X(nd_rx_bad, "dropped: neighbour discovery message invalid (RFC 4861 7.1)") \
	X(nd_unres_drop, "IPv6 packets dropped waiting for a neighbour (past unres_qlen_bytes, or no answer)") \
	X(nd_failed, "IPv6 neighbours given up: no answer to 3 solicitations") \
	X(nd_dad_tx, "Duplicate Address Detection solicitations sent for the link-local address") \
	X(nd_dad_failed, "link-local addresses found in use by another node (DAD failed; not used)") \
	X(tcp_handoff, "connections handed to a kernel socket (TCP repair)") \
	X(verbs_tx_port_down, "verbs packets dropped unsent: the port is down (TCP resends them)") \
	X(tcp_rx_predicted, "TCP segments that took header prediction (established, in order)") \
	X(icmp6_err_rx, "ICMPv6 errors received (unreachable, too big, time exceeded, parameter problem)") \
	X(ip6_frag_tx, "IPv6 fragments sent (UDP datagrams past the path MTU)") \
	X(ip6_rx_frag_drop, "IPv6 fragments not reassembled (not TCP or UDP, a group, an unknown source's not first, a bad length)") \
	X(spin_won, "blocking waits that spun and ended within their spin") \
	X(spin_lost, "blocking waits that spun, then slept") \
	X(spin_us, "microseconds blocking waits spent spinning") \
	X(tcp_sndbuf_grown, "TCP send buffers grown to twice cwnd (Linux tcp_sndbuf_expand)") \
	X(tcp_rcvbuf_grown, "TCP receive buffers grown to what the reader takes a round trip (Linux tcp_rcv_space_adjust)") \
	X(rx_backoff, "non-blocking receives that found nothing and paused (a spinner's look, not a drain's end)") \
	X(sweep_walked, "socket records the preload looked at for processes that died (their own list and the shared one)") \
	X(sock_fd_cached, "socket fds made from the preload's placeholder cache (a dup of a kept description, no open)") \
	X(tap_qlen_short, "TAP queues opened shorter than SLUICE_TAP_QLEN (4096) frames: raising txqueuelen was refused") \
	X(sock_async, "O_ASYNC events for which a socket's owner was signalled (its async bells rung, one signal each)") \
	X(epoll_entries, "readiness entries epoll sets read: their watch group's ready ring, or the stack's journal (a set with no group)") \
	X(epoll_full_look, "epoll looks at every item of a set: its first, or its ring or the journal overrun")

enum sl_counter {
#define SL_COUNTER_ENUM(n, d) SL_C_##n,
	SL_COUNTERS(SL_COUNTER_ENUM)
#undef SL_COUNTER_ENUM
	SL_C_COUNT
};

_Static_assert(SL_C_COUNT <= SL_COUNTERS_MAX, "counters fit sl_counters");

extern const char *const sl_counter_names[SL_C_COUNT];
extern const char *const sl_counter_desc[SL_C_COUNT];

/* A link: how frames reach the wire.  tx borrows the buffer; it never
 * keeps it past return (TCP keeps sent data for retransmission). */
struct sl_link;
struct sl_link_ops {
	const char *name;
	/* Send the IPv4 packet in buffer idx to next hop nh (network order). */
	int (*tx)(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh);
	/* Optional: send the IPv6 packet in idx to next hop nh (16 bytes);
	 * a link without it carries no IPv6 (proto/ip6.c).  With route6,
	 * nh NULL: a destination off the stack's link, whose next hop the
	 * link finds (kring: the kernel's route). */
	int (*tx6)(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh);
	/* Receive up to budget frames, feeding each to the stack; returns count. */
	int (*rx)(struct sl_link *l, struct sl_stack *s, int budget);
	/* An fd that polls readable when frames wait, or -1. */
	int (*fd)(struct sl_link *l);
	/* Hand what tx queued to the wire (one system call for a batch).
	 * sl_unlock() calls it, lock held, when tx_pending is set. */
	void (*flush)(struct sl_link *l, struct sl_stack *s);
	void (*close)(struct sl_link *l);
	/* Optional: the module added filter f (its id set) / deleted filter
	 * id for this stack (filter.c, lock held); a link that steers in the
	 * device (enhanced IPoIB flow rules) follows. */
	void (*filter_add)(struct sl_link *l, struct sl_stack *s, const struct sluice_filter *f);
	void (*filter_del)(struct sl_link *l, struct sl_stack *s, uint32_t id);
	/* Optional: this process runs connection so, which has its 5-tuple
	 * (connect, accept; lock held): a link that steers in the device
	 * steers the connection to this process (link/README.md). */
	void (*conn_own)(struct sl_link *l, struct sl_stack *s, const struct sl_sock *so);
	/* The link builds and parses its own frames (Ethernet on TAP:
	 * link/eth.c) and gives them to the capture itself, ARP included;
	 * IP's capture (proto/ip.c, ip6.c) leaves its packets to it. */
	bool frames;
	/* Optional: the link reaches IPv6 destinations off the stack's link
	 * through routers (tx6 takes a NULL next hop): is dst (16 bytes) one
	 * it reaches from the stack's ip6_addr?  (A system call or more:
	 * asked once a new peer, lib/preload/socket.c's native6().) */
	bool (*route6)(struct sl_link *l, struct sl_stack *s, const uint8_t *dst);
};

struct sl_link {
	const struct sl_link_ops *ops;
	unsigned int mtu;
	bool tx_pending;		/* tx queued packets flush has not sent */
};

#define SL_KP_NOTES	64	/* sockets noted a holder, then a full scan */
#define SL_KP_SCAN	(SL_KP_NOTES + 1)
#define SL_KP_WAKES	256	/* slots one SOCK_WAKE names at most */

/* The per-process handle on a mapped stack (not in the region). */
struct sl_stack {
	struct sluice_region *r;	/* the module's header, at offset 0 */
	struct sl_region *lib;		/* ours, at SLUICE_REGION_LIB_OFF */
	uint8_t *base;
	size_t size;
	int region_fd;
	pid_t pid;
	bool locked;			/* this process holds the lock */
	bool wake_pending;		/* wake the stack's sleepers after unlock */
	bool module_backed;		/* region_fd is a module stack fd */
	bool filters;			/* ports taken need module filters (kring) */
	uint32_t ifindex;		/* the stack's device (module stacks), or 0 */
	/* Shared futexes work on the region (sl_futex_usable(), probed when
	 * mapped): lock waiters and link-less sleepers use them, else nap or
	 * poll the stack fd. */
	bool futex_ok;
	bool wake_poll;			/* wake_pending: pollers too (run/run.c) */
	bool wake_global;		/* wake_pending: the stack's futex too */
	/* Every sleeper must look again after unlock (sl_wake_everyone()):
	 * the wheel armed after a quiet second (sleepers may be sleeping
	 * long), or a dead holder's state brought back. */
	bool wake_all;
	/*
	 * Timers while this process is away (run/away.c): the earliest
	 * deadline this holder's turn set (wheel ms, 0 none), armed on the
	 * process's timerfd at sl_unlock() if earlier than the one
	 * it is set for; tk_own, one of them was for a socket this process
	 * made; tk, that timer (NULL: none yet, or lib/api users); tk_start,
	 * what makes it when a turn leaves such a deadline and no other
	 * thread keeps the timers (the preload's; NULL: never); tk_off,
	 * its thread runs no turn (an exec or exit under way); tk_busy, the
	 * thread is in a ring's turn (pl_away_pause() waits it out, without
	 * the stack lock: a stopped holder must not stop an exit); tk_in_run,
	 * the wheel's deadlines are being fired (sl_timer_run()): one set
	 * then for another process's socket is not this process's to arm.
	 */
	uint64_t tk_due_ms;
	struct sl_tk *tk;
	int32_t tk_pid;			/* the process tk is of (a fork copies it) */
	void (*tk_start)(struct sl_stack *s);
	bool tk_own;
	bool tk_off;
	bool tk_busy;
	bool tk_in_run;
	/* Wait channels whose sleepers to wake after unlock (sl_region.wq). */
	uint64_t wq_pending[SL_WQ_ALL / 64];
	/* Sockets one of whose exclusive sleepers to wake after unlock
	 * (sl_sock_wake_one(); more in one turn are woken at once). */
	uint32_t xwake[SL_XWAKE_N];
	unsigned int xwake_n;
	/* Channels whose mixed sleepers' bells to ring after unlock, and
	 * whether the SL_BELL_ANY ones too (run/bell.c). */
	uint64_t bell_pending[SL_WQ_ALL / 64];
	bool bell_any_pending;
	struct sl_link *link;
	/*
	 * Bring the stack back after a process died holding its lock (the
	 * lock taken over, held): 0, or an error and the stack is marked
	 * broken.  Set by the layer that knows what the region holds
	 * (api/, with proto/recover.c); NULL: a dead holder breaks it.
	 */
	int (*recover)(struct sl_stack *s, pid_t dead);
	uint64_t (*clock)(void *arg);	/* now, microseconds */
	void *clock_arg;
	unsigned int spin_us;
	unsigned int poll_calls;	/* sluice_stack_poll() calls, for pacing */
	uint64_t batch_now_us;		/* sl_batch_begin(): the time of a batch */
	bool hold_now;			/* batch_now_us is this hold's (sl_now_held()) */
	struct sl_counters *ctr;	/* our counter block in the region */
	pid_t ctr_pid;			/* the process that block was claimed for */
	char name[SLUICE_NAME_MAX];
	/*
	 * The region's geometry, checked once when it is mapped (region.c,
	 * set_geometry()) and kept here: the region's own copies can
	 * be overwritten by any process that maps it.  Every index read from
	 * the region is checked against these before use (sl_buf(),
	 * sl_sock()); once the stack is found corrupt, n_bufs and max_sockets
	 * drop to 0, so every later index is out of range and every walk
	 * ends at its first step.
	 */
	uint32_t n_bufs, max_sockets, buf_size, sock_size, hash_buckets;
	struct sluice_buf *bufmeta;
	uint8_t *bufdata, *socks;
	uint32_t *hash, *wheel;
	/* TIME-WAIT (proto/tcp/tcp_tw.c): tw_max entries, then tw_max
	 * 4-tuple buckets and tw_max local-port buckets; 0 once corrupt. */
	uint32_t tw_max;
	uint8_t *tw;
	uint32_t *tw_hash;
	/* IPv6 peers' addresses (proto/ip6.c, "IPv6 sockets"): v6tok_max
	 * entries of 16 bytes after the TIME-WAIT hashes, entry i handle
	 * SL_V6TOK_BASE + i, then 2 * v6tok_max hash slots, each an entry's
	 * index + 1 or 0 (a hole of the file until written); 0 once
	 * corrupt. */
	uint32_t v6tok_max;
	uint8_t (*v6tok)[16];
	uint32_t *v6tok_hash;
	/* Ephemeral ports (proto/sock.c, sl_port_range_load()): the range
	 * of ip_local_port_range and ip_local_reserved_ports, as read when
	 * this handle was made (0, 0: Linux's default). */
	uint16_t port_lo, port_hi;
	/* net.ipv4.tcp_syn_retries and tcp_synack_retries, read with them
	 * (0: Linux's defaults, SL_TCP_SYN_RETRIES and _SYNACK_). */
	uint8_t tcp_syn_retries, tcp_synack_retries;
	/* The most a receive buffer may grow to, read with them: the larger
	 * of net.ipv4.tcp_rmem's max and net.core.rmem_max.  The window
	 * scale is chosen for it (proto/tcp/tcp.c, wscale_for()); 0: for
	 * the socket's own buffer. */
	uint32_t tcp_rmem_max;
	/* net.ipv4.tcp_wmem's max, read with them: the most a send buffer
	 * grows to by itself (proto/tcp/tcp_input.c, sndbuf_expand()); 0:
	 * Linux's default, 4 MiB. */
	uint32_t tcp_wmem_max;
	/* net.ipv4.tcp_notsent_lowat, read with them: the TCP_NOTSENT_LOWAT
	 * of a socket that set none (0: unread, Linux's default UINT32_MAX,
	 * no limit); and net.ipv4.tcp_fastopen's client bit plus one (0:
	 * unread, Linux's default, on; 1: off, TCP_FASTOPEN_CONNECT is
	 * EOPNOTSUPP). */
	uint32_t tcp_notsent_lowat;
	uint8_t tcp_fastopen;
	/* net.ipv4.tcp_ecn, read with them, plus one: 0 unread (Linux's
	 * default, 2), then 0 no ECN, 1 asked for and accepted, 2
	 * accepted only (proto/tcp/tcp.h, sl_tcp_ecn_mode()). */
	uint8_t tcp_ecn;
	/* net.ipv4.neigh.default.unres_qlen_bytes, read with them: the
	 * bytes of packets waiting for one neighbour (proto/ip.c,
	 * sl_hold_add()); 0 unread (Linux's default, SL_UNRES_QLEN_BYTES);
	 * a sysctl of 0 is kept as 1 (the newest packet waits, alone). */
	uint32_t unres_qlen_bytes;
	bool port_reserved_any;
	uint64_t port_reserved[65536 / 64];
	/* A value read from the region was impossible (sl_corrupt()): every
	 * call fails with -ENOTRECOVERABLE from then on; why and the value
	 * are kept for a debugger (the region has the counter). */
	bool corrupt;
	bool inspect;			/* attached to look only (sl_stack_inspect()) */
	enum sl_counter corrupt_why;
	uint64_t corrupt_val;
	/*
	 * Socket fds (proto/sockfd.c): sockets with a socket fd whose readiness
	 * changed under this holder (sl_sock_wake()), published at unlock;
	 * kp_n == SL_KP_SCAN says more changed: look at every slot.
	 */
	unsigned int kp_n;
	uint32_t kp_note[SL_KP_NOTES];
	/* This process's mapping of the capture ring of sl_region.cap_pid
	 * (core/capture.c), or NULL; cap_pid: whose ring it is (or whose
	 * failed to map, not tried again); cap_len: the mapping's bytes. */
	struct sl_cap_ring *cap;
	int32_t cap_pid;
	uint32_t cap_size;		/* bytes of its data[] */
	size_t cap_len;
	uint64_t cap_alive_us;		/* when the tool was last seen alive */
};

/*
 * sluice_buf.flags bit for a packet delivered inside the stack (loopback):
 * its sender computed no TCP checksum and its receiver checks none, as on
 * Linux's loopback device.  Input that keeps the buffer sets its own flags.
 */
#define SL_BUF_LOCAL	0x8000
/*
 * Received from a link that vouches for the TCP/UDP checksum (a device
 * that verified it, or a local sender that left it to offload and never
 * filled it in): input checks none, as for SL_BUF_LOCAL, but the packet
 * is still from the wire (martian checks apply).
 */
#define SL_BUF_CSUM_OK	0x4000
/* Given to the module on the kring fill ring (link/kring_link.c). */
#define SL_BUF_ON_FILL	0x2000
/*
 * Arrived in a link-layer broadcast or multicast frame (Linux's
 * PACKET_BROADCAST / PACKET_MULTICAST): TCP takes none, whatever the IP
 * destination (tcp_v4_rcv() drops what is not PACKET_HOST).
 */
#define SL_BUF_L2_BCAST	0x0800
/*
 * From a link that carries IP without a link type, IPv4 and IPv6 told by
 * the version (kring, whose module steers IPv6 with SLUICE_FEATURE_IPV6):
 * sl_ip_input() hands version 6 to IPv6.
 */
#define SL_BUF_IP_BYVER	0x0400
/*
 * A TCP segment inside the stack whose payload goes on past this buffer
 * (SL_BUF_LOCAL only; tcp_output.c sends them, as Linux's loopback takes
 * 64 KiB GSO packets): aux counts the further payload buffers, linked by
 * next_idx from this one.  On the loopback queue the last one's next_idx
 * leads on to the next packet; sl_stack_drain_loopback() cuts the chain
 * off, checks it and leaves its payload byte count in seq for input.
 */
#define SL_BUF_CHAIN	0x1000
#define SL_CHAIN_MAX	32	/* payload buffers in one chained segment */
/*
 * Held outside every shared queue by a process, across unlocks (a verbs
 * receive queue's posted buffers): flags exactly SL_BUF_HELD, aux
 * SL_BUF_HELD_MAGIC, ts_us the holder's pid.  Whoever finds the holder
 * dead may take the buffer back (link/verbs.c, proto/recover.c).
 */
#define SL_BUF_HELD		0x4000
#define SL_BUF_HELD_MAGIC	0x1b0b

static inline void sl_buf_hold_mark(struct sluice_buf *b, pid_t pid)
{
	b->flags = SL_BUF_HELD;
	b->aux = SL_BUF_HELD_MAGIC;
	b->ts_us = (uint64_t)pid;
}

/* The pid holding b (SL_BUF_HELD), or 0. */
static inline pid_t sl_buf_holder(const struct sluice_buf *b)
{
	if (b->flags != SL_BUF_HELD || b->aux != SL_BUF_HELD_MAGIC || !b->ts_us ||
	    b->ts_us > (1u << 22))
		return 0;
	return (pid_t)b->ts_us;
}

static inline bool sl_buf_flags_chained(unsigned int flags)
{
	return (flags & (SL_BUF_LOCAL | SL_BUF_CHAIN)) == (SL_BUF_LOCAL | SL_BUF_CHAIN);
}

static inline bool sl_buf_chained(const struct sluice_buf *b)
{
	return sl_buf_flags_chained(b->flags);
}

/* 224.0.0.0/4, network order (RFC 5771). */
#define SL_IN_MULTICAST(a)	((ntohl(a) & 0xf0000000u) == 0xe0000000u)

/* Headroom left in front of every packet for link headers (Ethernet 14,
 * IPoIB 4 + 40 GRH room), so headers are prepended in place. */
#define SL_HEADROOM	64

/* Offset helpers (off: checked by the caller, e.g. a kring area). */
static inline void *sl_at(const struct sl_stack *s, uint64_t off)
{
	return s->base + off;
}

/*
 * The region is corrupt: a value read from it is impossible (which: a
 * corrupt_* counter; val: the value).  Marks the stack broken for every
 * process (SLUICE_STATE_BROKEN, broken_pid 0), counts, and from then on
 * this process's accessors hand out sinks and its calls fail with
 * -ENOTRECOVERABLE.  Never a system call; safe with or without the lock
 * (lock.c).
 */
void sl_corrupt(struct sl_stack *s, enum sl_counter why, uint64_t val);
/* Out-of-range indices: mark the stack corrupt and return a process-local
 * sink the caller may read and write (its links are SLUICE_IDX_NONE, its
 * data area is as large as any offset a buffer can name), so no caller
 * faults; they see the corruption at their next call (lock.c). */
struct sluice_buf *sl_buf_bad(const struct sl_stack *s, uint32_t idx);
uint8_t *sl_buf_base_bad(const struct sl_stack *s, uint32_t idx);
uint8_t *sl_buf_data_bad(const struct sl_stack *s, uint32_t idx);

/* Buffer idx's metadata; idx must be < n_bufs (else the stack is corrupt). */
static inline struct sluice_buf *sl_buf(const struct sl_stack *s, uint32_t idx)
{
	if (__builtin_expect(idx >= s->n_bufs, 0))
		return sl_buf_bad(s, idx);
	return s->bufmeta + idx;
}

/* Start of buffer idx's data area (buf_size bytes). */
static inline uint8_t *sl_buf_base(const struct sl_stack *s, uint32_t idx)
{
	if (__builtin_expect(idx >= s->n_bufs, 0))
		return sl_buf_base_bad(s, idx);
	return s->bufdata + (uint64_t)idx * s->buf_size;
}

/*
 * Start of the packet data in buffer idx: off and len must lie inside the
 * buffer.  (A region made by this library has SL_REGION_SLACK bytes after
 * the last buffer, more than any u16 offset plus length: a value changed
 * after this check still stays inside the mapping.)
 */
static inline uint8_t *sl_buf_data(const struct sl_stack *s, uint32_t idx)
{
	const struct sluice_buf *b;

	if (__builtin_expect(idx >= s->n_bufs, 0))
		return sl_buf_data_bad(s, idx);
	b = s->bufmeta + idx;
	if (__builtin_expect((uint32_t)b->off + b->len > s->buf_size, 0))
		return sl_buf_data_bad(s, idx);
	return s->bufdata + (uint64_t)idx * s->buf_size + b->off;
}

/* The stack's MTU (r->mtu, which anyone may change): a packet of that
 * size must fit a buffer after the headroom, else the stack is corrupt. */
static inline uint32_t sl_mtu(const struct sl_stack *s)
{
	uint32_t mtu = SL_READ_ONCE(s->r->mtu);

	if (__builtin_expect(mtu < SLUICE_STACK_MIN_MTU || mtu > s->buf_size - SL_HEADROOM, 0)) {
		sl_corrupt((struct sl_stack *)s, SL_C_corrupt_header, mtu);
		return SLUICE_STACK_MIN_MTU;
	}
	return mtu;
}

/* Bytes after the last packet buffer: more than any u16 offset plus u16
 * length plus TCP's data offset can reach past a buffer's start. */
#define SL_REGION_SLACK	(4u * 65536u)

/*
 * Walking a chain of buffers (or sockets): go on to idx?  Yes while idx
 * names one and the walk has taken at most n_bufs (max_sockets) steps;
 * no at SLUICE_IDX_NONE, the end.  Any other index, or a longer walk (a
 * cycle), marks the stack corrupt: no.  Used as the loop condition:
 *   for (idx = head, steps = 0; sl_buf_next(s, idx, &steps); idx = ...)
 */
bool sl_walk_end(struct sl_stack *s, uint32_t idx, uint32_t n, uint32_t steps, bool socks);
static inline bool sl_buf_next(struct sl_stack *s, uint32_t idx, uint32_t *steps)
{
	if (__builtin_expect(idx < s->n_bufs && ++*steps <= s->n_bufs, 1))
		return true;
	if (idx == SLUICE_IDX_NONE)
		return false;
	return sl_walk_end(s, idx, s->n_bufs, *steps, false);
}

static inline bool sl_sock_next(struct sl_stack *s, uint32_t idx, uint32_t *steps)
{
	if (__builtin_expect(idx < s->max_sockets && ++*steps <= s->max_sockets, 1))
		return true;
	if (idx == SLUICE_IDX_NONE)
		return false;
	return sl_walk_end(s, idx, s->max_sockets, *steps, true);
}


/*
 * Does idx, read from the region, name a buffer (socket)?  Yes if in
 * range; no for SLUICE_IDX_NONE (an empty queue, no link); anything else
 * marks the stack corrupt: no.  For tests of a head or tail before use.
 */
static inline bool sl_buf_some(struct sl_stack *s, uint32_t idx)
{
	if (__builtin_expect(idx < s->n_bufs, 1))
		return true;
	return idx != SLUICE_IDX_NONE && sl_walk_end(s, idx, s->n_bufs, 0, false);
}

static inline bool sl_sock_some(struct sl_stack *s, uint32_t idx)
{
	if (__builtin_expect(idx < s->max_sockets, 1))
		return true;
	return idx != SLUICE_IDX_NONE && sl_walk_end(s, idx, s->max_sockets, 0, true);
}

/* The error every call on a broken stack returns: -ENOTRECOVERABLE if it
 * was found corrupt (by any process), -EPIPE if a process died holding
 * its lock (lock.c). */
int sl_broken_err(const struct sl_stack *s);

/* Lock held: the block is this process's (see sl_counters_claim()). */
static inline void sl_count(struct sl_stack *s, enum sl_counter c)
{
	s->ctr->c[c]++;
}

static inline void sl_count_n(struct sl_stack *s, enum sl_counter c, uint64_t n)
{
	s->ctr->c[c] += n;
}

/* Can shared futexes live in this region's pages? (lock.c)  A probe,
 * made once per mapping: see sl_stack.futex_ok. */
bool sl_futex_usable(struct sl_stack *s);

/* Point s->ctr at a counter block of this process's own (lock held). */
void sl_counters_claim(struct sl_stack *s);
/* Give that block back for the next process (detach, exit; no lock). */
void sl_counters_release(struct sl_stack *s);
/* A stack-wide counter: the sum over every process's block. */
uint64_t sl_counter_sum(const struct sl_stack *s, enum sl_counter c);

static inline uint64_t sl_now(struct sl_stack *s)
{
	return s->batch_now_us ? s->batch_now_us : s->clock(s->clock_arg);
}

/*
 * One clock reading a lock hold: the time of a call made under the lock,
 * which the rest of the hold shares (the loopback drain at sl_unlock(),
 * a batch).  A reading costs more than a small segment's TCP input.  Only
 * with the lock held; its release forgets it (lock.c).
 */
static inline uint64_t sl_now_held(struct sl_stack *s)
{
	if (!s->batch_now_us) {
		s->batch_now_us = s->clock(s->clock_arg);
		s->hold_now = true;
	}
	return s->batch_now_us;
}

/* Packets handled in one batch (a loopback drain, a link read) share one
 * clock reading: it costs more than the rest of a small packet's input.
 * Inside a hold that has read the clock, that reading. */
static inline void sl_batch_begin(struct sl_stack *s)
{
	if (s->hold_now)
		return;
	s->batch_now_us = 0;
	s->batch_now_us = s->clock(s->clock_arg);
}

static inline void sl_batch_end(struct sl_stack *s)
{
	if (!s->hold_now)
		s->batch_now_us = 0;
}

/* The lock let go: the next hold reads the clock again. */
static inline void sl_hold_end(struct sl_stack *s)
{
	s->hold_now = false;
	s->batch_now_us = 0;
}

/*
 * killpt.c: SL_KILL_POINT(name) marks a place inside a change to shared
 * state where a test may have the process killed (SIGKILL, the lock held,
 * the change half made).  Empty unless built with -DSL_KILL_POINTS.
 */
#ifdef SL_KILL_POINTS
void sl_kill_point(const char *name);
/* Die at the nth hit of point name (1: the next). */
void sl_kill_arm(const char *name, unsigned long nth);
#define SL_KILL_POINT(name)	sl_kill_point(name)
#else
#define SL_KILL_POINT(name)	do { } while (0)
#endif

/* buf.c: the buffer pool; callers hold the lock. */
uint32_t sl_buf_alloc(struct sl_stack *s);	/* SLUICE_IDX_NONE when empty */
void sl_buf_free(struct sl_stack *s, uint32_t idx);
void sl_buf_free_chain(struct sl_stack *s, uint32_t idx);
/* Once a second, lock held: whole pages of free buffers go back to the
 * system after the pool's use has fallen to half (buf.c). */
void sl_buf_trim(struct sl_stack *s);
/* Whether this stack's memory may be given back (madvise MADV_REMOVE):
 * a /dev/shm region no device has registered, outside a sandbox. */
bool sl_mem_trimmable(const struct sl_stack *s);
/* Give [start, end) of the region back, narrowed to the whole pages
 * inside it; those pages read as zeros after. */
void sl_mem_give_back(struct sl_stack *s, uint8_t *start, uint8_t *end);

/* lock.c: the stack lock.  sl_lock() waits for it (0, or the broken
 * stack's error); the end of a turn that held it is sl_unlock() in run/,
 * which runs what the holder left and wakes waiters before it releases. */
/*
 * Take the lock, waiting at most until deadline_us (sl_now() time; -1: no
 * limit): 0, the broken stack's error, or -ETIMEDOUT.  nonblock: give up
 * with -EAGAIN as soon as the holder is seen stopped (SIGSTOP), instead
 * of waiting for it to run again.
 */
int sl_lock_wait(struct sl_stack *s, int64_t deadline_us, bool nonblock);
static inline int sl_lock(struct sl_stack *s)
{
	return sl_lock_wait(s, -1, false);
}
bool sl_trylock(struct sl_stack *s);
/* Let go of the lock as it is (run/ calls it at the end of a turn): wakes
 * one lock waiter.  Returns the lock word it released. */
uint32_t sl_lock_release(struct sl_stack *s);
/* Let go of the lock of a stack found corrupt, waking every lock waiter
 * and every sleeper, so each finds it broken (sl_lock()). */
void sl_lock_release_broken(struct sl_stack *s);
/* Wake every sleeper on the region's wake_seq futex. */
void sl_wake_sleepers(struct sl_stack *s);
/* Wake up to n sleepers on word: how many woke, or -errno. */
int sl_wake_word_n(uint32_t *word, int n);
/* Futex-wake whoever sleeps on word (a wait channel's seq). */
void sl_wake_word(uint32_t *word);
/* Every sleeper looks again: the stack's futex and every wait channel
 * with sleepers (recovery, a broken stack). */
void sl_wake_everyone(struct sl_stack *s);
pid_t sl_self_pid(void);
/*
 * Per-process variables that fork handlers write, in the parent or the
 * child (a cached pid, the fork handlers' own locks and counts): all in
 * one output section, so that after a fork each side pays one
 * copy-on-write fault for the lot, not one for each page of .data and
 * .bss they would otherwise be spread over (issue 16 item 6; every
 * private page written after fork() is a fault).  Only for small,
 * writable, non-thread-local variables.
 */
#define SL_FORKDATA	__attribute__((section("sl_forkdata")))
/*
 * Code a forked child runs that its parent does not run again: the fork
 * handlers, the child's first registration, the exit handlers.  A child
 * maps no page of a file's text it did not touch itself (fork() copies no
 * page table entry of a mapping nothing wrote), and a read fault maps the
 * 64 KiB around it (fault-around): spread over the library's 384 KiB of
 * text these functions cost a child a fault each in four or five windows;
 * together they are one, at .text's start beside the PLT every call to
 * libc goes through.  The GNU linker's default script puts the
 * .text.unlikely sections of all objects first in .text.
 */
#define SL_FORKTEXT	__attribute__((section(".text.unlikely.sl_fork"), noinline))
/* Gone, or a zombie: it will never run again (lock.c). */
bool sl_pid_dead(pid_t pid);
/* Stopped (SIGSTOP, a debugger's stop): it runs again only when continued. */
bool sl_pid_stopped(pid_t pid);
/* A holder pid read while the lock was held: did it die holding it? */
bool sl_lock_holder_dead(struct sl_stack *s, pid_t seen);
/* Is the lock held by a process that is gone?  If so it is taken over
 * and the stack brought back, as a waiter would (attach looks before
 * anyone waits); true only if that failed and the stack is BROKEN. */
bool sl_lock_dead_holder(struct sl_stack *s);

/*
 * The library's layout version (sluice_region.lib_layout): everything in
 * a region that the module does not read is this library's own (socket
 * slots, the counters' order, neighbour entries, what each field means).
 * Two builds that lay it out differently must never share a stack: a
 * process attaches only to a stack whose version is its own, else
 * sl_region_attach() fails with -EPROTO and says which two versions met.
 * Bump it with any change to struct sl_sock, struct sl_tcp_sock, struct
 * sl_udp_sock, SL_COUNTERS or the meaning of a region field, and with
 * any change to the stack's files beside it that every process must
 * agree on (31: a shard's placeholder is the FIFO sN, no longer the
 * directory N; processes of both would lock different inodes; 33: a
 * socket's placeholder is an AF_UNIX socket, bound to pN once shared, no
 * longer a FIFO with a lock: processes of both would not see each
 * other's holders; 34: a bell entry may be an exclusive waiter,
 * SL_BELL_X, counted in its socket's xsleepers: an older library would
 * free it from a wait channel's count and never ring it; and an async
 * bell's lost events are counted in bells_lost at the region's end; 35:
 * free slots above the table's top and free buffers' pages are given
 * back (sock_trim_frees, sock_gen_floor, buf_trim_hi, mem_pinned): an
 * older library would take a slot past a lowered sock_fresh as fresh,
 * its generation started again from 0; 36: struct sl_tcp_sock's
 * dsack_seq and dsack_end, and the counter tcp_dsack_tx; 37: a socket
 * and a TIME-WAIT entry hold a port's IPv6 module filter beside IPv4's,
 * filter6_id and SL_TW_FILTER6: an older library would neither pass nor
 * delete it; 38: struct sl_sock's incoming_cpu and cookie, SO_INCOMING_CPU
 * and SO_COOKIE, the protocol part 16 bytes further on; 39: struct
 * sl_sock's ho_pid (in the padding before cookie) and the region's ho_seq,
 * the hand-over of a socket other processes hold: an older library would
 * not switch, and keep the stack's ended socket; 40: struct sl_wq's armed,
 * which a waker reads to skip a wake nobody sleeps for: an older
 * library's sleeper would not set it, and sleep through its wake; 41:
 * struct sl_tcp_sock's notsent_lowat, fastopen_qlen and fastopen_connect at
 * its end, and SL_S6_TSNS in sl_sock.ip6_opt: an older library would write
 * past the mark and read SO_TIMESTAMPNS's stamps as SO_TIMESTAMP's; 42:
 * the IPv6 peer handles in an area after the TIME-WAIT hashes, not in
 * struct sl_region, and the ND table on hash chains: an older library
 * would look for a peer's handle where none is; 43: struct sl_tcp_sock's
 * mdev_us, mdev_max_us and srtt_lo, and rttvar_us and rtt_seq as Linux's
 * estimator has them: an older library would time RTOs from them as RFC
 * 6298's).
 */
#define SL_LAYOUT_VERSION	43

/*
 * Bytes of a socket slot (sluice_region.sock_size).  The slot's contents
 * are proto/'s (struct sl_sock, which must fit); its size is part of the
 * library's layout, so a change here is a change of SL_LAYOUT_VERSION.
 */
#define SL_SOCK_SIZE	960

/*
 * A TIME-WAIT entry's bytes (struct sl_tw, proto/tcp/tcp.h), and how many
 * a stack has: four a socket slot, a power of two from 1,024 to 262,144
 * (Linux's tcp_max_tw_buckets is 262,144 on a machine of some memory).
 */
#define SL_TW_SIZE	72
static inline uint32_t sl_tw_entries(uint32_t max_sockets)
{
	uint32_t n = 1024;

	while (n < 262144 && n < 4 * max_sockets)
		n <<= 1;
	return n;
}

/*
 * IPv6 peer addresses a stack can give a handle (struct sl_stack's
 * v6tok): four a socket slot, as TIME-WAIT entries, a power of two from
 * 1,024 to 1,048,576 (a handle is never given back: proto/README.md,
 * "IPv6 sockets").  24 bytes each with its hash slots, committed as used
 * in /dev/shm.
 */
static inline uint32_t sl_v6tok_entries(uint32_t max_sockets)
{
	uint32_t n = 1024;

	while (n < (1u << 20) && n < 4 * max_sockets)
		n <<= 1;
	return n;
}

/* region.c.  Create: init lays out what the layers above keep in the
 * region (the socket table), before the region is published. */
int sl_region_create(struct sl_stack *s, const char *name, const struct sluice_stack_config *cfg,
		     void (*init)(struct sl_stack *s));
int sl_region_attach(struct sl_stack *s, const char *name);
int sl_region_destroy(const char *name);
/* The loaded module's SLUICE_FEATURE_* bits, as its VERSION said when a
 * stack was last made or attached in the module (0 before, or none). */
extern uint64_t sl_module_features;
/*
 * A /dev/shm stack found BROKEN: unlink its name, so that the next create
 * makes a fresh stack (issue 17: a broken stack never blocks a restart).
 * Processes that still map it keep it, and keep finding it broken.  True
 * if the name no longer names a broken stack (this call or another
 * process reclaimed it): create or attach again.  For /dev/shm stacks
 * only; a module's stack goes when its last holder does.
 */
bool sl_region_reclaim(const char *name);
/* capture.c: copy packet idx (an IP packet, or a frame with SL_CAP_ETH)
 * into the capture ring (cap_on was seen set; lock held); let go of
 * this process's mapping. */
void sl_cap_packet(struct sl_stack *s, uint32_t idx, unsigned int flags);
void sl_cap_unmap(struct sl_stack *s);
int sl_cap_path(const char *name, int32_t pid, char *buf, size_t len);
/* Whether IP's capture takes packet b (cap_on seen set): not one a
 * framing link gives the capture itself, on receive or send. */
static inline bool sl_cap_ip(const struct sl_stack *s, const struct sluice_buf *b, bool out)
{
	return (!out && (b->flags & SL_BUF_LOCAL)) || !s->link || !s->link->ops->frames;
}
int sl_region_path(const char *name, char *buf, size_t len);
void sl_region_detach(struct sl_stack *s);

/*
 * `sluice handoff PID FD` (tools/handoff.c) and the process's agent
 * (lib/preload/agent.c): one datagram each way on an AF_UNIX socket with
 * an abstract name, "sluice-handoff-PID" (SL_HO_NAME), which the process
 * holds.  The process learns who asks from the kernel (SCM_CREDENTIALS),
 * and answers to the asker's own (autobound) name.
 */
#define SL_HO_NAME	"sluice-handoff-%d"
#define SL_HO_MAGIC	0x48644f31u	/* "HdO1" */

/* The request: hand fd of the receiving process to the kernel. */
struct sl_ho_req {
	uint32_t magic;
	int32_t fd;
};

/* The answer: err 0, the fd is a kernel socket now; else an errno and
 * the socket is as it was. */
struct sl_ho_ans {
	uint32_t magic;
	int32_t fd;
	int32_t err;
};

/*
 * Between two processes of one stack that hold one socket (fork,
 * SCM_RIGHTS; lib/preload/README.md, "Other processes"): socket sd of
 * generation gen was handed to the kernel by the receiving process
 * (struct sl_sock's ho_pid); SL_HO_GET asks for the kernel socket, which
 * comes with the answer (struct sl_ho_ans, fd = sd) by SCM_RIGHTS;
 * SL_HO_DROP (no answer) says the asker let go of the stack's socket
 * last, so the copy kept for others can go.
 */
#define SL_HO_GET	0x48644f32u	/* "HdO2" */
#define SL_HO_DROP	0x48644f33u	/* "HdO3" */
struct sl_ho_get {
	uint32_t magic;
	uint32_t sd, gen;
};

/*
 * Checked copies of a program's memory (ucopy.c): the stack's copies of
 * receive data into a caller's buffer.  sl_ucopy() copies n bytes from
 * src to dst and returns how many it could not copy (0: all), the
 * kernel's copy_to_user() contract: a fault in it resumes at the
 * routine's end when the process has a SIGSEGV/SIGBUS handler that asks
 * sl_ucopy_fixup() (lib/preload/signal.c); without one a fault kills
 * the process as memcpy() would.  sl_uprobe_w() finds whether the byte
 * at p may be written (it writes the byte's own value back, not
 * atomically: only for bytes given to be written): 0, or -1.
 * sl_ucopy_fixup(ip): where a fault at instruction ip resumes, or 0 if
 * ip is in neither routine.
 */
size_t sl_ucopy(void *dst, const void *src, size_t n);
int sl_uprobe_w(void *p);
uintptr_t sl_ucopy_fixup(uintptr_t ip);

/*
 * A destination of several buffers (readv()'s iovecs): the next byte
 * goes to iov[i] at off.  sl_ucopy_cur() copies n bytes there through
 * sl_ucopy() and moves the cursor on; a fault anywhere puts the cursor
 * back where it was and returns n (none taken, as Linux's
 * skb_copy_datagram_iter() reverts the iterator), as does a copy the
 * iovecs have no room left for; else 0.
 * sl_uprobe_cur(): the n bytes from the cursor on may all be written
 * (one probe a page, sl_uprobe_w()): 0, or -1.
 */
struct sl_ucur {
	const struct iovec *iov;
	unsigned int n, i;
	size_t off;
};

size_t sl_ucopy_cur(struct sl_ucur *c, const void *src, size_t n);
int sl_uprobe_cur(const struct sl_ucur *c, size_t n);

#endif /* SLUICE_CORE_H */
