// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sluice command.  Subcommands:
 *   sluice info         library, module, sysfs and debugfs state
 *   sluice stacks       the stacks on this machine
 *   sluice dump [--all] NAME  a stack's configuration, counters, rings and sockets
 *   sluice run ...      run a program on a stack (run.c)
 *   sluice fds [NAME]   the processes' fds on a stack, or on any (run.c)
 *   sluice version      the library's version
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
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
#include "run.h"

#define SYSFS_DIR	"/sys/class/misc/" SLUICE_DEVICE_NAME
#define DEBUGFS_DIR	"/sys/kernel/debug/" SLUICE_DEVICE_NAME

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice COMMAND\n"
		"  info        show the library, who holds each stack's lock, and the loaded\n"
		"              module with its sysfs and debugfs state\n"
		"  stacks      list the stacks on this machine\n"
		"  dump [--all] NAME\n"
		"              show a stack's configuration, counters and sockets (the first\n"
		"              TIME-WAIT entries only, unless --all)\n"
		"  run [--stack NAME] [--profile latency|throughput] [--interface DEV] -- PROGRAM [ARGS]\n"
		"              run PROGRAM with its IPv4 sockets on a Sluice stack (on DEV:\n"
		"              through the module's rings; `sluice run` alone lists every option)\n"
		"  fds [NAME]  list the processes' fds that are sockets of stack NAME (or any)\n"
		"  version     show the library version\n");
}

/* Print one sysfs value; returns 0 or -errno. */
static int print_sysfs(const char *name)
{
	char path[256], buf[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", SYSFS_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	printf("sysfs    %s = %s\n", path, buf);
	return 0;
}

/* Copy a debugfs dump to stdout, indented; returns 0 or -errno. */
static int print_debugfs(const char *name)
{
	char path[256], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", DEBUGFS_DIR, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	printf("debugfs  %s:\n", path);
	while (fgets(line, sizeof(line), f))
		printf("  %s", line);
	fclose(f);
	return 0;
}

static void lock_holder_line(struct sl_stack *s);

static int for_each_stack(void (*fn)(const char *name, const char *where));

/* A stack and who holds its lock, for how long, and whether that process
 * runs, is stopped or is gone. */
static void info_lock_row(const char *name, const char *where)
{
	struct sluice_stack *st;

	if (sl_stack_inspect(name, &st))
		return;
	printf("stack    %s (%s)\n", name, where);
	lock_holder_line((struct sl_stack *)st);
	sluice_stack_close(st);
}

static int cmd_info(void)
{
	struct sluice_module_info info;
	int ret, err;

	printf("library  %s (ABI %u)\n", SLUICE_LIB_VERSION, SLUICE_ABI_VERSION);
	for_each_stack(info_lock_row);
	ret = sluice_module_query(NULL, &info);
	if (ret == -ENOENT) {
		fprintf(stderr, "sluice: %s: not present: the sluice module is not loaded\n",
			SLUICE_DEVICE_PATH);
		return 1;
	}
	if (ret && ret != -EPROTONOSUPPORT) {
		fprintf(stderr, "sluice: %s: %s\n", SLUICE_DEVICE_PATH, strerror(-ret));
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
	err = print_debugfs("info");
	if (err)
		/* debugfs may simply not be mounted: say so, it is not fatal. */
		fprintf(stderr, "sluice: %s/info: %s (is debugfs mounted?)\n",
			DEBUGFS_DIR, strerror(-err));
	return 0;
}

static const char *state_name(const struct sl_stack *s)
{
	switch (s->r->state) {
	case SLUICE_STATE_INIT: return "init";
	case SLUICE_STATE_READY: return "ready";
	/* broken_pid 0: a process found the region corrupt (lib/core/lock.c). */
	case SLUICE_STATE_BROKEN: return s->lib->broken_pid ? "BROKEN" : "corrupt";
	default: return "?";
	}
}

/*
 * Who holds the lock, in what state, and for how long: the lock word and
 * its acquisition count watched for up to 200 ms (nothing in the region
 * says when it was taken).
 */
static void lock_holder_line(struct sl_stack *s)
{
	uint32_t v = SL_READ_ONCE(s->r->lock), seq = SL_READ_ONCE(s->r->lock_seq);
	pid_t pid = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);
	int ms = 0;

	if (!(v & SLUICE_LOCK_HELD)) {
		printf("  lock: free\n");
		return;
	}
	while (ms < 200 && SL_READ_ONCE(s->r->lock) == v && SL_READ_ONCE(s->r->lock_seq) == seq) {
		usleep(10000);
		ms += 10;
	}
	if (SL_READ_ONCE(s->r->lock) != v || SL_READ_ONCE(s->r->lock_seq) != seq)
		printf("  lock: held by process %d, changing hands (busy)\n", (int)pid);
	else
		printf("  lock: held by process %d (%s) for at least %d ms\n", (int)pid,
		       sl_pid_dead(pid) ? "gone: the next to want the lock brings the stack back" :
		       sl_pid_stopped(pid) ? "stopped: nobody's timeouts wait for it" : "running",
		       ms);
}

/* The LOCK column: free, or the holder's pid and what it is doing
 * (one look; `sluice dump` watches it and says for how long). */
static const char *lock_word(const struct sl_stack *s, char *buf, size_t len)
{
	uint32_t v = SL_READ_ONCE(s->r->lock);
	pid_t pid = (pid_t)(v >> SLUICE_LOCK_PID_SHIFT);

	if (!(v & SLUICE_LOCK_HELD))
		return "free";
	snprintf(buf, len, "%d%s", (int)pid,
		 sl_pid_dead(pid) ? ",gone" : sl_pid_stopped(pid) ? ",stopped" : "");
	return buf;
}

static void stack_row(const char *name, const char *where)
{
	struct sluice_stack *st;
	struct sl_stack *s;
	char lk[32];

	if (sl_stack_inspect(name, &st)) {
		printf("%-24s %-7s %-6s\n", name, "invalid", where);
		return;
	}
	s = (struct sl_stack *)st;
	printf("%-24s %-7s %-6s %4u/%-4u %5u/%-5u %10llu %7d %s\n", s->r->name,
	       state_name(s), where, s->r->sock_used, s->r->max_sockets,
	       s->r->n_bufs - s->lib->buf_free_count, s->r->n_bufs,
	       (unsigned long long)s->r->region_size, s->lib->helper_pid,
	       lock_word(s, lk, sizeof(lk)));
	sluice_stack_close(st);
}

/* fn(name, where) for each stack the module holds (sysfs), then each in
 * /dev/shm; -1 (errno set) if /dev/shm cannot be read. */
static int for_each_stack(void (*fn)(const char *name, const char *where))
{
	DIR *d;
	struct dirent *e;

	d = opendir(SYSFS_DIR "/stacks");
	if (d) {
		while ((e = readdir(d)))
			/* NAME@NETNS entries belong to other namespaces. */
			if (e->d_name[0] != '.' && !strchr(e->d_name, '@'))
				fn(e->d_name, "module");
		closedir(d);
	}
	d = opendir("/dev/shm");
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "sluice-", 7))
			fn(e->d_name + 7, "shm");
	closedir(d);
	return 0;
}

static int cmd_stacks(void)
{
	printf("%-24s %-7s %-6s %9s %11s %10s %7s %s\n", "NAME", "STATE", "WHERE", "SOCKETS",
	       "BUFFERS", "BYTES", "HELPER", "LOCK");
	if (for_each_stack(stack_row)) {
		perror("sluice: /dev/shm");
		return 1;
	}
	return 0;
}

static const char *tcp_state_name(uint8_t st)
{
	static const char *const n[] = {
		"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT1",
		"FIN_WAIT2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT",
	};

	return st < sizeof(n) / sizeof(n[0]) ? n[st] : "?";
}

static void addr_str(char *buf, size_t len, uint32_t a, uint16_t p)
{
	char ip[INET_ADDRSTRLEN];

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

/* The rings of a stack on a device (uapi struct sluice_kring), if it has
 * them: sizes, device state, ring indices and the module's counters. */
static void print_kring(const struct sl_stack *s)
{
	struct sluice_kring_setup ks = { .size = sizeof(ks) };
	const struct sluice_kring *k;
	void *map;

	if (!s->module_backed || !s->ifindex)
		return;
	if (ioctl(s->region_fd, SLUICE_IOC_KRING_SETUP, &ks)) {
		printf("kring: none (%s)\n", errno == ENOENT ? "not set up" : strerror(errno));
		return;
	}
	map = mmap(NULL, ks.mmap_size, PROT_READ, MAP_SHARED, s->region_fd, SLUICE_MMAP_KRING);
	if (map == MAP_FAILED)
		map = mmap(NULL, ks.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, s->region_fd,
			   SLUICE_MMAP_KRING);
	if (map == MAP_FAILED) {
		printf("kring: cannot map %llu bytes: %s\n", (unsigned long long)ks.mmap_size,
		       strerror(errno));
		return;
	}
	k = map;
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
#define KCTR(f, d) printf("  %-13s %12llu  %s\n", #f, (unsigned long long)k->f, d)
	KCTR(rx_packets, "steered to rx");
	KCTR(rx_bytes, "bytes steered to rx");
	KCTR(rx_drop_ring, "dropped: rx ring full");
	KCTR(rx_drop_fill, "dropped: no buffer on the fill ring");
	KCTR(rx_drop_size, "dropped: longer than a buffer holds");
	KCTR(tx_packets, "handed to the device");
	KCTR(tx_bytes, "bytes handed to the device");
	KCTR(tx_drop, "refused by the device or neighbour layer");
	KCTR(bad_index, "producer index too far ahead");
	KCTR(bad_buf, "fill entries outside the region");
	KCTR(bad_desc, "tx descriptors with bad length or flags");
	KCTR(kicks, "tx kicks");
#undef KCTR
	munmap(map, ks.mmap_size);
}

/* TIME-WAIT entries whose time is not up, at now_us.  Those whose time
 * is up are still in the table until a process of the stack runs its
 * timers (an idle stack's may wait); they are not shown. */
/* TIME-WAIT entries `sluice dump` lists without --all. */
#define DUMP_TW_SHOWN	20

struct tw_count {
	uint64_t now_us;
	unsigned int n;
	unsigned int left;	/* print_tw(): how many more to print */
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
	char l[32], r[32];

	if (tw->expire_us <= now_us || !c->left)
		return;
	c->left--;
	addr_str(l, sizeof(l), tw->laddr, tw->lport);
	addr_str(r, sizeof(r), tw->raddr, tw->rport);
	printf("  %5s %-4s %-11s %-21s %-21s  expires in %.1f s\n", "-", "tcp", "TIME_WAIT", l, r,
	       (double)(tw->expire_us - now_us) / 1e6);
}

static int cmd_dump(const char *name, bool all)
{
	struct sluice_stack *st;
	struct sl_stack *s;
	char ip[INET_ADDRSTRLEN], mask[INET_ADDRSTRLEN];
	struct tw_count tw;
	int ret = sl_stack_inspect(name, &st);

	if (ret) {
		fprintf(stderr, "sluice: stack '%s': %s\n", name,
			ret == -EPROTO ? "not a valid Sluice stack" : strerror(-ret));
		return 1;
	}
	s = (struct sl_stack *)st;
	inet_ntop(AF_INET, &s->lib->ip_addr, ip, sizeof(ip));
	inet_ntop(AF_INET, &s->lib->ip_mask, mask, sizeof(mask));
	printf("stack %s: %s, %s/%s mtu %u, mac %02x:%02x:%02x:%02x:%02x:%02x\n", s->r->name,
	       state_name(s), ip, mask, s->r->mtu, s->lib->mac[0], s->lib->mac[1],
	       s->lib->mac[2], s->lib->mac[3], s->lib->mac[4], s->lib->mac[5]);
	if (s->ifindex)
		printf("  on device ifindex %u (kring)\n", s->ifindex);
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
		char l[32], r[32];

		/* Free slots, and the pool socket() takes from, are no sockets. */
		if (!sl_sock_type_live(so->type))
			continue;
		addr_str(l, sizeof(l), so->laddr, so->lport);
		addr_str(r, sizeof(r), so->raddr, so->rport);
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
			addr_str(l, sizeof(l), so->filter_laddr, so->lport);
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

int main(int argc, char **argv)
{
	/* Looking at a stack spawns no helper when we let go of it (run's
	 * programs still may: they keep the environment they were given). */
	if (argc >= 2 && strcmp(argv[1], "run"))
		setenv("SLUICE_NO_HELPER", "1", 1);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "dump")) {
		if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			usage(stdout);
			return 0;
		}
		if (argc == 4 && strcmp(argv[2], "--all")) {
			usage(stderr);
			return 2;
		}
		return cmd_dump(argv[argc - 1], argc == 4);
	}
	if (argc >= 2 && !strcmp(argv[1], "run"))
		return cmd_run(argc, argv);
	if ((argc == 2 || argc == 3) && !strcmp(argv[1], "fds"))
		return cmd_fds(argc == 3 ? argv[2] : NULL);
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "info"))
		return cmd_info();
	if (!strcmp(argv[1], "stacks"))
		return cmd_stacks();
	if (!strcmp(argv[1], "version")) {
		printf("sluice %s (ABI %u)\n", SLUICE_LIB_VERSION, SLUICE_ABI_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
