// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lending (lib/proto/tcp/tcp.c): large sends and receives copy their data without
 * the stack lock, on buffers lent by the socket.  Two processes stream
 * through one stack with sends and receives of random sizes on both sides
 * of the lending threshold, and the bytes must arrive in order and intact;
 * a borrower that dies holding a chain, or a socket that goes while its
 * buffers are lent, must leave the pool whole; and a recovery from a
 * holder's death must leave a live borrower its chain.
 */
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "stack_fixture.h"
#include "proto/proto.h"

#define ST(s) ((struct sluice_stack *)(s))
#define STREAM_BYTES (24u << 20)
#define PORT 7410

static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 11) + (i >> 19));
}

/* xorshift: the sizes of sends and receives, seeded. */
static uint32_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)*x;
}

/* 1 byte .. 192 KiB, half of them above the lending threshold (16 KiB). */
static size_t pick(uint64_t *x)
{
	uint32_t r = rnd(x);

	return r & 1 ? 1 + (r >> 1) % 16384 : 16384 + (r >> 1) % (176 * 1024);
}

static struct sl_stack *make_stack(const char *tag, unsigned int bufs)
{
	return fx_stack_sized(tag, "10.6.0.1", bufs, 16);
}

static int wait_child(pid_t pid)
{
	int status;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static int pair(struct sl_stack *s, int l, int *c, int *d)
{
	return fx_tcp_pair(s, "10.6.0.1", PORT, l, c, d);
}

/* The receiving process: read everything, random sizes, check each byte. */
static int receiver(struct sluice_stack *st, int sd, uint64_t seed)
{
	static uint8_t buf[192 * 1024];
	uint64_t got = 0, x = seed | 1;

	for (double end = fx_now_s() + 60; got < STREAM_BYTES && fx_now_s() < end;) {
		long n = sluice_recv(st, sd, buf, pick(&x), MSG_DONTWAIT);

		if (n == -EAGAIN) {
			sluice_stack_poll(st);
			continue;
		}
		if (n <= 0)
			return 2;
		for (long i = 0; i < n; i++)
			if (buf[i] != pat(got + (uint64_t)i))
				return 3;
		got += (uint64_t)n;
	}
	return got == STREAM_BYTES ? 0 : 4;
}

static void test_stream_two_processes(uint64_t seed)
{
	static uint8_t buf[192 * 1024];
	struct sl_stack *s = make_stack("lend", 2048);
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	uint32_t free0 = s->lib->buf_free_count;
	uint64_t sent = 0, x = seed * 7 + 1, lent0, t0;
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), c, d, rc;
	double start;
	pid_t pid;

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	tap_ok(pair(s, l, &c, &d) == 0, "seed %llu: connected", (unsigned long long)seed);
	pid = fork();
	if (pid == 0)
		_exit(receiver(ST(s), d, seed));
	lent0 = s->lib->lock_contended;
	start = fx_now_s();
	while (sent < STREAM_BYTES && fx_now_s() < start + 60) {
		size_t want = pick(&x);
		long n;

		if (want > STREAM_BYTES - sent)
			want = (size_t)(STREAM_BYTES - sent);
		for (size_t i = 0; i < want; i++)
			buf[i] = pat(sent + i);
		n = sluice_send(ST(s), c, buf, want, MSG_DONTWAIT);
		if (n > 0)
			sent += (uint64_t)n;
		else if (n == -EAGAIN)
			sluice_stack_poll(ST(s));
		else
			break;
	}
	rc = wait_child(pid);
	t0 = s->lib->lock_contended - lent0;
	tap_ok(sent == STREAM_BYTES, "seed %llu: every byte sent", (unsigned long long)seed);
	tap_ok(rc == 0, "seed %llu: the other process read %u MiB in order, byte for byte "
	       "(exit %d; %.2f s, lock contended %llu times)", (unsigned long long)seed,
	       STREAM_BYTES >> 20, rc, fx_now_s() - start, (unsigned long long)t0);
	sluice_close(ST(s), c);
	sluice_close(ST(s), d);
	sluice_close(ST(s), l);
	/* The FIN exchange runs in-stack; TIME-WAIT holds no buffers. */
	for (double end = fx_now_s() + 5; s->lib->buf_free_count != free0 && fx_now_s() < end;)
		sluice_stack_poll(ST(s));
	tap_ok(s->lib->buf_free_count == free0, "seed %llu: every buffer back in the pool (%u of %u)",
	       (unsigned long long)seed, s->lib->buf_free_count, free0);
	fx_destroy(s);
}

/* Queue some data from c to d, and let the stack deliver it. */
static void fill(struct sl_stack *s, int c, size_t bytes)
{
	static uint8_t buf[65536];

	for (size_t done = 0; done < bytes;) {
		size_t n = bytes - done < sizeof(buf) ? bytes - done : sizeof(buf);
		long w = sluice_send(ST(s), c, buf, n, MSG_DONTWAIT);

		if (w <= 0)
			break;
		done += (size_t)w;
	}
	for (int i = 0; i < 100; i++)
		sluice_stack_poll(ST(s));
}

static void test_dead_borrower(void)
{
	struct sl_stack *s = make_stack("lenddead", 512);
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	uint32_t free0 = s->lib->buf_free_count;
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), c, d, rc;
	static uint8_t buf[65536];
	size_t n = 0;
	pid_t pid;

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	pair(s, l, &c, &d);
	fill(s, c, 40000);

	/* A child borrows received data and dies before giving it back. */
	pid = fork();
	if (pid == 0) {
		sl_lock(s);
		if (sl_tcp_recv_lend(s, sl_sock(s, (uint32_t)d), 32768, &n) == SLUICE_IDX_NONE)
			_exit(5);
		sl_unlock(s);
		_exit(0);	/* holding the chain */
	}
	rc = wait_child(pid);
	tap_eq(rc, 0, "a child borrowed received buffers and died with them");
	tap_ok(sl_sock(s, (uint32_t)d)->rx_lent_idx != SLUICE_IDX_NONE,
	       "the socket records the dead borrower's chain");
	/* The next large receive takes the chain back and goes on. */
	long got = sluice_recv(ST(s), d, buf, sizeof(buf), MSG_DONTWAIT);

	tap_ok(got > 0, "the next receive works (%ld bytes)", got);
	tap_eq(sl_sock(s, (uint32_t)d)->rx_lent_idx, SLUICE_IDX_NONE,
	       "and took the dead borrower's chain back");

	/* A child borrows send buffers and dies before queueing them. */
	pid = fork();
	if (pid == 0) {
		sl_lock(s);
		if (sl_tcp_send_lend(s, sl_sock(s, (uint32_t)c), 32768, &n) == SLUICE_IDX_NONE)
			_exit(5);
		sl_unlock(s);
		_exit(0);
	}
	rc = wait_child(pid);
	tap_eq(rc, 0, "a child borrowed send buffers and died with them");
	tap_ok(sl_sock(s, (uint32_t)c)->tx_lent_bytes > 0,
	       "the lent bytes count against the send buffer meanwhile");
	/* Closing the socket frees a chain nobody gives back. */
	sluice_close(ST(s), c);
	sluice_close(ST(s), d);
	sluice_close(ST(s), l);
	for (int i = 0; i < 100 && s->lib->buf_free_count != free0; i++)
		sluice_stack_poll(ST(s));
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool after close");
	fx_destroy(s);
}

static void test_socket_gone_while_lent(void)
{
	struct sl_stack *s = make_stack("lendgone", 512);
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	uint32_t free0 = s->lib->buf_free_count, head, gen, head2, gen2;
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), c, d;
	size_t n = 0;

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	pair(s, l, &c, &d);
	fill(s, c, 40000);

	sl_lock(s);
	gen = sl_sock(s, (uint32_t)d)->kp.gen;
	head = sl_tcp_recv_lend(s, sl_sock(s, (uint32_t)d), 32768, &n);
	sl_unlock(s);
	tap_ok(head != SLUICE_IDX_NONE && n > 0 && n <= 32768, "lent %zu bytes", n);
	/* The same for send buffers, with the connection reset meanwhile. */
	sl_lock(s);
	gen2 = sl_sock(s, (uint32_t)c)->kp.gen;
	head2 = sl_tcp_send_lend(s, sl_sock(s, (uint32_t)c), 32768, &n);
	sl_unlock(s);
	tap_ok(head2 != SLUICE_IDX_NONE, "lent %zu bytes of send buffers", n);
	sl_lock(s);
	sl_tcp_done(s, sl_sock(s, (uint32_t)c), ECONNRESET);
	tap_eq(sl_tcp_send_return(s, sl_sock(s, (uint32_t)c), gen2, head2, sl_now(s)),
	       -ECONNRESET, "a reset while the copy ran: the send fails as after a reset");
	sl_unlock(s);
	/* Another thread closes the socket while the copy runs. */
	sluice_close(ST(s), d);
	sl_lock(s);
	n = s->lib->buf_free_count;
	tap_ok(!sl_tcp_recv_return(s, sl_sock(s, (uint32_t)d), gen, head, sl_now(s)),
	       "the receive learns its chain was taken (api.c then delivers none of the copy)");
	tap_eq(s->lib->buf_free_count, n,
	       "giving back to a socket that went frees nothing twice (close freed the chain)");
	sl_unlock(s);

	sluice_close(ST(s), c);
	sluice_close(ST(s), l);
	for (int i = 0; i < 100 && s->lib->buf_free_count != free0; i++)
		sluice_stack_poll(ST(s));
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool");
	fx_destroy(s);
}

/* Send len bytes of value v on c (non-blocking, as much as goes) and run
 * the stack: buffers the pool hands out now are written with v. */
static void fill_with(struct sl_stack *s, int c, size_t len, uint8_t v)
{
	static uint8_t buf[65536];

	memset(buf, v, sizeof(buf));
	for (size_t done = 0; done < len;) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);
		long w = sluice_send(ST(s), c, buf, n, MSG_DONTWAIT);

		if (w <= 0)
			break;
		done += (size_t)w;
	}
	for (int i = 0; i < 100; i++)
		sluice_stack_poll(ST(s));
}

/* Is buffer idx on the pool's free list? */
static bool on_free_list(struct sl_stack *s, uint32_t idx)
{
	uint32_t i = s->lib->buf_free_idx;

	for (uint32_t n = 0; i != SLUICE_IDX_NONE && n < s->n_bufs; n++, i = sl_buf(s, i)->next_idx)
		if (i == idx)
			return true;
	return false;
}

/* The chain from head, as lent: its buffers' indices (at most max). */
static unsigned int chain_of(struct sl_stack *s, uint32_t head, uint32_t *idx, unsigned int max)
{
	unsigned int n = 0;

	for (uint32_t i = head, steps = 0; n < max && sl_buf_next(s, i, &steps);
	     i = sl_buf(s, i)->next_idx)
		idx[n++] = i;
	return n;
}

/* How many of those buffers are on the pool's free list. */
static int on_free_list_n(struct sl_stack *s, const uint32_t *idx, unsigned int n)
{
	int k = 0;

	for (unsigned int i = 0; i < n; i++)
		k += on_free_list(s, idx[i]);
	return k;
}

/*
 * A child takes the lock, names socket sd as the one it is changing (as a
 * holder running segments for it from the loopback queue does) and is
 * killed there; the next lock here takes it over and recovers.  With
 * scribble it names nothing and leaves sd's sequence numbers out of
 * order instead (recovery finds the socket's own fields wrong).  Returns
 * the recoveries that made (1).
 */
static uint64_t die_holding(struct sl_stack *s, int sd, bool scribble)
{
	uint64_t rec0 = sl_counter_sum(s, SL_C_lock_recovered);
	pid_t pid = fork();

	if (pid == 0) {
		struct sl_sock *so = sl_sock(s, (uint32_t)sd);

		sl_lock(s);
		if (scribble)
			so->tcp.snd_una = so->tcp.snd_nxt + 1000;
		else
			sl_sock_busy(s, so);
		kill(getpid(), SIGKILL);
		_exit(3);
	}
	wait_child(pid);
	sl_lock(s);
	sl_unlock(s);
	return sl_counter_sum(s, SL_C_lock_recovered) - rec0;
}

/*
 * A process copying out of buffers lent to it (a large receive, the lock
 * let go) while another dies holding the lock in the middle of a change
 * to that same socket (issue 17; test_killsoak's wrong byte): recovery
 * resets the connection, and must leave the borrower its chain.  Before,
 * it emptied the socket's lent chains with its queues and gave their
 * buffers to the pool; the next sends wrote their bytes there, and the
 * receive that was copying returned those bytes as its own.
 */
static void test_recovery_while_recv_lent(bool scribble)
{
	struct sl_stack *s = make_stack(scribble ? "lendrrs" : "lendrrx", 512);
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	uint32_t free0 = s->lib->buf_free_count, head, gen, idx[64], len[64];
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), c, d, c2, d2;
	static uint8_t lent[32768], later[32768];
	size_t n = 0, off = 0, at[64];
	unsigned int nb;

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	pair(s, l, &c, &d);
	pair(s, l, &c2, &d2);
	fill_with(s, c, 40000, 0x5a);

	sl_lock(s);
	gen = sl_sock(s, (uint32_t)d)->kp.gen;
	head = sl_tcp_recv_lend(s, sl_sock(s, (uint32_t)d), sizeof(lent), &n);
	sl_unlock(s);
	tap_ok(head != SLUICE_IDX_NONE && n > 0, "a receive borrowed %zu bytes", n);
	nb = chain_of(s, head, idx, 64);
	for (unsigned int i = 0; i < nb; i++) {
		len[i] = sl_buf(s, idx[i])->len;
		at[i] = (size_t)(sl_buf_data(s, idx[i]) - sl_buf_base(s, idx[i]));
		memcpy(lent + off, sl_buf_data(s, idx[i]), len[i]);
		off += len[i];
	}
	/* While it copies, a holder dies changing its socket. */
	tap_ok(die_holding(s, d, scribble) == 1, "a process died holding the lock, %s: recovered",
	       scribble ? "that socket's fields left wrong" : "naming that socket");
	tap_ok(!on_free_list_n(s, idx, nb),
	       "none of the %u buffers lent to the live borrower is in the pool (%d are)", nb,
	       on_free_list_n(s, idx, nb));
	/* Other traffic takes buffers from the pool meanwhile. */
	fill_with(s, c2, 40000, 0xa5);
	off = 0;
	for (unsigned int i = 0; i < nb; i++) {
		memcpy(later + off, sl_buf_base(s, idx[i]) + at[i], len[i]);
		off += len[i];
	}
	tap_ok(off == n && !memcmp(lent, later, n),
	       "what the borrower copies is still what it was lent (%zu of %zu bytes)", off, n);
	sl_lock(s);
	sl_tcp_recv_return(s, sl_sock(s, (uint32_t)d), gen, head, sl_now(s));
	tap_eq(sl_sock(s, (uint32_t)d)->rx_lent_idx, SLUICE_IDX_NONE,
	       "the borrower gives the chain back to the reset socket");
	sl_unlock(s);
	tap_ok(sluice_recv(ST(s), d, later, sizeof(later), MSG_DONTWAIT) < 0,
	       "and the socket is reset (its receive fails)");

	sluice_close(ST(s), c);
	sluice_close(ST(s), d);
	sluice_close(ST(s), c2);
	sluice_close(ST(s), d2);
	sluice_close(ST(s), l);
	for (int i = 0; i < 200 && s->lib->buf_free_count != free0; i++)
		sluice_stack_poll(ST(s));
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool");
	fx_destroy(s);
}

/*
 * The same for a large send: the borrower writes into its lent buffers
 * after the recovery.  Before, they were in the pool by then, and another
 * connection's bytes in them were overwritten: its receiver got the
 * borrower's bytes.
 */
static void test_recovery_while_send_lent(void)
{
	struct sl_stack *s = make_stack("lendrtx", 512);
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	uint32_t free0 = s->lib->buf_free_count, head, gen, idx[64], len[64];
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), c, d, c2, d2;
	static uint8_t buf[65536];
	size_t n = 0, got = 0, wrong = 0;
	unsigned int nb;
	long r;

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	pair(s, l, &c, &d);
	pair(s, l, &c2, &d2);

	sl_lock(s);
	gen = sl_sock(s, (uint32_t)c)->kp.gen;
	head = sl_tcp_send_lend(s, sl_sock(s, (uint32_t)c), 32768, &n);
	sl_unlock(s);
	tap_ok(head != SLUICE_IDX_NONE && n > 0, "a send borrowed %zu bytes of buffers", n);
	nb = chain_of(s, head, idx, 64);
	for (unsigned int i = 0; i < nb; i++)
		len[i] = sl_buf(s, idx[i])->aux;
	tap_eq(die_holding(s, c, false), 1,
	       "a process died holding the lock, naming that socket: recovered");
	tap_ok(!on_free_list_n(s, idx, nb),
	       "none of the %u buffers lent to the live borrower is in the pool (%d are)", nb,
	       on_free_list_n(s, idx, nb));
	/* Another connection's data, in buffers from the pool. */
	fill_with(s, c2, 40000, 0xa5);
	/* The borrower's copy lands now. */
	for (unsigned int i = 0; i < nb; i++)
		memset(sl_buf_base(s, idx[i]) + SL_TCP_DATA_OFF, 0x5a, len[i]);
	sl_lock(s);
	r = sl_tcp_send_return(s, sl_sock(s, (uint32_t)c), gen, head, sl_now(s));
	sl_unlock(s);
	tap_ok(r < 0, "its send fails as after a reset (%ld)", r);
	while ((r = sluice_recv(ST(s), d2, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		for (long i = 0; i < r; i++)
			wrong += buf[i] != 0xa5;
		got += (size_t)r;
	}
	tap_ok(got == 40000 && !wrong,
	       "the other connection receives its own bytes (%zu, %zu wrong)", got, wrong);

	sluice_close(ST(s), c);
	sluice_close(ST(s), d);
	sluice_close(ST(s), c2);
	sluice_close(ST(s), d2);
	sluice_close(ST(s), l);
	for (int i = 0; i < 200 && s->lib->buf_free_count != free0; i++)
		sluice_stack_poll(ST(s));
	tap_eq(s->lib->buf_free_count, free0, "every buffer back in the pool");
	fx_destroy(s);
}

int main(void)
{
	test_stream_two_processes(1);
	test_stream_two_processes(2);
	test_dead_borrower();
	test_socket_gone_while_lent();
	test_recovery_while_recv_lent(false);
	test_recovery_while_recv_lent(true);
	test_recovery_while_send_lent();
	return tap_done();
}
