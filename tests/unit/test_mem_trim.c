// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory given back (issue 23 item 5; proto/sock.c sl_sock_trim(),
 * core/buf.c sl_buf_trim()), on a /dev/shm stack with a virtual clock:
 * 6,000 UDP sockets, each bound and holding a 1,000-byte datagram it sent
 * itself (6,000 packet buffers), then all closed.  Two looks a second
 * apart later (the first sees the frees still coming, the second sees
 * them stopped):
 *
 *  - sock_fresh is back at the bottom and the region file's blocks are
 *    back within a tenth of what the sockets and buffers added;
 *  - a socket made after takes a slot whose generation is above any the
 *    slots given back had (an old (index, generation) names nothing new);
 *  - the free lists are whole: 6,000 sockets and datagrams again, the
 *    same figures after.
 *
 * Before: sock_fresh stayed at 6,000 and the blocks at their peak.
 */
#include <sys/stat.h>

#include "stack_fixture.h"

#define N_SOCKS	6000
#define ST(s) ((struct sluice_stack *)(s))

static long blocks(const char *name)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm/sluice-%s", name);
	return stat(path, &st) ? -1 : (long)st.st_blocks;
}

/* Open N_SOCKS bound UDP sockets with a datagram queued each: 0 or -1. */
static int fill(struct sl_stack *s, int *sd)
{
	static char data[1000];

	for (int i = 0; i < N_SOCKS; i++) {
		struct sockaddr_in a = fx_addr("127.0.0.1", (uint16_t)(20000 + i));

		sd[i] = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		if (sd[i] < 0 || sluice_bind(ST(s), sd[i], &a) ||
		    sluice_sendto(ST(s), sd[i], data, sizeof(data), 0, &a) != sizeof(data))
			return -1;
	}
	for (int k = 0; k < 32; k++)
		sluice_stack_poll(ST(s));
	return 0;
}

/* Two looks a second apart, as the timers make them (a poll with no
 * link reads the clock every 16th call: run/run.c). */
static void two_seconds(struct sl_stack *s)
{
	for (int i = 0; i < 2; i++) {
		fx_clock_us += 1100000;
		for (int k = 0; k < 32; k++)
			sluice_stack_poll(ST(s));
	}
}

int main(void)
{
	static int sd[N_SOCKS];
	struct sl_stack *s = fx_stack_sized("trim", "10.7.0.1", 8192, 16384);
	char name[32];
	long b0, b1, b2;
	uint32_t top, gen_max = 0, free_bufs;

	snprintf(name, sizeof(name), "t-trim-%d", (int)getpid());
	sluice_stack_set_clock(ST(s), fx_clock, NULL);
	sluice_stack_poll(ST(s));
	b0 = blocks(name);
	free_bufs = s->lib->buf_free_count;
	tap_ok(fill(s, sd) == 0, "%d sockets bound, a datagram queued on each", N_SOCKS);
	top = s->lib->sock_fresh;
	b1 = blocks(name);
	tap_ok(top >= N_SOCKS && b1 - b0 > 2 * N_SOCKS, "slots and buffers committed (top %u, %ld KiB more)",
	       top, (b1 - b0) / 2);
	for (uint32_t i = 0; i < top; i++)
		if (sl_sock(s, i)->kp.gen > gen_max)
			gen_max = sl_sock(s, i)->kp.gen;
	for (int i = 0; i < N_SOCKS; i++)
		sluice_close(ST(s), sd[i]);
	tap_ok(s->lib->buf_free_count == free_bufs, "every buffer free after the close");
	two_seconds(s);
	b2 = blocks(name);
	printf("# region blocks: %ld before, %ld with the sockets, %ld after; top %u -> %u\n", b0, b1, b2, top,
	       s->lib->sock_fresh);
	tap_ok(s->lib->sock_fresh < top / 10, "sock_fresh back at the bottom (%u, was %u)", s->lib->sock_fresh, top);
	tap_ok(b2 - b0 <= (b1 - b0) / 10, "the region gave back all but a tenth (%ld KiB over the start, %ld at most)",
	       (b2 - b0) / 2, (b1 - b0) / 20);
	{
		/* Sockets past what is left free below the lowered top take
		 * slots given back, fresh again. */
		uint32_t low = s->lib->sock_fresh, fresh = 0, old_gen = 0;

		for (int i = 0; i < 64; i++)
			sd[i] = sluice_socket(ST(s), SLUICE_SOCK_DGRAM);
		for (uint32_t i = low; i < s->lib->sock_fresh; i++) {
			fresh++;
			if (sl_sock(s, i)->kp.gen <= gen_max)
				old_gen++;
		}
		tap_ok(fresh > 0 && old_gen == 0,
		       "the %u slots taken fresh again start above every generation given back (%u): %u do not",
		       fresh, gen_max, old_gen);
		for (int i = 0; i < 64; i++)
			sluice_close(ST(s), sd[i]);
	}
	tap_ok(fill(s, sd) == 0, "%d sockets and datagrams again", N_SOCKS);
	for (int i = 0; i < N_SOCKS; i++)
		sluice_close(ST(s), sd[i]);
	tap_ok(s->lib->buf_free_count == free_bufs && s->r->sock_used == 0, "and every slot and buffer back after");
	fx_destroy(s);
	return tap_done();
}
