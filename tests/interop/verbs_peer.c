// SPDX-License-Identifier: BSD-2-Clause
/*
 * A Sluice stack on a verbs link (plain UD, Soft-RoCE in the test VM), for
 * tests/vm/verbs.sh.  One process, one stack, one rxe device:
 *
 *   verbs_peer serve  STACK DEV IP/PREFIX DIR SECONDS
 *        echoes TCP and UDP on port 7 until SECONDS pass or a UDP "quit"
 *   verbs_peer client STACK DEV IP/PREFIX DIR PEER-IP TEST...
 *        TEST is udp:COUNT or tcp:CONNS:BYTES[:SECONDS] (CONNS connections
 *        at once, each sending BYTES of its own seeded pattern and checking
 *        the echo byte for byte; with SECONDS, sends paced to take that
 *        long, and "# flowing" printed at the first echoed bytes, so a
 *        test can act while data flows), or quit; prints "PASS text" /
 *        "FAIL text" lines
 *
 * With SLUICE_PEER_QP_ERROR=BYTES a client moves its own QP to the error
 * state (ibv_modify_qp, the real rdma-core) once BYTES have been echoed
 * on its first connection, as a device fault would, once: the link must
 * find it and bring the QP back while the connection carries data.
 *
 * Each writes its 20-byte IPoIB address (hex) to DIR/IP once its link is
 * up.  With SLUICE_VERBS_STATIC=1 there is no ARP: every file in DIR is
 * added as a static neighbour (and DIR is looked at again every 200 ms, so
 * a peer that starts later is found).  Every loop is bounded in time.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "link/verbs_int.h"

#define MAXC 64

static struct sluice_stack *st;
static char stack_name[64];
static const char *dir;
static bool static_neigh;
static double last_scan;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, long err)
{
	fprintf(stderr, "verbs_peer: %s: %s\n", what, strerror((int)-err));
	printf("FAIL %s: %s\n", what, strerror((int)-err));
	fflush(stdout);
	if (st) {
		sluice_stack_close(st);
		sluice_stack_destroy(stack_name);
	}
	exit(1);
}

static int hex_in(const char *s, uint8_t *out, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -EINVAL;
		out[i] = (uint8_t)b;
	}
	return 0;
}

/* Static mode: every DIR/IP file is a neighbour. */
static void scan_neighbours(void)
{
	struct dirent *e;
	DIR *d;

	if (!static_neigh || now_s() - last_scan < 0.2)
		return;
	last_scan = now_s();
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[512], line[128];
		uint8_t hw[SLUICE_IPOIB_HWLEN];
		uint32_t ip;
		FILE *f;

		if (inet_pton(AF_INET, e->d_name, &ip) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && strlen(line) >= 40 &&
		    !hex_in(line, hw, SLUICE_IPOIB_HWLEN))
			sluice_verbs_neigh_add(st, ip, hw);
		fclose(f);
	}
	closedir(d);
}

static void setup(const char *name, const char *dev, const char *cidr)
{
	struct sluice_stack_config cfg = { .max_sockets = 256, .n_bufs = 4096 };
	struct sluice_verbs_config vc = { .device = dev };
	struct sluice_verbs_info info;
	char ip[32], *slash, path[512], tmp[520];
	int prefix = 24, ret;
	FILE *f;

	snprintf(ip, sizeof(ip), "%s", cidr);
	slash = strchr(ip, '/');
	if (slash) {
		*slash = 0;
		prefix = atoi(slash + 1);
	}
	if (inet_pton(AF_INET, ip, &cfg.ip_addr) != 1)
		die("address", -EINVAL);
	cfg.ip_mask = htonl(prefix ? ~0u << (32 - prefix) : 0);
	snprintf(stack_name, sizeof(stack_name), "%s", name);
	sluice_stack_destroy(name);
	ret = sluice_stack_create(name, &cfg, &st);
	if (ret)
		die("create stack", ret);
	static_neigh = getenv("SLUICE_VERBS_STATIC") && atoi(getenv("SLUICE_VERBS_STATIC"));
	if (static_neigh)
		vc.flags |= SLUICE_VERBS_NO_MCAST;
	ret = sluice_link_verbs(st, &vc);
	if (ret)
		die("verbs link", ret);
	ret = sluice_verbs_info(st, &info);
	if (ret)
		die("verbs info", ret);
	fprintf(stderr, "# %s on %s: qpn 0x%06x ib_mtu %u ud_mtu %u mcast %d (%s)\n", name, dev,
		info.qpn, info.ib_mtu, info.ud_mtu, info.mcast,
		info.mcast_err ? strerror(-info.mcast_err) : "no error");
	snprintf(path, sizeof(path), "%s/%s", dir, ip);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("hwaddr file", -errno);
	for (int i = 0; i < SLUICE_IPOIB_HWLEN; i++)
		fprintf(f, "%02x", info.hwaddr[i]);
	fprintf(f, "\n");
	fclose(f);
	rename(tmp, path);
	scan_neighbours();
}

static struct sockaddr_in addr(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

/*
 * Close the stack (and its link), then, with SLUICE_VERBS_LINGER=SECONDS,
 * stay alive that long after printing "# closed", so the test can check
 * that closing (not exiting) released the verbs resources.
 */
static void finish(int code)
{
	const char *linger = getenv("SLUICE_VERBS_LINGER");
	struct sluice_verbs_info info;
	uint64_t v;

	static const char *const names[] = {
		"tcp_retransmit", "arp_tx", "arp_rx", "arp_rx_bad", "arp_hold_dropped",
		"link_rx", "link_tx", "link_tx_err", "eth_rx_bad", "ip_rx", "nobuf",
		"verbs_async_event", "verbs_port_down", "verbs_qp_reset", "verbs_path_flush",
		"verbs_tx_port_down",
	};

	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (sluice_stack_counter(st, names[i], &v) == 0)
			printf("# counter %s %llu\n", names[i], (unsigned long long)v);
	/* A failed run: the whole stack (counters, every socket) for the log. */
	if (code) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "sluice dump %s | sed 's/^/# A: /'", stack_name);
		if (system(cmd) < 0)
			printf("# no sluice dump\n");
	}
	if (sluice_verbs_info(st, &info) == 0)
		printf("# verbs: tx_post_err %llu tx_wc_err %llu tx_timeout %llu rx_wc_err %llu "
		       "last_wc_status %d tx_last_err %d (%u bytes) rx_post_err %llu rx_posted %u\n",
		       (unsigned long long)info.tx_post_err, (unsigned long long)info.tx_wc_err,
		       (unsigned long long)info.tx_timeout, (unsigned long long)info.rx_wc_err,
		       info.last_wc_status, info.tx_last_err, info.tx_last_err_len,
		       (unsigned long long)info.rx_post_err, info.rx_posted);
	if (sluice_verbs_info(st, &info) == 0)
		printf("# verbs: %llu send WRs in %llu post_send calls, %llu post_recv calls\n",
		       (unsigned long long)info.tx_wrs, (unsigned long long)info.tx_posts,
		       (unsigned long long)info.rx_posts);
	sluice_stack_close(st);
	sluice_stack_destroy(stack_name);
	if (linger) {
		printf("# closed\n");
		fflush(stdout);
		sleep((unsigned int)atoi(linger));
	}
	exit(code);
}

/* An echo connection: what was read and not yet written back. */
struct echo {
	int sd;
	long have, done;
	char buf[65536];
};

static int serve(double seconds)
{
	struct sockaddr_in any7 = addr("0.0.0.0", 7), from;
	struct sluice_pollfd p[2 + MAXC];
	static struct echo conn[MAXC];
	int nconn = 0, one = 1;
	int u = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	int t = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	double end = now_s() + seconds;
	static char buf[65536];
	bool quit = false;
	long n;

	sluice_setsockopt(st, t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sluice_bind(st, u, &any7) || sluice_bind(st, t, &any7) || sluice_listen(st, t, 128))
		die("bind/listen", -EADDRINUSE);
	/* Never blocks on one connection: each waits for its own readiness. */
	while (!quit && now_s() < end) {
		int np = 0, c;

		scan_neighbours();
		p[np++] = (struct sluice_pollfd){ .sd = u, .events = POLLIN };
		p[np++] = (struct sluice_pollfd){ .sd = t, .events = POLLIN };
		for (int i = 0; i < nconn; i++)
			p[np++] = (struct sluice_pollfd){
				.sd = conn[i].sd,
				.events = conn[i].done < conn[i].have ? POLLOUT : POLLIN };
		if (sluice_poll(st, p, np, 100) <= 0)
			continue;
		while ((n = sluice_recvfrom(st, u, buf, sizeof(buf), 0, &from)) >= 0) {
			if (n == 4 && !memcmp(buf, "quit", 4))
				quit = true;
			sluice_sendto(st, u, buf, n, 0, &from);
		}
		while (nconn < MAXC && (c = sluice_accept(st, t, NULL)) >= 0) {
			conn[nconn].sd = c;
			conn[nconn].have = conn[nconn].done = 0;
			nconn++;
		}
		for (int i = 0; i < nconn; i++) {
			struct echo *e = &conn[i];
			bool closed = false;

			for (int rounds = 0; rounds < 64 && !closed; rounds++) {
				if (e->done < e->have) {
					n = sluice_send(st, e->sd, e->buf + e->done, e->have - e->done,
							MSG_DONTWAIT);
					if (n == -EAGAIN)
						break;
					if (n < 0)
						closed = true;
					else
						e->done += n;
					continue;
				}
				n = sluice_recv(st, e->sd, e->buf, sizeof(e->buf), MSG_DONTWAIT);
				if (n == -EAGAIN)
					break;
				if (n <= 0) {
					closed = true;
				} else {
					e->have = n;
					e->done = 0;
				}
			}
			if (closed) {
				sluice_close(st, e->sd);
				*e = conn[--nconn];
				i--;
			}
		}
	}
	/* Let closing connections finish their FIN exchange. */
	for (double e2 = now_s() + 1; now_s() < e2;)
		sluice_stack_poll(st);
	finish(0);
	return 0;
}

static uint8_t pattern(int c, long i)
{
	return (uint8_t)(i * 131 + c * 7 + (i >> 9) + (c << 4));
}

static long qp_error_at;		/* SLUICE_PEER_QP_ERROR */

/* The link's QP into the error state, behind the link's back. */
static void qp_error_now(void)
{
	struct sl_stack *s = (struct sl_stack *)st;
	struct verbs_link *v = s->link ? (struct verbs_link *)s->link : NULL;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int ret;

	qp_error_at = 0;
	if (!v || s->link->ops != &sl_verbs_ops || !v->qp) {
		printf("# no verbs QP to move to the error state\n");
		return;
	}
	ret = ibv_modify_qp(v->qp, &a, IBV_QP_STATE);
	printf("# QP 0x%06x moved to the error state: %s\n", v->qp->qp_num,
	       ret ? strerror(ret) : "done");
}

/* How much of bytes may have been sent pace_s-paced, since start. */
static long paced(long bytes, double start, double pace_s)
{
	double f = pace_s > 0 ? (now_s() - start) / pace_s : 1;

	return f >= 1 ? bytes : 16384 + (long)(bytes * f);
}

/* CONNS connections at once, each echoing BYTES; byte-exact check.  With
 * pace_s, each sends no faster than BYTES over pace_s seconds. */
static bool tcp_test(const char *peer, int conns, long bytes, double pace_s)
{
	struct sockaddr_in a = addr(peer, 7);
	struct sluice_pollfd p[MAXC];
	int sd[MAXC];
	long sent[MAXC] = { 0 }, got[MAXC] = { 0 };
	bool bad[MAXC] = { false }, shut[MAXC] = { false };
	static uint8_t buf[65536];
	double start = now_s(), end = start + 90 + pace_s, last_rx = 0, gap = 0;
	bool flowing = false;
	int done = 0, ret;

	if (conns > MAXC)
		conns = MAXC;
	for (int c = 0; c < conns; c++) {
		sd[c] = sluice_socket(st, SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
		ret = sluice_connect(st, sd[c], &a);
		if (ret && ret != -EINPROGRESS) {
			printf("# connect %d: %s\n", c, strerror(-ret));
			return false;
		}
	}
	while (done < conns && now_s() < end) {
		scan_neighbours();
		for (int c = 0; c < conns; c++) {
			p[c].sd = sd[c];
			p[c].events = (got[c] < bytes && !bad[c] ? POLLIN : 0) |
				      (sent[c] < paced(bytes, start, pace_s) ? POLLOUT : 0);
		}
		if (sluice_poll(st, p, conns, 200) <= 0)
			continue;
		done = 0;
		for (int c = 0; c < conns; c++) {
			long n, allowed = paced(bytes, start, pace_s);

			while (sent[c] < bytes && sent[c] < allowed) {
				long k = bytes - sent[c] > 16384 ? 16384 : bytes - sent[c];

				for (long i = 0; i < k; i++)
					buf[i] = pattern(c, sent[c] + i);
				n = sluice_send(st, sd[c], buf, k, MSG_DONTWAIT);
				if (n <= 0)
					break;
				sent[c] += n;
			}
			if (sent[c] == bytes && !shut[c]) {
				sluice_shutdown(st, sd[c], SHUT_WR);
				shut[c] = true;
			}
			while (got[c] < bytes && !bad[c]) {
				n = sluice_recv(st, sd[c], buf, sizeof(buf), MSG_DONTWAIT);
				if (n <= 0) {
					if (n == 0 || (n != -EAGAIN && n != -ENOTCONN)) {
						printf("# conn %d: recv %ld after %ld bytes\n", c, n, got[c]);
						bad[c] = true;
					}
					break;
				}
				for (long i = 0; i < n; i++)
					if (buf[i] != pattern(c, got[c] + i)) {
						printf("# conn %d: byte %ld differs\n", c, got[c] + i);
						bad[c] = true;
						break;
					}
				got[c] += n;
				/* The longest wait between echoes (a flap's stall). */
				if (last_rx > 0 && now_s() - last_rx > gap)
					gap = now_s() - last_rx;
				last_rx = now_s();
				if (!flowing) {
					printf("# flowing\n");
					flowing = true;
				}
			}
			if (c == 0 && qp_error_at > 0 && got[c] >= qp_error_at)
				qp_error_now();
			if (got[c] >= bytes || bad[c])
				done++;
		}
	}
	ret = 0;
	for (int c = 0; c < conns; c++) {
		if (bad[c] || got[c] != bytes) {
			struct tcp_info ti;
			unsigned int tl = sizeof(ti);

			printf("# conn %d: sent %ld, echoed %ld of %ld%s\n", c, sent[c], got[c], bytes,
			       bad[c] ? " (bad)" : "");
			memset(&ti, 0, sizeof(ti));
			if (sluice_getsockopt(st, sd[c], IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0)
				printf("#   state %u rto %u us backoff %u cwnd %u ssthresh %u unacked %u "
				       "rtt %u us\n", ti.tcpi_state, ti.tcpi_rto, ti.tcpi_backoff,
				       ti.tcpi_snd_cwnd, ti.tcpi_snd_ssthresh, ti.tcpi_unacked,
				       ti.tcpi_rtt);
			ret = -1;
		}
		sluice_close(st, sd[c]);
	}
	{
		double secs = now_s() - start;

		/* Payload echoed back (both directions carry it once). */
		printf("# tcp %d x %ld bytes each way: %.2f s, %.2f MB/s echoed\n", conns, bytes,
		       secs, secs > 0 ? (double)conns * bytes / secs / 1e6 : 0.0);
		printf("# longest wait between echoed bytes: %.2f s\n", gap);
	}
	return ret == 0;
}

/* COUNT datagrams of growing sizes, each echoed intact (retried on loss). */
static bool udp_test(const char *peer, int count, unsigned int max_payload)
{
	struct sockaddr_in a = addr(peer, 7), from;
	int u = sluice_socket(st, SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	static uint8_t out[4096], in[4096];
	int ok = 0, tries = 0, lost_in_row = 0;

	for (int k = 0; k < count && lost_in_row < 3; k++) {
		unsigned int len = 1 + (unsigned int)((k * 397L) % max_payload);
		bool got = false;

		if (k == count - 1)
			len = max_payload;
		for (unsigned int i = 0; i < len; i++)
			out[i] = pattern(k, i);
		for (int attempt = 0; attempt < 5 && !got; attempt++) {
			struct sluice_pollfd p = { .sd = u, .events = POLLIN };
			double end = now_s() + 1.0;

			tries++;
			sluice_sendto(st, u, out, len, 0, &a);
			while (!got && now_s() < end) {
				long n;

				scan_neighbours();
				sluice_poll(st, &p, 1, 100);
				n = sluice_recvfrom(st, u, in, sizeof(in), 0, &from);
				if (n == (long)len && !memcmp(in, out, len) &&
				    from.sin_addr.s_addr == a.sin_addr.s_addr)
					got = true;
			}
		}
		ok += got;
		lost_in_row = got ? 0 : lost_in_row + 1;
	}
	sluice_close(st, u);
	printf("# udp: %d of %d echoed, %d sends\n", ok, count, tries);
	return ok == count;
}

static int attach(const char *name, const char *dev, unsigned int seconds)
{
	struct sluice_verbs_config vc = { .device = dev, .flags = SLUICE_VERBS_NO_MCAST };
	int ret = sluice_stack_attach(name, &st);

	if (ret)
		die("attach", ret);
	ret = sluice_link_verbs(st, &vc);
	if (ret)
		die("verbs link", ret);
	printf("# attached\n");
	sleep(seconds);
	sluice_stack_close(st);
	printf("# detached\n");
	sleep(seconds);
	return 0;
}

int main(int argc, char **argv)
{
	bool all = true;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && !strcmp(argv[1], "attach"))
		return attach(argv[2], argv[3], (unsigned int)atoi(argv[4]));
	if (argc >= 7 && !strcmp(argv[1], "serve")) {
		dir = argv[5];
		setup(argv[2], argv[3], argv[4]);
		return serve(atof(argv[6]));
	}
	if (argc < 8 || strcmp(argv[1], "client")) {
		fprintf(stderr, "usage: see the head of verbs_peer.c\n");
		return 2;
	}
	dir = argv[5];
	setup(argv[2], argv[3], argv[4]);
	if (getenv("SLUICE_PEER_QP_ERROR"))
		qp_error_at = atol(getenv("SLUICE_PEER_QP_ERROR"));
	for (int i = 7; i < argc; i++) {
		struct sluice_verbs_info info;
		double pace_s = 0;
		int conns;
		long bytes;
		bool ok;

		sluice_verbs_info(st, &info);
		if (!strncmp(argv[i], "udp:", 4)) {
			int count = atoi(argv[i] + 4);

			ok = udp_test(argv[6], count, info.ud_mtu - 28);
			printf("%s udp: %d datagrams up to %u bytes echoed intact\n",
			       ok ? "PASS" : "FAIL", count, info.ud_mtu - 28);
		} else if (sscanf(argv[i], "tcp:%d:%ld:%lf", &conns, &bytes, &pace_s) >= 2) {
			ok = tcp_test(argv[6], conns, bytes, pace_s);
			printf("%s tcp: %d connections at once, %ld bytes each echoed byte-exact\n",
			       ok ? "PASS" : "FAIL", conns, bytes);
		} else if (!strcmp(argv[i], "quit")) {
			struct sockaddr_in a = addr(argv[6], 7);
			int u = sluice_socket(st, SLUICE_SOCK_DGRAM);

			for (int k = 0; k < 3; k++) {
				sluice_sendto(st, u, "quit", 4, 0, &a);
				for (double e = now_s() + 0.1; now_s() < e;)
					sluice_stack_poll(st);
			}
			sluice_close(st, u);
			ok = true;
		} else {
			printf("FAIL unknown test %s\n", argv[i]);
			ok = false;
		}
		all = all && ok;
	}
	finish(all ? 0 : 1);
	return 0;
}
