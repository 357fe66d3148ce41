/* The heatmap writer: each row's histograms over a series as a grid of cells (built apart from drawing, for tests), drawn as SVG; and --heatmap's file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "core/file.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/sanitize.h"
#include "output/heatmap.h"

/* Layout, in SVG user units (pixels at 100%). */
#define HM_W 1000
#define HM_LEFT 90	 /* room for the bucket labels */
#define HM_PLOT_W 760	 /* the time axis */
#define HM_HEAD 56	 /* the document's two title lines */
#define HM_PANEL_HEAD 30 /* a row's title above its plot */
#define HM_PANEL_FOOT 46 /* time labels and the axis title below it */
#define HM_PLOT_H 300	 /* a plot's height when its buckets are neither too few nor too many */
#define HM_CELL_MIN 2.0	 /* a bucket never thinner than this... */
#define HM_CELL_MAX 10.0 /* ...nor thicker */
#define HM_LABEL_GAP 12	 /* least room between two labels of the bucket axis */
#define HM_BLANK "#ffffff"

uint64_t ks_heatmap_cell(const struct ks_heatmap *h, int col, unsigned int slot)
{
	if (col < 0 || col >= h->ncols || slot < h->lo || slot >= h->lo + h->nb)
		return 0;
	return h->cells[(size_t)col * h->nb + (slot - h->lo)];
}

void ks_heatmap_release(struct ks_heatmap *h)
{
	free(h->cols);
	free(h->cells);
	memset(h, 0, sizeof(*h));
}

static bool of(const struct ks_report *r, const char *collector)
{
	return r->collector && !strcmp(r->collector, collector);
}

static double ts_s(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

int ks_heatmap_build(struct ks_heatmap *h, const struct ks_series *s, const char *collector, const struct ks_row *row)
{
	struct timespec m0, w0;
	bool timed = ks_series_start(s, &m0, &w0);
	unsigned int lo = KS_HIST_SLOTS, hi = 0, k;
	struct ks_hist_view v;
	double t = 0;
	uint64_t n;
	int c = 0;

	memset(h, 0, sizeof(*h));
	h->collector = collector;
	h->row = row;
	h->hist_name = "latency_ns";
	for (size_t i = 0; i < ks_series_len(s); i++)
		h->ncols += of(ks_series_at(s, i), collector);
	h->cols = calloc((size_t)h->ncols + 1, sizeof(*h->cols));
	if (!h->cols)
		return -ENOMEM;
	/* first pass: the columns' windows and the slots in use */
	for (size_t i = 0; i < ks_series_len(s); i++) {
		const struct ks_report *r = ks_series_at(s, i);
		const struct ks_row *x;

		if (!of(r, collector))
			continue;
		h->hist_name = r->hist_name ? r->hist_name : h->hist_name;
		h->unit = r->hist_unit;
		/* untimed reports (a unit test's) follow one another */
		h->cols[c].t1 = timed && r->has_time ? ts_s(&r->mono) - ts_s(&m0) : t + r->duration_s;
		h->cols[c].t0 = h->cols[c].t1 - r->duration_s;
		/* each report's end is read after its collection, a few ms after its window's: no overlap, no time before 0 */
		if (h->cols[c].t0 < (c ? h->cols[c - 1].t1 : 0))
			h->cols[c].t0 = c ? h->cols[c - 1].t1 : 0;
		h->cols[c].interval = r->interval;
		t = h->cols[c++].t1;
		x = ks_series_row(s, i, row);
		/* the kept histogram's slots with a count, in increasing order */
		if (x && ks_series_hist_view(s, i, x, 0, &v)) {
			while (ks_hist_view_next(&v, &k, &n)) {
				lo = k < lo ? k : lo;
				hi = k > hi ? k : hi;
			}
		}
	}
	if (lo > hi)
		return 0;
	h->lo = lo;
	h->nb = hi - lo + 1;
	h->cells = calloc((size_t)h->ncols * h->nb, sizeof(*h->cells));
	if (!h->cells) {
		ks_heatmap_release(h);
		return -ENOMEM;
	}
	c = 0;
	for (size_t i = 0; i < ks_series_len(s); i++) {
		const struct ks_report *r = ks_series_at(s, i);
		const struct ks_row *x;

		if (!of(r, collector))
			continue;
		x = ks_series_row(s, i, row);
		if (x && ks_series_hist_view(s, i, x, 0, &v)) {
			while (ks_hist_view_next(&v, &k, &n)) {
				h->cells[(size_t)c * h->nb + (k - lo)] = n;
				h->total += n;
				h->max = n > h->max ? n : h->max;
			}
		}
		c++;
	}
	return 0;
}

/* A distinct row while ranking: where it was first seen and its summed count. */
struct cand {
	const struct ks_row *row;
	uint64_t count;
	size_t order;
};

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int ks_heatmap_rows(const struct ks_series *s, const char *collector, int n, const struct ks_row ***rows, int *nrows)
{
	struct cand *cand = NULL;
	uint32_t *tab = NULL; /* open addressing: cand index + 1 */
	size_t ncand = 0, ccap = 0, tcap = 0;
	int err = -ENOMEM;

	*rows = NULL;
	*nrows = 0;
	for (size_t i = 0; i < ks_series_len(s); i++) {
		const struct ks_report *r = ks_series_at(s, i);

		for (int j = 0; of(r, collector) && j < r->nrows; j++) {
			const struct ks_row *row = &r->rows[j];
			struct ks_hist_view v;
			size_t h;

			if (!ks_series_hist_view(s, i, row, 0, &v))
				continue;
			/* the table at most half full: doubled and refilled */
			if (2 * (ncand + 1) > tcap) {
				size_t cap = tcap ? tcap * 2 : 64;
				uint32_t *t = calloc(cap, sizeof(*t));

				if (!t)
					goto out;
				free(tab);
				tab = t;
				tcap = cap;
				for (size_t k = 0; k < ncand; k++) {
					h = (size_t)ks_row_keys_hash(cand[k].row) & (tcap - 1);
					while (tab[h])
						h = (h + 1) & (tcap - 1);
					tab[h] = (uint32_t)k + 1;
				}
			}
			h = (size_t)ks_row_keys_hash(row) & (tcap - 1);
			while (tab[h] && !ks_row_keys_eq(cand[tab[h] - 1].row, row))
				h = (h + 1) & (tcap - 1);
			if (!tab[h]) {
				if (ncand == ccap) {
					size_t cap = ccap ? ccap * 2 : 32;
					struct cand *c = realloc(cand, cap * sizeof(*c));

					if (!c)
						goto out;
					cand = c;
					ccap = cap;
				}
				cand[ncand] = (struct cand){ row, 0, ncand };
				tab[h] = (uint32_t)++ncand;
			}
			cand[tab[h] - 1].count += v.count;
		}
	}
	if (ncand)
		qsort(cand, ncand, sizeof(*cand), cand_cmp);
	if (n > 0 && ncand > (size_t)n)
		ncand = (size_t)n;
	*rows = calloc(ncand + 1, sizeof(**rows));
	if (!*rows)
		goto out;
	for (size_t k = 0; k < ncand; k++)
		(*rows)[k] = cand[k].row;
	*nrows = (int)ncand;
	err = 0;
out:
	free(cand);
	free(tab);
	return err;
}

static void xml_text(FILE *out, const char *s)
{
	ks_sanitize_put(out, s, ks_quote_xml);
}

/* The row's keys as "name=value name=value" (sanitized, XML-quoted); "all" for a row without keys. */
static void row_label(FILE *out, const struct ks_row *row)
{
	if (!row->nkeys)
		fputs("all", out);
	for (int k = 0; k < row->nkeys; k++) {
		fputs(k ? " " : "", out);
		xml_text(out, row->keys[k].name);
		fputc('=', out);
		if (row->keys[k].is_num)
			fprintf(out, "%" PRId64, row->keys[k].num);
		else
			xml_text(out, row->keys[k].str);
	}
}

/*
 * Viridis (perceptually uniform, readable in grey and by the colour-blind),
 * sampled at nine even stops and interpolated in between.
 */
static const unsigned char viridis[9][3] = {
	{ 0x44, 0x01, 0x54 }, { 0x47, 0x2d, 0x7b }, { 0x3b, 0x52, 0x8b }, { 0x2c, 0x72, 0x8e }, { 0x21, 0x91, 0x8c },
	{ 0x28, 0xae, 0x80 }, { 0x5e, 0xc9, 0x62 }, { 0xad, 0xdc, 0x30 }, { 0xfd, 0xe7, 0x25 },
};

/* The colour of @n of at most @max: log scale, so a bucket of 3 stays visible beside one of 3000. */
void ks_heatmap_colour(uint64_t n, uint64_t max, char buf[8])
{
	double t = max > 1 ? log((double)n) / log((double)max) : 1, f;
	int i, rgb[3];

	t = t < 0 ? 0 : t > 1 ? 1 : t;
	i = (int)(t * 8);
	if (i > 7)
		i = 7;
	f = t * 8 - i;
	for (int k = 0; k < 3; k++)
		rgb[k] = (int)lround(viridis[i][k] + (viridis[i + 1][k] - viridis[i][k]) * f);
	snprintf(buf, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* A bucket's height: the plot about HM_PLOT_H tall, within the least and most a bucket gets. */
static double cell_h(const struct ks_heatmap *h)
{
	double ch = h->nb ? (double)HM_PLOT_H / h->nb : HM_CELL_MAX;

	return ch < HM_CELL_MIN ? HM_CELL_MIN : ch > HM_CELL_MAX ? HM_CELL_MAX : ch;
}

static double panel_h(const struct ks_heatmap *h)
{
	return HM_PANEL_HEAD + (h->nb ? h->nb * cell_h(h) : 20) + HM_PANEL_FOOT;
}

/* The next label value of the bucket axis after @v: powers of two for sizes, 1-2-5 decades otherwise. */
static uint64_t next_label(enum ks_unit unit, uint64_t v)
{
	uint64_t d = 1;

	if (unit == KS_UNIT_BYTES)
		return v ? v * 2 : 1;
	if (!v)
		return 1;
	while (d <= v / 10)
		d *= 10;
	return v < 2 * d ? 2 * d : v < 5 * d ? 5 * d : 10 * d;
}

/* The bucket axis: a label wherever a round value falls inside the drawn buckets, never two too close. */
static void bucket_axis(FILE *out, const struct ks_heatmap *h, double bottom)
{
	uint64_t vlo = ks_hist_slot_low(h->lo), vhi = ks_hist_slot_high(h->lo + h->nb - 1);
	double ch = cell_h(h), last = 1e9;
	char buf[32];

	for (uint64_t v = next_label(h->unit, 0); v && v <= vhi; v = next_label(h->unit, v)) {
		unsigned int slot = ks_hist_slot(v);
		double lo, hi, y;

		if (v < vlo)
			continue;
		lo = (double)ks_hist_slot_low(slot);
		hi = (double)ks_hist_slot_high(slot) + 1;
		y = bottom - ((slot - h->lo) + ((double)v - lo) / (hi - lo)) * ch;
		if (last - y < HM_LABEL_GAP)
			continue;
		last = y;
		fprintf(out, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#666\"/>", HM_LEFT - 5, y, HM_LEFT, y);
		fprintf(out, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" font-size=\"11\">%s</text>\n", HM_LEFT - 8, y + 4,
			ks_fmt_unit(h->unit, v, buf, sizeof(buf)));
		if (v > UINT64_MAX / 10)
			break;
	}
}

/* The time axis: seconds since the start at round steps at least 50 units apart. */
static void time_axis(FILE *out, double t0, double t1, double y)
{
	static const double steps[] = { 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600 };
	double span = t1 > t0 ? t1 - t0 : 1, step = steps[0];

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		step = steps[i];
		if (step / span * HM_PLOT_W >= 50)
			break;
	}
	for (double t = ceil(t0 / step - 1e-9) * step; t <= t1 + 1e-9; t += step) {
		double x = HM_LEFT + (t - t0) / span * HM_PLOT_W;

		fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#666\"/>", x, y, x, y + 5);
		fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"11\">%gs</text>\n", x, y + 17,
			round(t / step) * step + 0.0); /* + 0.0: -0 becomes 0 */
	}
	fprintf(out, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"11\">time since the start (s)</text>\n",
		HM_LEFT + HM_PLOT_W / 2, y + 34);
}

/* The colour scale beside a plot: from 1 at the bottom to the largest cell at the top. */
static void legend(FILE *out, const struct ks_heatmap *h, double top, double ph)
{
	double x = HM_LEFT + HM_PLOT_W + 24, lh = ph < 160 ? ph : 160, y0 = top + lh;
	char fill[8];

	for (int i = 0; i < 16; i++) {
		uint64_t n = (uint64_t)llround(pow((double)h->max, i / 15.0));

		ks_heatmap_colour(n ? n : 1, h->max, fill);
		fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"14\" height=\"%.2f\" fill=\"%s\"/>", x, y0 - (i + 1) * lh / 16,
			lh / 16 + 0.5, fill);
	}
	fprintf(out, "\n<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\">%" PRIu64 "</text>", x + 18, top + 9, h->max);
	fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\">1</text>", x + 18, y0);
	fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\">count</text>\n", x, top - 6);
}

/* One row's panel at @y: title, plot with its cells, axes, legend. */
static void panel(FILE *out, const struct ks_heatmap *h, double y)
{
	double ch = cell_h(h), top = y + HM_PANEL_HEAD, ph = h->nb ? h->nb * ch : 20, bottom = top + ph;
	double t0 = h->ncols ? h->cols[0].t0 : 0, t1 = h->ncols ? h->cols[h->ncols - 1].t1 : 1;
	double span = t1 > t0 ? t1 - t0 : 1;
	char fill[8], a[32], b[32];

	fprintf(out, "<g class=\"panel\" data-collector=\"");
	xml_text(out, h->collector);
	fprintf(out, "\" data-row=\"");
	row_label(out, h->row);
	fprintf(out, "\" data-total=\"%" PRIu64 "\" data-max=\"%" PRIu64 "\">\n<text x=\"%d\" y=\"%.2f\" font-size=\"13\" "
		     "font-weight=\"bold\">",
		h->total, h->max, HM_LEFT, y + 18);
	xml_text(out, h->collector);
	fputs(": ", out);
	row_label(out, h->row);
	fputs(" \xc2\xb7 ", out);
	xml_text(out, h->hist_name);
	fprintf(out, " \xc2\xb7 %" PRIu64 " in %d interval%s</text>\n", h->total, h->ncols, h->ncols == 1 ? "" : "s");
	fprintf(out, "<rect class=\"plot\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.2f\" fill=\"" HM_BLANK
		     "\" stroke=\"#999\" stroke-width=\"0.5\"/>\n",
		HM_LEFT, top, HM_PLOT_W, ph);
	for (int c = 0; c < h->ncols; c++) {
		double x0 = HM_LEFT + (h->cols[c].t0 - t0) / span * HM_PLOT_W;
		double x1 = HM_LEFT + (h->cols[c].t1 - t0) / span * HM_PLOT_W;
		bool any = false;

		/* a column's window once, on its group: a cell carries only its bucket and count (a 300-interval run has many) */
		for (unsigned int k = 0; k < h->nb; k++) {
			uint64_t n = h->cells[(size_t)c * h->nb + k], vlo = ks_hist_slot_low(h->lo + k),
				 vhi = ks_hist_slot_high(h->lo + k);

			if (!n)
				continue; /* an empty cell stays blank */
			if (!any)
				fprintf(out, "<g class=\"col\" data-i=\"%d\" data-t0=\"%.3f\" data-t1=\"%.3f\">\n",
					h->cols[c].interval, h->cols[c].t0, h->cols[c].t1);
			any = true;
			ks_heatmap_colour(n, h->max, fill);
			ks_fmt_unit(h->unit, vlo, a, sizeof(a));
			ks_fmt_unit(h->unit, vhi, b, sizeof(b));
			fprintf(out, "<rect class=\"c\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
				     "data-lo=\"%llu\" data-n=\"%" PRIu64 "\"><title>%.2f-%.2f s, %s%s%s: %" PRIu64 "</title></rect>\n",
				x0, bottom - (k + 1) * ch, x1 - x0, ch, fill, (unsigned long long)vlo, n, h->cols[c].t0,
				h->cols[c].t1, a, vlo == vhi ? "" : "-", vlo == vhi ? "" : b, n);
		}
		if (any)
			fputs("</g>\n", out);
	}
	if (h->nb) {
		bucket_axis(out, h, bottom);
		legend(out, h, top, ph);
	} else {
		fprintf(out, "<text x=\"%d\" y=\"%.2f\" font-size=\"11\">no events</text>\n", HM_LEFT + 6, top + 14);
	}
	fprintf(out, "<text transform=\"translate(14,%.2f) rotate(-90)\" text-anchor=\"middle\" font-size=\"11\">",
		top + ph / 2);
	xml_text(out, h->hist_name);
	fputs(" (log)</text>\n", out);
	time_axis(out, t0, t1, bottom);
	fputs("</g>\n", out);
}

/* The collectors of @s in order of first appearance: at most @max names into @names. */
static int collectors(const struct ks_series *s, const char **names, int max)
{
	int n = 0;

	for (size_t i = 0; i < ks_series_len(s); i++) {
		const char *c = ks_series_at(s, i)->collector;
		int k = 0;

		while (k < n && strcmp(names[k], c))
			k++;
		if (c && k == n && n < max)
			names[n++] = c;
	}
	return n;
}

int ks_write_heatmap(const struct ks_series *s, int top_n, FILE *out)
{
	const char *names[32];
	int nc = collectors(s, names, 32), nh = 0, cap = 0, err = 0;
	struct ks_heatmap *hm = NULL;
	struct timespec m0, w0;
	double height = HM_HEAD, y, span = 0;
	char iso[40];

	for (int i = 0; i < nc && !err; i++) {
		const struct ks_row **rows;
		int nrows;

		err = ks_heatmap_rows(s, names[i], top_n, &rows, &nrows);
		for (int k = 0; !err && k < nrows; k++) {
			if (nh == cap) {
				struct ks_heatmap *m = realloc(hm, (size_t)(cap = cap ? cap * 2 : 16) * sizeof(*m));

				if (!m) {
					err = -ENOMEM;
					break;
				}
				hm = m;
			}
			err = ks_heatmap_build(&hm[nh], s, names[i], rows[k]);
			if (!err) {
				height += panel_h(&hm[nh]);
				nh++;
			}
		}
		free(rows);
	}
	if (err)
		goto out;
	if (nh && hm[0].ncols)
		span = hm[0].cols[hm[0].ncols - 1].t1;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
		     "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
		     "<text x=\"%d\" y=\"22\" font-size=\"16\" font-weight=\"bold\">ksight heatmap: ",
		HM_W, height + (nh ? 0 : 24), HM_W, height + (nh ? 0 : 24), HM_LEFT);
	for (int i = 0; i < nc; i++) {
		fputs(i ? ", " : "", out);
		xml_text(out, names[i]);
	}
	fputs("</text>\n", out);
	fprintf(out, "<text x=\"%d\" y=\"42\" font-size=\"12\" class=\"window\">", HM_LEFT);
	if (ks_series_start(s, &m0, &w0))
		fprintf(out, "from %s, ", ks_fmt_iso8601(&w0, iso, sizeof(iso)));
	fprintf(out, "%.2f s, %zu reports; %" PRIu64 " interval%s dropped to keep the series within %zu MiB",
		span, ks_series_len(s), ks_series_dropped(s), ks_series_dropped(s) == 1 ? "" : "s",
		ks_series_budget(s) >> 20);
	fprintf(out, "%s</text>\n", top_n ? "; the rows with the most events first" : "");
	y = HM_HEAD;
	for (int i = 0; i < nh; i++) {
		panel(out, &hm[i], y);
		y += panel_h(&hm[i]);
	}
	if (!nh)
		fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"12\">no row with a histogram</text>\n", HM_LEFT, HM_HEAD + 10);
	fputs("</svg>\n", out);
	err = ks_stream_status(out);
out:
	for (int i = 0; i < nh; i++)
		ks_heatmap_release(&hm[i]);
	free(hm);
	return err;
}

int ks_heatmap_out_open(struct ks_heatmap_out *o, const char *path, int top_n, size_t budget)
{
	struct stat st;
	int err;

	memset(o, 0, sizeof(*o));
	o->sink.fd = -1;
	if (!path)
		return 0;
	/* a FIFO would hold the run at its open, and nobody reads a document written whole at the end there */
	if (!ks_file_is_stdout(path) && !stat(path, &st) && !S_ISREG(st.st_mode)) {
		p_err("invalid --heatmap '%s': not a regular file (the SVG is written whole when the run ends)", KS_ESC(path));
		return -EINVAL;
	}
	err = ks_sink_open(&o->sink, path, NULL);
	if (err)
		return err;
	o->series = ks_series_new(budget ? budget : KS_SERIES_BUDGET);
	if (!o->series) {
		ks_sink_close(&o->sink, false);
		p_err("out of memory");
		return -ENOMEM;
	}
	o->top_n = top_n;
	return 0;
}

int ks_heatmap_out_close(struct ks_heatmap_out *o, bool started)
{
	char *buf = NULL;
	size_t len = 0, ni, per;
	FILE *m;
	int err = 0, cerr;

	if (!o->series)
		return 0;
	if (started) {
		m = open_memstream(&buf, &len);
		err = m ? ks_write_heatmap(o->series, o->top_n, m) : -errno;
		if (m && fclose(m) && !err)
			err = -ENOMEM;
		/* -v: what the series cost, to size --series-memory by */
		ni = ks_series_intervals(o->series);
		per = ni ? ks_series_bytes(o->series) / ni : 0;
		p_info("heatmap: %zu reports of %zu intervals kept in %zu KiB (%zu KiB an interval: %zu intervals in the "
		       "budget of %zu MiB), %" PRIu64 " intervals dropped, %zu bytes of SVG",
		       ks_series_len(o->series), ni, ks_series_bytes(o->series) >> 10, per >> 10,
		       per ? ks_series_budget(o->series) / per : 0, ks_series_budget(o->series) >> 20,
		       ks_series_dropped(o->series), len);
		if (!err)
			err = ks_sink_start(&o->sink);
		if (!err)
			err = ks_sink_write(&o->sink, buf, len, 0);
		free(buf);
		if (err)
			p_err("cannot write the heatmap%s%s: %s", o->sink.path ? " to " : "",
			      o->sink.path ? KS_ESC(o->sink.path) : "", strerror(-err));
	}
	cerr = ks_sink_close(&o->sink, started);
	if (cerr && !err) {
		p_err("cannot write '%s': %s", KS_ESC(o->sink.path), strerror(-cerr));
		err = cerr;
	}
	ks_series_free(o->series);
	o->series = NULL;
	return err;
}
