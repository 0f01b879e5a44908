// SPDX-License-Identifier: BSD-2-Clause
/*
 * sluice tcpdump: a stack's packets, on its link and on its own loopback,
 * as the stack sends and receives them.  The tool makes a ring in
 * /dev/shm (struct sl_cap_ring, lib/core/core.h), names itself in the
 * region (cap_pid) and sets cap_on; the stack's lock holders copy each
 * packet into the ring (lib/core/capture.c) and the tool reads them out,
 * filters them with libpcap's BPF, and writes a pcap file or prints a
 * line a packet.  Only the tool links libpcap; the library does not.
 *
 * Link types, as the kernel's tcpdump gives them: `-i any` (the default)
 * is LINUX_SLL2, the format libpcap uses for its own "any" device: each
 * packet with its direction, its interface, its protocol and sender's
 * link address, so that the loopback's and the link's packets, ARP
 * among them, share one file.  `-i LINK` is EN10MB on a link that
 * builds Ethernet frames (TAP: whole frames, ARP included) and RAW
 * (the IP packet) on a link whose frames the kernel or the device
 * builds (kring, IPoIB); `-i lo` is EN10MB with zero addresses, as the
 * kernel's loopback frames are.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "core/wire.h"
#include "cmds.h"

#define RING_BYTES	(4u << 20)
#define SNAPLEN		65535
#define SLL2_LEN	20		/* struct sll2_header: libpcap's pcap/sll.h */
#define ETH_LEN		14

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage_tcpdump(FILE *f)
{
	fprintf(f, "usage: sluice tcpdump STACK [-i any|lo|LINK] [-w FILE] [-c COUNT] "
		   "[-s SNAPLEN] [EXPRESSION]\n");
}

/* The name of the stack's link for -i and the printed lines. */
static void link_name(struct sl_stack *s, char *buf, size_t len)
{
	char ifn[IF_NAMESIZE];

	memcpy(buf, s->lib->tap_name, len < sizeof(s->lib->tap_name) ? len : sizeof(s->lib->tap_name));
	buf[len - 1] = '\0';
	if (buf[0])
		return;
	if (s->ifindex && if_indextoname(s->ifindex, ifn)) {
		snprintf(buf, len, "%s", ifn);
		return;
	}
	snprintf(buf, len, "link");
}

/* Claim the stack's capture: ours, or a dead tool's. */
static int claim(struct sl_stack *s, int32_t self)
{
	int32_t old = 0;

	if (sl_cmpxchg(&s->lib->cap_pid, &old, self))
		return 0;
	if (old > 0 && kill(old, 0) && errno == ESRCH && sl_cmpxchg(&s->lib->cap_pid, &old, self)) {
		char path[96];

		/* The dead tool's ring, left behind. */
		if (!sl_cap_path(s->name, old, path, sizeof(path)))
			unlink(path);
		return 0;
	}
	return old;
}

static void print_tcp(const uint8_t *p, unsigned int len, unsigned int paylen)
{
	char fl[16];
	unsigned int n = 0;
	uint8_t f = p[13];

	/* tcpdump's order: S, F, R, P, then . for ACK. */
	if (f & 0x02)
		fl[n++] = 'S';
	if (f & 0x01)
		fl[n++] = 'F';
	if (f & 0x04)
		fl[n++] = 'R';
	if (f & 0x08)
		fl[n++] = 'P';
	if (f & 0x20)
		fl[n++] = 'U';
	if (f & 0x40)
		fl[n++] = 'E';
	if (f & 0x80)
		fl[n++] = 'W';
	if (f & 0x10)
		fl[n++] = '.';
	if (!n)
		fl[n++] = 'n', fl[n++] = 'o', fl[n++] = 'n', fl[n++] = 'e';
	fl[n] = '\0';
	printf("Flags [%s], seq %u", fl, ntohl(*(const uint32_t *)(const void *)(p + 4)));
	if (paylen)
		printf(":%u", ntohl(*(const uint32_t *)(const void *)(p + 4)) + paylen);
	if (f & 0x10)
		printf(", ack %u", ntohl(*(const uint32_t *)(const void *)(p + 8)));
	printf(", win %u, length %u\n", (unsigned int)ntohs(*(const uint16_t *)(const void *)(p + 14)),
	       paylen);
	(void)len;
}

/* An IPv6 packet's line: addresses, the first next header, ICMPv6's
 * type by name for echo and Neighbour Discovery (extension headers are
 * named, not followed). */
static void print_ip6(const struct sl_cap_rec *rec, const uint8_t *p)
{
	const struct sl_ip6 *ip6 = (const void *)p;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	unsigned int plen = ntohs(ip6->plen);

	inet_ntop(AF_INET6, ip6->saddr, a, sizeof(a));
	inet_ntop(AF_INET6, ip6->daddr, b, sizeof(b));
	if (ip6->nxt == IPPROTO_ICMPV6_ && rec->caplen >= sizeof(*ip6) + 4) {
		uint8_t t = p[sizeof(*ip6)];

		printf("IP6 %s > %s: ICMP6, %s, length %u\n", a, b,
		       t == 128 ? "echo request" : t == 129 ? "echo reply" :
		       t == 133 ? "router solicitation" : t == 135 ? "neighbor solicitation" : t == 136 ? "neighbor advertisement" :
		       t == 1 ? "destination unreachable" : t == 4 ? "parameter problem" : "type",
		       plen);
	} else if ((ip6->nxt == 6 || ip6->nxt == 17) && rec->caplen >= sizeof(*ip6) + 4) {
		const uint8_t *t = p + sizeof(*ip6);

		printf("IP6 %s.%u > %s.%u: %s, length %u\n", a,
		       ntohs(*(const uint16_t *)(const void *)t), b,
		       ntohs(*(const uint16_t *)(const void *)(t + 2)),
		       ip6->nxt == 6 ? "tcp" : "UDP", plen);
	} else {
		printf("IP6 %s > %s: next-header %u, length %u\n", a, b, ip6->nxt, plen);
	}
}

/* An ARP packet's line, as tcpdump -n prints Ethernet/IPv4 ARP. */
static void print_arp(const uint8_t *p, unsigned int caplen, unsigned int len)
{
	const struct sl_arp *a = (const void *)p;
	char spa[INET_ADDRSTRLEN], tpa[INET_ADDRSTRLEN];

	if (caplen < sizeof(*a) || a->htype != htons(1) || a->ptype != htons(ETHERTYPE_IP_) ||
	    a->hlen != 6 || a->plen != 4) {
		printf("ARP, length %u\n", len);
		return;
	}
	inet_ntop(AF_INET, &a->spa, spa, sizeof(spa));
	inet_ntop(AF_INET, &a->tpa, tpa, sizeof(tpa));
	if (a->op == htons(1))
		printf("ARP, Request who-has %s tell %s, length %u\n", tpa, spa, len);
	else if (a->op == htons(2))
		printf("ARP, Reply %s is-at %02x:%02x:%02x:%02x:%02x:%02x, length %u\n", spa,
		       a->sha[0], a->sha[1], a->sha[2], a->sha[3], a->sha[4], a->sha[5], len);
	else
		printf("ARP, op %u, length %u\n", ntohs(a->op), len);
}

/* One line a packet, in the manner of tcpdump's. */
static void print_pkt(const struct sl_cap_rec *rec0, const uint8_t *p, const char *ifname)
{
	struct sl_cap_rec r = *rec0, *rec = &r;
	time_t secs = (time_t)(rec->ts_ns / 1000000000u);
	const struct sl_ip *ip = (const void *)p;
	unsigned int hlen, tot, plen;
	char a[INET_ADDRSTRLEN], b[INET_ADDRSTRLEN];
	struct tm tm;

	localtime_r(&secs, &tm);
	printf("%02d:%02d:%02d.%06u %s %s ", tm.tm_hour, tm.tm_min, tm.tm_sec,
	       (unsigned int)(rec->ts_ns % 1000000000u / 1000u), ifname,
	       rec->flags & SL_CAP_OUT ? "Out" : "In ");
	if (rec->flags & SL_CAP_ETH) {
		uint16_t type;

		if (rec->caplen < ETH_LEN) {
			printf("[|ether], length %u\n", rec->origlen);
			return;
		}
		type = (uint16_t)(p[12] << 8 | p[13]);
		p += ETH_LEN;
		ip = (const void *)p;
		rec->caplen -= ETH_LEN;
		rec->origlen -= ETH_LEN;
		if (type == ETHERTYPE_ARP_) {
			print_arp(p, rec->caplen, rec->origlen);
			return;
		}
		if (type != ETHERTYPE_IP_ && type != ETHERTYPE_IPV6_) {
			printf("ethertype 0x%04x, length %u\n", type, rec->origlen + ETH_LEN);
			return;
		}
	}
	if (rec->caplen >= sizeof(struct sl_ip6) && (ip->ver_ihl >> 4) == 6) {
		print_ip6(rec, p);
		return;
	}
	if (rec->caplen < sizeof(*ip) || (ip->ver_ihl >> 4) != 4) {
		printf("not IPv4, length %u\n", rec->origlen);
		return;
	}
	hlen = (ip->ver_ihl & 0xfu) * 4;
	tot = ntohs(ip->tot_len);
	inet_ntop(AF_INET, &ip->saddr, a, sizeof(a));
	inet_ntop(AF_INET, &ip->daddr, b, sizeof(b));
	plen = tot > hlen ? tot - hlen : 0;
	if (ip->proto == 6 && rec->caplen >= hlen + 20) {
		const uint8_t *t = p + hlen;
		unsigned int doff = (t[12] >> 4) * 4u;

		printf("IP %s.%u > %s.%u: ", a, ntohs(*(const uint16_t *)(const void *)t), b,
		       ntohs(*(const uint16_t *)(const void *)(t + 2)));
		print_tcp(t, rec->caplen - hlen, plen > doff ? plen - doff : 0);
	} else if (ip->proto == 17 && rec->caplen >= hlen + 8) {
		const uint8_t *u = p + hlen;

		printf("IP %s.%u > %s.%u: UDP, length %u\n", a,
		       ntohs(*(const uint16_t *)(const void *)u), b,
		       ntohs(*(const uint16_t *)(const void *)(u + 2)), plen >= 8 ? plen - 8 : 0);
	} else if (ip->proto == 1 && rec->caplen >= hlen + 8) {
		const uint8_t *c = p + hlen;

		printf("IP %s > %s: ICMP %s, length %u\n", a, b,
		       c[0] == 8 ? "echo request" : c[0] == 0 ? "echo reply" : "type", plen);
	} else {
		printf("IP %s > %s: ip-proto-%u, length %u\n", a, b, ip->proto, plen);
	}
}

struct cap {
	struct sl_stack *s;
	struct sl_cap_ring *ring;
	size_t len;
	char path[96];
	int32_t self;
};

static int cap_start(struct cap *c, struct sl_stack *s, uint32_t snaplen)
{
	struct stat rst;
	mode_t mode = 0600;
	char rpath[96];
	int32_t held;
	int fd;

	c->s = s;
	c->self = (int32_t)getpid();
	c->len = sizeof(*c->ring) + RING_BYTES;
	if (sl_cap_path(s->name, c->self, c->path, sizeof(c->path)))
		return -ENAMETOOLONG;
	/* Readable and writable by whoever may use the stack itself. */
	if (!s->module_backed && !sl_region_path(s->name, rpath, sizeof(rpath)) &&
	    !stat(rpath, &rst))
		mode = rst.st_mode & 0666;
	unlink(c->path);
	fd = open(c->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) || ftruncate(fd, (off_t)c->len)) {
		int ret = -errno;

		close(fd);
		unlink(c->path);
		return ret;
	}
	c->ring = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (c->ring == MAP_FAILED) {
		unlink(c->path);
		return -ENOMEM;
	}
	c->ring->size = RING_BYTES;
	c->ring->snaplen = snaplen;
	sl_store_release(&c->ring->magic, SL_CAP_MAGIC);
	held = claim(s, c->self);
	if (held) {
		fprintf(stderr, "sluice tcpdump: stack %s is being captured by process %d\n",
			s->name, (int)held);
		munmap(c->ring, c->len);
		unlink(c->path);
		return -EBUSY;
	}
	sl_store_release(&s->lib->cap_on, (uint16_t)1);
	return 0;
}

static void cap_stop(struct cap *c)
{
	int32_t self = c->self;

	sl_store_release(&c->s->lib->cap_on, (uint16_t)0);
	(void)sl_cmpxchg(&c->s->lib->cap_pid, &self, 0);
	unlink(c->path);
}

/* What the file says about the stack's link in LINUX_SLL2 records. */
struct link_id {
	uint32_t ifindex;
	uint16_t hatype;		/* ARPHRD_* */
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * Packet pkt of record rec as link type dlt carries it: at *out (pkt
 * itself, or buf, which has room for SLL2_LEN + the record), *caplen and
 * *len set.  False if it has no place there (a frame that is not IP in
 * a RAW file).
 */
static bool as_link(int dlt, const struct link_id *li, const struct sl_cap_rec *rec,
		    const uint8_t *pkt, uint8_t *buf, const uint8_t **out, uint32_t *caplen,
		    uint32_t *len)
{
	bool eth = rec->flags & SL_CAP_ETH, lo = rec->flags & SL_CAP_LO;
	uint32_t hdr = eth ? ETH_LEN : 0;
	uint16_t proto;

	if (eth && rec->caplen < ETH_LEN)
		return false;
	proto = eth ? (uint16_t)(pkt[12] << 8 | pkt[13]) :
		rec->caplen && (pkt[0] >> 4) == 6 ? ETHERTYPE_IPV6_ : ETHERTYPE_IP_;
	if (dlt == DLT_RAW) {
		if (proto != ETHERTYPE_IP_ && proto != ETHERTYPE_IPV6_)
			return false;
		*out = pkt + hdr;
		*caplen = rec->caplen - hdr;
		*len = rec->origlen - hdr;
		return true;
	}
	if (dlt == DLT_EN10MB) {
		if (eth) {
			*out = pkt;
			*caplen = rec->caplen;
			*len = rec->origlen;
			return true;
		}
		/* An IP packet on a framing link's file: addresses unknown. */
		memset(buf, 0, 12);
		put16(buf + 12, proto);
		memcpy(buf + ETH_LEN, pkt, rec->caplen);
		*out = buf;
		*caplen = rec->caplen + ETH_LEN;
		*len = rec->origlen + ETH_LEN;
		return true;
	}
	/* LINUX_SLL2: protocol, reserved, interface index, ARPHRD type,
	 * packet type (PACKET_* of linux/if_packet.h), address length and
	 * the sender's link address, all in network order. */
	memset(buf, 0, SLL2_LEN);
	put16(buf, proto);
	put16(buf + 4, (uint16_t)((lo ? 1 : li->ifindex) >> 16));
	put16(buf + 6, (uint16_t)(lo ? 1 : li->ifindex));
	put16(buf + 8, lo ? 772 /* ARPHRD_LOOPBACK */ : eth ? 1 /* ARPHRD_ETHER */ : li->hatype);
	if (rec->flags & SL_CAP_OUT)
		buf[10] = 4;				/* PACKET_OUTGOING */
	else if (eth && (pkt[0] & 1))
		buf[10] = memcmp(pkt, "\xff\xff\xff\xff\xff\xff", 6) ? 2 : 1;
	else
		buf[10] = 0;				/* PACKET_HOST */
	if (eth || lo) {
		buf[11] = 6;
		if (eth)
			memcpy(buf + 12, pkt + 6, 6);
	}
	memcpy(buf + SLL2_LEN, pkt + hdr, rec->caplen - hdr);
	*out = buf;
	*caplen = SLL2_LEN + rec->caplen - hdr;
	*len = SLL2_LEN + rec->origlen - hdr;
	return true;
}

/* The link's index and type for LINUX_SLL2: the module's device, or the
 * TAP device as this process's namespace sees it (2 if it does not). */
static void link_id_of(struct sl_stack *s, const char *lname, struct link_id *li)
{
	char path[80], line[32];

	li->ifindex = s->ifindex ? s->ifindex : if_nametoindex(lname);
	if (!li->ifindex)
		li->ifindex = 2;
	li->hatype = 0xfffe;	/* ARPHRD_NONE: not known */
	if (s->lib->tap_name[0]) {
		li->hatype = 1;
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s/type", lname);
	if (!read_first_line(path, line, sizeof(line)))
		li->hatype = (uint16_t)strtoul(line, NULL, 10);
}

int cmd_tcpdump(int argc, char **argv)
{
	const char *name = NULL, *iface = "any", *wfile = NULL;
	char expr[2048] = "", lname[32];
	long count = -1, got = 0, seen = 0;
	uint32_t snaplen = SNAPLEN;
	struct bpf_program prog;
	struct sluice_stack *st;
	pcap_dumper_t *dump = NULL;
	struct sigaction sa;
	struct link_id li;
	struct cap c;
	pcap_t *dead;
	uint8_t *buf;
	int ret, i, dlt, want = 0;	/* 0 any, 1 lo, 2 the link */

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_tcpdump(stdout);
			return 0;
		}
		if ((!strcmp(a, "-i") || !strcmp(a, "-w") || !strcmp(a, "-c") ||
		     !strcmp(a, "-s")) && i + 1 < argc) {
			const char *v = argv[++i];
			char *end;

			if (a[1] == 'i') {
				iface = v;
			} else if (a[1] == 'w') {
				wfile = v;
			} else {
				long n = strtol(v, &end, 10);

				if (*end || n <= 0 || (a[1] == 's' && n > SNAPLEN)) {
					usage_tcpdump(stderr);
					return 2;
				}
				if (a[1] == 'c')
					count = n;
				else
					snaplen = (uint32_t)n;
			}
		} else if (a[0] == '-' && a[1]) {
			usage_tcpdump(stderr);
			return 2;
		} else if (!name) {
			name = a;
		} else {
			size_t l = strlen(expr);

			if (l + strlen(a) + 2 > sizeof(expr)) {
				fprintf(stderr, "sluice tcpdump: expression too long\n");
				return 2;
			}
			snprintf(expr + l, sizeof(expr) - l, "%s%s", l ? " " : "", a);
		}
	}
	if (!name) {
		usage_tcpdump(stderr);
		return 2;
	}
	ret = sl_stack_inspect(name, &st);
	if (ret) {
		fprintf(stderr, "sluice tcpdump: stack %s: %s\n", name, strerror(-ret));
		return 1;
	}
	link_name((struct sl_stack *)st, lname, sizeof(lname));
	if (!strcmp(iface, "lo"))
		want = 1;
	else if (!strcmp(iface, lname) || !strcmp(iface, "link"))
		want = 2;
	else if (strcmp(iface, "any")) {
		fprintf(stderr, "sluice tcpdump: stack %s has no link %s (any, lo, %s)\n", name,
			iface, lname);
		return 2;
	}
	link_id_of((struct sl_stack *)st, lname, &li);
	/* lo as the kernel's: Ethernet with zero addresses (as_link()). */
	dlt = want == 0 ? DLT_LINUX_SLL2 :
	      want == 1 || ((struct sl_stack *)st)->lib->tap_name[0] ? DLT_EN10MB : DLT_RAW;
	/* The filter, compiled for the file's link type; the file says the
	 * kernel tcpdump's snapshot length (262144) unless -s was given. */
	dead = pcap_open_dead(dlt, snaplen == SNAPLEN ? 262144 :
			      (int)snaplen + (dlt == DLT_LINUX_SLL2 ? SLL2_LEN : ETH_LEN));
	if (!dead || pcap_compile(dead, &prog, expr, 1, PCAP_NETMASK_UNKNOWN)) {
		fprintf(stderr, "sluice tcpdump: %s\n", dead ? pcap_geterr(dead) : "libpcap");
		return 2;
	}
	buf = malloc(SLL2_LEN + SNAPLEN + ETH_LEN);
	if (!buf) {
		fprintf(stderr, "sluice tcpdump: %s\n", strerror(ENOMEM));
		return 1;
	}
	if (wfile) {
		dump = pcap_dump_open(dead, wfile);
		if (!dump) {
			fprintf(stderr, "sluice tcpdump: %s\n", pcap_geterr(dead));
			return 1;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = cap_start(&c, (struct sl_stack *)st, snaplen);
	if (ret) {
		if (ret != -EBUSY)
			fprintf(stderr, "sluice tcpdump: capture ring: %s\n", strerror(-ret));
		return 1;
	}
	fprintf(stderr, "sluice tcpdump: capturing on stack %s, %s (%s)\n", name, iface,
		expr[0] ? expr : "every packet");
	/* On a signal, what the ring holds still goes out, then it stops. */
	while (count < 0 || got < count) {
		bool last = stop;
		uint64_t tail = c.ring->tail, head = sl_load_acquire(&c.ring->head);
		struct timespec nap = { 0, 2000000 };

		if (tail == head) {
			if (last)
				break;
			/* A copier that found the last tool dead clears cap_on
			 * (capture.c, tool_alive()); if that was as we took
			 * the stack over, the stack is still ours: on again. */
			if (!sl_load_acquire(&c.s->lib->cap_on) &&
			    sl_load_acquire(&c.s->lib->cap_pid) == c.self)
				sl_store_release(&c.s->lib->cap_on, (uint16_t)1);
			if (dump)
				pcap_dump_flush(dump);
			else
				fflush(stdout);
			nanosleep(&nap, NULL);
			continue;
		}
		while (tail != head && (count < 0 || got < count)) {
			uint32_t off = (uint32_t)(tail & (RING_BYTES - 1));
			struct sl_cap_rec rec;
			const uint8_t *pkt = c.ring->data + off + sizeof(rec), *frame;
			struct pcap_pkthdr h;
			int lo;

			memcpy(&rec, c.ring->data + off, sizeof(uint32_t));
			if (!rec.len) {		/* the rest of the ring is empty */
				tail += RING_BYTES - off;
				continue;
			}
			memcpy(&rec, c.ring->data + off, sizeof(rec));
			if (rec.len < sizeof(rec) || rec.len > RING_BYTES - off ||
			    rec.caplen > rec.len - sizeof(rec)) {
				fprintf(stderr, "sluice tcpdump: ring damaged at %llu\n",
					(unsigned long long)tail);
				count = got;	/* stop */
				break;
			}
			tail += rec.len;
			seen++;
			lo = !!(rec.flags & SL_CAP_LO);
			if ((want == 1 && !lo) || (want == 2 && lo))
				continue;
			h.ts.tv_sec = (time_t)(rec.ts_ns / 1000000000u);
			h.ts.tv_usec = (suseconds_t)(rec.ts_ns % 1000000000u / 1000u);
			if (rec.origlen < rec.caplen ||
			    !as_link(dlt, &li, &rec, pkt, buf, &frame, &h.caplen, &h.len) ||
			    !pcap_offline_filter(&prog, &h, frame))
				continue;
			got++;
			if (dump)
				pcap_dump((u_char *)dump, &h, frame);
			else
				print_pkt(&rec, pkt, lo ? "lo" : lname);
		}
		sl_store_release(&c.ring->tail, tail);
	}
	cap_stop(&c);
	if (dump)
		pcap_dump_close(dump);
	fflush(stdout);
	fprintf(stderr, "%ld packets captured\n%ld packets seen\n%llu packets dropped by the ring\n",
		got, seen, (unsigned long long)c.ring->drops);
	pcap_freecode(&prog);
	pcap_close(dead);
	free(buf);
	munmap(c.ring, c.len);
	sluice_stack_close(st);
	return 0;
}
