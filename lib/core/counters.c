// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack's counters by name and description (core.h, SL_COUNTERS): what
 * sluice_stack_counter(), `sluice info` and `sluice dump` print.
 */
#include "core/core.h"

const char *const sl_counter_names[SL_C_COUNT] = {
#define SL_COUNTER_NAME(n, d) #n,
	SL_COUNTERS(SL_COUNTER_NAME)
#undef SL_COUNTER_NAME
};

const char *const sl_counter_desc[SL_C_COUNT] = {
#define SL_COUNTER_DESC(n, d) d,
	SL_COUNTERS(SL_COUNTER_DESC)
#undef SL_COUNTER_DESC
};
