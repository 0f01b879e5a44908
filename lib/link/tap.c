// SPDX-License-Identifier: BSD-2-Clause
/*
 * The TAP link: Ethernet frames through a TUN/TAP device, so the host's
 * own kernel stack is the peer.  Frames are read straight into packet
 * buffers, the IP header landing at SL_HEADROOM.  Several processes of one
 * stack may each open a queue of a multi-queue TAP device; whoever reads a
 * frame runs it through the shared stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <unistd.h>

#include "os/os.h"
#include "link/eth.h"

struct tap_link {
	struct sl_link link;
	struct sl_eth_link eth;
	struct sl_stack *stack;
	int fd;
	uint64_t last_timer_ms;
	/* When a thread other than this process's queue server last read
	 * the queue (sl_link_tap_quiet_ms()): ms of sl_now(). */
	uint64_t app_rx_ms;
	char ifname[IFNAMSIZ];
};

/* Is this thread its process's queue server (sl_link_tap_serving())? */
static __thread bool tap_server;

static int tap_xmit(struct sl_link *l, const void *frame, size_t len)
{
	struct tap_link *t = (struct tap_link *)l;
	ssize_t n = sl_sys_write(t->fd, frame, len);

	return n == (ssize_t)len ? 0 : (n < 0 ? -errno : -EIO);
}

static int tap_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	return sl_eth_tx(s, &((struct tap_link *)l)->eth, idx, nh);
}

static int tap_tx6(struct sl_link *l, struct sl_stack *s, uint32_t idx, const uint8_t *nh)
{
	return sl_eth_tx6(s, &((struct tap_link *)l)->eth, idx, nh);
}

static int tap_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	struct tap_link *t = (struct tap_link *)l;
	const unsigned int lead = SL_HEADROOM - ETH_HLEN_;
	uint64_t now_ms = sl_now(s) / 1000;
	int n = 0;

	if (now_ms - t->last_timer_ms >= 100) {
		t->last_timer_ms = now_ms;
		sl_eth_timer(s, &t->eth);
	}
	if (!tap_server)
		SL_WRITE_ONCE(t->app_rx_ms, now_ms);
	sl_batch_begin(s);
	while (n < budget) {
		uint32_t idx = sl_buf_alloc(s);
		ssize_t len;

		if (idx == SLUICE_IDX_NONE)
			break;
		len = sl_sys_read(t->fd, sl_buf_base(s, idx) + lead, s->buf_size - lead);
		if (len <= 0) {
			sl_buf_free(s, idx);
			break;
		}
		sl_buf(s, idx)->off = lead;
		sl_buf(s, idx)->len = (uint16_t)len;
		sl_eth_input(s, &t->eth, idx);
		n++;
	}
	sl_batch_end(s);
	return n;
}

static int tap_fd(struct sl_link *l)
{
	return ((struct tap_link *)l)->fd;
}

static void tap_close(struct sl_link *l)
{
	struct tap_link *t = (struct tap_link *)l;

	t->stack->link = NULL;
	sl_sys_close(t->fd);
	free(t);
}

static const struct sl_link_ops tap_ops;

/*
 * How many frames each queue of the device holds for us.  The tun driver
 * gives each queue a ring of the device's txqueuelen (TUN_READQ_SIZE, 500,
 * unless set) and drops what the kernel sends to a full one (tun_net_xmit():
 * the device's tx_dropped).  The kernel's own receive path queues frames in
 * softirq context, where a reader of ours must first be scheduled: 500
 * frames are 6 ms at 1 Gbit/s, and a kernel sender to a stack whose thread
 * waited that long for a CPU lost segments with no loss on the path
 * (lib/link/README.md, "The TAP queue's length").  SLUICE_TAP_QLEN sets
 * it; 0 leaves the device as it is.  Only ever raised.
 */
#define TAP_QLEN	4096
#define TAP_QLEN_MAX	65536

static unsigned int tap_qlen_want(void)
{
	const char *v = getenv("SLUICE_TAP_QLEN");
	unsigned long n;
	char *end;

	if (!v || !*v)
		return TAP_QLEN;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > TAP_QLEN_MAX)
		return TAP_QLEN;
	return (unsigned int)n;
}

/*
 * The device's index in this namespace (0 if unknown); its queues raised
 * to want frames if they hold fewer.  *short_q: they still do (the raise
 * needs CAP_NET_ADMIN over the device's namespace).
 */
static uint32_t tap_dev_setup(const char *name, unsigned int want, bool *short_q)
{
	int sd = sl_sys_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	uint32_t ret = 0;

	*short_q = false;
	if (sd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strnlen(name, IFNAMSIZ - 1));
	if (!sl_sys_ioctl(sd, SIOCGIFINDEX, &ifr))
		ret = (uint32_t)ifr.ifr_ifindex;
	if (want && !sl_sys_ioctl(sd, SIOCGIFTXQLEN, &ifr) && ifr.ifr_qlen >= 0 &&
	    (unsigned int)ifr.ifr_qlen < want) {
		ifr.ifr_qlen = (int)want;
		*short_q = sl_sys_ioctl(sd, SIOCSIFTXQLEN, &ifr) != 0;
	}
	sl_sys_close(sd);
	return ret;
}

const char *sl_link_tap_name(struct sl_link *l)
{
	return l && l->ops == &tap_ops ? ((struct tap_link *)l)->ifname : NULL;
}

bool sl_link_tap_of(struct sl_stack *s, char *name, size_t len)
{
	char n[sizeof(s->lib->tap_name)];

	memcpy(n, s->lib->tap_name, sizeof(n));
	n[sizeof(n) - 1] = '\0';
	if (!n[0] || s->ifindex || len <= strlen(n))
		return false;
	memcpy(name, n, strlen(n) + 1);
	return true;
}

void sl_link_tap_serving(void)
{
	tap_server = true;
}

int64_t sl_link_tap_quiet_ms(struct sl_link *l, struct sl_stack *s)
{
	uint64_t now_ms = sl_now(s) / 1000, last;

	if (!l || l->ops != &tap_ops)
		return -1;
	/* A read stamped after our clock reading is a read just now. */
	last = SL_READ_ONCE(((struct tap_link *)l)->app_rx_ms);
	return last >= now_ms ? 0 : (int64_t)(now_ms - last);
}

int sluice_stack_set_tap(struct sluice_stack *st, const char *ifname)
{
	struct sl_stack *s = (struct sl_stack *)st;
	int ret;

	if (!ifname || !*ifname || strlen(ifname) >= sizeof(s->lib->tap_name))
		return -EINVAL;
	if (s->ifindex)
		return -EBUSY;
	ret = sl_lock(s);
	if (ret)
		return ret;
	if (!s->lib->tap_name[0])
		memcpy(s->lib->tap_name, ifname, strlen(ifname) + 1);
	sl_unlock(s);
	return 0;
}

static const struct sl_link_ops tap_ops = {
	.name = "tap",
	.frames = true,
	.tx = tap_tx,
	.tx6 = tap_tx6,
	.rx = tap_rx,
	.fd = tap_fd,
	.close = tap_close,
};

int sluice_link_tap(struct sluice_stack *st, const char *ifname)
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct tap_link *t;
	struct ifreq ifr;
	bool short_q;
	int fd, ret;
	uint32_t ifindex;

	if (s->link)
		return -EBUSY;
	if (!ifname || strlen(ifname) >= IFNAMSIZ)
		return -EINVAL;
	/* Above the program's numbers (os.h). */
	fd = sl_sys_fd_high(sl_sys_openat(AT_FDCWD, "/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC, 0));
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
	/* A multi-queue device lets each process of the stack have a queue. */
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_MULTI_QUEUE;
	if (sl_sys_ioctl(fd, TUNSETIFF, &ifr)) {
		int first = errno;

		ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
		if (sl_sys_ioctl(fd, TUNSETIFF, &ifr)) {
			/* A multi-queue device refused to its owner's
			 * stranger (EPERM: tun_not_capable()) answers the
			 * single-queue retry with EINVAL (the flags do not
			 * match it): the first answer is the reason. */
			ret = errno == EINVAL && first != EINVAL ? -first : -errno;
			sl_sys_close(fd);
			return ret;
		}
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		sl_sys_close(fd);
		return -ENOMEM;
	}
	t->link.ops = &tap_ops;
	t->link.mtu = sl_mtu(s);
	t->eth.link = &t->link;
	t->eth.xmit = tap_xmit;
	t->stack = s;
	t->fd = fd;
	memcpy(t->ifname, ifr.ifr_name, sizeof(t->ifname));
	ifindex = tap_dev_setup(t->ifname, tap_qlen_want(), &short_q);
	ret = sl_lock(s);
	if (ret) {
		sl_sys_close(fd);
		free(t);
		return ret;
	}
	if (!memcmp(s->lib->mac, "\0\0\0\0\0\0", 6)) {
		/* A random locally administered unicast address. */
		if (getrandom(s->lib->mac, 6, 0) != 6)
			memcpy(s->lib->mac, &s->lib->tcp_isn_secret[0], 6);
		s->lib->mac[0] = (s->lib->mac[0] & 0xfe) | 0x02;
	}
	/* For the processes that attach by name (sl_link_tap_of()); the
	 * device's index scopes the stack's link-local addresses. */
	memcpy(s->lib->tap_name, t->ifname, sizeof(s->lib->tap_name));
	s->lib->tap_ifindex = ifindex;
	if (short_q)
		sl_count(s, SL_C_tap_qlen_short);
	sl_unlock(s);
	s->link = &t->link;
	return 0;
}
