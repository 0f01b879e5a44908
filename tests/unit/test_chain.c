// SPDX-License-Identifier: BSD-2-Clause
/*
 * Segments spanning buffers inside one stack (SL_BUF_CHAIN, tcp_output.c
 * and tcp_input.c): a TCP stream between two sockets of one stack goes in
 * chained segments and arrives intact; Nagle and delayed ACKs do not hold
 * its tail back; a chain the receiver cannot take whole (out of order,
 * beyond the window) is cut to its first buffer and the stream recovers;
 * a chain that is not what its head says is caught, and a malformed one is
 * dropped with all its buffers.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "stack_fixture.h"
#include "tcp_opts.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define IP "10.7.0.1"
#define PORT 7420

static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 151 + (i >> 9) + (i >> 17));
}

struct conn {
	struct sl_stack *s;
	int l, c, d;
	uint32_t free0;
};

static void conn_open(struct conn *k, const char *tag, uint32_t bufs)
{
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);

	k->s = fx_stack_sized(tag, IP, bufs, 16);
	k->free0 = k->s->lib->buf_free_count;
	k->l = sluice_socket(ST(k->s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(ST(k->s), k->l, &a);
	sluice_listen(ST(k->s), k->l, 4);
	if (fx_tcp_pair(k->s, IP, PORT, k->l, &k->c, &k->d)) {
		printf("Bail out! no connection in stack %s\n", tag);
		exit(1);
	}
}

/* Close everything; true if every buffer came back to the pool. */
static bool conn_close(struct conn *k)
{
	bool whole;

	sluice_close(ST(k->s), k->c);
	sluice_close(ST(k->s), k->d);
	sluice_close(ST(k->s), k->l);
	for (double end = fx_now_s() + 5; k->s->lib->buf_free_count != k->free0 && fx_now_s() < end;)
		sluice_stack_poll(ST(k->s));
	whole = k->s->lib->buf_free_count == k->free0;
	if (!whole)
		printf("# %u of %u buffers free\n", k->s->lib->buf_free_count, k->free0);
	fx_destroy(k->s);
	return whole;
}

/* Read what d holds; check it continues the pattern at *got. */
static bool drain_check(struct conn *k, uint64_t *got)
{
	static uint8_t buf[65536];
	long n;

	while ((n = sluice_recv(ST(k->s), k->d, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (long i = 0; i < n; i++)
			if (buf[i] != pat(*got + (uint64_t)i))
				return false;
		*got += (uint64_t)n;
	}
	return n == -EAGAIN;
}

static void test_stream(void)
{
	static uint8_t buf[65536];
	const uint64_t total = 8u << 20;
	struct conn k;
	uint64_t sent = 0, got = 0, chains0, rexmit0;
	bool intact = true;

	conn_open(&k, "chain", 1024);
	chains0 = fx_counter(k.s, "loopback_chain");
	rexmit0 = fx_counter(k.s, "tcp_retransmit");
	for (double end = fx_now_s() + 30; got < total && intact && fx_now_s() < end;) {
		size_t want = total - sent < sizeof(buf) ? total - sent : sizeof(buf);
		long n;

		for (size_t i = 0; i < want; i++)
			buf[i] = pat(sent + i);
		n = want ? sluice_send(ST(k.s), k.c, buf, want, MSG_DONTWAIT) : 0;
		if (n > 0)
			sent += (uint64_t)n;
		intact = drain_check(&k, &got);
	}
	tap_ok(intact && got == total, "8 MiB between two sockets of one stack, byte for byte "
	       "(%llu bytes)", (unsigned long long)got);
	tap_ok(fx_counter(k.s, "loopback_chain") - chains0 >= total / 65536,
	       "it went in chained segments (%llu)",
	       (unsigned long long)(fx_counter(k.s, "loopback_chain") - chains0));
	tap_eq(fx_counter(k.s, "loopback_unchained"), 0, "none was cut");
	tap_eq(fx_counter(k.s, "tcp_retransmit") - rexmit0, 0, "nothing was sent again");
	tap_ok(conn_close(&k), "every buffer back in the pool");
}

/* A chained segment's last buffer is short: Nagle sends it when the chain
 * is acknowledged, and the receiver acknowledges a chain at once (as Linux
 * acks a GSO packet of more than one segment), not after 40 ms. */
static void test_tail_not_held(void)
{
	static uint8_t buf[40000];
	struct conn k;
	uint64_t got = 0;
	bool intact;

	conn_open(&k, "chaintail", 512);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pat(i);
	tap_eq(sluice_send(ST(k.s), k.c, buf, sizeof(buf), MSG_DONTWAIT), (long)sizeof(buf),
	       "40000 bytes queued (Nagle on)");
	for (int i = 0; i < 20; i++)
		sluice_stack_poll(ST(k.s));
	intact = drain_check(&k, &got);
	tap_ok(intact && got == sizeof(buf), "all of it arrived with no timer run (%llu bytes)",
	       (unsigned long long)got);
	tap_ok(conn_close(&k), "every buffer back in the pool");
}

/* ---- forged chains ---------------------------------------------------- */

struct forge {
	uint32_t seq;		/* first payload byte */
	unsigned int extra;	/* further buffers */
	unsigned int linked;	/* of them, how many are really there */
	unsigned int chunk;	/* payload bytes in each buffer */
	uint8_t proto;
	int tot_delta;		/* added to the IPv4 total length */
};

/* A chained segment from c to d as tcp_output.c would make it, queued for
 * delivery inside the stack; lock held.  Payload continues the pattern. */
static void forge_chain(struct conn *k, const struct forge *f)
{
	struct sl_stack *s = k->s;
	struct sl_sock *from = sl_sock(s, (uint32_t)k->c), *to = sl_sock(s, (uint32_t)k->d);
	uint32_t head = sl_buf_alloc(s), tail = head, base = f->seq - to->tcp.irs - 1;
	unsigned int ol = 12, total = f->chunk * (1 + f->extra);
	uint8_t *p = sl_buf_base(s, head) + SL_HEADROOM;
	struct sl_ip *ip = (struct sl_ip *)p;
	struct sl_tcph *th = (struct sl_tcph *)(p + 20);
	uint8_t *o = (uint8_t *)(th + 1);
	uint32_t v;

	tcp_hdrs_put(ip, th, from->laddr, from->raddr, ntohs(from->lport), ntohs(from->rport),
		     f->seq, to->tcp.snd_nxt, TH_ACK_, 65535, ol, 20 + ol + total);
	ip->proto = f->proto;
	ip->tot_len = htons((uint16_t)(40 + ol + total + f->tot_delta));
	ip->csum = 0;
	ip->csum = sl_ip_csum(ip);
	o[0] = 1;
	o[1] = 1;
	o[2] = 8;
	o[3] = 10;
	v = htonl(to->tcp.ts_recent + 1);
	memcpy(o + 4, &v, 4);
	v = 0;
	memcpy(o + 8, &v, 4);
	for (unsigned int i = 0; i < f->chunk; i++)
		o[ol + i] = pat(base + i);
	sl_buf(s, head)->len = (uint16_t)(40 + ol + f->chunk);
	for (unsigned int b = 0; b < f->linked; b++) {
		uint32_t c = sl_buf_alloc(s);
		uint8_t *d = sl_buf_base(s, c) + SL_TCP_DATA_OFF;

		for (unsigned int i = 0; i < f->chunk; i++)
			d[i] = pat(base + f->chunk * (b + 1) + i);
		sl_buf(s, c)->off = SL_TCP_DATA_OFF;
		sl_buf(s, c)->len = (uint16_t)f->chunk;
		sl_buf(s, tail)->next_idx = c;
		tail = c;
	}
	sl_buf(s, head)->flags = SL_BUF_LOCAL | SL_BUF_CHAIN;
	sl_buf(s, head)->aux = (uint16_t)f->extra;
	sl_ip_loopback(s, head, tail);
}

static uint32_t rcv_nxt(struct conn *k)
{
	return sl_sock(k->s, (uint32_t)k->d)->tcp.rcv_nxt;
}

static void inject(struct conn *k, const struct forge *f)
{
	sl_lock(k->s);
	forge_chain(k, f);
	sl_unlock(k->s);
	for (int i = 0; i < 10; i++)
		sluice_stack_poll(ST(k->s));
}

static void test_forged_in_order(void)
{
	struct conn k;
	uint64_t got = 0;
	struct forge f = { .extra = 3, .linked = 3, .chunk = 1000, .proto = IPPROTO_TCP_ };
	bool intact;

	conn_open(&k, "chainok", 256);
	f.seq = rcv_nxt(&k);
	inject(&k, &f);
	tap_eq(rcv_nxt(&k) - f.seq, 4000u, "an in-order chain is taken whole");
	intact = drain_check(&k, &got);
	tap_ok(intact && got == 4000, "its four parts read back in order (%llu bytes)",
	       (unsigned long long)got);
	tap_eq(fx_counter(k.s, "loopback_unchained"), 0, "nothing was cut");
	tap_ok(conn_close(&k), "every buffer back in the pool");
}

static void test_forged_out_of_order(void)
{
	struct conn k;
	struct forge f = { .extra = 4, .linked = 4, .chunk = 500, .proto = IPPROTO_TCP_ };
	const struct sl_sock *d;
	uint32_t nxt;

	conn_open(&k, "chainooo", 256);
	nxt = rcv_nxt(&k);
	f.seq = nxt + 700;
	inject(&k, &f);
	d = sl_sock(k.s, (uint32_t)k.d);
	tap_eq(fx_counter(k.s, "loopback_unchained"), 1, "an out-of-order chain is cut");
	tap_ok(d->tcp.ooo_count == 1 && d->tcp.ooo_bytes == 500,
	       "its first buffer waits out of order (%u segments, %u bytes)", d->tcp.ooo_count,
	       d->tcp.ooo_bytes);
	tap_eq(rcv_nxt(&k), nxt, "nothing was delivered");

	/* A chain beyond the window is cut too, and its head taken. */
	f.seq = nxt;
	f.extra = f.linked = 32;
	f.chunk = 1900;
	sl_sock(k.s, (uint32_t)k.d)->tcp.rcv_adv = nxt + 4000;
	inject(&k, &f);
	tap_eq(fx_counter(k.s, "loopback_unchained"), 2, "a chain past the window is cut");
	tap_eq(rcv_nxt(&k) - nxt, 1900u, "its first buffer is taken");
	tap_ok(conn_close(&k), "every buffer back in the pool");
}

static void test_forged_malformed(void)
{
	struct conn k;
	struct forge f = { .extra = 2, .linked = 2, .chunk = 800, .proto = IPPROTO_ICMP_ };
	uint64_t bad0;

	conn_open(&k, "chainbad", 256);
	bad0 = fx_counter(k.s, "ip_rx_bad_hdr");
	f.seq = rcv_nxt(&k);
	inject(&k, &f);
	tap_eq(fx_counter(k.s, "ip_rx_bad_hdr") - bad0, 1,
	       "a chain that is neither TCP nor UDP (large datagrams) is dropped");
	f.proto = IPPROTO_TCP_;
	f.tot_delta = -1;
	inject(&k, &f);
	tap_eq(fx_counter(k.s, "ip_rx_bad_hdr") - bad0, 2,
	       "a chain longer than its IPv4 length is dropped");
	f.tot_delta = 1;
	inject(&k, &f);
	tap_eq(fx_counter(k.s, "ip_rx_bad_hdr") - bad0, 3,
	       "a chain shorter than its IPv4 length is dropped");
	tap_eq(rcv_nxt(&k), f.seq, "none of them was delivered");
	tap_ok(conn_close(&k), "every buffer back in the pool");

	/* A head that counts more buffers than follow it: the chain runs on
	 * into whatever comes next, and nothing can be trusted. */
	conn_open(&k, "chaincut", 256);
	f.tot_delta = 0;
	f.seq = rcv_nxt(&k);
	f.linked = 1;
	inject(&k, &f);
	tap_eq(fx_counter(k.s, "corrupt_chain"), 1, "a chain short of buffers is caught");
	tap_eq(sluice_send(ST(k.s), k.c, "x", 1, MSG_DONTWAIT), -ENOTRECOVERABLE,
	       "and the stack reports itself broken");
	fx_destroy(k.s);
}

int main(void)
{
	test_stream();
	test_tail_not_held();
	test_forged_in_order();
	test_forged_out_of_order();
	test_forged_malformed();
	return tap_done();
}
