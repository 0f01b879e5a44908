// SPDX-License-Identifier: BSD-2-Clause
/*
 * Kill points (tests only): in a library built with -DSL_KILL_POINTS
 * (make killpt-lib, build/kp/), SL_KILL_POINT(name) marks a place inside a
 * change to shared state; a test arms one name with a count, and the
 * process kills itself with SIGKILL on that hit, holding the stack lock
 * with the change half made (tests/unit/test_killpt.c, issue 17).  In
 * every other build the macro is empty and this file defines nothing.
 */
#include "core/core.h"

#ifdef SL_KILL_POINTS
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const char *armed_name;
static unsigned long armed_left;
unsigned long sl_kill_hits;

void sl_kill_arm(const char *name, unsigned long nth)
{
	armed_name = name;
	armed_left = nth;
}

void sl_kill_point(const char *name)
{
	sl_kill_hits++;
	if (!armed_name || strcmp(name, armed_name) || --armed_left)
		return;
	kill(getpid(), SIGKILL);
	pause();
}
#endif
