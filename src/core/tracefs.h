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
/*
 * 1 when the tracepoint @sys:@event exists in this kernel, 0 when it does
 * not, negative errno when tracefs cannot be had to tell.
 */
int ks_tracepoint_exists(const char *sys, const char *event);

#endif
