// SPDX-License-Identifier: GPL-2.0-only
/*
 * Copying extensible ioctl arguments: every struct starts with a __u32 size
 * that says how much of the struct the caller knows about (uapi/sluice.h).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/minmax.h>
#include <linux/uaccess.h>

#include "sluice.h"

/*
 * A larger size than one page is never a struct a newer ABI could define;
 * refusing it keeps the zero check of the tail bounded.
 */
#define SLUICE_ARG_MAX	PAGE_SIZE

/**
 * sluice_arg_in - copy an ioctl argument from user space
 * @karg:	kernel copy, @ksize bytes
 * @ksize:	size of the struct this module knows
 * @min_size:	first published size of the struct
 * @uarg:	user pointer
 *
 * On success the size field of @karg holds the caller's size.
 *
 * Return: 0, -EFAULT for a bad pointer, -EINVAL for a size below
 * @min_size, -E2BIG for bytes past @ksize that are not zero.
 */
int sluice_arg_in(void *karg, size_t ksize, size_t min_size,
		  const void __user *uarg)
{
	u32 usize;
	int ret;

	if (get_user(usize, (const u32 __user *)uarg))
		return -EFAULT;
	if (usize < min_size)
		return -EINVAL;
	if (usize > SLUICE_ARG_MAX)
		return -E2BIG;
	ret = copy_struct_from_user(karg, ksize, uarg, usize);
	if (ret)
		return ret;
	/* copy_struct_from_user() copied the caller's size field. */
	return 0;
}

/**
 * sluice_arg_out - copy an ioctl result back to user space
 * @uarg:	user pointer
 * @karg:	kernel copy; its size field holds the caller's size
 * @ksize:	size of the struct this module knows
 *
 * Writes min(caller's size, @ksize) bytes and sets the size field to that
 * count, so the caller learns how much the module filled in.
 */
int sluice_arg_out(void __user *uarg, void *karg, size_t ksize)
{
	u32 *size = karg;
	size_t n = min_t(size_t, *size, ksize);

	*size = n;
	return copy_to_user(uarg, karg, n) ? -EFAULT : 0;
}
