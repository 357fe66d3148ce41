/* The Prometheus metric model: reports mapped onto families of labelled samples, which openmetrics.c and promproto.c encode. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/budget.h"
#include "core/sanitize.h"
#include "output/output.h"
#include "output/prom.h"

void prom_sanitize(char *s)
{
	for (char *p = s; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
			  (p > s && *p >= '0' && *p <= '9');

		if (!ok)
			*p = '_';
	}
}

/* Room for one more element in the array *@p of *@cap (doubling from @first); false when out of memory. */
static bool reserve(void **p, int *cap, int n, int first, size_t size)
{
	int ncap;
	void *np;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : first;
	np = realloc(*p, (size_t)ncap * size);
	if (!np)
		return false;
	*p = np;
	*cap = ncap;
	return true;
}

struct prom_family *prom_family(struct prom_set *set, const char *name, const char *help, enum prom_type type)
{
	struct prom_family *f;

	for (int i = 0; i < set->n; i++)
		if (!strcmp(set->f[i].name, name))
			return &set->f[i];
	if (!reserve((void **)&set->f, &set->cap, set->n, 32, sizeof(*set->f)))
		return NULL;
	f = &set->f[set->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	prom_sanitize(f->name);
	snprintf(f->help, sizeof(f->help), "%s", help ? help : name);
	f->type = type;
	f->div = 1;
	return f;
}

struct prom_sample *prom_sample_add(struct prom_family *f)
{
	if (!reserve((void **)&f->s, &f->cap, f->n, 8, sizeof(*f->s)))
		return NULL;
	memset(&f->s[f->n], 0, sizeof(f->s[0]));
	return &f->s[f->n++];
}

/* A sample's labels live in one of these; @refs samples point at @l. */
struct lblock {
	int refs, cap;
	struct prom_label l[];
};

#define LBLOCK_FIRST 4 /* most rows have one to three key labels */

static struct lblock *lblock_of(const struct prom_sample *s)
{
	return s->labels ? (struct lblock *)((char *)s->labels - offsetof(struct lblock, l)) : NULL;
}

void prom_sample_free(struct prom_sample *s)
{
	struct lblock *b = lblock_of(s);

	if (b && !--b->refs) {
		for (int i = 0; i < s->nlabels; i++)
			free(b->l[i].full);
		free(b);
	}
	s->labels = NULL;
	s->nlabels = 0;
}

/* @dst (no labels yet) shares @src's labels: a row's samples all carry the same. */
static void sample_share(struct prom_sample *dst, const struct prom_sample *src)
{
	struct lblock *b = lblock_of(src);

	if (!b)
		return;
	b->refs++;
	dst->labels = src->labels;
	dst->nlabels = src->nlabels;
}

/* Makes @s's labels its own (copied when shared) with room for @need: 0 or -ENOMEM. */
static int labels_own(struct prom_sample *s, int need)
{
	struct lblock *b = lblock_of(s), *n;
	int cap = need <= LBLOCK_FIRST ? LBLOCK_FIRST : PROM_LABELS;

	if (b && b->refs == 1 && b->cap >= need)
		return 0;
	if (b && b->refs == 1) {
		n = realloc(b, sizeof(*n) + (size_t)cap * sizeof(n->l[0]));
		if (!n)
			return -ENOMEM;
		n->cap = cap;
		s->labels = n->l;
		return 0;
	}
	n = malloc(sizeof(*n) + (size_t)cap * sizeof(n->l[0]));
	if (!n)
		return -ENOMEM;
	n->refs = 1;
	n->cap = cap;
	for (int i = 0; i < s->nlabels; i++) {
		n->l[i] = s->labels[i];
		if (n->l[i].full && !(n->l[i].full = strdup(n->l[i].full))) {
			struct prom_sample part = { .nlabels = i, .labels = n->l };

			prom_sample_free(&part);
			return -ENOMEM;
		}
	}
	if (b)
		b->refs--;
	s->labels = n->l;
	return 0;
}

int prom_label(struct prom_sample *s, const char *name, const char *value)
{
	struct prom_label *l;

	if (s->nlabels >= PROM_LABELS)
		return -ENOSPC;
	if (labels_own(s, s->nlabels + 1))
		return -ENOMEM;
	l = &s->labels[s->nlabels++];
	snprintf(l->name, sizeof(l->name), "%s", name);
	prom_sanitize(l->name);
	l->full = NULL;
	/* any process names itself: one invalid UTF-8 value makes Prometheus refuse the whole page, in every format */
	ks_sanitize(value, l->value, sizeof(l->value));
	return 0;
}

int prom_label_full(struct prom_sample *s, const char *name, const char *value)
{
	struct prom_label *l;
	size_t len = ks_sanitized_len(value);
	char *full = NULL;
	int i;

	for (i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].name, name))
			break;
	if (i == s->nlabels) {
		int err = prom_label(s, name, "");

		if (err)
			return err;
	} else if (labels_own(s, s->nlabels)) {
		return -ENOMEM;
	}
	l = &s->labels[i];
	if (len >= sizeof(l->value) && !(full = malloc(len + 1)))
		return -ENOMEM;
	free(l->full);
	l->full = full;
	ks_sanitize(value, full ? full : l->value, full ? len + 1 : sizeof(l->value));
	return 0;
}

const char *prom_unit(const struct prom_family *f)
{
	static const char *const units[] = { "seconds", "bytes" };
	size_t n = strlen(f->name);

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t m = strlen(units[i]);

		if (n > m + 1 && f->name[n - m - 1] == '_' && !strcmp(f->name + n - m, units[i]))
			return units[i];
	}
	return NULL;
}

int prom_add(struct prom_set *set, const char *name, const char *help, enum prom_type type, double v,
	     const char *l1, const char *v1, const char *l2, const char *v2)
{
	struct prom_family *f = prom_family(set, name, help, type);
	struct prom_sample *s = f ? prom_sample_add(f) : NULL;

	if (!s)
		return -ENOMEM;
	if (l1)
		prom_label(s, l1, v1);
	if (l2)
		prom_label(s, l2, v2);
	s->value = v;
	return 0;
}

void prom_set_free(struct prom_set *set)
{
	for (int i = 0; i < set->n; i++) {
		for (int j = 0; j < set->f[i].n; j++)
			prom_sample_free(&set->f[i].s[j]);
		free(set->f[i].s);
	}
	free(set->f);
	memset(set, 0, sizeof(*set));
}

static bool strip_suffix(char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	if (n >= m && !strcmp(s + n - m, suf)) {
		s[n - m] = 0;
		return true;
	}
	return false;
}

/* The noun a collector's "count" column counts, so the counter reads as what it is. */
static const char *count_noun(const char *collector)
{
	static const char *const nouns[][2] = {
		{ "syscalls", "calls" }, { "biolat", "requests" }, { "runqlat", "waits" },
		{ "offcpu", "blocks" },	 { "tcp", "events" },	   { "mem", "events" },
		{ "funclat", "calls" },
	};

	for (size_t i = 0; i < sizeof(nouns) / sizeof(nouns[0]); i++)
		if (!strcmp(nouns[i][0], collector))
			return nouns[i][1];
	return "events";
}

/*
 * "ksight_<collector>_<column>" in base units: a duration's "_ns" becomes
 * "_seconds" (and a leading "total_", or a bare "total", says no more than
 * the counter's own "_total": "total_wait_ns" -> "wait_seconds"), bytes end
 * in "_bytes".  Returns the divisor from the column's unit to the base unit.
 */
static double metric_name(char *out, size_t len, const char *collector, const char *col, enum ks_unit unit)
{
	char base[64];
	const char *suffix = "";
	double div = 1;
	size_t n;

	snprintf(base, sizeof(base), "%s", col);
	if (!strcmp(base, "count"))
		snprintf(base, sizeof(base), "%s", count_noun(collector));
	if (unit == KS_UNIT_NS || strip_suffix(base, "_ns")) {
		strip_suffix(base, "_ns");
		if (!strcmp(base, "total"))
			snprintf(base, sizeof(base), "time");
		else if (!strncmp(base, "total_", 6))
			memmove(base, base + 6, strlen(base + 6) + 1);
		suffix = "_seconds";
		div = 1e9;
	} else if (unit == KS_UNIT_BYTES) {
		if (!strcmp(base, "bytes"))
			snprintf(base, sizeof(base), "io");
		strip_suffix(base, "_bytes");
		suffix = "_bytes";
	}
	/* the collector's name is already the family's prefix: offcpu's "offcpu_ns" is ksight_offcpu_seconds */
	n = strlen(collector);
	if (!strncmp(base, collector, n) && (base[n] == '_' || (!base[n] && *suffix)))
		memmove(base, base + n + !!base[n], strlen(base + n + !!base[n]) + 1);
	snprintf(out, len, "ksight_%s%s%s%s", collector, *base ? "_" : "", base, suffix);
	prom_sanitize(out);
	return div;
}

static const struct ks_column *schema_col(const struct ks_schema *s, const char *name)
{
	for (const struct ks_column *c = s ? s->cols : NULL; c && c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static const struct prom_set *cur_set; /* the set prom_add_report fills, for its row hook */

static int row_labels(struct prom_sample *s, const struct ks_row *row)
{
	for (int k = 0; k < row->nkeys; k++) {
		const char *name = row->keys[k].name;
		/* a cut cgroup path names another cgroup, or none: that label alone is never cut */
		int err = !strcmp(name, "cgroup") ? prom_label_full(s, name, row->keys[k].str)
						  : prom_label(s, name, row->keys[k].str);

		if (err)
			return err;
	}
	if (cur_set && cur_set->row_labels)
		cur_set->row_labels(cur_set->row_ctx, row, s);
	return 0;
}

/* @proto holds the row's labels, built once (row_labels) and shared by each of its samples. */
static int add_hist(struct prom_set *set, const struct ks_report *r, const struct prom_sample *proto, const char *hname,
		    enum ks_unit unit, const struct ks_hist *h, const char *help)
{
	char name[PROM_NAME], buf[256];
	struct prom_family *f;
	struct prom_sample *s;
	double div = metric_name(name, sizeof(name), r->collector, hname, unit);

	if (!help) {
		snprintf(buf, sizeof(buf), "distribution of %s", hname);
		help = buf;
	}
	f = prom_family(set, name, help, PROM_HISTOGRAM);
	if (!f || !(s = prom_sample_add(f)))
		return -ENOMEM;
	f->unit = unit;
	f->div = div;
	sample_share(s, proto);
	s->hist = h;
	return 0;
}

static int add_row(struct prom_set *set, const struct ks_report *r, const struct ks_row *row)
{
	char name[PROM_NAME], help[256];
	struct prom_sample proto = { 0 };
	/* labels past PROM_LABELS are left off, as ever; only memory fails the row */
	int err = row_labels(&proto, row) == -ENOMEM ? -ENOMEM : 0;

	for (int v = 0; v < row->nvals && !err; v++) {
		const struct ks_val *val = &row->vals[v];
		const struct ks_column *col = schema_col(r->schema, val->name);
		enum ks_unit unit = val->kind == KS_VAL_NS ? KS_UNIT_NS : val->kind == KS_VAL_BYTES ? KS_UNIT_BYTES
												    : KS_UNIT_COUNT;
		enum prom_type type = val->kind == KS_VAL_GAUGE ? PROM_GAUGE : PROM_COUNTER;
		double div;
		struct prom_family *f;
		struct prom_sample *s;

		/* a gauge with no sample yet (tcp's cwnd before one is seen) has no value: a 0 would be a false reading */
		if (val->none)
			continue;
		if (col) {
			unit = col->kind == KS_COL_DURATION ? KS_UNIT_NS : col->kind == KS_COL_BYTES ? KS_UNIT_BYTES : col->unit;
			type = col->kind == KS_COL_GAUGE ? PROM_GAUGE : PROM_COUNTER;
		}
		div = metric_name(name, sizeof(name), r->collector, val->name, unit);
		if (col && col->help)
			snprintf(help, sizeof(help), "%s", col->help);
		else
			snprintf(help, sizeof(help), "%s of %s", val->name, r->collector);
		f = prom_family(set, name, help, type);
		if (!f || !(s = prom_sample_add(f))) {
			err = -ENOMEM;
			break;
		}
		sample_share(s, &proto);
		s->value = (double)val->v / div;
	}
	if (row->hist && r->hist_name && !err)
		err = add_hist(set, r, &proto, r->hist_name, r->hist_unit, row->hist, r->schema ? r->schema->hist_help : NULL);
	for (int x = 0; x < row->nxhist && !err; x++)
		err = add_hist(set, r, &proto, row->xhist[x].name, row->xhist[x].unit, row->xhist[x].h, NULL);
	if (row->nsub && r->sub_name && !err) {
		char label[32];

		snprintf(label, sizeof(label), "%s", r->sub_name);
		strip_suffix(label, "s");
		snprintf(name, sizeof(name), "ksight_%s_by_%s", r->collector, label);
		snprintf(help, sizeof(help), "%s counted by %s", count_noun(r->collector), label);
		for (int i = 0; i < row->nsub && !err; i++) {
			struct prom_family *f = prom_family(set, name, help, PROM_COUNTER);
			struct prom_sample *s = f ? prom_sample_add(f) : NULL;

			if (!s) {
				err = -ENOMEM;
				break;
			}
			sample_share(s, &proto);
			/* the breakdown's label on top: this sample's labels become its own */
			prom_label(s, label, row->sub[i].name);
			s->value = (double)row->sub[i].count;
		}
	}
	prom_sample_free(&proto);
	return err;
}

/* Counters every collector may report, exported as one family each; NULL for a collector's own. */
static const char *shared_counter(const char *name)
{
	static const struct {
		const char *name, *help;
	} shared[] = {
		{ "other_folds", "rows folded into the \"other\" series by the series cap, by collector" },
		{ "expired_rows", "rows dropped unchanged after --series-ttl, or at --max-series after a tenth of it (an exited process's), by collector" },
		{ "to_other", "events the kernel side added to its \"other\" row (its row map full), by collector" },
	};

	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++)
		if (!strcmp(name, shared[i].name))
			return shared[i].help;
	return NULL;
}

int prom_add_report(struct prom_set *set, const struct ks_report *r)
{
	char name[PROM_NAME], help[256];
	int err = 0;

	err = prom_add(set, "ksight_collector_info", "collectors running, with the hook each chose (always 1)", PROM_GAUGE,
		       1, "collector", r->collector, "hook", r->hook ? r->hook : "unknown");
	for (int i = 0; i < r->nlost && !err; i++)
		err = prom_add(set, "ksight_lost_events", "events the kernel side could not count, by collector and cause",
			       PROM_COUNTER, (double)r->lost_by[i].num, "collector", r->collector, "cause", r->lost_by[i].name);
	for (int i = 0; i < r->ncounters && !err; i++) {
		const char *shared = shared_counter(r->counters[i].name);

		/*
		 * A counter several collectors report is one family with a
		 * collector label, as losses are: per-collector families lose their
		 * names in increase() and then collide on one label set in any rule
		 * over them (KsightSeriesFolded did).
		 */
		if (shared) {
			snprintf(name, sizeof(name), "ksight_%s", r->counters[i].name);
			err = prom_add(set, name, shared, PROM_COUNTER, (double)r->counters[i].num, "collector",
				       r->collector, NULL, NULL);
			continue;
		}
		snprintf(name, sizeof(name), "ksight_%s_%s", r->collector, r->counters[i].name);
		snprintf(help, sizeof(help), "%s: report-wide counter %s", r->collector, r->counters[i].name);
		err = prom_add(set, name, help, PROM_COUNTER, (double)r->counters[i].num, NULL, NULL, NULL, NULL);
	}
	if (r->budget && !err)
		err = prom_add(set, "ksight_map_budget_bytes",
			       "the part of --max-memory the collector's maps were sized to fit (serve shares it out)",
			       PROM_GAUGE, (double)ks_budget_cap(r->budget), "collector", r->collector, NULL, NULL);
	for (int i = 0; r->budget && i < r->budget->nmaps && !err; i++)
		err = prom_add(set, "ksight_map_bytes", "bytes of each BPF map at the possible-CPU count (worst case)",
			       PROM_GAUGE, (double)r->budget->maps[i].bytes, "collector", r->collector, "map",
			       r->budget->maps[i].name);
	cur_set = set;
	for (int i = 0; i < r->nrows && !err; i++)
		err = add_row(set, r, &r->rows[i]);
	cur_set = NULL;
	return err;
}

/* Classic bounds, the same on every host: durations 1us..10s in 1-2.5-5 steps, sizes and depths in powers of 4 and 2. */
static const uint64_t ns_bounds[] = {
	1000,	  2500,	    5000,      10000,	   25000,      50000,	   100000,     250000,
	500000,	  1000000,  2500000,   5000000,	   10000000,   25000000,   50000000,   100000000,
	250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};
static const uint64_t byte_bounds[] = { 512, 2048, 8192, 32768, 131072, 524288, 2097152, 8388608, 33554432 };
static const uint64_t count_bounds[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };

const uint64_t *prom_classic_bounds(enum ks_unit unit, int *n)
{
	if (unit == KS_UNIT_NS) {
		*n = (int)(sizeof(ns_bounds) / sizeof(ns_bounds[0]));
		return ns_bounds;
	}
	if (unit == KS_UNIT_BYTES) {
		*n = (int)(sizeof(byte_bounds) / sizeof(byte_bounds[0]));
		return byte_bounds;
	}
	*n = (int)(sizeof(count_bounds) / sizeof(count_bounds[0]));
	return count_bounds;
}

void prom_classic_counts(const struct ks_hist *h, const uint64_t *bounds, int n, uint64_t *cum)
{
	int b = 0;
	uint64_t acc = 0;

	for (int i = 0; i < n; i++)
		cum[i] = 0;
	for (unsigned int s = 0; s < KS_HIST_SLOTS; s++) {
		uint64_t high = ks_hist_slot_high(s);

		while (b < n && high > bounds[b])
			cum[b++] = acc;
		if (b == n)
			break;
		acc += h->slots[s];
	}
	while (b < n)
		cum[b++] = acc;
}

int32_t prom_native_index(double v)
{
	return (int32_t)ceil(log2(v) * (1 << PROM_NATIVE_SCHEMA) - 1e-9);
}
