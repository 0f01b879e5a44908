// SPDX-License-Identifier: BSD-2-Clause
/*
 * Signals and blocking calls: sigaction and signal are interposed so the
 * library knows when a handler ran in a thread.  The program's handler is
 * installed behind a trampoline that counts deliveries per thread and
 * remembers whether the handler asked for SA_RESTART; waits on Sluice
 * sockets (poll.c) sleep in slices and look at that count, so a handler
 * that ran ends the wait with EINTR the way the kernel would: always for
 * poll, select and epoll; for send, recv, accept and connect unless the
 * handler has SA_RESTART (and the socket has no SO_RCVTIMEO/SO_SNDTIMEO).
 * sigaction() reports the program's own handler back, never the trampoline.
 * siginterrupt() is interposed too: glibc's changes SA_RESTART through its
 * internal sigaction, which the trampoline would not see.
 *
 * SIGSEGV and SIGBUS are also the library's own: a user buffer it is
 * about to copy is probed first (pl_readable()), and a fault in the probe
 * makes the call EFAULT, as the kernel's copy_from_user() does, instead of
 * killing the program inside the library.  The handler is installed by the
 * library's constructor (before any sandbox) and stays; the program's own
 * disposition of those two signals is kept beside it and honoured: its
 * handler is called, and the default (or SIG_IGN, which the kernel does
 * not honour for a fault either) is put back and the fault taken again.
 */
#include <pthread.h>
#include <string.h>
#include <ucontext.h>

#include "preload.h"


static struct sigaction user_act[_NSIG];
static bool wrapped[_NSIG];
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread unsigned int tls_count;
static __thread bool tls_norestart;
/* tls_count just after the last handler without SA_RESTART ran. */
static __thread unsigned int tls_norestart_at;

unsigned int pl_sig_count(void)
{
	return SL_READ_ONCE(tls_count);
}

bool pl_sig_restart_since(unsigned int sigs)
{
	/* Only handlers that ran after sigs was read count: one without
	 * SA_RESTART that ran before the wait (a SIGIO outside any call)
	 * does not make a later SA_RESTART one interrupt it. */
	return (int)(SL_READ_ONCE(tls_norestart_at) - sigs) <= 0;
}

bool pl_sig_take_restart(void)
{
	bool restart = !tls_norestart;

	tls_norestart = false;
	return restart;
}

/* SIGSEGV and SIGBUS are the library's (pl_fault_init() succeeded). */
bool pl_fault_armed;
#define fault_armed pl_fault_armed
/*
 * The probe: one load a call, at a known instruction.  A fault there is
 * fixed up as the kernel's exception tables fix a fault in
 * copy_from_user(): the handler moves the interrupted instruction pointer
 * to pl_probe_fixup, which returns -1.  No jump buffer to set up, no
 * thread-local state, and the signal mask comes back with the return from
 * the handler.  x86-64 only; elsewhere nothing is probed.
 */
#if defined(__x86_64__)
#define PL_PROBE 1
int pl_probe_byte(const void *p);		/* 0, or -1 if p faults */
extern const char pl_probe_load[], pl_probe_fixup[];
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl pl_probe_byte\n.hidden pl_probe_byte\n.type pl_probe_byte, @function\n"
	"pl_probe_byte:\n"
	"	xorl %eax, %eax\n"
	".globl pl_probe_load\n.hidden pl_probe_load\n"
	"pl_probe_load:\n"
	"	movzbl (%rdi), %ecx\n"
	"	ret\n"
	".globl pl_probe_fixup\n.hidden pl_probe_fixup\n"
	"pl_probe_fixup:\n"
	"	movl $-1, %eax\n"
	"	ret\n"
	".size pl_probe_byte, .-pl_probe_byte\n"
	".popsection\n");

/* A fault at the probe's load: made to return -1. */
static bool probe_fixup(const siginfo_t *si, void *uc)
{
	greg_t *ip = &((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

	uintptr_t to;

	if (!si || si->si_code <= 0)
		return false;
	if (*ip == (greg_t)(uintptr_t)pl_probe_load)
		to = (uintptr_t)pl_probe_fixup;
	else
		to = sl_ucopy_fixup((uintptr_t)*ip);	/* the stack's checked copies */
	if (!to)
		return false;
	*ip = (greg_t)to;
	return true;
}
#else
#define PL_PROBE 0
static bool probe_fixup(const siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	return false;
}
#endif

static bool fault_sig(int sig)
{
	return fault_armed && (sig == SIGSEGV || sig == SIGBUS);
}

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = user_act[sig];

	uint32_t *w = SL_READ_ONCE(sl_wait_word);

	SL_WRITE_ONCE(tls_count, tls_count + 1);
	if (!(a.sa_flags & SA_RESTART)) {
		tls_norestart = true;
		SL_WRITE_ONCE(tls_norestart_at, tls_count);
	}
	/* A Sluice wait of this thread about to sleep on w returns at once
	 * (run.h, sl_wait_word). */
	if (w)
		sl_fetch_add(w, 1);
	if (a.sa_flags & SA_RESETHAND) {
		/* The kernel reset its disposition already (not for a fault
		 * signal, whose handler stays: fault_handler() then acts as
		 * the default): so do we. */
		user_act[sig].sa_handler = SIG_DFL;
		user_act[sig].sa_flags &= ~SA_SIGINFO;
		wrapped[sig] = fault_sig(sig);
	}
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else if (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN)
		a.sa_handler(sig);
}

static bool is_handler(const struct sigaction *act)
{
	if (act->sa_flags & SA_SIGINFO)
		return act->sa_sigaction != NULL;
	return act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
}

/* SIGSEGV or SIGBUS: a fault in the probe is the library's, anything
 * else the program's. */
static void fault_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a, dfl;

	if (probe_fixup(si, uc))
		return;
	a = user_act[sig];
	if (is_handler(&a)) {
		trampoline(sig, si, uc);
		return;
	}
	if (a.sa_handler == SIG_IGN && si && si->si_code <= 0)
		return;			/* sent, not a fault: ignored */
	/* The default: as if the library had no handler.  A fault happens
	 * again on return; a sent signal is sent again, now to the default. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sl_sys_sigaction(sig, &dfl, NULL);
	if (!si || si->si_code <= 0)
		pthread_kill(pthread_self(), sig);
}

/* The kernel's action for fault signal sig given the program's act. */
static struct sigaction fault_act(const struct sigaction *act)
{
	struct sigaction k;

	memset(&k, 0, sizeof(k));
	if (is_handler(act)) {
		k = *act;
		k.sa_flags &= ~SA_RESETHAND;	/* the trampoline does it */
	} else {
		sigemptyset(&k.sa_mask);
		k.sa_flags = SA_NODEFER | SA_ONSTACK;
	}
	k.sa_sigaction = fault_handler;
	k.sa_flags |= SA_SIGINFO;
	return k;
}

void pl_fault_init(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS };
	struct sigaction old, k;
	bool ok = true;

	if (!PL_PROBE)
		return;
	pthread_mutex_lock(&sig_mu);
	for (unsigned int i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		int sig = sigs[i];

		/* Whatever was there first (a sanitizer's handler, say) is
		 * the program's. */
		if (sl_sys_sigaction(sig, NULL, &old)) {
			ok = false;
			break;
		}
		k = fault_act(&old);
		if (sl_sys_sigaction(sig, &k, NULL)) {
			sl_sys_sigaction(sig, &old, NULL);
			ok = false;
			break;
		}
		user_act[sig] = old;
		wrapped[sig] = true;
	}
	if (ok)
		fault_armed = true;
	pthread_mutex_unlock(&sig_mu);
}

bool pl_readable(const void *p, size_t len)
{
	const uint8_t *a = p;

	if (!len || !fault_armed)
		return true;
#if PL_PROBE
	/* A byte in each page (the first of the range in it): every page
	 * the range touches, its last one too. */
	for (size_t off = 0; off < len; off += 4096 - ((uintptr_t)(a + off) & 4095))
		if (pl_probe_byte(a + off))
			return false;
	return true;
#else
	return true;
#endif
}

bool pl_writable(void *p, size_t len)
{
	uint8_t *a = p;

	if (!len || !fault_armed)
		return true;
	for (size_t off = 0; off < len; off += 4096 - ((uintptr_t)(a + off) & 4095))
		if (sl_uprobe_w(a + off))
			return false;
	return true;
}

bool pl_bad_dst(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;

	if (!fault_armed)
		return pl_bad_buf(p, len);
	return len && (a + len < a || a + len > PL_USER_TOP);
}


EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction k, kold, prev;
	bool was;
	int ret;

	if (sig <= 0 || sig >= _NSIG || sig == SIGKILL || sig == SIGSTOP || pl_cfg.disabled)
		return REAL(sigaction)(sig, act, old);
	pthread_mutex_lock(&sig_mu);
	prev = user_act[sig];
	was = wrapped[sig];
	if (act && fault_sig(sig)) {
		/* The library's handler stays; the program's act is kept. */
		k = fault_act(act);
		user_act[sig] = *act;
		ret = REAL(sigaction)(sig, &k, &kold);
		if (ret)
			user_act[sig] = prev;
	} else if (act && is_handler(act)) {
		k = *act;
		k.sa_sigaction = trampoline;
		k.sa_flags |= SA_SIGINFO;
		/* Published before the kernel can call the trampoline. */
		user_act[sig] = *act;
		ret = REAL(sigaction)(sig, &k, &kold);
		if (ret)
			user_act[sig] = prev;
		else
			wrapped[sig] = true;
	} else {
		ret = REAL(sigaction)(sig, act, &kold);
		if (!ret && act)
			wrapped[sig] = false;
	}
	if (!ret && old)
		*old = was ? prev : kold;
	pthread_mutex_unlock(&sig_mu);
	return ret;
}

/* siginterrupt(): SA_RESTART off (flag) or on, as glibc's, but through the
 * wrapper above, so that the trampoline knows (signal(7): a blocking
 * socket call interrupted by a handler without SA_RESTART fails EINTR). */
EXPORT int siginterrupt(int sig, int flag)
{
	struct sigaction a;

	if (sigaction(sig, NULL, &a))
		return -1;
	if (flag)
		a.sa_flags &= ~SA_RESTART;
	else
		a.sa_flags |= SA_RESTART;
	return sigaction(sig, &a, NULL);
}

/* glibc's signal(): BSD semantics, the handler stays and calls restart. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction a, old;

	memset(&a, 0, sizeof(a));
	a.sa_handler = handler;
	a.sa_flags = SA_RESTART;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, sig);
	if (sigaction(sig, &a, &old))
		return SIG_ERR;
	return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction :
					     old.sa_handler;
}
