// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_packet: frames from the wire into a stack that has sockets in many
 * states (fuzz_stack.h has the fixture).  Built once, the stack is saved;
 * every input starts from that copy, is cut into records, and each record
 * is one frame or a step of the clock:
 *
 *   record = kind (1 byte) | length (2 bytes, big endian) | frame bytes
 *   kind & 3:  0 Ethernet frame      -> sl_eth_input()
 *              1 IPv4 packet         -> sl_ip_input()
 *              2 IPoIB frame: 4-byte header (ethertype, reserved) + IPv4.
 *                libsluice has no IPoIB input yet, so the harness strips
 *                the header (ethertype 0x0800 only) and this fuzzes the
 *                IPv4 path behind it
 *              3 clock: length = milliseconds to advance; no bytes
 *   kind & 4:  recompute the IPv4 header checksum
 *   kind & 8:  recompute the TCP/UDP/ICMP checksum
 *   kind & 16: TCP seq, ack and SACK blocks are relative to the connection
 *              the segment belongs to (rcv_nxt; snd_una for ack and SACK);
 *              in an ICMP error quoting one of our TCP segments, its seq
 *              is relative to that connection's snd_una
 *
 * After each record: every invariant of fz_check(); after the input: the
 * counters only grew, one link_rx per Ethernet frame, at least one ip_rx
 * per IPv4 packet given and no more IPv4 drops than that; then everything is
 * closed, the timers run out, and no socket, buffer or held packet may be
 * left (fz_finish()).
 *
 * The sockets (peer 10.0.0.2, us 10.0.0.1, set up by build_states()):
 *   UDP   :53 bound
 *   TCP   :80 listening (backlog 8), :8080 on 10.0.0.1 (backlog 1)
 *   5000->80  ESTABLISHED, MSS/WS/SACK/TS, data queued both ways
 *   5001->80  ESTABLISHED, no options, data queued both ways
 *   5002->80  ESTABLISHED, accepted, idle
 *   5003->80  SYN-RECEIVED         5006->80  ESTABLISHED, on the accept queue
 *   5004->80  CLOSE-WAIT
 *   5005->80  LAST-ACK
 *   40000->6000  SYN-SENT        40001->6001  TIME-WAIT
 *   40002->6002  FIN-WAIT-2 (orphan)   40003->6003 FIN-WAIT-1 (window 0)
 */
#include "fuzz_stack.h"

#define MAX_RECORDS	64

static struct fz_snap snap;
static uint8_t pattern[4096];

static struct sl_sock *must(struct sl_sock *so, const char *what)
{
	if (!so) {
		fprintf(stderr, "fuzz_packet setup: %s\n", what);
		exit(1);
	}
	return so;
}

/* Peer opens sport -> lport with or without options; returns the child. */
static struct sl_sock *peer_open(uint16_t sport, uint16_t lport, uint32_t irs, bool opts,
				 bool complete)
{
	struct fz_tcp_opts o = { .mss = 1460, .ws_on = 1, .ws = 7, .sack_ok = 1, .ts = 1,
				 .tsval = 5000 };
	struct fz_tcp_opts ack_o = { .ts = 1, .tsval = 5001 };
	struct sl_sock *c;

	fz_seg(sport, lport, TH_SYN_, irs, 0, 65535, opts ? &o : NULL, NULL, 0, 0);
	c = must(fz_find(lport, sport), "no child after a SYN");
	if (!complete)
		return c;
	ack_o.tsecr = F.last_tsval;
	fz_seg(sport, lport, TH_ACK_, irs + 1, c->tcp.iss + 1, 1024, opts ? &ack_o : NULL, NULL,
	       0, 0);
	return c;
}

/* Our active open to the peer's port, answered with a SYN-ACK. */
static struct sl_sock *active_open(uint16_t rport, uint32_t irs, uint16_t win)
{
	struct sl_sock *so = must(sl_sock_alloc(F.s, SL_SOCK_TCP), "no socket");

	if (sl_sock_bind(F.s, so, 0, 0) ||
	    sl_tcp_connect(F.s, so, F.peer, htons(rport), F.now_us) != -EINPROGRESS)
		must(NULL, "connect");
	if (irs)
		fz_seg(rport, ntohs(so->lport), TH_SYN_ | TH_ACK_, irs, so->tcp.iss + 1, win, NULL,
		       NULL, 0, 0);
	return so;
}

static void build_states(void)
{
	struct sl_sock *udp, *l80, *l8080, *a, *b, *c, *e, *f, *tw, *fw2, *fw1;
	struct fz_tcp_opts ts;
	struct sl_neigh *n = &F.s->lib->neigh[0];

	/* The peer is resolved; every other address needs ARP. */
	n->ip = F.peer;
	n->state = SL_NEIGH_VALID;
	n->hold_idx = SLUICE_IDX_NONE;
	memcpy(n->mac, fz_mac_peer, 6);
	n->updated_ms = F.now_us / 1000;

	udp = must(sl_sock_alloc(F.s, SL_SOCK_UDP), "udp");
	if (sl_sock_bind(F.s, udp, 0, htons(53)))
		must(NULL, "bind 53");
	l80 = must(sl_sock_alloc(F.s, SL_SOCK_TCP), "tcp");
	if (sl_sock_bind(F.s, l80, 0, htons(80)) || sl_tcp_listen(F.s, l80, 8))
		must(NULL, "listen 80");
	l8080 = must(sl_sock_alloc(F.s, SL_SOCK_TCP), "tcp");
	if (sl_sock_bind(F.s, l8080, F.us, htons(8080)) || sl_tcp_listen(F.s, l8080, 1))
		must(NULL, "listen 8080");

	/* 5000: options; data both ways. */
	peer_open(5000, 80, 100000, true, true);
	if (sl_tcp_accept(F.s, l80, &a))
		must(NULL, "accept 5000");
	ts = (struct fz_tcp_opts){ .ts = 1, .tsval = 5002, .tsecr = F.last_tsval };
	fz_seg(5000, 80, TH_ACK_ | TH_PSH_, 100001, a->tcp.snd_nxt, 1024, &ts, pattern, 1000, 0);
	sl_tcp_send(F.s, a, pattern, 3000, 0, F.now_us);

	/* 5001: no options; data both ways. */
	peer_open(5001, 80, 200000, false, true);
	if (sl_tcp_accept(F.s, l80, &b))
		must(NULL, "accept 5001");
	fz_seg(5001, 80, TH_ACK_ | TH_PSH_, 200001, b->tcp.snd_nxt, 2048, NULL, pattern, 500, 0);
	sl_tcp_send(F.s, b, pattern, 2000, 0, F.now_us);

	/* 5002 waits to be accepted; 5003 is half open. */
	peer_open(5002, 80, 300000, false, true);
	peer_open(5003, 80, 400000, true, false);

	/* 5004: the peer closed (CLOSE-WAIT); 5005: and we closed too (LAST-ACK). */
	peer_open(5004, 80, 500000, false, true);
	if (sl_tcp_accept(F.s, l80, &c))
		must(NULL, "accept 5002");
	if (sl_tcp_accept(F.s, l80, &e))
		must(NULL, "accept 5004");
	fz_seg(5004, 80, TH_ACK_ | TH_FIN_, 500001, e->tcp.snd_nxt, 4096, NULL, NULL, 0, 0);
	peer_open(5005, 80, 600000, false, true);
	if (sl_tcp_accept(F.s, l80, &f))
		must(NULL, "accept 5005");
	fz_seg(5005, 80, TH_ACK_ | TH_FIN_, 600001, f->tcp.snd_nxt, 4096, NULL, NULL, 0, 0);
	sl_tcp_close(F.s, f, F.now_us);
	peer_open(5006, 80, 700000, false, true);
	(void)c;

	/* Active opens. */
	active_open(6000, 0, 0);
	tw = active_open(6001, 800000, 8192);
	sl_tcp_close(F.s, tw, F.now_us);
	fz_seg(6001, ntohs(tw->lport), TH_ACK_ | TH_FIN_, 800001, tw->tcp.snd_max, 8192, NULL,
	       NULL, 0, 0);
	fw2 = active_open(6002, 900000, 8192);
	sl_tcp_close(F.s, fw2, F.now_us);
	fz_seg(6002, ntohs(fw2->lport), TH_ACK_, 900001, fw2->tcp.snd_max, 8192, NULL, NULL, 0, 0);
	fw1 = active_open(6003, 1000000, 0);
	sl_tcp_send(F.s, fw1, pattern, 700, 0, F.now_us);
	sl_tcp_close(F.s, fw1, F.now_us);
	fz_timers();
	fz_check();
	if (getenv("FUZZ_VERBOSE"))
		for (uint32_t i = 0; i < F.s->r->max_sockets; i++) {
			struct sl_sock *so = sl_sock(F.s, i);

			if (so->type != SL_SOCK_FREE)
				fprintf(stderr, "socket %u: type %u state %u %u -> %u\n", i,
					so->type, so->state, ntohs(so->rport), ntohs(so->lport));
		}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)('a' + i % 26);
	fz_init("pkt", 1);
	build_states();
	fz_snap_take(&snap);
	return 0;
}

static void add32(uint8_t *p, uint32_t v)
{
	uint32_t x;

	memcpy(&x, p, 4);
	x = htonl(ntohl(x) + v);
	memcpy(p, &x, 4);
}

/* Make a segment's numbers relative to the connection it belongs to. */
static void relative_tcp(struct sl_tcph *th, unsigned int len, uint32_t laddr, uint32_t raddr)
{
	struct sl_sock *so = sl_sock_lookup(F.s, SL_SOCK_TCP, laddr, th->dport, raddr,
					    th->sport);
	unsigned int thl = (th->off >> 4) * 4;
	uint8_t *o = (uint8_t *)th;

	if (!so || so->state < SL_TCP_SYN_RECEIVED)
		return;
	th->seq = htonl(ntohl(th->seq) + so->tcp.rcv_nxt);
	th->ack = htonl(ntohl(th->ack) + so->tcp.snd_una);
	if (thl > len)
		thl = len;
	for (unsigned int i = 20; i < thl;) {
		if (o[i] == 0)
			break;
		if (o[i] == 1 || i + 1 >= thl || o[i + 1] < 2) {
			i++;
			continue;
		}
		if (o[i] == 5)
			for (unsigned int b = i + 2; b + 4 <= i + o[i + 1] && b + 4 <= thl; b += 4)
				add32(o + b, so->tcp.snd_una);
		i += o[i + 1];
	}
}

/* Checksums and relative sequence numbers, as the record's kind asks. */
static void fix_packet(uint8_t *p, unsigned int len, uint8_t kind)
{
	struct sl_ip *ip = (struct sl_ip *)p;
	unsigned int hl, tot;
	uint8_t *l4;

	if (len < sizeof(*ip) || (ip->ver_ihl >> 4) != 4)
		return;
	hl = (ip->ver_ihl & 0xf) * 4;
	tot = ntohs(ip->tot_len);
	if (hl < sizeof(*ip) || hl > len)
		return;
	if (tot > len || tot < hl)
		tot = len;
	l4 = p + hl;
	if ((kind & 16) && ip->proto == IPPROTO_TCP_ && tot - hl >= 20)
		relative_tcp((struct sl_tcph *)l4, tot - hl, ip->daddr, ip->saddr);
	if ((kind & 16) && ip->proto == IPPROTO_ICMP_ && tot - hl >= 8 + 20 + 8 &&
	    l4[0] == ICMP_UNREACH_) {
		struct sl_ip *q = (struct sl_ip *)(l4 + 8);
		unsigned int qhl = (q->ver_ihl & 0xf) * 4;

		if (q->proto == IPPROTO_TCP_ && qhl >= 20 && tot - hl >= 8 + qhl + 8) {
			struct sl_tcph *th = (struct sl_tcph *)((uint8_t *)q + qhl);
			struct sl_sock *so = sl_sock_lookup(F.s, SL_SOCK_TCP, q->saddr, th->sport,
							    q->daddr, th->dport);

			if (so)
				th->seq = htonl(ntohl(th->seq) + so->tcp.snd_una);
		}
	}
	if (kind & 4) {
		ip->csum = 0;
		ip->csum = sl_ip_csum(ip);
	}
	if (!(kind & 8))
		return;
	switch (ip->proto) {
	case IPPROTO_TCP_:
		if (tot - hl >= 20) {
			((struct sl_tcph *)l4)->csum = 0;
			((struct sl_tcph *)l4)->csum = fz_l4_csum(ip, l4, tot - hl);
		}
		break;
	case IPPROTO_UDP_:
		if (tot - hl >= 8) {
			l4[6] = l4[7] = 0;
			uint16_t c = fz_l4_csum(ip, l4, tot - hl);

			if (!c)
				c = 0xffff;
			memcpy(l4 + 6, &c, 2);
		}
		break;
	case IPPROTO_ICMP_:
		if (tot - hl >= 4) {
			l4[2] = l4[3] = 0;
			uint16_t c = sl_csum_fold(sl_csum_add(0, l4, tot - hl));

			memcpy(l4 + 2, &c, 2);
		}
		break;
	}
}

/* Returns 1 for a frame given to the Ethernet input, 2 for an IPv4
 * packet given to the IPv4 input, 0 for nothing given. */
static int one_frame(uint8_t kind, const uint8_t *b, unsigned int len)
{
	const unsigned int lead = SL_HEADROOM - ETH_HLEN_;
	unsigned int room = F.s->r->buf_size - lead, ipoff;
	uint32_t idx;
	uint8_t *p;

	if (len > room)
		len = room;
	idx = sl_buf_alloc(F.s);
	if (idx == SLUICE_IDX_NONE)
		return 0;
	p = sl_buf_base(F.s, idx) + lead;
	memcpy(p, b, len);
	sl_buf(F.s, idx)->off = (uint16_t)lead;
	sl_buf(F.s, idx)->len = (uint16_t)len;
	switch (kind & 3) {
	case 0:
		ipoff = ETH_HLEN_;
		if (len >= ETH_HLEN_ && p[12] == 0x08 && p[13] == 0x00)
			fix_packet(p + ipoff, len - ipoff, kind);
		sl_batch_begin(F.s);
		sl_eth_input(F.s, &F.eth, idx);
		sl_batch_end(F.s);
		return 1;
	case 1:
		fix_packet(p, len, kind);
		sl_ip_input(F.s, idx);
		return 2;
	default:
		/* IPoIB: ethertype, 2 reserved bytes, then the IPv4 packet. */
		if (len < 4 || p[0] != 0x08 || p[1] != 0x00) {
			sl_buf_free(F.s, idx);
			return 0;
		}
		fix_packet(p + 4, len - 4, kind);
		sl_buf(F.s, idx)->off += 4;
		sl_buf(F.s, idx)->len -= 4;
		sl_ip_input(F.s, idx);
		return 2;
	}
}

/* Counters only grow, and drops never outnumber what came in. */
static void check_counters(const uint64_t *before, unsigned int eth_frames,
			   unsigned int ip_frames)
{
	uint64_t now[SL_C_COUNT], ip_drops = 0;
	static const enum sl_counter drops[] = {
		SL_C_ip_rx_bad_hdr, SL_C_ip_rx_bad_csum, SL_C_ip_rx_not_ours,
		SL_C_ip_rx_martian, SL_C_ip_rx_frag, SL_C_ip_rx_proto,
	};

	for (int c = 0; c < SL_C_COUNT; c++) {
		now[c] = sl_counter_sum(F.s, (enum sl_counter)c);
		if (now[c] < before[c])
			fz_fail("counter %s went down", sl_counter_names[c]);
	}
	if (now[SL_C_link_rx] - before[SL_C_link_rx] != eth_frames)
		fz_fail("link_rx grew by %llu for %u Ethernet frames",
			(unsigned long long)(now[SL_C_link_rx] - before[SL_C_link_rx]), eth_frames);
	if (now[SL_C_ip_rx] - before[SL_C_ip_rx] < ip_frames)
		fz_fail("ip_rx grew by less than the %u IPv4 packets given", ip_frames);
	for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
		ip_drops += now[drops[i]] - before[drops[i]];
	if (ip_drops > now[SL_C_ip_rx] - before[SL_C_ip_rx])
		fz_fail("more IPv4 drops than IPv4 packets");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t before[SL_C_COUNT];
	unsigned int eth_frames = 0, ip_frames = 0;
	size_t pos = 0;

	fz_snap_restore(&snap);
	for (int c = 0; c < SL_C_COUNT; c++)
		before[c] = sl_counter_sum(F.s, (enum sl_counter)c);
	for (int r = 0; r < MAX_RECORDS && pos + 3 <= size; r++) {
		uint8_t kind = data[pos];
		unsigned int len = (unsigned int)data[pos + 1] << 8 | data[pos + 2];

		pos += 3;
		if ((kind & 3) == 3) {
			fz_advance_ms(len);
		} else {
			if (len > size - pos)
				len = (unsigned int)(size - pos);
			switch (one_frame(kind, data + pos, len)) {
			case 1:
				eth_frames++;
				break;
			case 2:
				ip_frames++;
				break;
			}
			pos += len;
		}
		fz_check();
	}
	check_counters(before, eth_frames, ip_frames);
	fz_finish();
	return 0;
}
