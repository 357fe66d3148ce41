/* A recording's latency pairs and per-event counts as reports (what `report --pair` and `diff --pair` read). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "events/pair_report.h"

int ks_pair_parse(struct ks_pair *p, const struct ks_recording *rec, const char *spec, const char *keys)
{
	return ks_pair_parse_tep(p, rec->tep, spec, keys, "--pair", "--key", "in this recording ('ksight info FILE' lists its events)");
}

int ks_pair_each(const struct ks_recording *rec, const struct ks_pair *p, void (*fn)(void *ctx, uint64_t ns),
		 void *ctx, struct ks_pair_counts *pc)
{
	struct ks_pairer *m = ks_pairer_new(0);
	int err = 0;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < rec->nev && err >= 0; i++) {
		const struct ks_rec_ev *x = &rec->evs[i];
		uint64_t ka[KS_PAIR_MAX_KEYS], kb[KS_PAIR_MAX_KEYS], start;
		unsigned roles = ks_pair_keys(p, rec->tep, x->ev, x->e + 1, x->e->len, ka, kb);

		if (roles && (err = ks_pairer_feed(m, roles, ka, kb, x->e->ts, &start)) == 1)
			fn(ctx, x->e->ts - start);
	}
	ks_pairer_counts(m, pc);
	ks_pairer_free(m);
	return err < 0 ? err : 0;
}

static void hist_add(void *ctx, uint64_t ns)
{
	ks_hist_record(ctx, ns);
}

static int pair_run(const struct ks_recording *rec, const struct ks_pair *p, struct ks_report *r)
{
	struct ks_hist *h = calloc(1, sizeof(*h));
	struct ks_pair_counts pc;
	struct ks_row *row;
	int err;

	if (!h)
		return -ENOMEM;
	err = ks_pair_each(rec, p, hist_add, h, &pc);
	row = err ? NULL : ks_report_add_row(r);
	if (!row) {
		free(h);
		return err ? err : -ENOMEM;
	}
	ks_row_key_str(row, "pair", p->spec);
	ks_row_val(row, "count", KS_VAL_COUNT, h->count);
	ks_row_val(row, "total_ns", KS_VAL_NS, h->sum);
	ks_row_val(row, "unmatched_ends", KS_VAL_COUNT, pc.unmatched);
	ks_row_val(row, "open_starts", KS_VAL_COUNT, pc.open);
	ks_row_val(row, "restarted", KS_VAL_COUNT, pc.restarted);
	row->hist = h;
	row->sort = h->sum;
	return 0;
}

/* What the pair and event reports lay out: event names and pair specs are read whole. */
static const struct ks_schema rec_schema = { .keys_whole = true };

int ks_pairs_report(const struct ks_recording *rec, const struct ks_pair *pairs, int n, struct ks_report *r)
{
	int err = 0;

	r->hist_name = "latency_ns";
	r->hist_text = true;
	r->schema = &rec_schema;
	r->duration_s = (double)(rec->last_ts - rec->first_ts) / 1e9;
	for (int i = 0; i < n && !err; i++)
		err = pair_run(rec, &pairs[i], r);
	return err;
}

int ks_events_report(const struct ks_recording *rec, struct ks_report *r)
{
	double span = (double)(rec->last_ts - rec->first_ts) / 1e9;
	char name[128];

	r->duration_s = span;
	r->schema = &rec_schema;
	for (size_t i = 0; i < rec->nev; i++) {
		struct tep_event *ev = rec->evs[i].ev;
		struct ks_row *row = NULL;

		ks_rec_ev_name(ev, name, sizeof(name));
		for (int k = 0; k < r->nrows; k++)
			if (!strcmp(r->rows[k].keys[0].str, name))
				row = &r->rows[k];
		if (!row) {
			row = ks_report_add_row(r);
			if (!row)
				return -ENOMEM;
			ks_row_key_str(row, "event", name);
			ks_row_val(row, "count", KS_VAL_COUNT, 0);
		}
		row->vals[0].v++;
		row->sort = row->vals[0].v;
	}
	for (int k = 0; k < r->nrows; k++)
		ks_row_val(&r->rows[k], "per_s", KS_VAL_GAUGE,
			   span > 0 ? (uint64_t)((double)r->rows[k].vals[0].v / span + 0.5) : 0);
	return 0;
}
