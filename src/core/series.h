/* A run's interval reports in order (a ring bounded by a byte budget), and one row's values over time found by its keys. */
#ifndef KS_CORE_SERIES_H
#define KS_CORE_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/report.h"

/*
 * The budget a run's series gets unless told otherwise: a 300 s session at
 * -i 1 of one collector with 20 histogram rows takes about 55 MiB (a row's
 * histogram is 7.8 KiB).
 */
#define KS_SERIES_BUDGET (64ull << 20)

struct ks_series;

/* An empty series that keeps at most @budget bytes of reports; NULL with errno set. */
struct ks_series *ks_series_new(size_t budget);
void ks_series_free(struct ks_series *s);

/*
 * Appends @r, taking its rows, histograms and strings (@r is left empty,
 * ready for ks_report_free); @r's const pointers (collector, schema, cmd,
 * budget, key and column names) must outlive the series.  Reports with the
 * same r->interval (one per collector of a `run`) are one interval.  When
 * the kept reports would pass the budget, the oldest intervals are dropped
 * whole and counted (ks_series_dropped); the interval @r belongs to is
 * kept even when it alone passes the budget.  0, or -ENOMEM with @r untouched.
 */
int ks_series_add(struct ks_series *s, struct ks_report *r);

/* Reports kept, oldest first: ks_series_at(s, 0 .. ks_series_len(s) - 1). */
size_t ks_series_len(const struct ks_series *s);
const struct ks_report *ks_series_at(const struct ks_series *s, size_t i);
/* Intervals dropped to keep within the budget, since the start. */
uint64_t ks_series_dropped(const struct ks_series *s);
/* Bytes the kept reports hold (rows, histograms, breakdowns, strings, the row index), and the budget. */
size_t ks_series_bytes(const struct ks_series *s);
size_t ks_series_budget(const struct ks_series *s);
/*
 * Where the run began: the window start (CLOCK_MONOTONIC, and CLOCK_REALTIME)
 * of the first report ever added, kept when that report is dropped, so
 * times stay "since the start".  false before the first timed report.
 */
bool ks_series_start(const struct ks_series *s, struct timespec *mono, struct timespec *wall);

/*
 * The row of report @i whose keys equal @like's (names, kinds and values,
 * in order), or NULL: a row over time is this for i = 0 .. len - 1 (with
 * the same collector).  A hash lookup, built when the report was added.
 */
const struct ks_row *ks_series_row(const struct ks_series *s, size_t i, const struct ks_row *like);

/* Row identity: true when @a and @b have the same keys; and a hash that agrees with it. */
bool ks_row_keys_eq(const struct ks_row *a, const struct ks_row *b);
uint64_t ks_row_keys_hash(const struct ks_row *row);

/* Bytes ks_series_add counts for @r (its allocations, without the report struct itself). */
size_t ks_series_report_bytes(const struct ks_report *r);

#endif
