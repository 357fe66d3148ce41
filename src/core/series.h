/* A run's interval reports in order (a ring bounded by a byte budget), and one row's values over time found by its keys. */
#ifndef KS_CORE_SERIES_H
#define KS_CORE_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/report.h"

/*
 * The budget a run's series gets unless told otherwise (--series-memory):
 * a kept row costs its struct ks_row (1.2 KiB) and its histograms packed,
 * a few bytes per slot with a count (dense, a histogram is 7.8 KiB).
 */
#define KS_SERIES_BUDGET (64ull << 20)

struct ks_series;

/* An empty series that keeps at most @budget bytes of reports; NULL with errno set. */
struct ks_series *ks_series_new(size_t budget);
void ks_series_free(struct ks_series *s);

/*
 * Appends @r, taking its rows, histograms (packed: ks_series_hist below)
 * and strings (@r is left empty, ready for ks_report_free); @r's const pointers (collector, schema, cmd,
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
/* Intervals dropped to keep within the budget, since the start; and the intervals kept. */
uint64_t ks_series_dropped(const struct ks_series *s);
size_t ks_series_intervals(const struct ks_series *s);
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

/* Bytes ks_series_add counts for @r, a report about to be added (its allocations as kept, without the report struct itself). */
size_t ks_series_report_bytes(const struct ks_report *r);

/*
 * A kept report's histograms are held sparsely, only the slots with a
 * count: a kept row's hist and xhist[].h are NULL (the xhists' names and
 * units stay) and these read them back.  @row is a row of report @i
 * (ks_series_row's, or ks_series_at(s, i)->rows[j]); @which is 0 for the
 * row's histogram, 1 .. nxhist for xhist[which - 1].
 */
struct ks_hist_view {
	uint64_t count, sum, max; /* as added */
	unsigned int nslots;	  /* slots with a count */
	/* private: the packed slots not read yet */
	const uint8_t *p, *end;
	unsigned int next, left;
	bool bad;
};
/* Opens the histogram; false when the row has none. */
bool ks_series_hist_view(const struct ks_series *s, size_t i, const struct ks_row *row, int which,
			 struct ks_hist_view *v);
/* The next slot with a count (increasing) and its count; false past the last. */
bool ks_hist_view_next(struct ks_hist_view *v, unsigned int *slot, uint64_t *n);
/* The histogram whole into @out, every field exactly as it was added; 0, or -ENOENT when the row has none. */
int ks_series_hist(const struct ks_series *s, size_t i, const struct ks_row *row, int which, struct ks_hist *out);

/*
 * The packed form itself: @h into @buf (NULL: only the length), returning
 * its length (at most 4 * 10 + 976 * 12 bytes); a view of, or the whole
 * histogram from, @len packed bytes: 0, or -EINVAL when they are not one
 * histogram ks_hist_pack wrote.
 */
size_t ks_hist_pack(const struct ks_hist *h, uint8_t *buf);
int ks_hist_view_init(struct ks_hist_view *v, const uint8_t *buf, size_t len);
int ks_hist_unpack(const uint8_t *buf, size_t len, struct ks_hist *out);

#endif
