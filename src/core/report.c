/* Report data model and its two renderings, text and JSON, shared by every collector. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/report.h"
#include "core/json.h"
#include "core/budget.h"

void ks_report_init(struct ks_report *r, const char *collector, const char *hook)
{
	memset(r, 0, sizeof(*r));
	r->collector = collector;
	r->hook = hook;
	r->hist_name = "latency_ns";
	r->hist_text = true;
}

void ks_report_clear(struct ks_report *r)
{
	for (int i = 0; i < r->nrows; i++) {
		free(r->rows[i].hist);
		free(r->rows[i].sub);
		for (int x = 0; x < r->rows[i].nxhist; x++)
			free(r->rows[i].xhist[x].h);
	}
	r->nrows = 0;
	r->lost = 0;
	r->nlost = 0;
	r->ncounters = 0;
}

void ks_report_free(struct ks_report *r)
{
	ks_report_clear(r);
	free(r->rows);
	r->rows = NULL;
	r->cap = 0;
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

void ks_row_key_str(struct ks_row *row, const char *name, const char *v)
{
	struct ks_key *k;

	if (row->nkeys >= KS_ROW_KEYS)
		return;
	k = &row->keys[row->nkeys++];
	k->name = name;
	k->is_num = false;
	snprintf(k->str, sizeof(k->str), "%s", v);
}

void ks_row_key_num(struct ks_row *row, const char *name, int64_t v)
{
	struct ks_key *k;

	if (row->nkeys >= KS_ROW_KEYS)
		return;
	k = &row->keys[row->nkeys++];
	k->name = name;
	k->is_num = true;
	k->num = v;
	snprintf(k->str, sizeof(k->str), "%" PRId64, v);
}

void ks_row_val(struct ks_row *row, const char *name, enum ks_val_kind kind, uint64_t v)
{
	if (row->nvals >= KS_ROW_VALS)
		return;
	row->vals[row->nvals++] = (struct ks_val){ .name = name, .kind = kind, .v = v };
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

	if (m)
		snprintf(m->str, sizeof(m->str), "%s", v);
}

void ks_report_meta_num(struct ks_report *r, const char *name, uint64_t v)
{
	struct ks_meta *m = meta_add(r->meta, &r->nmeta, name);

	if (m) {
		m->is_num = true;
		m->num = v;
	}
}

void ks_report_lost(struct ks_report *r, const char *name, uint64_t v)
{
	struct ks_meta *m = meta_add(r->lost_by, &r->nlost, name);

	if (m) {
		m->is_num = true;
		m->num = v;
	}
	r->lost += v;
}

void ks_report_counter(struct ks_report *r, const char *name, uint64_t v)
{
	struct ks_meta *m = meta_add(r->counters, &r->ncounters, name);

	if (m) {
		m->is_num = true;
		m->num = v;
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
	if (r->nrows > 1)
		qsort(r->rows, (size_t)r->nrows, sizeof(r->rows[0]), row_cmp);
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
	if (unit == KS_UNIT_COUNT || v < 1024)
		snprintf(buf, len, "%" PRIu64 "%s", v, unit == KS_UNIT_BYTES ? "B" : "");
	else if (v < 1024 * 1024)
		snprintf(buf, len, "%.3gKiB", (double)v / 1024);
	else if (v < 1024 * 1024 * 1024)
		snprintf(buf, len, "%.3gMiB", (double)v / (1024 * 1024));
	else
		snprintf(buf, len, "%.3gGiB", (double)v / (1024.0 * 1024 * 1024));
	return buf;
}

static int shown_rows(const struct ks_report *r)
{
	return r->top_n > 0 && r->top_n < r->nrows ? r->top_n : r->nrows;
}

void ks_hist_write_pct_line(const struct ks_hist *h, FILE *out)
{
	ks_hist_write_pct_line_unit(h, KS_UNIT_NS, out);
}

void ks_hist_write_pct_line_unit(const struct ks_hist *h, enum ks_unit unit, FILE *out)
{
	static const struct { const char *name; double q; } pct[] = {
		{ "p50", 0.50 }, { "p90", 0.90 }, { "p99", 0.99 }, { "p99.9", 0.999 },
	};
	char b[32];

	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
		fprintf(out, "%s %s  ", pct[i].name, ks_fmt_unit(unit, ks_hist_percentile(h, pct[i].q), b, sizeof(b)));
	fprintf(out, "max %s  ", ks_fmt_unit(unit, h->max, b, sizeof(b)));
	fprintf(out, "mean %s  ", ks_fmt_unit(unit, (uint64_t)ks_hist_mean(h), b, sizeof(b)));
	fprintf(out, "count %" PRIu64 "\n", h->count);
}

/*
 * Folds the log-linear slots into power-of-two rows of the display unit;
 * a slot goes to the row that holds its lower bound, so a row boundary is
 * off by at most one slot width (1/16) when the unit is not a power of two.
 */
void ks_hist_write_text(const struct ks_hist *h, FILE *out, const char *indent)
{
	ks_hist_write_text_unit(h, KS_UNIT_NS, out, indent);
}

void ks_hist_write_text_unit(const struct ks_hist *h, enum ks_unit u, FILE *out, const char *indent)
{
	uint64_t rows[65] = { 0 }, peak = 0, div = 1;
	const char *unit = "value";
	int first = -1, last = -1;

	if (u == KS_UNIT_NS) {
		div = h->max >= 10000 ? 1000 : 1;
		unit = div == 1 ? "nsecs" : "usecs";
	} else if (u == KS_UNIT_BYTES) {
		div = h->max >= 10240 ? 1024 : 1;
		unit = div == 1 ? "bytes" : "KiB";
	}

	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		uint64_t v;
		int row;

		if (!h->slots[i])
			continue;
		v = ks_hist_slot_low(i) / div;
		row = v ? (int)ks_log2_u64(v) + 1 : 0;
		rows[row] += h->slots[i];
	}
	for (int i = 0; i < 65; i++) {
		if (!rows[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		if (rows[i] > peak)
			peak = rows[i];
	}
	if (first < 0)
		return;
	fprintf(out, "%s%20s : %-10s distribution\n", indent, unit, "count");
	for (int i = first; i <= last; i++) {
		uint64_t lo = i ? 1ull << (i - 1) : 0, hi = i ? (1ull << i) - 1 : 0;
		int stars = peak ? (int)(rows[i] * 40 / peak) : 0;
		char range[48];

		if (i == 64)
			hi = ~0ull;
		snprintf(range, sizeof(range), "%" PRIu64 " -> %" PRIu64, lo, hi);
		fprintf(out, "%s%20s : %-10" PRIu64 "|%-40.*s|\n", indent, range, rows[i], stars,
			"****************************************");
	}
}

static void write_lost_text(const struct ks_report *r, FILE *out)
{
	fprintf(out, "lost: %" PRIu64, r->lost);
	for (int i = 0; i < r->nlost; i++)
		fprintf(out, "%s%s %" PRIu64, i ? ", " : " (", r->lost_by[i].name, r->lost_by[i].num);
	fputs(r->nlost ? ")\n" : "\n", out);
}

int ks_report_write_text(const struct ks_report *r, FILE *out)
{
	int n = shown_rows(r);
	char b[32];

	if (r->interval)
		fprintf(out, "--- interval %d (%.1fs) ---\n", r->interval, r->duration_s);
	if (!r->nrows) {
		fprintf(out, "no events\n");
	} else {
		const struct ks_row *h0 = &r->rows[0];
		bool has_hist = false;

		for (int i = 0; i < n; i++)
			has_hist |= r->rows[i].hist != NULL;
		int kw[KS_ROW_KEYS];

		/* key widths: 20 and 8, or with keys_whole as wide as the longest value */
		for (int k = 0; k < h0->nkeys; k++) {
			kw[k] = k ? 8 : 20;
			for (int i = 0; r->keys_whole && i < n; i++)
				if (k < r->rows[i].nkeys && (int)strlen(r->rows[i].keys[k].str) > kw[k])
					kw[k] = (int)strlen(r->rows[i].keys[k].str);
		}
		/* header from the first row's layout: all rows of a report share it */
		for (int k = 0; k < h0->nkeys; k++)
			fprintf(out, k ? " %*s" : "%-*s", kw[k], h0->keys[k].name);
		for (int v = 0; v < h0->nvals; v++) {
			/* durations are printed with their unit, so "total_ns" reads "total" */
			const char *name = h0->vals[v].name;
			size_t len = strlen(name);

			if (h0->vals[v].kind == KS_VAL_NS && len > 3 && !strcmp(name + len - 3, "_ns"))
				fprintf(out, " %10.*s", (int)(len - 3), name);
			else
				fprintf(out, " %10s", name);
		}
		if (has_hist) {
			const char *pre = r->hist_cols ? r->hist_cols : "";
			static const char *const cols[] = { "p50", "p90", "p99", "max" };

			for (int c = 0; c < 4; c++) {
				char name[32];

				snprintf(name, sizeof(name), "%s%s", pre, cols[c]);
				fprintf(out, " %9s", name);
			}
		}
		if (r->sub_name)
			fprintf(out, "  %s", r->sub_name);
		fputc('\n', out);
		for (int i = 0; i < n; i++) {
			const struct ks_row *row = &r->rows[i];

			for (int k = 0; k < row->nkeys; k++) {
				int w = k < h0->nkeys ? kw[k] : 8;

				if (k)
					fprintf(out, " %*s", w, row->keys[k].str);
				else
					fprintf(out, "%-*.*s", w, w, row->keys[k].str);
			}
			for (int v = 0; v < row->nvals; v++) {
				if (row->vals[v].kind == KS_VAL_NS)
					fprintf(out, " %10s", ks_fmt_ns(row->vals[v].v, b, sizeof(b)));
				else
					fprintf(out, " %10" PRIu64, row->vals[v].v);
			}
			if (row->hist) {
				static const double q[] = { 0.5, 0.9, 0.99 };

				for (int p = 0; p < 3; p++)
					fprintf(out, " %9s", ks_fmt_ns(ks_hist_percentile(row->hist, q[p]), b, sizeof(b)));
				fprintf(out, " %9s", ks_fmt_ns(row->hist->max, b, sizeof(b)));
			} else if (has_hist) {
				fprintf(out, " %9s %9s %9s %9s", "-", "-", "-", "-");
			}
			for (int s = 0; s < row->nsub; s++)
				fprintf(out, "%s%s=%" PRIu64, s ? "," : "  ", row->sub[s].name, row->sub[s].count);
			fputc('\n', out);
		}
		if (n < r->nrows)
			fprintf(out, "(%d more rows; -n 0 shows all)\n", r->nrows - n);
		for (int i = 0; r->hist_text && i < n; i++) {
			const struct ks_row *row = &r->rows[i];

			if (!row->hist || !row->hist->count)
				continue;
			fputc('\n', out);
			for (int k = 0; k < row->nkeys; k++)
				fprintf(out, "%s%s=%s", k ? " " : "", row->keys[k].name, row->keys[k].str);
			fputs("\n  ", out);
			ks_hist_write_pct_line(row->hist, out);
			ks_hist_write_text(row->hist, out, "");
			for (int x = 0; x < row->nxhist; x++) {
				const struct ks_xhist *xh = &row->xhist[x];

				if (!xh->h->count)
					continue;
				fprintf(out, "  %s: ", xh->name);
				ks_hist_write_pct_line_unit(xh->h, xh->unit, out);
				ks_hist_write_text_unit(xh->h, xh->unit, out, "");
			}
		}
	}
	/* the loss line stays last: scripts read it with tail -1 */
	for (int i = 0; i < r->ncounters; i++)
		fprintf(out, "%s%s %" PRIu64 "%s", i ? ", " : "counters: ", r->counters[i].name, r->counters[i].num,
			i + 1 == r->ncounters ? "\n" : "");
	write_lost_text(r, out);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}

static void write_meta(struct ks_json *j, const char *name, const struct ks_meta *m, int n)
{
	ks_json_key(j, name);
	ks_json_obj_begin(j);
	for (int i = 0; i < n; i++) {
		if (m[i].is_num)
			ks_json_kv_u64(j, m[i].name, m[i].num);
		else
			ks_json_kv_str(j, m[i].name, m[i].str);
	}
	ks_json_obj_end(j);
}

static void write_hist_json(struct ks_json *j, const struct ks_hist *h)
{
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "count", h->count);
	ks_json_kv_u64(j, "p50", ks_hist_percentile(h, 0.50));
	ks_json_kv_u64(j, "p90", ks_hist_percentile(h, 0.90));
	ks_json_kv_u64(j, "p99", ks_hist_percentile(h, 0.99));
	ks_json_kv_u64(j, "p999", ks_hist_percentile(h, 0.999));
	ks_json_kv_u64(j, "max", h->max);
	ks_json_kv_double(j, "mean", ks_hist_mean(h));
	ks_json_kv_u64(j, "sum", h->sum);
	/* non-empty slots only, as [low, high, count] */
	ks_json_key(j, "buckets");
	ks_json_arr_begin(j);
	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		ks_json_arr_begin(j);
		ks_json_u64(j, ks_hist_slot_low(i));
		ks_json_u64(j, ks_hist_slot_high(i));
		ks_json_u64(j, h->slots[i]);
		ks_json_arr_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
}

int ks_report_write_json(const struct ks_report *r, FILE *out)
{
	struct ks_json *j = ks_json_new(out);
	int n = shown_rows(r);

	if (!j)
		return -ENOMEM;
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "collector", r->collector);
	ks_json_kv_str(j, "hook", r->hook ? r->hook : "");
	ks_json_kv_u64(j, "interval", (uint64_t)r->interval);
	ks_json_kv_double(j, "duration_s", r->duration_s);
	ks_json_kv_u64(j, "lost", r->lost);
	write_meta(j, "lost_by", r->lost_by, r->nlost);
	if (r->ncounters)
		write_meta(j, "counters", r->counters, r->ncounters);
	write_meta(j, "filters", r->meta, r->nmeta);
	if (r->budget) {
		ks_json_key(j, "maps");
		ks_budget_write_json(r->budget, j);
	}
	ks_json_kv_u64(j, "total_rows", (uint64_t)r->nrows);
	ks_json_key(j, "rows");
	ks_json_arr_begin(j);
	for (int i = 0; i < n; i++) {
		const struct ks_row *row = &r->rows[i];

		ks_json_obj_begin(j);
		for (int k = 0; k < row->nkeys; k++) {
			ks_json_key(j, row->keys[k].name);
			if (row->keys[k].is_num)
				ks_json_i64(j, row->keys[k].num);
			else
				ks_json_str(j, row->keys[k].str);
		}
		for (int v = 0; v < row->nvals; v++)
			ks_json_kv_u64(j, row->vals[v].name, row->vals[v].v);
		if (r->sub_name) {
			ks_json_key(j, r->sub_name);
			ks_json_obj_begin(j);
			for (int s = 0; s < row->nsub; s++)
				ks_json_kv_u64(j, row->sub[s].name, row->sub[s].count);
			ks_json_obj_end(j);
		}
		if (row->hist) {
			ks_json_key(j, r->hist_name);
			write_hist_json(j, row->hist);
		}
		for (int x = 0; x < row->nxhist; x++) {
			ks_json_key(j, row->xhist[x].name);
			write_hist_json(j, row->xhist[x].h);
		}
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
