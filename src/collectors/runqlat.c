/* User side of `ksight runqlat`: options, load with hook fallback, drain the run-queue wait rows into a report. */
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "collectors/rows.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/pin.h"
#include "ksight/runqlat.h"
#include "runqlat.skel.h"


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
					    (const char *const[]){ KS_SCHED_KEYS, NULL }, .hist_cols = NULL };

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
	struct ks_sched_ctx *ctx = vctx;
	struct ks_row *row;

	return ks_runqlat_row(ctx->r, ctx->run.by, id, vals, nvals, &row);
}

KS_SKEL_OPS(ks_runqlat);

/* The lifecycle, maps and counters of runqlat, for core (core/scaffold.h) and the family (sched.h). */
static const struct ks_sc_map rq_maps[] = { { .drain = ks_sched_drain_maps } };
static const struct ks_sc_counter rq_counters[] = {
	KS_SCHED_LOSSES(struct ks_runqlat__bss),
	{ "unseen_wakeup", offsetof(struct ks_runqlat__bss, lost.unseen_wakeup), KS_SC_LOSS },
	KS_SCHED_INFERRED(struct ks_runqlat__bss),
};
static const struct ks_sched_def rq_def = {
	.sc = { .name = "runqlat", .hooks = ks_sched_hooks, .skel = &ks_runqlat_ops,
		.gen_at = offsetof(struct ks_runqlat__bss, ks_gen), .maps = rq_maps, .nmaps = 1,
		.counters = rq_counters, .ncounters = sizeof(rq_counters) / sizeof(rq_counters[0]),
		.configure = ks_sched_configure, .attached = ks_sched_attached, .release = ks_sched_release },
	.since_at = offsetof(struct ks_runqlat__bss, ks_since),
	.to_other_at = offsetof(struct ks_runqlat__bss, ks_to_other),
	.nsub = 1,
	.value_size = sizeof(struct ks_rq_stat),
	.schema = &rq_schema,
	.take = take_row,
};

static int rq_open(void *ctx, const struct ks_common *c, const struct ks_filter *f)
{
	return ks_sched_open(ctx, &rq_def, c, f);
}

const struct ks_collector ks_runqlat_collector = {
	.spec = {
		.name = "runqlat",
		.summary = "Run-queue latency: time from runnable (woken or preempted) to on-CPU, with switch, "
			   "wakeup and migration counts.",
		.common = KS_O_COLLECTOR,
		.by_words = ks_sched_by_words,
	},
	.ctx_size = sizeof(struct ks_sched_ctx),
	.open = rq_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = ks_sched_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct ks_sched_ctx, sc.skel) },
	.schema = &rq_schema,
	.close = ks_sc_close,
};
