// SPDX-License-Identifier: BSD-2-Clause
/*
 * Paths whose cost must not grow with the sockets a stack holds (issue
 * 23): a listener's close visits its own unaccepted children (their list
 * through the slots), and a UDP datagram to a broadcast or multicast
 * address the sockets bound to its port, not every slot.  Each is run
 * beside 10 and beside 10,000 idle sockets: what it must do (every child
 * reset and freed, every socket on the port and in the group given a
 * copy, no other), and the sockets it looked at (counter sock_walked),
 * the same both times.
 *
 *   peer 10.0.0.2 --SYN/ACK, datagrams--> stack 10.0.0.1 (captured)
 */
#include "tcp_fixture.h"

#define MANY	10000
#define IDLE0	20000	/* the idle sockets' ports: IDLE0 + i */

/* n UDP sockets bound to ports of their own: in the table, never asked. */
static void idle_udp(uint32_t n, uint32_t *out)
{
	for (uint32_t i = 0; i < n; i++) {
		struct sl_sock *so = sl_sock_alloc(T.s, SL_SOCK_UDP);

		if (!so || sl_sock_bind(T.s, so, 0, htons((uint16_t)(IDLE0 + i)))) {
			printf("Bail out! idle socket %u\n", i);
			exit(1);
		}
		out[i] = so->idx;
	}
}

static void free_idle(const uint32_t *idx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		sl_sock_free(T.s, sl_sock(T.s, idx[i]));
}

/* A child of listener lso from peer port pport: handshake done (in the
 * accept queue) or SYN only (SYN-RECEIVED). */
static struct sl_sock *child(struct sl_sock *lso, uint16_t pport, bool done)
{
	struct tf_seg g;

	tf_clear();
	tf_seg_full(pport, ntohs(lso->lport), TH_SYN_, 1000, 0, 65535, NULL, NULL, 0);
	g = tf_last();
	if (!g.valid || g.flags != (TH_SYN_ | TH_ACK_))
		return NULL;
	if (done)
		tf_seg_full(pport, ntohs(lso->lport), TH_ACK_, 1001, g.seq + 1, 65535, NULL,
			    NULL, 0);
	return sl_sock_lookup_conn(T.s, SL_SOCK_TCP, T.us, lso->lport, T.peer, htons(pport));
}

static unsigned int rsts(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < T.n; i++)
		if (tf_parse(i).flags & TH_RST_)
			n++;
	return n;
}

/* Returns the sockets the close looked at. */
static uint64_t listener_close(uint32_t idle)
{
	static uint32_t idx[MANY];
	struct sl_sock *l, *l2, *acc = NULL, *kids[5], *other[2];
	uint32_t used, gen[5];
	uint64_t walked;
	bool all, gone = true;

	tf_init(idle > 100 ? "wcl-many" : "wcl-few");
	idle_udp(idle, idx);
	l = tf_listener(80, 16);
	l2 = tf_listener(81, 16);
	/* Three in the accept queue, two half open, one accepted; the other
	 * listener's two stay. */
	acc = child(l, 6100, true);
	all = acc && !sl_tcp_accept(T.s, l, &acc);
	for (int i = 0; i < 5; i++) {
		kids[i] = child(l, (uint16_t)(6000 + i), i < 3);
		all &= kids[i] != NULL;
		if (kids[i])
			gen[i] = kids[i]->kp.gen;
	}
	other[0] = child(l2, 7000, true);
	other[1] = child(l2, 7001, false);
	all &= other[0] && other[1];
	tap_ok(all, "[%u idle] five children of the listener (3 queued, 2 half open), "
	       "one accepted, two of another listener", idle);
	if (!all)
		exit(1);
	tap_ok(l->tcp.acc_len == 3, "[%u idle] three in its accept queue (%u)", idle, l->tcp.acc_len);
	used = T.s->r->sock_used;
	walked = tf_counter(SL_C_sock_walked);
	tf_clear();
	sl_tcp_close(T.s, l, tf_now_us);
	walked = tf_counter(SL_C_sock_walked) - walked;
	for (int i = 0; i < 5; i++)
		gone &= kids[i]->type == SL_SOCK_FREE || kids[i]->kp.gen != gen[i];
	tap_ok(gone, "[%u idle] every unaccepted child freed", idle);
	tap_ok(rsts() == 5, "[%u idle] each reset (RST to the peer), as Linux (%u)", idle, rsts());
	tap_ok(T.s->r->sock_used == used - 6, "[%u idle] the listener's slot and its five children's back", idle);
	tap_ok(acc->type == SL_SOCK_TCP && acc->state == SL_TCP_ESTABLISHED,
	       "[%u idle] the accepted connection is left alone", idle);
	tap_ok(other[0]->type == SL_SOCK_TCP && other[1]->type == SL_SOCK_TCP &&
	       l2->tcp.acc_len == 1 && l2->tcp.kid_head != SLUICE_IDX_NONE,
	       "[%u idle] the other listener's children are left alone", idle);
	free_idle(idx, idle);
	tf_finish();
	return walked;
}

/* A datagram from 10.0.0.2:40000 to dst:port with one byte. */
static void udp_in(const char *dst, uint16_t port)
{
	uint32_t idx = sl_buf_alloc(T.s);
	uint8_t *p = sl_buf_data(T.s, idx);
	struct sl_ip *ip = (struct sl_ip *)p;
	uint8_t *u = p + sizeof(*ip);

	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tot_len = htons(sizeof(*ip) + 9);
	ip->ttl = 64;
	ip->proto = IPPROTO_UDP;
	ip->saddr = T.peer;
	inet_pton(AF_INET, dst, &ip->daddr);
	ip->csum = sl_ip_csum(ip);
	u[0] = 40000 >> 8; u[1] = 40000 & 0xff; u[2] = port >> 8; u[3] = port & 0xff;
	u[4] = 0; u[5] = 9; u[6] = u[7] = 0; u[8] = 'x';	/* no checksum */
	sl_buf(T.s, idx)->len = sizeof(*ip) + 9;
	sl_ip_input(T.s, idx);
}

static struct sl_sock *udp_at(const char *addr, uint16_t port)
{
	struct sl_sock *so = sl_sock_alloc(T.s, SL_SOCK_UDP);
	uint32_t a;

	inet_pton(AF_INET, addr, &a);
	so->flags |= SL_SF_REUSEADDR;
	if (sl_sock_bind(T.s, so, a, htons(port))) {
		printf("Bail out! bind %s:%u\n", addr, port);
		exit(1);
	}
	return so;
}

static uint32_t group(const char *g)
{
	uint32_t a;

	inet_pton(AF_INET, g, &a);
	return a;
}

/* Who has a datagram queued, as a string of letters; each taken away. */
static void who(struct sl_sock **so, const char *names, char *out)
{
	for (; *names; names++, so++) {
		if ((*so)->rxq_count) {
			*out++ = *names;
			sl_buf_free_chain(T.s, (*so)->rxq_head);
			(*so)->rxq_head = (*so)->rxq_tail = SLUICE_IDX_NONE;
			(*so)->rxq_count = (*so)->rxq_bytes = 0;
		}
	}
	*out = 0;
}

/* Returns the sockets the three datagrams looked at. */
static uint64_t udp_many(uint32_t idle)
{
	static uint32_t idx[MANY];
	/* a, b on 0.0.0.0:5353, a joined; g bound to the group's address,
	 * joined; u on the stack's own address; c connected to the peer;
	 * o on another port, joined. */
	struct sl_sock *so[6];
	const char *names = "abguco";
	char got[8];
	uint64_t walked;

	tf_init(idle > 100 ? "wcu-many" : "wcu-few");
	idle_udp(idle, idx);
	so[0] = udp_at("0.0.0.0", 5353);
	so[1] = udp_at("0.0.0.0", 5353);
	so[2] = udp_at("239.1.2.3", 5353);
	so[3] = udp_at(TF_US, 5353);
	so[4] = udp_at("0.0.0.0", 5353);
	sl_sock_unhash(T.s, so[4]);
	so[4]->raddr = T.peer;
	so[4]->rport = htons(40000);
	sl_sock_hash(T.s, so[4]);
	so[5] = udp_at("0.0.0.0", 5354);
	sl_udp_mc_join(T.s, so[0], group("239.1.2.3"), 0);
	sl_udp_mc_join(T.s, so[2], group("239.1.2.3"), 0);
	sl_udp_mc_join(T.s, so[5], group("239.1.2.3"), 0);
	walked = tf_counter(SL_C_sock_walked);
	udp_in("239.1.2.3", 5353);
	who(so, names, got);
	tap_ok(!strcmp(got, "abg"), "[%u idle] (%s) to the group: the member, the socket on the port "
		"(IP_MULTICAST_ALL), the one bound to the group; not the others", idle, got);
	udp_in("10.0.0.255", 5353);
	who(so, names, got);
	tap_ok(!strcmp(got, "ab"), "[%u idle] (%s) to the subnet's broadcast: the two on 0.0.0.0",
	       idle, got);
	udp_in("255.255.255.255", 5353);
	who(so, names, got);
	tap_ok(!strcmp(got, "ab"), "[%u idle] (%s) to 255.255.255.255: the two on 0.0.0.0", idle, got);
	walked = tf_counter(SL_C_sock_walked) - walked;
	sl_udp_mc_drop(T.s, so[0], group("239.1.2.3"), 0);
	sl_udp_mc_drop(T.s, so[2], group("239.1.2.3"), 0);
	udp_in("239.1.2.3", 5353);
	who(so, names, got);
	tap_ok(!strcmp(got, "abg"), "[%u idle] (%s) after a and g left, they and b still get it "
	       "while one on another port holds the group (IP_MULTICAST_ALL)", idle, got);
	sl_udp_mc_drop(T.s, so[5], group("239.1.2.3"), 0);
	udp_in("239.1.2.3", 5353);
	who(so, names, got);
	tap_ok(!got[0], "[%u idle] (%s) once nobody holds the group: nobody", idle, got);
	for (int i = 0; i < 6; i++)
		sl_sock_free(T.s, so[i]);
	free_idle(idx, idle);
	tf_finish();
	return walked;
}

/*
 * More distinct groups than the region counts (SL_MC_GROUPS): the rest are
 * found by a walk, and a group's datagram still reaches its members only.
 */
static void many_groups(void)
{
	struct sl_sock *so[SL_MC_GROUPS / SL_UDP_MC_MAX + 2], *plain;
	unsigned int n = sizeof(so) / sizeof(so[0]), joined = 0;
	char g[32];

	tf_max_sockets = 64;
	tf_init("wcg");
	for (unsigned int i = 0; i < n; i++) {
		so[i] = udp_at("0.0.0.0", (uint16_t)(6000 + i));
		for (unsigned int k = 0; k < SL_UDP_MC_MAX; k++) {
			snprintf(g, sizeof(g), "239.2.%u.%u", i, k);
			joined += !sl_udp_mc_join(T.s, so[i], group(g), 0);
		}
	}
	plain = udp_at("0.0.0.0", 6000 + n - 1);
	tap_ok(joined == n * SL_UDP_MC_MAX, "%u groups joined (the region counts %u)", joined,
	       SL_MC_GROUPS);
	tap_eq(T.s->lib->mc_over, n * SL_UDP_MC_MAX - SL_MC_GROUPS, "the rest counted as past it");
	snprintf(g, sizeof(g), "239.2.%u.%u", n - 1, SL_UDP_MC_MAX - 1);
	udp_in(g, (uint16_t)(6000 + n - 1));
	tap_ok(so[n - 1]->rxq_count == 1 && plain->rxq_count == 1,
	       "a group past the table: its member and the socket on its port get it");
	sl_udp_mc_drop(T.s, so[n - 1], group(g), 0);
	udp_in(g, (uint16_t)(6000 + n - 1));
	tap_ok(so[n - 1]->rxq_count == 1 && plain->rxq_count == 1,
	       "left: nobody holds it, nobody gets the next");
	sl_sock_free(T.s, plain);
	for (unsigned int i = 0; i < n; i++)
		sl_sock_free(T.s, so[i]);
	tap_eq(T.s->lib->mc_over, 0, "all left: none counted past the table");
	joined = 0;
	for (unsigned int i = 0; i < SL_MC_GROUPS; i++)
		joined += T.s->lib->mc_groups[i].n;
	tap_eq(joined, 0, "and none in it");
	tf_finish();
}

/*
 * A holder that died half way through linking or unlinking a child, or a
 * membership, leaves the list or the count wrong: recovery builds both
 * again from each socket's parent_idx and groups.
 */
static void recovered(void)
{
	struct sl_sock *l, *kids[3], *u;
	uint32_t used, n = 0, guard = 0;
	struct sl_mc_group *g = NULL;

	tf_max_sockets = 64;
	tf_init("wcr");
	l = tf_listener(80, 16);
	for (int i = 0; i < 3; i++)
		kids[i] = child(l, (uint16_t)(6000 + i), i < 2);
	u = udp_at("0.0.0.0", 5353);
	sl_udp_mc_join(T.s, u, group("239.1.2.3"), 0);
	/* The scribbles: a list cut after its first child, a count gone. */
	kids[2]->tcp.kid_next = SLUICE_IDX_NONE;
	memset(T.s->lib->mc_groups, 0, sizeof(T.s->lib->mc_groups));
	T.s->lib->mc_over = 7;
	/* No socket named as being changed (recovery would reset it). */
	T.s->lib->busy[0] = T.s->lib->busy[1] = 0;
	tap_ok(!sl_stack_recover(T.s, 0), "recovery ran");
	for (uint32_t i = l->tcp.kid_head; sl_sock_next(T.s, i, &guard); i = sl_sock(T.s, i)->tcp.kid_next)
		n++;
	tap_ok(n == 3, "the listener's list holds its three children again (%u)", n);
	for (unsigned int i = 0; i < SL_MC_GROUPS; i++)
		if (T.s->lib->mc_groups[i].n)
			g = &T.s->lib->mc_groups[i];
	tap_ok(g && g->group == group("239.1.2.3") && g->n == 1 && !T.s->lib->mc_over,
	       "the group's count is one membership again, none past the table");
	used = T.s->r->sock_used;
	tf_clear();
	sl_tcp_close(T.s, l, tf_now_us);
	tap_ok(rsts() == 3 && T.s->r->sock_used == used - 4,
	       "closing the listener resets and frees all three (%u resets)", rsts());
	sl_sock_free(T.s, u);
	tf_finish();
}

int main(void)
{
	uint64_t few, many;

	tf_max_sockets = MANY + 64;
	few = listener_close(10);
	many = listener_close(MANY);
	tap_ok(few == many && few <= 5,
	       "a listener's close looks at its children only: %llu sockets beside 10 idle, "
	       "%llu beside %u", (unsigned long long)few, (unsigned long long)many, MANY);
	few = udp_many(10);
	many = udp_many(MANY);
	tap_ok(few == many && few <= 3 * 16,
	       "datagrams to many look at the port's sockets only: %llu sockets beside 10 "
	       "idle, %llu beside %u", (unsigned long long)few, (unsigned long long)many, MANY);
	many_groups();
	recovered();
	return tap_done();
}
