// SPDX-License-Identifier: BSD-2-Clause
/*
 * The error queue (lib/proto/errq.c, ip(7) IP_RECVERR) with ICMP errors
 * from a router on the link, which the host tests cannot make: each
 * error's record (errno, origin, type, code, info, offender, where the
 * datagram went) and quote; SO_ERROR and POLLERR as Linux keeps them;
 * hard and soft errors without IP_RECVERR (icmp_err_convert[]);
 * fragmentation needed (ee_info, IP_PMTUDISC_DONT); time exceeded; the
 * receive buffer's limit; IP_RECVERR off and close() give every buffer
 * back; a TCP connect refused by ICMP queues the SYN's quote; a datagram
 * past the path MTU with DF queues a local error.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/errqueue.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))

static struct capture cap;

/* An ICMP error (type, code, the second word's low half) from 10.5.0.254
 * quoting the last packet the stack sent, whole (it is small). */
static void icmp_about_last(struct sl_stack *s, uint8_t type, uint8_t code, uint16_t word)
{
	uint8_t m[8 + 1500], pkt[1600];
	unsigned int ql = cap.len[cap.n - 1];
	struct sl_icmp *ic = (struct sl_icmp *)m;
	size_t len;

	memset(m, 0, 8);
	ic->type = type;
	ic->code = code;
	ic->seq = htons(word);
	memcpy(m + 8, cap.frame[cap.n - 1], ql);
	ic->csum = sl_csum_fold(sl_csum_add(0, m, 8 + ql));
	len = fx_ip(pkt, "10.5.0.254", "10.5.0.1", IPPROTO_ICMP_, m, 8 + ql);
	fx_input(s, pkt, len);
}

static int so_error(struct sl_stack *s, int sd)
{
	int v = -1;
	unsigned int l = sizeof(v);

	sluice_getsockopt(ST(s), sd, SOL_SOCKET, SO_ERROR, &v, &l);
	return v;
}

static short revents(struct sl_stack *s, int sd)
{
	struct sluice_pollfd p = { .sd = sd, .events = POLLIN | POLLOUT };

	sluice_poll(ST(s), &p, 1, 0);
	return p.revents;
}

static int udp(struct sl_stack *s, bool recverr)
{
	int sd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK), one = 1;

	if (recverr)
		sluice_setsockopt(ST(s), sd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
	return sd;
}

static void test_udp_queue(void)
{
	struct sl_stack *s = fx_stack("errq", "10.5.0.1", &cap);
	struct sockaddr_in to = fx_addr("10.5.0.9", 7000);
	uint32_t free0 = s->lib->buf_free_count, router;
	struct sl_errq_rec rec;
	char buf[64];
	bool trunc;
	int sd = udp(s, true), v = 0;
	unsigned int l = sizeof(v);

	inet_pton(AF_INET, "10.5.0.254", &router);
	sluice_getsockopt(ST(s), sd, IPPROTO_IP, IP_RECVERR, &v, &l);
	tap_eq(v, 1, "IP_RECVERR reads back 1");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), -EAGAIN,
	       "an empty queue is EAGAIN at once");
	tap_eq(sluice_sendto(ST(s), sd, "payload", 7, 0, &to), 7, "a datagram to 10.5.0.9");
	tap_eq(cap.n, 1, "it went to the link");
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_HOST_, 0);
	tap_ok(revents(s, sd) & POLLERR, "POLLERR once the router's host unreachable came");
	tap_ok(!(revents(s, sd) & POLLIN), "and not readable");
	tap_eq(so_error(s, sd), EHOSTUNREACH, "SO_ERROR: EHOSTUNREACH (unconnected, soft: IP_RECVERR)");
	tap_ok(revents(s, sd) & POLLERR, "POLLERR stays while the queue holds it");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), 7,
	       "MSG_ERRQUEUE: the 7 bytes quoted past the UDP header");
	tap_ok(!memcmp(buf, "payload", 7) && !trunc, "the datagram's bytes, whole");
	tap_eq(rec.ee_errno, EHOSTUNREACH, "ee_errno");
	tap_eq(rec.origin, SO_EE_ORIGIN_ICMP, "ee_origin ICMP");
	tap_eq(rec.type, ICMP_UNREACH_, "ee_type 3");
	tap_eq(rec.code, ICMP_UNREACH_HOST_, "ee_code 1");
	tap_eq(rec.info, 0, "ee_info 0");
	tap_eq(rec.offender, router, "the offender is the router");
	tap_eq(rec.daddr, to.sin_addr.s_addr, "the address is where the datagram went");
	tap_eq(rec.dport, to.sin_port, "and its port");
	tap_ok(!(revents(s, sd) & POLLERR), "no POLLERR once read");

	/* Two queued: SO_ERROR is the next's after the first is read. */
	sluice_sendto(ST(s), sd, "one", 3, 0, &to);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_PORT_, 0);
	tap_eq(sluice_sendto(ST(s), sd, "x", 1, 0, &to), -ECONNREFUSED,
	       "the pending error is the next send's");
	sluice_sendto(ST(s), sd, "two", 3, 0, &to);
	icmp_about_last(s, ICMP_TIMXCEED_, 0, 0);
	tap_eq(sl_errq_recv(ST(s), sd, buf, 2, &rec, &trunc), 2, "first of two, cut to 2 bytes");
	tap_ok(trunc && rec.ee_errno == ECONNREFUSED, "MSG_TRUNC, ECONNREFUSED");
	tap_eq(so_error(s, sd), EHOSTUNREACH, "SO_ERROR is the next one's (time exceeded)");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), 3, "second");
	tap_ok(rec.type == ICMP_TIMXCEED_ && rec.ee_errno == EHOSTUNREACH,
	       "time exceeded: type 11, EHOSTUNREACH");
	tap_eq(so_error(s, sd), 0, "SO_ERROR cleared with the last ICMP error");

	/* Fragmentation needed: EMSGSIZE, the MTU in ee_info. */
	sluice_sendto(ST(s), sd, "big", 3, 0, &to);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_NEEDFRAG_, 1200);
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), 3, "fragmentation needed");
	tap_ok(rec.ee_errno == EMSGSIZE && rec.code == ICMP_UNREACH_NEEDFRAG_ && rec.info == 1200,
	       "EMSGSIZE, code 4, ee_info 1200 (%u)", rec.info);
	so_error(s, sd);
	v = IP_PMTUDISC_DONT;
	sluice_setsockopt(ST(s), sd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
	sluice_sendto(ST(s), sd, "big", 3, 0, &to);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_NEEDFRAG_, 1100);
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), -EAGAIN,
	       "IP_PMTUDISC_DONT: no error (Linux __udp4_lib_err())");

	/* IP_RECVERR off empties the queue. */
	sluice_sendto(ST(s), sd, "q", 1, 0, &to);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_PORT_, 0);
	tap_eq(s->lib->buf_free_count, free0 - 1, "one buffer holds the queued error");
	v = 0;
	sluice_setsockopt(ST(s), sd, IPPROTO_IP, IP_RECVERR, &v, sizeof(v));
	tap_eq(s->lib->buf_free_count, free0, "IP_RECVERR off gives it back");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), -EAGAIN, "queue empty");
	tap_eq(so_error(s, sd), ECONNREFUSED, "SO_ERROR stays (Linux purges the queue only)");

	/* The receive buffer bounds the queue (Linux sock_queue_err_skb()). */
	v = 1;
	sluice_setsockopt(ST(s), sd, IPPROTO_IP, IP_RECVERR, &v, sizeof(v));
	v = 0;
	sluice_setsockopt(ST(s), sd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	for (int i = 0; i < 5; i++) {
		sluice_sendto(ST(s), sd, "r", 1, 0, &to);
		icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_HOST_, 0);
		so_error(s, sd);
	}
	tap_eq(sl_sock(s, (uint32_t)sd)->errq_count, 1, "SO_RCVBUF at its floor holds one error");
	sluice_close(ST(s), sd);
	tap_eq(s->lib->buf_free_count, free0, "close gives the queue's buffers back");
	fx_destroy(s);
}

static void test_udp_without_recverr(void)
{
	struct sl_stack *s = fx_stack("errq0", "10.5.0.1", &cap);
	struct sockaddr_in to = fx_addr("10.5.0.9", 7000);
	struct sl_errq_rec rec;
	char buf[16];
	bool trunc;
	int sd = udp(s, false), c = udp(s, false);

	sluice_sendto(ST(s), sd, "u", 1, 0, &to);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_PORT_, 0);
	tap_eq(so_error(s, sd), 0, "unconnected, no IP_RECVERR: no error");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), -EAGAIN, "nothing queued");
	sluice_connect(ST(s), c, &to);
	sluice_send(ST(s), c, "c", 1, 0);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_HOST_, 0);
	tap_eq(so_error(s, c), 0, "connected, host unreachable (soft): no error, as Linux");
	sluice_send(ST(s), c, "c", 1, 0);
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_PORT_, 0);
	tap_eq(so_error(s, c), ECONNREFUSED, "connected, port unreachable (hard): ECONNREFUSED");
	tap_eq(sl_errq_recv(ST(s), c, buf, sizeof(buf), &rec, &trunc), -EAGAIN, "nothing queued");
	sluice_close(ST(s), sd);
	sluice_close(ST(s), c);
	fx_destroy(s);
}

static void test_tcp_connect_refused(void)
{
	struct sl_stack *s = fx_stack("errqt", "10.5.0.1", &cap);
	struct sockaddr_in to = fx_addr("10.5.0.9", 80);
	uint32_t free0 = s->lib->buf_free_count;
	struct sl_errq_rec rec;
	char buf[64];
	bool trunc;
	int sd = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK), one = 1;

	sluice_setsockopt(ST(s), sd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
	tap_eq(sluice_connect(ST(s), sd, &to), -EINPROGRESS, "connect to 10.5.0.9:80");
	icmp_about_last(s, ICMP_UNREACH_, ICMP_UNREACH_HOST_, 0);
	tap_ok(revents(s, sd) & POLLERR, "POLLERR");
	tap_eq(so_error(s, sd), EHOSTUNREACH, "the connect failed with it");
	tap_ok(revents(s, sd) & POLLERR, "POLLERR stays: the queue holds it");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), (long)(cap.len[0] - 20),
	       "the SYN quoted from its TCP header on");
	tap_ok(rec.ee_errno == EHOSTUNREACH && rec.dport == to.sin_port, "EHOSTUNREACH, port 80");
	tap_eq(so_error(s, sd), 0, "SO_ERROR 0 after");
	sluice_close(ST(s), sd);
	tap_eq(s->lib->buf_free_count, free0, "no buffer kept");
	fx_destroy(s);
}

/* Past the path MTU with DF: EMSGSIZE and a local error (Linux
 * __ip_append_data(): ip_local_error(), ee_info the MTU). */
static void test_local_error(void)
{
	struct sl_stack *s = fx_stack("errql", "10.5.0.1", &cap);
	struct sockaddr_in to = fx_addr("10.5.0.9", 7000);
	static char big[2000];
	struct sl_errq_rec rec;
	char buf[16];
	bool trunc;
	int sd = udp(s, true), v = IP_PMTUDISC_DO;

	sluice_setsockopt(ST(s), sd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
	tap_eq(sluice_sendto(ST(s), sd, big, sizeof(big), 0, &to), -EMSGSIZE,
	       "2000 bytes with DF on a 1500-byte link: EMSGSIZE");
	tap_eq(sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc), 0,
	       "a local error queued, no quote");
	tap_ok(rec.origin == SO_EE_ORIGIN_LOCAL && rec.ee_errno == EMSGSIZE && rec.info == 1500 &&
	       !rec.offender && !rec.dport && rec.daddr == to.sin_addr.s_addr,
	       "origin local, EMSGSIZE, ee_info 1500, no offender, port 0 (unconnected)");
	tap_eq(so_error(s, sd), 0, "SO_ERROR untouched by a local error");
	sluice_connect(ST(s), sd, &to);
	sluice_send(ST(s), sd, big, sizeof(big), 0);
	sl_errq_recv(ST(s), sd, buf, sizeof(buf), &rec, &trunc);
	tap_eq(rec.dport, to.sin_port, "connected: the peer's port");
	sluice_close(ST(s), sd);
	fx_destroy(s);
}

int main(void)
{
	test_udp_queue();
	test_udp_without_recverr();
	test_tcp_connect_refused();
	test_local_error();
	return tap_done();
}
