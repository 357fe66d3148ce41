/* The command-line engine on the run loop: at each interval and at the end, collect every instance and write each report. */
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/cmd.h"
#include "core/loop.h"
#include "core/log.h"
#include "core/series.h"
#include "drive/driver.h"

void ks_sort_key_error(const char *key, const char *collector)
{
	p_err("invalid --sort key '%s': %s reports have no such column; try count, total, p99, max or a column name",
	      key, collector);
}

/* Says once that the final report is dropped; on stderr only, since stdout is what is blocked. */
static void say_abandoned(bool final)
{
	bool json = ks_json;

	ks_json = false;
	p_err("%s abandoned: the output is not being read (stopped by signal %d)", final ? "the final report" : "a report",
	      (int)ks_stop_signal);
	ks_json = json;
}

/* Collects every instance into a report and writes each; 0 on success, 1 on a failure, 2 on a bad --sort. */
static int emit(struct ks_driver *d, int interval, double window, bool final)
{
	struct ks_report *rs = calloc((size_t)d->n, sizeof(*rs));
	int *errs = calloc((size_t)d->n, sizeof(*errs));
	struct timespec wall, mono;
	int ret = 0;

	if (!rs || !errs) {
		free(rs);
		free(errs);
		p_err("out of memory");
		return 1;
	}
	for (int i = 0; i < d->n; i++)
		ks_instance_report_init(&d->in[i], &rs[i]);
	ks_instances_collect(d->in, d->n, rs, errs);
	clock_gettime(CLOCK_REALTIME, &wall);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	for (int i = 0; i < d->n && ret != 2; i++) {
		const char *name = d->in[i].col->spec.name;
		struct ks_report *r = &rs[i];
		char *buf = NULL;
		size_t len = 0;
		int err, over;

		r->interval = interval;
		r->duration_s = window;
		r->has_time = true;
		r->wall = wall;
		r->mono = mono;
		r->cmd = d->c->cmd;
		if (errs[i]) {
			p_err("%s: cannot read results: %s", name, strerror(-errs[i]));
			ret = 1;
			continue;
		}
		over = ks_report_overflow(r);
		if (over) {
			/* a collector that set more than a row holds: an error, not a silent drop */
			p_err("%s: %d report values did not fit (row limits: %d keys, %d values, %d histograms); "
			      "the report is incomplete",
			      name, over, KS_ROW_KEYS, KS_ROW_VALS, KS_ROW_XHISTS);
			ret = 1;
		}
		if (r->sort_key && ks_report_sort_by(r, r->sort_key) == -ENOENT) {
			ks_sort_key_error(r->sort_key, name);
			ret = 2;
			break;
		}
		if (!r->sort_key)
			ks_report_sort(r);
		err = ks_writer_render(d->w, r, &buf, &len);
		if (!err && d->n > 1 && d->w->report == ks_write_text) {
			/* several collectors in one stream: each text report says whose it is */
			char head[96];
			int hl = snprintf(head, sizeof(head), "=== %s ===\n", name);

			err = ks_sink_write(d->sink, head, (size_t)hl, d->abandoned ? 0 : KS_STOP_GRACE_MS);
		}
		if (!err)
			err = ks_sink_write(d->sink, buf, len, d->abandoned ? 0 : KS_STOP_GRACE_MS);
		free(buf);
		if (d->series && ks_series_add(d->series, r)) {
			p_err("%s: out of memory: the report is left out of the series", name);
			ret = 1;
		}
		if (err == -EINTR) {
			d->abandoned = true;
			say_abandoned(final);
			ret = 1;
			break;
		} else if (err) {
			p_err("cannot write the %s report%s%s: %s", name, d->sink->path ? " to " : "",
			      d->sink->path ? d->sink->path : "", strerror(-err));
			ret = 1;
		}
	}
	for (int i = 0; i < d->n; i++)
		ks_report_free(&rs[i]);
	free(rs);
	free(errs);
	return ret;
}

/* An interval's report; a bad --sort key (2) ends the run at once, without the final report. */
static int drive_tick(void *ctx, struct ks_loop *l)
{
	struct ks_driver *d = ctx;
	int e = emit(d, l->ticks, l->now - l->last, false);

	if (e == 2) {
		d->ret = 2;
		return -EINVAL;
	}
	if (e)
		d->ret = 1;
	return 0;
}

/* The final report: the last (maybe partial) interval, or the whole run; then why it ended. */
static int drive_close(void *ctx, struct ks_loop *l)
{
	struct ks_driver *d = ctx;
	int e;

	if (l->why == KS_LOOP_ERROR)
		return d->ret ? d->ret : 1;
	e = emit(d, d->c->interval ? l->ticks + 1 : 0, ks_loop_now() - l->last, true);
	if (e)
		d->ret = e;
	ks_cmd_say(d->c->cmd);
	if (l->missed)
		p_warn("%llu interval reports skipped: reporting took longer than -i", (unsigned long long)l->missed);
	if (ks_stop_signal)
		p_info("stopped by signal %d", (int)ks_stop_signal);
	else if (l->why == KS_LOOP_PROCESS)
		p_info("process %u exited", l->o.pid);
	return d->ret;
}

int ks_drive(struct ks_driver *d)
{
	static const struct ks_engine eng = { .tick = drive_tick, .close = drive_close };
	struct ks_loop_opts o = {
		.duration = d->c->duration, .interval = d->c->interval, .pid = d->c->pid, .cmd = d->c->cmd,
	};
	struct ks_loop l;
	int ret;

	d->ret = 0;
	ks_loop_init(&l, &o);
	ret = ks_loop_run(&l, &eng, d);
	/* the command could not start: said why */
	return ret < 0 ? 1 : ret;
}
