// SPDX-License-Identifier: BSD-2-Clause
/*
 * Sockets kept across an exec of a program that does not run under Sluice
 * (issue 15; lib/preload/README.md, "At exec"): a listener (AF_INET, with
 * O_NONBLOCK), a dual-stack AF_INET6 listener on [::], a bound UDP socket,
 * a fresh TCP socket and a close-on-exec listener.  The new program (this
 * one again, its environment without LD_PRELOAD) must find each at its fd
 * number as Linux leaves it, and serve: a client process forked before
 * (under Sluice when this runs under Sluice: a stack client) connects to
 * both listeners and sends a datagram (and one before the exec, which the
 * new program reads first, from the same sender); the new program connects its
 * fresh socket to the first listener itself (a kernel client).  Every line
 * printed is the same on the kernel and under sluice run.
 *
 * posix_spawn, posix_spawnp: the program spawns itself instead (glibc:
 * clone with CLONE_VM and CLONE_VFORK, the exec inside libc), with a file
 * action that dup2()s the close-on-exec listener to its fd + 100 (vfork:
 * vfork() and execve() in the child, no file action); the
 * parent then says what its own fds are, closes what it gave (a
 * supervisor's way), lets the new program go on, waits for it and the
 * client, and serves one connection of its own on the close-on-exec
 * listener, which it kept.
 *
 *   exec_keep run METHOD       METHOD: execve, fexecve, execveat,
 *                              posix_spawn, posix_spawnp or vfork
 *   (EK_ADDR=A.B.C.D: that address instead of 127.0.0.1)
 *   (exec_keep after ...: the new program)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The address everything binds and connects to: $EK_ADDR (an address of
 * this host, say a module stack's device address), else 127.0.0.1. */
static const char *addr(void)
{
	const char *a = getenv("EK_ADDR");

	return a && *a ? a : "127.0.0.1";
}

/* Does the client send a datagram before the exec, for the new program to
 * read?  Not with vfork (not moved then) or $EK_NOEARLY (a module's
 * stack: its datagram socket is bound again, what it held not moved). */
static bool early_on(const char *method)
{
	return strcmp(method, "vfork") && !getenv("EK_NOEARLY");
}

static int port_of(int fd)
{
	struct sockaddr_in6 a;
	socklen_t l = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &l))
		return -errno;
	return ntohs(a.sin6_port);	/* sin_port is at the same offset */
}

static void die(const char *what)
{
	printf("%s: %s\n", what, strerror(errno));
	exit(1);
}

/* A stream exchange on a connected fd: send msg, expect want back. */
static int xchg(int fd, const char *msg, const char *want)
{
	char buf[64];
	ssize_t n;

	if (send(fd, msg, strlen(msg), 0) != (ssize_t)strlen(msg))
		return -1;
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return strcmp(buf, want) ? -1 : 0;
}

static void timeouts(int fd)
{
	struct timeval tv = { 5, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The client, forked before any socket: sends a datagram at once (early:
 * it waits unread across the exec), waits for the new program's "go" on
 * rd, then talks to each of its sockets. */
static int client(int rd, int tport, int t6port, int uport, bool early)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char c, buf[64];
	int fd, u, ok = 1;
	ssize_t n;

	inet_pton(AF_INET, addr(), &a.sin_addr);
	u = socket(AF_INET, SOCK_DGRAM, 0);
	timeouts(u);
	a.sin_port = htons((uint16_t)uport);
	if (early && sendto(u, "early-udp", 9, 0, (struct sockaddr *)&a, sizeof(a)) != 9)
		ok = 0;
	if (read(rd, &c, 1) != 1)
		return 1;
	for (int i = 0; i < 2; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		timeouts(fd);
		a.sin_port = htons((uint16_t)(i ? t6port : tport));
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
		    xchg(fd, i ? "hello-v6" : "hello-v4", i ? "reply-v6" : "reply-v4")) {
			printf("client: listener %d: %s\n", i, strerror(errno));
			ok = 0;
		}
		close(fd);
	}
	fd = u;
	a.sin_port = htons((uint16_t)uport);
	n = -1;
	if (sendto(fd, "hello-udp", 9, 0, (struct sockaddr *)&a, sizeof(a)) == 9)
		n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n != 9 || memcmp(buf, "reply-udp", 9)) {
		printf("client: udp: %zd %s\n", n, n < 0 ? strerror(errno) : "");
		ok = 0;
	}
	close(fd);
	printf("client: %s\n", ok ? "every socket answered" : "failed");
	fflush(stdout);
	return !ok;
}

/* Where show() writes (the spawning parent's lines wait in a buffer, so
 * that they come out after the new program's, on the kernel as here). */
static FILE *out;

/* What fd is after the exec, as a line. */
static void show(const char *name, int fd, int port)
{
	int type = 0, dom = 0, acc = 0;
	socklen_t l = sizeof(int);

	if (fcntl(fd, F_GETFD) < 0) {
		fprintf(out ? out : stdout, "%s: %s\n", name, strerror(errno));
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l)) {
		fprintf(out ? out : stdout, "%s: no socket (%s)\n", name, strerror(errno));
		return;
	}
	l = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
	l = sizeof(int);
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l);
	fprintf(out ? out : stdout, "%s: %s %s, listening %d, port %s, O_NONBLOCK %d, FD_CLOEXEC %d\n", name,
	       dom == AF_INET6 ? "AF_INET6" : dom == AF_INET ? "AF_INET" : dom == AF_UNIX ? "AF_UNIX" : "?",
	       type == SOCK_STREAM ? "SOCK_STREAM" : type == SOCK_DGRAM ? "SOCK_DGRAM" : "?", acc,
	       port < 0 ? "none" : port_of(fd) == port ? "kept" : "changed",
	       !!(fcntl(fd, F_GETFL) & O_NONBLOCK), !!(fcntl(fd, F_GETFD) & FD_CLOEXEC));
}

static int wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 5000) == 1 ? 0 : -1;
}

/* One connection from listener l: expect msg, answer reply. */
static int serve(int l, const char *msg, const char *reply)
{
	char buf[64];
	ssize_t n;
	int c;

	if (wait_in(l) || (c = accept(l, NULL, NULL)) < 0)
		return -1;
	timeouts(c);
	n = recv(c, buf, sizeof(buf) - 1, 0);
	if (n >= 0)
		buf[n] = 0;
	if (n < 0 || strcmp(buf, msg) || send(c, reply, strlen(reply), 0) < 0) {
		close(c);
		return -1;
	}
	close(c);
	return 0;
}

/* The new program: fds and ports from argv (gate: a spawned one waits
 * for its parent's byte there before it lets the client go; pid 0: the
 * client is not its child). */
static int after(char **argv)
{
	int l4 = atoi(argv[2]), l6 = atoi(argv[3]), u = atoi(argv[4]), f = atoi(argv[5]);
	int cl = atoi(argv[6]), wr = atoi(argv[7]), tport = atoi(argv[8]), t6port = atoi(argv[9]);
	int uport = atoi(argv[10]), gate = atoi(argv[13]), st, ok = 1;
	pid_t pid = (pid_t)atoi(argv[11]);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)tport) };
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from), sl = sizeof(st);
	char buf[64];
	ssize_t n;

	printf("after %s:\n", argv[12]);
	show("listener", l4, tport);
	show("listener's dup", l4 + 100, tport);
	show("listener [::]", l6, t6port);
	show("udp", u, uport);
	show("fresh", f, -1);
	show("close-on-exec listener", cl, -1);
	if (!strncmp(argv[12], "posix_spawn", 11))
		show("close-on-exec listener, dup2()ed by a file action", cl + 100, -1);
	/* Not what Linux would give (no listener there): no point going on. */
	if (getsockopt(l4, SOL_SOCKET, SO_ACCEPTCONN, &st, &sl) || !st ||
	    !(fcntl(l4, F_GETFL) & O_NONBLOCK)) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return 1;
	}
	/* Spawned: O_NONBLOCK is the description's, which the parent
	 * shares: not changed before it has looked at its own fds. */
	if (gate >= 0 && read(gate, buf, 1) != 1)
		ok = 0;
	fcntl(l4, F_SETFL, 0);
	/* A kernel client of its own first: the fresh socket. */
	inet_pton(AF_INET, addr(), &a.sin_addr);
	timeouts(f);
	if (connect(f, (struct sockaddr *)&a, sizeof(a)) || send(f, "hello-self", 10, 0) != 10 ||
	    serve(l4, "hello-self", "reply-self") || (n = recv(f, buf, sizeof(buf), 0)) != 10 ||
	    memcmp(buf, "reply-self", 10)) {
		printf("fresh socket to the listener: %s\n", strerror(errno));
		ok = 0;
	}
	close(f);
	/* Then the client (the parent has let its copies go). */
	if (write(wr, "g", 1) != 1)
		ok = 0;
	if (serve(l4, "hello-v4", "reply-v4")) {
		printf("listener: no client (%s)\n", strerror(errno));
		ok = 0;
	}
	if (serve(l6, "hello-v6", "reply-v6")) {
		printf("listener [::]: no client (%s)\n", strerror(errno));
		ok = 0;
	}
	/* The datagram the client sent before the exec first, unread till
	 * now (not after vfork(): what the stack holds then is not moved). */
	if (early_on(argv[12])) {
		struct sockaddr_in ef = { 0 };
		socklen_t efl = sizeof(ef);

		n = -1;
		if (!wait_in(u))
			n = recvfrom(u, buf, sizeof(buf), 0, (struct sockaddr *)&ef, &efl);
		fl = sizeof(from);
		n = n == 9 && !memcmp(buf, "early-udp", 9) ? 0 : -1;
		/* From the client's socket, which sends the next one too. */
		if (!n && !wait_in(u) &&
		    recvfrom(u, buf, sizeof(buf), MSG_PEEK, (struct sockaddr *)&from, &fl) > 0)
			n = ((struct sockaddr_in *)&from)->sin_port == ef.sin_port &&
			    ((struct sockaddr_in *)&from)->sin_addr.s_addr == ef.sin_addr.s_addr ? 1 : 0;
		printf("udp: the datagram sent before the exec %s\n",
		       n == 1 ? "read after it, from the client's address and port" :
		       n == 0 ? "read, from another address or port" : "lost");
		if (n != 1)
			ok = 0;
	}
	fl = sizeof(from);
	n = -1;
	if (!wait_in(u))
		n = recvfrom(u, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	if (n != 9 || memcmp(buf, "hello-udp", 9) ||
	    sendto(u, "reply-udp", 9, 0, (struct sockaddr *)&from, fl) != 9) {
		printf("udp: no datagram (%s)\n", strerror(errno));
		ok = 0;
	}
	if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)))
		ok = 0;
	/* Spawned: the parent says when the client is done. */
	if (gate >= 0 && read(gate, buf, 1) != 1)
		ok = 0;
	printf("after: %s\n", ok ? "every socket served" : "failed");
	return !ok;
}

/* A child's exit, as a word. */
static const char *exit_of(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return "lost";
	return WIFEXITED(st) && !WEXITSTATUS(st) ? "0" : "failed";
}

/* vfork() and execve(): the child's pid. */
static __attribute__((noinline)) pid_t vfork_exec(char *self, char **av, char **envp)
{
	pid_t pid = vfork();

	if (pid == 0) {
		execve(self, av, envp);
		_exit(127);
	}
	return pid;
}

/* posix_spawn, posix_spawnp: the parent's side (run() made the sockets,
 * the client and the arguments; av, envp the new program's). */
static int spawned(const char *method, char *self, char **av, char **envp, int l4, int l6,
		   int u, int f, int cl, const int *g, pid_t client, int tport)
{
	posix_spawn_file_actions_t fa;
	char *slash = strrchr(self, '/'), path[4200], *lines = NULL;
	size_t nlines = 0;
	const char *cst;
	pid_t pid;
	int ret, ok = 1;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, cl, cl + 100);
	if (!strcmp(method, "posix_spawnp")) {
		/* Found on PATH, as execvp() would. */
		*slash = 0;
		snprintf(path, sizeof(path), "%s:%s", self, getenv("PATH") ? getenv("PATH") : "");
		*slash = '/';
		setenv("PATH", path, 1);
		ret = posix_spawnp(&pid, slash + 1, &fa, NULL, av, envp);
	} else if (!strcmp(method, "vfork")) {
		/* vfork() and execve() in the child, as a shell or an
		 * older libc's spawn does. */
		pid = vfork_exec(self, av, envp);
		ret = pid < 0 ? errno : 0;
	} else {
		ret = posix_spawn(&pid, self, &fa, NULL, av, envp);
	}
	posix_spawn_file_actions_destroy(&fa);
	if (ret) {
		kill(client, SIGKILL);
		errno = ret;
		die(method);
	}
	/* The parent's own fds are as they were. */
	out = open_memstream(&lines, &nlines);
	if (!out)
		die("open_memstream");
	show("parent's listener", l4, tport);
	show("parent's listener's dup", l4 + 100, tport);
	show("parent's close-on-exec listener", cl, -1);
	fclose(out);
	out = NULL;
	/* A supervisor's way: what it gave goes; the new program goes on. */
	close(l4);
	close(l4 + 100);
	close(l6);
	close(u);
	close(f);
	if (write(g[1], "g", 1) != 1)
		ok = 0;
	cst = exit_of(client);
	if (write(g[1], "g", 1) != 1)
		ok = 0;
	printf("parent: the spawned program exits %s, the client %s\n", exit_of(pid), cst);
	fputs(lines, stdout);
	free(lines);
	/* Its close-on-exec listener is still its own: one connection. */
	{
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t al = sizeof(a);
		char buf[16];
		int c = socket(AF_INET, SOCK_STREAM, 0);

		timeouts(c);
		getsockname(cl, (struct sockaddr *)&a, &al);
		if (connect(c, (struct sockaddr *)&a, sizeof(a)) || send(c, "hello-cl", 8, 0) != 8 ||
		    serve(cl, "hello-cl", "reply-cl") || recv(c, buf, sizeof(buf), 0) != 8 ||
		    memcmp(buf, "reply-cl", 8)) {
			printf("parent: close-on-exec listener: %s\n", strerror(errno));
			ok = 0;
		}
		close(c);
	}
	printf("parent: %s\n", ok ? "its listener served" : "failed");
	return !ok;
}

static int run(const char *method)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	int p[2], g[2] = { -1, -1 }, l4, l6, u, f, cl, one = 1, zero = 0, ports[3];
	bool spawn = !strncmp(method, "posix_spawn", 11) || !strcmp(method, "vfork");
	char args[12][24], self[4096], *av[15], **envp;
	pid_t pid;
	ssize_t sl;
	int n = 0, e = 0, fd;

	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0 || pipe(p))
		die("setup");
	self[sl] = 0;
	/* The client first, before any socket: it holds none of them. */
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], ports, sizeof(ports)) != (ssize_t)sizeof(ports))
			_exit(1);
		_exit(client(p[0], ports[0], ports[1], ports[2], early_on(method)));
	}
	close(p[0]);
	l4 = socket(AF_INET, SOCK_STREAM, 0);
	l6 = socket(AF_INET6, SOCK_STREAM, 0);
	u = socket(AF_INET, SOCK_DGRAM, 0);
	f = socket(AF_INET, SOCK_STREAM, 0);
	cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l4 < 0 || l6 < 0 || u < 0 || f < 0 || cl < 0)
		die("socket");
	inet_pton(AF_INET, addr(), &a.sin_addr);
	setsockopt(l4, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(l6, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(l4, (struct sockaddr *)&a, sizeof(a)) ||
	    bind(l6, (struct sockaddr *)&a6, sizeof(a6)) ||
	    bind(u, (struct sockaddr *)&a, sizeof(a)) || bind(cl, (struct sockaddr *)&a, sizeof(a)))
		die("bind");
	if (listen(l4, 8) || listen(l6, 8) || listen(cl, 8))
		die("listen");
	fcntl(l4, F_SETFL, O_NONBLOCK);
	/* A second fd of it, kept too. */
	if (dup2(l4, l4 + 100) < 0)
		die("dup2");
	ports[0] = port_of(l4);
	ports[1] = port_of(l6);
	ports[2] = port_of(u);
	/* The ports go to the client now; it waits for the new program's
	 * go (one byte) before it connects. */
	if (write(p[1], ports, sizeof(ports)) != (ssize_t)sizeof(ports))
		die("write");
	/* Its first datagram waits, unread, before the exec. */
	if (early_on(method) && wait_in(u))
		die("early datagram");
	snprintf(args[0], sizeof(args[0]), "%d", l4);
	snprintf(args[1], sizeof(args[1]), "%d", l6);
	snprintf(args[2], sizeof(args[2]), "%d", u);
	snprintf(args[3], sizeof(args[3]), "%d", f);
	snprintf(args[4], sizeof(args[4]), "%d", cl);
	snprintf(args[5], sizeof(args[5]), "%d", p[1]);
	snprintf(args[6], sizeof(args[6]), "%d", ports[0]);
	snprintf(args[7], sizeof(args[7]), "%d", ports[1]);
	snprintf(args[8], sizeof(args[8]), "%d", ports[2]);
	snprintf(args[9], sizeof(args[9]), "%d", spawn ? 0 : (int)pid);
	if (spawn && pipe2(g, O_CLOEXEC))
		die("pipe");
	/* The read end is the spawned program's (not close-on-exec). */
	if (spawn && fcntl(g[0], F_SETFD, 0))
		die("fcntl");
	snprintf(args[10], sizeof(args[10]), "%d", g[0]);
	av[0] = self;
	av[1] = (char *)"after";
	for (int i = 0; i < 10; i++)
		av[2 + i] = args[i];
	av[12] = (char *)method;
	av[13] = args[10];
	av[14] = NULL;
	for (char **q = environ; *q; q++)
		n++;
	envp = calloc((size_t)n + 1, sizeof(*envp));
	n = 0;
	/* Not under Sluice: no LD_PRELOAD. */
	for (char **q = environ; *q; q++)
		if (strncmp(*q, "LD_PRELOAD=", 11))
			envp[n++] = *q;
	if (spawn)
		return spawned(method, self, av, envp, l4, l6, u, f, cl, g, pid, ports[0]);
	if (!strcmp(method, "execve")) {
		execve(self, av, envp);
	} else if (!strcmp(method, "fexecve")) {
		fd = open(self, O_RDONLY | O_CLOEXEC);
		fexecve(fd, av, envp);
	} else if (!strcmp(method, "execveat")) {
		char *slash = strrchr(self, '/');

		*slash = 0;
		fd = open(self, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		*slash = '/';
		execveat(fd, slash + 1, av, envp, 0);
	} else {
		errno = EINVAL;
	}
	e = errno;
	kill(pid, SIGKILL);
	errno = e;
	die(method);
	return 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "run"))
		return run(argv[2]);
	if (argc == 14 && !strcmp(argv[1], "after"))
		return after(argv);
	fprintf(stderr, "usage: exec_keep run execve|fexecve|execveat|posix_spawn|posix_spawnp|vfork\n");
	return 2;
}
