/* Latency heatmaps from a series: one row's histograms over time as a grid of cells (data), and the SVG writer that draws the grids. */
#ifndef KS_OUTPUT_HEATMAP_H
#define KS_OUTPUT_HEATMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "core/series.h"
#include "output/output.h"

/* One time column: a report of the row's collector. */
struct ks_heatmap_col {
	double t0, t1; /* its window, seconds since the series' start */
	int interval;  /* the report's interval number */
};

/*
 * One row's grid: a column per report of its collector in the series (the
 * row absent from a report: an empty column), a cell per histogram slot
 * (the collector's log-linear buckets, include/ksight/hist.h) from the
 * lowest to the highest slot with a count in any column.
 */
struct ks_heatmap {
	const char *collector;
	const struct ks_row *row; /* its keys: a row of one of the series' reports */
	const char *hist_name;	  /* e.g. "latency_ns" */
	enum ks_unit unit;
	int ncols;
	struct ks_heatmap_col *cols;
	unsigned int lo, nb; /* slots lo .. lo + nb - 1; nb 0: no count anywhere */
	uint64_t *cells;     /* ncols * nb counts, column by column */
	uint64_t max, total; /* the largest cell, the sum of all */
};

/* @h for @row (keys) of @collector's reports in @s; 0 or -ENOMEM.  Release with ks_heatmap_release. */
int ks_heatmap_build(struct ks_heatmap *h, const struct ks_series *s, const char *collector, const struct ks_row *row);
void ks_heatmap_release(struct ks_heatmap *h);
/* The count of column @col in slot @slot (0 outside the grid). */
uint64_t ks_heatmap_cell(const struct ks_heatmap *h, int col, unsigned int slot);

/* The colour of a cell of @n of at most @max ("#rrggbb"): viridis on a log scale, as every heatmap draws it. */
void ks_heatmap_colour(uint64_t n, uint64_t max, char buf[8]);

/*
 * The rows of @collector that have a histogram in some report of @s, by
 * their count summed over the series (decreasing; ties in order of first
 * appearance), at most @n (0: all): *@rows is malloc'd, the pointers are
 * into @s.  0 or -ENOMEM.
 */
int ks_heatmap_rows(const struct ks_series *s, const char *collector, int n, const struct ks_row ***rows, int *nrows);

/*
 * An SVG document of heatmaps: for each collector in @s, its top @top_n
 * rows (0: all) as ks_heatmap_rows orders them; time across, buckets up,
 * count as colour (viridis, log scale; empty cells not drawn), a <title>
 * on each cell.  Names go through the one sanitizer.  0 or negative errno.
 */
int ks_write_heatmap(const struct ks_series *s, int top_n, FILE *out);

/* --heatmap FILE of a run: the file (opened before anything loads) and the series it is drawn from. */
struct ks_heatmap_out {
	struct ks_sink sink;
	struct ks_series *series; /* NULL: no --heatmap */
	int top_n;
};

/*
 * Opens @path (NULL: no heatmap, 0) the way -o is opened (not emptied, a
 * symbolic link refused, "-" standard output) and makes the series of
 * @budget bytes (0: KS_SERIES_BUDGET).  A
 * FIFO or anything else not a regular file is refused: the SVG is written
 * whole at the end.  0, or negative errno after a one-line error.
 */
int ks_heatmap_out_open(struct ks_heatmap_out *o, const char *path, int top_n, size_t budget);
/*
 * With @started, writes the heatmap of the series to the file; without,
 * removes a file the open made.  Frees the series; a second call does
 * nothing.  0, or negative errno after a one-line error.
 */
int ks_heatmap_out_close(struct ks_heatmap_out *o, bool started);

#endif
