// SPDX-License-Identifier: BSD-2-Clause
/*
 * sluice doctor --interface IF: what the path on an interface needs and
 * what Sluice will do there, in plain words (issue 14 item 4), for a user
 * with hardware to check a machine before running anything, and to send
 * back when something does not work.
 *
 * Facts come from where they are: the interface and its RDMA devices
 * from sysfs (/sys/class/net/IF, /sys/class/infiniband), the driver from
 * ethtool, IPoIB's mode and P_Key from ipoib's own attributes, enhanced
 * mode, flow steering, Q_Key and QPN from the module (SLUICE_IOC_IFINFO,
 * the facts sluice_link_device() decides on), device limits from
 * rdma-core (ibv_query_device), capabilities from /proc/self/status.  A
 * fact that cannot be read is said to be unknown, and why.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>

#include <uapi/sluice.h>

#include "cmds.h"
#include "json.h"

#define ARPHRD_ETHER_	1
#define ARPHRD_IB_	32
#define ARPHRD_LOOP_	772
#define CAP_NET_RAW_	13

/* Root of the sysfs trees (a test can point it elsewhere: SLUICE_SYSFS). */
static const char *sysroot(void)
{
	const char *r = getenv("SLUICE_SYSFS");

	return r && *r ? r : "/sys";
}

/* A sysfs file's first line, newline taken off; 0 or -errno. */
static int sysread(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int sysread(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int n;

	n = snprintf(path, sizeof(path), "%s/", sysroot());
	va_start(ap, fmt);
	vsnprintf(path + n, sizeof(path) - (size_t)n, fmt, ap);
	va_end(ap);
	return read_first_line(path, buf, len);
}

/* The driver's name: ethtool's, else the device's driver link; "" if none. */
static void driver_of(const char *ifname, char *out, size_t len)
{
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	char path[PATH_MAX], target[PATH_MAX];
	struct ifreq ifr;
	ssize_t n;
	int fd;

	out[0] = '\0';
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (char *)&di;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !ioctl(fd, SIOCETHTOOL, &ifr) && di.driver[0]) {
		snprintf(out, len, "%.32s", di.driver);
		close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/class/net/%s/device/driver", sysroot(), ifname);
	n = readlink(path, target, sizeof(target) - 1);
	if (n > 0) {
		const char *base;

		target[n] = '\0';
		base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
		snprintf(out, len, "%.60s", base);
	}
}

/* Link type, MTU and state from the kernel (this network namespace's,
 * whatever /sys shows); 0, or -errno (-ENODEV: no such interface). */
static int if_facts(const char *ifname, char *type, size_t tl, char *mtu, size_t ml, char *st,
		    size_t sl)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	snprintf(type, tl, "%u", (unsigned int)ifr.ifr_hwaddr.sa_family);
	snprintf(mtu, ml, "unknown");
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		snprintf(mtu, ml, "%d", ifr.ifr_mtu);
	snprintf(st, sl, "unknown");
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		snprintf(st, sl, "%s", !(ifr.ifr_flags & IFF_UP) ? "down" :
				       (ifr.ifr_flags & IFF_RUNNING) ? "up" : "up, no carrier");
	close(fd);
	return 0;
}

/* The RDMA devices (and ports) whose GIDs sit on netdev ifname (RoCE,
 * Soft-RoCE), or whose IPoIB interface it is: "rxe0 port 1", ...; count. */
static int rdma_devs_of(const char *ifname, bool ib, char out[][80], int max)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	if (ib) {
		/* IPoIB: the HCA is the interface's parent device. */
		snprintf(path, sizeof(path), "%s/class/net/%s/device/infiniband", sysroot(), ifname);
		dir = opendir(path);
		while (dir && n < max && (d = readdir(dir))) {
			char port[32];
			unsigned long p = 0;

			if (d->d_name[0] == '.')
				continue;
			/* ipoib sets dev_port to the port number less one. */
			if (!sysread(port, sizeof(port), "class/net/%s/dev_port", ifname))
				p = strtoul(port, NULL, 0);
			snprintf(out[n++], 80, "%.40s port %lu", d->d_name, p + 1);
		}
		if (dir)
			closedir(dir);
		return n;
	}
	snprintf(path, sizeof(path), "%s/class/infiniband", sysroot());
	dir = opendir(path);
	while (dir && n < max && (d = readdir(dir))) {
		for (int port = 1; port <= 2 && n < max; port++) {
			for (int g = 0; g < 4; g++) {
				char nd[IFNAMSIZ + 8];

				if (d->d_name[0] == '.' ||
				    sysread(nd, sizeof(nd), "class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d",
					    d->d_name, port, g) || strcmp(nd, ifname))
					continue;
				snprintf(out[n++], 80, "%.40s port %d", d->d_name, port);
				break;
			}
		}
	}
	if (dir)
		closedir(dir);
	return n;
}

/* CAP_NET_RAW in this process's set named ("CapEff", "CapPrm"): 1, 0, -1. */
static int has_cap(const char *set, int cap)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	int ret = -1;

	while (f && fgets(line, sizeof(line), f)) {
		size_t l = strlen(set);

		if (!strncmp(line, set, l) && line[l] == ':') {
			unsigned long long v = strtoull(line + l + 1, NULL, 16);

			ret = (int)((v >> cap) & 1);
			break;
		}
	}
	if (f)
		fclose(f);
	return ret;
}

/* The module's facts about ifindex: 0, or -errno (-ENOENT: no module). */
static int module_ifinfo(unsigned int ifindex, struct sluice_ifinfo *ii)
{
	int fd = open(SLUICE_DEVICE_PATH, O_RDWR | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	memset(ii, 0, sizeof(*ii));
	ii->size = sizeof(*ii);
	ii->ifindex = ifindex;
	if (ioctl(fd, SLUICE_IOC_IFINFO, ii))
		ret = -errno;
	close(fd);
	ii->name[sizeof(ii->name) - 1] = '\0';
	ii->ib_dev[sizeof(ii->ib_dev) - 1] = '\0';
	return ret;
}

/* What doctor found about one RDMA device's port. */
struct rdma_port {
	char dev[64];
	int port;
	char state[64], ll[64], rate[64];	/* "unknown" where unreadable */
	bool lim_ok;
	char lim_why[160];			/* why the limits are unknown */
	struct ibv_device_attr lim;
	bool mlx5;				/* has a flow steering mode */
	char devlink[96];			/* its devlink handle, "" if none */
	char fsm[32];				/* "dmfs", "smfs", "unknown" */
	char fsm_why[160];			/* why unknown */
};

/* Everything doctor says, gathered before it is printed as text or JSON. */
struct facts {
	const char *ifname;
	char type_s[32], mtu_s[32], oper[32], drv[64];
	int type;
	bool ib, loop, ether, any_rdma;
	int ndevs;
	struct rdma_port dev[4];
	char mode[32], pkey[32], enh[16];	/* IPoIB only */
	char parent[IFNAMSIZ];			/* a P_Key child's parent, else "" */
	int raw_eff, raw_prm;			/* 1, 0, -1 unknown */
	int mret;				/* the module's IFINFO: 0 or -errno */
	struct sluice_ifinfo ii;
	const char *path;			/* "loopback", "none", "unknown", "kring", "enhanced" */
	char path_text[400];
};

/* Device limits from rdma-core, for an RDMA device named dev. */
static void read_limits(struct rdma_port *p)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	errno = 0;
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), p->dev))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		snprintf(p->lim_why, sizeof(p->lim_why), "rdma-core cannot open %s: %s", p->dev,
			 errno ? strerror(errno) : "not listed");
		return;
	}
	if (ibv_query_device(ctx, &p->lim))
		snprintf(p->lim_why, sizeof(p->lim_why), "ibv_query_device on %s failed", p->dev);
	else
		p->lim_ok = true;
	ibv_close_device(ctx);
}

/* The last component of the symbolic link at sysfs path rel, or -errno. */
static int link_base(char *out, size_t len, const char *rel)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", sysroot(), rel);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return -errno;
	target[n] = '\0';
	base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	if (strlen(base) >= len)
		return -ENAMETOOLONG;
	memcpy(out, base, strlen(base) + 1);
	return 0;
}

/*
 * mlx5's flow steering mode: the devlink runtime parameter
 * flow_steering_mode ("dmfs": rules made by firmware, "smfs": by the
 * driver), of the device's bus device (Documentation/networking/devlink/
 * mlx5.rst; mlx5_core has no module parameter or sysfs file for it).
 */
static void read_fsm(struct rdma_port *p)
{
	char rel[PATH_MAX], drv[64], bus[32], bdev[64];
	int ret;

	snprintf(rel, sizeof(rel), "class/infiniband/%s/device/driver", p->dev);
	p->mlx5 = !strncmp(p->dev, "mlx5", 4) ||
		  (!link_base(drv, sizeof(drv), rel) && !strcmp(drv, "mlx5_core"));
	if (!p->mlx5)
		return;
	snprintf(p->fsm, sizeof(p->fsm), "unknown");
	snprintf(rel, sizeof(rel), "class/infiniband/%s/device", p->dev);
	if (link_base(bdev, sizeof(bdev), rel)) {
		snprintf(p->fsm_why, sizeof(p->fsm_why), "no bus device for %s in sysfs", p->dev);
		return;
	}
	snprintf(rel, sizeof(rel), "class/infiniband/%s/device/subsystem", p->dev);
	if (link_base(bus, sizeof(bus), rel))
		snprintf(bus, sizeof(bus), "pci");
	snprintf(p->devlink, sizeof(p->devlink), "%s/%s", bus, bdev);
	ret = devlink_param_str(bus, bdev, "flow_steering_mode", p->fsm, sizeof(p->fsm));
	if (!ret)
		return;
	snprintf(p->fsm, sizeof(p->fsm), "unknown");
	snprintf(p->fsm_why, sizeof(p->fsm_why), "%s",
		 ret == -ENOENT ? "this kernel has no devlink" :
		 ret == -ENODEV ? "devlink knows no such device" :
		 ret == -EINVAL || ret == -EOPNOTSUPP || ret == -ENODATA ?
		 "the driver has no flow_steering_mode parameter" : strerror(-ret));
}

static void read_port(struct rdma_port *p, const char *devport)
{
	memset(p, 0, sizeof(*p));
	p->port = 1;
	if (sscanf(devport, "%63s port %d", p->dev, &p->port) < 1)
		return;
	if (sysread(p->state, sizeof(p->state), "class/infiniband/%s/ports/%d/state", p->dev,
		    p->port))
		snprintf(p->state, sizeof(p->state), "unknown");
	if (sysread(p->ll, sizeof(p->ll), "class/infiniband/%s/ports/%d/link_layer", p->dev,
		    p->port))
		snprintf(p->ll, sizeof(p->ll), "unknown");
	if (sysread(p->rate, sizeof(p->rate), "class/infiniband/%s/ports/%d/rate", p->dev,
		    p->port))
		snprintf(p->rate, sizeof(p->rate), "unknown");
	read_limits(p);
	read_fsm(p);
}

/* Is there any RDMA device at all? */
static bool any_rdma(void)
{
	char path[PATH_MAX];
	struct dirent *d;
	bool any = false;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/class/infiniband", sysroot());
	dir = opendir(path);
	while (dir && !any && (d = readdir(dir)))
		any = d->d_name[0] != '.';
	if (dir)
		closedir(dir);
	return any;
}

static bool is_softroce(const struct rdma_port *p)
{
	return !strncmp(p->dev, "rxe", 3);
}

/* What Sluice will do on the interface: f->path, and in words. */
static void decide_path(struct facts *f)
{
	const struct sluice_ifinfo *ii = &f->ii;
	char *t = f->path_text;
	size_t tl = sizeof(f->path_text);

	f->path = "kring";
	if (f->loop) {
		f->path = "loopback";
		snprintf(t, tl, "nothing to set up: each stack keeps its loopback traffic to itself, "
			 "with no device and no module.");
	} else if (f->mret == -ENOENT) {
		f->path = "none";
		snprintf(t, tl, "without the module, no stack runs on %s: programs under sluice run "
			 "use a stack in /dev/shm (its own loopback), a TAP device (--tap), or keep "
			 "their sockets in the kernel. Load sluice.ko (modprobe sluice) for the kring "
			 "path.", f->ifname);
	} else if (f->mret) {
		f->path = "unknown";
		snprintf(t, tl, "unknown: the module would not describe %s.", f->ifname);
	} else if (ii->ib_flags & SLUICE_IB_PKEY_ABSENT) {
		f->path = "none";
		snprintf(t, tl, "nothing: its P_Key 0x%04x is not in %s port %u's P_Key table, so "
			 "ipoib keeps %s down (no carrier) until the subnet manager adds it; "
			 "programs under sluice run keep their sockets in the kernel.", ii->pkey,
			 ii->ib_dev, ii->ib_port, f->ifname);
	} else if (!(ii->ib_flags & SLUICE_IB_IPOIB)) {
		snprintf(t, tl, "the kring path: the module steers the packets of each stack's "
			 "ports on %s into rings the stack reads, and sends from rings; no verbs.%s",
			 f->ifname, f->ndevs ? " (The RDMA device on it runs verbs only through the "
			 "library's plain-UD link, sluice_link_verbs(); sluice run does not use it.)" :
			 "");
	} else if (ii->ib_flags & SLUICE_IB_CONNECTED) {
		snprintf(t, tl, "the kring path (connected mode): enhanced IPoIB needs datagram "
			 "mode (echo datagram > /sys/class/net/%s/mode).", f->ifname);
	} else if (!(ii->ib_flags & SLUICE_IB_SOURCE_QPN)) {
		snprintf(t, tl, "the kring path (legacy IPoIB): enhanced IPoIB needs mlx5 with its "
			 "IPoIB offloads and ipoib_enhanced=1.");
	} else if (!(ii->ib_flags & SLUICE_IB_FLOW_STEER)) {
		snprintf(t, tl, "the kring path: %s offers no flow steering.", ii->ib_dev);
	} else if (ii->qkey & 0x80000000u) {
		snprintf(t, tl, "the kring path: the broadcast group's Q_Key 0x%08x is a controlled "
			 "one, which a source-QPN QP cannot send with.", ii->qkey);
	} else if (f->raw_eff != 1 && f->raw_prm != 1) {
		snprintf(t, tl, "the kring path, because this user lacks CAP_NET_RAW (the trial "
			 "flow rule would be refused); with it: enhanced IPoIB.");
	} else {
		f->path = "enhanced";
		snprintf(t, tl, "enhanced IPoIB: a source-QPN QP per process sends as %s and "
			 "receives its connections through 5-tuple flow rules; listeners, "
			 "unconnected datagrams, ARP and everything else through the module's "
			 "rings.", f->ifname);
	}
}

static void gather(struct facts *f)
{
	char devs[4][80];
	unsigned int ifindex;

	f->type = atoi(f->type_s);
	ifindex = if_nametoindex(f->ifname);
	f->ib = f->type == ARPHRD_IB_;
	f->loop = f->type == ARPHRD_LOOP_;
	f->ether = f->type == ARPHRD_ETHER_;
	driver_of(f->ifname, f->drv, sizeof(f->drv));
	/*
	 * A P_Key child made through rtnetlink (ip link add ... type ipoib)
	 * has no device link, and no mode, pkey or parent file in sysfs
	 * (ipoib's __ipoib_vlan_add() makes them for the sysfs create_child
	 * only): its HCA is its parent's, its iflink.
	 */
	f->parent[0] = '\0';
	if (f->ib && !sysread(devs[0], sizeof(devs[0]), "class/net/%s/iflink", f->ifname)) {
		unsigned int link = (unsigned int)strtoul(devs[0], NULL, 0);

		if (link && link != ifindex && !if_indextoname(link, f->parent))
			f->parent[0] = '\0';
	}
	f->ndevs = rdma_devs_of(f->parent[0] ? f->parent : f->ifname, f->ib, devs, 4);
	f->any_rdma = any_rdma();
	for (int i = 0; i < f->ndevs; i++)
		read_port(&f->dev[i], devs[i]);
	if (f->ib) {
		if (sysread(f->mode, sizeof(f->mode), "class/net/%s/mode", f->ifname))
			snprintf(f->mode, sizeof(f->mode), "unknown");
		if (sysread(f->pkey, sizeof(f->pkey), "class/net/%s/pkey", f->ifname))
			snprintf(f->pkey, sizeof(f->pkey), "unknown");
		if (sysread(f->enh, sizeof(f->enh), "module/ib_ipoib/parameters/ipoib_enhanced"))
			snprintf(f->enh, sizeof(f->enh), "unknown");
	}
	f->raw_eff = has_cap("CapEff", CAP_NET_RAW_);
	f->raw_prm = has_cap("CapPrm", CAP_NET_RAW_);
	if (access(SLUICE_DEVICE_PATH, F_OK))
		f->mret = -ENOENT;
	else
		f->mret = ifindex ? module_ifinfo(ifindex, &f->ii) : -ENODEV;
	/* What sysfs lacks for a child, as ipoib tells it (IFLA_IPOIB_*)
	 * through the module. */
	if (f->ib && !f->mret && (f->ii.ib_flags & SLUICE_IB_IPOIB)) {
		if (!strcmp(f->mode, "unknown"))
			snprintf(f->mode, sizeof(f->mode), "%s", (f->ii.ib_flags & SLUICE_IB_CONNECTED) ?
				 "connected" : "datagram");
		if (!strcmp(f->pkey, "unknown"))
			snprintf(f->pkey, sizeof(f->pkey), "0x%04x", f->ii.pkey);
	}
	decide_path(f);
}

static void print_text(const struct facts *f)
{
	const struct sluice_ifinfo *ii = &f->ii;

	printf("  kind: %s (link type %d), MTU %s, state %s, driver %s\n",
	       f->ib ? "IP over InfiniBand" : f->loop ? "loopback" : f->ether ? "Ethernet" : "other",
	       f->type, f->mtu_s, f->oper, f->drv[0] ? f->drv : "none");
	if (!f->any_rdma)
		printf("  no RDMA device on this machine (no InfiniBand HCA, RoCE NIC or "
		       "Soft-RoCE device in %s/class/infiniband): no verbs path here\n", sysroot());
	else if (!f->ndevs)
		printf("  RDMA devices on it: none%s\n",
		       f->ib ? " found (the IPoIB interface names no HCA in sysfs)" : "");
	for (int i = 0; i < f->ndevs; i++) {
		const struct rdma_port *p = &f->dev[i];
		const struct ibv_device_attr *a = &p->lim;

		if (!p->dev[0])
			continue;
		printf("  RDMA device: %s port %d%s: link layer %s, state %s, rate %s\n", p->dev,
		       p->port, is_softroce(p) ?
		       " (Soft-RoCE: rdma_rxe, verbs in software over Ethernet)" : "",
		       p->ll, p->state, p->rate);
		if (!p->lim_ok)
			printf("  device limits: unknown (%s)\n", p->lim_why);
		else
			printf("  device limits (%s, firmware %.64s): %d QPs of up to %d WRs and %d "
			       "SGEs, %d CQs of up to %d entries, %d multicast groups\n", p->dev,
			       a->fw_ver, a->max_qp, a->max_qp_wr, a->max_sge, a->max_cq,
			       a->max_cqe, a->max_mcast_grp);
		if (p->mlx5)
			printf("  flow steering mode (%s%s%s): %s%s%s%s\n", p->dev,
			       p->devlink[0] ? ", devlink " : "", p->devlink, p->fsm,
			       !strcmp(p->fsm, "dmfs") ? " (device-managed: rules made by firmware)" :
			       !strcmp(p->fsm, "smfs") ? " (software-managed: rules made by the driver)" :
			       "", p->fsm_why[0] ? ": " : "", p->fsm_why);
	}
	if (f->ib)
		printf("  IPoIB mode: %s (enhanced IPoIB is datagram only), P_Key %s%s%s, "
		       "ipoib_enhanced=%s (the ipoib module's switch)\n", f->mode, f->pkey,
		       f->parent[0] ? ", a child of " : "", f->parent, f->enh);
	printf("  CAP_NET_RAW: %s\n",
	       f->raw_eff == 1 ? "yes (flow rules can be made)" :
	       f->raw_prm == 1 ? "permitted, not effective (sluice run raises it as ambient)" :
	       "no: flow rules (enhanced IPoIB) would be refused; give it with "
	       "setcap cap_net_raw+p on the sluice tool, then use sluice run");
	if (f->mret == -ENOENT)
		printf("  module: not loaded (%s is absent): no stack can run on an interface\n",
		       SLUICE_DEVICE_PATH);
	else if (f->mret)
		printf("  module: interface facts refused: %s\n", strerror(-f->mret));
	else if (ii->ib_flags & SLUICE_IB_IPOIB)
		printf("  module: IPoIB on %s port %u, QPN 0x%06x, Q_Key 0x%08x%s, UD MTU %u; "
		       "%s, %s, %s, %s; P_Key 0x%04x %s\n", ii->ib_dev, ii->ib_port, ii->qpn,
		       ii->qkey, (ii->ib_flags & SLUICE_IB_QKEY_SA) ? "" : " (not read from the SA)",
		       ii->ud_mtu,
		       (ii->ib_flags & SLUICE_IB_CONNECTED) ? "connected mode" : "datagram mode",
		       (ii->ib_flags & SLUICE_IB_SOURCE_QPN) ? "enhanced (source-QPN QPs)" :
							       "not enhanced",
		       (ii->ib_flags & SLUICE_IB_FLOW_STEER) ? "flow steering" : "no flow steering",
		       (ii->ib_flags & SLUICE_IB_UD_CSUM) ? "checksum offload" :
							    "no checksum offload",
		       ii->pkey, (ii->ib_flags & SLUICE_IB_PKEY_ABSENT) ?
		       "(not in the port's P_Key table)" : "(in the port's P_Key table)");
	else
		printf("  module: loaded; the interface is not IPoIB to it\n");
	printf("What Sluice will do on %s:\n  %s\n", f->ifname, f->path_text);
}

/* A number sysfs gave as text: the int, or null when it is not one. */
static void jw_num_str(struct jw *w, const char *key, const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s && !*end)
		jw_i64(w, key, v);
	else
		jw_null(w, key);
}

static void jw_cap(struct jw *w, const char *key, int v)
{
	if (v < 0)
		jw_null(w, key);
	else
		jw_bool(w, key, v == 1);
}

/* The same facts as one JSON document (schema: tools/README.md). */
static void print_json(const struct facts *f)
{
	const struct sluice_ifinfo *ii = &f->ii;
	bool ipoib = !f->mret && (ii->ib_flags & SLUICE_IB_IPOIB);
	struct jw w;

	jw_init(&w, stdout);
	jw_obj(&w, NULL);
	jw_str(&w, "interface", f->ifname);
	jw_bool(&w, "found", true);
	jw_str(&w, "kind", f->ib ? "ipoib" : f->loop ? "loopback" : f->ether ? "ethernet" : "other");
	jw_i64(&w, "link_type", f->type);
	jw_num_str(&w, "mtu", f->mtu_s);
	jw_str(&w, "state", f->oper);
	jw_str(&w, "driver", f->drv[0] ? f->drv : NULL);
	jw_bool(&w, "rdma_present", f->any_rdma);
	jw_arr(&w, "rdma_devices");
	for (int i = 0; i < f->ndevs; i++) {
		const struct rdma_port *p = &f->dev[i];

		if (!p->dev[0])
			continue;
		jw_obj(&w, NULL);
		jw_str(&w, "device", p->dev);
		jw_i64(&w, "port", p->port);
		jw_bool(&w, "soft_roce", is_softroce(p));
		jw_str(&w, "link_layer", p->ll);
		jw_str(&w, "state", p->state);
		jw_str(&w, "rate", p->rate);
		if (p->lim_ok) {
			jw_obj(&w, "limits");
			jw_str(&w, "firmware", p->lim.fw_ver);
			jw_i64(&w, "max_qp", p->lim.max_qp);
			jw_i64(&w, "max_qp_wr", p->lim.max_qp_wr);
			jw_i64(&w, "max_sge", p->lim.max_sge);
			jw_i64(&w, "max_cq", p->lim.max_cq);
			jw_i64(&w, "max_cqe", p->lim.max_cqe);
			jw_i64(&w, "max_mcast_grp", p->lim.max_mcast_grp);
			jw_obj_end(&w);
			jw_null(&w, "limits_error");
		} else {
			jw_null(&w, "limits");
			jw_str(&w, "limits_error", p->lim_why);
		}
		jw_str(&w, "devlink", p->devlink[0] ? p->devlink : NULL);
		jw_str(&w, "flow_steering_mode", p->mlx5 ? p->fsm : NULL);
		jw_str(&w, "flow_steering_error", p->fsm_why[0] ? p->fsm_why : NULL);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	if (f->ib) {
		jw_obj(&w, "ipoib");
		jw_str(&w, "mode", f->mode);
		jw_str(&w, "pkey", f->pkey);
		jw_str(&w, "ipoib_enhanced", f->enh);
		jw_str(&w, "parent", f->parent[0] ? f->parent : NULL);
		jw_obj_end(&w);
	} else {
		jw_null(&w, "ipoib");
	}
	jw_obj(&w, "cap_net_raw");
	jw_cap(&w, "effective", f->raw_eff);
	jw_cap(&w, "permitted", f->raw_prm);
	jw_obj_end(&w);
	jw_obj(&w, "module");
	jw_bool(&w, "loaded", f->mret != -ENOENT);
	jw_str(&w, "error", f->mret == -ENOENT ? "not loaded" : f->mret ? strerror(-f->mret) :
		   NULL);
	jw_bool(&w, "ipoib", ipoib);
	if (ipoib) {
		jw_str(&w, "ib_device", ii->ib_dev);
		jw_i64(&w, "ib_port", ii->ib_port);
		jw_i64(&w, "pkey", ii->pkey);
		jw_i64(&w, "pkey_index", ii->pkey_index);
		jw_bool(&w, "pkey_in_table", !(ii->ib_flags & SLUICE_IB_PKEY_ABSENT));
		jw_i64(&w, "qpn", ii->qpn);
		jw_i64(&w, "qkey", ii->qkey);
		jw_bool(&w, "qkey_from_sa", ii->ib_flags & SLUICE_IB_QKEY_SA);
		jw_i64(&w, "ud_mtu", ii->ud_mtu);
		jw_bool(&w, "connected", ii->ib_flags & SLUICE_IB_CONNECTED);
		jw_bool(&w, "enhanced", ii->ib_flags & SLUICE_IB_SOURCE_QPN);
		jw_bool(&w, "flow_steering", ii->ib_flags & SLUICE_IB_FLOW_STEER);
		jw_bool(&w, "checksum_offload", ii->ib_flags & SLUICE_IB_UD_CSUM);
	} else {
		static const char *const none[] = {
			"ib_device", "ib_port", "pkey", "pkey_index", "pkey_in_table", "qpn",
			"qkey", "qkey_from_sa", "ud_mtu",
			"connected", "enhanced", "flow_steering", "checksum_offload",
		};

		for (unsigned int i = 0; i < sizeof(none) / sizeof(none[0]); i++)
			jw_null(&w, none[i]);
	}
	jw_obj_end(&w);
	jw_obj(&w, "path");
	jw_str(&w, "kind", f->path);
	jw_str(&w, "text", f->path_text);
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_done(&w);
}

/* No interface ifname: the reason, as text or as a document. */
static int not_found(const char *ifname, bool json, const char *why)
{
	struct jw w;

	if (!json) {
		printf("  %s\n", why);
		return 1;
	}
	jw_init(&w, stdout);
	jw_obj(&w, NULL);
	jw_str(&w, "interface", ifname);
	jw_bool(&w, "found", false);
	jw_str(&w, "error", why);
	jw_obj_end(&w);
	jw_done(&w);
	return 1;
}

static void usage_doctor(FILE *f)
{
	fprintf(f, "usage: sluice doctor [--json] --interface IF\n"
		   "  checks what Sluice's path on IF needs and says what Sluice will do there\n");
}

int cmd_doctor(int argc, char **argv)
{
	struct facts f;
	bool json = false;

	memset(&f, 0, sizeof(f));
	for (int i = 0; i < argc; i++) {
		if ((!strcmp(argv[i], "--interface") || !strcmp(argv[i], "-i")) && i + 1 < argc) {
			f.ifname = argv[++i];
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage_doctor(stdout);
			return 0;
		} else {
			usage_doctor(stderr);
			return 2;
		}
	}
	if (!f.ifname || !*f.ifname || strlen(f.ifname) >= IFNAMSIZ || strchr(f.ifname, '/')) {
		usage_doctor(stderr);
		return 2;
	}
	if (!json)
		printf("sluice doctor: interface %s\n", f.ifname);
	if (!if_facts(f.ifname, f.type_s, sizeof(f.type_s), f.mtu_s, sizeof(f.mtu_s), f.oper,
		      sizeof(f.oper))) {
		/* From the kernel of this network namespace. */
	} else if (sysread(f.type_s, sizeof(f.type_s), "class/net/%s/type", f.ifname)) {
		char dev[80], why[256];

		/* An RDMA device's name given (rxe0, mlx5_0): say which
		 * interfaces it sits on. */
		if (!sysread(dev, sizeof(dev), "class/infiniband/%s/ports/1/gid_attrs/ndevs/0",
			     f.ifname)) {
			snprintf(why, sizeof(why), "%s is an RDMA device, not a network interface: "
				 "it sits on %s.%sRun sluice doctor --interface %s.", f.ifname, dev,
				 json ? " " : "\n  ", dev);
			return not_found(f.ifname, json, why);
		}
		snprintf(why, sizeof(why), "there is no network interface %s in this network "
			 "namespace.", f.ifname);
		return not_found(f.ifname, json, why);
	} else {
		/* Only sysfs knows it (another namespace's sysfs, or a test's). */
		if (sysread(f.mtu_s, sizeof(f.mtu_s), "class/net/%s/mtu", f.ifname))
			snprintf(f.mtu_s, sizeof(f.mtu_s), "unknown");
		if (sysread(f.oper, sizeof(f.oper), "class/net/%s/operstate", f.ifname))
			snprintf(f.oper, sizeof(f.oper), "unknown");
	}
	gather(&f);
	if (json)
		print_json(&f);
	else
		print_text(&f);
	return 0;
}
