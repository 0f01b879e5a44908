// SPDX-License-Identifier: BSD-2-Clause
/*
 * Socket fds (uapi "Socket fds"), user space's side: the readiness a
 * socket publishes for the module's poll of its socket fd, the one
 * SOCK_WAKE after an unlock for every armed poller, and sockets whose last
 * socket fd went (the module marks them released; the next holder closes
 * them as close() would).
 */
#include <sys/epoll.h>

#include "os/os.h"
#include "proto/proto.h"

int (*sl_sockfd_ioctl)(int fd, unsigned long req, void *arg);

/*
 * The slots whose pollers were armed, for one SOCK_WAKE after the unlock.
 * Per thread, not in the stack handle: another thread of this process may
 * take the lock, and write the handle, as soon as we let go.  Initial-exec
 * TLS: no __tls_get_addr call on the unlock path.
 */
__thread struct sl_kp_wakes sl_kp_w __attribute__((tls_model("initial-exec")));

/* One SOCK_WAKE for the n slots at idx. */
static void kp_wake(struct sl_stack *s, const uint32_t *idx, unsigned int n)
{
	struct sluice_sock_wake w = {
		.size = sizeof(w), .n = n, .idx_ptr = (uintptr_t)idx,
	};

	if (sl_sockfd_ioctl)
		sl_sockfd_ioctl(s->region_fd, SLUICE_IOC_SOCK_WAKE, &w);
	else
		sl_sys_ioctl(s->region_fd, SLUICE_IOC_SOCK_WAKE, &w);
}

void sl_kp_publish(struct sl_stack *s, struct sl_sock *so)
{
	uint32_t ev, old = so->kp.events;
	/* New data; on a listener, a connection queued (it is woken then). */
	uint32_t rx = so->type == SL_SOCK_TCP && so->state == SL_TCP_LISTEN ?
		      so->wake_seq : (uint32_t)so->rx_bytes;

	if (so->type == SL_SOCK_FREE) {
		ev = SL_EV_ERR | SL_EV_HUP;
	} else {
		ev = sl_sock_events(s, so);
		if (ev & SL_EV_IN)
			ev |= EPOLLRDNORM;
		if (ev & SL_EV_OUT)
			ev |= EPOLLWRNORM;
	}
	/*
	 * Events, full barrier, then armed: pairs with the module's poll,
	 * which sets armed, full barrier, reads events.  Either it reads
	 * these events or we see armed and wake it.  armed is read first and
	 * exchanged only when set, so nobody polling costs no store.
	 */
	SL_WRITE_ONCE(so->kp.events, ev);
	/*
	 * A poller is woken for what it could not have seen: bits that came
	 * up, or new data (an edge for EPOLLET, as a kernel socket's
	 * data_ready).  Bits that went down (data read, send space used) or
	 * an ACK that changed nothing visible wake nobody, and leave armed
	 * set: the poller's view is still right.
	 */
	if (!(ev & ~old) && rx == so->kp_rx_mark)
		return;
	so->kp_rx_mark = rx;
	sl_smp_mb();
	if (!SL_READ_ONCE(so->kp.armed) || !sl_xchg_relaxed(&so->kp.armed, 0))
		return;
	/* Rare: so many at once, or another stack's left (a thread holding
	 * two stacks): woken now, under the lock. */
	if (sl_kp_w.n == SL_KP_WAKES || (sl_kp_w.n && sl_kp_w.s != s)) {
		kp_wake(sl_kp_w.s, sl_kp_w.idx, sl_kp_w.n);
		sl_kp_w.n = 0;
	}
	if (!sl_kp_w.n)
		sl_count(s, SL_C_sockfd_wake);
	sl_kp_w.s = s;
	sl_kp_w.idx[sl_kp_w.n++] = so->idx;
}

void sl_kp_publish_noted(struct sl_stack *s)
{
	/* Our checked copy: the region's may be anything (a scan of 2^32). */
	uint32_t max = s->max_sockets;

	if (s->kp_n == SL_KP_SCAN) {
		for (uint32_t i = 0; i < sl_sock_top(s); i++) {
			struct sl_sock *so = sl_sock(s, i);

			if (SL_READ_ONCE(so->kp.kstate) != SLUICE_KSOCK_NONE)
				sl_kp_publish(s, so);
		}
	} else {
		for (unsigned int i = 0; i < s->kp_n; i++)
			if (s->kp_note[i] < max)
				sl_kp_publish(s, sl_sock(s, s->kp_note[i]));
	}
	s->kp_n = 0;
}

void sl_kp_wake_flush(void)
{
	kp_wake(sl_kp_w.s, sl_kp_w.idx, sl_kp_w.n);
	sl_kp_w.n = 0;
}

/* Close a released socket as close() would.  Lock held. */
static bool ksock_close(struct sl_stack *s, struct sl_sock *so)
{
	if (so->type == SL_SOCK_FREE || (so->flags & SL_SF_ORPHAN) ||
	    SL_READ_ONCE(so->kp.kstate) != SLUICE_KSOCK_RELEASED)
		return false;
	sl_count(s, SL_C_sockfd_released);
	sl_sock_busy(s, so);
	if (so->type == SL_SOCK_TCP)
		sl_tcp_close(s, so, sl_now(s));
	else
		sl_sock_free(s, so);
	return true;
}

/*
 * The slots the module released since the last look: its list (uapi
 * struct sluice_region.ksock_rel_head), taken whole and walked, each
 * closed if still released; O(released).  The count (ksock_released) is
 * read first: every push before a count read is in the list taken after
 * it.  If the list gave fewer closes than the count moved (a push the
 * module gave up, a list scribbled on, a module without the list), every
 * slot is looked at once, as before the list.  Lock held.
 */
static void ksock_take_released(struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	/* Acquire: the module pushed, and set kstate, before it stored it. */
	uint32_t rel = sl_load_acquire(&s->r->ksock_released);
	uint32_t next = sl_xchg(&s->r->ksock_rel_head, 0), max = s->max_sockets, n = 0;

	while (next && next <= max && n++ < max) {
		struct sl_sock *so = sl_sock(s, next - 1);

		next = SL_READ_ONCE(so->kp.rel_next);	/* before the close reuses it */
		if (ksock_close(s, so))
			r->ksock_handled++;
	}
	/* Behind (signed: the list may hold pushes counted only later)? */
	if ((int32_t)(rel - r->ksock_handled) <= 0)
		return;
	sl_count(s, SL_C_sockfd_scan);
	r->ksock_handled = rel;
	for (uint32_t i = 0; i < sl_sock_top(s); i++)
		ksock_close(s, sl_sock(s, i));
}

void sl_ksock_reap(struct sl_stack *s)
{
	if (sl_load_acquire(&s->r->ksock_released) != s->lib->ksock_handled ||
	    SL_READ_ONCE(s->r->ksock_rel_head))
		ksock_take_released(s);
}

bool sl_ksock_close_released(struct sl_stack *s, uint32_t sd, uint32_t gen)
{
	struct sl_sock *so;
	bool released;

	if (sd >= s->max_sockets)
		return false;
	so = sl_sock(s, sd);
	if (so->kp.gen != gen)
		return false;
	released = so->type != SL_SOCK_FREE &&
		   SL_READ_ONCE(so->kp.kstate) == SLUICE_KSOCK_RELEASED;
	/* Its release is on the list with any others': all closed now. */
	ksock_take_released(s);
	return released;
}

