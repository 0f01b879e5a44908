/* SPDX-License-Identifier: (GPL-2.0-only WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * Sluice kernel ABI: the ioctls of /dev/sluice and their argument structs.
 *
 * Rules every command follows (see Documentation/driver-api/ioctl.rst):
 *  - one _IOWR struct per command; its first field is @size, the number of
 *    bytes of the struct the caller knows about;
 *  - @size below the command's first published size is -EINVAL; above the
 *    size this module knows, the extra bytes must be zero (-E2BIG otherwise),
 *    so old binaries run on new modules and new binaries on old ones;
 *  - reserved fields and unknown flag bits must be zero (-EINVAL);
 *  - pointers travel as __u64, there is no long, bool or enum;
 *  - an unknown command is -ENOTTY.
 * On output the module writes min(@size, its own size) bytes and never
 * copies uninitialised bytes out.
 */
#ifndef _UAPI_SLUICE_H
#define _UAPI_SLUICE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SLUICE_DEVICE_NAME	"sluice"
#define SLUICE_DEVICE_PATH	"/dev/sluice"

/* Bumped on an incompatible change; compatible growth uses @size. */
#define SLUICE_ABI_VERSION	3

#define SLUICE_IOC_MAGIC	0xB5

#define SLUICE_VERSION_STRLEN	32

/*
 * Feature bits reported by SLUICE_IOC_VERSION.  A bit is only defined once
 * the module implements what it names.
 */
#define SLUICE_FEATURE_STACK	0x1ULL	/* STACK_CREATE, _ATTACH, _WAKE, mmap */
#define SLUICE_FEATURE_KRING	0x2ULL	/* KRING_SETUP, _KICK, mmap at SLUICE_MMAP_KRING */
#define SLUICE_FEATURE_FILTER	0x4ULL	/* FILTER_ADD, _DEL with port reservation */
#define SLUICE_FEATURE_IFINFO	0x8ULL	/* IFINFO */
#define SLUICE_FEATURE_NEIGH	0x10ULL	/* NEIGH_RESOLVE */
#define SLUICE_FEATURE_IPOIB	0x20ULL	/* IFINFO ib_* fields, NEIGH_RESOLVE path record */
#define SLUICE_FEATURE_MCAST	0x40ULL	/* MCAST_JOIN, _LEAVE */
#define SLUICE_FEATURE_SOCKFD	0x80ULL	/* SOCK_FD, _WAKE, _INFO, sluice_sock_kpoll */
#define SLUICE_FEATURE_REPLACE	0x100ULL	/* STACK_CREATE with SLUICE_STACK_CREATE_REPLACE */
#define SLUICE_FEATURE_HANDOFF	0x200ULL	/* HANDOFF: a connection to a kernel socket */
#define SLUICE_FEATURE_FILTER_FD 0x400ULL	/* FILTER_FD: a port reservation as an fd */
#define SLUICE_FEATURE_FILTER_SOCK 0x800ULL	/* FILTER_ADD: the caller's socket reserves */
#define SLUICE_FEATURE_FILTER_SIBLING 0x1000ULL	/* FILTER_ADD siblings; shared ports judged */
#define SLUICE_FEATURE_IPV6	0x2000ULL	/* kring IPv6: rx, TX_IPV6, FILTER_IPV6 */
#define SLUICE_FEATURE_SIBLING6	0x4000ULL	/* shared IPv6 ports judged; SIBLING with IPV6 */
#define SLUICE_FEATURE_HANDOFF6	0x8000ULL	/* HANDOFF with SLUICE_HANDOFF_IPV6 */
#define SLUICE_FEATURE_ROUTE6	0x10000ULL	/* kring tx SLUICE_KRING_TX_ROUTE */
#define SLUICE_FEATURE_SOCK_KEEP 0x20000ULL	/* SOCK_KEEP: a socket fd holds a kernel socket */
#define SLUICE_FEATURE_SOCK_CACHE 0x40000ULL	/* SOCK_PARK, SOCK_REUSE */
#define SLUICE_FEATURE_ERRFRAG	0x80000ULL	/* kring rx: ICMP errors, fragments */
/* What this module implements; grows as the features above land. */
#define SLUICE_FEATURES_ALL	(SLUICE_FEATURE_STACK | SLUICE_FEATURE_KRING | \
				 SLUICE_FEATURE_FILTER | SLUICE_FEATURE_IFINFO | \
				 SLUICE_FEATURE_NEIGH | \
				 SLUICE_FEATURE_IPOIB | SLUICE_FEATURE_MCAST | \
				 SLUICE_FEATURE_SOCKFD | SLUICE_FEATURE_REPLACE | \
				 SLUICE_FEATURE_HANDOFF | SLUICE_FEATURE_FILTER_FD | \
				 SLUICE_FEATURE_FILTER_SOCK | \
				 SLUICE_FEATURE_FILTER_SIBLING | SLUICE_FEATURE_IPV6 | \
				 SLUICE_FEATURE_SIBLING6 | SLUICE_FEATURE_HANDOFF6 | \
				 SLUICE_FEATURE_ROUTE6 | SLUICE_FEATURE_SOCK_KEEP | \
				 SLUICE_FEATURE_SOCK_CACHE | SLUICE_FEATURE_ERRFRAG)

/**
 * struct sluice_version - SLUICE_IOC_VERSION argument
 * @size:	in: sizeof(struct sluice_version) as the caller knows it
 * @flags:	in: must be zero
 * @abi_version:	out: SLUICE_ABI_VERSION of the module
 * @reserved:	must be zero on input, zero on output
 * @features:	out: SLUICE_FEATURE_* bits the module implements
 * @module_version:	out: the module's version, NUL-terminated
 */
struct sluice_version {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 reserved;
	__u64 features;
	char module_version[SLUICE_VERSION_STRLEN];
};

#define SLUICE_IOC_VERSION	_IOWR(SLUICE_IOC_MAGIC, 0x00, struct sluice_version)

/*
 * The shared stack region.
 *
 * One region per stack, mapped by every process that runs the stack (and,
 * with the module, allocated and pinned by it).  Everything inside is
 * addressed by byte offsets from the region's start (*_off) or by indices
 * (*_idx), never by pointers.  Writers: (u) user space, (k) the module,
 * (c) set once at creation.  The module never trusts any field (u) writes.
 *
 *   +-------------------+ 0
 *   | sluice_region     |  header: configuration, lock, what the module reads
 *   +-------------------+ SLUICE_REGION_LIB_OFF
 *   | library header    |  the library's own (state, neighbours, counters)
 *   +-------------------+ sock_off
 *   | socket table      |  max_sockets slots of sock_size bytes (lib-private)
 *   +-------------------+ hash_off
 *   | socket hash       |  2 * hash_buckets __u32 socket indices: by
 *   |                   |  4-tuple, then by local port
 *   +-------------------+ wheel_off
 *   | timer wheel       |  SLUICE_WHEEL_SLOTS __u32 socket indices
 *   +-------------------+ bufmeta_off
 *   | buffer metadata   |  n_bufs struct sluice_buf
 *   +-------------------+ bufdata_off (page aligned)
 *   | buffer data       |  n_bufs * buf_size bytes
 *   +-------------------+ region_size
 */
#define SLUICE_REGION_MAGIC	0x534c5543u	/* "SLUC" */
#define SLUICE_NAME_MAX		32
#define SLUICE_IDX_NONE		0xffffffffu
#define SLUICE_WHEEL_SLOTS	1024		/* 1 ms ticks */

/* sluice_region.state */
#define SLUICE_STATE_INIT	0	/* being laid out; not usable yet */
#define SLUICE_STATE_READY	1
#define SLUICE_STATE_BROKEN	2	/* a process died holding the lock */

/* Lock word bits (sluice_region.lock). */
#define SLUICE_LOCK_HELD	0x1u
#define SLUICE_LOCK_WAITERS	0x2u	/* someone sleeps on the futex */
#define SLUICE_LOCK_RESERVED	0x4u	/* zero */
/*
 * Bits 3..31 of a held lock word: the holder's pid, set in the same atomic
 * step that takes the lock, so a holder killed at any instant is named
 * (lock_owner, written after, is informational).  Linux pids fit: pid_max
 * is at most 2^22.
 */
#define SLUICE_LOCK_PID_SHIFT	3

/**
 * struct sluice_buf - metadata of one packet buffer
 * @next_idx:	next buffer in whatever queue holds this one (u)
 * @off:	start of the packet data within the buffer's data area (u)
 * @len:	bytes of packet data (u)
 * @seq:	TCP: sequence number of the first payload byte (u)
 * @flags:	SLUICE_BUF_* (u)
 * @aux:	owner-specific: e.g. payload offset, transmit count (u)
 * @ts_us:	owner-specific time stamp, e.g. when last sent (u)
 */
struct sluice_buf {
	__u32 next_idx;
	__u16 off;
	__u16 len;
	__u32 seq;
	__u16 flags;
	__u16 aux;
	__u64 ts_us;
};

/**
 * struct sluice_region - the header at offset 0 of a stack region
 *
 * Configuration (c) is written once by the creator before @state becomes
 * SLUICE_STATE_READY (a release store; attachers load it with acquire).
 */
struct sluice_region {
	__u32 magic;			/* (c) SLUICE_REGION_MAGIC */
	__u32 abi_version;		/* (c) SLUICE_ABI_VERSION */
	__u64 region_size;		/* (c) bytes */
	char name[SLUICE_NAME_MAX];	/* (c) NUL-terminated */
	__u32 state;			/* (u) SLUICE_STATE_* */
	__u32 creator_uid;		/* (c) */

	__u32 max_sockets;		/* (c) */
	__u32 sock_size;		/* (c) bytes per socket slot */
	__u32 hash_buckets;		/* (c) power of two */
	__u32 n_bufs;			/* (c) */
	__u32 buf_size;			/* (c) bytes of data per buffer */
	__u32 mtu;			/* (c) of the link, (u) on a device */
	__u64 sock_off;			/* (c) */
	__u64 hash_off;			/* (c) */
	__u64 wheel_off;		/* (c) */
	__u64 bufmeta_off;		/* (c) */
	__u64 bufdata_off;		/* (c) */

	/* The stack lock, on its own cache line. */
	__u32 lock __attribute__((aligned(64)));	/* (u) SLUICE_LOCK_* */
	__s32 lock_owner;		/* (u) holder's pid, informational (see lock) */
	__u32 wake_seq;			/* (u) futex, see sleepers */
	/*
	 * (u) processes asleep until the stack changes: while non-zero,
	 * every readiness change bumps wake_seq and wakes them (a shared
	 * futex wake on wake_seq, and SLUICE_WAKE_SIGNAL on a stack fd for
	 * those asleep in poll on one); the module also wakes the stack fd
	 * when its rings take packets while it is non-zero
	 */
	__u32 sleepers;
	/*
	 * (k) bumped by the module each time the last file of a socket fd
	 * (SLUICE_IOC_SOCK_FD) is released, after it set that slot's
	 * sluice_sock_kpoll.kstate to SLUICE_KSOCK_RELEASED: user space
	 * (whoever holds the lock next) closes such sockets as close() would
	 * have.
	 */
	__u32 ksock_released;
	__u32 attach_count;		/* (u) processes that attached (debugfs shows it) */
	__u32 sock_used;		/* (u) sockets in use (sysfs shows it) */
	__u32 lock_seq;			/* (u) times the lock was taken, for inspection */
	/*
	 * (k) pushes, (u) takes: the slots released since user space last
	 * took them (ksock_released counts them), as slot index + 1, linked
	 * by sluice_sock_kpoll.rel_next; 0: none.  The module links a slot
	 * and swaps it in (compare-and-exchange) before it bumps
	 * ksock_released; user space exchanges the head with 0 and walks
	 * what it took, so a release costs it the released slots, not a
	 * scan of every slot.  The module gives up a push that keeps losing
	 * to writes of the head (user space may write anything here): the
	 * count then runs ahead of what the list gave, and user space scans.
	 */
	__u32 ksock_rel_head __attribute__((aligned(64)));
};

/*
 * Everything else in the region is the library's own and the module never
 * reads it: from offset SLUICE_REGION_LIB_OFF up to sock_off, the
 * library's private header (its stack-wide state, neighbours, counters),
 * and the contents of the socket slots past struct sluice_sock_kpoll.
 * Its layout has its own version, kept by the library in that header.
 */
#define SLUICE_REGION_LIB_OFF	256

/*
 * Stacks.
 *
 * A stack is a named region of shared memory that the module allocates
 * (shmem pages, zeroed, held and unevictable: never swapped) and every
 * process running the stack maps.  SLUICE_IOC_STACK_CREATE and SLUICE_IOC_STACK_ATTACH, issued on
 * /dev/sluice, return a stack fd (O_CLOEXEC); everything else is done on
 * that fd:
 *  - mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) maps the
 *    region.  The offset must be 0 and len at most region_size; private
 *    mappings are refused (-EINVAL) and the mapping cannot grow (mremap).
 *  - poll/epoll and SLUICE_IOC_STACK_WAKE: see struct sluice_stack_wake.
 *  - Shared futexes (FUTEX_WAIT/FUTEX_WAKE without FUTEX_PRIVATE_FLAG)
 *    work on region words: the region is shmem memory, so a word has the
 *    same futex key in every process that maps the stack, and in children
 *    that inherit a mapping.  (Modules before this were vmalloc memory,
 *    on which every shared futex call failed with EFAULT; user space
 *    probes with a FUTEX_WAKE of nobody and sleeps on the stack fd if it
 *    fails.)  Processes wait for the stack lock on its word and, without
 *    another fd to watch, for the stack on wake_seq; a process that must
 *    also watch another fd sleeps in poll on the stack fd.
 *
 * Names are 1 to SLUICE_NAME_MAX - 1 characters of [A-Za-z0-9_.-], not
 * starting with '.', NUL-padded to SLUICE_NAME_MAX bytes (-EINVAL
 * otherwise), and unique within a network namespace (-EEXIST).  The name is
 * listed from creation until the last file of the stack is released, that
 * is when the last fd is closed and the last mapping made through one is
 * unmapped; the same name can then be created again, and the region is
 * freed.
 *
 * A process counts as attached to a stack while it is alive and a stack
 * file it made (by STACK_CREATE or STACK_ATTACH) is open or mapped.  A
 * file inherited by fork or passed over a socket counts only for the
 * process that made it: each process should attach on its own.
 */
#define SLUICE_STACK_MAX_SOCKETS	(1u << 20)
#define SLUICE_STACK_MAX_SOCK_SIZE	65536u	/* bytes per socket slot */
#define SLUICE_STACK_MAX_HASH_BUCKETS	(1u << 22)
#define SLUICE_STACK_MAX_BUFS		(1u << 22)
#define SLUICE_STACK_MAX_BUF_SIZE	65536u	/* sluice_buf.len is a __u16 */
#define SLUICE_STACK_MIN_MTU		68u	/* RFC 791: every host takes 68 */
#define SLUICE_STACK_ALIGN		64u	/* area offsets and sock_size */

/* sluice_stack_create.flags */
#define SLUICE_STACK_CREATE_REPLACE	0x1u

/**
 * struct sluice_stack_create - SLUICE_IOC_STACK_CREATE argument
 * @size:	in: sizeof(struct sluice_stack_create) as the caller knows it
 * @flags:	in: 0 or SLUICE_STACK_CREATE_REPLACE: a stack listed under
 *		@name whose region's @state user space has set to
 *		SLUICE_STATE_BROKEN, and which the caller may attach to, is
 *		unlisted (its files and mappings keep it for its processes,
 *		by no name) and the new stack takes the name; any other
 *		listed stack of that name is still -EEXIST
 * @name:	in: the stack's name (rules above)
 * @ifindex:	in: network device in the caller's network namespace, or 0
 *		for none (-ENODEV if there is no such device)
 * @reserved0:	must be zero
 * @region_size: in: bytes; a multiple of the page size, at most the module
 *		parameter max_region_mb (-E2BIG above it)
 * @max_sockets: in: socket slots, 1 .. SLUICE_STACK_MAX_SOCKETS
 * @sock_size:	in: bytes per slot, a non-zero multiple of SLUICE_STACK_ALIGN,
 *		at most SLUICE_STACK_MAX_SOCK_SIZE
 * @hash_buckets: in: a power of two, at most SLUICE_STACK_MAX_HASH_BUCKETS
 * @n_bufs:	in: packet buffers, 1 .. SLUICE_STACK_MAX_BUFS
 * @buf_size:	in: data bytes per buffer, 1 .. SLUICE_STACK_MAX_BUF_SIZE
 * @mtu:	in: SLUICE_STACK_MIN_MTU .. @buf_size
 * @sock_off:	in: socket table, @max_sockets * @sock_size bytes
 * @hash_off:	in: socket hash, 2 * @hash_buckets * 4 bytes
 * @wheel_off:	in: timer wheel, SLUICE_WHEEL_SLOTS * 4 bytes
 * @bufmeta_off: in: @n_bufs struct sluice_buf
 * @bufdata_off: in: @n_bufs * @buf_size bytes
 * @fd:		out: the new stack fd (O_CLOEXEC); ignored on input
 * @reserved1:	must be zero
 *
 * The layout is the one user space computed (the header diagram above).
 * Every area must lie inside the region, after the header (struct
 * sluice_region), without overlapping another; the *_off are multiples of
 * SLUICE_STACK_ALIGN and @bufdata_off of the page size.  Any rule broken
 * is -EINVAL; space after the last area is allowed.
 *
 * The region is pinned memory: unless the caller has CAP_IPC_LOCK it is
 * charged to the caller's user, against the caller's RLIMIT_MEMLOCK, until
 * it is freed (as io_uring and AF_XDP do); -ENOMEM over that limit, as
 * mlock(2), or if the region cannot be allocated.
 *
 * The module writes, in the new region's header: magic, abi_version,
 * region_size, name, creator_uid (the caller's effective uid), the counts
 * and offsets above, and state SLUICE_STATE_INIT.  Everything else is zero
 * for user space to initialise through a mapping.
 */
struct sluice_stack_create {
	__u32 size;
	__u32 flags;
	char name[SLUICE_NAME_MAX];
	__u32 ifindex;
	__u32 reserved0;
	__u64 region_size;
	__u32 max_sockets;
	__u32 sock_size;
	__u32 hash_buckets;
	__u32 n_bufs;
	__u32 buf_size;
	__u32 mtu;
	__u64 sock_off;
	__u64 hash_off;
	__u64 wheel_off;
	__u64 bufmeta_off;
	__u64 bufdata_off;
	__s32 fd;
	__u32 reserved1;
};

/**
 * struct sluice_stack_attach - SLUICE_IOC_STACK_ATTACH argument
 * @size:	in: sizeof(struct sluice_stack_attach) as the caller knows it
 * @flags:	in: must be zero
 * @name:	in: a stack in the caller's network namespace (-ENOENT if none)
 * @fd:		out: a new fd on that stack (O_CLOEXEC); ignored on input
 * @ifindex:	out: as created
 * @region_size: out: as created: how much to map
 *
 * Allowed to the stack's creator (same effective uid) and to holders of
 * CAP_NET_ADMIN in the user namespace that owns the stack's network
 * namespace; -EACCES for anyone else.
 */
struct sluice_stack_attach {
	__u32 size;
	__u32 flags;
	char name[SLUICE_NAME_MAX];
	__s32 fd;
	__u32 ifindex;
	__u64 region_size;
};

/* sluice_stack_wake.flags: at most one of them. */
#define SLUICE_WAKE_ARM		0x1u
#define SLUICE_WAKE_SIGNAL	0x2u

/**
 * struct sluice_stack_wake - SLUICE_IOC_STACK_WAKE argument (on a stack fd)
 * @size:	in: sizeof(struct sluice_stack_wake) as the caller knows it
 * @flags:	in: 0 (read the sequence), SLUICE_WAKE_ARM or
 *		SLUICE_WAKE_SIGNAL
 * @seq:	in (ARM only): the sequence the caller last saw;
 *		out: the stack's wake sequence (after SIGNAL: the new one)
 * @reserved:	must be zero
 *
 * Each stack has a wake sequence, a counter only the module changes: every
 * SIGNAL, through any fd of the stack, adds one and wakes every poller.
 * Each stack fd has an armed value, set by ARM (and, when the fd is made,
 * to the sequence at that moment).  poll/epoll on the fd reports EPOLLIN
 * while the stack's sequence differs from the fd's armed value.
 *
 * Sleeping without missing a wakeup:
 *   sleeper                               waker
 *   1. s = WAKE(0).seq                    a. publish the work in the region
 *   2. look for work in the region;       b. WAKE(SIGNAL)
 *      if there is some, do it, go to 1
 *   3. WAKE(ARM, seq = s)
 *   4. poll(fd, POLLIN, timeout); go to 1
 * A SIGNAL that lands after step 1 changed the sequence away from s, so
 * the poll of step 4 returns at once, even if the SIGNAL came before step
 * 3.  The sleeper may arm with the value step 3 returns only if it looks
 * for work again afterwards.  Threads that share one fd share its armed
 * value: give each sleeping thread an fd of its own (STACK_ATTACH).
 */
struct sluice_stack_wake {
	__u32 size;
	__u32 flags;
	__u32 seq;
	__u32 reserved;
};

#define SLUICE_IOC_STACK_CREATE	_IOWR(SLUICE_IOC_MAGIC, 0x01, struct sluice_stack_create)
#define SLUICE_IOC_STACK_ATTACH	_IOWR(SLUICE_IOC_MAGIC, 0x02, struct sluice_stack_attach)
#define SLUICE_IOC_STACK_WAKE	_IOWR(SLUICE_IOC_MAGIC, 0x03, struct sluice_stack_wake)

/*
 * The kring queue: the module steers a stack's packets between its
 * network device and rings shared with user space (DESIGN.md, "kring").
 *
 * SLUICE_IOC_KRING_SETUP on a stack fd gives the stack (which must have
 * been created with an ifindex) one set of rings, allocated by the module
 * in a second mapping of the stack fd:
 *
 *   mmap(NULL, kring.size, PROT_READ | PROT_WRITE, MAP_SHARED, stack_fd,
 *        SLUICE_MMAP_KRING)
 *
 * Every process of the stack maps the same rings; the stack lock orders
 * the processes among themselves, the rings order them with the module.
 *
 *   +-----------------------+ 0
 *   | struct sluice_kring   |  sizes, offsets, device state, counters (k),
 *   |  rx / fill / tx ring  |  and the three ring index pairs
 *   +-----------------------+ rx_off
 *   | rx descriptors        |  rx_entries struct sluice_kring_rx (k)
 *   +-----------------------+ fill_off
 *   | fill entries          |  rx_entries __u32 buffer idx (u)
 *   +-----------------------+ tx_off
 *   | tx descriptors        |  tx_entries struct sluice_kring_tx (u)
 *   +-----------------------+ tx_slots_off (page aligned)
 *   | tx slots              |  tx_entries * tx_slot_size bytes (u)
 *   +-----------------------+ size
 *
 * Rings are single-producer, single-consumer, with free-running __u32
 * indices: entry i lives at (i & (entries - 1)); the ring is empty when
 * prod == cons and full when prod - cons == entries.  A producer writes
 * entries, then publishes prod with a release store; a consumer reads prod
 * with acquire, reads the entries, then publishes cons with release.
 *
 *  - fill (u produces, k consumes): packet buffers of the stack region,
 *    free for the module to receive into.  The module writes a received
 *    IPv4 packet at byte SLUICE_KRING_RX_HEADROOM of buffer idx's data
 *    area (bufdata_off + idx * buf_size in the region), at most buf_size -
 *    SLUICE_KRING_RX_HEADROOM bytes; it never touches buffer metadata.
 *  - rx (k produces, u consumes): one descriptor per packet received into
 *    a buffer taken from fill.  The buffer is user space's again.
 *  - tx (u produces, k consumes, on SLUICE_IOC_KRING_KICK): the IP
 *    packet for tx entry i is at the start of tx slot (i & (entries - 1)).
 *    The module copies it into an skb and sends it through the device's
 *    neighbour layer to @nexthop (ARP on Ethernet, the 20-byte hardware
 *    address on IPoIB), or for an IPv6 packet (SLUICE_KRING_TX_IPV6) to
 *    its destination address as an on-link next hop (Neighbour Discovery,
 *    the kernel's): the slot is free again once cons has passed it.
 *
 * The module trusts nothing it reads here: a producer index more than
 * @entries ahead, a buffer index outside the region, a length that does
 * not fit, all are counted (bad_*) and skipped, never followed.  It keeps
 * its own copies of the indices it writes (rx prod, fill and tx cons) and
 * publishes them again on every pass: writing them changes nothing.
 *
 * Receive: IPv4 TCP and UDP packets, not fragments, that a filter claims;
 * with SLUICE_FEATURE_IPV6 also IPv6 packets whose first next header is
 * TCP or UDP (extension headers, fragments included, are the kernel's).
 * A GSO/GRO packet longer than a buffer holds is segmented by the module
 * (one rx descriptor per segment); a single packet that does not fit is
 * counted in rx_drop_size.  Steering lasts while the stack has a file:
 * an fd, or a mapping made through one.
 *
 * Sleeping: the rx side bumps the stack's wake sequence (struct
 * sluice_stack_wake) and wakes pollers of the stack fd whenever it
 * produces while someone sleeps, so the WAKE protocol covers the rings.
 * Someone sleeps while the region's @sleepers is non-zero or a poller is
 * queued on a stack fd: a sleeper adds itself to @sleepers (a full
 * barrier) before its last look at the rings (step 2 of the protocol),
 * or it may miss a packet produced between that look and its poll.
 */
#define SLUICE_MMAP_REGION	0ULL
#define SLUICE_MMAP_KRING	(1ULL << 32)	/* mmap offset of the rings */

#define SLUICE_KRING_MAGIC	0x4b52494eu	/* "KRIN" */
#define SLUICE_KRING_MAX_ENTRIES	(1u << 16)
#define SLUICE_KRING_MIN_SLOT	128u
#define SLUICE_KRING_MAX_SLOT	65536u
#define SLUICE_KRING_RX_HEADROOM	64u	/* = libsluice's SL_HEADROOM */

/*
 * sluice_kring.dev_state (k): UP while the device is there; GONE once it
 * is unregistered: nothing is steered and KICK fails with -ENODEV.
 */
#define SLUICE_KRING_DEV_UP	0
#define SLUICE_KRING_DEV_GONE	1

/*
 * sluice_kring_rx.flags (k): CSUM_OK when the TCP/UDP checksum needs no
 * check (the device verified it, or a local sender left it to offload).
 */
#define SLUICE_KRING_RX_CSUM_OK	0x1

/**
 * struct sluice_kring_ring - one ring's indices, each on its own line
 * @prod:	producer index (free-running)
 * @cons:	consumer index (free-running)
 */
struct sluice_kring_ring {
	__u32 prod __attribute__((aligned(64)));
	__u32 cons __attribute__((aligned(64)));
} __attribute__((aligned(64)));

/**
 * struct sluice_kring_rx - a received packet
 * @buf_idx:	the buffer it is in (one user space gave on the fill ring)
 * @len:	bytes of IP packet (IPv4, or IPv6 with SLUICE_FEATURE_IPV6: the
 *		version nibble says which) at SLUICE_KRING_RX_HEADROOM
 * @flags:	SLUICE_KRING_RX_*
 */
struct sluice_kring_rx {
	__u32 buf_idx;
	__u16 len;
	__u16 flags;
};

/*
 * sluice_kring_tx.flags (u): IPV6 (SLUICE_FEATURE_IPV6) for an IPv6
 * packet, sent as ETH_P_IPV6 to its destination address as the on-link
 * next hop, resolved in the kernel's Neighbour Discovery table; @nexthop
 * must be zero, the packet's version 6 and its payload length @len - 40,
 * its destination neither ::, ::1 nor IPv4-mapped (else bad_desc).
 * IPV6 | ROUTE (SLUICE_FEATURE_ROUTE6): the next hop is the kernel's
 * route's for the packet's destination and source out of the stack's
 * device (a gateway, or the destination where the route has none); no
 * route, or one through another device, is counted in tx_drop.
 */
#define SLUICE_KRING_TX_IPV6	0x1u
#define SLUICE_KRING_TX_ROUTE	0x2u

/**
 * struct sluice_kring_tx - a packet to send
 * @len:	bytes of IP packet at the start of the entry's slot, 20 (40
 *		for IPv6) .. tx_slot_size and at most the device's MTU
 * @nexthop:	IPv4 address of the next hop on the device, network order;
 *		not 0.0.0.0/8 or 127.0.0.0/8 (counted in bad_desc); zero for
 *		SLUICE_KRING_TX_IPV6
 * @flags:	0, SLUICE_KRING_TX_IPV6 or SLUICE_KRING_TX_IPV6 | _ROUTE
 * @reserved:	must be zero
 */
struct sluice_kring_tx {
	__u32 len;
	__u32 nexthop;
	__u32 flags;
	__u32 reserved;
};

/**
 * struct sluice_kring - the header at offset 0 of the kring mapping
 *
 * Everything but the rings' user-written indices is written by the module
 * (k); sizes and offsets are set once, at SLUICE_IOC_KRING_SETUP.
 */
struct sluice_kring {
	__u32 magic;			/* (k) SLUICE_KRING_MAGIC */
	__u32 rx_entries;		/* (k) power of two; fill has as many */
	__u32 tx_entries;		/* (k) power of two */
	__u32 tx_slot_size;		/* (k) bytes per tx slot */
	__u64 size;			/* (k) bytes of the mapping */
	__u64 rx_off;			/* (k) */
	__u64 fill_off;			/* (k) */
	__u64 tx_off;			/* (k) */
	__u64 tx_slots_off;		/* (k) page aligned */
	__u32 ifindex;			/* (k) the device steered */
	__u32 dev_state;		/* (k) SLUICE_KRING_DEV_* */
	__u32 dev_mtu;			/* (k) the device's MTU now */
	__u32 dev_seq;			/* (k) bumped on any device change */

	/* Counters (k), only ever incremented. */
	__u64 rx_packets __attribute__((aligned(64)));	/* steered to rx */
	__u64 rx_bytes;
	__u64 rx_drop_ring;	/* rx full: dropped */
	__u64 rx_drop_fill;	/* no buffer on the fill ring: dropped */
	__u64 rx_drop_size;	/* longer than a buffer holds: dropped */
	__u64 tx_packets;	/* handed to the device */
	__u64 tx_bytes;
	__u64 tx_drop;		/* the device, neighbour layer or route refused */
	__u64 bad_index;	/* a producer index too far ahead: reset */
	__u64 bad_buf;		/* a fill entry outside the region: skipped */
	__u64 bad_desc;		/* a tx descriptor with bad length/flags */
	__u64 kicks;
	__u64 reserved_ctr[4];

	struct sluice_kring_ring rx;	/* prod (k), cons (u) */
	struct sluice_kring_ring fill;	/* prod (u), cons (k) */
	struct sluice_kring_ring tx;	/* prod (u), cons (k) */
};

/*
 * mmap at SLUICE_MMAP_KRING follows the rules of the region's (shared only,
 * len at most @size, cannot grow); -EINVAL before the rings exist.
 */

/* SLUICE_IOC_KRING_SETUP flags */
#define SLUICE_KRING_CREATE	0x1u	/* make the rings (else: describe them) */

/**
 * struct sluice_kring_setup - SLUICE_IOC_KRING_SETUP argument (stack fd)
 * @size:	in: sizeof(struct sluice_kring_setup) as the caller knows it
 * @flags:	in: SLUICE_KRING_CREATE or 0
 * @rx_entries:	in (CREATE): power of two, 1 .. SLUICE_KRING_MAX_ENTRIES;
 *		out: as made
 * @tx_entries:	in (CREATE): likewise; out: as made
 * @tx_slot_size: in (CREATE): a multiple of 64, SLUICE_KRING_MIN_SLOT ..
 *		SLUICE_KRING_MAX_SLOT; out: as made
 * @reserved:	must be zero
 * @mmap_size:	out: bytes to map at SLUICE_MMAP_KRING (ignored on input)
 *
 * Without CREATE, in fields other than @size and @flags must be zero and
 * the call describes the rings already made (-ENOENT if none).  With
 * CREATE: -EEXIST if the stack has rings, -ENODEV if it has no device or
 * the device has gone, -EBUSY if the device's rx_handler belongs to
 * someone else (a bridge or bond port), -ENOMEM as for stacks (the rings
 * are charged to RLIMIT_MEMLOCK likewise), -EINVAL for a bad size.  The
 * rings steer nothing until filters (below) say what to steer; they go
 * away with the stack.
 */
struct sluice_kring_setup {
	__u32 size;
	__u32 flags;
	__u32 rx_entries;
	__u32 tx_entries;
	__u32 tx_slot_size;
	__u32 reserved;
	__u64 mmap_size;
};

/**
 * struct sluice_kring_kick - SLUICE_IOC_KRING_KICK argument (stack fd)
 * @size:	in: sizeof(struct sluice_kring_kick) as the caller knows it
 * @flags:	in: must be zero
 * @sent:	out: tx entries consumed by this call (sent or counted bad)
 * @reserved:	must be zero
 *
 * Sends everything on the tx ring, in order, before returning.  -ENOENT
 * without rings, -ENODEV once the device has gone.
 */
struct sluice_kring_kick {
	__u32 size;
	__u32 flags;
	__u32 sent;
	__u32 reserved;
};

/*
 * Filters: which packets arriving on a stack's device are the stack's.
 *
 * A filter is (protocol, local address and port, remote address and port):
 * remote both zero for a listening or unconnected socket (3-tuple), both
 * non-zero for a connection (5-tuple); a packet matches the most specific
 * filter of its device (5-tuple first, then local address, then a local
 * address of 0 = any).  Adding a filter reserves its local port in the
 * kernel, with the caller's credentials, by binding a kernel socket of the
 * same protocol in the stack's network namespace (no SO_REUSEADDR), or
 * by the caller's own bound socket (SLUICE_FILTER_RESV_FD, below): so
 * binding rules apply as for any socket (-EACCES for a privileged port
 * without CAP_NET_BIND_SERVICE, -EADDRINUSE for a port the kernel uses)
 * and no kernel socket can take the port while the filter lives.  Filters
 * of one stack with the same protocol and local address and port share
 * one reservation.  Filters go away with the stack.
 */
#define SLUICE_FILTER_MAX	65536u	/* per stack */

/**
 * struct sluice_filter - SLUICE_IOC_FILTER_ADD / _DEL argument (stack fd)
 * @size:	in: sizeof(struct sluice_filter) as the caller knows it
 * @flags:	in: 0, or SLUICE_FILTER_RESV_FD, _SIBLING, _IPV6 (ADD; below)
 * @protocol:	in: IPPROTO_TCP or IPPROTO_UDP (ADD)
 * @reserved0:	must be zero
 * @laddr:	in: local IPv4 address, network order, or 0 for any (ADD)
 * @raddr:	in: remote address, network order, or 0 (ADD)
 * @lport:	in: local port, network order; 0 asks the kernel to pick a
 *		free one (ADD, 3-tuple only); out: the port (ADD)
 * @rport:	in: remote port, network order, or 0 (ADD)
 * @id:		out (ADD): the filter's id; in (DEL): the filter to remove
 * @reserved1:	must be zero
 * @fd:		in (ADD with SLUICE_FILTER_RESV_FD): the reservation's socket
 * @reserved2:	must be zero
 * @laddr6:	in (ADD with SLUICE_FILTER_IPV6): local IPv6 address or ::
 * @raddr6:	in (ADD with SLUICE_FILTER_IPV6): remote IPv6 address or ::
 *
 * ADD: -EINVAL for a bad protocol or half a remote, -EEXIST for a filter
 * the stack already has, -ENOSPC past SLUICE_FILTER_MAX, -ENODEV if the
 * stack has no device, -ENOENT without rings, -EXDEV if the caller is
 * not in the stack's network namespace (added with the module: the
 * reservation is made with the caller's credentials, where the caller
 * lives), the reservation's errno otherwise.  A reservation with a local
 * address of 0 also covers the stack's filters on the same protocol and
 * port with a specific local address (a listener's accepted
 * connections).  DEL: only @id is read (besides @size and @flags);
 * -ENOENT for no such filter of this stack.
 *
 * ADD with SLUICE_FILTER_RESV_FD (SLUICE_FEATURE_FILTER_SOCK): @fd, a
 * kernel socket the caller bound itself, is the reservation instead of
 * one the module binds, so the port is held in the program's own form:
 * its family, IPV6_V6ONLY, address, SO_REUSEADDR and SO_REUSEPORT (and
 * their owner), as the kernel's rules judged them at its bind().  Only a
 * 3-tuple with a port: @lport nonzero, no remote, and no reservation of
 * the stack covering it yet (-EEXIST).  The socket must be TCP
 * (SOCK_STREAM) or UDP (SOCK_DGRAM) as @protocol says, AF_INET or
 * AF_INET6, of the stack's network namespace (-EXDEV), neither
 * listening nor connected, bound to @lport at the IPv4 address @laddr
 * names: AF_INET at @laddr; AF_INET6 at ::ffff:@laddr, or at :: without
 * IPV6_V6ONLY for @laddr 0 (an IPv6-only socket holds no IPv4 port), and
 * bound to no device but the stack's (-EINVAL otherwise); -EBADF and
 * -ENOTSOCK for an @fd that is no socket; -EPROTONOSUPPORT for another
 * family, type or protocol.  The module holds the socket's file (the
 * caller may keep its fd, FILTER_FD gives another) and keeps its port
 * bound whatever is done with it (SOCK_BINDPORT_LOCK); the socket is
 * released with the last of the filters and fds.  Without the flag
 * @fd and @reserved2 must be zero.
 *
 * ADD with SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING
 * (SLUICE_FEATURE_FILTER_SIBLING): @fd, bound as above, is another of the
 * stack's sockets on a port a reservation of the stack covers (an
 * SO_REUSEPORT or SO_REUSEADDR sibling's kernel twin); no filter is made
 * (@id 0).  With that feature a packet a 3-tuple filter claims on a port
 * its reservation shares (SO_REUSEADDR, SO_REUSEPORT) goes to the stack
 * only if the kernel's own lookup picks the reservation, such a sibling,
 * or no socket; else the kernel's receive path takes it.  -ENOENT: no
 * reservation of the stack covers the port; -EEXIST: the reservation
 * itself, or named already; -ENOSPC: 64 siblings live.
 *
 * With SLUICE_FILTER_IPV6 (SLUICE_FEATURE_IPV6; @size must reach @raddr6,
 * else -EINVAL) the filter steers IPv6: @laddr6 and @raddr6 stand for
 * @laddr and @raddr, which must be zero; neither
 * address IPv4-mapped (an IPv4 filter names those) and @raddr6 not :: with
 * a remote port (half a remote), all -EINVAL.  The module's reservation
 * is an AF_INET6 socket with IPV6_V6ONLY bound to [@laddr6]:@lport (a
 * link-local address scoped to the stack's device); an IPv6 reservation
 * of :: covers the stack's IPv6 filters on its protocol and port.  With
 * SLUICE_FILTER_RESV_FD the socket must be AF_INET6 bound to @laddr6
 * (:: with or without IPV6_V6ONLY for @laddr6 ::); a dual-stack socket on
 * :: may reserve an IPv4 filter of its port and an IPv6 one.  FILTER_DEL
 * takes either kind by @id.  With SLUICE_FEATURE_SIBLING6 an IPv6 filter's
 * shared port is judged by the kernel's IPv6 lookup as above, and
 * SLUICE_FILTER_SIBLING takes SLUICE_FILTER_IPV6 (@fd bound to @laddr6 as
 * a reservation's socket would be; without the feature -EINVAL).
 */
#define SLUICE_FILTER_RESV_FD	0x1u
#define SLUICE_FILTER_SIBLING	0x2u
#define SLUICE_FILTER_IPV6	0x4u

struct sluice_filter {
	__u32 size;
	__u32 flags;
	__u8 protocol;
	__u8 reserved0[3];
	__u32 laddr;
	__u32 raddr;
	__u16 lport;
	__u16 rport;
	__u32 id;
	__u32 reserved1;
	/* SLUICE_FEATURE_FILTER_SOCK */
	__s32 fd;
	__u32 reserved2;
	/* SLUICE_FEATURE_IPV6 */
	__u8 laddr6[16];
	__u8 raddr6[16];
};

/**
 * struct sluice_filter_fd - SLUICE_IOC_FILTER_FD argument (stack fd)
 * @size:	in: sizeof(struct sluice_filter_fd) as the caller knows it
 * @flags:	in: must be zero
 * @id:		in: a filter of this stack (FILTER_ADD's @id)
 * @fd:		out: a new fd (close-on-exec) of the kernel socket that
 *		reserves the filter's port, for the caller to use as that
 *		port's kernel twin: kernel sockets of this host reach the
 *		port there (loopback never reaches a filter).  The socket
 *		keeps its port whatever the caller does with the fd (shutdown
 *		of a listener included) for as long as a filter of the stack
 *		uses it; its receive buffer is the default again.
 *
 * -ENOENT for no such filter of this stack, -EINVAL for a hand-off entry
 * (it reserves nothing), -EXDEV if the caller is not in the stack's
 * network namespace.
 */
struct sluice_filter_fd {
	__u32 size;
	__u32 flags;
	__u32 id;
	__s32 fd;
};

/*
 * Interface information, for user space to configure a stack on a device.
 */
#define SLUICE_HWADDR_MAX	32	/* MAX_ADDR_LEN */
#define SLUICE_IFINFO_ADDRS	8

/**
 * struct sluice_ifinfo - SLUICE_IOC_IFINFO argument (/dev/sluice)
 * @size:	in: sizeof(struct sluice_ifinfo) as the caller knows it
 * @flags:	in: must be zero
 * @ifindex:	in: a device in the caller's network namespace (-ENODEV)
 * @type:	out: ARPHRD_* (1 Ethernet, 32 InfiniBand, ...)
 * @mtu:	out
 * @if_flags:	out: IFF_* (IFF_UP, IFF_RUNNING, ...)
 * @addr_len:	out: bytes of @hwaddr used (6 Ethernet, 20 IPoIB)
 * @n_addrs:	out: IPv4 addresses listed (at most SLUICE_IFINFO_ADDRS)
 * @reserved0:	must be zero
 * @hwaddr:	out: the device's hardware address
 * @broadcast:	out: its broadcast hardware address
 * @addr:	out: IPv4 addresses, network order
 * @prefix_len:	out: their prefix lengths
 * @name:	out: the device's name, NUL-terminated
 *
 * Added with SLUICE_FEATURE_IPOIB (callers that pass a smaller @size get
 * the first part only; all of these are zero unless @ib_flags has
 * SLUICE_IB_IPOIB):
 * @ib_flags:	out: SLUICE_IB_*
 * @ib_port:	out: port number of the IPoIB interface on @ib_dev
 * @ib_dev:	out: the ib_device's name (as in /sys/class/infiniband),
 *		NUL-terminated
 * @pkey:	out: the interface's P_Key (full member bit as configured)
 * @pkey_index:	out: its index in the port's P_Key table (0 with
 *		SLUICE_IB_PKEY_ABSENT: none)
 * @qkey:	out: the broadcast group's Q_Key (SLUICE_IB_QKEY_SA), else
 *		(no record, or one being rejoined) the IPoIB default 0x0B1B
 * @qpn:	out: the interface's own QPN (hwaddr bytes 1..3)
 * @ud_mtu:	out: IPoIB UD MTU: the port's active IB MTU minus the
 *		4-byte IPoIB header (2044, 4092, ...)
 * @gid:	out: the port GID the interface uses (hwaddr bytes 4..19)
 * @bcast_mgid:	out: the broadcast group's MGID (hwaddr broadcast 4..19)
 */
struct sluice_ifinfo {
	__u32 size;
	__u32 flags;
	__u32 ifindex;
	__u32 type;
	__u32 mtu;
	__u32 if_flags;
	__u8 addr_len;
	__u8 n_addrs;
	__u16 reserved0;
	__u8 hwaddr[SLUICE_HWADDR_MAX];
	__u8 broadcast[SLUICE_HWADDR_MAX];
	__u32 addr[SLUICE_IFINFO_ADDRS];
	__u8 prefix_len[SLUICE_IFINFO_ADDRS];
	char name[16];
	/* SLUICE_FEATURE_IPOIB */
	__u32 ib_flags;
	__u32 ib_port;
	char ib_dev[64];
	__u16 pkey;
	__u16 pkey_index;
	__u32 qkey;
	__u32 qpn;
	__u32 ud_mtu;
	__u8 gid[16];
	__u8 bcast_mgid[16];
};

/* sluice_ifinfo.ib_flags (out) */
#define SLUICE_IB_IPOIB		0x1u	/* an IPoIB interface matched to an ib_device */
#define SLUICE_IB_QKEY_SA	0x2u	/* @qkey read from the broadcast MCMemberRecord */
#define SLUICE_IB_CONNECTED	0x4u	/* interface in connected (RC) mode */
#define SLUICE_IB_SOURCE_QPN	0x8u	/* interface in enhanced mode: source-QPN UD QPs */
#define SLUICE_IB_FLOW_STEER	0x10u	/* flow steering rules (ibv_create_flow) */
#define SLUICE_IB_UD_CSUM	0x20u	/* UD IPv4 checksum offload */
#define SLUICE_IB_RSS		0x40u	/* RSS over several receive QPs */
/*
 * @pkey is not in the port's P_Key table (or has no partition bits): the
 * ipoib driver keeps such an interface down, no carrier, no QP, until the
 * SM puts the P_Key in the table; @pkey_index is then 0 and meaningless.
 */
#define SLUICE_IB_PKEY_ABSENT	0x80u

/* sluice_neigh_resolve.state (out) */
#define SLUICE_NEIGH_RES_VALID		1	/* @hwaddr is good */
#define SLUICE_NEIGH_RES_PENDING	2	/* resolution started; ask again */
#define SLUICE_NEIGH_RES_FAILED		3	/* no answer */

/**
 * struct sluice_neigh_resolve - SLUICE_IOC_NEIGH_RESOLVE argument (stack fd)
 * @size:	in: sizeof(struct sluice_neigh_resolve) as the caller knows it
 * @flags:	in: must be zero
 * @addr:	in: IPv4 next hop on the stack's device, network order
 * @state:	out: SLUICE_NEIGH_RES_*
 * @addr_len:	out: bytes of @hwaddr used
 * @reserved:	must be zero
 * @hwaddr:	out (VALID): the neighbour's hardware address
 *
 * Looks in the kernel's neighbour table for the stack's device; an entry
 * that is missing or stale is created or probed (ARP), so asking again
 * later finds the answer.  -ENODEV if the stack has no device.  Added with
 * the module: FAILED reports the last attempt and starts a new one (so
 * asking again later may say PENDING); -EINVAL for an @addr in 0.0.0.0/8.
 *
 * Added with SLUICE_FEATURE_IPOIB, for an IPoIB device once @state is
 * VALID (zero otherwise, and for callers that pass a smaller @size): the
 * SA path record from the interface's GID to the neighbour's, which the
 * module asks for (ib_sa_path_rec_get) and caches with its failures.
 * @path_state:	out: SLUICE_NEIGH_RES_*, 0 if not IPoIB
 * @qpn:	out: the neighbour's QPN (hwaddr bytes 1..3)
 * @dgid:	out: destination GID (hwaddr bytes 4..19)
 * @sgid:	out: source GID
 * @dlid:	out: destination LID, host order
 * @sl:		out: service level
 * @rate:	out: static rate, enum ibv_rate values
 * @mtu:	out: path MTU, enum ibv_mtu values (1 = 256 ... 5 = 4096)
 * @hop_limit:	out: for a GRH (0: none needed)
 * @traffic_class: out: for a GRH
 * @flow_label:	out: for a GRH
 */
struct sluice_neigh_resolve {
	__u32 size;
	__u32 flags;
	__u32 addr;
	__u32 state;
	__u8 addr_len;
	__u8 reserved[7];
	__u8 hwaddr[SLUICE_HWADDR_MAX];
	/* SLUICE_FEATURE_IPOIB */
	__u32 path_state;
	__u32 qpn;
	__u8 dgid[16];
	__u8 sgid[16];
	__u16 dlid;
	__u8 sl;
	__u8 rate;
	__u8 mtu;
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 reserved2;
	__u32 flow_label;
};

/**
 * struct sluice_mcast - SLUICE_IOC_MCAST_JOIN / _LEAVE argument (stack fd)
 * @size:	in: sizeof(struct sluice_mcast) as the caller knows it
 * @flags:	in: must be zero
 * @group:	in: IPv4 multicast group (224.0.0.0/4), network order
 * @addr_len:	out: bytes of @hwaddr used
 * @reserved:	must be zero
 * @hwaddr:	out: the group's link address on the stack's device
 *		(01:00:5e:... on Ethernet; on IPoIB QPN 0xffffff and the
 *		MGID made from the group, the P_Key and the broadcast MGID)
 *
 * JOIN makes the stack's device a member of @group as a kernel socket of
 * the caller's credentials would (IP_ADD_MEMBERSHIP on the device: IGMP,
 * the device's multicast filter, on IPoIB the SA join the ipoib driver
 * does, which an underlay QP cannot), held until LEAVE or until the
 * stack's last file goes.  -EINVAL for a group outside 224.0.0.0/4,
 * -ENODEV if the stack has no device, -EALREADY if the stack already
 * joined @group, -ENOSPC past SLUICE_MCAST_MAX groups a stack.  LEAVE:
 * -ENOENT if the stack did not join @group.  Packets to a joined group
 * still need a filter (FILTER_ADD with @laddr = @group) to reach the
 * stack.
 */
#define SLUICE_MCAST_MAX	64
struct sluice_mcast {
	__u32 size;
	__u32 flags;
	__u32 group;
	__u8 addr_len;
	__u8 reserved[3];
	__u8 hwaddr[SLUICE_HWADDR_MAX];
};

/*
 * Socket fds.
 *
 * Each socket slot of the region starts with a struct sluice_sock_kpoll
 * (the rest of the slot is private to user space).  SLUICE_IOC_SOCK_FD
 * on a stack fd makes an fd for slot @idx of generation @gen: an
 * anonymous-inode file ("[sluice-sock]") that holds the stack, whose poll
 * reports @events of the slot (masked to EPOLLIN | EPOLLPRI | EPOLLOUT |
 * EPOLLERR | EPOLLHUP | EPOLLRDNORM | EPOLLWRNORM | EPOLLRDHUP), or
 * EPOLLERR | EPOLLHUP once the slot's @gen is no longer the fd's (the
 * socket is gone) or the stack is broken.  read/write/mmap on it fail.
 * dup, fork and SCM_RIGHTS share the file as for any fd; when its last
 * reference goes the module sets @kstate to SLUICE_KSOCK_RELEASED (if
 * @gen still matches), pushes the slot on sluice_region.ksock_rel_head
 * (@rel_next links it) and bumps sluice_region.ksock_released.
 *
 * Waking without a syscall per change: poll, each time it is called, sets
 * @armed to 1 and then (full barrier) reads @events.  User space, after
 * storing new @events (full barrier), exchanges @armed with 0 and, if it
 * was 1, asks SLUICE_IOC_SOCK_WAKE for that socket (batched: once per
 * unlock).  Either the module's read sees the new events or user space
 * sees @armed and wakes; epoll re-polls (and so re-arms) every fd it
 * reports.
 */
struct sluice_sock_kpoll {
	__u32 events;	/* (u) EPOLL* readiness of the socket now */
	__u32 gen;	/* (u) generation of the socket in this slot */
	__u32 armed;	/* (k) sets, (u) clears: someone polls this socket */
	__u32 kstate;	/* (k) SLUICE_KSOCK_*, (u) resets to 0 on allocation */
	__u32 rel_next;	/* (k) next on sluice_region.ksock_rel_head's list, + 1 */
};

/* sluice_sock_kpoll.kstate */
#define SLUICE_KSOCK_NONE	0	/* no socket fd made for this generation */
#define SLUICE_KSOCK_OPEN	1	/* socket fd(s) exist */
#define SLUICE_KSOCK_RELEASED	2	/* the last one was closed */

/* sluice_sock_fd.flags */
#define SLUICE_SOCK_FD_CLOEXEC	0x1u	/* O_CLOEXEC on the new fd */
#define SLUICE_SOCK_FD_NONBLOCK	0x2u	/* O_NONBLOCK on the new file */

/**
 * struct sluice_sock_fd - SLUICE_IOC_SOCK_FD argument (stack fd)
 * @size:	in: sizeof(struct sluice_sock_fd) as the caller knows it
 * @flags:	in: SLUICE_SOCK_FD_*
 * @idx:	in: socket slot, below max_sockets (-EINVAL)
 * @gen:	in: the slot's generation, which must equal @gen of its
 *		sluice_sock_kpoll now (-ESTALE)
 *
 * Return: the new fd.  Sets the slot's @kstate to SLUICE_KSOCK_OPEN.
 */
struct sluice_sock_fd {
	__u32 size;
	__u32 flags;
	__u32 idx;
	__u32 gen;
};

/**
 * struct sluice_sock_wake - SLUICE_IOC_SOCK_WAKE argument (stack fd)
 * @size:	in: sizeof(struct sluice_sock_wake) as the caller knows it
 * @flags:	in: must be zero
 * @n:		in: number of __u32 socket indices at @idx_ptr, at most
 *		SLUICE_SOCK_WAKE_MAX (-E2BIG)
 * @reserved:	must be zero
 * @idx_ptr:	in: user pointer to the indices
 *
 * Wakes whoever polls a socket fd of each listed slot.  Every index is
 * checked before any wake (-EINVAL if one is not below max_sockets);
 * slots without a socket fd are skipped.
 */
#define SLUICE_SOCK_WAKE_MAX	1024
struct sluice_sock_wake {
	__u32 size;
	__u32 flags;
	__u32 n;
	__u32 reserved;
	__u64 idx_ptr;
};

/**
 * struct sluice_sock_info - SLUICE_IOC_SOCK_INFO argument (socket fd)
 * @size:	in: sizeof(struct sluice_sock_info) as the caller knows it
 * @flags:	in: must be zero
 * @idx:	out: the socket's slot
 * @gen:	out: its generation
 * @name:	out: the stack's name, NUL-padded
 *
 * For a process that received a socket fd (SCM_RIGHTS, exec) to find the
 * socket: attach to the stack by @name, then use slot @idx.  -ENOTTY on
 * any other fd.
 */
struct sluice_sock_info {
	__u32 size;
	__u32 flags;
	__u32 idx;
	__u32 gen;
	char name[SLUICE_NAME_MAX];
};

/*
 * The socket cache (SLUICE_FEATURE_SOCK_CACHE).  A socket fd's file
 * outlives the socket it was made for only as a *parked* file: one whose
 * last fd but the caller's keeper was closed by SLUICE_IOC_SOCK_PARK
 * while nothing else held it.  The socket is released at that moment as
 * by the file's end (@kstate, the released list and count), and
 * SLUICE_IOC_SOCK_REUSE binds the parked file to the caller's next
 * socket, at a new fd, where SLUICE_IOC_SOCK_FD would make a new file.
 * A parked file polls EPOLLERR | EPOLLHUP and SOCK_INFO on it is
 * -ENOTCONN.
 */

/**
 * struct sluice_sock_park - SLUICE_IOC_SOCK_PARK argument (stack fd)
 * @size:	in: sizeof(struct sluice_sock_park) as the caller knows it
 * @flags:	in: must be zero
 * @fd:		in: a socket fd of this stack's, bound to a socket
 * @keep_fd:	in: another fd of the same file (the caller's keeper)
 *
 * Closes @fd as close(2) does.  If then nothing holds the file but
 * @keep_fd (no other fd in any process, no call in flight on it, no
 * epoll item of it, no status flag but O_NONBLOCK), the file is parked
 * at @keep_fd and the socket released; otherwise @keep_fd is closed too,
 * and the file lives on with whoever holds it, as after close(2) of the
 * caller's last fd.  -EINVAL if @fd is not a bound socket fd of this
 * stack or @keep_fd not of the same file (then nothing is closed);
 * -EBADF if either is not open.
 *
 * Return: 1 parked, 0 not (both fds closed).
 */
struct sluice_sock_park {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__s32 keep_fd;
};

/**
 * struct sluice_sock_reuse - SLUICE_IOC_SOCK_REUSE argument (stack fd)
 * @size:	in: sizeof(struct sluice_sock_reuse) as the caller knows it
 * @flags:	in: SLUICE_SOCK_FD_* (CLOEXEC of the new fd, NONBLOCK of the
 *		file)
 * @idx:	in: socket slot, below max_sockets (-EINVAL)
 * @gen:	in: its generation now (-ESTALE)
 * @fd:		in: a parked socket fd of this stack (-EINVAL if not one)
 * @reserved:	must be zero
 *
 * What SLUICE_IOC_SOCK_FD does, with the parked file at @fd: a new fd at
 * the lowest free number, the file's O_NONBLOCK as @flags say, @kstate
 * OPEN.  -EBUSY, nothing changed, if anything holds the file but @fd
 * (another fd, a call in flight, an epoll item): the caller closes @fd.
 *
 * Return: the new fd.
 */
struct sluice_sock_reuse {
	__u32 size;
	__u32 flags;
	__u32 idx;
	__u32 gen;
	__s32 fd;
	__u32 reserved;
};

/**
 * struct sluice_sock_keep - SLUICE_IOC_SOCK_KEEP argument (socket fd)
 * @size:	in: sizeof(struct sluice_sock_keep) as the caller knows it
 * @flags:	in: 0 to keep @fd; SLUICE_SOCK_KEEP_GET (with
 *		SLUICE_SOCK_KEEP_CLOEXEC or not) for a new fd of the socket kept
 * @fd:		in: without GET, the caller's AF_INET or AF_INET6 socket to
 *		keep; with GET, must be zero
 * @reserved:	must be zero
 *
 * A stack socket handed to the kernel leaves the kernel socket that took
 * it with the socket fd (issued on it), for every process that holds the
 * fd too (fork, SCM_RIGHTS): the file keeps a reference to it until the
 * file's last reference goes, and GET installs another fd of it in the
 * caller, as SCM_RIGHTS would.  One socket a file, kept until its
 * release.
 *
 * Return: 0 (kept), or the new fd (GET).  -EINVAL: flags or reserved
 * fields, CLOEXEC without GET, @fd not zero with GET; -EBADF: @fd is no
 * open file; -ENOTSOCK: not a socket; -EPROTONOSUPPORT: neither AF_INET
 * nor AF_INET6 (a socket that could carry files is refused: no reference
 * cycle); -EBUSY: this file keeps one already; -ENOENT (GET): none kept.
 */
struct sluice_sock_keep {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__u32 reserved;
};

#define SLUICE_SOCK_KEEP_GET		0x1u
#define SLUICE_SOCK_KEEP_CLOEXEC	0x2u	/* with GET: O_CLOEXEC on the new fd */

/**
 * struct sluice_handoff - SLUICE_IOC_HANDOFF argument (stack fd)
 * @size:	in: sizeof(struct sluice_handoff) as the caller knows it
 * @flags:	in: 0, or SLUICE_HANDOFF_IPV6
 * @fd:		in: the caller's kernel TCP socket (AF_INET) that takes the
 *		connection: in repair mode (TCP_REPAIR), connected, with the
 *		4-tuple below as its own
 * @protocol:	in: IPPROTO_TCP
 * @reserved0:	must be zero
 * @laddr:	in: the connection's local address, network order
 * @raddr:	in: its remote address, network order
 * @lport:	in: its local port, network order
 * @rport:	in: its remote port, network order
 * @id:		out: the entry's id (SLUICE_IOC_FILTER_DEL removes it)
 * @reserved1:	must be zero
 * @laddr6:	in (SLUICE_HANDOFF_IPV6): the local IPv6 address
 * @raddr6:	in (SLUICE_HANDOFF_IPV6): the remote IPv6 address
 *
 * With SLUICE_HANDOFF_IPV6 (SLUICE_FEATURE_HANDOFF6; @size must reach
 * @raddr6) the connection is IPv6's: @laddr and @raddr must be zero,
 * @laddr6 and @raddr6 neither :: nor IPv4-mapped (-EINVAL), and @fd an
 * AF_INET6 socket whose peer is not IPv4-mapped (-EPROTONOSUPPORT): a
 * v4-mapped peer's connection is IPv4's, handed off without the flag.
 *
 * Live hand-off of a stack's TCP connection to the kernel: the module
 * stops steering the connection's packets to the stack, and the kernel's
 * own receive path gives them to the socket that holds that 4-tuple
 * (@fd).  The entry lives until FILTER_DEL or the stack's end; once the
 * kernel socket is closed it no longer takes the tuple from the stack's
 * other filters.
 *
 * -EINVAL: flags, reserved fields, protocol, a zero address or port, or
 * @fd's tuple is not this one; -EBADF: @fd is no open file; -ENOTSOCK:
 * not a socket; -EPROTONOSUPPORT: not an AF_INET TCP socket; -EPERM: not
 * in repair mode; -ENOTCONN: not connected; -EXDEV: @fd or the caller is
 * not in the stack's network namespace; -ENODEV: the stack has no
 * device; -ENOENT: the stack does not steer this tuple; -EEXIST: already
 * handed off; -ENOSPC: past the stack's filter limit.
 */
struct sluice_handoff {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__u8 protocol;
	__u8 reserved0[3];
	__u32 laddr;
	__u32 raddr;
	__u16 lport;
	__u16 rport;
	__u32 id;
	__u32 reserved1;
	__u8 laddr6[16];
	__u8 raddr6[16];
};

#define SLUICE_HANDOFF_IPV6	0x1u

#define SLUICE_IOC_KRING_SETUP	_IOWR(SLUICE_IOC_MAGIC, 0x04, struct sluice_kring_setup)
#define SLUICE_IOC_KRING_KICK	_IOWR(SLUICE_IOC_MAGIC, 0x05, struct sluice_kring_kick)
#define SLUICE_IOC_FILTER_ADD	_IOWR(SLUICE_IOC_MAGIC, 0x06, struct sluice_filter)
#define SLUICE_IOC_FILTER_DEL	_IOWR(SLUICE_IOC_MAGIC, 0x07, struct sluice_filter)
#define SLUICE_IOC_IFINFO	_IOWR(SLUICE_IOC_MAGIC, 0x08, struct sluice_ifinfo)
#define SLUICE_IOC_NEIGH_RESOLVE _IOWR(SLUICE_IOC_MAGIC, 0x09, struct sluice_neigh_resolve)
#define SLUICE_IOC_MCAST_JOIN	_IOWR(SLUICE_IOC_MAGIC, 0x0a, struct sluice_mcast)
#define SLUICE_IOC_MCAST_LEAVE	_IOWR(SLUICE_IOC_MAGIC, 0x0b, struct sluice_mcast)
#define SLUICE_IOC_SOCK_FD	_IOWR(SLUICE_IOC_MAGIC, 0x0c, struct sluice_sock_fd)
#define SLUICE_IOC_SOCK_WAKE	_IOWR(SLUICE_IOC_MAGIC, 0x0d, struct sluice_sock_wake)
#define SLUICE_IOC_SOCK_INFO	_IOWR(SLUICE_IOC_MAGIC, 0x0e, struct sluice_sock_info)
/*
 * HANDOFF's command keeps the size the struct was first published with
 * (36 bytes, before @laddr6 and @raddr6): the size field says what the
 * caller knows, so a library built before the IPv6 fields and one built
 * after both meet this module.
 */
#define SLUICE_HANDOFF_SIZE_VER0	36
#define SLUICE_IOC_HANDOFF	_IOC(_IOC_READ | _IOC_WRITE, SLUICE_IOC_MAGIC, 0x0f, \
				     SLUICE_HANDOFF_SIZE_VER0)
#define SLUICE_IOC_FILTER_FD	_IOWR(SLUICE_IOC_MAGIC, 0x10, struct sluice_filter_fd)
#define SLUICE_IOC_SOCK_KEEP	_IOWR(SLUICE_IOC_MAGIC, 0x11, struct sluice_sock_keep)
#define SLUICE_IOC_SOCK_PARK	_IOWR(SLUICE_IOC_MAGIC, 0x12, struct sluice_sock_park)
#define SLUICE_IOC_SOCK_REUSE	_IOWR(SLUICE_IOC_MAGIC, 0x13, struct sluice_sock_reuse)

#endif /* _UAPI_SLUICE_H */
