/* Run control shared by all collectors: options, filters, attach, duration/interval loop, signals, reports. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/collector.h"
#include "core/filter.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/parse.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps until @deadline (monotonic seconds) or a stop signal. */
static void sleep_until(double deadline)
{
	while (!stop_signal) {
		double left = deadline - now_s();
		struct timespec ts;

		if (left <= 0)
			return;
		/* in steps of at most a minute: "-d 1e300" must not overflow time_t into a busy loop */
		if (left > 60)
			left = 60;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL); /* EINTR on a signal: the loop checks */
	}
}

static int emit(const struct ks_collector *col, void *ctx, const struct ks_common *c,
		const struct ks_filter *f, FILE *out, int interval, double window)
{
	struct ks_report r;
	int err;

	ks_report_init(&r, col->spec.name, col->hook(ctx));
	r.interval = interval;
	r.duration_s = window;
	r.top_n = c->top_n;
	ks_filter_describe(c, f, &r);
	err = col->collect(ctx, &r);
	if (!err) {
		ks_report_sort(&r);
		err = c->json ? ks_report_write_json(&r, out) : ks_report_write_text(&r, out);
		if (err)
			p_err("cannot write the report: %s", strerror(-err));
	} else {
		p_err("%s: cannot read results: %s", col->spec.name, strerror(-err));
	}
	ks_report_free(&r);
	return err;
}

int ks_collector_run(const struct ks_collector *col, int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct ks_common c;
	struct ks_filter f;
	FILE *out = stdout;
	void *ctx;
	int err, ret = 1, interval = 0;
	double start, last, end;

	ctx = calloc(1, col->ctx_size);
	if (!ctx) {
		p_err("out of memory");
		return 1;
	}
	ks_common_init(&c);
	if (col->init && col->init(ctx)) {
		free(ctx);
		return 1;
	}
	err = ks_opts_parse_noargs(&col->spec, argc, argv, &c, col->parse_opt, ctx);
	if (err == KS_OPTS_HELP) {
		free(ctx);
		return 0;
	}
	if (err < 0)
		goto usage;
	if (ks_filter_build(&c, &f))
		goto usage;
	if (c.output) {
		out = fopen(c.output, "w");
		if (!out) {
			p_err("cannot open output '%s': %s", KS_ESC(c.output), strerror(errno));
			goto usage;
		}
	}

	/* handlers first: a signal during load or attach still ends cleanly */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	err = col->open(ctx, &c, &f);
	if (err) {
		/* the loader says why each hook failed: privilege, tracefs, the kernel */
		if (ks_load_error())
			p_err("%s: %s", col->spec.name, ks_load_error());
		else if (err == -EPERM || err == -EACCES)
			p_err("%s: cannot load BPF programs: %s; run as root or with CAP_BPF and CAP_PERFMON",
			      col->spec.name, strerror(-err));
		else if (err != -E2BIG) /* over the memory budget: ks_budget_check said so */
			p_err("%s: cannot load and attach: %s", col->spec.name, strerror(-err));
		goto out;
	}
	fprintf(stderr, "ksight: tracing %s (hook %s)%s\n", col->spec.name, col->hook(ctx),
		c.duration ? "" : "; Ctrl-C to end");

	start = last = now_s();
	end = c.duration ? start + c.duration : 0;
	ret = 0;
	while (!stop_signal) {
		double next = c.interval ? last + c.interval : 0, t;

		if (!next || (end && end < next))
			next = end;
		if (!next) {
			/* no deadline: wake now and then so a racing signal is not missed */
			sleep_until(now_s() + 1.0);
			continue;
		}
		sleep_until(next);
		t = now_s();
		if (c.interval && !stop_signal && (!end || t < end)) {
			if (emit(col, ctx, &c, &f, out, ++interval, t - last))
				ret = 1;
			last = t;
			continue;
		}
		break;
	}
	/* the final report: the last (maybe partial) interval, or the whole run */
	if (emit(col, ctx, &c, &f, out, c.interval ? interval + 1 : 0, now_s() - last))
		ret = 1;
	if (stop_signal)
		p_info("stopped by signal %d", (int)stop_signal);
out:
	col->close(ctx);
	free(ctx);
	if (out != stdout && fclose(out)) {
		p_err("cannot write '%s': %s", KS_ESC(c.output), strerror(errno));
		ret = 1;
	}
	return ret;
usage:
	free(ctx);
	return 2;
}
