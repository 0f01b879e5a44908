// SPDX-License-Identifier: BSD-2-Clause
/*
 * The capture ring of `sluice tcpdump` (lib/core/capture.c), with this
 * test as the tool: records of packets sent on the link and received on
 * the stack's loopback, their flags, lengths and bytes; the snap length;
 * a full ring drops and counts, never overwrites what is unread; records
 * wrap at the end of the ring; nothing is written once cap_on is clear or
 * when the named ring cannot be mapped.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "stack_fixture.h"

#define ST(s) ((struct sluice_stack *)(s))
#define RING 4096u

static struct sl_cap_ring *ring_make(struct sl_stack *s, int32_t pid, uint32_t snap)
{
	size_t len = sizeof(struct sl_cap_ring) + RING;
	struct sl_cap_ring *c;
	char path[96];
	int fd;

	sl_cap_path(s->name, pid, path, sizeof(path));
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		printf("Bail out! %s\n", path);
		exit(1);
	}
	c = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	c->magic = SL_CAP_MAGIC;
	c->size = RING;
	c->snaplen = snap;
	return c;
}

static void ring_gone(struct sl_stack *s, int32_t pid, struct sl_cap_ring *c)
{
	char path[96];

	sl_cap_path(s->name, pid, path, sizeof(path));
	unlink(path);
	munmap(c, sizeof(*c) + RING);
}

/* The next record at *tail (moved past it, and past a wrap), or NULL. */
static const struct sl_cap_rec *next_rec(struct sl_cap_ring *c, uint64_t *tail)
{
	const struct sl_cap_rec *r;

	for (int i = 0; i < 2 && *tail != c->head; i++) {
		uint32_t off = (uint32_t)(*tail % RING);

		r = (const struct sl_cap_rec *)(const void *)(c->data + off);
		if (!r->len) {
			*tail += RING - off;
			continue;
		}
		/* A broken ring ends the walk (the checks then fail). */
		if (r->len < sizeof(*r) || r->len > RING - off) {
			*tail = c->head;
			return NULL;
		}
		*tail += r->len;
		return r;
	}
	return NULL;
}

static void send_to(struct sl_stack *s, int sd, const char *ip, uint16_t port, size_t n)
{
	static char buf[1024];
	struct sockaddr_in a = fx_addr(ip, port);

	memset(buf, 'q', sizeof(buf));
	sluice_sendto(ST(s), sd, buf, n, 0, &a);
}

int main(void)
{
	struct capture cap;
	struct sl_stack *s = fx_stack("capt", "10.1.0.1", &cap);
	int32_t pid = (int32_t)getpid();
	struct sl_cap_ring *c = ring_make(s, pid, 100);
	struct sockaddr_in a = fx_addr("10.1.0.1", 5000);
	const struct sl_cap_rec *r;
	uint64_t tail = 0, drops;
	int srv, cli, n;
	char buf[64];

	srv = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	cli = sluice_socket(ST(s), SLUICE_SOCK_DGRAM | SLUICE_SOCK_NONBLOCK);
	tap_eq(sluice_bind(ST(s), srv, &a), 0, "bind 10.1.0.1:5000");

	/* Nobody captures: nothing is written. */
	send_to(s, cli, "10.1.0.1", 5000, 5);
	sluice_recv(ST(s), srv, buf, sizeof(buf), 0);
	tap_eq(c->head, 0, "cap_on clear: the ring stays empty");

	s->lib->cap_pid = pid;
	s->lib->cap_on = 1;
	send_to(s, cli, "10.1.0.1", 5000, 5);
	tap_eq(sluice_recv(ST(s), srv, buf, sizeof(buf), 0), 5, "a datagram on the stack's loopback");
	send_to(s, cli, "10.1.0.9", 6000, 7);
	tap_eq(cap.n, 1, "a datagram out on the link");
	r = next_rec(c, &tail);
	tap_ok(r && r->flags == SL_CAP_LO && r->origlen == 33 && r->caplen == 33,
	       "first record: received on loopback, 33 bytes whole");
	tap_ok(r && !memcmp(r + 1, "\x45", 1) && !memcmp((const uint8_t *)(r + 1) + 28, "qqqqq", 5),
	       "its bytes are the packet's, from the IPv4 header");
	/* Inside the stack the header has no checksum (proto/ip.c); the
	 * copy has the one it would carry on a link. */
	tap_ok(r && ((const struct sl_ip *)(r + 1))->csum &&
		       sl_csum_fold(sl_csum_add(0, r + 1, sizeof(struct sl_ip))) == 0,
	       "its IPv4 header checksum is the one a link would carry");
	tap_ok(r && r->ts_ns > 1600000000ull * 1000000000ull, "it has a wall-clock time stamp");
	r = next_rec(c, &tail);
	tap_ok(r && r->flags == SL_CAP_OUT && r->caplen == 35 && r->len % 8 == 0,
	       "second record: sent on the link, 35 bytes, padded to 8");
	tap_ok(r && !memcmp(r + 1, cap.frame[0], 35), "its bytes are what the link was given");
	tap_ok(!next_rec(c, &tail), "no more");
	c->tail = tail;

	/* The snap length. */
	send_to(s, cli, "10.1.0.9", 6000, 500);
	r = next_rec(c, &tail);
	tap_ok(r && r->origlen == 528 && r->caplen == 100, "a 528-byte packet: 100 bytes kept");
	c->tail = tail;

	/* A reader that does not read: full, then drops, nothing overwritten. */
	drops = c->drops;
	for (int i = 0; i < 100; i++)
		send_to(s, cli, "10.1.0.9", 6000, 60);
	tap_ok(c->drops > drops, "a full ring drops (%llu)", (unsigned long long)(c->drops - drops));
	tap_ok(c->head - c->tail <= RING, "and never holds more than its size unread (%llu)",
	       (unsigned long long)(c->head - c->tail));
	n = 0;
	for (int i = 0; i < 200 && (r = next_rec(c, &tail)); i++)
		n += r->caplen == 88 && r->flags == SL_CAP_OUT;
	tap_eq((uint64_t)n + c->drops - drops, 100, "kept + dropped = sent");
	c->tail = tail;
	/* Once read, room again, across the end of the ring. */
	drops = c->drops;
	for (int i = 0; i < 30; i++)
		send_to(s, cli, "10.1.0.9", 6000, 60);
	n = 0;
	for (int i = 0; i < 200 && (r = next_rec(c, &tail)); i++)
		n += r->caplen == 88;
	tap_ok(n == 30 && c->drops == drops, "after the reader caught up: 30 kept (%d), none dropped", n);
	tap_ok(c->head / RING > 0, "the records wrapped past the ring's end");
	c->tail = tail;

	/* A ring named that cannot be mapped: skipped, nothing breaks. */
	s->lib->cap_pid = pid + 1000000;
	send_to(s, cli, "10.1.0.9", 6000, 60);
	tap_ok(!s->cap && c->head == tail, "an unmappable ring: not written, no mapping kept");
	s->lib->cap_pid = pid;
	send_to(s, cli, "10.1.0.9", 6000, 60);
	tap_ok(next_rec(c, &tail) != NULL, "the tool's own again: written");

	s->lib->cap_on = 0;
	s->lib->cap_pid = 0;
	sluice_close(ST(s), srv);
	sluice_close(ST(s), cli);
	ring_gone(s, pid, c);
	fx_destroy(s);
	return tap_done();
}
