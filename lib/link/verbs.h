/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs link's bookkeeping of pool buffers it posts for receive
 * (link/verbs.c), apart so the host unit tests can drive it with no device.
 */
#ifndef SLUICE_LINK_VERBS_H
#define SLUICE_LINK_VERBS_H

#include "link/link.h"

/*
 * A buffer posted to a receive queue is marked with the poster's pid, so
 * the buffers of a process killed with its link open (the kernel destroys
 * its QP, nobody frees its buffers) can be taken back: flags and aux hold
 * these two values, ts_us the pid, only while the buffer is the device's.
 */
#define SL_VERBS_BUF_POSTED	SL_BUF_HELD
#define SL_VERBS_BUF_MAGIC	SL_BUF_HELD_MAGIC

void sl_verbs_buf_mark(struct sl_stack *s, uint32_t idx, pid_t pid);
void sl_verbs_buf_unmark(struct sl_stack *s, uint32_t idx);
/* Mark (pid) or unmark (0) every buffer of the list of waiting packets
 * at head (linked by next_idx; proto/ip.c, sl_hold_add()). */
void sl_verbs_hold_mark(struct sl_stack *s, uint32_t head, pid_t pid);
/* Lock held: free the posted buffers of processes that no longer exist;
 * returns how many. */
unsigned int sl_verbs_reclaim(struct sl_stack *s);

#endif /* SLUICE_LINK_VERBS_H */
