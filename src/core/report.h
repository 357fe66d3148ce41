/* The data every collector hands to the writers: rows of keys, counters, a histogram and a breakdown. */
#ifndef KS_CORE_REPORT_H
#define KS_CORE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "core/hist.h"

#define KS_ROW_KEYS 3
#define KS_ROW_VALS 10
#define KS_ROW_XHISTS 4
#define KS_REPORT_META 12

/* A key column: a string (syscall name, comm) or a number (pid, nr). */
struct ks_key {
	const char *name;
	bool is_num;
	int64_t num;
	char str[48];
};

enum ks_val_kind {
	KS_VAL_COUNT, /* plain counter */
	KS_VAL_NS,    /* a duration in nanoseconds, shown as ms in text */
};

struct ks_val {
	const char *name;
	enum ks_val_kind kind;
	uint64_t v;
};

/* What a histogram's values measure, for the text rendering. */
enum ks_unit {
	KS_UNIT_NS,    /* durations: ns, us, ms, s */
	KS_UNIT_BYTES, /* sizes: B, KiB, MiB */
	KS_UNIT_COUNT, /* plain numbers, e.g. a queue depth */
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
};

/* Report-level facts: filters, loss counters, settings. */
struct ks_meta {
	const char *name;
	bool is_num;
	uint64_t num;
	char str[128];
};

struct ks_budget;

struct ks_report {
	const char *collector;
	const char *hook;	/* hook variant the loader chose */
	const char *hist_name;	/* JSON name of the row histogram, e.g. "latency_ns" */
	const char *hist_cols;	/* text: prefix of the percentile columns, e.g. "rtt_" (NULL: none) */
	bool keys_whole;	/* text: key columns as wide as their longest value, never cut */
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
};

void ks_report_init(struct ks_report *r, const char *collector, const char *hook);
/* Drops rows and their data, keeps the header fields. */
void ks_report_clear(struct ks_report *r);
void ks_report_free(struct ks_report *r);
/* Returns a zeroed row, or NULL when out of memory. */
struct ks_row *ks_report_add_row(struct ks_report *r);
void ks_row_key_str(struct ks_row *row, const char *name, const char *v);
void ks_row_key_num(struct ks_row *row, const char *name, int64_t v);
void ks_row_val(struct ks_row *row, const char *name, enum ks_val_kind kind, uint64_t v);
int ks_row_sub_add(struct ks_row *row, const char *name, uint64_t count);
/* Adds an extra histogram; takes ownership of @h (freed on -ENOSPC too). */
int ks_row_xhist(struct ks_row *row, const char *name, enum ks_unit unit, struct ks_hist *h);
void ks_report_meta_str(struct ks_report *r, const char *name, const char *v);
void ks_report_meta_num(struct ks_report *r, const char *name, uint64_t v);
/* Records one loss counter (shown even when 0) and adds it to r->lost. */
void ks_report_lost(struct ks_report *r, const char *name, uint64_t v);
/* A report-wide counter (e.g. unmatched completions), JSON "counters"; omitted when none are set. */
void ks_report_counter(struct ks_report *r, const char *name, uint64_t v);
/* Sorts rows by decreasing sort key, ties by first key. */
void ks_report_sort(struct ks_report *r);

/* The two writers.  JSON is one document (a line, under -i). */
int ks_report_write_text(const struct ks_report *r, FILE *out);
int ks_report_write_json(const struct ks_report *r, FILE *out);
/* The familiar "usecs : count | distribution" layout of one histogram. */
void ks_hist_write_text(const struct ks_hist *h, FILE *out, const char *indent);
void ks_hist_write_text_unit(const struct ks_hist *h, enum ks_unit unit, FILE *out, const char *indent);
/* "p50 1.2us p90 ... count N" */
void ks_hist_write_pct_line(const struct ks_hist *h, FILE *out);
void ks_hist_write_pct_line_unit(const struct ks_hist *h, enum ks_unit unit, FILE *out);
/* Formats @ns for humans: 950ns, 12.3us, 4.56ms, 7.89s. */
const char *ks_fmt_ns(uint64_t ns, char *buf, size_t len);
/* Formats @v in @unit: ks_fmt_ns, or 512B / 4KiB / 1.5MiB, or a plain number. */
const char *ks_fmt_unit(enum ks_unit unit, uint64_t v, char *buf, size_t len);

#endif
