/* `ksight diff --fail-on EXPR`: the grammar of a gate, its parser and its row selector (docs/diff.md). */
#ifndef KS_CORE_GATE_H
#define KS_CORE_GATE_H

#include <stdbool.h>
#include <stddef.h>

/*
 *   EXPR     := COLLECTOR ':' SELECTOR '.' METRIC OP THRESHOLD
 *   SELECTOR := TERM ('&' TERM)*      every term must hold
 *   TERM     := GLOB                  some key of the row matches (fnmatch), '*' any row
 *             | KEY '=' GLOB          the row's key KEY matches
 *   METRIC   := p50 | p90 | p99 | p999 | mean | max | count | total
 *   OP       := '>' | '<'
 *   THRESHOLD:= [+-]NUMBER '%'        change relative to A, percent (sign optional)
 *             | (+|-)NUMBER[UNIT]     change B - A, the sign required
 *             | NUMBER[UNIT]          B's own value (a level)
 *   UNIT     := ns | us | ms | s      (to nanoseconds) | K | M | G (bytes, powers of 1024)
 *
 * The metric is the last '.'-separated word before the operator, so a
 * selector may hold dots (cgroup and task names do); ',' separates gates
 * in one --fail-on and cannot appear in a selector (use '?').
 */
enum ks_gate_metric { KS_GM_P50, KS_GM_P90, KS_GM_P99, KS_GM_P999, KS_GM_MEAN, KS_GM_MAX, KS_GM_COUNT, KS_GM_TOTAL };
enum ks_gate_kind { KS_GATE_PCT, KS_GATE_DELTA, KS_GATE_LEVEL };

#define KS_GATE_TERMS 4

struct ks_gate {
	char text[160];		/* the expression as given (sanitized), for messages */
	char collector[32];
	int nterms;
	struct {
		char key[32];	/* "" for a bare glob */
		char glob[96];
	} term[KS_GATE_TERMS];
	enum ks_gate_metric metric;
	char op;		/* '>' or '<' */
	enum ks_gate_kind kind;
	double thr;		/* percent, or a value in the metric's unit (nanoseconds for times) */
};

/* Parses @s into @g: 0, or -EINVAL with a one-line reason in @err. */
int ks_gate_parse(const char *s, struct ks_gate *g, char *err, size_t errlen);
/* Whether the row with key names @names and values @vals (@n of them) is selected. */
bool ks_gate_select(const struct ks_gate *g, const char *const *names, const char *const *vals, int n);
const char *ks_gate_metric_name(enum ks_gate_metric m);
/* The quantile of a percentile metric (0.5 ... 0.999), 0 for the others. */
double ks_gate_metric_q(enum ks_gate_metric m);
/* Whether the change of A's @a to B's @b in @g's terms holds (NaN-free: a percentage of a = 0 is infinite). */
bool ks_gate_holds(const struct ks_gate *g, double a, double b);

#endif
