// SPDX-License-Identifier: BSD-2-Clause
/*
 * sluice run [--stack NAME] [--profile latency|throughput] [--spin US]
 *            [--tap IFNAME --addr A.B.C.D/LEN [--gateway A.B.C.D] [--addr6 ADDR/LEN]]
 *            [--interface IFNAME] [--verbs-trace FILE] -- PROGRAM ARGS
 *   runs PROGRAM with libsluice-preload.so: its IPv4 TCP and UDP sockets
 *   live on stack NAME (created here if it does not exist).  --interface
 *   (or --ifname, its older name): a stack on that device, sharing the
 *   device's IPv4 address; every process of the stack links it itself:
 *   on an IPoIB interface with enhanced IPoIB (mlx5) the verbs path, else
 *   (or failing that, with the reason logged) the module's rings (kring).
 * sluice fds [NAME]
 *   which fds of which processes are sockets of stack NAME (or of any
 *   stack), with each socket's protocol, state and addresses.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include <sluice/sluice.h>

#include "api/api.h"
#include "cmds.h"
#include "json.h"

#define PRELOAD_NAME	"libsluice-preload.so"

/*
 * Next to the tool (build/tools/sluice -> build/), beside it, or installed:
 * PKGLIBDIR under the tool's PREFIX, whatever LIBDIR was (lib, lib64, a
 * multiarch lib/x86_64-linux-gnu; make install's PKGLIBDIR is LIBDIR/sluice
 * unless told), then the usual places.
 */
static int find_preload(char *out, size_t len)
{
	static const char *const rel[] = { "/../" PRELOAD_NAME, "/" PRELOAD_NAME,
					   "/../lib/sluice/" PRELOAD_NAME,
					   "/../lib*/sluice/" PRELOAD_NAME,
					   "/../lib/*/sluice/" PRELOAD_NAME };
	static const char *const abs_[] = { "/usr/local/lib/sluice/" PRELOAD_NAME,
					    "/usr/lib/sluice/" PRELOAD_NAME };
	char exe[PATH_MAX], *slash, cand[PATH_MAX + 64];
	const char *env = getenv("SLUICE_PRELOAD_LIB");
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK) ? -errno : 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			glob_t g;
			bool found = false;

			snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
			if (!glob(cand, GLOB_NOSORT, NULL, &g)) {
				for (size_t j = 0; j < g.gl_pathc && !found; j++)
					found = !access(g.gl_pathv[j], R_OK) &&
						realpath(g.gl_pathv[j], out);
				globfree(&g);
			}
			if (found)
				return 0;
		}
	}
	for (size_t i = 0; i < sizeof(abs_) / sizeof(abs_[0]); i++)
		if (!access(abs_[i], R_OK)) {
			snprintf(out, len, "%s", abs_[i]);
			return 0;
		}
	return -ENOENT;
}

/*
 * Capabilities the tool was given as file capabilities (setcap
 * cap_net_raw,cap_ipc_lock,cap_net_admin+p) go on to PROGRAM as ambient
 * capabilities (capabilities(7)).  Its loader then does not run it in
 * secure-execution mode, which would drop LD_PRELOAD silently: only caps
 * a file grants beyond the ambient set make an exec secure (issue 14,
 * item 2).  Only what Sluice's links need is passed: CAP_NET_RAW (verbs
 * flow rules), CAP_IPC_LOCK (memory a module stack pins), CAP_NET_ADMIN
 * (a TAP device).  Root needs none of this.
 *
 * They are made effective here too, before the tool makes the stack
 * itself (ensure_stack()): "+p" leaves a file's capabilities permitted
 * only, and the module asks capable(CAP_IPC_LOCK), the effective set,
 * before it pins a device stack past RLIMIT_MEMLOCK.  Without this the
 * tool, given cap_ipc_lock+p as its own message advises, still failed
 * with ENOMEM and gave that advice again (tests/vm/ipoib_user.sh).
 */
static void pass_caps(void)
{
	static const struct { int cap; const char *name; } caps[] = {
		{ CAP_NET_RAW, "CAP_NET_RAW" },
		{ CAP_IPC_LOCK, "CAP_IPC_LOCK" },
		{ CAP_NET_ADMIN, "CAP_NET_ADMIN" },
	};
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
	bool any = false;

	if (getuid() == 0 || syscall(SYS_capget, &h, d))
		return;
	/* A capability becomes ambient only when it is permitted and
	 * inheritable; effective, the tool itself has it. */
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		unsigned int c = (unsigned int)caps[i].cap;

		if (d[c / 32].permitted & (1u << (c % 32))) {
			d[c / 32].inheritable |= 1u << (c % 32);
			d[c / 32].effective |= 1u << (c % 32);
			any = true;
		}
	}
	if (!any)
		return;
	if (syscall(SYS_capset, &h, d)) {
		fprintf(stderr, "sluice run: cannot make capabilities inheritable: %s\n",
			strerror(errno));
		return;
	}
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		unsigned int c = (unsigned int)caps[i].cap;

		if (!(d[c / 32].permitted & (1u << (c % 32))))
			continue;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0))
			fprintf(stderr, "sluice run: %s cannot pass to the program (%s): "
				"it will not have it\n", caps[i].name, strerror(errno));
	}
}

static void run_usage(void)
{
	fprintf(stderr,
		"usage: sluice run [--stack NAME] [--profile latency|throughput] [--spin US]\n"
		"                  [--tap IFNAME --addr A.B.C.D/LEN [--gateway A.B.C.D]\n"
		"                   [--addr6 ADDR/LEN]]\n"
		"                  [--interface IFNAME] [--verbs-trace FILE] [--debug]\n"
		"                  -- PROGRAM [ARGS...]\n");
}

/* Create the stack now (the library would on first use) so the address
 * configuration given here is the one it gets. */
/*
 * What a wake-up costs here, for the default spin time (lib/README.md
 * "Waiting"), in SLUICE_WAKE_NS: stack st's figure if a sluice run before
 * this one measured it, else measured now (a few ms) and kept in st (NULL:
 * only measured).  Not when the spin is given, nor inside a sluice run
 * that already handed its figure on.
 */
static void wake_cost_env(struct sluice_stack *st)
{
	const char *spin = getenv("SLUICE_SPIN_US"), *have = getenv("SLUICE_WAKE_NS");
	uint32_t *kept = st ? &((struct sl_stack *)st)->lib->wake_cost_ns : NULL;
	uint32_t ns = kept ? SL_READ_ONCE(*kept) : 0, none = 0;
	char wake[16];

	if ((spin && *spin) || (have && *have))
		return;
	if (!ns) {
		ns = sl_wake_cost_ns();
		if (ns && kept)
			sl_cmpxchg(kept, &none, ns);
	}
	if (ns) {
		snprintf(wake, sizeof(wake), "%u", ns);
		setenv("SLUICE_WAKE_NS", wake, 1);
	}
}

static int ensure_stack(const char *name, const char *addr, const char *gw, const char *ifname,
			const char *tap)
{
	struct sluice_stack_config cfg = { 0 };
	struct sluice_stack *st;
	char buf[32], *slash;
	struct in_addr a;
	long plen = 24;
	int ret;

	ret = sluice_stack_attach(name, &st);
	if (!ret) {
		wake_cost_env(st);
		sluice_stack_close(st);
		return 0;
	}
	if (ret != -ENOENT)
		return ret;
	/* The library's sizes for stacks it creates itself (init.c). */
	cfg.max_sockets = getenv("SLUICE_MAX_SOCKETS") ?
			  (uint32_t)strtoul(getenv("SLUICE_MAX_SOCKETS"), NULL, 10) : 0;
	if (getenv("SLUICE_BUFS"))
		cfg.n_bufs = (uint32_t)strtoul(getenv("SLUICE_BUFS"), NULL, 10);
	if (addr) {
		snprintf(buf, sizeof(buf), "%s", addr);
		slash = strchr(buf, '/');
		if (slash) {
			*slash = '\0';
			plen = strtol(slash + 1, NULL, 10);
		}
		if (!inet_aton(buf, &a) || plen < 1 || plen > 32)
			return -EINVAL;
		cfg.ip_addr = a.s_addr;
		cfg.ip_mask = htonl(plen == 32 ? 0xffffffffu : ~(0xffffffffu >> plen));
	}
	if (gw) {
		if (!inet_aton(gw, &a))
			return -EINVAL;
		cfg.ip_gateway = a.s_addr;
	}
	if (ifname) {
		if (strlen(ifname) >= sizeof(cfg.ifname))
			return -ENAMETOOLONG;
		memcpy(cfg.ifname, ifname, strlen(ifname) + 1);
	}
	/* A module's stack goes when its last holder closes it: made here
	 * only to report a missing module or device now, the program makes
	 * it again (the preload library, from the same environment). */
	ret = sluice_stack_create(name, &cfg, &st);
	if (ret == -EEXIST) {
		wake_cost_env(NULL);	/* made by another meanwhile */
		return 0;
	}
	if (ret)
		return ret;
	/* Its TAP device, recorded now: a program that never makes a
	 * socket never opens it, and the processes that attach later by
	 * name find it here (sl_link_tap_of()). */
	if (tap && *tap)
		sluice_stack_set_tap(st, tap);
	/* (A module's stack is made again by the program: its copy of the
	 * figure is the preload's to keep.) */
	wake_cost_env(st);
	/* The region stays (in /dev/shm, or held by the programs that attach
	 * to it in the module) after we let go. */
	sluice_stack_close(st);
	return 0;
}

int cmd_run(int argc, char **argv)
{
	const char *stack = getenv("SLUICE_STACK"), *profile = NULL, *spin = NULL;
	const char *tap = NULL, *addr = NULL, *gw = NULL, *ifname = getenv("SLUICE_IFNAME");
	const char *vtrace = NULL;
	char lib[PATH_MAX], name[SLUICE_NAME_MAX], *pre;
	const char *old;
	int i, ret;

	for (i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "--debug")) {
			setenv("SLUICE_DEBUG", "1", 1);
			continue;
		}
		if (i + 1 >= argc) {
			run_usage();
			return 2;
		}
		if (!strcmp(a, "--stack"))
			stack = argv[++i];
		else if (!strcmp(a, "--profile"))
			profile = argv[++i];
		else if (!strcmp(a, "--spin"))
			spin = argv[++i];
		else if (!strcmp(a, "--tap"))
			tap = argv[++i];
		else if (!strcmp(a, "--addr"))
			addr = argv[++i];
		else if (!strcmp(a, "--gateway"))
			gw = argv[++i];
		else if (!strcmp(a, "--addr6"))
			setenv("SLUICE_ADDR6", argv[++i], 1);
		else if (!strcmp(a, "--interface") || !strcmp(a, "--ifname"))
			ifname = argv[++i];
		else if (!strcmp(a, "--verbs-trace"))
			vtrace = argv[++i];
		else {
			fprintf(stderr, "sluice run: unknown option '%s'\n", a);
			run_usage();
			return 2;
		}
	}
	if (i >= argc) {
		run_usage();
		return 2;
	}
	/* Profiles, as Onload's and VMA's: how long blocking calls and
	 * epoll busy-poll before they sleep. */
	if (profile && !strcmp(profile, "latency"))
		setenv("SLUICE_SPIN_US", "100000", 1);
	else if (profile && !strcmp(profile, "throughput"))
		setenv("SLUICE_SPIN_US", "20", 1);
	else if (profile) {
		fprintf(stderr, "sluice run: unknown profile '%s' (latency, throughput)\n", profile);
		return 2;
	}
	if (spin)
		setenv("SLUICE_SPIN_US", spin, 1);
	if (ifname && !*ifname)
		ifname = NULL;
	if (ifname && tap) {
		fprintf(stderr, "sluice run: --interface and --tap exclude each other\n");
		return 2;
	}
	/* A stack on a device has a name of its own by default, so the
	 * default loopback-only stack and it never mix. */
	if ((!stack || !*stack) && ifname) {
		snprintf(name, sizeof(name), "sluice-%u-%s", (unsigned int)getuid(), ifname);
		stack = name;
	} else if (!stack || !*stack) {
		snprintf(name, sizeof(name), "sluice-%u", (unsigned int)getuid());
		stack = name;
	}
	setenv("SLUICE_STACK", stack, 1);
	if (tap)
		setenv("SLUICE_TAP", tap, 1);
	if (addr)
		setenv("SLUICE_ADDR", addr, 1);
	if (gw)
		setenv("SLUICE_GATEWAY", gw, 1);
	if (ifname)
		setenv("SLUICE_IFNAME", ifname, 1);
	/* Absolute, so a program that changes directory writes the same file. */
	if (vtrace && *vtrace) {
		char *abs = NULL;

		if (vtrace[0] != '/') {
			char cwd[PATH_MAX];

			if (getcwd(cwd, sizeof(cwd)) && asprintf(&abs, "%s/%s", cwd, vtrace) > 0)
				vtrace = abs;
		}
		setenv("SLUICE_VERBS_TRACE", vtrace, 1);
		free(abs);
	}
	ret = find_preload(lib, sizeof(lib));
	if (ret) {
		fprintf(stderr, "sluice run: %s not found next to the tool or installed "
			"(set SLUICE_PRELOAD_LIB)\n", PRELOAD_NAME);
		return 1;
	}
	pass_caps();
	ret = ensure_stack(stack, addr, gw, ifname, tap);
	if (ret == -EOPNOTSUPP && ifname) {
		int fd = sluice_dev_open(NULL);

		/* The module is there but not for this user: say how to get it. */
		if (fd == -EACCES || fd == -EPERM)
			fprintf(stderr, "sluice run: stack '%s' on %s: %s: %s: a member of group "
				"sluice may use it (adduser $USER sluice, then log in again)\n",
				stack, ifname, SLUICE_DEVICE_PATH, strerror(-fd));
		else
			fprintf(stderr, "sluice run: stack '%s' on %s: a stack on a device needs the "
				"sluice module (is sluice.ko loaded?)\n", stack, ifname);
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (ret == -ENOMEM && ifname) {
		struct rlimit rl = { 0 };

		/* kernel/stack.c sluice_mem_charge(): pinned, so charged. */
		getrlimit(RLIMIT_MEMLOCK, &rl);
		fprintf(stderr, "sluice run: stack '%s' on %s: %s: a stack on a device is memory "
			"the module pins, charged to RLIMIT_MEMLOCK (%llu KiB here: ulimit -l) "
			"unless the process has CAP_IPC_LOCK: raise the limit (memlock in "
			"limits.conf(5)), ask for a smaller stack (SLUICE_MAX_SOCKETS, "
			"SLUICE_BUFS: sluice(7)) or give the tool cap_ipc_lock+p (sluice(1), "
			"CAPABILITIES)\n", stack, ifname, strerror(-ret),
			rl.rlim_cur == RLIM_INFINITY ? 0ull : (unsigned long long)rl.rlim_cur / 1024);
		return 1;
	}
	if (ret == -EPROTO) {
		/* region.c: damaged, or laid out by another build of Sluice
		 * (an upgrade with the old stack still in /dev/shm). */
		fprintf(stderr, "sluice run: stack '%s' is not one this build of Sluice can join: "
			"another build (another layout version) made it, or it is damaged. Once "
			"no program uses it, remove /dev/shm/sluice-%s and /dev/shm/sluicefd-%s "
			"(sluice stacks lists it), or name another with --stack\n",
			stack, stack, stack);
		return 1;
	}
	if (ret) {
		fprintf(stderr, "sluice run: stack '%s': %s\n", stack, strerror(-ret));
		return 1;
	}
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		pre = malloc(strlen(lib) + strlen(old) + 2);
		if (!pre)
			return 1;
		sprintf(pre, "%s:%s", lib, old);
		setenv("LD_PRELOAD", pre, 1);
		free(pre);
	} else {
		setenv("LD_PRELOAD", lib, 1);
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "sluice run: %s: %s\n", argv[i], strerror(errno));
	return 127;
}

/* The stacks fds lists sockets of, attached once each for the details. */
struct fds_stack {
	char name[SLUICE_NAME_MAX];
	struct sluice_stack *st;	/* NULL: could not attach */
	const struct sl_fdhdr *recs;	/* its placeholder records, or NULL */
	size_t recs_len;
};

#define FDS_STACKS	32

static struct sluice_stack *fds_attach(struct fds_stack *tab, unsigned int *n, const char *name)
{
	unsigned int i;

	for (i = 0; i < *n; i++)
		if (!strcmp(tab[i].name, name))
			return tab[i].st;
	if (*n == FDS_STACKS || strlen(name) >= sizeof(tab[*n].name))
		return NULL;
	memcpy(tab[*n].name, name, strlen(name) + 1);
	if (sluice_stack_attach(name, &tab[*n].st))
		tab[*n].st = NULL;
	tab[*n].recs = NULL;
	return tab[(*n)++].st;
}

/*
 * A placeholder without a name is a private socket's (lib/preload/
 * fdtable.c) or one of the library's own sockets: the records say which,
 * by the process and its fd when the socket was made; a dup of it
 * (another fd) by the process, if one of its private sockets alone is
 * there and the fd it was made at is not open on it (then the other is
 * the socket cache's copy).
 */
static long fds_private(struct fds_stack *tab, unsigned int n, const char *name, long pid,
			long fd)
{
	struct fds_stack *e = NULL;
	const struct sl_fdrec *r;
	long found = -1, only = -1;
	unsigned int others = 0;

	for (unsigned int i = 0; i < n && !e; i++)
		if (!strcmp(tab[i].name, name))
			e = &tab[i];
	if (!e)
		return -1;
	if (!e->recs) {
		char path[160];
		struct stat sb;
		void *m;
		int rfd;

		snprintf(path, sizeof(path), "/dev/shm/sluicefd-%s/recs", name);
		rfd = open(path, O_RDONLY | O_CLOEXEC);
		if (rfd < 0)
			return -1;
		m = fstat(rfd, &sb) || (size_t)sb.st_size < sizeof(struct sl_fdhdr) ? MAP_FAILED :
		    mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, rfd, 0);
		close(rfd);
		if (m == MAP_FAILED)
			return -1;
		e->recs = m;
		e->recs_len = (size_t)sb.st_size;
		if (e->recs->magic != SL_FDREC_MAGIC) {
			munmap(m, e->recs_len);
			e->recs = NULL;
			return -1;
		}
	}
	r = (const struct sl_fdrec *)(e->recs + 1);
	for (long sd = 0; (uint32_t)sd < e->recs->nrec; sd++) {
		if (sizeof(*e->recs) + (size_t)(sd + 1) * sizeof(*r) > e->recs_len)
			break;
		if (SL_FDREC_STATE(r[sd].key) != SL_FDREC_PRIV || r[sd].pid != (uint32_t)pid)
			continue;
		if (r[sd].fd == fd)
			found = sd;
		else if (only < 0)
			only = sd;
		else
			others++;
	}
	if (found < 0 && !others && only >= 0) {
		/* Not a dup while the fd the socket was made at is open on a
		 * placeholder (a socket): another fd is the library's kept
		 * copy of a closed socket's (lib/preload/README.md, "Socket
		 * cache"), or a dup that shows once its original is closed. */
		char path[64], at[160];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%ld/fd/%d", pid, r[only].fd);
		len = readlink(path, at, sizeof(at) - 1);
		if (len > 0 && (at[len] = '\0', !strncmp(at, "socket:[", 8)))
			return -1;
	}
	return found >= 0 ? found : others ? -1 : only;
}

/*
 * The AF_UNIX sockets of a process's network namespace (/proc/PID/net/
 * unix): for an inode, the name it is bound to ("" for none), or NULL if
 * it is no stream socket there.  Read once a process.
 */
struct fds_unix {
	unsigned long *ino;
	char **name;
	size_t n, cap;
};

static void fds_unix_free(struct fds_unix *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->name[i]);
	free(u->ino);
	free(u->name);
	memset(u, 0, sizeof(*u));
}

static void fds_unix_read(struct fds_unix *u, const char *pid)
{
	char path[300], line[512], name[300];
	unsigned long ino;
	unsigned int type;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/net/unix", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		name[0] = '\0';
		/* "Num RefCount Protocol Flags Type St Inode Path" */
		if (sscanf(line, "%*s %*s %*s %*s %x %*s %lu %299s", &type, &ino, name) < 2 ||
		    type != SOCK_STREAM)
			continue;
		if (u->n == u->cap) {
			size_t cap = u->cap ? 2 * u->cap : 64;
			unsigned long *ni = realloc(u->ino, cap * sizeof(*ni));
			char **nn = ni ? realloc(u->name, cap * sizeof(*nn)) : NULL;

			if (ni)
				u->ino = ni;
			if (!nn)
				break;
			u->name = nn;
			u->cap = cap;
		}
		u->ino[u->n] = ino;
		u->name[u->n] = strdup(name);
		if (u->name[u->n])
			u->n++;
	}
	if (f)
		fclose(f);
}

/* The stack a process of sluice run names (SLUICE_STACK in its
 * environment), or "". */
static void fds_env_stack(const char *pid, char *out, size_t len)
{
	char path[300], buf[8192];
	ssize_t n = -1;
	int fd;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		if (!strncmp(buf + i, "SLUICE_STACK=", 13)) {
			snprintf(out, len, "%s", buf + i + 13);
			return;
		}
	}
}

static const char *fds_unix_name(const struct fds_unix *u, unsigned long ino)
{
	for (size_t i = 0; i < u->n; i++)
		if (u->ino[i] == ino)
			return u->name[i];
	return NULL;
}

/*
 * Is fd of process pid (its /proc link: "socket:[N]") the placeholder of
 * a socket of a stack without the module?  A stream socket of its
 * network namespace bound to a name in a stack's directory, or an
 * unbound one in a process that runs on such a stack (SLUICE_STACK).
 */
bool fds_is_placeholder(long pid, const char *link)
{
	char p[32], stack[SLUICE_NAME_MAX], dir[96];
	struct fds_unix u = { 0 };
	const char *name;
	unsigned long ino;
	bool yes = false;

	if (sscanf(link, "socket:[%lu]", &ino) != 1)
		return false;
	snprintf(p, sizeof(p), "%ld", pid);
	fds_unix_read(&u, p);
	name = fds_unix_name(&u, ino);
	if (name && *name) {
		yes = !strncmp(name, "/dev/shm/sluicefd-", 18);
	} else if (name) {
		fds_env_stack(p, stack, sizeof(stack));
		snprintf(dir, sizeof(dir), "/dev/shm/sluicefd-%s/recs", stack);
		yes = *stack && !access(dir, F_OK);
	}
	fds_unix_free(&u);
	return yes;
}

/* What fds says of a socket. */
struct fds_sock {
	const char *proto;	/* "tcp", "udp", "free"; NULL: unknown */
	const char *state;	/* TCP's; NULL for UDP or unknown */
	char local[INET6_ADDRSTRLEN + 2], remote[INET6_ADDRSTRLEN + 2];
	unsigned int lport, rport;
};

/* An address as fds shows it: a.b.c.d, or [v6] for an IPv6 address's
 * handle (lib/proto/proto.h, "IPv6 sockets"). */
static void addr_name(const struct sl_stack *s, uint32_t a, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	uint8_t a6[16];

	if (sl_v6tok(a) && sl_v6tok_addr(s, a, a6)) {
		inet_ntop(AF_INET6, a6, ip, sizeof(ip));
		snprintf(out, len, "[%s]", ip);
		return;
	}
	inet_ntop(AF_INET, &a, out, (socklen_t)len);
}

/* Socket idx of st, read from the region without its lock, so a snapshot
 * that may be torn; st NULL or idx out of range: all unknown. */
static void fds_describe(struct sluice_stack *st, long idx, struct fds_sock *d)
{
	const struct sl_stack *s = (const struct sl_stack *)st;
	const struct sl_sock *so;
	uint32_t la, ra;

	memset(d, 0, sizeof(*d));
	if (!st || idx < 0 || (unsigned long)idx >= s->max_sockets)
		return;
	so = sl_sock(s, (uint32_t)idx);
	la = so->laddr;
	ra = so->raddr;
	addr_name(s, la, d->local, sizeof(d->local));
	addr_name(s, ra, d->remote, sizeof(d->remote));
	d->lport = ntohs(so->lport);
	d->rport = ntohs(so->rport);
	d->proto = so->type == SL_SOCK_TCP ? "tcp" : so->type == SL_SOCK_UDP ? "udp" : "free";
	d->state = so->type == SL_SOCK_TCP ? tcp_state_name(so->state) : NULL;
}

/* "tcp ESTABLISHED 10.0.0.1:80 10.0.0.2:4711", in columns. */
static void fds_text(const struct fds_sock *d, char *out, size_t len)
{
	if (!d->proto)
		snprintf(out, len, "%-5s %-11s %21s %21s", "?", "?", "?", "?");
	else
		snprintf(out, len, "%-5s %-11s %15s:%-5u %15s:%-5u", d->proto,
			 d->state ? d->state : "-", d->local, d->lport, d->remote, d->rport);
}

static void fds_json(struct jw *w, const char *pid, const char *fd, const char *stack, long pos,
		     const struct fds_sock *d, const char *comm)
{
	char a[64];

	jw_obj(w, NULL);
	jw_i64(w, "pid", strtol(pid, NULL, 10));
	jw_i64(w, "fd", strtol(fd, NULL, 10));
	jw_str(w, "stack", stack);
	jw_i64(w, "socket", pos);
	jw_str(w, "proto", d->proto);
	jw_str(w, "state", d->state);
	if (d->proto) {
		snprintf(a, sizeof(a), "%s:%u", d->local, d->lport);
		jw_str(w, "local", a);
		snprintf(a, sizeof(a), "%s:%u", d->remote, d->rport);
		jw_str(w, "remote", a);
	} else {
		jw_null(w, "local");
		jw_null(w, "remote");
	}
	jw_str(w, "command", comm);
	jw_obj_end(w);
}

/*
 * One line per fd that holds a placeholder (fdtable.c) of stack name, or
 * of any stack when name is NULL: the socket index is the file position,
 * and the socket's protocol, state and addresses come from the region.
 */
int cmd_fds(const char *name, bool json)
{
	static const char prefix[] = "/dev/shm/sluicefd-";
	char path[600], link[128], line[128], desc[160];
	struct fds_stack stacks[FDS_STACKS];
	struct fds_sock sock;
	struct jw w;
	unsigned int nstacks = 0;
	struct fds_unix ux = { 0 };
	char env_stack[SLUICE_NAME_MAX];
	bool unix_read, env_read;
	struct dirent *p, *f;
	DIR *proc, *fdd;

	proc = opendir("/proc");
	if (!proc) {
		perror("sluice: /proc");
		return 1;
	}
	if (json) {
		jw_init(&w, stdout);
		jw_obj(&w, NULL);
		jw_arr(&w, "fds");
	} else {
		printf("%8s %5s %-20s %6s  %-5s %-11s %21s %21s  %s\n", "PID", "FD", "STACK",
		       "SOCKET", "PROTO", "STATE", "LOCAL", "REMOTE", "COMMAND");
	}
	while ((p = readdir(proc))) {
		char comm[64] = "?";
		FILE *c;

		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fdd = opendir(path);
		if (!fdd)
			continue;
		unix_read = env_read = false;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		c = fopen(path, "re");
		if (c) {
			if (fgets(comm, sizeof(comm), c))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(c);
		}
		while ((f = readdir(fdd))) {
			char kstack[SLUICE_NAME_MAX] = "", pstack[SLUICE_NAME_MAX] = "";
			const char *stack, *bound = NULL;
			unsigned long ino;
			bool kfd;
			ssize_t n;
			FILE *info;
			long pos = -1;

			if (f->d_name[0] < '0' || f->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			kfd = !strcmp(link, "anon_inode:[sluice-sock]");
			/* A placeholder is an AF_UNIX stream socket: a shared
			 * socket's bound to "NAME/pN" in the stack's directory,
			 * a private one's unbound (its record says it). */
			if (!kfd) {
				const size_t pn = sizeof(SL_FDREC_PLACE_NAME) - 1;
				char *slash, *num;

				if (sscanf(link, "socket:[%lu]", &ino) != 1)
					continue;
				if (!unix_read) {
					fds_unix_read(&ux, p->d_name);
					unix_read = true;
				}
				bound = fds_unix_name(&ux, ino);
				if (!bound)
					continue;
				if (*bound) {
					if (strncmp(bound, prefix, sizeof(prefix) - 1))
						continue;
					snprintf(pstack, sizeof(pstack), "%s",
						 bound + sizeof(prefix) - 1);
					slash = strchr(pstack, '/');
					if (!slash || strncmp(slash + 1, SL_FDREC_PLACE_NAME, pn))
						continue;
					num = slash + 1 + pn;
					if (!*num || strspn(num, "0123456789") != strlen(num))
						continue;
					*slash = '\0';
					pos = strtol(num, NULL, 10);
				} else if (name) {
					snprintf(pstack, sizeof(pstack), "%s", name);
				} else {
					/* Whose?  The stack its process runs on. */
					if (!env_read) {
						fds_env_stack(p->d_name, env_stack,
							      sizeof(env_stack));
						env_read = true;
					}
					if (!*env_stack)
						continue;
					snprintf(pstack, sizeof(pstack), "%s", env_stack);
				}
			}
			stack = kfd ? kstack : pstack;
			/* A module socket fd's own lines (kernel/sockfd.c)
			 * name the socket. */
			if (kfd) {
				snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", p->d_name,
					 f->d_name);
				info = fopen(path, "re");
				while (info && fgets(line, sizeof(line), info)) {
					if (!strncmp(line, "sluice_idx:", 11))
						pos = strtol(line + 11, NULL, 10);
					if (sscanf(line, "sluice_stack: %31s", kstack) == 1)
						continue;
				}
				if (info)
					fclose(info);
			}
			if (!*stack || (name && strcmp(stack, name)))
				continue;
			if (pos < 0 && !kfd && fds_attach(stacks, &nstacks, stack))
				pos = fds_private(stacks, nstacks, stack, strtol(p->d_name, NULL, 10),
						  strtol(f->d_name, NULL, 10));
			if (pos < 0)
				continue;	/* none of the stack's sockets */
			fds_describe(fds_attach(stacks, &nstacks, stack), pos, &sock);
			if (json) {
				fds_json(&w, p->d_name, f->d_name, stack, pos, &sock, comm);
				continue;
			}
			fds_text(&sock, desc, sizeof(desc));
			printf("%8s %5s %-20s %6ld  %s  %s\n", p->d_name, f->d_name, stack, pos, desc,
			       comm);
		}
		closedir(fdd);
		fds_unix_free(&ux);
	}
	closedir(proc);
	if (json) {
		jw_arr_end(&w);
		jw_obj_end(&w);
		jw_done(&w);
	}
	for (unsigned int i = 0; i < nstacks; i++)
		if (stacks[i].st)
			sluice_stack_close(stacks[i].st);
	return 0;
}
