/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A minimal TAP producer for the host unit tests: one "ok"/"not ok" line
 * per check, a plan at the end, exit status 1 if anything failed.
 */
#ifndef SLUICE_TESTS_TAP_H
#define SLUICE_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failed;

__attribute__((format(printf, 2, 3)))
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

/* tap_eq: compare two integers and show both on failure. */
#define tap_eq(got, want, name)                                               \
	do {                                                                  \
		long long g_ = (long long)(got), w_ = (long long)(want);      \
		if (!tap_ok(g_ == w_, "%s", name))                            \
			printf("#   got %lld, want %lld\n", g_, w_);          \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif /* SLUICE_TESTS_TAP_H */
