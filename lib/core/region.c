// SPDX-License-Identifier: BSD-2-Clause
/*
 * The stack region: layout, creation and attachment by name.  With the
 * kernel module loaded the module allocates and pins the region and hands
 * out a stack fd to map (it lives while any fd or mapping does); without
 * it, or with SLUICE_SHM=1 in the environment, a region is the file
 * /dev/shm/sluice-NAME (it lives until sluice_stack_destroy()).  Attaching
 * checks every offset and size before anything is used, since another
 * process may have written anything there.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"
#include "core/core.h"

#define SHM_DIR		"/dev/shm/sluice-"
#define ALIGN_UP(x, a)	(((x) + (a) - 1) & ~((uint64_t)(a) - 1))

static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= SLUICE_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return false;
	return name[0] != '.';
}

int sl_region_path(const char *name, char *buf, size_t len)
{
	if (!name_ok(name))
		return -EINVAL;
	snprintf(buf, len, SHM_DIR "%s", name);
	return 0;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 64;

	while (p < v)
		p <<= 1;
	return p;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Default socket slots (sluice_stack_config): a region in /dev/shm, one
 * in the module. */
#define SL_SOCKETS_SHM		262144
#define SL_SOCKETS_PINNED	8192
/*
 * Default packet buffers of a region in /dev/shm (a module stack keeps
 * the layout's 4,096: the module pins its region).  The pool is every
 * connection's send and receive memory: 4,096 buffers (8 MiB) held the
 * responses in flight of about 1,300 connections of nginx with 10,000
 * keep-alive clients, and the rest waited on windows the pool had shut
 * (issue 23).  A buffer's data page is committed when first used (the
 * free list hands out the most recently freed first); its 24 bytes of
 * metadata are written at creation (1.5 MiB).
 */
#define SL_BUFS_SHM		65536

/* Fill the configuration and offsets of r from cfg; returns the size. */
static int64_t layout(struct sluice_region *r, const struct sluice_stack_config *cfg)
{
	uint64_t off;

	r->max_sockets = cfg->max_sockets ? cfg->max_sockets : 1024;
	r->n_bufs = cfg->n_bufs ? cfg->n_bufs : 4096;
	r->buf_size = cfg->buf_size ? cfg->buf_size : 2048;
	r->mtu = cfg->mtu ? cfg->mtu : 1500;
	if (r->max_sockets > (1u << 20) || r->n_bufs < 16 || r->n_bufs > (1u << 22) ||
	    !is_pow2(r->buf_size) || r->buf_size < 1024 || r->buf_size > 65536 ||
	    r->mtu < 576 || r->mtu + SL_HEADROOM > r->buf_size)
		return -EINVAL;
	r->sock_size = SL_SOCK_SIZE;
	r->hash_buckets = pow2_at_least(r->max_sockets);

	/* The module's header, then ours (core.h, struct sl_region). */
	off = ALIGN_UP(SLUICE_REGION_LIB_OFF + sizeof(struct sl_region), 64);
	r->sock_off = off;
	off += (uint64_t)r->max_sockets * r->sock_size;
	r->hash_off = ALIGN_UP(off, 64);
	off = r->hash_off + 2ull * r->hash_buckets * sizeof(uint32_t);
	r->wheel_off = ALIGN_UP(off, 64);
	off = r->wheel_off + SLUICE_WHEEL_SLOTS * sizeof(uint32_t);
	/* TIME-WAIT entries and their two hashes: the library's own, in a
	 * gap of the module's layout (tw_area()). */
	off = ALIGN_UP(off, 64) + (uint64_t)sl_tw_entries(r->max_sockets) * (SL_TW_SIZE + 8);
	/* IPv6 peers' addresses and their hash, after them (v6tok_area()). */
	off = ALIGN_UP(off, 64) + (uint64_t)sl_v6tok_entries(r->max_sockets) * (16 + 8);
	r->bufmeta_off = ALIGN_UP(off, 64);
	off = r->bufmeta_off + (uint64_t)r->n_bufs * sizeof(struct sluice_buf);
	r->bufdata_off = ALIGN_UP(off, 4096);
	off = r->bufdata_off + (uint64_t)r->n_bufs * r->buf_size;
	/* Room past the last buffer for any offset and length a buffer's
	 * metadata can hold, should another process have changed them
	 * after they were checked (core.h, sl_buf_data()). */
	off += SL_REGION_SLACK;
	r->region_size = ALIGN_UP(off, 4096);
	return (int64_t)r->region_size;
}

/* Where the TIME-WAIT entries start: after the timer wheel. */
static uint64_t tw_area(const struct sluice_region *hdr)
{
	return ALIGN_UP(hdr->wheel_off + SLUICE_WHEEL_SLOTS * sizeof(uint32_t), 64);
}

/* Where the IPv6 peers' addresses start: after the TIME-WAIT hashes. */
static uint64_t v6tok_area(const struct sluice_region *hdr)
{
	return ALIGN_UP(tw_area(hdr) + (uint64_t)sl_tw_entries(hdr->max_sockets) * (SL_TW_SIZE + 8),
			64);
}

static void init_region(struct sl_stack *s, const char *name, const struct sluice_stack_config *cfg)
{
	struct sluice_region *k = s->r;
	struct sl_region *r = s->lib;
	uint32_t *h, i;

	k->magic = SLUICE_REGION_MAGIC;
	k->abi_version = SLUICE_ABI_VERSION;
	strncpy(k->name, name, sizeof(k->name) - 1);
	k->creator_uid = getuid();
	r->lib_layout = SL_LAYOUT_VERSION;
	r->ip_addr = cfg->ip_addr;
	r->ip_mask = cfg->ip_mask;
	r->ip_gateway = cfg->ip_gateway;
	memcpy(r->mac, cfg->mac, sizeof(r->mac));

	h = sl_at(s, k->hash_off);
	for (i = 0; i < 2 * k->hash_buckets; i++)
		h[i] = SLUICE_IDX_NONE;
	h = sl_at(s, k->wheel_off);
	for (i = 0; i < SLUICE_WHEEL_SLOTS; i++)
		h[i] = SLUICE_IDX_NONE;
	h = sl_at(s, tw_area(k) + (uint64_t)sl_tw_entries(k->max_sockets) * SL_TW_SIZE);
	for (i = 0; i < 2 * sl_tw_entries(k->max_sockets); i++)
		h[i] = SLUICE_IDX_NONE;
	for (i = 0; i < k->n_bufs; i++) {
		struct sluice_buf *b = sl_buf(s, i);

		b->next_idx = i + 1 < k->n_bufs ? i + 1 : SLUICE_IDX_NONE;
	}
	r->buf_free_idx = 0;
	r->buf_free_count = k->n_bufs;
	r->lo_head = r->lo_tail = SLUICE_IDX_NONE;
	for (i = 0; i < SL_NEIGH_MAX; i++)
		r->neigh[i].hold_idx = SLUICE_IDX_NONE;
	for (i = 0; i < SL_NEIGH6_MAX; i++)
		r->neigh6[i].hold_idx = SLUICE_IDX_NONE;
	if (getrandom(r->tcp_isn_secret, sizeof(r->tcp_isn_secret), 0) !=
	    sizeof(r->tcp_isn_secret)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		r->tcp_isn_secret[0] = ts.tv_nsec ^ ((uint64_t)getpid() << 32);
		r->tcp_isn_secret[1] = ts.tv_sec * 0x9e3779b97f4a7c15ull;
	}
	r->wheel_now_ms = sl_now(s) / 1000;
}

/* The geometry of a region whose header (hdr: a copy taken before it was
 * checked, so nobody can change it between check and use) is valid. */
static void set_geometry(struct sl_stack *s, const struct sluice_region *hdr)
{
	s->n_bufs = hdr->n_bufs;
	s->max_sockets = hdr->max_sockets;
	s->buf_size = hdr->buf_size;
	s->sock_size = hdr->sock_size;
	s->hash_buckets = hdr->hash_buckets;
	s->bufmeta = (struct sluice_buf *)(s->base + hdr->bufmeta_off);
	s->bufdata = s->base + hdr->bufdata_off;
	s->socks = s->base + hdr->sock_off;
	s->hash = (uint32_t *)(s->base + hdr->hash_off);
	s->wheel = (uint32_t *)(s->base + hdr->wheel_off);
	s->tw_max = sl_tw_entries(hdr->max_sockets);
	s->tw = s->base + tw_area(hdr);
	s->tw_hash = (uint32_t *)(s->tw + (uint64_t)s->tw_max * SL_TW_SIZE);
	s->v6tok_max = sl_v6tok_entries(hdr->max_sockets);
	s->v6tok = (uint8_t (*)[16])(s->base + v6tok_area(hdr));
	s->v6tok_hash = (uint32_t *)(s->v6tok + s->v6tok_max);
	s->corrupt = false;
}

static int map_fd(struct sl_stack *s, int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	s->base = p;
	s->r = p;
	s->lib = (struct sl_region *)((uint8_t *)p + SLUICE_REGION_LIB_OFF);
	s->size = size;
	s->region_fd = fd;
	/* /dev/shm pages always key futexes; the module's since their
	 * regions are shmem (uapi "Stacks"), not before. */
	s->futex_ok = sl_futex_usable(s);
	/* Until the first lock claims a block of our own (lock.c). */
	s->ctr = &s->lib->counters[SL_PROC_MAX - 1];
	s->ctr_pid = 0;
	return 0;
}

uint64_t sl_module_features;

/* /dev/sluice if the loaded module can hold stacks, else -ENODEV. */
static int module_open(void)
{
	struct sluice_version v = { .size = sizeof(v) };
	const char *shm = getenv("SLUICE_SHM");
	int fd;

	if (shm && *shm == '1')
		return -ENODEV;
	fd = sluice_dev_open(NULL);
	if (fd < 0)
		return -ENODEV;
	if (sl_sys_ioctl(fd, SLUICE_IOC_VERSION, &v) || v.abi_version != SLUICE_ABI_VERSION ||
	    !(v.features & SLUICE_FEATURE_STACK)) {
		sl_sys_close(fd);
		return -ENODEV;
	}
	sl_module_features = v.features;
	return fd;
}

/* Publish a laid-out region: everything written before is visible to
 * whoever sees READY. */
static void publish(struct sl_stack *s, const struct sluice_region *tmp, const char *name,
		    const struct sluice_stack_config *cfg, void (*init)(struct sl_stack *s))
{
	memcpy(s->r, tmp, sizeof(*tmp));
	set_geometry(s, tmp);
	init_region(s, name, cfg);
	/* The layers above lay out their parts (the socket table). */
	init(s);
	sl_store_release(&s->r->state, SLUICE_STATE_READY);
}

static int create_in_module(struct sl_stack *s, int dev, const char *name,
			    const struct sluice_region *tmp, const struct sluice_stack_config *cfg,
			    void (*init)(struct sl_stack *s))
{
	struct sluice_stack_create c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	/* A broken stack of this name gives its name up (every module of
	 * this ABI has SLUICE_FEATURE_REPLACE); any other stays -EEXIST. */
	c.flags = SLUICE_STACK_CREATE_REPLACE;
	strncpy(c.name, name, sizeof(c.name) - 1);
	c.ifindex = cfg->ifindex;
	c.region_size = tmp->region_size;
	c.max_sockets = tmp->max_sockets;
	c.sock_size = tmp->sock_size;
	c.hash_buckets = tmp->hash_buckets;
	c.n_bufs = tmp->n_bufs;
	c.buf_size = tmp->buf_size;
	c.mtu = tmp->mtu;
	c.sock_off = tmp->sock_off;
	c.hash_off = tmp->hash_off;
	c.wheel_off = tmp->wheel_off;
	c.bufmeta_off = tmp->bufmeta_off;
	c.bufdata_off = tmp->bufdata_off;
	if (sl_sys_ioctl(dev, SLUICE_IOC_STACK_CREATE, &c))
		return -errno;
	c.fd = sl_sys_fd_high(c.fd);	/* above the program's numbers (os.h) */
	ret = map_fd(s, c.fd, tmp->region_size);
	if (ret) {
		sl_sys_close(c.fd);
		return ret;
	}
	s->module_backed = true;
	s->ifindex = cfg->ifindex;
	publish(s, tmp, name, cfg, init);
	return 0;
}

/*
 * The largest packet buffer a stack on a device is given by default, so
 * that its MTU can be the device's: 8192 holds both IPoIB datagram-mode
 * MTUs (2044 and 4092: an IB MTU of 2048 or 4096 less the 4-byte IPoIB
 * header, ipoib.h IPOIB_UD_MTU()) after the 64 bytes of headroom.  A larger
 * MTU (jumbo Ethernet, IPoIB connected mode) is capped at 8192 - 64
 * unless the configuration names a larger buf_size.
 */
#define SL_DEV_BUF_MAX		8192

/*
 * A stack on a device: resolve the device and, from the module's view of
 * it, fill in the address, mask and MTU the configuration left zero (the
 * stack shares the device's IPv4 address).  The MTU is what a packet
 * buffer holds at most: with buf_size left zero, buffers are made large
 * enough for the MTU (up to SL_DEV_BUF_MAX), as the kernel's IP MTU on
 * the device is the device's (an ipoib netdev's 2044 needs more than the
 * default 2048 - 64).  dev is /dev/sluice.
 */
static int device_config(int dev, struct sluice_stack_config *c)
{
	struct sluice_ifinfo ii;
	uint32_t buf_size;

	if (!c->ifindex) {
		c->ifindex = if_nametoindex(c->ifname);
		if (!c->ifindex)
			return -ENODEV;
	}
	if (c->ip_addr && c->ip_mask && c->mtu)
		goto size;
	memset(&ii, 0, sizeof(ii));
	ii.size = sizeof(ii);
	ii.ifindex = c->ifindex;
	if (sl_sys_ioctl(dev, SLUICE_IOC_IFINFO, &ii))
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	if (!c->ip_addr) {
		if (!ii.n_addrs)
			return -EADDRNOTAVAIL;
		c->ip_addr = ii.addr[0];
		if (!c->ip_mask && ii.prefix_len[0] <= 32)
			c->ip_mask = htonl(ii.prefix_len[0] ? ~0u << (32 - ii.prefix_len[0]) : 0);
	}
	if (!c->mtu) {
		buf_size = c->buf_size ? c->buf_size : SL_DEV_BUF_MAX;
		c->mtu = ii.mtu < buf_size - SL_HEADROOM ? ii.mtu : buf_size - SL_HEADROOM;
		if (c->mtu < 576)
			return -EINVAL;
	}
size:
	if (!c->buf_size && c->mtu + SL_HEADROOM > 2048 && c->mtu + SL_HEADROOM <= SL_DEV_BUF_MAX)
		c->buf_size = pow2_at_least(c->mtu + SL_HEADROOM);
	return 0;
}

int sl_region_create(struct sl_stack *s, const char *name, const struct sluice_stack_config *ucfg,
		     void (*init)(struct sl_stack *s))
{
	struct sluice_stack_config dcfg = *ucfg, *cfg = &dcfg;
	bool on_dev = ucfg->ifindex || ucfg->ifname[0];
	struct sluice_region tmp;
	char path[64];
	int64_t size;
	int fd, ret, dev;

	ret = sl_region_path(name, path, sizeof(path));
	if (ret)
		return ret;
	if (memchr(ucfg->ifname, 0, sizeof(ucfg->ifname)) == NULL)
		return -EINVAL;
	dev = module_open();
	/* Slots cost only address space in /dev/shm, where a page is
	 * committed when a socket first takes a slot on it (the free list
	 * starts empty: sl_sock_alloc()); the module pins all of its region. */
	if (!ucfg->max_sockets)
		cfg->max_sockets = dev >= 0 ? SL_SOCKETS_PINNED : SL_SOCKETS_SHM;
	if (!ucfg->n_bufs && dev < 0)
		cfg->n_bufs = SL_BUFS_SHM;
	if (on_dev) {
		/* Only the module can put a stack on a device. */
		if (dev < 0)
			return -EOPNOTSUPP;
		ret = device_config(dev, cfg);
		if (ret) {
			sl_sys_close(dev);
			return ret;
		}
	}
	memset(&tmp, 0, sizeof(tmp));
	size = layout(&tmp, cfg);
	if (size < 0) {
		if (dev >= 0)
			sl_sys_close(dev);
		return (int)size;
	}
	if (dev >= 0) {
		ret = create_in_module(s, dev, name, &tmp, cfg, init);
		sl_sys_close(dev);
		/*
		 * -ENOMEM: the region would pass the caller's RLIMIT_MEMLOCK
		 * (the module pins it and charges it there, as io_uring does).
		 * The stack still works from /dev/shm, only not in the module
		 * (and then not on a device).
		 */
		if (ret != -ENOMEM || on_dev)
			return ret;
		if (!ucfg->max_sockets || !ucfg->n_bufs) {
			if (!ucfg->max_sockets)
				cfg->max_sockets = SL_SOCKETS_SHM;
			if (!ucfg->n_bufs)
				cfg->n_bufs = SL_BUFS_SHM;
			memset(&tmp, 0, sizeof(tmp));
			size = layout(&tmp, cfg);
			if (size < 0)
				return (int)size;
		}
	}

	fd = sl_sys_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, size)) {
		ret = -errno;
		goto err_unlink;
	}
	fd = sl_sys_fd_high(fd);	/* above the program's numbers (os.h) */
	ret = map_fd(s, fd, size);
	if (ret)
		goto err_unlink;
	/* The file is zero-filled; copy the layout, then initialise. */
	publish(s, &tmp, name, cfg, init);
	return 0;

err_unlink:
	unlink(path);
	sl_sys_close(fd);
	return ret;
}

/* Check that an attached region's layout is the one this library computes
 * from its configuration: nothing in it may point outside the mapping. */
static int validate(const struct sluice_region *r, size_t file_size)
{
	struct sluice_stack_config cfg = {
		.max_sockets = r->max_sockets, .n_bufs = r->n_bufs,
		.buf_size = r->buf_size, .mtu = r->mtu,
	};
	struct sluice_region want;

	if (r->magic != SLUICE_REGION_MAGIC || r->abi_version != SLUICE_ABI_VERSION)
		return -EPROTO;
	if (!r->max_sockets || !r->n_bufs || !r->buf_size || !r->mtu)
		return -EPROTO;
	memset(&want, 0, sizeof(want));
	if (layout(&want, &cfg) < 0)
		return -EPROTO;
	if (r->region_size != file_size || want.region_size != file_size ||
	    r->sock_size != want.sock_size || r->hash_buckets != want.hash_buckets ||
	    r->sock_off != want.sock_off || r->hash_off != want.hash_off ||
	    r->wheel_off != want.wheel_off || r->bufmeta_off != want.bufmeta_off ||
	    r->bufdata_off != want.bufdata_off)
		return -EPROTO;
	if (memchr(r->name, 0, sizeof(r->name)) == NULL)
		return -EPROTO;
	return 0;
}

/* Open the region of stack name: a module stack fd, or the /dev/shm file.
 * Returns the fd and its size in *size. */
static int region_open(const char *name, size_t *size, bool *module, uint32_t *ifindex)
{
	struct sluice_stack_attach at;
	char path[64];
	struct stat st;
	int fd, dev, ret;

	ret = sl_region_path(name, path, sizeof(path));
	if (ret)
		return ret;
	dev = module_open();
	if (dev >= 0) {
		memset(&at, 0, sizeof(at));
		at.size = sizeof(at);
		strncpy(at.name, name, sizeof(at.name) - 1);
		ret = sl_sys_ioctl(dev, SLUICE_IOC_STACK_ATTACH, &at) ? -errno : 0;
		sl_sys_close(dev);
		if (ret != -ENOENT) {
			if (ret)
				return ret;
			*size = at.region_size;
			*module = true;
			*ifindex = at.ifindex;
			return at.fd;
		}
		/* Not a module stack: perhaps one in /dev/shm. */
	}
	fd = sl_sys_openat(AT_FDCWD, path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sl_sys_fstat(fd, &st)) {
		ret = -errno;
		sl_sys_close(fd);
		return ret;
	}
	*size = st.st_size;
	return fd;
}

int sl_region_attach(struct sl_stack *s, const char *name)
{
	struct sluice_region hdr;
	size_t size = 0;
	bool module = false;
	int fd, ret, tries;
	uint32_t state, lib_layout;

	fd = region_open(name, &size, &module, &s->ifindex);
	if (fd < 0)
		return fd;
	/* A creator makes the file, then sizes it: one that is still empty
	 * is being made (as the INIT state below, up to a second). */
	for (tries = 0; !module && size < SLUICE_REGION_LIB_OFF + sizeof(uint32_t) &&
	     tries < 1000; tries++) {
		struct stat st;

		usleep(1000);
		if (sl_sys_fstat(fd, &st))
			break;
		size = (size_t)st.st_size;
	}
	if (size < SLUICE_REGION_LIB_OFF + sizeof(uint32_t)) {
		ret = -EPROTO;
		goto err_close;
	}
	fd = sl_sys_fd_high(fd);	/* above the program's numbers (os.h) */
	ret = map_fd(s, fd, size);
	if (ret)
		goto err_close;
	s->module_backed = module;
	/* A creator may still be laying it out: wait up to a second. */
	for (tries = 0; tries < 1000; tries++) {
		/* Acquire: pairs with publish(): the layout is written. */
		state = sl_load_acquire(&s->r->state);
		if (state != SLUICE_STATE_INIT)
			break;
		usleep(1000);
	}
	if (state == SLUICE_STATE_INIT) {
		ret = -EPROTO;
		goto err_unmap;
	}
	/* One copy of the header, checked and then used: the region's own
	 * may change under us at any time. */
	memcpy(&hdr, (const void *)s->r, sizeof(hdr));
	lib_layout = SL_READ_ONCE(s->lib->lib_layout);
	if (hdr.magic == SLUICE_REGION_MAGIC && hdr.abi_version == SLUICE_ABI_VERSION &&
	    lib_layout != SL_LAYOUT_VERSION) {
		/* Another build of the library made it: never a silent attach
		 * to socket slots and counters laid out differently.  (The
		 * tools that only look say so their own way, once.) */
		if (!s->inspect)
			fprintf(stderr, "sluice: stack %.*s was laid out by a library of layout "
				"version %u; this library (%s) has layout version %u: run every "
				"program on one stack with one build of Sluice\n", SLUICE_NAME_MAX,
				name, lib_layout, SLUICE_LIB_VERSION, SL_LAYOUT_VERSION);
		ret = -EPROTO;
		goto err_unmap;
	}
	ret = validate(&hdr, size);
	if (ret)
		goto err_unmap;
	set_geometry(s, &hdr);
	if (state == SLUICE_STATE_BROKEN && !s->inspect) {
		ret = -EPIPE;
		goto err_unmap;
	}
	return 0;

err_unmap:
	munmap(s->base, s->size);
	s->base = NULL;
	s->r = NULL;
err_close:
	sl_sys_close(fd);
	return ret;
}

void sl_region_detach(struct sl_stack *s)
{
	if (s->r)
		sl_counters_release(s);
	sl_cap_unmap(s);
	if (s->base)
		munmap(s->base, s->size);
	if (s->region_fd >= 0)
		sl_sys_close(s->region_fd);
	s->base = NULL;
	s->r = NULL;
	s->region_fd = -1;
}

bool sl_region_reclaim(const char *name)
{
	const struct sluice_region *r;
	struct stat fst, pst;
	char path[64];
	bool gone = false;
	void *p;
	int fd;

	if (sl_region_path(name, path, sizeof(path)))
		return false;
	fd = sl_sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return errno == ENOENT;	/* reclaimed by another already */
	if (sl_sys_fstat(fd, &fst) || (size_t)fst.st_size < sizeof(*r))
		goto out_close;
	p = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto out_close;
	r = p;
	/*
	 * One reclaimer at a time for this file, and only while the name
	 * still names it: a second process that found the same broken stack
	 * must not unlink the fresh one the first has made meanwhile (which
	 * is not broken: the name is then the fresh one's, and so "gone").
	 */
	sl_sys_flock(fd, LOCK_EX);
	if (SL_READ_ONCE(r->magic) != SLUICE_REGION_MAGIC)
		gone = false;
	else if (sl_load_acquire(&r->state) != SLUICE_STATE_BROKEN)
		gone = true;
	else if (stat(path, &pst))
		gone = errno == ENOENT;
	else if (pst.st_dev != fst.st_dev || pst.st_ino != fst.st_ino)
		gone = true;
	else
		gone = unlink(path) == 0 || errno == ENOENT;
	sl_sys_flock(fd, LOCK_UN);
	munmap(p, sizeof(*r));
out_close:
	sl_sys_close(fd);
	return gone;
}

int sl_region_destroy(const char *name)
{
	char path[64];
	int ret = sl_region_path(name, path, sizeof(path));

	if (ret)
		return ret;
	return unlink(path) ? -errno : 0;
}
