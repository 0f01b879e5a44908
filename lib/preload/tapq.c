// SPDX-License-Identifier: BSD-2-Clause
/*
 * A TAP stack's queue server: one thread per process that has a TAP link,
 * reading the process's own queue of the device while none of its other
 * threads does (lib/link/README.md, "Every queue is read").
 *
 * The tun driver steers each frame the kernel sends to one queue: the
 * queue that last sent on the frame's flow, else one chosen by the flow's
 * hash (drivers/net/tun.c, tun_automq_select_queue()).  It learns a flow
 * only after the frame that sent on it has been through the kernel's
 * stack (tun_get_user() calls tun_flow_update() last), so the SYN-ACK to
 * a SYN is steered by hash, and it forgets a flow 3 s after its last send
 * (the flow table's ageing).  A frame may so wait on the queue of a
 * process that is asleep in its own code: the server reads it there.
 *
 * It sleeps in poll(2) on the queue and costs nothing while no frame
 * comes.  While another thread of the process reads the queue (inside the
 * library, which polls the queue when it waits), the frame is theirs: the
 * server naps until they have been away for TAPQ_QUIET_MS, so on a busy
 * stack it wakes at most 1000 / TAPQ_QUIET_MS times a second.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "preload.h"
#include "link/link.h"

/* More than a waiting thread's longest sleep between two reads of the
 * queue (run/wait.c: SLEEP_MAX_MS), with room for its scheduling. */
#define TAPQ_QUIET_MS	50

/* Set at exit (pl_tapq_stop()): the server runs the stack no more. */
static bool tapq_stopping;
static bool tapq_started;

static bool tapq_broken(struct sl_stack *s)
{
	return s->corrupt || sl_load_acquire(&s->r->state) == SLUICE_STATE_BROKEN;
}

static void *tapq_main(void *arg)
{
	struct sl_stack *s = arg;
	struct sl_link *l = s->link;
	struct pollfd p = { .fd = l->ops->fd(l), .events = POLLIN };
	int64_t quiet;
	int n;

	sl_link_tap_serving();
	while (!tapq_broken(s) && !sl_load_acquire(&tapq_stopping)) {
		if (sl_sys_poll(&p, 1, -1) <= 0 || !(p.revents & POLLIN)) {
			if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
				break;	/* the queue is gone */
			continue;
		}
		quiet = sl_link_tap_quiet_ms(l, s);
		if (quiet >= 0 && quiet < TAPQ_QUIET_MS) {
			sl_sys_poll(NULL, 0, (int)(TAPQ_QUIET_MS - quiet));
			continue;
		}
		if (sl_lock(s))
			break;
		if (sl_load_acquire(&tapq_stopping)) {
			sl_unlock(s);
			break;
		}
		n = sl_run(s);
		sl_unlock(s);
		/* Nothing taken in (no buffer free): not a busy loop. */
		if (n <= 0)
			sl_sys_poll(NULL, 0, TAPQ_QUIET_MS);
	}
	return NULL;
}

void pl_tapq_start(struct sl_stack *s)
{
	pthread_t th;
	int ret;

	if (!sl_link_tap_name(s->link) || !s->link->ops->fd)
		return;
	ret = pl_thread_quiet(tapq_main, s, 64 * 1024, &th);
	if (ret) {
		pl_log("stack %s: no TAP queue server (%s): frames steered to this process's "
		       "queue wait while it runs outside the library", pl_cfg.stack, strerror(ret));
		return;
	}
	tapq_started = true;
	pthread_setname_np(th, "sluice-tapq");
}

SL_FORKTEXT void pl_tapq_stop(struct sl_stack *s)
{
	if (!tapq_started)
		return;
	sl_store_release(&tapq_stopping, true);
	/* A turn of the server's that has begun ends before this returns;
	 * a later one sees the flag first. */
	if (!sl_lock(s))
		sl_unlock(s);
}
