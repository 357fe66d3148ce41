/* The text writer of `ksight diff` on collector reports: per row a small table of A, B and the change, then the gates. */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "core/report.h"
#include "core/sanitize.h"
#include "output/diff.h"
#include "output/output.h"

static enum ks_unit unit_of(const struct ks_drow *r)
{
	return !strcmp(r->unit, "ns") ? KS_UNIT_NS : !strcmp(r->unit, "bytes") ? KS_UNIT_BYTES : KS_UNIT_COUNT;
}

static const char *fmt_metric(const struct ks_drow *r, enum ks_gate_metric m, double v, char *buf, size_t len)
{
	if (m == KS_GM_COUNT || !strcmp(r->unit, "count")) {
		snprintf(buf, len, m == KS_GM_MEAN ? "%.1f" : "%.0f", v);
		return buf;
	}
	return ks_fmt_unit(unit_of(r), (uint64_t)llround(v), buf, len);
}

static void pct(FILE *out, double a, double b)
{
	if (a > 0)
		fprintf(out, "%+9.1f%%", (b - a) / a * 100);
	else
		fprintf(out, "%10s", b > 0 ? "new" : "-");
}

static const char *ci_text(const struct ks_drow *r, const struct ks_qci *c, char *buf, size_t len)
{
	char lo[32], hi[32];

	snprintf(buf, len, "[%s, %s]", c->open_lo ? "0" : fmt_metric(r, KS_GM_P50, (double)c->lo, lo, sizeof(lo)),
		 c->open_hi ? "inf" : fmt_metric(r, KS_GM_P50, (double)c->hi, hi, sizeof(hi)));
	return buf;
}

/* The two above for the HTML writer (output/diff.h). */
const char *ks_diff_fmt_metric(const struct ks_drow *r, enum ks_gate_metric m, double v, char *buf, size_t len)
{
	return fmt_metric(r, m, v, buf, len);
}

const char *ks_diff_ci_text(const struct ks_drow *r, const struct ks_qci *c, char *buf, size_t len)
{
	return ci_text(r, c, buf, len);
}

void ks_diff_write_hit(const struct ks_diff *d, const struct ks_gate *gates, const struct ks_gate_hit *h, FILE *out)
{
	const struct ks_dcmp *c = &d->rows[h->row];
	enum ks_gate_metric m = gates[h->gate].metric;
	char a[32], b[32], ci[2][80];

	fprintf(out, "%s: ", gates[h->gate].text);
	ks_sanitize_put(out, c->any->label[0] ? c->any->label : "(one row)", NULL);
	fprintf(out, ": %s %s -> %s (", ks_gate_metric_name(m), fmt_metric(c->any, m, h->a, a, sizeof(a)), fmt_metric(c->any, m, h->b, b, sizeof(b)));
	if (h->a > 0)
		fprintf(out, "%+.1f%%", (h->b - h->a) / h->a * 100);
	else
		fprintf(out, "new");
	if (ks_gate_metric_q(m) > 0)
		fprintf(out, "), intervals A %s B %s at alpha %.3g\n", ci_text(c->any, &h->ci[0], ci[0], sizeof(ci[0])),
			ci_text(c->any, &h->ci[1], ci[1], sizeof(ci[1])), d->alpha_gate);
	else if (!isnan(h->p))
		fprintf(out, "), p = %.3g < %.3g\n", h->p, d->alpha_gate);
	else
		fprintf(out, ")\n");
}

static void write_row(FILE *out, const struct ks_dcmp *c)
{
	static const enum ks_gate_metric ms[] = { KS_GM_COUNT, KS_GM_P50, KS_GM_P90, KS_GM_P99, KS_GM_P999, KS_GM_MAX, KS_GM_MEAN };
	char a[32], b[32], ci[2][80];

	fputs("\n", out);
	ks_sanitize_put(out, c->any->collector, NULL);
	fputs(" ", out);
	ks_sanitize_put(out, c->any->label[0] ? c->any->label : "(one row)", NULL);
	fprintf(out, "%s\n%-6s %12s %12s %10s   %-26s %-26s\n", !c->r[0] ? " (only in B)" : !c->r[1] ? " (only in A)" : "",
		"", "A", "B", "CHANGE", "A INTERVAL", "B INTERVAL");
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		double va = ks_drow_metric(c->r[0], ms[i]), vb = ks_drow_metric(c->r[1], ms[i]);
		double q = ks_gate_metric_q(ms[i]);

		if (ms[i] != KS_GM_COUNT && !c->any->has_hist)
			continue;
		fprintf(out, "%-6s %12s %12s ", ks_gate_metric_name(ms[i]), fmt_metric(c->any, ms[i], va, a, sizeof(a)),
			fmt_metric(c->any, ms[i], vb, b, sizeof(b)));
		pct(out, va, vb);
		if (q > 0) {
			int k = q == 0.5 ? 0 : q == 0.9 ? 1 : q == 0.99 ? 2 : 3;

			fprintf(out, "   %-26s %-26s", ci_text(c->any, &c->ci[0][k], ci[0], sizeof(ci[0])),
				ci_text(c->any, &c->ci[1][k], ci[1], sizeof(ci[1])));
		}
		fputc('\n', out);
	}
	if (c->tested)
		fprintf(out, "Mann-Whitney over buckets: p = %.3g, P(B > A) = %.3f: %s\n", c->mwu.p, c->mwu.a12,
			c->shift > 0 ? "significant: B is slower (larger)" : c->shift < 0 ? "significant: B is faster (smaller)"
							  : "no significant shift");
}

int ks_diff_write_text(const struct ks_diff *d, const struct ks_gate *gates, FILE *out)
{
	for (int s = 0; s < 2; s++) {
		const struct ks_dset *ds = d->side[s];

		fprintf(out, "%s: ", s ? "B" : "A");
		ks_sanitize_put(out, ds->file, NULL);
		for (int i = 0; i < ds->ncol; i++)
			fprintf(out, "%s %s (%d report%s, %.3f s)", i ? "," : "", ds->col[i].name, ds->col[i].docs,
				ds->col[i].docs == 1 ? "" : "s", ds->col[i].duration_s);
		fputc('\n', out);
	}
	fprintf(out, "%zu rows; intervals and tests at alpha %g / %zu rows = %.3g (Bonferroni)\n", d->n, d->alpha, d->n,
		d->alpha_row);
	for (size_t i = 0; i < d->n; i++)
		write_row(out, &d->rows[i]);
	if (d->nhits) {
		fprintf(out, "\ngates: %zu (gate, row) pairs judged at alpha %g / %zu = %.3g; %zu fired\n", d->nhits, d->alpha,
			d->nhits, d->alpha_gate, d->nfired);
		for (size_t i = 0; i < d->nhits; i++) {
			const struct ks_gate_hit *h = &d->hits[i];

			fprintf(out, "%-9s ", h->holds && h->significant ? "FIRED" : h->holds ? "not-sig" : "ok");
			ks_diff_write_hit(d, gates, h, out);
		}
	}
	return ks_stream_status(out);
}
