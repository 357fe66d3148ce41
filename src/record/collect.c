/* record --collect: the instances' ticks inside a recording, each report a CRC'd chunk with its window, losses and ksight's own cost. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/cmd.h"
#include "core/instance.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/pin.h"
#include "format/recstacks.h"
#include "output/output.h"
#include "record/collect.h"

int ks_rec_collect_open(struct ks_rec_collect *k, const struct ks_filter *f)
{
	int err;

	for (k->opened = 0; k->opened < k->n; k->opened++) {
		struct ks_instance *in = &k->in[k->opened];

		err = ks_accum_init(&k->acc[k->opened], in->col->spec.name, 0, 0);
		if (err) {
			p_err("%s: cannot set up: %s", in->col->spec.name, strerror(-err));
			return err;
		}
		err = ks_instance_open(in, f);
		if (err) {
			ks_report_open_error(in->col, err);
			k->opened++; /* its accumulator is freed with the others */
			return err;
		}
	}
	/* the profile's own budget (--max-memory), apart from the collectors' shared one */
	if (k->prof_opts && (err = ks_profile_start(k->prof_opts, &k->prof_res, &k->prof))) {
		ks_profile_result_free(&k->prof_res);
		return err;
	}
	return 0;
}

int ks_rec_collect_fd(const struct ks_rec_collect *k)
{
	return k->prof ? ks_profiler_fd(k->prof) : -1;
}

int ks_rec_collect_ready(struct ks_rec_collect *k, double end)
{
	return k->prof ? ks_profiler_ready(k->prof, end) : 0;
}

int ks_rec_collect_wake(struct ks_rec_collect *k, double end)
{
	double now = ks_loop_now();

	if (!k->prof || now - k->prof_drained < 0.1)
		return 0;
	k->prof_drained = now;
	return ks_profiler_tick(k->prof, end);
}

/*
 * What the stacks gained since the last chunk, as a model of its own
 * (only the frames they name): each interval's stacks are a chunk, so a
 * recording killed at any time keeps the intervals written, and a reader
 * adds the chunks up.
 */
static int stacks_delta(struct ks_rec_collect *k, struct ks_stacks *d, double window)
{
	const struct ks_stacks *st = &k->prof_res.st;
	uint32_t *ids = NULL, f[KS_REC_STACKS_MAX_DEPTH];
	uint64_t *prev = k->prof_prev;
	struct timespec now;
	int err = 0;

	ks_stacks_init(d, st->sample_type, st->unit, st->period_ns);
	clock_gettime(CLOCK_REALTIME, &now);
	d->duration_ns = (uint64_t)(window * 1e9);
	d->time_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec - d->duration_ns;
	if (st->n > k->prof_nprev) {
		prev = realloc(k->prof_prev, st->n * sizeof(*prev));
		if (!prev)
			return -ENOMEM;
		memset(prev + k->prof_nprev, 0, (st->n - k->prof_nprev) * sizeof(*prev));
		k->prof_prev = prev;
		k->prof_nprev = st->n;
	}
	ids = malloc((st->nnames ? st->nnames : 1) * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	memset(ids, 0xff, (st->nnames ? st->nnames : 1) * sizeof(*ids));
	for (size_t i = 0; i < st->n && !err; i++) {
		const struct ks_stack *s = &st->s[i];
		uint32_t n = s->n < KS_REC_STACKS_MAX_DEPTH ? s->n : KS_REC_STACKS_MAX_DEPTH;

		if (s->value == prev[i])
			continue;
		for (uint32_t j = 0; j < n && !err; j++) {
			if (ids[s->frames[j]] == UINT32_MAX) {
				int64_t id = ks_stacks_frame(d, st->names[s->frames[j]], (enum ks_frame_kind)st->kinds[s->frames[j]]);

				if (id < 0)
					err = (int)id;
				else
					ids[s->frames[j]] = (uint32_t)id;
			}
			f[j] = ids[s->frames[j]];
		}
		if (!err)
			err = ks_stacks_add(d, f, n, s->value - prev[i]);
		if (!err)
			prev[i] = s->value;
	}
	free(ids);
	return err;
}

/*
 * --profile: interval @interval's stacks as one chunk (symbolised now);
 * with @final the profile is detached first and its losses go with them.
 */
static int write_stacks(struct ks_rec_collect *k, struct ks_rec_writer *w, int interval, double window, bool final)
{
	struct ks_profile_result *res = &k->prof_res;
	struct ks_rec_chunk c = { .count = (uint32_t)interval };
	struct ks_rec_kv head = { 0 };
	struct ks_stacks d;
	int err = final ? ks_profiler_finish(k->prof, k->start) : ks_profiler_flush(k->prof);

	if (err)
		return err;
	err = stacks_delta(k, &d, window);
	c.first_ts = (uint64_t)((k->last - window) * 1e9);
	c.last_ts = (uint64_t)(k->last * 1e9);
	ks_rec_kv_add(&head, "kind", "%s", final ? "final" : "interval");
	ks_rec_kv_add(&head, "profile.event", "%s", res->event ? res->event : "cpu-clock");
	ks_rec_kv_add(&head, "profile.hz", "%u", k->prof_opts->hz);
	ks_rec_kv_add(&head, "profile.call_graph", "%s", k->prof_opts->cfi ? "cfi" : "fp");
	if (final) {
		/* samples whose stack or count had no room: counted over the run, not in the stacks */
		c.lost = res->stats.kstack_lost + res->stats.ustack_lost + res->stats.counts_full;
		ks_rec_kv_add(&head, "profile.samples", "%llu", (unsigned long long)res->stats.samples);
		ks_rec_kv_add(&head, "profile.kstack_lost", "%llu", (unsigned long long)res->stats.kstack_lost);
		ks_rec_kv_add(&head, "profile.ustack_lost", "%llu", (unsigned long long)res->stats.ustack_lost);
		ks_rec_kv_add(&head, "profile.counts_full", "%llu", (unsigned long long)res->stats.counts_full);
		ks_rec_kv_add(&head, "profile.duration_s", "%.6f", res->duration_s);
	}
	if (!err)
		err = head.err ? head.err : ks_rec_stacks_append(w, &c, head.buf, head.len, &d);
	ks_rec_kv_free(&head);
	ks_stacks_free(&d);
	if (err)
		p_err("profile: cannot write the stacks of interval %d: %s", interval, strerror(-err));
	return err;
}

void ks_rec_collect_start(struct ks_rec_collect *k)
{
	getrusage(RUSAGE_SELF, &k->ru);
	k->prof_drained = k->last = k->start = ks_loop_now();
}

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000u + (uint64_t)tv->tv_usec;
}

/* The BPF run time and runs of @in's programs so far (0 without kernel.bpf_stats_enabled, or for a collector whose object is not known). */
static void bpf_cost(const struct ks_instance *in, uint64_t *ns, uint64_t *cnt)
{
	struct bpf_object *obj = ks_instance_object(in);
	struct bpf_program *p;

	*ns = *cnt = 0;
	if (!obj)
		return;
	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(p);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		*ns += info.run_time_ns;
		*cnt += info.run_cnt;
	}
}

/* kernel.bpf_stats_enabled: without it the programs' run times stay 0 (ksight reads them, never turns them on for everyone) */
static int bpf_stats_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
	int on = 0;

	if (f) {
		if (fscanf(f, "%d", &on) != 1)
			on = 0;
		fclose(f);
	}
	return on ? 1 : 0;
}

/* Renders @r both ways and appends it with @head's lines. */
static int write_report(struct ks_rec_writer *w, struct ks_report *r, struct ks_rec_kv *head,
			struct ks_rec_chunk *c)
{
	char *json = NULL, *text = NULL;
	size_t jl = 0, tl = 0;
	int err, top = r->top_n;

	/* every row in the JSON (what report -j, diff and sums read), the collector's top -n in the text */
	r->top_n = 0;
	err = ks_writer_render(ks_writer_find("json"), r, &json, &jl);
	r->top_n = top;
	if (!err)
		err = ks_writer_render(ks_writer_find("text"), r, &text, &tl);
	if (!err)
		err = head->err ? head->err : ks_rec_report_append(w, c, head->buf, head->len, json, jl, text, tl);
	free(json);
	free(text);
	return err;
}

static void stamp(struct ks_report *r, const struct ks_rec_collect *k, int interval, double window)
{
	r->interval = interval;
	r->duration_s = window;
	r->has_time = true;
	clock_gettime(CLOCK_REALTIME, &r->wall);
	clock_gettime(CLOCK_MONOTONIC, &r->mono);
	r->cmd = k->cmd;
	if (!r->sort_key)
		ks_report_sort(r);
}

/* The whole window of instance @i: what its accumulator merged, as the collector would report it at the end. */
static int write_total(struct ks_rec_collect *k, struct ks_rec_writer *w, int i, double window, uint64_t cpu_us)
{
	struct ks_instance *in = &k->in[i];
	struct ks_rec_chunk c = { .count = 0 };
	struct ks_rec_kv head = { 0 };
	struct ks_report r;
	int err;

	err = ks_report_copy(&r, &k->acc[i].total);
	if (err)
		return err;
	r.collector = in->col->spec.name;
	r.schema = in->col->schema;
	r.top_n = in->c.top_n;
	if (!r.hook && in->col->hook)
		r.hook = in->col->hook(in->ctx);
	stamp(&r, k, 0, window);
	c.first_ts = (uint64_t)(k->start * 1e9);
	c.last_ts = (uint64_t)(k->last * 1e9);
	c.lost = r.lost;
	ks_rec_kv_add(&head, "collector", "%s", in->col->spec.name);
	ks_rec_kv_add(&head, "kind", "total");
	ks_rec_kv_add(&head, "intervals", "%llu", (unsigned long long)k->acc[i].marks);
	ks_rec_kv_add(&head, "cost.cpu_us", "%llu", (unsigned long long)cpu_us);
	ks_rec_kv_add(&head, "cost.bpf_run_ns", "%llu", (unsigned long long)k->run_ns[i]);
	ks_rec_kv_add(&head, "cost.bpf_run_cnt", "%llu", (unsigned long long)k->run_cnt[i]);
	err = write_report(w, &r, &head, &c);
	ks_rec_kv_free(&head);
	ks_report_free(&r);
	return err;
}

int ks_rec_collect_tick(struct ks_rec_collect *k, struct ks_rec_writer *w, int interval, bool final)
{
	/* --profile alone: no collector */
	struct ks_report *rs = calloc((size_t)k->n + 1, sizeof(*rs));
	int *errs = calloc((size_t)k->n + 1, sizeof(*errs));
	double now = ks_loop_now(), window = now - k->last;
	uint64_t mono_end, cpu_us;
	struct rusage ru;
	int err = 0, stats;

	if (!rs || !errs) {
		free(rs);
		free(errs);
		p_err("out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < k->n; i++)
		ks_instance_report_init(&k->in[i], &rs[i]);
	ks_instances_collect(k->in, k->n, rs, errs);
	/* ksight's own CPU over the interval: the process, recorder and collectors together */
	getrusage(RUSAGE_SELF, &ru);
	cpu_us = tv_us(&ru.ru_utime) + tv_us(&ru.ru_stime) - tv_us(&k->ru.ru_utime) - tv_us(&k->ru.ru_stime);
	k->cpu_total += cpu_us;
	k->ru = ru;
	mono_end = (uint64_t)(now * 1e9);
	stats = bpf_stats_on();
	for (int i = 0; i < k->n && !err; i++) {
		struct ks_instance *in = &k->in[i];
		struct ks_rec_chunk c = { .count = (uint32_t)interval };
		struct ks_rec_kv head = { 0 };
		uint64_t ns, cnt;

		if (errs[i]) {
			p_err("%s: cannot read results: %s", in->col->spec.name, strerror(-errs[i]));
			err = errs[i];
			break;
		}
		stamp(&rs[i], k, interval, window);
		bpf_cost(in, &ns, &cnt);
		c.first_ts = (uint64_t)(k->last * 1e9);
		c.last_ts = mono_end;
		c.lost = rs[i].lost;
		ks_rec_kv_add(&head, "collector", "%s", in->col->spec.name);
		ks_rec_kv_add(&head, "kind", "interval");
		ks_rec_kv_add(&head, "cost.cpu_us", "%llu", (unsigned long long)cpu_us);
		ks_rec_kv_add(&head, "cost.bpf_run_ns", "%llu", (unsigned long long)(ns - k->run_ns[i]));
		ks_rec_kv_add(&head, "cost.bpf_run_cnt", "%llu", (unsigned long long)(cnt - k->run_cnt[i]));
		ks_rec_kv_add(&head, "cost.bpf_stats", "%d", stats);
		k->run_ns[i] = ns;
		k->run_cnt[i] = cnt;
		err = write_report(w, &rs[i], &head, &c);
		ks_rec_kv_free(&head);
		if (!err)
			err = ks_accum_add(&k->acc[i], &rs[i]);
		if (err)
			p_err("%s: cannot write the report of interval %d: %s", in->col->spec.name, interval,
			      strerror(-err));
	}
	k->last = now;
	for (int i = 0; i < k->n; i++)
		ks_report_free(&rs[i]);
	free(rs);
	free(errs);
	for (int i = 0; final && !err && i < k->n; i++) {
		err = write_total(k, w, i, k->acc[i].total.duration_s, k->cpu_total);
		if (err)
			p_err("%s: cannot write the whole window's report: %s", k->in[i].col->spec.name, strerror(-err));
	}
	if (!err && k->prof)
		err = write_stacks(k, w, interval, window, final);
	return err;
}

void ks_rec_collect_close(struct ks_rec_collect *k)
{
	for (int i = 0; i < k->opened; i++) {
		ks_instance_close(&k->in[i]);
		ks_accum_free(&k->acc[i]);
	}
	k->opened = 0;
	ks_profiler_free(k->prof);
	k->prof = NULL;
	free(k->prof_prev);
	k->prof_prev = NULL;
	k->prof_nprev = 0;
	if (k->prof_opts)
		ks_profile_result_free(&k->prof_res);
}
