/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/: the drivers that carry a stack's packets (loop, tap, kring,
 * verbs, and the Ethernet and IPoIB framing they need).  A link is handed
 * IPv4 packets through its struct sl_link_ops (core.h) and gives what it
 * receives to sl_ip_input() (proto/); it takes the lock only to set itself
 * up or when it has its own reason to run the stack (run/).  Its
 * constructors are the public API (include/sluice/sluice.h,
 * sluice_link_*); this header holds what the layers above need besides.
 */
#ifndef SLUICE_LINK_H
#define SLUICE_LINK_H

#include "run/run.h"

/* The TAP device of a TAP link, or NULL for another link (tap.c). */
const char *sl_link_tap_name(struct sl_link *l);

/*
 * The TAP device a process of the stack opened its TAP link on (the
 * region keeps its name), copied to name: true if there is one.  Another
 * process that attaches opens a queue of its own on it with
 * sluice_link_tap(), so that it sends without the first (README.md), if
 * the device exists where it runs (TUNSETIFF would make a new one).
 */
bool sl_link_tap_of(struct sl_stack *s, char *name, size_t len);

/*
 * A process's queue server (preload/tapq.c): the thread that reads its
 * TAP queue while no other thread of the process does.  serving() marks
 * the calling thread as it; quiet_ms() is how long (ms) since another
 * thread of the process last read link l, -1 if l is not a TAP link.
 */
void sl_link_tap_serving(void);
int64_t sl_link_tap_quiet_ms(struct sl_link *l, struct sl_stack *s);

#endif /* SLUICE_LINK_H */
