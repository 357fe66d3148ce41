/* The Prometheus metric model (families of labelled samples) and its three encodings: Prometheus text, OpenMetrics, protobuf. */
#ifndef KS_OUTPUT_PROM_H
#define KS_OUTPUT_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/report.h"

#define PROM_LABELS 12
#define PROM_NAME 128

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

/*
 * A row key (at most KS_KEY_STR bytes) or a pod name fits in @value; longer
 * values are cut, but for the labels prom_label_full adds (cgroup paths: a
 * cut path names another cgroup, or none), whose whole value is in @full.
 */
struct prom_label {
	char name[32];
	char value[128];
	char *full; /* owned; NULL when @value holds the whole value */
};

/* The label's value as the encoders write it. */
static inline const char *prom_label_value(const struct prom_label *l)
{
	return l->full ? l->full : l->value;
}

/*
 * @labels is a refcounted block (prom.c) that the samples of one row share:
 * a row's eleven series hold one copy of its labels, not eleven (a sample
 * with the labels inline took 2 KiB, most of serve's memory per series).
 * prom_label and prom_label_full copy a shared block before changing it.
 */
struct prom_sample {
	int nlabels;
	struct prom_label *labels;   /* NULL when none */
	double value;		     /* counters and gauges */
	const struct ks_hist *hist;  /* histograms: not owned, raw values in the family's unit */
};

/*
 * A metric family: a counter's name carries no "_total" (the encoders add
 * it to the samples, as OpenMetrics wants); a histogram's values are the
 * log-linear slots, divided by @div into base units (ns -> seconds: a
 * division, so 10003000 ns reads back as exactly 0.010003).
 */
struct prom_family {
	char name[PROM_NAME];
	char help[256];
	enum prom_type type;
	enum ks_unit unit; /* histograms: picks the classic bucket bounds */
	double div;
	int n, cap;
	struct prom_sample *s;
};

struct prom_set {
	int n, cap;
	struct prom_family *f;
	/* optional: more labels for a row's sample (serve: pod, namespace, container from a cgroup key) */
	void (*row_labels)(void *ctx, const struct ks_row *row, struct prom_sample *s);
	void *row_ctx;
	int max_series; /* per report: rows beyond it were folded by the accumulator, noted here for help */
};

/* The family @name (created with @help and @type on first use), or NULL when out of memory. */
struct prom_family *prom_family(struct prom_set *set, const char *name, const char *help, enum prom_type type);
/* A new sample of @f with no labels, or NULL when out of memory. */
struct prom_sample *prom_sample_add(struct prom_family *f);
/* Drops @s's hold on its labels (a sample of a set is freed by prom_set_free). */
void prom_sample_free(struct prom_sample *s);
/*
 * Adds a label, its name made valid ([a-zA-Z_][a-zA-Z0-9_]*) and its value
 * sanitized (core/sanitize.h: valid UTF-8, no control bytes, cut between
 * characters), so all three encodings hold valid values; -ENOSPC past PROM_LABELS, -ENOMEM.
 */
int prom_label(struct prom_sample *s, const char *name, const char *value);
/*
 * Sets label @name of @s (added when missing) to @value sanitized in full,
 * never cut: 0, -ENOSPC past PROM_LABELS or -ENOMEM.
 */
int prom_label_full(struct prom_sample *s, const char *name, const char *value);
/* Shorthand: a sample with up to two labels (NULL names skipped) and a value; 0 or -ENOMEM. */
int prom_add(struct prom_set *set, const char *name, const char *help, enum prom_type type, double v,
	     const char *l1, const char *v1, const char *l2, const char *v2);
/*
 * Every row, loss counter, counter and map of cumulative report @r as
 * families "ksight_<collector>_...": names in base units with Prometheus
 * suffixes, HELP from the collector's schema.  Histograms point into @r,
 * which must outlive @set's rendering.  0 or -ENOMEM.
 */
int prom_add_report(struct prom_set *set, const struct ks_report *r);
void prom_set_free(struct prom_set *set);

/*
 * The OpenMetrics unit of @f ("seconds", "bytes"), or NULL: only a family
 * whose name ends in "_<unit>" has one (OpenMetrics refuses a UNIT line
 * that the name does not end with).
 */
const char *prom_unit(const struct prom_family *f);

/* A metric or label name made valid: other bytes become '_'. */
void prom_sanitize(char *s);

/* Classic bucket bounds (raw units) of @unit, ascending, and their number. */
const uint64_t *prom_classic_bounds(enum ks_unit unit, int *n);
/*
 * Cumulative classic bucket counts of @h at the bounds: an observation
 * counts below a bound when its whole log-linear slot does (a slot that
 * straddles a bound goes above it), so no bucket ever over-counts.
 */
void prom_classic_counts(const struct ks_hist *h, const uint64_t *bounds, int n, uint64_t *cum);

/* Native histogram schema: 2^5 buckets per power of two (see prom_native). */
#define PROM_NATIVE_SCHEMA 5
/* The bucket index of value @v (> 0) at PROM_NATIVE_SCHEMA: bucket i holds (2^((i-1)/32), 2^(i/32)]. */
int32_t prom_native_index(double v);

/* Length-delimited io.prometheus.client.MetricFamily messages, histograms native and classic. */
int prom_write_proto(const struct prom_set *set, FILE *out);

#define PROM_CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define PROM_CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define PROM_CT_PROTO "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

enum prom_format { PROM_FMT_TEXT, PROM_FMT_OPENMETRICS, PROM_FMT_PROTO };
/*
 * The @n sets one after the other in @fmt: Prometheus text 0.0.4,
 * OpenMetrics 1.0.0 (one "# EOF" at the end) or protobuf.  A family name
 * must not appear in two sets.  0 or negative errno.
 */
int prom_write(enum prom_format fmt, const struct prom_set *const *sets, int n, FILE *out);

#endif
