// SPDX-License-Identifier: BSD-2-Clause
/*
 * A plain pre-forking echo server and its load generator, for sluice run
 * (they know nothing of Sluice); tests/host/test_killsoak.sh kills their
 * processes at random while they run (issue 17).
 *
 *   killsoak server PORT WORKERS
 *	Listens on 127.0.0.1:PORT, forks WORKERS workers that each accept a
 *	connection, echo until EOF, close, and accept the next.  A worker
 *	that dies is replaced.  Prints "ready"; runs until SIGTERM, then
 *	stops its workers and exits 0.
 *
 *   killsoak client PORT SEED FILE
 *	Connects, sends a seeded 1 B..64 KiB, reads it back and compares,
 *	closes with a reset (SO_LINGER 0: no TIME-WAIT socket is left for
 *	each of thousands of connections, issue 16); again until SIGTERM.  After every connection it writes its
 *	counts to FILE (one line, rewritten in place), so a client that is
 *	killed leaves what it did:
 *	  ok N reset N corrupt N stuck N
 *	ok: every byte back and right; reset: the connection ended early
 *	(EOF, ECONNRESET, EPIPE) with every byte before the end right;
 *	corrupt: a wrong byte; stuck: nothing for STUCK_S seconds.
 *	Each connection that is not ok gets a line on stderr (wall-clock
 *	time, pid, connection number, ports, offset, length; for a wrong
 *	byte the bytes got and expected, and where else in what was sent
 *	the bytes got are found), for the test to set beside its kills.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_XFER	65536
#define MAX_WORKERS	64
#define STUCK_S		10

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wall-clock time, as bash's $EPOCHREALTIME in the test's kill log. */
static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Echo until EOF: 0, or the errno that ended it; *bytes: how many. */
static int echo(int fd, size_t *bytes)
{
	static char buf[16384];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf)), w;

		if (n == 0)
			return 0;
		if (n < 0)
			return errno == EINTR ? 0 : errno;
		for (ssize_t off = 0; off < n; off += w) {
			w = write(fd, buf + off, (size_t)(n - off));
			if (w < 0)
				return errno;
			*bytes += (size_t)w;
		}
	}
}

/* Each connection a worker takes, on stderr: when, who, the client's
 * port, and how the echo ended (0: EOF, else errno) after how many bytes. */
static void worker(int l)
{
	signal(SIGTERM, SIG_DFL);
	for (;;) {
		struct sockaddr_in pa = { 0 };
		socklen_t pl = sizeof(pa);
		int fd = accept(l, (struct sockaddr *)&pa, &pl), ret;
		size_t bytes = 0;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			_exit(1);
		}
		dprintf(2, "%.6f worker %d accept fd %d port %u\n", wall_s(), (int)getpid(), fd,
			ntohs(pa.sin_port));
		ret = echo(fd, &bytes);
		dprintf(2, "%.6f worker %d end port %u bytes %zu %s %d\n", wall_s(), (int)getpid(),
			ntohs(pa.sin_port), bytes, ret ? "errno" : "eof", ret);
		close(fd);
	}
}

static int server(int port, int nworkers)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	pid_t pids[MAX_WORKERS] = { 0 };
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	long respawned = 0;

	if (nworkers < 1 || nworkers > MAX_WORKERS || l < 0 ||
	    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 128)) {
		perror("server");
		return 2;
	}
	/* No SA_RESTART: SIGTERM ends the wait for a worker. */
	sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_term }, NULL);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		pid_t dead;
		int status;

		for (int i = 0; i < nworkers; i++) {
			if (pids[i])
				continue;
			pids[i] = fork();
			if (pids[i] == 0)
				worker(l);
			if (pids[i] < 0)
				pids[i] = 0;
		}
		dead = waitpid(-1, &status, 0);
		for (int i = 0; dead > 0 && i < nworkers; i++)
			if (pids[i] == dead) {
				pids[i] = 0;
				respawned++;
			}
	}
	for (int i = 0; i < nworkers; i++)
		if (pids[i])
			kill(pids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	printf("server: %ld workers replaced\n", respawned);
	return 0;
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

static long conn_no;

/* One line on stderr about connection fd that did not end ok. */
static void report(int fd, const char *what, size_t len, size_t sent, size_t got, int err)
{
	struct sockaddr_in la = { 0 }, pa = { 0 };
	socklen_t ll = sizeof(la), pl = sizeof(pa);

	getsockname(fd, (struct sockaddr *)&la, &ll);
	getpeername(fd, (struct sockaddr *)&pa, &pl);
	fprintf(stderr, "%.6f pid %d conn %ld %s port %u->%u len %zu sent %zu got %zu errno %d\n",
		wall_s(), (int)getpid(), conn_no, what, ntohs(la.sin_port), ntohs(pa.sin_port),
		len, sent, got, err);
}

/*
 * A wrong byte: where, what came and what was due, and whether what came
 * is found elsewhere in what was sent (a shifted or repeated stretch of
 * this connection's own stream) or is zeros.
 */
static void report_corrupt(int fd, const uint8_t *out, const uint8_t *in, size_t len,
			   size_t sent, size_t got, size_t n)
{
	size_t bad = 0, run = n < 32 ? n : 32, i;
	long found = -1;
	bool zeros = true;

	while (bad < n && in[got + bad] == out[got + bad])
		bad++;
	for (i = bad; i < n && zeros; i++)
		zeros = !in[got + i];
	if (bad + run > n)
		run = n - bad;
	for (size_t o = 0; run >= 8 && o + run <= len && found < 0; o++)
		if (!memcmp(out + o, in + got + bad, run))
			found = (long)o;
	report(fd, "corrupt", len, sent, got, 0);
	fprintf(stderr, "  read of %zu at %zu: first wrong byte at %zu (%s%s); got", n, got,
		got + bad, zeros ? "zeros from there" : "not all zeros",
		found >= 0 ? ", found in what was sent at" : ", not found in what was sent");
	if (found >= 0)
		fprintf(stderr, " %ld:", found);
	for (i = 0; i < 16 && bad + i < n; i++)
		fprintf(stderr, " %02x", in[got + bad + i]);
	fprintf(stderr, "; due");
	for (i = 0; i < 16 && got + bad + i < len; i++)
		fprintf(stderr, " %02x", out[got + bad + i]);
	fprintf(stderr, "\n");
}

enum result { RES_OK, RES_RESET, RES_CORRUPT, RES_STUCK };

/* One connection: send len bytes of out, read them back into in. */
static enum result one_conn(int port, const uint8_t *out, uint8_t *in, size_t len)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	size_t sent = 0, got = 0;
	double last = now_s();
	enum result r = RES_OK;

	conn_no++;
	if (fd < 0) {
		fprintf(stderr, "%.6f pid %d conn %ld socket: errno %d\n", wall_s(), (int)getpid(),
			conn_no, errno);
		return RES_RESET;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS) {
		report(fd, "connect failed", len, sent, got, errno);
		close(fd);
		return RES_RESET;
	}
	while (got < len && !stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0) };
		ssize_t n;

		if (now_s() - last > STUCK_S) {
			report(fd, "stuck", len, sent, got, 0);
			r = RES_STUCK;
			break;
		}
		if (poll(&p, 1, 200) <= 0)
			continue;
		if (sent < len && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = send(fd, out + sent, len - sent, MSG_NOSIGNAL);
			if (n > 0) {
				sent += (size_t)n;
				last = now_s();
			} else if (n < 0 && errno != EAGAIN) {
				report(fd, "send failed", len, sent, got, errno);
				r = RES_RESET;
				break;
			}
		}
		n = recv(fd, in + got, len - got, 0);
		if (n > 0) {
			if (memcmp(in + got, out + got, (size_t)n)) {
				report_corrupt(fd, out, in, len, sent, got, (size_t)n);
				r = RES_CORRUPT;
				break;
			}
			got += (size_t)n;
			last = now_s();
		} else if (n == 0 || errno != EAGAIN) {
			if (!stop)
				report(fd, n ? "recv failed" : "eof", len, sent, got, n ? errno : 0);
			r = RES_RESET;
			break;
		}
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){ .l_onoff = 1 }, sizeof(struct linger));
	close(fd);
	return r;
}

static int client(int port, uint64_t seed, const char *file)
{
	static uint8_t out[MAX_XFER], in[MAX_XFER];
	long count[4] = { 0 };
	uint64_t x = seed | 1;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		perror(file);
		return 2;
	}
	signal(SIGTERM, on_term);
	while (!stop) {
		size_t len = 1 + rng_next(&x) % MAX_XFER;
		enum result r;
		char line[128];
		int n;

		for (size_t i = 0; i < len; i++)
			out[i] = (uint8_t)rng_next(&x);
		r = one_conn(port, out, in, len);
		if (stop)
			break;	/* cut short by SIGTERM: not counted */
		count[r]++;
		n = snprintf(line, sizeof(line), "ok %ld reset %ld corrupt %ld stuck %ld\n",
			     count[RES_OK], count[RES_RESET], count[RES_CORRUPT], count[RES_STUCK]);
		if (pwrite(fd, line, (size_t)n, 0) != n)
			return 2;
	}
	close(fd);
	return 0;
}

/*
 * killsoak probe PORT SECONDS: connect, then for SECONDS wait for input
 * that never comes with poll(20 ms), and print the worst overshoot of that
 * timeout: "probe worst SECONDS rounds N" (a SIGSTOP storm over the stack's
 * other processes must not make it late, issue 17).
 */
static int probe(int port, double seconds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), rounds = 0;
	double worst = 0, end;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("probe connect");
		return 2;
	}
	for (end = now_s() + seconds; now_s() < end; rounds++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double t = now_s(), late;

		if (poll(&p, 1, 20) != 0) {
			fprintf(stderr, "probe: poll returned early\n");
			return 1;
		}
		late = now_s() - t - 0.020;
		if (late > worst)
			worst = late;
	}
	printf("probe worst %.4f rounds %d\n", worst, rounds);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "probe"))
		return probe(atoi(argv[2]), atof(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), strtoull(argv[3], NULL, 0), argv[4]);
	fprintf(stderr, "usage: killsoak server PORT WORKERS | client PORT SEED FILE | "
		"probe PORT SECONDS\n");
	return 2;
}
