/* The command-line drivers (a collector's command, `run`, `profile`): collector instances on the run loop (core/loop.h), each report written through src/output/ at each interval and at the end; the profiler on the same loop. */
#ifndef KS_DRIVE_DRIVER_H
#define KS_DRIVE_DRIVER_H

#include "core/instance.h"
#include "core/loop.h"
#include "output/output.h"

struct ks_driver {
	struct ks_instance *in; /* opened instances */
	int n;
	const struct ks_common *c; /* duration, interval, pid: shared by all */
	struct ks_sink *sink;
	const struct ks_writer *w;
	bool abandoned; /* a report was dropped to a blocked output: later ones do not wait for it again */
	int ret;	/* the exit code so far */
	struct ks_series *series; /* each report, once written, is moved here (--heatmap); NULL: freed */
};

/*
 * Starts the -- CMD, if any, and runs @d's opened instances on the run loop
 * until the duration ends, a stop signal comes, the -p process or the
 * command exits: one report per instance per interval (with -i) and a final
 * one, each written through the sink.  Returns the exit code: 0, 1 after a
 * runtime failure (a lost report, a command that cannot start), 2 for a
 * bad --sort key.
 */
int ks_drive(struct ks_driver *d);

/* Runs @col to the end (duration, signal, -p process exit) and writes its reports; returns an exit code. */
int ks_collector_run(const struct ks_collector *col, int argc, char **argv);
/* `ksight run`: several collectors in one process, one report each per interval. */
int ks_multi_run(int argc, char **argv);

struct ks_profile_opts;
struct ks_profile_result;
/*
 * `profile` and the --stacks modes: the profiler (src/profile/) loaded and
 * attached, drained on the run loop until the duration ends, a stop signal,
 * the -p process's or the command's exit, then finished into @res (freed by
 * ks_profile_result_free whatever this returns).  0 or negative errno (said).
 */
int ks_drive_profile(const struct ks_profile_opts *o, struct ks_profile_result *res);

/* The one line for a --sort key that @collector's reports cannot have (before attaching, or at the first rows). */
void ks_sort_key_error(const char *key, const char *collector);

#endif
