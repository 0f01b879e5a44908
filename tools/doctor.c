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

/* Device limits from rdma-core, for an RDMA device named dev. */
static void print_limits(const char *dev)
{
	struct ibv_device **list;
	struct ibv_device_attr a;
	struct ibv_context *ctx = NULL;
	int n = 0;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		printf("  device limits: unknown (rdma-core cannot open %s: %s)\n", dev,
		       errno ? strerror(errno) : "not listed");
		return;
	}
	if (ibv_query_device(ctx, &a)) {
		printf("  device limits: unknown (ibv_query_device on %s failed)\n", dev);
	} else {
		printf("  device limits (%s, firmware %.64s): %d QPs of up to %d WRs and %d SGEs, "
		       "%d CQs of up to %d entries, %d multicast groups\n", dev, a.fw_ver,
		       a.max_qp, a.max_qp_wr, a.max_sge, a.max_cq, a.max_cqe, a.max_mcast_grp);
	}
	ibv_close_device(ctx);
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

static void print_port(const char *devport)
{
	char dev[64], st[64], ll[64], rate[64];
	int port = 1;

	if (sscanf(devport, "%63s port %d", dev, &port) < 1)
		return;
	if (sysread(st, sizeof(st), "class/infiniband/%s/ports/%d/state", dev, port))
		snprintf(st, sizeof(st), "unknown");
	if (sysread(ll, sizeof(ll), "class/infiniband/%s/ports/%d/link_layer", dev, port))
		snprintf(ll, sizeof(ll), "unknown");
	if (sysread(rate, sizeof(rate), "class/infiniband/%s/ports/%d/rate", dev, port))
		snprintf(rate, sizeof(rate), "unknown");
	printf("  RDMA device: %s port %d%s: link layer %s, state %s, rate %s\n", dev, port,
	       !strncmp(dev, "rxe", 3) ? " (Soft-RoCE: rdma_rxe, verbs in software over Ethernet)" :
	       "", ll, st, rate);
	print_limits(dev);
}

static void usage_doctor(FILE *f)
{
	fprintf(f, "usage: sluice doctor --interface IF\n"
		   "  checks what Sluice's path on IF needs and says what Sluice will do there\n");
}

int cmd_doctor(int argc, char **argv)
{
	char type_s[32], mtu_s[32], oper[32], drv[64], mode[32], pkey[32], enh[16];
	char devs[4][80];
	const char *ifname = NULL;
	struct sluice_ifinfo ii;
	unsigned int ifindex;
	int type, ndevs, mret, raw_eff, raw_prm;
	bool ib, loop, ether;

	for (int i = 0; i < argc; i++) {
		if ((!strcmp(argv[i], "--interface") || !strcmp(argv[i], "-i")) && i + 1 < argc) {
			ifname = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage_doctor(stdout);
			return 0;
		} else {
			usage_doctor(stderr);
			return 2;
		}
	}
	if (!ifname || !*ifname || strlen(ifname) >= IFNAMSIZ || strchr(ifname, '/')) {
		usage_doctor(stderr);
		return 2;
	}
	printf("sluice doctor: interface %s\n", ifname);
	if (!if_facts(ifname, type_s, sizeof(type_s), mtu_s, sizeof(mtu_s), oper, sizeof(oper))) {
		/* From the kernel of this network namespace. */
	} else if (sysread(type_s, sizeof(type_s), "class/net/%s/type", ifname)) {
		char dev[80];

		/* An RDMA device's name given (rxe0, mlx5_0): say which
		 * interfaces it sits on. */
		if (!sysread(dev, sizeof(dev), "class/infiniband/%s/ports/1/gid_attrs/ndevs/0",
			     ifname)) {
			printf("  %s is an RDMA device, not a network interface: it sits on %s.\n"
			       "  Run sluice doctor --interface %s.\n", ifname, dev, dev);
			return 1;
		}
		printf("  there is no network interface %s in this network namespace.\n", ifname);
		return 1;
	} else {
		/* Only sysfs knows it (another namespace's sysfs, or a test's). */
		if (sysread(mtu_s, sizeof(mtu_s), "class/net/%s/mtu", ifname))
			snprintf(mtu_s, sizeof(mtu_s), "unknown");
		if (sysread(oper, sizeof(oper), "class/net/%s/operstate", ifname))
			snprintf(oper, sizeof(oper), "unknown");
	}
	type = atoi(type_s);
	ifindex = if_nametoindex(ifname);
	ib = type == ARPHRD_IB_;
	loop = type == ARPHRD_LOOP_;
	ether = type == ARPHRD_ETHER_;
	driver_of(ifname, drv, sizeof(drv));
	printf("  kind: %s (link type %d), MTU %s, state %s, driver %s\n",
	       ib ? "IP over InfiniBand" : loop ? "loopback" : ether ? "Ethernet" : "other",
	       type, mtu_s, oper, drv[0] ? drv : "none");

	ndevs = rdma_devs_of(ifname, ib, devs, 4);
	if (!any_rdma())
		printf("  no RDMA device on this machine (no InfiniBand HCA, RoCE NIC or "
		       "Soft-RoCE device in %s/class/infiniband): no verbs path here\n", sysroot());
	else if (!ndevs)
		printf("  RDMA devices on it: none%s\n",
		       ib ? " found (the IPoIB interface names no HCA in sysfs)" : "");
	for (int i = 0; i < ndevs; i++)
		print_port(devs[i]);

	if (ib) {
		if (sysread(mode, sizeof(mode), "class/net/%s/mode", ifname))
			snprintf(mode, sizeof(mode), "unknown");
		if (sysread(pkey, sizeof(pkey), "class/net/%s/pkey", ifname))
			snprintf(pkey, sizeof(pkey), "unknown");
		if (sysread(enh, sizeof(enh), "module/ib_ipoib/parameters/ipoib_enhanced"))
			snprintf(enh, sizeof(enh), "unknown");
		printf("  IPoIB mode: %s (enhanced IPoIB is datagram only), P_Key %s, "
		       "ipoib_enhanced=%s (the ipoib module's switch)\n", mode, pkey, enh);
	}

	raw_eff = has_cap("CapEff", CAP_NET_RAW_);
	raw_prm = has_cap("CapPrm", CAP_NET_RAW_);
	printf("  CAP_NET_RAW: %s\n",
	       raw_eff == 1 ? "yes (flow rules can be made)" :
	       raw_prm == 1 ? "permitted, not effective (sluice run raises it as ambient)" :
	       "no: flow rules (enhanced IPoIB) would be refused; give it with "
	       "setcap cap_net_raw+p on the sluice tool, then use sluice run");

	if (access(SLUICE_DEVICE_PATH, F_OK))
		mret = -ENOENT;
	else
		mret = ifindex ? module_ifinfo(ifindex, &ii) : -ENODEV;
	if (mret == -ENOENT)
		printf("  module: not loaded (%s is absent): no stack can run on an interface\n",
		       SLUICE_DEVICE_PATH);
	else if (mret)
		printf("  module: interface facts refused: %s\n", strerror(-mret));
	else if (ii.ib_flags & SLUICE_IB_IPOIB)
		printf("  module: IPoIB on %s port %u, QPN 0x%06x, Q_Key 0x%08x%s, UD MTU %u; "
		       "%s, %s, %s, %s\n", ii.ib_dev, ii.ib_port, ii.qpn, ii.qkey,
		       (ii.ib_flags & SLUICE_IB_QKEY_SA) ? "" : " (not read from the SA)", ii.ud_mtu,
		       (ii.ib_flags & SLUICE_IB_CONNECTED) ? "connected mode" : "datagram mode",
		       (ii.ib_flags & SLUICE_IB_SOURCE_QPN) ? "enhanced (source-QPN QPs)" :
							      "not enhanced",
		       (ii.ib_flags & SLUICE_IB_FLOW_STEER) ? "flow steering" : "no flow steering",
		       (ii.ib_flags & SLUICE_IB_UD_CSUM) ? "checksum offload" : "no checksum offload");
	else
		printf("  module: loaded; the interface is not IPoIB to it\n");

	printf("What Sluice will do on %s:\n", ifname);
	if (loop) {
		printf("  nothing to set up: each stack keeps its loopback traffic to itself, "
		       "with no device and no module.\n");
	} else if (mret == -ENOENT) {
		printf("  without the module, no stack runs on %s: programs under sluice run use "
		       "a stack in /dev/shm (its own loopback), a TAP device (--tap), or keep their "
		       "sockets in the kernel. Load sluice.ko (modprobe sluice) for the kring path.\n",
		       ifname);
	} else if (mret) {
		printf("  unknown: the module would not describe %s.\n", ifname);
	} else if (!(ii.ib_flags & SLUICE_IB_IPOIB)) {
		printf("  the kring path: the module steers the packets of each stack's ports on "
		       "%s into rings the stack reads, and sends from rings; no verbs.%s\n", ifname,
		       ndevs ? " (The RDMA device on it runs verbs only through the library's "
			       "plain-UD link, sluice_link_verbs(); sluice run does not use it.)" : "");
	} else if (ii.ib_flags & SLUICE_IB_CONNECTED) {
		printf("  the kring path (connected mode): enhanced IPoIB needs datagram mode "
		       "(echo datagram > /sys/class/net/%s/mode).\n", ifname);
	} else if (!(ii.ib_flags & SLUICE_IB_SOURCE_QPN)) {
		printf("  the kring path (legacy IPoIB): enhanced IPoIB needs mlx5 with its IPoIB "
		       "offloads and ipoib_enhanced=1.\n");
	} else if (!(ii.ib_flags & SLUICE_IB_FLOW_STEER)) {
		printf("  the kring path: %s offers no flow steering.\n", ii.ib_dev);
	} else if (ii.qkey & 0x80000000u) {
		printf("  the kring path: the broadcast group's Q_Key 0x%08x is a controlled one, "
		       "which a source-QPN QP cannot send with.\n", ii.qkey);
	} else if (raw_eff != 1 && raw_prm != 1) {
		printf("  the kring path, because this user lacks CAP_NET_RAW (the trial flow rule "
		       "would be refused); with it: enhanced IPoIB.\n");
	} else {
		printf("  enhanced IPoIB: a source-QPN QP per process sends as %s and receives its "
		       "connections through 5-tuple flow rules; listeners, unconnected datagrams, "
		       "ARP and everything else through the module's rings.\n", ifname);
	}
	return 0;
}
