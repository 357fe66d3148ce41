/* The collector descriptor and the registry every command walks (CLI, later serve and top). */
#ifndef KS_CORE_COLLECTOR_H
#define KS_CORE_COLLECTOR_H

#include <stddef.h>
#include "core/bpfutil.h"
#include "core/opts.h"
#include "core/report.h"
#include "ksight/filter.h"

struct bpf_object;

/*
 * Lifecycle: parse_opt for each own option, open (open, size, load,
 * attach: everything in the kernel), then mark + drain (or collect) once
 * per interval or once at the end, then close on every path.  All return
 * 0 or negative errno and never exit.  A running collector is an instance
 * (core/instance.h); drivers (core/driver.h) run instances.
 */
struct ks_collector {
	struct ks_cmd_spec spec; /* name, summary, options */
	size_t ctx_size;	 /* zeroed state handed to every call */
	int (*init)(void *ctx);	 /* defaults before options; optional */
	int (*parse_opt)(void *ctx, int id, const char *arg);
	int (*open)(void *ctx, const struct ks_common *c, const struct ks_filter *f);
	/* hook variant chosen by open, e.g. "tp_btf" */
	const char *(*hook)(void *ctx);
	/* moves what happened since the previous collect into @r; only for collectors without mark */
	int (*collect)(void *ctx, struct ks_report *r);
	/* frees everything, after open or not: what parse_opt allocated too (safe on a context only init and parse_opt saw) */
	void (*close)(void *ctx);
	/*
	 * Optional Core v2 phases (issue 11 item 2), adopted collector by
	 * collector; collect() is needed only without them.  mark() flips the
	 * buffers without waiting; the driver then waits for the kernel once
	 * for all instances (ks_sync_programs) and drains, which moves the
	 * quiet half into @r.  mark with drain or drain_mode (or both).
	 */
	int (*mark)(void *ctx);
	int (*drain)(void *ctx, struct ks_report *r);
	/*
	 * Optional, with mark: the drain in one of its modes, for serve --pin
	 * (ks_instances_collect).  KS_DRAIN_TAKE moves the quiet half into @r
	 * and empties it: core calls it wherever it would call drain(), so a
	 * collector that has drain_mode gives no drain.  KS_DRAIN_READ moves
	 * the quiet half into @r but leaves the kernel's copy; KS_DRAIN_CLEAR
	 * (@r NULL) empties that half, reporting nothing.  After an adoption,
	 * before any mark, CLEAR empties the half the programs are not
	 * writing: the one a killed predecessor was draining.  Collectors that
	 * have it also give skel_at.
	 */
	int (*drain_mode)(void *ctx, struct ks_report *r, enum ks_drain_mode mode);
	/*
	 * With drain_mode: offsetof(the context's type, its pointer to a
	 * bpftool skeleton made by ks_load_spec), whose object's pins core
	 * keeps the drain sequence beside (ks_instance_object).  Every such
	 * skeleton starts as struct ks_skel_head (KS_SKEL_OPS checks).
	 */
	size_t skel_at;
	/*
	 * Optional, for --pin: in-kernel values kept cumulative, whose copy
	 * as of the last read lives in user space (syscalls' histograms).
	 * cursor_get gives that copy as of the last KS_DRAIN_READ (a malloc'd
	 * buffer, the caller's), saved with the totals that read went into;
	 * cursor_set puts a saved one back after an adoption.  0 or -errno.
	 * Core reaches them through ks_instance_cursor_get/set.
	 */
	int (*cursor_get)(void *ctx, void **buf, size_t *len);
	int (*cursor_set)(void *ctx, const void *buf, size_t len);
	/*
	 * Instead of cursor_get/set, for a cursor that is only u64 counters of
	 * the context (the .bss counters' last read): their offsets in it,
	 * saved and put back by core (ks_cursor_get_u64/set).
	 */
	struct ks_cursor_u64 {
		const size_t *at;
		int n; /* at most 15 */
	} cursor_u64;
	/* Optional: the value columns this collector's rows carry, declared once (NULL: undeclared). */
	const struct ks_schema *schema;
	/*
	 * Optional, for collectors that name their targets (funclat): called
	 * once every option is parsed, with the shared ones, before anything
	 * is loaded; -EINVAL after a one-line error is bad usage (exit 2).
	 */
	int (*prepare)(void *ctx, const struct ks_common *c);
};

/* parse_opt's id for a positional argument, given to collectors whose spec has args */
#define KS_OPT_ARG 0

extern const struct ks_collector *const ks_collectors[];
const struct ks_collector *ks_collector_find(const char *name);

/* Runs @col to the end (duration, signal, -p process exit) and writes its reports; returns an exit code. */
int ks_collector_run(const struct ks_collector *col, int argc, char **argv);
/* `ksight run`: several collectors in one process, one report each per interval. */
int ks_multi_run(int argc, char **argv);

#endif
