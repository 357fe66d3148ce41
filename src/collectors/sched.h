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
#include "core/scaffold.h"
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

/* What both scheduler collectors keep between open and close, besides their scaffold. */
struct ks_sched_run {
	enum ks_sched_by by;
	const struct ks_filter *filter;
	const struct ks_budget *budget; /* the scaffold's */
	struct ks_sched_sizes sizes;
	struct ks_sched_maps maps;
	uint64_t extra; /* bytes of the collector's own maps besides the family's, left out of the rows' room */
};

/* A scheduler collector's context: its scaffold first (core/scaffold.h), then the family's run. */
struct ks_sched_ctx {
	struct ks_scaffold sc;
	struct ks_sched_run run;
	struct ks_report *r; /* the report a drain fills, for the row callback */
};

/*
 * A scheduler collector, declared: the scaffold's declaration (maps:
 * ks_sched_drain_maps; attached: ks_sched_attached; release:
 * ks_sched_release), then the family's part.  Rows are @nsub splits of
 * @value_size bytes per key, handed to @take (its arg is the struct
 * ks_sched_ctx).
 */
struct ks_sched_def {
	struct ks_sc_def sc;
	size_t since_at, to_other_at; /* offsetof ks_since and ks_to_other in the skeleton's .bss */
	uint32_t nsub;
	size_t value_size;
	const struct ks_schema *schema; /* its hist_name names the row histogram in JSON */
	ks_sched_row_fn take;
};

/* The losses of both scheduler collectors' .bss of type @bss, in the order reports list them (runqlat adds unseen_wakeup after). */
#define KS_SCHED_LOSSES(bss)                                                              	{ "slot_collisions", offsetof(bss, lost.slot_collisions), KS_SC_LOSS },           	{ "map_full", offsetof(bss, lost.map_full), KS_SC_LOSS },                         	{ "map_update_failed", offsetof(bss, lost.update_failed), KS_SC_LOSS },           	{ "recursion", 0, KS_SC_RECURSION },                                              	{ "unseen_switch_in", offsetof(bss, lost.unseen_in), KS_SC_LOSS }
/* The intervals timed from sched_info (ks_inferred): said only when some were. */
#define KS_SCHED_INFERRED(bss)                                                                               	{ "inferred_switch_in", offsetof(bss, ks_inferred) + KS_INFERRED_IN * sizeof(__u64), KS_SC_SOME },    	{ "inferred_wakeup", offsetof(bss, ks_inferred) + KS_INFERRED_WAKEUP * sizeof(__u64), KS_SC_SOME }

/* open: parses --by, allocates the drain buffer and runs @def's lifecycle (ks_sc_open). */
int ks_sched_open(struct ks_sched_ctx *ctx, const struct ks_sched_def *def, const struct ks_common *c,
		  const struct ks_filter *f);
/*
 * The declaration's callbacks: configure (map sizes from the budget's
 * limit and the rodata every scheduler program shares, bpf/sched.bpf.h),
 * the rows' drain, the start of the run and the row maps once attached,
 * the buffer freed.
 */
int ks_sched_configure(void *ctx, void *skel, const char *hook);
int ks_sched_drain_maps(void *ctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode);
int ks_sched_attached(void *ctx);
void ks_sched_release(void *ctx);
/*
 * drain_mode: the rows of the quiet half (ks_sc_drain: then the losses and
 * the intervals timed from sched_info), then the events that half's
 * "other" row took (ks_to_other[half], emptied but in KS_DRAIN_READ).
 */
int ks_sched_drain_mode(void *ctx, struct ks_report *r, enum ks_drain_mode mode);

/*
 * Hook variants of the scheduler collectors: no classic-tracepoint one,
 * as it has no task pointers, and every kernel with the BTF that CO-RE
 * needs has raw_tp.
 */
extern const char *const ks_sched_hooks[];

#endif
