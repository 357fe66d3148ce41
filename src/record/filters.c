/* record --filter: the expression compiled against each recorded event's format before anything is loaded or attached. */
#include <stdio.h>
#include <stdlib.h>
#include "format/filter.h"
#include "record/recorder.h"

struct ks_flt_prog *ks_rec_filters(const char *text, const struct ks_rec_tps *tps)
{
	struct ks_flt_err err;
	struct ks_flt_expr *x = ks_flt_parse(text, &err);
	struct ks_flt_prog *progs = NULL;

	if (x)
		progs = calloc((size_t)tps->n, sizeof(*progs));
	if (x && !progs) {
		err.col = -1;
		snprintf(err.msg, sizeof(err.msg), "out of memory");
	}
	/* every event must have the fields: the first that lacks one is named */
	for (int i = 0; progs && i < tps->n; i++)
		if (ks_flt_compile_format(x, tps->v[i].sys, tps->v[i].format, &progs[i], &err)) {
			free(progs);
			progs = NULL;
		}
	if (!progs)
		ks_flt_report("--filter", text, &err);
	ks_flt_expr_free(x);
	return progs;
}

struct ks_flt_prog *ks_rec_triggers(const char *text, const struct ks_rec_tps *tps)
{
	struct ks_flt_err err, first = { .col = -1 };
	struct ks_flt_expr *x = ks_flt_parse(text, &err);
	struct ks_flt_prog *progs = NULL;
	int ok = 0;

	if (!x) {
		ks_flt_report("--trigger", text, &err);
		return NULL;
	}
	progs = calloc((size_t)tps->n, sizeof(*progs));
	/* a trigger names a marker event's fields: the other events simply never trigger */
	for (int i = 0; progs && i < tps->n; i++) {
		if (!ks_flt_compile_format(x, tps->v[i].sys, tps->v[i].format, &progs[i], &err))
			ok++;
		else if (first.col == -1 && !first.msg[0])
			first = err;
	}
	if (progs && !ok) {
		ks_flt_report("--trigger", text, &first);
		free(progs);
		progs = NULL;
	}
	ks_flt_expr_free(x);
	return progs;
}
