// SPDX-License-Identifier: BSD-2-Clause
/*
 * The error queue (ip(7) IP_RECVERR, Linux sk_error_queue): ICMP errors
 * about what a socket sent, each kept in a buffer of its own on the
 * socket's errq chain until recvmsg(MSG_ERRQUEUE) takes it.  SO_ERROR and
 * EPOLLERR follow the queue as Linux's sock_dequeue_err_skb() and
 * datagram_poll() make them: an error queued sets SO_ERROR too; taking
 * one sets SO_ERROR to the next ICMP error queued, or clears it.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <linux/errqueue.h>

#include "proto/proto.h"

int sl_errq_add(struct sl_stack *s, struct sl_sock *so, const struct sl_errq_rec *rec,
		const void *pay, unsigned int plen)
{
	uint32_t idx;
	struct sluice_buf *b;

	if (plen > s->buf_size - sizeof(*rec))
		plen = (unsigned int)(s->buf_size - sizeof(*rec));
	/* Linux sock_queue_err_skb(): refused when it would reach the
	 * receive buffer (the receive queue's buffers and the errors'). */
	if ((uint64_t)(so->rxq_count + so->errq_count + 1) * s->buf_size >= so->rcvbuf) {
		sl_count(s, SL_C_udp_rx_full);
		return -ENOBUFS;
	}
	idx = sl_buf_alloc(s);
	if (idx == SLUICE_IDX_NONE)
		return -ENOBUFS;
	b = sl_buf(s, idx);
	b->off = 0;
	b->len = (uint16_t)(sizeof(*rec) + plen);
	b->next_idx = SLUICE_IDX_NONE;
	memcpy(sl_buf_base(s, idx), rec, sizeof(*rec));
	((struct sl_errq_rec *)sl_buf_base(s, idx))->plen = (uint16_t)plen;
	if (plen)
		memcpy(sl_buf_base(s, idx) + sizeof(*rec), pay, plen);
	sl_sock_busy2(s, so);
	if (so->errq_tail != SLUICE_IDX_NONE && so->errq_head != SLUICE_IDX_NONE)
		sl_buf(s, so->errq_tail)->next_idx = idx;
	else
		so->errq_head = idx;
	so->errq_tail = idx;
	so->errq_count++;
	sl_sock_wake(s, so);
	return 0;
}

static bool is_icmp(const struct sl_errq_rec *r)
{
	return r->origin == SO_EE_ORIGIN_ICMP || r->origin == SO_EE_ORIGIN_ICMP6;
}

long sl_errq_take(struct sl_stack *s, struct sl_sock *so, void *buf, size_t len,
		  struct sl_errq_rec *rec, bool *trunc)
{
	uint32_t idx = so->errq_head;
	const struct sluice_buf *b;
	size_t n;

	*trunc = false;
	if (idx == SLUICE_IDX_NONE || !so->errq_count)
		return -EAGAIN;
	b = sl_buf(s, idx);
	/* Written by this file: a record and its quote inside the buffer,
	 * or by someone else. */
	if (b->off || b->len < sizeof(*rec) || b->len > s->buf_size) {
		sl_corrupt(s, SL_C_corrupt_buf_len, idx);
		return sl_broken_err(s);
	}
	memcpy(rec, sl_buf_base(s, idx), sizeof(*rec));
	if (rec->plen > b->len - sizeof(*rec))
		rec->plen = (uint16_t)(b->len - sizeof(*rec));
	n = rec->plen < len ? rec->plen : len;
	*trunc = n < rec->plen;
	if (n)
		memcpy(buf, sl_buf_base(s, idx) + sizeof(*rec), n);
	so->errq_head = b->next_idx;
	so->errq_count--;
	if (so->errq_head == SLUICE_IDX_NONE || !so->errq_count) {
		so->errq_head = so->errq_tail = SLUICE_IDX_NONE;
		so->errq_count = 0;
	}
	sl_buf_free(s, idx);
	/* Linux: the next ICMP error queued is SO_ERROR now; none, and the
	 * one taken was ICMP: SO_ERROR is cleared. */
	if (so->errq_head != SLUICE_IDX_NONE) {
		const struct sl_errq_rec *next =
			(const struct sl_errq_rec *)sl_buf_base(s, so->errq_head);

		if (is_icmp(next))
			so->error = (int32_t)(next->ee_errno & 4095);
		else if (is_icmp(rec))
			so->error = 0;
	} else if (is_icmp(rec)) {
		so->error = 0;
	}
	sl_sock_wake(s, so);
	return (long)n;
}

void sl_errq_purge(struct sl_stack *s, struct sl_sock *so)
{
	if (so->errq_head != SLUICE_IDX_NONE)
		sl_buf_free_chain(s, so->errq_head);
	so->errq_head = so->errq_tail = SLUICE_IDX_NONE;
	so->errq_count = 0;
}

void sl_errq_icmp(struct sl_stack *s, struct sl_sock *so, const struct sl_ip *q, int err,
		  const struct sl_icmp_err *ie, unsigned int skip)
{
	const uint8_t *l4 = (const uint8_t *)q + (q->ver_ihl & 0xf) * 4;
	unsigned int hl = (unsigned int)(l4 - (const uint8_t *)q);
	struct sl_errq_rec rec = {
		.ee_errno = (uint32_t)err,
		.origin = SO_EE_ORIGIN_ICMP,
		.daddr = q->daddr,
		.dport = ((const uint16_t *)l4)[1],	/* the quoted destination port */
		.ts_us = sl_now(s),
	};

	if (!ie || !sl_recverr(so, ie))
		return;
	if (ie->v6) {
		rec.origin = SO_EE_ORIGIN_ICMP6;
		memcpy(rec.offender6, ie->offender6, 16);
	}
	rec.type = ie->type;
	rec.code = ie->code;
	rec.info = ie->info;
	rec.offender = ie->offender;
	sl_errq_add(s, so, &rec, l4 + skip,
		    ie->qlen > hl + skip ? ie->qlen - hl - skip : 0);
}
