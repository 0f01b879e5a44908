// SPDX-License-Identifier: BSD-2-Clause
/*
 * Benchmarks of the stack beside the Linux kernel, in one run:
 *
 *   bench pingpong [ROUNDS]   64-byte TCP ping-pong between two processes,
 *                             busy-polling: Sluice (one stack, loopback
 *                             inside the stack) and kernel 127.0.0.1;
 *                             and the floor: one cache line handed back
 *                             and forth between the same two CPUs
 *   bench pingpong6 [ROUNDS]  the same over ::1 (AF_INET6 sockets; in the
 *                             stack on ::1's address handle)
 *   bench v6 [RUNS]           IPv6 beside IPv4 (issue 20 item 5): ping-pong,
 *                             loop and bulk of the kernel over ::1 and of
 *                             Sluice over 127.0.0.1 and ::1, RUNS times
 *                             alternating (default 3), each figure with the
 *                             CPU an operation of both ends; "all" runs it
 *   bench sockets [RUNS]      the BSD socket calls' ping-pong over 127.0.0.1
 *                             and ::1, alternating, RUNS each (default 3):
 *                             the kernel's, or under `sluice run` Sluice's
 *                             through the preload (AF_INET6 sockets as
 *                             programs open them)
 *   bench bulk [MBYTES]       single-stream TCP bulk between two processes
 *   bench conns [N]           N established connections in one stack:
 *                             shared bytes per connection
 *   bench rtt IP PORT [N]     kernel TCP client: 64-byte ping-pong against
 *                             an echo server, blocking calls; prints the
 *                             mean one-way latency (for the demo)
 *   bench kecho PORT SECONDS  kernel TCP echo server (one client at a time)
 *   bench loop [MESSAGES]     one process drives both ends of a loopback
 *                             connection, 64 bytes one way then back: ns
 *                             a message (its send and its receive), the
 *                             stack's own cost with no other CPU involved;
 *                             kernel 127.0.0.1 beside it
 *   bench loop1 [MESSAGES]    the same, every message the same way (a
 *                             one-way stream of small writes, each read
 *                             before the next)
 *
 * Both sides use the same method: non-blocking calls in a spin loop for the
 * latency test, blocking-free batch sends for bulk.  Timings come from
 * CLOCK_MONOTONIC; every loop is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "api/api.h"

#define MSG 64
#define PORT 7301

/*
 * Pin the calling process to one CPU, as one would with taskset for
 * sockperf: the two ends of a ping-pong on different cores, never sharing
 * one (which would make both wait for time slices).  Same for both stacks.
 */
static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void unpin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < sysconf(_SC_NPROCESSORS_ONLN) && i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds of this process (self) or of its waited-for children. */
static double cpu_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Both ends' CPU so far: this process and the children it has reaped. */
static double cpu_both(void)
{
	return cpu_s(RUSAGE_SELF) + cpu_s(RUSAGE_CHILDREN);
}

/* pingpong6: AF_INET6 on ::1 (the stack names ::1 by a handle,
 * lib/proto/proto.h "IPv6 sockets"). */
static int use_v6;

static struct sockaddr_in lo_addr(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = use_v6 ? SL_V6TOK_LO : htonl(INADDR_LOOPBACK);
	return a;
}

/* A stack socket, AF_INET6 for pingpong6 (as the preload makes one). */
static int sl_sock_new(struct sluice_stack *st, int type)
{
	struct sl_stack *s = (struct sl_stack *)st;
	int sd = sluice_socket(st, type);

	if (sd >= 0 && use_v6 && !sl_lock(s)) {
		sl_sock(s, (uint32_t)sd)->flags |= SL_SF_V6;
		sl_unlock(s);
	}
	return sd;
}

static void fail(const char *what, long err)
{
	fprintf(stderr, "bench: %s: %s\n", what, strerror((int)(err < 0 ? -err : err)));
	exit(1);
}

/*
 * The median as well as the mean: round trips are timed in batches of
 * BATCH, and the median batch says what a round trip takes while both
 * ends run.  On a loaded machine the mean counts every time slice another
 * program took from either end; the median batch does not (a batch of
 * 64 round trips is over before most time slices end).
 */
#define BATCH 64

struct batches {
	double *t;	/* seconds a batch */
	long n, max;
	double last;
};

static void batches_init(struct batches *b, long rounds)
{
	b->max = rounds / BATCH + 1;
	b->t = calloc((size_t)b->max, sizeof(*b->t));
	b->n = 0;
	b->last = now_s();
	if (!b->t)
		fail("calloc", -ENOMEM);
}

static void batches_tick(struct batches *b, long i)
{
	double t;

	if (i % BATCH || b->n >= b->max)
		return;
	t = now_s();
	b->t[b->n++] = t - b->last;
	b->last = t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median batch's one-way time in us (a round trip is two ways). */
static double batches_median(struct batches *b)
{
	double m;

	if (b->n < 2) {
		free(b->t);
		return 0;
	}
	/* The first batch began before the timed loop. */
	qsort(b->t + 1, (size_t)(b->n - 1), sizeof(*b->t), cmp_double);
	m = b->t[1 + (b->n - 1) / 2];
	free(b->t);
	return m / BATCH / 2 * 1e6;
}

/* ---- the Sluice side ------------------------------------------------- */

static struct sluice_stack *make_stack(const char *name, unsigned int socks, unsigned int bufs)
{
	struct sluice_stack_config cfg = { .max_sockets = socks, .n_bufs = bufs };
	const char *bs = getenv("BENCH_BUF_SIZE");

	/* BENCH_BUF_SIZE: packet buffer size (default 2048, as a stack's). */
	if (bs)
		cfg.buf_size = (uint32_t)atoi(bs);
	struct sluice_stack *st;
	int ret;

	sluice_stack_destroy(name);
	ret = sluice_stack_create(name, &cfg, &st);
	if (ret)
		fail("create stack", ret);
	return st;
}

/* BENCH_SOCKBUF: SO_SNDBUF and SO_RCVBUF of both ends (default: the stack's). */
static void set_sockbuf(struct sluice_stack *st, int sd)
{
	const char *v = getenv("BENCH_SOCKBUF");
	int sz = v ? atoi(v) : 0;

	if (sz > 0) {
		sluice_setsockopt(st, sd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		sluice_setsockopt(st, sd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	}
}

/* Exchange all of len bytes, spinning on non-blocking calls. */
static int sl_xfer(struct sluice_stack *st, int sd, char *buf, long len, bool send)
{
	long done = 0, n;
	double give_up = now_s() + 10;
	unsigned int spins = 0;

	while (done < len) {
		n = send ? sluice_send(st, sd, buf + done, len - done, MSG_DONTWAIT) :
			   sluice_recv(st, sd, buf + done, len - done, MSG_DONTWAIT);
		if (n > 0) {
			done += n;
		} else if (n == -EAGAIN) {
			if (!(++spins & 4095) && now_s() > give_up)
				return -ETIMEDOUT;
			sluice_stack_poll(st);
		} else {
			return n ? (int)n : -EPIPE;
		}
	}
	return 0;
}

static int sl_connect_pair(struct sluice_stack *st, const char *name, int *srv_out)
{
	struct sockaddr_in a = lo_addr(PORT);
	int l = sl_sock_new(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), one = 1;

	sluice_setsockopt(st, l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	set_sockbuf(st, l);
	if (sluice_bind(st, l, &a) || sluice_listen(st, l, 16))
		fail("listen", -EADDRINUSE);
	(void)name;
	*srv_out = l;
	return 0;
}

/*
 * The floor under any ping-pong between two processes on two CPUs: one
 * cache line, written in turn by each (a counter the other waits to see
 * move), in shared memory.  One way, in ns: what a message would cost if
 * moving it took nothing but the line that says it is there.
 */
static double cacheline_pingpong(long rounds, double *median)
{
	struct batches bt;
	uint64_t *line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double t0, t1, give_up = now_s() + 20;
	int status;
	pid_t pid;

	if (line == MAP_FAILED)
		fail("mmap", -errno);
	pid = fork();
	if (pid == 0) {
		pin(1);
		for (uint64_t i = 1; i < (uint64_t)rounds * 2; i += 2) {
			while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != i)
				if (now_s() > give_up)
					_exit(1);
			__atomic_store_n(line, i + 1, __ATOMIC_RELEASE);
		}
		_exit(0);
	}
	pin(0);
	batches_init(&bt, rounds);
	t0 = now_s();
	for (uint64_t i = 0; i < (uint64_t)rounds * 2; i += 2) {
		batches_tick(&bt, (long)(i / 2));
		__atomic_store_n(line, i + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != i + 2)
			if (now_s() > give_up)
				fail("cache-line ping-pong", -ETIMEDOUT);
	}
	t1 = now_s();
	waitpid(pid, &status, 0);
	unpin();
	munmap(line, 4096);
	*median = batches_median(&bt) * 1000;
	return (t1 - t0) / rounds / 2 * 1e9;
}

/*
 * cpu: both ends' CPU a round trip, us (all rounds, the warm-up's too,
 * stack set-up included: both sides are measured the same way).
 */
static double sluice_pingpong(long rounds, double *median, double *cpu)
{
	struct batches bt;
	const char *name = "bench-pp";
	struct sluice_stack *st = make_stack(name, 64, 1024);
	struct sockaddr_in a = lo_addr(PORT);
	char buf[MSG];
	int l, c, one = 1, status;
	double t0, t1, c0 = cpu_both();
	pid_t pid;

	sl_connect_pair(st, name, &l);
	pid = fork();
	if (pid == 0) {
		/* The echo side, in a second process attached by name. */
		pin(1);
		struct sluice_stack *s2;
		int ret = sluice_stack_attach(name, &s2), sd = -1;
		double give_up = now_s() + 10;

		if (ret)
			_exit(2);
		while (sd < 0 && now_s() < give_up) {
			sd = sluice_accept(s2, l, NULL);
			if (sd < 0)
				sluice_stack_poll(s2);
		}
		sluice_setsockopt(s2, sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (long i = 0; i < rounds; i++)
			if (sl_xfer(s2, sd, buf, MSG, false) || sl_xfer(s2, sd, buf, MSG, true))
				_exit(3);
		sluice_close(s2, sd);
		sluice_stack_close(s2);
		_exit(0);
	}
	pin(0);
	c = sl_sock_new(st, SLUICE_SOCK_STREAM);
	if (sluice_connect(st, c, &a))
		fail("connect", -ECONNREFUSED);
	sluice_setsockopt(st, c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(buf, 'p', sizeof(buf));
	/* Warm up, then time. */
	for (int i = 0; i < 1000; i++)
		if (sl_xfer(st, c, buf, MSG, true) || sl_xfer(st, c, buf, MSG, false))
			fail("warm-up", -EIO);
	batches_init(&bt, rounds);
	t0 = now_s();
	for (long i = 1000; i < rounds; i++) {
		batches_tick(&bt, i - 1000);
		if (sl_xfer(st, c, buf, MSG, true) || sl_xfer(st, c, buf, MSG, false))
			fail("ping-pong", -EIO);
	}
	t1 = now_s();
	*median = batches_median(&bt);
	waitpid(pid, &status, 0);
	*cpu = (cpu_both() - c0) / rounds * 1e6;
	unpin();
	if (getenv("BENCH_VERBOSE"))
		fprintf(stderr, "pingpong: lock contended %llu times\n",
			(unsigned long long)((struct sl_stack *)st)->lib->lock_contended);
	sluice_close(st, c);
	sluice_stack_close(st);
	sluice_stack_destroy(name);
	return (t1 - t0) / (rounds - 1000) / 2 * 1e6;
}

/* cpu: both ends' CPU a MiB, us. */
static double sluice_bulk(long mbytes, double *cpu)
{
	const char *name = "bench-bulk";
	struct sluice_stack *st = make_stack(name, 64, 8192);
	struct sockaddr_in a = lo_addr(PORT);
	long total = mbytes << 20, chunk = 65536;
	static char buf[65536];
	int l, c, status, p[2];
	double t0, t1, c0 = cpu_both();
	pid_t pid;

	sl_connect_pair(st, name, &l);
	if (pipe(p))
		fail("pipe", errno);
	pid = fork();
	if (pid == 0) {
		struct sluice_stack *s2;
		int sd = -1;
		long got = 0, n;
		double give_up = now_s() + 60;

		if (sluice_stack_attach(name, &s2))
			_exit(2);
		pin(1);
		while (sd < 0 && now_s() < give_up) {
			sd = sluice_accept(s2, l, NULL);
			if (sd < 0)
				sluice_stack_poll(s2);
		}
		while (got < total && now_s() < give_up) {
			n = sluice_recv(s2, sd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n > 0)
				got += n;
			else if (n == -EAGAIN)
				sluice_stack_poll(s2);
			else
				break;
		}
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		sluice_close(s2, sd);
		sluice_stack_close(s2);
		_exit(got == total ? 0 : 3);
	}
	pin(0);
	c = sl_sock_new(st, SLUICE_SOCK_STREAM);
	set_sockbuf(st, c);
	if (sluice_connect(st, c, &a))
		fail("connect", -ECONNREFUSED);
	t0 = now_s();
	for (long sent = 0; sent < total; sent += chunk)
		if (sl_xfer(st, c, buf, chunk, true))
			fail("send", -EIO);
	if (read(p[0], buf, 1) != 1)
		fail("receiver", -EIO);
	t1 = now_s();
	waitpid(pid, &status, 0);
	*cpu = (cpu_both() - c0) / mbytes * 1e6;
	unpin();
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("receiver exit", -EIO);
	if (getenv("BENCH_VERBOSE")) {
		fprintf(stderr, "bulk: retransmits %llu, RTOs %llu, nobuf %llu, lock contended %llu\n",
			(unsigned long long)sl_counter_sum((struct sl_stack *)st, SL_C_tcp_retransmit),
			(unsigned long long)sl_counter_sum((struct sl_stack *)st, SL_C_tcp_rto),
			(unsigned long long)sl_counter_sum((struct sl_stack *)st, SL_C_nobuf),
			(unsigned long long)((struct sl_stack *)st)->lib->lock_contended);
		for (unsigned int i = 0; i < SL_C_COUNT; i++) {
			uint64_t v = sl_counter_sum((struct sl_stack *)st, i);

			if (v)
				fprintf(stderr, "  %s %llu\n", sl_counter_names[i], (unsigned long long)v);
		}
	}
	sluice_close(st, c);
	sluice_stack_close(st);
	sluice_stack_destroy(name);
	return total * 8 / (t1 - t0) / 1e9;
}

/* ---- the kernel side ---------------------------------------------------- */

static int k_xfer(int fd, char *buf, long len, bool send)
{
	long done = 0, n;

	while (done < len) {
		n = send ? (long)write(fd, buf + done, len - done) :
			   (long)recv(fd, buf + done, len - done, MSG_DONTWAIT);
		if (n > 0)
			done += n;
		else if (n < 0 && errno == EAGAIN)
			continue;
		else
			return -1;
	}
	return 0;
}

/* The kernel's loopback address: 127.0.0.1, or ::1 for pingpong6. */
static socklen_t k_addr(struct sockaddr_storage *ss, int port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	memset(ss, 0, sizeof(*ss));
	if (use_v6)
		memcpy(ss, &a6, sizeof(a6));
	else
		memcpy(ss, &a, sizeof(a));
	return use_v6 ? sizeof(a6) : sizeof(a);
}

static int k_listen(void)
{
	struct sockaddr_storage a;
	socklen_t al = k_addr(&a, PORT + 1);
	int l = socket(use_v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), one = 1;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, al) || listen(l, 16))
		fail("kernel listen", errno);
	return l;
}

static int k_connect(void)
{
	struct sockaddr_storage a;
	socklen_t al = k_addr(&a, PORT + 1);
	int c = socket(use_v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0), one = 1;

	if (connect(c, (struct sockaddr *)&a, al))
		fail("kernel connect", errno);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
}

static double kernel_pingpong(long rounds, double *median, double *cpu)
{
	double t0, t1, c0 = cpu_both();
	struct batches bt;
	int l = k_listen(), c, one = 1, status;
	char buf[MSG];
	pid_t pid = fork();

	if (pid == 0) {
		int sd = accept(l, NULL, NULL);

		pin(1);
		setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		for (long i = 0; i < rounds; i++)
			if (k_xfer(sd, buf, MSG, false) || k_xfer(sd, buf, MSG, true))
				_exit(3);
		_exit(0);
	}
	pin(0);
	c = k_connect();
	memset(buf, 'p', sizeof(buf));
	for (int i = 0; i < 1000; i++)
		k_xfer(c, buf, MSG, true), k_xfer(c, buf, MSG, false);
	batches_init(&bt, rounds);
	t0 = now_s();
	for (long i = 1000; i < rounds; i++) {
		batches_tick(&bt, i - 1000);
		if (k_xfer(c, buf, MSG, true) || k_xfer(c, buf, MSG, false))
			fail("kernel ping-pong", errno);
	}
	t1 = now_s();
	*median = batches_median(&bt);
	waitpid(pid, &status, 0);
	*cpu = (cpu_both() - c0) / rounds * 1e6;
	unpin();
	close(c);
	close(l);
	return (t1 - t0) / (rounds - 1000) / 2 * 1e6;
}

static double kernel_bulk(long mbytes, double *cpu)
{
	double t0, t1, c0 = cpu_both();
	int l = k_listen(), c, status, p[2];
	long total = mbytes << 20;
	static char buf[65536];
	pid_t pid;

	if (pipe(p))
		fail("pipe", errno);
	pid = fork();
	if (pid == 0) {
		int sd = accept(l, NULL, NULL);
		long got = 0, n;

		pin(1);
		while (got < total && (n = read(sd, buf, sizeof(buf))) > 0)
			got += n;
		if (write(p[1], "x", 1) != 1)
			_exit(4);
		_exit(got == total ? 0 : 3);
	}
	pin(0);
	c = k_connect();
	t0 = now_s();
	for (long sent = 0; sent < total; sent += sizeof(buf))
		if (k_xfer(c, buf, sizeof(buf), true))
			fail("kernel send", errno);
	if (read(p[0], buf, 1) != 1)
		fail("kernel receiver", EIO);
	t1 = now_s();
	waitpid(pid, &status, 0);
	*cpu = (cpu_both() - c0) / mbytes * 1e6;
	unpin();
	close(c);
	close(l);
	return total * 8 / (t1 - t0) / 1e9;
}

/* ---- connections ------------------------------------------------------ */

static void conns(long n)
{
	const char *name = "bench-conns";
	struct sluice_stack *st = make_stack(name, (unsigned int)(2 * n + 64), 4096);
	struct sl_stack *s = (struct sl_stack *)st;
	struct sockaddr_in srv = lo_addr(PORT + 2);
	int l = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	long est = 0, acc = 0;
	double t0 = now_s();

	if (sluice_bind(st, l, &srv) || sluice_listen(st, l, 4096))
		fail("listen", -EADDRINUSE);
	for (long i = 0; i < n && now_s() - t0 < 120; i++) {
		/* Spread clients over 127.0.0.2.. so ports do not run out. */
		struct sockaddr_in me = lo_addr(0);
		int c = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), ret;

		me.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + i / 25000);
		if (c < 0)
			fail("socket", c);
		if ((ret = sluice_bind(st, c, &me)))
			fail("bind", ret);
		ret = sluice_connect(st, c, &srv);
		if (ret && ret != -EINPROGRESS)
			fail("connect", ret);
		est++;
		while (sluice_accept(st, l, NULL) >= 0)
			acc++;
	}
	for (int k = 0; k < 100 && acc < est; k++) {
		sluice_stack_poll(st);
		while (sluice_accept(st, l, NULL) >= 0)
			acc++;
	}
	printf("conns: %ld established and accepted (%ld connections = %ld sockets) in %.1f s\n",
	       acc, acc, 2 * acc + 1, now_s() - t0);
	printf("conns: socket slot %u bytes + 2 hash links (8 bytes): %u bytes of shared state "
	       "per idle TCP endpoint, no data buffers held (%u of %u in use)\n",
	       s->r->sock_size, s->r->sock_size + 8, s->r->n_bufs - s->lib->buf_free_count,
	       s->r->n_bufs);
	printf("conns: region %.1f MiB for %u socket slots\n", s->r->region_size / 1048576.0,
	       s->r->max_sockets);
	sluice_stack_close(st);
	sluice_stack_destroy(name);
}

static int rtt(const char *ip, int port, long rounds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int c = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char buf[MSG];
	double t0, best = 1e9;

	inet_pton(AF_INET, ip, &a.sin_addr);
	if (connect(c, (struct sockaddr *)&a, sizeof(a)))
		fail("connect", errno);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(buf, 'r', sizeof(buf));
	t0 = now_s();
	for (long i = 0; i < rounds; i++) {
		double t = now_s();
		long got = 0, n;

		if (write(c, buf, MSG) != MSG)
			fail("write", errno);
		while (got < MSG && (n = read(c, buf + got, MSG - got)) > 0)
			got += n;
		if (got != MSG)
			fail("read", EIO);
		t = now_s() - t;
		if (t < best)
			best = t;
	}
	printf("%.1f %.1f\n", (now_s() - t0) / rounds / 2 * 1e6, best / 2 * 1e6);
	close(c);
	return 0;
}

static int kecho(int port, double seconds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct timeval tv = { .tv_sec = (long)seconds };
	char buf[65536];

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 8))
		fail("listen", errno);
	printf("ready\n");
	fflush(stdout);
	for (double end = now_s() + seconds; now_s() < end;) {
		int c = accept(l, NULL, NULL);
		long n;

		if (c < 0)
			break;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while ((n = read(c, buf, sizeof(buf))) > 0)
			if (write(c, buf, n) != n)
				break;
		close(c);
	}
	return 0;
}

/* The ping-pong figures, over 127.0.0.1 or (use_v6) ::1. */
static void pingpong(long rounds)
{
	/* BENCH_ONLY=sluice skips the kernel side, for profiling. */
	const char *only = getenv("BENCH_ONLY");
	double km = 1, sm, fm, kc = 0, sc;
	double k = only && !strcmp(only, "sluice") ? 1 : kernel_pingpong(rounds, &km, &kc);
	double s = sluice_pingpong(rounds, &sm, &sc);
	double f = cacheline_pingpong(rounds * 10, &fm);

	printf("pingpong: TCP 64 B%s, busy-poll, %ld round trips: one-way latency "
	       "kernel %.2f us, sluice %.2f us, sluice/kernel %.2f; CPU a round trip (both ends) "
	       "kernel %.2f us, sluice %.2f us\n",
	       use_v6 ? " over ::1" : "", rounds, k, s, s / k, kc, sc);
	printf("pingpong: the floor, one cache line between the same two CPUs: %.0f ns one way; "
	       "sluice %.1fx the floor, kernel %.1fx\n", f, s * 1000 / f, k * 1000 / f);
	printf("pingpong: median of batches of %d round trips (what a loaded machine's time "
	       "slices leave out): kernel %.2f us, sluice %.2f us, floor %.0f ns; "
	       "sluice %.1fx the floor, kernel %.1fx\n", BATCH, km, sm, fm, sm * 1000 / fm,
	       km * 1000 / fm);
}

/* ---- one process, both ends ------------------------------------------ */

/*
 * What a message costs the CPU that sends and receives it, no other CPU
 * or process involved: one process drives both ends of a connection on
 * the loopback, each message sent on one end and received whole on the
 * other before the next, the ends taking turns (request, reply).  ns a
 * message (send + receive), mean and median batch; the same loop on two
 * kernel sockets of 127.0.0.1 beside it.  Bounded by count and by 60 s.
 */
static double loop_run(long msgs, double *median, bool kernel, bool oneway, double *cpu)
{
	struct sluice_stack *st = NULL;
	struct sockaddr_in a = lo_addr(PORT + 3);
	struct sockaddr_storage ka;
	socklen_t kal = k_addr(&ka, PORT + 3);
	struct batches bt;
	char buf[MSG];
	int l, c, sd = -1, one = 1;
	double t0, t1, c0, give_up = now_s() + 60;
	long i, n;

	memset(buf, 'l', sizeof(buf));
	if (kernel) {
		l = socket(ka.ss_family, SOCK_STREAM, 0);
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&ka, kal) || listen(l, 4))
			fail("kernel listen", errno);
		c = socket(ka.ss_family, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&ka, kal))
			fail("kernel connect", errno);
		sd = accept(l, NULL, NULL);
		if (sd < 0)
			fail("kernel accept", errno);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	} else {
		st = make_stack("bench-loop", 16, 256);
		l = sl_sock_new(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		if (sluice_bind(st, l, &a) || sluice_listen(st, l, 4))
			fail("listen", -EADDRINUSE);
		c = sl_sock_new(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		sluice_connect(st, c, &a);
		for (int k = 0; k < 100 && sd < 0; k++) {
			sluice_stack_poll(st);
			sd = sluice_accept(st, l, NULL);
		}
		if (sd < 0)
			fail("accept", sd);
		sluice_setsockopt(st, c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		sluice_setsockopt(st, sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	batches_init(&bt, msgs / 2);
	c0 = cpu_s(RUSAGE_SELF);
	t0 = now_s();
	for (i = 0; i < msgs; i++) {
		int from = i & 1 && !oneway ? sd : c, to = i & 1 && !oneway ? c : sd;

		if (!(i & 1))
			batches_tick(&bt, i / 2);
		n = kernel ? (long)send(from, buf, MSG, MSG_DONTWAIT) :
			     sluice_send(st, from, buf, MSG, MSG_DONTWAIT);
		if (n != MSG)
			fail("loop send", kernel ? errno : -n);
		n = kernel ? (long)recv(to, buf, MSG, MSG_DONTWAIT) :
			     sluice_recv(st, to, buf, MSG, MSG_DONTWAIT);
		if (n != MSG)
			fail("loop recv", kernel ? errno : (n ? -n : EPIPE));
		if (!(i & 4095) && now_s() > give_up)
			break;
	}
	t1 = now_s();
	*cpu = (cpu_s(RUSAGE_SELF) - c0) / i * 1e9;
	/* A batch is 64 round trips, two messages each: its per-message time
	 * is batches_median()'s one-way figure. */
	*median = batches_median(&bt) * 1000;
	if (kernel) {
		close(sd);
		close(c);
		close(l);
	} else {
		sluice_close(st, sd);
		sluice_close(st, c);
		sluice_close(st, l);
		sluice_stack_close(st);
		sluice_stack_destroy("bench-loop");
	}
	return (t1 - t0) / i * 1e9;
}

static void loop(long msgs, bool oneway)
{
	const char *only = getenv("BENCH_ONLY");
	double km = 1, sm, k, s, kc, sc;

	pin(0);
	k = only && !strcmp(only, "sluice") ? 1 : loop_run(msgs, &km, true, oneway, &kc);
	s = loop_run(msgs, &sm, false, oneway, &sc);
	unpin();
	printf("loop%s: TCP 64 B, one process driving both ends, %ld messages%s: ns a message "
	       "(send + receive) kernel %.0f, sluice %.0f, sluice/kernel %.2f; median batch "
	       "kernel %.0f, sluice %.0f; CPU a message kernel %.0f ns, sluice %.0f ns\n",
	       oneway ? "1" : "", msgs, oneway ? " one way" : "", k, s, s / k, km, sm, kc, sc);
}

/* ---- IPv6 beside IPv4 (issue 20 item 5) ------------------------------ */

/*
 * Three figures a run: [0] the kernel over ::1, [1] Sluice over
 * 127.0.0.1, [2] Sluice over ::1; each with the CPU an operation of both
 * ends (one process's in the loop).  Runs alternate the three, and the
 * order of Sluice's two each run, so the machine's load falls on all
 * alike; the medians over the runs are compared.
 */
#define V6_RUNS_MAX 9

struct v6_fig {
	double v[V6_RUNS_MAX], cpu[V6_RUNS_MAX], med[V6_RUNS_MAX];
};

static double median_of(const double *x, int n)
{
	double t[V6_RUNS_MAX];

	memcpy(t, x, sizeof(*t) * (size_t)n);
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void v6_print(const char *what, const char *unit, const char *cpu_unit,
		     struct v6_fig *f, int runs, bool with_med)
{
	static const char *const who[3] = { "kernel ::1", "sluice 127.0.0.1", "sluice ::1" };
	double m[3], c[3];

	for (int w = 0; w < 3; w++) {
		m[w] = median_of(f[w].v, runs);
		c[w] = median_of(f[w].cpu, runs);
		printf("v6: %s, %-16s %8.2f %s (", what, who[w], m[w], unit);
		for (int r = 0; r < runs; r++)
			printf("%s%.2f", r ? " " : "", f[w].v[r]);
		printf(")");
		if (with_med) {
			printf(", median batch %.2f (", median_of(f[w].med, runs));
			for (int r = 0; r < runs; r++)
				printf("%s%.2f", r ? " " : "", f[w].med[r]);
			printf(")");
		}
		printf(", CPU %.2f %s\n", c[w], cpu_unit);
	}
	printf("v6: %s, sluice ::1 / sluice 127.0.0.1 %.3f (CPU %.3f), sluice ::1 / kernel ::1 %.2f "
	       "(CPU %.2f)", what, m[2] / m[1], c[2] / c[1], m[2] / m[0], c[2] / c[0]);
	if (with_med)
		printf("; median batch %.3f", median_of(f[2].med, runs) / median_of(f[1].med, runs));
	printf("\n");
}

static void v6_beside_v4(int runs)
{
	struct v6_fig pp[3], lp[3], bk[3];
	long rounds = 50000, msgs = 400000, mb = 512;
	const char *v;

	if (runs > V6_RUNS_MAX)
		runs = V6_RUNS_MAX;
	/* BENCH_V6_SCALE: rounds, messages and MiB in percent (100). */
	if ((v = getenv("BENCH_V6_SCALE")) && atoi(v) > 0) {
		rounds = rounds * atoi(v) / 100 + 1001;
		msgs = msgs * atoi(v) / 100 + 1000;
		mb = mb * atoi(v) / 100 + 1;
	}
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < 3; k++) {
			/* kernel ::1, then Sluice's two, in turns first. */
			int w = k == 0 ? 0 : (r + k) % 2 + 1;

			use_v6 = w != 1;
			if (w == 0)
				pp[w].v[r] = kernel_pingpong(rounds, &pp[w].med[r], &pp[w].cpu[r]);
			else
				pp[w].v[r] = sluice_pingpong(rounds, &pp[w].med[r], &pp[w].cpu[r]);
			pin(0);
			lp[w].v[r] = loop_run(msgs, &lp[w].med[r], w == 0, false, &lp[w].cpu[r]);
			unpin();
			if (w == 0)
				bk[w].v[r] = kernel_bulk(mb, &bk[w].cpu[r]);
			else
				bk[w].v[r] = sluice_bulk(mb, &bk[w].cpu[r]);
		}
	}
	use_v6 = 0;
	printf("v6: %d runs; ping-pong TCP 64 B busy-poll %ld round trips, one-way us, CPU a round "
	       "trip; loop %ld messages, ns a message, CPU a message; bulk %ld MiB, Gbit/s, CPU a "
	       "MiB\n", runs, rounds, msgs, mb);
	v6_print("ping-pong", "us", "us", pp, runs, true);
	v6_print("loop", "ns", "ns", lp, runs, true);
	v6_print("bulk", "Gbit/s", "us", bk, runs, false);
}

/* The socket calls' ping-pong, 127.0.0.1 beside ::1 (bench sockets). */
static void sockets_v6(int runs)
{
	static const char *const fam[2] = { "127.0.0.1", "::1" };
	struct v6_fig f[2];
	long rounds = 50000;
	double m[2], c[2];

	if (runs > V6_RUNS_MAX)
		runs = V6_RUNS_MAX;
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < 2; k++) {
			int w = (r + k) % 2;

			use_v6 = w;
			f[w].v[r] = kernel_pingpong(rounds, &f[w].med[r], &f[w].cpu[r]);
		}
	use_v6 = 0;
	for (int w = 0; w < 2; w++) {
		m[w] = median_of(f[w].med, runs);
		c[w] = median_of(f[w].cpu, runs);
		printf("sockets: TCP 64 B busy-poll ping-pong, %ld round trips, %-9s one-way mean "
		       "%.2f us, median batch %.2f us (", rounds, fam[w], median_of(f[w].v, runs),
		       m[w]);
		for (int r = 0; r < runs; r++)
			printf("%s%.2f", r ? " " : "", f[w].med[r]);
		printf("), CPU a round trip %.2f us\n", c[w]);
	}
	printf("sockets: ::1 / 127.0.0.1 median batch %.3f, CPU %.3f\n", m[1] / m[0], c[1] / c[0]);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	long arg = argc > 2 ? atol(argv[2]) : 0;

	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(what, "rtt") && argc >= 4)
		return rtt(argv[2], atoi(argv[3]), argc > 4 ? atol(argv[4]) : 2000);
	if (!strcmp(what, "kecho") && argc == 4)
		return kecho(atoi(argv[2]), atof(argv[3]));
	if (!strcmp(what, "loop") || !strcmp(what, "loop1"))
		loop(arg > 1000 ? arg : 1000000, what[4] == '1');
	if (!strcmp(what, "pingpong") || !strcmp(what, "all"))
		pingpong(arg > 1000 ? arg : 50000);
	if (!strcmp(what, "pingpong6")) {
		use_v6 = 1;
		pingpong(arg > 1000 ? arg : 50000);
		use_v6 = 0;
	}
	if (!strcmp(what, "sockets"))
		sockets_v6(arg > 0 ? (int)arg : 3);
	if (!strcmp(what, "v6") || !strcmp(what, "all"))
		v6_beside_v4(arg > 0 && strcmp(what, "all") ? arg : 3);
	if (!strcmp(what, "bulk") || !strcmp(what, "all")) {
		long mb = arg > 0 && strcmp(what, "all") ? arg : 1024;
		const char *only = getenv("BENCH_ONLY");
		double kc = 0, sc;
		double k = only && !strcmp(only, "sluice") ? 1 : kernel_bulk(mb, &kc);
		double s = sluice_bulk(mb, &sc);

		printf("bulk: TCP single stream, %ld MiB: kernel %.2f Gbit/s, sluice %.2f Gbit/s, "
		       "sluice/kernel %.2f; CPU a MiB (both ends) kernel %.0f us, sluice %.0f us\n",
		       mb, k, s, s / k, kc, sc);
	}
	if (!strcmp(what, "conns") || !strcmp(what, "all"))
		conns(arg > 0 && strcmp(what, "all") ? arg : 100000);
	return 0;
}
