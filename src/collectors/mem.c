/* User side of `ksight mem`: which tracepoints exist, load with hook fallback, merge fault and rare-event rows into a report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/pin.h"
#include "core/rowkey.h"
#include "core/scaffold.h"
#include "core/tracefs.h"
#include "ksight/mem.h"
#include "mem.skel.h"

/*
 * Shares of the memory budget (--max-memory, at the possible-CPU count) and
 * row bounds.  Every map is preallocated (see bpf/mem.bpf.c), so what the
 * shares give is allocated at load: about 13 MiB with the default 64 MiB
 * budget at 128 CPUs (4096 fault rows of 2.1 KiB, 1024 rare rows of
 * 4.3 KiB), under the 16 MiB a default mode may allocate.  Both halves of
 * the double buffer share the rows.
 */
#define FAULT_SHARE 0.15
#define FAULT_ROWS_MIN 512 /* fewer is no use on a host with many processes: refused instead */
#define FAULT_ROWS_MAX 16384
#define RARE_SHARE 0.08
#define RARE_ROWS_MIN 64
#define RARE_ROWS_MAX 4096
#define STARTS_SHARE 0.01
#define STARTS_MAX 4096

/* Each tracepoint and the program base (or raw_tp program) on it. */
static const struct mem_event {
	const char *sys, *event, *prog;
	bool variants; /* "<prog>__<hook>" programs, else raw_tp program(s) picked by the kernel's layout */
} mem_events[] = {
	{ "exceptions", "page_fault_user", "mem_fault_user", true },
	{ "exceptions", "page_fault_kernel", "mem_fault_kernel", true },
	{ "vmscan", "mm_vmscan_wakeup_kswapd", "mem_kswapd", true },
	{ "vmscan", "mm_vmscan_direct_reclaim_begin", "mem_direct_begin", true },
	{ "vmscan", "mm_vmscan_direct_reclaim_end", "mem_direct_end", true },
	{ "vmscan", "mm_vmscan_memcg_reclaim_begin", "mem_memcg_begin", true },
	{ "vmscan", "mm_vmscan_memcg_reclaim_end", "mem_memcg_end", true },
	{ "compaction", "mm_compaction_begin", "mem_compact_begin", true },
	{ "compaction", "mm_compaction_end", "mem_compact_end", true },
	{ "migrate", "mm_migrate_pages", "mem_migrate", false },
	{ "oom", "mark_victim", NULL, false }, /* mem_oom_task, or mem_oom_pid + mem_oom_signal */
};

#define NEVENTS (sizeof(mem_events) / sizeof(mem_events[0]))
#define EV_MIGRATE 9
#define EV_OOM 10

/* Value columns, in the order rows carry them. */
enum {
	V_FAULTS_USER,
	V_FAULTS_KERNEL,
	V_RECLAIMS_DIRECT,
	V_RECLAIMS_MEMCG,
	V_RECLAIMED,
	V_COMPACTIONS,
	V_KSWAPD,
	V_OOM,
	V_MIGRATED,
	V_NUMA,
	V_N,
};

/* ... declared once: rows, docs/json.md and help render from these. */
static const struct ks_column mem_cols[V_N + 1] = {
	[V_FAULTS_USER] = { "faults_user", KS_COL_COUNTER, KS_UNIT_COUNT, "page faults in user mode" },
	[V_FAULTS_KERNEL] = { "faults_kernel", KS_COL_COUNTER, KS_UNIT_COUNT, "page faults in kernel mode" },
	[V_RECLAIMS_DIRECT] = { "reclaims_direct", KS_COL_COUNTER, KS_UNIT_COUNT, "timed direct reclaim stalls" },
	[V_RECLAIMS_MEMCG] = { "reclaims_memcg", KS_COL_COUNTER, KS_UNIT_COUNT,
			       "timed reclaim stalls at a cgroup's limit" },
	[V_RECLAIMED] = { "reclaimed_pages", KS_COL_COUNTER, KS_UNIT_COUNT, "pages those stalls reclaimed" },
	[V_COMPACTIONS] = { "compactions", KS_COL_COUNTER, KS_UNIT_COUNT, "timed compaction stalls" },
	[V_KSWAPD] = { "kswapd_wakeups", KS_COL_COUNTER, KS_UNIT_COUNT, "kswapd wakeups the row's allocations caused" },
	[V_OOM] = { "oom_kills", KS_COL_COUNTER, KS_UNIT_COUNT,
		    "times the OOM killer chose a task of this row as its victim" },
	[V_MIGRATED] = { "migrated_pages", KS_COL_COUNTER, KS_UNIT_COUNT, "pages migrated" },
	[V_NUMA] = { "numa_migrated_pages", KS_COL_COUNTER, KS_UNIT_COUNT, "of those, moved by NUMA balancing" },
	[V_N] = { NULL, 0, 0, NULL },
};
static const struct ks_schema mem_schema = { mem_cols, "reclaim_ns", KS_UNIT_NS,
					     "reclaim stalls (absent without stalls)", (const char *const[]){ KS_TASK_KEYS, NULL }, .hist_cols = NULL };

struct mem_ctx {
	struct ks_scaffold sc; /* first: the lifecycle core runs */
	enum ks_task_by by;
	const struct ks_filter *filter;
	/* per tracepoint: 0 when usable, else the negative errno of the lookup */
	int missing[NEVENTS];
	char missing_list[256];
	int migrate_nargs;
	bool oom_task; /* mark_victim passes the task (else a pid) */
	bool rename;   /* task:task_rename exists: pid rows follow renames and execs */
	uint32_t fault_rows, rare_rows, starts_rows;
	/* the BPF key of each report row, by row index, during a collect; "other" is -1 there */
	struct ks_row_key *keys;
	int nkeys, other_row;
};

static const struct ks_by_word mem_by_words[] = {
	{ "pid", KS_TASK_PID },
	{ "comm", KS_TASK_COMM },
	{ "cgroup", KS_TASK_CGROUP },
	{ NULL, KS_TASK_PID },
};

static int by_mode(enum ks_task_by by)
{
	return by == KS_TASK_COMM ? KS_MEM_BY_COMM : by == KS_TASK_CGROUP ? KS_MEM_BY_CGROUP : KS_MEM_BY_PID;
}

static const char *why_missing(int err)
{
	if (err == -ENOENT)
		return "not in this kernel";
	/* libbpf's answer when it finds no BTF of the running kernel */
	if (err == -ESRCH)
		return "no kernel BTF to look it up (CONFIG_DEBUG_INFO_BTF)";
	return strerror(-err);
}

/*
 * Notes which tracepoints this kernel lacks (CONFIG_COMPACTION=n, no x86
 * fault events, ...), from its BTF: every tracepoint has a btf_trace_<name>
 * type there, readable without privilege and without tracefs.  Any other
 * error than "no such type" is kept as the reason.  0, or the first
 * reason's negative errno when none at all can be used.
 */
static int find_missing(void *vctx)
{
	struct mem_ctx *ctx = vctx;
	size_t len = 0, nmissing = 0;
	int first = 0;

	for (size_t i = 0; i < NEVENTS; i++) {
		const struct mem_event *e = &mem_events[i];
		int n = ks_tp_nargs(e->event);

		if (n >= 0) {
			if (i == EV_MIGRATE)
				ctx->migrate_nargs = n;
			if (i == EV_OOM)
				ctx->oom_task = ks_tp_arg_is_ptr(e->event, 0) == 1;
			continue;
		}
		ctx->missing[i] = n;
		nmissing++;
		if (!first)
			first = n;
		p_warn("mem: tracepoint %s:%s: %s; its events are not counted", e->sys, e->event, why_missing(n));
		len += (size_t)snprintf(ctx->missing_list + len, sizeof(ctx->missing_list) - len, "%s%s:%s (%s)",
					len ? ", " : "", e->sys, e->event, why_missing(n));
		if (len >= sizeof(ctx->missing_list))
			len = sizeof(ctx->missing_list) - 1;
	}
	ctx->rename = ks_tp_nargs("task_rename") >= 0;
	if (ctx->migrate_nargs && (ctx->migrate_nargs < 7 || ctx->migrate_nargs > 9)) {
		p_warn("mem: migrate:mm_migrate_pages has %d arguments here, a layout mem does not know; not counted",
		       ctx->migrate_nargs);
		ctx->missing[EV_MIGRATE] = -EPROTO;
		nmissing++;
	}
	if (nmissing == NEVENTS) {
		p_err("mem: none of its %zu tracepoints can be used: %s", NEVENTS, why_missing(first));
		return first;
	}
	return 0;
}

/* After load, before attach: the row a filter pins down, made ahead in both halves. */
static int precreate(void *vctx, void *skel)
{
	struct mem_ctx *ctx = vctx;
	struct ks_mem *s = skel;
	struct ks_row_key k;

	if (!ks_row_key_of_filter(ctx->filter, ctx->by, &k))
		return 0;
	/* a row made here is not made by the programs, which name its process */
	if (ctx->by == KS_TASK_PID)
		ks_pid_comm_seed(bpf_map__fd(s->maps.pid_comm), k.id);
	for (k.gen = 0; k.gen < 2; k.gen++)
		ks_map_add(bpf_map__fd(s->maps.faults), &k, ctx->sc.zero);
	return 0;
}

static void set_autoload(struct bpf_object *obj, const char *prog, bool on)
{
	bpf_program__set_autoload(bpf_object__find_program_by_name(obj, prog), on);
}

/* Row counts from the budget's shares: the same at every hook. */
static void size_rows(struct mem_ctx *ctx)
{
	struct ks_budget *b = &ctx->sc.budget;

	ctx->fault_rows = ks_budget_rows(b, FAULT_SHARE,
					 ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_HASH, sizeof(struct ks_row_key),
							     sizeof(struct ks_mem_fault), 0),
					 FAULT_ROWS_MIN, FAULT_ROWS_MAX, true);
	ctx->rare_rows = ks_budget_rows(b, RARE_SHARE,
					ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_row_key),
							    sizeof(struct ks_mem_rare), 0),
					RARE_ROWS_MIN, RARE_ROWS_MAX, true);
	ctx->starts_rows = ks_budget_rows(b, STARTS_SHARE,
					  ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, sizeof(struct ks_mem_skey),
							      sizeof(__u64), 0),
					  64, STARTS_MAX, true);
}

/* The rodata, map sizes and programs of one load (ks_load_spec). */
static int configure(void *vctx, void *skel, const char *hook)
{
	struct mem_ctx *ctx = vctx;
	struct ks_mem *s = skel;

	(void)hook;
	/* here, not once at open: a shared budget configures at several limits */
	size_rows(ctx);
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = by_mode(ctx->by);
	s->rodata->migrate_nargs = (__u32)ctx->migrate_nargs;
	bpf_map__set_max_entries(s->maps.faults, ctx->fault_rows);
	bpf_map__set_max_entries(s->maps.rare, ctx->rare_rows);
	bpf_map__set_max_entries(s->maps.starts, ctx->starts_rows);
	bpf_map__set_max_entries(s->maps.pid_comm, ctx->by == KS_TASK_PID ? ctx->fault_rows : 1);
	for (size_t i = 0; i < NEVENTS; i++)
		if (mem_events[i].variants && ctx->missing[i])
			ks_prog_disable(s->obj, mem_events[i].prog);
	set_autoload(s->obj, "mem_migrate", !ctx->missing[EV_MIGRATE]);
	set_autoload(s->obj, "mem_oom_task", !ctx->missing[EV_OOM] && ctx->oom_task);
	set_autoload(s->obj, "mem_oom_pid", !ctx->missing[EV_OOM] && !ctx->oom_task);
	set_autoload(s->obj, "mem_oom_signal", !ctx->missing[EV_OOM] && !ctx->oom_task);
	bpf_map__set_autocreate(s->maps.victims, !ctx->missing[EV_OOM] && !ctx->oom_task);
	set_autoload(s->obj, "mem_rename", ctx->rename && ctx->by == KS_TASK_PID);
	/*
	 * names kept current across exec: only pid rows have names to keep, and
	 * mem_rename, where it loads, renames them at exec already (an exec
	 * fires task_rename: begin_new_exec sets the comm)
	 */
	if (ctx->by != KS_TASK_PID || ctx->rename)
		ks_prog_disable(s->obj, "pid_comm_exec");
	return 0;
}

KS_SKEL_OPS(ks_mem);

static const struct ks_sc_def mem_def;

static int mem_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct mem_ctx *ctx = vctx;
	int by = ks_by_parse(mem_by_words, c->by);

	if (by < 0)
		return by;
	ctx->by = (enum ks_task_by)by;
	ctx->filter = f;
	return ks_sc_open(&ctx->sc, &mem_def, c);
}

static struct ks_row *new_row(struct ks_report *r)
{
	struct ks_row *row = ks_report_add_row(r);

	for (int v = 0; row && v < V_N; v++)
		ks_row_col(row, &mem_cols[v], 0);
	return row;
}

/* The report row of @k (NULL: the "other" row), made (all values 0) when there is none yet. */
static struct ks_row *row_of(const struct ks_sc_drain *a, const struct ks_row_key *k)
{
	struct mem_ctx *ctx = a->ctx;
	struct ks_row_key *nk;
	struct ks_row *row;

	if (!k) {
		if (ctx->other_row >= 0)
			return &a->r->rows[ctx->other_row];
		row = new_row(a->r);
		if (!row)
			return NULL;
		ctx->other_row = a->r->nrows - 1;
		/* the same key columns as the others: consumers need not special-case it */
		if (ctx->by == KS_TASK_PID) {
			ks_row_key_num(row, "pid", -1);
			ks_row_key_str(row, "comm", "other");
		} else if (ctx->by == KS_TASK_COMM) {
			ks_row_key_str(row, "comm", "other");
		} else {
			ks_row_key_str(row, "cgroup", "other");
			ks_row_key_num(row, "cgroup_id", 0);
		}
		return row;
	}
	for (int i = 0; i < ctx->nkeys; i++)
		if (ks_row_key_eq(ctx->by, &ctx->keys[i], k))
			return &a->r->rows[i];
	nk = realloc(ctx->keys, (size_t)(a->r->nrows + 1) * sizeof(*nk));
	if (!nk)
		return NULL;
	ctx->keys = nk;
	/* report rows and keys share indexes; "other" holds a key that matches nothing */
	for (int i = ctx->nkeys; i < a->r->nrows; i++)
		memset(&ctx->keys[i], 0xff, sizeof(*nk));
	row = new_row(a->r);
	if (!row)
		return NULL;
	ctx->nkeys = a->r->nrows;
	ctx->keys[ctx->nkeys - 1] = *k;
	ks_row_task_key(row, ctx->by, k, bpf_map__fd(((struct ks_mem *)ctx->sc.skel)->maps.pid_comm));
	return row;
}

/* Whether a (per-CPU) fault row counted anything in its half. */
static bool faults_any(const struct ks_mem_fault *v)
{
	for (int cpu = 0; cpu < ks_ncpus(); cpu++)
		if (v[cpu].user || v[cpu].kernel)
			return true;
	return false;
}

/* Whether a rare-events row counted anything in its half. */
static bool rare_any(const struct ks_mem_rare *v)
{
	uint64_t any = v->kswapd_wakeups + v->oom_kills + v->migrated_pages + v->reclaims[0] + v->reclaims[1];

	for (unsigned int i = 0; i < KS_MEM_SLOTS && !any; i++)
		any = v->compact[i];
	return any != 0;
}

/* Rows that counted are zeroed in place, for the half written after the next flip; idle rows go. */
static bool keep_faults(const void *key, const void *value, void *varg)
{
	(void)key;
	(void)varg;
	return faults_any(value);
}

static bool keep_rare(const void *key, const void *value, void *varg)
{
	(void)key;
	(void)varg;
	return rare_any(value);
}

/* Adds the per-CPU fault counts @v to the row of @key (NULL: "other"). */
static int add_faults(const struct ks_sc_drain *a, const struct ks_row_key *key, const struct ks_mem_fault *v)
{
	struct ks_mem_fault sum = { 0 };
	struct ks_row *row;

	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		sum.user += v[cpu].user;
		sum.kernel += v[cpu].kernel;
	}
	if (!sum.user && !sum.kernel)
		return 0;
	row = row_of(a, key);
	if (!row)
		return -ENOMEM;
	row->vals[V_FAULTS_USER].v += sum.user;
	row->vals[V_FAULTS_KERNEL].v += sum.kernel;
	return 0;
}

static int take_faults(const void *key, const void *value, void *varg)
{
	return add_faults(varg, key, value);
}

/* Adds one rare-events value to the row of @key (NULL: "other"). */
static int add_rare(const struct ks_sc_drain *a, const struct ks_row_key *key, const struct ks_mem_rare *v)
{
	struct ks_hist *rh, *ch;
	struct ks_row *row;

	if (!rare_any(v))
		return 0;
	row = row_of(a, key);
	if (!row)
		return -ENOMEM;
	row->vals[V_KSWAPD].v += v->kswapd_wakeups;
	row->vals[V_OOM].v += v->oom_kills;
	row->vals[V_MIGRATED].v += v->migrated_pages;
	row->vals[V_NUMA].v += v->numa_migrated_pages;
	row->vals[V_RECLAIMS_DIRECT].v += v->reclaims[0];
	row->vals[V_RECLAIMS_MEMCG].v += v->reclaims[1];
	row->vals[V_RECLAIMED].v += v->reclaimed_pages;
	/* rows without stalls carry no histograms: "-" in text, absent in JSON */
	if (v->reclaims[0] + v->reclaims[1]) {
		rh = calloc(1, sizeof(*rh));
		if (!rh)
			return -ENOMEM;
		ks_hist_add_u32(rh, v->reclaim, KS_MEM_SLOTS);
		rh->sum = v->reclaim_sum;
		rh->max = v->reclaim_max;
		row->hist = rh;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ks_hist_add_u32(ch, v->compact, KS_MEM_SLOTS);
	ch->sum = v->compact_sum;
	ch->max = v->compact_max;
	row->vals[V_COMPACTIONS].v += ch->count;
	if (ch->count)
		ks_row_xhist(row, "compaction_ns", KS_UNIT_NS, ch);
	else
		free(ch);
	return 0;
}

static int take_rare(const void *key, const void *value, void *varg)
{
	return add_rare(varg, key, value);
}

static int take_other_faults(uint32_t idx, const void *value, void *varg)
{
	const struct ks_mem_fault *v = value;
	int any = 0;

	(void)idx;
	for (int cpu = 0; cpu < ks_ncpus() && !any; cpu++)
		any = v[cpu].user || v[cpu].kernel;
	return any ? (add_faults(varg, NULL, v) ?: 1) : 0;
}

static int take_other_rare(uint32_t idx, const void *value, void *varg)
{
	static const struct ks_mem_rare zero;
	int err;

	(void)idx;
	if (!memcmp(value, &zero, sizeof(zero)))
		return 0;
	err = add_rare(varg, NULL, value);
	return err ? err : 1;
}

/* The row maps (each with its "other" element per half), counters and load of mem, for core (core/scaffold.h). */
static const struct ks_sc_map mem_maps[] = {
	{ "faults", sizeof(struct ks_row_key), sizeof(struct ks_mem_fault), .percpu = true, .take = take_faults, .keep = keep_faults },
	{ "rare", sizeof(struct ks_row_key), sizeof(struct ks_mem_rare), .take = take_rare, .keep = keep_rare },
	{ "other_faults", 0, sizeof(struct ks_mem_fault), .percpu = true, .take_elem = take_other_faults },
	{ "other_rare", 0, sizeof(struct ks_mem_rare), .take_elem = take_other_rare },
};
enum { N_OOM = 4, N_TO_OTHER, N_ROW_ERRORS, N_COUNTERS };
static const struct ks_sc_counter mem_counters[N_COUNTERS] = {
	{ "map_full", offsetof(struct ks_mem__bss, counts.map_full), KS_SC_LOSS },
	{ "starts_full", offsetof(struct ks_mem__bss, counts.starts_full), KS_SC_LOSS },
	{ "map_update_failed", offsetof(struct ks_mem__bss, counts.update_failed), KS_SC_LOSS },
	{ "recursion", 0, KS_SC_RECURSION },
	[N_OOM] = { "oom_kills", offsetof(struct ks_mem__bss, counts.oom_kills), KS_SC_COUNTER },
	[N_TO_OTHER] = { "to_other", offsetof(struct ks_mem__bss, counts.to_other), KS_SC_COUNTER },
	[N_ROW_ERRORS] = { "row_errors", offsetof(struct ks_mem__bss, counts.row_errors), KS_SC_COUNTER },
};
static const char *const mem_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
static void mem_release(void *vctx);
static const struct ks_sc_def mem_def = {
	.name = "mem", .hooks = mem_hooks, .skel = &ks_mem_ops, .gen_at = offsetof(struct ks_mem__bss, ks_gen),
	.maps = mem_maps, .nmaps = 4, .counters = mem_counters, .ncounters = N_COUNTERS,
	.probed = find_missing, .configure = configure, .loaded = precreate, .release = mem_release,
};

/* The retired half into @r (or one of the two, in @mode): core drains, mem merges and orders its rows. */
static int mem_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct mem_ctx *ctx = vctx;
	int err;

	ctx->nkeys = 0;
	ctx->other_row = -1;
	err = ks_sc_drain(&ctx->sc, r, mode);
	if (err || mode == KS_DRAIN_CLEAR)
		return err;
	/* stalls first, by their total time; then by faults */
	for (int i = 0; i < r->nrows; i++) {
		struct ks_row *row = &r->rows[i];
		uint64_t stall = (row->hist ? row->hist->sum : 0) + (row->nxhist ? row->xhist[0].h->sum : 0);

		row->sort = stall ? (1ull << 62) + (stall >> 2) : row->vals[V_FAULTS_USER].v + row->vals[V_FAULTS_KERNEL].v;
	}
	if (ctx->sc.delta[N_ROW_ERRORS])
		p_info("mem: the kernel refused %llu rows (last: %s); their events found a row after, or went to \"other\"",
		       (unsigned long long)ctx->sc.delta[N_ROW_ERRORS],
		       strerror((int)((struct ks_mem *)ctx->sc.skel)->bss->counts.row_errno));
	/* a top-level list, not a filter: which tracepoints this kernel lacks, and why */
	for (size_t i = 0; i < NEVENTS; i++) {
		char b[128];

		if (ctx->missing[i] &&
		    snprintf(b, sizeof(b), "%s:%s (%s)", mem_events[i].sys, mem_events[i].event, why_missing(ctx->missing[i])) > 0)
			ks_report_list_add(r, "unavailable", b);
	}
	return 0;
}

/* --pin: the counters cumulative in .bss (not the losses: serve rebases those); from the read the saved totals hold */
static const size_t mem_cursor[] = { offsetof(struct mem_ctx, sc.seen[N_OOM]), offsetof(struct mem_ctx, sc.seen[N_TO_OTHER]),
				     offsetof(struct mem_ctx, sc.seen[N_ROW_ERRORS]) };

static void mem_release(void *vctx)
{
	struct mem_ctx *ctx = vctx;

	free(ctx->keys);
	ctx->keys = NULL;
}

const struct ks_collector ks_mem_collector = {
	.spec = {
		.name = "mem",
		.summary = "Page faults, reclaim and compaction stalls, kswapd wakeups, OOM kills and page migrations per task.",
		.common = KS_O_COLLECTOR,
		.by_words = mem_by_words,
	},
	.ctx_size = sizeof(struct mem_ctx),
	.open = mem_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = mem_drain_mode,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct mem_ctx, sc.skel), .cursor_u64 = { mem_cursor, 3 } },
	.schema = &mem_schema,
	.close = ks_sc_close,
};
