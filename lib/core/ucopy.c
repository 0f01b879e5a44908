// SPDX-License-Identifier: BSD-2-Clause
/*
 * Checked copies of a program's memory (core.h, sl_ucopy()): the kernel's
 * exception-table fixups done in user space.  Each routine faults only at
 * one known instruction; a SIGSEGV/SIGBUS handler that finds the
 * interrupted instruction pointer there (sl_ucopy_fixup()) moves it to
 * the routine's fixup, which returns what was left, as copy_to_user()
 * does.  No jump buffer, no thread-local state, no system call: the
 * cost on the hot path is the copy itself (rep movsb, fast for small
 * copies on CPUs with FSRM, and for large ones with ERMS).
 *
 * x86-64 only; elsewhere plain copies (a fault kills the process, as a
 * memcpy() would).
 */
#include <string.h>

#include "core/core.h"

#if defined(__x86_64__)
extern const char sl_ucopy_insn[], sl_ucopy_end[], sl_uprobe_insn[], sl_uprobe_insn2[],
	sl_uprobe_fail[];
/* rep movsb leaves in rcx the bytes not copied when it faults (string
 * instructions are restartable: their registers show the progress). */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl sl_ucopy\n.type sl_ucopy, @function\n"
	"sl_ucopy:\n"
	"	movq %rdx, %rcx\n"
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
