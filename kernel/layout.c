// SPDX-License-Identifier: GPL-2.0-only
/*
 * The layout of a stack region as user space asks for it in
 * SLUICE_IOC_STACK_CREATE: names, counts, and areas that must fit in the
 * region without overlapping (uapi/sluice.h has the rules).  Nothing here
 * allocates; stack.c calls it before it does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/string.h>

#include "sluice.h"

/**
 * sluice_name_ok - is this a valid stack name?
 * @name:	SLUICE_NAME_MAX bytes
 *
 * 1 to SLUICE_NAME_MAX - 1 characters of [A-Za-z0-9_.-], not starting with
 * '.' (so never "." or ".." in sysfs and debugfs), NUL-padded to the end.
 * Spelled out rather than isalnum(): the kernel's ctype counts Latin-1
 * letters too.
 */
bool sluice_name_ok(const char name[SLUICE_NAME_MAX])
{
	size_t len = strnlen(name, SLUICE_NAME_MAX);
	size_t i;

	if (len == 0 || len == SLUICE_NAME_MAX || name[0] == '.')
		return false;
	for (i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return false;
	}
	for (; i < SLUICE_NAME_MAX; i++)
		if (name[i])
			return false;
	return true;
}

struct sluice_area {
	u64 off;
	u64 len;
	u64 align;
};

static bool sluice_counts_ok(const struct sluice_stack_create *c)
{
	if (!c->max_sockets || c->max_sockets > SLUICE_STACK_MAX_SOCKETS)
		return false;
	if (!c->sock_size || c->sock_size > SLUICE_STACK_MAX_SOCK_SIZE ||
	    !IS_ALIGNED(c->sock_size, SLUICE_STACK_ALIGN))
		return false;
	if (!is_power_of_2(c->hash_buckets) ||
	    c->hash_buckets > SLUICE_STACK_MAX_HASH_BUCKETS)
		return false;
	if (!c->n_bufs || c->n_bufs > SLUICE_STACK_MAX_BUFS)
		return false;
	if (!c->buf_size || c->buf_size > SLUICE_STACK_MAX_BUF_SIZE)
		return false;
	return c->mtu >= SLUICE_STACK_MIN_MTU && c->mtu <= c->buf_size;
}

/**
 * sluice_layout_check - validate the layout of a stack to be created
 * @c:		the create argument
 * @max_size:	largest region allowed, in bytes
 *
 * The counts are bounded first, so no area length below can overflow: the
 * largest, @max_sockets * @sock_size, is below 2^36.
 *
 * Return: 0, -E2BIG for a region over @max_size, -EINVAL for any other
 * rule broken.
 */
int sluice_layout_check(const struct sluice_stack_create *c, u64 max_size)
{
	const struct sluice_area a[] = {
		{ 0, sizeof(struct sluice_region), 1 },
		{ c->sock_off, (u64)c->max_sockets * c->sock_size,
		  SLUICE_STACK_ALIGN },
		{ c->hash_off, 2ULL * c->hash_buckets * sizeof(u32),
		  SLUICE_STACK_ALIGN },
		{ c->wheel_off, SLUICE_WHEEL_SLOTS * sizeof(u32),
		  SLUICE_STACK_ALIGN },
		{ c->bufmeta_off, (u64)c->n_bufs * sizeof(struct sluice_buf),
		  SLUICE_STACK_ALIGN },
		{ c->bufdata_off, (u64)c->n_bufs * c->buf_size, PAGE_SIZE },
	};
	u64 size = c->region_size;
	size_t i, j;

	if (!size || !PAGE_ALIGNED(size))
		return -EINVAL;
	if (size > max_size)
		return -E2BIG;
	if (!sluice_counts_ok(c))
		return -EINVAL;

	for (i = 0; i < ARRAY_SIZE(a); i++) {
		/* Written so that no sum can wrap. */
		if (!IS_ALIGNED(a[i].off, a[i].align) || a[i].off > size ||
		    a[i].len > size - a[i].off)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (a[i].off < a[j].off + a[j].len &&
			    a[j].off < a[i].off + a[i].len)
				return -EINVAL;
	}
	return 0;
}

/**
 * sluice_layout_write - write the header fields the module owns
 * @r:		a new, zeroed region that nobody has mapped yet
 * @c:		its checked create argument
 * @creator_uid: the creator's effective uid, as the creator sees it
 *
 * @state is left at SLUICE_STATE_INIT (zero) for user space to publish.
 */
void sluice_layout_write(struct sluice_region *r,
			 const struct sluice_stack_create *c, u32 creator_uid)
{
	r->magic = SLUICE_REGION_MAGIC;
	r->abi_version = SLUICE_ABI_VERSION;
	r->region_size = c->region_size;
	memcpy(r->name, c->name, sizeof(r->name));
	r->state = SLUICE_STATE_INIT;
	r->creator_uid = creator_uid;

	r->max_sockets = c->max_sockets;
	r->sock_size = c->sock_size;
	r->hash_buckets = c->hash_buckets;
	r->n_bufs = c->n_bufs;
	r->buf_size = c->buf_size;
	r->mtu = c->mtu;
	r->sock_off = c->sock_off;
	r->hash_off = c->hash_off;
	r->wheel_off = c->wheel_off;
	r->bufmeta_off = c->bufmeta_off;
	r->bufdata_off = c->bufdata_off;
}
