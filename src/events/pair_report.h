/* A recording's latency pairs and per-event counts as reports. */
#ifndef KS_FORMAT_PAIR_REPORT_H
#define KS_FORMAT_PAIR_REPORT_H

#include "core/report.h"
#include "events/pair.h"
#include "format/recording.h"

/* Parses a --pair spec and --key fields against @rec's formats (ks_pair_parse_tep). */
int ks_pair_parse(struct ks_pair *p, const struct ks_recording *rec, const char *spec, const char *keys);
/* Calls @fn with each latency of @p (ns), in the order the ends come; 0 or -ENOMEM. */
int ks_pair_each(const struct ks_recording *rec, const struct ks_pair *p, void (*fn)(void *ctx, uint64_t ns),
		 void *ctx, struct ks_pair_counts *pc);
/* Adds one row per pair (count, unmatched, latency histogram) to @r, and its schema (names read whole). */
int ks_pairs_report(const struct ks_recording *rec, const struct ks_pair *pairs, int n, struct ks_report *r);
/* Adds one row per event: count and rate over the recording's span, and its schema (names read whole). */
int ks_events_report(const struct ks_recording *rec, struct ks_report *r);

#endif
