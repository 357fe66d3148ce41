/* Unit tests of the exporter's encoders on fixed reports: Prometheus text, OpenMetrics, protobuf with native histograms, negotiation. */
#include <malloc.h>
#include "test.h"
#include "core/collector.h"
#include "core/hash.h"
#include "core/version.h"
#include "serve/procself.h"
#include "output/prom.h"
#include "serve/negotiate.h"

static const struct ks_column cols[] = {
	{ "count", KS_COL_COUNTER, KS_UNIT_COUNT, "calls made" },
	{ "total_ns", KS_COL_DURATION, KS_UNIT_NS, "their summed time" },
	{ "inflight", KS_COL_GAUGE, KS_UNIT_COUNT, "calls in flight" },
	{ NULL },
};
static const struct ks_schema schema = { cols, "latency_ns", KS_UNIT_NS, "call latency", NULL, .hist_cols = NULL };

/* A syscalls-like report: one row keyed syscall="read" (and a quote in a second row's key), latencies 0, 1000 ns x3, 5 ms x2. */
static void fixed_report(struct ks_report *r)
{
	struct ks_row *w;

	ks_report_init(r, "syscalls", "tp_btf");
	r->schema = &schema;
	r->hist_name = "latency_ns";
	r->hist_unit = KS_UNIT_NS;
	ks_report_lost(r, "map_full", 3);
	w = ks_report_add_row(r);
	ks_row_key_str(w, "syscall", "read");
	ks_row_col(w, &cols[0], 6);
	ks_row_col(w, &cols[1], 10003000);
	ks_row_col(w, &cols[2], 2);
	w->hist = calloc(1, sizeof(*w->hist));
	ks_hist_record(w->hist, 0);
	for (int i = 0; i < 3; i++)
		ks_hist_record(w->hist, 1000);
	for (int i = 0; i < 2; i++)
		ks_hist_record(w->hist, 5000000);
	w = ks_report_add_row(r);
	ks_row_key_str(w, "syscall", "we\"ird\\\n");
	ks_row_col(w, &cols[0], 1);
}

static char *render(enum prom_format fmt, const struct prom_set *set, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *out = open_memstream(&buf, &n);
	const struct prom_set *sets[1] = { set };

	if (!out || prom_write(fmt, sets, 1, out))
		exit(2);
	fclose(out);
	if (len)
		*len = n;
	return buf;
}

TEST(text_names_units_help)
{
	struct ks_report r;
	struct prom_set set = { 0 };
	char *t;

	fixed_report(&r);
	ASSERT_EQ_INT(prom_add_report(&set, &r), 0);
	t = render(PROM_FMT_TEXT, &set, NULL);
	EXPECT_TRUE(strstr(t, "# HELP ksight_syscalls_calls_total calls made\n# TYPE ksight_syscalls_calls_total counter\n"
			      "ksight_syscalls_calls_total{syscall=\"read\"} 6\n"));
	/* the duration in seconds, the leading "total_" not repeated */
	EXPECT_TRUE(strstr(t, "# TYPE ksight_syscalls_time_seconds_total counter\nksight_syscalls_time_seconds_total{syscall=\"read\"} 0.010003\n"));
	EXPECT_TRUE(strstr(t, "# TYPE ksight_syscalls_inflight gauge\nksight_syscalls_inflight{syscall=\"read\"} 2\n"));
	EXPECT_TRUE(strstr(t, "ksight_lost_events_total{collector=\"syscalls\",cause=\"map_full\"} 3\n"));
	/* label values sanitized (backslash doubled, newline as \x0a), then quoted: quote and backslashes */
	EXPECT_TRUE(strstr(t, "ksight_syscalls_calls_total{syscall=\"we\\\"ird\\\\\\\\\\\\x0a\"} 1\n"));
	/* classic buckets: 0 and 1000 ns at le=1us (1000's slot [992, 1023] straddles 1000: above) */
	EXPECT_TRUE(strstr(t, "ksight_syscalls_latency_seconds_bucket{syscall=\"read\",le=\"1e-06\"} 1\n"));
	EXPECT_TRUE(strstr(t, "ksight_syscalls_latency_seconds_bucket{syscall=\"read\",le=\"2.5e-06\"} 4\n"));
	EXPECT_TRUE(strstr(t, "ksight_syscalls_latency_seconds_bucket{syscall=\"read\",le=\"0.0025\"} 4\n"));
	EXPECT_TRUE(strstr(t, "ksight_syscalls_latency_seconds_bucket{syscall=\"read\",le=\"0.005\"} 4\n"));
	EXPECT_TRUE(strstr(t, "ksight_syscalls_latency_seconds_bucket{syscall=\"read\",le=\"0.01\"} 6\n"));
	EXPECT_TRUE(strstr(t, "ksight_syscalls_latency_seconds_bucket{syscall=\"read\",le=\"+Inf\"} 6\n"
			      "ksight_syscalls_latency_seconds_sum{syscall=\"read\"} 0.010003\n"
			      "ksight_syscalls_latency_seconds_count{syscall=\"read\"} 6\n"));
	EXPECT_TRUE(strstr(t, "# HELP ksight_syscalls_latency_seconds call latency\n"));
	EXPECT_TRUE(!strstr(t, "# EOF"));
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

/* funclat through the same schema path: calls (not "events"), time and latency in seconds, its two key labels. */
TEST(funclat_names)
{
	const struct ks_schema *fs = ks_collector_find("funclat")->schema;
	struct prom_set set = { 0 };
	struct ks_report r;
	struct ks_row *w;
	char *t;

	ks_report_init(&r, "funclat", "uprobe");
	r.schema = fs;
	r.hist_name = fs->hist_name;
	r.hist_unit = fs->hist_unit;
	w = ks_report_add_row(&r);
	ks_row_key_str(w, "function", "fl_sleep");
	ks_row_key_str(w, "module", "fl_calls");
	ks_row_col(w, &fs->cols[0], 200);
	ks_row_col(w, &fs->cols[1], 400000000);
	w->hist = calloc(1, sizeof(*w->hist));
	for (int i = 0; i < 200; i++)
		ks_hist_record(w->hist, 2000000);
	ASSERT_EQ_INT(prom_add_report(&set, &r), 0);
	t = render(PROM_FMT_TEXT, &set, NULL);
	EXPECT_TRUE(strstr(t, "# TYPE ksight_funclat_calls_total counter\n"
			      "ksight_funclat_calls_total{function=\"fl_sleep\",module=\"fl_calls\"} 200\n"));
	EXPECT_TRUE(strstr(t, "ksight_funclat_time_seconds_total{function=\"fl_sleep\",module=\"fl_calls\"} 0.4\n"));
	EXPECT_TRUE(strstr(t, "# TYPE ksight_funclat_latency_seconds histogram\n"));
	EXPECT_TRUE(strstr(t, "ksight_funclat_latency_seconds_count{function=\"fl_sleep\",module=\"fl_calls\"} 200\n"));
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

TEST(openmetrics)
{
	struct ks_report r;
	struct prom_set set = { 0 };
	char *t;
	size_t n;

	fixed_report(&r);
	ASSERT_EQ_INT(prom_add_report(&set, &r), 0);
	t = render(PROM_FMT_OPENMETRICS, &set, &n);
	/* the counter family is named without _total, its samples with it */
	EXPECT_TRUE(strstr(t, "# TYPE ksight_syscalls_calls counter\nksight_syscalls_calls_total{syscall=\"read\"} 6\n"));
	EXPECT_TRUE(strstr(t, "# TYPE ksight_syscalls_latency_seconds histogram\n"));
	EXPECT_TRUE(n > 6 && !strcmp(t + n - 6, "# EOF\n"));
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

/*
 * The renamed and new families: offcpu's histogram without its collector
 * twice, ksight_build_info, the process_* ones, a long cgroup label whole.
 */
static void new_families_set(struct ks_report *r, struct prom_set *set, const char *cg)
{
	const struct ks_collector *off = ks_collector_find("offcpu");
	struct ks_row *w;

	ks_report_init(r, "offcpu", "tp_btf");
	r->schema = off->schema;
	r->hist_name = off->schema->hist_name;
	r->hist_unit = off->schema->hist_unit;
	w = ks_report_add_row(r);
	ks_row_key_str(w, "cgroup", "short");
	ks_row_col(w, &off->schema->cols[0], 1);
	w->hist = calloc(1, sizeof(*w->hist));
	ks_hist_record(w->hist, 3000000);
	if (prom_add_report(set, r) || prom_add_build_info(set) || prom_add_process(set))
		exit(2);
	/* serve's hook puts a cut cgroup key's whole path back (serve.c k8s_labels) */
	if (prom_label_full(&set->f[set->n - 1].s[0], "cgroup", cg))
		exit(2);
}

TEST(new_families_text)
{
	char cg[400], want[600], *t;
	struct prom_set set = { 0 };
	struct ks_report r;

	memset(cg, 'c', sizeof(cg) - 1);
	cg[0] = '/', cg[sizeof(cg) - 1] = 0;
	new_families_set(&r, &set, cg);
	t = render(PROM_FMT_TEXT, &set, NULL);
	EXPECT_TRUE(strstr(t, "# TYPE ksight_offcpu_seconds histogram\n"));
	EXPECT_TRUE(!strstr(t, "offcpu_offcpu"));
	EXPECT_TRUE(strstr(t, "ksight_offcpu_seconds_count{cgroup=\"short\"} 1\n"));
	EXPECT_TRUE(strstr(t, "# TYPE ksight_build_info gauge\nksight_build_info{version=\"" KSIGHT_VERSION "\",revision=\""));
	EXPECT_TRUE(strstr(t, "\",libbpf=\"v1."));
	EXPECT_TRUE(strstr(t, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total "));
	EXPECT_TRUE(strstr(t, "# TYPE process_virtual_memory_bytes gauge\n"));
	EXPECT_TRUE(strstr(t, "# TYPE process_resident_memory_bytes gauge\n"));
	EXPECT_TRUE(strstr(t, "# TYPE process_start_time_seconds gauge\n"));
	EXPECT_TRUE(strstr(t, "# TYPE process_open_fds gauge\n"));
	EXPECT_TRUE(strstr(t, "# TYPE process_max_fds gauge\n"));
	/* the text format 0.0.4 has no UNIT */
	EXPECT_TRUE(!strstr(t, "# UNIT"));
	/* the last family's sample: its cgroup label the whole 399 bytes */
	snprintf(want, sizeof(want), "{cgroup=\"%s\"} ", cg);
	EXPECT_TRUE(strstr(t, want));
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

TEST(new_families_openmetrics_units)
{
	char *t;
	struct prom_set set = { 0 };
	struct ks_report r;

	new_families_set(&r, &set, "/long");
	t = render(PROM_FMT_OPENMETRICS, &set, NULL);
	EXPECT_TRUE(strstr(t, "# TYPE ksight_offcpu_seconds histogram\n# UNIT ksight_offcpu_seconds seconds\n"));
	EXPECT_TRUE(strstr(t, "# TYPE process_cpu_seconds counter\n# UNIT process_cpu_seconds seconds\nprocess_cpu_seconds_total "));
	EXPECT_TRUE(strstr(t, "# TYPE process_resident_memory_bytes gauge\n# UNIT process_resident_memory_bytes bytes\n"));
	EXPECT_TRUE(strstr(t, "# TYPE process_start_time_seconds gauge\n# UNIT process_start_time_seconds seconds\n"));
	/* a family whose name does not end in a unit gets no UNIT (OpenMetrics would refuse it) */
	EXPECT_TRUE(strstr(t, "# TYPE ksight_offcpu_blocks counter\nksight_offcpu_blocks_total"));
	EXPECT_TRUE(strstr(t, "# TYPE ksight_build_info gauge\nksight_build_info{"));
	EXPECT_TRUE(strstr(t, "# TYPE process_open_fds gauge\nprocess_open_fds "));
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

/* No family repeats its collector's name: every collector's schema columns and histogram, through the namer. */
TEST(no_family_repeats_its_collector)
{
	for (int c = 0; ks_collectors[c]; c++) {
		const struct ks_collector *col = ks_collectors[c];
		struct prom_set set = { 0 };
		struct ks_report r;
		struct ks_row *w;
		char twice[64];

		if (!col->schema)
			continue;
		ks_report_init(&r, col->spec.name, "x");
		r.schema = col->schema;
		r.hist_name = col->schema->hist_name;
		r.hist_unit = col->schema->hist_unit;
		w = ks_report_add_row(&r);
		ks_row_key_str(w, "k", "v");
		for (const struct ks_column *k = col->schema->cols; k->name; k++)
			ks_row_col(w, k, 1);
		w->hist = calloc(1, sizeof(*w->hist));
		ks_hist_record(w->hist, 1);
		ASSERT_EQ_INT(prom_add_report(&set, &r), 0);
		snprintf(twice, sizeof(twice), "ksight_%s_%s", col->spec.name, col->spec.name);
		for (int i = 0; i < set.n; i++)
			if (strstr(set.f[i].name, twice))
				EXPECT_EQ_STR(set.f[i].name, "(a name without its collector twice)");
		prom_set_free(&set);
		ks_report_free(&r);
	}
}

/* A protobuf reader for the checks: just enough of the wire format. */
struct rd {
	const unsigned char *p, *end;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; r->p < r->end && shift < 64; shift += 7) {
		unsigned char b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* The next field: its number, wire type, and (for length-delimited) a sub-reader. */
static int rd_field(struct rd *r, int *wt, struct rd *sub, uint64_t *v, double *d)
{
	uint64_t tag;

	if (r->p >= r->end)
		return 0;
	tag = rd_varint(r);
	*wt = (int)(tag & 7);
	if (*wt == 0) {
		*v = rd_varint(r);
	} else if (*wt == 1) {
		uint64_t u = 0;

		for (int i = 0; i < 8; i++)
			u |= (uint64_t)r->p[i] << (8 * i);
		memcpy(d, &u, 8);
		r->p += 8;
	} else if (*wt == 2) {
		uint64_t n = rd_varint(r);

		sub->p = r->p;
		sub->end = r->p + n;
		r->p += n;
	} else {
		return -1;
	}
	return (int)(tag >> 3);
}

/* The next length-delimited MetricFamily of @all in @fam; false at the end, or before a length past it. */
static bool rd_family(struct rd *all, struct rd *fam)
{
	const unsigned char *at = all->p;
	uint64_t len;

	if (all->p >= all->end)
		return false;
	len = rd_varint(all);
	if (len > (uint64_t)(all->end - all->p)) {
		all->p = at;
		return false;
	}
	fam->p = all->p;
	fam->end = all->p + len;
	all->p = fam->end;
	return true;
}

/* A string field's bytes as a C string in @buf. */
static void rd_str(char *buf, size_t len, const struct rd *sub)
{
	snprintf(buf, len, "%.*s", (int)(sub->end - sub->p), (const char *)sub->p);
}

static int64_t unzig(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

struct native {
	int64_t schema;
	double zero_threshold, sum;
	uint64_t count, zero_count;
	int nb;
	int32_t idx[512];
	int64_t cnt[512];
	int nclassic;
};

/* Decodes a Histogram message: spans and deltas into absolute (index, count) pairs. */
static void decode_hist(struct rd h, struct native *n)
{
	int32_t spans[256][2], nspans = 0, k = 0, at = 0;
	int64_t deltas[512], nd = 0, c = 0;
	struct rd sub;
	uint64_t v = 0;
	double d = 0;
	int wt, f;

	memset(n, 0, sizeof(*n));
	while ((f = rd_field(&h, &wt, &sub, &v, &d)) > 0) {
		if (f == 1)
			n->count = v;
		else if (f == 2)
			n->sum = d;
		else if (f == 3)
			n->nclassic++;
		else if (f == 5)
			n->schema = unzig(v);
		else if (f == 6)
			n->zero_threshold = d;
		else if (f == 7)
			n->zero_count = v;
		else if (f == 12 && nspans < 256) {
			struct rd s2;
			int f2, wt2;

			spans[nspans][0] = spans[nspans][1] = 0;
			while ((f2 = rd_field(&sub, &wt2, &s2, &v, &d)) > 0)
				spans[nspans][f2 - 1] = f2 == 1 ? (int32_t)unzig(v) : (int32_t)v;
			nspans++;
		} else if (f == 13) {
			while (sub.p < sub.end && nd < 512)
				deltas[nd++] = unzig(rd_varint(&sub));
		}
	}
	for (int s = 0; s < nspans; s++) {
		at += spans[s][0];
		for (int j = 0; j < spans[s][1] && k < nd && k < 512; j++, k++) {
			c += deltas[k];
			n->idx[k] = at++;
			n->cnt[k] = c;
		}
	}
	n->nb = k;
}

TEST(protobuf_native_histogram)
{
	struct ks_report r;
	struct prom_set set = { 0 };
	struct rd all, fam, met, sub, h = { 0 };
	char *t, name[128];
	size_t n;
	struct native nat;
	uint64_t v = 0;
	double d = 0;
	int wt, f, families = 0;
	bool found = false;

	fixed_report(&r);
	ASSERT_EQ_INT(prom_add_report(&set, &r), 0);
	t = render(PROM_FMT_PROTO, &set, &n);
	all.p = (const unsigned char *)t;
	all.end = all.p + n;
	/* length-delimited MetricFamily messages, one after the other, to the last byte */
	while (rd_family(&all, &fam)) {
		families++;
		name[0] = 0;
		while ((f = rd_field(&fam, &wt, &sub, &v, &d)) > 0) {
			if (f == 1)
				rd_str(name, sizeof(name), &sub);
			if (f == 4 && !strcmp(name, "ksight_syscalls_latency_seconds") && !found) {
				met = sub;
				while ((f = rd_field(&met, &wt, &sub, &v, &d)) > 0)
					if (f == 7)
						h = sub, found = true;
			}
		}
	}
	EXPECT_TRUE(all.p == all.end);
	EXPECT_EQ_INT(families, set.n);
	ASSERT_TRUE(found);
	decode_hist(h, &nat);
	EXPECT_EQ_INT(nat.schema, 5);
	EXPECT_EQ_U64(nat.count, 6);
	EXPECT_EQ_U64(nat.zero_count, 1);
	EXPECT_TRUE(nat.zero_threshold > 0 && nat.zero_threshold < 1e-30);
	EXPECT_NEAR(nat.sum, 0.010003, 1e-12);
	EXPECT_EQ_INT(nat.nclassic, 22);
	/* two native buckets: the middles of 1000's slot [992, 1023] and of 5 ms's slot */
	ASSERT_EQ_INT(nat.nb, 2);
	EXPECT_EQ_INT(nat.idx[0], prom_native_index(1007.5e-9));
	EXPECT_EQ_INT(nat.cnt[0], 3);
	EXPECT_EQ_INT(nat.cnt[1], 2);
	/* each bucket (2^((i-1)/32), 2^(i/32)] holds its value, within 2.2% */
	EXPECT_TRUE(pow(2, (nat.idx[0] - 1) / 32.0) < 1000e-9 * 1.04 && pow(2, nat.idx[0] / 32.0) >= 1000e-9);
	EXPECT_TRUE(pow(2, (nat.idx[1] - 1) / 32.0) < 5e-3 * 1.04 && pow(2, nat.idx[1] / 32.0) >= 5e-3);
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

/* The renamed and new families in protobuf: names with _total on counters, MetricFamily.unit, whole label values. */
TEST(new_families_protobuf)
{
	char cg[400], *t, name[128], unit[32], lab[512];
	struct prom_set set = { 0 };
	struct rd all, fam, met, sub, lp;
	struct ks_report r;
	uint64_t v = 0, type;
	double d = 0;
	size_t n;
	int wt, f, seen = 0, longest = 0;

	memset(cg, 'c', sizeof(cg) - 1);
	cg[0] = '/', cg[sizeof(cg) - 1] = 0;
	new_families_set(&r, &set, cg);
	t = render(PROM_FMT_PROTO, &set, &n);
	all.p = (const unsigned char *)t;
	all.end = all.p + n;
	while (rd_family(&all, &fam)) {
		name[0] = unit[0] = 0;
		type = 99;
		while ((f = rd_field(&fam, &wt, &sub, &v, &d)) > 0) {
			if (f == 1)
				rd_str(name, sizeof(name), &sub);
			else if (f == 3)
				type = v;
			else if (f == 5)
				rd_str(unit, sizeof(unit), &sub);
			else if (f == 4) {
				met = sub;
				while ((f = rd_field(&met, &wt, &sub, &v, &d)) > 0) {
					if (f != 1)
						continue;
					lp = sub;
					while ((f = rd_field(&lp, &wt, &sub, &v, &d)) > 0)
						if (f == 2 && (int)(sub.end - sub.p) > longest)
							longest = (int)(sub.end - sub.p), rd_str(lab, sizeof(lab), &sub);
				}
			}
		}
		EXPECT_TRUE(!strstr(name, "offcpu_offcpu"));
		if (!strcmp(name, "ksight_offcpu_seconds"))
			seen |= 1, EXPECT_EQ_STR(unit, "seconds"), EXPECT_EQ_U64(type, 4);
		if (!strcmp(name, "process_cpu_seconds_total"))
			seen |= 2, EXPECT_EQ_STR(unit, "seconds"), EXPECT_EQ_U64(type, 0);
		if (!strcmp(name, "process_resident_memory_bytes"))
			seen |= 4, EXPECT_EQ_STR(unit, "bytes"), EXPECT_EQ_U64(type, 1);
		if (!strcmp(name, "ksight_build_info"))
			seen |= 8, EXPECT_EQ_STR(unit, ""), EXPECT_EQ_U64(type, 1);
		if (!strcmp(name, "process_open_fds") || !strcmp(name, "process_max_fds") ||
		    !strcmp(name, "process_start_time_seconds") || !strcmp(name, "process_virtual_memory_bytes"))
			seen += 16;
	}
	EXPECT_EQ_INT(seen, 15 + 4 * 16);
	EXPECT_EQ_STR(lab, cg);
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

/* Many slots: spans with gaps, deltas that go up and down, every count back. */
TEST(protobuf_spans_roundtrip)
{
	struct ks_hist *hist = calloc(1, sizeof(*hist));
	struct prom_set set = { 0 };
	struct prom_family *fam;
	struct prom_sample *s;
	struct native nat;
	struct rd all, f1, sub, met, h = { 0 };
	uint64_t v = 0, total = 0;
	double d;
	int wt, f;
	char *t;
	size_t n;

	ASSERT_TRUE(hist);
	/* 1..40 us with gaps, and a far one at 3 s */
	for (uint64_t us = 1; us <= 40; us += (us % 3) + 1)
		for (uint64_t k = 0; k < us % 5 + 1; k++)
			ks_hist_record(hist, us * 1000 + k);
	ks_hist_record(hist, 3000000000ull);
	fam = prom_family(&set, "x_seconds", "x", PROM_HISTOGRAM);
	fam->unit = KS_UNIT_NS;
	fam->div = 1e9;
	s = prom_sample_add(fam);
	s->hist = hist;
	t = render(PROM_FMT_PROTO, &set, &n);
	all.p = (const unsigned char *)t;
	all.end = all.p + n;
	v = rd_varint(&all);
	f1.p = all.p;
	f1.end = all.p + v;
	while ((f = rd_field(&f1, &wt, &sub, &v, &d)) > 0)
		if (f == 4) {
			met = sub;
			while ((f = rd_field(&met, &wt, &sub, &v, &d)) > 0)
				if (f == 7)
					h = sub;
		}
	decode_hist(h, &nat);
	ASSERT_TRUE(nat.nb > 10);
	for (int i = 0; i < nat.nb; i++) {
		total += (uint64_t)nat.cnt[i];
		if (i)
			EXPECT_TRUE(nat.idx[i] > nat.idx[i - 1]);
	}
	EXPECT_EQ_U64(total + nat.zero_count, hist->count);
	EXPECT_EQ_INT(nat.idx[nat.nb - 1], prom_native_index(((double)ks_hist_slot_low(ks_hist_slot(3000000000ull)) +
							       (double)ks_hist_slot_high(ks_hist_slot(3000000000ull))) /
							      2 * 1e-9));
	free(t);
	free(hist);
	prom_set_free(&set);
}

/*
 * Folds are one family with a collector label in every format, as losses are:
 * per-collector families lose their names in a rule's increase() and collide.
 */
TEST(folds_one_family)
{
	static const char *const cols_[] = { "syscalls", "mem" };
	struct ks_report r[2];
	struct prom_set set = { 0 };
	struct rd all, fam, met, lab, sub;
	char *t, name[128], lname[32], lval[32], got[64] = "";
	size_t n;
	uint64_t v = 0;
	double d = 0;
	int wt, f, g, families = 0, metrics = 0;

	for (int i = 0; i < 2; i++) {
		ks_report_init(&r[i], cols_[i], "tp_btf");
		ks_report_counter(&r[i], "other_folds", 4 + (uint64_t)i);
		ks_report_counter(&r[i], "expired_rows", 1);
		if (i == 1)
			ks_report_counter(&r[i], "oom_kills", 2);
		ASSERT_EQ_INT(prom_add_report(&set, &r[i]), 0);
	}
	t = render(PROM_FMT_TEXT, &set, NULL);
	EXPECT_TRUE(strstr(t, "# TYPE ksight_other_folds_total counter\n"
			      "ksight_other_folds_total{collector=\"syscalls\"} 4\n"
			      "ksight_other_folds_total{collector=\"mem\"} 5\n"));
	EXPECT_TRUE(!strstr(t, "ksight_syscalls_other_folds") && !strstr(t, "ksight_mem_other_folds"));
	/* so are the other counters every collector may report; a collector's own keeps its name */
	EXPECT_TRUE(strstr(t, "ksight_expired_rows_total{collector=\"syscalls\"} 1\n"
			      "ksight_expired_rows_total{collector=\"mem\"} 1\n"));
	EXPECT_TRUE(strstr(t, "ksight_mem_oom_kills_total 2\n"));
	free(t);
	t = render(PROM_FMT_OPENMETRICS, &set, NULL);
	EXPECT_TRUE(strstr(t, "# TYPE ksight_other_folds counter\n"
			      "ksight_other_folds_total{collector=\"syscalls\"} 4\n"
			      "ksight_other_folds_total{collector=\"mem\"} 5\n"));
	free(t);
	t = render(PROM_FMT_PROTO, &set, &n);
	all.p = (const unsigned char *)t;
	all.end = all.p + n;
	while (rd_family(&all, &fam)) {
		name[0] = 0;
		while ((f = rd_field(&fam, &wt, &sub, &v, &d)) > 0) {
			if (f == 1) {
				rd_str(name, sizeof(name), &sub);
				families += !strcmp(name, "ksight_other_folds_total");
			}
			if (f != 4 || strcmp(name, "ksight_other_folds_total"))
				continue;
			/* Metric: its one label pair and its counter's value */
			metrics++;
			met = sub;
			while ((f = rd_field(&met, &wt, &sub, &v, &d)) > 0) {
				if (f == 1) {
					lab = sub;
					lname[0] = lval[0] = 0;
					while ((g = rd_field(&lab, &wt, &sub, &v, &d)) > 0)
						rd_str(g == 1 ? lname : lval, sizeof(lname), &sub);
					snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s=%s ", lname, lval);
				}
				if (f == 3 && rd_field(&sub, &wt, &lab, &v, &d) == 1)
					snprintf(got + strlen(got), sizeof(got) - strlen(got), "%g ", d);
			}
		}
	}
	EXPECT_TRUE(all.p == all.end);
	EXPECT_EQ_INT(families, 1);
	EXPECT_EQ_INT(metrics, 2);
	EXPECT_EQ_STR(got, "collector=syscalls 4 collector=mem 5 ");
	free(t);
	prom_set_free(&set);
	ks_report_free(&r[0]);
	ks_report_free(&r[1]);
}

/* A row's samples share one copy of its labels (serve held 2.3 KiB a series with 12 labels inline in each); a breakdown's own label stays its own. */
TEST(row_samples_share_labels)
{
	static const char *const names[] = { "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9" };
	struct ks_report r;
	struct prom_set set = { 0 };
	size_t before, after;
	char comm[16], *t;

	ks_report_init(&r, "mem", "tp_btf");
	r.sub_name = "errnos";
	for (int i = 0; i < 1000; i++) {
		struct ks_row *w = ks_report_add_row(&r);

		ASSERT_TRUE(w);
		snprintf(comm, sizeof(comm), "p%d", i);
		ks_row_key_str(w, "comm", comm);
		ks_row_key_num(w, "pid", i + 1);
		/* value names are kept by pointer */
		for (int v = 0; v < 10; v++)
			ks_row_val(w, names[v], KS_VAL_COUNT, (uint64_t)v + 1);
		if (!i)
			ks_row_sub_add(w, "EPERM", 3);
	}
	/* ASan's allocator keeps no mallinfo2 figures: there both read 0 */
	/* in use: the heap's chunks and the large blocks malloc mmaps */
	before = mallinfo2().uordblks + mallinfo2().hblkhd;
	ASSERT_EQ_INT(prom_add_report(&set, &r), 0);
	after = mallinfo2().uordblks + mallinfo2().hblkhd;
	/* 10,001 samples: 2,016 B of inline labels each before, under 200 B now */
	EXPECT_TRUE(after - before < (size_t)10001 * 200);
	t = render(PROM_FMT_TEXT, &set, NULL);
	EXPECT_TRUE(strstr(t, "ksight_mem_c3_total{comm=\"p999\",pid=\"1000\"} 4\n"));
	EXPECT_TRUE(strstr(t, "ksight_mem_by_errno_total{comm=\"p0\",pid=\"1\",errno=\"EPERM\"} 3\n"));
	EXPECT_TRUE(strstr(t, "ksight_mem_c0_total{comm=\"p0\",pid=\"1\"} 1\n"));
	free(t);
	prom_set_free(&set);
	ks_report_free(&r);
}

TEST(native_index)
{
	EXPECT_EQ_INT(prom_native_index(1.0), 0);
	EXPECT_EQ_INT(prom_native_index(2.0), 32);
	EXPECT_EQ_INT(prom_native_index(2.01), 33);
	EXPECT_EQ_INT(prom_native_index(0.5), -32);
}

TEST(classic_counts_never_overcount)
{
	struct ks_hist h = { 0 };
	uint64_t cum[32];
	int n;
	const uint64_t *b = prom_classic_bounds(KS_UNIT_NS, &n);

	ks_hist_record(&h, 999);	/* slot [992, 1023]: above 1 us */
	ks_hist_record(&h, 960);	/* slot [960, 991]: below */
	ks_hist_record(&h, 20000000000ull); /* above every bound */
	prom_classic_counts(&h, b, n, cum);
	EXPECT_EQ_U64(b[0], 1000);
	EXPECT_EQ_U64(cum[0], 1);
	EXPECT_EQ_U64(cum[1], 2);
	EXPECT_EQ_U64(cum[n - 1], 2);
}

TEST(negotiate)
{
	/* Prometheus 2.42 with and without --enable-feature=native-histograms */
	EXPECT_EQ_INT(prom_negotiate("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,"
				     "text/plain;version=0.0.4;q=0.3,*/*;q=0.2"),
		      PROM_FMT_PROTO);
	EXPECT_EQ_INT(prom_negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
				     "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
		      PROM_FMT_OPENMETRICS);
	EXPECT_EQ_INT(prom_negotiate("text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5"), PROM_FMT_TEXT);
	EXPECT_EQ_INT(prom_negotiate(NULL), PROM_FMT_TEXT);
	EXPECT_EQ_INT(prom_negotiate("image/png"), PROM_FMT_TEXT);
	/* protobuf of another message type is not ours */
	EXPECT_EQ_INT(prom_negotiate("application/vnd.google.protobuf;proto=foo;encoding=delimited"), PROM_FMT_TEXT);
}

TEST(negotiate_encoding)
{
	char *z = NULL;
	size_t zlen = 0;
	const char page[] = "# HELP a b\n# TYPE a counter\na_total 1\n";

	/* Prometheus 2.42's scrape header */
	EXPECT_EQ_INT(prom_negotiate_encoding("gzip"), PROM_ENC_GZIP);
	EXPECT_EQ_INT(prom_negotiate_encoding(NULL), PROM_ENC_IDENTITY);
	EXPECT_EQ_INT(prom_negotiate_encoding(""), PROM_ENC_IDENTITY);
	EXPECT_EQ_INT(prom_negotiate_encoding("deflate, br"), PROM_ENC_IDENTITY);
	EXPECT_EQ_INT(prom_negotiate_encoding("deflate, GZIP;q=0.5"), PROM_ENC_GZIP);
	EXPECT_EQ_INT(prom_negotiate_encoding("x-gzip"), PROM_ENC_GZIP);
	EXPECT_EQ_INT(prom_negotiate_encoding("gzip;q=0"), PROM_ENC_IDENTITY);
	EXPECT_EQ_INT(prom_negotiate_encoding("gzip; q=0.0, identity"), PROM_ENC_IDENTITY);
	EXPECT_EQ_INT(prom_negotiate_encoding("*"), PROM_ENC_GZIP);
	EXPECT_EQ_INT(prom_negotiate_encoding("*;q=0, gzip"), PROM_ENC_GZIP);
	EXPECT_EQ_INT(prom_negotiate_encoding("identity;q=1, gzip;q=0.5"), PROM_ENC_IDENTITY);
	EXPECT_EQ_INT(prom_negotiate_encoding("identity;q=0, gzip;q=0.1"), PROM_ENC_GZIP);
	/* neither: 406 */
	EXPECT_EQ_INT(prom_negotiate_encoding("identity;q=0"), PROM_ENC_NONE);
	EXPECT_EQ_INT(prom_negotiate_encoding("*;q=0"), PROM_ENC_NONE);
	EXPECT_EQ_INT(prom_negotiate_encoding("gzip;q=0, identity;q=0"), PROM_ENC_NONE);
	/* the gzip wrapper, whose magic clients look for */
	EXPECT_EQ_INT(prom_gzip(page, sizeof(page) - 1, 6, &z, &zlen), 0);
	EXPECT_TRUE(zlen > 18 && (unsigned char)z[0] == 0x1f && (unsigned char)z[1] == 0x8b);
	free(z);
}

TEST(sanitize)
{
	char s[] = "9a-b.c:d";

	prom_sanitize(s);
	EXPECT_EQ_STR(s, "_a_b_c_d");
}

/*
 * The protobuf bytes of a fixed set, pinned (length and FNV-1a), taken from
 * the encoder before it moved onto output/pb.c: a change of encoding layer
 * must leave them byte for byte; a change of what is encoded updates them.
 */
TEST(protobuf_bytes_pinned)
{
	struct ks_hist *hist = calloc(1, sizeof(*hist));
	struct prom_set set = { 0 };
	struct prom_family *fam;
	char *t;
	size_t n;

	ASSERT_TRUE(hist);
	ks_hist_record(hist, 0);
	for (uint64_t us = 1; us <= 400; us = us * 3 + 1)
		for (uint64_t k = 0; k < us % 7 + 1; k++)
			ks_hist_record(hist, us * 1000 + k);
	ks_hist_record(hist, 3000000000ull);
	ASSERT_EQ_INT(prom_add(&set, "ksight_c", "a counter", PROM_COUNTER, 18446744073709551615.0, "cpu", "0", "x", "\xff"), 0);
	ASSERT_EQ_INT(prom_add(&set, "ksight_c", "a counter", PROM_COUNTER, 128, "cpu", "1", NULL, NULL), 0);
	ASSERT_EQ_INT(prom_add(&set, "ksight_g", "a gauge", PROM_GAUGE, -0.5, NULL, NULL, NULL, NULL), 0);
	fam = prom_family(&set, "ksight_h_seconds", "a histogram", PROM_HISTOGRAM);
	ASSERT_TRUE(fam);
	fam->unit = KS_UNIT_NS;
	fam->div = 1e9;
	ASSERT_TRUE(prom_sample_add(fam));
	fam->s[0].hist = hist;
	ASSERT_EQ_INT(prom_label(&fam->s[0], "syscall", "read"), 0);
	t = render(PROM_FMT_PROTO, &set, &n);
	/* 543 bytes from the two hand-written encoders; +9 since MetricFamily.unit = "seconds" (field 5) */
	EXPECT_EQ_U64(n, 552);
	EXPECT_EQ_U64(ks_fnv1a(t, n, KS_FNV1A_INIT), 0x9274ccb434d51299ull);
	free(t);
	free(hist);
	prom_set_free(&set);
}
