/* User side of `ksight offcpu`: options, load with hook fallback, drain the off-CPU rows (key x state) into a report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "core/collector.h"
#include "core/loader.h"
#include "ksight/offcpu.h"
#include "offcpu.skel.h"

struct off_ctx {
	struct ks_sched_run run;
	struct ks_offcpu *skel;
	struct ks_report *r; /* the report being filled by collect */
};

static int try_hook(void *vctx, const char *hook)
{
	struct off_ctx *ctx = vctx;
	struct ks_offcpu *s;
	int err;

	s = ks_offcpu__open();
	if (!s)
		return -errno;
	KS_SCHED_CONFIGURE(s, &ctx->run);
	ks_prog_select(s->obj, hook);
	err = ks_offcpu__load(s);
	if (!err)
		err = ks_offcpu__attach(s);
	if (err) {
		ks_offcpu__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	ctx->skel = s;
	ks_sched_attached(&ctx->run, s->obj, s->maps.rows, s->maps.hrows);
	return 0;
}

static int off_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	/* as runqlat: task pointers are needed, raw_tp is everywhere CO-RE is */
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, NULL };
	struct off_ctx *ctx = vctx;
	int err = ks_sched_run_init(&ctx->run, c, f, KS_OFF_STATES, sizeof(struct ks_off_stat));

	return err ? err : ks_load_first(hooks, try_hook, ctx, &ctx->run.hook);
}

static const char *off_hook(void *vctx)
{
	return ((struct off_ctx *)vctx)->run.hook;
}

static const char *state_name(uint32_t st)
{
	static const char *const names[KS_OFF_STATES] = { "S", "D", "I", "other" };

	return st < KS_OFF_STATES ? names[st] : "?";
}

static int take_row(const struct ks_sched_rowid *id, const void *vals, int nvals, void *vctx)
{
	struct off_ctx *ctx = vctx;
	const struct ks_off_stat *v = vals;
	struct ks_hist *h;
	struct ks_row *row;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (int i = 0; i < nvals; i++)
		ks_hist_add_bpf(h, &v[i].off);
	if (!h->count) {
		free(h);
		return 0;
	}
	row = ks_report_add_row(ctx->r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	ks_sched_label(row, ctx->run.by, id);
	ks_row_key_str(row, "state", state_name(id->sub));
	ks_row_val(row, "count", KS_VAL_COUNT, h->count);
	ks_row_val(row, "total_ns", KS_VAL_NS, h->sum);
	row->hist = h;
	row->sort = h->sum;
	return 1;
}

static int off_collect(void *vctx, struct ks_report *r)
{
	struct off_ctx *ctx = vctx;
	int err;

	r->hist_name = "offcpu_ns";
	ctx->r = r;
	err = ks_sched_collect(&ctx->run, &ctx->skel->bss->ks_gen, &ctx->skel->bss->lost, r, take_row, ctx);
	ctx->r = NULL;
	return err;
}

static void off_close(void *vctx)
{
	struct off_ctx *ctx = vctx;

	ks_offcpu__destroy(ctx->skel);
	ctx->skel = NULL;
	ks_sched_run_free(&ctx->run);
}

const struct ks_collector ks_offcpu_collector = {
	.spec = {
		.name = "offcpu",
		.summary = "Off-CPU time: from a blocking switch out to the switch back in, by the state the "
			   "thread blocked in (S, D, I, other).",
		.common = KS_O_COLLECTOR,
		.by_keys = "pid|tid|comm|cgroup|prio|policy",
		.opts = NULL,
	},
	.ctx_size = sizeof(struct off_ctx),
	.open = off_open,
	.hook = off_hook,
	.collect = off_collect,
	.close = off_close,
};
