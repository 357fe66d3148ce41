/* Collector instances: the phases open -> mark -> one kernel wait -> drain -> close, shared by every driver. */
#include <errno.h>
#include <stdlib.h>
#include "core/bpfutil.h"
#include "core/driver.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/log.h"

int ks_instance_init(struct ks_instance *in, const struct ks_collector *col)
{
	in->col = col;
	in->marked = false;
	in->f = NULL;
	ks_common_init(&in->c);
	in->ctx = calloc(1, col->ctx_size ? col->ctx_size : 1);
	if (!in->ctx)
		return -ENOMEM;
	if (col->init) {
		int err = col->init(in->ctx);

		if (err) {
			free(in->ctx);
			in->ctx = NULL;
			return err < 0 ? err : -EINVAL;
		}
	}
	return 0;
}

int ks_instance_open(struct ks_instance *in, const struct ks_filter *f)
{
	int err;

	in->f = f;
	err = in->col->open(in->ctx, &in->c, f);
	/* close runs on every path, failed opens too: the collector frees what it half-built */
	return err;
}

int ks_instances_share(struct ks_instance *in, int n, const struct ks_filter *f, uint64_t whole,
		       struct ks_budget_share *extra)
{
	struct ks_budget_share *parts[KS_SHARE_MAX + 1];
	struct ks_budget b;
	int np = 0, err;

	if (n > KS_SHARE_MAX) {
		p_err("at most %d collectors share one --max-memory", KS_SHARE_MAX);
		return -E2BIG;
	}
	ks_budget_init(&b, whole);
	for (int i = 0; i < n; i++) {
		const struct ks_collector *col = in[i].col;
		struct ks_common c = in[i].c;

		c.share = &in[i].share;
		c.max_memory = b.limit;
		in[i].share = (struct ks_budget_share){ .measure = true, .name = col->spec.name };
		in[i].c = c;
		err = ks_instance_open(&in[i], f);
		if (err == -EALREADY) {
			/* a measured open left state behind: start again from the options */
			ks_instance_close(&in[i]);
			err = ks_instance_init(&in[i], col);
			in[i].c = c;
		} else if (!err) {
			err = -EINVAL;
		}
		if (err) {
			ks_report_open_error(col, err);
			return err;
		}
		parts[np++] = &in[i].share;
	}
	if (extra)
		parts[np++] = extra;
	err = ks_budget_split(parts, np, b.limit);
	if (err == -E2BIG) {
		char why[512];

		ks_budget_split_error(parts, np, b.limit, b.ncpus, why, sizeof(why));
		p_err("%s", why);
	}
	return err;
}

void ks_instance_report_init(const struct ks_instance *in, struct ks_report *r)
{
	ks_report_init(r, in->col->spec.name, in->col->hook ? in->col->hook(in->ctx) : NULL);
	r->top_n = in->c.top_n;
	r->sort_key = in->c.sort;
	r->schema = in->col->schema;
	if (in->f)
		ks_filter_describe(&in->c, in->f, r);
}

static bool has_phases(const struct ks_collector *col)
{
	return col->mark && col->drain;
}

int ks_instances_collect(struct ks_instance *in, int n, struct ks_report *reports, int *errs)
{
	int first = 0, marked = 0;

	for (int i = 0; i < n; i++) {
		errs[i] = 0;
		if (has_phases(in[i].col)) {
			errs[i] = in[i].col->mark(in[i].ctx);
			in[i].marked = !errs[i];
			marked += in[i].marked;
		}
	}
	/* one grace period covers every flipped instance: programs that read an old index are done */
	if (marked)
		ks_sync_programs();
	for (int i = 0; i < n; i++) {
		if (has_phases(in[i].col)) {
			if (in[i].marked)
				errs[i] = in[i].col->drain(in[i].ctx, &reports[i]);
			in[i].marked = false;
		} else {
			errs[i] = in[i].col->collect(in[i].ctx, &reports[i]);
		}
		if (errs[i] && !first)
			first = errs[i];
	}
	return first;
}

void ks_instance_close(struct ks_instance *in)
{
	/* not only once opened: an option (funclat's targets) may own memory before the open */
	if (in->ctx && in->col->close)
		in->col->close(in->ctx);
	free(in->ctx);
	in->ctx = NULL;
}
