/* User side of `ksight syscalls`: options, load with hook fallback, drain the per-CPU maps into a report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collectors/rows.h"
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/names.h"
#include "core/pin.h"
#include "core/rowkey.h"
#include "core/scaffold.h"
#include "core/tracefs.h"
#include "ksight/syscalls.h"
#include "syscalls.skel.h"

enum { OPT_ERRORS = 300, OPT_COUNT = 'L', OPT_STACKS = 301 };

/* Rows of the pid and comm modes (both buffer halves), at most; the budget may allow fewer. */
#define SC_HASH_ROWS 16384
#define SC_START_CAP (1u << 22)

struct sc_ctx {
	struct ks_scaffold sc;	/* first: the lifecycle core runs */
	struct ks_sc_def def;	/* sc_def, with the counters of the mode */
	enum ks_sc_by by;
	bool errors_only;
	bool count_only;
	const struct ks_filter *filter;
	uint32_t nhists;
	void *vbuf; /* one per-CPU value of the largest map */
	/*
	 * Histograms, cumulative in the kernel: per-CPU slots now and as last
	 * reported.  A KS_DRAIN_READ reports against hprev into hnext; its
	 * CLEAR makes hnext the new hprev (hnext_due until then).
	 */
	uint32_t *hcur, *hprev, *hnext;
	bool hnext_due;
	bool *hread; /* hcur[h] holds a fresh read */
	/* per report: row index of each array row, errno counts added to it */
	int rowidx[KS_SC_ROWS];
	uint64_t errsum[KS_SC_ROWS];
	/* per report of the hash modes: the key of each row drained, from row rbase on */
	struct ks_sc_key *rkeys;
	int nrkeys, caprkeys, rbase;
	/* rkeys' indices in key order, for the errno rows to find theirs (10k rows: a scan each took seconds) */
	int *order, caporder;
};

/* The loaded skeleton (the scaffold holds it untyped). */
static struct ks_syscalls *sc_skel(const struct sc_ctx *ctx)
{
	return ctx->sc.skel;
}

static const struct ks_optdef sc_opts[] = {
	{ "errors", OPT_ERRORS, NULL, "only failing calls (return value < 0)" },
	{ "no-latency", OPT_COUNT, NULL, "count only, no latency: one hook, cheaper" },
	/* a mode of its own (src/cli/profile.c: cmd_syscalls); listed here for -h */
	{ "stacks", OPT_STACKS, NULL, "time by the caller's stack instead: see 'ksight syscalls --stacks -h'" },
	{ 0 },
};

static int sc_parse_opt(void *vctx, int id, const char *arg)
{
	struct sc_ctx *ctx = vctx;

	(void)arg;
	if (id == OPT_STACKS) {
		p_err("syscalls: --stacks works with 'ksight syscalls' alone, not in 'ksight run'");
		return -EINVAL;
	}
	if (id == OPT_ERRORS)
		ctx->errors_only = true;
	else if (id == OPT_COUNT)
		ctx->count_only = true;
	else
		return -EINVAL;
	return 0;
}

static const struct ks_by_word sc_by_words[] = {
	{ "syscall", KS_SC_BY_SYSCALL },
	{ "pid", KS_SC_BY_PID },
	{ "comm", KS_SC_BY_COMM },
	{ "errno", KS_SC_BY_ERRNO },
	{ "pid,syscall", KS_SC_BY_PID_SYSCALL },
	{ "comm,syscall", KS_SC_BY_COMM_SYSCALL },
	{ "cgroup,syscall", KS_SC_BY_CGROUP_SYSCALL },
	{ NULL, KS_SC_BY_SYSCALL },
};

enum { C_COUNT, C_ERRORS, C_TOTAL };
static const struct ks_column sc_cols[] = {
	[C_COUNT] = { "count", KS_COL_COUNTER, KS_UNIT_COUNT,
		      "calls entered (exit, exit_group and rt_sigreturn included: they never return)" },
	[C_ERRORS] = { "errors", KS_COL_COUNTER, KS_UNIT_COUNT, "calls that returned -4095..-1" },
	[C_TOTAL] = { "total_ns", KS_COL_DURATION, KS_UNIT_NS, "summed time of the calls, entry to exit (absent with -L)" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema sc_schema = {
	sc_cols, "latency_ns", KS_UNIT_NS,
	"each call's time from sys_enter to sys_exit (absent with -L, and for rows past the budget's histograms)",
	(const char *const[]){ "syscall", "nr", "errno", "code", KS_TASK_KEYS, NULL },
	.hist_cols = NULL,
};

/* Modes of shared rows in the srows hash: a task, or a task and a syscall. */
static bool hashed(const struct sc_ctx *ctx)
{
	return ctx->by != KS_SC_BY_SYSCALL && ctx->by != KS_SC_BY_ERRNO;
}

/* Modes whose rows carry a process id (named through pid_comm). */
static bool by_tgid(const struct sc_ctx *ctx)
{
	return ctx->by == KS_SC_BY_PID || ctx->by == KS_SC_BY_PID_SYSCALL;
}

/* The task part of a hash mode's key. */
static enum ks_task_by by_task(enum ks_sc_by by)
{
	if (by == KS_SC_BY_PID || by == KS_SC_BY_PID_SYSCALL)
		return KS_TASK_PID;
	if (by == KS_SC_BY_COMM || by == KS_SC_BY_COMM_SYSCALL)
		return KS_TASK_COMM;
	return KS_TASK_CGROUP;
}

static enum ks_task_by task_by(const struct sc_ctx *ctx)
{
	return by_task(ctx->by);
}

/* The "other" row of buffer half @gen: made ahead, so a full map still has it. */
static struct ks_sc_key other_key(unsigned int gen)
{
	struct ks_sc_key k = { .t.gen = gen, .other = 1 };

	return k;
}

/*
 * Map sizes from the budget (counted at the possible-CPU count):
 * - starts: one 16-byte slot per tid up to pid_max, at most 1/16 of the
 *   budget (tids beyond alias and are counted in start_collisions);
 * - syscall/errno modes: the 2 x 512 counter rows (32 bytes per CPU), the
 *   errno pairs in 1/32 of the budget, and as many per-CPU histograms as
 *   keep everything allocated at load within a quarter of the budget (16
 *   MiB of the default 64): histograms go to the syscalls seen first;
 * - pid, comm and the combined modes (pid,syscall, comm,syscall,
 *   cgroup,syscall): shared rows in 60% of the budget (at most
 *   SC_HASH_ROWS; keys beyond go to the "other" row), errno rows in 5%.
 */
static void size_maps(struct sc_ctx *ctx, struct ks_syscalls *s)
{
	const struct ks_budget *b = &ctx->sc.budget;
	uint32_t nstart = 1, nrows = 1, nh = 0, nerr = 1, nsrow = 1, nherr = 1, ncomm = 1;

	if (!ctx->count_only) {
		uint32_t cap = ks_budget_rows(b, 1.0 / 16, ks_budget_row_bytes(b, BPF_MAP_TYPE_ARRAY, 4, 16, 0),
					      1024, SC_START_CAP, true);

		nstart = ks_pow2_at_least(ks_pid_max(), cap);
	}
	if (!hashed(ctx)) {
		nrows = 2 * KS_SC_ROWS;
		if (ctx->by == KS_SC_BY_SYSCALL)
			nerr = ks_budget_rows(b, 1.0 / 32,
					      ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_HASH,
								  sizeof(struct ks_sc_nerr_key), 8, 0),
					      64, 4096, false);
		if (!ctx->count_only) {
			uint64_t used = ks_map_bytes(BPF_MAP_TYPE_ARRAY, 4, sizeof(struct ks_sc_start), nstart, 0, b->ncpus) +
					ks_map_bytes(BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct ks_sc_cnt), nrows, 0, b->ncpus) +
					ks_map_bytes(BPF_MAP_TYPE_PERCPU_HASH, sizeof(struct ks_sc_nerr_key), 8, nerr, 0, b->ncpus);
			/* 1/64 of the budget stays for what is not counted here (.bss, hist_of, names) */
			uint64_t cap = b->limit / 4 - b->limit / 64;
			uint64_t room = cap > used ? cap - used : 0;

			nh = ks_budget_rows(b, (double)room / (double)b->limit,
					    ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct ks_sc_hist), 0),
					    1, KS_SC_ROWS, false);
		}
	} else {
		nsrow = ks_budget_rows(b, 0.6, ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_sc_key),
								  sizeof(struct ks_sc_srow), 0),
				       64, SC_HASH_ROWS, false);
		nherr = ks_budget_rows(b, 0.05, ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_sc_err_key), 8, 0),
				       64, 4 * nsrow, false);
		if (by_tgid(ctx))
			ncomm = nsrow;
	}
	s->rodata->start_mask = nstart - 1;
	s->rodata->nhists = nh;
	ctx->nhists = nh;
	bpf_map__set_max_entries(s->maps.starts, nstart);
	bpf_map__set_max_entries(s->maps.rows, nrows);
	bpf_map__set_max_entries(s->maps.hists, nh ? nh : 1);
	bpf_map__set_max_entries(s->maps.nerrs, nerr);
	bpf_map__set_max_entries(s->maps.srows, nsrow);
	bpf_map__set_max_entries(s->maps.herrs, nherr);
	bpf_map__set_max_entries(s->maps.pid_comm, ncomm);
}

/* The rodata, map sizes and programs of one load (ks_load_spec). */
static int configure(void *vctx, void *skel, const char *hook)
{
	struct sc_ctx *ctx = vctx;
	struct ks_syscalls *s = skel;

	(void)hook;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = ctx->by;
	s->rodata->errors_only = ctx->errors_only;
	s->rodata->timed = !ctx->count_only;
	size_maps(ctx, s);
	if (ctx->count_only)
		ks_prog_disable(s->obj, "sys_enter");
	else
		ks_prog_disable(s->obj, "task_exit"); /* exit and exit_group are counted at entry */
	/* names kept current across exec: only pid rows have names to keep */
	if (!by_tgid(ctx))
		ks_prog_disable(s->obj, "pid_comm_exec");
	return 0;
}

KS_SKEL_OPS(ks_syscalls);

/* Once attached: the "other" rows made ahead (a full map still has them), the histograms' copies. */
static int sc_attached(void *vctx)
{
	struct sc_ctx *ctx = vctx;

	for (unsigned int gen = 0; gen < 2 && hashed(ctx); gen++) {
		struct ks_sc_key k = other_key(gen);
		int e = ks_map_add(bpf_map__fd(sc_skel(ctx)->maps.srows), &k, ctx->sc.zero);

		if (e)
			p_warn("syscalls: cannot make the \"other\" row: %s", strerror(-e));
	}
	if (ctx->nhists) {
		size_t n = (size_t)ctx->nhists * (size_t)ks_ncpus() * KS_SC_HSLOTS;

		ctx->hcur = calloc(n, sizeof(uint32_t));
		ctx->hprev = calloc(n, sizeof(uint32_t));
		ctx->hnext = calloc(n, sizeof(uint32_t));
		ctx->hread = calloc(ctx->nhists, sizeof(bool));
		if (!ctx->hcur || !ctx->hprev || !ctx->hnext || !ctx->hread)
			return -ENOMEM;
	}
	return 0;
}

#define SC_NHASH_COUNTERS 6
static const struct ks_sc_def sc_def;
static const struct ks_sc_counter sc_hash_counters[SC_NHASH_COUNTERS];

static int sc_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct sc_ctx *ctx = vctx;
	size_t vsz = sizeof(struct ks_sc_srow);
	int by = ks_by_parse(sc_by_words, c->by);

	if (by < 0)
		return by;
	ctx->by = (enum ks_sc_by)by;
	ctx->filter = f;
	if (vsz < sizeof(struct ks_sc_hist) * (size_t)ks_ncpus())
		vsz = sizeof(struct ks_sc_hist) * (size_t)ks_ncpus();
	ctx->vbuf = calloc(1, vsz);
	if (!ctx->vbuf)
		return -ENOMEM;
	/* shared rows have an "other" row, counted in to_other; the array modes have none */
	ctx->def = sc_def;
	if (hashed(ctx)) {
		ctx->def.counters = sc_hash_counters;
		ctx->def.ncounters = SC_NHASH_COUNTERS;
	}
	return ks_sc_open(&ctx->sc, &ctx->def, c);
}

static const char *errno_label(int err, char *buf, size_t len)
{
	const char *n = err ? ks_errno_name(err) : "OK";

	if (n)
		return n;
	snprintf(buf, len, "E%d", err);
	return buf;
}

/* Turns the counters into a report row; takes ownership of @h (may be NULL: no histogram). */
static void fill_row(bool count_only, struct ks_row *row, const struct ks_sc_cnt *c, struct ks_hist *h)
{
	ks_row_col(row, &sc_cols[C_COUNT], c->count);
	ks_row_col(row, &sc_cols[C_ERRORS], c->errors);
	if (!count_only) {
		ks_row_col(row, &sc_cols[C_TOTAL], c->sum_ns);
		if (h) {
			h->sum = c->sum_ns;
			h->max = c->max_ns;
		}
		row->hist = h;
		row->sort = c->sum_ns;
	} else {
		row->sort = c->count;
		free(h);
	}
}

/*
 * Reads every histogram assigned so far into ctx->hcur.  Called just
 * before the buffer flip, so a histogram and the counters of the half
 * drained after it cover the same calls, but for those made while the
 * histograms are being read (counted now, in the histogram next time).
 */
static int snap_hists(struct sc_ctx *ctx)
{
	int fd = bpf_map__fd(sc_skel(ctx)->maps.hists);
	size_t per = (size_t)ks_ncpus() * KS_SC_HSLOTS;

	for (int row = 0; row < KS_SC_ROWS; row++) {
		uint32_t h = sc_skel(ctx)->bss->hist_of[row];

		if (!h || h == KS_SC_NOHIST || h > ctx->nhists)
			continue;
		h--;
		if (bpf_map_lookup_elem(fd, &h, ctx->vbuf))
			return -errno;
		memcpy(ctx->hcur + h * per, ctx->vbuf, per * sizeof(uint32_t));
		ctx->hread[h] = true;
	}
	return 0;
}

/*
 * The histogram of array row @row since its last report, NULL when it
 * has none; what it was taken up to goes to @prev (hprev, or hnext under
 * KS_DRAIN_READ).
 */
static struct ks_hist *take_hist(struct sc_ctx *ctx, int row, uint32_t *prev)
{
	uint32_t h = sc_skel(ctx)->bss->hist_of[row];
	size_t per = (size_t)ks_ncpus() * KS_SC_HSLOTS;
	__u64 sums[KS_SC_HSLOTS] = { 0 };
	struct ks_hist *hist;

	if (ctx->count_only || !h || h == KS_SC_NOHIST || h > ctx->nhists || !ctx->hread[h - 1])
		return NULL;
	h--;
	hist = calloc(1, sizeof(*hist));
	if (!hist)
		return NULL;
	for (size_t i = 0; i < per; i++) {
		/* per CPU and modulo 2^32: exact while a slot moves by less than 2^32 */
		uint32_t d = ctx->hcur[h * per + i] - ctx->hprev[h * per + i];

		sums[i % KS_SC_HSLOTS] += d;
	}
	memcpy(prev + h * per, ctx->hcur + h * per, per * sizeof(uint32_t));
	ks_hist_add_slots_n(hist, sums, KS_SC_HSLOTS);
	return hist;
}

static void sum_cnt(const struct ks_sc_cnt *v, struct ks_sc_cnt *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		sum->count += v[cpu].count;
		sum->errors += v[cpu].errors;
		sum->sum_ns += v[cpu].sum_ns;
		if (v[cpu].max_ns > sum->max_ns)
			sum->max_ns = v[cpu].max_ns;
	}
}

static int collect_rows(struct sc_ctx *ctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	int fd = bpf_map__fd(sc_skel(ctx)->maps.rows);
	size_t vsz = (size_t)ks_ncpus() * sizeof(struct ks_sc_cnt);
	uint32_t *prev = ctx->hprev;

	if (mode == KS_DRAIN_READ && ctx->nhists) {
		size_t n = (size_t)ctx->nhists * (size_t)ks_ncpus() * KS_SC_HSLOTS;

		memcpy(ctx->hnext, ctx->hprev, n * sizeof(uint32_t));
		ctx->hnext_due = true;
		prev = ctx->hnext;
	}

	for (__u32 row_id = 0; row_id < KS_SC_ROWS; row_id++) {
		__u32 idx = gen * KS_SC_ROWS + row_id;
		struct ks_sc_cnt c;
		struct ks_row *row;
		char b[16];

		ctx->rowidx[row_id] = -1;
		ctx->errsum[row_id] = 0;
		/* never written: nothing to read (a flag set after this test is read next time) */
		if (!sc_skel(ctx)->bss->row_used[row_id])
			continue;
		if (bpf_map_lookup_elem(fd, &idx, ctx->vbuf))
			return -errno;
		sum_cnt(ctx->vbuf, &c);
		if (!c.count)
			continue; /* its histogram, if it moved, is reported with its next count */
		memset(ctx->vbuf, 0, vsz);
		if (mode == KS_DRAIN_TAKE && bpf_map_update_elem(fd, &idx, ctx->vbuf, BPF_ANY))
			return -errno;
		row = ks_report_add_row(r);
		if (!row)
			return -ENOMEM;
		ctx->rowidx[row_id] = (int)(row - r->rows);
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
		fill_row(ctx->count_only, row, &c, take_hist(ctx, (int)row_id, prev));
	}
	return 0;
}

struct drain_arg {
	struct sc_ctx *ctx;
	struct ks_report *r;
	unsigned int gen;
};

static bool nerr_in_gen(const void *key, void *varg)
{
	return ((const struct ks_sc_nerr_key *)key)->gen == ((struct drain_arg *)varg)->gen;
}

static int take_nerr(const void *key, const void *value, void *varg)
{
	const struct ks_sc_nerr_key *ek = key;
	struct drain_arg *a = varg;
	const __u64 *v = value;
	uint64_t sum = 0;
	char b[16];

	for (int cpu = 0; cpu < ks_ncpus(); cpu++)
		sum += v[cpu];
	if (!sum || ek->nr >= KS_SC_ROWS || a->ctx->rowidx[ek->nr] < 0)
		return 0;
	a->ctx->errsum[ek->nr] += sum;
	return ks_row_sub_add(&a->r->rows[a->ctx->rowidx[ek->nr]], errno_label((int)ek->err, b, sizeof(b)), sum);
}

/* The errno breakdown of the syscall mode; errors beyond the map's room show as "other". */
static int collect_nerrs(struct sc_ctx *ctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct drain_arg a = { ctx, r, gen };
	struct ks_hash_half h = { .fd = bpf_map__fd(sc_skel(ctx)->maps.nerrs), .key_size = sizeof(struct ks_sc_nerr_key),
				  .match = nerr_in_gen, .cb = take_nerr, .arg = &a, .value_buf = ctx->vbuf };
	int err = ks_hash_drain_half(&h, mode);

	if (mode == KS_DRAIN_CLEAR)
		return err;
	for (int nr = 0; nr < KS_SC_ROWS && !err; nr++) {
		struct ks_row *row;
		uint64_t errors = 0;

		if (ctx->rowidx[nr] < 0)
			continue;
		row = &r->rows[ctx->rowidx[nr]];
		for (int i = 0; i < row->nvals; i++)
			if (!strcmp(row->vals[i].name, "errors"))
				errors = row->vals[i].v;
		if (errors > ctx->errsum[nr])
			err = ks_row_sub_add(row, "other", errors - ctx->errsum[nr]);
	}
	return err;
}

/* Rows' keys in order: other, syscall, then the field of the mode (any half). */
static int key_cmp(const struct ks_sc_key *a, const struct ks_sc_key *b, enum ks_task_by by)
{
	if (a->other != b->other)
		return a->other < b->other ? -1 : 1;
	if (a->nr != b->nr)
		return a->nr < b->nr ? -1 : 1;
	return ks_row_key_cmp(by, &a->t, &b->t);
}

static int order_cmp(const void *x, const void *y, void *varg)
{
	const struct sc_ctx *ctx = varg;

	return key_cmp(&ctx->rkeys[*(const int *)x], &ctx->rkeys[*(const int *)y], task_by(ctx));
}

/* Sorts the rows drained so far into ctx->order. */
static int order_rows(struct sc_ctx *ctx)
{
	if (ctx->nrkeys > ctx->caporder) {
		int *n = realloc(ctx->order, (size_t)ctx->nrkeys * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ctx->order = n;
		ctx->caporder = ctx->nrkeys;
	}
	for (int i = 0; i < ctx->nrkeys; i++)
		ctx->order[i] = i;
	/* no rows yet leaves order NULL, which qsort_r must not get (UBSan: nonnull) */
	if (ctx->nrkeys > 1)
		qsort_r(ctx->order, (size_t)ctx->nrkeys, sizeof(*ctx->order), order_cmp, ctx);
	return 0;
}

/* The report row drained from key @k in this report (any half), NULL when none was; after order_rows. */
static struct ks_row *find_row(struct sc_ctx *ctx, struct ks_report *r, const struct ks_sc_key *k)
{
	int lo = 0, hi = ctx->nrkeys;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c = key_cmp(&ctx->rkeys[ctx->order[mid]], k, task_by(ctx));

		if (!c)
			return &r->rows[ctx->rbase + ctx->order[mid]];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool key_in_gen(const void *key, void *varg)
{
	const struct ks_sc_key *k = key;

	/* the "other" row stays, zeroed in place (collect_other) */
	return k->t.gen == ((struct drain_arg *)varg)->gen && !k->other;
}

static bool errkey_in_gen(const void *key, void *varg)
{
	return ((const struct ks_sc_key *)key)->t.gen == ((struct drain_arg *)varg)->gen;
}

/* Adds the row of key @k with counters @s to the report. */
int ks_syscalls_row(struct ks_report *r, enum ks_sc_by by, bool count_only, const struct ks_sc_key *k,
		    const struct ks_sc_srow *s, int pid_comm_fd)
{
	enum ks_task_by tb = by_task(by);
	struct ks_hist *h = NULL;
	struct ks_row *row;
	char b[16];

	if (!count_only) {
		h = calloc(1, sizeof(*h));
		if (!h)
			return -ENOMEM;
		ks_hist_add_slots_n(h, s->slot, KS_SC_HSLOTS);
	}
	row = ks_report_add_row(r);
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	if (k->other) {
		/* the same columns as the other rows, named "other" (pid 0, cgroup_id 0) */
		if (tb == KS_TASK_PID)
			ks_row_key_num(row, "pid", 0);
		ks_row_key_str(row, tb == KS_TASK_CGROUP ? "cgroup" : "comm", "other");
		if (tb == KS_TASK_CGROUP)
			ks_row_key_num(row, "cgroup_id", 0);
	} else {
		ks_row_task_key(row, tb, &k->t, pid_comm_fd);
	}
	/* the combined modes: a row per task and syscall */
	if (by >= KS_SC_BY_PID_SYSCALL) {
		const char *name = k->other ? "other" : ks_syscall_name((int)k->nr);

		if (!name)
			snprintf(b, sizeof(b), "sys_%u", k->nr), name = b;
		ks_row_key_str(row, "syscall", name);
		ks_row_key_num(row, "nr", k->other ? KS_SC_ROWS - 1 : k->nr);
	}
	fill_row(count_only, row, &s->c, h);
	return 0;
}

static int add_hash_row(struct sc_ctx *ctx, struct ks_report *r, const struct ks_sc_key *k,
			const struct ks_sc_srow *s)
{
	int err;

	if (ctx->nrkeys == ctx->caprkeys) {
		int cap = ctx->caprkeys ? 2 * ctx->caprkeys : 256;
		struct ks_sc_key *n = realloc(ctx->rkeys, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ctx->rkeys = n;
		ctx->caprkeys = cap;
	}
	err = ks_syscalls_row(r, ctx->by, ctx->count_only, k, s, bpf_map__fd(sc_skel(ctx)->maps.pid_comm));
	if (!err)
		ctx->rkeys[ctx->nrkeys++] = *k;
	return err;
}

static int take_row(const void *key, const void *value, void *varg)
{
	const struct ks_sc_srow *s = value;
	struct drain_arg *a = varg;

	if (!s->c.count)
		return 0;
	return add_hash_row(a->ctx, a->r, key, s);
}

static int take_errno(const void *key, const void *value, void *varg)
{
	const struct ks_sc_err_key *ek = key;
	struct drain_arg *a = varg;
	uint64_t sum = *(const __u64 *)value;
	struct ks_row *row = find_row(a->ctx, a->r, &ek->k);
	char b[16];

	if (row && sum)
		return ks_row_sub_add(row, errno_label((int)ek->err, b, sizeof(b)), sum);
	return 0;
}

/* The "other" row of half @gen: read, reported when it counted calls, zeroed for its next turn (in @mode). */
static int collect_other(struct sc_ctx *ctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	int fd = bpf_map__fd(sc_skel(ctx)->maps.srows);
	struct ks_sc_key k = other_key(gen);
	struct ks_sc_srow *s = ctx->vbuf;
	int err = 0;

	if (bpf_map_lookup_elem(fd, &k, s))
		return 0; /* not made (no room at start): its calls are in map_full */
	if (!s->c.count)
		return 0;
	if (mode != KS_DRAIN_CLEAR)
		err = add_hash_row(ctx, r, &k, s);
	memset(s, 0, sizeof(*s));
	if (!err && mode != KS_DRAIN_READ && bpf_map_update_elem(fd, &k, s, BPF_EXIST))
		err = -errno;
	return err;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The names of the pids of the rows drained, deleted in one batch: each pid once, though it has a row per syscall. */
static int forget_names(struct sc_ctx *ctx)
{
	uint32_t *ids = malloc((size_t)ctx->nrkeys * sizeof(*ids) + 1), n = 0, u = 0;

	if (!ids)
		return -ENOMEM;
	for (int i = 0; i < ctx->nrkeys; i++)
		if (!ctx->rkeys[i].other)
			ids[n++] = ctx->rkeys[i].t.id;
	qsort(ids, n, sizeof(*ids), cmp_u32);
	for (uint32_t i = 0; i < n; i++)
		if (!u || ids[i] != ids[u - 1])
			ids[u++] = ids[i];
	ks_map_delete_keys(bpf_map__fd(sc_skel(ctx)->maps.pid_comm), ids, u, sizeof(*ids));
	free(ids);
	return 0;
}

/* Drains both hash maps of the pid, comm and combined modes for buffer half @gen (in @mode). */
static int collect_hash(struct sc_ctx *ctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct drain_arg a = { ctx, r, gen };
	struct ks_hash_half rows = { .fd = bpf_map__fd(sc_skel(ctx)->maps.srows), .key_size = sizeof(struct ks_sc_key),
				     .match = key_in_gen, .cb = take_row, .arg = &a, .value_buf = ctx->vbuf };
	/* ks_sc_err_key starts with its ks_sc_key, so one match serves both */
	struct ks_hash_half errs = { .fd = bpf_map__fd(sc_skel(ctx)->maps.herrs), .key_size = sizeof(struct ks_sc_err_key),
				     .match = errkey_in_gen, .cb = take_errno, .arg = &a, .value_buf = ctx->vbuf };
	int err;

	if (mode != KS_DRAIN_CLEAR) {
		ctx->rbase = r->nrows;
		ctx->nrkeys = 0;
	}
	err = ks_hash_drain_half(&rows, mode);
	if (!err)
		err = collect_other(ctx, r, gen, mode);
	if (!err && mode != KS_DRAIN_CLEAR)
		err = order_rows(ctx);
	if (!err)
		err = ks_hash_drain_half(&errs, mode);
	if (mode == KS_DRAIN_READ)
		return err;
	/*
	 * The names were read (peeked) for every row of a pid: the programs
	 * write them again with a new row.  A CLEAR after an adoption knows
	 * no rows (nrkeys 0): those names stay, as a kill -9 leaves them.
	 */
	if (!err && by_tgid(ctx))
		err = forget_names(ctx);
	if (mode == KS_DRAIN_CLEAR)
		ctx->nrkeys = 0;
	return err;
}

/*
 * Phase one (core/instance.h): the histograms are read, then the halves
 * flip; the driver waits for the kernel once for every instance.
 */
static int sc_mark(void *vctx)
{
	struct sc_ctx *ctx = vctx;
	int err = ctx->nhists ? snap_hists(ctx) : 0;

	return err ? err : ks_sc_mark(ctx);
}

/* The quiet half of the array modes emptied, and the histograms' last read made the one reported against. */
static int clear_rows(struct sc_ctx *ctx, unsigned int gen)
{
	int err = ks_array_drain_mode(bpf_map__fd(sc_skel(ctx)->maps.rows), gen * KS_SC_ROWS, KS_SC_ROWS, ctx->vbuf,
				      (size_t)ks_ncpus() * sizeof(struct ks_sc_cnt), NULL, NULL, KS_DRAIN_CLEAR);

	if (!err && ctx->by == KS_SC_BY_SYSCALL)
		err = collect_nerrs(ctx, NULL, gen, KS_DRAIN_CLEAR);
	if (!err && ctx->hnext_due) {
		memcpy(ctx->hprev, ctx->hnext, (size_t)ctx->nhists * (size_t)ks_ncpus() * KS_SC_HSLOTS * sizeof(uint32_t));
		ctx->hnext_due = false;
	}
	return err;
}

/* The rows of the retired half (maps of the mode), or in KS_DRAIN_CLEAR that half emptied. */
static int drain_rows(void *vctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct sc_ctx *ctx = vctx;
	int err;

	if (mode == KS_DRAIN_CLEAR)
		return hashed(ctx) ? collect_hash(ctx, NULL, gen, mode) : clear_rows(ctx, gen);
	if (hashed(ctx))
		return collect_hash(ctx, r, gen, mode);
	err = collect_rows(ctx, r, gen, mode);
	if (!err && ctx->by == KS_SC_BY_SYSCALL)
		err = collect_nerrs(ctx, r, gen, mode);
	return err;
}

/* The rows, counters and load of syscalls, for core (core/scaffold.h). */
static const struct ks_sc_map sc_maps[] = { { .drain = drain_rows } };
#define SC_LOST(name, field) { name, offsetof(struct ks_syscalls__bss, lost.field), KS_SC_LOSS }
static const struct ks_sc_counter sc_counters[] = {
	SC_LOST("start_collisions", start_collisions), SC_LOST("map_full", map_full),
	SC_LOST("errno_full", errno_full), SC_LOST("map_update_failed", update_failed),
	{ "recursion", 0, KS_SC_RECURSION },
};
/* N_TO_OTHER: the same index in both lists, for the --pin cursor (recursion's, unused, in the array modes) */
enum { N_TO_OTHER = 4 };
static const struct ks_sc_counter sc_hash_counters[SC_NHASH_COUNTERS] = {
	SC_LOST("start_collisions", start_collisions), SC_LOST("map_full", map_full),
	SC_LOST("errno_full", errno_full), SC_LOST("map_update_failed", update_failed),
	[N_TO_OTHER] = { "to_other", offsetof(struct ks_syscalls__bss, lost.to_other), KS_SC_COUNTER },
	{ "recursion", 0, KS_SC_RECURSION },
};
static const char *const sc_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
static void sc_release(void *vctx);
static const struct ks_sc_def sc_def = {
	.name = "syscalls", .hooks = sc_hooks, .skel = &ks_syscalls_ops, .gen_at = offsetof(struct ks_syscalls__bss, ks_gen),
	.maps = sc_maps, .nmaps = 1, .counters = sc_counters, .ncounters = sizeof(sc_counters) / sizeof(sc_counters[0]),
	.configure = configure, .attached = sc_attached, .release = sc_release,
};

/*
 * Phase two: the retired half is quiet now; move it into @r (or one of
 * the two, in @mode).  The histograms and to_other are not in halves:
 * they stay cumulative in the kernel and are reported against their last
 * read (hprev, the scaffold's seen[N_TO_OTHER]).  Under --pin that read
 * is saved in the same copy as the totals it went into (sc_cursor_get),
 * and put back on a restart: a kill before the save resumes from the
 * read before (the totals hold that one), a kill after it from this one,
 * so neither a difference is lost nor counted twice.  Only the emptying
 * of the halves needs the drain sequence (core/instance.h).
 */
static int sc_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct sc_ctx *ctx = vctx;
	struct ks_syscalls *s = sc_skel(ctx);
	int err;

	if (mode != KS_DRAIN_CLEAR) {
		r->sub_name = ctx->by == KS_SC_BY_ERRNO ? NULL : "errnos";
		if (ctx->count_only)
			r->hist_name = NULL;
	}
	err = ks_sc_drain(&ctx->sc, r, mode);
	if (err || mode == KS_DRAIN_CLEAR)
		return err;
	/* syscalls seen after the budget's histograms were all taken: exact counts, no histogram */
	if (!ctx->count_only && !hashed(ctx) && s->bss->hist_next > ctx->nhists)
		ks_report_counter(r, "rows_without_histogram", s->bss->hist_next - ctx->nhists);
	if (ctx->errors_only)
		ks_report_meta_str(r, "errors_only", "true");
	return 0;
}

/*
 * The --pin cursor: to_other (cumulative in .bss) as last reported, and
 * hnext's shape, then (index, value) of its non-zero slots, most being
 * zero.
 */
struct sc_cursor_hdr {
	uint64_t to_other;
	uint32_t nhists, ncpus, nslots, n;
};

static int sc_cursor_get(void *vctx, void **buf, size_t *len)
{
	struct sc_ctx *ctx = vctx;
	size_t total = (size_t)ctx->nhists * (size_t)ks_ncpus() * KS_SC_HSLOTS, nz = 0, at = 0;
	const uint32_t *src = ctx->hnext_due ? ctx->hnext : ctx->hprev;
	struct sc_cursor_hdr h = { ctx->sc.seen[N_TO_OTHER], ctx->nhists, (uint32_t)ks_ncpus(), KS_SC_HSLOTS, 0 };
	uint32_t *out;

	for (size_t i = 0; i < total; i++)
		nz += src[i] != 0;
	out = malloc(sizeof(h) + nz * 2 * sizeof(uint32_t));
	if (!out)
		return -ENOMEM;
	h.n = (uint32_t)nz;
	memcpy(out, &h, sizeof(h));
	for (size_t i = 0; i < total; i++)
		if (src[i]) {
			out[sizeof(h) / 4 + at++] = (uint32_t)i;
			out[sizeof(h) / 4 + at++] = src[i];
		}
	*buf = out;
	*len = sizeof(h) + nz * 2 * sizeof(uint32_t);
	return 0;
}

static int sc_cursor_set(void *vctx, const void *buf, size_t len)
{
	struct sc_ctx *ctx = vctx;
	size_t total = (size_t)ctx->nhists * (size_t)ks_ncpus() * KS_SC_HSLOTS;
	struct sc_cursor_hdr h;
	const uint32_t *p = (const uint32_t *)((const char *)buf + sizeof(h));

	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	/* the pinned programs were loaded with these options (ks_pin_prepare checked): the shape must be theirs */
	if (h.nhists != ctx->nhists || h.ncpus != (uint32_t)ks_ncpus() || h.nslots != KS_SC_HSLOTS ||
	    len != sizeof(h) + (size_t)h.n * 2 * sizeof(uint32_t))
		return -EBADMSG;
	if (total)
		memset(ctx->hprev, 0, total * sizeof(uint32_t));
	for (uint32_t i = 0; i < h.n; i++) {
		uint32_t idx, v;

		memcpy(&idx, p + 2 * i, sizeof(idx));
		memcpy(&v, p + 2 * i + 1, sizeof(v));
		if (idx >= total)
			return -EBADMSG;
		ctx->hprev[idx] = v;
	}
	ctx->hnext_due = false;
	ctx->sc.seen[N_TO_OTHER] = h.to_other;
	return 0;
}

static void sc_release(void *vctx)
{
	struct sc_ctx *ctx = vctx;

	free(ctx->vbuf);
	free(ctx->hcur);
	free(ctx->hprev);
	free(ctx->hnext);
	free(ctx->hread);
	free(ctx->rkeys);
	ctx->rkeys = NULL;
	free(ctx->order);
	ctx->order = NULL;
	ctx->caporder = 0;
	ctx->nrkeys = ctx->caprkeys = 0;
	ctx->vbuf = NULL;
	ctx->hcur = ctx->hprev = ctx->hnext = NULL;
	ctx->hread = NULL;
}

const struct ks_collector ks_syscalls_collector = {
	.spec = {
		.name = "syscalls",
		.summary = "Per-syscall counts, errors by errno and latency (sys_enter to sys_exit, per thread).",
		.common = KS_O_COLLECTOR,
		.by_words = sc_by_words,
		.opts = sc_opts,
	},
	.ctx_size = sizeof(struct sc_ctx),
	.parse_opt = sc_parse_opt,
	.open = sc_open,
	.hook = ks_sc_hook,
	.mark = sc_mark,
	.drain = sc_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct sc_ctx, sc.skel), .cursor_get = sc_cursor_get, .cursor_set = sc_cursor_set },
	.schema = &sc_schema,
	.close = ks_sc_close,
};
