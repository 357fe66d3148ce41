/* The two text encodings of the metric model: Prometheus text 0.0.4 and OpenMetrics 1.0.0 (protobuf in promproto.c). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "output/output.h"
#include "output/prom.h"

/* The shortest "%g" that reads back as @v; integers plainly, infinities as Prometheus spells them. */
static void fmt_double(char *buf, size_t len, double v)
{
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static void write_escaped(FILE *out, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (*s == '"' && quote)
			fputs("\\\"", out);
		else
			fputc(*s, out);
	}
}

static void write_labels(FILE *out, const struct prom_sample *s, const char *le)
{
	if (!s->nlabels && !le)
		return;
	fputc('{', out);
	for (int i = 0; i < s->nlabels; i++) {
		fprintf(out, "%s%s=\"", i ? "," : "", s->labels[i].name);
		write_escaped(out, prom_label_value(&s->labels[i]), true);
		fputc('"', out);
	}
	if (le)
		fprintf(out, "%sle=\"%s\"", s->nlabels ? "," : "", le);
	fputc('}', out);
}

static void write_hist_text(FILE *out, const struct prom_family *f, const struct prom_sample *s)
{
	uint64_t cum[32];
	char le[48], v[48];
	int n;
	const uint64_t *b = prom_classic_bounds(f->unit, &n);

	prom_classic_counts(s->hist, b, n, cum);
	for (int i = 0; i < n; i++) {
		fmt_double(le, sizeof(le), (double)b[i] / f->div);
		fprintf(out, "%s_bucket", f->name);
		write_labels(out, s, le);
		fprintf(out, " %" PRIu64 "\n", cum[i]);
	}
	fprintf(out, "%s_bucket", f->name);
	write_labels(out, s, "+Inf");
	fprintf(out, " %" PRIu64 "\n", s->hist->count);
	fmt_double(v, sizeof(v), (double)s->hist->sum / f->div);
	fprintf(out, "%s_sum", f->name);
	write_labels(out, s, NULL);
	fprintf(out, " %s\n%s_count", v, f->name);
	write_labels(out, s, NULL);
	fprintf(out, " %" PRIu64 "\n", s->hist->count);
}

static void write_text_set(const struct prom_set *set, FILE *out, bool om)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };

	for (int i = 0; i < set->n; i++) {
		const struct prom_family *f = &set->f[i];
		const char *suffix = f->type == PROM_COUNTER ? "_total" : "";
		/* OpenMetrics names the counter family without "_total"; 0.0.4 names it as its samples */
		const char *fsuffix = om ? "" : suffix;

		if (!f->n)
			continue;
		fprintf(out, "# HELP %s%s ", f->name, fsuffix);
		write_escaped(out, f->help, om);
		fprintf(out, "\n# TYPE %s%s %s\n", f->name, fsuffix, types[f->type]);
		/* the text format 0.0.4 has no UNIT line */
		if (om && prom_unit(f))
			fprintf(out, "# UNIT %s %s\n", f->name, prom_unit(f));
		for (int j = 0; j < f->n; j++) {
			const struct prom_sample *s = &f->s[j];
			char v[48];

			if (f->type == PROM_HISTOGRAM) {
				write_hist_text(out, f, s);
				continue;
			}
			fmt_double(v, sizeof(v), s->value);
			fprintf(out, "%s%s", f->name, suffix);
			write_labels(out, s, NULL);
			fprintf(out, " %s\n", v);
		}
	}
}

int prom_write(enum prom_format fmt, const struct prom_set *const *sets, int n, FILE *out)
{
	if (fmt == PROM_FMT_PROTO) {
		for (int i = 0; i < n; i++) {
			int err = prom_write_proto(sets[i], out);

			if (err)
				return err;
		}
		return 0;
	}
	for (int i = 0; i < n; i++)
		write_text_set(sets[i], out, fmt == PROM_FMT_OPENMETRICS);
	if (fmt == PROM_FMT_OPENMETRICS)
		fputs("# EOF\n", out);
	return ks_stream_status(out);
}

const char *prom_content_type(enum prom_format fmt)
{
	return fmt == PROM_FMT_PROTO ? PROM_CT_PROTO : fmt == PROM_FMT_OPENMETRICS ? PROM_CT_OPENMETRICS : PROM_CT_TEXT;
}
