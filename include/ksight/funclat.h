/* Map layouts of `ksight funclat`, shared by bpf/funclat.bpf.c and src/collectors/funclat.c. */
#ifndef KSIGHT_FUNCLAT_H
#define KSIGHT_FUNCLAT_H

#include "hist.h"
#include "filter.h"

/*
 * Latency histograms cover 2^40 ns (18 minutes); longer calls share the
 * last slot.  u32 slots: a row is drained and zeroed every report, and
 * one slot of one row would need 2^32 calls in one interval to wrap.
 */
#define KS_FL_SLOTS KS_HIST_SLOTS_BELOW(40)
/* Calls of one function by one thread timed at once (recursion); deeper ones are counted, not timed. */
#define KS_FL_NEST 4
/* Targets of one run, at most (each is one uprobe pair, kprobe pair or fentry/fexit object). */
#define KS_FL_MAX_FUNCS 1024

/*
 * One function's row: per-CPU (plain adds) when the budget holds a copy
 * per possible CPU, else shared by all CPUs (atomic adds; max is then a
 * racy maximum, exact but for two CPUs raising it at the same moment).
 * Two halves, flipped by user space (ks_gen) at each report.
 */
struct ks_fl_row {
	__u64 calls;  /* entries (USDT: firings) */
	__u64 sum_ns; /* time of the timed returns */
	__u64 max_ns;
	__u64 pad;
	__u32 slot[KS_FL_SLOTS];
};
_Static_assert(sizeof(struct ks_fl_row) == 32 + 4 * KS_FL_SLOTS, "ks_fl_row layout");

/* A thread's calls of one function in flight. */
struct ks_fl_key {
	__u32 tid;
	__u32 fn;
};

/*
 * User functions also keep the stack pointer at entry (it points at the
 * return address): a frame whose return probe never fired (the kernel
 * drops some uretprobes; longjmp, exceptions) is known by a later entry
 * or return at or above it on the stack, and counted as a missed return
 * instead of being taken for recursion.
 */
struct ks_fl_start {
	__u64 ts[KS_FL_NEST];
	__u64 sp[KS_FL_NEST];
	__u32 depth; /* calls entered and not returned, timed or not */
	__u32 pad;
};

/* Loss counters in the program's .bss, every one reported. */
struct ks_fl_lost {
	__u64 no_entry;	   /* returns whose entry was not seen (started before attach, or its record evicted) */
	__u64 too_deep;	   /* calls nested deeper than KS_FL_NEST in one thread: counted, not timed */
	__u64 starts_full; /* entries with no room in the in-flight map: counted, not timed */
	__u64 missed_returns; /* user calls whose return probe did not fire (see ks_fl_start): counted, not timed */
	__u64 update_failed;  /* entries the in-flight map's lock refused to store (ks_map_failed): counted, not timed */
};

#endif /* KSIGHT_FUNCLAT_H */
