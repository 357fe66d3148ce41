/* Unit tests of diff's statistics and gates (core/histtest.c, core/gate.c, core/diffset.c): hand-worked numbers, no root. */
#include "test.h"
#include "core/diffset.h"
#include "core/gate.h"
#include "core/histtest.h"
#include "output/diff.h"

static void fill(struct ks_hist *h, const uint64_t *v, size_t n)
{
	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < n; i++)
		ks_hist_record(h, v[i]);
}

/* Values below 16 have a slot each: over buckets the test is the sample test (test_stats.c's numbers). */
TEST(mwu_hist_is_the_sample_test)
{
	uint64_t a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 }, c[] = { 1, 2, 2, 3 }, d[] = { 2, 3, 3, 4 };
	struct ks_hist ha, hb;
	struct ks_mwu m, s;

	fill(&ha, a, 3);
	fill(&hb, b, 3);
	ASSERT_EQ_INT(ks_mwu_hist(&ha, &hb, &m), 0);
	EXPECT_NEAR(m.u_b, 9.0, 1e-9);
	EXPECT_NEAR(m.z, 1.745743, 1e-5);
	EXPECT_NEAR(m.p, 0.080856, 1e-5);
	/* ties across the samples: the tie-corrected variance, as ks_mann_whitney */
	fill(&ha, c, 4);
	fill(&hb, d, 4);
	ASSERT_EQ_INT(ks_mwu_hist(&ha, &hb, &m), 0);
	ASSERT_EQ_INT(ks_mann_whitney(c, 4, d, 4, &s), 0);
	EXPECT_NEAR(m.u_b, s.u_b, 1e-9);
	EXPECT_NEAR(m.z, s.z, 1e-9);
	EXPECT_NEAR(m.p, s.p, 1e-9);
}

/* Values that share a slot are ties: 1000 and 1010 are both in [992, 1023]. */
TEST(mwu_hist_slot_is_a_tie)
{
	uint64_t a[] = { 1000, 1000, 1000 }, b[] = { 1010, 1010, 1010 };
	struct ks_hist ha, hb, empty = { 0 };
	struct ks_mwu m;

	fill(&ha, a, 3);
	fill(&hb, b, 3);
	ASSERT_EQ_INT(ks_mwu_hist(&ha, &hb, &m), 0);
	EXPECT_NEAR(m.p, 1.0, 1e-12);
	EXPECT_NEAR(m.a12, 0.5, 1e-12);
	EXPECT_EQ_INT(ks_mwu_hist(&ha, &empty, &m), -EINVAL);
}

TEST(normal_quantiles)
{
	EXPECT_NEAR(ks_normal_upper_quantile(0.025), 1.959964, 1e-6);
	EXPECT_NEAR(ks_normal_upper_quantile(0.005), 2.575829, 1e-6);
	EXPECT_NEAR(ks_normal_upper_quantile(0.5), 0.0, 1e-9);
	EXPECT_NEAR(ks_normal_p2(1.959964), 0.05, 1e-6);
}

/*
 * 1..1000, the median at 95%: ranks 500 -/+ 1.959964 * sqrt(250) = 30.99, so
 * l = floor(469.01) = 469 and u = ceil(530.99) + 1 = 532; 469 is in the slot
 * [464, 479], 532 in [512, 543].  p999: u = 1002 > 1000, no upper bound.
 */
TEST(quantile_ci_order_statistics)
{
	struct ks_hist h = { 0 };
	struct ks_qci c;

	for (uint64_t v = 1; v <= 1000; v++)
		ks_hist_record(&h, v);
	ks_hist_quantile_ci(&h, 0.5, 0.05, &c);
	EXPECT_EQ_U64(c.lo, 464);
	EXPECT_EQ_U64(c.hi, 543);
	EXPECT_TRUE(!c.open_lo && !c.open_hi);
	EXPECT_TRUE(c.lo <= c.est && c.est <= c.hi);
	ks_hist_quantile_ci(&h, 0.999, 0.05, &c);
	EXPECT_TRUE(c.open_hi);
	EXPECT_EQ_U64(c.hi, UINT64_MAX);
	/* a tighter level only widens */
	{
		struct ks_qci w;

		ks_hist_quantile_ci(&h, 0.5, 0.001, &w);
		EXPECT_TRUE(w.lo <= c.lo || c.open_lo);
	}
}

/* 100 against 150: (|150 - 100| / 2 - 0.5) / (sqrt(250) / 2) = 24.5 / 7.9057 = 3.0990 */
TEST(count_test)
{
	EXPECT_NEAR(ks_count_z(100, 150), 3.099, 1e-3);
	EXPECT_NEAR(ks_count_z(150, 100), -3.099, 1e-3);
	EXPECT_NEAR(ks_count_z(0, 0), 0, 1e-12);
	EXPECT_NEAR(ks_count_z(100, 100), 0, 1e-12);
}

TEST(gate_parse_good)
{
	struct ks_gate g;
	char err[256];

	ASSERT_EQ_INT(ks_gate_parse("syscalls:read.p99>+10%", &g, err, sizeof(err)), 0);
	EXPECT_EQ_STR(g.collector, "syscalls");
	EXPECT_EQ_INT(g.nterms, 1);
	EXPECT_EQ_STR(g.term[0].key, "");
	EXPECT_EQ_STR(g.term[0].glob, "read");
	EXPECT_EQ_INT(g.metric, KS_GM_P99);
	EXPECT_EQ_INT(g.op, '>');
	EXPECT_EQ_INT(g.kind, KS_GATE_PCT);
	EXPECT_NEAR(g.thr, 10, 1e-12);
	ASSERT_EQ_INT(ks_gate_parse("runqlat:*.p50>+2ms", &g, err, sizeof(err)), 0);
	EXPECT_EQ_INT(g.kind, KS_GATE_DELTA);
	EXPECT_NEAR(g.thr, 2e6, 1e-6);
	ASSERT_EQ_INT(ks_gate_parse("biolat:sda.count<-20%", &g, err, sizeof(err)), 0);
	EXPECT_EQ_INT(g.metric, KS_GM_COUNT);
	EXPECT_EQ_INT(g.op, '<');
	EXPECT_NEAR(g.thr, -20, 1e-12);
	ASSERT_EQ_INT(ks_gate_parse("offcpu:comm=nginx&state=D.p999>5%", &g, err, sizeof(err)), 0);
	EXPECT_EQ_INT(g.nterms, 2);
	EXPECT_EQ_STR(g.term[0].key, "comm");
	EXPECT_EQ_STR(g.term[1].glob, "D");
	EXPECT_EQ_INT(g.metric, KS_GM_P999);
	/* a level: B's own value; a dotted selector keeps its dots */
	ASSERT_EQ_INT(ks_gate_parse("runqlat:cgroup=system.slice/*.max>250us", &g, err, sizeof(err)), 0);
	EXPECT_EQ_INT(g.kind, KS_GATE_LEVEL);
	EXPECT_EQ_STR(g.term[0].glob, "system.slice/*");
	EXPECT_NEAR(g.thr, 250e3, 1e-6);
	ASSERT_EQ_INT(ks_gate_parse("biolat:*.total>+64K", &g, err, sizeof(err)), 0);
	EXPECT_NEAR(g.thr, 65536, 1e-9);
}

TEST(gate_parse_bad)
{
	static const char *const bad[] = {
		"read.p99>+10%", "syscalls:read.p99", "syscalls:read>+10%", "syscalls:read.p98>+10%",
		"syscalls:.p99>+10%", "syscalls:read.p99>", "syscalls:read.p99>+x%", "syscalls:read.p99>++10%",
		"syscalls:read.p99>1m", "syscalls:read.p99>+10 ms", "sys-calls:read.p99>+10%",
		"syscalls:a&b&c&d&e.p99>+1%", "syscalls:read&.p99>+1%", "syscalls:=x.p99>+1%", "syscalls:read.p99>%",
		":read.p99>+1%", "syscalls:read.p99>+10%\n", "syscalls:read.p99>-",
	};
	struct ks_gate g;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (!EXPECT_EQ_INT(ks_gate_parse(bad[i], &g, err, sizeof(err)), -EINVAL))
			fprintf(stderr, "  accepted: %s\n", bad[i]);
		EXPECT_TRUE(!strncmp(err, "bad --fail-on '", 15));
		EXPECT_TRUE(!strchr(err, '\n'));
	}
}

TEST(gate_select_and_holds)
{
	const char *names[] = { "comm", "state" }, *vals[] = { "nginx: worker", "D" };
	struct ks_gate g;
	char err[256];

	ASSERT_EQ_INT(ks_gate_parse("offcpu:comm=nginx*&state=D.p99>+5%", &g, err, sizeof(err)), 0);
	EXPECT_TRUE(ks_gate_select(&g, names, vals, 2));
	vals[1] = "S";
	EXPECT_TRUE(!ks_gate_select(&g, names, vals, 2));
	ASSERT_EQ_INT(ks_gate_parse("offcpu:S.p99>+5%", &g, err, sizeof(err)), 0);
	EXPECT_TRUE(ks_gate_select(&g, names, vals, 2));
	ASSERT_EQ_INT(ks_gate_parse("offcpu:*.p99>+5%", &g, err, sizeof(err)), 0);
	EXPECT_TRUE(ks_gate_select(&g, names, vals, 0));
	EXPECT_TRUE(ks_gate_holds(&g, 100, 106));
	EXPECT_TRUE(!ks_gate_holds(&g, 100, 105));
	EXPECT_TRUE(ks_gate_holds(&g, 0, 1)); /* new: an infinite rise */
	ASSERT_EQ_INT(ks_gate_parse("biolat:*.count<-20%", &g, err, sizeof(err)), 0);
	EXPECT_TRUE(ks_gate_holds(&g, 100, 79));
	EXPECT_TRUE(!ks_gate_holds(&g, 100, 80));
	ASSERT_EQ_INT(ks_gate_parse("runqlat:*.p50>+2ms", &g, err, sizeof(err)), 0);
	EXPECT_TRUE(ks_gate_holds(&g, 1e6, 3.5e6));
	EXPECT_TRUE(!ks_gate_holds(&g, 1e6, 2.5e6));
}

static const char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/ks-diffstat.XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return NULL;
	close(fd);
	return path;
}

/* Two intervals of one row merged (slots, counts, max, sum, durations); a run file's two collectors kept apart. */
TEST(dset_merges_intervals)
{
	const char *f = write_tmp(
		"{\"collector\":\"syscalls\",\"interval\":1,\"duration_s\":0.5,\"rows\":[{\"syscall\":\"read\",\"nr\":0,\"count\":3,"
		"\"latency_ns\":{\"unit\":\"ns\",\"count\":3,\"max\":1010,\"sum\":3020,\"buckets\":[[992,1023,3]]}}]}\n"
		"{\"collector\":\"runqlat\",\"interval\":1,\"duration_s\":0.5,\"rows\":[{\"count\":1,"
		"\"latency_ns\":{\"unit\":\"ns\",\"count\":1,\"max\":5,\"sum\":5,\"buckets\":[[5,5,1]]}}]}\n"
		"{\"collector\":\"syscalls\",\"interval\":2,\"duration_s\":0.5,\"rows\":[{\"syscall\":\"read\",\"nr\":0,\"count\":2,"
		"\"latency_ns\":{\"unit\":\"ns\",\"count\":2,\"max\":2050,\"sum\":4100,\"buckets\":[[2048,2111,2]]}}]}\n");
	struct ks_dset d = { 0 };
	char err[256];

	ASSERT_TRUE(f);
	ASSERT_EQ_INT(ks_dset_load(&d, f, err, sizeof(err)), 0);
	unlink(f);
	ASSERT_EQ_U64(d.n, 2);
	EXPECT_EQ_STR(d.rows[0].label, "syscall=read nr=0");
	EXPECT_EQ_U64(d.rows[0].count, 5);
	EXPECT_EQ_U64(d.rows[0].h.count, 5);
	EXPECT_EQ_U64(d.rows[0].h.max, 2050);
	EXPECT_EQ_U64(d.rows[0].h.sum, 7120);
	EXPECT_EQ_U64(d.rows[0].h.slots[ks_hist_slot(2048)], 2);
	EXPECT_EQ_STR(d.rows[1].collector, "runqlat");
	EXPECT_EQ_STR(d.rows[1].label, "");
	EXPECT_EQ_INT(d.ncol, 2);
	EXPECT_EQ_INT(d.col[0].docs, 2);
	EXPECT_NEAR(d.col[0].duration_s, 1.0, 1e-12);
	ks_dset_free(&d);
}

TEST(dset_refuses_other_json)
{
	static const char *const bad[] = { "{\"a\":1}\n", "{\"collector\":\"x\",\"rows\":[{\"h\":{\"buckets\":[[1000,1023,1]]}}]}",
					   "{\"collector\":\"x\",\"rows\":[",
					   "",
					   /* a negative count, a count that would wrap, a bucket bound below 0 */
					   "{\"collector\":\"x\",\"rows\":[{\"k\":\"a\",\"count\":-5}]}",
					   "{\"collector\":\"x\",\"rows\":[{\"h\":{\"buckets\":[[5,5,18446744073709551615]]}}]}",
					   "{\"collector\":\"x\",\"rows\":[{\"h\":{\"buckets\":[[-1,0,1]]}}]}" };
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *f = write_tmp(bad[i]);
		struct ks_dset d = { 0 };

		ASSERT_TRUE(f);
		EXPECT_EQ_INT(ks_dset_load(&d, f, err, sizeof(err)), -EBADMSG);
		EXPECT_TRUE(!strchr(err, '\n'));
		ks_dset_free(&d);
		unlink(f);
	}
}

/*
 * A: main;a 30, main;b 10.  B: main;a 60, main;b 60, main;c 0 (an A-only stack is not drawn).
 * A scaled to B's 120: a 90, b 30; so a shrank by 30, b grew by 30, main unchanged.
 */
TEST(folded_differential_svg)
{
	struct ks_folded2 f = { 0 };
	char err[256], *buf = NULL;
	size_t len = 0;
	const char *fa, *fb;
	FILE *out;

	fa = write_tmp("main;a 30\nmain;b 10\n\nmain;a 0\n");
	ASSERT_TRUE(fa);
	ASSERT_EQ_INT(ks_folded_load(&f, 0, fa, err, sizeof(err)), 0);
	unlink(fa);
	fb = write_tmp("main;b 60\nmain;a 60\nmain;c 0\n");
	ASSERT_TRUE(fb);
	ASSERT_EQ_INT(ks_folded_load(&f, 1, fb, err, sizeof(err)), 0);
	unlink(fb);
	EXPECT_EQ_U64(f.n, 3);
	EXPECT_EQ_U64(f.total[0], 40);
	EXPECT_EQ_U64(f.total[1], 120);
	ks_folded_sort(&f);
	EXPECT_EQ_STR(f.v[0].stack, "main;a");
	out = open_memstream(&buf, &len);
	ASSERT_TRUE(out);
	EXPECT_EQ_INT(ks_diff_write_svg(&f, "t", out), 0);
	fclose(out);
	EXPECT_TRUE(strstr(buf, "<g class=\"shrank\"><title>a (B 60, A 90 scaled, -30,") != NULL);
	EXPECT_TRUE(strstr(buf, "<g class=\"grew\"><title>b (B 60, A 30 scaled, +30,") != NULL);
	EXPECT_TRUE(strstr(buf, "<g class=\"same\"><title>main (B 120, A 120 scaled, +0,") != NULL);
	EXPECT_TRUE(strstr(buf, ">c ") == NULL);
	/* the largest change is full colour */
	EXPECT_TRUE(strstr(buf, "fill=\"rgb(255,40,40)\"") != NULL);
	free(buf);
	ks_folded_free(&f);
	/* a line without its count */
	fa = write_tmp("main;a\n");
	ASSERT_TRUE(fa);
	EXPECT_EQ_INT(ks_folded_load(&f, 0, fa, err, sizeof(err)), -EBADMSG);
	unlink(fa);
	EXPECT_TRUE(strstr(err, "line 1 is not") != NULL);
	ks_folded_free(&f);
}
