/* Renderings of a recording's events: ftrace `trace` text, JSON lines, CSV, Chrome/Perfetto trace-event JSON; latency pairs into a report. */
#ifndef KS_FORMAT_TRACE_OUT_H
#define KS_FORMAT_TRACE_OUT_H

#include <stdio.h>
#include "core/report.h"
#include "events/pair.h"
#include "format/recording.h"

enum ks_trace_fmt { KS_TRACE_TEXT, KS_TRACE_JSON, KS_TRACE_CSV };

/* @offset_ns is added to every timestamp (0: CLOCK_MONOTONIC; realtime - monotonic: CLOCK_REALTIME). */
int ks_trace_write(const struct ks_recording *rec, enum ks_trace_fmt fmt, int64_t offset_ns, FILE *out);
/* A track per CPU: slices of the running task from sched_switch, instants for the other events. */
int ks_trace_write_perfetto(const struct ks_recording *rec, int64_t offset_ns, FILE *out);

/* Parses a --pair spec and --key fields against @rec's formats (ks_pair_parse_tep). */
int ks_pair_parse(struct ks_pair *p, const struct ks_recording *rec, const char *spec, const char *keys);
/* Calls @fn with each latency of @p (ns), in the order the ends come; 0 or -ENOMEM. */
int ks_pair_each(const struct ks_recording *rec, const struct ks_pair *p, void (*fn)(void *ctx, uint64_t ns),
		 void *ctx, struct ks_pair_counts *pc);
/* Adds one row per pair (count, unmatched, latency histogram) to @r. */
int ks_pairs_report(const struct ks_recording *rec, const struct ks_pair *pairs, int n, struct ks_report *r);
/* Adds one row per event: count and rate over the recording's span. */
int ks_events_report(const struct ks_recording *rec, struct ks_report *r);

#endif
