/* User side of `ksight runqlat`: options, load with hook fallback, drain the run-queue wait rows into a report. */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "collectors/rows.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "ksight/runqlat.h"
#include "runqlat.skel.h"


struct rq_ctx {
	struct ks_sched_run run;
	struct ks_runqlat *skel;
	struct ks_report *r; /* the report being filled by collect */
};

/* The value columns of a row, declared once: rows, docs/json.md and help render from these. */
enum { C_COUNT, C_TOTAL, C_WAKEUPS, C_CROSS, C_MIGRATIONS, C_VOLUNTARY, C_INVOLUNTARY };
static const struct ks_column rq_cols[] = {
	[C_COUNT] = { "count", KS_COL_COUNTER, KS_UNIT_COUNT, "waits timed (runnable to running)" },
	[C_TOTAL] = { "total_wait_ns", KS_COL_DURATION, KS_UNIT_NS, "their summed time" },
	[C_WAKEUPS] = { "wakeups", KS_COL_COUNTER, KS_UNIT_COUNT, "waits that began with a wakeup" },
	[C_CROSS] = { "cross_cpu", KS_COL_COUNTER, KS_UNIT_COUNT, "... whose waker ran on another CPU" },
	[C_MIGRATIONS] = { "migrations", KS_COL_COUNTER, KS_UNIT_COUNT, "CPU changes during the waits" },
	[C_VOLUNTARY] = { "voluntary", KS_COL_COUNTER, KS_UNIT_COUNT, "switches out while blocking" },
	[C_INVOLUNTARY] = { "involuntary", KS_COL_COUNTER, KS_UNIT_COUNT,
			    "switches out while still runnable (preempted, yielded)" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema rq_schema = { rq_cols, "latency_ns", KS_UNIT_NS,
					    "the waits, timed with bpf_ktime_get_ns",
					    (const char *const[]){ KS_SCHED_KEYS, NULL } };

int ks_runqlat_row(struct ks_report *r, enum ks_sched_by by, const struct ks_sched_rowid *id,
		   const struct ks_rq_stat *v, int nvals, struct ks_row **rowp)
{
	struct ks_rq_stat sum = { 0 };
	struct ks_hist *h;
	struct ks_row *row;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < nvals; i++) {
		ks_sched_hist_merge(h, &v[i].lat);
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
	row = ks_report_add_row(r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	ks_sched_label(row, by, id);
	ks_row_col(row, &rq_cols[C_COUNT], h->count);
	ks_row_col(row, &rq_cols[C_TOTAL], h->sum);
	ks_row_col(row, &rq_cols[C_WAKEUPS], sum.wakeups);
	ks_row_col(row, &rq_cols[C_CROSS], sum.cross_cpu);
	ks_row_col(row, &rq_cols[C_MIGRATIONS], sum.migrations);
	ks_row_col(row, &rq_cols[C_VOLUNTARY], sum.voluntary);
	ks_row_col(row, &rq_cols[C_INVOLUNTARY], sum.involuntary);
	row->hist = h;
	row->sort = h->sum;
	*rowp = row;
	return 1;
}

static int take_row(const struct ks_sched_rowid *id, const void *vals, int nvals, void *vctx)
{
	struct rq_ctx *ctx = vctx;
	struct ks_row *row;

	return ks_runqlat_row(ctx->r, ctx->run.by, id, vals, nvals, &row);
}

KS_SCHED_GLUE(runqlat, struct rq_ctx, 1, struct ks_rq_stat, rq_schema.hist_name, take_row, true)

const struct ks_collector ks_runqlat_collector = {
	.spec = {
		.name = "runqlat",
		.summary = "Run-queue latency: time from runnable (woken or preempted) to on-CPU, with switch, "
			   "wakeup and migration counts.",
		.common = KS_O_COLLECTOR,
		.by_words = ks_sched_by_words,
	},
	.ctx_size = sizeof(struct rq_ctx),
	.open = runqlat_open,
	.hook = runqlat_hook,
	.mark = runqlat_mark,
	.drain = runqlat_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct rq_ctx, skel) },
	.schema = &rq_schema,
	.close = runqlat_close,
};
