// SPDX-License-Identifier: BSD-2-Clause
/*
 * Packet capture for `sluice tcpdump` (tools/tcpdump.c): while the tool
 * is attached (sl_region.cap_on), the lock holder copies every IPv4 and
 * IPv6 packet the stack sends or receives, on its link and on its own
 * loopback, into the tool's ring (struct sl_cap_ring, core.h), a file in
 * /dev/shm that each process maps the first time it has a packet to
 * copy.  A link that builds its own frames (Ethernet on TAP: link/eth.c)
 * gives them whole, ARP included.  When nobody captures, the packet
 * paths test cap_on and go on: nothing here runs.  A ring the tool does
 * not empty fast enough drops what does not fit and counts it; the
 * stack never waits for the tool.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "os/os.h"
#include "core/core.h"
#include "core/wire.h"

int sl_cap_path(const char *name, int32_t pid, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/dev/shm/sluicecap-%s-%d", name, (int)pid);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void sl_cap_unmap(struct sl_stack *s)
{
	if (s->cap)
		munmap(s->cap, s->cap_len);
	s->cap = NULL;
	s->cap_len = 0;
	s->cap_pid = 0;
}

/* This process's mapping of the ring the region names, or NULL. */
static struct sl_cap_ring *cap_map(struct sl_stack *s)
{
	int32_t pid = sl_load_acquire(&s->lib->cap_pid);
	struct sl_cap_ring *c;
	struct stat st;
	char path[96];
	int fd;

	if (pid == s->cap_pid)
		return s->cap;
	sl_cap_unmap(s);
	s->cap_pid = pid;	/* tried once, mapped or not */
	if (pid <= 0 || sl_cap_path(s->name, pid, path, sizeof(path)))
		return NULL;
	fd = sl_sys_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return NULL;
	if (sl_sys_fstat(fd, &st) || (size_t)st.st_size < sizeof(*c)) {
		sl_sys_close(fd);
		return NULL;
	}
	c = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	sl_sys_close(fd);
	if (c == MAP_FAILED)
		return NULL;
	/* The geometry is checked here once; data[] is addressed modulo
	 * size below, so a later scribble on the header moves nothing out
	 * of the mapping but the size, kept here. */
	if (c->magic != SL_CAP_MAGIC || !c->size || (c->size & (c->size - 1)) ||
	    sizeof(*c) + c->size > (size_t)st.st_size) {
		munmap(c, (size_t)st.st_size);
		return NULL;
	}
	s->cap = c;
	s->cap_len = (size_t)st.st_size;
	s->cap_size = c->size;
	return c;
}

/*
 * A tool killed (SIGKILL: no cap_stop()) would leave cap_on set, and the
 * stack copying every packet into a ring nobody reads.  Once a second a
 * copier asks whether the tool lives (/proc, as for a lock holder); if
 * not, it ends the capture and removes the ring: cap_pid first, by
 * compare-and-exchange, so a tool that has just taken the stack over
 * keeps it (and sets cap_on again if it finds it cleared: tcpdump.c).
 */
static bool tool_alive(struct sl_stack *s)
{
	uint64_t now = sl_now(s);
	int32_t pid;

	if (now - s->cap_alive_us < 1000000)
		return true;
	s->cap_alive_us = now;
	pid = s->cap_pid;
	if (!sl_pid_dead(pid))
		return true;
	if (sl_cmpxchg(&s->lib->cap_pid, &pid, 0)) {
		char path[96];

		sl_store_release(&s->lib->cap_on, (uint16_t)0);
		/* Its ring too: nobody else would remove it. */
		if (!sl_cap_path(s->name, pid, path, sizeof(path)))
			unlink(path);
	}
	sl_cap_unmap(s);
	return false;
}

/*
 * A packet inside the stack carries no IPv4 header checksum and a TCP
 * segment no TCP checksum (nobody checks them: SL_BUF_LOCAL); the copy at
 * pkt (caplen bytes) gets the ones it would have on a link, so tcpdump
 * does not call it "incorrect".  The packet itself is not touched.
 */
static void lo_ip_csum(uint8_t *pkt, uint32_t caplen)
{
	struct sl_ip ip;
	unsigned int hlen;

	if (caplen < sizeof(ip))
		return;
	memcpy(&ip, pkt, sizeof(ip));
	hlen = (ip.ver_ihl & 0xf) * 4u;
	if ((ip.ver_ihl >> 4) != 4 || ip.csum || hlen < sizeof(ip) || hlen > caplen)
		return;
	ip.csum = sl_csum_fold(sl_csum_add(0, pkt, hlen));
	memcpy(pkt + offsetof(struct sl_ip, csum), &ip.csum, sizeof(ip.csum));
}

static void lo_tcp_csum(struct sl_stack *s, uint32_t idx, uint8_t *pkt, uint32_t caplen)
{
	const struct sluice_buf *b = sl_buf(s, idx);
	const struct sl_ip *ip = (const struct sl_ip *)sl_buf_data(s, idx);
	unsigned int hlen = (ip->ver_ihl & 0xf) * 4u, tot = ntohs(ip->tot_len), len = b->len;
	const struct sl_tcph *th = (const struct sl_tcph *)((const uint8_t *)ip + hlen);
	uint32_t sum, odd = 0, steps, at, got;
	uint16_t csum;

	if (ip->proto != IPPROTO_TCP_ || (ip->frag & htons(IP_MF_ | 0x1fff)) || hlen < sizeof(*ip) ||
	    len < hlen + sizeof(*th) || tot < len || caplen < hlen + 18 || th->csum)
		return;
	sum = sl_csum_pseudo(ip->saddr, ip->daddr, IPPROTO_TCP_, (uint16_t)(tot - hlen));
	sum = sl_csum_add_at(sum, th, len - hlen, &odd);
	/* The rest of the segment, in the buffers chained after this one. */
	got = len;
	for (at = idx, steps = 0; got < tot && steps < s->n_bufs; steps++) {
		if (!sl_buf_chained(b) || !sl_buf_some(s, b->next_idx))
			return;
		at = b->next_idx;
		b = sl_buf(s, at);
		len = b->len < tot - got ? b->len : tot - got;
		sum = sl_csum_add_at(sum, sl_buf_data(s, at), len, &odd);
		got += len;
	}
	if (got != tot)
		return;
	csum = sl_csum_fold(sum);
	memcpy(pkt + hlen + 16, &csum, sizeof(csum));
}

void sl_cap_packet(struct sl_stack *s, uint32_t idx, unsigned int flags)
{
	struct sl_cap_ring *c = cap_map(s);
	const struct sluice_buf *b;
	struct sl_cap_rec rec;
	uint32_t size, snap, caplen, origlen, reclen, off, skip, got, at, steps;
	uint64_t head, tail;
	struct timespec ts;

	if (!c || !sl_buf_some(s, idx) || !tool_alive(s))
		return;
	size = s->cap_size;	/* as checked when mapped */
	b = sl_buf(s, idx);
	origlen = b->len;
	/* An IP packet may go on in chained buffers (a frame does not:
	 * link/eth.c sends and receives one buffer). */
	if (!(flags & SL_CAP_ETH) && b->len >= sizeof(struct sl_ip)) {
		const struct sl_ip *ip = (const struct sl_ip *)sl_buf_data(s, idx);
		uint32_t tot = ntohs(ip->tot_len);

		if (tot > origlen)
			origlen = tot;
	}
	snap = SL_READ_ONCE(c->snaplen);
	caplen = origlen < snap ? origlen : snap;
	reclen = (uint32_t)((sizeof(rec) + caplen + 7) & ~7u);
	if (reclen > size / 2)
		return;
	head = c->head;
	tail = sl_load_acquire(&c->tail);
	off = (uint32_t)(head & (size - 1));
	skip = size - off < reclen ? size - off : 0;
	if (head + skip + reclen - tail > size) {
		c->drops++;
		return;
	}
	if (skip) {
		memset(c->data + off, 0, sizeof(uint32_t));
		head += skip;
		off = 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	rec = (struct sl_cap_rec){ .len = reclen, .origlen = origlen, .flags = (uint16_t)flags,
				   .ts_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec };
	/* The packet's bytes: this buffer, then the ones chained after it. */
	got = 0;
	at = idx;
	for (steps = 0; got < caplen && steps < s->n_bufs; steps++) {
		uint32_t n;

		b = sl_buf(s, at);
		n = b->len < caplen - got ? b->len : caplen - got;
		memcpy(c->data + off + sizeof(rec) + got, sl_buf_data(s, at), n);
		got += n;
		if (!sl_buf_chained(b) || !sl_buf_some(s, b->next_idx))
			break;
		at = b->next_idx;
	}
	rec.caplen = got;
	if (flags & SL_CAP_LO) {
		lo_ip_csum(c->data + off + sizeof(rec), got);
		lo_tcp_csum(s, idx, c->data + off + sizeof(rec), got);
	}
	memcpy(c->data + off, &rec, sizeof(rec));
	sl_store_release(&c->head, head + reclen);
}
