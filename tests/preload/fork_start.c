// SPDX-License-Identifier: BSD-2-Clause
/*
 * fork() right after listen() must not catch the library's own thread (the
 * twins' watcher, started by listen(): preload/twin.c) in its start.
 *
 * A runtime that wraps thread start, as AddressSanitizer does, may hold a
 * lock of its own while a new thread starts (ASan: its allocator's and its
 * stack depot's, in AsanThread::Init), and one that has no fork handler
 * leaves that lock held for ever in a child forked meanwhile: the child's
 * next thread, or its next allocation of that size, hangs.  Seen as
 * tests/preload/epoll_et.py timing out under the sanitized library: the
 * forked server stopped in the middle of its echo loop.
 *
 * This program plays such a runtime, deterministically: it interposes
 * pthread_create() (linked with its symbols exported, so the library's
 * call comes here), and every thread it makes is "starting" (counted in
 * starting) from the call until its function runs, 200 ms later, as a
 * thread in AsanThread::Init is.  Then listen() and at once fork(): the
 * child looks at the count.  Prints "fork-start ok" (no thread was in its
 * start at fork()), "fork-start held" (fork() caught the watcher in its
 * start: a runtime's lock taken there would be held for ever in the
 * child) or "fork-start no-thread" (the library started no thread: no
 * twin here).
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_MS	200

static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static int started;	/* threads made through the wrapper (count_mu) */
static int starting;	/* ... that have not reached their function yet */

static void count(int *n, int by)
{
	pthread_mutex_lock(&count_mu);
	*n += by;
	pthread_mutex_unlock(&count_mu);
}

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *start_slowly(void *p)
{
	struct start st = *(struct start *)p;
	struct timespec ts = { 0, START_MS * 1000000L };

	free(p);
	nanosleep(&ts, NULL);
	count(&starting, -1);
	return st.fn(st.arg);
}

static int (*real_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

__attribute__((constructor)) static void find_real(void)
{
	real_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
		dlsym(RTLD_NEXT, "pthread_create");
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct start *st;
	int ret;

	if (!real_create || !(st = malloc(sizeof(*st))))
		return EAGAIN;
	st->fn = fn;
	st->arg = arg;
	count(&started, 1);
	count(&starting, 1);
	ret = real_create(t, attr, start_slowly, st);
	if (ret) {
		count(&starting, -1);
		free(st);
	}
	return ret;
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0), status;
	pid_t pid;

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 8)) {
		perror("fork_start: listen");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork_start: fork");
		return 2;
	}
	if (pid == 0) {
		/* What the memory said at fork(): a thread was starting?
		 * (One thread here: no lock to read it.) */
		_exit(starting ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) > 1) {
		fprintf(stderr, "fork_start: the child failed\n");
		return 2;
	}
	pthread_mutex_lock(&count_mu);
	if (!started)
		printf("fork-start no-thread\n");
	else
		printf("fork-start %s\n", WEXITSTATUS(status) ? "held" : "ok");
	pthread_mutex_unlock(&count_mu);
	return WEXITSTATUS(status);
}
