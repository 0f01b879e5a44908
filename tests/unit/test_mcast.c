// SPDX-License-Identifier: BSD-2-Clause
/*
 * IPv4 multicast on UDP sockets (RFC 1112, ip(7)): sending to a group
 * (IP_MULTICAST_TTL, IP_MULTICAST_LOOP, IP_MULTICAST_IF), and receive:
 * IP_ADD_MEMBERSHIP / IP_DROP_MEMBERSHIP rules and errnos, a group's
 * datagrams handed to every socket on the port that joined it and to no
 * other, a socket bound to the group's address, leaving on close, and
 * multicast refused to TCP.
 *
 *   test --datagrams from 10.0.0.2 to 239.1.2.3:5353--> stack 10.0.0.1
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))
#define PORT 5353

static struct capture cap;

static int udp_on(struct sl_stack *s, const char *addr)
{
	struct sockaddr_in a = fx_addr(addr, PORT);
	int sd = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK), one = 1;

	sluice_setsockopt(ST(s), sd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sluice_bind(ST(s), sd, &a))
		return -1;
	return sd;
}

static int join(struct sl_stack *s, int sd, int name, const char *group, size_t len)
{
	struct ip_mreqn mr = { .imr_ifindex = 0 };

	inet_pton(AF_INET, group, &mr.imr_multiaddr);
	return sluice_setsockopt(ST(s), sd, IPPROTO_IP, name, &mr, (unsigned int)len);
}

/* A datagram from 10.0.0.2:40000 to dst:PORT carrying one byte, tag. */
static void send_to(struct sl_stack *s, const char *dst, char tag)
{
	uint8_t pkt[64], udp[9] = { 0x9c, 0x40, PORT >> 8, PORT & 0xff, 0, 9, 0, 0, 0 };

	udp[8] = (uint8_t)tag;	/* checksum 0: none (RFC 768) */
	fx_input(s, pkt, fx_ip(pkt, "10.0.0.2", dst, IPPROTO_UDP, udp, sizeof(udp)));
}

static int got(struct sl_stack *s, int sd, char *tag)
{
	char buf[16];
	long n = sluice_recv(ST(s), sd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n == 1 && tag)
		*tag = buf[0];
	return n == 1;
}

static void test_membership_rules(void)
{
	struct sl_stack *s = fx_stack("mc-rules", "10.0.0.1", &cap);
	int u = udp_on(s, "0.0.0.0"), t = sluice_socket(ST(s), SLUICE_SOCK_STREAM);
	struct ip_mreq short_mr = { 0 };

	tap_eq(join(s, u, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn)), 0,
	       "IP_ADD_MEMBERSHIP with a struct ip_mreqn");
	tap_eq(join(s, u, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreq)), -EADDRINUSE,
	       "the same group again: EADDRINUSE (as Linux)");
	tap_eq(join(s, u, IP_ADD_MEMBERSHIP, "239.1.2.4", sizeof(struct ip_mreq)), 0,
	       "a second group with a struct ip_mreq");
	tap_eq(join(s, u, IP_ADD_MEMBERSHIP, "10.0.0.9", sizeof(struct ip_mreqn)), -EINVAL,
	       "a unicast address: EINVAL");
	tap_eq(sluice_setsockopt(ST(s), u, IPPROTO_IP, IP_ADD_MEMBERSHIP, &short_mr, 7), -EINVAL,
	       "shorter than struct ip_mreq: EINVAL");
	tap_eq(join(s, t, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn)), -EPROTO,
	       "a TCP socket: EPROTO (as Linux)");
	for (int i = 5; i < 11; i++) {
		char g[32];

		snprintf(g, sizeof(g), "239.1.2.%d", i);
		join(s, u, IP_ADD_MEMBERSHIP, g, sizeof(struct ip_mreqn));
	}
	tap_eq(join(s, u, IP_ADD_MEMBERSHIP, "239.1.3.1", sizeof(struct ip_mreqn)), -ENOBUFS,
	       "past SL_UDP_MC_MAX groups: ENOBUFS");
	tap_eq(join(s, u, IP_DROP_MEMBERSHIP, "239.1.2.4", sizeof(struct ip_mreqn)), 0,
	       "IP_DROP_MEMBERSHIP of a group it holds");
	tap_eq(join(s, u, IP_DROP_MEMBERSHIP, "239.1.2.4", sizeof(struct ip_mreqn)),
	       -EADDRNOTAVAIL, "dropping it again: EADDRNOTAVAIL (as Linux)");
	tap_eq(join(s, u, IP_ADD_MEMBERSHIP, "239.1.3.1", sizeof(struct ip_mreqn)), 0,
	       "and the freed place takes another group");
	sluice_close(ST(s), u);
	sluice_close(ST(s), t);
	fx_destroy(s);
}

static void test_group_delivery(void)
{
	struct sl_stack *s = fx_stack("mc-rx", "10.0.0.1", &cap);
	int a = udp_on(s, "0.0.0.0"), b = udp_on(s, "0.0.0.0"), c = udp_on(s, "0.0.0.0");
	int g = udp_on(s, "239.1.2.3"), other = udp_on(s, "239.9.9.9"), zero = 0;
	char tag = 0;

	tap_ok(a >= 0 && b >= 0 && c >= 0, "three sockets on port %d", PORT);
	tap_ok(g >= 0 && other >= 0, "binding a group's address is allowed (as Linux)");
	join(s, a, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn));
	join(s, b, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn));
	join(s, g, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn));
	join(s, other, IP_ADD_MEMBERSHIP, "239.9.9.9", sizeof(struct ip_mreqn));
	send_to(s, "239.1.2.3", 'x');
	tap_ok(got(s, a, &tag) && tag == 'x', "a member on INADDR_ANY gets the group's datagram");
	tap_ok(got(s, b, NULL), "so does a second one: every member gets a copy");
	tap_ok(got(s, g, NULL), "and one bound to the group's address");
	tap_ok(got(s, c, NULL), "a socket on the port that did not join gets it too, as Linux's "
	       "IP_MULTICAST_ALL (on by default) gives it");
	tap_ok(!got(s, other, NULL), "not one bound to another group");
	tap_eq(sluice_setsockopt(ST(s), c, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero)), 0,
	       "IP_MULTICAST_ALL off");
	send_to(s, "239.1.2.3", 'v');
	tap_ok(got(s, a, NULL) && got(s, b, NULL) && got(s, g, NULL) && !got(s, c, NULL),
	       "with it off, only the members get the group's datagram");
	send_to(s, "239.1.2.4", 'y');
	tap_ok(!got(s, a, NULL) && !got(s, b, NULL), "a group nobody joined: dropped");
	tap_eq(cap.n, 0, "no ICMP port unreachable for multicast (RFC 1122 3.2.2)");
	join(s, a, IP_DROP_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn));
	send_to(s, "239.1.2.3", 'z');
	tap_ok(got(s, a, NULL) && got(s, b, NULL),
	       "after a drops the group it still hears it while b holds it (IP_MULTICAST_ALL)");
	got(s, g, NULL);
	sluice_close(ST(s), b);
	sluice_close(ST(s), g);
	send_to(s, "239.1.2.3", 'w');
	tap_ok(fx_counter(s, "udp_rx_noport") >= 1, "closing leaves the group: the next is dropped");
	send_to(s, "10.0.0.1", 'u');
	tag = 0;
	tap_ok((got(s, a, &tag) || got(s, c, &tag)) && tag == 'u',
	       "unicast to the port still arrives (at one socket of the port)");
	sluice_close(ST(s), a);
	sluice_close(ST(s), c);
	sluice_close(ST(s), other);
	fx_destroy(s);
}

static void test_tcp_refuses_multicast(void)
{
	struct sl_stack *s = fx_stack("mc-tcp", "10.0.0.1", &cap);
	uint8_t pkt[64], syn[20] = { 0x9c, 0x40, PORT >> 8, PORT & 0xff, 0, 0, 0, 1, 0, 0, 0, 0,
				     0x50, 0x02, 0x40, 0x00, 0, 0, 0, 0 };
	struct sockaddr_in a = fx_addr("0.0.0.0", PORT);
	int l = sluice_socket(ST(s), SLUICE_SOCK_STREAM | SLUICE_SOCK_NONBLOCK);
	uint64_t drop0 = fx_counter(s, "ip_rx_not_ours");

	sluice_bind(ST(s), l, &a);
	sluice_listen(ST(s), l, 4);
	fx_input(s, pkt, fx_ip(pkt, "10.0.0.2", "239.1.2.3", IPPROTO_TCP, syn, sizeof(syn)));
	tap_eq(fx_counter(s, "ip_rx_not_ours") - drop0, 1, "a TCP SYN to a group is not taken in");
	tap_eq(cap.n, 0, "and nothing is sent back");
	sluice_close(ST(s), l);
	fx_destroy(s);
}

static int getint(struct sl_stack *s, int sd, int name)
{
	int v = -100;
	unsigned int len = sizeof(v);

	sluice_getsockopt(ST(s), sd, IPPROTO_IP, name, &v, &len);
	return v;
}

/* The TTL of captured frame i (an IPv4 packet). */
static int cap_ttl(unsigned int i)
{
	return i < cap.n ? ((const struct sl_ip *)cap.frame[i])->ttl : -1;
}

static void test_group_send(void)
{
	struct sl_stack *s = fx_stack("mcsend", "10.0.0.1", &cap);
	struct sockaddr_in g = fx_addr("239.1.2.3", PORT);
	int m = udp_on(s, "0.0.0.0"), tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM), v;
	unsigned char c = 9;
	struct in_addr ifa;
	unsigned int len = sizeof(ifa);
	uint32_t group;
	char tag = 0;

	inet_pton(AF_INET, "239.1.2.3", &group);
	tap_eq(join(s, m, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn)), 0,
	       "a member joins 239.1.2.3");
	tap_eq(getint(s, tx, IP_MULTICAST_TTL), 1, "IP_MULTICAST_TTL is 1 by default");
	tap_eq(getint(s, tx, IP_MULTICAST_LOOP), 1, "IP_MULTICAST_LOOP is on by default");
	tap_eq(sluice_sendto(ST(s), tx, "a", 1, 0, &g), 1, "a datagram to the group");
	tap_ok(cap.n == 1 && cap.nh[0] == group && cap_ttl(0) == 1,
	       "goes to the link, the group its next hop, TTL 1");
	tap_ok(got(s, m, &tag) && tag == 'a', "and the member in the stack gets a copy");
	tap_eq(fx_counter(s, "udp_mc_looped"), 1, "counted in udp_mc_looped");

	v = 7;
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_TTL, &v, sizeof(v)), 0,
	       "IP_MULTICAST_TTL 7");
	sluice_sendto(ST(s), tx, "b", 1, 0, &g);
	tap_eq(cap_ttl(1), 7, "the next datagram has TTL 7");
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_TTL, &c, 1), 0,
	       "a one-byte IP_MULTICAST_TTL is taken too");
	tap_eq(getint(s, tx, IP_MULTICAST_TTL), 9, "and reads back");
	v = -1;
	sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_TTL, &v, sizeof(v));
	tap_eq(getint(s, tx, IP_MULTICAST_TTL), 1, "-1 is the default again");
	v = 256;
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_TTL, &v, sizeof(v)), -EINVAL,
	       "256: EINVAL");
	got(s, m, NULL);

	v = 0;
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_LOOP, &v, sizeof(v)), 0,
	       "IP_MULTICAST_LOOP off");
	sluice_sendto(ST(s), tx, "c", 1, 0, &g);
	tap_ok(cap.n == 3 && !got(s, m, NULL), "the datagram goes out and the member gets none");
	tap_eq(getint(s, tx, IP_MULTICAST_LOOP), 0, "and it reads back off");

	ifa.s_addr = s->lib->ip_addr;
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa)), 0,
	       "IP_MULTICAST_IF: the stack's address");
	ifa.s_addr = 0;
	sluice_getsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_IF, &ifa, &len);
	tap_eq(ifa.s_addr, s->lib->ip_addr, "reads back");
	inet_pton(AF_INET, "10.0.0.77", &ifa);
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa)),
	       -EADDRNOTAVAIL, "another address: EADDRNOTAVAIL");
	tap_eq(sluice_setsockopt(ST(s), tx, IPPROTO_IP, IP_MULTICAST_IF, &ifa, 2), -EINVAL,
	       "too short: EINVAL");
	sluice_close(ST(s), tx);
	sluice_close(ST(s), m);
	fx_destroy(s);

	/* A stack with no link: only its own members hear the group. */
	s = fx_stack("mcnolink", "10.0.0.1", NULL);
	m = udp_on(s, "0.0.0.0");
	tx = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
	join(s, m, IP_ADD_MEMBERSHIP, "239.1.2.3", sizeof(struct ip_mreqn));
	tap_eq(sluice_sendto(ST(s), tx, "d", 1, 0, &g), 1, "no link: the send succeeds");
	tap_ok(got(s, m, &tag) && tag == 'd', "and the member gets it");
	sluice_close(ST(s), tx);
	sluice_close(ST(s), m);
	fx_destroy(s);
}

int main(void)
{
	test_membership_rules();
	test_group_delivery();
	test_tcp_refuses_multicast();
	test_group_send();
	return tap_done();
}
