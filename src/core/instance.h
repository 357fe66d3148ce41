/* A collector instance (its config, filter and BPF object) and the phases drivers run: open, mark, drain, close. */
#ifndef KS_CORE_INSTANCE_H
#define KS_CORE_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/budget.h"
#include "core/collector.h"

struct ks_instance {
	const struct ks_collector *col;
	void *ctx;		 /* the collector's state: config, BPF object */
	struct ks_common c;	 /* its options (shared ones plus its own) */
	const struct ks_filter *f; /* the filter it was opened with */
	bool marked;		 /* mark() ran; drain() owed */
	struct ks_budget_share share; /* its part of a budget shared with other instances (serve, run) */
	/* its own arguments (funclat's targets: run's and serve's --funclat), borrowed, replayed after a re-init */
	const char *const *args;
	int nargs;
	/* --pin (ks_instance_pin): the drain sequence beside its pins, -1 without */
	int seq_fd;
	uint32_t seq_id;  /* that map's id: pairs saved totals with these pins */
	uint64_t cleared; /* its value: drains whose data the maps no longer hold */
	bool clear_due;	  /* a KS_DRAIN_READ ran; its KS_DRAIN_CLEAR is owed */
};

/* Allocates @in's state for @col and applies its defaults; 0 or -ENOMEM / the init error. */
int ks_instance_init(struct ks_instance *in, const struct ks_collector *col);
/*
 * Gives @in its own arguments (in->args, each to parse_opt as KS_OPT_ARG)
 * and lets a collector with prepare() resolve them with in->c, before
 * anything is loaded.  0; -EINVAL after a one-line error (bad usage: exit
 * 2); another negative errno.
 */
int ks_instance_configure(struct ks_instance *in);
/* Borrowed strings in order, from a driver's repeatable option (--funclat TARGET). */
struct ks_arglist {
	const char **v;
	int n;
};
/* 0 or -ENOMEM (said). */
int ks_arglist_add(struct ks_arglist *l, const char *s);
void ks_arglist_free(struct ks_arglist *l);
/*
 * For `run` and `serve`: every instance among @n whose collector takes
 * arguments (funclat's targets) gets @targets and resolves them
 * (ks_instance_configure).  0; -EINVAL after a one-line error naming
 * @driver when one has none or a target is bad (exit 2); another negative
 * errno, said (exit 1).
 */
int ks_instances_targets(struct ks_instance *in, int n, const struct ks_arglist *targets, const char *driver);
/* Loads and attaches with @in->c and @f; 0 or negative errno (the caller says why). */
int ks_instance_open(struct ks_instance *in, const struct ks_filter *f);
/*
 * One --max-memory for the @n instances (configured, not opened) and, when
 * @extra is given, one more part already measured (serve's profiler): each
 * instance is opened once to measure the least and the most its maps take
 * (nothing loaded), re-initialised with its options, then given its share
 * (ks_budget_split) for ks_instance_open.  0; -E2BIG after one line naming
 * what each needs when the minimums are over the budget (bad usage: exit
 * 2); another error, said naming the collector, when one cannot be sized.
 */
#define KS_SHARE_MAX 16
int ks_instances_share(struct ks_instance *in, int n, const struct ks_filter *f, uint64_t whole,
		       struct ks_budget_share *extra);
/* A report header for @in: name, hook, filters, settings. */
void ks_instance_report_init(const struct ks_instance *in, struct ks_report *r);
/*
 * Moves what happened since the previous mark of each of the @n instances
 * into @reports[i] (initialised by ks_instance_report_init): mark() on all
 * that have it, one wait for the kernel, then drain(), or collect() for the
 * collectors without the phases.  @errs[i] gets each one's result; returns
 * the first error.  Pinned instances (ks_instance_pin) are only read
 * (KS_DRAIN_READ; a clear still owed by a failed one is done first): the
 * caller saves, then calls ks_instances_clear.
 */
int ks_instances_collect(struct ks_instance *in, int n, struct ks_report *reports, int *errs);
/*
 * serve --pin: drains in two steps around the save of the totals, so that
 * a kill -9 anywhere neither loses a drain nor counts one twice.
 *
 * Per drain N of an instance: mark, READ the quiet half into the totals
 * (ks_instances_collect), save the totals saying they hold N drains
 * (ks_instance_drains), CLEAR the half and write N into the sequence
 * beside the pins (ks_instances_clear).  The saved count S and the
 * pinned one C tell a restart where the kill came (ks_drain_resume):
 *   before the save        S = C = N-1: the maps hold nothing the totals
 *                          hold (the read half is counted by a later
 *                          drain, with what the programs add to it);
 *   after the save, before or while clearing, or before C is written
 *                          S = N = C+1: the half the programs are not
 *                          writing was counted; it is emptied without
 *                          counting, before the first mark can send the
 *                          programs back into it;
 *   after C is written     S = C = N.
 * A save that failed leaves S < C: those drains are gone (counted in
 * ksight_pin_save_errors_total when they happened).  The totals are saved
 * with the id of the sequence's map, so that totals counted from other
 * maps (pins made afresh, an older state) are never paired with these.
 * Values the kernel keeps cumulative, reported as the difference from a
 * last read kept in user space (syscalls' histograms, .bss counters),
 * need no sequence: that read is the collector's cursor, saved in the
 * same copy as the totals it went into and put back on a restart.
 *
 * ks_instance_pin, after ks_instance_open under a pin scope: opens the
 * sequence beside @in's pins (ks_pin_seq_open); 0 (also for collectors
 * without drain_mode, which keep draining in one pass) or negative errno.
 */
int ks_instance_pin(struct ks_instance *in);
enum ks_resume {
	KS_RESUME_COUNT,   /* the maps hold nothing the totals hold */
	KS_RESUME_DISCARD, /* the last drain saved was not (all) emptied: empty it, counting nothing */
	KS_RESUME_LOST,	   /* drains emptied after the last good save are lost */
	KS_RESUME_FRESH,   /* the totals were not counted from these maps */
	KS_RESUME_ODD,	   /* saved more than one drain ahead of the maps: cannot be, counted as COUNT */
};
/* The decision above: @paired when the saved id is this sequence's, @saved drains S, @cleared C. */
enum ks_resume ks_drain_resume(bool paired, uint64_t saved, uint64_t cleared);
/*
 * After opening @in under a pin scope and restoring its totals, which
 * hold @saved drains counted from the sequence map @saved_id (0: none
 * known) with the collector's cursor @cursor (@len bytes, NULL: none):
 * decides, empties when it must, and makes the sequence say @saved.
 * Returns the decision, or a negative errno.
 */
int ks_instance_resume(struct ks_instance *in, uint64_t saved, uint32_t saved_id, const void *cursor, size_t len);
/* How many drains the totals hold once the last read is added: what to save with them. */
uint64_t ks_instance_drains(const struct ks_instance *in);
/* After the save: empties what ks_instances_collect read and counts the drain in each sequence; the first error. */
int ks_instances_clear(struct ks_instance *in, int n);
/*
 * Test-only fault injection (tests/integration/test_serve_pin.sh): with
 * KSIGHT_FAULT=POINT[:N] in the environment, the Nth time (1 without N)
 * the process reaches @point it sends itself SIGKILL.  Points:
 * after-read, after-save (serve's collect), in-clear (ks_instances_clear,
 * the first instance emptied, its sequence not yet written).
 */
void ks_fault_point(const char *point);
/* The BPF object of an opened instance whose collector has drain_mode (by its skel_at), else NULL. */
struct bpf_object *ks_instance_object(const struct ks_instance *in);
/*
 * @in's --pin cursor (core/collector.h): its collector's cursor_get, or
 * the counters its cursor_u64 names; *@buf NULL (and 0) when it has none.
 * set puts a saved one back (0 when it has none).  0 or negative errno.
 */
int ks_instance_cursor_get(const struct ks_instance *in, void **buf, size_t *len);
int ks_instance_cursor_set(struct ks_instance *in, const void *buf, size_t len);
/* Detaches and frees; safe on an instance that never opened. */
void ks_instance_close(struct ks_instance *in);

/* Prints why @col could not load (permissions named), for the drivers and ks_instances_share. */
void ks_report_open_error(const struct ks_collector *col, int err);

#endif
