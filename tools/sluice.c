// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sluice command.  Subcommands:
 *   sluice info         library, module, sysfs and debugfs state
 *   sluice stacks       the stacks on this machine
 *   sluice dump [--all] NAME  a stack's configuration, counters, rings and sockets
 *   sluice run ...      run a program on a stack (run.c)
 *   sluice fds [NAME]   the processes' fds on a stack, or on any (run.c)
 *   sluice metrics ...  every stack's counters in OpenMetrics text (metrics.c)
 *   sluice version      the library's version
 * info, stacks, dump, fds and version take --json: one JSON document, its
 * schema in tools/README.md ("JSON output").
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "api/api.h"
#include "cmds.h"
#include "json.h"

#define SYSFS_DIR	"/sys/class/misc/" SLUICE_DEVICE_NAME
#define DEBUGFS_DIR	"/sys/kernel/debug/" SLUICE_DEVICE_NAME

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice COMMAND\n"
		"  info [--json]\n"
		"              show the library, who holds each stack's lock, and the loaded\n"
		"              module with its sysfs and debugfs state\n"
		"  stacks [--json]\n"
		"              list the stacks on this machine\n"
		"  dump [--all] [--json] NAME\n"
		"              show a stack's configuration, counters and sockets (the first\n"
		"              TIME-WAIT entries only, unless --all)\n"
		"  run [--stack NAME] [--profile latency|throughput] [--interface DEV] -- PROGRAM [ARGS]\n"
		"              run PROGRAM with its IPv4 sockets on a Sluice stack (on DEV:\n"
		"              through the module's rings; `sluice run` alone lists every option)\n"
		"  fds [--json] [NAME]\n"
		"              list the processes' fds that are sockets of stack NAME (or any)\n"
		"  handoff PID FD\n"
		"              move the connection of process PID's fd FD from its stack to a\n"
		"              kernel socket, live (TCP repair; a stack on a device)\n"
		"  metrics [--interval SECONDS] [--output FILE]\n"
		"              every stack's counters in the OpenMetrics text format; FILE is\n"
		"              replaced atomically (a textfile collector's .prom file)\n"
		"  tcpdump NAME [-i any|lo|LINK] [-w FILE] [-c COUNT] [-s SNAPLEN] [EXPRESSION]\n"
		"              capture the stack's packets on its link and its own loopback:\n"
		"              a pcap file (-w; - for stdout) or one line a packet\n"
		"  doctor [--json] --interface IF\n"
		"              check what Sluice's path on IF needs (driver, IPoIB mode,\n"
		"              capabilities, module facts, device limits, flow steering\n"
		"              mode) and say what Sluice will do there\n"
		"  version [--json]\n"
		"              show the library version\n"
		"--json prints one JSON document (schemas: tools/README.md, sluice(1)).\n");
}

int read_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Read one sysfs value into buf (its newline taken off); 0 or -errno. */
static int read_sysfs(const char *name, char *buf, size_t len)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", SYSFS_DIR, name);
	return read_first_line(path, buf, len);
}

/* Print one sysfs value; returns 0 or -errno. */
static int print_sysfs(const char *name)
{
	char buf[128];
	int err = read_sysfs(name, buf, sizeof(buf));

	if (!err)
		printf("sysfs    %s/%s = %s\n", SYSFS_DIR, name, buf);
	return err;
}

/* Copy a debugfs dump to out, each line after indent; 0 or -errno. */
static int copy_debugfs(const char *name, FILE *out, const char *indent)
{
	char path[256], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", DEBUGFS_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (*indent)
		fprintf(out, "debugfs  %s:\n", path);
	while (fgets(line, sizeof(line), f))
		fprintf(out, "%s%s", indent, line);
	fclose(f);
	return 0;
}

/* Who holds a stack's lock (lock_look()). */
struct lock_view {
	bool held;
	pid_t pid;
	/* "running", "stopped", "gone", or "busy" (changing hands while
	 * watched); NULL when free */
	const char *holder;
	int ms;			/* watched this long unchanged; -1: not watched */
};

/*
 * Who holds the lock and what that process is doing; watch: for how long,
 * the lock word and its acquisition count watched for up to 200 ms
 * (nothing in the region says when it was taken).
 */
static void lock_look(struct sl_stack *s, bool watch, struct lock_view *lv)
{
	uint32_t v = SL_READ_ONCE(s->r->lock), seq = SL_READ_ONCE(s->r->lock_seq);

	lv->held = v & SLUICE_LOCK_HELD;
	lv->pid = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);
	lv->holder = NULL;
	lv->ms = -1;
	if (!lv->held)
		return;
	if (watch) {
		lv->ms = 0;
		while (lv->ms < 200 && SL_READ_ONCE(s->r->lock) == v &&
		       SL_READ_ONCE(s->r->lock_seq) == seq) {
			usleep(10000);
			lv->ms += 10;
		}
		if (SL_READ_ONCE(s->r->lock) != v || SL_READ_ONCE(s->r->lock_seq) != seq) {
			lv->holder = "busy";
			return;
		}
	}
	lv->holder = sl_pid_dead(lv->pid) ? "gone" : sl_pid_stopped(lv->pid) ? "stopped" : "running";
}

/*
 * The stack's death watcher (lib/preload/watch.c), from the placeholder
 * records: its pid, and whether it lives (the write lock it holds on a
 * byte of the records file; a test from a description of our own).
 */
static void watcher_line(const char *name)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = SL_FDREC_WATCH_LOCK, .l_len = 1 };
	struct sl_fdhdr h;
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/sluicefd-%s/recs", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) && h.magic == SL_FDREC_MAGIC &&
	    !fcntl(fd, F_OFD_GETLK, &fl)) {
		if (fl.l_type == F_UNLCK)
			printf("  watcher: none (deaths found by the processes' sweeps)\n");
		else
			printf("  watcher: process %u finds the deaths of the stack's processes\n",
			       h.watch_pid);
	}
	close(fd);
}

static void lock_holder_line(struct sl_stack *s)
{
	struct lock_view lv;

	lock_look(s, true, &lv);
	if (!lv.held)
		printf("  lock: free\n");
	else if (!strcmp(lv.holder, "busy"))
		printf("  lock: held by process %d, changing hands (busy)\n", (int)lv.pid);
	else
		printf("  lock: held by process %d (%s) for at least %d ms\n", (int)lv.pid,
		       !strcmp(lv.holder, "gone") ?
		       "gone: the next to want the lock brings the stack back" :
		       !strcmp(lv.holder, "stopped") ? "stopped: nobody's timeouts wait for it" :
		       "running", lv.ms);
}

/* The "lock" object of every schema: held, pid, holder, held_ms. */
static void json_lock(struct jw *w, struct sl_stack *s, bool watch)
{
	struct lock_view lv;

	lock_look(s, watch, &lv);
	jw_obj(w, "lock");
	jw_bool(w, "held", lv.held);
	if (lv.held)
		jw_i64(w, "pid", lv.pid);
	else
		jw_null(w, "pid");
	jw_str(w, "holder", lv.holder);
	if (lv.held && lv.ms >= 0)
		jw_i64(w, "held_ms", lv.ms);
	else
		jw_null(w, "held_ms");
	jw_obj_end(w);
}

/* The socket slots and buffers of info --json: in use, of how many, and
 * the most in use at once so far (dump --json's "slots" and "buffers"
 * without their sizes). */
static void json_pools(struct jw *w, struct sl_stack *s)
{
	jw_obj(w, "slots");
	jw_u64(w, "used", s->r->sock_used);
	jw_u64(w, "max", s->r->max_sockets);
	jw_u64(w, "peak", s->lib->sock_peak);
	jw_obj_end(w);
	jw_obj(w, "buffers");
	jw_u64(w, "used", s->r->n_bufs - s->lib->buf_free_count);
	jw_u64(w, "max", s->r->n_bufs);
	jw_u64(w, "peak", s->lib->buf_peak);
	jw_obj_end(w);
}

/* A stack and who holds its lock, for how long, and whether that process
 * runs, is stopped or is gone, then its pools and their high-water marks;
 * arg: the JSON writer, or NULL for text. */
static void info_lock_row(const char *name, const char *where, void *arg)
{
	struct sluice_stack *st;
	struct jw *w = arg;
	int ret = sl_stack_inspect(name, &st);

	if (w) {
		jw_obj(w, NULL);
		jw_str(w, "name", name);
		jw_str(w, "where", where);
		jw_bool(w, "valid", !ret);
		if (!ret) {
			json_lock(w, (struct sl_stack *)st, true);
			json_pools(w, (struct sl_stack *)st);
		}
		jw_obj_end(w);
	}
	if (ret)
		return;
	if (!w) {
		struct sl_stack *s = (struct sl_stack *)st;

		printf("stack    %s (%s)\n", name, where);
		lock_holder_line(s);
		/* For sizing a stack to its load (issue 16 item 3): in use
		 * now, of how many, and the most in use at once so far. */
		printf("  sockets %u of %u, at most %u so far; buffers %u of %u, at most %u so far\n",
		       s->r->sock_used, s->r->max_sockets, s->lib->sock_peak,
		       s->r->n_bufs - s->lib->buf_free_count, s->r->n_bufs, s->lib->buf_peak);
	}
	sluice_stack_close(st);
}

/*
 * info --json: the same facts as one document.  It is printed whether or
 * not the module is there ("module": null, "module_error" says why), and
 * exits 0 unless it cannot be written.
 */
static int info_json(void)
{
	struct sluice_module_info info;
	char buf[128];
	struct jw w;
	int ret;

	jw_init(&w, stdout);
	jw_obj(&w, NULL);
	jw_obj(&w, "library");
	jw_str(&w, "version", SLUICE_LIB_VERSION);
	jw_u64(&w, "abi", SLUICE_ABI_VERSION);
	jw_obj_end(&w);
	jw_arr(&w, "stacks");
	for_each_stack(info_lock_row, &w);
	jw_arr_end(&w);
	ret = sluice_module_query(NULL, &info);
	if (ret && ret != -EPROTONOSUPPORT) {
		jw_null(&w, "module");
		jw_str(&w, "module_error", ret == -ENOENT ? "not loaded" : strerror(-ret));
	} else {
		char *dbg = NULL;
		size_t dlen = 0;
		FILE *m = open_memstream(&dbg, &dlen);

		jw_obj(&w, "module");
		jw_str(&w, "version", info.module_version);
		jw_u64(&w, "abi", info.abi_version);
		jw_u64(&w, "features", info.features);
		jw_bool(&w, "compatible", !ret);
		jw_obj(&w, "sysfs");
		jw_str(&w, "abi_version", read_sysfs("abi_version", buf, sizeof(buf)) ? NULL : buf);
		jw_str(&w, "features", read_sysfs("features", buf, sizeof(buf)) ? NULL : buf);
		jw_obj_end(&w);
		if (m && !copy_debugfs("info", m, "") && !fclose(m))
			jw_str(&w, "debugfs_info", dbg);
		else
			jw_null(&w, "debugfs_info");
		free(dbg);
		jw_obj_end(&w);
		jw_null(&w, "module_error");
	}
	jw_obj_end(&w);
	jw_done(&w);
	return ferror(stdout) ? 1 : 0;
}

static int cmd_info(bool json)
{
	struct sluice_module_info info;
	int ret, err;

	if (json)
		return info_json();
	printf("library  %s (ABI %u)\n", SLUICE_LIB_VERSION, SLUICE_ABI_VERSION);
	for_each_stack(info_lock_row, NULL);
	ret = sluice_module_query(NULL, &info);
	if (ret == -ENOENT) {
		fprintf(stderr, "sluice: %s: not present: the sluice module is not loaded\n",
			SLUICE_DEVICE_PATH);
		return 1;
	}
	if (ret && ret != -EPROTONOSUPPORT) {
		fprintf(stderr, "sluice: %s: %s%s\n", SLUICE_DEVICE_PATH, strerror(-ret),
			ret == -EACCES || ret == -EPERM ?
			" (a member of group sluice may use it: adduser $USER sluice)" : "");
		return 1;
	}
	printf("module   %s (ABI %u), features 0x%" PRIx64 "\n",
	       info.module_version, info.abi_version, info.features);
	if (ret) {
		fprintf(stderr, "sluice: module ABI %u, library ABI %u: incompatible\n",
			info.abi_version, SLUICE_ABI_VERSION);
		return 1;
	}

	err = print_sysfs("abi_version");
	if (!err)
		err = print_sysfs("features");
	if (err) {
		fprintf(stderr, "sluice: %s: %s\n", SYSFS_DIR, strerror(-err));
		return 1;
	}
	err = copy_debugfs("info", stdout, "  ");
	if (err)
		/* debugfs may simply not be mounted: say so, it is not fatal. */
		fprintf(stderr, "sluice: %s/info: %s (is debugfs mounted?)\n",
			DEBUGFS_DIR, strerror(-err));
	return 0;
}

const char *stack_state_name(const struct sl_stack *s)
{
	switch (s->r->state) {
	case SLUICE_STATE_INIT: return "init";
	case SLUICE_STATE_READY: return "ready";
	/* broken_pid 0: a process found the region corrupt (lib/core/lock.c). */
	case SLUICE_STATE_BROKEN: return s->lib->broken_pid ? "BROKEN" : "corrupt";
	default: return "?";
	}
}

/* The LOCK column: free, or the holder's pid and what it is doing
 * (one look; `sluice dump` watches it and says for how long). */
static const char *lock_word(struct sl_stack *s, char *buf, size_t len)
{
	struct lock_view lv;

	lock_look(s, false, &lv);
	if (!lv.held)
		return "free";
	snprintf(buf, len, "%d%s", (int)lv.pid, !strcmp(lv.holder, "gone") ? ",gone" :
		 !strcmp(lv.holder, "stopped") ? ",stopped" : "");
	return buf;
}

/* Why a stack could not be looked at (sl_stack_inspect()'s error). */
static const char *inspect_err(int err)
{
	/* region.c: not a region, or one another build of Sluice laid out. */
	return err == -EPROTO ? "not a valid Sluice stack, or one made by another build of Sluice"
			      : strerror(-err);
}

/* A row of `sluice stacks`; arg: the JSON writer, or NULL for text. */
static void stack_row(const char *name, const char *where, void *arg)
{
	struct sluice_stack *st;
	struct sl_stack *s;
	struct jw *w = arg;
	char lk[32];
	int ret = sl_stack_inspect(name, &st);

	if (ret) {
		if (!w) {
			printf("%-24s %-7s %-6s (%s)\n", name, "invalid", where, inspect_err(ret));
			return;
		}
		jw_obj(w, NULL);
		jw_str(w, "name", name);
		jw_str(w, "state", "invalid");
		jw_str(w, "where", where);
		jw_str(w, "error", inspect_err(ret));
		jw_obj_end(w);
		return;
	}
	s = (struct sl_stack *)st;
	if (!w) {
		printf("%-24s %-7s %-6s %4u/%-4u %5u/%-5u %10llu %7d %s\n", s->r->name,
		       stack_state_name(s), where, s->r->sock_used, s->r->max_sockets,
		       s->r->n_bufs - s->lib->buf_free_count, s->r->n_bufs,
		       (unsigned long long)s->r->region_size, s->lib->helper_pid,
		       lock_word(s, lk, sizeof(lk)));
	} else {
		jw_obj(w, NULL);
		jw_str(w, "name", name);
		jw_str(w, "state", stack_state_name(s));
		jw_str(w, "where", where);
		jw_u64(w, "sockets_used", s->r->sock_used);
		jw_u64(w, "sockets_max", s->r->max_sockets);
		jw_u64(w, "buffers_used", s->r->n_bufs - s->lib->buf_free_count);
		jw_u64(w, "buffers_max", s->r->n_bufs);
		jw_u64(w, "region_bytes", s->r->region_size);
		if (s->lib->helper_pid)
			jw_i64(w, "helper_pid", s->lib->helper_pid);
		else
			jw_null(w, "helper_pid");
		json_lock(w, s, false);
		jw_obj_end(w);
	}
	sluice_stack_close(st);
}

int for_each_stack(void (*fn)(const char *name, const char *where, void *arg), void *arg)
{
	DIR *d;
	struct dirent *e;

	d = opendir(SYSFS_DIR "/stacks");
	if (d) {
		while ((e = readdir(d)))
			/* NAME@NETNS entries belong to other namespaces. */
			if (e->d_name[0] != '.' && !strchr(e->d_name, '@'))
				fn(e->d_name, "module", arg);
		closedir(d);
	}
	d = opendir("/dev/shm");
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "sluice-", 7))
			fn(e->d_name + 7, "shm", arg);
	closedir(d);
	return 0;
}

static int cmd_stacks(bool json)
{
	struct jw w;
	int ret;

	if (!json) {
		printf("%-24s %-7s %-6s %9s %11s %10s %7s %s\n", "NAME", "STATE", "WHERE",
		       "SOCKETS", "BUFFERS", "BYTES", "HELPER", "LOCK");
		if (for_each_stack(stack_row, NULL)) {
			perror("sluice: /dev/shm");
			return 1;
		}
		return 0;
	}
	jw_init(&w, stdout);
	jw_obj(&w, NULL);
	jw_arr(&w, "stacks");
	ret = for_each_stack(stack_row, &w);
	jw_arr_end(&w);
	jw_obj_end(&w);
	jw_done(&w);
	if (ret)
		perror("sluice: /dev/shm");
	return ret ? 1 : 0;
}

const char *tcp_state_name(unsigned int st)
{
	static const char *const n[] = {
		"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT1",
		"FIN_WAIT2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT",
	};

	_Static_assert(sizeof(n) / sizeof(n[0]) == TCP_STATES, "every TCP state named");
	return st < TCP_STATES ? n[st] : "?";
}

/* "a.b.c.d:port", or "[v6]:port" for an IPv6 address's handle
 * (lib/proto/proto.h, "IPv6 sockets"). */
static void addr_str(const struct sl_stack *s, char *buf, size_t len, uint32_t a, uint16_t p)
{
	char ip[INET6_ADDRSTRLEN];
	uint8_t a6[16];

	if (sl_v6tok(a) && sl_v6tok_addr(s, a, a6)) {
		inet_ntop(AF_INET6, a6, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(p));
		return;
	}
	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(p));
}

static void print_tcp(struct sl_stack *s, const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;

	if (so->state == SL_TCP_LISTEN) {
		printf("        accept queue %u, SYN queue %u/%u, backlog %u\n", tp->acc_len,
		       tp->syn_len, tp->syn_max, tp->backlog);
		return;
	}
	printf("        snd una %u nxt %u wnd %u (x%u) cwnd %u ssthresh %u sndq %u bytes\n",
	       tp->snd_una - tp->iss, tp->snd_nxt - tp->iss, tp->snd_wnd, 1u << tp->snd_wscale,
	       tp->cwnd, tp->ssthresh, tp->sndq_bytes);
	printf("        rcv nxt %u adv %u (x%u) ooo %u bytes; mss %u srtt %u us rto %u us "
	       "backoff %u retransmits %u\n", tp->rcv_nxt - tp->irs, tp->rcv_adv - tp->rcv_nxt,
	       1u << tp->rcv_wscale, tp->ooo_bytes, tp->mss, tp->srtt_us, tp->rto_us,
	       tp->backoff, so->retransmits);
	printf("        buffers held: rxq %u ooo %u lent %u (rcvbuf %u bytes); sndbuf %u bytes\n",
	       so->rxq_count, tp->ooo_count, so->rx_lent_count, so->rcvbuf, so->sndbuf);
	if (sl_buf_some(s, tp->sndq_head)) {
		uint32_t idx = tp->sndq_head, steps = 0;
		int n = 0;

		/* The first send buffers: where a retransmission starts. */
		printf("        sndq head:");
		while (n++ < 4 && sl_buf_next(s, idx, &steps)) {
			const struct sluice_buf *b = sl_buf(s, idx);

			printf(" [%u +%u %s%s%s]", b->seq - tp->iss, b->aux,
			       (b->flags & SL_TBF_SENT) ? "S" : "-",
			       (b->flags & SL_TBF_SACKED) ? "A" : "", (b->flags & SL_TBF_RECOV) ? "R" : "");
			idx = b->next_idx;
		}
		printf(" hint %d\n", tp->sndq_hint == SLUICE_IDX_NONE ? -1 : (int)tp->sndq_hint);
	}
}

/* Map the rings of a stack on a device to read them (cmds.h). */
const struct sluice_kring *kring_map(const struct sl_stack *s, size_t *len, char *why,
				     size_t wlen)
{
	struct sluice_kring_setup ks = { .size = sizeof(ks) };
	void *map;

	*why = '\0';
	if (!s->module_backed || !s->ifindex)
		return NULL;
	if (ioctl(s->region_fd, SLUICE_IOC_KRING_SETUP, &ks)) {
		snprintf(why, wlen, "none (%s)", errno == ENOENT ? "not set up" : strerror(errno));
		return NULL;
	}
	map = mmap(NULL, ks.mmap_size, PROT_READ, MAP_SHARED, s->region_fd, SLUICE_MMAP_KRING);
	if (map == MAP_FAILED)
		map = mmap(NULL, ks.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->region_fd,
			   SLUICE_MMAP_KRING);
	if (map == MAP_FAILED) {
		snprintf(why, wlen, "cannot map %llu bytes: %s", (unsigned long long)ks.mmap_size,
			 strerror(errno));
		return NULL;
	}
	*len = ks.mmap_size;
	return map;
}

/* The rings, if the stack has them: sizes, device state, ring indices and
 * the module's counters. */
static void print_kring(const struct sl_stack *s)
{
	const struct sluice_kring *k;
	char why[128];
	size_t len;

	k = kring_map(s, &len, why, sizeof(why));
	if (!k) {
		if (*why)
			printf("kring: %s\n", why);
		return;
	}
	printf("kring: ifindex %u, device %s, mtu %u, changes %u; %llu bytes mapped%s\n",
	       k->ifindex, k->dev_state == SLUICE_KRING_DEV_UP ? "up" :
	       k->dev_state == SLUICE_KRING_DEV_GONE ? "GONE" : "?", k->dev_mtu, k->dev_seq,
	       (unsigned long long)k->size, k->magic == SLUICE_KRING_MAGIC ? "" : " (bad magic)");
	printf("  rx   %5u entries  prod %10u cons %10u  waiting %u\n", k->rx_entries,
	       k->rx.prod, k->rx.cons, k->rx.prod - k->rx.cons);
	printf("  fill %5u entries  prod %10u cons %10u  buffers on it %u\n", k->rx_entries,
	       k->fill.prod, k->fill.cons, k->fill.prod - k->fill.cons);
	printf("  tx   %5u entries  prod %10u cons %10u  waiting %u (slots of %u bytes)\n",
	       k->tx_entries, k->tx.prod, k->tx.cons, k->tx.prod - k->tx.cons, k->tx_slot_size);
#define KCTR(f, d) printf("  %-13s %12llu  %s\n", #f, (unsigned long long)k->f, d);
	KRING_COUNTERS(KCTR)
#undef KCTR
	munmap((void *)k, len);
}

/* The "kring" member of dump --json: null on no device, else its state and
 * the module's counters. */
static void json_kring(struct jw *w, const struct sl_stack *s)
{
	const struct sluice_kring *k;
	char why[128];
	size_t len;

	k = kring_map(s, &len, why, sizeof(why));
	if (!k) {
		if (!*why) {
			jw_null(w, "kring");
			return;
		}
		jw_obj(w, "kring");
		jw_str(w, "error", why);
		jw_obj_end(w);
		return;
	}
	jw_obj(w, "kring");
	jw_null(w, "error");
	jw_u64(w, "ifindex", k->ifindex);
	jw_str(w, "device", k->dev_state == SLUICE_KRING_DEV_UP ? "up" :
	       k->dev_state == SLUICE_KRING_DEV_GONE ? "gone" : "?");
	jw_u64(w, "mtu", k->dev_mtu);
	jw_u64(w, "changes", k->dev_seq);
	jw_u64(w, "mapped_bytes", k->size);
	jw_bool(w, "magic_ok", k->magic == SLUICE_KRING_MAGIC);
	jw_u64(w, "rx_entries", k->rx_entries);
	jw_u64(w, "tx_entries", k->tx_entries);
	jw_u64(w, "rx_waiting", k->rx.prod - k->rx.cons);
	jw_u64(w, "fill_buffers", k->fill.prod - k->fill.cons);
	jw_u64(w, "tx_waiting", k->tx.prod - k->tx.cons);
	jw_obj(w, "counters");
#define KCTR(f, d) jw_u64(w, #f, k->f);
	KRING_COUNTERS(KCTR)
#undef KCTR
	jw_obj_end(w);
	jw_obj_end(w);
	munmap((void *)k, len);
}

/* TIME-WAIT entries whose time is not up, at now_us.  Those whose time
 * is up are still in the table until a process of the stack runs its
 * timers (an idle stack's may wait); they are not shown. */
/* TIME-WAIT entries `sluice dump` lists without --all. */
#define DUMP_TW_SHOWN	20

struct tw_count {
	const struct sl_stack *s;
	uint64_t now_us;
	unsigned int n;
	unsigned int left;	/* print_tw(): how many more to print */
	struct jw *w;		/* print_tw(): JSON, or NULL for text */
};

static void count_tw(const struct sl_tw *tw, void *arg)
{
	struct tw_count *c = arg;

	c->n += tw->expire_us > c->now_us;
}

/* A TIME-WAIT entry, as a socket line (ss lists them among sockets);
 * arg: the time now (sl_now()). */
static void print_tw(const struct sl_tw *tw, void *arg)
{
	struct tw_count *c = arg;
	uint64_t now_us = c->now_us;
	char l[56], r[56];

	if (tw->expire_us <= now_us || !c->left)
		return;
	c->left--;
	addr_str(c->s, l, sizeof(l), tw->laddr, tw->lport);
	addr_str(c->s, r, sizeof(r), tw->raddr, tw->rport);
	if (c->w) {
		jw_obj(c->w, NULL);
		jw_str(c->w, "local", l);
		jw_str(c->w, "remote", r);
		jw_dbl(c->w, "expires_in_s", (double)(tw->expire_us - now_us) / 1e6);
		jw_obj_end(c->w);
		return;
	}
	printf("  %5s %-4s %-11s %-21s %-21s  expires in %.1f s\n", "-", "tcp", "TIME_WAIT", l, r,
	       (double)(tw->expire_us - now_us) / 1e6);
}

/* A socket's TCP details in dump --json: listener queues, or the
 * connection's sequence space, windows, timers and buffers. */
static void json_tcp(struct jw *w, const struct sl_sock *so)
{
	const struct sl_tcp_sock *tp = &so->tcp;

	jw_obj(w, "tcp");
	if (so->state == SL_TCP_LISTEN) {
		jw_u64(w, "accept_queue", tp->acc_len);
		jw_u64(w, "syn_queue", tp->syn_len);
		jw_u64(w, "syn_max", tp->syn_max);
		jw_u64(w, "backlog", tp->backlog);
		jw_obj_end(w);
		return;
	}
	jw_u64(w, "snd_una", tp->snd_una - tp->iss);
	jw_u64(w, "snd_nxt", tp->snd_nxt - tp->iss);
	jw_u64(w, "snd_wnd", tp->snd_wnd);
	jw_u64(w, "snd_wscale", tp->snd_wscale);
	jw_u64(w, "cwnd", tp->cwnd);
	jw_u64(w, "ssthresh", tp->ssthresh);
	jw_u64(w, "sndq_bytes", tp->sndq_bytes);
	jw_u64(w, "rcv_nxt", tp->rcv_nxt - tp->irs);
	jw_u64(w, "rcv_adv", tp->rcv_adv - tp->rcv_nxt);
	jw_u64(w, "rcv_wscale", tp->rcv_wscale);
	jw_u64(w, "ooo_bytes", tp->ooo_bytes);
	jw_u64(w, "mss", tp->mss);
	jw_u64(w, "srtt_us", tp->srtt_us);
	jw_u64(w, "rto_us", tp->rto_us);
	jw_u64(w, "backoff", tp->backoff);
	jw_u64(w, "retransmits", so->retransmits);
	jw_u64(w, "rxq_buffers", so->rxq_count);
	jw_u64(w, "ooo_buffers", tp->ooo_count);
	jw_u64(w, "lent_buffers", so->rx_lent_count);
	jw_u64(w, "rcvbuf", so->rcvbuf);
	jw_u64(w, "sndbuf", so->sndbuf);
	jw_obj_end(w);
}

/* dump --json: the region as one document (tools/README.md has the schema). */
static void dump_json(struct sl_stack *s, const char *name, bool all)
{
	char ip[INET_ADDRSTRLEN], mask[INET_ADDRSTRLEN], mac[18], l[32], r[32];
	struct tw_count tw = { .s = s, .now_us = sl_now(s) };
	struct jw w;

	inet_ntop(AF_INET, &s->lib->ip_addr, ip, sizeof(ip));
	inet_ntop(AF_INET, &s->lib->ip_mask, mask, sizeof(mask));
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", s->lib->mac[0],
		 s->lib->mac[1], s->lib->mac[2], s->lib->mac[3], s->lib->mac[4], s->lib->mac[5]);
	sl_tw_list(s, count_tw, &tw);
	jw_init(&w, stdout);
	jw_obj(&w, NULL);
	jw_str(&w, "name", name);
	jw_str(&w, "state", stack_state_name(s));
	jw_str(&w, "where", s->module_backed ? "module" : "shm");
	jw_str(&w, "addr", ip);
	jw_str(&w, "mask", mask);
	jw_u64(&w, "mtu", s->r->mtu);
	jw_str(&w, "mac", mac);
	if (s->ifindex)
		jw_u64(&w, "ifindex", s->ifindex);
	else
		jw_null(&w, "ifindex");
	if (s->r->state == SLUICE_STATE_BROKEN && s->lib->broken_pid)
		jw_u64(&w, "broken_pid", s->lib->broken_pid);
	else
		jw_null(&w, "broken_pid");
	jw_u64(&w, "region_bytes", s->r->region_size);
	jw_obj(&w, "slots");
	jw_u64(&w, "used", s->r->sock_used);
	jw_u64(&w, "max", s->r->max_sockets);
	jw_u64(&w, "peak", s->lib->sock_peak);
	jw_u64(&w, "bytes_each", s->r->sock_size);
	jw_obj_end(&w);
	jw_obj(&w, "buffers");
	jw_u64(&w, "used", s->r->n_bufs - s->lib->buf_free_count);
	jw_u64(&w, "max", s->r->n_bufs);
	jw_u64(&w, "peak", s->lib->buf_peak);
	jw_u64(&w, "bytes_each", s->r->buf_size);
	jw_obj_end(&w);
	if (s->lib->wake_cost_ns) {
		jw_u64(&w, "wake_cost_ns", s->lib->wake_cost_ns);
		jw_u64(&w, "spin_us", sl_spin_budget_us(s->lib->wake_cost_ns));
	} else {
		jw_null(&w, "wake_cost_ns");
		jw_null(&w, "spin_us");
	}
	if (s->lib->helper_pid)
		jw_i64(&w, "helper_pid", s->lib->helper_pid);
	else
		jw_null(&w, "helper_pid");
	json_lock(&w, s, true);
	jw_obj(&w, "lock_word");
	jw_u64(&w, "word", s->r->lock);
	jw_i64(&w, "owner", s->r->lock_owner);
	jw_u64(&w, "contended", s->lib->lock_contended);
	jw_obj_end(&w);
	jw_u64(&w, "abi", s->r->abi_version);
	jw_u64(&w, "lib_layout", s->lib->lib_layout);
	/* Every counter, zero or not: a reader sees the full set. */
	jw_obj(&w, "counters");
	for (unsigned int i = 0; i < SL_C_COUNT; i++)
		jw_u64(&w, sl_counter_names[i], sl_counter_sum(s, i));
	jw_obj_end(&w);
	json_kring(&w, s);
	jw_arr(&w, "sockets");
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);

		if (!sl_sock_type_live(so->type))
			continue;
		addr_str(s, l, sizeof(l), so->laddr, so->lport);
		addr_str(s, r, sizeof(r), so->raddr, so->rport);
		jw_obj(&w, NULL);
		jw_u64(&w, "idx", i);
		jw_str(&w, "type", so->type == SL_SOCK_TCP ? "tcp" : "udp");
		jw_str(&w, "state", so->type == SL_SOCK_TCP ? tcp_state_name(so->state) : NULL);
		jw_str(&w, "local", l);
		jw_str(&w, "remote", r);
		jw_u64(&w, "rxq_bytes", so->rxq_bytes);
		jw_u64(&w, "rx_pkts", so->rx_pkts);
		jw_u64(&w, "tx_pkts", so->tx_pkts);
		jw_u64(&w, "pid", so->owner_pid);
		jw_bool(&w, "pid_exited", so->owner_pid && sl_pid_dead((pid_t)so->owner_pid));
		if (so->flags & SL_SF_FILTER) {
			addr_str(s, l, sizeof(l), so->filter_laddr, so->lport);
			jw_obj(&w, "filter");
			jw_u64(&w, "id", so->filter_id);
			jw_str(&w, "local", l);
			jw_obj_end(&w);
		} else {
			jw_null(&w, "filter");
		}
		if (so->type == SL_SOCK_TCP)
			json_tcp(&w, so);
		else
			jw_null(&w, "tcp");
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj(&w, "time_wait");
	jw_u64(&w, "entries", tw.n);
	jw_u64(&w, "peak", s->lib->tw_peak);
	jw_u64(&w, "max", s->tw_max);
	jw_u64(&w, "expired", s->lib->tw_count > tw.n ? s->lib->tw_count - tw.n : 0);
	tw.left = all ? UINT_MAX : DUMP_TW_SHOWN;
	tw.w = &w;
	jw_arr(&w, "list");
	sl_tw_list(s, print_tw, &tw);
	jw_arr_end(&w);
	jw_bool(&w, "complete", all || tw.n <= DUMP_TW_SHOWN);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_done(&w);
}

/* The stack's IPv6 addresses: its global one, and its link-local one with
 * the state of its Duplicate Address Detection and its scope. */
static void dump_ip6(const struct sl_stack *s)
{
	static const char *const st[] = { "none", "tentative", "valid", "dadfailed" };
	char a[INET6_ADDRSTRLEN], ll[INET6_ADDRSTRLEN];
	uint32_t state = s->lib->ip6_ll_state;

	if (!s->lib->ip6_plen)
		return;
	inet_ntop(AF_INET6, s->lib->ip6_addr, a, sizeof(a));
	printf("  ipv6 %s/%u", a, s->lib->ip6_plen);
	if (state != SL_LL_NONE && state < 4) {
		inet_ntop(AF_INET6, s->lib->ip6_ll, ll, sizeof(ll));
		printf(", link-local %s/64 %s, scope %u", ll, st[state], sl_stack_ifindex(s));
	}
	printf("\n");
}

static int cmd_dump(const char *name, bool all, bool json)
{
	struct sluice_stack *st;
	struct sl_stack *s;
	char ip[INET_ADDRSTRLEN], mask[INET_ADDRSTRLEN];
	struct tw_count tw = { .w = NULL };
	int ret = sl_stack_inspect(name, &st);

	if (ret) {
		fprintf(stderr, "sluice: stack '%s': %s\n", name, inspect_err(ret));
		return 1;
	}
	s = (struct sl_stack *)st;
	if (json) {
		dump_json(s, name, all);
		sluice_stack_close(st);
		return 0;
	}
	inet_ntop(AF_INET, &s->lib->ip_addr, ip, sizeof(ip));
	inet_ntop(AF_INET, &s->lib->ip_mask, mask, sizeof(mask));
	printf("stack %s: %s, %s/%s mtu %u, mac %02x:%02x:%02x:%02x:%02x:%02x\n", s->r->name,
	       stack_state_name(s), ip, mask, s->r->mtu, s->lib->mac[0], s->lib->mac[1],
	       s->lib->mac[2], s->lib->mac[3], s->lib->mac[4], s->lib->mac[5]);
	if (s->ifindex)
		printf("  on device ifindex %u (kring)\n", s->ifindex);
	dump_ip6(s);
	if (s->r->state == SLUICE_STATE_BROKEN && s->lib->broken_pid)
		printf("  broken: process %u died holding the stack lock\n", s->lib->broken_pid);
	if (s->r->state == SLUICE_STATE_BROKEN && !s->lib->broken_pid) {
		printf("  corrupt: a process found impossible values in the region; every call fails (ENOTRECOVERABLE):\n");
		for (unsigned int i = SL_C_corrupt_buf_idx; i <= SL_C_corrupt_header; i++)
			if (sl_counter_sum(s, i))
				printf("    %s (%llu)\n", sl_counter_desc[i],
				       (unsigned long long)sl_counter_sum(s, i));
	}
	printf("  region %llu bytes; sockets %u/%u (%u bytes each); buffers %u/%u of %u bytes\n",
	       (unsigned long long)s->r->region_size, s->r->sock_used, s->r->max_sockets,
	       s->r->sock_size, s->r->n_bufs - s->lib->buf_free_count, s->r->n_bufs,
	       s->r->buf_size);
	printf("  at most so far: sockets %u, buffers %u\n", s->lib->sock_peak, s->lib->buf_peak);
	if (s->lib->wake_cost_ns)
		printf("  a wake-up costs %.1f us here (as sluice run measured it): "
		       "blocking calls spin %u us before they sleep, unless told\n",
		       s->lib->wake_cost_ns / 1e3, sl_spin_budget_us(s->lib->wake_cost_ns));
	tw.s = s;
	tw.now_us = sl_now(s);
	tw.n = 0;
	sl_tw_list(s, count_tw, &tw);
	printf("  time-wait: %u entries (at most %u so far) of %u (%u bytes each)", tw.n,
	       s->lib->tw_peak, s->tw_max, SL_TW_SIZE);
	if (s->lib->tw_count > tw.n)
		printf("; %u more past their time, gone at the stack's next timer turn",
		       s->lib->tw_count - tw.n);
	printf("\n");
	if (s->lib->helper_pid)
		printf("  helper: process %d finishes orphaned connections%s\n", s->lib->helper_pid,
		       sl_pid_dead(s->lib->helper_pid) ? " (gone: stale)" : "");
	watcher_line(s->name);
	printf("  lock: word 0x%x owner %d contended %llu\n", s->r->lock,
	       s->r->lock_owner, (unsigned long long)s->lib->lock_contended);
	lock_holder_line(s);
	printf("  layout: abi %u, library layout %u\n", s->r->abi_version, s->lib->lib_layout);
	printf("counters:\n");
	for (unsigned int i = 0; i < SL_C_COUNT; i++)
		if (sl_counter_sum(s, i))
			printf("  %-20s %12llu  %s\n", sl_counter_names[i],
			       (unsigned long long)sl_counter_sum(s, i), sl_counter_desc[i]);
	print_kring(s);
	printf("sockets:\n  %5s %-4s %-11s %-21s %-21s %8s %8s %8s %8s\n", "IDX", "TYPE",
	       "STATE", "LOCAL", "REMOTE", "RXQ", "RX_PKTS", "TX_PKTS", "PID");
	for (uint32_t i = 0; i < sl_sock_top(s); i++) {
		struct sl_sock *so = sl_sock(s, i);
		char l[56], r[56];

		/* Free slots, and the pool socket() takes from, are no sockets. */
		if (!sl_sock_type_live(so->type))
			continue;
		addr_str(s, l, sizeof(l), so->laddr, so->lport);
		addr_str(s, r, sizeof(r), so->raddr, so->rport);
		printf("  %5u %-4s %-11s %-21s %-21s %8u %8llu %8llu %8u\n", i,
		       so->type == SL_SOCK_TCP ? "tcp" : "udp",
		       so->type == SL_SOCK_TCP ? tcp_state_name(so->state) : "-", l, r,
		       so->rxq_bytes, (unsigned long long)so->rx_pkts,
		       (unsigned long long)so->tx_pkts, so->owner_pid);
		/* Its creator is gone: the socket waits for the sweep that
		 * sees the death, unless a process it forked still holds it. */
		if (so->owner_pid && sl_pid_dead((pid_t)so->owner_pid))
			printf("        process %u has exited\n", so->owner_pid);
		if (so->flags & SL_SF_FILTER) {
			addr_str(s, l, sizeof(l), so->filter_laddr, so->lport);
			printf("        module filter %u: %s %s\n", so->filter_id,
			       so->type == SL_SOCK_TCP ? "tcp" : "udp", l);
		}
		if (so->type == SL_SOCK_TCP)
			print_tcp(s, so);
	}
	tw.left = all ? UINT_MAX : DUMP_TW_SHOWN;
	sl_tw_list(s, print_tw, &tw);
	if (tw.n > DUMP_TW_SHOWN && !all)
		printf("  ... and %u more TIME-WAIT entries (sluice dump --all %s lists them)\n",
		       tw.n - DUMP_TW_SHOWN, name);
	sluice_stack_close(st);
	return 0;
}

/* The options of the inspection subcommands: --json, --all (dump),
 * --help; the rest are operands.  -1 for an unknown option. */
struct opts {
	bool json, all, help;
	int nargs;
	char **args;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->args = argv;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			o->json = true;
		else if (!strcmp(argv[i], "--all"))
			o->all = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			o->help = true;
		else if (argv[i][0] == '-')
			return -1;
		else
			o->args[o->nargs++] = argv[i];
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc >= 2 ? argv[1] : NULL;
	struct opts o;

	/* Looking at a stack spawns no helper when we let go of it (run's
	 * programs still may: they keep the environment they were given). */
	if (cmd && strcmp(cmd, "run"))
		setenv("SLUICE_NO_HELPER", "1", 1);
	if (cmd && !strcmp(cmd, "run"))
		return cmd_run(argc, argv);
	if (cmd && !strcmp(cmd, "metrics"))
		return cmd_metrics(argc - 1, argv + 1);
	if (cmd && !strcmp(cmd, "tcpdump"))
		return cmd_tcpdump(argc - 2, argv + 2);
	if (cmd && !strcmp(cmd, "doctor"))
		return cmd_doctor(argc - 2, argv + 2);
	if (cmd && !strcmp(cmd, "handoff"))
		return cmd_handoff(argc - 2, argv + 2);
	if (!cmd) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "info") && strcmp(cmd, "stacks") && strcmp(cmd, "dump") &&
	    strcmp(cmd, "fds") && strcmp(cmd, "version")) {
		fprintf(stderr, "sluice: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	/* dump takes a stack's name, fds may, the others take none. */
	if (parse_opts(argc - 2, argv + 2, &o) || (o.all && strcmp(cmd, "dump")) ||
	    (!o.help && !strcmp(cmd, "dump") && o.nargs != 1) ||
	    (!strcmp(cmd, "fds") && o.nargs > 1) ||
	    (strcmp(cmd, "dump") && strcmp(cmd, "fds") && o.nargs)) {
		usage(stderr);
		return 2;
	}
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "dump"))
		return cmd_dump(o.args[0], o.all, o.json);
	if (!strcmp(cmd, "fds"))
		return cmd_fds(o.nargs ? o.args[0] : NULL, o.json);
	if (!strcmp(cmd, "info"))
		return cmd_info(o.json);
	if (!strcmp(cmd, "stacks"))
		return cmd_stacks(o.json);
	if (o.json) {
		struct jw w;

		jw_init(&w, stdout);
		jw_obj(&w, NULL);
		jw_str(&w, "version", SLUICE_LIB_VERSION);
		jw_u64(&w, "abi", SLUICE_ABI_VERSION);
		jw_obj_end(&w);
		jw_done(&w);
		return 0;
	}
	printf("sluice %s (ABI %u)\n", SLUICE_LIB_VERSION, SLUICE_ABI_VERSION);
	return 0;
}
