/* The writers of `ksight diff` on collector reports and folded stacks: text, JSON, differential flame graph SVG. */
#ifndef KS_OUTPUT_DIFF_H
#define KS_OUTPUT_DIFF_H

#include <stdio.h>
#include "core/diffset.h"
#include "core/folded.h"

/* Rows side by side, their tests, and the gates judged (fired ones marked): 0 or -EIO. */
int ks_diff_write_text(const struct ks_diff *d, const struct ks_gate *gates, FILE *out);
/* The same as one JSON document (docs/diff.md). */
int ks_diff_write_json(const struct ks_diff *d, const struct ks_gate *gates, FILE *out);
/* One line for a fired gate, e.g. for stderr: "syscalls:read.p99>+10%: syscall=read nr=0: p99 1.2ms -> 2.5ms (+108.3%) ...". */
void ks_diff_write_hit(const struct ks_diff *d, const struct ks_gate *gates, const struct ks_gate_hit *h, FILE *out);
/* The same as one self-contained HTML page (no script): a table per row, the gates with the fired ones marked. */
int ks_diff_write_html(const struct ks_diff *d, const struct ks_gate *gates, FILE *out);
/* A metric's value in the row's unit ("1.2ms", "4KiB", "1234"); a quantile's interval "[lo, hi]" (open ends 0 and inf). */
const char *ks_diff_fmt_metric(const struct ks_drow *r, enum ks_gate_metric m, double v, char *buf, size_t len);
const char *ks_diff_ci_text(const struct ks_drow *r, const struct ks_qci *c, char *buf, size_t len);
/* A differential flame graph: widths from B, red where B grew, blue where it shrank (A scaled to B's total). */
int ks_diff_write_svg(const struct ks_folded2 *f, const char *title, FILE *out);
/* The folded comparison as JSON: per stack (by name) its counts and shares of A and B (docs/diff.md). */
int ks_diff_write_folded_json(const struct ks_folded2 *f, const char *fa, const char *fb, FILE *out);
/* The folded comparison as text: the stacks that changed most, by their share of each side. */
int ks_diff_write_folded_text(const struct ks_folded2 *f, FILE *out);
/* A Mann-Whitney result's fields (U, z, p, P(B > A)) into the open JSON object @j: diff's rows and its event pairs. */
struct ks_json;
struct ks_mwu;
void ks_diff_json_mwu(struct ks_json *j, const struct ks_mwu *t);

#endif
