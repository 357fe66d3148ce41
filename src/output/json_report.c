/* The JSON writer: one document per report, the envelope of docs/json.md. */
#include <errno.h>
#include <stdlib.h>
#include "core/budget.h"
#include "core/cmd.h"
#include "core/json.h"
#include "output/output.h"

static void write_meta(struct ks_json *j, const char *name, const struct ks_meta *m, int n)
{
	ks_json_key(j, name);
	ks_json_obj_begin(j);
	for (int i = 0; i < n; i++) {
		if (m[i].is_num)
			ks_json_kv_u64(j, m[i].name, m[i].num);
		else
			ks_json_kv_str(j, m[i].name, m[i].str);
	}
	ks_json_obj_end(j);
}

static void write_hist_json(struct ks_json *j, const struct ks_hist *h, enum ks_unit unit)
{
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "unit", ks_unit_name(unit));
	ks_json_kv_u64(j, "count", h->count);
	ks_json_kv_u64(j, "p50", ks_hist_percentile(h, 0.50));
	ks_json_kv_u64(j, "p90", ks_hist_percentile(h, 0.90));
	ks_json_kv_u64(j, "p99", ks_hist_percentile(h, 0.99));
	ks_json_kv_u64(j, "p999", ks_hist_percentile(h, 0.999));
	ks_json_kv_u64(j, "max", h->max);
	ks_json_kv_double(j, "mean", ks_hist_mean(h));
	ks_json_kv_u64(j, "sum", h->sum);
	/* non-empty slots only, as [low, high, count] */
	ks_json_key(j, "buckets");
	ks_json_arr_begin(j);
	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		ks_json_arr_begin(j);
		ks_json_u64(j, ks_hist_slot_low(i));
		ks_json_u64(j, ks_hist_slot_high(i));
		ks_json_u64(j, h->slots[i]);
		ks_json_arr_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
}

static void write_time(struct ks_json *j, const struct ks_report *r)
{
	char b[64];

	ks_json_key(j, "time");
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "wall", ks_fmt_iso8601(&r->wall, b, sizeof(b)));
	ks_json_kv_u64(j, "monotonic_ns", (uint64_t)r->mono.tv_sec * 1000000000ull + (uint64_t)r->mono.tv_nsec);
	ks_json_obj_end(j);
}

int ks_write_json(const struct ks_report *r, FILE *out)
{
	struct ks_json *j = ks_json_new(out);
	int n = r->top_n > 0 && r->top_n < r->nrows ? r->top_n : r->nrows;

	if (!j)
		return -ENOMEM;
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "collector", r->collector);
	ks_json_kv_str(j, "hook", r->hook ? r->hook : "");
	ks_json_kv_u64(j, "interval", (uint64_t)r->interval);
	ks_json_kv_double(j, "duration_s", r->duration_s);
	if (r->has_time)
		write_time(j, r);
	ks_json_kv_u64(j, "lost", r->lost);
	write_meta(j, "lost_by", r->lost_by, r->nlost);
	write_meta(j, "counters", r->counters, r->ncounters);
	write_meta(j, "filters", r->meta, r->nmeta);
	for (int i = 0; i < r->nlists; i++) {
		ks_json_key(j, r->lists[i].name);
		ks_json_arr_begin(j);
		for (int k = 0; k < r->lists[i].n; k++)
			ks_json_str(j, r->lists[i].items[k]);
		ks_json_arr_end(j);
	}
	if (r->budget) {
		ks_json_key(j, "maps");
		ks_budget_write_json(r->budget, j);
	}
	if (r->cmd)
		ks_cmd_write_json(r->cmd, j);
	ks_json_kv_u64(j, "total_rows", (uint64_t)r->nrows);
	ks_json_key(j, "rows");
	ks_json_arr_begin(j);
	for (int i = 0; i < n; i++) {
		const struct ks_row *row = &r->rows[i];

		ks_json_obj_begin(j);
		for (int k = 0; k < row->nkeys; k++) {
			ks_json_key(j, row->keys[k].name);
			if (row->keys[k].is_num)
				ks_json_i64(j, row->keys[k].num);
			else
				ks_json_str(j, row->keys[k].str);
		}
		for (int v = 0; v < row->nvals; v++) {
			/* a gauge the row had no sample of is null, not a reading of 0 (record's chunk reader maps it back) */
			ks_json_key(j, row->vals[v].name);
			if (row->vals[v].none)
				ks_json_null(j);
			else
				ks_json_u64(j, row->vals[v].v);
		}
		if (r->sub_name) {
			ks_json_key(j, r->sub_name);
			ks_json_obj_begin(j);
			for (int s = 0; s < row->nsub; s++)
				ks_json_kv_u64(j, row->sub[s].name, row->sub[s].count);
			ks_json_obj_end(j);
		}
		if (row->hist) {
			ks_json_key(j, r->hist_name ? r->hist_name : "hist");
			write_hist_json(j, row->hist, r->hist_unit);
		}
		for (int x = 0; x < row->nxhist; x++) {
			ks_json_key(j, row->xhist[x].name);
			write_hist_json(j, row->xhist[x].h, row->xhist[x].unit);
		}
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	return ks_stream_status(out);
}
