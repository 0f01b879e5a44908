// SPDX-License-Identifier: BSD-2-Clause
/*
 * http_many ADDR PORT CONNECTIONS SECONDS: a keep-alive HTTP load
 * generator shaped as wrk's (one thread, level-triggered epoll, every
 * connection keeps one GET in flight; EPOLLOUT asked for only while a
 * request is to be written, then the request is written at once), which
 * also says where each connection's time went: per connection, how many
 * responses it got and its longest wait, when it finished connecting,
 * and how long it spent between a response and its next request.
 * Prints one line of key=value figures (latencies in ms).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
	int fd;
	bool connected, writing;
	uint64_t start;		/* request written at (us) */
	uint64_t done_at;	/* last response complete (us) */
	uint64_t conn_at;	/* connect finished (us from the start) */
	uint64_t idle;		/* us between a response and the next write */
	uint64_t maxlat;
	uint32_t n;
	size_t got, want;	/* bytes of the current response */
	size_t hdr;		/* header length once seen, else 0 */
};

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static int cmp64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static char req[128];
static size_t reqlen;
static int ep;

static void want_out(struct conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };

	if (c->writing != on) {
		c->writing = on;
		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

/* Parse what came: headers, then Content-Length bytes.  Returns true when
 * a response is complete (keeps any excess: none with one in flight). */
static bool take(struct conn *c, const char *buf, size_t len, char *hbuf, size_t *hlen)
{
	c->got += len;
	if (!c->hdr) {
		size_t room = 4096 - *hlen, k = len < room ? len : room;
		char *e, *cl;

		memcpy(hbuf + *hlen, buf, k);
		*hlen += k;
		hbuf[*hlen] = 0;
		e = strstr(hbuf, "\r\n\r\n");
		if (!e)
			return false;
		c->hdr = (size_t)(e - hbuf) + 4;
		cl = strcasestr(hbuf, "Content-Length:");
		c->want = c->hdr + (cl ? strtoul(cl + 15, NULL, 10) : 0);
	}
	return c->got >= c->want;
}

int main(int argc, char **argv)
{
	static char buf[65536];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event *evs;
	struct conn *cs;
	char (*hb)[4097];
	size_t *hl;
	uint64_t t0, end, *lat, nlat = 0, cap_lat, total = 0;
	int nconn, secs, fails = 0, f_conn = 0, f_write = 0, f_read = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: http_many ADDR PORT CONNECTIONS SECONDS\n");
		return 2;
	}
	inet_pton(AF_INET, argv[1], &sa.sin_addr);
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	nconn = atoi(argv[3]);
	secs = atoi(argv[4]);
	reqlen = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: %s:%s\r\n\r\n",
				  argv[1], argv[2]);
	cs = calloc((size_t)nconn, sizeof(*cs));
	hb = calloc((size_t)nconn, sizeof(*hb));
	hl = calloc((size_t)nconn, sizeof(*hl));
	evs = calloc((size_t)nconn, sizeof(*evs));
	cap_lat = 1 << 24;
	lat = malloc(cap_lat * sizeof(*lat));
	ep = epoll_create1(0);
	if (!cs || !hb || !hl || !evs || !lat || ep < 0)
		return 1;
	t0 = now_us();
	for (int i = 0; i < nconn; i++) {
		struct conn *c = &cs[i];
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };

		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (c->fd < 0) {
			perror("socket");
			return 1;
		}
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
			perror("connect");
			return 1;
		}
		c->writing = true;
		epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
	}
	end = t0 + (uint64_t)secs * 1000000;
	for (;;) {
		uint64_t t = now_us();
		int k;

		if (t >= end)
			break;
		k = epoll_wait(ep, evs, nconn, (int)((end - t) / 1000) + 1);
		for (int j = 0; j < k; j++) {
			struct conn *c = evs[j].data.ptr;
			size_t i = (size_t)(c - cs);

			t = now_us();
			if ((evs[j].events & EPOLLOUT) && c->writing) {
				if (!c->connected) {
					int err = 0;
					socklen_t l = sizeof(err);

					getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
					if (err) {
						fails++;
						f_conn++;
						want_out(c, false);
						epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
						continue;
					}
					c->connected = true;
					c->conn_at = t - t0;
				} else {
					c->idle += t - c->done_at;
				}
				if (write(c->fd, req, reqlen) != (ssize_t)reqlen) {
					if (!f_write)
						fprintf(stderr, "write: %s (after %s)\n", strerror(errno),
							c->n ? "a response" : "connect");
					fails++;
					f_write++;
					want_out(c, false);
					epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
					continue;
				}
				c->start = now_us();
				c->got = c->hdr = 0;
				hl[i] = 0;
				want_out(c, false);
			}
			if (evs[j].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
				ssize_t r = read(c->fd, buf, sizeof(buf));

				if (r <= 0) {
					if (r < 0 && errno == EAGAIN)
						continue;
					fails++;
					f_read++;
					epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
					continue;
				}
				if (take(c, buf, (size_t)r, hb[i], &hl[i])) {
					uint64_t d;

					t = now_us();
					d = t - c->start;
					c->n++;
					total++;
					if (d > c->maxlat)
						c->maxlat = d;
					if (nlat < cap_lat)
						lat[nlat++] = d;
					c->done_at = t;
					want_out(c, true);
				}
			}
		}
	}
	{
		double el = (double)(now_us() - t0) / 1e6;
		uint32_t *per = malloc((size_t)nconn * sizeof(*per));
		uint64_t *mx = malloc((size_t)nconn * sizeof(*mx));
		uint64_t lastconn = 0, idle = 0, sum = 0;
		int never = 0;

		for (int i = 0; i < nconn; i++) {
			per[i] = cs[i].n;
			mx[i] = cs[i].maxlat;
			if (cs[i].conn_at > lastconn)
				lastconn = cs[i].conn_at;
			idle += cs[i].idle;
			never += !cs[i].n;
		}
		for (uint64_t i = 0; i < nlat; i++)
			sum += lat[i];
		qsort(per, (size_t)nconn, sizeof(*per), cmp32);
		qsort(mx, (size_t)nconn, sizeof(*mx), cmp64);
		qsort(lat, nlat, sizeof(*lat), cmp64);
#define PCT(a, n, p) ((a)[(size_t)((double)(n) * (p)) < (n) ? (size_t)((double)(n) * (p)) : (n) - 1])
		printf("rps=%.0f mean=%.1f p50=%.1f p99=%.1f max=%.1f "
		       "per_conn_min=%u per_conn_p1=%u per_conn_p50=%u per_conn_max=%u never=%d "
		       "conn_maxlat_p50=%.1f last_connect=%.1f idle_share=%.3f fails=%d (connect %d write %d read %d)\n",
		       (double)total / el, nlat ? (double)sum / (double)nlat / 1e3 : 0,
		       nlat ? PCT(lat, nlat, 0.5) / 1e3 : 0, nlat ? PCT(lat, nlat, 0.99) / 1e3 : 0,
		       nlat ? lat[nlat - 1] / 1e3 : 0,
		       per[0], PCT(per, (size_t)nconn, 0.01), PCT(per, (size_t)nconn, 0.5),
		       per[nconn - 1], never, PCT(mx, (size_t)nconn, 0.5) / 1e3,
		       (double)lastconn / 1e3, (double)idle / 1e6 / el / nconn, fails, f_conn, f_write, f_read);
	}
	return 0;
}
