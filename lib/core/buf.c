// SPDX-License-Identifier: BSD-2-Clause
/*
 * The packet-buffer pool: a free list of buffer indices in the region,
 * used under the stack lock.
 */
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
