// SPDX-License-Identifier: BSD-2-Clause
/*
 * Process death: several processes share one stack (/dev/shm, or a
 * module's when SLUICE_TEST_MODULE is set) and one of them, the victim,
 * is killed with SIGKILL at a seeded random point: while it holds the
 * stack lock, mid-send, mid-accept, asleep in recv, or anywhere in a mix.
 *
 *   parent (survivor, checks) --+-- sleeper: blocked in recv on a UDP socket
 *                               +-- connector: connects to the victim's
 *                               |   listener and sends, in a loop
 *                               +-- victim: the action, then SIGKILL
 *
 * Whether or not the victim died holding the lock, the survivors keep
 * working (the sleeper gets a datagram, a TCP echo runs): the next
 * process to take the lock takes it over and brings the stack back
 * (issue 17).  Once the dead process's sockets are closed for it every
 * buffer and socket slot is back (no leak).
 *
 *   test_death [ROUNDS [SEED]]      (default 20 rounds, seed from the clock)
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "death_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))
/* tap_eq with a formatted description. */
#define teq(got, want, ...)                                                   \
	do {                                                                  \
		long long g_ = (long long)(got), w_ = (long long)(want);      \
		if (!tap_ok(g_ == w_, __VA_ARGS__))                           \
			printf("#   got %lld, want %lld\n", g_, w_);          \
	} while (0)

#define PORT_L	7700	/* the victim's listener */
#define PORT_U	7701	/* the sleeper's UDP socket */
#define PORT_E	7702	/* the parent's echo check */

enum action { A_LOCK, A_UNNAMED, A_SEND, A_ACCEPT, A_SLEEP, A_ANY, A_COUNT };
static const char *const action_name[A_COUNT] = {
	"holding the lock", "holding the lock, before naming itself in lock_owner",
	"mid-send", "mid-accept", "asleep in recv", "anywhere",
};

/* Shared between the processes of a round (MAP_SHARED anonymous). */
struct shared {
	_Atomic int stop;		/* connector: finish */
	_Atomic int victim_ready;	/* victim: reached its action */
	_Atomic long connects;		/* connector's completed connections */
	_Atomic long sent;		/* victim's bytes sent */
	_Atomic long accepted;		/* victim's connections accepted */
};

static struct shared *sh;

/*
 * The module's view (module-backed stacks only): is pid among the stack's
 * attached processes in sysfs?  -1 without such a file.
 */
static int pid_listed(const char *name, pid_t pid)
{
	char path[128], buf[4096], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/sys/class/misc/sluice/stacks/%s/pids", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (p = strtok(buf, " \n"); p; p = strtok(NULL, " \n"))
		if (atoi(p) == pid)
			return 1;
	return 0;
}

/* The victim: attach on its own (so the module counts it), reach its
 * action, then keep at it until killed. */
static void victim(struct sl_stack *parent, enum action a)
{
	struct sluice_stack *own;
	struct sl_stack *s;

	if (sluice_stack_attach(parent->name, &own))
		_exit(2);
	s = (struct sl_stack *)own;
	static char buf[16384];
	struct sockaddr_in la = fx_addr("0.0.0.0", PORT_L);
	struct sockaddr_in ca = fx_addr("127.0.0.1", PORT_L);
	int l, c, d;

	if (a == A_LOCK || a == A_UNNAMED) {
		if (sl_lock(s))
			_exit(3);
		/* Where a process killed right after the lock's compare-and-swap
		 * stands: lock_owner not written yet. */
		if (a == A_UNNAMED)
			s->r->lock_owner = 0;
		atomic_store(&sh->victim_ready, 1);
		for (;;)
			;
	}
	if (a == A_SLEEP) {
		struct sockaddr_in ua = fx_addr("127.0.0.1", PORT_U + 100);

		d = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		if (d < 0 || sluice_bind(ST(s), d, &ua))
			_exit(4);
		atomic_store(&sh->victim_ready, 1);
		sluice_recv(ST(s), d, buf, sizeof(buf), 0);
		_exit(5);
	}
	/* A listener of its own: the connector connects to it. */
	l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (l < 0 || sluice_bind(ST(s), l, &la) || sluice_listen(ST(s), l, 16))
		_exit(6);
	if (a == A_ACCEPT) {
		atomic_store(&sh->victim_ready, 1);
		for (;;) {
			struct sluice_pollfd p = { .sd = l, .events = POLLIN };

			sluice_poll(ST(s), &p, 1, 100);
			while ((d = sluice_accept(ST(s), l, NULL)) >= 0) {
				atomic_fetch_add(&sh->accepted, 1);
				sluice_recv(ST(s), d, buf, sizeof(buf), MSG_DONTWAIT);
				sluice_close(ST(s), d);
			}
		}
	}
	/* A_SEND, A_ANY: a connection to itself, sending as fast as it can,
	 * reading now and then. */
	c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	if (c < 0)
		_exit(7);
	sluice_connect(ST(s), c, &ca);
	for (d = -1; d < 0;) {
		sluice_stack_poll(ST(s));
		d = sluice_accept(ST(s), l, NULL);
	}
	atomic_store(&sh->victim_ready, 1);
	for (long i = 0;; i++) {
		long n = sluice_send(ST(s), c, buf, sizeof(buf), MSG_DONTWAIT);

		if (n > 0)
			atomic_fetch_add(&sh->sent, n);
		if (i % 3 == 0)
			sluice_recv(ST(s), d, buf, sizeof(buf), MSG_DONTWAIT);
		sluice_stack_poll(ST(s));
	}
}

/* The sleeper: blocked in recv; exits 0 with the datagram, 32 on -EPIPE. */
static int sleeper(struct sl_stack *s, int u)
{
	char b[16];
	long n = sluice_recv(ST(s), u, b, sizeof(b), 0);

	if (n == 4 && !memcmp(b, "ping", 4))
		return 0;
	return n == -EPIPE ? 32 : 33;
}

/* The connector: connect to the victim's port, send, close; until told to
 * stop.  Its errors are what the victim's death makes them: exit 0 unless
 * it sees something other than a refusal, reset or broken stack. */
static int connector(struct sl_stack *s)
{
	struct sockaddr_in a = fx_addr("127.0.0.1", PORT_L);
	static char buf[4096];

	for (double end = now_s() + 30; !atomic_load(&sh->stop) && now_s() < end;) {
		int c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), ret;
		struct sluice_pollfd p = { .sd = c, .events = POLLOUT };

		if (c == -EPIPE)
			return 32;
		if (c < 0)
			return 40;
		/* Bounded: with nobody accepting, the backlog fills up. */
		ret = sluice_connect(ST(s), c, &a);
		if (ret == -EINPROGRESS && sluice_poll(ST(s), &p, 1, 200) == 1 &&
		    !(p.revents & (POLLERR | POLLHUP)))
			ret = 0;
		if (ret == -EPIPE) {
			sluice_close(ST(s), c);
			return 32;
		}
		if (ret == 0) {
			atomic_fetch_add(&sh->connects, 1);
			sluice_send(ST(s), c, buf, sizeof(buf), MSG_DONTWAIT);
		}
		ret = sluice_close(ST(s), c);
		if (ret == -EPIPE)
			return 32;
		usleep(200);
	}
	return 0;
}

/* Wait for pid at most seconds; -1 if it is still running (then killed). */
static int wait_bounded(pid_t pid, double seconds)
{
	int status;

	for (double end = now_s() + seconds; now_s() < end;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
		usleep(2000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* A survivor's TCP echo through the stack, all in this process. */
static bool echo_works(struct sl_stack *s)
{
	struct sockaddr_in la = fx_addr("0.0.0.0", PORT_E), ca = fx_addr("127.0.0.1", PORT_E);
	static uint8_t out[65536], in[65536];
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	int c = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), d = -1;
	long sent = 0, got = 0;
	bool ok;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + (i >> 10));
	if (l < 0 || c < 0 || sluice_bind(ST(s), l, &la) || sluice_listen(ST(s), l, 4))
		return false;
	sluice_connect(ST(s), c, &ca);
	for (double end = now_s() + 10; got < (long)sizeof(in) && now_s() < end;) {
		long n;

		if (d < 0)
			d = sluice_accept(ST(s), l, NULL);
		if (sent < (long)sizeof(out)) {
			n = sluice_send(ST(s), c, out + sent, sizeof(out) - sent, MSG_DONTWAIT);
			if (n > 0)
				sent += n;
		}
		if (d >= 0) {
			n = sluice_recv(ST(s), d, in + got, sizeof(in) - got, MSG_DONTWAIT);
			if (n > 0)
				got += n;
		}
		sluice_stack_poll(ST(s));
	}
	ok = got == (long)sizeof(in) && !memcmp(in, out, sizeof(in));
	if (!ok)
		printf("# echo: l %d c %d d %d, sent %ld, got %ld\n", l, c, d, sent, got);
	sluice_close(ST(s), c);
	if (d >= 0)
		sluice_close(ST(s), d);
	sluice_close(ST(s), l);
	return ok;
}

/* fx_stack's, with room for the connector's TIME-WAIT sockets. */
static struct sl_stack *death_stack(const char *tag)
{
	return fx_stack_sized(tag, "10.6.0.1", 512, 1024);
}

static void one_round(int round, enum action a, uint32_t delay_us)
{
	uint64_t rec0 = 0;
	struct sockaddr_in ua = fx_addr("127.0.0.1", PORT_U);
	struct sl_stack *s;
	uint32_t free0;
	pid_t vp, sp, cp, pp;
	int u, tx, rc, closed, listed;
	bool held, broken;
	char tag[16];
	double t0;

	snprintf(tag, sizeof(tag), "death%u", (unsigned int)round % 100000u);
	s = death_stack(tag);
	sluice_stack_set_clock(ST(s), NULL, NULL);	/* real time: several processes */
	free0 = s->lib->buf_free_count;
	memset(sh, 0, sizeof(*sh));
	u = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	if (u < 0 || sluice_bind(ST(s), u, &ua)) {
		tap_ok(0, "round %d: sleeper's socket", round);
		return;
	}

	sp = fork();
	if (sp == 0)
		_exit(sleeper(s, u));
	vp = fork();
	if (vp == 0)
		victim(s, a);
	cp = -1;
	if (a == A_ACCEPT || a == A_ANY) {
		cp = fork();
		if (cp == 0)
			_exit(connector(s));
	}
	/* Kill at the seeded point: "anywhere" counts from the fork, the
	 * others from reaching their action. */
	if (a != A_ANY)
		for (t0 = now_s(); !atomic_load(&sh->victim_ready) && now_s() < t0 + 10;)
			usleep(100);
	if (a == A_SLEEP)
		for (t0 = now_s();
		     s->r->sleepers + s->lib->wq_sleepers < 2 && now_s() < t0 + 10;)
			usleep(100);
	usleep(delay_us);
	/* Attached once it is ready ("anywhere" may be killed before). */
	listed = atomic_load(&sh->victim_ready) ? pid_listed(s->name, vp) : -1;
	kill(vp, SIGKILL);
	waitpid(vp, NULL, 0);
	if (listed >= 0)
		tap_ok(listed == 1, "round %d: the module lists the victim among the attached",
		       round);
	if (pid_listed(s->name, vp) >= 0) {
		for (t0 = now_s(); pid_listed(s->name, vp) == 1 && now_s() < t0 + 5;)
			usleep(1000);
		tap_ok(pid_listed(s->name, vp) == 0, "round %d: ... and drops it once dead", round);
	}
	/* Held when it died: the word still names it, or a survivor (the
	 * sleeper, blocked on the lock) has already taken over. */
	for (t0 = now_s();; usleep(1000)) {
		uint32_t w = __atomic_load_n(&s->r->lock, __ATOMIC_ACQUIRE);

		sluice_stack_counter(ST(s), "lock_recovered", &rec0);
		held = ((w & SLUICE_LOCK_HELD) && (pid_t)(w >> SLUICE_LOCK_PID_SHIFT) == vp) ||
		       rec0;
		/* A survivor that took the lock over counts its recovery
		 * only when done: wait for that, a while. */
		if (held || !(w & SLUICE_LOCK_HELD) || (a != A_LOCK && a != A_UNNAMED) ||
		    now_s() > t0 + 2)
			break;
	}
	printf("# round %d: killed %s after %u us: %s; sent %ld, accepted %ld, connects %ld\n",
	       round, action_name[a], delay_us, held ? "it held the lock" : "lock not held",
	       atomic_load(&sh->sent), atomic_load(&sh->accepted), atomic_load(&sh->connects));
	if (a == A_LOCK || a == A_UNNAMED) {
		tap_ok(held, "round %d: it died holding the lock (the word names it, or it was "
		       "recovered from already: %llu)", round, (unsigned long long)rec0);
		held = true;
	}

	/* A survivor's first call, in a child so that a hang is a failure
	 * and not a hung test: 0 if it works, 32 for -EPIPE. */
	t0 = now_s();
	pp = fork();
	if (pp == 0) {
		tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		if (tx >= 0)
			sluice_close(ST(s), tx);
		_exit(tx >= 0 ? 0 : tx == -EPIPE ? 32 : 33);
	}
	rc = wait_bounded(pp, 5);
	printf("# round %d: a survivor's call: %d after %.0f ms\n", round, rc, (now_s() - t0) * 1e3);
	if (rc < 0) {
		tap_ok(0, "round %d (%s): a survivor's call returns (it hung 5 s)", round,
		       action_name[a]);
		kill(sp, SIGKILL);
		if (cp > 0)
			kill(cp, SIGKILL);
		while (wait(NULL) > 0)
			;
		fx_destroy(s);
		return;
	}
	tx = rc == 0 ? sluice_socket(ST(s), SLUICE_SOCK_DGRAM) : -EPIPE;
	broken = tx == -EPIPE;
	if (held) {
		uint64_t rec = 0;

		/* Issue 17: whoever came next took the lock over and brought
		 * the stack back; the rest of the round is as for any death. */
		sluice_stack_counter(ST(s), "lock_recovered", &rec);
		tap_ok(!broken && s->r->state == SLUICE_STATE_READY,
		       "round %d (%s): the stack is brought back, not broken (%d), in %.0f ms",
		       round, action_name[a], tx, (now_s() - t0) * 1e3);
		teq(rec, 1, "round %d: lock_recovered counts one recovery", round);
	}
	tap_ok(tx >= 0, "round %d (%s): the survivors keep working (socket %d)", round,
	       action_name[a], tx);
	if (tx < 0) {
		kill(sp, SIGKILL);
		if (cp > 0)
			kill(cp, SIGKILL);
		while (wait(NULL) > 0)
			;
		fx_destroy(s);
		return;
	}
	teq(sluice_sendto(ST(s), tx, "ping", 4, 0, &ua), 4, "round %d: datagram to the sleeper",
	       round);
	rc = wait_bounded(sp, 5);
	teq(rc, 0, "round %d: the sleeper got it and exited", round);
	if (cp > 0) {
		atomic_store(&sh->stop, 1);
		rc = wait_bounded(cp, 10);
		teq(rc, 0, "round %d: the connector finished cleanly", round);
	}
	tap_ok(echo_works(s), "round %d: a 64 KiB TCP echo through the stack afterwards", round);

	/* Nothing leaks: close what the dead process left, let every timer
	 * run out (TIME-WAIT included) on a clock pushed forward. */
	closed = close_dead(s, vp);
	sluice_close(ST(s), tx);
	sluice_close(ST(s), u);
	run_out_timers(s);
	teq(s->r->sock_used, 0, "round %d: every socket slot back (%d closed for the dead)",
	       round, closed);
	teq(s->lib->buf_free_count, free0, "round %d: every buffer back in the pool", round);
	teq(s->r->lock, 0, "round %d: lock free", round);
	fx_destroy(s);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
	int kills[A_COUNT] = { 0 };

	printf("# seed %llu (test_death %d %llu replays it)\n", (unsigned long long)seed, rounds,
	       (unsigned long long)seed);
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		printf("Bail out! mmap\n");
		return 1;
	}
	for (int r = 0; r < rounds; r++) {
		/* Every action at least once, then seeded. */
		enum action a = r < A_COUNT ? (enum action)r : (enum action)(rnd() % A_COUNT);
		uint32_t delay = a == A_ANY ? rnd() % 3000 : rnd() % 20000;

		kills[a]++;
		one_round(r, a, delay);
	}
	printf("# kills: %d holding the lock (%d before naming itself), %d mid-send, "
	       "%d mid-accept, %d asleep, %d anywhere\n", kills[A_LOCK] + kills[A_UNNAMED],
	       kills[A_UNNAMED], kills[A_SEND], kills[A_ACCEPT], kills[A_SLEEP], kills[A_ANY]);
	return tap_done();
}
