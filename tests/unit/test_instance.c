/* Unit tests of the instance phases with fake collectors: every mark before any drain, one drain (TAKE, or READ when pinned), the pin ops. */
#include "test.h"
#include <stddef.h>
#include "core/instance.h"
#include "core/loader.h"
#include "core/pin.h"

static char trace[64];

static void note(const char *what, void *ctx)
{
	snprintf(trace + strlen(trace), sizeof(trace) - strlen(trace), "%s%s%d", trace[0] ? "," : "", what,
		 *(int *)ctx);
}

static int f_init(void *ctx)
{
	static int next;

	*(int *)ctx = ++next;
	return 0;
}

static int f_open(void *ctx, const struct ks_common *c, const struct ks_filter *f)
{
	(void)c;
	(void)f;
	note("o", ctx);
	return 0;
}

static int f_mark(void *ctx)
{
	note("m", ctx);
	return 0;
}

/* Drains a row holding the context's number; context 3's drain fails. */
static int f_drain(void *ctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct ks_row *w;

	note(mode == KS_DRAIN_TAKE ? "d" : "?", ctx);
	if (*(int *)ctx == 3)
		return -EIO;
	w = ks_report_add_row(r);
	if (!w)
		return -ENOMEM;
	ks_row_val(w, "n", KS_VAL_COUNT, (uint64_t)*(int *)ctx);
	return 0;
}

static const char *f_hook(void *ctx)
{
	(void)ctx;
	return "fake";
}

static void f_close(void *ctx)
{
	note("x", ctx);
}

static const struct ks_collector phased = {
	.spec = { .name = "phased" }, .ctx_size = sizeof(int), .init = f_init, .open = f_open, .hook = f_hook,
	.close = f_close, .mark = f_mark, .drain = f_drain,
};
/* without mark: drained where it stands */
static const struct ks_collector unmarked = {
	.spec = { .name = "unmarked" }, .ctx_size = sizeof(int), .init = f_init, .open = f_open, .hook = f_hook,
	.close = f_close, .drain = f_drain,
};

TEST(mark_all_then_drain_each)
{
	struct ks_instance in[3];
	struct ks_report r[3];
	int errs[3];

	ASSERT_EQ_INT(ks_instance_init(&in[0], &phased), 0); /* ctx 1 */
	ASSERT_EQ_INT(ks_instance_init(&in[1], &unmarked), 0); /* ctx 2 */
	ASSERT_EQ_INT(ks_instance_init(&in[2], &phased), 0); /* ctx 3 */
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ_INT(ks_instance_open(&in[i], NULL), 0);
		ks_instance_report_init(&in[i], &r[i]);
	}
	trace[0] = 0;
	/* the third drain fails: its error, the others' reports */
	EXPECT_EQ_INT(ks_instances_collect(in, 3, r, errs), -EIO);
	EXPECT_EQ_INT(errs[0], 0);
	EXPECT_EQ_INT(errs[1], 0);
	EXPECT_EQ_INT(errs[2], -EIO);
	/* both phased instances are marked before either drains: one kernel wait serves them */
	EXPECT_EQ_STR(trace, "m1,m3,d1,d2,d3");
	EXPECT_EQ_INT(r[0].nrows, 1);
	EXPECT_EQ_INT(r[1].nrows, 1);
	EXPECT_EQ_INT(r[2].nrows, 0);
	EXPECT_EQ_STR(r[1].hook, "fake");
	trace[0] = 0;
	for (int i = 0; i < 3; i++) {
		ks_instance_close(&in[i]);
		ks_report_free(&r[i]);
	}
	EXPECT_EQ_STR(trace, "x1,x2,x3");
}

TEST(drain_error_is_per_instance)
{
	struct ks_instance in;
	struct ks_report r;
	int err;

	ASSERT_EQ_INT(ks_instance_init(&in, &unmarked), 0); /* ctx 4: drains fine */
	ASSERT_EQ_INT(ks_instance_open(&in, NULL), 0);
	ks_instance_report_init(&in, &r);
	EXPECT_EQ_INT(ks_instances_collect(&in, 1, &r, &err), 0);
	EXPECT_EQ_INT(err, 0);
	ks_report_free(&r);
	ks_instance_close(&in);
}

/* A pinnable collector, as every serve collector: drain in its three modes, and pin ops. */
struct moded_ctx {
	int modes[3], ndrains; /* drains per mode, all of them */
	uint64_t seen_a, other, seen_b; /* .bss counters' last read, two of them the cursor */
	struct ks_skel_head *skel;
};

static int m_mark(void *ctx)
{
	(void)ctx;
	return 0;
}

static int m_drain(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct moded_ctx *ctx = vctx;

	ctx->modes[mode]++;
	ctx->ndrains++;
	return mode == KS_DRAIN_CLEAR || r ? 0 : -EINVAL;
}

static const size_t m_cursor[] = { offsetof(struct moded_ctx, seen_a), offsetof(struct moded_ctx, seen_b) };

static const struct ks_collector moded = {
	.spec = { .name = "moded" }, .ctx_size = sizeof(struct moded_ctx), .mark = m_mark, .drain = m_drain,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct moded_ctx, skel), .cursor_u64 = { m_cursor, 2 } },
};

TEST(drain_takes_unpinned_reads_pinned)
{
	struct ks_pin_seq seq = { .fd = -1 };
	struct ks_instance in;
	struct ks_report r;
	struct moded_ctx *ctx;
	int err;

	ASSERT_EQ_INT(ks_instance_init(&in, &moded), 0);
	ctx = in.ctx;
	ks_instance_report_init(&in, &r);
	EXPECT_EQ_INT(ks_instances_collect(&in, 1, &r, &err), 0);
	EXPECT_EQ_INT(err, 0);
	/* unpinned: one pass that reads and empties */
	EXPECT_EQ_INT(ctx->modes[KS_DRAIN_TAKE], 1);
	EXPECT_EQ_INT(ctx->ndrains, 1);
	/* pinned (a sequence beside the pins): only read; the clear comes after the save */
	in.pin = &seq;
	EXPECT_EQ_INT(ks_instances_collect(&in, 1, &r, &err), 0);
	EXPECT_EQ_INT(ctx->modes[KS_DRAIN_READ], 1);
	EXPECT_EQ_INT(ctx->ndrains, 2);
	EXPECT_TRUE(seq.clear_due);
	EXPECT_EQ_U64(ks_instance_drains(&in), 1);
	in.pin = NULL; /* not a real map, not allocated: nothing to close */
	ks_report_free(&r);
	ks_instance_close(&in);
}

TEST(object_and_cursor_from_the_descriptor)
{
	struct ks_skel_head head = { NULL, (struct bpf_object *)&head };
	struct ks_instance in;
	struct moded_ctx *ctx;
	void *buf = NULL;
	size_t len = 0;

	ASSERT_EQ_INT(ks_instance_init(&in, &moded), 0);
	ctx = in.ctx;
	/* not opened: no skeleton, no object */
	EXPECT_TRUE(ks_instance_object(&in) == NULL);
	ctx->skel = &head;
	EXPECT_TRUE(ks_instance_object(&in) == (struct bpf_object *)&head);
	ctx->seen_a = 7;
	ctx->other = 5;
	ctx->seen_b = 1ull << 40;
	ASSERT_EQ_INT(ks_instance_cursor_get(&in, &buf, &len), 0);
	EXPECT_EQ_INT(len, 3 * sizeof(uint64_t));
	ctx->seen_a = ctx->seen_b = ctx->other = 0;
	EXPECT_EQ_INT(ks_instance_cursor_set(&in, buf, len), 0);
	EXPECT_EQ_U64(ctx->seen_a, 7);
	EXPECT_EQ_U64(ctx->seen_b, 1ull << 40);
	EXPECT_EQ_U64(ctx->other, 0); /* not in the cursor */
	EXPECT_EQ_INT(ks_instance_cursor_set(&in, buf, len - 1), -EBADMSG);
	free(buf);
	ctx->skel = NULL;
	ks_instance_close(&in);
	/* a collector without pin ops: no object, no cursor, not pinnable */
	ASSERT_EQ_INT(ks_instance_init(&in, &unmarked), 0);
	buf = &head;
	EXPECT_EQ_INT(ks_instance_cursor_get(&in, &buf, &len), 0);
	EXPECT_TRUE(buf == NULL && len == 0);
	EXPECT_TRUE(ks_instance_object(&in) == NULL);
	ks_pin_scope("/nonexistent");
	EXPECT_EQ_INT(ks_instance_pin(&in), -EOPNOTSUPP);
	ks_pin_scope(NULL);
	EXPECT_EQ_INT(ks_instance_pin(&in), 0);
	EXPECT_TRUE(in.pin == NULL);
	ks_instance_close(&in);
}

/* A collector with targets, as funclat: counts the arguments parse_opt saw, refuses "bad" in prepare. */
struct targ_ctx {
	int nargs, prepared;
	bool measured; /* the measured open ran on this context */
};

static int t_parse(void *vctx, int id, const char *arg)
{
	struct targ_ctx *ctx = vctx;

	if (id != KS_OPT_ARG)
		return -EINVAL;
	ctx->nargs++;
	return strcmp(arg, "bad") ? 0 : -EINVAL;
}

static int t_prepare(void *vctx, const struct ks_common *c)
{
	(void)c;
	((struct targ_ctx *)vctx)->prepared++;
	return 0;
}

static int t_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct targ_ctx *ctx = vctx;

	(void)f;
	if (c->share && c->share->measure) {
		c->share->min = c->share->wish = 1 << 20;
		ctx->measured = true;
		return -EALREADY;
	}
	/* opened for real only with its targets */
	return ctx->nargs == 2 && ctx->prepared == 1 ? 0 : -EINVAL;
}

static const struct ks_collector targeted = {
	.spec = { .name = "targeted", .args = "TARGET..." }, .ctx_size = sizeof(struct targ_ctx),
	.parse_opt = t_parse, .prepare = t_prepare, .open = t_open, .drain = f_drain,
};

TEST(targets_go_to_the_collector_that_takes_them)
{
	const char *two[] = { "a:f", "b:g" }, *bad[] = { "bad" };
	struct ks_arglist none = { 0 }, l = { (const char **)two, 2 }, lb = { (const char **)bad, 1 };
	struct ks_instance in[2];

	ASSERT_EQ_INT(ks_instance_init(&in[0], &unmarked), 0);
	ASSERT_EQ_INT(ks_instance_init(&in[1], &targeted), 0);
	/* named without targets: bad usage */
	EXPECT_EQ_INT(ks_instances_targets(in, 2, &none, "run"), -EINVAL);
	EXPECT_EQ_INT(ks_instances_targets(in, 2, &l, "run"), 0);
	EXPECT_EQ_INT(((struct targ_ctx *)in[1].ctx)->nargs, 2);
	EXPECT_EQ_INT(((struct targ_ctx *)in[1].ctx)->prepared, 1);
	/* a shared budget measures with one open, re-initialises, and the targets are given again */
	EXPECT_EQ_INT(ks_instances_share(&in[1], 1, NULL, 64ull << 20, NULL), 0);
	EXPECT_TRUE(!((struct targ_ctx *)in[1].ctx)->measured);
	EXPECT_EQ_INT(((struct targ_ctx *)in[1].ctx)->nargs, 2);
	EXPECT_EQ_INT(ks_instance_open(&in[1], NULL), 0);
	ks_instance_close(&in[1]);
	/* a target the collector refuses: its error, nothing opened */
	ASSERT_EQ_INT(ks_instance_init(&in[1], &targeted), 0);
	EXPECT_EQ_INT(ks_instances_targets(in, 2, &lb, "serve"), -EINVAL);
	ks_instance_close(&in[0]);
	ks_instance_close(&in[1]);
}

TEST(arglist_grows)
{
	struct ks_arglist l = { 0 };

	for (int i = 0; i < 40; i++)
		ASSERT_EQ_INT(ks_arglist_add(&l, "x"), 0);
	EXPECT_EQ_INT(l.n, 40);
	ks_arglist_free(&l);
	EXPECT_EQ_INT(l.n, 0);
}

/*
 * serve --pin's restart decision (ks_drain_resume) at every kill point of
 * drain N (read -> save -> empty -> sequence written), from the two counts
 * a kill leaves: the saved drains S and the pinned sequence C.
 */
TEST(drain_resume_kill_points)
{
	const uint64_t n = 7;

	/* before the read, or after it but before the save: S = C = N-1, the maps hold the drain */
	EXPECT_EQ_INT(ks_drain_resume(true, n - 1, n - 1), KS_RESUME_COUNT);
	/* after the save, before, while or after emptying but before C is written: empty without counting */
	EXPECT_EQ_INT(ks_drain_resume(true, n, n - 1), KS_RESUME_DISCARD);
	/* after C is written: nothing of it left */
	EXPECT_EQ_INT(ks_drain_resume(true, n, n), KS_RESUME_COUNT);
	/* saves failed for drains N-1 and N, emptied anyway: lost, and said */
	EXPECT_EQ_INT(ks_drain_resume(true, n - 2, n), KS_RESUME_LOST);
	/* totals counted from other maps (pins made afresh, a version-1 copy with id 0): count all */
	EXPECT_EQ_INT(ks_drain_resume(false, n, n - 1), KS_RESUME_FRESH);
	EXPECT_EQ_INT(ks_drain_resume(false, 0, 0), KS_RESUME_FRESH);
	/* more than one drain ahead cannot come from one serve: counted, said */
	EXPECT_EQ_INT(ks_drain_resume(true, n + 2, n), KS_RESUME_ODD);
	/* the first drain of fresh pins */
	EXPECT_EQ_INT(ks_drain_resume(true, 1, 0), KS_RESUME_DISCARD);
	EXPECT_EQ_INT(ks_drain_resume(true, 0, 0), KS_RESUME_COUNT);
}
