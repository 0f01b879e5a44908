// SPDX-License-Identifier: BSD-2-Clause
/*
 * Death at every lock-holding point (issue 17, item 4).  Linked with the
 * library built with its kill points live (build/kp/, lib/core/killpt.c):
 * for each point a victim process runs a TCP and UDP workload on a stack
 * it shares with this one, armed to SIGKILL itself at the nth pass
 * through that point, holding the lock with a change half made.  Then:
 *
 *  - the next call here takes the lock over and the stack comes back
 *    (READY, lock_recovered counts one), within a second;
 *  - this process's own connection and UDP socket lose nothing: the
 *    100 KiB queued before the death arrive byte for byte, and 100 KiB go
 *    back the other way; the datagrams queued are all there.  Unless the
 *    victim was itself changing our connection (running our segments
 *    from the loopback queue, as any holder does): then it is reset,
 *    ECONNRESET at both ends, nothing wrong delivered before;
 *  - this process's listener, which the victim was connecting to, accepts
 *    and works;
 *  - once the dead process's sockets are closed for it and every timer
 *    has run out, every socket slot and every buffer is back, and the
 *    free list is a list (no buffer twice, no cycle).
 *
 *   test_killpt [SEED]
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "death_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))
#define teq(got, want, ...)                                                   \
	do {                                                                  \
		long long g_ = (long long)(got), w_ = (long long)(want);      \
		if (!tap_ok(g_ == w_, __VA_ARGS__))                           \
			printf("#   got %lld, want %lld\n", g_, w_);          \
	} while (0)

#define PORT_P	7800	/* this process's listener */
#define PORT_U	7801	/* this process's UDP socket */
#define PORT_V	7900	/* the victim's listener */
#define PORT_VU	7901	/* the victim's UDP socket */
#define QUEUED	(100 * 1024)

static const char *const points[] = {
	"buf_alloc", "buf_free", "sock_alloc", "sock_free", "sock_hash", "sock_unhash",
	"rxq_append", "timer_insert", "timer_run", "lo_queue", "lo_drain", "tcp_rx_data",
	"tcp_ack", "tcp_child", "tcp_accq", "tcp_accept", "tcp_send", "tcp_recv", "tcp_close",
	"udp_recv", "tw_put", "tw_enter",
};
#define N_POINTS (sizeof(points) / sizeof(points[0]))

static uint8_t pattern(size_t i, unsigned int salt)
{
	return (uint8_t)(i * 7 + (i >> 9) + salt);
}

/* Move len bytes from a to b (both ours, non-blocking), checking them. */
static bool transfer(struct sl_stack *s, int a, int b, size_t len, unsigned int salt)
{
	static uint8_t out[QUEUED], in[QUEUED];
	size_t sent = 0, got = 0;

	for (size_t i = 0; i < len; i++)
		out[i] = pattern(i, salt);
	for (double end = now_s() + 10; got < len && now_s() < end;) {
		long n;

		if (sent < len) {
			n = sluice_send(ST(s), a, out + sent, len - sent, MSG_DONTWAIT);
			if (n > 0)
				sent += (size_t)n;
		}
		n = sluice_recv(ST(s), b, in + got, len - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || (n < 0 && n != -EAGAIN))
			break;
		sluice_stack_poll(ST(s));
	}
	if (got != len || memcmp(in, out, len)) {
		printf("# transfer %d->%d: sent %zu got %zu of %zu\n", a, b, sent, got, len);
		return false;
	}
	return true;
}

/* Has connection end a been reset?  Its sends fail so (within 2 s). */
static bool conn_reset(struct sl_stack *s, int a)
{
	long n = 1;

	for (double end = now_s() + 2; n >= 0 && now_s() < end;) {
		n = sluice_send(ST(s), a, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		sluice_stack_poll(ST(s));
	}
	return n == -ECONNRESET || n == -EPIPE;
}

/* Connect a fresh pair through listener l on port; *c, *d. */
static bool pair(struct sl_stack *s, int l, uint16_t port, int *c, int *d)
{
	struct sockaddr_in a = fx_addr("127.0.0.1", port);

	*d = -1;
	*c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (*c < 0)
		return false;
	sluice_connect(ST(s), *c, &a);
	for (double end = now_s() + 5; *d < 0 && now_s() < end;) {
		*d = sluice_accept(ST(s), l, NULL);
		sluice_stack_poll(ST(s));
	}
	return *d >= 0;
}

/* The victim: its own stack handle, the point armed, a workload that
 * passes every point, for at most 3 s (exit 0: the point was never hit). */
static void victim(const char *name, const char *point, unsigned long nth)
{
	struct sockaddr_in va = fx_addr("0.0.0.0", PORT_V), vu = fx_addr("127.0.0.1", PORT_VU);
	struct sockaddr_in pa = fx_addr("127.0.0.1", PORT_P);
	struct sluice_stack *st;
	struct sl_stack *s;
	char dg[64];
	int l, u;

	if (sluice_stack_attach(name, &st))
		_exit(2);
	s = (struct sl_stack *)st;
	l = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	u = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	if (l < 0 || u < 0 || sluice_bind(st, l, &va) || sluice_listen(st, l, 16) ||
	    sluice_bind(st, u, &vu))
		_exit(3);
	sl_kill_arm(point, nth);
	for (double end = now_s() + 3; now_s() < end;) {
		int c, d, p;

		/* A connection to this process's listener: its accept queue
		 * changes under the victim's hand. */
		p = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		if (p >= 0) {
			sluice_connect(st, p, &pa);
			sluice_stack_poll(st);
			sluice_send(st, p, "hello", 5, MSG_DONTWAIT);
		}
		if (!pair(s, l, PORT_V, &c, &d))
			_exit(4);
		if (!transfer(s, c, d, 20000, 1) || !transfer(s, d, c, 3000, 2))
			_exit(5);
		for (int i = 0; i < 4; i++)
			sluice_sendto(st, u, "datagram", 8, 0, &vu);
		for (int i = 0; i < 4; i++)
			sluice_recv(st, u, dg, sizeof(dg), MSG_DONTWAIT);
		/* Unread data: an abortive close, then an orderly one. */
		sluice_send(st, c, "tail", 4, MSG_DONTWAIT);
		sluice_stack_poll(st);
		sluice_close(st, d);
		sluice_close(st, c);
		if (p >= 0)
			sluice_close(st, p);
		/* An orderly close: the side that closes first (the accepted
		 * one) waits in TIME-WAIT. */
		if (!pair(s, l, PORT_V, &c, &d))
			_exit(4);
		sluice_close(st, d);
		sluice_stack_poll(st);
		sluice_close(st, c);
		/* Let delayed ACKs and timers run. */
		usleep(1000);
		sluice_stack_poll(st);
	}
	_exit(0);
}

/* Buffers on the free list, walked: -1 if it repeats one or runs past
 * the pool. */
static long free_list_len(struct sl_stack *s)
{
	uint8_t *seen = calloc(s->n_bufs, 1);
	long n = 0;

	for (uint32_t i = s->lib->buf_free_idx; i != SLUICE_IDX_NONE; i = s->bufmeta[i].next_idx) {
		if (i >= s->n_bufs || seen[i]) {
			n = -1;
			break;
		}
		seen[i] = 1;
		n++;
	}
	free(seen);
	return n;
}

static void one_point(const char *point, unsigned long nth)
{
	struct sockaddr_in pa = fx_addr("0.0.0.0", PORT_P), ua = fx_addr("127.0.0.1", PORT_U);
	struct sl_stack *s = fx_stack_sized("killpt", "10.7.0.1", 1024, 256);
	uint32_t free0 = s->lib->buf_free_count;
	int l, c, d, u, status, x, extra = 0;
	uint64_t rec = 0;
	bool ok = true, busy_ours;
	char dg[64];
	double t0;
	pid_t vp;

	sluice_stack_set_clock(ST(s), NULL, NULL);	/* real time: two processes */
	l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	u = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	if (l < 0 || u < 0 || sluice_bind(ST(s), l, &pa) || sluice_listen(ST(s), l, 64) ||
	    sluice_bind(ST(s), u, &ua) || !pair(s, l, PORT_P, &c, &d)) {
		tap_ok(0, "%s: our sockets", point);
		fx_destroy(s);
		return;
	}
	/* Queued, unread, when the victim dies: 100 KiB on d, three datagrams. */
	{
		static uint8_t out[QUEUED];
		size_t sent = 0;

		for (size_t i = 0; i < QUEUED; i++)
			out[i] = pattern(i, 9);
		for (double end = now_s() + 5; sent < QUEUED && now_s() < end;) {
			long n = sluice_send(ST(s), c, out + sent, QUEUED - sent, MSG_DONTWAIT);

			if (n > 0)
				sent += (size_t)n;
			sluice_stack_poll(ST(s));
		}
		for (int i = 0; i < 3; i++) {
			snprintf(dg, sizeof(dg), "queued %d", i);
			sluice_sendto(ST(s), u, dg, strlen(dg), 0, &ua);
		}
		sluice_stack_poll(ST(s));
	}

	vp = fork();
	if (vp == 0)
		victim(s->name, point, nth);
	waitpid(vp, &status, 0);
	if (!tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		    "%s #%lu: the victim died at the point", point, nth)) {
		printf("#   status 0x%x\n", status);
		ok = false;
	}
	tap_ok((s->r->lock & SLUICE_LOCK_HELD) &&
	       (pid_t)(s->r->lock >> SLUICE_LOCK_PID_SHIFT) == vp,
	       "%s: it died holding the lock", point);

	/* Which sockets the victim was changing (index + 1): if one of ours
	 * (it was running our segments, from the loopback queue), that
	 * connection may be reset; nothing else of ours may change. */
	busy_ours = s->lib->busy[0] == (uint32_t)c + 1 || s->lib->busy[0] == (uint32_t)d + 1 ||
		    s->lib->busy[1] == (uint32_t)c + 1 || s->lib->busy[1] == (uint32_t)d + 1;
	t0 = now_s();
	x = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	tap_ok(x >= 0 && now_s() - t0 < 1.0, "%s: our next call works (%d, %.0f ms)", point, x,
	       (now_s() - t0) * 1e3);
	if (x >= 0)
		sluice_close(ST(s), x);
	teq(s->r->state, SLUICE_STATE_READY, "%s: the stack is READY", point);
	sluice_stack_counter(ST(s), "lock_recovered", &rec);
	teq(rec, 1, "%s: lock_recovered counts one recovery", point);

	/* What was queued is all there; or, if the victim was changing our
	 * connection, a reset, with nothing wrong delivered before it. */
	{
		static uint8_t in[QUEUED];
		size_t got = 0;
		long n = 0;

		for (double end = now_s() + 10; got < QUEUED && now_s() < end;) {
			n = sluice_recv(ST(s), d, in + got, QUEUED - got, MSG_DONTWAIT);
			if (n > 0)
				got += (size_t)n;
			else if (n != -EAGAIN)
				break;
			sluice_stack_poll(ST(s));
		}
		ok = true;
		for (size_t i = 0; i < got && ok; i++)
			ok = in[i] == pattern(i, 9);
		if (busy_ours && got < QUEUED) {
			tap_ok(ok && n == -ECONNRESET,
			       "%s: our connection, which the victim was changing, is reset "
			       "(%ld after %zu good bytes)", point, n, got);
			tap_ok(conn_reset(s, c), "%s: and so is its other end", point);
		} else {
			tap_ok(got == QUEUED && ok,
			       "%s: our 100 KiB queued before the death arrive (%zu, %s)", point,
			       got, busy_ours ? "changing when it died" : "untouched");
			if (!busy_ours)
				tap_ok(transfer(s, d, c, QUEUED, 5),
				       "%s: and 100 KiB the other way", point);
			else
				tap_ok(transfer(s, d, c, QUEUED, 5) ||
				       (conn_reset(s, c) && conn_reset(s, d)),
				       "%s: and 100 KiB the other way, or both ends reset", point);
		}
	}
	for (int i = 0; i < 3; i++) {
		char want[64];
		long n = sluice_recv(ST(s), u, dg, sizeof(dg), MSG_DONTWAIT);

		snprintf(want, sizeof(want), "queued %d", i);
		if (!tap_ok(n == (long)strlen(want) && !memcmp(dg, want, (size_t)n),
			    "%s: queued datagram %d is there", point, i))
			printf("#   recv %ld\n", n);
	}
	/* Our listener: what the victim left queued (at most its backlog of
	 * 64, plus one as Linux), then a new connection. */
	for (int i = 0; i < 65; i++) {
		int a = sluice_accept(ST(s), l, NULL);

		if (a < 0)
			break;
		extra++;
		sluice_close(ST(s), a);
	}
	{
		int c2, d2;

		tap_ok(pair(s, l, PORT_P, &c2, &d2) && transfer(s, c2, d2, 4096, 3),
		       "%s: our listener takes a new connection (%d left by the victim)", point,
		       extra);
		sluice_close(ST(s), c2);
		sluice_close(ST(s), d2);
	}

	/* Nothing leaks. */
	close_dead(s, vp);
	sluice_close(ST(s), c);
	sluice_close(ST(s), d);
	sluice_close(ST(s), u);
	sluice_close(ST(s), l);
	run_out_timers(s);
	teq(s->r->sock_used, 0, "%s: every socket slot back", point);
	teq(s->lib->buf_free_count, free0, "%s: every buffer back in the pool", point);
	teq(free_list_len(s), free0, "%s: the free list is a list of them all", point);
	teq(s->r->lock, 0, "%s: lock free", point);
	fx_destroy(s);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);

	printf("# seed %llu (test_killpt %llu replays it)\n", (unsigned long long)seed,
	       (unsigned long long)seed);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	/* Each point at its first pass, then at a seeded later one. */
	for (unsigned int i = 0; i < N_POINTS; i++) {
		one_point(points[i], 1);
		one_point(points[i], 2 + rnd() % 40);
	}
	return tap_done();
}
