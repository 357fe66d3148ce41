/* Collector reports (JSON, one document or a -i series) read into rows, matched across two files, compared and gated. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "core/collector.h"
#include "core/diffset.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/parse.h"
#include "core/report.h"

const double ks_diff_qs[4] = { 0.5, 0.9, 0.99, 0.999 };

/* files larger than this are refused rather than read into memory */
#define MAX_JSON_BYTES (512u << 20)

bool ks_json_is_key(const struct ks_schema *s, const char *name, json_object *v)
{
	if (json_object_is_type(v, json_type_string))
		return true;
	if (!json_object_is_type(v, json_type_int) || !s || !s->keys)
		return false;
	for (const char *const *k = s->keys; *k; k++)
		if (!strcmp(*k, name))
			return true;
	return false;
}

/* A JSON integer >= 0 (json-c reads one above INT64_MAX as a uint64, one below 0 as negative). */
static int get_u64(json_object *v, uint64_t *out)
{
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return -EBADMSG;
	*out = json_object_get_uint64(v);
	return 0;
}

int ks_hist_add_json(struct ks_hist *h, json_object *o, char *unit, size_t ulen)
{
	json_object *b, *v;
	size_t n;

	if (!json_object_object_get_ex(o, "buckets", &b) || !json_object_is_type(b, json_type_array))
		return -EBADMSG;
	if (json_object_object_get_ex(o, "unit", &v) && json_object_is_type(v, json_type_string))
		snprintf(unit, ulen, "%s", json_object_get_string(v));
	n = json_object_array_length(b);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(b, i);
		uint64_t low, cnt;
		unsigned int slot;

		if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 3)
			return -EBADMSG;
		if (get_u64(json_object_array_get_idx(e, 0), &low) || get_u64(json_object_array_get_idx(e, 2), &cnt))
			return -EBADMSG;
		slot = ks_hist_slot(low);
		/* a bucket must be one of the layout's slots, as ksight writes them; no count may wrap */
		if (ks_hist_slot_low(slot) != low || cnt > UINT64_MAX / 4 - h->count)
			return -EBADMSG;
		h->slots[slot] += cnt;
		h->count += cnt;
	}
	if (json_object_object_get_ex(o, "sum", &v)) {
		uint64_t sum;

		if (get_u64(v, &sum))
			return -EBADMSG;
		/* a sum past 2^64 (hours of nanoseconds times billions) saturates: mean and total stay ordered */
		h->sum = sum > UINT64_MAX - h->sum ? UINT64_MAX : h->sum + sum;
	}
	if (json_object_object_get_ex(o, "max", &v)) {
		uint64_t max;

		if (get_u64(v, &max))
			return -EBADMSG;
		if (max > h->max)
			h->max = max;
	}
	return 0;
}

struct row_key {
	const struct ks_dset *d;
	const char *col, *label;
};

static uint64_t row_hash(const char *col, const char *label)
{
	return ks_fnv1a(label, strlen(label), ks_fnv1a(col, strlen(col) + 1, KS_FNV1A_INIT));
}

static bool row_eq(const void *ctx, size_t pos)
{
	const struct row_key *k = ctx;

	return !strcmp(k->d->rows[pos].collector, k->col) && !strcmp(k->d->rows[pos].label, k->label);
}

const struct ks_drow *ks_dset_find(const struct ks_dset *d, const char *col, const char *label)
{
	struct row_key k = { d, col, label };
	long pos = ks_strindex_find(&d->idx, row_hash(col, label), row_eq, &k);

	return pos < 0 ? NULL : &d->rows[pos];
}

static int add_row(struct ks_dset *d, const char *col, const struct ks_schema *s, json_object *o)
{
	const char *names[KS_DKEYS], *vals[KS_DKEYS];
	char vbuf[KS_DKEYS][32], label[512] = "";
	struct ks_drow *r;
	json_object *hist = NULL, *cnt = NULL;
	uint64_t c = 0;
	int nk = 0, err;
	size_t at = 0;

	json_object_object_foreach(o, name, v) {
		if (json_object_is_type(v, json_type_object)) {
			json_object *x;

			if (!hist && json_object_object_get_ex(v, "buckets", &x))
				hist = v;
			continue;
		}
		if (!strcmp(name, "count"))
			cnt = v;
		if (!ks_json_is_key(s, name, v))
			continue;
		if (nk == KS_DKEYS)
			return -E2BIG;
		names[nk] = name;
		if (json_object_is_type(v, json_type_string)) {
			vals[nk] = json_object_get_string(v);
		} else {
			snprintf(vbuf[nk], sizeof(vbuf[nk]), "%lld", (long long)json_object_get_int64(v));
			vals[nk] = vbuf[nk];
		}
		at += (size_t)snprintf(label + at, at < sizeof(label) ? sizeof(label) - at : 0, "%s%s=%s", nk ? " " : "",
				       names[nk], vals[nk]);
		nk++;
	}
	if (at >= sizeof(label))
		return -E2BIG;
	if (cnt && get_u64(cnt, &c))
		return -EBADMSG;
	r = (struct ks_drow *)ks_dset_find(d, col, label);
	if (!r) {
		if (d->n == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 64;
			struct ks_drow *g = realloc(d->rows, cap * sizeof(*g));

			if (!g)
				return -ENOMEM;
			d->rows = g;
			d->cap = cap;
		}
		r = &d->rows[d->n];
		memset(r, 0, sizeof(*r));
		snprintf(r->collector, sizeof(r->collector), "%s", col);
		snprintf(r->unit, sizeof(r->unit), "count");
		r->label = strdup(label);
		if (!r->label || ks_strindex_add(&d->idx, row_hash(col, label), d->n))
			return -ENOMEM;
		d->n++;
		for (int k = 0; k < nk; k++) {
			r->names[k] = strdup(names[k]);
			r->vals[k] = strdup(vals[k]);
			r->nkeys = k + 1;
			if (!r->names[k] || !r->vals[k])
				return -ENOMEM;
		}
	}
	if (hist) {
		uint64_t before = r->h.count;

		err = ks_hist_add_json(&r->h, hist, r->unit, sizeof(r->unit));
		if (err)
			return err;
		r->has_hist = true;
		if (!cnt)
			r->count += r->h.count - before;
	}
	if (c > UINT64_MAX / 4 - r->count)
		return -EBADMSG;
	r->count += c;
	return 0;
}

static int add_doc(struct ks_dset *d, json_object *doc)
{
	json_object *c, *rows, *dur;
	const struct ks_collector *kc;
	const char *col;
	int i, err;

	if (!json_object_is_type(doc, json_type_object) || !json_object_object_get_ex(doc, "collector", &c) ||
	    !json_object_object_get_ex(doc, "rows", &rows) || !json_object_is_type(rows, json_type_array))
		return -EBADMSG;
	col = json_object_get_string(c);
	if (strlen(col) >= sizeof(d->col[0].name))
		return -EBADMSG;
	for (i = 0; i < d->ncol && strcmp(d->col[i].name, col); i++)
		;
	if (i == d->ncol) {
		if (d->ncol == KS_DCOLS)
			return -E2BIG;
		snprintf(d->col[d->ncol++].name, sizeof(d->col[0].name), "%s", col);
	}
	d->col[i].docs++;
	if (json_object_object_get_ex(doc, "duration_s", &dur))
		d->col[i].duration_s += json_object_get_double(dur);
	kc = ks_collector_find(col);
	for (size_t k = 0; k < json_object_array_length(rows); k++) {
		json_object *r = json_object_array_get_idx(rows, k);

		if (!json_object_is_type(r, json_type_object))
			return -EBADMSG;
		err = add_row(d, col, kc ? kc->schema : NULL, r);
		if (err)
			return err;
	}
	return 0;
}

static int read_all(const char *file, char **buf, size_t *len)
{
	FILE *f = fopen(file, "re");
	size_t cap = 0, n = 0;
	char *b = NULL;
	int err = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (n + 65536 > cap) {
			char *g;

			cap = cap ? cap * 2 : 1 << 20;
			if (cap > MAX_JSON_BYTES + 65536u) {
				err = -EFBIG;
				break;
			}
			g = realloc(b, cap + 1);
			if (!g) {
				err = -ENOMEM;
				break;
			}
			b = g;
		}
		size_t r = fread(b + n, 1, cap - n, f);

		n += r;
		if (!r) {
			if (ferror(f))
				err = -EIO;
			break;
		}
	}
	fclose(f);
	if (err) {
		free(b);
		return err;
	}
	*buf = b;
	*len = n;
	return 0;
}

int ks_dset_add_json(struct ks_dset *d, const char *buf, size_t len, char *err, size_t errlen)
{
	const char *file = d->file;
	struct json_tokener *tok = json_tokener_new();
	size_t at = 0;
	int rc = 0, ndocs = 0;

	if (!tok) {
		snprintf(err, errlen, "reading '%s': %s", KS_ESC(file), strerror(ENOMEM));
		return -ENOMEM;
	}
	/* documents one after the other: a -i series is one per line, `run` one per collector per interval */
	while (at < len) {
		json_object *doc;
		enum json_tokener_error je;

		while (at < len && strchr(" \t\r\n", buf[at]))
			at++;
		if (at == len)
			break;
		doc = json_tokener_parse_ex(tok, buf + at, (int)(len - at > INT32_MAX ? INT32_MAX : len - at));
		je = json_tokener_get_error(tok);
		if (!doc) {
			snprintf(err, errlen, "'%s' is not JSON at byte %zu: %s", KS_ESC(file), at,
				 je == json_tokener_continue ? "cut short" : json_tokener_error_desc(je));
			rc = -EBADMSG;
			break;
		}
		at += json_tokener_get_parse_end(tok);
		json_tokener_reset(tok);
		rc = add_doc(d, doc);
		json_object_put(doc);
		if (rc) {
			snprintf(err, errlen, "'%s': document %d is not a ksight collector report (%s)", KS_ESC(file),
				 ndocs + 1,
				 rc == -EBADMSG ? "see docs/json.md"
				 : rc == -E2BIG ? "a row with more than 8 keys or 512 bytes of them, or more than 16 collectors"
				 : rc == -ENOMEM ? "out of memory"
						: strerror(-rc));
			break;
		}
		ndocs++;
	}
	json_tokener_free(tok);
	return rc;
}

/* True when @d holds no report: said as such in @err. */
static int no_reports(const struct ks_dset *d, char *err, size_t errlen)
{
	int docs = 0;

	for (int i = 0; i < d->ncol; i++)
		docs += d->col[i].docs;
	if (docs)
		return 0;
	snprintf(err, errlen, "'%s' holds no report", KS_ESC(d->file));
	return -EBADMSG;
}

int ks_dset_load(struct ks_dset *d, const char *file, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	d->file = file;
	rc = read_all(file, &buf, &len);
	if (rc) {
		snprintf(err, errlen, "cannot read '%s': %s", KS_ESC(file), strerror(-rc));
		return rc;
	}
	rc = ks_dset_add_json(d, buf, len, err, errlen);
	if (!rc)
		rc = no_reports(d, err, errlen);
	free(buf);
	return rc;
}

int ks_dset_done(struct ks_dset *d, char *err, size_t errlen)
{
	return no_reports(d, err, errlen);
}

void ks_dset_free(struct ks_dset *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->rows[i].label);
		for (int k = 0; k < d->rows[i].nkeys; k++) {
			free(d->rows[i].names[k]);
			free(d->rows[i].vals[k]);
		}
	}
	free(d->rows);
	ks_strindex_free(&d->idx);
	memset(d, 0, sizeof(*d));
}

static const struct ks_hist empty_hist;

static const struct ks_hist *hist_of(const struct ks_drow *r)
{
	return r ? &r->h : &empty_hist;
}

double ks_drow_metric(const struct ks_drow *r, enum ks_gate_metric m)
{
	if (!r)
		return 0;
	switch (m) {
	case KS_GM_MEAN:
		return ks_hist_mean(&r->h);
	case KS_GM_MAX:
		return (double)r->h.max;
	case KS_GM_COUNT:
		return (double)r->count;
	case KS_GM_TOTAL:
		return (double)r->h.sum;
	default:
		return (double)ks_hist_percentile(&r->h, ks_gate_metric_q(m));
	}
}

static void compare_row(struct ks_dcmp *c, double alpha)
{
	const struct ks_hist *h[2] = { hist_of(c->r[0]), hist_of(c->r[1]) };

	c->any = c->r[0] ? c->r[0] : c->r[1];
	c->tested = !ks_mwu_hist(h[0], h[1], &c->mwu);
	for (int s = 0; s < 2; s++)
		for (int q = 0; q < 4; q++)
			ks_hist_quantile_ci(h[s], ks_diff_qs[q], alpha / 2, &c->ci[s][q]);
	c->count_z = ks_count_z(c->r[0] ? c->r[0]->count : 0, c->r[1] ? c->r[1]->count : 0);
	c->count_p = ks_normal_p2(c->count_z);
	c->shift = c->tested && c->mwu.p < alpha ? (c->mwu.z > 0 ? 1 : -1) : 0;
}

/* Whether B's change of @m on @c is significant at @alpha in the gate's direction (up for '>'). */
static bool significant(const struct ks_gate *g, const struct ks_dcmp *c, double alpha, struct ks_gate_hit *hit)
{
	int dir = g->op == '>' ? 1 : -1;
	double q = ks_gate_metric_q(g->metric);
	bool mwu_sig = c->tested && c->mwu.p < alpha && (c->mwu.z > 0 ? 1 : -1) == dir;
	bool count_sig = c->count_p < alpha && (c->count_z > 0 ? 1 : -1) == dir;

	hit->p = NAN;
	if (q > 0) {
		struct ks_qci *a = &hit->ci[0], *b = &hit->ci[1];

		/* each interval at alpha / 2: when neither misses, they overlap under no change */
		ks_hist_quantile_ci(hist_of(c->r[0]), q, alpha / 2, a);
		ks_hist_quantile_ci(hist_of(c->r[1]), q, alpha / 2, b);
		if (!c->r[1] || !c->r[1]->h.count)
			return false;
		if (g->kind == KS_GATE_LEVEL)
			return dir > 0 ? !b->open_lo && (double)b->lo > g->thr : !b->open_hi && (double)b->hi < g->thr;
		if (!c->r[0] || !c->r[0]->h.count)
			return false;
		return dir > 0 ? !b->open_lo && !a->open_hi && b->lo > a->hi : !b->open_hi && !a->open_lo && b->hi < a->lo;
	}
	/* a level of the mean, max, count or total is B's own measured value: nothing to test */
	if (g->kind == KS_GATE_LEVEL)
		return true;
	switch (g->metric) {
	case KS_GM_COUNT:
		hit->p = c->count_p;
		return count_sig;
	case KS_GM_TOTAL:
		hit->p = fmin(c->count_p, c->tested ? c->mwu.p : 1);
		return count_sig || mwu_sig;
	default: /* mean, max: the shift of the whole distribution */
		hit->p = c->tested ? c->mwu.p : NAN;
		return mwu_sig;
	}
}

static bool row_selected(const struct ks_gate *g, const struct ks_dcmp *c)
{
	return !strcmp(g->collector, c->any->collector) &&
	       ks_gate_select(g, (const char *const *)c->any->names, (const char *const *)c->any->vals, c->any->nkeys);
}

int ks_diff_run(struct ks_diff *d, const struct ks_dset *a, const struct ks_dset *b, double alpha,
		const struct ks_gate *gates, int ngates)
{
	size_t m = 0;

	memset(d, 0, sizeof(*d));
	d->alpha = alpha;
	d->side[0] = a;
	d->side[1] = b;
	d->rows = calloc(a->n + b->n + 1, sizeof(*d->rows));
	if (!d->rows)
		return -ENOMEM;
	for (size_t i = 0; i < a->n; i++) {
		d->rows[d->n].r[0] = &a->rows[i];
		d->rows[d->n++].r[1] = ks_dset_find(b, a->rows[i].collector, a->rows[i].label);
	}
	for (size_t k = 0; k < b->n; k++)
		if (!ks_dset_find(a, b->rows[k].collector, b->rows[k].label))
			d->rows[d->n++].r[1] = &b->rows[k];
	/* Bonferroni over the rows shown: each row's verdict at alpha / rows */
	d->alpha_row = alpha / (double)(d->n ? d->n : 1);
	for (size_t i = 0; i < d->n; i++)
		compare_row(&d->rows[i], d->alpha_row);
	for (int g = 0; g < ngates; g++)
		for (size_t i = 0; i < d->n; i++)
			m += row_selected(&gates[g], &d->rows[i]);
	d->alpha_gate = alpha / (double)(m ? m : 1);
	d->hits = calloc(m + 1, sizeof(*d->hits));
	if (!d->hits)
		return -ENOMEM;
	for (int g = 0; g < ngates; g++)
		for (size_t i = 0; i < d->n; i++) {
			struct ks_gate_hit *h = &d->hits[d->nhits];
			const struct ks_dcmp *c = &d->rows[i];

			if (!row_selected(&gates[g], c))
				continue;
			h->gate = g;
			h->row = i;
			h->a = ks_drow_metric(c->r[0], gates[g].metric);
			h->b = ks_drow_metric(c->r[1], gates[g].metric);
			h->holds = ks_gate_holds(&gates[g], h->a, h->b);
			h->significant = significant(&gates[g], c, d->alpha_gate, h);
			d->nfired += h->holds && h->significant;
			d->nhits++;
		}
	return 0;
}

void ks_diff_free(struct ks_diff *d)
{
	free(d->rows);
	free(d->hits);
	memset(d, 0, sizeof(*d));
}
