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
	/* serve --pin: the drain sequence beside its pins (core/pin.h, ks_instance_pin); NULL without */
	struct ks_pin_seq *pin;
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
 * that have it, one wait for the kernel, then drain() each (KS_DRAIN_TAKE).
 * @errs[i] gets each one's result; returns the first error.  Pinned
 * instances (ks_instance_pin) are only read (KS_DRAIN_READ; a clear still
 * owed by a failed one is done first): the caller saves, then calls
 * ks_instances_clear (core/pin.h).
 */
int ks_instances_collect(struct ks_instance *in, int n, struct ks_report *reports, int *errs);
/* Detaches and frees; safe on an instance that never opened. */
void ks_instance_close(struct ks_instance *in);

/* Prints why @col could not load (permissions named), for the drivers and ks_instances_share. */
void ks_report_open_error(const struct ks_collector *col, int err);

#endif
