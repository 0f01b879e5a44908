// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a 64-byte message costs on a TCP connection inside one stack
 * (issue 18's ping-pong, both ends in this process, native API), counted
 * where it does not depend on the machine's load:
 *
 *   client --send--> [lock hold: TCP output, loopback queue, drain at
 *   sl_unlock(): IP and TCP input of the server's socket] --recv--> server
 *
 *  - one clock reading a lock hold: the send's, which the drain of its
 *    own segment shares (sl_now_held()); the receive's one;
 *  - every message's segment takes header prediction (tcp_rx_predicted;
 *    an ACK on its own may too).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sluice/sluice.h>

#include "tap.h"

#define MSGS	100

static unsigned long readings;

static uint64_t counting_clock(void *arg)
{
	struct timespec ts;

	(void)arg;
	readings++;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t counter(struct sluice_stack *st, const char *name)
{
	uint64_t v = 0;

	sluice_stack_counter(st, name, &v);
	return v;
}

int main(void)
{
	struct sluice_stack_config cfg = { .max_sockets = 16, .n_bufs = 256 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7391) };
	struct sluice_stack *st;
	unsigned long send_max = 0, recv_max = 0, r0;
	uint64_t pred0;
	char buf[64];
	int l, c, s = -1, one = 1, bad = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(buf, 'm', sizeof(buf));
	sluice_stack_destroy("t-path-cost");
	if (sluice_stack_create("t-path-cost", &cfg, &st)) {
		printf("Bail out! stack\n");
		return 1;
	}
	sluice_stack_set_clock(st, counting_clock, NULL);
	l = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_ok(!sluice_bind(st, l, &a) && !sluice_listen(st, l, 4), "listening on 127.0.0.1");
	c = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(st, c, &a);
	for (int i = 0; i < 100 && s < 0; i++) {
		sluice_stack_poll(st);
		s = sluice_accept(st, l, NULL);
	}
	tap_ok(s >= 0, "connected inside the stack");
	sluice_setsockopt(st, c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	sluice_setsockopt(st, s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	pred0 = counter(st, "tcp_rx_predicted");
	for (int i = 0; i < MSGS; i++) {
		r0 = readings;
		bad += sluice_send(st, i & 1 ? s : c, buf, sizeof(buf), MSG_DONTWAIT) != 64;
		if (readings - r0 > send_max)
			send_max = readings - r0;
		r0 = readings;
		bad += sluice_recv(st, i & 1 ? c : s, buf, sizeof(buf), MSG_DONTWAIT) != 64;
		if (readings - r0 > recv_max)
			recv_max = readings - r0;
	}
	tap_ok(!bad, "%d messages each way in turn, each sent and received whole", MSGS / 2);
	tap_ok(send_max == 1, "a send and its delivery to the peer: one clock reading (at most %lu)",
	       send_max);
	tap_ok(recv_max == 1, "a receive: one clock reading (at most %lu)", recv_max);
	pred0 = counter(st, "tcp_rx_predicted") - pred0;
	tap_ok(pred0 >= MSGS, "every message's segment took header prediction (%llu segments for %d)",
	       (unsigned long long)pred0, MSGS);

	sluice_close(st, c);
	sluice_close(st, s);
	sluice_close(st, l);
	sluice_stack_close(st);
	sluice_stack_destroy("t-path-cost");
	return tap_done();
}
