/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The stack's private core: the per-process handle on a shared region,
 * offset helpers, packet buffers, counters, the lock, links and sockets.
 *
 * Everything in the region is reached through an offset or an index from
 * r (the mapped header); nothing stored in the region is a pointer, so a
 * parent and a forked child, or unrelated processes, may map it anywhere.
 */
#ifndef SLUICE_STACK_H
#define SLUICE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sluice/sluice.h>

#include "wire.h"

struct sl_stack;
struct sl_sock;

/* Counters in sluice_region.counters; X(name, description). */
#define SL_COUNTERS(X)							\
	X(ip_rx, "IPv4 packets received")				\
	X(ip_tx, "IPv4 packets sent")					\
	X(ip_rx_bad_hdr, "dropped: bad IPv4 header or length")		\
	X(ip_rx_bad_csum, "dropped: bad IPv4 header checksum")		\
	X(ip_rx_not_ours, "dropped: not addressed to this stack")	\
	X(ip_rx_martian, "dropped: our own source address from a link")	\
	X(ip_rx_frag, "dropped: IPv4 fragments (no reassembly)")	\
	X(ip_rx_options, "IPv4 packets with options (skipped)")		\
	X(ip_rx_proto, "dropped: unknown protocol")			\
	X(ip_tx_noroute, "not sent: no route or link")			\
	X(ip_tx_nobuf, "not sent: no packet buffer")			\
	X(loopback, "packets delivered within the stack")		\
	X(loopback_left, "unlocks that left loopback packets for later")	\
	X(icmp_rx, "ICMP messages received")				\
	X(icmp_rx_bad, "dropped: bad ICMP message")			\
	X(icmp_echo_replied, "ICMP echo requests answered")		\
	X(icmp_unreach_rx, "ICMP destination unreachable received")	\
	X(icmp_unreach_tx, "ICMP destination unreachable sent")		\
	X(udp_rx, "UDP datagrams received")				\
	X(udp_tx, "UDP datagrams sent")					\
	X(udp_rx_bad, "dropped: bad UDP length or checksum")		\
	X(udp_rx_noport, "dropped: UDP to a closed port")		\
	X(udp_rx_full, "dropped: UDP receive queue full")		\
	X(tcp_rx, "TCP segments received")				\
	X(tcp_tx, "TCP segments sent")					\
	X(tcp_rx_bad, "dropped: bad TCP header or checksum")		\
	X(tcp_rx_noport, "TCP segments to no socket (RST sent)")	\
	X(tcp_retransmit, "TCP segments retransmitted")			\
	X(tcp_rto, "TCP retransmission timeouts")			\
	X(tcp_fast_retransmit, "TCP fast retransmits")			\
	X(tcp_challenge_ack, "TCP challenge ACKs sent (RFC 5961)")	\
	X(tcp_syn_dropped, "SYNs dropped: SYN queue or backlog full")	\
	X(tcp_active_open, "TCP active opens")				\
	X(tcp_passive_open, "TCP passive opens")			\
	X(tcp_reset_rx, "TCP resets received")				\
	X(tcp_reset_tx, "TCP resets sent")				\
	X(tcp_ooo, "TCP segments queued out of order")			\
	X(tcp_rx_pressure, "TCP payload dropped: pool or socket buffers full") \
	X(arp_rx, "ARP packets received")				\
	X(arp_tx, "ARP packets sent")					\
	X(arp_rx_bad, "dropped: bad ARP packet")			\
	X(arp_hold_dropped, "packets dropped waiting for ARP")	\
	X(eth_rx_bad, "dropped: bad or foreign Ethernet frame")		\
	X(link_rx, "frames received from the link")			\
	X(link_tx, "frames sent on the link")				\
	X(link_tx_err, "frames the link failed to send")		\
	X(nobuf, "packet buffer allocations that failed")		\
	X(nosock, "socket allocations that failed")			\
	X(lock_broken, "lock found held by a dead process")		\
	X(defer_run, "deferred socket work run by the lock holder")	\
	X(kring_rx_bad, "kring rx descriptors refused (bad index, length or buffer)") \
	X(kring_tx_full, "kring tx ring found full (kicked early)")	\
	X(kring_kick, "kring tx kicks (SLUICE_IOC_KRING_KICK)")		\
	X(kring_fill_low, "kring fill ring left short: pool too low")	\
	X(kring_dev_change, "kring device changes seen (dev_seq)")	\
	X(filter_add, "filters added (ports reserved in the kernel)")	\
	X(filter_del, "filters removed")				\
	X(filter_err, "filter ioctls that failed")				\
	X(sockfd_wake, "SLUICE_IOC_SOCK_WAKE calls for armed socket fds")	\
	X(sockfd_released, "sockets closed after their last socket fd went")

enum sl_counter {
#define SL_COUNTER_ENUM(n, d) SL_C_##n,
	SL_COUNTERS(SL_COUNTER_ENUM)
#undef SL_COUNTER_ENUM
	SL_C_COUNT
};

_Static_assert(SL_C_COUNT <= SLUICE_COUNTERS_MAX, "counters fit sluice_counters");

extern const char *const sl_counter_names[SL_C_COUNT];
extern const char *const sl_counter_desc[SL_C_COUNT];

/* A link: how frames reach the wire.  tx borrows the buffer; it never
 * keeps it past return (TCP keeps sent data for retransmission). */
struct sl_link;
struct sl_link_ops {
	const char *name;
	/* Send the IPv4 packet in buffer idx to next hop nh (network order). */
	int (*tx)(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh);
	/* Receive up to budget frames, feeding each to the stack; returns count. */
	int (*rx)(struct sl_link *l, struct sl_stack *s, int budget);
	/* An fd that polls readable when frames wait, or -1. */
	int (*fd)(struct sl_link *l);
	/* Hand what tx queued to the wire (one system call for a batch).
	 * sl_unlock() calls it, lock held, when tx_pending is set. */
	void (*flush)(struct sl_link *l, struct sl_stack *s);
	void (*close)(struct sl_link *l);
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
	struct sluice_region *r;
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
	bool wake_poll;			/* wake_pending: pollers too (api.c) */
	struct sl_link *link;
	uint64_t (*clock)(void *arg);	/* now, microseconds */
	void *clock_arg;
	unsigned int spin_us;
	unsigned int poll_calls;	/* sluice_stack_poll() calls, for pacing */
	uint64_t batch_now_us;		/* sl_batch_begin(): the time of a batch */
	struct sluice_counters *ctr;	/* our counter block in the region */
	pid_t ctr_pid;			/* the process that block was claimed for */
	/* Stack-local loopback queue (buffer indices), drained under the lock. */
	uint32_t lo_head, lo_tail;
	char name[SLUICE_NAME_MAX];
	/*
	 * Socket fds (lock.c): sockets with a socket fd whose readiness
	 * changed under this holder (sl_sock_wake()), published at unlock;
	 * kp_n == SL_KP_SCAN says more changed: look at every slot.
	 */
	unsigned int kp_n;
	uint32_t kp_note[SL_KP_NOTES];
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
/* Given to the module on the kring fill ring (link_kring.c). */
#define SL_BUF_ON_FILL	0x2000

/* Headroom left in front of every packet for link headers (Ethernet 14,
 * IPoIB 4 + 40 GRH room), so headers are prepended in place. */
#define SL_HEADROOM	64

/* Offset helpers. */
static inline void *sl_at(const struct sl_stack *s, uint64_t off)
{
	return s->base + off;
}

static inline struct sluice_buf *sl_buf(const struct sl_stack *s, uint32_t idx)
{
	return (struct sluice_buf *)sl_at(s, s->r->bufmeta_off) + idx;
}

/* Start of buffer idx's data area (buf_size bytes). */
static inline uint8_t *sl_buf_base(const struct sl_stack *s, uint32_t idx)
{
	return (uint8_t *)sl_at(s, s->r->bufdata_off) + (uint64_t)idx * s->r->buf_size;
}

/* Start of the packet data in buffer idx. */
static inline uint8_t *sl_buf_data(const struct sl_stack *s, uint32_t idx)
{
	return sl_buf_base(s, idx) + sl_buf(s, idx)->off;
}

/* Lock held: the block is this process's (see sl_counters_claim()). */
static inline void sl_count(struct sl_stack *s, enum sl_counter c)
{
	s->ctr->c[c]++;
}

/* Can shared futexes live in this region's pages? (lock.c)  A probe,
 * made once per mapping: see sl_stack.futex_ok. */
bool sl_futex_usable(struct sl_stack *s);

/* Loopback packets one unlock delivers at most (see sl_unlock()). */
#define SL_LO_BUDGET	4096

/* Point s->ctr at a counter block of this process's own (lock held). */
void sl_counters_claim(struct sl_stack *s);
/* A stack-wide counter: the sum over every process's block. */
uint64_t sl_counter_sum(const struct sl_stack *s, enum sl_counter c);

static inline uint64_t sl_now(struct sl_stack *s)
{
	return s->batch_now_us ? s->batch_now_us : s->clock(s->clock_arg);
}

/* Packets handled in one batch (a loopback drain, a link read) share one
 * clock reading: it costs more than the rest of a small packet's input. */
static inline void sl_batch_begin(struct sl_stack *s)
{
	s->batch_now_us = 0;
	s->batch_now_us = s->clock(s->clock_arg);
}

static inline void sl_batch_end(struct sl_stack *s)
{
	s->batch_now_us = 0;
}

/* buf.c: the buffer pool; callers hold the lock. */
uint32_t sl_buf_alloc(struct sl_stack *s);	/* SLUICE_IDX_NONE when empty */
void sl_buf_free(struct sl_stack *s, uint32_t idx);
void sl_buf_free_chain(struct sl_stack *s, uint32_t idx);

/* lock.c */
int sl_lock(struct sl_stack *s);		/* 0, or -EPIPE if the stack is broken */
bool sl_trylock(struct sl_stack *s);
void sl_unlock(struct sl_stack *s);
/*
 * Queue SL_WORK_* bits for socket idx.  If the lock is free, take it and
 * run the work now: returns true, and the caller holds the lock and must
 * sl_unlock().  Otherwise the holder runs it before unlocking: false.
 */
bool sl_lock_or_defer(struct sl_stack *s, uint32_t sock_idx, uint32_t work);
pid_t sl_self_pid(void);
/* Gone, or a zombie: it will never run again (lock.c). */
bool sl_pid_dead(pid_t pid);
/* The helper that finishes orphaned connections (helper.c). */
uint32_t sl_orphans(struct sl_stack *s);
void sl_helper_ensure(struct sl_stack *s);
/* The TAP device of a TAP link, or NULL for another link (link_tap.c). */
const char *sl_link_tap_name(struct sl_link *l);
/* A holder pid read while the lock was held: did it die holding it? */
bool sl_lock_holder_dead(struct sl_stack *s, pid_t seen);
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
/* Fill an IPv4 header at the front of buffer idx, whose data already holds
 * the transport header and payload at off + 20. */
void sl_ip_build(struct sl_stack *s, uint32_t idx, uint8_t proto, uint32_t saddr,
		 uint32_t daddr, uint16_t payload_len);
bool sl_ip_is_local(const struct sl_stack *s, uint32_t addr);

/* icmp.c */
void sl_icmp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen);
void sl_icmp_send_unreach(struct sl_stack *s, uint32_t orig_idx, uint8_t code);

/* udp.c */
void sl_udp_input(struct sl_stack *s, uint32_t idx, struct sl_ip *ip, unsigned int hlen);
/* An ICMP error quoted this UDP header; err is a positive errno.  (TCP's
 * input and ICMP entry points are in tcp.h.) */
void sl_udp_icmp_error(struct sl_stack *s, const struct sl_ip *quoted, int err);

/* filter.c: module filters for the ports of a kring stack (lock held).
 * Take: so is about to hold (laddr, *lport); *lport 0 asks the kernel for
 * an ephemeral port.  0 or -errno (-EADDRINUSE, -EACCES, ...).
 * Release: so no longer holds its port (unhashed for good). */
int sl_filter_take(struct sl_stack *s, struct sl_sock *so, uint32_t laddr, uint16_t *lport);
void sl_filter_release(struct sl_stack *s, struct sl_sock *so);
/* Tests stand in for the module's filter ioctls here (NULL: ioctl(2)). */
extern int (*sl_filter_ioctl)(int fd, unsigned long req, void *arg);

/* region.c */
int sl_region_create(struct sl_stack *s, const char *name, const struct sluice_stack_config *cfg);
int sl_region_attach(struct sl_stack *s, const char *name);
int sl_region_destroy(const char *name);
int sl_region_path(const char *name, char *buf, size_t len);
void sl_region_detach(struct sl_stack *s);

#endif /* SLUICE_STACK_H */
