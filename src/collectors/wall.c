/* User side of `ksight wall`: per-thread rows of the window's wall time split into states, open states cut at the window's end, rolled up by --by. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "ksight/wall.h"
#include "wall.skel.h"

/* The value columns, declared once: the window's time of a row, then its split (they add up to total_ns). */
static const struct ks_column wall_cols[] = {
	{ "total_ns", KS_COL_DURATION, KS_UNIT_NS, "wall time of the row's threads inside the window: the sum of the states" },
	{ "oncpu_ns", KS_COL_DURATION, KS_UNIT_NS, "running on a CPU" },
	{ "runnable_ns", KS_COL_DURATION, KS_UNIT_NS, "runnable, waiting for a CPU" },
	{ "throttled_ns", KS_COL_DURATION, KS_UNIT_NS, "runnable but held back by the cgroup's CPU quota" },
	{ "blkio_ns", KS_COL_DURATION, KS_UNIT_NS, "uninterruptible in io_schedule: block I/O" },
	{ "uninterruptible_ns", KS_COL_DURATION, KS_UNIT_NS, "other uninterruptible sleep (D)" },
	{ "lock_ns", KS_COL_DURATION, KS_UNIT_NS, "asleep in futex waits: pthread mutexes, condition variables, joins" },
	{ "netpipe_ns", KS_COL_DURATION, KS_UNIT_NS, "asleep in read, write, recv, send, poll, epoll, select: sockets, pipes" },
	{ "sleep_ns", KS_COL_DURATION, KS_UNIT_NS, "asleep in nanosleep, clock_nanosleep" },
	{ "other_sleep_ns", KS_COL_DURATION, KS_UNIT_NS, "any other interruptible sleep" },
	{ "other_ns", KS_COL_DURATION, KS_UNIT_NS, "stopped, traced, frozen" },
	/* not states: oncpu_ns split by the kernel's user and system CPU time of the thread (they add up to it) */
	{ "cpu_user_ns", KS_COL_DURATION, KS_UNIT_NS, "of oncpu_ns, in user mode (split by the threads' utime and stime)" },
	{ "cpu_sys_ns", KS_COL_DURATION, KS_UNIT_NS, "of oncpu_ns, in the kernel (oncpu_ns - cpu_user_ns)" },
	{ NULL, 0, 0, NULL },
};
_Static_assert(sizeof(wall_cols) / sizeof(wall_cols[0]) == KS_WALL_STATES + 4, "a column per state, the CPU split");
/* the text table shows each state column also as its share of total_ns (shares: the KS_WALL_STATES columns after it) */
static const struct ks_schema wall_schema = { wall_cols, NULL, KS_UNIT_NS, NULL,
					      (const char *const[]){ KS_SCHED_KEYS, NULL }, .hist_cols = NULL,
					      .shares = KS_WALL_STATES };

/* One thread in one window, or its open state carried to the next. */
struct wall_thr {
	uint32_t tid, pid, last; /* last: its open state at the window's end, KS_WALL_STATES if none */
	uint64_t cgroup_id;
	char comm[KS_COMM_LEN];
	uint64_t ns[KS_WALL_STATES];
	uint64_t cpu_user;     /* of ns[KS_WALL_ONCPU], in user mode */
	uint64_t utime, stime; /* the thread's task_struct utime and stime at its last transition (ns) */
};

struct wall_ctx {
	struct ks_sched_ctx s; /* first: the family's and core's callbacks take the context as theirs */
	enum ks_sched_by roll; /* --by: the rows' key, rolled up here from the programs' tid rows */
	uint64_t win_start, win_end; /* bpf_ktime_get_ns of the window being drained */
	struct wall_thr *win; /* this window's threads */
	size_t nwin, capwin;
	struct wall_thr *carry; /* threads with a state open at the last window's end, by tid */
	size_t ncarry;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct wall_thr *win_add(struct wall_ctx *ctx)
{
	if (ctx->nwin == ctx->capwin) {
		size_t cap = ctx->capwin ? 2 * ctx->capwin : 256;
		struct wall_thr *w = realloc(ctx->win, cap * sizeof(*w));

		if (!w)
			return NULL;
		ctx->win = w;
		ctx->capwin = cap;
	}
	memset(&ctx->win[ctx->nwin], 0, sizeof(ctx->win[0]));
	return &ctx->win[ctx->nwin++];
}

/* A drained tid row: its ended intervals, and its open state cut at the window's end. */
static int take_row(const struct ks_sched_rowid *id, const void *vals, int nvals, void *vctx)
{
	struct wall_ctx *ctx = vctx;
	const struct ks_wall_stat *v = vals;
	struct wall_thr *w;

	(void)nvals; /* rows by tid are shared: one copy */
	if (id->other)
		return 0; /* no tid: nothing to carry; its time is lost, counted in to_other */
	w = win_add(ctx);
	if (!w)
		return -ENOMEM;
	w->tid = (uint32_t)id->num;
	w->pid = v->pid;
	w->cgroup_id = v->cgroup_id;
	memcpy(w->comm, v->comm, KS_COMM_LEN);
	w->comm[KS_COMM_LEN - 1] = 0;
	memcpy(w->ns, v->ns, sizeof(w->ns));
	w->utime = v->utime;
	w->stime = v->stime;
	w->last = v->last < KS_WALL_STATES ? v->last : KS_WALL_STATES;
	if (w->last < KS_WALL_STATES) {
		uint64_t from = v->last_ts > ctx->win_start ? v->last_ts : ctx->win_start;

		if (ctx->win_end > from)
			w->ns[w->last] += ctx->win_end - from;
	}
	return 1;
}

static int by_tid(const void *a, const void *b)
{
	uint32_t x = ((const struct wall_thr *)a)->tid, y = ((const struct wall_thr *)b)->tid;

	return x < y ? -1 : x > y;
}

/* The roll-up key of @w under @by, compared. */
static int by_key(const struct wall_thr *a, const struct wall_thr *b, enum ks_sched_by by)
{
	switch (by) {
	case KS_SCHED_BY_PID:
		return a->pid < b->pid ? -1 : a->pid > b->pid;
	case KS_SCHED_BY_COMM:
		return strcmp(a->comm, b->comm);
	case KS_SCHED_BY_CGROUP:
		return a->cgroup_id < b->cgroup_id ? -1 : a->cgroup_id > b->cgroup_id;
	default:
		return a->tid < b->tid ? -1 : a->tid > b->tid;
	}
}

static int cmp_roll(const void *a, const void *b, void *by)
{
	return by_key(a, b, *(enum ks_sched_by *)by);
}

/*
 * Splits @w's on-CPU time into user and system by the growth of the
 * thread's task_struct utime and stime (read by the programs at its last
 * transition) since @prev's reading (NULL: since the thread began).  They
 * are what /proc/PID/task/TID/stat's utime and stime are made of; with
 * tick accounting they grow by ticks, so the split is by their ratio, and
 * the two parts add up to oncpu_ns exactly.  A window with no tick of the
 * thread (or no transition: a thread carried whole) takes the ratio of its
 * whole life; a thread with no tick at all counts as user.
 */
static void split_cpu(struct wall_thr *w, const struct wall_thr *prev)
{
	uint64_t on = w->ns[KS_WALL_ONCPU], du = w->utime, ds = w->stime;

	if (prev && du >= prev->utime && ds >= prev->stime && du + ds > prev->utime + prev->stime) {
		du -= prev->utime;
		ds -= prev->stime;
	}
	w->cpu_user = du + ds ? (uint64_t)((unsigned __int128)on * du / (du + ds)) : on;
}

/*
 * Threads with a state open at the last window's end and no event in
 * this one spent all of it there; then the open states are carried on to
 * the next window (in KS_DRAIN_READ nothing moves).
 */
static int carry_on(struct wall_ctx *ctx, bool commit)
{
	size_t nseen = ctx->nwin, n = 0;
	struct wall_thr *c;

	qsort(ctx->win, ctx->nwin, sizeof(*ctx->win), by_tid);
	for (size_t i = 0; i < ctx->ncarry; i++) {
		struct wall_thr *w;

		if (bsearch(&ctx->carry[i], ctx->win, nseen, sizeof(*ctx->win), by_tid))
			continue;
		w = win_add(ctx);
		if (!w)
			return -ENOMEM;
		*w = ctx->carry[i];
		memset(w->ns, 0, sizeof(w->ns));
		w->ns[w->last] = ctx->win_end - ctx->win_start;
		split_cpu(w, &ctx->carry[i]);
	}
	/* the threads with events: their carried reading, if any, is where the window began */
	for (size_t i = 0; i < nseen; i++)
		split_cpu(&ctx->win[i],
			  ctx->ncarry ? bsearch(&ctx->win[i], ctx->carry, ctx->ncarry, sizeof(*ctx->carry), by_tid) : NULL);
	if (!commit)
		return 0;
	qsort(ctx->win, ctx->nwin, sizeof(*ctx->win), by_tid);
	c = malloc((ctx->nwin ? ctx->nwin : 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->nwin; i++)
		if (ctx->win[i].last < KS_WALL_STATES)
			c[n++] = ctx->win[i];
	free(ctx->carry);
	ctx->carry = c;
	ctx->ncarry = n;
	ctx->win_start = ctx->win_end;
	return 0;
}

/* One report row of the threads win[from, to), which share the roll-up key. */
static int emit(struct wall_ctx *ctx, struct ks_report *r, size_t from, size_t to)
{
	const struct wall_thr *w = &ctx->win[from];
	struct ks_sched_rowid id = { .num = w->tid };
	uint64_t ns[KS_WALL_STATES] = { 0 }, total = 0, user = 0;
	struct ks_row *row;

	for (size_t i = from; i < to; i++) {
		for (int s = 0; s < KS_WALL_STATES; s++)
			ns[s] += ctx->win[i].ns[s];
		user += ctx->win[i].cpu_user;
	}
	for (int s = 0; s < KS_WALL_STATES; s++)
		total += ns[s];
	if (!total)
		return 0;
	row = ks_report_add_row(r);
	if (!row)
		return -ENOMEM;
	if (ctx->roll == KS_SCHED_BY_PID)
		id.num = w->pid;
	else if (ctx->roll == KS_SCHED_BY_CGROUP)
		id.num = (int64_t)w->cgroup_id;
	memcpy(id.comm, w->comm, KS_COMM_LEN);
	ks_sched_label(row, ctx->roll, &id);
	ks_row_col(row, &wall_cols[0], total);
	for (int s = 0; s < KS_WALL_STATES; s++)
		ks_row_col(row, &wall_cols[s + 1], ns[s]);
	ks_row_col(row, &wall_cols[KS_WALL_STATES + 1], user);
	ks_row_col(row, &wall_cols[KS_WALL_STATES + 2], ns[KS_WALL_ONCPU] - user);
	row->sort = total - ns[KS_WALL_OTHER_SLEEP]; /* busiest first: idle waiting for work last */
	return 0;
}

static int wall_drain(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct wall_ctx *ctx = vctx;
	int err;

	ctx->nwin = 0;
	err = ks_sched_drain_mode(&ctx->s, r, mode);
	if (!err)
		err = carry_on(ctx, mode != KS_DRAIN_READ);
	if (err || mode == KS_DRAIN_CLEAR)
		return err;
	qsort_r(ctx->win, ctx->nwin, sizeof(*ctx->win), cmp_roll, &ctx->roll);
	for (size_t i = 0, j; i < ctx->nwin && !err; i = j) {
		for (j = i + 1; j < ctx->nwin && !by_key(&ctx->win[i], &ctx->win[j], ctx->roll); j++)
			;
		err = emit(ctx, r, i, j);
	}
	return err;
}

static const struct ks_by_word wall_by_words[] = {
	{ "tid", KS_SCHED_BY_TID },
	{ "pid", KS_SCHED_BY_PID },
	{ "comm", KS_SCHED_BY_COMM },
	{ "cgroup", KS_SCHED_BY_CGROUP },
	{ NULL, KS_SCHED_BY_TID },
};

/* --stacks is a mode of its own (src/cli/profile.c: cmd_wall); listed here for -h */
static const struct ks_optdef wall_opts[] = {
	{ "stacks", 300, NULL, "the time by state and stack instead: see 'ksight wall --stacks -h'" },
	{ 0 },
};

/* Reached from `ksight run` only: `ksight wall --stacks` never gets here. */
static int wall_parse_opt(void *ctx, int id, const char *arg)
{
	(void)ctx, (void)id, (void)arg;
	p_err("wall: --stacks works with 'ksight wall' alone, not in 'ksight run'");
	return -EINVAL;
}

KS_SKEL_OPS(ks_wall);

static int wall_configure(void *vctx, void *skel, const char *hook)
{
	struct wall_ctx *ctx = vctx;
	bool cg = ctx->roll == KS_SCHED_BY_CGROUP;
	int err = ks_sched_configure(vctx, skel, hook);

	if (!err)
		err = ks_sc_set_rodata(ks_wall_ops.obj(skel), "wall_cgroup", &cg, sizeof(cg));
	return err;
}

static int wall_attached(void *vctx)
{
	struct wall_ctx *ctx = vctx;
	struct ks_wall__bss *bss = ctx->s.sc.bss;
	int err = ks_sched_attached(vctx);

	/* the first window starts with the programs' run: no state is counted from before */
	ctx->win_start = bss->ks_since;
	bss->ks_wall_start[0] = bss->ks_wall_start[1] = bss->ks_since;
	return err;
}

static void wall_release(void *vctx)
{
	struct wall_ctx *ctx = vctx;

	free(ctx->win);
	free(ctx->carry);
	ctx->win = ctx->carry = NULL;
	ks_sched_release(vctx);
}

/* The half the programs write next starts now; the window drained next ends now. */
static int wall_mark(void *vctx)
{
	struct wall_ctx *ctx = vctx;
	struct ks_wall__bss *bss = ctx->s.sc.bss;
	uint64_t now = mono_ns();

	bss->ks_wall_start[(ctx->s.sc.gen + 1) & 1] = now;
	__sync_synchronize();
	ctx->win_end = now;
	return ks_sc_mark(vctx);
}

static const struct ks_sc_map wall_maps[] = { { .drain = ks_sched_drain_maps } };
static const struct ks_sc_counter wall_counters[] = {
	KS_SCHED_LOSSES(struct ks_wall__bss),
};
static const struct ks_sched_def wall_def = {
	.sc = { .name = "wall", .hooks = ks_sched_hooks, .skel = &ks_wall_ops,
		.gen_at = offsetof(struct ks_wall__bss, ks_gen), .maps = wall_maps, .nmaps = 1,
		.counters = wall_counters, .ncounters = sizeof(wall_counters) / sizeof(wall_counters[0]),
		.configure = wall_configure, .attached = wall_attached, .release = wall_release },
	.since_at = offsetof(struct ks_wall__bss, ks_since),
	.to_other_at = offsetof(struct ks_wall__bss, ks_to_other),
	.nsub = 1,
	.value_size = sizeof(struct ks_wall_stat),
	.schema = &wall_schema,
	.take = take_row,
};

/* The programs always keep rows by tid (each thread's open state must be known); --by rolls them up here. */
static int wall_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct wall_ctx *ctx = vctx;
	struct ks_common tid = *c;

	ctx->roll = (enum ks_sched_by)ks_by_parse(wall_by_words, c->by);
	tid.by = "tid";
	return ks_sched_open(&ctx->s, &wall_def, &tid, f);
}

const struct ks_collector ks_wall_collector = {
	.spec = {
		.name = "wall",
		.summary = "Where each thread's wall-clock time went: on-CPU, runnable, throttled, block I/O, D, "
			   "lock, network/pipe, sleep, other sleep, adding up to the window.",
		.common = KS_O_COLLECTOR,
		.by_words = wall_by_words,
		.opts = wall_opts,
	},
	.ctx_size = sizeof(struct wall_ctx),
	.parse_opt = wall_parse_opt,
	.open = wall_open,
	.hook = ks_sc_hook,
	.mark = wall_mark,
	.drain = wall_drain,
	.schema = &wall_schema,
	.close = ks_sc_close,
};
