// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attaching while the stack is being made: a process that finds the
 * /dev/shm file between its creation and its sizing (or its layout) waits
 * for the creator, as `sluice run` of a client started right after its
 * server's does; it never fails with EPROTO ("Protocol error"), which
 * one in about 24 such starts did before (one round in ~300 here).
 *
 *   test_attach_race [ROUNDS]
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "stack_fixture.h"

static int attach_loop(const char *name)
{
	struct sluice_stack *st;
	double end = fx_now_s() + 5;
	int ret;

	do
		ret = sluice_stack_attach(name, &st);
	while (ret == -ENOENT && fx_now_s() < end);
	if (ret)
		return -ret;
	sluice_stack_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3000, ok = 0, eproto = 0, other = 0;
	struct sluice_stack_config cfg = { .n_bufs = 64, .max_sockets = 16 };
	char name[32];

	snprintf(name, sizeof(name), "t-race-%d", (int)getpid());
	inet_pton(AF_INET, "10.7.0.1", &cfg.ip_addr);
	inet_pton(AF_INET, "255.255.255.0", &cfg.ip_mask);
	setenv("SLUICE_SHM", "1", 1);
	for (int i = 0; i < rounds; i++) {
		struct sluice_stack *st = NULL;
		int status = 0;
		pid_t pid;

		sluice_stack_destroy(name);
		pid = fork();
		if (pid == 0)
			_exit(attach_loop(name));
		/* Let the attacher spin on ENOENT a little, differently each time. */
		usleep((useconds_t)(i % 7) * 50);
		if (sluice_stack_create(name, &cfg, &st)) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			other++;
			continue;
		}
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			ok++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == EPROTO)
			eproto++;
		else
			other++;
		sluice_stack_close(st);
	}
	sluice_stack_destroy(name);
	printf("# %d rounds: %d attached, %d EPROTO, %d other\n", rounds, ok, eproto, other);
	tap_eq(eproto, 0, "an attach racing the creation never fails with EPROTO");
	tap_eq(ok, rounds, "every attacher got the stack");
	return tap_done();
}
