/* The series of a run's interval reports: a ring of moved-in reports, dropped oldest-interval first past a byte budget, each with a row index by keys and its histograms packed sparsely. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/hash.h"
#include "core/series.h"

/* Histograms a kept row can have: its main one, then its extra ones. */
#define ROW_HISTS (1 + KS_ROW_XHISTS)

/*
 * One kept report and its row index: open addressing, slots hold row index + 1 (0: empty).
 * Its histograms are packed one after the other in @packed (ks_hist_pack); @hoff has
 * ROW_HISTS offsets + 1 per row (0: no such histogram), NULL when no row has one.
 */
struct entry {
	struct ks_report r;
	uint32_t *idx;
	size_t nidx; /* a power of two, at least twice the rows */
	uint8_t *packed;
	size_t npacked;
	uint32_t *hoff;
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
	free(e->packed);
	free(e->hoff);
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

/*
 * The packed form: LEB128 numbers, the header (count, sum, max, slots with
 * a count), then per such slot in increasing order its distance from the
 * slot after the previous one and its count.  A latency row fills a few
 * dozen neighbouring slots of 976: about 3 bytes each instead of 8 for all.
 */
static size_t put_u64(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		if (p)
			p[n] = b | (v ? 0x80 : 0);
		n++;
	} while (v);
	return n;
}

/* false at the end of the bytes or past 64 bits */
static bool get_u64(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned int sh = 0; *p < end && sh < 64; sh += 7) {
		uint8_t b = *(*p)++;

		if (sh == 63 && (b & 0x7e))
			return false;
		x |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

size_t ks_hist_pack(const struct ks_hist *h, uint8_t *buf)
{
	unsigned int nslots = 0, next = 0;
	size_t len = 0;

#define PUT(v) (len += put_u64(buf ? buf + len : NULL, (v)))
	for (unsigned int k = 0; k < KS_HIST_SLOTS; k++)
		nslots += h->slots[k] != 0;
	PUT(h->count);
	PUT(h->sum);
	PUT(h->max);
	PUT(nslots);
	for (unsigned int k = 0; k < KS_HIST_SLOTS; k++) {
		if (!h->slots[k])
			continue;
		PUT(k - next);
		PUT(h->slots[k]);
		next = k + 1;
	}
#undef PUT
	return len;
}

int ks_hist_view_init(struct ks_hist_view *v, const uint8_t *buf, size_t len)
{
	uint64_t n;

	memset(v, 0, sizeof(*v));
	v->p = buf;
	v->end = buf + len;
	if (!get_u64(&v->p, v->end, &v->count) || !get_u64(&v->p, v->end, &v->sum) ||
	    !get_u64(&v->p, v->end, &v->max) || !get_u64(&v->p, v->end, &n) || n > KS_HIST_SLOTS)
		return -EINVAL;
	v->nslots = v->left = (unsigned int)n;
	return 0;
}

bool ks_hist_view_next(struct ks_hist_view *v, unsigned int *slot, uint64_t *n)
{
	uint64_t gap;

	if (!v->left || v->bad)
		return false;
	/* a slot past the last, or an empty one, is not of ks_hist_pack: the rest is not read */
	if (!get_u64(&v->p, v->end, &gap) || gap >= KS_HIST_SLOTS - v->next || !get_u64(&v->p, v->end, n) || !*n) {
		v->bad = true;
		return false;
	}
	*slot = v->next + (unsigned int)gap;
	v->next = *slot + 1;
	v->left--;
	return true;
}

/* The rest of @v into @out, whole; 0 or -EINVAL. */
static int view_fill(struct ks_hist_view *v, struct ks_hist *out)
{
	unsigned int k;
	uint64_t n;

	memset(out, 0, sizeof(*out));
	out->count = v->count;
	out->sum = v->sum;
	out->max = v->max;
	while (ks_hist_view_next(v, &k, &n))
		out->slots[k] = n;
	return v->bad || v->left ? -EINVAL : 0;
}

int ks_hist_unpack(const uint8_t *buf, size_t len, struct ks_hist *out)
{
	struct ks_hist_view v;
	int err = ks_hist_view_init(&v, buf, len);

	if (!err)
		err = view_fill(&v, out);
	/* the bytes are one histogram's, no more */
	if (!err && v.p != v.end)
		err = -EINVAL;
	return err;
}

/* Where @row's histogram @which (0: the main one, 1..: xhist[which - 1]) is, or NULL. */
static struct ks_hist **row_hist(struct ks_row *row, int which)
{
	if (!which)
		return &row->hist;
	return which <= row->nxhist ? &row->xhist[which - 1].h : NULL;
}

static bool has_hist(const struct ks_row *row, int which)
{
	struct ks_hist **h = row_hist((struct ks_row *)row, which);

	return h && *h;
}

size_t ks_series_report_bytes(const struct ks_report *r)
{
	size_t n = sizeof(struct entry) + (size_t)r->cap * sizeof(struct ks_row);
	bool any = false;

	for (int i = 0; i < r->nrows; i++) {
		const struct ks_row *row = &r->rows[i];

		for (int w = 0; w < ROW_HISTS; w++) {
			if (has_hist(row, w)) {
				n += ks_hist_pack(*row_hist((struct ks_row *)row, w), NULL);
				any = true;
			}
		}
		n += (size_t)row->nsub * sizeof(*row->sub);
	}
	if (any)
		n += (size_t)r->nrows * ROW_HISTS * sizeof(uint32_t);
	for (int i = 0; i < r->nmeta; i++)
		n += r->meta[i].str ? strlen(r->meta[i].str) + 1 : 0;
	for (int i = 0; i < r->nlists; i++) {
		n += (size_t)r->lists[i].n * sizeof(char *);
		for (int k = 0; k < r->lists[i].n; k++)
			n += strlen(r->lists[i].items[k]) + 1;
	}
	return n;
}

bool ks_series_hist_view(const struct ks_series *s, size_t i, const struct ks_row *row, int which,
			 struct ks_hist_view *v)
{
	const struct entry *e;
	uintptr_t a = (uintptr_t)row, b;
	size_t j;
	uint32_t off;

	if (i >= s->len || which < 0 || which >= ROW_HISTS)
		return false;
	e = at(s, i);
	b = (uintptr_t)e->r.rows;
	/* @row must be one of the report's own rows: its index finds its offsets */
	if (!e->hoff || a < b || (a - b) % sizeof(*row))
		return false;
	j = (a - b) / sizeof(*row);
	if (j >= (size_t)e->r.nrows)
		return false;
	off = e->hoff[j * ROW_HISTS + which];
	return off && !ks_hist_view_init(v, e->packed + off - 1, e->npacked - (off - 1));
}

int ks_series_hist(const struct ks_series *s, size_t i, const struct ks_row *row, int which, struct ks_hist *out)
{
	struct ks_hist_view v;

	if (!ks_series_hist_view(s, i, row, which, &v))
		return -ENOENT;
	return view_fill(&v, out);
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

/* Packs @e's histograms into the room made for them and frees the dense ones. */
static void pack_rows(struct entry *e)
{
	for (int i = 0; i < e->r.nrows; i++) {
		for (int w = 0; w < ROW_HISTS; w++) {
			struct ks_hist **h = row_hist(&e->r.rows[i], w);

			if (!h || !*h)
				continue;
			e->hoff[(size_t)i * ROW_HISTS + w] = (uint32_t)e->npacked + 1;
			e->npacked += ks_hist_pack(*h, e->packed + e->npacked);
			free(*h);
			*h = NULL;
		}
	}
}

int ks_series_add(struct ks_series *s, struct ks_report *r)
{
	size_t packed = 0;
	struct entry *e;
	bool any = false;

	if (grow(s))
		return -ENOMEM;
	e = &s->e[(s->head + s->len) % s->cap];
	memset(e, 0, sizeof(*e));
	e->r = *r;
	for (int i = 0; i < r->nrows; i++) {
		for (int w = 0; w < ROW_HISTS; w++) {
			if (has_hist(&r->rows[i], w)) {
				packed += ks_hist_pack(*row_hist(&r->rows[i], w), NULL);
				any = true;
			}
		}
	}
	/* every allocation before anything of @r changes: a failure leaves it as it was */
	if (index_rows(e))
		goto nomem;
	if (any) {
		/* offsets + 1 fit 32 bits: 4 GiB of histograms is far past any budget */
		if (packed >= UINT32_MAX)
			goto nomem;
		e->packed = malloc(packed);
		e->hoff = calloc((size_t)r->nrows * ROW_HISTS, sizeof(*e->hoff));
		if (!e->packed || !e->hoff)
			goto nomem;
	}
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
	if (any)
		pack_rows(e);
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
nomem:
	free(e->idx);
	free(e->packed);
	free(e->hoff);
	memset(e, 0, sizeof(*e));
	return -ENOMEM;
}

size_t ks_series_intervals(const struct ks_series *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->len; i++)
		n += !i || at(s, i)->r.interval != at(s, i - 1)->r.interval;
	return n;
}
