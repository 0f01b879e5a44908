// SPDX-License-Identifier: BSD-2-Clause
/*
 * The packet-buffer pool: a free list of buffer indices in the region,
 * used under the stack lock.
 */
#include <sys/mman.h>

#include "os/os.h"
#include "core/core.h"

uint32_t sl_buf_alloc(struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	uint32_t idx = r->buf_free_idx;
	struct sluice_buf *b;

	if (idx >= s->n_bufs) {
		if (idx != SLUICE_IDX_NONE)
			sl_corrupt(s, SL_C_corrupt_buf_idx, idx);
		sl_count(s, SL_C_nobuf);
		return SLUICE_IDX_NONE;
	}
	b = sl_buf(s, idx);
	r->buf_free_idx = b->next_idx;
	SL_KILL_POINT("buf_alloc");
	/* A free list looping on itself would hand this buffer out twice. */
	if (__builtin_expect(b->next_idx == idx, 0)) {
		sl_corrupt(s, SL_C_corrupt_chain, idx);
		return SLUICE_IDX_NONE;
	}
	r->buf_free_count--;
	if (s->n_bufs - r->buf_free_count > r->buf_peak)
		r->buf_peak = s->n_bufs - r->buf_free_count;
	b->next_idx = SLUICE_IDX_NONE;
	b->off = SL_HEADROOM;
	b->len = 0;
	b->seq = 0;
	b->flags = 0;
	b->aux = 0;
	b->ts_us = 0;
	return idx;
}

void sl_buf_free(struct sl_stack *s, uint32_t idx)
{
	struct sl_region *r = s->lib;
	struct sluice_buf *b;

	if (idx >= s->n_bufs) {
		/* None is nothing to free; anything else names no buffer. */
		if (idx != SLUICE_IDX_NONE)
			sl_corrupt(s, SL_C_corrupt_buf_idx, idx);
		return;
	}
	b = sl_buf(s, idx);
	b->next_idx = r->buf_free_idx;
	SL_KILL_POINT("buf_free");
	r->buf_free_idx = idx;
	r->buf_free_count++;
}

void sl_buf_free_chain(struct sl_stack *s, uint32_t idx)
{
	uint32_t steps = 0;

	while (sl_buf_next(s, idx, &steps)) {
		uint32_t next = sl_buf(s, idx)->next_idx;

		sl_buf_free(s, idx);
		idx = next;
	}
}

/*
 * Memory given back.  A /dev/shm stack's pages are committed as its
 * sockets and buffers are first used (region.c); after a load has gone
 * (100,000 connections closed) they would stay committed, where the
 * kernel frees its sockets' slabs.  So once a second (proto/timer.c) the
 * lock holder looks whether the pool's use has fallen to half of the
 * most it saw since the last trim, and if so gives back every page of
 * buffer data that holds only free buffers: madvise(MADV_REMOVE) on the
 * shared mapping frees the file's pages for every process that maps it
 * (a page read again after it is a new zero page).  The look is O(1);
 * a trim is O(buffers) and comes after half the pool's use went, so it
 * costs O(1) a buffer freed, and never runs on a packet's path.
 *
 * Not on a module's stack (the module allocates and pins its region:
 * vmalloc_user, mapped page by page, no file to punch), nor once a verbs
 * link has registered the buffers with a device (mem_pinned: the device
 * would go on writing the old pages), nor in a sandbox (a filter that
 * allows the program's socket calls need not allow madvise).
 */
#define SL_BUF_TRIM_MIN		1024	/* buffers no longer in use before a trim */
#define SL_BUF_TRIM_MARK	0xfffffffffff5eedfull	/* ts_us of a free buffer, in a trim */
#define SL_PAGE			4096u

bool sl_mem_trimmable(const struct sl_stack *s)
{
	return !s->module_backed && !sl_sys_sandboxed && !SL_READ_ONCE(s->lib->mem_pinned);
}

void sl_mem_give_back(struct sl_stack *s, uint8_t *start, uint8_t *end)
{
	uintptr_t a = ((uintptr_t)start + SL_PAGE - 1) & ~(uintptr_t)(SL_PAGE - 1);
	uintptr_t b = (uintptr_t)end & ~(uintptr_t)(SL_PAGE - 1);

	if (b <= a || (uint8_t *)a < s->base)
		return;
	/* EINVAL on a private mapping (a unit test's region): nothing is
	 * given back and nothing changes. */
	sl_sys_madvise((void *)a, b - a, MADV_REMOVE);
}

/* Is buffer i free (marked by this trim)? */
static bool trim_marked(struct sl_stack *s, uint32_t i)
{
	return sl_buf(s, i)->ts_us == SL_BUF_TRIM_MARK;
}

void sl_buf_trim(struct sl_stack *s)
{
	struct sl_region *r = s->lib;
	uint32_t n = s->n_bufs, in_use = n - r->buf_free_count, hi = r->buf_trim_hi;
	uint32_t idx, steps = 0, marked = 0, head = SLUICE_IDX_NONE;
	uint64_t bs = s->buf_size, pages = (uint64_t)n * bs / SL_PAGE, run = 0;

	if (in_use > n)
		return;	/* a scribbled count: recovery's to mend */
	/* Buffers first used since the last trim, even between two looks. */
	if (r->buf_peak != r->buf_trim_peak && r->buf_peak > hi)
		hi = r->buf_peak;
	if (in_use > hi)
		hi = in_use;
	r->buf_trim_hi = hi;
	if (hi - in_use < SL_BUF_TRIM_MIN || in_use > hi / 2 || !sl_mem_trimmable(s))
		return;
	/* Mark what the free list holds: free buffers' fields but next_idx
	 * mean nothing (sl_buf_alloc() sets them). */
	for (idx = r->buf_free_idx; sl_buf_next(s, idx, &steps); idx = sl_buf(s, idx)->next_idx) {
		struct sluice_buf *b = sl_buf(s, idx);

		b->flags = 0;
		b->ts_us = SL_BUF_TRIM_MARK;
		marked++;
	}
	SL_KILL_POINT("buf_trim");
	if (marked == r->buf_free_count) {
		/* Runs of pages that hold free buffers alone. */
		for (uint64_t p = 0; p <= pages; p++) {
			bool all = p < pages;

			for (uint64_t i = p * SL_PAGE / bs; all && i <= (p * SL_PAGE + SL_PAGE - 1) / bs; i++)
				all = trim_marked(s, (uint32_t)i);
			if (all) {
				run++;
				continue;
			}
			if (run)
				sl_mem_give_back(s, s->bufdata + (p - run) * SL_PAGE, s->bufdata + p * SL_PAGE);
			run = 0;
		}
	}
	/* The free list again, lowest first: the next buffers taken are
	 * from the pages still committed, the pages given back come last.
	 * A holder that dies here leaves a list recovery builds again. */
	for (uint32_t i = n; i-- > 0;) {
		struct sluice_buf *b = sl_buf(s, i);

		if (b->ts_us != SL_BUF_TRIM_MARK)
			continue;
		b->ts_us = 0;
		b->next_idx = head;
		head = i;
	}
	r->buf_free_idx = head;
	r->buf_trim_hi = in_use;
	r->buf_trim_peak = r->buf_peak;
}
