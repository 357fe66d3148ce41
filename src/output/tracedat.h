/* A recording's raw tracepoint events as trace-cmd's trace.dat (version 6), for trace-cmd report and KernelShark. */
#ifndef KS_OUTPUT_TRACEDAT_H
#define KS_OUTPUT_TRACEDAT_H

#include <stdint.h>
#include <stdio.h>
#include "format/recording.h"

/* A ring-buffer page, and its data after the header (timestamp, commit): at most one event with its own header. */
#define KS_TDAT_PAGE 4096u
#define KS_TDAT_PAGE_DATA (KS_TDAT_PAGE - 16u)

/*
 * Writes @rec's events (as they are now: filtered, anonymized) to @out as a
 * trace.dat: the formats of the events it holds, a saved_cmdlines of the
 * comms, and per CPU the records in the kernel's ring-buffer page layout,
 * timestamps + @offset_ns.  *@too_big counts records left out because no
 * ring-buffer page holds them (longer than a page's data).  0 or -errno.
 */
int ks_tracedat_write(const struct ks_recording *rec, int64_t offset_ns, FILE *out, uint64_t *too_big);

#endif
