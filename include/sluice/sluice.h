/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sluice native API.  Every function that acts returns 0 (or a
 * non-negative value where documented) on success and -errno on failure;
 * none of them sets errno.
 */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include <stddef.h>
#include <stdint.h>

#include <uapi/sluice.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLUICE_LIB_VERSION "0.1.0"

/* What the loaded kernel module says about itself. */
struct sluice_module_info {
	unsigned int abi_version;
	uint64_t features;
	char module_version[SLUICE_VERSION_STRLEN];
};

/*
 * Open the Sluice device, close-on-exec.  @path NULL means
 * SLUICE_DEVICE_PATH.  Returns the fd, or -ENOENT when the module is not
 * loaded (no device node), or another -errno from open(2).
 */
int sluice_dev_open(const char *path);

/*
 * Ask the module at @path (NULL: SLUICE_DEVICE_PATH) for its version and
 * features.  Returns 0; -ENOENT when the module is not loaded; -ENOTTY when
 * @path is not a Sluice device; -EPROTONOSUPPORT when the module speaks
 * another ABI than this library (the info is still filled in).
 */
int sluice_module_query(const char *path, struct sluice_module_info *info);

/* ---- Stacks ---------------------------------------------------------- */

struct sluice_stack;
struct sockaddr_in;

/* Sizes and addresses of a new stack; zero fields take the defaults. */
struct sluice_stack_config {
	/* default 262144 in /dev/shm, whose memory is committed as slots
	 * are first used; 8192 in the module, which pins the region */
	uint32_t max_sockets;
	uint32_t n_bufs;	/* packet buffers, default 4096 */
	/* bytes each, power of two, default 2048; a stack on a device
	 * whose MTU needs more (with the 64 bytes of headroom) gets the
	 * power of two that holds it, up to 8192 (IPoIB's 2044: 4096) */
	uint32_t buf_size;
	uint32_t mtu;		/* default 1500 */
	uint32_t ip_addr;	/* network order; 0: none yet */
	uint32_t ip_mask;	/* network order */
	uint32_t ip_gateway;	/* network order; 0: on-link only */
	uint8_t mac[6];		/* Ethernet-style links */
	/*
	 * A stack on a network device (needs the module; see
	 * sluice_link_kring()): ifindex, or if that is 0 the device named
	 * ifname, in the caller's network namespace; both empty for none.
	 * Such a stack shares the device's IPv4 address: ip_addr, ip_mask
	 * and mtu left 0 are taken from the device (SLUICE_IOC_IFINFO).
	 */
	uint32_t ifindex;
	char ifname[16];
};

/*
 * Create a stack named @name (1..31 characters of [A-Za-z0-9_.-]): without
 * the kernel module its region is /dev/shm/sluice-NAME.  -EEXIST if a stack
 * of that name exists, -EINVAL for a bad name or configuration, -ENOMEM.
 */
int sluice_stack_create(const char *name, const struct sluice_stack_config *cfg,
			struct sluice_stack **out);
/* Attach to an existing stack by name: -ENOENT, -EPROTO for a region that
 * is not a valid Sluice stack of this ABI, -EPIPE for a broken stack. */
int sluice_stack_attach(const char *name, struct sluice_stack **out);
/* Detach this process; the stack lives on while others use it. */
void sluice_stack_close(struct sluice_stack *st);
/* Remove a stack's name; mapped processes keep it until they detach. */
int sluice_stack_destroy(const char *name);

/* Use another clock (microseconds), for tests: NULL restores the real one. */
void sluice_stack_set_clock(struct sluice_stack *st, uint64_t (*clock)(void *), void *arg);
/*
 * The stack's IPv6 address (16 bytes, network order) and prefix length
 * (1-128), besides ::1: answered for on its link (Neighbour Discovery,
 * ICMPv6 echo, closed ports; lib/proto/README.md "IPv6").  0 or -EINVAL
 * (a group, ::, ::1, a v4-mapped address, a bad length).
 */
int sluice_stack_set_addr6(struct sluice_stack *st, const void *addr, unsigned int plen);
/* How long blocking calls spin before they sleep, in microseconds. */
void sluice_stack_set_spin(struct sluice_stack *st, unsigned int spin_us);
/* Run the stack once: receive from the link, run due timers.  Returns the
 * number of frames and timers handled, or -EPIPE for a broken stack. */
int sluice_stack_poll(struct sluice_stack *st);
/* Read counter @name (see `sluice dump`); -ENOENT for an unknown name. */
int sluice_stack_counter(struct sluice_stack *st, const char *name, uint64_t *value);

/* ---- Links ----------------------------------------------------------- */

/* Seeded fault injection on a loop link, per frame, in parts per million. */
struct sluice_loop_faults {
	uint64_t seed;
	uint32_t loss_ppm;
	uint32_t dup_ppm;
	uint32_t reorder_ppm;	/* hold a frame back behind the next one */
	uint32_t corrupt_ppm;	/* flip one random bit */
	uint32_t delay_us;	/* fixed one-way delay */
};

/* Join two stacks by an in-memory wire; faults may be NULL. */
int sluice_link_loop(struct sluice_stack *a, struct sluice_stack *b,
		     const struct sluice_loop_faults *faults);
/* What a loop link did to the frames it carried, both directions. */
struct sluice_loop_stats {
	uint64_t frames;	/* frames handed to the wire */
	uint64_t lost;
	uint64_t duplicated;
	uint64_t reordered;	/* held back behind a later frame */
	uint64_t corrupted;	/* one bit flipped */
	uint64_t dropped_full;	/* wire queue full (LOOP_DEPTH_MAX frames) */
	uint64_t delivered;	/* frames given to the receiving stack */
};
/* The counters of the loop link @st runs on; -ENODEV if it has none. */
int sluice_link_loop_stats(struct sluice_stack *st, struct sluice_loop_stats *out);
/* Open TAP device @ifname (created if absent) as this process's link. */
int sluice_link_tap(struct sluice_stack *st, const char *ifname);
/*
 * Record @ifname as @st's TAP device without opening it, as the first
 * sluice_link_tap() does: processes that attach later by name open a
 * queue of their own on it.  A name already recorded stays.  -EBUSY on a
 * stack made on a device.
 */
int sluice_stack_set_tap(struct sluice_stack *st, const char *ifname);
/*
 * Run a stack made on a device (sluice_stack_config.ifname) through the
 * module's rings on that device, as this process's link: the first
 * process makes the rings, later ones map the same.  Every process of the
 * stack calls it.  From then on every local port a socket of the stack
 * takes (bind, listen, connect, a UDP send) is reserved in the kernel and
 * steered to the stack by a module filter: the kernel's own rules apply
 * (-EADDRINUSE, -EACCES), and ephemeral ports are the kernel's pick.
 * -EOPNOTSUPP without a module that has rings, -ENODEV for a stack on no
 * device (or one that has gone), -EBUSY if this process has a link.
 */
int sluice_link_kring(struct sluice_stack *st);

/*
 * The verbs link (rdma-core), plain UD mode: IPoIB-framed IPv4 over a UD
 * QP of this process, as Soft-RoCE (rxe) can run it.  Zero fields take the
 * defaults.  Neighbours are resolved by IPoIB ARP (RFC 4391) over the
 * P_Key's broadcast group when the device lets the QP attach to it, and
 * can always be added by hand (sluice_verbs_neigh_add()).  The stack's MTU
 * is lowered to the UD MTU (IB MTU - 4).  Needs a stack whose buffers
 * hold SL_HEADROOM + the UD MTU.
 */
struct sluice_verbs_config {
	const char *device;	/* ibv device name; NULL: the first one */
	uint8_t port;		/* default 1 */
	uint8_t flags;		/* SLUICE_VERBS_* */
	uint16_t pkey_index;	/* default 0 */
	uint32_t gid_index;	/* default 0 */
	uint32_t qkey;		/* default 0x0B1B */
	uint32_t rq_size;	/* receive WRs kept posted, default 512 */
	uint32_t sq_size;	/* send queue depth, default 64 */
};

/* sluice_verbs_config.flags: no broadcast group, no ARP (static only). */
#define SLUICE_VERBS_NO_MCAST	0x1

#define SLUICE_IPOIB_HWLEN	20

/* What a verbs link found (sluice_verbs_info()). */
struct sluice_verbs_info {
	uint8_t hwaddr[SLUICE_IPOIB_HWLEN];	/* flags+QPN, GID: our address */
	uint32_t qpn;
	uint32_t ib_mtu;	/* bytes, the port's active MTU */
	uint32_t ud_mtu;	/* ib_mtu - 4: the stack's MTU now */
	int mcast;		/* 1: attached to the broadcast group (ARP works) */
	int mcast_err;		/* else: -errno of the attach, or 0 if not tried */
	int last_wc_status;	/* the last failed completion's ibv_wc_status */
	uint64_t tx_post_err;	/* ibv_post_send refused */
	uint64_t tx_wc_err;	/* send completions in error */
	uint64_t tx_timeout;	/* sends that did not complete in time */
	uint64_t rx_wc_err;	/* receive completions in error */
	int tx_last_err;	/* the last -errno a send returned to the stack */
	unsigned int tx_last_err_len;	/* and that packet's length */
	uint64_t rx_post_err;	/* ibv_post_recv refused */
	uint32_t rx_posted;	/* receive WRs posted now */
	uint64_t tx_posts;	/* post_send calls (each carries a batch) */
	uint64_t tx_wrs;	/* send WRs they carried */
	uint64_t rx_posts;	/* post_recv calls */
	int enhanced;		/* 1: source-QPN QP of an IPoIB interface */
	uint32_t flows;		/* flow rules installed now (enhanced) */
	uint64_t flow_err;	/* flow rules the device refused (enhanced) */
	int flow_last_err;	/* the last refusal's -errno (-EPERM: CAP_NET_RAW) */
};

int sluice_link_verbs(struct sluice_stack *st, const struct sluice_verbs_config *cfg);

/*
 * The link for a stack made on a device (sluice_stack_config.ifname), as
 * `sluice run --interface` picks it: on an IPoIB interface whose device
 * offers enhanced IPoIB (mlx5: source-QPN UD QPs, flow steering; the
 * module says, SLUICE_IB_*), the verbs link in enhanced mode on top of
 * the module's rings; otherwise, or if any step of it fails, the kring
 * link alone (sluice_link_kring()).  0 with @rep->link naming the link
 * in use and, when it is not the verbs one, @rep->why saying what was
 * missing (CAP_NET_RAW, a non-mlx5 device, no flow steering, ...);
 * -errno only if no link could be made (the kring link's error).
 */
struct sluice_link_report {
	char link[16];		/* "verbs-enhanced" or "kring" */
	int verbs_err;		/* why not enhanced verbs: -errno, or 0 */
	int kring_err;		/* the kring link's -errno, or 0 */
	int ipoib;		/* 1: the module says the interface is IPoIB */
	char why[160];		/* verbs_err in words */
};
int sluice_link_device(struct sluice_stack *st, struct sluice_link_report *rep);
int sluice_verbs_info(struct sluice_stack *st, struct sluice_verbs_info *info);
/* A static neighbour: @ip (network order) is at @hwaddr (flags+QPN, GID). */
int sluice_verbs_neigh_add(struct sluice_stack *st, uint32_t ip,
			   const uint8_t hwaddr[SLUICE_IPOIB_HWLEN]);

/* ---- Sockets --------------------------------------------------------- */

/* Socket types for sluice_socket(); flags may be or'ed in. */
#define SLUICE_SOCK_STREAM	1
#define SLUICE_SOCK_DGRAM	2
#define SLUICE_SOCK_NONBLOCK	0x800

/*
 * Socket calls mirror the BSD ones: @sd is what sluice_socket() returned;
 * results are >= 0 or -errno.
 */
int sluice_socket(struct sluice_stack *st, int type);
int sluice_bind(struct sluice_stack *st, int sd, const struct sockaddr_in *addr);
int sluice_listen(struct sluice_stack *st, int sd, int backlog);
int sluice_accept(struct sluice_stack *st, int sd, struct sockaddr_in *peer);
int sluice_connect(struct sluice_stack *st, int sd, const struct sockaddr_in *addr);
long sluice_send(struct sluice_stack *st, int sd, const void *buf, size_t len, int flags);
long sluice_recv(struct sluice_stack *st, int sd, void *buf, size_t len, int flags);
long sluice_sendto(struct sluice_stack *st, int sd, const void *buf, size_t len, int flags,
		   const struct sockaddr_in *to);
long sluice_recvfrom(struct sluice_stack *st, int sd, void *buf, size_t len, int flags,
		     struct sockaddr_in *from);
int sluice_shutdown(struct sluice_stack *st, int sd, int how);
int sluice_close(struct sluice_stack *st, int sd);
/*
 * Live hand-off: the established TCP connection sd becomes a kernel
 * socket (TCP repair; needs CAP_NET_ADMIN and a stack on a device the
 * module steers).  Returns the new kernel socket's fd (close-on-exec,
 * blocking), with the unread and unacknowledged bytes, windows, options
 * and timestamps of the connection; sd is left ended in the stack, to be
 * closed (silently).  -errno and sd unchanged and working otherwise:
 * -EOPNOTSUPP (not ESTABLISHED or CLOSE_WAIT, not a module stack, both ends in the
 * stack), -EPERM (no CAP_NET_ADMIN), -EBUSY (buffers lent), ...
 */
int sluice_handoff(struct sluice_stack *st, int sd);
int sluice_getsockname(struct sluice_stack *st, int sd, struct sockaddr_in *addr);
int sluice_getpeername(struct sluice_stack *st, int sd, struct sockaddr_in *addr);
int sluice_setsockopt(struct sluice_stack *st, int sd, int level, int name,
		      const void *val, unsigned int len);
int sluice_getsockopt(struct sluice_stack *st, int sd, int level, int name,
		      void *val, unsigned int *len);

struct sluice_pollfd {
	int sd;
	short events;	/* POLLIN, POLLOUT, ... */
	short revents;
};
/* In events of a lone pollfd: wait as an exclusive waiter (accept()): of
 * the exclusive waiters on a socket, a change wakes only the one waiting
 * longest, which passes it on if it does not take what woke it. */
#define SLUICE_POLLEXCL	0x4000
/* Wait until a socket is ready: spin for the stack's spin time, then sleep;
 * timeout_ms < 0 waits for ever.  Returns the number ready, 0 on timeout. */
int sluice_poll(struct sluice_stack *st, struct sluice_pollfd *fds, unsigned int n,
		int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_SLUICE_H */
