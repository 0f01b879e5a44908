// SPDX-License-Identifier: BSD-2-Clause
/*
 * Stack regions: creation by name, attachment (also from a forked child),
 * and refusal of regions that are not valid Sluice stacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "stack_fixture.h"

static void test_names(void)
{
	struct sluice_stack *st;

	tap_eq(sluice_stack_create("", NULL, &st), -EINVAL, "empty name is -EINVAL");
	tap_eq(sluice_stack_create("a/b", NULL, &st), -EINVAL, "a name with / is -EINVAL");
	tap_eq(sluice_stack_create(".hidden", NULL, &st), -EINVAL, "a leading dot is -EINVAL");
	tap_eq(sluice_stack_create("0123456789012345678901234567890123", NULL, &st), -EINVAL,
	       "a name of 34 characters is -EINVAL");
	tap_eq(sluice_stack_attach("t-no-such-stack", &st), -ENOENT, "attach to no stack is -ENOENT");
}

static void test_bad_config(void)
{
	struct sluice_stack_config c = { .buf_size = 3000 };
	struct sluice_stack *st;

	tap_eq(sluice_stack_create("t-badcfg", &c, &st), -EINVAL, "buf_size not a power of two");
	c.buf_size = 1024;
	c.mtu = 1500;
	tap_eq(sluice_stack_create("t-badcfg", &c, &st), -EINVAL, "MTU larger than a buffer");
	c = (struct sluice_stack_config){ .n_bufs = 4 };
	tap_eq(sluice_stack_create("t-badcfg", &c, &st), -EINVAL, "too few buffers");
}

static void test_create_attach(void)
{
	struct sl_stack *s = fx_stack("region", "10.0.0.1", NULL);
	struct sluice_stack *st2, *dup;
	pid_t pid;
	int status;

	tap_eq(sluice_stack_create(s->name, NULL, &dup), -EEXIST, "second create is -EEXIST");
	tap_eq(sluice_stack_attach(s->name, &st2), 0, "attach by name");
	tap_ok(((struct sl_stack *)st2)->base != s->base, "a second mapping at another address");
	tap_eq(((struct sl_stack *)st2)->r->n_bufs, 256, "the attached stack sees the config");
	tap_eq(s->r->attach_count, 2, "attach_count counts both");

	/* A forked child attaches by name and changes a counter we then see. */
	pid = fork();
	if (pid == 0) {
		struct sluice_stack *c;

		if (sluice_stack_attach(s->name, &c))
			_exit(2);
		sl_lock((struct sl_stack *)c);
		((struct sl_stack *)c)->lib->counters[0].c[SL_C_loopback] = 4242;
		sl_unlock((struct sl_stack *)c);
		sluice_stack_close(c);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "forked child attached");
	tap_eq(s->lib->counters[0].c[SL_C_loopback], 4242, "child's write is visible to the parent");
	sluice_stack_close(st2);
	fx_destroy(s);
}

/* Corrupt one field of the region file, then try to attach.  The region
 * is made in /dev/shm (SLUICE_SHM=1) even when the module is loaded: the
 * attach checks are the same, and a file is what a test can scribble on. */
static int attach_corrupted(size_t off, uint64_t val, size_t width)
{
	struct sl_stack *s;

	setenv("SLUICE_SHM", "1", 1);
	s = fx_stack("corrupt", "10.0.0.1", NULL);
	struct sluice_stack *st;
	char path[64], name[32];
	int fd, ret;

	snprintf(name, sizeof(name), "%s", s->name);
	sl_region_path(name, path, sizeof(path));
	fd = open(path, O_RDWR);
	if (pwrite(fd, &val, width, off) != (ssize_t)width)
		ret = -999;
	else
		ret = sluice_stack_attach(name, &st);
	close(fd);
	if (!ret)
		sluice_stack_close(st);
	fx_destroy(s);
	unsetenv("SLUICE_SHM");
	return ret;
}

static void test_attach_validates(void)
{
	tap_eq(attach_corrupted(offsetof(struct sluice_region, magic), 0x1234, 4), -EPROTO,
	       "bad magic is -EPROTO");
	tap_eq(attach_corrupted(offsetof(struct sluice_region, abi_version), 99, 4), -EPROTO,
	       "other ABI is -EPROTO");
	tap_eq(attach_corrupted(offsetof(struct sluice_region, bufdata_off), 1ull << 40, 8), -EPROTO,
	       "buffer area outside the file is -EPROTO");
	tap_eq(attach_corrupted(offsetof(struct sluice_region, n_bufs), 1u << 21, 4), -EPROTO,
	       "n_bufs not matching the file size is -EPROTO");
	tap_eq(attach_corrupted(offsetof(struct sluice_region, sock_size), 16, 4), -EPROTO,
	       "socket size of another build is -EPROTO");
	/* Issue 17: never a silent attach, and never a name blocked for
	 * good: the broken stack's name is reclaimed, the caller makes anew. */
	tap_eq(attach_corrupted(offsetof(struct sluice_region, state), SLUICE_STATE_BROKEN, 4),
	       -ENOENT, "a broken /dev/shm stack is reclaimed by attach: -ENOENT");
}

/*
 * A stack laid out by another build of the library (another layout
 * version) is never attached silently: -EPROTO, and one line on stderr
 * naming both versions.
 */
static void test_layout_version(void)
{
	char msg[512] = "", want[64];
	int err, saved, ret;
	FILE *f = tmpfile();

	fflush(stderr);
	saved = dup(2);
	err = fileno(f);
	dup2(err, 2);
	ret = attach_corrupted(SLUICE_REGION_LIB_OFF + offsetof(struct sl_region, lib_layout),
			       SL_LAYOUT_VERSION + 1, 4);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	if (!fgets(msg, sizeof(msg), f))
		msg[0] = '\0';
	fclose(f);
	tap_eq(ret, -EPROTO, "a stack of another library layout is -EPROTO");
	snprintf(want, sizeof(want), "layout version %u;", SL_LAYOUT_VERSION + 1);
	tap_ok(strstr(msg, want) != NULL, "the message names the stack's layout (%s)", want);
	snprintf(want, sizeof(want), "has layout version %u", SL_LAYOUT_VERSION);
	tap_ok(strstr(msg, want) != NULL, "and this library's (%s)", want);
	snprintf(want, sizeof(want), "stack t-corrupt-%d ", (int)getpid());
	tap_ok(strstr(msg, want) != NULL, "and the stack's name (%s)", want);
}

static void test_idle_socket_size(void)
{
	tap_ok(sizeof(struct sl_sock) <= 1024, "socket slot is %zu bytes (<= 1024)",
	       sizeof(struct sl_sock));
}

int main(void)
{
	test_names();
	test_bad_config();
	test_create_attach();
	test_attach_validates();
	test_layout_version();
	test_idle_socket_size();
	return tap_done();
}
