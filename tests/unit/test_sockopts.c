// SPDX-License-Identifier: BSD-2-Clause
/*
 * Socket options with effects beyond one socket, as Linux has them
 * (socket(7)): SO_REUSEPORT groups that share a port and split the
 * connections and datagrams by peer, and SO_LINGER (zero: an abortive
 * close; a time: close waits for the data and FIN to be acknowledged).
 * Over the stack's own loopback, in real time.
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Room for every connection's TIME-WAIT slot (fx_stack has 64). */
static struct sl_stack *stack(const char *tag)
{
	return fx_stack_sized(tag, "10.7.0.1", 512, 512);
}

static int sock_opt(struct sl_stack *s, int type, int name, int on)
{
	int sd = sluice_socket(ST(s), type | SLUICE_SOCK_NONBLOCK);

	if (sd >= 0 && on)
		sluice_setsockopt(ST(s), sd, SOL_SOCKET, name, &on, sizeof(on));
	return sd;
}

static int listener(struct sl_stack *s, int port, bool reuseport)
{
	struct sockaddr_in a = fx_addr("0.0.0.0", port);
	int l = sock_opt(s, SLUICE_SOCK_STREAM, SO_REUSEPORT, reuseport);

	if (sluice_bind(ST(s), l, &a) || sluice_listen(ST(s), l, 64)) {
		sluice_close(ST(s), l);
		return -1;
	}
	return l;
}

/* Accept whatever is pending on l; returns how many. */
static int drain_accepts(struct sl_stack *s, int l)
{
	int n = 0, sd;

	while ((sd = sluice_accept(ST(s), l, NULL)) >= 0) {
		sluice_close(ST(s), sd);
		n++;
	}
	return n;
}

static void test_reuseport_needs_both(void)
{
	struct sl_stack *s = stack("rp-both");
	int a = listener(s, 7500, false), b = listener(s, 7500, true);
	int c = listener(s, 7501, true), d = listener(s, 7501, false);
	int v = 0;
	unsigned int len = sizeof(v);

	tap_ok(a >= 0 && b < 0, "a second listener with SO_REUSEPORT on a port taken without it: "
	       "EADDRINUSE");
	tap_ok(c >= 0 && d < 0, "and without SO_REUSEPORT on a port a group holds: EADDRINUSE");
	sluice_getsockopt(ST(s), c, SOL_SOCKET, SO_REUSEPORT, &v, &len);
	tap_eq(v, 1, "getsockopt(SO_REUSEPORT) reads it back");
	fx_destroy(s);
}

static void test_reuseport_tcp_spread(void)
{
	struct sl_stack *s = stack("rp-tcp");
	struct sockaddr_in to = fx_addr("10.7.0.1", 7502);
	int l1 = listener(s, 7502, true), l2 = listener(s, 7502, true), n1 = 0, n2 = 0, refused = 0;

	tap_ok(l1 >= 0 && l2 >= 0, "two listeners share port 7502 with SO_REUSEPORT");
	for (int i = 0; i < 64; i++) {
		int c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		int ret = sluice_connect(ST(s), c, &to);

		if (ret && ret != -EINPROGRESS)
			refused++;
		n1 += drain_accepts(s, l1);
		n2 += drain_accepts(s, l2);
		sluice_close(ST(s), c);
	}
	tap_eq(refused, 0, "64 connections to the group, none refused");
	tap_ok(n1 + n2 == 64 && n1 >= 8 && n2 >= 8,
	       "the peers' ports split them across both listeners (%d + %d)", n1, n2);
	sluice_close(ST(s), l1);
	n2 = 0;
	for (int i = 0; i < 16; i++) {
		int c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

		sluice_connect(ST(s), c, &to);
		n2 += drain_accepts(s, l2);
		sluice_close(ST(s), c);
	}
	tap_eq(n2, 16, "with one listener closed, the other takes every connection");
	sluice_close(ST(s), l2);
	fx_destroy(s);
}

static void test_reuseport_udp_spread(void)
{
	struct sl_stack *s = stack("rp-udp");
	struct sockaddr_in a = fx_addr("0.0.0.0", 7503), to = fx_addr("10.7.0.1", 7503);
	int u1 = sock_opt(s, SLUICE_SOCK_DGRAM, SO_REUSEPORT, 1);
	int u2 = sock_opt(s, SLUICE_SOCK_DGRAM, SO_REUSEPORT, 1);
	int g1 = 0, g2 = 0, both = 0;
	char buf[16];

	tap_ok(!sluice_bind(ST(s), u1, &a) && !sluice_bind(ST(s), u2, &a),
	       "two UDP sockets bind one port with SO_REUSEPORT");
	for (int i = 0; i < 64; i++) {
		int c = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
		int got = 0;

		sluice_sendto(ST(s), c, "x", 1, 0, &to);
		if (sluice_recv(ST(s), u1, buf, sizeof(buf), MSG_DONTWAIT) == 1)
			g1++, got++;
		if (sluice_recv(ST(s), u2, buf, sizeof(buf), MSG_DONTWAIT) == 1)
			g2++, got++;
		both += got != 1;
		sluice_close(ST(s), c);
	}
	tap_eq(both, 0, "each datagram reached exactly one member");
	tap_ok(g1 >= 8 && g2 >= 8, "senders' ports split them across both (%d + %d)", g1, g2);
	fx_destroy(s);
}

/* A connected pair over the stack's loopback: *c client, *d server side. */
static void pair(struct sl_stack *s, int port, int *l, int *c, int *d)
{
	struct sockaddr_in to = fx_addr("10.7.0.1", port);

	*l = listener(s, port, false);
	*c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	sluice_connect(ST(s), *c, &to);
	*d = -1;
	for (double end = now_s() + 2; *d < 0 && now_s() < end;)
		*d = sluice_accept(ST(s), *l, NULL);
}

static void test_linger_zero_resets(void)
{
	struct sl_stack *s = stack("lg-zero");
	struct linger lg = { .l_onoff = 1, .l_linger = 0 }, back = { 0, 7 };
	unsigned int len = sizeof(back);
	uint64_t rst0;
	int l, c, d;
	char buf[8];

	pair(s, 7504, &l, &c, &d);
	tap_eq(sluice_setsockopt(ST(s), c, SOL_SOCKET, SO_LINGER, &lg, 4), -EINVAL,
	       "SO_LINGER shorter than struct linger: EINVAL");
	tap_eq(sluice_setsockopt(ST(s), c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0,
	       "SO_LINGER {1, 0}");
	sluice_getsockopt(ST(s), c, SOL_SOCKET, SO_LINGER, &back, &len);
	tap_ok(back.l_onoff == 1 && back.l_linger == 0 && len == sizeof(back),
	       "getsockopt reads it back");
	rst0 = fx_counter(s, "tcp_reset_tx");
	sluice_send(ST(s), c, "queued", 6, 0);
	tap_eq(sluice_close(ST(s), c), 0, "close returns at once");
	tap_ok(fx_counter(s, "tcp_reset_tx") - rst0 >= 1,
	       "an abortive close: a RST sent (and one for the peer's late ACK)");
	tap_eq(sl_sock(s, (uint32_t)c)->type, SL_SOCK_FREE, "no FIN, no TIME-WAIT: the slot is free");
	long n = sluice_recv(ST(s), d, buf, sizeof(buf), MSG_DONTWAIT);

	tap_ok(n == -ECONNRESET || n == 6, "the peer sees the reset (%ld)", n);
	fx_destroy(s);
}

static void test_linger_times_out(void)
{
	struct sl_stack *s = stack("lg-time");
	struct linger lg = { .l_onoff = 1, .l_linger = 1 };
	static char big[64 * 1024];
	int l, c, d, small = 4096;
	long queued = 0, n, got = 0;
	double t0, dt;

	sluice_setsockopt(ST(s), 0, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	pair(s, 7505, &l, &c, &d);
	sluice_setsockopt(ST(s), d, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	/* The reader never reads: its window closes, data stays queued. */
	while ((n = sluice_send(ST(s), c, big, sizeof(big), MSG_DONTWAIT)) > 0)
		queued += n;
	tap_ok(queued > 0 && sl_sock(s, (uint32_t)c)->tcp.sndq_bytes > 0,
	       "data queued behind a closed window (%ld bytes)", queued);
	sluice_setsockopt(ST(s), c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	t0 = now_s();
	tap_eq(sluice_close(ST(s), c), 0, "close with SO_LINGER {1, 1} returns 0");
	dt = now_s() - t0;
	tap_ok(dt >= 0.9 && dt < 3, "after waiting out the linger time (%.2f s)", dt);
	/* Not aborted: the reader still gets everything, then EOF. */
	for (double end = now_s() + 10; now_s() < end;) {
		n = sluice_recv(ST(s), d, big, sizeof(big), MSG_DONTWAIT);
		if (n > 0)
			got += n;
		else if (n == 0)
			break;
		sluice_stack_poll(ST(s));
	}
	tap_eq(got, queued, "then the close goes on in the background: every byte arrives");
	tap_eq(sluice_recv(ST(s), d, big, 1, MSG_DONTWAIT), 0, "and the FIN after them");
	fx_destroy(s);
}

static void test_linger_waits_for_ack(void)
{
	struct sl_stack *s = stack("lg-ack");
	struct linger lg = { .l_onoff = 1, .l_linger = 10 };
	static char big[256 * 1024];
	int l, c, d, status;
	long sent = 0, n;
	double t0, dt;
	pid_t pid;

	pair(s, 7506, &l, &c, &d);
	while (sent < (long)sizeof(big) &&
	       (n = sluice_send(ST(s), c, big + sent, sizeof(big) - sent, MSG_DONTWAIT)) > 0)
		sent += n;
	pid = fork();
	if (pid == 0) {
		/* A slow reader in another process: 0.3 s, then everything. */
		long got = 0;
		struct timespec nap = { 0, 300000000 };

		nanosleep(&nap, NULL);
		for (double end = now_s() + 10; now_s() < end;) {
			n = sluice_recv(ST(s), d, big, sizeof(big), MSG_DONTWAIT);
			if (n > 0)
				got += n;
			else if (n == 0)
				_exit(got == sent ? 0 : 2);
			else
				sluice_stack_poll(ST(s));
		}
		_exit(3);
	}
	sluice_setsockopt(ST(s), c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	t0 = now_s();
	tap_eq(sluice_close(ST(s), c), 0, "close with SO_LINGER {1, 10} returns 0");
	dt = now_s() - t0;
	tap_ok(dt >= 0.25 && dt < 5, "once the slow reader took it all and the FIN was acked "
	       "(%.2f s)", dt);
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the reader got all %ld bytes and EOF", sent);
	fx_destroy(s);
}

/* SO_SNDBUFFORCE refused (a short value: EINVAL) leaves the send buffer
 * as it was; it used to fall through to setting it. */
static void test_bufforce_refused_keeps_buffer(void)
{
	struct sl_stack *s = stack("bufforce");
	int u = sluice_socket(ST(s), SLUICE_SOCK_DGRAM), v = 100000, got = 0;
	unsigned int len = sizeof(got);
	uint16_t two = 2;

	sluice_setsockopt(ST(s), u, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	sluice_getsockopt(ST(s), u, SOL_SOCKET, SO_SNDBUF, &v, &len);
	tap_eq(sluice_setsockopt(ST(s), u, SOL_SOCKET, SO_SNDBUFFORCE, &two, sizeof(two)), -EINVAL,
	       "SO_SNDBUFFORCE shorter than an int: EINVAL");
	len = sizeof(got);
	sluice_getsockopt(ST(s), u, SOL_SOCKET, SO_SNDBUF, &got, &len);
	tap_eq(got, v, "... and SO_SNDBUF is as it was");
	sluice_close(ST(s), u);
	fx_destroy(s);
}

int main(void)
{
	test_bufforce_refused_keeps_buffer();
	test_reuseport_needs_both();
	test_reuseport_tcp_spread();
	test_reuseport_udp_spread();
	test_linger_zero_resets();
	test_linger_times_out();
	test_linger_waits_for_ack();
	return tap_done();
}
