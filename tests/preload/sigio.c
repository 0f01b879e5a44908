// SPDX-License-Identifier: BSD-2-Clause
/*
 * O_ASYNC signals, EINTR and SIOCGSKNS on sockets, as Linux gives them
 * (socket(7) "Signals", fcntl(2) F_SETOWN/F_SETOWN_EX/F_SETSIG, signal(7)
 * "Interruption of system calls"): one line a case, the case's name first,
 * printed the same on the kernel and under `sluice run`
 * (tests/host/test_sigio.sh compares them).  All on 127.0.0.1.
 *
 *   sigio [CASE...]   (no argument: every case but exec_keep)
 *   sigio wait_udp PORT   a datagram from outside to PORT while the only
 *                         thread sleeps in sigsuspend() (a TAP stack's
 *                         frames then read by whoever the stack has:
 *                         tests/host/test_sigio_tap.sh sends it)
 *
 * A signal's line: its number, si_code, si_fd (as "fd" when it is the fd
 * armed, else the number), si_band, the count of signals within 200 ms of
 * the first (a real-time signal queues one an event), and who got it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SIOCGSKNS
#define SIOCGSKNS 0x894C
#endif

static volatile sig_atomic_t got_n;
static volatile int got_sig, got_code, got_fd, got_tid;
static volatile long got_band;
/* Every signal's number, si_code, si_band and si_fd, in order (the first 8). */
#define SEQ 8
static volatile int seq_sig[SEQ], seq_code[SEQ], seq_fd[SEQ];
static volatile long seq_band[SEQ];

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!got_n) {
		got_sig = sig;
		got_code = si->si_code;
		got_fd = si->si_fd;
		got_band = si->si_band;
		got_tid = (int)syscall(SYS_gettid);
	}
	if (got_n < SEQ) {
		seq_sig[got_n] = sig;
		seq_code[got_n] = si->si_code;
		seq_band[got_n] = si->si_band;
		seq_fd[got_n] = si->si_fd;
	}
	got_n = got_n + 1;
}

static void msleep(int ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

static void catch(int sig, int flags)
{
	struct sigaction a;

	memset(&a, 0, sizeof(a));
	a.sa_sigaction = on_sig;
	a.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&a.sa_mask);
	sigaction(sig, &a, NULL);
}

static void reset(void)
{
	got_n = 0;
	got_sig = got_code = got_fd = got_tid = 0;
	got_band = 0;
}

/* Up to 2 s for a first signal, then 200 ms for more. */
static void await(void)
{
	for (int i = 0; i < 2000 && !got_n; i++)
		msleep(1);
	if (got_n)
		msleep(200);
}

static void report(const char *name, int armed, int owner_tid)
{
	if (!got_n) {
		printf("%s none\n", name);
		return;
	}
	printf("%s sig=%d code=%d fd=", name, got_sig, got_code);
	if (got_fd == armed)
		printf("fd");
	else
		printf("%d", got_fd);
	printf(" band=0x%lx n=%d to=%s\n", got_band, (int)got_n,
	       got_tid == owner_tid ? "owner" : "other");
}

/* Every signal of the case: "code:band" each, in order, and whether
 * each si_fd was the fd armed. */
static void report_seq(const char *name, int armed, int owner_tid)
{
	int fds = 0;

	if (!got_n) {
		printf("%s none\n", name);
		return;
	}
	printf("%s sig=%d n=%d seq=", name, got_sig, (int)got_n);
	for (int i = 0; i < got_n && i < SEQ; i++) {
		printf("%s%d:0x%lx", i ? "," : "", seq_code[i], seq_band[i]);
		fds += seq_fd[i] == armed;
	}
	printf(" fd=%s to=%s\n", fds == (got_n < SEQ ? got_n : SEQ) ? "fd" : "other",
	       got_tid == owner_tid ? "owner" : "other");
}

static struct sockaddr_in lo(uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(port);
	return a;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);

	getsockname(fd, (struct sockaddr *)&a, &l);
	return ntohs(a.sin_port);
}

static int listener(void)
{
	struct sockaddr_in a = lo(0);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 8)) {
		perror("listener");
		exit(1);
	}
	return l;
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = lo(port);
	int c = socket(AF_INET, SOCK_STREAM, 0);

	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(1);
	}
	return c;
}

/* A connection made without blocking in connect() (a signal for the
 * listener may come while it would wait: EINTR). */
static int connect_nb(uint16_t port)
{
	struct sockaddr_in a = lo(port);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct pollfd p = { .fd = c, .events = POLLOUT };

	if (c < 0 || (connect(c, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)) {
		perror("connect");
		exit(1);
	}
	for (int i = 0; i < 100 && poll(&p, 1, 20) != 1; i++)
		;
	return c;
}

/* A connected pair: *c the client, *a the accepted end. */
static void tcp_pair(int *c, int *a)
{
	int l = listener();

	*c = connect_to(port_of(l));
	*a = accept(l, NULL, NULL);
	close(l);
}

static int udp_bound(void)
{
	struct sockaddr_in a = lo(0);
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof(a))) {
		perror("udp");
		exit(1);
	}
	return u;
}

static void udp_send(uint16_t port)
{
	struct sockaddr_in a = lo(port);
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	sendto(u, "x", 1, 0, (struct sockaddr *)&a, sizeof(a));
	close(u);
}

static void arm(int fd, int owner, int sig)
{
	if (fcntl(fd, F_SETOWN, owner))
		perror("F_SETOWN");
	if (sig >= 0 && fcntl(fd, F_SETSIG, sig))
		perror("F_SETSIG");
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC))
		perror("F_SETFL O_ASYNC");
}

static int me(void)
{
	return (int)syscall(SYS_gettid);
}

/* ---- The cases ---------------------------------------------------------- */

static void tcp_data(void)
{
	int c, a;

	tcp_pair(&c, &a);
	catch(SIGIO, 0);
	arm(a, getpid(), -1);
	reset();
	send(c, "x", 1, 0);
	await();
	report("tcp_data", a, me());
	printf("tcp_data_getfl async=%d own=%d\n", !!(fcntl(a, F_GETFL) & O_ASYNC),
	       fcntl(a, F_GETOWN) == getpid());
	close(c);
	close(a);
}

static void tcp_setsig(void)
{
	int c, a;
	struct f_owner_ex ex;

	tcp_pair(&c, &a);
	catch(SIGRTMIN + 1, 0);
	arm(a, getpid(), SIGRTMIN + 1);
	fcntl(a, F_GETOWN_EX, &ex);
	printf("tcp_setsig_get sig=%d own_type=%d own=%d\n", fcntl(a, F_GETSIG) - SIGRTMIN,
	       ex.type, ex.pid == getpid());
	reset();
	send(c, "x", 1, 0);
	await();
	report("tcp_setsig", a, me());
	/* Two more writes, each read first: one signal each. */
	reset();
	send(c, "y", 1, 0);
	await();
	send(c, "z", 1, 0);
	msleep(300);
	report("tcp_setsig_two", a, me());
	/* The peer's FIN: POLL_IN (the socket is not shut both ways). */
	reset();
	shutdown(c, SHUT_WR);
	await();
	report("tcp_setsig_fin", a, me());
	close(c);
	close(a);
}

/*
 * The case's SIGURGs (how many, their si_code), then every other signal
 * in order: "rtN:code:band:fd" (fd "fd" when it is the fd armed).  A
 * SIGURG and signals sent with it are taken in nested handlers, the
 * later ones first: their relative order says nothing, and is left out.
 */
static void report_all(const char *name, int armed)
{
	int urgs = 0, code = 0, k = 0;

	for (int i = 0; i < got_n && i < SEQ; i++)
		if (seq_sig[i] == SIGURG) {
			urgs++;
			code = seq_code[i];
		}
	printf("%s n=%d urg=%d", name, (int)got_n, urgs);
	if (urgs)
		printf(":0x%x", code);
	for (int i = 0; i < got_n && i < SEQ; i++) {
		if (seq_sig[i] == SIGURG)
			continue;
		printf("%s%s%d:0x%x:0x%lx:%s", k++ ? "," : " seq=",
		       seq_sig[i] == SIGIO ? "io" : "rt",
		       seq_sig[i] == SIGIO ? 0 : seq_sig[i] - SIGRTMIN, seq_code[i], seq_band[i],
		       seq_fd[i] == armed ? "fd" : "other");
	}
	printf("\n");
}

/*
 * Urgent data to an O_ASYNC socket with an owner (Linux tcp_urg() ->
 * tcp_check_urg() -> sk_send_sigurg()): SIGURG to the owner, then with
 * F_SETSIG the F_SETSIG signal with POLL_PRI (sk_wake_async(SOCK_WAKE_URG),
 * kill_fasync()), then the data's own (tcp_urg()'s sk_data_ready() for the
 * urgent byte, tcp_data_queue()'s for the segment); with F_SETSIG 0,
 * SIGURG and SIGIO (kill_fasync() sends SIGURG's band to no one then).
 * SIGIO is a standard signal: two sent before it is taken are one, so
 * the plain case says only whether it came.
 */
static void urgent(void)
{
	int c, a, urgs = 0, ios = 0, others = 0;
	char b[16];

	tcp_pair(&c, &a);
	catch(SIGURG, 0);
	catch(SIGIO, 0);
	catch(SIGRTMIN + 1, 0);
	arm(a, getpid(), SIGRTMIN + 1);
	/* An urgent byte alone. */
	reset();
	send(c, "x", 1, MSG_OOB);
	await();
	report_all("urgent_setsig", a);
	recv(a, b, 1, MSG_OOB);
	/* Data and an urgent byte in one segment. */
	reset();
	send(c, "abc", 3, MSG_OOB);
	await();
	report_all("urgent_setsig_data", a);
	recv(a, b, 1, MSG_OOB);
	recv(a, b, sizeof(b), MSG_DONTWAIT);
	/* Data alone after them: POLL_IN only. */
	reset();
	send(c, "d", 1, 0);
	await();
	report_all("urgent_setsig_after", a);
	recv(a, b, sizeof(b), MSG_DONTWAIT);
	/*
	 * A send of more than 64 KiB MSG_OOB: its first segments' pointers
	 * point past them (Linux's is at most 0xffff: each segment's is new)
	 * and their bytes never come as urgent, each POLL_PRI then the
	 * segment's POLL_IN; the urgent byte's own POLL_IN at its segment.
	 * How many segments differs between stacks: the first six signals.
	 */
	{
		static char big[200000];
		ssize_t got = 0, r;

		reset();
		send(c, big, sizeof(big), MSG_OOB);
		for (int i = 0; i < 3000 && got < (ssize_t)sizeof(big) - 1; i++) {
			r = recv(a, big, sizeof(big), MSG_DONTWAIT);
			if (r > 0)
				got += r;
			else
				msleep(1);
		}
		await();
		printf("urgent_setsig_long got=%zd seq=", got);
		for (int i = 0, k = 0; i < got_n && i < SEQ && k < 6; i++) {
			if (seq_sig[i] == SIGURG)
				continue;
			k++;
			putchar(seq_sig[i] == SIGRTMIN + 1 && seq_fd[i] == a &&
				seq_code[i] == POLL_PRI && seq_band[i] == (POLLPRI | POLLRDBAND) ?
				'P' : seq_sig[i] == SIGRTMIN + 1 && seq_fd[i] == a &&
				seq_code[i] == POLL_IN && seq_band[i] == (POLLIN | POLLRDNORM) ?
				'I' : '?');
		}
		putchar('\n');
		recv(a, b, 1, MSG_OOB);
	}
	/* F_SETSIG 0: SIGURG, and the data's SIGIO. */
	fcntl(a, F_SETSIG, 0);
	reset();
	send(c, "y", 1, MSG_OOB);
	await();
	for (int i = 0; i < got_n && i < SEQ; i++) {
		urgs += seq_sig[i] == SIGURG;
		ios += seq_sig[i] == SIGIO;
		others += seq_sig[i] != SIGURG && seq_sig[i] != SIGIO;
	}
	printf("urgent_nosetsig urg=%d io=%d other=%d\n", urgs, ios > 0, others);
	close(c);
	close(a);
}

/*
 * A new urgent pointer that brings no data (Linux tcp_urg() ->
 * tcp_check_urg() -> sk_send_sigurg(), then tcp_data_queue() with nothing
 * to queue): SIGURG and POLL_PRI, nothing else.  The pointer comes alone
 * on a bare ACK: the receiver's window is shut (a small SO_RCVBUF, filled
 * and not read), so the sender's urgent byte waits behind data it may
 * not send, and every segment it sends below the pointer says where the
 * urgent data ends (RFC 9293 3.8.5; Linux __tcp_transmit_skb()), the
 * ACK of a byte the receiver sends it among them.
 */
static void urgent_bare(void)
{
	static char fill[40000];
	int c, a, sz = 2048, big = 1 << 20;
	char b[16];
	ssize_t n;

	tcp_pair(&c, &a);
	setsockopt(a, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	catch(SIGURG, 0);
	catch(SIGRTMIN + 1, 0);
	arm(a, getpid(), SIGRTMIN + 1);
	n = send(c, fill, sizeof(fill), MSG_DONTWAIT);
	msleep(300);
	reset();
	/* Queued behind the data the shut window holds back. */
	if (send(c, "u", 1, MSG_OOB | MSG_DONTWAIT) != 1)
		perror("send MSG_OOB");
	msleep(100);
	printf("urgent_bare_queued sent=%zd signals=%d\n", n, (int)got_n);
	reset();
	/* c's ACK of this byte carries the pointer. */
	send(a, "r", 1, 0);
	await();
	report_all("urgent_bare", a);
	recv(c, b, sizeof(b), MSG_DONTWAIT);
	close(c);
	close(a);
}

/*
 * Room to write back after a write found none (SOCK_WAKE_SPACE): one
 * signal, however many ACKs bring it, POLL_OUT with POLLOUT|POLLWRNORM|
 * POLLWRBAND.
 */
static void tcp_space(void)
{
	static char buf[65536];
	int c, a, full = 0;

	tcp_pair(&c, &a);
	catch(SIGRTMIN + 10, 0);
	fcntl(c, F_SETFL, O_NONBLOCK);
	arm(c, getpid(), SIGRTMIN + 10);
	reset();
	for (int i = 0; i < 10000 && !full; i++)
		full = send(c, buf, sizeof(buf), 0) < 0 && errno == EAGAIN;
	msleep(100);
	printf("tcp_space_full full=%d signals=%d\n", full, (int)got_n);
	reset();
	fcntl(a, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 100000; i++) {
		if (recv(a, buf, sizeof(buf), 0) < 0) {
			if (errno != EAGAIN)
				break;
			msleep(5);
			if (i > 0 && recv(a, buf, sizeof(buf), MSG_PEEK) < 0)
				break;
		}
	}
	await();
	if (!got_n)
		printf("tcp_space none\n");
	else
		printf("tcp_space sig=%d code=%d band=0x%lx fd=%s n=%d\n", got_sig, got_code,
		       got_band, got_fd == c ? "fd" : "other", (int)got_n);
	close(c);
	close(a);
}

static void udp_data(void)
{
	int u = udp_bound();

	catch(SIGIO, 0);
	arm(u, getpid(), -1);
	reset();
	udp_send(port_of(u));
	await();
	report("udp_data", u, me());
	catch(SIGRTMIN + 2, 0);
	fcntl(u, F_SETSIG, SIGRTMIN + 2);
	reset();
	udp_send(port_of(u));
	udp_send(port_of(u));
	udp_send(port_of(u));
	await();
	report("udp_setsig_three", u, me());
	close(u);
}

static void listen_conn(void)
{
	int l = listener(), c;

	catch(SIGRTMIN + 3, 0);
	arm(l, getpid(), SIGRTMIN + 3);
	reset();
	c = connect_nb(port_of(l));
	await();
	report("listen_conn", l, me());
	close(c);
	close(l);
}

static void fioasync(void)
{
	int u = udp_bound(), on = 1, off = 0, own = getpid(), v = 0;

	catch(SIGRTMIN + 4, 0);
	ioctl(u, FIOSETOWN, &own);
	fcntl(u, F_SETSIG, SIGRTMIN + 4);
	printf("fioasync_set ret=%d\n", ioctl(u, FIOASYNC, &on));
	ioctl(u, FIOGETOWN, &v);
	printf("fioasync_get async=%d own=%d\n", !!(fcntl(u, F_GETFL) & O_ASYNC), v == own);
	reset();
	udp_send(port_of(u));
	await();
	report("fioasync", u, me());
	ioctl(u, FIOASYNC, &off);
	printf("fioasync_off async=%d\n", !!(fcntl(u, F_GETFL) & O_ASYNC));
	reset();
	udp_send(port_of(u));
	await();
	report("fioasync_off_data", u, me());
	close(u);
}

static volatile int t2_tid, t2_stop;

static void *thread2(void *arg)
{
	sigset_t m;

	(void)arg;
	sigemptyset(&m);
	pthread_sigmask(SIG_SETMASK, &m, NULL);
	t2_tid = me();
	while (!t2_stop)
		msleep(1);
	return NULL;
}

static void owner_tid(void)
{
	struct f_owner_ex ex, back;
	pthread_t t;
	int u = udp_bound();

	catch(SIGRTMIN + 5, 0);
	pthread_create(&t, NULL, thread2, NULL);
	while (!t2_tid)
		msleep(1);
	ex.type = F_OWNER_TID;
	ex.pid = t2_tid;
	fcntl(u, F_SETOWN_EX, &ex);
	fcntl(u, F_SETSIG, SIGRTMIN + 5);
	fcntl(u, F_SETFL, fcntl(u, F_GETFL) | O_ASYNC);
	fcntl(u, F_GETOWN_EX, &back);
	printf("owner_tid_get type=%d is_thread=%d\n", back.type, back.pid == t2_tid);
	reset();
	udp_send(port_of(u));
	await();
	report("owner_tid", u, t2_tid);
	t2_stop = 1;
	pthread_join(t, NULL);
	close(u);
}

/*
 * Each event sk_wake_async() reports, with its own si_code and si_band
 * (fs/fcntl.c band_table): a connect done (POLL_OUT), data (POLL_IN), the
 * peer's FIN after this end shut its side (POLL_HUP, then tcp_data_ready()'s
 * POLL_IN), a reset (POLL_ERR), a refused connect (POLL_ERR), an ICMP
 * error on a connected UDP socket (POLL_ERR); to the process (how 0), a
 * second thread (F_OWNER_TID, 1), the process group (2) or the parent (3).
 */
static void own(int fd, int how, int sig)
{
	struct f_owner_ex ex;

	if (how == 1) {
		ex.type = F_OWNER_TID;
		ex.pid = t2_tid;
		if (fcntl(fd, F_SETOWN_EX, &ex))
			perror("F_SETOWN_EX");
	} else if (fcntl(fd, F_SETOWN, how == 3 ? getppid() : how == 2 ? -getpgrp() : getpid())) {
		perror("F_SETOWN");
	}
	if (fcntl(fd, F_SETSIG, sig))
		perror("F_SETSIG");
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC))
		perror("F_SETFL O_ASYNC");
}

static void events(int how)
{
	static const char *const sfx[] = { "pid", "tid", "pgrp" };
	int sig = SIGRTMIN + 12 + how, l = listener(), c, a, u, who, ret, err, soerr;
	socklen_t len;
	struct sockaddr_in to;
	struct linger lg = { 1, 0 };
	pthread_t t;
	char name[64], b[16];

	catch(sig, 0);
	t2_tid = 0;
	t2_stop = 0;
	if (how == 1) {
		pthread_create(&t, NULL, thread2, NULL);
		while (!t2_tid)
			msleep(1);
	}
	who = how == 1 ? t2_tid : me();

	/* A connect done. */
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	own(c, how, sig);
	reset();
	to = lo(port_of(l));
	if (connect(c, (struct sockaddr *)&to, sizeof(to)) && errno != EINPROGRESS)
		perror("connect");
	await();
	snprintf(name, sizeof(name), "ev_connect_%s", sfx[how]);
	report_seq(name, c, who);
	a = accept(l, NULL, NULL);

	/* Data. */
	reset();
	send(a, "x", 1, 0);
	await();
	snprintf(name, sizeof(name), "ev_data_%s", sfx[how]);
	report_seq(name, c, who);
	recv(c, b, sizeof(b), 0);

	/* This end shut its side first (no signal), then the peer's FIN. */
	reset();
	shutdown(c, SHUT_WR);
	msleep(100);
	snprintf(name, sizeof(name), "ev_shut_%s", sfx[how]);
	report_seq(name, c, who);
	reset();
	shutdown(a, SHUT_WR);
	await();
	snprintf(name, sizeof(name), "ev_hup_%s", sfx[how]);
	report_seq(name, c, who);
	close(c);
	close(a);

	/* A reset from the peer. */
	c = connect_nb(port_of(l));
	a = accept(l, NULL, NULL);
	own(c, how, sig);
	reset();
	setsockopt(a, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(a);
	await();
	snprintf(name, sizeof(name), "ev_reset_%s", sfx[how]);
	report_seq(name, c, who);
	close(c);

	/* A refused connect: nobody listens on the port any more. */
	to = lo(port_of(l));
	close(l);
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	own(c, how, sig);
	reset();
	ret = connect(c, (struct sockaddr *)&to, sizeof(to));
	err = errno;
	await();
	len = sizeof(soerr);
	getsockopt(c, SOL_SOCKET, SO_ERROR, &soerr, &len);
	printf("ev_refused_%s_connect ret=%d errno=%s so_error=%s\n", sfx[how], ret,
	       ret ? strerrorname_np(err) : "-", soerr ? strerrorname_np(soerr) : "0");
	snprintf(name, sizeof(name), "ev_refused_%s", sfx[how]);
	report_seq(name, c, who);
	close(c);

	/* An ICMP port unreachable for a connected UDP socket. */
	u = udp_bound();
	l = udp_bound();
	to = lo(port_of(l));
	close(l);
	connect(u, (struct sockaddr *)&to, sizeof(to));
	own(u, how, sig);
	reset();
	send(u, "x", 1, 0);
	await();
	snprintf(name, sizeof(name), "ev_udp_err_%s", sfx[how]);
	report_seq(name, u, who);
	close(u);

	if (how == 1) {
		t2_stop = 1;
		pthread_join(t, NULL);
	}
}

static void events_pid(void)
{
	events(0);
}

static void events_tid(void)
{
	events(1);
}

static void events_pgrp(void)
{
	events(2);
}

static void owner_pgrp(void)
{
	int u = udp_bound();

	catch(SIGRTMIN + 6, 0);
	arm(u, -getpgrp(), SIGRTMIN + 6);
	printf("owner_pgrp_get own=%d\n", fcntl(u, F_GETOWN) == -getpgrp());
	reset();
	udp_send(port_of(u));
	await();
	report("owner_pgrp", u, me());
	close(u);
}

/*
 * The owner asleep in sigsuspend(), the sender another process: nobody of
 * the owner's runs the stack when the datagram and the connection come.
 */
static void asleep(void)
{
	int u = udp_bound(), l = listener(), p[2];
	sigset_t none, old, blk;
	pid_t child;

	catch(SIGRTMIN + 7, 0);
	catch(SIGRTMIN + 8, 0);
	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 7);
	sigaddset(&blk, SIGRTMIN + 8);
	sigprocmask(SIG_BLOCK, &blk, &old);
	arm(u, getpid(), SIGRTMIN + 7);
	arm(l, getpid(), SIGRTMIN + 8);
	if (pipe(p))
		exit(1);
	child = fork();
	if (child == 0) {
		char c;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		msleep(100);	/* the parent is in sigsuspend() by now */
		udp_send(port_of(u));
		msleep(300);
		close(connect_nb(port_of(l)));
		_exit(0);
	}
	close(p[0]);
	reset();
	if (write(p[1], "g", 1) != 1)
		exit(1);
	sigemptyset(&none);
	alarm(5);
	sigsuspend(&none);
	report("asleep_udp", u, me());
	reset();
	sigsuspend(&none);
	alarm(0);
	report("asleep_listen", l, me());
	sigprocmask(SIG_SETMASK, &old, NULL);
	waitpid(child, NULL, 0);
	close(p[1]);
	close(u);
	close(l);
}

/*
 * No handler: the signal blocked and taken with sigtimedwait(), as
 * F_SETSIG servers do.  Twelve datagrams, each read after its signal:
 * one signal each, with the kernel's siginfo.
 */
static void sigwait_case(void)
{
	int u = udp_bound(), n = 0, fds = 0, codes = 0;
	struct timespec t = { 2, 0 };
	sigset_t blk, old;
	siginfo_t si;
	char b;

	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 9);
	sigprocmask(SIG_BLOCK, &blk, &old);
	arm(u, getpid(), SIGRTMIN + 9);
	for (int i = 0; i < 12; i++) {
		udp_send(port_of(u));
		if (sigtimedwait(&blk, &si, &t) != SIGRTMIN + 9)
			break;
		n++;
		fds += si.si_fd == u;
		codes += si.si_code == POLL_IN;
		if (recv(u, &b, 1, MSG_DONTWAIT) != 1)
			break;
	}
	printf("sigwait n=%d si_fd=%d poll_in=%d\n", n, fds, codes);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(u);
}

/*
 * A burst: BURST datagrams sent before the owner takes any signal, the
 * signal blocked and taken afterwards with sigtimedwait().  Linux's
 * sock_def_readable() signals each (kill_fasync()): a real-time F_SETSIG
 * signal is queued once an event (up to RLIMIT_SIGPENDING), so BURST
 * POLL_IN with POLLIN|POLLRDNORM; a standard one (SIGIO, plain or as the
 * F_SETSIG signal) is pending or not, so one.  The datagrams are sent
 * from a child, so that the owner's process does nothing meanwhile.
 */
#define BURST 100
static void burst_one(const char *name, int sig, int setsig)
{
	int u = udp_bound(), n = 0, in = 0, fds = 0, st;
	struct timespec t = { 0, 500000000 };
	sigset_t blk, old;
	siginfo_t si;
	pid_t pid;

	sigemptyset(&blk);
	sigaddset(&blk, sig);
	sigprocmask(SIG_BLOCK, &blk, &old);
	arm(u, getpid(), setsig);
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in a = lo(port_of(u));
		int s = socket(AF_INET, SOCK_DGRAM, 0);

		for (int i = 0; i < BURST; i++)
			sendto(s, "x", 1, 0, (struct sockaddr *)&a, sizeof(a));
		_exit(0);
	}
	waitpid(pid, &st, 0);
	/* Up to 2 s for the first, then until none for 500 ms. */
	for (int i = 0; i < BURST + 1; i++) {
		struct timespec first = { 2, 0 };

		if (sigtimedwait(&blk, &si, i ? &t : &first) != sig)
			break;
		n++;
		in += si.si_code == POLL_IN && si.si_band == (POLLIN | POLLRDNORM);
		fds += si.si_fd == u;
	}
	if (setsig)
		printf("%s n=%d poll_in=%d si_fd=%d\n", name, n, in, fds);
	else
		printf("%s n=%d\n", name, n);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(u);
}

static void burst(void)
{
	burst_one("burst_rt", SIGRTMIN + 4, SIGRTMIN + 4);
	burst_one("burst_sigio", SIGIO, 0);
	burst_one("burst_setsig_sigio", SIGIO, SIGIO);
}

/* One signal sig taken in up to 2 s: "code:band" and whether si_fd was
 * fd, or "none". */
static void take_one(const char *name, int sig, int fd)
{
	struct timespec t = { 2, 0 };
	sigset_t blk;
	siginfo_t si;

	sigemptyset(&blk);
	sigaddset(&blk, sig);
	if (sigtimedwait(&blk, &si, &t) != sig) {
		printf("%s none\n", name);
		return;
	}
	printf("%s %d:0x%lx fd=%s\n", name, si.si_code, (long)si.si_band,
	       si.si_fd == fd ? "fd" : "other");
}

/*
 * The owner set by F_SETOWN gets the socket's signals as long as the
 * socket exists (its file's fasync entry lives with the file): here a
 * child arms a UDP socket with this process as the owner, forks a
 * grandchild that keeps it, and exits; a datagram sent then signals this
 * process, si_fd the number the child armed.
 */
static void fork_keep(void)
{
	int p[2], q[2], st, fd = -1;
	uint16_t port = 0;
	sigset_t blk, old;
	pid_t a;

	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 6);
	sigprocmask(SIG_BLOCK, &blk, &old);
	/* q: this process's end closes when it has taken both signals. */
	if (pipe(p) || pipe(q))
		return;
	a = fork();
	if (a == 0) {
		int u = udp_bound();
		pid_t b;

		arm(u, getppid(), SIGRTMIN + 6);
		b = fork();
		if (b == 0) {
			uint16_t pt = port_of(u);

			/* The grandchild: holds the socket past its parent,
			 * until this process is done (or 3 s). */
			struct pollfd done = { .fd = q[0], .events = POLLIN };

			close(q[1]);
			for (int i = 0; i < 2000 && getppid() == a; i++)
				msleep(1);
			if (write(p[1], &pt, sizeof(pt)) != sizeof(pt) ||
			    write(p[1], &u, sizeof(u)) != sizeof(u))
				_exit(1);
			poll(&done, 1, 3000);
			_exit(0);
		}
		_exit(b < 0);
	}
	waitpid(a, &st, 0);
	close(p[1]);
	close(q[0]);
	if (read(p[0], &port, sizeof(port)) != sizeof(port) || read(p[0], &fd, sizeof(fd)) != sizeof(fd)) {
		printf("fork_keep no_grandchild\n");
	} else {
		udp_send(port);
		take_one("fork_keep", SIGRTMIN + 6, fd);
		/* And again: one signal an event, the one process serving. */
		udp_send(port);
		take_one("fork_keep_again", SIGRTMIN + 6, fd);
	}
	close(q[1]);
	close(p[0]);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * Two processes that hold one socket (forked before either armed it) both
 * set O_ASYNC: the description's flag, set twice, one fasync entry
 * (fasync_helper() keeps one a file): a datagram is one POLL_IN, urgent
 * data one SIGURG and one POLL_PRI.
 */
static void two_armed(void)
{
	int p[2], q[2], u = udp_bound(), c, a, st, urgs = 0, pris = 0, ins = 0;
	struct timespec t = { 0, 500000000 };
	sigset_t blk, old;
	siginfo_t si;
	pid_t pid;
	char b = 0;

	tcp_pair(&c, &a);
	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 8);
	sigaddset(&blk, SIGURG);
	sigprocmask(SIG_BLOCK, &blk, &old);
	if (pipe(p) || pipe(q))
		return;
	pid = fork();
	if (pid == 0) {
		arm(u, getppid(), SIGRTMIN + 8);
		arm(a, getppid(), SIGRTMIN + 8);
		if (write(p[1], &b, 1) != 1 || read(q[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	if (read(p[0], &b, 1) != 1)
		return;
	arm(u, getpid(), SIGRTMIN + 8);
	arm(a, getpid(), SIGRTMIN + 8);
	udp_send(port_of(u));
	for (int i = 0; i < 8 && sigtimedwait(&blk, &si, &t) == SIGRTMIN + 8; i++)
		ins++;
	printf("two_armed_udp n=%d\n", ins);
	ins = 0;
	send(c, "x", 1, MSG_OOB);
	for (int i = 0, sig; i < 8 && (sig = sigtimedwait(&blk, &si, &t)) > 0; i++) {
		urgs += sig == SIGURG;
		pris += sig == SIGRTMIN + 8 && si.si_code == POLL_PRI;
		ins += sig == SIGRTMIN + 8 && si.si_code == POLL_IN;
	}
	printf("two_armed_urgent sigurg=%d poll_pri=%d poll_in=%d\n", urgs, pris, ins);
	if (write(q[1], &b, 1) != 1)
		return;
	waitpid(pid, &st, 0);
	close(c);
	close(a);
	close(u);
	/* The FIN's, taken before the mask goes (their default kills). */
	t.tv_nsec = 200000000;
	while (sigtimedwait(&blk, &si, &t) > 0)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * An exec keeps O_ASYNC, the owner and the F_SETSIG signal of a socket
 * without FD_CLOEXEC (they are the description's): armed here, then this
 * program again as "exec_keep_after FD", the signal blocked throughout
 * (the mask stays across exec; a caught one's handler would not), where
 * a datagram to it signals this same process.
 */
static void exec_keep(void)
{
	int u = udp_bound();
	char arg[16];
	sigset_t blk;

	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 7);
	sigprocmask(SIG_BLOCK, &blk, NULL);
	arm(u, getpid(), SIGRTMIN + 7);
	snprintf(arg, sizeof(arg), "%d", u);
	fflush(stdout);
	execl("/proc/self/exe", "sigio", "exec_keep_after", arg, (char *)NULL);
	perror("exec");
}

static void exec_keep_after(int u)
{
	struct f_owner_ex ex;

	fcntl(u, F_GETOWN_EX, &ex);
	printf("exec_keep_after async=%d sig=%d own=%d\n", !!(fcntl(u, F_GETFL) & O_ASYNC),
	       fcntl(u, F_GETSIG) - SIGRTMIN, ex.pid == getpid());
	udp_send(port_of(u));
	take_one("exec_keep_signal", SIGRTMIN + 7, u);
	close(u);
}

/* ---- EINTR ---------------------------------------------------------------- */

static int blk_fd;
static pthread_t blk_thread;
static volatile sig_atomic_t alarm_ran;

static void on_alarm(int sig)
{
	(void)sig;
	alarm_ran = 1;
}

/* Signal the main thread in 200 ms; once its handler ran, 200 ms later,
 * give it what it waits for (a byte to blk_fd, or a connection to it). */
static void *kicker(void *arg)
{
	int accepting = *(int *)arg, c = -1;

	msleep(200);
	pthread_kill(blk_thread, SIGALRM);
	for (int i = 0; i < 2000 && !alarm_ran; i++)
		msleep(1);
	msleep(200);
	if (accepting)
		c = connect_to(port_of(blk_fd));
	else
		send(blk_fd, "k", 1, 0);
	msleep(300);
	if (c >= 0)
		close(c);
	return NULL;
}

/* how: 0 SA_RESTART, 1 no SA_RESTART, 2 signal() then siginterrupt(1),
 * 3 SA_RESTART with SO_RCVTIMEO of 2 s, 4 SA_RESTART after another
 * signal's handler without it ran outside any call. */
static void eintr(const char *name, int how, int accepting)
{
	struct sigaction a;
	pthread_t t;
	sigset_t m;
	int c, s, ret, err;
	char b;

	memset(&a, 0, sizeof(a));
	a.sa_handler = on_alarm;
	a.sa_flags = how == 1 ? 0 : SA_RESTART;
	sigemptyset(&a.sa_mask);
	if (how == 2) {
		signal(SIGALRM, on_alarm);
		/* What programs still call (glibc marks it deprecated). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
		siginterrupt(SIGALRM, 1);
#pragma GCC diagnostic pop
	} else {
		sigaction(SIGALRM, &a, NULL);
	}
	if (how == 4) {
		catch(SIGUSR1, 0);
		raise(SIGUSR1);
		signal(SIGUSR1, SIG_DFL);
	}
	alarm_ran = 0;
	blk_thread = pthread_self();
	if (accepting) {
		s = listener();
		blk_fd = s;
	} else {
		tcp_pair(&c, &s);
		blk_fd = c;
	}
	if (how == 3) {
		struct timeval tv = { 2, 0 };

		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	/* The kicker must not take SIGALRM itself. */
	sigemptyset(&m);
	sigaddset(&m, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &m, NULL);
	pthread_create(&t, NULL, kicker, &accepting);
	pthread_sigmask(SIG_UNBLOCK, &m, NULL);
	if (accepting) {
		ret = accept(s, NULL, NULL);
		err = errno;
		if (ret >= 0)
			close(ret);
	} else {
		ret = (int)recv(s, &b, 1, 0);
		err = errno;
	}
	pthread_join(t, NULL);
	printf("%s ret=%s errno=%s handler=%d\n", name, ret < 0 ? "-1" : "ok",
	       ret < 0 ? strerrorname_np(err) : "-", (int)alarm_ran);
	if (!accepting)
		close(c);
	close(s);
	signal(SIGALRM, SIG_DFL);
}

static void skns(void)
{
	int u = socket(AF_INET, SOCK_DGRAM, 0), next, ns;
	struct stat a, b;

	next = dup(0);
	close(next);
	ns = ioctl(u, SIOCGSKNS);
	if (ns < 0) {
		printf("skns ret=-1 errno=%s\n", strerrorname_np(errno));
		close(u);
		return;
	}
	fstat(ns, &a);
	stat("/proc/self/ns/net", &b);
	printf("skns same_ns=%d next_fd=%d cloexec=%d\n", a.st_ino == b.st_ino && a.st_dev == b.st_dev,
	       ns == next, !!(fcntl(ns, F_GETFD) & FD_CLOEXEC));
	close(ns);
	close(u);
}

/* An armed socket with nothing happening to it: no signal while another
 * process opens and closes sockets of its own (on Sluice, of the same
 * stack and shard: a placeholder that kept O_ASYNC would be signalled at
 * every other close of its shard's FIFO, pipe_release()). */
static void quiet(void)
{
	int u = udp_bound(), st;
	pid_t pid;

	catch(SIGIO, 0);
	arm(u, getpid(), -1);
	reset();
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 20; i++)
			close(socket(AF_INET, i % 2 ? SOCK_DGRAM : SOCK_STREAM, 0));
		_exit(0);
	}
	waitpid(pid, &st, 0);
	msleep(300);
	report("quiet", u, me());
	close(u);
}

/* An armed socket whose process ends (exit, SIGKILL), or execs, with it open: its owner
 * (here the parent) gets no signal (Linux's close of a socket removes its
 * fasync entry first: sock_close(), sock_fasync()). */
static void end_quiet(void)
{
	const char *how[] = { "exit", "exec", "kill" };

	catch(SIGRTMIN + 15, 0);
	for (int k = 0; k < 3; k++) {
		int st;
		pid_t pid;

		reset();
		pid = fork();
		if (pid == 0) {
			own(udp_bound(), 3, SIGRTMIN + 15);
			own(listener(), 3, SIGRTMIN + 15);
			if (k == 1)
				execl("/bin/true", "true", (char *)NULL);
			if (k == 2)
				raise(SIGKILL);
			_exit(0);
		}
		waitpid(pid, &st, 0);
		msleep(300);
		printf("end_quiet_%s ", how[k]);
		report_seq("signals", -1, me());
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "tcp_data", tcp_data }, { "tcp_setsig", tcp_setsig }, { "udp_data", udp_data },
	{ "listen_conn", listen_conn }, { "fioasync", fioasync }, { "owner_tid", owner_tid },
	{ "owner_pgrp", owner_pgrp }, { "asleep", asleep }, { "skns", skns },
	{ "sigwait", sigwait_case }, { "tcp_space", tcp_space }, { "quiet", quiet },
	{ "events_pid", events_pid }, { "events_tid", events_tid },
	{ "events_pgrp", events_pgrp }, { "end_quiet", end_quiet }, { "urgent", urgent },
	{ "urgent_bare", urgent_bare },
	{ "burst", burst }, { "fork_keep", fork_keep }, { "two_armed", two_armed },
	/* Last: it execs (the rest of a run is lost). */
	{ "exec_keep", exec_keep },
};

static void eintr_all(void)
{
	eintr("recv_restart", 0, 0);
	eintr("recv_restart_after_other", 4, 0);
	eintr("recv_norestart", 1, 0);
	eintr("recv_siginterrupt", 2, 0);
	eintr("recv_rcvtimeo", 3, 0);
	eintr("accept_restart", 0, 1);
	eintr("accept_norestart", 1, 1);
	eintr("accept_siginterrupt", 2, 1);
}

static void wait_udp(int port)
{
	struct sockaddr_in a;
	sigset_t blk, old, none;
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof(a))) {
		perror("bind");
		exit(1);
	}
	catch(SIGRTMIN + 11, 0);
	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 11);
	sigprocmask(SIG_BLOCK, &blk, &old);
	arm(u, getpid(), SIGRTMIN + 11);
	reset();
	printf("ready\n");
	sigemptyset(&none);
	alarm(10);
	sigsuspend(&none);
	alarm(0);
	report("wait_udp", u, me());
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(u);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "exec_keep_after")) {
		exec_keep_after(atoi(argv[2]));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "wait_udp")) {
		wait_udp(atoi(argv[2]));
		return 0;
	}
	/* A process group of its own: the pgrp case signals no one else. */
	setpgid(0, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool run = argc < 2 && cases[i].fn != exec_keep;	/* named only */

		for (int k = 1; k < argc; k++)
			run |= !strcmp(argv[k], cases[i].name);
		if (run)
			cases[i].fn();
	}
	{
		bool run = argc < 2;

		for (int k = 1; k < argc; k++)
			run |= !strcmp(argv[k], "eintr");
		if (run)
			eintr_all();
	}
	return 0;
}
