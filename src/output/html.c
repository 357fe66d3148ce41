/* The exporter's index page: one HTML table row per collector (hook, series, losses), every name escaped. */
#include <stdio.h>
#include "core/sanitize.h"
#include "output/html.h"
#include "output/output.h"

static void html_escape(FILE *out, const char *s)
{
	ks_sanitize_put(out, s ? s : "", ks_quote_xml);
}

int ks_write_index_html(const struct ks_report *reports, int n, double period_s, FILE *out)
{
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ksight exporter</title></head><body>\n"
	      "<h1>ksight exporter</h1>\n<p><a href=\"/metrics\">/metrics</a> &middot; <a href=\"/healthz\">/healthz</a> &middot; "
	      "<a href=\"/debug/pprof/profile?seconds=10\">/debug/pprof/profile?seconds=10</a> (a CPU profile, pprof)</p>\n"
	      "<table border=\"1\"><tr><th>collector</th><th>hook</th><th>series</th><th>events lost</th><th>losses by cause</th></tr>\n",
	      out);
	for (int i = 0; i < n; i++) {
		const struct ks_report *r = &reports[i];

		fputs("<tr><td>", out);
		html_escape(out, r->collector);
		fputs("</td><td>", out);
		html_escape(out, r->hook ? r->hook : "?");
		fprintf(out, "</td><td>%d</td><td>%llu</td><td>", r->nrows, (unsigned long long)r->lost);
		for (int j = 0; j < r->nlost; j++) {
			html_escape(out, r->lost_by[j].name);
			fprintf(out, "=%llu ", (unsigned long long)r->lost_by[j].num);
		}
		fputs("</td></tr>\n", out);
	}
	fprintf(out, "</table>\n<p>drain period %.3g s</p>\n</body></html>\n", period_s);
	return ks_stream_status(out);
}
