/* Drivers run collector instances: stop signals, the interval/duration loop, -p process exit, writing each report. */
#ifndef KS_CORE_DRIVER_H
#define KS_CORE_DRIVER_H

#include <signal.h>
#include "core/instance.h"
#include "output/output.h"

/* The signal that asked the run to end (SIGINT, SIGTERM), or 0. */
extern volatile sig_atomic_t ks_stop_signal;
/*
 * Installs the SIGINT/SIGTERM handlers without SA_RESTART: a write or wait
 * that blocks is interrupted, so a run ends even when nobody reads its output.
 */
void ks_stop_install(void);

/* Milliseconds a stopping run still waits for a blocked output before it abandons the report. */
#define KS_STOP_GRACE_MS 500

struct ks_driver {
	struct ks_instance *in; /* opened instances */
	int n;
	const struct ks_common *c; /* duration, interval, pid: shared by all */
	struct ks_sink *sink;
	const struct ks_writer *w;
	bool abandoned; /* a report was dropped to a blocked output: later ones do not wait for it again */
	struct ks_series *series; /* each report, once written, is moved here (--heatmap); NULL: freed */
};

/*
 * Runs @d's instances until the duration ends, a stop signal comes or the
 * -p process exits: one report per instance per interval (with -i) and a
 * final one, each written through the sink.  Returns the exit code: 0, 1
 * after a runtime failure (a lost report included), 2 for a bad --sort key.
 */
int ks_drive(struct ks_driver *d);

/* Prints why @col could not load (permissions named), for the drivers. */
void ks_report_open_error(const struct ks_collector *col, int err);
/* The one line for a --sort key that @collector's reports cannot have (before attaching, or at the first rows). */
void ks_sort_key_error(const char *key, const char *collector);

#endif
