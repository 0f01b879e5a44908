/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A stand-in for the module's SLUICE_IOC_FILTER_ADD and _DEL, for tests of
 * lib/proto/filter.c (install with sl_filter_ioctl = fake_ioctl): a table of
 * filters; port 8080 is one "the kernel uses" (EADDRINUSE), ports below
 * 1024 are privileged (EACCES); ephemeral picks count up from next_pick.
 * An ADD with SLUICE_FILTER_RESV_FD (a port given) is noted: own_adds,
 * last_fd; one with SLUICE_FILTER_SIBLING too, on a port a filter holds
 * (-ENOENT otherwise), makes no filter: sib_adds, last_sib_fd.
 */
#ifndef SLUICE_TESTS_FILTER_FAKE_H
#define SLUICE_TESTS_FILTER_FAKE_H

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include <sluice/sluice.h>

#define FMAX 32

static struct {
	struct { bool used; uint8_t proto; uint32_t laddr; uint16_t lport; uint32_t id; } f[FMAX];
	uint32_t next_id;
	uint16_t next_pick;	/* host order */
	int adds, dels, bad_dels, own_adds, last_fd, sib_adds, last_sib_fd;
} M = { .next_id = 100, .next_pick = 40000, .last_fd = -1, .last_sib_fd = -1 };

static inline int live(void)
{
	int n = 0;

	for (int i = 0; i < FMAX; i++)
		n += M.f[i].used;
	return n;
}

static inline int fake_ioctl(int fd, unsigned long req, void *arg)
{
	struct sluice_filter *a = arg;
	int i, slot = -1;

	(void)fd;
	if (a->size != sizeof(*a) ||
	    (a->flags & ~(SLUICE_FILTER_RESV_FD | SLUICE_FILTER_SIBLING)) ||
	    ((a->flags & SLUICE_FILTER_SIBLING) && !(a->flags & SLUICE_FILTER_RESV_FD)) ||
	    (req == SLUICE_IOC_FILTER_ADD && (a->flags ? !a->lport : a->fd != 0))) {
		errno = EINVAL;
		return -1;
	}
	if (req == SLUICE_IOC_FILTER_DEL) {
		for (i = 0; i < FMAX; i++)
			if (M.f[i].used && M.f[i].id == a->id) {
				M.f[i].used = false;
				M.dels++;
				return 0;
			}
		M.bad_dels++;
		errno = ENOENT;
		return -1;
	}
	if (req != SLUICE_IOC_FILTER_ADD || (a->protocol != IPPROTO_TCP && a->protocol != IPPROTO_UDP) ||
	    a->raddr || a->rport) {
		errno = EINVAL;
		return -1;
	}
	if (a->flags & SLUICE_FILTER_SIBLING) {
		for (i = 0; i < FMAX; i++)
			if (M.f[i].used && M.f[i].proto == a->protocol && M.f[i].lport == a->lport &&
			    (!M.f[i].laddr || M.f[i].laddr == a->laddr)) {
				M.sib_adds++;
				M.last_sib_fd = a->fd;
				a->id = 0;
				return 0;
			}
		errno = ENOENT;
		return -1;
	}
	if (!a->lport) {
		a->lport = htons(M.next_pick++);
	} else if (ntohs(a->lport) == 8080) {
		errno = EADDRINUSE;	/* a kernel listener has it */
		return -1;
	} else if (ntohs(a->lport) < 1024) {
		errno = EACCES;		/* no CAP_NET_BIND_SERVICE */
		return -1;
	}
	for (i = 0; i < FMAX; i++) {
		if (M.f[i].used && M.f[i].proto == a->protocol && M.f[i].lport == a->lport &&
		    M.f[i].laddr == a->laddr) {
			errno = EEXIST;
			return -1;
		}
		if (!M.f[i].used && slot < 0)
			slot = i;
	}
	M.f[slot].used = true;
	M.f[slot].proto = a->protocol;
	M.f[slot].laddr = a->laddr;
	M.f[slot].lport = a->lport;
	M.f[slot].id = a->id = M.next_id++;
	M.adds++;
	if (a->flags & SLUICE_FILTER_RESV_FD) {
		M.own_adds++;
		M.last_fd = a->fd;
	}
	return 0;
}

static inline bool has_filter(uint8_t proto, uint16_t port)
{
	for (int i = 0; i < FMAX; i++)
		if (M.f[i].used && M.f[i].proto == proto && ntohs(M.f[i].lport) == port)
			return true;
	return false;
}

#endif /* SLUICE_TESTS_FILTER_FAKE_H */
