/* `report --html`: a recording as one self-contained HTML page (manifest, percentile tables, heatmaps, events, losses and cost, flame graphs). */
#ifndef KS_OUTPUT_REPORT_HTML_H
#define KS_OUTPUT_REPORT_HTML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "core/report.h"
#include "core/series.h"
#include "output/stacks.h"

/* A manifest line; an event type and how many the recording holds. */
struct ks_html_kv {
	const char *key, *val;
};
struct ks_html_count {
	const char *name;
	uint64_t n;
};

/* One collector's losses and cost over its intervals (what `info` sums). */
struct ks_html_cost {
	const char *collector;
	uint64_t intervals, lost, bpf_run_ns, bpf_run_cnt;
	double window_s;
	bool whole_window; /* a whole-window report was kept (the recording was not cut) */
	bool bpf_stats;	   /* BPF run time was kept (kernel.bpf_stats_enabled) */
};

/*
 * Everything the page shows; any part may be empty (NULL / 0).  Every
 * string is a stranger's bytes: the writer sanitizes and HTML-quotes it.
 */
struct ks_html_in {
	const char *title; /* the recording's file name */
	const struct ks_html_kv *manifest; /* its "note" is shown first, as the question asked */
	int nmanifest;
	uint64_t end_realtime_ns; /* when the recording ended (its trailer's clock); 0: unknown (cut) */
	const struct ks_report *totals; /* whole-window reports: a percentile table each */
	int ntotals;
	int table_rows;			/* rows per table (0: 100) */
	const struct ks_series *series; /* interval reports: heatmaps of each collector's top rows */
	int heatmap_rows;		/* rows per collector (0: 3) */
	const struct ks_html_count *events; /* raw events per type */
	int nevents;
	uint64_t events_lost; /* events lost by the recorder, all CPUs */
	const struct ks_html_cost *cost;
	int ncost;
	uint64_t ksight_cpu_us; /* the process's CPU over the intervals */
	/* stack profiles, each drawn as a flame graph (ks_write_svg) when given */
	const struct ks_stacks *oncpu, *offcpu;
};

/*
 * The page: UTF-8, inline CSS and SVG only (no script, nothing fetched: a
 * Content-Security-Policy of default-src 'none' says so to the browser).
 * 0 or negative errno.
 */
int ks_write_report_html(const struct ks_html_in *in, FILE *out);
/* The start of such a page (the policy, the style, <body>), titled @what and @name (a stranger's bytes, quoted); diff --html's too. */
void ks_html_head(FILE *out, const char *what, const char *name);

#endif
