/* `report --html`: one self-contained page of a recording (manifest and note, percentile tables, heatmaps, events, losses and cost, flame graphs), every name sanitized and HTML-quoted. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/sanitize.h"
#include "output/heatmap.h"
#include "output/output.h"
#include "output/report_html.h"

#define MAX_COLS KS_ROW_VALS

/* A stranger's bytes as HTML text or a quoted attribute value. */
static void esc(FILE *out, const char *s)
{
	ks_sanitize_put(out, s ? s : "", ks_quote_xml);
}

/*
 * No script and nothing fetched: only inline styles (and data: images) may
 * load, so an injected tag could do nothing.  Plots off screen are not laid
 * out until scrolled to (content-visibility): a 300 s page of six collectors
 * opens in about half the time (1.5-1.8 s -> 0.8 s in headless Chromium).
 */
static const char head[] =
	"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
	"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	"<style>\n"
	"body{font-family:system-ui,sans-serif;margin:0 auto;padding:0 12px 40px;max-width:1400px;color:#222;line-height:1.4}\n"
	"h1{font-size:1.4em;word-break:break-all}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.6em}\n"
	"h3{font-size:1.05em}nav{display:flex;flex-wrap:wrap;gap:.2em 1em}\n"
	".scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%}\n"
	"table{border-collapse:collapse;font-size:.9em}th,td{padding:2px 8px;border-bottom:1px solid #e4e4e4;text-align:right;"
	"white-space:nowrap}\n"
	"th{background:#f4f4f4;position:sticky;top:0}td.k,th.k{text-align:left}tr.fired td{background:#fdd}\n"
	"table.kv td{text-align:left;white-space:normal;word-break:break-all}\n"
	"blockquote.note{font-size:1.1em;background:#fff8dc;border-left:4px solid #e0b000;margin:1em 0;padding:.5em 1em;"
	"word-break:break-word}\n"
	"svg{max-width:100%;height:auto;display:block}figure.hm,div.flame{margin:1em 0;content-visibility:auto;contain-intrinsic-size:auto 330px}figcaption{font-size:.9em}\n"
	".muted{color:#777}\n"
	"@media (max-width:600px){body{padding:0 6px 20px}table{font-size:.8em}}\n"
	"</style>\n";

void ks_html_head(FILE *out, const char *what, const char *name)
{
	fputs(head, out);
	fprintf(out, "<title>%s", what);
	esc(out, name);
	fprintf(out, "</title></head><body>\n<h1>%s", what);
	esc(out, name);
	fputs("</h1>\n", out);
}

static const char *kv_get(const struct ks_html_in *in, const char *key)
{
	for (int i = 0; i < in->nmanifest; i++)
		if (!strcmp(in->manifest[i].key, key))
			return in->manifest[i].val;
	return NULL;
}

static void write_manifest(const struct ks_html_in *in, FILE *out)
{
	static const char *const first[] = { "host", "kernel.release", "cmdline", "collect", "collect.interval_s", NULL };
	const char *rt = kv_get(in, "clock.start.realtime_ns");
	uint64_t t[2] = { rt ? strtoull(rt, NULL, 10) : 0, in->end_realtime_ns };

	fputs("<h2 id=\"manifest\">Manifest</h2>\n<div class=\"scroll\"><table class=\"kv\">\n", out);
	for (int k = 0; k < 2; k++) {
		struct timespec ts = { (time_t)(t[k] / 1000000000u), (long)(t[k] % 1000000000u) };
		char iso[40];

		if (!t[k])
			continue;
		fprintf(out, "<tr><th class=\"k\">%s</th><td>%s", k ? "end" : "start", ks_fmt_iso8601(&ts, iso, sizeof(iso)));
		if (k && t[0] && t[1] >= t[0])
			fprintf(out, " (%.3f s)", (double)(t[1] - t[0]) / 1e9);
		fputs("</td></tr>\n", out);
	}
	/* the facts a reader looks for first, then every line as recorded */
	for (int k = 0; first[k]; k++) {
		const char *v = kv_get(in, first[k]);

		if (!v)
			continue;
		fprintf(out, "<tr><th class=\"k\">%s</th><td>", first[k]);
		esc(out, v);
		fputs("</td></tr>\n", out);
	}
	fputs("</table></div>\n<details><summary>all manifest lines</summary><div class=\"scroll\"><table class=\"kv\">\n",
	      out);
	for (int i = 0; i < in->nmanifest; i++) {
		fputs("<tr><th class=\"k\">", out);
		esc(out, in->manifest[i].key);
		fputs("</th><td>", out);
		esc(out, in->manifest[i].val);
		fputs("</td></tr>\n", out);
	}
	fputs("</table></div></details>\n", out);
}

static void key_val(FILE *out, const struct ks_key *k)
{
	/* a cut key is at most ~100 bytes, each sanitized in at most 8 */
	char raw[1024];

	if (k->is_num)
		fprintf(out, "%" PRId64, k->num);
	/* the recording's JSON holds the key sanitized: its bytes again, or esc() doubles each escape */
	else if (ks_unsanitize(k->str, raw, sizeof(raw)) >= 0)
		esc(out, raw);
	else
		esc(out, k->str);
}

/* A row's keys, space-separated: "name=value ..." with @names, else the values alone. */
static void row_keys(FILE *out, const struct ks_row *row, bool names)
{
	for (int k = 0; k < row->nkeys; k++) {
		fputs(k ? " " : "", out);
		if (names) {
			esc(out, row->keys[k].name);
			fputc('=', out);
		}
		key_val(out, &row->keys[k]);
	}
}

static const char *val_fmt(const struct ks_val *v, char *buf, size_t len)
{
	if (v->none) /* a gauge with no sample: no reading */
		return "-";
	if (v->kind == KS_VAL_NS)
		return ks_fmt_ns(v->v, buf, len);
	snprintf(buf, len, "%" PRIu64, v->v);
	return buf;
}

/* The value columns of @r's rows, in first-seen order: at most MAX_COLS names into @names. */
static int val_columns(const struct ks_report *r, const char **names)
{
	int n = 0;

	for (int i = 0; i < r->nrows; i++)
		for (int v = 0; v < r->rows[i].nvals; v++) {
			int k = 0;

			while (k < n && strcmp(names[k], r->rows[i].vals[v].name))
				k++;
			if (k == n && n < MAX_COLS)
				names[n++] = r->rows[i].vals[v].name;
		}
	return n;
}

static const struct ks_val *row_val(const struct ks_row *row, const char *name)
{
	for (int v = 0; v < row->nvals; v++)
		if (!strcmp(row->vals[v].name, name))
			return &row->vals[v];
	return NULL;
}

/*
 * One whole-window report as a table: the keys, the row histogram's count
 * and percentiles, then the collector's values; rows in the report's
 * order (the collector's sort), at most @max.
 */
static void write_table(const struct ks_report *r, int max, FILE *out)
{
	const char *cols[MAX_COLS];
	int nc = val_columns(r, cols), nk = r->nrows ? r->rows[0].nkeys : 0, n = r->nrows < max ? r->nrows : max;
	bool hist = false;
	char b[32];

	for (int i = 0; i < r->nrows; i++)
		hist |= r->rows[i].hist != NULL;
	fputs("<h3>", out);
	esc(out, r->collector);
	fprintf(out, "</h3>\n<p class=\"muted\">%.3f s, %d rows%s", r->duration_s, r->nrows,
		n < r->nrows ? ", the first shown" : "");
	if (hist) {
		fputs("; percentiles of ", out);
		esc(out, r->hist_name);
	}
	fputs("</p>\n<div class=\"scroll\"><table class=\"pct\" data-collector=\"", out);
	esc(out, r->collector);
	fputs("\">\n<thead><tr>", out);
	for (int k = 0; k < nk; k++) {
		fputs("<th class=\"k\">", out);
		esc(out, r->rows[0].keys[k].name);
		fputs("</th>", out);
	}
	if (hist)
		fputs("<th>n</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>", out);
	for (int c = 0; c < nc; c++) {
		fputs("<th>", out);
		esc(out, cols[c]);
		fputs("</th>", out);
	}
	fputs("</tr></thead>\n<tbody>\n", out);
	for (int i = 0; i < n; i++) {
		const struct ks_row *row = &r->rows[i];

		fputs("<tr>", out);
		for (int k = 0; k < nk; k++) {
			fputs("<td class=\"k\">", out);
			if (k < row->nkeys)
				key_val(out, &row->keys[k]);
			fputs("</td>", out);
		}
		if (hist && row->hist) {
			const struct ks_hist *h = row->hist;
			static const double q[3] = { 0.5, 0.9, 0.99 };

			fprintf(out, "<td>%" PRIu64 "</td>", h->count);
			for (int p = 0; p < 3; p++)
				fprintf(out, "<td>%s</td>", ks_fmt_unit(r->hist_unit, ks_hist_percentile(h, q[p]), b, sizeof(b)));
			fprintf(out, "<td>%s</td>", ks_fmt_unit(r->hist_unit, h->max, b, sizeof(b)));
		} else if (hist) {
			fputs("<td></td><td></td><td></td><td></td><td></td>", out);
		}
		for (int c = 0; c < nc; c++) {
			const struct ks_val *v = row_val(row, cols[c]);

			fprintf(out, "<td>%s</td>", v ? val_fmt(v, b, sizeof(b)) : "");
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
}

/*
 * An SVG writer's document inline: from its <svg> element on (the XML
 * declaration is not HTML), without its <script> (the page runs none:
 * hover titles work, zoom and search are the .svg file's).
 */
static int embed_svg(FILE *out, int (*draw)(const void *ctx, FILE *f), const void *ctx)
{
	char *buf = NULL, *p, *s, *e;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return -errno;
	err = draw(ctx, m);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	p = strstr(buf, "<svg");
	p = p ? p : buf;
	s = strstr(p, "<script");
	e = s ? strstr(s, "</script>") : NULL;
	if (s && e) {
		fwrite(p, 1, (size_t)(s - p), out);
		p = e + strlen("</script>");
	}
	fputs(p, out);
	free(buf);
	return 0;
}

/*
 * The page's heatmaps are drawn here, not by ks_write_heatmap: the same
 * cells (ks_heatmap_build) but merged to at most HM_COLS time columns and
 * HM_GROUP adjacent buckets (a quarter octave), on whole pixels, so that a
 * 300 s session of six collectors stays a few MB with a <title> per cell.
 */
#define HM_COLS 150
#define HM_GROUP 4
#define HM_LEFT 70
#define HM_PW 760
#define HM_TOP 6
#define HM_FOOT 30

struct hm_grid {
	int ncols, m;		 /* merged columns, each m of the heatmap's */
	unsigned int g0, ng;	 /* bucket groups g0 .. g0 + ng - 1 (slot / HM_GROUP) */
	int ch;			 /* a group's height in px */
	uint64_t max;
};

static uint64_t grid_cell(const struct ks_heatmap *h, const struct hm_grid *g, int c, unsigned int grp)
{
	uint64_t n = 0;

	for (int k = c * g->m; k < (c + 1) * g->m && k < h->ncols; k++)
		for (unsigned int sl = grp * HM_GROUP; sl < (grp + 1) * HM_GROUP; sl++)
			n += ks_heatmap_cell(h, k, sl);
	return n;
}

static int col_x(const struct ks_heatmap *h, double t)
{
	double t0 = h->cols[0].t0, t1 = h->cols[h->ncols - 1].t1;

	return HM_LEFT + (int)lround((t - t0) / (t1 > t0 ? t1 - t0 : 1) * HM_PW);
}

static void write_heatmap(const struct ks_heatmap *h, FILE *out)
{
	struct hm_grid g = { 0 };
	char fill[8], a[32], b[32];
	int ph, w;

	g.m = (h->ncols + HM_COLS - 1) / HM_COLS;
	g.m = g.m ? g.m : 1;
	g.ncols = (h->ncols + g.m - 1) / g.m;
	g.g0 = h->lo / HM_GROUP;
	g.ng = h->nb ? (h->lo + h->nb - 1) / HM_GROUP - g.g0 + 1 : 0;
	g.ch = g.ng ? 240 / (int)g.ng : 12;
	g.ch = g.ch < 3 ? 3 : g.ch > 12 ? 12 : g.ch;
	for (int c = 0; c < g.ncols; c++)
		for (unsigned int k = 0; k < g.ng; k++) {
			uint64_t n = grid_cell(h, &g, c, g.g0 + k);

			g.max = n > g.max ? n : g.max;
		}
	ph = g.ng ? (int)g.ng * g.ch : 20;
	w = HM_LEFT + HM_PW + 10;
	fputs("<figure class=\"hm\" data-collector=\"", out);
	esc(out, h->collector);
	fputs("\" data-row=\"", out);
	row_keys(out, h->row, true);
	fputs("\"><figcaption><b>", out);
	esc(out, h->collector);
	fputs("</b> ", out);
	if (!h->row->nkeys)
		fputs("all", out);
	row_keys(out, h->row, false);
	fputs(" \xc2\xb7 ", out);
	esc(out, h->hist_name);
	fprintf(out, " \xc2\xb7 %" PRIu64 " in %d intervals%s; colour: count (log), most %" PRIu64 "</figcaption>\n",
		h->total, h->ncols, g.m > 1 ? " (merged in fewer columns)" : "", g.max);
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		     "font-size=\"11\">\n<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" "
		     "stroke=\"#999\"/>\n",
		w, HM_TOP + ph + HM_FOOT, w, HM_TOP + ph + HM_FOOT, HM_LEFT, HM_TOP, HM_PW, ph);
	for (int c = 0; c < g.ncols && h->ncols; c++) {
		const struct ks_heatmap_col *c0 = &h->cols[c * g.m];
		const struct ks_heatmap_col *c1 = &h->cols[(c + 1) * g.m < h->ncols ? (c + 1) * g.m - 1 : h->ncols - 1];
		int x0 = col_x(h, c0->t0), x1 = col_x(h, c1->t1);

		for (unsigned int k = 0; k < g.ng; k++) {
			unsigned int grp = g.g0 + k;
			uint64_t n = grid_cell(h, &g, c, grp), lo = ks_hist_slot_low(grp * HM_GROUP),
				 hi = ks_hist_slot_high(grp * HM_GROUP + HM_GROUP - 1);

			if (!n)
				continue; /* an empty cell stays blank */
			ks_heatmap_colour(n, g.max, fill);
			fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" data-lo=\"%" PRIu64
				     "\"><title>%.1f-%.1f s, %s-%s: %" PRIu64 "</title></rect>\n",
				x0, HM_TOP + ph - (int)(k + 1) * g.ch, x1 - x0 > 1 ? x1 - x0 : 1, g.ch, fill, lo, c0->t0, c1->t1,
				ks_fmt_unit(h->unit, lo, a, sizeof(a)), ks_fmt_unit(h->unit, hi, b, sizeof(b)), n);
		}
	}
	/* the bucket axis at each power of ten (of 1024 for sizes) the rows cover; the time axis at five points */
	for (uint64_t v = 1; g.ng && v && v <= ks_hist_slot_high((g.g0 + g.ng) * HM_GROUP - 1);
	     v = v > UINT64_MAX / 1024 ? 0 : v * (h->unit == KS_UNIT_BYTES ? 1024 : 10)) {
		unsigned int grp = ks_hist_slot(v) / HM_GROUP;

		if (grp < g.g0)
			continue;
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", HM_LEFT - 4,
			HM_TOP + ph - (int)(grp - g.g0) * g.ch, ks_fmt_unit(h->unit, v, a, sizeof(a)));
	}
	for (int i = 0; i <= 4 && h->ncols; i++) {
		double t0 = h->cols[0].t0, t = t0 + (h->cols[h->ncols - 1].t1 - t0) * i / 4;

		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.1fs</text>", col_x(h, t), HM_TOP + ph + 14, t);
	}
	fputs("\n</svg></figure>\n", out);
}

/* Each collector's @top rows with the most events (ks_heatmap_rows), in the series' order of collectors. */
static int write_heatmaps(const struct ks_series *s, int top, FILE *out)
{
	const char *names[32];
	int nc = 0, err = 0;

	for (size_t i = 0; i < ks_series_len(s); i++) {
		const char *c = ks_series_at(s, i)->collector;
		int k = 0;

		while (k < nc && strcmp(names[k], c))
			k++;
		if (k == nc && nc < 32)
			names[nc++] = c;
	}
	for (int i = 0; i < nc && !err; i++) {
		const struct ks_row **rows;
		int nrows;

		err = ks_heatmap_rows(s, names[i], top, &rows, &nrows);
		for (int k = 0; !err && k < nrows; k++) {
			struct ks_heatmap h;

			err = ks_heatmap_build(&h, s, names[i], rows[k]);
			if (!err)
				write_heatmap(&h, out);
			ks_heatmap_release(&h);
		}
		free(rows);
	}
	return err;
}

/*
 * The page's flame graph leaves out frames narrower than a pixel: it runs no
 * script, so they can be neither seen, hovered nor zoomed, and a 300 s
 * profile has tens of thousands of them (most of the page's bytes and of a
 * browser's time to open it); the graph says how many and their share.
 * For the same reason it has no Reset zoom or Search: they would do nothing.
 */
static int draw_flame(const void *ctx, FILE *f)
{
	return ks_write_svg_opt(ctx, f, &(struct ks_svg_opts){ .min_px = 1, .no_script = 1 });
}

static void write_events(const struct ks_html_in *in, FILE *out)
{
	uint64_t total = 0;

	for (int i = 0; i < in->nevents; i++)
		total += in->events[i].n;
	fprintf(out, "<h2 id=\"events\">Events</h2>\n<p>%" PRIu64 " events of %d types; %" PRIu64 " lost</p>\n", total,
		in->nevents, in->events_lost);
	if (!in->nevents)
		return;
	fputs("<div class=\"scroll\"><table class=\"events\"><thead><tr><th class=\"k\">event</th><th>count</th></tr></thead>"
	      "<tbody>\n",
	      out);
	for (int i = 0; i < in->nevents; i++) {
		fputs("<tr><td class=\"k\">", out);
		esc(out, in->events[i].name);
		fprintf(out, "</td><td>%" PRIu64 "</td></tr>\n", in->events[i].n);
	}
	fputs("</tbody></table></div>\n", out);
}

static void write_cost(const struct ks_html_in *in, FILE *out)
{
	fputs("<h2 id=\"cost\">Losses and ksight's own cost</h2>\n<div class=\"scroll\"><table class=\"cost\"><thead><tr>"
	      "<th class=\"k\">collector</th><th>intervals</th><th>window</th><th>lost</th><th>BPF runs</th>"
	      "<th>BPF time</th><th>per run</th></tr></thead><tbody>\n",
	      out);
	for (int i = 0; i < in->ncost; i++) {
		const struct ks_html_cost *c = &in->cost[i];

		fputs("<tr><td class=\"k\">", out);
		esc(out, c->collector);
		fprintf(out, "</td><td>%" PRIu64 "%s</td><td>%.3f s</td><td>%" PRIu64 "</td>", c->intervals,
			c->whole_window ? "" : " (cut)", c->window_s, c->lost);
		if (c->bpf_stats)
			fprintf(out, "<td>%" PRIu64 "</td><td>%.3f ms</td><td>%.0f ns</td></tr>\n", c->bpf_run_cnt,
				(double)c->bpf_run_ns / 1e6,
				c->bpf_run_cnt ? (double)c->bpf_run_ns / (double)c->bpf_run_cnt : 0.0);
		else
			fputs("<td colspan=\"3\" class=\"muted\">not kept (kernel.bpf_stats_enabled was 0)</td></tr>\n", out);
	}
	fprintf(out, "</tbody></table></div>\n<p>ksight's own CPU: %.3f s over the intervals (the process: recorder and "
		     "collectors)</p>\n",
		(double)in->ksight_cpu_us / 1e6);
}

int ks_write_report_html(const struct ks_html_in *in, FILE *out)
{
	int max = in->table_rows > 0 ? in->table_rows : 100, err = 0;
	const char *note = kv_get(in, "note");

	ks_html_head(out, "ksight report: ", in->title);
	fputs("<nav><a href=\"#manifest\">manifest</a><a href=\"#tables\">percentiles</a>"
	      "<a href=\"#heatmaps\">heatmaps</a><a href=\"#events\">events</a><a href=\"#cost\">losses and cost</a>",
	      out);
	if (in->oncpu || in->offcpu)
		fputs("<a href=\"#flame\">flame graphs</a>", out);
	fputs("</nav>\n", out);
	if (note) {
		fputs("<blockquote class=\"note\">", out);
		esc(out, note);
		fputs("</blockquote>\n", out);
	}
	write_manifest(in, out);
	fputs("<h2 id=\"tables\">Percentiles over the whole window</h2>\n", out);
	if (!in->ntotals)
		fputs("<p class=\"muted\">no whole-window report (the recording was cut before its end, or has no "
		      "collectors)</p>\n",
		      out);
	for (int i = 0; i < in->ntotals; i++)
		write_table(&in->totals[i], max, out);
	fputs("<h2 id=\"heatmaps\">Latency heatmaps</h2>\n", out);
	if (in->series && ks_series_len(in->series)) {
		int top = in->heatmap_rows > 0 ? in->heatmap_rows : 3;

		fprintf(out, "<p class=\"muted\">each collector's %d rows with the most events: time across, buckets up "
			     "(log), count as colour; hover a cell for its time, bucket and count</p>\n",
			top);
		if (ks_series_dropped(in->series))
			fprintf(out, "<p class=\"muted\">the first %" PRIu64 " intervals are left out: the series keeps at most %zu MiB"
				     "</p>\n",
				ks_series_dropped(in->series), ks_series_budget(in->series) >> 20);
		err = write_heatmaps(in->series, top, out);
	} else {
		fputs("<p class=\"muted\">no interval reports (record --collect with -i)</p>\n", out);
	}
	write_events(in, out);
	write_cost(in, out);
	if (!err && (in->oncpu || in->offcpu)) {
		fputs("<h2 id=\"flame\">Flame graphs</h2>\n", out);
		for (int k = 0; k < 2 && !err; k++) {
			const struct ks_stacks *st = k ? in->offcpu : in->oncpu;

			if (!st)
				continue;
			fprintf(out, "<h3>%s</h3>\n<div class=\"flame %s\">", k ? "off-CPU" : "on-CPU", k ? "offcpu" : "oncpu");
			err = embed_svg(out, draw_flame, st);
			fputs("</div>\n", out);
		}
	}
	fputs("</body></html>\n", out);
	return err ? err : ks_stream_status(out);
}
