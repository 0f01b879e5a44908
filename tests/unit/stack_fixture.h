/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test fixture for the stack: a stack with a unique name, a virtual clock,
 * and a capture link that records every frame the stack sends.
 */
#ifndef SLUICE_TESTS_STACK_FIXTURE_H
#define SLUICE_TESTS_STACK_FIXTURE_H

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "tap.h"

#define CAP_MAX 64

struct capture {
	struct sl_link link;
	unsigned int n;
	uint32_t nh[CAP_MAX];
	uint16_t len[CAP_MAX];
	uint8_t frame[CAP_MAX][2048];
};

static uint64_t fx_clock_us = 1000000;

static inline uint64_t fx_clock(void *arg)
{
	(void)arg;
	return fx_clock_us;
}

static inline int cap_tx(struct sl_link *l, struct sl_stack *s, uint32_t idx, uint32_t nh)
{
	struct capture *c = (struct capture *)l;

	if (c->n < CAP_MAX) {
		c->nh[c->n] = nh;
		c->len[c->n] = sl_buf(s, idx)->len;
		memcpy(c->frame[c->n], sl_buf_data(s, idx), sl_buf(s, idx)->len);
		c->n++;
	}
	return 0;
}

static const struct sl_link_ops cap_ops = { .name = "capture", .tx = cap_tx };

/* A real-time stack named t-TAG-PID on ip/24 with the sizes given. */
static inline struct sl_stack *fx_stack_sized(const char *tag, const char *ip, uint32_t n_bufs,
					      uint32_t max_sockets)
{
	struct sluice_stack_config cfg = { .n_bufs = n_bufs, .max_sockets = max_sockets };
	struct sluice_stack *st;
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "t-%s-%d", tag, (int)getpid());
	sluice_stack_destroy(name);
	inet_pton(AF_INET, ip, &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	ret = sluice_stack_create(name, &cfg, &st);
	if (ret) {
		printf("Bail out! cannot create stack %s: %d\n", name, ret);
		exit(1);
	}
	return (struct sl_stack *)st;
}

static inline struct sl_stack *fx_stack(const char *tag, const char *ip, struct capture *cap)
{
	struct sluice_stack *st = (struct sluice_stack *)fx_stack_sized(tag, ip, 256, 64);

	sluice_stack_set_clock(st, fx_clock, NULL);
	if (cap) {
		memset(cap, 0, sizeof(*cap));
		cap->link.ops = &cap_ops;
		cap->link.mtu = 1500;
		((struct sl_stack *)st)->link = &cap->link;
	}
	return (struct sl_stack *)st;
}

static inline void fx_destroy(struct sl_stack *s)
{
	char name[SLUICE_NAME_MAX];

	memcpy(name, s->name, sizeof(name));
	s->link = NULL;
	sluice_stack_close((struct sluice_stack *)s);
	sluice_stack_destroy(name);
}

/* Put an IPv4 packet (header + payload given) into a buffer and input it. */
static inline void fx_input(struct sl_stack *s, const void *pkt, size_t len)
{
	uint32_t idx;

	sl_lock(s);
	idx = sl_buf_alloc(s);
	if (idx != SLUICE_IDX_NONE) {
		memcpy(sl_buf_data(s, idx), pkt, len);
		sl_buf(s, idx)->len = (uint16_t)len;
		sl_ip_input(s, idx);
	}
	sl_unlock(s);
}

/* Build IPv4 + payload into out; returns the total length. */
static inline size_t fx_ip(uint8_t *out, const char *src, const char *dst, uint8_t proto,
			   const void *payload, size_t plen)
{
	struct sl_ip *ip = (struct sl_ip *)out;

	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tot_len = htons(sizeof(*ip) + plen);
	ip->ttl = 64;
	ip->proto = proto;
	inet_pton(AF_INET, src, &ip->saddr);
	inet_pton(AF_INET, dst, &ip->daddr);
	memcpy(ip + 1, payload, plen);
	ip->csum = sl_ip_csum(ip);
	return sizeof(*ip) + plen;
}

static inline struct sockaddr_in fx_addr(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static inline uint64_t fx_counter(struct sl_stack *s, const char *name)
{
	uint64_t v = 0;

	sluice_stack_counter((struct sluice_stack *)s, name, &v);
	return v;
}

static inline double fx_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Connect a non-blocking client to listener l (bound to ip:port) in stack
 * s and accept it: *c the client, *d the server side.  0, or -1 if no
 * connection came within 5 s. */
static inline int fx_tcp_pair(struct sl_stack *s, const char *ip, uint16_t port, int l, int *c,
			      int *d)
{
	struct sluice_stack *st = (struct sluice_stack *)s;
	struct sockaddr_in a = fx_addr(ip, port);

	*c = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (*c < 0)
		return -1;
	sluice_connect(st, *c, &a);
	for (double end = fx_now_s() + 5; fx_now_s() < end;) {
		*d = sluice_accept(st, l, NULL);
		if (*d >= 0)
			return 0;
		sluice_stack_poll(st);
	}
	return -1;
}

#endif /* SLUICE_TESTS_STACK_FIXTURE_H */
