// SPDX-License-Identifier: BSD-2-Clause
/*
 * lossy_relay: a user-space stand-in for netem on a host whose kernel has
 * none (tests/bench/lossy_host.sh).  It bridges two interfaces at layer 2
 * with AF_PACKET sockets and, each way, drops IPv4 frames with probability
 * LOSS (seeded, so a run can be repeated) and holds every frame DELAY_US
 * before passing it on, in order.  Frames other than IPv4 (ARP) are delayed,
 * never dropped.  Runs until SECONDS pass or SIGTERM, then prints what it
 * did on stderr.
 *
 *   lossy_relay IF_A IF_B DELAY_US LOSS_PERCENT SEED SECONDS
 *
 * The frames must be at most one MTU: turn TSO/GSO off on the senders.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX	2048
#define QLEN		32768		/* frames held each way */

struct frame {
	uint64_t due_ns;
	uint16_t len;
	unsigned char data[FRAME_MAX];
};

struct way {
	int in, out;
	struct frame *q;
	uint32_t head, tail;		/* q[head..tail) held */
	uint64_t rx, tx, lost, overflow, sendfail;
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng;

static uint64_t next_rand(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static int open_if(const char *name)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	int one = 1, big = 32 << 20;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));

	if (fd < 0) {
		perror("socket(AF_PACKET)");
		exit(1);
	}
	sll.sll_ifindex = (int)if_nametoindex(name);
	if (!sll.sll_ifindex) {
		fprintf(stderr, "lossy_relay: no interface %s\n", name);
		exit(1);
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("bind");
		exit(1);
	}
	/* Our own sends are not frames to relay back. */
	setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	return fd;
}

/* Takes what arrived on w->in into its queue, dropping by LOSS. */
static void take(struct way *w, uint64_t delay_ns, uint64_t loss_scaled)
{
	for (;;) {
		struct frame *f = &w->q[w->tail % QLEN];
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		if (w->tail - w->head == QLEN) {
			/* Full: read into a scratch frame and drop it. */
			static unsigned char scratch[FRAME_MAX];

			n = recvfrom(w->in, scratch, sizeof(scratch), 0, NULL, NULL);
			if (n < 0)
				return;
			w->rx++;
			w->overflow++;
			continue;
		}
		n = recvfrom(w->in, f->data, sizeof(f->data), MSG_TRUNC,
			     (struct sockaddr *)&from, &fl);
		if (n < 0)
			return;
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		w->rx++;
		if (n > FRAME_MAX || n < 14) {
			w->overflow++;
			continue;
		}
		if (f->data[12] == 0x08 && f->data[13] == 0x00 &&
		    (next_rand() >> 11) < loss_scaled) {
			w->lost++;
			continue;
		}
		f->len = (uint16_t)n;
		f->due_ns = now_ns() + delay_ns;
		w->tail++;
	}
}

/* Sends what is due; returns the time of the next due frame, or 0. */
static uint64_t give(struct way *w, uint64_t now)
{
	while (w->head != w->tail) {
		struct frame *f = &w->q[w->head % QLEN];

		if (f->due_ns > now)
			return f->due_ns;
		if (send(w->out, f->data, f->len, 0) < 0) {
			if (errno == EAGAIN || errno == ENOBUFS) {
				struct pollfd p = { .fd = w->out, .events = POLLOUT };

				poll(&p, 1, 1);
				continue;
			}
			w->sendfail++;
		} else {
			w->tx++;
		}
		w->head++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct way w[2];
	uint64_t delay_ns, loss_scaled, end;
	double loss;
	int a, b, i;

	if (argc != 7) {
		fprintf(stderr, "usage: lossy_relay IF_A IF_B DELAY_US LOSS_PERCENT SEED SECONDS\n");
		return 2;
	}
	a = open_if(argv[1]);
	b = open_if(argv[2]);
	delay_ns = strtoull(argv[3], NULL, 10) * 1000;
	loss = strtod(argv[4], NULL);
	/* LOSS as a fraction of 2^53 (the top bits of next_rand()). */
	loss_scaled = (uint64_t)(loss / 100.0 * (double)(1ull << 53));
	rng = strtoull(argv[5], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
	end = now_ns() + strtoull(argv[6], NULL, 10) * 1000000000ull;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	memset(w, 0, sizeof(w));
	w[0].in = a, w[0].out = b;
	w[1].in = b, w[1].out = a;
	for (i = 0; i < 2; i++) {
		w[i].q = calloc(QLEN, sizeof(struct frame));
		if (!w[i].q) {
			perror("calloc");
			return 1;
		}
	}
	while (!stop) {
		struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };
		uint64_t now = now_ns(), next = 0, t;
		struct timespec ts;

		if (now >= end)
			break;
		for (i = 0; i < 2; i++) {
			t = give(&w[i], now);
			if (t && (!next || t < next))
				next = t;
		}
		if (!next || next > end)
			next = end;
		t = next > now ? next - now : 0;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
		if (ppoll(p, 2, &ts, NULL) < 0 && errno != EINTR)
			break;
		for (i = 0; i < 2; i++)
			take(&w[i], delay_ns, loss_scaled);
	}
	for (i = 0; i < 2; i++)
		fprintf(stderr, "lossy_relay %s->%s: %llu frames in, %llu out, %llu lost, "
			"%llu over the queue, %llu send errors\n",
			argv[1 + i], argv[2 - i], (unsigned long long)w[i].rx,
			(unsigned long long)w[i].tx, (unsigned long long)w[i].lost,
			(unsigned long long)w[i].overflow, (unsigned long long)w[i].sendfail);
	return 0;
}
