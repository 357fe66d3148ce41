/* User-side pieces shared by the scheduler collectors (runqlat, offcpu): --by modes, map sizes, row drains and labels. */
#ifndef KS_COLLECTORS_SCHED_H
#define KS_COLLECTORS_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/hist.h"
#include "core/opts.h"
#include "core/pin.h"
#include "core/report.h"
#include "ksight/sched.h"

struct bpf_object;
struct bpf_map;

/* NULL (no --by) is KS_SCHED_BY_NONE; the option parser has checked the word. */
enum ks_sched_by ks_sched_by_parse(const char *by);
/* Every --by word of the scheduler collectors (runqlat takes them all). */
extern const struct ks_by_word ks_sched_by_words[];
/* The key columns of the --by words above (rows of `other` included), for the schemas' sort-key check. */
#define KS_SCHED_KEYS "cpu", "pid", "tid", "comm", "prio", "class", "policy", "cgroup", "cgroup_id"

/* max_entries of the maps of KS_SCHED_ROW_MAPS and the slots; a map a mode does not use has 1. */
struct ks_sched_sizes {
	uint32_t slots;	 /* per-thread slots: a power of two, >= pid_max where the budget allows */
	uint32_t rows;	 /* per-CPU array rows, both halves */
	uint32_t hrows;	 /* per-CPU hash rows (by prio), both halves */
	uint32_t srows;	 /* shared hash rows (by pid, tid, comm, cgroup), both halves */
	uint32_t sother; /* shared "other" rows, both halves */
};

/*
 * Map sizes for @by with @nsub rows per key, rows of @value_size bytes
 * (per CPU for per-CPU maps), within budget @b at its CPU count; @pid_max
 * is the kernel's.  Hash rows take what the fixed maps leave.
 */
void ks_sched_sizes(const struct ks_budget *b, enum ks_sched_by by, uint32_t nsub, size_t value_size,
		    uint64_t pid_max, struct ks_sched_sizes *sz);

/* Names one drained row. */
struct ks_sched_rowid {
	bool other;	       /* the row of what the hash had no room for */
	uint32_t sub;	       /* the collector's split, e.g. offcpu's state */
	int64_t num;	       /* cpu, prio, policy, tgid, tid or cgroup id */
	char comm[KS_COMM_LEN]; /* pid, tid and comm modes */
};

/*
 * Called for each row of the drained half: @vals holds @nvals per-CPU
 * copies of the row (one, that CPU's, by cpu).  Returns 1 when it took
 * data, 0 when the row was empty, or a negative errno.
 */
typedef int (*ks_sched_row_fn)(const struct ks_sched_rowid *id, const void *vals, int nvals, void *arg);

struct ks_sched_maps {
	enum ks_sched_by by;
	uint32_t nsub;
	int rows_fd, hrows_fd, srows_fd, sother_fd;
	size_t value_size; /* one CPU's row */
	void *vbuf;	   /* room for every CPU's copy of one row */
};

/* Hands every row of buffer half @gen to @fn and empties it, or one of the two in @mode. */
int ks_sched_drain(const struct ks_sched_maps *m, unsigned int gen, ks_sched_row_fn fn, void *arg,
		   enum ks_drain_mode mode);

/* Adds one row's histogram (one CPU's copy, or a shared row) to @h. */
void ks_sched_hist_merge(struct ks_hist *h, const struct ks_sched_hist *b);

/* Adds the key columns of @id (cpu; prio, class; policy, class; pid, comm; ...) to @row. */
void ks_sched_label(struct ks_row *row, enum ks_sched_by by, const struct ks_sched_rowid *id);

/* Whether sched_switch hands prev_state to tp_btf and raw_tp programs (v5.18+). */
bool ks_sched_switch_has_state(void);
/*
 * Whether rq::ttwu_pending stays set while a CPU activates the wakeups
 * other CPUs queued for it (v6.2+), so that sched_wakeup alone tells a
 * queued wakeup from a local one; else runqlat's sched_waking programs
 * (programs named sched_waking__*) record the waker's CPU.
 */
bool ks_sched_wakelist_marked(void);

/* What both scheduler collectors keep between open and close. */
struct ks_sched_run {
	enum ks_sched_by by;
	const char *hist_name; /* JSON name of the row histogram */
	const struct ks_filter *filter;
	struct ks_sched_sizes sizes;
	struct ks_budget budget;
	bool refused; /* over the budget: said once, not again for the next hook */
	struct ks_sched_maps maps;
	struct bpf_object *obj;
	const char *hook;
	unsigned int gen;
	unsigned int old; /* the half mark() retired, for drain() */
	struct ks_sched_lost lost_seen; /* .bss counters already reported */
	unsigned long long missed_seen;
	unsigned long long inferred_seen[2]; /* ks_inferred (KS_INFERRED_IN, _WAKEUP) already reported */
	bool wakeups;			     /* runqlat: report what concerns wakeups */
};

/* Parses --by, sizes the maps for @nsub rows per key of @value_size bytes, allocates the drain buffer. */
int ks_sched_run_init(struct ks_sched_run *run, const struct ks_common *c, const struct ks_filter *f,
		      uint32_t nsub, size_t value_size, const char *hist_name);

/*
 * Sets the configuration every scheduler program shares (bpf/sched.bpf.h)
 * on an opened skeleton @s; a macro because each skeleton has its own types.
 */
#define KS_SCHED_CONFIGURE(s, run)                                                     \
	do {                                                                           \
		(s)->rodata->ks_filter = *(run)->filter;                               \
		(s)->rodata->ks_by = (run)->by;                                        \
		(s)->rodata->ks_nsub = (run)->maps.nsub;                               \
		(s)->rodata->ks_slot_mask = (run)->sizes.slots - 1;                    \
		(s)->rodata->ks_switch_has_state = ks_sched_switch_has_state();        \
		bpf_map__set_max_entries((s)->maps.ks_slots, (run)->sizes.slots);      \
		bpf_map__set_max_entries((s)->maps.rows, (run)->sizes.rows);           \
		bpf_map__set_max_entries((s)->maps.hrows, (run)->sizes.hrows);         \
		bpf_map__set_max_entries((s)->maps.srows, (run)->sizes.srows);         \
		bpf_map__set_max_entries((s)->maps.sother, (run)->sizes.sother);       \
	} while (0)

/*
 * Records the loaded object and its row maps; sets *@since (ks_since in
 * its .bss) to now, the start of the run, unless the object was adopted.
 */
void ks_sched_attached(struct ks_sched_run *run, struct bpf_object *obj, const struct bpf_map *rows,
		       const struct bpf_map *hrows, const struct bpf_map *srows, const struct bpf_map *sother,
		       volatile uint64_t *since);

/* Sizes from the budget's limit again (configure: a shared budget sizes at several limits). */
void ks_sched_resize(struct ks_sched_run *run);
/* Checks the opened object's maps against the budget before load: 0, or -E2BIG said once. */
int ks_sched_budget_check(struct ks_sched_run *run, struct bpf_object *obj);

/*
 * The two phases of a collect (core/instance.h): mark flips the buffer
 * half (*@bss_gen) without waiting; after the driver's one wait for the
 * kernel, drain hands each row of the quiet half to @fn, then reports the
 * loss counters (@lost, the .bss copy) and the intervals timed from
 * sched_info (@inferred, the .bss ks_inferred) since the previous drain,
 * and the events that half's "other" row took (@to_other[2], emptied), all
 * in @mode (KS_DRAIN_CLEAR reports nothing, @r NULL).
 */
void ks_sched_mark(struct ks_sched_run *run, volatile uint32_t *bss_gen);
int ks_sched_drain_report(struct ks_sched_run *run, const volatile struct ks_sched_lost *lost,
			  volatile uint64_t *to_other, const volatile uint64_t *inferred, struct ks_report *r,
			  ks_sched_row_fn fn, void *arg, enum ks_drain_mode mode);

void ks_sched_run_free(struct ks_sched_run *run);

/*
 * Hook variants of the scheduler collectors: no classic-tracepoint one,
 * as it has no task pointers, and every kernel with the BTF that CO-RE
 * needs has raw_tp.
 */
extern const char *const ks_sched_hooks[];

/*
 * The glue between a collector's typed skeleton ks_<name> and the shared
 * run: defines <name>_open, <name>_hook, <name>_mark, <name>_drain_mode
 * and <name>_close for a context type @ctx_t with members run, skel and
 * r, rows of @nsub splits of @value_t, drained by @take_row into the
 * report; @with_wakeups when its programs follow wakeups (their losses are
 * reported).
 */
#define KS_SCHED_GLUE(name, ctx_t, nsub, value_t, hist_name, take_row, with_wakeups)            \
	static int name##_configure(void *vctx, void *skel, const char *hook)                   \
	{                                                                                       \
		ctx_t *ctx = vctx;                                                              \
		struct ks_##name *s = skel;                                                     \
                                                                                                \
		(void)hook;                                                                     \
		ks_sched_resize(&ctx->run);                                                     \
		KS_SCHED_CONFIGURE(s, &ctx->run);                                               \
		if (ks_sched_wakelist_marked())                                                 \
			ks_prog_disable(s->obj, "sched_waking");                                \
		return 0;                                                                       \
	}                                                                                       \
	static int name##_budget_check(void *vctx, struct bpf_object *obj)                      \
	{                                                                                       \
		return ks_sched_budget_check(&((ctx_t *)vctx)->run, obj);                       \
	}                                                                                       \
	static struct ks_budget *name##_budget(void *vctx)                                      \
	{                                                                                       \
		return &((ctx_t *)vctx)->run.budget;                                            \
	}                                                                                       \
	KS_SKEL_OPS(ks_##name);                                                                 \
	static int name##_open(void *vctx, const struct ks_common *c, const struct ks_filter *f) \
	{                                                                                       \
		static const struct ks_load_spec spec = {                                       \
			.hooks = ks_sched_hooks,                                                \
			.skel = &ks_##name##_ops,                                               \
			.configure = name##_configure,                                          \
			.budget_check = name##_budget_check,                                    \
			.budget = name##_budget,                                                \
		};                                                                              \
		ctx_t *ctx = vctx;                                                              \
		struct ks_##name *s;                                                            \
		int err = ks_sched_run_init(&ctx->run, c, f, nsub, sizeof(value_t), hist_name); \
                                                                                                \
		if (!err)                                                                       \
			err = ks_load_spec(&spec, ctx, (void **)&s, &ctx->run.hook);            \
		if (err)                                                                        \
			return err;                                                             \
		ctx->skel = s;                                                                  \
		if (ks_pin_adopted(s->obj)) {                                                   \
			/* adopted programs kept counting: from where they are (losses from */ \
			/* their load on: serve takes off what its saved totals hold) */        \
			ctx->run.gen = s->bss->ks_gen & 1;                                      \
			ctx->run.old = ctx->run.gen ^ 1; /* what a KS_DRAIN_CLEAR empties */    \
		}                                                                               \
		ks_sched_attached(&ctx->run, s->obj, s->maps.rows, s->maps.hrows, s->maps.srows, \
				  s->maps.sother, (volatile uint64_t *)&s->bss->ks_since);      \
		ctx->run.wakeups = with_wakeups;                                                \
		return 0;                                                                       \
	}                                                                                       \
	static const char *name##_hook(void *vctx)                                              \
	{                                                                                       \
		return ((ctx_t *)vctx)->run.hook;                                               \
	}                                                                                       \
	static int name##_mark(void *vctx)                                                      \
	{                                                                                       \
		ctx_t *ctx = vctx;                                                              \
                                                                                                \
		ks_sched_mark(&ctx->run, &ctx->skel->bss->ks_gen);                              \
		return 0;                                                                       \
	}                                                                                       \
	static int name##_drain_mode(void *vctx, struct ks_report *r, enum ks_drain_mode mode)  \
	{                                                                                       \
		ctx_t *ctx = vctx;                                                              \
		int err;                                                                        \
                                                                                                \
		ctx->r = r;                                                                     \
		err = ks_sched_drain_report(&ctx->run, &ctx->skel->bss->lost,                   \
					    (volatile uint64_t *)ctx->skel->bss->ks_to_other,           \
					    (const volatile uint64_t *)ctx->skel->bss->ks_inferred, r,    \
					    take_row, ctx, mode);                                       \
		ctx->r = NULL;                                                                  \
		return err;                                                                     \
	}                                                                                       \
	static void name##_close(void *vctx)                                                    \
	{                                                                                       \
		ctx_t *ctx = vctx;                                                              \
                                                                                                \
		ks_##name##__destroy(ctx->skel);                                                \
		ctx->skel = NULL;                                                               \
		ks_sched_run_free(&ctx->run);                                                   \
	}

#endif
