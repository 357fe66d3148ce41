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
	in->seq_fd = -1;
	in->seq_id = 0;
	in->cleared = 0;
	in->clear_due = false;
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

static bool has_phases(const struct ks_collector *col)
{
	return col->mark && (col->drain || col->drain_mode);
}

/* The one-pass drain: drain_mode(TAKE) where the collector has modes, so that it need not wrap it as drain(). */
static int drain_take(struct ks_instance *in, struct ks_report *r)
{
	if (in->col->drain_mode)
		return in->col->drain_mode(in->ctx, r, KS_DRAIN_TAKE);
	return in->col->drain(in->ctx, r);
}

struct bpf_object *ks_instance_object(const struct ks_instance *in)
{
	const struct ks_skel_head *s;

	if (!in->col->drain_mode || !in->ctx)
		return NULL;
	s = *(const struct ks_skel_head *const *)((const char *)in->ctx + in->col->skel_at);
	return s ? s->obj : NULL;
}

/* The u64 counters of @in's context that its cursor_u64 names; -E2BIG past what a cursor holds. */
static int cursor_fields(const struct ks_instance *in, uint64_t **f)
{
	const struct ks_cursor_u64 *c = &in->col->cursor_u64;

	if (c->n > 15)
		return -E2BIG;
	for (int i = 0; i < c->n; i++)
		f[i] = (uint64_t *)((char *)in->ctx + c->at[i]);
	return 0;
}

int ks_instance_cursor_get(const struct ks_instance *in, void **buf, size_t *len)
{
	uint64_t *f[15];
	int err;

	*buf = NULL;
	*len = 0;
	if (in->col->cursor_get)
		return in->col->cursor_get(in->ctx, buf, len);
	if (!in->col->cursor_u64.n)
		return 0;
	err = cursor_fields(in, f);
	return err ? err : ks_cursor_get_u64(f, in->col->cursor_u64.n, buf, len);
}

int ks_instance_cursor_set(struct ks_instance *in, const void *buf, size_t len)
{
	uint64_t *f[15];
	int err;

	if (in->col->cursor_set)
		return in->col->cursor_set(in->ctx, buf, len);
	if (!in->col->cursor_u64.n)
		return 0;
	err = cursor_fields(in, f);
	return err ? err : ks_cursor_set_u64(f, in->col->cursor_u64.n, buf, len);
}

/* Pinned and able to drain in two steps: the --pin path. */
static bool split_drain(const struct ks_instance *in)
{
	return in->seq_fd >= 0 && has_phases(in->col) && in->col->drain_mode;
}

int ks_instance_pin(struct ks_instance *in)
{
	struct bpf_object *obj = ks_instance_object(in);
	int fd;

	if (!in->col->drain_mode || !ks_pin_dir())
		return 0;
	if (!obj)
		return -EINVAL; /* not opened */
	fd = ks_pin_seq_open(obj, &in->seq_id);
	if (fd < 0)
		return fd;
	in->seq_fd = fd;
	return 0;
}

static int seq_write(struct ks_instance *in, uint64_t v)
{
	__u32 zero = 0;
	__u64 val = v;

	/* one element: written whole or not at all, so a kill -9 leaves the old value or the new */
	if (bpf_map_update_elem(in->seq_fd, &zero, &val, BPF_ANY))
		return -errno;
	in->cleared = v;
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
	__u32 zero = 0;
	__u64 cleared;
	enum ks_resume d;
	int err;

	if (in->seq_fd < 0)
		return KS_RESUME_FRESH;
	if (bpf_map_lookup_elem(in->seq_fd, &zero, &cleared))
		return -errno;
	in->cleared = cleared;
	d = ks_drain_resume(saved_id && saved_id == in->seq_id, saved, cleared);
	switch (d) {
	case KS_RESUME_DISCARD:
		/* the programs write the other half since that drain's mark: this one is quiet */
		err = in->col->drain_mode(in->ctx, NULL, KS_DRAIN_CLEAR);
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
	err = saved != cleared ? seq_write(in, saved) : 0;
	return err ? err : (int)d;
}

uint64_t ks_instance_drains(const struct ks_instance *in)
{
	return in->cleared + (in->clear_due ? 1 : 0);
}

/* Empties what the last READ of @in read and counts that drain in its sequence; @fault: the test's point. */
static int clear_one(struct ks_instance *in, bool fault)
{
	int err = in->col->drain_mode(in->ctx, NULL, KS_DRAIN_CLEAR);

	if (err)
		return err;
	if (fault)
		ks_fault_point("in-clear");
	err = seq_write(in, in->cleared + 1);
	if (!err)
		in->clear_due = false;
	return err;
}

int ks_instances_collect(struct ks_instance *in, int n, struct ks_report *reports, int *errs)
{
	int first = 0, marked = 0;

	for (int i = 0; i < n; i++) {
		errs[i] = 0;
		/* a half read but never emptied must be, before the programs go back to it: it is counted */
		if (split_drain(&in[i]) && in[i].clear_due)
			errs[i] = clear_one(&in[i], false);
		if (!errs[i] && has_phases(in[i].col)) {
			errs[i] = in[i].col->mark(in[i].ctx);
			in[i].marked = !errs[i];
			marked += in[i].marked;
		}
	}
	/* one grace period covers every flipped instance: programs that read an old index are done */
	if (marked)
		ks_sync_programs();
	for (int i = 0; i < n; i++) {
		if (!has_phases(in[i].col)) {
			errs[i] = in[i].col->collect(in[i].ctx, &reports[i]);
		} else if (in[i].marked && split_drain(&in[i])) {
			errs[i] = in[i].col->drain_mode(in[i].ctx, &reports[i], KS_DRAIN_READ);
			in[i].clear_due = !errs[i];
		} else if (in[i].marked) {
			errs[i] = drain_take(&in[i], &reports[i]);
		}
		in[i].marked = false;
		if (errs[i] && !first)
			first = errs[i];
	}
	return first;
}

int ks_instances_clear(struct ks_instance *in, int n)
{
	int first = 0, cleared = 0;

	for (int i = 0; i < n; i++) {
		int err = 0;

		/* the test's kill comes once per drain: the first instance emptied, the others not yet */
		if (split_drain(&in[i]) && in[i].clear_due)
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

void ks_instance_close(struct ks_instance *in)
{
	/* not only once opened: an option (funclat's targets) may own memory before the open */
	if (in->ctx && in->col->close)
		in->col->close(in->ctx);
	free(in->ctx);
	in->ctx = NULL;
	if (in->seq_fd >= 0)
		close(in->seq_fd);
	in->seq_fd = -1;
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
