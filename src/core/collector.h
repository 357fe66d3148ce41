/* The collector descriptor and the registry every command walks (CLI, later serve and top). */
#ifndef KS_CORE_COLLECTOR_H
#define KS_CORE_COLLECTOR_H

#include <stddef.h>
#include "core/bpfutil.h"
#include "core/opts.h"
#include "core/report.h"
#include "ksight/filter.h"

struct bpf_object;

struct ks_pin_ops;

/*
 * Lifecycle: parse_opt for each own option, open (open, size, load,
 * attach: everything in the kernel), then mark + drain once per interval
 * or once at the end, then close on every path.  All return 0 or negative
 * errno and never exit.  A running collector is an instance
 * (core/instance.h); drivers (drive/driver.h, and every engine on core/loop.h) run instances.
 */
struct ks_collector {
	struct ks_cmd_spec spec; /* name, summary, options */
	size_t ctx_size;	 /* zeroed state handed to every call */
	int (*init)(void *ctx);	 /* defaults before options; optional */
	int (*parse_opt)(void *ctx, int id, const char *arg);
	int (*open)(void *ctx, const struct ks_common *c, const struct ks_filter *f);
	/* hook variant chosen by open, e.g. "tp_btf" */
	const char *(*hook)(void *ctx);
	/* frees everything, after open or not: what parse_opt allocated too (safe on a context only init and parse_opt saw) */
	void (*close)(void *ctx);
	/*
	 * The two phases of a collect (core/instance.h, ks_instances_collect):
	 * mark() flips the buffers without waiting (optional: without it the
	 * drain reads what is there); the driver then waits for the kernel once
	 * for all instances (ks_sync_programs) and drains each, which moves the
	 * quiet half into @r.  Every driver drains with KS_DRAIN_TAKE: read and
	 * empty.  Pinnable collectors (pin below) also take KS_DRAIN_READ (into
	 * @r, the kernel's copy kept) and KS_DRAIN_CLEAR (@r NULL: emptied,
	 * nothing reported), the two steps of serve --pin (core/pin.h).
	 */
	int (*mark)(void *ctx);
	int (*drain)(void *ctx, struct ks_report *r, enum ks_drain_mode mode);
	/* Optional: the value columns this collector's rows carry, declared once (NULL: undeclared). */
	const struct ks_schema *schema;
	/* Optional: what serve --pin needs to keep this collector across a restart (core/pin.h); NULL: not pinnable. */
	const struct ks_pin_ops *pin;
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

#endif
