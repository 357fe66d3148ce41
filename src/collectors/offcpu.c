/* User side of `ksight offcpu`: options, load with hook fallback, drain the off-CPU rows (key x state) into a report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "collectors/rows.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/pin.h"
#include "ksight/offcpu.h"
#include "offcpu.skel.h"

static const char *state_name(uint32_t st)
{
	static const char *const names[KS_OFF_STATES] = { "S", "D", "I", "other" };

	return st < KS_OFF_STATES ? names[st] : "?";
}

/* The value columns of a row, declared once: rows, docs/json.md and help render from these. */
static const struct ks_column off_cols[] = {
	{ "count", KS_COL_COUNTER, KS_UNIT_COUNT, "off-CPU intervals: a blocking switch out to the switch back in" },
	{ "total_ns", KS_COL_DURATION, KS_UNIT_NS, "their summed time" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema off_schema = { off_cols, "offcpu_ns", KS_UNIT_NS, "the off-CPU intervals",
					     (const char *const[]){ KS_SCHED_KEYS, "state", NULL }, .hist_cols = NULL };

int ks_offcpu_row(struct ks_report *r, enum ks_sched_by by, const struct ks_sched_rowid *id,
		  const struct ks_off_stat *v, int nvals)
{
	struct ks_hist *h;
	struct ks_row *row;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < nvals; i++)
		ks_sched_hist_merge(h, &v[i].off);
	if (!h->count) {
		free(h);
		return 0;
	}
	row = ks_report_add_row(r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	ks_sched_label(row, by, id);
	ks_row_key_str(row, "state", state_name(id->sub));
	ks_row_col(row, &off_cols[0], h->count);
	ks_row_col(row, &off_cols[1], h->sum);
	row->hist = h;
	row->sort = h->sum;
	return 1;
}

static int take_row(const struct ks_sched_rowid *id, const void *vals, int nvals, void *vctx)
{
	struct ks_sched_ctx *ctx = vctx;

	return ks_offcpu_row(ctx->r, ctx->run.by, id, vals, nvals);
}

/* no cpu: off-CPU time is not spent on a CPU */
static const struct ks_by_word off_by_words[] = {
	{ "pid", KS_SCHED_BY_PID },   { "tid", KS_SCHED_BY_TID },	  { "comm", KS_SCHED_BY_COMM },
	{ "cgroup", KS_SCHED_BY_CGROUP }, { "prio", KS_SCHED_BY_PRIO }, { "policy", KS_SCHED_BY_POLICY },
	{ NULL, KS_SCHED_BY_NONE },
};

/* --stacks is a mode of its own (src/cli/profile.c: cmd_offcpu); listed here for -h */
static const struct ks_optdef off_opts[] = {
	{ "stacks", 300, NULL, "off-CPU time by blocking stack instead: see 'ksight offcpu --stacks -h'" },
	{ 0 },
};

/* Reached from `ksight run` only: `ksight offcpu --stacks` never gets here. */
static int off_parse_opt(void *ctx, int id, const char *arg)
{
	(void)ctx, (void)id, (void)arg;
	p_err("offcpu: --stacks works with 'ksight offcpu' alone, not in 'ksight run'");
	return -EINVAL;
}

KS_SKEL_OPS(ks_offcpu);

/* The lifecycle, maps and counters of offcpu, for core (core/scaffold.h) and the family (sched.h). */
static const struct ks_sc_map off_maps[] = { { .drain = ks_sched_drain_maps } };
static const struct ks_sc_counter off_counters[] = {
	KS_SCHED_LOSSES(struct ks_offcpu__bss),
	KS_SCHED_INFERRED(struct ks_offcpu__bss),
};
static const struct ks_sched_def off_def = {
	.sc = { .name = "offcpu", .hooks = ks_sched_hooks, .skel = &ks_offcpu_ops,
		.gen_at = offsetof(struct ks_offcpu__bss, ks_gen), .maps = off_maps, .nmaps = 1,
		.counters = off_counters, .ncounters = sizeof(off_counters) / sizeof(off_counters[0]),
		.configure = ks_sched_configure, .attached = ks_sched_attached, .release = ks_sched_release },
	.since_at = offsetof(struct ks_offcpu__bss, ks_since),
	.to_other_at = offsetof(struct ks_offcpu__bss, ks_to_other),
	.nsub = KS_OFF_STATES,
	.value_size = sizeof(struct ks_off_stat),
	.schema = &off_schema,
	.take = take_row,
};

static int off_open(void *ctx, const struct ks_common *c, const struct ks_filter *f)
{
	return ks_sched_open(ctx, &off_def, c, f);
}

const struct ks_collector ks_offcpu_collector = {
	.spec = {
		.name = "offcpu",
		.summary = "Off-CPU time: from a blocking switch out to the switch back in, by the state the "
			   "thread blocked in (S, D, I, other).",
		.common = KS_O_COLLECTOR,
		.by_words = off_by_words,
		.opts = off_opts,
	},
	.ctx_size = sizeof(struct ks_sched_ctx),
	.parse_opt = off_parse_opt,
	.open = off_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = ks_sched_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct ks_sched_ctx, sc.skel) },
	.schema = &off_schema,
	.close = ks_sc_close,
};
