// SPDX-License-Identifier: BSD-2-Clause
/*
 * A recorded verbs trace (SLUICE_VERBS_TRACE, lib/link/README.md "The
 * verbs trace") replayed against the strict model (verbs_double.h): the
 * same calls with the same arguments in the same order, each result
 * compared with the one recorded.  A call the model refuses that the
 * recording's device accepted, or one the device refused with an errno
 * a rule gives (EINVAL, EPERM, EBUSY, EOPNOTSUPP, EACCES) that the model
 * accepts, is a mismatch, named with the model's rule.  What the wire and
 * the fabric did is taken from the recording as input, not checked:
 * receive completions (a frame of that length arrives, with or without a
 * GRH), error completions and a QP that fell into the error state, async
 * events, the port's attributes, a missing CAP_NET_RAW (a flow rule
 * refused with EPERM), and resource failures (ENOMEM, EMFILE, EIO, ...),
 * which no rule predicts.  Completion channels' events and the module's
 * calls (ifinfo, neigh_resolve, link_kring) are not modelled: skipped.
 * Each process of a trace is replayed on its own model; each link setup
 * (get_device_list) starts a fresh device, as the model holds one link.
 *
 *   test_verbs_replay [TRACE...]     (default: the fixtures in traces/)
 *
 * Besides the fixtures, altered copies of one are replayed and must
 * fail, each naming the rule the altered call breaks.
 */
#include <sys/mman.h>
#include <arpa/inet.h>

#include "tap.h"
#include "verbs_double.h"

#define RP_IDS		4096
#define RP_LINE		16384

struct rp_ref {
	char kind[8];
	unsigned int id;
	void *obj;
	uint8_t *buf;		/* MRs: the replay's memory in their place */
	size_t len;
};

static struct rp_ref rp_ref[RP_IDS];
static int rp_nref;
static int rp_calls, rp_skipped, rp_mismatch;
static char rp_first[512];	/* the first mismatch, for the report */
static bool rp_quiet;

static struct rp_ref *rp_find(const char *tok);

/* The replay's ids go, and with them what the model still holds for
 * them (a trace cut short, or an altered one the model refused to tear
 * down). */
static void rp_clear(void)
{
	for (int i = 0; i < rp_nref; i++) {
		struct rp_ref *r = &rp_ref[i];

		if (r->obj && !strcmp(r->kind, "ctx"))
			vd_close_device(r->obj);
		else if (r->obj && !strcmp(r->kind, "ch"))
			vd_destroy_comp_channel(r->obj);
		else if (r->obj)
			vd_free(r->obj);
		if (r->buf)
			munmap(r->buf, r->len);
	}
	rp_nref = 0;
}

/* A destroy the model carried out: the id no longer holds anything. */
static int rp_gone(const char *tok, int ret)
{
	struct rp_ref *r = rp_find(tok);

	if (r && !ret)
		r->obj = NULL;
	return ret;
}

/* "qp3" -> the model's object it stands for. */
static struct rp_ref *rp_find(const char *tok)
{
	char kind[8];
	unsigned int id;

	if (!tok || sscanf(tok, "%7[a-z]%u", kind, &id) != 2)
		return NULL;
	for (int i = rp_nref - 1; i >= 0; i--)
		if (rp_ref[i].id == id && !strcmp(rp_ref[i].kind, kind))
			return &rp_ref[i];
	return NULL;
}

static void *rp_obj(const char *tok)
{
	struct rp_ref *r = rp_find(tok);

	return r ? r->obj : NULL;
}

static struct rp_ref *rp_add(const char *tok, void *obj)
{
	struct rp_ref *r;

	if (!tok || !obj || rp_nref >= RP_IDS)
		return NULL;
	r = &rp_ref[rp_nref++];
	memset(r, 0, sizeof(*r));
	if (sscanf(tok, "%7[a-z]%u", r->kind, &r->id) != 2)
		rp_nref--;
	r->obj = obj;
	return r;
}

/* The tokens of one line. */
struct rp_line {
	char buf[RP_LINE];
	char *tok[1200];
	int n;
	int eq;			/* index of "=" */
	int pid;
	const char *call;
	int lineno;
	const char *file;
};

static const char *rp_val(const struct rp_line *l, const char *key, bool after)
{
	size_t k = strlen(key);

	for (int i = after ? l->eq + 1 : 3; i < (after ? l->n : l->eq); i++)
		if (!strncmp(l->tok[i], key, k) && l->tok[i][k] == '=')
			return l->tok[i] + k + 1;
	return NULL;
}

static unsigned long rp_num(const struct rp_line *l, const char *key, bool after)
{
	const char *v = rp_val(l, key, after);

	return v ? strtoul(v, NULL, 0) : 0;
}

static const char *rp_arg(const struct rp_line *l, int i)
{
	return 3 + i < l->eq ? l->tok[3 + i] : NULL;
}

/* The recorded result: 0 (success), or the errno named. */
static int rp_errno_named(const char *name)
{
	for (int e = 1; e < 134; e++) {
		const char *n = strerrorname_np(e);

		if (n && !strcmp(n, name))
			return e;
	}
	return atoi(name);
}

static int rp_recorded(const struct rp_line *l)
{
	const char *r = l->eq + 1 < l->n ? l->tok[l->eq + 1] : "";

	return r[0] == '-' ? rp_errno_named(r + 1) : 0;
}

/* An errno no model rule gives: the host's or the fabric's, injected. */
static bool rp_fault(int err)
{
	return err && err != EINVAL && err != EPERM && err != EBUSY && err != EOPNOTSUPP &&
	       err != EACCES;
}

static void rp_report(const struct rp_line *l, int want, int got)
{
	char msg[512];

	rp_mismatch++;
	snprintf(msg, sizeof(msg), "%s:%d pid %d %s: recorded %s, model %s%s%s", l->file,
		 l->lineno, l->pid, l->call, want ? strerrorname_np(want) : "success",
		 got ? strerrorname_np(got) : "success", vd.last_violation[0] ? ": rule: " : "",
		 vd.last_violation);
	if (!rp_first[0])
		snprintf(rp_first, sizeof(rp_first), "%s", msg);
	if (!rp_quiet)
		printf("# mismatch: %s\n", msg);
}

/* Compare a call's outcome (0 or errno) with the recorded one. */
static void rp_check(const struct rp_line *l, int want, int got)
{
	if (!want != !got || (want && got && want != got))
		rp_report(l, want, got);
}

static void rp_hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n && s && s[2 * i] && s[2 * i + 1]; i++) {
		unsigned int x;

		if (sscanf(s + 2 * i, "%2x", &x) == 1)
			out[i] = (uint8_t)x;
	}
}

/* "mr2+4096/2048" -> an SGE in the replay's memory for that MR. */
static void rp_sge(const char *s, struct ibv_sge *sge)
{
	static uint8_t scratch[65536];
	unsigned int id;
	unsigned long long off = 0;
	unsigned int len = 0;
	char name[16];

	memset(sge, 0, sizeof(*sge));
	if (sscanf(s, "mr%u+%llu/%u", &id, &off, &len) == 3) {
		struct rp_ref *r;

		snprintf(name, sizeof(name), "mr%u", id);
		r = rp_find(name);
		if (r && r->buf && off + len <= r->len) {
			sge->addr = (uintptr_t)(r->buf + off);
			sge->length = len;
			sge->lkey = ((struct ibv_mr *)r->obj)->lkey;
			return;
		}
	} else {
		sscanf(s, "?/%u", &len);
	}
	sge->addr = (uintptr_t)scratch;
	sge->length = len < sizeof(scratch) ? len : sizeof(scratch);
}

static void rp_send_wrs(const struct rp_line *l, struct ibv_send_wr *wr, struct ibv_sge *sge,
			int max)
{
	int n = 0;

	for (int i = 3; i < l->eq && n < max; i++) {
		char *f[16], tmp[512];
		int nf = 0;

		if (strncmp(l->tok[i], "wr=", 3))
			continue;
		snprintf(tmp, sizeof(tmp), "%s", l->tok[i] + 3);
		for (char *p = strtok(tmp, ","); p && nf < 16; p = strtok(NULL, ","))
			f[nf++] = p;
		if (nf < 6)
			continue;
		memset(&wr[n], 0, sizeof(wr[n]));
		wr[n].wr_id = strtoull(f[0], NULL, 0);
		wr[n].opcode = (enum ibv_wr_opcode)strtol(f[1], NULL, 0);
		wr[n].send_flags = (unsigned int)strtoul(f[2], NULL, 0);
		wr[n].wr.ud.ah = rp_obj(f[3]);
		wr[n].wr.ud.remote_qpn = (uint32_t)strtoul(f[4], NULL, 0);
		wr[n].wr.ud.remote_qkey = (uint32_t)strtoul(f[5], NULL, 0);
		wr[n].sg_list = &sge[4 * n];
		for (int k = 6; k < nf && k - 6 < 4; k++)
			rp_sge(f[k], &sge[4 * n + k - 6]);
		wr[n].num_sge = nf - 6 < 4 ? nf - 6 : 4;
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
}

static void rp_recv_wrs(const struct rp_line *l, struct ibv_recv_wr *wr, struct ibv_sge *sge,
			int max)
{
	int n = 0;

	for (int i = 3; i < l->eq && n < max; i++) {
		char *f[8], tmp[512];
		int nf = 0;

		if (strncmp(l->tok[i], "wr=", 3))
			continue;
		snprintf(tmp, sizeof(tmp), "%s", l->tok[i] + 3);
		for (char *p = strtok(tmp, ","); p && nf < 8; p = strtok(NULL, ","))
			f[nf++] = p;
		memset(&wr[n], 0, sizeof(wr[n]));
		wr[n].wr_id = strtoull(f[0], NULL, 0);
		wr[n].sg_list = &sge[4 * n];
		for (int k = 1; k < nf && k - 1 < 4; k++)
			rp_sge(f[k], &sge[4 * n + k - 1]);
		wr[n].num_sge = nf - 1 < 4 ? nf - 1 : 4;
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
}

/* A flow attribute with its specs, from "type= priority= port= flags=
 * ipv4=a/m>b/m tcp=p/m>p/m". */
static void rp_flow(const struct rp_line *l, uint8_t *out, size_t room)
{
	struct ibv_flow_attr *a = (struct ibv_flow_attr *)out;
	uint8_t *p = out + sizeof(*a);

	memset(out, 0, room);
	a->type = (enum ibv_flow_attr_type)rp_num(l, "type", false);
	a->priority = (uint16_t)rp_num(l, "priority", false);
	a->port = (uint8_t)rp_num(l, "port", false);
	a->flags = (uint32_t)rp_num(l, "flags", false);
	for (int i = 3; i < l->eq; i++) {
		const char *t = l->tok[i];
		char s[4][32];
		unsigned int sp, spm, dp, dpm;

		if (!strncmp(t, "ipv4=", 5) &&
		    sscanf(t + 5, "%31[0-9.]/%31[0-9.]>%31[0-9.]/%31[0-9.]", s[0], s[1], s[2], s[3]) == 4) {
			struct ibv_flow_spec_ipv4 *v = (void *)p;

			v->type = IBV_FLOW_SPEC_IPV4;
			v->size = sizeof(*v);
			inet_pton(AF_INET, s[0], &v->val.src_ip);
			inet_pton(AF_INET, s[1], &v->mask.src_ip);
			inet_pton(AF_INET, s[2], &v->val.dst_ip);
			inet_pton(AF_INET, s[3], &v->mask.dst_ip);
			p += sizeof(*v);
			a->num_of_specs++;
		} else if ((!strncmp(t, "tcp=", 4) || !strncmp(t, "udp=", 4)) &&
			   sscanf(t + 4, "%u/%x>%u/%x", &sp, &spm, &dp, &dpm) == 4) {
			struct ibv_flow_spec_tcp_udp *u = (void *)p;

			u->type = t[0] == 't' ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;
			u->size = sizeof(*u);
			u->val.src_port = htons((uint16_t)sp);
			u->mask.src_port = htons((uint16_t)spm);
			u->val.dst_port = htons((uint16_t)dp);
			u->mask.dst_port = htons((uint16_t)dpm);
			p += sizeof(*u);
			a->num_of_specs++;
		} else if (!strncmp(t, "spec=", 5)) {
			const char *h = strchr(t, ':');
			size_t n = h ? strlen(h + 1) / 2 : 0;

			if (h && p + n <= out + room) {
				rp_hex(h + 1, p, n);
				p += n;
				a->num_of_specs++;
			}
		}
	}
	a->size = (uint16_t)(p - out);
}

/* Receive completions the recording's device gave: the wire's part
 * (frames arriving, a QP that fell into error) made to happen in the
 * model, then the same poll. */
static void rp_poll(const struct rp_line *l)
{
	struct ibv_cq *cq = rp_obj(rp_arg(l, 0));
	int want = (int)strtol(l->tok[l->eq + 1], NULL, 0), got;
	struct ibv_wc rec[64], wc[64];
	int nrec = 0;

	for (int i = l->eq + 2; i < l->n && nrec < 64; i++) {
		unsigned long long id;
		int st, op;
		unsigned int len, fl, src;

		if (sscanf(l->tok[i], "wc=%llu,%d,%d,%u,%x,%x", &id, &st, &op, &len, &fl, &src) != 6)
			continue;
		memset(&rec[nrec], 0, sizeof(rec[0]));
		rec[nrec].wr_id = id;
		rec[nrec].status = (enum ibv_wc_status)st;
		rec[nrec].opcode = (enum ibv_wc_opcode)op;
		rec[nrec].byte_len = len;
		rec[nrec].wc_flags = fl;
		rec[nrec].src_qp = src;
		nrec++;
	}
	if (!cq) {
		rp_skipped++;
		return;
	}
	for (int i = 0; i < nrec; i++) {
		const struct ibv_wc *w = &rec[i];

		if (w->status == IBV_WC_WR_FLUSH_ERR) {
			if (vd.qp_state != IBV_QPS_ERR && vd.qp)
				vd_qp_error(false);
		} else if (cq == vd.scq) {
			if (w->status != IBV_WC_SUCCESS && vd.n_swc < VD_OUT_MAX) {
				/* An error completion the fabric gave. */
				memset(&vd.swc[vd.n_swc], 0, sizeof(vd.swc[0]));
				vd.swc[vd.n_swc].wr_id = w->wr_id;
				vd.swc[vd.n_swc++].status = w->status;
				for (int k = 0; k < vd.n_out; k++)
					if (vd.out[k].wr_id == w->wr_id) {
						memmove(vd.out + k, vd.out + k + 1,
							sizeof(vd.out[0]) * (size_t)(vd.n_out - k - 1));
						vd.n_out--;
						break;
					}
			}
		} else if (w->status == IBV_WC_SUCCESS) {
			static uint8_t frame[65536];
			uint8_t sgid[16] = { 0xfe, 0x80 };
			uint32_t len = w->byte_len > SL_IPOIB_GRH_LEN ? w->byte_len - SL_IPOIB_GRH_LEN : 0;

			vd_rx(frame, len < sizeof(frame) ? len : sizeof(frame), w->wc_flags & ~IBV_WC_GRH,
			      w->src_qp, w->wc_flags & IBV_WC_GRH ? sgid : NULL);
		} else if (w->status == IBV_WC_LOC_LEN_ERR && vd.n_rq) {
			static uint8_t big[65536];

			vd_rx(big, vd.rq[0].len, 0, w->src_qp, NULL);
		} else if (vd.n_rq) {
			uint64_t id = vd.rq[0].wr_id;

			memmove(vd.rq, vd.rq + 1, sizeof(vd.rq[0]) * (size_t)(vd.n_rq - 1));
			vd.n_rq--;
			vd_rwc_push(id, w->status);
		}
	}
	got = vd_poll_cq(cq, want > 64 ? 64 : want, wc);
	if (got != want) {
		char msg[160];

		snprintf(msg, sizeof(msg), "the device completed %d WRs, the model %d", want, got);
		snprintf(vd.last_violation, sizeof(vd.last_violation), "%s", msg);
		rp_report(l, 0, EINVAL);
		return;
	}
	for (int i = 0; i < got && i < nrec; i++)
		if (wc[i].wr_id != rec[i].wr_id || wc[i].status != rec[i].status) {
			snprintf(vd.last_violation, sizeof(vd.last_violation),
				 "completion %d: device wr %llu status %d, model wr %llu status %d", i,
				 (unsigned long long)rec[i].wr_id, rec[i].status,
				 (unsigned long long)wc[i].wr_id, wc[i].status);
			rp_report(l, 0, EINVAL);
			return;
		}
}

static void rp_async(const struct rp_line *l)
{
	int type = (int)rp_num(l, "event", true);
	struct ibv_async_event e;
	int ret;

	if (type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
	    type == IBV_EVENT_QP_ACCESS_ERR) {
		if (vd.qp_state != IBV_QPS_ERR)
			vd_qp_error(false);
		vd_event((enum ibv_event_type)type, 0);
	} else {
		vd_event((enum ibv_event_type)type, (uint8_t)rp_num(l, "port", true));
	}
	ret = vd_get_async_event(vd.ctx, &e);
	if (ret || (int)e.event_type != type) {
		snprintf(vd.last_violation, sizeof(vd.last_violation), "event %d not delivered", type);
		rp_report(l, 0, EINVAL);
		return;
	}
	vd_ack_async_event(&e);
}

/* Fail the next call with the recorded errno when it is a fault no rule
 * gives, so the model follows the recording's path. */
static void rp_inject(enum vd_call c, int want)
{
	if (rp_fault(want))
		vd.fail[c] = want;
}

static int rp_ret(int ret)
{
	return ret ? (ret < 0 ? errno : ret) : 0;
}

/* errno is read here, after the call (an argument's order of
 * evaluation is unspecified). */
static void rp_made(const struct rp_line *l, void *obj)
{
	int want = rp_recorded(l), err = errno;

	rp_check(l, want, obj ? 0 : err);
	if (obj && !want)
		rp_add(l->tok[l->eq + 1], obj);
}

static void rp_one(struct rp_line *l)
{
	const char *c = l->call;
	int want = rp_recorded(l);

	vd.last_violation[0] = 0;
	errno = 0;
	rp_calls++;
	if ((!strncmp(c, "destroy_", 8) || !strncmp(c, "dealloc_", 8) || !strncmp(c, "dereg_", 6) ||
	     !strcmp(c, "close_device")) && !rp_obj(rp_arg(l, 0))) {
		snprintf(vd.last_violation, sizeof(vd.last_violation),
			 "%s of an object that does not exist", c);
		rp_report(l, want, EINVAL);
		return;
	}
	if (!strcmp(c, "get_device_list")) {
		int n = 0;
		struct ibv_device **list;

		/* A link's setup: a fresh device, as the recording's. */
		rp_clear();
		vd_reset(IBV_LINK_LAYER_INFINIBAND);
		rp_inject(VD_get_device_list, want);
		list = vd_get_device_list(&n);
		rp_check(l, want, list ? 0 : errno);
		if (list)
			vd_free_device_list(list);
	} else if (!strcmp(c, "open_device")) {
		struct ibv_device d;

		memset(&d, 0, sizeof(d));
		snprintf(vd.dev_name, sizeof(vd.dev_name), "%s", rp_val(l, "dev", false));
		rp_inject(VD_open_device, want);
		rp_made(l, vd_open_device(&d));
	} else if (!strcmp(c, "close_device")) {
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_close_device(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "query_device_ex")) {
		struct ibv_device_attr_ex a;

		rp_check(l, want, rp_ret(vd_query_device_ex(vd.ctx, &a)));
	} else if (!strcmp(c, "query_port")) {
		struct ibv_port_attr a;

		/* The port is the recording's. */
		if (!want) {
			vd.port.state = (enum ibv_port_state)rp_num(l, "state", true);
			vd.port.active_mtu = (enum ibv_mtu)rp_num(l, "active_mtu", true);
			vd.port.max_mtu = (enum ibv_mtu)rp_num(l, "max_mtu", true);
			vd.port.link_layer = (uint8_t)rp_num(l, "link_layer", true);
			vd.port.lid = (uint16_t)rp_num(l, "lid", true);
			vd.port.sm_lid = (uint16_t)rp_num(l, "sm_lid", true);
		}
		rp_inject(VD_query_port, want);
		rp_check(l, want, rp_ret(vd_query_port(vd.ctx, 1, &a)));
	} else if (!strcmp(c, "query_gid")) {
		union ibv_gid g;

		rp_hex(rp_val(l, "gid", true), vd.gid.raw, 16);
		rp_inject(VD_query_gid, want);
		rp_check(l, want, rp_ret(vd_query_gid(vd.ctx, 1, 0, &g)));
	} else if (!strcmp(c, "query_pkey")) {
		__be16 pk;

		if (!want)
			vd.pkey = (uint16_t)rp_num(l, "pkey", true);
		rp_inject(VD_query_pkey, want);
		rp_check(l, want, rp_ret(vd_query_pkey(vd.ctx, 1, 0, &pk)));
	} else if (!strcmp(c, "query_gid_ex")) {
		rp_skipped++;	/* the model has no GID table (RoCE's) */
	} else if (!strcmp(c, "alloc_pd")) {
		rp_inject(VD_alloc_pd, want);
		rp_made(l, vd_alloc_pd(rp_obj(rp_arg(l, 0))));
	} else if (!strcmp(c, "dealloc_pd")) {
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_dealloc_pd(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "reg_mr")) {
		size_t len = rp_num(l, "len", false);
		uint8_t *buf = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		struct ibv_mr *mr;
		struct rp_ref *r;

		if (buf == MAP_FAILED)
			buf = NULL;
		rp_inject(VD_reg_mr, want);
		mr = vd_reg_mr(rp_obj(rp_arg(l, 0)), buf, len, (int)rp_num(l, "access", false));
		rp_check(l, want, mr ? 0 : errno);
		r = mr && !want ? rp_add(l->tok[l->eq + 1], mr) : NULL;
		if (r) {
			r->buf = buf;
			r->len = len ? len : 1;
		} else if (buf) {
			munmap(buf, len ? len : 1);
		}
	} else if (!strcmp(c, "dereg_mr")) {
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_dereg_mr(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "create_comp_channel")) {
		rp_inject(VD_create_comp_channel, want);
		rp_made(l, vd_create_comp_channel(rp_obj(rp_arg(l, 0))));
	} else if (!strcmp(c, "destroy_comp_channel")) {
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_destroy_comp_channel(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "create_cq")) {
		rp_inject(VD_create_cq, want);
		rp_made(l, vd_create_cq(rp_obj(rp_arg(l, 0)), (int)rp_num(l, "cqe", false), NULL,
					rp_obj(rp_val(l, "channel", false)), 0));
	} else if (!strcmp(c, "destroy_cq")) {
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_destroy_cq(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "create_qp") || !strcmp(c, "create_qp_ex")) {
		struct ibv_qp_init_attr_ex a;
		struct ibv_qp *qp;

		memset(&a, 0, sizeof(a));
		a.qp_type = (enum ibv_qp_type)rp_num(l, "type", false);
		a.send_cq = rp_obj(rp_val(l, "send_cq", false));
		a.recv_cq = rp_obj(rp_val(l, "recv_cq", false));
		a.cap.max_send_wr = (uint32_t)rp_num(l, "max_send_wr", false);
		a.cap.max_recv_wr = (uint32_t)rp_num(l, "max_recv_wr", false);
		a.cap.max_send_sge = (uint32_t)rp_num(l, "max_send_sge", false);
		a.cap.max_recv_sge = (uint32_t)rp_num(l, "max_recv_sge", false);
		a.cap.max_inline_data = (uint32_t)rp_num(l, "max_inline", false);
		a.sq_sig_all = (int)rp_num(l, "sq_sig_all", false);
		if (!strcmp(c, "create_qp")) {
			rp_inject(VD_create_qp, want);
			qp = vd_create_qp(rp_obj(rp_arg(l, 0)), (struct ibv_qp_init_attr *)&a);
		} else {
			a.pd = rp_obj(rp_val(l, "pd", false));
			a.comp_mask = (uint32_t)rp_num(l, "comp_mask", false);
			a.create_flags = (uint32_t)rp_num(l, "create_flags", false);
			a.source_qpn = (uint32_t)rp_num(l, "source_qpn", false);
			rp_inject(VD_create_qp_ex, want);
			qp = a.pd ? vd_create_qp_ex(rp_obj(rp_arg(l, 0)), &a) : NULL;
		}
		rp_made(l, qp);
	} else if (!strcmp(c, "modify_qp")) {
		struct ibv_qp_attr a;
		int mask = (int)rp_num(l, "mask", false);

		memset(&a, 0, sizeof(a));
		a.qp_state = (enum ibv_qp_state)rp_num(l, "state", false);
		a.cur_qp_state = (enum ibv_qp_state)rp_num(l, "cur_state", false);
		a.pkey_index = (uint16_t)rp_num(l, "pkey_index", false);
		a.port_num = (uint8_t)rp_num(l, "port", false);
		a.qkey = (uint32_t)rp_num(l, "qkey", false);
		a.sq_psn = (uint32_t)rp_num(l, "sq_psn", false);
		rp_inject(VD_modify_qp, want);
		rp_check(l, want, rp_ret(vd_modify_qp(rp_obj(rp_arg(l, 0)), &a, mask)));
	} else if (!strcmp(c, "destroy_qp")) {
		rp_inject(VD_destroy_qp, want);
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_destroy_qp(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "attach_mcast") || !strcmp(c, "detach_mcast")) {
		union ibv_gid g;
		uint16_t lid = (uint16_t)rp_num(l, "lid", false);
		struct ibv_qp *qp = rp_obj(rp_arg(l, 0));

		rp_hex(rp_val(l, "gid", false), g.raw, 16);
		if (c[0] == 'a') {
			rp_inject(VD_attach_mcast, want);
			rp_check(l, want, rp_ret(vd_attach_mcast(qp, &g, lid)));
		} else {
			rp_check(l, want, rp_ret(vd_detach_mcast(qp, &g, lid)));
		}
	} else if (!strcmp(c, "create_ah")) {
		struct ibv_ah_attr a;

		memset(&a, 0, sizeof(a));
		a.dlid = (uint16_t)rp_num(l, "dlid", false);
		a.sl = (uint8_t)rp_num(l, "sl", false);
		a.port_num = (uint8_t)rp_num(l, "port", false);
		a.is_global = (uint8_t)rp_num(l, "is_global", false);
		rp_hex(rp_val(l, "dgid", false), a.grh.dgid.raw, 16);
		a.grh.sgid_index = (uint8_t)rp_num(l, "sgid_index", false);
		a.grh.hop_limit = (uint8_t)rp_num(l, "hop_limit", false);
		a.grh.traffic_class = (uint8_t)rp_num(l, "traffic_class", false);
		rp_inject(VD_create_ah, want);
		rp_made(l, vd_create_ah(rp_obj(rp_arg(l, 0)), &a));
	} else if (!strcmp(c, "destroy_ah")) {
		rp_check(l, want, rp_ret(rp_gone(rp_arg(l, 0), vd_destroy_ah(rp_obj(rp_arg(l, 0))))));
	} else if (!strcmp(c, "create_flow")) {
		static uint8_t attr[1024] __attribute__((aligned(8)));

		rp_flow(l, attr, sizeof(attr));
		/* A rule refused with EPERM: the process lacked CAP_NET_RAW. */
		vd.no_net_raw = want == EPERM;
		rp_inject(VD_create_flow, want);
		rp_made(l, vd_create_flow(rp_obj(rp_arg(l, 0)), (struct ibv_flow_attr *)attr));
		vd.no_net_raw = false;
	} else if (!strcmp(c, "destroy_flow")) {
		int before = vd.violations;

		vd_destroy_flow(rp_obj(rp_arg(l, 0)));
		rp_gone(rp_arg(l, 0), 0);
		rp_check(l, want, vd.violations > before ? EPERM : 0);
	} else if (!strcmp(c, "post_send")) {
		static struct ibv_send_wr wr[64];
		static struct ibv_sge sge[256];
		struct ibv_send_wr *bad = NULL;

		memset(wr, 0, sizeof(wr));
		rp_send_wrs(l, wr, sge, 64);
		rp_inject(VD_post_send, want);
		rp_check(l, want, rp_ret(vd_post_send(rp_obj(rp_arg(l, 0)), wr, &bad)));
	} else if (!strcmp(c, "post_recv")) {
		static struct ibv_recv_wr wr[1024];
		static struct ibv_sge sge[4096];
		struct ibv_recv_wr *bad = NULL;

		memset(wr, 0, sizeof(wr));
		rp_recv_wrs(l, wr, sge, 1024);
		rp_inject(VD_post_recv, want);
		rp_check(l, want, rp_ret(vd_post_recv(rp_obj(rp_arg(l, 0)), wr, &bad)));
	} else if (!strcmp(c, "poll_cq")) {
		rp_poll(l);
	} else if (!strcmp(c, "req_notify_cq")) {
		rp_inject(VD_req_notify_cq, want);
		rp_check(l, want, rp_ret(vd_req_notify_cq(rp_obj(rp_arg(l, 0)), 0)));
	} else if (!strcmp(c, "get_async_event")) {
		if (!want)
			rp_async(l);
	} else {
		/* ack_async_event (done with its get), completion channel
		 * events, the module's calls: not modelled. */
		rp_skipped++;
		rp_calls--;
	}
}

static int rp_split(struct rp_line *l)
{
	char *save = NULL;

	l->n = 0;
	l->eq = -1;
	for (char *t = strtok_r(l->buf, " \n", &save); t && l->n < 1200;
	     t = strtok_r(NULL, " \n", &save)) {
		if (l->eq < 0 && !strcmp(t, "="))
			l->eq = l->n;
		l->tok[l->n++] = t;
	}
	if (l->n < 3 || l->tok[0][0] == '#')
		return -1;
	if (l->eq < 0)
		l->eq = l->n;
	l->pid = atoi(l->tok[0]);
	l->call = l->tok[2];
	return 0;
}

/* Replay text (a whole trace); the number of mismatches, -1 if nothing
 * could be read. */
static int rp_replay(const char *name, const char *text)
{
	static struct rp_line l;
	int pids[64], npid = 0, lines = 0;

	rp_calls = rp_skipped = rp_mismatch = 0;
	rp_first[0] = 0;
	/* The processes, in the order they first appear. */
	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		int pid = atoi(p), k;

		if (*p == '#' || *p == '\n' || pid <= 0)
			continue;
		for (k = 0; k < npid && pids[k] != pid; k++)
			;
		if (k == npid && npid < 64)
			pids[npid++] = pid;
	}
	for (int k = 0; k < npid; k++) {
		int lineno = 0;

		vd_reset(IBV_LINK_LAYER_INFINIBAND);
		rp_clear();
		for (const char *p = text; *p;) {
			const char *e = strchr(p, '\n');
			size_t n = e ? (size_t)(e - p) : strlen(p);

			lineno++;
			if (n < sizeof(l.buf) && atoi(p) == pids[k]) {
				memcpy(l.buf, p, n);
				l.buf[n] = 0;
				l.lineno = lineno;
				l.file = name;
				if (!rp_split(&l)) {
					rp_one(&l);
					lines++;
				}
			}
			p = e ? e + 1 : p + n;
		}
	}
	rp_clear();
	sl_verbs = &sl_verbs_real;
	return lines ? rp_mismatch : -1;
}

static char *rp_read(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	if (getdelim(&text, &len, 0, f) < 0) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

static const char *rp_fixture_dir(void)
{
	static char dir[4200];
	char exe[4000];
	ssize_t n;

	if (!access("tests/unit/traces", R_OK))
		return "tests/unit/traces";
	/* build/tests/unit/test_verbs_replay -> tests/unit/traces */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		for (int up = 0; up < 4; up++) {
			char *s = strrchr(exe, '/');

			if (s)
				*s = 0;
		}
		snprintf(dir, sizeof(dir), "%s/tests/unit/traces", exe);
	}
	return dir;
}

/*
 * Replace the first line of text whose call is `call` and that contains
 * `has` by `with` (the same pid and sequence number kept): a recording
 * altered to a call the model forbids.
 */
static char *rp_alter(const char *text, const char *call, const char *has, const char *from,
		      const char *to)
{
	char pat[64];
	const char *p = text;

	snprintf(pat, sizeof(pat), " %s ", call);
	while ((p = strstr(p, pat))) {
		const char *bol = p, *eol = strchr(p, '\n'), *f;

		while (bol > text && bol[-1] != '\n')
			bol--;
		if (!eol)
			eol = p + strlen(p);
		f = strstr(bol, from);
		if (strstr(bol, has) && strstr(bol, has) < eol && f && f < eol) {
			size_t a = (size_t)(f - text), nl = strlen(text), nf = strlen(from),
			       nt = strlen(to);
			char *out = malloc(nl - nf + nt + 1);

			memcpy(out, text, a);
			memcpy(out + a, to, nt);
			memcpy(out + a + nt, f + nf, nl - a - nf + 1);
			return out;
		}
		p = eol;
	}
	return NULL;
}

static void rp_expect_fail(const char *text, const char *what, const char *call, const char *has,
			   const char *from, const char *to, const char *rule)
{
	char *alt = rp_alter(text, call, has, from, to);
	int m;

	if (!tap_ok(alt != NULL, "altered (%s): the line to alter is there", what))
		return;
	rp_quiet = true;
	m = rp_replay("altered", alt);
	rp_quiet = false;
	tap_ok(m > 0 && strstr(rp_first, rule), "altered (%s): replay fails naming the rule (%s)",
	       what, rp_first);
	free(alt);
}

/*
 * The tracer itself (lib/link/verbs_trace.c), with the model as the
 * device: off, the links' table is left alone; on, every call through
 * the table is one line of the documented format, and the file replays
 * against the model with no mismatch.
 */
static void rp_roundtrip(void)
{
	char path[] = "/tmp/sl-vtrace-XXXXXX";
	const char *keep = getenv("RP_KEEP");
	const struct sl_verbs_api *t;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *ch;
	struct ibv_cq *rcq, *scq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_flow *flow;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_ah_attr aa;
	struct ibv_recv_wr rwr[4], *rbad;
	struct ibv_send_wr swr, *sbad;
	struct ibv_sge rsge[4], ssge;
	struct ibv_wc wc[8];
	struct sl_verbs_flow_rule fr;
	static uint8_t buf[65536], frame[100];
	char *text, want[160];
	int fd = mkstemp(path), n = 0, calls = 0, lines = 0, m;
	bool pids = true;

	if (fd >= 0)
		close(fd);
	vd_reset(IBV_LINK_LAYER_INFINIBAND);
	unsetenv("SLUICE_VERBS_TRACE");
	sl_verbs_trace_check();
	tap_ok(sl_verbs == &vd_api, "tracer: without SLUICE_VERBS_TRACE the links' table is left as it was");
	setenv("SLUICE_VERBS_TRACE", path, 1);
	sl_verbs_trace_check();
	t = sl_verbs;
	tap_ok(t != &vd_api, "tracer: with it, the table is wrapped");

	list = t->get_device_list(&n), calls++;
	ctx = t->open_device(list[0]), calls++;
	t->free_device_list(list);
	pd = t->alloc_pd(ctx), calls++;
	mr = t->reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE), calls++;
	ch = t->create_comp_channel(ctx), calls++;
	rcq = t->create_cq(ctx, 64, NULL, ch, 0), calls++;
	scq = t->create_cq(ctx, 64, NULL, NULL, 0), calls++;
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	qp = t->create_qp(pd, &ia), calls++;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = 0xb1b;
	t->modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), calls++;
	qa.qp_state = IBV_QPS_RTR;
	t->modify_qp(qp, &qa, IBV_QP_STATE), calls++;
	qa.qp_state = IBV_QPS_RTS;
	t->modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN), calls++;
	/* Refused by the rules (RTS -> INIT): recorded as refused. */
	qa.qp_state = IBV_QPS_INIT;
	t->modify_qp(qp, &qa, IBV_QP_STATE), calls++;
	vd.violations = 0;
	for (int i = 0; i < 4; i++) {
		memset(&rwr[i], 0, sizeof(rwr[i]));
		rwr[i].wr_id = (uint64_t)i;
		rsge[i].addr = (uintptr_t)(buf + 2048 * i);
		rsge[i].length = 2048;
		rsge[i].lkey = mr->lkey;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i < 3 ? &rwr[i + 1] : NULL;
	}
	t->post_recv(qp, rwr, &rbad), calls++;
	t->poll_cq(rcq, 8, wc);		/* nothing yet: counted, not written */
	vd_rx(frame, sizeof(frame), 0, 0x55, NULL);
	t->poll_cq(rcq, 8, wc), calls++;
	memset(&aa, 0, sizeof(aa));
	aa.dlid = 0x17;
	aa.port_num = 1;
	ah = t->create_ah(pd, &aa), calls++;
	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 9;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	ssge.addr = (uintptr_t)(buf + 32768);
	ssge.length = 64;
	ssge.lkey = mr->lkey;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = 0x456;
	swr.wr.ud.remote_qkey = 0xb1b;
	t->post_send(qp, &swr, &sbad), calls++;
	t->poll_cq(scq, 8, wc), calls++;
	memset(&fr, 0, sizeof(fr));
	fr.attr.size = sizeof(fr);
	fr.attr.num_of_specs = 2;
	fr.attr.port = 1;
	fr.ipv4.type = IBV_FLOW_SPEC_IPV4;
	fr.ipv4.size = sizeof(fr.ipv4);
	fr.ipv4.val.dst_ip = htonl(0x0a090001);
	fr.ipv4.mask.dst_ip = 0xffffffff;
	fr.l4.type = IBV_FLOW_SPEC_UDP;
	fr.l4.size = sizeof(fr.l4);
	fr.l4.val.dst_port = htons(6000);
	fr.l4.mask.dst_port = 0xffff;
	flow = t->create_flow(qp, &fr.attr), calls++;
	t->destroy_flow(flow), calls++;
	t->destroy_qp(qp), calls++;
	t->destroy_ah(ah), calls++;
	t->destroy_cq(scq), calls++;
	t->destroy_cq(rcq), calls++;
	t->destroy_comp_channel(ch), calls++;
	t->dereg_mr(mr), calls++;
	t->dealloc_pd(pd), calls++;
	t->close_device(ctx), calls++;
	unsetenv("SLUICE_VERBS_TRACE");

	text = rp_read(path);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
		lines++;
		pids = pids && atoi(p) == (int)getpid();
	}
	tap_ok(text && lines == calls && pids, "tracer: one line a call (%d of %d), each with the pid",
	       lines, calls);
	tap_ok(text && strstr(text, " create_qp pd1 type=4 send_cq=cq2 recv_cq=cq1 max_send_wr=16 "
			      "max_recv_wr=16 max_send_sge=1 max_recv_sge=1 max_inline=0 "
			      "sq_sig_all=0 = qp1 qpn=0x2a\n"),
	       "tracer: objects as small ids, the QP's init attributes and number");
	tap_ok(text && strstr(text, " modify_qp qp1 mask=0x71 state=1 pkey_index=0 port=1 qkey=0xb1b = 0\n") &&
	       strstr(text, " modify_qp qp1 mask=0x1 state=1 = -EINVAL\n"),
	       "tracer: modify_qp's mask, attributes and result, a refusal by its errno's name");
	tap_ok(text && strstr(text, " post_recv qp1 n=4 wr=0,mr1+0/2048 wr=1,mr1+2048/2048 ") &&
	       strstr(text, " post_send qp1 n=1 wr=9,2,0x2,ah1,0x456,0xb1b,mr1+32768/64 = 0\n"),
	       "tracer: work requests with their flags and SGEs as MR and offset");
	snprintf(want, sizeof(want), " poll_cq cq1 n=8 empty=1 = 1 wc=0,0,128,%u,0x0,0x55\n",
		 (unsigned int)sizeof(frame) + SL_IPOIB_GRH_LEN);
	tap_ok(text && strstr(text, want) && strstr(text, " poll_cq cq2 n=8 empty=0 = 1 wc=9,0,0,0,0x0,0x0\n"),
	       "tracer: completions with status, length and source QP; empty polls counted");
	tap_ok(text && strstr(text, " create_flow qp1 type=0 priority=0 port=1 flags=0x0 specs=2 "
			      "ipv4=0.0.0.0/0.0.0.0>10.9.0.1/255.255.255.255 udp=0/0x0>6000/0xffff = flow1\n"),
	       "tracer: a flow rule's specs");
	m = text ? rp_replay("roundtrip", text) : -1;
	tap_ok(m == 0, "tracer: its file replays against the model with no mismatch (%d calls)%s%s",
	       rp_calls, rp_first[0] ? ": " : "", rp_first);
	if (keep && text)
		fputs(text, stdout);
	free(text);
	unlink(path);
}

int main(int argc, char **argv)
{
	static const char *const fixtures[] = { "enhanced-unit.trace", "recovery-unit.trace",
						"softroce-vm.trace" };
	const char *dir = rp_fixture_dir();
	char path[4400], *text;

	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			int m;

			text = rp_read(argv[i]);
			m = text ? rp_replay(argv[i], text) : -1;
			tap_ok(m == 0, "%s: %d calls replayed, %d not modelled, %d mismatches%s%s",
			       argv[i], rp_calls, rp_skipped, m, rp_first[0] ? ": " : "", rp_first);
			free(text);
		}
		return tap_done();
	}
	rp_roundtrip();
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		int m;

		snprintf(path, sizeof(path), "%s/%s", dir, fixtures[i]);
		text = rp_read(path);
		if (!tap_ok(text != NULL, "fixture %s read", path))
			continue;
		m = rp_replay(fixtures[i], text);
		tap_ok(m == 0 && rp_calls > 20, "%s: %d calls replayed against the model, %d not modelled, %d mismatches%s%s",
		       fixtures[i], rp_calls, rp_skipped, m, rp_first[0] ? ": " : "", rp_first);
		if (i == 0) {
			/* Each alteration is a call a rule forbids. */
			rp_expect_fail(text, "an attribute besides the state on the underlay QP",
				       "modify_qp", "state=2", "mask=0x1 state=2",
				       "mask=0x11 pkey_index=0 state=2", "underlay QP");
			rp_expect_fail(text, "a send before RTS", "modify_qp", "state=3",
				       "mask=0x1 state=3", "mask=0x1 state=2",
				       "post_send to a QP not in RTS");
			rp_expect_fail(text, "the QP destroyed with a rule on it", "destroy_flow",
				       "flow2", "destroy_flow flow2", "query_device_ex ctx1",
				       "destroy_qp with flows");
			rp_expect_fail(text, "multicast attach on the underlay QP", "destroy_flow",
				       "flow2", "destroy_flow flow2 = 0",
				       "attach_mcast qp1 gid=ff12401bffff00000000000000000001 lid=0xc000 = 0",
				       "multicast attach on the underlay");
			rp_expect_fail(text, "a receive WR past the QP's SGEs", "post_recv", "wr=0,",
				       "wr=0,mr1+20/2028,mr3+0/64", "wr=0,mr1+20/2028,mr3+0/64,mr3+64/64",
				       "SGEs or WRs past");
			rp_expect_fail(text, "a send completion the model never owed", "poll_cq",
				       "cq2", "= 1 wc=0,0,0,0,0x0,0x0",
				       "= 2 wc=0,0,0,0,0x0,0x0 wc=7,0,0,0,0x0,0x0",
				       "the device completed 2 WRs, the model 1");
			rp_expect_fail(text, "a refusal the model does not make", "modify_qp",
				       "state=1", "state=1 = 0", "state=1 = -EINVAL",
				       "model success");
		}
		if (i == 2)
			/* Recorded on a real rdma-core and kernel: RESET->INIT
			 * without the Q_Key the kernel requires for UD. */
			rp_expect_fail(text, "Soft-RoCE: INIT without the Q_Key", "modify_qp",
				       "state=1", "mask=0x71 state=1 pkey_index=0 port=1 qkey=0xb1b",
				       "mask=0x31 state=1 pkey_index=0 port=1",
				       "UD transition or attribute mask not allowed");
		free(text);
	}
	return tap_done();
}
