// SPDX-License-Identifier: BSD-2-Clause
/*
 * UDP over the stack: loopback within one stack (never the link), bind
 * rules, connected sockets and ICMP port unreachable, broadcast, limits,
 * and two stacks over the loop link.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))

static void test_loopback_within_stack(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("udplo", "10.1.0.1", &cap);
	struct sockaddr_in a = fx_addr("10.1.0.1", 5000), from;
	uint32_t free0 = s->lib->buf_free_count;
	int srv, cli;
	char buf[64];
	long n;

	srv = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	cli = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tap_ok(srv >= 0 && cli >= 0, "two sockets");
	tap_eq(sluice_bind(ST(s), srv, &a), 0, "bind 10.1.0.1:5000");
	tap_eq(sluice_recv(ST(s), srv, buf, sizeof(buf), 0), -EAGAIN, "empty socket is -EAGAIN");
	tap_eq(sluice_sendto(ST(s), cli, "hello", 5, 0, &a), 5, "sendto returns the length");
	n = sluice_recvfrom(ST(s), srv, buf, sizeof(buf), 0, &from);
	tap_eq(n, 5, "recvfrom gets 5 bytes");
	tap_ok(n == 5 && !memcmp(buf, "hello", 5), "the bytes are the ones sent");
	tap_eq(from.sin_addr.s_addr, a.sin_addr.s_addr, "source address is the stack's");
	tap_ok(ntohs(from.sin_port) >= 32768, "client got an ephemeral port (%u)", ntohs(from.sin_port));
	tap_eq(cap.n, 0, "nothing went to the link");
	tap_ok(fx_counter(s, "loopback") >= 1, "loopback counter moved");

	/* 127.0.0.1 is local too. */
	a = fx_addr("127.0.0.1", 5001);
	int lo = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);

	tap_eq(sluice_bind(ST(s), lo, &a), 0, "bind 127.0.0.1:5001");
	tap_eq(sluice_sendto(ST(s), cli, "x", 1, 0, &a), 1, "send to 127.0.0.1");
	tap_eq(sluice_recv(ST(s), lo, buf, sizeof(buf), 0), 1, "received on 127.0.0.1");

	/* MSG_PEEK and MSG_TRUNC */
	a = fx_addr("10.1.0.1", 5000);
	sluice_sendto(ST(s), cli, "abcdef", 6, 0, &a);
	tap_eq(sluice_recv(ST(s), srv, buf, 2, MSG_PEEK), 2, "peek 2 bytes");
	tap_eq(sluice_recv(ST(s), srv, buf, 2, MSG_TRUNC), 6, "MSG_TRUNC gives the real length");
	tap_eq(sluice_recv(ST(s), srv, buf, sizeof(buf), 0), -EAGAIN, "datagram consumed whole");

	sluice_close(ST(s), srv);
	sluice_close(ST(s), cli);
	sluice_close(ST(s), lo);
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");
	tap_eq(s->r->sock_used, 0, "no socket leaked");
	fx_destroy(s);
}

static void test_bind_rules(void)
{
	struct sl_stack *s = fx_stack("udpbind", "10.1.0.1", NULL);
	struct sockaddr_in a = fx_addr("10.1.0.1", 6000), any = fx_addr("0.0.0.0", 6000);
	struct sockaddr_in other = fx_addr("10.9.9.9", 6001);
	int x = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	int y = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	int one = 1;

	tap_eq(sluice_bind(ST(s), x, &a), 0, "first bind");
	tap_eq(sluice_bind(ST(s), y, &a), -EADDRINUSE, "same address and port is -EADDRINUSE");
	tap_eq(sluice_bind(ST(s), y, &any), -EADDRINUSE, "INADDR_ANY overlapping is -EADDRINUSE");
	tap_eq(sluice_bind(ST(s), x, &any), -EINVAL, "binding twice is -EINVAL");
	tap_eq(sluice_bind(ST(s), y, &other), -EADDRNOTAVAIL, "a foreign address is -EADDRNOTAVAIL");
	sluice_close(ST(s), x);
	x = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	sluice_setsockopt(ST(s), x, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sluice_setsockopt(ST(s), y, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tap_eq(sluice_bind(ST(s), x, &a), 0, "SO_REUSEADDR bind");
	tap_eq(sluice_bind(ST(s), y, &a), 0, "second SO_REUSEADDR bind shares the port");
	tap_eq(sluice_bind(ST(s), 99, &a), -EBADF, "bad socket is -EBADF");
	tap_eq(sluice_bind(ST(s), -1, &a), -EBADF, "negative socket is -EBADF");
	tap_eq(sluice_socket(ST(s), 77), -EPROTONOSUPPORT, "unknown type");
	fx_destroy(s);
}

static void test_limits_and_errors(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("udplim", "10.1.0.1", &cap);
	struct sockaddr_in a = fx_addr("10.1.0.1", 7000);
	struct sockaddr_in bc = fx_addr("255.255.255.255", 7000);
	struct sockaddr_in closed = fx_addr("10.1.0.1", 7999);
	static char big[2000];
	int srv = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int cli = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int one = 1, small = 1, sent = 0;
	char buf[64];

	struct sockaddr_in peer = fx_addr("10.1.0.2", 7000);

	sluice_bind(ST(s), srv, &a);
	/* IP_PMTUDISC_WANT, the default: fragments without DF (ip.c). */
	tap_eq(sluice_sendto(ST(s), cli, big, 1473, 0, &peer), 1473,
	       "to the link, more than MTU-28 goes (IP_PMTUDISC_WANT: fragments)");
	tap_eq(cap.n, 2, "in two fragments");
	cap.n = 0;
	{
		int v = IP_PMTUDISC_DO;

		sluice_setsockopt(ST(s), cli, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
		tap_eq(sluice_sendto(ST(s), cli, big, 1473, 0, &peer), -EMSGSIZE,
		       "with IP_PMTUDISC_DO it is -EMSGSIZE");
		tap_eq(cap.n, 0, "nothing went");
		v = IP_PMTUDISC_WANT;
		sluice_setsockopt(ST(s), cli, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
	}
	tap_eq(sluice_sendto(ST(s), cli, big, 1472, 0, &a), 1472, "exactly MTU-28 goes");
	sluice_recv(ST(s), srv, buf, sizeof(buf), 0);
	tap_eq(sluice_sendto(ST(s), cli, "b", 1, 0, &bc), -EACCES, "broadcast needs SO_BROADCAST");
	sluice_setsockopt(ST(s), cli, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	tap_eq(sluice_sendto(ST(s), cli, "b", 1, 0, &bc), 1, "broadcast with SO_BROADCAST");
	tap_eq(cap.n, 1, "broadcast went to the link");
	tap_eq(cap.nh[0], INADDR_BROADCAST, "next hop is the broadcast address");
	tap_eq(sluice_send(ST(s), cli, "x", 1, 0), -EDESTADDRREQ, "send unconnected is -EDESTADDRREQ");

	/* A full receive queue drops and counts. */
	sluice_setsockopt(ST(s), srv, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	for (int i = 0; i < 10; i++)
		if (sluice_sendto(ST(s), cli, big, 1000, 0, &a) == 1000)
			sent++;
	tap_eq(sent, 10, "sender does not see receiver drops");
	tap_ok(fx_counter(s, "udp_rx_full") >= 7, "receive-queue drops counted (%llu)",
	       (unsigned long long)fx_counter(s, "udp_rx_full"));

	/* Connected socket to a closed port: ICMP port unreachable -> ECONNREFUSED. */
	int c2 = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);

	tap_eq(sluice_connect(ST(s), c2, &closed), 0, "connect UDP");
	tap_eq(sluice_send(ST(s), c2, "?", 1, 0), 1, "send to a closed port");
	tap_ok(fx_counter(s, "icmp_unreach_tx") >= 1, "port unreachable sent");
	tap_ok(fx_counter(s, "icmp_unreach_rx") >= 1, "and received");
	tap_eq(sluice_recv(ST(s), c2, buf, sizeof(buf), 0), -ECONNREFUSED,
	       "next call reports ECONNREFUSED");
	tap_eq(sluice_recv(ST(s), c2, buf, sizeof(buf), 0), -EAGAIN, "error reported once");
	fx_destroy(s);
}

/*
 * Small datagrams to a socket that never reads: each holds a whole packet
 * buffer, so the queue is bounded by SO_RCVBUF in buffers, not in payload
 * bytes, and one socket cannot take the stack's pool.
 */
static void test_rcvbuf_counts_buffers(void)
{
	struct sl_stack *s = fx_stack("udptrue", "10.1.0.1", NULL);
	struct sockaddr_in a = fx_addr("10.1.0.1", 7100);
	int srv = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int cli = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	uint32_t free0 = s->lib->buf_free_count, cap, queued = 0;
	int rcvbuf = 64 * 1024, got;
	unsigned int len = sizeof(got);
	char buf[64];

	tap_eq(sluice_bind(ST(s), srv, &a), 0, "bind");
	sluice_setsockopt(ST(s), srv, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	sluice_getsockopt(ST(s), srv, SOL_SOCKET, SO_RCVBUF, &got, &len);
	cap = ((uint32_t)got + s->r->buf_size - 1) / s->r->buf_size;
	tap_ok(cap < free0 / 2, "the limit is %u buffers of a pool of %u", cap, free0);
	for (int i = 0; i < (int)free0; i++)
		sluice_sendto(ST(s), cli, "tiny", 4, 0, &a);
	while (sluice_recv(ST(s), srv, buf, sizeof(buf), 0) == 4)
		queued++;
	tap_eq(queued, cap, "the queue held SO_RCVBUF / buffer size datagrams");
	tap_ok(fx_counter(s, "udp_rx_full") >= free0 - cap - 1, "the rest were dropped and counted");
	sluice_close(ST(s), srv);
	sluice_close(ST(s), cli);
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");
	fx_destroy(s);
}

/*
 * Datagrams larger than a packet, inside the stack: a chain of buffers on
 * the loopback queue and on the receive queue, whole or cut by the
 * reader, up to IPv4's 65507 bytes (Linux's loopback: MTU 65536).
 */
static void test_large_datagrams_within_stack(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("udpbig", "10.1.0.1", &cap);
	struct sockaddr_in a = fx_addr("127.0.0.1", 7200), own = fx_addr("10.1.0.1", 7201);
	int srv = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int srv2 = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int cli = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	uint32_t free0 = s->lib->buf_free_count;
	static uint8_t out[SL_UDP_MAX + 1], in[SL_UDP_MAX + 1];
	int small = 1, ok = 1;
	long n;

	for (unsigned int i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 13 + (i >> 9));
	tap_eq(sluice_bind(ST(s), srv, &a), 0, "bind 127.0.0.1");
	tap_eq(sluice_bind(ST(s), srv2, &own), 0, "bind the stack's own address");
	tap_eq(sluice_sendto(ST(s), cli, out, 10240, 0, &a), 10240, "10 KiB to 127.0.0.1 goes");
	tap_ok(fx_counter(s, "loopback_chain") >= 1, "as one chain");
	tap_eq(sluice_recv(ST(s), srv, in, 100, MSG_PEEK), 100, "peek its first 100 bytes");
	n = sluice_recv(ST(s), srv, in, sizeof(in), 0);
	tap_ok(n == 10240 && !memcmp(in, out, 10240), "read whole, the bytes sent (%ld)", n);
	tap_eq(sluice_sendto(ST(s), cli, out, SL_UDP_MAX, 0, &own), SL_UDP_MAX,
	       "65507 bytes to the stack's own address go");
	n = sluice_recv(ST(s), srv2, in, sizeof(in), 0);
	tap_ok(n == SL_UDP_MAX && !memcmp(in, out, SL_UDP_MAX), "read whole (%ld)", n);
	tap_eq(sluice_sendto(ST(s), cli, out, SL_UDP_MAX + 1, 0, &a), -EMSGSIZE,
	       "65508 bytes are -EMSGSIZE");
	for (int i = 0; i < 3; i++)
		ok &= sluice_sendto(ST(s), cli, out + i, 5000, 0, &a) == 5000;
	tap_ok(ok, "three of 5000 bytes queued");
	tap_eq(sluice_recv(ST(s), srv, in, 10, 0), 10, "a short read takes 10 bytes of the first");
	tap_ok(!memcmp(in, out, 10), "its first 10");
	tap_eq(sluice_recv(ST(s), srv, in, 3000, MSG_TRUNC), 5000,
	       "MSG_TRUNC: the second's whole length");
	tap_ok(!memcmp(in, out + 1, 3000), "and its first 3000 bytes");
	n = sluice_recv(ST(s), srv, in, sizeof(in), 0);
	tap_ok(n == 5000 && !memcmp(in, out + 2, 5000), "the third whole");
	tap_eq(sluice_recv(ST(s), srv, in, sizeof(in), 0), -EAGAIN, "then nothing");

	/* SO_RCVBUF at its least: an empty queue takes one, the next drops. */
	sluice_setsockopt(ST(s), srv, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	sluice_sendto(ST(s), cli, out, 9000, 0, &a);
	sluice_sendto(ST(s), cli, out, 9000, 0, &a);
	tap_eq(sluice_recv(ST(s), srv, in, sizeof(in), 0), 9000, "an empty queue takes one");
	tap_eq(sluice_recv(ST(s), srv, in, sizeof(in), 0), -EAGAIN,
	       "the next is dropped: its buffers are charged");
	tap_eq(cap.n, 0, "nothing went to the link");
	sluice_close(ST(s), srv);
	sluice_sendto(ST(s), cli, out, 9000, 0, &own);	/* left queued */
	sluice_sendto(ST(s), cli, out, 9000, 0, &a);	/* to a closed port */
	sluice_close(ST(s), srv2);
	sluice_close(ST(s), cli);
	tap_eq(s->lib->buf_free_count, free0, "no buffer leaked");
	tap_eq(s->r->sock_used, 0, "no socket leaked");
	fx_destroy(s);
}

static uint64_t vclock;

static uint64_t vclock_fn(void *arg)
{
	(void)arg;
	return vclock;
}

static void test_two_stacks_over_loop(void)
{
	struct sl_stack *a = fx_stack("udpA", "10.2.0.1", NULL);
	struct sl_stack *b = fx_stack("udpB", "10.2.0.2", NULL);
	struct sluice_loop_faults f = { .seed = 1, .delay_us = 100 };
	struct sockaddr_in bsrv = fx_addr("10.2.0.2", 9000), from;
	char buf[64];
	long n = -1;

	vclock = 5000000;
	sluice_stack_set_clock(ST(a), vclock_fn, NULL);
	sluice_stack_set_clock(ST(b), vclock_fn, NULL);
	tap_eq(sluice_link_loop(ST(a), ST(b), &f), 0, "loop link between two stacks");
	int sa = sluice_socket(ST(a), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int sb = sluice_socket(ST(b), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);

	sluice_bind(ST(b), sb, &bsrv);
	tap_eq(sluice_sendto(ST(a), sa, "ping", 4, 0, &bsrv), 4, "A sends to B");
	sluice_stack_poll(ST(b));
	tap_eq(sluice_recv(ST(b), sb, buf, sizeof(buf), 0), -EAGAIN, "not before the delay");
	vclock += 100;
	sluice_stack_poll(ST(b));
	n = sluice_recvfrom(ST(b), sb, buf, sizeof(buf), 0, &from);
	tap_ok(n == 4 && !memcmp(buf, "ping", 4), "B receives after the delay");
	tap_eq(sluice_sendto(ST(b), sb, "pong", 4, 0, &from), 4, "B answers");
	vclock += 100;
	sluice_stack_poll(ST(a));
	tap_eq(sluice_recv(ST(a), sa, buf, sizeof(buf), 0), 4, "A receives the answer");
	((struct sl_stack *)a)->link->ops->close(((struct sl_stack *)a)->link);
	((struct sl_stack *)b)->link->ops->close(((struct sl_stack *)b)->link);
	fx_destroy(a);
	fx_destroy(b);
}

/* One unlock delivers at most SL_LO_BUDGET loopback packets; the rest
 * wait for the next holder, so no packet storm can keep a process in. */
static void test_loopback_budget(void)
{
	struct sluice_stack_config cfg = { .n_bufs = 8192, .max_sockets = 16 };
	struct sockaddr_in a = fx_addr("127.0.0.1", 5555);
	struct sluice_stack *st;
	struct sl_stack *s;
	int rx, tx, big = 64 << 20, n = 0;
	char name[32], b[16];

	snprintf(name, sizeof(name), "t-lobudget-%d", (int)getpid());
	sluice_stack_destroy(name);
	if (sluice_stack_create(name, &cfg, &st)) {
		tap_ok(0, "stack for the loopback budget");
		return;
	}
	s = (struct sl_stack *)st;
	rx = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tx = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(st, rx, &a);
	/* Room for every datagram: past what SO_RCVBUF allows (it is capped
	 * at net.core.rmem_max, as Linux caps it), so set directly. */
	sl_lock(s);
	sl_sock(s, rx)->rcvbuf = (uint32_t)big;
	for (int i = 0; i < SL_LO_BUDGET + 1000; i++)
		sl_udp_sendto(s, sl_sock(s, tx), "x", 1, 0, a.sin_addr.s_addr, a.sin_port, NULL);
	sl_unlock(s);
	tap_eq(sl_sock(s, rx)->rxq_count, SL_LO_BUDGET, "one unlock delivered the budget");
	tap_eq(fx_counter(s, "loopback_left"), 1, "and left the rest, counted");
	sluice_stack_poll(st);
	tap_eq(sl_sock(s, rx)->rxq_count, SL_LO_BUDGET + 1000, "the next poll delivered the rest");
	while (sluice_recv(st, rx, b, sizeof(b), 0) == 1)
		n++;
	tap_eq(n, SL_LO_BUDGET + 1000, "every datagram received once");
	sluice_stack_close(st);
	sluice_stack_destroy(name);
}

/* IP_TTL and IP_TOS reach the header of what the socket sends (ip(7)),
 * and IP_MULTICAST_TTL still rules a group's datagrams. */
static void test_ttl_tos_on_the_wire(void)
{
	static struct capture cap;
	struct sl_stack *s = fx_stack("ttl", "10.0.0.1", &cap);
	struct sluice_stack *st = (struct sluice_stack *)s;
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) };
	const struct sl_ip *ip;
	int u = sluice_socket(st, SLUICE_SOCK_DGRAM), v;

	inet_pton(AF_INET, "10.0.0.2", &to.sin_addr);
	v = 7;
	tap_eq(sluice_setsockopt(st, u, IPPROTO_IP, IP_TTL, &v, sizeof(v)), 0, "IP_TTL 7");
	v = 0x10;
	tap_eq(sluice_setsockopt(st, u, IPPROTO_IP, IP_TOS, &v, sizeof(v)), 0, "IP_TOS 0x10");
	tap_eq(sluice_sendto(st, u, "x", 1, 0, &to), 1, "a datagram to a neighbour");
	tap_eq(cap.n, 1, "went out on the link");
	ip = (const struct sl_ip *)cap.frame[0];
	tap_eq(ip->ttl, 7, "with TTL 7");
	tap_eq(ip->tos, 0x10, "and TOS 0x10");
	tap_eq(sl_ip_csum(ip), 0, "and a header checksum that adds up");
	v = -1;
	sluice_setsockopt(st, u, IPPROTO_IP, IP_TTL, &v, sizeof(v));
	sluice_sendto(st, u, "y", 1, 0, &to);
	ip = (const struct sl_ip *)cap.frame[1];
	tap_ok(cap.n == 2 && ip->ttl == 64, "IP_TTL -1: the default, 64, again");
	inet_pton(AF_INET, "239.1.2.3", &to.sin_addr);
	sluice_sendto(st, u, "z", 1, 0, &to);
	ip = (const struct sl_ip *)cap.frame[2];
	tap_ok(cap.n == 3 && ip->ttl == 1, "to a group: IP_MULTICAST_TTL's default, 1");
	sluice_close(st, u);
	fx_destroy(s);
}

/*
 * Broadcast (Linux: a limited broadcast is routed by its source's device,
 * and every broadcast sent is given to the host's own sockets too):
 * from 127.0.0.1 it stays in the stack; out of the link a copy comes
 * back to the stack's sockets on the port, those bound to INADDR_ANY or
 * to 255.255.255.255 and no other; 127.255.255.255 (lo's) stays in it.
 */
static void test_broadcast_send(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("udpbc", "10.1.0.1", &cap);
	struct sockaddr_in any = fx_addr("0.0.0.0", 7100), bca = fx_addr("255.255.255.255", 7100);
	struct sockaddr_in uni = fx_addr("10.1.0.1", 7100), lo = fx_addr("127.0.0.1", 0);
	struct sockaddr_in lob, from;
	int on_any = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int on_bc = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int on_uni = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int tx_lo = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int one = 1;
	char buf[16];

	sluice_setsockopt(ST(s), on_any, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sluice_setsockopt(ST(s), on_bc, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sluice_setsockopt(ST(s), on_uni, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tap_eq(sluice_bind(ST(s), on_any, &any), 0, "bind 0.0.0.0:7100");
	tap_eq(sluice_bind(ST(s), on_bc, &bca), 0, "bind 255.255.255.255:7100");
	tap_eq(sluice_bind(ST(s), on_uni, &uni), 0, "bind 10.1.0.1:7100");
	sluice_setsockopt(ST(s), tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	sluice_setsockopt(ST(s), tx_lo, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));

	tap_eq(sluice_sendto(ST(s), tx, "L", 1, 0, &bca), 1, "broadcast out of the link");
	tap_eq(cap.n, 1, "one frame on the link");
	tap_ok(sluice_recvfrom(ST(s), on_any, buf, sizeof(buf), 0, &from) == 1 && buf[0] == 'L',
	       "a copy for the socket on 0.0.0.0 (Linux ip_mc_output())");
	tap_ok(sluice_recvfrom(ST(s), on_bc, buf, sizeof(buf), 0, &from) == 1 && buf[0] == 'L',
	       "and for the one on 255.255.255.255");
	tap_eq(from.sin_addr.s_addr, s->lib->ip_addr, "from the stack's address");
	tap_eq(sluice_recv(ST(s), on_uni, buf, sizeof(buf), 0), -EAGAIN,
	       "none for the one on 10.1.0.1");

	tap_eq(sluice_bind(ST(s), tx_lo, &lo), 0, "bind 127.0.0.1");
	tap_eq(sluice_sendto(ST(s), tx_lo, "O", 1, 0, &bca), 1, "broadcast from 127.0.0.1");
	tap_eq(cap.n, 1, "nothing on the link: it went out lo");
	tap_ok(sluice_recvfrom(ST(s), on_bc, buf, sizeof(buf), 0, &from) == 1 && buf[0] == 'O',
	       "the socket on 255.255.255.255 hears it");
	tap_eq(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK), "from 127.0.0.1");
	tap_ok(sluice_recv(ST(s), on_any, buf, sizeof(buf), 0) == 1 && buf[0] == 'O',
	       "so does the one on 0.0.0.0");

	/* lo's broadcast address: a broadcast too, never on the link. */
	lob = fx_addr("127.255.255.255", 7100);
	tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_sendto(ST(s), tx, "b", 1, 0, &lob), -EACCES,
	       "127.255.255.255 needs SO_BROADCAST");
	sluice_setsockopt(ST(s), tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	tap_eq(sluice_sendto(ST(s), tx, "B", 1, 0, &lob), 1, "a broadcast to 127.255.255.255");
	tap_eq(cap.n, 1, "nothing on the link");
	tap_ok(sluice_recvfrom(ST(s), on_any, buf, sizeof(buf), 0, &from) == 1 && buf[0] == 'B',
	       "the socket on 0.0.0.0 hears it");
	tap_eq(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK), "from 127.0.0.1");
	tap_eq(sluice_recv(ST(s), on_bc, buf, sizeof(buf), 0), -EAGAIN,
	       "the one on 255.255.255.255 does not");
	tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_connect(ST(s), tx, &lob), -EACCES,
	       "connect to a broadcast address needs SO_BROADCAST (Linux)");
	sluice_setsockopt(ST(s), tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	tap_eq(sluice_connect(ST(s), tx, &lob), 0, "with it, connect");
	tx = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_connect(ST(s), tx, &lob), -ENETUNREACH,
	       "TCP to a broadcast address: ENETUNREACH (Linux tcp_v4_connect())");
	lob = fx_addr("10.1.0.255", 80);
	tx = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_connect(ST(s), tx, &lob), -ENETUNREACH, "and to the subnet's");
	fx_destroy(s);

	/* No link: a broadcast from loopback is delivered, any other has
	 * no route, as on a Linux host with only lo. */
	s = fx_stack("udpbcnl", "10.1.0.1", NULL);
	on_bc = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tx_lo = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	sluice_bind(ST(s), on_bc, &bca);
	sluice_bind(ST(s), tx_lo, &lo);
	sluice_setsockopt(ST(s), tx, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	sluice_setsockopt(ST(s), tx_lo, SOL_SOCKET, SO_BROADCAST, &one, sizeof(one));
	tap_eq(sluice_sendto(ST(s), tx, "N", 1, 0, &bca), -ENETUNREACH,
	       "no link: a broadcast from the stack's address is ENETUNREACH");
	tap_eq(sluice_sendto(ST(s), tx_lo, "O", 1, 0, &bca), 1, "no link: from 127.0.0.1 it goes");
	tap_ok(sluice_recv(ST(s), on_bc, buf, sizeof(buf), 0) == 1 && buf[0] == 'O',
	       "and is heard");
	fx_destroy(s);
}

int main(void)
{
	test_ttl_tos_on_the_wire();
	test_loopback_within_stack();
	test_bind_rules();
	test_limits_and_errors();
	test_broadcast_send();
	test_rcvbuf_counts_buffers();
	test_large_datagrams_within_stack();
	test_two_stacks_over_loop();
	test_loopback_budget();
	return tap_done();
}
