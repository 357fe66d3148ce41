/* The text writer: tables with one unit per column, drawn histograms, and every name escaped for the terminal. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/json.h"
#include "core/sanitize.h"
#include "output/output.h"

/* Display columns of escaped (valid UTF-8) @s: one per character. */
static int text_cols(const char *s)
{
	int n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n;
}

/* Writes @s escaped in @width columns (left-aligned when @left), cut to @max columns when @max > 0. */
static void put_cell(FILE *out, const char *s, int width, bool left, int max)
{
	char b[512];
	int cols;

	ks_sanitize(s, b, sizeof(b));
	if (max > 0 && text_cols(b) > max) {
		int c = 0;
		size_t i = 0;

		for (; b[i]; i++) {
			if (((unsigned char)b[i] & 0xc0) != 0x80 && c++ == max)
				break;
		}
		b[i] = 0;
	}
	cols = text_cols(b);
	if (!left)
		for (int i = cols; i < width; i++)
			fputc(' ', out);
	fputs(b, out);
	if (left)
		for (int i = cols; i < width; i++)
			fputc(' ', out);
}

static int shown_rows(const struct ks_report *r)
{
	return r->top_n > 0 && r->top_n < r->nrows ? r->top_n : r->nrows;
}

/* A display unit: suffix and divisor. */
struct unit_pick {
	const char *sfx;
	uint64_t div;
};

/* The unit for a column whose largest value is @max: the largest unit that @max reaches. */
static struct unit_pick pick_unit(enum ks_unit u, uint64_t max)
{
	static const struct unit_pick ns[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	static const struct unit_pick by[] = {
		{ "B", 1 }, { "KiB", 1ull << 10 }, { "MiB", 1ull << 20 }, { "GiB", 1ull << 30 }, { "TiB", 1ull << 40 }
	};
	const struct unit_pick *t = u == KS_UNIT_NS ? ns : by;
	int n = u == KS_UNIT_NS ? 4 : 5;
	struct unit_pick p = t[0];

	if (u == KS_UNIT_COUNT)
		return (struct unit_pick){ "", 1 };
	for (int i = 0; i < n; i++)
		if (max >= t[i].div)
			p = t[i];
	return p;
}

/*
 * @v in unit @p: up to three significant digits for values >= 1, and at
 * least two for smaller ones, so 300ns in a column of milliseconds reads
 * 0.00030ms, never 0.
 */
static const char *fmt_in(struct unit_pick p, uint64_t v, char *buf, size_t len)
{
	double x = (double)v / (double)p.div;
	int d;

	if (!v || p.div == 1) {
		snprintf(buf, len, "%" PRIu64 "%s", v, p.sfx);
		return buf;
	}
	if (x >= 100)
		d = 0;
	else if (x >= 10)
		d = 1;
	else if (x >= 1)
		d = 2;
	else
		d = 1 - (int)floor(log10(x));
	if (d > 12)
		d = 12;
	snprintf(buf, len, "%.*f%s", d, x, p.sfx);
	return buf;
}

static enum ks_unit val_unit(enum ks_val_kind k)
{
	return k == KS_VAL_NS ? KS_UNIT_NS : k == KS_VAL_BYTES ? KS_UNIT_BYTES : KS_UNIT_COUNT;
}

static void write_lost_text(const struct ks_report *r, FILE *out)
{
	fprintf(out, "lost: %" PRIu64, r->lost);
	for (int i = 0; i < r->nlost; i++)
		fprintf(out, "%s%s %" PRIu64, i ? ", " : " (", r->lost_by[i].name, r->lost_by[i].num);
	fputs(r->nlost ? ")\n" : "\n", out);
}

/* ISO-8601 UTC with milliseconds, e.g. 2026-12-03T19:52:50.123Z. */
#define PCTS 4
static const double pct_q[PCTS] = { 0.5, 0.9, 0.99, -1 }; /* -1: max */

static uint64_t pct_value(const struct ks_hist *h, int p)
{
	return pct_q[p] < 0 ? h->max : ks_hist_percentile(h, pct_q[p]);
}

/*
 * Columns 1..@n of @row as tenths of a percent of column 0, rounded so
 * that they add up to exactly 1000 (largest remainders first): the row's
 * shares read as 100%.  False when column 0 is 0.
 */
static bool row_shares(const struct ks_row *row, int n, int tenths[])
{
	uint64_t tot = row->nvals ? row->vals[0].v : 0;
	uint64_t rem[KS_ROW_VALS];
	int left = 1000;

	if (!tot || n >= row->nvals)
		return false;
	for (int c = 0; c < n; c++) {
		unsigned __int128 x = (unsigned __int128)row->vals[c + 1].v * 1000;

		tenths[c] = (int)(x / tot);
		rem[c] = (uint64_t)(x % tot);
		left -= tenths[c];
	}
	while (left-- > 0) {
		int best = 0;

		for (int c = 1; c < n; c++)
			if (rem[c] > rem[best])
				best = c;
		tenths[best]++;
		rem[best] = 0;
	}
	return true;
}

/* The table of @r's first @n rows; @pu gets the units of its p50, p90, p99 and max columns. */
static void write_table(const struct ks_report *r, FILE *out, int n, struct unit_pick pu[PCTS])
{
	const struct ks_row *h0 = &r->rows[0];
	struct unit_pick vu[KS_ROW_VALS];
	int nshares = r->schema && r->schema->shares < h0->nvals ? r->schema->shares : 0;
	bool has_hist = false;
	char b[64];

	for (int i = 0; i < n; i++)
		has_hist |= r->rows[i].hist != NULL;
	/* one unit per column, from its largest shown value: a column never switches units between rows */
	for (int v = 0; v < h0->nvals; v++) {
		uint64_t max = 0;

		for (int i = 0; i < n; i++)
			if (v < r->rows[i].nvals && r->rows[i].vals[v].v > max)
				max = r->rows[i].vals[v].v;
		vu[v] = pick_unit(val_unit(h0->vals[v].kind), max);
	}
	for (int p = 0; p < PCTS; p++) {
		uint64_t max = 0;

		for (int i = 0; i < n; i++)
			if (r->rows[i].hist && pct_value(r->rows[i].hist, p) > max)
				max = pct_value(r->rows[i].hist, p);
		pu[p] = pick_unit(r->hist_unit, max);
	}

	/* key widths: 20 and 8, or with keys_whole as wide as the longest (escaped) value */
	int kw[KS_ROW_KEYS];

	for (int k = 0; k < h0->nkeys && k < KS_ROW_KEYS; k++) {
		kw[k] = k ? 8 : 20;
		for (int i = 0; r->schema && r->schema->keys_whole && i < n; i++) {
			char e[512];
			int w;

			if (k >= r->rows[i].nkeys)
				continue;
			ks_sanitize(r->rows[i].keys[k].str, e, sizeof(e));
			w = text_cols(e);
			if (w > kw[k])
				kw[k] = w;
		}
	}
	/* header from the first row's layout: all rows of a report share it */
	for (int k = 0; k < h0->nkeys; k++) {
		if (k)
			fputc(' ', out);
		put_cell(out, h0->keys[k].name, kw[k], !k, 0);
	}
	for (int v = 0; v < h0->nvals; v++) {
		/* durations are printed with their unit, so "total_ns" reads "total" */
		const char *name = h0->vals[v].name;
		size_t len = strlen(name);

		if (h0->vals[v].kind == KS_VAL_NS && len > 3 && !strcmp(name + len - 3, "_ns"))
			fprintf(out, " %10.*s", (int)(len - 3), name);
		else
			fprintf(out, " %10s", name);
		if (v >= 1 && v <= nshares)
			fputs("       %", out);
	}
	if (has_hist) {
		/* e.g. "rtt_p50": the columns say what the histogram measures */
		static const char *const cols[] = { "p50", "p90", "p99", "max" };

		for (int c = 0; c < 4; c++) {
			char name[32];

			snprintf(name, sizeof(name), "%s%s", r->schema && r->schema->hist_cols ? r->schema->hist_cols : "", cols[c]);
			fprintf(out, " %9s", name);
		}
	}
	if (r->sub_name)
		fprintf(out, "  %s", r->sub_name);
	fputc('\n', out);
	for (int i = 0; i < n; i++) {
		const struct ks_row *row = &r->rows[i];

		for (int k = 0; k < row->nkeys; k++) {
			if (k)
				fputc(' ', out);
			int w = k < h0->nkeys ? kw[k] : 8;

			put_cell(out, row->keys[k].str, w, !k, k ? 0 : w);
		}
		int tenths[KS_ROW_VALS];
		bool shares = nshares && row_shares(row, nshares, tenths);

		for (int v = 0; v < row->nvals; v++) {
			struct unit_pick u = v < h0->nvals ? vu[v] : pick_unit(val_unit(row->vals[v].kind), row->vals[v].v);

			/* a gauge no sample set (a failed connect's cwnd) has no reading: 0 would be one */
			fprintf(out, " %10s", row->vals[v].none ? "-" : fmt_in(u, row->vals[v].v, b, sizeof(b)));
			if (v >= 1 && v <= nshares) {
				if (shares)
					fprintf(out, " %5d.%d", tenths[v - 1] / 10, tenths[v - 1] % 10);
				else
					fputs("       -", out);
			}
		}
		if (row->hist) {
			for (int p = 0; p < PCTS; p++)
				fprintf(out, " %9s", fmt_in(pu[p], pct_value(row->hist, p), b, sizeof(b)));
		} else if (has_hist) {
			fprintf(out, " %9s %9s %9s %9s", "-", "-", "-", "-");
		}
		for (int s = 0; s < row->nsub; s++) {
			fputs(s ? "," : "  ", out);
			put_cell(out, row->sub[s].name, 0, true, 0);
			fprintf(out, "=%" PRIu64, row->sub[s].count);
		}
		fputc('\n', out);
	}
	if (n < r->nrows)
		fprintf(out, "(%d more rows; -n 0 shows all)\n", r->nrows - n);
}

/*
 * A row's histogram header in the table's units, so a column reads the same
 * above and below: p50, p90, p99 and max in their columns' units; p99.9
 * and mean, which are no columns, in max's.
 */
static void pct_line_in(const struct ks_hist *h, const struct unit_pick pu[PCTS], FILE *out)
{
	char b[32];

	fprintf(out, "p50 %s  ", fmt_in(pu[0], ks_hist_percentile(h, 0.50), b, sizeof(b)));
	fprintf(out, "p90 %s  ", fmt_in(pu[1], ks_hist_percentile(h, 0.90), b, sizeof(b)));
	fprintf(out, "p99 %s  ", fmt_in(pu[2], ks_hist_percentile(h, 0.99), b, sizeof(b)));
	fprintf(out, "p99.9 %s  ", fmt_in(pu[3], ks_hist_percentile(h, 0.999), b, sizeof(b)));
	fprintf(out, "max %s  ", fmt_in(pu[3], h->max, b, sizeof(b)));
	fprintf(out, "mean %s  ", fmt_in(pu[3], (uint64_t)ks_hist_mean(h), b, sizeof(b)));
	fprintf(out, "count %" PRIu64 "\n", h->count);
}

int ks_write_text(const struct ks_report *r, FILE *out)
{
	int n = shown_rows(r);
	char b[64];

	if (r->interval) {
		fprintf(out, "--- interval %d (%.1fs)", r->interval, r->duration_s);
		if (r->has_time)
			fprintf(out, " %s", ks_fmt_iso8601(&r->wall, b, sizeof(b)));
		fputs(" ---\n", out);
	}
	if (!r->nrows) {
		fprintf(out, "no events\n");
	} else {
		struct unit_pick pu[PCTS], xu[PCTS];

		write_table(r, out, n, pu);
		for (int i = 0; r->hist_text && i < n; i++) {
			const struct ks_row *row = &r->rows[i];

			if (!row->hist || !row->hist->count)
				continue;
			fputc('\n', out);
			for (int k = 0; k < row->nkeys; k++) {
				fprintf(out, "%s%s=", k ? " " : "", row->keys[k].name);
				put_cell(out, row->keys[k].str, 0, true, 0);
			}
			fputs("\n  ", out);
			pct_line_in(row->hist, pu, out);
			ks_hist_write_text_unit(row->hist, r->hist_unit, out, "");
			for (int x = 0; x < row->nxhist; x++) {
				const struct ks_xhist *xh = &row->xhist[x];

				if (!xh->h->count)
					continue;
				/* one unit on the line, its max's, as a table column has one */
				for (int q = 0; q < PCTS; q++)
					xu[q] = pick_unit(xh->unit, xh->h->max);
				fprintf(out, "  %s: ", xh->name);
				pct_line_in(xh->h, xu, out);
				ks_hist_write_text_unit(xh->h, xh->unit, out, "");
			}
		}
	}
	for (int i = 0; i < r->nlists; i++) {
		fprintf(out, "%s:", r->lists[i].name);
		for (int k = 0; k < r->lists[i].n; k++) {
			fputs(k ? ", " : " ", out);
			put_cell(out, r->lists[i].items[k], 0, true, 0);
		}
		fputc('\n', out);
	}
	/* the loss line stays last: scripts read it with tail -1 */
	for (int i = 0; i < r->ncounters; i++)
		fprintf(out, "%s%s %" PRIu64 "%s", i ? ", " : "counters: ", r->counters[i].name, r->counters[i].num,
			i + 1 == r->ncounters ? "\n" : "");
	write_lost_text(r, out);
	return ks_stream_status(out);
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

void ks_hist_write_text(const struct ks_hist *h, FILE *out, const char *indent)
{
	ks_hist_write_text_unit(h, KS_UNIT_NS, out, indent);
}

/*
 * Folds the log-linear slots into power-of-two rows of the display unit;
 * a slot goes to the row that holds its lower bound, so a row boundary is
 * off by at most one slot width (1/16) when the unit is not a power of two.
 */
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
