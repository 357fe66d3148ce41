/* Collector instances: the phases open -> mark -> one kernel wait -> drain -> close, shared by every driver. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/bpfutil.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/loader.h"
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
	/* the histogram's JSON name is the schema's: collectors no longer set it at each drain */
	if (r->schema && r->schema->hist_name)
		r->hist_name = r->schema->hist_name;
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

/* --- serve --pin's two-step drain (declared in core/pin.h, beside the pins it keeps a sequence with) --- */

struct bpf_object *ks_instance_object(const struct ks_instance *in)
{
	const struct ks_skel_head *s;

	if (!in->col->pin || !in->ctx)
		return NULL;
	s = *(const struct ks_skel_head *const *)((const char *)in->ctx + in->col->pin->skel_at);
	return s ? s->obj : NULL;
}

/* The u64 counters of @in's context that its cursor_u64 names; -E2BIG past what a cursor holds. */
static int cursor_fields(const struct ks_instance *in, uint64_t **f)
{
	const struct ks_cursor_u64 *c = &in->col->pin->cursor_u64;

	if (c->n > 15)
		return -E2BIG;
	for (int i = 0; i < c->n; i++)
		f[i] = (uint64_t *)((char *)in->ctx + c->at[i]);
	return 0;
}

int ks_instance_cursor_get(const struct ks_instance *in, void **buf, size_t *len)
{
	const struct ks_pin_ops *ops = in->col->pin;
	uint64_t *f[15];
	int err;

	*buf = NULL;
	*len = 0;
	if (ops && ops->cursor_get)
		return ops->cursor_get(in->ctx, buf, len);
	if (!ops || !ops->cursor_u64.n)
		return 0;
	err = cursor_fields(in, f);
	return err ? err : ks_cursor_get_u64(f, ops->cursor_u64.n, buf, len);
}

int ks_instance_cursor_set(struct ks_instance *in, const void *buf, size_t len)
{
	const struct ks_pin_ops *ops = in->col->pin;
	uint64_t *f[15];
	int err;

	if (ops && ops->cursor_set)
		return ops->cursor_set(in->ctx, buf, len);
	if (!ops || !ops->cursor_u64.n)
		return 0;
	err = cursor_fields(in, f);
	return err ? err : ks_cursor_set_u64(f, ops->cursor_u64.n, buf, len);
}

int ks_instance_pin(struct ks_instance *in)
{
	struct bpf_object *obj = ks_instance_object(in);
	struct ks_pin_seq *seq;
	int fd;

	if (!ks_pin_dir())
		return 0;
	if (!in->col->pin)
		return -EOPNOTSUPP;
	if (!obj)
		return -EINVAL; /* not opened */
	seq = calloc(1, sizeof(*seq));
	if (!seq)
		return -ENOMEM;
	fd = ks_pin_seq_open(obj, &seq->id);
	if (fd < 0) {
		free(seq);
		return fd;
	}
	seq->fd = fd;
	in->pin = seq;
	return 0;
}

void ks_instance_unpin(struct ks_instance *in)
{
	if (!in->pin)
		return;
	if (in->pin->fd >= 0)
		close(in->pin->fd);
	free(in->pin);
	in->pin = NULL;
}

static int seq_write(struct ks_pin_seq *seq, uint64_t v)
{
	__u32 zero = 0;
	__u64 val = v;

	/* one element: written whole or not at all, so a kill -9 leaves the old value or the new */
	if (bpf_map_update_elem(seq->fd, &zero, &val, BPF_ANY))
		return -errno;
	seq->cleared = v;
	return 0;
}

enum ks_resume ks_drain_resume(bool paired, uint64_t saved, uint64_t cleared)
{
	if (!paired)
		return KS_RESUME_FRESH;
	if (saved == cleared)
		return KS_RESUME_COUNT;
	if (saved == cleared + 1)
		return KS_RESUME_DISCARD;
	return saved < cleared ? KS_RESUME_LOST : KS_RESUME_ODD;
}

int ks_instance_resume(struct ks_instance *in, uint64_t saved, uint32_t saved_id, const void *cursor, size_t len)
{
	const char *name = in->col->spec.name;
	struct ks_pin_seq *seq = in->pin;
	__u32 zero = 0;
	__u64 cleared;
	enum ks_resume d;
	int err;

	if (!seq)
		return KS_RESUME_FRESH;
	if (bpf_map_lookup_elem(seq->fd, &zero, &cleared))
		return -errno;
	seq->cleared = cleared;
	d = ks_drain_resume(saved_id && saved_id == seq->id, saved, cleared);
	switch (d) {
	case KS_RESUME_DISCARD:
		/* the programs write the other half since that drain's mark: this one is quiet */
		err = in->col->drain(in->ctx, NULL, KS_DRAIN_CLEAR);
		if (err)
			return err;
		fprintf(stderr, "ksight: %s: drain %llu was saved but not emptied: emptied it without counting it again\n",
			name, (unsigned long long)saved);
		break;
	case KS_RESUME_LOST:
		p_warn("%s: drains %llu to %llu were emptied but their totals not saved: their events are lost", name,
		       (unsigned long long)saved + 1, (unsigned long long)cleared);
		break;
	case KS_RESUME_ODD:
		p_warn("%s: the saved totals hold %llu drains, the pinned maps say %llu were emptied: counting what they hold",
		       name, (unsigned long long)saved, (unsigned long long)cleared);
		break;
	default:
		break;
	}
	/* the cursor goes with the totals it was saved with, which count from these maps only when paired */
	if (d != KS_RESUME_FRESH && cursor) {
		err = ks_instance_cursor_set(in, cursor, len);
		if (err)
			return err;
	}
	err = saved != cleared ? seq_write(seq, saved) : 0;
	return err ? err : (int)d;
}

uint64_t ks_instance_drains(const struct ks_instance *in)
{
	return in->pin ? in->pin->cleared + (in->pin->clear_due ? 1 : 0) : 0;
}

/* Empties what the last READ of @in read and counts that drain in its sequence; @fault: the test's point. */
static int clear_one(struct ks_instance *in, bool fault)
{
	int err = in->col->drain(in->ctx, NULL, KS_DRAIN_CLEAR);

	if (err)
		return err;
	if (fault)
		ks_fault_point("in-clear");
	err = seq_write(in->pin, in->pin->cleared + 1);
	if (!err)
		in->pin->clear_due = false;
	return err;
}

int ks_pin_clear_owed(struct ks_instance *in)
{
	return in->pin && in->pin->clear_due ? clear_one(in, false) : 0;
}

int ks_pin_read(struct ks_instance *in, struct ks_report *r)
{
	int err = in->col->drain(in->ctx, r, KS_DRAIN_READ);

	in->pin->clear_due = !err;
	return err;
}

int ks_instances_clear(struct ks_instance *in, int n)
{
	int first = 0, cleared = 0;

	for (int i = 0; i < n; i++) {
		int err = 0;

		/* the test's kill comes once per drain: the first instance emptied, the others not yet */
		if (in[i].pin && in[i].pin->clear_due)
			err = clear_one(&in[i], !cleared++);
		if (err && !first)
			first = err;
	}
	return first;
}

void ks_fault_point(const char *point)
{
	static int hits;
	const char *f = getenv("KSIGHT_FAULT");
	size_t len = strlen(point);

	if (!f || strncmp(f, point, len) || (f[len] && f[len] != ':'))
		return;
	if (++hits >= (f[len] == ':' ? atoi(f + len + 1) : 1))
		raise(SIGKILL);
}

void ks_report_open_error(const struct ks_collector *col, int err)
{
	/* the loader says why each hook failed: privilege, tracefs, the kernel */
	if (err == -E2BIG || ks_pin_failed())
		return; /* over the memory budget, or pins that do not fit: said already, naming the cause */
	if (err == -ECANCELED)
		return; /* the collector said why itself (funclat: which target did not attach) */
	if (ks_load_error())
		p_err("%s: %s", col->spec.name, ks_load_error());
	else if (err == -EPERM || err == -EACCES)
		p_err("%s: cannot load BPF programs: %s; run as root or with CAP_BPF and CAP_PERFMON", col->spec.name,
		      strerror(-err));
	else
		p_err("%s: cannot load and attach: %s", col->spec.name, strerror(-err));
}
