/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The veth fixture the module's kselftests share (sluice_kring.c,
 * sluice_ipoib.c): a fresh network namespace with sk0 (10.77.0.1/24, the
 * stack's device) paired to sk1 (10.77.0.2/24) in a peer namespace, and a
 * stack made on sk0 with its region mapped; torn down with the namespaces,
 * checking that no stack or region is left.  Also run(), a shell command's
 * exit status, and stack_create() with the including file's N_BUFS and
 * BUF_SIZE.
 *
 * Include after "kselftest_harness.h" and "sluice_util.h".
 */
#ifndef SLUICE_KSELFTEST_VETH_H
#define SLUICE_KSELFTEST_VETH_H

#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define IP_CMD		"/usr/sbin/ip"

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int stack_create(int dev, const char *name, __u32 ifindex,
			struct sluice_stack_create *c)
{
	stack_layout(c, name, ifindex, 16, 256, 64, N_BUFS, BUF_SIZE);
	return xioctl(dev, SLUICE_IOC_STACK_CREATE, c) ?: c->fd;
}

FIXTURE(veth) {
	int dev;
	int fd;
	int self_ns;
	int peer_ns;
	char peer[32];
	char dir[64];
	__u32 ifindex;
	__u32 addr;		/* 10.77.0.1, the stack's side */
	__u32 peer_addr;	/* 10.77.0.2 */
	struct sluice_stack_create c;
	unsigned char *region;
};

/* The fixture's setup, with the stack named @name. */
static void veth_up(struct __test_metadata *_metadata, FIXTURE_DATA(veth) *self,
		    const char *name)
{
	char cmd[256], path[64];
	struct stat st;

	ASSERT_EQ(0, ensure_loaded());
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	snprintf(self->peer, sizeof(self->peer), "slk_peer_%d", getpid());
	/* ip netns keeps its namespaces under /run/netns. */
	ASSERT_TRUE(mkdir("/run", 0755) == 0 || errno == EEXIST);
	snprintf(cmd, sizeof(cmd), IP_CMD " netns add %s", self->peer);
	ASSERT_EQ(0, run(cmd));
	ASSERT_EQ(0, run(IP_CMD " link add sk0 type veth peer name sk1"));
	snprintf(cmd, sizeof(cmd), IP_CMD " link set sk1 netns %s", self->peer);
	ASSERT_EQ(0, run(cmd));
	ASSERT_EQ(0, run(IP_CMD " addr add 10.77.0.1/24 dev sk0"));
	ASSERT_EQ(0, run(IP_CMD " link set sk0 up"));
	snprintf(cmd, sizeof(cmd), IP_CMD " -n %s addr add 10.77.0.2/24 dev sk1",
		 self->peer);
	ASSERT_EQ(0, run(cmd));
	snprintf(cmd, sizeof(cmd), IP_CMD " -n %s link set sk1 up", self->peer);
	ASSERT_EQ(0, run(cmd));

	self->self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->self_ns);
	snprintf(path, sizeof(path), "/run/netns/%s", self->peer);
	self->peer_ns = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, self->peer_ns);
	ASSERT_EQ(0, fstat(self->self_ns, &st));
	snprintf(self->dir, sizeof(self->dir), "%s@%lu", name,
		 (unsigned long)st.st_ino);
	self->ifindex = if_nametoindex("sk0");
	ASSERT_NE(0, self->ifindex);
	self->addr = htonl(0x0a4d0001);
	self->peer_addr = htonl(0x0a4d0002);

	self->dev = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->dev);
	self->fd = stack_create(self->dev, name, self->ifindex, &self->c);
	ASSERT_LE(0, self->fd);
	self->region = mmap(NULL, self->c.region_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->region);
}

static void veth_down(struct __test_metadata *_metadata, FIXTURE_DATA(veth) *self)
{
	char cmd[256];

	if (self->region)
		munmap(self->region, self->c.region_size);
	if (self->fd >= 0)
		close(self->fd);
	close(self->dev);
	close(self->peer_ns);
	close(self->self_ns);
	snprintf(cmd, sizeof(cmd), IP_CMD " netns del %s 2>/dev/null", self->peer);
	run(cmd);
	if (_metadata->passed) {
		EXPECT_EQ(0, info_value("stacks"));
		EXPECT_EQ(0, info_value("regions"));
	}
}

#endif /* SLUICE_KSELFTEST_VETH_H */
