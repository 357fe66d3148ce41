/* `ksight diff A B`: two recordings (event counts and rates, paired latencies), two collector reports (rows, tests, --fail-on gates) or two folded profiles (a differential flame graph) side by side. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "cli/commands.h"
#include "core/diffset.h"
#include "core/file.h"
#include "core/folded.h"
#include "core/gate.h"
#include "core/json.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"
#include "core/report.h"
#include "core/stats.h"
#include "format/recording.h"
#include "format/recstacks.h"
#include "events/pair_report.h"
#include "output/diff.h"

#define MAX_PAIRS 8
#define MAX_GATES 32
/* p below this is reported as a significant change (one fixed level, said in the output) */
#define ALPHA 0.01

enum { OPT_PAIR = 300, OPT_KEY, OPT_FAIL_ON, OPT_ALPHA, OPT_SVG, OPT_HTML };

static const struct ks_optdef diff_opts[] = {
	{ "pair", OPT_PAIR, "START/END", "compare the latency from START to the next END with the same key (repeatable)" },
	{ "key", OPT_KEY, "F[=G],...", "fields that tie the last --pair's START (F) to its END (G, default F)" },
	{ "fail-on", OPT_FAIL_ON, "EXPR", "reports: exit 1 when EXPR holds and is significant, e.g. 'syscalls:read.p99>+10%' (repeatable, or comma-separated; docs/diff.md)" },
	{ "alpha", OPT_ALPHA, "P", "reports: the significance level before the correction for many rows (default 0.01)" },
	{ "svg", OPT_SVG, "FILE", "folded profiles, or recordings made with record --profile: write the differential flame graph to FILE (B's widths; red grew, blue shrank)" },
	{ "html", OPT_HTML, "FILE", "reports: also write the comparison as one self-contained HTML page to FILE" },
	{ 0 },
};

static const struct ks_cmd_spec diff_spec = {
	.name = "diff",
	.summary = "Compare B with A. Recordings: per event the counts and rates, per --pair the count and "
		   "p50/p90/p99 latency side by side with their changes and a Mann-Whitney U test (p < 0.01: significant). "
		   "Collector reports (-j output, a -i series, run's): per row count, p50..p999, max, mean with "
		   "confidence intervals and a Mann-Whitney test over buckets; --fail-on gates. Folded profiles: "
		   "--svg draws a differential flame graph. Exit 0, or 1 when a --fail-on gate fired, 2 on bad usage or input.",
	.args = "A B",
	.common = KS_O_JSON | KS_O_OUTPUT,
	.opts = diff_opts,
};

struct diff_ctx {
	int npairs;
	const char *pair[MAX_PAIRS], *key[MAX_PAIRS];
	int ngates;
	struct ks_gate gate[MAX_GATES];
	double alpha;
	const char *svg, *html;
};

/* --fail-on: one or several comma-separated gates, each parsed now (bad: one line, exit 2) */
static int add_gates(struct diff_ctx *c, const char *arg)
{
	char buf[1024], *save = NULL, err[320];

	if (strlen(arg) >= sizeof(buf)) {
		p_err("--fail-on '%s' is too long", KS_ESC(arg));
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (c->ngates == MAX_GATES) {
			p_err("at most %d --fail-on gates", MAX_GATES);
			return -EINVAL;
		}
		if (ks_gate_parse(t, &c->gate[c->ngates], err, sizeof(err))) {
			p_err("%s", err);
			return -EINVAL;
		}
		c->ngates++;
	}
	if (!c->ngates || arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,")) {
		p_err("bad --fail-on '%s': an empty expression", KS_ESC(arg));
		return -EINVAL;
	}
	return 0;
}

static int diff_opt(void *vctx, int id, const char *arg)
{
	struct diff_ctx *c = vctx;

	if (id == OPT_FAIL_ON)
		return add_gates(c, arg);
	if (id == OPT_SVG) {
		c->svg = arg;
		return 0;
	}
	if (id == OPT_HTML) {
		c->html = arg;
		return 0;
	}
	if (id == OPT_ALPHA) {
		char *end;

		errno = 0;
		c->alpha = strtod(arg, &end);
		if (!*arg || *end || errno || !(c->alpha > 0 && c->alpha < 1)) {
			p_err("bad --alpha '%s': a probability between 0 and 1, e.g. 0.01", KS_ESC(arg));
			return -EINVAL;
		}
		return 0;
	}
	if (id == OPT_PAIR) {
		if (c->npairs == MAX_PAIRS) {
			p_err("at most %d --pair", MAX_PAIRS);
			return -EINVAL;
		}
		c->pair[c->npairs++] = arg;
		return 0;
	}
	if (!c->npairs || c->key[c->npairs - 1]) {
		p_err("--key '%s' must follow the --pair it is for", arg);
		return -EINVAL;
	}
	c->key[c->npairs - 1] = arg;
	return 0;
}

struct side {
	const char *file;
	struct ks_recording rec;
	double span_s; /* recording time: clock start to end when the file has both, else the events' span */
	bool loaded;
};

struct ev_row {
	char name[128];
	uint64_t n[2];
};

struct lat {
	uint64_t *v;
	size_t n, cap;
	int err;
};

struct pair_row {
	const char *spec, *key;
	struct lat l[2];
	struct ks_pair_counts pc[2];
	struct ks_mwu t;
	bool tested;
};

static void lat_add(void *ctx, uint64_t ns)
{
	struct lat *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		uint64_t *n = realloc(l->v, cap * sizeof(*n));

		if (!n) {
			l->err = -ENOMEM;
			return;
		}
		l->v = n;
		l->cap = cap;
	}
	l->v[l->n++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int load_side(struct side *s)
{
	uint64_t start, end;
	char v[64];
	int err = ks_recording_load(&s->rec, s->file);

	if (err) {
		p_err(err == -EBADMSG || err == -EPROTO ? "'%s' is not a ksight recording this version reads"
							: "cannot read '%s': %s",
		      s->file, ks_rec_strerror(err));
		return err;
	}
	s->loaded = true;
	ks_recording_warn(&s->rec, s->file);
	start = ks_rec_manifest_u64(&s->rec, "clock.start.monotonic_ns");
	end = ks_rec_kv_get(s->rec.trailer, s->rec.trailer_len, "clock.end.monotonic_ns", v, sizeof(v))
		      ? strtoull(v, NULL, 10)
		      : 0;
	s->span_s = start && end > start ? (double)(end - start) / 1e9
					 : (double)(s->rec.last_ts - s->rec.first_ts) / 1e9;
	return 0;
}

/* Events of both sides by name: A's in first-seen order, then B's new ones. */
static int count_events(struct side *sd, struct ev_row **out, int *nout)
{
	struct ev_row *v = NULL;
	int n = 0;

	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < sd[s].rec.nev; i++) {
			char name[128];
			int k;

			ks_rec_ev_name(sd[s].rec.evs[i].ev, name, sizeof(name));
			for (k = n - 1; k >= 0 && strcmp(v[k].name, name); k--)
				;
			if (k < 0) {
				struct ev_row *g = realloc(v, (size_t)(n + 1) * sizeof(*g));

				if (!g) {
					free(v);
					return -ENOMEM;
				}
				v = g;
				k = n++;
				memset(&v[k], 0, sizeof(v[k]));
				snprintf(v[k].name, sizeof(v[k].name), "%s", name);
			}
			v[k].n[s]++;
		}
	*out = v;
	*nout = n;
	return 0;
}

static double rate(uint64_t n, double span)
{
	return span > 0 ? (double)n / span : 0;
}

/* B's value relative to A's: +12.5 (%), or NaN when A's is 0 */
static double change_pct(double a, double b)
{
	return a > 0 ? (b - a) / a * 100 : NAN;
}

static const char *verdict(const struct pair_row *p)
{
	if (!p->tested)
		return "not tested (a side has no latencies)";
	if (p->t.p >= ALPHA)
		return "no significant change";
	return p->t.z > 0 ? "significant: B is slower" : "significant: B is faster";
}

static void json_num_or_null(struct ks_json *j, const char *k, double v)
{
	ks_json_key(j, k);
	if (isnan(v))
		ks_json_null(j);
	else
		ks_json_double(j, v);
}

static const double qs[3] = { 0.5, 0.9, 0.99 };
static const char *const qnames[3] = { "p50_ns", "p90_ns", "p99_ns" };

static void write_json(FILE *out, struct side *sd, struct ev_row *ev, int nev, struct pair_row *pr, int npr)
{
	struct ks_json *j = ks_json_new(out);

	if (!j)
		return;
	ks_json_obj_begin(j);
	for (int s = 0; s < 2; s++) {
		ks_json_key(j, s ? "b" : "a");
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "file", sd[s].file);
		ks_json_kv_double(j, "span_s", sd[s].span_s);
		ks_json_kv_u64(j, "events", sd[s].rec.nev);
		ks_json_obj_end(j);
	}
	ks_json_key(j, "events");
	ks_json_arr_begin(j);
	for (int i = 0; i < nev; i++) {
		double ra = rate(ev[i].n[0], sd[0].span_s), rb = rate(ev[i].n[1], sd[1].span_s);

		ks_json_obj_begin(j);
		ks_json_kv_str(j, "event", ev[i].name);
		ks_json_kv_u64(j, "count_a", ev[i].n[0]);
		ks_json_kv_u64(j, "count_b", ev[i].n[1]);
		ks_json_key(j, "count_delta");
		ks_json_i64(j, (int64_t)ev[i].n[1] - (int64_t)ev[i].n[0]);
		ks_json_kv_double(j, "per_s_a", ra);
		ks_json_kv_double(j, "per_s_b", rb);
		json_num_or_null(j, "per_s_change_pct", change_pct(ra, rb));
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_key(j, "pairs");
	ks_json_arr_begin(j);
	for (int i = 0; i < npr; i++) {
		struct pair_row *p = &pr[i];

		ks_json_obj_begin(j);
		ks_json_kv_str(j, "pair", p->spec);
		ks_json_kv_str(j, "key", p->key);
		for (int s = 0; s < 2; s++) {
			ks_json_key(j, s ? "b" : "a");
			ks_json_obj_begin(j);
			ks_json_kv_u64(j, "count", p->l[s].n);
			for (int q = 0; q < 3; q++)
				ks_json_kv_u64(j, qnames[q], ks_quantile_sorted(p->l[s].v, p->l[s].n, qs[q]));
			ks_json_kv_u64(j, "unmatched_ends", p->pc[s].unmatched);
			ks_json_kv_u64(j, "open_starts", p->pc[s].open);
			ks_json_obj_end(j);
		}
		ks_json_key(j, "delta");
		ks_json_obj_begin(j);
		ks_json_key(j, "count");
		ks_json_i64(j, (int64_t)p->l[1].n - (int64_t)p->l[0].n);
		for (int q = 0; q < 3; q++) {
			uint64_t a = ks_quantile_sorted(p->l[0].v, p->l[0].n, qs[q]);
			uint64_t b = ks_quantile_sorted(p->l[1].v, p->l[1].n, qs[q]);
			char k[32];

			ks_json_key(j, qnames[q]);
			ks_json_i64(j, (int64_t)b - (int64_t)a);
			snprintf(k, sizeof(k), "%.3s_ratio", qnames[q]);
			json_num_or_null(j, k, a ? (double)b / (double)a : NAN);
		}
		ks_json_obj_end(j);
		ks_json_key(j, "test");
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "name", "mann-whitney-u");
		ks_json_kv_double(j, "alpha", ALPHA);
		if (p->tested)
			ks_diff_json_mwu(j, &p->t);
		ks_json_key(j, "significant");
		ks_json_bool(j, p->tested && p->t.p < ALPHA);
		ks_json_kv_str(j, "verdict", verdict(p));
		ks_json_obj_end(j);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_free(j);
	fputc('\n', out);
}

static void text_pct(FILE *out, double pct)
{
	if (isnan(pct))
		fprintf(out, "%10s", "new");
	else
		fprintf(out, "%+9.1f%%", pct);
}

static void write_text(FILE *out, struct side *sd, struct ev_row *ev, int nev, struct pair_row *pr, int npr)
{
	char a[32], b[32];

	for (int s = 0; s < 2; s++)
		fprintf(out, "%s: %s (%.3f s, %zu events)\n", s ? "B" : "A", sd[s].file, sd[s].span_s, sd[s].rec.nev);
	fprintf(out, "\n%-40s %12s %12s %12s %12s %10s\n", "EVENT", "COUNT A", "COUNT B", "/S A", "/S B", "/S CHANGE");
	for (int i = 0; i < nev; i++) {
		double ra = rate(ev[i].n[0], sd[0].span_s), rb = rate(ev[i].n[1], sd[1].span_s);

		fprintf(out, "%-40s %12llu %12llu %12.1f %12.1f ", ev[i].name, (unsigned long long)ev[i].n[0],
			(unsigned long long)ev[i].n[1], ra, rb);
		text_pct(out, change_pct(ra, rb));
		fputc('\n', out);
	}
	for (int i = 0; i < npr; i++) {
		struct pair_row *p = &pr[i];

		fprintf(out, "\npair %s (key %s)\n%-10s %12s %12s %12s\n", p->spec, p->key, "", "A", "B", "CHANGE");
		fprintf(out, "%-10s %12zu %12zu ", "count", p->l[0].n, p->l[1].n);
		text_pct(out, change_pct((double)p->l[0].n, (double)p->l[1].n));
		fputc('\n', out);
		for (int q = 0; q < 3; q++) {
			uint64_t va = ks_quantile_sorted(p->l[0].v, p->l[0].n, qs[q]);
			uint64_t vb = ks_quantile_sorted(p->l[1].v, p->l[1].n, qs[q]);

			fprintf(out, "%-10.3s %12s %12s ", qnames[q], ks_fmt_ns(va, a, sizeof(a)), ks_fmt_ns(vb, b, sizeof(b)));
			if (va)
				fprintf(out, "%9.2fx\n", (double)vb / (double)va);
			else
				fprintf(out, "%10s\n", "-");
		}
		if (p->tested)
			fprintf(out, "Mann-Whitney U: p = %.3g, P(B > A) = %.3f: %s (at p < %g)\n", p->t.p, p->t.a12,
				verdict(p), ALPHA);
		else
			fprintf(out, "Mann-Whitney U: %s\n", verdict(p));
	}
}

static int run_pairs(struct side *sd, const struct diff_ctx *ctx, struct pair_row *pr)
{
	for (int i = 0; i < ctx->npairs; i++) {
		struct pair_row *p = &pr[i];

		p->spec = ctx->pair[i];
		p->key = ctx->key[i] ? ctx->key[i] : "";
		for (int s = 0; s < 2; s++) {
			struct ks_pair pair;
			int err;

			if (ks_pair_parse(&pair, &sd[s].rec, ctx->pair[i], ctx->key[i])) {
				p_err("(in %s '%s')", s ? "B" : "A", sd[s].file);
				return -EINVAL;
			}
			err = ks_pair_each(&sd[s].rec, &pair, lat_add, &p->l[s], &p->pc[s]);
			if (!err)
				err = p->l[s].err;
			if (err)
				return err;
			if (p->l[s].n > 1) /* no pairs: v is NULL */
				qsort(p->l[s].v, p->l[s].n, sizeof(uint64_t), cmp_u64);
		}
		p->tested = !ks_mann_whitney(p->l[0].v, p->l[0].n, p->l[1].v, p->l[1].n, &p->t);
	}
	return 0;
}

enum kind { K_RECORDING, K_REPORTS, K_FOLDED };

/* True when @file is a recording with a chunk of @type: collector reports (record --collect) are diffed as reports, stacks (--profile) as folded profiles. */
static bool rec_has(const char *file, uint32_t type)
{
	struct ks_rec_reader r;
	bool has = false;

	if (ks_rec_open(&r, file))
		return false; /* the recording reader says what is wrong */
	for (size_t i = 0; i < r.nchunks && !has; i++)
		has = r.chunks[i].hdr.type == type;
	ks_rec_free(&r);
	return has;
}

static bool rec_has_reports(const char *file)
{
	return rec_has(file, KS_REC_REPORT);
}

/* record --profile: @file's stacks as side @side of @f, rendered folded (the flame graph's names) and read back as a folded file is. */
static int load_rec_stacks(struct ks_folded2 *f, int side, const char *file, char *msg, size_t len)
{
	struct ks_rec_stacks_info info;
	struct ks_rec_reader r;
	struct ks_stacks st;
	char *buf = NULL;
	size_t blen = 0;
	FILE *mem;
	int err = ks_rec_open(&r, file);

	if (err) {
		snprintf(msg, len, "cannot read '%s': %s", KS_ESC(file), ks_rec_strerror(err));
		return err;
	}
	err = ks_rec_stacks_load(&r, &st, &info);
	ks_rec_free(&r);
	if (err) {
		snprintf(msg, len, "reading the stacks of '%s': %s", KS_ESC(file), strerror(-err));
		return err;
	}
	if (info.refused) {
		snprintf(msg, len, "'%s': %s", KS_ESC(file), info.why);
		ks_stacks_free(&st);
		return -EBADMSG;
	}
	mem = open_memstream(&buf, &blen);
	err = mem ? ks_write_folded(&st, mem) : -errno;
	if (mem && fclose(mem) && !err)
		err = -ENOMEM;
	ks_stacks_free(&st);
	mem = err ? NULL : fmemopen(buf, blen ? blen : 1, "r");
	if (!err && !mem)
		err = -errno;
	if (!err) {
		err = ks_folded_read(f, side, mem, file, msg, len);
		fclose(mem);
	} else {
		snprintf(msg, len, "the stacks of '%s': %s", KS_ESC(file), strerror(-err));
	}
	free(buf);
	return err;
}

/* A side of a folded diff: a folded file, or a recording's stacks. */
static int load_folded_side(struct ks_folded2 *f, int side, const char *file, char *msg, size_t len)
{
	return rec_has(file, KS_REC_STACKS) ? load_rec_stacks(f, side, file, msg, len)
					    : ks_folded_load(f, side, file, msg, len);
}

/*
 * A recording's collector reports into @d: each interval's -j report, as
 * the collector's -i would have written them (the whole-window ones are
 * their sum, left out).  A report chunk that fails its check is bad input.
 */
static int load_rec_reports(struct ks_dset *d, const char *file, char *msg, size_t len)
{
	struct ks_rec_reader r;
	int err;

	d->file = file;
	err = ks_rec_open(&r, file);
	if (err) {
		snprintf(msg, len, "cannot read '%s': %s", KS_ESC(file), ks_rec_strerror(err));
		return err;
	}
	for (size_t i = 0; i < r.nchunks && !err; i++) {
		struct ks_rec_report_view v;
		char why[160];
		void *p;

		if (r.chunks[i].hdr.type != KS_REC_REPORT)
			continue;
		err = ks_rec_read(&r, i, &p);
		if (err) {
			snprintf(msg, len, "reading '%s': %s", KS_ESC(file), strerror(-err));
			break;
		}
		char *plain;
		size_t plen = r.chunks[i].hdr.len;

		err = ks_rec_report_inflate(p, plen, &plain, &plen, why, sizeof(why));
		if (!err)
			err = ks_rec_report_check(plain ? plain : p, plen, &v, why, sizeof(why));
		if (err)
			snprintf(msg, len, "'%s': %s", KS_ESC(file), err == -ENOMEM ? strerror(ENOMEM) : why);
		else if (!v.total)
			err = ks_dset_add_json(d, v.json, v.json_len, msg, len);
		free(plain);
		free(p);
	}
	ks_rec_free(&r);
	return err ? err : ks_dset_done(d, msg, len);
}

/* What @file holds, by its first bytes: a recording's magic, JSON's '{', else folded stacks if it reads as such. */
static int sniff(const char *file, enum kind *k)
{
	char head[9] = { 0 }; /* 8 bytes read, and a NUL for strspn */
	FILE *f = fopen(file, "re");
	size_t n;

	if (!f) {
		int err = -errno;

		p_err("cannot read '%s': %s", KS_ESC(file), strerror(-err));
		return err;
	}
	n = fread(head, 1, sizeof(head) - 1, f);
	fclose(f);
	/* a recording's stacks alone (record --profile without --collect or -e) are compared as folded profiles */
	if (n == sizeof(head) - 1 && !memcmp(head, KS_REC_MAGIC, sizeof(head) - 1))
		*k = rec_has_reports(file) ? K_REPORTS : rec_has(file, KS_REC_STACKS) && !rec_has(file, KS_REC_EVENTS) ? K_FOLDED : K_RECORDING;
	else if (n && memchr(head, '{', n) && strspn(head, " \t\r\n") == (size_t)((char *)memchr(head, '{', n) - head))
		*k = K_REPORTS;
	else if (ks_folded_sniff(file))
		*k = K_FOLDED;
	else
		*k = K_RECORDING; /* the recording reader names what is wrong */
	return 0;
}

/* Opens -o (or stdout): NULL after a one-line error. */
static FILE *open_out(const struct ks_common *c)
{
	FILE *out = c->output ? ks_file_fopen(c->output, KS_FILE_TRUNC) : stdout;

	if (!out)
		p_err("diff: cannot write '%s': %s", KS_ESC(c->output), ks_file_strerror(c->output, -errno));
	return out;
}

static int close_out(FILE *out, int err)
{
	fflush(out);
	if (!err && ferror(out))
		err = -EIO;
	if (out != stdout && fclose(out) && !err)
		err = -errno;
	return err;
}

/* Two collector reports: rows compared, gates judged; exit 1 when one fired. */
static int diff_reports(const struct diff_ctx *ctx, const struct ks_common *c, const char *fa, const char *fb)
{
	struct ks_dset ds[2] = { 0 };
	struct ks_diff d = { 0 };
	char msg[512];
	FILE *out = NULL;
	int err = 0, rc = 2;

	for (int s = 0; s < 2 && !err; s++) {
		const char *f = s ? fb : fa;

		err = rec_has_reports(f) ? load_rec_reports(&ds[s], f, msg, sizeof(msg))
					 : ks_dset_load(&ds[s], f, msg, sizeof(msg));
		if (err)
			p_err("%s", msg);
	}
	if (err)
		goto cleanup;
	err = ks_diff_run(&d, &ds[0], &ds[1], ctx->alpha ? ctx->alpha : ALPHA, ctx->gate, ctx->ngates);
	if (!err)
		out = open_out(c);
	if (!out)
		goto cleanup;
	if (!err)
		err = c->json ? ks_diff_write_json(&d, ctx->gate, out) : ks_diff_write_text(&d, ctx->gate, out);
	err = close_out(out, err);
	if (!err && ctx->html) {
		FILE *h = ks_file_fopen(ctx->html, KS_FILE_TRUNC);

		if (!h) {
			p_err("diff: cannot write '%s': %s", KS_ESC(ctx->html), ks_file_strerror(ctx->html, -errno));
			goto cleanup;
		}
		err = close_out(h, ks_diff_write_html(&d, ctx->gate, h));
	}
	if (err) {
		p_err("diff: %s", strerror(-err));
		goto cleanup;
	}
	for (size_t i = 0; i < d.nhits; i++)
		if (d.hits[i].holds && d.hits[i].significant) {
			fputs("ksight: gate fired: ", stderr);
			ks_diff_write_hit(&d, ctx->gate, &d.hits[i], stderr);
		}
	rc = d.nfired ? 1 : 0;
cleanup:
	ks_diff_free(&d);
	for (int s = 0; s < 2; s++)
		ks_dset_free(&ds[s]);
	return rc;
}

/* Two folded profiles (or recordings' stacks): the stacks' shares side by side (@c NULL: not), and with --svg the differential flame graph. */
static int diff_folded(const struct diff_ctx *ctx, const struct ks_common *c, const char *fa, const char *fb)
{
	struct ks_folded2 f = { 0 };
	char msg[512], title[256];
	FILE *out = NULL;
	int err = 0, rc = 2;

	for (int s = 0; s < 2 && !err; s++) {
		err = load_folded_side(&f, s, s ? fb : fa, msg, sizeof(msg));
		if (err)
			p_err("%s", msg);
	}
	if (err)
		goto cleanup;
	ks_folded_sort(&f);
	if (ctx->svg) {
		FILE *svg = ks_file_fopen(ctx->svg, KS_FILE_TRUNC);

		if (!svg) {
			p_err("diff: cannot write '%s': %s", KS_ESC(ctx->svg), ks_file_strerror(ctx->svg, -errno));
			goto cleanup;
		}
		snprintf(title, sizeof(title), "Differential flame graph: %s against %s", fb, fa);
		err = close_out(svg, ks_diff_write_svg(&f, title, svg));
		if (err) {
			p_err("diff: '%s': %s", KS_ESC(ctx->svg), err == -ENODATA ? "B has no samples" : strerror(-err));
			goto cleanup;
		}
	}
	if (!c) {
		rc = 0; /* the flame graph only: the reports' comparison is the output */
		goto cleanup;
	}
	out = open_out(c);
	if (!out)
		goto cleanup;
	err = close_out(out, c->json ? ks_diff_write_folded_json(&f, fa, fb, out) : ks_diff_write_folded_text(&f, out));
	if (err) {
		p_err("diff: %s", strerror(-err));
		goto cleanup;
	}
	rc = 0;
cleanup:
	ks_folded_free(&f);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	static struct diff_ctx ctx; /* MAX_GATES gates: not on the stack */
	struct side sd[2] = { 0 };
	struct pair_row pr[MAX_PAIRS] = { 0 };
	struct ev_row *ev = NULL;
	struct ks_common c;
	enum kind kind[2];
	int idx, nev = 0, err = 0, rc = 0;
	FILE *out = stdout;

	ks_common_init(&c);
	/* options before, between or after A and B */
	for (int k = 0, at = 0; k < 3 && at < argc; k++) {
		idx = ks_opts_parse(&diff_spec, argc - at, argv + at, &c, diff_opt, &ctx);
		if (idx < 0)
			return idx == KS_OPTS_HELP ? 0 : 2;
		at += idx;
		if (at >= argc)
			break;
		if (k == 2) {
			p_err("unexpected argument '%s'", argv[at]);
			return 2;
		}
		/* the positional is argv[0] of the next parse: the slot of the command name, skipped */
		sd[k].file = argv[at];
	}
	if (!sd[0].file || !sd[1].file) {
		p_err("diff needs two files: ksight diff A B");
		return 2;
	}
	for (int s = 0; s < 2; s++)
		if (sniff(sd[s].file, &kind[s]))
			return 2;
	/* --pair: recordings with collector reports are compared by their events */
	for (int s = 0; s < 2 && ctx.npairs; s++)
		if (kind[s] == K_REPORTS && rec_has_reports(sd[s].file))
			kind[s] = K_RECORDING;
	/* a recording's stacks against a folded profile, or against another recording's: compared as profiles */
	for (int s = 0; s < 2 && kind[0] != kind[1] && !ctx.npairs; s++)
		if (kind[s] != K_FOLDED && rec_has(sd[s].file, KS_REC_STACKS) &&
		    (kind[!s] == K_FOLDED || rec_has(sd[!s].file, KS_REC_STACKS)))
			kind[s] = K_FOLDED;
	if (kind[0] != kind[1]) {
		p_err("diff: '%s' and '%s' are not the same kind of file (recordings, collector reports, folded stacks)",
		      KS_ESC(sd[0].file), KS_ESC(sd[1].file));
		return 2;
	}
	if (kind[0] != K_REPORTS && (ctx.ngates || ctx.alpha)) {
		p_err("diff: --fail-on and --alpha need collector reports (-j output), not %s",
		      kind[0] == K_FOLDED ? "folded stacks" : "recordings");
		return 2;
	}
	if (kind[0] != K_REPORTS && ctx.html) {
		p_err("diff: --html needs collector reports (-j output or record --collect recordings)");
		return 2;
	}
	if (kind[0] != K_FOLDED && ctx.svg && !(rec_has(sd[0].file, KS_REC_STACKS) && rec_has(sd[1].file, KS_REC_STACKS))) {
		p_err("diff: --svg needs two folded profiles (ksight profile -f folded) or two recordings made with record --profile");
		return 2;
	}
	/* recordings with stacks and reports or events: the flame graph first, then those compared (and gated) */
	if (kind[0] != K_FOLDED && ctx.svg && (rc = diff_folded(&ctx, NULL, sd[0].file, sd[1].file)))
		return rc;
	if (kind[0] != K_RECORDING && ctx.npairs) {
		p_err("diff: --pair needs two recordings");
		return 2;
	}
	if (kind[0] == K_REPORTS)
		return diff_reports(&ctx, &c, sd[0].file, sd[1].file);
	if (kind[0] == K_FOLDED)
		return diff_folded(&ctx, &c, sd[0].file, sd[1].file);
	for (int s = 0; s < 2 && !err; s++)
		err = load_side(&sd[s]);
	if (err) {
		rc = 2;
		goto out;
	}
	err = run_pairs(sd, &ctx, pr);
	if (err == -EINVAL) {
		rc = 2;
		goto out;
	}
	if (!err)
		err = count_events(sd, &ev, &nev);
	if (!err && c.output) {
		out = ks_file_fopen(c.output, KS_FILE_TRUNC);
		if (!out) {
			p_err("diff: cannot write '%s': %s", KS_ESC(c.output), ks_file_strerror(c.output, -errno));
			rc = 1;
			goto out;
		}
	}
	if (!err) {
		if (c.json)
			write_json(out, sd, ev, nev, pr, ctx.npairs);
		else
			write_text(out, sd, ev, nev, pr, ctx.npairs);
		fflush(out);
		if (ferror(out))
			err = -EIO;
		if (out != stdout && fclose(out) && !err)
			err = -errno;
	}
	if (err) {
		p_err("diff: %s", strerror(-err));
		rc = 1;
	}
out:
	free(ev);
	for (int i = 0; i < MAX_PAIRS; i++)
		for (int s = 0; s < 2; s++)
			free(pr[i].l[s].v);
	for (int s = 0; s < 2; s++)
		if (sd[s].loaded)
			ks_recording_free(&sd[s].rec);
	return rc;
}
