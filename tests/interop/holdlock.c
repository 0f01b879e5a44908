// SPDX-License-Identifier: BSD-2-Clause
/*
 * holdlock STACK: attach to a stack, take its lock and stop (SIGSTOP)
 * holding it; when continued, let go and exit 0.  For the tests of a
 * stopped lock holder (tests/host/test_stopped_holder.sh).
 */
#include <signal.h>
#include <stdio.h>

#include "api/api.h"

int main(int argc, char **argv)
{
	struct sluice_stack *st;
	int ret;

	if (argc != 2)
		return 2;
	ret = sluice_stack_attach(argv[1], &st);
	if (ret) {
		fprintf(stderr, "holdlock: attach %s: %d\n", argv[1], ret);
		return 1;
	}
	if (sl_lock((struct sl_stack *)st))
		return 1;
	raise(SIGSTOP);
	sl_unlock((struct sl_stack *)st);
	sluice_stack_close(st);
	return 0;
}
