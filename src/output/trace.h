/* Renderings of a recording's events: ftrace `trace` text, JSON lines, CSV, Chrome/Perfetto trace-event JSON. */
#ifndef KS_OUTPUT_TRACE_H
#define KS_OUTPUT_TRACE_H

#include <stdio.h>
#include "format/recording.h"

enum ks_trace_fmt { KS_TRACE_TEXT, KS_TRACE_JSON, KS_TRACE_CSV };

/* @offset_ns is added to every timestamp (0: CLOCK_MONOTONIC; realtime - monotonic: CLOCK_REALTIME). */
int ks_trace_write(const struct ks_recording *rec, enum ks_trace_fmt fmt, int64_t offset_ns, FILE *out);
/* A track per thread (named from the comms, in its process): slices of the time it ran from sched_switch
 * (their CPU in args.cpu), instants for the other events; microseconds printed exactly from the ns. */
int ks_trace_write_perfetto(const struct ks_recording *rec, int64_t offset_ns, FILE *out);

#endif
