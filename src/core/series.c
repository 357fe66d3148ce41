/* The series of a run's interval reports: a ring of moved-in reports, dropped oldest-interval first past a byte budget, each with a row index by keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/hash.h"
#include "core/series.h"

/* One kept report and its row index: open addressing, slots hold row index + 1 (0: empty). */
struct entry {
	struct ks_report r;
	uint32_t *idx;
	size_t nidx; /* a power of two, at least twice the rows */
	size_t bytes;
};

struct ks_series {
	struct entry *e; /* ring of @cap entries, the oldest at @head */
	size_t cap, head, len;
	size_t budget, bytes;
	uint64_t dropped;
	bool started;
	struct timespec start_mono, start_wall;
};

struct ks_series *ks_series_new(size_t budget)
{
	struct ks_series *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->budget = budget;
	return s;
}

static struct entry *at(const struct ks_series *s, size_t i)
{
	return &s->e[(s->head + i) % s->cap];
}

static void entry_free(struct entry *e)
{
	ks_report_free(&e->r);
	free(e->idx);
}

void ks_series_free(struct ks_series *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->len; i++)
		entry_free(at(s, i));
	free(s->e);
	free(s);
}

size_t ks_series_len(const struct ks_series *s)
{
	return s->len;
}

const struct ks_report *ks_series_at(const struct ks_series *s, size_t i)
{
	return i < s->len ? &at(s, i)->r : NULL;
}

uint64_t ks_series_dropped(const struct ks_series *s)
{
	return s->dropped;
}

size_t ks_series_bytes(const struct ks_series *s)
{
	return s->bytes;
}

size_t ks_series_budget(const struct ks_series *s)
{
	return s->budget;
}

bool ks_series_start(const struct ks_series *s, struct timespec *mono, struct timespec *wall)
{
	if (s->started) {
		*mono = s->start_mono;
		*wall = s->start_wall;
	}
	return s->started;
}

bool ks_row_keys_eq(const struct ks_row *a, const struct ks_row *b)
{
	if (a->nkeys != b->nkeys)
		return false;
	for (int k = 0; k < a->nkeys; k++) {
		const struct ks_key *x = &a->keys[k], *y = &b->keys[k];

		if (x->is_num != y->is_num || strcmp(x->name, y->name))
			return false;
		if (x->is_num ? x->num != y->num : strcmp(x->str, y->str) != 0)
			return false;
	}
	return true;
}

uint64_t ks_row_keys_hash(const struct ks_row *row)
{
	uint64_t h = KS_FNV1A_INIT;

	for (int k = 0; k < row->nkeys; k++) {
		const struct ks_key *x = &row->keys[k];

		/* the NULs part the fields: "ab","c" and "a","bc" differ */
		h = ks_fnv1a(x->name, strlen(x->name) + 1, h);
		if (x->is_num)
			h = ks_fnv1a(&x->num, sizeof(x->num), h);
		else
			h = ks_fnv1a(x->str, strlen(x->str) + 1, h);
	}
	return h;
}

size_t ks_series_report_bytes(const struct ks_report *r)
{
	size_t n = sizeof(struct entry) + (size_t)r->cap * sizeof(struct ks_row);

	for (int i = 0; i < r->nrows; i++) {
		const struct ks_row *row = &r->rows[i];

		n += row->hist ? sizeof(*row->hist) : 0;
		n += (size_t)row->nsub * sizeof(*row->sub);
		for (int x = 0; x < row->nxhist; x++)
			n += row->xhist[x].h ? sizeof(*row->xhist[x].h) : 0;
	}
	for (int i = 0; i < r->nmeta; i++)
		n += r->meta[i].str ? strlen(r->meta[i].str) + 1 : 0;
	for (int i = 0; i < r->nlists; i++) {
		n += (size_t)r->lists[i].n * sizeof(char *);
		for (int k = 0; k < r->lists[i].n; k++)
			n += strlen(r->lists[i].items[k]) + 1;
	}
	return n;
}

/* Builds @e's row index; 0 or -ENOMEM. */
static int index_rows(struct entry *e)
{
	size_t n = 4;

	while (n < 2 * (size_t)e->r.nrows)
		n *= 2;
	e->idx = calloc(n, sizeof(*e->idx));
	if (!e->idx)
		return -ENOMEM;
	e->nidx = n;
	for (int i = 0; i < e->r.nrows; i++) {
		size_t h = (size_t)ks_row_keys_hash(&e->r.rows[i]) & (n - 1);

		/* a report whose rows repeat a key: the first one is found, as a writer shows it first */
		while (e->idx[h] && !ks_row_keys_eq(&e->r.rows[e->idx[h] - 1], &e->r.rows[i]))
			h = (h + 1) & (n - 1);
		if (!e->idx[h])
			e->idx[h] = (uint32_t)i + 1;
	}
	return 0;
}

const struct ks_row *ks_series_row(const struct ks_series *s, size_t i, const struct ks_row *like)
{
	const struct entry *e;
	size_t h;

	if (i >= s->len)
		return NULL;
	e = at(s, i);
	h = (size_t)ks_row_keys_hash(like) & (e->nidx - 1);
	for (; e->idx[h]; h = (h + 1) & (e->nidx - 1))
		if (ks_row_keys_eq(&e->r.rows[e->idx[h] - 1], like))
			return &e->r.rows[e->idx[h] - 1];
	return NULL;
}

/* Room for one more entry: the ring doubled and laid out from 0; 0 or -ENOMEM. */
static int grow(struct ks_series *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16;
	struct entry *e;

	if (s->len < s->cap)
		return 0;
	e = malloc(cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < s->len; i++)
		e[i] = *at(s, i);
	free(s->e);
	s->e = e;
	s->cap = cap;
	s->head = 0;
	return 0;
}

/* Drops the oldest interval's reports while over the budget, never those of interval @keep. */
static void trim(struct ks_series *s, int keep)
{
	while (s->len && s->bytes > s->budget) {
		int oldest = at(s, 0)->r.interval;

		if (oldest == keep)
			return;
		while (s->len && at(s, 0)->r.interval == oldest) {
			struct entry *e = at(s, 0);

			s->bytes -= e->bytes;
			entry_free(e);
			s->head = (s->head + 1) % s->cap;
			s->len--;
		}
		s->dropped++;
	}
}

/* @t less @ns nanoseconds (>= 0). */
static struct timespec ts_minus(struct timespec t, int64_t ns)
{
	t.tv_sec -= ns / 1000000000;
	t.tv_nsec -= ns % 1000000000;
	if (t.tv_nsec < 0) {
		t.tv_nsec += 1000000000;
		t.tv_sec--;
	}
	return t;
}

int ks_series_add(struct ks_series *s, struct ks_report *r)
{
	struct entry *e;

	if (grow(s))
		return -ENOMEM;
	e = &s->e[(s->head + s->len) % s->cap];
	memset(e, 0, sizeof(*e));
	e->r = *r;
	if (index_rows(e))
		return -ENOMEM;
	/* rows are kept for the run: the spare capacity of the collector's array is given back */
	if (!e->r.nrows) {
		free(e->r.rows);
		e->r.rows = NULL;
		e->r.cap = 0;
	} else if (e->r.cap > e->r.nrows) {
		struct ks_row *rows = realloc(e->r.rows, (size_t)e->r.nrows * sizeof(*rows));

		if (rows) {
			e->r.rows = rows;
			e->r.cap = e->r.nrows;
		}
	}
	e->bytes = ks_series_report_bytes(&e->r) + e->nidx * sizeof(*e->idx);
	if (!s->started && r->has_time) {
		int64_t ns = r->duration_s > 0 ? (int64_t)(r->duration_s * 1e9 + 0.5) : 0;

		s->start_mono = ts_minus(r->mono, ns);
		s->start_wall = ts_minus(r->wall, ns);
		s->started = true;
	}
	/* the report now lives here: the caller's copy is emptied (its header kept) */
	ks_report_init(r, r->collector, r->hook);
	s->len++;
	s->bytes += e->bytes;
	trim(s, e->r.interval);
	return 0;
}
