// SPDX-License-Identifier: BSD-2-Clause
/*
 * The hostile process of tests/vm/hostile.sh: attaches to a running kring
 * stack by name, maps its region and its rings, and writes seeded random
 * garbage into every part the module reads (ring indices, fill entries, tx
 * descriptors and slots) and the parts user space trusts (region header,
 * buffer metadata and data, socket table), with KICK and WAKE ioctls in
 * between.  The module must count what it refuses and never oops.
 *
 *   scribble STACK SEED ROUNDS
 *
 * Prints one line "scribbled R rounds, W writes, K kicks (E failed: ...),
 * bad_* A -> B" and exits 0 if the module's bad_* counters moved, 1 if
 * they did not, 2 on a setup error.  Bounded: ROUNDS rounds of at most
 * 64 writes and a 2 ms pause.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <uapi/sluice.h>

static uint64_t rng;

static uint32_t rnd(void)
{
	/* xorshift64*: seeded, so a failure can be replayed. */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

/* A hostile value for an index or length: random, near a limit, or off by one. */
static uint32_t nasty(uint32_t base, uint32_t limit)
{
	switch (rnd() % 8) {
	case 0: return rnd();
	case 1: return base + limit;
	case 2: return base + limit + 1 + rnd() % 16;
	case 3: return base - 1 - rnd() % 16;
	case 4: return base + rnd() % (limit + 1);
	case 5: return 0xffffffffu - rnd() % 4;
	case 6: return 0x80000000u + rnd() % 4;
	default: return limit ? rnd() % (2 * limit) : 0;
	}
}

static uint64_t bad_sum(const volatile struct sluice_kring *k)
{
	return k->bad_index + k->bad_buf + k->bad_desc;
}

int main(int argc, char **argv)
{
	struct sluice_stack_attach at = { .size = sizeof(at) };
	struct sluice_kring_setup ks = { .size = sizeof(ks) };
	long rounds, writes = 0, kicks = 0, kick_err = 0, last_err = 0;
	volatile struct sluice_kring *k;
	struct sluice_region *r;
	uint8_t *reg, *kmap;
	uint64_t bad0, bad1;
	int dev, fd;

	if (argc != 4) {
		fprintf(stderr, "usage: scribble STACK SEED ROUNDS\n");
		return 2;
	}
	rng = strtoull(argv[2], NULL, 0) * 0x9e3779b97f4a7c15ull + 1;
	rounds = atol(argv[3]);
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		perror("scribble: open " SLUICE_DEVICE_PATH);
		return 2;
	}
	snprintf(at.name, sizeof(at.name), "%s", argv[1]);
	if (ioctl(dev, SLUICE_IOC_STACK_ATTACH, &at)) {
		perror("scribble: attach");
		return 2;
	}
	fd = at.fd;
	if (ioctl(fd, SLUICE_IOC_KRING_SETUP, &ks)) {
		perror("scribble: describe the rings");
		return 2;
	}
	reg = mmap(NULL, at.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   SLUICE_MMAP_REGION);
	kmap = mmap(NULL, ks.mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    SLUICE_MMAP_KRING);
	if (reg == MAP_FAILED || kmap == MAP_FAILED) {
		perror("scribble: mmap");
		return 2;
	}
	r = (struct sluice_region *)reg;
	k = (volatile struct sluice_kring *)kmap;
	bad0 = bad_sum(k);

	/* The layout as the module published it, read once before any damage. */
	uint32_t rxn = k->rx_entries, txn = k->tx_entries, slot = k->tx_slot_size;
	uint64_t fill_off = k->fill_off, tx_off = k->tx_off, slots_off = k->tx_slots_off;
	uint64_t ksize = k->size, rsize = at.region_size;
	uint64_t sock_off = r->sock_off, bufmeta_off = r->bufmeta_off;
	uint64_t sock_bytes = (uint64_t)r->max_sockets * r->sock_size;
	uint32_t n_bufs = r->n_bufs;

	for (long round = 0; round < rounds; round++) {
		int n = 1 + rnd() % 64;

		for (int w = 0; w < n; w++, writes++) {
			volatile uint32_t *p32;
			uint64_t off;

			switch (rnd() % 12) {
			case 0: k->rx.prod = nasty(k->rx.prod, rxn); break;
			case 1: k->rx.cons = nasty(k->rx.cons, rxn); break;
			case 2: k->fill.prod = nasty(k->fill.prod, rxn); break;
			case 3: k->fill.cons = nasty(k->fill.cons, rxn); break;
			case 4: k->tx.prod = nasty(k->tx.prod, txn); break;
			case 5: k->tx.cons = nasty(k->tx.cons, txn); break;
			case 6:	/* a fill entry, often just past the last buffer */
				p32 = (volatile uint32_t *)(kmap + fill_off) + rnd() % rxn;
				*p32 = nasty(n_bufs - 1, 2);
				break;
			case 7: {	/* a tx descriptor, then publish a few */
				volatile struct sluice_kring_tx *d =
					(volatile struct sluice_kring_tx *)(kmap + tx_off) +
					rnd() % txn;
				uint8_t *s = kmap + slots_off +
					(size_t)(d - (volatile struct sluice_kring_tx *)(kmap + tx_off)) * slot;

				d->len = nasty(20, slot);
				d->nexthop = rnd() % 3 ? rnd() : (rnd() % 2 ? 0 : 0x0100007f);
				d->flags = rnd() % 4 ? 0 : rnd();
				d->reserved = rnd() % 4 ? 0 : rnd();
				/* A header that claims some other length. */
				s[0] = rnd() % 2 ? 0x45 : (uint8_t)rnd();
				s[2] = (uint8_t)rnd();
				s[3] = (uint8_t)rnd();
				k->tx.prod = k->tx.cons + rnd() % (txn + 2);
				break;
			}
			case 8:	/* the region header, past magic and name */
				off = (rnd() % (sizeof(*r) / 4)) * 4;
				*(volatile uint32_t *)(reg + off) = rnd();
				break;
			case 9:	/* buffer metadata */
				off = bufmeta_off + (uint64_t)(rnd() % n_bufs) * sizeof(struct sluice_buf) +
				      (rnd() % (sizeof(struct sluice_buf) / 4)) * 4;
				*(volatile uint32_t *)(reg + off) = nasty(0, n_bufs);
				break;
			case 10:	/* the socket table */
				off = sock_off + ((rnd() % sock_bytes) & ~3ull);
				*(volatile uint32_t *)(reg + off) = rnd();
				break;
			default: {	/* anywhere else in either mapping, last word too;
					 * not the rings' header: its counters are the verdict */
				int in_reg = rnd() % 2;
				uint64_t lo = in_reg ? 0 : sizeof(struct sluice_kring);
				uint64_t hi = in_reg ? rsize : ksize;

				off = (lo + ((uint64_t)rnd() << 32 | rnd()) % (hi - lo)) & ~3ull;
				if (rnd() % 16 == 0)
					off = hi - 4;
				*(volatile uint32_t *)((in_reg ? reg : kmap) + off) = rnd();
				break;
			}
			}
		}
		struct sluice_kring_kick kick = { .size = sizeof(kick) };

		kicks++;
		if (ioctl(fd, SLUICE_IOC_KRING_KICK, &kick)) {
			kick_err++;
			last_err = errno;
		}
		if (rnd() % 4 == 0) {
			struct sluice_stack_wake wk = { .size = sizeof(wk),
							.flags = SLUICE_WAKE_SIGNAL };

			ioctl(fd, SLUICE_IOC_STACK_WAKE, &wk);
		}
		usleep(rnd() % 2000);
	}
	bad1 = bad_sum(k);
	printf("scribbled %ld rounds, %ld writes, %ld kicks (%ld failed%s%s), bad_* %llu -> %llu\n",
	       rounds, writes, kicks, kick_err, kick_err ? ": " : "",
	       kick_err ? strerror((int)last_err) : "", (unsigned long long)bad0,
	       (unsigned long long)bad1);
	munmap(kmap, ks.mmap_size);
	munmap(reg, at.region_size);
	close(fd);
	close(dev);
	return bad1 > bad0 ? 0 : 1;
}
