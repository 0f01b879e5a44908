// SPDX-License-Identifier: BSD-2-Clause
/*
 * sluice metrics [--interval SECONDS] [--output FILE]
 *   every stack's counters and gauges in the OpenMetrics text format
 *   (one family after another, each sample labelled stack="NAME", "# EOF"
 *   last), once, or every SECONDS; with --output, FILE is replaced by
 *   rename(2) so a reader (node-exporter's textfile collector) never sees
 *   half of it.  The families are listed in tools/README.md ("Metrics").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "api/api.h"
#include "cmds.h"

/* The stacks of one scrape, attached to look only. */
struct mstack {
	char name[SLUICE_NAME_MAX];
	const char *where;
	struct sluice_stack *st;	/* NULL: not a valid stack */
	unsigned int tcp[TCP_STATES];	/* connections by state */
	unsigned int udp;
	unsigned int tw;		/* TIME-WAIT entries not yet expired */
	bool kring;			/* on a device: the module's counters */
	uint64_t kctr[KRING_N];
};

struct scrape {
	struct mstack *v;
	unsigned int n, cap;
};

static void tw_counted(const struct sl_tw *tw, void *arg)
{
	uint64_t *now_tw = arg;	/* [0] now, [1] count */

	now_tw[1] += tw->expire_us > now_tw[0];
}

/* The kring's names and meanings, and its counters for a stack. */
#define KNAME(f, d) #f,
static const char *const kring_names[KRING_N] = { KRING_COUNTERS(KNAME) };
#undef KNAME
#define KDESC(f, d) d,
static const char *const kring_desc[KRING_N] = { KRING_COUNTERS(KDESC) };
#undef KDESC

static void add_kring(struct mstack *m, const struct sl_stack *s)
{
	const struct sluice_kring *k;
	char why[128];
	size_t len;
	unsigned int i = 0;

	k = kring_map(s, &len, why, sizeof(why));
	if (!k)
		return;
#define KCOPY(f, d) m->kctr[i++] = k->f;
	KRING_COUNTERS(KCOPY)
#undef KCOPY
	m->kring = true;
	munmap((void *)k, len);
}

static void add_stack(const char *name, const char *where, void *arg)
{
	struct scrape *sc = arg;
	struct mstack *m;
	struct sl_stack *s;
	uint64_t now_tw[2];

	if (sc->n == sc->cap) {
		unsigned int cap = sc->cap ? sc->cap * 2 : 16;
		struct mstack *v = realloc(sc->v, cap * sizeof(*v));

		if (!v)
			return;
		sc->v = v;
		sc->cap = cap;
	}
	m = &sc->v[sc->n++];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->where = where;
	if (sl_stack_inspect(name, &m->st)) {
		m->st = NULL;
		return;
	}
	s = (struct sl_stack *)m->st;
	/* Read without the lock, as sluice dump does: a snapshot. */
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		const struct sl_sock *so = sl_sock(s, i);

		if (!sl_sock_type_live(so->type))
			continue;
		if (so->type == SL_SOCK_UDP)
			m->udp++;
		else if (so->state < TCP_STATES)
			m->tcp[so->state]++;
	}
	now_tw[0] = sl_now(s);
	now_tw[1] = 0;
	sl_tw_list(s, tw_counted, now_tw);
	m->tw = (unsigned int)now_tw[1];
	add_kring(m, s);
}

/* A HELP text or a label value, escaped as OpenMetrics wants. */
static void put_escaped(FILE *f, const char *s, bool label)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' && label)
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# TYPE %s %s\n# HELP %s ", name, type, name);
	put_escaped(f, help, false);
	fputc('\n', f);
}

/* NAME{stack="S"[,KEY="VAL"]} VALUE */
static void sample(FILE *f, const char *name, const char *suffix, const char *stack,
		   const char *key, const char *val, uint64_t v)
{
	fprintf(f, "%s%s{stack=\"", name, suffix);
	put_escaped(f, stack, true);
	if (key) {
		fprintf(f, "\",%s=\"", key);
		put_escaped(f, val, true);
	}
	fprintf(f, "\"} %llu\n", (unsigned long long)v);
}

/* The gauges of one value a stack. */
static uint64_t g_region(const struct mstack *m, const struct sl_stack *s)
{
	(void)m;
	return s->r->region_size;
}

static uint64_t g_socks(const struct mstack *m, const struct sl_stack *s)
{
	(void)m;
	return s->r->sock_used;
}

static uint64_t g_socks_max(const struct mstack *m, const struct sl_stack *s)
{
	(void)m;
	return s->r->max_sockets;
}

static uint64_t g_bufs(const struct mstack *m, const struct sl_stack *s)
{
	(void)m;
	return s->r->n_bufs - s->lib->buf_free_count;
}

static uint64_t g_bufs_max(const struct mstack *m, const struct sl_stack *s)
{
	(void)m;
	return s->r->n_bufs;
}

static uint64_t g_udp(const struct mstack *m, const struct sl_stack *s)
{
	(void)s;
	return m->udp;
}

static uint64_t g_lock_held(const struct mstack *m, const struct sl_stack *s)
{
	(void)m;
	return !!(SL_READ_ONCE(s->r->lock) & SLUICE_LOCK_HELD);
}

static const struct {
	const char *name, *help;
	uint64_t (*fn)(const struct mstack *m, const struct sl_stack *s);
} gauges[] = {
	{ "sluice_region_bytes", "size of the stack's shared region in bytes", g_region },
	{ "sluice_sockets", "socket slots in use", g_socks },
	{ "sluice_sockets_max", "socket slots in all", g_socks_max },
	{ "sluice_buffers", "packet buffers in use", g_bufs },
	{ "sluice_buffers_max", "packet buffers in all", g_bufs_max },
	{ "sluice_udp_sockets", "UDP sockets", g_udp },
	{ "sluice_lock_held", "1 while a process holds the stack lock", g_lock_held },
};

/* One exposition: every family, each with a sample a valid stack. */
static void render(FILE *f, const struct scrape *sc)
{
	const struct mstack *m, *end = sc->v + sc->n;
	const struct sl_stack *s;
	char name[96];

	family(f, "sluice_stack_state", "gauge",
	       "1 for each stack, labelled with where it lives and its state (init, ready, BROKEN, corrupt, invalid)");
	for (m = sc->v; m < end; m++) {
		fputs("sluice_stack_state{stack=\"", f);
		put_escaped(f, m->name, true);
		fprintf(f, "\",where=\"%s\",state=\"%s\"} 1\n", m->where,
			m->st ? stack_state_name((const struct sl_stack *)m->st) : "invalid");
	}
	for (unsigned int g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		family(f, gauges[g].name, "gauge", gauges[g].help);
		for (m = sc->v; m < end; m++)
			if (m->st)
				sample(f, gauges[g].name, "", m->name, NULL, NULL,
				       gauges[g].fn(m, (const struct sl_stack *)m->st));
	}
	family(f, "sluice_tcp_connections", "gauge",
	       "TCP sockets by state (TIME_WAIT: the compact entries not yet expired)");
	for (m = sc->v; m < end; m++) {
		if (!m->st)
			continue;
		for (unsigned int i = 0; i < TCP_STATES; i++)
			sample(f, "sluice_tcp_connections", "", m->name, "state", tcp_state_name(i),
			       !strcmp(tcp_state_name(i), "TIME_WAIT") ? m->tw : m->tcp[i]);
	}
	family(f, "sluice_lock_contended", "counter",
	       "times a process found the stack lock held and waited for it");
	for (m = sc->v; m < end; m++)
		if (m->st)
			sample(f, "sluice_lock_contended", "_total", m->name, NULL, NULL,
			       ((const struct sl_stack *)m->st)->lib->lock_contended);
	/* Every drop by reason: the stack's counters whose meaning starts
	 * "dropped" (each is also a family of its own below). */
	family(f, "sluice_dropped", "counter",
	       "packets dropped, by reason (the stack counter that counts them)");
	for (m = sc->v; m < end; m++) {
		if (!m->st)
			continue;
		s = (const struct sl_stack *)m->st;
		for (unsigned int i = 0; i < SL_C_COUNT; i++)
			if (!strncmp(sl_counter_desc[i], "dropped", 7))
				sample(f, "sluice_dropped", "_total", m->name, "reason",
				       sl_counter_names[i], sl_counter_sum(s, i));
	}
	/* Per link: the module's counters of a stack on a device (kring). */
	for (m = sc->v; m < end && !m->kring; m++)
		;
	for (unsigned int i = 0; m < end && i < KRING_N; i++) {
		snprintf(name, sizeof(name), "sluice_kring_%s", kring_names[i]);
		family(f, name, "counter", kring_desc[i]);
		for (const struct mstack *k = sc->v; k < end; k++)
			if (k->kring)
				sample(f, name, "_total", k->name, "link", "kring", k->kctr[i]);
	}
	/* Every counter of the stack (sluice dump's), a family each. */
	for (unsigned int i = 0; i < SL_C_COUNT; i++) {
		snprintf(name, sizeof(name), "sluice_%s", sl_counter_names[i]);
		family(f, name, "counter", sl_counter_desc[i]);
		for (m = sc->v; m < end; m++)
			if (m->st)
				sample(f, name, "_total", m->name, NULL, NULL,
				       sl_counter_sum((const struct sl_stack *)m->st, i));
	}
	fputs("# EOF\n", f);
}

static void release(struct scrape *sc)
{
	for (unsigned int i = 0; i < sc->n; i++)
		if (sc->v[i].st)
			sluice_stack_close(sc->v[i].st);
	sc->n = 0;
}

/* Put text (len bytes) in path through a file beside it and rename(2);
 * 0 or -errno. */
static int write_atomic(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX];
	ssize_t n;
	int fd, err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	unlink(tmp);
	/* 0644: the collector reading it may be another user. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (len && !err) {
		n = write(fd, text, len);
		if (n < 0 && errno != EINTR)
			err = -errno;
		if (n > 0) {
			text += n;
			len -= (size_t)n;
		}
	}
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

static void metrics_usage(FILE *f)
{
	fprintf(f, "usage: sluice metrics [--interval SECONDS] [--output FILE]\n");
}

/* argv[0] is "metrics". */
int cmd_metrics(int argc, char **argv)
{
	struct scrape sc = { 0 };
	const char *out = NULL;
	double interval = 0;
	struct timespec ts;
	sigset_t stop;
	char *end;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			metrics_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
			interval = strtod(argv[++i], &end);
			if (*end || !(interval > 0) || interval > 86400) {
				fprintf(stderr, "sluice metrics: --interval: a number of seconds, up to 86400\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--output") && i + 1 < argc) {
			out = argv[++i];
		} else {
			metrics_usage(stderr);
			return 2;
		}
	}
	/*
	 * SIGTERM, SIGINT and SIGHUP wait while a file is written and end
	 * the sleep between writes: the command stops between two files,
	 * never leaving a temporary one behind.
	 */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	if (interval)
		sigprocmask(SIG_BLOCK, &stop, NULL);
	for (;;) {
		char *text = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&text, &len);
		int err;

		if (!m) {
			perror("sluice metrics");
			return 1;
		}
		if (for_each_stack(add_stack, &sc))
			fprintf(stderr, "sluice metrics: /dev/shm: %s\n", strerror(errno));
		render(m, &sc);
		release(&sc);
		if (fclose(m)) {
			free(text);
			perror("sluice metrics");
			return 1;
		}
		if (out) {
			err = write_atomic(out, text, len);
			if (err)
				fprintf(stderr, "sluice metrics: %s: %s\n", out, strerror(-err));
		} else {
			err = fwrite(text, 1, len, stdout) == len && !fflush(stdout) ? 0 : -EIO;
		}
		free(text);
		/* Once: the status says whether it was written.  Periodically:
		 * a failed write is said and tried again next time. */
		if (!interval)
			return err ? 1 : 0;
		ts.tv_sec = (time_t)interval;
		ts.tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9);
		if (sigtimedwait(&stop, NULL, &ts) > 0)
			return 0;
	}
}
