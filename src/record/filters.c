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
