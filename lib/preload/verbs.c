// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdma-core in the preload library, loaded when a verbs link first asks
 * for it (ibv_get_device_list()), not with every program.
 *
 * The verbs links call rdma-core through one table (link/verbs_api.c).
 * The preload library is linked without -libverbs: the link editor's
 * --wrap (Makefile, PRELOAD_VERBS) points every rdma-core function that
 * table names at the __wrap_ function of that name below, which calls the
 * real one found with dlopen() and dlsym().  Linked directly, every
 * program under sluice run mapped libibverbs, libnl-route-3 and libnl-3
 * (a dozen mappings) that almost none uses: each fork copied them, and
 * each child ran their destructors at exit, binding libnl-route-3's calls
 * lazily on the way (dozens of page faults and symbol lookups a child; a
 * forking server such as PostgreSQL pays it at every connection).
 *
 * Without rdma-core (not installed, or it fails to load) ibv_get_device_list()
 * finds no device (ENOSYS), as the links expect of a host without one;
 * nothing else can be reached without a device.
 */
#include <dlfcn.h>
#include <pthread.h>

#include <infiniband/verbs.h>

#include "preload.h"

/* Every rdma-core function the verbs links name (nm -u of verbs_api.o). */
#define PL_VERBS_FNS(X)							\
	X(ibv_get_device_list) X(ibv_free_device_list)			\
	X(ibv_get_device_name) X(ibv_open_device) X(ibv_close_device)	\
	X(ibv_query_device) X(ibv_query_port) X(ibv_query_gid)		\
	X(_ibv_query_gid_ex) X(ibv_query_pkey) X(ibv_alloc_pd)		\
	X(ibv_dealloc_pd) X(ibv_reg_mr_iova2) X(ibv_dereg_mr)		\
	X(ibv_create_comp_channel) X(ibv_destroy_comp_channel)		\
	X(ibv_create_cq) X(ibv_destroy_cq) X(ibv_create_qp)		\
	X(ibv_modify_qp) X(ibv_destroy_qp) X(ibv_attach_mcast)		\
	X(ibv_detach_mcast) X(ibv_create_ah) X(ibv_destroy_ah)		\
	X(ibv_get_cq_event) X(ibv_ack_cq_events)			\
	X(ibv_get_async_event) X(ibv_ack_async_event)

static struct {
#define PL_VERBS_PTR(f)	__typeof__(f) *f;
	PL_VERBS_FNS(PL_VERBS_PTR)
#undef PL_VERBS_PTR
} real;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;

static void load(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		pl_debug("rdma-core: %s", dlerror());
		return;
	}
#define PL_VERBS_SYM(f)							\
	if (!(real.f = (__typeof__(f) *)dlsym(h, #f))) {		\
		pl_log("rdma-core: no %s: verbs links unavailable", #f);	\
		return;							\
	}
	PL_VERBS_FNS(PL_VERBS_SYM)
#undef PL_VERBS_SYM
	loaded = true;
}

static bool ready(void)
{
	pthread_once(&load_once, load);
	return loaded;
}

/* Declared for -Wmissing-prototypes: only the link editor names them. */
#define PL_VERBS_DECL(f)	__typeof__(f) __wrap_##f;
PL_VERBS_FNS(PL_VERBS_DECL)
#undef PL_VERBS_DECL

struct ibv_device **__wrap_ibv_get_device_list(int *n)
{
	if (!ready()) {
		if (n)
			*n = 0;
		errno = ENOSYS;
		return NULL;
	}
	return (real.ibv_get_device_list)(n);
}

/*
 * The rest are reached only with a device from the list above, so the
 * library is loaded by then; they fail as rdma-core fails if it is not
 * (NULL with errno, or an errno value).
 */
#define PL_FWD_PTR(ret, f, params, args)					\
	ret __wrap_##f params							\
	{									\
		if (!ready()) {							\
			errno = ENOSYS;						\
			return NULL;						\
		}								\
		return (real.f) args;						\
	}
#define PL_FWD_INT(f, params, args)						\
	int __wrap_##f params							\
	{									\
		return ready() ? (real.f) args : ENOSYS;				\
	}
#define PL_FWD_VOID(f, params, args)						\
	void __wrap_##f params							\
	{									\
		if (ready())							\
			(real.f) args;						\
	}

PL_FWD_VOID(ibv_free_device_list, (struct ibv_device **list), (list))
PL_FWD_PTR(const char *, ibv_get_device_name, (struct ibv_device *dev), (dev))
PL_FWD_PTR(struct ibv_context *, ibv_open_device, (struct ibv_device *dev), (dev))
PL_FWD_INT(ibv_close_device, (struct ibv_context *ctx), (ctx))
PL_FWD_INT(ibv_query_device, (struct ibv_context *ctx, struct ibv_device_attr *a), (ctx, a))
PL_FWD_INT(ibv_query_port, (struct ibv_context *ctx, uint8_t port,
			    struct _compat_ibv_port_attr *a), (ctx, port, a))
PL_FWD_INT(ibv_query_gid, (struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid),
	   (ctx, port, index, gid))
PL_FWD_INT(_ibv_query_gid_ex, (struct ibv_context *ctx, uint32_t port, uint32_t index,
			       struct ibv_gid_entry *e, uint32_t flags, size_t size),
	   (ctx, port, index, e, flags, size))
PL_FWD_INT(ibv_query_pkey, (struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey),
	   (ctx, port, index, pkey))
PL_FWD_PTR(struct ibv_pd *, ibv_alloc_pd, (struct ibv_context *ctx), (ctx))
PL_FWD_INT(ibv_dealloc_pd, (struct ibv_pd *pd), (pd))
PL_FWD_PTR(struct ibv_mr *, ibv_reg_mr_iova2, (struct ibv_pd *pd, void *addr, size_t len,
					       uint64_t iova, unsigned int access),
	   (pd, addr, len, iova, access))
PL_FWD_INT(ibv_dereg_mr, (struct ibv_mr *mr), (mr))
PL_FWD_PTR(struct ibv_comp_channel *, ibv_create_comp_channel, (struct ibv_context *ctx), (ctx))
PL_FWD_INT(ibv_destroy_comp_channel, (struct ibv_comp_channel *ch), (ch))
PL_FWD_PTR(struct ibv_cq *, ibv_create_cq, (struct ibv_context *ctx, int cqe, void *cq_ctx,
					    struct ibv_comp_channel *ch, int vector),
	   (ctx, cqe, cq_ctx, ch, vector))
PL_FWD_INT(ibv_destroy_cq, (struct ibv_cq *cq), (cq))
PL_FWD_PTR(struct ibv_qp *, ibv_create_qp, (struct ibv_pd *pd, struct ibv_qp_init_attr *a),
	   (pd, a))
PL_FWD_INT(ibv_modify_qp, (struct ibv_qp *qp, struct ibv_qp_attr *a, int mask), (qp, a, mask))
PL_FWD_INT(ibv_destroy_qp, (struct ibv_qp *qp), (qp))
PL_FWD_INT(ibv_attach_mcast, (struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid),
	   (qp, gid, lid))
PL_FWD_INT(ibv_detach_mcast, (struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid),
	   (qp, gid, lid))
PL_FWD_PTR(struct ibv_ah *, ibv_create_ah, (struct ibv_pd *pd, struct ibv_ah_attr *a), (pd, a))
PL_FWD_INT(ibv_destroy_ah, (struct ibv_ah *ah), (ah))
PL_FWD_INT(ibv_get_cq_event, (struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx),
	   (ch, cq, cq_ctx))
PL_FWD_VOID(ibv_ack_cq_events, (struct ibv_cq *cq, unsigned int n), (cq, n))
PL_FWD_INT(ibv_get_async_event, (struct ibv_context *ctx, struct ibv_async_event *e), (ctx, e))
PL_FWD_VOID(ibv_ack_async_event, (struct ibv_async_event *e), (e))
