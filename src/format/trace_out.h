/* Renderings of a recording's events: ftrace `trace` text, JSON lines, CSV, Chrome/Perfetto trace-event JSON; latency pairs into a report. */
#ifndef KS_FORMAT_TRACE_OUT_H
#define KS_FORMAT_TRACE_OUT_H

#include <stdio.h>
#include "core/report.h"
#include "format/recording.h"

enum ks_trace_fmt { KS_TRACE_TEXT, KS_TRACE_JSON, KS_TRACE_CSV };

/* @offset_ns is added to every timestamp (0: CLOCK_MONOTONIC; realtime - monotonic: CLOCK_REALTIME). */
int ks_trace_write(const struct ks_recording *rec, enum ks_trace_fmt fmt, int64_t offset_ns, FILE *out);
/* A track per CPU: slices of the running task from sched_switch, instants for the other events. */
int ks_trace_write_perfetto(const struct ks_recording *rec, int64_t offset_ns, FILE *out);

/* A latency pair: from an event of @a to the next of @b with the same key fields. */
struct ks_pair {
	const char *spec; /* "sys:a/sys:b" as given */
	struct tep_event *a, *b;
	int nkeys;
	struct tep_format_field *ka[4], *kb[4];
};

/*
 * Parses "sys:a/sys:b" and "f1=f2,f3" against @rec's formats; -EINVAL after
 * one p_err naming the event or field that is not there.
 */
int ks_pair_parse(struct ks_pair *p, const struct ks_recording *rec, const char *spec, const char *keys);
/* Starts and ends a pair run left without partner. */
struct ks_pair_counts {
	uint64_t unmatched; /* ends without a start */
	uint64_t open;	    /* starts without an end at the end of the recording */
	uint64_t restarted; /* starts replaced by a later start of the same key */
};
/* Calls @fn with each latency of @p (ns), in the order the ends come; 0 or -ENOMEM. */
int ks_pair_each(const struct ks_recording *rec, const struct ks_pair *p, void (*fn)(void *ctx, uint64_t ns),
		 void *ctx, struct ks_pair_counts *pc);
/* Adds one row per pair (count, unmatched, latency histogram) to @r. */
int ks_pairs_report(const struct ks_recording *rec, const struct ks_pair *pairs, int n, struct ks_report *r);
/* Adds one row per event: count and rate over the recording's span. */
int ks_events_report(const struct ks_recording *rec, struct ks_report *r);

#endif
