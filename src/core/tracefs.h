/* Locating tracefs, mounting it when absent (classic tracepoints and `list` need it). */
#ifndef KS_CORE_TRACEFS_H
#define KS_CORE_TRACEFS_H

#include <stdbool.h>

/*
 * Returns the tracefs mount point, mounting it at /sys/kernel/tracing when
 * no mount exists; *mounted (may be NULL) tells whether this call did.
 * NULL with errno set when it cannot be had.
 */
const char *ks_tracefs_dir(bool *mounted);

#endif
