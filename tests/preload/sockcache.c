// SPDX-License-Identifier: BSD-2-Clause
/*
 * A closed socket's fd, made again (issue 23 item 3: socket caching with
 * the kernel's semantics).  Under `sluice run` a private socket's
 * placeholder description is kept at close() and lent to the next
 * socket() or accept() (lib/preload/README.md, "Socket cache"); what the
 * program sees must be what the kernel shows.  Each case prints one line,
 * "NAME ok" or "NAME bad: WHAT"; the kernel and Sluice must print the
 * same lines (tests/host/test_sockcache.sh):
 *  - lowest: after close(), socket(), accept() and open() take the lowest
 *    free number (a gap left by an earlier close first), 50 times over;
 *  - procfd: a closed number is gone from /proc/self/fd; a made one is
 *    there;
 *  - fstat: a socket made again is a socket (S_ISSOCK);
 *  - flags: O_NONBLOCK and FD_CLOEXEC of each new socket are what it
 *    asked for, whatever the one before had (SOCK_NONBLOCK, fcntl
 *    F_SETFL, FIONBIO, SOCK_CLOEXEC; accept4 too);
 *  - fresh: a socket made after one that was bound, connected, had
 *    options set and an error pending: unbound (getsockname 0.0.0.0:0),
 *    SO_ERROR 0, options at their defaults;
 *  - dup: a socket and its dup, closed in either order: the socket lives
 *    until the last, and the numbers come back lowest first;
 *  - fork: a connection shared with a forked child: the parent's close
 *    leaves it to the child, whose write reaches the peer; the numbers in
 *    both are the lowest free;
 *  - refused: a connect() refused (SO_ERROR or ECONNREFUSED), closed; the
 *    next socket has no error;
 *  - epoll: an accepted socket in an epoll set, closed (with and without
 *    EPOLL_CTL_DEL first): the set reports nothing of it after, and the
 *    next connection's socket, readable, is not in the set;
 *  - epoll_held: an accepted socket in an epoll set, its fd closed while
 *    another fd holds the file (a dup, a forked child's): the item stays
 *    and reports the socket under the closed fd's data, as Linux keeps it
 *    until the file's end; after the last fd's close (the dup's, the
 *    child's exit) the set reports nothing, nor the next connection's
 *    socket.  Run only when named (`sockcache epoll_held`: the module
 *    path's suite, tests/vm/sockfd.sh): without the module an emulated
 *    set keys its items by fd and lets a closed fd's item go with the
 *    fd, where Linux keeps it with the file (issue 23 item 7, open).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char why[256];

static bool bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

/* The number the kernel gives next: the lowest free one. */
static int lowest_free(void)
{
	int f = open("/dev/null", O_RDONLY);

	close(f);
	return f;
}

static int tcp(int flags)
{
	int s = socket(AF_INET, SOCK_STREAM | flags, 0);

	if (s < 0) {
		perror("socket");
		exit(2);
	}
	return s;
}

static struct sockaddr_in lsa;
static int lfd = -1;

static void listener(void)
{
	socklen_t n = sizeof(lsa);

	lfd = tcp(0);
	lsa.sin_family = AF_INET;
	lsa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&lsa, sizeof(lsa)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&lsa, &n)) {
		perror("listener");
		exit(2);
	}
}

/* A connection: *c the client's fd, *a the accepted one (flags: accept4's). */
static bool conn(int *c, int *a, int cflags, int aflags)
{
	int want = lowest_free();

	*c = tcp(cflags);
	if (*c != want)
		return bad("socket() got %d, lowest free %d", *c, want);
	if (connect(*c, (struct sockaddr *)&lsa, sizeof(lsa)) && errno != EINPROGRESS)
		return bad("connect: %s", strerror(errno));
	want = lowest_free();
	*a = accept4(lfd, NULL, NULL, aflags);
	if (*a < 0 && errno == EAGAIN) {
		usleep(10000);
		*a = accept4(lfd, NULL, NULL, aflags);
	}
	if (*a != want)
		return bad("accept() got %d, lowest free %d", *a, want);
	return true;
}

static bool case_lowest(void)
{
	int c[4], a[4];

	for (int r = 0; r < 50; r++) {
		for (int i = 0; i < 4; i++)
			if (!conn(&c[i], &a[i], 0, 0))
				return false;
		/* Gaps: the middle ones first, then the rest. */
		close(a[1]);
		close(c[2]);
		if (lowest_free() != (a[1] < c[2] ? a[1] : c[2]))
			return bad("round %d: lowest free %d after closing %d and %d", r,
				   lowest_free(), a[1], c[2]);
		for (int i = 0; i < 4; i++) {
			if (i != 1)
				close(a[i]);
			if (i != 2)
				close(c[i]);
		}
	}
	return true;
}

static bool case_procfd(void)
{
	char p[64];
	int c, a;

	if (!conn(&c, &a, 0, 0))
		return false;
	close(a);
	close(c);
	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", i ? a : c);
		if (!access(p, F_OK))
			return bad("%s there after close", p);
	}
	c = tcp(0);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", c);
	if (access(p, F_OK))
		return bad("%s not there", p);
	close(c);
	return true;
}

static bool case_fstat(void)
{
	struct stat st;
	int c, a;

	for (int r = 0; r < 3; r++) {
		if (!conn(&c, &a, 0, 0))
			return false;
		if (fstat(c, &st) || !S_ISSOCK(st.st_mode) || fstat(a, &st) || !S_ISSOCK(st.st_mode))
			return bad("round %d: fstat not a socket", r);
		close(a);
		close(c);
	}
	return true;
}

/* fd's O_NONBLOCK and FD_CLOEXEC are nb and ce? */
static bool flags_are(int fd, bool nb, bool ce, const char *what)
{
	int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);

	if (fl < 0 || fdf < 0)
		return bad("%s: fcntl: %s", what, strerror(errno));
	if (!!(fl & O_NONBLOCK) != nb || !!(fdf & FD_CLOEXEC) != ce)
		return bad("%s: O_NONBLOCK %d FD_CLOEXEC %d, want %d %d", what,
			   !!(fl & O_NONBLOCK), !!(fdf & FD_CLOEXEC), nb, ce);
	if ((fl & O_ACCMODE) != O_RDWR)
		return bad("%s: access mode %#x", what, fl & O_ACCMODE);
	return true;
}

static bool case_flags(void)
{
	int s, c, a, one = 1;

	s = tcp(SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (!flags_are(s, true, true, "socket(NONBLOCK|CLOEXEC)"))
		return false;
	close(s);
	s = tcp(0);
	if (!flags_are(s, false, false, "socket() after a NONBLOCK one"))
		return false;
	fcntl(s, F_SETFL, O_NONBLOCK);
	close(s);
	s = tcp(0);
	if (!flags_are(s, false, false, "socket() after F_SETFL O_NONBLOCK"))
		return false;
	ioctl(s, FIONBIO, &one);
	close(s);
	s = tcp(SOCK_CLOEXEC);
	if (!flags_are(s, false, true, "socket(CLOEXEC) after FIONBIO"))
		return false;
	close(s);
	if (!conn(&c, &a, SOCK_NONBLOCK, SOCK_NONBLOCK | SOCK_CLOEXEC))
		return false;
	if (!flags_are(a, true, true, "accept4(NONBLOCK|CLOEXEC)"))
		return false;
	close(a);
	close(c);
	if (!conn(&c, &a, 0, 0))
		return false;
	if (!flags_are(c, false, false, "socket() after NONBLOCK ones") ||
	    !flags_are(a, false, false, "accept() after accept4(NONBLOCK|CLOEXEC)"))
		return false;
	close(a);
	close(c);
	return true;
}

static int opt(int fd, int level, int name)
{
	int v = -1;
	socklen_t n = sizeof(v);

	if (getsockopt(fd, level, name, &v, &n))
		return -2;
	return v;
}

static bool case_fresh(void)
{
	int s0 = tcp(0), rcv0 = opt(s0, SOL_SOCKET, SO_RCVBUF), snd0 = opt(s0, SOL_SOCKET, SO_SNDBUF);
	struct linger lg = { 1, 5 };
	struct sockaddr_in sa;
	socklen_t n = sizeof(sa);
	int c, a, one = 1, big = 300000;

	close(s0);
	for (int r = 0; r < 3; r++) {
		if (!conn(&c, &a, 0, 0))
			return false;
		setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		setsockopt(c, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
		setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		setsockopt(a, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		lg.l_onoff = 0;
		setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		lg.l_onoff = 1;
		close(a);
		close(c);
		c = tcp(0);
		n = sizeof(sa);
		if (getsockname(c, (struct sockaddr *)&sa, &n) || sa.sin_port || sa.sin_addr.s_addr)
			return bad("round %d: a new socket is bound (%s:%u)", r,
				   inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
		n = sizeof(sa);
		if (!getpeername(c, (struct sockaddr *)&sa, &n) || errno != ENOTCONN)
			return bad("round %d: a new socket has a peer", r);
		if (opt(c, SOL_SOCKET, SO_ERROR) || opt(c, SOL_SOCKET, SO_KEEPALIVE) ||
		    opt(c, IPPROTO_TCP, TCP_NODELAY) || opt(c, SOL_SOCKET, SO_REUSEADDR))
			return bad("round %d: error %d keepalive %d nodelay %d reuseaddr %d", r,
				   opt(c, SOL_SOCKET, SO_ERROR), opt(c, SOL_SOCKET, SO_KEEPALIVE),
				   opt(c, IPPROTO_TCP, TCP_NODELAY), opt(c, SOL_SOCKET, SO_REUSEADDR));
		if (opt(c, SOL_SOCKET, SO_RCVBUF) != rcv0 || opt(c, SOL_SOCKET, SO_SNDBUF) != snd0)
			return bad("round %d: buffers %d %d, a first socket's %d %d", r,
				   opt(c, SOL_SOCKET, SO_RCVBUF), opt(c, SOL_SOCKET, SO_SNDBUF), rcv0, snd0);
		struct linger l2;
		socklen_t ln = sizeof(l2);

		if (getsockopt(c, SOL_SOCKET, SO_LINGER, &l2, &ln) || l2.l_onoff)
			return bad("round %d: SO_LINGER on", r);
		close(c);
	}
	return true;
}

static bool case_dup(void)
{
	int c, a, d, want;
	char ch = 'd';

	for (int r = 0; r < 4; r++) {
		if (!conn(&c, &a, 0, 0))
			return false;
		d = dup(a);
		want = r & 1 ? d : a;
		close(r & 1 ? a : d);	/* one of the two, the socket stays */
		if (write(want, &ch, 1) != 1 || read(c, &ch, 1) != 1)
			return bad("round %d: the dup lost the connection", r);
		close(want);
		if (read(c, &ch, 1) != 0)
			return bad("round %d: no end of stream after the last close", r);
		close(c);
		if (lowest_free() != (c < a && c < d ? c : a < d ? a : d))
			return bad("round %d: lowest free %d", r, lowest_free());
	}
	return true;
}

static bool case_fork(void)
{
	int c, a, st, go[2];
	char ch = 0;
	pid_t pid;

	for (int r = 0; r < 3; r++) {
		if (!conn(&c, &a, 0, 0) || pipe(go))
			return false;
		pid = fork();
		if (pid < 0)
			return bad("fork: %s", strerror(errno));
		if (!pid) {
			int s, want;

			close(go[1]);
			if (read(go[0], &ch, 1) != 1)
				_exit(3);
			if (write(a, "f", 1) != 1)
				_exit(4);
			close(a);
			close(c);
			want = lowest_free();
			s = tcp(0);
			_exit(s == want ? 0 : 5);
		}
		close(go[0]);
		close(a);	/* the child still holds it */
		{
			int want = lowest_free(), s = tcp(0);

			if (s != want)
				return bad("round %d: socket() got %d, lowest free %d", r, s, want);
			close(s);
		}
		if (write(go[1], "g", 1) != 1)
			return bad("round %d: pipe", r);
		close(go[1]);
		if (read(c, &ch, 1) != 1 || ch != 'f')
			return bad("round %d: the child's byte did not come", r);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return bad("round %d: the child failed (%#x)", r, st);
		if (read(c, &ch, 1) != 0)
			return bad("round %d: no end of stream after the child's close", r);
		close(c);
	}
	return true;
}

static bool case_refused(void)
{
	struct sockaddr_in sa = lsa;
	int s, t = tcp(0);
	socklen_t n = sizeof(sa);

	/* A port nobody listens on: bound, never listening. */
	sa.sin_port = 0;
	if (bind(t, (struct sockaddr *)&sa, sizeof(sa)) || getsockname(t, (struct sockaddr *)&sa, &n))
		return bad("bind: %s", strerror(errno));
	for (int r = 0; r < 3; r++) {
		s = tcp(0);
		if (!connect(s, (struct sockaddr *)&sa, sizeof(sa)) || errno != ECONNREFUSED)
			return bad("round %d: connect to a closed port: %s", r, strerror(errno));
		close(s);
		s = tcp(0);
		if (opt(s, SOL_SOCKET, SO_ERROR))
			return bad("round %d: a new socket has SO_ERROR %d", r, opt(s, SOL_SOCKET, SO_ERROR));
		close(s);
	}
	close(t);
	return true;
}

/* Is the set's one event the socket's, under data d?  (-1: none.) */
static int ep_one(int ep, int d, int ms)
{
	struct epoll_event ev;
	int n = epoll_wait(ep, &ev, 1, ms);

	return n == 1 && ev.data.fd == d ? 1 : n == 0 ? 0 : -1;
}

/*
 * The next socket, likely the cache's last closed one, is not reported by
 * set @ep, which was never given it: its data written, nothing in 50 ms.
 */
static bool next_unreported(int ep, int round)
{
	int c2, a2;
	bool ok = true;

	if (!conn(&c2, &a2, 0, 0))
		return false;
	if (write(c2, "y", 1) != 1)
		ok = bad("round %d: write: %s", round, strerror(errno));
	usleep(20000);
	if (ok && ep_one(ep, a2, 50) != 0)
		ok = bad("round %d: the next socket reported by the set", round);
	close(a2);
	close(c2);
	return ok;
}

static bool case_epoll(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int c, a, ep, n, round;
	bool ok = true;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return bad("epoll_create1: %s", strerror(errno));
	for (round = 0; ok && round < 4; round++) {
		if (!conn(&c, &a, 0, 0)) {
			ok = false;
			break;
		}
		ev.events = EPOLLIN;
		ev.data.fd = a;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev) || write(c, "x", 1) != 1)
			ok = bad("round %d: add or write: %s", round, strerror(errno));
		n = ok ? epoll_wait(ep, &ev, 1, 2000) : 0;
		if (ok && (n != 1 || ev.data.fd != a))
			ok = bad("round %d: epoll_wait %d before the close", round, n);
		if (ok && (round & 1) && epoll_ctl(ep, EPOLL_CTL_DEL, a, NULL))
			ok = bad("round %d: del: %s", round, strerror(errno));
		close(a);
		n = epoll_wait(ep, &ev, 1, 0);
		if (ok && n != 0)
			ok = bad("round %d: %d events after the close", round, n);
		if (ok)
			ok = next_unreported(ep, round);
		close(c);
	}
	close(ep);
	return ok;
}

static bool case_epoll_held(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int c, a, d, ep, st, go[2];
	bool ok = true;
	pid_t pid = -1;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return bad("epoll_create1: %s", strerror(errno));
	for (int r = 0; ok && r < 4; r++) {
		bool fork_ = r & 1;
		char ch;

		if (!conn(&c, &a, 0, 0) || pipe(go)) {
			ok = false;
			break;
		}
		ev.data.fd = a;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev))
			ok = bad("round %d: add: %s", r, strerror(errno));
		d = -1;
		if (fork_) {
			pid = fork();
			if (pid < 0)
				return bad("fork: %s", strerror(errno));
			if (!pid) {	/* holds a until the parent says go */
				close(go[1]);
				_exit(read(go[0], &ch, 1) == 1 ? 0 : 3);
			}
		} else {
			d = dup(a);
		}
		close(go[0]);
		close(a);
		if (ok && write(c, "x", 1) != 1)
			ok = bad("round %d: write: %s", r, strerror(errno));
		if (ok && ep_one(ep, a, 2000) != 1)
			ok = bad("round %d: the held socket not reported after the close", r);
		if (fork_) {
			if (write(go[1], "g", 1) != 1 || waitpid(pid, &st, 0) != pid)
				ok = bad("round %d: the child", r);
		} else {
			close(d);
		}
		close(go[1]);
		if (ok && ep_one(ep, a, 0) != 0)
			ok = bad("round %d: reported after the last fd's close", r);
		if (ok)
			ok = next_unreported(ep, r);
		close(c);
	}
	close(ep);
	return ok;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		bool (*fn)(void);
	} cases[] = {
		{ "lowest", case_lowest }, { "procfd", case_procfd }, { "fstat", case_fstat },
		{ "flags", case_flags },   { "fresh", case_fresh },   { "dup", case_dup },
		{ "fork", case_fork },     { "refused", case_refused }, { "epoll", case_epoll },
		{ "epoll_held", case_epoll_held },
	};
	size_t ncases = sizeof(cases) / sizeof(cases[0]);
	int fails = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	listener();
	/* No argument: every case but the last; else the cases named. */
	for (size_t i = 0; i < ncases; i++) {
		bool named = argc < 2;

		for (int j = 1; j < argc; j++)
			named |= !strcmp(argv[j], cases[i].name);
		if (!named || (argc < 2 && i == ncases - 1))
			continue;
		why[0] = 0;
		if (cases[i].fn()) {
			printf("%s ok\n", cases[i].name);
		} else {
			printf("%s bad: %s\n", cases[i].name, why);
			fails++;
		}
	}
	return fails ? 1 : 0;
}
