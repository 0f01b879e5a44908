// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two stacks over the in-memory loop link, through the native API, on a
 * virtual clock:
 *
 *   stack A 10.7.0.1  <== loop link (delay, optional loss) ==>  stack B 10.7.0.2:80
 *
 * Connection refused, a bulk transfer (CUBIC must open the window), many
 * connections at once, orderly close on both sides; no socket or buffer
 * is left once TIME-WAIT has run out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api.h"
#include "tap.h"

static uint64_t vnow = 5000000;

static uint64_t vclock(void *arg)
{
	(void)arg;
	return vnow;
}

struct pair {
	struct sluice_stack *a, *b;
	char na[32], nb[32];
	uint32_t freea, freeb;
};

static struct sockaddr_in addr(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static struct sluice_stack *mk(const char *name, const char *ip)
{
	struct sluice_stack_config cfg = { .n_bufs = 2048, .max_sockets = 128 };
	struct sluice_stack *st;

	sluice_stack_destroy(name);
	inet_pton(AF_INET, ip, &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	if (sluice_stack_create(name, &cfg, &st)) {
		printf("Bail out! cannot create %s\n", name);
		exit(1);
	}
	sluice_stack_set_clock(st, vclock, NULL);
	return st;
}

static void pair_up(struct pair *p, const char *tag, const struct sluice_loop_faults *f)
{
	snprintf(p->na, sizeof(p->na), "t-tl%sA-%d", tag, (int)getpid());
	snprintf(p->nb, sizeof(p->nb), "t-tl%sB-%d", tag, (int)getpid());
	p->a = mk(p->na, "10.7.0.1");
	p->b = mk(p->nb, "10.7.0.2");
	p->freea = ((struct sl_stack *)p->a)->lib->buf_free_count;
	p->freeb = ((struct sl_stack *)p->b)->lib->buf_free_count;
	sluice_link_loop(p->a, p->b, f);
}

static void step(struct pair *p)
{
	sluice_stack_poll(p->a);
	sluice_stack_poll(p->b);
	vnow += 1000;
}

static void pair_down(struct pair *p, const char *what)
{
	struct sl_stack *a = (struct sl_stack *)p->a, *b = (struct sl_stack *)p->b;

	for (int i = 0; i < 400000 && (a->r->sock_used || b->r->sock_used); i++)
		step(p);
	tap_ok(!a->r->sock_used && !b->r->sock_used, "%s: every socket released", what);
	tap_ok(a->lib->buf_free_count == p->freea && b->lib->buf_free_count == p->freeb,
	       "%s: every buffer back", what);
	sluice_stack_close(p->a);
	sluice_stack_close(p->b);
	sluice_stack_destroy(p->na);
	sluice_stack_destroy(p->nb);
}

static int listener(struct pair *p)
{
	struct sockaddr_in srv = addr("10.7.0.2", 80);
	int l = sluice_socket(p->b, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

	sluice_bind(p->b, l, &srv);
	sluice_listen(p->b, l, 64);
	return l;
}

static void test_loop_refused(void)
{
	struct sluice_loop_faults f = { .delay_us = 1000 };
	struct sockaddr_in srv = addr("10.7.0.2", 81);
	struct sluice_pollfd pf;
	struct pair p;
	int sd, err = 0, n = 0;
	unsigned int len = sizeof(err);

	pair_up(&p, "r", &f);
	sd = sluice_socket(p.a, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_connect(p.a, sd, &srv), -EINPROGRESS, "non-blocking connect: EINPROGRESS");
	do {
		step(&p);
		pf = (struct sluice_pollfd){ .sd = sd, .events = POLLOUT };
	} while (sluice_poll(p.a, &pf, 1, 0) == 0 && ++n < 1000);
	tap_ok(pf.revents & POLLERR, "no listener: the RST shows as POLLERR");
	sluice_getsockopt(p.a, sd, SOL_SOCKET, SO_ERROR, &err, &len);
	tap_eq(err, ECONNREFUSED, "SO_ERROR: ECONNREFUSED");
	sluice_close(p.a, sd);
	pair_down(&p, "refused");
}

static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 131 + (i >> 11));
}

static void test_loop_bulk(void)
{
	struct sluice_loop_faults f = { .delay_us = 5000 };
	struct sockaddr_in srv = addr("10.7.0.2", 80);
	const size_t total = 4u << 20;
	size_t sent = 0, got = 0;
	uint8_t buf[16384];
	struct pair p;
	int l, c, s = -1, bad = 0;
	uint64_t t0;
	struct tcp_info ti;
	unsigned int tlen = sizeof(ti);
	bool eof = false;

	pair_up(&p, "b", &f);
	l = listener(&p);
	c = sluice_socket(p.a, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(p.a, c, &srv);
	t0 = vnow;
	for (int i = 0; i < 600000 && !eof; i++) {
		long n = -EAGAIN;

		step(&p);
		if (s < 0)
			s = sluice_accept(p.b, l, NULL);
		while (sent < total) {
			size_t k = total - sent < sizeof(buf) ? total - sent : sizeof(buf);

			for (size_t j = 0; j < k; j++)
				buf[j] = pat(sent + j);
			n = sluice_send(p.a, c, buf, k, MSG_DONTWAIT);
			if (n <= 0)
				break;
			sent += (size_t)n;
			if (sent == total)
				sluice_shutdown(p.a, c, SHUT_WR);
		}
		while (s >= 0 && (n = sluice_recv(p.b, s, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
			for (long j = 0; j < n; j++)
				bad |= buf[j] != pat(got + (size_t)j);
			got += (size_t)n;
		}
		if (s >= 0 && n == 0)
			eof = true;
	}
	tap_ok(eof && got == total && !bad, "4 MiB arrive intact, then EOF");
	/* 10 ms RTT: 4 MiB in well under 10 s needs a window far past IW. */
	tap_ok(vnow - t0 < 10000000ull, "bulk took %llu ms of virtual time",
	       (unsigned long long)((vnow - t0) / 1000));
	sluice_getsockopt(p.a, c, IPPROTO_TCP, TCP_INFO, &ti, &tlen);
	tap_ok(ti.tcpi_snd_cwnd > 10, "cwnd grew past the initial window (%u segments)",
	       ti.tcpi_snd_cwnd);
	tap_ok(ti.tcpi_rtt >= 10000 && ti.tcpi_rtt < 100000, "SRTT near the 10 ms path (%u us)",
	       ti.tcpi_rtt);
	sluice_close(p.a, c);
	sluice_close(p.b, s);
	sluice_close(p.b, l);
	pair_down(&p, "bulk");
}

#define NCONN 40

static void test_loop_many(const char *what, const struct sluice_loop_faults *f)
{
	struct sockaddr_in srv = addr("10.7.0.2", 80);
	int c[NCONN], s[NCONN], l, ns = 0, done = 0;
	size_t got[NCONN] = { 0 }, echoed[NCONN] = { 0 };
	uint8_t buf[4096];
	struct pair p;

	pair_up(&p, what, f);
	l = listener(&p);
	for (int i = 0; i < NCONN; i++) {
		c[i] = sluice_socket(p.a, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		sluice_connect(p.a, c[i], &srv);
		s[i] = -1;
	}
	memset(buf, 'x', sizeof(buf));
	for (int r = 0; r < 600000 && done < NCONN; r++) {
		int k;

		step(&p);
		while (ns < NCONN && (k = sluice_accept(p.b, l, NULL)) >= 0)
			s[ns++] = k;
		for (int i = 0; i < NCONN; i++) {
			long n;

			/* Client i sends 10000 bytes; server echoes; client closes. */
			if (echoed[i] < 10000) {
				n = sluice_send(p.a, c[i], buf, 10000 - echoed[i] < sizeof(buf) ?
					10000 - echoed[i] : sizeof(buf), MSG_DONTWAIT);
				if (n > 0) {
					echoed[i] += (size_t)n;
					if (echoed[i] == 10000)
						sluice_shutdown(p.a, c[i], SHUT_WR);
				}
			}
			if (i < ns) {
				while ((n = sluice_recv(p.b, s[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
					sluice_send(p.b, s[i], buf, (size_t)n, MSG_DONTWAIT);
				if (n == 0 && s[i] >= 0) {
					sluice_close(p.b, s[i]);
					s[i] = -2;
				}
			}
			if (c[i] >= 0) {
				while ((n = sluice_recv(p.a, c[i], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
					got[i] += (size_t)n;
				if (n == 0) {
					sluice_close(p.a, c[i]);
					c[i] = -1;
					done++;
				}
			}
		}
	}
	int all = 1;

	for (int i = 0; i < NCONN; i++)
		all &= got[i] == 10000;
	tap_ok(done == NCONN && all, "%s: %d connections each echo 10000 bytes and close", what,
	       NCONN);
	sluice_close(p.b, l);
	pair_down(&p, what);
}

int main(void)
{
	const struct sluice_loop_faults clean = { .delay_us = 1000 };
	const struct sluice_loop_faults lossy = { .seed = 7, .loss_ppm = 30000,
						  .reorder_ppm = 30000, .delay_us = 1000 };

	test_loop_refused();
	test_loop_bulk();
	test_loop_many("many", &clean);
	test_loop_many("many-lossy", &lossy);
	return tap_done();
}
