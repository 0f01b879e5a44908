/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whose is fd, to the kernel (the test programs that print or check it:
 * conform.c, errq.c, kconnect.c, oslisten.c, v6dual.c, dlopen_prog.c).
 * A kernel TCP or UDP socket is a "socket:[N]" that /proc/self/net/unix
 * does not list; the stack's is a placeholder, an AF_UNIX stream socket
 * of the library's, neither connected nor listening (listed there), or a
 * module socket fd ("anon_inode:[sluice-sock]", no socket at all).  The
 * library's own fstat and getsockopt say an AF_INET socket either way.
 */
#ifndef SLUICE_TESTS_STACKFD_H
#define SLUICE_TESTS_STACKFD_H

#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* 1: the stack's; 0: a kernel socket (or no fd). */
static inline int stack_fd(int fd)
{
	char path[64], link[128], line[512];
	unsigned long ino, u;
	unsigned int fl, ty, st;
	int yes = 0;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	if (sscanf(link, "socket:[%lu]", &ino) != 1)
		return 1;
	f = fopen("/proc/self/net/unix", "re");
	while (f && !yes && fgets(line, sizeof(line), f))
		yes = sscanf(line, "%*s %*s %*s %x %x %x %lu", &fl, &ty, &st, &u) == 4 &&
		      u == ino && !fl && ty == SOCK_STREAM && st == 1;
	if (f)
		fclose(f);
	return yes;
}

#endif
