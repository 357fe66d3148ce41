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
