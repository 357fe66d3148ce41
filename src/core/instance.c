/* Collector instances: the phases open -> mark -> one kernel wait -> drain -> close, shared by every driver. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/bpfutil.h"
#include "core/driver.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/log.h"
#include "core/pin.h"

int ks_instance_init(struct ks_instance *in, const struct ks_collector *col)
{
	in->col = col;
	in->marked = false;
	in->f = NULL;
	in->args = NULL;
	in->nargs = 0;
	in->pin = NULL;
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

int ks_instance_configure(struct ks_instance *in)
{
	int err = 0;

	for (int i = 0; i < in->nargs && !err; i++)
		err = in->col->parse_opt ? in->col->parse_opt(in->ctx, KS_OPT_ARG, in->args[i]) : -EINVAL;
	if (!err && in->col->prepare)
		err = in->col->prepare(in->ctx, &in->c);
	return err;
}

int ks_arglist_add(struct ks_arglist *l, const char *s)
{
	const char **v = realloc(l->v, (size_t)(l->n + 1) * sizeof(*v));

	if (!v) {
		p_err("out of memory");
		return -ENOMEM;
	}
	l->v = v;
	l->v[l->n++] = s;
	return 0;
}

void ks_arglist_free(struct ks_arglist *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

int ks_instances_targets(struct ks_instance *in, int n, const struct ks_arglist *targets, const char *driver)
{
	for (int i = 0; i < n; i++) {
		const char *name = in[i].col->spec.name;
		int err;

		if (!in[i].col->spec.args)
			continue;
		if (!targets->n) {
			p_err("%s: %s needs its targets: give each as --%s TARGET, e.g. --%s /usr/bin/prog:main", driver,
			      name, name, name);
			return -EINVAL;
		}
		in[i].args = targets->v;
		in[i].nargs = targets->n;
		err = ks_instance_configure(&in[i]);
		if (err) {
			if (err != -EINVAL)
				p_err("%s: %s: cannot resolve the targets: %s", driver, name, strerror(-err));
			return err;
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
			const char *const *args = in[i].args;
			int nargs = in[i].nargs;

			/* a measured open left state behind: start again from the options (and the arguments) */
			ks_instance_close(&in[i]);
			err = ks_instance_init(&in[i], col);
			in[i].c = c;
			in[i].args = args;
			in[i].nargs = nargs;
			if (!err)
				err = ks_instance_configure(&in[i]);
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

int ks_instances_collect(struct ks_instance *in, int n, struct ks_report *reports, int *errs)
{
	int first = 0, marked = 0;

	for (int i = 0; i < n; i++) {
		errs[i] = 0;
		in[i].marked = false;
		/* a half read but never emptied must be, before the programs go back to it: it is counted */
		if (in[i].pin)
			errs[i] = ks_pin_clear_owed(&in[i]);
		if (!errs[i] && in[i].col->mark) {
			errs[i] = in[i].col->mark(in[i].ctx);
			in[i].marked = !errs[i];
			marked += in[i].marked;
		}
	}
	/* one grace period covers every flipped instance: programs that read an old index are done */
	if (marked)
		ks_sync_programs();
	for (int i = 0; i < n; i++) {
		/* a failed mark drains nothing: the programs may still write the half it would read */
		if (!errs[i] && in[i].pin)
			errs[i] = ks_pin_read(&in[i], &reports[i]);
		else if (!errs[i])
			errs[i] = in[i].col->drain(in[i].ctx, &reports[i], KS_DRAIN_TAKE);
		in[i].marked = false;
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
	ks_instance_unpin(in);
}
