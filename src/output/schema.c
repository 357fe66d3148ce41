/* Renders a collector's declared columns (struct ks_schema): the docs/json.md table and one-line help, from one declaration. */
#include <stdio.h>
#include "output/output.h"

const char *ks_col_kind_name(enum ks_col_kind k)
{
	static const char *const names[] = {
		[KS_COL_COUNTER] = "counter",
		[KS_COL_GAUGE] = "gauge",
		[KS_COL_DURATION] = "duration",
		[KS_COL_BYTES] = "bytes",
	};

	return k <= KS_COL_BYTES ? names[k] : "?";
}

const char *ks_unit_name(enum ks_unit u)
{
	return u == KS_UNIT_NS ? "ns" : u == KS_UNIT_BYTES ? "bytes" : "count";
}

int ks_schema_write_md(const struct ks_schema *s, FILE *out)
{
	fputs("| field | kind | unit | meaning |\n|---|---|---|---|\n", out);
	for (const struct ks_column *c = s->cols; c && c->name; c++)
		fprintf(out, "| `%s` | %s | %s | %s |\n", c->name, ks_col_kind_name(c->kind), ks_unit_name(c->unit),
			c->help ? c->help : "");
	if (s->hist_name)
		fprintf(out, "| `%s` | histogram | %s | %s |\n", s->hist_name, ks_unit_name(s->hist_unit),
			s->hist_help ? s->hist_help : "");
	return ks_stream_status(out);
}
