// SPDX-License-Identifier: GPL-2.0-only
/*
 * kselftests for socket fds in sluice.ko: SLUICE_IOC_SOCK_FD, _SOCK_WAKE,
 * _SOCK_INFO and _SOCK_KEEP and their argument rules; a kept kernel
 * socket's life (until the socket fd's last reference); poll and epoll of a socket fd
 * against the events user space writes in the slot's struct
 * sluice_sock_kpoll, the armed handshake, sets mixed with a pipe; dup,
 * fork and SCM_RIGHTS sharing one file, released (kstate, the region's
 * ksock_released) only at the last close; scribbled slots; the stack's
 * lifetime under a socket fd, sysfs and debugfs; the socket cache
 * (SOCK_PARK and SOCK_REUSE: a file parked only when nothing but the
 * keeper holds it, and bound again only then); unload at the end.
 *
 * The test plays user space's side by hand on a mapped region: it writes
 * gen and events into slots as the library would.  Runs as root inside
 * the test VM, loading the module from $SLUICE_KO as the others do.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uapi/sluice.h>

#include "kselftest_harness.h"
#include "sluice_util.h"

#define NSOCK		16
#define SOCK_SIZE	256
#define SYSFS_STACKS	"/sys/class/misc/sluice/stacks"

FIXTURE(sockfd) {
	int dev;
	int st;			/* stack fd */
	struct sluice_stack_create c;
	char *m;		/* the region */
};

FIXTURE_SETUP(sockfd)
{
	ASSERT_EQ(0, ensure_loaded());
	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	ASSERT_EQ(0, info_value("stacks"));
	stack_layout(&self->c, "t_sockfd", 0, NSOCK, SOCK_SIZE, 64, 16, 2048);
	ASSERT_EQ(0, xioctl(self->dev, SLUICE_IOC_STACK_CREATE, &self->c));
	self->st = self->c.fd;
	self->m = mmap(NULL, self->c.region_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, self->st, 0);
	ASSERT_NE(MAP_FAILED, self->m);
	((struct sluice_region *)self->m)->state = SLUICE_STATE_READY;
}

FIXTURE_TEARDOWN(sockfd)
{
	if (self->m && self->m != MAP_FAILED)
		munmap(self->m, self->c.region_size);
	close(self->st);
	close(self->dev);
	/* A passing test closed every fd it made: the stack has gone. */
	if (_metadata->passed)
		EXPECT_EQ(0, info_value("stacks"));
}

static struct sluice_sock_kpoll *kp(FIXTURE_DATA(sockfd) *self, __u32 idx)
{
	return (struct sluice_sock_kpoll *)(self->m + self->c.sock_off +
					     (size_t)idx * SOCK_SIZE);
}

static volatile __u32 *released(FIXTURE_DATA(sockfd) *self)
{
	return &((struct sluice_region *)self->m)->ksock_released;
}

static volatile __u32 *rel_head(FIXTURE_DATA(sockfd) *self)
{
	return &((struct sluice_region *)self->m)->ksock_rel_head;
}

/* SOCK_FD: the new fd, or -errno. */
static int sock_fd(int st, __u32 idx, __u32 gen, __u32 flags)
{
	struct sluice_sock_fd a = { .size = sizeof(a), .flags = flags,
				    .idx = idx, .gen = gen };
	int fd = ioctl(st, SLUICE_IOC_SOCK_FD, &a);

	return fd < 0 ? -errno : fd;
}

static int sock_wake(int st, const __u32 *idx, __u32 n)
{
	struct sluice_sock_wake w = { .size = sizeof(w), .n = n,
				      .idx_ptr = (uintptr_t)idx };

	return xioctl(st, SLUICE_IOC_SOCK_WAKE, &w);
}

static short poll1(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, ms) == 1 ? p.revents : 0;
}

static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static long long sysfs_sockfds(void)
{
	char buf[32];

	if (read_file(SYSFS_STACKS "/t_sockfd/sockfds", buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

TEST(abi_struct_layouts)
{
	EXPECT_EQ(20, sizeof(struct sluice_sock_kpoll));
	EXPECT_EQ(16, offsetof(struct sluice_sock_kpoll, rel_next));
	EXPECT_EQ(4, offsetof(struct sluice_sock_kpoll, gen));
	EXPECT_EQ(8, offsetof(struct sluice_sock_kpoll, armed));
	EXPECT_EQ(12, offsetof(struct sluice_sock_kpoll, kstate));
	EXPECT_EQ(16, sizeof(struct sluice_sock_fd));
	EXPECT_EQ(24, sizeof(struct sluice_sock_wake));
	EXPECT_EQ(16, offsetof(struct sluice_sock_wake, idx_ptr));
	EXPECT_EQ(48, sizeof(struct sluice_sock_info));
	EXPECT_EQ(16, sizeof(struct sluice_sock_keep));
	/* On the lock line, inside the module's header. */
	EXPECT_EQ(offsetof(struct sluice_region, lock) + 16,
		  offsetof(struct sluice_region, ksock_released));
	EXPECT_GE(SLUICE_REGION_LIB_OFF, sizeof(struct sluice_region));
	EXPECT_EQ(192, offsetof(struct sluice_region, ksock_rel_head));
	EXPECT_EQ(0x0c, _IOC_NR(SLUICE_IOC_SOCK_FD));
	EXPECT_EQ(0x0d, _IOC_NR(SLUICE_IOC_SOCK_WAKE));
	EXPECT_EQ(0x0e, _IOC_NR(SLUICE_IOC_SOCK_INFO));
	EXPECT_EQ(16, sizeof(struct sluice_sock_park));
	EXPECT_EQ(24, sizeof(struct sluice_sock_reuse));
	EXPECT_EQ(16, offsetof(struct sluice_sock_reuse, fd));
	EXPECT_EQ(0x11, _IOC_NR(SLUICE_IOC_SOCK_KEEP));
	EXPECT_EQ(0x12, _IOC_NR(SLUICE_IOC_SOCK_PARK));
	EXPECT_EQ(0x13, _IOC_NR(SLUICE_IOC_SOCK_REUSE));
}

TEST(feature_bit)
{
	struct sluice_version v = { .size = sizeof(v) };
	int dev;

	ASSERT_EQ(0, ensure_loaded());
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, xioctl(dev, SLUICE_IOC_VERSION, &v));
	EXPECT_TRUE(v.features & SLUICE_FEATURE_SOCKFD);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_SOCK_KEEP);
	EXPECT_TRUE(v.features & SLUICE_FEATURE_SOCK_CACHE);
	close(dev);
}

TEST_F(sockfd, sock_fd_argument_rules)
{
	struct { struct sluice_sock_fd a; __u64 tail; } big;
	struct sluice_sock_fd a;
	char link[64], path[64];
	ssize_t n;
	int fd;

	kp(self, 3)->gen = 7;
	/* One byte short. */
	a = (struct sluice_sock_fd){ .size = sizeof(a) - 1, .idx = 3, .gen = 7 };
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_FD, &a));
	/* Unknown flag. */
	a = (struct sluice_sock_fd){ .size = sizeof(a), .flags = 0x4, .idx = 3, .gen = 7 };
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_FD, &a));
	/* A non-zero tail past what the module knows. */
	memset(&big, 0, sizeof(big));
	big.a = (struct sluice_sock_fd){ .size = sizeof(big), .idx = 3, .gen = 7 };
	big.tail = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->st, SLUICE_IOC_SOCK_FD, &big));
	/* Bad index, stale generation, bad pointer, wrong file. */
	EXPECT_EQ(-EINVAL, sock_fd(self->st, NSOCK, 0, 0));
	EXPECT_EQ(-EINVAL, sock_fd(self->st, 0xffffffffu, 0, 0));
	EXPECT_EQ(-ESTALE, sock_fd(self->st, 3, 8, 0));
	EXPECT_EQ(-EFAULT, xioctl(self->st, SLUICE_IOC_SOCK_FD, (void *)8));
	a = (struct sluice_sock_fd){ .size = sizeof(a), .idx = 3, .gen = 7 };
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_SOCK_FD, &a));
	EXPECT_EQ(0, kp(self, 3)->kstate);

	/* A zero tail is fine; the fd is a socket fd of slot 3. */
	big.tail = 0;
	fd = ioctl(self->st, SLUICE_IOC_SOCK_FD, &big);
	ASSERT_LE(0, fd);
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 3)->kstate);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	ASSERT_LT(0, n);
	link[n] = '\0';
	EXPECT_STREQ("anon_inode:[sluice-sock]", link);
	EXPECT_EQ(0, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, fcntl(fd, F_GETFL) & O_NONBLOCK);
	/* read, write and mmap are refused. */
	EXPECT_EQ(-1, read(fd, link, 1));
	EXPECT_EQ(-1, write(fd, "x", 1));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0));
	close(fd);

	fd = sock_fd(self->st, 3, 7, SLUICE_SOCK_FD_CLOEXEC | SLUICE_SOCK_FD_NONBLOCK);
	ASSERT_LE(0, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_NONBLOCK, fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
}

TEST_F(sockfd, sock_wake_argument_rules)
{
	struct { struct sluice_sock_wake w; __u64 tail; } big;
	__u32 idx[SLUICE_SOCK_WAKE_MAX + 1];
	struct sluice_sock_wake w;

	memset(idx, 0, sizeof(idx));
	w = (struct sluice_sock_wake){ .size = sizeof(w) - 1, .n = 1,
				       .idx_ptr = (uintptr_t)idx };
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_WAKE, &w));
	w.size = sizeof(w);
	w.flags = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_WAKE, &w));
	w.flags = 0;
	w.reserved = 1;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_WAKE, &w));
	memset(&big, 0, sizeof(big));
	big.w = (struct sluice_sock_wake){ .size = sizeof(big), .n = 1,
					   .idx_ptr = (uintptr_t)idx };
	big.tail = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->st, SLUICE_IOC_SOCK_WAKE, &big));
	big.tail = 0;
	EXPECT_EQ(0, xioctl(self->st, SLUICE_IOC_SOCK_WAKE, &big));
	/* n too big; a bad index anywhere; a bad pointer. */
	EXPECT_EQ(-E2BIG, sock_wake(self->st, idx, SLUICE_SOCK_WAKE_MAX + 1));
	EXPECT_EQ(0, sock_wake(self->st, idx, SLUICE_SOCK_WAKE_MAX));
	idx[SLUICE_SOCK_WAKE_MAX - 1] = NSOCK;
	EXPECT_EQ(-EINVAL, sock_wake(self->st, idx, SLUICE_SOCK_WAKE_MAX));
	EXPECT_EQ(-EFAULT, sock_wake(self->st, (__u32 *)8, 1));
	EXPECT_EQ(-EFAULT, sock_wake(self->st, (__u32 *)8, 100));
	EXPECT_EQ(0, sock_wake(self->st, NULL, 0));
	/* Only on a stack fd. */
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_SOCK_WAKE, &big));
}

TEST_F(sockfd, sock_info_rules)
{
	struct { struct sluice_sock_info i; __u64 tail; } big;
	struct sluice_sock_info i;
	int fd, p[2];

	kp(self, 5)->gen = 0xabcdef;
	fd = sock_fd(self->st, 5, 0xabcdef, 0);
	ASSERT_LE(0, fd);
	i = (struct sluice_sock_info){ .size = sizeof(i) };
	ASSERT_EQ(0, xioctl(fd, SLUICE_IOC_SOCK_INFO, &i));
	EXPECT_EQ(5, i.idx);
	EXPECT_EQ(0xabcdef, i.gen);
	EXPECT_STREQ("t_sockfd", i.name);
	EXPECT_EQ(sizeof(i), i.size);
	i.size = sizeof(i) - 1;
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_SOCK_INFO, &i));
	i = (struct sluice_sock_info){ .size = sizeof(i), .flags = 1 };
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_SOCK_INFO, &i));
	memset(&big, 0, sizeof(big));
	big.i.size = sizeof(big);
	big.tail = 1;
	EXPECT_EQ(-E2BIG, xioctl(fd, SLUICE_IOC_SOCK_INFO, &big));
	EXPECT_EQ(-EFAULT, xioctl(fd, SLUICE_IOC_SOCK_INFO, (void *)8));
	/* Other commands on a socket fd, SOCK_INFO on any other fd. */
	EXPECT_EQ(-ENOTTY, xioctl(fd, SLUICE_IOC_STACK_WAKE, &big));
	i = (struct sluice_sock_info){ .size = sizeof(i) };
	EXPECT_EQ(-ENOTTY, xioctl(self->st, SLUICE_IOC_SOCK_INFO, &i));
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_SOCK_INFO, &i));
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-ENOTTY, xioctl(p[0], SLUICE_IOC_SOCK_INFO, &i));
	close(p[0]);
	close(p[1]);
	close(fd);
}

TEST_F(sockfd, poll_reports_exactly_the_slot_events)
{
	static const __u32 evs[] = {
		0, EPOLLIN, EPOLLOUT, EPOLLIN | EPOLLOUT | EPOLLRDNORM | EPOLLWRNORM,
		EPOLLRDHUP, EPOLLPRI, EPOLLERR, EPOLLHUP,
	};
	const __u32 mask = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP |
			   EPOLLRDNORM | EPOLLWRNORM | EPOLLRDHUP;
	int fd, ep;
	struct epoll_event e;

	kp(self, 1)->gen = 1;
	fd = sock_fd(self->st, 1, 1, 0);
	ASSERT_LE(0, fd);
	for (unsigned int i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		kp(self, 1)->events = evs[i];
		kp(self, 1)->armed = 0;
		EXPECT_EQ((short)evs[i], poll1(fd, (short)0xffff, 0));
		EXPECT_EQ(1, kp(self, 1)->armed);
	}
	/* Bits outside the mask never show. */
	kp(self, 1)->events = 0xffffffffu;
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	e.events = EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLRDHUP | EPOLLRDNORM | EPOLLWRNORM;
	e.data.u64 = 1;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e));
	ASSERT_EQ(1, epoll_wait(ep, &e, 1, 0));
	EXPECT_EQ(mask, e.events);
	close(ep);
	/* Another generation in the slot, or a broken stack: ERR | HUP. */
	kp(self, 1)->events = EPOLLIN;
	kp(self, 1)->gen = 2;
	EXPECT_EQ(POLLERR | POLLHUP, poll1(fd, POLLIN, 0));
	kp(self, 1)->gen = 1;
	EXPECT_EQ(POLLIN, poll1(fd, POLLIN, 0));
	((struct sluice_region *)self->m)->state = SLUICE_STATE_BROKEN;
	EXPECT_EQ(POLLERR | POLLHUP, poll1(fd, POLLIN, 0));
	((struct sluice_region *)self->m)->state = SLUICE_STATE_READY;
	close(fd);
}

/* epoll wakes on SOCK_WAKE of the slot, not on a store alone or on
 * another slot's wake; every report arms again. */
static void epoll_wake_case(struct __test_metadata *_metadata,
			    FIXTURE_DATA(sockfd) *self, __u32 et)
{
	__u32 one = 2, other = 9;
	struct epoll_event e;
	int fd, fd9, ep;

	kp(self, 2)->gen = 11;
	kp(self, 9)->gen = 3;
	fd = sock_fd(self->st, 2, 11, 0);
	fd9 = sock_fd(self->st, 9, 3, 0);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd9);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	kp(self, 2)->armed = 0;
	e.events = EPOLLIN | et;
	e.data.u32 = 2;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e));
	/* Adding polls once: armed. */
	EXPECT_EQ(1, kp(self, 2)->armed);
	EXPECT_EQ(0, epoll_wait(ep, &e, 1, 0));
	/* The store alone wakes nobody (user space saw armed: it must wake). */
	kp(self, 2)->events = EPOLLIN;
	EXPECT_EQ(0, epoll_wait(ep, &e, 1, 50));
	/* Another slot's wake does not either. */
	EXPECT_EQ(0, sock_wake(self->st, &other, 1));
	EXPECT_EQ(0, epoll_wait(ep, &e, 1, 50));
	/* This slot's does; the report polled, so armed again. */
	kp(self, 2)->armed = 0;
	EXPECT_EQ(0, sock_wake(self->st, &one, 1));
	ASSERT_EQ(1, epoll_wait(ep, &e, 1, 0));
	EXPECT_EQ(EPOLLIN, e.events);
	EXPECT_EQ(2, e.data.u32);
	EXPECT_EQ(1, kp(self, 2)->armed);
	if (et) {
		/* Edge-triggered: reported once until the next wake. */
		EXPECT_EQ(0, epoll_wait(ep, &e, 1, 0));
		EXPECT_EQ(0, sock_wake(self->st, &one, 1));
		EXPECT_EQ(1, epoll_wait(ep, &e, 1, 0));
	} else {
		EXPECT_EQ(1, epoll_wait(ep, &e, 1, 0));
	}
	/* Events gone: woken, polled, nothing to report (level). */
	kp(self, 2)->events = 0;
	EXPECT_EQ(0, sock_wake(self->st, &one, 1));
	EXPECT_EQ(0, epoll_wait(ep, &e, 1, 0));
	close(ep);
	close(fd);
	close(fd9);
}

TEST_F(sockfd, epoll_level_wakes_on_sock_wake_only)
{
	epoll_wake_case(_metadata, self, 0);
}

TEST_F(sockfd, epoll_edge_wakes_on_sock_wake_only)
{
	epoll_wake_case(_metadata, self, EPOLLET);
}

/* A sleeper in epoll_wait is woken by another process's store and wake. */
TEST_F(sockfd, epoll_sleeper_woken_by_other_process)
{
	struct timespec t0, t1;
	struct epoll_event e;
	int fd, ep;
	pid_t pid;

	kp(self, 4)->gen = 1;
	fd = sock_fd(self->st, 4, 1, 0);
	ASSERT_LE(0, fd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	e.events = EPOLLIN;
	e.data.u32 = 4;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		__u32 idx = 4;

		usleep(100 * 1000);
		/* As user space does: store, full barrier, exchange armed. */
		__atomic_store_n(&kp(self, 4)->events, EPOLLIN, __ATOMIC_SEQ_CST);
		if (__atomic_exchange_n(&kp(self, 4)->armed, 0, __ATOMIC_SEQ_CST))
			_exit(sock_wake(self->st, &idx, 1) ? 2 : 0);
		_exit(3);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(1, epoll_wait(ep, &e, 1, 5000));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	EXPECT_GT(4, t1.tv_sec - t0.tv_sec);
	EXPECT_EQ(0, reap(pid));
	close(ep);
	close(fd);
}

TEST_F(sockfd, mixed_set_with_a_pipe)
{
	struct epoll_event e[4];
	struct pollfd pf[2];
	int fd, ep, p[2], n;
	__u32 idx = 6;
	char c;

	kp(self, 6)->gen = 1;
	fd = sock_fd(self->st, 6, 1, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	ep = epoll_create1(EPOLL_CLOEXEC);
	e[0].events = EPOLLIN;
	e[0].data.u32 = 100;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e[0]));
	e[0].events = EPOLLIN;
	e[0].data.u32 = 6;
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e[0]));
	EXPECT_EQ(0, epoll_wait(ep, e, 4, 0));
	ASSERT_EQ(1, write(p[1], "x", 1));
	ASSERT_EQ(1, epoll_wait(ep, e, 4, 0));
	EXPECT_EQ(100, e[0].data.u32);
	kp(self, 6)->events = EPOLLIN;
	EXPECT_EQ(0, sock_wake(self->st, &idx, 1));
	n = epoll_wait(ep, e, 4, 0);
	EXPECT_EQ(2, n);
	ASSERT_EQ(1, read(p[0], &c, 1));
	n = epoll_wait(ep, e, 4, 0);
	ASSERT_EQ(1, n);
	EXPECT_EQ(6, e[0].data.u32);
	/* poll(2) over both too. */
	pf[0] = (struct pollfd){ .fd = p[0], .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(1, poll(pf, 2, 0));
	EXPECT_EQ(0, pf[0].revents);
	EXPECT_EQ(POLLIN, pf[1].revents);
	close(ep);
	close(p[0]);
	close(p[1]);
	close(fd);
}

TEST_F(sockfd, dup_and_fork_share_one_file)
{
	__u32 before = *released(self);
	int fd, fd2, p[2];
	pid_t pid;
	char c;

	kp(self, 7)->gen = 5;
	fd = sock_fd(self->st, 7, 5, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(1, sysfs_sockfds());
	fd2 = dup(fd);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(1, sysfs_sockfds());
	close(fd);
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 7)->kstate);
	EXPECT_EQ(before, *released(self));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(p[1]);
		/* Hold the inherited fd until the parent says go. */
		_exit(read(p[0], &c, 1) == 1 ? 0 : 1);
	}
	close(p[0]);
	close(fd2);
	usleep(20 * 1000);
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 7)->kstate);
	EXPECT_EQ(before, *released(self));
	EXPECT_EQ(1, sysfs_sockfds());
	ASSERT_EQ(1, write(p[1], "g", 1));
	close(p[1]);
	EXPECT_EQ(0, reap(pid));
	/* The child's exit closed the last reference. */
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 7)->kstate);
	EXPECT_EQ(before + 1, *released(self));
	EXPECT_EQ(0, sysfs_sockfds());
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

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &mh, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

TEST_F(sockfd, scm_rights_passes_the_file)
{
	__u32 before = *released(self);
	int fd, sp[2];
	pid_t pid;

	kp(self, 8)->gen = 77;
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct sluice_sock_info i = { .size = sizeof(i) };
		int rfd;

		close(sp[0]);
		/* The child knows nothing but the fd it receives. */
		close(self->st);
		munmap(self->m, self->c.region_size);
		rfd = recv_fd(sp[1]);
		if (rfd < 0 || xioctl(rfd, SLUICE_IOC_SOCK_INFO, &i))
			_exit(1);
		if (i.idx != 8 || i.gen != 77 || strcmp(i.name, "t_sockfd"))
			_exit(2);
		if (poll1(rfd, POLLIN, 0) != POLLIN)
			_exit(3);
		close(rfd);
		_exit(0);
	}
	close(sp[1]);
	fd = sock_fd(self->st, 8, 77, SLUICE_SOCK_FD_CLOEXEC);
	ASSERT_LE(0, fd);
	kp(self, 8)->events = EPOLLIN;
	ASSERT_EQ(0, send_fd(sp[0], fd));
	close(fd);
	EXPECT_EQ(0, reap(pid));
	close(sp[0]);
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 8)->kstate);
	EXPECT_EQ(before + 1, *released(self));
}

/* SOCK_KEEP: an fd's arguments, or -errno. */
static int sock_keep(int fd, __u32 flags, int kfd)
{
	struct sluice_sock_keep k = { .size = sizeof(k), .flags = flags, .fd = kfd };
	int r = ioctl(fd, SLUICE_IOC_SOCK_KEEP, &k);

	return r < 0 ? -errno : r;
}

/*
 * A TCP connection on 127.0.0.1: *cl the client, *ac the accepted end; in
 * a network namespace of the test's own (the harness forks each test),
 * its lo brought up, whatever state the guest's is in.
 */
static int tcp_pair(int *cl, int *ac)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct ifreq ifr = { .ifr_name = "lo" };
	socklen_t al = sizeof(a);
	int l;

	if (unshare(CLONE_NEWNET))
		return -1;
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || ioctl(l, SIOCGIFFLAGS, &ifr))
		return -1;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(l, SIOCSIFFLAGS, &ifr))
		return -1;
	*cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*cl < 0 || bind(l, (struct sockaddr *)&a, al) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al) ||
	    connect(*cl, (struct sockaddr *)&a, al))
		return -1;
	*ac = accept(l, NULL, NULL);
	close(l);
	return *ac < 0 ? -1 : 0;
}

static int same_inode(int a, int b)
{
	struct stat x, y;

	return !fstat(a, &x) && !fstat(b, &y) && x.st_ino == y.st_ino && x.st_dev == y.st_dev;
}

TEST_F(sockfd, sock_keep_rules)
{
	struct { struct sluice_sock_keep k; __u64 tail; } big;
	struct sluice_sock_keep k;
	int fd, cl, ac, p[2], u[2], g;

	kp(self, 11)->gen = 3;
	fd = sock_fd(self->st, 11, 3, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tcp_pair(&cl, &ac));
	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u));
	/* One byte short, flags, reserved, a non-zero tail, a bad pointer. */
	k = (struct sluice_sock_keep){ .size = sizeof(k) - 1, .fd = cl };
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_SOCK_KEEP, &k));
	EXPECT_EQ(-EINVAL, sock_keep(fd, 0x4, cl));
	EXPECT_EQ(-EINVAL, sock_keep(fd, SLUICE_SOCK_KEEP_CLOEXEC, cl));
	EXPECT_EQ(-EINVAL, sock_keep(fd, SLUICE_SOCK_KEEP_GET, cl));
	k = (struct sluice_sock_keep){ .size = sizeof(k), .fd = cl, .reserved = 1 };
	EXPECT_EQ(-EINVAL, xioctl(fd, SLUICE_IOC_SOCK_KEEP, &k));
	memset(&big, 0, sizeof(big));
	big.k = (struct sluice_sock_keep){ .size = sizeof(big), .fd = cl };
	big.tail = 1;
	EXPECT_EQ(-E2BIG, xioctl(fd, SLUICE_IOC_SOCK_KEEP, &big));
	EXPECT_EQ(-EFAULT, xioctl(fd, SLUICE_IOC_SOCK_KEEP, (void *)8));
	/* Only on a socket fd. */
	k = (struct sluice_sock_keep){ .size = sizeof(k), .fd = cl };
	EXPECT_EQ(-ENOTTY, xioctl(self->st, SLUICE_IOC_SOCK_KEEP, &k));
	EXPECT_EQ(-ENOTTY, xioctl(self->dev, SLUICE_IOC_SOCK_KEEP, &k));
	/* Nothing kept yet; what cannot be kept. */
	EXPECT_EQ(-ENOENT, sock_keep(fd, SLUICE_SOCK_KEEP_GET, 0));
	EXPECT_EQ(-EBADF, sock_keep(fd, 0, 1000000));
	EXPECT_EQ(-EBADF, sock_keep(fd, 0, -1));
	EXPECT_EQ(-ENOTSOCK, sock_keep(fd, 0, p[0]));
	EXPECT_EQ(-ENOTSOCK, sock_keep(fd, 0, fd));
	EXPECT_EQ(-EPROTONOSUPPORT, sock_keep(fd, 0, u[0]));
	EXPECT_EQ(-ENOENT, sock_keep(fd, SLUICE_SOCK_KEEP_GET, 0));
	/* Kept once; GET gives the same socket, close-on-exec as asked. */
	EXPECT_EQ(0, sock_keep(fd, 0, cl));
	EXPECT_EQ(-EBUSY, sock_keep(fd, 0, ac));
	g = sock_keep(fd, SLUICE_SOCK_KEEP_GET, 0);
	ASSERT_LE(0, g);
	EXPECT_TRUE(same_inode(g, cl));
	EXPECT_EQ(0, fcntl(g, F_GETFD) & FD_CLOEXEC);
	close(g);
	g = sock_keep(fd, SLUICE_SOCK_KEEP_GET | SLUICE_SOCK_KEEP_CLOEXEC, 0);
	ASSERT_LE(0, g);
	EXPECT_TRUE(same_inode(g, cl));
	EXPECT_EQ(FD_CLOEXEC, fcntl(g, F_GETFD) & FD_CLOEXEC);
	close(g);
	close(cl);
	close(ac);
	close(p[0]);
	close(p[1]);
	close(u[0]);
	close(u[1]);
	close(fd);
}

/*
 * The kept socket lives while any reference to the socket fd's file does
 * (its maker's close, a forked child holding the file), and ends with the
 * last: the peer then reads the end.
 */
TEST_F(sockfd, sock_keep_holds_until_the_last_release)
{
	int fd, cl, ac, p[2];
	char c = 0;
	pid_t pid;

	kp(self, 12)->gen = 9;
	fd = sock_fd(self->st, 12, 9, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tcp_pair(&cl, &ac));
	ASSERT_EQ(0, sock_keep(fd, 0, cl));
	close(cl);	/* the maker's own fd goes: the file keeps it */
	EXPECT_EQ(0, poll1(ac, POLLIN | POLLRDHUP, 100));
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int g;

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		/* The parent's file is gone: this one gets it and sends. */
		g = sock_keep(fd, SLUICE_SOCK_KEEP_GET, 0);
		if (g < 0 || send(g, "k", 1, 0) != 1)
			_exit(2);
		close(g);
		_exit(0);
	}
	close(p[0]);
	close(fd);	/* the child's reference holds the file */
	EXPECT_EQ(0, poll1(ac, POLLIN | POLLRDHUP, 100));
	ASSERT_EQ(1, write(p[1], "g", 1));
	close(p[1]);
	EXPECT_EQ(0, reap(pid));
	/* The child's exit was the file's last reference: the bytes, then
	 * the end. */
	EXPECT_EQ(1, recv(ac, &c, 1, 0));
	EXPECT_EQ('k', c);
	ASSERT_EQ(POLLIN, poll1(ac, POLLIN, 1000) & POLLIN);
	EXPECT_EQ(0, recv(ac, &c, 1, MSG_DONTWAIT));
	close(ac);
}

TEST_F(sockfd, two_files_of_one_socket_release_at_the_last)
{
	__u32 before = *released(self);
	int a, b;

	kp(self, 10)->gen = 1;
	a = sock_fd(self->st, 10, 1, 0);
	b = sock_fd(self->st, 10, 1, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(2, sysfs_sockfds());
	close(a);
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 10)->kstate);
	EXPECT_EQ(before, *released(self));
	close(b);
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 10)->kstate);
	EXPECT_EQ(before + 1, *released(self));
}

/* Releases are pushed on the region's list, newest first, as index + 1
 * (uapi: struct sluice_region.ksock_rel_head); user space takes it whole. */
TEST_F(sockfd, releases_are_listed_newest_first)
{
	__u32 before = *released(self);
	int a, b;

	*rel_head(self) = 0;	/* taken, as user space takes it */
	kp(self, 12)->gen = 1;
	kp(self, 13)->gen = 1;
	a = sock_fd(self->st, 12, 1, 0);
	b = sock_fd(self->st, 13, 1, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(0, *rel_head(self));
	close(a);
	EXPECT_EQ(13, *rel_head(self));
	EXPECT_EQ(0, kp(self, 12)->rel_next);
	close(b);
	EXPECT_EQ(14, *rel_head(self));
	EXPECT_EQ(13, kp(self, 13)->rel_next);
	EXPECT_EQ(before + 2, *released(self));
	/* A head user space scribbled on is linked as it is: the module
	 * never follows the list, only the count tells what happened. */
	*rel_head(self) = 0xdeadbeef;
	kp(self, 14)->gen = 1;
	a = sock_fd(self->st, 14, 1, 0);
	ASSERT_LE(0, a);
	close(a);
	EXPECT_EQ(15, *rel_head(self));
	EXPECT_EQ(0xdeadbeef, kp(self, 14)->rel_next);
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 14)->kstate);
	EXPECT_EQ(before + 3, *released(self));
}

/* SOCK_PARK: 1 parked, 0 not (both fds closed), or -errno. */
static int sock_park(int st, int fd, int keep)
{
	struct sluice_sock_park a = { .size = sizeof(a), .fd = fd, .keep_fd = keep };
	int ret = ioctl(st, SLUICE_IOC_SOCK_PARK, &a);

	return ret < 0 ? -errno : ret;
}

/* SOCK_REUSE of parked @fd for slot @idx: the new fd, or -errno. */
static int sock_reuse(int st, int fd, __u32 idx, __u32 gen, __u32 flags)
{
	struct sluice_sock_reuse a = { .size = sizeof(a), .flags = flags,
				       .idx = idx, .gen = gen, .fd = fd };
	int ret = ioctl(st, SLUICE_IOC_SOCK_REUSE, &a);

	return ret < 0 ? -errno : ret;
}

static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

TEST_F(sockfd, sock_park_and_reuse_argument_rules)
{
	struct { struct sluice_sock_park a; __u64 tail; } big;
	struct sluice_sock_reuse r;
	int fd, keep, pfd[2];

	kp(self, 2)->gen = 5;
	fd = sock_fd(self->st, 2, 5, 0);
	ASSERT_LE(0, fd);
	keep = dup(fd);
	ASSERT_LE(0, keep);
	ASSERT_EQ(0, pipe(pfd));
	/* Nothing is closed by a call that fails. */
	EXPECT_EQ(-EINVAL, sock_park(self->st, fd, fd));
	EXPECT_EQ(-EBADF, sock_park(self->st, fd, 1000));
	EXPECT_EQ(-EBADF, sock_park(self->st, 1000, keep));
	EXPECT_EQ(-EINVAL, sock_park(self->st, pfd[0], keep));	/* not a socket fd */
	EXPECT_EQ(-EINVAL, sock_park(self->st, fd, pfd[0]));	/* another file */
	EXPECT_EQ(-EINVAL, sock_park(self->st, self->st, keep));
	big.a = (struct sluice_sock_park){ .size = sizeof(big), .fd = fd, .keep_fd = keep };
	big.tail = 1;
	EXPECT_EQ(-E2BIG, xioctl(self->st, SLUICE_IOC_SOCK_PARK, &big));
	big.a.flags = 1;
	big.tail = 0;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_PARK, &big));
	big.a.size = sizeof(big.a) - 1;
	big.a.flags = 0;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_PARK, &big));
	EXPECT_EQ(-ENOTTY, xioctl(fd, SLUICE_IOC_SOCK_PARK, &big.a));
	EXPECT_TRUE(fd_open(fd));
	EXPECT_TRUE(fd_open(keep));
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 2)->kstate);
	/* A file that is not parked is not bound again. */
	kp(self, 3)->gen = 9;
	EXPECT_EQ(-EINVAL, sock_reuse(self->st, keep, 3, 9, 0));
	EXPECT_EQ(-EINVAL, sock_reuse(self->st, pfd[0], 3, 9, 0));
	EXPECT_EQ(-EBADF, sock_reuse(self->st, 1000, 3, 9, 0));
	EXPECT_EQ(-ESTALE, sock_reuse(self->st, keep, 3, 8, 0));
	EXPECT_EQ(-EINVAL, sock_reuse(self->st, keep, NSOCK, 9, 0));
	EXPECT_EQ(-EINVAL, sock_reuse(self->st, keep, 3, 9, 0x4));
	r = (struct sluice_sock_reuse){ .size = sizeof(r), .idx = 3, .gen = 9, .fd = keep,
					.reserved = 1 };
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_REUSE, &r));
	r.reserved = 0;
	r.size = sizeof(r) - 1;
	EXPECT_EQ(-EINVAL, xioctl(self->st, SLUICE_IOC_SOCK_REUSE, &r));
	close(pfd[0]);
	close(pfd[1]);
	close(fd);
	close(keep);
}

/*
 * The cache's round: the program's last fd parked at the keeper releases
 * the socket as its close would (kstate, the list, the count); the
 * parked file polls EPOLLERR | EPOLLHUP and names no socket; bound again
 * to the next socket it is that socket's fd at the lowest free number,
 * with the flags asked, and its release is that socket's.
 */
TEST_F(sockfd, parked_file_is_released_then_bound_again)
{
	__u32 before = *released(self);
	struct sluice_sock_info si = { .size = sizeof(si) };
	char path[64], buf[256];
	int fd, keep, nfd, low, fl;

	kp(self, 4)->gen = 1;
	fd = sock_fd(self->st, 4, 1, SLUICE_SOCK_FD_NONBLOCK);
	ASSERT_LE(0, fd);
	keep = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	ASSERT_LE(100, keep);
	EXPECT_EQ(1, sock_park(self->st, fd, keep));
	EXPECT_FALSE(fd_open(fd));
	EXPECT_TRUE(fd_open(keep));
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 4)->kstate);
	EXPECT_EQ(before + 1, *released(self));
	EXPECT_EQ(5, *rel_head(self));
	EXPECT_EQ(POLLERR | POLLHUP, poll1(keep, POLLIN | POLLOUT, 0));
	EXPECT_EQ(-ENOTCONN, xioctl(keep, SLUICE_IOC_SOCK_INFO, &si));
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", keep);
	ASSERT_LT(0, read_file(path, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "sluice_parked:\t1"));
	EXPECT_EQ(NULL, strstr(buf, "sluice_idx"));
	/* Parked twice: no. */
	nfd = dup(keep);
	EXPECT_EQ(-EINVAL, sock_park(self->st, nfd, keep));
	close(nfd);

	/* Bound again, to slot 6: the lowest free number, as SOCK_FD. */
	kp(self, 6)->gen = 3;
	kp(self, 6)->events = POLLIN;
	low = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, low);
	close(low);
	nfd = sock_reuse(self->st, keep, 6, 3, SLUICE_SOCK_FD_CLOEXEC);
	ASSERT_EQ(low, nfd);
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 6)->kstate);
	fl = fcntl(nfd, F_GETFL);
	EXPECT_EQ(O_RDWR, fl & (O_ACCMODE | O_NONBLOCK));
	EXPECT_EQ(FD_CLOEXEC, fcntl(nfd, F_GETFD));
	EXPECT_EQ(POLLIN, poll1(nfd, POLLIN | POLLOUT, 0));
	ASSERT_EQ(0, xioctl(nfd, SLUICE_IOC_SOCK_INFO, &si));
	EXPECT_EQ(6, si.idx);
	EXPECT_EQ(3, si.gen);
	/* Bound, it is parked again only by SOCK_PARK. */
	EXPECT_EQ(-EINVAL, sock_reuse(self->st, keep, 6, 3, 0));
	EXPECT_EQ(1, sysfs_sockfds());
	/* Its release is slot 6's, once the keeper goes too. */
	close(nfd);
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 6)->kstate);
	close(keep);
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 6)->kstate);
	EXPECT_EQ(before + 2, *released(self));
	EXPECT_EQ(0, sysfs_sockfds());
}

/*
 * What holds the file besides the keeper keeps it from being parked, as
 * it keeps the socket on Linux: another fd (a dup, a forked child's), an
 * epoll item, a status flag the next socket must not inherit.  Then both
 * fds are closed, and the socket lives on with its other holders.
 */
TEST_F(sockfd, held_file_is_not_parked)
{
	struct epoll_event ev = { .events = EPOLLIN };
	__u32 before = *released(self);
	int fd, keep, other, ep, ret;
	pid_t pid;

	/* A dup. */
	kp(self, 5)->gen = 1;
	fd = sock_fd(self->st, 5, 1, 0);
	ASSERT_LE(0, fd);
	keep = dup(fd);
	other = dup(fd);
	EXPECT_EQ(0, sock_park(self->st, fd, keep));
	EXPECT_FALSE(fd_open(fd));
	EXPECT_FALSE(fd_open(keep));
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 5)->kstate);
	close(other);
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 5)->kstate);

	/* A forked child's fd: released when the child's goes. */
	kp(self, 7)->gen = 1;
	fd = sock_fd(self->st, 7, 1, 0);
	ASSERT_LE(0, fd);
	keep = dup(fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(keep);
		usleep(200000);
		_exit(0);
	}
	usleep(50000);
	EXPECT_EQ(0, sock_park(self->st, fd, keep));
	EXPECT_FALSE(fd_open(keep));
	EXPECT_EQ(SLUICE_KSOCK_OPEN, kp(self, 7)->kstate);
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 7)->kstate);

	/* An epoll item: the file ends with both fds, and the item with it. */
	kp(self, 8)->gen = 1;
	fd = sock_fd(self->st, 8, 1, 0);
	ASSERT_LE(0, fd);
	keep = dup(fd);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	EXPECT_EQ(0, sock_park(self->st, fd, keep));
	EXPECT_FALSE(fd_open(keep));
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 8)->kstate);
	ret = epoll_wait(ep, &ev, 1, 0);
	EXPECT_EQ(0, ret);
	close(ep);

	/* O_APPEND set on it: not kept for the next socket. */
	kp(self, 9)->gen = 1;
	fd = sock_fd(self->st, 9, 1, 0);
	ASSERT_LE(0, fd);
	keep = dup(fd);
	ASSERT_EQ(0, fcntl(fd, F_SETFL, O_APPEND));
	EXPECT_EQ(0, sock_park(self->st, fd, keep));
	EXPECT_FALSE(fd_open(keep));
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 9)->kstate);
	EXPECT_EQ(before + 4, *released(self));
	EXPECT_EQ(0, sysfs_sockfds());
}

/* A parked file someone else came to hold is not bound again (-EBUSY). */
TEST_F(sockfd, reuse_refused_while_held)
{
	int fd, keep, other, nfd;
	pid_t pid;

	kp(self, 10)->gen = 1;
	fd = sock_fd(self->st, 10, 1, 0);
	ASSERT_LE(0, fd);
	keep = dup(fd);
	ASSERT_EQ(1, sock_park(self->st, fd, keep));
	kp(self, 11)->gen = 2;
	other = dup(keep);
	EXPECT_EQ(-EBUSY, sock_reuse(self->st, keep, 11, 2, 0));
	close(other);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		usleep(200000);
		_exit(0);
	}
	EXPECT_EQ(-EBUSY, sock_reuse(self->st, keep, 11, 2, 0));
	EXPECT_EQ(0, reap(pid));
	EXPECT_EQ(SLUICE_KSOCK_NONE, kp(self, 11)->kstate);
	nfd = sock_reuse(self->st, keep, 11, 2, SLUICE_SOCK_FD_NONBLOCK);
	ASSERT_LE(0, nfd);
	EXPECT_EQ(O_NONBLOCK, fcntl(nfd, F_GETFL) & O_NONBLOCK);
	close(keep);
	close(nfd);
	EXPECT_EQ(SLUICE_KSOCK_RELEASED, kp(self, 11)->kstate);
	EXPECT_EQ(0, sysfs_sockfds());
}

TEST_F(sockfd, stale_release_leaves_the_new_socket)
{
	__u32 before = *released(self);
	int fd;

	kp(self, 11)->gen = 1;
	fd = sock_fd(self->st, 11, 1, 0);
	ASSERT_LE(0, fd);
	/* User space gave the slot to a new socket (it should not, while
	 * a file is open; the module must not close the new one). */
	kp(self, 11)->gen = 2;
	kp(self, 11)->kstate = SLUICE_KSOCK_NONE;
	close(fd);
	EXPECT_EQ(SLUICE_KSOCK_NONE, kp(self, 11)->kstate);
	EXPECT_EQ(before, *released(self));
}

TEST_F(sockfd, release_wakes_stack_pollers)
{
	struct sluice_stack_wake w = { .size = sizeof(w) };
	int fd;

	kp(self, 12)->gen = 1;
	fd = sock_fd(self->st, 12, 1, 0);
	ASSERT_LE(0, fd);
	/* Read the stack's wake sequence, then arm with it. */
	ASSERT_EQ(0, xioctl(self->st, SLUICE_IOC_STACK_WAKE, &w));
	w.flags = SLUICE_WAKE_ARM;
	ASSERT_EQ(0, xioctl(self->st, SLUICE_IOC_STACK_WAKE, &w));
	EXPECT_EQ(0, poll1(self->st, POLLIN, 0));
	close(fd);
	EXPECT_EQ(POLLIN, poll1(self->st, POLLIN, 0));
}

TEST_F(sockfd, socket_fd_holds_the_stack)
{
	char path[128], buf[4096];
	int fd;

	kp(self, 13)->gen = 9;
	kp(self, 13)->events = EPOLLOUT;
	fd = sock_fd(self->st, 13, 9, 0);
	ASSERT_LE(0, fd);
	snprintf(path, sizeof(path), DEBUGFS_DIR "/stacks/t_sockfd");
	ASSERT_LT(0, read_file(path, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "sockfds 1\n"));
	EXPECT_NE(NULL, strstr(buf, "sockfd slot 13 gen 9 files 1 events 0x4"));
	munmap(self->m, self->c.region_size);
	self->m = NULL;
	close(self->st);
	self->st = -1;
	/* Still listed, still polled. */
	EXPECT_EQ(1, info_value("stacks"));
	EXPECT_EQ(1, sysfs_sockfds());
	EXPECT_EQ(POLLOUT, poll1(fd, POLLOUT, 0));
	close(fd);
	EXPECT_EQ(0, info_value("stacks"));
	EXPECT_EQ(0, info_value("regions"));
}

/* Anything in the slots never upsets the module (seeded, bounded). */
TEST_F(sockfd, scribbled_slots_never_oops)
{
	int fds[NSOCK], ep, i, round;
	struct epoll_event e[NSOCK];
	__u32 idx[NSOCK];

	srandom(12345);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, ep);
	for (i = 0; i < NSOCK; i++) {
		kp(self, i)->gen = (__u32)i;
		fds[i] = sock_fd(self->st, i, i, 0);
		ASSERT_LE(0, fds[i]);
		e[0].events = EPOLLIN | EPOLLOUT | (i & 1 ? EPOLLET : 0);
		e[0].data.u32 = i;
		ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e[0]));
		idx[i] = i;
	}
	for (round = 0; round < 2000; round++) {
		struct sluice_sock_kpoll *k = kp(self, random() % NSOCK);

		switch (random() % 4) {
		case 0: k->events = (__u32)random() << 1 ^ (__u32)random(); break;
		case 1: k->gen = (__u32)random() % 3; break;
		case 2: k->armed = (__u32)random(); break;
		default: k->kstate = (__u32)random(); break;
		}
		if (!(round % 7))
			((struct sluice_region *)self->m)->state = (__u32)random() % 4;
		if (!(round % 5))
			EXPECT_EQ(0, sock_wake(self->st, idx, NSOCK));
		EXPECT_LE(0, epoll_wait(ep, e, NSOCK, 0));
		poll1(fds[random() % NSOCK], POLLIN | POLLOUT, 0);
	}
	((struct sluice_region *)self->m)->state = SLUICE_STATE_READY;
	for (i = 0; i < NSOCK; i++)
		close(fds[i]);
	close(ep);
	EXPECT_EQ(0, sysfs_sockfds());
}

/* Last (the harness runs fixtures in order): a socket fd holds the module;
 * with everything closed it unloads. */
FIXTURE(unload) {
	int unused;
};

FIXTURE_SETUP(unload)
{
}

FIXTURE_TEARDOWN(unload)
{
}

TEST_F(unload, after_socket_fds)
{
	struct sluice_stack_create c;
	int dev, st, fd;
	char *m;

	ASSERT_EQ(0, ensure_loaded());
	dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	stack_layout(&c, "t_sockfd_unload", 0, NSOCK, SOCK_SIZE, 64, 16, 2048);
	ASSERT_EQ(0, xioctl(dev, SLUICE_IOC_STACK_CREATE, &c));
	st = c.fd;
	m = mmap(NULL, c.region_size, PROT_READ | PROT_WRITE, MAP_SHARED, st, 0);
	ASSERT_NE(MAP_FAILED, m);
	fd = sock_fd(st, 0, 0, 0);
	ASSERT_LE(0, fd);
	munmap(m, c.region_size);
	close(st);
	close(dev);
	EXPECT_EQ(-EWOULDBLOCK, unload_module());
	close(fd);
	ASSERT_EQ(0, unload_module());
	EXPECT_EQ(-1, access(DEBUGFS_DIR, F_OK));
}

TEST_HARNESS_MAIN
