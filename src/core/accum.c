/* The cumulative accumulator: a hash of key tuples onto rows that only grow, a cardinality cap and a time-to-live. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "core/accum.h"
#include "core/hash.h"

int ks_accum_init(struct ks_accum *a, const char *collector, int max_rows, uint64_t ttl_marks)
{
	memset(a, 0, sizeof(*a));
	ks_report_init(&a->total, collector, NULL);
	a->max_rows = max_rows;
	a->ttl_marks = ttl_marks;
	a->other = -1;
	return 0;
}

void ks_accum_free(struct ks_accum *a)
{
	ks_report_free(&a->total);
	free(a->changed);
	free(a->index);
	memset(a, 0, sizeof(*a));
	a->other = -1;
}

static uint64_t key_hash(const struct ks_row *row)
{
	/* key tuples are short; what matters is that equal tuples meet */
	uint64_t h = KS_FNV1A_INIT;

	for (int k = 0; k < row->nkeys; k++) {
		h = ks_fnv1a(row->keys[k].name, strlen(row->keys[k].name) + 1, h);
		h = ks_fnv1a(row->keys[k].str, strlen(row->keys[k].str) + 1, h);
	}
	return h;
}

static bool same_keys(const struct ks_row *x, const struct ks_row *y)
{
	if (x->nkeys != y->nkeys)
		return false;
	for (int k = 0; k < x->nkeys; k++)
		if (strcmp(x->keys[k].name, y->keys[k].name) || strcmp(x->keys[k].str, y->keys[k].str))
			return false;
	return true;
}

/* Rebuilds the index for every row but "other" (which is found by its index). */
static int reindex(struct ks_accum *a)
{
	uint32_t cap = 64;

	while (cap < (uint32_t)a->total.nrows * 2 + 2)
		cap *= 2;
	free(a->index);
	a->index = calloc(cap, sizeof(*a->index));
	if (!a->index)
		return -ENOMEM;
	a->index_cap = cap;
	for (int i = 0; i < a->total.nrows; i++) {
		uint32_t s;

		if (i == a->other)
			continue;
		for (s = (uint32_t)key_hash(&a->total.rows[i]) & (cap - 1); a->index[s]; s = (s + 1) & (cap - 1))
			;
		a->index[s] = (uint32_t)i + 1;
	}
	return 0;
}

static int find(const struct ks_accum *a, const struct ks_row *row)
{
	if (!a->index_cap)
		return -1;
	for (uint32_t s = (uint32_t)key_hash(row) & (a->index_cap - 1); a->index[s]; s = (s + 1) & (a->index_cap - 1))
		if (same_keys(&a->total.rows[a->index[s] - 1], row) && (int)a->index[s] - 1 != a->other)
			return (int)a->index[s] - 1;
	return -1;
}

/* True when delta row @d carries anything (a gauge's level counts: it is news). */
static bool row_changed(const struct ks_row *d)
{
	for (int v = 0; v < d->nvals; v++)
		if (d->vals[v].v)
			return true;
	if (d->hist && d->hist->count)
		return true;
	for (int s = 0; s < d->nsub; s++)
		if (d->sub[s].count)
			return true;
	return false;
}

static int grow_changed(struct ks_accum *a)
{
	uint64_t *n = realloc(a->changed, (size_t)a->total.cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	a->changed = n;
	return 0;
}

/* The "other" row, made on first use with @like's key names. */
static int other_row(struct ks_accum *a, const struct ks_row *like)
{
	struct ks_row *o;

	if (a->other >= 0)
		return a->other;
	o = ks_report_add_row(&a->total);
	if (!o || grow_changed(a))
		return -ENOMEM;
	for (int k = 0; k < like->nkeys; k++)
		ks_row_key_str(o, like->keys[k].name, "other");
	a->other = a->total.nrows - 1;
	a->changed[a->other] = a->marks;
	return a->other;
}

/* Drops rows unchanged for @idle marks; keeps "other".  How many went, or -ENOMEM. */
static int drop_idle(struct ks_accum *a, uint64_t idle)
{
	struct ks_report *t = &a->total;
	int w = 0, dropped = 0, err;

	for (int i = 0; i < t->nrows; i++) {
		if (i != a->other && a->marks - a->changed[i] >= idle) {
			struct ks_report one = { .rows = &t->rows[i], .nrows = 1 };

			/* frees the row's histograms and breakdown */
			ks_report_clear(&one);
			dropped++;
			continue;
		}
		if (i == a->other)
			a->other = w;
		t->rows[w] = t->rows[i];
		a->changed[w++] = a->changed[i];
	}
	t->nrows = w;
	a->expired += (uint64_t)dropped;
	if (dropped && (err = reindex(a)))
		return err;
	return dropped;
}

/* Drops rows unchanged for ttl marks: 0 or -ENOMEM. */
static int expire(struct ks_accum *a)
{
	int n = a->ttl_marks ? drop_idle(a, a->ttl_marks) : 0;

	return n < 0 ? n : 0;
}

/* The cap is reached: a new key gets a row of its own only if no row is left besides "other". */
static bool at_cap(const struct ks_accum *a)
{
	return a->max_rows && a->total.nrows - (a->other >= 0) >= a->max_rows;
}

int ks_accum_add(struct ks_accum *a, const struct ks_report *d)
{
	struct ks_report *t = &a->total;
	bool swept = false;
	int err = 0;

	a->marks++;
	ks_report_merge_head(t, d);
	for (int i = 0; i < d->nrows && !err; i++) {
		const struct ks_row *row = &d->rows[i];
		int at = find(a, row);

		/* a pre-created row with nothing in it does not bring back an expired series */
		if (at < 0 && !row_changed(row))
			continue;
		/*
		 * rows idle long enough (an exited thread's) make room before a new key folds; once a
		 * mark: a second sweep finds none (idleness counts marks, and what this mark keeps or
		 * adds is not idle), and a full cap met a scan of every row per new key
		 */
		if (at < 0 && a->idle_marks && !swept && at_cap(a)) {
			swept = true;
			if ((err = drop_idle(a, a->idle_marks)) < 0)
				return err;
		}
		err = 0;
		if (at < 0 && at_cap(a)) {
			at = other_row(a, row);
			if (at < 0)
				return at;
			a->folds++;
		} else if (at < 0) {
			struct ks_row *n;

			err = ks_report_copy_row(t, row);
			if (err || (err = grow_changed(a)))
				return err;
			n = &t->rows[t->nrows - 1];
			a->changed[t->nrows - 1] = a->marks;
			/* the index grows at half load */
			if ((uint32_t)t->nrows * 2 >= a->index_cap)
				err = reindex(a);
			else {
				uint32_t s;

				for (s = (uint32_t)key_hash(n) & (a->index_cap - 1); a->index[s]; s = (s + 1) & (a->index_cap - 1))
					;
				a->index[s] = (uint32_t)t->nrows;
			}
			continue;
		}
		err = ks_row_merge(&t->rows[at], row);
		if (row_changed(row))
			a->changed[at] = a->marks;
	}
	return err ? err : expire(a);
}

int ks_accum_view(const struct ks_accum *a, struct ks_report *out)
{
	/* meta, losses and counters are arrays inside the header: the two counters below go into the view's */
	*out = a->total;
	out->rows = NULL;
	out->nrows = out->cap = 0;
	if (a->total.nrows) {
		out->rows = malloc((size_t)a->total.nrows * sizeof(*out->rows));
		if (!out->rows)
			return -ENOMEM;
		/* the rows by value (keys and values are in them); sorting the array leaves the total's order, which its index holds */
		memcpy(out->rows, a->total.rows, (size_t)a->total.nrows * sizeof(*out->rows));
		out->nrows = out->cap = a->total.nrows;
	}
	ks_report_counter(out, "other_folds", a->folds);
	ks_report_counter(out, "expired_rows", a->expired);
	ks_report_sort(out);
	return 0;
}

void ks_accum_view_free(struct ks_report *view)
{
	free(view->rows);
	memset(view, 0, sizeof(*view));
}

int ks_accum_restore(struct ks_accum *a, struct ks_report *total, int other, uint64_t folds, uint64_t expired)
{
	const char *name = a->total.collector;

	ks_report_free(&a->total);
	a->total = *total;
	a->total.collector = name;
	memset(total, 0, sizeof(*total));
	a->other = other >= 0 && other < a->total.nrows ? other : -1;
	a->folds = folds;
	a->expired = expired;
	free(a->changed);
	a->changed = calloc((size_t)(a->total.cap > 0 ? a->total.cap : 1), sizeof(*a->changed));
	if (!a->changed)
		return -ENOMEM;
	return reindex(a);
}

uint64_t ks_report_lost_less(struct ks_report *delta, const struct ks_report *base)
{
	uint64_t off = 0;

	for (int i = 0; i < delta->nlost; i++) {
		struct ks_meta *m = &delta->lost_by[i];

		for (int j = 0; j < base->nlost; j++) {
			uint64_t b = base->lost_by[j].num;

			if (strcmp(m->name, base->lost_by[j].name))
				continue;
			if (b > m->num)
				b = m->num;
			m->num -= b;
			delta->lost -= b;
			off += b;
			break;
		}
	}
	return off;
}
