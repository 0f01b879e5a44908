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
 */
#include <pthread.h>
#include <string.h>

#include "preload.h"


static struct sigaction user_act[_NSIG];
static bool wrapped[_NSIG];
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread unsigned int tls_count;
static __thread bool tls_norestart;

unsigned int pl_sig_count(void)
{
	return SL_READ_ONCE(tls_count);
}

bool pl_sig_take_restart(void)
{
	bool restart = !tls_norestart;

	tls_norestart = false;
	return restart;
}

static void trampoline(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = user_act[sig];

	uint32_t *w = SL_READ_ONCE(sl_wait_word);

	if (!(a.sa_flags & SA_RESTART))
		tls_norestart = true;
	SL_WRITE_ONCE(tls_count, tls_count + 1);
	/* A Sluice wait of this thread about to sleep on w returns at once
	 * (run.h, sl_wait_word). */
	if (w)
		sl_fetch_add(w, 1);
	if (a.sa_flags & SA_RESETHAND) {
		/* The kernel reset its disposition already: so do we. */
		user_act[sig].sa_handler = SIG_DFL;
		wrapped[sig] = false;
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
	if (act && is_handler(act)) {
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
