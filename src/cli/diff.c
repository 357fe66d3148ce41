/* `ksight diff A B`: two recordings side by side: event counts and rates, paired latencies, and a Mann-Whitney U test on them. */
#include <errno.h>
#include <math.h>
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
#include "core/report.h"
#include "core/stats.h"
#include "format/recording.h"
#include "format/pair_report.h"

#define MAX_PAIRS 8
/* p below this is reported as a significant change (one fixed level, said in the output) */
#define ALPHA 0.01

enum { OPT_PAIR = 300, OPT_KEY };

static const struct ks_optdef diff_opts[] = {
	{ "pair", OPT_PAIR, "START/END", "compare the latency from START to the next END with the same key (repeatable)" },
	{ "key", OPT_KEY, "F[=G],...", "fields that tie the last --pair's START (F) to its END (G, default F)" },
	{ 0 },
};

static const struct ks_cmd_spec diff_spec = {
	.name = "diff",
	.summary = "Compare recording B with recording A: per event the counts and rates, per --pair the count and "
		   "p50/p90/p99 latency side by side with their changes, and a Mann-Whitney U test of the two "
		   "latency samples (p < 0.01: a significant change). Exits 0 whatever the outcome.",
	.args = "A B",
	.common = KS_O_JSON | KS_O_OUTPUT,
	.opts = diff_opts,
};

struct diff_ctx {
	int npairs;
	const char *pair[MAX_PAIRS], *key[MAX_PAIRS];
};

static int diff_opt(void *vctx, int id, const char *arg)
{
	struct diff_ctx *c = vctx;

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
		if (p->tested) {
			ks_json_kv_double(j, "u_b", p->t.u_b);
			ks_json_kv_double(j, "z", p->t.z);
			ks_json_kv_double(j, "p_value", p->t.p);
			ks_json_kv_double(j, "prob_b_greater", p->t.a12);
		}
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

int cmd_diff(int argc, char **argv)
{
	struct diff_ctx ctx = { 0 };
	struct side sd[2] = { 0 };
	struct pair_row pr[MAX_PAIRS] = { 0 };
	struct ev_row *ev = NULL;
	struct ks_common c;
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
		p_err("diff needs two recordings: ksight diff A B");
		return 2;
	}
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
