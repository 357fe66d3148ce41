/* The collector scaffold: a collector declares its maps, counters and kernel needs; this runs its lifecycle once. */
#ifndef KS_CORE_SCAFFOLD_H
#define KS_CORE_SCAFFOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/hist.h"
#include "core/loader.h"
#include "core/opts.h"
#include "core/report.h"

/*
 * A row map, drained one buffer half at a time: the half is the key's
 * first __u32 (every row key starts with its gen), or, with @take_elem,
 * the element of a two-element array ("other" rows, one per half).
 */
struct ks_sc_map {
	const char *name;  /* the map's name in the BPF object */
	size_t key_size;   /* hash maps */
	size_t value_size; /* one CPU's copy for a per-CPU map */
	bool percpu;
	/* hash maps: each row read (0 or -errno); @arg is the struct ks_sc_drain */
	int (*take)(const void *key, const void *value, void *arg);
	/* hash maps, optional: rows zeroed in place rather than deleted (ks_hash_half's keep) */
	bool (*keep)(const void *key, const void *value, void *arg);
	/* arrays: the half's element; 1 when it took data, 0 when empty, or -errno (ks_array_drain's cb) */
	int (*take_elem)(uint32_t idx, const void *value, void *arg);
	/* instead: maps the collector drains its own way (@name unused); 0 or -errno */
	int (*drain)(void *ctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode);
};

/* What a drain hands the map callbacks as their @arg. */
struct ks_sc_drain {
	void *ctx;	     /* the collector's context */
	struct ks_report *r; /* NULL in KS_DRAIN_CLEAR */
	unsigned int gen;    /* the half drained */
};

/*
 * A counter of the programs' .bss (a __u64 at @bss_at), cumulative in the
 * kernel and reported per interval as the difference from its last read,
 * in the declared order.  After a --pin adoption KS_SC_COUNTER goes on
 * from where the programs are; the others count from the programs' load
 * (serve takes off what its saved totals hold).
 */
enum ks_sc_kind {
	KS_SC_LOSS,	 /* a loss (ks_report_lost) */
	KS_SC_RECURSION, /* a loss: the kernel's recursion misses of the programs (no @bss_at) */
	KS_SC_COUNTER,	 /* a counter (ks_report_counter) */
	KS_SC_SOME,	 /* a counter said only in the intervals it moved */
};
struct ks_sc_counter {
	const char *name;
	size_t bss_at;
	enum ks_sc_kind kind;
};

/*
 * What a collector needs to know of the kernel, probed once before its
 * load; each result is kept in struct ks_scaffold's probed[] by position.
 */
enum ks_sc_probe_kind {
	KS_SC_TP_NEEDED, /* tracepoint a:b must exist (ks_tracepoint_exists): else a one-line error, -ENOENT */
	KS_SC_TP,	 /* ks_tracepoint_exists(a, b): 1, 0, or -errno when it cannot tell */
	KS_SC_TP_NARGS,	 /* ks_tp_nargs(a): its arguments, or -errno */
	KS_SC_TP_ARG_PTR, /* ks_tp_arg_is_ptr(a, idx) */
	KS_SC_BTF_MEMBER, /* ks_btf_has_member(a, b) */
};
struct ks_sc_probe {
	enum ks_sc_probe_kind kind;
	const char *a, *b;
	int idx;
};

#define KS_SC_MAPS_MAX 4
#define KS_SC_COUNTERS_MAX 12
#define KS_SC_PROBES_MAX 16

/*
 * One collector, declared.  @configure, @loaded and the skeleton are as in
 * struct ks_load_spec; the budget, its check and the adoption of pinned
 * programs are core's.  Callbacks get the collector's context, whose first
 * member is its struct ks_scaffold.  A family of collectors may embed it
 * first in a declaration of its own (collectors/sched.h).
 */
struct ks_sc_def {
	const char *name; /* for messages: "tcp" */
	const char *const *hooks;
	const struct ks_skel_ops *skel;
	size_t gen_at; /* offsetof the .bss's __u32 ks_gen: the half the programs write */
	const struct ks_sc_map *maps;
	int nmaps;
	const struct ks_sc_counter *counters;
	int ncounters;
	const struct ks_sc_probe *probes;
	int nprobes;
	/* optional, after the probes and before the load: what they mean for this collector (0 or -errno) */
	int (*probed)(void *ctx);
	int (*configure)(void *ctx, void *skel, const char *hook);
	int (*loaded)(void *ctx, void *skel); /* optional: after load, before attach (rows made ahead) */
	int (*attached)(void *ctx);	      /* optional: once running (notes, buffers): 0 or -errno */
	void (*release)(void *ctx);	      /* optional: frees what is the collector's own, at close */
	/*
	 * Optional, for programs attached to targets named at run time
	 * (funclat): @programs, @attach and @pin as in struct ks_load_spec,
	 * and @missed, the recursion misses of programs outside the skeleton
	 * (loaded or adopted by @attach), added to KS_SC_RECURSION's.
	 */
	const char *programs;
	int (*attach)(void *ctx, void *skel);
	int (*pin)(void *ctx, void *skel, const char *hook);
	unsigned long long (*missed)(void *ctx);
};

/* The lifecycle's state; the first member of every scaffolded collector's context. */
struct ks_scaffold {
	const struct ks_sc_def *def;
	void *skel; /* the bpftool skeleton: struct ks_collector's skel_at points here */
	const char *hook;
	struct ks_budget budget;
	const char *const *hooks; /* in place of def->hooks when set before open */
	int probed[KS_SC_PROBES_MAX];
	void *bss;
	int fd[KS_SC_MAPS_MAX];
	unsigned int gen, old; /* the half written, the half ks_sc_mark retired */
	uint64_t seen[KS_SC_COUNTERS_MAX];  /* counters as of their last read (--pin cursors point here) */
	uint64_t delta[KS_SC_COUNTERS_MAX]; /* what the last drain reported of each */
	unsigned long long missed_seen;
	void *vbuf, *zero; /* a value (all CPUs') and a zeroed one, as large as the largest map's */
};

/*
 * open for a collector: probes @def's needs, calls probed, loads the
 * first hook that works (ks_load_spec) sized from the budget of @c, and
 * takes over pinned programs' halves and counters when --pin adopted
 * them.  0 or -errno; ks_sc_close frees what it made.
 */
int ks_sc_open(struct ks_scaffold *sc, const struct ks_sc_def *def, const struct ks_common *c);
/* struct ks_collector's hook, mark and close for a scaffolded context. */
const char *ks_sc_hook(void *ctx);
int ks_sc_mark(void *ctx);
void ks_sc_close(void *ctx);
/*
 * The drain in @mode: every declared map's retired half, then (but in
 * KS_DRAIN_CLEAR) the budget, losses and counters into @r.
 */
int ks_sc_drain(struct ks_scaffold *sc, struct ks_report *r, enum ks_drain_mode mode);
/* ks_hash_half's match for a drain's own hash of rows keyed by gen first (@arg: the struct ks_sc_drain). */
bool ks_sc_key_in_gen(const void *key, void *arg);
/* The .bss variable at @at of the loaded programs. */
static inline void *ks_sc_bss(const struct ks_scaffold *sc, size_t at)
{
	return (char *)sc->bss + at;
}

/*
 * Sets the read-only global @name (a `const volatile` of the BPF side,
 * in .rodata) of the opened, not yet loaded @obj to the @size bytes at
 * @val, found by name in the object's BTF: for code that serves several
 * skeletons, whose typed rodata differ.  0, or -ENOENT when the object
 * has no such variable of that size.
 */
int ks_sc_set_rodata(struct bpf_object *obj, const char *name, const void *val, size_t size);

/* A new histogram of @n u32 slots (a BPF row's), with its @sum and @max; NULL without memory. */
struct ks_hist *ks_hist_of_u32(const uint32_t *slots, unsigned int n, uint64_t sum, uint64_t max);
/* Adds @n u32 slots to @h and to its count. */
void ks_hist_add_u32(struct ks_hist *h, const uint32_t *slots, unsigned int n);

#endif
