// SPDX-License-Identifier: BSD-2-Clause
/*
 * A plain program, for sluice run, that serves a connection from a child
 * locked in a seccomp sandbox as a privilege-separated server's is
 * (issue 18): the child may make only the system calls that OpenSSH's
 * pre-authentication sandbox allows, and is killed (SIGSYS) on any other.
 *
 *   sandboxed PORT ROUNDS
 *	The parent listens on 127.0.0.1:PORT, forks a client that connects
 *	and makes ROUNDS request/reply exchanges (1-2000 bytes, each checked,
 *	some after a pause so that the server waits), accepts the
 *	connection, and forks the sandboxed child, which echoes with poll,
 *	select, read and write until EOF, then shuts down and closes.
 *	Prints "child exit N" or "child killed by signal N", and "client
 *	ROUNDS ok" or what went wrong; exits 0 only if all went well.
 *
 * The filter is ours, written from the list in OpenSSH's
 * sandbox-seccomp-filter.c (portable 9.x, preauth_insns): allowed are
 * brk, clock_gettime, close, exit, exit_group, futex, geteuid, getpgid,
 * getpid, getrandom, gettimeofday, getuid, madvise, mmap and mprotect
 * (not PROT_EXEC), mremap, munmap, nanosleep, clock_nanosleep, poll,
 * pselect6, select, read, rt_sigprocmask, shutdown, time and write;
 * open, openat, stat, lstat, fstat, newfstatat, shmget, shmat and shmdt
 * fail with EACCES; everything else kills the process.  Like sshd, the
 * child also sets RLIMIT_FSIZE and RLIMIT_NPROC to 0, RLIMIT_NOFILE to 1
 * (no new descriptor; with 0 the kernel refuses poll() on one fd) and
 * PR_SET_NO_NEW_PRIVS first.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ALLOW(nr)							\
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),		\
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY(nr, err)							\
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),		\
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))
/* mmap/mprotect: allowed unless PROT_EXEC is asked for (arg 2). */
#define ALLOW_NOEXEC(nr)						\
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 4),		\
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])), \
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 1, 0),		\
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),			\
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

static const struct sock_filter insns[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	DENY(__NR_open, EACCES), DENY(__NR_openat, EACCES), DENY(__NR_stat, EACCES),
	DENY(__NR_lstat, EACCES), DENY(__NR_fstat, EACCES), DENY(__NR_newfstatat, EACCES),
	DENY(__NR_shmget, EACCES), DENY(__NR_shmat, EACCES), DENY(__NR_shmdt, EACCES),
	ALLOW(__NR_brk), ALLOW(__NR_clock_gettime), ALLOW(__NR_close), ALLOW(__NR_exit),
	ALLOW(__NR_exit_group), ALLOW(__NR_futex), ALLOW(__NR_geteuid), ALLOW(__NR_getpgid),
	ALLOW(__NR_getpid), ALLOW(__NR_getrandom), ALLOW(__NR_gettimeofday), ALLOW(__NR_getuid),
	ALLOW(__NR_madvise), ALLOW(__NR_mremap), ALLOW(__NR_munmap), ALLOW(__NR_nanosleep),
	ALLOW(__NR_clock_nanosleep), ALLOW(__NR_poll), ALLOW(__NR_pselect6), ALLOW(__NR_select),
	ALLOW(__NR_read), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_shutdown), ALLOW(__NR_time),
	ALLOW(__NR_write),
	/* Reloads nr: the last rules test an argument. */
	ALLOW_NOEXEC(__NR_mmap),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	ALLOW_NOEXEC(__NR_mprotect),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};

static void sandbox(void)
{
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]),
				   .filter = (struct sock_filter *)insns };
	struct rlimit zero = { 0, 0 }, one = { 1, 1 };

	if (setrlimit(RLIMIT_FSIZE, &zero) || setrlimit(RLIMIT_NOFILE, &one) ||
	    setrlimit(RLIMIT_NPROC, &zero) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("sandbox");
		_exit(3);
	}
}

/* The sandboxed child: echo until EOF with the calls a sandbox allows. */
static int echo_sandboxed(int fd)
{
	static char buf[4096];
	int n_select = 0;

	sandbox();
	for (;;) {
		ssize_t n, w;

		/* Alternately poll and select for input, as servers do. */
		if (n_select++ & 1) {
			fd_set r;
			struct timeval tv = { 5, 0 };

			FD_ZERO(&r);
			FD_SET(fd, &r);
			if (select(fd + 1, &r, NULL, NULL, &tv) != 1)
				return 4;
		} else {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 5000) != 1)
				return 5;
		}
		n = read(fd, buf, sizeof(buf));
		if (n == 0)
			break;
		if (n < 0)
			return 6;
		for (ssize_t off = 0; off < n; off += w) {
			w = write(fd, buf + off, (size_t)(n - off));
			if (w <= 0)
				return 7;
		}
	}
	shutdown(fd, SHUT_RDWR);
	close(fd);
	return 0;
}

static int read_all(int fd, char *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* The peer: ROUNDS exchanges, each checked; "client N ok" or why not. */
static int client(int port, int rounds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	static char out[2000], in[2000];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	unsigned int x = 12345;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("client connect");
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		size_t len = 1 + (x = x * 1103515245 + 12345) % sizeof(out);

		for (size_t k = 0; k < len; k++)
			out[k] = (char)(x >> (k % 24));
		if (i % 16 == 0)
			usleep(20000);	/* the server waits meanwhile */
		if (write(fd, out, len) != (ssize_t)len || read_all(fd, in, len) ||
		    memcmp(in, out, len)) {
			printf("client round %d failed\n", i);
			return 1;
		}
	}
	close(fd);
	printf("client %d ok\n", rounds);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int port, rounds, l, c, one = 1, status, cstatus, ok = 1;
	pid_t cl, child;

	if (argc != 3) {
		fprintf(stderr, "usage: sandboxed PORT ROUNDS\n");
		return 2;
	}
	port = atoi(argv[1]);
	rounds = atoi(argv[2]);
	a.sin_port = htons((uint16_t)port);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4)) {
		perror("listen");
		return 2;
	}
	fflush(stdout);
	cl = fork();
	if (cl == 0) {
		int r;

		close(l);
		r = client(port, rounds);
		fflush(stdout);
		_exit(r);
	}
	c = accept(l, NULL, NULL);
	if (c < 0) {
		perror("accept");
		return 2;
	}
	child = fork();
	if (child == 0)
		_exit(echo_sandboxed(c));
	/* As sshd's monitor: the parent keeps its descriptor meanwhile. */
	waitpid(child, &status, 0);
	if (WIFSIGNALED(status)) {
		printf("child killed by signal %d\n", WTERMSIG(status));
		ok = 0;
	} else {
		printf("child exit %d\n", WEXITSTATUS(status));
		ok &= WEXITSTATUS(status) == 0;
	}
	fflush(stdout);
	if (!ok)
		kill(cl, SIGKILL);
	waitpid(cl, &cstatus, 0);
	ok &= WIFEXITED(cstatus) && WEXITSTATUS(cstatus) == 0;
	close(c);
	close(l);
	return ok ? 0 : 1;
}
