// SPDX-License-Identifier: BSD-2-Clause
/*
 * A plain program for tests/vm/sockfd.sh, run under `sluice run` on a
 * module's stack (its TCP sockets are Sluice sockets with module socket
 * fds; SLUICE_UDP=0 keeps UDP in the kernel) against a kernel TCP echo
 * server (kpeer serve).  Prints TAP lines ("ok"/"not ok" DESCRIPTION),
 * no plan: the script numbers them.
 *
 *   sockfd_prog epoll IP PORT lt|et   epoll over 2 Sluice TCP connections,
 *                                     a pipe and a kernel UDP socket
 *   sockfd_prog poll IP PORT          poll(2) over the same mixed set
 *   sockfd_prog share IP PORT         fork and dup share one connection
 *   sockfd_prog scm IP PORT           a connection passed with SCM_RIGHTS
 *                                     to a new program (exec) that uses it
 *   sockfd_prog exec IP PORT          a connection inherited through exec
 *   sockfd_prog hold IP PORT N SECS   N connections, "ready", then sleep
 *   sockfd_prog idle SECS             wait in epoll_wait on a listener
 *   sockfd_prog keeplate IP PORT N    N connections with keepalive (idle
 *                                     4 s, a probe, 1 s), their peer gone
 *                                     silent after "ready" (the script's
 *                                     tc filter), waited for in poll()
 *                                     with no timeout: how late each
 *                                     one's ETIMEDOUT came (20 s at most)
 * Every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failed;

static void check(int cond, const char *what)
{
	printf("%sok - %s\n", cond ? "" : "not ", what);
	fflush(stdout);
	failed |= !cond;
}

static int tcp_connect(const char *ip, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, ip, &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		return -1;
	}
	return fd;
}

/* A socket fd of the module, not a placeholder or a kernel socket. */
static int is_sockfd(int fd)
{
	char path[64], link[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	return !strcmp(link, "anon_inode:[sluice-sock]");
}

/* Read exactly len bytes within 5 s (a blocking or non-blocking fd). */
static int read_all(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 5000) != 1)
			return -1;
		n = read(fd, buf + got, len - got);
		if (n <= 0 && !(n < 0 && errno == EAGAIN))
			return -1;
		if (n > 0)
			got += (size_t)n;
	}
	return 0;
}

static int echo(int fd, const char *msg)
{
	char buf[256];
	size_t len = strlen(msg);

	if (write(fd, msg, len) != (ssize_t)len || read_all(fd, buf, len))
		return -1;
	return memcmp(buf, msg, len) ? -1 : 0;
}

/* Wait for events, then return what fired for each data tag (bitmask). */
static unsigned int ep_tags(int ep, int ms, uint32_t *evs)
{
	struct epoll_event e[8];
	unsigned int tags = 0;
	int n = epoll_wait(ep, e, 8, ms);

	for (int i = 0; i < n; i++) {
		tags |= 1u << e[i].data.u32;
		if (evs)
			evs[e[i].data.u32] = e[i].events;
	}
	return tags;
}

static int cmd_epoll(const char *ip, int port, int et)
{
	struct sockaddr_in u = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t ul = sizeof(u);
	int a = tcp_connect(ip, port), b = tcp_connect(ip, port), p[2], us, ep;
	uint32_t evs[4] = { 0 };
	struct epoll_event e;
	char buf[64];
	struct stat st;

	us = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (a < 0 || b < 0 || us < 0 || pipe2(p, O_NONBLOCK) ||
	    bind(us, (struct sockaddr *)&u, sizeof(u)) || getsockname(us, (struct sockaddr *)&u, &ul)) {
		perror("epoll: setup");
		check(0, "setup: 2 connections, a pipe, a UDP socket on 127.0.0.1");
		return 1;
	}
	check(is_sockfd(a) && is_sockfd(b), "TCP connections are module socket fds");
	/* The kernel's own fstat: the library's says socket either way. */
	check(!syscall(SYS_fstat, a, &st) && !S_ISDIR(st.st_mode), "... not placeholders (fstat)");
	check(!is_sockfd(us), "the UDP socket is a kernel socket (SLUICE_UDP=0)");
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (unsigned int i = 0; i < 4; i++) {
		int fd = i == 0 ? a : i == 1 ? b : i == 2 ? p[0] : us;

		e.events = EPOLLIN | (et ? EPOLLET : 0);
		e.data.u32 = i;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e))
			return 1;
	}
	check(ep_tags(ep, 100, NULL) == 0, "nothing ready: epoll_wait times out");
	check(write(p[1], "x", 1) == 1 && ep_tags(ep, 2000, NULL) == 1u << 2, "pipe: only the pipe");
	check(read(p[0], buf, 1) == 1, "... drained");
	check(sendto(us, "u", 1, 0, (struct sockaddr *)&u, ul) == 1 &&
	      ep_tags(ep, 2000, NULL) == 1u << 3, "kernel UDP: only the UDP socket");
	check(recv(us, buf, sizeof(buf), 0) == 1, "... drained");
	/* The echo server answers a: a sleeping epoll_wait wakes for it. */
	check(write(a, "ping-a", 6) == 6, "write on Sluice connection a");
	check(ep_tags(ep, 5000, evs) == 1u << 0 && (evs[0] & EPOLLIN), "epoll reports a readable, only a");
	if (et) {
		check(read(a, buf, 3) == 3, "et: read part of it");
		check(ep_tags(ep, 200, NULL) == 0, "et: no new edge for the rest");
		check(read(a, buf, 3) == 3 && !memcmp(buf, "g-a", 3), "et: the rest is there");
		check(write(a, "again", 5) == 5 && ep_tags(ep, 5000, NULL) == 1u << 0,
		      "et: new data, a new edge");
		check(read(a, buf, sizeof(buf)) == 5, "et: read it");
	} else {
		check(ep_tags(ep, 0, NULL) == 1u << 0, "lt: still reported until read");
		check(read(a, buf, sizeof(buf)) == 6 && !memcmp(buf, "ping-a", 6), "lt: read the echo");
		check(ep_tags(ep, 200, NULL) == 0, "lt: drained, nothing reported");
	}
	/* Both connections and the pipe at once. */
	check(write(b, "b", 1) == 1 && write(a, "a", 1) == 1 && write(p[1], "y", 1) == 1, "three writes");
	{
		unsigned int tags = 0;

		struct timespec t0, t1;

		/* For 5 s at most: level-triggered, the pipe reports at once
		 * every time, so count time, not rounds. */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			tags |= ep_tags(ep, 100, NULL) & 7;
			clock_gettime(CLOCK_MONOTONIC, &t1);
		} while (tags != 7 && t1.tv_sec - t0.tv_sec < 5);
		if (tags != 7)
			printf("# tags 0x%x\n", tags);
		check(tags == 7, "a, b and the pipe all reported");
	}
	close(ep);
	close(a);
	close(b);
	close(us);
	close(p[0]);
	close(p[1]);
	return failed;
}

static int cmd_poll(const char *ip, int port)
{
	int a = tcp_connect(ip, port), p[2];
	struct pollfd pf[2];
	char buf[16];
	fd_set rs;
	struct timeval tv = { 2, 0 };

	if (a < 0 || pipe(p))
		return 1;
	pf[0] = (struct pollfd){ .fd = a, .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	check(poll(pf, 2, 100) == 0, "poll: nothing ready times out");
	check(write(a, "q", 1) == 1, "write");
	check(poll(pf, 2, 5000) == 1 && (pf[0].revents & POLLIN) && !pf[1].revents,
	      "poll: the Sluice connection readable, not the pipe");
	check(read(a, buf, sizeof(buf)) == 1, "read");
	FD_ZERO(&rs);
	FD_SET(a, &rs);
	FD_SET(p[0], &rs);
	check(write(p[1], "z", 1) == 1 && select((a > p[0] ? a : p[0]) + 1, &rs, NULL, NULL, &tv) == 1 &&
	      FD_ISSET(p[0], &rs) && !FD_ISSET(a, &rs), "select: the pipe, not the connection");
	close(a);
	close(p[0]);
	close(p[1]);
	return failed;
}

static int cmd_share(const char *ip, int port)
{
	int a = tcp_connect(ip, port), d, st;
	pid_t pid;

	if (a < 0)
		return 1;
	pid = fork();
	if (!pid)
		_exit(echo(a, "from-child") ? 1 : 0);
	check(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "fork: the child echoes on the inherited connection");
	check(!echo(a, "parent-after-child-exit"), "the child's exit did not close it");
	d = dup(a);
	check(d >= 0 && is_sockfd(d), "dup: a socket fd");
	close(a);
	check(!echo(d, "through-the-dup"), "close of the original: the dup still works");
	close(d);
	return failed;
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = "f", .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int cmd_scm_recv(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, 0) == 1 && (cm = CMSG_FIRSTHDR(&mh)) && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	check(fd >= 0 && is_sockfd(fd), "receiver: got a socket fd");
	check(fd >= 0 && !echo(fd, "via-scm-rights"), "receiver: echoes on the passed connection");
	close(fd);
	return failed;
}

static int cmd_scm(const char *self, const char *ip, int port)
{
	int a = tcp_connect(ip, port), sp[2], st;
	char arg[16];
	pid_t pid;

	if (a < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		return 1;
	pid = fork();
	if (!pid) {
		close(sp[0]);
		snprintf(arg, sizeof(arg), "%d", sp[1]);
		execl("/proc/self/exe", self, "scm-recv", arg, (char *)NULL);
		_exit(127);
	}
	close(sp[1]);
	check(!send_fd(sp[0], a), "sender: passed the connection");
	close(a);
	check(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "receiver (a new program) used it and exited");
	close(sp[0]);
	return failed;
}

/* A connection inherited through exec (no FD_CLOEXEC): the new program
 * finds it in /proc/self/fd and uses it. */
static int cmd_exec(const char *self, const char *ip, int port)
{
	int a = tcp_connect(ip, port), st;
	char arg[16];
	pid_t pid;

	if (a < 0)
		return 1;
	pid = fork();
	if (!pid) {
		snprintf(arg, sizeof(arg), "%d", a);
		execl("/proc/self/exe", self, "exec-child", arg, (char *)NULL);
		_exit(127);
	}
	check(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
	      "a new program (exec) used the inherited connection");
	check(!echo(a, "parent-after-exec"), "the parent's fd still works after it exited");
	close(a);
	return failed;
}

static int cmd_exec_child(int fd)
{
	check(is_sockfd(fd), "exec'd: the inherited fd is a socket fd");
	check(!echo(fd, "after-exec"), "exec'd: echoes on it");
	return failed;
}

static int cmd_hold(const char *ip, int port, int n, int secs)
{
	for (int i = 0; i < n; i++)
		if (tcp_connect(ip, port) < 0)
			return 1;
	printf("ready\n");
	fflush(stdout);
	sleep((unsigned int)secs);
	return 0;
}

static int cmd_idle(int secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int l = socket(AF_INET, SOCK_STREAM, 0), ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN };

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, l, &e))
		return 1;
	printf("ready\n");
	fflush(stdout);
	epoll_wait(ep, &e, 1, secs * 1000);
	return 0;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/*
 * How late the stack's timers fire for a program asleep in poll() on
 * module socket fds (issue 19 item 6): nothing but a timer ends this
 * wait.  N connections to the echo server, 50 ms apart, each with
 * keepalive after 4 s idle, one probe, 1 s for its answer
 * (TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT), one echo each; then
 * "ready", and the script makes the peer drop everything (4 s is time
 * enough for that in a loaded guest, 2 was not always), so each
 * connection's error (ETIMEDOUT) is due 5 s after its echo came: two
 * timers in a row, the probe's and the give-up.  Each one's lateness
 * past that, and their median.
 */
#define KL_MAX	16

static int cmd_keeplate(const char *ip, int port, int n)
{
	int fd[KL_MAX], idle = 4, intvl = 1, cnt = 1, one = 1, left = n, timedout = 0;
	long last[KL_MAX], late[KL_MAX];
	struct pollfd p[KL_MAX];
	int sfd = 0;

	if (n < 1 || n > KL_MAX)
		return 1;
	for (int i = 0; i < n; i++) {
		fd[i] = tcp_connect(ip, port);
		if (fd[i] < 0 || setsockopt(fd[i], SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
		    setsockopt(fd[i], IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
		    setsockopt(fd[i], IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
		    setsockopt(fd[i], IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) ||
		    echo(fd[i], "keep")) {
			check(0, "keeplate: a connection with keepalive echoes");
			return 1;
		}
		last[i] = now_us();
		sfd += is_sockfd(fd[i]);
		p[i] = (struct pollfd){ .fd = fd[i], .events = POLLIN };
		usleep(50000);
	}
	printf("ready\n");
	fflush(stdout);
	/* No timeout: the preload's own bound on its sleeps alone decides
	 * how long each lasts (tests/vm/sockfd.sh counts them). */
	alarm(20);
	while (left) {
		if (poll(p, (nfds_t)n, -1) < 0)
			break;
		for (int i = 0; i < n; i++) {
			int err = 0;
			socklen_t el = sizeof(err);

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			late[n - left] = now_us() - last[i] - 5000000L;
			getsockopt(fd[i], SOL_SOCKET, SO_ERROR, &err, &el);
			timedout += err == ETIMEDOUT;
			printf("# connection %d: %ld us late (%s)\n", i, late[n - left], strerror(err));
			close(fd[i]);
			p[i].fd = -1;
			left--;
		}
	}
	if (left < n)
		qsort(late, (size_t)(n - left), sizeof(late[0]), cmp_long);
	printf("keeplate n %d timedout %d median_us %ld min_us %ld max_us %ld sockfd %d\n", n, timedout,
	       left < n ? late[(n - left) / 2] : -1L, left < n ? late[0] : -1L,
	       left < n ? late[n - left - 1] : -1L, sfd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "epoll"))
		return cmd_epoll(argv[2], atoi(argv[3]), argc > 4 && !strcmp(argv[4], "et"));
	if (argc >= 4 && !strcmp(argv[1], "poll"))
		return cmd_poll(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "share"))
		return cmd_share(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "scm"))
		return cmd_scm(argv[0], argv[2], atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "scm-recv"))
		return cmd_scm_recv(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "exec"))
		return cmd_exec(argv[0], argv[2], atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "exec-child"))
		return cmd_exec_child(atoi(argv[2]));
	if (argc >= 6 && !strcmp(argv[1], "hold"))
		return cmd_hold(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc >= 5 && !strcmp(argv[1], "keeplate"))
		return cmd_keeplate(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "idle"))
		return cmd_idle(atoi(argv[2]));
	fprintf(stderr, "usage: see the comment at the top of sockfd_prog.c\n");
	return 2;
}
