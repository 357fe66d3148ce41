/* User side of `ksight mem`: which tracepoints exist, load with hook fallback, merge event and stall rows into a report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/collector.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/rowkey.h"
#include "core/tracefs.h"
#include "ksight/mem.h"
#include "mem.skel.h"

/* Rows per interval and map; more are counted as map_full. */
#define MEM_ROWS 8192

/* Each tracepoint and the program base (or classic program) on it. */
static const struct mem_event {
	const char *sys, *event, *prog;
	bool variants; /* "<prog>__<hook>" programs, else one classic one */
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
	{ "oom", "mark_victim", "mem_oom", false },
};

#define NEVENTS (sizeof(mem_events) / sizeof(mem_events[0]))

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

static const char *const val_names[V_N] = {
	"faults_user",	"faults_kernel",  "reclaims_direct", "reclaims_memcg", "reclaimed_pages",
	"compactions",	"kswapd_wakeups", "oom_kills",	     "migrated_pages", "numa_migrated_pages",
};

struct mem_ctx {
	enum ks_task_by by;
	const struct ks_filter *filter;
	struct ks_mem *skel;
	const char *hook;
	unsigned int gen;
	bool missing[NEVENTS];
	char missing_list[256];
	struct ks_mem_counts seen;
	unsigned long long missed_seen;
	void *vbuf, *zevents, *zstalls;
	/* the BPF key of each report row, by row index, during a collect */
	struct ks_row_key *keys;
	int nkeys;
};

static enum ks_task_by parse_by(const char *by)
{
	if (by && !strcmp(by, "comm"))
		return KS_TASK_COMM;
	if (by && !strcmp(by, "cgroup"))
		return KS_TASK_CGROUP;
	return KS_TASK_PID;
}

static int by_mode(enum ks_task_by by)
{
	return by == KS_TASK_COMM ? KS_MEM_BY_COMM : by == KS_TASK_CGROUP ? KS_MEM_BY_CGROUP : KS_MEM_BY_PID;
}

/* Notes which tracepoints this kernel lacks (CONFIG_COMPACTION=n, no x86 fault events, ...). */
static void find_missing(struct mem_ctx *ctx)
{
	size_t len = 0;

	for (size_t i = 0; i < NEVENTS; i++) {
		const struct mem_event *e = &mem_events[i];

		if (ks_tracepoint_exists(e->sys, e->event) != 0)
			continue; /* there, or no tracefs to tell: loading will */
		ctx->missing[i] = true;
		p_warn("mem: tracepoint %s:%s is not in this kernel; its events are not counted", e->sys, e->event);
		len += (size_t)snprintf(ctx->missing_list + len, sizeof(ctx->missing_list) - len, "%s%s:%s",
					len ? "," : "", e->sys, e->event);
		if (len >= sizeof(ctx->missing_list))
			len = sizeof(ctx->missing_list) - 1;
	}
}

static void precreate(struct mem_ctx *ctx, struct ks_mem *s)
{
	struct ks_row_key k;

	if (!ks_row_key_of_filter(ctx->filter, ctx->by, &k))
		return;
	/* a row made here is not made by the programs, which name its process */
	if (ctx->by == KS_TASK_PID)
		ks_pid_comm_seed(bpf_map__fd(s->maps.pid_comm), k.id);
	for (k.gen = 0; k.gen < 2; k.gen++) {
		ks_map_add(bpf_map__fd(s->maps.events), &k, ctx->zevents);
		ks_map_add(bpf_map__fd(s->maps.stalls), &k, ctx->zstalls);
	}
}

static int try_hook(void *vctx, const char *hook)
{
	struct mem_ctx *ctx = vctx;
	struct ks_mem *s;
	int err;

	s = ks_mem__open();
	if (!s)
		return -errno;
	s->rodata->ks_filter = *ctx->filter;
	s->rodata->by_mode = by_mode(ctx->by);
	bpf_map__set_max_entries(s->maps.events, MEM_ROWS);
	bpf_map__set_max_entries(s->maps.stalls, MEM_ROWS);
	bpf_map__set_max_entries(s->maps.pid_comm, ctx->by == KS_TASK_PID ? MEM_ROWS : 1);
	/* the rare events are classic tracepoints in every variant */
	ks_tracefs_dir(NULL);
	ks_prog_select(s->obj, hook);
	for (size_t i = 0; i < NEVENTS; i++) {
		if (!ctx->missing[i])
			continue;
		if (mem_events[i].variants)
			ks_prog_disable(s->obj, mem_events[i].prog);
		else
			bpf_program__set_autoload(bpf_object__find_program_by_name(s->obj, mem_events[i].prog), false);
	}
	err = ks_mem__load(s);
	if (!err) {
		precreate(ctx, s);
		err = ks_mem__attach(s);
	}
	if (err) {
		ks_mem__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	ctx->skel = s;
	return 0;
}

static int mem_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct mem_ctx *ctx = vctx;
	size_t n = (size_t)ks_ncpus();

	ctx->by = parse_by(c->by);
	ctx->filter = f;
	find_missing(ctx);
	ctx->vbuf = calloc(n, sizeof(struct ks_mem_stall));
	ctx->zevents = calloc(n, sizeof(struct ks_mem_count));
	ctx->zstalls = calloc(n, sizeof(struct ks_mem_stall));
	if (!ctx->vbuf || !ctx->zevents || !ctx->zstalls)
		return -ENOMEM;
	return ks_load_first(hooks, try_hook, ctx, &ctx->hook);
}

static const char *mem_hook(void *vctx)
{
	return ((struct mem_ctx *)vctx)->hook;
}

struct drain_arg {
	struct mem_ctx *ctx;
	struct ks_report *r;
	unsigned int gen;
	int fd;	  /* the map being drained */
	void *zero; /* its zeroed value, to keep a row for the next half */
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_row_key *)key)->gen == ((struct drain_arg *)varg)->gen;
}

/* The report row of @k, made (all values 0) when there is none yet. */
static struct ks_row *row_of(struct drain_arg *a, const struct ks_row_key *k)
{
	struct mem_ctx *ctx = a->ctx;
	struct ks_row_key *nk;
	struct ks_row *row;

	for (int i = 0; i < ctx->nkeys; i++)
		if (ks_row_key_eq(ctx->by, &ctx->keys[i], k))
			return &a->r->rows[i];
	nk = realloc(ctx->keys, (size_t)(ctx->nkeys + 1) * sizeof(*nk));
	if (!nk)
		return NULL;
	ctx->keys = nk;
	row = ks_report_add_row(a->r);
	if (!row)
		return NULL;
	ctx->keys[ctx->nkeys++] = *k;
	ks_row_task_key(row, ctx->by, k, bpf_map__fd(ctx->skel->maps.pid_comm));
	for (int v = 0; v < V_N; v++)
		ks_row_val(row, val_names[v], KS_VAL_COUNT, 0);
	return row;
}

/* Drained rows come back zeroed in the same half, written after the next flip. */
static void keep_row(struct drain_arg *a, const void *key, uint64_t n)
{
	if (n)
		ks_map_add(a->fd, key, a->zero);
}

static int take_events(const void *key, const void *value, void *varg)
{
	struct drain_arg *a = varg;
	const struct ks_mem_count *v = value;
	struct ks_mem_count sum = { 0 };
	struct ks_row *row;

	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		sum.faults_user += v[cpu].faults_user;
		sum.faults_kernel += v[cpu].faults_kernel;
		sum.kswapd_wakeups += v[cpu].kswapd_wakeups;
		sum.oom_kills += v[cpu].oom_kills;
		sum.migrated_pages += v[cpu].migrated_pages;
		sum.numa_migrated_pages += v[cpu].numa_migrated_pages;
	}
	keep_row(a, key, sum.faults_user + sum.faults_kernel + sum.kswapd_wakeups + sum.migrated_pages);
	if (!sum.faults_user && !sum.faults_kernel && !sum.kswapd_wakeups && !sum.oom_kills && !sum.migrated_pages)
		return 0;
	row = row_of(a, key);
	if (!row)
		return -ENOMEM;
	row->vals[V_FAULTS_USER].v = sum.faults_user;
	row->vals[V_FAULTS_KERNEL].v = sum.faults_kernel;
	row->vals[V_KSWAPD].v = sum.kswapd_wakeups;
	row->vals[V_OOM].v = sum.oom_kills;
	row->vals[V_MIGRATED].v = sum.migrated_pages;
	row->vals[V_NUMA].v = sum.numa_migrated_pages;
	return 0;
}

static int take_stalls(const void *key, const void *value, void *varg)
{
	struct drain_arg *a = varg;
	const struct ks_mem_stall *v = value;
	struct ks_hist *rh = calloc(1, sizeof(*rh)), *ch = calloc(1, sizeof(*ch));
	uint64_t direct = 0, memcg = 0, reclaimed = 0;
	struct ks_row *row;
	int err;

	if (!rh || !ch) {
		free(rh);
		free(ch);
		return -ENOMEM;
	}
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		const struct ks_mem_stall *c = &v[cpu];

		ks_hist_add_slots_n(rh, c->reclaim, KS_MEM_SLOTS);
		ks_hist_add_slots_n(ch, c->compact, KS_MEM_SLOTS);
		rh->sum += c->reclaim_sum;
		ch->sum += c->compact_sum;
		if (c->reclaim_max > rh->max)
			rh->max = c->reclaim_max;
		if (c->compact_max > ch->max)
			ch->max = c->compact_max;
		direct += c->reclaims[0];
		memcg += c->reclaims[1];
		reclaimed += c->reclaimed_pages;
	}
	keep_row(a, key, rh->count + ch->count);
	row = rh->count || ch->count ? row_of(a, key) : NULL;
	if (!row) {
		err = rh->count || ch->count ? -ENOMEM : 0;
		free(rh);
		free(ch);
		return err;
	}
	row->vals[V_RECLAIMS_DIRECT].v = direct;
	row->vals[V_RECLAIMS_MEMCG].v = memcg;
	row->vals[V_RECLAIMED].v = reclaimed;
	row->vals[V_COMPACTIONS].v = ch->count;
	/* rows without stalls carry no histograms: "-" in text, absent in JSON */
	if (rh->count)
		row->hist = rh;
	else
		free(rh);
	if (ch->count)
		ks_row_xhist(row, "compaction_ns", KS_UNIT_NS, ch);
	else
		free(ch);
	return 0;
}

static int mem_collect(void *vctx, struct ks_report *r)
{
	struct mem_ctx *ctx = vctx;
	unsigned int old = ks_gen_flip(&ctx->gen, &ctx->skel->bss->ks_gen);
	struct drain_arg a = { ctx, r, old, bpf_map__fd(ctx->skel->maps.events), ctx->zevents };
	struct ks_mem_counts now;
	int err;

	r->hist_name = "reclaim_ns";
	ctx->nkeys = 0;
	err = ks_hash_drain(a.fd, sizeof(struct ks_row_key), key_in_gen, take_events, &a, ctx->vbuf);
	if (!err) {
		a.fd = bpf_map__fd(ctx->skel->maps.stalls);
		a.zero = ctx->zstalls;
		err = ks_hash_drain(a.fd, sizeof(struct ks_row_key), key_in_gen, take_stalls, &a, ctx->vbuf);
	}
	if (err)
		return err;
	/* stalls first, by their total time; then by faults */
	for (int i = 0; i < r->nrows; i++) {
		struct ks_row *row = &r->rows[i];
		uint64_t stall = (row->hist ? row->hist->sum : 0) + (row->nxhist ? row->xhist[0].h->sum : 0);

		row->sort = stall ? (1ull << 62) + (stall >> 2) : row->vals[V_FAULTS_USER].v + row->vals[V_FAULTS_KERNEL].v;
	}
	now = ctx->skel->bss->counts;
	ks_report_lost(r, "map_full", now.map_full - ctx->seen.map_full);
	ks_report_lost(r, "starts_full", now.starts_full - ctx->seen.starts_full);
	ks_report_lost(r, "recursion", ks_obj_missed_since(ctx->skel->obj, &ctx->missed_seen));
	ks_report_counter(r, "oom_kills", now.oom_kills - ctx->seen.oom_kills);
	ctx->seen = now;
	/* a top-level list, not a filter: which tracepoints this kernel lacks */
	for (size_t i = 0; i < NEVENTS; i++) {
		char b[96];

		if (ctx->missing[i] && snprintf(b, sizeof(b), "%s:%s", mem_events[i].sys, mem_events[i].event) > 0)
			ks_report_list_add(r, "unavailable", b);
	}
	return 0;
}

static void mem_close(void *vctx)
{
	struct mem_ctx *ctx = vctx;

	ks_mem__destroy(ctx->skel);
	ctx->skel = NULL;
	free(ctx->vbuf);
	free(ctx->zevents);
	free(ctx->zstalls);
	free(ctx->keys);
	ctx->vbuf = ctx->zevents = ctx->zstalls = NULL;
	ctx->keys = NULL;
}

const struct ks_collector ks_mem_collector = {
	.spec = {
		.name = "mem",
		.summary = "Page faults, reclaim and compaction stalls, kswapd wakeups, OOM kills and page migrations per task.",
		.common = KS_O_COLLECTOR,
		.by_keys = "pid|comm|cgroup",
	},
	.ctx_size = sizeof(struct mem_ctx),
	.open = mem_open,
	.hook = mem_hook,
	.collect = mem_collect,
	.close = mem_close,
};
