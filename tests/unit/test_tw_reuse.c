// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ports for connect() and TIME-WAIT reuse, as Linux does them: an
 * ephemeral port picked by connect() is shared by connections to other
 * peers (the 4-tuple must be unique, lib/proto/sock.c sl_sock_bind_connect()),
 * a connection inside the stack in TIME-WAIT for a second gives its
 * 4-tuple to a new connect() (tcp_tw_reuse = 2), and a SYN with a newer
 * timestamp ends a TIME-WAIT on the listener's side (RFC 6191).  Without
 * these a stack could open only 28,232 connections a minute to one peer.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "stack_fixture.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define IP "10.8.0.1"
#define PORT_A 7430
#define PORT_B 7431

static struct sl_stack *s;
static int la, lb;

static int listener(uint16_t port)
{
	struct sockaddr_in a = fx_addr("0.0.0.0", port);
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 16);
	return l;
}

static void run(int rounds)
{
	for (int i = 0; i < rounds; i++)
		sluice_stack_poll(ST(s));
}

/* A connection from port `from`, or from + 1 if that is taken, to port
 * (listener l): *c client, *d server side; the client's port returned,
 * 0 if no connection came.  (A range of two ports starts at its low end:
 * connect() tries the low parity first, proto/sock.c.) */
static uint16_t open_from(uint16_t from, uint16_t port, int l, int *c, int *d)
{
	s->port_lo = from;
	s->port_hi = from + 1;
	if (fx_tcp_pair(s, IP, port, l, c, d)) {
		printf("# no connection to port %u\n", port);
		return 0;
	}
	return ntohs(sl_sock(s, (uint32_t)*c)->lport);
}

/* A connection to PORT_A from Linux's range: its client's port, 0 if
 * none came. */
static uint16_t open_any(int *c, int *d)
{
	if (fx_tcp_pair(s, IP, PORT_A, la, c, d))
		return 0;
	return ntohs(sl_sock(s, (uint32_t)*c)->lport);
}

/* Socket fd's connection has a TIME-WAIT entry (its slot is free). */
static bool tw_of(int fd)
{
	const struct sl_sock *so = sl_sock(s, (uint32_t)fd);

	return sl_tw_find(s, so->laddr, so->lport, so->raddr, so->rport) != NULL;
}

static uint64_t recycled(void)
{
	return fx_counter(s, "tcp_tw_recycled");
}

static void test_ports_shared_by_tuple(void)
{
	struct sockaddr_in any;
	int c1, d1, c2, d2, c3, d3, b;
	uint16_t p1, p2, p3;

	p1 = open_from(40000, PORT_A, la, &c1, &d1);
	tap_eq(p1, 40000, "connect() takes the first port of the range");
	p2 = open_from(40000, PORT_B, lb, &c2, &d2);
	tap_eq(p2, p1, "a connection to another peer shares it (4-tuple unique)");
	p3 = open_from(40000, PORT_A, la, &c3, &d3);
	tap_eq(p3, p1 + 1, "one to the same peer takes the next port");
	any = fx_addr("0.0.0.0", p1);
	b = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
	tap_eq(sluice_bind(ST(s), b, &any), -EADDRINUSE,
	       "bind() to a port connections use: EADDRINUSE");
	sluice_close(ST(s), b);
	for (int fd = 0; fd < 3; fd++) {
		int c = fd == 0 ? c1 : fd == 1 ? c2 : c3, d = fd == 0 ? d1 : fd == 1 ? d2 : d3;

		sluice_close(ST(s), d);
		sluice_close(ST(s), c);
	}
	run(20);
}

/* The client closes first and keeps TIME-WAIT on its 4-tuple. */
static void test_client_time_wait_recycled(void)
{
	int c, d, c2, d2;
	uint16_t p, p2;
	uint64_t r0 = recycled();
	char buf[8];

	p = open_from(41000, PORT_A, la, &c, &d);
	sluice_close(ST(s), c);
	run(10);
	sluice_close(ST(s), d);
	run(10);
	tap_ok(tw_of(c), "the client is in TIME-WAIT");

	fx_clock_us += 500000;
	p2 = open_from(41000, PORT_A, la, &c2, &d2);
	tap_eq(p2, p + 1, "half a second on, its 4-tuple is not taken: the next port");
	tap_eq(recycled() - r0, 0, "nothing recycled");
	sluice_close(ST(s), d2);
	sluice_close(ST(s), c2);
	run(20);

	fx_clock_us += 600000;
	p2 = open_from(41000, PORT_A, la, &c2, &d2);
	tap_eq(p2, p, "after a second the TIME-WAIT gives its 4-tuple to the new connection");
	tap_eq(recycled() - r0, 1, "counted in tcp_tw_recycled");
	tap_eq(sluice_send(ST(s), c2, "again", 5, 0), 5, "the new connection sends");
	run(10);
	tap_eq(sluice_recv(ST(s), d2, buf, sizeof(buf), MSG_DONTWAIT), 5, "and its peer reads");
	sluice_close(ST(s), d2);
	sluice_close(ST(s), c2);
	run(20);
}

/* The server closes first: its TIME-WAIT holds the 4-tuple, and the
 * client's port comes round again while the sequence numbers of the new
 * connection are below the old ones (more bytes went than the ISN clock
 * moved): the newer timestamp lets the listener take the SYN. */
static void test_server_time_wait_takes_newer_syn(void)
{
	static char big[200000];
	int c, d, c2, d2;
	uint16_t p;
	long got = 0, n;
	uint64_t syns0 = fx_counter(s, "tcp_passive_open"), ch0, rst0;

	p = open_from(42000, PORT_A, la, &c, &d);
	for (long sent = 0; sent < (long)sizeof(big);) {
		n = sluice_send(ST(s), c, big + sent, sizeof(big) - (size_t)sent, MSG_DONTWAIT);
		if (n > 0)
			sent += n;
		run(2);
		while ((n = sluice_recv(ST(s), d, big, sizeof(big), MSG_DONTWAIT)) > 0)
			got += n;
	}
	while ((n = sluice_recv(ST(s), d, big, sizeof(big), MSG_DONTWAIT)) > 0)
		got += n;
	tap_eq(got, (long)sizeof(big), "200000 bytes went");
	sluice_close(ST(s), d);
	run(10);
	sluice_close(ST(s), c);
	run(10);
	tap_ok(tw_of(d), "the server side is in TIME-WAIT");

	fx_clock_us += 20000;	/* the ISN clock moves 5000, far less than 200000 */
	ch0 = fx_counter(s, "tcp_challenge_ack");
	rst0 = fx_counter(s, "tcp_reset_tx");
	tap_eq(open_from(42000, PORT_A, la, &c2, &d2), p, "the client's port comes round again");
	tap_eq(fx_counter(s, "tcp_passive_open") - syns0, 2,
	       "the listener took the new SYN (RFC 6191, by timestamp)");
	tap_ok(fx_counter(s, "tcp_challenge_ack") == ch0 && fx_counter(s, "tcp_reset_tx") == rst0,
	       "at once: no challenge ACK, no reset");
	sluice_close(ST(s), d2);
	sluice_close(ST(s), c2);
	run(20);
}

/* Ports as Linux picks them: within ip_local_port_range, never one of
 * ip_local_reserved_ports, connect() the range's low parity first and
 * bind(0) the other, each destination from its own hashed start, and
 * every port of the range used before EADDRNOTAVAIL. */
static void test_port_range(void)
{
	struct sockaddr_in a = fx_addr(IP, PORT_A), any = fx_addr("0.0.0.0", 0);
	int c[10], d[10], n, u, ret;
	bool in_range = true, reserved = false, low_parity_first = true, all_even = true;
	bool differ = false, reused = false;
	uint16_t recent[5] = { 0 };
	uint16_t first[8], p;

	s->port_lo = 50000;
	s->port_hi = 50009;
	s->port_reserved[50002 / 64] |= 1ull << (50002 % 64);
	s->port_reserved_any = true;
	for (n = 0; n < 10; n++) {
		if (fx_tcp_pair(s, IP, PORT_A, la, &c[n], &d[n])) {
			sluice_close(ST(s), c[n]);
			break;
		}
		p = ntohs(sl_sock(s, (uint32_t)c[n])->lport);
		in_range &= p >= 50000 && p <= 50009;
		reserved |= p == 50002;
		if (n < 4)
			low_parity_first &= !(p & 1);
	}
	tap_eq(n, 9, "a range of ten ports, one reserved: nine connections to one peer");
	tap_ok(in_range && !reserved, "all from the range, none the reserved port");
	tap_ok(low_parity_first, "the four even ports first (the range's low end is even)");
	c[9] = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_connect(ST(s), c[9], &a), -EADDRNOTAVAIL,
	       "the tenth: EADDRNOTAVAIL, as Linux");
	sluice_close(ST(s), c[9]);

	u = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	ret = sluice_bind(ST(s), u, &any);
	p = ntohs(sl_sock(s, (uint32_t)u)->lport);
	tap_ok(ret == 0 && p >= 50000 && p <= 50009 && (p & 1),
	       "bind() to port 0: a port of the range, odd first (port %u)", p);
	sluice_close(ST(s), u);
	for (int i = 0; i < n; i++) {
		sluice_close(ST(s), d[i]);
		sluice_close(ST(s), c[i]);
	}
	run(20);

	s->port_lo = s->port_hi = 0;
	s->port_reserved[50002 / 64] = 0;
	s->port_reserved_any = false;
	for (int i = 0; i < 8; i++) {
		struct sockaddr_in to = fx_addr(IP, (uint16_t)(7500 + i));

		c[i] = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		sluice_connect(ST(s), c[i], &to);
		first[i] = ntohs(sl_sock(s, (uint32_t)c[i])->lport);
		all_even &= first[i] >= 32768 && first[i] <= 60999 && !(first[i] & 1);
	}
	tap_ok(all_even, "Linux's default range, even ports first");
	for (int i = 1; i < 8; i++)
		differ |= first[i] != first[0];
	tap_ok(differ, "eight destinations: not all from one start (%u %u %u ...)", first[0], first[1],
	       first[2]);
	for (int i = 0; i < 8; i++)
		sluice_close(ST(s), c[i]);
	run(20);

	/* Connections to one peer from 200 ports, each closed before the
	 * next, mostly by the server first (its TIME-WAIT holds the
	 * 4-tuple), every fifth by the client (its TIME-WAIT makes a later
	 * connect() pass its port by, once the search comes round): none
	 * comes from one of the last five ports, where the new SYN could
	 * meet the old TIME-WAIT within its millisecond, be taken for an old
	 * duplicate and answered with an ACK (a second's stall). */
	s->port_lo = 50000;
	s->port_hi = 50199;
	for (int i = 0; i < 150 && !reused; i++) {
		fx_clock_us += 1000;	/* a connection a millisecond */
		p = open_any(&c[0], &d[0]);
		for (int j = 0; j < 5; j++)
			reused |= !p || recent[j] == p;
		recent[i % 5] = p;
		sluice_close(ST(s), i % 5 ? d[0] : c[0]);
		run(4);
		sluice_close(ST(s), i % 5 ? c[0] : d[0]);
		run(4);
	}
	tap_ok(!reused, "150 connections to one peer in a row: each from a port not among the last five");
	s->port_lo = s->port_hi = 0;
}

int main(void)
{
	uint32_t free0;

	s = fx_stack("twreuse", IP, NULL);
	free0 = s->lib->buf_free_count;
	la = listener(PORT_A);
	lb = listener(PORT_B);
	test_ports_shared_by_tuple();
	test_client_time_wait_recycled();
	test_server_time_wait_takes_newer_syn();
	test_port_range();
	sluice_close(ST(s), la);
	sluice_close(ST(s), lb);
	fx_clock_us += 2 * SL_TCP_TIME_WAIT_US;
	run(20);
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool");
	fx_destroy(s);
	return tap_done();
}
