/* The data every collector hands to the writers: rows of keys, counters, a histogram and a breakdown. */
#ifndef KS_CORE_REPORT_H
#define KS_CORE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "core/hist.h"

/* A row past one of these limits is an error (-ENOSPC, counted in the report's overflow), never a silent drop. */
#define KS_ROW_KEYS 4
#define KS_ROW_VALS 24
#define KS_ROW_XHISTS 4
#define KS_REPORT_META 16
#define KS_REPORT_LISTS 4
/* A string key longer than this is cut at a UTF-8 boundary and ends in "..." */
#define KS_KEY_STR 96

/* A key column: a string (syscall name, comm, cgroup path) or a number (pid, nr). */
struct ks_key {
	const char *name;
	bool is_num;
	int64_t num;
	char str[KS_KEY_STR];
};

enum ks_val_kind {
	KS_VAL_COUNT, /* plain counter, summed across intervals */
	KS_VAL_NS,    /* a duration in nanoseconds (summed), shown with one time unit per column in text */
	KS_VAL_GAUGE, /* a level at the end of the window (not summed) */
	KS_VAL_BYTES, /* a byte count, summed */
};

/* How an accumulator combines a gauge's windows (ks_row_gauge); KS_GAUGE_LAST is every other gauge's rule. */
enum ks_gauge_merge {
	KS_GAUGE_LAST, /* the newest window's value */
	KS_GAUGE_MIN,  /* the smallest of the windows' values */
	KS_GAUGE_MAX,  /* the largest */
};

struct ks_val {
	const char *name;
	enum ks_val_kind kind;
	uint64_t v;
	/* appended: a gauge the window had no sample of (v is 0 then), which must not overwrite the last real one */
	bool none;
	enum ks_gauge_merge merge;
};

/* What a histogram's (or a column's) values measure, for the text rendering. */
enum ks_unit {
	KS_UNIT_NS,    /* durations: ns, us, ms, s */
	KS_UNIT_BYTES, /* sizes: B, KiB, MiB */
	KS_UNIT_COUNT, /* plain numbers, e.g. a queue depth */
};

/*
 * The report schema: a collector declares each value column once (issue 11
 * item 3); writers, docs and the exporter's HELP/TYPE lines render from it.
 */
enum ks_col_kind {
	KS_COL_COUNTER,	 /* events since the start of the window; monotonic when accumulated */
	KS_COL_GAUGE,	 /* a level; the last value wins when accumulated */
	KS_COL_DURATION, /* summed time, in @unit (KS_UNIT_NS) */
	KS_COL_BYTES,	 /* summed bytes */
};

struct ks_column {
	const char *name; /* JSON member and text header, e.g. "total_ns" */
	enum ks_col_kind kind;
	enum ks_unit unit;
	const char *help; /* one line for docs, -h and HELP */
};

/* A collector's declared layout: value columns (terminated by a NULL name) and its row histogram. */
struct ks_schema {
	const struct ks_column *cols;
	const char *hist_name; /* JSON member of the row histogram, e.g. "latency_ns"; NULL: none */
	enum ks_unit hist_unit;
	const char *hist_help;
	/* every key column any --by can give its rows, NULL-terminated: --sort is checked against them before attaching */
	const char *const *keys;
	/* text layout, the same in every report of the collector */
	const char *hist_cols; /* prefix of the percentile columns, e.g. "rtt_" (NULL: none) */
	bool keys_whole;       /* key columns as wide as their longest value, never cut */
	int shares;	       /* text: the first column's next @shares columns also as % of it, adding to 100 */
};

/* A histogram beside the row's main one, e.g. "size_bytes"; JSON member @name. */
struct ks_xhist {
	const char *name;
	enum ks_unit unit;
	struct ks_hist *h; /* owned */
};

/* One entry of a row's breakdown, e.g. errno name -> count. */
struct ks_sub {
	char name[32];
	uint64_t count;
};

struct ks_row {
	int nkeys, nvals, nsub;
	struct ks_key keys[KS_ROW_KEYS];
	struct ks_val vals[KS_ROW_VALS];
	struct ks_hist *hist; /* owned; NULL when the row has no histogram */
	struct ks_sub *sub;   /* owned */
	int nxhist;
	struct ks_xhist xhist[KS_ROW_XHISTS]; /* written after the main one */
	uint64_t sort;	      /* rows are shown in decreasing order of this */
	int overflow;	      /* keys, values or histograms that did not fit: the driver fails the report */
};

/* Report-level facts: filters, loss counters, settings.  @str is owned and never cut. */
struct ks_meta {
	const char *name;
	bool is_num;
	uint64_t num;
	char *str;
};

/* A top-level list of strings, e.g. mem's "unavailable" tracepoints. */
struct ks_strlist {
	const char *name;
	int n;
	char **items; /* owned */
};

struct ks_budget;
struct ks_cmd;

struct ks_report {
	const char *collector;
	const char *hook;	/* hook variant the loader chose */
	const char *hist_name;	/* JSON name of the row histogram, e.g. "latency_ns" */
	const char *sub_name;	/* JSON name of the row breakdown, e.g. "errnos" */
	double duration_s;	/* length of the window this report covers */
	int interval;		/* 1-based interval number, 0 for the final report */
	uint64_t lost;		/* sum of every loss counter */
	int top_n;		/* rows shown; 0 for all */
	bool hist_text;		/* draw row histograms in text output */
	int nmeta, nlost;
	struct ks_meta meta[KS_REPORT_META]; /* "filters" members */
	struct ks_meta lost_by[KS_REPORT_META]; /* loss counters by cause */
	int ncounters;
	struct ks_meta counters[KS_REPORT_META]; /* report-wide event counts, not losses */
	const struct ks_budget *budget; /* the maps' memory, JSON "maps"; NULL when not given */
	int nrows, cap;
	struct ks_row *rows;
	/* appended in Core v2; zero-initialised fields keep the old behaviour */
	enum ks_unit hist_unit;		/* unit of the rows' main histogram (default ns) */
	int nlists;
	struct ks_strlist lists[KS_REPORT_LISTS]; /* JSON top-level arrays */
	int overflow;			/* keys, values, meta or lists that did not fit: an error */
	const char *sort_key;		/* --sort; NULL: the collector's own order */
	bool has_time;
	struct timespec wall, mono;	/* end of the window: CLOCK_REALTIME and CLOCK_MONOTONIC */
	const struct ks_schema *schema; /* the collector's declared columns, or NULL */
	const struct ks_cmd *cmd;	/* -- CMD: JSON "command" (its state at the end of the window), or NULL */
};

void ks_report_init(struct ks_report *r, const char *collector, const char *hook);
/* Drops rows and their data, keeps the header fields. */
void ks_report_clear(struct ks_report *r);
void ks_report_free(struct ks_report *r);
/* Returns a zeroed row, or NULL when out of memory. */
struct ks_row *ks_report_add_row(struct ks_report *r);
/*
 * The row setters return 0, or -ENOSPC when the row is full; a full row is
 * also counted in row->overflow, which the driver reports as an error
 * (ks_report_overflow), so callers that ignore the return value lose nothing silently.
 */
int ks_row_key_str(struct ks_row *row, const char *name, const char *v);
int ks_row_key_num(struct ks_row *row, const char *name, int64_t v);
int ks_row_val(struct ks_row *row, const char *name, enum ks_val_kind kind, uint64_t v);
/* A value of a declared column (the kind and name come from @col). */
int ks_row_col(struct ks_row *row, const struct ks_column *col, uint64_t v);
/*
 * A gauge column @col that a row can leave without a sample in one window
 * (@has false: @v is ignored and written as 0); accumulated by @merge over
 * the windows that had one, e.g. tcp's cwnd_min with KS_GAUGE_MIN.
 */
int ks_row_gauge(struct ks_row *row, const struct ks_column *col, bool has, uint64_t v, enum ks_gauge_merge merge);
int ks_row_sub_add(struct ks_row *row, const char *name, uint64_t count);
/* Adds an extra histogram; takes ownership of @h (freed on -ENOSPC too). */
int ks_row_xhist(struct ks_row *row, const char *name, enum ks_unit unit, struct ks_hist *h);
void ks_report_meta_str(struct ks_report *r, const char *name, const char *v);
void ks_report_meta_num(struct ks_report *r, const char *name, uint64_t v);
/* Appends @item to the top-level string list @name (created on first use); 0, -ENOMEM or -ENOSPC. */
int ks_report_list_add(struct ks_report *r, const char *name, const char *item);
/* Records one loss counter (shown even when 0) and adds it to r->lost. */
void ks_report_lost(struct ks_report *r, const char *name, uint64_t v);
/* A report-wide counter (e.g. unmatched completions), JSON "counters" (always there, maybe empty). */
void ks_report_counter(struct ks_report *r, const char *name, uint64_t v);
/* Sorts rows by decreasing sort key, ties by first key; by r->sort_key when set (ks_report_sort_by). */
void ks_report_sort(struct ks_report *r);
/*
 * Sorts rows by @key: count, total, errors, p50, p90, p99, p999, max, mean
 * (the row histogram's, unless a value column has that name), any value
 * column (decreasing; "total" also finds "total_ns") or key column
 * (increasing).  -ENOENT when no row has such a column.
 */
int ks_report_sort_by(struct ks_report *r, const char *key);
/* Keys, values, histograms, meta or lists that did not fit in @r's rows and header. */
int ks_report_overflow(const struct ks_report *r);
/* True when @key could name a sort column of some report (a plain word). */
bool ks_sort_key_valid(const char *key);
/* True when a report of schema @s can have a sort column @key (a value, key or histogram one); true without a schema. */
bool ks_schema_sort_key(const struct ks_schema *s, const char *key);
/* A copy of @src (rows, histograms, breakdowns, meta) into @dst; 0 or -ENOMEM. */
int ks_report_copy(struct ks_report *dst, const struct ks_report *src);
/* A copy of @src's row into a new row of @r; 0 or -ENOMEM. */
int ks_report_copy_row(struct ks_report *r, const struct ks_row *src);
/*
 * Adds delta row @d into cumulative row @t (the same keys): counters,
 * durations, bytes, histograms and breakdowns summed, gauges merged by
 * their rule (ks_row_gauge).  0 or -ENOMEM.
 */
int ks_row_merge(struct ks_row *t, const struct ks_row *d);
/* Adds delta report @d's header into cumulative @t: losses and counters summed by name, hook, layout and meta taken. */
void ks_report_merge_head(struct ks_report *t, const struct ks_report *d);

/* Formats @ns for humans: 950ns, 12.3us, 4.56ms, 7.89s. */
const char *ks_fmt_ns(uint64_t ns, char *buf, size_t len);
/* Formats @v in @unit: ks_fmt_ns, or 512B / 4KiB / 1.5MiB, or a plain number. */
const char *ks_fmt_unit(enum ks_unit unit, uint64_t v, char *buf, size_t len);

#endif
