/* The report data model every collector fills and every writer (src/output/) renders: rows, meta, sort, copies. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/report.h"

void ks_report_init(struct ks_report *r, const char *collector, const char *hook)
{
	memset(r, 0, sizeof(*r));
	r->collector = collector;
	r->hook = hook;
	r->hist_name = "latency_ns";
	r->hist_text = true;
}

static void row_free(struct ks_row *row)
{
	free(row->hist);
	free(row->sub);
	for (int x = 0; x < row->nxhist; x++)
		free(row->xhist[x].h);
}

void ks_report_clear(struct ks_report *r)
{
	for (int i = 0; i < r->nrows; i++)
		row_free(&r->rows[i]);
	r->nrows = 0;
	r->lost = 0;
	r->nlost = 0;
	r->ncounters = 0;
}

static void meta_free(struct ks_meta *m, int n)
{
	for (int i = 0; i < n; i++) {
		free(m[i].str);
		m[i].str = NULL;
	}
}

void ks_report_free(struct ks_report *r)
{
	ks_report_clear(r);
	free(r->rows);
	r->rows = NULL;
	r->cap = 0;
	meta_free(r->meta, r->nmeta);
	r->nmeta = 0;
	for (int i = 0; i < r->nlists; i++) {
		for (int k = 0; k < r->lists[i].n; k++)
			free(r->lists[i].items[k]);
		free(r->lists[i].items);
	}
	r->nlists = 0;
}

struct ks_row *ks_report_add_row(struct ks_report *r)
{
	if (r->nrows == r->cap) {
		int cap = r->cap ? r->cap * 2 : 64;
		struct ks_row *n = realloc(r->rows, (size_t)cap * sizeof(*n));

		if (!n)
			return NULL;
		r->rows = n;
		r->cap = cap;
	}
	memset(&r->rows[r->nrows], 0, sizeof(r->rows[0]));
	return &r->rows[r->nrows++];
}

/*
 * Copies @s into @dst (@len bytes); a longer string is cut before a UTF-8
 * continuation byte, never inside a character, and ends in "...".
 */
static void copy_cut(char *dst, size_t len, const char *s)
{
	size_t n = strlen(s), keep;

	if (n < len) {
		memcpy(dst, s, n + 1);
		return;
	}
	keep = len - 4;
	while (keep && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	memcpy(dst, s, keep);
	memcpy(dst + keep, "...", 4);
}

int ks_row_key_str(struct ks_row *row, const char *name, const char *v)
{
	struct ks_key *k;

	if (row->nkeys >= KS_ROW_KEYS) {
		row->overflow++;
		return -ENOSPC;
	}
	k = &row->keys[row->nkeys++];
	k->name = name;
	k->is_num = false;
	copy_cut(k->str, sizeof(k->str), v ? v : "");
	return 0;
}

int ks_row_key_num(struct ks_row *row, const char *name, int64_t v)
{
	struct ks_key *k;

	if (row->nkeys >= KS_ROW_KEYS) {
		row->overflow++;
		return -ENOSPC;
	}
	k = &row->keys[row->nkeys++];
	k->name = name;
	k->is_num = true;
	k->num = v;
	snprintf(k->str, sizeof(k->str), "%" PRId64, v);
	return 0;
}

int ks_row_val(struct ks_row *row, const char *name, enum ks_val_kind kind, uint64_t v)
{
	if (row->nvals >= KS_ROW_VALS) {
		row->overflow++;
		return -ENOSPC;
	}
	row->vals[row->nvals++] = (struct ks_val){ .name = name, .kind = kind, .v = v };
	return 0;
}

int ks_row_col(struct ks_row *row, const struct ks_column *col, uint64_t v)
{
	static const enum ks_val_kind kinds[] = {
		[KS_COL_COUNTER] = KS_VAL_COUNT,
		[KS_COL_GAUGE] = KS_VAL_GAUGE,
		[KS_COL_DURATION] = KS_VAL_NS,
		[KS_COL_BYTES] = KS_VAL_BYTES,
	};

	return ks_row_val(row, col->name, kinds[col->kind], v);
}

int ks_row_gauge(struct ks_row *row, const struct ks_column *col, bool has, uint64_t v, enum ks_gauge_merge merge)
{
	int err = ks_row_val(row, col->name, KS_VAL_GAUGE, has ? v : 0);

	if (!err) {
		row->vals[row->nvals - 1].none = !has;
		row->vals[row->nvals - 1].merge = merge;
	}
	return err;
}

int ks_row_sub_add(struct ks_row *row, const char *name, uint64_t count)
{
	struct ks_sub *n = realloc(row->sub, (size_t)(row->nsub + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	row->sub = n;
	snprintf(n[row->nsub].name, sizeof(n[0].name), "%s", name);
	n[row->nsub++].count = count;
	return 0;
}

int ks_row_xhist(struct ks_row *row, const char *name, enum ks_unit unit, struct ks_hist *h)
{
	if (row->nxhist >= KS_ROW_XHISTS) {
		free(h);
		row->overflow++;
		return -ENOSPC;
	}
	row->xhist[row->nxhist++] = (struct ks_xhist){ .name = name, .unit = unit, .h = h };
	return 0;
}

static struct ks_meta *meta_add(struct ks_meta *arr, int *n, const char *name)
{
	if (*n >= KS_REPORT_META)
		return NULL;
	memset(&arr[*n], 0, sizeof(arr[0]));
	arr[*n].name = name;
	return &arr[(*n)++];
}

void ks_report_meta_str(struct ks_report *r, const char *name, const char *v)
{
	struct ks_meta *m = meta_add(r->meta, &r->nmeta, name);

	/* whole: a long cgroup path is not cut (issue 10 #14) */
	if (m)
		m->str = strdup(v ? v : "");
	if (m && !m->str)
		r->nmeta--;
	if (!m || !m->str)
		r->overflow++;
}

void ks_report_meta_num(struct ks_report *r, const char *name, uint64_t v)
{
	struct ks_meta *m = meta_add(r->meta, &r->nmeta, name);

	if (m) {
		m->is_num = true;
		m->num = v;
	} else {
		r->overflow++;
	}
}

int ks_report_list_add(struct ks_report *r, const char *name, const char *item)
{
	struct ks_strlist *l = NULL;
	char **n;

	for (int i = 0; i < r->nlists; i++)
		if (!strcmp(r->lists[i].name, name))
			l = &r->lists[i];
	if (!l) {
		if (r->nlists >= KS_REPORT_LISTS) {
			r->overflow++;
			return -ENOSPC;
		}
		l = &r->lists[r->nlists++];
		*l = (struct ks_strlist){ .name = name };
	}
	n = realloc(l->items, (size_t)(l->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	l->items = n;
	if (!(n[l->n] = strdup(item)))
		return -ENOMEM;
	l->n++;
	return 0;
}

int ks_report_overflow(const struct ks_report *r)
{
	int n = r->overflow;

	for (int i = 0; i < r->nrows; i++)
		n += r->rows[i].overflow;
	return n;
}

void ks_report_lost(struct ks_report *r, const char *name, uint64_t v)
{
	struct ks_meta *m = meta_add(r->lost_by, &r->nlost, name);

	if (m) {
		m->is_num = true;
		m->num = v;
	} else {
		r->overflow++;
	}
	r->lost += v;
}

void ks_report_counter(struct ks_report *r, const char *name, uint64_t v)
{
	struct ks_meta *m = meta_add(r->counters, &r->ncounters, name);

	if (m) {
		m->is_num = true;
		m->num = v;
	} else {
		r->overflow++;
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct ks_row *x = a, *y = b;

	if (x->sort != y->sort)
		return x->sort < y->sort ? 1 : -1;
	if (x->nkeys && y->nkeys) {
		if (x->keys[0].is_num && y->keys[0].is_num)
			return x->keys[0].num < y->keys[0].num ? -1 : x->keys[0].num > y->keys[0].num;
		return strcmp(x->keys[0].str, y->keys[0].str);
	}
	return 0;
}

void ks_report_sort(struct ks_report *r)
{
	if (r->sort_key && !ks_report_sort_by(r, r->sort_key))
		return;
	if (r->nrows > 1)
		qsort(r->rows, (size_t)r->nrows, sizeof(r->rows[0]), row_cmp);
}

/* Where a sort key is found in a row: a value column, a key column, or the histogram. */
enum sort_src { SRC_NONE, SRC_VAL, SRC_KEY, SRC_HIST };

/* Whether value column @name answers sort key @key: "total" finds "total_ns" too (text headers show durations without the suffix). */
static bool val_named(const char *name, const char *key)
{
	size_t n = strlen(key);

	return !strcmp(name, key) || (!strncmp(name, key, n) && !strcmp(name + n, "_ns"));
}

static enum sort_src find_col(const struct ks_row *row, const char *key, int *idx)
{
	for (int v = 0; v < row->nvals; v++) {
		if (val_named(row->vals[v].name, key)) {
			*idx = v;
			return SRC_VAL;
		}
	}
	for (int k = 0; k < row->nkeys; k++) {
		if (!strcmp(row->keys[k].name, key)) {
			*idx = k;
			return SRC_KEY;
		}
	}
	return SRC_NONE;
}

static const struct {
	const char *name;
	double q; /* < 0: not a percentile */
} hist_keys[] = {
	{ "count", -1 }, { "total", -2 }, { "max", -3 }, { "mean", -4 },
	{ "p50", 0.5 },	 { "p90", 0.9 },  { "p99", 0.99 }, { "p999", 0.999 },
};

static int hist_key(const char *key)
{
	for (size_t i = 0; i < sizeof(hist_keys) / sizeof(hist_keys[0]); i++)
		if (!strcmp(hist_keys[i].name, key))
			return (int)i;
	return -1;
}

static uint64_t hist_value(const struct ks_hist *h, int hk)
{
	double q = hist_keys[hk].q;

	if (!h)
		return 0;
	if (q >= 0)
		return ks_hist_percentile(h, q);
	if (q == -1)
		return h->count;
	if (q == -2)
		return h->sum;
	if (q == -3)
		return h->max;
	return (uint64_t)ks_hist_mean(h);
}

/* Increasing by the string key column named by @arg, ties by row_cmp. */
static int str_key_cmp(const void *a, const void *b, void *arg)
{
	const struct ks_row *x = a, *y = b;
	const char *key = arg;
	int i, j, c;

	if (find_col(x, key, &i) == SRC_KEY && find_col(y, key, &j) == SRC_KEY) {
		c = strcmp(x->keys[i].str, y->keys[j].str);
		if (c)
			return c;
	}
	return row_cmp(a, b);
}

int ks_report_sort_by(struct ks_report *r, const char *key)
{
	enum sort_src src = SRC_NONE;
	int idx = 0, hk = hist_key(key);
	bool str_key = false;

	for (int i = 0; i < r->nrows && src == SRC_NONE; i++)
		src = find_col(&r->rows[i], key, &idx);
	if (src == SRC_NONE && hk >= 0)
		for (int i = 0; i < r->nrows && src == SRC_NONE; i++)
			if (r->rows[i].hist)
				src = SRC_HIST;
	if (src == SRC_NONE)
		return r->nrows ? -ENOENT : 0;
	for (int i = 0; i < r->nrows; i++) {
		struct ks_row *row = &r->rows[i];
		int j;

		row->sort = 0;
		if (src == SRC_HIST) {
			row->sort = hist_value(row->hist, hk);
		} else if (find_col(row, key, &j) == SRC_VAL) {
			row->sort = row->vals[j].v;
		} else if (find_col(row, key, &j) == SRC_KEY) {
			if (row->keys[j].is_num) /* increasing: the smallest number gets the largest sort value */
				row->sort = ~(uint64_t)row->keys[j].num ^ (1ull << 63);
			else
				str_key = true;
		}
	}
	if (r->nrows > 1) {
		if (str_key)
			qsort_r(r->rows, (size_t)r->nrows, sizeof(r->rows[0]), str_key_cmp, (void *)key);
		else
			qsort(r->rows, (size_t)r->nrows, sizeof(r->rows[0]), row_cmp);
	}
	return 0;
}

bool ks_sort_key_valid(const char *key)
{
	if (!*key || strlen(key) > 64)
		return false;
	for (const char *p = key; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

bool ks_schema_sort_key(const struct ks_schema *s, const char *key)
{
	if (!s)
		return true;
	if (s->hist_name && hist_key(key) >= 0)
		return true;
	for (const struct ks_column *c = s->cols; c && c->name; c++)
		if (val_named(c->name, key))
			return true;
	for (const char *const *k = s->keys; k && *k; k++)
		if (!strcmp(*k, key))
			return true;
	return false;
}

static int dup_hist(struct ks_hist **dst, const struct ks_hist *src)
{
	if (!src) {
		*dst = NULL;
		return 0;
	}
	*dst = malloc(sizeof(**dst));
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, sizeof(**dst));
	return 0;
}

int ks_report_copy_row(struct ks_report *r, const struct ks_row *src)
{
	struct ks_row *row = ks_report_add_row(r);

	if (!row)
		return -ENOMEM;
	*row = *src;
	row->hist = NULL;
	row->sub = NULL;
	row->nsub = 0;
	row->nxhist = 0;
	if (dup_hist(&row->hist, src->hist))
		return -ENOMEM;
	if (src->nsub) {
		row->sub = malloc((size_t)src->nsub * sizeof(*row->sub));
		if (!row->sub)
			return -ENOMEM;
		memcpy(row->sub, src->sub, (size_t)src->nsub * sizeof(*row->sub));
		row->nsub = src->nsub;
	}
	for (int x = 0; x < src->nxhist; x++) {
		row->xhist[x] = src->xhist[x];
		if (dup_hist(&row->xhist[x].h, src->xhist[x].h))
			return -ENOMEM;
		row->nxhist++;
	}
	return 0;
}

int ks_report_copy(struct ks_report *dst, const struct ks_report *src)
{
	*dst = *src;
	dst->rows = NULL;
	dst->nrows = dst->cap = 0;
	dst->nmeta = 0;
	dst->nlists = 0;
	memset(dst->meta, 0, sizeof(dst->meta));
	memset(dst->lists, 0, sizeof(dst->lists));
	for (int i = 0; i < src->nmeta; i++) {
		dst->meta[i] = src->meta[i];
		if (src->meta[i].str && !(dst->meta[i].str = strdup(src->meta[i].str)))
			goto nomem;
		dst->nmeta++;
	}
	for (int i = 0; i < src->nlists; i++)
		for (int k = 0; k < src->lists[i].n; k++)
			if (ks_report_list_add(dst, src->lists[i].name, src->lists[i].items[k]))
				goto nomem;
	for (int i = 0; i < src->nrows; i++)
		if (ks_report_copy_row(dst, &src->rows[i]))
			goto nomem;
	return 0;
nomem:
	ks_report_free(dst);
	return -ENOMEM;
}

/* --- a cumulative report: one window's delta added into it (core/accum.c keeps the rows' index, cap and time-to-live) --- */

static int merge_hist(struct ks_hist **dst, const struct ks_hist *src)
{
	if (!src)
		return 0;
	if (!*dst) {
		*dst = calloc(1, sizeof(**dst));
		if (!*dst)
			return -ENOMEM;
	}
	ks_hist_merge(*dst, src);
	return 0;
}

/*
 * Gauge @d of a window into its running value @t: a window without a sample
 * keeps what the last one with a sample left; min and max gauges take the
 * smallest and largest real values, the others the newest.
 */
static void merge_gauge(struct ks_val *t, const struct ks_val *d)
{
	if (d->none)
		return;
	if (t->none || d->merge == KS_GAUGE_LAST || (d->merge == KS_GAUGE_MIN ? d->v < t->v : d->v > t->v))
		t->v = d->v;
	t->none = false;
}

int ks_row_merge(struct ks_row *t, const struct ks_row *d)
{
	int err;

	for (int v = 0; v < d->nvals; v++) {
		int j;

		for (j = 0; j < t->nvals; j++)
			if (!strcmp(t->vals[j].name, d->vals[v].name))
				break;
		if (j == t->nvals) {
			if (!ks_row_val(t, d->vals[v].name, d->vals[v].kind, d->vals[v].v))
				t->vals[t->nvals - 1].none = d->vals[v].none;
			continue;
		}
		if (d->vals[v].kind == KS_VAL_GAUGE)
			merge_gauge(&t->vals[j], &d->vals[v]);
		else
			t->vals[j].v += d->vals[v].v;
	}
	err = merge_hist(&t->hist, d->hist);
	for (int x = 0; x < d->nxhist && !err; x++) {
		int j;

		for (j = 0; j < t->nxhist; j++)
			if (!strcmp(t->xhist[j].name, d->xhist[x].name))
				break;
		if (j == t->nxhist) {
			struct ks_hist *h = calloc(1, sizeof(*h));

			if (!h)
				return -ENOMEM;
			ks_hist_merge(h, d->xhist[x].h);
			err = ks_row_xhist(t, d->xhist[x].name, d->xhist[x].unit, h);
		} else {
			ks_hist_merge(t->xhist[j].h, d->xhist[x].h);
		}
	}
	for (int s = 0; s < d->nsub && !err; s++) {
		int j;

		for (j = 0; j < t->nsub; j++)
			if (!strcmp(t->sub[j].name, d->sub[s].name))
				break;
		if (j == t->nsub)
			err = ks_row_sub_add(t, d->sub[s].name, d->sub[s].count);
		else
			t->sub[j].count += d->sub[s].count;
	}
	t->sort += d->sort;
	return err;
}

static int merge_meta(struct ks_meta *dst, int *n, const struct ks_meta *src, int sn, struct ks_report *r,
		      void (*add)(struct ks_report *, const char *, uint64_t))
{
	for (int i = 0; i < sn; i++) {
		int j;

		for (j = 0; j < *n; j++)
			if (!strcmp(dst[j].name, src[i].name))
				break;
		if (j < *n)
			dst[j].num += src[i].num;
		else if (add)
			add(r, src[i].name, src[i].num);
	}
	return 0;
}

void ks_report_merge_head(struct ks_report *t, const struct ks_report *d)
{
	if (!t->hook && d->hook)
		t->hook = d->hook;
	t->hist_name = d->hist_name;
	t->sub_name = d->sub_name;
	t->hist_unit = d->hist_unit;
	t->hist_text = d->hist_text;
	t->budget = d->budget;
	t->duration_s += d->duration_s;
	t->lost += d->lost;
	merge_meta(t->lost_by, &t->nlost, d->lost_by, d->nlost, t, NULL);
	/* lost is already summed above: new causes go in without adding twice */
	for (int i = 0; i < d->nlost; i++) {
		int j;

		for (j = 0; j < t->nlost; j++)
			if (!strcmp(t->lost_by[j].name, d->lost_by[i].name))
				break;
		if (j == t->nlost) {
			ks_report_lost(t, d->lost_by[i].name, d->lost_by[i].num);
			t->lost -= d->lost_by[i].num;
		}
	}
	merge_meta(t->counters, &t->ncounters, d->counters, d->ncounters, t, ks_report_counter);
	if (!t->nmeta)
		for (int i = 0; i < d->nmeta; i++) {
			if (d->meta[i].is_num)
				ks_report_meta_num(t, d->meta[i].name, d->meta[i].num);
			else
				ks_report_meta_str(t, d->meta[i].name, d->meta[i].str);
		}
}

/* The unit is picked after rounding to three digits: 999999ns is 1ms, not "1e+03us". */
const char *ks_fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 999500)
		snprintf(buf, len, "%.3gus", (double)ns / 1e3);
	else if (ns < 999500000)
		snprintf(buf, len, "%.3gms", (double)ns / 1e6);
	else if (ns < 999500000000ull)
		snprintf(buf, len, "%.3gs", (double)ns / 1e9);
	else
		snprintf(buf, len, "%.0fs", (double)ns / 1e9);
	return buf;
}

const char *ks_fmt_unit(enum ks_unit unit, uint64_t v, char *buf, size_t len)
{
	if (unit == KS_UNIT_NS)
		return ks_fmt_ns(v, buf, len);
	/* as ks_fmt_ns, the unit after rounding: 1047552 bytes is 0.999MiB, not "1.02e+03KiB" */
	if (unit == KS_UNIT_COUNT || v < 1024)
		snprintf(buf, len, "%" PRIu64 "%s", v, unit == KS_UNIT_BYTES ? "B" : "");
	else if (v < 999.5 * 1024)
		snprintf(buf, len, "%.3gKiB", (double)v / 1024);
	else if (v < 999.5 * 1024 * 1024)
		snprintf(buf, len, "%.3gMiB", (double)v / (1024 * 1024));
	else
		snprintf(buf, len, "%.3gGiB", (double)v / (1024.0 * 1024 * 1024));
	return buf;
}

