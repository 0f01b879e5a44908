// SPDX-License-Identifier: BSD-2-Clause
/*
 * Live hand-off of an established connection to a kernel socket, with
 * Linux's TCP repair (tcp(7): TCP_REPAIR and the options that go with it).
 * Only on a stack on a device the module steers (kring): there the stack's
 * address is the kernel's own, so a kernel socket with the connection's
 * 4-tuple can take the connection once the module stops steering it
 * (SLUICE_IOC_HANDOFF).
 *
 * Under the stack lock, which freezes the connection (nothing is sent,
 * acknowledged or timed while it is held):
 *   1. a kernel socket in repair mode, with the peer's MSS as its clamp
 *      (TCP_MAXSEG: it sizes its segments at connect()), bound to the local address and
 *      port (repair mode passes over the port's module reservation), with
 *      the first unread byte's sequence number for its receive queue and
 *      SND.UNA for its send queue, "connected" (repair: no SYN);
 *   2. the unread bytes into its receive queue, the bytes sent and not yet
 *      acknowledged into its send queue (as sent), window scales, the
 *      peer's MSS, SACK and timestamps (TCP_REPAIR_OPTIONS), the windows
 *      (TCP_REPAIR_WINDOW) and the timestamp clock (TCP_TIMESTAMP: the
 *      kernel's TSval goes on from the stack's);
 *   3. SLUICE_IOC_HANDOFF: from now on the kernel receives the tuple;
 *   4. repair off (the kernel sends a window probe, the peer's answer
 *      brings it up to date), the bytes never sent written as a program
 *      would, the options the socket has;
 *   5. the stack's socket ends without a FIN or reset, and a TIME-WAIT
 *      entry with SL_TW_GONE drops what still reaches the stack for the
 *      tuple (segments in the rx ring from before step 3).
 * A step the kernel refuses before 4 (no CAP_NET_ADMIN: TCP_REPAIR says
 * EPERM) closes the kernel socket, which in repair mode sends nothing, and
 * the connection goes on in the stack.  Out-of-order data is not moved:
 * the peer sends it again.  ESTABLISHED, and CLOSE_WAIT, whose FIN the
 * kernel socket is given as a packet (give_fin()); lib/preload/README.md
 * says what becomes of the other states.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <arpa/inet.h>

#include "os/os.h"
#include "proto/proto.h"

#define HO_WINDOW_MAX	(1u << 30)

static int opt(int fd, int level, int name, int v)
{
	return sl_sys_setsockopt(fd, level, name, &v, sizeof(v)) ? -errno : 0;
}

/* Bytes [from, to) of the send queue into a new buffer (*out, NULL for
 * none); its length, or -errno. */
static ssize_t sndq_copy(struct sl_stack *s, const struct sl_tcp_sock *tp, uint32_t from,
			 uint32_t to, uint8_t **out)
{
	uint32_t len = to - from, idx = tp->sndq_head, steps = 0;
	uint8_t *p;

	*out = NULL;
	if (!len)
		return 0;
	p = malloc(len);
	if (!p)
		return -ENOMEM;
	while (sl_buf_next(s, idx, &steps)) {
		const struct sluice_buf *b = sl_buf(s, idx);
		uint32_t seq = b->seq, n = b->aux, a, e;

		if (n > SL_TCP_BUF_PAYLOAD(s)) {
			free(p);
			return -ENOTRECOVERABLE;
		}
		a = SEQ_MAX(seq, from);
		e = SEQ_MIN(seq + n, to);
		if (SEQ_LT(a, e))
			memcpy(p + (a - from), sl_buf_base(s, idx) + SL_TCP_DATA_OFF + (a - seq),
			       e - a);
		idx = b->next_idx;
	}
	*out = p;
	return len;
}

/* The unread bytes of the receive queue into a new buffer. */
static ssize_t rxq_copy(struct sl_stack *s, const struct sl_sock *so, uint8_t **out)
{
	uint32_t idx = so->rxq_head, steps = 0, done = 0, len = so->rxq_bytes;
	uint8_t *p;

	*out = NULL;
	if (!len)
		return 0;
	p = malloc(len);
	if (!p)
		return -ENOMEM;
	while (done < len && sl_buf_next(s, idx, &steps)) {
		const struct sluice_buf *b = sl_buf(s, idx);
		uint32_t n = b->len;

		if (n > len - done)
			n = len - done;
		memcpy(p + done, sl_buf_data(s, idx), n);
		done += n;
		idx = b->next_idx;
	}
	if (done != len) {
		free(p);
		return -ENOTRECOVERABLE;
	}
	*out = p;
	return len;
}

/* Of buf to fd (repair mode or not) what it takes now; the bytes put, or
 * -errno if none. */
static ssize_t put_some(int fd, const uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = sl_sys_sendto(fd, buf + done, len - done, MSG_DONTWAIT | MSG_NOSIGNAL,
					  NULL, 0);

		if (n <= 0)
			return done ? (ssize_t)done : n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int put_all(int fd, const uint8_t *buf, size_t len)
{
	ssize_t n = put_some(fd, buf, len);

	return n < 0 ? (int)n : (size_t)n == len ? 0 : -ENOBUFS;
}

/*
 * The bytes never sent, after repair: written as a program would, so the
 * kernel sends them at once.  What its buffer does not take now goes into
 * its send queue in repair mode again, counted as sent: the kernel's
 * retransmission timer sends it (later, but not lost).
 */
static void put_tail(int ks, const uint8_t *buf, size_t len)
{
	ssize_t n = put_some(ks, buf, len);

	if (n < 0)
		n = 0;
	if ((size_t)n == len)
		return;
	if (!opt(ks, IPPROTO_TCP, TCP_REPAIR, 1)) {
		if (!opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE))
			put_all(ks, buf + n, len - (size_t)n);
		opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_NO_QUEUE);
		opt(ks, IPPROTO_TCP, TCP_REPAIR, 0);
	}
}

/* Room for len bytes in the kernel socket's buffer (name: SO_SNDBUF or
 * SO_RCVBUF; the kernel counts about twice the payload). */
static int room_for(int fd, int name, size_t len)
{
	int cur = 0;
	socklen_t cl = sizeof(cur);
	size_t want = 2 * len + 65536;

	if (!len || sl_sys_getsockopt(fd, SOL_SOCKET, name, &cur, &cl) || (size_t)cur >= want)
		return 0;
	if (want > 1u << 30)
		return -ENOBUFS;
	/* The kernel doubles what it is given. */
	return opt(fd, SOL_SOCKET, name == SO_SNDBUF ? SO_SNDBUFFORCE : SO_RCVBUFFORCE,
		   (int)(want / 2));
}

/*
 * The kernel socket's address for addr:port: an AF_INET6 socket of the
 * program (SL_SF_V6: the stack talks IPv4 for it) becomes an AF_INET6
 * kernel socket with the IPv4-mapped address, so its names keep their
 * family; a native IPv6 connection's address handle (sl_v6tok()) the
 * address it names, scoped to the stack's device if link-local; else
 * AF_INET.  The length to give bind() and connect().
 */
static socklen_t ho_addr(const struct sl_stack *s, const struct sl_sock *so, uint32_t addr,
			 uint16_t port, struct sockaddr_in6 *out)
{
	memset(out, 0, sizeof(*out));
	if (sl_v6tok(addr)) {
		out->sin6_family = AF_INET6;
		out->sin6_port = port;
		sl_v6tok_addr(s, addr, out->sin6_addr.s6_addr);
		if (sl_ip6_is_ll(out->sin6_addr.s6_addr))
			out->sin6_scope_id = sl_stack_ifindex(s);
		return sizeof(*out);
	}
	if (so->flags & SL_SF_V6) {
		out->sin6_family = AF_INET6;
		out->sin6_port = port;
		out->sin6_addr.s6_addr[10] = 0xff;
		out->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&out->sin6_addr.s6_addr[12], &addr, 4);
		return sizeof(*out);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;

		sin->sin_family = AF_INET;
		sin->sin_port = port;
		sin->sin_addr.s_addr = addr;
		return sizeof(*sin);
	}
}

/* Steps 1 and 2, on ks in repair mode.  rcv_end: RCV.NXT without the
 * peer's FIN (CLOSE_WAIT), which repair cannot express. */
static int build(struct sl_stack *s, struct sl_sock *so, int ks, uint32_t rcv_end,
		 uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	struct sockaddr_in6 me, peer;
	socklen_t alen = ho_addr(s, so, so->laddr, so->lport, &me);
	struct tcp_repair_opt ro[4];
	struct tcp_repair_window w;
	unsigned int n = 0;
	uint32_t tsval;
	int clamp;
	uint8_t *rx = NULL, *tx = NULL;
	ssize_t rxlen, txlen;
	int ret;

	ho_addr(s, so, so->raddr, so->rport, &peer);
	ret = opt(ks, IPPROTO_TCP, TCP_REPAIR, 1);
	if (ret)
		return ret;
	rxlen = rxq_copy(s, so, &rx);
	txlen = sndq_copy(s, tp, tp->snd_una, tp->snd_max, &tx);
	if (rxlen < 0 || txlen < 0) {
		ret = rxlen < 0 ? (int)rxlen : (int)txlen;
		goto out;
	}
	/* The peer's MSS as TCP_MAXSEG before the connect: the kernel sizes
	 * its segments (mss_cache) at connect(), from the clamp it has then;
	 * TCP_REPAIR_OPTIONS' MSS alone comes too late (536 would stay). */
	clamp = tp->peer_mss ? tp->peer_mss : tp->mss + ((tp->tflags & SL_TF_TS) ? 12 : 0);
	if (opt(ks, IPPROTO_TCP, TCP_MAXSEG, clamp) ||
	    sl_sys_bind(ks, (const struct sockaddr *)&me, alen) ||
	    opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE) ||
	    opt(ks, IPPROTO_TCP, TCP_QUEUE_SEQ, (int)(rcv_end - (uint32_t)rxlen)) ||
	    opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE) ||
	    opt(ks, IPPROTO_TCP, TCP_QUEUE_SEQ, (int)tp->snd_una) ||
	    sl_sys_connect(ks, (const struct sockaddr *)&peer, alen)) {
		ret = -errno;
		goto out;
	}
	ret = room_for(ks, SO_RCVBUF, (size_t)rxlen);
	if (!ret)
		ret = room_for(ks, SO_SNDBUF, (size_t)txlen + (tp->snd_end - tp->snd_max));
	if (!ret && rxlen) {
		ret = opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE);
		if (!ret)
			ret = put_all(ks, rx, (size_t)rxlen);
	}
	if (!ret && txlen) {
		ret = opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE);
		if (!ret)
			ret = put_all(ks, tx, (size_t)txlen);
	}
	if (ret)
		goto out;
	ro[n++] = (struct tcp_repair_opt){ TCPOPT_MAXSEG, (uint32_t)clamp };
	if (tp->tflags & SL_TF_WS)
		ro[n++] = (struct tcp_repair_opt){
			TCPOPT_WINDOW, sl_tcp_ws(s, tp->snd_wscale) |
				       (uint32_t)sl_tcp_ws(s, tp->rcv_wscale) << 16 };
	if (tp->tflags & SL_TF_SACK)
		ro[n++] = (struct tcp_repair_opt){ TCPOPT_SACK_PERMITTED, 0 };
	if (tp->tflags & SL_TF_TS)
		ro[n++] = (struct tcp_repair_opt){ TCPOPT_TIMESTAMP, 0 };
	/* Even: since Linux 6.7 the low bit asks for a microsecond clock
	 * (tcp_usec_ts); one millisecond ahead rather than one back, which
	 * the peer's PAWS check would refuse. */
	tsval = (uint32_t)(now_us / 1000) + tp->ts_offset;
	tsval += tsval & 1;
	memset(&w, 0, sizeof(w));
	w.snd_wl1 = tp->snd_wl1;
	w.snd_wnd = tp->snd_wnd > HO_WINDOW_MAX ? HO_WINDOW_MAX : tp->snd_wnd;
	w.max_window = tp->max_sndwnd > w.snd_wnd ? tp->max_sndwnd : w.snd_wnd;
	w.rcv_wup = rcv_end;
	w.rcv_wnd = SEQ_GT(tp->rcv_adv, rcv_end) ? tp->rcv_adv - rcv_end : 0;
	if (SEQ_GT(w.snd_wl1, rcv_end + w.rcv_wnd))
		w.snd_wl1 = rcv_end;
	if (sl_sys_setsockopt(ks, IPPROTO_TCP, TCP_REPAIR_OPTIONS, ro,
			      (socklen_t)(n * sizeof(ro[0]))) ||
	    sl_sys_setsockopt(ks, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, sizeof(w)) ||
	    ((tp->tflags & SL_TF_TS) && opt(ks, IPPROTO_TCP, TCP_TIMESTAMP, (int)tsval)) ||
	    opt(ks, IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_NO_QUEUE))
		ret = -errno;
out:
	free(rx);
	free(tx);
	return ret;
}

/* The options the socket has, to the kernel socket (after repair).  What
 * the kernel refuses is left: the connection is moved already. */
static void options_to(const struct sl_sock *so, int ks)
{
	const struct sl_tcp_sock *tp = &so->tcp;

	if (so->flags & SL_SF_NODELAY)
		opt(ks, IPPROTO_TCP, TCP_NODELAY, 1);
	if (so->flags & SL_SF_KEEPALIVE)
		opt(ks, SOL_SOCKET, SO_KEEPALIVE, 1);
	if (so->flags & SL_SF_REUSEADDR)
		opt(ks, SOL_SOCKET, SO_REUSEADDR, 1);
	if (so->flags & SL_SF_LINGER) {
		struct linger l = { .l_onoff = 1, .l_linger = (int)so->linger_s };

		sl_sys_setsockopt(ks, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	if (tp->keep_idle_s && tp->keep_idle_s != SL_TCP_KEEPIDLE_S)
		opt(ks, IPPROTO_TCP, TCP_KEEPIDLE, tp->keep_idle_s);
	if (tp->keep_intvl_s && tp->keep_intvl_s != SL_TCP_KEEPINTVL_S)
		opt(ks, IPPROTO_TCP, TCP_KEEPINTVL, tp->keep_intvl_s);
	if (tp->keep_cnt && tp->keep_cnt != SL_TCP_KEEPCNT)
		opt(ks, IPPROTO_TCP, TCP_KEEPCNT, tp->keep_cnt);
	if (tp->user_timeout_ms)
		opt(ks, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)tp->user_timeout_ms);
	if (tp->window_clamp)
		opt(ks, IPPROTO_TCP, TCP_WINDOW_CLAMP, (int)tp->window_clamp);
	if (tp->linger2_s)
		opt(ks, IPPROTO_TCP, TCP_LINGER2, tp->linger2_s);
	if (tp->user_mss)
		opt(ks, IPPROTO_TCP, TCP_MAXSEG, tp->user_mss);
	if (tp->tflags & SL_TF_PINGPONG)
		opt(ks, IPPROTO_TCP, TCP_QUICKACK, 0);	/* the exchange, as Linux reads it */
	if (tp->tflags & SL_TF_RENO)
		sl_sys_setsockopt(ks, IPPROTO_TCP, TCP_CONGESTION, "reno", 4);
	if (so->ip_tos)
		opt(ks, IPPROTO_IP, IP_TOS, so->ip_tos);
	if (tp->tflags & SL_TF_CORK)
		opt(ks, IPPROTO_TCP, TCP_CORK, 1);
	if (tp->notsent_lowat)
		opt(ks, IPPROTO_TCP, TCP_NOTSENT_LOWAT, (int)tp->notsent_lowat);
	/* SO_TIMESTAMPNS or SO_TIMESTAMP, as the stack keeps the pair. */
	if (so->opt_flags & SL_SO_TIMESTAMP)
		opt(ks, SOL_SOCKET, (so->ip6_opt & SL_S6_TSNS) ? SO_TIMESTAMPNS : SO_TIMESTAMP, 1);
}

static uint32_t csum_add(uint32_t sum, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int tcp_state_of(int fd)
{
	uint8_t info[8];
	socklen_t len = sizeof(info);

	/* struct tcp_info begins with tcpi_state. */
	return sl_sys_getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &len) ? -1 : info[0];
}

/*
 * CLOSE_WAIT: the peer's FIN, which the stack took and acknowledged, for
 * the kernel socket too.  Repair has no call for it; the FIN is given as
 * the peer sent it, through a raw socket and the kernel's loopback (a
 * packet for a local address keeps its route: no input route lookup, no
 * reverse-path filter), at the sequence number the repaired receive side
 * ends at, acknowledging only SND.UNA, with the peer's window and its
 * last TSval.  The kernel answers with an ACK the peer takes as a
 * duplicate.  A native IPv6 connection's (l6, r6: its addresses, else
 * NULL) goes in an IPv6 header through an AF_INET6 raw socket of
 * IPPROTO_RAW, which sends the header it is given as IPv4's does
 * (Linux's rawv6_send_hdrinc()), to the local address scoped to the
 * stack's device when it is link-local.  0 once the socket is in
 * CLOSE_WAIT, or -errno.
 */
static int give_fin(const struct sl_stack *s, const struct sl_sock *so, int ks, uint32_t seq,
		    uint32_t tsecr, const uint8_t *l6, const uint8_t *r6)
{
	const struct sl_tcp_sock *tp = &so->tcp;
	uint8_t pkt[40 + 20 + 12], ph[40], *th;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} to;
	unsigned int tl = (tp->tflags & SL_TF_TS) ? 32 : 20;
	unsigned int hl = l6 ? 40 : 20, len = hl + tl, phl;
	uint32_t wnd = tp->snd_wnd >> ((tp->tflags & SL_TF_WS) ? tp->snd_wscale : 0), v;
	socklen_t tolen;
	uint16_t c;
	int raw, ret = -EIO;

	memset(pkt, 0, sizeof(pkt));
	memset(ph, 0, sizeof(ph));
	memset(&to, 0, sizeof(to));
	if (l6) {
		v = htonl(6u << 28);
		memcpy(pkt, &v, 4);
		pkt[5] = (uint8_t)tl;
		pkt[6] = IPPROTO_TCP;
		pkt[7] = 64;
		memcpy(pkt + 8, r6, 16);
		memcpy(pkt + 24, l6, 16);
		/* RFC 8200 8.1's pseudo-header. */
		memcpy(ph, r6, 16);
		memcpy(ph + 16, l6, 16);
		ph[35] = (uint8_t)tl;
		ph[39] = IPPROTO_TCP;
		phl = 40;
		to.v6.sin6_family = AF_INET6;
		memcpy(&to.v6.sin6_addr, l6, 16);
		if (sl_ip6_is_ll(l6))
			to.v6.sin6_scope_id = sl_stack_ifindex(s);
		tolen = sizeof(to.v6);
	} else {
		pkt[0] = 0x45;
		pkt[2] = (uint8_t)(len >> 8);
		pkt[3] = (uint8_t)len;
		pkt[6] = 0x40;			/* DF */
		pkt[8] = 64;
		pkt[9] = IPPROTO_TCP;
		memcpy(pkt + 12, &so->raddr, 4);
		memcpy(pkt + 16, &so->laddr, 4);
		memcpy(ph, &so->raddr, 4);
		memcpy(ph + 4, &so->laddr, 4);
		ph[9] = IPPROTO_TCP;
		ph[10] = (uint8_t)(tl >> 8);
		ph[11] = (uint8_t)tl;
		phl = 12;
		to.v4.sin_family = AF_INET;
		to.v4.sin_addr.s_addr = so->laddr;
		tolen = sizeof(to.v4);
	}
	th = pkt + hl;
	memcpy(th, &so->rport, 2);
	memcpy(th + 2, &so->lport, 2);
	v = htonl(seq);
	memcpy(th + 4, &v, 4);
	v = htonl(tp->snd_una);
	memcpy(th + 8, &v, 4);
	th[12] = (uint8_t)((tl / 4) << 4);
	th[13] = 0x11;			/* FIN, ACK */
	th[14] = (uint8_t)((wnd > 65535 ? 65535 : wnd) >> 8);
	th[15] = (uint8_t)(wnd > 65535 ? 65535 : wnd);
	if (tl == 32) {
		th[20] = 1;
		th[21] = 1;
		th[22] = 8;
		th[23] = 10;
		v = htonl(tp->ts_recent);
		memcpy(th + 24, &v, 4);
		v = htonl(tsecr);
		memcpy(th + 28, &v, 4);
	}
	c = csum_fold(csum_add(csum_add(0, ph, phl), th, tl));
	th[16] = (uint8_t)(c >> 8);
	th[17] = (uint8_t)c;
	raw = sl_sys_socket(l6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (raw < 0)
		return -errno;
	if (sl_sys_sendto(raw, pkt, len, 0, (const struct sockaddr *)&to, tolen) != (ssize_t)len)
		ret = -errno;
	else
		/* Taken in the sender's softirq, at once; a moment's grace. */
		for (int i = 0; i < 100 && ret; i++) {
			if (tcp_state_of(ks) == TCP_CLOSE_WAIT)
				ret = 0;
			else
				sl_sys_poll(NULL, 0, 1);
		}
	sl_sys_close(raw);
	return ret;
}

int sl_tcp_handoff(struct sl_stack *s, struct sl_sock *so, int *kfd, uint64_t now_us)
{
	struct sl_tcp_sock *tp = &so->tcp;
	struct sluice_handoff h;
	struct sluice_filter d;
	uint8_t *tail = NULL;
	ssize_t tlen = 0;
	bool fin, v6;
	int ks, ret;

	memset(&h, 0, sizeof(h));

	/* Only where the module steers the stack's ports (s->filters: kring):
	 * elsewhere the stack's address is not the kernel's (TAP) or both
	 * ends are the stack's (its loopback). */
	if (so->type != SL_SOCK_TCP || !s->filters || !s->module_backed)
		return -EOPNOTSUPP;
	/* ESTABLISHED, or CLOSE_WAIT (the peer's FIN in, given again below);
	 * nothing sent or shut on this side. */
	fin = so->state == SL_TCP_CLOSE_WAIT && (tp->tflags & SL_TF_FIN_RCVD);
	if ((so->state != SL_TCP_ESTABLISHED && !fin) ||
	    (so->flags & (SL_SF_ORPHAN | SL_SF_SHUT_WR | SL_SF_SHUT_RD)) ||
	    (tp->tflags & SL_TF_FIN_Q) ||
	    (so->state == SL_TCP_ESTABLISHED && (tp->tflags & SL_TF_FIN_RCVD)))
		return -EOPNOTSUPP;
	/* Both ends in the stack (its loopback): no kernel side to take it. */
	if ((ntohl(so->raddr) >> 24) == 127 || sl_ip_is_local(s, so->raddr))
		return -EOPNOTSUPP;
	/* Native IPv6 (address handles): a module that takes its hand-off
	 * (SLUICE_HANDOFF_IPV6) and a peer that is not the stack's own. */
	v6 = sl_v6tok(so->raddr);
	if (v6 && (!(sl_module_features & SLUICE_FEATURE_HANDOFF6) || sl_v6tok_own(so->raddr) ||
		   !sl_v6tok_addr(s, so->laddr, h.laddr6) ||
		   !sl_v6tok_addr(s, so->raddr, h.raddr6)))
		return -EOPNOTSUPP;
	/* Buffers lent to the program (zero-copy) are the stack's still. */
	if (so->rx_lent_count || so->tx_lent_bytes)
		return -EBUSY;
	if (SEQ_LT(tp->snd_end, tp->snd_max) || SEQ_LT(tp->snd_max, tp->snd_una))
		return -EPROTO;
	ks = sl_sys_socket((so->flags & SL_SF_V6) || v6 ? AF_INET6 : AF_INET,
			   SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
	if (ks < 0)
		return -errno;
	ret = build(s, so, ks, tp->rcv_nxt - fin, now_us);
	/* In repair mode still, the FIN comes in (answered by an ACK). */
	if (!ret && fin)
		ret = give_fin(s, so, ks, tp->rcv_nxt - 1,
			       (uint32_t)(now_us / 1000) + tp->ts_offset, v6 ? h.laddr6 : NULL,
			       v6 ? h.raddr6 : NULL);
	if (!ret && SEQ_LT(tp->snd_max, tp->snd_end)) {
		tlen = sndq_copy(s, tp, tp->snd_max, tp->snd_end, &tail);
		if (tlen < 0)
			ret = (int)tlen;
	}
	if (ret)
		goto undo;
	h.size = sizeof(h);
	h.fd = ks;
	h.protocol = IPPROTO_TCP;
	if (v6) {
		h.flags = SLUICE_HANDOFF_IPV6;
	} else {
		h.laddr = so->laddr;
		h.raddr = so->raddr;
	}
	h.lport = so->lport;
	h.rport = so->rport;
	if (sl_sys_ioctl(s->region_fd, SLUICE_IOC_HANDOFF, &h)) {
		/* A stack without the module (ENOTTY): not here. */
		ret = errno == ENOTTY ? -EOPNOTSUPP : -errno;
		goto undo;
	}
	if (opt(ks, IPPROTO_TCP, TCP_REPAIR, 0)) {
		ret = -errno;
		memset(&d, 0, sizeof(d));
		d.size = sizeof(d);
		d.id = h.id;
		sl_sys_ioctl(s->region_fd, SLUICE_IOC_FILTER_DEL, &d);
		goto undo;
	}
	/* The kernel's now.  Bytes never sent go as a program's write; the
	 * buffer has room for them (room_for()). */
	if (tlen)
		put_tail(ks, tail, (size_t)tlen);
	free(tail);
	options_to(so, ks);
	sl_tw_gone(s, so, now_us);
	/* Ends as a connection the peer ended: no FIN, no reset, its port
	 * and filter let go; reads find the end. */
	tp->t_close = 0;
	sl_tcp_done(s, so, 0);
	sl_count(s, SL_C_tcp_handoff);
	*kfd = ks;
	return 0;

undo:
	free(tail);
	sl_sys_close(ks);	/* in repair mode: nothing sent */
	return ret;
}
