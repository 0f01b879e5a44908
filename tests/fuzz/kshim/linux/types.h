/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * User-space shim of the few kernel helpers kernel/layout.c and
 * kernel/uarg.c use, so fuzz_ioctl can run them unchanged.  Every
 * linux/ header the kernel files include resolves here first; this one pulls
 * in the system's uapi <linux/types.h> and adds the kernel's own names.
 */
#ifndef SLUICE_KSHIM_TYPES_H
#define SLUICE_KSHIM_TYPES_H

#include_next <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;

#define __user
#define PAGE_SIZE	4096UL

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define IS_ALIGNED(x, a)	(((x) & ((__typeof__(x))(a) - 1)) == 0)
#define PAGE_ALIGNED(x)		IS_ALIGNED((unsigned long)(x), PAGE_SIZE)
#define min_t(t, a, b)		((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define offsetofend(t, m)	(offsetof(t, m) + sizeof(((t *)0)->m))

/* Opaque or unused by the files under test: only their sizes matter. */
typedef struct { int counter; } atomic_t;
typedef struct { long long counter; } atomic64_t;
struct kref { atomic_t refcount; };
struct list_head { struct list_head *next, *prev; };
struct mutex { int owner; };
typedef struct { u32 val; } kuid_t;
typedef struct { int lock; } wait_queue_head_t;
struct xarray { void *head; };

static inline bool is_power_of_2(unsigned long n)
{
	return n != 0 && (n & (n - 1)) == 0;
}

/*
 * User memory: the one buffer the fuzzer handed over, [kshim_user,
 * kshim_user + kshim_user_len).  An access outside it faults (-EFAULT),
 * as it would in the kernel.
 */
extern const unsigned char *kshim_user;
extern size_t kshim_user_len;
extern unsigned char *kshim_user_out;	/* where copy_to_user writes */

static inline bool kshim_user_ok(const void *p, size_t n)
{
	const unsigned char *c = p;

	return c >= kshim_user && n <= kshim_user_len &&
	       (size_t)(c - kshim_user) <= kshim_user_len - n;
}

#endif
