// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two processes on one stack at the same time: a parent and its forked
 * child (sharing the mapping it inherited), and a parent and an unrelated
 * program (this binary exec'd again, attaching by name).  TCP over the
 * stack's own loopback, both directions, while both run the stack.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "run/run.h"
#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))
#define BYTES (256 * 1024)

static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 31 + (i >> 8));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Client side: connect, send BYTES, read them back echoed, close. */
static int client(struct sluice_stack *st, int port)
{
	struct sockaddr_in a = fx_addr("127.0.0.1", port);
	static uint8_t out[BYTES], in[BYTES];
	int sd = sluice_socket(st, SLUICE_SOCK_STREAM), ret;
	size_t sent = 0, got = 0;

	for (size_t i = 0; i < BYTES; i++)
		out[i] = pat(i);
	ret = sluice_connect(st, sd, &a);
	if (ret)
		return 10;
	/* Bounded in time, not in spins: a loaded machine is slow, not wrong. */
	for (double end = now_s() + 20; got < BYTES && now_s() < end;) {
		long n;

		if (sent < BYTES) {
			n = sluice_send(st, sd, out + sent, BYTES - sent, MSG_DONTWAIT);
			if (n > 0)
				sent += n;
		}
		n = sluice_recv(st, sd, in + got, BYTES - got, MSG_DONTWAIT);
		if (n > 0)
			got += n;
		else if (n != -EAGAIN)
			return 11;
		sluice_stack_poll(st);
	}
	sluice_close(st, sd);
	return got == BYTES && !memcmp(in, out, BYTES) ? 0 : 12;
}

/* Server side: accept one connection and echo until EOF. */
static int echo_one(struct sluice_stack *st, int l)
{
	static uint8_t buf[65536];
	int sd = sluice_accept(st, l, NULL);
	long n, total = 0;

	if (sd < 0)
		return -1;
	while ((n = sluice_recv(st, sd, buf, sizeof(buf), 0)) > 0) {
		for (long off = 0; off < n;) {
			long w = sluice_send(st, sd, buf + off, n - off, 0);

			if (w < 0)
				return -1;
			off += w;
		}
		total += n;
		if (total == BYTES)
			break;
	}
	sluice_close(st, sd);
	return total == BYTES ? 0 : -1;
}

static int wait_child(pid_t pid)
{
	int status;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	struct sl_stack *s;
	struct sockaddr_in a = fx_addr("0.0.0.0", 7400);
	uint32_t free0;
	int l, rc;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--child")) {
		/* The unrelated program: attach by name, be the client. */
		struct sluice_stack *st;

		if (sluice_stack_attach(argv[2], &st))
			return 20;
		rc = client(st, 7400);
		sluice_stack_close(st);
		return rc;
	}

	s = fx_stack("shared", "10.5.0.1", NULL);
	sluice_stack_set_clock(ST(s), NULL, NULL);	/* real time: two processes */
	free0 = s->lib->buf_free_count;
	l = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
	tap_eq(sluice_bind(ST(s), l, &a), 0, "listen socket bound");
	tap_eq(sluice_listen(ST(s), l, 8), 0, "listening");

	/* 1: a forked child uses the mapping it inherited. */
	pid = fork();
	if (pid == 0)
		_exit(client(ST(s), 7400));
	tap_eq(echo_one(ST(s), l), 0, "parent echoed 256 KiB for its forked child");
	rc = wait_child(pid);
	tap_eq(rc, 0, "forked child got its bytes back intact");

	/* 2: an unrelated program attaches by name. */
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--child", s->name, (char *)NULL);
		_exit(30);
	}
	tap_eq(echo_one(ST(s), l), 0, "parent echoed 256 KiB for an unrelated program");
	rc = wait_child(pid);
	tap_eq(rc, 0, "the unrelated program got its bytes back intact");
	tap_ok(s->r->attach_count >= 2, "attach_count shows the second process (%u)",
	       s->r->attach_count);

	/* 3: a process blocked in recv sleeps on its socket's wait channel
	 * (not the stack's futex) and is woken when another process sends
	 * to it. */
	{
		struct sockaddr_in u = fx_addr("127.0.0.1", 7500);
		int us = sluice_socket(ST(s), SLUICE_SOCK_DGRAM), tx, p[2], waited = 0;
		double sent_at = 0, got_at = 0;

		tap_eq(sluice_bind(ST(s), us, &u), 0, "UDP socket for the sleeper");
		tap_ok(pipe(p) == 0, "pipe");
		pid = fork();
		if (pid == 0) {
			char b[8];
			double t;

			if (sluice_recv(ST(s), us, b, sizeof(b), 0) != 4)
				_exit(1);
			t = now_s();
			_exit(write(p[1], &t, sizeof(t)) == sizeof(t) ? 0 : 2);
		}
		uint32_t *chan = &s->lib->wq[us & (SL_WQ_N - 1)].sleepers;

		/* Wait until the child sleeps (past its spin time). */
		while (*chan == 0 && waited++ < 2000)
			usleep(1000);
		tap_eq(*chan, 1, "the blocked child counts as a sleeper on its socket's channel");
		tap_eq(s->r->sleepers, 0, "... and not on the stack's futex");
		tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		sent_at = now_s();
		tap_eq(sluice_sendto(ST(s), tx, "wake", 4, 0, &u), 4, "send to the sleeper");
		tap_ok(read(p[0], &got_at, sizeof(got_at)) == sizeof(got_at), "child woke and read it");
		rc = wait_child(pid);
		tap_eq(rc, 0, "child exited cleanly");
		printf("# wakeup latency %.0f us\n", (got_at - sent_at) * 1e6);
		tap_ok(got_at - sent_at < 0.5, "woken well before any timeout (%.0f us)",
		       (got_at - sent_at) * 1e6);
		tap_eq(*chan + s->r->sleepers, 0, "no sleepers left");
		sluice_close(ST(s), us);
		sluice_close(ST(s), tx);
		close(p[0]);
		close(p[1]);
	}

	/* 4: a poll of sockets on two wait channels sleeps on both
	 * channels (futex_waitv), not on the stack's futex that every change
	 * moves, and a change on its second channel wakes it. */
	{
		struct sockaddr_in ua = fx_addr("127.0.0.1", 7501), ub = fx_addr("127.0.0.1", 7502);
		int sa = sluice_socket(ST(s), SLUICE_SOCK_DGRAM), sb = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		int tx, p[2], waited = 0;
		double sent_at = 0, got_at = 0;
		uint32_t *ca = &s->lib->wq[sa & (SL_WQ_N - 1)].sleepers;
		uint32_t *cb = &s->lib->wq[sb & (SL_WQ_N - 1)].sleepers;

		tap_ok(!sluice_bind(ST(s), sa, &ua) && !sluice_bind(ST(s), sb, &ub) &&
		       (sa & (SL_WQ_N - 1)) != (sb & (SL_WQ_N - 1)),
		       "two UDP sockets on two channels (%d, %d)", sa & (SL_WQ_N - 1), sb & (SL_WQ_N - 1));
		tap_ok(pipe(p) == 0, "pipe");
		pid = fork();
		if (pid == 0) {
			struct sluice_pollfd pf[2] = { { .sd = sa, .events = POLLIN },
						       { .sd = sb, .events = POLLIN } };
			double t;

			if (sluice_poll(ST(s), pf, 2, 5000) != 1 || !(pf[1].revents & POLLIN))
				_exit(1);
			t = now_s();
			if (write(p[1], &t, sizeof(t)) != sizeof(t))
				_exit(2);
			/* A wake on the second word is no failure of futex_waitv. */
			_exit(sl_waitv_ok ? 0 : 3);
		}
		while ((*ca == 0 || *cb == 0) && waited++ < 2000)
			usleep(1000);
		tap_ok(*ca == 1 && *cb == 1, "the poller counts as a sleeper on both channels (%u, %u)",
		       *ca, *cb);
		tap_eq(s->r->sleepers, 0, "... and not on the stack's futex");
		tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		sent_at = now_s();
		tap_eq(sluice_sendto(ST(s), tx, "wake", 4, 0, &ub), 4, "send to its second socket");
		tap_ok(read(p[0], &got_at, sizeof(got_at)) == sizeof(got_at), "the poller woke");
		rc = wait_child(pid);
		tap_ok(rc == 0 || rc == 3, "... and saw that socket readable (exit %d)", rc);
		tap_ok(rc != 3, "... and still sleeps on futex_waitv: a wake by the second word is no failure");
		printf("# wakeup latency (second channel) %.0f us\n", (got_at - sent_at) * 1e6);
		tap_ok(got_at - sent_at < 0.005, "woken by the change, not by sa sleep bound (%.0f us)",
		       (got_at - sent_at) * 1e6);
		tap_eq(*ca + *cb + s->r->sleepers, 0, "no sleepers left");
		sluice_close(ST(s), sa);
		sluice_close(ST(s), sb);
		sluice_close(ST(s), tx);
		close(p[0]);
		close(p[1]);
	}

	sluice_close(ST(s), l);
	/* Orphans finish their FIN exchange; TIME-WAIT entries may stay. */
	for (int i = 0; i < 100; i++)
		sluice_stack_poll(ST(s));
	tap_eq(s->r->lock, 0, "lock free at the end");
	tap_eq(s->lib->buf_free_count, free0, "every buffer returned to the pool");
	fx_destroy(s);
	return tap_done();
}
