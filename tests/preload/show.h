/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the conformance programs print for a call's result (conform.c,
 * errq.c): the same line on the kernel and under `sluice run`, compared
 * by their tests.
 */
#ifndef SLUICE_TESTS_SHOW_H
#define SLUICE_TESTS_SHOW_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* errno's name ("EAGAIN"), "0", or "errnoN" for one glibc cannot name. */
static inline const char *en(int e)
{
	static char buf[16];
	const char *n = e ? strerrorname_np(e) : "0";

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno%d", e);
	return buf;
}

/* "ret" or "-1/ENAME" (four at a time may be live in one printf). */
static inline const char *rv(long r)
{
	static char buf[4][32];
	static int k;
	char *b = buf[k++ & 3];

	if (r < 0)
		snprintf(b, 32, "-1/%s", en(errno));
	else
		snprintf(b, 32, "%ld", r);
	return b;
}

#endif /* SLUICE_TESTS_SHOW_H */
