// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_ioctl: the module's argument checking, compiled as user-space code.
 * kernel/layout.c and kernel/uarg.c are built unchanged against a small
 * shim of the kernel helpers they use (tests/fuzz/kshim/), and each input
 * is checked against models written here from the rules in
 * include/uapi/sluice.h, not from the module's code:
 *
 *   - sluice_layout_check(): accepted exactly when every rule holds; an
 *     accepted layout has every area inside the region, aligned, and
 *     overlapping no other (computed in 128-bit arithmetic); -E2BIG only
 *     for a region over the limit; sluice_layout_write() copies it all.
 *   - sluice_name_ok(): exactly the names the ABI allows.
 *   - sluice_arg_in() / sluice_arg_out(): the extensible-struct rules
 *     (-EINVAL below the first size, -E2BIG for non-zero bytes past the
 *     known size or a size over a page, -EFAULT past the caller's memory),
 *     the copy zero-filled, and exactly min(size, known) bytes written back.
 *
 * Input: byte 0 picks the limit and how the layout is made (raw bytes, or
 * counts from the input laid out as libsluice does, then offsets nudged);
 * byte 1 picks a struct size for the uarg checks; the rest is user memory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../kernel/sluice.h"

const unsigned char *kshim_user;
size_t kshim_user_len;
unsigned char *kshim_user_out;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_ioctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

typedef unsigned __int128 u128;

/* The name rule, from the uapi comment. */
static bool model_name_ok(const char *name)
{
	size_t len = 0;

	while (len < SLUICE_NAME_MAX && name[len])
		len++;
	if (len == 0 || len == SLUICE_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = len; i < SLUICE_NAME_MAX; i++)
		if (name[i])
			return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_.-") == len;
}

struct area {
	u128 off, len;
	u64 align;
};

/* The layout rules, from the uapi comment of struct sluice_stack_create. */
static bool model_layout_ok(const struct sluice_stack_create *c, u64 max_size, bool *too_big)
{
	const struct area a[] = {
		{ 0, sizeof(struct sluice_region), 1 },
		{ c->sock_off, (u128)c->max_sockets * c->sock_size, SLUICE_STACK_ALIGN },
		{ c->hash_off, (u128)c->hash_buckets * 8, SLUICE_STACK_ALIGN },
		{ c->wheel_off, SLUICE_WHEEL_SLOTS * 4, SLUICE_STACK_ALIGN },
		{ c->bufmeta_off, (u128)c->n_bufs * sizeof(struct sluice_buf), SLUICE_STACK_ALIGN },
		{ c->bufdata_off, (u128)c->n_bufs * c->buf_size, 4096 },
	};
	bool ok = true;

	*too_big = c->region_size > max_size;
	if (!c->region_size || c->region_size % 4096 || *too_big)
		ok = false;
	if (c->max_sockets < 1 || c->max_sockets > SLUICE_STACK_MAX_SOCKETS)
		ok = false;
	if (!c->sock_size || c->sock_size % SLUICE_STACK_ALIGN ||
	    c->sock_size > SLUICE_STACK_MAX_SOCK_SIZE)
		ok = false;
	if (c->hash_buckets == 0 || (c->hash_buckets & (c->hash_buckets - 1)) ||
	    c->hash_buckets > SLUICE_STACK_MAX_HASH_BUCKETS)
		ok = false;
	if (c->n_bufs < 1 || c->n_bufs > SLUICE_STACK_MAX_BUFS)
		ok = false;
	if (c->buf_size < 1 || c->buf_size > SLUICE_STACK_MAX_BUF_SIZE)
		ok = false;
	if (c->mtu < SLUICE_STACK_MIN_MTU || c->mtu > c->buf_size)
		ok = false;
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		if (a[i].off % a[i].align || a[i].off + a[i].len > c->region_size)
			ok = false;
		for (size_t j = 0; j < i; j++)
			if (a[i].off < a[j].off + a[j].len && a[j].off < a[i].off + a[i].len)
				ok = false;
	}
	return ok;
}

static void check_layout(const struct sluice_stack_create *c, u64 max_size)
{
	bool too_big, want = model_layout_ok(c, max_size, &too_big);
	int ret = sluice_layout_check(c, max_size);
	struct sluice_region r;

	if (ret != 0 && ret != -EINVAL && ret != -E2BIG)
		fail("layout_check returned %d", ret);
	if ((ret == 0) != want)
		fail("layout_check %s a layout the ABI %s (size %llu, max %llu)",
		     ret ? "refused" : "accepted", want ? "allows" : "forbids",
		     (unsigned long long)c->region_size, (unsigned long long)max_size);
	if (ret == -E2BIG && !too_big)
		fail("-E2BIG for a region within the limit");
	if (ret)
		return;
	memset(&r, 0xa5, sizeof(r));
	sluice_layout_write(&r, c, 1234);
	if (r.magic != SLUICE_REGION_MAGIC || r.abi_version != SLUICE_ABI_VERSION ||
	    r.region_size != c->region_size || memcmp(r.name, c->name, sizeof(r.name)) ||
	    r.state != SLUICE_STATE_INIT || r.creator_uid != 1234 ||
	    r.max_sockets != c->max_sockets || r.sock_size != c->sock_size ||
	    r.hash_buckets != c->hash_buckets || r.n_bufs != c->n_bufs ||
	    r.buf_size != c->buf_size || r.mtu != c->mtu || r.sock_off != c->sock_off ||
	    r.hash_off != c->hash_off || r.wheel_off != c->wheel_off ||
	    r.bufmeta_off != c->bufmeta_off || r.bufdata_off != c->bufdata_off)
		fail("layout_write does not describe the layout it was given");
}

static u64 up(u64 x, u64 a)
{
	return (x + a - 1) & ~(a - 1);
}

/* Counts from the input, laid out as libsluice's region.c does, then one
 * nudge of some offset, so accepted and refused layouts are both near. */
static void layout_from_counts(struct sluice_stack_create *c, const uint8_t *d, size_t n)
{
	uint8_t b[16] = { 0 };
	u64 off;

	memcpy(b, d, n < sizeof(b) ? n : sizeof(b));
	memset(c, 0, sizeof(*c));
	c->max_sockets = 1u + (b[0] | b[1] << 8);
	c->sock_size = 64u * (1 + b[2] % 32);
	c->hash_buckets = 1u << (b[3] % 24);
	c->n_bufs = 1u + (b[4] | b[5] << 8);
	c->buf_size = 1u + (b[6] | b[7] << 8) % 65536;
	c->mtu = 68 + b[8] * 8;
	off = up(sizeof(struct sluice_region), 64);
	c->sock_off = off;
	off += (u64)c->max_sockets * c->sock_size;
	c->hash_off = up(off, 64);
	off = c->hash_off + 8ull * c->hash_buckets;
	c->wheel_off = up(off, 64);
	off = c->wheel_off + SLUICE_WHEEL_SLOTS * 4;
	c->bufmeta_off = up(off, 64);
	off = c->bufmeta_off + (u64)c->n_bufs * sizeof(struct sluice_buf);
	c->bufdata_off = up(off, 4096);
	off = c->bufdata_off + (u64)c->n_bufs * c->buf_size;
	c->region_size = up(off, 4096);
	/* The nudge: which field (b[9]), by how much (b[10..11], signed). */
	{
		int64_t delta = (int16_t)(b[10] | b[11] << 8);
		u64 *f[] = { &c->sock_off, &c->hash_off, &c->wheel_off, &c->bufmeta_off,
			     &c->bufdata_off, &c->region_size };

		if (b[9] % 8 < 6)
			*f[b[9] % 8] += (u64)(delta * (b[12] & 1 ? 64 : 1));
	}
	memcpy(c->name, "fz", 2);
}

static void check_name(const uint8_t *d, size_t n)
{
	char name[SLUICE_NAME_MAX] = { 0 };

	memcpy(name, d, n < sizeof(name) ? n : sizeof(name));
	if (sluice_name_ok(name) != model_name_ok(name))
		fail("name_ok says %d for a name the ABI %s", sluice_name_ok(name),
		     model_name_ok(name) ? "allows" : "forbids");
}

static const size_t ksizes[] = {
	sizeof(struct sluice_version), sizeof(struct sluice_stack_create),
	sizeof(struct sluice_stack_attach), sizeof(struct sluice_stack_wake),
	sizeof(struct sluice_kring_setup), sizeof(struct sluice_kring_kick),
	sizeof(struct sluice_filter), sizeof(struct sluice_ifinfo),
	sizeof(struct sluice_neigh_resolve),
};

static void check_uarg(uint8_t sel, const uint8_t *user, size_t ulen)
{
	size_t ksize = ksizes[sel % (sizeof(ksizes) / sizeof(ksizes[0]))];
	size_t min_size = (sel >> 4) & 1 ? 8 : 16;
	unsigned char karg[sizeof(struct sluice_ifinfo) + 64], *shadow;
	bool e_inval = false, e_2big = false, e_fault = false;
	u32 usize = 0;
	int ret;

	if (min_size > ksize)
		min_size = ksize;
	kshim_user = user;
	kshim_user_len = ulen;
	memset(karg, 0xa5, sizeof(karg));
	ret = sluice_arg_in(karg, ksize, min_size, user);

	/* Which errors the rules allow for this input. */
	if (ulen < 4) {
		e_fault = true;
	} else {
		memcpy(&usize, user, 4);
		if (usize < min_size)
			e_inval = true;
		if (usize > 4096)
			e_2big = true;
		if (usize > ulen)
			e_fault = true;
		for (size_t i = ksize; i < usize && i < ulen; i++)
			if (user[i])
				e_2big = true;
	}
	if (ret == 0 && (e_inval || e_2big || e_fault))
		fail("arg_in accepted size %u (known %zu, first %zu, %zu bytes there)", usize,
		     ksize, min_size, ulen);
	if (ret && !((ret == -EINVAL && e_inval) || (ret == -E2BIG && e_2big) ||
		     (ret == -EFAULT && e_fault)))
		fail("arg_in returned %d for size %u (known %zu, first %zu, %zu bytes there)",
		     ret, usize, ksize, min_size, ulen);
	if (ret)
		return;
	{
		size_t n = usize < ksize ? usize : ksize;

		if (memcmp(karg, user, n))
			fail("arg_in copied the wrong bytes");
		for (size_t i = n; i < ksize; i++)
			if (karg[i])
				fail("arg_in left byte %zu of %zu unzeroed", i, ksize);
		if (karg[ksize] != 0xa5)
			fail("arg_in wrote past the kernel struct");
	}

	/* Back out: min(size, known) bytes, and the size field says so. */
	shadow = malloc(ulen + 1);
	if (!shadow)
		abort();
	memset(shadow, 0x5a, ulen + 1);
	kshim_user_out = shadow;
	for (size_t i = 4; i < ksize; i++)
		karg[i] = (unsigned char)(i * 13);
	ret = sluice_arg_out((void *)user, karg, ksize);
	{
		size_t n = usize < ksize ? usize : ksize;
		u32 got;

		if (ret)
			fail("arg_out failed (%d) on memory arg_in read", ret);
		memcpy(&got, shadow, 4);
		if (got != n)
			fail("arg_out size field %u, want %zu", got, n);
		if (memcmp(shadow + 4, karg + 4, n - 4))
			fail("arg_out wrote the wrong bytes");
		for (size_t i = n; i <= ulen; i++)
			if (shadow[i] != 0x5a)
				fail("arg_out wrote byte %zu past min(size, known) = %zu", i, n);
	}
	free(shadow);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sluice_stack_create c;
	static const u64 limits[] = { 1ull << 20, 64ull << 20, 1ull << 30, ~0ull };
	u64 max_size;
	uint8_t *copy;

	if (size < 2)
		return 0;
	max_size = limits[data[0] & 3];
	if (data[0] & 4) {
		layout_from_counts(&c, data + 2, size - 2);
	} else {
		memset(&c, 0, sizeof(c));
		memcpy(&c, data + 2, size - 2 < sizeof(c) ? size - 2 : sizeof(c));
	}
	check_layout(&c, max_size);
	check_name(data + 2, size - 2);
	/* A copy of exactly the user bytes, so ASan sees any over-read. */
	copy = malloc(size - 2 ? size - 2 : 1);
	if (!copy)
		abort();
	memcpy(copy, data + 2, size - 2);
	check_uarg(data[1], copy, size - 2);
	free(copy);
	return 0;
}
