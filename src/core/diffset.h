/* `ksight diff` on collector reports: rows of two JSON files matched by their keys, compared, and --fail-on gates judged. */
#ifndef KS_CORE_DIFFSET_H
#define KS_CORE_DIFFSET_H

#include <stdbool.h>
#include <stddef.h>
#include "core/gate.h"
#include "core/hist.h"
#include "core/histtest.h"
#include "core/strindex.h"

#define KS_DKEYS 8
#define KS_DCOLS 16

/* One row of one collector: every interval of a file with the same keys, merged. */
struct ks_drow {
	char collector[32];
	int nkeys;
	char *names[KS_DKEYS], *vals[KS_DKEYS];
	char *label;		/* "KEY=VALUE KEY=VALUE": the row's identity across files */
	struct ks_hist h;	/* the row's main histogram (its first), merged */
	bool has_hist;
	char unit[8];		/* the histogram's unit: ns, bytes, count */
	uint64_t count;		/* the row's "count" value summed, else the histogram's count */
};

/* One file of collector reports (a document, a -i series, `run`'s several collectors). */
struct ks_dset {
	const char *file;
	struct ks_drow *rows;
	size_t n, cap;
	int ncol;
	struct {
		char name[32];
		int docs;	/* reports (intervals) read */
		double duration_s; /* their windows summed */
	} col[KS_DCOLS];
	struct ks_strindex idx; /* rows by collector and label */
};

struct json_object;
/*
 * Adds a histogram object as the JSON writer renders it ({unit, count, max,
 * sum, buckets: [[low, high, count]...]}) to @h, its unit into @unit: 0, or
 * -EBADMSG when a bucket is not one of the layout's slots or a count would wrap.
 */
int ks_hist_add_json(struct ks_hist *h, struct json_object *o, char *unit, size_t ulen);
struct ks_schema;
/* Whether member @name (value @v) of a JSON row is a key column: a string, or a number @s declares a key (pid, nr). */
bool ks_json_is_key(const struct ks_schema *s, const char *name, struct json_object *v);

/* Reads @file: 0, or -errno / -EBADMSG with a one-line reason in @err. */
int ks_dset_load(struct ks_dset *d, const char *file, char *err, size_t errlen);
/*
 * Adds the JSON documents in @buf (@len bytes) to @d, whose @file names
 * them in errors (a recording's collector reports, fed one at a time by
 * `diff`); then ks_dset_done.  0, or -EBADMSG / -E2BIG / -ENOMEM with one
 * line in @err.
 */
int ks_dset_add_json(struct ks_dset *d, const char *buf, size_t len, char *err, size_t errlen);
/* After the last ks_dset_add_json: -EBADMSG (said in @err) when @d holds no report. */
int ks_dset_done(struct ks_dset *d, char *err, size_t errlen);
void ks_dset_free(struct ks_dset *d);
/* The row of collector @col with keys @label ("" for a keyless row), or NULL. */
const struct ks_drow *ks_dset_find(const struct ks_dset *d, const char *col, const char *label);

/* The rows of A and B side by side: each row present in either, A's order then B's new ones. */
struct ks_dcmp {
	const struct ks_drow *r[2];	/* A's and B's, either may be NULL (an empty side) */
	const struct ks_drow *any;	/* the one that is there, for keys and unit */
	struct ks_mwu mwu;
	bool tested;			/* both sides have histogram values */
	struct ks_qci ci[2][4];		/* p50 p90 p99 p999 of each side at the row's level */
	double count_z, count_p;
	int shift;			/* +1 B slower (larger), -1 faster, 0 no significant shift */
};

struct ks_gate_hit {
	int gate;
	size_t row;
	double a, b;			/* the metric's values */
	bool holds, significant;
	double p;			/* the test's p-value where it has one, else NaN */
	struct ks_qci ci[2];		/* percentile metrics: A's and B's interval */
};

struct ks_diff {
	double alpha;		/* as given (--alpha) */
	double alpha_row;	/* Bonferroni: alpha / rows compared */
	double alpha_gate;	/* Bonferroni: alpha / (gate, row) pairs judged */
	struct ks_dcmp *rows;
	size_t n;
	struct ks_gate_hit *hits; /* every (gate, row) judged */
	size_t nhits, nfired;
	const struct ks_dset *side[2];
};

/* Matches and compares @a and @b, then judges @gates: 0 or -ENOMEM. */
int ks_diff_run(struct ks_diff *d, const struct ks_dset *a, const struct ks_dset *b, double alpha,
		const struct ks_gate *gates, int ngates);
void ks_diff_free(struct ks_diff *d);
/* The value of @m for a side's row (@r may be NULL: 0). */
double ks_drow_metric(const struct ks_drow *r, enum ks_gate_metric m);
/* The quantiles the comparison shows, in ks_dcmp.ci order. */
extern const double ks_diff_qs[4];

#endif
