// SPDX-License-Identifier: BSD-2-Clause
/*
 * The loop link: an in-memory IP wire between two stacks of one process,
 * for tests, with seeded fault injection (loss, duplication, reordering,
 * corruption, fixed delay).  Each direction is a FIFO of frames; a frame
 * is delivered when the receiving stack's clock has passed its due time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "link/link.h"

struct loop_frame {
	struct loop_frame *next;
	uint64_t due_us;
	uint16_t len;
	uint8_t data[];
};

struct loop_queue {
	struct loop_frame *head, *tail;
	struct loop_frame *held;	/* reordering: sent after the next one */
	unsigned int depth;
};

struct loop_wire;

struct loop_end {
	struct sl_link link;
	struct loop_wire *wire;
	struct loop_queue *out, *in;
	struct sl_stack *stack;
};

struct loop_wire {
	struct loop_end end[2];
	struct loop_queue q[2];
	struct sluice_loop_faults f;
	struct sluice_loop_stats st;	/* sluice_link_loop_stats() */
	uint64_t rng;
	int refs;
};

/* Frames in flight per direction before the wire drops (a full queue). */
#define LOOP_DEPTH_MAX	4096

static uint64_t rng_next(struct loop_wire *w)
{
	/* splitmix64 */
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool chance(struct loop_wire *w, uint32_t ppm)
{
	return ppm && rng_next(w) % 1000000 < ppm;
}

static void enqueue(struct loop_queue *q, struct loop_frame *f)
{
	f->next = NULL;
	if (q->tail)
		q->tail->next = f;
	else
		q->head = f;
	q->tail = f;
	q->depth++;
}

static struct loop_frame *frame_copy(const struct loop_frame *f)
{
	struct loop_frame *c = malloc(sizeof(*c) + f->len);

	if (c)
		memcpy(c, f, sizeof(*c) + f->len);
	return c;
}

static int loop_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct loop_end *e = (struct loop_end *)l;
	struct loop_wire *w = e->wire;
	uint16_t len = sl_buf(s, idx)->len;
	struct loop_frame *f;

	(void)nh;
	w->st.frames++;
	if (chance(w, w->f.loss_ppm)) {
		w->st.lost++;
		return 0;	/* lost on the wire: the sender cannot tell */
	}
	if (e->out->depth >= LOOP_DEPTH_MAX) {
		w->st.dropped_full++;
		return 0;
	}
	f = malloc(sizeof(*f) + len);
	if (!f)
		return -ENOBUFS;
	f->len = len;
	f->due_us = sl_now(s) + w->f.delay_us;
	memcpy(f->data, sl_buf_data(s, idx), len);
	if (len && chance(w, w->f.corrupt_ppm)) {
		uint64_t bit = rng_next(w) % (len * 8u);

		f->data[bit / 8] ^= 1u << (bit % 8);
		w->st.corrupted++;
	}
	if (chance(w, w->f.dup_ppm)) {
		struct loop_frame *d = frame_copy(f);

		if (d) {
			enqueue(e->out, d);
			w->st.duplicated++;
		}
	}
	if (!e->out->held && chance(w, w->f.reorder_ppm)) {
		e->out->held = f;
		w->st.reordered++;
		return 0;
	}
	enqueue(e->out, f);
	if (e->out->held) {
		/* The held frame goes out behind this one. */
		e->out->held->due_us = f->due_us;
		enqueue(e->out, e->out->held);
		e->out->held = NULL;
	}
	return 0;
}

static int loop_rx(struct sl_link *l, struct sl_stack *s, int budget)
{
	struct loop_end *e = (struct loop_end *)l;
	struct loop_queue *q = e->in;
	uint64_t now = sl_now(s);
	int n = 0;

	/* A frame held for reordering with nothing behind it goes after 1 ms. */
	if (!q->head && q->held && q->held->due_us + 1000 <= now) {
		enqueue(q, q->held);
		q->held = NULL;
	}

	while (n < budget && q->head && q->head->due_us <= now) {
		struct loop_frame *f = q->head;
		uint32_t idx;

		q->head = f->next;
		if (!q->head)
			q->tail = NULL;
		q->depth--;
		e->wire->st.delivered++;
		idx = sl_buf_alloc(s);
		if (idx != SLUICE_IDX_NONE && f->len <= s->buf_size - SL_HEADROOM) {
			memcpy(sl_buf_data(s, idx), f->data, f->len);
			sl_buf(s, idx)->len = f->len;
			sl_count(s, SL_C_link_rx);
			sl_ip_input(s, idx);
		} else if (idx != SLUICE_IDX_NONE) {
			sl_buf_free(s, idx);
		}
		free(f);
		n++;
	}
	return n;
}

static void queue_free(struct loop_queue *q)
{
	while (q->head) {
		struct loop_frame *f = q->head;

		q->head = f->next;
		free(f);
	}
	free(q->held);
	q->held = NULL;
	q->tail = NULL;
	q->depth = 0;
}

static void loop_close(struct sl_link *l)
{
	struct loop_end *e = (struct loop_end *)l;
	struct loop_wire *w = e->wire;

	e->stack->link = NULL;
	if (--w->refs == 0) {
		queue_free(&w->q[0]);
		queue_free(&w->q[1]);
		free(w);
	}
}

static const struct sl_link_ops loop_ops = {
	.name = "loop",
	.tx = loop_tx,
	.rx = loop_rx,
	.close = loop_close,
};

int sluice_link_loop_stats(struct sluice_stack *st, struct sluice_loop_stats *out)
{
	struct sl_link *l = ((struct sl_stack *)st)->link;

	if (!l || l->ops != &loop_ops)
		return -ENODEV;
	*out = ((struct loop_end *)l)->wire->st;
	return 0;
}

int sluice_link_loop(struct sluice_stack *a, struct sluice_stack *b,
		     const struct sluice_loop_faults *faults)
{
	struct sl_stack *sa = (struct sl_stack *)a, *sb = (struct sl_stack *)b;
	struct loop_wire *w;

	if (sa == sb || sa->link || sb->link)
		return -EBUSY;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (faults)
		w->f = *faults;
	w->rng = w->f.seed;
	w->refs = 2;
	for (int i = 0; i < 2; i++) {
		w->end[i].link.ops = &loop_ops;
		w->end[i].wire = w;
		w->end[i].out = &w->q[i];
		w->end[i].in = &w->q[!i];
	}
	w->end[0].stack = sa;
	w->end[1].stack = sb;
	w->end[0].link.mtu = sl_mtu(sa);
	w->end[1].link.mtu = sl_mtu(sb);
	sa->link = &w->end[0].link;
	sb->link = &w->end[1].link;
	return 0;
}
