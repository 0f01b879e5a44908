// SPDX-License-Identifier: BSD-2-Clause
/*
 * sluice handoff PID FD: move a process's connection from its stack to a
 * kernel socket, live (issue 15; lib/preload/README.md, "Live hand-off").
 * Only the process can put the kernel socket at its fd number, so this
 * asks the process's library (its agent, lib/preload/agent.c) with one
 * datagram (core/core.h, SL_HO_NAME) and prints its answer.  Before asking it
 * checks, from /proc, what it can: the process is there and is the
 * caller's (or the caller is root), FD is open there, and is a Sluice
 * socket on a module's stack.  Exit 0 once the fd is the kernel's; 1 with
 * a line saying why not (the connection then stays where it was).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmds.h"
#include "core/core.h"

/* How long the process has to answer (a hand-off under QEMU's TCG takes
 * tens of ms). */
#define HO_WAIT_MS	20000

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "sluice handoff: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (%s)\n", strerror(err));
	return 1;
}

/* Into the process's network namespace if it is another (abstract
 * AF_UNIX names are per namespace): 0, or an errno. */
static int join_netns(int pid)
{
	char p[64];
	struct stat a, b;
	int fd, ret = 0;

	snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
	if (stat(p, &a) || stat("/proc/self/ns/net", &b))
		return errno;
	if (a.st_ino == b.st_ino && a.st_dev == b.st_dev)
		return 0;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET))
		ret = errno;
	if (fd >= 0)
		close(fd);
	return ret;
}

int cmd_handoff(int argc, char **argv)
{
	struct sockaddr_un to = { .sun_family = AF_UNIX }, me = { .sun_family = AF_UNIX };
	struct sl_ho_req rq = { .magic = SL_HO_MAGIC };
	struct sl_ho_ans an;
	char p[64], link[256], *end;
	struct stat st;
	long pid, fd;
	ssize_t n;
	int sk, len, e;

	if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
		printf("usage: sluice handoff PID FD\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: sluice handoff PID FD\n");
		return 2;
	}
	pid = strtol(argv[0], &end, 10);
	if (*end || pid <= 0 || pid > 0x3fffffff)
		return fail(EINVAL, "'%s' is no process id", argv[0]);
	fd = strtol(argv[1], &end, 10);
	if (*end || fd < 0 || fd > 0x7fffffff)
		return fail(EINVAL, "'%s' is no fd number", argv[1]);
	snprintf(p, sizeof(p), "/proc/%ld", pid);
	if (stat(p, &st))
		return fail(errno == ENOENT ? ESRCH : errno, "no process %ld", pid);
	if (getuid() && st.st_uid != getuid())
		return fail(EPERM, "process %ld is another user's (uid %u): only its user or root "
			    "may hand its sockets to the kernel", pid, (unsigned int)st.st_uid);
	snprintf(p, sizeof(p), "/proc/%ld/fd/%ld", pid, fd);
	n = readlink(p, link, sizeof(link) - 1);
	if (n < 0)
		return errno == ENOENT ? fail(EBADF, "process %ld has no fd %ld", pid, fd) :
			fail(errno, "cannot look at fd %ld of process %ld", fd, pid);
	link[n] = '\0';
	if (!strncmp(link, "socket:", 7) && !fds_is_placeholder(pid, link))
		return fail(ENOTSOCK, "fd %ld of process %ld is not a Sluice socket: it is a "
			    "kernel socket already (%s)", fd, pid, link);
	if (!strncmp(link, "socket:", 7))
		return fail(EOPNOTSUPP, "fd %ld of process %ld is a socket of a stack without "
			    "the module (%s): there the stack's address is not the kernel's and no "
			    "kernel socket can take its connection; hand-off needs a stack on a "
			    "device (sluice run --ifname); the connection stays in the stack",
			    fd, pid, link);
	if (strcmp(link, "anon_inode:[sluice-sock]"))
		return fail(ENOTSOCK, "fd %ld of process %ld is not a Sluice socket (%s)", fd,
			    pid, link);
	e = join_netns((int)pid);
	if (e)
		return fail(e, "cannot join the network namespace of process %ld (its agent "
			    "is named there)", pid);
	sk = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sk < 0)
		return fail(errno, "socket");
	/* Autobind: an abstract name of our own, for the answer. */
	if (bind(sk, (struct sockaddr *)&me, sizeof(sa_family_t)))
		return fail(errno, "bind");
	len = snprintf(to.sun_path + 1, sizeof(to.sun_path) - 1, SL_HO_NAME, (int)pid);
	rq.fd = (int32_t)fd;
	if (sendto(sk, &rq, sizeof(rq), 0, (struct sockaddr *)&to,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len)) < 0)
		return fail(errno, "process %ld has no hand-off agent (%s): is it running under "
			    "sluice run with this library?", pid, errno == ECONNREFUSED ?
			    "nobody holds its name" : "cannot send to it");
	for (;;) {
		struct pollfd pf = { .fd = sk, .events = POLLIN };

		if (poll(&pf, 1, HO_WAIT_MS) != 1)
			return fail(ETIMEDOUT, "process %ld did not answer in %d s (stopped?); "
				    "nothing was done", pid, HO_WAIT_MS / 1000);
		n = recv(sk, &an, sizeof(an), 0);
		if (n == (ssize_t)sizeof(an) && an.magic == SL_HO_MAGIC && an.fd == rq.fd)
			break;
	}
	close(sk);
	switch (an.err) {
	case 0:
		printf("fd %ld of process %ld is a kernel socket now, its connection moved live\n",
		       fd, pid);
		return 0;
	case EPERM:
		return fail(EPERM, "process %ld refused: the kernel refused TCP repair to it "
			    "(it needs CAP_NET_ADMIN), or the asking user is not its own; "
			    "the connection stays in the stack, working", pid);
	case ENOTSOCK:
	case EBADF:
		return fail(an.err, "fd %ld of process %ld is not a Sluice socket there", fd, pid);
	default:
		return fail(an.err, "process %ld could not hand fd %ld to the kernel; the "
			    "connection stays in the stack, working (lib/preload/README.md, "
			    "\"Refused\")", pid, fd);
	}
}
