/* Cumulative accumulation for long-running drivers: interval deltas merged into counters that never reset. */
#ifndef KS_CORE_ACCUM_H
#define KS_CORE_ACCUM_H

#include <stdint.h>
#include "core/report.h"

/*
 * Rows are matched by their key tuple (names and values).  Counters,
 * durations, byte counts, breakdowns and histograms are added; gauges take
 * the latest value (ks_row_gauge's: the latest, smallest or largest of the
 * windows that had a sample).  Past @max_rows distinct rows a new key is folded into
 * one "other" row and counted, unless rows no delta changed for idle_marks (set
 * after init) can leave to make room; a row that no delta changed for @ttl_marks
 * marks is dropped (its series ends) and counted.
 */
struct ks_accum {
	struct ks_report total;	 /* the cumulative rows and counters */
	int max_rows;		 /* distinct rows kept besides "other"; 0: no cap */
	uint64_t ttl_marks;	 /* 0: rows never expire */
	uint64_t idle_marks;	 /* at the cap, rows unchanged this long leave before a new key folds (0: never) */
	uint64_t marks;		 /* deltas merged so far */
	uint64_t folds;		 /* delta rows that went to "other" (a counter: never decreases) */
	uint64_t expired;	 /* rows dropped by the time-to-live */
	uint64_t *changed;	 /* per row of total: the mark that last changed it */
	int other;		 /* index of the "other" row, or -1 */
	/* key tuple hash -> row index + 1 (0: empty), open addressing */
	uint32_t *index;
	uint32_t index_cap;
};

int ks_accum_init(struct ks_accum *a, const char *collector, int max_rows, uint64_t ttl_marks);
/* Merges one interval's delta report; 0 or -ENOMEM. */
int ks_accum_add(struct ks_accum *a, const struct ks_report *delta);
/*
 * What a writer reads of the cumulative state as of the last mark, without
 * a copy of it: @out gets the total's header by value (its strings and
 * arrays stay the accumulator's), its rows in order (a sorted array of the
 * rows themselves, whose histograms and breakdowns are the accumulator's)
 * and the counters "other_folds" and "expired_rows".  Valid until the next
 * ks_accum_add or ks_accum_free; freed with ks_accum_view_free.  0 or
 * -ENOMEM.
 */
int ks_accum_view(const struct ks_accum *a, struct ks_report *out);
void ks_accum_view_free(struct ks_report *view);
/*
 * Takes @total (rows, losses, counters; its names must outlive @a) as the
 * cumulative state of a fresh accumulator, "other" at row @other (-1:
 * none) and the fold and expiry counts: how a restarted exporter resumes
 * (serve --pin).  @total is left empty.  0 or -ENOMEM.
 */
int ks_accum_restore(struct ks_accum *a, struct ks_report *total, int other, uint64_t folds, uint64_t expired);
void ks_accum_free(struct ks_accum *a);
/*
 * Takes @base's losses, cause by cause, off @delta's (never below zero);
 * returns how much came off.  A collector's loss counters count in its
 * programs' maps from their load on: the first delta after serve --pin
 * adopted them holds every loss since, and @base (the saved totals) what
 * was already counted of those.  So the losses stay exact across restarts,
 * those while no serve ran and those of a drain a kill -9 kept from being
 * saved included.
 */
uint64_t ks_report_lost_less(struct ks_report *delta, const struct ks_report *base);

#endif
