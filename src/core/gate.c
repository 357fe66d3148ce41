/* The --fail-on gate parser and selector: pure string work, unit-tested without root (tests/unit/test_diffstat.c). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gate.h"
#include "core/parse.h"

static const char *const metric_names[] = { "p50", "p90", "p99", "p999", "mean", "max", "count", "total" };
static const double metric_q[] = { 0.5, 0.9, 0.99, 0.999, 0, 0, 0, 0 };

const char *ks_gate_metric_name(enum ks_gate_metric m)
{
	return metric_names[m];
}

double ks_gate_metric_q(enum ks_gate_metric m)
{
	return metric_q[m];
}

/* A number with an optional unit: times to nanoseconds, K/M/G to bytes, else as written. */
static int parse_value(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || isspace((unsigned char)*s) || *s == '+' || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -EINVAL;
	if (!*end) {
		*out = v;
		return 0;
	}
	if (!strcmp(end, "K") || !strcmp(end, "M") || !strcmp(end, "G")) {
		*out = v * (*end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : 1073741824.0);
		return 0;
	}
	/* "1m" and "1h" are a minute and an hour to -d: not thresholds of latency */
	if (ks_parse_seconds(s, &v) || (end[0] == 'm' && !end[1]) || end[0] == 'h')
		return -EINVAL;
	*out = v * 1e9;
	return 0;
}

static int fail(char *err, size_t len, const char *why, const char *text)
{
	snprintf(err, len, "bad --fail-on '%s': %s", text, why);
	return -EINVAL;
}

int ks_gate_parse(const char *s, struct ks_gate *g, char *err, size_t errlen)
{
	char buf[256], *colon, *opp, *dot, *sel, *thr;
	int sign = 0;

	memset(g, 0, sizeof(*g));
	ks_escape(s, g->text, sizeof(g->text));
	if (strlen(s) >= sizeof(buf))
		return fail(err, errlen, "too long", g->text);
	snprintf(buf, sizeof(buf), "%s", s);
	colon = strchr(buf, ':');
	if (!colon || colon == buf)
		return fail(err, errlen, "no 'COLLECTOR:' (e.g. syscalls:read.p99>+10%)", g->text);
	*colon = 0;
	if (colon - buf >= (long)sizeof(g->collector))
		return fail(err, errlen, "collector name too long", g->text);
	for (char *c = buf; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return fail(err, errlen, "a collector is a name such as syscalls", g->text);
	memcpy(g->collector, buf, (size_t)(colon - buf) + 1);
	sel = colon + 1;
	opp = strpbrk(sel, "<>");
	if (!opp)
		return fail(err, errlen, "no operator: '>' or '<'", g->text);
	g->op = *opp;
	thr = opp + 1;
	*opp = 0;
	dot = strrchr(sel, '.');
	if (!dot)
		return fail(err, errlen, "no '.METRIC' before the operator", g->text);
	*dot = 0;
	g->metric = (enum ks_gate_metric)-1;
	for (size_t i = 0; i < sizeof(metric_names) / sizeof(metric_names[0]); i++)
		if (!strcmp(dot + 1, metric_names[i]))
			g->metric = (enum ks_gate_metric)i;
	if ((int)g->metric < 0)
		return fail(err, errlen, "the metric is one of p50 p90 p99 p999 mean max count total", g->text);
	if (!*sel)
		return fail(err, errlen, "empty row selector (use '*' for every row)", g->text);
	for (char *t = sel, *next; t; t = next) {
		char *eq;

		next = strchr(t, '&');
		if (next)
			*next++ = 0;
		if (g->nterms == KS_GATE_TERMS)
			return fail(err, errlen, "at most 4 '&' terms in a selector", g->text);
		if (!*t)
			return fail(err, errlen, "an empty term in the selector", g->text);
		eq = strchr(t, '=');
		if (eq) {
			*eq = 0;
			if (!*t || !eq[1])
				return fail(err, errlen, "a term is KEY=GLOB", g->text);
			if (strlen(t) >= sizeof(g->term[0].key))
				return fail(err, errlen, "key name too long", g->text);
			snprintf(g->term[g->nterms].key, sizeof(g->term[0].key), "%s", t);
			t = eq + 1;
		}
		if (strlen(t) >= sizeof(g->term[0].glob))
			return fail(err, errlen, "selector too long", g->text);
		snprintf(g->term[g->nterms++].glob, sizeof(g->term[0].glob), "%s", t);
	}
	if (*thr == '+' || *thr == '-')
		sign = *thr++ == '-' ? -1 : 1;
	if (*thr && thr[strlen(thr) - 1] == '%') {
		char *end;

		thr[strlen(thr) - 1] = 0;
		errno = 0;
		g->thr = strtod(thr, &end);
		if (!*thr || *end || errno || !isfinite(g->thr) || *thr == '+' || *thr == '-' || isspace((unsigned char)*thr))
			return fail(err, errlen, "a relative threshold is a number then '%', e.g. +10%", g->text);
		g->kind = KS_GATE_PCT;
		g->thr *= sign ? sign : 1;
		return 0;
	}
	if (parse_value(thr, &g->thr))
		return fail(err, errlen, "the threshold is +N% or -N%, a change +N[UNIT] / -N[UNIT], or a level N[UNIT] (ns us ms s K M G)", g->text);
	g->kind = sign ? KS_GATE_DELTA : KS_GATE_LEVEL;
	if (sign)
		g->thr *= sign;
	return 0;
}

bool ks_gate_select(const struct ks_gate *g, const char *const *names, const char *const *vals, int n)
{
	for (int t = 0; t < g->nterms; t++) {
		bool hit = false;

		for (int k = 0; k < n && !hit; k++)
			hit = (!g->term[t].key[0] || !strcmp(g->term[t].key, names[k])) &&
			      !fnmatch(g->term[t].glob, vals[k], 0);
		/* '*' selects a row without keys too (a collector's single row) */
		if (!hit && !(n == 0 && !g->term[t].key[0] && !strcmp(g->term[t].glob, "*")))
			return false;
	}
	return true;
}

bool ks_gate_holds(const struct ks_gate *g, double a, double b)
{
	double v;

	switch (g->kind) {
	case KS_GATE_PCT:
		if (a > 0)
			v = (b - a) / a * 100;
		else
			v = b > 0 ? INFINITY : 0;
		break;
	case KS_GATE_DELTA:
		v = b - a;
		break;
	default:
		v = b;
	}
	return g->op == '>' ? v > g->thr : v < g->thr;
}
