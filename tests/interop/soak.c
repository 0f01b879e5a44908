// SPDX-License-Identifier: BSD-2-Clause
/*
 * Soak: a forking TCP echo server on a Sluice stack (/dev/shm, the stack's
 * own loopback) and client processes opening, transferring and closing
 * connections for a bounded time, every byte checked.  At the end, with
 * every process gone and the timers run out, no socket slot and no buffer
 * may be left: no leak, no stuck connection.
 *
 *   soak SECONDS [CLIENTS [SEED]]
 *
 *   main: creates the stack, forks --+-- server: accept loop; one child
 *                                    |   process per connection (echoes
 *                                    |   until EOF, closes, exits)
 *                                    +-- CLIENTS clients: connect, send a
 *                                        seeded 1 B..64 KiB, read it back,
 *                                        compare, close; again until time
 * Prints the figures and "ok" or the failures; exit 0 only if all is well.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"

#define PORT		7900
#define MAX_XFER	65536
#define MAX_KIDS	32	/* server's connection children at once */
#define CONN_S		20	/* one connection may take this long */

struct figures {
	_Atomic long conns, bytes, fail_connect, fail_data, fail_stuck, table_full, ports_full;
	_Atomic int connect_err;	/* the last unexpected connect error */
	_Atomic long served, serve_fail;
	_Atomic int stop;
};

static struct figures *fig;
static struct sluice_stack *st;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

/* Wait for events on sd, at most until end: false on timeout. */
static bool wait_for(int sd, short ev, double end)
{
	struct sluice_pollfd p = { .sd = sd, .events = ev };
	int ms = (int)((end - now_s()) * 1000);

	return ms > 0 && sluice_poll(st, &p, 1, ms > 200 ? 200 : ms) >= 0;
}

/* A connection child: echo until EOF, close.  0 if it saw EOF cleanly. */
static int serve_one(int sd)
{
	static char buf[16384];
	double end = now_s() + CONN_S;

	while (now_s() < end) {
		long n = sluice_recv(st, sd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == -EAGAIN) {
			wait_for(sd, POLLIN, end);
			continue;
		}
		if (n <= 0) {
			sluice_close(st, sd);
			return n == 0 ? 0 : 1;
		}
		for (long off = 0; off < n && now_s() < end;) {
			long w = sluice_send(st, sd, buf + off, n - off, MSG_DONTWAIT);

			if (w > 0)
				off += w;
			else if (w == -EAGAIN)
				wait_for(sd, POLLOUT, end);
			else
				break;
		}
	}
	sluice_close(st, sd);
	return 2;
}

static void reap(int *kids, bool block)
{
	int status;
	pid_t p;

	while (*kids > 0 && (p = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
		(*kids)--;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			atomic_fetch_add(&fig->served, 1);
		else
			atomic_fetch_add(&fig->serve_fail, 1);
	}
}

/* The forking server: accept, fork a child for the connection.  The
 * stack's sockets are shared, not per process: the child closes it, the
 * parent only forgets it. */
static int server(int l)
{
	int kids = 0;

	while (!atomic_load(&fig->stop)) {
		struct sluice_pollfd p = { .sd = l, .events = POLLIN };
		int sd;
		pid_t pid;

		reap(&kids, false);
		if (kids >= MAX_KIDS) {
			usleep(1000);
			continue;
		}
		sluice_poll(st, &p, 1, 100);
		sd = sluice_accept(st, l, NULL);
		if (sd < 0)
			continue;
		pid = fork();
		if (pid == 0)
			_exit(serve_one(sd));
		if (pid < 0)
			serve_one(sd);
		else
			kids++;
	}
	while (kids > 0)
		reap(&kids, true);
	return 0;
}

static int client(uint64_t seed, double until)
{
	static uint8_t out[MAX_XFER], in[MAX_XFER];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(PORT),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t x = seed;

	while (now_s() < until) {
		size_t len = 1 + rng_next(&x) % MAX_XFER, sent = 0, got = 0;
		double end = now_s() + CONN_S;
		int sd = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), ret;

		if (sd == -ENFILE) {	/* TIME-WAIT fills the table: wait */
			atomic_fetch_add(&fig->table_full, 1);
			usleep(100000);
			continue;
		}
		if (sd < 0)
			return 1;
		for (size_t i = 0; i < len; i++)
			out[i] = (uint8_t)rng_next(&x);
		ret = sluice_connect(st, sd, &a);
		if (ret == -EINPROGRESS) {
			wait_for(sd, POLLOUT, end);
			ret = 0;
		}
		if (ret == -EADDRINUSE) {
			/* Every ephemeral port is in TIME-WAIT towards this one
			 * server (28232 ports / 60 s: about 470 new connections
			 * a second, and Sluice has no TIME-WAIT reuse for active
			 * opens): back off, as a client would. */
			atomic_fetch_add(&fig->ports_full, 1);
			sluice_close(st, sd);
			usleep(50000);
			continue;
		}
		if (ret) {
			atomic_fetch_add(&fig->fail_connect, 1);
			atomic_store(&fig->connect_err, -ret);
			sluice_close(st, sd);
			continue;
		}
		while (got < len && now_s() < end) {
			long n;

			if (sent < len) {
				n = sluice_send(st, sd, out + sent, len - sent, MSG_DONTWAIT);
				if (n > 0)
					sent += n;
				else if (n != -EAGAIN)
					break;
			}
			n = sluice_recv(st, sd, in + got, len - got, MSG_DONTWAIT);
			if (n > 0)
				got += n;
			else if (n != -EAGAIN)
				break;
			else
				wait_for(sd, POLLIN | (sent < len ? POLLOUT : 0), end);
		}
		if (got == len && !memcmp(in, out, len)) {
			atomic_fetch_add(&fig->conns, 1);
			atomic_fetch_add(&fig->bytes, (long)len);
		} else if (now_s() >= end) {
			atomic_fetch_add(&fig->fail_stuck, 1);
		} else {
			atomic_fetch_add(&fig->fail_data, 1);
		}
		sluice_close(st, sd);
	}
	return 0;
}

static uint64_t vclock_us;

static uint64_t vclock(void *arg)
{
	(void)arg;
	return vclock_us;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 120;
	int nclients = argc > 2 ? atoi(argv[2]) : 4;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
	struct sluice_stack_config cfg = { .max_sockets = 32768, .n_bufs = 8192 };
	struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(PORT) };
	struct sl_stack *s;
	uint32_t free0;
	pid_t srv, cl[64];
	char name[32];
	int l, bad = 0, left = 0;
	double until;

	if (nclients < 1 || nclients > 64) {
		fprintf(stderr, "soak: 1..64 clients\n");
		return 2;
	}
	fig = mmap(NULL, sizeof(*fig), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fig == MAP_FAILED)
		return 2;
	snprintf(name, sizeof(name), "soak-%d", (int)getpid());
	cfg.ip_addr = htonl(0x0a080001);	/* 10.8.0.1, no link: loopback only */
	cfg.ip_mask = htonl(0xffffff00);
	if (sluice_stack_create(name, &cfg, &st)) {
		fprintf(stderr, "soak: cannot create stack %s\n", name);
		return 2;
	}
	s = (struct sl_stack *)st;
	free0 = s->lib->buf_free_count;
	l = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (l < 0 || sluice_bind(st, l, &la) || sluice_listen(st, l, 128)) {
		fprintf(stderr, "soak: listen\n");
		return 2;
	}
	printf("# soak: stack %s, %.0f s, %d clients, seed %llu\n", name, seconds, nclients,
	       (unsigned long long)seed);
	fflush(stdout);
	until = now_s() + seconds;
	srv = fork();
	if (srv == 0)
		_exit(server(l));
	for (int i = 0; i < nclients; i++) {
		cl[i] = fork();
		if (cl[i] == 0)
			_exit(client(seed * 1000003 + i + 1, until));
	}
	for (int i = 0; i < nclients; i++) {
		int status;

		waitpid(cl[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	atomic_store(&fig->stop, 1);
	waitpid(srv, NULL, 0);
	sluice_close(st, l);

	/* Every process is gone: run the timers out (TIME-WAIT is 60 s). */
	vclock_us = sl_now(s);
	sluice_stack_set_clock(st, vclock, NULL);
	for (int i = 0; i < 1500; i++) {
		vclock_us += 100000;
		sluice_stack_poll(st);
	}
	for (uint32_t i = 0; i < s->r->max_sockets; i++) {
		struct sl_sock *so = sl_sock(s, i);

		/* Free, or in the pool socket() takes from: no socket. */
		if (so->type == SL_SOCK_FREE || so->type == SL_SOCK_RESERVED)
			continue;
		if (left++ < 10)
			printf("# left: sd %u type %u state %u flags 0x%x port %u->%u\n", i,
			       so->type, so->state, so->flags, ntohs(so->lport), ntohs(so->rport));
	}
	printf("connections %ld bytes %ld served %ld; failures: connect %ld (%s) data %ld stuck %ld "
	       "server %ld clients %d; waits: socket table full %ld, ports all in TIME-WAIT %ld\n",
	       fig->conns, fig->bytes, fig->served, fig->fail_connect,
	       fig->connect_err ? strerror(fig->connect_err) : "-", fig->fail_data,
	       fig->fail_stuck, fig->serve_fail, bad, fig->table_full, fig->ports_full);
	printf("sockets left %u, buffers out %u of %u\n", s->r->sock_used,
	       free0 - s->lib->buf_free_count, free0);
	bad += fig->fail_connect + fig->fail_data + fig->fail_stuck + fig->serve_fail;
	bad += left + (int)s->r->sock_used + (s->lib->buf_free_count != free0);
	bad += fig->conns == 0;
	sluice_stack_close(st);
	sluice_stack_destroy(name);
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
