// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stack's region: shmem pages, read in once and held until the stack
 * is freed (pinned, on an unevictable mapping, so never reclaimed,
 * swapped or migrated away), vmap()ed for the module's own accesses and
 * inserted into every user mapping of the stack fd.
 *
 * Why shmem and not vmalloc_user(): a shared futex (FUTEX_WAIT/WAKE
 * without FUTEX_PRIVATE_FLAG) is keyed by get_futex_key() from the page
 * that get_user_pages_fast() finds at the address.  In 6.1 and 6.12 alike
 * that page must have a ->mapping: an anonymous page gives a key of the
 * mm, any other page the key (inode sequence number, page offset) of
 * mapping->host; a page with no mapping, as vmalloc's pages are, is
 * -EFAULT.  Shmem pages belong to the shmem file made here, so every
 * process that maps the stack, and every child that inherits a mapping,
 * finds the same inode and offset for a word: shared futexes on the
 * region work across processes.
 *
 * Why the pages are inserted into the stack fd's vma (remap_vmalloc_range()
 * on the vmap area, which is vm_insert_page() for each of them) instead
 * of mapping the shmem file itself: the vma keeps the stack file
 * as its vm_file and our vm_ops, so a mapping still holds the stack file
 * and the stack (stack.c, "Lifetime"; the uapi's "Stacks" comment), as
 * before.  get_futex_key() never looks at the vma's file, only at the
 * page's mapping; the shmem inode it keys on lives as long as the stack,
 * which every mapping holds.  The pages are in place from mmap() on
 * (VM_MIXEDMAP: fork copies the ptes; no fault handler is needed), as
 * they were when the region was vmalloc_user() memory.  These vmas are
 * not on the shmem mapping's i_mmap tree, so an rmap walk of a page
 * (reclaim, migration, truncation) does not find them: harmless here,
 * as the pages are held and unevictable (reclaim skips them, migration
 * fails on the extra references) and the file is truncated only when
 * the stack is freed, after the last mapping has gone.
 *
 * shmem_file_setup(), not shmem_kernel_file_setup(): 6.1 does not export
 * the latter.  The file is internal all the same: no fd or path reaches it.
 *
 * The kernel mapping is made once, at allocation, and stays until the
 * stack is freed: the kring's receive path writes packets through it
 * from softirq context, and nothing there may sleep or fault.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/shmem_fs.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sluice.h"

/*
 * Pages are never movable: they stay pinned for the stack's life, and a
 * pinned page in ZONE_MOVABLE or CMA would block hot-unplug and large
 * allocations.  A region that cannot be had fails the create (-ENOMEM)
 * rather than invoking the OOM killer.
 */
#define SLUICE_REGION_GFP	(GFP_HIGHUSER | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/* Drop the first @n pages of the region's page array. */
static void sluice_region_put_pages(struct sluice_stack *st, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		put_page(st->region_pages[i]);
}

/**
 * sluice_region_alloc - allocate, pin and map a stack's region
 * @st:		the stack; @st->region_size is set, a multiple of the page
 *		size (sluice_layout_check())
 *
 * Sets @st->region (the kernel mapping, zeroed), @st->region_file and
 * @st->region_pages.  Process context; may sleep for a long time on a
 * large region (a fatal signal stops it).
 *
 * Return: 0, -ENOMEM (no memory, or over a shmem or memcg limit), or
 * -EINTR on a fatal signal (the caller is dying and never sees it).
 */
int sluice_region_alloc(struct sluice_stack *st)
{
	unsigned long i, n = st->region_size >> PAGE_SHIFT;
	struct address_space *mapping;
	struct file *filp;
	struct page *page;
	void *addr;
	int ret;

	if (WARN_ON_ONCE(!n || st->region_size & ~PAGE_MASK))
		return -EINVAL;
	st->region_pages = kvcalloc(n, sizeof(*st->region_pages), GFP_KERNEL);
	if (!st->region_pages)
		return -ENOMEM;
	/* The whole size is committed now (no VM_NORESERVE): it is all used. */
	filp = shmem_file_setup("sluice-region", st->region_size, 0);
	if (IS_ERR(filp)) {
		ret = PTR_ERR(filp);
		goto err_free_array;
	}
	mapping = filp->f_mapping;
	/* Before any page is read in, so each goes on the unevictable list. */
	mapping_set_unevictable(mapping);
	mapping_set_gfp_mask(mapping, SLUICE_REGION_GFP);
	for (i = 0; i < n; i++) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_put_pages;
		}
		/* New shmem pages are zeroed, as vmalloc_user()'s were. */
		page = shmem_read_mapping_page_gfp(mapping, i, SLUICE_REGION_GFP);
		if (IS_ERR(page)) {
			ret = PTR_ERR(page) == -ENOSPC ? -ENOMEM : PTR_ERR(page);
			goto err_put_pages;
		}
		st->region_pages[i] = page;
		cond_resched();
	}
	/*
	 * VM_USERMAP: remap_vmalloc_range() maps only areas marked safe to
	 * hand to user space; every page of this one is the region's, zeroed
	 * when made.
	 */
	addr = vmap(st->region_pages, n, VM_MAP | VM_USERMAP, PAGE_KERNEL);
	if (!addr) {
		ret = -ENOMEM;
		goto err_put_pages;
	}
	st->region_file = filp;
	st->region = addr;
	return 0;

err_put_pages:
	sluice_region_put_pages(st, i);
	mapping_clear_unevictable(mapping);
	fput(filp);
err_free_array:
	kvfree(st->region_pages);
	st->region_pages = NULL;
	return ret;
}

/**
 * sluice_region_free - undo sluice_region_alloc()
 * @st:		the stack, with no mapping of the region left and nothing
 *		(kring receive path, debugfs, sysfs) that can still reach
 *		@st->region
 *
 * Process context (vunmap() may sleep).
 */
void sluice_region_free(struct sluice_stack *st)
{
	if (!st->region)
		return;
	vunmap(st->region);
	st->region = NULL;
	sluice_region_put_pages(st, st->region_size >> PAGE_SHIFT);
	kvfree(st->region_pages);
	st->region_pages = NULL;
	/* As SysV shm does for a locked segment it destroys. */
	mapping_clear_unevictable(st->region_file->f_mapping);
	/* The last reference: the file is truncated and its pages freed. */
	fput(st->region_file);
	st->region_file = NULL;
}

/**
 * sluice_region_mmap - map the region into a vma of a stack fd
 * @st:		the stack
 * @vma:	shared (the caller checked)
 *
 * Return: 0, -EINVAL for an offset other than 0 or a length over
 * region_size, or remap_vmalloc_range()'s error (the caller's mmap fails
 * and the vma goes with its ptes).
 */
int sluice_region_mmap(struct sluice_stack *st, struct vm_area_struct *vma)
{
	if (vma->vm_pgoff || vma->vm_end - vma->vm_start > st->region_size)
		return -EINVAL;
	/*
	 * Inserts the shmem pages behind the vmap area one by one
	 * (vm_insert_page(): VM_MIXEDMAP, the ptes take page references) and
	 * sets VM_DONTEXPAND | VM_DONTDUMP, so mremap cannot grow it.
	 */
	return remap_vmalloc_range(vma, st->region, 0);
}
