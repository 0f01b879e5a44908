// SPDX-License-Identifier: BSD-2-Clause
/*
 * Issue 7: a region scribbled on by anyone never crashes the stack's own
 * processes.  For each kind of value the library reads from shared memory
 * (buffer links and free list, loopback queue, socket queues, hash and
 * port chains, accept queue, timer wheel, buffer
 * offset and length, socket state, the MTU, the lock word), a child
 * process builds a /dev/shm stack carrying TCP and UDP traffic over the
 * in-stack loopback, corrupts that value and then calls the API: every
 * call returns 0 or more or a negative errno, one of them
 * -ENOTRECOVERABLE, every call after it the same; the stack is marked
 * broken (broken_pid 0) with the right corrupt_* counter; a second
 * process on the stack gets -ENOTRECOVERABLE too; nobody is killed by a
 * signal; and a stack of the same name can be made again afterwards.
 * Then a seeded random scribble loop (SLUICE_SEED replays it): random
 * writes all over the region between random calls, checking the same.
 * Seeds that once failed run first, every time (regress_seeds[]);
 * SLUICE_ONE=SEED runs one round in this process, for a debugger.
 *
 *   child (one per case)                       peer (forked from child)
 *   stack t-corrupt-PID on /dev/shm, 10.9.0.1  same mapping, waits, then
 *   TCP c <-> a (listener l), UDP u2 -> u1     calls on the corrupt stack
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "stack_fixture.h"

#define ST(s)	((struct sluice_stack *)(s))
#define IP	"10.9.0.1"
#define BIG	(1 << 20)
/* Child exit codes: 0 passed, 1 a check failed, 2 could not set up. */

struct net {
	struct sl_stack *s;
	int l, c, a, u1, u2;
};

static uint8_t bigbuf[BIG];

static bool is_errno(long v)
{
	return v >= 0 || (v <= -1 && v >= -4095);
}

/* A stack with an established TCP connection (data queued both ways)
 * and two UDP sockets, one with datagrams waiting. */
static int net_up(struct net *n, const char *tag)
{
	struct sockaddr_in la = fx_addr(IP, 5000), u1a = fx_addr(IP, 5001),
			   u2a = fx_addr(IP, 5002);
	char data[1000];
	int i;

	setenv("SLUICE_SHM", "1", 1);
	setenv("SLUICE_NO_HELPER", "1", 1);
	n->s = fx_stack(tag, IP, NULL);
	n->l = sluice_socket(ST(n->s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	n->c = sluice_socket(ST(n->s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	n->u1 = sluice_socket(ST(n->s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	n->u2 = sluice_socket(ST(n->s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	if (sluice_bind(ST(n->s), n->l, &la) || sluice_listen(ST(n->s), n->l, 8) ||
	    sluice_bind(ST(n->s), n->u1, &u1a) || sluice_bind(ST(n->s), n->u2, &u2a))
		return -1;
	i = sluice_connect(ST(n->s), n->c, &la);
	if (i != -EINPROGRESS && i != 0)
		return -2;
	for (i = 0; i < 100; i++) {
		n->a = sluice_accept(ST(n->s), n->l, NULL);
		if (n->a >= 0)
			break;
		fx_clock_us += 1000;
		sluice_stack_poll(ST(n->s));
	}
	if (n->a < 0)
		return -3;
	memset(data, 'x', sizeof(data));
	for (i = 0; i < 4; i++) {
		if (sluice_send(ST(n->s), n->c, data, sizeof(data), MSG_DONTWAIT) != sizeof(data) ||
		    sluice_send(ST(n->s), n->a, data, sizeof(data), MSG_DONTWAIT) != sizeof(data))
			return -4;
		fx_clock_us += 100;
	}
	for (i = 0; i < 3; i++)
		if (sluice_sendto(ST(n->s), n->u2, data, 100, 0, &u1a) != 100)
			return -5;
	/* Everything delivered, queues as described. */
	sluice_stack_poll(ST(n->s));
	return sl_sock(n->s, n->a)->rxq_count >= 2 && sl_sock(n->s, n->u1)->rxq_count == 3 ?
		       0 : -6;
}

/* One call of the API: which (0..11) on the network's sockets. */
static long call(struct net *n, int which)
{
	struct sockaddr_in u1a = fx_addr(IP, 5001), any = fx_addr(IP, 0);
	struct sluice_pollfd p[4] = {
		{ .sd = n->a, .events = POLLIN | POLLOUT }, { .sd = n->c, .events = POLLIN },
		{ .sd = n->l, .events = POLLIN }, { .sd = n->u1, .events = POLLIN },
	};
	long r;
	int sd;

	switch (which) {
	case 0: return sluice_recv(ST(n->s), n->a, bigbuf, BIG, MSG_PEEK | MSG_DONTWAIT);
	case 1: return sluice_recv(ST(n->s), n->a, bigbuf, 1500, MSG_DONTWAIT);
	case 2: return sluice_send(ST(n->s), n->c, bigbuf, 3000, MSG_DONTWAIT);
	case 3: return sluice_send(ST(n->s), n->a, bigbuf, 1000, MSG_DONTWAIT);
	case 4:
		fx_clock_us += 20000;	/* timers are due: the wheel runs */
		return sluice_stack_poll(ST(n->s));
	case 5: return sluice_poll(ST(n->s), p, 4, 0);
	case 6: return sluice_accept(ST(n->s), n->l, NULL);
	case 7: return sluice_sendto(ST(n->s), n->u2, bigbuf, 200, 0, &u1a);
	case 8: return sluice_recvfrom(ST(n->s), n->u1, bigbuf, BIG, MSG_DONTWAIT, NULL);
	case 9:
		sd = sluice_socket(ST(n->s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
		if (sd < 0)
			return sd;
		r = sluice_bind(ST(n->s), sd, &any);
		return r ? r : sd;
	case 10: return sluice_recv(ST(n->s), n->c, bigbuf, 4096, MSG_DONTWAIT);
	default: return sluice_shutdown(ST(n->s), n->c, SHUT_WR);
	}
}

#define NCALLS 12

/* Run every call once; 0 if each returned a value or an errno, one
 * -ENOTRECOVERABLE and every one after it too.  Says why not. */
static int exercise(struct net *n, const char *what)
{
	bool seen = false;
	int bad = 0;

	for (int round = 0; round < 2; round++)
		for (int i = 0; i < NCALLS; i++) {
			long r = call(n, i);

			if (!is_errno(r)) {
				printf("#   %s: call %d returned %ld, not a value or -errno\n", what, i, r);
				bad = 1;
			}
			if (seen && r != -ENOTRECOVERABLE) {
				printf("#   %s: call %d returned %ld after the stack was corrupt\n",
				       what, i, r);
				bad = 1;
			}
			seen = seen || r == -ENOTRECOVERABLE;
		}
	if (!seen) {
		printf("#   %s: no call failed with -ENOTRECOVERABLE\n", what);
		bad = 1;
	}
	return bad;
}

enum kind {
	K_BUF_NEXT, K_BUF_CYCLE, K_BUF_OFFLEN, K_FREE_IDX, K_FREE_CYCLE, K_LO_HEAD,
	K_RXQ_HEAD, K_SNDQ, K_OOO_HEAD, K_HASH, K_HASH_CYCLE, K_PORT, K_ACCQ,
	K_WHEEL, K_WHEEL_LINK, K_SOCK_IDX, K_MSS, K_ERROR, K_MTU,
	K_LOCK, K_UDP_LEN, K_COUNT
};

static const struct {
	const char *what;
	const char *counter;
} kinds[K_COUNT] = {
	[K_BUF_NEXT] = { "buffer next_idx past the pool (receive queue)", "corrupt_buf_idx" },
	[K_BUF_CYCLE] = { "buffer next_idx looping on itself (receive queue)", "corrupt_chain" },
	[K_BUF_OFFLEN] = { "buffer off + len past the buffer", "corrupt_buf_len" },
	[K_FREE_IDX] = { "free-list head past the pool", "corrupt_buf_idx" },
	[K_FREE_CYCLE] = { "free list looping on itself", "corrupt_chain" },
	[K_LO_HEAD] = { "loopback queue head past the pool", "corrupt_buf_idx" },
	[K_RXQ_HEAD] = { "socket rxq_head past the pool", "corrupt_buf_idx" },
	[K_SNDQ] = { "TCP send queue head and tail past the pool", "corrupt_buf_idx" },
	[K_OOO_HEAD] = { "TCP ooo_head past the pool", "corrupt_buf_idx" },
	[K_HASH] = { "4-tuple hash chains past the socket table", "corrupt_sock_idx" },
	[K_HASH_CYCLE] = { "4-tuple hash chain looping on itself", "corrupt_chain" },
	[K_PORT] = { "port hash chains past the socket table", "corrupt_sock_idx" },
	[K_ACCQ] = { "listener accept queue past the socket table", "corrupt_sock_idx" },
	[K_WHEEL] = { "timer wheel slots past the socket table", "corrupt_sock_idx" },
	[K_WHEEL_LINK] = { "a timed socket's wheel_next past the socket table", "corrupt_sock_idx" },
	[K_SOCK_IDX] = { "socket's own idx naming another slot", "corrupt_sock_state" },
	[K_MSS] = { "TCP mss larger than a buffer", "corrupt_sock_state" },
	[K_ERROR] = { "socket error not an errno", "corrupt_sock_state" },
	[K_MTU] = { "region mtu larger than a buffer", "corrupt_header" },
	[K_LOCK] = { "lock word held by no possible process", "corrupt_lock" },
	[K_UDP_LEN] = { "datagram length past its packet", "corrupt_buf_len" },
};

static void corrupt(struct net *n, enum kind k)
{
	struct sl_stack *s = n->s;
	struct sluice_region *r = s->r;
	struct sl_sock *a = sl_sock(s, n->a), *c = sl_sock(s, n->c), *l = sl_sock(s, n->l);
	uint32_t i;

	switch (k) {
	case K_BUF_NEXT: sl_buf(s, a->rxq_head)->next_idx = s->n_bufs + 7; break;
	case K_BUF_CYCLE: sl_buf(s, a->rxq_head)->next_idx = a->rxq_head; break;
	case K_BUF_OFFLEN: sl_buf(s, a->rxq_head)->off = (uint16_t)(s->buf_size - 8); break;
	case K_FREE_IDX: s->lib->buf_free_idx = s->n_bufs + 3; break;
	case K_FREE_CYCLE: sl_buf(s, s->lib->buf_free_idx)->next_idx = s->lib->buf_free_idx; break;
	case K_LO_HEAD: s->lib->lo_head = s->n_bufs + 9; break;
	case K_RXQ_HEAD: a->rxq_head = s->n_bufs * 3; break;
	case K_SNDQ: c->tcp.sndq_head = c->tcp.sndq_tail = 0x7ffffff0; break;
	case K_OOO_HEAD: a->tcp.ooo_head = s->n_bufs; break;
	case K_HASH:
		for (i = 0; i < s->hash_buckets; i++)
			s->hash[i] = s->max_sockets + i;
		break;
	case K_HASH_CYCLE:
		/* Every 4-tuple chain starts at a, which links to itself: a
		 * lookup for anything but a goes round. */
		for (i = 0; i < s->hash_buckets; i++)
			s->hash[i] = a->idx;
		a->hash_next = a->idx;
		break;
	case K_PORT:
		for (i = 0; i < s->hash_buckets; i++)
			s->hash[s->hash_buckets + i] = 0xfffffff0u;
		break;
	case K_ACCQ: l->tcp.acc_head = s->max_sockets + 1; break;
	case K_WHEEL:
		for (i = 0; i < SLUICE_WHEEL_SLOTS; i++)
			s->wheel[i] = s->max_sockets + 100;
		break;
	case K_WHEEL_LINK:
		/* On the wheel (a deadline ahead), its next link bogus. */
		c->wheel_due_ms = s->lib->wheel_now_ms + 500;
		c->wheel_prev = SLUICE_IDX_NONE;
		c->wheel_next = 0x12345678;
		break;
	case K_SOCK_IDX: a->idx = n->c; break;
	case K_MSS: c->tcp.mss = 65000; break;
	case K_ERROR: a->error = INT32_MIN; break;
	case K_MTU: r->mtu = 1u << 20; break;
	case K_LOCK: r->lock = SLUICE_LOCK_HELD | (0x1fffffffu << SLUICE_LOCK_PID_SHIFT); break;
	case K_UDP_LEN: sl_buf(s, sl_sock(s, n->u1)->rxq_head)->seq = 0xfffff000u; break;
	default: break;
	}
}

/* The peer: same mapping (forked before the corruption), its own
 * handle; once told, its calls must fail with -ENOTRECOVERABLE too. */
static int peer(struct net *n, int rfd)
{
	char c;

	if (read(rfd, &c, 1) != 1)
		return 2;
	if (sluice_socket(ST(n->s), SLUICE_SOCK_DGRAM) != -ENOTRECOVERABLE)
		return 1;
	if (sluice_recv(ST(n->s), n->c, bigbuf, 100, MSG_DONTWAIT) != -ENOTRECOVERABLE)
		return 1;
	return 0;
}

static int child_case(enum kind k, const char *tag)
{
	struct net n;
	int pfd[2], st, bad;
	pid_t pp;
	int ret = net_up(&n, tag);

	if (ret) {
		printf("#   setup failed: %d\n", ret);
		return 2;
	}
	if (pipe(pfd))
		return 2;
	pp = fork();
	if (pp == 0) {
		close(pfd[1]);
		_exit(peer(&n, pfd[0]));
	}
	close(pfd[0]);
	corrupt(&n, k);
	bad = exercise(&n, kinds[k].what);
	if (n.s->r->state != SLUICE_STATE_BROKEN || n.s->lib->broken_pid != 0) {
		printf("#   state %u broken_pid %u, want broken by corruption (0)\n",
		       n.s->r->state, n.s->lib->broken_pid);
		bad = 1;
	}
	if (!fx_counter(n.s, kinds[k].counter)) {
		printf("#   counter %s did not move (the stack says:", kinds[k].counter);
		for (int i = SL_C_corrupt_buf_idx; i <= SL_C_corrupt_header; i++)
			if (sl_counter_sum(n.s, i))
				printf(" %s", sl_counter_names[i]);
		printf(")\n");
		bad = 1;
	}
	if (write(pfd[1], "g", 1) != 1 || waitpid(pp, &st, 0) != pp ||
	    !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("#   the second process did not get -ENOTRECOVERABLE (status 0x%x)\n", st);
		bad = 1;
	}
	sluice_stack_close(ST(n.s));
	return bad;
}

/* The name fx_stack() gives a stack made by process pid. */
static void stack_name(char *buf, size_t len, const char *tag, pid_t pid)
{
	snprintf(buf, len, "t-%s-%d", tag, (int)pid);
}

/* Run fn(arg) in a child with a time limit (a hang ends by SIGALRM); its
 * exit status, or 128 + the signal that ended it.  The child's stack (on
 * /dev/shm, named after it) is removed after it, whatever state it is in. */
static int in_child(int (*fn)(int, const char *), int arg, const char *tag, unsigned int secs)
{
	pid_t p = fork();
	char name[32];
	int st;

	if (p == 0) {
		alarm(secs);
		_exit(fn(arg, tag));
	}
	if (waitpid(p, &st, 0) != p)
		return -1;
	stack_name(name, sizeof(name), tag, p);
	sluice_stack_destroy(name);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static int case_fn(int k, const char *tag)
{
	return child_case((enum kind)k, tag);
}

/* After a corrupt stack: the name can be made again and works. */
static bool remade(const char *tag)
{
	struct sluice_stack_config cfg = { .n_bufs = 256, .max_sockets = 64 };
	struct sluice_stack *st;
	char name[32];
	int sd;

	stack_name(name, sizeof(name), tag, getpid());
	setenv("SLUICE_SHM", "1", 1);
	sluice_stack_destroy(name);
	if (sluice_stack_create(name, &cfg, &st))
		return false;
	sd = sluice_socket(st, SLUICE_SOCK_DGRAM);
	sluice_stack_close(st);
	sluice_stack_destroy(name);
	return sd >= 0;
}

static void test_each_kind(void)
{
	for (int k = 0; k < K_COUNT; k++) {
		int rc = in_child(case_fn, k, "corrupt", 20);

		tap_ok(rc == 0, "%s: no signal, clear error -ENOTRECOVERABLE for every process, "
		       "counted in %s (rc %d)", kinds[k].what, kinds[k].counter, rc);
	}
	tap_ok(remade("corrupt-again"), "a stack can be made again after corrupt ones");
}

/* ---- random scribbling -------------------------------------------------- */

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

/* A value for an index or length: random, or near a limit. */
static uint32_t nasty(uint32_t limit)
{
	switch (rnd() % 6) {
	case 0: return rnd();
	case 1: return limit + rnd() % 4;
	case 2: return limit - 1 - rnd() % 4;
	case 3: return SLUICE_IDX_NONE - rnd() % 2;
	case 4: return rnd() % (limit + 1);
	default: return rnd() % 65536;
	}
}

/*
 * One seeded round: traffic, then up to 300 steps of a few random 32-bit
 * writes somewhere in the region (header past the name, socket table,
 * hash and wheel, buffer metadata) and three random calls.  Exit 0: every
 * call returned a value or an errno, and once one said the stack is
 * broken (-ENOTRECOVERABLE; -EPIPE if a scribbled state says broken with
 * a pid) every later one did too.  3: no corruption
 * found in 300 steps (not a failure: the writes may have missed).
 */
static int scribble_round(int seed, const char *tag)
{
	struct net n;
	uint8_t *base;
	uint64_t hdr_lo = offsetof(struct sluice_region, state);
	uint64_t sock_lo, sock_hi, hw_lo, hw_hi, meta_lo, meta_hi;
	long broken = 0;

	rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed * 0x100000001b3ull);
	if (net_up(&n, tag))
		return 2;
	base = n.s->base;
	sock_lo = (uint64_t)(n.s->socks - base);
	sock_hi = sock_lo + (uint64_t)n.s->max_sockets * n.s->sock_size;
	hw_lo = (uint64_t)((uint8_t *)n.s->hash - base);
	hw_hi = (uint64_t)((uint8_t *)(n.s->wheel + SLUICE_WHEEL_SLOTS) - base);
	meta_lo = (uint64_t)((uint8_t *)n.s->bufmeta - base);
	meta_hi = meta_lo + (uint64_t)n.s->n_bufs * sizeof(struct sluice_buf);
	for (int step = 0; step < 300; step++) {
		int writes = 1 + rnd() % 3;

		for (int w = 0; w < writes; w++) {
			uint64_t off;
			uint32_t v;

			switch (rnd() % 8) {
			case 0:	/* header, past magic, sizes and name */
				off = hdr_lo + rnd() % (sizeof(struct sluice_region) - hdr_lo);
				v = rnd();
				break;
			case 1: case 2:
				off = hw_lo + rnd() % (hw_hi - hw_lo);
				v = nasty(n.s->max_sockets);
				break;
			case 3: case 4: case 5:
				off = meta_lo + rnd() % (meta_hi - meta_lo);
				v = nasty(n.s->n_bufs);
				break;
			default:
				off = sock_lo + rnd() % (sock_hi - sock_lo);
				v = rnd() & 1 ? nasty(n.s->max_sockets) : nasty(n.s->n_bufs);
				break;
			}
			off &= ~3ull;
			/* The lock word: a scribbled holder that happens to
			 * be alive would hang every caller, which is not what
			 * this checks (test_lock, test_death do locks). */
			if (off == offsetof(struct sluice_region, lock))
				continue;
			/* Nor a socket's own lock (priv_lock, sock.c): a pid
			 * that names a live process (55, a kernel thread)
			 * holds it as long as that process lives. */
			if (off >= sock_lo && off < sock_hi &&
			    (off - sock_lo) % n.s->sock_size == offsetof(struct sl_sock, priv_lock))
				continue;
			memcpy(base + off, &v, 4);
		}
		/* Once broken, no more writes: every call must say so. */
		for (int c = 0; c < (broken ? NCALLS : 3); c++) {
			int which = broken ? c : (int)(rnd() % NCALLS);
			long r = call(&n, which);

			if (!is_errno(r)) {
				printf("#   seed %d step %d: call %d returned %ld\n", seed, step, which,
				       r);
				return 1;
			}
			if (broken && r != -ENOTRECOVERABLE && r != -EPIPE) {
				printf("#   seed %d step %d: call %d returned %ld after the stack "
				       "broke with %ld\n", seed, step, c, r, broken);
				return 1;
			}
			/* Broken: found corrupt, or a scribbled state says so
			 * (-EPIPE also comes from a TCP socket that cannot send). */
			if (!broken && (r == -ENOTRECOVERABLE ||
					(r == -EPIPE && n.s->r->state == SLUICE_STATE_BROKEN))) {
				broken = r;
				c = -1;		/* now each call in turn */
			}
		}
		if (broken)
			break;
	}
	sluice_stack_close(ST(n.s));
	return broken ? 0 : 3;
}

/* Rounds that found bugs: 78858 (a TCP header found in a buffer before
 * the stack broke, its IPv4 header moved after, against the sink:
 * SIGSEGV), 13541 (accept() returned a scribbled so->error as -errno). */
static const int regress_seeds[] = { 78858, 13541, 14328, 15351 };

static void test_regress_seeds(void)
{
	int failed = 0;

	for (unsigned int i = 0; i < sizeof(regress_seeds) / sizeof(regress_seeds[0]); i++) {
		int rc = in_child(scribble_round, regress_seeds[i], "regress", 20);

		if (rc != 0 && rc != 3) {
			failed++;
			printf("#   seed %d ended %s %d\n", regress_seeds[i],
			       rc >= 128 ? "by signal" : "with status", rc >= 128 ? rc - 128 : rc);
		}
	}
	tap_ok(!failed, "the scribble rounds that once failed pass (%d failed)", failed);
}

static void test_random_scribble(void)
{
	const char *e = getenv("SLUICE_SEED");
	int seed0 = e && *e ? atoi(e) : (int)time(NULL) % 100000;
	int rounds = 0, found = 0, missed = 0, failed = 0;
	struct timespec t0, t1;

	printf("# random scribble: seed %d (SLUICE_SEED=%d replays it)\n", seed0, seed0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* At most 60 rounds and about 3 seconds. */
	for (int i = 0; i < 60; i++) {
		int rc = in_child(scribble_round, seed0 + i, "scribble", 20);

		rounds++;
		if (rc == 0)
			found++;
		else if (rc == 3)
			missed++;
		else {
			failed++;
			printf("#   round %d (SLUICE_SEED=%d) ended %s %d\n", i, seed0 + i,
			       rc >= 128 ? "by signal" : "with status", rc >= 128 ? rc - 128 : rc);
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec >= 3)
			break;
	}
	tap_ok(!failed, "random scribbling, %d rounds: no signal, no hang, every call a value "
	       "or -errno, and broken stays broken (%d failed)", rounds, failed);
	tap_ok(found > 0, "and the corruption was found in %d of %d rounds (%d missed it)",
	       found, rounds, missed);
	tap_ok(remade("scribble-again"), "a stack can be made again after the scribbling");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("SLUICE_ONE"))
		return scribble_round(atoi(getenv("SLUICE_ONE")), "one");
	test_each_kind();
	test_regress_seeds();
	test_random_scribble();
	return tap_done();
}
