/* profile's JSON (and the --stacks modes'): its result, its losses, how the unwinding went, the stacks. */
#include <errno.h>
#include "core/cmd.h"
#include "core/json.h"
#include "output/output.h"
#include "output/profile.h"

static const char *kind_name(int k)
{
	static const char *const n[] = { "comm", "user", "kernel", "jit", "inline" };

	return k >= 0 && k <= KS_FK_INLINE ? n[k] : "user";
}

int ks_write_profile_json(const struct ks_profile_result *res, const struct ks_profile_json_opts *o, FILE *out)
{
	const struct ks_prof_stats *s = &res->stats;
	const struct ks_stacks *st = &res->st;
	struct ks_json *j = ks_json_new(out);

	if (!j)
		return -ENOMEM;
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "collector", o->collector);
	ks_json_kv_str(j, "unit", res->st.unit);
	ks_json_kv_str(j, "event", res->event ? res->event : "cpu-clock");
	ks_json_kv_u64(j, "frequency_hz", o->hz);
	ks_json_kv_str(j, "call_graph", o->dwarf ? "dwarf" : o->cfi ? "cfi" : "fp");
	ks_json_kv_double(j, "duration_s", res->duration_s);
	ks_json_kv_u64(j, "samples", s->samples);
	ks_json_key(j, "kernel_symbols_hidden");
	ks_json_bool(j, res->ksyms_hidden);
	ks_json_key(j, "lost");
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "kernel_stacks", s->kstack_lost);
	ks_json_kv_u64(j, "user_stacks", s->ustack_lost);
	ks_json_kv_u64(j, "counts_full", s->counts_full);
	ks_json_kv_u64(j, "ring_full", s->ring_lost);
	ks_json_kv_u64(j, "user_stack_unreadable", s->ustack_unread);
	ks_json_kv_u64(j, "map_errors", s->map_errors);
	if (o->offcpu) /* switches in the kernel did not report, their time not told */
		ks_json_kv_u64(j, "unseen_switch_in", s->off_unseen_in);
	ks_json_obj_end(j);
	if (o->offcpu) /* those timed from sched_info instead (docs/json.md) */
		ks_json_kv_u64(j, "inferred_switch_in", s->off_inferred_in);
	ks_json_key(j, "unwind");
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "samples", o->dwarf ? res->unwound : res->ustacks);
	ks_json_kv_double(j, "mean_user_depth",
			  o->dwarf ? (res->unwound ? (double)res->user_frames / res->unwound : 0)
				      : (res->ustacks ? (double)res->ustack_frames / res->ustacks : 0));
	ks_json_kv_double(j, "user_ns_per_sample", res->unwound ? (double)res->unwind_ns / res->unwound : 0);
	if (o->cfi) {
		const struct ks_cfi_stats *c = &res->cfi;

		ks_json_key(j, "cfi");
		ks_json_obj_begin(j);
		ks_json_kv_u64(j, "walks", s->cfi_samples);
		ks_json_kv_u64(j, "frames", s->cfi_frames);
		ks_json_kv_u64(j, "fp_frames", s->cfi_fp_frames);
		ks_json_kv_u64(j, "unmapped_frames", s->cfi_unmapped_frames);
		ks_json_kv_u64(j, "signal_frames", s->cfi_signal_frames);
		ks_json_key(j, "stops");
		ks_json_obj_begin(j);
		ks_json_kv_u64(j, "outermost", s->cfi_end);
		ks_json_kv_u64(j, "no_process", s->cfi_no_proc);
		ks_json_kv_u64(j, "no_mapping", s->cfi_no_map);
		ks_json_kv_u64(j, "no_row", s->cfi_no_row);
		ks_json_kv_u64(j, "unsupported", s->cfi_unsup);
		ks_json_kv_u64(j, "read_fault", s->cfi_fault);
		ks_json_kv_u64(j, "depth_cap", s->cfi_depth);
		ks_json_obj_end(j);
		ks_json_kv_u64(j, "maps_reread", s->cfi_reread);
		ks_json_kv_u64(j, "processes", c->procs);
		ks_json_kv_u64(j, "processes_lost", c->procs_lost);
		ks_json_kv_u64(j, "modules", c->modules);
		ks_json_kv_u64(j, "modules_cached", c->modules_cached);
		ks_json_kv_u64(j, "modules_no_cfi", c->modules_none);
		ks_json_kv_u64(j, "modules_fp", c->modules_fp);
		ks_json_kv_u64(j, "mappings_lost", c->maps_lost);
		ks_json_kv_u64(j, "rows", c->rows);
		ks_json_kv_u64(j, "rows_capacity", c->rows_cap);
		ks_json_kv_u64(j, "rows_dropped", c->rows_dropped);
		ks_json_kv_double(j, "table_ms", c->compile_ns / 1e6);
		ks_json_obj_end(j);
	}
	ks_json_obj_end(j);
	ks_json_key(j, "maps");
	ks_budget_write_json(&res->budget, j);
	if (o->cmd)
		ks_cmd_write_json(o->cmd, j);
	ks_json_key(j, "stacks");
	ks_json_arr_begin(j);
	for (size_t i = 0; i < st->n; i++) {
		ks_json_obj_begin(j);
		ks_json_kv_u64(j, "count", st->s[i].value);
		ks_json_key(j, "frames");
		ks_json_arr_begin(j);
		for (uint32_t f = 0; f < st->s[i].n; f++) {
			ks_json_obj_begin(j);
			ks_json_kv_str(j, "name", st->names[st->s[i].frames[f]]);
			ks_json_kv_str(j, "kind", kind_name(st->kinds[st->s[i].frames[f]]));
			ks_json_obj_end(j);
		}
		ks_json_arr_end(j);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	fputc('\n', out);
	ks_json_free(j);
	return ks_stream_status(out);
}
