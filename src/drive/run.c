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
	if (c->output) {
		if (ks_sink_open(&sink, c->output, &ks_stop_signal)) {
			ks_heatmap_out_close(&ho, false);
			return 2;
		}
	} else {
		ks_sink_stdout(&sink, &ks_stop_signal);
	}
	/* handlers first: a signal during load or attach still ends cleanly */
	ks_stop_install();
	for (; opened < n; opened++) {
		err = ks_instance_open(&in[opened], f);
		if (err) {
			ks_report_open_error(in[opened].col, err);
			opened++; /* closed below with the others */
			goto out;
		}
	}
	err = ks_sink_start(&sink);
	if (err) {
		p_err("cannot empty output '%s': %s", KS_ESC(c->output), strerror(-err));
		goto out;
	}
	started = true;
	for (int i = 0; i < n; i++)
		fprintf(stderr, "ksight: tracing %s (hook %s)%s\n", in[i].col->spec.name,
			in[i].col->hook ? in[i].col->hook(in[i].ctx) : "?",
			i + 1 < n || c->duration ? "" : c->pid ? "; Ctrl-C or the process's exit ends"
					     : c->cmd ? "; Ctrl-C or the command's exit ends" : "; Ctrl-C to end");
	/* the loop starts the command: everything is attached, its first system call is seen */
	ret = ks_drive(&d);
out:
	/* before the instances close: the reports in the series may name their strings */
	if (ks_heatmap_out_close(&ho, started) && !ret)
		ret = 1;
	for (int i = 0; i < opened; i++)
		ks_instance_close(&in[i]);
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

/* -- CMD: forks the gated command, whose cgroup the filter then follows; 0 or the exit code (2: it cannot run). */
static int spawn_cmd(struct ks_common *c, struct ks_cmd *cmd)
{
	int err;

	if (!c->cmd_argv)
		return 0;
	err = ks_cmd_spawn(cmd, c->cmd_argv);
	if (err)
		return err == -EINVAL ? 2 : 1;
	c->cmd = cmd;
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
	ret = spawn_cmd(&in.c, &cmd);
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

struct run_list {
	const struct ks_collector *cols[16];
	int n;
	struct ks_arglist fl; /* --funclat */
};

/* Adds each name of the comma-separated @arg; -EINVAL after a one-line error. */
static int add_names(struct run_list *l, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	int err = 0;

	if (!dup) {
		p_err("out of memory");
		return -ENOMEM;
	}
	for (char *t = strtok_r(dup, ",", &save); t && !err; t = strtok_r(NULL, ",", &save)) {
		const struct ks_collector *col = ks_collector_find(t);

		if (!col) {
			p_err("run: unknown collector '%s'; see 'ksight -h'", t);
			err = -EINVAL;
			break;
		}
		for (int i = 0; i < l->n; i++) {
			if (l->cols[i] == col) {
				p_err("run: collector '%s' given twice", t);
				err = -EINVAL;
			}
		}
		if (!err && l->n == (int)(sizeof(l->cols) / sizeof(l->cols[0]))) {
			p_err("run: too many collectors");
			err = -EINVAL;
		}
		if (!err)
			l->cols[l->n++] = col;
	}
	free(dup);
	return err;
}

static int run_opt(void *ctx, int id, const char *arg)
{
	struct run_list *l = ctx;

	if (id == OPT_FUNCLAT)
		return ks_arglist_add(&l->fl, arg);
	return id == OPT_COLLECTORS ? add_names(l, arg) : -EINVAL;
}

/* Adds funclat when --funclat named targets and the list did not name it. */
static int add_funclat(struct run_list *l)
{
	const struct ks_collector *fl = ks_collector_find("funclat");

	for (int i = 0; i < l->n; i++)
		if (l->cols[i] == fl)
			return 0;
	return add_names(l, "funclat");
}

static int multi_run(struct run_list *l, int argc, char **argv, struct ks_cmd *cmd)
{
	struct ks_instance in[16];
	struct ks_common c;
	struct ks_filter f;
	int idx, ret, n = 0;

	ks_common_init(&c);
	/* options may follow the collector names: parse again from each name, which stands in for argv[0] */
	for (int base = 0; base < argc;) {
		idx = ks_opts_parse(&run_spec, argc - base, argv + base, &c, run_opt, l);
		if (idx == KS_OPTS_HELP)
			return 0;
		if (idx < 0)
			return 2;
		base += idx;
		if (base < argc && add_names(l, argv[base]))
			return 2;
	}
	if (l->fl.n && add_funclat(l))
		return 2;
	if (!l->n) {
		p_err("run: no collector given; e.g. 'ksight run syscalls,runqlat'");
		return 2;
	}
	ret = spawn_cmd(&c, cmd);
	if (ret)
		return ret;
	if (ks_filter_build(&c, &f))
		return 2;
	for (; n < l->n; n++) {
		int err = ks_instance_init(&in[n], l->cols[n]);

		if (err) {
			p_err("%s: cannot set up: %s", l->cols[n]->spec.name, strerror(-err));
			ret = 1;
			goto out;
		}
		/* the shared options; everything else stays at the collector's default */
		in[n].c = c;
	}
	/* funclat's targets resolved before anything loads: a bad one is bad usage, nothing attached */
	ret = ks_instances_targets(in, n, &l->fl, "run");
	if (ret) {
		ret = ret == -EINVAL ? 2 : 1;
		goto out;
	}
	if (n > 1) {
		int err = ks_instances_share(in, n, &f, c.max_memory, NULL);

		if (err) {
			ret = err == -E2BIG ? 2 : 1;
			goto out;
		}
	}
	ret = run_instances(in, n, &c, &f);
out:
	for (int i = 0; i < n; i++)
		ks_instance_close(&in[i]);
	return ret;
}

int ks_multi_run(int argc, char **argv)
{
	struct run_list l = { .n = 0 };
	struct ks_cmd cmd = { .pid = 0 };
	int ret = multi_run(&l, argc, argv, &cmd);

	/* after every return of multi_run: the command at its gate ends without running */
	ks_cmd_release(&cmd);
	ks_arglist_free(&l.fl);
	return ret;
}
