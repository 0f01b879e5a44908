// SPDX-License-Identifier: BSD-2-Clause
/*
 * The checked copy (core/ucopy.c, sl_ucopy()) with a SIGSEGV handler that
 * does what the preload's does (lib/preload/signal.c): a fault at an
 * instruction sl_ucopy_fixup() knows resumes where it says.  Every length
 * from 0 to 300 bytes, with the source and then the destination running
 * k bytes into a page followed by a PROT_NONE one (every k from 0 to the
 * length): the copy returns exactly the bytes it could not copy (the
 * length minus k), and the k bytes before the guard are copied.  Then
 * sl_uprobe_w() on a writable, a read-only and a PROT_NONE byte; the
 * iovec cursor (sl_ucopy_cur(), sl_uprobe_cur()): copies split across
 * iovecs land in order and move it on, one that meets a bad iovec
 * leaves it where it was; and a fault elsewhere still kills (the
 * handler leaves it to the default).
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "core/core.h"
#include "tap.h"

#if !defined(__x86_64__)
int main(void)
{
	printf("1..0 # SKIP the checked copy is x86-64's (elsewhere a plain copy)\n");
	return 0;
}
#else
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	greg_t *ip = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
	uintptr_t to = sl_ucopy_fixup((uintptr_t)*ip);

	(void)si;
	if (to) {
		*ip = (greg_t)to;
		return;
	}
	signal(sig, SIG_DFL);	/* not ours: taken again, by the default */
}

int main(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	uint8_t *m, *edge, src[512], dst[512];
	unsigned int bad_src = 0, bad_dst = 0, bad_ok = 0;
	int st;
	pid_t p;

	sigaction(SIGSEGV, &sa, NULL);
	m = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	mprotect(m + pg, pg, PROT_NONE);	/* the guard after page 0 */
	edge = m + pg;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	memcpy(edge - sizeof(src), src, sizeof(src));
	for (size_t n = 0; n <= 300; n++) {
		memset(dst, 0, sizeof(dst));
		if (sl_ucopy(dst, src, n) || memcmp(dst, src, n))
			bad_ok++;
		for (size_t k = 0; k <= n; k++) {
			const uint8_t *s = edge - k;

			memset(dst, 0, sizeof(dst));
			if (sl_ucopy(dst, s, n) != n - k || memcmp(dst, s, k))
				bad_src++;
			memset(edge - 320, 0, 320);
			if (sl_ucopy(edge - k, src, n) != n - k || memcmp(edge - k, src, k))
				bad_dst++;
		}
	}
	tap_eq(bad_ok, 0, "every length 0-300 copied whole, 0 left");
	tap_eq(bad_src, 0, "a source k bytes before a PROT_NONE page: n - k left, the k copied");
	tap_eq(bad_dst, 0, "a destination k bytes before a PROT_NONE page: n - k left, the k copied");
	tap_eq(sl_uprobe_w(m), 0, "a writable byte probes writable");
	mprotect(m + 2 * pg, pg, PROT_READ);
	tap_eq(sl_uprobe_w(m + 2 * pg), -1, "a read-only byte does not");
	tap_eq(sl_uprobe_w(edge), -1, "a PROT_NONE byte does not");
	{
		uint8_t a[5], b[7], c[40], want[52];
		struct iovec v[4] = { { a, 5 }, { NULL, 0 }, { b, 7 }, { c, 40 } };
		struct sl_ucur cur = { .iov = v, .n = 4 };
		struct iovec w[3] = { { a, 5 }, { edge, 4 }, { c, 40 } };
		struct sl_ucur bad = { .iov = w, .n = 3 };
		size_t got = 0;

		/* 52 bytes in pieces of 3, 9, 1 and 39: every iovec edge met
		 * inside a piece. */
		for (size_t k = 0, step[4] = { 3, 9, 1, 39 }; k < 4; got += step[k++])
			if (sl_ucopy_cur(&cur, src + got, step[k]))
				break;
		memcpy(want, a, 5);
		memcpy(want + 5, b, 7);
		memcpy(want + 12, c, 40);
		tap_ok(got == 52 && !memcmp(want, src, 52) && cur.i == 4 && !cur.off,
		       "a cursor takes 52 bytes in four pieces across four iovecs (one empty), in order");
		tap_eq(sl_ucopy_cur(&cur, src, 1), 1, "a full cursor takes no more and says so");
		tap_eq(sl_uprobe_cur(&bad, 5), 0, "the bytes before a bad iovec probe writable");
		tap_eq(sl_uprobe_cur(&bad, 6), -1, "one byte into it does not");
		tap_eq(sl_ucopy_cur(&bad, src, 3), 0, "3 bytes into the good first iovec");
		tap_eq(sl_ucopy_cur(&bad, src + 3, 4), 4, "4 more reaching the PROT_NONE iovec: none taken");
		tap_ok(bad.i == 0 && bad.off == 3, "and the cursor is where it was (iovec 0, byte 3)");
	}
	p = fork();
	if (!p) {
		*(volatile uint8_t *)edge = 1;	/* not in a checked copy */
		_exit(0);
	}
	waitpid(p, &st, 0);
	tap_ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a fault elsewhere still kills");
	return tap_done();
}
#endif
