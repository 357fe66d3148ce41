/* The JSON writer of `ksight diff` on collector reports: every row's numbers, intervals and tests, and every gate judged. */
#include <errno.h>
#include <math.h>
#include "core/json.h"
#include "output/diff.h"
#include "output/output.h"

void ks_diff_json_mwu(struct ks_json *j, const struct ks_mwu *t)
{
	ks_json_kv_double(j, "u_b", t->u_b);
	ks_json_kv_double(j, "z", t->z);
	ks_json_kv_double(j, "p_value", t->p);
	ks_json_kv_double(j, "prob_b_greater", t->a12);
}

static void num_or_null(struct ks_json *j, const char *k, double v)
{
	ks_json_key(j, k);
	if (isnan(v) || isinf(v))
		ks_json_null(j);
	else
		ks_json_double(j, v);
}

static void ci_json(struct ks_json *j, const char *k, const struct ks_qci *c)
{
	ks_json_key(j, k);
	ks_json_arr_begin(j);
	if (c->open_lo)
		ks_json_null(j);
	else
		ks_json_u64(j, c->lo);
	if (c->open_hi)
		ks_json_null(j);
	else
		ks_json_u64(j, c->hi);
	ks_json_arr_end(j);
}

static void side_json(struct ks_json *j, const char *k, const struct ks_dcmp *c, int s)
{
	const struct ks_drow *r = c->r[s];
	static const char *const qk[4] = { "p50", "p90", "p99", "p999" };
	static const char *const ck[4] = { "p50_interval", "p90_interval", "p99_interval", "p999_interval" };

	ks_json_key(j, k);
	if (!r) {
		ks_json_null(j);
		return;
	}
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "count", r->count);
	if (r->has_hist) {
		ks_json_kv_u64(j, "values", r->h.count);
		for (int q = 0; q < 4; q++) {
			ks_json_kv_u64(j, qk[q], c->ci[s][q].est);
			ci_json(j, ck[q], &c->ci[s][q]);
		}
		ks_json_kv_u64(j, "max", r->h.max);
		ks_json_kv_double(j, "mean", ks_hist_mean(&r->h));
		ks_json_kv_u64(j, "total", r->h.sum);
	}
	ks_json_obj_end(j);
}

static void change_json(struct ks_json *j, const struct ks_dcmp *c)
{
	static const enum ks_gate_metric ms[] = { KS_GM_COUNT, KS_GM_P50, KS_GM_P90, KS_GM_P99, KS_GM_P999, KS_GM_MAX, KS_GM_MEAN, KS_GM_TOTAL };
	char k[32];

	ks_json_key(j, "change_pct");
	ks_json_obj_begin(j);
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		double a = ks_drow_metric(c->r[0], ms[i]), b = ks_drow_metric(c->r[1], ms[i]);

		snprintf(k, sizeof(k), "%s", ks_gate_metric_name(ms[i]));
		num_or_null(j, k, a > 0 ? (b - a) / a * 100 : NAN);
	}
	ks_json_obj_end(j);
}

static void row_json(struct ks_json *j, const struct ks_dcmp *c)
{
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "collector", c->any->collector);
	ks_json_kv_str(j, "row", c->any->label);
	ks_json_key(j, "keys");
	ks_json_obj_begin(j);
	for (int k = 0; k < c->any->nkeys; k++)
		ks_json_kv_str(j, c->any->names[k], c->any->vals[k]);
	ks_json_obj_end(j);
	ks_json_kv_str(j, "unit", c->any->unit);
	side_json(j, "a", c, 0);
	side_json(j, "b", c, 1);
	change_json(j, c);
	ks_json_key(j, "test");
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "name", "mann-whitney-u-buckets");
	if (c->tested)
		ks_diff_json_mwu(j, &c->mwu);
	ks_json_key(j, "shift");
	ks_json_i64(j, c->shift);
	ks_json_kv_double(j, "count_z", c->count_z);
	ks_json_kv_double(j, "count_p_value", c->count_p);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
}

int ks_diff_write_json(const struct ks_diff *d, const struct ks_gate *gates, FILE *out)
{
	struct ks_json *j = ks_json_new(out);

	if (!j)
		return -ENOMEM;
	ks_json_obj_begin(j);
	for (int s = 0; s < 2; s++) {
		ks_json_key(j, s ? "b" : "a");
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "file", d->side[s]->file);
		ks_json_key(j, "collectors");
		ks_json_arr_begin(j);
		for (int i = 0; i < d->side[s]->ncol; i++) {
			ks_json_obj_begin(j);
			ks_json_kv_str(j, "collector", d->side[s]->col[i].name);
			ks_json_kv_u64(j, "reports", (uint64_t)d->side[s]->col[i].docs);
			ks_json_kv_double(j, "duration_s", d->side[s]->col[i].duration_s);
			ks_json_obj_end(j);
		}
		ks_json_arr_end(j);
		ks_json_obj_end(j);
	}
	ks_json_kv_double(j, "alpha", d->alpha);
	ks_json_kv_double(j, "alpha_row", d->alpha_row);
	ks_json_key(j, "rows");
	ks_json_arr_begin(j);
	for (size_t i = 0; i < d->n; i++)
		row_json(j, &d->rows[i]);
	ks_json_arr_end(j);
	ks_json_kv_double(j, "alpha_gate", d->alpha_gate);
	ks_json_kv_u64(j, "fired", d->nfired);
	ks_json_key(j, "gates");
	ks_json_arr_begin(j);
	for (size_t i = 0; i < d->nhits; i++) {
		const struct ks_gate_hit *h = &d->hits[i];
		enum ks_gate_metric m = gates[h->gate].metric;

		ks_json_obj_begin(j);
		ks_json_kv_str(j, "gate", gates[h->gate].text);
		ks_json_kv_str(j, "row", d->rows[h->row].any->label);
		ks_json_kv_str(j, "metric", ks_gate_metric_name(m));
		ks_json_kv_double(j, "a", h->a);
		ks_json_kv_double(j, "b", h->b);
		if (ks_gate_metric_q(m) > 0) {
			ci_json(j, "a_interval", &h->ci[0]);
			ci_json(j, "b_interval", &h->ci[1]);
		}
		num_or_null(j, "p_value", h->p);
		ks_json_key(j, "holds");
		ks_json_bool(j, h->holds);
		ks_json_key(j, "significant");
		ks_json_bool(j, h->significant);
		ks_json_key(j, "fired");
		ks_json_bool(j, h->holds && h->significant);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	return ks_stream_status(out);
}

int ks_diff_write_folded_json(const struct ks_folded2 *f, const char *fa, const char *fb, FILE *out)
{
	struct ks_json *j = ks_json_new(out);
	double s[2];

	if (!j)
		return -ENOMEM;
	for (int k = 0; k < 2; k++)
		s[k] = f->total[k] ? 100.0 / (double)f->total[k] : 0;
	ks_json_obj_begin(j);
	for (int k = 0; k < 2; k++) {
		ks_json_key(j, k ? "b" : "a");
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "file", k ? fb : fa);
		ks_json_kv_u64(j, "samples", f->total[k]);
		ks_json_obj_end(j);
	}
	ks_json_key(j, "stacks");
	ks_json_arr_begin(j);
	for (size_t i = 0; i < f->n; i++) {
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "stack", f->v[i].stack);
		ks_json_kv_u64(j, "a", f->v[i].n[0]);
		ks_json_kv_u64(j, "b", f->v[i].n[1]);
		ks_json_kv_double(j, "a_pct", (double)f->v[i].n[0] * s[0]);
		ks_json_kv_double(j, "b_pct", (double)f->v[i].n[1] * s[1]);
		ks_json_kv_double(j, "change_points", (double)f->v[i].n[1] * s[1] - (double)f->v[i].n[0] * s[0]);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	return ks_stream_status(out);
}
