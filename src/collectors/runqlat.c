/* User side of `ksight runqlat`: options, load with hook fallback, drain the run-queue wait rows into a report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "ksight/runqlat.h"
#include "runqlat.skel.h"

enum { OPT_SORT = 300 };
enum rq_sort { SORT_TOTAL, SORT_P99, SORT_COUNT };

struct rq_ctx {
	struct ks_sched_run run;
	enum rq_sort sort;
	struct ks_runqlat *skel;
	struct ks_report *r; /* the report being filled by collect */
};

static const struct ks_optdef rq_opts[] = {
	{ "sort", OPT_SORT, "KEY", "order rows (and pick the -n top) by total wait, p99 or count: total|p99|count" },
	{ 0 },
};

static int rq_parse_opt(void *vctx, int id, const char *arg)
{
	struct rq_ctx *ctx = vctx;

	if (id != OPT_SORT)
		return -EINVAL;
	if (!strcmp(arg, "total"))
		ctx->sort = SORT_TOTAL;
	else if (!strcmp(arg, "p99"))
		ctx->sort = SORT_P99;
	else if (!strcmp(arg, "count"))
		ctx->sort = SORT_COUNT;
	else {
		p_err("invalid --sort key '%s': expected total, p99 or count", arg);
		return -EINVAL;
	}
	return 0;
}

static int try_hook(void *vctx, const char *hook)
{
	struct rq_ctx *ctx = vctx;
	struct ks_runqlat *s;
	int err;

	s = ks_runqlat__open();
	if (!s)
		return -errno;
	KS_SCHED_CONFIGURE(s, &ctx->run);
	ks_prog_select(s->obj, hook);
	err = ks_runqlat__load(s);
	if (!err)
		err = ks_runqlat__attach(s);
	if (err) {
		ks_runqlat__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	ctx->skel = s;
	ks_sched_attached(&ctx->run, s->obj, s->maps.rows, s->maps.hrows);
	return 0;
}

static int rq_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	/* no classic-tracepoint variant: it has no task pointers, and every
	 * kernel with the BTF that CO-RE needs has raw_tp */
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, NULL };
	struct rq_ctx *ctx = vctx;
	int err = ks_sched_run_init(&ctx->run, c, f, 1, sizeof(struct ks_rq_stat));

	return err ? err : ks_load_first(hooks, try_hook, ctx, &ctx->run.hook);
}

static const char *rq_hook(void *vctx)
{
	return ((struct rq_ctx *)vctx)->run.hook;
}

static int take_row(const struct ks_sched_rowid *id, const void *vals, int nvals, void *vctx)
{
	struct rq_ctx *ctx = vctx;
	const struct ks_rq_stat *v = vals;
	struct ks_rq_stat sum = { 0 };
	struct ks_hist *h;
	struct ks_row *row;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < nvals; i++) {
		ks_hist_add_bpf(h, &v[i].lat);
		sum.wakeups += v[i].wakeups;
		sum.cross_cpu += v[i].cross_cpu;
		sum.migrations += v[i].migrations;
		sum.voluntary += v[i].voluntary;
		sum.involuntary += v[i].involuntary;
	}
	if (!h->count && !sum.voluntary && !sum.involuntary) {
		free(h);
		return 0;
	}
	row = ks_report_add_row(ctx->r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	ks_sched_label(row, ctx->run.by, id);
	ks_row_val(row, "count", KS_VAL_COUNT, h->count);
	ks_row_val(row, "total_wait_ns", KS_VAL_NS, h->sum);
	ks_row_val(row, "wakeups", KS_VAL_COUNT, sum.wakeups);
	ks_row_val(row, "cross_cpu", KS_VAL_COUNT, sum.cross_cpu);
	ks_row_val(row, "migrations", KS_VAL_COUNT, sum.migrations);
	ks_row_val(row, "voluntary", KS_VAL_COUNT, sum.voluntary);
	ks_row_val(row, "involuntary", KS_VAL_COUNT, sum.involuntary);
	row->hist = h;
	row->sort = ctx->sort == SORT_P99 ? ks_hist_percentile(h, 0.99) : ctx->sort == SORT_COUNT ? h->count : h->sum;
	return 1;
}

static int rq_collect(void *vctx, struct ks_report *r)
{
	struct rq_ctx *ctx = vctx;
	int err;

	ctx->r = r;
	err = ks_sched_collect(&ctx->run, &ctx->skel->bss->ks_gen, &ctx->skel->bss->lost, r, take_row, ctx);
	ctx->r = NULL;
	return err;
}

static void rq_close(void *vctx)
{
	struct rq_ctx *ctx = vctx;

	ks_runqlat__destroy(ctx->skel);
	ctx->skel = NULL;
	ks_sched_run_free(&ctx->run);
}

const struct ks_collector ks_runqlat_collector = {
	.spec = {
		.name = "runqlat",
		.summary = "Run-queue latency: time from runnable (woken or preempted) to on-CPU, with switch, "
			   "wakeup and migration counts.",
		.common = KS_O_COLLECTOR,
		.by_keys = "cpu|pid|tid|comm|prio|policy|cgroup",
		.opts = rq_opts,
	},
	.ctx_size = sizeof(struct rq_ctx),
	.parse_opt = rq_parse_opt,
	.open = rq_open,
	.hook = rq_hook,
	.collect = rq_collect,
	.close = rq_close,
};
