// SPDX-License-Identifier: BSD-2-Clause
/*
 * A holder killed while it makes a listener's child (tcp_input.c,
 * child_new()): the child's slot is typed, its 4-tuple set and hashed, its
 * TCB not yet made.  Recovery must not leave it so: nobody would accept it
 * or time it out, and every SYN from its peer's port would meet a closed
 * socket and be refused (test_killsoak's fresh client, refused twice from
 * one port, 2026-12-06).  Then the same connection, from the same port,
 * must be made and accepted, and the slot must be back.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "stack_fixture.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define PORT	7420
#define SPORT	40000

/* Connect from SPORT to the listener and accept: the accepted sd, or -1. */
static int connect_from(struct sl_stack *s, int l, int *c)
{
	struct sockaddr_in src = fx_addr("10.6.0.1", SPORT), dst = fx_addr("10.6.0.1", PORT);

	*c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (*c < 0 || sluice_bind(ST(s), *c, &src))
		return -1;
	sluice_connect(ST(s), *c, &dst);
	for (int i = 0; i < 1000; i++) {
		int d = sluice_accept(ST(s), l, NULL);

		if (d >= 0)
			return d;
		sluice_stack_poll(ST(s));
	}
	return -1;
}

int main(void)
{
	struct sl_stack *s = fx_stack_sized("rchild", "10.6.0.1", 256, 16);
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	uint64_t rec0 = sl_counter_sum(s, SL_C_lock_recovered);
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), c, d, status;
	uint32_t used0, cidx = SLUICE_IDX_NONE;
	pid_t pid;

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	used0 = s->r->sock_used;
	pid = fork();
	if (pid == 0) {
		struct sl_sock *lso = sl_sock(s, (uint32_t)l), *so;

		sl_lock(s);
		so = sl_sock_alloc(s, SL_SOCK_TCP);
		if (!so)
			_exit(5);
		/* As child_new() does, up to the hash. */
		so->laddr = lso->laddr ? lso->laddr : fx_addr("10.6.0.1", 0).sin_addr.s_addr;
		so->lport = htons(PORT);
		so->raddr = fx_addr("10.6.0.1", 0).sin_addr.s_addr;
		so->rport = htons(SPORT);
		so->flags |= SL_SF_BOUND;
		so->parent_idx = lso->idx;
		sl_sock_kid_link(s, lso, so);
		so->owner_pid = lso->owner_pid;
		sl_sock_hash(s, so);
		kill(getpid(), SIGKILL);
		_exit(6);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	       "a child was killed making a listener's child, hashed, no TCB yet");
	for (uint32_t i = 0; i < sl_sock_top(s); i++)
		if (sl_sock(s, i)->type == SL_SOCK_TCP && sl_sock(s, i)->rport == htons(SPORT))
			cidx = i;
	tap_ok(cidx != SLUICE_IDX_NONE, "the half-made child is in the table (slot %u)", cidx);
	sl_lock(s);
	sl_unlock(s);
	tap_eq(sl_counter_sum(s, SL_C_lock_recovered) - rec0, 1, "the next lock recovered the stack");
	tap_ok(cidx == SLUICE_IDX_NONE || sl_sock(s, cidx)->type == SL_SOCK_FREE,
	       "the half-made child's slot is free again");
	tap_eq(s->r->sock_used, used0, "the stack uses as many slots as before");
	d = connect_from(s, l, &c);
	tap_ok(d >= 0, "a connection from the same port is made and accepted");
	tap_eq(sluice_send(ST(s), c, "ping", 4, MSG_DONTWAIT), 4, "and carries data");
	sluice_close(ST(s), c);
	if (d >= 0)
		sluice_close(ST(s), d);
	sluice_close(ST(s), l);
	fx_destroy(s);
	return tap_done();
}
