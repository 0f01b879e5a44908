// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for kernel/filter.c, to be deleted when the filter branch is
 * merged (with sluice_kring_first_stack() in kring.c and sluice.h): every
 * UDP or TCP packet to a destination port of 40000 or more belongs to the
 * first stack with rings on the device.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/rcupdate.h>

#include "sluice.h"

#define SLUICE_STUB_MIN_PORT	40000

struct sluice_stack *sluice_filter_match(struct net *net, int ifindex, u8 protocol,
					 __be32 saddr, __be16 sport,
					 __be32 daddr, __be16 dport)
{
	RCU_LOCKDEP_WARN(!rcu_read_lock_held(), "filter lookup outside RCU");
	if (protocol != IPPROTO_UDP && protocol != IPPROTO_TCP)
		return NULL;
	if (ntohs(dport) < SLUICE_STUB_MIN_PORT)
		return NULL;
	return sluice_kring_first_stack(net, ifindex);
}
