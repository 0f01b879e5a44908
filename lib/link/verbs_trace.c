// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs trace (SLUICE_VERBS_TRACE=FILE, `sluice run --verbs-trace
 * FILE`): every call of the verbs links' table (link/verbs_api.h), with
 * the arguments that matter and the result, one line each, appended to
 * FILE by every process (O_APPEND, one write a line).  The format is in
 * link/README.md "The verbs trace"; tests/unit/test_verbs_replay.c reads
 * it back and drives the strict model with the same calls.
 *
 * When asked for, the table the links call (sl_verbs) is swapped for
 * this one, which writes a line and calls the table it replaced: when
 * not asked for, the links' calls are exactly what they were.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <sluice/sluice.h>

#include "os/os.h"
#include "link/verbs_int.h"

enum tr_kind { TK_CTX, TK_PD, TK_MR, TK_CH, TK_CQ, TK_QP, TK_AH, TK_FLOW, TK_N };

static const char *const tr_kind_name[TK_N] = {
	"ctx", "pd", "mr", "ch", "cq", "qp", "ah", "flow"
};

#define TR_OBJS		4096
#define TR_LINE		12288

struct tr_obj {
	const void *p;
	uint8_t kind;
	uint32_t id;
	uint64_t addr, len;		/* MRs: what they cover */
	uint32_t lkey;
	uint32_t empty;			/* CQs: polls that found nothing since the last line */
};

static const struct sl_verbs_api *tr_inner;
static struct tr_obj tr_obj[TR_OBJS];
static int tr_top;			/* entries in use are below it */
static uint32_t tr_next[TK_N];
static int tr_fd = -1;
static unsigned long tr_seq;
static pthread_mutex_t tr_mu = PTHREAD_MUTEX_INITIALIZER;

struct tr_buf {
	char s[TR_LINE];
	size_t n;
};

static void tb_add(struct tr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tb_add(struct tr_buf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->n >= sizeof(b->s) - 2)
		return;
	va_start(ap, fmt);
	k = vsnprintf(b->s + b->n, sizeof(b->s) - 1 - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n += (size_t)k < sizeof(b->s) - 1 - b->n ? (size_t)k : sizeof(b->s) - 2 - b->n;
}

static struct tr_obj *tr_find(const void *p)
{
	if (!p)
		return NULL;
	for (int i = 0; i < tr_top; i++)
		if (tr_obj[i].p == p)
			return &tr_obj[i];
	return NULL;
}

static struct tr_obj *tr_new(enum tr_kind k, const void *p)
{
	if (!p)
		return NULL;
	for (int i = 0; i < TR_OBJS; i++)
		if (!tr_obj[i].p) {
			memset(&tr_obj[i], 0, sizeof(tr_obj[i]));
			tr_obj[i].p = p;
			tr_obj[i].kind = (uint8_t)k;
			tr_obj[i].id = ++tr_next[k];
			if (i >= tr_top)
				tr_top = i + 1;
			return &tr_obj[i];
		}
	return NULL;
}

static void tr_gone(const void *p)
{
	struct tr_obj *o = tr_find(p);

	if (o)
		o->p = NULL;
}

/* An object as its small id ("qp1"), "-" for none, "?" for one made
 * before tracing started, after sep. */
static void tb_ref(struct tr_buf *b, const char *sep, const void *p)
{
	struct tr_obj *o = tr_find(p);

	if (!p)
		tb_add(b, "%s-", sep);
	else if (!o)
		tb_add(b, "%s?", sep);
	else
		tb_add(b, "%s%s%u", sep, tr_kind_name[o->kind], o->id);
}

static void tb_obj(struct tr_buf *b, const char *key, const void *p)
{
	char sep[32];

	snprintf(sep, sizeof(sep), " %s%s", key ? key : "", key ? "=" : "");
	tb_ref(b, sep, p);
}

/* An SGE as the MR it is in and the offset there: mr2+4096/2048. */
static void tb_sge(struct tr_buf *b, const struct ibv_sge *s)
{
	for (int i = 0; i < tr_top; i++) {
		const struct tr_obj *o = &tr_obj[i];

		if (o->p && o->kind == TK_MR && o->lkey == s->lkey && s->addr >= o->addr &&
		    s->addr - o->addr <= o->len) {
			tb_add(b, ",mr%u+%llu/%u", o->id, (unsigned long long)(s->addr - o->addr),
			       s->length);
			return;
		}
	}
	tb_add(b, ",?/%u", s->length);
}

static void tb_hex(struct tr_buf *b, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tb_add(b, "%02x", p[i]);
}

static void tb_start(struct tr_buf *b, const char *call)
{
	b->n = 0;
	tb_add(b, "%d %lu %s", (int)getpid(), ++tr_seq, call);
}

static void tb_errno(struct tr_buf *b, int err)
{
	const char *name = err ? strerrorname_np(err) : NULL;

	if (name)
		tb_add(b, " = -%s", name);
	else
		tb_add(b, " = -%d", err);
}

/* An int result: 0, or an errno (rdma-core's positive, the module's
 * negative; -1 with errno for the event calls). */
static void tb_ret(struct tr_buf *b, int ret, int err)
{
	if (!ret)
		tb_add(b, " = 0");
	else if (ret == -1 && err)
		tb_errno(b, err);
	else
		tb_errno(b, ret < 0 ? -ret : ret);
}

static void tb_made(struct tr_buf *b, enum tr_kind k, const void *p, int err)
{
	struct tr_obj *o;

	if (!p) {
		tb_errno(b, err ? err : EINVAL);
		return;
	}
	o = tr_new(k, p);
	tb_add(b, " = %s%u", tr_kind_name[k], o ? o->id : 0);
}

static void tb_end(struct tr_buf *b)
{
	b->s[b->n++] = '\n';
	if (tr_fd >= 0 && sl_sys_write(tr_fd, b->s, b->n) < 0)
		tr_fd = -1;
}

#define TR_BEGIN(call)			\
	struct tr_buf *b = &tr_line;	\
	pthread_mutex_lock(&tr_mu);	\
	tb_start(b, call)
#define TR_END()			\
	tb_end(b);			\
	pthread_mutex_unlock(&tr_mu)

/* Written only under tr_mu. */
static struct tr_buf tr_line;

static struct ibv_device **t_get_device_list(int *n)
{
	struct ibv_device **l = tr_inner->get_device_list(n);
	int err = errno;

	TR_BEGIN("get_device_list");
	if (l)
		tb_add(b, " = %d", *n);
	else
		tb_errno(b, err ? err : ENODEV);
	TR_END();
	errno = err;
	return l;
}

static void t_free_device_list(struct ibv_device **list)
{
	tr_inner->free_device_list(list);
}

static const char *t_get_device_name(struct ibv_device *dev)
{
	return tr_inner->get_device_name(dev);
}

static struct ibv_context *t_open_device(struct ibv_device *dev)
{
	const char *name = tr_inner->get_device_name(dev);
	struct ibv_context *c = tr_inner->open_device(dev);
	int err = errno;

	TR_BEGIN("open_device");
	tb_add(b, " dev=%s", name ? name : "-");
	tb_made(b, TK_CTX, c, err);
	TR_END();
	errno = err;
	return c;
}

static int t_close_device(struct ibv_context *ctx)
{
	int ret, err;

	TR_BEGIN("close_device");
	tb_obj(b, NULL, ctx);
	ret = tr_inner->close_device(ctx);
	err = errno;
	tr_gone(ctx);
	tb_ret(b, ret, err);
	TR_END();
	errno = err;
	return ret;
}

static int t_query_device_ex(struct ibv_context *ctx, struct ibv_device_attr_ex *a)
{
	int ret = tr_inner->query_device_ex(ctx, a), err = errno;

	TR_BEGIN("query_device_ex");
	tb_obj(b, NULL, ctx);
	tb_ret(b, ret, err);
	if (!ret)
		tb_add(b, " max_qp_wr=%d max_sge=%d raw_packet_caps=0x%x device_cap_flags_ex=0x%llx",
		       a->orig_attr.max_qp_wr, a->orig_attr.max_sge, a->raw_packet_caps,
		       (unsigned long long)a->device_cap_flags_ex);
	TR_END();
	errno = err;
	return ret;
}

static int t_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	int ret = tr_inner->query_port(ctx, port, a), err = errno;

	TR_BEGIN("query_port");
	tb_obj(b, NULL, ctx);
	tb_add(b, " port=%u", port);
	tb_ret(b, ret, err);
	if (!ret)
		tb_add(b, " state=%d active_mtu=%d max_mtu=%d link_layer=%u lid=0x%x sm_lid=0x%x "
		       "pkey_tbl_len=%u gid_tbl_len=%d",
		       a->state, a->active_mtu, a->max_mtu, a->link_layer, a->lid, a->sm_lid,
		       a->pkey_tbl_len, a->gid_tbl_len);
	TR_END();
	errno = err;
	return ret;
}

static int t_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	int ret = tr_inner->query_gid(ctx, port, index, gid), err = errno;

	TR_BEGIN("query_gid");
	tb_obj(b, NULL, ctx);
	tb_add(b, " port=%u index=%d", port, index);
	tb_ret(b, ret, err);
	if (!ret) {
		tb_add(b, " gid=");
		tb_hex(b, gid->raw, 16);
	}
	TR_END();
	errno = err;
	return ret;
}

static int t_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			  struct ibv_gid_entry *e)
{
	int ret = tr_inner->query_gid_ex(ctx, port, index, e), err = errno;

	TR_BEGIN("query_gid_ex");
	tb_obj(b, NULL, ctx);
	tb_add(b, " port=%u index=%u", port, index);
	tb_ret(b, ret, err);
	if (!ret)
		tb_add(b, " gid_type=%u ndev_ifindex=%u", e->gid_type, e->ndev_ifindex);
	TR_END();
	errno = err;
	return ret;
}

static int t_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	int ret = tr_inner->query_pkey(ctx, port, index, pkey), err = errno;

	TR_BEGIN("query_pkey");
	tb_obj(b, NULL, ctx);
	tb_add(b, " port=%u index=%d", port, index);
	tb_ret(b, ret, err);
	if (!ret)
		tb_add(b, " pkey=0x%04x", ntohs(*pkey));
	TR_END();
	errno = err;
	return ret;
}

static struct ibv_pd *t_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = tr_inner->alloc_pd(ctx);
	int err = errno;

	TR_BEGIN("alloc_pd");
	tb_obj(b, NULL, ctx);
	tb_made(b, TK_PD, pd, err);
	TR_END();
	errno = err;
	return pd;
}

/* A destroy: the object's id, the call, its result. */
#define TR_DESTROY(name, obj, call)		\
	int ret, err;				\
	TR_BEGIN(name);				\
	tb_obj(b, NULL, obj);			\
	ret = call;				\
	err = errno;				\
	if (!ret)				\
		tr_gone(obj);			\
	tb_ret(b, ret, err);			\
	TR_END();				\
	errno = err;				\
	return ret

static int t_dealloc_pd(struct ibv_pd *pd)
{
	TR_DESTROY("dealloc_pd", pd, tr_inner->dealloc_pd(pd));
}

static struct ibv_mr *t_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = tr_inner->reg_mr(pd, addr, len, access);
	int err = errno;
	struct tr_obj *o;

	TR_BEGIN("reg_mr");
	tb_obj(b, NULL, pd);
	tb_add(b, " len=%zu access=0x%x", len, (unsigned int)access);
	tb_made(b, TK_MR, mr, err);
	o = mr ? tr_find(mr) : NULL;
	if (o) {
		o->addr = (uintptr_t)addr;
		o->len = len;
		o->lkey = mr->lkey;
	}
	TR_END();
	errno = err;
	return mr;
}

static int t_dereg_mr(struct ibv_mr *mr)
{
	TR_DESTROY("dereg_mr", mr, tr_inner->dereg_mr(mr));
}

static struct ibv_comp_channel *t_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = tr_inner->create_comp_channel(ctx);
	int err = errno;

	TR_BEGIN("create_comp_channel");
	tb_obj(b, NULL, ctx);
	tb_made(b, TK_CH, ch, err);
	TR_END();
	errno = err;
	return ch;
}

static int t_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	TR_DESTROY("destroy_comp_channel", ch, tr_inner->destroy_comp_channel(ch));
}

static struct ibv_cq *t_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
				  struct ibv_comp_channel *ch, int vector)
{
	struct ibv_cq *cq = tr_inner->create_cq(ctx, cqe, cq_ctx, ch, vector);
	int err = errno;

	TR_BEGIN("create_cq");
	tb_obj(b, NULL, ctx);
	tb_add(b, " cqe=%d", cqe);
	tb_obj(b, "channel", ch);
	tb_add(b, " vector=%d", vector);
	tb_made(b, TK_CQ, cq, err);
	TR_END();
	errno = err;
	return cq;
}

static int t_destroy_cq(struct ibv_cq *cq)
{
	TR_DESTROY("destroy_cq", cq, tr_inner->destroy_cq(cq));
}

static void tb_qp_init(struct tr_buf *b, const struct ibv_qp_cap *cap, int type, int sig_all,
		       const struct ibv_cq *scq, const struct ibv_cq *rcq)
{
	tb_add(b, " type=%d", type);
	tb_obj(b, "send_cq", scq);
	tb_obj(b, "recv_cq", rcq);
	tb_add(b, " max_send_wr=%u max_recv_wr=%u max_send_sge=%u max_recv_sge=%u "
	       "max_inline=%u sq_sig_all=%d", cap->max_send_wr, cap->max_recv_wr,
	       cap->max_send_sge, cap->max_recv_sge, cap->max_inline_data, sig_all);
}

static void tb_qp_made(struct tr_buf *b, struct ibv_qp *qp, int err)
{
	tb_made(b, TK_QP, qp, err);
	if (qp)
		tb_add(b, " qpn=0x%x", qp->qp_num);
}

static struct ibv_qp *t_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr in = *a;
	struct ibv_qp *qp = tr_inner->create_qp(pd, a);
	int err = errno;

	TR_BEGIN("create_qp");
	tb_obj(b, NULL, pd);
	tb_qp_init(b, &in.cap, in.qp_type, in.sq_sig_all, in.send_cq, in.recv_cq);
	tb_qp_made(b, qp, err);
	TR_END();
	errno = err;
	return qp;
}

static struct ibv_qp *t_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp_init_attr_ex in = *a;
	struct ibv_qp *qp = tr_inner->create_qp_ex(ctx, a);
	int err = errno;

	TR_BEGIN("create_qp_ex");
	tb_obj(b, NULL, ctx);
	tb_obj(b, "pd", in.pd);
	tb_qp_init(b, &in.cap, in.qp_type, in.sq_sig_all, in.send_cq, in.recv_cq);
	tb_add(b, " comp_mask=0x%x create_flags=0x%x source_qpn=0x%x", in.comp_mask,
	       in.create_flags, in.source_qpn);
	tb_qp_made(b, qp, err);
	TR_END();
	errno = err;
	return qp;
}

static int t_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int ret = tr_inner->modify_qp(qp, a, mask), err = errno;

	TR_BEGIN("modify_qp");
	tb_obj(b, NULL, qp);
	tb_add(b, " mask=0x%x", (unsigned int)mask);
	if (mask & IBV_QP_STATE)
		tb_add(b, " state=%d", a->qp_state);
	if (mask & IBV_QP_CUR_STATE)
		tb_add(b, " cur_state=%d", a->cur_qp_state);
	if (mask & IBV_QP_PKEY_INDEX)
		tb_add(b, " pkey_index=%u", a->pkey_index);
	if (mask & IBV_QP_PORT)
		tb_add(b, " port=%u", a->port_num);
	if (mask & IBV_QP_QKEY)
		tb_add(b, " qkey=0x%x", a->qkey);
	if (mask & IBV_QP_SQ_PSN)
		tb_add(b, " sq_psn=%u", a->sq_psn);
	tb_ret(b, ret, err);
	TR_END();
	errno = err;
	return ret;
}

static int t_destroy_qp(struct ibv_qp *qp)
{
	TR_DESTROY("destroy_qp", qp, tr_inner->destroy_qp(qp));
}

static int t_mcast(const char *name, struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid,
		   int ret, int err)
{
	TR_BEGIN(name);
	tb_obj(b, NULL, qp);
	tb_add(b, " gid=");
	tb_hex(b, gid->raw, 16);
	tb_add(b, " lid=0x%x", lid);
	tb_ret(b, ret, err);
	TR_END();
	errno = err;
	return ret;
}

static int t_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	int ret = tr_inner->attach_mcast(qp, gid, lid);

	return t_mcast("attach_mcast", qp, gid, lid, ret, errno);
}

static int t_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	int ret = tr_inner->detach_mcast(qp, gid, lid);

	return t_mcast("detach_mcast", qp, gid, lid, ret, errno);
}

static struct ibv_ah *t_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *a)
{
	struct ibv_ah *ah = tr_inner->create_ah(pd, a);
	int err = errno;

	TR_BEGIN("create_ah");
	tb_obj(b, NULL, pd);
	tb_add(b, " dlid=0x%x sl=%u port=%u is_global=%u", a->dlid, a->sl, a->port_num,
	       a->is_global);
	if (a->is_global) {
		tb_add(b, " dgid=");
		tb_hex(b, a->grh.dgid.raw, 16);
		tb_add(b, " sgid_index=%u hop_limit=%u traffic_class=%u", a->grh.sgid_index,
		       a->grh.hop_limit, a->grh.traffic_class);
	}
	tb_made(b, TK_AH, ah, err);
	TR_END();
	errno = err;
	return ah;
}

static int t_destroy_ah(struct ibv_ah *ah)
{
	TR_DESTROY("destroy_ah", ah, tr_inner->destroy_ah(ah));
}

/* A flow rule: the attribute, then each spec (ipv4 and tcp/udp in
 * words, any other type in hex).  Specs follow the attribute packed, so
 * each is copied out before it is read. */
static void tb_flow(struct tr_buf *b, const struct ibv_flow_attr *a)
{
	const uint8_t *p = (const uint8_t *)(a + 1);

	tb_add(b, " type=%d priority=%u port=%u flags=0x%x specs=%u", a->type, a->priority,
	       a->port, a->flags, a->num_of_specs);
	for (unsigned int i = 0; i < a->num_of_specs && i < 8; i++) {
		struct { enum ibv_flow_spec_type type; uint16_t size; } h;
		char x[4][INET_ADDRSTRLEN];

		memcpy(&h, p, sizeof(h));
		if (h.type == IBV_FLOW_SPEC_IPV4) {
			struct ibv_flow_spec_ipv4 v;

			memcpy(&v, p, sizeof(v));
			tb_add(b, " ipv4=%s/%s>%s/%s",
			       inet_ntop(AF_INET, &v.val.src_ip, x[0], sizeof(x[0])),
			       inet_ntop(AF_INET, &v.mask.src_ip, x[1], sizeof(x[1])),
			       inet_ntop(AF_INET, &v.val.dst_ip, x[2], sizeof(x[2])),
			       inet_ntop(AF_INET, &v.mask.dst_ip, x[3], sizeof(x[3])));
		} else if (h.type == IBV_FLOW_SPEC_TCP || h.type == IBV_FLOW_SPEC_UDP) {
			struct ibv_flow_spec_tcp_udp t;

			memcpy(&t, p, sizeof(t));
			tb_add(b, " %s=%u/0x%x>%u/0x%x", h.type == IBV_FLOW_SPEC_TCP ? "tcp" : "udp",
			       ntohs(t.val.src_port), ntohs(t.mask.src_port),
			       ntohs(t.val.dst_port), ntohs(t.mask.dst_port));
		} else {
			tb_add(b, " spec=0x%x:", h.type);
			tb_hex(b, p, h.size);
		}
		if (!h.size)
			break;
		p += h.size;
	}
}

static struct ibv_flow *t_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a)
{
	struct ibv_flow *f = tr_inner->create_flow(qp, a);
	int err = errno;

	TR_BEGIN("create_flow");
	tb_obj(b, NULL, qp);
	tb_flow(b, a);
	tb_made(b, TK_FLOW, f, err);
	TR_END();
	errno = err;
	return f;
}

static int t_destroy_flow(struct ibv_flow *flow)
{
	TR_DESTROY("destroy_flow", flow, tr_inner->destroy_flow(flow));
}

/* The bad WR as its index in the list. */
static int wr_index(const void *first, const void *bad, size_t next_off)
{
	int i = 0;

	for (const void *w = first; w; w = *(void *const *)((const char *)w + next_off), i++)
		if (w == bad)
			return i;
	return -1;
}

static int t_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int ret = tr_inner->post_send(qp, wr, bad), err = errno, n = 0;

	TR_BEGIN("post_send");
	tb_obj(b, NULL, qp);
	for (struct ibv_send_wr *w = wr; w; w = w->next)
		n++;
	tb_add(b, " n=%d", n);
	for (struct ibv_send_wr *w = wr; w; w = w->next) {
		tb_add(b, " wr=%llu,%d,0x%x", (unsigned long long)w->wr_id, w->opcode,
		       w->send_flags);
		tb_ref(b, ",", w->wr.ud.ah);
		tb_add(b, ",0x%x,0x%x", w->wr.ud.remote_qpn, w->wr.ud.remote_qkey);
		for (int i = 0; i < w->num_sge; i++)
			tb_sge(b, &w->sg_list[i]);
	}
	tb_ret(b, ret, err);
	if (ret)
		tb_add(b, " bad=%d", wr_index(wr, *bad, offsetof(struct ibv_send_wr, next)));
	TR_END();
	errno = err;
	return ret;
}

static int t_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int ret = tr_inner->post_recv(qp, wr, bad), err = errno, n = 0;

	TR_BEGIN("post_recv");
	tb_obj(b, NULL, qp);
	for (struct ibv_recv_wr *w = wr; w; w = w->next)
		n++;
	tb_add(b, " n=%d", n);
	for (struct ibv_recv_wr *w = wr; w; w = w->next) {
		tb_add(b, " wr=%llu", (unsigned long long)w->wr_id);
		for (int i = 0; i < w->num_sge; i++)
			tb_sge(b, &w->sg_list[i]);
	}
	tb_ret(b, ret, err);
	if (ret)
		tb_add(b, " bad=%d", wr_index(wr, *bad, offsetof(struct ibv_recv_wr, next)));
	TR_END();
	errno = err;
	return ret;
}

/* Polls that find nothing are counted, not written: the next line of
 * that CQ says how many there were (empty=N). */
static int t_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int k = tr_inner->poll_cq(cq, n, wc), err = errno;
	struct tr_obj *o;

	pthread_mutex_lock(&tr_mu);
	o = tr_find(cq);
	if (!k && o) {
		o->empty++;
		pthread_mutex_unlock(&tr_mu);
		return 0;
	}
	pthread_mutex_unlock(&tr_mu);
	{
		TR_BEGIN("poll_cq");
		tb_obj(b, NULL, cq);
		tb_add(b, " n=%d empty=%u", n, o ? o->empty : 0);
		if (o)
			o->empty = 0;
		if (k < 0) {
			tb_errno(b, -k);
		} else {
			tb_add(b, " = %d", k);
			for (int i = 0; i < k; i++)
				tb_add(b, " wc=%llu,%d,%d,%u,0x%x,0x%x",
				       (unsigned long long)wc[i].wr_id, wc[i].status, wc[i].opcode,
				       wc[i].byte_len, wc[i].wc_flags, wc[i].src_qp);
		}
		TR_END();
	}
	errno = err;
	return k;
}

static int t_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	int ret = tr_inner->req_notify_cq(cq, solicited_only), err = errno;

	TR_BEGIN("req_notify_cq");
	tb_obj(b, NULL, cq);
	tb_add(b, " solicited_only=%d", solicited_only);
	tb_ret(b, ret, err);
	TR_END();
	errno = err;
	return ret;
}

/* Event reads that find nothing (EAGAIN on a non-blocking fd) are not
 * written. */
static int t_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx)
{
	int ret = tr_inner->get_cq_event(ch, cq, cq_ctx), err = errno;

	if (ret && err == EAGAIN)
		return ret;
	{
		TR_BEGIN("get_cq_event");
		tb_obj(b, NULL, ch);
		tb_ret(b, ret, err);
		if (!ret)
			tb_obj(b, "cq", *cq);
		TR_END();
	}
	errno = err;
	return ret;
}

static void t_ack_cq_events(struct ibv_cq *cq, unsigned int n)
{
	tr_inner->ack_cq_events(cq, n);
	{
		TR_BEGIN("ack_cq_events");
		tb_obj(b, NULL, cq);
		tb_add(b, " n=%u", n);
		TR_END();
	}
}

static void tb_event(struct tr_buf *b, const struct ibv_async_event *e)
{
	tb_add(b, " event=%d", e->event_type);
	switch (e->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		tb_obj(b, "qp", e->element.qp);
		break;
	case IBV_EVENT_CQ_ERR:
		tb_obj(b, "cq", e->element.cq);
		break;
	default:
		tb_add(b, " port=%d", e->element.port_num);
	}
}

static int t_get_async_event(struct ibv_context *ctx, struct ibv_async_event *e)
{
	int ret = tr_inner->get_async_event(ctx, e), err = errno;

	if (ret && err == EAGAIN)
		return ret;
	{
		TR_BEGIN("get_async_event");
		tb_obj(b, NULL, ctx);
		tb_ret(b, ret, err);
		if (!ret)
			tb_event(b, e);
		TR_END();
	}
	errno = err;
	return ret;
}

static void t_ack_async_event(struct ibv_async_event *e)
{
	TR_BEGIN("ack_async_event");
	tb_event(b, e);
	TR_END();
	tr_inner->ack_async_event(e);
}

static int t_ifinfo(struct sluice_ifinfo *ii)
{
	uint32_t ifindex = ii->ifindex;
	int ret = tr_inner->ifinfo(ii), err = errno;

	TR_BEGIN("ifinfo");
	tb_add(b, " ifindex=%u", ifindex);
	tb_ret(b, ret, err);
	if (!ret)
		tb_add(b, " ib_flags=0x%x", ii->ib_flags);
	TR_END();
	errno = err;
	return ret;
}

static int t_neigh_resolve(int stack_fd, struct sluice_neigh_resolve *nr)
{
	uint32_t addr = nr->addr;
	int ret = tr_inner->neigh_resolve(stack_fd, nr), err = errno;
	char a[INET_ADDRSTRLEN];

	TR_BEGIN("neigh_resolve");
	tb_add(b, " addr=%s", inet_ntop(AF_INET, &addr, a, sizeof(a)));
	tb_ret(b, ret, err);
	TR_END();
	errno = err;
	return ret;
}

static int t_link_kring(struct sluice_stack *st)
{
	int ret = tr_inner->link_kring(st), err = errno;

	TR_BEGIN("link_kring");
	tb_ret(b, ret, err);
	TR_END();
	errno = err;
	return ret;
}

static struct sl_verbs_api sl_verbs_trace_api = {
	.get_device_list = t_get_device_list,
	.free_device_list = t_free_device_list,
	.get_device_name = t_get_device_name,
	.open_device = t_open_device,
	.close_device = t_close_device,
	.query_device_ex = t_query_device_ex,
	.query_port = t_query_port,
	.query_gid = t_query_gid,
	.query_gid_ex = t_query_gid_ex,
	.query_pkey = t_query_pkey,
	.alloc_pd = t_alloc_pd,
	.dealloc_pd = t_dealloc_pd,
	.reg_mr = t_reg_mr,
	.dereg_mr = t_dereg_mr,
	.create_comp_channel = t_create_comp_channel,
	.destroy_comp_channel = t_destroy_comp_channel,
	.create_cq = t_create_cq,
	.destroy_cq = t_destroy_cq,
	.create_qp = t_create_qp,
	.create_qp_ex = t_create_qp_ex,
	.modify_qp = t_modify_qp,
	.destroy_qp = t_destroy_qp,
	.attach_mcast = t_attach_mcast,
	.detach_mcast = t_detach_mcast,
	.create_ah = t_create_ah,
	.destroy_ah = t_destroy_ah,
	.create_flow = t_create_flow,
	.destroy_flow = t_destroy_flow,
	.post_send = t_post_send,
	.post_recv = t_post_recv,
	.poll_cq = t_poll_cq,
	.req_notify_cq = t_req_notify_cq,
	.get_cq_event = t_get_cq_event,
	.ack_cq_events = t_ack_cq_events,
	.get_async_event = t_get_async_event,
	.ack_async_event = t_ack_async_event,
	.ifinfo = t_ifinfo,
	.neigh_resolve = t_neigh_resolve,
	.link_kring = t_link_kring,
};

/* A fork while another thread held the mutex (writing a line) would
 * leave it held in the child for good. */
static void tr_atfork_child(void)
{
	pthread_mutex_init(&tr_mu, NULL);
}

void sl_verbs_trace_check(void)
{
	static bool atfork;
	const char *path;

	if (sl_verbs == &sl_verbs_trace_api)
		return;
	path = getenv("SLUICE_VERBS_TRACE");
	if (!path || !*path)
		return;
	pthread_mutex_lock(&tr_mu);
	if (tr_fd < 0)
		tr_fd = sl_sys_openat(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	pthread_mutex_unlock(&tr_mu);
	if (tr_fd < 0)
		return;
	if (!atfork)
		atfork = !pthread_atfork(NULL, NULL, tr_atfork_child);
	tr_inner = sl_verbs;
	sl_verbs_trace_api.uverbs_path = tr_inner->uverbs_path;
	sl_verbs = &sl_verbs_trace_api;
}
