/* The exporter's index page (GET / of `ksight serve`) as HTML. */
#ifndef KS_OUTPUT_HTML_H
#define KS_OUTPUT_HTML_H

#include <stdio.h>
#include "core/report.h"

/* A table of @reports[0..n) (collector, hook, series, losses) and the drain period; 0 or negative errno. */
int ks_write_index_html(const struct ks_report *reports, int n, double period_s, FILE *out);

#endif
