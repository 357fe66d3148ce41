/* record --collect's report chunks turned back into struct ks_report (keys, values, histograms, time) from the JSON each chunk holds: what report --html draws. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "core/collector.h"
#include "core/diffset.h"
#include "core/hash.h"
#include "format/reports.h"

struct name_key {
	const struct ks_rec_reports *rr;
	const char *s;
};

static bool name_eq(const void *ctx, size_t pos)
{
	const struct name_key *k = ctx;

	return !strcmp(k->rr->names[pos], k->s);
}

/*
 * @s kept once in @rr (a report's names must outlive the series; the
 * documents are freed as soon as read: a 300 s session's are 200 MB
 * parsed).  NULL when out of memory.
 */
static const char *intern(struct ks_rec_reports *rr, const char *s)
{
	struct name_key k = { rr, s };
	uint64_t h = ks_fnv1a(s, strlen(s), KS_FNV1A_INIT);
	long at = ks_strindex_find(&rr->idx, h, name_eq, &k);

	if (at >= 0)
		return rr->names[at];
	if (rr->nnames == rr->cap) {
		size_t cap = rr->cap ? rr->cap * 2 : 64;
		char **g = realloc(rr->names, cap * sizeof(*g));

		if (!g)
			return NULL;
		rr->names = g;
		rr->cap = cap;
	}
	rr->names[rr->nnames] = strdup(s);
	if (!rr->names[rr->nnames] || ks_strindex_add(&rr->idx, h, rr->nnames)) {
		free(rr->names[rr->nnames]);
		return NULL;
	}
	return rr->names[rr->nnames++];
}

static enum ks_unit unit_of(const char *u)
{
	return !strcmp(u, "bytes") ? KS_UNIT_BYTES : !strcmp(u, "count") ? KS_UNIT_COUNT : KS_UNIT_NS;
}

/* The kind of value column @name: the schema's, else a plain count. */
static enum ks_val_kind val_kind(const struct ks_schema *s, const char *name)
{
	for (const struct ks_column *c = s ? s->cols : NULL; c && c->name; c++)
		if (!strcmp(c->name, name))
			return c->kind == KS_COL_GAUGE ? KS_VAL_GAUGE : c->kind == KS_COL_DURATION ? KS_VAL_NS :
			       c->kind == KS_COL_BYTES ? KS_VAL_BYTES : KS_VAL_COUNT;
	return KS_VAL_COUNT;
}

/*
 * The names a collector's rows hold, by their place in the row: its rows
 * name the same fields in the same order, so one strcmp against the name
 * seen at that place saves intern()'s hash and lookup for nearly every field.
 */
#define SEEN_FIELDS 64
struct seen {
	const char *at[SEEN_FIELDS];
};

static const char *field_name(struct ks_rec_reports *rr, struct seen *seen, size_t pos, const char *jname)
{
	const char *name;

	if (pos < SEEN_FIELDS && seen->at[pos] && !strcmp(seen->at[pos], jname))
		return seen->at[pos];
	name = intern(rr, jname);
	if (name && pos < SEEN_FIELDS)
		seen->at[pos] = name;
	return name;
}

static int add_row(struct ks_rec_reports *rr, struct seen *seen, struct ks_report *r, const struct ks_schema *s,
		   json_object *o)
{
	struct ks_row *row = ks_report_add_row(r);
	size_t pos = 0;
	int err = 0;

	if (!row)
		return -ENOMEM;
	json_object_object_foreach(o, jname, v) {
		const char *name = field_name(rr, seen, pos++, jname);
		json_object *b;

		if (!name)
			return -ENOMEM;

		if (json_object_is_type(v, json_type_object) && json_object_object_get_ex(v, "buckets", &b)) {
			struct ks_hist *h = calloc(1, sizeof(*h));
			char unit[16] = "ns";

			if (!h)
				return -ENOMEM;
			err = ks_hist_add_json(h, v, unit, sizeof(unit));
			if (err) {
				free(h);
				return err;
			}
			/* the schema's histogram is the row's; the first one where there is no schema */
			if (!row->hist && (s ? s->hist_name && !strcmp(s->hist_name, name) : !row->nxhist)) {
				row->hist = h;
				r->hist_name = name;
				r->hist_unit = unit_of(unit);
			} else {
				err = ks_row_xhist(row, name, unit_of(unit), h);
			}
		} else if (json_object_is_type(v, json_type_object)) {
			continue; /* a breakdown (errnos...): not drawn */
		} else if (ks_json_is_key(s, name, v)) {
			err = json_object_is_type(v, json_type_string) ? ks_row_key_str(row, name, json_object_get_string(v))
								       : ks_row_key_num(row, name, json_object_get_int64(v));
		} else if (json_object_is_type(v, json_type_int)) {
			err = ks_row_val(row, name, val_kind(s, name), json_object_get_uint64(v));
		} else if (json_object_is_type(v, json_type_null)) {
			/* a gauge the row had no sample of (the JSON writer's null): kept as none, not a 0 */
			err = ks_row_val(row, name, val_kind(s, name), 0);
			if (!err)
				row->vals[row->nvals - 1].none = true;
		}
		if (err)
			return err;
	}
	return 0;
}

/* @doc into @r; @realtime_off: CLOCK_REALTIME - CLOCK_MONOTONIC at the recording's start. */
static int doc_report(struct ks_rec_reports *rr, struct ks_report *r, const char *collector, json_object *doc,
		      int64_t realtime_off)
{
	struct seen seen = { { NULL } };
	const struct ks_collector *kc = ks_collector_find(collector);
	const struct ks_schema *s = kc ? kc->schema : NULL;
	json_object *rows, *v, *t;
	int err;

	ks_report_init(r, collector, NULL);
	r->schema = s;
	if (!json_object_object_get_ex(doc, "rows", &rows) || !json_object_is_type(rows, json_type_array))
		return -EBADMSG;
	if (json_object_object_get_ex(doc, "interval", &v))
		r->interval = json_object_get_int(v);
	if (json_object_object_get_ex(doc, "duration_s", &v))
		r->duration_s = json_object_get_double(v);
	if (json_object_object_get_ex(doc, "lost", &v))
		r->lost = json_object_get_uint64(v);
	if (json_object_object_get_ex(doc, "time", &t) && json_object_object_get_ex(t, "monotonic_ns", &v)) {
		uint64_t m = json_object_get_uint64(v), w = m + (uint64_t)realtime_off;

		r->has_time = true;
		r->mono = (struct timespec){ (time_t)(m / 1000000000u), (long)(m % 1000000000u) };
		r->wall = (struct timespec){ (time_t)(w / 1000000000u), (long)(w % 1000000000u) };
	}
	for (size_t k = 0; k < json_object_array_length(rows); k++) {
		json_object *o = json_object_array_get_idx(rows, k);

		if (!json_object_is_type(o, json_type_object))
			return -EBADMSG;
		err = add_row(rr, &seen, r, s, o);
		if (err)
			return err;
	}
	return 0;
}

int ks_rec_reports_load(struct ks_rec_reports *out, const struct ks_recording *rec, char *why, size_t whylen)
{
	int64_t off = (int64_t)(ks_rec_manifest_u64(rec, "clock.start.realtime_ns") -
				ks_rec_manifest_u64(rec, "clock.start.monotonic_ns"));
	struct json_tokener *tok;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->series = ks_series_new(KS_SERIES_BUDGET);
	out->totals = calloc(rec->nreps + 1, sizeof(*out->totals));
	if (!out->series || !out->totals)
		return -ENOMEM;
	/* one tokener for every document (reset between them), not one allocated per report */
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	for (size_t i = 0; i < rec->nreps && !err; i++) {
		const struct ks_rec_report_view *v = &rec->reps[i].v;
		json_object *doc;
		struct ks_report r;

		json_tokener_reset(tok);
		doc = json_tokener_parse_ex(tok, v->json, (int)v->json_len);
		if (!doc || !json_object_is_type(doc, json_type_object)) {
			json_object_put(doc);
			json_tokener_free(tok);
			snprintf(why, whylen, "report %zu of %s is not a JSON object", i + 1, v->collector);
			return -EBADMSG;
		}
		/* the collector's name from the chunk (checked, alive as long as @rec), not the document */
		err = doc_report(out, &r, v->collector, doc, off);
		json_object_put(doc);
		/* too many keys or values, a bucket off the layout: not a report ksight wrote */
		err = err && err != -ENOMEM ? -EBADMSG : err;
		if (err) {
			snprintf(why, whylen, "report %zu of %s: %s", i + 1, v->collector,
				 err == -EBADMSG ? "not what ksight writes" : strerror(-err));
			ks_report_free(&r);
			break;
		}
		if (v->total) {
			out->totals[out->ntotals++] = r;
			continue;
		}
		/* one column per chunk: the chunk's interval number, as the recorder counted */
		err = ks_series_add(out->series, &r);
		ks_report_free(&r);
	}
	json_tokener_free(tok);
	return err;
}

void ks_rec_reports_free(struct ks_rec_reports *r)
{
	for (int i = 0; i < r->ntotals; i++)
		ks_report_free(&r->totals[i]);
	free(r->totals);
	ks_series_free(r->series);
	for (size_t i = 0; i < r->nnames; i++)
		free(r->names[i]);
	free(r->names);
	ks_strindex_free(&r->idx);
	memset(r, 0, sizeof(*r));
}
