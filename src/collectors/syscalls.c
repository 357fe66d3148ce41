/* User side of `ksight syscalls`: options, load with hook fallback, drain the per-CPU maps into a report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/names.h"
#include "core/tracefs.h"
#include "ksight/syscalls.h"
#include "syscalls.skel.h"

enum { OPT_ERRORS = 300, OPT_COUNT = 'L' };

/* Rows of the pid and comm modes; more are counted as map_full. */
#define SC_HASH_ROWS 8192
#define SC_START_CAP (1u << 22)

struct sc_ctx {
	enum ks_sc_by by;
	bool errors_only;
	bool count_only;
	const struct ks_filter *filter;
	struct ks_syscalls *skel;
	const char *hook;
	unsigned int gen;
	struct ks_sc_lost lost_seen; /* .bss counters already reported */
	unsigned long long missed_seen;
	void *vbuf; /* one per-CPU value of the largest map */
};

static const struct ks_optdef sc_opts[] = {
	{ "errors", OPT_ERRORS, NULL, "only failing calls (return value < 0)" },
	{ "no-latency", OPT_COUNT, NULL, "count only, no latency: one hook, cheaper" },
	{ 0 },
};

static int sc_parse_opt(void *vctx, int id, const char *arg)
{
	struct sc_ctx *ctx = vctx;

	(void)arg;
	if (id == OPT_ERRORS)
		ctx->errors_only = true;
	else if (id == OPT_COUNT)
		ctx->count_only = true;
	else
		return -EINVAL;
	return 0;
}

static enum ks_sc_by parse_by(const char *by)
{
	if (!by || !strcmp(by, "syscall"))
		return KS_SC_BY_SYSCALL;
	if (!strcmp(by, "pid"))
		return KS_SC_BY_PID;
	if (!strcmp(by, "comm"))
		return KS_SC_BY_COMM;
	return KS_SC_BY_ERRNO;
}

static bool hashed(const struct sc_ctx *ctx)
{
	return ctx->by == KS_SC_BY_PID || ctx->by == KS_SC_BY_COMM;
}

static int try_hook(void *vctx, const char *hook)
{
	struct sc_ctx *ctx = vctx;
	struct ks_syscalls *s;
	uint32_t nstart = 1, nhash = hashed(ctx) ? SC_HASH_ROWS : 1;
	int err;

	s = ks_syscalls__open();
	if (!s)
		return -errno;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	s->rodata->errors_only = ctx->errors_only;
	s->rodata->timed = !ctx->count_only;
	if (!ctx->count_only)
		nstart = ks_pow2_at_least(ks_pid_max(), SC_START_CAP);
	s->rodata->start_mask = nstart - 1;
	/* maps of the modes not in use shrink to one entry */
	bpf_map__set_max_entries(s->maps.starts, nstart);
	bpf_map__set_max_entries(s->maps.hrows, nhash);
	bpf_map__set_max_entries(s->maps.herrs, nhash * 4);
	bpf_map__set_max_entries(s->maps.pid_comm, ctx->by == KS_SC_BY_PID ? nhash : 1);
	if (hashed(ctx))
		bpf_map__set_max_entries(s->maps.rows, 1);
	if (ctx->by != KS_SC_BY_SYSCALL)
		bpf_map__set_max_entries(s->maps.errs, 1);

	if (!strcmp(hook, KS_HOOK_TP))
		ks_tracefs_dir(NULL);
	ks_prog_select(s->obj, hook);
	if (ctx->count_only)
		ks_prog_disable(s->obj, "sys_enter");
	err = ks_syscalls__load(s);
	if (!err)
		err = ks_syscalls__attach(s);
	if (err) {
		ks_syscalls__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	ctx->skel = s;
	return 0;
}

static int sc_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct sc_ctx *ctx = vctx;
	size_t vsz = sizeof(struct ks_sc_stat) > sizeof(__u64) * KS_SC_ERRS ? sizeof(struct ks_sc_stat)
									 : sizeof(__u64) * KS_SC_ERRS;

	ctx->by = parse_by(c->by);
	ctx->filter = f;
	ctx->vbuf = calloc((size_t)ks_ncpus(), vsz);
	if (!ctx->vbuf)
		return -ENOMEM;
	return ks_load_first(hooks, try_hook, ctx, &ctx->hook);
}

static const char *sc_hook(void *vctx)
{
	return ((struct sc_ctx *)vctx)->hook;
}

/* Sums the per-CPU copies of one ks_sc_stat in ctx->vbuf into @h and returns the count. */
static uint64_t sum_stat(const struct sc_ctx *ctx __attribute__((unused)), struct ks_hist *h, uint64_t *errors)
{
	const struct ks_sc_stat *v = ctx->vbuf;

	uint64_t count = 0;

	memset(h, 0, sizeof(*h));
	*errors = 0;
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		const struct ks_sc_stat *s = &v[cpu];

		/* in count-only mode the slots stay empty: count is the truth */
		ks_hist_add_slots(h, s->hist);
		count += s->count;
		h->sum += s->sum_ns;
		if (s->max_ns > h->max)
			h->max = s->max_ns;
		*errors += s->errors;
	}
	h->count = count;
	return count;
}

static const char *errno_label(int err, char *buf, size_t len)
{
	const char *n = err ? ks_errno_name(err) : "OK";

	if (n)
		return n;
	snprintf(buf, len, "E%d", err);
	return buf;
}

/* Turns the summed stat into a report row; takes ownership of @h. */
static int fill_row(const struct sc_ctx *ctx, struct ks_row *row, struct ks_hist *h, uint64_t errors)
{
	ks_row_val(row, "count", KS_VAL_COUNT, h->count);
	ks_row_val(row, "errors", KS_VAL_COUNT, errors);
	if (!ctx->count_only) {
		ks_row_val(row, "total_ns", KS_VAL_NS, h->sum);
		row->hist = h;
		row->sort = h->sum;
	} else {
		row->sort = h->count;
		free(h);
	}
	return 0;
}

static int collect_errs(struct sc_ctx *ctx, struct ks_row *row, __u32 idx)
{
	int fd = bpf_map__fd(ctx->skel->maps.errs);
	const __u64 *v = ctx->vbuf;
	uint64_t sums[KS_SC_ERRS] = { 0 };
	char b[16];

	if (bpf_map_lookup_elem(fd, &idx, ctx->vbuf))
		return -errno;
	for (int cpu = 0; cpu < ks_ncpus(); cpu++)
		for (int e = 0; e < KS_SC_ERRS; e++)
			sums[e] += v[cpu * KS_SC_ERRS + e];
	for (int e = 0; e < KS_SC_ERRS; e++)
		if (sums[e])
			ks_row_sub_add(row, errno_label((int)ks_sc_slot_err((__u32)e), b, sizeof(b)), sums[e]);
	memset(ctx->vbuf, 0, (size_t)ks_ncpus() * sizeof(__u64) * KS_SC_ERRS);
	return bpf_map_update_elem(fd, &idx, ctx->vbuf, BPF_ANY) ? -errno : 0;
}

static int collect_rows(struct sc_ctx *ctx, struct ks_report *r, unsigned int gen)
{
	int fd = bpf_map__fd(ctx->skel->maps.rows);
	size_t vsz = (size_t)ks_ncpus() * sizeof(struct ks_sc_stat);

	for (__u32 row_id = 0; row_id < KS_SC_ROWS; row_id++) {
		__u32 idx = gen * KS_SC_ROWS + row_id;
		struct ks_hist *h;
		struct ks_row *row;
		uint64_t errors;
		char b[16];

		/* never written: nothing to read (a flag set after this test is read next time) */
		if (!ctx->skel->bss->row_used[row_id])
			continue;
		if (bpf_map_lookup_elem(fd, &idx, ctx->vbuf))
			return -errno;
		h = malloc(sizeof(*h));
		if (!h)
			return -ENOMEM;
		if (!sum_stat(ctx, h, &errors)) {
			free(h);
			continue;
		}
		memset(ctx->vbuf, 0, vsz);
		if (bpf_map_update_elem(fd, &idx, ctx->vbuf, BPF_ANY)) {
			free(h);
			return -errno;
		}
		row = ks_report_add_row(r);
		if (!row) {
			free(h);
			return -ENOMEM;
		}
		if (ctx->by == KS_SC_BY_SYSCALL) {
			const char *name = ks_syscall_name((int)row_id);

			if (row_id == KS_SC_ROWS - 1)
				name = "other";
			else if (!name)
				snprintf(b, sizeof(b), "sys_%u", row_id), name = b;
			ks_row_key_str(row, "syscall", name);
			ks_row_key_num(row, "nr", row_id);
		} else {
			ks_row_key_str(row, "errno", row_id == KS_SC_ROWS - 1 ? "other" : errno_label((int)row_id, b, sizeof(b)));
			ks_row_key_num(row, "code", row_id);
		}
		fill_row(ctx, row, h, errors);
		if (ctx->by == KS_SC_BY_SYSCALL && errors) {
			int err = collect_errs(ctx, row, idx);

			if (err)
				return err;
		}
	}
	return 0;
}

static struct ks_row *find_row(struct ks_report *r, const struct ks_sc_key *k, bool by_pid)
{
	for (int i = 0; i < r->nrows; i++) {
		struct ks_row *row = &r->rows[i];

		if (by_pid ? row->keys[0].num == k->tgid : !strncmp(row->keys[0].str, k->comm, KS_COMM_LEN))
			return row;
	}
	return NULL;
}

struct drain_arg {
	struct sc_ctx *ctx;
	struct ks_report *r;
	unsigned int gen;
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_sc_key *)key)->gen == ((struct drain_arg *)varg)->gen;
}

static int take_row(const void *key, const void *value, void *varg)
{
	const struct ks_sc_key *k = key;
	struct drain_arg *a = varg;
	struct ks_hist *h = malloc(sizeof(*h));
	struct ks_row *row;
	uint64_t errors;
	char comm[KS_COMM_LEN];

	(void)value; /* == a->ctx->vbuf, read by sum_stat */
	if (!h)
		return -ENOMEM;
	if (!sum_stat(a->ctx, h, &errors)) {
		free(h);
		return 0;
	}
	row = ks_report_add_row(a->r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	if (a->ctx->by == KS_SC_BY_PID) {
		ks_pid_comm_take(bpf_map__fd(a->ctx->skel->maps.pid_comm), k->tgid, comm);
		ks_row_key_num(row, "pid", k->tgid);
	} else {
		memcpy(comm, k->comm, KS_COMM_LEN);
		comm[KS_COMM_LEN - 1] = 0;
	}
	ks_row_key_str(row, "comm", comm);
	return fill_row(a->ctx, row, h, errors);
}

static int take_errno(const void *key, const void *value, void *varg)
{
	const struct ks_sc_err_key *ek = key;
	struct drain_arg *a = varg;
	const __u64 *v = value;
	struct ks_row *row = find_row(a->r, &ek->k, a->ctx->by == KS_SC_BY_PID);
	uint64_t sum = 0;
	char b[16];

	for (int cpu = 0; cpu < ks_ncpus(); cpu++)
		sum += v[cpu];
	if (row && sum)
		return ks_row_sub_add(row, errno_label((int)ek->err, b, sizeof(b)), sum);
	return 0;
}

/* Drains both hash maps of the pid and comm modes for buffer half @gen. */
static int collect_hash(struct sc_ctx *ctx, struct ks_report *r, unsigned int gen)
{
	struct drain_arg a = { ctx, r, gen };
	int err;

	/* ks_sc_err_key starts with its ks_sc_key, so one match serves both */
	err = ks_hash_drain(bpf_map__fd(ctx->skel->maps.hrows), sizeof(struct ks_sc_key), key_in_gen,
			    take_row, &a, ctx->vbuf);
	if (!err)
		err = ks_hash_drain(bpf_map__fd(ctx->skel->maps.herrs), sizeof(struct ks_sc_err_key),
				    key_in_gen, take_errno, &a, ctx->vbuf);
	return err;
}

static int sc_collect(void *vctx, struct ks_report *r)
{
	struct sc_ctx *ctx = vctx;
	struct ks_sc_lost now;
	unsigned int old = ks_gen_flip(&ctx->gen, &ctx->skel->bss->ks_gen);
	int err;

	r->sub_name = ctx->by == KS_SC_BY_ERRNO ? NULL : "errnos";
	if (ctx->count_only)
		r->hist_name = NULL;
	err = hashed(ctx) ? collect_hash(ctx, r, old) : collect_rows(ctx, r, old);
	if (err)
		return err;

	now = ctx->skel->bss->lost;
	ks_report_lost(r, "start_collisions", now.start_collisions - ctx->lost_seen.start_collisions);
	ks_report_lost(r, "map_full", now.map_full - ctx->lost_seen.map_full);
	ks_report_lost(r, "recursion", ks_obj_missed_since(ctx->skel->obj, &ctx->missed_seen));
	ctx->lost_seen = now;
	if (ctx->errors_only)
		ks_report_meta_str(r, "errors_only", "true");
	return 0;
}

static void sc_close(void *vctx)
{
	struct sc_ctx *ctx = vctx;

	ks_syscalls__destroy(ctx->skel);
	ctx->skel = NULL;
	free(ctx->vbuf);
	ctx->vbuf = NULL;
}

const struct ks_collector ks_syscalls_collector = {
	.spec = {
		.name = "syscalls",
		.summary = "Per-syscall counts, errors by errno and latency (sys_enter to sys_exit, per thread).",
		.common = KS_O_COLLECTOR,
		.by_keys = "syscall|pid|comm|errno",
		.opts = sc_opts,
	},
	.ctx_size = sizeof(struct sc_ctx),
	.parse_opt = sc_parse_opt,
	.open = sc_open,
	.hook = sc_hook,
	.collect = sc_collect,
	.close = sc_close,
};
