/* `ksight report` and `ksight info`: read a recording (no root, no libbpf): events in time order, latency pairs, the manifest and losses. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "cli/commands.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"
#include "core/sanitize.h"
#include "events/anon.h"
#include "events/filter.h"
#include "format/recording.h"
#include "format/recstacks.h"
#include "events/pair_report.h"
#include "output/trace.h"
#include "output/tracedat.h"
#include "output/output.h"
#include "output/report_html.h"
#include "format/reports.h"

#define MAX_PAIRS 8

enum { OPT_CSV = 300, OPT_PERFETTO, OPT_CLOCK, OPT_PAIR, OPT_KEY, OPT_STATS, OPT_FILTER, OPT_ANON = 320, OPT_ANONKEY,
       OPT_INTERVALS = 340, OPT_HTML, OPT_FOLDED = 360, OPT_SVG, OPT_PPROF };
enum { OPT_TRACEDAT = 380 };

static const struct ks_optdef rep_opts[] = {
	{ "csv", OPT_CSV, NULL, "events as CSV (ts_ns,cpu,event,comm,pid,tgid,info)" },
	{ "perfetto", OPT_PERFETTO, "OUT.json", "also write a Chrome/Perfetto trace-event timeline: a track per thread" },
	{ "trace-dat", OPT_TRACEDAT, "OUT.dat", "also write the events as trace-cmd's trace.dat (trace-cmd report, "
					    "KernelShark)" },
	{ "clock", OPT_CLOCK, "CLOCK", "timestamps on monotonic (default, as recorded) or realtime" },
	{ "pair", OPT_PAIR, "START/END", "latency from each START event to the next END with the same key "
					 "(repeatable), e.g. sched:sched_wakeup/sched:sched_switch" },
	{ "key", OPT_KEY, "F[=G],...", "fields that tie the last --pair's START (F) to its END (G, default F), "
				       "e.g. pid=next_pid or dev,sector" },
	{ "stats", OPT_STATS, NULL, "counts and rates per event instead of the events" },
	{ "anonymize", OPT_ANON, NULL, "comm, paths, user names and IP addresses as keyed hashes (random key)" },
	{ "anonymize-key", OPT_ANONKEY, "KEY", "--anonymize with this key: the same tokens in every report made with it" },
	{ "filter", OPT_FILTER, "EXPR", "only the events whose fields match, as record --filter: "
					"'next_pid == 42', 'comm ~ \"ksight*\"'" },
	{ "intervals", OPT_INTERVALS, NULL, "record --collect: each interval's report, one by one "
					    "(default: each collector over the whole window)" },
	{ "folded", OPT_FOLDED, "OUT", "record --profile: the stacks as folded lines (flamegraph.pl's input) to OUT" },
	{ "svg", OPT_SVG, "OUT", "record --profile: the stacks as an interactive flame graph (SVG) to OUT" },
	{ "pprof", OPT_PPROF, "OUT", "record --profile: the stacks as a gzip'd pprof profile to OUT" },
	{ "html", OPT_HTML, "OUT.html", "one self-contained page instead: manifest, percentile tables, heatmaps, events, "
					"losses and cost" },
	{ 0 },
};

static const struct ks_cmd_spec rep_spec = {
	.name = "report",
	.summary = "Print a recording's events merged across CPUs in time order: the ftrace 'trace' text layout, "
		   "JSON lines (-j) or CSV; --pair gives latency histograms, --perfetto a timeline.",
	.args = "FILE",
	.common = KS_O_JSON | KS_O_OUTPUT,
	.opts = rep_opts,
};

static const struct ks_cmd_spec info_spec = {
	.name = "info",
	.summary = "Describe a recording: its manifest (command line, host, kernel, CPUs, clocks), events and their "
		   "counts, losses per CPU, time span, and any cut or damaged part.",
	.args = "FILE",
	.common = KS_O_JSON | KS_O_OUTPUT,
};

struct rep_ctx {
	bool csv, stats, realtime, intervals;
	const char *perfetto, *filter, *html;
	const char *tracedat; /* --trace-dat */
	int npairs;
	const char *pair[MAX_PAIRS], *key[MAX_PAIRS];
	bool anon;
	const char *anon_key;
	const char *stacks_out[3]; /* --folded, --svg, --pprof */
};

static int rep_opt(void *vctx, int id, const char *arg)
{
	struct rep_ctx *c = vctx;

	switch (id) {
	case OPT_CSV:
		c->csv = true;
		return 0;
	case OPT_STATS:
		c->stats = true;
		return 0;
	case OPT_INTERVALS:
		c->intervals = true;
		return 0;
	case OPT_FOLDED:
	case OPT_SVG:
	case OPT_PPROF:
		c->stacks_out[id - OPT_FOLDED] = arg;
		return 0;
	case OPT_ANON:
	case OPT_ANONKEY:
		c->anon = true;
		if (id == OPT_ANONKEY)
			c->anon_key = arg;
		return 0;
	case OPT_PERFETTO:
		c->perfetto = arg;
		return 0;
	case OPT_TRACEDAT:
		c->tracedat = arg;
		return 0;
	case OPT_FILTER:
		c->filter = arg;
		return 0;
	case OPT_HTML:
		c->html = arg;
		return 0;
	case OPT_CLOCK:
		if (strcmp(arg, "realtime") && strcmp(arg, "monotonic")) {
			p_err("invalid --clock '%s': expected monotonic or realtime", arg);
			return -EINVAL;
		}
		c->realtime = !strcmp(arg, "realtime");
		return 0;
	case OPT_PAIR:
		if (c->npairs == MAX_PAIRS) {
			p_err("at most %d --pair", MAX_PAIRS);
			return -EINVAL;
		}
		c->pair[c->npairs++] = arg;
		return 0;
	case OPT_KEY:
		if (!c->npairs || c->key[c->npairs - 1]) {
			p_err("--key '%s' must follow the --pair it is for", arg);
			return -EINVAL;
		}
		c->key[c->npairs - 1] = arg;
		return 0;
	}
	return -EINVAL;
}

/* Parses options that may come before or after FILE; returns FILE or NULL with *@rc set. */
const char *parse_file_args(const struct ks_cmd_spec *spec, int argc, char **argv, struct ks_common *c,
				   ks_opt_cb cb, void *ctx, int *rc)
{
	const char *file;
	int idx = ks_opts_parse(spec, argc, argv, c, cb, ctx), rest;

	*rc = idx == KS_OPTS_HELP ? 0 : 2;
	if (idx < 0)
		return NULL;
	if (idx >= argc) {
		p_err("%s needs a recording FILE (made by 'ksight record -o FILE')", spec->name);
		return NULL;
	}
	file = argv[idx];
	rest = ks_opts_parse(spec, argc - idx, argv + idx, c, cb, ctx);
	if (rest < 0) {
		*rc = rest == KS_OPTS_HELP ? 0 : 2;
		return NULL;
	}
	if (rest < argc - idx) {
		p_err("unexpected argument '%s'", argv[idx + rest]);
		return NULL;
	}
	return file;
}

static int load(struct ks_recording *rec, const char *file)
{
	int err = ks_recording_load(rec, file);

	if (err == -EBADMSG || err == -EPROTO)
		p_err("'%s' is not a ksight recording%s", file,
		      err == -EPROTO ? " this version reads (other version or byte order)" : "");
	else if (err)
		p_err("cannot read '%s': %s", file, ks_rec_strerror(err));
	return err;
}

/*
 * The read path: the file decoded (src/format/), then its events filtered
 * and anonymized (src/events/).  0, or the exit status after one p_err
 * (2: a --filter that does not parse); @rec is freed then.
 */
static int read_recording(struct ks_recording *rec, const char *file, const struct rep_ctx *ctx)
{
	struct ks_anon an;
	int rc = 0, err;

	if (load(rec, file))
		return 1;
	err = ctx->filter ? ks_recording_filter(rec, ctx->filter) : 0;
	if (err) {
		rc = err == -EINVAL ? 2 : 1;
		goto cleanup;
	}
	if (!ctx->anon)
		return 0;
	err = ks_anon_init(&an, ctx->anon_key);
	if (!err)
		err = ks_anon_recording(&an, rec);
	ks_anon_free(&an);
	if (err) {
		p_err("--anonymize: %s", strerror(-err));
		rc = 1;
	}
cleanup:
	if (rc)
		ks_recording_free(rec);
	return rc;
}

/* @path for writing (NULL: stdout); KS_FILE_TRUNC in @flags empties it now, else ks_file_empty does later. */
static FILE *open_out(const char *path, int flags)
{
	FILE *f;

	if (!path)
		return stdout;
	f = ks_file_fopen(path, flags);
	if (!f)
		p_err("cannot write '%s': %s", KS_ESC(path), ks_file_strerror(path, -errno));
	return f;
}

static int close_out(FILE *f, int err)
{
	if (f && f != stdout && fclose(f) && !err)
		err = -errno;
	return err;
}

static int write_html(const struct ks_recording *rec, const char *file, const struct ks_rec_reports *rr, FILE *out);

/*
 * record --collect: the collectors' reports as each would have printed
 * them, the whole window's (kind total) or with @intervals each
 * interval's; a recording cut before its end has no totals, so its
 * intervals are shown, said on stderr.  Text reports of several
 * collectors each under its name, as `run` prints them.
 */
static int write_reports(const struct ks_recording *rec, bool json, bool intervals, FILE *out)
{
	bool want_total = !intervals, several = false;
	size_t shown = 0;

	if (want_total) {
		bool any = false;

		for (size_t i = 0; i < rec->nreps; i++)
			any |= rec->reps[i].v.total;
		if (!any) {
			p_warn("no whole-window report (the recording ended before its last interval): its intervals follow");
			want_total = false;
		}
	}
	for (size_t i = 1; i < rec->nreps; i++)
		several |= strcmp(rec->reps[i].v.collector, rec->reps[0].v.collector) != 0;
	for (size_t i = 0; i < rec->nreps; i++) {
		const struct ks_rec_report_view *v = &rec->reps[i].v;

		if (v->total != want_total)
			continue;
		if (!json && several)
			fprintf(out, "%s=== %s ===\n", shown ? "\n" : "", v->collector);
		if (json)
			fwrite(v->json, 1, v->json_len, out);
		else
			fwrite(v->text, 1, v->text_len, out);
		shown++;
	}
	return ferror(out) ? -EIO : 0;
}

/*
 * record --profile: the recording's stacks through the stack writers,
 * each to its file (only these: the events and reports are not read).
 * The exit status after one line when it fails.
 */
static int report_stacks(const char *file, const struct rep_ctx *ctx)
{
	int (*const wr[3])(const struct ks_stacks *, FILE *) = { ks_write_folded, ks_write_svg, ks_write_pprof };
	struct ks_rec_stacks_info info;
	struct ks_rec_reader r;
	struct ks_stacks st;
	bool damaged;
	int err = ks_rec_open(&r, file);

	if (err) {
		p_err(err == -EBADMSG || err == -EPROTO ? "'%s' is not a ksight recording this version reads: %s"
							 : "cannot read '%s': %s", file, ks_rec_strerror(err));
		return 1;
	}
	err = ks_rec_stacks_load(&r, &st, &info);
	damaged = r.bad_chunks || r.cut_bytes;
	ks_rec_free(&r);
	if (err) {
		p_err("cannot read the stacks of '%s': %s", file, strerror(-err));
		return 1;
	}
	/* a stacks chunk that is not what ksight writes: no flame graph of the others (bad input, as report chunks) */
	if (!info.chunks || info.refused) {
		if (info.refused)
			p_err("'%s': %s", file, info.why);
		else if (damaged)
			p_err("'%s' holds no intact stacks: it is damaged or cut ('ksight info' says where)", file);
		else
			p_err("'%s' holds no stacks (made without record --profile)", file);
		ks_stacks_free(&st);
		return info.refused ? 2 : 1;
	}
	/* a chunk lost to damage or a cut: the intervals left are shown, said */
	if (damaged)
		p_warn("'%s' is damaged or cut: its stacks may miss intervals ('ksight info' says where)", file);
	ks_stacks_sort(&st);
	for (int i = 0; i < 3 && !err; i++) {
		FILE *f;

		if (!ctx->stacks_out[i])
			continue;
		f = open_out(ctx->stacks_out[i], KS_FILE_TRUNC);
		if (!f) {
			err = -EIO;
			break;
		}
		err = close_out(f, wr[i](&st, f));
		if (err)
			p_err("writing '%s': %s", KS_ESC(ctx->stacks_out[i]), strerror(-err));
	}
	ks_stacks_free(&st);
	return err ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct rep_ctx ctx = { 0 };
	struct ks_recording rec;
	struct ks_pair pairs[MAX_PAIRS];
	struct ks_common c;
	const char *file;
	int64_t off = 0;
	FILE *out, *tl, *td;
	int rc, err = 0;
	struct ks_rec_reports rr = { 0 };
	char why[160] = "";

	ks_common_init(&c);
	file = parse_file_args(&rep_spec, argc, argv, &c, rep_opt, &ctx, &rc);
	if (!file)
		return rc;
	if (ctx.csv && c.json) {
		p_err("-j and --csv: choose one");
		return 2;
	}
	if ((ctx.stacks_out[0] || ctx.stacks_out[1] || ctx.stacks_out[2]) && ctx.tracedat) {
		p_err("--trace-dat writes events: not with --folded, --svg or --pprof (stacks)");
		return 2;
	}
	if (ctx.stacks_out[0] || ctx.stacks_out[1] || ctx.stacks_out[2])
		return report_stacks(file, &ctx);
	rc = read_recording(&rec, file, &ctx);
	if (rc)
		return rc;
	if (rec.bad_reports) {
		/* a report that is not what ksight writes is not shown in part: one line, bad input */
		p_err("'%s': %s", file, rec.bad_report_why);
		ks_recording_free(&rec);
		return 2;
	}
	if (ctx.intervals && !rec.nreps) {
		p_err("--intervals: '%s' holds no collector reports (made without record --collect)", file);
		ks_recording_free(&rec);
		return 2;
	}
	for (int i = 0; i < ctx.npairs; i++)
		if (ks_pair_parse(&pairs[i], &rec, ctx.pair[i], ctx.key[i])) {
			ks_recording_free(&rec);
			return 2;
		}
	ks_recording_warn(&rec, file);
	for (size_t i = 0; !rec.nev && !rec.nreps && i < rec.rd.nchunks; i++)
		if (rec.rd.chunks[i].hdr.type == KS_REC_STACKS) {
			fprintf(stderr, "ksight: '%s' holds stacks (record --profile): 'ksight report %s --folded|--svg|--pprof "
				"OUT' writes them\n", file, file);
			break;
		}
	if (ctx.realtime) {
		if (!ks_rec_manifest_u64(&rec, "clock.start.realtime_ns")) {
			p_err("'%s' has no clock calibration in its manifest: --clock realtime cannot be had", file);
			ks_recording_free(&rec);
			return 1;
		}
		off = (int64_t)(ks_rec_manifest_u64(&rec, "clock.start.realtime_ns") -
				ks_rec_manifest_u64(&rec, "clock.start.monotonic_ns"));
	}
	if (ctx.tracedat && (ctx.html || (ks_file_is_stdout(ctx.tracedat) && (!c.output || ks_file_is_stdout(c.output))))) {
		/* a binary file is never mixed into the text on standard output */
		p_err(ctx.html ? "--html writes the whole page: without --trace-dat"
			       : "--trace-dat -: standard output already carries the report; give -o FILE");
		ks_recording_free(&rec);
		return 2;
	}
	/* both outputs opened before either is emptied: a refused one leaves the other as it was */
	if (ctx.html && (c.output || ctx.perfetto || ctx.npairs || ctx.stats || ctx.csv || c.json)) {
		p_err("--html writes the whole page: without -o, -j, --csv, --stats, --pair or --perfetto");
		ks_recording_free(&rec);
		return 2;
	}
	/*
	 * --html parses every interval report into a JSON tree freed at once:
	 * glibc's fast bins then consolidate at each large free (~10% of a 90 s
	 * session's page), so this one-shot process does without them
	 */
	if (ctx.html)
		mallopt(M_MXFAST, 0);
	/* the reports read back before the page is opened: a stranger's bad one leaves OUT as it was */
	err = ctx.html ? ks_rec_reports_load(&rr, &rec, why, sizeof(why)) : 0;
	if (err) {
		if (err == -EBADMSG)
			p_err("'%s': %s", file, why);
		else
			p_err("reading the reports of '%s': %s", file, strerror(-err));
		ks_rec_reports_free(&rr);
		ks_recording_free(&rec);
		return err == -EBADMSG ? 2 : 1;
	}
	out = open_out(ctx.html ? ctx.html : c.output, 0);
	tl = out && ctx.perfetto ? open_out(ctx.perfetto, 0) : NULL;
	td = out && (tl || !ctx.perfetto) && ctx.tracedat ? open_out(ctx.tracedat, 0) : NULL;
	if (!out || (ctx.perfetto && !tl) || (ctx.tracedat && !td) || (out != stdout && (err = ks_file_empty(fileno(out)))) ||
	    (tl && tl != stdout && (err = ks_file_empty(fileno(tl)))) ||
	    (td && td != stdout && (err = ks_file_empty(fileno(td))))) {
		if (err)
			p_err("cannot write the report: %s", strerror(-err));
		close_out(out, 0);
		close_out(tl, 0);
		close_out(td, 0);
		ks_rec_reports_free(&rr);
		ks_recording_free(&rec);
		return 1;
	}
	if (ctx.html) {
		err = write_html(&rec, file, &rr, out);
	} else if (ctx.npairs || ctx.stats) {
		struct ks_report r;

		ks_report_init(&r, "report", "recording");
		err = ctx.npairs ? ks_pairs_report(&rec, pairs, ctx.npairs, &r) : ks_events_report(&rec, &r);
		if (!err)
			err = c.json ? ks_write_json(&r, out) : ks_write_text(&r, out);
		ks_report_free(&r);
	} else if (rec.nreps && !rec.nev && !ctx.csv) {
		err = write_reports(&rec, c.json, ctx.intervals, out);
	} else {
		err = ks_trace_write(&rec, c.json ? KS_TRACE_JSON : ctx.csv ? KS_TRACE_CSV : KS_TRACE_TEXT, off, out);
		/* events and collectors: the events, then the reports */
		if (!err && rec.nreps && !ctx.csv)
			err = write_reports(&rec, c.json, ctx.intervals, out);
	}
	err = close_out(out, err);
	if (tl)
		err = close_out(tl, err ? err : ks_trace_write_perfetto(&rec, off, tl));
	if (td) {
		uint64_t too_big = 0;

		err = close_out(td, err ? err : ks_tracedat_write(&rec, off, td, &too_big));
		if (too_big)
			p_warn("--trace-dat: %" PRIu64 " events longer than a ring-buffer page left out", too_big);
	}
	if (err)
		p_err("writing the report: %s", strerror(-err));
	ks_rec_reports_free(&rr);
	ks_recording_free(&rec);
	return err ? 1 : 0;
}

struct kv_print {
	FILE *out;
};

static void kv_text(void *vctx, const char *key, const char *val)
{
	struct kv_print *p = vctx;

	char k[4 * 28 + 1];

	/* a recording is anyone's file: its manifest may hold ESC or a newline */
	fprintf(p->out, "  %-28s ", ks_escape(key, k, sizeof(k)));
	ks_sanitize_put(p->out, val, NULL);
	fputc('\n', p->out);
}

/* Manifest keys that are lists by nature: arrays in JSON even with one value. */
static const char *const kv_lists[] = { "event", "arg", "cpu.governor", NULL };
/*
 * Keys whose values are text even when they read as a number (a comm "1",
 * kernel release "6.18", an option as given): JSON strings always, so a
 * key's type never depends on its value.  The others' numbers are numbers.
 */
static const char *const kv_texts[] = { "comm",	   "cmdline",	    "host",	      "machine",	"kernel.release",
					 "kernel.version", "ksight.version", "cpu.model",   "clocksource", "name",
					 "flight.trigger", "flight.trigger_latency", "note", "collect", NULL };

static bool kv_is_text(const char *key)
{
	if (!strcmp(key, "filter") || !strncmp(key, "filter.", 7))
		return true; /* filter, filter.pid, filter.cpus...: the options as given ("1,2", "0-3") */
	for (int x = 0; kv_lists[x]; x++)
		if (!strcmp(key, kv_lists[x]))
			return true;
	for (int x = 0; kv_texts[x]; x++)
		if (!strcmp(key, kv_texts[x]))
			return true;
	return false;
}

static void kv_json_val(struct ks_json *j, const char *key, const char *val)
{
	if (kv_is_text(key))
		ks_json_str(j, val);
	else
		ks_json_str_or_number(j, val);
}

struct kv_line {
	char *key, *val;
	size_t at;   /* line number */
	size_t n;    /* lines with this key (on the first of them) */
	size_t next; /* the next line with this key, or SIZE_MAX */
};

struct kv_lines {
	struct kv_line *v;
	size_t n;
	int err;
};

static void kv_collect(void *vctx, const char *key, const char *val)
{
	struct kv_lines *l = vctx;
	struct kv_line *g;

	if (l->err)
		return;
	g = realloc(l->v, (l->n + 1) * sizeof(*g));
	if (!g) {
		l->err = -ENOMEM;
		return;
	}
	l->v = g;
	g[l->n] = (struct kv_line){ strdup(key), strdup(val), l->n, 0, SIZE_MAX };
	if (!g[l->n].key || !g[l->n].val)
		l->err = -ENOMEM;
	l->n++;
}

static int cmp_kv_line(const void *a, const void *b)
{
	const struct kv_line *x = *(struct kv_line *const *)a, *y = *(struct kv_line *const *)b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/*
 * "key\tvalue\n" lines as one JSON object with unique keys, in first-seen
 * order: a key that is a list (kv_lists) or that repeats is an array of
 * its values.  Sorted by key once, so a hostile file's million lines cost
 * n log n, not n squared.
 */
static int kv_json_obj(struct ks_json *j, const char *text, size_t len)
{
	struct kv_lines l = { 0 };
	struct kv_line **by = NULL;
	int err;

	ks_rec_kv_each(text, len, kv_collect, &l);
	err = l.err;
	by = l.n ? malloc(l.n * sizeof(*by)) : NULL;
	if (!err && l.n && !by)
		err = -ENOMEM;
	ks_json_obj_begin(j);
	if (!err && l.n) {
		for (size_t i = 0; i < l.n; i++)
			by[i] = &l.v[i];
		qsort(by, l.n, sizeof(*by), cmp_kv_line);
		/* chain each key's lines in file order, counted on the first */
		for (size_t i = 0, first = 0; i < l.n; i++) {
			if (i && !strcmp(by[i]->key, by[i - 1]->key)) {
				by[i - 1]->next = by[i]->at;
				l.v[by[first]->at].n++;
				continue;
			}
			first = i;
			by[i]->n = 1;
		}
		for (size_t i = 0; i < l.n; i++) {
			struct kv_line *k = &l.v[i];
			bool list = k->n > 1;

			if (!k->n)
				continue; /* not the first with its key: written with it */
			for (int x = 0; kv_lists[x]; x++)
				list |= !strcmp(k->key, kv_lists[x]);
			ks_json_key(j, k->key);
			if (!list) {
				kv_json_val(j, k->key, k->val);
				continue;
			}
			ks_json_arr_begin(j);
			for (size_t at = i; at != SIZE_MAX; at = l.v[at].next)
				kv_json_val(j, k->key, l.v[at].val);
			ks_json_arr_end(j);
		}
	}
	ks_json_obj_end(j);
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].key);
		free(l.v[i].val);
	}
	free(l.v);
	free(by);
	return err;
}

/* Events by name, in first-seen order. */
struct ev_count {
	const struct tep_event *ev; /* the last format seen under this name */
	char name[128];
	uint64_t n;
};

/* By "system:name", not by format: two formats of one name (a hostile file) are one key in JSON. */
static int count_events(const struct ks_recording *rec, struct ev_count **out)
{
	struct ev_count *v = NULL;
	int n = 0, k = 0;

	for (size_t i = 0; i < rec->nev; i++) {
		const struct tep_event *ev = rec->evs[i].ev;
		char name[128];

		if (!n || v[k].ev != ev) {
			ks_rec_ev_name(ev, name, sizeof(name));
			for (k = 0; k < n && strcmp(v[k].name, name); k++)
				;
		}
		if (k == n) {
			struct ev_count *g = realloc(v, (size_t)(n + 1) * sizeof(*g));

			if (!g) {
				free(v);
				return -ENOMEM;
			}
			v = g;
			v[n] = (struct ev_count){ .ev = ev };
			memcpy(v[n++].name, name, sizeof(name));
		}
		v[k].ev = ev;
		v[k].n++;
	}
	*out = v;
	return n;
}

/* record --collect: what info says of one collector's reports. */
struct col_sum {
	char name[32];
	uint64_t intervals, lost, cpu_us, bpf_ns, bpf_cnt;
	bool total, bpf_stats; /* bpf_stats: run times were kept (kernel.bpf_stats_enabled) in some interval */
	double window_s;
};

static uint64_t rep_u64(const struct ks_rec_report_view *v, const char *key)
{
	char val[32];

	return ks_rec_kv_get(v->kv, v->kv_len, key, val, sizeof(val)) ? strtoull(val, NULL, 10) : 0;
}

/* Sums the interval reports per collector, in their first appearance's order; returns how many collectors. */
static int col_sums(const struct ks_recording *rec, struct col_sum *s, int max)
{
	int n = 0;

	for (size_t i = 0; i < rec->nreps; i++) {
		const struct ks_rec_rep *rp = &rec->reps[i];
		int k = 0;

		while (k < n && strcmp(s[k].name, rp->v.collector))
			k++;
		if (k == n) {
			if (n == max)
				continue;
			memset(&s[n], 0, sizeof(s[n]));
			snprintf(s[n].name, sizeof(s[n].name), "%s", rp->v.collector);
			n++;
		}
		if (rp->v.total) {
			s[k].total = true;
			continue;
		}
		s[k].intervals++;
		s[k].lost += rp->hdr->lost;
		s[k].cpu_us += rep_u64(&rp->v, "cost.cpu_us");
		s[k].bpf_ns += rep_u64(&rp->v, "cost.bpf_run_ns");
		s[k].bpf_cnt += rep_u64(&rp->v, "cost.bpf_run_cnt");
		s[k].bpf_stats |= rep_u64(&rp->v, "cost.bpf_stats") != 0;
		s[k].window_s += (double)(rp->hdr->last_ts - rp->hdr->first_ts) / 1e9;
	}
	return n;
}

#define MAX_COLS 16

static void collectors_json(struct ks_json *j, const struct ks_recording *rec)
{
	struct col_sum s[MAX_COLS];
	int n = col_sums(rec, s, MAX_COLS);

	ks_json_key(j, "collectors");
	ks_json_arr_begin(j);
	for (int i = 0; i < n; i++) {
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "collector", s[i].name);
		ks_json_kv_u64(j, "intervals", s[i].intervals);
		ks_json_kv_double(j, "window_s", s[i].window_s);
		ks_json_key(j, "whole_window");
		ks_json_bool(j, s[i].total);
		ks_json_kv_u64(j, "lost", s[i].lost);
		ks_json_key(j, "bpf_stats");
		ks_json_bool(j, s[i].bpf_stats);
		ks_json_kv_u64(j, "bpf_run_ns", s[i].bpf_ns);
		ks_json_kv_u64(j, "bpf_run_cnt", s[i].bpf_cnt);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	/* the process's, written with every collector's interval: the first one's */
	ks_json_kv_u64(j, "ksight_cpu_us", n ? s[0].cpu_us : 0);
	ks_json_kv_u64(j, "bad_reports", rec->bad_reports);
}

static void collectors_text(const struct ks_recording *rec, FILE *out)
{
	struct col_sum s[MAX_COLS];
	int n = col_sums(rec, s, MAX_COLS);

	if (!n && !rec->bad_reports)
		return;
	fprintf(out, "collectors:\n");
	for (int i = 0; i < n; i++) {
		fprintf(out, "  %-12s %llu intervals over %.3f s%s, %llu lost", s[i].name,
			(unsigned long long)s[i].intervals, s[i].window_s,
			s[i].total ? "" : " (no whole-window report: cut)", (unsigned long long)s[i].lost);
		if (s[i].bpf_stats)
			fprintf(out, "; BPF %llu runs in %.3f ms\n", (unsigned long long)s[i].bpf_cnt,
				(double)s[i].bpf_ns / 1e6);
		else
			fprintf(out, "; BPF run time not kept (kernel.bpf_stats_enabled was 0)\n");
	}
	if (n)
		fprintf(out, "  ksight's own CPU %.3f s over the intervals (the process: recorder and collectors)\n",
			(double)s[0].cpu_us / 1e6);
	if (rec->bad_reports)
		fprintf(out, "  %llu report chunks refused: %s\n", (unsigned long long)rec->bad_reports,
			rec->bad_report_why);
}

/* Damage fields that info -j always has; the text form prints them on its damage line. */
static void damage_json(struct ks_json *j, const struct ks_recording *rec)
{
	ks_json_kv_u64(j, "cut_bytes", rec->rd.cut_bytes);
	ks_json_kv_u64(j, "bad_chunks", rec->rd.bad_chunks);
	ks_json_kv_u64(j, "bad_bytes", rec->rd.bad_bytes);
	ks_json_kv_u64(j, "bad_events", rec->bad_events + rec->unknown_events);
	ks_json_kv_u64(j, "seq_gaps", rec->rd.seq_gaps);
	ks_json_kv_u64(j, "seq_repeats", rec->rd.seq_repeats);
	ks_json_kv_u64(j, "repeats_dropped", rec->rd.repeats_dropped);
	ks_json_kv_u64(j, "bad_formats", rec->bad_formats);
	if (rec->bad_formats)
		ks_json_kv_str(j, "bad_format", rec->bad_format_why);
	ks_json_kv_u64(j, "chunk_events", rec->chunk_events);
	ks_json_key(j, "trailer_events");
	if (rec->trailer_events >= 0)
		ks_json_u64(j, (uint64_t)rec->trailer_events);
	else
		ks_json_null(j);
	ks_json_key(j, "count_mismatch");
	ks_json_bool(j, ks_recording_count_differs(rec));
}

/* record --profile: what the recording's stacks hold (nothing said when it has none). */
static void stacks_info(const struct ks_recording *rec, struct ks_json *j, FILE *out)
{
	struct ks_rec_stacks_info info;
	struct ks_stacks st;

	if (ks_rec_stacks_load(&rec->rd, &st, &info))
		return;
	if (j && (info.chunks || info.refused)) {
		ks_json_key(j, "stacks");
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "sample_type", st.sample_type);
		ks_json_kv_u64(j, "total", st.total);
		ks_json_kv_u64(j, "stacks", st.n);
		ks_json_kv_u64(j, "frames", st.nnames);
		ks_json_kv_double(j, "duration_s", (double)st.duration_ns / 1e9);
		ks_json_kv_u64(j, "refused_chunks", info.refused);
		ks_json_obj_end(j);
	} else if (!j && info.chunks) {
		fprintf(out, "stacks: %llu %s (%s) in %zu distinct stacks of %zu frames over %.3f s\n",
			(unsigned long long)st.total, st.sample_type, st.unit, st.n, st.nnames,
			(double)st.duration_ns / 1e9);
	}
	if (!j && info.refused)
		fprintf(out, "stacks: %zu chunks refused: %s\n", info.refused, info.why);
	ks_stacks_free(&st);
}

static int info_json(const struct ks_recording *rec, const char *file, struct ev_count *ec, int nec, FILE *out)
{
	struct ks_json *j = ks_json_new(out);
	int err;

	if (!j)
		return -ENOMEM;
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "file", file);
	ks_json_kv_u64(j, "bytes", rec->rd.size);
	ks_json_kv_u64(j, "chunks", rec->rd.nchunks);
	damage_json(j, rec);
	ks_json_key(j, "closed");
	ks_json_bool(j, rec->trailer_len > 0);
	ks_json_key(j, "manifest");
	err = kv_json_obj(j, rec->manifest, rec->manifest_len);
	ks_json_key(j, "trailer");
	if (!err)
		err = kv_json_obj(j, rec->trailer, rec->trailer_len);
	ks_json_kv_u64(j, "events_total", rec->nev);
	ks_json_key(j, "events");
	ks_json_obj_begin(j);
	for (int i = 0; i < nec; i++)
		ks_json_kv_u64(j, ec[i].name, ec[i].n);
	ks_json_obj_end(j);
	ks_json_key(j, "cpus");
	ks_json_arr_begin(j);
	for (int i = 0; i < rec->ncpus; i++) {
		ks_json_obj_begin(j);
		ks_json_kv_u64(j, "cpu", (uint64_t)i);
		ks_json_kv_u64(j, "recorded", rec->recorded[i]);
		ks_json_kv_u64(j, "lost", rec->lost[i]);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_kv_u64(j, "first_ts_ns", rec->first_ts);
	ks_json_kv_u64(j, "last_ts_ns", rec->last_ts);
	ks_json_kv_double(j, "span_s", (double)(rec->last_ts - rec->first_ts) / 1e9);
	collectors_json(j, rec);
	stacks_info(rec, j, out);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
	return err;
}

static void info_text(const struct ks_recording *rec, const char *file, struct ev_count *ec, int nec, FILE *out)
{
	const struct ks_rec_reader *r = &rec->rd;
	struct kv_print p = { out };
	uint64_t lost = 0;
	char ename[4 * 128 + 1];

	fprintf(out, "%s: %llu bytes, %zu chunks%s\n", file, (unsigned long long)r->size, r->nchunks,
		rec->trailer_len ? "" : " (not closed: no trailer, the recording was cut)");
	if (r->cut_bytes || r->bad_chunks || r->bad_bytes || rec->bad_events || rec->unknown_events || r->seq_gaps ||
	    r->seq_repeats || rec->bad_formats)
		fprintf(out,
			"damage: %llu bytes cut at the end, %llu bad chunks, %llu bytes skipped, %llu bad events, "
			"%llu chunks missing, %llu repeated (%llu copies left out), %llu formats refused\n",
			(unsigned long long)r->cut_bytes, (unsigned long long)r->bad_chunks,
			(unsigned long long)r->bad_bytes, (unsigned long long)(rec->bad_events + rec->unknown_events),
			(unsigned long long)r->seq_gaps, (unsigned long long)r->seq_repeats,
			(unsigned long long)r->repeats_dropped, (unsigned long long)rec->bad_formats);
	if (rec->bad_formats)
		fprintf(out, "refused format: %s\n", rec->bad_format_why);
	if (ks_recording_count_differs(rec))
		fprintf(out, "count mismatch: the trailer counts %lld events, the chunks hold %llu\n",
			(long long)rec->trailer_events, (unsigned long long)rec->chunk_events);
	fprintf(out, "manifest:\n");
	ks_rec_kv_each(rec->manifest, rec->manifest_len, kv_text, &p);
	collectors_text(rec, out);
	stacks_info(rec, NULL, out);
	fprintf(out, "events: %zu in %.6f s\n", rec->nev, (double)(rec->last_ts - rec->first_ts) / 1e9);
	for (int i = 0; i < nec; i++)
		fprintf(out, "  %-40s %llu\n", ks_escape(ec[i].name, ename, sizeof(ename)), (unsigned long long)ec[i].n);
	fprintf(out, "cpus:\n");
	for (int i = 0; i < rec->ncpus; i++) {
		fprintf(out, "  cpu %-4d recorded %-12llu lost %llu\n", i, (unsigned long long)rec->recorded[i],
			(unsigned long long)rec->lost[i]);
		lost += rec->lost[i];
	}
	fprintf(out, "lost: %llu\n", (unsigned long long)lost);
	if (rec->trailer_len) {
		fprintf(out, "totals (at the end of the recording):\n");
		ks_rec_kv_each(rec->trailer, rec->trailer_len, kv_text, &p);
	}
}

int cmd_info(int argc, char **argv)
{
	struct ks_recording rec;
	struct ks_common c;
	struct ev_count *ec = NULL;
	const char *file;
	FILE *out;
	int rc, nec, err;

	ks_common_init(&c);
	file = parse_file_args(&info_spec, argc, argv, &c, NULL, NULL, &rc);
	if (!file)
		return rc;
	if (load(&rec, file))
		return 1;
	nec = count_events(&rec, &ec);
	out = nec < 0 ? NULL : open_out(c.output, KS_FILE_TRUNC);
	if (!out) {
		free(ec);
		ks_recording_free(&rec);
		return 1;
	}
	err = 0;
	if (c.json)
		err = info_json(&rec, file, ec, nec, out);
	else
		info_text(&rec, file, ec, nec, out);
	fflush(out);
	if (!err && ferror(out))
		err = -EIO;
	err = close_out(out, err);
	free(ec);
	ks_recording_free(&rec);
	if (err)
		p_err("writing: %s", strerror(-err));
	return err ? 1 : 0;
}

/* report --html: the recording's parts (@rr: its reports, read back) handed to the page writer (output/report_html.h). */
static int write_html(const struct ks_recording *rec, const char *file, const struct ks_rec_reports *rr, FILE *out)
{
	struct kv_lines l = { 0 };
	struct ks_html_kv *kv = NULL;
	struct ks_html_count *ev = NULL;
	struct ks_html_cost cost[MAX_COLS];
	struct col_sum s[MAX_COLS];
	struct ev_count *ec = NULL;
	int nec, ncol, err;

	ks_rec_kv_each(rec->manifest, rec->manifest_len, kv_collect, &l);
	err = l.err;
	nec = err ? 0 : count_events(rec, &ec);
	if (nec < 0)
		err = nec;
	kv = err ? NULL : calloc(l.n + 1, sizeof(*kv));
	ev = err ? NULL : calloc((size_t)nec + 1, sizeof(*ev));
	if (!err && (!kv || !ev))
		err = -ENOMEM;
	if (!err) {
		struct ks_html_in in = { .title = file, .manifest = kv, .nmanifest = (int)l.n, .totals = rr->totals,
					 .ntotals = rr->ntotals, .series = rr->series, .events = ev, .nevents = nec,
					 .cost = cost };

		for (size_t i = 0; i < l.n; i++)
			kv[i] = (struct ks_html_kv){ l.v[i].key, l.v[i].val };
		for (int i = 0; i < nec; i++)
			ev[i] = (struct ks_html_count){ ec[i].name, ec[i].n };
		char end[32];

		for (int i = 0; i < rec->ncpus; i++)
			in.events_lost += rec->lost[i];
		if (ks_rec_kv_get(rec->trailer, rec->trailer_len, "clock.end.realtime_ns", end, sizeof(end)))
			in.end_realtime_ns = strtoull(end, NULL, 10);
		ncol = col_sums(rec, s, MAX_COLS);
		for (int i = 0; i < ncol; i++)
			cost[i] = (struct ks_html_cost){ s[i].name, s[i].intervals, s[i].lost, s[i].bpf_ns, s[i].bpf_cnt,
							 s[i].window_s, s[i].total, s[i].bpf_stats };
		in.ncost = ncol;
		/* the process's, written with every collector's interval: the first one's */
		in.ksight_cpu_us = ncol ? s[0].cpu_us : 0;
		/* record --profile: its on-CPU samples as the page's flame graph (none said when it has none) */
		struct ks_rec_stacks_info si;
		struct ks_stacks st;
		bool have_st = !ks_rec_stacks_load(&rec->rd, &st, &si);

		if (have_st && si.chunks)
			in.oncpu = &st;
		err = ks_write_report_html(&in, out);
		if (have_st)
			ks_stacks_free(&st);
	}
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].key);
		free(l.v[i].val);
	}
	free(l.v);
	free(kv);
	free(ev);
	free(ec);
	return err;
}
