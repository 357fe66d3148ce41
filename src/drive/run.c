/* The two command-line drivers: one collector (`ksight NAME`) and several in one process (`ksight run`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/cmd.h"
#include "core/collector.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/log.h"
#include "core/parse.h"
#include "drive/driver.h"
#include "drive/setup.h"
#include "output/heatmap.h"

/* What both drivers do once their instances are configured: sink, load, run, close.  Returns the exit code. */
static int run_instances(struct ks_instance *in, int n, const struct ks_common *c, const struct ks_filter *f)
{
	struct ks_sink sink;
	struct ks_driver d = { .in = in, .n = n, .c = c, .sink = &sink };
	struct ks_heatmap_out ho;
	int ret = 1, opened = 0, err;
	bool started = false;

	/* a sort key no row can have is refused before anything attaches, not only once rows come */
	for (int i = 0; i < n; i++) {
		if (in[i].c.sort && !ks_schema_sort_key(in[i].col->schema, in[i].c.sort)) {
			ks_sort_key_error(in[i].c.sort, in[i].col->spec.name);
			return 2;
		}
	}
	if (ks_opts_check(c) || ks_heatmap_out_open(&ho, c->heatmap, c->top_n, c->series_memory))
		return 2;
	d.series = ho.series;
	d.w = ks_writer_find(c->json ? "json" : "text");
	if (ks_drive_sink(&sink, c->output)) {
		ks_heatmap_out_close(&ho, false);
		return 2;
	}
	/* handlers first: a signal during load or attach still ends cleanly */
	ks_stop_install();
	if (ks_drive_open(in, n, f, NULL, NULL, &opened))
		goto out;
	err = ks_sink_start(&sink);
	if (err) {
		p_err("cannot empty output '%s': %s", KS_ESC(c->output), strerror(-err));
		goto out;
	}
	started = true;
	ks_drive_say(in, n, "tracing", "", ks_drive_until(c));
	/* the loop starts the command: everything is attached, its first system call is seen */
	ret = ks_drive(&d);
out:
	/* before the instances close: the reports in the series may name their strings */
	if (ks_heatmap_out_close(&ho, started) && !ret)
		ret = 1;
	ks_drive_close(in, opened);
	err = ks_sink_close(&sink, started);
	if (err) {
		p_err("cannot write '%s': %s", KS_ESC(c->output), strerror(-err));
		if (!ret)
			ret = 1;
	}
	return ret;
}

/* Options and positional arguments in any order: each argument goes to parse_opt as KS_OPT_ARG. */
static int parse_with_args(const struct ks_collector *col, int argc, char **argv, struct ks_instance *in)
{
	for (int base = 0; base < argc;) {
		int idx = ks_opts_parse(&col->spec, argc - base, argv + base, &in->c, col->parse_opt, in->ctx);

		if (idx < 0)
			return idx;
		base += idx;
		/* the argument stands in for argv[0] at the next parse */
		if (base < argc && col->parse_opt(in->ctx, KS_OPT_ARG, argv[base]))
			return -EINVAL;
	}
	return 0;
}

int ks_collector_run(const struct ks_collector *col, int argc, char **argv)
{
	struct ks_instance in;
	struct ks_filter f;
	struct ks_cmd cmd;
	int err, ret;

	err = ks_instance_init(&in, col);
	if (err) {
		if (err == -ENOMEM)
			p_err("out of memory");
		return 1;
	}
	if (col->spec.args)
		err = parse_with_args(col, argc, argv, &in);
	else
		err = ks_opts_parse_noargs(&col->spec, argc, argv, &in.c, col->parse_opt, in.ctx);
	if (!err && col->prepare) {
		err = col->prepare(in.ctx, &in.c);
		if (err && err != -EINVAL) {
			ks_instance_close(&in);
			return 1;
		}
	}
	if (err == KS_OPTS_HELP || err < 0) {
		ks_instance_close(&in);
		return err == KS_OPTS_HELP ? 0 : 2;
	}
	ret = ks_drive_spawn(&in.c, &cmd);
	if (ret) {
		ks_instance_close(&in);
		return ret;
	}
	ret = ks_filter_build(&in.c, &f) ? 2 : run_instances(&in, 1, &in.c, &f);
	ks_cmd_release(in.c.cmd);
	ks_instance_close(&in);
	return ret;
}

enum { OPT_COLLECTORS = 300, OPT_FUNCLAT };

static const struct ks_optdef run_opts[] = {
	{ "collectors", OPT_COLLECTORS, "LIST", "the collectors to run, e.g. syscalls,runqlat,biolat (or as arguments)" },
	{ "funclat", OPT_FUNCLAT, "TARGET", "add funclat timing TARGET, as 'ksight funclat' takes it (repeatable)" },
	{ 0 },
};

static const struct ks_cmd_spec run_spec = {
	.name = "run",
	.summary = "Run several collectors in one process, each with its defaults plus the shared options;\n"
		   "one report per collector per interval (JSON: one document each).  --funclat TARGET adds\n"
		   "funclat with that target (BINARY:FUNCTION, a glob, BINARY:PROVIDER:PROBE or a kernel\n"
		   "FUNCTION, as 'ksight funclat' takes it; repeat it for more).  --max-memory is the\n"
		   "whole process's: each collector gets what its smallest maps need, the rest in proportion\n"
		   "to what it would take alone (-v shows each one's share).",
	.args = "COLLECTOR[,COLLECTOR...]...",
	/* --by names one collector's keys: each keeps its default; --max-memory is shared out */
	.common = KS_O_COLLECTOR & ~(unsigned int)KS_O_BY,
	.opts = run_opts,
};

/* The collectors named so far, as instances (their options set once all are parsed), and --funclat's targets. */
struct run_list {
	struct ks_instance in[16];
	int n;
	struct ks_arglist fl; /* --funclat */
};

static int run_opt(void *ctx, int id, const char *arg)
{
	struct run_list *l = ctx;

	if (id == OPT_FUNCLAT)
		return ks_arglist_add(&l->fl, arg);
	return id == OPT_COLLECTORS ? ks_drive_add(l->in, &l->n, 16, arg, "run") : -EINVAL;
}

static int multi_run(struct run_list *l, int argc, char **argv, struct ks_cmd *cmd)
{
	struct ks_instance *in = l->in;
	struct ks_common c;
	struct ks_filter f;
	int idx, ret, n;

	ks_common_init(&c);
	/* options may follow the collector names: parse again from each name, which stands in for argv[0] */
	for (int base = 0; base < argc;) {
		idx = ks_opts_parse(&run_spec, argc - base, argv + base, &c, run_opt, l);
		if (idx == KS_OPTS_HELP)
			return 0;
		if (idx < 0)
			return 2;
		base += idx;
		if (base < argc && ks_drive_add(l->in, &l->n, 16, argv[base], "run"))
			return 2;
	}
	if (l->fl.n && ks_drive_add_funclat(l->in, &l->n, 16, "run"))
		return 2;
	if (!l->n) {
		p_err("run: no collector given; e.g. 'ksight run syscalls,runqlat'");
		return 2;
	}
	ret = ks_drive_spawn(&c, cmd);
	if (ret)
		return ret;
	if (ks_filter_build(&c, &f))
		return 2;
	n = l->n;
	/* the shared options; everything else stays at the collector's default */
	for (int i = 0; i < n; i++)
		in[i].c = c;
	/* funclat's targets resolved before anything loads: a bad one is bad usage, nothing attached */
	ret = ks_instances_targets(in, n, &l->fl, "run");
	if (ret)
		return ret == -EINVAL ? 2 : 1;
	if (n > 1) {
		int err = ks_instances_share(in, n, &f, c.max_memory, NULL);

		if (err)
			return err == -E2BIG ? 2 : 1;
	}
	return run_instances(in, n, &c, &f);
}

int ks_multi_run(int argc, char **argv)
{
	struct run_list l = { .n = 0 };
	struct ks_cmd cmd = { .pid = 0 };
	int ret = multi_run(&l, argc, argv, &cmd);

	/* after every return of multi_run: the instances close, the command at its gate ends without running */
	ks_drive_close(l.in, l.n);
	ks_cmd_release(&cmd);
	ks_arglist_free(&l.fl);
	return ret;
}
