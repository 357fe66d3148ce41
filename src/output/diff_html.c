/* `diff --html`: two sides' collector reports as one self-contained page (the report page's head and style): a table per row with A, B, the change and the intervals, the test, and the gates with the fired ones marked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/sanitize.h"
#include "output/diff.h"
#include "output/output.h"
#include "output/report_html.h"

static void esc(FILE *out, const char *s)
{
	ks_sanitize_put(out, s ? s : "", ks_quote_xml);
}

static void change(FILE *out, double a, double b)
{
	if (a > 0)
		fprintf(out, "<td>%+.1f%%</td>", (b - a) / a * 100);
	else
		fprintf(out, "<td>%s</td>", b > 0 ? "new" : "-");
}

static void write_row(FILE *out, const struct ks_dcmp *c)
{
	static const enum ks_gate_metric ms[] = { KS_GM_COUNT, KS_GM_P50, KS_GM_P90, KS_GM_P99, KS_GM_P999, KS_GM_MAX, KS_GM_MEAN };
	char a[32], b[32], ci[80];

	fputs("<h3>", out);
	esc(out, c->any->collector);
	fputs(" ", out);
	esc(out, c->any->label[0] ? c->any->label : "(one row)");
	fprintf(out, "%s</h3>\n<div class=\"scroll\"><table class=\"row\" data-collector=\"",
		!c->r[0] ? " (only in B)" : !c->r[1] ? " (only in A)" : "");
	esc(out, c->any->collector);
	fputs("\" data-row=\"", out);
	esc(out, c->any->label);
	fputs("\"><thead><tr><th class=\"k\"></th><th>A</th><th>B</th><th>change</th><th>A interval</th>"
	      "<th>B interval</th></tr></thead><tbody>\n",
	      out);
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		double va = ks_drow_metric(c->r[0], ms[i]), vb = ks_drow_metric(c->r[1], ms[i]), q = ks_gate_metric_q(ms[i]);

		if (ms[i] != KS_GM_COUNT && !c->any->has_hist)
			continue;
		fprintf(out, "<tr><td class=\"k\">%s</td><td>%s</td><td>%s</td>", ks_gate_metric_name(ms[i]),
			ks_diff_fmt_metric(c->any, ms[i], va, a, sizeof(a)), ks_diff_fmt_metric(c->any, ms[i], vb, b, sizeof(b)));
		change(out, va, vb);
		if (q > 0) {
			int k = q == 0.5 ? 0 : q == 0.9 ? 1 : q == 0.99 ? 2 : 3;

			fprintf(out, "<td>%s</td>", ks_diff_ci_text(c->any, &c->ci[0][k], ci, sizeof(ci)));
			fprintf(out, "<td>%s</td>", ks_diff_ci_text(c->any, &c->ci[1][k], ci, sizeof(ci)));
		} else {
			fputs("<td></td><td></td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
	if (c->tested)
		fprintf(out, "<p class=\"test\">Mann-Whitney over buckets: p = %.3g, P(B &gt; A) = %.3f: <b>%s</b></p>\n", c->mwu.p,
			c->mwu.a12,
			c->shift > 0 ? "significant: B is slower (larger)" : c->shift < 0 ? "significant: B is faster (smaller)"
							  : "no significant shift");
}

/* A fired gate's line as the text writer has it (ks_diff_write_hit), quoted for HTML. */
static int write_hit(FILE *out, const struct ks_diff *d, const struct ks_gate *gates, const struct ks_gate_hit *h)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return -ENOMEM;
	ks_diff_write_hit(d, gates, h, m);
	if (fclose(m)) {
		free(buf);
		return -ENOMEM;
	}
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	esc(out, buf);
	free(buf);
	return 0;
}

int ks_diff_write_html(const struct ks_diff *d, const struct ks_gate *gates, FILE *out)
{
	int err = 0;

	ks_html_head(out, "ksight diff: ", d->side[1]->file);
	fputs("<div class=\"scroll\"><table class=\"kv\">\n", out);
	for (int s = 0; s < 2; s++) {
		const struct ks_dset *ds = d->side[s];

		fprintf(out, "<tr><th class=\"k\">%s</th><td>", s ? "B" : "A");
		esc(out, ds->file);
		for (int i = 0; i < ds->ncol; i++) {
			fputs(i ? ", " : ": ", out);
			esc(out, ds->col[i].name);
			fprintf(out, " (%d report%s, %.3f s)", ds->col[i].docs, ds->col[i].docs == 1 ? "" : "s",
				ds->col[i].duration_s);
		}
		fputs("</td></tr>\n", out);
	}
	fprintf(out, "</table></div>\n<p>%zu rows; intervals and tests at alpha %g / %zu rows = %.3g (Bonferroni)</p>\n",
		d->n, d->alpha, d->n, d->alpha_row);
	if (d->nhits) {
		fprintf(out, "<h2 id=\"gates\">Gates: %zu fired</h2>\n<p>%zu (gate, row) pairs judged at alpha %g / %zu = %.3g"
			     "</p>\n<div class=\"scroll\"><table class=\"gates\"><tbody>\n",
			d->nfired, d->nhits, d->alpha, d->nhits, d->alpha_gate);
		for (size_t i = 0; i < d->nhits && !err; i++) {
			const struct ks_gate_hit *h = &d->hits[i];
			bool fired = h->holds && h->significant;

			fprintf(out, "<tr%s><td class=\"k\">%s</td><td class=\"k\">", fired ? " class=\"fired\"" : "",
				fired ? "FIRED" : h->holds ? "not-sig" : "ok");
			err = write_hit(out, d, gates, h);
			fputs("</td></tr>\n", out);
		}
		fputs("</tbody></table></div>\n", out);
	}
	fputs("<h2 id=\"rows\">Rows</h2>\n", out);
	for (size_t i = 0; i < d->n; i++)
		write_row(out, &d->rows[i]);
	fputs("</body></html>\n", out);
	return err ? err : ks_stream_status(out);
}
