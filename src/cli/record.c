/* `ksight record`: records raw tracepoint events (filtered, sampled, exactly counted) into a recording file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include "cli/commands.h"
#include "core/budget.h"
#include "core/cmd.h"
#include "core/loop.h"
#include "core/file.h"
#include "core/collector.h"
#include "core/filter.h"
#include "core/instance.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"
#include "events/anon.h"
#include "events/filter.h"
#include "format/recfile.h"
#include "record/collect.h"
#include "record/flight.h"
#include "record/recorder.h"

/* long-only ids from 300: the shared ones take 256.. */
enum { OPT_EVENT = 'e', OPT_BUF = 'b', OPT_OUTPUT = 'o', OPT_SAMPLE = 300, OPT_RING, OPT_FILTER, OPT_FLIGHT, OPT_TRIGGER, OPT_TRIGGER_ALL,
       OPT_BEFORE, OPT_AFTER, OPT_TRIGGER_LAT, OPT_MAXSIZE = 320, OPT_ROTATE, OPT_KEEP, OPT_ANON = 340, OPT_ANONKEY, OPT_COLLECT = 360, OPT_NOTE, OPT_PROFILE = 380, OPT_CALLGRAPH, OPT_FREQ = 'F' };

static const struct ks_optdef rec_opts[] = {
	{ "event", OPT_EVENT, "SYS:EVENT", "tracepoint to record (repeatable; globs, e.g. 'sched:sched_wak*')" },
	/* its own -o: a recording is a file read back by path, so "-" (stdout for every other -o) is refused */
	{ "output", OPT_OUTPUT, "FILE", "write the recording to FILE (a path; not -)" },
	{ "sample", OPT_SAMPLE, "N", "keep one event in N on each CPU (the others are counted)" },
	{ "buffer", OPT_BUF, "SIZE", "bytes of each ring buffer, a power of two (default 1M, less when one ring per "
				     "possible CPU would exceed --max-memory)" },
	{ "ring", OPT_RING, "KIND", "per-cpu (default: cheapest per event) or shared (one ring)" },
	{ "max-size", OPT_MAXSIZE, "SIZE", "end the recording when FILE reaches SIZE (e.g. 100M; the rest is counted as dropped)" },
	{ "rotate", OPT_ROTATE, "SIZE", "write FILE.0, FILE.1... of at most SIZE each, every one a complete recording" },
	{ "keep", OPT_KEEP, "N", "with --rotate: keep the N newest files, delete older ones (default: all)" },
	{ "anonymize", OPT_ANON, NULL, "comm, paths, user names and IP addresses stored as keyed hashes (random key)" },
	{ "anonymize-key", OPT_ANONKEY, "KEY", "--anonymize with this key: the same tokens in every recording made with it" },
	{ "filter", OPT_FILTER, "EXPR", "keep only events whose fields match, tested in the kernel: "
					"'next_pid == 42 && prev_state != 0', 'comm ~ \"ksight*\"' (== != < <= > >= & ~ !~ && || ! ())" },
	{ "flight", OPT_FLIGHT, "SIZE", "flight recorder: keep the last SIZE of events in memory, write only the "
					"window around each --trigger or --trigger-latency event" },
	{ "trigger", OPT_TRIGGER, "EXPR", "the event that makes --flight write, e.g. 'id == 39' (as --filter; events "
					  "without its fields never trigger)" },
	{ "trigger-latency", OPT_TRIGGER_LAT, "SPEC", "'START/END KEYS>DURATION': a trigger at each END more than DURATION "
						   "after the START with the same KEYS (as report's --pair/--key), e.g. "
						   "'raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>20ms'; START and END are "
						   "recorded, with or without -e; with --trigger, either triggers" },
	{ "trigger-all", OPT_TRIGGER_ALL, NULL, "write a window around every trigger, not only the first (which ends "
						"the recording)" },
	{ "collect", OPT_COLLECT, "NAMES", "collectors to run inside the recording, e.g. syscalls,runqlat,biolat: each "
					   "one's report every -i SEC (default 1) and over the whole window, with its "
					   "losses and ksight's own cost ('report FILE' shows them)" },
	{ "profile", OPT_PROFILE, NULL, "also sample on-CPU stacks over the same window, kept symbolised in FILE "
					"('report FILE --folded|--svg|--pprof OUT' writes them; 'diff A B' compares two)" },
	{ "freq", OPT_FREQ, "HZ", "--profile: samples per second on each CPU (default 49; 1..10000)" },
	{ "call-graph", OPT_CALLGRAPH, "MODE", "--profile: user stacks by fp (frame pointers; default) or cfi (as profile)" },
	{ "note", OPT_NOTE, "TEXT", "the question this session asks, kept in the manifest ('info' shows it)" },
	{ "before", OPT_BEFORE, "SEC", "seconds of events before the trigger to write (default 1)" },
	{ "after", OPT_AFTER, "SEC", "seconds of events after the trigger to write (default 1)" },
	{ 0 },
};

/* the words completion offers: --call-graph's modes */
static const struct ks_opt_values rec_values[] = {
	{ "call-graph", "fp|cfi" },
	{ 0 },
};

static const struct ks_cmd_spec rec_spec = {
	.name = "record",
	.summary = "Record tracepoint events into FILE (-o): each raw record with its time, CPU, tgid and comm, "
		   "read later by 'ksight report' and 'ksight info'. Every event that passes the filters is "
		   "recorded, sampled out or counted as lost.",
	.common = KS_O_DURATION | KS_O_INTERVAL | KS_O_FILTERS | KS_O_MEMORY | KS_O_CMD,
	.opts = rec_opts,
	.values = rec_values,
};

struct rec_ctx {
	struct ks_rec_tps tps;
	struct ks_rec_kv kv;
	uint64_t buf_size;
	uint32_t sample;
	bool shared, trigger_all;
	uint64_t max_size, rotate_size;
	int keep;
	bool anon;
	const char *anon_key;
	const char *filter, *trigger, *trigger_lat;
	const char *output;
	uint64_t flight;
	double before, after;
	const struct ks_collector *cols[KS_REC_COLLECT_MAX]; /* --collect */
	int ncols;
	const char *note;
	bool profile, cfi; /* --profile, --call-graph cfi */
	uint32_t hz;	   /* -F; 0: none given */
};

/* Adds each name of the comma-separated @arg to --collect's list; -EINVAL after a one-line error. */
static int add_collectors(struct rec_ctx *ctx, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	for (char *t = strtok_r(dup, ",", &save); t && !err; t = strtok_r(NULL, ",", &save)) {
		const struct ks_collector *col = ks_collector_find(t);

		err = -EINVAL;
		if (!col)
			p_err("--collect: unknown collector '%s'; see 'ksight -h'", KS_ESC(t));
		else if (col->spec.args)
			p_err("--collect: %s needs targets of its own; it cannot run inside a recording yet", t);
		else if (ctx->ncols == KS_REC_COLLECT_MAX)
			p_err("--collect: at most %d collectors", KS_REC_COLLECT_MAX);
		else
			err = 0;
		for (int i = 0; !err && i < ctx->ncols; i++)
			if (ctx->cols[i] == col) {
				p_err("--collect: collector '%s' given twice", t);
				err = -EINVAL;
			}
		if (!err)
			ctx->cols[ctx->ncols++] = col;
	}
	free(dup);
	return err;
}

static int rec_opt(void *vctx, int id, const char *arg)
{
	struct rec_ctx *ctx = vctx;
	uint64_t v;
	int err;

	switch (id) {
	case OPT_OUTPUT:
		if (ks_file_is_stdout(arg)) {
			p_err("record -o -: a recording is written to a file, not to standard output; give a path");
			return -EINVAL;
		}
		ctx->output = arg;
		return 0;
	case OPT_EVENT:
		err = ks_rec_tps_add(&ctx->tps, arg);
		return err == -EINVAL || err == -ENOENT ? -EINVAL : err;
	case OPT_SAMPLE:
		if (ks_parse_u64(arg, 1, 1u << 30, &v)) {
			p_err("invalid --sample '%s': expected a count from 1 to 2^30", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->sample = (uint32_t)v;
		return 0;
	case OPT_BUF:
		if (ks_parse_size(arg, &v) || v < 4096 || v > (1ull << 30) || (v & (v - 1))) {
			p_err("invalid -b '%s': expected a power of two from 4K to 1G, e.g. 1M", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->buf_size = v;
		return 0;
	case OPT_RING:
		if (strcmp(arg, "per-cpu") && strcmp(arg, "shared")) {
			p_err("invalid --ring '%s': expected per-cpu or shared", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->shared = !strcmp(arg, "shared");
		return 0;
	case OPT_MAXSIZE:
	case OPT_ROTATE:
		/* below 64K the head and the closing chunks leave no room for events */
		if (ks_parse_size(arg, &v) || v < (64u << 10)) {
			p_err("invalid --%s '%s': expected a size of at least 64K, e.g. 100M",
			      id == OPT_MAXSIZE ? "max-size" : "rotate", KS_ESC(arg));
			return -EINVAL;
		}
		*(id == OPT_MAXSIZE ? &ctx->max_size : &ctx->rotate_size) = v;
		return 0;
	case OPT_ANON:
	case OPT_ANONKEY:
		ctx->anon = true;
		if (id == OPT_ANONKEY)
			ctx->anon_key = arg;
		return 0;
	case OPT_KEEP:
		if (ks_parse_u64(arg, 1, 1000000, &v)) {
			p_err("invalid --keep '%s': expected a count of files from 1", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->keep = (int)v;
		return 0;
	case OPT_FILTER:
		ctx->filter = arg;
		return 0;
	case OPT_FLIGHT:
		if (ks_parse_size(arg, &v) || v < 4096) {
			p_err("invalid --flight '%s': expected a size of 4K or more, e.g. 64M", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->flight = v;
		return 0;
	case OPT_TRIGGER:
		ctx->trigger = arg;
		return 0;
	case OPT_TRIGGER_LAT:
		ctx->trigger_lat = arg; /* checked once every -e is known: it may add its events */
		return 0;
	case OPT_TRIGGER_ALL:
		ctx->trigger_all = true;
		return 0;
	case OPT_COLLECT:
		return add_collectors(ctx, arg);
	case OPT_NOTE:
		ctx->note = arg;
		return 0;
	case OPT_PROFILE:
		ctx->profile = true;
		return 0;
	case OPT_FREQ:
		if (ks_parse_u64(arg, 1, 10000, &v)) {
			p_err("invalid -F '%s': expected samples per second from 1 to 10000", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->hz = (uint32_t)v;
		return 0;
	case OPT_CALLGRAPH:
		if (strcmp(arg, "fp") && strcmp(arg, "cfi")) {
			p_err("invalid --call-graph '%s': expected fp or cfi", KS_ESC(arg));
			return -EINVAL;
		}
		ctx->cfi = !strcmp(arg, "cfi");
		return 0;
	case OPT_BEFORE:
	case OPT_AFTER:
		if (ks_parse_seconds(arg, id == OPT_BEFORE ? &ctx->before : &ctx->after)) {
			p_err("invalid --%s '%s': expected seconds, e.g. 2 or 500ms", id == OPT_BEFORE ? "before" : "after",
			      KS_ESC(arg));
			return -EINVAL;
		}
		return 0;
	}
	return -EINVAL;
}

/* The ring buffers' bytes at @size each (-b's, or the recorder's choice), as recorder.c counts them. */
static uint64_t rings_bytes(const struct rec_ctx *ctx, const struct ks_budget *b, uint64_t size)
{
	uint64_t n = ctx->shared ? 1 : (uint64_t)b->ncpus;

	return n * ks_map_bytes(BPF_MAP_TYPE_RINGBUF, 0, 0, (uint32_t)size, 0, b->ncpus);
}

/*
 * The recorder's part of --max-memory beside --collect's collectors, so that
 * together they stay within it.  Its need is declared as the collectors' is
 * (ks_budget_split): at least its rings at 4 KiB (or -b's) and at most at the
 * 1M default, and since the recorder lets its rings take 3/4 of its budget
 * (the rest for its small maps), a third more than the rings.
 */
static void recorder_need(const struct rec_ctx *ctx, uint64_t whole, struct ks_budget_share *s)
{
	struct ks_budget b;
	uint64_t lo, hi;

	ks_budget_init(&b, whole);
	lo = rings_bytes(ctx, &b, ctx->buf_size ? ctx->buf_size : 4096);
	hi = rings_bytes(ctx, &b, ctx->buf_size ? ctx->buf_size : 1u << 20);
	*s = (struct ks_budget_share){ .name = "record's ring buffers", .min = (lo + 2) / 3 * 4, .wish = (hi + 2) / 3 * 4 };
}

/*
 * --collect: an instance per collector with the shared options (each
 * one's own stay at its default, as `run`), the budget shared out with the
 * recorder (its part in *@rec_budget), the interval the reports' (1 s
 * unless -i).  0, or the exit code after one line (2: bad usage, nothing
 * loaded); the instances set up are closed.
 */
static int setup_collect(struct ks_rec_collect *k, const struct rec_ctx *ctx, const struct ks_common *c,
			 const struct ks_filter *f, uint64_t *rec_budget)
{
	struct ks_budget_share rec;
	int err = 0;

	k->interval = c->interval ? c->interval : 1;
	k->cmd = c->cmd;
	for (k->n = 0; k->n < ctx->ncols && !err; k->n++) {
		err = ks_instance_init(&k->in[k->n], ctx->cols[k->n]);
		if (err) {
			p_err("%s: cannot set up: %s", ctx->cols[k->n]->spec.name, strerror(-err));
			break;
		}
		k->in[k->n].c = *c;
	}
	if (!err) {
		recorder_need(ctx, c->max_memory, &rec);
		err = ks_instances_share(k->in, k->n, f, c->max_memory, &rec);
	}
	if (!err) {
		*rec_budget = rec.bytes;
		return 0;
	}
	for (int i = 0; i < k->n; i++)
		ks_instance_close(&k->in[i]);
	k->n = 0;
	return err == -E2BIG ? 2 : 1;
}

static int record(int argc, char **argv, struct ks_cmd *cmd)
{
	/* buf_size 0: the recorder sizes the rings from the budget */
	struct rec_ctx ctx = { .before = 1, .after = 1 };
	struct ks_rec_opts o = { 0 };
	struct ks_rec_stats st;
	struct ks_anon anon = { 0 };
	struct ks_flt_prog *filters = NULL, *triggers = NULL;
	struct ks_rec_latency lat = { 0 };
	struct ks_common c;
	struct ks_instance ins[KS_REC_COLLECT_MAX];
	struct ks_rec_collect col = { .in = ins };
	struct ks_profile_opts prof = { .hz = 49, .kernel = true, .user = true };
	size_t cl = 0;
	char *cmdline;
	int err;

	ks_common_init(&c);
	err = ks_opts_parse_noargs(&rec_spec, argc, argv, &c, rec_opt, &ctx);
	c.output = ctx.output;
	if (err) {
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return err == KS_OPTS_HELP ? 0 : err == -EINVAL ? 2 : 1;
	}
	if (ctx.trigger_lat && !ctx.flight) {
		p_err("--trigger-latency works with --flight SIZE (the memory the events wait in)");
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	/* before the filters are compiled: its events must pass them too */
	err = ctx.trigger_lat ? ks_rec_latency_parse(&lat, ctx.trigger_lat, &ctx.tps) : 0;
	if (err) {
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return err == -EINVAL ? 2 : 1;
	}
	if ((!ctx.tps.n && !ctx.ncols && !ctx.profile) || !c.output) {
		p_err(!c.output ? "record needs -o FILE to write the recording to"
				: "record needs at least one -e SYS:EVENT, --collect NAMES or --profile; 'ksight list' shows them");
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	if ((ctx.keep && !ctx.rotate_size) || (ctx.max_size && ctx.rotate_size)) {
		p_err(ctx.keep ? "--keep goes with --rotate SIZE" : "--max-size and --rotate: choose one (--rotate with --keep bounds the disk)");
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	if ((ctx.hz || ctx.cfi) && !ctx.profile) {
		p_err("-F and --call-graph are --profile's: they go with it");
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	if (ctx.hz)
		prof.hz = ctx.hz;
	prof.cfi = ctx.cfi;
	if ((c.interval && !ctx.ncols) ||
	    ((ctx.ncols || ctx.profile) && (ctx.flight || ctx.max_size || ctx.rotate_size))) {
		p_err(!ctx.ncols ? "-i is the interval of the --collect reports: it goes with --collect NAMES"
				 : "--collect writes every interval's reports: it goes without --flight, --max-size and --rotate");
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	if (ctx.flight && (ctx.max_size || ctx.rotate_size)) {
		p_err("--flight writes only its windows: it goes without --max-size and --rotate");
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	if (!ctx.flight != !(ctx.trigger || ctx.trigger_lat)) {
		p_err(ctx.flight ? "--flight needs --trigger EXPR or --trigger-latency SPEC: what makes a window be written"
				 : "--trigger works with --flight SIZE (the memory the events wait in)");
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	/* -- CMD: forked at its gate now, for the filter to follow its cgroup */
	if (c.cmd_argv && (err = ks_cmd_spawn(cmd, c.cmd_argv))) {
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return err == -EINVAL ? 2 : 1;
	}
	c.cmd = c.cmd_argv ? cmd : NULL;
	if (ks_filter_build(&c, &o.filter) || (ctx.filter && !(filters = ks_rec_filters(ctx.filter, &ctx.tps))) ||
	    (ctx.trigger && !(triggers = ks_rec_triggers(ctx.trigger, &ctx.tps)))) {
		free(filters);
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		return 2;
	}
	for (int i = 0; i < argc; i++)
		cl += strlen(argv[i]) + 3;
	cmdline = calloc(1, cl + 8);
	if (cmdline) {
		/* as typed, one argument per word; an argument with a space is quoted */
		strcat(cmdline, "ksight");
		for (int i = 0; i < argc; i++) {
			bool q = strpbrk(argv[i], " \t'") != NULL;

			strcat(cmdline, q ? " '" : " ");
			strcat(cmdline, argv[i]);
			if (q)
				strcat(cmdline, "'");
		}
		ks_rec_kv_add(&ctx.kv, "cmdline", "%s", cmdline);
		free(cmdline);
	}
	/* each argument on its own line, unambiguous whatever it holds: what 'ksight rerun' replays */
	for (int i = 1; i < argc; i++)
		ks_rec_kv_add(&ctx.kv, "arg", "%s", argv[i]);
	ks_rec_kv_add(&ctx.kv, "duration_s", "%g", c.duration);
	if (c.pid)
		ks_rec_kv_add(&ctx.kv, "filter.pid", "%u", c.pid);
	if (c.tid)
		ks_rec_kv_add(&ctx.kv, "filter.tid", "%u", c.tid);
	if (c.cgroup)
		ks_rec_kv_add(&ctx.kv, "filter.cgroup", "%s", c.cgroup);
	if (c.cpus_arg)
		ks_rec_kv_add(&ctx.kv, "filter.cpus", "%s", c.cpus_arg);
	if (c.has_comm)
		ks_rec_kv_add(&ctx.kv, "filter.comm", "%s", c.comm);
	if (ctx.max_size)
		ks_rec_kv_add(&ctx.kv, "max_size", "%llu", (unsigned long long)ctx.max_size);
	if (ctx.rotate_size)
		ks_rec_kv_add(&ctx.kv, "rotate_size", "%llu", (unsigned long long)ctx.rotate_size);
	if (ctx.keep)
		ks_rec_kv_add(&ctx.kv, "keep", "%d", ctx.keep);
	if (ctx.filter)
		ks_rec_kv_add(&ctx.kv, "filter", "%s", ctx.filter);
	if (ctx.flight) {
		ks_rec_kv_add(&ctx.kv, "flight.bytes", "%llu", (unsigned long long)ctx.flight);
		if (ctx.trigger)
			ks_rec_kv_add(&ctx.kv, "flight.trigger", "%s", ctx.trigger);
		if (ctx.trigger_lat)
			ks_rec_kv_add(&ctx.kv, "flight.trigger_latency", "%s", ctx.trigger_lat);
		ks_rec_kv_add(&ctx.kv, "flight.before_s", "%g", ctx.before);
		ks_rec_kv_add(&ctx.kv, "flight.after_s", "%g", ctx.after);
		ks_rec_kv_add(&ctx.kv, "flight.trigger_all", "%s", ctx.trigger_all ? "yes" : "no");
	}
	if (ctx.note)
		ks_rec_kv_add(&ctx.kv, "note", "%s", ctx.note);
	if (ctx.ncols) {
		char names[KS_REC_COLLECT_MAX * 34] = "";

		for (int i = 0; i < ctx.ncols; i++) {
			if (i)
				strcat(names, ",");
			strcat(names, ctx.cols[i]->spec.name);
		}
		ks_rec_kv_add(&ctx.kv, "collect", "%s", names);
		ks_rec_kv_add(&ctx.kv, "collect.interval_s", "%g", c.interval ? c.interval : 1.0);
	}
	if (ctx.profile) {
		ks_rec_kv_add(&ctx.kv, "profile.hz", "%u", prof.hz);
		ks_rec_kv_add(&ctx.kv, "profile.call_graph", "%s", prof.cfi ? "cfi" : "fp");
	}
	ks_rec_kv_add(&ctx.kv, "ksight.version", "%s", KSIGHT_VERSION);
	o.max_memory = c.max_memory;
	/* --profile: on the recorder's loop, the filters the same (the command's cgroup with -- CMD) */
	prof.c = &c;
	prof.filter = o.filter;
	col.prof_opts = ctx.profile ? &prof : NULL;
	if ((ctx.ncols || ctx.profile) && (err = setup_collect(&col, &ctx, &c, &o.filter, &o.max_memory))) {
		ks_rec_kv_free(&ctx.kv);
		ks_rec_latency_free(&lat);
		ks_rec_tps_free(&ctx.tps);
		free(filters);
		free(triggers);
		return err;
	}
	ks_stop_install();
	o.tps = &ctx.tps;
	o.sample_n = ctx.sample;
	o.buf_size = ctx.buf_size;
	o.shared = ctx.shared;
	o.duration = c.duration;
	o.output = c.output;
	o.manifest = ctx.kv.buf;
	o.manifest_len = ctx.kv.len;
	o.stop = &ks_stop_signal;
	o.target_pid = (int)c.pid;
	o.max_size = ctx.max_size;
	o.rotate_size = ctx.rotate_size;
	o.keep = ctx.keep;
	if (ctx.anon) {
		err = ks_anon_init(&anon, ctx.anon_key);
		if (err) {
			p_err("--anonymize: %s", strerror(-err));
			ks_rec_kv_free(&ctx.kv);
			ks_rec_latency_free(&lat);
			ks_rec_tps_free(&ctx.tps);
			free(filters);
			free(triggers);
			return 1;
		}
		o.anon = &anon;
	}
	o.filters = filters;
	o.flight_bytes = ctx.flight;
	o.trigger = triggers;
	o.latency = ctx.trigger_lat ? &lat : NULL;
	o.before_ns = (uint64_t)(ctx.before * 1e9);
	o.after_ns = (uint64_t)(ctx.after * 1e9);
	o.trigger_all = ctx.trigger_all;
	o.cmd = c.cmd;
	o.collect = ctx.ncols || ctx.profile ? &col : NULL;
	err = ctx.kv.err ? ctx.kv.err : ks_rec_run(&o, &st);
	ks_cmd_say(c.cmd);
	for (int i = 0; i < col.n; i++)
		ks_instance_close(&col.in[i]);
	ks_rec_kv_free(&ctx.kv);
	ks_rec_latency_free(&lat);
	ks_rec_tps_free(&ctx.tps);
	ks_anon_free(&anon);
	free(filters);
	free(triggers);
	if (err)
		return 1;
	fprintf(stderr, "ksight: %llu events recorded, %llu filtered out, %llu sampled out, %llu lost, %llu cut "
		"(of %llu that passed the task filters), %llu missed by the kernel; %llu bytes in %llu chunks\n",
	       (unsigned long long)st.recorded, (unsigned long long)st.filtered, (unsigned long long)st.sampled_out,
	       (unsigned long long)st.lost,
	       (unsigned long long)st.cut, (unsigned long long)st.produced, (unsigned long long)st.missed,
	       (unsigned long long)st.bytes, (unsigned long long)st.chunks);
	if (st.full)
		fprintf(stderr, "ksight: stopped at --max-size %llu: the file is %llu bytes; %llu events that came after were dropped\n",
			(unsigned long long)ctx.max_size, (unsigned long long)st.bytes, (unsigned long long)st.dropped);
	if (ctx.rotate_size)
		fprintf(stderr, "ksight: rotated over %llu files %s.0 to %s.%llu\n", (unsigned long long)st.files,
			c.output, c.output, (unsigned long long)(st.files - 1));
	if (ctx.flight)
		fprintf(stderr, "ksight: flight recorder: %llu trigger%s, %llu dropped (more than %d waiting), "
			"%llu events written, %llu outside the window%s\n",
			(unsigned long long)st.triggers, st.triggers == 1 ? "" : "s", (unsigned long long)st.triggers_dropped,
			KS_FLIGHT_MAX_QUEUE,
			(unsigned long long)st.flight_written, (unsigned long long)(st.recorded - st.flight_written),
			st.triggers == 1 ? "" : "s");
	if (ctx.flight && ctx.trigger_lat)
		fprintf(stderr, "ksight: trigger latency: %llu pairs, %llu over %s, %llu ends without a start, "
			"%llu starts evicted (more than %u open), %llu left open\n",
			(unsigned long long)st.lat_pairs, (unsigned long long)st.lat_over, strrchr(ctx.trigger_lat, '>') + 1,
			(unsigned long long)st.lat.unmatched, (unsigned long long)st.lat.evicted, ks_flight_lat_max_open(ctx.flight),
			(unsigned long long)st.lat.open);
	if (!st.exact)
		p_warn("per-CPU counts do not add up: produced != filtered + sampled out + recorded + lost");
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct ks_cmd cmd = { .pid = 0 };
	int ret = record(argc, argv, &cmd);

	/* after every return of record: a command still at its gate ends without running */
	ks_cmd_release(&cmd);
	return ret;
}
