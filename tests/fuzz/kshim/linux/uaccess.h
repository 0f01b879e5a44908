/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * User-space shim (tests/fuzz) of the uaccess helpers kernel/uarg.c uses,
 * with the kernel's documented semantics (include/linux/uaccess.h).
 */
#ifndef SLUICE_KSHIM_UACCESS_H
#define SLUICE_KSHIM_UACCESS_H

#include <linux/types.h>
#include <string.h>

#define get_user(x, p)							\
	(kshim_user_ok((p), sizeof(*(p))) ?				\
		 (memcpy(&(x), (p), sizeof(*(p))), 0) : -EFAULT)

static inline unsigned long copy_to_user(void *to, const void *from, unsigned long n)
{
	if (!kshim_user_ok(to, n))
		return n;
	/* The fuzz input is read-only: writes land in a shadow copy. */
	memcpy(kshim_user_out + ((const unsigned char *)to - kshim_user), from, n);
	return 0;
}

/*
 * copy_struct_from_user(): usize < ksize copies usize bytes and zeroes the
 * rest; usize > ksize copies ksize bytes if the bytes past ksize are all
 * zero, else -E2BIG.  -EFAULT for memory that is not there.
 */
static inline int copy_struct_from_user(void *dst, size_t ksize, const void *src,
					size_t usize)
{
	size_t size = usize < ksize ? usize : ksize;
	const unsigned char *s = src;

	if (!kshim_user_ok(src, usize))
		return -EFAULT;
	for (size_t i = ksize; i < usize; i++)
		if (s[i])
			return -E2BIG;
	memcpy(dst, src, size);
	memset((unsigned char *)dst + size, 0, ksize - size);
	return 0;
}

#endif
