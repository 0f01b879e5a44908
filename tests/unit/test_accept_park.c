// SPDX-License-Identifier: BSD-2-Clause
/*
 * A full accept queue, as Linux keeps it, and what a client in the same
 * stack does about it (lib/proto/tcp/tcp.c, sl_tcp_park()).  The queue
 * holds backlog + 1 connections (Linux's sk_acceptq_is_full()); a SYN
 * that finds it full is dropped, and so is a handshake's last ACK, with
 * no reset.  A client of this stack then waits for accept() to make room,
 * not for its 1 s retransmission timeout: the stack's clock never moves
 * here, so every connection below is made without any timer.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stack_fixture.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define IP "10.8.0.1"

static struct sl_stack *s;

static void run(int rounds)
{
	for (int i = 0; i < rounds; i++)
		sluice_stack_poll(ST(s));
}

static int listener(uint16_t port, int backlog)
{
	struct sockaddr_in a = fx_addr("0.0.0.0", port);
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, backlog);
	return l;
}

static int client(uint16_t port)
{
	struct sockaddr_in a = fx_addr(IP, port);
	int c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);

	sluice_connect(ST(s), c, &a);
	return c;
}

static uint8_t state(int sd)
{
	return sl_sock(s, (uint32_t)sd)->state;
}

/* backlog 2: three wait for accept(), the fourth's SYN is dropped and
 * the client waits in SYN-SENT until an accept(). */
static void test_syn_waits_for_room(void)
{
	int l = listener(7501, 2), c[4], a[4];
	uint64_t parked0 = fx_counter(s, "tcp_syn_parked");
	uint64_t dropped0 = fx_counter(s, "tcp_syn_dropped");
	uint64_t t0 = fx_clock_us;

	for (int i = 0; i < 3; i++) {
		c[i] = client(7501);
		run(6);
	}
	tap_eq(sl_sock(s, (uint32_t)l)->tcp.acc_len, 3,
	       "backlog 2: three connections wait for accept() (Linux: backlog + 1)");
	c[3] = client(7501);
	run(6);
	tap_eq(state(c[3]), SL_TCP_SYN_SENT, "the fourth SYN found the queue full: still SYN-SENT");
	tap_eq(fx_counter(s, "tcp_syn_parked") - parked0, 1, "held for room (tcp_syn_parked)");
	tap_eq(fx_counter(s, "tcp_syn_dropped") - dropped0, 0,
	       "not counted as dropped: nothing is left to a retransmission");
	a[0] = sluice_accept(ST(s), l, NULL);
	run(6);
	tap_ok(a[0] >= 0 && state(c[3]) == SL_TCP_ESTABLISHED,
	       "one accept(): the fourth is established at once");
	for (int i = 1; i < 4; i++)
		a[i] = sluice_accept(ST(s), l, NULL);
	tap_ok(a[1] >= 0 && a[2] >= 0 && a[3] >= 0, "and accepted with the others");
	tap_eq(sluice_accept(ST(s), l, NULL), -EAGAIN, "then the queue is empty");
	tap_eq(fx_clock_us - t0, 0, "no timer was needed");
	for (int i = 0; i < 4; i++) {
		sluice_close(ST(s), a[i]);
		sluice_close(ST(s), c[i]);
	}
	sluice_close(ST(s), l);
	run(10);
}

/* backlog 0 holds one; three connect at once, so all three SYNs are
 * answered before any handshake ends: the second and third children's
 * last ACKs find the queue full and wait, each sent its SYN-ACK again
 * (and answered) as accept() makes room. */
static void test_handshake_waits_for_room(void)
{
	int l = listener(7502, 0), c[3], a[3];
	uint64_t parked0 = fx_counter(s, "tcp_syn_parked"), rst0 = fx_counter(s, "tcp_reset_tx");

	for (int i = 0; i < 3; i++)
		c[i] = client(7502);
	run(10);
	tap_eq(sl_sock(s, (uint32_t)l)->tcp.acc_len, 1, "backlog 0: one connection waits");
	tap_eq(fx_counter(s, "tcp_syn_parked") - parked0, 2,
	       "two handshakes held for room (their last ACKs dropped, as Linux)");
	for (int i = 0; i < 3; i++) {
		a[i] = sluice_accept(ST(s), l, NULL);
		run(10);
	}
	tap_ok(a[0] >= 0 && a[1] >= 0 && a[2] >= 0, "three accept()s take all three, no timer run");
	tap_eq(fx_counter(s, "tcp_reset_tx") - rst0, 0, "and no reset was sent");
	for (int i = 0; i < 3; i++) {
		char buf[4];

		tap_eq((int)sluice_send(ST(s), c[i], "x", 1, 0), 1, "a client sends");
		run(6);
		tap_eq((int)sluice_recv(ST(s), a[i], buf, sizeof(buf), MSG_DONTWAIT), 1,
		       "its accepted peer reads");
	}
	for (int i = 0; i < 3; i++) {
		sluice_close(ST(s), a[i]);
		sluice_close(ST(s), c[i]);
	}
	sluice_close(ST(s), l);
	run(10);
}

/* More than the 16 the listener once held in a ring: backlog 0 holds
 * one, twenty more SYNs meet the full queue and every one waits on the
 * listener's list; one closed while waiting leaves the list whole; all
 * the others are made, one an accept(), with the clock never moving. */
#define MANY 21
static void test_many_wait_without_limit(void)
{
	int l = listener(7503, 0), c[MANY], a[MANY], got = 0, est = 0;
	uint64_t parked0 = fx_counter(s, "tcp_syn_parked");
	uint64_t dropped0 = fx_counter(s, "tcp_syn_dropped");
	uint64_t t0 = fx_clock_us;

	for (int i = 0; i < MANY; i++) {
		c[i] = client(7503);
		run(6);
	}
	tap_eq(sl_sock(s, (uint32_t)l)->tcp.acc_len, 1, "backlog 0: one connection waits for accept()");
	tap_eq(fx_counter(s, "tcp_syn_parked") - parked0, MANY - 1,
	       "twenty SYNs met the full queue and all twenty are held (no limit of 16)");
	tap_eq(fx_counter(s, "tcp_syn_dropped") - dropped0, 0, "none left to a retransmission");
	/* One in the middle gives up while it waits: its slot leaves the list. */
	sluice_close(ST(s), c[7]);
	run(6);
	c[7] = -1;
	tap_eq(sl_sock(s, (uint32_t)l)->tcp.park_head, sl_sock(s, (uint32_t)c[1])->idx,
	       "the oldest waiting connection heads the list");
	for (int i = 0; i < MANY; i++) {
		a[i] = sluice_accept(ST(s), l, NULL);
		if (a[i] >= 0)
			got++;
		run(6);
	}
	for (int i = 0; i < MANY; i++)
		est += c[i] >= 0 && state(c[i]) == SL_TCP_ESTABLISHED;
	tap_eq(got, MANY - 1, "every connection but the one closed is accepted");
	tap_eq(est, MANY - 1, "and established");
	tap_eq(sl_sock(s, (uint32_t)l)->tcp.park_head, SLUICE_IDX_NONE, "the list is empty again");
	tap_eq(fx_clock_us - t0, 0, "no timer was needed");
	for (int i = 0; i < MANY; i++) {
		if (a[i] >= 0)
			sluice_close(ST(s), a[i]);
		if (c[i] >= 0)
			sluice_close(ST(s), c[i]);
	}
	sluice_close(ST(s), l);
	run(10);
}

/* A listener closed while connections wait on it lets go of them: none
 * names the freed slot, which the next listener may take. */
static void test_listener_close_lets_go(void)
{
	int l = listener(7504, 0), c[4], n = 0;

	for (int i = 0; i < 4; i++) {
		c[i] = client(7504);
		run(6);
	}
	tap_eq(sl_sock(s, (uint32_t)l)->tcp.park_head, sl_sock(s, (uint32_t)c[1])->idx,
	       "three wait on the listener");
	sluice_close(ST(s), l);
	run(10);
	for (int i = 1; i < 4; i++)
		n += sl_sock(s, (uint32_t)c[i])->tcp.park_lso == SLUICE_IDX_NONE;
	tap_eq(n, 3, "its close takes them off its list");
	for (int i = 0; i < 4; i++)
		sluice_close(ST(s), c[i]);
	run(10);
}

/* The lock's holder dies while it changes a listener's list (recovery,
 * lib/proto/README.md): six wait at backlog 0; a process takes the lock,
 * unlinks the third halfway (its successor's back link changed, its
 * predecessor's not), leaves the last pointing back into the list, and is
 * killed.  Recovery rebuilds the list, oldest first, and each of the six
 * is made at the next accept()s with the clock never moving: none is left
 * to its 1 s SYN timer. */
#define WAITERS 6
static void test_recovery_keeps_waiters(void)
{
	int l = listener(7505, 0), c[WAITERS + 1], a[WAITERS + 1], got = 0, est = 0, status;
	uint64_t rec0 = fx_counter(s, "lock_recovered"), t0 = fx_clock_us;
	uint32_t order = 0, idx = SLUICE_IDX_NONE, guard = 0;
	struct sl_sock *lso = sl_sock(s, (uint32_t)l);
	pid_t pid;

	for (int i = 0; i <= WAITERS; i++) {
		c[i] = client(7505);
		run(6);
	}
	tap_eq(lso->tcp.park_head, sl_sock(s, (uint32_t)c[1])->idx, "six wait on the listener");
	pid = fork();
	if (pid == 0) {
		struct sl_sock *c2 = sl_sock(s, (uint32_t)c[2]), *c4 = sl_sock(s, (uint32_t)c[4]);

		sl_lock(s);
		sl_sock_busy(s, lso);		/* an accept() on the listener */
		c4->tcp.park_prev = c2->idx;	/* c3's unlink, half done */
		sl_sock(s, (uint32_t)c[WAITERS])->tcp.park_next = c2->idx;
		kill(getpid(), SIGKILL);
		_exit(6);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	       "a holder was killed in the middle of a change to the list");
	sl_lock(s);
	sl_unlock(s);
	tap_eq(fx_counter(s, "lock_recovered") - rec0, 1, "the next lock recovered the stack");
	for (idx = lso->tcp.park_head; sl_sock_next(s, idx, &guard) && order < WAITERS;
	     idx = sl_sock(s, idx)->tcp.park_next) {
		if (idx != sl_sock(s, (uint32_t)c[order + 1])->idx)
			break;
		order++;
	}
	tap_eq(order, WAITERS, "recovery rebuilt the list, oldest first, every one on it");
	tap_eq(idx, SLUICE_IDX_NONE, "and it ends");
	for (int i = 0; i <= WAITERS; i++) {
		a[i] = sluice_accept(ST(s), l, NULL);
		got += a[i] >= 0;
		run(6);
	}
	for (int i = 0; i <= WAITERS; i++)
		est += state(c[i]) == SL_TCP_ESTABLISHED;
	tap_eq(got, WAITERS + 1, "every connection is accepted");
	tap_eq(est, WAITERS + 1, "and established");
	tap_eq(fx_clock_us - t0, 0, "no timer was needed");
	for (int i = 0; i <= WAITERS; i++) {
		if (a[i] >= 0)
			sluice_close(ST(s), a[i]);
		sluice_close(ST(s), c[i]);
	}
	sluice_close(ST(s), l);
	run(10);
}

int main(void)
{
	uint32_t free0, parked = 0;

	s = fx_stack("park", IP, NULL);
	free0 = s->lib->buf_free_count;
	test_syn_waits_for_room();
	test_handshake_waits_for_room();
	test_many_wait_without_limit();
	test_listener_close_lets_go();
	test_recovery_keeps_waiters();
	fx_clock_us += 2 * SL_TCP_TIME_WAIT_US;
	run(20);
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool");
	for (uint32_t i = 0; i < s->r->max_sockets; i++) {
		const struct sl_sock *so = sl_sock(s, i);

		parked += so->type == SL_SOCK_TCP && (so->tcp.park_lso != SLUICE_IDX_NONE ||
						      so->tcp.park_head != SLUICE_IDX_NONE);
	}
	tap_eq(parked, 0, "no socket left on a listener's park list");
	fx_destroy(s);
	return tap_done();
}

