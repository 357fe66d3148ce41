/* The scheduler collectors' shared user side: how rows are laid out in the maps, drained, and named. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "core/bpfutil.h"
#include "core/cgroup.h"
#include "core/loader.h"
#include "core/log.h"

/*
 * The memory budget (src/core/budget.h), per collector instance, counted
 * at the possible-CPU count:
 * - slots: 16 bytes a thread id, a power of two >= pid_max (no two live
 *   threads share one), but at most an eighth of the budget (8 MiB, 2^19
 *   tids, of 64): past that tids alias, and a wait that finds another
 *   thread's open one in its slot is counted in slot_collisions.
 * - per-CPU rows where every switch of the machine lands on few keys (by
 *   nothing, cpu, policy, prio): ~4.7 KiB a CPU each.
 * - shared rows with atomics where keys are many (pid, tid, comm, cgroup):
 *   one copy a row, so thousands fit.  The hashes take what is left, up
 *   to SCHED_SHARED_ROWS keys a half.
 */
#define SCHED_SLOT_SHARE 0.125
#define SCHED_SLOT_MAX (1u << 22)
#define SCHED_SHARED_ROWS 4096
/* .bss, .rodata and the rest of what the object creates besides its row maps and slots */
#define SCHED_FIXED_BYTES (64u << 10)
/* PIDS_PER_CPU_DEFAULT: the kernel raises pid_max to this many per possible CPU */
#define SCHED_PIDS_PER_CPU 1024

/* runqlat's words, in its help's order; offcpu takes all but cpu */
const struct ks_by_word ks_sched_by_words[] = {
	{ "cpu", KS_SCHED_BY_CPU },   { "pid", KS_SCHED_BY_PID },	{ "tid", KS_SCHED_BY_TID },
	{ "comm", KS_SCHED_BY_COMM }, { "prio", KS_SCHED_BY_PRIO },	{ "policy", KS_SCHED_BY_POLICY },
	{ "cgroup", KS_SCHED_BY_CGROUP }, { NULL, KS_SCHED_BY_NONE },
};

enum ks_sched_by ks_sched_by_parse(const char *by)
{
	int v = ks_by_parse(ks_sched_by_words, by);

	return v < 0 ? KS_SCHED_BY_NONE : (enum ks_sched_by)v;
}

static bool by_array(enum ks_sched_by by)
{
	return by == KS_SCHED_BY_NONE || by == KS_SCHED_BY_CPU || by == KS_SCHED_BY_POLICY;
}

static bool by_shared(enum ks_sched_by by)
{
	return by >= KS_SCHED_BY_PID;
}

/* Must agree with ks_array_keys() in bpf/sched.bpf.h. */
static uint32_t array_keys(enum ks_sched_by by)
{
	return by == KS_SCHED_BY_POLICY ? KS_SCHED_POLICIES : 1;
}

void ks_sched_sizes(const struct ks_budget *b, enum ks_sched_by by, uint32_t nsub, size_t value_size,
		    uint64_t pid_max, struct ks_sched_sizes *sz)
{
	uint32_t ksz = sizeof(struct ks_sched_key), vsz = (uint32_t)value_size;
	uint64_t fixed, room;
	uint32_t cap;

	/* a node with more CPUs than this one runs with a larger pid_max */
	if (pid_max < (uint64_t)SCHED_PIDS_PER_CPU * (uint64_t)b->ncpus)
		pid_max = (uint64_t)SCHED_PIDS_PER_CPU * (uint64_t)b->ncpus;
	sz->slots = ks_pow2_at_least(pid_max, SCHED_SLOT_MAX);
	cap = ks_budget_rows(b, SCHED_SLOT_SHARE,
			     ks_budget_row_bytes(b, BPF_MAP_TYPE_ARRAY, 4, sizeof(struct ks_sched_slot), 0), 1024,
			     SCHED_SLOT_MAX, true);
	if (sz->slots > cap)
		sz->slots = cap;
	sz->rows = by_array(by) ? 2 * array_keys(by) * nsub : by == KS_SCHED_BY_PRIO ? 2 * nsub : 1;
	sz->sother = by_shared(by) ? 2 * nsub : 1;
	sz->hrows = sz->srows = 1;
	fixed = SCHED_FIXED_BYTES +
		ks_map_bytes(BPF_MAP_TYPE_ARRAY, 4, sizeof(struct ks_sched_slot), sz->slots, 0, b->ncpus) +
		ks_map_bytes(BPF_MAP_TYPE_PERCPU_ARRAY, 4, vsz, sz->rows, 0, b->ncpus) +
		ks_map_bytes(BPF_MAP_TYPE_ARRAY, 4, vsz, sz->sother, 0, b->ncpus) +
		ks_map_bytes(BPF_MAP_TYPE_PERCPU_HASH, ksz, vsz, 1, 0, b->ncpus) +
		ks_map_bytes(BPF_MAP_TYPE_HASH, ksz, vsz, 1, 0, b->ncpus);
	/*
	 * What a row's own cost leaves out: a plain preallocated hash keeps a
	 * spare element per CPU, and every hash a bucket array (16 B a row,
	 * up to twice that once rounded to a power of two).
	 */
	if (by_shared(by))
		fixed += (uint64_t)b->ncpus * ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, ksz, vsz, 0);
	fixed += b->limit / 128;
	room = b->limit > fixed ? b->limit - fixed : 0;
	/* the rows a hash mode may need at most in both halves; at least one key's a half */
	if (by == KS_SCHED_BY_PRIO)
		sz->hrows = ks_budget_rows(b, (double)room / (double)b->limit,
					   ks_budget_row_bytes(b, BPF_MAP_TYPE_PERCPU_HASH, ksz, vsz, 0), 2 * nsub,
					   2 * KS_SCHED_PRIOS * nsub, false);
	else if (by_shared(by))
		sz->srows = ks_budget_rows(b, (double)room / (double)b->limit,
					   ks_budget_row_bytes(b, BPF_MAP_TYPE_HASH, ksz, vsz, 0), 2 * nsub,
					   2 * SCHED_SHARED_ROWS * nsub, false);
}

struct array_arg {
	const struct ks_sched_maps *m;
	unsigned int gen;
	ks_sched_row_fn fn;
	void *arg;
};

static int take_array(uint32_t idx, const void *value, void *varg)
{
	struct array_arg *a = varg;
	const struct ks_sched_maps *m = a->m;
	uint32_t rel = idx - a->gen * array_keys(m->by) * m->nsub;
	struct ks_sched_rowid id = { .sub = rel % m->nsub, .num = rel / m->nsub };
	int took = 0;

	if (m->by != KS_SCHED_BY_CPU)
		return a->fn(&id, value, ks_ncpus(), a->arg);
	/* by cpu, each CPU's copy of the one row is that CPU's row */
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		int t;

		id.num = cpu;
		t = a->fn(&id, (const char *)value + (size_t)cpu * m->value_size, 1, a->arg);
		if (t < 0)
			return t;
		took |= t;
	}
	return took;
}

struct hash_arg {
	const struct ks_sched_maps *m;
	unsigned int gen;
	int nvals;
	ks_sched_row_fn fn;
	void *arg;
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_sched_key *)key)->gen == ((struct hash_arg *)varg)->gen;
}

static int take_hash(const void *key, const void *value, void *varg)
{
	const struct ks_sched_key *k = key;
	struct hash_arg *a = varg;
	struct ks_sched_rowid id = { .sub = k->sub, .num = (int64_t)k->id };
	int took;

	if (a->m->by == KS_SCHED_BY_PID || a->m->by == KS_SCHED_BY_TID) {
		/* the live task's name; once it is gone, the row's (its name at its last event) */
		ks_pid_comm_peek(-1, (uint32_t)k->id, id.comm);
		if (!strcmp(id.comm, "?") && ((const char *)value)[0])
			memcpy(id.comm, value, KS_COMM_LEN);
	} else {
		memcpy(id.comm, k->comm, KS_COMM_LEN);
	}
	id.comm[KS_COMM_LEN - 1] = 0;
	took = a->fn(&id, value, a->nvals, a->arg);
	return took < 0 ? took : 0;
}

static int take_other(uint32_t idx, const void *value, void *varg)
{
	struct hash_arg *a = varg;
	struct ks_sched_rowid id = { .other = true, .sub = idx - a->gen * a->m->nsub, .num = -1 };

	return a->fn(&id, value, a->nvals, a->arg);
}

int ks_sched_drain(const struct ks_sched_maps *m, unsigned int gen, ks_sched_row_fn fn, void *arg,
		   enum ks_drain_mode mode)
{
	if (!by_array(m->by)) {
		bool shared = by_shared(m->by);
		struct hash_arg a = { m, gen, shared ? 1 : ks_ncpus(), fn, arg };
		struct ks_hash_half h = { .fd = shared ? m->srows_fd : m->hrows_fd, .key_size = sizeof(struct ks_sched_key),
					  .match = key_in_gen, .cb = take_hash, .arg = &a, .value_buf = m->vbuf };
		int err = ks_hash_drain_half(&h, mode);

		if (err)
			return err;
		return ks_array_drain_mode(shared ? m->sother_fd : m->rows_fd, gen * m->nsub, m->nsub, m->vbuf,
					   m->value_size * (size_t)a.nvals, take_other, &a, mode);
	} else {
		struct array_arg a = { m, gen, fn, arg };
		uint32_t n = array_keys(m->by) * m->nsub;

		return ks_array_drain_mode(m->rows_fd, gen * n, n, m->vbuf, m->value_size * (size_t)ks_ncpus(),
					   take_array, &a, mode);
	}
}

void ks_sched_hist_merge(struct ks_hist *h, const struct ks_sched_hist *b)
{
	ks_hist_add_slots_n(h, b->slots, KS_SCHED_HIST_SLOTS);
	h->sum += b->sum;
	if (b->max > h->max)
		h->max = b->max;
}

static const char *policy_name(int64_t p)
{
	static const char *const names[KS_SCHED_POLICIES] = {
		"normal", "fifo", "rr", "batch", "iso", "idle", "deadline", "ext",
	};

	return p >= 0 && p < KS_SCHED_POLICIES ? names[p] : "?";
}

/* The scheduling class behind a policy: the CFS/RT/DEADLINE/IDLE split. */
static const char *policy_class(int64_t p)
{
	switch (p) {
	case 1:
	case 2:
		return "rt";
	case 5:
		return "idle";
	case 6:
		return "dl";
	case 7:
		return "ext";
	default:
		return "cfs";
	}
}

void ks_sched_label(struct ks_row *row, enum ks_sched_by by, const struct ks_sched_rowid *id)
{
	char path[256];

	if (id->other) {
		/* the keys the hash had no room for: no number, the name "other" */
		if (by == KS_SCHED_BY_PRIO) {
			ks_row_key_num(row, "prio", -1);
			ks_row_key_str(row, "class", "other");
		} else if (by == KS_SCHED_BY_CGROUP) {
			ks_row_key_num(row, "cgroup_id", -1);
			ks_row_key_str(row, "cgroup", "other");
		} else if (by == KS_SCHED_BY_COMM) {
			ks_row_key_str(row, "comm", "other");
		} else {
			ks_row_key_num(row, by == KS_SCHED_BY_PID ? "pid" : "tid", -1);
			ks_row_key_str(row, "comm", "other");
		}
		return;
	}
	switch (by) {
	case KS_SCHED_BY_NONE:
		break;
	case KS_SCHED_BY_CPU:
		ks_row_key_num(row, "cpu", id->num);
		break;
	case KS_SCHED_BY_PRIO:
		ks_row_key_num(row, "prio", id->num);
		ks_row_key_str(row, "class", id->num < 0 ? "dl" : id->num < 100 ? "rt" : "cfs");
		break;
	case KS_SCHED_BY_POLICY:
		ks_row_key_str(row, "policy", policy_name(id->num));
		ks_row_key_str(row, "class", policy_class(id->num));
		break;
	case KS_SCHED_BY_PID:
	case KS_SCHED_BY_TID:
		ks_row_key_num(row, by == KS_SCHED_BY_PID ? "pid" : "tid", id->num);
		ks_row_key_str(row, "comm", id->comm);
		break;
	case KS_SCHED_BY_COMM:
		ks_row_key_str(row, "comm", id->comm);
		break;
	case KS_SCHED_BY_CGROUP:
		ks_row_key_num(row, "cgroup_id", id->num);
		if (ks_cgroup_path((__u64)id->num, path, sizeof(path)))
			snprintf(path, sizeof(path), "?");
		ks_row_key_str(row, "cgroup", path);
		break;
	}
}

bool ks_sched_switch_has_state(void)
{
	int n = ks_tp_nargs("sched_switch");

	if (n < 0)
		p_dbg("cannot count sched_switch arguments: %s; assuming prev_state is one", strerror(-n));
	return n < 0 || n >= 4;
}

/*
 * Commit d6962c4fe8f9 ("sched: Clear ttwu_pending after enqueue_task()",
 * v6.2) moved the clearing after the activations.  The kernel's behaviour
 * changed, not its types, so the release is all there is to go by; an
 * unreadable one gets sched_waking, which is right on every kernel.
 */
bool ks_sched_wakelist_marked(void)
{
	unsigned int major, minor;
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 2);
}

const char *const ks_sched_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, NULL };

int ks_sched_open(struct ks_sched_ctx *ctx, const struct ks_sched_def *def, const struct ks_common *c,
		  const struct ks_filter *f)
{
	struct ks_sched_run *run = &ctx->run;

	run->by = ks_sched_by_parse(c->by);
	run->filter = f;
	run->budget = &ctx->sc.budget;
	run->maps.by = run->by;
	run->maps.nsub = def->nsub;
	run->maps.value_size = def->value_size;
	run->maps.vbuf = calloc((size_t)ks_ncpus(), def->value_size);
	if (!run->maps.vbuf)
		return -ENOMEM;
	return ks_sc_open(&ctx->sc, &def->sc, c);
}

static void set_entries(struct bpf_object *obj, const char *map, uint32_t n)
{
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, map), n);
}

/* Here, not once at open: a shared budget configures at several limits. */
int ks_sched_configure(void *vctx, void *skel, const char *hook)
{
	struct ks_sched_ctx *ctx = vctx;
	struct ks_sched_run *run = &ctx->run;
	struct bpf_object *obj = ctx->sc.def->skel->obj(skel);
	__u32 by = run->by, nsub = run->maps.nsub, mask;
	bool state = ks_sched_switch_has_state();
	struct ks_budget b = *run->budget;
	int err;

	(void)hook;
	b.limit = b.limit > run->extra ? b.limit - run->extra : 0;
	ks_sched_sizes(&b, run->by, nsub, run->maps.value_size, ks_pid_max(), &run->sizes);
	mask = run->sizes.slots - 1;
	err = ks_sc_set_rodata(obj, "ks_filter", run->filter, sizeof(*run->filter));
	if (!err)
		err = ks_sc_set_rodata(obj, "ks_by", &by, sizeof(by));
	if (!err)
		err = ks_sc_set_rodata(obj, "ks_nsub", &nsub, sizeof(nsub));
	if (!err)
		err = ks_sc_set_rodata(obj, "ks_slot_mask", &mask, sizeof(mask));
	if (!err)
		err = ks_sc_set_rodata(obj, "ks_switch_has_state", &state, sizeof(state));
	set_entries(obj, "ks_slots", run->sizes.slots);
	set_entries(obj, "rows", run->sizes.rows);
	set_entries(obj, "hrows", run->sizes.hrows);
	set_entries(obj, "srows", run->sizes.srows);
	set_entries(obj, "sother", run->sizes.sother);
	if (ks_sched_wakelist_marked())
		ks_prog_disable(obj, "sched_waking");
	return err;
}

static const struct ks_sched_def *def_of(const struct ks_sched_ctx *ctx)
{
	return (const struct ks_sched_def *)ctx->sc.def;
}

static int map_fd(struct bpf_object *obj, const char *name)
{
	return bpf_map__fd(bpf_object__find_map_by_name(obj, name));
}

int ks_sched_attached(void *vctx)
{
	struct ks_sched_ctx *ctx = vctx;
	struct bpf_object *obj = ctx->sc.def->skel->obj(ctx->sc.skel);
	struct ks_sched_maps *m = &ctx->run.maps;
	struct timespec ts;

	/* the programs' clock, bpf_ktime_get_ns; adopted ones run on from their own start */
	if (!ks_pin_adopted(obj) && !clock_gettime(CLOCK_MONOTONIC, &ts))
		*(volatile uint64_t *)ks_sc_bss(&ctx->sc, def_of(ctx)->since_at) =
			(uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	m->rows_fd = map_fd(obj, "rows");
	m->hrows_fd = map_fd(obj, "hrows");
	m->srows_fd = map_fd(obj, "srows");
	m->sother_fd = map_fd(obj, "sother");
	return 0;
}

int ks_sched_drain_maps(void *vctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct ks_sched_ctx *ctx = vctx;

	(void)r; /* the row callback finds it in ctx->r */
	return ks_sched_drain(&ctx->run.maps, gen, def_of(ctx)->take, ctx, mode);
}

int ks_sched_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct ks_sched_ctx *ctx = vctx;
	const struct ks_sched_def *def = def_of(ctx);
	volatile uint64_t *to_other = ks_sc_bss(&ctx->sc, def->to_other_at);
	unsigned int old = ctx->sc.old;
	int err;

	ctx->r = r;
	err = ks_sc_drain(&ctx->sc, r, mode);
	ctx->r = NULL;
	if (err || by_array(ctx->run.by))
		return err;
	/* the programs count into the other half now: this one is complete; its "other" count goes with its rows */
	if (mode != KS_DRAIN_CLEAR)
		ks_report_counter(r, "to_other", to_other[old & 1]);
	if (mode != KS_DRAIN_READ)
		to_other[old & 1] = 0;
	return 0;
}

void ks_sched_release(void *vctx)
{
	struct ks_sched_ctx *ctx = vctx;

	free(ctx->run.maps.vbuf);
	ctx->run.maps.vbuf = NULL;
}
