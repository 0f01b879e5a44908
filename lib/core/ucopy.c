// SPDX-License-Identifier: BSD-2-Clause
/*
 * Checked copies of a program's memory (core.h, sl_ucopy()): the kernel's
 * exception-table fixups done in user space.  Each routine faults only at
 * one known instruction; a SIGSEGV/SIGBUS handler that finds the
 * interrupted instruction pointer there (sl_ucopy_fixup()) moves it to
 * the routine's fixup, which returns what was left, as copy_to_user()
 * does.  No jump buffer, no thread-local state, no system call: the
 * cost on the hot path is the copy itself.
 *
 * x86-64 only; elsewhere plain copies (a fault kills the process, as a
 * memcpy() would).
 */
#include <string.h>

#include "core/core.h"

size_t sl_ucopy_cur(struct sl_ucur *c, const void *src, size_t n)
{
	struct sl_ucur was = *c;
	const uint8_t *p = src;
	size_t left = n;

	while (left && c->i < c->n) {
		size_t room = c->iov[c->i].iov_len - c->off, k = left < room ? left : room;

		if (k && sl_ucopy((uint8_t *)c->iov[c->i].iov_base + c->off, p, k)) {
			*c = was;
			return n;
		}
		p += k;
		left -= k;
		c->off += k;
		if (c->off == c->iov[c->i].iov_len) {
			c->i++;
			c->off = 0;
		}
	}
	if (left) {	/* no room for it all (the caller's total was less) */
		*c = was;
		return n;
	}
	return 0;
}

int sl_uprobe_cur(const struct sl_ucur *c, size_t n)
{
	size_t off = c->off;

	for (unsigned int i = c->i; n && i < c->n; i++, off = 0) {
		uint8_t *p = (uint8_t *)c->iov[i].iov_base + off;
		size_t k = c->iov[i].iov_len - off;

		if (k > n)
			k = n;
		for (size_t o = 0; o < k; o += 4096 - ((uintptr_t)(p + o) & 4095))
			if (sl_uprobe_w(p + o))
				return -1;
		n -= k;
	}
	return 0;
}

#if defined(__x86_64__)
extern const char sl_ucopy_fast[], sl_ucopy_insn[], sl_ucopy_end[], sl_uprobe_insn[],
	sl_uprobe_insn2[], sl_uprobe_fail[];
/*
 * sl_ucopy: 64 bytes a turn in SSE registers, then 16, 8, 4, then single
 * bytes, with rsi, rdi and rcx moved on only after a turn's stores; a
 * fault anywhere there resumes at the rep movsb below, which copies the
 * rest from the turn that faulted (its bytes again, the same) and
 * faults again at the exact byte; from there the end, rcx the bytes not
 * copied (string instructions are restartable: their registers show the
 * progress).  rep movsb alone costs 10-40 ns more a copy here (64 to
 * 1,460 bytes) than this loop.
 */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl sl_ucopy\n.type sl_ucopy, @function\n"
	"sl_ucopy:\n"
	"	movq %rdx, %rcx\n"
	".globl sl_ucopy_fast\n.hidden sl_ucopy_fast\n"
	"sl_ucopy_fast:\n"
	"	cmpq $64, %rcx\n"
	"	jb 4f\n"
	"1:	movdqu (%rsi), %xmm0\n"
	"	movdqu 16(%rsi), %xmm1\n"
	"	movdqu 32(%rsi), %xmm2\n"
	"	movdqu 48(%rsi), %xmm3\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	movdqu %xmm1, 16(%rdi)\n"
	"	movdqu %xmm2, 32(%rdi)\n"
	"	movdqu %xmm3, 48(%rdi)\n"
	"	addq $64, %rsi\n"
	"	addq $64, %rdi\n"
	"	subq $64, %rcx\n"
	"	cmpq $64, %rcx\n"
	"	jae 1b\n"
	"4:	cmpq $16, %rcx\n"
	"	jb 2f\n"
	"	movdqu (%rsi), %xmm0\n"
	"	movdqu %xmm0, (%rdi)\n"
	"	addq $16, %rsi\n"
	"	addq $16, %rdi\n"
	"	subq $16, %rcx\n"
	"	jmp 4b\n"
	"2:	cmpq $8, %rcx\n"
	"	jb 5f\n"
	"	movq (%rsi), %rax\n"
	"	movq %rax, (%rdi)\n"
	"	addq $8, %rsi\n"
	"	addq $8, %rdi\n"
	"	subq $8, %rcx\n"
	"	jmp 2b\n"
	"5:	cmpq $4, %rcx\n"
	"	jb 3f\n"
	"	movl (%rsi), %eax\n"
	"	movl %eax, (%rdi)\n"
	"	addq $4, %rsi\n"
	"	addq $4, %rdi\n"
	"	subq $4, %rcx\n"
	"3:	testq %rcx, %rcx\n"
	"	jz sl_ucopy_end\n"
	"	movb (%rsi), %al\n"
	"	movb %al, (%rdi)\n"
	"	incq %rsi\n"
	"	incq %rdi\n"
	"	decq %rcx\n"
	"	jmp 3b\n"
	".globl sl_ucopy_insn\n.hidden sl_ucopy_insn\n"
	"sl_ucopy_insn:\n"
	"	rep movsb\n"
	".globl sl_ucopy_end\n.hidden sl_ucopy_end\n"
	"sl_ucopy_end:\n"
	"	movq %rcx, %rax\n"
	"	ret\n"
	".size sl_ucopy, .-sl_ucopy\n"
	".p2align 4\n"
	".globl sl_uprobe_w\n.type sl_uprobe_w, @function\n"
	"sl_uprobe_w:\n"
	"	xorl %eax, %eax\n"
	".globl sl_uprobe_insn\n.hidden sl_uprobe_insn\n"
	"sl_uprobe_insn:\n"
	"	movzbl (%rdi), %ecx\n"
	".globl sl_uprobe_insn2\n.hidden sl_uprobe_insn2\n"
	"sl_uprobe_insn2:\n"
	"	movb %cl, (%rdi)\n"
	"	ret\n"
	".globl sl_uprobe_fail\n.hidden sl_uprobe_fail\n"
	"sl_uprobe_fail:\n"
	"	movl $-1, %eax\n"
	"	ret\n"
	".size sl_uprobe_w, .-sl_uprobe_w\n"
	".popsection\n");

uintptr_t sl_ucopy_fixup(uintptr_t ip)
{
	if (ip >= (uintptr_t)sl_ucopy_fast && ip < (uintptr_t)sl_ucopy_insn)
		return (uintptr_t)sl_ucopy_insn;
	if (ip == (uintptr_t)sl_ucopy_insn)
		return (uintptr_t)sl_ucopy_end;
	if (ip == (uintptr_t)sl_uprobe_insn || ip == (uintptr_t)sl_uprobe_insn2)
		return (uintptr_t)sl_uprobe_fail;
	return 0;
}
#else
size_t sl_ucopy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}

int sl_uprobe_w(void *p)
{
	(void)p;
	return 0;
}

uintptr_t sl_ucopy_fixup(uintptr_t ip)
{
	(void)ip;
	return 0;
}
#endif
