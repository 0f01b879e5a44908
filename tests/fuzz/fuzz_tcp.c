// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_tcp: the TCP state machine driven by a program.  The input's first
 * byte picks one of four connections the fixture set up (fuzz_stack.h),
 * each with a listener on port 80 beside it:
 *
 *   0  passive (peer 5000 -> 80), no options, peer window 65535
 *   1  passive, MSS 1460, window scale 7, SACK, timestamps
 *   2  active (us -> peer 5000), SACK and timestamps, peer scale 2
 *   3  active, peer MSS 536, no options, peer window 4096
 *   4  active, SYN-SENT: our SYN (MSS, SACK, TS, WS) is unanswered
 *   5  passive, SYN-RECEIVED: the peer's SYN (all options) was answered;
 *      the connection is the user's once ACCEPT takes it
 *   6, 7  as 2 and 3
 *
 * The rest is a sequence of operations, one opcode byte each followed by
 * its arguments (missing bytes read as zero):
 *
 *   0 SEG    a segment from the peer: flags, mode, seq delta, ack delta,
 *            window, options, payload length; mode picks how seq and ack
 *            relate to the connection (in window, far, absolute), a bad
 *            checksum, the listener instead of the connection, structured
 *            options (timestamps, SACK blocks near snd_una, MSS, scale)
 *            or raw option bytes
 *   1 TICK   the clock moves (milliseconds), timers run
 *   2 SEND   send(len)           3 RECV   recv(len), maybe MSG_PEEK
 *   4 SHUT   shutdown(how)       5 CLOSE  close the connection
 *   6 OPT    setsockopt(which, value)
 *   7 ACK    the peer acknowledges all we sent, maybe with data in order
 *   8 ACCEPT accept from the listener: the child becomes the connection
 *            if there is none (closed, or variant 5), else is closed
 *   9 ICMP   an ICMP unreachable quoting the connection's segment
 *
 * After every operation: fz_check() (sequence space, queues within their
 * limits, every buffer in exactly one place).  At the end everything is
 * closed and the timers run out: no socket, buffer or embryo may be left.
 */
#include "fuzz_stack.h"

#define MAX_OPS		256
#define LPORT		80
#define PPORT		5000

static struct fz_snap snap[6];
static uint32_t app_idx[6];	/* the user's socket in each, or NONE */
static uint8_t pattern[65536], sink[65536];

struct prog {
	const uint8_t *d;
	size_t n, pos;
};

static uint8_t u8(struct prog *p)
{
	return p->pos < p->n ? p->d[p->pos++] : 0;
}

static uint16_t u16(struct prog *p)
{
	return (uint16_t)(u8(p) << 8 | u8(p));
}

static uint32_t u32(struct prog *p)
{
	return (uint32_t)u16(p) << 16 | u16(p);
}

/* Per input: the user's socket (NULL once closed), the tuple, the peer. */
static struct {
	struct sl_sock *app, *listener;
	uint16_t lport, rport;
	uint32_t peer_ts;
} C;

static struct sl_sock *must(struct sl_sock *so, const char *what)
{
	if (!so) {
		fprintf(stderr, "fuzz_tcp setup: %s\n", what);
		exit(1);
	}
	return so;
}

static uint32_t build_variant(int v)
{
	struct fz_tcp_opts o = { 0 }, a = { 0 };
	struct sl_sock *l, *so;
	uint16_t win = 65535;

	l = must(sl_sock_alloc(F.s, SL_SOCK_TCP), "socket");
	if (sl_sock_bind(F.s, l, 0, htons(LPORT)) || sl_tcp_listen(F.s, l, 4))
		must(NULL, "listen");
	if (v == 1 || v == 5)
		o = (struct fz_tcp_opts){ .mss = 1460, .ws_on = 1, .ws = 7, .sack_ok = 1, .ts = 1,
					  .tsval = 7000 };
	if (v == 2)
		o = (struct fz_tcp_opts){ .mss = 1460, .ws_on = 1, .ws = 2, .sack_ok = 1, .ts = 1,
					  .tsval = 7000 };
	if (v == 3) {
		o = (struct fz_tcp_opts){ .mss = 536 };
		win = 4096;
	}
	if (v == 5) {
		/* Half open: the peer's SYN answered, its ACK not yet come. */
		fz_seg(PPORT, LPORT, TH_SYN_, 100000, 0, win, &o, NULL, 0, 0);
		so = must(fz_find(LPORT, PPORT), "no child");
		if (so->state != SL_TCP_SYN_RECEIVED)
			must(NULL, "not SYN-RECEIVED");
		fz_timers();
		fz_check();
		return SLUICE_IDX_NONE;
	}
	if (v < 2) {
		fz_seg(PPORT, LPORT, TH_SYN_, 100000, 0, win, &o, NULL, 0, 0);
		so = must(fz_find(LPORT, PPORT), "no child");
		a = (struct fz_tcp_opts){ .ts = o.ts, .tsval = 7001, .tsecr = F.last_tsval };
		fz_seg(PPORT, LPORT, TH_ACK_, 100001, so->tcp.iss + 1, win, &a, NULL, 0, 0);
		if (sl_tcp_accept(F.s, l, &so))
			must(NULL, "accept");
	} else {
		so = must(sl_sock_alloc(F.s, SL_SOCK_TCP), "socket");
		if (sl_sock_bind(F.s, so, 0, 0) ||
		    sl_tcp_connect(F.s, so, F.peer, htons(PPORT), F.now_us) != -EINPROGRESS)
			must(NULL, "connect");
		o.tsecr = F.last_tsval;
		if (v < 4)
			fz_seg(PPORT, ntohs(so->lport), TH_SYN_ | TH_ACK_, 100000,
			       so->tcp.iss + 1, win, &o, NULL, 0, 0);
	}
	if (so->state != (v == 4 ? SL_TCP_SYN_SENT : SL_TCP_ESTABLISHED))
		must(NULL, "not in the state wanted");
	fz_timers();
	fz_check();
	return so->idx;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct fz_snap empty;

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 8));
	fz_init("tcp", 0);
	fz_snap_take(&empty);
	for (int v = 0; v < 6; v++) {
		fz_snap_restore(&empty);
		app_idx[v] = build_variant(v);
		fz_snap_take(&snap[v]);
	}
	free(empty.region);
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static void op_seg(struct prog *p)
{
	uint8_t flags = u8(p), mode = u8(p);
	int16_t sd = (int16_t)u16(p), ad = (int16_t)u16(p);
	uint16_t win = u16(p), sport = PPORT, dport = C.lport;
	uint8_t raw[40];
	struct fz_tcp_opts o = { 0 };
	const struct sl_sock *so;
	uint32_t seq, ack, una = 0, nxt = 0, max = 0, rnxt = 0;
	unsigned int plen;

	if (mode & 0x20) {
		/* At the listener, from one of eight ports. */
		sport = (uint16_t)(6000 + (sd & 7));
		dport = LPORT;
	}
	so = fz_find(dport, sport);
	if (so && so->state >= SL_TCP_SYN_SENT) {
		una = so->tcp.snd_una;
		nxt = so->tcp.snd_nxt;
		max = so->tcp.snd_max;
		rnxt = so->tcp.rcv_nxt;
	}
	switch (mode & 3) {
	case 0:
		seq = rnxt + (uint32_t)(int32_t)sd;
		break;
	case 1:
		seq = rnxt + (uint32_t)((int32_t)sd * 1024);
		break;
	case 2:
		seq = u32(p);
		break;
	default:
		seq = rnxt - 1 - (uint32_t)(sd & 0xff);
		break;
	}
	switch ((mode >> 2) & 3) {
	case 0:
		ack = una + (uint32_t)(int32_t)ad;
		break;
	case 1:
		ack = nxt + (uint32_t)(int32_t)ad;
		break;
	case 2:
		ack = max + (uint32_t)(int32_t)ad;
		break;
	default:
		ack = u32(p);
		break;
	}
	if (mode & 0x80) {
		o.raw_len = u8(p) % 41;
		for (unsigned int i = 0; i < o.raw_len; i++)
			raw[i] = u8(p);
		o.raw = raw;
	} else if (mode & 0x40) {
		uint8_t what = u8(p);
		unsigned int nsack = (what >> 1) & 3, ol = 0;

		/* Structured: TS (bit 0), SACK blocks (bits 1-2), MSS, WS. */
		if (what & 1) {
			raw[ol++] = 1; raw[ol++] = 1; raw[ol++] = 8; raw[ol++] = 10;
			put32(raw + ol, C.peer_ts + (what & 0x80 ? 0x80000000u : 0));
			put32(raw + ol + 4, F.last_tsval);
			ol += 8;
		}
		if (what & 8) {
			raw[ol++] = 2; raw[ol++] = 4; raw[ol++] = u8(p); raw[ol++] = u8(p);
		}
		if (what & 0x10) {
			raw[ol++] = 1; raw[ol++] = 3; raw[ol++] = 3; raw[ol++] = u8(p);
		}
		if (nsack && ol + 4 + 8 * nsack <= 40) {
			raw[ol++] = 1; raw[ol++] = 1; raw[ol++] = 5;
			raw[ol++] = (uint8_t)(2 + 8 * nsack);
			for (unsigned int k = 0; k < nsack; k++) {
				uint32_t left = una + u16(p);

				put32(raw + ol, left);
				put32(raw + ol + 4, left + u16(p));
				ol += 8;
			}
		}
		o.raw = raw;
		o.raw_len = ol;
	}
	plen = u16(p) % 1601;
	C.peer_ts += 1 + (plen & 3);
	fz_seg(sport, dport, flags, seq, ack, win, o.raw ? &o : NULL, pattern + (seq & 0xff),
	       plen, mode & 0x10);
}

/* The peer acknowledges everything, maybe sends len bytes in order. */
static void op_ack(struct prog *p)
{
	uint16_t win = u16(p);
	unsigned int plen = u8(p) * 8u;
	const struct sl_sock *so = fz_find(C.lport, PPORT);
	struct fz_tcp_opts o = { .ts = 1, .tsval = ++C.peer_ts, .tsecr = F.last_tsval };

	if (!so || so->state < SL_TCP_SYN_RECEIVED)
		return;
	fz_seg(PPORT, C.lport, TH_ACK_ | (plen ? TH_PSH_ : 0), so->tcp.rcv_nxt, so->tcp.snd_max,
	       win, (so->tcp.tflags & SL_TF_TS) ? &o : NULL, pattern, plen, 0);
}

static void op_opt(struct prog *p)
{
	uint8_t which = u8(p) % 8;
	int32_t v = (int32_t)u32(p);
	static const int names[][2] = {
		{ IPPROTO_TCP, 1 /* TCP_NODELAY */ }, { IPPROTO_TCP, 2 /* TCP_MAXSEG */ },
		{ IPPROTO_TCP, 4 /* TCP_KEEPIDLE */ }, { IPPROTO_TCP, 5 /* TCP_KEEPINTVL */ },
		{ IPPROTO_TCP, 6 /* TCP_KEEPCNT */ }, { 1 /* SOL_SOCKET */, 9 /* SO_KEEPALIVE */ },
	};

	if (!C.app)
		return;
	if (which < 6) {
		sl_tcp_setsockopt(F.s, C.app, names[which][0], names[which][1], &v, sizeof(v));
		return;
	}
	/* SO_RCVBUF, SO_SNDBUF: as sluice_setsockopt() does it. */
	if (which == 6) {
		C.app->rcvbuf = v < 1152 ? 2304 : (uint32_t)v * 2;
	} else {
		if (C.app->sndbuf > F.sndbuf_hw)
			F.sndbuf_hw = C.app->sndbuf;
		C.app->sndbuf = v < 2304 ? 4608 : (uint32_t)v * 2;
	}
}

static void op_icmp(struct prog *p)
{
	uint8_t code = u8(p) % 6;
	uint16_t mtu = u16(p);
	int16_t sd = (int16_t)u16(p);
	const struct sl_sock *so = fz_find(C.lport, PPORT);
	uint32_t idx = sl_buf_alloc(F.s);
	uint8_t *b;
	struct sl_ip *ip, *q;

	if (idx == SLUICE_IDX_NONE)
		return;
	b = sl_buf_data(F.s, idx);
	memset(b, 0, 20 + 8 + 28);
	ip = (struct sl_ip *)b;
	ip->ver_ihl = 0x45;
	ip->tot_len = htons(20 + 8 + 28);
	ip->ttl = 64;
	ip->proto = IPPROTO_ICMP_;
	ip->saddr = F.peer;
	ip->daddr = F.us;
	ip->csum = sl_ip_csum(ip);
	b[20] = ICMP_UNREACH_;
	b[21] = code;
	b[26] = (uint8_t)(mtu >> 8);
	b[27] = (uint8_t)mtu;
	q = (struct sl_ip *)(b + 28);
	q->ver_ihl = 0x45;
	q->tot_len = htons(40);
	q->ttl = 64;
	q->proto = IPPROTO_TCP_;
	q->saddr = F.us;
	q->daddr = F.peer;
	b[48] = (uint8_t)(C.lport >> 8);
	b[49] = (uint8_t)C.lport;
	b[50] = PPORT >> 8;
	b[51] = PPORT & 0xff;
	put32(b + 52, (so ? so->tcp.snd_una : 0) + (uint32_t)(int32_t)sd);
	{
		uint16_t c = sl_csum_fold(sl_csum_add(0, b + 20, 8 + 28));

		memcpy(b + 22, &c, 2);
	}
	sl_buf(F.s, idx)->len = 20 + 8 + 28;
	sl_ip_input(F.s, idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prog p = { .d = data, .n = size };
	int v = u8(&p) & 7;
	bool trace = getenv("FUZZ_TRACE");

	if (v >= 6)
		v -= 4;
	fz_snap_restore(&snap[v]);
	memset(&C, 0, sizeof(C));
	C.rport = PPORT;
	C.listener = sl_sock_lookup(F.s, SL_SOCK_TCP, F.us, htons(LPORT), 0, 0);
	if (!C.listener)
		fz_fail("variant %d: no listener", v);
	C.lport = LPORT;
	if (app_idx[v] != SLUICE_IDX_NONE) {
		C.app = sl_sock(F.s, app_idx[v]);
		C.lport = ntohs(C.app->lport);
	}
	C.peer_ts = 7002;

	for (int n = 0; n < MAX_OPS && p.pos < p.n; n++) {
		uint8_t op = u8(&p) % 10;
		ssize_t r;
		size_t len;
		struct sl_sock *child;

		switch (op) {
		case 0:
			op_seg(&p);
			break;
		case 1:
			fz_advance_ms(u16(&p));
			break;
		case 2:
			len = u16(&p);
			if (C.app) {
				r = sl_tcp_send(F.s, C.app, pattern, len, 0, F.now_us);
				if (r > (ssize_t)len)
					fz_fail("send(%zu) returned %zd", len, r);
				if (r > 0 && C.app->tcp.sndq_bytes > C.app->sndbuf)
					fz_fail("send() queued %u bytes, sndbuf %u",
						C.app->tcp.sndq_bytes, C.app->sndbuf);
			}
			break;
		case 3: {
			uint8_t fl = u8(&p);

			len = u16(&p);
			if (C.app) {
				r = sl_tcp_recv(F.s, C.app, sink, len, fl & 1 ? MSG_PEEK : 0,
						F.now_us);
				if (r > (ssize_t)len)
					fz_fail("recv(%zu) returned %zd", len, r);
			}
			break;
		}
		case 4:
			if (C.app)
				sl_tcp_shutdown(F.s, C.app, u8(&p) % 3, F.now_us);
			break;
		case 5:
			if (C.app)
				sl_tcp_close(F.s, C.app, F.now_us);
			C.app = NULL;
			break;
		case 6:
			op_opt(&p);
			break;
		case 7:
			op_ack(&p);
			break;
		case 8:
			if (sl_tcp_accept(F.s, C.listener, &child))
				break;
			if (!C.app && ntohs(child->rport) == PPORT)
				C.app = child;
			else
				sl_tcp_close(F.s, child, F.now_us);
			break;
		default:
			op_icmp(&p);
			break;
		}
		if (trace && C.app)
			fprintf(stderr, "op %u: state %u una %u nxt %u max %u end %u mss %u "
				"user_mss %u peer_mss %u sndq %u flags %#x\n", op, C.app->state,
				C.app->tcp.snd_una, C.app->tcp.snd_nxt, C.app->tcp.snd_max,
				C.app->tcp.snd_end, C.app->tcp.mss, C.app->tcp.user_mss,
				C.app->tcp.peer_mss, C.app->tcp.sndq_bytes, C.app->tcp.tflags);
		else if (trace)
			fprintf(stderr, "op %u: closed\n", op);
		fz_check();
	}
	fz_finish();
	return 0;
}
