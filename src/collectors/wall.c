/* User side of `ksight wall`: per-thread rows of the window's wall time split into states, open states cut at the window's end, rolled up by --by. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
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
	bool locks;		    /* --by lock: rows per lock from the lock_events records */
	struct ring_buffer *rb;	    /* lock_events */
	struct ks_wall_lock_ev *ev; /* the records read, not yet reported */
	size_t nev, capev;
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

	/* a window with no thread (top's first, a filter nothing passed) has no array: qsort and bsearch take none */
	if (nseen)
		qsort(ctx->win, nseen, sizeof(*ctx->win), by_tid);
	for (size_t i = 0; i < ctx->ncarry; i++) {
		struct wall_thr *w;

		if (nseen && bsearch(&ctx->carry[i], ctx->win, nseen, sizeof(*ctx->win), by_tid))
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
	if (ctx->nwin)
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

/*
 * --by lock: a row per lock (the waiter's pid and the address, a kernel
 * lock's alone) from the records of the sleeps on it that ended in the
 * window: their count, the threads that slept, the time and its
 * histogram, and who woke them.
 */
static const struct ks_column lock_cols[] = {
	{ "waits", KS_COL_COUNTER, KS_UNIT_COUNT, "sleeps on the lock that ended in the window (each ended by a wakeup)" },
	{ "waiters", KS_COL_COUNTER, KS_UNIT_COUNT, "distinct threads among them" },
	{ "wait_total_ns", KS_COL_DURATION, KS_UNIT_NS, "their time asleep, from the switch out to the wakeup" },
	{ NULL, 0, 0, NULL },
};
#define WALL_BY_LOCK 100

static int lock_ev_add(void *vctx, void *data, size_t size)
{
	struct wall_ctx *ctx = vctx;

	if (size < sizeof(*ctx->ev))
		return 0;
	if (ctx->nev == ctx->capev) {
		size_t cap = ctx->capev ? 2 * ctx->capev : 1024;
		struct ks_wall_lock_ev *e = realloc(ctx->ev, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		ctx->ev = e;
		ctx->capev = cap;
	}
	memcpy(&ctx->ev[ctx->nev++], data, sizeof(*ctx->ev));
	return 0;
}

/* The lock key: a kernel lock is the machine's, a futex word its process's. */
static int cmp_lock(const void *a, const void *b)
{
	const struct ks_wall_lock_ev *x = a, *y = b;
	uint32_t px = x->kind == KS_WALL_LOCK_KERNEL ? 0 : x->pid, py = y->kind == KS_WALL_LOCK_KERNEL ? 0 : y->pid;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (px != py)
		return px < py ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_ev_tid(const void *a, const void *b)
{
	uint32_t x = ((const struct ks_wall_lock_ev *)a)->tid, y = ((const struct ks_wall_lock_ev *)b)->tid;

	return x < y ? -1 : x > y;
}

static int cmp_ev_waker(const void *a, const void *b)
{
	uint32_t x = ((const struct ks_wall_lock_ev *)a)->waker, y = ((const struct ks_wall_lock_ev *)b)->waker;

	return x < y ? -1 : x > y;
}

static const char *const lock_kinds[] = { "private", "shared", "kernel" };

/* One row of the sleeps e[0, n), which share a lock. */
static int lock_emit(struct ks_report *r, struct ks_wall_lock_ev *e, size_t n)
{
	uint64_t sum = 0, waiters = 0;
	struct ks_row *row = ks_report_add_row(r);
	struct ks_hist *h;
	char buf[40];

	if (!row)
		return -ENOMEM;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	row->hist = h;
	for (size_t i = 0; i < n; i++) {
		uint64_t ns = e[i].end > e[i].start ? e[i].end - e[i].start : 0;

		ks_hist_record(h, ns);
		sum += ns;
	}
	ks_row_key_num(row, "pid", e[0].kind == KS_WALL_LOCK_KERNEL ? 0 : e[0].pid);
	e[0].comm[KS_COMM_LEN - 1] = 0;
	ks_row_key_str(row, "comm", e[0].kind == KS_WALL_LOCK_KERNEL ? "[kernel]" : e[0].comm);
	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)e[0].addr);
	ks_row_key_str(row, "lock", buf);
	ks_row_key_str(row, "kind", lock_kinds[e[0].kind < 3 ? e[0].kind : 2]);
	qsort(e, n, sizeof(*e), cmp_ev_tid);
	for (size_t i = 0; i < n; i++)
		waiters += !i || e[i].tid != e[i - 1].tid;
	ks_row_col(row, &lock_cols[0], n);
	ks_row_col(row, &lock_cols[1], waiters);
	ks_row_col(row, &lock_cols[2], sum);
	/* the wakers, "comm:tid" (or "unknown"), each with the sleeps it ended */
	qsort(e, n, sizeof(*e), cmp_ev_waker);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && e[j].waker == e[i].waker; j++)
			;
		e[i].waker_comm[KS_COMM_LEN - 1] = 0;
		if (e[i].waker)
			snprintf(buf, sizeof(buf), "%s:%u", e[i].waker_comm, e[i].waker);
		else
			snprintf(buf, sizeof(buf), "unknown");
		ks_row_sub_add(row, buf, j - i);
	}
	row->sort = sum;
	return 0;
}

/*
 * The lock rows of the sleeps that ended by the window's end (those read
 * after it wait for the next); in KS_DRAIN_READ they stay.
 */
static int lock_drain(struct wall_ctx *ctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct ks_wall_lock_ev *in;
	size_t n = 0, rest = 0;
	int err = 0;

	if (ctx->rb) {
		err = ring_buffer__consume(ctx->rb);
		if (err < 0)
			return err;
		err = 0;
	}
	in = malloc((ctx->nev ? ctx->nev : 1) * sizeof(*in));
	if (!in)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->nev; i++) {
		if (ctx->ev[i].end <= ctx->win_end)
			in[n++] = ctx->ev[i];
		else if (mode != KS_DRAIN_READ)
			ctx->ev[rest++] = ctx->ev[i];
	}
	if (mode != KS_DRAIN_READ)
		ctx->nev = rest;
	if (mode != KS_DRAIN_CLEAR) {
		r->hist_name = "wait_ns";
		r->hist_unit = KS_UNIT_NS;
		r->sub_name = "wakers";
		qsort(in, n, sizeof(*in), cmp_lock);
		for (size_t i = 0, j; i < n && !err; i = j) {
			for (j = i + 1; j < n && !cmp_lock(&in[i], &in[j]); j++)
				;
			err = lock_emit(r, &in[i], j - i);
		}
	}
	free(in);
	return err;
}

static int wall_drain(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct wall_ctx *ctx = vctx;
	int err;

	ctx->nwin = 0;
	err = ks_sched_drain_mode(&ctx->s, r, mode);
	if (!err)
		err = carry_on(ctx, mode != KS_DRAIN_READ);
	if (!err && ctx->locks)
		return lock_drain(ctx, r, mode);
	if (err || mode == KS_DRAIN_CLEAR)
		return err;
	if (ctx->nwin)
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
	{ "lock", WALL_BY_LOCK },
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

/* The throttle marks' hash (bpf/wall.bpf.c: thr_marks) */
#define WALL_THR_MARKS 4096
#define WALL_THR_MARK_SIZE 16
#define WALL_LOCK_WAITS_MAX 4096
#define WALL_LOCK_RING_MIN (16u << 10)
#define WALL_LOCK_RING_MAX (256u << 10)

/*
 * The maps wall has besides the family's, counted before the rows take
 * what is left: the throttle marks always, and under --by lock the
 * waits' hash and the records' ring, a sixteenth of the budget each.
 */
static uint64_t wall_extra(struct wall_ctx *ctx, struct bpf_object *obj)
{
	const struct ks_budget *b = ctx->s.run.budget;
	uint64_t bytes = ks_map_bytes(BPF_MAP_TYPE_HASH, 4, WALL_THR_MARK_SIZE, WALL_THR_MARKS, 0, b->ncpus);
	uint32_t waits = 1, ring = 4096;

	if (ctx->locks) {
		waits = ks_budget_rows(b, 1.0 / 16,
				       ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, 4, sizeof(struct ks_wall_lock_wait), 0),
				       64, WALL_LOCK_WAITS_MAX, false);
		for (ring = WALL_LOCK_RING_MIN; ring < WALL_LOCK_RING_MAX && 2 * (uint64_t)ring <= b->limit / 16;)
			ring *= 2;
	}
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "lock_waits"), waits);
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, "lock_events"), ring);
	bytes += ks_map_bytes(BPF_MAP_TYPE_HASH, 4, sizeof(struct ks_wall_lock_wait), waits, 0, b->ncpus);
	bytes += ks_map_bytes(BPF_MAP_TYPE_RINGBUF, 0, 0, ring, 0, b->ncpus);
	return bytes;
}

static int wall_configure(void *vctx, void *skel, const char *hook)
{
	struct wall_ctx *ctx = vctx;
	struct bpf_object *obj = ks_wall_ops.obj(skel);
	bool cg = ctx->roll == KS_SCHED_BY_CGROUP;
	int err;

	ctx->s.run.extra = wall_extra(ctx, obj);
	err = ks_sched_configure(vctx, skel, hook);
	if (!err)
		err = ks_sc_set_rodata(obj, "wall_cgroup", &cg, sizeof(cg));
	if (!err)
		err = ks_sc_set_rodata(obj, "wall_locks", &ctx->locks, sizeof(ctx->locks));
	/* the waker is needed only for --by lock; kernel locks only where the kernel has the tracepoints (v5.19+) */
	if (!ctx->locks)
		ks_prog_disable(obj, "lock_waking");
	if (ks_tp_nargs("contention_begin") < 0 || ks_tp_nargs("contention_end") < 0) {
		ks_prog_disable(obj, "contention_begin");
		ks_prog_disable(obj, "contention_end");
	}
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
	if (!err && ctx->locks) {
		struct bpf_object *obj = ks_wall_ops.obj(ctx->s.sc.skel);

		ctx->rb = ring_buffer__new(bpf_map__fd(bpf_object__find_map_by_name(obj, "lock_events")), lock_ev_add,
					   ctx, NULL);
		if (!ctx->rb)
			err = -errno;
	}
	return err;
}

static void wall_release(void *vctx)
{
	struct wall_ctx *ctx = vctx;

	free(ctx->win);
	free(ctx->carry);
	ctx->win = ctx->carry = NULL;
	ring_buffer__free(ctx->rb);
	ctx->rb = NULL;
	free(ctx->ev);
	ctx->ev = NULL;
	ctx->nev = ctx->capev = 0;
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
	{ "lock_sleeps_lost", offsetof(struct ks_wall__bss, lock_lost), KS_SC_SOME },
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
	int by = ks_by_parse(wall_by_words, c->by);

	ctx->locks = by == WALL_BY_LOCK;
	ctx->roll = ctx->locks ? KS_SCHED_BY_TID : (enum ks_sched_by)by;
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
