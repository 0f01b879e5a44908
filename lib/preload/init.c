// SPDX-License-Identifier: BSD-2-Clause
/*
 * Start-up of the preload library: the real libc functions (found once
 * with dlsym(RTLD_NEXT)), the configuration from the environment, the
 * process's stack (attached, or created, on the first socket Sluice
 * accelerates), fork and exit.
 *
 * A stack on a network device (SLUICE_IFNAME, or any stack attached by
 * name that the module says is on one) runs through the module's rings:
 * every process links them itself when it opens the stack (link/kring_link.c
 * wants each process to).  A fork()ed child inherits the parent's link
 * with its memory (the ring mapping and the stack fd are shared, and the
 * rings keep no per-process state), so it links nothing again; an exec'd
 * program opens the stack afresh and links again.
 *
 * Fork: the region and the placeholder files are shared with the child;
 * the library's own per-process state (lock owner pid, counter block) is
 * re-derived from getpid() by lib/core/lock.c; urcu-bp is told about the fork.
 * Exit: every Sluice socket of the process is closed as the kernel would
 * close its sockets (a socket another process still holds stays open),
 * and connections still finishing are left to the stack's helper process
 * (lib/api/helper.c).  A process that _exit()s or is killed runs no
 * destructor: its sockets stay open in the region, nobody closes them.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu-bp.h>

#include "preload.h"
#include "run/run.h"

struct pl_libc pl_libc;
struct pl_config pl_cfg;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pid_t self_pid SL_FORKDATA;	/* refreshed by fork(); vfork() leaves it */
static pthread_mutex_t stack_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sluice_stack *stack;
static bool stack_failed;

int pl_thread_quiet(void *(*fn)(void *), void *arg, size_t stack_size, pthread_t *out)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int ret;

	/* Every signal blocked: the program's go to its own threads, and
	 * the library's EINTR counts stay theirs. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, stack_size);
	ret = pthread_create(&t, &at, fn, arg);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret && out)
		*out = t;
	return ret;
}

void pl_log(const char *fmt, ...)
{
	char buf[640];	/* a hint may run long (tap_hint()) */
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "sluice[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (pl_libc.write)
		pl_libc.write(2, buf, (size_t)n);
}

#define RESOLVE(name)	(pl_libc.name = (__typeof__(pl_libc.name))dlsym(RTLD_NEXT, #name))

static void resolve_libc(void)
{
	RESOLVE(socket); RESOLVE(bind); RESOLVE(listen); RESOLVE(accept);
	RESOLVE(accept4); RESOLVE(connect); RESOLVE(shutdown); RESOLVE(close);
	RESOLVE(getsockname); RESOLVE(getpeername); RESOLVE(getsockopt);
	RESOLVE(setsockopt); RESOLVE(send); RESOLVE(sendto); RESOLVE(sendmsg);
	RESOLVE(recv); RESOLVE(recvfrom); RESOLVE(recvmsg); RESOLVE(read);
	RESOLVE(write); RESOLVE(readv); RESOLVE(writev); RESOLVE(fcntl);
	RESOLVE(ioctl); RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3); RESOLVE(poll);
	RESOLVE(ppoll); RESOLVE(select); RESOLVE(pselect); RESOLVE(epoll_create);
	RESOLVE(epoll_create1); RESOLVE(epoll_ctl); RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait); RESOLVE(epoll_pwait2); RESOLVE(sendfile); RESOLVE(sendfile64);
	RESOLVE(sigaction); RESOLVE(sendmmsg); RESOLVE(recvmmsg);
	RESOLVE(setuid); RESOLVE(seteuid); RESOLVE(setreuid); RESOLVE(setresuid);
	RESOLVE(lseek); RESOLVE(lseek64); RESOLVE(pread); RESOLVE(pread64);
	RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(preadv); RESOLVE(preadv64);
	RESOLVE(pwritev); RESOLVE(pwritev64); RESOLVE(preadv2); RESOLVE(preadv64v2);
	RESOLVE(pwritev2); RESOLVE(pwritev64v2); RESOLVE(posix_fadvise);
	RESOLVE(fallocate); RESOLVE(flock); RESOLVE(fstat); RESOLVE(fstat64);
	RESOLVE(fstatat); RESOLVE(fstatat64); RESOLVE(statx); RESOLVE(splice); RESOLVE(tee);
	RESOLVE(vmsplice); RESOLVE(copy_file_range);
}

static bool env_flag(const char *name, bool dflt)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return dflt;
	return strcmp(v, "0") && strcmp(v, "no") && strcmp(v, "off");
}

/* SLUICE_ADDR=a.b.c.d/len */
static void parse_addr(const char *v)
{
	char buf[32], *slash;
	struct in_addr a;
	long len = 24;

	snprintf(buf, sizeof(buf), "%s", v);
	slash = strchr(buf, '/');
	if (slash) {
		*slash = '\0';
		len = strtol(slash + 1, NULL, 10);
	}
	if (!inet_aton(buf, &a) || len < 1 || len > 32) {
		pl_log("ignoring SLUICE_ADDR=%s", v);
		return;
	}
	pl_cfg.addr = a.s_addr;
	pl_cfg.mask = htonl(len == 32 ? 0xffffffffu : ~(0xffffffffu >> len));
}

static void read_config(void)
{
	const char *v;
	struct in_addr a;

	v = getenv("SLUICE_SPIN_US");
	pl_cfg.spin_set = v && *v;
	pl_cfg.spin_us = v && *v ? (unsigned int)strtoul(v, NULL, 10) : 50;
	{
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		pl_cfg.cpus = n < 1 ? 1 : (unsigned int)n;
		pl_cfg.spinners = n < 1 ? 1 : n > SL_SPIN_SLOTS ? SL_SPIN_SLOTS : (unsigned int)n;
	}
	v = getenv("SLUICE_WAKE_NS");
	pl_cfg.wake_ns = v && *v ? (uint32_t)strtoul(v, NULL, 10) : 0;
	pl_cfg.disabled = env_flag("SLUICE_DISABLE", false);
	pl_cfg.udp = env_flag("SLUICE_UDP", true);
	v = getenv("SLUICE_LOOPBACK");
	pl_cfg.loopback_set = v && *v;
	pl_cfg.loopback = env_flag("SLUICE_LOOPBACK", true);
	pl_cfg.debug = env_flag("SLUICE_DEBUG", false);
	pl_cfg.kernel_listen = env_flag("SLUICE_KERNEL_LISTEN", true);
	pl_cfg.sock_cache = env_flag("SLUICE_SOCKET_CACHE", true);
	pl_cfg.handoff = env_flag("SLUICE_HANDOFF", true);
	pl_cfg.exec_handoff = env_flag("SLUICE_EXEC_HANDOFF", true);
	pl_cfg.away = env_flag("SLUICE_AWAY_TIMER", true);
	pl_cfg.inet6 = env_flag("SLUICE_INET6", true);
	pl_cfg.inet6_native = pl_cfg.inet6 && env_flag("SLUICE_INET6_NATIVE", true);
	v = getenv("SLUICE_TAP");
	if (v)
		snprintf(pl_cfg.tap, sizeof(pl_cfg.tap), "%s", v);
	v = getenv("SLUICE_IFNAME");
	if (v && *v && strlen(v) < sizeof(pl_cfg.ifname))
		snprintf(pl_cfg.ifname, sizeof(pl_cfg.ifname), "%s", v);
	else if (v && *v)
		pl_log("ignoring SLUICE_IFNAME=%s (too long)", v);
	/* The default name as sluice run's (tools/run.c). */
	v = getenv("SLUICE_STACK");
	if (v && *v)
		snprintf(pl_cfg.stack, sizeof(pl_cfg.stack), "%s", v);
	else if (pl_cfg.ifname[0])
		snprintf(pl_cfg.stack, sizeof(pl_cfg.stack), "sluice-%u-%s", (unsigned int)getuid(),
			 pl_cfg.ifname);
	else
		snprintf(pl_cfg.stack, sizeof(pl_cfg.stack), "sluice-%u", (unsigned int)getuid());
	v = getenv("SLUICE_ADDR");
	if (v && *v)
		parse_addr(v);
	v = getenv("SLUICE_ADDR6");
	if (v && *v && pl_cfg.inet6) {
		char buf[64], *slash;
		long len = 64;

		snprintf(buf, sizeof(buf), "%s", v);
		slash = strchr(buf, '/');
		if (slash) {
			*slash = '\0';
			len = strtol(slash + 1, NULL, 10);
		}
		if (inet_pton(AF_INET6, buf, pl_cfg.addr6) == 1 && len >= 1 && len <= 128)
			pl_cfg.plen6 = (unsigned int)len;
		else
			pl_log("ignoring SLUICE_ADDR6=%s", v);
	}
	v = getenv("SLUICE_GATEWAY");
	if (v && *v && inet_aton(v, &a))
		pl_cfg.gateway = a.s_addr;
	v = getenv("SLUICE_MTU");
	pl_cfg.mtu = v && *v ? (unsigned int)strtoul(v, NULL, 10) : 0;
	/* Programs open and close many connections, each holding its slot
	 * through TIME-WAIT: more slots than the library's default. */
	v = getenv("SLUICE_MAX_SOCKETS");
	pl_cfg.max_sockets = v && *v ? (unsigned int)strtoul(v, NULL, 10) : PL_MAX_SOCKETS;
	v = getenv("SLUICE_BUFS");
	pl_cfg.n_bufs = v && *v ? (unsigned int)strtoul(v, NULL, 10) : 0;
}

static void atfork_prepare(void)
{
	/* First: its wait takes no other lock of ours. */
	pl_twin_atfork_prepare();
	/* No O_ASYNC record is being made or acted on as the child is
	 * copied (its thread holds the mutex at each event); taken before
	 * the stack's locks, which arming takes under it. */
	pl_async_atfork_prepare();
	/* Once, in the parent: its children inherit the calibration (1000
	 * pauses timed) instead of each making its own at its first spin. */
	sl_wait_calibrate();
	/* The child will hold our fds: private sockets take their locks. */
	pl_fd_fork_begin();
	pl_rcu_fork_begin();
}

static void atfork_parent(void)
{
	pl_async_atfork_parent();
	pl_rcu_fork_parent();
	pl_fd_fork_end();
	pl_twin_atfork_parent();
	pl_epoll_atfork();
}

/* getpid() only while a vfork() of ours is under way (spawn.c). */
bool pl_vfork_child(void)
{
	return pl_vfork_maybe() && self_pid && getpid() != self_pid;
}

SL_FORKTEXT static void atfork_child(void)
{
	/* The library's one getpid() of the child: lib/core/lock.c's fork
	 * handler, registered before ours (do_init()), forgot the parent's. */
	self_pid = sl_self_pid();
	pl_rcu_fork_child();
	pl_fdtable_atfork_child();
	pl_bell_atfork_child();
	pl_twin_atfork_child();
	pl_async_atfork_child();
	pl_epoll_atfork();
	pl_agent_atfork_child();
}

/* Started under a seccomp filter already (a service manager's, kept
 * across exec): "Seccomp: 2" in /proc/self/status (os.h). */
static void note_sandbox(void)
{
	char buf[2048], *p;

	if (sl_sys_read_small("/proc/self/status", buf, sizeof(buf)) <= 0)
		return;
	p = strstr(buf, "\nSeccomp:");
	if (p && strtol(p + 9, NULL, 10) == SECCOMP_MODE_FILTER)
		sl_sys_sandboxed = true;
}

static void do_init(void)
{
	resolve_libc();
	/* First: lib/core/lock.c registers its fork handler, which must run
	 * before atfork_child() in a child (handlers run in that order). */
	self_pid = sl_self_pid();
	read_config();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void pl_init(void)
{
	pthread_once(&init_once, do_init);
}

/*
 * What a user can do when a TAP device could not be had: the tun driver
 * lets a process without CAP_NET_ADMIN attach only to a device that
 * exists and belongs to its user or group (tun_not_capable()), and gives
 * a single-queue device to one file at a time.
 */
static const char *tap_hint(struct sluice_stack *st, int err, char *buf, size_t len)
{
	int32_t helper = SL_READ_ONCE(((struct sl_stack *)st)->lib->helper_pid);

	/* The stack's helper keeps the link while it finishes connections
	 * their programs closed (lib/api/helper.c): at most TIME-WAIT. */
	if (err == -EBUSY)
		return snprintf(buf, len, " (the device is single-queue and another process has "
				"it%s%.0d%s: only a multi-queue device, ip tuntap add ... "
				"multi_queue, gives each process of a stack a queue of its own)",
				helper > 0 ? ", maybe the stack's helper, pid " : "",
				helper > 0 ? (int)helper : 0,
				helper > 0 ? ", which goes once the connections closed before "
					     "have ended, within a minute" : "") < 0 ? "" : buf;
	char path[64], owner[16] = "";
	int fd, n;

	if (err != -EPERM && err != -EACCES)
		return "";
	/* A device that exists already belongs to someone else (the tun
	 * driver's owner, -1 for none; tun_not_capable()). */
	snprintf(path, sizeof(path), "/sys/class/net/%s/owner", pl_cfg.tap);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = (int)sl_sys_read(fd, owner, sizeof(owner) - 1);
		sl_sys_close(fd);
		owner[n > 0 ? n : 0] = '\0';
		owner[strcspn(owner, "\n")] = '\0';
	}
	if (owner[0] && strcmp(owner, "-1")) {
		snprintf(buf, len, " (TAP device %s exists and belongs to user %s: taking it "
			 "needs CAP_NET_ADMIN; root can give it to this user, ip tuntap del dev %s "
			 "mode tap multi_queue, then ip tuntap add dev %s mode tap multi_queue user "
			 "%u, or give the tool the capability, setcap cap_net_admin+p on sluice: "
			 "sluice(1), CAPABILITIES)", pl_cfg.tap, owner, pl_cfg.tap, pl_cfg.tap,
			 (unsigned int)getuid());
		return buf;
	}
	snprintf(buf, len, " (making or taking a TAP device needs CAP_NET_ADMIN: root can "
		 "make one for this user, ip tuntap add dev %s mode tap multi_queue user %u, "
		 "then ip link set %s up; or give the tool the capability, setcap "
		 "cap_net_admin+p on sluice: sluice(1), CAPABILITIES)", pl_cfg.tap,
		 (unsigned int)getuid(), pl_cfg.tap);
	return buf;
}

static int stack_open(struct sluice_stack **out)
{
	struct sluice_stack_config cfg = {
		.ip_addr = pl_cfg.addr, .ip_mask = pl_cfg.mask,
		.ip_gateway = pl_cfg.gateway, .mtu = pl_cfg.mtu,
		.max_sockets = pl_cfg.max_sockets, .n_bufs = pl_cfg.n_bufs,
	};
	int ret, tries;

	memcpy(cfg.ifname, pl_cfg.ifname, sizeof(cfg.ifname));

	/* Two processes may race to create it: one wins, the other attaches. */
	for (tries = 0; tries < 3; tries++) {
		ret = sluice_stack_attach(pl_cfg.stack, out);
		if (ret != -ENOENT)
			return ret;
		ret = sluice_stack_create(pl_cfg.stack, &cfg, out);
		if (ret != -EEXIST) {
			if (!ret)
				pl_debug("created stack %s", pl_cfg.stack);
			return ret;
		}
	}
	return ret;
}

/*
 * A stack on a device: check it is the one asked for, link its rings, and
 * leave 127.0.0.0/8 to the kernel unless SLUICE_LOOPBACK says otherwise
 * (as Onload leaves loopback to the kernel by default: local kernel
 * services stay reachable; the stack's own address is still in-stack).
 */
static int device_link(struct sl_stack *s)
{
	unsigned int want;
	int ret;

	if (pl_cfg.ifname[0]) {
		want = if_nametoindex(pl_cfg.ifname);
		if (!want)
			return -ENODEV;
		if (s->ifindex != want) {
			pl_log("stack %s is not on %s (ifindex %u, not %u)", pl_cfg.stack,
			       pl_cfg.ifname, s->ifindex, want);
			return -EXDEV;
		}
	}
	if (!s->ifindex)
		return 0;
	if (pl_cfg.tap[0]) {
		pl_log("stack %s is on a device: SLUICE_TAP ignored", pl_cfg.stack);
		pl_cfg.tap[0] = '\0';
	}
	if (!pl_cfg.loopback_set)
		pl_cfg.loopback = false;
	{
		/* The rings, or on an enhanced IPoIB interface the verbs link
		 * over them (sluice_link_device()); why not, if IPoIB. */
		struct sluice_link_report rep;

		ret = sluice_link_device((struct sluice_stack *)s, &rep);
		if (ret && rep.why[0])
			pl_log("stack %s: %s", pl_cfg.stack, rep.why);
		if (!ret && rep.ipoib && rep.verbs_err)
			pl_log("stack %s: IPoIB without the verbs path (%s); using the kring "
			       "path", pl_cfg.stack, rep.why);
		if (!ret)
			pl_debug("stack %s: %s link on ifindex %u", pl_cfg.stack, rep.link,
				 s->ifindex);
	}
	return ret;
}

struct sluice_stack *pl_stack(void)
{
	struct sluice_stack *st = sl_load_acquire(&stack);
	int ret, saved_errno;
	char hint[480];

	if (st || stack_failed)
		return st;
	/* The program's errno is its own: opening the stack (probing for
	 * the module, for a stack to attach to, ...) leaves it as it was. */
	saved_errno = errno;
	pl_init();
	pthread_mutex_lock(&stack_mu);
	if (stack || stack_failed)
		goto out;
	ret = stack_open(&st);
	if (ret) {
		pl_log("stack %s: %s; sockets stay in the kernel", pl_cfg.stack, strerror(-ret));
		stack_failed = true;
		goto out;
	}
	/* This layer spins (pl_sluice_wait()): the stack's own waits sleep at
	 * once, in slices short enough to notice signals. */
	sluice_stack_set_spin(st, 0);
	/* Unless told, spin for what a wake-up here costs (`sluice run`
	 * measured it, SLUICE_WAKE_NS): longer costs more than the sleep it
	 * saves.  Kept in the region for `sluice info`. */
	if (pl_cfg.wake_ns) {
		uint32_t none = 0;

		if (!pl_cfg.spin_set)
			pl_cfg.spin_us = sl_spin_budget_us(pl_cfg.wake_ns);
		sl_cmpxchg(&((struct sl_stack *)st)->lib->wake_cost_ns, &none, pl_cfg.wake_ns);
	}
	ret = pl_fdtable_open((struct sl_stack *)st);
	if (ret) {
		pl_log("stack %s: placeholder file: %s; sockets stay in the kernel",
		       pl_cfg.stack, strerror(-ret));
		goto err_close;
	}
	ret = device_link((struct sl_stack *)st);
	if (ret) {
		pl_log("stack %s: device link: %s; sockets stay in the kernel", pl_cfg.stack,
		       strerror(-ret));
		goto err_close;
	}
	/* Not told which TAP device: the one the stack's first process
	 * opened, a queue of our own on it, so that we send ourselves. */
	if (!pl_cfg.tap[0] &&
	    sl_link_tap_of((struct sl_stack *)st, pl_cfg.tap, sizeof(pl_cfg.tap))) {
		/* Not asked for: without it, this process still has the
		 * stack, only no link of its own (as before).  Only a device
		 * that exists here: TUNSETIFF would make a new one. */
		ret = if_nametoindex(pl_cfg.tap) ? sluice_link_tap(st, pl_cfg.tap) : -ENODEV;
		if (ret)
			pl_log("stack %s: its TAP device %s: %s; this process cannot send on it%s",
			       pl_cfg.stack, pl_cfg.tap, strerror(-ret), tap_hint(st, ret, hint,
										 sizeof(hint)));
		pl_cfg.tap[0] = '\0';
	}
	if (pl_cfg.tap[0]) {
		ret = sluice_link_tap(st, pl_cfg.tap);
		if (ret)
			pl_log("stack %s: TAP %s: %s%s; sockets stay in the kernel", pl_cfg.stack,
			       pl_cfg.tap, strerror(-ret), tap_hint(st, ret, hint, sizeof(hint)));
		if (ret)
			goto err_close;
	}
	/* Our queue is read even while the program is away (tapq.c). */
	pl_tapq_start((struct sl_stack *)st);
	/* And the stack's timers run while it is away: a thread made when
	 * first needed, or the agent on a module's stack (away.c). */
	if (pl_cfg.away && !sl_sys_sandboxed)
		((struct sl_stack *)st)->tk_start = pl_away_start;
	if (pl_cfg.plen6) {
		ret = sluice_stack_set_addr6(st, pl_cfg.addr6, pl_cfg.plen6);
		if (ret)
			pl_log("stack %s: SLUICE_ADDR6: %s", pl_cfg.stack, strerror(-ret));
	}
	pl_debug("attached to stack %s", pl_cfg.stack);
	sl_store_release(&stack, st);
	goto out;

err_close:
	sluice_stack_close(st);
	stack_failed = true;
out:
	pthread_mutex_unlock(&stack_mu);
	errno = saved_errno;
	return stack;
}

struct sl_stack *pl_sl(void)
{
	return (struct sl_stack *)sl_load_acquire(&stack);
}

/* The death watcher's image (watch.c): the stack it attached, as
 * pl_stack() would have. */
void pl_stack_adopt(struct sluice_stack *st)
{
	sl_store_release(&stack, st);
}

__attribute__((constructor)) static void pl_constructor(void)
{
	char path[96];

	pl_init();
	/* Here, not in pl_init(): a wrapper may run that while a sanitizer
	 * runtime starts, when its string functions may not be called. */
	note_sandbox();
	/* Before the program can enter a sandbox that forbids sigaction. */
	if (!pl_cfg.disabled)
		pl_fault_init();
	/* Sockets inherited through exec exist only if the stack's
	 * placeholder file does: most programs skip the /proc scan. */
	snprintf(path, sizeof(path), "/dev/shm/sluicefd-%s", pl_cfg.stack);
	if (!pl_cfg.disabled && !access(path, F_OK))
		pl_fdtable_inherit();
}

/*
 * The object's DT_FINI, which the dynamic linker calls at every exit
 * (the link's -fini names it, Makefile): crti.o's _fini does nothing but
 * sits at the end of .text, a page of its own a forked child would fault
 * in at exit only to return; this one is beside the other exit code.
 */
void pl_fini(void);
SL_FORKTEXT void pl_fini(void)
{
}

__attribute__((destructor)) SL_FORKTEXT static void pl_destructor(void)
{
	/* pl_sl()'s load, not a call to it: its page is not a window a
	 * child that never used the stack touched. */
	struct sl_stack *s = (struct sl_stack *)sl_load_acquire(&stack);

	if (!s)
		return;
	/* The process ends: its queue server must not be inside the stack. */
	pl_tapq_stop(s);
	pl_away_pause(s);
	pl_fdtable_close_all();
	/* The stack stays mapped (other threads may still run), but what
	 * we closed may still have data to send: leave it to the helper. */
	sl_helper_ensure(s);
	/* Our counter block, for the next process (a forking server's
	 * next child takes it without looking for a dead one). */
	sl_counters_release(s);
}
